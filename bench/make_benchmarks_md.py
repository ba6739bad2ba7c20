#!/usr/bin/env python3
"""docs/BENCHMARKS.md from the JSON of `ppo-bench all` (Python 3 standard library only).

Usage:
  python3 bench/make_benchmarks_md.py [RESULTS.json] [--out docs/BENCHMARKS.md] [--sb3 SB3.json]...
                                      [--torch STAMP-backend-cpu.txt]... [--gpu GPU-all.json]

RESULTS.json defaults to the newest bench/results/*-all*.json. The page's "Reproduce" section
repeats the exact command (with every --sb3 and --torch file) that wrote it: regenerate with that
command. The page holds the date, machine, the commit of the source tree the run was made in and
the build the binary reports (saying so when they differ), the exact commands that produced the
numbers (build, run, this script), the headline numbers, one table per benchmark group (median
with the min-max range of the repeats), the scaling plots written next to the JSON, the memory
plan per slab, the SB3 side by side when the run made one, and the list of raw files. Running it
twice on the same JSON gives the same file.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")


def fmt(v):
    """A number as a table shows it: thousands separators for large values, 3 digits for small."""
    if v is None:
        return "n/a"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.1f}"
    return f"{v:.3g}"


def cell(r, scale=1.0):
    """median (min-max) of a result, optionally scaled (bytes -> MiB)."""
    if r is None:
        return "-"
    med, lo, hi = (r[k] * scale if r[k] is not None else None for k in ("median", "min", "max"))
    if r.get("repeats", 1) <= 1 or lo == hi:
        return fmt(med)
    return f"{fmt(med)} ({fmt(lo)}-{fmt(hi)})"


def mib(b):
    """Bytes as MiB with 3 decimals, or as bytes when under 1 KiB (a slab of a few scalars)."""
    return f"{b:.0f} B" if b < 1024 else f"{b / 2**20:.3f}"


def params_text(p, skip=()):
    return ", ".join(f"{k}={v}" for k, v in p.items() if k not in skip)


class Results:
    def __init__(self, rows):
        self.rows = rows

    def group(self, g):
        return [r for r in self.rows if r["group"] == g]

    def find(self, group, name, **params):
        for r in self.rows:
            if r["group"] != group or r["name"] != name:
                continue
            if all(r.get(k) == v if k in ("backend", "precision") else r["params"].get(k) == v
                   for k, v in params.items()):
                return r
        return None


def table(out, header, rows, align=None):
    out.append("| " + " | ".join(header) + " |")
    align = align or ["---"] + ["---:"] * (len(header) - 1)
    out.append("|" + "|".join(align) + "|")
    for row in rows:
        out.append("| " + " | ".join(str(c) for c in row) + " |")
    out.append("")


def unique(seq):
    seen, out = set(), []
    for x in seq:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def machine_section(out, d):
    m = d["machine"]
    omp = d.get("omp", {})
    rows = [
        ("CPU", f"{m['cpu_model']}, {m['cores']} cores ({m['cpu_flags']})"),
        ("memory", f"{m['memory_bytes'] / 2**30:.1f} GiB" if m.get("memory_bytes") else m.get("memory", "?")),
        ("kernel", m.get("kernel", "?")),
        ("CPU backend", m.get("cpu_backend", "?")),
        ("GEMM", f"fp32: {m.get('gemm_fp32', '?')}; bf16: {m.get('gemm_bf16', '?')}; fp16: {m.get('gemm_fp16', '?')}"),
        ("BLAS", f"{m.get('blas', '?')}, core `{m.get('blas_core', '?')}` ({m.get('blas_config', '?')}); "
                 f"OPENBLAS_CORETYPE={m.get('openblas_coretype', 'unset')}, PPO_CPU_GEMM={m.get('gemm_override', 'unset')}"),
        ("CUDA backend", m.get("cuda_backend", "?")),
        ("GPU and driver", m.get("gpu", "none")),
        ("build", m.get("build", "?")),
        ("OpenMP", f"{omp.get('max_threads', '?')} threads, OMP_WAIT_POLICY={omp.get('OMP_WAIT_POLICY', '?')}, "
                   f"GOMP_SPINCOUNT={omp.get('GOMP_SPINCOUNT', '?')}"),
        ("load average", f"before {' '.join(fmt(x) for x in m.get('load_average_before', []))}, "
                         f"after {' '.join(fmt(x) for x in m.get('load_average_after', []))}"),
    ]
    out.append("## Machine\n")
    table(out, ["", "value"], rows, ["---", "---"])


def provenance(d):
    """(tree, build_commit, dirty, same) for a run: `commit` is the source tree's HEAD when ppo-bench ran
    (bench_all.c; " + uncommitted changes" when tracked files differed from it), the machine's `build` is
    what the binary was compiled from (ppo/build_info.cmake; "+dirty": uncommitted changes to tracked files).
    same: the binary was built from exactly the tree's commit."""
    tree = d["commit"]
    m = re.search(r"commit ([0-9A-Za-z]+)(\+dirty)?", d.get("machine", {}).get("build", ""))
    build_commit, dirty = (m.group(1), bool(m.group(2))) if m else (None, False)
    same = build_commit is not None and not dirty and tree == build_commit
    return tree, build_commit, dirty, same


