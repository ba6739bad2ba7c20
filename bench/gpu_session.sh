#!/usr/bin/env bash
# bench/gpu_session.sh: everything a GPU session runs, from the archive bench/gpu_pack.sh made.
#
#   bash bench/gpu_session.sh first   # the default: fits one device call. Runs, most important
#                                     # first, the CUDA suites, a headline training run, memcheck on
#                                     # the op suite, the backend and PyTorch tables, the other
#                                     # precisions, SB3, racecheck and the per-op profile; each step
#                                     # bounded, all within PPO_GPU_BUDGET seconds (default 480);
#                                     # a summary table last
#   bash bench/gpu_session.sh tests   # the CUDA suites and test_train's CUDA cases
#   bash bench/gpu_session.sh memcheck | racecheck   # the CUDA suites (and a short ppo-train) under
#                                     # compute-sanitizer
#   bash bench/gpu_session.sh bench   # ppo-bench backend + torch on the same GPU, ppo-bench train on
#                                     # configs/seed.ini, SB3 on the same GPU when it is importable
#   bash bench/gpu_session.sh kernels # per-op table (PPO_PROFILE=1) and per-kernel table (Nsight
#                                     # Compute, the kernel's duration) of a short headline run
#   bash bench/gpu_session.sh all     # every stage but `first`: more than one 10-minute call
#
# Run from the repository root with .gpu/ppo-gpu.tar.xz present (carry .gpu). A session has 15
# minutes of device time in all, the machine's start included, and the device tool brings back at
# most 8 files from $OUT. So with $OUT set every stage writes its raw output to .gpu/results/STAMP/
# and packs that folder into $OUT/gpu-STAMP.tar.xz, beside a copy of the summary; unpack it into
# bench/results/ here. Without $OUT the files go straight to bench/results/. Each file name carries
# the UTC date; STAMP-gpu-session.txt records the device, driver and the commit the archive was
# built from. SB3's wheels, when gpu_pack.sh fetched them into .gpu/whl, are installed into
# /tmp/site for the SB3 comparison.
set -uo pipefail
stage=${1:-first}
root=$(pwd)
stamp=$(date -u +%Y%m%dT%H%M%SZ)
if [ -n "${OUT:-}" ]; then out=$root/.gpu/results/$stamp; else out=$root/bench/results; fi
mkdir -p "$out"
summary=$out/$stamp-gpu-summary.txt

pack_results() {
  [ -n "${OUT:-}" ] || return 0
  [ -f "$summary" ] && cp "$summary" "$OUT/"
  tar -C "$root/.gpu/results" -cJf "$OUT/gpu-$stamp.tar.xz" "$stamp"
}
trap pack_results EXIT

tar -xJf .gpu/ppo-gpu.tar.xz -C "$root"  # build-gpu/bin and .gpu/run/
run=$root/.gpu/run
src=$(cat "$run/source_dir")
# The suites read fixtures from the source path compiled into them: point it here.
if [ "$src" != "$root" ]; then
  mkdir -p "$(dirname "$src")" && ln -sfn "$root" "$src"
fi
cuda_libs=$(python3 - <<'EOF' 2>/dev/null
import glob, os
import nvidia
roots = [os.path.join(p) for p in nvidia.__path__]
print(":".join(sorted({os.path.dirname(f) for r in roots for f in glob.glob(r + "/*/lib/*.so*")})))
EOF
)
export LD_LIBRARY_PATH="$run/lib:/usr/local/cuda/lib64:${cuda_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
bin=$root/build-gpu/bin
export PATH="$PATH:/usr/local/cuda/bin"  # compute-sanitizer
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
if ls .gpu/whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .gpu/whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi

