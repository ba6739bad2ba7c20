// envs/env.h: the environment interface (PufferLib-style) and the registry of env kinds by name.
//
// An env kind is a table of functions over one small per-env state struct, plus its sizes
// (EnvSpec). Envs never allocate (STYLE rule 4): the caller hands each env the memory for its state
// (spec.state_size bytes) and, at every call, the slices of the caller-owned structure-of-arrays
// buffers it writes into. For env i of N these are (legend: N envs, O obs dim, A continuous action
// dim, L episode-log fields):
//   obs         (O) float    row i of obs (N, O): the observation after reset or step
//   action      (1) int32    element i of actions (N), ENV_ACTION_DISCRETE, values 0..action_count-1
//               (A) float    row i of actions (N, A), ENV_ACTION_CONTINUOUS
//   reward      (1) float    element i of rewards (N)
//   terminated  (1) uint8    the MDP ended (pole fell, ruin): PPO does not bootstrap
//   truncated   (1) uint8    cut by a time limit or the end of the data: PPO bootstraps V(final obs)
//   episode_log (L) float    written only on the step that ends an episode (either flag set)
// Both flags may be set on the same step (Gymnasium's TimeLimit does the same).
//
// Randomness: each env owns its Rng, handed to init already seeded (VecEnv seeds env i with
// rng_stream_seed(seed, i)), so trajectories depend on (seed, env index) only, never on threads.
//
// Episode log: L floats per finished episode, PufferLib's Log. Fields 0 and 1 are always
// episode_return (sum of rewards) and episode_length (steps); a kind appends its own fields (the
// trading env: sharpe, max_drawdown, ...) and names them all in spec.log_names.
//
// Shared context: a kind may need a large read-only object (the trading env: market data and
// features). The caller builds it once and passes the same `shared` pointer to describe and to
// every env's init; envs keep a pointer to it and never write through it, so one copy serves any
// N and an env's state stays a few hundred bytes. The caller keeps it alive until every env is
// closed. Kinds without one (CartPole) take NULL.
//
// Parameters: `params` points to the kind's own parameter struct (CartPoleParams, ...); NULL means
// the kind's defaults.
//
// Depends on common/rng.h.
#ifndef PPO_ENVS_ENV_H
#define PPO_ENVS_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "common/rng.h"

#define ENV_LOG_MAX 16  // most fields an episode log may have

typedef enum {
  ENV_ACTION_DISCRETE = 0,    // actions (N) int32
  ENV_ACTION_CONTINUOUS = 1,  // actions (N, A) float
} EnvActionKind;

enum {
  ENV_LOG_EPISODE_RETURN = 0,  // every kind's log starts with these two fields
  ENV_LOG_EPISODE_LENGTH = 1,
};

typedef struct {
  int obs_dim;                         // O
  EnvActionKind action_kind;           // discrete or continuous
  int action_count;                    // discrete: number of actions n; continuous: 0
  int action_dim;                      // continuous: A; discrete: 1
  float action_low, action_high;       // continuous: bounds of every component (PPO clips to them); discrete: 0, n-1
  size_t state_size;                   // bytes of one env's state (a multiple of 8)
  int log_size;                        // L, 2 <= L <= ENV_LOG_MAX
  const char *log_names[ENV_LOG_MAX];  // names of the L fields (static strings)
} EnvSpec;

typedef struct EnvKind {
  const char *name;  // registry key: "cartpole"
  // Fills *spec for these params (NULL: defaults) and shared context. Returns 0, or -1 and sets the
  // error message (error.h) when a parameter is out of range.
  int (*describe)(EnvSpec *spec, const void *params, const void *shared);
  // Initialises one env in `env` (spec.state_size bytes, 16-byte aligned, owned by the caller) with
  // params already accepted by describe. Takes ownership of nothing; never allocates. Does not start
  // an episode: call reset.
  void (*init)(void *env, const void *params, const void *shared, int env_index, int num_envs, Rng rng);
  // Starts an episode from the env's own Rng; writes obs (O).
  void (*reset)(void *env, float *obs);
  // One step with `action` (see the legend); writes obs (O), *reward, both flags, and episode_log (L)
  // when the episode ended. Never resets by itself: VecEnv does that (see vecenv.h).
  void (*step)(void *env, const void *action, float *obs, float *reward, uint8_t *terminated, uint8_t *truncated,
               float *episode_log);
  // Releases what init acquired (nothing for the kinds so far); the state memory stays the caller's.
  void (*close)(void *env);
  // Optional; NULL when the state is plain data with no pointers (CartPole). Points the state's
  // borrowed pointers at `shared`, or clears them when shared is NULL: a checkpoint stores states
  // with their pointers cleared (the same bytes in every run) and rebinds them when it is loaded.
  void (*rebind)(void *env, const void *shared);
  // Optional: 0 when a state read from a checkpoint (and rebound) fits this run, else -1 and the
  // message: indices into shared data in range, so a damaged checkpoint or a changed data file
  // cannot make the env read outside it; every number finite; and the fields init derives from the
  // configuration (index, env count, limits) equal to `fresh`'s, this run's own state of the same env.
  int (*check_state)(const void *env, const void *fresh, const void *shared);
} EnvKind;

const EnvKind *env_kind_find(
    const char *name);                  // NULL and sets the error message (naming the known kinds) when unknown
int env_kind_count(void);               // number of registered kinds
const EnvKind *env_kind_at(int index);  // kind 0..env_kind_count()-1, in registry order

#endif
