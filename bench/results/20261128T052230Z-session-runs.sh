#!/bin/bash
# This session's side-by-side runs on the AMD EPYC (Zen 4) machine.
set -x
cd /work/main
S=$(date -u +%Y%m%dT%H%M%SZ)
P=/tmp/torchvenv/bin/python
R=bench/results
bash bench/run_backend_vs_torch.sh build $P 2
SYN="--set env.type=synthetic --set env.synthetic_model=ar1 --set run.device=cpu"
SMALL="--set policy.pi_layers=64,64 --set policy.vf_layers=64,64"
$P bench/sb3_compare.py --config configs/seed.ini --timesteps 262144 --threads 1,2 $SYN $SMALL --set run.precision=fp32 --json $R/$S-sb3-synthetic-small-fp32.json
$P bench/sb3_compare.py --config configs/seed.ini --timesteps 262144 --threads 1,2 $SYN $SMALL --set run.precision=bf16 --sb3-from $R/$S-sb3-synthetic-small-fp32.json --json $R/$S-sb3-synthetic-small-bf16.json
$P bench/sb3_compare.py --config configs/cartpole.ini --timesteps 50000 --threads 1 --json $R/$S-sb3-cartpole.json
$P bench/sb3_compare.py --config configs/seed.ini --timesteps 131072 --threads 2 $SYN --set run.precision=fp32 --json $R/$S-sb3-seed-headline-fp32.json
$P bench/sb3_compare.py --config configs/seed.ini --timesteps 131072 --threads 2 $SYN --set run.precision=bf16 --sb3-from $R/$S-sb3-seed-headline-fp32.json --json $R/$S-sb3-seed-headline-bf16.json
echo DONE
