// ppo/walk_forward.h: rolling walk-forward folds (TRADING_ENV.md section 2) and `ppo-train
// --walk-forward`, which trains one agent per fold.
//
// Folds. With A = the first bar's day (UTC midnight) and months counted on the calendar from A
// (same day of the month, clamped to the month's last day: Jan 31 + 1 month = Feb 28 or 29, + 2
// months = Mar 31), fold k (k = 0, 1, ...) is
//   train_start = A + k step        val_start = A + k step + train
//   test_start  = A + k step + train + val
//   test_end    = A + k step + train + val + test - 1 day   (inclusive: the test window's last day)
// and the folds run while test_end <= the last bar's day, at most [walk_forward] max_folds of them.
// Lengths are [walk_forward] train_months, val_months, test_months, step_months; 0 = auto: intraday
// 36/6/6 months, daily (bars >= 12 h apart) 96/12/12; step = test_months. Every date is measured
// from A, not from the previous date, so a clamped day does not drift through the later dates.
// XAUUSD_1H (2006-03-20 .. 2019-02-25) gives 18 folds; SPY_1D (1998-01-02 .. 2021-03-31) 14.
//
// The run (walk_forward_run): RUN = --run-dir, else [run] run_dir/name. It opens the market once
// to know its range, prints the fold table on stderr, writes RUN/folds.csv (atomically), then
// trains fold k with train_run into RUN/fold_KK: the file, then --set, then the fold's four
// env.*_start/test_end dates. A fold that ends with timesteps >= [run] total_timesteps gets the
// marker file RUN/fold_KK/done (written atomically, one line "timesteps N"). Running the same
// command again skips folds whose `done` records at least total_timesteps (a larger
// total_timesteps trains them on), resumes a fold holding checkpoints/last.h5 (train_run's
// --resume: the fold's configuration must match its checkpoint's, as for --resume), and starts
// the others. A fold that stops early (SIGINT/SIGTERM, or --iterations) ends the walk-forward with
// exit 0 and a line saying to run the same command again. RUN/folds.csv guards the plan: a later
// command whose folds differ is refused (a different max_folds is the same plan).
// Depends on ppo/config.h, ppo/env_config.h (the market's range), ppo/train_run.h.
#ifndef PPO_WALK_FORWARD_H
#define PPO_WALK_FORWARD_H

#include <stdbool.h>
#include <stdint.h>

#include "envs/market_data.h"
#include "ppo/config.h"
#include "ppo/train_run.h"

#define WALK_FORWARD_FOLDS_MAX 1000  // folds one plan may hold; [walk_forward] max_folds allows up to this

typedef struct {
  int index;                                             // k, from 0
  int64_t train_start, val_start, test_start, test_end;  // UTC midnights (seconds); test_end inclusive
} WalkForwardFold;

// The resolved window lengths in months ([walk_forward] keys with 0 replaced by the auto values).
typedef struct {
  int train_months, val_months, test_months, step_months;
} WalkForwardLengths;

WalkForwardLengths walk_forward_lengths(const Config *cfg, bool daily);  // auto resolved
int64_t walk_forward_add_months(int64_t day, int months);  // calendar months, day clamped to the month's end

// Plans the folds of `data` (rows >= 1). Writes up to `capacity` folds and sets *count. 0, or -1
// and the error message (naming the [walk_forward] keys and values, and what would fit) when no
// fold fits the data or more folds fit than `capacity` (lower max_folds).
int walk_forward_plan(const Config *cfg, const MarketData *data, bool daily, WalkForwardFold *folds, int capacity,
                      int *count);

// The fold's four --set strings ("env.train_start=YYYY-MM-DD", val_start, test_start, test_end),
// written into buf; out[i] points at buf[i]. Returns 4.
int walk_forward_overrides(const WalkForwardFold *fold, char buf[4][64], const char *out[4]);

// `ppo-train --walk-forward`: options as for train_run (config_path required; resume and
// plan_only unused; max_iterations applies to each fold's train_run call). Returns an exit
// status: 0 every fold done or stopped with a checkpoint, 2 bad input (configuration, data, a
// CartPole env, --set of a split date), 1 a failure at run time.
int walk_forward_run(const TrainRunOptions *options);

#endif
