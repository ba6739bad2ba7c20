// test/test_cuda_core.c: the CUDA backend's core (nn/backend_cuda.cu) against the CPU backend, op
// by op, on the same random inputs (fixed seeds): memory, GEMM, bias + activation, casts, scaling,
// gathers, the value loss, and the registry's "cuda" and "auto".
//
// Tolerances, per op (STYLE rule 11):
//   - bit-exact: casts, scale, scale_by, gather, bias_act forward and backward (din, din_t),
//     mse_backward, GEMM with K = 0. Both backends evaluate the same nn/ops_math.h functions
//     without fused multiply-adds, so the bits must agree.
//   - dbias: the GPU sums each column per 64-row tile, then the tiles in order, the CPU row by row:
//     |gpu - cpu| <= 1e-5 sum_b |dout| + 2 ulp of dbias (act' <= 1 bounds |d| by |dout|; float
//     sums of a thousand terms in two orders differ by far less; a lost or doubled tile by far more).
//   - GEMM: max |gpu - cpu| <= tol max |cpu|: fp32 1e-5 (both accumulate in fp32 in different
//     orders); fp16 and bf16 1e-3 (the operands are the same rounded bits and their products exact
//     in fp32, only the accumulation differs, tensor cores truncating some of it); TF32 5e-3 (inputs
//     rounded to 10-bit mantissas). A wrong index or transpose gives errors of order max |C|.
//   - mse_forward: 1e-6 relative to a double reference, 1e-4 relative to the CPU (both accumulate
//     in double, in different orders).
// Every test that needs a device skips, visibly, without one (STYLE rule 12); backends are opened
// inside the test bodies because Criterion forks per test.
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/rng.h"
#include "nn/backend.h"
#include "test/gemm_fp16_overflow_case.h"

static Backend *cuda_or_skip(void) {
  Backend *b = backend_open("cuda");
  if (!b) cr_skip_test("%s", error_message());
  return b;
}

typedef struct {
  Backend *cpu, *gpu;
} Pair;

static Pair open_pair(void) {
  Pair p = {NULL, cuda_or_skip()};
  p.cpu = backend_open("cpu");
  cr_assert(p.cpu, "backend_open(cpu): %s", error_message());
  return p;
}

static void close_pair(Pair p) {
  backend_close(p.cpu);
  backend_close(p.gpu);
}

static void fill(float *x, size_t n, Rng *rng, double lo, double hi) {
  for (size_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * rng_uniform(rng));
}

// Backend memory holding a copy of `bytes` of host data (freed with the backend's process).
static void *put(Backend *b, const void *host, size_t bytes) {
  void *p = backend_alloc(b, bytes);
  backend_upload(b, p, host, bytes);
  return p;
}

// A malloc'd host copy of backend memory.
static void *get(Backend *b, const void *p, size_t bytes) {
  void *host = malloc(bytes ? bytes : 1);
  backend_download(b, host, p, bytes);
  return host;
}

// x (n) as stored in dtype: floats, or the fp16 / bf16 bits; malloc'd.
static void *stored(const float *x, size_t n, NnDtype dtype) {
  void *out = malloc(n * nn_dtype_size(dtype) + 1);
  for (size_t i = 0; i < n; i++) {
    if (dtype == NN_F32) ((float *)out)[i] = x[i];
    if (dtype == NN_F16) ((uint16_t *)out)[i] = nn_f32_to_f16(x[i]);
    if (dtype == NN_BF16) ((uint16_t *)out)[i] = nn_f32_to_bf16(x[i]);
  }
  return out;
}

static void assert_same_bits(const void *got, const void *want, size_t n, size_t es, const char *what) {
  const unsigned char *g = got, *w = want;
  for (size_t i = 0; i < n; i++)
    if (memcmp(g + i * es, w + i * es, es) != 0) {
      uint32_t gb = 0, wb = 0;
      memcpy(&gb, g + i * es, es);
      memcpy(&wb, w + i * es, es);
      cr_assert_fail("%s: element %zu differs: cuda bits %08x, cpu bits %08x", what, i, gb, wb);
    }
}

// --- open, memory ------------------------------------------------------------------------------------------------

// Runs on every machine (no skip, so the suite's [SKIP] lines mean "no device" only): with a device
// the backend opens as "cuda"; without one, NULL and a message that names the reason. A CUDA module
// that does not load (a library of it missing) is a broken build, not a missing device: it fails.
Test(cuda_open, opens_or_names_the_reason) {
  Backend *b = backend_open("cuda");
  if (b) {
    cr_assert_str_eq(backend_name(b), "cuda");
    backend_close(b);
    return;
  }
  const char *msg = error_message();
  // no device; a device this build cannot run (its architecture); a device that answered but could
  // not start the backend (another process holds its memory: open_failed names the step)
  cr_assert(strstr(msg, "backend 'cuda': ") &&
                (strstr(msg, "no CUDA device (") || strstr(msg, "cannot run") ||
                 (strstr(msg, "backend 'cuda': device ") && strstr(msg, " failed ("))),
            "message: %s", msg);
}

Test(cuda_open, auto_gives_a_working_backend) {
  Backend *b = backend_open("auto");
  cr_assert(b, "auto: %s", error_message());
  cr_assert_str_eq(error_message(), "", "auto left a stale message: %s", error_message());
  Backend *probe = backend_open("cuda");
  const char *expected = probe ? "cuda" : "cpu";
  backend_close(probe);
  cr_assert_str_eq(backend_name(b), expected);
  float host[4] = {1, 2, 3, 4}, back[4];
  float *x = put(b, host, sizeof host);
  backend_scale(b, x, 2.0f, 4);
  backend_download(b, back, x, sizeof back);
  for (int i = 0; i < 4; i++) cr_assert_eq(back[i], 2.0f * host[i]);
  backend_free(b, x);
  backend_close(b);
}

