#!/usr/bin/env python3
"""test/make_cartpole_fixture.py: CartPole-v1 trajectories from Gymnasium, for test/test_cartpole.c.

    python3 -m venv /tmp/gymvenv && /tmp/gymvenv/bin/pip install gymnasium
    /tmp/gymvenv/bin/python test/make_cartpole_fixture.py > test/data/cartpole_gymnasium.csv

Our initial states come from our own RNG (xoshiro256**), which cannot reproduce numpy's generator,
so each episode's row `reset` records Gymnasium's initial state (float64, 17 significant digits, exact
on reading back) and the C test installs it. Rows (one per line, comma-separated):

    kind,episode,t,action,s0,s1,s2,s3,o0,o1,o2,o3,reward,terminated,truncated
    kind   reset: state after env.reset(seed=...);  set: state written into env.unwrapped.state
           mid-episode (the C test installs it the same way); step: one env.step(action)
    s0..s3 float64 state (x, x_dot, theta, theta_dot) after the row (repr: exact round trip)
    o0..o3 float32 observation after the row (9 significant digits: exact round trip); empty for set
    t      steps taken in the episode after the row (the TimeLimit counter)

Episodes cover: random actions (pole falls: theta termination), a pole-balancing policy that lets
the cart drift (x termination), a stabilising policy (TimeLimit truncation at t = 500), states set
exactly on and just past both thresholds, and a step that terminates and truncates at once. The
script asserts that every one of these cases happened, so a changed Gymnasium cannot quietly drop one.
"""
import math
import sys

import gymnasium as gym
import numpy as np

assert gym.__version__.split(".")[0] == "1", gym.__version__

out = sys.stdout
out.write("kind,episode,t,action,s0,s1,s2,s3,o0,o1,o2,o3,reward,terminated,truncated\n")
seen = set()


def state_text(env):
    s = env.unwrapped.state
    assert s.dtype == np.float64, s.dtype  # Gymnasium keeps the state in float64 and casts the obs
    return ",".join(repr(float(v)) for v in s)


def obs_text(obs):
    assert obs.dtype == np.float32, obs.dtype
    return ",".join("%.9g" % v for v in obs)


class Episode:
    def __init__(self, env, episode, seed):
        self.env, self.episode, self.t = env, episode, 0
        obs, _ = env.reset(seed=seed)
        self.obs = obs
        out.write(f"reset,{episode},0,-1,{state_text(env)},{obs_text(obs)},0,0,0\n")

    def set_state(self, state):
        self.env.unwrapped.state = np.array(state, dtype=np.float64)
        out.write(f"set,{self.episode},{self.t},-1,{state_text(self.env)},,,,,0,0,0\n")

    def step(self, action):
        obs, reward, terminated, truncated, _ = self.env.step(action)
        self.t += 1
        self.obs = obs
        out.write(f"step,{self.episode},{self.t},{action},{state_text(self.env)},{obs_text(obs)},"
                  f"{reward!r},{int(terminated)},{int(truncated)}\n")
        return terminated, truncated


def run(episode, seed, policy, set_at=None):
    env = gym.make("CartPole-v1")
    ep = Episode(env, episode, seed)
    while True:
        if set_at is not None and ep.t == set_at[0]:
            ep.set_state(set_at[1])
        terminated, truncated = ep.step(policy(ep.obs, ep.t))
        if terminated or truncated:
            s = env.unwrapped.state
            return terminated, truncated, ep.t, s


def random_policy(seed):
    rng = np.random.default_rng(seed)
    return lambda obs, t: int(rng.integers(0, 2))


def balance_pole(obs, t):  # ignores the cart and leans it left: the cart drifts off the track
    return int(obs[2] + 0.5 * obs[3] + 0.05 > 0)


def stabilise(obs, t):  # a linear state feedback that keeps both pole and cart near 0
    x, x_dot, theta, theta_dot = (float(v) for v in obs)
    return int(0.1 * x + 0.5 * x_dot + 10.0 * theta + 1.5 * theta_dot > 0)


episode = 0
# 1. random actions: the pole falls (theta termination)
for seed in (1, 2, 3, 4, 5, 6):
    term, trunc, t, s = run(episode, seed, random_policy(100 + seed))
    assert term and not trunc
    seen.add("theta" if abs(s[2]) > 12 * 2 * math.pi / 360 else "x")
    episode += 1
# 2. balancing the pole only: the cart drifts out (x termination)
for seed in (11, 12):
    term, trunc, t, s = run(episode, seed, balance_pole)
    assert term and not trunc and abs(s[0]) > 2.4, (term, trunc, s)
    seen.add("x")
    episode += 1
# 3. a stabilising policy: TimeLimit truncation at 500
for seed in (21,):
    term, trunc, t, s = run(episode, seed, stabilise)
    assert trunc and not term and t == 500, (term, trunc, t)
    seen.add("truncated")
    episode += 1
# 4. thresholds exactly as Gymnasium decides them (strict comparisons on the float64 state); with
#    x_dot = theta_dot = 0 the step leaves x and theta unchanged, so they sit on the boundary.
theta_max = 12 * 2 * math.pi / 360
boundary = [
    ("on_x", [2.4, 0.0, 0.0, 0.0], False),
    ("past_x", [math.nextafter(2.4, 3.0), 0.0, 0.0, 0.0], True),
    ("on_minus_x", [-2.4, 0.0, 0.0, 0.0], False),
    ("past_minus_x", [math.nextafter(-2.4, -3.0), 0.0, 0.0, 0.0], True),
    ("on_theta", [0.0, 0.0, theta_max, 0.0], False),
    ("past_theta", [0.0, 0.0, math.nextafter(theta_max, 1.0), 0.0], True),
    ("on_minus_theta", [0.0, 0.0, -theta_max, 0.0], False),
    ("past_minus_theta", [0.0, 0.0, math.nextafter(-theta_max, -1.0), 0.0], True),
]
for name, state, expect_term in boundary:
    env = gym.make("CartPole-v1")
    ep = Episode(env, episode, 30 + episode)
    ep.set_state(state)
    term, trunc = ep.step(1)
    assert term == expect_term and not trunc, (name, term, trunc)
    seen.add(name)
    episode += 1
# 5. terminated and truncated on the same step: stabilise for 499 steps, then put the cart just
#    inside the edge moving out, so step 500 both ends the MDP and hits the time limit.
term, trunc, t, s = run(episode, 23, stabilise, set_at=(499, [2.39, 1.0, 0.0, 0.0]))
assert term and trunc and t == 500, (term, trunc, t)
seen.add("both")
episode += 1

required = {"theta", "x", "truncated", "both"} | {b[0] for b in boundary}
assert required <= seen, required - seen
