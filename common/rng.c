// common/rng.c: the sequential generator and the bulk Philox fill (see rng.h).
#include "rng.h"

#include <math.h>

void rng_fill_uniform(float *out, size_t n, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  // Element i depends only on (seed, subsequence, offset + i): parallel loops give the same bits.
  // Small fills (a rollout step's few uniforms) stay out of OpenMP: an `if (false)` region still
  // costs libgomp about 330 ns per call here, more than the fill.
  if (n > 65536) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) out[i] = rng_uniform_from_u32(philox_u32(seed, subsequence, offset + i));
  } else {
    for (size_t i = 0; i < n; i++) out[i] = rng_uniform_from_u32(philox_u32(seed, subsequence, offset + i));
  }
}

static inline uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void rng_seed(Rng *rng, uint64_t seed) {
  uint64_t sm = seed;
  for (int i = 0; i < 4; i++) rng->s[i] = splitmix64_next(&sm);
  // splitmix64 is a bijection of its counter, so four consecutive outputs are never all zero.
}

uint64_t rng_next_u64(Rng *rng) {
  uint64_t *s = rng->s;
  uint64_t result = rotl64(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl64(s[3], 45);
  return result;
}

double rng_uniform(Rng *rng) { return (double)(rng_next_u64(rng) >> 11) * 0x1.0p-53; }

uint64_t rng_below(Rng *rng, uint64_t bound) {
  // Lemire's multiply-shift with rejection (ACM TOMACS 2019): unbiased for every bound.
  unsigned __int128 m = (unsigned __int128)rng_next_u64(rng) * bound;
  uint64_t low = (uint64_t)m;
  if (low < bound) {
    uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      m = (unsigned __int128)rng_next_u64(rng) * bound;
      low = (uint64_t)m;
    }
  }
  return (uint64_t)(m >> 64);
}

double rng_normal(Rng *rng) {
  // Box-Muller with u1 in (0, 1] so log() is finite; the second variate is discarded so that the
  // state stays the four words of Rng (checkpointable, no hidden spare).
  double u1 = 1.0 - rng_uniform(rng);
  double u2 = rng_uniform(rng);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

uint64_t rng_stream_seed(uint64_t base_seed, uint64_t stream) {
  // Mix both words so that nearby (seed, stream) pairs give unrelated states.
  uint64_t sm = base_seed ^ (0xD1B54A32D192ED03ull * (stream + 1));
  return splitmix64_next(&sm);
}
