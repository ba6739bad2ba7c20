// bench/bench_envs.c: `ppo-bench envs`: env steps per second, headless, in plain C (STYLE rule 13).
//
//   ppo-bench envs [--envs N] [--steps S] [--repeats R] [--data FILE] [--json FILE]
//   defaults: 32 envs, 100000 vector steps (CartPole; a fifth of that for the trading env), 7 repeats,
//   the shipped XAUUSD_1H.h5
//
// CartPole: for 1 and 2 OpenMP threads, a VecEnv of N CartPoles with random actions, a warm-up, then R
// timed runs of S vector steps each (S * N env steps, auto-resets included); the table shows the
// median and the range of env steps per second, and per thread. A "serial" row steps the same N envs
// with a plain loop (no VecEnv, no OpenMP) to show VecEnv's own cost. Actions come from counter-based
// Philox (one 128-bit block per vector step), generated inside the timed loop.
// Trading: the same for N trading envs on the file's market (window 32, the 16 default features,
// discrete3, default costs, 2048-bar episodes), random levels every step (a trade on two steps in
// three: the costly path); then with continuous actions, uniform in [-1, 1) every step (targets
// inside the no-trade band hold, the others trade). Its memory row gives the shared market (bars +
// feature matrix, one copy), the VecEnv (states, logs) and the per-env state. The market is loaded
// before the CartPole rows, so that a bad --data is refused (exit 2) before anything is timed.
// --json FILE appends JSON lines {name, backend, precision, shape, value, unit}, as ppo-bench does; every
// row, with its range, also goes to bench_report (`ppo-bench all`).
// Issue targets: at least 20 M CartPole steps/s per core; at least 8.5 M trading steps/s for 32 envs on
// 2 threads; market data resident once (adding envs costs a few KiB at most).
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/cli.h"
#include "bench/bench.h"
#include "common/check.h"
#include "common/error.h"
#include "common/rng.h"
#include "common/timer.h"
#include "envs/cartpole.h"
#include "envs/features.h"
#include "envs/market_data.h"
#include "envs/trading_env.h"
#include "envs/vecenv.h"

#define BENCH_SEED 12345
#define MAX_ENVS 128  // one Philox block of actions per vector step (CartPole: 1 bit each; trading: 2 bits, 64 envs)
#define TRADING_MAX_ENVS 64
#ifndef PPO_SOURCE_DIR
#define PPO_SOURCE_DIR "."
#endif

typedef struct {
  int num_envs;           // N
  long steps;             // S vector steps per timed run
  int repeats;            // R
  const char *data_path;  // the trading env's market
  const char *json_path;  // NULL: no JSON lines
} BenchOptions;

// Actions of vector step t: bit i of the block's 128 bits, for env i (N <= 128).
static void actions_fill(void *out, int num_envs, uint64_t t) {
  int32_t *actions = out;
  Philox4x32 block = philox_block(BENCH_SEED, 0, t);
  for (int i = 0; i < num_envs; i++) actions[i] = (int32_t)((block.v[i >> 5] >> (i & 31)) & 1u);
}

// Trading levels of vector step t: 2 bits of the block per env, mod 3 (N <= 64).
static void trading_actions_fill(void *out, int num_envs, uint64_t t) {
  int32_t *actions = out;
  Philox4x32 block = philox_block(BENCH_SEED, 1, t);
  for (int i = 0; i < num_envs; i++) actions[i] = (int32_t)(((block.v[i >> 4] >> ((i & 15) * 2)) & 3u) % 3u);
}

