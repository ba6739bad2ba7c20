// nn/backend_cuda.cu: the CUDA backend's core: opening the device, memory, GEMM through cuBLAS,
// bias + activation, casts, scaling, gathers, the value loss, and the table of ops (the ops of
// backend_cuda_ops.cu and backend_cuda_rollout.cu are wired in here too).
//
// Every op queues work on ctx->stream and returns; only download, sync and memory_info make the
// host wait. Per-element arithmetic is nn/ops_math.h's, the CPU backend's own functions, and the
// CUDA sources are compiled with --fmad=false (nn/CMakeLists.txt): no multiply-add the source
// does not write as fmaf is fused, as in the C build, so the element-wise ops give the CPU's bits. Shapes as
// nn/backend.h: B rows, H columns. Depends on nn/backend_cuda.h (CUDA runtime, cuBLAS), common/error.h.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "nn/backend_cuda.h"

#define CUDA_WORKSPACE_DEFAULT ((size_t)32 << 20)  // cuBLAS's own default on Hopper, reserved at open
#define CUDA_MOVE_MAX_CHUNKS 16                    // overlapping copies up to this many chunks use cudaMemcpy

// --- device memory --------------------------------------------------------------------------------------

// cudaMalloc that exits with the request and the free memory when the device is full.
static void *device_alloc(size_t bytes) {
  void *ptr = NULL;
  cudaError_t err = cudaMalloc(&ptr, bytes ? bytes : 1);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();  // not sticky, but cleared so the next check does not see it
    size_t free_bytes = 0, total_bytes = 0;
    (void)cudaMemGetInfo(&free_bytes, &total_bytes);
    char hint[256];
    snprintf(hint, sizeof hint,
             "out of device memory: %zu bytes requested, %zu of %zu bytes free; reduce the batch or the network", bytes,
             free_bytes, total_bytes);
    check_fail("cudaMalloc", __FILE__, __LINE__, hint, 0);
  }
  CUDA_CHECK(err);
  return ptr;
}

// The counted call (backend_alloc) counts it; cudaMalloc returns 256-byte aligned memory. The
// memset is queued on the stream, ahead of any op that can use the block. cudaMalloc allocates on
// the calling thread's current device, which need not be this backend's (another backend opened
// later in the process, a library that switched it): it is set first.
static void *cuda_alloc(Backend *backend, size_t bytes) {
  CUDA_CHECK(cudaSetDevice(cuda_ctx(backend)->device));
  void *ptr = device_alloc(bytes);
  CUDA_CHECK(cudaMemsetAsync(ptr, 0, bytes, cuda_ctx(backend)->stream));
  return ptr;
}

// cudaFree waits for the device first, so no queued work still uses the block.
static void cuda_free(Backend *backend, void *ptr) { CUDA_CHECK(cudaFree(ptr)); }

// From pageable (malloc'd) host memory cudaMemcpyAsync copies to a staging buffer before
// returning, so the host buffer may be reused at once. From page-locked memory (backend_host_alloc:
// the trainer's per-step buffers) the copy is truly asynchronous, and the caller leaves the buffer
// alone until the next download or sync (nn/backend.h).
static void cuda_upload(Backend *backend, void *dst, const void *src, size_t bytes) {
  if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cuda_ctx(backend)->stream));
}

// What a kernel recorded in ctx->fault, as check_fail's statement and hint (backend_cuda.h).
static void fail_on_fault(int fault) {
  if (fault == CUDA_FAULT_GATHER_INDEX)
    check_fail("backend_gather_rows: index in [0, rows)", __FILE__, __LINE__,
               "an index was out of range (found on the device, reported at the next download or sync)", 0);
  if (fault == CUDA_FAULT_CATEGORICAL_ACTION)
    check_fail("categorical action is an integer in [0, A)", __FILE__, __LINE__,
               "a categorical op got a bad action (found on the device, reported at the next download or sync)", 0);
  check_fail("ctx->fault == 0", __FILE__, __LINE__, "a kernel recorded an unknown fault code", 0);
}

// Waits for the stream, the fault flag's copy queued behind the caller's work.
static void wait_and_check(CudaContext *ctx) {
  int fault = 0;
  CUDA_CHECK(cudaMemcpyAsync(&fault, ctx->fault, sizeof fault, cudaMemcpyDeviceToHost, ctx->stream));
  CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
  if (fault != CUDA_FAULT_NONE) fail_on_fault(fault);
}

static void cuda_download(Backend *backend, void *dst, const void *src, size_t bytes) {
  CudaContext *ctx = cuda_ctx(backend);
  if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, ctx->stream));
  wait_and_check(ctx);
}

static void cuda_sync(Backend *backend) { wait_and_check(cuda_ctx(backend)); }