Test(cuda_memory, allocations_counts_zeroing_and_syncs) {
  Backend *b = cuda_or_skip();
  cr_assert_str_eq(backend_name(b), "cuda");
  cr_assert(strncmp(backend_describe(b), "cuda: ", 6) == 0, "describe: %s", backend_describe(b));
  size_t allocs = backend_alloc_count(b), syncs = backend_sync_count(b);
  float *x = backend_alloc(b, 1000 * sizeof(float));
  cr_assert_eq(backend_alloc_count(b), allocs + 1);
  cr_assert_eq((uintptr_t)x % 64, 0);
  float *zeros = get(b, x, 1000 * sizeof(float));
  for (int i = 0; i < 1000; i++) cr_assert_eq(zeros[i], 0.0f, "element %d not zeroed", i);
  float host[3] = {1, -2, 3.5f}, back[3] = {0};
  backend_upload(b, x, host, sizeof host);
  memset(host, 0, sizeof host);  // the upload has already taken the data (pageable memory)
  backend_download(b, back, x, sizeof back);
  cr_assert(back[0] == 1 && back[1] == -2 && back[2] == 3.5f);
  backend_memset_zero(b, x, sizeof back);
  backend_download(b, back, x, sizeof back);
  cr_assert(back[0] == 0 && back[1] == 0 && back[2] == 0);
  backend_reserve_workspace(b, (size_t)64 << 20);  // above the 32 MiB reserved at open
  cr_assert_eq(backend_alloc_count(b), allocs + 2);
  backend_reserve_workspace(b, 1024);  // already there: no new allocation
  cr_assert_eq(backend_alloc_count(b), allocs + 2);
  size_t free_bytes = 0, total_bytes = 0;
  cr_assert_eq(backend_memory_info(b, &free_bytes, &total_bytes), 0);
  cr_assert(free_bytes > 0 && free_bytes <= total_bytes);
  backend_sync(b);
  cr_assert_eq(backend_sync_count(b), syncs + 5);  // 3 downloads, memory_info, sync
  free(zeros);
  backend_free(b, x);
  backend_close(b);
}

// "auto" as in the gather tests below: CUDA's cudaMalloc or the CPU's aligned_alloc fails, and
// either exits 1 (2^50 bytes is more than any device or address space holds).
Test(cuda_memory, out_of_memory_exits, .exit_code = 1) {
  Backend *b = backend_open("auto");
  backend_alloc(b, (size_t)1 << 50);
  cr_assert_fail("%s: backend_alloc returned 2^50 bytes", backend_name(b));
}

// backend_copy within one buffer against the host's memmove: both directions, distances that take
// the one-block kernel (many chunks) and the chunked cudaMemcpy path, and disjoint ranges.
Test(cuda_memory, copy_handles_overlap_both_ways) {
  Backend *b = cuda_or_skip();
  enum { S = 1 << 20 };
  static const size_t cases[][3] = {
      // dst offset, src offset, bytes
      {0, 1, S - 1},           {1, 0, S - 1},     {0, 4097, S - 4097}, {4097, 0, S - 4097}, {0, 100000, S - 100000},
      {100000, 0, S - 100000}, {5, 3, 3},         {3, 5, 3},           {0, 1, 100},         {1, 0, 100},
      {0, S / 2, S / 2},       {S / 2, 0, S / 2}, {10, 10, 100}};
  unsigned char *pattern = malloc(S), *want = malloc(S);
  for (size_t i = 0; i < S; i++) pattern[i] = (unsigned char)(i * 7 + i / 251 + 3);
  unsigned char *buf = backend_alloc(b, S);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    size_t dst = cases[c][0], src = cases[c][1], bytes = cases[c][2];
    backend_upload(b, buf, pattern, S);
    backend_copy(b, buf + dst, buf + src, bytes);
    unsigned char *got = get(b, buf, S);
    memcpy(want, pattern, S);
    memmove(want + dst, want + src, bytes);
    for (size_t i = 0; i < S; i++)
      cr_assert_eq(got[i], want[i], "case %zu (dst %zu, src %zu, %zu bytes): byte %zu is %u, expected %u", c, dst, src,
                   bytes, i, got[i], want[i]);
    free(got);
  }
  free(pattern);
  free(want);
  backend_free(b, buf);
  backend_close(b);
}

// Rows into a wider pitch and back (the policy's padded first layer): the gaps keep their bytes.
Test(cuda_memory, copy_rows_leaves_the_gaps) {
  Pair p = open_pair();
  static const size_t cases[][4] = {{1034, 1088, 1034, 2048}, {74, 80, 74, 37}, {1088, 1034, 1034, 300}, {2, 2, 2, 1}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    size_t src_pitch = cases[c][0], dst_pitch = cases[c][1], row = cases[c][2], rows = cases[c][3];
    size_t src_bytes = src_pitch * rows, dst_bytes = dst_pitch * rows;
    unsigned char *src = malloc(src_bytes), *dst = malloc(dst_bytes);
    for (size_t i = 0; i < src_bytes; i++) src[i] = (unsigned char)(i * 13 + 5);
    for (size_t i = 0; i < dst_bytes; i++) dst[i] = (unsigned char)(i * 3 + 1);
    unsigned char *out[2];
    Backend *bk[2] = {p.cpu, p.gpu};
    for (int k = 0; k < 2; k++) {
      void *d_src = put(bk[k], src, src_bytes), *d_dst = put(bk[k], dst, dst_bytes);
      backend_copy_rows(bk[k], d_dst, dst_pitch, d_src, src_pitch, row, rows);
      out[k] = get(bk[k], d_dst, dst_bytes);
    }
    for (size_t r = 0; r < rows; r++)  // the CPU's result is checked against the definition, then CUDA against it
      for (size_t i = 0; i < dst_pitch; i++) {
        unsigned char want = i < row ? src[r * src_pitch + i] : dst[r * dst_pitch + i];
        cr_assert_eq(out[0][r * dst_pitch + i], want, "cpu case %zu: row %zu byte %zu", c, r, i);
      }
    assert_same_bits(out[1], out[0], dst_bytes, 1, "copy_rows");
    free(src), free(dst), free(out[0]), free(out[1]);
  }
  close_pair(p);
}

// --- GEMM ----------------------------------------------------------------------------------------------------------

