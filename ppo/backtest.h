// ppo/backtest.h: evaluation passes over one split of the trading env (TRADING_ENV.md sections 8
// and 9): the trained policy (greedy and sampled) and the baselines, on the same span and with the
// same costs, each recorded step by step into the report's input (envs/report.h) and its ledgers.
//
// A pass is one deterministic run from the split's first valid decision bar to its end (the env's
// eval mode: params.eval), flat at E_0 = 1, with the forced close at the end. Passes run in
// lockstep: every step, the agent passes' observations go through the policy as one batch (frozen
// normalisation statistics), then each env steps on its own action. Each pass may use its own cost
// multiplier (a TradingContext per multiplier: cost stress).
//
// Strategies (w = the target position as a fraction of equity, L = max_leverage; the env maps a
// target to the nearest level of its action mode, or to the continuous action with that target):
//   AGENT_GREEDY   argmax of the logits, or the Gaussian mean clipped to [-1, 1]
//   AGENT_SAMPLED  actions sampled as in training, from a Philox stream of the pass's seed
//   BUY_AND_HOLD   w = L from the first bar (entry and forced exit costs paid)
//   FLAT           w = 0 (no trade; NaN ratios in its report, equity stays 1)
//   RANDOM         a uniform level (or a uniform continuous action) each step, xoshiro of the seed
//   MA_RULE        w = L x_strategy_t = L sign(EMA_fast - EMA_slow) (feature 9; long_only: max(0, .))
//   ORACLE         w = L sign of the move the new position earns: NEXT_OPEN mid open[t+2] - open[t+1],
//                  CLOSE mid close[t+1] - close[t]; run at cost_mult 0 whatever the pass's multiplier
//                  (the zero-cost bound, gym-anytrading's max_possible_profit analogue; it peeks)
//
// The record (BacktestPass): per step the equity (E_N net of the forced close), the position held
// (q M / E at the step's close, drifted with the price: TRADING_ENV.md section 3),
// turnover, notional and the four cost categories, read from the env's own fill fields (trading_env.h),
// so the report and the env cannot disagree; the fill ledger (every fill, the forced close included);
// the trade ledger (ReportTrade: from leaving flat or a sign flip to the next flat or flip), rebuilt
// from the fills with the env's rule (a flip's closing leg pays |q_old|/|dq| of the fill's cost).
// Depends on envs/ (trading_env, report), nn/policy.h, ppo/normalize.h.
#ifndef PPO_BACKTEST_H
#define PPO_BACKTEST_H

#include <stdbool.h>
#include <stdint.h>

#include "envs/report.h"
#include "envs/trading_env.h"
#include "nn/policy.h"
#include "ppo/normalize.h"

typedef enum {
  BT_AGENT_GREEDY,
  BT_AGENT_SAMPLED,
  BT_BUY_AND_HOLD,
  BT_FLAT,
  BT_RANDOM,
  BT_MA_RULE,
  BT_ORACLE,
  BT_STRATEGY_COUNT,  // the count: backtest_strategy_name's table is asserted against it
} BacktestStrategy;

const char *backtest_strategy_name(BacktestStrategy s);  // "agent_greedy", "buy_and_hold", ...

typedef struct {
  int64_t step;  // 1..N: the step that booked it
  int64_t ts;    // the bar it filled at (open of t+1, or close of t in CLOSE mode)
  bool forced;   // the forced close at the end of the pass
  double units, price, mid, spread, slippage, commission;  // commission includes the fixed fee
} BacktestFill;

typedef struct {
  BacktestStrategy strategy;
  uint64_t seed;     // AGENT_SAMPLED (Philox key), RANDOM (xoshiro seed)
  double cost_mult;  // replaces [env] cost_mult for this pass (ORACLE: always 0)
} BacktestPassSpec;

