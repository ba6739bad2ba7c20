// nn/backend_cpu.c: the CPU backend, the reference every other backend must match (STYLE rule 1).
//
// Memory is host memory (64-byte aligned, zeroed). Element-wise ops are OpenMP loops with a static
// schedule over nn/ops_math.h; reductions use a fixed chunking so the bits do not depend on the
// thread count. GEMM lives in backend_cpu_gemm.c.
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE  // madvise's MADV_HUGEPAGE (Linux), hidden by _POSIX_C_SOURCE alone
#endif
#include "nn/backend_cpu.h"

#include <malloc.h>  // malloc_usable_size (glibc)
#include <math.h>
#include <omp.h>
#include <stdint.h>
#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/check.h"
#include "common/host_memory.h"
#include "common/rng.h"

int cpu_avx512;
int cpu_f16c;

static void cpu_free(Backend *backend, void *ptr);

static void cpu_close(Backend *backend) {
  CpuContext *ctx = backend->ctx;
  cpu_gemm_close(ctx);
  if (ctx->workspace) cpu_free(backend, ctx->workspace);
  free(ctx);
  free(backend);
}

// Blocks of CPU_HUGE_PAGE bytes or more (the slabs, the GEMM workspace) are asked for transparent
// huge pages (Linux: THP is often "madvise" only; the kernel backs the 2 MiB-aligned stretches
// inside): the GEMMs walk rows 2-8 KiB apart, one 4 KiB page each, and the element-wise passes
// stream tens of MiB, so 4 KiB pages cost TLB misses everywhere (bf16 headline step: 2-3 ms of 49).
// The blocks themselves are not 2 MiB aligned: with every slab and the workspace at the same
// offset modulo 2 MiB, the rollout's few-row GEMMs lost 30 % to cache-set conflicts.
#define CPU_HUGE_PAGE ((size_t)2 << 20)

// Strict mode's allocations: whole pages from mmap (zeroed), closed until a call opens them, or
// open when made inside a call (the GEMM growing its workspace).
static void *strict_alloc(CpuContext *ctx, size_t bytes, int open) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE), len = (bytes + page - 1) / page * page;
  if (len == 0) len = page;
  CHECK(ctx->n_regions < CPU_STRICT_REGIONS, "PPO_CPU_STRICT: too many live backend allocations");
  void *ptr = mmap(NULL, len, open ? PROT_READ | PROT_WRITE : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK_ERRNO(ptr != MAP_FAILED, "out of host memory (PPO_CPU_STRICT)");
  ctx->regions[ctx->n_regions++] = (CpuRegion){ptr, len};
  return ptr;
}

static void strict_free(CpuContext *ctx, void *ptr) {
  for (int i = 0; i < ctx->n_regions; i++)
    if (ctx->regions[i].ptr == ptr) {
      cpu_weights_forget(ctx, ptr, ctx->regions[i].bytes);
      CHECK_ERRNO(munmap(ptr, ctx->regions[i].bytes) == 0, "munmap");
      ctx->regions[i] = ctx->regions[--ctx->n_regions];
      return;
    }
  CHECK(0, "PPO_CPU_STRICT: backend_free of memory this backend did not allocate");
}

// Outside strict mode there are no regions: a loop of nothing per call.
static void cpu_guard(Backend *backend, int open) {
  CpuContext *ctx = backend->ctx;
  for (int i = 0; i < ctx->n_regions; i++)
    CHECK_ERRNO(mprotect(ctx->regions[i].ptr, ctx->regions[i].bytes, open ? PROT_READ | PROT_WRITE : PROT_NONE) == 0,
                "mprotect (PPO_CPU_STRICT)");
}

