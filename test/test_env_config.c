// test/test_env_config.c: Config [env] -> simulator parameters (ppo/env_config.h), and the market an
// env type opens. Values are set through config_load's --set path, as a user would.
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/time_utc.h"
#include "envs/env.h"
#include "envs/features.h"
#include "envs/market_data.h"
#include "envs/vecenv.h"
#include "ppo/env_config.h"
#include "program_util.h"

static Config load(int n, const char *const *sets) {
  Config c;
  cr_assert_eq(config_load(&c, NULL, n, sets), 0, "%s", error_message());
  return c;
}

Test(env_config, defaults_stay_auto) {
  Config c = load(0, NULL);
  TradingParams p;
  env_config_trading_params(&c, &p);
  cr_assert(isnan(p.reward_scale) && isnan(p.dsr_eta) && isnan(p.commission_bps) && isnan(p.half_spread_bps));
  cr_assert(p.train_start == TRADING_DATE_AUTO && p.test_end == TRADING_DATE_AUTO);
  cr_assert(p.window == TRADING_AUTO_INT && p.episode_length == TRADING_AUTO_INT &&
            p.use_data_spread == TRADING_AUTO_INT);
  cr_assert(p.exec == TRADING_EXEC_NEXT_OPEN && p.action_mode == TRADING_ACTION_DISCRETE3);
  cr_assert(p.max_loss == 0.5 && p.no_trade_band == 0.02 && p.reward_clip == 0 && p.stratified_starts);
  FeatureParams f;
  env_config_feature_params(&c, &f);
  cr_assert(isnan(f.sigma_halflife) && f.ema_fast == 12 && f.ema_slow == 48 && f.daily_auto);
}