typedef struct {
  BacktestPassSpec spec;
  int64_t n;  // steps taken (N); the arrays below hold n + 1 entries
  int64_t *ts;
  double *price;  // mid close at ts[i]
  double *equity, *position, *turnover, *notional, *cost_spread, *cost_slippage, *cost_commission, *cost_financing;
  BacktestFill *fills;
  int64_t n_fills;
  ReportTrade *trades;
  int64_t n_trades;
  int env_trades_opened, env_trades_closed, env_trades_won;  // the env's own counts (cross-checks)
  double env_hold_bars;                                      // the env's own sum of the trades' bars held
  // Stopped by max_loss before the split's end, at step stop_step (its equity net of the forced
  // close): the pass stays flat in cash from there to the split's end, so that its N, span and
  // periods per year are the benchmarks' (TRADING_ENV.md section 9: the same span for all).
  bool terminated;
  int64_t stop_step;
  int64_t capacity;
  ReportInput input;  // views of the arrays above, ready for report_compute
} BacktestPass;

typedef struct {
  const TradingContext *base;  // the market's context: data, features, resolved params (not eval)
  TradingSplit split;
  Policy *policy;               // NULL: no agent pass allowed
  const VecNormalize *norm;     // the agent's frozen observation statistics (NULL: none)
  uint64_t sample_subsequence;  // AGENT_SAMPLED passes draw from Philox(seed, this subsequence)
  bool (*stop)(void);           // optional, polled every BACKTEST_STOP_EVERY steps: true abandons the run
} BacktestSetup;

#define BACKTEST_STOP_EVERY 256

// Runs the passes (specs, n of them) in lockstep and fills passes[0..n) (allocated here; free each
// with backtest_pass_free). 0, or -1 and the error message (a split too short, an agent pass
// without a policy, a policy batch too small: the policy's max_batch must cover the agent passes),
// or 1 when setup->stop said so (a stop requested during ppo-train's evaluation pass, which a
// preemption's grace period may not outlast). Unless 0, passes[] is left untouched: nothing to free.
int backtest_run(const BacktestSetup *setup, const BacktestPassSpec *specs, int n, BacktestPass *passes);
void backtest_pass_free(BacktestPass *pass);  // NULL-safe, idempotent

// The same passes run again and again without allocating (ppo-train's evaluation every K iterations):
// a workspace holds everything backtest_run allocates (the passes' records over the whole split, the
// agent batch on the policy's backend), made once for these specs; backtest_workspace_run runs them
// again from the split's start. The run's setup must name the workspace's market, split and policy;
// its normalisation statistics, sample_subsequence and stop may differ. backtest_workspace_new: NULL
// and the error message on the errors backtest_run reports. backtest_workspace_run: 0 (the records
// in backtest_workspace_passes, the workspace's own, valid until its next run), -1 and the error
// message, or 1 on a stop (the records are partial).
typedef struct BacktestWorkspace BacktestWorkspace;
BacktestWorkspace *backtest_workspace_new(const BacktestSetup *setup, const BacktestPassSpec *specs, int n);
int backtest_workspace_run(BacktestWorkspace *ws, const BacktestSetup *setup);
BacktestPass *backtest_workspace_passes(BacktestWorkspace *ws);
void backtest_workspace_free(BacktestWorkspace *ws);  // NULL is fine
// The host bytes and the backend bytes a workspace of n passes over setup's split takes, `agents` of
// them through a policy with `action_dim` outputs (for a memory plan, before the policy exists).
// 0, or -1 and the error message (an unusable split).
int backtest_workspace_bytes(const BacktestSetup *setup, int n, int agents, int action_dim, size_t *host,
                             size_t *backend);
// Whether n passes over setup's split, with their per-step arrays, plus `extra` bytes (the policy the
// caller is about to allocate for them) fit this machine's available memory: 0, or -1 and the error
// message (fewer passes: ppo-eval --seeds, --random-seeds). backtest_run checks the passes again.
int backtest_check_memory(const BacktestSetup *setup, int n, double extra);
// Points pass->input (the report's view) at the pass's arrays and counts: after they change (a
// run, or ppo-eval's walk-forward chain appending a fold).
void backtest_pass_finish_input(BacktestPass *pass);

// The largest |E_i - rebuilt E_i| over the pass, where the rebuilt equity replays the fill ledger
// and the financing on a cash account from E_0 (cash -= units price + commission; E = cash + q M_i).
// An independent check that the ledger written out explains the equity reported (about 1e-15).
double backtest_ledger_check(const BacktestPass *pass);

#endif
