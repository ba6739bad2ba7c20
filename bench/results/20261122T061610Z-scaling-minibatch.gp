# 20261122T061610Z-scaling-minibatch.gp: redraw 20261122T061610Z-scaling-minibatch.png with `gnuplot 20261122T061610Z-scaling-minibatch.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T061610Z-scaling-minibatch.png.tmp'
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 31409.1 28967.1 31943.2 520664 475648 530340 341244 314008 346623 58.1719 57.8906 58.207 2.60402e+07 2.60402e+07 2.60402e+07
512 31826.6 31637.8 32437.4 508992 504237 528795 346087 344412 352067 61.8203 61.6992 61.8203 2.76376e+07 2.76376e+07 2.76376e+07
1024 32770.8 32002.6 33126.3 518887 511674 526829 356130 347826 360226 65.0938 64.3945 67.332 3.08402e+07 3.08402e+07 3.08402e+07
2048 32828.9 32661.7 33011.8 518796 515332 522651 357116 355161 359122 72.9336 72.9336 72.9375 3.72491e+07 3.72491e+07 3.72491e+07
4096 31170.1 29951.7 32309.9 504302 492945 515817 338374 324908 350857 83.8438 83.8438 83.8477 5.0069e+07 5.0069e+07 5.0069e+07
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
