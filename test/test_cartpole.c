// test/test_cartpole.c: CartPole-v1 against Gymnasium's own trajectories, thresholds and time limit.
//
// The fixture test/data/cartpole_gymnasium.csv comes from gymnasium 1.x (test/make_cartpole_fixture.py):
// initial states from env.reset(seed=...), fixed action sequences, every float64 state, float32
// observation, reward and both flags. We install Gymnasium's initial state and replay the actions;
// the float64 state and the float32 observation must agree bit for bit at every step.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "envs/cartpole.h"
#include "envs/env.h"
#include "envs/vecenv.h"

#define FIXTURE PPO_SOURCE_DIR "/test/data/cartpole_gymnasium.csv"
#define THETA_MAX (12 * 2 * 3.141592653589793 / 360)

static uint64_t double_bits(double v) {
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  return u;
}

static uint32_t float_bits(float v) {
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  return u;
}

// Splits `line` at commas in place (empty fields kept); returns the number of fields.
static int split_csv(char *line, char **fields, int max_fields) {
  int n = 0;
  line[strcspn(line, "\r\n")] = '\0';
  for (char *p = line; n < max_fields;) {
    fields[n++] = p;
    char *comma = strchr(p, ',');
    if (!comma) break;
    *comma = '\0';
    p = comma + 1;
  }
  return n;
}

Test(cartpole, trajectories_equal_gymnasium) {
  FILE *file = fopen(FIXTURE, "r");
  cr_assert_not_null(file, "cannot open %s", FIXTURE);
  char line[1024];
  char *f[16];
  cr_assert_not_null(fgets(line, sizeof line, file));
  cr_assert_eq(split_csv(line, f, 16), 15, "header");
  cr_assert_str_eq(f[14], "truncated");

  CartPoleParams params = cartpole_params_default();
  CartPole env;
  Rng rng;
  rng_seed(&rng, 1);
  float obs[4], episode_log[CARTPOLE_LOG_SIZE];
  int rows = 0, steps = 0, episodes = 0, terminations = 0, truncations = 0, both = 0, sets = 0;
  while (fgets(line, sizeof line, file)) {
    rows++;
    cr_assert_eq(split_csv(line, f, 16), 15, "row %d: field count", rows);
    int episode = atoi(f[1]), t = atoi(f[2]), action = atoi(f[3]);
    double state[4];
    for (int k = 0; k < 4; k++) state[k] = strtod(f[4 + k], NULL);
    if (strcmp(f[0], "reset") == 0) {
      episodes++;
      cartpole_init(&env, &params, rng);
      cartpole_reset(&env, obs);
      cartpole_state_set(&env, state, obs);  // Gymnasium's initial state (numpy's generator, not ours)
    } else if (strcmp(f[0], "set") == 0) {
      sets++;
      cartpole_state_set(&env, state, obs);
      continue;
    } else {
      cr_assert_str_eq(f[0], "step", "row %d: kind", rows);
      steps++;
      float reward = 0.0f;
      uint8_t terminated = 9, truncated = 9;
      cartpole_step(&env, action, obs, &reward, &terminated, &truncated, episode_log);
      double got[4] = {env.x, env.x_dot, env.theta, env.theta_dot};
      for (int k = 0; k < 4; k++)
        cr_assert_eq(double_bits(got[k]), double_bits(state[k]),
                     "episode %d step %d: state[%d] = %.17g (%a), Gymnasium %.17g (%a)", episode, t, k, got[k], got[k],
                     state[k], state[k]);
      cr_assert_eq(reward, (float)strtod(f[12], NULL), "episode %d step %d: reward", episode, t);
      cr_assert_eq(terminated, atoi(f[13]), "episode %d step %d: terminated = %d", episode, t, terminated);
      cr_assert_eq(truncated, atoi(f[14]), "episode %d step %d: truncated = %d", episode, t, truncated);
      cr_assert_eq(env.steps, t, "episode %d: step counter", episode);
      if (terminated | truncated) {
        cr_assert_eq(episode_log[ENV_LOG_EPISODE_LENGTH], (float)t, "episode %d: logged length", episode);
        cr_assert_eq(episode_log[ENV_LOG_EPISODE_RETURN], (float)t, "episode %d: logged return", episode);
      }
      terminations += terminated;
      truncations += truncated;
      both += terminated & truncated;
    }
    for (int k = 0; k < 4; k++) {
      float expected = strtof(f[8 + k], NULL);
      cr_assert_eq(float_bits(obs[k]), float_bits(expected), "episode %d t %d: obs[%d] = %.9g, Gymnasium %.9g", episode,
                   t, k, obs[k], expected);
    }
  }
  fclose(file);
  // The fixture's shape, so a truncated or regenerated file cannot pass by holding less.
  cr_assert_eq(episodes, 18);
  cr_assert_eq(sets, 9);
  cr_assert_eq(steps, 1493);
  cr_assert_eq(terminations, 13, "6 random + 2 drift + 4 past-threshold + 1 both");
  cr_assert_eq(truncations, 2, "one 500-step episode + the terminated-and-truncated one");
  cr_assert_eq(both, 1);
}

