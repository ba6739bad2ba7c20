#!/usr/bin/env bash
# bench/oversubscription.sh: end-to-end training speed on a CPU that another process keeps busy.
#
# One iteration of configs/seed.ini with [64,64] networks in fp32 (synthetic AR(1) market, 131,072
# steps), through `ppo-bench train`, for each OpenMP setting below, first with the machine idle,
# then beside one busy-looping shell at the same priority. libgomp's threads spin between parallel
# regions; when one of them shares its core with another process, every region's barrier waits for
# the scheduler to run it again. Output: one line per run; bench/results/STAMP-oversubscription.txt
# keeps the raw lines.
#
# Usage: bash bench/oversubscription.sh [BUILD_BIN_DIR]   (default build/bin; run from the repository root)
set -euo pipefail
bin=${1:-build/bin}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=bench/results/$stamp-oversubscription.txt
# shellcheck disable=SC2054  # the commas are inside --set values, not between elements
run=("$bin/ppo-bench" train --config configs/seed.ini --set env.type=synthetic --set env.synthetic_model=ar1
     --set run.device=cpu --set run.precision=fp32 --set policy.pi_layers=64,64 --set policy.vf_layers=64,64
     --set run.total_timesteps=131072 --iterations 1)
settings=("default:" "GOMP_SPINCOUNT=10000:" "OMP_WAIT_POLICY=PASSIVE:" "default:--set run.threads=1")
{
  echo "# bench/oversubscription.sh, $(date -u +%FT%TZ), commit $(git rev-parse --short=12 HEAD), $(nproc) CPUs"
  echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
  echo "# command: ${run[*]} [extra]"
  for s in "${settings[@]}"; do
    envset=${s%%:*} extra=${s#*:}
    for load in idle busy; do
      spin=
      if [ "$load" = busy ]; then
        sh -c 'while :; do :; done' &
        spin=$!
      fi
      envargs=()
      [ "$envset" != default ] && envargs=("$envset")
      # shellcheck disable=SC2086
      sps=$(env "${envargs[@]}" "${run[@]}" $extra 2>&1 | awk '/end to end/ {gsub(",", "", $4); print $4}')
      [ -n "$spin" ] && kill "$spin"
      printf '%-26s %-22s %-5s end-to-end %s steps/s\n' "$envset" "${extra:-(threads 0: all)}" "$load" "$sps"
    done
  done
} | tee "$out"
echo "wrote $out"
