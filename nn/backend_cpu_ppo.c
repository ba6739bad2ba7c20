// nn/backend_cpu_ppo.c: the CPU backend's PPO loss (forward statistics and the per-sample
// gradients in one pass) and the explained variance (nn/backend.h documents both).
//
// A minibatch is at most a few thousand samples, so these are serial loops: an OpenMP region
// costs about a microsecond on this machine, as much as the whole loss of a 64-sample minibatch.
// Means are accumulated in double in index order (the same bits for any thread count); the
// per-sample math is nn/ops_math.h's (shared with the CUDA backend).
#include <math.h>

#include "nn/backend_cpu.h"

void cpu_ppo_loss(Backend *backend, float *stats, float *dlogp, float *dentropy, float *dvalues, const float *logp,
                  const float *entropy, const float *values, const float *old_logp, const float *old_values,
                  const float *advantages, const float *returns, int B, PpoLossHyper hyper, const float *loss_scale) {
  (void)backend;
  // Advantage normalisation: torch's mean and unbiased std over the minibatch (SB3 skips it for B = 1).
  float adv_mean = 0.0f, adv_div = 1.0f;
  int normalize = hyper.normalize_advantage && B > 1;
  if (normalize) {
    double sum = 0.0;
    for (int b = 0; b < B; b++) sum += advantages[b];
    adv_mean = nn_ppo_adv_mean(sum, B);
    double ss = 0.0;
    for (int b = 0; b < B; b++) {
      double d = (double)advantages[b] - (double)adv_mean;
      ss += d * d;
    }
    adv_div = nn_ppo_adv_div(ss, B);
  }
  NnPpoScalars s = nn_ppo_scalars(hyper.clip_range, hyper.clip_range_vf, hyper.ent_coef, hyper.vf_coef, normalize,
                                  adv_mean, adv_div, loss_scale ? *loss_scale : 1.0f, B);
  NnPpoSums sums = {0.0, 0.0, 0.0, 0.0, 0.0};
  for (int b = 0; b < B; b++)
    nn_ppo_accumulate(&s, &sums, advantages[b], logp[b], old_logp[b], values[b], old_values[b], returns[b], entropy[b],
                      &dlogp[b], &dentropy[b], &dvalues[b]);
  nn_ppo_stats(stats, &sums, B, hyper.ent_coef, hyper.vf_coef);
}

// The same arithmetic as cpu_ppo_loss's normalisation, split at the two sums a multi-rank run adds
// up across ranks: mean rounded to float, squared deviations from that float in double.
void cpu_advantage_count_sum(Backend *backend, double *count_sum, const float *advantages, int B) {
  (void)backend;
  double sum = 0.0;
  for (int b = 0; b < B; b++) sum += advantages[b];
  count_sum[0] = B;
  count_sum[1] = sum;
}

void cpu_advantage_sq_dev(Backend *backend, double *sq_dev, const float *advantages, int B, const double *count_sum) {
  (void)backend;
  float mean = nn_ppo_adv_mean(count_sum[1], (int)count_sum[0]);
  double ss = 0.0;
  for (int b = 0; b < B; b++) {
    double d = (double)advantages[b] - (double)mean;
    ss += d * d;
  }
  *sq_dev = ss;
}

void cpu_advantage_normalize(Backend *backend, float *advantages, int B, const double *count_sum,
                             const double *sq_dev) {
  (void)backend;
  double count = count_sum[0];
  if (count <= 1.0) return;
  float mean = nn_ppo_adv_mean(count_sum[1], (int)count), div = nn_ppo_adv_div(*sq_dev, (int)count);
  for (int b = 0; b < B; b++) advantages[b] = nn_ppo_adv_normalize(advantages[b], mean, div);
}

void cpu_explained_variance(Backend *backend, double *moments, const float *pred, const float *target, size_t n) {
  (void)backend;
  if (n == 0) {
    for (int k = 0; k < NN_EV_MOMENTS; k++) moments[k] = 0.0;
    return;
  }
  double mean_y = 0.0, mean_d = 0.0;
  for (size_t i = 0; i < n; i++) {
    mean_y += target[i];
    mean_d += (double)target[i] - (double)pred[i];
  }
  mean_y /= (double)n;
  mean_d /= (double)n;
  double var_y = 0.0, var_d = 0.0;
  for (size_t i = 0; i < n; i++) {
    double dy = target[i] - mean_y, dd = ((double)target[i] - (double)pred[i]) - mean_d;
    var_y += dy * dy;
    var_d += dd * dd;
  }
  moments[NN_EV_COUNT] = (double)n;
  moments[NN_EV_MEAN_Y] = mean_y, moments[NN_EV_M2_Y] = var_y;
  moments[NN_EV_MEAN_D] = mean_d, moments[NN_EV_M2_D] = var_d;
}
