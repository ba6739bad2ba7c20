# 20261128T083557Z-scaling-threads.gp: redraw 20261128T083557Z-scaling-threads.png with `gnuplot 20261128T083557Z-scaling-threads.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T083557Z-scaling-threads.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 26451.2 25244.5 26840.4 502433 478813 505784 282710 269537 286544 73.6016 73.5859 73.9414
2 45373.4 44109.2 45622.2 658022 563080 658134 496220 489586 499115 74.2266 74.2266 74.3477
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
