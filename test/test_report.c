// test/test_report.c: the section-9 backtest report (envs/report.h).
//
// Every deterministic field against numpy/scipy on six hand-made cases (test/data/report_golden.inc,
// written by test/make_report_fixtures.py); a small curve worked out by hand in the comments; PSR and
// DSR in closed form on returns built to have skewness 0 and kurtosis 3; norm_cdf and norm_ppf against
// scipy (and their round trip); the bootstrap, which depends on our generator and so has no golden file,
// through properties it must have (determinism, coverage, 1/sqrt(N) width, the rotation limit of
// infinitely long blocks, Lo's standard error for iid returns) and one replay of its documented draws
// and quantile rule; the error paths.
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/rng.h"
#include "envs/report.h"

#define DAY 86400

// --- golden values ------------------------------------------------------------------------------

typedef struct {
  const char *name;
  ReportInput in;
  ReportOptions options;
  Report expected;
} GoldenCase;

#include "data/report_golden.inc"

// Every field of Report (and of its Metrics): real-valued ones compared to a relative tolerance,
// counts exactly. The generator asserts that the .inc sets all of the fields report.h declares.
#define REPORT_REAL_FIELDS(X)                                                                                         \
  X(m.years)                                                                                                          \
  X(m.periods_per_year)                                                                                               \
  X(m.total_return)                                                                                                   \
  X(m.cagr)                                                                                                           \
  X(m.ann_vol)                                                                                                        \
  X(m.sharpe)                                                                                                         \
  X(m.sharpe_per_bar) X(m.sortino) X(m.max_drawdown) X(m.calmar) X(underwater_days) X(turnover_per_bar)               \
      X(turnover_annual) X(notional_turnover) X(exposure) X(mean_abs_position) X(long_share) X(short_share)           \
          X(mean_hold_bars) X(trades_per_year) X(hit_rate) X(bar_hit_rate) X(payoff_ratio) X(profit_factor)           \
              X(cost_spread) X(cost_slippage) X(cost_commission) X(cost_financing) X(cost_total) X(cost_spread_pct)   \
                  X(cost_slippage_pct) X(cost_commission_pct) X(cost_financing_pct) X(cost_total_pct)                 \
                      X(cost_bp_per_trade) X(gross_return) X(net_return) X(skewness) X(kurtosis) X(sharpe_se) X(psr0) \
                          X(dsr) X(dsr_threshold) X(sharpe_ci_lo) X(sharpe_ci_hi) X(total_return_ci_lo)               \
                              X(total_return_ci_hi) X(block_mean)
#define REPORT_COUNT_FIELDS(X) X(m.n) X(m.underwater_bars) X(n_trades) X(bootstrap_samples)

// The two lists name every field of Report and of its Metrics: each field is 8 bytes (a double or an
// int64_t) but bootstrap_samples, the last, an int padded to 8, so the struct's size is 8 bytes per
// listed field. A field added to report.h or metrics.h and not listed here was compared by nothing
// (golden_every_field passed without it, and so did the generator's check, which only runs in Python).
Test(report, the_field_lists_name_every_field) {
#define COUNT_ONE(f) +1
  const size_t listed = 0 REPORT_REAL_FIELDS(COUNT_ONE) REPORT_COUNT_FIELDS(COUNT_ONE);
#undef COUNT_ONE
  cr_assert_eq(sizeof(Report), 8 * listed,
               "Report is %zu bytes, the lists name %zu fields (%zu bytes): add the new field of envs/report.h or "
               "envs/metrics.h to REPORT_REAL_FIELDS or REPORT_COUNT_FIELDS, and to test/make_report_fixtures.py",
               sizeof(Report), listed, 8 * listed);
}

// numpy sums pairwise and C left to right, and scipy's moments are computed differently from ours: a
// few ulps apart, so 1e-12 relative. NaN must be NaN and an infinity the same infinity.
static int close_enough(double got, double want) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= 1e-12 * fabs(want);
}

Test(report, golden_every_field) {
  for (size_t k = 0; k < sizeof golden_cases / sizeof golden_cases[0]; k++) {
    const GoldenCase *g = &golden_cases[k];
    Report r;
    memset(&r, 0x5a, sizeof r);  // garbage, so a field report_compute forgets cannot pass by being 0
    cr_assert_eq(report_compute(&r, &g->in, &g->options), 0, "%s: %s", g->name, error_message());
#define CHECK_REAL(f)                                                                                              \
  cr_expect(close_enough(r.f, g->expected.f), "%s: " #f " = %.17g, numpy says %.17g (rel err %.3g)", g->name, r.f, \
            g->expected.f, fabs(r.f - g->expected.f) / fabs(g->expected.f));
#define CHECK_COUNT(f)                                                                                  \
  cr_expect_eq((long long)r.f, (long long)g->expected.f, "%s: " #f " = %lld, numpy says %lld", g->name, \
               (long long)r.f, (long long)g->expected.f);
    REPORT_REAL_FIELDS(CHECK_REAL)
    REPORT_COUNT_FIELDS(CHECK_COUNT)
#undef CHECK_REAL
#undef CHECK_COUNT
  }
}

