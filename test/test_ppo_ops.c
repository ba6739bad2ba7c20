// test/test_ppo_ops.c: the rollout and PPO ops of the backend seam (backend_gae,
// backend_permutation, backend_ppo_loss, the multi-rank advantage moments, backend_explained_variance) against numbers
// they did not compute: SB3's train() run by PyTorch (test/make_ppo_loss_fixtures.py wrote
// test/data/ppo_loss_fixture.h5), central finite differences, GAE worked by hand and a
// double-precision reimplementation, and counting statistics for the permutation.
//
// Shapes: T horizon, N envs, B minibatch, A actions.
//
// Tolerances against torch: statistics 1e-6 relative + 1e-6 absolute (float32 on both sides, the
// sums in a different order; approx_kl is a mean of small differences); gradients 1e-5 of the
// largest |gradient| of the tensor (the log-probs, and so the ratios, differ by a few ulp).
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/h5io.h"
#include "common/rng.h"
#include "nn/backend.h"

static Backend *cpu(void) {
  Backend *b = backend_open("cpu");
  cr_assert(b, "backend_open(cpu): %s", error_message());
  return b;
}

static void assert_close(double got, double want, double rel, double abs_tol, const char *what, size_t i) {
  double tol = abs_tol + rel * fabs(want);
  cr_assert(fabs(got - want) <= tol, "%s[%zu]: got %.9g, expected %.9g (|diff| %.3g > tolerance %.3g)", what, i, got,
            want, fabs(got - want), tol);
}

// Every element within rel * max|want| of want; reports the first mismatching index.
static void assert_close_to_max(const float *got, const float *want, size_t n, double rel, const char *what) {
  double max_abs = 0.0;
  for (size_t i = 0; i < n; i++) max_abs = fmax(max_abs, fabs(want[i]));
  cr_assert_gt(max_abs, 0.0, "%s: the reference is all zeros", what);
  for (size_t i = 0; i < n; i++) assert_close(got[i], want[i], 0.0, rel * max_abs, what, i);
}

// --- the SB3 / PyTorch fixture -------------------------------------------------------------------------

#define FIXTURE PPO_SOURCE_DIR "/test/data/ppo_loss_fixture.h5"

static hid_t fixture_open(void) {
  hid_t f = h5io_open_read(FIXTURE);
  cr_assert(f >= 0, "%s (regenerate with test/make_ppo_loss_fixtures.py)", error_message());
  return f;
}

// Reads dataset `group/name` of n0 (x n1 when n1 > 0) floats into a new malloc'd array.
static float *fixture_read(hid_t f, const char *group, const char *name, int n0, int n1) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", group, name);
  hsize_t dims[2] = {(hsize_t)n0, (hsize_t)n1};
  float *out = malloc((size_t)n0 * (size_t)(n1 > 0 ? n1 : 1) * sizeof *out);
  cr_assert(out);
  cr_assert(h5io_read(f, path, H5IO_FLOAT32, n1 > 0 ? 2 : 1, dims, out) == 0, "%s", error_message());
  return out;
}

static double fixture_attr(hid_t f, const char *object, const char *attr) {
  double v;
  cr_assert(h5io_attr_read_double(f, object, attr, &v) == 0, "%s", error_message());
  return v;
}

static const char *const STAT_NAMES[] = {"loss",         "policy_loss", "value_loss",
                                         "entropy_loss", "approx_kl",   "clip_fraction"};

