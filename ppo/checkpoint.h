// ppo/checkpoint.h: the whole state of a training run in one HDF5 file (DESIGN.md section 8), and
// resuming from it.
//
// Layout (readable with h5dump and h5py; every array is one dataset):
//   /                  attrs: format ("ppo-engine checkpoint"), format_version, build, config (the
//                      resolved INI text), iteration, timesteps, n_updates, vector_steps,
//                      epochs_drawn, skipped_steps, obs_dim, action_dim, param_count
//   /params/pi/weight{l} (out, in), /params/pi/bias{l} (out), the same under /params/vf,
//   /params/log_std (A)                      fp32 master weights in torch's nn.Linear layout
//   /optim/m, /optim/v (param_count)          Adam moments, each tensor's in the params slab's
//                                             order, packed (the slab's padding is not stored)
//   /optim/step (1) int32                     Adam's step count
//   /scaler/scale (1) fp32, /scaler/growth_tracker (1) int32
//   /normalize/...                            VecNormalize statistics (ppo/normalize.h)
//   /rng/sample_seed (1) uint64, /rng/vector_steps, /rng/epochs_drawn (1) int64: the Philox
//                      counters of action sampling and minibatch permutations; each env's own
//                      xoshiro state is inside its state bytes
//   /envs/state (N, state_size) uint8          each env's state (positions, episode accumulators)
//   /envs/episode_logs (K, L) fp32, attrs ring_count, ring_next, episodes_total, log_names
//   /envs/obs (N, O) fp32, /envs/episode_starts (N) fp32: what the next rollout step acts on
// Several ranks (ppo/dist.h; format_version 2): attribute ranks = R on /, and every envs/ dataset
// holds the R ranks' rows in rank order: state (R N, ...), episode_logs (R K, L), obs (R N, O),
// episode_starts (R N), envs/ring_counters (R, 3) int64 (ring_count, ring_next,
// episodes_total per rank; the attributes keep rank 0's) and envs/norm_returns (R N) float64, each
// env's VecNormalize discounted return (normalize/returns keeps rank 0's N). Networks, optimiser, scaler and the
// counters are common to the ranks. Rank 0 gathers and writes; on resume every rank reads the file
// and takes its rows, and a run with another number of ranks is refused.
// No timestamps: the same state gives the same bytes. Written under a temporary name and renamed.
//
// Resuming: the run's configuration must equal the checkpoint's in every key that shapes the state
// or the computation; only the keys checkpoint_may_differ() accepts (more total_timesteps, another
// device or thread count, the run's name and directory, checkpoint and log cadence, [eval], [walk_forward]) may
// change. A newer format_version, a different env state size or network shape is refused with a
// message naming the file and the difference.
// Depends on ppo/trainer.h, common/h5io.h.
#ifndef PPO_CHECKPOINT_H
#define PPO_CHECKPOINT_H

#include <stdbool.h>

#include "ppo/config.h"
#include "ppo/trainer.h"

// Version 2 is a checkpoint of several ranks (the `ranks` attribute, R x the env rows,
// envs/ring_counters); a one-rank checkpoint is written as version 1, unchanged.
#define CHECKPOINT_FORMAT_VERSION 2

// Writes the trainer's state at the current iteration boundary to path (atomically). 0, or -1 and
// the error message.
int checkpoint_save(Trainer *trainer, const char *path);

// Host bytes a save needs (its env rows, and on rank 0 every rank's rows and a copy of the parameter
// slab of slab_bytes), reserved with the trainer so that the save allocates nothing of its own.
size_t checkpoint_staging_bytes(const VecEnvStateInfo *info, int obs_dim, int ranks, bool root, size_t slab_bytes);

