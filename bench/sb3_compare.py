"""Stable-Baselines3 PPO against ppo-engine on the same config: speed, memory and return reached.

Reads an engine config (INI), trains SB3's PPO with the same hyperparameters on
  - CartPole-v1 (gymnasium's) when [env] type = cartpole,
  - the numpy port of the engine's synthetic trading env (bench/trading_env_np.py) when
    [env] type = synthetic,
with SB3's fastest CPU settings (device cpu unless --device cuda, DummyVecEnv by default, torch.set_num_threads from
--threads; several values are tried when a list is given and the fastest is reported), then runs
`ppo-bench train --config CONFIG --set run.total_timesteps=N --json OUT` and prints a side-by-side
table. When the engine binary is missing or fails, SB3's side is printed alone, and the table says so.

Measured for SB3 (one process; the clock runs around model.learn(), setup excluded):
  sps                   env steps / wall seconds of learn()
  rollout_sps           env steps / seconds inside collect_rollouts (env steps + policy forward)
  update_samples_per_s  n_epochs * n_steps * n_envs per iteration / seconds inside train()
  peak_rss_bytes        ru_maxrss of this process (DummyVecEnv: everything runs in it; with
                        SubprocVecEnv the workers' peak is reported as peak_rss_children_bytes);
                        rss_after_imports_bytes is the peak right after importing torch and SB3
                        (a CUDA build of torch alone accounts for several hundred MiB)
  ep_rew_mean           mean return of the last 100 finished episodes (Monitor), as SB3 logs it
The engine's peak RSS is also taken from os.wait4 on its process (peak_rss_bytes_wait4), besides
the value its JSON reports.

Usage:
  python bench/sb3_compare.py --config configs/cartpole.ini [--timesteps N] [--engine build/bin/ppo-bench]
                              [--json OUT.json] [--threads 1,2] [--vec dummy|subproc] [--set sec.key=value ...]
--set overrides a config key for both sides (and is passed to the engine as --set).
--sb3-from EARLIER.json reruns only the engine (e.g. --set run.precision=bf16) against the SB3 runs
stored in an earlier --json of the same training; the new JSON names that file in "sb3_source".
"""

from __future__ import annotations

import argparse
import configparser
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

# Defaults of ppo/config_schema.c for the keys this script reads (SB3's PPO defaults).
DEFAULTS = {
    "run": {"total_timesteps": "500_000", "seed": "1"},
    "env": {"type": "trading", "n_envs": "32"},
    "ppo": {"n_steps": "2048", "batch_size": "64", "n_epochs": "10", "learning_rate": "3e-4",
            "lr_schedule": "constant", "gamma": "0.99", "gae_lambda": "0.95", "clip_range": "0.2",
            "clip_range_vf": "none", "normalize_advantage": "true", "ent_coef": "0.0", "vf_coef": "0.5",
            "max_grad_norm": "0.5", "target_kl": "none", "adam_beta1": "0.9", "adam_beta2": "0.999",
            "adam_eps": "1e-5"},
    "policy": {"pi_layers": "64,64", "vf_layers": "64,64", "activation": "tanh", "ortho_init": "true"},
    "normalize": {"obs": "false", "reward": "false", "clip_obs": "10.0", "clip_reward": "10.0",
                  "epsilon": "1e-8"},
}

# [env] keys whose non-default values the numpy port does not model (see trading_env_np.py).
PORT_FIXED = {"exec": "next_open", "action_mode": "discrete3", "reward": "log_return", "long_only": "false",
              "shaping_turnover": "0", "shaping_drawdown": "0", "shaping_variance": "0", "shaping_flat": "0",
              "reward_clip": "none", "use_data_spread": "auto", "slippage_vol_k": "0",
              "slippage_random_max_bps": "0", "impact_y": "0", "random_initial_position": "false",
              "position_onehot": "false", "episode_progress": "false"}


# --- config --------------------------------------------------------------------------------------

