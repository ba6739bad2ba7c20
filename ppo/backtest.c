// ppo/backtest.c: lockstep evaluation passes and their records (ppo/backtest.h).
#include "ppo/backtest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/error.h"
#include "common/host_memory.h"
#include "common/rng.h"
#include "envs/features.h"

#define BACKTEST_CONTEXTS_MAX 8  // distinct cost multipliers in one call

const char *backtest_strategy_name(BacktestStrategy s) {
  static const char *names[] = {"agent_greedy", "agent_sampled", "buy_and_hold",    "flat",
                                "random",       "ma_rule",       "oracle_zero_cost"};
  _Static_assert(sizeof names / sizeof names[0] == BT_STRATEGY_COUNT, "a strategy without its name, or the reverse");
  return (unsigned)s < BT_STRATEGY_COUNT ? names[s] : "?";
}

static bool is_agent(BacktestStrategy s) { return s == BT_AGENT_GREEDY || s == BT_AGENT_SAMPLED; }

void backtest_pass_free(BacktestPass *p) {
  if (!p) return;
  free(p->ts);
  free(p->price);
  free(p->equity);  // the doubles are one allocation starting here
  free(p->fills);
  free(p->trades);
  memset(p, 0, sizeof *p);
}

static void pass_alloc(BacktestPass *p, const BacktestPassSpec *spec, int64_t steps) {
  memset(p, 0, sizeof *p);
  p->spec = *spec;
  p->capacity = steps + 1;
  const size_t n = (size_t)p->capacity;
  p->ts = calloc(n, sizeof(int64_t));
  p->price = calloc(n, sizeof(double));
  double *d = calloc(8 * n, sizeof(double));
  p->fills = calloc(2 * n, sizeof(BacktestFill));  // at most a fill per step plus the forced close
  p->trades = calloc(2 * n, sizeof(ReportTrade));  // a step closes at most two (a flip, then the close)
  CHECK(p->ts && p->price && d && p->fills && p->trades, "out of host memory (backtest pass)");
  p->equity = d;
  p->position = d + n;
  p->turnover = d + 2 * n;
  p->notional = d + 3 * n;
  p->cost_spread = d + 4 * n;
  p->cost_slippage = d + 5 * n;
  p->cost_commission = d + 6 * n;
  p->cost_financing = d + 7 * n;
}

// --- the trade ledger ------------------------------------------------------------------------------

typedef struct {
  bool open;
  ReportTrade trade;  // the open trade so far
} Ledger;

static int sign_of(double x) { return (x > 0) - (x < 0); }

// A fill of dq units at `price` (mid `mid`, whole cost `cost`) in step `step`, with q_old units held
// and cash_old before it: closes and/or opens trades with the env's rule (trading_env.c book_trades).
// forced: the close after the last step, which fills one bar after that step's own fill would (the
// open after its mark; CLOSE: its close), so the trade held one bar more than the steps between the
// two say.
static void ledger_fill(Ledger *lg, BacktestPass *p, int64_t step, double q_old, double cash_old, double dq,
                        double price, double mid, double cost, bool forced) {
  const double q_new = q_old + dq, equity_at_fill = cash_old + q_old * mid;
  const int s_old = sign_of(q_old), s_new = sign_of(q_new);
  const bool closes = s_old != 0 && s_new != s_old, opens = s_new != 0 && s_new != s_old;
  const double exit_cost = closes ? cost * fabs(q_old) / fabs(dq) : 0.0;
  if (closes) {
    ReportTrade *t = &lg->trade;
    t->exit_step = step;
    t->exit_price = price;
    t->exit_equity = equity_at_fill - exit_cost;
    t->net_pnl = t->exit_equity - t->entry_equity;
    t->cost += exit_cost;
    t->bars = t->exit_step - t->entry_step + (forced ? 1 : 0);
    p->trades[p->n_trades++] = *t;
    lg->open = false;
  }
  if (opens) {
    lg->trade = (ReportTrade){.entry_step = step,
                              .side = s_new,
                              .entry_price = price,
                              .entry_equity = equity_at_fill - exit_cost,
                              .cost = cost - exit_cost};
    lg->open = true;
  } else if (lg->open) {
    if (fabs(q_new) > fabs(q_old))  // adding to the position: volume-weighted entry price
      lg->trade.entry_price = (fabs(q_old) * lg->trade.entry_price + fabs(dq) * price) / fabs(q_new);
    lg->trade.cost += cost;
  }
}

