// ppo/env_config.h: the [env] section of a Config mapped onto the simulator's own parameter structs
// (envs/ never includes ppo/, so the mapping lives here), and the market an env type runs on.
//
// "auto" values stay auto in the mapped structs (NaN, TRADING_AUTO_INT, TRADING_DATE_AUTO, 0 spans):
// envs/ resolves them per instrument when the market is known (trading_context_init,
// features_params_resolve). ConfigDate and TradingParams dates are both UTC midnights; test_end is
// inclusive in both.
//
// EnvMarket owns what an env type needs: the bars (loaded from [env] data for "trading", generated
// from the synthetic_* keys for "synthetic"), their features, and the resolved TradingContext that
// VecEnv takes as the shared context. env_market_open allocates them; env_market_close frees them
// (after every VecEnv using the context is freed).
// Depends on ppo/config.h and envs/ (market_data, features, synthetic, trading_env).
#ifndef PPO_ENV_CONFIG_H
#define PPO_ENV_CONFIG_H

#include <stdio.h>

#include "envs/features.h"
#include "envs/market_data.h"
#include "envs/synthetic.h"
#include "envs/trading_env.h"
#include "ppo/config.h"

typedef struct {
  MarketData *data;        // owned
  Features *features;      // owned
  TradingContext context;  // points into data and features
} EnvMarket;

void env_config_trading_params(const Config *cfg, TradingParams *out);      // every [env] simulator key
void env_config_feature_params(const Config *cfg, FeatureParams *out);      // sigma_halflife, ema_fast, ema_slow
void env_config_synthetic_params(const Config *cfg, SyntheticParams *out);  // the synthetic_* keys

// For env.type trading or synthetic: loads or generates the bars, computes the features and
// resolves the context. 0, or -1 with the error message prefixed by the key at fault
// ("FILE:LINE: [env] data = ...: ..."); nothing is left allocated on failure. CartPole needs no market:
// -1 and a message saying so.
int env_market_open(EnvMarket *market, const Config *cfg);
// Only the bars env_market_open starts from ([env] data, or the generated market when it fits in
// memory), errors naming the key; NULL and the message on failure. The walk-forward plans on them.
MarketData *env_config_load_bars(const Config *cfg);
void env_market_close(EnvMarket *market);  // frees data and features; a zeroed EnvMarket is fine

// The costs [env] left auto that took the simulator's generic guess, the data's symbol having no
// cost defaults (TradingContext.generic_costs): their keys ("half_spread_bps", "commission_bps",
// "slippage_bps"), in that order, into keys; returns how many (0..3).
int env_market_generic_cost_keys(const EnvMarket *market, const char *keys[3]);
// One line per such cost, each starting with `prefix`: its value, that it is a generic default for
// an unknown symbol, and the [env] key that sets it. Nothing when there is none (or no market).
void env_market_print_generic_costs(const EnvMarket *market, FILE *out, const char *prefix);

#endif