// Continuous targets of vector step t: uniform in [-1, 1), one 32-bit word per env (a block per 4 envs).
static void trading_continuous_fill(void *out, int num_envs, uint64_t t) {
  float *actions = out;
  for (int b = 0; b * 4 < num_envs; b++) {
    Philox4x32 block = philox_block(BENCH_SEED, 2, t * (TRADING_MAX_ENVS / 4) + (uint64_t)b);
    for (int j = 0; j < 4 && b * 4 + j < num_envs; j++)
      actions[b * 4 + j] = (float)((double)block.v[j] * (2.0 / 4294967296.0) - 1.0);
  }
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// Times R runs; returns env steps per second: median, min, max (sorted[0], sorted[R-1]).
typedef double (*RunFn)(void *context, long steps, uint64_t *t);

static void bench_repeat(RunFn run, void *context, const BenchOptions *o, double *median, double *lo, double *hi) {
  uint64_t t = 0;
  run(context, o->steps / 5 + 1, &t);  // warm-up: caches, branch predictors, OpenMP's thread pool
  double *rates = CHECK_ALLOC(sizeof(double) * o->repeats, "rates");
  for (int r = 0; r < o->repeats; r++) rates[r] = (double)o->steps * o->num_envs / run(context, o->steps, &t);
  qsort(rates, o->repeats, sizeof(double), compare_double);
  *median = o->repeats % 2 ? rates[o->repeats / 2] : 0.5 * (rates[o->repeats / 2 - 1] + rates[o->repeats / 2]);
  *lo = rates[0];
  *hi = rates[o->repeats - 1];
  free(rates);
}

typedef struct {
  VecEnv *vec;
  VecEnvBuffers buffers;
  void (*fill)(void *actions, int num_envs, uint64_t t);  // int32 levels or float targets, as the env reads
} VecContext;

static double run_vecenv(void *context, long steps, uint64_t *t) {
  VecContext *c = context;
  int n = vecenv_num_envs(c->vec);
  void *actions = (void *)c->buffers.actions;  // ours to fill: the buffers only say the envs read it
  double t0 = timer_now();
  for (long s = 0; s < steps; s++) {
    c->fill(actions, n, (*t)++);
    vecenv_step(c->vec, &c->buffers);
  }
  return timer_since(t0);
}

// Appends one JSON line to --json (the median) and hands the row to the result sink (`ppo-bench all`).
static void json_line(FILE *json, const char *name, const char *shape, double value, double lo, double hi,
                      const char *unit, int repeats) {
  if (json) {  // flushed line by line: a run killed later leaves whole lines behind
    fprintf(json,
            "{\"name\": \"%s\", \"backend\": \"cpu\", \"precision\": \"-\", \"shape\": \"%s\", "
            "\"value\": %.15g, \"unit\": \"%s\"}\n",
            name, shape, value, unit);
    fflush(json);  // a failure sets the stream's error flag, read at the close
  }
  bench_report(&(BenchResult){.name = name,
                              .backend = "-",
                              .precision = "-",
                              .params = shape,
                              .median = value,
                              .min = lo,
                              .max = hi,
                              .unit = unit,
                              .repeats = repeats});
}

static void bytes_line(FILE *json, const char *name, const char *shape, size_t bytes) {
  json_line(json, name, shape, (double)bytes, (double)bytes, (double)bytes, "bytes", 1);
}

typedef struct {
  CartPole *envs;  // (N)
  int num_envs;
  int32_t *actions;                        // (N)
  float *obs, *rewards, *final_obs, *log;  // (N, 4), (N), (N, 4), (N, 2)
  uint8_t *terminated, *truncated;         // (N)
} SerialContext;

static double run_serial(void *context, long steps, uint64_t *t) {
  SerialContext *c = context;
  double t0 = timer_now();
  for (long s = 0; s < steps; s++) {
    actions_fill(c->actions, c->num_envs, (*t)++);
    for (int i = 0; i < c->num_envs; i++) {
      float *obs = c->obs + 4 * i;
      cartpole_step(&c->envs[i], c->actions[i], obs, &c->rewards[i], &c->terminated[i], &c->truncated[i],
                    c->log + 2 * i);
      if (c->terminated[i] | c->truncated[i]) {
        memcpy(c->final_obs + 4 * i, obs, 4 * sizeof(float));
        cartpole_reset(&c->envs[i], obs);
      }
    }
  }
  return timer_since(t0);
}

#define ENVS_USAGE "usage: ppo-bench envs [--envs 1..64] [--steps S>=5] [--repeats 1..1000] [--data FILE] [--json FILE]"

// Options as "--opt VALUE" or "--opt=VALUE" (apps/cli.h). 0, or -1 and the error message naming the
// option (and the value) that was refused.
static int parse_options(int argc, char **argv, BenchOptions *o) {
  *o = (BenchOptions){.num_envs = 32, .steps = 100000, .repeats = 7, .data_path = PPO_SOURCE_DIR "/data/XAUUSD_1H.h5"};
  CliSeen seen = {.count = 0};
  for (int a = 1; a < argc; a++) {
    const char *opt = argv[a];
    long long n = 0;
    bool envs = cli_is_option(opt, "--envs"), steps = cli_is_option(opt, "--steps"),
         reps = cli_is_option(opt, "--repeats"), data = cli_is_option(opt, "--data"),
         json = cli_is_option(opt, "--json");
    if (!envs && !steps && !reps && !data && !json) {
      error_set(opt[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", opt);
      return -1;
    }
    const char *name = envs ? "--envs" : steps ? "--steps" : reps ? "--repeats" : data ? "--data" : "--json";
    if (cli_repeated(&seen, name)) {
      error_set("%s is given twice; give it once", name);
      return -1;
    }
    const char *v = cli_option_value(argc, argv, &a, name);
    if (!v) {
      error_set("%s needs a value", name);
      return -1;
    }
    if (data) {
      o->data_path = v;
    } else if (json) {
      o->json_path = v;
    } else {
      long long lo = steps ? 5 : 1, hi = envs ? TRADING_MAX_ENVS : steps ? LONG_MAX : 1000;
      if (!cli_parse_integer(v, lo, hi, &n)) {
        error_set("%s '%s': a whole number in %lld .. %lld allowed", name, v, lo, hi);
        return -1;
      }
      if (envs) o->num_envs = (int)n;
      if (steps) o->steps = n;
      if (reps) o->repeats = (int)n;
    }
  }
  return 0;
}

// The trading env's market: the file's bars, the default features and trading parameters.
typedef struct {
  MarketData *data;
  Features *features;
  TradingContext context;
} TradingMarket;

static void trading_market_free(TradingMarket *m) {
  features_free(m->features), market_data_free(m->data);
  m->features = NULL, m->data = NULL;
}

// Loads the market at path. Done before any row runs, so that a bad --data is said at once. 0, or
// -1 and the error message (nothing held).
static int trading_market_load(TradingMarket *m, const char *path) {
  memset(m, 0, sizeof *m);
  if (!(m->data = market_data_load(path))) return -1;
  FeatureParams fp = features_params_default();
  if (features_params_resolve(&fp, m->data) != 0) {
    trading_market_free(m);
    return -1;
  }
  TradingParams params = trading_params_default();
  if (!(m->features = features_compute(m->data, &fp)) ||
      trading_context_init(&m->context, m->data, m->features, &params) != 0) {
    trading_market_free(m);
    return -1;
  }
  return 0;
}

// The trading rows: N envs on the market (loaded from o->data_path), 1 and 2 threads; S/5 vector
// steps a run; discrete3 levels, then continuous targets. 0, or -1 and the error message.
static int bench_trading(const BenchOptions *o, TradingMarket *market, FILE *json) {
  const MarketData *data = market->data;
  const Features *features = market->features;
  TradingContext *context = &market->context;  // (shared by every env, read only)
  const int n = o->num_envs, obs_dim = context->obs_dim;
  size_t market_bytes = features->bytes + (size_t)data->rows * (sizeof(int64_t) + 13 * sizeof(double));
  BenchOptions to = *o;
  to.steps = o->steps / 5;
  TradingParams continuous_params = trading_params_default();  // the same market, a Gaussian policy's actions
  continuous_params.action_mode = TRADING_ACTION_CONTINUOUS;
  TradingContext continuous;
  if (trading_context_init(&continuous, data, features, &continuous_params) != 0) return -1;
  const struct {
    const TradingContext *context;
    void (*fill)(void *actions, int num_envs, uint64_t t);
    const char *runner, *shape_suffix;  // the discrete rows keep the shape of results before the continuous ones
  } modes[] = {{context, trading_actions_fill, "trading", ""},
               {&continuous, trading_continuous_fill, "cont.", ",action=continuous"}};
  void *actions = CHECK_ALLOC(sizeof(float) * n, "actions");  // int32 levels or float targets
  float *obs = CHECK_ALLOC(sizeof(float) * n * obs_dim, "obs"),
        *final_obs = CHECK_ALLOC(sizeof(float) * n * obs_dim, "final_obs");
  float *rewards = CHECK_ALLOC(sizeof(float) * n, "rewards");
  uint8_t *terminated = CHECK_ALLOC(n, "terminated"), *truncated = CHECK_ALLOC(n, "truncated");
  printf(
      "\nTrading env on %s (%s, %lld bars), window %d x %d features + %d agent state = obs %d floats, %d envs,\n"
      "random discrete3 levels (trading), then random continuous targets (cont.), default costs, %ld vector steps x\n"
      "%d repeats (median [min, max])\n",
      data->source, data->symbol, (long long)data->rows, context->window, features->count, TRADING_AGENT_STATE, obs_dim,
      n, to.steps, to.repeats);
  printf("%-8s %7s %16s %25s %14s %10s %12s\n", "runner", "threads", "steps/s", "range", "steps/s/thread", "ns/step",
         "vecenv B");
  char shape[128];
  size_t vec_bytes[2] = {0, 0}, state_bytes = 0;
  for (int run = 0; run < 4; run++) {
    const int mode = run / 2, threads = run % 2 + 1;
    VecContext vc = {vecenv_init(&trading_kind, NULL, modes[mode].context, n, BENCH_SEED, 100, threads),
                     {actions, obs, rewards, terminated, truncated, final_obs},
                     modes[mode].fill};
    if (!vc.vec) {
      free(actions), free(obs), free(final_obs), free(rewards), free(terminated), free(truncated);
      return -1;
    }
    vecenv_reset(vc.vec, obs);
    double median, lo, hi;
    bench_repeat(run_vecenv, &vc, &to, &median, &lo, &hi);
    if (mode == 0) vec_bytes[threads - 1] = vecenv_memory_bytes(vc.vec);
    state_bytes = vecenv_spec(vc.vec)->state_size;
    printf("%-8s %7d %14.2f M %11.2f M - %7.2f M %12.2f M %10.2f %12zu\n", modes[mode].runner, threads, median / 1e6,
           lo / 1e6, hi / 1e6, median / 1e6 / threads, 1e9 / median, vecenv_memory_bytes(vc.vec));
    printf("         episodes finished %llu, mean log growth of the last %d: %.4f\n",
           (unsigned long long)vecenv_log_total(vc.vec), vecenv_log_count(vc.vec), vecenv_log_mean(vc.vec, 3));
    snprintf(shape, sizeof shape, "envs=%d,threads=%d,window=%d,features=%d%s", n, threads, context->window,
             features->count, modes[mode].shape_suffix);
    json_line(json, "env_trading_steps_per_s", shape, median, lo, hi, "steps/s", to.repeats);
    vecenv_free(vc.vec);
  }
  // Memory: the market once, plus a VecEnv whose growth per env is its state.
  VecEnv *twice = vecenv_init(&trading_kind, NULL, context, 2 * n, BENCH_SEED, 100, 1);
  size_t per_env = (vecenv_memory_bytes(twice) - vec_bytes[0]) / (size_t)n;
  vecenv_free(twice);
  printf(
      "memory   shared market %zu B (bars %zu + features %zu, one copy for any N); VecEnv of %d envs %zu B;\n"
      "         per env: state %zu B, %zu B with its slot and logs (measured from %d to %d envs)\n",
      market_bytes, market_bytes - features->bytes, features->bytes, n, vec_bytes[0], state_bytes, per_env, n, 2 * n);
  snprintf(shape, sizeof shape, "envs=%d,window=%d,features=%d", n, context->window, features->count);
  bytes_line(json, "env_trading_market_bytes", shape, market_bytes);
  bytes_line(json, "env_trading_vecenv_bytes", shape, vec_bytes[0]);
  bytes_line(json, "env_trading_bytes_per_env", shape, per_env);
  free(actions), free(obs), free(final_obs), free(rewards), free(terminated), free(truncated);
  return 0;
}

int bench_envs_main(int argc, char **argv) {
  BenchOptions o;
  if (parse_options(argc, argv, &o) != 0) {
    fprintf(stderr, "ppo-bench envs: %s\n%s\n", error_message(), ENVS_USAGE);
    return EXIT_BAD_INPUT;
  }
  TradingMarket market;
  if (trading_market_load(&market, o.data_path) != 0)
    return cli_bad_value("ppo-bench envs", "--data", o.data_path, error_message());
  FILE *json = NULL;
  if (o.json_path && !(json = fopen(o.json_path, "a"))) {
    char why[128];  // the file is appended to: a JSON object per line
    snprintf(why, sizeof why, "cannot open it for appending: %s", strerror(errno));
    int status = cli_bad_value("ppo-bench envs", "--json", o.json_path, why);
    trading_market_free(&market);
    return status;
  }
  const int n = o.num_envs;
  char shape[64];
  int32_t *actions = CHECK_ALLOC(sizeof(int32_t) * n, "actions");
  float *obs = CHECK_ALLOC(sizeof(float) * n * 4, "obs"), *final_obs = CHECK_ALLOC(sizeof(float) * n * 4, "final_obs");
  float *rewards = CHECK_ALLOC(sizeof(float) * n, "rewards"), *log = CHECK_ALLOC(sizeof(float) * n * 2, "log");
  uint8_t *terminated = CHECK_ALLOC(n, "terminated"), *truncated = CHECK_ALLOC(n, "truncated");

  printf("CartPole-v1, %d envs, random actions, %ld vector steps x %d repeats (median [min, max])\n", n, o.steps,
         o.repeats);
  printf("%-8s %7s %16s %25s %14s %10s %12s\n", "runner", "threads", "steps/s", "range", "steps/s/thread", "ns/step",
         "memory B");

  // Serial reference: the same envs, a plain loop.
  SerialContext sc = {
      CHECK_ALLOC(sizeof(CartPole) * n, "envs"), n, actions, obs, rewards, final_obs, log, terminated, truncated};
  CartPoleParams params = cartpole_params_default();
  for (int i = 0; i < n; i++) {
    Rng rng;
    rng_seed(&rng, rng_stream_seed(BENCH_SEED, (uint64_t)i));
    cartpole_init(&sc.envs[i], &params, rng);
    cartpole_reset(&sc.envs[i], obs + 4 * i);
  }
  double median, lo, hi;
  bench_repeat(run_serial, &sc, &o, &median, &lo, &hi);
  printf("%-8s %7d %14.2f M %11.2f M - %7.2f M %12.2f M %10.2f %12zu\n", "serial", 1, median / 1e6, lo / 1e6, hi / 1e6,
         median / 1e6, 1e9 / median, sizeof(CartPole) * n);
  snprintf(shape, sizeof shape, "envs=%d,threads=1", n);
  json_line(json, "env_cartpole_serial_steps_per_s", shape, median, lo, hi, "steps/s", o.repeats);
  free(sc.envs);

  for (int threads = 1; threads <= 2; threads++) {
    VecContext vc = {vecenv_init(&cartpole_kind, &params, NULL, n, BENCH_SEED, 100, threads),
                     {actions, obs, rewards, terminated, truncated, final_obs},
                     actions_fill};
    if (!vc.vec) {
      fprintf(stderr, "ppo-bench envs: %s\n", error_message());
      trading_market_free(&market);
      if (json) fclose(json);
      return EXIT_RUNTIME;
    }
    vecenv_reset(vc.vec, obs);
    bench_repeat(run_vecenv, &vc, &o, &median, &lo, &hi);
    printf("%-8s %7d %14.2f M %11.2f M - %7.2f M %12.2f M %10.2f %12zu\n", "vecenv", threads, median / 1e6, lo / 1e6,
           hi / 1e6, median / 1e6 / threads, 1e9 / median, vecenv_memory_bytes(vc.vec));
    printf("         episodes finished %llu, mean length of the last %d: %.1f\n",
           (unsigned long long)vecenv_log_total(vc.vec), vecenv_log_count(vc.vec),
           vecenv_log_mean(vc.vec, ENV_LOG_EPISODE_LENGTH));
    snprintf(shape, sizeof shape, "envs=%d,threads=%d", n, threads);
    json_line(json, "env_cartpole_steps_per_s", shape, median, lo, hi, "steps/s", o.repeats);
    vecenv_free(vc.vec);
  }
  free(actions), free(obs), free(final_obs), free(rewards), free(log), free(terminated), free(truncated);
  int status = EXIT_OK;
  if (bench_trading(&o, &market, json) != 0) {  // the market was checked above: what fails here is the run's
    fprintf(stderr, "ppo-bench envs: trading env: %s\n", error_message());
    status = EXIT_RUNTIME;
  }
  trading_market_free(&market);
  int lost = json ? ferror(json) : 0;  // a failed flush dropped its bytes: only the error flag still knows
  if (json && (fclose(json) != 0 || lost)) {
    fprintf(stderr, "ppo-bench envs: write error on %s\n", o.json_path);
    status = EXIT_RUNTIME;
  }
  return status;
}