// One step from `state` with action 1; returns terminated and the new state.
static int step_from(const double state[4], double out[4]) {
  CartPoleParams params = cartpole_params_default();
  CartPole env;
  Rng rng;
  rng_seed(&rng, 3);
  float obs[4], reward, episode_log[CARTPOLE_LOG_SIZE];
  uint8_t terminated, truncated;
  cartpole_init(&env, &params, rng);
  cartpole_reset(&env, obs);
  cartpole_state_set(&env, state, obs);
  cartpole_step(&env, 1, obs, &reward, &terminated, &truncated, episode_log);
  out[0] = env.x, out[1] = env.x_dot, out[2] = env.theta, out[3] = env.theta_dot;
  cr_assert_eq(truncated, 0);
  cr_assert_eq(reward, 1.0f, "reward 1 on every step, the terminating one included");
  return terminated;
}

Test(cartpole, thresholds_are_strict_on_the_float64_state) {
  // With zero velocities the Euler step leaves x and theta where they are, on the boundary.
  // (float)2.4 > 2.4: an env that decided on the float32 observation would terminate here.
  double past_x = nextafter(2.4, 3.0), past_theta = nextafter(THETA_MAX, 1.0);
  const struct {
    double state[4];
    int terminated;
  } cases[] = {
      {{2.4, 0, 0, 0}, 0},        {{past_x, 0, 0, 0}, 1},      {{-2.4, 0, 0, 0}, 0},
      {{-past_x, 0, 0, 0}, 1},    {{0, 0, THETA_MAX, 0}, 0},   {{0, 0, past_theta, 0}, 1},
      {{0, 0, -THETA_MAX, 0}, 0}, {{0, 0, -past_theta, 0}, 1}, {{0, 0, 0.2094395, 0}, 0},
  };
  cr_assert_eq(THETA_MAX, 0.20943951023931953, "12 degrees in radians as Gymnasium computes it");
  cr_assert_gt((double)(float)2.4, 2.4);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    double after[4];
    int terminated = step_from(cases[c].state, after);
    cr_assert_eq(after[0], cases[c].state[0], "case %zu: x moved", c);
    cr_assert_eq(after[2], cases[c].state[2], "case %zu: theta moved", c);
    cr_assert_eq(terminated, cases[c].terminated, "case %zu: x = %.17g theta = %.17g", c, after[0], after[2]);
  }
}

Test(cartpole, truncates_after_max_episode_steps) {
  for (int max_steps = 1; max_steps <= 500; max_steps += 499) {  // 1 and CartPole-v1's 500
    CartPoleParams params = {.max_episode_steps = max_steps};
    CartPole env;
    Rng rng;
    rng_seed(&rng, 5);
    float obs[4], reward, episode_log[CARTPOLE_LOG_SIZE] = {-1, -1};
    uint8_t terminated, truncated;
    cartpole_init(&env, &params, rng);
    cartpole_reset(&env, obs);
    const double upright[4] = {0, 0, 0, 0};
    for (int t = 1; t <= max_steps; t++) {
      cartpole_state_set(&env, upright, obs);  // keeps the pole up: only the time limit can end it
      cartpole_step(&env, t & 1, obs, &reward, &terminated, &truncated, episode_log);
      cr_assert_eq(terminated, 0, "step %d", t);
      cr_assert_eq(truncated, t == max_steps, "step %d of %d", t, max_steps);
    }
    cr_assert_eq(episode_log[ENV_LOG_EPISODE_LENGTH], (float)max_steps);
    cr_assert_eq(episode_log[ENV_LOG_EPISODE_RETURN], (float)max_steps);
  }
  cr_assert_eq(cartpole_params_default().max_episode_steps, 500);
}

Test(cartpole, initial_state_is_uniform_within_005) {
  CartPoleParams params = cartpole_params_default();
  CartPole env;
  Rng rng;
  rng_seed(&rng, 11);
  cartpole_init(&env, &params, rng);
  float obs[4];
  double lo[4] = {1, 1, 1, 1}, hi[4] = {-1, -1, -1, -1}, sum[4] = {0};
  const int resets = 20000;
  for (int r = 0; r < resets; r++) {
    cartpole_reset(&env, obs);
    double s[4] = {env.x, env.x_dot, env.theta, env.theta_dot};
    for (int k = 0; k < 4; k++) {
      cr_assert(s[k] >= -0.05 && s[k] < 0.05, "reset %d: state[%d] = %.17g", r, k, s[k]);
      cr_assert_eq(obs[k], (float)s[k]);
      lo[k] = fmin(lo[k], s[k]), hi[k] = fmax(hi[k], s[k]), sum[k] += s[k];
    }
    cr_assert_eq(env.steps, 0);
  }
  for (int k = 0; k < 4; k++) {  // spread over the whole interval, centred (sd of the mean ~ 2e-4)
    cr_assert_lt(lo[k], -0.0499);
    cr_assert_gt(hi[k], 0.0499);
    cr_assert_lt(fabs(sum[k] / resets), 1e-3, "state[%d] mean %g", k, sum[k] / resets);
  }
}

