// test/test_vecenv.c: VecEnv against a plain serial loop over the same envs, thread-count independence,
// auto-reset, episode logs, shared context, and no allocation after init.
//
// The reference (run_serial) is the obvious loop over EnvKind's functions with its own auto-reset,
// its own episode counters and its own list of finished episodes; VecEnv must reproduce it bit for
// bit. A probe kind defined here covers what CartPole does not: continuous actions, a shared context,
// L > 2, random episode ends with both flags, and which OpenMP thread stepped each env.
//
// Allocation counting: this suite is linked with -Wl,--wrap=malloc,... so every malloc-family call
// made by our code (the test, ppo_envs, ppo_common) goes through the counters below; libc's and
// libgomp's internal allocations are not ours and are not counted.
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/rng.h"
#include "envs/cartpole.h"
#include "envs/env.h"
#include "envs/vecenv.h"
#include "test/alloc_counter.h"

// --- allocation counters (see the header comment) ---------------------------------------------------

// --- the probe kind -------------------------------------------------------------------------------

#define PROBE_OBS 3
#define PROBE_ACT 2
#define PROBE_LOG 3

typedef struct {
  float scale;      // read by every env, never written
  int length_base;  // episodes last length_base + U{0..5} steps
} ProbeShared;

typedef struct {
  const ProbeShared *shared;
  Rng rng;
  int env_index, num_envs;
  int t, length;  // steps taken, steps this episode lasts
  double episode_return;
  float action_sum;       // sum of action[0] over the episode: the probe's own log field
  unsigned threads_seen;  // bit k: OpenMP thread k stepped this env
} Probe;

static const char *const probe_log_names[PROBE_LOG] = {"episode_return", "episode_length", "action_sum"};

static int probe_describe(EnvSpec *spec, const void *params, const void *shared) {
  (void)params;  // the probe has none
  if (!shared) {
    error_set("probe: needs a shared context");
    return -1;
  }
  *spec = (EnvSpec){.obs_dim = PROBE_OBS,
                    .action_kind = ENV_ACTION_CONTINUOUS,
                    .action_dim = PROBE_ACT,
                    .action_low = -1,
                    .action_high = 1,
                    .state_size = sizeof(Probe),
                    .log_size = PROBE_LOG};
  for (int k = 0; k < PROBE_LOG; k++) spec->log_names[k] = probe_log_names[k];
  return 0;
}

static void probe_init(void *env, const void *params, const void *shared, int env_index, int num_envs, Rng rng) {
  (void)params;
  *(Probe *)env = (Probe){.shared = shared, .rng = rng, .env_index = env_index, .num_envs = num_envs};
}

static void probe_reset(void *env_, float *obs) {
  Probe *env = env_;
  env->t = 0;
  env->length = env->shared->length_base + (int)rng_below(&env->rng, 6);
  env->episode_return = 0.0;
  env->action_sum = 0.0f;
  obs[0] = (float)env->env_index, obs[1] = 0.0f, obs[2] = (float)rng_uniform(&env->rng);
}

static void probe_step(void *env_, const void *action_, float *obs, float *reward, uint8_t *terminated,
                       uint8_t *truncated, float *episode_log) {
  Probe *env = env_;
  const float *action = action_;
  env->threads_seen |= 1u << omp_get_thread_num();
  env->t++;
  *reward = env->shared->scale * (action[0] - 2.0f * action[1]) + (float)rng_uniform(&env->rng);
  env->episode_return += *reward;
  env->action_sum += action[0];
  obs[0] = (float)env->env_index, obs[1] = (float)env->t, obs[2] = *reward;
  int end = env->t == env->length;
  *terminated = end && (env->length % 2 == 1 || env->length % 3 == 0);  // some ends are both
  *truncated = end && env->length % 2 == 0;
  if (end) {
    episode_log[0] = (float)env->episode_return;
    episode_log[1] = (float)env->t;
    episode_log[2] = env->action_sum;
  }
}

static void probe_close(void *env) { ((Probe *)env)->shared = NULL; }

