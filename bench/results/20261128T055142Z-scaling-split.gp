# 20261128T055142Z-scaling-split.gp: redraw 20261128T055142Z-scaling-split.png with `gnuplot 20261128T055142Z-scaling-split.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T055142Z-scaling-split.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 7.11307 7.02201 7.33878 0.00602961 0.00571689 0.00654855 86.0912 84.5765 86.2535
16 6.06666 6.00907 6.12419 0.00637114 0.00564599 0.00643829 90.2962 90.2021 90.5114
32 5.53325 5.46269 5.57477 0.00806722 0.00771109 0.00817715 92.6519 92.608 92.6883
64 5.16353 5.07946 5.23577 0.00851858 0.00824145 0.00938987 93.8976 93.8112 93.9953
128 5.2218 5.02601 5.36208 0.0138634 0.0131773 0.0162783 94.2826 93.9411 94.4812
256 4.82207 4.70563 4.91636 0.0217647 0.0202615 0.0233925 94.9041 94.8033 94.9591
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
