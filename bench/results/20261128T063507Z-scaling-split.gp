# 20261128T063507Z-scaling-split.gp: redraw 20261128T063507Z-scaling-split.png with `gnuplot 20261128T063507Z-scaling-split.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T063507Z-scaling-split.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 7.14598 7.08283 7.57702 0.00610484 0.00571934 0.00625429 86.1678 85.0905 86.245
16 6.0681 6.01611 6.59047 0.0070384 0.00695816 0.00738445 90.3045 90.0325 90.4679
32 5.42758 5.36336 5.46221 0.0086471 0.00846347 0.00927918 92.7741 92.6666 92.8138
64 5.22449 5.0997 5.25093 0.0100014 0.009618 0.0105627 93.8175 93.725 93.8922
128 5.0807 5.00958 5.10006 0.0141171 0.0126492 0.0149611 94.4166 94.3874 94.4791
256 4.86591 4.86035 4.98018 0.0220352 0.0217734 0.0246905 94.8599 94.7405 94.8787
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
