// test/cuda/philox_device.h: C interface to the device side of test_rng_cuda.c.
#ifndef PPO_TEST_PHILOX_DEVICE_H
#define PPO_TEST_PHILOX_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint32_t *ours, *curand;               // (n) words: common/rng.h on the device, and curand()
  float *ours_uniform, *curand_uniform;  // (n) the same words mapped by rng_uniform_from_u32 / curand_uniform
} PhiloxDeviceResult;                    // host buffers owned by the caller

int philox_device_available(char *why, size_t capacity);  // 1, or 0 and the reason in why
// Runs both generators for words offset..offset+n-1 of (seed, subsequence). 0, or -1 and why.
int philox_device_compare(uint64_t seed, uint64_t subsequence, uint64_t offset, int n, PhiloxDeviceResult *result,
                          char *why, size_t capacity);

#ifdef __cplusplus
}
#endif

#endif