// C of c_dtype (fp32, or dtype with beta 0: backend_gemm_to), compared as fp32 within tol of C's
// largest magnitude.
static void check_gemm_to(Pair p, NnDtype dtype, NnDtype c_dtype, int ta, int tb, int M, int N, int K, float alpha,
                          float beta, double tol) {
  Rng rng;
  rng_seed(&rng, 1000u + (uint64_t)M * 7 + (uint64_t)N * 13 + (uint64_t)K * 17 + (uint64_t)(ta * 2 + tb));
  size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N, es = nn_dtype_size(dtype),
         cs = nn_dtype_size(c_dtype);
  float *a = malloc(na * 4 + 4), *bm = malloc(nb * 4 + 4), *c = malloc(nc * 4);
  fill(a, na, &rng, -1, 1);
  fill(bm, nb, &rng, -1, 1);
  fill(c, nc, &rng, -1, 1);
  void *as = stored(a, na, dtype), *bs = stored(bm, nb, dtype);
  Backend *bk[2] = {p.cpu, p.gpu};
  float *result[2];
  for (int k = 0; k < 2; k++) {
    void *A = put(bk[k], as, na * es), *B = put(bk[k], bs, nb * es);
    void *C = put(bk[k], c, nc * cs);  // (c's first bytes: any value, with beta 0)
    backend_gemm_to(bk[k], dtype, ta, tb, M, N, K, alpha, A, B, beta, C, c_dtype);
    float *C32 = backend_alloc(bk[k], nc * 4);
    backend_cast(bk[k], C32, NN_F32, C, c_dtype, nc);
    result[k] = get(bk[k], C32, nc * 4);
    backend_free(bk[k], A), backend_free(bk[k], B), backend_free(bk[k], C), backend_free(bk[k], C32);
  }
  float *want = result[0], *got = result[1];
  double max_abs = 0.0;
  for (size_t i = 0; i < nc; i++) max_abs = fmax(max_abs, fabs(want[i]));
  for (size_t i = 0; i < nc; i++)
    cr_assert(fabs((double)got[i] - want[i]) <= tol * max_abs,
              "%s gemm (C %s) ta %d tb %d (%d, %d, %d) alpha %g beta %g: C[%zu, %zu] cuda %.9g, cpu %.9g (tolerance "
              "%.3g)",
              nn_dtype_name(dtype), nn_dtype_name(c_dtype), ta, tb, M, N, K, alpha, beta, i / N, i % N, got[i], want[i],
              tol * max_abs);
  free(a), free(bm), free(c), free(as), free(bs), free(want), free(got);
}

static void check_gemm(Pair p, NnDtype dtype, int ta, int tb, int M, int N, int K, float alpha, float beta,
                       double tol) {
  check_gemm_to(p, dtype, NN_F32, ta, tb, M, N, K, alpha, beta, tol);
}

static const int odd_shapes[][3] = {{33, 17, 65}, {1, 1, 1}, {5, 300, 7}, {64, 3, 1}, {2, 129, 1000}};
static const int headline_shapes[][3] = {{1024, 2048, 1024}, {1024, 1024, 2048}, {1024, 512, 1024}};

static void check_gemm_shapes(NnDtype dtype, const int (*shapes)[3], size_t count, double tol) {
  Pair p = open_pair();
  for (size_t s = 0; s < count; s++)
    for (int t = 0; t < 4; t++) {
      check_gemm(p, dtype, t >> 1, t & 1, shapes[s][0], shapes[s][1], shapes[s][2], 1.0f, 0.0f, tol);
      check_gemm(p, dtype, t >> 1, t & 1, shapes[s][0], shapes[s][1], shapes[s][2], 0.75f, -0.5f, tol);
    }
  close_pair(p);
}

#define ODD (sizeof odd_shapes / sizeof odd_shapes[0])
#define HEADLINE (sizeof headline_shapes / sizeof headline_shapes[0])

Test(cuda_gemm, fp32_odd_shapes) { check_gemm_shapes(NN_F32, odd_shapes, ODD, 1e-5); }
Test(cuda_gemm, fp16_odd_shapes) { check_gemm_shapes(NN_F16, odd_shapes, ODD, 1e-3); }
Test(cuda_gemm, bf16_odd_shapes) { check_gemm_shapes(NN_BF16, odd_shapes, ODD, 1e-3); }
Test(cuda_gemm, fp32_headline_shapes) { check_gemm_shapes(NN_F32, headline_shapes, HEADLINE, 1e-5); }
Test(cuda_gemm, fp16_headline_shapes) { check_gemm_shapes(NN_F16, headline_shapes, HEADLINE, 1e-3); }
Test(cuda_gemm, bf16_headline_shapes) { check_gemm_shapes(NN_BF16, headline_shapes, HEADLINE, 1e-3); }

// K = 0: C = beta C exactly (beta = 0 clears C).
Test(cuda_gemm, empty_product_scales_c) {
  Pair p = open_pair();
  for (int d = 0; d < 3; d++) {
    check_gemm(p, (NnDtype)d, 0, 0, 7, 9, 0, 1.0f, 0.0f, 0.0);
    check_gemm(p, (NnDtype)d, 1, 1, 7, 9, 0, 1.0f, 0.5f, 0.0);
  }
  close_pair(p);
}

// C stored in the operands' low precision (the backward pass's input gradients): each backend
// rounds its own fp32 sum, so the two may differ by a unit in the last place of the largest value
// (2^-7 of it in bf16, 2^-10 in fp16) beside the sums' difference; K = 0 stores zeros.
Test(cuda_gemm, low_precision_c) {
  Pair p = open_pair();
  for (int d = NN_F16; d <= NN_BF16; d++) {
    double ulp = d == NN_BF16 ? 0x1p-7 : 0x1p-10;
    for (size_t s = 0; s < ODD; s++)
      for (int t = 0; t < 4; t++)
        check_gemm_to(p, (NnDtype)d, (NnDtype)d, t >> 1, t & 1, odd_shapes[s][0], odd_shapes[s][1], odd_shapes[s][2],
                      1.0f, 0.0f, 1e-3 + ulp);
    check_gemm_to(p, (NnDtype)d, (NnDtype)d, 0, 0, 1024, 2048, 1024, 1.0f, 0.0f, 1e-3 + ulp);  // dy W (headline)
    check_gemm_to(p, (NnDtype)d, (NnDtype)d, 0, 0, 7, 9, 0, 1.0f, 0.0f, 0.0);
  }
  close_pair(p);
}

