#!/usr/bin/env bash
# test/bench_train_tmpdir.sh BIN_DIR SOURCE_DIR: `ppo-bench train` runs in a directory under $TMPDIR
# and removes it whatever the run's outcome (a failed run returned before the removal and left
# $TMPDIR/ppo-bench-train-XXXXXX/run behind). $TMPDIR here is fresh, its name holds a quote and a
# space (the old removal went through a shell), and it must be empty after each run.
# Each run is CartPole with 256-step iterations: a few seconds in all.
set -uo pipefail
bench=$1/ppo-bench
cd "$2"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
export TMPDIR="$root/it's tmp"
mkdir "$TMPDIR"
fail=0
small=(train --config configs/cartpole.ini --set ppo.n_steps=256)
check() {  # check 'what' expected_status [env VAR=VALUE...] ppo-bench ARGS...
  local what=$1 want=$2
  shift 2
  local rc left
  "$@" > /dev/null 2> "$root/stderr"
  rc=$?
  left=$(ls -A "$TMPDIR")
  if [ $rc -ne "$want" ]; then
    echo "FAIL $what: exit status $rc, not $want"
    sed 's/^/    /' "$root/stderr"
    fail=1
  elif [ -n "$left" ]; then
    echo "FAIL $what: left in \$TMPDIR: $left"
    fail=1
    rm -rf "${TMPDIR:?}"/*
  else
    echo "ok   $what"
  fi
}
check "a finished run" 0 "$bench" "${small[@]}" --iterations 1 --json "$root/result.json"
if ! grep -q '"iterations": 1' "$root/result.json" || ls -A "$root" | grep -q '\.tmp\.'; then
  echo "FAIL --json: $root/result.json is not the run's, or a temporary file stayed: $(ls -A "$root")"
  fail=1
fi
# PPO_TEST_FAIL_RANK (ppo/train_run.c) fails the run after its second iteration: exit 1, files written.
check "a run failing at run time" 1 env PPO_TEST_FAIL_RANK=0 "$bench" "${small[@]}" --iterations 3
# PPO_TEST_STOP_BEFORE_EVAL asks for a stop before iteration 1's [eval] pass, as a signal would: a
# part of a run is no result (it reported one, exit 0, and the --json file with it).
check "a run stopped by a signal" 1 env PPO_TEST_STOP_BEFORE_EVAL=1 "$bench" train --config configs/ar1.ini \
  --set eval.every=1 --set run.threads=1 --iterations 3 --json "$root/stopped.json"
if [ -e "$root/stopped.json" ] || ! grep -q "no result (--json not written)" "$root/stderr"; then
  echo "FAIL a stopped run wrote its --json file or did not say why not: $(cat "$root/stderr")"
  fail=1
fi
check "a run refused at start (memory limit)" 2 "$bench" "${small[@]}" --set run.memory_limit=1
check "--json into a missing directory (refused before the run)" 2 "$bench" "${small[@]}" --json "$root/none/r.json"
grep -qF -- "--json '$root/none/r.json'" "$root/stderr" || { echo "FAIL the --json refusal names no path"; fail=1; }
exit $fail
