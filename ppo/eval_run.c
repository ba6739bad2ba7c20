// ppo/eval_run.c: the `ppo-eval` run (ppo/eval_run.h).
#define _DEFAULT_SOURCE  // realpath (XSI), hidden by _POSIX_C_SOURCE alone
#include "ppo/eval_run.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build_info.h"
#include "common/atomic_file.h"
#include "common/check.h"
#include "common/error.h"
#include "common/file_check.h"
#include "common/gnuplot.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/rng.h"
#include "common/time_utc.h"
#include "ppo/backtest.h"
#include "ppo/checkpoint.h"
#include "ppo/config.h"
#include "ppo/env_config.h"
#include "ppo/train_run.h"
#include "ppo/trainer.h"

#define PATH_CAP 4096
#define REPORT_FORMAT "ppo-engine backtest report"
#define REPORT_FORMAT_VERSION 1
enum { EVAL_SEED_STREAM = 16 };  // rng_stream_seed(run seed, 16 + k): sampled and random passes' seeds

void eval_run_options_default(EvalRunOptions *o) {
  memset(o, 0, sizeof *o);
  o->sampled_seeds = 8;
  o->random_seeds = 32;
  o->bootstrap_samples = 1000;
  o->plot = true;
}

// --- the report's fields, by name ----------------------------------------------------------------

typedef struct {
  const char *name;
  size_t offset;
  char type;  // 'd' double, 'i' int64_t
} ReportField;

#define RD(name, member) \
  { name, offsetof(Report, member), 'd' }
#define RI(name, member) \
  { name, offsetof(Report, member), 'i' }
static const ReportField report_fields[] = {
    RI("steps", m.n),
    RD("years", m.years),
    RD("periods_per_year", m.periods_per_year),
    RD("total_return", m.total_return),
    RD("cagr", m.cagr),
    RD("ann_vol", m.ann_vol),
    RD("sharpe", m.sharpe),
    RD("sharpe_per_bar", m.sharpe_per_bar),
    RD("sortino", m.sortino),
    RD("max_drawdown", m.max_drawdown),
    RI("underwater_bars", m.underwater_bars),
    RD("underwater_days", underwater_days),
    RD("calmar", m.calmar),
    RD("turnover_per_bar", turnover_per_bar),
    RD("turnover_annual", turnover_annual),
    RD("notional_turnover", notional_turnover),
    RD("exposure", exposure),
    RD("mean_abs_position", mean_abs_position),
    RD("long_share", long_share),
    RD("short_share", short_share),
    RI("n_trades", n_trades),
    RD("mean_hold_bars", mean_hold_bars),
    RD("trades_per_year", trades_per_year),
    RD("hit_rate", hit_rate),
    RD("bar_hit_rate", bar_hit_rate),
    RD("payoff_ratio", payoff_ratio),
    RD("profit_factor", profit_factor),
    RD("gross_return", gross_return),
    RD("net_return", net_return),
    RD("cost_spread_pct", cost_spread_pct),
    RD("cost_slippage_pct", cost_slippage_pct),
    RD("cost_commission_pct", cost_commission_pct),
    RD("cost_financing_pct", cost_financing_pct),
    RD("cost_total_pct", cost_total_pct),
    RD("cost_bp_per_trade", cost_bp_per_trade),
    RD("skewness", skewness),
    RD("kurtosis", kurtosis),
    RD("sharpe_se", sharpe_se),
    RD("psr0", psr0),
    RD("dsr", dsr),
    RD("sharpe_ci_lo", sharpe_ci_lo),
    RD("sharpe_ci_hi", sharpe_ci_hi),
    RD("total_return_ci_lo", total_return_ci_lo),
    RD("total_return_ci_hi", total_return_ci_hi),
};
#define N_FIELDS ((int)(sizeof report_fields / sizeof report_fields[0]))

static double field_value(const Report *r, int f) {
  const char *base = (const char *)r + report_fields[f].offset;
  if (report_fields[f].type == 'i') {
    int64_t v;
    memcpy(&v, base, sizeof v);
    return (double)v;
  }
  double v;
  memcpy(&v, base, sizeof v);
  return v;
}

static void json_report(JsonWriter *w, const Report *r) {
  json_object_begin(w);
  for (int f = 0; f < N_FIELDS; f++) {
    if (report_fields[f].type == 'i')
      json_kv_int(w, report_fields[f].name, (int64_t)field_value(r, f));
    else
      json_kv_number(w, report_fields[f].name, field_value(r, f));
  }
  json_object_end(w);
}

// Mean and sd (ddof 1) of every field over the reports, finite values only.
static void json_group(JsonWriter *w, const Report *reports, int count) {
  json_object_begin(w);
  json_kv_int(w, "passes", count);
  for (int which = 0; which < 2; which++) {
    json_key(w, which == 0 ? "mean" : "sd");
    json_object_begin(w);
    for (int f = 0; f < N_FIELDS; f++) {
      double sum = 0, sq = 0;
      int n = 0;
      for (int k = 0; k < count; k++) {
        double v = field_value(&reports[k], f);
        if (isfinite(v)) sum += v, n++;
      }
      double mean = n ? sum / n : NAN;
      for (int k = 0; k < count; k++) {
        double v = field_value(&reports[k], f);
        if (isfinite(v)) sq += (v - mean) * (v - mean);
      }
      json_kv_number(w, report_fields[f].name, which == 0 ? mean : (n > 1 ? sqrt(sq / (n - 1)) : NAN));
    }
    json_object_end(w);
  }
  json_object_end(w);
}

// --- small file helpers ----------------------------------------------------------------------------

// FNV-1a 64 of a file's bytes and its size: the checkpoint's identity in the report.
static int file_fingerprint(const char *path, uint64_t *hash, int64_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    error_set("%s: cannot open: %s", path, strerror(errno));
    return -1;
  }
  uint64_t h = 0xcbf29ce484222325ull;
  int64_t n = 0;
  unsigned char buf[1 << 16];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
    for (size_t i = 0; i < got; i++) h = (h ^ buf[i]) * 0x100000001b3ull;
    n += (int64_t)got;
  }
  fclose(f);
  *hash = h;
  *size = n;
  return 0;
}

static const char *time_text(int64_t ts, char *buf, size_t capacity) { return utc_format(ts, false, buf, capacity); }

// A metric as ppo-eval prints it for people: `digits` decimals (a + sign first with `sign`), or n/a
// when it is NaN or infinite, as report.json has null there. printf's nan, -nan and inf (a flat
// price series has no volatility, so no Sharpe) read like numbers and differ between C libraries.
// From 1e6 on the value takes exponent notation, 3 significant digits: the zero-cost oracle's CAGR
// on minute bars (1e90 %, finite) printed 91 digits and pushed the rest of its row out of line.
// In a column (width > 0) a text that is still wider drops decimals, then exponent digits, until it
// fits. report.json keeps every value exact.
static const char *metric_text(char *buf, size_t capacity, double v, int digits, int width, bool sign) {
  if (!isfinite(v)) {
    snprintf(buf, capacity, "n/a");
    return buf;
  }
  if (fabs(v) < 1e6)
    for (int d = digits; d >= 0; d--)
      if (snprintf(buf, capacity, sign ? "%+.*f" : "%.*f", d, v) <= width || width <= 0) return buf;
  for (int p = 3; p >= 1; p--)
    if (snprintf(buf, capacity, sign ? "%+.*g" : "%.*g", p, v) <= width || width <= 0) return buf;
  return buf;
}

// --- one evaluation ----------------------------------------------------------------------------------

// Everything one checkpoint's evaluation holds.
typedef struct {
  Config cfg;     // the evaluation's configuration (market, costs, [eval])
  Config stored;  // the checkpoint's (network, normalisation)
  EnvMarket market;
  Backend *backend;
  Policy *policy;
  VecNormalize norm;
  bool norm_ready;
  CheckpointInfo info;
  uint64_t fingerprint;
  int64_t checkpoint_bytes;
  TradingSplit split;
  // passes: [0] greedy, [1..S] sampled, then the baselines, the random passes, the stress passes
  BacktestPassSpec *specs;
  BacktestPass *passes;
  Report *reports;
  int n_passes, pass_capacity;  // passes added; the arrays' length (evaluation_pass_count)
  int first_sampled, n_sampled, bh, flat, ma, oracle, first_random, n_random, first_stress;
  double cost_mult;          // the configuration's m
  bool features_as_trained;  // the feature keys equal the checkpoint's (evaluation_check_features)
} Evaluation;

static const double stress_factors[] = {0.0, 1.0, 2.0};
enum { N_STRESS = 3, STRESS_PER_FACTOR = 3 };  // agent greedy, buy-and-hold, MA rule