{
  echo "date      $stamp"
  echo "commit    $(tr '\n' ' ' <"$run/commit")"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
  echo "cpu       $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) x $(nproc)"
  ldd "$bin/ppo-train" | grep -E "not found" || true
  ldd "$bin/libppo_cuda.so" | grep -E "not found|cublas|cudart|nccl" || true  # the CUDA backend's module
  # Criterion runs up to 4 test processes at once: in the exclusive-process mode only one gets the GPU.
  nvidia-smi -q | grep -i -m1 "compute mode"
} 2>&1 | tee "$out/$stamp-gpu-session.txt"
# A library the CUDA module cannot find (libnccl.so.2 comes from the image's Python nvidia packages)
# would make every CUDA suite skip: stop here with the reason instead of spending the device time.
if ldd "$bin/libppo_cuda.so" | grep -q "not found"; then
  echo "libppo_cuda.so has unresolved libraries (above): fix LD_LIBRARY_PATH first" | tee -a "$out/$stamp-gpu-session.txt"
  exit 2
fi
# The module resolves but the backend may still not open (a driver older than the CUDA the module
# was built with, here CUDA 13: driver 580 or later; no visible device): every CUDA suite would then
# skip and `auto` would run on the CPU. A plan on the CUDA backend says why in a second.
{
  nvidia-smi | grep -m1 "CUDA Version" || true
  echo "module built with: $(cat "$run/cuda_version" 2>/dev/null || echo unknown)"
} 2>&1 | tee -a "$out/$stamp-gpu-session.txt"
if ! "$bin/ppo-train" configs/cartpole.ini --set run.device=cuda --plan --quiet >"$out/$stamp-gpu-probe.txt" 2>&1; then
  { echo "the CUDA backend does not open; stopping before the suites:"; cat "$out/$stamp-gpu-probe.txt"; } |
    tee -a "$out/$stamp-gpu-session.txt"
  exit 2
fi

run_tests() {
  local log=$out/$stamp-gpu-tests.txt
  for t in test_rng_cuda test_cuda_core test_cuda_ops; do
    [ -x "$bin/$t" ] && "$bin/$t" --verbose --jobs 4 2>&1 | tee -a "$log"
  done
  "$bin/test_train" --verbose --jobs 4 --filter 'train/*cuda*' 2>&1 | tee -a "$log"
  "$bin/test_train" --verbose --jobs 4 --filter 'train/the_update_makes_no_host_wait*' 2>&1 | tee -a "$log"
}

# compute-sanitizer follows Criterion's forked test processes with --target-processes all. Each run
# is bounded (a timeout shows as status 124) so that a stage fits one 10-minute device call:
# memcheck (three runs of at most 3 minutes), racecheck (two of at most 4).
run_sanitizer() {
  local tool=$1 limit=$2 san=$out/$stamp-gpu-$1.txt
  for t in test_cuda_core test_cuda_ops; do
    [ -x "$bin/$t" ] && timeout "$limit" compute-sanitizer --tool "$tool" --target-processes all --error-exitcode 9 \
      "$bin/$t" --jobs 1 2>&1 | tail -n 40 | sed "s|^|[$tool $t] |" | tee -a "$san"
  done
  if [ "$tool" = memcheck ]; then
    timeout "$limit" compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/ppo-train" configs/cartpole.ini \
      --set run.device=cuda --set run.total_timesteps=4096 --run-dir /tmp/san_run --quiet 2>&1 | tail -n 40 |
      sed "s|^|[memcheck ppo-train] |" | tee -a "$san"
  fi
}

