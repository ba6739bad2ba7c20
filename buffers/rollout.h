// buffers/rollout.h: the rollout buffer, resident in backend memory (device memory on CUDA), GAE,
// and the minibatch sampler.
//
// Structure of arrays over (T, N) = (n_steps, n_envs), time-major: element (t, n) of a (T, N, D)
// array is row t N + n. One backend allocation holds every array below (STYLE rule 3), sized at
// init; nothing is allocated afterwards.
//   obs (T, N, O) in spec.obs_dtype (below), actions (T, N, A) (categorical: one float action index; Gaussian: the
//   unclipped sample), logp, values, rewards (truncation bootstrap included), episode_starts,
//   terminated, truncated, advantages, returns (T, N) as floats; last_values, last_dones (N);
//   perm (T N) int32 and its sort scratch; uniforms (N, A, 2) for the rollout's sampling; final_obs
//   (N, O) for the truncation bootstrap; step_obs (N, O) and step_actions (N, A), where a rollout
//   step's policy reads and writes (fixed addresses: the step can be a recorded graph); and the
//   minibatch (B rows) gathered from a permutation: mb_index (B) int32, its rows of perm;
//   mb_obs (B, O) in obs_dtype, mb_actions (B, A), mb_logp, mb_values, mb_advantages, mb_returns (B) and the
//   loss gradients mb_dlogp, mb_dentropy, mb_dvalues (B); mb_stats (PPO_STAT_COUNT), the current
//   minibatch's statistics; stats (max_minibatches, PPO_STAT_COUNT), one row per minibatch of an
//   update; mb_adv_moments (3) doubles, the advantage moments a multi-rank run sums across ranks;
//   ev_moments (NN_EV_MOMENTS) doubles, the explained variance's moments.
//
// Observations are stored in the dtype the policy's first layer reads them in (policy_obs_dtype):
// fp32 runs keep floats; fp16 and bf16 runs keep 2-byte elements, which the update reads as the
// fp32 observations rounded on entry would be (the same bits: policy_evaluate_stored) at half the
// bytes: configs/seed.ini's observations (32 envs x 4096 steps x 517) take 136 MB instead of 271 MB.
//
// Sampling (PPO_SEMANTICS.md section 3): one fresh permutation of the T N rows per epoch from the
// backend's counter-based RNG, consecutive slices of batch_size; a last partial slice is used as
// it is (SB3 does the same). SB3 flattens env-major and permutes that; a uniformly random
// permutation of the time-major rows is the same distribution of minibatches.
//
// Legend for shapes: T horizon (n_steps), N envs, O obs dim, A action columns, B minibatch.
// Depends on nn/backend.h.
#ifndef PPO_BUFFERS_ROLLOUT_H
#define PPO_BUFFERS_ROLLOUT_H

#include <stddef.h>
#include <stdint.h>

#include "nn/backend.h"
#include "nn/ops_math.h"

typedef struct {
  int n_steps, n_envs, obs_dim, action_cols;  // T, N, O, A
  int batch_size;                             // B
  int max_minibatches;                        // rows of stats: n_epochs x minibatches per epoch
  NnDtype obs_dtype;                          // obs and mb_obs elements: NN_F32, or the run's NN_F16 / NN_BF16
} RolloutSpec;

typedef struct {
  Backend *backend;  // not owned
  RolloutSpec spec;
  size_t bytes;  // the slab
  void *memory;  // the slab (backend memory)
  void *obs;     // (T, N, O) in spec.obs_dtype
  float *actions, *logp, *values, *rewards, *episode_starts, *terminated, *truncated;
  float *advantages, *returns, *last_values, *last_dones;
  int32_t *perm;
  void *perm_scratch;
  float *uniforms, *final_obs;
  float *step_obs, *step_actions;  // (N, O), (N, A): a rollout step's policy input and output
  int32_t *mb_index;               // (B) the rows of perm that the current minibatch gathers
  float *mb_stats;                 // (PPO_STAT_COUNT) the current minibatch's statistics
  void *mb_obs;                    // (B, O) in spec.obs_dtype
  float *mb_actions, *mb_logp, *mb_values, *mb_advantages, *mb_returns;
  float *mb_dlogp, *mb_dentropy, *mb_dvalues;  // (B) the loss's gradients, the policy backward's seeds
  float *stats;
  double *mb_adv_moments;  // (3) the minibatch's advantage count, sum, squared deviations (ppo/dist.h)
  double *ev_moments;      // (NN_EV_MOMENTS) the explained variance's moments (backend_explained_variance)
} RolloutBuffer;

// Bytes the slab of this spec takes (for the memory plan); the spec must be valid.
size_t rollout_plan_bytes(const Backend *backend, const RolloutSpec *spec);
// Allocates and zeroes the slab. 0, or -1 and the error message when the spec is out of range.
int rollout_init(RolloutBuffer *buf, Backend *backend, const RolloutSpec *spec);
void rollout_free(RolloutBuffer *buf);  // frees the slab; zeroes *buf

// advantages and returns from the filled buffer and last_values / last_dones (backend_gae).
void rollout_compute_gae(RolloutBuffer *buf, double gamma, double gae_lambda);
// perm = a fresh permutation of the T N rows: Philox stream (seed, subsequence), draw `draw`
// (the caller counts epochs over the whole run, so resumed runs continue the sequence).
void rollout_permute(RolloutBuffer *buf, uint64_t seed, uint64_t subsequence, uint64_t draw);
// Minibatches per epoch: ceil(T N / B).
int rollout_minibatches(const RolloutBuffer *buf);
// Minibatch k of the current permutation in two halves: rollout_select copies its rows of perm to
// mb_index and returns its size (B, or smaller for the last one); rollout_gather_selected gathers
// those rows into the mb_ arrays (fixed addresses whatever k is: recordable as a graph).
int rollout_select(RolloutBuffer *buf, int k);
void rollout_gather_selected(RolloutBuffer *buf, int size);

#endif
