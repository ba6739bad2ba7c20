# 20261128T055142Z-scaling-threads.gp: redraw 20261128T055142Z-scaling-threads.png with `gnuplot 20261128T055142Z-scaling-threads.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T055142Z-scaling-threads.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 25983.1 25926.4 26246.6 488209 479251 494882 277661 276669 280245 225.586 225.586 225.586
2 44062.9 42495.8 44499.3 640899 605225 668456 480624 464781 484981 226.93 226.926 226.93
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
