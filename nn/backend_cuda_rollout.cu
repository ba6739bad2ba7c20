// nn/backend_cuda_rollout.cu: GAE, the minibatch permutation, the PPO loss and the explained
// variance on CUDA, the twins of backend_cpu_rollout.c and backend_cpu_ppo.c (nn/backend.h states
// each contract).
//
// GAE and the permutation give the CPU's bits: GAE runs the CPU's float operations in the CPU's
// order (one thread per env; compiled with --fmad=false, see backend_cuda_ops.cu), and the
// permutation is a stable sort by the same Philox keys. The PPO loss and the explained variance
// reduce over samples in double with a block's fixed tree instead of the CPU's index order: the
// same bits run to run, within double rounding of the CPU (then rounded to float); their
// per-sample arithmetic is ops_math.h's, with CUDA's expf/logf (a few ulp from glibc's).
// No host synchronisation, no allocation: the permutation's scratch is the caller's.
// Legend: T horizon, N envs, B minibatch.
// Depends on nn/backend_cuda.h, nn/backend_cuda_device.cuh, nn/ops_math.h, common/rng.h; CUB.
#include <cub/device/device_radix_sort.cuh>

#include "nn/backend_cuda_device.cuh"

// --- GAE: one thread per env, a reverse scan over T -----------------------------------------------------------

enum { GAE_THREADS = 64 };  // N is tens to thousands of envs: small blocks spread them over the SMs

// Env n walks t = T-1 .. 0 as cpu_gae does, carrying the later step's value and episode start in
// registers (the same floats the CPU reads from memory). Consecutive envs are consecutive threads,
// so every step's loads and stores are coalesced across the warp.
__global__ static void gae_kernel(float *__restrict__ advantages, float *__restrict__ returns,
                                  const float *__restrict__ rewards, const float *__restrict__ values,
                                  const float *__restrict__ episode_starts, const float *__restrict__ last_values,
                                  const float *__restrict__ last_dones, int T, int N, float gamma, float gamma_lambda) {
  int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  float gae = 0.0f;
  float next_value = last_values[n], nonterminal = 1.0f - last_dones[n];
#pragma unroll 4
  for (int t = T - 1; t >= 0; t--) {
    size_t i = (size_t)t * (size_t)N + (size_t)n;
    float value = values[i];
    gae = nn_gae_step(rewards[i], value, next_value, nonterminal, gae, gamma, gamma_lambda);
    advantages[i] = gae;
    returns[i] = gae + value;
    next_value = value;                      // step t-1 bootstraps from values[t]
    nonterminal = 1.0f - episode_starts[i];  // and ends its episode when step t starts one
  }
}

void cuda_gae(Backend *backend, float *advantages, float *returns, const float *rewards, const float *values,
              const float *episode_starts, const float *last_values, const float *last_dones, int T, int N,
              double gamma, double lambda) {
  if (T == 0 || N == 0) return;
  CudaContext *ctx = cuda_ctx(backend);
  unsigned blocks = (unsigned)((N + GAE_THREADS - 1) / GAE_THREADS);
  gae_kernel<<<blocks, GAE_THREADS, 0, ctx->stream>>>(advantages, returns, rewards, values, episode_starts, last_values,
                                                      last_dones, T, N, (float)gamma, (float)(gamma * lambda));
  CUDA_CHECK_LAUNCH();
}

// --- permutation: Philox keys, then CUB's stable radix sort of (key, index) pairs ----------------------------

// Scratch layout for n indices, from the first 256-byte boundary at or after the caller's pointer
// (the size includes 255 bytes of slack for that): keys_in (n uint32), keys_out (n uint32),
// indices_in (n int32), then CUB's temporary storage; each piece starts on a 256-byte boundary.
// The sorted indices are written straight into perm (CUB's values_out), so no fourth array.
enum { SCRATCH_ALIGN = 256 };

