# 20261121T223635Z-scaling-threads.gp: redraw 20261121T223635Z-scaling-threads.png with `gnuplot 20261121T223635Z-scaling-threads.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261121T223635Z-scaling-threads.png.tmp'
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 27008.8 26638.7 27221 432703 426908 435378 293240 289918 295164 73.2578 73.1367 73.8945
2 33578.3 32905.2 35126.2 436448 423623 462841 371516 363528 385900 73.8789 73.875 82.7305
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
