// test/test_trading_env.c: the trading simulator's execution and accounting invariant
// (TRADING_ENV.md sections 3-7 and section 10, tests 2-4), on shipped data and hand-made bars.
//
// Expected values are built from the bars and the spec's formulas directly (fill price = ask_open
// (1 + s), units = w E / M, ...), not by calling the env's own helpers; the one exception is the
// differential Sharpe and downside-deviation updates (dsr_step, d3r_step), which
// variants_from_the_same_equity runs on its own independently warmed state and which
// test_trading_metrics checks against finite differences and known answers.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"
#include "envs/synthetic.h"
#include "trading_test_util.h"

static float *obs_new(const TradingContext *c) { return calloc((size_t)c->obs_dim, sizeof(float)); }

typedef struct {
  float reward;
  uint8_t terminated, truncated;
  float log[TRADING_LOG_SIZE];
} StepOut;

static StepOut step_level(TradingEnv *e, int32_t level, float *obs) {
  StepOut o = {0};
  trading_env_step(e, &level, obs, &o.reward, &o.terminated, &o.truncated, o.log);
  return o;
}

static StepOut step_cont(TradingEnv *e, float a, float *obs) {
  StepOut o = {0};
  trading_env_step(e, &a, obs, &o.reward, &o.terminated, &o.truncated, o.log);
  return o;
}

// A hand-made hourly market for execution tests: `rows` bars of mid 100, half spread 0.01, evaluated
// from row 10 with a window of 4 and no warm-up; costs as the caller set them in *p.
static void hand_context(TradingContext *c, Features **f, MarketData *d, TradingParams *p) {
  *f = features_for(d);
  p->window = 4, p->warmup = 0, p->eval = true, p->eval_split = TRADING_SPLIT_TRAIN, p->eval_offset = 10 - 3;
  p->val_start = d->ts[d->rows - 3] / 86400 * 86400 + 86400;
  p->test_start = p->val_start + 86400, p->test_end = p->test_start;
  context_for(c, d, *f, p);
  cr_assert_eq(c->eval_start, 10);
}

// An env on a hand-made market, started: hand_context's context on d (the HandEnv owns d from here),
// the features, an observation buffer, and the env at its first step.
typedef struct {
  MarketData *d;
  Features *f;
  TradingContext c;
  float *obs;
  TradingEnv e;
} HandEnv;

static void hand_env_open(HandEnv *h, MarketData *d, TradingParams *p) {
  h->d = d;
  hand_context(&h->c, &h->f, d, p);
  h->obs = obs_new(&h->c);
  env_start(&h->e, &h->c, h->obs);
}

// The same market and features under other params: a new context and observation buffer (returned),
// the env started again.
static float *hand_env_restart(HandEnv *h, const TradingParams *p) {
  context_for(&h->c, h->d, h->f, p);
  free(h->obs);
  h->obs = obs_new(&h->c);
  env_start(&h->e, &h->c, h->obs);
  return h->obs;
}

// hand_env_open on 60 bars of a flat mid 100 without costs; returns the params it used.
static TradingParams hand_env_flat(HandEnv *h) {
  TradingParams p = trading_params_default();
  params_zero_cost(&p);
  hand_env_open(h, market_flat(60, 100.0, 0.0, "TEST"), &p);
  return p;
}

static void hand_env_close(HandEnv *h) {
  free(h->obs);
  features_free(h->f);
  market_data_free(h->d);
}

// --- timing -----------------------------------------------------------------------------------------

// Bars after t_k replaced by noise: the observation and every reward up to t_k are unchanged.
Test(trading_timing, future_perturbation_leaves_obs_unchanged) {
  MarketData *d = load_shipped("EURUSD_1H.h5");
  Features *f = features_for(d);
  TradingParams p = trading_params_default();
  p.eval = true, p.eval_split = TRADING_SPLIT_TEST, p.eval_offset = 500;
  TradingContext c;
  context_for(&c, d, f, &p);
  const int K = 60;
  float *obs_a = obs_new(&c), *obs_b = obs_new(&c);
  float rewards[60];
  TradingEnv e;
  env_start(&e, &c, obs_a);
  for (int k = 0; k < K; k++) rewards[k] = step_level(&e, (int32_t)((k / 7) % 3), obs_a).reward;
  const int64_t t = e.t;

  MarketData *noisy = market_prefix(d, d->rows);
  Rng rng;
  rng_seed(&rng, 5);
  for (int64_t i = t + 1; i < d->rows; i++) {
    double o = 1.1 * (1 + 0.02 * rng_normal(&rng)), cl = 1.1 * (1 + 0.02 * rng_normal(&rng));
    bar_set(noisy, i, o, (o > cl ? o : cl) * 1.001, (o < cl ? o : cl) * 0.999, cl, 2e-5);
  }
  cr_assert_eq(market_data_validate(noisy, "noisy"), 0, "%s", error_message());
  Features *g = features_for(noisy);
  TradingContext c2;
  context_for(&c2, noisy, g, &p);
  TradingEnv e2;
  env_start(&e2, &c2, obs_b);
  for (int k = 0; k < K; k++) {
    float r = step_level(&e2, (int32_t)((k / 7) % 3), obs_b).reward;
    cr_assert_eq(memcmp(&r, &rewards[k], sizeof r), 0, "reward %d changed by noise after t", k);
  }
  cr_assert_eq(e2.t, t);
  cr_assert_eq(memcmp(obs_a, obs_b, sizeof(float) * (size_t)c.obs_dim), 0, "obs_t changed by bars after t");
  // The next step does see bar t+1: the noise must show (else this test could not fail).
  step_level(&e, 2, obs_a), step_level(&e2, 2, obs_b);
  cr_assert_neq(memcmp(obs_a, obs_b, sizeof(float) * (size_t)c.obs_dim), 0);
  free(obs_a), free(obs_b);
  features_free(f), features_free(g);
  market_data_free(d), market_data_free(noisy);
}

// A spike in bar t's close is seen at t; the fill is at bar t+1's ask open, so the spike is not earned.
// CLOSE mode fills at bar t's close instead (the cheat the spec allows only for parity).
Test(trading_timing, spike_fills_at_next_open) {
  for (int mode = 0; mode < 2; mode++) {
    MarketData *d = market_flat(40, 100.0, 0.01, "TEST");
    bar_set(d, 12, 100, 110, 100, 110, 0.01);  // the spike, seen at t = 12
    bar_set(d, 13, 112, 113, 111, 112.5, 0.01);
    for (int64_t i = 14; i < 40; i++) bar_set(d, i, 112.5, 112.5, 112.5, 112.5, 0.01);
    cr_assert_eq(market_data_validate(d, "spike"), 0, "%s", error_message());
    TradingParams p = trading_params_default();
    p.exec = mode == 0 ? TRADING_EXEC_NEXT_OPEN : TRADING_EXEC_CLOSE;
    p.commission_bps = 0.35, p.slippage_bps = 0;
    HandEnv h;
    hand_env_open(&h, d, &p);
    TradingEnv *e = &h.e;
    float *obs = h.obs;
    step_level(e, 1, obs), step_level(e, 1, obs);  // flat at t = 10, 11
    cr_assert_eq(e->t, 12);
    const double q = 1.0 / 110.0, com = 0.35e-4;
    step_level(e, 2, obs);  // long, decided after the spike
    if (mode == 0) {
      cr_assert_eq(e->fill_price, 112.01, "NEXT_OPEN: the ask at bar 13's open");
      cr_assert_float_eq(e->equity, 1 - q * 112.01 * (1 + com) + q * 112.5, 1e-14);
    } else {
      cr_assert_eq(e->fill_price, 110.01, "CLOSE: the ask at bar 12's close");
      cr_assert_float_eq(e->equity, 1 - q * 110.01 * (1 + com) + q * 112.5, 1e-14);
    }
    cr_assert_float_eq(e->fill_units, q, 1e-18);
    hand_env_close(&h);
  }
}

