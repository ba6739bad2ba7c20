# 20261121T230234Z-scaling-threads.gp: redraw 20261121T230234Z-scaling-threads.png with `gnuplot 20261121T230234Z-scaling-threads.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261121T230234Z-scaling-threads.png.tmp'
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 29994.8 29339.1 30186.5 494164 476920 515571 322285 316636 325222 73.6328 72.8633 73.7734
2 36837.8 36449.7 37251 470396 453918 488320 408743 403233 410269 73.9727 73.9727 73.9805
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
