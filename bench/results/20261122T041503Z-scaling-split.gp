# 20261122T041503Z-scaling-split.gp: redraw 20261122T041503Z-scaling-split.png with `gnuplot 20261122T041503Z-scaling-split.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T041503Z-scaling-split.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 9.18093 8.87845 9.25719 0.00841872 0.00830585 0.00983874 82.4692 80.6818 84.4179
16 7.27373 7.15593 7.41284 0.00892193 0.00863821 0.00921247 88.1584 87.6968 89.6342
32 6.36323 6.30104 6.41909 0.0125745 0.0122423 0.0129278 91.7666 91.4939 91.9758
64 5.53411 5.52084 5.61325 0.0197059 0.0195485 0.0202723 93.4134 92.9977 93.447
128 5.15426 5.14867 5.2863 0.0220139 0.0211268 0.0240912 94.2764 93.9231 94.3412
256 5.37002 5.35009 5.43955 0.0228214 0.021534 0.0275149 94.3727 94.2913 94.3929
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