// --- actions ---------------------------------------------------------------------------------------

// The discrete level whose target is nearest w (the smaller |target| on a tie), or the continuous
// action with target w.
static void action_for_target(const TradingContext *c, double w, int32_t *level, float *cont) {
  const double L = c->params.max_leverage;
  if (c->n_levels > 0) {
    int best = 0;
    for (int k = 1; k < c->n_levels; k++) {
      double d = fabs(c->levels[k] - w), db = fabs(c->levels[best] - w);
      if (d < db || (d == db && fabs(c->levels[k]) < fabs(c->levels[best]))) best = k;
    }
    *level = best;
  } else {
    double a = c->params.long_only ? 2.0 * w / L - 1.0 : w / L;
    *cont = (float)(a > 1.0 ? 1.0 : a < -1.0 ? -1.0 : a);
  }
}

// The baselines' target at decision bar t.
static double baseline_target(const TradingContext *c, BacktestStrategy s, int64_t t) {
  const double L = c->params.max_leverage;
  const MarketData *d = c->data;
  double sign = 0.0;
  switch (s) {
    case BT_BUY_AND_HOLD:
      return L;
    case BT_MA_RULE:
      sign = c->features->values[(size_t)t * (size_t)c->features->count + FEATURE_X_STRATEGY];
      break;
    case BT_ORACLE:
      sign = c->params.exec == TRADING_EXEC_NEXT_OPEN ? (double)sign_of(d->open[t + 2] - d->open[t + 1])
                                                      : (double)sign_of(d->close[t + 1] - d->close[t]);
      break;
    case BT_FLAT:
      return 0.0;
    case BT_AGENT_GREEDY:   // the policy's passes and the random one have no target: no default, so
    case BT_AGENT_SAMPLED:  // -Wswitch names a baseline added to the enum and not here (it traded flat)
    case BT_RANDOM:
    case BT_STRATEGY_COUNT:
      CHECK(false, "baseline_target: not a baseline with a target");
  }
  if (c->params.long_only && sign < 0) sign = 0.0;
  return L * sign;
}

// --- the passes ------------------------------------------------------------------------------------

typedef struct {
  TradingEnv env;
  Ledger ledger;
  Rng rng;  // RANDOM
  float *obs;
  bool done;
  int agent_row;  // row in the agent batch, -1 for baselines
} PassState;

// Records step i of pass p after the env stepped; the pre-step state is (q0, cash0, E0, M0).
static void record_step(BacktestPass *p, PassState *s, int64_t i, double q0, double cash0, double E0, double M0,
                        bool end) {
  const TradingEnv *e = &s->env;
  const MarketData *d = e->ctx->data;
  const bool next_open = e->ctx->params.exec == TRADING_EXEC_NEXT_OPEN;
  const int64_t t0 = e->t - 1;  // the decision bar of this step
  double spread = 0, slippage = 0, commission = 0, turnover = 0, notional = 0;
  if (e->fill_units != 0) {
    const double dq = e->fill_units;
    ledger_fill(&s->ledger, p, i, q0, cash0, dq, e->fill_price, e->fill_mid, e->fill_cost, false);
    const double sl = e->fill_cost - e->fill_spread - e->fill_commission - e->fill_fee;
    p->fills[p->n_fills++] = (BacktestFill){.step = i,
                                            .ts = d->ts[next_open ? t0 + 1 : t0],
                                            .units = dq,
                                            .price = e->fill_price,
                                            .mid = e->fill_mid,
                                            .spread = e->fill_spread,
                                            .slippage = sl,
                                            .commission = e->fill_commission + e->fill_fee};
    spread += e->fill_spread;
    slippage += sl;
    commission += e->fill_commission + e->fill_fee;
    turnover += fabs(dq) * M0 / E0;
    notional += fabs(dq) * e->fill_price;
  }
  if (s->ledger.open) s->ledger.trade.cost += e->fill_financing;
  if (end && e->exit_fill.units != 0) {  // the forced close at the next open (CLOSE: this close)
    const TradingFill *x = &e->exit_fill;
    ledger_fill(&s->ledger, p, i, e->q, e->cash, x->units, x->price, x->mid, x->cost, true);
    const double sl = x->cost - x->spread - x->commission - x->fee;
    p->fills[p->n_fills++] = (BacktestFill){.step = i,
                                            .ts = d->ts[next_open ? e->t + 1 : e->t],
                                            .forced = true,
                                            .units = x->units,
                                            .price = x->price,
                                            .mid = x->mid,
                                            .spread = x->spread,
                                            .slippage = sl,
                                            .commission = x->commission + x->fee};
    spread += x->spread;
    slippage += sl;
    commission += x->commission + x->fee;
    turnover += fabs(x->units) * d->close[e->t] / e->equity;
    notional += fabs(x->units) * x->price;
  }
  p->ts[i] = d->ts[e->t];
  p->price[i] = d->close[e->t];
  p->equity[i] = end ? e->exit_equity : e->equity;
  p->position[i] = trading_env_position(e);  // q M_{t+1} / E_{t+1} (TRADING_ENV.md section 3): marked at ts[i]
  p->turnover[i] = turnover;
  p->notional[i] = notional;
  p->cost_spread[i] = spread;
  p->cost_slippage[i] = slippage;
  p->cost_commission[i] = commission;
  p->cost_financing[i] = e->fill_financing;
  p->n = i;
}

