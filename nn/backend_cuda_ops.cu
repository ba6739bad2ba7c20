// nn/backend_cuda_ops.cu: distributions, norms, loss scaling, Adam and random numbers on CUDA, the
// twins of backend_cpu.c's ops (nn/backend.h states each contract).
//
// Per-element and per-row arithmetic is nn/ops_math.h's and common/rng.h's, the very functions
// the CPU backend calls. Two things decide whether a result is the CPU's bits:
//   - contraction: the CPU build contracts no multiply-add (-ffp-contract=off); these files must be
//     compiled with --fmad=false (and without --use_fast_math, so division and sqrtf stay IEEE),
//     or nvcc fuses a * b + c: the PTX of gae_kernel holds 10 fma with nvcc's default and none
//     with --fmad=false, and GAE would drift by ulps. The fmaf calls the source writes (Adam's
//     element, nn_adam_element, in torch's order) are one rounding on both backends and under
//     either flag: adam_kernel's PTX holds the same 4 fma with and without --fmad=false;
//   - libm: expf, logf, cosf are CUDA's (within 2 ulp of glibc's), so the distribution ops agree
//     with the CPU to a few ulp, not bit for bit. The double pow of Adam's bias corrections
//     (within 2 ulp in double) rounds to the CPU's float except when the value lies that close
//     to a float rounding boundary: 1 / (1 - beta^t) amplifies the error in the first steps, and a
//     first-order estimate gives about 7e-6 changed bc2_sqrt values over steps 1..1000 (no change
//     in 200,000 simulated 1-ulp errors over steps 1..100,000).
// Reductions accumulate in double in a fixed order: the norms with a fixed grid (CUDA_REDUCE_BLOCKS
// blocks, block sums by cuda_block_sum, then one thread adding the partials in index order), the
// Gaussian backward's log_std terms in one block per column by cuda_block_sum: reproducible run to
// run, within a double rounding of the CPU's order. No float atomics, no host synchronisation,
// no allocation: scalars go from kernel to kernel through device memory.
// Legend: B minibatch, A actions (or action dimensions).
// Depends on nn/backend_cuda.h, nn/backend_cuda_device.cuh, nn/ops_math.h, common/rng.h.
#include "nn/backend_cuda_device.cuh"

// --- categorical: one thread per row of A logits (A is small: a handful of actions) -------------------

// The index of a float action, or -1 when it is not an integer in [0, A). The CPU exits on such an
// action; a kernel cannot: the row's outputs become NaN and the fault is reported at the next
// download or sync (nn/backend_cuda.h), which exits as the CPU does.
__device__ static int action_index(float a, int A, int *fault) {
  int j = (int)a;
  if (a >= 0.0f && a < (float)A && (float)j == a) return j;
  cuda_report_fault(fault, CUDA_FAULT_CATEGORICAL_ACTION);
  return -1;
}

__global__ static void categorical_forward_kernel(float *logp, float *entropy, const float *logits,
                                                  const float *actions, int B, int A, int *fault) {
  for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < B; b += gridDim.x * blockDim.x) {
    const float *z = logits + (size_t)b * A;
    float lse = nn_logsumexp(z, A);
    int a = action_index(actions[b], A, fault);
    logp[b] = a >= 0 ? z[a] - lse : NAN;
    if (entropy) entropy[b] = nn_categorical_entropy(z, A, lse);
  }
}

void cuda_categorical_forward(Backend *backend, float *logp, float *entropy, const float *logits, const float *actions,
                              int B, int A) {
  CudaContext *ctx = cuda_ctx(backend);
  categorical_forward_kernel<<<cuda_blocks(ctx, (size_t)B), CUDA_THREADS, 0, ctx->stream>>>(logp, entropy, logits,
                                                                                            actions, B, A, ctx->fault);
  CUDA_CHECK_LAUNCH();
}

