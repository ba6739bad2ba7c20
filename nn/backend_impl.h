// nn/backend_impl.h: the table of functions behind nn/backend.h and the Backend struct.
//
// Seen only by the backends (backend.c, backend_cpu*.c, backend_cuda*.cu; a test's stand-in), as
// ggml's ggml-backend-impl.h. The public wrappers in backend.c check every argument before calling
// through the table, so an implementation may assume valid sizes and non-NULL required pointers.
// Depends on nn/backend.h.
#ifndef PPO_NN_BACKEND_IMPL_H
#define PPO_NN_BACKEND_IMPL_H

#include "nn/backend.h"

typedef struct {
  void (*close)(Backend *backend);  // frees ctx
  void *(*alloc)(Backend *backend, size_t bytes);
  void (*free)(Backend *backend, void *ptr);
  void (*upload)(Backend *backend, void *dst, const void *src, size_t bytes);
  void (*download)(Backend *backend, void *dst, const void *src, size_t bytes);
  void (*memset_zero)(Backend *backend, void *dst, size_t bytes);
  void (*copy)(Backend *backend, void *dst, const void *src, size_t bytes);  // within backend memory
  void (*copy_rows)(Backend *backend, void *dst, size_t dst_pitch, const void *src, size_t src_pitch, size_t row_bytes,
                    size_t rows);
  void (*sync)(Backend *backend);
  int (*memory_info)(Backend *backend, size_t *free_bytes, size_t *total_bytes);
  void (*reserve_workspace)(Backend *backend, size_t bytes);
  size_t (*workspace_bytes)(const Backend *backend);  // the scratch held now
  void (*set_tf32)(Backend *backend, int allow);      // optional: NULL where fp32 GEMMs have no faster mode
  // optional, both or neither (NULL: lanes run one after the other; backend_lanes): whether lanes
  // of this work would run at the same time, faster and with the same results; and running
  // run(lane, arg) for lane 0 .. lanes - 1 on threads of their own, which returns 1, or 0 when
  // fewer threads came and it ran them one after the other
  int (*lanes_together)(const Backend *backend, int lanes, NnDtype dtype, double largest_gemm_macs);
  int (*run_lanes)(Backend *backend, int lanes, void (*run)(int lane, void *arg), void *arg);

  void (*gemm)(Backend *backend, NnDtype dtype, int trans_a, int trans_b, int M, int N, int K, float alpha,
               const void *A, const void *B, float beta, void *C, NnDtype c_dtype);
  void (*weights_changed)(Backend *backend, const void *w, NnDtype dtype, int rows,
                          int cols);  // optional: NULL where GEMMs read every w as it is
  size_t (*weights_bytes)(Backend *backend, NnDtype dtype, int rows, int cols);  // optional, with weights_changed
  void (*bias_act_forward)(Backend *backend, void *out, NnDtype out_dtype, const float *in, const float *bias, int B,
                           int H, int act);
  void (*bias_act_backward)(Backend *backend, void *din, void *din_t, NnDtype din_dtype, float *dbias, const void *dout,
                            NnDtype dout_dtype, const void *out, NnDtype out_dtype, int B, int H,
                            int act);  // din_t NULL: no transposed copy
  void (*categorical_forward)(Backend *backend, float *logp, float *entropy, const float *logits, const float *actions,
                              int B, int A);
  void (*categorical_backward)(Backend *backend, float *dlogits, const float *dlogp, const float *dentropy,
                               const float *logits, const float *actions, int B, int A);
  void (*categorical_sample)(Backend *backend, float *actions, float *logp, const float *logits, const float *uniforms,
                             int B, int A);
  void (*gaussian_forward)(Backend *backend, float *logp, float *entropy, const float *mean, const float *log_std,
                           const float *actions, int B, int A);
  void (*gaussian_backward)(Backend *backend, float *dmean, float *dlog_std, const float *dlogp, const float *dentropy,
                            const float *mean, const float *log_std, const float *actions, int B, int A);
  void (*gaussian_sample)(Backend *backend, float *actions, float *logp, const float *mean, const float *log_std,
                          const float *uniforms, int B, int A);
  void (*mse_forward)(Backend *backend, float *loss, const float *pred, const float *target, int B);
  void (*mse_backward)(Backend *backend, float *dpred, const float *dloss, const float *pred, const float *target,
                       int B);
  void (*gather_rows)(Backend *backend, void *out, const void *src, const int32_t *index, int B, size_t row_bytes,
                      int rows);
  void (*cast)(Backend *backend, void *out, NnDtype to, const void *in, NnDtype from, size_t n);
  void (*scale)(Backend *backend, float *x, float alpha, size_t n);
  void (*scale_by)(Backend *backend, float *x, const float *alpha, size_t n);
  void (*global_norm)(Backend *backend, float *total, const float *x, size_t n);
  void (*clip_grad_norm)(Backend *backend, float *total, float *x, size_t n, float max_norm);
  void (*unscale_check)(Backend *backend, float *x, size_t n, size_t n_fp16, const float *scale, float *found_inf);
  void (*grad_scaler_update)(Backend *backend, float *scale, int32_t *tracker, const float *found_inf,
                             double growth_factor, double backoff_factor, int32_t growth_interval);
  void (*clip_coef)(Backend *backend, float *total, float *coef, const float *x, size_t n, float max_norm);
  void (*unscale_clip_coef)(Backend *backend, float *x, size_t n, size_t n_fp16, const float *scale, float *found_inf,
                            float *total, float *coef, float max_norm);
  void (*adam_step)(Backend *backend, float *params, const float *grads, float *m, float *v, size_t n, AdamHyper hyper,
                    const double *lr_scale, int32_t *step, const float *found_inf, const float *grad_scale,
                    void *params_lp, NnDtype lp_dtype);
  void (*uniform)(Backend *backend, float *out, size_t n, uint64_t seed, uint64_t subsequence, uint64_t offset);
  void (*gae)(Backend *backend, float *advantages, float *returns, const float *rewards, const float *values,
              const float *episode_starts, const float *last_values, const float *last_dones, int T, int N,
              double gamma, double lambda);
  size_t (*permutation_scratch_bytes)(const Backend *backend, size_t n);
  void (*permutation)(Backend *backend, int32_t *perm, void *scratch, size_t n, uint64_t seed, uint64_t subsequence,
                      uint64_t offset);
  void (*ppo_loss)(Backend *backend, float *stats, float *dlogp, float *dentropy, float *dvalues, const float *logp,
                   const float *entropy, const float *values, const float *old_logp, const float *old_values,
                   const float *advantages, const float *returns, int B, PpoLossHyper hyper, const float *loss_scale);
  void (*explained_variance)(Backend *backend, double *moments, const float *pred, const float *target, size_t n);
  // Multi-rank advantage normalisation (NULL in a backend that lacks them: the wrappers say so).
  void (*advantage_count_sum)(Backend *backend, double *count_sum, const float *advantages, int B);
  void (*advantage_sq_dev)(Backend *backend, double *sq_dev, const float *advantages, int B, const double *count_sum);
  void (*advantage_normalize)(Backend *backend, float *advantages, int B, const double *count_sum,
                              const double *sq_dev);
  // Optional (NULL: fn runs directly, as on the CPU): record fn's ops into an executable graph, launch
  // one, destroy one.
  void *(*graph_record)(Backend *backend, void (*fn)(void *arg), void *arg);
  void (*graph_launch)(Backend *backend, void *exec);
  void (*graph_destroy)(Backend *backend, void *exec);
  // Optional (NULL: aligned_alloc and free): page-locked host memory.
  void *(*host_alloc)(Backend *backend, size_t bytes);
  void (*host_free)(Backend *backend, void *ptr);
  // Optional (NULL: memory always open): open (1) or close (0) the backend's memory to host access
  // around the calls that use it (nn/backend.c's OP; the CPU backend's strict test mode).
  void (*guard)(Backend *backend, int open);
  // Optional (NULL: no device-side collectives): the communicator and the all-reduce across ranks.
  size_t (*comm_id_bytes)(const Backend *backend);
  int (*comm_make_id)(Backend *backend, void *id);
  int (*comm_join)(Backend *backend, const void *id, int rank, int size);
  void (*allreduce_sum_f32)(Backend *backend, float *x, size_t n);
  void (*allreduce_sum_f64)(Backend *backend, double *x, size_t n);
} BackendOps;

