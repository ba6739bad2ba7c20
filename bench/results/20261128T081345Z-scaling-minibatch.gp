# 20261128T081345Z-scaling-minibatch.gp: redraw 20261128T081345Z-scaling-minibatch.png with `gnuplot 20261128T081345Z-scaling-minibatch.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T081345Z-scaling-minibatch.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# batch_size sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
256 22566.3 22461.5 23504.5 407314 394852 417502 245443 244606 255173 61.0898 61.0898 63.0859 2.69403e+07 2.69403e+07 2.69403e+07
512 22705.8 21492 23139 388068 375891 397982 248485 234153 252399 62.7617 62.7617 62.7656 2.85377e+07 2.85377e+07 2.85377e+07
1024 22276.9 20989.8 22756.7 398051 389261 405795 243341 227203 246794 64.5938 64.5938 64.5938 3.17403e+07 3.17403e+07 3.17403e+07
2048 21690.4 20255.5 24358.8 386438 380505 448405 235982 219102 262777 71.0625 71.0625 71.0781 3.81493e+07 3.81493e+07 3.81493e+07
4096 21180.8 20429.2 23057.1 403611 401457 457668 228332 220205 247585 85.0117 85.0117 85.0117 5.09691e+07 5.09691e+07 5.09691e+07
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