Test(cartpole, initial_states_differ_per_env_and_repeat_per_seed) {
  enum { N = 16 };
  float a[N * 4], b[N * 4], c[N * 4];
  VecEnv *va = vecenv_init(&cartpole_kind, NULL, NULL, N, 42, 10, 1);
  VecEnv *vb = vecenv_init(&cartpole_kind, NULL, NULL, N, 42, 10, 2);
  VecEnv *vc = vecenv_init(&cartpole_kind, NULL, NULL, N, 43, 10, 1);
  vecenv_reset(va, a);
  vecenv_reset(vb, b);
  vecenv_reset(vc, c);
  cr_assert_eq(memcmp(a, b, sizeof a), 0, "same seed, same initial states");
  for (int i = 0; i < N; i++) {
    cr_assert_neq(memcmp(a + 4 * i, c + 4 * i, 4 * sizeof(float)), 0, "seed 42 vs 43, env %d", i);
    for (int j = 0; j < i; j++) cr_assert_neq(memcmp(a + 4 * i, a + 4 * j, 4 * sizeof(float)), 0, "envs %d, %d", i, j);
    for (int k = 0; k < 4; k++) cr_assert(fabsf(a[4 * i + k]) <= 0.05f);
  }
  // Env i's Rng is rng_stream_seed(seed, i): a lone CartPole seeded that way starts identically.
  CartPole lone;
  Rng rng;
  rng_seed(&rng, rng_stream_seed(42, 5));
  CartPoleParams params = cartpole_params_default();
  cartpole_init(&lone, &params, rng);
  float obs[4];
  cartpole_reset(&lone, obs);
  cr_assert_eq(memcmp(obs, a + 4 * 5, sizeof obs), 0);
  vecenv_free(va);
  vecenv_free(vb);
  vecenv_free(vc);
}

Test(cartpole, registry_and_spec) {
  cr_assert_eq(env_kind_find("cartpole"), &cartpole_kind);
  cr_assert_geq(env_kind_count(), 1);
  cr_assert_eq(env_kind_at(0), &cartpole_kind);
  cr_assert_null(env_kind_at(env_kind_count()));
  error_clear();
  cr_assert_null(env_kind_find("cartpol"));
  cr_assert_not_null(strstr(error_message(), "'cartpol'"), "message: %s", error_message());
  cr_assert_not_null(strstr(error_message(), "allowed: cartpole"), "message: %s", error_message());

  EnvSpec spec;
  cr_assert_eq(cartpole_kind.describe(&spec, NULL, NULL), 0);
  cr_assert_eq(spec.obs_dim, 4);
  cr_assert_eq(spec.action_kind, ENV_ACTION_DISCRETE);
  cr_assert_eq(spec.action_count, 2);
  cr_assert_eq(spec.log_size, 2);
  cr_assert_str_eq(spec.log_names[ENV_LOG_EPISODE_RETURN], "episode_return");
  cr_assert_str_eq(spec.log_names[ENV_LOG_EPISODE_LENGTH], "episode_length");
  cr_assert_eq(spec.state_size, sizeof(CartPole));
  cr_assert_leq(sizeof(CartPole), 128, "per-env state stays small");

  CartPoleParams bad = {.max_episode_steps = 0};
  error_clear();
  cr_assert_null(vecenv_init(&cartpole_kind, &bad, NULL, 4, 1, 10, 1));
  cr_assert_not_null(strstr(error_message(), "max_episode_steps = 0"), "message: %s", error_message());
}

// A state read back from a checkpoint is checked before it steps: finite physics and return, and a
// step count inside the episode limit.
Test(cartpole, damaged_states_are_refused) {
  CartPoleParams params = cartpole_params_default();
  Rng rng;
  rng_seed(&rng, 3);
  CartPole env;
  cartpole_init(&env, &params, rng);
  float obs[4];
  cartpole_reset(&env, obs);
  cr_assert_not_null(cartpole_kind.check_state);
  cr_expect_eq(cartpole_kind.check_state(&env, &env, NULL), 0, "%s", error_message());
  CartPole bad = env;
  bad.theta_dot = NAN;
  cr_expect_eq(cartpole_kind.check_state(&bad, &env, NULL), -1);
  cr_expect(strstr(error_message(), "must be finite"), "%s", error_message());
  bad = env;
  bad.steps = 501;
  cr_expect_eq(cartpole_kind.check_state(&bad, &env, NULL), -1);
  cr_expect(strstr(error_message(), "cart-pole step 501 of 500"), "%s", error_message());
  bad = env;  // a limit other than this run's: episodes would run past 500 steps
  bad.max_episode_steps = 2147483647;
  cr_expect_eq(cartpole_kind.check_state(&bad, &env, NULL), -1);
  cr_expect(strstr(error_message(), "episode limit 2147483647, but this run's is 500"), "%s", error_message());
}
