// nn/ops_math.h: per-element math shared by the CPU backend and the CUDA backend.
//
// Every function here is PPO_HD static inline: the CPU backend (backend_cpu*.c) calls it in its
// loops and the CUDA backend's kernels (backend_cuda*.cu) call the same function, so the CPU tests
// cover the GPU's arithmetic (DESIGN.md section 3).
// Only fp32 (and an fp64 detail where torch uses one) arithmetic; no allocation, no state.
//
// Legend for shapes: T horizon, N envs, B minibatch, O obs dim, A actions, H hidden.
// Depends on common/host_device.h.
#ifndef PPO_NN_OPS_MATH_H
#define PPO_NN_OPS_MATH_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/host_device.h"

// --- low-precision storage: IEEE binary16 and bfloat16 as raw bits, round to nearest even ----------

PPO_HD static inline uint32_t nn_f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

PPO_HD static inline float nn_bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

// fp32 -> bf16: round to nearest even; NaN stays a (quiet) NaN, overflow rounds to inf.
PPO_HD static inline uint16_t nn_f32_to_bf16(float x) {
  uint32_t u = nn_f32_bits(x);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

PPO_HD static inline float nn_bf16_to_f32(uint16_t h) { return nn_bits_f32((uint32_t)h << 16); }

// fp32 -> binary16: round to nearest even, subnormals kept, overflow to inf, NaN stays NaN.
PPO_HD static inline uint16_t nn_f32_to_f16(float x) {
  uint32_t u = nn_f32_bits(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);   // NaN
  if (abs >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);  // >= 65520 rounds to inf (and inf)
  if (abs < 0x38800000u) {                                    // below 2^-14: subnormal or zero
    if (abs < 0x33000000u) return sign;                       // below 2^-25 rounds to 0 (2^-25 ties to even 0)
    uint32_t mant = (abs & 0x007FFFFFu) | 0x00800000u;
    int shift = 126 - (int)(abs >> 23);  // 14..24 bits dropped for exponents -15..-25
    uint32_t kept = mant >> shift;
    uint32_t rest = mant & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1u))) kept++;
    return (uint16_t)(sign | kept);
  }
  uint32_t r = abs + 0x00000FFFu + ((abs >> 13) & 1u);  // round mantissa to 10 bits, ties to even
  return (uint16_t)(sign | ((r - 0x38000000u) >> 13));  // rebias exponent 127 -> 15
}

PPO_HD static inline float nn_f16_to_f32(uint16_t h) {
  uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  uint32_t exp = ((uint32_t)h >> 10) & 0x1Fu;
  uint32_t mant = (uint32_t)h & 0x3FFu;
  if (exp == 0x1Fu) return nn_bits_f32(sign | 0x7F800000u | (mant << 13));
  if (exp == 0) {
    float v = (float)mant * 5.9604644775390625e-8f;  // mant * 2^-24, exact
    return sign ? -v : v;
  }
  return nn_bits_f32(sign | ((exp + 112u) << 23) | (mant << 13));
}

// --- activations: the derivative is written in terms of the output y = f(x) --------------------------
// Both backends compute them through these two functions (the CPU backend's loops call them with a
// constant act, so each loop inlines its own). An activation whose derivative cannot be written
// from its output (gelu, silu: not one-to-one) needs the layer's input kept as well: nn/mlp.c keeps
// only outputs today (docs/ARCHITECTURE.md section 13.6).

enum { NN_ACT_NONE = 0, NN_ACT_TANH = 1, NN_ACT_RELU = 2, NN_ACT_COUNT = 3 };

