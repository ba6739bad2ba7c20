#!/usr/bin/env python3
"""test/make_nn_fixtures.py: PyTorch reference numbers for test/test_nn_torch.c.

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch numpy
    /tmp/torchvenv/bin/python test/make_nn_fixtures.py test/data/nn

Every input is a closed-form function both sides compute, so nothing large is committed:
    hash32(seed, i)  a 32-bit integer mix (below, and test_nn_torch.c's twin)
    unit(seed, i)    = 2 * (hash32(seed, i) >> 8) / 2^24 - 1, exact in float, in [-1, 1)
    W_l[o][i]        = unit(100 net + 2 l, o * fan_in + i) * sqrt(3 / fan_in)   (double, then float32)
    b_l[o]           = unit(100 net + 2 l + 1, o) * 0.1
    log_std[j]       = -0.5 + 0.1 j
    obs[b][k]        = unit(1000, b O + k); actions: categorical hash32(1001, b) % A, Gaussian unit(1001, b A + j)
    adv[b]           = unit(1002, b); returns[b] = unit(1003, b)
net 0 is the actor, 1 the critic. Loss (SB3's PPO terms with ratio-free policy loss):
    loss = -mean(logp * adv) - 0.01 mean(entropy) + 0.5 mean((returns - values)^2)
then clip_grad_norm_(all params, 0.5) and torch.optim.Adam(lr 3e-4, betas (0.9, 0.999), eps 1e-5),
two steps on the same batch.

Files (one record per line: `name count v0 v1 ...`, float32 values printed with 9 digits, exact):
    policy_<case>.txt   for cases small_cat, small_gauss ([64,64]) and big_cat, big_gauss
                        ([2048,1024,512]): logp, entropy, values, loss of the first forward; the raw
                        gradient norm; a handful of gradient entries per tensor (indices recorded);
                        after two Adam steps, per tensor sum(delta), sum(|delta|) in float64 and the
                        same handful of delta entries (delta = parameter after - before).
    orthogonal.txt      torch.nn.init.orthogonal_'s QR step (q * sign(diag r)) on fixed matrices.
    grad_scaler.txt     torch.amp.GradScaler trajectories with forced overflows: per step, found_inf,
                        the scale and the growth tracker after update().
    bf16.txt            float32 -> bfloat16 -> float32 of fixed values (bits).
    adam.txt            torch.optim.Adam's single-tensor CPU steps on closed-form inputs (bits).
"""
import math
import os
import sys

import numpy as np
import torch

torch.set_num_threads(2)
OUT = sys.argv[1] if len(sys.argv) > 1 else "test/data/nn"
M32 = 0xFFFFFFFF


def hash32(seed, idx):
    """idx: numpy uint64 array. The same mix as test_nn_torch.c."""
    x = (np.uint64(seed) * np.uint64(0x9E3779B1) + idx * np.uint64(0x85EBCA77) + np.uint64(0x165667B1)) & np.uint64(M32)
    x ^= x >> np.uint64(15)
    x = (x * np.uint64(0x2C1B3C6D)) & np.uint64(M32)
    x ^= x >> np.uint64(12)
    x = (x * np.uint64(0x297A2D39)) & np.uint64(M32)
    x ^= x >> np.uint64(15)
    return x


def unit(seed, n):
    h = hash32(seed, np.arange(n, dtype=np.uint64))
    return 2.0 * (h >> np.uint64(8)).astype(np.float64) / 16777216.0 - 1.0


def fmt(name, values):
    v = np.asarray(values).ravel()
    if v.dtype.kind in "iub":
        body = " ".join(str(int(x)) for x in v)
    elif v.dtype == np.float64:
        body = " ".join(repr(float(x)) for x in v)
    else:
        body = " ".join("%.9g" % float(x) for x in v.astype(np.float32))
    return "%s %d %s\n" % (name, v.size, body)


def make_net(net, dims):
    layers = []
    for l in range(len(dims) - 1):
        fan_in, fan_out = dims[l], dims[l + 1]
        lin = torch.nn.Linear(fan_in, fan_out)
        w = unit(100 * net + 2 * l, fan_out * fan_in) * math.sqrt(3.0 / fan_in)
        b = unit(100 * net + 2 * l + 1, fan_out) * 0.1
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w.astype(np.float32).reshape(fan_out, fan_in)))
            lin.bias.copy_(torch.from_numpy(b.astype(np.float32)))
        layers.append(lin)
        if l < len(dims) - 2:
            layers.append(torch.nn.Tanh())
    return torch.nn.Sequential(*layers)


