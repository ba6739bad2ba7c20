// nn/backend_cuda.h: the CUDA backend's private state and helpers, shared by its .cu files only
// (backend_cuda.cu: memory, GEMM, bias + activation, casts, data movement, the ops table;
// backend_cuda_ops.cu: distributions, norms, loss scaling, Adam, random numbers;
// backend_cuda_rollout.cu: GAE, the permutation, the PPO loss, explained variance;
// backend_cuda_graph.cu: recorded graphs, page-locked host memory; backend_cuda_nccl.cu: the
// all-reduce across ranks). Together with backend_cuda_module.cu (the entry) they are the module
// libppo_cuda.so, which nn/backend.c loads on demand.
//
// The .cu files are C++: the C headers of the seam come in through extern "C". Every kernel's
// per-element arithmetic is a PPO_HD function of nn/ops_math.h or common/rng.h, which the CPU
// backend calls too, so the CPU tests cover the GPU's arithmetic (DESIGN.md section 3).
//
// All work is queued on one stream (ctx->stream); nothing here synchronises the host except the
// calls the seam counts as synchronising (download, sync, memory_info). Reductions that the CPU
// computes in double in a fixed order are computed here in double too, in a fixed order: the norms
// and the MSE loss over a fixed grid (CUDA_REDUCE_BLOCKS partial sums in ctx->partials, then one
// thread adds them in index order); the PPO loss, explained variance, the advantage moments and
// the Gaussian log_std gradient in one block each (per action column for the last), by the
// block's fixed tree (cuda_block_sum), without partials. The bias gradient sums floats per row
// tile into the cuBLAS workspace, then per column in tile order. The bits do not depend on timing,
// only on the grid, so a run is reproducible on the same device.
// Depends on nn/backend_impl.h, common/check.h; CUDA runtime, cuBLAS, cuBLASLt.
#ifndef PPO_NN_BACKEND_CUDA_H
#define PPO_NN_BACKEND_CUDA_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C" {
#include "common/check.h"
#include "nn/backend_impl.h"
}

