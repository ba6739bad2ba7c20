# 20261128T081345Z-scaling-split.gp: redraw 20261128T081345Z-scaling-split.png with `gnuplot 20261128T081345Z-scaling-split.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T081345Z-scaling-split.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 7.46089 7.40961 7.52707 0.00734546 0.00709984 0.00773999 85.1211 84.8137 85.6214
16 6.21594 6.07228 6.26169 0.0068349 0.0065789 0.0164274 90.0828 89.8979 90.1782
32 5.43813 5.40523 5.58596 0.00877135 0.00844178 0.00949911 92.6263 92.4115 92.7458
64 5.11399 4.77246 5.15115 0.00998852 0.009663 0.0117373 93.8781 93.7892 94.199
128 4.93064 4.87582 5.14995 0.0132291 0.0127695 0.0139536 94.5432 94.2992 94.5837
256 4.93661 4.87714 4.95461 0.0193768 0.0183378 0.024598 94.7389 94.6554 94.7919
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