static void evaluation_free(Evaluation *ev) {
  for (int k = 0; k < ev->n_passes; k++) backtest_pass_free(&ev->passes[k]);
  free(ev->passes);
  free(ev->specs);
  free(ev->reports);
  if (ev->norm_ready) vecnorm_free(&ev->norm);
  policy_free(ev->policy);
  if (ev->backend) backend_close(ev->backend);
  env_market_close(&ev->market);
}

static int parse_split(const char *text, TradingSplit *out) {
  const char *names[] = {"train", "val", "test"};
  for (int k = 0; k < 3; k++)
    if (strcmp(text, names[k]) == 0) {
      *out = (TradingSplit)k;
      return 0;
    }
  error_set("--split %s: train, val or test allowed", text);
  return -1;
}

// The passes of one evaluation: the greedy agent, the sampled agents, buy-and-hold, flat, MA rule,
// oracle, the random policies, and the stress passes (agent, buy-and-hold, MA rule per factor).
static int evaluation_pass_count(const EvalRunOptions *o) {
  return 1 + o->sampled_seeds + 4 + o->random_seeds + N_STRESS * STRESS_PER_FACTOR;
}

// evaluation_pass_count sized the arrays: a pass added without counting it there would write past them.
static void add_pass(Evaluation *ev, BacktestStrategy s, uint64_t seed, double mult) {
  CHECK(ev->n_passes < ev->pass_capacity, "evaluation_pass_count does not count every pass evaluation_run adds");
  ev->specs[ev->n_passes++] = (BacktestPassSpec){.strategy = s, .seed = seed, .cost_mult = mult};
}

// [run] memory_limit, as ppo-train applies it to its plan: the evaluation's memory (the market and
// its features, the passes with their per-step arrays and records, the policy, on the backend or the
// host alike) over the limit is refused before the policy and the passes are allocated. 0, or -1
// and the message.
static int evaluation_check_limit(const Evaluation *ev, const BacktestSetup *probe, const PolicySpec *ps, int passes,
                                  double pass_records) {
  const int64_t limit = ev->cfg.run.memory_limit;
  if (limit <= 0) return 0;
  size_t host = 0, backend = 0;
  if (backtest_workspace_bytes(probe, passes, ps->max_batch, ps->action_dim, &host, &backend) != 0) return -1;
  const int64_t rows = ev->market.data->rows;
  const double market = (double)market_data_bytes(rows) + (double)features_bytes(rows);
  const double run = (double)host + (double)backend + pass_records, policy = (double)policy_plan(ps).total;
  const double need = market + run + policy;
  if (need <= (double)limit) return 0;
  char where[512];
  error_set(
      "%s: the evaluation needs %.0f bytes (%.1f MiB: market and features %.1f, %d passes %.1f, policy %.1f) but "
      "the limit is %lld bytes; fewer passes (--seeds, --random-seeds), or raise the limit",
      config_describe_key(&ev->cfg, "run", "memory_limit", where, sizeof where), need, need / 1048576.0,
      market / 1048576.0, passes, run / 1048576.0, policy / 1048576.0, (long long)limit);
  return -1;
}

// The features' keys other than the checkpoint's (by --set or --config; a window of another size is
// refused later, by the networks' input size): the policy then sees observations computed otherwise
// than in its training (and the MA rule's signal and the slippage's volatility change with them).
// Warned of, and report.json's "features" says so (as_trained). The keys as written: an auto value
// resolves by the data evaluated (features_params_resolve), and the training's data is not stored.
// A feature key added to the schema belongs in this list and in write_report_json's section.
static void evaluation_check_features(Evaluation *ev) {
  static const char *const keys[] = {"sigma_halflife", "ema_fast", "ema_slow"};
  ev->features_as_trained = true;
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    const int i = config_key_index("env", keys[k]);
    char where[512], trained[64], now[64];  // INI texts: one per value (config_write_ini's round trip)
    if (strcmp(config_value_text(&ev->stored, i, trained, sizeof trained),
               config_value_text(&ev->cfg, i, now, sizeof now)) == 0)
      continue;
    log_warn(
        "ppo-eval: %s differs from the checkpoint's %s: the policy's observations are computed with it, not as "
        "in its training",
        config_describe_key(&ev->cfg, "env", keys[k], where, sizeof where), trained);
    ev->features_as_trained = false;
  }
}

// Configuration, market, policy and normaliser; returns an exit status (0 = ready).
static int evaluation_open(Evaluation *ev, const EvalRunOptions *o, const char *checkpoint, TradingSplit split) {
  memset(ev, 0, sizeof *ev);
  ev->split = split;
  if (checkpoint_read_config(checkpoint, &ev->stored, o->config_path ? NULL : &ev->cfg, o->n_overrides, o->overrides) !=
      0)
    return EXIT_BAD_INPUT;
  if (o->config_path && config_load(&ev->cfg, o->config_path, o->n_overrides, o->overrides) != 0) return EXIT_BAD_INPUT;
  if (!config_env_has_market(ev->stored.env.type)) {
    error_set("%s: the checkpoint's env is %s; ppo-eval backtests trading and synthetic envs", checkpoint,
              config_choice_name("env", "type", (int)ev->stored.env.type));
    return EXIT_BAD_INPUT;
  }
  if (!config_env_has_market(ev->cfg.env.type)) {  // the checkpoint's is a market: name what chose the other
    char where[512];
    config_describe_key(&ev->cfg, "env", "type", where, sizeof where);
    error_set(
        "%s: the evaluation's env is %s, the checkpoint's (%s) a market; ppo-eval backtests trading and "
        "synthetic envs",
        where, config_choice_name("env", "type", (int)ev->cfg.env.type), checkpoint);
    return EXIT_BAD_INPUT;
  }
  if (file_fingerprint(checkpoint, &ev->fingerprint, &ev->checkpoint_bytes) != 0) return EXIT_BAD_INPUT;
  evaluation_check_features(ev);
  trainer_apply_threads(ev->cfg.run.threads);
  if (env_market_open(&ev->market, &ev->cfg) != 0) return EXIT_BAD_INPUT;
  EnvSpec spec;
  if (trading_kind.describe(&spec, NULL, &ev->market.context) != 0) return EXIT_BAD_INPUT;
  ev->backend = backend_open(ev->cfg.run.device == CONFIG_DEVICE_CUDA  ? "cuda"
                             : ev->cfg.run.device == CONFIG_DEVICE_CPU ? "cpu"
                                                                       : "auto");
  if (!ev->backend) {
    error_prepend("[run] device: ");
    return EXIT_BAD_INPUT;
  }
  backend_set_tf32(ev->backend, ev->cfg.run.tf32);
  // The network is the checkpoint's: its [policy] keys and precision, on this market's env spec.
  PolicySpec ps = trainer_policy_spec(&ev->stored, &spec);
  ps.max_batch = 1 + o->sampled_seeds + N_STRESS;
  if (policy_spec_check(&ps) != 0) {
    error_prepend("%s: [policy]: ", checkpoint);
    return EXIT_BAD_INPUT;
  }
  // The passes' arrays and reports and the policy's batch of agent rows all grow with --seeds and
  // --random-seeds: refused before allocating any of them when they cannot fit.
  const int passes = evaluation_pass_count(o);
  const double pass_records =
      (double)passes * (double)(sizeof(BacktestPassSpec) + sizeof(BacktestPass) + sizeof(Report));
  BacktestSetup probe = {.base = &ev->market.context, .split = split};
  // The policy's slabs are host memory on the CPU backend only (on CUDA, policy_init's device
  // allocation says when they do not fit).
  const bool policy_on_host = strcmp(backend_name(ev->backend), "cpu") == 0;
  const double policy_host = policy_on_host ? (double)policy_plan(&ps).total : 0.0;
  if (evaluation_check_limit(ev, &probe, &ps, passes, pass_records) != 0) return EXIT_BAD_INPUT;
  if (backtest_check_memory(&probe, passes, policy_host + pass_records) != 0) return EXIT_BAD_INPUT;
  ev->policy = policy_init(ev->backend, &ps);
  if (!ev->policy) return EXIT_BAD_INPUT;
  const ConfigNormalize *nz = &ev->stored.normalize;
  if (vecnorm_init(&ev->norm, (int)ev->stored.env.n_envs, spec.obs_dim, nz->obs, nz->reward, nz->clip_obs,
                   nz->clip_reward, nz->epsilon, ev->stored.ppo.gamma) != 0)
    return EXIT_BAD_INPUT;
  ev->norm_ready = true;
  int loaded = checkpoint_load_policy(checkpoint, &ev->stored, ev->policy, &ev->norm, &ev->info);
  if (loaded == CHECKPOINT_OTHER_SHAPE) {  // the env settings that decide the network's input and output
    char what[2048];
    snprintf(what, sizeof what, "%s", error_message());
    char actions[64];
    if (spec.action_kind == ENV_ACTION_DISCRETE)
      snprintf(actions, sizeof actions, "%d actions", spec.action_count);
    else
      snprintf(actions, sizeof actions, "%d continuous action%s", spec.action_dim, spec.action_dim == 1 ? "" : "s");
    error_set(
        "%s (the evaluated [env] gives %d observations per step and %s; window, action_mode, n_levels, "
        "position_onehot and episode_progress must be the training run's)",
        what, spec.obs_dim, actions);
    return EXIT_BAD_INPUT;
  }
  if (loaded != 0) return EXIT_BAD_INPUT;
  return 0;
}

