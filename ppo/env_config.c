// ppo/env_config.c: Config [env] -> TradingParams, FeatureParams, SyntheticParams (see env_config.h).
#include "ppo/env_config.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/host_memory.h"
#include "common/log.h"
#include "common/text.h"

// The enums list their choices in the same order on both sides, and as many (a choice added at the
// end of one enum only trips the count).
_Static_assert((int)CONFIG_EXEC_CLOSE == (int)TRADING_EXEC_CLOSE && (int)CONFIG_EXEC_CLOSE + 1 == TRADING_EXEC_COUNT,
               "exec enums out of step");
_Static_assert((int)CONFIG_ACTION_TOGGLE2 + 1 == TRADING_ACTION_COUNT, "action enums out of step");
_Static_assert((int)CONFIG_REWARD_VOL_TARGET + 1 == TRADING_REWARD_COUNT, "reward enums out of step");
_Static_assert((int)CONFIG_ACTION_DISCRETE_K == (int)TRADING_ACTION_DISCRETE_K &&
                   (int)CONFIG_ACTION_CONTINUOUS == (int)TRADING_ACTION_CONTINUOUS &&
                   (int)CONFIG_ACTION_TOGGLE2 == (int)TRADING_ACTION_TOGGLE2,
               "action enums out of step");
_Static_assert((int)CONFIG_REWARD_PNL == (int)TRADING_REWARD_PNL && (int)CONFIG_REWARD_DSR == (int)TRADING_REWARD_DSR &&
                   (int)CONFIG_REWARD_D3R == (int)TRADING_REWARD_D3R &&
                   (int)CONFIG_REWARD_VOL_TARGET == (int)TRADING_REWARD_VOL_TARGET,
               "reward enums out of step");
_Static_assert((int)CONFIG_SYNTHETIC_GBM == (int)SYNTHETIC_GBM &&
                   (int)CONFIG_SYNTHETIC_REGIME == (int)SYNTHETIC_REGIME &&
                   (int)CONFIG_SYNTHETIC_AR1 == (int)SYNTHETIC_AR1,
               "synthetic model enums out of step");

static int64_t date_of(ConfigDate d) { return d.is_auto ? TRADING_DATE_AUTO : d.seconds; }
static double real_of(ConfigAutoReal r) { return r.is_auto ? NAN : r.value; }
static int64_t int_of(ConfigAutoInt i) { return i.is_auto ? TRADING_AUTO_INT : i.value; }

void env_config_trading_params(const Config *cfg, TradingParams *out) {
  const ConfigEnv *e = &cfg->env;
  TradingParams p = trading_params_default();
  p.train_start = date_of(e->train_start);
  p.val_start = date_of(e->val_start);
  p.test_start = date_of(e->test_start);
  p.test_end = date_of(e->test_end);
  p.exec = (TradingExec)e->exec;
  p.action_mode = (TradingActionMode)e->action_mode;
  p.n_levels = (int)e->n_levels;
  p.max_leverage = e->max_leverage;
  p.long_only = e->long_only;
  p.no_trade_band = e->no_trade_band;
  p.reward = (TradingReward)e->reward;
  p.reward_scale = real_of(e->reward_scale);
  p.dsr_eta = real_of(e->dsr_eta);
  p.vol_target_annual = e->vol_target_annual;
  p.shaping_turnover = e->shaping_turnover;
  p.shaping_drawdown = e->shaping_drawdown;
  p.shaping_variance = e->shaping_variance;
  p.shaping_flat = e->shaping_flat;
  p.reward_clip = e->reward_clip.is_none ? 0.0 : e->reward_clip.value;
  p.use_data_spread = e->use_data_spread.is_auto ? TRADING_AUTO_INT : e->use_data_spread.value;
  p.half_spread_bps = real_of(e->half_spread_bps);
  p.commission_bps = real_of(e->commission_bps);
  p.slippage_bps = real_of(e->slippage_bps);
  p.fee_fixed = e->fee_fixed;
  p.slippage_vol_k = e->slippage_vol_k;
  p.slippage_random_max_bps = e->slippage_random_max_bps;
  p.financing_long_apr = e->financing_long_apr;
  p.financing_short_apr = e->financing_short_apr;
  p.impact_y = e->impact_y;
  p.cost_mult = e->cost_mult;
  p.episode_length = int_of(e->episode_length);
  p.window = int_of(e->window);
  p.warmup = int_of(e->warmup);
  p.max_loss = e->max_loss;
  p.random_initial_position = e->random_initial_position;
  p.stratified_starts = e->stratified_starts;
  p.position_onehot = e->position_onehot;
  p.episode_progress = e->episode_progress;
  *out = p;
}

