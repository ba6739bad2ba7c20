# 20261128T101855Z-scaling-envs.gp: redraw 20261128T101855Z-scaling-envs.png with `gnuplot 20261128T101855Z-scaling-envs.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T101855Z-scaling-envs.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 23973.6 23719.7 24128.5 349404 344608 349728 278908 274972 281843 52.4922 52.4883 52.4922 2.00888e+07 2.00888e+07 2.00888e+07
16 24384.6 23544 25008 416733 409238 422242 269366 259032 276267 56.9453 56.9453 56.9453 2.23722e+07 2.23722e+07 2.23722e+07
32 25162.8 22891.5 25521.8 464407 429828 477401 271663 247146 275087 60.2656 60.2656 64.457 2.69403e+07 2.69403e+07 2.69403e+07
64 25264.1 24403.7 25904.9 502969 354625 506860 268828 264936 275751 69.4922 69.4922 70.3828 3.60764e+07 3.60764e+07 3.60764e+07
128 25040.5 24522.5 25576.7 504029 493312 512591 265253 259616 270854 88.3984 88.3945 88.3984 5.43489e+07 5.43489e+07 5.43489e+07
256 25456.2 24854 25684.2 520480 508373 531026 268460 262009 270689 122.195 121.992 123.988 9.08938e+07 9.08938e+07 9.08938e+07
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