// fp16 C at the overflow threshold: cuBLAS's conversion of its fp32 sums must round to inf where
// IEEE does (as the CPU does, test_nn_ops), not saturate at 65504: fp16's found-inf check relies on it.
Test(cuda_gemm, fp16_c_rounds_to_inf_at_the_overflow_threshold) {
  Pair p = open_pair();
  gemm_fp16_overflow_case(p.cpu, "cpu");
  gemm_fp16_overflow_case(p.gpu, "cuda");
  close_pair(p);
}

Test(cuda_gemm, tf32_switch) {
  Pair p = open_pair();
  backend_set_tf32(p.cpu, 1);  // a no-op on the CPU
  backend_set_tf32(p.gpu, 1);
  check_gemm(p, NN_F32, 0, 1, 1024, 1024, 2048, 1.0f, 0.0f, 5e-3);
  backend_set_tf32(p.gpu, 0);
  check_gemm(p, NN_F32, 0, 1, 1024, 1024, 2048, 1.0f, 0.0f, 1e-5);
  close_pair(p);
}

// --- bias + activation ---------------------------------------------------------------------------------------------

static void check_bias_act_forward(Pair p, int B, int H, int act, NnDtype dtype, int in_place) {
  Rng rng;
  rng_seed(&rng, 77u + (uint64_t)B * H + (uint64_t)act * 3 + dtype);
  size_t n = (size_t)B * H, es = nn_dtype_size(dtype);
  float *in = malloc(n * 4), *bias = malloc((size_t)H * 4);
  fill(in, n, &rng, -5, 5);
  fill(bias, H, &rng, -1, 1);
  void *out[2];
  Backend *bk[2] = {p.cpu, p.gpu};
  for (int k = 0; k < 2; k++) {
    float *x = put(bk[k], in, n * 4), *bb = put(bk[k], bias, (size_t)H * 4);
    void *o = in_place ? (void *)x : backend_alloc(bk[k], n * es);
    backend_bias_act_forward(bk[k], o, dtype, x, bb, B, H, act);
    out[k] = get(bk[k], o, n * es);
  }
  char what[96];
  snprintf(what, sizeof what, "bias_act_forward %s act %d (%d, %d)%s", nn_dtype_name(dtype), act, B, H,
           in_place ? " in place" : "");
  assert_same_bits(out[1], out[0], n, es, what);
  free(in), free(bias), free(out[0]), free(out[1]);
}

// Pre-activations where the shared formulas branch: past tanh's clamp (+-7.905), the infinities,
// NaN (kept by tanh and relu), -0 and subnormals, and random bit patterns; fp32 outputs, the
// CPU's bits except that a NaN matches any NaN (x86 keeps a NaN's payload, a GPU gives its own).
Test(cuda_bias_act, forward_matches_cpu_bits_at_the_edges) {
  Pair p = open_pair();
  enum { B = 8, H = 1024 };
  const size_t n = (size_t)B * H;
  float *in = malloc(n * 4), *bias = calloc(H, 4);
  Rng rng;
  rng_seed(&rng, 7907);
  for (size_t i = 0; i < n; i++) {
    uint32_t u = (uint32_t)rng_next_u64(&rng);
    if (i % 2)
      memcpy(&in[i], &u, 4);
    else
      in[i] = (float)(40.0 * rng_uniform(&rng) - 20.0);
  }
  const float edges[] = {NAN,
                         -NAN,
                         INFINITY,
                         -INFINITY,
                         -0.0f,
                         1e-40f,
                         -1e-40f,
                         7.90531110763549805f,
                         nextafterf(7.90531110763549805f, 9.0f),
                         -7.9053111f,
                         9.0f,
                         -9.0f,
                         1e30f,
                         -1e30f};
  memcpy(in, edges, sizeof edges);
  for (int act = 0; act < NN_ACT_COUNT; act++) {
    float *out[2];
    Backend *bk[2] = {p.cpu, p.gpu};
    for (int k = 0; k < 2; k++) {
      float *x = put(bk[k], in, n * 4), *bb = put(bk[k], bias, (size_t)H * 4), *o = backend_alloc(bk[k], n * 4);
      backend_bias_act_forward(bk[k], o, NN_F32, x, bb, B, H, act);
      out[k] = get(bk[k], o, n * 4);
      backend_free(bk[k], x), backend_free(bk[k], bb), backend_free(bk[k], o);
    }
    for (size_t i = 0; i < n; i++) {
      if (isnan(out[0][i]) && isnan(out[1][i])) continue;
      cr_assert(memcmp(&out[0][i], &out[1][i], 4) == 0, "act %d of %a [%zu]: cuda %a, cpu %a", act, in[i], i, out[1][i],
                out[0][i]);
    }
    free(out[0]), free(out[1]);
  }
  free(in), free(bias);
  close_pair(p);
}

Test(cuda_bias_act, forward_matches_cpu_bits) {
  Pair p = open_pair();
  for (int act = 0; act < NN_ACT_COUNT; act++)
    for (int d = 0; d < 3; d++) {
      check_bias_act_forward(p, 37, 300, act, (NnDtype)d, 0);
      check_bias_act_forward(p, 256, 2048, act, (NnDtype)d, 0);
    }
  for (int act = 0; act < NN_ACT_COUNT; act++) check_bias_act_forward(p, 33, 65, act, NN_F32, 1);
  close_pair(p);
}

typedef struct {
  int B, H, act;
  NnDtype din_dtype, out_dtype;
  int transposed;
  int in_place;        // 1: din is dout's memory (dout of din's dtype); 2: no din (transposed only: din_t and dbias)
  NnDtype dout_dtype;  // fp32 (0), or a low precision (an input gradient from backend_gemm_to)
} BackwardCase;

