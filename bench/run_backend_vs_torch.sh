#!/bin/sh
# bench/run_backend_vs_torch.sh: ppo-bench backend against bench/torch_reference.py, side by side.
#
#   bench/run_backend_vs_torch.sh BUILD_DIR PYTHON [ROUNDS]
#       e.g. bench/run_backend_vs_torch.sh build /tmp/torchvenv/bin/python 3
#
# Alternates the two programs ROUNDS times (default 3) under each OpenMP waiting mode, both
# programs in the same mode: "spin" (GOMP_SPINCOUNT=10000, ppo-bench's default) and "passive"
# (OMP_WAIT_POLICY=PASSIVE, the issue's setting for PyTorch). Writes bench/results/STAMP-backend-cpu.txt
# (everything printed), STAMP-MODE.jsonl (JSON lines of both programs) and prints the medians and
# the ratios against the issue's targets (bench/backend_vs_torch_summary.py, which also reruns on
# the .jsonl files of an earlier run).
set -eu
build=$1
python=$2
rounds=${3:-3}
here=$(cd "$(dirname "$0")" && pwd)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
out=$here/results/$stamp-backend-cpu.txt
mkdir -p "$here/results"
{
  echo "# ppo-bench backend vs bench/torch_reference.py, $rounds alternating rounds per OpenMP mode, $(date -u)"
  echo "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores," \
    "$(grep -o 'amx_bf16\|avx512_bf16\|avx512f ' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  echo "# software: gcc $(gcc -dumpversion), torch $($python -c 'import torch; print(torch.__version__)')"
  echo "# commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    "$(git -C "$here" status --porcelain -- ../nn | grep -q . && echo '+ uncommitted nn/ changes')"
  for mode in spin passive; do
    for r in $(seq "$rounds"); do
      echo "## mode $mode, round $r"
      if [ $mode = spin ]; then
        env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=10000 "$build/bin/ppo-bench" backend --repeats 7 \
          --json "$here/results/$stamp-$mode.jsonl"
      else
        env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=PASSIVE "$build/bin/ppo-bench" backend --repeats 7 \
          --json "$here/results/$stamp-$mode.jsonl"
      fi
      "$python" "$here/torch_reference.py" --omp $mode --repeats 7 --json "$here/results/$stamp-$mode.jsonl"
    done
  done
  "$python" "$here/backend_vs_torch_summary.py" "$here/results/$stamp"
} 2>&1 | tee "$out"
