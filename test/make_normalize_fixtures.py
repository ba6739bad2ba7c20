#!/usr/bin/env python3
"""test/make_normalize_fixtures.py: Stable-Baselines3's own VecNormalize on a replayed stream, for
test/test_normalize.c.

Regenerate (writes test/data/normalize_fixture.h5, about 75 KB):
    python3 -m venv /tmp/normvenv
    /tmp/normvenv/bin/pip install numpy h5py gymnasium cloudpickle
    /tmp/normvenv/bin/pip install --no-deps stable-baselines3      # torch is not needed, see below
    /tmp/normvenv/bin/python test/make_normalize_fixtures.py test/data/normalize_fixture.h5
Generated with stable-baselines3 2.9.2, numpy 2.4.6, gymnasium 1.4.0, h5py 3.16.0, Python 3.11.7;
the versions actually used are stored in the file's root attributes.

The class under test is SB3's real VecNormalize wrapping ReplayVecEnv, a VecEnv subclass that hands
back recorded observations, rewards, dones and terminal observations. stable_baselines3/__init__.py
imports torch (through the algorithms), which VecNormalize does not use: when torch is missing we
register the packages stable_baselines3, .common and .common.vec_env without running their
__init__ files, and stand-ins for the two torch-importing modules vec_normalize.py imports:
common.utils (check_shape_equal, used only by set_venv) and common.preprocessing (is_image_space,
copied: False for our float32 spaces). vec_normalize.py, running_mean_std.py and base_vec_env.py
are SB3's own files either way. Root attribute `torch_shim` says which path ran.

Layout: one group per case (a: N=4, O=5, 50 steps; b: N=16, O=1, pairwise sums, tight clips;
c: N=12, O=3, norm_reward off). Each group holds attributes num_envs, obs_dim, steps, norm_obs,
norm_reward (0/1), clip_obs, clip_reward, epsilon, gamma, and datasets
    reset_obs (N, O) f32 -> reset_obs_norm            VecNormalize.reset()
    obs (T, N, O) f32, rewards (T, N) f32, dones (T, N) u8, training (T) u8 (0 = frozen step),
    final_obs (T, N, O) f32 (terminal observation where done, else 0)
    -> obs_norm, rewards_norm, final_obs_norm         step_wait() outputs (final_obs_norm 0 where not done)
    obs_mean_t, obs_var_t (T, O) f64; obs_count_t, ret_mean_t, ret_var_t, ret_count_t (T) f64;
    returns_t (T, N) f64                              statistics after each step
    obs_mean, obs_var (O), obs_count, ret_mean, ret_var, ret_count (1), returns (N) f64: final state.
"""
import importlib.util
import os
import sys
import types

import gymnasium
import h5py
import numpy as np
from gymnasium import spaces


def import_vec_normalize():
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        from stable_baselines3.common.vec_env import VecEnv, VecNormalize
        return VecEnv, VecNormalize, False
    spec = importlib.util.find_spec("stable_baselines3")
    root = os.path.dirname(spec.origin)
    for name, path in [("stable_baselines3", root), ("stable_baselines3.common", os.path.join(root, "common")),
                       ("stable_baselines3.common.vec_env", os.path.join(root, "common", "vec_env"))]:
        pkg = types.ModuleType(name)
        pkg.__path__ = [path]
        sys.modules[name] = pkg
    utils = types.ModuleType("stable_baselines3.common.utils")
    utils.check_shape_equal = lambda a, b: None
    pre = types.ModuleType("stable_baselines3.common.preprocessing")

    def is_image_space(space, check_channels=False, normalized_image=False):
        if isinstance(space, spaces.Box) and len(space.shape) == 3:
            raise NotImplementedError("image spaces are not part of this fixture")
        return False

    pre.is_image_space = is_image_space
    sys.modules[utils.__name__] = utils
    sys.modules[pre.__name__] = pre
    from stable_baselines3.common.vec_env.base_vec_env import VecEnv
    from stable_baselines3.common.vec_env.vec_normalize import VecNormalize
    return VecEnv, VecNormalize, True


VecEnv, VecNormalize, TORCH_SHIM = import_vec_normalize()


class ReplayVecEnv(VecEnv):
    """Hands back a recorded stream: reset() -> reset_obs, step t -> obs[t], rewards[t], dones[t]."""

    def __init__(self, reset_obs, obs, rewards, dones, final_obs):
        n, o = reset_obs.shape
        super().__init__(n, spaces.Box(-np.inf, np.inf, (o,), np.float32), spaces.Discrete(2))
        self.reset_obs, self.obs, self.rewards, self.dones, self.final_obs = reset_obs, obs, rewards, dones, final_obs
        self.t = 0

    def reset(self):
        self.t = 0
        return self.reset_obs.copy()

    def step_async(self, actions):
        pass

    def step_wait(self):
        t = self.t
        self.t += 1
        infos = [{} for _ in range(self.num_envs)]
        for i in range(self.num_envs):
            if self.dones[t, i]:
                infos[i]["terminal_observation"] = self.final_obs[t, i].copy()
        return self.obs[t].copy(), self.rewards[t].copy(), self.dones[t].astype(bool), infos

    def close(self):
        pass

    def get_attr(self, attr_name, indices=None):
        return [None] * self.num_envs

    def set_attr(self, attr_name, value, indices=None):
        pass

    def env_method(self, method_name, *args, indices=None, **kwargs):
        return [None] * self.num_envs

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False] * self.num_envs