__global__ static void categorical_backward_kernel(float *dlogits, const float *dlogp, const float *dentropy,
                                                   const float *logits, const float *actions, int B, int A,
                                                   int *fault) {
  for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < B; b += gridDim.x * blockDim.x)
    nn_categorical_backward_row(dlogits + (size_t)b * A, logits + (size_t)b * A, A, action_index(actions[b], A, fault),
                                dlogp[b], dentropy ? dentropy[b] : 0.0f);
}

void cuda_categorical_backward(Backend *backend, float *dlogits, const float *dlogp, const float *dentropy,
                               const float *logits, const float *actions, int B, int A) {
  CudaContext *ctx = cuda_ctx(backend);
  categorical_backward_kernel<<<cuda_blocks(ctx, (size_t)B), CUDA_THREADS, 0, ctx->stream>>>(
      dlogits, dlogp, dentropy, logits, actions, B, A, ctx->fault);
  CUDA_CHECK_LAUNCH();
}

__global__ static void categorical_sample_kernel(float *actions, float *logp, const float *logits,
                                                 const float *uniforms, int B, int A) {
  for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < B; b += gridDim.x * blockDim.x) {
    const float *z = logits + (size_t)b * A;
    float lse = nn_logsumexp(z, A);
    int a = nn_categorical_sample(z, A, lse, uniforms[b]);
    actions[b] = (float)a;
    if (logp) logp[b] = z[a] - lse;
  }
}

void cuda_categorical_sample(Backend *backend, float *actions, float *logp, const float *logits, const float *uniforms,
                             int B, int A) {
  CudaContext *ctx = cuda_ctx(backend);
  categorical_sample_kernel<<<cuda_blocks(ctx, (size_t)B), CUDA_THREADS, 0, ctx->stream>>>(actions, logp, logits,
                                                                                           uniforms, B, A);
  CUDA_CHECK_LAUNCH();
}

// --- diagonal Gaussian ------------------------------------------------------------------------------------

__global__ static void gaussian_forward_kernel(float *logp, float *entropy, const float *mean, const float *log_std,
                                               const float *actions, int B, int A) {
  for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < B; b += gridDim.x * blockDim.x) {
    size_t row = (size_t)b * A;
    float h;
    logp[b] = nn_gaussian_row_forward(actions + row, mean + row, log_std, A, &h);
    if (entropy) entropy[b] = h;
  }
}

void cuda_gaussian_forward(Backend *backend, float *logp, float *entropy, const float *mean, const float *log_std,
                           const float *actions, int B, int A) {
  CudaContext *ctx = cuda_ctx(backend);
  gaussian_forward_kernel<<<cuda_blocks(ctx, (size_t)B), CUDA_THREADS, 0, ctx->stream>>>(logp, entropy, mean, log_std,
                                                                                         actions, B, A);
  CUDA_CHECK_LAUNCH();
}

// Block j owns column j: it writes dmean[:, j] and adds the column's log_std terms, summed in double
// by the block's fixed tree, to dlog_std[j] (one writer per element: no atomics), rounding once as
// the CPU does. The CPU sums the same terms in double in b order: the two agree to a double sum's
// rounding, so to the float bit almost always, not always.
__global__ static void gaussian_backward_kernel(float *dmean, float *dlog_std, const float *dlogp,
                                                const float *dentropy, const float *mean, const float *log_std,
                                                const float *actions, int B, int A) {
  int j = blockIdx.x;
  float inv_std = expf(-log_std[j]);
  double acc = 0.0;
  for (int b = threadIdx.x; b < B; b += blockDim.x) {
    size_t i = (size_t)b * A + j;
    acc +=
        nn_gaussian_backward_element(actions[i], mean[i], inv_std, dlogp[b], dentropy ? dentropy[b] : 0.0f, &dmean[i]);
  }
  double total = cuda_block_sum(acc);
  if (threadIdx.x == 0) dlog_std[j] = (float)((double)dlog_std[j] + total);
}

