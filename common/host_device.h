// common/host_device.h: PPO_HD marks per-element math shared by the CPU and CUDA backends.
// In a .cu file it expands to __host__ __device__, in C to nothing, so one inline function
// serves both sides and the CPU tests cover the GPU's arithmetic (DESIGN.md section 3).
#ifndef PPO_COMMON_HOST_DEVICE_H
#define PPO_COMMON_HOST_DEVICE_H

#if defined(__CUDACC__)
#define PPO_HD __host__ __device__
#else
#define PPO_HD
#endif

#endif
