# 20261128T101855Z-scaling-minibatch.gp: redraw 20261128T101855Z-scaling-minibatch.png with `gnuplot 20261128T101855Z-scaling-minibatch.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T101855Z-scaling-minibatch.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 24910.3 23850.7 25235.1 466603 438774 471741 268675 257844 272186 60.2852 60.168 60.2891 2.69403e+07 2.69403e+07 2.69403e+07
512 25805.9 24731.6 26058.9 455333 445738 479027 279464 267429 281740 63.1719 63.1719 64.5742 2.85377e+07 2.85377e+07 2.85377e+07
1024 26291.2 25617.1 26648.3 476324 475365 479925 283842 276556 288099 65.0586 64.6953 65.0586 3.17403e+07 3.17403e+07 3.17403e+07
2048 24779.1 24319.9 25084.7 463568 455886 467565 267355 262104 270389 75.3398 74.793 75.3398 3.81493e+07 3.81493e+07 3.81493e+07
4096 23694.4 23238.9 24010.7 469183 404087 476835 254260 251200 257941 89.3633 89.3594 89.4023 5.09691e+07 5.09691e+07 5.09691e+07
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
