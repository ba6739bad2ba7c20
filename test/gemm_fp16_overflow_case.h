// test/gemm_fp16_overflow_case.h: a GEMM whose fp32 sums straddle fp16's overflow threshold, stored
// into an fp16 C (backend_gemm_to, the backward pass's input gradients in fp16), checked against
// IEEE round-to-nearest-even by hand: 65519 rounds down to 65504 (fp16's largest), 65520 is the
// tie between 65504 (odd significand) and 65536 and goes to 65536 = inf, 65536 is inf, and the
// negatives mirror them. Those infinities are what fp16's found-inf check needs to see: a backend
// that saturated to 65504 would let the step through. Shared by test_nn_ops (CPU) and
// test_cuda_core (each backend of the pair). Header-only: one static function.
#ifndef PPO_TEST_GEMM_FP16_OVERFLOW_CASE_H
#define PPO_TEST_GEMM_FP16_OVERFLOW_CASE_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#include "nn/backend.h"
#include "nn/ops_math.h"

static void gemm_fp16_overflow_case(Backend *b, const char *name) {
  enum { M = 4, N = 3, K = 2 };
  // A (M, K) and B (K, N), every value exact in fp16; C = A B is exact in fp32.
  const float a[M * K] = {256, 1, 256, 1, -256, -1, 1, 0};
  const float bm[K * N] = {255.875f, 255.875f, 256, 16, 15, 0};
  const float want[M * N] = {INFINITY,  65504,  INFINITY,  INFINITY, 65504,    INFINITY,
                             -INFINITY, -65504, -INFINITY, 255.875f, 255.875f, 256};
  uint16_t ah[M * K], bh[K * N], ch[M * N];
  for (int i = 0; i < M * K; i++) ah[i] = nn_f32_to_f16(a[i]);
  for (int i = 0; i < K * N; i++) bh[i] = nn_f32_to_f16(bm[i]);
  void *A = backend_alloc(b, sizeof ah), *B = backend_alloc(b, sizeof bh), *C = backend_alloc(b, sizeof ch);
  backend_upload(b, A, ah, sizeof ah);
  backend_upload(b, B, bh, sizeof bh);
  backend_gemm_to(b, NN_F16, 0, 0, M, N, K, 1.0f, A, B, 0.0f, C, NN_F16);
  backend_download(b, ch, C, sizeof ch);
  for (int i = 0; i < M * N; i++) {
    float got = nn_f16_to_f32(ch[i]);
    cr_expect(got == want[i], "%s: fp16 C[%d, %d] = %.9g (bits %04x), IEEE rounding gives %.9g", name, i / N, i % N,
              got, ch[i], want[i]);
  }
  backend_free(b, A), backend_free(b, B), backend_free(b, C);
}

#endif