// A pass that max_loss stopped at step p->n (decision bar t) holds cash from there: steps up to
// `steps` (the split's end) keep its last equity, with no position, turnover or cost.
static void pad_flat(BacktestPass *p, const TradingContext *c, int64_t t, int64_t steps) {
  const MarketData *d = c->data;
  for (int64_t j = p->n + 1; j <= steps; j++) {
    int64_t bar = t + (j - p->n);
    p->ts[j] = d->ts[bar];
    p->price[j] = d->close[bar];
    p->equity[j] = p->equity[p->n];
    p->position[j] = p->turnover[j] = p->notional[j] = 0.0;
    p->cost_spread[j] = p->cost_slippage[j] = p->cost_commission[j] = p->cost_financing[j] = 0.0;
  }
  p->n = steps;
}

void backtest_pass_finish_input(BacktestPass *p) {
  p->input = (ReportInput){.n = p->n,
                           .ts = p->ts,
                           .equity = p->equity,
                           .position = p->position,
                           .turnover = p->turnover,
                           .notional = p->notional,
                           .cost_spread = p->cost_spread,
                           .cost_slippage = p->cost_slippage,
                           .cost_commission = p->cost_commission,
                           .cost_financing = p->cost_financing,
                           .trades = p->trades,
                           .n_trades = p->n_trades};
}

// The market's parameters for an evaluation pass over setup's split at cost multiplier m.
static TradingParams eval_params(const BacktestSetup *setup, double m) {
  TradingParams p = setup->base->params;
  p.eval = true;
  p.eval_split = setup->split;
  p.eval_offset = 0;
  p.cost_mult = m;
  return p;
}

// One context per distinct cost multiplier (the oracle's 0 included). Returns the index for m.
static int context_for(TradingContext *ctxs, double *mults, int *count, const BacktestSetup *setup, double m) {
  for (int k = 0; k < *count; k++)
    if (mults[k] == m) return k;
  if (*count == BACKTEST_CONTEXTS_MAX) {
    error_set("backtest: more than %d distinct cost multipliers in one run", BACKTEST_CONTEXTS_MAX);
    return -1;
  }
  TradingParams p = eval_params(setup, m);
  if (trading_context_init(&ctxs[*count], setup->base->data, setup->base->features, &p) != 0) {
    error_prepend("split %s, cost multiplier %g: ", trading_split_name(setup->split), m);
    return -1;
  }
  mults[*count] = m;
  return (*count)++;
}

// The agent's actions for its rows: obs (rows, O) host, normalised here; greedy rows read the head,
// sampled rows the sampled actions. `words` counts a sampled row's Philox words per step.
typedef struct {
  Policy *pol;
  Backend *be;
  int rows, O, A;
  // A sampled row's Philox words per step and its action's floats: 1 and 1 for a categorical head
  // (one uniform, one action index per row), 2 A and A for a Gaussian one (nn/backend.h).
  int words, action_floats;
  float *obs_host, *out_host, *head_host;  // (rows, O), (rows, action_floats), (rows, A)
  float *obs_dev, *uniforms_dev, *actions_dev;
} AgentBatch;

