# 20261128T165558Z-scaling-envs.gp: redraw 20261128T165558Z-scaling-envs.png with `gnuplot 20261128T165558Z-scaling-envs.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T165558Z-scaling-envs.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 22194.6 21175.9 22933.6 297277 289825 328089 260116 250939 264763 52.0039 52.0039 52.0078 2.01101e+07 2.01101e+07 2.01101e+07
16 24070.5 23491.6 24197.5 398277 380914 418176 266356 259889 268385 55.5352 55.5352 55.75 2.23936e+07 2.23936e+07 2.23936e+07
32 24738.6 24242.1 25150.1 447232 439450 457065 267316 261176 271306 61.6289 61.6289 62.5352 2.69618e+07 2.69618e+07 2.69618e+07
64 25050.8 24379.4 25589.3 492746 468778 496049 266535 259653 272500 68.8789 68.8789 76.25 3.60982e+07 3.60982e+07 3.60982e+07
128 25147.3 24560 25461 491341 455696 514596 266124 260911 269278 86.9375 86.9375 90.6836 5.43712e+07 5.43712e+07 5.43712e+07
256 25642.4 24804.3 25938.7 524370 516143 530237 270330 261140 273468 120.914 120.41 122.918 9.09171e+07 9.09171e+07 9.09171e+07
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
