// envs/features.c: the causal feature matrix (see features.h). One forward pass over the bars;
// every running quantity (EWMAs, EMAs, RSI averages) is updated in the same order at each row, so a
// prefix of the data reproduces the same bits.
#include "envs/features.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/error.h"
#include "common/time_utc.h"

#define DAILY_BAR_SECONDS (12 * 3600)
#define PI 3.141592653589793

static const char *const names_hourly[FEATURES_COUNT] = {
    "r1",     "r4",         "r24",  "r120", "vol_regime", "range", "body",     "x_fast",
    "x_slow", "x_strategy", "macd", "rsi",  "spread",     "gap",   "time_sin", "time_cos"};
static const char *const names_daily[FEATURES_COUNT] = {
    "r1",     "r5",         "r21",  "r63", "vol_regime", "range", "body",    "x_fast",
    "x_slow", "x_strategy", "macd", "rsi", "spread",     "gap",   "dow_sin", "dow_cos"};

FeatureParams features_params_default(void) {
  return (FeatureParams){.sigma_halflife = NAN, .ema_fast = 0, .ema_slow = 0, .daily = false, .daily_auto = true};
}

int features_params_resolve(FeatureParams *p, const MarketData *data) {
  if (p->daily_auto) p->daily = data->bar_seconds >= DAILY_BAR_SECONDS;
  p->daily_auto = false;
  if (isnan(p->sigma_halflife)) p->sigma_halflife = p->daily ? 20.0 : 48.0;
  if (p->ema_fast == 0) p->ema_fast = 12;
  if (p->ema_slow == 0) p->ema_slow = 48;
  if (!(p->sigma_halflife > 0) || p->ema_fast < 1 || p->ema_slow <= p->ema_fast) {
    error_set(
        "features: sigma_halflife = %g, ema_fast = %d, ema_slow = %d: need a half-life > 0 and "
        "1 <= ema_fast < ema_slow",
        p->sigma_halflife, p->ema_fast, p->ema_slow);
    return -1;
  }
  return 0;
}

static inline float clip_feature(double x) {
  if (isnan(x)) return 0.0f;
  if (x > FEATURES_CLIP) x = FEATURES_CLIP;
  if (x < -FEATURES_CLIP) x = -FEATURES_CLIP;
  return (float)x;
}

// x / d, 0 where d is not a positive number yet (no history).
static inline double ratio(double x, double d) { return d > 0 ? x / d : 0.0; }

#define FEATURES_HEAD_BYTES ((sizeof(Features) + 63) / 64 * 64)

// The slab: the head, the (T, F) values padded to a cache line, then sigma (T doubles).
static size_t values_bytes_of(int64_t T) { return ((size_t)T * FEATURES_COUNT * sizeof(float) + 63) / 64 * 64; }

size_t features_bytes(int64_t rows) {
  return FEATURES_HEAD_BYTES + values_bytes_of(rows) + (size_t)rows * sizeof(double);
}

