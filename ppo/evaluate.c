// ppo/evaluate.c: the validation pass during training (ppo/evaluate.h), one agent pass of
// ppo/backtest.h scored with metrics_compute.
#include "ppo/evaluate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/error.h"
#include "common/rng.h"
#include "envs/trading_env.h"
#include "ppo/backtest.h"

enum { EVAL_STREAM = 4 };  // rng_stream_seed(seed, 4): the sampled evaluation's Philox seed

struct Evaluator {
  TradingSplit split;
  ConfigMetric metric;
  bool deterministic;
  double rf, mar;
  uint64_t seed;
  BacktestWorkspace *ws;  // the pass's memory, made once: an evaluation allocates nothing
};

// The evaluation's one pass; its sampled actions' subsequence is set per run.
static BacktestSetup eval_setup(Trainer *tr, TradingSplit split) {
  return (BacktestSetup){.base = &trainer_market(tr)->context,
                         .split = split,
                         .policy = trainer_policy(tr),
                         .norm = trainer_state(tr).norm,
                         .sample_subsequence = (uint64_t)trainer_counters(tr)->iterations,
                         .stop = trainer_stop_requested};
}

// The [eval] split's parameters, checked: an unusable split is reported at the start of the run.
static int eval_split(Trainer *tr, TradingSplit *split) {
  const EnvMarket *market = trainer_market(tr);
  const Config *cfg = trainer_config(tr);
  if (!market) {
    error_set("the %s env has no validation split (evaluation needs [env] type = trading or synthetic)",
              config_choice_name("env", "type", cfg->env.type));
    return -1;
  }
  TradingParams p = market->context.params;
  p.eval = true;
  p.eval_split = cfg->eval.split == CONFIG_SPLIT_TEST ? TRADING_SPLIT_TEST : TRADING_SPLIT_VAL;
  p.eval_offset = 0;
  TradingContext check;
  if (trading_context_init(&check, market->data, market->features, &p) != 0) {
    error_prepend("[eval] split = %s: ", trading_split_name(p.eval_split));
    return -1;
  }
  *split = p.eval_split;
  return 0;
}

int evaluator_plan(Trainer *tr, size_t *host, size_t *backend) {
  TradingSplit split;
  if (eval_split(tr, &split) != 0) return -1;
  BacktestSetup setup = {.base = &trainer_market(tr)->context, .split = split};  // no policy yet
  const PolicySpec ps = trainer_policy_spec(trainer_config(tr), trainer_env_spec(tr));
  if (backtest_workspace_bytes(&setup, 1, 1, ps.action_dim, host, backend) != 0) return -1;
  *host += sizeof(Evaluator);
  return 0;
}

Evaluator *evaluator_init(Trainer *tr) {
  TradingSplit split;
  if (eval_split(tr, &split) != 0) return NULL;
  const Config *cfg = trainer_config(tr);
  Evaluator *ev = calloc(1, sizeof *ev);
  CHECK(ev, "out of host memory (evaluator)");
  ev->split = split;
  ev->metric = cfg->eval.metric;
  ev->deterministic = cfg->eval.deterministic;
  ev->rf = cfg->eval.risk_free_rate;
  ev->mar = cfg->eval.min_acceptable_return;
  ev->seed = rng_stream_seed((uint64_t)cfg->run.seed, EVAL_STREAM);
  BacktestSetup setup = eval_setup(tr, split);
  BacktestPassSpec spec = {.strategy = ev->deterministic ? BT_AGENT_GREEDY : BT_AGENT_SAMPLED,
                           .seed = ev->seed,
                           .cost_mult = trainer_market(tr)->context.params.cost_mult};
  if (!(ev->ws = backtest_workspace_new(&setup, &spec, 1))) {
    free(ev);
    return NULL;
  }
  return ev;
}

void evaluator_free(Evaluator *ev) {
  if (!ev) return;
  backtest_workspace_free(ev->ws);
  free(ev);
}

// The [eval] metric's value among the metrics (a switch without a default: -Wswitch names a metric
// added to the choices and not here, which fell to total_return).
static double selected_metric(ConfigMetric metric, const Metrics *m) {
  switch (metric) {
    case CONFIG_METRIC_SHARPE:
      return m->sharpe;
    case CONFIG_METRIC_SORTINO:
      return m->sortino;
    case CONFIG_METRIC_TOTAL_RETURN:
      return m->total_return;
    case CONFIG_METRIC_CALMAR:
      return m->calmar;
  }
  return NAN;
}

const char *evaluator_metric_name(const Evaluator *ev) { return config_choice_name("eval", "metric", ev->metric); }

int evaluator_run(Evaluator *ev, Trainer *tr, EvalResult *out) {
  // Sampled actions: Philox(seed) at subsequence = the training iteration, a fresh stream per evaluation.
  BacktestSetup setup = eval_setup(tr, ev->split);
  int rc = backtest_workspace_run(ev->ws, &setup);
  if (rc != 0) return rc;
  const BacktestPass *pass = backtest_workspace_passes(ev->ws);
  metrics_compute(&out->metrics, pass->equity, pass->ts, pass->n, ev->rf, ev->mar);
  out->steps = pass->n;
  const Metrics *m = &out->metrics;
  out->metric = selected_metric(ev->metric, m);
  if (isnan(out->metric)) out->metric = -INFINITY;
  return 0;
}
