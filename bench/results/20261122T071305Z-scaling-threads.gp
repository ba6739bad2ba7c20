# 20261122T071305Z-scaling-threads.gp: redraw 20261122T071305Z-scaling-threads.png with `gnuplot 20261122T071305Z-scaling-threads.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T071305Z-scaling-threads.png.tmp'
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 33415.8 31824.8 34270.6 607407 573836 622244 357237 340115 366210 74 74 74.4883
2 47212.9 45834 47774.4 673072 657826 682087 514514 499467 520445 75.7461 75.5898 75.7461
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
