# 20261122T050322Z-scaling-threads.gp: redraw 20261122T050322Z-scaling-threads.png with `gnuplot 20261122T050322Z-scaling-threads.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T050322Z-scaling-threads.png.tmp'
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 29943.4 29015.6 30288.4 522817 507979 525821 320797 310662 324332 72.7969 72.3047 72.8008
2 40122.3 31386.6 40290 602009 253081 610874 435368 362586 436710 73.125 73.1172 73.1289
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
