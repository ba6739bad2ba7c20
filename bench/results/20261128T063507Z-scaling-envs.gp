# 20261128T063507Z-scaling-envs.gp: redraw 20261128T063507Z-scaling-envs.png with `gnuplot 20261128T063507Z-scaling-envs.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T063507Z-scaling-envs.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 24335 23638.2 24829.5 340541 311972 348096 282161 277801 287990 52.9297 52.8164 52.9297 2.00888e+07 2.00888e+07 2.00888e+07
16 24606.3 24316.7 24867.1 405514 368967 409800 272104 270088 275369 54.4766 54.4766 54.4766 2.23722e+07 2.23722e+07 2.23722e+07
32 25023.7 24737.7 25138 463154 452888 468646 270040 266836 270913 59.457 59.3594 61.3594 2.69403e+07 2.69403e+07 2.69403e+07
64 25074.9 24604.8 25429.3 484405 468579 491695 267061 262521 271114 68.1914 68.1914 68.1914 3.60764e+07 3.60764e+07 3.60764e+07
128 25510.9 25239.2 25568.4 502067 500951 503819 270195 267141 270833 86.7461 86.7461 86.7461 5.43489e+07 5.43489e+07 5.43489e+07
256 25442.4 24856.1 25689.4 512095 509729 528392 268501 261977 270785 120.055 120.016 120.137 9.08938e+07 9.08938e+07 9.08938e+07
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
