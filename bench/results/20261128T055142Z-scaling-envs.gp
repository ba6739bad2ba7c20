# 20261128T055142Z-scaling-envs.gp: redraw 20261128T055142Z-scaling-envs.png with `gnuplot 20261128T055142Z-scaling-envs.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T055142Z-scaling-envs.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 24766 23459.5 24994.4 344211 334086 348176 287672 277377 289778 204.125 204.125 204.125 2.00888e+07 2.00888e+07 2.00888e+07
16 25583.3 24389.6 25660.2 418437 404393 422971 283603 270106 284194 208.242 208.242 208.242 2.23722e+07 2.23722e+07 2.23722e+07
32 25869.4 25577.1 26159.2 469242 467526 469949 279210 275947 282466 212.406 212.406 212.66 2.69403e+07 2.69403e+07 2.69403e+07
64 25898.7 25817.1 26129.5 506031 493091 510993 275656 275203 278276 219.523 219.523 219.523 3.60764e+07 3.60764e+07 3.60764e+07
128 24934.9 24327.3 25558.5 480319 461382 496135 265431 257483 270906 237.5 237.352 237.5 5.43489e+07 5.43489e+07 5.43489e+07
256 24623.3 24022.5 25364.8 515642 488623 518878 259305 253393 267413 272.254 272.25 272.277 9.08938e+07 9.08938e+07 9.08938e+07
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
