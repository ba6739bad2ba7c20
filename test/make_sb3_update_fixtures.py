#!/usr/bin/env python3
"""test/make_sb3_update_fixtures.py: one whole PPO update by Stable-Baselines3, for test/test_ppo_sb3.c.

Regenerate (CPU PyTorch, Stable-Baselines3 and gymnasium; the versions used are stored as attributes
of the file's root):

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch numpy h5py stable-baselines3 gymnasium
    /tmp/torchvenv/bin/python test/make_sb3_update_fixtures.py test/data/sb3_update_fixture.h5

What it computes: SB3's PPO.train() itself (stable_baselines3/ppo/ppo.py, unmodified), from a
rollout buffer filled here, on SB3's own MlpPolicy. Each case:
  - builds PPO("MlpPolicy") with the case's hyperparameters on a placeholder env of the case's
    observation and action spaces (the env never steps: the buffer is filled by hand);
  - fills the RolloutBuffer with rb.add() the way collect_rollouts does: random observations and
    rewards, episode starts at random, actions, values and log-probs from the policy itself
    (policy.forward, sampling); then compute_returns_and_advantage with random last values and dones;
  - replaces np.random.permutation, which RolloutBuffer.get() calls once per epoch, by the
    engine's permutation of that epoch (Philox4x32-10 of common/rng.h, ported below, mapped from
    the engine's time-major rows t N + n to SB3's env-major rows n T + t), so that both take the
    same minibatches in the same order;
  - runs model.train() once and records its logged values and the parameters after it.
The C test loads the case's configuration text (attribute `config`), opens a Trainer, uploads the
same parameters and buffer, runs trainer_learn (GAE, every epoch, the statistics) and compares.

Cases: `cartpole`: CartPole's spaces (4 observations, 2 discrete actions), [64,64] actor and critic,
  4 envs x 32 steps, 4 epochs of 4 minibatches of 32, lr 3e-3, ent_coef 0, no value clipping, no
  target_kl;
  `gauss`: the synthetic trading env's spaces with continuous actions (O observations, 1 Gaussian
  action), actor [32,32] and critic [16], 4 envs x 32 steps, minibatches of 48 (the last of each
  epoch 32), up to 6 epochs, lr 1e-2, ent_coef 0.01, clip_range_vf 0.2, and a target_kl chosen from a
  dry run so that the KL check stops the update inside its third epoch or later.

Layout: group per case; attrs config (INI text), T, N, O, A, gaussian, sb3 logged values
(policy_gradient_loss, value_loss, entropy_loss, approx_kl, clip_fraction, loss,
explained_variance, n_updates, std where Gaussian), early_stop_minibatch (-1: none); datasets
(float32): obs (T, N, O), actions (T, N, A), log_probs, values, rewards, episode_starts (T, N),
last_values, last_dones (N), advantages, returns (T, N) as SB3 computed them, params_before and
params_after (the engine's slab order: actor layers (weight (out, in), bias) with the action head
last, critic layers with the value head last, log_std), perm0 (T N) int32, the first epoch's
permutation in the engine's rows (the C test checks its own against it).
"""
import os
import sys

import gymnasium as gym
import h5py
import numpy as np
import stable_baselines3
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF


# --- the engine's random numbers (common/rng.h), for the permutations ---------------------------------------

def splitmix64_next(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def rng_stream_seed(base_seed, stream):
    sm = (base_seed ^ ((0xD1B54A32D192ED03 * (stream + 1)) & M64)) & M64
    return splitmix64_next(sm)[1]


def philox_u32(seed, subsequence, offset):
    block = offset >> 2
    c = [block & M32, (block >> 32) & M32, subsequence & M32, (subsequence >> 32) & M32]
    k0, k1 = seed & M32, (seed >> 32) & M32
    for r in range(10):
        if r > 0:
            k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & M32, (p0 >> 32) ^ c[3] ^ k1, p0 & M32]
    return c[offset & 3]


TRAINER_STREAM_SAMPLE = 3       # ppo/trainer.h
TRAINER_SUBSEQ_PERMUTATION = 1  # ppo/trainer.h (rank 0)


def engine_permutation(run_seed, draw, n):
    """rollout_permute of epoch `draw`: rows sorted stably by their Philox keys (backend_permutation)."""
    seed = rng_stream_seed(run_seed, TRAINER_STREAM_SAMPLE)
    keys = [philox_u32(seed, TRAINER_SUBSEQ_PERMUTATION, draw * n + i) for i in range(n)]
    return np.array(sorted(range(n), key=lambda i: (keys[i], i)), dtype=np.int64)


# --- SB3 -------------------------------------------------------------------------------------------------------

