// envs/report.h: the backtest report of one evaluation pass: every metric of TRADING_ENV.md
// section 9, computed from the pass's per-step record and its trade ledger (ppo/backtest.c builds
// both from the env's own fill fields; ppo-eval writes them out).
//
// Legend: N steps; step i = 1..N moves the env from decision bar t_{i-1} to t_i. Point i = 0 is the
// start (E_0, no step). Arrays of a ReportInput have N + 1 entries; entry 0 of the per-step ones is
// unused (0). Y = (ts_N - ts_0) / 365.25 days, P = N / Y (envs/metrics.h).
//
// Definitions beyond metrics.h (rf and mar are annual; r_i = E_i/E_{i-1} - 1):
//   turnover_per_bar   (1/N) sum_i turnover[i]; turnover_annual = turnover_per_bar P
//   notional_turnover  sum_i notional[i] / mean(E_0..E_N)   (traded notional over mean equity)
//   exposure           share of steps with position[i] != 0; mean_abs_position = (1/N) sum |position[i]|;
//                      long_share, short_share: shares of steps with position[i] > 0, < 0
//   trades             the ledger's count; mean_hold_bars = mean of bars; trades_per_year = count / Y
//   hit_rate           #{trade net_pnl > 0} / #trades (NaN when no trade)
//   bar_hit_rate       #{i: position[i] != 0 and E_i > E_{i-1}} / #{i: position[i] != 0} (NaN when never in)
//   payoff_ratio       mean(net_pnl | > 0) / |mean(net_pnl | < 0)| (NaN without a win or a loss)
//   profit_factor      sum(net_pnl > 0) / |sum(net_pnl < 0)| (INFINITY with wins and no loss, NaN with neither)
//   costs              sums of the four cost arrays; *_pct = 100 sum / E_0; *_bp_per_trade = 1e4 sum / E_0 /
//                      #trades (NaN without trades); cost_total = the four together
//   net_return         = total_return; gross_return = (E_N + cost_total)/E_0 - 1 (costs added back,
//                      no compounding of the saved costs)
//   sharpe_se          Lo (2002): sqrt((1 + SR_p^2 / 2) / N) per period, annualised x sqrt(P) (SR_p = the
//                      per-period Sharpe, metrics.h sharpe_per_bar)
//   skewness, kurtosis of r (population moments: g3 = m3/m2^1.5, g4 = m4/m2^2, kurtosis NOT excess)
//   psr                PSR(SR*) = Phi((SR_p - SR*) sqrt(N - 1) / sqrt(1 - g3 SR_p + (g4 - 1)/4 SR_p^2))
//                      (Bailey and Lopez de Prado 2012), per-period SR*, psr0 = PSR(0)
//   dsr                deflated Sharpe (Bailey and Lopez de Prado 2014) for n_trials configurations:
//                      PSR(SR*) with SR* = sqrt(V) ((1 - gamma) Phi^-1(1 - 1/n) + gamma Phi^-1(1 - 1/(n e))),
//                      gamma = 0.5772156649 (Euler-Mascheroni), n = n_trials; V, the variance of the
//                      Sharpe estimates across trials, is not known from one pass: the estimator's own
//                      variance (1 - g3 SR_p + (g4 - 1)/4 SR_p^2) / (N - 1) stands in. n_trials = 1:
//                      SR* = 0, dsr = psr0.
//   bootstrap          stationary bootstrap (Politis and Romano 1994) of r: B resamples of length N,
//                      blocks start at a uniform index and continue (wrapping around) with probability
//                      1 - 1/block_mean; each resample's annualised Sharpe and total return
//                      (prod(1 + r) - 1); the CI is the empirical 2.5 % and 97.5 % quantiles (linear
//                      interpolation between order statistics, numpy's default). Randomness: common/rng
//                      (xoshiro) seeded with `seed`; block_mean 0 = auto: ceil(N^(1/3)).
//   underwater_days    the longest drawdown's duration in days: (ts at its recovery, or at N when still
//                      under water) - (ts at its peak), / 86400
// Depends on envs/metrics.h and common/ (rng).
#ifndef PPO_ENVS_REPORT_H
#define PPO_ENVS_REPORT_H