// tanh as a 13/6 rational function of x, the minimax coefficients of Eigen's
// generic_fast_tanh_float, accurate to a few ulp. Its clamp, +-7.90531110763549805 (Eigen's), keeps
// |y| <= 1 in float: clamped at 9 the rational function gave 1.0000002 for some x in (8.19, 9),
// turning the backward's 1 - y^2 negative. Unlike libm's tanhf it vectorises (no call), and the
// CUDA backend evaluates the same arithmetic. NaN stays NaN (the clamp is written with comparisons,
// which NaN fails), so overflow detection still sees it.
PPO_HD static inline float nn_tanh(float x) {
  const float c = 7.90531110763549805f;
  x = x > c ? c : x;
  x = x < -c ? -c : x;
  float x2 = x * x;
  float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = x2 * p + -8.60467152213735e-11f;
  p = x2 * p + 5.12229709037114e-08f;
  p = x2 * p + 1.48572235717979e-05f;
  p = x2 * p + 6.37261928875436e-04f;
  p = x2 * p + 4.89352455891786e-03f;
  p = x * p;
  float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = x2 * q + 2.26843463243900e-03f;
  q = x2 * q + 4.89352518554385e-03f;
  return p / q;
}

PPO_HD static inline float nn_act_forward(float x, int act) {
  if (act == NN_ACT_TANH) return nn_tanh(x);
  if (act == NN_ACT_RELU) return x > 0.0f || x != x ? x : 0.0f;  // NaN stays NaN, as in torch.relu
  return x;
}

PPO_HD static inline float nn_act_backward(float dy, float y, int act) {
  if (act == NN_ACT_TANH) return dy * (1.0f - y * y);
  if (act == NN_ACT_RELU) return y > 0.0f ? dy : 0.0f;
  return dy;
}

// --- categorical over A logits (one row) -------------------------------------------------------------

// Max and log-sum-exp of a row, the stable log-softmax base: log p_j = z_j - lse.
PPO_HD static inline float nn_logsumexp(const float *z, int A) {
  float m = z[0];
  for (int j = 1; j < A; j++) m = z[j] > m ? z[j] : m;
  float s = 0.0f;
  for (int j = 0; j < A; j++) s += expf(z[j] - m);
  return m + logf(s);
}

// Entropy -sum p log p of a row, given its lse. A class of probability 0 adds 0, as in torch (which
// clamps the logits to the float minimum first): a -inf logit would make 0 x -inf = NaN. A NaN p
// (a NaN logit) is not 0 and makes the entropy NaN, as in torch.
PPO_HD static inline float nn_categorical_entropy(const float *z, int A, float lse) {
  float h = 0.0f;
  for (int j = 0; j < A; j++) {
    float lp = z[j] - lse, p = expf(lp);
    if (p != 0.0f) h -= p * lp;
  }
  return h;
}

// d(dlogp logp_a + dentropy H)/dz_j of one logit z_j of a row with log-sum-exp lse and entropy H:
// d logp_a / dz_j = [j == a] - p_j, d H / dz_j = -p_j (log p_j + H).
PPO_HD static inline float nn_categorical_dlogit(float z, float lse, float entropy, int is_action, float dlogp,
                                                 float dentropy) {
  float lp = z - lse;
  float p = expf(lp);
  float dh = p != 0.0f ? p * (lp + entropy) : 0.0f;  // the entropy's 0 for p = 0 (see nn_categorical_entropy)
  return dlogp * ((is_action ? 1.0f : 0.0f) - p) - dentropy * dh;
}

// One row's dlogits (A) for action index a with the row's dlogp and dentropy. a < 0 marks an action
// that is not an index in [0, A): a row of NaN (the CUDA kernel's report; the CPU checks first).
PPO_HD static inline void nn_categorical_backward_row(float *dz, const float *z, int A, int a, float dlogp,
                                                      float dentropy) {
  float lse = nn_logsumexp(z, A);
  float H = nn_categorical_entropy(z, A, lse);
  for (int j = 0; j < A; j++) dz[j] = a >= 0 ? nn_categorical_dlogit(z[j], lse, H, j == a, dlogp, dentropy) : NAN;
}