def provenance_text(d):
    """A sentence on which code the numbers belong to: the tree's commit and the binary's build."""
    tree, build_commit, dirty, same = provenance(d)
    if same:
        return f"The source tree and the binary were both at commit `{tree}`."
    if build_commit is None:
        return f"The source tree was at commit `{tree}` when it ran; the binary does not record its build commit."
    built = f"`{build_commit}`" + (" with uncommitted changes to tracked files (`+dirty` in the build row below)"
                                  if dirty else " (the build row below)")
    return (f"The source tree was at commit `{tree}` when it ran, but the binary was built from {built}, so the "
            f"numbers belong to that build, not exactly to commit `{tree}`.")


def reproduce_section(out, d, json_rel, out_rel, extra_sb3=(), gpu_rel=None, torch=()):
    command = d["command"]
    binary = command.split()[0]
    build_dir = os.path.dirname(os.path.dirname(binary)) or "build"
    out.append("## Reproduce\n")
    tree, build_commit, dirty, same = provenance(d)
    if same:
        out.append(f"From the repository root, at commit `{tree}`:\n")
    else:
        out.append(f"From the repository root, at commit `{tree}` (the tree the run was made in; the measured binary "
                   f"was built from `{build_commit or 'unknown'}`{' with uncommitted changes' if dirty else ''}, so "
                   "a build of this commit may not be the same code):\n")
    out.append("```sh")
    out.append(f"cmake -S . -B {build_dir} -DCMAKE_BUILD_TYPE=Release")
    out.append(f"cmake --build {build_dir} -j\"$(nproc)\" --target ppo-bench")
    out.append(command)
    extra = "".join(f" --sb3 {os.path.relpath(os.path.abspath(f), ROOT)}" for f in extra_sb3)
    extra += f" --gpu {gpu_rel}" if gpu_rel else ""
    extra += "".join(f" --torch {os.path.relpath(os.path.abspath(f), ROOT)}" for f in torch)
    out.append(f"python3 bench/make_benchmarks_md.py {json_rel} --out {out_rel}{extra}")
    out.append("```\n")
    out.append(f"`ppo-bench all` writes `{json_rel}`, the Markdown tables next to it (`.md`) and the "
               "scaling plots (`*-scaling-*.png`, each with the gnuplot script `.gp` that draws it). "
               "Without `--quick` it runs more repeats, longer runs, more scaling points, the headline "
               "network (configs/seed.ini) and, when `PPO_SB3_PYTHON` names a Python with torch and stable-baselines3, the SB3 side by "
               "side (bench/sb3_compare.py). Each measurement is a warm-up and R timed repeats; tables show "
               "the median and, in parentheses, the min-max range.\n")


