# 20261128T101855Z-scaling-threads.gp: redraw 20261128T101855Z-scaling-threads.png with `gnuplot 20261128T101855Z-scaling-threads.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T101855Z-scaling-threads.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 26033.9 25323.4 26549.7 504424 490263 512825 277450 269510 283042 74.9297 74.9297 75.2461
2 40659.5 27601.2 43799.3 537805 387000 639344 442719 300845 485963 76.1992 76.1992 76.1992
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