// Inverse CDF on u in (0, 1]: the first j whose cumulative probability reaches u. A u above the
// rounded total (it can end a few ulp below 1, and u may be 1) takes the last action of nonzero
// probability, never one the softmax gives probability 0, as torch's multinomial.
PPO_HD static inline int nn_categorical_sample(const float *z, int A, float lse, float u) {
  float cum = 0.0f;
  int last = A - 1;
  for (int j = 0; j < A; j++) {
    float p = expf(z[j] - lse);
    cum += p;
    if (u <= cum) return j;
    if (p > 0.0f) last = j;
  }
  return last;
}

// --- diagonal Gaussian, one dimension ----------------------------------------------------------------

#define NN_HALF_LOG_2PI 0.91893853320467274178f

PPO_HD static inline float nn_gaussian_logprob(float a, float mu, float log_std) {
  float z = (a - mu) * expf(-log_std);
  return -0.5f * z * z - log_std - NN_HALF_LOG_2PI;
}

PPO_HD static inline float nn_gaussian_entropy(float log_std) { return 0.5f + NN_HALF_LOG_2PI + log_std; }

// One row of A dimensions: returns sum_j logp_j, *entropy = sum_j H_j, both summed in j order.
PPO_HD static inline float nn_gaussian_row_forward(const float *a, const float *mu, const float *log_std, int A,
                                                   float *entropy) {
  float s = 0.0f, h = 0.0f;
  for (int j = 0; j < A; j++) {
    s += nn_gaussian_logprob(a[j], mu[j], log_std[j]);
    h += nn_gaussian_entropy(log_std[j]);
  }
  *entropy = h;
  return s;
}

// One element of the backward: d logp / d mu = (a - mu) / s^2 (times dlogp) into *dmean; returns
// the element's share of d / d log_std: dlogp (z^2 - 1) + dentropy (d H / d log_std = 1).
// inv_std = exp(-log_std).
PPO_HD static inline float nn_gaussian_backward_element(float a, float mu, float inv_std, float dlogp, float dentropy,
                                                        float *dmean) {
  float z = (a - mu) * inv_std;
  *dmean = dlogp * z * inv_std;
  return dlogp * (z * z - 1.0f) + dentropy;
}

// Box-Muller on two uniforms in (0, 1]: one standard normal (the cosine branch).
PPO_HD static inline float nn_normal_from_uniforms(float u1, float u2) {
  return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530717958647692f * u2);
}

// One row of A dimensions: a_j = mu_j + exp(log_std_j) eps_j with eps_j from uniforms u[2 j], u[2 j + 1];
// returns the row's log-prob summed in j order.
PPO_HD static inline float nn_gaussian_row_sample(float *a, const float *mu, const float *log_std, const float *u,
                                                  int A) {
  float s = 0.0f;
  for (int j = 0; j < A; j++) {
    float eps = nn_normal_from_uniforms(u[2 * j], u[2 * j + 1]);
    a[j] = mu[j] + expf(log_std[j]) * eps;
    s += nn_gaussian_logprob(a[j], mu[j], log_std[j]);
  }
  return s;
}

// --- loss scaling and optimiser ------------------------------------------------------------------------

// The smallest magnitude fp16 rounds to inf (65504 + half an ulp of 32).
#define NN_FP16_OVERFLOW 65520.0f

// Did scaled gradient element i overflow, as GradScaler.unscale_ judges it? Inf or NaN; and for
// the first n_fp16 elements (the weights and biases, which torch's autocast backward produces as
// fp16 GEMM and sum outputs before casting them to the fp32 .grad) also |x| >= 65520, which fp16
// rounds to inf. The engine keeps those gradients in fp32, so this is where the overflow is seen.
PPO_HD static inline int nn_grad_overflowed(float x, size_t i, size_t n_fp16) {
  return !(fabsf(x) < (i < n_fp16 ? NN_FP16_OVERFLOW : INFINITY));
}

