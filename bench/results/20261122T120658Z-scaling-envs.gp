# 20261122T120658Z-scaling-envs.gp: redraw 20261122T120658Z-scaling-envs.png with `gnuplot 20261122T120658Z-scaling-envs.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T120658Z-scaling-envs.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 32233.1 32097.8 32370.4 357039 343558 364425 389852 386406 390642 56 55.8008 56.1406 2.00888e+07 2.00888e+07 2.00888e+07
16 32267.5 31020 33654.3 484112 458399 493856 368499 353301 386163 58.1953 58.1094 58.3438 2.23722e+07 2.23722e+07 2.23722e+07
32 34163.9 32828.4 35757.2 582847 569596 607290 373464 361912 395338 62.5078 62.5078 62.5117 2.69403e+07 2.69403e+07 2.69403e+07
64 34194.6 32867.1 36562.4 634150 614649 687001 367945 354267 394052 72.2031 72.2031 74.5859 3.60764e+07 3.60764e+07 3.60764e+07
128 33606.8 32905.1 34037.6 637572 626727 644002 358112 349568 363334 90.7734 89.9375 90.7734 5.43489e+07 5.43489e+07 5.43489e+07
256 32535 31856 33856.4 597295 592419 624474 345583 338602 359346 122.266 122.242 126.23 9.08938e+07 9.08938e+07 9.08938e+07
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
