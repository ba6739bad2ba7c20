// ppo/trainer.h: one PPO training run in memory: the envs, the policy, the optimiser, the rollout
// buffer and the normalisation statistics, and the iteration that moves them (PPO_SEMANTICS.md
// sections 2-4, DESIGN.md section 4).
//
// trainer_iteration = collect a rollout of T steps of N envs (the policy acts on the backend, the
// envs step on the host with OpenMP), bootstrap truncated episodes with V(final obs) in one batched
// critic forward per step, GAE, then n_epochs of minibatch updates (a fresh permutation each epoch,
// SB3's loss, approx-KL early stop, clip, Adam, the GradScaler in fp16) and the iteration's
// statistics (SB3's logged values, TrainStats). trainer_iteration allocates nothing of its own
// (no backend memory, no malloc): every slab is sized from the configuration up front
// (trainer_memory_plan reports them) and allocated by trainer_allocate. The libraries allocate for
// themselves: oneDNN a primitive per GEMM shape at its first use, HDF5 in checkpoint_save.
//
// Randomness, all of it derived from [run] seed (DESIGN.md section 7): policy init from stream
// TRAINER_STREAM_INIT, env i from rng_stream_seed(env seed, i), action sampling from Philox
// (sample seed, subsequence 0) at word vector_steps x words per step, and epoch permutations from
// Philox (sample seed, subsequence 1), draw `epochs_drawn`. The counters live in TrainCounters and
// in the checkpoint, so a resumed run draws the same numbers as an uninterrupted one.
//
// Ranks (ppo/dist.h, docs/DISTRIBUTED.md): rank r of R steps envs r N .. r N + N - 1 of R N (seeds
// and start positions as in one VecEnv of R N), draws those envs' actions from the one action stream
// laid out by global env (as one process of R N envs would), permutes its own rollout from
// subsequence 1 + 2 r, and takes part in the update's reductions (summed gradients, the minibatch's
// advantage moments, the mean approx-KL, the logged statistics) and in every update of the
// normalisation statistics (the ranks' batch moments merged each step). Counters count the run's
// steps over all ranks.
//
// On the backend: a rollout step's policy (step_obs in, step_actions, log-probs and values out) and
// every full minibatch of a one-rank run without target_kl are recorded functions
// (backend_graph_run: one CUDA graph launch each); the minibatch loop makes no host wait then
// (TrainStats.update_host_syncs counts them; SB3's target_kl check reads one number per minibatch).
// The per-step host buffers are page-locked on CUDA (backend_host_alloc).
//
// Interruption: trainer_request_stop (async-signal-safe: it stores a flag) makes an iteration in
// progress stop before its next rollout step or its next minibatch; the trainer then restores its
// state from the start of that iteration (trainer_iteration returns TRAINER_INTERRUPTED), so a
// checkpoint written afterwards is exactly the state at the iteration boundary. The envs, the
// observation and the normaliser come back from a host snapshot; the parameters, Adam m and v and
// the optimiser scalars from the update snapshot, three more params-sized slabs of backend memory
// (in the memory plan). Several ranks vote on stopping every 16 rollout steps and every 4
// minibatches, so they stop at the same point.
//
// Legend for shapes: T n_steps, N n_envs, O obs dim, A action columns, B batch size, L log fields.
// Depends on ppo/config.h, ppo/env_config.h, ppo/normalize.h, buffers/rollout.h, nn/ (policy,
// optim), envs/ (vecenv, cartpole, trading_env).
#ifndef PPO_TRAINER_H
#define PPO_TRAINER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buffers/rollout.h"
#include "envs/env.h"
#include "envs/vecenv.h"
#include "nn/optim.h"
#include "nn/policy.h"
#include "ppo/config.h"
#include "ppo/env_config.h"
#include "ppo/normalize.h"

#define TRAINER_LOG_CAPACITY 100  // episodes behind rollout/ep_rew_mean (SB3's 100)