def backend_network(res):
    """(obs, hidden, actions) of the network `ppo-bench backend` timed, read from its forward GEMM shapes
    (gemm_fwd_l{i}_B32: B x out x in); None when the run has no backend group."""
    layers, i = [], 1
    while True:
        r = res.find("backend", f"gemm_fwd_l{i}_B32")
        if not r:
            break
        m = re.match(r"(\d+)x(\d+)x(\d+)", r["params"].get("shape", ""))
        if not m:
            return None
        layers.append((int(m.group(3)), int(m.group(2))))
        i += 1
    if len(layers) < 2:
        return None
    return layers[0][0], [n for _, n in layers[:-1]], layers[-1][1]


def network_text(net):
    """What `ppo-bench backend` times, said plainly: the headline network's hidden layers, but on the
    observation count of the run (24 by default, not configs/seed.ini's 517)."""
    if not net:
        return "the network of `ppo-bench backend`"
    obs, hidden, actions = net
    return (f"the headline network's hidden layers ({'-'.join(str(h) for h in hidden)}, actor and critic) on "
            f"{obs} observations, {actions} actions")


def headline_section(out, res):
    rows = []
    for prec in ("fp32", "bf16", "fp16"):
        r = res.find("backend", "machine_best_gemm", precision=prec)
        if r:
            rows.append((f"best square GEMM 2048^3, {prec}", cell(r), r["unit"]))
    net = backend_network(res)
    hidden = "-".join(str(h) for h in net[1]) if net else "?"
    obs = f" on {net[0]} observations" if net else ""
    for prec in ("fp32", "bf16", "fp16"):
        r = res.find("backend", "train_step_fwd_bwd_adam", precision=prec)
        if r:
            rows.append((f"update step, hidden {hidden} actor+critic{obs}, B=1024, {prec}", cell(r), r["unit"]))
    for r in res.group("envs"):
        if r["unit"] == "steps/s":
            rows.append((f"{r['name']} ({params_text(r['params'])})", cell(r), r["unit"]))
    for r in res.group("train"):
        if r["name"] == "sps":
            extra = ", ".join(f"{k} {v}" for k, v in r["params"].items() if k not in ("config", "iterations"))
            rows.append((f"training SPS, {r['params'].get('config')}{' (' + extra + ')' if extra else ''} "
                         f"{r['precision']} ({r['backend']})", cell(r), r["unit"]))
    if rows:
        out.append("## Headline numbers\n")
        out.append("Training SPS is env steps per second of a whole training run (rollout and update, as "
                   "`ppo-train` runs them, with `[eval]` and periodic checkpoints off), not of the envs alone.\n")
        table(out, ["measurement", "median (min-max)", "unit"], rows, ["---", "---:", "---"])


def backend_section(out, res):
    rows = res.group("backend")
    if not rows:
        return
    out.append("## Backend: GEMM shapes and the update step (`ppo-bench backend`)\n")
    net = backend_network(res)
    if net and net[0] == 517:
        obs_note = "configs/seed.ini's observation count, so its first layer too"
    else:
        obs_note = (("`ppo-bench backend`'s default `--obs 24`" if net and net[0] == 24 else "`--obs` as run") +
                    ", not configs/seed.ini's 517 observations: the first layer's GEMMs (`_l1_`), the update step "
                    "and rollout inference depend on the count, and `ppo-bench backend --obs 517` gives "
                    "seed.ini's first layer")
    out.append(f"Timed on {network_text(net)} ({obs_note}); GEMMs at batch 32 (rollout) and 1024 (update), each "
               "checked against a double-precision dot product before it is timed. `machine_best_gemm` is the "
               "square GEMM that shows what the machine reaches.\n")
    for backend in unique(r["backend"] for r in rows):
        precs = unique(r["precision"] for r in rows if r["backend"] == backend)
        names = unique((r["name"], r["params"].get("shape", ""), r["unit"]) for r in rows if r["backend"] == backend)
        body = []
        for name, shape, unit in names:
            body.append([name, shape] + [cell(res.find("backend", name, backend=backend, precision=p, shape=shape))
                                         for p in precs] + [unit])
        out.append(f"Backend `{backend}`:\n")
        table(out, ["name", "shape"] + precs + ["unit"], body, ["---", "---"] + ["---:"] * len(precs) + ["---"])