static void cuda_memset_zero(Backend *backend, void *dst, size_t bytes) {
  if (bytes) CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, cuda_ctx(backend)->stream));
}

enum { MOVE_THREADS = 1024, MOVE_BYTES_PER_THREAD = 8 };

// memmove of overlapping ranges in one block: tile by tile in the direction that reads every byte
// before it is overwritten (upwards when dst < src). Each tile is read into registers, then, after
// the barrier, written; the next tile's reads never touch this tile's writes, so one barrier per
// tile is enough.
static __global__ void __launch_bounds__(MOVE_THREADS) move_kernel(unsigned char *dst, const unsigned char *src,
                                                                    size_t bytes) {
  const size_t tile = (size_t)MOVE_THREADS * MOVE_BYTES_PER_THREAD;
  size_t tiles = (bytes + tile - 1) / tile;
  int upwards = dst < src;
  for (size_t t = 0; t < tiles; t++) {
    size_t base = (upwards ? t : tiles - 1 - t) * tile + threadIdx.x;
    unsigned char v[MOVE_BYTES_PER_THREAD];
#pragma unroll
    for (int k = 0; k < MOVE_BYTES_PER_THREAD; k++)
      if (base + (size_t)k * MOVE_THREADS < bytes) v[k] = src[base + (size_t)k * MOVE_THREADS];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < MOVE_BYTES_PER_THREAD; k++)
      if (base + (size_t)k * MOVE_THREADS < bytes) dst[base + (size_t)k * MOVE_THREADS] = v[k];
  }
}

// The ranges may overlap, where cudaMemcpy is undefined. Overlapping by less than the length, the
// copy is split into chunks of the distance between the pointers, each disjoint from its source,
// queued in the safe order; when that would take many calls, one block moves the bytes instead.
static void cuda_copy(Backend *backend, void *dst, const void *src, size_t bytes) {
  cudaStream_t stream = cuda_ctx(backend)->stream;
  if (bytes == 0 || dst == src) return;
  unsigned char *d = (unsigned char *)dst;
  const unsigned char *s = (const unsigned char *)src;
  size_t distance = d > s ? (size_t)(d - s) : (size_t)(s - d);
  if (distance >= bytes) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  size_t chunks = (bytes + distance - 1) / distance;
  if (chunks > CUDA_MOVE_MAX_CHUNKS) {
    move_kernel<<<1, MOVE_THREADS, 0, stream>>>(d, s, bytes);
    CUDA_CHECK_LAUNCH();
    return;
  }
  for (size_t c = 0; c < chunks; c++) {
    size_t k = d < s ? c : chunks - 1 - c;  // upwards when dst is below src
    size_t at = k * distance, len = bytes - at < distance ? bytes - at : distance;
    CUDA_CHECK(cudaMemcpyAsync(d + at, s + at, len, cudaMemcpyDeviceToDevice, stream));
  }
}

static void cuda_copy_rows(Backend *backend, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                           size_t row_bytes, size_t rows) {
  CUDA_CHECK(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, rows, cudaMemcpyDeviceToDevice,
                               cuda_ctx(backend)->stream));
}

// Counted as a host wait by the seam: it waits for the queued work too, so a fault is seen here as at
// any other wait.
static int cuda_memory_info(Backend *backend, size_t *free_bytes, size_t *total_bytes) {
  wait_and_check(cuda_ctx(backend));
  CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
  return 0;
}

// The workspace only grows; cuBLAS is told about every new one. (cudaFree waits for queued GEMMs
// that may still use the old one.) cuBLAS's results are reproducible for a fixed workspace; growing
// it may change its choice of kernel, so a run reserves its workspace before the first step.
static void cuda_reserve_workspace(Backend *backend, size_t bytes) {
  CudaContext *ctx = cuda_ctx(backend);
  if (bytes <= ctx->workspace_bytes) return;
  // Recorded graphs hold the current workspace's address in their cuBLAS nodes.
  CHECK(backend->graphs == 0, "the GEMM workspace must be reserved before any graph is recorded "
                              "(backend_graph_reset them first)");
  CUDA_CHECK(cudaFree(ctx->workspace));
  ctx->workspace = NULL;
  ctx->workspace_bytes = 0;
  ctx->workspace = device_alloc(bytes);
  ctx->workspace_bytes = bytes;
  backend->alloc_count++;
  CUBLAS_CHECK(cublasSetWorkspace(ctx->cublas, ctx->workspace, bytes));
}

static size_t cuda_workspace_bytes(const Backend *backend) {
  return ((const CudaContext *)backend->ctx)->workspace_bytes;
}

static void cuda_set_tf32(Backend *backend, int allow) { cuda_ctx(backend)->allow_tf32 = allow != 0; }

// --- per-element storage of fp32, fp16 and bf16 ---------------------------------------------------------------