// The report's settings from [eval] (risk-free rate, MAR, trials) and the bootstrap count.
static ReportOptions report_options_for(const Config *cfg, const EvalRunOptions *o) {
  ReportOptions ro = report_options_default();
  ro.rf = cfg->eval.risk_free_rate;
  ro.mar = cfg->eval.min_acceptable_return;
  ro.n_trials = cfg->eval.n_trials;
  ro.bootstrap_samples = o->bootstrap_samples;
  ro.seed = rng_stream_seed((uint64_t)cfg->run.seed, EVAL_SEED_STREAM - 1);
  return ro;
}

static int evaluation_run(Evaluation *ev, const EvalRunOptions *o) {
  const int S = o->sampled_seeds, R = o->random_seeds;
  const int cap = ev->pass_capacity = evaluation_pass_count(o);
  ev->specs = calloc((size_t)cap, sizeof *ev->specs);
  ev->passes = calloc((size_t)cap, sizeof *ev->passes);
  ev->reports = calloc((size_t)cap, sizeof *ev->reports);
  CHECK(ev->specs && ev->passes && ev->reports, "out of host memory (evaluation)");
  const double m = ev->cfg.env.cost_mult;
  const uint64_t seed = (uint64_t)ev->cfg.run.seed;
  ev->cost_mult = m;
  add_pass(ev, BT_AGENT_GREEDY, 0, m);
  ev->first_sampled = ev->n_passes;
  for (int k = 0; k < S; k++) add_pass(ev, BT_AGENT_SAMPLED, rng_stream_seed(seed, EVAL_SEED_STREAM + (uint64_t)k), m);
  ev->n_sampled = S;
  ev->bh = ev->n_passes;
  add_pass(ev, BT_BUY_AND_HOLD, 0, m);
  ev->flat = ev->n_passes;
  add_pass(ev, BT_FLAT, 0, m);
  ev->ma = ev->n_passes;
  add_pass(ev, BT_MA_RULE, 0, m);
  ev->oracle = ev->n_passes;
  add_pass(ev, BT_ORACLE, 0, 0.0);
  ev->first_random = ev->n_passes;
  for (int k = 0; k < R; k++) add_pass(ev, BT_RANDOM, rng_stream_seed(seed, EVAL_SEED_STREAM + 1000 + (uint64_t)k), m);
  ev->n_random = R;
  ev->first_stress = ev->n_passes;
  for (int f = 0; f < N_STRESS; f++) {
    add_pass(ev, BT_AGENT_GREEDY, 0, stress_factors[f] * m);
    add_pass(ev, BT_BUY_AND_HOLD, 0, stress_factors[f] * m);
    add_pass(ev, BT_MA_RULE, 0, stress_factors[f] * m);
  }
  BacktestSetup setup = {.base = &ev->market.context, .split = ev->split, .policy = ev->policy, .norm = &ev->norm};
  if (backtest_run(&setup, ev->specs, ev->n_passes, ev->passes) != 0) return EXIT_BAD_INPUT;
  ReportOptions ro = report_options_for(&ev->cfg, o);
  for (int k = 0; k < ev->n_passes; k++) {
    ReportOptions rk = ro;
    // The bootstrap CI matters for the agent; the many baseline passes skip it (their means are reported).
    if (ev->specs[k].strategy == BT_RANDOM || ev->specs[k].strategy == BT_AGENT_SAMPLED || k >= ev->first_stress)
      rk.bootstrap_samples = 0;
    if (report_compute(&ev->reports[k], &ev->passes[k].input, &rk) != 0) return EXIT_RUNTIME;
  }
  return 0;
}

// --- outputs -------------------------------------------------------------------------------------------

static void json_pass(JsonWriter *w, const Evaluation *ev, int k) {
  const BacktestPass *p = &ev->passes[k];
  json_object_begin(w);
  json_kv_string(w, "strategy", backtest_strategy_name(p->spec.strategy));
  json_kv_number(w, "cost_mult", p->spec.cost_mult);
  json_kv_bool(w, "terminated_by_max_loss", p->terminated);
  if (p->terminated) json_kv_int(w, "stopped_at_step", p->stop_step);
  json_kv_number(w, "ledger_equity_max_abs_error", backtest_ledger_check(p));
  json_key(w, "metrics");
  json_report(w, &ev->reports[k]);
  json_object_end(w);
}

// The config's names (ppo/env_config.c asserts the trading and config enums in step).
static const char *exec_name(TradingExec e) { return config_choice_name("env", "exec", (int)e); }
static const char *action_mode_name(TradingActionMode a) { return config_choice_name("env", "action_mode", (int)a); }

static void write_report_json(FILE *out, const Evaluation *ev, const char *checkpoint, const EvalRunOptions *o) {
  const TradingContext *c = &ev->market.context;
  const MarketData *d = c->data;
  const BacktestPass *g = &ev->passes[ev->flat];  // the whole pass: flat never stops early
  char a[64], b[64];
  JsonWriter w;
  json_init(&w, out);
  json_object_begin(&w);
  json_kv_string(&w, "format", REPORT_FORMAT);
  json_kv_int(&w, "format_version", REPORT_FORMAT_VERSION);
  json_kv_string(&w, "build", PPO_BUILD_INFO);

  json_key(&w, "checkpoint");
  json_object_begin(&w);
  char real[PATH_MAX];
  json_kv_string(&w, "path", checkpoint);
  json_kv_string(&w, "realpath", realpath(checkpoint, real) ? real : checkpoint);
  json_kv_int(&w, "bytes", ev->checkpoint_bytes);
  char hash[32];
  snprintf(hash, sizeof hash, "%016llx", (unsigned long long)ev->fingerprint);
  json_kv_string(&w, "fnv1a64", hash);
  json_kv_int(&w, "format_version", ev->info.format_version);
  json_kv_int(&w, "iteration", ev->info.iteration);
  json_kv_int(&w, "timesteps", ev->info.timesteps);
  json_kv_string(&w, "build", ev->info.build);
  json_kv_string(&w, "run_name", ev->stored.run.name);
  // the policy's arithmetic in this evaluation: the checkpoint's [run] precision (not a --set key)
  json_kv_string(&w, "precision", config_choice_name("run", "precision", (int)ev->stored.run.precision));
  json_object_end(&w);

  json_key(&w, "data");
  json_object_begin(&w);
  json_kv_string(&w, "source", d->source);
  json_kv_string(&w, "symbol", d->symbol);
  json_kv_string(&w, "timezone", d->timezone);
  json_kv_string(&w, "split", trading_split_name(ev->split));
  json_kv_string(&w, "split_first_bar", time_text(d->ts[c->split_lo[ev->split]], a, sizeof a));
  json_kv_string(&w, "split_last_bar", time_text(d->ts[c->split_hi[ev->split] - 1], b, sizeof b));
  json_kv_string(&w, "first_decision_bar", time_text(g->ts[0], a, sizeof a));
  json_kv_string(&w, "last_mark", time_text(g->ts[g->n], b, sizeof b));
  json_kv_int(&w, "steps", g->n);
  json_kv_int(&w, "bar_seconds", d->bar_seconds);
  json_object_end(&w);

  json_key(&w, "features");  // what the observations were computed with (resolved values)
  json_object_begin(&w);
  json_kv_int(&w, "count", c->features->count);
  json_kv_int(&w, "window", c->window);
  json_kv_number(&w, "sigma_halflife", c->features->params.sigma_halflife);
  json_kv_int(&w, "ema_fast", c->features->params.ema_fast);
  json_kv_int(&w, "ema_slow", c->features->params.ema_slow);
  json_kv_bool(&w, "as_trained", ev->features_as_trained);
  json_object_end(&w);

  json_key(&w, "execution");
  json_object_begin(&w);
  json_kv_string(&w, "exec", exec_name(c->params.exec));
  json_kv_string(&w, "action_mode", action_mode_name(c->params.action_mode));
  json_kv_number(&w, "max_leverage", c->params.max_leverage);
  json_kv_bool(&w, "long_only", c->params.long_only);
  json_kv_number(&w, "cost_mult", ev->cost_mult);
  json_kv_bool(&w, "use_data_spread", c->params.use_data_spread != 0);
  json_kv_number(&w, "half_spread_bps", c->params.half_spread_bps);
  json_kv_number(&w, "commission_bps", c->params.commission_bps);
  json_kv_number(&w, "slippage_bps", c->params.slippage_bps);
  json_kv_number(&w, "slippage_vol_k", c->params.slippage_vol_k);
  json_kv_number(&w, "slippage_random_max_bps", c->params.slippage_random_max_bps);
  json_kv_number(&w, "fee_fixed", c->params.fee_fixed);
  json_kv_number(&w, "financing_long_apr", c->params.financing_long_apr);
  json_kv_number(&w, "financing_short_apr", c->params.financing_short_apr);
  // The auto costs that are generic guesses for a symbol without cost defaults (the keys that set them).
  const char *generic[3];
  const int n_generic = env_market_generic_cost_keys(&ev->market, generic);
  json_key(&w, "generic_cost_defaults");
  json_array_begin(&w);
  for (int k = 0; k < n_generic; k++) json_string(&w, generic[k]);
  json_array_end(&w);
  json_kv_number(&w, "max_loss", c->params.max_loss);
  json_object_end(&w);

  json_key(&w, "options");
  json_object_begin(&w);
  json_kv_number(&w, "risk_free_rate", ev->cfg.eval.risk_free_rate);
  json_kv_number(&w, "min_acceptable_return", ev->cfg.eval.min_acceptable_return);
  json_kv_int(&w, "n_trials", ev->cfg.eval.n_trials);
  json_kv_int(&w, "bootstrap_samples", o->bootstrap_samples);
  json_kv_number(&w, "bootstrap_block_mean", ev->reports[0].block_mean);
  json_kv_int(&w, "sampled_seeds", o->sampled_seeds);
  json_kv_int(&w, "random_seeds", o->random_seeds);
  json_kv_bool(&w, "observation_normalisation", ev->stored.normalize.obs);
  json_object_end(&w);

  json_key(&w, "agent");
  json_object_begin(&w);
  json_key(&w, "greedy");
  json_pass(&w, ev, 0);
  json_key(&w, "sampled");
  json_group(&w, ev->reports + ev->first_sampled, ev->n_sampled);
  json_object_end(&w);

  json_key(&w, "baselines");
  json_object_begin(&w);
  json_key(&w, "buy_and_hold");
  json_pass(&w, ev, ev->bh);
  json_key(&w, "flat");
  json_pass(&w, ev, ev->flat);
  json_key(&w, "random");
  json_group(&w, ev->reports + ev->first_random, ev->n_random);
  json_key(&w, "ma_rule");
  json_pass(&w, ev, ev->ma);
  json_key(&w, "oracle_zero_cost");
  json_pass(&w, ev, ev->oracle);
  json_object_end(&w);

  json_key(&w, "cost_stress");
  json_array_begin(&w);
  for (int f = 0; f < N_STRESS; f++) {
    int k = ev->first_stress + f * STRESS_PER_FACTOR;
    json_object_begin(&w);
    json_kv_number(&w, "factor", stress_factors[f]);
    json_kv_number(&w, "cost_mult", ev->specs[k].cost_mult);
    const char *names[] = {"agent_greedy", "buy_and_hold", "ma_rule"};
    for (int j = 0; j < STRESS_PER_FACTOR; j++) {
      json_key(&w, names[j]);
      json_report(&w, &ev->reports[k + j]);
    }
    json_object_end(&w);
  }
  json_array_end(&w);
  json_object_end(&w);
  json_finish(&w);
}

