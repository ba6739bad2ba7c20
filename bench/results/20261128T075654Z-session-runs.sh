#!/bin/bash
# This session's side-by-side runs on the AMD EPYC (Zen 4) machine, after the lanes change (66960e9).
set -x
cd /work/main
S=20261128T075654Z
P=/tmp/torchvenv/bin/python
R=bench/results
SYN="--set env.type=synthetic --set env.synthetic_model=ar1 --set run.device=cpu"
SMALL="--set policy.pi_layers=64,64 --set policy.vf_layers=64,64"
$P bench/sb3_compare.py --config configs/cartpole.ini --timesteps 50000 --threads 1,2 --set run.threads=2 --json $R/$S-sb3-cartpole-threads2.json
$P bench/sb3_compare.py --config configs/cartpole.ini --timesteps 50000 --sb3-from $R/$S-sb3-cartpole-threads2.json --set run.threads=1 --json $R/$S-sb3-cartpole-threads1.json
$P bench/sb3_compare.py --config configs/seed.ini --timesteps 262144 --threads 1,2 $SYN $SMALL --set run.precision=fp32 --json $R/$S-sb3-synthetic-small-fp32.json
echo DONE
