// nn/backend_cpu_gemm.c: GEMM on the CPU, fp32 accumulation in every precision.
//
// Libraries (bench/results/ has the measurements behind the choice):
//   fp32: oneDNN's matmul (one OpenMP thread pool shared with our element-wise loops) when built
//         with oneDNN, else OpenBLAS's cblas_sgemm. PPO_CPU_GEMM=openblas in the environment forces
//         OpenBLAS (for comparisons).
//   bf16: oneDNN's matmul on bf16 inputs (AMX / AVX512-BF16 kernels); without oneDNN, operands are
//         widened to fp32 in the workspace and multiplied by sgemm (exact products, same sums).
//   fp16: storage emulation: operands widened to fp32 in the workspace, then the fp32 path.
// Shapes those kernels run badly take other routes, each measured where it is defined: fp32
// products of one row go to sgemv (sgemv_row), small fp32 products with B transposed are run NN
// on a transposed copy (small_sgemm), and products with K <= 4 and wide rows use our own loop
// (gemm_thin).
// Why oneDNN for fp32 too: on the 2-core AMX machine both reach ~290 GFLOP/s on large shapes, but
// oneDNN is faster at the rollout's batch 32 (190 vs 130 GFLOP/s) and shares our OpenMP threads,
// where OpenBLAS's pthread build competes with them: the full update step measured 7130 samples/s
// against 5960 (pthread build) and 6770 (OpenMP build, libopenblas0-openmp), rollout inference
// 15700 against 6800 / 12200 (bench/results/*-blas-choice.txt). OpenBLAS's core type can only be
// chosen before it loads (OPENBLAS_CORETYPE), so a fallback to kernels without AVX-512 is reported.
// Small fp32 products (at most SMALL_GEMM_MACS = 2^18 multiply-adds: a 64-64 network's every GEMM
// at minibatch 64, the heads of the big one) go to OpenBLAS even with oneDNN: oneDNN's fixed cost
// per call (primitive lookup, scratchpad, stream wait) outweighs the arithmetic there. Measured
// alternately 3 times on the 2-core machine (2026-11-21), when OpenBLAS still ran products this
// small on the calling thread by its own rule (M N K <= 65536 x 4; since 2026-11-28 cpu_gemm_open
// keeps it on one thread for every product): CartPole (configs/cartpole.ini) 62.0-64.2k steps/s
// against 46.9-48.8k with oneDNN for everything, configs/default.ini 24.4-26.4k against 23.8-24.8k.
// A threshold of 2^24 measured the same but then handed OpenBLAS products it split over its own
// threads; the headline network's are all above 2^24.
// oneDNN primitives are created once per shape and cached; the cache is the only state.
#include <cblas.h>
#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/check.h"
#include "nn/backend_cpu.h"

#define SMALL_GEMM_MACS 262144.0  // 2^18: up to this, fp32 GEMMs take OpenBLAS (see above)

#ifdef PPO_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.h>

#define DNNL_CHECK(call) CHECK((call) == dnnl_success, "oneDNN call failed (unsupported shape or out of memory)")
#define GEMM_CACHE_MAX 128

typedef struct {
  NnDtype dtype, c_dtype;
  int trans_a, trans_b, M, N, K, swap;
  float alpha, beta;
  int packed;             // the weights in oneDNN's layout (a PackedB's: the same for every W of this K, N)
  dnnl_primitive_t prim;  // NULL: oneDNN wants another layout for this M than the PackedB's (use B plain)
  dnnl_memory_t a, b, c;
} GemmEntry;

// A bf16 weight matrix W (rows, cols) kept in oneDNN's AMX layout for each way GEMMs read it
// (backend_weights_changed): oneDNN otherwise lays op(B) out again inside every matmul call.
// The layout written here is oneDNN 2.6's BA16a64b2a for op(B) (K, N): blocks of 32 x 64, the
// blocks of one 64-column strip in k order, the strips in n order; inside a block 16 rows of
// 64 (k, k + 1) pairs. It is used only where oneDNN's choice (queried) is exactly that layout.
typedef struct {
  int K, N, ok;  // ok: oneDNN chose the layout written here for this op(B)
  int stale;     // W changed since buf was written: laid out again at the next GEMM that uses buf
  dnnl_memory_desc_t md;
  uint16_t *buf;
} PackedB;

#endif

// A weight matrix W (rows, cols) registered by backend_weights_changed, with the copies of it this
// backend keeps for the GEMMs that read it as B (x W^T and dy W): each copy is laid out again,
// lazily, at the first GEMM after W changed.
//   fp16: W widened to fp32 (exact), which every fp16 product with B = W reads instead of widening W
//         per call (fp16 is storage emulation here: the product runs in fp32 on widened operands).
//         At the rollout's batch 32 widening W was most of the work: headline rollout inference
//         7,370 samples/s against fp32's 17,740 (AMD EPYC Zen 4, 2 cores, 2026-11-28).
//   bf16: W in oneDNN's layout (PackedB above), where oneDNN picks that layout.
typedef struct {
  const uint16_t *w;
  NnDtype dtype;
  int rows, cols;
  float *wide;     // fp16: W widened (rows x cols floats), or NULL
  int wide_stale;  // W changed since wide was written
#ifdef PPO_HAVE_ONEDNN
  PackedB fwd, bwd;  // x W^T: op(B) = W^T (K = cols, N = rows), trans_b; dy W: op(B) = W (K = rows, N = cols)
#endif
} WeightPack;

#define WEIGHT_PACKS_MAX 64

struct CpuGemm {
  int use_onednn;
  WeightPack packs[WEIGHT_PACKS_MAX];
  int n_packs;
#ifdef PPO_HAVE_ONEDNN
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  GemmEntry cache[GEMM_CACHE_MAX];
  int cache_used, cache_next;
#endif
};

// Pack i leaves the register, its copies freed (the last pack takes its slot).
static void weight_pack_drop(CpuGemm *g, int i) {
  WeightPack *p = &g->packs[i];
  free(p->wide);
#ifdef PPO_HAVE_ONEDNN
  free(p->fwd.buf), free(p->bwd.buf);
#endif
  *p = g->packs[--g->n_packs];
}

static WeightPack *weight_pack_find(CpuGemm *g, const void *w) {
  for (int i = 0; i < g->n_packs; i++)
    if (g->packs[i].w == w) return &g->packs[i];
  return NULL;
}