static void *cpu_alloc(Backend *backend, size_t bytes) {
  CpuContext *ctx = backend->ctx;
  if (ctx->strict) return strict_alloc(ctx, bytes, backend->guard_depth > 0);
  size_t rounded = (bytes + 63) / 64 * 64;
  void *ptr = aligned_alloc(64, rounded ? rounded : 64);
  CHECK(ptr, "out of host memory: reduce the batch or the network");
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (rounded >= CPU_HUGE_PAGE) {  // the whole 4 KiB pages inside the block; a hint: failure is harmless
    uintptr_t lo = ((uintptr_t)ptr + 4095) / 4096 * 4096, hi = ((uintptr_t)ptr + rounded) / 4096 * 4096;
    (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
  }
#endif
  memset(ptr, 0, rounded ? rounded : 64);
  return ptr;
}

static void cpu_free(Backend *backend, void *ptr) {
  CpuContext *ctx = backend->ctx;
  if (ctx->strict) {
    strict_free(ctx, ptr);
  } else {
    cpu_weights_forget(ctx, ptr, malloc_usable_size(ptr));  // (the block's own bytes: no other allocation's)
    free(ptr);
  }
}

static void cpu_copy(Backend *backend, void *dst, const void *src, size_t bytes) {
  if (bytes) memmove(dst, src, bytes);
}

static void cpu_copy_rows(Backend *backend, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                          size_t row_bytes, size_t rows) {
  CPU_FOR(rows * row_bytes >= 4 * CPU_PARALLEL_MIN, (size_t r = 0; r < rows; r++),
          memcpy((char *)dst + r * dst_pitch, (const char *)src + r * src_pitch, row_bytes););
}

static void cpu_memset_zero(Backend *backend, void *dst, size_t bytes) {
  if (bytes) memset(dst, 0, bytes);
}

static void cpu_sync(Backend *backend) {}

static int cpu_memory_info(Backend *backend, size_t *free_bytes, size_t *total_bytes) {
  (void)backend;
  return host_memory_info(free_bytes, total_bytes);
}

static void cpu_reserve_workspace(Backend *backend, size_t bytes) {
  CpuContext *ctx = backend->ctx;
  if (bytes <= ctx->workspace_bytes) return;
  if (ctx->workspace) cpu_free(backend, ctx->workspace);
  ctx->workspace = NULL;
  ctx->workspace_bytes = 0;
  ctx->workspace = cpu_alloc(backend, bytes);
  ctx->workspace_bytes = bytes;
  backend->alloc_count++;
}

static size_t cpu_workspace_bytes(const Backend *backend) {
  return ((const CpuContext *)backend->ctx)->workspace_bytes;
}

// Lanes (backend_lanes) on two threads, one each, where every op in them runs on one thread anyway
// and touches no backend state: fp32 products that cpu_gemm_on_caller says run on the calling
// thread, and element-wise ops below their parallel thresholds or nested inside the lane's thread
// (OpenMP's default: nested regions get one thread; with nesting turned on, OMP_MAX_ACTIVE_LEVELS,
// they would start teams of their own: the same bits, more threads than cores). The same loops
// run either way, so the bits are the same. The lanes overlap where each op alone is too small to
// split: CartPole's update (64-row minibatches, [64, 64] networks) runs the actor's and the
// critic's passes side by side, 81-85k -> 101-107k steps/s at 2 threads (2-core AMD EPYC). Below
// CPU_LANES_MIN_MACS the fork costs more than the overlap saves (one env's rollout step: 10-20 %
// slower in lanes). Not under PPO_CPU_STRICT (a lane's guard would close the memory the other is
// using).
#define CPU_LANES_MIN_MACS 16384.0  // 2^14: a 64 x 64 layer at 4 rows

static int cpu_lanes_together(const Backend *backend, int lanes, NnDtype dtype, double largest_gemm_macs) {
  const CpuContext *ctx = backend->ctx;
  return !ctx->strict && largest_gemm_macs >= CPU_LANES_MIN_MACS && cpu_gemm_on_caller(dtype, largest_gemm_macs) &&
         !omp_in_parallel() && omp_get_max_threads() >= lanes;
}

static int cpu_run_lanes(Backend *backend, int lanes, void (*run)(int lane, void *arg), void *arg) {
  (void)backend;
  int together = 0;
#pragma omp parallel num_threads(lanes)
  {
    if (omp_get_num_threads() == lanes) {
      if (omp_get_thread_num() == 0) together = 1;
      run(omp_get_thread_num(), arg);
    } else if (omp_get_thread_num() == 0) {  // a smaller team than asked for: lane after lane
      for (int i = 0; i < lanes; i++) run(i, arg);
    }
  }
  return together;
}

// --- element-wise -------------------------------------------------------------------------------------------

// dst[at .. at + n) = src rounded to dtype; one loop per dtype so each vectorises.
CPU_VECTOR_CLONES static void store_lp_row(void *dst, NnDtype dtype, size_t at, const float *src, int n) {
  if (dtype == NN_F16) {
    uint16_t *d = (uint16_t *)dst + at;
    for (int i = 0; i < n; i++) d[i] = nn_f32_to_f16(src[i]);
  } else if (dtype == NN_BF16) {
    uint16_t *d = (uint16_t *)dst + at;
    for (int i = 0; i < n; i++) d[i] = nn_f32_to_bf16(src[i]);
  } else {
    memcpy((float *)dst + at, src, (size_t)n * sizeof(float));
  }
}

void cpu_store_lp(void *dst, NnDtype dtype, size_t at, const float *src, int n) {
  store_lp_row(dst, dtype, at, src, n);
}

// The shared per-element functions (nn/ops_math.h), one loop per activation with act a constant in
// it, so each inlines to its own vectorised loop; a further activation takes the last, generic one.
CPU_VECTOR_CLONES static void bias_act_row(float *out, const float *in, const float *bias, int H, int act) {
  if (act == NN_ACT_TANH)
    for (int h = 0; h < H; h++) out[h] = nn_act_forward(in[h] + bias[h], NN_ACT_TANH);
  else if (act == NN_ACT_RELU)
    for (int h = 0; h < H; h++) out[h] = nn_act_forward(in[h] + bias[h], NN_ACT_RELU);
  else if (act == NN_ACT_NONE)
    for (int h = 0; h < H; h++) out[h] = in[h] + bias[h];
  else
    for (int h = 0; h < H; h++) out[h] = nn_act_forward(in[h] + bias[h], act);
}

// Row pieces of CPU_COLUMN_BLOCK columns go through a stack buffer when the storage is low precision.
#define CPU_COLUMN_BLOCK 256

static void cpu_bias_act_forward(Backend *backend, void *out, NnDtype out_dtype, const float *in, const float *bias,
                                 int B, int H, int act) {
  // tanh costs about 0.45 ns per element per core (a rational function): 16,384 elements are ~7 us
  // of work, where a bias add alone takes the whole CPU_PARALLEL_MIN to be worth a fork. The
  // rollout's batch of 32 (32 x 2048 elements) on both cores: ppo-bench backend rollout inference
  // fp32 +7-10 %, bf16 +15 % (3 alternating runs on the 2-core machine).
  size_t parallel_min = act == NN_ACT_TANH ? CPU_PARALLEL_MIN / 8 : CPU_PARALLEL_MIN;
  CPU_FOR((size_t)B * H >= parallel_min, (int b = 0; b < B; b++), {
    size_t row = (size_t)b * H;
    if (out_dtype == NN_F32) {
      bias_act_row((float *)out + row, in + row, bias, H, act);
      continue;
    }
    float tmp[CPU_COLUMN_BLOCK];
    for (int h0 = 0; h0 < H; h0 += CPU_COLUMN_BLOCK) {
      int n = H - h0 < CPU_COLUMN_BLOCK ? H - h0 : CPU_COLUMN_BLOCK;
      bias_act_row(tmp, in + row + h0, bias + h0, n, act);
      store_lp_row(out, out_dtype, row + h0, tmp, n);
    }
  });
}

// d[i] = dout[i] * act'(y[i]); sum[i] += d[i].
CPU_VECTOR_CLONES static void act_backward_row(float *d, float *sum, const float *dout, const float *y, int n,
                                               int act) {
  if (act == NN_ACT_TANH)  // as bias_act_row: a loop per activation over the shared function
    for (int i = 0; i < n; i++) d[i] = nn_act_backward(dout[i], y[i], NN_ACT_TANH);
  else if (act == NN_ACT_RELU)
    for (int i = 0; i < n; i++) d[i] = nn_act_backward(dout[i], y[i], NN_ACT_RELU);
  else if (act == NN_ACT_NONE)
    for (int i = 0; i < n; i++) d[i] = dout[i];
  else
    for (int i = 0; i < n; i++) d[i] = nn_act_backward(dout[i], y[i], act);
  for (int i = 0; i < n; i++) sum[i] += d[i];
}

#if defined(__GNUC__) && defined(__x86_64__)
// fp16 -> fp32 eight at a time with F16C's vcvtph2ps, the values of nn_f16_to_f32 (exact) but for
// signalling NaNs, which the instruction quiets and nn_f16_to_f32 keeps: a group holding any NaN is
// redone by the scalar function, so the bits are always its own (test_nn_ops checks all 65,536).
// The scalar loop, even vectorised by the compiler, took several times longer (a branch per case).
__attribute__((target("avx,f16c"))) static int widen_f16c(float *dst, const uint16_t *src, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i)));
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)))
      for (int j = i; j < i + 8; j++) dst[j] = nn_f16_to_f32(src[j]);
    else
      _mm256_storeu_ps(dst + i, v);
  }
  return i;
}
#endif

