#!/usr/bin/env bash
# test/cli_bad_values.sh BIN_DIR SOURCE_DIR: bad command-line values to every program (and a bad
# launch). Each must exit with status 2 and name the option and the value it refused on stderr
# (README: bad input).
# The programs stop while parsing, so nothing here trains or writes.
set -uo pipefail
bin=$1
src=$2
cd "$src"
fail=0
expect() {  # expect 'text stderr must hold' program args...
  local want=$1
  shift
  local err rc
  err=$("$@" 2>&1 >/dev/null)
  rc=$?
  if [ $rc -ne 2 ]; then
    echo "FAIL $*: exit status $rc, not 2"
    fail=1
  elif ! grep -qF -- "$want" <<< "$err"; then
    echo "FAIL $*: stderr lacks '$want':"
    sed 's/^/    /' <<< "$err"
    fail=1
  else
    echo "ok   $*"
  fi
}
expect "--iterations needs a whole number in 1 .. 9223372036854775807, got 'x'" "$bin/ppo-train" configs/cartpole.ini --iterations x
expect "got '99999999999999999999'" "$bin/ppo-train" configs/cartpole.ini --iterations 99999999999999999999
expect "--seeds 2x: a whole number" "$bin/ppo-eval" --checkpoint none.h5 --seeds 2x
expect "--obs 'x': a whole number in 1 .. 65536" "$bin/ppo-bench" backend --obs x
expect "--actions '1': a whole number in 2 .. 65536" "$bin/ppo-bench" backend --actions 1
expect "--repeats '0'" "$bin/ppo-bench" backend --repeats 0
expect "--hidden '64,,64'" "$bin/ppo-bench" backend --hidden 64,,64
expect "--precision 'fp8'" "$bin/ppo-bench" backend --precision fp8
expect "--iterations 'abc': a whole number of at least 1" "$bin/ppo-bench" train --config configs/cartpole.ini --iterations abc
expect "--steps '3': a whole number in 5 .." "$bin/ppo-bench" envs --steps 3
expect "--envs '1e3'" "$bin/ppo-bench" envs --envs 1e3
expect "--repeats R: R must be an integer in 1..64" "$bin/ppo-bench" all --repeats 65
# ppo-bench all reads its options as the other subcommands do: --opt=VALUE, each once, no empty group
expect "--repeats R: R must be an integer in 1..64" "$bin/ppo-bench" all --repeats=0
expect "--only is given twice; give it once" "$bin/ppo-bench" all --only envs --only=train
expect "--only envs,: allowed groups" "$bin/ppo-bench" all --only envs,
# ppo-bench names an unknown option, a missing value and an empty list item (it printed only the usage
# text, and took '64,' and 'fp32,,fp16').
expect "unknown option '--obz'" "$bin/ppo-bench" backend --obz 5
expect "--json needs a value" "$bin/ppo-bench" backend --json
expect "--json '/nonexistent/b.json': cannot open it for appending: No such file" "$bin/ppo-bench" backend --json /nonexistent/b.json
expect "--hidden '64,'" "$bin/ppo-bench" backend --hidden 64,
expect "--precision 'fp32,,fp16'" "$bin/ppo-bench" backend --precision fp32,,fp16
expect "--precision 'fp32,'" "$bin/ppo-bench" backend --precision fp32,
expect "unknown command 'bakcend'" "$bin/ppo-bench" bakcend
expect "unknown option '--cfg'" "$bin/ppo-bench" train --cfg x.ini
expect "--iterations needs a value" "$bin/ppo-bench" train --config configs/cartpole.ini --iterations
expect "missing --config" "$bin/ppo-bench" train --json x.json
# --set with a space instead of '=' (the value became an argument of its own)
expect "--set 'ppo.gamma': expected section.key=value" "$bin/ppo-bench" train --config configs/cartpole.ini --set ppo.gamma 0.9
expect "unknown option '--dta'" "$bin/ppo-bench" envs --dta x.h5
expect "--json needs a value" "$bin/ppo-bench" envs --json
expect "--json '/nonexistent/e.json': cannot open it for appending" "$bin/ppo-bench" envs --json /nonexistent/e.json
# Refused before any benchmark runs: timeout(1) ends the old order (the CartPole rows, or the whole
# training run, first) with status 124.
expect "--data 'none.h5': none.h5: cannot open" timeout 20 "$bin/ppo-bench" envs --data none.h5 --steps 1000000000000
expect "--json '/nonexistent/t.json': cannot create a file there" timeout 20 "$bin/ppo-bench" train --config configs/cartpole.ini --set run.total_timesteps=100000000 --json /nonexistent/t.json
expect "--json '/nonexistent/a.json': cannot create a file there" timeout 20 "$bin/ppo-bench" all --quick --only envs,train --json /nonexistent/a.json
expect "--timezone '/etc/passwd'" "$bin/ppo-data" import data/csv/SPY_1D_LEAN.csv.gz /tmp/never.h5 --timezone /etc/passwd
# A repeated option is refused, not silently replaced by its last value (a second --resume resumed
# another run).
expect "--resume is given twice; give it once" "$bin/ppo-train" --resume a.h5 --resume b.h5
expect "--run-dir is given twice" "$bin/ppo-train" configs/cartpole.ini --run-dir=/tmp/a --run-dir /tmp/b
expect "--iterations is given twice" "$bin/ppo-train" configs/cartpole.ini --iterations 1 --iterations 5
expect "--checkpoint is given twice; give it once" "$bin/ppo-eval" --checkpoint none.h5 --checkpoint other.h5
expect "--split is given twice" "$bin/ppo-eval" --checkpoint none.h5 --split val --split=test
expect "--symbol is given twice" "$bin/ppo-data" import data/csv/SPY_1D_LEAN.csv.gz /tmp/never.h5 --symbol A --symbol B
expect "--out is given twice" "$bin/ppo-data" features data/SPY_1D.h5 --out /tmp/a.csv --out /tmp/b.csv
expect "--obs is given twice" "$bin/ppo-bench" backend --obs 24 --obs=517
expect "--json is given twice" "$bin/ppo-bench" train --config configs/cartpole.ini --json a.json --json b.json
expect "--envs is given twice" "$bin/ppo-bench" envs --envs 4 --envs 8
# Outputs that cannot be written are refused before the input is read (they exited 1 after it).
expect "OUTPUT.h5 'data' is a directory" "$bin/ppo-data" import data/csv/SPY_1D_LEAN.csv.gz data
expect "data/: not a file name (it ends with '/') (OUTPUT.h5)" "$bin/ppo-data" import data/csv/SPY_1D_LEAN.csv.gz data/
expect "--out 'data' is a directory" "$bin/ppo-data" features data/none.h5 --out data
# A symbol taken from the file name obeys --symbol's rule (a quote broke the plots' titles).
expect "the symbol 'O'NEIL' taken from the name" "$bin/ppo-data" import "data/o'neil_1d.csv" /tmp/never.h5
if [ -d "${TZDIR:-/usr/share/zoneinfo}" ]; then  # without tzdata only the characters are checked
  expect "--timezone 'America/NewYork'" "$bin/ppo-data" import data/csv/SPY_1D_LEAN.csv.gz /tmp/never.h5 --timezone America/NewYork
fi
# Several copies started by a launcher but not connected through MPI would each train alone into
# the same run directory (srun without --mpi=pmix; mpirun with a build without MPI).
expect "srun started 2 " env SLURM_PROCID=0 SLURM_STEP_NUM_TASKS=2 "$bin/ppo-train" configs/cartpole.ini --plan
if [ -x "$bin/ppo-bench-allreduce" ]; then
  expect "--reps 'x': a whole number" "$bin/ppo-bench-allreduce" --reps x
  expect "'12x': up to 16 sizes" "$bin/ppo-bench-allreduce" 12x
fi
exit $fail