// The peeking oracle sign(M_{t+1} - M_t) cannot be read from obs_t (two futures, one observation);
// fed from outside in CLOSE mode it is hugely profitable.
Test(trading_timing, peeking_oracle) {
  MarketData *d = load_shipped("EURUSD_1H.h5");
  MarketData *up = market_prefix(d, d->rows), *down = market_prefix(d, d->rows);
  Features *f = features_for(d);
  TradingParams p = trading_params_default();
  p.eval = true, p.eval_split = TRADING_SPLIT_VAL, p.eval_offset = 100;
  TradingContext c;
  context_for(&c, d, f, &p);
  const int64_t t = c.eval_start;
  const double m = d->close[t];
  bar_set(up, t + 1, m, m * 1.01, m, m * 1.01, 1e-5);
  bar_set(down, t + 1, m, m, m * 0.99, m * 0.99, 1e-5);
  cr_assert_eq(market_data_validate(up, "up"), 0, "%s", error_message());
  cr_assert_eq(market_data_validate(down, "down"), 0, "%s", error_message());
  Features *fu = features_for(up), *fd = features_for(down);
  TradingContext cu, cd;
  context_for(&cu, up, fu, &p), context_for(&cd, down, fd, &p);
  float *ou = obs_new(&c), *od = obs_new(&c);
  TradingEnv eu, ed;
  env_start(&eu, &cu, ou), env_start(&ed, &cd, od);
  cr_assert_eq(memcmp(ou, od, sizeof(float) * (size_t)c.obs_dim), 0, "obs_t differs between two futures");

  // The oracle from outside, zero costs, CLOSE mode, 2000 bars of the validation split.
  TradingParams q = p;
  params_zero_cost(&q);
  q.exec = TRADING_EXEC_CLOSE;
  TradingContext cc;
  context_for(&cc, d, f, &q);
  float *obs = obs_new(&cc);
  TradingEnv e;
  env_start(&e, &cc, obs);
  for (int k = 0; k < 2000; k++) {
    int64_t s = e.t;
    step_level(&e, d->close[s + 1] > d->close[s] ? 2 : d->close[s + 1] < d->close[s] ? 0 : 1, obs);
  }
  cr_assert_gt(log(e.equity), 1.0, "oracle log growth %g over 2000 bars", log(e.equity));
  free(ou), free(od), free(obs);
  features_free(f), features_free(fu), features_free(fd);
  market_data_free(d), market_data_free(up), market_data_free(down);
}

// --- accounting --------------------------------------------------------------------------------------

// Random levels on XAUUSD with every cost on (data spread, commission, slippage incl. random and
// vol-scaled, fixed fee, financing): per episode the log-return rewards sum to ln(E_N/E_0), and cash
// and units rebuilt from the per-step fills (the ledger) give the env's equity.
Test(trading_accounting, rewards_sum_and_ledger_rebuild) {
  MarketData *d = load_shipped("XAUUSD_1H.h5");
  Features *f = features_for(d);
  TradingParams p = trading_params_default();
  p.reward_scale = 1, p.episode_length = 300, p.fee_fixed = 1e-5, p.slippage_vol_k = 0.1;
  p.slippage_random_max_bps = 2, p.financing_long_apr = 0.05, p.financing_short_apr = 0.03, p.max_leverage = 2;
  TradingContext c;
  context_for(&c, d, f, &p);
  float *obs = obs_new(&c);
  TradingEnv e;
  env_start(&e, &c, obs);
  Rng rng;
  rng_seed(&rng, 77);
  double sum_exact = 0, sum_float = 0, cash = 1, units = 0;
  int episodes = 0;
  for (int k = 0; k < 3000; k++) {
    StepOut o = step_level(&e, (int32_t)rng_below(&rng, 3), obs);
    sum_exact += e.reward_exact, sum_float += o.reward;
    cash -= e.fill_units * e.fill_price + e.fill_commission + e.fill_fee + e.fill_financing;
    units += e.fill_units;
    double rebuilt = cash + units * d->close[e.t];
    cr_assert_float_eq(rebuilt, e.equity, 1e-12, "step %d: ledger equity %.17g, env %.17g", k, rebuilt, e.equity);
    if (o.terminated | o.truncated) {
      cr_assert_float_eq(sum_exact, log(e.equity), 1e-9, "sum of rewards vs ln(E_N/E_0)");
      cr_assert_float_eq(sum_float, log(e.equity), 1e-5);
      cr_assert_float_eq(o.log[ENV_LOG_EPISODE_RETURN], (float)sum_exact, 1e-5);
      cr_assert_float_eq(o.log[2], (float)(e.exit_equity - 1), 1e-7, "total_return is net of the forced close");
      cr_assert_leq(e.exit_equity,
                    units == 0 ? e.equity : e.equity + fabs(units) * fabs(d->open[e.t + 1] - d->close[e.t]));
      cr_assert_gt(o.log[10], 0.0f, "costs paid");
      episodes++;
      trading_env_reset(&e, obs);
      sum_exact = sum_float = 0, cash = 1, units = 0;
    }
  }
  cr_assert_geq(episodes, 9);
  free(obs);
  features_free(f);
  market_data_free(d);
}

// Zero costs, always long: on a gapless market E_N = M_N / M_first_fill exactly; on XAUUSD (gaps
// between close and next open) E_N = 1 + (M_N - F) / M_s with F = open[s+1].
Test(trading_accounting, always_long_tracks_price) {
  SyntheticParams sp = synthetic_params_default();
  sp.model = SYNTHETIC_GBM, sp.bars = 20000, sp.sigma = 0.002, sp.seed = 11;
  MarketData *g = synthetic_market_new(&sp);
  MarketData *x = load_shipped("XAUUSD_1H.h5");
  MarketData *markets[2] = {g, x};
  for (int k = 0; k < 2; k++) {
    const MarketData *d = markets[k];
    Features *f = features_for(d);
    TradingParams p = trading_params_default();
    params_zero_cost(&p);
    p.eval = true, p.eval_split = TRADING_SPLIT_TRAIN;
    TradingContext c;
    context_for(&c, d, f, &p);
    float *obs = obs_new(&c);
    TradingEnv e;
    env_start(&e, &c, obs);
    const int64_t s = e.t;
    StepOut o;
    do o = step_level(&e, 2, obs);
    while (!(o.terminated | o.truncated));
    const int64_t n = e.t;
    cr_assert_eq(o.terminated, 0);
    cr_assert_eq(n, c.eval_end);
    double M_s = d->close[s], F = d->open[s + 1], M_n = d->close[n];
    if (k == 0) {
      cr_assert_float_eq(e.equity, M_n / F, 1e-12 * M_n / F, "E_N %.17g vs M_N/M_first_fill %.17g", e.equity, M_n / F);
    } else {
      cr_assert_float_eq(e.equity, 1 + (M_n - F) / M_s, 1e-12);
      cr_assert_float_eq(e.exit_equity, 1 + (d->open[n + 1] - F) / M_s, 1e-12, "forced close at the next open");
      cr_assert_float_eq(e.equity, M_n / F, 0.01, "tracks M_N / M_first_fill");
    }
    cr_assert_eq(o.log[6], 1.0f, "one trade");
    free(obs);
    features_free(f);
  }
  market_data_free(g), market_data_free(x);
}