// equity.csv: the greedy agent per bar, and buy-and-hold on the same bars.
static void write_equity_csv(FILE *out, const BacktestPass *g, const BacktestPass *bh) {
  fprintf(out,
          "time,price,position,equity,drawdown,cost,cost_spread,cost_slippage,cost_commission,cost_financing,"
          "buy_and_hold_equity,buy_and_hold_drawdown\n");
  double peak = g->equity[0], bh_peak = bh->equity[0];
  char t[64];
  for (int64_t i = 0; i <= g->n; i++) {
    if (g->equity[i] > peak) peak = g->equity[i];
    double cost = g->cost_spread[i] + g->cost_slippage[i] + g->cost_commission[i] + g->cost_financing[i];
    double bh_equity = bh->equity[i <= bh->n ? i : bh->n];
    if (bh_equity > bh_peak) bh_peak = bh_equity;
    fprintf(out, "%s,%.10g,%.10g,%.17g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.17g,%.10g\n",
            time_text(g->ts[i], t, sizeof t), g->price[i], g->position[i], g->equity[i], 1.0 - g->equity[i] / peak,
            cost, g->cost_spread[i], g->cost_slippage[i], g->cost_commission[i], g->cost_financing[i], bh_equity,
            1.0 - bh_equity / bh_peak);
  }
}

// The time of the fill that step booked (the forced close when `forced`): trades are dated by fills.
static int64_t fill_time(const BacktestPass *g, int64_t step, bool forced) {
  int64_t lo = 0, hi = g->n_fills;  // fills are in step order: the first with step >= `step`
  while (lo < hi) {
    int64_t mid = (lo + hi) / 2;
    if (g->fills[mid].step < step)
      lo = mid + 1;
    else
      hi = mid;
  }
  for (int64_t k = lo; k < g->n_fills && g->fills[k].step == step; k++)
    if (g->fills[k].forced == forced) return g->fills[k].ts;
  return g->ts[step];
}

static void write_trades_csv(FILE *out, const BacktestPass *g) {
  fprintf(out,
          "trade,side,entry_time,exit_time,entry_price,exit_price,bars,entry_equity,exit_equity,net_pnl,return,"
          "cost\n");
  char a[64], b[64];
  for (int64_t k = 0; k < g->n_trades; k++) {
    const ReportTrade *t = &g->trades[k];
    // The last trade of a pass that ends in a position is closed by the forced close.
    bool forced = k == g->n_trades - 1 && g->n_fills > 0 && g->fills[g->n_fills - 1].forced;
    fprintf(out, "%lld,%s,%s,%s,%.10g,%.10g,%lld,%.17g,%.17g,%.17g,%.10g,%.10g\n", (long long)(k + 1),
            t->side > 0 ? "long" : "short", time_text(fill_time(g, t->entry_step, false), a, sizeof a),
            time_text(fill_time(g, t->exit_step, forced), b, sizeof b), t->entry_price, t->exit_price,
            (long long)t->bars, t->entry_equity, t->exit_equity, t->net_pnl, t->net_pnl / t->entry_equity, t->cost);
  }
}

static void write_fills_csv(FILE *out, const BacktestPass *g) {
  fprintf(out, "step,fill_time,forced_close,units,price,mid,spread,slippage,commission\n");
  char a[64];
  for (int64_t k = 0; k < g->n_fills; k++) {
    const BacktestFill *f = &g->fills[k];
    fprintf(out, "%lld,%s,%d,%.17g,%.17g,%.17g,%.10g,%.10g,%.10g\n", (long long)f->step, time_text(f->ts, a, sizeof a),
            f->forced ? 1 : 0, f->units, f->price, f->mid, f->spread, f->slippage, f->commission);
  }
}

// dir/name into out; -1 and the error message when it does not fit.
static int join_path(char *out, size_t capacity, const char *dir, const char *name) {
  int n = snprintf(out, capacity, "%s/%s", dir, name);
  if (n < 0 || (size_t)n >= capacity) {
    error_set("%s/%s: path longer than %zu bytes", dir, name, capacity - 1);
    return -1;
  }
  return 0;
}

// One file of an output set: its name in the directory and what writes it.
typedef struct {
  const char *name;
  void (*fn)(FILE *, const void *);
  const void *arg;
} OutputFile;

enum { OUTPUT_SET_MAX = 8 };

// Writes files[0..count) into dir as one set with the `done` files set[0..done) the caller has
// already written and finished (common/atomic_file.h): each under its temporary name, and only when
// every one is written and flushed to disk are they all renamed into place, in order (report.json
// last). Just before the renames the files named by stale[0..n_stale) are removed from dir: an
// earlier evaluation's files that this set does not replace (its equity.png, drawn only after the
// set is in place, or equity.gp and equity.png under --no-plot), so that a stop at any point after
// (a signal while gnuplot draws) cannot leave them beside this set's report.json. On a failure (a
// full disk) none is published and none removed, every temporary file of the set is removed, and
// the message says which file failed. 0, or -1 and the message.
static int write_output_set(const char *dir, AtomicFile *set, int done, const OutputFile *files, int count,
                            const char *const *stale, int n_stale) {
  CHECK(done + count <= OUTPUT_SET_MAX, "an output set of more than OUTPUT_SET_MAX files");
  int n = done, rc = 0;
  for (int k = 0; k < count && rc == 0; k++) {
    char path[PATH_CAP];
    AtomicFile *af = &set[n++];
    memset(af, 0, sizeof *af);  // aborting one that was never opened does nothing
    if (join_path(path, sizeof path, dir, files[k].name) != 0 || !atomic_file_open(af, path)) {
      rc = -1;
    } else {
      files[k].fn(af->stream, files[k].arg);
      rc = atomic_file_finish(af);
    }
  }
  for (int k = 0; k < n_stale && rc == 0; k++) {
    char path[PATH_CAP];
    struct stat st;
    if (join_path(path, sizeof path, dir, stale[k]) != 0) {
      rc = -1;
    } else if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
      continue;  // not a picture (--no-plot lets a directory there be; check_outputs refuses it otherwise)
    } else if (unlink(path) != 0 && errno != ENOENT) {
      error_set("%s: cannot remove an earlier evaluation's file (it would not match the new report): %s", path,
                strerror(errno));
      rc = -1;
    }
  }
  if (rc == 0) return atomic_file_publish_set(set, n);
  for (int k = 0; k < n; k++) atomic_file_abort(&set[k]);
  return -1;
}

