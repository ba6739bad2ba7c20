#!/usr/bin/env python3
"""test/make_report_fixtures.py: golden values of every deterministic field of envs/report.h's Report,
computed here with numpy and scipy only (nothing from the C code), for test/test_report.c.

Regenerate (writes test/data/report_golden.inc; numpy and scipy, any recent version):
    python3 -m venv /tmp/reportvenv && /tmp/reportvenv/bin/pip install numpy scipy
    /tmp/reportvenv/bin/python test/make_report_fixtures.py > test/data/report_golden.inc
Generated with the versions printed in the file's header.

The cases are small and hand-made, each aimed at some branch of TRADING_ENV.md section 9:
  recovery     daily bars; a drawdown from 1.1 that recovers; long, short and flat; wins and losses
  underwater   hourly bars with a weekend gap (days != bars / 24); ends in its longest drawdown, which
               is still open; rf and mar set; losing trades only (profit factor 0, no payoff ratio)
  fat_tails    200 steps from a seeded numpy generator: Student-t returns with downward jumps (skewed,
               fat-tailed), irregular timestamps, positions in {-1, -0.5, 0, 0.5, 1} with persistence,
               the trade ledger cut at every flat or sign flip, negative financing (a credit), 20 trials
  flat         constant equity, never in the market, no trades: every ratio is NaN (0/0)
  winners      N = 2; two winning trades and a break-even one: profit factor INFINITY, no payoff ratio
  one_step     N = 1: no standard deviation, so Sharpe and everything built on it is NaN
The bootstrap is not here (it depends on our generator): every case runs with bootstrap_samples 0,
so the CI fields are NaN and block_mean is the auto value ceil(N^(1/3)).

Definitions, independent of report.c: r = E[1:]/E[:-1] - 1; Y = (ts_N - ts_0)/(365.25 d); P = N/Y;
std ddof=1; skew/kurtosis = scipy.stats.skew/kurtosis(bias=True, fisher=False); Phi, Phi^-1 =
scipy.stats.norm.cdf/ppf; the longest drawdown is the longest run of E below its running maximum
(np.maximum.accumulate), the first among equals, measured from the bar before the run to the bar after
it (or to the last bar when it never ends).
"""
import math
import os
import re
import sys

import numpy as np
import scipy
import scipy.stats as st

DAY = 86400
YEAR = 365.25 * DAY


def div(a, b):
    """a / b with IEEE semantics (0/0 = nan, x/0 = +-inf), as C computes it."""
    with np.errstate(all="ignore"):
        return float(np.float64(a) / np.float64(b))


