// ppo/normalize.h: observation and reward normalisation, a port of Stable-Baselines3's VecNormalize
// (stable_baselines3/common/vec_env/vec_normalize.py) and RunningMeanStd
// (stable_baselines3/common/running_mean_std.py), checked against SB3 2.9.2 with numpy 2.4 by
// test/test_normalize.c (fixture from test/make_normalize_fixtures.py).
//
// Legend: N envs, O obs dim, D a statistic's dimension (O for observations, 1 for returns).
//
// One step of the rollout, in VecNormalize.step_wait's order (the caller makes these calls):
//   1. vecnorm_obs(vn, obs, N)             update obs_rms with the raw batch (training only), then
//                                          normalise the batch with the updated statistics
//   2. vecnorm_reward(vn, rewards, dones)  update the discounted returns and ret_rms (training only),
//                                          normalise the rewards, then zero returns where done
//   3. vecnorm_obs_frozen(vn, final, k)    the final observations of the k envs that ended this step
//                                          (SB3's infos["terminal_observation"]), with the statistics
//                                          of step 1; they never enter the statistics. Any order
//                                          relative to 2 is fine (2 does not touch obs_rms).
// After an env reset of all envs (VecNormalize.reset) call vecnorm_reset instead of vecnorm_obs: it
// zeroes the discounted returns first. While they are zero, as after vecnorm_init, the two are the
// same; the trainer's first reset (trainer.c: first_reset) calls vecnorm_obs for that reason.
//
// SB3 details reproduced here (file: function), each checked by the fixture:
//   - running_mean_std.py: RunningMeanStd.__init__: mean 0, var 1, count = epsilon 1e-4 (a float:
//     the counts stay doubles, e.g. 4.0001 after one batch of 4).
//   - running_mean_std.py: update: batch moments are np.mean(arr, axis=0) and np.var(arr, axis=0),
//     the population variance (ddof 0). numpy computes them in the input's dtype: for observations
//     (float32) the batch mean and variance are float32 numbers, summed over the rows
//     sequentially (axis 0 of an (N, O) array, O > 1) or pairwise (O == 1, numpy's pairwise_sum
//     with 8 accumulators); for returns (float64, shape (N)) in double with pairwise_sum. np.var is
//     two-pass: mean, then sum((x - mean)^2) / N, in float32 for observations.
//   - running_mean_std.py: update_from_moments: Chan's parallel merge, evaluated in this order:
//       delta = batch_mean - mean; tot = count + n; mean += delta * n / tot;
//       m2 = var * count + batch_var * n + delta^2 * count * n / (count + n); var = m2 / (count + n)
//     where batch_var * n is a float32 product for observations (float32 array times a Python int)
//     and every other operation is double. No fused multiply-adds (each product is its own C
//     statement, so no compiler contracts it).
//   - vec_normalize.py: _normalize_obs / normalize_obs: clip((obs - mean) / sqrt(var + epsilon),
//     -clip_obs, clip_obs), computed in double (float32 obs minus float64 mean promotes), then
//     .astype(np.float32): rounded to nearest float once. NaN passes through np.clip, and here.
//   - vec_normalize.py: step_wait: obs_rms.update(obs) comes before normalize_obs(obs), so a step's
//     observations are normalised with statistics that already include them; the reward update
//     comes after the observation normalisation; terminal observations are normalised after both
//     (with the step's obs_rms); self.returns[dones] = 0 comes last, and runs in evaluation too.
//   - vec_normalize.py: _update_reward: returns = returns * gamma + reward (double, two roundings),
//     ret_rms.update(returns). It runs whenever training is set, also when norm_reward is false, so
//     ret_rms and returns hold the same values either way (they are saved in checkpoints).
//   - vec_normalize.py: normalize_reward: clip(reward / sqrt(ret_var + epsilon), -clip_reward,
//     clip_reward): the mean is not subtracted. With numpy >= 2 (NEP 50) the float32 reward divided
//     by the float64 scalar is a double division, then .astype(np.float32); numpy 1.x's value-based
//     casting divided in float32 and could differ by one ulp. We follow numpy 2.
//   - vec_normalize.py: reset: returns = zeros(N), then obs_rms.update(reset obs) when training.
//     norm_obs false: observations pass unchanged and obs_rms is never updated (SB3 has no obs_rms
//     then; ours stays at mean 0, var 1, count 1e-4).
//   - vec_normalize.py: __getstate__ drops `returns` from SB3's pickle; we save them (a resumed run
//     continues the discounted sums exactly).
//
// Ownership: vecnorm_init makes one allocation holding every array (STYLE rule 3); nothing is
// allocated after it; vecnorm_free releases it. Not thread-safe; one VecNormalize per VecEnv.
// Failure: vecnorm_init, vecnorm_save and vecnorm_load return -1 and set error_message() (error.h)
// on bad values or files; out of memory exits through CHECK_ALLOC (check.h).
// Depends on common/ (error, check, h5io) and the HDF5 C library.
#ifndef PPO_NORMALIZE_H
#define PPO_NORMALIZE_H

