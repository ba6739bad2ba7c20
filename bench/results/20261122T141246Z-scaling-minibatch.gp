# 20261122T141246Z-scaling-minibatch.gp: redraw 20261122T141246Z-scaling-minibatch.png with `gnuplot 20261122T141246Z-scaling-minibatch.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T141246Z-scaling-minibatch.png.tmp'
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 25843.1 25339.8 26060.9 408253 397815 417746 283674 279292 286101 63.3281 63.3203 65.7148 2.69403e+07 2.69403e+07 2.69403e+07
512 27225.4 26869.2 27504 408328 404383 416314 300305 297653 303871 64.8867 64.8672 64.8867 2.85377e+07 2.85377e+07 2.85377e+07
1024 27849.6 27440 28282 406888 402152 415270 309627 303703 312992 68.3008 68.3008 68.3008 3.17403e+07 3.17403e+07 3.17403e+07
2048 28793.5 28690.5 29432.6 418773 412594 424791 319306 317706 326463 73.4688 73.4688 73.4688 3.81493e+07 3.81493e+07 3.81493e+07
4096 28481.7 26755.5 28655.9 417103 287671 427293 315244 309001 317635 87.1133 87.1133 89.1094 5.09691e+07 5.09691e+07 5.09691e+07
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
