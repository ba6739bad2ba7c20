"""A numpy / Gymnasium port of the engine's "synthetic" trading env, for Stable-Baselines3 baselines.

What is ported, and how exactly
-------------------------------
The port follows envs/synthetic.c, envs/features.c and envs/trading_env.c (TRADING_ENV.md sections
1, 3, 4, 5, 6, 8) for the configuration the config schema (ppo/config_schema.c) gives by default:

  - market: the AR(1) generator (synthetic_model = ar1; gbm and regime are ported too), its
    xoshiro256** stream seeded through splitmix64 and its Box-Muller normals drawn in the same order,
    so (params, seed) gives the same prices bit for bit as the C code (same glibc libm);
  - features: the 16 causal features of features.c (hourly bars, sigma half-life 48, EMAs 12/48);
  - exec next_open, action_mode discrete3, reward log_return, reward_scale auto (100 hourly,
    10 daily), no shaping, no reward clip, use_data_spread off (synthetic data has no bid/ask);
  - costs: half_spread_bps / commission_bps / slippage_bps auto (1.0 / 0.35 / 0.5 bp for the
    unknown FX-like symbol SYNTH-*), fee_fixed, cost_mult and financing are honoured; slippage_vol_k
    and slippage_random_max_bps are not (both 0 by default);
  - episodes: splits auto (train = rows before the day after the bar at 70%), window 32, warmup
    3 x lookback = 360, episode_length 2048, stratified first starts, xoshiro per-env streams seeded
    as VecEnv does (rng_seed(rng_stream_seed(seed, env_index))), truncation after L_ep steps,
    termination when E <= (1 - max_loss) E_0, the forced close booked into the episode log.

Not ported (the C env's options other than the defaults): exec close, discrete_k / continuous /
toggle2 actions, pnl / dsr / d3r / vol_target rewards, shaping terms, reward_clip, position_onehot,
episode_progress, random_initial_position, evaluation passes, market files. The constructor refuses
what it does not model rather than silently differing.

Verified against the C env by bench/test_trading_env_np.py (observations, rewards and flags equal
to float32 for fixed action sequences, see there).

Seeding: the env's start-of-episode stream is fixed by (seed, env_index) as in the engine's VecEnv,
not by gymnasium's reset(seed=...) (SB3 passes seed + env_index there, which would break the match);
reset(seed=...) re-seeds the stream as rng_stream_seed(seed, env_index) only when reseed_on_reset is
True.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

try:  # gymnasium is only needed for the Env class, not for the market and feature code
    import gymnasium as gym
    from gymnasium import spaces
except ImportError:  # pragma: no cover
    gym = None
    spaces = None

MASK64 = (1 << 64) - 1
SECONDS_PER_DAY = 86400
SECONDS_PER_YEAR = 365.25 * 86400.0
EQUITY0 = 1.0
RUIN_EQUITY = 1e-12
FEATURES_COUNT = 16
FEATURES_CLIP = 5.0
LOG_NAMES = ("episode_return", "episode_length", "total_return", "log_growth", "sharpe", "max_drawdown",
             "n_trades", "turnover", "hit_rate", "avg_hold_bars", "cost_bps", "n")


# --- common/rng.c: splitmix64 and xoshiro256** ------------------------------------------------------

def splitmix64_next(state: int) -> tuple[int, int]:
    """Returns (new state, output word)."""
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def rng_stream_seed(base_seed: int, stream: int) -> int:
    """The seed of stream `stream` (env index) of base_seed, as rng_stream_seed."""
    sm = (base_seed ^ ((0xD1B54A32D192ED03 * (stream + 1)) & MASK64)) & MASK64
    return splitmix64_next(sm)[1]


class Rng:
    """xoshiro256** seeded through splitmix64 (common/rng.c), bit-exact."""

    __slots__ = ("s0", "s1", "s2", "s3")

    def __init__(self, seed: int):
        sm = seed & MASK64
        words = []
        for _ in range(4):
            sm, w = splitmix64_next(sm)
            words.append(w)
        self.s0, self.s1, self.s2, self.s3 = words

    def next_u64(self) -> int:
        s0, s1, s2, s3 = self.s0, self.s1, self.s2, self.s3
        x = (s1 * 5) & MASK64
        x = ((x << 7) | (x >> 57)) & MASK64
        result = (x * 9) & MASK64
        t = (s1 << 17) & MASK64
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = ((s3 << 45) | (s3 >> 19)) & MASK64
        self.s0, self.s1, self.s2, self.s3 = s0, s1, s2, s3
        return result

    def uniform(self) -> float:
        return (self.next_u64() >> 11) * (2.0 ** -53)

    def below(self, bound: int) -> int:
        # Lemire's multiply-shift with rejection, as rng_below.
        m = self.next_u64() * bound
        low = m & MASK64
        if low < bound:
            threshold = ((1 << 64) - bound) % bound
            while low < threshold:
                m = self.next_u64() * bound
                low = m & MASK64
        return m >> 64

    def normal(self) -> float:
        # Box-Muller, u1 in (0, 1], one variate per call (the second is discarded).
        u1 = 1.0 - self.uniform()
        u2 = self.uniform()
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)


# --- envs/synthetic.c (TRADING_ENV.md section 1) ------------------------------------------------------

def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@dataclass
class SyntheticParams:
    """synthetic_params_default() and the [env] synthetic_* keys."""

    model: str = "ar1"  # gbm | regime | ar1
    bars: int = 100_000
    bar_seconds: int = 3600
    start_ts: int = days_from_civil(2000, 1, 3) * 86400
    seed: int = 0
    start_price: float = 100.0
    drift: float = 0.0
    sigma: float = 0.001
    rho: float = 0.1
    switch_prob: float = 0.01
    drift2: float = 0.0
    sigma2: float = 0.003


@dataclass
class Market:
    ts: np.ndarray
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    symbol: str
    bar_seconds: int


def synthetic_market(p: SyntheticParams) -> Market:
    """synthetic_market_new: the same draws in the same order, so the same prices."""
    if p.model not in ("gbm", "regime", "ar1"):
        raise ValueError(f"synthetic model {p.model!r}: gbm, regime or ar1")
    T = int(p.bars)
    rng = Rng(p.seed)
    o, h, l, c = (np.empty(T) for _ in range(4))
    log_price = math.log(p.start_price)
    ar = 0.0
    state = 0
    prev_close = 0.0
    ar_scale = p.sigma * math.sqrt(1.0 - p.rho * p.rho)  # same expression as the C loop, hoisted
    for t in range(T):
        sigma_t, r = p.sigma, 0.0
        if p.model == "gbm":
            if t > 0:
                r = p.drift + p.sigma * rng.normal()
        elif p.model == "regime":
            if t > 0:
                if rng.uniform() < p.switch_prob:
                    state = 1 - state
                sigma_t = p.sigma2 if state else p.sigma
                r = (p.drift2 if state else p.drift) + sigma_t * rng.normal()
        else:
            if t == 0:
                ar = p.sigma * rng.normal()
            else:
                ar = p.rho * ar + ar_scale * rng.normal()
                r = p.drift + ar
        op = math.exp(log_price) if t == 0 else prev_close
        log_price += r
        cl = math.exp(log_price)
        up = abs(rng.normal()) * sigma_t * 0.5
        down = abs(rng.normal()) * sigma_t * 0.5
        o[t] = op
        c[t] = cl
        h[t] = (op if op > cl else cl) * math.exp(up)
        l[t] = (op if op < cl else cl) * math.exp(-down)
        prev_close = cl
    ts = p.start_ts + np.arange(T, dtype=np.int64) * p.bar_seconds
    symbol = {"gbm": "SYNTH-GBM", "regime": "SYNTH-REGIME", "ar1": "SYNTH-AR1"}[p.model]
    return Market(ts, o, h, l, c, symbol, p.bar_seconds)


# --- envs/features.c (TRADING_ENV.md section 4) --------------------------------------------------------

@dataclass
class Features:
    values: np.ndarray  # (T, 16) float32
    sigma: np.ndarray  # (T,) float64, NaN at t = 0
    lookback: int
    daily: bool


def _clip_feature(x: float) -> float:
    if x != x:
        return 0.0
    return FEATURES_CLIP if x > FEATURES_CLIP else -FEATURES_CLIP if x < -FEATURES_CLIP else x


def _ratio(x: float, d: float) -> float:
    return x / d if d > 0 else 0.0  # 0 where the denominator is not a positive number yet


def compute_features(m: Market, sigma_halflife: float | None = None, ema_fast: int = 12,
                     ema_slow: int = 48) -> Features:
    """features_compute: one forward pass in the C order (values rounded to float32 at the end)."""
    daily = m.bar_seconds >= 12 * 3600
    hl = sigma_halflife if sigma_halflife else (20.0 if daily else 48.0)
    horizons = (5, 21, 63) if daily else (4, 24, 120)
    lookback = int(math.ceil(max(horizons[2], ema_slow, 26, hl)))
    T = len(m.close)
    out = np.zeros((T, FEATURES_COUNT), dtype=np.float64)
    sig = np.empty(T)
    lam = math.pow(0.5, 1.0 / hl)
    lam_long = math.pow(0.5, 1.0 / (10.0 * hl))
    a_fast, a_slow = 2.0 / (ema_fast + 1.0), 2.0 / (ema_slow + 1.0)
    a12, a26, a_rsi = 2.0 / 13.0, 2.0 / 27.0, 1.0 / 14.0
    var_num = var_den = long_num = long_den = 0.0
    e_fast = e_slow = e12 = e26 = gain = loss = 0.0
    sigma_prev = float("nan")
    M = m.close.tolist()
    H, L, O = m.high.tolist(), m.low.tolist(), m.open.tolist()
    ts = m.ts.tolist()
    sqrt_k = [math.sqrt(float(k)) for k in horizons]
    log, sqrt, nan = math.log, math.sqrt, float("nan")
    for t in range(T):
        row = out[t]
        mt = M[t]
        r = 0.0
        if t == 0:
            e_fast = e_slow = e12 = e26 = mt
        else:
            r = log(mt / M[t - 1])
            var_num = lam * var_num + (1.0 - lam) * (r * r)
            var_den = lam * var_den + (1.0 - lam)
            long_num = lam_long * long_num + (1.0 - lam_long) * (r * r)
            long_den = lam_long * long_den + (1.0 - lam_long)
            e_fast += a_fast * (mt - e_fast)
            e_slow += a_slow * (mt - e_slow)
            e12 += a12 * (mt - e12)
            e26 += a26 * (mt - e26)
            move = mt - M[t - 1]
            gain += a_rsi * ((move if move > 0 else 0.0) - gain)
            loss += a_rsi * ((-move if move < 0 else 0.0) - loss)
        sigma = nan if t == 0 else sqrt(var_num / var_den)
        sigma_long = nan if t == 0 else sqrt(long_num / long_den)
        sig[t] = sigma
        ms = mt * sigma
        vals = [0.0] * FEATURES_COUNT
        vals[0] = _clip_feature(0.0 if t == 0 else _ratio(r, sigma_prev))
        for j, k in enumerate(horizons):
            vals[1 + j] = _clip_feature(0.0 if t < k else _ratio(log(mt / M[t - k]), sigma * sqrt_k[j]))
        vals[4] = _clip_feature(log(sigma / sigma_long) if sigma > 0 and sigma_long > 0 else 0.0)
        vals[5] = _clip_feature(_ratio(H[t] - L[t], ms))
        vals[6] = _clip_feature(_ratio(mt - O[t], ms))
        vals[7] = _clip_feature(_ratio(e_fast - mt, ms))
        vals[8] = _clip_feature(_ratio(e_slow - mt, ms))
        vals[9] = float((e_fast > e_slow) - (e_fast < e_slow))
        vals[10] = _clip_feature(_ratio(e12 - e26, ms))
        rsi = 100.0 * gain / (gain + loss) if gain + loss > 0 else 50.0
        vals[11] = _clip_feature((rsi - 50.0) / 50.0)
        vals[12] = 0.0  # spread: the synthetic market has no bid/ask
        vals[13] = _clip_feature(0.0 if t == 0 else math.log1p((ts[t] - ts[t - 1]) / 3600.0))
        if daily:
            # utc_weekday: 1970-01-01 was a Thursday (weekday 4 with Sunday = 0)
            phase = 2.0 * math.pi * ((ts[t] // 86400 + 4) % 7) / 7.0
        else:
            phase = 2.0 * math.pi * float((ts[t] % 86400) // 3600) / 24.0
        vals[14] = math.sin(phase)
        vals[15] = math.cos(phase)
        row[:] = vals
        sigma_prev = sigma
    return Features(out.astype(np.float32), sig, lookback, daily)


# --- envs/trading_env.c: the context (parameter resolution) ---------------------------------------

def _day_floor(ts: int) -> int:
    return (ts // SECONDS_PER_DAY) * SECONDS_PER_DAY


@dataclass
class TradingConfig:
    """The [env] keys the port honours; None = auto (resolved as trading_context_init does)."""

    synthetic: SyntheticParams = field(default_factory=SyntheticParams)
    max_leverage: float = 1.0
    reward_scale: float | None = None
    half_spread_bps: float | None = None
    commission_bps: float | None = None
    slippage_bps: float | None = None
    fee_fixed: float = 0.0
    financing_long_apr: float = 0.0
    financing_short_apr: float = 0.0
    cost_mult: float = 1.0
    episode_length: int | None = None
    window: int | None = None
    warmup: int | None = None
    max_loss: float = 0.5
    stratified_starts: bool = True
    sigma_halflife: float | None = None
    ema_fast: int = 12
    ema_slow: int = 48


class TradingContext:
    """The shared, read-only part: market, features, resolved parameters, split rows, start range."""

    def __init__(self, cfg: TradingConfig | None = None, market: Market | None = None):
        cfg = cfg or TradingConfig()
        self.cfg = cfg
        self.market = market if market is not None else synthetic_market(cfg.synthetic)
        self.features = compute_features(self.market, cfg.sigma_halflife, cfg.ema_fast, cfg.ema_slow)
        m, f = self.market, self.features
        daily = f.daily
        T = len(m.close)
        ts = m.ts
        # Splits (section 2): SYNTH-* is an unknown instrument, so val starts the day after the bar
        # at 70% of the rows, test after the bar at 85%; train starts on the first bar's day.
        train_start = _day_floor(int(ts[0]))
        val_start = _day_floor(int(ts[int(0.70 * (T - 1))])) + SECONDS_PER_DAY
        self.train_lo = int(np.searchsorted(ts, train_start, side="left"))
        self.train_hi = int(np.searchsorted(ts, val_start, side="left"))
        # Costs (section 7): unknown symbol, intraday -> FX class: 1.0 / 0.35 / 0.5 bp.
        stock = daily
        half_spread_bps = cfg.half_spread_bps if cfg.half_spread_bps is not None else 1.0
        commission_bps = cfg.commission_bps if cfg.commission_bps is not None else (0.5 if stock else 0.35)
        slippage_bps = cfg.slippage_bps if cfg.slippage_bps is not None else (1.0 if stock else 0.5)
        k = cfg.cost_mult
        self.half_spread = half_spread_bps * 1e-4 * k
        self.commission = commission_bps * 1e-4 * k
        self.slippage = slippage_bps * 1e-4 * k
        self.fee = cfg.fee_fixed * k
        self.financing_long = cfg.financing_long_apr * k
        self.financing_short = cfg.financing_short_apr * k
        # Section 6: reward_scale auto = 100 intraday, 10 daily.
        self.reward_scale = cfg.reward_scale if cfg.reward_scale is not None else (10.0 if daily else 100.0)
        self.max_loss = cfg.max_loss
        # Section 5 DISCRETE3: targets {-L, 0, +L}; the middle level is exactly flat.
        L = cfg.max_leverage
        self.levels = (-L, 0.0, L)
        self.flat_level = 1
        # Section 8: episode ranges. Decisions need the mark (t+1) and the forced close's open (t+2).
        self.window = cfg.window if cfg.window is not None else (30 if daily else 32)
        warmup = cfg.warmup if cfg.warmup is not None else 3 * f.lookback
        L_ep = cfg.episode_length if cfg.episode_length is not None else (252 if daily else 2048)
        first_valid = max(warmup, self.window - 1)
        self.start_lo = max(self.train_lo, first_valid)
        tail = 2
        room = self.train_hi - tail - self.start_lo
        self.episode_length = min(L_ep, room)
        if self.episode_length < 1:
            raise ValueError("trading: the train split has no room for an episode after the warm-up")
        self.start_hi = self.train_hi - tail - self.episode_length
        self.stratified_starts = cfg.stratified_starts
        self.obs_dim = self.window * FEATURES_COUNT + 5
        # Plain Python lists: scalar indexing into them is much faster than into numpy arrays.
        self.close = m.close.tolist()
        self.open = m.open.tolist()
        self.high = m.high.tolist()
        self.low = m.low.tolist()
        self.ts = m.ts.tolist()
        sig = f.sigma
        self.sigma = np.where(sig > 0, sig, 0.0).tolist()  # sigma_at: NaN and 0 -> 0
        self.flat_features = f.values.reshape(-1)


# --- envs/trading_env.c: one env --------------------------------------------------------------------

def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


class TradingEnvCore:
    """trading_env_reset / trading_env_step for one env, in Python floats (doubles, as the C code)."""

    def __init__(self, ctx: TradingContext, env_index: int = 0, num_envs: int = 1, seed: int = 0):
        self.ctx = ctx
        self.env_index = env_index
        self.num_envs = num_envs
        self.rng = Rng(rng_stream_seed(seed, env_index))
        self.started = False
        self.obs_buf = np.zeros(ctx.obs_dim, dtype=np.float32)

    def reseed(self, seed: int) -> None:
        self.rng = Rng(rng_stream_seed(seed, self.env_index))
        self.started = False

    # Section 8 training reset: the first start inside stratum env_index of num_envs, later ones
    # uniform over [start_lo, start_hi]; flat, E_0 = 1.
    def reset(self) -> np.ndarray:
        c = self.ctx
        span = c.start_hi - c.start_lo + 1
        if not self.started and c.stratified_starts and self.num_envs > 1:
            lo = span * self.env_index // self.num_envs
            hi = span * (self.env_index + 1) // self.num_envs
            if hi <= lo:
                hi = lo + 1
            start = c.start_lo + lo + self.rng.below(hi - lo)
        else:
            start = c.start_lo + self.rng.below(span)
        self.started = True
        self.t = self.start = start
        self.end = start + c.episode_length
        self.q = 0.0
        self.cash = self.equity = self.equity_peak = self.prev_equity = self.exit_equity = EQUITY0
        self.entry_price = 0.0
        self.last_cost_bp = 0.0
        self.level = c.flat_level
        self.reward_sum = self.ret_sum = self.ret_sq_sum = self.last_ret = 0.0
        self.max_dd = self.turnover_sum = self.cost_sum = self.trade_entry_equity = self.hold_bars_sum = 0.0
        self.steps = self.bars_in_position = 0
        self.trades_opened = self.trades_closed = self.trades_won = 0
        return self._observe()

    # Section 4: W feature rows t-W+1..t, then the agent state.
    def _observe(self, equity: float | None = None) -> np.ndarray:
        c = self.ctx
        W, F = c.window, FEATURES_COUNT
        obs = self.obs_buf
        obs[: W * F] = c.flat_features[(self.t - W + 1) * F:(self.t + 1) * F]
        M = c.close[self.t]
        E = self.equity if equity is None else equity
        sigma = c.sigma[self.t]
        q = self.q
        obs[W * F] = q * M / E
        obs[W * F + 1] = _sign(q) * math.log(M / self.entry_price) / sigma if q != 0 and sigma > 0 else 0.0
        obs[W * F + 2] = min(self.bars_in_position, 500) / 100.0
        obs[W * F + 3] = 1.0 - E / self.equity_peak
        obs[W * F + 4] = self.last_cost_bp
        return obs.copy()

    # Section 3 fill at bar b's open, no bid/ask: O (1 +- (half_spread + s)), capped to bar b's range.
    def _fill(self, b: int, dq: float) -> tuple[float, float, float]:
        """(price, mid, commission) of a fill of dq units at bar b's open."""
        c = self.ctx
        m = c.open[b]
        if dq > 0:
            price = m * (1.0 + c.half_spread + c.slippage)
            if not price < c.high[b]:
                price = c.high[b]
        else:
            price = m * (1.0 - c.half_spread - c.slippage)
            if not price > c.low[b]:
                price = c.low[b]
        return price, m, c.commission * abs(dq) * price

    # Section 9 trade bookkeeping (book_trades): entry price, bars in position, trade counts.
    def _book_trades(self, q_old: float, dq: float, equity_at_fill: float, fill_cost: float, price: float) -> None:
        q_new = q_old + dq
        s_old, s_new = _sign(q_old), _sign(q_new)
        closes = s_old != 0 and s_new != s_old
        exit_cost = fill_cost * abs(q_old) / abs(dq) if closes else 0.0
        if closes:
            pnl = equity_at_fill - exit_cost - self.trade_entry_equity
            self.trades_closed += 1
            self.trades_won += pnl > 0
            self.hold_bars_sum += self.bars_in_position
            self.bars_in_position = 0
        if s_new != 0 and s_new != s_old:
            self.trade_entry_equity = equity_at_fill - exit_cost
            self.trades_opened += 1
            self.entry_price = price
            self.bars_in_position = 0
        elif s_new != 0 and abs(q_new) > abs(q_old):
            self.entry_price = (abs(q_old) * self.entry_price + abs(dq) * price) / abs(q_new)

    def step(self, action: int):
        """Returns (obs, reward float32, terminated, truncated, episode_log or None)."""
        c = self.ctx
        t = self.t
        if t >= self.end:
            raise RuntimeError("trading: step after the episode ended; reset first")
        M_t, E_t = c.close[t], self.equity
        # 1. Target (section 5, DISCRETE3); no trade when the level is unchanged (section 3).
        level = int(action)
        if not 0 <= level < 3:
            raise ValueError("trading: a discrete action must lie in 0..2")
        w_target = c.levels[level]
        trade = level != self.level
        dq = w_target * E_t * 1.0 / M_t - self.q if trade else 0.0
        # 2. Fill at the next open; K -= dq F + commission + fee (section 3).
        step_cost = 0.0
        if dq != 0:
            price, mid, commission = self._fill(t + 1, dq)
            fill_cost = dq * (price - mid) + commission + c.fee
            self._book_trades(self.q, dq, self.cash + self.q * mid, fill_cost, price)
            self.cash -= dq * price + commission + c.fee
            self.q += dq
            self.turnover_sum += abs(dq) * M_t / E_t
            step_cost += fill_cost
        if self.q == 0:
            self.entry_price = 0.0
        # 3. Financing over t -> t+1 by the timestamps (weekends charged).
        rate = c.financing_long if self.q > 0 else c.financing_short
        financing = abs(self.q) * M_t * rate * float(c.ts[t + 1] - c.ts[t]) / SECONDS_PER_YEAR if self.q != 0 else 0.0
        self.cash -= financing
        step_cost += financing
        # 4. Mark to market at the mid close of bar t+1.
        E1 = self.cash + self.q * c.close[t + 1]
        self.t = t + 1
        self.steps += 1
        if self.q != 0:
            self.bars_in_position += 1
        self.level = level
        # 5. Reward LOG_RETURN x reward_scale (section 6), with the ruin guard.
        R = E1 / E_t - 1.0
        log_return = math.log((E1 if E1 > 0 else RUIN_EQUITY * EQUITY0) / E_t)
        peak_before, max_dd_before = self.equity_peak, self.max_dd  # over E_0..E_t, for the log
        if E1 > self.equity_peak:
            self.equity_peak = E1
        dd_after = 1.0 - E1 / self.equity_peak
        r = log_return * c.reward_scale
        # 6. Episode statistics.
        self.reward_sum += r
        self.ret_sum += R
        self.ret_sq_sum += R * R
        self.last_ret = R
        self.prev_equity = E_t
        if dd_after > self.max_dd:
            self.max_dd = dd_after
        self.cost_sum += step_cost
        self.last_cost_bp = step_cost / E_t * 1e4
        self.equity = E1
        terminated = E1 <= (1.0 - c.max_loss) * EQUITY0  # section 3: max-loss termination
        truncated = self.t >= self.end  # section 8: L_ep reached
        # E_N's observation before the forced close's booking resets the bars held (the C env's order)
        obs = self._observe() if E1 > 0 else self._observe(equity=RUIN_EQUITY * EQUITY0)
        log = self._finish(peak_before, max_dd_before) if terminated or truncated else None
        return obs, np.float32(r), bool(terminated), bool(truncated), log

    # Section 3: the forced close at the next open, booked into the report (not the reward).
    def _finish(self, peak_before: float, max_dd_before: float) -> dict:
        c = self.ctx
        exit_equity = self.equity
        if self.q != 0:
            dq = -self.q
            price, mid, commission = self._fill(self.t + 1, dq)
            fill_cost = dq * (price - mid) + commission + c.fee
            equity_at_fill = self.cash + self.q * mid
            self._book_trades(self.q, dq, equity_at_fill, fill_cost, price)
            exit_equity = equity_at_fill - fill_cost
            self.cost_sum += fill_cost
        self.exit_equity = exit_equity
        n = self.steps
        r_exit = exit_equity / self.prev_equity - 1.0
        s = self.ret_sum - self.last_ret + r_exit
        sq = self.ret_sq_sum - self.last_ret * self.last_ret + r_exit * r_exit
        sharpe = 0.0
        if n >= 2:
            mean = s / n
            var = (sq - n * mean * mean) / (n - 1)
            years = (c.ts[self.t] - c.ts[self.start]) / SECONDS_PER_YEAR
            if var > 0 and years > 0:
                sharpe = mean / math.sqrt(var) * math.sqrt(n / years)
        peak = max(peak_before, exit_equity)  # the curve E_0..E_{N-1}, exit equity
        max_dd = max(max_dd_before, 1.0 - exit_equity / peak)
        vals = (self.reward_sum, n, exit_equity / EQUITY0 - 1.0,
                math.log(exit_equity / EQUITY0 if exit_equity > 0 else RUIN_EQUITY), sharpe, max_dd,
                self.trades_opened, self.turnover_sum / n if n > 0 else 0.0,
                self.trades_won / self.trades_closed if self.trades_closed > 0 else float("nan"),
                self.hold_bars_sum / self.trades_closed if self.trades_closed > 0 else float("nan"),
                self.cost_sum / EQUITY0 * 1e4, n)
        return {k: float(np.float32(v)) for k, v in zip(LOG_NAMES, vals)}


