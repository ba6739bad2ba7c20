# 20261122T071305Z-scaling-split.gp: redraw 20261122T071305Z-scaling-split.png with `gnuplot 20261122T071305Z-scaling-split.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T071305Z-scaling-split.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 9.06571 8.88018 9.11541 0.00844422 0.00801083 0.00862516 84.5316 80.1257 84.925
16 7.18977 7.11517 7.29933 0.00899689 0.00881126 0.00944387 89.4729 88.4899 89.641
32 6.04338 5.94608 6.10485 0.0126778 0.0123398 0.0224162 92.0099 91.8668 92.308
64 5.32781 5.12608 5.55793 0.0196102 0.0190568 0.0243645 93.6682 93.3948 93.8439
128 5.15277 5.03784 5.26539 0.0215998 0.0201898 0.0242713 94.3396 94.0341 94.4399
256 5.3785 5.33819 5.52115 0.0252994 0.0229142 0.027307 94.2863 94.1696 94.3676
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
