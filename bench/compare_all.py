#!/usr/bin/env python3
"""Compare two `ppo-bench all` result files, measurement by measurement.

    python3 bench/compare_all.py OLD-all.json NEW-all.json [--threshold 5] [--all]

Pairs the measurements present in both files (same group, name, backend, precision and
parameters) and prints, for every speed (units ending in /s) and time (us, ms, s) and every
memory figure (bytes, MiB), the ratio of the medians as "new is N % faster / slower / larger /
smaller". A change is flagged when it passes --threshold percent *and* the two runs' min-max
ranges do not overlap: these machines are shared and noisy, and a difference inside both ranges
is not evidence. Shares (%) are skipped. Exits 1 when a speed got slower or a memory figure grew
(flagged), else 0, so it can gate a change: run `ppo-bench all --quick` before and after.

Without --all only the flagged lines are printed, most changed first.
"""
import argparse
import json
import sys


def key(r):
    return (r["group"], r["name"], r.get("backend", "-"), r.get("precision", "-"),
            json.dumps(r.get("params", {}), sort_keys=True))


def kind(unit):
    if unit.endswith("/s"):
        return "speed"  # higher is better
    if unit in ("us", "ms", "s"):
        return "time"  # lower is better
    if unit in ("bytes", "MiB"):
        return "memory"  # lower is better
    return None


def load(path):
    with open(path) as f:
        d = json.load(f)
    if "results" not in d:
        sys.exit(f"{path}: not a ppo-bench all result file (no 'results' list)")
    return d, {key(r): r for r in d["results"]}


def describe(d, path):
    return f"{path}: commit {d.get('commit', '?')}, {d.get('date', '?')}, {d.get('mode', '?')} mode"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--threshold", type=float, default=5.0, help="percent change to flag (default 5)")
    ap.add_argument("--all", action="store_true", help="print every paired measurement, not only flagged ones")
    args = ap.parse_args()
    d_old, old = load(args.old)
    d_new, new = load(args.new)
    print(describe(d_old, args.old))
    print(describe(d_new, args.new))
    m_old, m_new = d_old.get("machine", {}), d_new.get("machine", {})
    for field in ("cpu_model", "cores", "cpu_flags", "memory_bytes", "kernel", "gemm_fp32", "gemm_bf16"):
        if m_old.get(field) != m_new.get(field):
            print(f"note: machine {field} differs ({m_old.get(field)!r} -> {m_new.get(field)!r}): "
                  "ratios compare machines, not only code")
    if d_old.get("omp") != d_new.get("omp"):
        print(f"note: OpenMP settings differ ({d_old.get('omp')} -> {d_new.get('omp')})")
    for d, path in ((m_old, args.old), (m_new, args.new)):
        if "load_average_before" in d:
            print(f"load average before/after {path}: {d['load_average_before']} / {d.get('load_average_after')}")

    rows, worse = [], 0
    for k in old.keys() & new.keys():
        a, b = old[k], new[k]
        kd = kind(a["unit"])
        if kd is None or a["unit"] != b["unit"] or not a["median"] or not b["median"]:
            continue
        ratio = b["median"] / a["median"]
        # "better" as a positive percentage: speeds up, times and memory down
        change = (ratio - 1.0) * 100.0 if kd == "speed" else (1.0 / ratio - 1.0) * 100.0
        disjoint = b["min"] > a["max"] or b["max"] < a["min"]
        flagged = abs(change) >= args.threshold and disjoint
        if flagged and change < 0:
            worse += 1
        if flagged or args.all:
            rows.append((abs(change) if flagged else -1.0, k, a, b, kd, change, flagged))
    if not rows:
        print(f"no change of {args.threshold:g} % or more outside the runs' ranges "
              f"({len(old.keys() & new.keys())} measurements paired)")
        return 0
    rows.sort(key=lambda r: (-r[0], r[1]))
    for _, k, a, b, kd, change, flagged in rows:
        group, name, backend, precision, params = k
        p = ",".join(f"{x}={y}" for x, y in json.loads(params).items())
        better, worse_word = ("smaller", "larger") if kd == "memory" else ("faster", "slower")
        verdict = f"{abs(change):.1f} % {better if change >= 0 else worse_word}"
        mark = "!!" if flagged and change < 0 else ("+ " if flagged else "  ")
        print(f"{mark} {group}/{name} {backend} {precision} {p}: {a['median']:.6g} -> {b['median']:.6g} "
              f"{a['unit']} ({verdict}; ranges [{a['min']:.6g}, {a['max']:.6g}] -> [{b['min']:.6g}, {b['max']:.6g}])")
    print(f"{worse} flagged as worse (!!), "
          f"{sum(1 for r in rows if r[6] and r[5] >= 0)} as better (+), threshold {args.threshold:g} %")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
