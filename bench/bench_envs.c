// bench/bench_envs.c: CartPole steps per second, headless, in plain C (STYLE rule 13).
//
//   bench_envs [--envs N] [--steps S] [--repeats R]     defaults: 32 envs, 100000 vector steps, 7 repeats
//
// For 1 and 2 OpenMP threads: a VecEnv of N CartPoles with random actions, a warm-up, then R timed
// runs of S vector steps each (S * N env steps, auto-resets included); the table shows the median
// and the range of env steps per second, and per thread. A "serial" row steps the same N envs with a
// plain loop (no VecEnv, no OpenMP) to show VecEnv's own cost. Actions come from counter-based Philox
// (one 128-bit block per vector step gives up to 128 actions), generated inside the timed loop.
// Issue target: at least 20 M CartPole steps/s per core.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/error.h"
#include "common/rng.h"
#include "common/timer.h"
#include "envs/cartpole.h"
#include "envs/vecenv.h"

#define BENCH_SEED 12345
#define MAX_ENVS 128  // one Philox block of actions per vector step

typedef struct {
  int num_envs;  // N
  long steps;    // S vector steps per timed run
  int repeats;   // R
} BenchOptions;

// Actions of vector step t: bit i of the block's 128 bits, for env i (N <= 128).
static void actions_fill(int32_t *actions, int num_envs, uint64_t t) {
  Philox4x32 block = philox_block(BENCH_SEED, 0, t);
  for (int i = 0; i < num_envs; i++) actions[i] = (int32_t)((block.v[i >> 5] >> (i & 31)) & 1u);
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
} VecContext;

static double run_vecenv(void *context, long steps, uint64_t *t) {
  VecContext *c = context;
  int n = vecenv_num_envs(c->vec);
  int32_t *actions = (int32_t *)c->buffers.actions;
  double t0 = timer_now();
  for (long s = 0; s < steps; s++) {
    actions_fill(actions, n, (*t)++);
    vecenv_step(c->vec, &c->buffers);
  }
  return timer_since(t0);
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

static int parse_options(int argc, char **argv, BenchOptions *o) {
  *o = (BenchOptions){.num_envs = 32, .steps = 100000, .repeats = 7};
  for (int a = 1; a < argc; a++) {
    long value = a + 1 < argc ? strtol(argv[a + 1], NULL, 10) : 0;
    if (strcmp(argv[a], "--envs") == 0 && value >= 1 && value <= MAX_ENVS)
      o->num_envs = (int)value;
    else if (strcmp(argv[a], "--steps") == 0 && value >= 1)
      o->steps = value;
    else if (strcmp(argv[a], "--repeats") == 0 && value >= 1)
      o->repeats = (int)value;
    else {
      error_set("%s: bad option or value (usage: bench_envs [--envs 1..%d] [--steps S>=1] [--repeats R>=1])", argv[a],
                MAX_ENVS);
      return -1;
    }
    a++;
  }
  return 0;
}

int main(int argc, char **argv) {
  BenchOptions o;
  if (parse_options(argc, argv, &o) != 0) {
    fprintf(stderr, "bench_envs: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  const int n = o.num_envs;
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
  free(sc.envs);

  for (int threads = 1; threads <= 2; threads++) {
    VecContext vc = {vecenv_init(&cartpole_kind, &params, NULL, n, BENCH_SEED, 100, threads),
                     {actions, obs, rewards, terminated, truncated, final_obs}};
    if (!vc.vec) {
      fprintf(stderr, "bench_envs: %s\n", error_message());
      return EXIT_BAD_INPUT;
    }
    vecenv_reset(vc.vec, obs);
    bench_repeat(run_vecenv, &vc, &o, &median, &lo, &hi);
    printf("%-8s %7d %14.2f M %11.2f M - %7.2f M %12.2f M %10.2f %12zu\n", "vecenv", threads, median / 1e6, lo / 1e6,
           hi / 1e6, median / 1e6 / threads, 1e9 / median, vecenv_memory_bytes(vc.vec));
    printf("         episodes finished %llu, mean length of the last %d: %.1f\n",
           (unsigned long long)vecenv_log_total(vc.vec), vecenv_log_count(vc.vec),
           vecenv_log_mean(vc.vec, ENV_LOG_EPISODE_LENGTH));
    vecenv_free(vc.vec);
  }
  free(actions), free(obs), free(final_obs), free(rewards), free(log), free(terminated), free(truncated);
  return EXIT_OK;
}