// One case of the fixture: the distribution's forward, backend_ppo_loss, the distribution's
// backward, each result against torch's.
static void ppo_fixture_case(const char *kind, const char *case_name) {
  int gaussian = strcmp(kind, "gauss") == 0;
  hid_t f = fixture_open();
  int B = (int)fixture_attr(f, kind, "B"), A = (int)fixture_attr(f, kind, "A");
  char group[32];
  snprintf(group, sizeof group, "%s/%s", kind, case_name);
  PpoLossHyper hyper = {.clip_range = fixture_attr(f, group, "clip_range"),
                        .clip_range_vf = fixture_attr(f, group, "clip_range_vf"),
                        .ent_coef = fixture_attr(f, group, "ent_coef"),
                        .vf_coef = fixture_attr(f, group, "vf_coef"),
                        .normalize_advantage = (int)fixture_attr(f, group, "normalize_advantage")};
  float loss_scale = (float)fixture_attr(f, group, "loss_scale");

  // inputs (CPU backend memory is host memory: the fixture's arrays are used directly)
  float *head = fixture_read(f, kind, gaussian ? "means" : "logits", B, A);   // (B, A)
  float *log_std = gaussian ? fixture_read(f, kind, "log_std", A, 0) : NULL;  // (A)
  float *actions = fixture_read(f, kind, "actions", B, gaussian ? A : 0);     // (B, A) | (B)
  float *values = fixture_read(f, kind, "values", B, 0);
  float *old_logp = fixture_read(f, kind, "old_log_prob", B, 0);
  float *old_values = fixture_read(f, kind, "old_values", B, 0);
  float *advantages = fixture_read(f, kind, "advantages", B, 0);
  float *returns = fixture_read(f, kind, "returns", B, 0);
  float *want_logp = fixture_read(f, kind, "log_prob", B, 0);
  float *want_entropy = fixture_read(f, kind, "entropy", B, 0);
  float *want_dhead = fixture_read(f, group, gaussian ? "grad_means" : "grad_logits", B, A);
  float *want_dlog_std = gaussian ? fixture_read(f, group, "grad_log_std", A, 0) : NULL;
  float *want_dvalues = fixture_read(f, group, "grad_values", B, 0);
  float want_stats[6];
  for (int k = 0; k < 6; k++) {
    float *v = fixture_read(f, group, STAT_NAMES[k], 1, 0);
    want_stats[k] = *v;
    free(v);
  }
  h5io_close(f);

  Backend *be = cpu();
  float *logp = backend_alloc(be, (size_t)B * 4), *entropy = backend_alloc(be, (size_t)B * 4);
  float *dlogp = backend_alloc(be, (size_t)B * 4), *dentropy = backend_alloc(be, (size_t)B * 4);
  float *dvalues = backend_alloc(be, (size_t)B * 4), *stats = backend_alloc(be, PPO_STAT_COUNT * 4);
  float *dhead = backend_alloc(be, (size_t)B * A * 4), *dlog_std = backend_alloc(be, (size_t)A * 4);
  float *scale = backend_alloc(be, 4);
  *scale = loss_scale;

  if (gaussian)
    backend_gaussian_forward(be, logp, entropy, head, log_std, actions, B, A);
  else
    backend_categorical_forward(be, logp, entropy, head, actions, B, A);
  for (int b = 0; b < B; b++) {
    assert_close(logp[b], want_logp[b], 1e-6, 1e-6, "log_prob", (size_t)b);
    assert_close(entropy[b], want_entropy[b], 1e-6, 1e-6, "entropy", (size_t)b);
  }
  backend_ppo_loss(be, stats, dlogp, dentropy, dvalues, logp, entropy, values, old_logp, old_values, advantages,
                   returns, B, hyper, loss_scale != 1.0f ? scale : NULL);
  for (int k = 0; k < 6; k++) assert_close(stats[k], want_stats[k], 1e-6, 1e-6, STAT_NAMES[k], 0);
  cr_assert(stats[PPO_STAT_CLIP_FRACTION] > 0.2f && stats[PPO_STAT_CLIP_FRACTION] < 0.8f, "both branches exercised");

  if (gaussian)  // dlog_std accumulates: zeroed by backend_alloc
    backend_gaussian_backward(be, dhead, dlog_std, dlogp, dentropy, head, log_std, actions, B, A);
  else
    backend_categorical_backward(be, dhead, dlogp, dentropy, head, actions, B, A);
  assert_close_to_max(dhead, want_dhead, (size_t)B * A, 1e-5, gaussian ? "grad_means" : "grad_logits");
  if (gaussian) assert_close_to_max(dlog_std, want_dlog_std, (size_t)A, 1e-5, "grad_log_std");
  assert_close_to_max(dvalues, want_dvalues, (size_t)B, 1e-5, "grad_values");

  float *host[] = {head,    log_std,   actions,      values,     old_logp,      old_values,  advantages,
                   returns, want_logp, want_entropy, want_dhead, want_dlog_std, want_dvalues};
  for (size_t i = 0; i < sizeof host / sizeof *host; i++) free(host[i]);
  float *dev[] = {logp, entropy, dlogp, dentropy, dvalues, stats, dhead, dlog_std, scale};
  for (size_t i = 0; i < sizeof dev / sizeof *dev; i++) backend_free(be, dev[i]);
  backend_close(be);
}