class Config:
    """The INI as the engine reads it: ';' comments (also inline), '_' digit separators."""

    def __init__(self, path: str, overrides: list[str]):
        cp = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), comment_prefixes=(";", "#"),
                                       interpolation=None)
        with open(path) as f:
            cp.read_file(f)
        for item in overrides:
            key, _, value = item.partition("=")
            section, _, name = key.partition(".")
            if not cp.has_section(section):
                cp.add_section(section)
            cp.set(section, name, value)
        self.cp = cp

    def raw(self, section: str, key: str, default: str | None = None) -> str | None:
        if self.cp.has_option(section, key):
            return self.cp.get(section, key).strip()
        return DEFAULTS.get(section, {}).get(key, default)

    def int(self, section: str, key: str) -> int:
        return int(float(self.raw(section, key).replace("_", "")))

    def float(self, section: str, key: str) -> float:
        return float(self.raw(section, key).replace("_", ""))

    def opt_float(self, section: str, key: str) -> float | None:  # "none" / "auto" -> None
        v = self.raw(section, key)
        return None if v is None or v.lower() in ("none", "auto") else float(v.replace("_", ""))

    def opt_int(self, section: str, key: str) -> int | None:
        v = self.opt_float(section, key)
        return None if v is None else int(v)

    def bool(self, section: str, key: str) -> bool:
        return self.raw(section, key).lower() in ("true", "1", "yes", "on")

    def layers(self, key: str) -> list[int]:
        return [int(x) for x in self.raw("policy", key).replace(" ", "").split(",") if x]


def trading_config(cfg: Config):
    """[env] -> trading_env_np.TradingConfig; refuses keys the port does not model."""
    import trading_env_np as tenv

    for key, default in PORT_FIXED.items():
        v = cfg.raw("env", key)
        if v is not None and v.lower() != default:
            raise SystemExit(f"[env] {key} = {v}: the numpy port models only the default ({default})")
    model = (cfg.raw("env", "synthetic_model") or "ar1").lower()
    sp = tenv.SyntheticParams(model=model)
    for name in ("bars", "bar_seconds", "seed"):
        v = cfg.opt_int("env", f"synthetic_{name}")
        if v is not None:
            setattr(sp, name, v)
    for name in ("drift", "sigma", "rho", "switch_prob", "drift2", "sigma2"):
        v = cfg.opt_float("env", f"synthetic_{name}")
        if v is not None:
            setattr(sp, name, v)
    tc = tenv.TradingConfig(synthetic=sp)
    for name in ("max_leverage", "fee_fixed", "financing_long_apr", "financing_short_apr", "cost_mult",
                 "max_loss", "reward_scale", "half_spread_bps", "commission_bps", "slippage_bps",
                 "sigma_halflife"):
        v = cfg.opt_float("env", name)
        if v is not None:
            setattr(tc, name, v)
    for name in ("episode_length", "window", "warmup", "ema_fast", "ema_slow"):
        v = cfg.opt_int("env", name)
        if v is not None:
            setattr(tc, name, v)
    if cfg.raw("env", "stratified_starts") is not None:
        tc.stratified_starts = cfg.bool("env", "stratified_starts")
    return tc


# --- SB3 -----------------------------------------------------------------------------------------

def make_venv(cfg: Config, vec: str):
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecNormalize

    env_type = cfg.raw("env", "type").lower()
    n_envs = cfg.int("env", "n_envs")
    seed = cfg.int("run", "seed")
    if env_type == "cartpole":
        import gymnasium as gym

        fns = [lambda: Monitor(gym.make("CartPole-v1")) for _ in range(n_envs)]
    elif env_type == "synthetic":
        import trading_env_np as tenv

        ctx = tenv.TradingContext(trading_config(cfg))  # market + features once, shared by the envs
        fns = [(lambda f=f: Monitor(f())) for f in tenv.make_env_fns(n_envs, seed, ctx=ctx)]
    else:
        raise SystemExit(f"[env] type = {env_type}: SB3 side supports cartpole and synthetic only")
    venv = (SubprocVecEnv(fns, start_method="fork") if vec == "subproc" else DummyVecEnv(fns))
    if cfg.bool("normalize", "obs") or cfg.bool("normalize", "reward"):
        venv = VecNormalize(venv, norm_obs=cfg.bool("normalize", "obs"), norm_reward=cfg.bool("normalize", "reward"),
                            clip_obs=cfg.float("normalize", "clip_obs"),
                            clip_reward=cfg.float("normalize", "clip_reward"),
                            gamma=cfg.float("ppo", "gamma"), epsilon=cfg.float("normalize", "epsilon"))
    return venv