static const EnvKind probe_kind = {"probe",    probe_describe, probe_init, probe_reset,
                                   probe_step, probe_close,    NULL,       NULL};

// --- episode-log means ------------------------------------------------------------------------------

// A field an episode has no value for (NaN: the trading env's hit rate without a closed trade) is
// left out of that field's mean and count; the other fields keep every episode.
Test(vecenv, log_means_skip_fields_without_a_value) {
  const ProbeShared shared = {1.0f, 3};
  VecEnv *vec = vecenv_init(&probe_kind, NULL, &shared, 2, 1, 10, 1);
  cr_assert_not_null(vec, "%s", error_message());
  VecEnvStateInfo info = vecenv_state_info(vec);
  cr_assert_eq(info.log_size, PROBE_LOG);
  unsigned char *states = calloc((size_t)info.num_envs, info.state_size);
  float *ring = calloc((size_t)info.log_capacity * PROBE_LOG, sizeof(float));
  vecenv_state_save(vec, states, ring);
  const float held[3][PROBE_LOG] = {{1, 2, NAN}, {3, 4, 5}, {5, 6, NAN}};
  memcpy(ring, held, sizeof held);
  info.ring_count = 3, info.ring_next = 3, info.episodes_total = 3;
  cr_assert_eq(vecenv_state_load(vec, &info, states, ring), 0, "%s", error_message());
  int n;
  cr_expect_eq(vecenv_log_sum(vec, 2, &n), 5.0);
  cr_expect_eq(n, 1);
  cr_expect_eq(vecenv_log_mean(vec, 2), 5.0, "the one episode with a value");
  cr_expect_eq(vecenv_log_mean(vec, 0), 3.0, "every episode");
  cr_expect_eq(vecenv_log_count(vec), 3);
  ring[2] = ring[PROBE_LOG + 2] = NAN;
  cr_assert_eq(vecenv_state_load(vec, &info, states, ring), 0, "%s", error_message());
  cr_expect(isnan(vecenv_log_mean(vec, 2)), "no episode with a value");
  free(states), free(ring);
  vecenv_free(vec);
}

// --- trajectories ---------------------------------------------------------------------------------

enum { T_STEPS = 1500 };

typedef struct {
  int n, obs_dim, log_size, steps;
  float *obs;           // (T+1, N, O): after reset, then after each step
  float *rewards;       // (T, N)
  uint8_t *terminated;  // (T, N)
  uint8_t *truncated;   // (T, N)
  float *final_obs;     // (T, N, O), NaN where the episode did not end
  float *episodes;      // (E, L) finished episodes in (step, env index) order
  int episode_count;
} Trajectory;

static Trajectory trajectory_alloc(const EnvSpec *spec, int n, int steps) {
  Trajectory tr = {.n = n, .obs_dim = spec->obs_dim, .log_size = spec->log_size, .steps = steps};
  size_t no = (size_t)n * spec->obs_dim;
  tr.obs = malloc((steps + 1) * no * sizeof(float));
  tr.rewards = malloc((size_t)steps * n * sizeof(float));
  tr.terminated = malloc((size_t)steps * n);
  tr.truncated = malloc((size_t)steps * n);
  tr.final_obs = malloc(steps * no * sizeof(float));
  tr.episodes = malloc((size_t)steps * n * spec->log_size * sizeof(float));
  return tr;
}

static void trajectory_free(Trajectory *tr) {
  free(tr->obs), free(tr->rewards), free(tr->terminated), free(tr->truncated), free(tr->final_obs);
  free(tr->episodes);
}

// Actions of step t: discrete uniform in 0..n-1 or continuous in (-1, 1], from Philox keyed by (t, i).
static void actions_fill(void *actions, const EnvSpec *spec, int n, int t) {
  for (int i = 0; i < n; i++) {
    if (spec->action_kind == ENV_ACTION_DISCRETE) {
      ((int32_t *)actions)[i] = (int32_t)(philox_u32(99, (uint64_t)t, (uint64_t)i) % (uint32_t)spec->action_count);
    } else {
      for (int k = 0; k < spec->action_dim; k++)
        ((float *)actions)[i * spec->action_dim + k] =
            2.0f * rng_uniform_from_u32(philox_u32(99, (uint64_t)t, (uint64_t)(i * spec->action_dim + k))) - 1.0f;
    }
  }
}