// Element i of a float or 16-bit array of dtype, as fp32 (exact).
__device__ static inline float load_f32(const void *p, NnDtype dtype, size_t i) {
  if (dtype == NN_F16) return nn_f16_to_f32(((const uint16_t *)p)[i]);
  if (dtype == NN_BF16) return nn_bf16_to_f32(((const uint16_t *)p)[i]);
  return ((const float *)p)[i];
}

// The bits x is stored as in dtype (rounded to nearest even by ops_math, as the CPU rounds).
__device__ static inline uint32_t rounded_bits(float x, NnDtype dtype) {
  if (dtype == NN_F16) return nn_f32_to_f16(x);
  if (dtype == NN_BF16) return nn_f32_to_bf16(x);
  return nn_f32_bits(x);
}

__device__ static inline void store_bits(void *p, NnDtype dtype, size_t i, uint32_t bits) {
  if (dtype == NN_F32)
    ((uint32_t *)p)[i] = bits;
  else
    ((uint16_t *)p)[i] = (uint16_t)bits;
}

// --- GEMM ---------------------------------------------------------------------------------------------------

static __global__ void scale_kernel(float *x, float alpha, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    x[i] *= alpha;
}

// K == 0: C = beta C, as the CPU (cuBLAS would reject the leading dimension 0 of a K-wide operand).
static void gemm_empty(CudaContext *ctx, int M, int N, float beta, float *C) {
  size_t n = (size_t)M * N;
  if (beta == 0.0f) {
    CUDA_CHECK(cudaMemsetAsync(C, 0, n * sizeof(float), ctx->stream));
    return;
  }
  scale_kernel<<<cuda_blocks(ctx, n), CUDA_THREADS, 0, ctx->stream>>>(C, beta, n);
  CUDA_CHECK_LAUNCH();
}

// Row-major onto column-major cuBLAS. A row-major (r, c) matrix with row length ld is, read
// column-major with the same ld, its transpose (c, r). So cuBLAS, given our C with ldc = N, sees
// C^T (N, M), and we ask it for C^T = op(B)^T op(A)^T: m = N, n = M, k = K, first operand B,
// second operand A.
//   First, op(B)^T (N, K). B stored (K, N) (no trans_b): cuBLAS sees B^T (N, K) = op(B)^T as is,
//   OP_N, lda = N. B stored (N, K) (trans_b, op(B) = B^T): cuBLAS sees B^T (K, N), and op(B)^T = B
//   is its transpose: OP_T, lda = K.
//   Second, op(A)^T (K, M). A stored (M, K): cuBLAS sees A^T (K, M) = op(A)^T, OP_N, ldb = K.
//   A stored (K, M) (trans_a): cuBLAS sees A^T (M, K), op(A)^T = A is its transpose: OP_T, ldb = M.
// Each leading dimension is the row length of the stored row-major matrix, as cblas_sgemm's.
// Inputs in fp16 / bf16 (CUDA_R_16F / CUDA_R_16BF bits), fp32 C, fp32 accumulation; fp32 inputs
// use TF32 tensor cores only when backend_set_tf32 allowed it.
// c_dtype: fp32, or dtype with beta 0 (cuBLAS rounds each fp32 sum once into the 16-bit C).
static void cuda_gemm(Backend *backend, NnDtype dtype, int trans_a, int trans_b, int M, int N, int K, float alpha,
                      const void *A, const void *B, float beta, void *C, NnDtype c_dtype) {
  CudaContext *ctx = cuda_ctx(backend);
  if (K == 0) {
    if (c_dtype == NN_F32)
      gemm_empty(ctx, M, N, beta, (float *)C);
    else  // beta is 0: zero bits are +0 in every dtype
      CUDA_CHECK(cudaMemsetAsync(C, 0, (size_t)M * N * nn_dtype_size(c_dtype), ctx->stream));
    return;
  }
  cudaDataType_t type = dtype == NN_F16 ? CUDA_R_16F : dtype == NN_BF16 ? CUDA_R_16BF : CUDA_R_32F;
  cudaDataType_t c_type = c_dtype == NN_F32 ? CUDA_R_32F : type;
  cublasComputeType_t compute = dtype == NN_F32 && ctx->allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  CUBLAS_CHECK(cublasGemmEx(ctx->cublas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M,
                            K, &alpha, B, type, trans_b ? K : N, A, type, trans_a ? M : K, &beta, C, c_type, N, compute,
                            CUBLAS_GEMM_DEFAULT));
}

// --- bias + activation -----------------------------------------------------------------------------------------

