// nn/backend.h: the backend seam. Every computation of the engine goes through these calls.
//
// A Backend is an opaque handle opened by name ("cpu", "cuda", "auto"); each call below checks its
// arguments and dispatches through the backend's table of functions (nn/backend_impl.h), as ggml
// does. Pointers passed to ops are backend memory from backend_alloc (on the CPU backend that is
// host memory; on CUDA it is device memory): scalars such as the loss scale, the found-inf flag
// and Adam's step count live there too, so a step can be skipped without a host round trip.
//
// Ops come in explicit forward/backward pairs, out-first (STYLE rule 7); backward ops that produce
// a parameter gradient ACCUMULATE into it (the caller zeroes grads once per step), gradients of
// activations are overwritten. All element-wise math is in nn/ops_math.h.
//
// Legend for shapes: T horizon, N envs, B minibatch, O obs dim, A actions, H hidden; M, K, N in
// GEMM are its own matrix sizes. Matrices are row-major and contiguous.
//
// Failure: backend_open returns NULL and sets error_message() when the backend does not exist in
// this build or cannot start; an op called with bad arguments (NULL pointer, negative size) or a
// failing library call is a programming error and exits through check_fail with the location.
// Depends on common/ (error, check, rng).
#ifndef PPO_NN_BACKEND_H
#define PPO_NN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "nn/ops_math.h"

typedef struct Backend Backend;

typedef enum { NN_F32 = 0, NN_F16 = 1, NN_BF16 = 2 } NnDtype;  // storage type of a GEMM input

size_t nn_dtype_size(NnDtype dtype);       // 4 or 2
const char *nn_dtype_name(NnDtype dtype);  // "fp32", "fp16", "bf16"

// --- lifetime and memory ------------------------------------------------------------------------------

Backend *backend_open(const char *name);           // "cpu" | "cuda" | "auto"; NULL + error_message() when unavailable
void backend_close(Backend *backend);              // frees the handle (not memory from backend_alloc); NULL is fine
const char *backend_name(const Backend *backend);  // "cpu" or "cuda"
const char *backend_describe(const Backend *backend);  // one line: GEMM library, core, threads
void *backend_alloc(Backend *backend, size_t bytes);   // 64-byte aligned, zeroed; exits on failure; counted
void backend_free(Backend *backend, void *ptr);        // NULL is fine
size_t backend_alloc_count(const Backend *backend);    // allocations made so far (including workspace growth)
// Calls made so far that make the host wait for the backend's queued work: backend_download,
// backend_sync and backend_memory_info (on a GPU each is a stream synchronisation; on the CPU they
// are counted all the same, so a CPU test can prove a loop free of them).
size_t backend_sync_count(const Backend *backend);
// Host memory for the buffers that go up and down every step (64-byte aligned, zeroed; exits on
// failure): page-locked on CUDA, so that transfers are direct DMA without a staging copy. An
// upload from it may still be in flight when backend_upload returns: the caller must not write
// the buffer again before a call that waits (download, sync). On the CPU it is ordinary memory.
void *backend_host_alloc(Backend *backend, size_t bytes);
void backend_host_free(Backend *backend, void *ptr);  // NULL is fine
void backend_upload(Backend *backend, void *dst, const void *host_src, size_t bytes);    // host -> backend
void backend_download(Backend *backend, void *host_dst, const void *src, size_t bytes);  // backend -> host
void backend_memset_zero(Backend *backend, void *dst, size_t bytes);
void backend_copy(Backend *backend, void *dst, const void *src, size_t bytes);  // backend -> backend; may overlap
// rows rows of row_bytes each, row r from src + r * src_pitch to dst + r * dst_pitch (both pitches
// at least row_bytes); the bytes between rows of dst are left as they are. No overlap.
void backend_copy_rows(Backend *backend, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                       size_t row_bytes, size_t rows);
// Free and total bytes of the memory backend_alloc draws from (host RAM: MemAvailable and MemTotal
// of /proc/meminfo; a GPU: cudaMemGetInfo). 0, or -1 when unknown.
int backend_memory_info(Backend *backend, size_t *free_bytes, size_t *total_bytes);
void backend_sync(Backend *backend);  // waits for queued work (a no-op on the CPU)
// Reserves GEMM scratch of at least `bytes` (the CPU backend widens fp16 operands to fp32 there
// and transposes few-row products through it: M K + K N + 2 M N floats cover any call, M K + K N +
// M N any but an fp16 C of a few-row product with a transposed B), so that later calls need no
// allocation. Growing it counts as an allocation.
void backend_reserve_workspace(Backend *backend, size_t bytes);
// Bytes of GEMM scratch the backend holds now: at least every reservation so far, and what the
// backend keeps of its own (CUDA reserves cuBLAS's 32 MiB when it opens). For memory plans.
size_t backend_workspace_bytes(const Backend *backend);
// allow != 0: fp32 GEMMs may use TF32 tensor cores on CUDA (inputs rounded to 10-bit mantissas,
// fp32 accumulation: several times faster, about 1e-3 relative error). Off when a backend opens;
// a no-op on the CPU, whose fp32 GEMMs are always fp32. Refused (exit 1) while recorded graphs are
// alive (backend_graph_run): they keep the setting they were recorded with.
void backend_set_tf32(Backend *backend, int allow);

