#!/usr/bin/env python3
"""test/make_ppo_loss_fixtures.py: SB3 + PyTorch reference numbers for test/test_ppo_ops.c.

Regenerate (CPU PyTorch and Stable-Baselines3; any recent versions, the ones used are stored as
attributes of the file's root):

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch numpy h5py stable-baselines3
    /tmp/torchvenv/bin/python test/make_ppo_loss_fixtures.py test/data/ppo_loss_fixture.h5

What it computes: one minibatch (B = 64) of stable_baselines3/ppo/ppo.py train(), its lines quoted
below in order, with the policy network replaced by leaf tensors: the distribution is built with
SB3's own CategoricalDistribution (A = 3 logits) or DiagGaussianDistribution (A = 2 means and a
state-independent log_std), values is a leaf (B, 1). old_log_prob = log_prob + N(0, 0.3), so that
about half of the ratios are clipped; samples within 1e-3 of a clip boundary are redrawn, so that
float rounding cannot move a sample across a kink between torch and C.

Layout (every dataset float32; groups `cat` (A = 3) and `gauss` (A = 2)):
    KIND/       inputs: logits (B, A) | means (B, A), log_std (A); actions (B) | (B, A) (categorical
                indices stored as floats, as the rollout buffer does); values, old_log_prob,
                advantages, returns, old_values (B); torch's log_prob, entropy (B); attrs B, A
    KIND/CASE/  loss, policy_loss, value_loss, entropy_loss, approx_kl, clip_fraction (1);
                grad_logits (B, A) | grad_means (B, A), grad_log_std (A); grad_values (B): the
                gradients of loss * loss_scale; attrs clip_range, clip_range_vf (-1: None),
                ent_coef, vf_coef, loss_scale (float64), normalize_advantage (int64)
Cases: a: normalize on, clip 0.2, no value clip, ent_coef 0, vf_coef 0.5, scale 1;
       b: as a with clip_range_vf 0.1, ent_coef 0.01;  c: as b with normalize off;
       d: as b with the loss multiplied by 65536 before backward (torch.amp.GradScaler.scale).
Group `explained_variance`: pred, target (256) and value (1) from SB3's
stable_baselines3.common.utils.explained_variance on those float32 arrays.
"""
import sys

import h5py
import numpy as np
import stable_baselines3
import torch as th
import torch.nn.functional as F
from stable_baselines3.common.distributions import CategoricalDistribution, DiagGaussianDistribution
from stable_baselines3.common.utils import explained_variance

OUT = sys.argv[1] if len(sys.argv) > 1 else "test/data/ppo_loss_fixture.h5"
B = 64
CASES = {
    "a": dict(normalize_advantage=True, clip_range=0.2, clip_range_vf=None, ent_coef=0.0, vf_coef=0.5, loss_scale=1.0),
    "b": dict(normalize_advantage=True, clip_range=0.2, clip_range_vf=0.1, ent_coef=0.01, vf_coef=0.5, loss_scale=1.0),
    "c": dict(normalize_advantage=False, clip_range=0.2, clip_range_vf=0.1, ent_coef=0.01, vf_coef=0.5, loss_scale=1.0),
    "d": dict(normalize_advantage=True, clip_range=0.2, clip_range_vf=0.1, ent_coef=0.01, vf_coef=0.5,
              loss_scale=65536.0),
}


def f32(x):
    return np.asarray(x, dtype=np.float32)


def away_from(x, edges, margin, redraw):
    """Redraws x[i] (redraw(i)) until x[i] is at least `margin` from every edge."""
    x = x.copy()
    for i in range(len(x)):
        while min(abs(x[i] - e) for e in edges) < margin:
            x[i] = redraw()
    return x