typedef struct {
  const Evaluation *ev;
  const char *checkpoint;
  const EvalRunOptions *o;
} JsonArgs;

static void report_json_fn(FILE *out, const void *arg) {
  const JsonArgs *j = arg;
  write_report_json(out, j->ev, j->checkpoint, j->o);
}
static void equity_csv_fn(FILE *out, const void *arg) {
  const Evaluation *ev = arg;
  write_equity_csv(out, &ev->passes[0], &ev->passes[ev->bh]);
}
static void trades_csv_fn(FILE *out, const void *arg) { write_trades_csv(out, &((const Evaluation *)arg)->passes[0]); }
static void fills_csv_fn(FILE *out, const void *arg) { write_fills_csv(out, &((const Evaluation *)arg)->passes[0]); }

// equity.gp (kept, one of the output set) and equity.png: gnuplot run in `dir` once the set is
// published, the PNG written under a temporary name and renamed (common/gnuplot.h). Columns: csv
// (time in column 1), agent equity column, buy-and-hold column, drawdown column.
typedef struct {
  const char *csv, *title;
  int equity_col, bh_col, dd_col, bh_dd_col;
} PlotSpec;

static void gnuplot_script_fn(FILE *out, const void *arg) {
  const PlotSpec *s = arg;
  char title[1024];  // the market's symbol comes from the data file: any character, a quote too
  gnuplot_quote(title, sizeof title, s->title);
  fprintf(out,
          "# equity.gp: redraw equity.png with `gnuplot equity.gp` in this directory (written by ppo-eval).\n"
          "# ppo-eval itself runs gnuplot -e \"out='.equity.png.tmp.PID'\" equity.gp and renames the result.\n"
          "if (!exists('out')) out = 'equity.png'\n"
          "set terminal pngcairo size 1280,900 noenhanced\n"
          "set output out\n"
          "set datafile separator ','\n"
          "set key top left opaque\n"
          "set xdata time\nset timefmt '%%Y-%%m-%%d %%H:%%M'\nset format x '%%Y-%%m'\n"
          "set autoscale xfix\nset grid\n"
          "set multiplot layout 2,1 title %s\n"
          "set ylabel 'equity (E_0 = 1)'\n"
          "plot '%s' using 1:%d every ::1 with lines lw 1.5 title 'agent (greedy)', '' using 1:%d every ::1 with lines "
          "title 'buy and hold'\n"
          "set key bottom left opaque\nset ylabel 'drawdown %%'\n"
          "plot '%s' using 1:(-100*$%d) every ::1 with filledcurves y1=0 fs transparent solid 0.5 title 'agent', "
          "'' using 1:(-100*$%d) every ::1 with lines title 'buy and hold'\n"
          "unset multiplot\n",
          title, s->csv, s->equity_col, s->bh_col, s->csv, s->dd_col, s->bh_dd_col);
}

// The plot's files (the script is one of the output set, the PNG drawn from it afterwards).
static const char *const plot_outputs[] = {"equity.gp", "equity.png"};

// The earlier files write_output_set removes before it publishes a set (stale, n_stale): with the
// plot, equity.png, drawn only once the set is in place; without it (--no-plot), equity.gp and
// equity.png. No picture from an earlier evaluation then stays beside the new report, whether
// gnuplot fails or ppo-eval is stopped (SIGTERM, SIGKILL) while it draws.
static const char *const *stale_plot_outputs(bool plot_wanted, int *n_stale) {
  *n_stale = plot_wanted ? 1 : 2;
  return plot_wanted ? plot_outputs + 1 : plot_outputs;
}

// With the plot, equity.png drawn from the published equity.gp and its CSV: on any failure a
// warning, and no equity.png (the earlier one was removed with the set's publication).
static void draw_plot(const char *dir, bool plot_wanted) {
  if (plot_wanted && gnuplot_render(dir, "equity.gp", "equity.png") != 0)
    log_warn("ppo-eval: no equity.png: %s", error_message());
}

static void print_summary(FILE *out, const Evaluation *ev) {
  const TradingContext *c = &ev->market.context;
  char a[64], b[64], t[64], t2[64];
  const BacktestPass *g = &ev->passes[ev->flat];  // the whole pass: flat never stops early
  fprintf(out, "%s %s split: %lld steps %s .. %s, exec %s, cost x%g\n", c->data->symbol, trading_split_name(ev->split),
          (long long)g->n, time_text(g->ts[0], a, sizeof a), time_text(g->ts[g->n], b, sizeof b),
          exec_name(c->params.exec), ev->cost_mult);
  fprintf(out, "%-22s %9s %9s %8s %8s %8s %8s %8s\n", "strategy", "total %", "CAGR %", "Sharpe", "Sortino", "MDD %",
          "trades", "cost %");
  struct {
    const char *name;
    int k, count;
  } rows[] = {{"agent greedy", 0, 1},
              {"agent sampled (mean)", ev->first_sampled, ev->n_sampled},
              {"buy and hold", ev->bh, 1},
              {"flat", ev->flat, 1},
              {"random (mean)", ev->first_random, ev->n_random},
              {"MA rule", ev->ma, 1},
              {"oracle (zero cost)", ev->oracle, 1}};
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    if (rows[r].count == 0) continue;
    double v[7] = {0};
    for (int k = rows[r].k; k < rows[r].k + rows[r].count; k++) {
      const Report *rep = &ev->reports[k];
      v[0] += 100 * rep->m.total_return, v[1] += 100 * rep->m.cagr, v[2] += rep->m.sharpe, v[3] += rep->m.sortino;
      v[4] += 100 * rep->m.max_drawdown, v[5] += (double)rep->n_trades, v[6] += rep->cost_total_pct;
    }
    fprintf(out, "%-22s", rows[r].name);
    const int width[7] = {9, 9, 8, 8, 8, 8, 8}, digits[7] = {2, 2, 3, 3, 2, 1, 3};
    for (int j = 0; j < 7; j++)
      fprintf(out, " %*s", width[j], metric_text(t, sizeof t, v[j] / rows[r].count, digits[j], width[j], false));
    fputc('\n', out);
  }
  for (int k = 0; k < ev->n_passes; k++) {
    const BacktestPass *p = &ev->passes[k];
    if (!p->terminated || (p->spec.strategy == BT_RANDOM && k != ev->first_random) ||
        (p->spec.strategy == BT_AGENT_SAMPLED && k != ev->first_sampled) || k >= ev->first_stress)
      continue;
    fprintf(out, "note: %s%s stopped at [env] max_loss = %g on %s (equity %.4f), then held cash to the split's end\n",
            backtest_strategy_name(p->spec.strategy),
            p->spec.strategy == BT_RANDOM || p->spec.strategy == BT_AGENT_SAMPLED ? " (first seed)" : "",
            c->params.max_loss, time_text(p->ts[p->stop_step], a, sizeof a), p->equity[p->stop_step]);
  }
  env_market_print_generic_costs(&ev->market, out, "note: ");
  if (ev->cost_mult == 0.0) fprintf(out, "note: [env] cost_mult = 0: the cost stress has no cost to scale\n");
  for (int f = 0; f < N_STRESS; f++) {
    const Report *r = &ev->reports[ev->first_stress + f * STRESS_PER_FACTOR];
    if (f > 0 && ev->cost_mult == 0.0) break;  // every factor of no cost is the same pass
    fprintf(out, "cost x%-4g agent greedy: total %s %%, Sharpe %s\n",
            ev->specs[ev->first_stress + f * STRESS_PER_FACTOR].cost_mult,
            metric_text(t, sizeof t, 100 * r->m.total_return, 2, 0, false),
            metric_text(t2, sizeof t2, r->m.sharpe, 3, 0, false));
  }
}