CPU_VECTOR_CLONES static void widen_row_loop(float *dst, const uint16_t *src, NnDtype dtype, int n) {
  if (dtype == NN_F16)
    for (int i = 0; i < n; i++) dst[i] = nn_f16_to_f32(src[i]);
  else
    for (int i = 0; i < n; i++) dst[i] = nn_bf16_to_f32(src[i]);
}

void cpu_widen_row(float *dst, const uint16_t *src, NnDtype dtype, int n) {
  int done = 0;
#if defined(__GNUC__) && defined(__x86_64__)
  if (dtype == NN_F16 && cpu_f16c) done = widen_f16c(dst, src, n);
#endif
  widen_row_loop(dst + done, src + done, dtype, n - done);
}

// One pass, parallel over blocks of columns: each block walks the rows in order, so the bias
// gradient's sums have a fixed order for any thread count, and rows are read contiguously. With
// din_t, the block's rows also go to a local tile, CPU_ROW_TILE rows at a time, copied from there
// transposed into din_t (each column's run of rows one contiguous store). The tile's padded rows
// keep those column reads off one L1 set (rows of din are often a multiple of 4 KiB apart).
#define CPU_ROW_TILE 32
#define CPU_TILE_STRIDE (CPU_COLUMN_BLOCK * 4 + 64)  // bytes per tile row: a block of fp32 and a line