// GradScaler.unscale_'s factor: the reciprocal formed in double, then rounded (torch's inv_scale).
PPO_HD static inline float nn_unscale_factor(float scale) { return (float)(1.0 / (double)scale); }

// clip_grad_norm_'s coefficient: torch.clamp(max_norm / (norm + 1e-6), max=1) in float. A NaN
// norm gives NaN (clamp passes NaN on), so the step turns every parameter NaN as torch's does,
// and the run stops there (ppo/train_run.c) instead of going on with only part of it NaN.
PPO_HD static inline float nn_clip_coef(float norm, float max_norm) {
  float c = max_norm / (norm + 1e-6f);
  return c > 1.0f ? 1.0f : c;
}

// GradScaler.update (PPO_SEMANTICS.md section 5): on inf backoff and reset the tracker; else count,
// and at growth_interval grow the scale when the grown value is finite. No lower clamp. The factors
// are doubles and each product is rounded once to float, as torch's _amp_update_scale_ (float scale
// times double factor): a factor such as 1.1 rounded to float first gave other scales.
// The scale after a skipped step: one rounding of the double product. A scale this leaves as it was
// (0, or the smallest denormals with a factor above 0.5) can never shrink again.
PPO_HD static inline float nn_grad_scaler_backoff(float scale, double backoff_factor) {
  return (float)((double)scale * backoff_factor);
}

PPO_HD static inline void nn_grad_scaler_update(float *scale, int32_t *tracker, float found_inf, double growth_factor,
                                                double backoff_factor, int32_t growth_interval) {
  if (found_inf != 0.0f) {
    *scale = nn_grad_scaler_backoff(*scale, backoff_factor);
    *tracker = 0;
    return;
  }
  int32_t next = *tracker + 1;
  if (next == growth_interval) {
    float grown = (float)((double)*scale * growth_factor);
    if (isfinite(grown)) *scale = grown;
    next = 0;
  }
  *tracker = next;
}

// The learning rate of an Adam step: lr times the schedule's factor (*scale, backend memory) when
// given, in double as SB3's schedule forms it (progress_remaining * initial_value), else lr.
PPO_HD static inline double nn_adam_lr(double lr, const double *scale) { return scale ? lr * *scale : lr; }

// The per-step scalars of nn_adam_element for step count t (after the increment), formed in double
// and rounded once, as torch does with Python numbers.
typedef struct {
  float weight1, beta2, one_minus_beta2, neg_step_size, bc2_sqrt, eps;
} NnAdamScalars;

PPO_HD static inline NnAdamScalars nn_adam_scalars(double lr, double beta1, double beta2, double eps, int32_t t) {
  double bc1 = 1.0 - pow(beta1, (double)t);
  double bc2 = 1.0 - pow(beta2, (double)t);
  NnAdamScalars s;
  s.weight1 = (float)(1.0 - beta1);
  s.beta2 = (float)beta2;
  s.one_minus_beta2 = (float)(1.0 - beta2);
  s.neg_step_size = (float)(-(lr / bc1));
  s.bc2_sqrt = (float)sqrt(bc2);
  s.eps = (float)eps;
  return s;
}