// --- a curve worked by hand ------------------------------------------------------------------------

// Daily bars, E = 1, 1.1, 0.99, 1.089, 1.2 (N = 4, Y = 4/365.25, P = 365.25).
//   peak 1.1 at bar 1; under water at bars 2 (0.99) and 3 (1.089); recovered at bar 4 (1.2):
//   MDD = 1 - 0.99/1.1 = 0.1; underwater_bars = 2; underwater_days = (ts_4 - ts_1)/day = 3.
//   w = 1, 1, 0, -1 over steps 1..4: exposure 3/4, mean |w| 3/4, long 2/4, short 1/4; in-market steps
//   1 (1 -> 1.1 up), 2 (1.1 -> 0.99 down), 4 (1.089 -> 1.2 up): bar hit rate 2/3.
//   turnover 1, 0, 1, 1: 3/4 per bar, x 365.25 a year. notional 1, 0, 1.089, 1.089 = 3.178 over mean
//   equity (1 + 1.1 + 0.99 + 1.089 + 1.2)/5 = 1.0758.
//   trades +0.3 (2 bars), +0.1 (1 bar), -0.2 (3 bars): hit rate 2/3, mean hold 2 bars, profit factor
//   0.4/0.2 = 2, payoff (0.4/2)/(0.2/1) = 1, 3 trades in 4/365.25 years = 273.9375 a year.
//   costs: spread 0.001 + 0.001, commission 0.002 + 0.002, financing 0.0005, slippage 0: total 0.0065
//   = 0.65 % of E_0 = 65 bp over 3 trades = 21.666.. bp each; gross return 1.2 + 0.0065 - 1 = 0.2065.
Test(report, hand_made_curve) {
  const double e[] = {1.0, 1.1, 0.99, 1.089, 1.2};
  const int64_t ts[] = {0, DAY, 2 * DAY, 3 * DAY, 4 * DAY};
  const double w[] = {0, 1, 1, 0, -1}, turnover[] = {0, 1, 0, 1, 1}, notional[] = {0, 1, 0, 1.089, 1.089};
  const double spread[] = {0, 0.001, 0, 0, 0.001}, commission[] = {0, 0.002, 0, 0, 0.002};
  const double financing[] = {0, 0, 0.0005, 0, 0}, zero[5] = {0};
  const ReportTrade trades[] = {{.entry_step = 1, .exit_step = 3, .side = 1, .net_pnl = 0.3, .bars = 2},
                                {.entry_step = 3, .exit_step = 4, .side = -1, .net_pnl = 0.1, .bars = 1},
                                {.entry_step = 1, .exit_step = 4, .side = 1, .net_pnl = -0.2, .bars = 3}};
  ReportInput in = {.n = 4,
                    .ts = ts,
                    .equity = e,
                    .position = w,
                    .turnover = turnover,
                    .notional = notional,
                    .cost_spread = spread,
                    .cost_slippage = zero,
                    .cost_commission = commission,
                    .cost_financing = financing,
                    .trades = trades,
                    .n_trades = 3};
  ReportOptions o = report_options_default();
  o.bootstrap_samples = 0;
  Report r;
  cr_assert_eq(report_compute(&r, &in, &o), 0, "%s", error_message());
  cr_expect_float_eq(r.m.max_drawdown, 0.1, 1e-15);
  cr_expect_eq(r.m.underwater_bars, 2);
  cr_expect_float_eq(r.underwater_days, 3.0, 1e-15);
  cr_expect_float_eq(r.exposure, 0.75, 1e-15);
  cr_expect_float_eq(r.mean_abs_position, 0.75, 1e-15);
  cr_expect_float_eq(r.long_share, 0.5, 1e-15);
  cr_expect_float_eq(r.short_share, 0.25, 1e-15);
  cr_expect_float_eq(r.bar_hit_rate, 2.0 / 3.0, 1e-15);
  cr_expect_float_eq(r.turnover_per_bar, 0.75, 1e-15);
  cr_expect_float_eq(r.turnover_annual, 0.75 * 365.25, 1e-12);
  cr_expect_float_eq(r.notional_turnover, 3.178 / 1.0758, 1e-14);
  cr_expect_eq(r.n_trades, 3);
  cr_expect_float_eq(r.hit_rate, 2.0 / 3.0, 1e-15);
  cr_expect_float_eq(r.mean_hold_bars, 2.0, 1e-15);
  cr_expect_float_eq(r.profit_factor, 2.0, 1e-14);
  cr_expect_float_eq(r.payoff_ratio, 1.0, 1e-14);
  cr_expect_float_eq(r.trades_per_year, 273.9375, 1e-11);
  cr_expect_float_eq(r.cost_total, 0.0065, 1e-16);
  cr_expect_float_eq(r.cost_total_pct, 0.65, 1e-14);
  cr_expect_float_eq(r.cost_commission_pct, 0.4, 1e-14);
  cr_expect_float_eq(r.cost_bp_per_trade, 65.0 / 3.0, 1e-12);
  cr_expect_float_eq(r.gross_return, 0.2065, 1e-14);
  cr_expect_float_eq(r.net_return, 0.2, 1e-14);
  cr_expect(isnan(r.sharpe_ci_lo) && isnan(r.total_return_ci_hi), "no bootstrap: NaN CI");
  cr_expect_float_eq(r.block_mean, 2.0, 0, "auto block: ceil(4^(1/3)) = ceil(1.587) = 2");

  // Still under water at the end: 1, 1.1, 0.99, 1.089, 1.05 -> the drawdown from bar 1 runs to N = 4:
  // 3 bars, and (ts_4 - ts_1)/day = 3 days (to the last bar, no recovery bar to add).
  const double e2[] = {1.0, 1.1, 0.99, 1.089, 1.05};
  in.equity = e2;
  cr_assert_eq(report_compute(&r, &in, &o), 0);
  cr_expect_eq(r.m.underwater_bars, 3);
  cr_expect_float_eq(r.underwater_days, 3.0, 1e-15);
  cr_expect_float_eq(r.m.max_drawdown, 0.1, 1e-15);

  // Wins only: profit factor INFINITY and no payoff ratio; no trades at all: NaN for both.
  const ReportTrade wins[] = {{.net_pnl = 0.1, .bars = 1}, {.net_pnl = 0.0, .bars = 1}};
  in.trades = wins;
  in.n_trades = 2;
  cr_assert_eq(report_compute(&r, &in, &o), 0);
  cr_expect(isinf(r.profit_factor) && r.profit_factor > 0, "wins and no loss: +inf, got %g", r.profit_factor);
  cr_expect(isnan(r.payoff_ratio));
  cr_expect_float_eq(r.hit_rate, 0.5, 1e-15, "a break-even trade is not a win");
  in.trades = NULL;
  in.n_trades = 0;
  cr_assert_eq(report_compute(&r, &in, &o), 0);
  cr_expect(isnan(r.profit_factor) && isnan(r.hit_rate) && isnan(r.cost_bp_per_trade) && isnan(r.mean_hold_bars));
}