def make_case(group, rng, n, o, steps, frozen_from, norm_obs, norm_reward, clip_obs, clip_reward, gamma):
    eps = 1e-8
    offset = rng.normal(0, 5, o)
    scale = np.exp(rng.normal(0, 1.5, o))
    def draw(shape):
        x = offset + scale * rng.standard_normal(shape)
        outlier = rng.random(shape) < 0.03  # values far out, to hit the clip
        return np.where(outlier, x * 40, x).astype(np.float32)
    reset_obs = draw((n, o))
    obs = draw((steps, n, o))
    final_obs = draw((steps, n, o))
    rewards = (rng.normal(0.3, 2.0, (steps, n)) * np.where(rng.random((steps, n)) < 0.05, 30, 1)).astype(np.float32)
    dones = (rng.random((steps, n)) < 0.1).astype(np.uint8)
    final_obs[dones == 0] = 0
    training = (np.arange(steps) < frozen_from).astype(np.uint8)

    venv = VecNormalize(ReplayVecEnv(reset_obs, obs, rewards, dones, final_obs), training=True, norm_obs=norm_obs,
                        norm_reward=norm_reward, clip_obs=clip_obs, clip_reward=clip_reward, gamma=gamma, epsilon=eps)
    reset_norm = venv.reset()
    out = {k: [] for k in ["obs_norm", "rewards_norm", "final_obs_norm", "obs_mean_t", "obs_var_t", "obs_count_t",
                           "ret_mean_t", "ret_var_t", "ret_count_t", "returns_t"]}
    for t in range(steps):
        venv.training = bool(training[t])
        venv.step_async(np.zeros(n, dtype=np.int64))
        o_norm, r_norm, d, infos = venv.step_wait()
        assert o_norm.dtype == np.float32 and r_norm.dtype == np.float32
        f = np.zeros((n, o), np.float32)
        for i in range(n):
            if d[i]:
                f[i] = infos[i]["terminal_observation"]
        out["obs_norm"].append(o_norm)
        out["rewards_norm"].append(r_norm)
        out["final_obs_norm"].append(f)
        out["obs_mean_t"].append(venv.obs_rms.mean.copy())
        out["obs_var_t"].append(venv.obs_rms.var.copy())
        out["obs_count_t"].append(venv.obs_rms.count)
        out["ret_mean_t"].append(float(venv.ret_rms.mean))
        out["ret_var_t"].append(float(venv.ret_rms.var))
        out["ret_count_t"].append(venv.ret_rms.count)
        out["returns_t"].append(venv.returns.copy())

    g = group
    for k, v in dict(num_envs=n, obs_dim=o, steps=steps, norm_obs=int(norm_obs), norm_reward=int(norm_reward)).items():
        g.attrs[k] = np.int64(v)
    for k, v in dict(clip_obs=clip_obs, clip_reward=clip_reward, epsilon=eps, gamma=gamma).items():
        g.attrs[k] = np.float64(v)
    def put(name, arr, dtype):
        arr = np.asarray(arr, dtype=dtype)
        if arr.ndim == 0:
            arr = arr.reshape(1)
        if arr.size >= 64:  # chunk indexes cost more than they save on the tiny ones
            g.create_dataset(name, data=arr, compression="gzip", compression_opts=9, shuffle=True)
        else:
            g.create_dataset(name, data=arr)
    put("reset_obs", reset_obs, np.float32)
    put("reset_obs_norm", reset_norm, np.float32)
    put("obs", obs, np.float32)
    put("rewards", rewards, np.float32)
    put("dones", dones, np.uint8)
    put("training", training, np.uint8)
    put("final_obs", final_obs, np.float32)
    for k in ["obs_norm", "rewards_norm", "final_obs_norm"]:
        put(k, np.stack(out[k]), np.float32)
    for k in ["obs_mean_t", "obs_var_t", "obs_count_t", "ret_mean_t", "ret_var_t", "ret_count_t", "returns_t"]:
        put(k, np.stack(out[k]) if k in ("obs_mean_t", "obs_var_t", "returns_t") else np.array(out[k]), np.float64)
    put("obs_mean", venv.obs_rms.mean, np.float64)
    put("obs_var", venv.obs_rms.var, np.float64)
    put("obs_count", venv.obs_rms.count, np.float64)
    put("ret_mean", venv.ret_rms.mean, np.float64)
    put("ret_var", venv.ret_rms.var, np.float64)
    put("ret_count", venv.ret_rms.count, np.float64)
    put("returns", venv.returns, np.float64)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "test/data/normalize_fixture.h5"
    import stable_baselines3
    rng = np.random.default_rng(20240611)
    with h5py.File(path, "w", libver=("v110", "v110")) as f:  # HDF5 >= 1.10 reads it
        f.attrs["generator"] = "test/make_normalize_fixtures.py"
        f.attrs["stable_baselines3"] = stable_baselines3.__version__ if hasattr(stable_baselines3, "__version__") else \
            open(os.path.join(stable_baselines3.__path__[0], "version.txt")).read().strip()
        f.attrs["numpy"] = np.__version__
        f.attrs["gymnasium"] = gymnasium.__version__
        f.attrs["h5py"] = h5py.__version__
        f.attrs["python"] = sys.version.split()[0]
        f.attrs["torch_shim"] = np.int64(TORCH_SHIM)
        make_case(f.create_group("a"), rng, 4, 5, 50, 40, True, True, 10.0, 10.0, 0.99)
        make_case(f.create_group("b"), rng, 16, 1, 30, 24, True, True, 1.5, 1.0, 0.9)
        make_case(f.create_group("c"), rng, 12, 3, 20, 20, True, False, 10.0, 10.0, 0.95)
    print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