// One Adam element in the operation order of torch.optim.Adam's single-tensor path (what SB3 runs
// on the CPU, where foreach is off: torch/optim/adam.py) with torch's vectorised CPU kernels, whose
// lerp is an explicit fmadd and whose addcmul the compiler contracts into one:
//   m.lerp_(g, 1 - beta1)     w < 0.5 ? fma(w, g - m, m) : fma(w - 1, g - m, g)
//   v.mul_(beta2).addcmul_(g, g, value=1 - beta2)         fma((1 - beta2) g, g, v beta2)
//   denom = (v.sqrt() / bias_correction2_sqrt).add_(eps)
//   p.addcdiv_(m, denom, value=-step_size)                p + (-step_size m) / denom
// Against torch 2.15's own steps (4096 elements, 3 steps, beta1 0.9 and 0.3) 1 and 2 of 12,288
// results differed, by 1 ulp; the previous order (no fma, -step_size (m / denom)) in 145 and 192. The scalars (weight =
// 1 - beta1, step_size = lr / (1 - beta1^t), bc2_sqrt = sqrt(1 - beta2^t)) are computed in double by
// the caller and passed as floats, as torch does with Python numbers. fmaf is exact on every
// backend (the CPU's x86-64-v3/v4 clones and CUDA have the instruction).
PPO_HD static inline void nn_adam_element(float *p, float *m, float *v, float g, float weight1, float beta2,
                                          float one_minus_beta2, float neg_step_size, float bc2_sqrt, float eps) {
  *m = weight1 < 0.5f ? fmaf(weight1, g - *m, *m) : fmaf(weight1 - 1.0f, g - *m, g);
  *v = fmaf(one_minus_beta2 * g, g, *v * beta2);
  float denom = sqrtf(*v) / bc2_sqrt + eps;
  *p = *p + neg_step_size * *m / denom;
}

// --- PPO (SB3's ppo.py train(); PPO_SEMANTICS.md sections 3 and 4) ------------------------------------------

// One GAE step backwards in SB3's float32 operation order (numpy float32 arrays, Python-float
// gamma and gamma * lambda rounded to float32): returns the new gae. gamma_lambda = (float)(gamma * lambda).
PPO_HD static inline float nn_gae_step(float reward, float value, float next_value, float nonterminal, float gae,
                                       float gamma, float gamma_lambda) {
  float delta = reward + gamma * next_value * nonterminal - value;
  return delta + gamma_lambda * nonterminal * gae;
}

// torch.clamp(x, lo, hi): NaN stays NaN (fminf / fmaxf would return a bound).
PPO_HD static inline float nn_clamp(float x, float lo, float hi) { return x < lo ? lo : x > hi ? hi : x; }

// One sample of the clipped surrogate. adv is the (normalised) advantage, log_ratio = logp -
// old_logp. Writes *term = min(adv r, adv clamp(r, 1 - clip, 1 + clip)) (the policy loss is -mean
// of it), *dterm_dlogp = d term / d logp, torch's gradient: the unclipped branch (or a tie, torch's
// minimum halves the gradient between equal branches and clamp passes it inside its range) gives
// adv r, the clipped branch 0; *kl = (r - 1) - log_ratio; returns 1 when |r - 1| > clip.
// clip_lo, clip_hi = (float)(1 -+ clip) formed in double, as torch.clamp receives Python floats.
PPO_HD static inline int nn_ppo_surrogate(float adv, float log_ratio, float clip, float clip_lo, float clip_hi,
                                          float *term, float *dterm_dlogp, float *kl) {
  float ratio = expf(log_ratio);
  float clamped = nn_clamp(ratio, clip_lo, clip_hi);
  float surr1 = adv * ratio, surr2 = adv * clamped;
  bool nan = surr1 != surr1 || surr2 != surr2;  // torch.min passes NaN on (fminf would drop it)
  *term = nan ? NAN : fminf(surr1, surr2);
  *dterm_dlogp = nan ? NAN : surr1 <= surr2 ? surr1 : 0.0f;
  *kl = (ratio - 1.0f) - log_ratio;
  return fabsf(ratio - 1.0f) > clip;
}

// The value prediction used in the value loss: value, or with clip_vf > 0 old_value + clamp(value -
// old_value, -clip_vf, clip_vf); *dpred_dvalue = 1 where the clamp passes the gradient, else 0.
PPO_HD static inline float nn_ppo_value_pred(float value, float old_value, float clip_vf, float *dpred_dvalue) {
  if (clip_vf <= 0.0f) {
    *dpred_dvalue = 1.0f;
    return value;
  }
  float diff = value - old_value;
  *dpred_dvalue = (diff >= -clip_vf && diff <= clip_vf) ? 1.0f : 0.0f;
  return old_value + nn_clamp(diff, -clip_vf, clip_vf);
}

