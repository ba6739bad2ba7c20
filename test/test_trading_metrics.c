// test/test_trading_metrics.c: metric golden values (TRADING_ENV.md section 10, test 6).
//
// Buy-and-hold on the shipped data against the reference table in data/README.md (numbers computed
// elsewhere, printed there rounded: the tolerance is half a unit of the printed digit; CAGR 0.015 points
// since the README annualises with its own calendar); Sortino and max drawdown on small hand-made
// curves; the differential Sharpe ratio against the finite difference of the EMA Sharpe ratio it is
// the derivative of, and DSR/D3R against Moody and Saffell's closed forms.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "common/rng.h"
#include "envs/metrics.h"
#include "trading_test_util.h"

typedef struct {
  const char *file;
  TradingSplit split;
  int64_t bars;
  double total, cagr, vol, sharpe, mdd;  // README: %, %, %, plain, %
} ReadmeRow;

static const ReadmeRow readme_rows[] = {
    {"XAUUSD_1H.h5", TRADING_SPLIT_TRAIN, 52676, 112.9, 8.99, 20.5, 0.52, 40.9},
    {"XAUUSD_1H.h5", TRADING_SPLIT_VAL, 11387, -3.0, -1.51, 15.2, -0.02, 19.5},
    {"XAUUSD_1H.h5", TRADING_SPLIT_TEST, 12436, 15.4, 6.90, 9.8, 0.73, 14.6},
    {"EURUSD_1H.h5", TRADING_SPLIT_TRAIN, 49806, -8.3, -1.08, 10.4, -0.05, 25.8},
    {"EURUSD_1H.h5", TRADING_SPLIT_VAL, 12310, -13.0, -6.76, 10.7, -0.60, 14.4},
    {"EURUSD_1H.h5", TRADING_SPLIT_TEST, 12323, 9.6, 4.73, 7.3, 0.67, 10.6},
    {"SPY_1D.h5", TRADING_SPLIT_TRAIN, 3773, 46.4, 2.57, 20.8, 0.23, 56.5},
    {"SPY_1D.h5", TRADING_SPLIT_VAL, 1008, 52.9, 11.23, 12.9, 0.89, 14.3},
    {"SPY_1D.h5", TRADING_SPLIT_TEST, 1068, 76.0, 14.26, 19.9, 0.77, 34.1},
};

// The default (auto) splits reproduce the README's bar counts, and buy-and-hold of the mid close
// over each split (first bar to last) its figures.
Test(metrics, buy_and_hold_matches_readme) {
  for (size_t k = 0; k < sizeof readme_rows / sizeof readme_rows[0]; k++) {
    const ReadmeRow *row = &readme_rows[k];
    MarketData *d = load_shipped(row->file);
    Features *f = features_for(d);
    TradingParams p = trading_params_default();
    TradingContext c;
    context_for(&c, d, f, &p);
    int64_t lo = c.split_lo[row->split], hi = c.split_hi[row->split];
    cr_assert_eq(hi - lo, row->bars, "%s %s: %lld bars", row->file, trading_split_name(row->split),
                 (long long)(hi - lo));
    Metrics m;
    metrics_compute(&m, d->close + lo, d->ts + lo, hi - 1 - lo, 0, 0);
    const char *what = row->file;
    cr_assert_float_eq(100 * m.total_return, row->total, 0.05 + 1e-9, "%s total %.4f%%", what, 100 * m.total_return);
    cr_assert_float_eq(100 * m.cagr, row->cagr, 0.015, "%s cagr %.4f%%", what, 100 * m.cagr);
    cr_assert_float_eq(100 * m.ann_vol, row->vol, 0.05 + 1e-9, "%s vol %.4f%%", what, 100 * m.ann_vol);
    cr_assert_float_eq(m.sharpe, row->sharpe, 0.005 + 1e-9, "%s sharpe %.4f", what, m.sharpe);
    cr_assert_float_eq(100 * m.max_drawdown, row->mdd, 0.05 + 1e-9, "%s mdd %.4f%%", what, 100 * m.max_drawdown);
    features_free(f);
    market_data_free(d);
  }
}

