#!/usr/bin/env python3
"""Expected feature values for test_features.c, computed independently of envs/features.c.

Reads the shipped CSVs (data/csv/*.csv.gz) as text, takes the mid prices (bid/ask average per
field; LEAN equity prices / 10000), and evaluates every one of the 16 market features of
TRADING_ENV.md section 4 with numpy, written from the spec's table, not from the C code:

  sigma_t   EWMA std of 1-bar log returns, pandas adjust=True weights (half-life 48 hourly, 20 daily),
            long sigma with 10x the half-life
  r1        ln(M_t/M_{t-1}) / sigma_{t-1}
  r_k       ln(M_t/M_{t-k}) / (sigma_t sqrt k), k = 4, 24, 120 hourly, 5, 21, 63 daily
  vol       ln(sigma_t / sigma_long_t)
  range     (H - L) / (M sigma);  body (C - O) / (M sigma)
  x_fast    (EMA12(M) - M) / (M sigma); x_slow with EMA48; x_strategy sign(EMA12 - EMA48)
  macd      (EMA12 - EMA26) / (M sigma); EMAs with alpha 2/(span+1) started at M_0
  rsi       (RSI14 - 50)/50, Wilder smoothing, 0 until a move happened
  spread    (ask_close - bid_close)/M in bp/10 (0 without bid/ask)
  gap       ln(1 + hours since the previous bar); time sin/cos of the UTC hour (daily: weekday)

Undefined denominators give 0, and every value is clipped to [-5, 5]. It writes
test/data/features_expected.inc: for XAUUSD (hourly, bid/ask) and SPY (daily), the 16 features
at a fixed set of rows (the first 8, every 997th, the last), as float literals.

    pip install numpy && python3 test/make_feature_fixtures.py

The product and the tests do not need Python; rerun this only when the shipped data changes.
"""
import datetime as dt
import gzip
import math
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIP = 5.0


def read_rows(name):
    with gzip.open(os.path.join(ROOT, "data", "csv", name), "rt") as f:
        return [line.strip().split(",") for line in f if line.strip()]


def utc_seconds(text):
    return dt.datetime.strptime(text, "%Y%m%d %H:%M").replace(tzinfo=dt.timezone.utc).timestamp()


def load(which):
    if which == "XAUUSD":  # LEAN quote bars: time, bid OHLC, bid size, ask OHLC, ask size
        raw = read_rows("XAUUSD_OANDA_1H_BIDASK.csv.gz")
        bid = np.array([[float(x) for x in r[1:5]] for r in raw])
        ask = np.array([[float(x) for x in r[6:10]] for r in raw])
        mid = (bid + ask) / 2
        spread_close = ask[:, 3] - bid[:, 3]
        daily = False
    else:  # LEAN equity daily bars: time, OHLC in 1/10000 USD, volume
        raw = read_rows("SPY_1D_LEAN.csv.gz")
        mid = np.array([[float(x) / 10000 for x in r[1:5]] for r in raw])
        spread_close = None
        daily = True
    ts = np.array([utc_seconds(r[0]) for r in raw])
    return ts, mid, spread_close, daily


def ewm_std(r, halflife):
    """sqrt(sum_i w_i r_i^2 / sum_i w_i) over r[1..t], w_i = lam^(t - i); NaN at t = 0."""
    lam = 0.5 ** (1.0 / halflife)
    out = np.full(len(r), np.nan)
    num = den = 0.0
    for t in range(1, len(r)):
        num = lam * num + r[t] ** 2
        den = lam * den + 1.0
        out[t] = math.sqrt(num / den)
    return out


def ema(x, span):
    a = 2.0 / (span + 1)
    e = np.empty(len(x))
    e[0] = x[0]
    for t in range(1, len(x)):
        e[t] = e[t - 1] + a * (x[t] - e[t - 1])
    return e