// A failing CUDA or cuBLAS call is a run-time failure no user input explains: exit through
// check_fail with the statement, the location and the library's own message.
#define CUDA_CHECK(call)                                                                 \
  do {                                                                                   \
    cudaError_t cuda_check_err_ = (call);                                                \
    if (cuda_check_err_ != cudaSuccess)                                                  \
      check_fail(#call, __FILE__, __LINE__, cudaGetErrorString(cuda_check_err_), 0);     \
  } while (0)

#define CUBLAS_CHECK(call)                                                               \
  do {                                                                                   \
    cublasStatus_t cublas_check_st_ = (call);                                            \
    if (cublas_check_st_ != CUBLAS_STATUS_SUCCESS)                                       \
      check_fail(#call, __FILE__, __LINE__, cublasGetStatusString(cublas_check_st_), 0); \
  } while (0)

// After every kernel launch: a bad launch configuration is reported where it happened. (Errors
// inside a kernel surface at the next synchronising call.)
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

enum {
  CUDA_THREADS = 256,        // threads per block of the element-wise kernels
  CUDA_REDUCE_BLOCKS = 256,  // partial sums of a deterministic reduction (ctx->partials holds them)
};

typedef struct {
  int device;                // the CUDA device ordinal in use
  int sm_count;              // multiprocessors, for grid sizing
  cudaStream_t stream;       // every op is queued here
  cublasHandle_t cublas;     // bound to stream
  cublasLtHandle_t lt;       // NULL: no op uses cuBLASLt yet (GEMMs go through cublasGemmEx)
  void *workspace;           // cuBLAS(Lt) workspace, grown by reserve_workspace only
  size_t workspace_bytes;
  double *partials;          // (CUDA_REDUCE_BLOCKS + 8) doubles of device scratch for reductions
  int *fault;                // device int: 0, or the CudaFault of the first bad argument a kernel met
  int allow_tf32;            // fp32 GEMMs may use TF32 tensor cores
  void *comm;                // the NCCL communicator of a multi-rank run (ncclComm_t), NULL alone
} CudaContext;

// A kernel cannot exit with a location as the CPU backend's CHECK does: one that meets a bad
// argument only it can see (a gather index out of range) records the first such fault in
// ctx->fault with cuda_report_fault and leaves the bad element alone; download and sync, already
// points where the host waits, read the flag and exit through check_fail naming the op. Work
// queued in between runs on regardless: its results are never seen.
typedef enum {
  CUDA_FAULT_NONE = 0,
  CUDA_FAULT_GATHER_INDEX = 1,        // backend_gather_rows: index out of [0, rows)
  CUDA_FAULT_CATEGORICAL_ACTION = 2,  // categorical ops: action not an integer in [0, A)
} CudaFault;

__device__ static inline void cuda_report_fault(int *fault, CudaFault code) { atomicCAS(fault, 0, (int)code); }

static inline CudaContext *cuda_ctx(Backend *backend) { return (CudaContext *)backend->ctx; }

// Blocks for a grid-stride loop over n elements (at least 1, at most 32 per multiprocessor).
static inline unsigned cuda_blocks(const CudaContext *ctx, size_t n) {
  size_t blocks = (n + CUDA_THREADS - 1) / CUDA_THREADS;
  size_t cap = (size_t)ctx->sm_count * 32;
  if (blocks > cap) blocks = cap;
  return blocks ? (unsigned)blocks : 1u;
}

// The ops of backend_cuda_ops.cu and backend_cuda_rollout.cu (signatures as BackendOps).
void cuda_categorical_forward(Backend *backend, float *logp, float *entropy, const float *logits,
                              const float *actions, int B, int A);
void cuda_categorical_backward(Backend *backend, float *dlogits, const float *dlogp, const float *dentropy,
                               const float *logits, const float *actions, int B, int A);
void cuda_categorical_sample(Backend *backend, float *actions, float *logp, const float *logits, const float *uniforms,
                             int B, int A);
void cuda_gaussian_forward(Backend *backend, float *logp, float *entropy, const float *mean, const float *log_std,
                           const float *actions, int B, int A);
void cuda_gaussian_backward(Backend *backend, float *dmean, float *dlog_std, const float *dlogp,
                            const float *dentropy, const float *mean, const float *log_std, const float *actions, int B,
                            int A);
void cuda_gaussian_sample(Backend *backend, float *actions, float *logp, const float *mean, const float *log_std,
                          const float *uniforms, int B, int A);
void cuda_global_norm(Backend *backend, float *total, const float *x, size_t n);
void cuda_clip_grad_norm(Backend *backend, float *total, float *x, size_t n, float max_norm);
void cuda_clip_coef(Backend *backend, float *total, float *coef, const float *x, size_t n, float max_norm);
void cuda_unscale_check(Backend *backend, float *x, size_t n, size_t n_fp16, const float *scale, float *found_inf);
void cuda_unscale_clip_coef(Backend *backend, float *x, size_t n, size_t n_fp16, const float *scale, float *found_inf,
                            float *total, float *coef, float max_norm);
void cuda_grad_scaler_update(Backend *backend, float *scale, int32_t *tracker, const float *found_inf,
                             double growth_factor, double backoff_factor, int32_t growth_interval);
void cuda_adam_step(Backend *backend, float *params, const float *grads, float *m, float *v, size_t n,
                    AdamHyper hyper, const double *lr_scale, int32_t *step, const float *found_inf,
                    const float *grad_scale, void *params_lp, NnDtype lp_dtype);
void cuda_uniform(Backend *backend, float *out, size_t n, uint64_t seed, uint64_t subsequence, uint64_t offset);

void cuda_gae(Backend *backend, float *advantages, float *returns, const float *rewards, const float *values,
              const float *episode_starts, const float *last_values, const float *last_dones, int T, int N,
              double gamma, double lambda);
size_t cuda_permutation_scratch_bytes(const Backend *backend, size_t n);
void cuda_permutation(Backend *backend, int32_t *perm, void *scratch, size_t n, uint64_t seed, uint64_t subsequence,
                      uint64_t offset);
void cuda_ppo_loss(Backend *backend, float *stats, float *dlogp, float *dentropy, float *dvalues, const float *logp,
                   const float *entropy, const float *values, const float *old_logp, const float *old_values,
                   const float *advantages, const float *returns, int B, PpoLossHyper hyper, const float *loss_scale);
void cuda_explained_variance(Backend *backend, double *moments, const float *pred, const float *target, size_t n);
void cuda_advantage_count_sum(Backend *backend, double *count_sum, const float *advantages, int B);
void cuda_advantage_sq_dev(Backend *backend, double *sq_dev, const float *advantages, int B, const double *count_sum);
void cuda_advantage_normalize(Backend *backend, float *advantages, int B, const double *count_sum,
                              const double *sq_dev);

// backend_cuda_graph.cu: recorded graphs and page-locked host memory.
void *cuda_graph_record(Backend *backend, void (*fn)(void *arg), void *arg);
void cuda_graph_launch(Backend *backend, void *exec);
void cuda_graph_destroy(Backend *backend, void *exec);
void *cuda_host_alloc(Backend *backend, size_t bytes);
void cuda_host_free(Backend *backend, void *ptr);

// backend_cuda_nccl.cu (builds with NCCL, PPO_HAVE_NCCL): the device-side all-reduce of a
// multi-rank run (ppo/dist.h). cuda_comm_close frees the communicator (a no-op without NCCL).
#ifdef PPO_HAVE_NCCL
size_t cuda_comm_id_bytes(const Backend *backend);
int cuda_comm_make_id(Backend *backend, void *id);
int cuda_comm_join(Backend *backend, const void *id, int rank, int size);
void cuda_allreduce_sum_f32(Backend *backend, float *x, size_t n);
void cuda_allreduce_sum_f64(Backend *backend, double *x, size_t n);
void cuda_comm_close(CudaContext *ctx);
#else
static inline void cuda_comm_close(CudaContext *ctx) { (void)ctx; }
#endif

#endif
