// envs/report.c: the section-9 backtest report (see report.h for every definition).
//
// Legend: N steps, r_i = E_i/E_{i-1} - 1 (i = 1..N), P periods per year, B bootstrap resamples.
// Everything is computed in double, in one pass per concern (a static helper each): metrics.h for
// the equity curve, then positions, trades, costs, the moments of r and the Sharpe-uncertainty
// numbers that follow from them, then the bootstrap. The only allocation is the bootstrap's 2 B
// doubles (one Sharpe and one total return per resample), freed before return.
#include "envs/report.h"

#include <math.h>
#include <stdlib.h>

#include "common/check.h"
#include "common/error.h"
#include "common/rng.h"

#define SECONDS_PER_DAY 86400.0
#define EULER_GAMMA 0.5772156649015329  // Euler-Mascheroni, for the expected maximum of n Sharpes
#define SQRT_2PI 2.5066282746310002
#define SQRT_HALF 0.70710678118654752  // 1/sqrt(2) and e: M_SQRT1_2 and M_E are POSIX, not ISO C11
#define EULER_E 2.7182818284590452
#define CI_LO 0.025
#define CI_HI 0.975

ReportOptions report_options_default(void) {
  return (ReportOptions){.rf = 0, .mar = 0, .n_trials = 1, .bootstrap_samples = 1000, .block_mean = 0, .seed = 1};
}

// --- the standard normal ---------------------------------------------------------------------------

double norm_cdf(double x) {
  // scipy's ndtr (cephes): erf near 0, where 0.5 + 0.5 erf keeps the absolute accuracy, and erfc in
  // the tails, where it keeps the relative accuracy of the small side.
  double z = x * SQRT_HALF;
  if (fabs(z) < SQRT_HALF) return 0.5 + 0.5 * erf(z);
  double tail = 0.5 * erfc(fabs(z));
  return z > 0 ? 1.0 - tail : tail;
}

