// envs/cartpole.h: CartPole-v1 with Gymnasium's exact dynamics, the engine's correctness env.
//
// Follows gymnasium/envs/classic_control/cartpole.py (Gymnasium 1.x) plus the TimeLimit wrapper of
// gym.make("CartPole-v1"): Euler integration with tau 0.02, gravity 9.8, masses 1.0 (cart) and 0.1
// (pole), half-length 0.5, force 10; the state is float64 (Gymnasium's self.state is an np.float64
// array after reset and after step) and the observation is that state rounded to float32; the episode
// terminates when x < -2.4 or x > 2.4 or theta < -12 deg or theta > 12 deg (strict, on the float64
// state, 12 deg = 12 * 2 * pi / 360); reward 1 on every step, the terminating one included; truncated
// once the episode has taken max_episode_steps (500) steps, and both flags can be set together.
// The initial state is U(-0.05, 0.05) per variable from the env's own Rng (so it cannot equal
// Gymnasium's for a seed: the tests install Gymnasium's initial states with cartpole_state_set).
//
// O = 4 (x, x_dot, theta, theta_dot), discrete actions {0: push left, 1: push right}, L = 2.
// Bit-exact parity needs the libm sin/cos NumPy uses (glibc on Linux) and no FMA contraction:
// build with -ffp-contract=off (the default in GCC's ISO C modes, not in clang's).
// Depends on env.h and common/rng.h.
#ifndef PPO_ENVS_CARTPOLE_H
#define PPO_ENVS_CARTPOLE_H

#include <stdint.h>

#include "common/rng.h"
#include "envs/env.h"

#define CARTPOLE_OBS_DIM 4
#define CARTPOLE_LOG_SIZE 2  // episode_return, episode_length

typedef struct {
  int max_episode_steps;  // TimeLimit: 500 for v1; >= 1
} CartPoleParams;

typedef struct {
  double x, x_dot, theta, theta_dot;  // float64 like Gymnasium's self.state
  Rng rng;                            // this env's generator (initial states)
  int32_t steps;                      // steps taken in the current episode (TimeLimit's _elapsed_steps)
  int32_t max_episode_steps;          // from CartPoleParams
  double episode_return;              // rewards summed in the current episode
} CartPole;                           // 80 bytes; plain data, no pointers

extern const EnvKind cartpole_kind;  // "cartpole" in the registry

CartPoleParams cartpole_params_default(void);                              // max_episode_steps = 500
int cartpole_params_check(const CartPoleParams *params);                   // 0, or -1 with the error message
void cartpole_init(CartPole *env, const CartPoleParams *params, Rng rng);  // params checked; no episode yet
void cartpole_reset(CartPole *env, float *obs);                            // new episode; obs (4)
void cartpole_step(CartPole *env, int32_t action, float *obs, float *reward, uint8_t *terminated, uint8_t *truncated,
                   float *episode_log);                                     // obs (4), episode_log (2) on episode end
void cartpole_state_set(CartPole *env, const double state[4], float *obs);  // installs a float64 state (episode
                                                                            // counters unchanged); obs (4)

#endif
