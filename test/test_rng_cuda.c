// test/test_rng_cuda.c: the shared Philox code equals cuRAND's Philox4_32_10 on the GPU, and both
// equal the CPU: the same (seed, subsequence, offset) gives the same bits on every backend.
// Skipped, visibly, when no CUDA device is present (STYLE rule 12); CUDA is initialised inside
// the test body because Criterion forks per test.
#include <criterion/criterion.h>
#include <stdlib.h>

#include "common/rng.h"
#include "test/cuda/philox_device.h"

Test(philox_cuda, device_matches_curand_and_cpu) {
  char why[256];
  if (!philox_device_available(why, sizeof why)) cr_skip_test("%s", why);
  enum { N = 4099 };  // not a multiple of 4: streams start and end inside a block
  static const uint64_t cases[][3] = {{0, 0, 0}, {42, 7, 3}, {0x123456789abcdefull, 1ull << 40, (1ull << 33) + 1}};
  PhiloxDeviceResult r = {malloc(N * 4), malloc(N * 4), malloc(N * 4), malloc(N * 4)};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    uint64_t seed = cases[c][0], subsequence = cases[c][1], offset = cases[c][2];
    cr_assert_eq(philox_device_compare(seed, subsequence, offset, N, &r, why, sizeof why), 0, "%s", why);
    for (int i = 0; i < N; i++) {
      uint32_t cpu = philox_u32(seed, subsequence, offset + (uint64_t)i);
      cr_assert_eq(r.ours[i], r.curand[i], "case %zu word %d: ours %08x, curand %08x", c, i, r.ours[i], r.curand[i]);
      cr_assert_eq(r.ours[i], cpu, "case %zu word %d: device %08x, CPU %08x", c, i, r.ours[i], cpu);
      cr_assert_eq(r.ours_uniform[i], r.curand_uniform[i], "case %zu uniform %d: %.9g vs %.9g", c, i, r.ours_uniform[i],
                   r.curand_uniform[i]);
      cr_assert_eq(r.ours_uniform[i], rng_uniform_from_u32(cpu));
    }
  }
  free(r.ours);
  free(r.curand);
  free(r.ours_uniform);
  free(r.curand_uniform);
}
