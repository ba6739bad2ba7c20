#!/usr/bin/env bash
# test/h5dump_import.sh PPO_DATA SOURCE_DIR: imports each shipped CSV with ppo-data and checks
# that HDF5's own h5dump reads the result: the layout, the attributes, and the first timestamp.
# A third-party reader, so the files are not only readable by the code that wrote them.
set -euo pipefail
ppo_data=$1
src=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
check() {  # name csv symbol expected_rows expected_first_ts
  local name=$1 csv=$2 symbol=$3 rows=$4 first=$5 bad=0
  "$ppo_data" import "$src/data/csv/$csv" "$out/$name.h5" > /dev/null
  local dump
  dump=$(h5dump -a /bars/symbol -a /bars/bar_seconds -d /bars/ts -s 0 -c 1 "$out/$name.h5")
  for want in "(0): \"$symbol\"" "DATASPACE  SIMPLE { ( $rows ) / ( $rows ) }" "(0): $first"; do
    if ! grep -qF "$want" <<< "$dump"; then
      echo "FAIL $name: h5dump output lacks '$want'"
      bad=1
    fi
  done
  h5dump -H "$out/$name.h5" > /dev/null || { echo "FAIL $name: h5dump -H"; bad=1; }
  [ $bad -eq 0 ] && echo "ok   $name: $symbol, $rows rows, first ts $first"
  [ $bad -eq 0 ] || fail=1
}
check XAUUSD XAUUSD_OANDA_1H_BIDASK.csv.gz XAUUSD 76499 1142812800   # 2006-03-20 00:00 UTC
check EURUSD EURUSD_OANDA_1H_BIDASK.csv.gz EURUSD 74439 1167685200   # 2007-01-01 21:00 UTC
check SPY SPY_1D_LEAN.csv.gz SPY 5849 883699200                   # 1998-01-02
check FOREX FOREX_EURUSD_1H_ASK.csv.gz EURUSD 6225 1483308000        # 2017-01-01 22:00
check GOOGL STOCKS_GOOGL.csv.gz GOOGL 2335 1242950400               # 2009-05-22
exit $fail