def envs_section(out, res):
    rows = res.group("envs")
    if not rows:
        return
    out.append("## Environments (`ppo-bench envs`)\n")
    out.append("Random actions; CartPole-v1 and the trading env on the shipped XAUUSD hourly bars (window 32, "
               "16 features, default costs): discrete3 levels, and continuous targets in the rows marked action=continuous).\n")
    table(out, ["name", "params", "median (min-max)", "unit"],
          [[r["name"], params_text(r["params"]), cell(r), r["unit"]] for r in rows], ["---", "---", "---:", "---"])


TRAIN_METRICS = [("sps", "SPS"), ("rollout_sps", "rollout steps/s"), ("update_samples_per_s", "update samples/s"),
                 ("rollout_share", "rollout %"), ("gae_share", "GAE %"), ("update_share", "update %"),
                 ("peak_rss", "peak RSS MiB")]


def train_rows(res, group, key_params):
    """One row per setting (backend, precision, params) of a train-like group."""
    settings = unique((r["backend"], r["precision"], json.dumps(r["params"], sort_keys=True))
                      for r in res.group(group) if r["name"] == "sps")
    body = []
    for backend, prec, ptext in settings:
        p = json.loads(ptext)
        found = {r["name"]: r for r in res.group(group)
                 if r["backend"] == backend and r["precision"] == prec and r["params"] == p}
        row = [backend, prec] + [str(p.get(k, "")) for k in key_params]
        row += [cell(found.get(name)) for name, _ in TRAIN_METRICS]
        if "planned_bytes" in found:
            row.append(cell(found["planned_bytes"], 1 / 2**20))
        body.append(row)
    return body


def train_section(out, res):
    if not res.group("train"):
        return
    out.append("## Training runs (ppo/train_run.c, as `ppo-train` runs them)\n")
    out.append("Whole iterations: env steps, policy inference, uploads, GAE, every minibatch of every epoch, "
               "logging and the final checkpoint; `[eval]` and periodic checkpoints are off (`eval.every=0`, "
               "`run.checkpoint_every=0`). SPS = env steps / wall seconds; update samples/s = "
               "n_epochs x n_steps x n_envs / update seconds. Peak RSS is the process's high-water mark during "
               "the run (reset before it, so it includes what the process holds between runs: the libraries, "
               "oneDNN's primitive cache, the results so far).\n")
    keys = ["config", "iterations"] + sorted({k for r in res.group("train") for k in r["params"]} -
                                             {"config", "iterations"})
    table(out, ["backend", "precision"] + keys + [t for _, t in TRAIN_METRICS],
          train_rows(res, "train", keys), ["---", "---"] + ["---"] * len(keys) + ["---:"] * len(TRAIN_METRICS))


def plot_link(d, docs_dir, json_dir, key):
    for p in d.get("plots", []):
        if key in p["png"]:
            rel = os.path.relpath(os.path.join(json_dir, p["png"]), docs_dir)
            return f"![{p['title']}]({rel})\n"
    return ""