// Buy at t0, sell at t0 + 1, mid unchanged: the loss is exactly the spread plus two commissions,
// scaled by cost_mult, plus two fixed fees.
Test(trading_accounting, round_trip_at_unchanged_mid) {
  const double mults[] = {1.0, 2.0, 0.0};
  for (int k = 0; k < 3; k++) {
    MarketData *d = market_flat(40, 100.0, 0.01, "TEST");
    for (int64_t i = 0; i < 40; i++) bar_set(d, i, 100, 101, 99, 100, 0.01);  // a range: no cap binds
    cr_assert_eq(market_data_validate(d, "range"), 0, "%s", error_message());
    TradingParams p = trading_params_default();
    p.cost_mult = mults[k], p.fee_fixed = 1e-4, p.commission_bps = 0.35, p.slippage_bps = 0;
    HandEnv h;
    hand_env_open(&h, d, &p);
    TradingEnv *e = &h.e;
    float *obs = h.obs;
    step_level(e, 2, obs);
    StepOut o = step_level(e, 1, obs);
    const double m = mults[k], q = 1.0 / 100.0, ask = 100 + 0.01 * m, bid = 100 - 0.01 * m, com = 0.35e-4 * m;
    double expect = 1 - q * (ask - bid) - com * q * (ask + bid) - 2 * 1e-4 * m;
    cr_assert_float_eq(e->equity, expect, 1e-15, "cost_mult %g: E %.17g, expected %.17g", m, e->equity, expect);
    cr_assert_float_eq(1 - expect, m * (2e-4 + 2 * 0.35e-4 + 2e-4), 1e-15, "spread 2 bp + 2 x 0.35 bp + fees");
    cr_assert_eq(e->q, 0.0);
    (void)o;
    hand_env_close(&h);
  }
}

// Financing by timestamps: a weekend gap of 49 hours is charged 49 hours of the annual rate.
Test(trading_accounting, financing_charges_weekends) {
  MarketData *d = market_flat(40, 100.0, 0.0, "TEST");
  for (int64_t i = 13; i < 40; i++) d->ts[i] += 48 * 3600;  // bar 12 -> 13 spans 49 h
  cr_assert_eq(market_data_validate(d, "weekend"), 0, "%s", error_message());
  TradingParams p = trading_params_default();
  params_zero_cost(&p);
  p.financing_long_apr = 0.10, p.financing_short_apr = 0.04;
  HandEnv h;
  hand_env_open(&h, d, &p);
  TradingEnv *e = &h.e;
  float *obs = h.obs;
  step_level(e, 2, obs);  // t = 10 -> 11
  const double year = 365.25 * 86400;
  cr_assert_float_eq(e->fill_financing, 0.01 * 100 * 0.10 * 3600 / year, 1e-18);
  step_level(e, 2, obs);  // 11 -> 12
  step_level(e, 2, obs);  // 12 -> 13: the weekend
  double q = 0.01;
  cr_assert_float_eq(e->fill_financing, q * 100 * 0.10 * 49 * 3600 / year, 1e-18);
  cr_assert_float_eq(e->equity, 1 - q * 100 * 0.10 * (1 + 1 + 49) * 3600 / year, 1e-15);
  step_level(e, 0, obs);  // short: the short rate on the new position
  cr_assert_float_eq(e->fill_financing, fabs(e->q) * 100 * 0.04 * 3600 / year, 1e-18);
  hand_env_close(&h);
}

// Financing for t -> t+1 is charged on the notional at M_t, the close the position was carried from
// (TRADING_ENV.md section 3: K -= |q| M_t rate dt), not at M_{t+1}: on financing_charges_weekends'
// flat market the two are the same. Here bar 12 closes 10% up; the bar 11 -> 12 charge is still on
// 100, the 12 -> 13 charge on 110.
Test(trading_accounting, financing_on_the_close_carried_from) {
  MarketData *d = market_flat(40, 100.0, 0.0, "TEST");
  for (int64_t i = 12; i < 40; i++) bar_set(d, i, i == 12 ? 100.0 : 110.0, 110.0, i == 12 ? 100.0 : 110.0, 110.0, 0.0);
  cr_assert_eq(market_data_validate(d, "step up"), 0, "%s", error_message());
  TradingParams p = trading_params_default();
  params_zero_cost(&p);
  p.financing_long_apr = 0.10;
  HandEnv h;
  hand_env_open(&h, d, &p);
  TradingEnv *e = &h.e;
  float *obs = h.obs;
  const double year = 365.25 * 86400;
  step_level(e, 2, obs);  // t = 10 -> 11: long 0.01 units at open[11] = 100
  cr_assert_float_eq(e->q, 0.01, 1e-15);
  step_level(e, 2, obs);  // 11 -> 12: carried from close[11] = 100
  cr_expect_float_eq(e->fill_financing, 0.01 * 100 * 0.10 * 3600 / year, 1e-18, "charged %.6g", e->fill_financing);
  step_level(e, 2, obs);  // 12 -> 13: carried from close[12] = 110
  cr_expect_float_eq(e->fill_financing, 0.01 * 110 * 0.10 * 3600 / year, 1e-18, "charged %.6g", e->fill_financing);
  hand_env_close(&h);
}

// A crash terminates at E <= (1 - max_loss) E_0; the forced close at the next open is in the log.
Test(trading_accounting, max_loss_terminates) {
  MarketData *d = market_flat(60, 100.0, 0.0, "TEST");
  for (int64_t i = 11; i < 60; i++) {
    double o = d->close[i - 1], cl = o * 0.9;
    bar_set(d, i, o, o, cl, cl, 0.0);
  }
  cr_assert_eq(market_data_validate(d, "crash"), 0, "%s", error_message());
  TradingParams p = trading_params_default();
  params_zero_cost(&p);
  HandEnv h;
  hand_env_open(&h, d, &p);
  TradingEnv *e = &h.e;
  float *obs = h.obs;
  StepOut o;
  int steps = 0;
  do o = step_level(e, 2, obs), steps++;
  while (!(o.terminated | o.truncated));
  cr_assert_eq(o.terminated, 1);
  cr_assert_eq(o.truncated, 0);
  // E after k falling bars = 0.9^k (gapless): 0.9^7 = 0.478 is the first at or below 0.5.
  cr_assert_eq(steps, 7);
  cr_assert_float_eq(e->equity, pow(0.9, 7), 1e-12);
  cr_assert_float_eq(e->exit_equity, pow(0.9, 7), 1e-12, "next open = this close on this market");
  cr_assert_float_eq(o.log[2], (float)(pow(0.9, 7) - 1), 1e-6);
  cr_assert_float_eq(o.log[5], (float)(1 - pow(0.9, 7)), 1e-6, "max drawdown");
  cr_assert_eq(o.log[8], 0.0f, "the one trade lost");
  cr_assert_eq(o.log[9], 7.0f, "held 7 bars");
  hand_env_close(&h);
}

// An episode without a closed trade has no hit rate and no holding time: NaN (as the backtest
// report's), not 0, which read as every trade lost and pulled the logged means down.
Test(trading_accounting, an_episode_without_trades_has_no_hit_rate) {
  HandEnv h;
  hand_env_flat(&h);
  TradingEnv *e = &h.e;
  float *obs = h.obs;
  StepOut o;
  do o = step_level(e, 1, obs);  // flat to the end
  while (!(o.terminated | o.truncated));
  cr_expect_eq(o.log[6], 0.0f, "no trade");
  cr_expect(isnan(o.log[8]) && isnan(o.log[9]), "hit rate %g, holding time %g", o.log[8], o.log[9]);
  cr_expect_eq(o.log[2], 0.0f, "flat: equity unchanged");
  hand_env_close(&h);
}