// A hint when OpenBLAS fell back to kernels without AVX-512 on a CPU that has it (DESIGN.md
// section 10: Debian's 0.3.21 does that on some recent Xeons, about 4x slower sgemm). On the
// project's Sapphire Rapids-class machine it reports SkylakeX, whose sgemm measured as fast as any
// other core type (bench/results/*-blas-choice.txt); on its AMD EPYC (Zen 4) machine, Cooperlake.
static const char *openblas_core_hint(void) {
  const char *core = openblas_get_corename();
  int avx512 = 0;
#if defined(__GNUC__) && defined(__x86_64__)
  __builtin_cpu_init();
  avx512 = __builtin_cpu_supports("avx512f");
#endif
  static const char *const avx512_cores[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
  if (!avx512 || !core) return "";
  for (size_t i = 0; i < sizeof avx512_cores / sizeof avx512_cores[0]; i++)
    if (strcasecmp(core, avx512_cores[i]) == 0) return "";
  return " (OpenBLAS chose a core without AVX-512 kernels on an AVX-512 CPU: set OPENBLAS_CORETYPE=SkylakeX)";
}

// OPENBLAS_VERSION is " OpenBLAS 0.3.21 ": without the padding.
static const char *openblas_version(char *buf, size_t size) {
  const char *v = OPENBLAS_VERSION;
  while (*v == ' ') v++;
  snprintf(buf, size, "%s", v);
  for (size_t n = strlen(buf); n > 0 && buf[n - 1] == ' '; n--) buf[n - 1] = '\0';
  return buf;
}

void cpu_gemm_open(Backend *backend) {
  CpuContext *ctx = backend->ctx;
  CpuGemm *g = CHECK_ALLOC(sizeof *g, "gemm state");
  memset(g, 0, sizeof *g);
  ctx->gemm = g;
  const char *force = getenv("PPO_CPU_GEMM");
  char version[64];
  // OpenBLAS runs on the calling thread, always: its own threads must never start. Products too
  // large for one thread are split over OpenMP's threads (sgemm_team). Its threads, spinning against
  // OpenMP's, once made a [64, 64] network's 1 x 64 x 1024 (t) value-head gradient take 951 us
  // instead of ~10 (its sgemv threads from 2304 x 4 matrix elements on; configs/seed.ini with
  // [64, 64] layers, fp32: 19.7k steps/s, 46.0k with OpenBLAS on one thread).
  openblas_set_num_threads(1);
#ifdef PPO_HAVE_ONEDNN
  g->use_onednn = !(force && strcmp(force, "openblas") == 0);
  DNNL_CHECK(dnnl_engine_create(&g->engine, dnnl_cpu, 0));
  DNNL_CHECK(dnnl_stream_create(&g->stream, g->engine, dnnl_stream_default_flags));
  const dnnl_version_t *v = dnnl_version();
  snprintf(backend->describe, sizeof backend->describe,
           "cpu: GEMM fp32 %s, bf16 oneDNN %d.%d.%d matmul (fp16 widened to fp32); %s core %s%s",
           g->use_onednn ? "oneDNN matmul" : "OpenBLAS sgemm on OpenMP's threads", v->major, v->minor, v->patch,
           openblas_version(version, sizeof version), openblas_get_corename(),
           g->use_onednn ? "" : openblas_core_hint());
#else
  (void)force;
  snprintf(backend->describe, sizeof backend->describe,
           "cpu: GEMM %s sgemm on OpenMP's threads (core %s); bf16 and fp16 widened to fp32%s",
           openblas_version(version, sizeof version), openblas_get_corename(), openblas_core_hint());
#endif
}

void cpu_gemm_close(CpuContext *ctx) {
  CpuGemm *g = ctx->gemm;
  if (!g) return;
  while (g->n_packs > 0) weight_pack_drop(g, 0);
#ifdef PPO_HAVE_ONEDNN
  for (int i = 0; i < g->cache_used; i++) {
    if (g->cache[i].prim) dnnl_primitive_destroy(g->cache[i].prim);
    dnnl_memory_destroy(g->cache[i].a);
    dnnl_memory_destroy(g->cache[i].b);
    dnnl_memory_destroy(g->cache[i].c);
  }
  dnnl_stream_destroy(g->stream);
  dnnl_engine_destroy(g->engine);
#endif
  free(g);
  ctx->gemm = NULL;
}

// C (M, N) = alpha op(A) op(B) + beta C, row-major, with the leading dimensions of the whole
// matrices (a block of C reads rows or columns of op(A) and op(B) in place).
static void sgemm_ld(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha,
              A, lda, B, ldb, beta, C, ldc);
}

// OpenBLAS on the calling thread (it always has one thread here: cpu_gemm_open).
static void sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, const float *B,
                  float beta, float *C) {
  sgemm_ld(trans_a, trans_b, M, N, K, alpha, A, trans_a ? M : K, B, trans_b ? K : N, beta, C, N);
}

// OpenBLAS's large products on OpenMP's threads: C split into one block per thread along its
// longer side (whole rows or columns of 16-float multiples), each block one single-threaded sgemm
// that reads its rows of op(A) or columns of op(B) in place. The bits depend on the thread count
// (as oneDNN's do): OpenBLAS picks its small-matrix kernel, which sums in another order, by the
// block's size (300 x 40 x 100 in one block and in two differ in the last bit). OpenBLAS's own
// thread pool (the pthread build Debian installs) is never used: its threads, spinning between
// products against OpenMP's spinning threads, made an AR(1) run (configs/ar1.ini, 100k steps,
// [64, 64], PPO_CPU_GEMM=openblas) take 5.7-9.5 s against 1.4-2.3 s this way, the same as with
// oneDNN; the headline networks' update step measured the same, their batch-32 inference 4,200-5,300
// against 6,900-7,200 samples/s (2-core AMD EPYC, bench/results/20261128T210339Z-openblas-team-ab.txt).
// Products below CPU_GEMM_SERIAL_MACS (cpu_gemm gives them one thread), and any inside a parallel
// region, run on the calling thread.
static void sgemm_team(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, const float *B,
                       float beta, float *C) {
  const int lda = trans_a ? M : K, ldb = trans_b ? K : N, by_cols = N >= M, side = by_cols ? N : M;
  int blocks = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (blocks > side / 16) blocks = side / 16;
  if (blocks <= 1) {
    sgemm(trans_a, trans_b, M, N, K, alpha, A, B, beta, C);
    return;
  }
  const int step = side / 16 / blocks * 16;  // block b: [b step, (b + 1) step), the last one to side
#pragma omp parallel for schedule(static, 1) num_threads(blocks)
  for (int b = 0; b < blocks; b++) {
    const int lo = b * step, n = (b == blocks - 1 ? side : lo + step) - lo;
    if (by_cols)  // columns lo.. of C and of op(B): B (K, N) from column lo, B^T (N, K) from row lo
      sgemm_ld(trans_a, trans_b, M, n, K, alpha, A, lda, B + (trans_b ? (size_t)lo * K : (size_t)lo), ldb, beta, C + lo,
               N);
    else  // rows lo.. of C and of op(A): A (M, K) from row lo, A^T (K, M) from column lo
      sgemm_ld(trans_a, trans_b, n, N, K, alpha, A + (trans_a ? (size_t)lo : (size_t)lo * K), lda, B, ldb, beta,
               C + (size_t)lo * N, N);
  }
}