// --- PSR and DSR in closed form ---------------------------------------------------------------------

// An equity curve alone: every position, flow and cost series is `zero` (n + 1 values).
static ReportInput curve_input(int64_t n, const int64_t *ts, const double *equity, const double *zero) {
  return (ReportInput){.n = n,
                       .ts = ts,
                       .equity = equity,
                       .position = zero,
                       .turnover = zero,
                       .notional = zero,
                       .cost_spread = zero,
                       .cost_slippage = zero,
                       .cost_commission = zero,
                       .cost_financing = zero};
}

// r = 0.01 + {0.02, -0.02, 0, 0, 0, 0}: symmetric (g3 = 0) and m4/m2^2 = (2 a^4/6)/(2 a^2/6)^2 = 6/2 = 3,
// so the PSR denominator is the normal one, 1 + SR^2/2. std (ddof 1) = sqrt(2 (0.02)^2 / 5) =
// sqrt(0.00016), SR_p = 0.01/sqrt(0.00016) = sqrt(0.625).
//   PSR(0) = Phi(SR_p sqrt(5) / sqrt(1 + 0.625/2)) = Phi(sqrt(3.125/1.3125)) = Phi(1.5430334996209192)
//   (Phi from libm's erfc here, not report.c; scipy: 0.9385886759493037).
//   DSR, 10 trials: SR* = sqrt(1.3125/5) z10 with z10 = (1 - gamma) Phi^-1(0.9) + gamma Phi^-1(1 - 1/(10 e))
//   = 0.42278 x 1.2815515655446004 + 0.57722 x 1.7892417645816283 = 1.5745983013457501 (scipy), so
//   DSR = Phi(1.5430334996209192 - 1.5745983013457501) = 0.4874095567743113 (scipy).
static void normal_moments_case(Report *r, int64_t n_trials) {
  static const double shocks[] = {0.02, -0.02, 0, 0, 0, 0};
  double e[7] = {1.0}, zero[7] = {0};
  int64_t ts[7];
  for (int i = 0; i <= 6; i++) ts[i] = (int64_t)i * DAY;
  for (int i = 1; i <= 6; i++) e[i] = e[i - 1] * (1.0 + 0.01 + shocks[i - 1]);
  ReportInput in = curve_input(6, ts, e, zero);
  ReportOptions o = report_options_default();
  o.bootstrap_samples = 0;
  o.n_trials = n_trials;
  cr_assert_eq(report_compute(r, &in, &o), 0, "%s", error_message());
}