static void agent_batch_act(AgentBatch *ab, const BacktestSetup *setup, const BacktestPassSpec *const *specs,
                            int64_t step) {
  const int R = ab->rows, O = ab->O, A = ab->A;
  if (setup->norm) vecnorm_obs_frozen(setup->norm, ab->obs_host, R);
  backend_upload(ab->be, ab->obs_dev, ab->obs_host, (size_t)R * O * sizeof(float));
  bool any_sampled = false;
  for (int r = 0; r < R; r++)
    if (specs[r]->strategy == BT_AGENT_SAMPLED) {
      // Pass r's own stream: Philox(seed, subsequence), `words` words per step.
      backend_uniform(ab->be, ab->uniforms_dev + (size_t)r * ab->words, (size_t)ab->words, specs[r]->seed,
                      setup->sample_subsequence, (uint64_t)step * (uint64_t)ab->words);
      any_sampled = true;
    }
  if (any_sampled) {
    for (int r = 0; r < R; r++)  // greedy rows: any valid uniforms (their samples are not used)
      if (specs[r]->strategy != BT_AGENT_SAMPLED)
        backend_uniform(ab->be, ab->uniforms_dev + (size_t)r * ab->words, (size_t)ab->words, 0, 0, 0);
    policy_act(ab->pol, ab->actions_dev, ab->obs_dev, ab->uniforms_dev, R);
    backend_download(ab->be, ab->out_host, ab->actions_dev, (size_t)R * ab->action_floats * sizeof(float));
  } else {
    policy_forward(ab->pol, ab->obs_dev, R);
  }
  backend_download(ab->be, ab->head_host, policy_head_out(ab->pol), (size_t)R * A * sizeof(float));
}

// A step's bytes in a pass's record: ts, price and the 8 per-step doubles, two fills and two trades.
static const size_t pass_step_bytes =
    sizeof(int64_t) + 9 * sizeof(double) + 2 * sizeof(BacktestFill) + 2 * sizeof(ReportTrade);

// Every pass keeps its per-step arrays (equity, costs, fills, trades) for the report: refused up
// front when they (and `extra` bytes) could not fit this machine's memory (ppo-eval --random-seeds
// 1000000).
static int memory_check(int n, const TradingContext *c, double extra) {
  size_t available, total;
  const double need = (double)n * (double)(c->eval_end - c->eval_start + 1) * (double)pass_step_bytes + extra;
  if (host_memory_info(&available, &total) == 0 && need > (double)available) {
    error_set(
        "backtest: %d passes of %lld steps would need %.1f GiB, more than the %.1f GiB of memory available "
        "(fewer passes: ppo-eval --seeds, --random-seeds)",
        n, (long long)(c->eval_end - c->eval_start), need / 1073741824.0, (double)available / 1073741824.0);
    return -1;
  }
  return 0;
}

// The context of setup's split at the market's own cost multiplier: its span and observation size.
static int split_context(const BacktestSetup *setup, TradingContext *c) {
  TradingParams p = eval_params(setup, setup->base->params.cost_mult);
  if (trading_context_init(c, setup->base->data, setup->base->features, &p) != 0) {
    error_prepend("split %s: ", trading_split_name(setup->split));
    return -1;
  }
  return 0;
}

int backtest_check_memory(const BacktestSetup *setup, int n, double extra) {
  TradingContext c;
  if (split_context(setup, &c) != 0) return -1;
  return memory_check(n, &c, extra);
}

// --- the workspace ---------------------------------------------------------------------------------

struct BacktestWorkspace {
  BacktestSetup setup;  // as built: a run must name the same market, split and policy
  int n, agents;
  BacktestPassSpec *specs;
  int64_t steps;  // the split's: every pass's arrays hold steps + 1 entries
  int n_ctx;
  TradingContext ctxs[BACKTEST_CONTEXTS_MAX];  // one per distinct cost multiplier
  double mults[BACKTEST_CONTEXTS_MAX];
  int *ctx_of;                           // per pass: its context
  PassState *st;                         // per pass; agent_row (its row in the agent batch, -1: a baseline) set once
  const BacktestPassSpec **agent_specs;  // the agent passes' specs, by row
  float *baseline_obs;                   // (O): the baselines' observations (not read)
  AgentBatch ab;                         // the agent rows' buffers (none without agent passes)
  BacktestPass *passes;
};

