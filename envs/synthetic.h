// envs/synthetic.h: seeded synthetic markets in the MarketData layout (TRADING_ENV.md section 1).
//
// Three models of the 1-bar log return r_t of the mid close (t >= 1):
//   GBM      r_t = drift + sigma e_t
//   REGIME   two states; each bar the state switches with probability switch_prob (starting in state
//            1); r_t = drift_s + sigma_s e_t with (drift, sigma) or (drift2, sigma2)
//   AR1      r_t = drift + rho (r_{t-1} - drift) + sigma sqrt(1 - rho^2) e_t, r_0 - drift ~ N(0, sigma^2),
//            so the stationary std is sigma. Known answer: the policy sign(r_t) earns a per-bar Sharpe
//            of rho sqrt(2/pi) / sqrt(1 - 2 rho^2/pi) (0.0800 for rho = 0.1) on log returns.
// e_t are standard normals from one xoshiro stream seeded with `seed` (common/rng.h), drawn in bar
// order, so (params, seed) fixes every price.
//
// Bars: close_t = start_price exp(sum r), open_t = close_{t-1} (no gaps, so a fill at the next open
// is at the last close), open_0 = close_0; high and low extend max/min(open, close) by
// |N(0, 1)| sigma_t / 2 in log terms (two more draws per bar). ts_t = start_ts + t bar_seconds
// (no weekends). No bid/ask, no volume. Symbol "SYNTH-GBM", "SYNTH-REGIME" or "SYNTH-AR1", timezone UTC,
// source_format "synthetic".
// Depends on market_data.h and common/ (rng, error).
#ifndef PPO_ENVS_SYNTHETIC_H
#define PPO_ENVS_SYNTHETIC_H

#include <stdint.h>

#include "envs/market_data.h"

typedef enum { SYNTHETIC_GBM, SYNTHETIC_REGIME, SYNTHETIC_AR1 } SyntheticModel;

typedef struct {
  SyntheticModel model;
  int64_t bars;           // T >= 2
  int64_t bar_seconds;    // >= 1
  int64_t start_ts;       // ts of bar 0 (seconds since the epoch, UTC)
  uint64_t seed;          // price stream seed
  double start_price;     // close_0 > 0
  double drift, sigma;    // per bar, log returns (state 1 for REGIME); sigma > 0
  double rho;             // AR1: |rho| < 1
  double switch_prob;     // REGIME: in [0, 1]
  double drift2, sigma2;  // REGIME: state 2
} SyntheticParams;

SyntheticParams synthetic_params_default(void);  // AR1, 100000 hourly bars from 2000-01-03, sigma 0.001, rho 0.1
// A new validated MarketData (free with market_data_free), or NULL and the error message for bad params.
MarketData *synthetic_market_new(const SyntheticParams *params);

#endif