// E = 1, 1.1, 0.99, 0.891, 1.2, 1.08 one day apart: r = .1, -.1, -.1, .2/.891 ... computed by hand below.
Test(metrics, hand_made_curve) {
  const double e[] = {1.0, 1.1, 0.99, 0.891, 1.2, 1.08};
  int64_t ts[6];
  for (int i = 0; i < 6; i++) ts[i] = (int64_t)i * 86400;
  Metrics m;
  metrics_compute(&m, e, ts, 5, 0, 0);
  const double r4 = 1.2 / 0.891 - 1.0;
  const double r[5] = {0.1, -0.1, -0.1, r4, -0.1};
  double mean = (0.1 - 0.1 - 0.1 + r4 - 0.1) / 5, ss = 0;
  for (int i = 0; i < 5; i++) ss += (r[i] - mean) * (r[i] - mean);
  double P = 5 / (5 * 86400 / (365.25 * 86400));  // 365.25 bars a year
  cr_assert_float_eq(m.periods_per_year, 365.25, 1e-9);
  cr_assert_float_eq(m.total_return, 0.08, 1e-12);
  cr_assert_float_eq(m.max_drawdown, 1 - 0.891 / 1.1, 1e-12, "MDD from the 1.1 peak to 0.891");
  cr_assert_eq(m.underwater_bars, 2);
  cr_assert_float_eq(m.sharpe, mean / sqrt(ss / 4) * sqrt(P), 1e-9);
  cr_assert_float_eq(m.sortino, mean / sqrt(3 * 0.01 / 5) * sqrt(P), 1e-9, "downside: three -10%% bars over N = 5");
  cr_assert_float_eq(m.calmar, m.cagr / m.max_drawdown, 1e-12);
  // A rising curve has no drawdown and no Calmar.
  const double up[] = {1.0, 1.01, 1.02};
  metrics_compute(&m, up, ts, 2, 0, 0);
  cr_assert_eq(m.max_drawdown, 0.0);
  cr_assert(isnan(m.calmar));
}

// Ruin: a curve that reaches 0 or below (a leveraged bar past the stop) keeps its total return and
// drawdown, and its ratios are undefined: 25x, then -112 in one bar, then flat scored a Sharpe of
// 1.13 from the returns divided by a negative equity, and was picked as best.h5.
Test(metrics, a_ruined_curve_has_no_ratios) {
  const double e[] = {1.0, 5.0, 25.0, -112.0, -112.0, -112.0};
  int64_t ts[6];
  for (int i = 0; i < 6; i++) ts[i] = (int64_t)i * 86400;
  Metrics m;
  metrics_compute(&m, e, ts, 5, 0, 0);
  cr_expect(metrics_ruined(e, 5) && !metrics_ruined(e, 2));
  cr_expect_float_eq(m.total_return, -113.0, 1e-12);
  cr_expect_float_eq(m.max_drawdown, 1.0 + 112.0 / 25.0, 1e-12, "from the 25 peak to -112");
  cr_expect(isnan(m.sharpe) && isnan(m.sharpe_per_bar) && isnan(m.sortino) && isnan(m.cagr) && isnan(m.calmar) &&
                isnan(m.ann_vol),
            "sharpe %g sortino %g cagr %g calmar %g", m.sharpe, m.sortino, m.cagr, m.calmar);
  const double zero[] = {1.0, 0.0, 0.0};  // exactly 0 is ruin too
  metrics_compute(&m, zero, ts, 2, 0, 0);
  cr_expect(isnan(m.sharpe));
}

// The DSR is the derivative of the EMA Sharpe ratio S = A / sqrt(B - A^2) in eta (Moody and Saffell):
// S(eta) - S(0) ~ eta D for small eta. Checked against the finite difference, not the formula.
Test(metrics, dsr_is_the_sharpe_derivative) {
  const double a0 = 0.001, b0 = 0.0004;
  const double rs[] = {0.03, -0.02, 0.0005, -0.05, 0.01};
  for (size_t k = 0; k < sizeof rs / sizeof rs[0]; k++) {
    double eta = 1e-7, r = rs[k];
    DsrState s = {a0, b0};
    double d = dsr_step(&s, r, eta, 0.01);
    double s0 = a0 / sqrt(b0 - a0 * a0), s1 = s.a / sqrt(s.b - s.a * s.a);
    cr_assert_float_eq(d, (s1 - s0) / eta, 1e-5 * fabs(d) + 1e-9, "r = %g: D = %.9g, dS/deta = %.9g", r, d,
                       (s1 - s0) / eta);
  }
  // Known answer: A = 0.001, B = 0.0001, R = 0.002 -> (1e-4 * 1e-3 + 0.5e-3 * 9.6e-5) / (9.9e-5)^1.5.
  // (cr_assert_float_eq evaluates its arguments twice: step first, compare after.)
  DsrState s = {0.001, 0.0001};
  double d = dsr_step(&s, 0.002, 0.01, 0.0);
  cr_assert_float_eq(d, 1.48e-7 / pow(9.9e-5, 1.5), 1e-12);
  cr_assert_float_eq(s.a, 0.001 + 0.01 * 0.001, 1e-15);
  // No variance yet: R / sigma; clipped to +-10.
  DsrState z = {0, 0}, y = {0, 0};
  d = dsr_step(&z, 0.002, 0.01, 0.001);
  cr_assert_float_eq(d, 2.0, 1e-12);
  d = dsr_step(&y, 0.5, 0.01, 0.001);
  cr_assert_eq(d, 10.0);
}