// Small products with B transposed (x W^T: every forward GEMM of a small network) reach only 90-100
// GFLOP/s on OpenBLAS 0.3.21's small-matrix NT kernel at 64 x 64 x 64, where its NN kernel reaches
// 150-180. B (N, K) is therefore transposed onto the stack and multiplied NN: 64 x 64 x 64 (t)
// 5.7 -> 3.7 us, 64 x 64 x 4 (t) 0.67 -> 0.37 us alone (transpose_f32 below).
#define SMALL_NT_MAX_FLOATS 16384  // B's size limit: 64 KiB of stack

// d (C, R) = s (R, C)^T, in blocks of 16 rows of s: the block (16 C floats) stays in L1 while each
// row of d gets one whole cache line at a time (rows of d are often a multiple of 4 KiB apart, so a
// row-by-row column walk would thrash one L1 set). With AVX-512 a block's full 16-column tiles
// are transposed in registers (transpose16_avx512); the rest (and other CPUs) take the scalar
// loop, with the same values. Large ones (oneDNN's swapped products) run on OpenMP's threads.
#if defined(__GNUC__) && defined(__x86_64__)
// 16 x 16 32-bit words in registers (16 row loads, 64 shuffles, 16 stores): out[c][r] = in[r][c],
// the leading dimensions in words. It serves the float transposes below and the layout of bf16
// weights (pairs of bf16 as one word); gathers, 16 rows at a time, ran about 3x slower there.
__attribute__((target("avx512f"))) static void transpose16_avx512(void *out, size_t out_ld, const void *in,
                                                                  size_t in_ld) {
  __m512i r[16], t[16];
  for (int j = 0; j < 16; j++) r[j] = _mm512_loadu_si512((const void *)((const uint32_t *)in + j * in_ld));
  for (int i = 0; i < 8; i++) {  // lane L of t[2i]: words 4L, 4L + 1 of rows 2i, 2i + 1; t[2i + 1]: 4L + 2, 4L + 3
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) {  // lane L of r[4i + j]: word 4L + j of rows 4i .. 4i + 3
    r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int i = 0; i < 4; i++) {  // gather the lanes: then r[c] = word c of rows 0 .. 15
    t[i] = _mm512_shuffle_i32x4(r[i], r[4 + i], 0x88);
    t[4 + i] = _mm512_shuffle_i32x4(r[i], r[4 + i], 0xdd);
    t[8 + i] = _mm512_shuffle_i32x4(r[8 + i], r[12 + i], 0x88);
    t[12 + i] = _mm512_shuffle_i32x4(r[8 + i], r[12 + i], 0xdd);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm512_shuffle_i32x4(t[i], t[8 + i], 0x88);
    r[8 + i] = _mm512_shuffle_i32x4(t[i], t[8 + i], 0xdd);
    r[4 + i] = _mm512_shuffle_i32x4(t[4 + i], t[12 + i], 0x88);
    r[12 + i] = _mm512_shuffle_i32x4(t[4 + i], t[12 + i], 0xdd);
  }
  for (int c = 0; c < 16; c++) _mm512_storeu_si512((void *)((uint32_t *)out + c * out_ld), r[c]);
}

__attribute__((target("avx512f"))) static int transpose_block_avx512(float *d, const float *s, int R, int C, int i0) {
  int j = 0;
  for (; j + 16 <= C; j += 16) transpose16_avx512(d + (size_t)j * R + i0, (size_t)R, s + (size_t)i0 * C + j, (size_t)C);
  return j;
}
#endif

static void transpose_f32(float *restrict d, const float *restrict s, int R, int C) {
  int blocks = (R + 15) / 16, wide = cpu_avx512;
  CPU_FOR((size_t)R * C >= 65536 && blocks > 1, (int blk = 0; blk < blocks; blk++), {
    int i0 = blk * 16, i1 = i0 + 16 < R ? i0 + 16 : R, done = 0;
#if defined(__GNUC__) && defined(__x86_64__)
    if (wide && i1 - i0 == 16) done = transpose_block_avx512(d, s, R, C, i0);
#endif
    for (int j = done; j < C; j++)
      for (int i = i0; i < i1; i++) d[(size_t)j * R + i] = s[(size_t)i * C + j];
  });
  (void)wide;
}

static void small_sgemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, const float *B,
                        float beta, float *C) {
  if (trans_b && M >= 16 && N >= 16 && (size_t)N * K <= SMALL_NT_MAX_FLOATS) {
    _Alignas(64) float bt[SMALL_NT_MAX_FLOATS];
    transpose_f32(bt, B, N, K);
    sgemm(trans_a, 0, M, N, K, alpha, A, bt, beta, C);
    return;
  }
  sgemm(trans_a, trans_b, M, N, K, alpha, A, B, beta, C);
}

// One row (M = 1, a single env's inference: ppo-eval's backtests, CartPole's rollout) is a
// matrix-vector product: C^T = op(B)^T a, B's rows read in order. OpenBLAS's sgemv against the
// GEMM paths, us per call on the 2-core machine: 1 x 64 x 4 (t) 0.03 against 0.17, 1 x 512 x 24
// (t) 1.9 against 4.5, 1 x 512 x 1024 (t) 14 against 142 (oneDNN), 1 x 2048 x 4 (t) 1.0 against the
// thin kernel's 5.1; 1 x 64 x 64 (t) the same. At 2^20 multiply-adds and up (1 x 2048 x 517) the
// GEMM paths were as fast or faster.
#define GEMV_MAX_MACS 524288.0  // 2^19

static void sgemv_row(int trans_b, int N, int K, float alpha, const float *a, const float *B, float beta, float *C) {
  if (beta == 0.0f) memset(C, 0, (size_t)N * sizeof(float));  // C is not read: sgemv scales it by beta
  if (trans_b)                                                // B (N, K): C[j] = alpha B[j, :] . a + beta C[j]
    cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, alpha, B, K, a, 1, beta, C, 1);
  else  // B (K, N): C = alpha B^T a + beta C
    cblas_sgemv(CblasRowMajor, CblasTrans, K, N, alpha, B, N, a, 1, beta, C, 1);
}

