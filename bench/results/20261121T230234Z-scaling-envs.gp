# 20261121T230234Z-scaling-envs.gp: redraw 20261121T230234Z-scaling-envs.png with `gnuplot 20261121T230234Z-scaling-envs.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261121T230234Z-scaling-envs.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max) planned_bytes(median min max)
8 25112.8 24925.8 25351.5 261450 247350 263064 300074 295973 309703 50.0977 50.0156 50.1758 1.86414e+07 1.86414e+07 1.86414e+07
16 27775 26668.6 28806.8 377708 356048 388236 311742 298099 322935 54.4609 54.418 54.6562 2.09084e+07 2.09084e+07 2.09084e+07
32 27848.5 27332.9 28945.3 427245 404944 452017 304653 301333 315835 56.9336 56.5508 57.1172 2.54433e+07 2.54433e+07 2.54433e+07
64 28688.7 28119.7 29229.3 483575 474351 514704 309312 303961 314338 66.5742 66.4414 72.4102 3.45131e+07 3.45131e+07 3.45131e+07
128 28056.6 26632.6 28384.1 525634 493454 531394 298411 283478 302466 82.9688 82.6016 95.6367 5.2653e+07 5.2653e+07 5.2653e+07
256 26313.5 25994.5 26331 498988 494477 506213 278929 275620 279796 117.746 117.23 118.695 8.89326e+07 8.89326e+07 8.89326e+07
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
