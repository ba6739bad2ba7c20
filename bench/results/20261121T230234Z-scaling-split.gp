# 20261121T230234Z-scaling-split.gp: redraw 20261121T230234Z-scaling-split.png with `gnuplot 20261121T230234Z-scaling-split.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261121T230234Z-scaling-split.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 9.6965 9.54628 10.1464 0.00679714 0.00667009 0.0243295 83.6365 81.8576 84.2166
16 7.41993 7.33076 7.58676 0.00778094 0.00737449 0.00939189 89.1496 88.6398 89.4621
32 6.52104 6.33209 6.7498 0.0114122 0.0109331 0.0116416 91.479 90.7064 92.0335
64 5.92803 5.67886 6.0078 0.0197375 0.019547 0.0198976 92.5106 92.4855 92.9868
128 5.36126 5.31634 5.40581 0.0209417 0.0203098 0.0213461 93.9494 93.8425 94.069
256 5.23343 5.15604 5.32235 0.0212091 0.0200253 0.0246216 94.2708 94.1078 94.3375
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