// dir exists (evaluate_checkpoint made it). The files are one set (write_output_set): all of them
// or none, report.json last; then the plot.
static int write_outputs(const Evaluation *ev, const char *checkpoint, const EvalRunOptions *o, const char *dir) {
  JsonArgs j = {ev, checkpoint, o};
  char title[256];
  snprintf(title, sizeof title, "%s %s split, cost x%g", ev->market.context.data->symbol, trading_split_name(ev->split),
           ev->cost_mult);
  PlotSpec ps = {.csv = "equity.csv", .title = title, .equity_col = 4, .bh_col = 11, .dd_col = 5, .bh_dd_col = 12};
  OutputFile files[5] = {
      {"trades.csv", trades_csv_fn, ev}, {"fills.csv", fills_csv_fn, ev}, {"equity.csv", equity_csv_fn, ev}};
  int n = 3;
  if (o->plot) files[n++] = (OutputFile){"equity.gp", gnuplot_script_fn, &ps};
  files[n++] = (OutputFile){"report.json", report_json_fn, &j};
  AtomicFile set[OUTPUT_SET_MAX];
  int n_stale;
  const char *const *stale = stale_plot_outputs(o->plot, &n_stale);
  if (write_output_set(dir, set, 0, files, n, stale, n_stale) != 0) return -1;
  draw_plot(dir, o->plot);
  return 0;
}

// RUN/eval/<checkpoint name>_<split>, RUN the checkpoint's run directory.
static void default_out_dir(const char *checkpoint, TradingSplit split, char *out, size_t capacity) {
  char dir[PATH_CAP], stem[PATH_CAP];
  checkpoint_run_dir(checkpoint, dir, sizeof dir);
  const char *slash = strrchr(checkpoint, '/');
  snprintf(stem, sizeof stem, "%s", slash ? slash + 1 : checkpoint);
  char *dot = strrchr(stem, '.');
  if (dot) *dot = '\0';
  if (snprintf(out, capacity, "%s/eval/%s_%s", dir, stem, trading_split_name(split)) >= (int)capacity)
    snprintf(out, capacity, "eval");
}

// Can make_directories(dir) succeed? Its nearest existing ancestor (or dir itself) must be a
// directory this process may write into; a file on the way fails. false with the message otherwise.
static bool directory_can_be_made(const char *dir) {
  char path[PATH_CAP];
  if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
    error_set("%.200s...: path too long", dir);
    return false;
  }
  for (;;) {
    struct stat st;
    if (stat(path, &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        error_set("%s: exists and is not a directory", path);
        return false;
      }
      if (access(path, W_OK | X_OK) != 0) {
        error_set("%s: cannot create %s in it: %s", path, dir, strerror(errno));
        return false;
      }
      return true;
    }
    if (errno != ENOENT) {  // ENOTDIR: a file on the way; EACCES: a directory we cannot search
      error_set("%s: cannot create directory: %s", path, strerror(errno));
      return false;
    }
    char *slash = strrchr(path, '/');
    while (slash && slash > path && slash[1] == '\0') *slash = '\0', slash = strrchr(path, '/');  // trailing '/'
    if (!slash) {
      snprintf(path, sizeof path, ".");  // a relative path's first component: the working directory
    } else {
      slash[slash == path] = '\0';  // "/a" -> "/", "a/b" -> "a"
    }
  }
}

// The files of one checkpoint's evaluation in its output directory (write_outputs), and of a
// walk-forward's in RUN/walk_forward (eval_walk_forward); with plot, equity.gp and equity.png too.
static const char *const checkpoint_outputs[] = {"report.json", "equity.csv", "trades.csv", "fills.csv"};
static const char *const walk_forward_outputs[] = {"report.json", "folds.csv", "oos_equity.csv"};

// Each output file in dir is absent, a regular file or a symbolic link (common/file_check.h), and
// its temporary name fits: a directory (or a FIFO, ...) there, or a path too long for the temporary
// name, failed after the whole backtest (exit 1). 0, or -1 and the message naming the first that is not.
static int check_outputs(const char *dir, const char *const *names, int count, bool plot) {
  char path[PATH_CAP];
  for (int k = 0; k < count + (plot ? 2 : 0); k++) {
    const char *name = k < count ? names[k] : plot_outputs[k - count];
    if (join_path(path, sizeof path, dir, name) != 0 || file_check_output(path, "an output of ppo-eval") != 0 ||
        atomic_file_check_path(path) != 0)
      return -1;
  }
  return 0;
}

static int evaluate_checkpoint(const EvalRunOptions *o, const char *checkpoint, TradingSplit split, const char *dir,
                               Evaluation *ev) {
  int status = evaluation_open(ev, o, checkpoint, split);
  if (status != 0) {
    fprintf(stderr, "ppo-eval: %s\n", error_message());
    return status;
  }
  // An output directory that cannot be made is bad input, found before the backtest runs and
  // without creating anything for a run that may still be refused.
  if (!directory_can_be_made(dir) || check_outputs(dir, checkpoint_outputs, 4, o->plot) != 0) {
    fprintf(stderr, "ppo-eval: %s (%s)\n", error_message(), o->out_dir ? "--out" : "the default output directory");
    return EXIT_BAD_INPUT;
  }
  status = evaluation_run(ev, o);
  if (status != 0) {
    fprintf(stderr, "ppo-eval: %s\n", error_message());
    return status;
  }
  if (make_directories(dir) != 0) {
    fprintf(stderr, "ppo-eval: %s (%s)\n", error_message(), o->out_dir ? "--out" : "the default output directory");
    return EXIT_BAD_INPUT;
  }
  if (write_outputs(ev, checkpoint, o, dir) != 0) {
    fprintf(stderr, "ppo-eval: %s\n", error_message());
    return EXIT_RUNTIME;
  }
  if (!o->quiet) {
    print_summary(stdout, ev);
    printf("report: %s/report.json\n", dir);
  }
  return 0;
}

// --- walk-forward --------------------------------------------------------------------------------------

// fold_NN directories in fold order: by their number (fold_100 after fold_99, not after fold_10).
static int compare_names(const void *a, const void *b) {
  long x = strtol(*(char *const *)a + 5, NULL, 10), y = strtol(*(char *const *)b + 5, NULL, 10);
  return (x > y) - (x < y);
}

// Appends pass p (scaled so that it starts at the chain's end) to chain c.
static void chain_append(BacktestPass *c, const BacktestPass *p) {
  const int64_t start = c->n, add = p->n;
  const double scale = c->capacity == 0 ? 1.0 : c->equity[c->n] / p->equity[0];
  const int64_t need = start + add + 1;
  if (need > c->capacity) {
    int64_t cap = need * 2;
    c->ts = realloc(c->ts, (size_t)cap * sizeof(int64_t));
    c->price = realloc(c->price, (size_t)cap * sizeof(double));
    double *d = calloc((size_t)(8 * cap), sizeof(double));
    CHECK(c->ts && c->price && d, "out of host memory (walk-forward chain)");
    double *old[8] = {c->equity,      c->position,      c->turnover,        c->notional,
                      c->cost_spread, c->cost_slippage, c->cost_commission, c->cost_financing};
    for (int k = 0; k < 8; k++)
      if (c->capacity) memcpy(d + k * cap, old[k], (size_t)(c->n + 1) * sizeof(double));
    free(c->equity);
    c->equity = d, c->position = d + cap, c->turnover = d + 2 * cap, c->notional = d + 3 * cap;
    c->cost_spread = d + 4 * cap, c->cost_slippage = d + 5 * cap, c->cost_commission = d + 6 * cap;
    c->cost_financing = d + 7 * cap;
    if (c->capacity == 0) c->ts[0] = p->ts[0], c->price[0] = p->price[0], c->equity[0] = p->equity[0];
    c->capacity = cap;
  }
  c->trades = realloc(c->trades, (size_t)(c->n_trades + p->n_trades + 1) * sizeof(ReportTrade));
  CHECK(c->trades, "out of host memory (walk-forward chain)");
  for (int64_t i = 1; i <= add; i++) {
    int64_t j = start + i;
    c->ts[j] = p->ts[i];
    c->price[j] = p->price[i];
    c->equity[j] = p->equity[i] * scale;
    c->position[j] = p->position[i];
    c->turnover[j] = p->turnover[i];
    c->notional[j] = p->notional[i] * scale;
    c->cost_spread[j] = p->cost_spread[i] * scale;
    c->cost_slippage[j] = p->cost_slippage[i] * scale;
    c->cost_commission[j] = p->cost_commission[i] * scale;
    c->cost_financing[j] = p->cost_financing[i] * scale;
  }
  for (int64_t k = 0; k < p->n_trades; k++) {
    ReportTrade t = p->trades[k];
    t.entry_step += start, t.exit_step += start;
    t.entry_equity *= scale, t.exit_equity *= scale, t.net_pnl *= scale, t.cost *= scale;
    c->trades[c->n_trades++] = t;
  }
  c->n = start + add;
  backtest_pass_finish_input(c);
}

typedef struct {
  const BacktestPass *agent, *bh;
} ChainArgs;

