// common/rng.h: random numbers as explicit values (STYLE rule 6). No global state anywhere.
//
// Two generators, each for its job:
//
// 1. Philox4x32-10 (Salmon et al. 2011, Random123), counter-based: the i-th number of a stream
//    is a pure function of (seed, subsequence, i), so any thread, any thread count and the GPU
//    produce the same draws. The layout is cuRAND's curand_init(seed, subsequence, offset):
//    key = seed, counter = (offset / 4, subsequence) as 128 bits, output word offset % 4.
//    rng_uniform_from_u32 is curand_uniform's mapping to (0, 1]. Used for action sampling and
//    minibatch permutations, keyed by (seed, step).
//
// 2. xoshiro256** (Blackman and Vigna 2018), seeded through splitmix64: a small sequential state
//    (32 bytes) owned by each env, for episode starts and synthetic markets. The state is a plain
//    struct, so a checkpoint saves and restores it exactly.
//
// The inline functions are PPO_HD: a CUDA kernel includes this header and computes the same bits.
// Depends on host_device.h.
#ifndef PPO_COMMON_RNG_H
#define PPO_COMMON_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "host_device.h"

#ifdef __cplusplus
extern "C" {
#endif

// --- Philox4x32-10 -------------------------------------------------------------------------------

typedef struct {
  uint32_t v[4];
} Philox4x32;  // a 128-bit counter block, or four output words

PPO_HD static inline uint32_t philox_mulhilo32(uint32_t a, uint32_t b, uint32_t *hi) {
  uint64_t product = (uint64_t)a * (uint64_t)b;
  *hi = (uint32_t)(product >> 32);
  return (uint32_t)product;
}

// The bijection itself: 10 rounds over counter `ctr` with key (key0, key1).
PPO_HD static inline Philox4x32 philox4x32_10(Philox4x32 ctr, uint32_t key0, uint32_t key1) {
  for (int round = 0; round < 10; round++) {
    if (round > 0) {  // the key schedule bumps before rounds 2..10
      key0 += 0x9E3779B9u;
      key1 += 0xBB67AE85u;
    }
    uint32_t hi0, hi1;
    uint32_t lo0 = philox_mulhilo32(0xD2511F53u, ctr.v[0], &hi0);
    uint32_t lo1 = philox_mulhilo32(0xCD9E8D57u, ctr.v[2], &hi1);
    Philox4x32 next = {{hi1 ^ ctr.v[1] ^ key0, lo1, hi0 ^ ctr.v[3] ^ key1, lo0}};
    ctr = next;
  }
  return ctr;
}

// Four consecutive words of stream (seed, subsequence) starting at word 4 * block.
PPO_HD static inline Philox4x32 philox_block(uint64_t seed, uint64_t subsequence, uint64_t block) {
  Philox4x32 ctr = {{(uint32_t)block, (uint32_t)(block >> 32), (uint32_t)subsequence, (uint32_t)(subsequence >> 32)}};
  return philox4x32_10(ctr, (uint32_t)seed, (uint32_t)(seed >> 32));
}

// Word `offset` of stream (seed, subsequence): cuRAND's curand() after curand_init(seed, subsequence, offset).
PPO_HD static inline uint32_t philox_u32(uint64_t seed, uint64_t subsequence, uint64_t offset) {
  return philox_block(seed, subsequence, offset >> 2).v[offset & 3];
}

// curand_uniform's mapping: x * 2^-32 + 2^-33 in float arithmetic, in (0, 1] (never 0, so log() is safe).
PPO_HD static inline float rng_uniform_from_u32(uint32_t x) {
  return (float)x * 2.3283064e-10f + (2.3283064e-10f / 2.0f);
}

// Fills out[i] = uniform of word (offset + i) of stream (seed, subsequence), i < n. Same values for
// any thread count (each element depends on its index only).
void rng_fill_uniform(float *out, size_t n, uint64_t seed, uint64_t subsequence, uint64_t offset);

// --- splitmix64 and xoshiro256** -----------------------------------------------------------------------

// splitmix64 (Steele, Lea, Flood 2014): advances *state and returns the next word. Used to expand
// one 64-bit seed into a full xoshiro state.
PPO_HD static inline uint64_t splitmix64_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

typedef struct {
  uint64_t s[4];
} Rng;  // xoshiro256** state; all-zero is invalid (rng_seed never produces it)

void rng_seed(Rng *rng, uint64_t seed);        // state from splitmix64(seed); any seed is fine
uint64_t rng_next_u64(Rng *rng);               // next 64 random bits
double rng_uniform(Rng *rng);                  // in [0, 1), 53 random bits
uint64_t rng_below(Rng *rng, uint64_t bound);  // uniform integer in [0, bound), unbiased (Lemire); bound > 0
double rng_normal(Rng *rng);                   // standard normal (Box-Muller, one draw per call, no cached spare)
uint64_t rng_stream_seed(uint64_t base_seed, uint64_t stream);  // a seed for stream `stream` of base_seed (e.g. env id)

#ifdef __cplusplus
}
#endif

#endif
