# 20261128T165558Z-scaling-threads.gp: redraw 20261128T165558Z-scaling-threads.png with `gnuplot 20261128T165558Z-scaling-threads.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T165558Z-scaling-threads.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 24423.6 23308 24705.4 481670 463621 490040 259860 248023 262783 72.5273 72.5273 72.5273
2 42456 40096.4 44031.4 646836 454098 651837 462455 437215 480353 73.1055 73.1055 73.1055
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