// The reference: the obvious serial loop, with its own auto-reset and its own episode lengths.
static Trajectory run_serial(const EnvKind *kind, const void *params, const void *shared, int n, uint64_t seed,
                             int steps) {
  EnvSpec spec;
  cr_assert_eq(kind->describe(&spec, params, shared), 0);
  Trajectory tr = trajectory_alloc(&spec, n, steps);
  size_t o = spec.obs_dim;
  unsigned char *states = calloc(n, spec.state_size);
  int *lengths = calloc(n, sizeof(int));
  void *actions = malloc((size_t)n * spec.action_dim * 4);
  float log[ENV_LOG_MAX];
  for (int i = 0; i < n; i++) {
    Rng rng;
    rng_seed(&rng, rng_stream_seed(seed, (uint64_t)i));
    kind->init(states + i * spec.state_size, params, shared, i, n, rng);
    kind->reset(states + i * spec.state_size, tr.obs + i * o);
  }
  for (int t = 0; t < steps; t++) {
    actions_fill(actions, &spec, n, t);
    for (int i = 0; i < n; i++) {
      void *env = states + i * spec.state_size;
      float *obs = tr.obs + ((size_t)(t + 1) * n + i) * o;
      float *final_obs = tr.final_obs + ((size_t)t * n + i) * o;
      size_t ti = (size_t)t * n + i;
      const void *action = spec.action_kind == ENV_ACTION_DISCRETE
                               ? (const void *)((int32_t *)actions + i)
                               : (const void *)((float *)actions + i * spec.action_dim);
      kind->step(env, action, obs, &tr.rewards[ti], &tr.terminated[ti], &tr.truncated[ti], log);
      lengths[i]++;
      for (size_t k = 0; k < o; k++) final_obs[k] = NAN;
      if (tr.terminated[ti] | tr.truncated[ti]) {
        cr_assert_eq(log[ENV_LOG_EPISODE_LENGTH], (float)lengths[i], "env %d step %d: logged length", i, t);
        memcpy(tr.episodes + (size_t)tr.episode_count++ * spec.log_size, log, spec.log_size * sizeof(float));
        memcpy(final_obs, obs, o * sizeof(float));
        kind->reset(env, obs);
        lengths[i] = 0;
      }
    }
  }
  for (int i = 0; i < n; i++) kind->close(states + i * spec.state_size);
  free(states), free(lengths), free(actions);
  return tr;
}