static void check_bias_act_backward(Pair p, BackwardCase c) {
  Rng rng;
  rng_seed(&rng, 99u + (uint64_t)c.B * c.H + (uint64_t)c.act * 5 + c.din_dtype * 7 + c.out_dtype * 11);
  size_t n = (size_t)c.B * c.H, es = nn_dtype_size(c.din_dtype), os = nn_dtype_size(c.out_dtype),
         gs = nn_dtype_size(c.dout_dtype);
  float *dout = malloc(n * 4), *y = malloc(n * 4), *dbias = malloc((size_t)c.H * 4);
  fill(dout, n, &rng, -2, 2);
  fill(y, n, &rng, -1, 1);
  fill(dbias, c.H, &rng, -1, 1);  // accumulated into
  void *ys = stored(y, n, c.out_dtype), *gs_bits = stored(dout, n, c.dout_dtype);
  void *din[2], *din_t[2], *db[2];
  Backend *bk[2] = {p.cpu, p.gpu};
  for (int k = 0; k < 2; k++) {
    void *d_out = put(bk[k], gs_bits, n * gs);
    float *d_bias = put(bk[k], dbias, (size_t)c.H * 4);
    void *d_y = put(bk[k], ys, n * os), *d_din_t = backend_alloc(bk[k], n * es);
    void *d_din = c.in_place == 1 ? (void *)d_out : c.in_place == 2 ? NULL : backend_alloc(bk[k], n * es);
    if (c.transposed)
      backend_bias_act_backward_t(bk[k], d_din, d_din_t, c.din_dtype, d_bias, d_out, c.dout_dtype, d_y, c.out_dtype,
                                  c.B, c.H, c.act);
    else
      backend_bias_act_backward(bk[k], d_din, c.din_dtype, d_bias, d_out, c.dout_dtype, d_y, c.out_dtype, c.B, c.H,
                                c.act);
    din[k] = d_din ? get(bk[k], d_din, n * es) : NULL;
    din_t[k] = get(bk[k], d_din_t, n * es);
    db[k] = get(bk[k], d_bias, (size_t)c.H * 4);
  }
  char what[128];
  snprintf(what, sizeof what, "bias_act_backward%s act %d din %s dout %s out %s (%d, %d)%s", c.transposed ? "_t" : "",
           c.act, nn_dtype_name(c.din_dtype), nn_dtype_name(c.dout_dtype), nn_dtype_name(c.out_dtype), c.B, c.H,
           c.in_place == 1   ? " in place"
           : c.in_place == 2 ? " without din"
                             : "");
  if (din[0]) assert_same_bits(din[1], din[0], n, es, what);
  const float *g = db[1], *cpu = db[0];
  for (int h = 0; h < c.H; h++) {
    double mass = 0.0;
    for (int b = 0; b < c.B; b++) mass += fabs((double)dout[(size_t)b * c.H + h]);
    double tol = 1e-5 * mass + 2.4e-7 * fabs((double)cpu[h]);
    cr_assert(fabs((double)g[h] - (double)cpu[h]) <= tol, "%s: dbias[%d]: cpu %.9g, cuda %.9g (tolerance %.3g)", what,
              h, cpu[h], g[h], tol);
  }
  if (c.transposed) assert_same_bits(din_t[1], din_t[0], n, es, what);
  free(dout), free(y), free(dbias), free(ys), free(gs_bits);
  for (int k = 0; k < 2; k++) free(din[k]), free(din_t[k]), free(db[k]);
}

Test(cuda_bias_act, backward_matches_the_cpu) {
  Pair p = open_pair();
  static const int shapes[][2] = {{70, 45}, {1, 300}, {257, 33}, {1024, 512}};  // 257, 70: partial 64-row tiles
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (int act = 0; act < NN_ACT_COUNT; act++)
      for (int dd = 0; dd < 3; dd++)
        for (int od = 0; od < 3; od++)
          for (int t = 0; t < 2; t++)
            check_bias_act_backward(
                p, (BackwardCase){shapes[s][0], shapes[s][1], act, (NnDtype)dd, (NnDtype)od, t, 0, NN_F32});
  for (int act = 0; act < NN_ACT_COUNT; act++)
    for (int t = 0; t < 2; t++) check_bias_act_backward(p, (BackwardCase){300, 70, act, NN_F32, NN_BF16, t, 1, NN_F32});
  for (int dd = 0; dd < 3; dd++)  // the first layer's call: din_t and dbias only
    check_bias_act_backward(p, (BackwardCase){257, 300, NN_ACT_TANH, (NnDtype)dd, (NnDtype)dd, 1, 2, NN_F32});
  // more 64-row tiles than a grid's 65535 rows of blocks: each block takes every 65535th tile
  check_bias_act_backward(p, (BackwardCase){65535 * 64 + 65, 3, NN_ACT_TANH, NN_F32, NN_F32, 1, 0, NN_F32});
  // dout in the low precision, as mlp_backward passes it: apart and in place
  for (int dd = NN_F16; dd <= NN_BF16; dd++)
    for (int t = 0; t < 2; t++)
      for (int ip = 0; ip < 2; ip++)
        check_bias_act_backward(p, (BackwardCase){257, 300, NN_ACT_TANH, (NnDtype)dd, (NnDtype)dd, t, ip, (NnDtype)dd});
  close_pair(p);
}

// --- casts, scaling ------------------------------------------------------------------------------------------------

// fp32 sources: random magnitudes 2^-30 .. 2^17 of both signs, and the edge values of fp16 and bf16.
static void cast_sources(float *x, size_t n, Rng *rng) {
  static const float special[] = {0.0f,          -0.0f,     INFINITY,        -INFINITY, NAN,
                                  65504.0f,      65519.99f, 65520.0f,        -65520.0f, 5.9604645e-8f,
                                  2.9802322e-8f, 1.0e-45f,  1.17549435e-38f, 3.0e38f,   6.1035156e-5f};
  for (size_t i = 0; i < n; i++) {
    double mag = ldexp(1.0 + rng_uniform(rng), (int)rng_below(rng, 48) - 30);
    x[i] = (float)(rng_below(rng, 2) ? -mag : mag);
  }
  memcpy(x, special, sizeof special);
}

