// ppo/evaluate.c: the validation pass during training (ppo/evaluate.h).
#include "ppo/evaluate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/error.h"
#include "common/rng.h"
#include "envs/trading_env.h"

enum { EVAL_STREAM = 4 };  // rng_stream_seed(seed, 4): the sampled evaluation's Philox seed

struct Evaluator {
  TradingContext ctx;  // the market's context with eval = true on the chosen split
  TradingEnv env;
  Backend *backend;    // the trainer's (not owned)
  int obs_dim, action_dim;
  size_t capacity;     // points of the equity curve
  double *equity;      // (capacity)
  int64_t *ts;         // (capacity)
  float *obs, *head;   // host (O), (A)
  float *dev;          // backend: obs (O), uniforms (2 A), actions (A)
  ConfigMetric metric;
  bool deterministic;
  double rf, mar;
  uint64_t seed;
};

static const char *metric_names[] = {"sharpe", "sortino", "total_return", "calmar"};

Evaluator *evaluator_init(Trainer *tr) {
  const EnvMarket *market = trainer_market(tr);
  const Config *cfg = trainer_config(tr);
  if (!market) {
    error_set("[eval] every = %lld: the %s env has no validation split (evaluation needs [env] type = trading or "
              "synthetic)",
              (long long)cfg->eval.every, "cartpole");
    return NULL;
  }
  Evaluator *ev = calloc(1, sizeof *ev);
  CHECK(ev, "out of host memory (evaluator)");
  TradingParams p = market->context.params;
  p.eval = true;
  p.eval_split = cfg->eval.split == CONFIG_SPLIT_TEST ? TRADING_SPLIT_TEST : TRADING_SPLIT_VAL;
  p.eval_offset = 0;
  if (trading_context_init(&ev->ctx, market->data, market->features, &p) != 0) {
    error_prepend("[eval] split = %s: ", trading_split_name(p.eval_split));
    free(ev);
    return NULL;
  }
  ev->backend = trainer_backend(tr);
  ev->obs_dim = ev->ctx.obs_dim;
  const Policy *pol = trainer_policy(tr);
  ev->action_dim = pol->spec.action_dim;
  ev->capacity = (size_t)(ev->ctx.eval_end - ev->ctx.eval_start) + 3;
  ev->equity = malloc(ev->capacity * sizeof(double));
  ev->ts = malloc(ev->capacity * sizeof(int64_t));
  ev->obs = malloc((size_t)(ev->obs_dim + ev->action_dim) * sizeof(float));
  CHECK(ev->equity && ev->ts && ev->obs, "out of host memory (evaluator)");
  ev->head = ev->obs + ev->obs_dim;
  ev->dev = backend_alloc(ev->backend, (size_t)(ev->obs_dim + 3 * ev->action_dim) * sizeof(float));
  ev->metric = cfg->eval.metric;
  ev->deterministic = cfg->eval.deterministic;
  ev->rf = cfg->eval.risk_free_rate;
  ev->mar = cfg->eval.min_acceptable_return;
  ev->seed = rng_stream_seed((uint64_t)cfg->run.seed, EVAL_STREAM);
  return ev;
}

void evaluator_free(Evaluator *ev) {
  if (!ev) return;
  backend_free(ev->backend, ev->dev);
  free(ev->equity);
  free(ev->ts);
  free(ev->obs);
  free(ev);
}

const char *evaluator_metric_name(const Evaluator *ev) { return metric_names[ev->metric]; }

int evaluator_run(Evaluator *ev, Trainer *tr, EvalResult *out) {
  Policy *pol = trainer_policy(tr);
  TrainerState st = trainer_state(tr);
  const MarketData *data = ev->ctx.data;
  const int O = ev->obs_dim, A = ev->action_dim;
  float *obs_dev = ev->dev, *uniforms = ev->dev + O, *actions_dev = ev->dev + O + 2 * A;
  Rng rng;
  rng_seed(&rng, ev->seed);  // unused by eval passes (they start at a fixed bar); required by init
  trading_env_init(&ev->env, &ev->ctx, 0, 1, rng);
  trading_env_reset(&ev->env, ev->obs);
  size_t n = 0;
  ev->equity[n] = ev->env.equity;
  ev->ts[n++] = data->ts[ev->env.t];
  uint64_t words = 0;
  for (;;) {
    vecnorm_obs_frozen(st.norm, ev->obs, 1);
    backend_upload(ev->backend, obs_dev, ev->obs, (size_t)O * sizeof(float));
    int32_t level = 0;
    float cont = 0.0f;
    if (ev->deterministic) {
      policy_forward(pol, obs_dev, 1);
      backend_download(ev->backend, ev->head, policy_head_out(pol), (size_t)A * sizeof(float));
      if (pol->spec.head == POLICY_HEAD_CATEGORICAL) {
        for (int a = 1; a < A; a++)
          if (ev->head[a] > ev->head[level]) level = a;
      } else {
        cont = ev->head[0];
      }
    } else {
      backend_uniform(ev->backend, uniforms, (size_t)2 * A, ev->seed, (uint64_t)trainer_counters(tr)->iterations,
                      words);
      words += (uint64_t)2 * A;
      policy_act(pol, actions_dev, obs_dev, uniforms, 1);
      backend_download(ev->backend, ev->head, actions_dev, (size_t)A * sizeof(float));
      if (pol->spec.head == POLICY_HEAD_CATEGORICAL)
        level = (int32_t)ev->head[0];
      else
        cont = ev->head[0];
    }
    if (pol->spec.head != POLICY_HEAD_CATEGORICAL) cont = fminf(fmaxf(cont, -1.0f), 1.0f);
    const void *action = pol->spec.head == POLICY_HEAD_CATEGORICAL ? (const void *)&level : (const void *)&cont;
    float reward, log[ENV_LOG_MAX];
    uint8_t terminated = 0, truncated = 0;
    trading_env_step(&ev->env, action, ev->obs, &reward, &terminated, &truncated, log);
    CHECK(n < ev->capacity, "evaluation pass longer than its split");
    bool end = terminated || truncated;
    ev->equity[n] = end ? ev->env.exit_equity : ev->env.equity;
    ev->ts[n++] = data->ts[ev->env.t];
    if (end) break;
  }
  metrics_compute(&out->metrics, ev->equity, ev->ts, (int64_t)(n - 1), ev->rf, ev->mar);
  out->steps = (int64_t)(n - 1);
  const Metrics *m = &out->metrics;
  out->metric = ev->metric == CONFIG_METRIC_SHARPE    ? m->sharpe
                : ev->metric == CONFIG_METRIC_SORTINO ? m->sortino
                : ev->metric == CONFIG_METRIC_CALMAR  ? m->calmar
                                                      : m->total_return;
  if (isnan(out->metric)) out->metric = -INFINITY;
  return 0;
}
