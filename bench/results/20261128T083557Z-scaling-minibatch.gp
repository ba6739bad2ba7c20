# 20261128T083557Z-scaling-minibatch.gp: redraw 20261128T083557Z-scaling-minibatch.png with `gnuplot 20261128T083557Z-scaling-minibatch.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T083557Z-scaling-minibatch.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 26183.8 26008.7 26389.4 473014 470558 477343 282895 280370 286141 61.2344 61.2305 61.2383 2.69403e+07 2.69403e+07 2.69403e+07
512 26583.7 26241 27286.6 476259 462500 483086 287667 283581 295150 61.8711 61.8711 61.8711 2.85377e+07 2.85377e+07 2.85377e+07
1024 25697.3 24877.3 27017.3 461596 447292 475223 278481 268305 292353 65.8945 65.6133 65.8945 3.17403e+07 3.17403e+07 3.17403e+07
2048 24240.7 23223.1 24467.6 449931 427414 456416 261277 250668 263789 73.4805 72.8438 73.4805 3.81493e+07 3.81493e+07 3.81493e+07
4096 24062.6 23166.6 24376.9 457264 447314 470830 258405 248805 262697 85.3672 85.1523 85.3672 5.09691e+07 5.09691e+07 5.09691e+07
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