Test(report, psr_closed_form) {
  Report r;
  normal_moments_case(&r, 1);
  cr_expect_float_eq(r.skewness, 0.0, 1e-9);
  cr_expect_float_eq(r.kurtosis, 3.0, 1e-9);
  cr_expect_float_eq(r.m.sharpe_per_bar, sqrt(0.625), 1e-12);
  double z = sqrt(3.125 / 1.3125);
  cr_expect_float_eq(z, 1.5430334996209192, 1e-15);
  cr_expect_float_eq(r.psr0, 0.5 * erfc(-z / sqrt(2.0)), 1e-10);
  cr_expect_float_eq(r.psr0, 0.9385886759493037, 1e-10);
  // Lo (2002): sqrt((1 + 0.625/2)/6) per day, x sqrt(365.25).
  cr_expect_float_eq(r.sharpe_se, sqrt(1.3125 / 6.0) * sqrt(365.25), 1e-12);
  cr_expect_eq(r.dsr, r.psr0, "one trial: no deflation");
  cr_expect_eq(r.dsr_threshold, 0.0);
}

Test(report, dsr_deflates_with_trials) {
  Report r;
  normal_moments_case(&r, 10);
  cr_expect_float_eq(r.dsr_threshold, sqrt(1.3125 / 5.0) * 1.5745983013457501, 1e-9);
  cr_expect_float_eq(r.dsr, 0.4874095567743113, 1e-9);
  const int64_t trials[] = {1, 2, 10, 100, 1000, 100000};
  double previous = 2.0;
  for (size_t k = 0; k < sizeof trials / sizeof trials[0]; k++) {
    normal_moments_case(&r, trials[k]);
    cr_expect_lt(r.dsr, previous, "dsr(%lld trials) = %.17g must fall below %.17g", (long long)trials[k], r.dsr,
                 previous);
    previous = r.dsr;
  }
  cr_expect_lt(previous, 0.01, "100,000 trials: a Sharpe of 0.79 over 6 bars is noise (dsr %g)", previous);
}

// --- the standard normal -----------------------------------------------------------------------------

static const double ppf_scipy[][2] = {
    // {p, scipy.stats.norm.ppf(p)}, scipy 1.17.1
    {2.2250738585072014e-308, -37.519379347144501},  // DBL_MIN, the smallest normal p
    {1e-305, -37.356346093067103},
    {1e-300, -37.047096299361201},
    {9.9999999999999998e-201, -30.205594179579641},
    {1e-100, -21.273453560965322},
    {1e-50, -14.933337534788487},
    {9.9999999999999995e-21, -9.2623400897984087},
    {1e-10, -6.3613409024040557},
    {1.0000000000000001e-05, -4.2648907939228247},
    {0.001, -3.0902323061678132},
    {0.02, -2.053748910631823},
    {0.024250000000000001, -1.9729610513118849},
    {0.10000000000000001, -1.2815515655446004},
    {0.25, -0.67448975019608171},
    {0.29999999999999999, -0.52440051270804089},
    {0.49999999999900002, -2.5065728237018607e-12},
    {0.5, 0},
    {0.50000000000099998, 2.5065728237018607e-12},
    {0.59999999999999998, 0.25334710313579972},
    {0.75, 0.67448975019608171},
    {0.90000000000000002, 1.2815515655446004},
    {0.97499999999999998, 1.959963984540054},
    {0.98999999999999999, 2.3263478740408408},
    {0.99999000000000005, 4.2648907939238407},
    {0.99999999989999999, 6.3613408896974217},
};