#include <hdf5.h>
#include <stdbool.h>
#include <stdint.h>

#define VECNORM_RMS_EPSILON 1e-4  // RunningMeanStd's initial count

typedef struct {
  int dim;       // D
  double *mean;  // (D) float64 like numpy
  double *var;   // (D) population variance
  double count;  // starts at 1e-4 (SB3's epsilon)
} RunningMeanStd;

// Data-parallel ranks (ppo/dist.h): a batch's moments, moments (D, 3) = count, mean, M2 (the
// population variance times the count) per component, are replaced by those of the union of every
// rank's batch, so each rank's statistics take the same update. Called once per statistics update
// on every rank (a collective).
typedef struct {
  void (*fn)(void *ctx, double *moments, int D);
  void *ctx;
} VecNormMerge;

typedef struct {
  int num_envs, obs_dim;  // N, O
  bool norm_obs, norm_reward;
  double clip_obs, clip_reward, epsilon, gamma;  // SB3 defaults 10, 10, 1e-8; gamma = the PPO gamma
  RunningMeanStd obs_rms;                        // (O)
  RunningMeanStd ret_rms;                        // (1)
  double *returns;                               // (N) discounted return accumulators
  bool training;                                 // false: statistics frozen (evaluation); init sets true
  VecNormMerge merge;                            // fn NULL (init): one process, SB3's update exactly
  double *moments;                               // (O, 3) the batch moments handed to merge
  void *slab;                                    // the one allocation: the arrays above, vecnorm_load staging
} VecNormalize;

// --- RunningMeanStd (running_mean_std.py) ------------------------------------------------------------
void rms_reset(RunningMeanStd *rms);                                     // mean 0, var 1, count 1e-4
void rms_update_float(RunningMeanStd *rms, const float *x, int rows);    // x (rows, D), float32 batch moments
void rms_update_double(RunningMeanStd *rms, const double *x, int rows);  // x (rows, D), float64 batch moments

// --- VecNormalize (vec_normalize.py) -----------------------------------------------------------------
// The bytes vecnorm_init allocates for num_envs envs of obs_dim observations (the memory plan's row).
size_t vecnorm_bytes(int num_envs, int obs_dim);
// Returns 0, or -1 with the message naming the parameter, its value and what is allowed (N, O >= 1;
// clip_obs, clip_reward, epsilon finite and > 0; gamma in [0, 1]); vn is zeroed then, so
// vecnorm_free is safe either way.
int vecnorm_init(VecNormalize *vn, int num_envs, int obs_dim, bool norm_obs, bool norm_reward, double clip_obs,
                 double clip_reward, double epsilon, double gamma);
void vecnorm_free(VecNormalize *vn);  // releases the slab and zeroes vn; NULL-safe, idempotent
// Several ranks: every update of obs_rms and ret_rms takes the batch moments of all ranks (merge.fn
// combines them); the normalisation itself is unchanged. Set before the first vecnorm_reset/_obs.
void vecnorm_set_merge(VecNormalize *vn, VecNormMerge merge);

void vecnorm_reset(VecNormalize *vn, float *obs);          // obs (N, O) in place: returns = 0, then vecnorm_obs
void vecnorm_obs(VecNormalize *vn, float *obs, int rows);  // obs (rows, O) in place: update (training), normalise
void vecnorm_obs_frozen(const VecNormalize *vn, float *obs, int rows);  // obs (rows, O) in place: normalise only
void vecnorm_reward(VecNormalize *vn, float *rewards,
                    const uint8_t *dones);  // rewards (N), dones (N) = terminated | truncated

// Checkpoints: datasets GROUP/obs_mean (O), obs_var (O), obs_count (1), ret_mean (1), ret_var (1),
// ret_count (1), returns (N), all float64, written into `file` (GROUP is created; it must not exist).
// The settings (norm_*, clip_*, epsilon, gamma) come from the configuration, not the file.
// vecnorm_load checks every shape against vn's (message names the file and the dataset) and that
// the counts are > 0 and the variances >= 0; it reads into vn only once every dataset was read,
// so on failure vn is unchanged.
int vecnorm_save(const VecNormalize *vn, hid_t file, const char *group);
int vecnorm_load(VecNormalize *vn, hid_t file, const char *group);

#endif