// Host bytes of a workspace besides the passes' records, and the agent batch's bytes on the backend.
static size_t workspace_fixed_bytes(int n, int agents, int O, int A, size_t *backend) {
  *backend = (size_t)agents * (size_t)(O + 3 * A) * sizeof(float);
  return sizeof(BacktestWorkspace) +
         (size_t)n * (sizeof(BacktestPassSpec) + sizeof(int) + sizeof(PassState) + sizeof(BacktestPassSpec *) +
                      sizeof(BacktestPass)) +
         ((size_t)agents * (size_t)(O + 2 * A) + (size_t)O) * sizeof(float);
}

int backtest_workspace_bytes(const BacktestSetup *setup, int n, int agents, int action_dim, size_t *host,
                             size_t *backend) {
  TradingContext c;
  if (split_context(setup, &c) != 0) return -1;
  const int64_t steps = c.eval_end - c.eval_start;
  *host = workspace_fixed_bytes(n, agents, c.obs_dim, action_dim, backend) +
          (size_t)n * (size_t)(steps + 1) * pass_step_bytes;
  return 0;
}

void backtest_workspace_free(BacktestWorkspace *ws) {
  if (!ws) return;
  for (int k = 0; ws->passes && k < ws->n; k++) backtest_pass_free(&ws->passes[k]);
  if (ws->ab.obs_dev) backend_free(ws->ab.be, ws->ab.obs_dev);
  free(ws->ab.obs_host);
  free(ws->baseline_obs);
  free(ws->passes);
  free(ws->agent_specs);
  free(ws->st);
  free(ws->ctx_of);
  free(ws->specs);
  free(ws);
}

BacktestWorkspace *backtest_workspace_new(const BacktestSetup *setup, const BacktestPassSpec *specs, int n) {
  BacktestWorkspace *ws = calloc(1, sizeof *ws);
  CHECK(ws, "out of host memory (backtest)");
  ws->setup = *setup;
  ws->n = n;
  ws->specs = malloc((size_t)n * sizeof *ws->specs);
  ws->ctx_of = calloc((size_t)n, sizeof(int));
  ws->st = calloc((size_t)n, sizeof *ws->st);
  ws->agent_specs = calloc((size_t)n, sizeof *ws->agent_specs);
  ws->passes = calloc((size_t)n, sizeof *ws->passes);
  CHECK(ws->specs && ws->ctx_of && ws->st && ws->agent_specs && ws->passes, "out of host memory (backtest)");
  memcpy(ws->specs, specs, (size_t)n * sizeof *specs);
  for (int k = 0; k < n; k++) {
    double m = specs[k].strategy == BT_ORACLE ? 0.0 : specs[k].cost_mult;
    if (!(m >= 0 && isfinite(m))) {
      error_set("backtest: cost multiplier %g, a finite number >= 0 allowed", m);
      goto fail;
    }
    if ((ws->ctx_of[k] = context_for(ws->ctxs, ws->mults, &ws->n_ctx, setup, m)) < 0) goto fail;
    if (is_agent(specs[k].strategy)) {
      if (!setup->policy) {
        error_set("backtest: an %s pass needs a policy", backtest_strategy_name(specs[k].strategy));
        goto fail;
      }
      ws->st[k].agent_row = ws->agents;
      ws->agent_specs[ws->agents++] = &ws->specs[k];
    } else {
      ws->st[k].agent_row = -1;
    }
  }
  const TradingContext *c0 = &ws->ctxs[0];
  const int O = c0->obs_dim;
  for (int k = 0; k < n && c0->flat_level < 0; k++)  // target 0 would go to the level -L: a short, not flat
    if (specs[k].strategy == BT_FLAT || specs[k].strategy == BT_MA_RULE) {
      error_set(
          "backtest: [env] action_mode = toggle2 without long_only has no flat action, so the %s pass cannot "
          "be traded through the env (allowed: long_only = true, or discrete3, discrete_k or continuous)",
          backtest_strategy_name(specs[k].strategy));
      goto fail;
    }
  if (memory_check(n, c0, 0.0) != 0) goto fail;
  if (ws->agents > 0) {
    Policy *pol = setup->policy;
    if (pol->spec.obs_dim != O) {
      error_set("backtest: the policy takes %d observations, the env gives %d (window %d)", pol->spec.obs_dim, O,
                c0->window);
      goto fail;
    }
    if (ws->agents > pol->spec.max_batch) {
      error_set("backtest: %d agent passes, the policy's batch holds %d", ws->agents, pol->spec.max_batch);
      goto fail;
    }
    const int A = pol->spec.action_dim, agents = ws->agents;
    bool categorical = pol->spec.head == POLICY_HEAD_CATEGORICAL;
    AgentBatch *ab = &ws->ab;
    *ab = (AgentBatch){.pol = pol,
                       .be = pol->backend,
                       .rows = agents,
                       .O = O,
                       .A = A,
                       .words = categorical ? 1 : 2 * A,
                       .action_floats = categorical ? 1 : A};
    ab->obs_host = malloc((size_t)agents * (O + 2 * A) * sizeof(float));
    CHECK(ab->obs_host, "out of host memory (backtest)");
    ab->out_host = ab->obs_host + (size_t)agents * O;
    ab->head_host = ab->out_host + (size_t)agents * A;
    ab->obs_dev = backend_alloc(ab->be, (size_t)agents * (O + 3 * A) * sizeof(float));
    ab->uniforms_dev = ab->obs_dev + (size_t)agents * O;
    ab->actions_dev = ab->uniforms_dev + (size_t)agents * 2 * A;
  }
  ws->steps = c0->eval_end - c0->eval_start;
  ws->baseline_obs = malloc((size_t)O * sizeof(float));
  CHECK(ws->baseline_obs, "out of host memory (backtest)");
  for (int k = 0; k < n; k++) pass_alloc(&ws->passes[k], &specs[k], ws->steps);
  return ws;
fail:
  backtest_workspace_free(ws);
  return NULL;
}