// Trade statistics on a scripted sequence: long 3 bars on a rise, flat, short 2 bars on the rise.
Test(trading_accounting, episode_log_fields) {
  MarketData *d = market_flat(60, 100.0, 0.0, "TEST");
  for (int64_t i = 1; i < 60; i++) {
    double o = d->close[i - 1], cl = o + 1;
    bar_set(d, i, o, cl, o, cl, 0.0);
  }
  cr_assert_eq(market_data_validate(d, "rise"), 0, "%s", error_message());
  TradingParams p = trading_params_default();
  params_zero_cost(&p);
  HandEnv h;
  hand_env_open(&h, d, &p);
  TradingEnv *e = &h.e;
  float *obs = h.obs;
  const int32_t script[] = {2, 2, 2, 1, 0, 0, 1, 1};
  double dw = 0;
  for (int k = 0; k < 8; k++) {
    double w_before = trading_env_position(e);
    double target = script[k] == 2 ? 1 : script[k] == 0 ? -1 : 0;
    if (script[k] != e->level) dw += fabs(target - w_before);
    step_level(e, script[k], obs);
  }
  // Force the end: the pass ends at eval_end; step flat until then.
  StepOut o;
  int n = 8;
  do o = step_level(e, 1, obs), n++;
  while (!(o.terminated | o.truncated));
  cr_assert_eq(o.log[6], 2.0f, "two trades");
  cr_assert_float_eq(o.log[8], 0.5f, 1e-7, "the long won, the short lost");
  cr_assert_float_eq(o.log[9], 2.5f, 1e-7, "held 3 and 2 bars");
  cr_assert_float_eq(o.log[7], (float)(dw / n), 1e-6, "turnover per step");
  cr_assert_eq(o.log[11], (float)n);
  cr_assert_eq(o.log[ENV_LOG_EPISODE_LENGTH], (float)n);
  cr_assert_eq(o.log[10], 0.0f, "no costs");
  hand_env_close(&h);
}

// A flip (long to short in one fill) closes the long paying only its share |q_old|/|dq| of the fill's
// commission. Hand-computed: a long of q = 0.01 bought at 100 (commission 10 bp: 0.001), marked up
// to 100 + u, flipped to w = -1 there: dq = -(0.01 + E/(100 + u)), E = 1 - 0.001 + 0.01 u, and the
// long's share of the flip's commission 0.001 |dq| (100 + u) is about 0.001. u = 0.25: the long nets
// 0.0025 - 0.001 - 0.0010025 > 0 (won; charged the whole flip it would net -0.0005). u = 0.15: it
// nets 0.0015 - 0.001 - 0.0010015 < 0 (lost; charged nothing it would net +0.0005). The short then
// loses its own costs on the flat market.
Test(trading_accounting, a_flip_charges_the_closed_trade_its_share_of_the_cost) {
  const struct {
    double up;
    float hit_rate;
  } cases[] = {{0.25, 0.5f}, {0.15, 0.0f}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    HandEnv h;
    TradingParams p = hand_env_flat(&h);
    MarketData *d = h.d;
    const int64_t t0 = h.e.t;  // the first step fills at open[t0 + 1]
    const double top = 100.0 + cases[k].up;
    bar_set(d, t0 + 1, 100.0, top, 100.0, top, 0.0);
    for (int64_t i = t0 + 2; i < d->rows; i++) bar_set(d, i, top, top, top, top, 0.0);
    cr_assert_eq(market_data_validate(d, "step up"), 0, "%s", error_message());
    p.commission_bps = 10;
    float *obs = hand_env_restart(&h, &p);
    TradingEnv *e = &h.e;
    cr_assert_eq(e->t, t0);
    step_level(e, 2, obs);  // long: fills at open[t0 + 1] = 100
    step_level(e, 2, obs);  // hold
    step_level(e, 0, obs);  // flip to short at 100 + up
    double equity = 1.0 - 0.001 + 0.01 * cases[k].up;
    cr_assert_float_eq(e->fill_commission, 0.001 * (0.01 + equity / top) * top, 1e-12);
    StepOut o;
    do o = step_level(e, 1, obs);
    while (!(o.terminated | o.truncated));
    cr_assert_eq(o.log[6], 2.0f, "two trades");
    cr_expect_float_eq(o.log[8], cases[k].hit_rate, 1e-7, "up %g: hit rate %g", cases[k].up, o.log[8]);
    hand_env_close(&h);
  }
}

// The last step of an episode: its observation is E_N's state, taken before the forced close that
// the log books (which resets the bars held: a truncated episode's value bootstrap read 0 bars in
// a position still open), and the log's drawdown is over E_0..E_{N-1} and the exit equity, E_N
// replaced (it counted a spike at the last mark that the exit at the next open gave back).
Test(trading_accounting, the_last_step_observes_before_the_forced_close) {
  HandEnv h;
  TradingParams p = hand_env_flat(&h);
  MarketData *d = h.d;
  const int64_t last_mark = h.c.eval_end;  // E_N marks at its close; the close fills at the next open
  bar_set(d, last_mark, 100.0, 105.0, 100.0, 105.0, 0.0);
  cr_assert_eq(market_data_validate(d, "spike"), 0, "%s", error_message());
  float *obs = hand_env_restart(&h, &p);
  const float *tail = obs + h.c.obs_dim - TRADING_AGENT_STATE;
  TradingEnv *e = &h.e;
  StepOut o;
  float held_before = 0;
  do {
    held_before = tail[2];
    o = step_level(e, 2, obs);  // long from the first step, held to the end
  } while (!(o.terminated | o.truncated));
  cr_assert(o.truncated && e->t == last_mark, "t %lld, last mark %lld", (long long)e->t, (long long)last_mark);
  cr_expect_float_eq(tail[2], held_before + 0.01f, 1e-6, "bars held %g after %g: the close reset them", tail[2],
                     held_before);
  cr_expect_gt(tail[0], 0.5f, "the observation still holds the position");
  cr_expect_float_eq(e->equity, 1.05, 1e-9, "E_N marked at the spike");
  cr_expect_float_eq(e->exit_equity, 1.0, 1e-9, "the exit at the next open gives it back");
  cr_expect_float_eq(o.log[5], 0.0f, 1e-7, "max drawdown of the curve E_0..E_{N-1}, exit: %g", o.log[5]);
  hand_env_close(&h);
}

// --- observation, actions, rewards -----------------------------------------------------------------

