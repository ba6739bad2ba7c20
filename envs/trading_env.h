// envs/trading_env.h: the trading simulator (TRADING_ENV.md sections 2-8), env kinds "trading" and
// "synthetic" (the same simulator; the caller builds the market from a file or from synthetic.h).
//
// Shared context. A TradingContext holds pointers to the MarketData and its Features (both
// borrowed, read-only), the resolved TradingParams and everything derived from them (split rows,
// start range, levels, cost fractions). trading_context_init fills it without allocating; the caller
// passes &context as the EnvKind's `shared` pointer (the kind's `params` pointer is unused: NULL) and
// keeps data, features and context alive until the envs are closed. One copy serves any N; an env's
// state (TradingEnv) is a few hundred bytes and holds a pointer to the context.
//
// Timing (the core invariant; legend: t the decision bar, M_t the mid close, O, H, L the mid open,
// high and low, W the window, F the features per row, F_a the agent-state size):
//   - the env sits at bar t after it closed; obs_t = feature rows t-W+1..t (each causal) + agent state;
//   - the action sets a target w* (fraction of equity); target units q* = w* E_t / M_t;
//   - exec NEXT_OPEN: the fill is at bar t+1's open: buys at ask_open (1 + s), sells at bid_open (1 - s)
//     (without bid/ask or with use_data_spread off: O (1 +- (half_spread + s))), capped to the [low,
//     high] of bar t+1 on that side; exec CLOSE (parity only): the same at bar t's close, capped to bar
//     t's range;
//   - cash K -= dq F + commission |dq| F + fee [dq != 0]; then financing K -= |q| M_t rate dt_years with
//     dt from the timestamps t -> t+1 (weekends charged); E_{t+1} = K + q M_{t+1};
//   - so the gap close[t] -> open[t+1] accrues to the old position, the rest of bar t+1 to the new one;
//   - units are held between trades (a held position drifts); no trade when the discrete level is
//     unchanged or, for continuous actions, when |w* - w_t| < no_trade_band.
// Every cost is multiplied by cost_mult: the half spread (also the data's: ask = mid + cost_mult
// (ask - mid)), commission, fixed fee, slippage (bps + vol_k sigma_t + U[0, random_max] bps) and
// financing. This one routine (trading_env_step) produces the reward, the episode log and the
// per-step ledger fields below, which reports read, so they cannot disagree.
//
// Episodes. Training: env i's first reset draws its start inside stratum i of N equal parts of
// [start_lo, start_hi] (stratified_starts), later ones uniformly over the whole range, all from its
// own Rng; start_lo = max(train_lo, warmup, W - 1), start_hi = train_hi - 2 - L_ep (rows; train_hi
// exclusive; with exec CLOSE, train_hi - 1 - L_ep), so that every fill and the forced close stay inside the split. E_0
// = 1, flat (or a random level, random_initial_position, taken at the mid with no cost). truncated after L_ep steps;
// terminated when E <= (1 - max_loss) E_0 (or E <= 0). Evaluation (params.eval): every reset starts
// at max(split_lo, warmup, W - 1) + eval_offset of params.eval_split and runs to split_hi - 2 (CLOSE: - 1), one
// deterministic pass (policy randomness is the caller's).
// At every episode end a forced close at the next open (CLOSE mode: this close) is booked into
// exit_equity and the log; the reward skips it.
//
// "Auto" values, resolved per instrument by trading_context_init (TRADING_ENV.md sections 2-8). The
// instrument is the data's symbol: XAUUSD, EURUSD (FX/gold), SPY, GOOGL (stocks); any other symbol is
// a stock when bars are >= 12 h apart (daily), else FX. Daily = the features' bar size >= 12 h.
//   splits: XAUUSD, EURUSD val 2015-01-01, test 2017-01-01; SPY val 2013-01-01, test 2017-01-01;
//     others: val starts the day after the bar at 70% of the rows, test after the bar at 85%;
//     train_start = the first bar's day, test_end = the last bar's day (inclusive)
//   half_spread_bps (without bid/ask) XAUUSD 1.5, EURUSD 0.5, SPY 0.5, GOOGL 1.0, others 1.0;
//   use_data_spread = the data has bid/ask; commission_bps 0.35 FX, 0.5 stocks; slippage_bps 0.5 FX,
//   1.0 stocks (for other symbols these three are guesses: generic_costs says which); reward_scale
//   100 intraday, 10 daily (1 for the Sharpe-like rewards DSR and D3R); dsr_eta 1/500, 1/63;
//   episode_length 2048, 252; window 32, 30; warmup 3 x the features' lookback (360 hourly, 189 daily).
//
// Rewards (then x reward_scale, minus the shaping terms, then clipped to +-reward_clip when > 0):
//   LOG_RETURN ln(E_{t+1}/E_t); PNL (E_{t+1} - E_t)/E_0; DSR / D3R on R = E_{t+1}/E_t - 1 (metrics.h), A and
//   B warmed on the buy-and-hold returns of the 1/eta bars before the start, fallback R / sigma_t;
//   VOL_TARGET ln(E_{t+1}/E_t) with the target scaled by sigma_target_bar / sigma_t (clipped to +-L);
//   shaping: turnover |dw|, drawdown increase, variance (w sigma_t)^2, flat [q = 0].
// Ruin guard: when E_{t+1} <= 0 the log return uses E = 1e-12 E_0 (the episode terminates there).
//
// Agent state (F_a = 5 + K one-hot + 1 progress): w_t = q M_t / E_t; sign(q) ln(M_t/entry)/sigma_t
// (entry = volume-weighted fill price of the open position); min(bars in position, 500)/100;
// 1 - E_t/E_peak; the last step's cost in bp of E_t; optional one-hot of the level; optional
// steps / episode length (eval: / pass length).
//
// Episode log (L = 12): episode_return (sum of rewards), episode_length (steps N), total_return
// (E_exit/E_0 - 1), log_growth ln(E_exit/E_0), sharpe (annualised with P = N/Y of the episode's
// timestamps, over E_0..E_N with E_N replaced by E_exit), max_drawdown (same curve), n_trades (trades
// opened: from flat or by a sign flip), turnover (mean |dw| per step, dw = |dq| M_t/E_t), hit_rate
// (closed trades with net P&L > 0 / closed trades; NaN when none closed), avg_hold_bars (mean bars
// held per closed trade; NaN when none), cost_bps (all costs incl. financing and the forced close, bp of E_0),
// n (N, the number of returns behind sharpe). A trade's net P&L is the equity at its exit fill (exit
// leg's cost paid, marked at the fill bar's mid) minus the equity just before its entry fill.
// Depends on env.h, market_data.h, features.h, metrics.h, common/ (rng, error, time_utc).
#ifndef PPO_ENVS_TRADING_ENV_H
#define PPO_ENVS_TRADING_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include "common/rng.h"
#include "envs/env.h"
#include "envs/features.h"
#include "envs/market_data.h"
#include "envs/metrics.h"

