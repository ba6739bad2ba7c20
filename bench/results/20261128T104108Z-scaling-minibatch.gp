# 20261128T104108Z-scaling-minibatch.gp: redraw 20261128T104108Z-scaling-minibatch.png with `gnuplot 20261128T104108Z-scaling-minibatch.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T104108Z-scaling-minibatch.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 24355.7 24091.5 24632.7 452843 444919 469913 263483 258954 265831 59.8125 59.6953 59.8164 2.69403e+07 2.69403e+07 2.69403e+07
512 25317.7 24408.4 25949.9 464678 459299 477842 273479 263084 280871 62.6992 62.6992 62.6992 2.85377e+07 2.85377e+07 2.85377e+07
1024 25820.2 24853.6 26089.7 467321 451981 480289 278871 268914 282319 64.5859 64.2227 64.5859 3.17403e+07 3.17403e+07 3.17403e+07
2048 25791.7 24677.3 26126 467984 452193 478180 278807 266841 282133 73.9453 73.3984 73.9453 3.81493e+07 3.81493e+07 3.81493e+07
4096 24714.2 22777.7 25288.5 475117 451364 480019 266207 244979 272063 87.5078 87.5039 87.5469 5.09691e+07 5.09691e+07 5.09691e+07
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