static size_t align_up(size_t bytes) { return (bytes + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN; }

typedef struct {
  uint32_t *keys_in, *keys_out;
  int32_t *indices_in;
  void *temp;
  size_t temp_bytes;
} PermutationScratch;

// CUB's temporary storage for n pairs. With a NULL storage pointer CUB only computes the size on
// the host: no launch, no synchronisation. The same call (types, n, bits) sizes and runs the sort.
static size_t sort_temp_bytes(size_t n) {
  size_t bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(NULL, bytes, (const uint32_t *)NULL, (uint32_t *)NULL,
                                             (const int32_t *)NULL, (int32_t *)NULL, (int)n, 0, 32));
  return bytes;
}

static PermutationScratch permutation_scratch(void *scratch, size_t n) {
  uintptr_t base = ((uintptr_t)scratch + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
  size_t piece = align_up(n * sizeof(uint32_t));
  PermutationScratch s;
  s.keys_in = (uint32_t *)base;
  s.keys_out = (uint32_t *)(base + piece);
  s.indices_in = (int32_t *)(base + 2 * piece);
  s.temp = (void *)(base + 3 * piece);
  s.temp_bytes = sort_temp_bytes(n);
  return s;
}

size_t cuda_permutation_scratch_bytes(const Backend *backend, size_t n) {
  (void)backend;
  return SCRATCH_ALIGN - 1 + 3 * align_up(n * sizeof(uint32_t)) + sort_temp_bytes(n);
}

// keys[i] = word offset + i of (seed, subsequence), indices[i] = i: the CPU's (key << 32 | i) pairs.
__global__ static void permutation_keys_kernel(uint32_t *keys, int32_t *indices, size_t n, uint64_t seed,
                                               uint64_t subsequence, uint64_t offset, uint64_t blocks) {
  uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
  for (uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; k < blocks; k += stride) {
    Philox4x32 words = philox_walk_block(seed, subsequence, offset, k);
    for (int lane = 0; lane < 4; lane++) {
      size_t i = philox_walk_index(offset, n, k, lane);
      if (i == SIZE_MAX) continue;
      keys[i] = words.v[lane];
      indices[i] = (int32_t)i;
    }
  }
}

// CUB's radix sort is stable: indices with equal keys keep their ascending order, the CPU's tie
// rule (its LSD passes are stable too), so perm is the CPU's bit for bit.
void cuda_permutation(Backend *backend, int32_t *perm, void *scratch, size_t n, uint64_t seed, uint64_t subsequence,
                      uint64_t offset) {
  if (n == 0) return;
  CudaContext *ctx = cuda_ctx(backend);
  PermutationScratch s = permutation_scratch(scratch, n);
  uint64_t blocks = philox_walk_blocks(offset, n);
  permutation_keys_kernel<<<cuda_blocks(ctx, (size_t)blocks), CUDA_THREADS, 0, ctx->stream>>>(
      s.keys_in, s.indices_in, n, seed, subsequence, offset, blocks);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(s.temp, s.temp_bytes, (const uint32_t *)s.keys_in, s.keys_out,
                                             (const int32_t *)s.indices_in, perm, (int)n, 0, 32, ctx->stream));
}

// --- PPO loss: one block of 1024 threads per minibatch ------------------------------------------------------

// One block for any B: each thread takes samples b = threadIdx.x + k * PPO_LOSS_THREADS, at most
// ceil(B / 1024) of them. One block keeps every reduction in one kernel (no grid-wide barrier, no
// partials); at the shipped configurations' minibatches (64 to 1,024 samples: one or none per
// thread) it should cost a few microseconds (not yet measured on a GPU), beside GEMMs of
// milliseconds. [ppo] batch_size may be as large as the rollout (n_steps x n_envs), which this
// block then walks alone, on one multiprocessor.
enum { PPO_LOSS_THREADS = 1024 };