void cuda_gaussian_backward(Backend *backend, float *dmean, float *dlog_std, const float *dlogp, const float *dentropy,
                            const float *mean, const float *log_std, const float *actions, int B, int A) {
  CudaContext *ctx = cuda_ctx(backend);
  gaussian_backward_kernel<<<(unsigned)A, CUDA_THREADS, 0, ctx->stream>>>(dmean, dlog_std, dlogp, dentropy, mean,
                                                                          log_std, actions, B, A);
  CUDA_CHECK_LAUNCH();
}

__global__ static void gaussian_sample_kernel(float *actions, float *logp, const float *mean, const float *log_std,
                                              const float *uniforms, int B, int A) {
  for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < B; b += gridDim.x * blockDim.x) {
    size_t row = (size_t)b * A;
    float s = nn_gaussian_row_sample(actions + row, mean + row, log_std, uniforms + 2 * row, A);
    if (logp) logp[b] = s;
  }
}

void cuda_gaussian_sample(Backend *backend, float *actions, float *logp, const float *mean, const float *log_std,
                          const float *uniforms, int B, int A) {
  CudaContext *ctx = cuda_ctx(backend);
  gaussian_sample_kernel<<<cuda_blocks(ctx, (size_t)B), CUDA_THREADS, 0, ctx->stream>>>(actions, logp, mean, log_std,
                                                                                        uniforms, B, A);
  CUDA_CHECK_LAUNCH();
}

// --- norms: CUDA_REDUCE_BLOCKS partial sums of squares in double, then one thread in index order ------

// Thread t of block k sums x[i]^2 for i = k * blockDim + t + every grid stride; the block's sum
// goes to partials[k]. The grid is always CUDA_REDUCE_BLOCKS x CUDA_THREADS, so the order of the
// additions depends on n alone (not on the device), and n = 0 gives zeros.
__global__ static void sum_squares_kernel(double *partials, const float *x, size_t n) {
  double acc = 0.0;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) acc += (double)x[i] * (double)x[i];
  double block = cuda_block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = block;
}

// One thread: total = sqrt of the partials added in index order; with coef, the clip coefficient
// nn_clip_coef (NaN total: NaN, as torch's clamp).
__global__ static void norm_finish_kernel(float *total, float *coef, const double *partials, float max_norm) {
  double s = 0.0;
  for (int k = 0; k < CUDA_REDUCE_BLOCKS; k++) s += partials[k];
  float norm = (float)sqrt(s);
  *total = norm;
  if (coef) *coef = nn_clip_coef(norm, max_norm);
}

static void launch_norm(CudaContext *ctx, float *total, float *coef, const float *x, size_t n, float max_norm) {
  sum_squares_kernel<<<CUDA_REDUCE_BLOCKS, CUDA_THREADS, 0, ctx->stream>>>(ctx->partials, x, n);
  CUDA_CHECK_LAUNCH();
  norm_finish_kernel<<<1, 1, 0, ctx->stream>>>(total, coef, ctx->partials, max_norm);
  CUDA_CHECK_LAUNCH();
}

void cuda_global_norm(Backend *backend, float *total, const float *x, size_t n) {
  launch_norm(cuda_ctx(backend), total, NULL, x, n, 0.0f);
}

// x *= *coef unless *coef is 1 (clip_grad_norm_ multiplies by 1 exactly: the same bits as the CPU's
// branch); a NaN coefficient is applied.
__global__ static void clip_scale_kernel(float *x, size_t n, const float *coef) {
  float c = *coef;
  if (c >= 1.0f) return;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) x[i] *= c;
}

void cuda_clip_grad_norm(Backend *backend, float *total, float *x, size_t n, float max_norm) {
  CudaContext *ctx = cuda_ctx(backend);
  float *slots = (float *)cuda_scalar_slots(ctx);  // [0] the norm when total is NULL, [1] the coefficient
  launch_norm(ctx, total ? total : &slots[0], &slots[1], x, n, max_norm);
  clip_scale_kernel<<<cuda_blocks(ctx, n), CUDA_THREADS, 0, ctx->stream>>>(x, n, &slots[1]);
  CUDA_CHECK_LAUNCH();
}

void cuda_clip_coef(Backend *backend, float *total, float *coef, const float *x, size_t n, float max_norm) {
  launch_norm(cuda_ctx(backend), total, coef, x, n, max_norm);
}

