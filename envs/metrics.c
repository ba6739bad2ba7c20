// envs/metrics.c: equity-curve metrics and the differential Sharpe rewards (see metrics.h).
#include "envs/metrics.h"

#include <math.h>

#define SECONDS_PER_YEAR (365.25 * 86400.0)

void metrics_compute(Metrics *out, const double *equity, const int64_t *ts, int64_t n, double rf, double mar) {
  Metrics m = {.n = n};
  m.years = n >= 1 ? (double)(ts[n] - ts[0]) / SECONDS_PER_YEAR : 0.0;
  m.periods_per_year = m.years > 0 ? (double)n / m.years : NAN;
  double growth = equity[n] / equity[0];
  m.total_return = growth - 1.0;
  m.cagr = m.years > 0 ? pow(growth, 1.0 / m.years) - 1.0 : NAN;
  const double P = m.periods_per_year;
  const double rf_bar = isnan(P) ? 0.0 : rf / P, mar_bar = isnan(P) ? 0.0 : mar / P;
  double sum = 0.0, down_sq = 0.0;
  for (int64_t i = 1; i <= n; i++) {
    double r = equity[i] / equity[i - 1] - 1.0;
    sum += r;
    double d = r - mar_bar < 0 ? r - mar_bar : 0.0;
    down_sq += d * d;
  }
  double mean = n > 0 ? sum / (double)n : NAN, ss = 0.0;
  for (int64_t i = 1; i <= n; i++) {
    double r = equity[i] / equity[i - 1] - 1.0;
    ss += (r - mean) * (r - mean);
  }
  double sd = n >= 2 ? sqrt(ss / (double)(n - 1)) : NAN;
  m.ann_vol = sd * sqrt(P);
  m.sharpe_per_bar = (mean - rf_bar) / sd;
  m.sharpe = m.sharpe_per_bar * sqrt(P);
  double dd = n > 0 ? sqrt(down_sq / (double)n) : NAN;
  m.sortino = (mean - mar_bar) / dd * sqrt(P);
  double peak = equity[0];
  int64_t run = 0;
  bool ruined = false;
  for (int64_t i = 0; i <= n; i++) {
    ruined |= !(equity[i] > 0);  // metrics_ruined's test, in the walk the drawdown makes anyway
    if (equity[i] >= peak) {
      peak = equity[i];
      run = 0;
    } else {
      run++;
      if (run > m.underwater_bars) m.underwater_bars = run;
    }
    double drawdown = 1.0 - equity[i] / peak;
    if (drawdown > m.max_drawdown) m.max_drawdown = drawdown;
  }
  m.calmar = m.max_drawdown > 0 ? m.cagr / m.max_drawdown : NAN;
  // Ruin: an equity of 0 or below (a leveraged bar that jumps past the max_loss stop). The returns
  // after it divide by a non-positive equity, so no ratio over them means anything (a pass that
  // rose 25x, then lost 5x its equity in one bar, scored a Sharpe of 1.13 and became best.h5).
  // Total return and drawdown keep the accounting; the ratios are undefined, and [eval] ranks an
  // undefined metric below every other (ppo/evaluate.c).
  if (ruined) m.cagr = m.ann_vol = m.sharpe = m.sharpe_per_bar = m.sortino = m.calmar = NAN;
  *out = m;
}

bool metrics_ruined(const double *equity, int64_t n) {
  for (int64_t i = 0; i <= n; i++)
    if (!(equity[i] > 0)) return true;
  return false;
}

static double clip_dsr(double x) { return x > DSR_CLIP ? DSR_CLIP : x < -DSR_CLIP ? -DSR_CLIP : x; }

double dsr_step(DsrState *s, double r, double eta, double fallback_sigma) {
  double da = r - s->a, db = r * r - s->b;
  double variance = s->b - s->a * s->a;
  double d;
  if (variance < DSR_EPS)
    d = fallback_sigma > 0 ? r / fallback_sigma : 0.0;
  else
    d = (s->b * da - 0.5 * s->a * db) / (variance * sqrt(variance));
  s->a += eta * da;
  s->b += eta * db;
  return clip_dsr(d);
}

double d3r_step(DsrState *s, double r, double eta, double fallback_sigma) {
  double d;
  if (s->b < DSR_EPS)
    d = fallback_sigma > 0 ? r / fallback_sigma : 0.0;
  else if (r > 0)
    d = (r - 0.5 * s->a) / sqrt(s->b);
  else
    d = (s->b * (r - 0.5 * s->a) - 0.5 * s->a * r * r) / (s->b * sqrt(s->b));
  double down = r < 0 ? r : 0.0;
  s->a += eta * (r - s->a);
  s->b += eta * (down * down - s->b);
  return clip_dsr(d);
}
