# 20261122T071305Z-scaling-envs.gp: redraw 20261122T071305Z-scaling-envs.png with `gnuplot 20261122T071305Z-scaling-envs.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T071305Z-scaling-envs.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 32221.5 30879.5 32698.6 355421 339999 362709 385029 380000 390372 51.6602 51.4141 51.7422 1.91886e+07 1.91886e+07 1.91886e+07
16 33492.1 32879.1 33939.3 462099 454932 475858 375456 367050 381172 55.7109 55.5703 55.7109 2.14721e+07 2.14721e+07 2.14721e+07
32 33072.7 32269.8 34325.3 556211 528593 567981 358287 350998 373060 59.7461 59.6797 59.7617 2.60402e+07 2.60402e+07 2.60402e+07
64 31152 30175.2 32937.8 607605 542921 618224 331955 323093 351313 68.1602 68.0391 75.4219 3.51763e+07 3.51763e+07 3.51763e+07
128 33027 32275.8 34115.4 648021 612980 664231 350265 343235 361624 85.1914 85.1875 86.7109 5.34487e+07 5.34487e+07 5.34487e+07
256 32997.2 31980.9 33334.2 603755 596390 614554 350143 338897 353980 119.52 119.508 119.77 8.99936e+07 8.99936e+07 8.99936e+07
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
