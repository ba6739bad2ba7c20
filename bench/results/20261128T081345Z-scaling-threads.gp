# 20261128T081345Z-scaling-threads.gp: redraw 20261128T081345Z-scaling-threads.png with `gnuplot 20261128T081345Z-scaling-threads.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T081345Z-scaling-threads.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$d << EOD
# threads sps(median min max) rollout_sps(median min max) update_samples_per_s(median min max) peak_rss(median min max)
1 22485.5 22020 24811.6 446798 431069 484390 239877 234901 264595 75.6992 75.6836 75.9883
2 39280.6 31110.8 40781 569997 454043 596007 430720 338902 446326 77.2461 77.2461 77.2773
EOD
set logscale x 2
set xlabel 'OpenMP threads (64 envs x 128 steps, batch 1024)'
set ylabel 'steps/s (update: samples/s)'
set logscale y
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'end to end steps/s', $d using 1:5:6:7 with yerrorlines title 'rollout steps/s', $d using 1:8:9:10 with yerrorlines title 'update samples/s'