def make_inputs(rng, kind):
    A = 3 if kind == "cat" else 2
    if kind == "cat":
        dist_params = {"logits": f32(rng.normal(0.0, 1.0, (B, A)))}
        actions = f32(rng.integers(0, A, B))
        dist = CategoricalDistribution(A).proba_distribution(action_logits=th.from_numpy(dist_params["logits"]))
        logp = dist.log_prob(th.from_numpy(actions).long()).numpy()
    else:
        dist_params = {"means": f32(rng.normal(0.0, 0.5, (B, A))), "log_std": f32([-0.3, 0.2])}
        std = np.exp(dist_params["log_std"].astype(np.float64))
        actions = f32(dist_params["means"] + std * rng.normal(0.0, 1.0, (B, A)))
        dist = DiagGaussianDistribution(A).proba_distribution(th.from_numpy(dist_params["means"]),
                                                              th.from_numpy(dist_params["log_std"]))
        logp = dist.log_prob(th.from_numpy(actions)).numpy()
    # log ratios away from log(1 -+ 0.2): the clip boundaries of every case
    log_ratio = away_from(rng.normal(0.0, 0.3, B), [np.log(0.8), np.log(1.2)], 1e-3, lambda: rng.normal(0.0, 0.3))
    old_log_prob = f32(logp.astype(np.float64) - log_ratio)
    values = f32(rng.normal(0.0, 1.0, B))
    # old values around the values, |values - old_values| away from clip_range_vf = 0.1
    dv = away_from(rng.normal(0.0, 0.15, B), [-0.1, 0.1], 1e-3, lambda: rng.normal(0.0, 0.15))
    old_values = f32(values.astype(np.float64) - dv)
    advantages = f32(rng.normal(0.3, 1.0, B))
    returns = f32(values + rng.normal(0.0, 0.5, B))
    return A, dist_params, dict(actions=actions, values=values, old_log_prob=old_log_prob, advantages=advantages,
                                returns=returns, old_values=old_values)


def train_one_minibatch(kind, A, dist_params, data, hp):
    """SB3 ppo.py train(), one minibatch, the quoted lines in order. Returns (outputs, grads)."""
    leaves = {k: th.tensor(v, requires_grad=True) for k, v in dist_params.items()}
    values_leaf = th.tensor(data["values"].reshape(B, 1), requires_grad=True)  # value_net output (B, 1)
    rollout = {k: th.from_numpy(v) for k, v in data.items() if k != "values"}
    clip_range = hp["clip_range"]
    clip_range_vf = hp["clip_range_vf"]

    # actions = rollout_data.actions
    # if isinstance(self.action_space, spaces.Discrete):
    #     actions = rollout_data.actions.long().flatten()
    actions = rollout["actions"]
    if kind == "cat":
        actions = rollout["actions"].long().flatten()
    # values, log_prob, entropy = self.policy.evaluate_actions(rollout_data.observations, actions)
    #   (ActorCriticPolicy.evaluate_actions: distribution = self._get_action_dist_from_latent(latent_pi);
    #    log_prob = distribution.log_prob(actions); values = self.value_net(latent_vf);
    #    entropy = distribution.entropy())
    if kind == "cat":
        distribution = CategoricalDistribution(A).proba_distribution(action_logits=leaves["logits"])
    else:
        distribution = DiagGaussianDistribution(A).proba_distribution(leaves["means"], leaves["log_std"])
    log_prob = distribution.log_prob(actions)
    values = values_leaf
    entropy = distribution.entropy()
    # values = values.flatten()
    values = values.flatten()
    # advantages = rollout_data.advantages
    advantages = rollout["advantages"]
    # if self.normalize_advantage and len(advantages) > 1:
    #     advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    if hp["normalize_advantage"] and len(advantages) > 1:
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
    # ratio = th.exp(log_prob - rollout_data.old_log_prob)
    ratio = th.exp(log_prob - rollout["old_log_prob"])
    # policy_loss_1 = advantages * ratio
    # policy_loss_2 = advantages * th.clamp(ratio, 1 - clip_range, 1 + clip_range)
    # policy_loss = -th.min(policy_loss_1, policy_loss_2).mean()
    policy_loss_1 = advantages * ratio
    policy_loss_2 = advantages * th.clamp(ratio, 1 - clip_range, 1 + clip_range)
    policy_loss = -th.min(policy_loss_1, policy_loss_2).mean()
    # clip_fraction = th.mean((th.abs(ratio - 1) > clip_range).float()).item()
    clip_fraction = th.mean((th.abs(ratio - 1) > clip_range).float()).item()
    # if self.clip_range_vf is None:
    #     values_pred = values
    # else:
    #     values_pred = rollout_data.old_values + th.clamp(
    #         values - rollout_data.old_values, -clip_range_vf, clip_range_vf
    #     )
    if clip_range_vf is None:
        values_pred = values
    else:
        values_pred = rollout["old_values"] + th.clamp(values - rollout["old_values"], -clip_range_vf, clip_range_vf)
    # value_loss = F.mse_loss(rollout_data.returns, values_pred)
    value_loss = F.mse_loss(rollout["returns"], values_pred)
    # if entropy is None:
    #     entropy_loss = -th.mean(-log_prob)
    # else:
    #     entropy_loss = -th.mean(entropy)
    assert entropy is not None  # both distributions have an analytical entropy
    entropy_loss = -th.mean(entropy)
    # loss = policy_loss + self.ent_coef * entropy_loss + self.vf_coef * value_loss
    loss = policy_loss + hp["ent_coef"] * entropy_loss + hp["vf_coef"] * value_loss
    # with th.no_grad():
    #     log_ratio = log_prob - rollout_data.old_log_prob
    #     approx_kl_div = th.mean((th.exp(log_ratio) - 1) - log_ratio).cpu().numpy()
    with th.no_grad():
        log_ratio = log_prob - rollout["old_log_prob"]
        approx_kl_div = th.mean((th.exp(log_ratio) - 1) - log_ratio).cpu().numpy()
    # self.policy.optimizer.zero_grad()
    # loss.backward()
    #   with torch.amp.GradScaler: scaler.scale(loss).backward(), i.e. loss * scale (a float32 tensor)
    if hp["loss_scale"] != 1.0:
        (loss * th.full((), hp["loss_scale"], dtype=th.float32)).backward()
    else:
        loss.backward()

    out = dict(log_prob=log_prob.detach().numpy(), entropy=entropy.detach().numpy(), loss=[loss.item()],
               policy_loss=[policy_loss.item()], value_loss=[value_loss.item()], entropy_loss=[entropy_loss.item()],
               approx_kl=[float(approx_kl_div)], clip_fraction=[clip_fraction],
               grad_values=values_leaf.grad.flatten().numpy())
    for k, leaf in leaves.items():
        out["grad_" + k] = leaf.grad.numpy()
    assert 0.2 < clip_fraction < 0.8, clip_fraction  # both branches are exercised
    return out


