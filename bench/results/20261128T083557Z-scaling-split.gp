# 20261128T083557Z-scaling-split.gp: redraw 20261128T083557Z-scaling-split.png with `gnuplot 20261128T083557Z-scaling-split.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T083557Z-scaling-split.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 7.1828 7.08346 7.47352 0.00678988 0.00636161 0.0071856 85.8868 85.2099 86.1717
16 6.24553 6.07997 6.64961 0.00732744 0.00677944 0.00797336 89.9934 89.8266 90.3522
32 5.53863 5.5058 5.6301 0.0090036 0.00869535 0.00922274 92.524 92.105 92.6519
64 5.15113 5.11052 5.26635 0.00951672 0.00941586 0.0098294 93.7606 93.6276 93.9407
128 4.96631 4.9048 5.08062 0.0141777 0.0124837 0.015566 94.5143 94.4071 94.5989
256 4.85621 4.80161 4.98774 0.0224071 0.0216522 0.0229665 94.8743 94.7424 94.9186
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