// --- loss scaling ------------------------------------------------------------------------------------------

// x *= the unscale factor of *scale; a block that saw an overflowed element (nn_grad_overflowed,
// before scaling) sets *found_inf to 1.0f. Every writer writes the same value (atomicExch only to
// make the concurrent stores formally race-free); nothing here ever clears the flag.
__global__ static void unscale_check_kernel(float *x, size_t n, size_t n_fp16, const float *scale, float *found_inf) {
  float inv = nn_unscale_factor(*scale);
  int bad = 0;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    bad |= nn_grad_overflowed(x[i], i, n_fp16);
    x[i] *= inv;
  }
  if (__syncthreads_or(bad) && threadIdx.x == 0) atomicExch(found_inf, 1.0f);
}

void cuda_unscale_check(Backend *backend, float *x, size_t n, size_t n_fp16, const float *scale, float *found_inf) {
  CudaContext *ctx = cuda_ctx(backend);
  unscale_check_kernel<<<cuda_blocks(ctx, n), CUDA_THREADS, 0, ctx->stream>>>(x, n, n_fp16, scale, found_inf);
  CUDA_CHECK_LAUNCH();
}

// unscale_check_kernel and sum_squares_kernel in one pass, on sum_squares_kernel's grid (so the
// partials are its bits for the unscaled values); norm_finish_kernel then forms total and coef.
__global__ static void unscale_sum_squares_kernel(double *partials, float *x, size_t n, size_t n_fp16,
                                                  const float *scale, float *found_inf) {
  float inv = nn_unscale_factor(*scale);
  double acc = 0.0;
  int bad = 0;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float xi = x[i];
    bad |= nn_grad_overflowed(xi, i, n_fp16);
    xi *= inv;
    x[i] = xi;
    acc += (double)xi * (double)xi;
  }
  double block = cuda_block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = block;
  if (__syncthreads_or(bad) && threadIdx.x == 0) atomicExch(found_inf, 1.0f);
}

void cuda_unscale_clip_coef(Backend *backend, float *x, size_t n, size_t n_fp16, const float *scale, float *found_inf,
                            float *total, float *coef, float max_norm) {
  CudaContext *ctx = cuda_ctx(backend);
  unscale_sum_squares_kernel<<<CUDA_REDUCE_BLOCKS, CUDA_THREADS, 0, ctx->stream>>>(ctx->partials, x, n, n_fp16, scale,
                                                                                   found_inf);
  CUDA_CHECK_LAUNCH();
  norm_finish_kernel<<<1, 1, 0, ctx->stream>>>(total, coef, ctx->partials, max_norm);
  CUDA_CHECK_LAUNCH();
}

__global__ static void grad_scaler_update_kernel(float *scale, int32_t *tracker, const float *found_inf,
                                                 double growth_factor, double backoff_factor, int32_t growth_interval) {
  nn_grad_scaler_update(scale, tracker, *found_inf, growth_factor, backoff_factor, growth_interval);
}

void cuda_grad_scaler_update(Backend *backend, float *scale, int32_t *tracker, const float *found_inf,
                             double growth_factor, double backoff_factor, int32_t growth_interval) {
  CudaContext *ctx = cuda_ctx(backend);
  grad_scaler_update_kernel<<<1, 1, 0, ctx->stream>>>(scale, tracker, found_inf, growth_factor, backoff_factor,
                                                      growth_interval);
  CUDA_CHECK_LAUNCH();
}

// --- Adam: one thread bumps the step and forms the scalars, then one pass over the slab ------------------

// What adam_prepare_kernel hands to adam_kernel through the scalar slots.
typedef struct {
  NnAdamScalars scalars;
  int skip;  // found_inf was set: the whole step is skipped
} AdamStep;
static_assert(sizeof(AdamStep) <= CUDA_SCALAR_SLOT_BYTES, "AdamStep must fit the scalar slots");

