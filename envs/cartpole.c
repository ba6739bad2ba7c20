// envs/cartpole.c: CartPole-v1, a line-by-line transcription of Gymnasium's cartpole.py (see cartpole.h).
//
// Every expression keeps Gymnasium's operand order, since float64 arithmetic is not associative:
// `polemass_length * np.square(theta_dot) * sintheta` is (polemass_length * (theta_dot * theta_dot)) *
// sintheta here too. The constants are derived the way cartpole.py derives them (total_mass = masspole +
// masscart, and so on), so they are the same doubles.
#include "envs/cartpole.h"

#include <math.h>

#include "common/error.h"

// No fused multiply-add: Gymnasium rounds every product. GCC's ISO C modes already default to
// -ffp-contract=off (CMake also passes it for the whole envs target); clang needs to be told.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define GRAVITY 9.8
#define MASSCART 1.0
#define MASSPOLE 0.1
#define TOTAL_MASS (MASSPOLE + MASSCART)
#define LENGTH 0.5  // half the pole's length
#define POLEMASS_LENGTH (MASSPOLE * LENGTH)
#define FORCE_MAG 10.0
#define TAU 0.02
#define THETA_THRESHOLD (12 * 2 * 3.141592653589793 / 360)  // math.pi is this double
#define X_THRESHOLD 2.4
#define RESET_BOUND 0.05

static const char *const cartpole_log_names[CARTPOLE_LOG_SIZE] = {"episode_return", "episode_length"};

CartPoleParams cartpole_params_default(void) { return (CartPoleParams){.max_episode_steps = 500}; }

int cartpole_params_check(const CartPoleParams *params) {
  if (params->max_episode_steps < 1) {
    error_set("cartpole: max_episode_steps = %d: must be >= 1 (CartPole-v1 uses 500)", params->max_episode_steps);
    return -1;
  }
  return 0;
}

void cartpole_init(CartPole *env, const CartPoleParams *params, Rng rng) {
  *env = (CartPole){.rng = rng, .max_episode_steps = params->max_episode_steps};
}

static inline void cartpole_observe(const CartPole *env, float *obs) {
  // np.array(self.state, dtype=np.float32): round to nearest, ties to even, like a C cast.
  obs[0] = (float)env->x;
  obs[1] = (float)env->x_dot;
  obs[2] = (float)env->theta;
  obs[3] = (float)env->theta_dot;
}

void cartpole_reset(CartPole *env, float *obs) {
  // np_random.uniform(low, high) is low + (high - low) * u with u in [0, 1).
  double *state[4] = {&env->x, &env->x_dot, &env->theta, &env->theta_dot};
  for (int i = 0; i < 4; i++) *state[i] = -RESET_BOUND + (RESET_BOUND - -RESET_BOUND) * rng_uniform(&env->rng);
  env->steps = 0;
  env->episode_return = 0.0;
  cartpole_observe(env, obs);
}

void cartpole_state_set(CartPole *env, const double state[4], float *obs) {
  env->x = state[0];
  env->x_dot = state[1];
  env->theta = state[2];
  env->theta_dot = state[3];
  cartpole_observe(env, obs);
}

void cartpole_step(CartPole *env, int32_t action, float *obs, float *reward, uint8_t *terminated, uint8_t *truncated,
                   float *episode_log) {
  double x = env->x, x_dot = env->x_dot, theta = env->theta, theta_dot = env->theta_dot;
  double force = action == 1 ? FORCE_MAG : -FORCE_MAG;
  double costheta = cos(theta);
  double sintheta = sin(theta);
  double temp = (force + POLEMASS_LENGTH * (theta_dot * theta_dot) * sintheta) / TOTAL_MASS;
  double thetaacc =
      (GRAVITY * sintheta - costheta * temp) / (LENGTH * (4.0 / 3.0 - MASSPOLE * (costheta * costheta) / TOTAL_MASS));
  double xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS;
  // kinematics_integrator == "euler": positions move with the old velocities.
  x = x + TAU * x_dot;
  x_dot = x_dot + TAU * xacc;
  theta = theta + TAU * theta_dot;
  theta_dot = theta_dot + TAU * thetaacc;
  env->x = x;
  env->x_dot = x_dot;
  env->theta = theta;
  env->theta_dot = theta_dot;

  uint8_t done_mdp = x < -X_THRESHOLD || x > X_THRESHOLD || theta < -THETA_THRESHOLD || theta > THETA_THRESHOLD;
  env->steps += 1;
  uint8_t done_time = env->steps >= env->max_episode_steps;  // TimeLimit: _elapsed_steps >= max_episode_steps
  env->episode_return += 1.0;                                // 1 per step, the terminating one included

  cartpole_observe(env, obs);
  *reward = 1.0f;
  *terminated = done_mdp;
  *truncated = done_time;
  if (done_mdp | done_time) {
    episode_log[ENV_LOG_EPISODE_RETURN] = (float)env->episode_return;
    episode_log[ENV_LOG_EPISODE_LENGTH] = (float)env->steps;
  }
}