enum { TRAINER_STREAM_INIT = 1, TRAINER_STREAM_ENVS = 2, TRAINER_STREAM_SAMPLE = 3 };
enum { TRAINER_SUBSEQ_ACTIONS = 0, TRAINER_SUBSEQ_PERMUTATION = 1 };
// The trainer's two slots in the per-minibatch stats rows (after backend_ppo_loss's: its spare ones).
enum { TRAINER_STAT_SKIPPED = PPO_STAT_CLIP_FRACTION + 1, TRAINER_STAT_GRAD_NORM = PPO_STAT_CLIP_FRACTION + 2 };
_Static_assert((int)TRAINER_STAT_GRAD_NORM < (int)PPO_STAT_COUNT,
               "the stats row has no slot left for the trainer's two");

typedef struct {
  int64_t iterations;     // completed iterations
  int64_t timesteps;      // env steps over all envs
  int64_t n_updates;      // SB3's _n_updates: epochs run (the early-stopped one included)
  int64_t vector_steps;   // rollout steps of the whole VecEnv (the action sampler's counter)
  int64_t epochs_drawn;   // permutations drawn (the minibatch sampler's counter)
  int64_t skipped_steps;  // optimiser steps skipped for inf/NaN gradients (fp16), whole run
} TrainCounters;

// One iteration's logged values: SB3's keys (PPO_SEMANTICS.md section 7) and the engine's own.
typedef struct {
  int64_t iteration, timesteps, n_updates;
  double fps;                                        // env steps per second of this iteration
  double rollout_s, gae_s, update_s;                 // seconds of the three phases
  double ep_rew_mean, ep_len_mean;                   // over the last 100 episodes (NaN before the first)
  int episodes;                                      // episodes behind those means
  double policy_gradient_loss, value_loss, entropy_loss, approx_kl, clip_fraction, loss, explained_variance;
  double learning_rate, clip_range, std;             // std: mean exp(log_std) (Gaussian), NaN otherwise
  double clip_range_vf;                              // [ppo] clip_range_vf; NaN when off (SB3 omits the key)
  double loss_scale, grad_norm;                      // after the last step; grad_norm mean over steps
  int steps;                                         // optimiser steps whose norm grad_norm averages (NaN
                                                     // when 0: the KL check stopped the first minibatch)
  int64_t skipped_steps;                             // this iteration
  int minibatches;                                   // losses computed (incl. one the KL check stopped before its step)
  bool early_stopped;                                // approx_kl > 1.5 target_kl
  int64_t update_host_syncs;                         // host waits inside the update: 0, or one per minibatch
                                                     // with target_kl (SB3's KL check reads approx_kl)
  int n_env_metrics;                                 // log fields beyond return and length
  const char *env_metric_names[ENV_LOG_MAX];         // "sharpe", ... (the kind's log names)
  double env_metrics[ENV_LOG_MAX];                   // their means over the last 100 episodes
} TrainStats;

// Memory plan (DESIGN.md section 5): bytes per slab, before anything is allocated.
#define TRAINER_PLAN_MAX 24
typedef struct {
  int count;
  const char *name[TRAINER_PLAN_MAX];
  size_t bytes[TRAINER_PLAN_MAX];
  bool device[TRAINER_PLAN_MAX];  // in backend memory (device memory on CUDA) or host memory
  size_t device_total, host_total;
  bool device_is_host;              // the CPU backend: "device" memory is host memory
  bool have_free;                   // free_bytes is known
  size_t free_bytes;                // free memory of the backend (MemAvailable on the CPU), read after
  size_t host_allocated;            // these host bytes of the plan (envs, market) were allocated
  char backend_description[256];    // backend_describe()
} TrainerPlan;

typedef struct Trainer Trainer;

// Sets this process's OpenMP threads to [run] threads: N, or for 0 ("all cores") the threads
// OpenMP offered the process at the first call (OMP_NUM_THREADS, else every core), so that a run of
// threads = 0 after one of threads = 1 in the same process (ppo-bench all, a test) is not left on
// one thread. trainer_open and ppo-eval's evaluation call it.
void trainer_apply_threads(int64_t threads);

// Two phases, so a run can check its memory plan before it commits memory: trainer_open opens the
// market (trading, synthetic), the envs and the backend ([run] device) and computes the plan;
// trainer_allocate then allocates every slab and starts the envs' first episodes. Both fail
// (NULL / -1) with the error message on bad input (data file, sizes; exit status 2) or when the
// backend cannot start; free the trainer either way. trainer_init is the two in one.
Trainer *trainer_open(const Config *cfg);
int trainer_allocate(Trainer *trainer);
Trainer *trainer_init(const Config *cfg);
void trainer_free(Trainer *trainer);  // NULL is fine

