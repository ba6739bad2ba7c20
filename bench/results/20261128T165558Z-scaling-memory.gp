# 20261128T165558Z-scaling-memory.gp: redraw 20261128T165558Z-scaling-memory.png with `gnuplot 20261128T165558Z-scaling-memory.gp` in this directory (written by ppo-bench all, which sets out).
if (!exists('out')) out = '20261128T165558Z-scaling-memory.png'
set terminal pngcairo size 1100,800 noenhanced
set output out
set grid
set key outside right top
$s0 << EOD
# parameters bytes network
74884 299776 64-64
397828 1591552 256-256
1.0578e+06 4231424 512-512
3.16416e+06 12656896 1024-1024
7.36973e+06 29479168 2048-1024-512
2.52252e+07 100901120 4096-2048-1024
EOD
$s1 << EOD
# parameters bytes network
74884 299776 64-64
397828 1591552 256-256
1.0578e+06 4231424 512-512
3.16416e+06 12656896 1024-1024
7.36973e+06 29479168 2048-1024-512
2.52252e+07 100901120 4096-2048-1024
EOD
$s2 << EOD
# parameters bytes network
74884 299776 64-64
397828 1591552 256-256
1.0578e+06 4231424 512-512
3.16416e+06 12656896 1024-1024
7.36973e+06 29479168 2048-1024-512
2.52252e+07 100901120 4096-2048-1024
EOD
$s3 << EOD
# parameters bytes network
74884 299776 64-64
397828 1591552 256-256
1.0578e+06 4231424 512-512
3.16416e+06 12656896 1024-1024
7.36973e+06 29479168 2048-1024-512
2.52252e+07 100901120 4096-2048-1024
EOD
$s4 << EOD
# parameters bytes network
74884 283008 64-64
397828 1328256 256-256
1.0578e+06 3180672 512-512
3.16416e+06 8458368 1024-1024
7.36973e+06 18999424 2048-1024-512
2.52252e+07 58970240 4096-2048-1024
EOD
$s5 << EOD
# parameters bytes network
74884 1131008 64-64
397828 2900480 256-256
1.0578e+06 5259776 512-512
3.16416e+06 9978368 1024-1024
7.36973e+06 17842688 2048-1024-512
2.52252e+07 35144192 4096-2048-1024
EOD
$s6 << EOD
# parameters bytes network
74884 1498112 64-64
397828 3190784 256-256
1.0578e+06 6365184 512-512
3.16416e+06 18956288 1024-1024
7.36973e+06 42082304 2048-1024-512
2.52252e+07 142884864 4096-2048-1024
EOD
$s7 << EOD
# parameters bytes network
74884 9346624 64-64
397828 9346624 256-256
1.0578e+06 9346624 512-512
3.16416e+06 9346624 1024-1024
7.36973e+06 9346624 2048-1024-512
2.52252e+07 9346624 4096-2048-1024
EOD
$s8 << EOD
# parameters bytes network
74884 32 64-64
397828 32 256-256
1.0578e+06 32 512-512
3.16416e+06 32 1024-1024
7.36973e+06 32 2048-1024-512
2.52252e+07 32 4096-2048-1024
EOD
$s9 << EOD
# parameters bytes network
74884 899360 64-64
397828 4774688 256-256
1.0578e+06 12694304 512-512
3.16416e+06 37970720 1024-1024
7.36973e+06 88437536 2048-1024-512
2.52252e+07 302703392 4096-2048-1024
EOD
$s10 << EOD
# parameters bytes network
74884 19520 64-64
397828 19520 256-256
1.0578e+06 19520 512-512
3.16416e+06 19520 1024-1024
7.36973e+06 19520 2048-1024-512
2.52252e+07 19520 4096-2048-1024
EOD
$s11 << EOD
# parameters bytes network
74884 14076648 64-64
397828 14076648 256-256
1.0578e+06 14076648 512-512
3.16416e+06 14076648 1024-1024
7.36973e+06 14076648 2048-1024-512
2.52252e+07 14076648 4096-2048-1024
EOD
$s12 << EOD
# parameters bytes network
74884 302016 64-64
397828 302016 256-256
1.0578e+06 302016 512-512
3.16416e+06 302016 1024-1024
7.36973e+06 302016 2048-1024-512
2.52252e+07 302016 4096-2048-1024
EOD
$s13 << EOD
# parameters bytes network
74884 29496 64-64
397828 29496 256-256
1.0578e+06 29496 512-512
3.16416e+06 29496 1024-1024
7.36973e+06 29496 2048-1024-512
2.52252e+07 29496 4096-2048-1024
EOD
$s14 << EOD
# parameters bytes network
74884 14357248 64-64
397828 27907072 256-256
1.0578e+06 53772288 512-512
3.16416e+06 135337984 1024-1024
7.36973e+06 294625280 2048-1024-512
2.52252e+07 952653824 4096-2048-1024
EOD
$s15 << EOD
# parameters bytes network
74884 14427680 64-64
397828 14427680 256-256
1.0578e+06 14427680 512-512
3.16416e+06 14427680 1024-1024
7.36973e+06 14427680 2048-1024-512
2.52252e+07 14427680 4096-2048-1024
EOD
set logscale xy
set xlabel 'policy parameters (actor + critic; network hidden sizes at the points)'
set ylabel 'MiB'
set format y '%g'
set key outside right top
set title 'memory plan per slab, fp16 (configs/default.ini: 32 envs x 256 steps, batch 256)'
plot $s0 using 1:($2/1048576) with linespoints lw 1 dt 1 title 'policy parameters (fp32 master)', $s1 using 1:($2/1048576) with linespoints lw 1 dt 1 title 'gradients', $s2 using 1:($2/1048576) with linespoints lw 1 dt 1 title 'Adam m', $s3 using 1:($2/1048576) with linespoints lw 1 dt 1 title 'Adam v', $s4 using 1:($2/1048576) with linespoints lw 1 dt 1 title 'low-precision weights', $s5 using 1:($2/1048576) with linespoints lw 1 dt 1 title 'activations', $s6 using 1:($2/1048576) with linespoints lw 1 dt 1 title 'GEMM workspace and weight layouts', $s7 using 1:($2/1048576) with linespoints lw 1 dt 1 title 'rollout buffer', $s8 using 1:($2/1048576) with linespoints lw 1 dt 2 title 'optimiser scalars', $s9 using 1:($2/1048576) with linespoints lw 1 dt 2 title 'update snapshot (params, Adam m, v)', $s10 using 1:($2/1048576) with linespoints lw 1 dt 2 title 'envs (states, episode logs)', $s11 using 1:($2/1048576) with linespoints lw 1 dt 2 title 'market data and features (shared)', $s12 using 1:($2/1048576) with linespoints lw 1 dt 2 title 'trainer host buffers', $s13 using 1:($2/1048576) with linespoints lw 1 dt 2 title 'normalisation statistics', $s14 using 1:($2/1048576) with linespoints lw 3 dt 2 title 'total backend memory', $s15 using 1:($2/1048576) with linespoints lw 3 dt 2 title 'total host memory', $s0 using 1:($2/1048576):3 with labels offset 0,1 font ',8' notitle