// Blocks of CUDA_THREADS columns across, rows down with a stride loop over the rest: about 32
// blocks per multiprocessor in all. B, H > 0.
static dim3 row_grid(const CudaContext *ctx, int B, int H) {
  unsigned across = (unsigned)((H + CUDA_THREADS - 1) / CUDA_THREADS);
  unsigned down = (unsigned)ctx->sm_count * 32u / across;
  if (down > (unsigned)B) down = (unsigned)B;
  if (down > 65535u) down = 65535u;
  return dim3(across, down ? down : 1u);
}

static __global__ void bias_act_forward_kernel(void *out, NnDtype out_dtype, const float *in, const float *bias, int B,
                                               int H, int act) {
  int h = blockIdx.x * blockDim.x + threadIdx.x;
  if (h >= H) return;
  float bh = bias[h];
  for (int b = blockIdx.y; b < B; b += gridDim.y) {
    size_t i = (size_t)b * H + h;
    store_bits(out, out_dtype, i, rounded_bits(nn_act_forward(in[i] + bh, act), out_dtype));
  }
}

static void cuda_bias_act_forward(Backend *backend, void *out, NnDtype out_dtype, const float *in, const float *bias,
                                  int B, int H, int act) {
  CudaContext *ctx = cuda_ctx(backend);
  if (B == 0 || H == 0) return;
  bias_act_forward_kernel<<<row_grid(ctx, B, H), CUDA_THREADS, 0, ctx->stream>>>(out, out_dtype, in, bias, B, H, act);
  CUDA_CHECK_LAUNCH();
}

// bias_act_backward in two kernels over a 2-D grid, so that every multiprocessor has work (one
// block per 32 columns would give the headline's 512-wide layer 16 blocks on 132 SMs):
//   tiles: one block per TILE_ROWS x TILE_COLS tile (past 65535 row tiles, the grid's limit, a block
//     takes every 65535th), TILE_COLS x TILE_Y threads. Thread (x, y)
//     takes column h0 + x of rows y, y + TILE_Y, ... of the tile (each warp reads and writes runs of
//     one row's columns) and loads each element before it stores it (din may be dout). Per element
//     d = dout act'(out), stored rounded into din and unrounded into shared memory; then warp y = 0
//     sums its column's rows of the tile in row order into partials (row tile, H), and with din_t
//     the tile goes out transposed from shared memory (row h of din_t, its columns b0 + x + 32 k:
//     coalesced both ways).
//   column sums: one thread per column adds its partials in row-tile order and adds that to dbias.
// The order is fixed, so dbias repeats its bits run to run; it differs from the CPU's serial sum
// only by float rounding (test_cuda_core states the tolerance). The partials live in the cuBLAS
// workspace, which no GEMM uses between its kernels (the stream orders them).
enum { TILE_COLS = 32, TILE_ROWS = 64, TILE_Y = 8 };

static __global__ void __launch_bounds__(TILE_COLS * TILE_Y)
    bias_act_backward_tiles(void *din, void *din_t, NnDtype din_dtype, float *partials, const void *dout,
                            NnDtype dout_dtype, const void *out, NnDtype out_dtype, int B, int H, int act) {
  __shared__ float d_tile[TILE_ROWS][TILE_COLS + 1];  // the padding keeps a column's reads off one bank
  int x = threadIdx.x, y = threadIdx.y, h0 = blockIdx.x * TILE_COLS, h = h0 + x;
  int row_tiles = (B + TILE_ROWS - 1) / TILE_ROWS;
  for (int tile = blockIdx.y; tile < row_tiles; tile += gridDim.y) {  // gridDim.y is at most 65535
    int b0 = tile * TILE_ROWS, rows = B - b0 < TILE_ROWS ? B - b0 : TILE_ROWS;
    for (int r = y; r < TILE_ROWS; r += TILE_Y) {
      float d = 0.0f;
      if (r < rows && h < H) {
        size_t i = (size_t)(b0 + r) * H + h;
        d = nn_act_backward(load_f32(dout, dout_dtype, i), load_f32(out, out_dtype, i), act);
        if (din) store_bits(din, din_dtype, i, rounded_bits(d, din_dtype));
      }
      d_tile[r][x] = d;
    }
    __syncthreads();
    if (y == 0 && h < H) {
      float sum = 0.0f;
      for (int r = 0; r < rows; r++) sum += d_tile[r][x];
      partials[(size_t)tile * H + h] = sum;
    }
    if (din_t)
      for (int c = y; c < TILE_COLS && h0 + c < H; c += TILE_Y)
        for (int r = x; r < rows; r += TILE_COLS)
          store_bits(din_t, din_dtype, (size_t)(h0 + c) * B + (size_t)(b0 + r), rounded_bits(d_tile[r][c], din_dtype));
    __syncthreads();  // the tile is read above before the next one overwrites it
  }
}

