// ppo/evaluate.h: the validation pass run during training ([eval] every = K): one deterministic
// pass of the policy over the validation (or test) split of the trading env, with frozen
// normalisation statistics, the forced close at the end, and the metric that selects best.h5
// (TRADING_ENV.md section 9: metrics_compute over the pass's equity curve).
//
// Greedy actions (argmax of the logits, or the Gaussian mean clipped to the bounds) by default;
// [eval] deterministic = false samples them from a Philox stream keyed by the training iteration.
// The pass itself is ppo/backtest.h's (one agent pass, in a workspace made by evaluator_init: an
// evaluation allocates nothing); the full backtest report is ppo-eval's (ppo/eval_run.h).
// Depends on ppo/trainer.h, ppo/backtest.h, envs/metrics.h.
#ifndef PPO_EVALUATE_H
#define PPO_EVALUATE_H

#include <stdint.h>

#include "envs/metrics.h"
#include "ppo/trainer.h"

typedef struct {
  double metric;  // the [eval] metric's value (higher is better)
  Metrics metrics;
  int64_t steps;
} EvalResult;

typedef struct Evaluator Evaluator;

// NULL and the error message when the env has no market (CartPole) or the split is unusable.
// Needs the trainer's slabs (trainer_allocate): it allocates the pass's records and its batch.
Evaluator *evaluator_init(Trainer *trainer);
// What evaluator_init will allocate, for the memory plan (after trainer_open, before the slabs):
// host bytes (the pass's records over the split) and backend bytes (its observation batch).
// 0, or -1 and evaluator_init's error message.
int evaluator_plan(Trainer *trainer, size_t *host, size_t *backend);
void evaluator_free(Evaluator *ev);  // NULL is fine
const char *evaluator_metric_name(const Evaluator *ev);  // "sharpe", ...
// 0; -1 and the error message; or 1 when a stop was requested (trainer_stop_requested: SIGINT or
// SIGTERM) during the pass, which is then abandoned within BACKTEST_STOP_EVERY bars (out untouched).
int evaluator_run(Evaluator *ev, Trainer *trainer, EvalResult *out);

#endif