// a: normalize, clip 0.2, no value clip, ent_coef 0; b: value clip 0.1, ent_coef 0.01; c: b without
// normalisation; d: b with the loss scaled by 65536 (GradScaler) before backward.
Test(ppo_loss_torch, categorical_a_default) { ppo_fixture_case("cat", "a"); }
Test(ppo_loss_torch, categorical_b_value_clip_entropy) { ppo_fixture_case("cat", "b"); }
Test(ppo_loss_torch, categorical_c_no_normalization) { ppo_fixture_case("cat", "c"); }
Test(ppo_loss_torch, categorical_d_loss_scale) { ppo_fixture_case("cat", "d"); }
Test(ppo_loss_torch, gaussian_a_default) { ppo_fixture_case("gauss", "a"); }
Test(ppo_loss_torch, gaussian_b_value_clip_entropy) { ppo_fixture_case("gauss", "b"); }
Test(ppo_loss_torch, gaussian_c_no_normalization) { ppo_fixture_case("gauss", "c"); }
Test(ppo_loss_torch, gaussian_d_loss_scale) { ppo_fixture_case("gauss", "d"); }

Test(ppo_loss_torch, fixture_records_its_versions) {
  hid_t f = fixture_open();
  char version[64];
  cr_assert(h5io_attr_read_string(f, "/", "torch_version", version, sizeof version) == 0, "%s", error_message());
  cr_assert(h5io_attr_read_string(f, "/", "stable_baselines3_version", version, sizeof version) == 0, "%s",
            error_message());
  h5io_close(f);
}

// --- advantage normalisation split across ranks ------------------------------------------------------------

// One rank: backend_advantage_count_sum / sq_dev / normalize, then the loss with normalize_advantage
// off, is backend_ppo_loss's own normalisation bit for bit (what keeps a one-rank run of the
// multi-rank path equal to the plain one). Two halves whose sums are added, as the all-reduce does,
// give the mean and std of the whole minibatch (against a double two-pass reference).
Test(ppo_advantage_moments, one_rank_matches_the_loss_and_halves_add_up) {
  enum { B = 37 };
  Backend *be = cpu();
  Rng rng;
  rng_seed(&rng, 5);
  float logp[B], entropy[B], values[B], old_logp[B], old_values[B], advantages[B], returns[B], normalized[B];
  for (int b = 0; b < B; b++) {
    logp[b] = (float)(-1.0 - rng_uniform(&rng));
    old_logp[b] = (float)(logp[b] - 0.4 * (rng_uniform(&rng) - 0.5));
    entropy[b] = (float)(0.5 + rng_uniform(&rng));
    values[b] = (float)rng_normal(&rng);
    old_values[b] = (float)(values[b] + 0.1 * rng_normal(&rng));
    advantages[b] = (float)(3.0 * rng_normal(&rng) + 1.5);
    returns[b] = (float)(values[b] + rng_normal(&rng));
  }
  PpoLossHyper hyper = {
      .clip_range = 0.2, .clip_range_vf = 0.1, .ent_coef = 0.01, .vf_coef = 0.5, .normalize_advantage = 1};
  float want_stats[PPO_STAT_COUNT], want[3][B], got_stats[PPO_STAT_COUNT], got[3][B];
  backend_ppo_loss(be, want_stats, want[0], want[1], want[2], logp, entropy, values, old_logp, old_values, advantages,
                   returns, B, hyper, NULL);
  double count_sum[2], sq_dev;
  memcpy(normalized, advantages, sizeof normalized);
  backend_advantage_count_sum(be, count_sum, normalized, B);
  backend_advantage_sq_dev(be, &sq_dev, normalized, B, count_sum);
  backend_advantage_normalize(be, normalized, B, count_sum, &sq_dev);
  hyper.normalize_advantage = 0;
  backend_ppo_loss(be, got_stats, got[0], got[1], got[2], logp, entropy, values, old_logp, old_values, normalized,
                   returns, B, hyper, NULL);
  cr_expect(memcmp(got_stats, want_stats, sizeof got_stats) == 0, "stats differ from the loss's own normalisation");
  cr_expect(memcmp(got, want, sizeof got) == 0, "gradients differ from the loss's own normalisation");

  // Two "ranks" of 20 and 17 samples: sums added between the passes.
  double part[2][2], total[2], dev[2];
  backend_advantage_count_sum(be, part[0], advantages, 20);
  backend_advantage_count_sum(be, part[1], advantages + 20, B - 20);
  total[0] = part[0][0] + part[1][0];
  total[1] = part[0][1] + part[1][1];
  backend_advantage_sq_dev(be, &dev[0], advantages, 20, total);
  backend_advantage_sq_dev(be, &dev[1], advantages + 20, B - 20, total);
  double sq_total = dev[0] + dev[1], mean = 0.0, ss = 0.0;
  for (int b = 0; b < B; b++) mean += advantages[b];
  mean /= B;
  for (int b = 0; b < B; b++) ss += (advantages[b] - mean) * (advantages[b] - mean);
  cr_expect_eq(total[0], (double)B);
  assert_close(total[1] / total[0], mean, 1e-12, 1e-12, "mean", 0);
  assert_close(sq_total, ss, 1e-6, 0.0, "squared deviations", 0);  // around the float-rounded mean
  float halves[B];
  memcpy(halves, advantages, sizeof halves);
  backend_advantage_normalize(be, halves, 20, total, &sq_total);
  backend_advantage_normalize(be, halves + 20, B - 20, total, &sq_total);
  for (int b = 0; b < B; b++)
    assert_close(halves[b], (advantages[b] - mean) / (sqrt(ss / (B - 1)) + 1e-8), 1e-5, 1e-6, "normalised", (size_t)b);
  backend_close(be);
}