static __global__ void bias_act_backward_columns(float *dbias, const float *partials, int row_tiles, int H) {
  int h = blockIdx.x * blockDim.x + threadIdx.x;
  if (h >= H) return;
  float sum = 0.0f;
  for (int t = 0; t < row_tiles; t++) sum += partials[(size_t)t * H + h];
  dbias[h] += sum;
}

static void cuda_bias_act_backward(Backend *backend, void *din, void *din_t, NnDtype din_dtype, float *dbias,
                                   const void *dout, NnDtype dout_dtype, const void *out, NnDtype out_dtype, int B,
                                   int H, int act) {
  CudaContext *ctx = cuda_ctx(backend);
  if (H == 0 || B == 0) return;
  unsigned col_tiles = (unsigned)((H + TILE_COLS - 1) / TILE_COLS), row_tiles = (unsigned)((B + TILE_ROWS - 1) / TILE_ROWS);
  CHECK((size_t)row_tiles * H * sizeof(float) <= ctx->workspace_bytes,
        "bias_act_backward: the column partials exceed the GEMM workspace (backend_reserve_workspace)");
  // The partials borrow cuBLAS's workspace: the two kernels below run back to back on the one
  // stream with no cuBLAS call between them, and cuBLAS uses its workspace only inside its calls
  // (scratch, nothing kept from one call to the next), so nothing of cuBLAS's is overwritten and
  // nothing of ours is read after a cuBLAS call. test_cuda_ops checks dbias against the CPU.
  float *partials = (float *)ctx->workspace;
  unsigned grid_rows = row_tiles < 65535u ? row_tiles : 65535u;
  bias_act_backward_tiles<<<dim3(col_tiles, grid_rows), dim3(TILE_COLS, TILE_Y), 0, ctx->stream>>>(
      din, din_t, din_dtype, partials, dout, dout_dtype, out, out_dtype, B, H, act);
  CUDA_CHECK_LAUNCH();
  bias_act_backward_columns<<<(unsigned)((H + CUDA_THREADS - 1) / CUDA_THREADS), CUDA_THREADS, 0, ctx->stream>>>(
      dbias, partials, (int)row_tiles, H);
  CUDA_CHECK_LAUNCH();
}

// --- value loss ------------------------------------------------------------------------------------------------

// Partial sums in double of (pred - target)^2 (the difference in float, as the CPU forms it):
// exactly CUDA_REDUCE_BLOCKS blocks, whatever the device, each a fixed tree over its threads.
static __global__ void mse_partials_kernel(double *partials, const float *pred, const float *target, int B) {
  __shared__ double s[CUDA_THREADS];
  double acc = 0.0;
  for (int i = blockIdx.x * CUDA_THREADS + threadIdx.x; i < B; i += CUDA_REDUCE_BLOCKS * CUDA_THREADS) {
    float d = pred[i] - target[i];
    acc += (double)d * (double)d;
  }
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int w = CUDA_THREADS / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = s[0];
}

// One thread adds the partial sums in index order.
static __global__ void mse_finish_kernel(float *loss, const double *partials, int B) {
  double total = 0.0;
  for (int k = 0; k < CUDA_REDUCE_BLOCKS; k++) total += partials[k];
  *loss = (float)(total / (double)B);
}

// loss = mean (pred - target)^2, the CPU's definition, accumulated in double (as the CPU does, in
// another order: the two agree to rounding, not always to the bit).
static void cuda_mse_forward(Backend *backend, float *loss, const float *pred, const float *target, int B) {
  CudaContext *ctx = cuda_ctx(backend);
  mse_partials_kernel<<<CUDA_REDUCE_BLOCKS, CUDA_THREADS, 0, ctx->stream>>>(ctx->partials, pred, target, B);
  CUDA_CHECK_LAUNCH();
  mse_finish_kernel<<<1, 1, 0, ctx->stream>>>(loss, ctx->partials, B);
  CUDA_CHECK_LAUNCH();
}

static __global__ void mse_backward_kernel(float *dpred, const float *dloss, const float *pred, const float *target,
                                           int B) {
  float c = 2.0f * *dloss / (float)B;  // the CPU's expression, operation for operation
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < B; i += gridDim.x * blockDim.x)
    dpred[i] = c * (pred[i] - target[i]);
}

static void cuda_mse_backward(Backend *backend, float *dpred, const float *dloss, const float *pred,
                              const float *target, int B) {
  CudaContext *ctx = cuda_ctx(backend);
  mse_backward_kernel<<<cuda_blocks(ctx, (size_t)B), CUDA_THREADS, 0, ctx->stream>>>(dpred, dloss, pred, target, B);
  CUDA_CHECK_LAUNCH();
}

// --- data movement ----------------------------------------------------------------------------------------------

