# 20261128T104108Z-scaling-threads.gp: redraw 20261128T104108Z-scaling-threads.png with `gnuplot 20261128T104108Z-scaling-threads.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T104108Z-scaling-threads.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 25253.4 24756.9 26077.4 495167 473555 501215 269692 263117 277963 73.9961 73.9961 74.3125
2 43568.4 42911.7 44901.6 649637 625796 660596 475152 468772 490172 75.2656 75.2656 75.2656
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