def run_sb3(cfg: Config, timesteps: int, threads: int, vec: str, device: str = "cpu") -> dict:
    import numpy as np
    import torch
    from torch import nn
    from stable_baselines3 import PPO

    torch.set_num_threads(threads)
    seed = cfg.int("run", "seed")
    rss_after_import = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # torch's own share

    class TimedPPO(PPO):
        """PPO with collect_rollouts and train timed separately."""

        rollout_s = 0.0
        train_s = 0.0
        iterations = 0

        def collect_rollouts(self, *a, **k):
            t0 = time.perf_counter()
            ok = super().collect_rollouts(*a, **k)
            self.rollout_s += time.perf_counter() - t0
            return ok

        def train(self):
            t0 = time.perf_counter()
            super().train()
            self.train_s += time.perf_counter() - t0
            self.iterations += 1

    t_setup = time.perf_counter()
    venv = make_venv(cfg, vec)
    lr = cfg.float("ppo", "learning_rate")
    schedule = lr if cfg.raw("ppo", "lr_schedule").lower() == "constant" else (lambda progress: lr * progress)
    act = {"tanh": nn.Tanh, "relu": nn.ReLU}[cfg.raw("policy", "activation").lower()]
    policy_kwargs = dict(
        net_arch=dict(pi=cfg.layers("pi_layers"), vf=cfg.layers("vf_layers")),
        activation_fn=act,
        ortho_init=cfg.bool("policy", "ortho_init"),
        optimizer_kwargs=dict(eps=cfg.float("ppo", "adam_eps"),
                              betas=(cfg.float("ppo", "adam_beta1"), cfg.float("ppo", "adam_beta2"))),
    )
    model = TimedPPO(
        "MlpPolicy", venv,
        learning_rate=schedule,
        n_steps=cfg.int("ppo", "n_steps"),
        batch_size=cfg.int("ppo", "batch_size"),
        n_epochs=cfg.int("ppo", "n_epochs"),
        gamma=cfg.float("ppo", "gamma"),
        gae_lambda=cfg.float("ppo", "gae_lambda"),
        clip_range=cfg.float("ppo", "clip_range"),
        clip_range_vf=cfg.opt_float("ppo", "clip_range_vf"),
        normalize_advantage=cfg.bool("ppo", "normalize_advantage"),
        ent_coef=cfg.float("ppo", "ent_coef"),
        vf_coef=cfg.float("ppo", "vf_coef"),
        max_grad_norm=cfg.float("ppo", "max_grad_norm"),
        target_kl=cfg.opt_float("ppo", "target_kl"),
        policy_kwargs=policy_kwargs,
        seed=seed,
        device=device,
        verbose=0,
    )
    setup_s = time.perf_counter() - t_setup
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    model.learn(total_timesteps=timesteps, progress_bar=False)
    wall = time.perf_counter() - t0
    n_envs, n_steps, n_epochs = model.n_envs, model.n_steps, model.n_epochs
    steps = model.num_timesteps
    eps = [e["r"] for e in model.ep_info_buffer]
    lens = [e["l"] for e in model.ep_info_buffer]
    venv.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "threads": threads,
        "device": device,
        "vec_env": vec,
        "timesteps": int(steps),
        "iterations": int(model.iterations),
        "n_envs": n_envs,
        "n_steps": n_steps,
        "n_epochs": n_epochs,
        "batch_size": model.batch_size,
        "setup_s": setup_s,
        "learn_s": wall,
        "rollout_s": model.rollout_s,
        "update_s": model.train_s,
        "sps": steps / wall,
        "rollout_sps": steps / model.rollout_s if model.rollout_s > 0 else float("nan"),
        "update_samples_per_s": (n_epochs * n_steps * n_envs * model.iterations / model.train_s
                                 if model.train_s > 0 else float("nan")),
        "peak_rss_bytes": usage.ru_maxrss * 1024,  # Linux reports kilobytes
        "peak_rss_children_bytes": children.ru_maxrss * 1024,
        "rss_after_imports_bytes": rss_after_import,
        "loadavg_before": load_before,  # other work on the machine skews the timings
        "loadavg_after": os.getloadavg(),
        "ep_rew_mean": float(np.mean(eps)) if eps else float("nan"),
        "ep_len_mean": float(np.mean(lens)) if lens else float("nan"),
        "episodes_in_buffer": len(eps),
        "versions": {"stable_baselines3": __import__("stable_baselines3").__version__, "torch": torch.__version__,
                     "numpy": np.__version__, "gymnasium": __import__("gymnasium").__version__,
                     "python": platform.python_version()},
    }


