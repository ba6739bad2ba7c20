# 20261128T083557Z-scaling-envs.gp: redraw 20261128T083557Z-scaling-envs.png with `gnuplot 20261128T083557Z-scaling-envs.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T083557Z-scaling-envs.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 24101.8 23103.6 24495.2 334576 309140 341026 279801 271138 284652 55.1133 55.1133 55.1133 2.00888e+07 2.00888e+07 2.00888e+07
16 24013.2 23238.7 24517.3 381377 361122 397122 267328 258558 272435 56.5508 56.4023 56.5508 2.23722e+07 2.23722e+07 2.23722e+07
32 24967.5 23924.7 25411.5 444684 431961 461540 270478 258465 274269 61.3555 61.1484 61.3594 2.69403e+07 2.69403e+07 2.69403e+07
64 25243.1 24244.7 26251.4 485105 465353 513674 269425 258948 279451 68.8438 68.8438 68.8438 3.60764e+07 3.60764e+07 3.60764e+07
128 25192.5 25120.3 25843 508659 498053 520297 266473 265946 273740 86.8672 86.8672 90.0547 5.43489e+07 5.43489e+07 5.43489e+07
256 25938.7 25457.7 26154.7 534135 510405 540979 273417 268704 275677 122.828 122.738 128.254 9.08938e+07 9.08938e+07 9.08938e+07
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