def scaling_section(out, d, res, docs_dir, json_dir):
    studies = [("scaling_envs", "n_envs", "SPS and memory against n_envs", "scaling-envs"),
               ("scaling_minibatch", "batch_size", "SPS and memory against minibatch size", "scaling-minibatch"),
               ("scaling_threads", "threads", "SPS against OpenMP threads", "scaling-threads")]
    if not any(res.group(g) for g, *_ in studies):
        return
    out.append("## Scaling studies\n")
    out.append("configs/default.ini (trading, 64-64 tanh actor and critic) with n_steps 128, no evaluation pass, "
               "fp32. Planned MiB is trainer_memory_plan's total (what `ppo-train --plan --set eval.every=0` prints: "
               "`--plan` adds the evaluation pass's rows when `[eval]` is on), before anything is allocated.\n")
    for group, key, title, plot in studies:
        if not res.group(group):
            continue
        other = sorted({k for r in res.group(group) for k in r["params"]} - {key})
        body = train_rows(res, group, [key] + other)
        body.sort(key=lambda row: float(row[2]))
        planned = any(r["name"] == "planned_bytes" for r in res.group(group))
        out.append(f"### {title}\n")
        n_num = len(TRAIN_METRICS) + (1 if planned else 0)
        table(out, ["backend", "precision", key] + other + [t for _, t in TRAIN_METRICS] +
              (["planned MiB"] if planned else []), body, ["---"] * 2 + ["---:"] * (1 + len(other) + n_num))
        out.append(plot_link(d, docs_dir, json_dir, plot))
        if group == "scaling_envs":
            out.append("Rollout against update share of the iteration time, from the same runs:\n")
            out.append(plot_link(d, docs_dir, json_dir, "scaling-split"))


def memory_section(out, d, res, docs_dir, json_dir):
    rows = res.group("memory_plan")
    if not rows:
        return
    out.append("## Memory per slab against network size (trainer_memory_plan; nothing trained)\n")
    out.append("configs/default.ini (32 envs x 256 steps, minibatch 256) with `policy.pi_layers` = "
               "`policy.vf_layers` = the network; bytes per slab (one allocation per kind of data, as "
               "`ppo-train --plan` lists them, without the evaluation pass's rows), in MiB.\n")
    for prec in unique(r["precision"] for r in rows):
        nets = unique(r["params"]["network"] for r in rows if r["precision"] == prec)
        slabs = unique(r["name"] for r in rows if r["precision"] == prec)
        body = []
        params_row = ["parameters"]
        for n in nets:
            r = next(r for r in rows if r["precision"] == prec and r["params"]["network"] == n)
            params_row.append(fmt(r["params"].get("parameters")))
        body.append(params_row)
        for s in slabs:
            row = [s]
            for n in nets:
                r = next((r for r in rows if r["precision"] == prec and r["params"]["network"] == n
                          and r["name"] == s), None)
                row.append(mib(r["median"]) if r else "-")
            body.append(row)
        out.append(f"{prec}:\n")
        table(out, ["slab (MiB)"] + [f"`{n}`" for n in nets], body)
    out.append(plot_link(d, docs_dir, json_dir, "scaling-memory"))


def engine_threads(s):
    """The engine's [run] threads in an sb3_compare.py JSON: a --set of it, else the config's; 0 = all cores."""
    threads = s.get("config_values", {}).get("run", {}).get("threads", "0")
    for arg in (s.get("engine") or {}).get("command") or []:
        if isinstance(arg, str) and arg.startswith("run.threads="):
            threads = arg.split("=", 1)[1]
    return "all" if str(threads) == "0" else str(threads)


