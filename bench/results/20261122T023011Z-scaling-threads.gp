# 20261122T023011Z-scaling-threads.gp: redraw 20261122T023011Z-scaling-threads.png with `gnuplot 20261122T023011Z-scaling-threads.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T023011Z-scaling-threads.png.tmp'
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 32980.4 32864.5 33395.2 553569 548379 558140 356899 354598 361332 71.7227 71.7188 71.7305
2 40561 38778.8 41079.8 510679 492930 532412 447628 429677 454322 71.9336 71.8125 72.8945
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