def run_sb3_isolated(args, threads: int) -> dict:
    """One SB3 run in a fresh interpreter, so peak RSS and thread settings do not leak between runs."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [sys.executable, os.path.abspath(__file__), "--config", args.config, "--timesteps", str(args.timesteps_eff),
           "--threads", str(threads), "--vec", args.vec, "--device", args.device, "--_sb3_child", out]
    for s in args.set:
        cmd += ["--set", s]
    if subprocess.run(cmd).returncode != 0:  # the child printed why
        os.unlink(out)
        sys.exit(2)
    with open(out) as f:
        res = json.load(f)
    os.unlink(out)
    return res


# --- engine --------------------------------------------------------------------------------------

def run_engine(args, timesteps: int) -> dict:
    engine = args.engine
    if not (os.path.isfile(engine) and os.access(engine, os.X_OK)):
        return {"status": f"missing: {engine} not found or not executable"}
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [engine, "train", "--config", args.config, "--set", f"run.total_timesteps={timesteps}"]
    for s in args.set:
        cmd += ["--set", s]
    cmd += ["--json", out]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    rc = os.waitstatus_to_exitcode(status)
    res = {"command": cmd, "rc": rc, "wall_s": wall, "peak_rss_bytes_wait4": usage.ru_maxrss * 1024,
           "output_tail": output[-4000:]}
    if rc != 0:
        res["status"] = f"failed: exit code {rc}"
        return res
    try:
        with open(out) as f:
            res.update(json.load(f))
        res["status"] = "ok"
    except (OSError, ValueError) as e:
        res["status"] = f"failed: no JSON from the engine ({e})"
    finally:
        if os.path.exists(out):
            os.unlink(out)
    return res


# --- report --------------------------------------------------------------------------------------

def fmt(v, unit: str = "") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if unit == "MiB":
        return f"{v / 2**20:,.1f} MiB"
    if isinstance(v, float):
        return f"{v:,.1f}" if abs(v) >= 100 else f"{v:.4g}"
    return f"{v:,}"


def table(sb3: dict, eng: dict) -> str:
    ok = eng.get("status") == "ok"
    rows = [("env steps/s (end to end)", "sps", ""), ("rollout env steps/s", "rollout_sps", ""),
            ("update samples/s", "update_samples_per_s", ""), ("peak RSS", "peak_rss_bytes", "MiB"),
            ("iterations", "iterations", ""), ("timesteps", "timesteps", ""),
            ("ep_rew_mean (last 100)", "ep_rew_mean", "")]
    lines = [f"{'metric':<26} {'SB3':>16} {'ppo-engine':>16} {'engine/SB3':>11}", "-" * 72]
    for label, key, unit in rows:
        a = sb3.get(key)
        b = eng.get(key) if ok else None
        ratio = "-"
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a and key not in ("iterations", "timesteps"):
            ratio = f"{b / a:.2f}x"
        lines.append(f"{label:<26} {fmt(a, unit):>16} {fmt(b, unit):>16} {ratio:>11}")
    if ok and "peak_rss_bytes_wait4" in eng:
        lines.append(f"{'peak RSS (wait4, engine)':<26} {'':>16} {fmt(eng['peak_rss_bytes_wait4'], 'MiB'):>16}")
    if not ok:
        lines.append(f"ppo-engine: {eng.get('status')} (SB3's side alone)")
    return "\n".join(lines)


def fail(message: str) -> None:
    print(f"sb3_compare.py: {message}", file=sys.stderr)
    sys.exit(2)


def reused_sb3(path: str, hp: dict, timesteps: int) -> list:
    """The SB3 runs of an earlier --json, after checking that it measured the same training: every
    config value equal except [run] precision and threads (engine-only settings), same timesteps."""
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"--sb3-from {path}: cannot read it ({e})")
    def strip(v):
        return {s: {k: x for k, x in kv.items() if not (s == "run" and k in ("precision", "threads"))}
                for s, kv in v.items()}
    if old.get("timesteps") != timesteps:
        fail(f"--sb3-from {path}: measured {old.get('timesteps')} timesteps, this run asks {timesteps}")
    if strip(old.get("config_values", {})) != strip(hp):
        fail(f"--sb3-from {path}: its configuration differs from this one (beyond [run] precision and threads)")
    if not old.get("sb3_runs"):
        fail(f"--sb3-from {path}: it holds no SB3 runs")
    for r in old["sb3_runs"]:
        r.setdefault("utc", old.get("host", {}).get("utc", "?"))
    return old["sb3_runs"]


def main() -> None:
    ap = argparse.ArgumentParser(description="SB3 PPO vs ppo-engine on the same config")
    ap.add_argument("--config", required=True)
    ap.add_argument("--timesteps", type=int, default=None, help="default: [run] total_timesteps")
    ap.add_argument("--engine", default=os.path.join(ROOT, "build", "bin", "ppo-bench"))
    ap.add_argument("--json", default=None, help="write SB3's and the engine's raw numbers here")
    ap.add_argument("--threads", default="1", help="torch threads for SB3; a list (1,2) tries each, keeps the fastest")
    ap.add_argument("--vec", choices=("dummy", "subproc"), default="dummy")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="SB3's torch device (cuda: the GPU rows; SB3 runs fp32, as its users do by default)")
    ap.add_argument("--set", action="append", default=[], help="section.key=value, for both sides")
    ap.add_argument("--no-engine", action="store_true", help="SB3's side only")
    ap.add_argument("--sb3-from", default=None, metavar="JSON",
                    help="reuse the SB3 side of an earlier --json of this script (same config apart from "
                         "[run] precision and threads, same timesteps) and run only the engine: the engine at "
                         "another precision against one SB3 measurement")
    ap.add_argument("--_sb3_child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()

    cfg = Config(args.config, args.set)
    args.timesteps_eff = args.timesteps if args.timesteps else cfg.int("run", "total_timesteps")

    if args._sb3_child:  # one isolated SB3 run (see run_sb3_isolated)
        res = run_sb3(cfg, args.timesteps_eff, int(args.threads), args.vec, args.device)
        with open(args._sb3_child, "w") as f:
            json.dump(res, f)
        return

    threads = [int(x) for x in args.threads.split(",") if x]
    hp = {s: dict(cfg.cp.items(s)) for s in cfg.cp.sections()}
    print(f"config {args.config}: env {cfg.raw('env', 'type')} x {cfg.int('env', 'n_envs')}, "
          f"n_steps {cfg.int('ppo', 'n_steps')}, batch {cfg.int('ppo', 'batch_size')}, "
          f"epochs {cfg.int('ppo', 'n_epochs')}, pi {cfg.layers('pi_layers')} vf {cfg.layers('vf_layers')} "
          f"{cfg.raw('policy', 'activation')}, timesteps {args.timesteps_eff}, cpus {os.cpu_count()}", flush=True)
    sb3_runs, sb3_source = [], None
    if args.sb3_from:
        sb3_runs, sb3_source = reused_sb3(args.sb3_from, hp, args.timesteps_eff), args.sb3_from
        threads = [r["threads"] for r in sb3_runs]
        print(f"SB3: reusing the measurement in {args.sb3_from} (measured {sb3_runs[0].get('utc', 'earlier')})")
    for k in ([] if args.sb3_from else threads):
        r = run_sb3_isolated(args, k)
        print(f"SB3 threads={k} vec={args.vec}: sps {r['sps']:.1f}, rollout {r['rollout_sps']:.1f} steps/s, "
              f"update {r['update_samples_per_s']:.1f} samples/s, peak RSS {r['peak_rss_bytes'] / 2**20:.1f} MiB, "
              f"ep_rew_mean {r['ep_rew_mean']:.4g} ({r['learn_s']:.1f} s)", flush=True)
        sb3_runs.append(r)
    best = max(sb3_runs, key=lambda r: r["sps"])
    eng = {"status": "skipped (--no-engine)"} if args.no_engine else run_engine(args, args.timesteps_eff)
    if eng.get("status") != "ok" and "output_tail" in eng:
        print(eng["output_tail"][-1500:], file=sys.stderr)
    print(f"\nSB3: fastest of threads {threads} = {best['threads']} ({best['vec_env']}VecEnv)")
    print(table(best, eng))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"config": args.config, "config_values": hp, "timesteps": args.timesteps_eff,
                       "host": {"cpus": os.cpu_count(), "machine": platform.machine(),
                                "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
                       "commit": source_commit(),
                       "sb3": best, "sb3_runs": sb3_runs, "sb3_source": sb3_source, "engine": eng}, f, indent=1)
        print(f"wrote {args.json}")


def source_commit():
    """The checkout's commit (12 digits), "+ uncommitted changes" when tracked files differ, or None
    outside a git checkout. The engine binary's own build (ppo-bench train --json's "build", in the
    engine section) is what its numbers belong to; the checkout may have moved on while SB3 ran."""
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "--no-optional-locks", "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + (" + uncommitted changes" if dirty else "")


if __name__ == "__main__":
    main()
