# 20261122T025313Z-scaling-envs.gp: redraw 20261122T025313Z-scaling-envs.png with `gnuplot 20261122T025313Z-scaling-envs.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T025313Z-scaling-envs.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 30940.6 30273.1 31708.2 348684 339898 353885 372236 366389 378417 50.9922 50.9922 54.0625 1.86592e+07 1.86592e+07 1.86592e+07
16 31737.6 31354 32394.8 444721 434953 447061 357203 350871 369345 54.4141 54.4141 54.4219 2.09427e+07 2.09427e+07 2.09427e+07
32 31767 31030.2 32043.6 503937 494508 518021 347195 337263 351572 58.4375 58.4336 58.4414 2.55108e+07 2.55108e+07 2.55108e+07
64 32632.2 30267.7 33066.1 583744 539200 598455 349492 323622 355094 66.3516 66.3516 66.4805 3.46469e+07 3.46469e+07 3.46469e+07
128 30564.8 30207.8 32068.3 588956 585015 619773 324136 320031 339883 83.957 83.9531 83.9688 5.29193e+07 5.29193e+07 5.29193e+07
256 30000.6 29701.3 30554 564426 560983 573263 317964 314466 323798 119.672 119.672 119.672 8.94642e+07 8.94642e+07 8.94642e+07
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set multiplot layout 2,1
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
unset logscale y
set ylabel 'MiB'
plot $d using 1:11:12:13 with yerrorlines lw 2 title 'peak RSS', $d using 1:($14/1048576) with linespoints title 'planned (trainer_memory_plan)'
unset multiplot
