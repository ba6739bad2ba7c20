// test/trading_test_util.h: helpers shared by the trading-env suites (header-only, static functions).
//
// Shipped data is read from the repository (PPO_SOURCE_DIR/data), never from ../shared. Hand-made
// markets are built with market_data_new + market_data_validate, like the synthetic generators.
#ifndef PPO_TEST_TRADING_TEST_UTIL_H
#define PPO_TEST_TRADING_TEST_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/time_utc.h"
#include "envs/features.h"
#include "envs/market_data.h"
#include "envs/trading_env.h"

#define DATA_DIR PPO_SOURCE_DIR "/data"

static inline MarketData *load_shipped(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", DATA_DIR, name);
  MarketData *d = market_data_load(path);
  cr_assert_not_null(d, "loading %s: %s", path, error_message());
  return d;
}

static inline Features *features_for(const MarketData *d) {
  FeatureParams fp = features_params_default();
  cr_assert_eq(features_params_resolve(&fp, d), 0, "%s", error_message());
  return features_compute(d, &fp);
}

// Features of d with the params another dataset resolved (a prefix keeps the full data's params).
static inline Features *features_like(const MarketData *d, const Features *model) {
  return features_compute(d, &model->params);
}

// Rows [0, rows) of d in a new MarketData (same metadata).
static inline MarketData *market_prefix(const MarketData *d, int64_t rows) {
  MarketData *p = market_data_new(rows);
  p->has_bid_ask = d->has_bid_ask, p->has_volume = d->has_volume;
  memcpy(p->symbol, d->symbol, sizeof p->symbol);
  memcpy(p->timezone, d->timezone, sizeof p->timezone);
  memcpy(p->source, d->source, sizeof p->source);
  memcpy(p->source_format, d->source_format, sizeof p->source_format);
  memcpy(p->ts, d->ts, sizeof(int64_t) * rows);
  double *const src[] = {d->open,      d->high,     d->low,      d->close,   d->bid_open,  d->bid_high, d->bid_low,
                         d->bid_close, d->ask_open, d->ask_high, d->ask_low, d->ask_close, d->volume};
  double *const dst[] = {p->open,      p->high,     p->low,      p->close,   p->bid_open,  p->bid_high, p->bid_low,
                         p->bid_close, p->ask_open, p->ask_high, p->ask_low, p->ask_close, p->volume};
  for (size_t k = 0; k < sizeof src / sizeof src[0]; k++) memcpy(dst[k], src[k], sizeof(double) * rows);
  cr_assert_eq(market_data_validate(p, "prefix"), 0, "%s", error_message());
  return p;
}

// Sets bar i of a bid/ask market from its mid OHLC and a constant half spread (price units).
// The mid is stored as (bid + ask) / 2, as the loaders require.
static inline void bar_set(MarketData *d, int64_t i, double o, double h, double l, double c, double half) {
  d->open[i] = o, d->high[i] = h, d->low[i] = l, d->close[i] = c;
  if (d->has_bid_ask) {
    d->bid_open[i] = o - half, d->bid_high[i] = h - half, d->bid_low[i] = l - half, d->bid_close[i] = c - half;
    d->ask_open[i] = o + half, d->ask_high[i] = h + half, d->ask_low[i] = l + half, d->ask_close[i] = c + half;
    d->open[i] = (d->bid_open[i] + d->ask_open[i]) / 2, d->high[i] = (d->bid_high[i] + d->ask_high[i]) / 2;
    d->low[i] = (d->bid_low[i] + d->ask_low[i]) / 2, d->close[i] = (d->bid_close[i] + d->ask_close[i]) / 2;
  }
}

// `rows` hourly bars from 2020-01-06 (a Monday) at a constant mid with bid/ask half spread `half`.
static inline MarketData *market_flat(int64_t rows, double mid, double half, const char *symbol) {
  MarketData *d = market_data_new(rows);
  d->has_bid_ask = half > 0;
  snprintf(d->symbol, sizeof d->symbol, "%s", symbol);
  snprintf(d->source, sizeof d->source, "hand-made");
  int64_t t0 = utc_days_from_civil(2020, 1, 6) * 86400;
  for (int64_t i = 0; i < rows; i++) {
    d->ts[i] = t0 + i * 3600;
    bar_set(d, i, mid, mid, mid, mid, half);
  }
  cr_assert_eq(market_data_validate(d, "flat"), 0, "%s", error_message());
  return d;
}

// Context for d and f with p; asserts success.
static inline void context_for(TradingContext *c, const MarketData *d, const Features *f, const TradingParams *p) {
  cr_assert_eq(trading_context_init(c, d, f, p), 0, "trading_context_init: %s", error_message());
}

// Costs all zero (spread, commission, slippage), data spread off.
// Starts one env (index 0 of 1, seed 1) on context c and writes its first observation to obs (O).
static inline void env_start(TradingEnv *e, const TradingContext *c, float *obs) {
  Rng rng;
  rng_seed(&rng, 1);
  trading_env_init(e, c, 0, 1, rng);
  trading_env_reset(e, obs);
}

static inline void params_zero_cost(TradingParams *p) {
  p->use_data_spread = 0;
  p->half_spread_bps = 0, p->commission_bps = 0, p->slippage_bps = 0;
}

#endif