def sb3_rows(files, docs_dir):
    """One table row per bench/sb3_compare.py JSON: its env, network, precision, SPS and RSS."""
    body = []
    for f in files:
        try:
            with open(f) as fh:
                s = json.load(fh)
        except (OSError, ValueError):
            body.append([os.path.relpath(f, docs_dir), "unreadable", "", "", "", "", "", "", "", ""])
            continue
        sb3, eng = s.get("sb3") or {}, s.get("engine") or {}
        cv = s.get("config_values", {})
        cfg = cv.get("env", {}).get("type", "?")
        net = cv.get("policy", {}).get("pi_layers", "64,64")
        precision = cv.get("run", {}).get("precision", "fp32")
        speedup = eng.get("sps") / sb3["sps"] if eng.get("sps") and sb3.get("sps") else None
        reused = f", from {os.path.basename(s['sb3_source'])}" if s.get("sb3_source") else ""
        when = s.get("host", {}).get("utc", "?")
        # the engine binary's own build when its JSON names it (the checkout may have moved on during the
        # run), else the checkout's commit at the time
        built = re.search(r"commit ([0-9a-f]+\+?\w*)", eng.get("build", ""))
        when += f", `{built.group(1)}`" if built else f", `{s['commit']}`" if s.get("commit") else ""
        body.append([f"[{os.path.basename(f)}]({os.path.relpath(f, docs_dir)})", when, cfg, net, precision,
                     str(s.get("timesteps", "?")), f"{fmt(sb3.get('sps'))} ({sb3.get('threads', '?')} thr{reused})",
                     f"{fmt(eng.get('sps'))} ({engine_threads(s)} thr)", f"{speedup:.2f}x" if speedup else "-",
                     f"{fmt((sb3.get('peak_rss_bytes') or 0) / 2**20)} / {fmt((eng.get('peak_rss_bytes') or 0) / 2**20)}"])
    return body


SB3_HEADER = ["raw file", "measured (UTC, commit)", "env", "network", "engine precision", "timesteps", "SB3 SPS", "engine SPS", "engine / SB3",
              "peak RSS MiB SB3 / engine"]
SB3_ALIGN = ["---", "---", "---", "---", "---", "---:", "---:", "---:", "---:", "---:"]


def sb3_section(out, d, json_dir, docs_dir, extra=()):
    """The run's own SB3 side by side (full mode), else earlier raw files, newest first; then the
    sb3_compare.py files given with --sb3 (measured by separate commands)."""
    out.append("## Stable-Baselines3 side by side (bench/sb3_compare.py)\n")
    files = []
    if d.get("sb3_compare"):
        runs = [d["sb3_compare"]] + list(d.get("sb3_compare_more") or [])
        files = [os.path.join(json_dir, r["json"]) for r in runs if r.get("status") == 0 or r is runs[0]]
        out.append("This run: " + "; then ".join(f"`{r['command']}` (exit status {r['status']})" for r in runs) + ".\n")
    else:
        files = sorted(glob.glob(os.path.join(json_dir, "*-sb3-*.json")), reverse=True)
        out.append(f"Not part of this run ({d.get('mode')} mode: the SB3 side by side runs only without `--quick`, "
                   "when PPO_SB3_PYTHON names a Python with SB3). Earlier raw results in bench/results/, same machine "
                   "class, for reference (not re-measured at this commit):\n")
    body = sb3_rows(files, docs_dir)
    if body:
        table(out, SB3_HEADER, body, SB3_ALIGN)
    else:
        out.append("No SB3 results found.\n")
    if extra:
        out.append("Measured by separate `bench/sb3_compare.py` commands on the same machine (each file holds its "
                   "configuration; SB3 always trains in fp32):\n")
        table(out, SB3_HEADER, sb3_rows(extra, docs_dir), SB3_ALIGN)


TORCH_RATIO = re.compile(r"ratio (\w+)\s+ours (\w+) / torch fp32 = ([0-9.]+)x \(target ([0-9.]+)x: ([A-Za-z ]+)\) "
                         r"\[ours (\w+) ([0-9.]+), torch (\w+) ([0-9.]+)\]")