// One warp per row of out, D words of type Word per row. An index out of [0, rows) is recorded in
// *fault (reported at the next download or sync, backend_cuda.h) and its row is left as it was.
template <typename Word>
static __global__ void gather_rows_kernel(Word *out, const Word *src, const int32_t *index, int B, size_t D, int rows,
                                          int *fault) {
  int lane = threadIdx.x % 32;
  int warps = gridDim.x * (blockDim.x / 32);
  for (int b = (blockIdx.x * blockDim.x + threadIdx.x) / 32; b < B; b += warps) {
    int32_t r = index[b];
    if (r < 0 || r >= rows) {
      if (lane == 0) cuda_report_fault(fault, CUDA_FAULT_GATHER_INDEX);
      continue;
    }
    for (size_t j = lane; j < D; j += 32) out[(size_t)b * D + j] = src[(size_t)r * D + j];
  }
}

// Rows move in the widest word that divides the row and both addresses: 4 bytes (fp32 rows), 2
// (fp16 / bf16 observations), else single bytes.
static void cuda_gather_rows(Backend *backend, void *out, const void *src, const int32_t *index, int B,
                             size_t row_bytes, int rows) {
  CudaContext *ctx = cuda_ctx(backend);
  if (B == 0) return;
  unsigned grid = cuda_blocks(ctx, (size_t)B * 32);
  uintptr_t bits = (uintptr_t)out | (uintptr_t)src | (uintptr_t)row_bytes;
  if (bits % 4 == 0)
    gather_rows_kernel<<<grid, CUDA_THREADS, 0, ctx->stream>>>((uint32_t *)out, (const uint32_t *)src, index, B,
                                                               row_bytes / 4, rows, ctx->fault);
  else if (bits % 2 == 0)
    gather_rows_kernel<<<grid, CUDA_THREADS, 0, ctx->stream>>>((uint16_t *)out, (const uint16_t *)src, index, B,
                                                               row_bytes / 2, rows, ctx->fault);
  else
    gather_rows_kernel<<<grid, CUDA_THREADS, 0, ctx->stream>>>((uint8_t *)out, (const uint8_t *)src, index, B,
                                                               row_bytes, rows, ctx->fault);
  CUDA_CHECK_LAUNCH();
}

static __global__ void cast_kernel(void *out, NnDtype to, const void *in, NnDtype from, size_t n) {
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    store_bits(out, to, i, rounded_bits(load_f32(in, from, i), to));
}

// Between two low precisions through fp32, as the CPU (widening is exact); the same dtype is a
// plain copy, overlapping or not.
static void cuda_cast(Backend *backend, void *out, NnDtype to, const void *in, NnDtype from, size_t n) {
  CudaContext *ctx = cuda_ctx(backend);
  if (to == from) {
    cuda_copy(backend, out, in, n * nn_dtype_size(to));
    return;
  }
  if (n == 0) return;
  cast_kernel<<<cuda_blocks(ctx, n), CUDA_THREADS, 0, ctx->stream>>>(out, to, in, from, n);
  CUDA_CHECK_LAUNCH();
}

static void cuda_scale(Backend *backend, float *x, float alpha, size_t n) {
  CudaContext *ctx = cuda_ctx(backend);
  if (n == 0) return;
  scale_kernel<<<cuda_blocks(ctx, n), CUDA_THREADS, 0, ctx->stream>>>(x, alpha, n);
  CUDA_CHECK_LAUNCH();
}

static __global__ void scale_by_kernel(float *x, const float *alpha, size_t n) {
  float a = *alpha;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) x[i] *= a;
}

static void cuda_scale_by(Backend *backend, float *x, const float *alpha, size_t n) {
  CudaContext *ctx = cuda_ctx(backend);
  if (n == 0) return;
  scale_by_kernel<<<cuda_blocks(ctx, n), CUDA_THREADS, 0, ctx->stream>>>(x, alpha, n);
  CUDA_CHECK_LAUNCH();
}

// --- the table and the lifetime -----------------------------------------------------------------------------------

static void cuda_close(Backend *backend);

