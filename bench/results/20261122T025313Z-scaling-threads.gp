# 20261122T025313Z-scaling-threads.gp: redraw 20261122T025313Z-scaling-threads.png with `gnuplot 20261122T025313Z-scaling-threads.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T025313Z-scaling-threads.png.tmp'
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 33825.9 31745.5 35465.3 580177 548717 605115 363322 340168 381193 73.8281 73.8281 73.957
2 39831.7 38736.1 42277.7 522770 509484 535195 437483 424648 467195 73.543 73.5039 74.1797
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