// A full tile of 16-bit values (32 rows) with AVX-512: one gather per 16 rows reads the 32-bit pairs
// (columns h, h + 1) of each row, and two word permutes split the pairs into column h's and column
// h + 1's 32 rows, each one aligned 64-byte line of din_t written with a streaming store (no read
// of the line first; din_t is megabytes, past this core's cache, before the dW GEMM reads it). Pure
// data movement: the bits are the scalar loop's. bf16 headline step at B 1024 on the 2-core AMX
// machine (PPO_PROFILE): bias_act_backward_t 686 us per call with the scalar loop, 538 with the
// loop vectorised by the compiler, 387 with this; the step's median over 6 alternating runs 41.6
// against 40.2 ms.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define CPU_HAVE_AVX512_TRANSPOSE 1
__attribute__((target("avx512f,avx512bw"))) static int transpose_tile16_avx512(uint16_t *dst, const unsigned char *tile,
                                                                               int B, int n) {
  const __m512i rows = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                          _mm512_set1_epi32(CPU_TILE_STRIDE));
  const __m512i rows_hi = _mm512_add_epi32(rows, _mm512_set1_epi32(16 * CPU_TILE_STRIDE));
  // word r of column h: word 2r of the pairs gathered from rows 0-15 (a), then of rows 16-31 (b, from 32)
  static const short lo[32] = {0,  2,  4,  6,  8,  10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
                               32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62};
  const __m512i even = _mm512_loadu_si512(lo), odd = _mm512_add_epi16(even, _mm512_set1_epi16(1));
  int h = 0;
  for (; h + 1 < n; h += 2) {
    const unsigned char *base = tile + (size_t)h * 2;
    __m512i a = _mm512_i32gather_epi32(rows, base, 1), b = _mm512_i32gather_epi32(rows_hi, base, 1);
    _mm512_stream_si512((void *)(dst + (size_t)h * B), _mm512_permutex2var_epi16(a, even, b));
    _mm512_stream_si512((void *)(dst + (size_t)(h + 1) * B), _mm512_permutex2var_epi16(a, odd, b));
  }
  _mm_sfence();  // the streamed lines are ordered before anything this thread does next
  return h;
}
#endif

CPU_VECTOR_CLONES static void transpose_tile(void *din_t, const unsigned char *tile, size_t es, int B, int b0, int rows,
                                             int h0, int n) {
  if (es == 2) {
    uint16_t *dst = (uint16_t *)din_t + (size_t)h0 * B + b0;
    const uint16_t *t16 = (const uint16_t *)(const void *)tile;
    int done = 0;
#ifdef CPU_HAVE_AVX512_TRANSPOSE
    if (rows == CPU_ROW_TILE && ((uintptr_t)dst | (size_t)B * 2) % 64 == 0 && cpu_avx512)
      done = transpose_tile16_avx512(dst, tile, B, n);
#endif
    for (int h = done; h < n; h++)
      for (int r = 0; r < rows; r++) dst[(size_t)h * B + r] = t16[r * (CPU_TILE_STRIDE / 2) + h];
  } else {
    float *dst = (float *)din_t + (size_t)h0 * B + b0;
    for (int h = 0; h < n; h++)
      for (int r = 0; r < rows; r++) {
        float v;
        memcpy(&v, tile + (size_t)r * CPU_TILE_STRIDE + (size_t)h * 4, 4);
        dst[(size_t)h * B + r] = v;
      }
  }
}

// The column-block walk reads each row's piece from a different 4 KiB page (rows of 1024 or more
// floats), where the hardware prefetchers stop: the pieces CPU_PREFETCH_ROWS rows ahead are
// requested by hand (a hint; no effect on the results).
#define CPU_PREFETCH_ROWS 4

static inline void prefetch_lines(const void *p, NnDtype dtype, size_t at, int n) {
#if defined(__GNUC__)
  size_t es = nn_dtype_size(dtype);
  for (int i = 0; i < n; i += (int)(64 / es)) __builtin_prefetch((const char *)p + (at + (size_t)i) * es);
#else
  (void)p, (void)dtype, (void)at, (void)n;
#endif
}

// Row `at`'s n values of x (fp32, or 16-bit bits of dtype) as fp32: x itself, or widened into buf.
static inline const float *row_f32(float *buf, const void *x, NnDtype dtype, size_t at, int n) {
  if (dtype == NN_F32) return (const float *)x + at;
  cpu_widen_row(buf, (const uint16_t *)x + at, dtype, n);
  return buf;
}