// --- graphs: a fixed sequence of ops queued with one call -----------------------------------------------

// Caller-owned, zero-initialised ({0}); holds the backend's recorded graph (NULL until recorded).
typedef struct {
  void *exec;
  uint64_t signature;  // the recorded call's ops and arguments (hashed), and how many ops
  size_t ops;          // (0: not recorded yet)
  uint64_t calls;      // calls since the first (or a reset): the CPU compares calls 2, 4, 8, ... with it
} BackendGraph;

// Queues the ops that fn(arg) queues. On CUDA the first call (or the first after a reset) runs fn
// eagerly, as a warm-up: the kernels and cuBLAS paths it uses are loaded and set up outside a
// capture; the second records the ops into a CUDA graph (stream capture), refused unless they and
// their arguments equal the first call's, and it and every later call launch the graph: one
// launch instead of one per op, which keeps a 32-env rollout step and a minibatch update from
// being bound by launch latency. fn must therefore queue the same ops with the same pointers and
// scalar arguments on every call, and must not make the host wait (download, sync, memory_info),
// upload (the host memory could change between launches), allocate or reserve workspace: the
// wrappers check that on every backend. (A backend's own scratch growth inside an op, the CPU's
// GEMM scratch for widened fp16 operands, bf16 ones without oneDNN, and with oneDNN the transposed
// output of few-row products, is not refused there; it counts in backend_alloc_count, which the
// no-allocation tests hold at zero, and on CUDA any growth once a graph exists exits.) Every call on
// the CPU runs fn, and the ops and arguments
// (pointers, sizes, scalars) of calls 2, 4, 8, ... are compared with the first call's (a hash): a
// function that would replay stale values is refused there too, so a CPU test proves a function
// fit for recording. backend_graph_reset drops the recording (on CUDA the next run is a warm-up
// again and the one after it records): after an argument changed (a value that changes every call
// belongs in backend memory, as the learning rate's schedule factor does, OptimScalars.lr_scale),
// and before freeing the memory the graph uses. Recording allocates inside the CUDA driver, once
// per recording. On CUDA the GEMM workspace cannot grow while a recorded graph exists (its GEMMs
// hold the workspace's address): a reservation that would grow it exits, so reserve it first
// (policy_init does). The CPU backend records no graph, so nothing there refuses growth after a
// recording: a reservation outside fn grows its scratch, and so does a GEMM inside fn that needs
// more (counted in backend_alloc_count, not refused). A CPU test proves a function fit for
// recording only by holding that count still.
void backend_graph_run(Backend *backend, BackendGraph *graph, void (*fn)(void *arg), void *arg);
void backend_graph_reset(Backend *backend, BackendGraph *graph);

// --- lanes: independent op sequences that may run at the same time --------------------------------------

// Calls fn(lane_backend, arg, lane) for lane = 0 .. lanes - 1 (at most BACKEND_LANES_MAX): op
// sequences that may read the same inputs but write disjoint memory, such as the actor's and the
// critic's passes. Each lane queues its ops on lane_backend, a view of backend that is valid during
// the call; a lane must not read what another lane writes, for the backend may run the lanes at the
// same time. Whether it does is its choice, from the work: dtype and the largest GEMM a lane makes
// (multiply-adds, M N K). The CPU backend runs two lanes on two threads when every op in them runs
// on one thread anyway (fp32 products small enough for OpenBLAS's single-threaded path): the same
// code then, so the same bits as lane after lane. Other backends, and the CPU under PPO_PROFILE or
// PPO_CPU_STRICT, run the lanes one after the other. Allowed inside backend_graph_run: each lane's
// ops are signed on their own and the lanes' signatures joined in lane order. Lanes do not nest, and
// a lane does not run or reset graphs.
#define BACKEND_LANES_MAX 2
typedef void (*BackendLaneFn)(Backend *lane_backend, void *arg, int lane);
void backend_lanes(Backend *backend, int lanes, BackendLaneFn fn, void *arg, NnDtype dtype, double largest_gemm_macs);
size_t backend_lanes_together(const Backend *backend);  // backend_lanes calls whose lanes ran at the same time

