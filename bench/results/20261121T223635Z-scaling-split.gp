# 20261121T223635Z-scaling-split.gp: redraw 20261121T223635Z-scaling-split.png with `gnuplot 20261121T223635Z-scaling-split.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261121T223635Z-scaling-split.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 10.0093 9.68815 10.1495 0.0078112 0.00724471 0.00806665 83.8759 83.79 84.3643
16 7.8709 7.61696 8.03758 0.00782567 0.00728523 0.0162434 88.8601 88.3349 89.0668
32 6.56248 6.3077 7.36077 0.0121553 0.0114136 0.0145531 91.5718 90.7235 91.6653
64 5.68406 5.67693 5.77047 0.0200622 0.0192022 0.021285 93.06 92.7396 93.2015
128 5.47806 5.33751 5.51368 0.0207032 0.0197945 0.0240854 93.7756 93.5195 93.9573
256 5.17382 5.09697 5.30369 0.0225436 0.0188824 0.0235511 94.1933 94.134 94.3141
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
