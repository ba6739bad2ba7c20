#!/usr/bin/env python3
"""bench/torch_reference.py: the PyTorch reference for `ppo-bench backend` (same machine, same run).

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch
    build/bin/ppo-bench backend --json ours.jsonl
    /tmp/torchvenv/bin/python bench/torch_reference.py --ours ours.jsonl [--json torch.jsonl]

Times, on the headline network (actor and critic, hidden 2048,1024,512, tanh, obs 24, 3 actions,
categorical head) exactly what ppo-bench times:
  - train_step_fwd_bwd_adam, minibatch 1024: evaluate, the loss
    -mean(logp adv) - 0.01 mean(entropy) + 0.5 mean((returns - values)^2), backward,
    clip_grad_norm_(0.5), Adam(3e-4, eps 1e-5) step; in fp32 and under CPU bf16 autocast;
  - rollout_inference, batch 32: both networks forward under no_grad and a categorical sample.
With --device cuda the same step runs on the GPU in fp32 (TF32 off), fp16 (autocast with
torch.amp.GradScaler, as SB3 users do) and bf16 (autocast), timed with torch.cuda.synchronize();
compare with `ppo-bench backend --backend cuda` of the same run (bench/gpu_session.sh does both).
PyTorch's CPU settings: one thread per core; OpenMP waiting as chosen by --omp (default
OMP_WAIT_POLICY=PASSIVE, set here by re-executing; --omp spin gives GOMP_SPINCOUNT=10000, ppo-bench's
default, which measured faster for PyTorch too on a quiet machine: compare like with like). It
runs its own bundled BLAS (MKL / oneDNN), so OpenBLAS's core type does not apply. Prints a table, JSON lines with --json, and with --ours the ratios to ppo-bench's numbers
against the issue's targets (fp32 >= 1.4x, bf16 >= 4x torch fp32, rollout >= 2x).
"""
import argparse
import json
import os
import statistics
import sys
import time

# OpenMP's environment is read when the runtime loads: set it, then start again.
#   --omp passive (default): OMP_WAIT_POLICY=PASSIVE, the setting the issue names;
#   --omp spin: GOMP_SPINCOUNT=10000, what ppo-bench uses by default (measured faster for both);
#   --omp as-is: the environment as given.
_mode = sys.argv[sys.argv.index("--omp") + 1] if "--omp" in sys.argv[:-1] else "passive"
_want = {"passive": {"OMP_WAIT_POLICY": "PASSIVE"}, "spin": {"GOMP_SPINCOUNT": "10000"}}.get(_mode, {})
if _want and any(os.environ.get(k) != v for k, v in _want.items()):
    os.environ.pop("OMP_WAIT_POLICY", None)
    os.environ.pop("GOMP_SPINCOUNT", None)
    os.environ.update(_want)
    os.execv(sys.executable, [sys.executable] + sys.argv)

import torch  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--ours", help="ppo-bench --json output to compare with")
parser.add_argument("--json", help="append torch's numbers as JSON lines")
parser.add_argument("--repeats", type=int, default=7)
parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
parser.add_argument("--threads", type=int, default=os.cpu_count())
parser.add_argument("--obs", type=int, default=24)
parser.add_argument("--actions", type=int, default=3)
parser.add_argument("--hidden", default="2048,1024,512")
parser.add_argument("--omp", choices=["passive", "spin", "as-is"], default="passive",
                    help="OpenMP waiting: OMP_WAIT_POLICY=PASSIVE, GOMP_SPINCOUNT=10000, or as given")
args = parser.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(0)
hidden = [int(h) for h in args.hidden.split(",")]


def mlp(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.Tanh())
    return torch.nn.Sequential(*layers)


dev = torch.device(args.device)
if args.device == "cuda":
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32, as the engine's default
pi = mlp([args.obs] + hidden + [args.actions]).to(dev)
vf = mlp([args.obs] + hidden + [1]).to(dev)
params = list(pi.parameters()) + list(vf.parameters())
opt = torch.optim.Adam(params, lr=3e-4, betas=(0.9, 0.999), eps=1e-5)
scaler = torch.amp.GradScaler(args.device, enabled=args.device == "cuda")
B = 1024
obs = (torch.rand(B, args.obs) * 2 - 1).to(dev)
actions = torch.randint(0, args.actions, (B,)).to(dev)
adv = (torch.rand(B) * 2 - 1).to(dev)
returns = (torch.rand(B) * 2 - 1).to(dev)
obs32 = obs[:32].contiguous()


