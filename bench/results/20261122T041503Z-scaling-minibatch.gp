# 20261122T041503Z-scaling-minibatch.gp: redraw 20261122T041503Z-scaling-minibatch.png with `gnuplot 20261122T041503Z-scaling-minibatch.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T041503Z-scaling-minibatch.png.tmp'
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 32143.6 31559.9 33731.9 513140 502253 540857 351023 343683 366621 57.3008 57.0039 57.6992 2.55108e+07 2.55108e+07 2.55108e+07
512 31257.7 31158.7 32567.2 484296 478621 507636 340186 339233 355139 61.4297 61.3984 61.4375 2.65788e+07 2.65788e+07 2.65788e+07
1024 33244.3 31798.8 34068.2 507268 490515 517552 362423 349225 372003 62.875 62.7773 62.8984 2.87225e+07 2.87225e+07 2.87225e+07
2048 31766.6 31564.7 33777.4 479324 475529 507550 346288 343952 368479 70.457 70.3398 70.4961 3.30139e+07 3.30139e+07 3.30139e+07
4096 31609.8 31215.2 34532.2 480445 469070 522885 344826 340442 376603 83.3633 83.3594 83.4844 4.15984e+07 4.15984e+07 4.15984e+07
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