Test(cuda_cast, every_dtype_pair_matches_cpu_bits) {
  Pair p = open_pair();
  enum { n = 100003 };
  Rng rng;
  rng_seed(&rng, 5);
  float *f = malloc(n * 4);
  uint16_t *h = malloc(n * 2);
  cast_sources(f, n, &rng);
  for (size_t i = 0; i < n; i++) h[i] = (uint16_t)i;  // every 16-bit pattern, NaNs included
  Backend *bk[2] = {p.cpu, p.gpu};
  for (int from = 0; from < 3; from++)
    for (int to = 0; to < 3; to++) {
      size_t fs = nn_dtype_size((NnDtype)from), ts = nn_dtype_size((NnDtype)to);
      void *out[2];
      for (int k = 0; k < 2; k++) {
        void *in = put(bk[k], from == NN_F32 ? (void *)f : (void *)h, n * fs);
        void *o = backend_alloc(bk[k], n * ts);
        backend_cast(bk[k], o, (NnDtype)to, in, (NnDtype)from, n);
        out[k] = get(bk[k], o, n * ts);
        backend_free(bk[k], in), backend_free(bk[k], o);
      }
      char what[64];
      snprintf(what, sizeof what, "cast %s -> %s", nn_dtype_name((NnDtype)from), nn_dtype_name((NnDtype)to));
      assert_same_bits(out[1], out[0], n, ts, what);
      free(out[0]), free(out[1]);
    }
  free(f), free(h);
  close_pair(p);
}

Test(cuda_scale, scale_and_scale_by_match_cpu_bits) {
  Pair p = open_pair();
  enum { n = 1000003 };
  Rng rng;
  rng_seed(&rng, 6);
  float *x = malloc(n * 4), alpha = 0.37f;
  fill(x, n, &rng, -100, 100);
  Backend *bk[2] = {p.cpu, p.gpu};
  void *scaled[2], *scaled_by[2];
  for (int k = 0; k < 2; k++) {
    float *d = put(bk[k], x, n * 4), *a = put(bk[k], &alpha, 4);
    backend_scale(bk[k], d, -1.7f, n);
    scaled[k] = get(bk[k], d, n * 4);
    backend_scale_by(bk[k], d, a, n);
    scaled_by[k] = get(bk[k], d, n * 4);
  }
  assert_same_bits(scaled[1], scaled[0], n, 4, "scale");
  assert_same_bits(scaled_by[1], scaled_by[0], n, 4, "scale_by");
  free(x), free(scaled[0]), free(scaled[1]), free(scaled_by[0]), free(scaled_by[1]);
  close_pair(p);
}

// --- gather ---------------------------------------------------------------------------------------------------------

// Rows of 4-byte words, of 2-byte words (fp16 / bf16 observations: 517 of them) and of odd bytes:
// each of the kernel's word widths.
Test(cuda_gather, rows_match_cpu_bits) {
  Pair p = open_pair();
  static const int shapes[][3] = {{257, 33 * 4, 500},
                                  {1024, 4, 131072},
                                  {3, 2048 * 4, 4},
                                  {1024, 517 * 2, 4096},
                                  {65, 7, 9}};  // B, row bytes, rows
  Rng rng;
  rng_seed(&rng, 8);
  Backend *bk[2] = {p.cpu, p.gpu};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int B = shapes[s][0], W = shapes[s][1], rows = shapes[s][2];
    unsigned char *src = malloc((size_t)rows * W);
    int32_t *index = malloc((size_t)B * 4);
    for (size_t i = 0; i < (size_t)rows * W; i++) src[i] = (unsigned char)rng_below(&rng, 256);
    for (int b = 0; b < B; b++) index[b] = (int32_t)rng_below(&rng, (uint64_t)rows);
    void *out[2];
    for (int k = 0; k < 2; k++) {
      void *d_src = put(bk[k], src, (size_t)rows * W), *d_out = backend_alloc(bk[k], (size_t)B * W);
      int32_t *d_index = put(bk[k], index, (size_t)B * 4);
      backend_gather_rows(bk[k], d_out, d_src, d_index, B, (size_t)W, rows);
      out[k] = get(bk[k], d_out, (size_t)B * W);
    }
    assert_same_bits(out[1], out[0], (size_t)B * W, 1, "gather_rows");
    free(src), free(index), free(out[0]), free(out[1]);
  }
  close_pair(p);
}

// With a device "auto" opens CUDA, whose kernel records the bad index for the next sync or
// download to report; without one, the CPU, which checks before copying. Both exit 1. (These do
// not skip: a skipped test fails .exit_code.)
Test(cuda_gather, index_out_of_range_exits_at_sync, .exit_code = 1) {
  Backend *b = backend_open("auto");
  float *src = backend_alloc(b, 10 * 4 * sizeof(float)), *out = backend_alloc(b, 3 * 4 * sizeof(float));
  int32_t index[3] = {0, 9, 10};  // rows = 10: the last is out of range
  int32_t *d_index = put(b, index, sizeof index);
  backend_gather_rows(b, out, src, d_index, 3, 4 * sizeof(float), 10);
  backend_sync(b);
  cr_assert_fail("%s: backend_sync returned after an out-of-range gather index", backend_name(b));
}

Test(cuda_gather, negative_index_exits_at_download, .exit_code = 1) {
  Backend *b = backend_open("auto");
  float *src = backend_alloc(b, 10 * sizeof(float)), *out = backend_alloc(b, 2 * sizeof(float)), host[2];
  int32_t index[2] = {-1, 0};
  int32_t *d_index = put(b, index, sizeof index);
  backend_gather_rows(b, out, src, d_index, 2, sizeof(float), 10);
  backend_download(b, host, out, sizeof host);
  cr_assert_fail("%s: backend_download returned after a negative gather index", backend_name(b));
}

// A fault recorded after the last wait is reported when the backend closes, not dropped with it.
Test(cuda_gather, index_out_of_range_exits_at_close, .exit_code = 1) {
  Backend *b = backend_open("auto");
  float *src = backend_alloc(b, 10 * sizeof(float)), *out = backend_alloc(b, 2 * sizeof(float));
  int32_t index[2] = {3, 10};
  int32_t *d_index = put(b, index, sizeof index);
  backend_gather_rows(b, out, src, d_index, 2, sizeof(float), 10);
  backend_close(b);
  cr_assert_fail("backend_close returned after an out-of-range gather index");
}

// --- graphs ----------------------------------------------------------------------------------------------------------

typedef struct {
  Backend *b;
  float *x;
  float alpha;  // changed between calls by the refusal test
  int calls;    // host calls of the function
} GraphScale;

static void graph_scale(void *p) {
  GraphScale *g = p;
  g->calls++;
  backend_scale(g->b, g->x, g->alpha, 4096);
}

