# 20261128T165558Z-scaling-split.gp: redraw 20261128T165558Z-scaling-split.png with `gnuplot 20261128T165558Z-scaling-split.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T165558Z-scaling-split.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 7.54923 6.90194 7.65793 0.00678084 0.00625568 0.00795556 85.3706 84.3868 86.6196
16 5.92705 5.78645 6.3415 0.0069223 0.00654872 0.0074226 90.3696 90.0038 90.7585
32 5.51645 5.32296 5.59094 0.00864584 0.00825905 0.00951939 92.7002 92.5443 92.9527
64 5.17394 5.08391 5.21721 0.0100217 0.0092287 0.0102403 93.9055 93.8761 93.9997
128 5.14541 4.94775 5.38957 0.0132288 0.0128421 0.0158964 94.3422 94.1318 94.5528
256 4.89191 4.77578 4.94583 0.022655 0.0218422 0.0230901 94.851 94.7935 94.9844
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