Features *features_compute(const MarketData *data, const FeatureParams *params) {
  CHECK(!params->daily_auto && params->sigma_halflife > 0 && params->ema_slow > params->ema_fast,
        "features_compute needs params resolved by features_params_resolve");
  const int64_t T = data->rows;
  const int F = FEATURES_COUNT;
  size_t head = FEATURES_HEAD_BYTES, values_bytes = values_bytes_of(T), bytes = features_bytes(T);
  unsigned char *slab = CHECK_ALLOC(bytes, "feature matrix");
  Features *f = (Features *)slab;
  *f = (Features){.rows = T, .count = F, .params = *params, .bytes = bytes};
  f->values = (float *)(slab + head);
  f->sigma = (double *)(slab + head + values_bytes);
  const int daily = params->daily;
  const int horizons_hourly[3] = {4, 24, 120}, horizons_daily[3] = {5, 21, 63};
  memcpy(f->horizons, daily ? horizons_daily : horizons_hourly, sizeof f->horizons);
  for (int j = 0; j < F; j++) f->names[j] = daily ? names_daily[j] : names_hourly[j];
  double lookback = f->horizons[2];
  if (params->ema_slow > lookback) lookback = params->ema_slow;
  if (26 > lookback) lookback = 26;
  if (params->sigma_halflife > lookback) lookback = params->sigma_halflife;
  f->lookback = (int64_t)ceil(lookback);

  const double lambda = pow(0.5, 1.0 / params->sigma_halflife);
  const double lambda_long = pow(0.5, 1.0 / (10.0 * params->sigma_halflife));
  const double a_fast = 2.0 / (params->ema_fast + 1.0), a_slow = 2.0 / (params->ema_slow + 1.0);
  const double a12 = 2.0 / 13.0, a26 = 2.0 / 27.0, a_rsi = 1.0 / 14.0;
  double var_num = 0, var_den = 0, long_num = 0, long_den = 0;  // EWMA sums of r^2 and of the weights
  double ema_fast = 0, ema_slow = 0, ema12 = 0, ema26 = 0, gain = 0, loss = 0;
  double sigma_prev = NAN;
  const double *M = data->close;
  for (int64_t t = 0; t < T; t++) {
    float *row = f->values + (size_t)t * F;
    const double m = M[t];
    double r = 0.0;
    if (t == 0) {
      ema_fast = ema_slow = ema12 = ema26 = m;
    } else {
      r = log(m / M[t - 1]);
      var_num = lambda * var_num + (1.0 - lambda) * (r * r);
      var_den = lambda * var_den + (1.0 - lambda);
      long_num = lambda_long * long_num + (1.0 - lambda_long) * (r * r);
      long_den = lambda_long * long_den + (1.0 - lambda_long);
      ema_fast += a_fast * (m - ema_fast);
      ema_slow += a_slow * (m - ema_slow);
      ema12 += a12 * (m - ema12);
      ema26 += a26 * (m - ema26);
      double move = m - M[t - 1];
      gain += a_rsi * ((move > 0 ? move : 0.0) - gain);
      loss += a_rsi * ((move < 0 ? -move : 0.0) - loss);
    }
    const double sigma = t == 0 ? NAN : sqrt(var_num / var_den);
    const double sigma_long = t == 0 ? NAN : sqrt(long_num / long_den);
    f->sigma[t] = sigma;
    const double ms = m * sigma;  // price units of one sigma
    row[FEATURE_R1] = clip_feature(t == 0 ? 0.0 : ratio(r, sigma_prev));
    for (int h = 0; h < 3; h++) {
      int k = f->horizons[h];
      row[FEATURE_R_K1 + h] = clip_feature(t < k ? 0.0 : ratio(log(m / M[t - k]), sigma * sqrt((double)k)));
    }
    row[FEATURE_VOL_REGIME] = clip_feature(sigma > 0 && sigma_long > 0 ? log(sigma / sigma_long) : 0.0);
    row[FEATURE_RANGE] = clip_feature(ratio(data->high[t] - data->low[t], ms));
    row[FEATURE_BODY] = clip_feature(ratio(data->close[t] - data->open[t], ms));
    row[FEATURE_X_FAST] = clip_feature(ratio(ema_fast - m, ms));
    row[FEATURE_X_SLOW] = clip_feature(ratio(ema_slow - m, ms));
    row[FEATURE_X_STRATEGY] = (float)((ema_fast > ema_slow) - (ema_fast < ema_slow));
    row[FEATURE_MACD] = clip_feature(ratio(ema12 - ema26, ms));
    double rsi = gain + loss > 0 ? 100.0 * gain / (gain + loss) : 50.0;  // = 100 - 100/(1 + gain/loss)
    row[FEATURE_RSI] = clip_feature((rsi - 50.0) / 50.0);
    row[FEATURE_SPREAD] =
        clip_feature(data->has_bid_ask ? (data->ask_close[t] - data->bid_close[t]) / m * 1e4 / 10.0 : 0.0);
    row[FEATURE_GAP] = clip_feature(t == 0 ? 0.0 : log1p((double)(data->ts[t] - data->ts[t - 1]) / 3600.0));
    double phase;
    if (daily) {
      phase = 2.0 * PI * utc_weekday(data->ts[t]) / 7.0;
    } else {
      int64_t seconds_of_day = ((data->ts[t] % 86400) + 86400) % 86400;
      phase = 2.0 * PI * (double)(seconds_of_day / 3600) / 24.0;
    }
    row[FEATURE_TIME_SIN] = (float)sin(phase);
    row[FEATURE_TIME_COS] = (float)cos(phase);
    sigma_prev = sigma;
  }
  return f;
}

void features_free(Features *features) { free(features); }

int features_write_csv(const Features *f, const MarketData *d, FILE *out) {
  fprintf(out, "time");
  for (int j = 0; j < f->count; j++) fprintf(out, ",%s", f->names[j]);
  fputc('\n', out);
  char when[40];
  for (int64_t t = 0; t < f->rows; t++) {
    fputs(market_time_format(d->ts[t], when, sizeof when), out);
    const float *row = f->values + (size_t)t * f->count;
    for (int j = 0; j < f->count; j++) fprintf(out, ",%.9g", (double)row[j]);
    fputc('\n', out);
  }
  if (ferror(out)) {
    error_set("features: write error while writing the CSV");
    return -1;
  }
  return 0;
}
