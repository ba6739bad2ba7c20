# 20261128T165558Z-scaling-minibatch.gp: redraw 20261128T165558Z-scaling-minibatch.png with `gnuplot 20261128T165558Z-scaling-minibatch.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T165558Z-scaling-minibatch.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 25629.8 24827.9 25879.1 463734 447420 477306 276296 267907 278776 61.0078 61.0078 61.3047 2.69618e+07 2.69618e+07 2.69618e+07
512 24725.1 23852.5 25971 436787 422431 466609 268966 257565 280512 61.5977 61.5938 61.6797 2.85593e+07 2.85593e+07 2.85593e+07
1024 24776.3 22860.1 25351.6 439549 422906 458619 268615 246693 274031 64.3672 64.3633 64.3672 3.17618e+07 3.17618e+07 3.17618e+07
2048 24758.4 23720.7 25788.8 455069 445828 466096 267029 255173 278065 71.4336 71.4336 71.4336 3.81708e+07 3.81708e+07 3.81708e+07
4096 23735.7 23456.9 24158.8 457920 448925 473063 255017 251278 260160 84.1992 84.1992 84.1992 5.09906e+07 5.09906e+07 5.09906e+07
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