Test(trading_obs, window_and_agent_state) {
  MarketData *d = load_shipped("XAUUSD_1H.h5");
  Features *f = features_for(d);
  TradingParams p = trading_params_default();
  p.eval = true, p.eval_split = TRADING_SPLIT_VAL, p.position_onehot = true, p.episode_progress = true;
  TradingContext c;
  context_for(&c, d, f, &p);
  cr_assert_eq(c.obs_dim, 32 * FEATURES_COUNT + 5 + 3 + 1);
  float *obs = obs_new(&c);
  TradingEnv e;
  env_start(&e, &c, obs);
  cr_assert_eq(memcmp(obs, f->values + (e.t - 31) * FEATURES_COUNT, sizeof(float) * 32 * FEATURES_COUNT), 0,
               "rows t-W+1..t");
  const float *tail = obs + 32 * FEATURES_COUNT;
  cr_assert(tail[0] == 0 && tail[1] == 0 && tail[2] == 0 && tail[3] == 0 && tail[4] == 0);
  cr_assert(tail[5] == 0 && tail[6] == 1 && tail[7] == 0, "one-hot of the flat level");
  for (int k = 0; k < 3; k++) step_level(&e, 2, obs);
  const double M = d->close[e.t];
  cr_assert_float_eq(tail[0], (float)(e.q * M / e.equity), 1e-7, "w_t");
  cr_assert_float_eq(tail[1], (float)(log(M / e.entry_price) / f->sigma[e.t]), 1e-5, "unrealised P&L in sigma");
  cr_assert_eq(tail[2], 0.03f, "3 bars in position / 100");
  cr_assert_float_eq(tail[3], (float)(1 - e.equity / e.equity_peak), 1e-7);
  cr_assert_eq(tail[4], 0.0f, "no trade in the last step");
  cr_assert(tail[7] == 1 && tail[6] == 0);
  cr_assert_float_eq(tail[8], (float)(3.0 / (double)(c.eval_end - c.eval_start)), 1e-9);
  step_level(&e, 0, obs);
  cr_assert_float_eq(tail[4], (float)(e.fill_cost / e.equity * 1e4), 0.05, "cost in bp of equity: %g", tail[4]);
  cr_assert_gt(tail[4], 2.0f, "a flip on gold costs several bp");
  free(obs);
  features_free(f);
  market_data_free(d);
}

// Adding to a position averages its entry price (the agent state's unrealised P&L reads it): half
// long at open[11] = 100, then the other half at open[12] = 110 give an entry of 105, not the last
// fill's 110. Reducing the position keeps the entry.
Test(trading_obs, adding_to_a_position_averages_the_entry_price) {
  MarketData *d = market_flat(40, 100.0, 0.0, "TEST");
  for (int64_t i = 12; i < 40; i++) bar_set(d, i, 110.0, 110.0, 110.0, 110.0, 0.0);
  cr_assert_eq(market_data_validate(d, "step up"), 0, "%s", error_message());
  TradingParams p = trading_params_default();
  params_zero_cost(&p);
  p.action_mode = TRADING_ACTION_DISCRETE_K, p.n_levels = 5;  // {-1, -0.5, 0, 0.5, 1}
  HandEnv h;
  hand_env_open(&h, d, &p);
  TradingEnv *e = &h.e;
  float *obs = h.obs;
  step_level(e, 3, obs);  // t = 10 -> 11: 0.005 units at 100
  cr_assert_float_eq(e->q, 0.005, 1e-15);
  cr_expect_float_eq(e->entry_price, 100.0, 1e-12);
  step_level(e, 4, obs);  // 11 -> 12: 0.005 more at 110
  cr_assert_float_eq(e->q, 0.01, 1e-15);
  cr_expect_float_eq(e->entry_price, 105.0, 1e-9, "entry %.9g after adding at 110 to a holding bought at 100",
                     e->entry_price);
  step_level(e, 3, obs);  // 12 -> 13: back to half (E = 1.05, q* = 0.525 / 110): a sale keeps the entry
  cr_expect_float_eq(e->entry_price, 105.0, 1e-9, "entry %.9g after a partial sale", e->entry_price);
  hand_env_close(&h);
}

Test(trading_actions, levels_band_and_long_only) {
  MarketData *d = market_flat(40, 100.0, 0.0, "TEST");
  TradingParams p = trading_params_default();
  params_zero_cost(&p);
  p.action_mode = TRADING_ACTION_DISCRETE_K, p.n_levels = 5;
  HandEnv h;
  hand_env_open(&h, d, &p);
  TradingEnv *e = &h.e;
  float *obs = h.obs;
  cr_assert_eq(h.c.action_count, 5);
  const double expect[5] = {-1, -0.5, 0, 0.5, 1};
  for (int i = 0; i < 5; i++) cr_assert_eq(h.c.levels[i], expect[i]);
  step_level(e, 3, obs);
  cr_assert_float_eq(trading_env_position(e), 0.5, 1e-15);

  // Continuous: w* = L a, no trade inside the band.
  p.action_mode = TRADING_ACTION_CONTINUOUS;
  obs = hand_env_restart(&h, &p);
  step_cont(e, 0.3f, obs);
  cr_assert_float_eq(trading_env_position(e), 0.3, 1e-7);
  step_cont(e, 0.31f, obs);
  cr_assert_eq(e->fill_units, 0.0, "|0.31 - 0.3| < band 0.02: no trade");
  step_cont(e, 0.35f, obs);
  cr_assert_float_eq(trading_env_position(e), 0.35, 1e-7);
  step_cont(e, 7.0f, obs);
  cr_assert_float_eq(trading_env_position(e), 1.0, 1e-12, "clipped to L");
  step_cont(e, NAN, obs);
  cr_assert_eq(e->q, 0.0, "a NaN action goes flat");

  // long_only: continuous -1 is flat; discrete3 levels are {0, L/2, L}.
  p.long_only = true;
  obs = hand_env_restart(&h, &p);
  step_cont(e, -1.0f, obs);
  cr_assert_eq(e->q, 0.0);
  step_cont(e, 0.0f, obs);  // a = 0 is half of L
  cr_assert_float_eq(trading_env_position(e), 0.5, 1e-7);
  step_cont(e, NAN, obs);  // a NaN action goes flat here too (it gave a = 0: the half position)
  cr_assert_eq(e->q, 0.0);
  p.action_mode = TRADING_ACTION_DISCRETE3;
  context_for(&h.c, h.d, h.f, &p);  // the levels only: the env (pointing at h.c) takes no step before the restart
  cr_assert(h.c.levels[0] == 0 && h.c.levels[1] == 0.5 && h.c.levels[2] == 1 && h.c.flat_level == 0);

  // TOGGLE2: {Sell, Buy} = {-L, L}; starts flat, so the first action trades either way.
  p.long_only = false, p.action_mode = TRADING_ACTION_TOGGLE2;
  obs = hand_env_restart(&h, &p);
  step_level(e, 0, obs);
  cr_assert_float_eq(trading_env_position(e), -1.0, 1e-12);
  step_level(e, 0, obs);
  cr_assert_eq(e->fill_units, 0.0, "same action: hold");
  step_level(e, 1, obs);
  cr_assert_float_eq(trading_env_position(e), 1.0, 1e-12, "flip");
  hand_env_close(&h);
}

