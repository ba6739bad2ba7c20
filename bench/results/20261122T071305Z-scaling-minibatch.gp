# 20261122T071305Z-scaling-minibatch.gp: redraw 20261122T071305Z-scaling-minibatch.png with `gnuplot 20261122T071305Z-scaling-minibatch.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T071305Z-scaling-minibatch.png.tmp'
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 32225.3 31596.6 33544.5 532674 518564 555086 349208 342573 363582 59.8281 59.8164 59.918 2.60402e+07 2.60402e+07 2.60402e+07
512 32923 32048.7 34064.4 536482 516119 545419 357700 348293 370353 61.6016 61.5742 61.6016 2.76376e+07 2.76376e+07 2.76376e+07
1024 34467 33970.9 35125.2 546061 538790 561214 374970 369962 382265 63.5391 63.5391 63.6562 3.08402e+07 3.08402e+07 3.08402e+07
2048 35342.3 34768.1 36516.7 556735 550819 585296 384564 378927 396764 70.3438 70.3086 70.3477 3.72491e+07 3.72491e+07 3.72491e+07
4096 33719.8 32851.5 34120.9 531160 525973 546369 369050 360776 376675 84.2656 83.7812 84.2656 5.0069e+07 5.0069e+07 5.0069e+07
EOD
set logscale x 2
set xlabel 'minibatch size (32 envs x 128 steps)'
set multiplot layout 2,1
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
unset logscale y
set ylabel 'MiB'
plot $d using 1:11:12:13 with yerrorlines lw 2 title 'peak RSS', $d using 1:($14/1048576) with linespoints title 'planned (trainer_memory_plan)'
unset multiplot