// --- backend_ppo_loss against central finite differences of its own loss ------------------------------------

// The loss alone, for finite differences (gradients into scratch).
static double ppo_loss_value(Backend *be, const float *logp, const float *entropy, const float *values,
                             const float *old_logp, const float *old_values, const float *advantages,
                             const float *returns, int B, PpoLossHyper hyper) {
  float stats[PPO_STAT_COUNT], scratch[3][64];
  cr_assert_leq(B, 64);
  backend_ppo_loss(be, stats, scratch[0], scratch[1], scratch[2], logp, entropy, values, old_logp, old_values,
                   advantages, returns, B, hyper, NULL);
  return stats[PPO_STAT_LOSS];
}

// Samples are drawn away from the kinks: the log ratio at least 0.05 from log(1 -+ clip), |values -
// old_values| at least 0.03 from clip_range_vf; steps are below those margins. The loss is
// quadratic in values and linear in entropy (big steps: exact up to rounding); in logp the
// central difference's truncation error, h^2/6 * |d^3 loss|, is ~1e-6 of the gradient at h = 1e-2.
// A float loss of size ~1 rounds at ~6e-8; divided by 2 h that is 3e-6 at h = 1e-2.
static void ppo_loss_finite_differences(PpoLossHyper hyper, uint64_t seed) {
  enum { B = 16 };
  Backend *be = cpu();
  Rng rng;
  rng_seed(&rng, seed);
  float logp[B], entropy[B], values[B], old_logp[B], old_values[B], advantages[B], returns[B];
  double lo = log(1.0 - hyper.clip_range), hi = log(1.0 + hyper.clip_range);
  int clipped = 0;
  for (int b = 0; b < B; b++) {
    logp[b] = (float)(-1.0 - rng_uniform(&rng));
    double log_ratio;
    do log_ratio = 0.6 * (rng_uniform(&rng) - 0.5);
    while (fabs(log_ratio - lo) < 0.05 || fabs(log_ratio - hi) < 0.05);
    clipped += log_ratio < lo || log_ratio > hi;
    old_logp[b] = (float)(logp[b] - log_ratio);
    entropy[b] = (float)(0.5 + rng_uniform(&rng));
    values[b] = (float)(2.0 * rng_uniform(&rng) - 1.0);
    double dv;
    do dv = 0.4 * (rng_uniform(&rng) - 0.5);
    while (hyper.clip_range_vf > 0.0 && fabs(fabs(dv) - hyper.clip_range_vf) < 0.03);
    old_values[b] = (float)(values[b] - dv);
    advantages[b] = (float)(rng_normal(&rng) + 0.2);
    returns[b] = (float)(values[b] + rng_normal(&rng));
  }
  cr_assert(clipped > 0 && clipped < B, "both branches exercised (%d of %d clipped)", clipped, B);
  float stats[PPO_STAT_COUNT], dlogp[B], dentropy[B], dvalues[B];
  backend_ppo_loss(be, stats, dlogp, dentropy, dvalues, logp, entropy, values, old_logp, old_values, advantages,
                   returns, B, hyper, NULL);
  struct {
    float *x;
    const float *grad;
    double h;
    const char *name;
  } inputs[] = {
      {logp, dlogp, 1e-2, "dlogp"}, {entropy, dentropy, 0.25, "dentropy"}, {values, dvalues, 1e-2, "dvalues"}};
  for (size_t k = 0; k < 3; k++)
    for (int b = 0; b < B; b++) {
      float *x = &inputs[k].x[b], saved = *x;
      double h = inputs[k].h;
      *x = (float)(saved + h);
      double up = ppo_loss_value(be, logp, entropy, values, old_logp, old_values, advantages, returns, B, hyper);
      double h_up = (double)*x - saved;  // the step actually taken in float
      *x = (float)(saved - h);
      double down = ppo_loss_value(be, logp, entropy, values, old_logp, old_values, advantages, returns, B, hyper);
      double h_down = saved - (double)*x;
      *x = saved;
      double fd = (up - down) / (h_up + h_down);
      assert_close(inputs[k].grad[b], fd, 1e-3, 2e-5, inputs[k].name, (size_t)b);
    }
  // The loss scale multiplies the three gradients and nothing else.
  float scale = 1024.0f, sstats[PPO_STAT_COUNT], sdlogp[B], sdentropy[B], sdvalues[B];
  backend_ppo_loss(be, sstats, sdlogp, sdentropy, sdvalues, logp, entropy, values, old_logp, old_values, advantages,
                   returns, B, hyper, &scale);
  for (int k = 0; k < PPO_STAT_COUNT; k++) cr_assert_eq(sstats[k], stats[k], "stats[%d] changed by the loss scale", k);
  for (int b = 0; b < B; b++) {
    assert_close(sdlogp[b], 1024.0 * dlogp[b], 1e-6, 0.0, "scaled dlogp", (size_t)b);
    assert_close(sdentropy[b], 1024.0 * dentropy[b], 1e-6, 0.0, "scaled dentropy", (size_t)b);
    assert_close(sdvalues[b], 1024.0 * dvalues[b], 1e-6, 0.0, "scaled dvalues", (size_t)b);
  }
  backend_close(be);
}

