# 20261122T023011Z-scaling-split.gp: redraw 20261122T023011Z-scaling-split.png with `gnuplot 20261122T023011Z-scaling-split.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T023011Z-scaling-split.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 9.44879 9.33814 9.69429 0.00962376 0.00922419 0.010728 82.7406 80.3362 83.6613
16 7.4737 7.42088 8.11852 0.0094023 0.00888002 0.00975874 87.3199 86.7778 88.0335
32 6.34061 6.31043 6.44898 0.0127971 0.0120827 0.0288616 91.7594 90.628 91.8774
64 5.69079 5.65195 5.70355 0.0205162 0.0202831 0.0239049 93.3585 92.8173 93.4672
128 5.34114 5.2367 5.42969 0.0219154 0.021598 0.0241166 93.9148 93.8242 94.1593
256 5.4951 5.45131 5.53942 0.022017 0.0209018 0.0225752 94.1725 94.0698 94.2021
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