#define TRADING_AGENT_STATE 5  // F_a without the optional one-hot and progress
#define TRADING_LEVELS_MAX 101
#define TRADING_LOG_SIZE 12
#define TRADING_DATE_AUTO INT64_MIN  // a split date resolved per instrument
#define TRADING_AUTO_INT (-1)        // episode_length, window, warmup, use_data_spread: per instrument

// Each choice enum ends with its count (the range checks use it; ppo/env_config.c asserts that the
// configuration's enums list the same values in the same order).
typedef enum { TRADING_EXEC_NEXT_OPEN, TRADING_EXEC_CLOSE, TRADING_EXEC_COUNT } TradingExec;
typedef enum {
  TRADING_ACTION_DISCRETE3,   // {0, 1, 2} -> {-L, 0, L} (long_only: {0, L/2, L})
  TRADING_ACTION_DISCRETE_K,  // n_levels evenly spaced in [-L, L] (long_only: [0, L])
  TRADING_ACTION_CONTINUOUS,  // w* = L clip(a, -1, 1) (long_only: L (clip(a, -1, 1) + 1)/2), band rule
  TRADING_ACTION_TOGGLE2,     // {0 Sell, 1 Buy} -> {-L, L} (long_only: {0, L}): gym-anytrading's flip
                              // semantics are these two targets; starts flat, so the first action trades
  TRADING_ACTION_COUNT,
} TradingActionMode;
typedef enum {
  TRADING_REWARD_LOG_RETURN,
  TRADING_REWARD_PNL,
  TRADING_REWARD_DSR,
  TRADING_REWARD_D3R,
  TRADING_REWARD_VOL_TARGET,
  TRADING_REWARD_COUNT,
} TradingReward;
typedef enum { TRADING_SPLIT_TRAIN, TRADING_SPLIT_VAL, TRADING_SPLIT_TEST } TradingSplit;
typedef enum { TRADING_CLASS_FX, TRADING_CLASS_STOCK } TradingClass;  // FX and gold vs stocks (cost defaults)
// The auto costs that took the generic fallback of a symbol without defaults of its own (bits of
// TradingContext.generic_costs): guesses, which a run should say it made.
enum {
  TRADING_GENERIC_HALF_SPREAD = 1,  // 1 bp (only when the half spread is used: no data spread)
  TRADING_GENERIC_COMMISSION = 2,   // by bar size: FX intraday, stocks daily
  TRADING_GENERIC_SLIPPAGE = 4,     // likewise
};
// gym-anytrading's profit models, for the parity tests only (exec CLOSE, TOGGLE2, long_only; every other
// cost is set to 0). In both, Sell = flat and Buy = long with all the equity:
//   STOCKS (stocks-v0): a buy spends w E including the fee parity_fee_buy (shares = E (1 - fee) / price),
//     a sell pays parity_fee_sell of the proceeds; total_profit = E_exit / E_0.
//   FOREX (forex-v0, unit_side left): a sell fills parity_fee_sell (price units) below the close; their
//     total_profit is in base units: E_N (p_{start-1} - fee) / (E_0 p_end), E_N before the forced close.
typedef enum { TRADING_PARITY_NONE, TRADING_PARITY_ANYTRADING_STOCKS, TRADING_PARITY_ANYTRADING_FOREX } TradingParity;

