# 20261121T223635Z-scaling-envs.gp: redraw 20261121T223635Z-scaling-envs.png with `gnuplot 20261121T223635Z-scaling-envs.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261121T223635Z-scaling-envs.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 23766.8 23341.3 24188.8 238249 235417 245319 282763 277479 288667 50.3789 50.375 50.3789 1.86414e+07 1.86414e+07 1.86414e+07
16 25238.3 25010.3 25833.3 323583 312387 339155 284241 282966 290044 52.8672 52.8633 59.8008 2.09084e+07 2.09084e+07 2.09084e+07
32 25315.4 24977.4 25437.4 385703 339331 403276 276897 275313 277503 57.8555 57.8438 57.8633 2.54433e+07 2.54433e+07 2.54433e+07
64 25436.5 24805.7 25673.2 448068 429873 452037 273335 266665 275459 66.543 66.543 72.7969 3.45131e+07 3.45131e+07 3.45131e+07
128 25640.6 25339.2 25971.4 468061 459571 482301 273425 270603 276485 82.8906 82.8906 86.6406 5.2653e+07 5.2653e+07 5.2653e+07
256 25162.4 24799.3 25425.9 486341 474871 491861 267136 262944 270021 117.332 117.332 122.957 8.89326e+07 8.89326e+07 8.89326e+07
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