typedef struct OpProfile OpProfile;

struct Backend {
  const char *name;    // "cpu", "cuda"
  char describe[256];  // GEMM library, core, threads
  const BackendOps *ops;
  size_t alloc_count;  // every allocation the backend made (backend_alloc and workspace growth)
  size_t sync_count;   // every call that waits for queued work: download, sync, memory_info
  int recording;       // inside backend_graph_run's fn: calls that cannot be recorded are refused
  int signing;         // recording, and hashing each op and its arguments (nn/backend.c)
  uint64_t signature;  // while signing: the hash of the ops and their arguments so far
  size_t signed_ops;   // while signing: ops hashed so far
  size_t graphs;       // recorded graphs alive (backend_graph_run minus backend_graph_reset)
  int guard_depth;     // calls in progress that hold the memory open (ops->guard)
  int comm_joined;     // backend_comm_join succeeded: the all-reduce may run
  int lane_view;       // a lane's view of its backend (backend_lanes): lanes do not nest
  size_t lanes_together;  // backend_lanes calls whose lanes the backend ran at the same time
  OpProfile *profile;  // PPO_PROFILE set: each op's time (nn/backend.c); backend_close prints them
  void *ctx;           // the implementation's own state
};

// The members of a table that are NULL though required (every member not marked optional above):
// the index of the first one in declaration order (0 = close), or -1 when the table is complete.
// backend_open refuses an incomplete table, the wrappers call required members without a test,
// and test_nn_ops and test_cuda_module check the CPU's and the CUDA module's tables on any machine
// (an op added to the seam and left out of a table would otherwise be a NULL call on a GPU only).
int backend_ops_missing(const BackendOps *ops);

