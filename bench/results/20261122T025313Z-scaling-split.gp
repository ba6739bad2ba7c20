# 20261122T025313Z-scaling-split.gp: redraw 20261122T025313Z-scaling-split.png with `gnuplot 20261122T025313Z-scaling-split.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T025313Z-scaling-split.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 8.95769 8.68355 9.0239 0.00817207 0.00758483 0.0086713 83.7919 81.0485 84.6376
16 7.20076 7.05871 7.26595 0.00876274 0.00850923 0.0209116 89.2806 87.709 89.5835
32 6.27843 6.18498 6.30377 0.0127276 0.0118244 0.0180568 91.4963 91.132 92.1248
64 5.58077 5.52523 5.63721 0.0197277 0.0191326 0.0221962 93.3704 92.8714 93.528
128 5.18678 5.16359 5.20002 0.0220159 0.0218025 0.0242735 94.3509 94.2918 94.3902
256 5.31524 5.29451 5.33572 0.0216099 0.0211257 0.0221102 94.4235 94.3523 94.464
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