// C++20 designated initializers, in BackendOps's declaration order (the compiler rejects any other).
static const BackendOps cuda_ops = {
    .close = cuda_close,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .memset_zero = cuda_memset_zero,
    .copy = cuda_copy,
    .copy_rows = cuda_copy_rows,
    .sync = cuda_sync,
    .memory_info = cuda_memory_info,
    .reserve_workspace = cuda_reserve_workspace,
    .workspace_bytes = cuda_workspace_bytes,
    .set_tf32 = cuda_set_tf32,
    .gemm = cuda_gemm,
    .bias_act_forward = cuda_bias_act_forward,
    .bias_act_backward = cuda_bias_act_backward,
    .categorical_forward = cuda_categorical_forward,
    .categorical_backward = cuda_categorical_backward,
    .categorical_sample = cuda_categorical_sample,
    .gaussian_forward = cuda_gaussian_forward,
    .gaussian_backward = cuda_gaussian_backward,
    .gaussian_sample = cuda_gaussian_sample,
    .mse_forward = cuda_mse_forward,
    .mse_backward = cuda_mse_backward,
    .gather_rows = cuda_gather_rows,
    .cast = cuda_cast,
    .scale = cuda_scale,
    .scale_by = cuda_scale_by,
    .global_norm = cuda_global_norm,
    .clip_grad_norm = cuda_clip_grad_norm,
    .unscale_check = cuda_unscale_check,
    .grad_scaler_update = cuda_grad_scaler_update,
    .clip_coef = cuda_clip_coef,
    .unscale_clip_coef = cuda_unscale_clip_coef,
    .adam_step = cuda_adam_step,
    .uniform = cuda_uniform,
    .gae = cuda_gae,
    .permutation_scratch_bytes = cuda_permutation_scratch_bytes,
    .permutation = cuda_permutation,
    .ppo_loss = cuda_ppo_loss,
    .explained_variance = cuda_explained_variance,
    .advantage_count_sum = cuda_advantage_count_sum,
    .advantage_sq_dev = cuda_advantage_sq_dev,
    .advantage_normalize = cuda_advantage_normalize,
    .graph_record = cuda_graph_record,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
    .host_alloc = cuda_host_alloc,
    .host_free = cuda_host_free,
#ifdef PPO_HAVE_NCCL
    .comm_id_bytes = cuda_comm_id_bytes,
    .comm_make_id = cuda_comm_make_id,
    .comm_join = cuda_comm_join,
    .allreduce_sum_f32 = cuda_allreduce_sum_f32,
    .allreduce_sum_f64 = cuda_allreduce_sum_f64,
#endif
};

// A fault a kernel recorded since the last wait is reported here too (the last ops' results may
// never have been read back).
static void cuda_close(Backend *backend) {
  CudaContext *ctx = cuda_ctx(backend);
  wait_and_check(ctx);
  cuda_comm_close(ctx);
  CUBLAS_CHECK(cublasDestroy(ctx->cublas));
  CUDA_CHECK(cudaFree(ctx->workspace));
  CUDA_CHECK(cudaFree(ctx->partials));
  CUDA_CHECK(cudaStreamDestroy(ctx->stream));
  free(ctx);
  free(backend);
}

// 0 when device 0 can run this build; else -1 with error_set: it does not start, or the build has
// no kernel image for its architecture (CMAKE_CUDA_ARCHITECTURES), found before any op fails.
static int device_usable(int device, cudaDeviceProp *prop) {
  cudaError_t err = cudaSetDevice(device);
  if (err == cudaSuccess) err = cudaGetDeviceProperties(prop, device);
  cudaFuncAttributes attr;
  if (err == cudaSuccess) err = cudaFuncGetAttributes(&attr, scale_kernel);
  if (err == cudaSuccess) return 0;
  (void)cudaGetLastError();
  error_set("backend 'cuda': device %d cannot run this build (%s)", device, cudaGetErrorString(err));
  return -1;
}

// The device this process uses: PPO_CUDA_DEVICE when set; else, in a process an MPI launcher or
// Slurm started, its rank on this node modulo the devices it sees (one GPU per rank, ppo/dist.h);
// else 0. (CUDA_VISIBLE_DEVICES decides what the devices are.) -1 with error_set on a bad value.
static int pick_device(int count) {
  const char *chosen = getenv("PPO_CUDA_DEVICE");
  if (chosen && *chosen) {
    char *end = NULL;
    long d = strtol(chosen, &end, 10);
    if (*end != '\0' || d < 0 || d >= count) {
      error_set("backend 'cuda': PPO_CUDA_DEVICE = '%s': allowed 0 .. %d (the devices this process sees)", chosen,
                count - 1);
      return -1;
    }
    return (int)d;
  }
  static const char *const local_rank_vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                                                "PMI_LOCAL_RANK"};
  for (size_t i = 0; i < sizeof local_rank_vars / sizeof local_rank_vars[0]; i++) {
    const char *v = getenv(local_rank_vars[i]);
    if (v && *v) return (int)(strtol(v, NULL, 10) % count);
  }
  return 0;
}