def torch_section(out, files, docs_dir):
    """bench/run_backend_vs_torch.sh outputs: each program in its fastest OpenMP mode, ratio to the target."""
    out.append("## PyTorch side by side (bench/run_backend_vs_torch.sh)\n")
    counts = set()
    for f in files:
        with open(f) as fh:
            m = re.search(r"(\d+) alternating rounds", fh.readline())
        if m:
            counts.add(int(m.group(1)))
    rounds = (f"{counts.pop()} times" if len(counts) == 1 else
              f"{min(counts)}-{max(counts)} times (each raw file's first line says)" if counts else "(rounds: see each raw file)")
    out.append("`ppo-bench backend` and `bench/torch_reference.py` (the same networks and steps in PyTorch, fp32) "
               f"alternated {rounds} under each OpenMP waiting mode; each program in its fastest mode, the median "
               "of that mode's runs (in parentheses: ours / PyTorch's samples/s, and the target). The targets are "
               "the project's CPU speed targets (`TARGETS` in bench/backend_vs_torch_summary.py): ours over "
               "PyTorch fp32 at least 1.4x for the training step in fp32, 4.0x for it in bf16, and 2.0x for "
               "rollout inference in either. The last column is ppo-bench's square fp32 GEMM in the same run "
               "(spin mode's median): the machine's speed at the time, since this shared machine's varies.\n")
    header = ["raw file", "measured (UTC, commit)", "train step fp32", "train step bf16", "rollout fp32",
              "rollout bf16", "machine fp32 GEMM GFLOP/s"]
    rows, torch_train = [], []
    for f in files:
        with open(f) as fh:
            text = fh.read()
        date = re.search(r"^# ppo-bench backend vs .*?, (\w{3} \w{3} +\d+ [0-9:]+ \w+ \d{4})$", text, re.M)
        commit = re.search(r"^# commit: (\S+)", text, re.M)
        block = text.split("## each program in its fastest mode", 1)
        cells = {}
        for m in TORCH_RATIO.finditer(block[1] if len(block) > 1 else ""):
            what, dtype, ratio, target, verdict, _, ours, _, theirs = m.groups()
            key = ("train step " if what.startswith("train") else "rollout ") + dtype
            cells[key] = f"{ratio}x ({fmt(float(ours))} / {fmt(float(theirs))}; {target}x: {verdict.strip()})"
            if what.startswith("train") and dtype == "fp32":
                torch_train.append(float(theirs))
        spin = text.split("## medians, mode spin", 1)
        spin = spin[1].split("\n## ", 1)[0] if len(spin) > 1 else ""  # that section only
        best = re.search(r"^\s+cpu\s+fp32\s+machine_best_gemm\s+\S+ \S+\s+([0-9.]+)", spin, re.M)
        cells[header[-1]] = best.group(1) if best else "-"
        rows.append([f"[{os.path.basename(f)}]({os.path.relpath(f, docs_dir)})",
                     f"{date.group(1) if date else '?'}, `{commit.group(1) if commit else '?'}`"] +
                    [cells.get(h, "-") for h in header[2:]])
    table(out, header, rows)
    if len(torch_train) > 1:
        out.append(f"PyTorch's own fp32 training rate ranged from {fmt(min(torch_train))} to {fmt(max(torch_train))} "
                   "samples/s across these runs: compare ratios within a run.\n")


def raw_files_section(out, json_path, docs_dir):
    stamp = os.path.basename(json_path).split("-")[0]
    files = sorted(glob.glob(os.path.join(os.path.dirname(json_path), stamp + "-*")))
    out.append("## Raw files\n")
    for f in files:
        out.append(f"- [{os.path.basename(f)}]({os.path.relpath(f, docs_dir)})")
    out.append("")