// --- the EnvKind adapter ---------------------------------------------------------------------------

static int cartpole_kind_describe(EnvSpec *spec, const void *params, const void *shared) {
  (void)shared;  // CartPole has no shared context
  CartPoleParams defaults = cartpole_params_default();
  if (cartpole_params_check(params ? (const CartPoleParams *)params : &defaults) != 0) return -1;
  *spec = (EnvSpec){
      .obs_dim = CARTPOLE_OBS_DIM,
      .action_kind = ENV_ACTION_DISCRETE,
      .action_count = 2,
      .action_dim = 1,
      .action_low = 0.0f,
      .action_high = 1.0f,
      .state_size = sizeof(CartPole),
      .log_size = CARTPOLE_LOG_SIZE,
  };
  for (int i = 0; i < CARTPOLE_LOG_SIZE; i++) spec->log_names[i] = cartpole_log_names[i];
  return 0;
}

static void cartpole_kind_init(void *env, const void *params, const void *shared, int env_index, int num_envs,
                               Rng rng) {
  (void)shared, (void)env_index, (void)num_envs;
  CartPoleParams defaults = cartpole_params_default();
  cartpole_init(env, params ? (const CartPoleParams *)params : &defaults, rng);
}

static void cartpole_kind_reset(void *env, float *obs) { cartpole_reset(env, obs); }

static void cartpole_kind_step(void *env, const void *action, float *obs, float *reward, uint8_t *terminated,
                               uint8_t *truncated, float *episode_log) {
  cartpole_step(env, *(const int32_t *)action, obs, reward, terminated, truncated, episode_log);
}

static void cartpole_kind_close(void *env) { (void)env; }  // owns nothing

// A state read from a checkpoint: finite physics and return, this run's episode limit, and a step
// count inside it.
static int cartpole_kind_check_state(const void *env, const void *fresh, const void *shared) {
  (void)shared;
  const CartPole *e = env;
  const CartPole *own = fresh;
  if (e->max_episode_steps != own->max_episode_steps) {
    error_set("cart-pole episode limit %d, but this run's is %d (the checkpoint is damaged)", (int)e->max_episode_steps,
              (int)own->max_episode_steps);
    return -1;
  }
  if (!(isfinite(e->x) && isfinite(e->x_dot) && isfinite(e->theta) && isfinite(e->theta_dot) &&
        isfinite(e->episode_return))) {
    error_set("cart-pole state (%g, %g, %g, %g), return %g: must be finite (the checkpoint is damaged)", e->x, e->x_dot,
              e->theta, e->theta_dot, e->episode_return);
    return -1;
  }
  if (e->max_episode_steps < 1 || e->steps < 0 || e->steps > e->max_episode_steps) {
    error_set("cart-pole step %d of %d: allowed 0 .. the limit, a limit of at least 1 (the checkpoint is damaged)",
              (int)e->steps, (int)e->max_episode_steps);
    return -1;
  }
  return 0;
}

const EnvKind cartpole_kind = {
    .name = "cartpole",
    .describe = cartpole_kind_describe,
    .init = cartpole_kind_init,
    .reset = cartpole_kind_reset,
    .step = cartpole_kind_step,
    .close = cartpole_kind_close,
    .check_state = cartpole_kind_check_state,
};
