// nn/optim.h: one Adam over every parameter of the policy (the flat params slab), the linear LR
// schedule, global-norm clipping and the GradScaler, in torch's order:
//   unscale (+ inf check) -> clip -> Adam step (skipped on found_inf) -> refresh low-precision weights
//   -> scaler update.
//
// Clipping and the low-precision weight refresh are fused into the Adam pass (backend_clip_coef,
// backend_adam_step's grad_scale and params_lp), bit-identical to doing them separately.
// The optimiser owns one small slab of scalars in backend memory (OptimScalars: Adam's step count,
// the loss scale, growth tracker, found-inf flag and the last grad norm); Adam m and v are the
// policy's slabs. optim_read_state / optim_write_state copy the scalars for logs and checkpoints.
// Depends on nn/backend.h, nn/policy.h, nn/grad_scaler.h.
#ifndef PPO_NN_OPTIM_H
#define PPO_NN_OPTIM_H

#include "nn/grad_scaler.h"
#include "nn/policy.h"

typedef struct {
  AdamHyper adam;       // lr is the initial learning rate; SB3: 3e-4, 0.9, 0.999, 1e-5
  int linear_schedule;  // 1: lr = initial * progress_remaining (SB3's linear_schedule)
  float max_grad_norm;  // <= 0: no clipping
  GradScalerSpec scaler;
} OptimSpec;

typedef struct {
  int32_t adam_step;  // Adam steps taken (skipped steps do not count)
  float scale;        // loss scale
  int32_t tracker;    // growth tracker
  float found_inf;    // 1 when the last step was skipped
  float grad_norm;    // global norm before clipping, after unscaling
  float clip_coef;    // min(1, max_norm / (grad_norm + 1e-6)), applied inside the Adam pass
  double lr_scale;    // the schedule's factor of the learning rate (optim_set_progress); not a state
} OptimScalars;       // the same layout in backend memory and on the host

typedef struct {
  Backend *backend;  // not owned
  OptimSpec spec;
  OptimScalars *scalars;  // backend memory, one allocation
  GradScaler scaler;
} Optimizer;

// Allocates the scalar block (one backend allocation) and writes the initial state. The caller
// owns the result: optim_free. Exits through CHECK on an invalid spec.
Optimizer *optim_init(Backend *backend, const OptimSpec *spec);
void optim_free(Optimizer *optim);                                   // NULL is fine
double optim_lr(const Optimizer *optim, double progress_remaining);  // progress 1 at the start, 0 at the end
// The learning rate of the steps that follow: optim_lr(progress_remaining), kept in the scalars'
// lr_scale (an upload), so that a recorded update reads it at each replay. An uploaded value:
// call it outside backend_graph_run (the trainer: once per iteration, before the update). Until the
// first call the rate is the initial one.
void optim_set_progress(Optimizer *optim, double progress_remaining);
// The whole update on the policy's grads (already backpropagated from loss gradients times the
// scale when the scaler is on: backend_ppo_loss's loss_scale in the trainer, or a seed scaled by
// grad_scaler_scale_seed): unscale, clip, Adam + lowp refresh, scaler update.
// The grads slab is left unclipped (the clip coefficient is applied inside Adam). Queues ops only
// (it may be recorded): the same arguments at every step.
void optim_step(Optimizer *optim, Policy *policy);
void optim_read_state(const Optimizer *optim, OptimScalars *out);  // host copy (synchronises)
// Restores the state (checkpoints): every field but lr_scale, which stays as optim_set_progress left it.
void optim_write_state(Optimizer *optim, const OptimScalars *in);

#endif