def train_step(dtype):
    """One minibatch step; dtype None is fp32, else autocast to it (fp16 with the GradScaler)."""
    opt.zero_grad(set_to_none=False)
    with torch.autocast(args.device, dtype=dtype or torch.float32, enabled=dtype is not None):
        logits = pi(obs)
        values = vf(obs).squeeze(-1)
    dist = torch.distributions.Categorical(logits=logits.float())
    logp = dist.log_prob(actions)
    loss = -(logp * adv).mean() - 0.01 * dist.entropy().mean() + 0.5 * ((returns - values.float()) ** 2).mean()
    if dtype == torch.float16:
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(params, 0.5)
        scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 0.5)
        opt.step()


def rollout(dtype):
    with torch.no_grad(), torch.autocast(args.device, dtype=dtype or torch.float32, enabled=dtype is not None):
        logits = pi(obs32)
        vf(obs32)
        torch.distributions.Categorical(logits=logits.float()).sample().cpu()  # the actions go to the envs


def synchronize():
    if args.device == "cuda":
        torch.cuda.synchronize()


def median_seconds(fn):
    fn()
    synchronize()
    t0 = time.perf_counter()
    fn()
    synchronize()
    one = time.perf_counter() - t0
    iters = 1 if one > 0.02 else int(0.02 / max(one, 1e-7)) + 1
    samples = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        synchronize()
        samples.append((time.perf_counter() - t0) / iters)
    return statistics.median(samples)


with open("/proc/loadavg") as f:
    load = f.read().split()[:3]
print("torch %s on %s, %d threads, OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s, load average %s, median of %d runs"
      % (torch.__version__, torch.cuda.get_device_name() if args.device == "cuda" else "cpu", torch.get_num_threads(),
         os.environ.get("OMP_WAIT_POLICY", "(unset)"), os.environ.get("GOMP_SPINCOUNT", "(unset)"), " ".join(load),
         args.repeats))
results = []
precisions = [("fp32", None), ("bf16", torch.bfloat16)]
if args.device == "cuda":
    precisions.insert(1, ("fp16", torch.float16))
for prec, dtype in precisions:
    t = median_seconds(lambda: train_step(dtype))
    results.append(("train_step_fwd_bwd_adam", prec, "B=1024", B / t, "samples/s"))
    t = median_seconds(lambda: rollout(dtype))
    results.append(("rollout_inference", prec, "B=32", 32 / t, "samples/s"))
for r in results:
    print("  %-26s %-6s %-10s %12.1f %s" % r)
if args.json:
    with open(args.json, "a") as f:
        for name, prec, shape, value, unit in results:
            f.write(json.dumps({"name": name, "backend": "torch" if args.device == "cpu" else "torch-cuda", "precision": prec, "shape": shape,
                                "value": value, "unit": unit}) + "\n")
if args.ours:
    ours = {}
    with open(args.ours) as f:
        for line in f:
            r = json.loads(line)
            ours[(r["name"], r["precision"])] = r["value"]
    if args.device == "cuda":  # the GPU has no targets against torch per op: same precision side by side
        print("ratios to torch on the same GPU, same precision:")
        for name, prec, _, value, _ in results:
            if (name, prec) in ours:
                print("  %-26s %-5s ours %12.1f / torch %12.1f = %5.2fx" % (name, prec, ours[(name, prec)], value,
                                                                           ours[(name, prec)] / value))
        sys.exit(0)
    torch_fp32 = {name: value for name, prec, _, value, _ in results if prec == "fp32"}
    print("ratios to torch fp32 (target):")
    for name, prec, target in (("train_step_fwd_bwd_adam", "fp32", 1.4), ("train_step_fwd_bwd_adam", "bf16", 4.0),
                               ("rollout_inference", "fp32", 2.0), ("rollout_inference", "bf16", 2.0),
                               ("train_step_fwd_bwd_adam", "fp16", None)):
        if (name, prec) in ours:
            ratio = ours[(name, prec)] / torch_fp32[name]
            verdict = "" if target is None else ("  (target %.1fx: %s)" % (target, "met" if ratio >= target else "NOT met"))
            print("  %-26s ours %-5s %10.1f / torch fp32 %10.1f = %5.2fx%s"
                  % (name, prec, ours[(name, prec)], torch_fp32[name], ratio, verdict))
