# 20261122T050322Z-scaling-minibatch.gp: redraw 20261122T050322Z-scaling-minibatch.png with `gnuplot 20261122T050322Z-scaling-minibatch.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T050322Z-scaling-minibatch.png.tmp'
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 28376.7 27971.4 29590.9 467984 464795 487281 306823 302458 320153 58.5742 58.0352 58.5742 2.55108e+07 2.55108e+07 2.55108e+07
512 29497.6 29179 29624.5 467814 461099 471287 320241 317001 321785 62.3477 62.2969 62.3477 2.65788e+07 2.65788e+07 2.65788e+07
1024 30373.5 30193.8 30686.7 475271 470148 478054 330227 328292 333802 64.8672 64.8633 64.8672 2.87225e+07 2.87225e+07 2.87225e+07
2048 30346.1 30081.1 30623 474019 469583 478144 329402 327043 333199 70.8516 70.5586 70.9805 3.30139e+07 3.30139e+07 3.30139e+07
4096 28484.2 27842.6 28997.7 452362 450668 464456 309357 301672 314915 83.6172 83.5469 83.6211 4.15984e+07 4.15984e+07 4.15984e+07
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
