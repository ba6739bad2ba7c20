# 20261122T061610Z-scaling-threads.gp: redraw 20261122T061610Z-scaling-threads.png with `gnuplot 20261122T061610Z-scaling-threads.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T061610Z-scaling-threads.png.tmp'
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 32567.3 32338.7 33359.5 583589 573534 596068 348574 346219 357637 75.9883 75.9766 80.4219
2 45205.8 43194.4 46250.9 662469 592395 673972 491556 472025 504125 76.3359 76.3359 76.3398
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
