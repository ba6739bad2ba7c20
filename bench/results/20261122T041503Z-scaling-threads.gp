# 20261122T041503Z-scaling-threads.gp: redraw 20261122T041503Z-scaling-threads.png with `gnuplot 20261122T041503Z-scaling-threads.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T041503Z-scaling-threads.png.tmp'
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 31206.9 31004.8 31602.4 536399 530434 545732 334796 332111 338692 71.6094 71.375 71.6094
2 42577.3 41839 43141.5 616070 601769 630883 463967 455373 470155 72.3008 72.3008 72.3047
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