// --- collectives across processes (data-parallel training, ppo/dist.h) ----------------------------------

// Bytes of the id that joins this backend's processes into one communicator for all-reduces on
// backend memory (NCCL on CUDA); 0 when the backend has none (the CPU backend, whose memory is host
// memory that ppo/dist.c reduces with MPI in place).
size_t backend_comm_id_bytes(const Backend *backend);
// Rank 0 makes the id (backend_comm_id_bytes bytes); every rank gets it (over MPI) and joins with
// its rank and the number of ranks. Each returns 0, or -1 with error_message().
int backend_comm_make_id(Backend *backend, void *id);
int backend_comm_join(Backend *backend, const void *id, int rank, int size);
// x (n) = its sum over the joined ranks, in place, queued like any op (no host wait); every rank
// gets the same bytes. Only after backend_comm_join.
void backend_allreduce_sum_f32(Backend *backend, float *x, size_t n);
void backend_allreduce_sum_f64(Backend *backend, double *x, size_t n);

// --- GEMM -------------------------------------------------------------------------------------------------

// C (M, N) = alpha * op(A) * op(B) + beta * C, fp32 accumulation and fp32 C. op(A) is (M, K): A is
// stored (M, K), or (K, M) when trans_a. op(B) is (K, N): B is (K, N), or (N, K) when trans_b.
// A and B are of type `dtype` (float, or uint16_t bits of fp16 / bf16).
void backend_gemm(Backend *backend, NnDtype dtype, int trans_a, int trans_b, int M, int N, int K, float alpha,
                  const void *A, const void *B, float beta, float *C);
// The same with C stored as c_dtype: NN_F32 (backend_gemm), or the operands' low precision `dtype`,
// each element rounded once from its fp32 sum; beta must then be 0. The backward pass stores its
// input gradients so (DESIGN.md section 6, as torch's autocast does): half the bytes written here
// and read by the next bias + activation backward.
void backend_gemm_to(Backend *backend, NnDtype dtype, int trans_a, int trans_b, int M, int N, int K, float alpha,
                     const void *A, const void *B, float beta, void *C, NnDtype c_dtype);

// w (rows, cols) of dtype, a weight matrix W that GEMMs read as op(B) (x W^T forward with trans_b, dy W
// backward without), was just written. A backend may keep its own copy of w in the layout its
// GEMM kernels want and use it whenever op(B) is exactly that w (the CPU: fp16 w widened to fp32
// once per change instead of inside every GEMM call, and with oneDNN bf16 w in its blocked layout).
// So call it after every change of w, before the next GEMM reads w. The first call for a w
// allocates: make it at setup. A no-op where a backend keeps no copy (CUDA; fp32 on the CPU, and
// bf16 there without oneDNN).
void backend_weights_changed(Backend *backend, const void *w, NnDtype dtype, int rows, int cols);
// Bytes backend_weights_changed keeps for a (rows, cols) matrix of dtype (0 where it keeps none):
// for memory plans, before anything is allocated.
size_t backend_weights_bytes(Backend *backend, NnDtype dtype, int rows, int cols);

// --- bias + activation (act: NN_ACT_NONE, NN_ACT_TANH, NN_ACT_RELU) ------------------------------------------

// out (B, H) = act(in (B, H) + bias (H)) computed in fp32 and stored as out_dtype (fp32, or the
// low precision: activations are stored in it, DESIGN.md section 6). in may equal out in fp32.
void backend_bias_act_forward(Backend *backend, void *out, NnDtype out_dtype, const float *in, const float *bias, int B,
                              int H, int act);
// din (B, H) = dout (B, H) * act'(.), the derivative written from the forward's output out (B, H)
// of out_dtype, stored as din_dtype (the low precision when din feeds low-precision GEMMs);
// dbias (H) += column sums of din before rounding. dout is of dout_dtype (fp32, or the low
// precision that backend_gemm_to wrote it in). din may equal dout when both are of one dtype.
void backend_bias_act_backward(Backend *backend, void *din, NnDtype din_dtype, float *dbias, const void *dout,
                               NnDtype dout_dtype, const void *out, NnDtype out_dtype, int B, int H, int act);
