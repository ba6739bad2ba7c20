# 20261122T061610Z-scaling-split.gp: redraw 20261122T061610Z-scaling-split.png with `gnuplot 20261122T061610Z-scaling-split.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T061610Z-scaling-split.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 9.17107 8.57503 9.2392 0.00908994 0.0087461 0.00917686 83.1502 82.6247 85.4962
16 7.32054 7.24968 7.3276 0.00912786 0.00899183 0.00930094 89.4653 89.0933 89.6028
32 6.08671 6.03703 6.13831 0.0125214 0.0119683 0.0130574 92.0549 91.0291 92.3837
64 5.40657 5.34301 5.44141 0.0195857 0.0192163 0.0204754 93.6097 93.397 93.738
128 5.19643 5.15832 5.20579 0.0218072 0.021219 0.0236738 94.3111 94.2118 94.3565
256 5.30857 5.28375 5.40862 0.0219971 0.0208499 0.0237079 94.4319 94.247 94.4632
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
