# 20261121T230234Z-scaling-minibatch.gp: redraw 20261121T230234Z-scaling-minibatch.png with `gnuplot 20261121T230234Z-scaling-minibatch.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261121T230234Z-scaling-minibatch.png.tmp'
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 26247.7 25835.8 26823.9 392760 380551 407532 288349 282911 293111 57.6133 57.1758 57.6719 2.54433e+07 2.54433e+07 2.54433e+07
512 26926.7 26663.4 27018.9 388430 385868 391978 296137 293137 296534 59.1836 59.1523 61.1445 2.65103e+07 2.65103e+07 2.65103e+07
1024 28172.1 27291.9 28547.9 400279 379654 406498 309924 301318 314142 62.9844 62.8359 62.9883 2.8652e+07 2.8652e+07 2.8652e+07
2048 28011.2 27897.7 29020 391266 382013 415482 308638 308220 319488 70.0547 69.2812 70.9062 3.29392e+07 3.29392e+07 3.29392e+07
4096 27448.3 26982 27766.2 413672 402138 422490 300395 295876 303522 82.6328 82.6328 82.8984 4.15156e+07 4.15156e+07 4.15156e+07
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