#ifdef PPO_HAVE_ONEDNN
// swap: build C^T (N, M) = op(B)^T op(A)^T instead, into a plain scratch that the caller transposes
// into C. With few rows (the rollout's batch 32) oneDNN's kernels run the long weight side as the
// rows much faster: 1.5x in fp32, 2x in bf16 at (32, 1024, 2048) on the 2-core AMX machine. (A
// dst with transposed strides instead sends oneDNN 2.6 to its reference kernel, 1000x slower.)
// packed_b: weights in its layout (the entry's prim is NULL if oneDNN wants another for this shape).
static GemmEntry *gemm_entry(CpuGemm *g, NnDtype dtype, NnDtype c_dtype, int trans_a, int trans_b, int M, int N, int K,
                             float alpha, float beta, int swap, const PackedB *packed_b) {
  int packed = packed_b != NULL;
  for (int i = 0; i < g->cache_used; i++) {
    GemmEntry *e = &g->cache[i];
    if (e->dtype == dtype && e->c_dtype == c_dtype && e->trans_a == trans_a && e->trans_b == trans_b && e->M == M &&
        e->N == N && e->K == K && e->alpha == alpha && e->beta == beta && e->packed == packed)
      return e;
  }
  GemmEntry *e;
  if (g->cache_used < GEMM_CACHE_MAX) {
    e = &g->cache[g->cache_used++];
  } else {  // full: replace round robin
    e = &g->cache[g->cache_next];
    g->cache_next = (g->cache_next + 1) % GEMM_CACHE_MAX;
    if (e->prim) dnnl_primitive_destroy(e->prim);
    dnnl_memory_destroy(e->a);
    dnnl_memory_destroy(e->b);
    dnnl_memory_destroy(e->c);
  }
  dnnl_data_type_t in_type = dtype == NN_BF16 ? dnnl_bf16 : dnnl_f32;
  dnnl_dims_t a_dims = {M, K}, b_dims = {K, N}, c_dims = {M, N};
  dnnl_dims_t a_strides = {trans_a ? 1 : K, trans_a ? M : 1};
  dnnl_dims_t b_strides = {trans_b ? 1 : N, trans_b ? K : 1};
  dnnl_dims_t c_strides = {N, 1};
  if (swap) {  // src = op(B)^T (N, K), weights = op(A)^T (K, M), dst = C^T (N, M) over C's memory
    a_dims[0] = N, a_dims[1] = K, a_strides[0] = trans_b ? K : 1, a_strides[1] = trans_b ? 1 : N;
    b_dims[0] = K, b_dims[1] = M, b_strides[0] = trans_a ? M : 1, b_strides[1] = trans_a ? 1 : K;
    c_dims[0] = N, c_dims[1] = M, c_strides[0] = M, c_strides[1] = 1;
  }
  dnnl_memory_desc_t a_md, b_md, c_md;
  DNNL_CHECK(dnnl_memory_desc_init_by_strides(&a_md, 2, a_dims, in_type, a_strides));
  if (packed_b)
    b_md = packed_b->md;
  else
    DNNL_CHECK(dnnl_memory_desc_init_by_strides(&b_md, 2, b_dims, in_type, b_strides));
  DNNL_CHECK(dnnl_memory_desc_init_by_strides(&c_md, 2, c_dims, c_dtype == NN_BF16 ? dnnl_bf16 : dnnl_f32, c_strides));
  dnnl_matmul_desc_t desc;
  DNNL_CHECK(dnnl_matmul_desc_init(&desc, &a_md, &b_md, NULL, &c_md));
  dnnl_primitive_attr_t attr;
  DNNL_CHECK(dnnl_primitive_attr_create(&attr));
  if (alpha != 1.0f) DNNL_CHECK(dnnl_primitive_attr_set_output_scales(attr, 1, 0, &alpha));
  dnnl_post_ops_t post_ops = NULL;
  if (beta != 0.0f) {
    DNNL_CHECK(dnnl_post_ops_create(&post_ops));
    DNNL_CHECK(dnnl_post_ops_append_sum(post_ops, beta));
    DNNL_CHECK(dnnl_primitive_attr_set_post_ops(attr, post_ops));
  }
  if (packed_b) {  // oneDNN picks the weights' layout (per shape): use packed_b only where it picks that one
    dnnl_memory_desc_t any_md;
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&any_md, 2, b_dims, in_type, dnnl_format_tag_any));
    DNNL_CHECK(dnnl_matmul_desc_init(&desc, &a_md, &any_md, NULL, &c_md));
  }
  dnnl_primitive_desc_t pd;
  DNNL_CHECK(dnnl_primitive_desc_create(&pd, &desc, attr, g->engine, NULL));
  e->prim = NULL;
  if (!packed_b || dnnl_memory_desc_equal(dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), &b_md))
    DNNL_CHECK(dnnl_primitive_create(&e->prim, pd));
  DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
  DNNL_CHECK(dnnl_primitive_attr_destroy(attr));
  if (post_ops) DNNL_CHECK(dnnl_post_ops_destroy(post_ops));
  DNNL_CHECK(dnnl_memory_create(&e->a, &a_md, g->engine, DNNL_MEMORY_NONE));
  DNNL_CHECK(dnnl_memory_create(&e->b, &b_md, g->engine, DNNL_MEMORY_NONE));
  DNNL_CHECK(dnnl_memory_create(&e->c, &c_md, g->engine, DNNL_MEMORY_NONE));
  *e = (GemmEntry){dtype, c_dtype, trans_a, trans_b, M, N, K, swap, alpha, beta, packed, e->prim, e->a, e->b, e->c};
  return e;
}

// Only with trans_b, where the swapped product's src op(B)^T is B's own (N, K) rows: the few-row
// weight gradients (dW of a head, B = x not transposed) ran 2x slower swapped (src read transposed).
static int onednn_swaps(int trans_b, int M, int N, float beta) {
  return trans_b && beta == 0.0f && M <= 64 && N >= 4 * M && N >= 256;
}

// --- weights laid out for oneDNN (backend_weights_changed) --------------------------------------------

// The layout for op(B) (K, N) that oneDNN picks for a bf16 matmul (asked at 1024 rows), if it is
// BA16a64b2a without padding (the only one written here); ok = 0 otherwise.
static void packed_layout(CpuGemm *g, PackedB *p, int K, int N) {
  p->K = K, p->N = N, p->ok = 0;
  if (K % 32 || N % 64) return;
  dnnl_dims_t a_dims = {1024, K}, b_dims = {K, N}, c_dims = {1024, N}, a_strides = {K, 1}, c_strides = {N, 1};
  dnnl_memory_desc_t a_md, b_md, c_md;
  DNNL_CHECK(dnnl_memory_desc_init_by_strides(&a_md, 2, a_dims, dnnl_bf16, a_strides));
  DNNL_CHECK(dnnl_memory_desc_init_by_tag(&b_md, 2, b_dims, dnnl_bf16, dnnl_format_tag_any));
  DNNL_CHECK(dnnl_memory_desc_init_by_strides(&c_md, 2, c_dims, dnnl_f32, c_strides));
  dnnl_matmul_desc_t desc;
  DNNL_CHECK(dnnl_matmul_desc_init(&desc, &a_md, &b_md, NULL, &c_md));
  dnnl_primitive_desc_t pd;
  if (dnnl_primitive_desc_create(&pd, &desc, NULL, g->engine, NULL) != dnnl_success) return;
  const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  const dnnl_blocking_desc_t *bl = &md->format_desc.blocking;
  p->ok = md->format_kind == dnnl_blocked && md->padded_dims[0] == K && md->padded_dims[1] == N && md->offset0 == 0 &&
          bl->inner_nblks == 3 && bl->inner_blks[0] == 16 && bl->inner_idxs[0] == 0 && bl->inner_blks[1] == 64 &&
          bl->inner_idxs[1] == 1 && bl->inner_blks[2] == 2 && bl->inner_idxs[2] == 0 && bl->strides[0] == 32 * 64 &&
          bl->strides[1] == (dnnl_dim_t)K * 64;
  p->md = *md;
  DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
}