// The step count is read and written by this single thread only, and adam_kernel runs after it in
// stream order, so the increment is ordered before every element's use of it without a grid-wide
// barrier; the element threads never read *step.
__global__ static void adam_prepare_kernel(AdamStep *out, int32_t *step, const float *found_inf, double lr,
                                           const double *lr_scale, double beta1, double beta2, double eps) {
  if (found_inf && *found_inf != 0.0f) {
    out->skip = 1;
    return;
  }
  int32_t t = *step + 1;
  *step = t;
  out->scalars = nn_adam_scalars(nn_adam_lr(lr, lr_scale), beta1, beta2, eps, t);
  out->skip = 0;
}

// params_lp[i] = p rounded to dtype (fp32: copied), as the CPU's store_lp_row.
__device__ static void store_lp(void *dst, NnDtype dtype, size_t i, float p) {
  if (dtype == NN_F16)
    ((uint16_t *)dst)[i] = nn_f32_to_f16(p);
  else if (dtype == NN_BF16)
    ((uint16_t *)dst)[i] = nn_f32_to_bf16(p);
  else
    ((float *)dst)[i] = p;
}

__global__ static void adam_kernel(float *params, const float *grads, float *m, float *v, size_t n,
                                   const AdamStep *step, const float *grad_scale, void *params_lp, NnDtype lp_dtype) {
  if (step->skip) return;
  NnAdamScalars s = step->scalars;
  float gscale = grad_scale ? *grad_scale : 1.0f;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    float p = params[i], mi = m[i], vi = v[i];
    nn_adam_element(&p, &mi, &vi, grads[i] * gscale, s.weight1, s.beta2, s.one_minus_beta2, s.neg_step_size, s.bc2_sqrt,
                    s.eps);
    params[i] = p;
    m[i] = mi;
    v[i] = vi;
    if (params_lp) store_lp(params_lp, lp_dtype, i, p);
  }
}

void cuda_adam_step(Backend *backend, float *params, const float *grads, float *m, float *v, size_t n, AdamHyper hyper,
                    const double *lr_scale, int32_t *step, const float *found_inf, const float *grad_scale,
                    void *params_lp, NnDtype lp_dtype) {
  CudaContext *ctx = cuda_ctx(backend);
  AdamStep *handover = (AdamStep *)cuda_scalar_slots(ctx);
  adam_prepare_kernel<<<1, 1, 0, ctx->stream>>>(handover, step, found_inf, hyper.lr, lr_scale, hyper.beta1,
                                                hyper.beta2, hyper.eps);
  CUDA_CHECK_LAUNCH();
  adam_kernel<<<cuda_blocks(ctx, n), CUDA_THREADS, 0, ctx->stream>>>(params, grads, m, v, n, handover, grad_scale,
                                                                     params_lp, lp_dtype);
  CUDA_CHECK_LAUNCH();
}

// --- random numbers ----------------------------------------------------------------------------------------

// Thread k of the walk computes one Philox block and maps its (up to) four words: out[i] is word
// offset + i of (seed, subsequence), as rng_fill_uniform writes it.
__global__ static void uniform_kernel(float *out, size_t n, uint64_t seed, uint64_t subsequence, uint64_t offset,
                                      uint64_t blocks) {
  uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; k < blocks; k += stride) {
    Philox4x32 words = philox_walk_block(seed, subsequence, offset, k);
    for (int lane = 0; lane < 4; lane++) {
      size_t i = philox_walk_index(offset, n, k, lane);
      if (i != SIZE_MAX) out[i] = rng_uniform_from_u32(words.v[lane]);
    }
  }
}

void cuda_uniform(Backend *backend, float *out, size_t n, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  if (n == 0) return;
  CudaContext *ctx = cuda_ctx(backend);
  uint64_t blocks = philox_walk_blocks(offset, n);
  uniform_kernel<<<cuda_blocks(ctx, (size_t)blocks), CUDA_THREADS, 0, ctx->stream>>>(out, n, seed, subsequence, offset,
                                                                                     blocks);
  CUDA_CHECK_LAUNCH();
}
