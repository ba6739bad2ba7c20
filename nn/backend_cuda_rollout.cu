// nn/backend_cuda_rollout.cu: GAE, the permutation, the PPO loss, explained variance on CUDA.
//
// PLACEHOLDER: every function exits with "not implemented yet"; replaced in this branch of work.
#include "nn/backend_cuda.h"

void cuda_gae(Backend *backend, float *advantages, float *returns, const float *rewards, const float *values, const float *episode_starts, const float *last_values, const float *last_dones, int T, int N, double gamma, double lambda) {
  check_fail("cuda_gae", __FILE__, __LINE__, "not implemented yet", 0);
}

size_t cuda_permutation_scratch_bytes(const Backend *backend, size_t n) {
  check_fail("cuda_permutation_scratch_bytes", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_permutation(Backend *backend, int32_t *perm, void *scratch, size_t n, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  check_fail("cuda_permutation", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_ppo_loss(Backend *backend, float *stats, float *dlogp, float *dentropy, float *dvalues, const float *logp, const float *entropy, const float *values, const float *old_logp, const float *old_values, const float *advantages, const float *returns, int B, PpoLossHyper hyper, const float *loss_scale) {
  check_fail("cuda_ppo_loss", __FILE__, __LINE__, "not implemented yet", 0);
}

void cuda_explained_variance(Backend *backend, float *out, const float *pred, const float *target, size_t n) {
  check_fail("cuda_explained_variance", __FILE__, __LINE__, "not implemented yet", 0);
}
