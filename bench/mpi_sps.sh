#!/bin/bash
# bench/mpi_sps.sh: ppo-train's SPS (env steps per second) with 1 rank and with 2 ranks on this
# machine (docs/DISTRIBUTED.md, "This machine"). configs/default.ini (trading env, [64, 64]
# networks), 8 iterations without evaluation or checkpoints, the cases interleaved REPEATS times.
#
# Per run: the median, min and max over iterations 2..8 of the iteration's own SPS, the steps of
# the iteration over its time (differences of metrics.csv's time/total_timesteps and
# time/time_elapsed; time/fps is SB3's cumulative figure, which would carry the first iteration's
# start-up), and the wall time of the 8 iterations.
#
# usage: bash bench/mpi_sps.sh [BUILD_DIR (build)] [REPEATS (3)] > bench/results/STAMP-mpi-sps.txt
# Needs a build with MPI and mpirun on the PATH; runs as root with OMPI_ALLOW_RUN_AS_ROOT.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
repeats=${2:-3}
bin=$build/bin/ppo-train
cfg=configs/default.ini
tmp=$(mktemp -d /tmp/ppo_mpi_sps.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
common=(--set eval.every=0 --set run.checkpoint_every=0 --iterations 8 --quiet)
rank1=(--set run.threads=1)  # each rank on one core
mpi=(mpirun -np 2 --oversubscribe --mca btl_vader_single_copy_mechanism none -x OMP_NUM_THREADS=1)

# The per-iteration SPS of a run directory's metrics.csv (iterations 2..8), in POSIX awk and sort.
summary() {
  local csv=$1/metrics.csv
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { steps = $col["time/total_timesteps"]; t = $col["time/time_elapsed"]
      if (NR > 2) print (steps - prev_steps) / (t - prev_t)
      prev_steps = steps; prev_t = t }' "$csv" | sort -g |
    awk -v last="$(tail -1 "$csv")" -v head="$(head -1 "$csv")" '{ v[++n] = $1 }
      END { m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
        k = split(head, h, ","); split(last, l, ",")
        for (i = 1; i <= k; i++) { if (h[i] == "time/total_timesteps") s = l[i]; if (h[i] == "time/time_elapsed") e = l[i] }
        printf "median_sps %.0f min_sps %.0f max_sps %.0f over %d iterations | steps %d elapsed_s %.3f", m, v[1], v[n], n, s, e }'
}

echo "# ppo-train SPS on $cfg: 1 rank vs 2 ranks, $repeats repeats interleaved, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "# commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench/results' || echo ' + uncommitted changes')," \
     "$(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(mpirun --version | head -1)"
echo "# per run: the median / min / max of each iteration's steps / seconds over iterations 2..8; load1 and CPU"
echo "# pressure (avg10) before the run"
for rep in $(seq 1 "$repeats"); do
  for case in t1 t2 r2x16 r2x32 r2x16y r2x32y; do
    d=$tmp/$case.$rep
    case $case in
      t1) cmd=(env OMP_NUM_THREADS=1 "$bin" "$cfg" "${common[@]}" --set run.threads=1);;
      t2) cmd=(env OMP_NUM_THREADS=2 "$bin" "$cfg" "${common[@]}" --set run.threads=2);;
      r2x16) cmd=("${mpi[@]}" "$bin" "$cfg" "${common[@]}" "${rank1[@]}" --set env.n_envs=16 --set ppo.batch_size=128);;
      r2x32) cmd=("${mpi[@]}" "$bin" "$cfg" "${common[@]}" "${rank1[@]}");;
      r2x16y) cmd=("${mpi[@]}" --mca mpi_yield_when_idle 1 "$bin" "$cfg" "${common[@]}" "${rank1[@]}" --set env.n_envs=16
                  --set ppo.batch_size=128);;
      r2x32y) cmd=("${mpi[@]}" --mca mpi_yield_when_idle 1 "$bin" "$cfg" "${common[@]}" "${rank1[@]}");;
    esac
    load="load1 $(cut -d' ' -f1 /proc/loadavg) psi10 $(head -1 /proc/pressure/cpu 2>/dev/null | cut -d' ' -f2 | cut -d= -f2)"
    "${cmd[@]}" --run-dir "$d" > "$tmp/out" 2>&1 || { echo "$case rep $rep FAILED: ${cmd[*]}"; cat "$tmp/out"; exit 1; }
    echo "$case rep $rep $load | $(summary "$d") | ${cmd[*]} --run-dir RUN"
  done
done