static void cpu_bias_act_backward(Backend *backend, void *din, void *din_t, NnDtype din_dtype, float *dbias,
                                  const void *dout, NnDtype dout_dtype, const void *out, NnDtype out_dtype, int B,
                                  int H, int act) {
  int blocks = (H + CPU_COLUMN_BLOCK - 1) / CPU_COLUMN_BLOCK;
  size_t es = nn_dtype_size(din_dtype);
  CPU_FOR((size_t)B * H >= CPU_PARALLEL_MIN && blocks > 1, (int blk = 0; blk < blocks; blk++), {
    int h0 = blk * CPU_COLUMN_BLOCK, n = H - h0 < CPU_COLUMN_BLOCK ? H - h0 : CPU_COLUMN_BLOCK;
    float sum[CPU_COLUMN_BLOCK] = {0}, y[CPU_COLUMN_BLOCK], g[CPU_COLUMN_BLOCK], d[CPU_COLUMN_BLOCK];
    _Alignas(64) unsigned char tile[CPU_ROW_TILE * CPU_TILE_STRIDE];  // 34 KiB; used with din_t only
    for (int b0 = 0; b0 < B; b0 += CPU_ROW_TILE) {
      int b1 = b0 + CPU_ROW_TILE < B ? b0 + CPU_ROW_TILE : B;
      for (int b = b0; b < b1; b++) {
        size_t at = (size_t)b * H + h0;
        if (b + CPU_PREFETCH_ROWS < B) {
          prefetch_lines(dout, dout_dtype, at + (size_t)CPU_PREFETCH_ROWS * H, n);
          prefetch_lines(out, out_dtype, at + (size_t)CPU_PREFETCH_ROWS * H, n);
        }
        const float *yrow = row_f32(y, out, out_dtype, at, n);
        const float *grow = row_f32(g, dout, dout_dtype, at, n);  // read before din's row is written
        float *drow = din_dtype == NN_F32 && din ? (float *)din + at : d;
        act_backward_row(drow, sum, grow, yrow, n, act);
        if (!din_t) {
          if (din_dtype != NN_F32) store_lp_row(din, din_dtype, at, d, n);
          continue;
        }
        unsigned char *trow = tile + (size_t)(b - b0) * CPU_TILE_STRIDE;
        if (din_dtype != NN_F32)
          store_lp_row(trow, din_dtype, 0, d, n);
        else
          memcpy(trow, drow, (size_t)n * 4);
        if (din_dtype != NN_F32 && din) memcpy((unsigned char *)din + at * es, trow, (size_t)n * es);
      }
      if (din_t) transpose_tile(din_t, tile, es, B, b0, b1 - b0, h0, n);
    }
    for (int h = 0; h < n; h++) dbias[h0 + h] += sum[h];
  });
}

static int action_index(float a, int A) {
  int j = (int)a;
  CHECK(j >= 0 && j < A && (float)j == a, "categorical action must be an integer in [0, A)");
  return j;
}

static void cpu_categorical_forward(Backend *backend, float *logp, float *entropy, const float *logits,
                                    const float *actions, int B, int A) {
  for (int b = 0; b < B; b++) {
    const float *z = logits + (size_t)b * A;
    float lse = nn_logsumexp(z, A);
    logp[b] = z[action_index(actions[b], A)] - lse;
    if (entropy) entropy[b] = nn_categorical_entropy(z, A, lse);
  }
}

static void cpu_categorical_backward(Backend *backend, float *dlogits, const float *dlogp, const float *dentropy,
                                     const float *logits, const float *actions, int B, int A) {
  for (int b = 0; b < B; b++)
    nn_categorical_backward_row(dlogits + (size_t)b * A, logits + (size_t)b * A, A, action_index(actions[b], A),
                                dlogp[b], dentropy ? dentropy[b] : 0.0f);
}

static void cpu_categorical_sample(Backend *backend, float *actions, float *logp, const float *logits,
                                   const float *uniforms, int B, int A) {
  for (int b = 0; b < B; b++) {
    const float *z = logits + (size_t)b * A;
    float lse = nn_logsumexp(z, A);
    int a = nn_categorical_sample(z, A, lse, uniforms[b]);
    actions[b] = (float)a;
    if (logp) logp[b] = z[a] - lse;
  }
}

static void cpu_gaussian_forward(Backend *backend, float *logp, float *entropy, const float *mean, const float *log_std,
                                 const float *actions, int B, int A) {
  for (int b = 0; b < B; b++) {
    size_t row = (size_t)b * A;
    float h;
    logp[b] = nn_gaussian_row_forward(actions + row, mean + row, log_std, A, &h);
    if (entropy) entropy[b] = h;
  }
}

static void cpu_gaussian_backward(Backend *backend, float *dmean, float *dlog_std, const float *dlogp,
                                  const float *dentropy, const float *mean, const float *log_std, const float *actions,
                                  int B, int A) {
  for (int j = 0; j < A; j++) {
    float inv_std = expf(-log_std[j]);
    double acc = 0.0;  // in double as the CUDA kernel (float lost precision over 2^20 rows: test_nn_ops)
    for (int b = 0; b < B; b++) {
      size_t i = (size_t)b * A + j;
      acc += nn_gaussian_backward_element(actions[i], mean[i], inv_std, dlogp[b], dentropy ? dentropy[b] : 0.0f,
                                          &dmean[i]);
    }
    dlog_std[j] = (float)((double)dlog_std[j] + acc);
  }
}

static void cpu_gaussian_sample(Backend *backend, float *actions, float *logp, const float *mean, const float *log_std,
                                const float *uniforms, int B, int A) {
  for (int b = 0; b < B; b++) {
    size_t row = (size_t)b * A;
    float s = nn_gaussian_row_sample(actions + row, mean + row, log_std, uniforms + 2 * row, A);
    if (logp) logp[b] = s;
  }
}

static void cpu_mse_forward(Backend *backend, float *loss, const float *pred, const float *target, int B) {
  double s = 0.0;  // as the CUDA kernel: a float sum of 2^20 squares was 4.6e-4 off (test_nn_ops)
  for (int b = 0; b < B; b++) {
    float d = pred[b] - target[b];
    s += (double)d * d;
  }
  *loss = (float)(s / B);
}

