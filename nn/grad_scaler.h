// nn/grad_scaler.h: dynamic loss scaling with torch.amp.GradScaler's exact rules
// (PPO_SEMANTICS.md section 5, pytorch torch/amp/grad_scaler.py).
//
// The state (scale, growth tracker, found-inf flag) lives in backend memory, inside the
// optimiser's scalar block, so a skipped step needs no host round trip. Order per minibatch: loss
// gradients times the scale -> backward -> grad_scaler_unscale -> clip -> Adam (skips on found_inf)
// -> grad_scaler_update (the last four are optim_step). The trainer scales inside the loss:
// backend_ppo_loss reads the scale (its loss_scale argument) and writes its gradients already
// multiplied; grad_scaler_scale_seed scales a seed the caller made itself (ppo-bench, tests). A
// disabled scaler (fp32 and bf16 runs) does nothing in any of these, and the trainer passes the
// loss no scale.
// Depends on nn/backend.h.
#ifndef PPO_NN_GRAD_SCALER_H
#define PPO_NN_GRAD_SCALER_H

#include "nn/backend.h"

typedef struct {
  int enabled;
  float init_scale;                      // torch default 65536 (a float tensor in torch too)
  double growth_factor, backoff_factor;  // torch defaults 2, 0.5 (Python floats: doubles)
  int32_t growth_interval;               // torch default 2000
} GradScalerSpec;

typedef struct {
  Backend *backend;  // not owned
  GradScalerSpec spec;
  float *scale;      // (1) backend memory, owned by the caller's scalar block
  int32_t *tracker;  // (1)
  float *found_inf;  // (1) 0 or 1
} GradScaler;

GradScalerSpec grad_scaler_defaults(int enabled);  // torch's defaults
// Points the scaler at three scalars in backend memory and writes the initial state (scale =
// init_scale, tracker = 0, found_inf = 0). Checks the spec: exits through CHECK on nonsense (the
// config layer validates user values first).
void grad_scaler_init(GradScaler *scaler, Backend *backend, const GradScalerSpec *spec, float *scale, int32_t *tracker,
                      float *found_inf);
void grad_scaler_scale_seed(GradScaler *scaler, float *seed,
                            size_t n);  // seed (n) *= scale: backward starts from loss * scale
// found_inf = 0, then grads *= 1/scale and flag an overflow: inf or NaN, and in the first n_fp16
// elements (the weights and biases, fp16 GEMM outputs in torch's autocast) |g| >= 65520
// (backend_unscale_check).
void grad_scaler_unscale(GradScaler *scaler, float *grads, size_t n, size_t n_fp16);
// The same, fused with clip_grad_norm_'s norm and coefficient of the unscaled grads (one pass over
// them: backend_unscale_clip_coef). The scaler must be enabled.
void grad_scaler_unscale_clip_coef(GradScaler *scaler, float *grads, size_t n, size_t n_fp16, float *total, float *coef,
                                   float max_norm);
void grad_scaler_update(GradScaler *scaler);                   // backoff or growth, after the (maybe skipped) step
const float *grad_scaler_found_inf(const GradScaler *scaler);  // NULL when disabled (Adam never skips)

#endif
