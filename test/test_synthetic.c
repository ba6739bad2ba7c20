// test/test_synthetic.c: the synthetic markets (envs/synthetic.h) against their defining statistics.
//
// Each model's sample moments must match its parameters within 4 standard errors (the tolerances are
// derived, not tuned); the same seed gives the same bytes, another seed other prices.
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "common/error.h"
#include "envs/synthetic.h"

static double log_return(const MarketData *d, int64_t t) { return log(d->close[t] / d->close[t - 1]); }

Test(synthetic, seeded_and_reproducible) {
  SyntheticParams p = synthetic_params_default();
  p.bars = 5000;
  MarketData *a = synthetic_market_new(&p), *b = synthetic_market_new(&p);
  p.seed = 1;
  MarketData *c = synthetic_market_new(&p);
  cr_assert_not_null(a, "%s", error_message());
  cr_assert_eq(memcmp(a->close, b->close, sizeof(double) * 5000), 0);
  cr_assert_eq(memcmp(a->high, b->high, sizeof(double) * 5000), 0);
  cr_assert_neq(memcmp(a->close, c->close, sizeof(double) * 5000), 0);
  cr_assert_str_eq(a->symbol, "SYNTH-AR1");
  cr_assert_eq(a->bar_seconds, 3600);
  cr_assert(!a->has_bid_ask && !a->has_volume);
  for (int64_t t = 1; t < a->rows; t++) cr_assert_eq(a->open[t], a->close[t - 1], "no gaps: open = previous close");
  market_data_free(a), market_data_free(b), market_data_free(c);
}

Test(synthetic, gbm_moments) {
  SyntheticParams p = synthetic_params_default();
  p.model = SYNTHETIC_GBM, p.bars = 200001, p.drift = 2e-4, p.sigma = 0.01, p.seed = 3;
  MarketData *d = synthetic_market_new(&p);
  double n = (double)(d->rows - 1), sum = 0, sq = 0;
  for (int64_t t = 1; t < d->rows; t++) sum += log_return(d, t), sq += log_return(d, t) * log_return(d, t);
  double mean = sum / n, sd = sqrt(sq / n - mean * mean);
  cr_assert_float_eq(mean, p.drift, 4 * p.sigma / sqrt(n), "mean %g", mean);
  cr_assert_float_eq(sd, p.sigma, 4 * p.sigma / sqrt(2 * n), "sd %g", sd);
  market_data_free(d);
}

Test(synthetic, ar1_autocorrelation) {
  SyntheticParams p = synthetic_params_default();
  p.bars = 200001, p.rho = 0.3, p.seed = 5;
  MarketData *d = synthetic_market_new(&p);
  double n = (double)(d->rows - 2), sxy = 0, sxx = 0, sq = 0;
  for (int64_t t = 2; t < d->rows; t++) {
    double x = log_return(d, t - 1), y = log_return(d, t);
    sxy += x * y, sxx += x * x, sq += y * y;
  }
  double rho = sxy / sxx, sd = sqrt(sq / n);
  cr_assert_float_eq(rho, 0.3, 4 * sqrt((1 - 0.09) / n), "lag-1 autocorrelation %g", rho);
  cr_assert_float_eq(sd, p.sigma, 4 * p.sigma * sqrt((1 + 0.09) / (1 - 0.09) / (2 * n)), "stationary sd %g", sd);
  market_data_free(d);
}

// Symmetric switching spends half the time in each state: the return variance is the mixture's.
Test(synthetic, regime_variance_is_the_mixture) {
  SyntheticParams p = synthetic_params_default();
  p.model = SYNTHETIC_REGIME, p.bars = 400001, p.sigma = 0.001, p.sigma2 = 0.003, p.switch_prob = 0.01, p.seed = 8;
  MarketData *d = synthetic_market_new(&p);
  double n = (double)(d->rows - 1), sq = 0, big = 0;
  for (int64_t t = 1; t < d->rows; t++) {
    double r = log_return(d, t);
    sq += r * r;
    big += fabs(r) > 0.004;  // almost only state 2 produces these
  }
  double var = sq / n, expect = 0.5 * (1e-6 + 9e-6);
  // Runs last 100 bars on average, so the effective sample is about n / 100 regime draws.
  cr_assert_float_eq(var, expect, 4 * 0.5 * (9e-6 - 1e-6) / sqrt(n / 100.0), "variance %g vs %g", var, expect);
  cr_assert_gt(big, 0);
  market_data_free(d);
}

Test(synthetic, bad_params_rejected) {
  SyntheticParams p = synthetic_params_default();
  p.rho = 1.0;
  cr_assert_null(synthetic_market_new(&p));
  cr_assert_not_null(strstr(error_message(), "rho"), "%s", error_message());
  p = synthetic_params_default();
  p.sigma = 0;
  cr_assert_null(synthetic_market_new(&p));
}
