// nn/grad_scaler.c: the GradScaler's steps as backend calls on its device-resident state.
#include "nn/grad_scaler.h"

#include "common/check.h"

GradScalerSpec grad_scaler_defaults(int enabled) {
  return (GradScalerSpec){
      .enabled = enabled, .init_scale = 65536.0f, .growth_factor = 2.0, .backoff_factor = 0.5, .growth_interval = 2000};
}

void grad_scaler_init(GradScaler *scaler, Backend *backend, const GradScalerSpec *spec, float *scale, int32_t *tracker,
                      float *found_inf) {
  CHECK(spec->init_scale > 0.0f && spec->growth_factor > 1.0 && spec->backoff_factor > 0.0 &&
            spec->backoff_factor < 1.0 && spec->growth_interval > 0,
        "grad scaler: init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1, growth_interval > 0");
  *scaler = (GradScaler){backend, *spec, scale, tracker, found_inf};
  float zero = 0.0f;
  int32_t tracker0 = 0;
  backend_upload(backend, scale, &spec->init_scale, sizeof(float));
  backend_upload(backend, tracker, &tracker0, sizeof tracker0);
  backend_upload(backend, found_inf, &zero, sizeof zero);
}

void grad_scaler_scale_seed(GradScaler *scaler, float *seed, size_t n) {
  if (scaler->spec.enabled) backend_scale_by(scaler->backend, seed, scaler->scale, n);
}

void grad_scaler_unscale(GradScaler *scaler, float *grads, size_t n, size_t n_fp16) {
  if (!scaler->spec.enabled) return;
  backend_memset_zero(scaler->backend, scaler->found_inf, sizeof(float));
  backend_unscale_check(scaler->backend, grads, n, n_fp16, scaler->scale, scaler->found_inf);
}

void grad_scaler_unscale_clip_coef(GradScaler *scaler, float *grads, size_t n, size_t n_fp16, float *total, float *coef,
                                   float max_norm) {
  CHECK(scaler->spec.enabled, "grad_scaler_unscale_clip_coef needs an enabled scaler");
  backend_memset_zero(scaler->backend, scaler->found_inf, sizeof(float));
  backend_unscale_clip_coef(scaler->backend, grads, n, n_fp16, scaler->scale, scaler->found_inf, total, coef, max_norm);
}

void grad_scaler_update(GradScaler *scaler) {
  if (!scaler->spec.enabled) return;
  backend_grad_scaler_update(scaler->backend, scaler->scale, scaler->tracker, scaler->found_inf,
                             scaler->spec.growth_factor, scaler->spec.backoff_factor, scaler->spec.growth_interval);
}

const float *grad_scaler_found_inf(const GradScaler *scaler) { return scaler->spec.enabled ? scaler->found_inf : NULL; }
