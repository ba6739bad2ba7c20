# 20261121T223635Z-scaling-minibatch.gp: redraw 20261121T223635Z-scaling-minibatch.png with `gnuplot 20261121T223635Z-scaling-minibatch.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261121T223635Z-scaling-minibatch.png.tmp'
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 25052.9 24784.7 25647.7 399844 384806 403118 273532 271128 279566 58.1992 58.1445 58.2109 2.54433e+07 2.54433e+07 2.54433e+07
512 26491.9 25939.5 26856.4 392602 380159 403987 291084 285613 294235 59.8828 59.8555 59.8828 2.65103e+07 2.65103e+07 2.65103e+07
1024 26799.2 25664.5 27045.2 387158 368682 390073 295384 283437 298038 62.3477 62.3359 62.3477 2.8652e+07 2.8652e+07 2.8652e+07
2048 27195.8 27083.8 27900.7 388270 373894 397422 300589 299818 307423 71.4727 71.3477 71.4805 3.29392e+07 3.29392e+07 3.29392e+07
4096 25869.6 25421.5 26352.4 379487 357547 383567 286055 281649 290793 85.0273 85.0195 85.1602 4.15156e+07 4.15156e+07 4.15156e+07
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