// On CUDA the first call runs the function eagerly (the warm-up), the second records it and
// launches the graph, later calls only launch it: five calls double x five times with two host
// calls of the function; a replay reads x as it is at launch (an upload between launches counts);
// after a reset the next call is a warm-up again.
Test(cuda_graph, warm_up_then_record_then_replay) {
  Backend *b = cuda_or_skip();
  enum { N = 4096 };
  float *host = malloc(N * sizeof(float));
  for (int i = 0; i < N; i++) host[i] = (float)(i + 1);
  GraphScale g = {b, put(b, host, N * sizeof(float)), 2.0f, 0};
  BackendGraph graph = {0};
  backend_graph_run(b, &graph, graph_scale, &g);
  cr_assert(graph.exec == NULL && g.calls == 1, "the first call runs eagerly");
  backend_graph_run(b, &graph, graph_scale, &g);
  cr_assert(graph.exec != NULL && g.calls == 2, "the second call records");
  for (int k = 0; k < 3; k++) backend_graph_run(b, &graph, graph_scale, &g);
  cr_assert_eq(g.calls, 2, "replays do not call the function");
  float *got = get(b, g.x, N * sizeof(float));
  for (int i = 0; i < N; i++)
    cr_assert_eq(got[i], 32.0f * (float)(i + 1), "x[%d] = %g after five doublings", i, got[i]);
  free(got);
  for (int i = 0; i < N; i++) host[i] = -(float)i;
  backend_upload(b, g.x, host, N * sizeof(float));
  backend_graph_run(b, &graph, graph_scale, &g);
  got = get(b, g.x, N * sizeof(float));
  for (int i = 0; i < N; i++)
    cr_assert_eq(got[i], -2.0f * (float)i, "x[%d] = %g: the replay read stale data", i, got[i]);
  free(got);
  backend_graph_reset(b, &graph);
  backend_graph_run(b, &graph, graph_scale, &g);
  cr_assert(graph.exec == NULL && g.calls == 3, "after a reset the first call is a warm-up again");
  backend_graph_reset(b, &graph);
  free(host);
  backend_close(b);
}

// A function whose arguments differ between the warm-up and the recording is refused at the
// recording (CUDA) or at the second call (CPU): exit 1 on either (no skip: a skip fails .exit_code).
Test(cuda_graph, changed_arguments_are_refused_at_the_recording, .exit_code = 1) {
  Backend *b = backend_open("auto");
  GraphScale g = {b, backend_alloc(b, 4096 * sizeof(float)), 2.0f, 0};
  BackendGraph graph = {0};
  backend_graph_run(b, &graph, graph_scale, &g);
  g.alpha = 3.0f;
  backend_graph_run(b, &graph, graph_scale, &g);
  backend_sync(b);
  cr_assert_fail("%s: a changed scalar was recorded", backend_name(b));
}

// A recorded graph keeps the GEMMs' compute type it was recorded with, so changing the TF32 switch
// while one is alive is refused (exit 1); after a reset it is allowed. In a child process: CUDA must
// not be initialised before a fork, and Criterion's exit-code check cannot tell a skip from a pass.
// The child exits 77 when there is no device.
Test(cuda_graph, the_tf32_switch_is_refused_while_a_graph_is_recorded) {
  for (int reset = 0; reset < 2; reset++) {
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
      Backend *b = backend_open("cuda");
      if (!b) _exit(77);
      GraphScale g = {b, backend_alloc(b, 4096 * sizeof(float)), 2.0f, 0};
      BackendGraph graph = {0};
      for (int k = 0; k < 3; k++) backend_graph_run(b, &graph, graph_scale, &g);  // warm-up, record, launch
      if (reset) backend_graph_reset(b, &graph);
      backend_set_tf32(b, 1);
      backend_sync(b);
      _exit(0);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "the child did not exit: status %d", status);
    if (WEXITSTATUS(status) == 77) cr_skip_test("no CUDA device");
    cr_assert_eq(WEXITSTATUS(status), reset ? 0 : 1, "%s: exit status %d", reset ? "after a reset" : "graph alive",
                 WEXITSTATUS(status));
  }
}

// --- value loss ------------------------------------------------------------------------------------------------------

Test(cuda_mse, forward_and_backward_match_cpu) {
  Pair p = open_pair();
  static const int sizes[] = {1, 1024, 4099};
  Rng rng;
  rng_seed(&rng, 9);
  Backend *bk[2] = {p.cpu, p.gpu};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int B = sizes[s];
    float *pred = malloc((size_t)B * 4), *target = malloc((size_t)B * 4), dloss = 0.7f, loss[2];
    fill(pred, B, &rng, -3, 3);
    fill(target, B, &rng, -3, 3);
    double ref = 0.0;
    for (int i = 0; i < B; i++) {
      float d = pred[i] - target[i];
      ref += (double)d * d;
    }
    ref /= B;
    void *dpred[2];
    for (int k = 0; k < 2; k++) {
      float *d_pred = put(bk[k], pred, (size_t)B * 4), *d_target = put(bk[k], target, (size_t)B * 4);
      float *d_loss = backend_alloc(bk[k], 4), *d_dloss = put(bk[k], &dloss, 4);
      float *d_dpred = backend_alloc(bk[k], (size_t)B * 4);
      backend_mse_forward(bk[k], d_loss, d_pred, d_target, B);
      backend_mse_backward(bk[k], d_dpred, d_dloss, d_pred, d_target, B);
      backend_download(bk[k], &loss[k], d_loss, 4);
      dpred[k] = get(bk[k], d_dpred, (size_t)B * 4);
    }
    cr_assert(fabs(loss[1] - ref) <= 1e-6 * ref, "mse B %d: cuda %.9g, double reference %.9g", B, loss[1], ref);
    cr_assert(fabs(loss[1] - loss[0]) <= 1e-4 * loss[0], "mse B %d: cuda %.9g, cpu %.9g", B, loss[1], loss[0]);
    assert_same_bits(dpred[1], dpred[0], (size_t)B, 4, "mse_backward");
    free(pred), free(target), free(dpred[0]), free(dpred[1]);
  }
  close_pair(p);
}

