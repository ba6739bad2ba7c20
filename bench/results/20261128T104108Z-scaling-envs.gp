# 20261128T104108Z-scaling-envs.gp: redraw 20261128T104108Z-scaling-envs.png with `gnuplot 20261128T104108Z-scaling-envs.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T104108Z-scaling-envs.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 24356.6 23973.5 24674.6 352705 346237 357900 283023 278352 286065 52.4805 52.4766 52.4805 2.00888e+07 2.00888e+07 2.00888e+07
16 25580.9 23860.1 26044.5 425199 414415 429649 283140 262854 288471 56.0117 56.0117 60.1367 2.23722e+07 2.23722e+07 2.23722e+07
32 25401.6 25050 25531 472351 450179 478622 274687 270260 275801 59.793 59.793 59.793 2.69403e+07 2.69403e+07 2.69403e+07
64 26154.8 25946 26295.6 514447 512617 519348 278517 276215 280564 70.5586 70.5586 70.9883 3.60764e+07 3.60764e+07 3.60764e+07
128 25658.5 25188.8 25888.1 510877 487614 528049 271582 267202 273820 87.4648 87.4609 89.4609 5.43489e+07 5.43489e+07 5.43489e+07
256 24959.3 24143.4 25857.5 527050 435408 535191 263616 255086 272483 121.52 121.52 123.719 9.08938e+07 9.08938e+07 9.08938e+07
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