// The same through VecEnv; checks the log ring against the reference's episode list as it goes.
static Trajectory run_vecenv(const EnvKind *kind, const void *params, const void *shared, int n, uint64_t seed,
                             int steps, int threads, int log_capacity, const Trajectory *reference, VecEnv **keep) {
  VecEnv *vec = vecenv_init(kind, params, shared, n, seed, log_capacity, threads);
  cr_assert_not_null(vec, "%s", error_message());
  const EnvSpec *spec = vecenv_spec(vec);
  Trajectory tr = trajectory_alloc(spec, n, steps);
  size_t no = (size_t)n * spec->obs_dim;
  void *actions = malloc((size_t)n * spec->action_dim * 4);
  float *obs = malloc(no * sizeof(float));
  VecEnvBuffers buf = {actions, obs, malloc(n * sizeof(float)), malloc(n), malloc(n), malloc(no * sizeof(float))};
  vecenv_reset(vec, obs);
  memcpy(tr.obs, obs, no * sizeof(float));
  for (int t = 0; t < steps; t++) {
    actions_fill(actions, spec, n, t);
    for (size_t k = 0; k < no; k++) buf.final_obs[k] = NAN;  // rows not written must stay NaN
    vecenv_step(vec, &buf);
    memcpy(tr.obs + (t + 1) * no, obs, no * sizeof(float));
    memcpy(tr.rewards + (size_t)t * n, buf.rewards, n * sizeof(float));
    memcpy(tr.terminated + (size_t)t * n, buf.terminated, n);
    memcpy(tr.truncated + (size_t)t * n, buf.truncated, n);
    memcpy(tr.final_obs + t * no, buf.final_obs, no * sizeof(float));
    if (reference && (t % 97 == 0 || t == steps - 1)) {
      // The ring holds the last min(total, K) episodes of the reference, oldest first.
      int total = 0;
      for (int u = 0; u <= t; u++)
        for (int i = 0; i < n; i++) total += reference->terminated[u * n + i] | reference->truncated[u * n + i];
      cr_assert_eq(vecenv_log_total(vec), (uint64_t)total, "step %d", t);
      int held = total < log_capacity ? total : log_capacity;
      cr_assert_eq(vecenv_log_count(vec), held, "step %d", t);
      double sum = 0.0;
      for (int k = 0; k < held; k++) {
        const float *expected = reference->episodes + (size_t)(total - held + k) * spec->log_size;
        cr_assert_eq(memcmp(vecenv_log_get(vec, k), expected, spec->log_size * sizeof(float)), 0,
                     "step %d: held episode %d of %d differs", t, k, held);
        sum += expected[ENV_LOG_EPISODE_RETURN];
      }
      if (held > 0)
        cr_assert_eq(vecenv_log_mean(vec, ENV_LOG_EPISODE_RETURN), sum / held, "step %d", t);
      else
        cr_assert(isnan(vecenv_log_mean(vec, ENV_LOG_EPISODE_RETURN)));
    }
  }
  free(actions), free(obs), free(buf.rewards), free(buf.terminated), free(buf.truncated), free(buf.final_obs);
  if (keep)
    *keep = vec;
  else
    vecenv_free(vec);
  return tr;
}

// Index of the first differing element, -1 if equal (bitwise, NaN == NaN of the same bits).
static long first_difference(const void *a, const void *b, size_t count, size_t size) {
  for (size_t i = 0; i < count; i++)
    if (memcmp((const char *)a + i * size, (const char *)b + i * size, size) != 0) return (long)i;
  return -1;
}

static void trajectory_assert_equal(const Trajectory *a, const Trajectory *b, const char *what) {
  size_t no = (size_t)a->n * a->obs_dim, tn = (size_t)a->steps * a->n;
  long d;
  d = first_difference(a->obs, b->obs, (a->steps + 1) * no, sizeof(float));
  cr_assert_eq(d, -1, "%s: obs differ first at step %ld env %ld", what, d / (long)no - 1, d % (long)no / a->obs_dim);
  d = first_difference(a->rewards, b->rewards, tn, sizeof(float));
  cr_assert_eq(d, -1, "%s: rewards differ first at step %ld env %ld", what, d / a->n, d % a->n);
  d = first_difference(a->terminated, b->terminated, tn, 1);
  cr_assert_eq(d, -1, "%s: terminated differs first at step %ld env %ld", what, d / a->n, d % a->n);
  d = first_difference(a->truncated, b->truncated, tn, 1);
  cr_assert_eq(d, -1, "%s: truncated differs first at step %ld env %ld", what, d / a->n, d % a->n);
  d = first_difference(a->final_obs, b->final_obs, a->steps * no, sizeof(float));
  cr_assert_eq(d, -1, "%s: final_obs differs first at step %ld env %ld", what, d / (long)no, d % (long)no / a->obs_dim);
}

// --- tests ----------------------------------------------------------------------------------------