static void oos_csv_fn(FILE *out, const void *arg) {
  const ChainArgs *a = arg;
  fprintf(out, "time,price,position,equity,drawdown,buy_and_hold_equity,buy_and_hold_drawdown\n");
  double peak = a->agent->equity[0], bh_peak = a->bh->equity[0];
  char t[64];
  int64_t j = 0;  // buy-and-hold's point at the same time (a fold the agent left early at max_loss
                  // makes the two chains differ in length)
  for (int64_t i = 0; i <= a->agent->n; i++) {
    if (a->agent->equity[i] > peak) peak = a->agent->equity[i];
    while (j < a->bh->n && a->bh->ts[j] < a->agent->ts[i]) j++;
    double bh_equity = a->bh->equity[j];
    if (bh_equity > bh_peak) bh_peak = bh_equity;
    fprintf(out, "%s,%.10g,%.10g,%.17g,%.10g,%.17g,%.10g\n", time_text(a->agent->ts[i], t, sizeof t),
            a->agent->price[i], a->agent->position[i], a->agent->equity[i], 1.0 - a->agent->equity[i] / peak, bh_equity,
            1.0 - bh_equity / bh_peak);
  }
}

typedef struct {
  const Report *agent, *bh;
  int folds;
  const char *run;
} ChainJsonArgs;

static void chain_json_fn(FILE *out, const void *arg) {
  const ChainJsonArgs *a = arg;
  JsonWriter w;
  json_init(&w, out);
  json_object_begin(&w);
  json_kv_string(&w, "format", REPORT_FORMAT " (walk-forward)");
  json_kv_int(&w, "format_version", REPORT_FORMAT_VERSION);
  json_kv_string(&w, "build", PPO_BUILD_INFO);
  json_kv_string(&w, "run", a->run);
  json_kv_int(&w, "folds", a->folds);
  json_kv_string(&w, "curve",
                 "each fold's test split, the greedy agent of that fold, chained: a fold starts at the "
                 "previous fold's final equity");
  json_key(&w, "agent_greedy");
  json_report(&w, a->agent);
  json_key(&w, "buy_and_hold");
  json_report(&w, a->bh);
  json_object_end(&w);
  json_finish(&w);
}

static int eval_walk_forward(const EvalRunOptions *o) {
  const char *run = o->walk_forward;
  DIR *dir = opendir(run);
  if (!dir) {
    fprintf(stderr, "ppo-eval: --walk-forward %s: cannot open the directory: %s\n", run, strerror(errno));
    return EXIT_BAD_INPUT;
  }
  char **names = NULL;
  int count = 0;
  struct dirent *de;
  while ((de = readdir(dir))) {
    int idx;
    char tail;
    if (sscanf(de->d_name, "fold_%d%c", &idx, &tail) != 1) continue;
    names = realloc(names, (size_t)(count + 1) * sizeof *names);
    CHECK(names, "out of host memory");
    names[count++] = strdup(de->d_name);
  }
  closedir(dir);
  if (count == 0) {
    fprintf(stderr, "ppo-eval: --walk-forward %s: no fold_NN directories (made by ppo-train --walk-forward)\n", run);
    free(names);
    return EXIT_BAD_INPUT;
  }
  qsort(names, (size_t)count, sizeof *names, compare_names);
  char out_dir[PATH_CAP];
  if (o->out_dir)
    snprintf(out_dir, sizeof out_dir, "%s", o->out_dir);
  else
    snprintf(out_dir, sizeof out_dir, "%s/walk_forward", run);
  int status = 0;
  BacktestPass chain = {0}, chain_bh = {0};
  ReportOptions chain_ro = report_options_default();
  // The walk-forward's files and every fold's (RUN/fold_NN/eval/test), before the first fold is evaluated.
  if (check_outputs(out_dir, walk_forward_outputs, 3, o->plot) != 0) {
    fprintf(stderr, "ppo-eval: %s (%s)\n", error_message(), o->out_dir ? "--out" : "--walk-forward RUN");
    status = EXIT_BAD_INPUT;
  }
  for (int k = 0; k < count && status == 0; k++) {
    char fold_out[PATH_CAP];
    snprintf(fold_out, sizeof fold_out, "%s/%s/eval/test", run, names[k]);
    if (check_outputs(fold_out, checkpoint_outputs, 4, o->plot) != 0) {
      fprintf(stderr, "ppo-eval: %s (fold %s's evaluation)\n", error_message(), names[k]);
      status = EXIT_BAD_INPUT;
    }
  }
  if (status == 0 && make_directories(out_dir) != 0) {
    fprintf(stderr, "ppo-eval: %s (%s)\n", error_message(), o->out_dir ? "--out" : "--walk-forward RUN");
    status = EXIT_BAD_INPUT;
  }
  // folds.csv is written fold by fold as the first file of the output set (write_output_set).
  AtomicFile set[OUTPUT_SET_MAX];
  memset(&set[0], 0, sizeof set[0]);
  char folds_path[PATH_CAP];
  if (status == 0 && join_path(folds_path, sizeof folds_path, out_dir, "folds.csv") != 0) {
    fprintf(stderr, "ppo-eval: %s\n", error_message());
    status = EXIT_BAD_INPUT;
  }
  FILE *folds = status == 0 ? atomic_file_open(&set[0], folds_path) : NULL;
  if (status == 0 && !folds) {
    fprintf(stderr, "ppo-eval: %s\n", error_message());
    status = EXIT_RUNTIME;
  }
  if (folds)
    fprintf(folds,
            "fold,checkpoint,test_first,test_last,steps,total_return,cagr,sharpe,sortino,max_drawdown,n_trades,"
            "cost_total_pct,bh_total_return,bh_sharpe,bh_max_drawdown\n");
  int64_t prev_last = 0;  // the previous fold's last test bar
  for (int k = 0; k < count && status == 0; k++) {
    char ckpt[PATH_CAP], fold_out[PATH_CAP];
    snprintf(ckpt, sizeof ckpt, "%s/%s/best.h5", run, names[k]);
    if (!path_exists(ckpt)) {  // the fold's newest checkpoint: checkpoints/last.h5 or the newest ckpt_NNNNNN.h5
      char fold_dir[PATH_CAP];
      snprintf(fold_dir, sizeof fold_dir, "%s/%s", run, names[k]);
      if (!train_run_latest_checkpoint(fold_dir, ckpt, sizeof ckpt)) ckpt[0] = '\0';
    }
    if (!ckpt[0]) {
      fprintf(stderr, "ppo-eval: --walk-forward: %s/%s has no best.h5 and no checkpoint (not trained yet?)\n", run,
              names[k]);
      status = EXIT_BAD_INPUT;
      break;
    }
    snprintf(fold_out, sizeof fold_out, "%s/%s/eval/test", run, names[k]);
    Evaluation ev;
    EvalRunOptions fo = *o;
    fo.quiet = true;
    status = evaluate_checkpoint(&fo, ckpt, TRADING_SPLIT_TEST, fold_out, &ev);
    // The folds' test windows follow each other: one that starts before the last one ended (a
    // fold copied or linked under another name) would count its bars twice in the chain.
    if (status == 0 && k > 0 && ev.passes[0].ts[0] < prev_last) {
      char a[64], b[64];
      fprintf(stderr,
              "ppo-eval: --walk-forward %s: %s's test window starts at %s, before %s's ended (%s): the folds overlap "
              "(is one a copy of or a link to another?)\n",
              run, names[k], time_text(ev.passes[0].ts[0], a, sizeof a), names[k - 1],
              time_text(prev_last, b, sizeof b));
      status = EXIT_BAD_INPUT;
    }
    if (status == 0) {
      const BacktestPass *g = &ev.passes[0], *bh = &ev.passes[ev.bh];
      prev_last = g->ts[g->n];
      const Report *r = &ev.reports[0], *rb = &ev.reports[ev.bh];
      char a[64], b[64];
      fprintf(folds, "%s,%s,%s,%s,%lld,%.10g,%.10g,%.10g,%.10g,%.10g,%lld,%.10g,%.10g,%.10g,%.10g\n", names[k], ckpt,
              time_text(g->ts[0], a, sizeof a), time_text(g->ts[g->n], b, sizeof b), (long long)g->n, r->m.total_return,
              r->m.cagr, r->m.sharpe, r->m.sortino, r->m.max_drawdown, (long long)r->n_trades, r->cost_total_pct,
              rb->m.total_return, rb->m.sharpe, rb->m.max_drawdown);
      if (!o->quiet) {
        char t[5][64];
        printf("%s: %s .. %s  agent total %s %% Sharpe %s MDD %s %% | buy and hold %s %% Sharpe %s\n", names[k], a, b,
               metric_text(t[0], sizeof t[0], 100 * r->m.total_return, 2, 0, true),
               metric_text(t[1], sizeof t[1], r->m.sharpe, 3, 0, false),
               metric_text(t[2], sizeof t[2], 100 * r->m.max_drawdown, 2, 0, false),
               metric_text(t[3], sizeof t[3], 100 * rb->m.total_return, 2, 0, true),
               metric_text(t[4], sizeof t[4], rb->m.sharpe, 3, 0, false));
      }
      chain_append(&chain, g);
      chain_append(&chain_bh, bh);
      if (k == 0) chain_ro = report_options_for(&ev.cfg, o);  // the first fold's [eval] (--set applies to all)
    }
    evaluation_free(&ev);
  }
  if (status == 0 && atomic_file_finish(&set[0]) != 0) {
    fprintf(stderr, "ppo-eval: %s\n", error_message());
    status = EXIT_RUNTIME;
  }
  if (status == 0) {
    Report ra, rb;
    if (report_compute(&ra, &chain.input, &chain_ro) != 0 || report_compute(&rb, &chain_bh.input, &chain_ro) != 0) {
      fprintf(stderr, "ppo-eval: %s\n", error_message());
      status = EXIT_RUNTIME;
    } else {
      ChainArgs ca = {&chain, &chain_bh};
      ChainJsonArgs cj = {&ra, &rb, count, run};
      PlotSpec ps = {.csv = "oos_equity.csv",
                     .title = "walk-forward, out of sample (chained test splits)",
                     .equity_col = 4,
                     .bh_col = 6,
                     .dd_col = 5,
                     .bh_dd_col = 7};
      OutputFile files[3] = {{"oos_equity.csv", oos_csv_fn, &ca}};
      int n = 1;
      if (o->plot) files[n++] = (OutputFile){"equity.gp", gnuplot_script_fn, &ps};
      files[n++] = (OutputFile){"report.json", chain_json_fn, &cj};
      int n_stale;
      const char *const *stale = stale_plot_outputs(o->plot, &n_stale);
      if (write_output_set(out_dir, set, 1, files, n, stale, n_stale) != 0) {  // folds.csv too, or none
        fprintf(stderr, "ppo-eval: %s\n", error_message());
        status = EXIT_RUNTIME;
      } else {
        draw_plot(out_dir, o->plot);
        if (!o->quiet) {
          char t[5][64];
          printf(
              "walk-forward (%d fold%s, %lld steps out of sample): agent total %s %% Sharpe %s MDD %s %% | "
              "buy and hold %s %% Sharpe %s\nreport: %s/report.json\n",
              count, count == 1 ? "" : "s", (long long)chain.n,
              metric_text(t[0], sizeof t[0], 100 * ra.m.total_return, 2, 0, true),
              metric_text(t[1], sizeof t[1], ra.m.sharpe, 3, 0, false),
              metric_text(t[2], sizeof t[2], 100 * ra.m.max_drawdown, 2, 0, false),
              metric_text(t[3], sizeof t[3], 100 * rb.m.total_return, 2, 0, true),
              metric_text(t[4], sizeof t[4], rb.m.sharpe, 3, 0, false), out_dir);
        }
      }
    }
  }
  if (status != 0) atomic_file_abort(&set[0]);  // folds.csv unless published (or never opened)
  backtest_pass_free(&chain);
  backtest_pass_free(&chain_bh);
  for (int k = 0; k < count; k++) free(names[k]);
  free(names);
  return status;
}