// Pass p ready for a new run: its arrays kept, everything recorded forgotten (entry 0 of the
// per-step values is 0, as pass_alloc left it: a run writes entries 1..n and, below, 0's ts, price
// and equity).
static void pass_restart(BacktestPass *p) {
  BacktestPass arrays = *p;
  memset(p, 0, sizeof *p);
  p->spec = arrays.spec;
  p->capacity = arrays.capacity;
  p->ts = arrays.ts;
  p->price = arrays.price;
  p->equity = arrays.equity;
  p->position = arrays.position;
  p->turnover = arrays.turnover;
  p->notional = arrays.notional;
  p->cost_spread = arrays.cost_spread;
  p->cost_slippage = arrays.cost_slippage;
  p->cost_commission = arrays.cost_commission;
  p->cost_financing = arrays.cost_financing;
  p->fills = arrays.fills;
  p->trades = arrays.trades;
}

BacktestPass *backtest_workspace_passes(BacktestWorkspace *ws) { return ws->passes; }

int backtest_workspace_run(BacktestWorkspace *ws, const BacktestSetup *setup) {
  if (setup->base != ws->setup.base || setup->split != ws->setup.split || setup->policy != ws->setup.policy) {
    error_set("backtest: a workspace runs on the market, split and policy it was made for");
    return -1;
  }
  const int n = ws->n;
  const int64_t steps = ws->steps;
  const TradingContext *c0 = &ws->ctxs[0];
  const int O = c0->obs_dim;
  AgentBatch *ab = &ws->ab;
  for (int k = 0; k < n; k++) {
    PassState *st = &ws->st[k];
    const int row = st->agent_row;  // the run's state afresh, its batch row kept
    *st = (PassState){.agent_row = row};
    rng_seed(&st->rng, ws->specs[k].seed);
    st->obs = st->agent_row >= 0 ? ab->obs_host + (size_t)st->agent_row * O : ws->baseline_obs;
    trading_env_init(&st->env, &ws->ctxs[ws->ctx_of[k]], 0, 1, st->rng);
    trading_env_reset(&st->env, st->obs);
    BacktestPass *p = &ws->passes[k];
    pass_restart(p);
    p->ts[0] = c0->data->ts[st->env.t];
    p->price[0] = c0->data->close[st->env.t];
    p->equity[0] = st->env.equity;
  }
  int live = n;
  for (int64_t i = 1; live > 0; i++) {
    if (setup->stop && i % BACKTEST_STOP_EVERY == 0 && setup->stop()) return 1;
    if (ws->agents > 0) agent_batch_act(ab, setup, ws->agent_specs, i - 1);
    for (int k = 0; k < n; k++) {
      PassState *s = &ws->st[k];
      if (s->done) continue;
      TradingEnv *e = &s->env;
      const TradingContext *c = e->ctx;
      int32_t level = 0;
      float cont = 0.0f;
      const BacktestStrategy strat = ws->specs[k].strategy;
      if (s->agent_row >= 0) {
        const float *row = strat == BT_AGENT_GREEDY ? ab->head_host + (size_t)s->agent_row * ab->A
                                                    : ab->out_host + (size_t)s->agent_row * ab->action_floats;
        if (c->n_levels > 0) {
          if (strat == BT_AGENT_GREEDY) {
            for (int a = 1; a < ab->A; a++)
              if (row[a] > row[level]) level = a;
          } else {
            level = (int32_t)row[0];
          }
        } else {
          cont = fminf(fmaxf(row[0], -1.0f), 1.0f);
        }
      } else if (strat == BT_RANDOM) {
        if (c->n_levels > 0)
          level = (int32_t)rng_below(&s->rng, (uint64_t)c->n_levels);
        else
          cont = (float)(2.0 * rng_uniform(&s->rng) - 1.0);
      } else {
        double w = baseline_target(c, strat, e->t);
        // Buy-and-hold and the MA rule hold their units while their side is unchanged: with
        // continuous actions a fixed target w re-levers whenever the weight drifts past the no-trade
        // band (discrete levels hold by themselves). Vol targeting re-sizes by design; a weight
        // drifted past L, where the actions end, is traded back to L.
        if (c->n_levels == 0 && c->params.reward != TRADING_REWARD_VOL_TARGET && e->q != 0 &&
            (strat == BT_BUY_AND_HOLD || strat == BT_MA_RULE) && (w > 0) == (e->q > 0) && w != 0)
          w = trading_env_position(e);
        action_for_target(c, w, &level, &cont);
      }
      const double q0 = e->q, cash0 = e->cash, E0 = e->equity, M0 = c->data->close[e->t];
      float reward, log[ENV_LOG_MAX];
      uint8_t terminated = 0, truncated = 0;
      trading_env_step(e, c->n_levels > 0 ? (const void *)&level : (const void *)&cont, s->obs, &reward, &terminated,
                       &truncated, log);
      const bool end = terminated || truncated;
      CHECK(i <= steps, "backtest: a pass longer than its split");
      BacktestPass *p = &ws->passes[k];
      record_step(p, s, i, q0, cash0, E0, M0, end);
      if (end) {
        s->done = true;
        live--;
        p->terminated = terminated;
        p->stop_step = i;
        if (terminated) pad_flat(p, c, e->t, steps);
        p->env_trades_opened = e->trades_opened;
        p->env_trades_closed = e->trades_closed;
        p->env_trades_won = e->trades_won;
        p->env_hold_bars = e->hold_bars_sum;
        backtest_pass_finish_input(p);
      }
    }
  }
  return 0;
}