// Parameters; "auto" = NAN for reals, TRADING_AUTO_INT for ints, TRADING_DATE_AUTO for dates.
typedef struct {
  int64_t train_start, val_start, test_start, test_end;  // UTC seconds (midnights); test_end inclusive (its day)
  TradingExec exec;
  TradingActionMode action_mode;
  int n_levels;  // DISCRETE_K: odd, 3..TRADING_LEVELS_MAX
  double max_leverage;
  bool long_only;
  double no_trade_band;
  TradingReward reward;
  double reward_scale;  // auto: 100 intraday, 10 daily; 1 for DSR and D3R
  double dsr_eta;       // auto: 1/500 intraday, 1/63 daily
  double vol_target_annual;
  double shaping_turnover, shaping_drawdown, shaping_variance, shaping_flat;
  double reward_clip;                                    // 0 = none
  int use_data_spread;                                   // 0, 1 or auto (on when the data has bid/ask)
  double half_spread_bps, commission_bps, slippage_bps;  // auto per instrument
  double fee_fixed, slippage_vol_k, slippage_random_max_bps;
  double financing_long_apr, financing_short_apr, impact_y, cost_mult;
  int64_t episode_length, window, warmup;  // auto: 2048 / 252, 32 / 30, 3 x features lookback
  double max_loss;
  bool random_initial_position, stratified_starts, position_onehot, episode_progress;
  TradingParity parity;                    // NONE except in the gym-anytrading parity tests (not a config key)
  double parity_fee_buy, parity_fee_sell;  // stocks: 0.005, 0.01 (fractions); forex: sell 0.0003 (price units)
  bool eval;                               // evaluation passes instead of training episodes
  TradingSplit eval_split;                 // the split an evaluation pass covers
  int64_t eval_offset;                     // bars after the split's first valid start
} TradingParams;