// op(B) = W^T (K = cols, N = rows): a block's row pair (k, k + 1) at column n is W[n][k .. k + 1], one
// 32-bit word of W's row n: each block is four 16 x 16 transposes of words. Work goes by 16 rows
// of W, each read along its length (16 streams per thread; a block at a time, 64 rows 4 KiB
// apart, defeated the prefetchers: 6x slower from memory). With AVX-512 each 16 x 16 tile is
// transposed in registers (transpose16_avx512); other CPUs take the scalar loop.

static void pack_fwd(uint16_t *restrict dst, const uint16_t *restrict w, int rows, int cols) {
  int kbs = cols / 32, wide = cpu_avx512;
  CPU_FOR((size_t)rows * cols >= 65536, (int g16 = 0; g16 < rows / 16; g16++), {
    int n0 = g16 * 16;  // W's rows n0 .. n0 + 15: columns n0 % 64 .. + 15 of block strip n0 / 64
    for (int kb = 0; kb < kbs; kb++) {
      uint16_t *out = dst + ((size_t)(n0 / 64) * kbs + kb) * 2048 + 2 * (n0 % 64);
      const uint16_t *in = w + (size_t)n0 * cols + (size_t)kb * 32;
#if defined(__GNUC__) && defined(__x86_64__)
      if (wide) {
        transpose16_avx512(out, 64, in, (size_t)cols / 2);  // rows of 64 words out, cols / 2 words in
        continue;
      }
#endif
      for (int kp = 0; kp < 16; kp++)
        for (int n = 0; n < 16; n++) {
          out[kp * 128 + 2 * n] = in[(size_t)n * cols + 2 * kp];
          out[kp * 128 + 2 * n + 1] = in[(size_t)n * cols + 2 * kp + 1];
        }
    }
  });
  (void)wide;
}

// op(B) = W (K = rows, N = cols): a block's row pair (k, k + 1) interleaves 64 columns of W's rows
// k and k + 1 (as 32-bit words: row k's value low, row k + 1's high).
CPU_VECTOR_CLONES static void interleave_rows(uint16_t *restrict out, const uint16_t *restrict r0,
                                              const uint16_t *restrict r1) {
  uint32_t word[64];
  for (int n = 0; n < 64; n++) word[n] = (uint32_t)r0[n] | (uint32_t)r1[n] << 16;
  memcpy(out, word, sizeof word);
}

// Work goes by row pairs, each read along its length (a block at a time, 32 rows 4 KiB apart, ran
// 6x slower from memory: 931 against 152 us for (1024, 2048) on the 2-core machine).
static void pack_bwd(uint16_t *restrict dst, const uint16_t *restrict w, int rows, int cols) {
  int kbs = rows / 32, nbs = cols / 64;
  CPU_FOR((size_t)rows * cols >= 65536, (int pair = 0; pair < rows / 2; pair++), {
    const uint16_t *r0 = w + (size_t)2 * pair * cols, *r1 = r0 + cols;
    uint16_t *out = dst + (size_t)(pair / 16) * 2048 + (pair % 16) * 128;  // block (0, pair / 16), row pair % 16
    for (int nb = 0; nb < nbs; nb++) interleave_rows(out + (size_t)nb * kbs * 2048, r0 + nb * 64, r1 + nb * 64);
  });
}

// B's copy in oneDNN's layout for op(B) (K, N) where one pays (and its W: packed_refresh lays it out).
// Measured in the bf16 headline step (2-core machine, us per call): dy W at 1024 x 2048 x 1024 runs
// about 800 faster on the laid-out copy (3550 -> 2760) and laying W (1024, 2048) out after each
// Adam step costs 340 (W comes from memory), so dy W always uses it (512-row W: 1090 -> 980, for a
// 120 layout: even). x W^T at the update's batch gains less (two 512-row slices 1630 -> 1430 each)
// than its layout costs, so x W^T uses it only for few rows (M <= 64, the rollout's batch), where
// one layout serves every call until the next update: 32 x 1024 x 2048 (t) 133 -> 107 us.
#define PACKED_FWD_MAX_ROWS 64
static PackedB *packed_weights(CpuGemm *g, const void *B, int trans_b, int M, int K, int N, WeightPack **owner) {
  WeightPack *w = weight_pack_find(g, B);
  if (!w || (trans_b && M > PACKED_FWD_MAX_ROWS)) return NULL;
  PackedB *p = trans_b ? &w->fwd : &w->bwd;
  *owner = w;
  return p->ok && p->K == K && p->N == N ? p : NULL;
}

// p laid out from its W if W changed since (only once a GEMM will read it).
static void packed_refresh(PackedB *p, const WeightPack *w, int trans_b) {
  if (!p->stale) return;
  if (trans_b)
    pack_fwd(p->buf, w->w, w->rows, w->cols);
  else
    pack_bwd(p->buf, w->w, w->rows, w->cols);
  p->stale = 0;
}