// --- entry -----------------------------------------------------------------------------------------------

static bool listed(const char *key, const char *const *list, size_t n) {
  for (size_t k = 0; k < n; k++)
    if (strcmp(key, list[k]) == 0) return true;
  return false;
}
#define LISTED(key, list) listed(key, list, sizeof list / sizeof list[0])

// What --set may do to a key (EVAL_SET_RULE; declared in eval_run.h). The network ([policy], [run]
// precision), its normalisation ([normalize], with [env] n_envs and [ppo] gamma) and [ppo] are the
// checkpoint's; the [env] keys of episodes and rewards that the backtest does not use, the rest of
// [run] and [eval], [amp] and [walk_forward] only concern training. Overrides of both kinds were
// taken and silently ignored. [env] reward and vol_target_annual stay open: reward = vol_target
// scales the positions the actions take. Every [env] key is in one of the two lists below (or is
// n_envs, or starts with shaping_ or synthetic_): a key added to the schema and to neither is
// EVAL_SET_UNLISTED, which test_eval's every_env_key_has_an_eval_rule catches.
EvalSetKind eval_set_kind(const char *section, const char *key) {
  static const char *const env_training[] = {
      "episode_length", "random_initial_position", "stratified_starts", "reward_scale", "dsr_eta", "reward_clip"};
  static const char *const env_taken[] = {"type",
                                          "data",
                                          "train_start",
                                          "val_start",
                                          "test_start",
                                          "test_end",
                                          "exec",
                                          "action_mode",
                                          "n_levels",
                                          "max_leverage",
                                          "long_only",
                                          "no_trade_band",
                                          "reward",
                                          "vol_target_annual",
                                          "use_data_spread",
                                          "half_spread_bps",
                                          "commission_bps",
                                          "fee_fixed",
                                          "slippage_bps",
                                          "slippage_vol_k",
                                          "slippage_random_max_bps",
                                          "financing_long_apr",
                                          "financing_short_apr",
                                          "impact_y",
                                          "cost_mult",
                                          "window",
                                          "warmup",
                                          "max_loss",
                                          "position_onehot",
                                          "episode_progress",
                                          "sigma_halflife",
                                          "ema_fast",
                                          "ema_slow"};
  static const char *const run_taken[] = {"seed", "device", "threads", "tf32", "memory_limit"};
  static const char *const eval_taken[] = {"risk_free_rate", "min_acceptable_return", "n_trials"};
  if (strcmp(section, "policy") == 0 || strcmp(section, "normalize") == 0 || strcmp(section, "ppo") == 0 ||
      (strcmp(section, "run") == 0 && strcmp(key, "precision") == 0) ||
      (strcmp(section, "env") == 0 && strcmp(key, "n_envs") == 0))
    return EVAL_SET_CHECKPOINT;
  if (strcmp(section, "env") == 0) {
    if (strncmp(key, "shaping_", 8) == 0 || LISTED(key, env_training)) return EVAL_SET_TRAINING;
    if (strncmp(key, "synthetic_", 10) == 0 || LISTED(key, env_taken)) return EVAL_SET_TAKEN;
    return EVAL_SET_UNLISTED;
  }
  if (strcmp(section, "run") == 0 && LISTED(key, run_taken)) return EVAL_SET_TAKEN;
  if (strcmp(section, "eval") == 0 && LISTED(key, eval_taken)) return EVAL_SET_TAKEN;
  return EVAL_SET_TRAINING;  // the rest of [run] and [eval], [amp], [walk_forward]
}

// Whether ppo-eval takes an override: true, or false with the refusal on stderr (exit 2). Malformed
// ones and keys that do not exist pass here; config_load names them.
static bool override_taken(const char *override) {
  const int index = config_override_index(override);
  if (index < 0) return true;  // malformed or unknown: config_load says so
  const ConfigKey *row = &config_schema(&(int){0})[index];
  const char *section = row->section, *key = row->key;
  switch (eval_set_kind(section, key)) {
    case EVAL_SET_TAKEN:
    case EVAL_SET_UNLISTED:
      return true;
    case EVAL_SET_CHECKPOINT:
      fprintf(stderr,
              "ppo-eval: --set %s: the network ([policy], [run] precision), its normalisation ([normalize], [env] "
              "n_envs) and [ppo] come from the checkpoint and cannot be changed for an evaluation; " EVAL_SET_RULE "\n",
              override);
      return false;
    case EVAL_SET_TRAINING:
      fprintf(stderr,
              "ppo-eval: --set %s: [%s] %s only concerns training and has no effect on an evaluation%s; " EVAL_SET_RULE
              "\n",
              override, section, key,
              strcmp(section, "eval") == 0 && strcmp(key, "split") == 0 ? " (the split evaluated is --split's)" : "");
      return false;
  }
  return true;
}

int eval_run(const EvalRunOptions *o) {
  if (o->sampled_seeds < 0 || o->random_seeds < 0 || o->bootstrap_samples < 0) {
    fprintf(stderr, "ppo-eval: --seeds, --random-seeds and --bootstrap take a count >= 0\n");
    return EXIT_BAD_INPUT;
  }
  for (int k = 0; k < o->n_overrides; k++)
    if (!override_taken(o->overrides[k])) return EXIT_BAD_INPUT;
  if (o->walk_forward) return eval_walk_forward(o);
  if (!o->checkpoint) {
    fprintf(stderr, "ppo-eval: --checkpoint CKPT.h5 (or --walk-forward RUN_DIR) is required\n");
    return EXIT_BAD_INPUT;
  }
  TradingSplit split = TRADING_SPLIT_TEST;
  if (o->split && parse_split(o->split, &split) != 0) {
    fprintf(stderr, "ppo-eval: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  char dir[PATH_CAP];
  if (o->out_dir)
    snprintf(dir, sizeof dir, "%s", o->out_dir);
  else
    default_out_dir(o->checkpoint, split, dir, sizeof dir);
  Evaluation ev;
  int status = evaluate_checkpoint(o, o->checkpoint, split, dir, &ev);
  evaluation_free(&ev);
  return status;
}
