// envs/features.h: the causal market features of the trading env (TRADING_ENV.md section 4).
//
// Computed once per dataset into a (T, F) float32 matrix (legend: T bars, F = FEATURES_COUNT
// features), shared read-only by every env: an observation is a memcpy of W consecutive rows.
// Row t depends on bars 0..t only: every feature is a forward recursion (EWMA, EMA, Wilder's RSI)
// or a difference of past prices, evaluated in a fixed order, so computing on bars[0..t] gives the
// full run's row t bit for bit (tested). No raw price level and no unnormalised volume enters.
//
// sigma_t is the EWMA standard deviation of 1-bar log returns of the mid close, with pandas'
// adjust=True weights (sum w_i r_i^2 / sum w_i, w_i = lambda^(t-i), lambda = 0.5^(1/halflife)), so it
// is defined from the first return on, with no start-up value to choose. Where a denominator is not
// yet defined (t = 0, t < k) the feature is 0. Every entry is clipped to [-5, 5].
//
// Features (F = 16; k1..k3 = 4, 24, 120 hourly; 5, 21, 63 daily):
//   0 r1       ln(M_t/M_{t-1}) / sigma_{t-1}
//   1-3 r_k    ln(M_t/M_{t-k}) / (sigma_t sqrt k)
//   4 vol_regime ln(sigma_t / sigma_long_t), long half-life 10x
//   5 range    (H_t - L_t) / (M_t sigma_t)            (mid high, low)
//   6 body     (C_t - O_t) / (M_t sigma_t)            (mid open, close)
//   7 x_fast   (EMA_fast(M)_t - M_t) / (M_t sigma_t)  EMA with alpha = 2/(span+1), started at M_0
//   8 x_slow   same with ema_slow
//   9 x_strategy sign(EMA_fast - EMA_slow) in {-1, 0, 1}
//  10 macd     (EMA12 - EMA26)_t / (M_t sigma_t)
//  11 rsi      (RSI14_t - 50)/50, Wilder smoothing (alpha 1/14); 0 until a move happened
//  12 spread   (ask_close - bid_close)/M_t in bp/10; 0 when the data has no bid/ask
//  13 gap      ln(1 + hours since the previous bar start); 0 at t = 0
//  14-15 time  sin, cos of 2 pi hour/24 (UTC); daily data: of 2 pi weekday/7
//
// Besides the matrix, sigma (T) double is kept: the env needs sigma_t for the unrealised P&L in
// sigma units, vol-scaled slippage, the variance shaping and vol targeting.
// Ownership: features_compute returns one allocation (struct + columns); features_free releases it.
// Depends on market_data.h and common/ (check, error).
#ifndef PPO_ENVS_FEATURES_H
#define PPO_ENVS_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "envs/market_data.h"

// The columns, in the order of the list above (names_hourly / names_daily in features.c name them).
// A new feature goes last, before FEATURES_COUNT (docs/ARCHITECTURE.md section 13.7).
typedef enum {
  FEATURE_R1,
  FEATURE_R_K1,  // r4 hourly, r5 daily; then k2, k3
  FEATURE_R_K2,
  FEATURE_R_K3,
  FEATURE_VOL_REGIME,
  FEATURE_RANGE,
  FEATURE_BODY,
  FEATURE_X_FAST,
  FEATURE_X_SLOW,
  FEATURE_X_STRATEGY,  // sign(EMA_fast - EMA_slow): the MA-rule baseline trades on it
  FEATURE_MACD,
  FEATURE_RSI,
  FEATURE_SPREAD,
  FEATURE_GAP,
  FEATURE_TIME_SIN,
  FEATURE_TIME_COS,
  FEATURES_COUNT  // F
} FeatureColumn;
#define FEATURES_CLIP 5.0

typedef struct {
  double sigma_halflife;   // bars; NaN = auto: 48 hourly, 20 daily
  int ema_fast, ema_slow;  // EMA spans (x_fast, x_slow, x_strategy); 0 = auto: 12, 48
  bool daily;              // bar size >= 12 h: daily horizons (5, 21, 63), weekday time features
  bool daily_auto;         // true: features_params_resolve sets `daily` from the data's bar size
} FeatureParams;

typedef struct {
  int64_t rows;                       // T
  int count;                          // F = FEATURES_COUNT
  int horizons[3];                    // k of r_k
  int64_t lookback;                   // longest lookback in bars (max of k3, ema_slow, 26, sigma half-life)
  FeatureParams params;               // resolved
  const char *names[FEATURES_COUNT];  // column names (static strings)
  float *values;                      // (T, F) row-major, clipped to [-5, 5]
  double *sigma;                      // (T) EWMA std of 1-bar log returns; NaN at t = 0
  size_t bytes;                       // the whole allocation
} Features;

FeatureParams features_params_default(void);  // everything auto
// Fills the auto fields from the data (bar size). 0, or -1 and the error message when spans are bad.
int features_params_resolve(FeatureParams *params, const MarketData *data);
// Computes the matrix for `data` with resolved params. Never NULL (exits when out of memory).
Features *features_compute(const MarketData *data, const FeatureParams *params);
size_t features_bytes(int64_t rows);  // what features_compute allocates for `rows` bars
void features_free(Features *features);  // NULL is fine
// Writes the matrix as CSV: a header "time,NAME..." and one line per bar, the bar start as
// "YYYY-MM-DD HH:MM[:SS]" (UTC calendar) and each feature as %.9g (reads back to the same float).
// 0, or -1 and the error message when the stream reports a write error.
int features_write_csv(const Features *features, const MarketData *data, FILE *out);

#endif