// scratch: M N floats when onednn_swaps(trans_b, M, N, beta) and C is fp32 (a bf16 C is never
// swapped), else unused. c_dtype: fp32, or bf16 with bf16 operands (oneDNN rounds each sum once).
static void onednn_gemm(CpuGemm *g, NnDtype dtype, int trans_a, int trans_b, int M, int N, int K, float alpha,
                        const void *A, const void *B, float beta, void *C, NnDtype c_dtype, float *scratch) {
  WeightPack *owner = NULL;
  PackedB *packed = dtype == NN_BF16 ? packed_weights(g, B, trans_b, M, K, N, &owner) : NULL;
  if (packed) {  // (never swapped: with the weights laid out, oneDNN runs few rows well as they are)
    GemmEntry *e = gemm_entry(g, dtype, c_dtype, trans_a, trans_b, M, N, K, alpha, beta, 0, packed);
    if (e->prim) {
      packed_refresh(packed, owner, trans_b);
      DNNL_CHECK(dnnl_memory_set_data_handle(e->a, (void *)A));
      DNNL_CHECK(dnnl_memory_set_data_handle(e->b, packed->buf));
      DNNL_CHECK(dnnl_memory_set_data_handle(e->c, C));
      dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->b}, {DNNL_ARG_DST, e->c}};
      DNNL_CHECK(dnnl_primitive_execute(e->prim, g->stream, 3, args));
      DNNL_CHECK(dnnl_stream_wait(g->stream));
      return;
    }
  }
  int swap = c_dtype == NN_F32 && onednn_swaps(trans_b, M, N, beta);
  GemmEntry *e = gemm_entry(g, dtype, c_dtype, trans_a, trans_b, M, N, K, alpha, beta, swap, NULL);
  DNNL_CHECK(dnnl_memory_set_data_handle(e->a, (void *)(swap ? B : A)));
  DNNL_CHECK(dnnl_memory_set_data_handle(e->b, (void *)(swap ? A : B)));
  DNNL_CHECK(dnnl_memory_set_data_handle(e->c, swap ? scratch : C));
  dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, e->a}, {DNNL_ARG_WEIGHTS, e->b}, {DNNL_ARG_DST, e->c}};
  DNNL_CHECK(dnnl_primitive_execute(e->prim, g->stream, 3, args));
  DNNL_CHECK(dnnl_stream_wait(g->stream));
  if (swap) transpose_f32(C, scratch, N, M);
}
#endif

// C (M N, of c_dtype) = c32 rounded, in parallel pieces.
static void round_into(void *C, NnDtype c_dtype, const float *c32, size_t n) {
  size_t pieces = (n + CPU_CAST_BLOCK - 1) / CPU_CAST_BLOCK;
  CPU_FOR(n >= CPU_PARALLEL_MIN && pieces > 1, (size_t p = 0; p < pieces; p++), {
    size_t at = p * CPU_CAST_BLOCK, len = n - at < CPU_CAST_BLOCK ? n - at : CPU_CAST_BLOCK;
    cpu_store_lp(C, c_dtype, at, c32 + at, (int)len);
  });
}

// In blocks of CPU_CAST_BLOCK through the vectorised row loop: the scalar loop (no clones, a branch per
// element) took ~1 ns an element, as long as the product itself for a small network's layers (fp16
// default.ini, 256 x 64 x 520 (t): 307 us against fp32's 154).
static void widen(float *out, const uint16_t *in, size_t n, NnDtype dtype) {
  size_t blocks = (n + CPU_CAST_BLOCK - 1) / CPU_CAST_BLOCK;
  CPU_FOR(n >= CPU_PARALLEL_MIN && blocks > 1, (size_t blk = 0; blk < blocks; blk++), {
    size_t at = blk * CPU_CAST_BLOCK, len = n - at < CPU_CAST_BLOCK ? n - at : CPU_CAST_BLOCK;
    cpu_widen_row(out + at, in + at, dtype, (int)len);
  });
}

// --- the weight register (backend_weights_changed) -------------------------------------------------------

// An fp16 W's widened copy: rows x cols floats in whole 64-byte lines.
static size_t wide_bytes(int rows, int cols) { return ((size_t)rows * cols * sizeof(float) + 63) / 64 * 64; }

void cpu_weights_changed(Backend *backend, const void *w, NnDtype dtype, int rows, int cols) {
  CpuGemm *g = ((CpuContext *)backend->ctx)->gemm;
  if (dtype == NN_F32) return;  // fp32 products read W as it is
#ifndef PPO_HAVE_ONEDNN
  if (dtype == NN_BF16) return;  // bf16 widened per call as it comes (no layout to keep without oneDNN)
#endif
  WeightPack *p = weight_pack_find(g, w);
  if (!p) {                                      // first call: register (setup time)
    if (g->n_packs == WEIGHT_PACKS_MAX) return;  // more matrices than slots: the rest stay plain
    p = &g->packs[g->n_packs++];
    *p = (WeightPack){.w = w, .dtype = dtype, .rows = rows, .cols = cols};
    if (dtype == NN_F16) {
      CHECK((p->wide = aligned_alloc(64, wide_bytes(rows, cols))),
            "out of memory for fp16 weights widened to fp32");
    } else {
#ifdef PPO_HAVE_ONEDNN
      packed_layout(g, &p->fwd, cols, rows);
      packed_layout(g, &p->bwd, rows, cols);
      size_t bytes = (size_t)rows * cols * 2;  // a multiple of 4 KiB (blocks of 32 x 64)
      if (p->fwd.ok) CHECK((p->fwd.buf = aligned_alloc(64, bytes)), "out of memory for weights in oneDNN's layout");
      if (p->bwd.ok) CHECK((p->bwd.buf = aligned_alloc(64, bytes)), "out of memory for weights in oneDNN's layout");
#endif
    }
  }
  CHECK(p->rows == rows && p->cols == cols && p->dtype == dtype,
        "backend_weights_changed: a matrix changed shape or dtype");
  p->wide_stale = 1;
#ifdef PPO_HAVE_ONEDNN
  p->fwd.stale = p->bwd.stale = 1;
#endif
}

size_t cpu_weights_bytes(Backend *backend, NnDtype dtype, int rows, int cols) {
  if (dtype == NN_F16) return wide_bytes(rows, cols);
#ifdef PPO_HAVE_ONEDNN
  CpuGemm *g = ((CpuContext *)backend->ctx)->gemm;
  if (dtype != NN_BF16) return 0;
  PackedB fwd, bwd;
  packed_layout(g, &fwd, cols, rows);
  packed_layout(g, &bwd, rows, cols);
  return (size_t)(fwd.ok + bwd.ok) * rows * cols * 2;
#else
  (void)backend;
  return 0;
#endif
}

// Memory [ptr, ptr + bytes) was freed: its matrices leave the register (a later allocation at the
// same address is not those weights).
void cpu_weights_forget(CpuContext *ctx, const void *ptr, size_t bytes) {
  CpuGemm *g = ctx->gemm;
  for (int i = 0; g && i < g->n_packs;) {
    const char *w = (const char *)g->packs[i].w;
    if (w >= (const char *)ptr && w < (const char *)ptr + bytes)
      weight_pack_drop(g, i);
    else
      i++;
  }
}

// The widened copy of B when B is a registered fp16 W read as a whole (op(B) (K, N) is W^T or W),
// brought up to date first; NULL otherwise.
static const float *wide_weights(CpuGemm *g, const void *B, int trans_b, int K, int N) {
  WeightPack *p = weight_pack_find(g, B);
  if (!p || !p->wide || (trans_b ? p->rows != N || p->cols != K : p->rows != K || p->cols != N)) return NULL;
  if (p->wide_stale) {
    widen(p->wide, p->w, (size_t)p->rows * p->cols, NN_F16);
    p->wide_stale = 0;
  }
  return p->wide;
}