void env_config_feature_params(const Config *cfg, FeatureParams *out) {
  FeatureParams p = features_params_default();
  p.sigma_halflife = real_of(cfg->env.sigma_halflife);
  p.ema_fast = (int)cfg->env.ema_fast;
  p.ema_slow = (int)cfg->env.ema_slow;
  *out = p;
}

void env_config_synthetic_params(const Config *cfg, SyntheticParams *out) {
  const ConfigEnv *e = &cfg->env;
  SyntheticParams p = synthetic_params_default();
  p.model = (SyntheticModel)e->synthetic_model;
  p.bars = e->synthetic_bars;
  p.bar_seconds = e->synthetic_bar_seconds;
  p.seed = (uint64_t)e->synthetic_seed;
  p.drift = e->synthetic_drift;
  p.sigma = e->synthetic_sigma;
  p.rho = e->synthetic_rho;
  p.switch_prob = e->synthetic_switch_prob;
  p.drift2 = e->synthetic_drift2;
  p.sigma2 = e->synthetic_sigma2;
  *out = p;
}

// The generated market and its features are built before the memory plan (which lists them):
// a [env] synthetic_bars that cannot fit in the available memory or [run] memory_limit is bad
// input, refused before the allocation fails (at 1e9 bars that would be 184 GB).
static int synthetic_fits(const Config *cfg, int64_t bars) {
  char where[512], limit_key[512];
  size_t need = market_data_bytes(bars) + features_bytes(bars), available, total;
  if (cfg->run.memory_limit > 0 && need > (size_t)cfg->run.memory_limit) {
    error_set("%s: the generated market and its features need %zu bytes (%.1f MiB), over %s",
              config_describe_key(cfg, "env", "synthetic_bars", where, sizeof where), need, need / 1048576.0,
              config_describe_key(cfg, "run", "memory_limit", limit_key, sizeof limit_key));
    return -1;
  }
  if (host_memory_info(&available, &total) == 0 && need > available) {
    error_set(
        "%s: the generated market and its features need %zu bytes (%.1f MiB), more than the %.1f MiB "
        "of memory available",
        config_describe_key(cfg, "env", "synthetic_bars", where, sizeof where), need, need / 1048576.0,
        available / 1048576.0);
    return -1;
  }
  return 0;
}

MarketData *env_config_load_bars(const Config *cfg) {
  char where[512];
  MarketData *data;
  if (cfg->env.type == CONFIG_ENV_SYNTHETIC) {
    SyntheticParams sp;
    env_config_synthetic_params(cfg, &sp);
    if (synthetic_fits(cfg, sp.bars) != 0) return NULL;
    if (!(data = synthetic_market_new(&sp)))
      error_prepend("%s: ", config_describe_key(cfg, "env", "synthetic_model", where, sizeof where));
    return data;
  }
  if ((data = market_data_load(cfg->env.data))) return data;
  // The loaders' messages start with the path, which the key's description already shows.
  char message[2048];
  const char *text = error_message();
  size_t n = strlen(cfg->env.data);
  snprintf(message, sizeof message, "%s",
           strncmp(text, cfg->env.data, n) == 0 && text[n] == ':' && text[n + 1] == ' ' ? text + n + 2 : text);
  // A relative path is the current directory's: a configuration (or a checkpoint's) written for
  // another one names a file that is not here.
  char hint[1400] = "", cwd[1024];
  if (cfg->env.data[0] != '/' && access(cfg->env.data, F_OK) != 0 && getcwd(cwd, sizeof cwd))
    snprintf(hint, sizeof hint,
             " (a relative path is taken from the current directory, %s: run from the directory it was written "
             "for, or give --set env.data=ABSOLUTE_PATH)",
             cwd);
  error_set("%s: %s%s", config_describe_key(cfg, "env", "data", where, sizeof where), message, hint);
  return NULL;
}

