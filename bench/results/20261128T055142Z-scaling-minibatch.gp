# 20261128T055142Z-scaling-minibatch.gp: redraw 20261128T055142Z-scaling-minibatch.png with `gnuplot 20261128T055142Z-scaling-minibatch.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T055142Z-scaling-minibatch.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 24587.6 24447.6 25520.9 452298 448803 473813 265199 264007 275387 212.828 212.457 220.031 2.69403e+07 2.69403e+07 2.69403e+07
512 25900.3 25475 26056 463296 458900 470596 279902 275264 282055 214.039 213.742 214.039 2.85377e+07 2.85377e+07 2.85377e+07
1024 25585.6 24846.1 25779.2 460951 454252 465503 276204 268179 279178 215.988 215.988 216.754 3.17403e+07 3.17403e+07 3.17403e+07
2048 25265.9 25148.8 25634.2 460543 458736 467508 272530 271565 276787 221.672 221.672 221.672 3.81493e+07 3.81493e+07 3.81493e+07
4096 23969.8 23421.9 24648.2 457301 442280 474529 258703 251583 264879 236.418 236.418 236.418 5.09691e+07 5.09691e+07 5.09691e+07
EOD
set logscale x 2
set xlabel 'minibatch size (32 envs x 128 steps)'
set multiplot layout 2,1
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
unset logscale y
set ylabel 'MiB'
plot $d using 1:11:12:13 with yerrorlines lw 2 title 'peak RSS', $d using 1:($14/1048576) with linespoints title 'planned (trainer_memory_plan)'
unset multiplot
