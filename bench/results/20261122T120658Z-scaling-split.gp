# 20261122T120658Z-scaling-split.gp: redraw 20261122T120658Z-scaling-split.png with `gnuplot 20261122T120658Z-scaling-split.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T120658Z-scaling-split.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 9.03341 8.8826 9.34808 0.00880871 0.00853517 0.0100804 82.8661 82.2135 83.2164
16 6.81145 6.53531 6.90058 0.00866722 0.00832331 0.00892003 87.5647 87.1505 87.8755
32 5.86678 5.76345 5.888 0.0131955 0.0128373 0.0244347 90.7082 90.4474 91.4782
64 5.3473 5.28037 5.48869 0.0201106 0.0196631 0.0203904 92.7857 92.6538 92.9773
128 5.27919 5.18829 5.35113 0.0247045 0.0205344 0.0262266 93.7101 93.6494 94.1306
256 5.42158 5.37728 5.4501 0.0235537 0.0216305 0.0240608 94.1454 94.0485 94.2165
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
