// nn/backend_cuda_device.cuh: device helpers shared by backend_cuda_ops.cu and
// backend_cuda_rollout.cu: the block sum behind every deterministic reduction, the scalar slots
// that hand a value from one kernel of an op to the next, and the walk over a Philox stream in
// 4-word blocks (uniforms, permutation keys).
//
// Kept out of nn/backend_cuda.h (the backend's shared private header, owned with backend_cuda.cu)
// because only these two files launch reductions and Philox walks.
// Depends on nn/backend_cuda.h, common/rng.h.
#ifndef PPO_NN_BACKEND_CUDA_DEVICE_CUH
#define PPO_NN_BACKEND_CUDA_DEVICE_CUH

#include "common/rng.h"
#include "nn/backend_cuda.h"

// Sum of v over the block in a fixed order: a shuffle-down tree inside each warp, then warp 0 adds
// the warp sums by the same tree. The order depends on blockDim.x only, never on timing, so the
// bits repeat run to run. Every thread of the block must call it (blockDim.x a multiple of 32, at
// most 1024); every thread gets the total. It synchronises the block twice.
__device__ static inline double cuda_block_sum(double v) {
  __shared__ double warp_sums[32];
  __shared__ double total;
  int lane = (int)(threadIdx.x & 31u), warp = (int)(threadIdx.x >> 5);
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, o);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, o);
    if (lane == 0) total = v;
  }
  __syncthreads();
  double result = total;
  __syncthreads();  // a following call may overwrite warp_sums and total only after every thread read
  return result;
}

// The 8 doubles of ctx->partials after the CUDA_REDUCE_BLOCKS partial sums: scratch for scalars
// that one kernel of an op computes and the next reads (the norm and clip coefficient of
// clip_grad_norm, Adam's per-step scalars). Stream order makes the hand-over safe; no op leaves
// anything there for a later op.
enum { CUDA_SCALAR_SLOT_BYTES = 8 * sizeof(double) };
static inline void *cuda_scalar_slots(CudaContext *ctx) { return ctx->partials + CUDA_REDUCE_BLOCKS; }

// Walking words offset .. offset + n - 1 of a Philox stream a 4-word block at a time (one philox4x32_10
// per 4 outputs instead of one per output): block k of the walk holds output indices
// 4 k - r .. 4 k - r + 3 with r = offset % 4, those in [0, n) being valid. The block counter is
// taken modulo 2^62, as (offset + i) / 4 is when offset + i wraps past 2^64 on the CPU.
static inline uint64_t philox_walk_blocks(uint64_t offset, size_t n) { return ((offset & 3u) + n + 3u) / 4u; }

__device__ static inline Philox4x32 philox_walk_block(uint64_t seed, uint64_t subsequence, uint64_t offset,
                                                      uint64_t k) {
  return philox_block(seed, subsequence, ((offset >> 2) + k) & 0x3FFFFFFFFFFFFFFFull);
}

// Output index of lane `lane` (0..3) of walk block k, or SIZE_MAX when it falls outside [0, n).
__device__ static inline size_t philox_walk_index(uint64_t offset, size_t n, uint64_t k, int lane) {
  uint64_t pos = 4u * k + (uint64_t)lane, r = offset & 3u;
  if (pos < r || pos - r >= n) return SIZE_MAX;
  return (size_t)(pos - r);
}

#endif
