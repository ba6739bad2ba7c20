# 20261122T023011Z-scaling-envs.gp: redraw 20261122T023011Z-scaling-envs.png with `gnuplot 20261122T023011Z-scaling-envs.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T023011Z-scaling-envs.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 30974.1 30181 31088.6 324312 314305 332853 374375 366457 381442 50.3164 50.3164 50.3164 1.86592e+07 1.86592e+07 1.86592e+07
16 32731.1 32284.1 32969.2 435260 405186 441068 373666 369722 379926 51.7031 51.6367 53.7539 2.09427e+07 2.09427e+07 2.09427e+07
32 33469.8 33299.7 34055.3 529316 516800 533308 367555 362748 370782 55.9609 55.957 56.0469 2.55108e+07 2.55108e+07 2.55108e+07
64 33193.1 32733.9 33806 582936 579161 592718 355269 350626 364221 64.918 64.8008 66.0938 3.46469e+07 3.46469e+07 3.46469e+07
128 33151.3 32276.1 33796.3 620678 594438 635060 353334 343675 359876 83.0273 82.9805 84.0234 5.29193e+07 5.29193e+07 5.29193e+07
256 30184.5 28757.5 30886.9 553491 523329 566597 320423 305333 328038 119.059 118.988 120.492 8.94642e+07 8.94642e+07 8.94642e+07
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