// Appends to the split-date message what to do when an auto date came from a built-in
// instrument's preset and lies outside the data: a user's own file named like EURUSD_H1_2019.csv
// gets the symbol EURUSD, so the dates of the shipped EURUSD data, which need not lie inside it.
static void split_preset_hint(const Config *cfg, const MarketData *d) {
  int64_t preset[2];
  if (!trading_split_preset(d->symbol, &preset[0], &preset[1])) return;
  const bool is_auto[2] = {cfg->env.val_start.is_auto, cfg->env.test_start.is_auto};
  bool outside = false;  // a preset date the split took that is not inside the data: the cause
  for (int k = 0; k < 2; k++)
    if (is_auto[k] && (preset[k] <= d->ts[0] || preset[k] > d->ts[d->rows - 1])) outside = true;
  if (!outside) return;
  char message[ERROR_MESSAGE_MAX], origin[4 * MARKET_SOURCE_MAX + 64], source[4 * MARKET_SOURCE_MAX];
  snprintf(message, sizeof message, "%s", error_message());
  text_escape(d->source, source, sizeof source);  // the file's attribute: any bytes
  const char *slash = strrchr(cfg->env.data, '/'), *base = slash ? slash + 1 : cfg->env.data;
  const bool csv = strcmp(d->source, base) == 0;  // an imported file's source is the CSV it came from
  if (csv)
    snprintf(origin, sizeof origin, "taken from the file name %s", source);
  else
    snprintf(origin, sizeof origin, "stored in the file when %s was imported", source);
  error_set(
      "%s; the %s preset is the split of the %s data shipped in data/, used because this data's symbol is %s (%s): "
      "set [env] train_start, val_start, test_start and test_end to dates inside this data (the %s cost defaults "
      "stay), or import %s under a symbol without a preset, e.g. `ppo-data import %s OUT.h5 --symbol %s-OWN`, then "
      "train on OUT.h5 (the split then follows the data, and auto costs take the generic defaults)",
      message, d->symbol, d->symbol, d->symbol, origin, d->symbol, csv ? "the file" : "its CSV",
      csv ? cfg->env.data : source, d->symbol);
}