// The guard is B - A^2 < DSR_EPS (TRADING_ENV.md: "fall back to R/sigma while B - A^2 < eps"), not
// a variance of exactly 0: constant returns leave B - A^2 a rounding residue, a few 1e-15 above 0,
// and the closed form then divides by its 1.5th power (a reward of -10 for a gain). Likewise
// D3R's DD^2 below DSR_EPS.
Test(metrics, dsr_and_d3r_fall_back_below_eps_not_only_at_zero) {
  DsrState s = {0.001, 1e-6 + 5e-15};  // B - A^2 = 5e-15: positive, below DSR_EPS = 1e-14
  cr_assert(s.b - s.a * s.a > 0 && s.b - s.a * s.a < DSR_EPS);
  double d = dsr_step(&s, 0.002, 0.01, 0.001);
  cr_expect_float_eq(d, 2.0, 1e-12, "DSR: R / sigma = 0.002 / 0.001, got %g", d);
  DsrState t = {0.001, 5e-15};  // DD^2 positive, below DSR_EPS
  d = d3r_step(&t, 0.002, 0.01, 0.001);
  cr_expect_float_eq(d, 2.0, 1e-12, "D3R: R / sigma = 0.002 / 0.001, got %g", d);
}

// D3R known answers (Moody and Saffell 2001, eq. for the downside deviation ratio).
Test(metrics, d3r_known_answers) {
  DsrState s = {0.001, 0.0004};  // A, DD^2 (DD = 0.02)
  double d = d3r_step(&s, 0.01, 0.01, 0.0);
  cr_assert_float_eq(d, (0.01 - 0.0005) / 0.02, 1e-12, "R > 0");
  cr_assert_float_eq(s.b, 0.0004 * 0.99, 1e-15, "a gain shrinks DD^2");
  DsrState t = {0.001, 0.0004};
  double r = -0.01;
  double expect = (0.0004 * (r - 0.0005) - 0.5 * 0.001 * r * r) / pow(0.0004, 1.5);
  d = d3r_step(&t, r, 0.01, 0.0);
  cr_assert_float_eq(d, expect, 1e-12, "R < 0");
  cr_assert_float_eq(t.b, 0.0004 + 0.01 * (1e-4 - 0.0004), 1e-15);
}

// The same figures through the env: always long with zero costs over each test split, the equity curve
// from the accounting routine (the last point net of the forced close) into metrics_compute. The env
// buys at the second bar's open and sells at the last bar's open, so it is close to, not equal to,
// the price-based figures: within 1 point of return and drawdown (a daily bar's open-to-close move at
// each end, for SPY) and 0.02 of Sharpe.
Test(metrics, buy_and_hold_through_the_env) {
  for (size_t k = 2; k < sizeof readme_rows / sizeof readme_rows[0]; k += 3) {
    const ReadmeRow *row = &readme_rows[k];
    MarketData *d = load_shipped(row->file);
    Features *f = features_for(d);
    TradingParams p = trading_params_default();
    params_zero_cost(&p);
    p.eval = true, p.eval_split = row->split;
    TradingContext c;
    context_for(&c, d, f, &p);
    int64_t n = c.eval_end - c.eval_start;
    double *equity = malloc(sizeof(double) * (size_t)(n + 1));
    int64_t *ts = malloc(sizeof(int64_t) * (size_t)(n + 1));
    float *obs = calloc((size_t)c.obs_dim, sizeof(float)), reward, log[TRADING_LOG_SIZE];
    uint8_t terminated = 0, truncated = 0;
    TradingEnv e;
    env_start(&e, &c, obs);
    equity[0] = e.equity, ts[0] = d->ts[e.t];
    for (int64_t i = 1; i <= n; i++) {
      int32_t long_level = 2;
      trading_env_step(&e, &long_level, obs, &reward, &terminated, &truncated, log);
      equity[i] = e.equity, ts[i] = d->ts[e.t];
    }
    cr_assert(truncated && !terminated);
    equity[n] = e.exit_equity;
    Metrics m;
    metrics_compute(&m, equity, ts, n, 0, 0);
    cr_assert_float_eq(100 * m.total_return, row->total, 1.0, "%s total %.3f%%", row->file, 100 * m.total_return);
    cr_assert_float_eq(m.sharpe, row->sharpe, 0.02, "%s sharpe %.4f", row->file, m.sharpe);
    cr_assert_float_eq(100 * m.max_drawdown, row->mdd, 1.0, "%s mdd %.3f%%", row->file, 100 * m.max_drawdown);
    cr_assert_float_eq(log[2], (float)m.total_return, 1e-6, "the episode log agrees with the curve");
    cr_assert_float_eq(log[5], (float)m.max_drawdown, 1e-6);
    cr_assert_float_eq(log[4], (float)m.sharpe, 1e-4 * fabs(m.sharpe) + 1e-6,
                       "%s: the episode log's Sharpe %g, the curve's %g (annualised with the bars a year)", row->file,
                       log[4], m.sharpe);
    free(equity), free(ts), free(obs);
    features_free(f);
    market_data_free(d);
  }
}