Test(vecenv, cartpole_equals_serial_loop_for_any_thread_count) {
  enum { N = 7 };  // odd: the static schedule splits it unevenly
  Trajectory ref = run_serial(&cartpole_kind, NULL, NULL, N, 2024, T_STEPS);
  cr_assert_gt(ref.episode_count, 200, "enough episodes ended (random actions: about 22 steps each)");
  const int threads[] = {1, 2, 3};
  for (int k = 0; k < 3; k++) {
    for (int capacity = 7; capacity <= 1000; capacity += 993) {  // a ring that wraps and one that does not
      Trajectory vec = run_vecenv(&cartpole_kind, NULL, NULL, N, 2024, T_STEPS, threads[k], capacity, &ref, NULL);
      char what[64];
      snprintf(what, sizeof what, "%d threads, capacity %d", threads[k], capacity);
      trajectory_assert_equal(&ref, &vec, what);
      trajectory_free(&vec);
    }
  }
  trajectory_free(&ref);
}

Test(vecenv, probe_equals_serial_loop_for_any_thread_count) {
  enum { N = 8 };
  const ProbeShared shared = {.scale = 0.25f, .length_base = 3};
  Trajectory ref = run_serial(&probe_kind, NULL, &shared, N, 77, 400);
  int both = 0;
  for (int k = 0; k < 400 * N; k++) both += ref.terminated[k] & ref.truncated[k];
  cr_assert_gt(both, 0, "the probe ends some episodes with both flags");
  for (int threads = 1; threads <= 4; threads++) {
    VecEnv *vec_env;
    Trajectory vec = run_vecenv(&probe_kind, NULL, &shared, N, 77, 400, threads, 50, &ref, &vec_env);
    char what[32];
    snprintf(what, sizeof what, "%d threads", threads);
    trajectory_assert_equal(&ref, &vec, what);
    // schedule(static) over 8 envs: thread k steps envs [k*8/T, (k+1)*8/T); one thread per env always.
    for (int i = 0; i < N; i++) {
      Probe *p = vecenv_env(vec_env, i);
      cr_assert_eq(p->shared, &shared, "env %d keeps the shared pointer, no copy", i);
      cr_assert_eq(p->env_index, i);
      cr_assert_eq(p->num_envs, N);
      unsigned expected = 1u << (i * threads / N);
      cr_assert_eq(p->threads_seen, expected, "%d threads: env %d stepped by threads %#x", threads, i, p->threads_seen);
    }
    vecenv_free(vec_env);
    trajectory_free(&vec);
  }
  trajectory_free(&ref);
}

Test(vecenv, auto_reset_keeps_final_obs) {
  enum { N = 5 };
  Trajectory tr = run_vecenv(&cartpole_kind, NULL, NULL, N, 9, T_STEPS, 2, 100, NULL, NULL);
  int terminations = 0;
  for (int t = 0; t < T_STEPS; t++) {
    for (int i = 0; i < N; i++) {
      size_t ti = (size_t)t * N + i;
      const float *fin = tr.final_obs + ti * 4, *next = tr.obs + (ti + N) * 4, *prev = tr.obs + ti * 4;
      if (tr.terminated[ti]) {
        terminations++;
        cr_assert(fabsf(fin[0]) > 2.4f || fabsf(fin[2]) > 0.2094f, "step %d env %d: final obs inside the limits", t, i);
        for (int k = 0; k < 4; k++)
          cr_assert(fabsf(next[k]) <= 0.05f, "step %d env %d: obs is not a fresh start", t, i);
        // final_obs is one Euler step from the previous observation: x moved by tau * x_dot.
        cr_assert_float_eq(fin[0], prev[0] + 0.02f * prev[1], 1e-5, "step %d env %d", t, i);
      } else {
        cr_assert_eq(tr.truncated[ti], 0, "random actions never reach 500 steps");
        for (int k = 0; k < 4; k++) cr_assert(isnan(fin[k]), "step %d env %d: final_obs row written", t, i);
      }
    }
  }
  cr_assert_gt(terminations, 100);
  trajectory_free(&tr);
}