def render(d, json_path, out_path, extra_sb3=(), gpu=None, torch=()):
    """gpu: (path, JSON) of a `ppo-bench all` run on a GPU machine, rendered as a part of its own."""
    docs_dir = os.path.dirname(os.path.abspath(out_path))
    json_dir = os.path.dirname(os.path.abspath(json_path))
    res = Results(d["results"])
    json_rel = os.path.relpath(os.path.abspath(json_path), ROOT)
    out_rel = os.path.relpath(os.path.abspath(out_path), ROOT)
    out = [
        "# Benchmarks",
        "",
        f"<!-- Generated by bench/make_benchmarks_md.py from {json_rel}; edit the script, not this file. -->",
        "",
        f"Measured {d['date']} with `{d['command']}` ({d.get('mode', '?')} mode, {fmt(d.get('wall_seconds'))} s). "
        f"{provenance_text(d)} Every number below comes from `{json_rel}`, but for the SB3 and PyTorch "
        "side-by-side sections, which name their own raw files.",
        "",
    ]
    machine_section(out, d)
    reproduce_section(out, d, json_rel, out_rel, extra_sb3,
                      os.path.relpath(os.path.abspath(gpu[0]), ROOT) if gpu else None, torch)
    headline_section(out, res)
    backend_section(out, res)
    envs_section(out, res)
    train_section(out, res)
    scaling_section(out, d, res, docs_dir, json_dir)
    memory_section(out, d, res, docs_dir, json_dir)
    sb3_section(out, d, json_dir, docs_dir, [os.path.abspath(f) for f in extra_sb3])
    if torch:
        torch_section(out, [os.path.abspath(f) for f in torch], docs_dir)
    raw_files_section(out, os.path.abspath(json_path), docs_dir)
    if gpu:
        gpu_path, g = gpu
        gpu_rel = os.path.relpath(os.path.abspath(gpu_path), ROOT)
        out += ["# On a GPU", "",
                f"Measured {g['date']} with `{g['command']}` ({g.get('mode', '?')} mode) on the machine below. "
                f"{provenance_text(g)} Every number in this part comes from `{gpu_rel}` (bench/gpu_session.sh "
                "bench).",
                ""]
        gres = Results(g["results"])
        machine_section(out, g)
        headline_section(out, gres)
        backend_section(out, gres)
        train_section(out, gres)
        raw_files_section(out, os.path.abspath(gpu_path), docs_dir)
    return "\n".join(line for line in out) + "\n"


def newest_json():
    files = sorted(glob.glob(os.path.join(RESULTS, "*-all*.json")))
    return files[-1] if files else None


def main(argv=None):
    ap = argparse.ArgumentParser(description="docs/BENCHMARKS.md from the JSON of `ppo-bench all`")
    ap.add_argument("json", nargs="?", default=None, help="default: the newest bench/results/*-all*.json")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "BENCHMARKS.md"))
    ap.add_argument("--sb3", action="append", default=[], help="another bench/sb3_compare.py JSON to list (repeatable)")
    ap.add_argument("--gpu", default=None, help="the JSON of a `ppo-bench all` run on a GPU machine (its own part)")
    ap.add_argument("--torch", action="append", default=[],
                    help="a bench/run_backend_vs_torch.sh output (STAMP-backend-cpu.txt) to list (repeatable)")
    args = ap.parse_args(argv)
    path = args.json or newest_json()
    if not path:
        print("make_benchmarks_md.py: no bench/results/*-all*.json; run `ppo-bench all --quick` first",
              file=sys.stderr)
        return 2
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        print(f"make_benchmarks_md.py: {path}: {e}", file=sys.stderr)
        return 2
    gpu = None
    if args.gpu:
        try:
            with open(args.gpu) as f:
                gpu = (args.gpu, json.load(f))
        except (OSError, ValueError) as e:
            print(f"make_benchmarks_md.py: --gpu {args.gpu}: {e}", file=sys.stderr)
            return 2
    for p, doc in [(path, d)] + ([gpu] if gpu else []):
        for key in ("machine", "commit", "date", "command", "results"):
            if key not in doc:
                print(f"make_benchmarks_md.py: {p}: no '{key}' (not the JSON of ppo-bench all?)", file=sys.stderr)
                return 2
    for f in args.torch:
        if not os.path.isfile(f):
            print(f"make_benchmarks_md.py: --torch {f}: no such file", file=sys.stderr)
            return 2
    text = render(d, path, args.out, args.sb3, gpu, args.torch)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, args.out)
    print(f"wrote {args.out} from {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
