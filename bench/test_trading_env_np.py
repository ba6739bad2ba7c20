"""Self-check of bench/trading_env_np.py against the engine's C synthetic trading env.

Builds a throwaway C driver (outside the repo, in a temp dir) that links the static libraries of a
CMake build (default build/: envs/libppo_envs.a, common/libppo_common.a), runs the engine's VecEnv
over the default "synthetic" env with a fixed random action sequence, and writes every step's
observation, reward, flags, final observation and the episode logs. The Python port runs the same
actions and must give the same float32 values.

Run: python bench/test_trading_env_np.py [--build build] [--envs 4] [--steps 6000] [--bars 100000]
(also collectable by pytest: test_matches_c_env). Needs gcc, libhdf5 (serial), zlib and OpenMP.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import trading_env_np as tenv  # noqa: E402

DRIVER_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include "envs/synthetic.h"
#include "envs/features.h"
#include "envs/trading_env.h"
#include "envs/vecenv.h"
// usage: drv SEED N_ENVS STEPS ACTIONS.bin OUT.bin BARS SIGMA
int main(int argc, char **argv) {
  if (argc < 8) return 2;
  uint64_t seed = strtoull(argv[1], 0, 10);
  int n = atoi(argv[2]), steps = atoi(argv[3]);
  SyntheticParams sp = synthetic_params_default();
  sp.bars = atoll(argv[6]);
  sp.sigma = strtod(argv[7], 0);
  MarketData *d = synthetic_market_new(&sp);
  FeatureParams fp = features_params_default();
  if (!d || features_params_resolve(&fp, d) != 0) return 1;
  Features *f = features_compute(d, &fp);
  TradingParams tp = trading_params_default();
  TradingContext ctx;
  if (trading_context_init(&ctx, d, f, &tp) != 0) return 1;
  VecEnv *v = vecenv_init(&synthetic_kind, NULL, &ctx, n, seed, 100000, 1);
  int O = ctx.obs_dim;
  int32_t *acts = malloc(sizeof(int32_t) * (size_t)n * steps);
  FILE *fa = fopen(argv[4], "rb");
  if (!fa || fread(acts, sizeof(int32_t), (size_t)n * steps, fa) != (size_t)n * steps) return 1;
  fclose(fa);
  float *obs = calloc((size_t)n * O, 4), *fin = calloc((size_t)n * O, 4), *rew = calloc(n, 4);
  uint8_t *te = calloc(n, 1), *tr = calloc(n, 1);
  FILE *fo = fopen(argv[5], "wb");
  fwrite(&O, 4, 1, fo);
  vecenv_reset(v, obs);
  fwrite(obs, 4, (size_t)n * O, fo);
  for (int s = 0; s < steps; s++) {
    VecEnvBuffers b = {acts + (size_t)s * n, obs, rew, te, tr, fin};
    vecenv_step(v, &b);
    fwrite(obs, 4, (size_t)n * O, fo);
    fwrite(rew, 4, n, fo);
    fwrite(te, 1, n, fo);
    fwrite(tr, 1, n, fo);
    for (int i = 0; i < n; i++)
      if (te[i] | tr[i]) fwrite(fin + (size_t)i * O, 4, O, fo);
  }
  int lc = vecenv_log_count(v);
  fwrite(&lc, 4, 1, fo);
  for (int k = 0; k < lc; k++) fwrite(vecenv_log_get(v, k), 4, TRADING_LOG_SIZE, fo);
  fclose(fo);
  return 0;
}
"""


# The compiler and the HDF5 link arguments (ctest passes CMake's: --cc, --hdf5); these defaults are
# Debian x86_64's.
CC = "gcc"
HDF5_LINK = ["-L/usr/lib/x86_64-linux-gnu/hdf5/serial", "-lhdf5"]


def build_driver(build_dir: str, out_dir: str) -> str:
    src = os.path.join(out_dir, "drv.c")
    exe = os.path.join(out_dir, "drv")
    with open(src, "w") as f:
        f.write(DRIVER_C)
    libs = [os.path.join(build_dir, "envs", "libppo_envs.a"), os.path.join(build_dir, "common", "libppo_common.a")]
    for lib in libs:
        if not os.path.exists(lib):
            raise FileNotFoundError(f"{lib} missing: build the engine first (cmake --build {build_dir})")
    cmd = [CC, "-std=c11", "-O2", "-fopenmp", f"-I{ROOT}", f"-I{ROOT}/common", src, *libs,
           *HDF5_LINK, "-lz", "-lm", "-o", exe]
    subprocess.run(cmd, check=True)
    return exe


def run_c(exe: str, seed: int, n: int, steps: int, actions: np.ndarray, bars: int, sigma: float, tmp: str):
    apath, opath = os.path.join(tmp, "actions.bin"), os.path.join(tmp, "out.bin")
    actions.astype(np.int32).tofile(apath)
    subprocess.run([exe, str(seed), str(n), str(steps), apath, opath, str(bars), repr(sigma)],
                   check=True)
    raw = open(opath, "rb").read()
    pos = 0

    def take(dtype, count):
        nonlocal pos
        arr = np.frombuffer(raw, dtype=dtype, count=count, offset=pos)
        pos += arr.nbytes
        return arr

    O = int(take(np.int32, 1)[0])
    obs0 = take(np.float32, n * O).reshape(n, O)
    steps_out = []
    for _ in range(steps):
        obs = take(np.float32, n * O).reshape(n, O)
        rew = take(np.float32, n)
        te = take(np.uint8, n)
        tr = take(np.uint8, n)
        fins = {int(i): take(np.float32, O) for i in np.nonzero(te | tr)[0]}
        steps_out.append((obs, rew, te, tr, fins))
    lc = int(take(np.int32, 1)[0])
    logs = take(np.float32, lc * len(tenv.LOG_NAMES)).reshape(lc, -1)
    return O, obs0, steps_out, logs