// PNL sums to E_N - E_0; DSR equals Moody-Saffell on the same returns from the warm state; VOL_TARGET
// sizes to sigma_target / sigma_t; the flat shaping costs lambda per flat bar.
Test(trading_rewards, variants_from_the_same_equity) {
  MarketData *d = load_shipped("SPY_1D.h5");
  Features *f = features_for(d);
  TradingParams p = trading_params_default();
  p.eval = true, p.eval_split = TRADING_SPLIT_VAL;
  for (int kind_i = 0; kind_i < TRADING_REWARD_COUNT; kind_i++) {  // every kind (a new one needs its expectation below)
    const TradingReward kind = (TradingReward)kind_i;
    p.reward = kind;
    TradingContext c;
    context_for(&c, d, f, &p);
    const bool sharpe_like = kind == TRADING_REWARD_DSR || kind == TRADING_REWARD_D3R;
    cr_assert_eq(c.params.reward_scale, sharpe_like ? 1.0 : 10.0, "auto scale: daily, or 1 for the Sharpe-like");
    float *obs = obs_new(&c);
    TradingEnv e;
    env_start(&e, &c, obs);
    // Independent warm state: plain means over the 63 bars before the start.
    DsrState ref = {0, 0};
    for (int64_t i = e.t - 62; i <= e.t; i++) {
      double r = d->close[i] / d->close[i - 1] - 1;
      ref.a += r / 63, ref.b += (kind == TRADING_REWARD_D3R ? (r < 0 ? r * r : 0) : r * r) / 63;
    }
    double sum = 0;
    for (int s = 0; s < 200; s++) {
      double E0 = e.equity, sigma = f->sigma[e.t];
      int32_t a = (int32_t)((s / 5) % 3);
      step_level(&e, a, obs);
      double R = e.equity / E0 - 1;
      sum += e.reward_exact;
      // PNL: the equity change over the initial equity (1); LOG_RETURN and VOL_TARGET: the log
      // return (the volatility target sizes the position, checked below); these times the daily
      // scale 10, the differential Sharpe ratios times 1. No default: -Wswitch names a new kind.
      double expect = NAN;
      switch (kind) {
        case TRADING_REWARD_DSR:
          expect = dsr_step(&ref, R, 1.0 / 63, sigma);
          break;
        case TRADING_REWARD_D3R:
          expect = d3r_step(&ref, R, 1.0 / 63, sigma);
          break;
        case TRADING_REWARD_PNL:
          expect = 10 * (e.equity - E0);
          break;
        case TRADING_REWARD_LOG_RETURN:
        case TRADING_REWARD_VOL_TARGET:
          expect = 10 * log(e.equity / E0);
          break;
        case TRADING_REWARD_COUNT:
          cr_assert_fail("not a reward");
      }
      cr_assert_float_eq(e.reward_exact, expect, 1e-9, "reward %d step %d", (int)kind, s);
      if (kind == TRADING_REWARD_VOL_TARGET && e.fill_units != 0 && a == 2) {
        double w = fmin(1.0, c.sigma_target_bar / f->sigma[e.t - 1]);
        cr_assert_float_eq(e.q * d->close[e.t - 1] / E0, w, 1e-12, "vol-targeted size");
      }
    }
    if (kind == TRADING_REWARD_PNL) cr_assert_float_eq(sum, 10 * (e.equity - 1), 1e-12);
    free(obs);
  }
  p.reward = TRADING_REWARD_LOG_RETURN, p.shaping_flat = 0.25;
  TradingContext c;
  context_for(&c, d, f, &p);
  float *obs = obs_new(&c);
  TradingEnv e;
  env_start(&e, &c, obs);
  cr_assert_eq(step_level(&e, 1, obs).reward, -0.25f, "flat: log return 0 minus lambda_flat");
  free(obs);
  features_free(f);
  market_data_free(d);
}

// --- parameters --------------------------------------------------------------------------------------

Test(trading_params, auto_resolution_per_instrument) {
  MarketData *x = load_shipped("XAUUSD_1H.h5"), *s = load_shipped("SPY_1D.h5");
  Features *fx = features_for(x), *fs = features_for(s);
  TradingParams p = trading_params_default();
  TradingContext c;
  context_for(&c, x, fx, &p);
  cr_assert_eq(c.asset_class, TRADING_CLASS_FX);
  cr_assert(c.params.use_data_spread == 1 && c.params.commission_bps == 0.35 && c.params.slippage_bps == 0.5);
  cr_assert(c.params.half_spread_bps == 1.5 && c.params.reward_scale == 100 && c.params.dsr_eta == 1.0 / 500);
  cr_assert(c.params.window == 32 && c.params.warmup == 360 && c.params.episode_length == 2048);
  cr_assert_eq(c.params.val_start, utc_days_from_civil(2015, 1, 1) * 86400);
  cr_assert_eq(c.start_lo, 360);
  cr_assert_eq(c.start_hi, c.split_hi[0] - 2 - 2048);
  context_for(&c, s, fs, &p);
  cr_assert_eq(c.asset_class, TRADING_CLASS_STOCK);
  cr_assert(c.params.use_data_spread == 0 && c.params.commission_bps == 0.5 && c.params.slippage_bps == 1.0);
  cr_assert(c.params.half_spread_bps == 0.5 && c.params.reward_scale == 10 && c.params.episode_length == 252);
  cr_assert(c.params.window == 30 && c.params.warmup == 189);
  cr_assert_eq(c.params.test_start, utc_days_from_civil(2017, 1, 1) * 86400);

  // Unknown instrument: splits at the days after the bars at 70% and 85% of the rows.
  SyntheticParams sp = synthetic_params_default();
  sp.bars = 10000;
  MarketData *g = synthetic_market_new(&sp);
  Features *fg = features_for(g);
  context_for(&c, g, fg, &p);
  cr_assert_eq(c.params.val_start, (g->ts[6999] / 86400 + 1) * 86400);
  cr_assert_eq(c.params.test_start, (g->ts[8499] / 86400 + 1) * 86400);
  cr_assert_eq(c.split_hi[2], g->rows);
  cr_assert_eq(c.params.half_spread_bps, 1.0);
  // Its auto costs are generic guesses, and said to be; a set cost is not one, and neither is a
  // known instrument's (above: gold and SPY) nor a half spread the data's bid/ask replaces.
  cr_assert_eq(c.generic_costs, TRADING_GENERIC_HALF_SPREAD | TRADING_GENERIC_COMMISSION | TRADING_GENERIC_SLIPPAGE);
  TradingParams set = p;
  set.commission_bps = 0.35;
  context_for(&c, g, fg, &set);
  cr_assert_eq(c.generic_costs, TRADING_GENERIC_HALF_SPREAD | TRADING_GENERIC_SLIPPAGE);
  context_for(&c, x, fx, &p);
  cr_assert_eq(c.generic_costs, 0);
  context_for(&c, s, fs, &p);
  cr_assert_eq(c.generic_costs, 0);
  MarketData *own = market_flat(2000, 100, 0.01, "OWN");  // bid/ask: the data's spread
  Features *fo = features_for(own);
  context_for(&c, own, fo, &p);
  cr_assert_eq(c.generic_costs, TRADING_GENERIC_COMMISSION | TRADING_GENERIC_SLIPPAGE);
  features_free(fo);
  market_data_free(own);

  // User errors name the parameter.
  TradingParams bad = p;
  bad.val_start = bad.test_start = utc_days_from_civil(2001, 1, 1) * 86400;
  cr_assert_eq(trading_context_init(&c, x, fx, &bad), -1);
  cr_assert_not_null(strstr(error_message(), "split dates"), "%s", error_message());
  bad = p, bad.impact_y = 0.1;
  cr_assert_eq(trading_context_init(&c, x, fx, &bad), -1);
  cr_assert_not_null(strstr(error_message(), "impact_y"), "%s", error_message());
  bad = p, bad.use_data_spread = 1;
  cr_assert_eq(trading_context_init(&c, s, fs, &bad), -1);
  cr_assert_not_null(strstr(error_message(), "use_data_spread"), "%s", error_message());
  bad = p, bad.action_mode = TRADING_ACTION_CONTINUOUS, bad.position_onehot = true;
  cr_assert_eq(trading_context_init(&c, x, fx, &bad), -1);
  bad = p, bad.action_mode = TRADING_ACTION_DISCRETE_K, bad.n_levels = 4;
  cr_assert_eq(trading_context_init(&c, x, fx, &bad), -1);
  cr_assert_not_null(strstr(error_message(), "n_levels"), "%s", error_message());
  bad = p, bad.reward = TRADING_REWARD_COUNT;  // a caller's enum out of step: named, with the range
  cr_assert_eq(trading_context_init(&c, x, fx, &bad), -1);
  char want[64];
  snprintf(want, sizeof want, "reward = %d out of range (0..%d)", TRADING_REWARD_COUNT, TRADING_REWARD_COUNT - 1);
  cr_assert_not_null(strstr(error_message(), want), "%s", error_message());
  // ppo-eval's cost stress doubles the configuration's cost_mult (at most 100): 200 is a context's
  // limit, past it and past reward_scale's 1e6 (the fp32 value loss) it refuses.
  bad = p, bad.cost_mult = 200;
  cr_assert_eq(trading_context_init(&c, x, fx, &bad), 0, "%s", error_message());
  bad = p, bad.cost_mult = 201;
  cr_assert_eq(trading_context_init(&c, x, fx, &bad), -1);
  cr_assert_not_null(strstr(error_message(), "cost_mult = 201: must lie in [0, 200]"), "%s", error_message());
  bad = p, bad.reward_scale = 1e7;
  cr_assert_eq(trading_context_init(&c, x, fx, &bad), -1);
  cr_assert_not_null(strstr(error_message(), "reward_scale = 1e+07: must lie in [1e-12, 1e+06]"), "%s",
                     error_message());
  features_free(fx), features_free(fs), features_free(fg);
  market_data_free(x), market_data_free(s), market_data_free(g);
}