// Acklam's rational approximation of the lower half (relative error < 1.15e-9), then one Halley step
// on f(x) = Phi(x) - p (cubic convergence: 1e-9 -> below rounding). The residual is formed so that it
// keeps its relative accuracy: 0.5 erf(x/sqrt 2) - (p - 0.5) in the centre (p - 0.5 is exact for
// p >= 0.25, Sterbenz), 0.5 erfc(-x/sqrt 2) - p below.
static double norm_ppf_lower(double p) {  // 0 < p <= 0.5
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02,  -2.759285104469687e+02,
                             1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  double x, residual;
  if (p >= 0.02425) {
    double q = p - 0.5, r = q * q;
    x = (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
    residual = p >= 0.25 ? 0.5 * erf(x * SQRT_HALF) - q : 0.5 * erfc(-x * SQRT_HALF) - p;
  } else {
    double q = sqrt(-2.0 * log(p));
    x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
        ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
    residual = 0.5 * erfc(-x * SQRT_HALF) - p;
  }
  // Halley: u = f/f' with f' = phi(x); x -= u / (1 + x u / 2). exp(x^2/2) is taken as h h, h = exp(x^2/4),
  // so that it stays finite down to the smallest subnormal p (|x| < 38.5); the residual is tiny there.
  double h = exp(0.25 * x * x);
  double u = residual * SQRT_2PI * h * h;
  x -= u / (1.0 + 0.5 * x * u);
  return x;
}

double norm_ppf(double p) {
  if (!(p >= 0.0 && p <= 1.0)) return NAN;
  if (p == 0.0) return -INFINITY;
  if (p == 1.0) return INFINITY;
  // Upper half by symmetry: 1 - p is exact for p > 0.5 (Sterbenz), so the upper tail is as accurate
  // as the lower one (scipy's ndtri does the same).
  return p > 0.5 ? -norm_ppf_lower(1.0 - p) : norm_ppf_lower(p);
}

// --- the pieces of the report ----------------------------------------------------------------------

static double step_return(const double *equity, int64_t i) { return equity[i] / equity[i - 1] - 1.0; }

// underwater_days: the drawdown metrics_compute reports as underwater_bars (the longest run of E_i
// below the running peak, the first among equally long ones), measured in time from its peak to its
// recovery, or to ts_N when it never recovers.
static double underwater_days(const double *equity, const int64_t *ts, int64_t n) {
  double peak = equity[0];
  int64_t peak_at = 0, longest = 0, longest_peak_at = 0;
  for (int64_t i = 1; i <= n; i++) {
    if (equity[i] >= peak) {
      peak = equity[i];
      peak_at = i;
    } else if (i - peak_at > longest) {  // i - peak_at: bars under water so far in this drawdown
      longest = i - peak_at;
      longest_peak_at = peak_at;
    }
  }
  if (longest == 0) return 0.0;
  // The longest drawdown is under water exactly over peak+1 .. peak+longest (it is the longest), so it
  // recovers at peak+longest+1, or is still under water at N.
  int64_t end_at = longest_peak_at + longest < n ? longest_peak_at + longest + 1 : n;
  return (double)(ts[end_at] - ts[longest_peak_at]) / SECONDS_PER_DAY;
}

static void report_positions(Report *out, const ReportInput *in) {
  const int64_t n = in->n;
  double turnover = 0, notional = 0, equity_sum = 0, abs_position = 0;
  int64_t in_market = 0, in_market_up = 0, longs = 0, shorts = 0;
  for (int64_t i = 0; i <= n; i++) equity_sum += in->equity[i];
  for (int64_t i = 1; i <= n; i++) {
    double w = in->position[i];
    turnover += in->turnover[i];
    notional += in->notional[i];
    abs_position += fabs(w);
    if (w != 0) {
      in_market++;
      if (in->equity[i] > in->equity[i - 1]) in_market_up++;
    }
    longs += w > 0;
    shorts += w < 0;
  }
  out->turnover_per_bar = turnover / (double)n;
  out->turnover_annual = out->turnover_per_bar * out->m.periods_per_year;
  out->notional_turnover = notional / (equity_sum / (double)(n + 1));
  out->exposure = (double)in_market / (double)n;
  out->mean_abs_position = abs_position / (double)n;
  out->long_share = (double)longs / (double)n;
  out->short_share = (double)shorts / (double)n;
  out->bar_hit_rate = in_market > 0 ? (double)in_market_up / (double)in_market : NAN;
}

static void report_trades(Report *out, const ReportInput *in) {
  const int64_t count = in->n_trades;
  double bars = 0, win_sum = 0, loss_sum = 0;
  int64_t wins = 0, losses = 0;
  for (int64_t k = 0; k < count; k++) {
    const ReportTrade *t = &in->trades[k];
    bars += (double)t->bars;
    if (t->net_pnl > 0) {
      wins++;
      win_sum += t->net_pnl;
    } else if (t->net_pnl < 0) {
      losses++;
      loss_sum += t->net_pnl;
    }
  }
  out->n_trades = count;
  out->mean_hold_bars = count > 0 ? bars / (double)count : NAN;
  out->trades_per_year = out->m.years > 0 ? (double)count / out->m.years : NAN;
  out->hit_rate = count > 0 ? (double)wins / (double)count : NAN;
  out->payoff_ratio = wins > 0 && losses > 0 ? (win_sum / (double)wins) / fabs(loss_sum / (double)losses) : NAN;
  if (losses > 0)
    out->profit_factor = win_sum / fabs(loss_sum);  // 0 with losses only
  else
    out->profit_factor = wins > 0 ? INFINITY : NAN;
}

static void report_costs(Report *out, const ReportInput *in) {
  const int64_t n = in->n;
  double spread = 0, slippage = 0, commission = 0, financing = 0;
  for (int64_t i = 1; i <= n; i++) {
    spread += in->cost_spread[i];
    slippage += in->cost_slippage[i];
    commission += in->cost_commission[i];
    financing += in->cost_financing[i];
  }
  const double e0 = in->equity[0];
  out->cost_spread = spread;
  out->cost_slippage = slippage;
  out->cost_commission = commission;
  out->cost_financing = financing;
  out->cost_total = spread + slippage + commission + financing;
  out->cost_spread_pct = 100.0 * spread / e0;
  out->cost_slippage_pct = 100.0 * slippage / e0;
  out->cost_commission_pct = 100.0 * commission / e0;
  out->cost_financing_pct = 100.0 * financing / e0;
  out->cost_total_pct = 100.0 * out->cost_total / e0;
  out->cost_bp_per_trade = in->n_trades > 0 ? 1e4 * out->cost_total / e0 / (double)in->n_trades : NAN;
  out->net_return = out->m.total_return;
  // The costs are added back to the final equity, not re-compounded: what the costs took, in E_0 units.
  out->gross_return = (in->equity[n] + out->cost_total) / e0 - 1.0;
}

// Population skewness g3 = m3 / m2^1.5 and kurtosis g4 = m4 / m2^2 (not excess) of r, two-pass about
// the mean (scipy.stats.skew / kurtosis with bias=True, fisher=False).
static void report_moments(Report *out, const double *equity, int64_t n) {
  double sum = 0;
  for (int64_t i = 1; i <= n; i++) sum += step_return(equity, i);
  const double mean = sum / (double)n;
  double m2 = 0, m3 = 0, m4 = 0;
  for (int64_t i = 1; i <= n; i++) {
    double d = step_return(equity, i) - mean, d2 = d * d;
    m2 += d2;
    m3 += d2 * d;
    m4 += d2 * d2;
  }
  m2 /= (double)n;
  m3 /= (double)n;
  m4 /= (double)n;
  out->skewness = m3 / (m2 * sqrt(m2));  // NaN for a constant series (0/0)
  out->kurtosis = m4 / (m2 * m2);
}

// The variance factor of the Sharpe estimator under non-normal returns (Mertens 2002, as used by
// Bailey and Lopez de Prado): Var(SR_p) ~ (1 - g3 SR + (g4 - 1)/4 SR^2) / (N - 1).
static double sharpe_variance_factor(const Report *r) {
  const double sr = r->m.sharpe_per_bar;
  return 1.0 - r->skewness * sr + 0.25 * (r->kurtosis - 1.0) * sr * sr;
}

// PSR(SR*) = Phi((SR_p - SR*) sqrt(N - 1) / sqrt(factor)) (Bailey and Lopez de Prado 2012).
static double probabilistic_sharpe(const Report *r, double threshold) {
  const double factor = sharpe_variance_factor(r);
  if (!(factor > 0)) return NAN;  // >= 0 always (g4 >= 1 + g3^2); 0 only for degenerate series
  return norm_cdf((r->m.sharpe_per_bar - threshold) * sqrt((double)(r->m.n - 1)) / sqrt(factor));
}

// Deflated Sharpe (Bailey and Lopez de Prado 2014): the threshold is the expected maximum of n
// Sharpe estimates under the null, sqrt(V) ((1 - gamma) Phi^-1(1 - 1/n) + gamma Phi^-1(1 - 1/(n e))),
// with V the estimator's own variance (report.h says why). n = 1: no selection, SR* = 0.
static void report_sharpe_uncertainty(Report *out, int64_t n_trials) {
  const double sr = out->m.sharpe_per_bar, n = (double)out->m.n;
  // Lo (2002), iid returns: SE(SR_p) = sqrt((1 + SR_p^2/2) / N); annualised like the Sharpe itself.
  out->sharpe_se = sqrt((1.0 + 0.5 * sr * sr) / n) * sqrt(out->m.periods_per_year);
  out->psr0 = probabilistic_sharpe(out, 0.0);
  double threshold = 0.0;
  if (n_trials > 1) {
    const double trials = (double)n_trials, variance = sharpe_variance_factor(out) / (n - 1.0);
    threshold = sqrt(variance) * ((1.0 - EULER_GAMMA) * norm_ppf(1.0 - 1.0 / trials) +
                                  EULER_GAMMA * norm_ppf(1.0 - 1.0 / (trials * EULER_E)));
  }
  out->dsr_threshold = threshold;
  out->dsr = probabilistic_sharpe(out, threshold);
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// numpy.quantile's default (method 'linear', type 7 of Hyndman and Fan): h = (B - 1) q, between the
// order statistics floor(h) and floor(h) + 1, with numpy's own two-sided lerp. `sorted` is ascending.
static double quantile_sorted(const double *sorted, int count, double q) {
  double h = (double)(count - 1) * q;
  int lo = (int)floor(h);
  if (lo >= count - 1) return sorted[count - 1];
  double t = h - lo, a = sorted[lo], b = sorted[lo + 1], diff = b - a;
  // An infinite neighbour (a resample whose returns are all equal has Sharpe +-inf) is the limit of
  // the interpolation; numpy's lerp would give inf - inf = NaN there.
  if (isinf(a) || isinf(b)) return t == 0 ? a : isinf(a) ? a : b;
  return t >= 0.5 ? b - diff * (1.0 - t) : a + diff * t;
}

// The 2.5 % and 97.5 % quantiles of `values` (sorted in place); NaN when any value is NaN, as numpy.
static void sorted_interval(double *values, int count, double *lo, double *hi) {
  for (int k = 0; k < count; k++) {
    if (isnan(values[k])) {
      *lo = *hi = NAN;
      return;
    }
  }
  qsort(values, (size_t)count, sizeof *values, compare_double);
  *lo = quantile_sorted(values, count, CI_LO);
  *hi = quantile_sorted(values, count, CI_HI);
}

// Stationary bootstrap (Politis and Romano 1994): each resample of length N starts at a uniform index;
// every later draw starts a new block (uniform index) with probability 1/block_mean and otherwise
// continues with the next return, wrapping from r_N to r_1 (block_mean 1: every draw is a new block, the
// plain iid bootstrap; a huge block_mean: one block, a rotation of r). Block lengths are geometric with mean
// block_mean, so the resample is stationary and keeps the short-range dependence of r. Per resample:
// its annualised Sharpe (Welford mean and variance, ddof 1) and its total return prod(1 + r) - 1.
static void report_bootstrap(Report *out, const double *equity, int64_t n, double rf, int samples, double block_mean,
                             uint64_t seed) {
  out->sharpe_ci_lo = out->sharpe_ci_hi = out->total_return_ci_lo = out->total_return_ci_hi = NAN;
  if (samples <= 0 || n < 2 || metrics_ruined(equity, n)) return;  // ruin: resampled returns mean nothing
  double *sharpe = CHECK_ALLOC(2 * (size_t)samples * sizeof *sharpe, "bootstrap scratch (2 B doubles)");
  double *total = sharpe + samples;
  const double P = out->m.periods_per_year, rf_bar = isnan(P) ? 0.0 : rf / P, new_block = 1.0 / block_mean;
  Rng rng;
  rng_seed(&rng, seed);
  for (int b = 0; b < samples; b++) {
    int64_t at = 0;  // index of r in 0..N-1 (r_{at+1})
    double mean = 0, m2 = 0, growth = 1;
    for (int64_t k = 0; k < n; k++) {
      if (k == 0 || rng_uniform(&rng) < new_block)
        at = (int64_t)rng_below(&rng, (uint64_t)n);
      else
        at = at + 1 < n ? at + 1 : 0;
      double r = step_return(equity, at + 1), delta = r - mean;
      mean += delta / (double)(k + 1);
      m2 += delta * (r - mean);
      growth *= 1.0 + r;
    }
    sharpe[b] = (mean - rf_bar) / sqrt(m2 / (double)(n - 1)) * sqrt(P);
    total[b] = growth - 1.0;
  }
  sorted_interval(sharpe, samples, &out->sharpe_ci_lo, &out->sharpe_ci_hi);
  sorted_interval(total, samples, &out->total_return_ci_lo, &out->total_return_ci_hi);
  free(sharpe);
}

// --- the report ------------------------------------------------------------------------------------

static int report_check(const ReportInput *in, const ReportOptions *o) {
  if (!in || !o) {
    error_set("report: %s is NULL", in ? "options" : "input");
    return -1;
  }
  if (in->n < 1) {
    error_set("report: n = %lld steps: must be >= 1 (an evaluation pass of at least one step)", (long long)in->n);
    return -1;
  }
  const void *arrays[] = {in->ts,          in->equity,        in->position,        in->turnover,      in->notional,
                          in->cost_spread, in->cost_slippage, in->cost_commission, in->cost_financing};
  static const char *names[] = {"ts",          "equity",        "position",        "turnover",      "notional",
                                "cost_spread", "cost_slippage", "cost_commission", "cost_financing"};
  for (size_t k = 0; k < sizeof arrays / sizeof arrays[0]; k++) {
    if (!arrays[k]) {
      error_set("report: the %s array is NULL (every per-step array has N + 1 = %lld entries)", names[k],
                (long long)(in->n + 1));
      return -1;
    }
  }
  if (in->n_trades < 0 || (in->n_trades > 0 && !in->trades)) {
    error_set("report: n_trades = %lld with trades %s: need n_trades >= 0 and a ledger when > 0",
              (long long)in->n_trades, in->trades ? "set" : "NULL");
    return -1;
  }
  if (o->n_trials < 1) {
    error_set("report: n_trials = %lld: must be >= 1 (configurations tried, this one included)",
              (long long)o->n_trials);
    return -1;
  }
  if (o->bootstrap_samples < 0 || !(o->block_mean == 0 || o->block_mean >= 1)) {
    error_set(
        "report: bootstrap_samples = %d, block_mean = %g: need samples >= 0 (0 = none) and block_mean "
        "0 (auto) or >= 1",
        o->bootstrap_samples, o->block_mean);
    return -1;
  }
  return 0;
}

int report_compute(Report *out, const ReportInput *in, const ReportOptions *options) {
  if (report_check(in, options) != 0) return -1;
  const int64_t n = in->n;
  Report r = {0};
  metrics_compute(&r.m, in->equity, in->ts, n, options->rf, options->mar);
  r.underwater_days = underwater_days(in->equity, in->ts, n);
  report_positions(&r, in);
  report_trades(&r, in);
  report_costs(&r, in);
  report_moments(&r, in->equity, n);
  report_sharpe_uncertainty(&r, options->n_trials);
  // Auto block: N^(1/3) is the MSE-optimal growth rate of the block length for variance-type targets
  // (Hall, Horowitz and Jing 1995; Politis and White 2004 estimate the constant, taken as 1 here).
  r.block_mean = options->block_mean > 0 ? options->block_mean : ceil(cbrt((double)n));
  r.bootstrap_samples = options->bootstrap_samples;
  report_bootstrap(&r, in->equity, n, options->rf, options->bootstrap_samples, r.block_mean, options->seed);
  *out = r;
  return 0;
}
