// envs/vecenv.h: N envs of one kind stepped together with OpenMP, auto-reset, episode logs.
//
// A VecEnv owns the N env states (one allocation, each state on its own 64-byte lines) and a ring
// of the last K finished episodes' logs. It owns none of the buffers it reads and writes: the
// caller allocates them (they may be pinned host memory for the GPU upload) and passes them in a
// VecEnvBuffers at every call; env i touches only its slice (legend: N envs, O obs dim, A continuous
// action dim, L log fields, K log capacity).
//
// vecenv_step, for each env i in parallel (OpenMP, schedule(static), disjoint slices; with one
// thread a plain loop, no OpenMP region):
//   1. step with action i: rewards[i], terminated[i], truncated[i], obs row i;
//   2. if terminated[i] | truncated[i]: copy obs row i to final_obs row i (the observation that
//      ended the episode, for bootstrapping V on truncation), reset env i, and overwrite obs row i
//      with the first observation of its next episode (SB3 / Gymnasium "same-step" auto-reset).
//      Rows of final_obs for envs whose episode did not end are not written.
// Then, serially and in env-index order, the finished episodes' logs enter the ring. Every env's
// result depends only on its own state and action, so all outputs, the ring included, are
// bit-identical for any thread count. vecenv_step never allocates.
//
// Determinism: env i's Rng is seeded with rng_stream_seed(seed, i) at init; nothing else is random.
// Depends on env.h and common/ (rng, error, check); OpenMP.
#ifndef PPO_ENVS_VECENV_H
#define PPO_ENVS_VECENV_H

#include <stddef.h>
#include <stdint.h>

#include "envs/env.h"

typedef struct {
  const void *actions;  // (N) int32 for discrete kinds, (N, A) float for continuous ones; read
  float *obs;           // (N, O) written: the observation to act on next
  float *rewards;       // (N) written
  uint8_t *terminated;  // (N) written, 0 or 1
  uint8_t *truncated;   // (N) written, 0 or 1
  float *final_obs;     // (N, O) row i written only where terminated[i] | truncated[i]
} VecEnvBuffers;

typedef struct VecEnv VecEnv;  // opaque: use the functions below

// Creates N envs of `kind` with `params` (NULL: the kind's defaults) and the shared read-only context
// (NULL if the kind has none; the caller keeps it alive until vecenv_free and frees it afterwards).
// log_capacity K >= 1 episodes are kept (100 gives SB3's rollout/ep_rew_mean). num_threads 0 uses
// OpenMP's default (omp_get_max_threads at each step). The envs are not reset: call vecenv_reset.
// Returns NULL and sets the error message on bad arguments or params; exits (check.h) when out of memory.
VecEnv *vecenv_init(const EnvKind *kind, const void *params, const void *shared, int num_envs, uint64_t seed,
                    int log_capacity, int num_threads);
// Envs first_index .. first_index + num_envs - 1 of a VecEnv of total_envs: each env gets the seed
// and the (index, count) it would have there, so R slices of N envs, one per process, are the envs
// of one VecEnv of R N (ppo/dist.h: rank r holds slice r). vecenv_init is the slice 0 of num_envs.
VecEnv *vecenv_init_slice(const EnvKind *kind, const void *params, const void *shared, int num_envs, int first_index,
                          int total_envs, uint64_t seed, int log_capacity, int num_threads);
void vecenv_free(VecEnv *vec);  // closes every env and frees the VecEnv (not the shared context); NULL is fine

const EnvSpec *vecenv_spec(const VecEnv *vec);  // sizes of one env (O, action kind, L, ...)
int vecenv_num_envs(const VecEnv *vec);         // N
size_t vecenv_memory_bytes(const VecEnv *vec);  // bytes VecEnv allocated (states, logs, ring; not the shared context)
void *vecenv_env(VecEnv *vec, int index);       // env `index`'s state (the kind's struct, e.g. CartPole *)

void vecenv_reset(VecEnv *vec, float *obs);                   // starts every env's episode (episodes in progress
                                                              // are dropped, not logged); obs (N, O)
void vecenv_step(VecEnv *vec, const VecEnvBuffers *buffers);  // one step of all N envs, auto-reset; see above

// --- checkpoints: the whole mutable state --------------------------------------------------------------
// The N env states (N, state_size) bytes, with borrowed pointers cleared (EnvKind.rebind), and the
// episode-log ring (K, L) in its storage order with its counters. Loading needs a VecEnv made by
// vecenv_init with the same kind, N, K and shared context; it marks the VecEnv started.
typedef struct {
  int num_envs, log_capacity, log_size;  // N, K, L
  size_t state_size;                     // bytes of one env's state
  int ring_count, ring_next;
  uint64_t episodes_total;
} VecEnvStateInfo;
VecEnvStateInfo vecenv_state_info(const VecEnv *vec);
void vecenv_state_save(const VecEnv *vec, unsigned char *states, float *ring);  // states (N, state_size), ring (K, L)
// 0, or -1 and the error message when info's sizes differ from vec's or its counters are out of range.
int vecenv_state_load(VecEnv *vec, const VecEnvStateInfo *info, const unsigned char *states, const float *ring);

int vecenv_log_count(const VecEnv *vec);                // episodes held in the ring, min(total, K)
uint64_t vecenv_log_total(const VecEnv *vec);           // episodes finished since init
const float *vecenv_log_get(const VecEnv *vec, int k);  // (L) log of held episode k, 0 = oldest held
// Sum of one field over the held episodes that have a value for it (NaN: none, e.g. the trading
// env's hit rate of an episode without a closed trade); *defined receives their number.
double vecenv_log_sum(const VecEnv *vec, int field, int *defined);
double vecenv_log_mean(const VecEnv *vec, int field);  // that sum over that number; NaN if none

#endif
