# 20261128T101855Z-scaling-split.gp: redraw 20261128T101855Z-scaling-split.png with `gnuplot 20261128T101855Z-scaling-split.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T101855Z-scaling-split.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 6.89468 6.78835 6.95678 0.00712431 0.00666927 0.00723564 86.1668 85.6098 86.439
16 5.91074 5.64967 5.95854 0.00706499 0.00687746 0.00747829 90.5213 90.3736 90.8923
32 5.34599 5.32573 5.41826 0.00952724 0.00928811 0.00981052 92.6735 92.6233 92.7848
64 5.08314 4.99121 6.88156 0.00989698 0.00977839 0.0102461 93.9537 92.1116 93.9786
128 4.97099 4.90372 5.06059 0.0132217 0.0129331 0.0139385 94.4569 94.4024 94.5738
256 4.86852 4.83671 4.89449 0.0232868 0.021895 0.0250152 94.8591 94.8096 94.8846
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