// The advantage normalisation's mean and divisor, as cpu_ppo_loss forms them (two passes in double).
__device__ static void advantage_moments(const float *advantages, int B, float *adv_mean, float *adv_div) {
  double sum = 0.0;
  for (int b = threadIdx.x; b < B; b += blockDim.x) sum += advantages[b];
  float mean = nn_ppo_adv_mean(cuda_block_sum(sum), B);
  double ss = 0.0;
  for (int b = threadIdx.x; b < B; b += blockDim.x) {
    double d = (double)advantages[b] - (double)mean;
    ss += d * d;
  }
  *adv_mean = mean;
  *adv_div = nn_ppo_adv_div(cuda_block_sum(ss), B);
}

__global__ static void __launch_bounds__(PPO_LOSS_THREADS)
    ppo_loss_kernel(float *stats, float *dlogp, float *dentropy, float *dvalues, const float *logp,
                    const float *entropy, const float *values, const float *old_logp, const float *old_values,
                    const float *advantages, const float *returns, int B, PpoLossHyper hyper, const float *loss_scale) {
  int normalize = hyper.normalize_advantage && B > 1;  // the same in every thread: the block sums stay collective
  float adv_mean = 0.0f, adv_div = 1.0f;
  if (normalize) advantage_moments(advantages, B, &adv_mean, &adv_div);
  NnPpoScalars s = nn_ppo_scalars(hyper.clip_range, hyper.clip_range_vf, hyper.ent_coef, hyper.vf_coef, normalize,
                                  adv_mean, adv_div, loss_scale ? *loss_scale : 1.0f, B);
  NnPpoSums sums = {0.0, 0.0, 0.0, 0.0, 0.0};
  for (int b = threadIdx.x; b < B; b += blockDim.x)
    nn_ppo_accumulate(&s, &sums, advantages[b], logp[b], old_logp[b], values[b], old_values[b], returns[b], entropy[b],
                      &dlogp[b], &dentropy[b], &dvalues[b]);
  sums.policy = cuda_block_sum(sums.policy);
  sums.value = cuda_block_sum(sums.value);
  sums.entropy = cuda_block_sum(sums.entropy);
  sums.kl = cuda_block_sum(sums.kl);
  sums.clipped = cuda_block_sum(sums.clipped);  // a count: exact in double
  if (threadIdx.x == 0) nn_ppo_stats(stats, &sums, B, hyper.ent_coef, hyper.vf_coef);
}

void cuda_ppo_loss(Backend *backend, float *stats, float *dlogp, float *dentropy, float *dvalues, const float *logp,
                   const float *entropy, const float *values, const float *old_logp, const float *old_values,
                   const float *advantages, const float *returns, int B, PpoLossHyper hyper, const float *loss_scale) {
  CudaContext *ctx = cuda_ctx(backend);
  ppo_loss_kernel<<<1, PPO_LOSS_THREADS, 0, ctx->stream>>>(stats, dlogp, dentropy, dvalues, logp, entropy, values,
                                                           old_logp, old_values, advantages, returns, B, hyper,
                                                           loss_scale);
  CUDA_CHECK_LAUNCH();
}

// --- advantage normalisation across ranks (ppo/dist.h: backend_advantage_*) -------------------------------
// One block of PPO_LOSS_THREADS per call, as the loss: a minibatch. The sums are block sums in
// double (fixed order, not the CPU's index order: a tolerance, not bits, against the CPU).

__global__ static void __launch_bounds__(PPO_LOSS_THREADS)
    advantage_count_sum_kernel(double *count_sum, const float *advantages, int B) {
  double sum = 0.0;
  for (int b = (int)threadIdx.x; b < B; b += PPO_LOSS_THREADS) sum += (double)advantages[b];
  sum = cuda_block_sum(sum);
  if (threadIdx.x == 0) {
    count_sum[0] = (double)B;
    count_sum[1] = sum;
  }
}

