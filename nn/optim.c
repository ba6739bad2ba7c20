// nn/optim.c: the ordered optimiser step over the policy's slabs.
#include "nn/optim.h"

#include <stddef.h>
#include <stdlib.h>

#include "common/check.h"

Optimizer *optim_init(Backend *backend, const OptimSpec *spec) {
  CHECK(spec->adam.lr >= 0.0, "optimizer: learning_rate must be >= 0");
  Optimizer *optim = CHECK_ALLOC(sizeof *optim, "optimizer");
  optim->backend = backend;
  optim->spec = *spec;
  optim->scalars = backend_alloc(backend, sizeof(OptimScalars));  // zeroed: step 0, found_inf 0
  grad_scaler_init(&optim->scaler, backend, &spec->scaler, &optim->scalars->scale, &optim->scalars->tracker,
                   &optim->scalars->found_inf);
  optim_set_progress(optim, 1.0);
  return optim;
}

void optim_free(Optimizer *optim) {
  if (!optim) return;
  backend_free(optim->backend, optim->scalars);
  free(optim);
}

double optim_lr(const Optimizer *optim, double progress_remaining) {
  return optim->spec.linear_schedule ? optim->spec.adam.lr * progress_remaining : optim->spec.adam.lr;
}

void optim_set_progress(Optimizer *optim, double progress_remaining) {
  double scale = optim->spec.linear_schedule ? progress_remaining : 1.0;  // optim_lr = adam.lr * scale
  backend_upload(optim->backend, &optim->scalars->lr_scale, &scale, sizeof scale);
}

void optim_step(Optimizer *optim, Policy *policy) {
  Backend *b = optim->backend;
  policy_grads_settle(policy);  // a zero_grad with no backward after it: the grads become zero for real
  float *grads = policy->grads_memory;
  size_t n = policy->slab_floats;
  // fp16 networks: their weights and biases, the slab up to log_std (the last tensor, a Gaussian
  // head's), whose gradient torch forms in fp32 even under autocast. Other dtypes: none (a scaler
  // over fp32 gradients sees inf and NaN only, as torch's GradScaler without autocast).
  size_t n_fp16 = policy->spec.dtype != NN_F16 ? 0
                  : policy->params.log_std     ? (size_t)(policy->params.log_std - policy->params_memory)
                                               : n;
  const float *clip = NULL;
  if (optim->spec.max_grad_norm > 0.0f) {
    if (optim->spec.scaler.enabled)  // unscale and the clip norm in one pass over the grads
      grad_scaler_unscale_clip_coef(&optim->scaler, grads, n, n_fp16, &optim->scalars->grad_norm,
                                    &optim->scalars->clip_coef, optim->spec.max_grad_norm);
    else
      backend_clip_coef(b, &optim->scalars->grad_norm, &optim->scalars->clip_coef, grads, n, optim->spec.max_grad_norm);
    clip = &optim->scalars->clip_coef;
  } else {
    grad_scaler_unscale(&optim->scaler, grads, n, n_fp16);
    backend_global_norm(b, &optim->scalars->grad_norm, grads, n);
  }
  backend_adam_step(b, policy->params_memory, grads, policy->m_memory, policy->v_memory, n, optim->spec.adam,
                    &optim->scalars->lr_scale, &optim->scalars->adam_step, grad_scaler_found_inf(&optim->scaler), clip,
                    policy->lowp_memory, policy->spec.dtype);
  policy_refresh_derived(policy);
  grad_scaler_update(&optim->scaler);
}

void optim_read_state(const Optimizer *optim, OptimScalars *out) {
  backend_sync(optim->backend);
  backend_download(optim->backend, out, optim->scalars, sizeof *out);
}

void optim_write_state(Optimizer *optim, const OptimScalars *in) {
  backend_upload(optim->backend, optim->scalars, in, offsetof(OptimScalars, lr_scale));
}
