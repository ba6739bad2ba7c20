# 20261122T025313Z-scaling-minibatch.gp: redraw 20261122T025313Z-scaling-minibatch.png with `gnuplot 20261122T025313Z-scaling-minibatch.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T025313Z-scaling-minibatch.png.tmp'
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 30361.6 29919.7 32074.7 489886 470396 507151 329398 326150 348810 58.4219 58.4102 61.2695 2.55108e+07 2.55108e+07 2.55108e+07
512 30704.7 30523.2 31923.4 474587 471071 489858 334373 332103 348143 59.75 59.7461 59.9961 2.65788e+07 2.65788e+07 2.65788e+07
1024 31887.4 31644.9 33137.5 484113 480647 509933 350928 348464 363018 64.9141 64.8125 65.0117 2.87225e+07 2.87225e+07 2.87225e+07
2048 31818.3 31398.5 32340.7 483733 466824 500048 347083 342486 352253 70.7812 70.7812 71.2383 3.30139e+07 3.30139e+07 3.30139e+07
4096 29377.7 25316.9 30831.2 463983 427294 472480 319178 274127 335643 84.6836 84.6797 84.6875 4.15984e+07 4.15984e+07 4.15984e+07
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