// Every fp32 product up to SMALL_GEMM_MACS takes a path that holds no backend state (no workspace,
// no oneDNN primitive): sgemv_row and gemm_thin in cpu_gemm, small_sgemm here (their scratch on the
// stack, OpenBLAS's in its own locked pool). They run on the calling thread when OpenBLAS has one
// thread, as cpu_gemm_open leaves it: with more (set by the application after the backend opened),
// its sgemv splits matrices of 9,216 elements and up over its own threads, which two lanes then
// contend for (1 x 256 x 256 products took 15x longer in lanes together). Lanes rely on both.
int cpu_gemm_on_caller(NnDtype dtype, double macs) {
  return dtype == NN_F32 && macs <= SMALL_GEMM_MACS && openblas_get_num_threads() == 1;
}

// c_dtype: fp32, or dtype (F16 / BF16) with beta 0.
static void gemm_dispatch(Backend *backend, NnDtype dtype, int trans_a, int trans_b, int M, int N, int K, float alpha,
                          const void *A, const void *B, float beta, void *C_out, NnDtype c_dtype) {
  CpuContext *ctx = backend->ctx;
  CpuGemm *g = ctx->gemm;
  float *C = c_dtype == NN_F32 ? (float *)C_out : NULL;  // the fp32 C, when it is one
  if (K == 0) {                                          // libraries differ on empty products: C = beta C by hand
    if (!C) memset(C_out, 0, (size_t)M * N * nn_dtype_size(c_dtype));  // beta is 0; +0 is all zero bits
    for (size_t i = 0; C && i < (size_t)M * N; i++) C[i] = beta == 0.0f ? 0.0f : beta * C[i];
    return;
  }
#ifdef PPO_HAVE_ONEDNN
  if (dtype == NN_F32 && (double)M * N * K <= SMALL_GEMM_MACS) {  // oneDNN's per-call cost dominates
    small_sgemm(trans_a, trans_b, M, N, K, alpha, A, B, beta, C);
    return;
  }
  if (dtype == NN_BF16 || (dtype == NN_F32 && g->use_onednn)) {
    if (C && onednn_swaps(trans_b, M, N, beta)) backend->ops->reserve_workspace(backend, (size_t)M * N * sizeof(float));
    onednn_gemm(g, dtype, trans_a, trans_b, M, N, K, alpha, A, B, beta, C_out, c_dtype, ctx->workspace);
    return;
  }
#else
  (void)g;
#endif
  if (dtype == NN_F32) {
    if ((double)M * N * K <= SMALL_GEMM_MACS)
      small_sgemm(trans_a, trans_b, M, N, K, alpha, A, B, beta, C);
    else
      sgemm_team(trans_a, trans_b, M, N, K, alpha, A, B, beta, C);
    return;
  }
  // widened operands; a low-precision C is computed in fp32 after them, then rounded into place
  size_t na = (size_t)M * K, nb = (size_t)K * N, nc = 0, nlp = C ? 0 : (size_t)M * N;
#ifdef PPO_HAVE_ONEDNN
  if (g->use_onednn && onednn_swaps(trans_b, M, N, beta)) nc = (size_t)M * N;
#endif
  const float *b_wide = dtype == NN_F16 ? wide_weights(g, B, trans_b, K, N) : NULL;  // W widened once per change
  if (b_wide) nb = 0;
  // The implementation, not the public call: growing the scratch is this backend's own business, and
  // allowed inside a recorded function (a no-op once policy_init reserved it; counted if it grows).
  backend->ops->reserve_workspace(backend, (na + nb + nc + nlp) * sizeof(float));
  float *a32 = ctx->workspace, *b32 = a32 + na, *scratch = b32 + nb, *c32 = C ? C : scratch + nc;
  widen(a32, A, na, dtype);
  if (!b_wide) widen(b32, B, nb, dtype);
  const float *b = b_wide ? b_wide : b32;
#ifdef PPO_HAVE_ONEDNN
  if (g->use_onednn && (double)M * N * K > SMALL_GEMM_MACS)
    onednn_gemm(g, NN_F32, trans_a, trans_b, M, N, K, alpha, a32, b, beta, c32, NN_F32, scratch);
  else
#endif
    sgemm_team(trans_a, trans_b, M, N, K, alpha, a32, b, beta, c32);
  if (!C) round_into(C_out, c_dtype, c32, (size_t)M * N);
}

// --- thin products: K at most THIN_K, N at least THIN_MIN_N --------------------------------------------
// C = alpha op(A) op(B) + beta C with K <= 4 is a sum of K outer products: the heads' input
// gradients (K = the action count or 1) and a first layer on a few observations. With wide rows
// the libraries' kernels, blocked for long reductions, waste most of their work (oneDNN's bf16
// kernels pad K to 32). Here each row of C is K scaled rows of op(B), vectorised along N, summed
// in k order then scaled (the same bits on every clone and thread count); op(B)'s rows are
// widened to fp32 into a stack buffer, THIN_COLS columns at a time. Measured inside training on
// the 2-core machine (PPO_PROFILE, us per call, library -> this): headline bf16 step 1024 x 512 x 1
// 384 -> 171, 1024 x 512 x 3 288 -> 186; CartPole obs with 2048-1024-512 nets, fp32: 1024 x 2048 x
// 4 (t) 1190 -> 576, 1024 x 512 x 1 411 -> 130. Narrow rows stay with
// the libraries, which run them faster (this loop has no fused multiply-adds, and each row is a
// call's worth of overhead): fp32 alone, library against this loop, 64 x 64 x 2 0.21 against
// 0.63 us, 1024 x 64 x 3 5.2 against 11.3 us, 256 x 256 x 3 6.8 against 8.1 us.
#define THIN_K 4
#define THIN_MIN_N 512
#define THIN_COLS 512

static inline float thin_load(const void *p, NnDtype dtype, size_t i) {
  if (dtype == NN_F32) return ((const float *)p)[i];
  uint16_t h = ((const uint16_t *)p)[i];
  return dtype == NN_F16 ? nn_f16_to_f32(h) : nn_bf16_to_f32(h);
}

// One loop per K (the sum's terms in k order) and per beta (0: C is not read, it may hold anything).
#define THIN_LOOP(SUM)                                                \
  do {                                                                \
    if (beta == 0.0f)                                                 \
      for (int j = 0; j < n; j++) c[j] = alpha * (SUM);               \
    else                                                              \
      for (int j = 0; j < n; j++) c[j] = alpha * (SUM) + beta * c[j]; \
  } while (0)