Test(ppo_loss_fd, normalized_value_clip_entropy) {
  ppo_loss_finite_differences(
      (PpoLossHyper){
          .clip_range = 0.2, .clip_range_vf = 0.1, .ent_coef = 0.01, .vf_coef = 0.5, .normalize_advantage = 1},
      11);
}

Test(ppo_loss_fd, raw_advantages_no_value_clip) {
  ppo_loss_finite_differences(
      (PpoLossHyper){
          .clip_range = 0.1, .clip_range_vf = 0.0, .ent_coef = 0.05, .vf_coef = 1.0, .normalize_advantage = 0},
      12);
}

// SB3 skips the normalisation of a single-sample minibatch (its std would be NaN).
Test(ppo_loss_fd, single_sample_is_not_normalized) {
  Backend *be = cpu();
  float logp = -1.0f, entropy = 1.0f, value = 0.5f, old_logp = -1.05f, old_value = 0.4f, adv = 3.0f, ret = 1.0f;
  float stats[PPO_STAT_COUNT], dlogp, dentropy, dvalue;
  PpoLossHyper hyper = {
      .clip_range = 0.2, .clip_range_vf = -1.0, .ent_coef = 0.0, .vf_coef = 0.5, .normalize_advantage = 1};
  backend_ppo_loss(be, stats, &dlogp, &dentropy, &dvalue, &logp, &entropy, &value, &old_logp, &old_value, &adv, &ret, 1,
                   hyper, NULL);
  double ratio = exp(0.05);
  assert_close(stats[PPO_STAT_POLICY_LOSS], -3.0 * ratio, 1e-6, 0.0, "policy_loss", 0);
  assert_close(stats[PPO_STAT_VALUE_LOSS], 0.25, 1e-6, 0.0, "value_loss", 0);
  assert_close(dlogp, -3.0 * ratio, 1e-6, 0.0, "dlogp", 0);
  backend_close(be);
}

// --- GAE ----------------------------------------------------------------------------------------------------