def rsi14(m):
    out = np.full(len(m), 50.0)
    gain = loss = 0.0
    for t in range(1, len(m)):
        move = m[t] - m[t - 1]
        gain += (max(move, 0.0) - gain) / 14
        loss += (max(-move, 0.0) - loss) / 14
        out[t] = 100 - 100 / (1 + gain / loss) if loss > 0 else (100.0 if gain > 0 else 50.0)
    return out


def safe_div(x, d):
    """x / d where d > 0, else 0 (an undefined denominator)."""
    d = np.asarray(d, dtype=float)
    ok = np.isfinite(d) & (d > 0)
    out = np.zeros(len(d))
    out[ok] = np.asarray(x, dtype=float)[ok] / d[ok]
    return out


def features(which):
    ts, mid, spread_close, daily = load(which)
    O, H, L, M = mid.T  # M: the mid close
    T = len(M)
    halflife = 20.0 if daily else 48.0
    ks = (5, 21, 63) if daily else (4, 24, 120)
    r = np.zeros(T)
    r[1:] = np.log(M[1:] / M[:-1])
    sig = ewm_std(r, halflife)
    sig_long = ewm_std(r, 10 * halflife)
    F = np.zeros((T, 16))
    sig_prev = np.concatenate([[np.nan], sig[:-1]])
    F[:, 0] = safe_div(r, sig_prev)
    for h, k in enumerate(ks):
        num = np.zeros(T)
        num[k:] = np.log(M[k:] / M[:-k])
        den = sig * math.sqrt(k)
        den[:k] = np.nan
        F[:, 1 + h] = safe_div(num, den)
    ok = np.isfinite(sig) & (sig > 0) & np.isfinite(sig_long) & (sig_long > 0)
    F[ok, 4] = np.log(sig[ok] / sig_long[ok])
    scale = M * sig
    ema_fast, ema_slow, ema12, ema26 = ema(M, 12), ema(M, 48), ema(M, 12), ema(M, 26)
    F[:, 5] = safe_div(H - L, scale)
    F[:, 6] = safe_div(M - O, scale)
    F[:, 7] = safe_div(ema_fast - M, scale)
    F[:, 8] = safe_div(ema_slow - M, scale)
    F[:, 9] = np.sign(ema_fast - ema_slow)
    F[:, 10] = safe_div(ema12 - ema26, scale)
    F[:, 11] = (rsi14(M) - 50) / 50
    if spread_close is not None:
        F[:, 12] = spread_close / M * 1e4 / 10
    F[1:, 13] = np.log1p(np.diff(ts) / 3600.0)
    when = [dt.datetime.fromtimestamp(x, dt.timezone.utc) for x in ts]
    phase = 2 * np.pi * (np.array([w.weekday() for w in when]) / 7 if daily else np.array([w.hour for w in when]) / 24)
    F[:, 14] = np.sin(phase)
    F[:, 15] = np.cos(phase)
    return np.clip(F, -CLIP, CLIP).astype(np.float32), T


def main():
    out = os.path.join(ROOT, "test", "data", "features_expected.inc")
    lines = ["// Generated by test/make_feature_fixtures.py from data/csv/*.csv.gz: do not edit.",
             "// The 16 features (TRADING_ENV.md section 4) at chosen rows, computed with numpy."]
    for which in ("XAUUSD", "SPY"):
        F, T = features(which)
        rows = sorted(set(list(range(8)) + list(range(8, T, 997)) + [T - 1]))
        lines.append(f"static const int64_t {which.lower()}_feature_rows[{len(rows)}] = {{")
        lines.append("    " + ", ".join(str(i) for i in rows) + "};")
        lines.append(f"static const float {which.lower()}_features[{len(rows)}][16] = {{")
        for i in rows:
            lines.append("    {" + ", ".join(f"{v!r}f" if v != int(v) else f"{int(v)}.0f" for v in map(float, F[i])) + "},")
        lines.append("};")
        lines.append(f"#define {which}_FEATURE_BARS {T}")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