class Placeholder(gym.Env):
    """The case's spaces; never stepped."""

    def __init__(self, O, A, gaussian):
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (O,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (A,), np.float32) if gaussian else gym.spaces.Discrete(A)
        self.O = O

    def reset(self, seed=None, options=None):
        return np.zeros(self.O, np.float32), {}

    def step(self, action):
        return np.zeros(self.O, np.float32), 0.0, False, False, {}


def slab(policy, gaussian):
    """The parameters in the engine's slab order (nn/policy.h)."""
    ex = policy.mlp_extractor
    tensors = []
    for body, head in ((ex.policy_net, policy.action_net), (ex.value_net, policy.value_net)):
        for m in list(body) + [head]:
            if isinstance(m, th.nn.Linear):
                tensors += [m.weight, m.bias]
    if gaussian:
        tensors.append(policy.log_std)
    return np.concatenate([t.detach().numpy().astype(np.float32).ravel() for t in tensors])


def build(case, target_kl):
    T, N, O, A, g = case["T"], case["N"], case["O"], case["A"], case["gaussian"]
    env = DummyVecEnv([lambda: Placeholder(O, A, g) for _ in range(N)])
    model = PPO("MlpPolicy", env, n_steps=T, batch_size=case["B"], n_epochs=case["epochs"],
                learning_rate=case["lr"], gamma=0.99, gae_lambda=0.95, clip_range=0.2,
                clip_range_vf=case["clip_range_vf"], ent_coef=case["ent_coef"], vf_coef=0.5,
                max_grad_norm=0.5, target_kl=target_kl, seed=case["torch_seed"], device="cpu",
                policy_kwargs=dict(net_arch=dict(pi=case["pi"], vf=case["vf"]), activation_fn=th.nn.Tanh))
    model.set_logger(Logger(None, []))
    return model


def fill(model, case):
    """The buffer as collect_rollouts leaves it, from the case's own random numbers."""
    T, N, O = case["T"], case["N"], case["O"]
    rng = np.random.default_rng(case["data_seed"])
    th.manual_seed(case["data_seed"])
    rb = model.rollout_buffer
    rb.reset()
    obs = rng.standard_normal((T, N, O)).astype(np.float32)
    rewards = (0.5 * rng.standard_normal((T, N))).astype(np.float32)
    starts = (rng.random((T, N)) < 0.1).astype(np.float32)
    starts[0] = 1.0  # SB3's first rollout: _last_episode_starts = ones
    with th.no_grad():
        for t in range(T):
            actions, values, log_probs = model.policy(th.as_tensor(obs[t]))
            rb.add(obs[t], actions.numpy(), rewards[t], starts[t], values, log_probs)
        last_obs = rng.standard_normal((N, O)).astype(np.float32)
        last_values = model.policy.predict_values(th.as_tensor(last_obs))
    last_dones = (rng.random(N) < 0.3)
    rb.compute_returns_and_advantage(last_values=last_values, dones=last_dones)
    return dict(last_values=last_values.numpy().ravel().astype(np.float32),
                last_dones=last_dones.astype(np.float32))


