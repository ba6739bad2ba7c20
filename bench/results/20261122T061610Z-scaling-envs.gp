# 20261122T061610Z-scaling-envs.gp: redraw 20261122T061610Z-scaling-envs.png with `gnuplot 20261122T061610Z-scaling-envs.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T061610Z-scaling-envs.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 28046 27631.8 30601.4 310779 300597 331213 334425 333212 362044 52.043 52.043 52.0469 1.91886e+07 1.91886e+07 1.91886e+07
16 31011.2 30841.3 31423.2 424528 420893 433443 346956 344367 351110 55.2617 55.2617 55.4766 2.14721e+07 2.14721e+07 2.14721e+07
32 31723.9 30784.2 32694.7 520245 509923 537515 346934 333222 357936 57.832 57.832 63.1172 2.60402e+07 2.60402e+07 2.60402e+07
64 31339.8 30902.1 32987.3 580107 572837 608756 335554 329664 352132 66.5898 66.5898 66.5898 3.51763e+07 3.51763e+07 3.51763e+07
128 30338.1 30028.8 31242.1 583825 577823 602310 321681 318524 331107 84.4609 83.9531 87.4648 5.34487e+07 5.34487e+07 5.34487e+07
256 30401.4 30149.4 31357.9 575376 557911 582861 321833 319206 332448 119.91 119.676 120.52 8.99936e+07 8.99936e+07 8.99936e+07
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
