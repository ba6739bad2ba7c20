# 20261122T120658Z-scaling-minibatch.gp: redraw 20261122T120658Z-scaling-minibatch.png with `gnuplot 20261122T120658Z-scaling-minibatch.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T120658Z-scaling-minibatch.png.tmp'
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 32006.6 31470 32326.2 544492 528145 547915 353374 347762 357753 62.6797 62.6797 62.6836 2.69403e+07 2.69403e+07 2.69403e+07
512 32109.1 31463.1 32500.3 511471 504497 537246 352712 348986 360679 62.043 62.043 64.7422 2.85377e+07 2.85377e+07 2.85377e+07
1024 34146.2 33249.6 34203.3 550035 535320 562499 378050 368685 379090 64.8555 64.8555 64.8555 3.17403e+07 3.17403e+07 3.17403e+07
2048 34941.4 34483.4 35363.3 558499 537397 569364 387965 382269 388913 74.6953 74.6953 74.6953 3.81493e+07 3.81493e+07 3.81493e+07
4096 32883.2 31042.1 34622.2 524876 479483 562556 365865 342877 384392 86.5273 86.5234 86.5391 5.09691e+07 5.09691e+07 5.09691e+07
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