def longest_drawdown_days(E, ts):
    under = E < np.maximum.accumulate(E)
    if not under.any():
        return 0, 0.0
    edges = np.diff(np.concatenate([[0], under.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)  # run = [start, end)
    k = int(np.argmax(ends - starts))  # the first of the longest
    peak, stop = starts[k] - 1, ends[k]  # the bar before the run; the recovery bar (or N + 1)
    stop = min(stop, len(E) - 1)
    return int(ends[k] - starts[k]), (ts[stop] - ts[peak]) / DAY


def report(case):
    n, E, ts = case["n"], np.asarray(case["equity"]), np.asarray(case["ts"], dtype=np.int64)
    pos, trades = np.asarray(case["position"]), case["trades"]
    rf, mar, n_trials = case["rf"], case["mar"], case["n_trials"]
    r = E[1:] / E[:-1] - 1
    out = {}
    Y = (ts[-1] - ts[0]) / YEAR
    P = div(n, Y) if Y > 0 else math.nan
    sd = float(np.std(r, ddof=1)) if n >= 2 else math.nan
    sr_p = div(np.mean(r - rf / P), sd)
    downside = math.sqrt(np.mean(np.minimum(0.0, r - mar / P) ** 2))
    mdd = float(np.max(1 - E / np.maximum.accumulate(E)))
    cagr = (E[-1] / E[0]) ** (1 / Y) - 1
    bars_under, days_under = longest_drawdown_days(E, ts)
    out["m"] = {
        "n": n, "years": Y, "periods_per_year": P, "total_return": E[-1] / E[0] - 1, "cagr": cagr,
        "ann_vol": sd * math.sqrt(P), "sharpe": sr_p * math.sqrt(P), "sharpe_per_bar": sr_p,
        "sortino": div(np.mean(r - mar / P), downside) * math.sqrt(P), "max_drawdown": mdd,
        "calmar": cagr / mdd if mdd > 0 else math.nan, "underwater_bars": bars_under,
    }
    out["underwater_days"] = days_under
    w = pos[1:]
    out["turnover_per_bar"] = np.sum(case["turnover"][1:]) / n
    out["turnover_annual"] = out["turnover_per_bar"] * P
    out["notional_turnover"] = np.sum(case["notional"][1:]) / np.mean(E)
    out["exposure"] = np.mean(w != 0)
    out["mean_abs_position"] = np.mean(np.abs(w))
    out["long_share"] = np.mean(w > 0)
    out["short_share"] = np.mean(w < 0)
    pnl = np.array([t["net_pnl"] for t in trades], dtype=float)
    wins, losses = pnl[pnl > 0], pnl[pnl < 0]
    count = len(trades)
    out["n_trades"] = count
    out["mean_hold_bars"] = np.mean([t["bars"] for t in trades]) if count else math.nan
    out["trades_per_year"] = count / Y
    out["hit_rate"] = len(wins) / count if count else math.nan
    in_market = w != 0
    out["bar_hit_rate"] = np.mean((E[1:] > E[:-1])[in_market]) if in_market.any() else math.nan
    out["payoff_ratio"] = np.mean(wins) / abs(np.mean(losses)) if len(wins) and len(losses) else math.nan
    if len(losses):
        out["profit_factor"] = np.sum(wins) / abs(np.sum(losses))
    else:
        out["profit_factor"] = math.inf if len(wins) else math.nan
    total = 0.0
    for kind in ["spread", "slippage", "commission", "financing"]:
        s = float(np.sum(case["cost_" + kind][1:]))
        out["cost_" + kind], out["cost_%s_pct" % kind] = s, 100 * s / E[0]
        total += s
    out["cost_total"], out["cost_total_pct"] = total, 100 * total / E[0]
    out["cost_bp_per_trade"] = 1e4 * total / E[0] / count if count else math.nan
    out["gross_return"] = (E[-1] + total) / E[0] - 1
    out["net_return"] = E[-1] / E[0] - 1
    with np.errstate(all="ignore"):
        g3 = float(st.skew(r, bias=True)) if n >= 1 else math.nan
        g4 = float(st.kurtosis(r, fisher=False, bias=True)) if n >= 1 else math.nan
    out["skewness"], out["kurtosis"] = g3, g4
    out["sharpe_se"] = math.sqrt((1 + sr_p**2 / 2) / n) * math.sqrt(P)
    factor = 1 - g3 * sr_p + (g4 - 1) / 4 * sr_p**2

    def psr(threshold):
        if not factor > 0:
            return math.nan
        return float(st.norm.cdf((sr_p - threshold) * math.sqrt(n - 1) / math.sqrt(factor)))

    out["psr0"] = psr(0.0)
    if n_trials > 1:
        z = (1 - np.euler_gamma) * st.norm.ppf(1 - 1 / n_trials) + np.euler_gamma * st.norm.ppf(
            1 - 1 / (n_trials * math.e))
        threshold = math.sqrt(factor / (n - 1)) * float(z)
    else:
        threshold = 0.0
    out["dsr"], out["dsr_threshold"] = psr(threshold), threshold
    for k in ["sharpe_ci_lo", "sharpe_ci_hi", "total_return_ci_lo", "total_return_ci_hi"]:
        out[k] = math.nan  # bootstrap_samples 0
    out["block_mean"] = float(math.ceil(np.cbrt(n)))
    out["bootstrap_samples"] = 0
    return out


def trade(entry, exit, side, entry_price, exit_price, entry_equity, exit_equity, cost):
    return dict(entry_step=entry, exit_step=exit, side=side, entry_price=entry_price, exit_price=exit_price,
                entry_equity=entry_equity, exit_equity=exit_equity, net_pnl=exit_equity - entry_equity, cost=cost,
                bars=exit - entry)


def base_case(name, equity, ts, position, turnover, rf=0.0, mar=0.0, n_trials=1, trades=(), price=None, costs=None):
    equity = np.asarray(equity, dtype=float)
    n = len(equity) - 1
    position = np.asarray(position, dtype=float)
    turnover = np.asarray(turnover, dtype=float)
    price = np.full(n + 1, 100.0) if price is None else np.asarray(price, dtype=float)
    # notional: |dq| x price with q = w E / price, so |dw| x E at the fill (before the step's move)
    notional = np.concatenate([[0.0], turnover[1:] * equity[:-1]])
    costs = costs or {}
    case = dict(name=name, n=n, equity=equity, ts=np.asarray(ts, dtype=np.int64), position=position,
                turnover=turnover, notional=notional, rf=rf, mar=mar, n_trials=n_trials, trades=list(trades))
    for kind in ["spread", "slippage", "commission", "financing"]:
        case["cost_" + kind] = np.asarray(costs.get(kind, np.zeros(n + 1)), dtype=float)
    return case


def case_recovery():
    E = [1.0, 1.1, 0.99, 1.089, 1.2, 1.26, 1.197]
    ts = [k * DAY for k in range(7)]
    w = [0, 1, 1, 0.5, -0.5, -0.5, 0]
    turnover = [0, 1, 0, 0.5, 1, 0, 0.5]
    costs = dict(spread=[0, 1e-4, 0, 5e-5, 1e-4, 0, 5e-5], slippage=[0, 2e-5, 0, 1e-5, 2e-5, 0, 1e-5],
                 commission=[0, 3e-4, 0, 0, 3e-4, 0, 3e-4], financing=[0, 1e-5, 1e-5, 5e-6, 5e-6, 5e-6, 0])
    trades = [trade(1, 3, 1, 100.0, 108.9, 1.0, 1.089, 4e-4), trade(4, 6, -1, 110.0, 115.5, 1.26, 1.197, 3e-4),
              trade(3, 4, 1, 108.9, 110.2, 1.089, 1.2, 1e-4)]
    return base_case("recovery", E, ts, w, turnover, trades=trades, costs=costs)


def case_underwater():
    # Hourly bars; bars 4 -> 5 straddle a weekend (48 h). Peak 1.05 at bar 2; a one-bar dip at 3 recovers
    # at 4 (1.06); then under water from bar 5 to the end (bars 5..9, still open).
    E = [1.0, 1.02, 1.05, 1.03, 1.06, 1.01, 0.97, 0.99, 1.0, 0.98]
    hours = [0, 1, 2, 3, 4, 52, 53, 54, 55, 56]
    ts = [1_700_000_000 + 3600 * h for h in hours]
    w = [0, 1, 1, 1, -1, -1, 0.25, 0.25, 0, -0.75]
    turnover = [0, 1, 0, 0, 2, 0, 1.25, 0, 0.25, 0.75]
    rng = np.random.default_rng(7)
    costs = {k: np.concatenate([[0.0], rng.uniform(0, 2e-4, 9)]) for k in ["spread", "slippage", "commission"]}
    costs["financing"] = np.concatenate([[0.0], rng.uniform(-1e-5, 3e-5, 9)])
    trades = [trade(1, 4, 1, 2000.0, 2020.0, 1.0, 0.995, 3e-4), trade(4, 6, -1, 2020.0, 2030.5, 1.06, 0.97, 4e-4),
              trade(6, 8, 1, 2030.5, 2028.0, 0.97, 0.965, 2e-4)]
    return base_case("underwater", E, ts, w, turnover, rf=0.03, mar=0.01, n_trials=5, trades=trades, costs=costs)


def case_fat_tails():
    n = 200
    rng = np.random.default_rng(20260601)
    jumps = np.where(rng.random(n) < 0.04, -rng.exponential(0.02, n), 0.0)
    r = 0.0006 + 0.004 * rng.standard_t(3, n) + jumps
    E = np.concatenate([[1.0], np.cumprod(1 + r)]) * 1e5  # E_0 = 100,000 currency units
    gaps = rng.choice([3600, 3600, 3600, 7200, 3 * 86400], n)
    ts = np.concatenate([[1_600_000_000], 1_600_000_000 + np.cumsum(gaps)])
    levels = np.array([-1.0, -0.5, 0.0, 0.5, 1.0])
    w = np.zeros(n + 1)
    for i in range(1, n + 1):
        w[i] = w[i - 1] if rng.random() < 0.8 else levels[rng.integers(0, 5)]
    turnover = np.concatenate([[0.0], np.abs(np.diff(w))])
    price = 1800 * np.concatenate([[1.0], np.cumprod(1 + 0.5 * r)])
    costs = {k: np.concatenate([[0.0], turnover[1:] * E[:-1] * c])
             for k, c in [("spread", 1e-4), ("slippage", 2e-5), ("commission", 5e-5)]}
    costs["financing"] = np.concatenate([[0.0], np.abs(w[1:]) * E[:-1] * rng.normal(-2e-6, 4e-6, n)])
    # The ledger: a trade opens when w leaves 0 or flips sign and closes at the next 0 or flip; the last
    # one is force-closed at step N.
    trades, open_at = [], None
    sign = np.sign(w)
    for i in range(1, n + 1):
        if open_at is not None and (sign[i] != sign[open_at] or i == n):
            trades.append(trade(open_at, i, int(sign[open_at]), price[open_at - 1], price[i], E[open_at - 1], E[i],
                                float(sum(costs[k][open_at:i + 1].sum() for k in costs))))
            open_at = None
        if open_at is None and sign[i] != 0 and i < n:
            open_at = i
    return base_case("fat_tails", E, ts, w, turnover, rf=0.02, mar=0.0, n_trials=20, trades=trades, price=price,
                     costs=costs)


def case_flat():
    return base_case("flat", [1.0] * 5, [k * DAY for k in range(5)], [0] * 5, [0] * 5)


def case_winners():
    E = [1.0, 1.03, 1.05]
    trades = [trade(1, 1, 1, 10.0, 10.3, 1.0, 1.02, 1e-3), trade(1, 2, -1, 10.3, 10.1, 1.02, 1.05, 1e-3),
              trade(2, 2, 1, 10.1, 10.1, 1.05, 1.05, 0.0)]
    costs = dict(commission=[0, 2e-3, 1e-3])
    return base_case("winners", E, [0, DAY, 2 * DAY], [0, 1, -1], [0, 2, 2], n_trials=3, trades=trades, costs=costs)


def case_one_step():
    trades = [trade(1, 1, -1, 5.0, 5.05, 1.0, 0.99, 1e-3)]
    return base_case("one_step", [1.0, 0.99], [0, 3600], [0, -1], [0, 1], trades=trades, costs=dict(spread=[0, 1e-3]))


# --- C output ---------------------------------------------------------------------------------------------

def c_double(x):
    x = float(x)
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "-INFINITY"
    s = "%.17g" % x
    return s if any(ch in s for ch in ".en") else s + ".0"


def c_value(x):
    return str(int(x)) if isinstance(x, (int, np.integer)) and not isinstance(x, bool) else c_double(x)


def c_array(ctype, name, values, fmt):
    items = ", ".join(fmt(v) for v in values)
    return "static const %s %s[] = {%s};" % (ctype, name, items)


REPORT_INT_FIELDS = {"n_trades", "bootstrap_samples"}
METRICS_INT_FIELDS = {"n", "underwater_bars"}


def report_h_fields():
    """The fields of Report and Metrics as declared in the headers: the fixture must cover all of them."""
    def fields(path, struct):
        text = open(path).read()
        end = text.index("} %s;" % struct)
        body = text[text.rindex("typedef struct {", 0, end) + len("typedef struct {"):end]
        body = re.sub(r"//[^\n]*", "", body)
        names = []
        for decl in body.split(";"):
            decl = decl.strip()
            if decl:
                names += [re.sub(r"^[A-Za-z0-9_]+\s+", "", part.strip()).strip() if k == 0 else part.strip()
                          for k, part in enumerate(decl.split(","))]
        return names
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "envs")
    return fields(os.path.join(root, "metrics.h"), "Metrics"), fields(os.path.join(root, "report.h"), "Report")


def emit(case, out):
    name = case["name"]
    lines = []
    lines.append(c_array("int64_t", name + "_ts", case["ts"], lambda v: "%dLL" % v))
    for key in ["equity", "position", "turnover", "notional", "cost_spread", "cost_slippage", "cost_commission",
                "cost_financing"]:
        lines.append(c_array("double", "%s_%s" % (name, key), case[key], c_double))
    trades = case["trades"]
    if trades:
        items = []
        for t in trades:
            items.append("{.entry_step = %d, .exit_step = %d, .side = %d, .entry_price = %s, .exit_price = %s, "
                         ".entry_equity = %s, .exit_equity = %s, .net_pnl = %s, .cost = %s, .bars = %d}" % (
                             t["entry_step"], t["exit_step"], t["side"], c_double(t["entry_price"]),
                             c_double(t["exit_price"]), c_double(t["entry_equity"]), c_double(t["exit_equity"]),
                             c_double(t["net_pnl"]), c_double(t["cost"]), t["bars"]))
        lines.append("static const ReportTrade %s_trades[] = {\n    %s};" % (name, ",\n    ".join(items)))
    metrics_fields, report_fields = report_h_fields()
    assert set(out["m"]) == set(metrics_fields), (sorted(out["m"]), metrics_fields)
    assert set(out) == set(report_fields), (sorted(out), report_fields)
    m = ", ".join(".%s = %s" % (k, c_value(out["m"][k])) for k in metrics_fields)
    rest = ",\n      ".join(".%s = %s" % (k, c_value(out[k])) for k in report_fields if k != "m")
    struct = (
        '  {"%s",\n   {.n = %d, .ts = %s_ts, .equity = %s_equity, .position = %s_position, .turnover = %s_turnover,\n'
        '    .notional = %s_notional, .cost_spread = %s_cost_spread, .cost_slippage = %s_cost_slippage,\n'
        '    .cost_commission = %s_cost_commission, .cost_financing = %s_cost_financing,\n'
        '    .trades = %s, .n_trades = %d},\n'
        '   {.rf = %s, .mar = %s, .n_trials = %d, .bootstrap_samples = 0, .block_mean = 0, .seed = 1},\n'
        '   {.m = {%s},\n      %s}}') % (
        name, case["n"], *([name] * 9), (name + "_trades") if trades else "NULL", len(trades), c_double(case["rf"]),
        c_double(case["mar"]), case["n_trials"], m, rest)
    return "\n".join(lines), struct


def main():
    cases = [case_recovery(), case_underwater(), case_fat_tails(), case_flat(), case_winners(), case_one_step()]
    print("// test/data/report_golden.inc: generated by test/make_report_fixtures.py; do not edit.")
    print("// numpy %s, scipy %s, Python %s" % (np.__version__, scipy.__version__, sys.version.split()[0]))
    print("// Per case: its input arrays, then golden_cases[] = {name, ReportInput, ReportOptions, expected Report}.")
    structs = []
    for case in cases:
        arrays, struct = emit(case, report(case))
        print("\n// --- %s: N = %d, %d trades" % (case["name"], case["n"], len(case["trades"])))
        print(arrays)
        structs.append(struct)
    print("\nstatic const GoldenCase golden_cases[] = {\n%s,\n};" % ",\n".join(structs))


if __name__ == "__main__":
    main()
