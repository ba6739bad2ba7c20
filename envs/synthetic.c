// envs/synthetic.c: GBM, regime switching and AR(1) markets (see synthetic.h).
#include "envs/synthetic.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/rng.h"
#include "common/time_utc.h"

SyntheticParams synthetic_params_default(void) {
  return (SyntheticParams){
      .model = SYNTHETIC_AR1,
      .bars = 100000,
      .bar_seconds = 3600,
      .start_ts = utc_days_from_civil(2000, 1, 3) * 86400,
      .seed = 0,
      .start_price = 100.0,
      .drift = 0.0,
      .sigma = 0.001,
      .rho = 0.1,
      .switch_prob = 0.01,
      .drift2 = 0.0,
      .sigma2 = 0.003,
  };
}

static int synthetic_params_check(const SyntheticParams *p) {
  if (p->bars < 2 || p->bar_seconds < 1 || !(p->start_price > 0) || !(p->sigma > 0) || !isfinite(p->drift)) {
    error_set(
        "synthetic: bars = %lld (>= 2), bar_seconds = %lld (>= 1), start_price = %g (> 0), sigma = %g (> 0), "
        "drift = %g (finite): out of range",
        (long long)p->bars, (long long)p->bar_seconds, p->start_price, p->sigma, p->drift);
    return -1;
  }
  if (p->model == SYNTHETIC_AR1 && !(fabs(p->rho) < 1)) {
    error_set("synthetic: rho = %g: must lie in (-1, 1)", p->rho);
    return -1;
  }
  if (p->model == SYNTHETIC_REGIME &&
      (!(p->switch_prob >= 0 && p->switch_prob <= 1) || !(p->sigma2 > 0) || !isfinite(p->drift2))) {
    error_set("synthetic: switch_prob = %g (in [0, 1]), sigma2 = %g (> 0), drift2 = %g: out of range", p->switch_prob,
              p->sigma2, p->drift2);
    return -1;
  }
  if ((int)p->model < SYNTHETIC_GBM || (int)p->model > SYNTHETIC_AR1) {
    error_set("synthetic: unknown model %d", (int)p->model);
    return -1;
  }
  return 0;
}

MarketData *synthetic_market_new(const SyntheticParams *p) {
  if (synthetic_params_check(p) != 0) return NULL;
  static const char *const symbols[] = {"SYNTH-GBM", "SYNTH-REGIME", "SYNTH-AR1"};
  MarketData *d = market_data_new(p->bars);
  snprintf(d->symbol, sizeof d->symbol, "%s", symbols[p->model]);
  snprintf(d->timezone, sizeof d->timezone, "UTC");
  snprintf(d->source, sizeof d->source, "synthetic seed %llu", (unsigned long long)p->seed);
  snprintf(d->source_format, sizeof d->source_format, "synthetic");
  Rng rng;
  rng_seed(&rng, p->seed);
  double log_price = log(p->start_price);
  double ar = 0.0;  // AR1: r_{t-1} - drift
  int state = 0;    // REGIME: 0 = state 1, 1 = state 2
  for (int64_t t = 0; t < p->bars; t++) {
    double sigma_t = p->sigma, r = 0.0;
    if (p->model == SYNTHETIC_GBM) {
      if (t > 0) r = p->drift + p->sigma * rng_normal(&rng);
    } else if (p->model == SYNTHETIC_REGIME) {
      if (t > 0) {
        if (rng_uniform(&rng) < p->switch_prob) state = 1 - state;
        sigma_t = state ? p->sigma2 : p->sigma;
        r = (state ? p->drift2 : p->drift) + sigma_t * rng_normal(&rng);
      }
    } else {
      if (t == 0)
        ar = p->sigma * rng_normal(&rng);
      else {
        ar = p->rho * ar + p->sigma * sqrt(1.0 - p->rho * p->rho) * rng_normal(&rng);
        r = p->drift + ar;
      }
    }
    double open = t == 0 ? exp(log_price) : d->close[t - 1];
    log_price += r;
    double close = exp(log_price);
    double up = fabs(rng_normal(&rng)) * sigma_t * 0.5, down = fabs(rng_normal(&rng)) * sigma_t * 0.5;
    d->ts[t] = p->start_ts + t * p->bar_seconds;
    d->open[t] = open;
    d->close[t] = close;
    d->high[t] = (open > close ? open : close) * exp(up);
    d->low[t] = (open < close ? open : close) * exp(-down);
  }
  if (market_data_validate(d, "synthetic") != 0) {
    market_data_free(d);
    return NULL;
  }
  return d;
}
