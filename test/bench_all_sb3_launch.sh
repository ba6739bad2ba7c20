#!/usr/bin/env bash
# test/bench_all_sb3_launch.sh BIN_DIR SOURCE_DIR: `ppo-bench all --only sb3` starts $PPO_SB3_PYTHON
# on bench/sb3_compare.py with its arguments intact and reports its exit status (1 when it fails):
# twice (the engine at the config's threads, then at 2 against the first's SB3 numbers) when the
# first succeeds, once when it fails.
# The interpreter, ppo-bench's --json and so the SB3 JSON path all sit in a directory whose name
# holds a quote and a space: the old launch went through a shell and split or mangled them. A fake
# interpreter records its arguments one per line: no Python or SB3 needed, well under a second.
set -uo pipefail
bench=$1/ppo-bench
cd "$2"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dir="$root/it's here"
mkdir "$dir"
cat > "$dir/fake python" <<'FAKE'
#!/bin/sh
[ -e "$FAKE_ARGS" ] && status=$FAKE_STATUS2 || status=$FAKE_STATUS  # the second call: FAKE_STATUS2
printf '%s\n' "$@" >> "$FAKE_ARGS"
echo ---- >> "$FAKE_ARGS"
exit "$status"
FAKE
chmod +x "$dir/fake python"
fail=0
# first call's status, second call's status
for statuses in "0 0" "3 0" "0 4"; do
  set -- $statuses
  status=$1 status2=$2
  FAKE_ARGS="$root/args" FAKE_STATUS=$status FAKE_STATUS2=$status2 PPO_SB3_PYTHON="$dir/fake python" \
    "$bench" all --only sb3 --json "$dir/all.json" > "$root/stdout" 2>&1
  rc=$?
  want=$((status == 0 && status2 == 0 ? 0 : 1))
  if [ $rc -ne $want ]; then
    echo "FAIL: SB3 side exits $status then $status2: ppo-bench all exits $rc, not $want"
    sed 's/^/    /' "$root/stdout"
    fail=1
  fi
  expected="bench/sb3_compare.py
--config
configs/cartpole.ini
--timesteps
50000
--threads
1,2
--engine
$(readlink -f "$bench")
--json
$dir/all-sb3-cartpole.json
----"
  [ $status -eq 0 ] && expected="$expected
bench/sb3_compare.py
--config
configs/cartpole.ini
--timesteps
50000
--sb3-from
$dir/all-sb3-cartpole.json
--set
run.threads=2
--engine
$(readlink -f "$bench")
--json
$dir/all-sb3-cartpole-threads2.json
----"
  if [ "$(cat "$root/args" 2>/dev/null)" != "$expected" ]; then
    echo "FAIL: the SB3 side got the arguments"
    sed 's/^/    [/; s/$/]/' "$root/args" 2>/dev/null
    echo "  expected"
    printf '%s\n' "$expected" | sed 's/^/    [/; s/$/]/'
    fail=1
  fi
  # the JSON names each run with its status: the second under sb3_compare_more
  more=$(grep -c '"sb3_compare_more"' "$dir/all.json" 2>/dev/null)
  if [ "$more" != "$((status == 0 ? 1 : 0))" ] ||
     ! grep -q "\"json\": *\"all-sb3-cartpole.json\"" "$dir/all.json" ||
     { [ $status -eq 0 ] && ! grep -q "\"status\": *$status2" "$dir/all.json"; }; then
    echo "FAIL: all.json does not list the runs (first $status, second $status2)"
    sed 's/^/    /' "$dir/all.json" | tail -20
    fail=1
  fi
  rm -f "$root/args"
done
[ $fail -eq 0 ] && echo "ok: the SB3 comparison starts with its arguments intact and its exit status counts"
exit $fail
