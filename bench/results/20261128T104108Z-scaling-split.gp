# 20261128T104108Z-scaling-split.gp: redraw 20261128T104108Z-scaling-split.png with `gnuplot 20261128T104108Z-scaling-split.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T104108Z-scaling-split.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 6.91172 6.89428 6.92402 0.0069659 0.00640432 0.00707125 86.1266 85.8365 86.2553
16 5.99757 5.75755 6.06181 0.00655984 0.00609299 0.00712299 90.3657 90.2847 90.7732
32 5.39662 5.30327 5.63131 0.00902901 0.00866904 0.00917521 92.5706 92.2911 92.8243
64 5.05652 5.0411 5.12969 0.0083793 0.00810424 0.00967699 93.9342 93.7244 94.0009
128 5.02244 4.88706 5.16571 0.0129857 0.0124585 0.0136031 94.4781 94.2685 94.607
256 4.83193 4.73565 5.6917 0.0224876 0.0206809 0.023495 94.8824 94.0082 94.9929
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
