// nn/backend_cuda_ops.cu: distributions, norms, loss scaling, Adam, random numbers on CUDA.
//
// PLACEHOLDER: every function exits with "not implemented yet"; replaced in this branch of work.
#include "nn/backend_cuda.h"

void cuda_categorical_forward(Backend *backend, float *logp, float *entropy, const float *logits, const float *actions, int B, int A) {
  check_fail("cuda_categorical_forward", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_categorical_backward(Backend *backend, float *dlogits, const float *dlogp, const float *dentropy, const float *logits, const float *actions, int B, int A) {
  check_fail("cuda_categorical_backward", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_categorical_sample(Backend *backend, float *actions, float *logp, const float *logits, const float *uniforms, int B, int A) {
  check_fail("cuda_categorical_sample", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_gaussian_forward(Backend *backend, float *logp, float *entropy, const float *mean, const float *log_std, const float *actions, int B, int A) {
  check_fail("cuda_gaussian_forward", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_gaussian_backward(Backend *backend, float *dmean, float *dlog_std, const float *dlogp, const float *dentropy, const float *mean, const float *log_std, const float *actions, int B, int A) {
  check_fail("cuda_gaussian_backward", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_gaussian_sample(Backend *backend, float *actions, float *logp, const float *mean, const float *log_std, const float *uniforms, int B, int A) {
  check_fail("cuda_gaussian_sample", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_global_norm(Backend *backend, float *total, const float *x, size_t n) {
  check_fail("cuda_global_norm", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_clip_grad_norm(Backend *backend, float *total, float *x, size_t n, float max_norm) {
  check_fail("cuda_clip_grad_norm", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_clip_coef(Backend *backend, float *total, float *coef, const float *x, size_t n, float max_norm) {
  check_fail("cuda_clip_coef", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_unscale_check(Backend *backend, float *x, size_t n, const float *scale, float *found_inf) {
  check_fail("cuda_unscale_check", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_grad_scaler_update(Backend *backend, float *scale, int32_t *tracker, const float *found_inf, float growth_factor, float backoff_factor, int32_t growth_interval) {
  check_fail("cuda_grad_scaler_update", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_adam_step(Backend *backend, float *params, const float *grads, float *m, float *v, size_t n, AdamHyper hyper, int32_t *step, const float *found_inf, const float *grad_scale, void *params_lp, NnDtype lp_dtype) {
  check_fail("cuda_adam_step", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_uniform(Backend *backend, float *out, size_t n, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  check_fail("cuda_uniform", __FILE__, __LINE__, "not implemented yet", 0);
}