static void cpu_mse_backward(Backend *backend, float *dpred, const float *dloss, const float *pred, const float *target,
                             int B) {
  float c = 2.0f * *dloss / (float)B;
  for (int b = 0; b < B; b++) dpred[b] = c * (pred[b] - target[b]);
}

// The rows a minibatch gathers are scattered over the rollout buffer (a random permutation: the
// headline's observations are 2 KiB rows of a 270 MiB buffer), so each starts with a cache miss.
// The copy of row b first asks for the cache lines of row b + GATHER_AHEAD, which then arrive
// while rows b .. b + GATHER_AHEAD - 1 are copied. Measured alternately, 3 runs each, configs/seed.ini
// with [64, 64] layers (synthetic env, fp32, one iteration, PPO_PROFILE): the minibatch gathers
// took 0.374-0.424 s without, 0.315-0.344 s with (2-core AMD EPYC); alone, 1024 rows of 2068
// bytes from 271 MiB took 170 us without, 128 with (4 or 2 rows ahead; 8 was slower).
#define GATHER_AHEAD 4

static inline void prefetch_row(const char *row, size_t row_bytes) {
  for (size_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(row + o, 0, 3);
  __builtin_prefetch(row + row_bytes - 1, 0, 3);  // the last line, when the row does not start on one
}

// The index is backend memory, so its bounds are checked here, where it can be read.
static void cpu_gather_rows(Backend *backend, void *out, const void *src, const int32_t *index, int B, size_t row_bytes,
                            int rows) {
  for (int b = 0; b < B; b++) CHECK(index[b] >= 0 && index[b] < rows, "backend_gather_rows: index out of range");
  const char *s = src;
  CPU_FOR((size_t)B * row_bytes >= CPU_PARALLEL_MIN * sizeof(float), (int b = 0; b < B; b++), {
    if (b + GATHER_AHEAD < B && row_bytes) prefetch_row(s + (size_t)index[b + GATHER_AHEAD] * row_bytes, row_bytes);
    memcpy((char *)out + (size_t)b * row_bytes, s + (size_t)index[b] * row_bytes, row_bytes);
  });
}

static void cpu_cast(Backend *backend, void *out, NnDtype to, const void *in, NnDtype from, size_t n) {
  if (to == from) {
    memmove(out, in, n * nn_dtype_size(to));
    return;
  }
  size_t blocks = (n + CPU_CAST_BLOCK - 1) / CPU_CAST_BLOCK;
  CPU_FOR(n >= CPU_PARALLEL_MIN, (size_t blk = 0; blk < blocks; blk++), {
    size_t lo = blk * CPU_CAST_BLOCK, len = lo + CPU_CAST_BLOCK < n ? CPU_CAST_BLOCK : n - lo;
    if (from == NN_F32) {
      store_lp_row(out, to, lo, (const float *)in + lo, (int)len);
    } else {
      float tmp[CPU_CAST_BLOCK];
      const uint16_t *src = (const uint16_t *)in + lo;
      cpu_widen_row(tmp, src, from, (int)len);
      store_lp_row(out, to, lo, tmp, (int)len);
    }
  });
}

CPU_VECTOR_CLONES static void scale_block(float *x, float alpha, size_t n) {
  for (size_t i = 0; i < n; i++) x[i] *= alpha;
}

static void cpu_scale(Backend *backend, float *x, float alpha, size_t n) {
  size_t blocks = (n + CPU_CAST_BLOCK - 1) / CPU_CAST_BLOCK;
  CPU_FOR(n >= CPU_PARALLEL_MIN, (size_t blk = 0; blk < blocks; blk++), {
    size_t lo = blk * CPU_CAST_BLOCK;
    scale_block(x + lo, alpha, lo + CPU_CAST_BLOCK < n ? CPU_CAST_BLOCK : n - lo);
  });
}

static void cpu_scale_by(Backend *backend, float *x, const float *alpha, size_t n) { cpu_scale(backend, x, *alpha, n); }

// --- reductions: CPU_CHUNKS fixed slices summed in double, then added in order ---------------------------------

#define CPU_CHUNKS 64
#define CPU_LANES 16  // independent partial sums per chunk: the adds pipeline and vectorise

// Sum of squares of x[lo .. hi) in double: element i goes to lane (i - lo) % CPU_LANES, the lanes
// are added in order at the end. The order is fixed by the data alone (not the ISA, not the
// threads), so every clone and thread count gives the same bits; one serial chain instead was
// bound by the add latency (5 ms over the headline's 5.4 M grads).
CPU_VECTOR_CLONES static double sum_squares_range(const float *x, size_t lo, size_t hi) {
  double lane[CPU_LANES] = {0};
  size_t i = lo;
  for (; i + CPU_LANES <= hi; i += CPU_LANES)
    for (int j = 0; j < CPU_LANES; j++) lane[j] += (double)x[i + j] * (double)x[i + j];
  for (int j = 0; i < hi; i++, j++) lane[j] += (double)x[i] * (double)x[i];
  double s = 0.0;
  for (int j = 0; j < CPU_LANES; j++) s += lane[j];
  return s;
}

static double sum_squares(const float *x, size_t n) {
  double partial[CPU_CHUNKS];
  size_t chunk = (n + CPU_CHUNKS - 1) / CPU_CHUNKS;
  CPU_FOR(n >= CPU_PARALLEL_MIN, (int c = 0; c < CPU_CHUNKS; c++), {
    size_t lo = (size_t)c * chunk, hi = lo + chunk < n ? lo + chunk : n;
    partial[c] = lo < hi ? sum_squares_range(x, lo, hi) : 0.0;
  });
  double total = 0.0;
  for (int c = 0; c < CPU_CHUNKS; c++) total += partial[c];
  return total;
}

// unscale_check's pass and sum_squares_range's accumulation in one: each element is unscaled, then
// squared into the lane sum_squares_range would use, so the chunks' sums are its bits.
CPU_VECTOR_CLONES static double unscale_sum_squares_range(float *x, size_t lo, size_t hi, size_t n_fp16, float inv,
                                                          int *bad) {
  double lane[CPU_LANES] = {0};
  int b = 0;
  size_t i = lo;
  for (; i + CPU_LANES <= hi; i += CPU_LANES)
    for (int j = 0; j < CPU_LANES; j++) {
      b |= nn_grad_overflowed(x[i + j], i + j, n_fp16);
      x[i + j] *= inv;
      lane[j] += (double)x[i + j] * (double)x[i + j];
    }
  for (int j = 0; i < hi; i++, j++) {
    b |= nn_grad_overflowed(x[i], i, n_fp16);
    x[i] *= inv;
    lane[j] += (double)x[i] * (double)x[i];
  }
  double s = 0.0;
  for (int j = 0; j < CPU_LANES; j++) s += lane[j];
  *bad |= b;
  return s;
}

static void cpu_unscale_clip_coef(Backend *backend, float *x, size_t n, size_t n_fp16, const float *scale,
                                  float *found_inf, float *total, float *coef, float max_norm) {
  float inv = nn_unscale_factor(*scale);
  double partial[CPU_CHUNKS];
  size_t chunk = (n + CPU_CHUNKS - 1) / CPU_CHUNKS;
  int bad = 0;
  CPU_FOR_OR(n >= CPU_PARALLEL_MIN, bad, (int c = 0; c < CPU_CHUNKS; c++), {
    size_t lo = (size_t)c * chunk, hi = lo + chunk < n ? lo + chunk : n;
    partial[c] = lo < hi ? unscale_sum_squares_range(x, lo, hi, n_fp16, inv, &bad) : 0.0;
  });
  if (bad) *found_inf = 1.0f;
  double sum = 0.0;
  for (int c = 0; c < CPU_CHUNKS; c++) sum += partial[c];
  float norm = (float)sqrt(sum);
  *total = norm;
  *coef = nn_clip_coef(norm, max_norm);
}

static void cpu_global_norm(Backend *backend, float *total, const float *x, size_t n) {
  *total = (float)sqrt(sum_squares(x, n));
}

static void cpu_clip_grad_norm(Backend *backend, float *total, float *x, size_t n, float max_norm) {
  float norm = (float)sqrt(sum_squares(x, n));
  if (total) *total = norm;
  float coef = nn_clip_coef(norm, max_norm);
  if (!(coef >= 1.0f)) cpu_scale(backend, x, coef, n);  // torch multiplies always: by 1 exactly, or by NaN
}

static void cpu_unscale_check(Backend *backend, float *x, size_t n, size_t n_fp16, const float *scale,
                              float *found_inf) {
  float inv = nn_unscale_factor(*scale);
  int bad = 0;
  CPU_FOR_OR(n >= CPU_PARALLEL_MIN, bad, (size_t i = 0; i < n; i++), {
    bad |= nn_grad_overflowed(x[i], i, n_fp16);
    x[i] *= inv;
  });
  if (bad) *found_inf = 1.0f;
}

static void cpu_grad_scaler_update(Backend *backend, float *scale, int32_t *tracker, const float *found_inf,
                                   double growth_factor, double backoff_factor, int32_t growth_interval) {
  nn_grad_scaler_update(scale, tracker, *found_inf, growth_factor, backoff_factor, growth_interval);
}

CPU_VECTOR_CLONES static void adam_block(float *restrict p, const float *restrict g, float *restrict m,
                                         float *restrict v, size_t n, float gscale, float weight1, float beta2,
                                         float one_minus_beta2, float neg_step_size, float bc2_sqrt, float eps) {
  for (size_t i = 0; i < n; i++)
    nn_adam_element(&p[i], &m[i], &v[i], g[i] * gscale, weight1, beta2, one_minus_beta2, neg_step_size, bc2_sqrt, eps);
}

static void cpu_clip_coef(Backend *backend, float *total, float *coef, const float *x, size_t n, float max_norm) {
  float norm = (float)sqrt(sum_squares(x, n));
  *total = norm;
  *coef = nn_clip_coef(norm, max_norm);
}

static void cpu_adam_step(Backend *backend, float *params, const float *grads, float *m, float *v, size_t n,
                          AdamHyper hyper, const double *lr_scale, int32_t *step, const float *found_inf,
                          const float *grad_scale, void *params_lp, NnDtype lp_dtype) {
  if (found_inf && *found_inf != 0.0f) return;
  NnAdamScalars s = nn_adam_scalars(nn_adam_lr(hyper.lr, lr_scale), hyper.beta1, hyper.beta2, hyper.eps, ++*step);
  float gscale = grad_scale ? *grad_scale : 1.0f;
  size_t blocks = (n + CPU_CAST_BLOCK - 1) / CPU_CAST_BLOCK;
  CPU_FOR(n >= CPU_PARALLEL_MIN, (size_t blk = 0; blk < blocks; blk++), {
    size_t lo = blk * CPU_CAST_BLOCK, len = lo + CPU_CAST_BLOCK < n ? CPU_CAST_BLOCK : n - lo;
    adam_block(params + lo, grads + lo, m + lo, v + lo, len, gscale, s.weight1, s.beta2, s.one_minus_beta2,
               s.neg_step_size, s.bc2_sqrt, s.eps);
    if (params_lp) store_lp_row(params_lp, lp_dtype, lo, params + lo, (int)len);
  });
}

static void cpu_uniform(Backend *backend, float *out, size_t n, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  rng_fill_uniform(out, n, seed, subsequence, offset);
}

static const BackendOps cpu_ops = {
    .close = cpu_close,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .memset_zero = cpu_memset_zero,
    .copy = cpu_copy,
    .copy_rows = cpu_copy_rows,
    .sync = cpu_sync,
    .memory_info = cpu_memory_info,
    .reserve_workspace = cpu_reserve_workspace,
    .workspace_bytes = cpu_workspace_bytes,
    .lanes_together = cpu_lanes_together,
    .run_lanes = cpu_run_lanes,
    .guard = cpu_guard,
    .gemm = cpu_gemm,
    .weights_changed = cpu_weights_changed,
    .weights_bytes = cpu_weights_bytes,
    .bias_act_forward = cpu_bias_act_forward,
    .bias_act_backward = cpu_bias_act_backward,
    .categorical_forward = cpu_categorical_forward,
    .categorical_backward = cpu_categorical_backward,
    .categorical_sample = cpu_categorical_sample,
    .gaussian_forward = cpu_gaussian_forward,
    .gaussian_backward = cpu_gaussian_backward,
    .gaussian_sample = cpu_gaussian_sample,
    .mse_forward = cpu_mse_forward,
    .mse_backward = cpu_mse_backward,
    .gather_rows = cpu_gather_rows,
    .cast = cpu_cast,
    .scale = cpu_scale,
    .scale_by = cpu_scale_by,
    .global_norm = cpu_global_norm,
    .clip_grad_norm = cpu_clip_grad_norm,
    .unscale_check = cpu_unscale_check,
    .grad_scaler_update = cpu_grad_scaler_update,
    .clip_coef = cpu_clip_coef,
    .unscale_clip_coef = cpu_unscale_clip_coef,
    .adam_step = cpu_adam_step,
    .uniform = cpu_uniform,
    .gae = cpu_gae,
    .permutation_scratch_bytes = cpu_permutation_scratch_bytes,
    .permutation = cpu_permutation,
    .ppo_loss = cpu_ppo_loss,
    .explained_variance = cpu_explained_variance,
    .advantage_count_sum = cpu_advantage_count_sum,
    .advantage_sq_dev = cpu_advantage_sq_dev,
    .advantage_normalize = cpu_advantage_normalize,
};

Backend *backend_cpu_open(void) {
  Backend *backend = CHECK_ALLOC(sizeof *backend, "cpu backend");
  memset(backend, 0, sizeof *backend);
  CpuContext *ctx = CHECK_ALLOC(sizeof *ctx, "cpu backend context");
  memset(ctx, 0, sizeof *ctx);
  backend->name = "cpu";
  const char *strict = getenv("PPO_CPU_STRICT");
  ctx->strict = strict && strcmp(strict, "1") == 0;
  backend->ops = &cpu_ops;
  backend->ctx = ctx;
  const char *no_avx512 = getenv("PPO_CPU_NO_AVX512");
  cpu_avx512 = cpu_f16c = 0;
#if defined(__GNUC__) && defined(__x86_64__)
  __builtin_cpu_init();
  int scalar_only = no_avx512 && strcmp(no_avx512, "1") == 0;
  cpu_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && !scalar_only;
  // F16C from CPUID (clang's __builtin_cpu_supports does not know "f16c"); AVX's OS support from the builtin
  unsigned eax, ebx, ecx, edx;
  int f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
  cpu_f16c = f16c && __builtin_cpu_supports("avx") && !scalar_only;
#endif
  (void)no_avx512;
  cpu_gemm_open(backend);
  return backend;
}