run_bench() {
  local j=$out/$stamp-gpu-backend.jsonl
  # The JSON docs/BENCHMARKS.md's GPU part is made from (make_benchmarks_md.py --gpu), CPU and CUDA rows.
  "$bin/ppo-bench" all --quick --only backend,train --json "$out/$stamp-gpu-all.json" 2>&1 |
    tee "$out/$stamp-gpu-all.txt"
  "$bin/ppo-bench" backend --backend cuda --json "$j" 2>&1 | tee "$out/$stamp-gpu-backend.txt"
  python3 bench/torch_reference.py --device cuda --ours "$j" --json "$out/$stamp-gpu-torch.jsonl" 2>&1 |
    tee "$out/$stamp-gpu-torch.txt"
  for p in fp16 bf16 fp32; do
    "$bin/ppo-bench" train --config configs/seed.ini --set run.device=cuda --set run.precision=$p --iterations 2 \
      --json "$out/$stamp-gpu-train-seed-$p.json" 2>&1 | tee "$out/$stamp-gpu-train-seed-$p.txt"
  done
  if python3 -c "import stable_baselines3" 2>/dev/null; then
    python3 bench/sb3_compare.py --config configs/seed.ini --device cuda --timesteps 262144 \
      --engine "$bin/ppo-bench" --json "$out/$stamp-gpu-sb3-seed.json" 2>&1 | tee "$out/$stamp-gpu-sb3-seed.txt"
  else
    echo "stable_baselines3 is not importable: carry its wheels (device README) for the SB3 row" |
      tee "$out/$stamp-gpu-sb3-seed.txt"
  fi
}

# One iteration of the headline network with a short rollout (every kernel of the rollout step and
# of the minibatch update appears), each kernel's duration measured by ncu: the table sums them per
# kernel name (calls, total, mean).
run_kernels() {
  local csv=$out/$stamp-gpu-kernels.csv
  # The seam's own per-op table (each op waited for; no ncu needed), same run.
  PPO_PROFILE=1 "$bin/ppo-bench" train --config configs/seed.ini --set run.device=cuda --set ppo.n_steps=64 \
    --iterations 1 2>&1 | tee "$out/$stamp-gpu-ops-profile.txt"
  ncu --clock-control none --metrics gpu__time_duration.sum --launch-count 6000 --csv --print-units base \
    "$bin/ppo-bench" train --config configs/seed.ini --set run.device=cuda --set ppo.n_steps=64 --iterations 1 \
    >"$csv" 2>"$out/$stamp-gpu-kernels.log"
  python3 - "$csv" <<'PY' | tee "$out/$stamp-gpu-kernels.txt"
import csv, sys, collections
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"'))
        if r.get("Metric Name") == "gpu__time_duration.sum"]
agg = collections.defaultdict(lambda: [0, 0.0])
for r in rows:
    a = agg[r["Kernel Name"][:90]]
    a[0] += 1
    a[1] += float(r["Metric Value"].replace(",", ""))
total = sum(v[1] for v in agg.values()) or 1.0
print("%-90s %8s %12s %10s %6s" % ("kernel", "calls", "total us", "mean us", "%"))
for name, (n, ns) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print("%-90s %8d %12.1f %10.2f %6.1f" % (name, n, ns / 1e3, ns / 1e3 / n, 100 * ns / total))
PY
}

# The first stage: one bounded step after another until PPO_GPU_BUDGET seconds have passed.
# step NAME LIMIT PATTERN COMMAND: runs COMMAND (a bash command line) for at most LIMIT seconds, or
# what is left of the budget, with its output in STAMP-gpu-NAME.txt, and adds a summary row: the
# status (ok, rc N, timeout, or skipped when under 20 s are left), the output lines matching the
# extended regular expression PATTERN and, when the step failed, its last two lines.
export bin out stamp
step() {
  local name=$1 limit=$2 pattern=$3 cmd=$4 left=$((deadline - SECONDS)) t0=$SECONDS rc status
  if [ "$left" -lt 20 ]; then
    printf '%-16s %-8s %5s\n' "$name" skipped - | tee -a "$summary"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "== $name (at most $limit s): $cmd"
  timeout -k 10 "$limit" bash -c "$cmd" >"$out/$stamp-gpu-$name.txt" 2>&1
  rc=$?
  case $rc in 0) status=ok ;; 124 | 137) status=timeout ;; *) status="rc $rc" ;; esac
  local file=$out/$stamp-gpu-$name.txt shown
  shown=$(grep -E -- "$pattern" "$file")
  [ $rc -ne 0 ] && shown="$shown | last: $(grep -v '^[[:space:]]*$' "$file" | tail -n 2)"
  printf '%-16s %-8s %5d  %s\n' "$name" "$status" $((SECONDS - t0)) "$(echo "$shown" | tr -s ' \n' ' ' | cut -c1-400)" |
    tee -a "$summary"
}

