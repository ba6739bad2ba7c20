#!/usr/bin/env python3
"""Medians and ratios of a bench/run_backend_vs_torch.sh run (Python 3 standard library only).

Usage: python3 bench/backend_vs_torch_summary.py bench/results/STAMP

Reads STAMP-spin.jsonl and STAMP-passive.jsonl (JSON lines of ppo-bench backend and
bench/torch_reference.py, both programs run in each OpenMP waiting mode) and prints, per mode, the
median of each measurement and our ratio to PyTorch fp32 in that mode; then the same ratios with
each program in its own fastest mode for that measurement (the issue's comparison: PyTorch "with
its fastest settings", ppo-engine as it runs by default or passive, whichever is faster).
"""

import json
import statistics
import sys

TARGETS = (("train_step_fwd_bwd_adam", "B=1024", "fp32", 1.4),
           ("train_step_fwd_bwd_adam", "B=1024", "bf16", 4.0),
           ("rollout_inference", "B=32", "fp32", 2.0),
           ("rollout_inference", "B=32", "bf16", 2.0))


def medians(path):
    runs = {}
    for line in open(path):
        r = json.loads(line)
        runs.setdefault((r["backend"], r["precision"], r["name"], r["shape"]), []).append(r["value"])
    return runs, {k: statistics.median(v) for k, v in runs.items()}


def ratio_line(name, prec, ours, torch, target, how):
    ratio = ours / torch
    return "  ratio %-26s ours %s / torch fp32 = %.2fx (target %.1fx: %s)%s" % (
        name, prec, ratio, target, "met" if ratio >= target else "NOT met", how)


def main():
    stamp = sys.argv[1]
    med_by_mode = {}
    for mode in ("spin", "passive"):
        runs, med = medians("%s-%s.jsonl" % (stamp, mode))
        med_by_mode[mode] = med
        print("## medians, mode %s" % mode)
        for k in sorted(med):
            if k[2].startswith(("train", "rollout_inference", "machine")):
                print("  %-6s %-5s %-26s %-16s %10.1f  (runs: %s)" % (k + (med[k], " ".join("%.0f" % v for v in runs[k]))))
        for name, shape, prec, target in TARGETS:
            print(ratio_line(name, prec, med[("cpu", prec, name, shape)], med[("torch", "fp32", name, shape)], target, ""))
    print("## each program in its fastest mode (median of that mode's runs)")
    for name, shape, prec, target in TARGETS:
        ours_mode = max(med_by_mode, key=lambda m: med_by_mode[m][("cpu", prec, name, shape)])
        torch_mode = max(med_by_mode, key=lambda m: med_by_mode[m][("torch", "fp32", name, shape)])
        ours = med_by_mode[ours_mode][("cpu", prec, name, shape)]
        torch = med_by_mode[torch_mode][("torch", "fp32", name, shape)]
        print(ratio_line(name, prec, ours, torch, target, " [ours %s %.0f, torch %s %.0f]" % (ours_mode, ours, torch_mode, torch)))


if __name__ == "__main__":
    main()