// The same, and din_t (H, B) receives din's transpose (the same rounded values): the weight
// gradient dW = din^T x then reads a plain (H, B) operand, which the GEMM libraries run faster than
// a transposed one (bf16 (1024, 2048, 1024): 3.0 against 4.2 ms on the 2-core AMX machine).
// din_t must not overlap din or dout. din may be NULL: only din_t and dbias are written (the first
// layer, whose input gets no gradient: its dpre feeds the weight gradient alone).
void backend_bias_act_backward_t(Backend *backend, void *din, void *din_t, NnDtype din_dtype, float *dbias,
                                 const void *dout, NnDtype dout_dtype, const void *out, NnDtype out_dtype, int B, int H,
                                 int act);

// --- categorical distribution over A logits ------------------------------------------------------------------

// logp (B) = log softmax(logits)[action], entropy (B) = -sum p log p. actions (B) hold integer
// values 0..A-1 stored as floats (the rollout buffer is float). entropy may be NULL.
void backend_categorical_forward(Backend *backend, float *logp, float *entropy, const float *logits,
                                 const float *actions, int B, int A);
// dlogits (B, A) = d(sum dlogp*logp + dentropy*entropy)/dlogits; dentropy may be NULL (zero).
void backend_categorical_backward(Backend *backend, float *dlogits, const float *dlogp, const float *dentropy,
                                  const float *logits, const float *actions, int B, int A);
// actions (B) = inverse-CDF draw with uniforms (B) in (0, 1]; logp (B), optional, their log-probs.
void backend_categorical_sample(Backend *backend, float *actions, float *logp, const float *logits,
                                const float *uniforms, int B, int A);

// --- diagonal Gaussian with state-independent log_std ------------------------------------------------------------

// logp (B) = sum_j log N(actions[b,j]; mean[b,j], exp(log_std[j])); entropy (B), optional.
void backend_gaussian_forward(Backend *backend, float *logp, float *entropy, const float *mean, const float *log_std,
                              const float *actions, int B, int A);
// dmean (B, A) overwritten; dlog_std (A) accumulated (its B terms summed in double). dentropy may be NULL.
void backend_gaussian_backward(Backend *backend, float *dmean, float *dlog_std, const float *dlogp,
                               const float *dentropy, const float *mean, const float *log_std, const float *actions,
                               int B, int A);
// actions (B, A) = mean + exp(log_std) * Box-Muller(uniforms[2 (b A + j)], uniforms[2 (b A + j) + 1]);
// uniforms (B, A, 2) in (0, 1]. logp (B), optional.
void backend_gaussian_sample(Backend *backend, float *actions, float *logp, const float *mean, const float *log_std,
                             const float *uniforms, int B, int A);

// --- value loss ------------------------------------------------------------------------------------------------

// The seam's own value loss, kept for the op tests and ppo-bench's step: the trainer's update takes
// its value loss inside backend_ppo_loss (SB3's, with the optional value clipping).
// loss (1) = mean over B of (pred - target)^2 (summed in double).
void backend_mse_forward(Backend *backend, float *loss, const float *pred, const float *target, int B);
// dpred (B) = dloss (1) * 2 (pred - target) / B; dloss is backend memory (a device scalar).
void backend_mse_backward(Backend *backend, float *dpred, const float *dloss, const float *pred, const float *target,
                          int B);

// --- data movement --------------------------------------------------------------------------------------------

// out (B rows) = rows index (B) of src (rows rows), each row row_bytes bytes (any element type: the
// rollout buffer's observations are 2-byte elements in fp16 and bf16 runs); each index must be in
// [0, rows) (the CPU backend checks and exits with the location otherwise; CUDA finds it on the
// device and exits at the next backend_download or backend_sync).
void backend_gather_rows(Backend *backend, void *out, const void *src, const int32_t *index, int B, size_t row_bytes,
                         int rows);
// out (n) of type to = in (n) of type from; rounding to nearest even; any pair of dtypes.
void backend_cast(Backend *backend, void *out, NnDtype to, const void *in, NnDtype from, size_t n);
// x (n) *= alpha.
void backend_scale(Backend *backend, float *x, float alpha, size_t n);
// x (n) *= *alpha, alpha a scalar in backend memory (the loss scale, without a host round trip).
void backend_scale_by(Backend *backend, float *x, const float *alpha, size_t n);

// --- reductions, clipping, loss scaling, optimiser ---------------------------------------------------------------