# The commands are single-quoted on purpose: the step's own bash expands $bin, $out and $stamp.
# shellcheck disable=SC2016
run_first() {
  deadline=$((SECONDS + ${PPO_GPU_BUDGET:-480}))
  local suite='Synthesis|Skipped'
  local seed="\$bin/ppo-bench train --config configs/seed.ini --set run.device=cuda"
  local train="$seed --iterations 2"
  local rate='end to end|^  rollout|^  update'
  printf '%-16s %-8s %5s  %s\n' step status s 'matching output' >"$summary"
  step rng_cuda 60 "$suite" '$bin/test_rng_cuda --verbose --jobs 4'
  step cuda_core 90 "$suite" '$bin/test_cuda_core --verbose --jobs 4'
  step cuda_ops 120 "$suite" '$bin/test_cuda_ops --verbose --jobs 4'
  step train_cuda 120 "$suite" "\$bin/test_train --verbose --jobs 4 --filter 'train/*cuda*' &&
    \$bin/test_train --verbose --jobs 4 --filter 'train/the_update_makes_no_host_wait*'"
  step seed_fp16 120 "$rate" "$train --set run.precision=fp16 --json \$out/\$stamp-gpu-train-seed-fp16.json"
  step memcheck_ops 150 'ERROR SUMMARY|Synthesis' 'compute-sanitizer --tool memcheck --target-processes all \
    --error-exitcode 9 $bin/test_cuda_ops --jobs 1'
  step backend 90 'machine_best|update_step|rollout' \
    '$bin/ppo-bench backend --backend cuda --json $out/$stamp-gpu-backend.jsonl'
  step torch 90 'ratio|samples/s' 'python3 bench/torch_reference.py --device cuda \
    --ours $out/$stamp-gpu-backend.jsonl --json $out/$stamp-gpu-torch.jsonl'
  step seed_bf16 90 "$rate" "$train --set run.precision=bf16 --json \$out/\$stamp-gpu-train-seed-bf16.json"
  step seed_fp32 90 "$rate" "$train --set run.precision=fp32 --json \$out/\$stamp-gpu-train-seed-fp32.json"
  step sb3 150 'ratio|sps|steps/s' 'python3 -c "import stable_baselines3" && python3 bench/sb3_compare.py \
    --config configs/seed.ini --device cuda --timesteps 262144 --engine $bin/ppo-bench \
    --json $out/$stamp-gpu-sb3-seed.json'
  step memcheck_train 60 'ERROR SUMMARY' 'compute-sanitizer --tool memcheck --error-exitcode 9 \
    $bin/ppo-train configs/cartpole.ini --set run.device=cuda --set run.total_timesteps=4096 \
    --run-dir /tmp/san_run --quiet'
  step racecheck_core 120 'ERROR SUMMARY|Synthesis' 'compute-sanitizer --tool racecheck \
    --target-processes all --error-exitcode 9 $bin/test_cuda_core --jobs 1'
  step profile 60 'update|gemm' "PPO_PROFILE=1 $seed --set ppo.n_steps=64 --iterations 1"
  echo
  cat "$summary"
}

case $stage in
  first) run_first ;;
  tests) run_tests ;;
  memcheck) run_sanitizer memcheck 180 ;;
  racecheck) run_sanitizer racecheck 240 ;;
  bench) run_bench ;;
  kernels) run_kernels ;;
  all) run_tests; run_sanitizer memcheck 180; run_sanitizer racecheck 240; run_bench; run_kernels ;;
  *) echo "usage: bash bench/gpu_session.sh first|tests|memcheck|racecheck|bench|kernels|all" >&2; exit 2 ;;
esac