// T = 4, N = 2, gamma = 0.5, lambda = 0.5 (gamma lambda = 0.25): every number below is exact in float.
// Layout (T, N): element [t][n] at t * N + n. nt = nonterminal.
//
// env 0: rewards 1, 2, 3, 4; values 0.5, 1, 1.5, 2; an episode terminates at t = 1, so
// episode_starts[2][0] = 1; last_dones 0, last_values 4 (bootstrapped).
//   t=3: nt = 1 - last_done = 1, next_v 4:  delta = 4 + 0.5*4 - 2      = 4     gae = 4
//   t=2: nt = 1 - start[3] = 1, next_v 2:   delta = 3 + 0.5*2 - 1.5    = 2.5   gae = 2.5 + 0.25*4 = 3.5
//   t=1: nt = 1 - start[2] = 0:             delta = 2 - 1              = 1     gae = 1 + 0 = 1
//   t=0: nt = 1 - start[1] = 1, next_v 1:   delta = 1 + 0.5*1 - 0.5    = 1     gae = 1 + 0.25*1 = 1.25
//   returns = adv + values = 1.25 + 0.5, 1 + 1, 3.5 + 1.5, 4 + 2 = 1.75, 2, 5, 6
// env 1: raw rewards 0.5, -1, 2, 1; values 1, 2, -1, 0.5. The episode is truncated at t = 2 with
// V(terminal obs) = 3: SB3's collect_rollouts adds gamma * 3 to that reward (2 + 1.5 = 3.5) and
// the next step starts an episode, episode_starts[3][1] = 1. The last step ends an episode:
// last_dones 1, so last_values (100) must not be read.
//   t=3: nt = 1 - last_done = 0:            delta = 1 - 0.5            = 0.5   gae = 0.5
//   t=2: nt = 1 - start[3] = 0:             delta = 3.5 - (-1)         = 4.5   gae = 4.5
//   t=1: nt = 1 - start[2] = 1, next_v -1:  delta = -1 + 0.5*(-1) - 2  = -3.5  gae = -3.5 + 0.25*4.5 = -2.375
//   t=0: nt = 1 - start[1] = 1, next_v 2:   delta = 0.5 + 0.5*2 - 1    = 0.5   gae = 0.5 + 0.25*(-2.375) = -0.09375
//   returns = -0.09375 + 1, -2.375 + 2, 4.5 - 1, 0.5 + 0.5 = 0.90625, -0.375, 3.5, 1
// episode_starts[0][*] = 1 (a reset before the rollout) is never read.
Test(ppo_gae, hand_computed_termination_truncation_last_done) {
  enum { T = 4, N = 2 };
  const float rewards[T * N] = {1, 0.5f, 2, -1, 3, 3.5f, 4, 1};
  const float values[T * N] = {0.5f, 1, 1, 2, 1.5f, -1, 2, 0.5f};
  const float starts[T * N] = {1, 1, 0, 0, 1, 0, 0, 1};
  const float last_values[N] = {4, 100}, last_dones[N] = {0, 1};
  const float want_adv[T * N] = {1.25f, -0.09375f, 1, -2.375f, 3.5f, 4.5f, 4, 0.5f};
  const float want_ret[T * N] = {1.75f, 0.90625f, 2, -0.375f, 5, 3.5f, 6, 1};
  Backend *be = cpu();
  float adv[T * N], ret[T * N];
  backend_gae(be, adv, ret, rewards, values, starts, last_values, last_dones, T, N, 0.5, 0.5);
  for (int i = 0; i < T * N; i++) {
    cr_assert_eq(adv[i], want_adv[i], "advantages[t=%d][n=%d]: got %.9g, expected %.9g", i / N, i % N, adv[i],
                 want_adv[i]);
    cr_assert_eq(ret[i], want_ret[i], "returns[t=%d][n=%d]: got %.9g, expected %.9g", i / N, i % N, ret[i],
                 want_ret[i]);
  }
  backend_close(be);
}

Test(ppo_gae, random_against_double_reference) {
  enum { T = 37, N = 5 };
  const double gamma = 0.99, lambda = 0.95;
  Rng rng;
  rng_seed(&rng, 21);
  float rewards[T * N], values[T * N], starts[T * N], last_values[N], last_dones[N], adv[T * N], ret[T * N];
  for (int i = 0; i < T * N; i++) {
    rewards[i] = (float)rng_normal(&rng);
    values[i] = (float)(3.0 * rng_normal(&rng));
    starts[i] = rng_uniform(&rng) < 0.1 ? 1.0f : 0.0f;
  }
  for (int n = 0; n < N; n++) {
    last_values[n] = (float)rng_normal(&rng);
    last_dones[n] = (float)(n % 2);
  }
  Backend *be = cpu();
  backend_gae(be, adv, ret, rewards, values, starts, last_values, last_dones, T, N, gamma, lambda);
  for (int n = 0; n < N; n++) {
    double gae = 0.0;
    for (int t = T - 1; t >= 0; t--) {
      int i = t * N + n;
      double nonterminal = t == T - 1 ? 1.0 - last_dones[n] : 1.0 - starts[i + N];
      double next_v = t == T - 1 ? last_values[n] : values[i + N];
      double delta = rewards[i] + gamma * next_v * nonterminal - values[i];
      gae = delta + gamma * lambda * nonterminal * gae;
      assert_close(adv[i], gae, 1e-5, 1e-5, "advantages", (size_t)i);
      assert_close(ret[i], gae + values[i], 1e-5, 1e-5, "returns", (size_t)i);
    }
  }
  backend_close(be);
}