def train(case, target_kl):
    """A fresh model and buffer (the same every call), SB3's train() on the engine's permutations."""
    model = build(case, target_kl)
    extra = fill(model, case)
    rb = model.rollout_buffer
    for k in ("observations", "actions", "log_probs", "values", "rewards", "episode_starts", "advantages",
              "returns"):
        extra[k] = getattr(rb, k).copy()  # (T, N, ...): get() flattens the buffer in place
    T, N = case["T"], case["N"]
    perms = [engine_permutation(case["run_seed"], e, T * N) for e in range(case["epochs"])]
    env_major = iter([(p % N) * T + p // N for p in perms])  # row t N + n -> SB3's n T + t
    kls = []
    original = np.random.permutation
    np.random.permutation = lambda n: next(env_major)
    before = slab(model.policy, case["gaussian"])
    # approx_kl per minibatch, as train() computes it, from the log-probs of evaluate_actions (called
    # once per minibatch) and the minibatch's old log-probs
    evaluate, get = model.policy.evaluate_actions, model.rollout_buffer.get
    old = {}

    def evaluate_spy(obs, actions):
        values, log_prob, entropy = evaluate(obs, actions)
        log_ratio = log_prob.detach() - old["log_prob"]
        kls.append(float(th.mean((th.exp(log_ratio) - 1) - log_ratio)))
        return values, log_prob, entropy

    def get_spy(batch_size):
        for data in get(batch_size):
            old["log_prob"] = data.old_log_prob
            yield data

    model.policy.evaluate_actions = evaluate_spy
    model.rollout_buffer.get = get_spy
    try:
        model.train()
    finally:
        np.random.permutation = original
    logged = dict(model.logger.name_to_value)
    return model, before, extra, perms, logged, kls


def case_config(case, target_kl):
    env = case["env_ini"]
    kl = "none" if target_kl is None else repr(target_kl)
    vf = "none" if case["clip_range_vf"] is None else repr(case["clip_range_vf"])
    return ("[run]\nname = sb3\nseed = %d\ndevice = cpu\nthreads = 1\nprecision = fp32\n%s"
            "[ppo]\nn_steps = %d\nbatch_size = %d\nn_epochs = %d\nlearning_rate = %r\ngamma = 0.99\n"
            "gae_lambda = 0.95\nclip_range = 0.2\nclip_range_vf = %s\nent_coef = %r\nvf_coef = 0.5\n"
            "max_grad_norm = 0.5\ntarget_kl = %s\nnormalize_advantage = true\n"
            "[policy]\npi_layers = %s\nvf_layers = %s\nactivation = tanh\n"
            % (case["run_seed"], env, case["T"], case["B"], case["epochs"], case["lr"], vf, case["ent_coef"], kl,
               ",".join(map(str, case["pi"])), ",".join(map(str, case["vf"]))))


CASES = {
    "cartpole": dict(env_ini="[env]\ntype = cartpole\nn_envs = 4\n", O=4, A=2, gaussian=False, T=32, N=4, B=32,
                     epochs=4, lr=3e-3, ent_coef=0.0, clip_range_vf=None, pi=[64, 64], vf=[64, 64], run_seed=11,
                     torch_seed=0, data_seed=1, kl_stop=False),
    # O = 69: the synthetic env's observation of window 4 (the C test checks it against its env)
    "gauss": dict(env_ini="[env]\ntype = synthetic\nsynthetic_bars = 6000\nn_envs = 4\nepisode_length = 50\n"
                          "window = 4\naction_mode = continuous\n",
                  O=69, A=1, gaussian=True, T=32, N=4, B=48, epochs=6,
                  lr=1e-2, ent_coef=0.01, clip_range_vf=0.2, pi=[32, 32], vf=[16], run_seed=5, torch_seed=1,
                  data_seed=2, kl_stop=True),
}


def pick_target_kl(kls, per_epoch):
    """A target_kl whose 1.5 x is first exceeded at a minibatch of the third epoch or later: 1.5 x target_kl
    lies 5 % below that minibatch's approx_kl and at least 10 % above every earlier one, so that float
    rounding cannot move the stop but a limit 10 % off (another factor than 1.5) does."""
    for j in range(2 * per_epoch, len(kls)):
        if kls[j] > 1.155 * max(kls[:j]):
            return kls[j] / 1.05 / 1.5, j
    raise SystemExit("no minibatch's approx_kl stands 15.5 %% above all before it: %s" % kls)


def main():
    out = sys.argv[1]
    with h5py.File(out + ".tmp", "w") as f:
        f.attrs["torch_version"] = str(th.__version__)
        f.attrs["stable_baselines3_version"] = str(stable_baselines3.__version__)
        f.attrs["numpy_version"] = str(np.__version__)
        f.attrs["generator"] = "test/make_sb3_update_fixtures.py"
        for name, case in CASES.items():
            target_kl, stop = None, -1
            per_epoch = -(-case["T"] * case["N"] // case["B"])
            if case["kl_stop"]:
                _, _, _, _, _, kls = train(case, None)
                target_kl, stop = pick_target_kl(kls, per_epoch)
            model, before, extra, perms, logged, kls = train(case, target_kl)
            if case["kl_stop"]:
                assert len(kls) == stop + 1, (len(kls), stop)
            T, N, O = case["T"], case["N"], case["O"]
            g = f.create_group(name)
            g.attrs["config"] = case_config(case, target_kl)
            for k in ("T", "N", "O", "A"):
                g.attrs[k] = case[k]
            g.attrs["gaussian"] = int(case["gaussian"])
            g.attrs["early_stop_minibatch"] = stop
            g.attrs["minibatches"] = len(kls)
            for key, value in logged.items():
                if key.startswith("train/"):
                    g.attrs[key[len("train/"):]] = float(value)
            A = case["A"] if case["gaussian"] else 1
            shapes = dict(obs=(T, N, O), actions=(T, N, A), log_probs=(T, N), values=(T, N), rewards=(T, N),
                          episode_starts=(T, N), advantages=(T, N), returns=(T, N), last_values=(N,),
                          last_dones=(N,))
            sb3_name = dict(obs="observations")
            for k, shape in shapes.items():
                g.create_dataset(k, data=np.asarray(extra[sb3_name.get(k, k)], dtype=np.float32).reshape(shape))
            g.create_dataset("params_before", data=before)
            g.create_dataset("params_after", data=slab(model.policy, case["gaussian"]))
            g.create_dataset("perm0", data=perms[0].astype(np.int32))
            print(kls)
    print("%s: %d minibatches, KL stop at %d, logged %s" % (name, len(kls), stop,
                  {k: round(float(v), 6) for k, v in logged.items()}))
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
