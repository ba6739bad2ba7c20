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
# the ratios against the issue's targets.
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
  "$python" - "$here/results/$stamp" <<'PY'
import json, statistics, sys
stamp = sys.argv[1]
for mode in ("spin", "passive"):
    runs = {}
    for line in open("%s-%s.jsonl" % (stamp, mode)):
        r = json.loads(line)
        runs.setdefault((r["backend"], r["precision"], r["name"], r["shape"]), []).append(r["value"])
    med = {k: statistics.median(v) for k, v in runs.items()}
    print("## medians, mode %s" % mode)
    for k in sorted(med):
        if k[2].startswith(("train", "rollout_inference", "machine")):
            print("  %-6s %-5s %-26s %-16s %10.1f  (runs: %s)" % (k + (med[k], " ".join("%.0f" % v for v in runs[k]))))
    t32 = {n: med[("torch", "fp32", n, s)] for n, s in (("train_step_fwd_bwd_adam", "B=1024"), ("rollout_inference", "B=32"))}
    for name, shape, prec, target in (("train_step_fwd_bwd_adam", "B=1024", "fp32", 1.4),
                                      ("train_step_fwd_bwd_adam", "B=1024", "bf16", 4.0),
                                      ("rollout_inference", "B=32", "fp32", 2.0),
                                      ("rollout_inference", "B=32", "bf16", 2.0)):
        ours = med[("cpu", prec, name, shape)]
        ratio = ours / t32[name]
        print("  ratio %-26s ours %s / torch fp32 = %.2fx (target %.1fx: %s)"
              % (name, prec, ratio, target, "met" if ratio >= target else "NOT met"))
PY
} 2>&1 | tee "$out"