// total (1) = sqrt(sum x^2) accumulated in double in a fixed order (same bits for any thread count).
void backend_global_norm(Backend *backend, float *total, const float *x, size_t n);
// torch.nn.utils.clip_grad_norm_: total (1) = norm; coef = max_norm / (total + 1e-6); when coef < 1
// or NaN (a NaN or infinite norm), x *= coef, as torch multiplies by the clamped coefficient always.
// total may be NULL. Kept for the op tests (torch's clip_grad_norm_ step by step): the optimiser
// clips through the fused unscale + norm and nn_clip_coef (nn/optim.c).
void backend_clip_grad_norm(Backend *backend, float *total, float *x, size_t n, float max_norm);
// GradScaler.unscale_: x *= (float)(1.0 / (double)*scale); *found_inf = 1.0f if any element of x
// overflowed before scaling (x is multiplied anyway), else left as it is (the caller zeroes it).
// Overflowed: inf or NaN, and among the first n_fp16 elements also |x| >= 65520 (nn_grad_overflowed:
// what fp16 GEMM outputs round to inf; 0 for none).
void backend_unscale_check(Backend *backend, float *x, size_t n, size_t n_fp16, const float *scale,
                           float *found_inf);
// GradScaler.update: if *found_inf: scale *= backoff, tracker = 0; else tracker += 1 and at
// growth_interval scale *= growth when finite, tracker = 0. No lower clamp.
void backend_grad_scaler_update(Backend *backend, float *scale, int32_t *tracker, const float *found_inf,
                                double growth_factor, double backoff_factor, int32_t growth_interval);

typedef struct {
  double lr, beta1, beta2, eps;  // doubles, as torch's Python numbers: the bias corrections are formed in double
} AdamHyper;

// clip_grad_norm_ split in two for fusion: total (1) = norm of x (n) as backend_global_norm, coef (1)
// = min(1, max_norm / (total + 1e-6)); x is not touched (Adam applies coef through grad_scale).
void backend_clip_coef(Backend *backend, float *total, float *coef, const float *x, size_t n, float max_norm);

// GradScaler.unscale_ and clip_coef in one pass over x: the same bits as backend_unscale_check(x,
// n, n_fp16, scale, found_inf) followed by backend_clip_coef(total, coef, x, n, max_norm) (the norm
// is formed in the same order from the unscaled values), reading and writing x once instead of twice.
void backend_unscale_clip_coef(Backend *backend, float *x, size_t n, size_t n_fp16, const float *scale,
                               float *found_inf, float *total, float *coef, float max_norm);

// One torch.optim.Adam step over n parameters unless found_inf (optional) is nonzero, in which case
// params, m, v, params_lp and *step are untouched. *step (backend memory) is incremented first, as
// torch does. The learning rate is hyper.lr * *lr_scale (in double, as SB3's schedule forms it)
// when lr_scale (backend memory) is given, else hyper.lr: a recorded update (backend_graph_run)
// reads the schedule's factor from memory at each replay instead of holding one value. The gradient used is grads[i] * *grad_scale when grad_scale (backend memory) is given:
// the clip coefficient, applied with the same float multiply as clip_grad_norm_'s in-place scaling,
// so the result is bit-identical to clipping first; grads itself is left as it is. params_lp
// (optional, n elements of lp_dtype) receives the updated parameters rounded (the low-precision
// weight copies), saving a separate cast pass.
void backend_adam_step(Backend *backend, float *params, const float *grads, float *m, float *v, size_t n,
                       AdamHyper hyper, const double *lr_scale, int32_t *step, const float *found_inf,
                       const float *grad_scale, void *params_lp, NnDtype lp_dtype);

// --- randomness ------------------------------------------------------------------------------------------------

// out (n) = uniforms in (0, 1] of Philox stream (seed, subsequence) from word `offset` (common/rng.h,
// cuRAND's layout).
void backend_uniform(Backend *backend, float *out, size_t n, uint64_t seed, uint64_t subsequence, uint64_t offset);

// --- rollout and PPO (buffers/, ppo/) ------------------------------------------------------------------