// Every field of TradingParams that a configuration sets has the same default in the schema's rows
// and in trading_params_default (the simulator's defaults for callers without a configuration:
// tests, ppo-bench); NaN (auto) equals NaN.
static bool same_value(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

Test(env_config, the_schema_defaults_are_the_simulators) {
  Config c = load(0, NULL);
  TradingParams a, b = trading_params_default();
  env_config_trading_params(&c, &a);
#define SAME(f)                                                                                              \
  cr_expect(same_value((double)a.f, (double)b.f), #f ": schema default %.17g, trading_params_default %.17g", \
            (double)a.f, (double)b.f)
  SAME(train_start);
  SAME(val_start);
  SAME(test_start);
  SAME(test_end);
  SAME(exec);
  SAME(action_mode);
  SAME(n_levels);
  SAME(max_leverage);
  SAME(long_only);
  SAME(no_trade_band);
  SAME(reward);
  SAME(reward_scale);
  SAME(dsr_eta);
  SAME(vol_target_annual);
  SAME(shaping_turnover);
  SAME(shaping_drawdown);
  SAME(shaping_variance);
  SAME(shaping_flat);
  SAME(reward_clip);
  SAME(use_data_spread);
  SAME(half_spread_bps);
  SAME(commission_bps);
  SAME(slippage_bps);
  SAME(fee_fixed);
  SAME(slippage_vol_k);
  SAME(slippage_random_max_bps);
  SAME(financing_long_apr);
  SAME(financing_short_apr);
  SAME(impact_y);
  SAME(cost_mult);
  SAME(episode_length);
  SAME(window);
  SAME(warmup);
  SAME(max_loss);
  SAME(random_initial_position);
  SAME(stratified_starts);
  SAME(position_onehot);
  SAME(episode_progress);
  SAME(parity);
  SAME(eval);
#undef SAME
}

// Which env types run on market data: every choice of [env] type is decided (the trainer, ppo-eval,
// walk-forward and the loader ask config_env_has_market; they compared with cartpole, so a new type
// without a market was sent to one).
Test(env_config, every_env_type_says_whether_it_has_a_market) {
  int n = 0;
  for (; strcmp(config_choice_name("env", "type", n), "?") != 0; n++) {
    const char *name = config_choice_name("env", "type", n);
    bool want = strcmp(name, "cartpole") != 0;
    cr_expect_eq(config_env_has_market((ConfigEnvType)n), want, "%s", name);
    error_clear();  // and the env registry (envs/env.c) knows a kind of that name
    cr_expect_not_null(env_kind_find(name), "[env] type %s has no registered env kind: %s", name, error_message());
  }
  cr_expect_eq(n, 3);
  cr_expect_eq(env_kind_count(), n, "registered env kinds and [env] type choices differ in number");
}

// Which [env] keys each type reads (config_env_key_unread, for the "has no effect" warnings): every
// type reads type and n_envs; CartPole no market key; trading every key but the generator's;
// synthetic every key but the data file. The warnings hard-coded CartPole's three keys, so a new
// type without a market was told nothing of a cost or a data file it never reads.
Test(env_config, every_env_type_says_which_env_keys_it_reads) {
  int count;
  const ConfigKey *keys = config_schema(&count);
  for (int n = 0; strcmp(config_choice_name("env", "type", n), "?") != 0; n++) {
    const char *name = config_choice_name("env", "type", n);
    for (int i = 0; i < count; i++) {
      if (strcmp(keys[i].section, "env") != 0) continue;
      const char *key = keys[i].key;
      bool generator = strncmp(key, "synthetic_", 10) == 0, always = !strcmp(key, "type") || !strcmp(key, "n_envs");
      bool want = always || (strcmp(name, "cartpole") == 0    ? strcmp(key, "episode_length") == 0
                             : strcmp(name, "trading") == 0   ? !generator
                             : strcmp(name, "synthetic") == 0 ? strcmp(key, "data") != 0
                                                              : false);
      const char *unread = config_env_key_unread((ConfigEnvType)n, key);
      cr_expect_eq(unread == NULL, want, "[env] type %s, key %s: %s", name, key, unread ? unread : "read");
    }
  }
}

Test(env_config, values_map_through) {
  const char *sets[] = {"env.exec=close",
                        "env.action_mode=continuous",
                        "env.reward=d3r",
                        "env.reward_clip=5",
                        "env.commission_bps=1.25",
                        "env.val_start=2012-06-01",
                        "env.test_end=2018-03-31",
                        "env.window=16",
                        "env.use_data_spread=false",
                        "env.sigma_halflife=30",
                        "env.synthetic_model=regime",
                        "env.synthetic_rho=0.2"};
  Config c = load(12, sets);
  TradingParams p;
  env_config_trading_params(&c, &p);
  cr_assert(p.exec == TRADING_EXEC_CLOSE && p.action_mode == TRADING_ACTION_CONTINUOUS &&
            p.reward == TRADING_REWARD_D3R);
  cr_assert(p.reward_clip == 5 && p.commission_bps == 1.25 && p.window == 16 && p.use_data_spread == 0);
  cr_assert_eq(p.val_start, utc_days_from_civil(2012, 6, 1) * 86400);
  cr_assert_eq(p.test_end, utc_days_from_civil(2018, 3, 31) * 86400);
  FeatureParams f;
  env_config_feature_params(&c, &f);
  cr_assert_eq(f.sigma_halflife, 30);
  SyntheticParams s;
  env_config_synthetic_params(&c, &s);
  cr_assert(s.model == SYNTHETIC_REGIME && s.rho == 0.2 && s.bars == 100000);
}

Test(env_config, markets_open_for_trading_and_synthetic) {
  const char *spy[] = {"env.data=" PPO_SOURCE_DIR "/data/SPY_1D.h5"};
  Config c = load(1, spy);
  EnvMarket m;
  cr_assert_eq(env_market_open(&m, &c), 0, "%s", error_message());
  cr_assert_eq(m.context.asset_class, TRADING_CLASS_STOCK);
  cr_assert_eq(m.context.params.window, 30);
  VecEnv *vec = vecenv_init(env_kind_find("trading"), NULL, &m.context, 4, 1, 8, 1);
  cr_assert_not_null(vec, "%s", error_message());
  cr_assert_eq(vecenv_spec(vec)->obs_dim, 30 * FEATURES_COUNT + 5);
  vecenv_free(vec);
  env_market_close(&m);

  const char *synth[] = {"env.type=synthetic", "env.synthetic_bars=5000", "env.synthetic_seed=3"};
  c = load(3, synth);
  cr_assert_eq(env_market_open(&m, &c), 0, "%s", error_message());
  cr_assert_str_eq(m.data->symbol, "SYNTH-AR1");
  cr_assert_eq(m.data->rows, 5000);
  env_market_close(&m);

  const char *missing[] = {"env.data=/nonexistent/bars.h5"};
  c = load(1, missing);
  cr_assert_eq(env_market_open(&m, &c), -1);
  cr_assert_not_null(strstr(error_message(), "[env] data = /nonexistent/bars.h5: cannot open"), "%s",
                     error_message());  // the path once
  cr_assert_null(m.data);
  cr_expect(!strstr(error_message(), "relative path"), "%s", error_message());
  const char *relative[] = {"env.data=no/such/bars.h5"};  // run from another directory than intended
  c = load(1, relative);
  cr_assert_eq(env_market_open(&m, &c), -1);
  cr_expect(strstr(error_message(), "[env] data = no/such/bars.h5: cannot open") &&
                strstr(error_message(), "(a relative path is taken from the current directory, ") &&
                strstr(error_message(), "--set env.data=ABSOLUTE_PATH)"),
            "%s", error_message());

  // Split dates out of order name the dates the configuration set, not the data file.
  const char *late[] = {"env.data=" PPO_SOURCE_DIR "/data/SPY_1D.h5", "env.test_start=2030-01-01"};
  c = load(2, late);
  cr_assert_eq(env_market_open(&m, &c), -1);
  cr_expect(strstr(error_message(), "--set #2: [env] test_start = 2030-01-01: trading: split dates") &&
                !strstr(error_message(), "[env] data ="),
            "%s", error_message());
  cr_assert_null(m.data);
}

// A user's own hourly CSV, `rows` bars from 2019-01-01 00:00, in dir/name; its path in path.
static void write_hourly_csv(char *path, size_t capacity, const char *dir, const char *name, int rows) {
  snprintf(path, capacity, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  fputs("time,open,high,low,close,volume\n", f);
  char when[32];
  for (int i = 0; i < rows; i++) {
    double price = 1.1 + 0.001 * (i % 7);
    fprintf(f, "%s,%.4f,%.4f,%.4f,%.4f,100\n", utc_format(1546300800 + 3600LL * i, false, when, sizeof when), price,
            price + 0.0005, price - 0.0005, price);
  }
  fclose(f);
}

// A file named like a built-in instrument (EURUSD_H1_2019.csv: the symbol EURUSD) gets that
// instrument's preset split, from 2015 and 2017, before its first bar. The message says which dates
// were auto and from where (the EURUSD preset, the symbol from the file name) and what to do; the
// dates of an unknown symbol are said to follow the data, without the preset's advice.
Test(env_config, split_dates_from_a_preset_say_so) {
  char dir[128], path[512], set[600];
  scratch_dir(dir, sizeof dir, "env_config");
  write_hourly_csv(path, sizeof path, dir, "EURUSD_H1_2019.csv", 2000);
  snprintf(set, sizeof set, "env.data=%s", path);
  const char *sets[] = {set};
  Config c = load(1, sets);
  EnvMarket m;
  cr_assert_eq(env_market_open(&m, &c), -1);
  const char *text = error_message();
  cr_expect(strstr(text, "[env] data = ") && strstr(text, "train_start 2019-01-01 (auto: the data's first day)") &&
                strstr(text, "val_start 2015-01-01 (auto: the EURUSD preset)") &&
                strstr(text, "test_start 2017-01-01 (auto: the EURUSD preset)") &&
                strstr(text, "symbol is EURUSD (taken from the file name EURUSD_H1_2019.csv)") &&
                strstr(text, "set [env] train_start, val_start, test_start and test_end") &&
                strstr(text, "OUT.h5 --symbol EURUSD-OWN"),
            "%s", text);
  cr_assert_null(m.data);

  write_hourly_csv(path, sizeof path, dir, "OWN_H1.csv", 2000);
  snprintf(set, sizeof set, "env.data=%s", path);
  const char *own[] = {set, "env.val_start=2019-03-20"};  // after the 85 % bar's day
  c = load(2, own);
  cr_assert_eq(env_market_open(&m, &c), -1);
  text = error_message();
  cr_expect(strstr(text, "--set #2: [env] val_start = 2019-03-20: ") &&
                strstr(text, "test_start 2019-03-13 (auto: the day after the bar at 85 % of the rows)") &&
                !strstr(text, "preset"),
            "%s", text);
  scratch_dir_remove(dir);
}

// A generated market is built before the memory plan: one that cannot fit is refused by name
// before its allocation would fail. features_bytes and market_data_bytes are what the two
// allocations take: 112 bytes per bar for a timestamp and 13 price columns, FEATURES_COUNT floats
// and a double sigma for the features, plus the two headers.
Test(env_config, a_synthetic_market_too_big_for_memory_is_refused) {
  const size_t per_bar = 112 + FEATURES_COUNT * sizeof(float) + sizeof(double);
  cr_assert_lt(market_data_bytes(1000) + features_bytes(1000) - 1000 * per_bar, 1024);
  cr_assert_eq(market_data_bytes(-1), SIZE_MAX);
  const char *over_limit[] = {"env.type=synthetic", "env.synthetic_bars=100000", "run.memory_limit=1000000"};
  Config c = load(3, over_limit);
  EnvMarket m;
  cr_assert_eq(env_market_open(&m, &c), -1);
  const char *need =
      strstr(error_message(), "[env] synthetic_bars = 100000: the generated market and its features need ");
  cr_assert_not_null(need, "%s", error_message());
  size_t bytes =
      (size_t)strtoull(strchr(need, ':') + strlen(": the generated market and its features need "), NULL, 10);
  cr_expect(bytes >= 100000 * per_bar && bytes < 100000 * per_bar + 1024, "%zu bytes: %s", bytes, error_message());
  cr_expect(strstr(error_message(), "over command line: --set #3: [run] memory_limit = 1000000"), "%s",
            error_message());
  cr_assert_null(m.data);
  const char *huge[] = {"env.type=synthetic", "env.synthetic_bars=1000000000"};  // about 184 GB
  c = load(2, huge);
  cr_assert_eq(env_market_open(&m, &c), -1);
  cr_expect(strstr(error_message(), "of memory available"), "%s", error_message());
}

// Training needs only the train split: an empty test split opens, with a warning naming the key.
Test(env_config, an_empty_test_split_is_warned_about, .init = cr_redirect_stderr) {
  const char *sets[] = {"env.data=" PPO_SOURCE_DIR "/data/SPY_1D.h5", "env.test_start=2030-01-01",
                        "env.test_end=2030-06-01"};
  Config c = load(3, sets);
  EnvMarket m;
  cr_assert_eq(env_market_open(&m, &c), 0, "%s", error_message());
  cr_expect_eq(m.context.split_hi[TRADING_SPLIT_TEST], m.context.split_lo[TRADING_SPLIT_TEST]);
  env_market_close(&m);
  fflush(stderr);
  char text[4096] = {0};
  FILE *err = cr_get_redirected_stderr();
  size_t n = fread(text, 1, sizeof text - 1, err);
  text[n] = '\0';
  cr_expect(strstr(text, "[env] test_start = 2030-01-01: the test split holds no bars of the data"), "%s", text);
}

// A train split with no room for an episode is blamed on the key that sets the first start: a
// window longer than the warm-up, a configured warmup, else the data itself.
Test(env_config, no_room_for_an_episode_names_the_key_that_sets_the_first_start) {
  static const struct {
    const char *set, *named, *cause;
  } cases[] = {
      {"env.window=5000", "--set #2: [env] window = 5000: ", "shorten window (5000 bars"},
      {"env.warmup=5000", "--set #2: [env] warmup = 5000: ", "or lower warmup"},
      {"env.val_start=1993-03-01", "--set #2: [env] val_start = 1993-03-01: ", NULL},  // a split-date error
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *sets[] = {"env.data=" PPO_SOURCE_DIR "/data/SPY_1D.h5", cases[i].set};
    Config c = load(2, sets);
    EnvMarket m;
    cr_assert_eq(env_market_open(&m, &c), -1, "%s", cases[i].set);
    const char *text = error_message();
    cr_expect(strstr(text, cases[i].named) && (!cases[i].cause || strstr(text, cases[i].cause)), "%s", text);
    cr_assert_null(m.data);
  }
}

// use_data_spread = true on data without bid/ask is blamed on use_data_spread, as other cross-key
// errors name the key to change: it was reported against [env] data (the trading data) or no key at
// all (the synthetic market).
Test(env_config, use_data_spread_without_bid_ask_names_use_data_spread) {
  const char *data[] = {"env.data=" PPO_SOURCE_DIR "/data/SPY_1D.h5", "env.use_data_spread=true"};
  const char *synthetic[] = {"env.type=synthetic", "env.use_data_spread=true"};
  const char *const *cases[] = {data, synthetic};
  for (int i = 0; i < 2; i++) {
    Config c = load(2, cases[i]);
    EnvMarket m;
    cr_assert_eq(env_market_open(&m, &c), -1, "%s", cases[i][0]);
    const char *text = error_message();
    static const char named[] = "command line: --set #2: [env] use_data_spread = true: ";
    cr_expect(strncmp(text, named, strlen(named)) == 0, "%s", text);
    cr_expect(strstr(text, "has no bid/ask columns (set it to auto or false)") && !strstr(text, "[env] data"), "%s",
              text);
    cr_assert_null(m.data);
  }
}