// The constructors the registry knows; each returns NULL and sets error_message() on failure.
Backend *backend_cpu_open(void);
Backend *backend_cuda_open(void);          // nn/backend_cuda.cu, inside the CUDA module (below)
const BackendOps *backend_cuda_ops(void);  // the CUDA backend's table (nn/backend_cuda.cu), for the check

// The CUDA backend is a module, libppo_cuda.so beside the programs (builds with PPO_HAVE_CUDA), that
// nn/backend.c loads when a run asks for CUDA and a driver reports a device; its entry
// CUDA_MODULE_ENTRY (CudaModuleOpen) takes the program's functions it calls (nn/backend_cuda_module.cu).
typedef struct {
  size_t backend_size, ops_size;  // the program's sizeof(Backend), sizeof(BackendOps): a module of
                                  // another build (other layouts) refuses to open
  void (*error_set)(const char *fmt, ...);
  void (*check_fail)(const char *stmt, const char *file, int line, const char *hint, int use_errno);
  size_t (*dtype_size)(NnDtype dtype);
} CudaModuleHost;
typedef Backend *(*CudaModuleOpen)(const CudaModuleHost *program);
#define CUDA_MODULE_ENTRY "ppo_cuda_module_open"
// The module's table without opening a backend (no device needed): test_cuda_module checks it.
typedef const BackendOps *(*CudaModuleOps)(void);
#define CUDA_MODULE_OPS "ppo_cuda_module_ops"

#endif