// GAE and returns exactly as SB3's RolloutBuffer.compute_returns_and_advantage (PPO_SEMANTICS.md
// section 3), in fp32 in SB3's operation order: for each env n, backwards over t,
//   nonterminal = 1 - (t == T-1 ? last_dones[n] : episode_starts[t+1, n]),
//   next_v      = t == T-1 ? last_values[n] : values[t+1, n],
//   delta       = rewards[t, n] + gamma * next_v * nonterminal - values[t, n],
//   gae         = delta + (float)(gamma * lambda) * nonterminal * gae,
// advantages (T, N) = gae, returns (T, N) = advantages + values. Inputs (T, N) and (N); episode
// starts and dones are 0 or 1 stored as floats.
void backend_gae(Backend *backend, float *advantages, float *returns, const float *rewards, const float *values,
                 const float *episode_starts, const float *last_values, const float *last_dones, int T, int N,
                 double gamma, double lambda);

// Bytes of scratch backend_permutation needs for n indices (backend memory, the caller's slab).
size_t backend_permutation_scratch_bytes(const Backend *backend, size_t n);
// perm (n) = 0..n-1 ordered by the 32-bit Philox words (seed, subsequence) from `offset` (word i
// is index i's key; equal keys keep index order): one random permutation per call, uniform but for
// the order of tied keys (about n^2 / 2^33 pairs: 2 at n = 131,072), the same on every backend (a
// sort of random keys parallelises where Fisher-Yates does not).
// n < 2^31. scratch: backend_permutation_scratch_bytes(n) bytes.
void backend_permutation(Backend *backend, int32_t *perm, void *scratch, size_t n, uint64_t seed,
                         uint64_t subsequence, uint64_t offset);

// The clipped PPO objective of one minibatch (PPO_SEMANTICS.md section 4, SB3's ppo.py train()).
typedef struct {
  double clip_range;         // > 0 (doubles, as SB3's Python floats; the ops round them like torch does)
  double clip_range_vf;      // > 0: clip the value prediction around the old value; <= 0: off
  double ent_coef, vf_coef;  // SB3 defaults 0, 0.5
  int normalize_advantage;   // 1: (adv - mean) / (std + 1e-8), std unbiased, over the minibatch (B > 1)
} PpoLossHyper;

// The per-minibatch statistics backend_ppo_loss writes (floats, backend memory): PPO_STAT_* of
// nn/ops_math.h, whose nn_ppo_stats fills the row on both backends.

// stats (PPO_STAT_COUNT) as above, and the gradients of the loss with respect to the per-sample
// log-probs, entropies and values: dlogp, dentropy, dvalues (B), each multiplied by *loss_scale
// when loss_scale (backend memory, the GradScaler's scale) is not NULL, so the backward starts from
// loss * scale. Inputs (B): logp, entropy, values of the current parameters; old_logp, old_values,
// advantages, returns from the rollout.
void backend_ppo_loss(Backend *backend, float *stats, float *dlogp, float *dentropy, float *dvalues, const float *logp,
                      const float *entropy, const float *values, const float *old_logp, const float *old_values,
                      const float *advantages, const float *returns, int B, PpoLossHyper hyper,
                      const float *loss_scale);

// Advantage normalisation over a minibatch split across ranks (ppo/dist.h): the mean and the std of
// the union of every rank's minibatch, by the same formula as backend_ppo_loss's normalize_advantage,
// in two passes with a sum over the ranks after each (the caller's dist_allreduce_sum_f64), then the
// loss runs with normalize_advantage = 0 on the normalised advantages. With one rank the three ops
// and the loss reproduce backend_ppo_loss's own normalisation bit for bit (test_ppo_ops.c).
// count_sum (2) = {B, sum of advantages (B)}, in double, in index order.
void backend_advantage_count_sum(Backend *backend, double *count_sum, const float *advantages, int B);
// sq_dev (1) = sum over b of (advantages[b] - mean)^2 in double, mean = (float)(sum / count) of the
// (summed) count_sum.
void backend_advantage_sq_dev(Backend *backend, double *sq_dev, const float *advantages, int B,
                              const double *count_sum);
// advantages (B) = (advantages - mean) / (std + 1e-8), std = sqrt(sq_dev / (count - 1)) unbiased, in
// float as the loss computes it; untouched when count <= 1 (SB3 skips a minibatch of one).
void backend_advantage_normalize(Backend *backend, float *advantages, int B, const double *count_sum,
                                 const double *sq_dev);

// moments (NN_EV_MOMENTS doubles, nn/ops_math.h) = the count n, and the mean and the sum of squared
// deviations (two passes, in double) of target and of target - pred. nn_explained_variance of them
// is SB3's explained_variance, 1 - Var[target - pred] / Var[target]; nn_ev_moments_merge pools
// several ranks' before that.
void backend_explained_variance(Backend *backend, double *moments, const float *pred, const float *target, size_t n);

#endif