def picks(n):
    """A handful of indices into a tensor of n elements: ends and hashed middles."""
    idx = {0, n - 1}
    h = hash32(77, np.arange(4, dtype=np.uint64))
    for x in h:
        idx.add(int(x) % n)
    return sorted(idx)


def policy_case(name, hidden, O, A, B, gaussian):
    pi = make_net(0, [O] + hidden + [A])
    vf = make_net(1, [O] + hidden + [1])
    params = []  # C slab order: pi w0 b0 w1 b1 ..., vf ..., log_std
    for net in (pi, vf):
        for m in net:
            if isinstance(m, torch.nn.Linear):
                params += [m.weight, m.bias]
    log_std = None
    if gaussian:
        log_std = torch.nn.Parameter(torch.tensor([-0.5 + 0.1 * j for j in range(A)], dtype=torch.float32))
        params.append(log_std)
    obs = torch.from_numpy(unit(1000, B * O).astype(np.float32).reshape(B, O))
    if gaussian:
        actions = torch.from_numpy(unit(1001, B * A).astype(np.float32).reshape(B, A))
    else:
        actions = torch.from_numpy((hash32(1001, np.arange(B, dtype=np.uint64)) % np.uint64(A)).astype(np.int64))
    adv = torch.from_numpy(unit(1002, B).astype(np.float32))
    returns = torch.from_numpy(unit(1003, B).astype(np.float32))

    def evaluate():
        head = pi(obs)
        values = vf(obs).squeeze(-1)
        if gaussian:
            dist = torch.distributions.Normal(head, log_std.exp())
            logp = dist.log_prob(actions).sum(-1)
            ent = dist.entropy().sum(-1)
        else:
            dist = torch.distributions.Categorical(logits=head)
            logp = dist.log_prob(actions)
            ent = dist.entropy()
        loss = -(logp * adv).mean() - 0.01 * ent.mean() + 0.5 * ((returns - values) ** 2).mean()
        return logp, ent, values, loss

    opt = torch.optim.Adam(params, lr=3e-4, betas=(0.9, 0.999), eps=1e-5)
    before = [p.detach().clone() for p in params]
    lines = [fmt("shape", [O, A, B, int(gaussian)] + hidden)]
    for step in range(2):
        opt.zero_grad()
        logp, ent, values, loss = evaluate()
        loss.backward()
        if step == 0:
            lines += [fmt("logp", logp.detach()), fmt("entropy", ent.detach()), fmt("values", values.detach()),
                      fmt("loss", loss.detach().reshape(1))]
            total = torch.sqrt(sum((p.grad.double() ** 2).sum() for p in params))
            lines.append(fmt("grad_norm", np.array([float(total)], dtype=np.float64)))
            for t, p in enumerate(params):
                g = p.grad.detach().ravel()
                ix = picks(g.numel())
                lines.append(fmt("grad_index_%d" % t, np.array(ix, dtype=np.int64)))
                lines.append(fmt("grad_%d" % t, g[ix]))
        torch.nn.utils.clip_grad_norm_(params, 0.5)
        opt.step()
    for t, (p, p0) in enumerate(zip(params, before)):
        d = (p.detach() - p0).ravel()
        lines.append(fmt("delta_sum_%d" % t, np.array([d.double().sum().item(), d.double().abs().sum().item()])))
        lines.append(fmt("delta_%d" % t, d[picks(d.numel())]))
    with open(os.path.join(OUT, "policy_%s.txt" % name), "w") as f:
        f.writelines(lines)


def orthogonal():
    lines = []
    for k, (rows, cols) in enumerate([(5, 3), (3, 5), (64, 8), (8, 64), (16, 16)]):
        g = unit(500 + k, rows * cols).reshape(rows, cols)  # any full-rank matrix: the QR is unique up to signs
        flat = torch.from_numpy(g)
        # torch/nn/init.py orthogonal_, on the given matrix instead of a fresh normal_ draw
        if rows < cols:
            flat = flat.t()
        q, r = torch.linalg.qr(flat)
        d = torch.diag(r, 0)
        q *= d.sign()
        if rows < cols:
            q = q.t()
        lines.append(fmt("ortho_%d_%d" % (rows, cols), q.contiguous().numpy().astype(np.float64)))
    with open(os.path.join(OUT, "orthogonal.txt"), "w") as f:
        f.writelines(lines)