if gym is not None:

    class SyntheticTradingEnv(gym.Env):
        """Gymnasium wrapper: Discrete(3) actions, Box(obs_dim) float32 observations.

        Several envs can share one TradingContext (the market and features are read-only), as the
        engine's envs do; make them with make_env_fns().
        """

        metadata = {"render_modes": []}

        def __init__(self, ctx: TradingContext | None = None, env_index: int = 0, num_envs: int = 1,
                     seed: int = 0, reseed_on_reset: bool = False):
            super().__init__()
            self.ctx = ctx if ctx is not None else TradingContext()
            self.core = TradingEnvCore(self.ctx, env_index, num_envs, seed)
            self.reseed_on_reset = reseed_on_reset
            self.action_space = spaces.Discrete(3)
            self.observation_space = spaces.Box(-np.inf, np.inf, shape=(self.ctx.obs_dim,), dtype=np.float32)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            if seed is not None and self.reseed_on_reset:
                self.core.reseed(seed)
            return self.core.reset(), {}

        def step(self, action):
            obs, r, term, trunc, log = self.core.step(int(action))
            info = {"episode_log": log} if log is not None else {}
            return obs, float(r), term, trunc, info


def make_env_fns(num_envs: int, seed: int = 0, cfg: TradingConfig | None = None, ctx: TradingContext | None = None):
    """Thunks for SB3's DummyVecEnv / SubprocVecEnv, sharing one context (built once)."""
    ctx = ctx if ctx is not None else TradingContext(cfg)
    return [(lambda i=i: SyntheticTradingEnv(ctx, i, num_envs, seed)) for i in range(num_envs)]