// Advantage normalisation's two numbers from double sums over the B samples: the mean, and the
// divisor std + 1e-8 with the unbiased std (B > 1) of the deviations from that (rounded) mean.
PPO_HD static inline float nn_ppo_adv_mean(double sum, int B) { return (float)(sum / B); }
PPO_HD static inline float nn_ppo_adv_div(double squared_deviations, int B) {
  return (float)sqrt(squared_deviations / (B - 1)) + 1e-8f;
}

// One normalised advantage: (a - mean) / div, div = std + 1e-8.
PPO_HD static inline float nn_ppo_adv_normalize(float advantage, float mean, float div) {
  return (advantage - mean) / div;
}

// SB3's explained_variance, 1 - Var[y - pred] / Var[y] with population variances, from the moments
// backend_explained_variance writes (doubles): the count, and the mean and the sum of squared
// deviations of y and of d = y - pred. NaN when Var[y] = 0 (an empty or constant target).
enum { NN_EV_COUNT, NN_EV_MEAN_Y, NN_EV_M2_Y, NN_EV_MEAN_D, NN_EV_M2_D, NN_EV_MOMENTS };
PPO_HD static inline float nn_explained_variance(const double *m) {
  return m[NN_EV_M2_Y] == 0.0 ? (float)NAN : (float)(1.0 - m[NN_EV_M2_D] / m[NN_EV_M2_Y]);
}

// a's moments become those of a's and b's samples together (Chan, Golub and LeVeque's pairwise
// update of the mean and the sum of squared deviations): the ranks' rollouts as one.
PPO_HD static inline void nn_ev_moments_merge(double *a, const double *b) {
  double na = a[NN_EV_COUNT], nb = b[NN_EV_COUNT], n = na + nb;
  if (nb == 0.0) return;
  for (int k = 0; k < 2; k++) {  // y, then d
    double *mean = &a[NN_EV_MEAN_Y + 2 * k], *m2 = &a[NN_EV_M2_Y + 2 * k];
    double delta = b[NN_EV_MEAN_Y + 2 * k] - *mean;
    *mean += delta * (nb / n);
    *m2 += b[NN_EV_M2_Y + 2 * k] + delta * delta * (na * nb / n);
  }
  a[NN_EV_COUNT] = n;
}

// The per-minibatch statistics backend_ppo_loss writes (floats, backend memory; nn/backend.h).
enum {
  PPO_STAT_LOSS = 0,       // policy_loss + ent_coef * entropy_loss + vf_coef * value_loss
  PPO_STAT_POLICY_LOSS,    // -mean(min(adv ratio, adv clamp(ratio, 1 -+ clip)))
  PPO_STAT_VALUE_LOSS,     // mean((returns - v)^2)
  PPO_STAT_ENTROPY_LOSS,   // -mean(entropy)
  PPO_STAT_APPROX_KL,      // mean((ratio - 1) - log ratio)
  PPO_STAT_CLIP_FRACTION,  // mean(|ratio - 1| > clip)
  PPO_STAT_COUNT = 8       // row stride (two spare slots)
};

// The per-minibatch scalars of nn_ppo_sample.
typedef struct {
  int normalize;  // 1: adv = (adv - adv_mean) / adv_div
  float adv_mean, adv_div;
  float clip, clip_lo, clip_hi;        // clip range and (float)(1 -+ clip) formed in double
  float clip_vf;                       // 0: no value clipping
  float g_policy, g_value, g_entropy;  // d loss / d(per-sample term) of each mean, times the loss scale
} NnPpoScalars;