// --- permutation ----------------------------------------------------------------------------------------------

static int32_t *permutation(Backend *be, size_t n, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  int32_t *perm = backend_alloc(be, n * sizeof *perm);
  void *scratch = backend_alloc(be, backend_permutation_scratch_bytes(be, n));
  backend_permutation(be, perm, scratch, n, seed, subsequence, offset);
  backend_free(be, scratch);
  return perm;
}

Test(ppo_permutation, is_a_permutation_ordered_by_philox_keys) {
  const size_t sizes[] = {1, 2, 1000, 65537};
  Backend *be = cpu();
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    size_t n = sizes[s];
    int32_t *perm = permutation(be, n, 42, 3, 1000);
    char *seen = calloc(n, 1);
    for (size_t i = 0; i < n; i++) {
      cr_assert(perm[i] >= 0 && (size_t)perm[i] < n, "n=%zu: perm[%zu] = %d out of range", n, i, perm[i]);
      cr_assert(!seen[perm[i]], "n=%zu: perm[%zu] = %d repeats", n, i, perm[i]);
      seen[perm[i]] = 1;
    }
    // the documented order: keys (the Philox words at offset + index) ascending, ties by index
    for (size_t i = 1; i < n; i++) {
      uint32_t k0 = philox_u32(42, 3, 1000 + (uint64_t)perm[i - 1]), k1 = philox_u32(42, 3, 1000 + (uint64_t)perm[i]);
      cr_assert(k0 < k1 || (k0 == k1 && perm[i - 1] < perm[i]), "n=%zu: not sorted by key at %zu", n, i);
    }
    free(seen);
    backend_free(be, perm);
  }
  backend_close(be);
}

Test(ppo_permutation, deterministic_and_keyed_by_offset_and_subsequence) {
  enum { n = 1000 };
  Backend *be = cpu();
  int32_t *a = permutation(be, n, 7, 1, 0), *b = permutation(be, n, 7, 1, 0);
  int32_t *c = permutation(be, n, 7, 1, n), *d = permutation(be, n, 7, 2, 0), *e = permutation(be, n, 8, 1, 0);
  cr_assert(memcmp(a, b, n * sizeof *a) == 0, "same (seed, subsequence, offset), different permutation");
  cr_assert(memcmp(a, c, n * sizeof *a) != 0, "another offset, same permutation");
  cr_assert(memcmp(a, d, n * sizeof *a) != 0, "another subsequence, same permutation");
  cr_assert(memcmp(a, e, n * sizeof *a) != 0, "another seed, same permutation");
  int32_t *all[] = {a, b, c, d, e};
  for (int i = 0; i < 5; i++) backend_free(be, all[i]);
  backend_close(be);
}

// n = 5, 20000 draws at offsets 0, 5, 10, ... (non-overlapping words, as consecutive epochs use):
// count[position][value] is Binomial(20000, 1/5), mean 4000, sigma sqrt(20000 * 0.2 * 0.8) = 56.6.
// Each of the 25 cells must be within 5 sigma (283): a false alarm has probability ~25 * 6e-7.
// A biased shuffle fails it (checked with the naive "swap i with any j" shuffle, whose worst cell is
// 0.25 instead of 0.2).
Test(ppo_permutation, positions_are_uniform) {
  enum { n = 5, draws = 20000 };
  Backend *be = cpu();
  int32_t perm[n];
  void *scratch = backend_alloc(be, backend_permutation_scratch_bytes(be, n));
  int count[n][n];
  memset(count, 0, sizeof count);
  for (int d = 0; d < draws; d++) {
    backend_permutation(be, perm, scratch, n, 2026, 9, (uint64_t)d * n);
    for (int i = 0; i < n; i++) count[i][perm[i]]++;
  }
  double p = 1.0 / n, mean = draws * p, sigma = sqrt(draws * p * (1.0 - p));
  for (int i = 0; i < n; i++)
    for (int v = 0; v < n; v++)
      cr_assert(fabs(count[i][v] - mean) <= 5.0 * sigma,
                "position %d holds %d in %d of %d draws (expected %.0f +- %.0f)", i, v, count[i][v], draws, mean,
                5.0 * sigma);
  backend_free(be, scratch);
  backend_close(be);
}