int backtest_run(const BacktestSetup *setup, const BacktestPassSpec *specs, int n, BacktestPass *passes) {
  BacktestWorkspace *ws = backtest_workspace_new(setup, specs, n);
  if (!ws) return -1;
  int rc = backtest_workspace_run(ws, setup);
  if (rc == 0)
    for (int k = 0; k < n; k++) {  // the records move to the caller; the workspace frees the rest
      passes[k] = ws->passes[k];
      memset(&ws->passes[k], 0, sizeof ws->passes[k]);
    }
  backtest_workspace_free(ws);
  return rc;
}

double backtest_ledger_check(const BacktestPass *p) {
  // Rebuild the cash account from the fills and the financing: cash -= units price + commission,
  // financing per step; E_i = cash + q price_i. The forced close leaves q = 0, so E_N = cash.
  double cash = p->equity[0], q = 0.0, worst = 0.0;
  int64_t f = 0;
  for (int64_t i = 1; i <= p->n; i++) {
    for (; f < p->n_fills && p->fills[f].step == i && !p->fills[f].forced; f++) {
      cash -= p->fills[f].units * p->fills[f].price + p->fills[f].commission;
      q += p->fills[f].units;
    }
    cash -= p->cost_financing[i];
    for (; f < p->n_fills && p->fills[f].step == i && p->fills[f].forced; f++) {
      cash -= p->fills[f].units * p->fills[f].price + p->fills[f].commission;
      q += p->fills[f].units;
    }
    double e = cash + (q == 0 ? 0.0 : q * p->price[i]);
    double err = fabs(e - p->equity[i]);
    if (!(err <= worst)) worst = err;  // NaN propagates
  }
  return worst;
}