#include <stdint.h>

#include "envs/metrics.h"

// One closed trade: from leaving flat (or a sign flip) to the next flat or flip (the forced close
// at the end of a pass closes the last one). net_pnl = exit_equity - entry_equity.
typedef struct {
  int64_t entry_step, exit_step;  // steps whose fills opened and closed it (1..N)
  int side;                       // +1 long, -1 short
  double entry_price, exit_price;  // volume-weighted fill prices of the opening legs; the closing fill
  double entry_equity, exit_equity;  // equity just before the entry fill; at the exit fill, its cost paid
  double net_pnl;                    // exit_equity - entry_equity
  double cost;                       // every cost booked while it was open, its entry and exit legs included
  int64_t bars;  // bars held: exit_step - entry_step, one more for the forced close after the last step (it
                 // fills at the open after that step's mark); 0: opened and closed by one step's fills
} ReportTrade;

typedef struct {
  int64_t n;                 // N steps
  const int64_t *ts;         // (N+1) the bar at which E_i is marked (seconds UTC)
  const double *equity;      // (N+1) E_i net of every cost; E_N includes the forced close
  const double *position;    // (N+1) w held over step i (after its fill), as a fraction of equity
  const double *turnover;    // (N+1) sum of |dw| of the fills booked in step i (the forced close in step N)
  const double *notional;    // (N+1) sum of |dq| x fill price of those fills
  const double *cost_spread, *cost_slippage, *cost_commission, *cost_financing;  // (N+1) booked in step i;
                                                                                 // fixed fees are commission
  const ReportTrade *trades;  // the ledger, in order of exit
  int64_t n_trades;
} ReportInput;

typedef struct {
  double rf, mar;      // annual rates for Sharpe and Sortino (0)
  int64_t n_trials;    // configurations tried (deflated Sharpe); >= 1
  int bootstrap_samples;  // B; 0 = no bootstrap (the CI fields are NaN)
  double block_mean;   // mean block length in steps; 0 = auto
  uint64_t seed;       // bootstrap randomness
} ReportOptions;

typedef struct {
  Metrics m;  // metrics_compute over equity and ts (total return, CAGR, vol, Sharpe, Sortino, MDD, Calmar)
  double underwater_days;
  double turnover_per_bar, turnover_annual, notional_turnover;
  double exposure, mean_abs_position, long_share, short_share;
  int64_t n_trades;
  double mean_hold_bars, trades_per_year, hit_rate, bar_hit_rate, payoff_ratio, profit_factor;
  double cost_spread, cost_slippage, cost_commission, cost_financing, cost_total;  // in units of E_0 = the sums
  double cost_spread_pct, cost_slippage_pct, cost_commission_pct, cost_financing_pct, cost_total_pct;
  double cost_bp_per_trade;  // cost_total in bp of E_0 per trade
  double gross_return, net_return;
  double skewness, kurtosis;
  double sharpe_se;      // annualised
  double psr0, dsr, dsr_threshold;  // dsr_threshold: SR* per period
  double sharpe_ci_lo, sharpe_ci_hi, total_return_ci_lo, total_return_ci_hi;  // bootstrap 95 %
  double block_mean;     // the block length used
  int bootstrap_samples;
} Report;

ReportOptions report_options_default(void);  // rf 0, mar 0, n_trials 1, 1000 samples, auto block, seed 1

// Fills *out from *in. Allocates only the bootstrap's scratch (B doubles x 2, freed before return).
// NaN where a quantity is undefined (see above; the CI also when N < 2). 0, or -1 and the error message
// (n < 1, NULL arrays, n_trades > 0 without a ledger, n_trials < 1, bootstrap_samples < 0, block_mean in (0, 1)).
int report_compute(Report *out, const ReportInput *in, const ReportOptions *options);

// The standard normal CDF and its inverse (Acklam's rational approximation polished by one Halley
// step: |error| < 1e-15 relative for normal p >= DBL_MIN; about 1e-9 for subnormal p, which carry fewer
// than 53 bits); norm_ppf(0) = -INFINITY, norm_ppf(1) = INFINITY.
double norm_cdf(double x);
double norm_ppf(double p);

#endif
