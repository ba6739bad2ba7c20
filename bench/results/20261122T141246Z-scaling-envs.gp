# 20261122T141246Z-scaling-envs.gp: redraw 20261122T141246Z-scaling-envs.png with `gnuplot 20261122T141246Z-scaling-envs.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T141246Z-scaling-envs.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 24888.6 24231.1 25300.4 278574 255827 280166 299912 294003 303869 55.832 55.832 55.832 2.00888e+07 2.00888e+07 2.00888e+07
16 26390.6 25847.5 26866 370550 360360 375098 298353 292955 303361 57.8008 57.8008 57.8633 2.23722e+07 2.23722e+07 2.23722e+07
32 26579.3 26301.5 26919.5 439862 421392 443496 291344 287861 294362 63.9609 63.9609 66.2305 2.69403e+07 2.69403e+07 2.69403e+07
64 27170.1 26574.8 28065.3 497533 479810 511624 291302 285430 301825 71.1484 70.4023 71.1484 3.60764e+07 3.60764e+07 3.60764e+07
128 28034 26958.1 30656.9 519599 489059 567672 299141 287609 326925 87.6289 87.5977 87.6992 5.43489e+07 5.43489e+07 5.43489e+07
256 26667.8 26398.5 28373.8 497036 482205 515536 283464 281056 301949 123.156 123.156 123.156 9.08938e+07 9.08938e+07 9.08938e+07
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
