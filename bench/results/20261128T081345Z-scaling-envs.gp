# 20261128T081345Z-scaling-envs.gp: redraw 20261128T081345Z-scaling-envs.png with `gnuplot 20261128T081345Z-scaling-envs.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T081345Z-scaling-envs.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 24102 22878.5 24294.1 321651 307899 325619 281495 269716 285460 55.1719 55.1719 55.2891 2.00888e+07 2.00888e+07 2.00888e+07
16 24684 24206.7 25587.9 401385 389108 413972 274015 268775 284634 58.3477 58.168 58.3516 2.23722e+07 2.23722e+07 2.23722e+07
32 24866.8 24654.9 25698.3 456130 442757 474536 269087 265833 277121 61.1719 60.9453 63.1328 2.69403e+07 2.69403e+07 2.69403e+07
64 24813.2 23795.1 25091.2 487591 484957 498592 264305 252604 267401 69.8711 69.8711 69.957 3.60764e+07 3.60764e+07 3.60764e+07
128 25349.7 23408.8 25935.7 492233 480099 522787 268822 247493 274344 89.0273 88.8672 91.0234 5.43489e+07 5.43489e+07 5.43489e+07
256 22909.4 22700 23656.6 468203 461383 477466 241980 239817 249673 125.621 123.762 126.008 9.08938e+07 9.08938e+07 9.08938e+07
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