// clip_range_vf <= 0 turns value clipping off; scale is the loss scale (1 without one).
PPO_HD static inline NnPpoScalars nn_ppo_scalars(double clip_range, double clip_range_vf, double ent_coef,
                                                 double vf_coef, int normalize, float adv_mean, float adv_div,
                                                 float scale, int B) {
  NnPpoScalars s;
  s.normalize = normalize;
  s.adv_mean = adv_mean;
  s.adv_div = adv_div;
  s.clip = (float)clip_range;
  s.clip_lo = (float)(1.0 - clip_range);
  s.clip_hi = (float)(1.0 + clip_range);
  s.clip_vf = clip_range_vf > 0.0 ? (float)clip_range_vf : 0.0f;
  s.g_policy = -scale / (float)B;  // torch: the scaled seed divided by B
  s.g_value = (float)vf_coef * scale * 2.0f / (float)B;
  s.g_entropy = -(float)ent_coef * scale / (float)B;
  return s;
}

// One sample of SB3's loss: writes its gradients *dlogp and *dvalue (the entropy's is s->g_entropy
// for every sample) and its terms of the means: *term (policy, before the minus), *kl and *err (the
// value error pred - return, squared by the caller in double). Returns 1 when the ratio was clipped.
PPO_HD static inline int nn_ppo_sample(const NnPpoScalars *s, float advantage, float logp, float old_logp, float value,
                                       float old_value, float ret, float *term, float *kl, float *err, float *dlogp,
                                       float *dvalue) {
  float adv = s->normalize ? nn_ppo_adv_normalize(advantage, s->adv_mean, s->adv_div) : advantage;
  float dterm;
  int clipped = nn_ppo_surrogate(adv, logp - old_logp, s->clip, s->clip_lo, s->clip_hi, term, &dterm, kl);
  *dlogp = s->g_policy * dterm;
  float dpred;
  float pred = nn_ppo_value_pred(value, old_value, s->clip_vf, &dpred);
  *err = pred - ret;
  *dvalue = s->g_value * *err * dpred;
  return clipped;
}

// The sums over a minibatch's samples that its statistics are made of.
typedef struct {
  double policy, value, entropy, kl, clipped;  // policy terms, squared value errors, entropies, KLs, clipped count
} NnPpoSums;

// Sample b of the loss: its gradients (*dlogp, *dentropy, *dvalue) and its terms added to *sums.
PPO_HD static inline void nn_ppo_accumulate(const NnPpoScalars *s, NnPpoSums *sums, float advantage, float logp,
                                            float old_logp, float value, float old_value, float ret, float entropy,
                                            float *dlogp, float *dentropy, float *dvalue) {
  float term, kl, err;
  sums->clipped += nn_ppo_sample(s, advantage, logp, old_logp, value, old_value, ret, &term, &kl, &err, dlogp, dvalue);
  sums->policy += term;
  sums->kl += kl;
  sums->value += (double)err * (double)err;
  sums->entropy += entropy;
  *dentropy = s->g_entropy;
}

// The stats row (PPO_STAT_COUNT floats) of B samples' sums: SB3's means and its combined loss.
PPO_HD static inline void nn_ppo_stats(float *stats, const NnPpoSums *sums, int B, double ent_coef, double vf_coef) {
  double policy_loss = -sums->policy / B, value_loss = sums->value / B, entropy_loss = -sums->entropy / B;
  stats[PPO_STAT_LOSS] = (float)(policy_loss + ent_coef * entropy_loss + vf_coef * value_loss);
  stats[PPO_STAT_POLICY_LOSS] = (float)policy_loss;
  stats[PPO_STAT_VALUE_LOSS] = (float)value_loss;
  stats[PPO_STAT_ENTROPY_LOSS] = (float)entropy_loss;
  stats[PPO_STAT_APPROX_KL] = (float)(sums->kl / B);
  stats[PPO_STAT_CLIP_FRACTION] = (float)(sums->clipped / B);
  for (int k = PPO_STAT_CLIP_FRACTION + 1; k < PPO_STAT_COUNT; k++) stats[k] = 0.0f;
}

#endif
