# 20261122T141246Z-scaling-threads.gp: redraw 20261122T141246Z-scaling-threads.png with `gnuplot 20261122T141246Z-scaling-threads.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T141246Z-scaling-threads.png.tmp'
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 28743.4 28709.2 30541.8 480968 467231 501511 311503 310466 330884 77.9648 77.9492 77.9648
2 41968 40061.5 42818.9 575611 429432 586087 462795 453831 474478 79.293 79.293 79.293
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
