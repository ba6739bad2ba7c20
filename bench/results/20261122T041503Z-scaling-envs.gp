# 20261122T041503Z-scaling-envs.gp: redraw 20261122T041503Z-scaling-envs.png with `gnuplot 20261122T041503Z-scaling-envs.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T041503Z-scaling-envs.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 29486.1 29223.5 30981 329397 319858 337449 364120 354356 366995 51.5586 51.4219 51.5586 1.86592e+07 1.86592e+07 1.86592e+07
16 32076.6 31967.7 33245.5 445575 440042 448486 364979 357861 371792 53.4531 53.4414 54.0234 2.09427e+07 2.09427e+07 2.09427e+07
32 33486.1 32439.9 34130.8 521665 510714 537166 365504 353331 371931 57.3516 57.2969 57.8828 2.55108e+07 2.55108e+07 2.55108e+07
64 32586.2 32084.2 33663.6 589138 573201 605170 350398 343342 360389 66.4297 66.0117 66.7109 3.46469e+07 3.46469e+07 3.46469e+07
128 31717.2 30033.6 33378.1 605687 583328 631408 336428 318351 355377 85.0273 84.9922 86.2734 5.29193e+07 5.29193e+07 5.29193e+07
256 31889.2 30597 32556.7 595868 569774 601279 337907 324160 345278 118.625 118.164 119.871 8.94642e+07 8.94642e+07 8.94642e+07
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set multiplot layout 2,1
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
unset logscale y
set ylabel 'MiB'
plot $d using 1:11:12:13 with yerrorlines lw 2 title 'peak RSS', $d using 1:($14/1048576) with linespoints title 'planned (trainer_memory_plan)'
unset multiplot