typedef struct {
  const MarketData *data;    // borrowed
  const Features *features;  // borrowed; computed from data
  TradingParams params;      // resolved: no auto left
  TradingClass asset_class;
  unsigned generic_costs;  // TRADING_GENERIC_* bits
  bool daily;
  int64_t split_lo[3], split_hi[3];  // rows [lo, hi) of train, val, test
  int64_t start_lo, start_hi;        // training starts, inclusive
  int64_t eval_start, eval_end;      // eval pass: first decision bar, and the bar the pass ends at
  int64_t episode_length;            // L_ep (training), possibly shortened to the train span
  int n_levels;                      // K (discrete modes); 0 continuous
  int flat_level;                    // level held at a flat start (0 = lowest with long_only); -1: none (TOGGLE2)
  double levels[TRADING_LEVELS_MAX];
  // The costs as the fills use them, each x cost_mult: half_spread .. slippage_random_max as
  // fractions of the price (the *_bps params / 1e4), slippage_vol_k as the factor on sigma_t, fee in
  // units of the initial equity E_0 (fee_fixed).
  double half_spread, commission, slippage, slippage_random_max, slippage_vol_k, fee;
  double financing_long, financing_short;                                              // APR x cost_mult
  double periods_per_year;                                                             // of the whole data
  double sigma_target_bar;  // vol_target_annual / sqrt(periods_per_year)
  double log_eta_bars;      // round(1/dsr_eta): DSR warm-up length
  int window, obs_dim, action_count;
  const char *refused_key;  // after a failed trading_context_init: the param to change ("window", "warmup",
                            // "use_data_spread"), named as its [env] key; NULL when none is to blame
} TradingContext;

// One fill: units bought (< 0 sold) at price, the mid at that point, its costs (cost = units (price -
// mid) + commission + fee; spread = units (price without slippage - mid), the rest of units (price -
// mid) is slippage).
typedef struct {
  double units, price, mid, commission, fee, spread, cost;
} TradingFill;

typedef struct {
  const TradingContext *ctx;
  Rng rng;
  int64_t t, start, end;  // current decision bar; episode start; the bar at which it ends
  double q, cash, equity, equity_peak, entry_price, last_cost_bp, prev_equity;
  double exit_equity;  // equity net of the forced close; set on the step that ends an episode
  // the last step's fill (the ledger): units bought (<0 sold), price, commission, fee, financing;
  // fill_cost = dq (price - mid) + commission + fee, of which fill_spread = dq (price without
  // slippage - mid) is the spread's share (the rest of dq (price - mid) is slippage)
  double fill_units, fill_price, fill_commission, fill_fee, fill_financing, fill_cost, fill_mid, fill_spread;
  TradingFill exit_fill;  // the forced close booked by the step that ended the episode (units 0: none)
  double reward_exact;  // the last reward before rounding to float (accounting identities are tested on it)
  DsrState dsr;
  double reward_sum, ret_sum, ret_sq_sum, last_ret, max_dd, turnover_sum, cost_sum, trade_entry_equity;
  double hold_bars_sum;
  int32_t steps, bars_in_position, level, trades_opened, trades_closed, trades_won;
  int32_t env_index, num_envs;  // for the stratified first start
  bool started;                 // the first reset happened (stratified start used)
} TradingEnv;

extern const EnvKind trading_kind;    // "trading"
extern const EnvKind synthetic_kind;  // "synthetic": the same functions, a generated market

TradingParams trading_params_default(void);  // the spec's defaults, every per-instrument value auto
// Resolves params for `data` (symbol, bar size, bid/ask) and features into *ctx; no allocation.
// 0, or -1 and the error message naming the parameter (bad split dates, spans too short, ...).
int trading_context_init(TradingContext *ctx, const MarketData *data, const Features *features,
                         const TradingParams *params);
const char *trading_split_name(TradingSplit split);  // "train", "val", "test"
// Whether the split dates params give over data (autos resolved) increase: 0, or -1 and the message.
// trading_context_init checks the same; a caller that knows where each date came from calls this
// first to name it.
int trading_check_split_dates(const MarketData *data, const TradingParams *params);
// The split preset of a built-in instrument (XAUUSD, EURUSD, SPY): the split of the data shipped
// for it, whose dates an auto val_start and test_start take. true and the two dates, or false for a
// symbol without one (its dates follow the data).
bool trading_split_preset(const char *symbol, int64_t *val_start, int64_t *test_start);

void trading_env_init(TradingEnv *env, const TradingContext *ctx, int env_index, int num_envs, Rng rng);
void trading_env_reset(TradingEnv *env, float *obs);  // obs (O)
// action: int32 level index (discrete modes) or one float (continuous); see env.h for the rest. Exits
// (check.h) when called after the step that ended the episode without a reset in between.
void trading_env_step(TradingEnv *env, const void *action, float *obs, float *reward, uint8_t *terminated,
                      uint8_t *truncated, float *episode_log);
double trading_env_position(const TradingEnv *env);  // w_t = q M_t / E_t at the current bar

#endif
