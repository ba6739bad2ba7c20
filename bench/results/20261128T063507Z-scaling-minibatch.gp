# 20261128T063507Z-scaling-minibatch.gp: redraw 20261128T063507Z-scaling-minibatch.png with `gnuplot 20261128T063507Z-scaling-minibatch.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T063507Z-scaling-minibatch.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 25542.1 25207.3 25692.3 465731 445829 472452 275695 272419 277175 59.418 59.4141 59.418 2.69403e+07 2.69403e+07 2.69403e+07
512 26138.3 25921.9 26337.2 466249 448036 475837 282741 280927 285259 60.7812 60.7812 63.543 2.85377e+07 2.85377e+07 2.85377e+07
1024 26253.9 25379.5 26721.1 468364 448665 472448 283817 274701 289802 66.1836 66.1836 66.1836 3.17403e+07 3.17403e+07 3.17403e+07
2048 25763.4 25259.8 26312.3 465350 449604 467545 278160 272691 284497 73.7109 73.7109 73.7383 3.81493e+07 3.81493e+07 3.81493e+07
4096 25167.2 24572.8 25748.9 471002 469389 471981 271186 264197 277930 85.3477 85.3438 85.5195 5.09691e+07 5.09691e+07 5.09691e+07
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