// The evaluation that made a checkpoint the run's best.h5: root attributes best_metric,
// best_iteration and best_value, written in the same atomic file, so the value a resumed run must
// beat can never disagree with the file it would replace.
typedef struct {
  const char *metric;  // [eval] metric: "sharpe", ...
  int64_t iteration;
  double value;
} CheckpointBest;
int checkpoint_save_best(Trainer *trainer, const char *path, const CheckpointBest *best);
// A checkpoint of an iteration whose [eval] pass a stop abandoned: root attribute eval_pending (the
// iteration), so that the resumed run evaluates it before going on, as the uninterrupted run did.
int checkpoint_save_eval_pending(Trainer *trainer, const char *path);
// The eval_pending attribute: the iteration, or -1 when there is none (or the file cannot be read).
int64_t checkpoint_read_eval_pending(const char *path);
// Reads them back: 0; 1 when the file has none (written before they existed); -1 and the message.
int checkpoint_read_best(const char *path, char *metric, size_t capacity, int64_t *iteration, double *value);

// Reads the configuration stored in the checkpoint (parsed like a file named "PATH:config") into
// *stored and checks the format version; resolved (optional) receives the same text with the
// overrides ("section.key=value") applied. 0; CHECKPOINT_UNREADABLE and the message when the file
// cannot be read as a checkpoint (missing, cut short, damaged, not one of ours); -1 and the message
// when the configuration it holds, or an override, is refused.
#define CHECKPOINT_UNREADABLE (-3)
int checkpoint_read_config(const char *path, Config *stored, Config *resolved, int n_overrides,
                           const char *const *overrides);

// Does key (section, key) of the schema belong to the keys a resumed run may change?
bool checkpoint_may_differ(const char *section, const char *key);

// The env steps the checkpoint's run had taken (its "timesteps" attribute). 0, or -1 and the message.
int checkpoint_read_timesteps(const char *path, int64_t *timesteps);

// The keys of cfg that differ from stored, skipping those checkpoint_may_differ() accepts and those
// skip accepts (NULL: none): one line per key into msg ("[section] key = value (where it came
// from): <stored_name> has <value>"), cut short at capacity. Returns how many differ.
int checkpoint_config_differences(const Config *stored, const Config *cfg, const char *stored_name,
                                  bool (*skip)(const char *section, const char *key), char *msg, size_t capacity);

// 0 when cfg may resume from a checkpoint made with stored; else -1 and a message naming every
// key that differs (both values, where each came from) and what to drop: the --set, the config
// file, or both. file (NULL when no config file was given) is that file alone, without the --set,
// so that a key --set that the file also changes asks for both.
int checkpoint_check_compatible(const Config *stored, const Config *cfg, const Config *file, const char *path);

// Loads the state into a trainer made (trainer_init) from a compatible configuration. 0, or -1 and
// the error message naming the dataset; the trainer must then be freed, not used.
int checkpoint_load(Trainer *trainer, const char *path);

// The run directory a checkpoint belongs to: RUN for RUN/checkpoints/ckpt_N.h5 (or last.h5), and the
// file's own directory otherwise (RUN/best.h5). Where a resumed run writes and where ppo-eval's
// default output goes.
void checkpoint_run_dir(const char *path, char *out, size_t capacity);

// What identifies a checkpoint besides its path (report.json).
typedef struct {
  int64_t format_version, iteration, timesteps;
  char build[256];
} CheckpointInfo;

// Loads only what acting needs (ppo-eval): the parameters into `policy` (made by policy_init from
// the checkpoint's own [policy] keys and env spec: the shapes are checked) and, when norm is not
// NULL, the normalisation statistics into it (vecnorm_init with the checkpoint's [normalize] keys and
// [env] n_envs). stored: the checkpoint's configuration (checkpoint_read_config), against which
// the counters are checked as a resume checks them. info (optional) receives the identity. 0, or
// -1 and the error message;
// CHECKPOINT_OTHER_SHAPE (also with the message) when the stored networks have another size than
// `policy`'s, so that the caller can say which of its settings decide that size.
#define CHECKPOINT_OTHER_SHAPE (-2)
int checkpoint_load_policy(const char *path, const Config *stored, Policy *policy, VecNormalize *norm,
                           CheckpointInfo *info);

#endif