int env_market_open(EnvMarket *m, const Config *cfg) {
  memset(m, 0, sizeof *m);
  char where[512];
  if (!config_env_has_market(cfg->env.type)) {
    error_set("%s: %s has no market", config_describe_key(cfg, "env", "type", where, sizeof where),
              config_choice_name("env", "type", (int)cfg->env.type));
    return -1;
  }
  if (!(m->data = env_config_load_bars(cfg))) return -1;
  FeatureParams fp;
  env_config_feature_params(cfg, &fp);
  if (features_params_resolve(&fp, m->data) != 0) {
    error_prepend("%s: ", config_describe_key(cfg, "env", "sigma_halflife", where, sizeof where));
    env_market_close(m);
    return -1;
  }
  m->features = features_compute(m->data, &fp);
  TradingParams tp;
  env_config_trading_params(cfg, &tp);
  const MarketData *d = m->data;
  if (!cfg->env.test_end.is_auto && cfg->env.test_end.seconds > d->ts[d->rows - 1]) {  // the split ends with the data
    char last[40];
    log_warn("%s: after the data's last bar (%s); the test split ends there",
             config_describe_key(cfg, "env", "test_end", where, sizeof where),
             market_time_format(d->ts[d->rows - 1], last, sizeof last));
  }
  if (cfg->env.type != CONFIG_ENV_SYNTHETIC && trading_check_split_dates(m->data, &tp) != 0) {
    // The dates the configuration set are the ones to change; the others come from the data.
    static const char *const keys[4] = {"train_start", "val_start", "test_start", "test_end"};
    const ConfigDate *set[4] = {&cfg->env.train_start, &cfg->env.val_start, &cfg->env.test_start, &cfg->env.test_end};
    char named[4 * 520] = "";
    for (int k = 0; k < 4; k++)
      if (!set[k]->is_auto) {
        size_t used = strlen(named);
        snprintf(named + used, sizeof named - used, "%s%s", used ? "; " : "",
                 config_describe_key(cfg, "env", keys[k], where, sizeof where));
      }
    error_prepend("%s: ", named[0] ? named : config_describe_key(cfg, "env", "data", where, sizeof where));
    split_preset_hint(cfg, d);
    env_market_close(m);
    return -1;
  }
  if (trading_context_init(&m->context, m->data, m->features, &tp) != 0) {  // the window, ...
    const char *key = m->context.refused_key;                               // window, warmup, use_data_spread, or NULL
    if (cfg->env.type == CONFIG_ENV_SYNTHETIC && !(key && strcmp(key, "use_data_spread") == 0))
      error_prepend("[env] with the synthetic market (%lld bars): ", (long long)m->data->rows);
    else
      error_prepend("%s: ", config_describe_key(cfg, "env", key ? key : "data", where, sizeof where));
    env_market_close(m);
    return -1;
  }
  // Training needs only its own split, so an empty validation or test split is allowed, but said:
  // [eval] and ppo-eval would have nothing to run on.
  static const char *const start_keys[] = {"val_start", "test_start"};
  for (int s = TRADING_SPLIT_VAL; s <= TRADING_SPLIT_TEST; s++)
    if (m->context.split_hi[s] <= m->context.split_lo[s])
      log_warn("%s: the %s split holds no bars of the data; nothing can be evaluated on it",
               config_describe_key(cfg, "env", start_keys[s - TRADING_SPLIT_VAL], where, sizeof where),
               trading_split_name((TradingSplit)s));
  return 0;
}

// The costs an unknown symbol's auto values guess (TRADING_GENERIC_*): their keys and names.
static const struct {
  unsigned bit;
  const char *key, *name;
} generic_costs[3] = {{TRADING_GENERIC_HALF_SPREAD, "half_spread_bps", "half spread"},
                      {TRADING_GENERIC_COMMISSION, "commission_bps", "commission"},
                      {TRADING_GENERIC_SLIPPAGE, "slippage_bps", "slippage"}};

int env_market_generic_cost_keys(const EnvMarket *m, const char *keys[3]) {
  int n = 0;
  for (int k = 0; k < 3; k++)
    if (m && m->data && (m->context.generic_costs & generic_costs[k].bit)) keys[n++] = generic_costs[k].key;
  return n;
}

void env_market_print_generic_costs(const EnvMarket *m, FILE *out, const char *prefix) {
  if (!m || !m->data) return;
  const TradingContext *c = &m->context;
  const double bps[3] = {c->params.half_spread_bps, c->params.commission_bps, c->params.slippage_bps};
  for (int k = 0; k < 3; k++) {
    if (!(c->generic_costs & generic_costs[k].bit)) continue;
    // An unknown symbol's commission and slippage follow its bar size: daily bars are taken for a
    // stock's, shorter ones for FX.
    char basis[64] = "";
    if (generic_costs[k].bit != TRADING_GENERIC_HALF_SPREAD)
      snprintf(basis, sizeof basis, "; %s bars take the %s figure", c->daily ? "daily" : "intraday",
               c->daily ? "stock" : "FX");
    fprintf(out,
            "%s%s %g bp is a generic default for an unknown symbol (%s has no cost defaults of its own%s): set "
            "[env] %s to this instrument's cost\n",
            prefix, generic_costs[k].name, bps[k], m->data->symbol, basis, generic_costs[k].key);
  }
}

void env_market_close(EnvMarket *m) {
  features_free(m->features);
  market_data_free(m->data);
  memset(m, 0, sizeof *m);
}
