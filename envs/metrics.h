// envs/metrics.h: performance metrics of an equity curve (TRADING_ENV.md section 9) and the
// Moody-Saffell differential Sharpe / downside-deviation ratios used as rewards (section 6).
//
// An evaluation of N steps has equity E_0..E_N (net of every cost, the forced final close included)
// at timestamps ts_0..ts_N. Simple returns r_i = E_i/E_{i-1} - 1, i = 1..N. Y = (ts_N - ts_0) /
// 365.25 days; P = N / Y periods per year (measured, never a hard-coded 252). Formulas:
//   total_return = E_N/E_0 - 1; cagr = (E_N/E_0)^(1/Y) - 1
//   ann_vol = std(r; ddof 1) sqrt(P); sharpe = mean(r - rf/P) / std(r; ddof 1) sqrt(P)
//   sortino = mean(r - mar/P) / DD sqrt(P), DD = sqrt((1/N) sum min(0, r_i - mar/P)^2)
//   max_drawdown = max_i (1 - E_i / max_{j<=i} E_j); underwater_bars = longest run of i with E_i below
//   the running peak; calmar = cagr / max_drawdown (NaN when max_drawdown = 0)
// NaN where a formula is undefined (N < 2 for std, Y = 0 for annualising).
// Depends on nothing but libm.
#ifndef PPO_ENVS_METRICS_H
#define PPO_ENVS_METRICS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
  int64_t n;                // N steps
  double years;             // Y
  double periods_per_year;  // P
  double total_return, cagr, ann_vol;
  double sharpe, sharpe_per_bar;  // annualised, and per period (not annualised)
  double sortino, max_drawdown, calmar;
  int64_t underwater_bars;  // longest drawdown duration in bars
} Metrics;

// equity (N+1), ts (N+1) seconds; rf and mar are annual rates (0 for the defaults). A ruined pass
// (metrics_ruined) has NaN for cagr, ann_vol, sharpe, sharpe_per_bar, sortino and calmar.
void metrics_compute(Metrics *out, const double *equity, const int64_t *ts, int64_t n, double rf, double mar);
// Whether equity[0..n] reaches 0 or below: ruin, past which per-bar returns mean nothing.
bool metrics_ruined(const double *equity, int64_t n);

// Differential Sharpe ratio (Moody and Saffell 2001). State: EMAs A of R and B of R^2.
// dsr_step returns D_t = (B dA - A dB / 2) / (B - A^2)^(3/2) with dA = R - A, dB = R^2 - B (old A, B),
// then updates A += eta dA, B += eta dB. While B - A^2 < DSR_EPS (no variance yet) it returns
// R / fallback_sigma (0 when fallback_sigma is not > 0). The result is clipped to +-DSR_CLIP.
// d3r_step is the downside version with D2 = EMA of min(R, 0)^2:
//   R > 0: (R - A/2) / sqrt(D2);  else (D2 (R - A/2) - A R^2 / 2) / D2^(3/2); guard D2 < DSR_EPS.
#define DSR_EPS 1e-14
#define DSR_CLIP 10.0
typedef struct {
  double a, b;  // EMA of R; EMA of R^2 (DSR) or of min(R, 0)^2 (D3R)
} DsrState;
double dsr_step(DsrState *state, double r, double eta, double fallback_sigma);
double d3r_step(DsrState *state, double r, double eta, double fallback_sigma);

#endif