// --- explained variance ------------------------------------------------------------------------------------------

// nn_explained_variance of the op's moments (backend memory is host memory on the CPU).
static float explained_variance_of(Backend *be, const float *pred, const float *target, size_t n) {
  double moments[NN_EV_MOMENTS];
  backend_explained_variance(be, moments, pred, target, n);
  cr_assert_eq(moments[NN_EV_COUNT], (double)n);
  return nn_explained_variance(moments);
}

Test(ppo_explained_variance, closed_forms) {
  enum { n = 100 };
  Backend *be = cpu();
  float target[n], pred[n], out;
  double mean = 0.0;
  for (int i = 0; i < n; i++) {
    target[i] = (float)(0.1 * i * i - 3.0);
    mean += target[i];
  }
  mean /= n;
  out = explained_variance_of(be, target, target, n);  // perfect prediction
  cr_assert_eq(out, 1.0f, "perfect prediction: %.9g", out);
  for (int i = 0; i < n; i++) pred[i] = (float)mean;  // the mean explains nothing
  out = explained_variance_of(be, pred, target, n);
  assert_close(out, 0.0, 0.0, 1e-6, "constant prediction at the mean", 0);
  for (int i = 0; i < n; i++) pred[i] = 2.0f * target[i];  // Var[-target] = Var[target]: 1 - 1 = 0
  out = explained_variance_of(be, pred, target, n);
  assert_close(out, 0.0, 0.0, 1e-6, "prediction 2 target", 0);
  for (int i = 0; i < n; i++) target[i] = 2.5f;  // Var[target] = 0
  out = explained_variance_of(be, pred, target, n);
  cr_assert(isnan(out), "var(target) = 0: got %.9g, expected NaN", out);
  cr_assert(isnan(explained_variance_of(be, pred, target, 0)), "no samples: NaN");
  backend_close(be);
}

Test(ppo_explained_variance, matches_sb3_on_random_data) {
  hid_t f = fixture_open();
  hsize_t dims[1];
  cr_assert(h5io_shape(f, "explained_variance/pred", 1, dims) == 1, "%s", error_message());
  int n = (int)dims[0];
  float *pred = fixture_read(f, "explained_variance", "pred", n, 0);
  float *target = fixture_read(f, "explained_variance", "target", n, 0);
  float *want = fixture_read(f, "explained_variance", "value", 1, 0);
  h5io_close(f);
  Backend *be = cpu();
  // SB3 takes numpy float32 variances; ours accumulates in double
  assert_close(explained_variance_of(be, pred, target, (size_t)n), *want, 1e-5, 1e-6, "explained_variance", 0);
  // Several ranks' rollouts as one (nn_ev_moments_merge in rank order): SB3's value over the whole
  // array, however it is split, empty parts included.
  static const int cuts[][4] = {{0, 128, 256, 256}, {1, 37, 200, 255}, {0, 0, 100, 256}, {64, 64, 64, 250}};
  for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
    double whole[NN_EV_MOMENTS], part[NN_EV_MOMENTS];
    int from = 0;
    for (int k = 0; k <= 4; k++) {  // parts [0, c0), [c0, c1), ..., [c3, n)
      int to = k < 4 ? cuts[c][k] * n / 256 : n;
      backend_explained_variance(be, k == 0 ? whole : part, pred + from, target + from, (size_t)(to - from));
      if (k > 0) nn_ev_moments_merge(whole, part);
      from = to;
    }
    double direct[NN_EV_MOMENTS];
    backend_explained_variance(be, direct, pred, target, (size_t)n);
    for (int m = 0; m < NN_EV_MOMENTS; m++) assert_close(whole[m], direct[m], 1e-12, 1e-12, "merged moment", m);
    assert_close(nn_explained_variance(whole), *want, 1e-5, 1e-6, "merged explained_variance", (int)c);
  }
  free(pred);
  free(target);
  free(want);
  backend_close(be);
}
