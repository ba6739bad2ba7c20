// ppo/eval_run.h: a whole `ppo-eval` run: the backtest report of a checkpoint on one split, with
// the baselines and the cost stress (TRADING_ENV.md sections 8 and 9), or of a walk-forward run.
//
// One checkpoint (--checkpoint). The configuration is the checkpoint's own (--config replaces it for
// the market, the costs and [eval]; the network always comes from the checkpoint), with --set on
// top. Passes over the split, in lockstep (ppo/backtest.h), at the configured cost multiplier m:
//   agent greedy; agent sampled (sampled_seeds passes: mean and sd); buy-and-hold; flat; random
//   policy (random_seeds passes: mean and sd); the MA rule (x_strategy); the zero-cost oracle;
//   cost stress: agent greedy, buy-and-hold and the MA rule at 0 x m and 2 x m as well.
// The output directory (default: the run directory's eval/<checkpoint name>_<split>) gets, as one
// set (all of them or none: each written under its temporary name, and only when every one is
// written all renamed into place, report.json last; on a write failure none is published and no
// temporary file stays; the PNG is drawn after):
//   report.json  every metric of section 9 for every pass (NaN -> null), the cost breakdown, the
//                execution mode and costs (and which auto costs are generic guesses), the data range,
//                the checkpoint's identity (path, size, FNV-1a 64 of its bytes, iteration, timesteps,
//                build), the options
//   equity.csv   per bar of the greedy agent: time, price, position, equity, drawdown, costs, and
//                buy-and-hold's equity on the same bars
//   trades.csv   the greedy agent's trade ledger; fills.csv its fills (the forced close marked)
//   equity.png   equity and drawdown against buy-and-hold (gnuplot; equity.gp is kept so the plot
//                can be redrawn; without gnuplot a warning and no PNG)
// and a summary table goes to stdout. A directory (a FIFO, ...) where one of these files goes is
// bad input, refused before the backtest.
//
// Walk-forward (walk_forward = RUN, a `ppo-train --walk-forward` directory): every RUN/fold_NN is
// evaluated on its own test split with its best.h5 (else checkpoints/last.h5) into
// RUN/fold_NN/eval/, and RUN/walk_forward/ gets folds.csv (per-fold metrics of the greedy agent and
// buy-and-hold), oos_equity.csv (the out-of-sample curves chained: each fold starts at the previous
// fold's final equity), report.json (the section-9 metrics of the chained curve) and equity.png,
// published as one set as well (folds.csv, oos_equity.csv, equity.gp, report.json).
//
// Exit statuses (common/error.h): 0, 2 bad input (command line, checkpoint, configuration, data),
// 1 a failure at run time (writing the outputs).
// Depends on ppo/backtest.h, ppo/checkpoint.h, ppo/env_config.h.
#ifndef PPO_EVAL_RUN_H
#define PPO_EVAL_RUN_H

#include <stdbool.h>

typedef struct {
  const char *checkpoint;        // the checkpoint evaluated (not with walk_forward)
  const char *config_path;       // NULL: the checkpoint's configuration
  int n_overrides;               // --set
  const char *const *overrides;
  const char *split;             // "train", "val" or "test" (NULL: test)
  const char *out_dir;           // NULL: the default above
  const char *walk_forward;      // a walk-forward run directory, or NULL
  int sampled_seeds;             // agent sampled passes (8)
  int random_seeds;              // random-policy passes (32)
  int bootstrap_samples;         // stationary bootstrap resamples (1000; 0 = none)
  bool plot;                     // draw equity.png with gnuplot
  bool quiet;                    // no summary table
} EvalRunOptions;

// The keys --set may override: the ones an evaluation uses. The others are refused (exit 2, naming
// the key and this rule): the network and its normalisation come from the checkpoint, and the rest
// only concern training. ppo-eval's --help and docs/GUIDE.md section 6 state the same words.
#define EVAL_SET_RULE                                                                                         \
  "--set takes the keys an evaluation uses: [env] keys but n_envs, episode_length, random_initial_position, " \
  "stratified_starts, reward_scale, dsr_eta, reward_clip and shaping_*; [eval] risk_free_rate, "              \
  "min_acceptable_return and n_trials; [run] seed, device, threads, tf32 and memory_limit"

// What --set may do to [section] key: taken, refused (the checkpoint's, or training's only), or
// unlisted: an [env] key ppo-eval has no rule for (a key added without one, or no key at all;
// taken, and a test failure). Keys of other sections that it does not list are TRAINING.
typedef enum { EVAL_SET_TAKEN, EVAL_SET_CHECKPOINT, EVAL_SET_TRAINING, EVAL_SET_UNLISTED } EvalSetKind;
EvalSetKind eval_set_kind(const char *section, const char *key);

void eval_run_options_default(EvalRunOptions *options);
int eval_run(const EvalRunOptions *options);  // an exit status

#endif
