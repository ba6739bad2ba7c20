# 20261122T120658Z-scaling-threads.gp: redraw 20261122T120658Z-scaling-threads.png with `gnuplot 20261122T120658Z-scaling-threads.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T120658Z-scaling-threads.png.tmp'
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 31425.7 30898.7 32606.5 547747 544404 579200 338449 332332 352539 75.5586 75.5586 75.9531
2 45477.4 43812.9 46179 633758 619141 651096 501771 484594 512999 76.7969 76.7773 76.7969
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