def compare(seed: int = 3, n: int = 4, steps: int = 6000, bars: int = 100_000, sigma: float = 0.001,
            build_dir: str | None = None, verbose: bool = True, flat: bool = False) -> dict:
    """Runs both envs on the same actions; sigma > ~0.01 makes max-loss terminations happen; flat
    holds level 1 (no position) throughout, so no episode closes a trade (hit rate NaN)."""
    build_dir = build_dir or os.path.join(ROOT, "build")
    rng = np.random.default_rng(seed)
    # Sticky random actions (hold a level for a geometric number of bars), so that positions are
    # held, flipped and closed, and some episodes end while in a position (forced close).
    actions = np.empty((steps, n), dtype=np.int32)
    cur = rng.integers(0, 3, size=n)
    for s in range(steps):
        change = rng.random(n) < 0.1
        cur = np.where(change, rng.integers(0, 3, size=n), cur)
        actions[s] = 1 if flat else cur
    with tempfile.TemporaryDirectory() as tmp:
        exe = build_driver(build_dir, tmp)
        O, obs0, c_steps, c_logs = run_c(exe, seed, n, steps, actions, bars, sigma, tmp)

    cfg = tenv.TradingConfig(synthetic=tenv.SyntheticParams(bars=bars, sigma=sigma))
    ctx = tenv.TradingContext(cfg)
    assert ctx.obs_dim == O, (ctx.obs_dim, O)
    envs = [tenv.TradingEnvCore(ctx, i, n, seed) for i in range(n)]
    py_obs0 = np.stack([e.reset() for e in envs])
    max_obs = float(np.max(np.abs(py_obs0 - obs0)))
    max_rew = 0.0
    flag_mismatch = 0
    episodes = terminations = 0
    py_logs = []
    for s in range(steps):
        c_obs, c_rew, c_te, c_tr, c_fins = c_steps[s]
        for i, e in enumerate(envs):
            obs, r, te, tr, log = e.step(int(actions[s, i]))
            if te != bool(c_te[i]) or tr != bool(c_tr[i]):
                flag_mismatch += 1
            max_rew = max(max_rew, abs(float(r) - float(c_rew[i])))
            if te or tr:
                episodes += 1
                terminations += te
                py_logs.append([log[k] for k in tenv.LOG_NAMES])
                if i in c_fins:
                    max_obs = max(max_obs, float(np.max(np.abs(obs - c_fins[i]))))
                obs = e.reset()
            max_obs = max(max_obs, float(np.max(np.abs(obs - c_obs[i]))))
    py_logs = np.array(py_logs, dtype=np.float32).reshape(-1, len(tenv.LOG_NAMES))
    # The C ring holds the logs in env-index order within a step; so does the Python loop.
    # NaN (a field without a value: hit rate with no closed trade) must meet NaN
    if len(c_logs) == len(py_logs) and len(py_logs):
        both_nan = np.isnan(py_logs) & np.isnan(c_logs)
        diff = np.where(both_nan, 0.0, np.abs(py_logs - c_logs))
        max_log = float(np.max(np.where(np.isnan(diff), np.inf, diff)))
    else:
        max_log = 0.0 if len(c_logs) == len(py_logs) else float("inf")
    res = dict(steps=steps, envs=n, sigma=sigma, episodes=episodes, terminations=terminations, obs_dim=O, max_abs_obs_diff=max_obs,
               max_abs_reward_diff=max_rew, flag_mismatches=flag_mismatch, c_episodes=len(c_logs),
               max_abs_log_diff=max_log)
    if verbose:
        print(res)
    return res


def _ok(res: dict) -> bool:
    return (res["flag_mismatches"] == 0 and res["episodes"] == res["c_episodes"] > 0
            and res["max_abs_obs_diff"] == 0.0 and res["max_abs_reward_diff"] == 0.0
            and res["max_abs_log_diff"] <= 1e-6)


def test_matches_c_env():
    assert _ok(compare(steps=3000, n=3))


def test_matches_c_env_without_trades():
    res = compare(steps=3000, n=2, flat=True)
    assert res["episodes"] > 0
    assert _ok(res)


def test_matches_c_env_with_terminations():
    res = compare(steps=3000, n=3, sigma=0.02)
    assert res["terminations"] > 0
    assert _ok(res)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=None)
    ap.add_argument("--envs", type=int, default=4)
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--bars", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--sigma", type=float, nargs="+", default=[0.001, 0.02],
                    help="synthetic_sigma values to run (0.02: max-loss terminations happen)")
    ap.add_argument("--cc", default=None, help="the C compiler (default gcc)")
    ap.add_argument("--hdf5", default=None,
                    help="HDF5's libraries, ';'-separated (CMake's HDF5_C_LIBRARIES); default Debian's -lhdf5")
    a = ap.parse_args()
    if a.cc:
        CC = a.cc
    if a.hdf5:
        HDF5_LINK = [lib for lib in a.hdf5.split(";") if lib]
    ok = True
    for sig in a.sigma:
        ok &= _ok(compare(a.seed, a.envs, a.steps, a.bars, sig, a.build))
    print("PASS: bit-exact observations, rewards, flags; episode logs within 1e-6" if ok else "FAIL")
    sys.exit(0 if ok else 1)