// rows of C (N apart; n columns from c0): c[j] = alpha sum_k a[i][k] bk[k][j] (+ beta c[j]), with
// a's rows THIN_K floats and bk's THIN_COLS
CPU_VECTOR_CLONES static void thin_rows(float *c0, int N, int n, const float *bk, const float *a, int rows, int K,
                                        float alpha, float beta) {
  const float *restrict b0 = bk, *restrict b1 = bk + THIN_COLS, *restrict b2 = bk + 2 * THIN_COLS,
                        *restrict b3 = bk + 3 * THIN_COLS;
  for (int i = 0; i < rows; i++) {
    float *restrict c = c0 + (size_t)i * N;
    float a0 = a[i * THIN_K], a1 = a[i * THIN_K + 1], a2 = a[i * THIN_K + 2], a3 = a[i * THIN_K + 3];
    if (K == 1)
      THIN_LOOP(a0 * b0[j]);
    else if (K == 2)
      THIN_LOOP(a0 * b0[j] + a1 * b1[j]);
    else if (K == 3)
      THIN_LOOP(a0 * b0[j] + a1 * b1[j] + a2 * b2[j]);
    else
      THIN_LOOP(a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j]);
  }
}

#define THIN_ROWS 64  // rows per work item: op(A)'s values for them widened on the stack

// A C of the low precision (beta 0) goes row by row through an fp32 row, rounded from there.
static void gemm_thin(NnDtype dtype, int trans_a, int trans_b, int M, int N, int K, float alpha, const void *A,
                      const void *B, float beta, void *C, NnDtype c_dtype) {
  float bk[THIN_K * THIN_COLS];
  int blocks = (M + THIN_ROWS - 1) / THIN_ROWS;
  for (int j0 = 0; j0 < N; j0 += THIN_COLS) {
    int n = N - j0 < THIN_COLS ? N - j0 : THIN_COLS;
    for (int k = 0; k < K; k++)  // op(B) (k, j) is B[k N + j], or B[j K + k] transposed
      for (int j = 0; j < n; j++)
        bk[k * THIN_COLS + j] =
            thin_load(B, dtype, trans_b ? (size_t)(j0 + j) * K + k : (size_t)k * N + (size_t)(j0 + j));
    CPU_FOR((size_t)M * n >= CPU_PARALLEL_MIN && blocks > 1, (int blk = 0; blk < blocks; blk++), {
      int i0 = blk * THIN_ROWS, rows = M - i0 < THIN_ROWS ? M - i0 : THIN_ROWS;
      float a[THIN_ROWS * THIN_K] = {0};  // op(A) (i, k) is A[i K + k], or A[k M + i] transposed
      for (int r = 0; r < rows; r++)
        for (int k = 0; k < K; k++)
          a[r * THIN_K + k] = thin_load(A, dtype, trans_a ? (size_t)k * M + (i0 + r) : (size_t)(i0 + r) * K + k);
      if (c_dtype == NN_F32) {
        thin_rows((float *)C + (size_t)i0 * N + j0, N, n, bk, a, rows, K, alpha, beta);
      } else {
        float row[THIN_COLS];
        for (int r = 0; r < rows; r++) {
          thin_rows(row, N, n, bk, a + r * THIN_K, 1, K, alpha, 0.0f);
          cpu_store_lp(C, c_dtype, (size_t)(i0 + r) * N + j0, row, n);
        }
      }
    });
  }
}

// Products below this many multiply-adds (2^20: e.g. 256 x 64 x 64) run on one thread: waking the
// second thread costs more than it saves, and on a busy machine a descheduled thread stalls every
// parallel region. Measured on the 2-core machine: CartPole's [64, 64] update (2^18 per GEMM) ran
// 4-5x slower on 2 threads. The threshold was 2^24 until 2026-11-22, which kept the [64, 64]
// networks' 1024 x 64 x 64 and 1024 x 64 x 517 products (2^22 to 2^25) on one thread: with 2^20,
// measured alternately 3 times each, configs/seed.ini with [64, 64] layers (synthetic env, fp32)
// went from 40.4-40.7k to 42.2-42.6k steps/s and configs/default.ini with threads = 2 from 29.7-30.2k
// to 36.7-38.7k; 2^19 and 2^21 measured the same as 2^20. oneDNN sizes its thread team when it
// creates a primitive, and a shape is always on the same side of the threshold, so its cached
// primitives agree with the setting they run under.
#define CPU_GEMM_SERIAL_MACS ((size_t)1 << 20)

// The route of one product, the first row that matches (cpu_gemm, then gemm_dispatch):
//   fp32, op(A) one row, N K <= GEMV_MAX_MACS          sgemv_row: OpenBLAS's sgemv
//   K <= THIN_K and N >= THIN_MIN_N, any dtype          gemm_thin: our outer-product loop
//   M N K < CPU_GEMM_SERIAL_MACS, several threads       the rows below, on one OpenMP thread
//   K = 0                                               C = beta C by hand
//   fp32, M N K <= SMALL_GEMM_MACS                      small_sgemm: OpenBLAS (NT on a transposed copy)
//   bf16 (built with oneDNN), or fp32 with oneDNN on    onednn_gemm (operands swapped when C^T pays)
//   fp32 otherwise (no oneDNN, PPO_CPU_GEMM=openblas)   sgemm_team: one OpenBLAS block of C per thread
//   fp16, or bf16 without oneDNN                        widened to fp32 in the workspace (a registered
//                                                       fp16 W: its kept widened copy), then oneDNN fp32
//                                                       above SMALL_GEMM_MACS or sgemm_team; a low-
//                                                       precision C is rounded from the fp32 result
void cpu_gemm(Backend *backend, NnDtype dtype, int trans_a, int trans_b, int M, int N, int K, float alpha,
              const void *A, const void *B, float beta, void *C, NnDtype c_dtype) {
  if (dtype == NN_F32 && M == 1 && K >= 1 && (double)N * K <= GEMV_MAX_MACS) {  // op(A) one row, any transpose
    sgemv_row(trans_b, N, K, alpha, A, B, beta, C);                             // (C is fp32 with fp32 operands)
    return;
  }
  if (K >= 1 && K <= THIN_K && N >= THIN_MIN_N) {  // threads by the size of C, not by the multiply-adds
    gemm_thin(dtype, trans_a, trans_b, M, N, K, alpha, A, B, beta, C, c_dtype);
    return;
  }
  int threads = omp_get_max_threads();
  if (threads > 1 && (size_t)M * (size_t)N * (size_t)K < CPU_GEMM_SERIAL_MACS) {
    omp_set_num_threads(1);
    gemm_dispatch(backend, dtype, trans_a, trans_b, M, N, K, alpha, A, B, beta, C, c_dtype);
    omp_set_num_threads(threads);
    return;
  }
  gemm_dispatch(backend, dtype, trans_a, trans_b, M, N, K, alpha, A, B, beta, C, c_dtype);
}