static const double cdf_scipy[][2] = {
    // {x, scipy.stats.norm.cdf(x)}
    {-37, 5.7255712225239266e-300},
    {-20, 2.7536241186061556e-89},
    {-8, 6.2209605742717405e-16},
    {-3, 0.0013498980316300933},
    {-1, 0.15865525393145707},
    {-0.5, 0.30853753872598688},
    {-1e-08, 0.49999999601057721},
    {0, 0.5},
    {0.29999999999999999, 0.61791142218895256},
    {1, 0.84134474606854293},
    {3, 0.9986501019683699},
    {8, 0.99999999999999933},
};

Test(report, norm_ppf_against_scipy) {
  for (size_t k = 0; k < sizeof ppf_scipy / sizeof ppf_scipy[0]; k++) {
    double p = ppf_scipy[k][0], want = ppf_scipy[k][1], got = norm_ppf(p);
    cr_expect(fabs(got - want) <= 1e-14 * fabs(want), "norm_ppf(%.17g) = %.17g, scipy %.17g", p, got, want);
  }
  cr_expect(isinf(norm_ppf(0.0)) && norm_ppf(0.0) < 0);
  cr_expect(isinf(norm_ppf(1.0)) && norm_ppf(1.0) > 0);
  cr_expect(isnan(norm_ppf(-0.1)) && isnan(norm_ppf(1.5)) && isnan(norm_ppf(NAN)));
}

Test(report, norm_cdf_against_scipy) {
  for (size_t k = 0; k < sizeof cdf_scipy / sizeof cdf_scipy[0]; k++) {
    double x = cdf_scipy[k][0], want = cdf_scipy[k][1], got = norm_cdf(x);
    // The tail is conditioned like the round trip below: x/sqrt(2) is rounded before erfc (by scipy too),
    // which moves Phi by a relative x^2 2^-53: at x = -37 both are ~1e-13 from the exact 5.72557122252457682e-300
    // (mpmath), ours 8.8e-14 and scipy 1.1e-13. Hence 1e-15 (1 + x^2).
    cr_expect(fabs(got - want) <= 1e-15 * (1.0 + x * x) * want, "norm_cdf(%g) = %.17g, scipy %.17g", x, got, want);
  }
}

// norm_cdf(norm_ppf(p)) = p. The best a double x can do is limited by the slope of log Phi: adjacent
// doubles near x move Phi by a relative |x| phi(x)/Phi(x) ulp(x) ~ x^2 2^-52 in the lower tail (1.5e-13
// at p = 1e-300), so the tolerance is 1e-15 (1 + x^2): 1e-15 in the body, growing only in the far tails.
Test(report, norm_round_trip) {
  int checked = 0;
  for (double log10p = -300; log10p <= -0.31; log10p += 0.25) {
    double p = pow(10.0, log10p);
    for (int side = 0; side < 2; side++) {
      double q = side ? 1.0 - p : p;  // the upper tail stops at 1 - 1e-300 = 1 (ppf = inf): skip it
      if (q >= 1.0) continue;
      double x = norm_ppf(q), back = norm_cdf(x);
      cr_expect(fabs(back - q) <= 1e-15 * (1.0 + x * x) * q, "p = %.17g: ppf %.17g, cdf back %.17g (rel %.3g)", q, x,
                back, fabs(back - q) / q);
      checked++;
    }
  }
  cr_expect_gt(checked, 1200);
}

// --- the bootstrap -----------------------------------------------------------------------------------

// Hourly bars of iid normal returns (mean mu, sd sigma) drawn with common/rng from `seed`. The arrays
// are (n + 1); the caller frees equity and ts.
typedef struct {
  double *equity, *zero;
  int64_t *ts;
  ReportInput in;
} Series;

static Series series_iid(int64_t n, double mu, double sigma, uint64_t seed) {
  Series s = {.equity = malloc((size_t)(n + 1) * sizeof(double)),
              .zero = calloc((size_t)(n + 1), sizeof(double)),
              .ts = malloc((size_t)(n + 1) * sizeof(int64_t))};
  cr_assert(s.equity && s.zero && s.ts);
  Rng rng;
  rng_seed(&rng, seed);
  s.equity[0] = 1.0;
  for (int64_t i = 0; i <= n; i++) s.ts[i] = 1700000000 + 3600 * i;
  for (int64_t i = 1; i <= n; i++) s.equity[i] = s.equity[i - 1] * (1.0 + mu + sigma * rng_normal(&rng));
  s.in = (ReportInput){.n = n,
                       .ts = s.ts,
                       .equity = s.equity,
                       .position = s.zero,
                       .turnover = s.zero,
                       .notional = s.zero,
                       .cost_spread = s.zero,
                       .cost_slippage = s.zero,
                       .cost_commission = s.zero,
                       .cost_financing = s.zero};
  return s;
}

