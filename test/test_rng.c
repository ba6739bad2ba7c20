// test/test_rng.c: the random number generators against published known answers.
//
// Philox4x32-10: Random123's tests/kat_vectors (D. E. Shaw Research). xoshiro256**: the
// reference implementation's outputs from state {1, 2, 3, 4} (Blackman and Vigna).
// splitmix64: the reference outputs for seed 0. None of these numbers were computed here.
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "common/rng.h"

typedef struct {
  uint32_t ctr[4], key[2], expected[4];
} PhiloxKat;

static const PhiloxKat philox_kats[] = {
    {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
};

Test(philox, random123_known_answers) {
  for (size_t k = 0; k < sizeof philox_kats / sizeof philox_kats[0]; k++) {
    const PhiloxKat *kat = &philox_kats[k];
    Philox4x32 ctr = {{kat->ctr[0], kat->ctr[1], kat->ctr[2], kat->ctr[3]}};
    Philox4x32 out = philox4x32_10(ctr, kat->key[0], kat->key[1]);
    for (int i = 0; i < 4; i++)
      cr_assert_eq(out.v[i], kat->expected[i], "vector %zu word %d: got %08x, expected %08x", k, i, out.v[i],
                   kat->expected[i]);
  }
}

Test(philox, stream_layout_is_curand_s) {
  // The block with counter (block as 64 bits, subsequence as 64 bits) and key = seed: the third
  // KAT expressed that way; word `offset` of a stream is word offset % 4 of block offset / 4.
  uint64_t seed = 0x299f31d0a4093822ull;
  uint64_t subsequence = 0x0370734413198a2eull;
  Philox4x32 out = philox_block(seed, subsequence, 0x85a308d3243f6a88ull);
  for (int i = 0; i < 4; i++) cr_assert_eq(out.v[i], philox_kats[2].expected[i]);
  for (uint64_t offset = 0; offset < 64; offset++)
    cr_assert_eq(philox_u32(seed, subsequence, offset), philox_block(seed, subsequence, offset / 4).v[offset % 4]);
}

Test(philox, uniform_mapping_is_open_at_zero_closed_at_one) {
  cr_assert_gt(rng_uniform_from_u32(0), 0.0f);
  cr_assert_float_eq(rng_uniform_from_u32(0), 1.1641532e-10f, 1e-17);
  cr_assert_eq(rng_uniform_from_u32(0xffffffffu), 1.0f);
  cr_assert_float_eq(rng_uniform_from_u32(0x80000000u), 0.5f, 1e-7);
}

Test(philox, fill_is_independent_of_thread_count_and_split) {
  size_t n = 300001;  // above the parallel threshold, odd so blocks straddle threads
  float *one = malloc(n * sizeof *one), *two = malloc(n * sizeof *two), *tail = malloc(n * sizeof *tail);
  omp_set_num_threads(1);
  rng_fill_uniform(one, n, 42, 7, 3);
  omp_set_num_threads(2);
  rng_fill_uniform(two, n, 42, 7, 3);
  cr_assert(memcmp(one, two, n * sizeof *one) == 0, "1 and 2 threads differ");
  rng_fill_uniform(tail, n - 1000, 42, 7, 1003);  // a later offset continues the same stream
  cr_assert(memcmp(one + 1000, tail, (n - 1000) * sizeof *one) == 0, "offset does not continue the stream");
  rng_fill_uniform(tail, 1000, 42, 7, 3);  // a small fill (no OpenMP region) is the same stream
  cr_assert(memcmp(one, tail, 1000 * sizeof *one) == 0, "the serial fill differs from the parallel one");
  rng_fill_uniform(tail, 1000, 42, 8, 3);  // another subsequence is another stream
  cr_assert(memcmp(one, tail, 1000 * sizeof *one) != 0);
  free(one);
  free(two);
  free(tail);
}

Test(philox, uniform_moments) {
  size_t n = 1 << 20;
  float *u = malloc(n * sizeof *u);
  rng_fill_uniform(u, n, 2024, 0, 0);
  double sum = 0, sum_sq = 0;
  for (size_t i = 0; i < n; i++) {
    cr_assert(u[i] > 0.0f && u[i] <= 1.0f);
    sum += u[i];
    sum_sq += (double)u[i] * u[i];
  }
  double mean = sum / n, var = sum_sq / n - mean * mean;
  // Standard errors: mean sqrt(1/12/n) = 2.8e-4; the bounds are 5 SE.
  cr_assert(fabs(mean - 0.5) < 1.5e-3, "mean %g", mean);
  cr_assert(fabs(var - 1.0 / 12.0) < 1e-3, "variance %g", var);
  free(u);
}

Test(splitmix64, reference_outputs_for_seed_zero) {
  uint64_t state = 0;
  cr_assert_eq(splitmix64_next(&state), 0xe220a8397b1dcdafull);
  cr_assert_eq(splitmix64_next(&state), 0x6e789e6aa1b965f4ull);
  cr_assert_eq(splitmix64_next(&state), 0x06c45d188009454full);
}

Test(xoshiro, reference_outputs_for_state_1234) {
  static const uint64_t expected[10] = {11520u,
                                        0u,
                                        1509978240u,
                                        1215971899390074240u,
                                        1216172134540287360u,
                                        607988272756665600u,
                                        16172922978634559625u,
                                        8476171486693032832u,
                                        10595114339597558777u,
                                        2904607092377533576u};
  Rng rng = {{1, 2, 3, 4}};
  for (int i = 0; i < 10; i++) cr_assert_eq(rng_next_u64(&rng), expected[i], "output %d", i);
}

Test(xoshiro, seeding_is_splitmix) {
  Rng rng;
  rng_seed(&rng, 0);
  cr_assert_eq(rng.s[0], 0xe220a8397b1dcdafull);
  cr_assert_eq(rng.s[1], 0x6e789e6aa1b965f4ull);
  cr_assert_eq(rng.s[2], 0x06c45d188009454full);
}

Test(xoshiro, below_is_unbiased) {
  // Chi-square over 7 cells, 700,000 draws: 6 degrees of freedom, 99.9 % quantile 22.46.
  Rng rng;
  rng_seed(&rng, 99);
  long counts[7] = {0};
  for (int i = 0; i < 700000; i++) {
    uint64_t k = rng_below(&rng, 7);
    cr_assert_lt(k, 7u);
    counts[k]++;
  }
  double chi2 = 0;
  for (int k = 0; k < 7; k++) chi2 += (counts[k] - 100000.0) * (counts[k] - 100000.0) / 100000.0;
  cr_assert_lt(chi2, 22.46, "chi-square %g", chi2);
  cr_assert_eq(rng_below(&rng, 1), 0u);
}

Test(xoshiro, uniform_and_normal_moments) {
  Rng rng;
  rng_seed(&rng, 7);
  int n = 1000000;
  double s = 0, s2 = 0, s3 = 0, s4 = 0, u_min = 1, u_max = 0;
  for (int i = 0; i < n; i++) {
    double u = rng_uniform(&rng);
    u_min = fmin(u_min, u);
    u_max = fmax(u_max, u);
    double z = rng_normal(&rng);
    s += z;
    s2 += z * z;
    s3 += z * z * z;
    s4 += z * z * z * z;
  }
  cr_assert(u_min >= 0.0 && u_max < 1.0);
  double mean = s / n, var = s2 / n - mean * mean;
  // 5 standard errors: mean 0.005, variance 0.007, skew 0.012, kurtosis 0.025.
  cr_assert(fabs(mean) < 0.005, "mean %g", mean);
  cr_assert(fabs(var - 1) < 0.007, "variance %g", var);
  cr_assert(fabs(s3 / n) < 0.012, "third moment %g", s3 / n);
  cr_assert(fabs(s4 / n - 3) < 0.025, "fourth moment %g", s4 / n);
}

Test(xoshiro, streams_differ_and_repeat) {
  Rng a, b, c;
  rng_seed(&a, rng_stream_seed(1, 0));
  rng_seed(&b, rng_stream_seed(1, 1));
  rng_seed(&c, rng_stream_seed(1, 0));
  uint64_t x = rng_next_u64(&a), y = rng_next_u64(&b), z = rng_next_u64(&c);
  cr_assert_neq(x, y);
  cr_assert_eq(x, z);
  cr_assert_neq(rng_stream_seed(1, 0), rng_stream_seed(0, 1));
}
