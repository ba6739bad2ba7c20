// test/cuda/philox_device.cu: runs the shared Philox code (common/rng.h) and cuRAND's Philox
// side by side on the GPU, for test_rng_cuda.c. The engine's sampling and permutations use the
// shared code on both backends; this proves it is cuRAND's stream, draw for draw.
#include <cuda_runtime.h>
#include <curand_kernel.h>
#include <stdio.h>

#include "common/rng.h"
#include "test/cuda/philox_device.h"

// Thread i: word `offset + i` of (seed, subsequence) from both implementations.
__global__ void philox_compare_kernel(uint64_t seed, uint64_t subsequence, uint64_t offset, int n,
                                      uint32_t *ours, uint32_t *theirs, float *ours_u, float *theirs_u) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  ours[i] = philox_u32(seed, subsequence, offset + (uint64_t)i);
  ours_u[i] = rng_uniform_from_u32(ours[i]);
  curandStatePhilox4_32_10_t state;
  curand_init(seed, subsequence, offset + (uint64_t)i, &state);
  theirs[i] = curand(&state);
  curand_init(seed, subsequence, offset + (uint64_t)i, &state);
  theirs_u[i] = curand_uniform(&state);
}

extern "C" int philox_device_available(char *why, size_t capacity) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    snprintf(why, capacity, "no CUDA device (%s)", err != cudaSuccess ? cudaGetErrorString(err) : "0 devices");
    return 0;
  }
  return 1;
}

#define DEVICE_CHECK(call)                                                                            \
  do {                                                                                                \
    cudaError_t e_ = (call);                                                                          \
    if (e_ != cudaSuccess) {                                                                          \
      snprintf(why, capacity, "%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));   \
      return -1;                                                                                      \
    }                                                                                                 \
  } while (0)

extern "C" int philox_device_compare(uint64_t seed, uint64_t subsequence, uint64_t offset, int n,
                                     PhiloxDeviceResult *result, char *why, size_t capacity) {
  uint32_t *words = NULL;
  float *uniforms = NULL;
  DEVICE_CHECK(cudaMalloc(&words, 2 * (size_t)n * sizeof(uint32_t)));
  DEVICE_CHECK(cudaMalloc(&uniforms, 2 * (size_t)n * sizeof(float)));
  philox_compare_kernel<<<(n + 255) / 256, 256>>>(seed, subsequence, offset, n, words, words + n, uniforms,
                                                   uniforms + n);
  DEVICE_CHECK(cudaGetLastError());
  DEVICE_CHECK(cudaMemcpy(result->ours, words, (size_t)n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  DEVICE_CHECK(cudaMemcpy(result->curand, words + n, (size_t)n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  DEVICE_CHECK(cudaMemcpy(result->ours_uniform, uniforms, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
  DEVICE_CHECK(cudaMemcpy(result->curand_uniform, uniforms + n, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
  DEVICE_CHECK(cudaFree(words));
  DEVICE_CHECK(cudaFree(uniforms));
  return 0;
}