Test(vecenv, truncation_at_500_through_vecenv) {
  // Hold every pole upright before each step: only the TimeLimit can end the episodes.
  enum { N = 3 };
  VecEnv *vec = vecenv_init(&cartpole_kind, NULL, NULL, N, 1, 10, 2);
  float obs[N * 4], rewards[N], final_obs[N * 4];
  int32_t actions[N] = {0, 1, 1};
  uint8_t terminated[N], truncated[N];
  VecEnvBuffers buf = {actions, obs, rewards, terminated, truncated, final_obs};
  vecenv_reset(vec, obs);
  const double upright[4] = {0.01, 0, 0, 0};
  for (int t = 1; t <= 1000; t++) {
    for (int i = 0; i < N; i++) cartpole_state_set(vecenv_env(vec, i), upright, obs + 4 * i);
    vecenv_step(vec, &buf);
    for (int i = 0; i < N; i++) {
      cr_assert_eq(terminated[i], 0);
      cr_assert_eq(truncated[i], t % 500 == 0, "step %d env %d", t, i);
      if (truncated[i]) cr_assert_eq(final_obs[4 * i], 0.01f, "final obs is the pre-reset observation");
    }
  }
  cr_assert_eq(vecenv_log_total(vec), 2 * N);
  for (int k = 0; k < 2 * N; k++) {
    cr_assert_eq(vecenv_log_get(vec, k)[ENV_LOG_EPISODE_LENGTH], 500.0f);
    cr_assert_eq(vecenv_log_get(vec, k)[ENV_LOG_EPISODE_RETURN], 500.0f);
  }
  cr_assert_eq(vecenv_log_mean(vec, ENV_LOG_EPISODE_LENGTH), 500.0);
  vecenv_free(vec);
}

Test(vecenv, no_allocation_after_init) {
  enum { N = 32 };
  long before_init = alloc_counter_read();
  VecEnv *vec = vecenv_init(&cartpole_kind, NULL, NULL, N, 5, 100, 2);
  cr_assert_gt(alloc_counter_read(), before_init,
               "vecenv_init's slab was not counted: link this suite with -Wl,--wrap=malloc,...");
  float *obs = malloc(sizeof(float) * N * 4), *final_obs = malloc(sizeof(float) * N * 4);
  float *rewards = malloc(sizeof(float) * N);
  int32_t *actions = malloc(sizeof(int32_t) * N);
  uint8_t *terminated = malloc(N), *truncated = malloc(N);
  VecEnvBuffers buf = {actions, obs, rewards, terminated, truncated, final_obs};
  EnvSpec spec = *vecenv_spec(vec);
  vecenv_reset(vec, obs);
  long before_steps = alloc_counter_read();
  for (int t = 0; t < 20000; t++) {  // about 29,000 episodes end and reset in here
    actions_fill(actions, &spec, N, t);
    vecenv_step(vec, &buf);
  }
  (void)vecenv_log_mean(vec, ENV_LOG_EPISODE_RETURN);
  cr_assert_eq(alloc_counter_read(), before_steps, "vecenv_step allocated");
  cr_assert_gt(vecenv_log_total(vec), 10000);
  vecenv_free(vec);
  free(obs), free(final_obs), free(rewards), free(actions), free(terminated), free(truncated);
}

Test(vecenv, bad_arguments_are_reported) {
  const ProbeShared shared = {1.0f, 3};
  error_clear();
  cr_assert_null(vecenv_init(&cartpole_kind, NULL, NULL, 0, 1, 10, 1));
  cr_assert_not_null(strstr(error_message(), "num_envs = 0"), "%s", error_message());
  cr_assert_null(vecenv_init(&cartpole_kind, NULL, NULL, 4, 1, 0, 1));
  cr_assert_not_null(strstr(error_message(), "log_capacity = 0"), "%s", error_message());
  cr_assert_null(vecenv_init(&cartpole_kind, NULL, NULL, 4, 1, 10, -1));
  cr_assert_not_null(strstr(error_message(), "num_threads = -1"), "%s", error_message());
  cr_assert_null(vecenv_init(&probe_kind, NULL, NULL, 4, 1, 10, 1));
  cr_assert_not_null(strstr(error_message(), "env 'probe': probe: needs a shared context"), "%s", error_message());
  VecEnv *vec = vecenv_init(&probe_kind, NULL, &shared, 4, 1, 10, 1);
  cr_assert_not_null(vec);
  cr_assert_eq(vecenv_num_envs(vec), 4);
  cr_assert_eq(vecenv_log_count(vec), 0);
  cr_assert(isnan(vecenv_log_mean(vec, 2)));
  vecenv_free(vec);
  vecenv_free(NULL);
}