static void series_free(Series *s) {
  free(s->equity);
  free(s->zero);
  free(s->ts);
}

static Report bootstrap(const Series *s, int samples, double block_mean, uint64_t seed) {
  ReportOptions o = report_options_default();
  o.bootstrap_samples = samples;
  o.block_mean = block_mean;
  o.seed = seed;
  Report r;
  cr_assert_eq(report_compute(&r, &s->in, &o), 0, "%s", error_message());
  return r;
}

Test(report, bootstrap_is_a_function_of_the_seed) {
  Series s = series_iid(500, 2e-4, 0.01, 11);
  Report a = bootstrap(&s, 300, 0, 7), b = bootstrap(&s, 300, 0, 7), c = bootstrap(&s, 300, 0, 8);
  cr_expect_eq(a.block_mean, 8.0, "auto block: ceil(500^(1/3)) = ceil(7.94) = 8");
  cr_expect_eq(a.bootstrap_samples, 300);
  cr_expect(a.sharpe_ci_lo == b.sharpe_ci_lo && a.sharpe_ci_hi == b.sharpe_ci_hi &&
                a.total_return_ci_lo == b.total_return_ci_lo && a.total_return_ci_hi == b.total_return_ci_hi,
            "same seed, same CI");
  cr_expect(a.sharpe_ci_lo != c.sharpe_ci_lo && a.sharpe_ci_hi != c.sharpe_ci_hi &&
                a.total_return_ci_lo != c.total_return_ci_lo,
            "another seed, another CI");
  series_free(&s);
}

Test(report, bootstrap_ci_covers_the_estimate) {
  Series s = series_iid(2000, 5e-4, 0.01, 12);
  Report r = bootstrap(&s, 1000, 0, 1);
  cr_expect(r.sharpe_ci_lo < r.m.sharpe && r.m.sharpe < r.sharpe_ci_hi, "Sharpe %g not in [%g, %g]", r.m.sharpe,
            r.sharpe_ci_lo, r.sharpe_ci_hi);
  cr_expect(r.total_return_ci_lo < r.m.total_return && r.m.total_return < r.total_return_ci_hi,
            "total return %g not in [%g, %g]", r.m.total_return, r.total_return_ci_lo, r.total_return_ci_hi);
  // iid returns, block 1 (the plain bootstrap): the 95 % CI spans about 2 x 1.96 standard errors, and
  // the standard error of the Sharpe ratio is Lo's sqrt((1 + SR^2/2)/N) x sqrt(P) (report.h), an
  // independent formula. 1000 resamples put about 5 % noise on the width.
  Report iid = bootstrap(&s, 1000, 1, 2);
  double ratio = (iid.sharpe_ci_hi - iid.sharpe_ci_lo) / (2 * 1.959963984540054 * iid.sharpe_se);
  cr_expect(ratio > 0.85 && ratio < 1.15, "CI width / (3.92 SE) = %.3f", ratio);
  series_free(&s);
}

// The standard error of a Sharpe ratio falls as 1/sqrt(N): 16 times the data, a quarter of the width.
Test(report, bootstrap_width_shrinks_as_one_over_sqrt_n) {
  Series small = series_iid(500, 3e-4, 0.01, 21), large = series_iid(8000, 3e-4, 0.01, 22);
  Report a = bootstrap(&small, 500, 0, 3), b = bootstrap(&large, 500, 0, 3);
  double ratio = (a.sharpe_ci_hi - a.sharpe_ci_lo) / (b.sharpe_ci_hi - b.sharpe_ci_lo);
  cr_expect(ratio >= 2.5 && ratio <= 5.5, "width ratio N = 500 / N = 8000: %.3f (expected about 4)", ratio);
  // The total return's log, a sum of N log returns, spreads as sqrt(N): 16 times the data, 4 times the width.
  double log_width_small = log1p(a.total_return_ci_hi) - log1p(a.total_return_ci_lo);
  double log_width_large = log1p(b.total_return_ci_hi) - log1p(b.total_return_ci_lo);
  double ratio_log = log_width_large / log_width_small;
  cr_expect(ratio_log >= 2.5 && ratio_log <= 5.5,
            "log(1 + total return) width ratio N = 8000 / N = 500: %.3f (about 4)", ratio_log);
  series_free(&small);
  series_free(&large);
}

