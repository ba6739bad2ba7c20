# 20261128T063507Z-scaling-threads.gp: redraw 20261128T063507Z-scaling-threads.png with `gnuplot 20261128T063507Z-scaling-threads.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T063507Z-scaling-threads.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 25639.3 25299.9 26117.2 496220 490710 502175 273419 269245 278478 74.5273 74.5273 74.6992
2 41789.8 39697.5 44255.5 583747 363412 601766 459747 453461 486329 75.2656 75.2383 75.2656
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
