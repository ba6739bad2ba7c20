# 20261122T141246Z-scaling-split.gp: redraw 20261122T141246Z-scaling-split.png with `gnuplot 20261122T141246Z-scaling-split.gp` in this directory (written by ppo-bench all).
set terminal pngcairo size 1100,800 noenhanced
set output '.20261122T141246Z-scaling-split.png.tmp'
set grid
set key outside right top
$d << EOD
# n_envs rollout_share(median min max) gae_share(median min max) update_share(median min max)
8 9.03053 8.93428 9.47168 0.00776768 0.0074758 0.00936627 82.8496 82.4179 83.2611
16 7.15928 7.09986 7.22019 0.00862611 0.00805969 0.00924117 88.4543 88.2302 88.561
32 6.0825 6.04265 6.24158 0.0112097 0.0104377 0.0118883 91.4504 91.1131 91.6702
64 5.47713 5.43578 5.5386 0.0184823 0.0181033 0.019104 93.1645 92.9853 93.3526
128 5.44032 5.39531 5.59024 0.0209907 0.0206427 0.0235075 93.7148 93.5444 93.7736
256 5.41632 5.36537 5.50954 0.0207142 0.0192942 0.0216958 94.0353 93.9261 94.0782
EOD
set logscale x 2
set xlabel 'n_envs (n_steps 128, batch 256, 1 thread)'
set ylabel '% of the iteration time'
set yrange [0:100]
plot $d using 1:2:3:4 with yerrorlines lw 2 title 'rollout', $d using 1:5:6:7 with yerrorlines title 'GAE', $d using 1:8:9:10 with yerrorlines lw 2 title 'update'