Test(vecenv, step_before_reset_fails_loudly, .exit_code = EXIT_RUNTIME) {
  VecEnv *vec = vecenv_init(&cartpole_kind, NULL, NULL, 2, 1, 10, 1);
  float obs[8], rewards[2], final_obs[8];
  int32_t actions[2] = {0, 1};
  uint8_t terminated[2], truncated[2];
  VecEnvBuffers buf = {actions, obs, rewards, terminated, truncated, final_obs};
  vecenv_step(vec, &buf);
}

Test(vecenv, discrete_action_out_of_range_fails_loudly, .exit_code = EXIT_RUNTIME) {
  VecEnv *vec = vecenv_init(&cartpole_kind, NULL, NULL, 2, 1, 10, 1);
  float obs[8], rewards[2], final_obs[8];
  int32_t actions[2] = {1, 2};
  uint8_t terminated[2], truncated[2];
  VecEnvBuffers buf = {actions, obs, rewards, terminated, truncated, final_obs};
  vecenv_reset(vec, obs);
  vecenv_step(vec, &buf);
}

// Two slices of 4 envs (the VecEnvs of 2 ranks, ppo/dist.h) are envs 0..3 and 4..7 of one VecEnv of
// 8: the same observations after reset and after steps with the same actions. A slice outside the
// whole is refused.
Test(vecenv, slices_are_the_envs_of_the_whole) {
  enum { N = 4, O = 4 };
  VecEnv *whole = vecenv_init(&cartpole_kind, NULL, NULL, 2 * N, 9, 10, 1);
  VecEnv *part[2] = {vecenv_init_slice(&cartpole_kind, NULL, NULL, N, 0, 2 * N, 9, 10, 1),
                     vecenv_init_slice(&cartpole_kind, NULL, NULL, N, N, 2 * N, 9, 10, 1)};
  cr_assert(whole && part[0] && part[1], "%s", error_message());
  float obs_whole[2 * N * O], obs_part[2][N * O], final_whole[2 * N * O], final_part[N * O], rewards[2 * N];
  uint8_t term[2 * N], trunc[2 * N];
  int32_t actions[2 * N];
  vecenv_reset(whole, obs_whole);
  for (int r = 0; r < 2; r++) vecenv_reset(part[r], obs_part[r]);
  for (int step = 0; step <= 50; step++) {
    for (int r = 0; r < 2; r++)
      cr_assert(memcmp(obs_part[r], obs_whole + r * N * O, sizeof obs_part[r]) == 0, "slice %d differs at step %d", r,
                step);
    for (int i = 0; i < 2 * N; i++) actions[i] = (step * 7 + i * 3) % 5 < 2;
    vecenv_step(whole, &(VecEnvBuffers){.actions = actions,
                                        .obs = obs_whole,
                                        .rewards = rewards,
                                        .terminated = term,
                                        .truncated = trunc,
                                        .final_obs = final_whole});
    for (int r = 0; r < 2; r++)
      vecenv_step(part[r], &(VecEnvBuffers){.actions = actions + r * N,
                                            .obs = obs_part[r],
                                            .rewards = rewards,
                                            .terminated = term,
                                            .truncated = trunc,
                                            .final_obs = final_part});
  }
  cr_expect_null(vecenv_init_slice(&cartpole_kind, NULL, NULL, N, N + 1, 2 * N, 9, 10, 1));
  cr_expect(strstr(error_message(), "envs 5..8 of 8"), "%s", error_message());
  vecenv_free(whole);
  vecenv_free(part[0]);
  vecenv_free(part[1]);
}