// Slippage cannot push a fill outside bar t+1's range on the side traded: a 50 bp slippage on a bar
// whose ask high is 100.02 fills the buy at 100.02, and the sell at the bid low.
Test(trading_timing, fill_capped_to_the_bar_range) {
  MarketData *d = market_flat(40, 100.0, 0.01, "TEST");
  for (int64_t i = 0; i < 40; i++) bar_set(d, i, 100, 100.01, 99.99, 100, 0.01);
  cr_assert_eq(market_data_validate(d, "cap"), 0, "%s", error_message());
  TradingParams p = trading_params_default();
  p.commission_bps = 0, p.slippage_bps = 50;
  HandEnv h;
  hand_env_open(&h, d, &p);
  TradingEnv *e = &h.e;
  float *obs = h.obs;
  step_level(e, 2, obs);
  cr_assert_eq(e->fill_price, d->ask_high[11]);
  step_level(e, 0, obs);
  cr_assert_eq(e->fill_price, d->bid_low[12]);
  p.slippage_bps = 0.5;  // uncapped: ask_open (1 + s)
  obs = hand_env_restart(&h, &p);
  step_level(e, 2, obs);
  cr_assert_float_eq(e->fill_price, d->ask_open[11] * (1 + 0.5e-4), 1e-12);
  hand_env_close(&h);
}

// The slippage amounts (TRADING_ENV.md section 5): a fill at bar t+1's open is open (1 +- (half
// spread + slippage_bps + slippage_vol_k sigma_t)), within the bar's range, sigma_t of the decision
// bar; with random slippage on, the draw adds between 0 and slippage_random_max_bps. (The ledger
// tests rebuild the equity from the env's own fill prices, so they hold whatever the amounts are.)
Test(trading_costs, slippage_amounts_from_the_spec) {
  SyntheticParams sp = synthetic_params_default();
  sp.model = SYNTHETIC_GBM, sp.bars = 3000, sp.sigma = 0.004, sp.seed = 5;
  MarketData *d = synthetic_market_new(&sp);
  Features *f = features_for(d);
  for (int random = 0; random < 2; random++) {
    TradingParams p = trading_params_default();
    p.eval = true, p.eval_split = TRADING_SPLIT_TRAIN, p.commission_bps = 0;
    p.slippage_bps = 0.5, p.slippage_vol_k = 0.1, p.slippage_random_max_bps = random ? 2.0 : 0.0;
    TradingContext c;
    context_for(&c, d, f, &p);
    cr_assert_eq(c.params.use_data_spread, 0, "the synthetic market has no bid/ask: a half spread applies");
    const double half = c.params.half_spread_bps * 1e-4;
    float *obs = obs_new(&c);
    TradingEnv e;
    env_start(&e, &c, obs);
    int fills = 0, vol_share = 0;
    for (int k = 0; k < 400; k++) {
      const int64_t t = e.t;
      const double sigma = f->sigma[t] > 0 ? f->sigma[t] : 0.0, base = half + 0.5e-4 + 0.1 * sigma;
      int32_t level = k % 2 ? 1 : (k / 2) % 2 ? 0 : 2;  // long, flat, short, flat, ...
      step_level(&e, level, obs);
      if (e.fill_units == 0) continue;
      fills++;
      const double o = d->open[t + 1], hi = d->high[t + 1], lo = d->low[t + 1];
      const int buy = e.fill_units > 0;
      const double near = buy ? fmin(o * (1 + base), hi) : fmax(o * (1 - base), lo);
      const double far = buy ? fmin(o * (1 + base + 2e-4), hi) : fmax(o * (1 - base - 2e-4), lo);
      if (!random) {
        cr_assert_float_eq(e.fill_price, near, 1e-12 * o, "step %d (%s at bar %lld): fill %.10g, spec %.10g", k,
                           buy ? "buy" : "sell", (long long)t + 1, e.fill_price, near);
      } else {
        double p_lo = fmin(near, far) - 1e-12 * o, p_hi = fmax(near, far) + 1e-12 * o;
        cr_assert(e.fill_price >= p_lo && e.fill_price <= p_hi, "step %d: fill %.10g outside [%.10g, %.10g]", k,
                  e.fill_price, p_lo, p_hi);
      }
      vol_share += 0.1 * sigma > 0.5e-4;  // the volatility term is not negligible beside the fixed one
    }
    cr_assert_geq(fills, 300, "every step but the first trades (long, flat, short, flat)");
    cr_assert_geq(vol_share, fills / 2, "sigma_t large enough to matter in most fills");
    free(obs);
  }
  features_free(f);
  market_data_free(d);
}

// Every shaping term and the clip, recomputed from the equity the test tracks itself: the reward is
// scale ln(E_{t+1}/E_t) - l_turn |dw| - l_dd max(0, DD_{t+1} - DD_t) - l_var (w sigma_t)^2 - l_flat [q = 0],
// clipped to +-reward_clip.
Test(trading_rewards, shaping_terms_and_clip) {
  SyntheticParams sp = synthetic_params_default();
  sp.model = SYNTHETIC_GBM, sp.bars = 3000, sp.sigma = 0.004, sp.seed = 21;
  MarketData *d = synthetic_market_new(&sp);
  Features *f = features_for(d);
  TradingParams p = trading_params_default();
  p.eval = true, p.eval_split = TRADING_SPLIT_TRAIN, p.max_leverage = 1.5;
  p.shaping_turnover = 0.01, p.shaping_drawdown = 2.0, p.shaping_variance = 50.0, p.shaping_flat = 0.003;
  p.reward_clip = 0.4;
  TradingContext c;
  context_for(&c, d, f, &p);
  float *obs = obs_new(&c);
  TradingEnv e;
  env_start(&e, &c, obs);
  Rng rng;
  rng_seed(&rng, 3);
  double peak = 1.0;
  int clipped = 0;
  for (int k = 0; k < 1500; k++) {
    const int64_t t = e.t;
    const double E0 = e.equity, M = d->close[t], sigma = f->sigma[t] > 0 ? f->sigma[t] : 0;
    const double w_before = e.q * M / E0;
    int32_t a = (int32_t)rng_below(&rng, 3);
    StepOut o = step_level(&e, a, obs);
    double dw = fabs(e.q * M / E0 - w_before), w_post = e.q * M / E0;
    double dd0 = 1 - E0 / peak;
    if (e.equity > peak) peak = e.equity;
    double dd1 = 1 - e.equity / peak;
    double r = 100 * log(e.equity / E0) - 0.01 * dw - 2.0 * fmax(0, dd1 - dd0) -
               50.0 * (w_post * sigma) * (w_post * sigma) - 0.003 * (e.q == 0);
    clipped += fabs(r) > 0.4;
    r = fmax(-0.4, fmin(0.4, r));
    cr_assert_float_eq(e.reward_exact, r, 1e-12, "step %d: env %.15g, expected %.15g", k, e.reward_exact, r);
    cr_assert(!(o.terminated | o.truncated));
  }
  cr_assert_gt(clipped, 0, "some rewards must hit the clip, or the clip is untested");
  free(obs);
  features_free(f);
  market_data_free(d);
}