// --- a recorded training step against the same step run eagerly ----------------------------------------------
//
// The graph test above records one scale kernel. This one records what the trainer's update graph
// holds (memset nodes, cuBLAS GEMMs into fp32 and fp16 C, the bias + activation backward whose
// partials live in the cuBLAS workspace, the fused unscale + norm through ctx->partials, Adam through
// the scalar slots and the device step counter, the GradScaler update) and checks every replay
// bit-exactly against the same calls made eagerly on a twin set of buffers. Adam writes the fp16
// weights the next call's GEMM reads, so a replay that reused stale values or raced shows at once.
typedef struct {
  Backend *b;
  uint16_t *x, *w;  // input (B, K) fp16; weights (H, K) fp16 = params rounded
  float *pre, *dbias, *grads, *params, *m, *v;
  uint16_t *y, *din, *din_t;  // (B, H) fp16; din_t (H, B)
  float *scale, *found_inf, *total, *coef;
  int32_t *step, *tracker;
} StepBufs;
enum { SB_B = 257, SB_H = 384, SB_K = 200 };

static void train_step(void *p) {
  StepBufs *s = p;
  size_t n = (size_t)SB_H * SB_K;
  backend_gemm(s->b, NN_F16, 0, 1, SB_B, SB_H, SB_K, 1.0f, s->x, s->w, 0.0f, s->pre);
  backend_bias_act_forward(s->b, s->y, NN_F16, s->pre, s->dbias, SB_B, SB_H, NN_ACT_TANH);
  backend_memset_zero(s->b, s->grads, n * sizeof(float));
  backend_bias_act_backward_t(s->b, s->din, s->din_t, NN_F16, s->dbias, s->pre, NN_F32, s->y, NN_F16, SB_B, SB_H,
                              NN_ACT_TANH);
  backend_gemm(s->b, NN_F16, 0, 0, SB_H, SB_K, SB_B, 1.0f, s->din_t, s->x, 1.0f, s->grads);
  backend_memset_zero(s->b, s->found_inf, sizeof(float));
  backend_unscale_clip_coef(s->b, s->grads, n, n, s->scale, s->found_inf, s->total, s->coef, 0.5f);
  AdamHyper hyper = {1e-3, 0.9, 0.999, 1e-5};
  backend_adam_step(s->b, s->params, s->grads, s->m, s->v, n, hyper, NULL, s->step, s->found_inf, s->coef, s->w,
                    NN_F16);
  backend_grad_scaler_update(s->b, s->scale, s->tracker, s->found_inf, 2.0, 0.5, 2);
}

static StepBufs step_bufs(Backend *b, const uint16_t *x, const float *params) {
  size_t n = (size_t)SB_H * SB_K, bh = (size_t)SB_B * SB_H;
  StepBufs s = {.b = b};
  s.x = put(b, x, (size_t)SB_B * SB_K * 2);
  s.params = put(b, params, n * 4);
  s.w = backend_alloc(b, n * 2);
  backend_cast(b, s.w, NN_F16, s.params, NN_F32, n);
  s.pre = backend_alloc(b, bh * 4), s.y = backend_alloc(b, bh * 2);
  s.din = backend_alloc(b, bh * 2), s.din_t = backend_alloc(b, bh * 2);
  s.dbias = backend_alloc(b, SB_H * 4), s.grads = backend_alloc(b, n * 4);
  s.m = backend_alloc(b, n * 4), s.v = backend_alloc(b, n * 4);
  float scale = 1024.0f;
  s.scale = put(b, &scale, 4);
  s.found_inf = backend_alloc(b, 4), s.total = backend_alloc(b, 4), s.coef = backend_alloc(b, 4);
  s.step = backend_alloc(b, 4), s.tracker = backend_alloc(b, 4);
  return s;
}

static void assert_same_device_bytes(Backend *b, const void *x, const void *y, size_t bytes, const char *what, int k) {
  unsigned char *hx = get(b, x, bytes), *hy = get(b, y, bytes);
  for (size_t i = 0; i < bytes; i++)
    cr_assert_eq(hx[i], hy[i], "call %d: %s byte %zu: eager %02x, graph %02x", k, what, i, hx[i], hy[i]);
  free(hx), free(hy);
}

Test(cuda_graph, a_recorded_training_step_equals_the_eager_one_bit_for_bit) {
  Backend *b = cuda_or_skip();
  size_t n = (size_t)SB_H * SB_K, bh = (size_t)SB_B * SB_H;
  Rng rng;
  rng_seed(&rng, 4242);
  float *xf = malloc((size_t)SB_B * SB_K * 4), *params = malloc(n * 4);
  fill(xf, (size_t)SB_B * SB_K, &rng, -1, 1);
  fill(params, n, &rng, -0.1, 0.1);
  uint16_t *x = stored(xf, (size_t)SB_B * SB_K, NN_F16);
  StepBufs eager = step_bufs(b, x, params), rec = step_bufs(b, x, params);
  BackendGraph graph = {0};
  for (int k = 0; k < 6; k++) {  // warm-up, recording + launch, then four replays
    train_step(&eager);
    backend_graph_run(b, &graph, train_step, &rec);
    cr_assert_eq(graph.exec != NULL, k >= 1, "call %d: graph %p", k, graph.exec);
    assert_same_device_bytes(b, eager.params, rec.params, n * 4, "params", k);
    assert_same_device_bytes(b, eager.w, rec.w, n * 2, "fp16 weights", k);
    assert_same_device_bytes(b, eager.m, rec.m, n * 4, "adam m", k);
    assert_same_device_bytes(b, eager.v, rec.v, n * 4, "adam v", k);
    assert_same_device_bytes(b, eager.dbias, rec.dbias, SB_H * 4, "dbias", k);
    assert_same_device_bytes(b, eager.din_t, rec.din_t, bh * 2, "din_t", k);
    assert_same_device_bytes(b, eager.total, rec.total, 4, "grad norm", k);
    assert_same_device_bytes(b, eager.scale, rec.scale, 4, "loss scale", k);
    assert_same_device_bytes(b, eager.step, rec.step, 4, "adam step", k);
  }
  int32_t steps = 0;
  backend_download(b, &steps, rec.step, 4);
  cr_assert_eq(steps, 6, "every call stepped (no inf at these sizes): %d", steps);
  backend_graph_reset(b, &graph);
  free(xf), free(params), free(x);
  backend_close(b);
}