__global__ static void __launch_bounds__(PPO_LOSS_THREADS)
    advantage_sq_dev_kernel(double *sq_dev, const float *advantages, int B, const double *count_sum) {
  float mean = nn_ppo_adv_mean(count_sum[1], (int)count_sum[0]);
  double ss = 0.0;
  for (int b = (int)threadIdx.x; b < B; b += PPO_LOSS_THREADS) {
    double d = (double)advantages[b] - (double)mean;
    ss += d * d;
  }
  ss = cuda_block_sum(ss);
  if (threadIdx.x == 0) *sq_dev = ss;
}

__global__ static void advantage_normalize_kernel(float *advantages, int B, const double *count_sum,
                                                  const double *sq_dev) {
  double count = count_sum[0];
  if (count <= 1.0) return;  // torch's std of one sample is NaN; SB3 skips the normalisation then
  float mean = nn_ppo_adv_mean(count_sum[1], (int)count), div = nn_ppo_adv_div(*sq_dev, (int)count);
  for (int b = blockIdx.x * blockDim.x + threadIdx.x; b < B; b += gridDim.x * blockDim.x)
    advantages[b] = nn_ppo_adv_normalize(advantages[b], mean, div);
}

void cuda_advantage_count_sum(Backend *backend, double *count_sum, const float *advantages, int B) {
  advantage_count_sum_kernel<<<1, PPO_LOSS_THREADS, 0, cuda_ctx(backend)->stream>>>(count_sum, advantages, B);
  CUDA_CHECK_LAUNCH();
}

void cuda_advantage_sq_dev(Backend *backend, double *sq_dev, const float *advantages, int B, const double *count_sum) {
  advantage_sq_dev_kernel<<<1, PPO_LOSS_THREADS, 0, cuda_ctx(backend)->stream>>>(sq_dev, advantages, B, count_sum);
  CUDA_CHECK_LAUNCH();
}

void cuda_advantage_normalize(Backend *backend, float *advantages, int B, const double *count_sum,
                              const double *sq_dev) {
  CudaContext *ctx = cuda_ctx(backend);
  advantage_normalize_kernel<<<cuda_blocks(ctx, (size_t)B), CUDA_THREADS, 0, ctx->stream>>>(advantages, B, count_sum,
                                                                                          sq_dev);
  CUDA_CHECK_LAUNCH();
}

// --- explained variance: one block, two passes in double ----------------------------------------------------

// Once per iteration over the whole buffer (T N, about 10^5): one block of PPO_LOSS_THREADS reads
// it in tens of microseconds and needs no partials. n = 0 leaves every sum 0: Var[target] = 0, NaN.
__global__ static void __launch_bounds__(PPO_LOSS_THREADS)
    explained_variance_kernel(double *moments, const float *pred, const float *target, size_t n) {
  if (n == 0) {
    if (threadIdx.x < NN_EV_MOMENTS) moments[threadIdx.x] = 0.0;
    return;
  }
  double sum_y = 0.0, sum_d = 0.0;
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
    sum_y += target[i];
    sum_d += (double)target[i] - (double)pred[i];
  }
  double mean_y = cuda_block_sum(sum_y) / (double)n, mean_d = cuda_block_sum(sum_d) / (double)n;
  double var_y = 0.0, var_d = 0.0;
  for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
    double dy = target[i] - mean_y, dd = ((double)target[i] - (double)pred[i]) - mean_d;
    var_y += dy * dy;
    var_d += dd * dd;
  }
  var_y = cuda_block_sum(var_y);
  var_d = cuda_block_sum(var_d);
  if (threadIdx.x == 0) {
    moments[NN_EV_COUNT] = (double)n;
    moments[NN_EV_MEAN_Y] = mean_y, moments[NN_EV_M2_Y] = var_y;
    moments[NN_EV_MEAN_D] = mean_d, moments[NN_EV_M2_D] = var_d;
  }
}

void cuda_explained_variance(Backend *backend, double *moments, const float *pred, const float *target, size_t n) {
  CudaContext *ctx = cuda_ctx(backend);
  explained_variance_kernel<<<1, PPO_LOSS_THREADS, 0, ctx->stream>>>(moments, pred, target, n);
  CUDA_CHECK_LAUNCH();
}