// A loaded env state (checkpoint) must leave room for its fills: with next-open execution an episode
// ending on the last bar would fill its forced close at the open after it, past the data.
// Env `index` of `count` on the shipped SPY data with default params, reset: the state a checkpoint
// would hold, for the loaded-state checks.
typedef struct {
  MarketData *d;
  Features *f;
  TradingParams p;
  TradingContext c;
  float *obs;
  TradingEnv e;
} SpyEnv;

static void spy_env_open(SpyEnv *s, int index, int count) {
  s->d = load_shipped("SPY_1D.h5");
  s->f = features_for(s->d);
  s->p = trading_params_default();
  context_for(&s->c, s->d, s->f, &s->p);
  s->obs = obs_new(&s->c);
  Rng rng;
  rng_seed(&rng, 1);
  trading_env_init(&s->e, &s->c, index, count, rng);
  trading_env_reset(&s->e, s->obs);
  cr_assert_eq(trading_kind.check_state(&s->e, &s->e, &s->c), 0, "a fresh state: %s", error_message());
}

static void spy_env_close(SpyEnv *s) {
  free(s->obs);
  features_free(s->f);
  market_data_free(s->d);
}

Test(trading_params, a_loaded_state_past_the_data_is_refused) {
  SpyEnv s;
  spy_env_open(&s, 0, 1);
  TradingEnv e = s.e;
  e.end = s.d->rows - 2;
  cr_assert_eq(trading_kind.check_state(&e, &s.e, &s.c), 0, "end = rows - 2: %s", error_message());
  e.end = s.d->rows - 1;  // its forced close would read open[rows]
  cr_assert_eq(trading_kind.check_state(&e, &s.e, &s.c), -1);
  cr_assert(strstr(error_message(), "do not fit this run's market"), "%s", error_message());
  s.p.exec = TRADING_EXEC_CLOSE;  // fills at the decision bar's close: the last bar is usable
  context_for(&s.c, s.d, s.f, &s.p);
  cr_assert_eq(trading_kind.check_state(&e, &s.e, &s.c), 0, "close execution, end = rows - 1: %s", error_message());
  spy_env_close(&s);
}

// A warm-up that leaves the train split no room names its cause: an auto warm-up is 3x the longest
// feature lookback, so the spans to shorten are named; a warm-up that was set is to be lowered.
Test(trading_params, a_warmup_past_the_train_split_names_its_cause) {
  MarketData *d = load_shipped("SPY_1D.h5");
  Features *f = features_for(d);
  TradingParams p = trading_params_default();
  p.warmup = 100000;
  TradingContext c;
  cr_assert_eq(trading_context_init(&c, d, f, &p), -1);
  cr_expect(strstr(error_message(), "no room for an episode") && strstr(error_message(), "or lower warmup"), "%s",
            error_message());
  FeatureParams fp = features_params_default();
  fp.ema_slow = 5000;  // 3 x 5000 bars: more than SPY's train split
  cr_assert_eq(features_params_resolve(&fp, d), 0, "%s", error_message());
  Features *slow = features_compute(d, &fp);
  p = trading_params_default();
  cr_assert_eq(trading_context_init(&c, d, slow, &p), -1);
  cr_expect(strstr(error_message(), "warmup is auto, 3 x the longest feature lookback (5000 bars"), "%s",
            error_message());
  features_free(slow);
  features_free(f);
  market_data_free(d);
}

// Every other field a damaged checkpoint could carry: the env's index and count (the stratified first
// start computes a bar from them), the started flag's byte, each double the fills, ledger and logs
// read, and each counter; the message names the field.
Test(trading_params, a_loaded_state_with_a_damaged_field_is_refused) {
  SpyEnv s;
  spy_env_open(&s, 1, 4);
  const TradingEnv own = s.e;
  const TradingContext c = s.c;
  TradingEnv e;

  e = own;
  e.env_index = 2147483647;
  cr_assert_eq(trading_kind.check_state(&e, &own, &c), -1);
  cr_assert(strstr(error_message(), "env index 2147483647 of 4"), "%s", error_message());
  e = own;
  e.num_envs = 2;
  cr_assert_eq(trading_kind.check_state(&e, &own, &c), -1);
  e = own;
  memset(&e.started, 2, 1);
  cr_assert_eq(trading_kind.check_state(&e, &own, &c), -1);
  cr_assert(strstr(error_message(), "started 2"), "%s", error_message());

  double *fields[] = {&e.entry_price,    &e.last_cost_bp, &e.exit_equity, &e.fill_price, &e.fill_spread,
                      &e.exit_fill.cost, &e.reward_exact, &e.dsr.b,       &e.last_ret,   &e.trade_entry_equity};
  const char *names[] = {"entry_price",    "last_cost_bp", "exit_equity", "fill_price", "fill_spread",
                         "exit_fill.cost", "reward_exact", "dsr.b",       "last_ret",   "trade_entry_equity"};
  for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
    e = own;
    *fields[k] = NAN;
    cr_assert_eq(trading_kind.check_state(&e, &own, &c), -1, "%s = NaN accepted", names[k]);
    char want[64];
    snprintf(want, sizeof want, "%s = nan", names[k]);
    cr_assert(strstr(error_message(), want), "%s: %s", names[k], error_message());
  }
  e = own;
  e.bars_in_position = -7;
  cr_assert_eq(trading_kind.check_state(&e, &own, &c), -1);
  cr_assert(strstr(error_message(), "bars_in_position = -7"), "%s", error_message());
  spy_env_close(&s);
}

// random_initial_position: training episodes start holding a random level, taken at the mid without
// cost (E_0 = 1 exactly), and the starts draw levels across the whole set.
Test(trading_params, random_initial_position) {
  MarketData *d = load_shipped("EURUSD_1H.h5");
  Features *f = features_for(d);
  TradingParams p = trading_params_default();
  p.random_initial_position = true, p.action_mode = TRADING_ACTION_DISCRETE_K, p.n_levels = 5;
  TradingContext c;
  context_for(&c, d, f, &p);
  float *obs = obs_new(&c);
  int seen[5] = {0};
  for (int i = 0; i < 40; i++) {
    TradingEnv e;
    Rng rng;
    rng_seed(&rng, (uint64_t)i);
    trading_env_init(&e, &c, i, 40, rng);
    trading_env_reset(&e, obs);
    seen[e.level]++;
    cr_assert_float_eq(e.cash + e.q * d->close[e.t], 1.0, 1e-15, "E_0 = 1");
    cr_assert_float_eq(trading_env_position(&e), c.levels[e.level], 1e-15);
    cr_assert_float_eq(obs[c.obs_dim - 5], (float)c.levels[e.level], 1e-7, "w in the agent state");
    // a held start is a trade opened, whose close the episode's log counts (hit rate, holding time)
    cr_assert_eq(e.trades_opened, e.q != 0 ? 1 : 0, "level %d: %d trades opened", (int)e.level, (int)e.trades_opened);
  }
  for (int k = 0; k < 5; k++) cr_assert_gt(seen[k], 0, "level %d never drawn in 40 starts", k);
  free(obs);
  features_free(f);
  market_data_free(d);
}
