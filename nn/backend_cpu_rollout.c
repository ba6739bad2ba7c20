// nn/backend_cpu_rollout.c: the CPU backend's rollout ops: GAE over the (T, N) buffer and the
// random permutation of the minibatch sampler (nn/backend.h documents both).
//
// Both are serial: GAE is a reverse scan of T x N (131,072 transitions of the headline config:
// well under a millisecond) and the permutation is a 4-pass radix sort of the same count; neither
// is worth an OpenMP region beside the update's GEMMs. Per-element math is nn/ops_math.h's, which
// the CUDA backend shares.
#include <stdint.h>
#include <string.h>

#include "common/rng.h"
#include "nn/backend_cpu.h"

void cpu_gae(Backend *backend, float *advantages, float *returns, const float *rewards, const float *values,
             const float *episode_starts, const float *last_values, const float *last_dones, int T, int N, double gamma,
             double lambda) {
  (void)backend;
  float gamma_f = (float)gamma, gamma_lambda = (float)(gamma * lambda);
  for (int n = 0; n < N; n++) {
    float gae = 0.0f;
    for (int t = T - 1; t >= 0; t--) {
      size_t i = (size_t)t * (size_t)N + (size_t)n;
      float nonterminal, next_value;
      if (t == T - 1) {
        nonterminal = 1.0f - last_dones[n];
        next_value = last_values[n];
      } else {
        nonterminal = 1.0f - episode_starts[i + (size_t)N];
        next_value = values[i + (size_t)N];
      }
      gae = nn_gae_step(rewards[i], values[i], next_value, nonterminal, gae, gamma_f, gamma_lambda);
      advantages[i] = gae;
    }
  }
  size_t total = (size_t)T * (size_t)N;
  for (size_t i = 0; i < total; i++) returns[i] = advantages[i] + values[i];
}

size_t cpu_permutation_scratch_bytes(const Backend *backend, size_t n) {
  (void)backend;
  return 2 * n * sizeof(uint64_t);  // (key << 32 | index) pairs, and the radix sort's second buffer
}

// Stable LSD radix sort of the pairs by their upper 32 bits (the key), 8 bits per pass: equal keys
// keep the index order they started in.
void cpu_permutation(Backend *backend, int32_t *perm, void *scratch, size_t n, uint64_t seed, uint64_t subsequence,
                     uint64_t offset) {
  (void)backend;
  uint64_t *a = scratch, *b = a + n;
  for (size_t i = 0; i < n; i++) a[i] = (uint64_t)philox_u32(seed, subsequence, offset + i) << 32 | (uint64_t)i;
  for (int shift = 32; shift < 64; shift += 8) {
    size_t count[257];
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++) count[((a[i] >> shift) & 0xFF) + 1]++;
    for (int d = 0; d < 256; d++) count[d + 1] += count[d];
    for (size_t i = 0; i < n; i++) b[count[(a[i] >> shift) & 0xFF]++] = a[i];
    uint64_t *swap = a;
    a = b;
    b = swap;
  }
  for (size_t i = 0; i < n; i++) perm[i] = (int32_t)(uint32_t)a[i];  // 4 passes: the result is back in the first half
}
