# 20261122T023011Z-scaling-minibatch.gp: redraw 20261122T023011Z-scaling-minibatch.png with `gnuplot 20261122T023011Z-scaling-minibatch.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T023011Z-scaling-minibatch.png.tmp'
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 31603.8 30596.1 32251.8 485544 474831 505769 346699 333510 354771 56.2852 56.2852 56.375 2.55108e+07 2.55108e+07 2.55108e+07
512 33471 32875.9 33520.4 500712 488989 509536 369990 363290 371360 58.8555 58.7695 60.1562 2.65788e+07 2.65788e+07 2.65788e+07
1024 32079 31657.8 33187.6 474116 461427 486833 355039 349469 366365 62.0391 61.7539 63.3672 2.87225e+07 2.87225e+07 2.87225e+07
2048 32959.4 32145.9 33527.2 479276 453827 485976 360848 353490 367337 68.8281 68.8203 68.8711 3.30139e+07 3.30139e+07 3.30139e+07
4096 30688.6 30203.9 31294.5 459521 444775 465927 337712 330629 345601 81.6445 81.6406 81.7852 4.15984e+07 4.15984e+07 4.15984e+07
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
