# 20261122T050322Z-scaling-split.gp: redraw 20261122T050322Z-scaling-split.png with `gnuplot 20261122T050322Z-scaling-split.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T050322Z-scaling-split.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 9.05871 8.92828 9.25284 0.00847806 0.00787873 0.00880705 85.2787 84.8344 85.4825
16 7.22934 7.06874 7.37031 0.00860681 0.00834317 0.00880059 89.6674 88.732 90.0387
32 6.04332 5.9097 6.12406 0.0122744 0.0114848 0.0187011 92.3933 92.2962 92.5936
64 5.42705 5.35591 5.66454 0.0196776 0.0185591 0.0203708 93.7803 93.5177 93.7988
128 5.269 5.23132 5.62562 0.0213254 0.0207517 0.0237798 94.2537 93.8849 94.315
256 5.36241 5.32701 5.45926 0.0210741 0.0205355 0.0216104 94.3768 94.2427 94.4214
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