// "cuda: device 0, NVIDIA H100 80GB HBM3, sm_90, 132 SMs, 79.1 GiB, CUDA runtime 13.0, driver 13.0, cuBLAS 13.0.0".
static void describe(Backend *backend, const cudaDeviceProp *prop) {
  int runtime = 0, driver = 0, major = 0, minor = 0, patch = 0;
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  CUBLAS_CHECK(cublasGetProperty(MAJOR_VERSION, &major));
  CUBLAS_CHECK(cublasGetProperty(MINOR_VERSION, &minor));
  CUBLAS_CHECK(cublasGetProperty(PATCH_LEVEL, &patch));
  snprintf(backend->describe, sizeof backend->describe,
           "cuda: device %d, %.96s, sm_%d%d, %d SMs, %.1f GiB, CUDA runtime %d.%d, driver %d.%d, cuBLAS %d.%d.%d",
           cuda_ctx(backend)->device, prop->name, prop->major, prop->minor, prop->multiProcessorCount, (double)prop->totalGlobalMem / (1 << 30),
           runtime / 1000, runtime % 1000 / 10, driver / 1000, driver % 1000 / 10, major, minor, patch);
}

// A step of opening that failed on a device that answered (another process holds its memory,
// cuBLAS cannot start): undo the steps before it and return NULL with the reason, so that
// backend_open("auto") takes the CPU and "cuda" says why, instead of exiting.
static Backend *open_failed(Backend *backend, const char *step, const char *why) {
  CudaContext *ctx = cuda_ctx(backend);
  size_t free_bytes = 0, total_bytes = 0;
  (void)cudaMemGetInfo(&free_bytes, &total_bytes);
  error_set("backend 'cuda': device %d: %s failed (%s; %.2f of %.2f GiB free)", ctx->device, step, why,
            (double)free_bytes / (1 << 30), (double)total_bytes / (1 << 30));
  if (ctx->workspace) (void)cudaFree(ctx->workspace);
  if (ctx->partials) (void)cudaFree(ctx->partials);
  if (ctx->cublas) (void)cublasDestroy(ctx->cublas);
  if (ctx->stream) (void)cudaStreamDestroy(ctx->stream);
  (void)cudaGetLastError();
  free(ctx);
  free(backend);
  return NULL;
}

const BackendOps *backend_cuda_ops(void) { return &cuda_ops; }

// The device of pick_device. The reduction partials and the fault
// flag share one counted allocation; cuBLAS gets a workspace of its usual size now, so no GEMM
// allocates later. Every step that can fail on a device that is usable but busy returns NULL.
Backend *backend_cuda_open(void) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    error_set("backend 'cuda': no CUDA device (%s)", err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return NULL;
  }
  int device = pick_device(count);
  cudaDeviceProp prop;
  if (device < 0 || device_usable(device, &prop) != 0) return NULL;
  Backend *backend = (Backend *)calloc(1, sizeof *backend);
  CudaContext *ctx = (CudaContext *)calloc(1, sizeof *ctx);
  CHECK(backend && ctx, "out of host memory opening the CUDA backend");
  backend->name = "cuda";
  backend->ops = &cuda_ops;
  backend->ctx = ctx;
  ctx->device = device;
  ctx->sm_count = prop.multiProcessorCount;
  cudaError_t e = cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) return open_failed(backend, "creating its stream", cudaGetErrorString(e));
  cublasStatus_t st = cublasCreate(&ctx->cublas);
  if (st != CUBLAS_STATUS_SUCCESS) return open_failed(backend, "starting cuBLAS", cublasGetStatusString(st));
  CUBLAS_CHECK(cublasSetStream(ctx->cublas, ctx->stream));  // before the workspace: it resets it
  // fp16 / bf16 C: the fp32 sums are rounded once into C (nn/backend.h's backend_gemm_to), never
  // reduced in the 16-bit type between split-K slices, which cuBLAS's default math mode allows
  CUBLAS_CHECK(cublasSetMathMode(ctx->cublas, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
  size_t partials_bytes = (CUDA_REDUCE_BLOCKS + 8) * sizeof(double);
  void *partials = NULL, *workspace = NULL;
  e = cudaMalloc(&partials, partials_bytes + sizeof(int));
  if (e != cudaSuccess) return open_failed(backend, "allocating the reduction partials", cudaGetErrorString(e));
  ctx->partials = (double *)partials;
  ctx->fault = (int *)((char *)ctx->partials + partials_bytes);
  CUDA_CHECK(cudaMemsetAsync(partials, 0, partials_bytes + sizeof(int), ctx->stream));
  e = cudaMalloc(&workspace, CUDA_WORKSPACE_DEFAULT);
  if (e != cudaSuccess) return open_failed(backend, "allocating cuBLAS's 32 MiB workspace", cudaGetErrorString(e));
  ctx->workspace = workspace;
  ctx->workspace_bytes = CUDA_WORKSPACE_DEFAULT;
  CUBLAS_CHECK(cublasSetWorkspace(ctx->cublas, ctx->workspace, ctx->workspace_bytes));
  backend->alloc_count += 2;  // the partials and the workspace
  describe(backend, &prop);
  return backend;
}