const TrainerPlan *trainer_memory_plan(const Trainer *trainer);  // valid after trainer_open
// A row of the caller's own in the plan (ppo-train's evaluation pass), before trainer_allocate:
// counted in the totals; a backend row in free-memory checks.
void trainer_plan_add(Trainer *trainer, const char *name, size_t bytes, bool on_backend);
// The host memory a checkpoint save works in (checkpoint_staging_bytes; reserved by trainer_allocate).
char *trainer_checkpoint_staging(Trainer *trainer);
// The policy a configuration trains on an env spec (layers, activation, precision, head, init seed;
// max_batch = max(batch_size, n_envs)). ppo-eval builds the same policy to load a checkpoint into.
PolicySpec trainer_policy_spec(const Config *cfg, const EnvSpec *spec);

typedef enum { TRAINER_OK = 0, TRAINER_INTERRUPTED = 1 } TrainerStatus;
TrainerStatus trainer_iteration(Trainer *trainer, TrainStats *stats);
// The second half of trainer_iteration alone: GAE, the update and the statistics on the rollout
// buffer as it stands (trainer_rollout: its arrays, last_values and last_dones). test_ppo_sb3 fills
// the buffer and the parameters from Stable-Baselines3's and compares the update with SB3's train();
// a run calls trainer_iteration.
TrainerStatus trainer_learn(Trainer *trainer, TrainStats *stats);
void trainer_request_stop(void);  // async-signal-safe
bool trainer_stop_requested(void);
void trainer_clear_stop(void);
// Where an iteration polls for a stop: before rollout step `index` (0 .. T - 1), and before
// minibatch `index` of the update (counted over its epochs, from 1: never before the first).
typedef enum { TRAINER_PHASE_ROLLOUT, TRAINER_PHASE_UPDATE } TrainerPhase;
// true stops the iteration (TRAINER_INTERRUPTED, the state of its start restored).
typedef bool (*TrainerStopCheck)(void *ctx, TrainerPhase phase, int index);
// Replaces the stop condition (default NULL: trainer_stop_requested, the signal flag), e.g. for a
// wall-clock budget of the caller's own. With several ranks it is asked only at their votes.
void trainer_set_stop_check(Trainer *trainer, TrainerStopCheck check, void *ctx);

const Config *trainer_config(const Trainer *trainer);
const EnvMarket *trainer_market(const Trainer *trainer);  // NULL for CartPole
const TrainCounters *trainer_counters(const Trainer *trainer);
Backend *trainer_backend(Trainer *trainer);
Policy *trainer_policy(Trainer *trainer);
Optimizer *trainer_optimizer(Trainer *trainer);
const RolloutBuffer *trainer_rollout(const Trainer *trainer);  // the last rollout (backend memory)
VecEnv *trainer_vecenv(Trainer *trainer);
const EnvSpec *trainer_env_spec(const Trainer *trainer);
int64_t trainer_total_iterations(const Trainer *trainer);  // ceil(total_timesteps / (T N R)), R ranks
// Data-parallel ranks (ppo/dist.h): do every rank's parameters, Adam moments, optimiser scalars and
// normalisation statistics hold the same bytes? true on every rank, or false on every rank. Always true for one rank.
bool trainer_replicas_agree(Trainer *trainer);

// The host-side state a checkpoint needs besides the backend slabs (ppo/checkpoint.c): the
// observation the policy acts on next (N, O), the episode starts (N), the normaliser, the envs.
typedef struct {
  TrainCounters counters;
  float *obs;             // (N, O)
  float *episode_starts;  // (N)
  VecNormalize *norm;
  VecEnv *vec;
} TrainerState;
TrainerState trainer_state(Trainer *trainer);
// After loading state into the pointers of trainer_state(): sets the counters and refreshes what
// derives from the loaded parameters (the low-precision weight copies).
void trainer_state_loaded(Trainer *trainer, const TrainCounters *counters);

#endif
