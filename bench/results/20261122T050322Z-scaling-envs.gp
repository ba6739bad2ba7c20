# 20261122T050322Z-scaling-envs.gp: redraw 20261122T050322Z-scaling-envs.png with `gnuplot 20261122T050322Z-scaling-envs.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T050322Z-scaling-envs.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 26509.2 22615 26702.1 288582 248201 297887 310854 264813 313830 51.1211 50.832 51.3984 1.86592e+07 1.86592e+07 1.86592e+07
16 26939.9 25746.8 27588.8 370327 364234 384440 301720 285952 307461 53.9453 53.9453 54.0352 2.09427e+07 2.09427e+07 2.09427e+07
32 27592.2 27181.2 27942.9 456799 448009 472831 298786 294366 301780 57.832 57.7461 58.4453 2.55108e+07 2.55108e+07 2.55108e+07
64 28513.3 28246.2 28721.2 526770 498649 533360 303999 302041 306528 66.2539 66.25 67.9219 3.46469e+07 3.46469e+07 3.46469e+07
128 28229.9 27632.3 28530.1 531443 491187 539632 299315 294321 303209 85.207 85.1953 87.1992 5.29193e+07 5.29193e+07 5.29193e+07
256 28452 27150.9 28572.8 531212 497336 534108 301329 288096 302810 120.957 120.953 120.961 8.94642e+07 8.94642e+07 8.94642e+07
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