def grad_scaler():
    lines = []
    cases = [  # (init_scale, growth_interval, steps, steps whose loss is inf, growth_factor, backoff_factor)
        (1024.0, 3, 14, {2, 3, 9}, 2.0, 0.5),
        (65536.0, 2, 10, {0, 5, 6, 7}, 2.0, 0.5),
        (2.0 ** 126, 1, 4, set(), 2.0, 0.5),  # growth to inf is refused
        # factors that are not floats: the float scale times the double factor, rounded once
        (1000.0, 1, 16, {3, 7, 11}, 1.1, 0.3),
    ]
    for c, (init_scale, interval, steps, bad, growth, backoff) in enumerate(cases):
        p = torch.nn.Parameter(torch.tensor([1.0, -2.0, 0.5]))
        opt = torch.optim.SGD([p], lr=0.1)
        scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, growth_factor=growth, backoff_factor=backoff,
                                      growth_interval=interval)
        found, scales, trackers = [], [], []
        for s in range(steps):
            opt.zero_grad()
            x = torch.tensor([0.5, 0.25, -1.0])
            loss = (p * x).sum() * (float("inf") if s in bad else 1.0)
            scaler.scale(loss).backward()
            scaler.step(opt)
            found.append(int(sum(v.item() for v in scaler._found_inf_per_device(opt).values()) > 0))
            scaler.update()
            scales.append(scaler.get_scale())
            trackers.append(int(scaler._get_growth_tracker()))
        assert found == [int(s in bad) for s in range(steps)], found
        lines.append(fmt("case_%d" % c, np.array([init_scale, interval, steps, growth, backoff], dtype=np.float64)))
        lines.append(fmt("found_inf_%d" % c, np.array(found, dtype=np.int64)))
        lines.append(fmt("scale_%d" % c, np.array(scales, dtype=np.float64)))
        lines.append(fmt("tracker_%d" % c, np.array(trackers, dtype=np.int64)))
    with open(os.path.join(OUT, "grad_scaler.txt"), "w") as f:
        f.writelines(lines)


def bf16():
    x = np.concatenate([unit(900, 200) * 3.0, unit(901, 50) * 1e30, unit(902, 50) * 1e-30,
                        [1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, 3.4028234663852886e38, 0.0, -0.0]]).astype(np.float32)
    t = torch.from_numpy(x).to(torch.bfloat16).to(torch.float32).numpy()
    with open(os.path.join(OUT, "bf16.txt"), "w") as f:
        f.write(fmt("in", x))
        f.write(fmt("out", t))


def adam():
    """torch.optim.Adam's single-tensor CPU path (foreach off, as SB3 on the CPU) on 512 parameters
    p0 = unit(920 + c, 512) * 0.1, three steps with gradients unit(921 + c + 10 s, 512) * 10^(s - 2),
    lr 3e-4, betas (beta1, 0.999), eps 1e-5: the parameters after each step (bits compared)."""
    lines = []
    for c, beta1 in enumerate([0.9, 0.3]):
        p = torch.nn.Parameter(torch.from_numpy((unit(920 + c, 512) * 0.1).astype(np.float32)))
        opt = torch.optim.Adam([p], lr=3e-4, betas=(beta1, 0.999), eps=1e-5, foreach=False)
        lines.append(fmt("adam_case_%d" % c, np.array([beta1, 512, 3], dtype=np.float64)))
        for s in range(3):
            p.grad = torch.from_numpy((unit(921 + c + 10 * s, 512) * 10.0 ** (s - 2)).astype(np.float32))
            opt.step()
            lines.append(fmt("adam_p_%d_%d" % (c, s), p.detach().numpy()))
    with open(os.path.join(OUT, "adam.txt"), "w") as f:
        f.writelines(lines)


os.makedirs(OUT, exist_ok=True)
policy_case("small_cat", [64, 64], 8, 4, 64, False)
policy_case("small_gauss", [64, 64], 8, 3, 64, True)
policy_case("big_cat", [2048, 1024, 512], 24, 3, 32, False)
policy_case("big_gauss", [2048, 1024, 512], 24, 2, 32, True)
orthogonal()
grad_scaler()
bf16()
adam()
print("torch %s: fixtures written to %s" % (torch.__version__, OUT))