// With blocks that never end (1/block_mean = 1e-15), every resample is the series rotated by a uniform
// offset: the same returns in the same cyclic order. Its product, so its total return, is the point
// value up to the rounding of N products (~N 1e-16), and so are its mean and standard deviation.
Test(report, bootstrap_infinite_blocks_rotate_the_series) {
  Series s = series_iid(500, 2e-4, 0.01, 31);
  Report r = bootstrap(&s, 200, 1e15, 5);
  double growth = 1.0 + r.m.total_return;
  cr_expect(fabs((1.0 + r.total_return_ci_lo) - growth) <= 1e-12 * growth, "lo %.17g vs %.17g", r.total_return_ci_lo,
            r.m.total_return);
  cr_expect(fabs((1.0 + r.total_return_ci_hi) - growth) <= 1e-12 * growth, "hi %.17g vs %.17g", r.total_return_ci_hi,
            r.m.total_return);
  cr_expect(fabs(r.sharpe_ci_lo - r.m.sharpe) <= 1e-10 * fabs(r.m.sharpe), "Sharpe lo %.17g vs %.17g", r.sharpe_ci_lo,
            r.m.sharpe);
  cr_expect(fabs(r.sharpe_ci_hi - r.m.sharpe) <= 1e-10 * fabs(r.m.sharpe), "Sharpe hi %.17g vs %.17g", r.sharpe_ci_hi,
            r.m.sharpe);
  // The same series with short blocks is really resampled: the CI opens up (so the test above can fail).
  Report short_blocks = bootstrap(&s, 200, 2, 5);
  cr_expect_gt(short_blocks.total_return_ci_hi - short_blocks.total_return_ci_lo, 0.05);
  series_free(&s);
}

// The resamples' Sharpe ratios are the report's Sharpe (TRADING_ENV.md: mean(r - rf/P) / std(r; ddof
// 1) sqrt(P)) with the per-bar risk-free rate rf/P. Daily bars (P = 365.25), rf = 5 % a year, blocks
// that never end: every resample is a rotation of r, so both CI bounds are that Sharpe, computed here
// from the returns in two passes.
Test(report, bootstrap_sharpe_takes_the_risk_free_rate_per_bar) {
  Series s = series_iid(400, 3e-4, 0.01, 41);
  for (int64_t i = 0; i <= 400; i++) s.ts[i] = 1700006400 + i * DAY;
  ReportOptions o = report_options_default();
  o.rf = 0.05;
  o.bootstrap_samples = 50;
  o.block_mean = 1e15;
  o.seed = 3;
  Report r;
  cr_assert_eq(report_compute(&r, &s.in, &o), 0, "%s", error_message());
  const double P = 365.25;
  double mean = 0, ss = 0;
  for (int64_t i = 1; i <= 400; i++) mean += (s.equity[i] / s.equity[i - 1] - 1.0) / 400;
  for (int64_t i = 1; i <= 400; i++) ss += pow(s.equity[i] / s.equity[i - 1] - 1.0 - mean, 2);
  const double sharpe = (mean - o.rf / P) / sqrt(ss / 399) * sqrt(P);
  cr_expect(fabs(r.sharpe_ci_lo - sharpe) <= 1e-9 * fabs(sharpe), "Sharpe lo %.17g vs %.17g", r.sharpe_ci_lo, sharpe);
  cr_expect(fabs(r.sharpe_ci_hi - sharpe) <= 1e-9 * fabs(sharpe), "Sharpe hi %.17g vs %.17g", r.sharpe_ci_hi, sharpe);
  cr_expect(fabs(r.m.sharpe - sharpe) <= 1e-9 * fabs(sharpe), "point Sharpe %.17g vs %.17g", r.m.sharpe, sharpe);
  series_free(&s);
}
// Replays the documented procedure with common/rng to pin the exact draws and the quantile rule: N = 3
// returns, block_mean 2 (each later draw starts a new block when uniform < 1/2, else takes the next
// return, wrapping), B = 5 resamples, then numpy's linear quantile over the 5 sorted values: h = 4 x
// 0.025 = 0.1 and 4 x 0.975 = 3.9, so lo = s0 + 0.1 (s1 - s0) and hi = s3 + 0.9 (s4 - s3). A change of
// the draw order changes every CI for a given seed: this test makes that a deliberate change.
Test(report, bootstrap_replays_the_documented_draws) {
  const double e[] = {1.0, 1.05, 0.98, 1.01};
  const int64_t ts[] = {0, DAY, 2 * DAY, 3 * DAY};
  const double zero[4] = {0};
  ReportInput in = curve_input(3, ts, e, zero);
  ReportOptions o = report_options_default();
  o.bootstrap_samples = 5;
  o.block_mean = 2;
  o.seed = 12345;
  Report r;
  cr_assert_eq(report_compute(&r, &in, &o), 0, "%s", error_message());
  const double ret[3] = {e[1] / e[0] - 1, e[2] / e[1] - 1, e[3] / e[2] - 1}, P = 365.25;
  double total[5], sharpe[5];
  Rng rng;
  rng_seed(&rng, 12345);
  for (int b = 0; b < 5; b++) {
    double x[3], growth = 1, mean = 0, ss = 0;
    int at = 0;
    for (int k = 0; k < 3; k++) {
      if (k == 0 || rng_uniform(&rng) < 0.5)
        at = (int)rng_below(&rng, 3);
      else
        at = (at + 1) % 3;
      x[k] = ret[at];
      growth *= 1 + x[k];
      mean += x[k] / 3;
    }
    for (int k = 0; k < 3; k++) ss += (x[k] - mean) * (x[k] - mean);
    total[b] = growth - 1;
    sharpe[b] = mean / sqrt(ss / 2) * sqrt(P);
  }
  for (int pass = 0; pass < 2; pass++) {  // insertion sort, each array on its own
    double *v = pass ? sharpe : total;
    for (int i = 1; i < 5; i++)
      for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
        double t = v[j];
        v[j] = v[j - 1];
        v[j - 1] = t;
      }
  }
  cr_expect(total[0] < total[4], "the 5 resamples are not all alike (else this test checks nothing)");
  cr_expect_float_eq(r.total_return_ci_lo, total[0] + 0.1 * (total[1] - total[0]), 1e-15);
  cr_expect_float_eq(r.total_return_ci_hi, total[3] + 0.9 * (total[4] - total[3]), 1e-15);
  cr_expect_float_eq(r.sharpe_ci_lo, sharpe[0] + 0.1 * (sharpe[1] - sharpe[0]), 1e-12 * fabs(sharpe[0]) + 1e-12);
  // This seed draws r_3 three times in one resample: sd 0, Sharpe +inf (as metrics_compute gives for a
  // constant positive return), so the upper bound is +inf, the interpolation's limit (numpy: NaN).
  cr_expect(isinf(sharpe[4]) && sharpe[4] > 0, "seed 12345 no longer has the degenerate resample: %g", sharpe[4]);
  cr_expect(isinf(r.sharpe_ci_hi) && r.sharpe_ci_hi > 0, "sharpe_ci_hi = %g", r.sharpe_ci_hi);
}