def write(g, name, value):
    value = f32(value)
    if value.size > 16:  # a chunk index costs more than it saves on a handful of numbers
        g.create_dataset(name, data=value, compression="gzip", compression_opts=9, shuffle=True)
    else:
        g.create_dataset(name, data=value)


def main():
    th.set_num_threads(1)
    rng = np.random.default_rng(20261121)
    # v110 object headers: a quarter of the earliest format's size, and HDF5 1.10 reads them
    with h5py.File(OUT, "w", libver=("v110", "v110")) as f:
        f.attrs["torch_version"] = str(th.__version__)
        f.attrs["stable_baselines3_version"] = str(stable_baselines3.__version__)
        f.attrs["numpy_version"] = str(np.__version__)
        f.attrs["generator"] = "test/make_ppo_loss_fixtures.py"
        for kind in ("cat", "gauss"):
            A, dist_params, data = make_inputs(rng, kind)
            kg = f.create_group(kind)
            kg.attrs["B"] = np.int64(B)
            kg.attrs["A"] = np.int64(A)
            for k, v in list(dist_params.items()) + list(data.items()):
                write(kg, k, v)
            for name, hp in CASES.items():
                out = train_one_minibatch(kind, A, dist_params, data, hp)
                if name == "a":  # the same for every case
                    write(kg, "log_prob", out["log_prob"])
                    write(kg, "entropy", out["entropy"])
                g = kg.create_group(name)
                for k, v in out.items():
                    if k not in ("log_prob", "entropy"):
                        write(g, k, v)
                g.attrs["normalize_advantage"] = np.int64(hp["normalize_advantage"])
                g.attrs["clip_range"] = float(hp["clip_range"])
                g.attrs["clip_range_vf"] = float(hp["clip_range_vf"]) if hp["clip_range_vf"] is not None else -1.0
                g.attrs["ent_coef"] = float(hp["ent_coef"])
                g.attrs["vf_coef"] = float(hp["vf_coef"])
                g.attrs["loss_scale"] = float(hp["loss_scale"])
                print("%s/%s: loss %.6g clip_fraction %.3f approx_kl %.4g" %
                      (kind, name, out["loss"][0], out["clip_fraction"][0], out["approx_kl"][0]))
        # explained variance: SB3's function on float32 arrays
        target = f32(rng.normal(1.0, 2.0, 256))
        pred = f32(target + rng.normal(0.0, 1.0, 256))
        ev = explained_variance(pred, target)  # explained_variance(y_pred, y_true)
        g = f.create_group("explained_variance")
        for k, v in (("pred", pred), ("target", target), ("value", [ev])):
            write(g, k, v)
        print("explained_variance %.7g" % ev)

if __name__ == "__main__":
    main()