// --- errors ------------------------------------------------------------------------------------------

Test(report, errors_name_the_problem) {
  Series s = series_iid(10, 0, 0.01, 41);
  ReportOptions o = report_options_default();
  Report r;
  ReportInput in = s.in;
  in.n = 0;
  error_clear();
  cr_expect_eq(report_compute(&r, &in, &o), -1);
  cr_expect_not_null(strstr(error_message(), "n = 0"), "%s", error_message());
  in.n = -3;
  cr_expect_eq(report_compute(&r, &in, &o), -1);
  cr_expect_not_null(strstr(error_message(), "n = -3"), "%s", error_message());
  in = s.in;
  in.equity = NULL;
  cr_expect_eq(report_compute(&r, &in, &o), -1);
  cr_expect_not_null(strstr(error_message(), "equity"), "%s", error_message());
  in = s.in;
  in.n_trades = 2;  // and no ledger
  cr_expect_eq(report_compute(&r, &in, &o), -1);
  cr_expect_not_null(strstr(error_message(), "n_trades"), "%s", error_message());
  in = s.in;
  o.n_trials = 0;
  cr_expect_eq(report_compute(&r, &in, &o), -1);
  cr_expect_not_null(strstr(error_message(), "n_trials"), "%s", error_message());
  o = report_options_default();
  o.block_mean = 0.5;
  cr_expect_eq(report_compute(&r, &in, &o), -1);
  cr_expect_not_null(strstr(error_message(), "block_mean"), "%s", error_message());
  cr_expect_eq(report_compute(&r, &in, NULL), -1);
  o = report_options_default();
  cr_expect_eq(report_compute(&r, &in, &o), 0, "%s", error_message());
  series_free(&s);
}

Test(report, options_default) {
  ReportOptions o = report_options_default();
  cr_expect(o.rf == 0 && o.mar == 0 && o.n_trials == 1 && o.bootstrap_samples == 1000 && o.block_mean == 0 &&
            o.seed == 1);
}
