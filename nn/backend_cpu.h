// nn/backend_cpu.h: the CPU backend's private state, shared by backend_cpu.c (element-wise ops,
// memory) and backend_cpu_gemm.c (GEMM through OpenBLAS or oneDNN). Seen only by those files.
// Depends on nn/backend_impl.h.
#ifndef PPO_NN_BACKEND_CPU_H
#define PPO_NN_BACKEND_CPU_H

#include "nn/backend_impl.h"

typedef struct CpuGemm CpuGemm;  // the GEMM library's state (oneDNN engine, stream, primitive cache)

typedef struct {
  void *workspace;  // fp32 copies of fp16 (and, without oneDNN, bf16) GEMM operands
  size_t workspace_bytes;
  CpuGemm *gemm;
} CpuContext;

void cpu_gemm_open(Backend *backend);  // picks the library, fills backend->describe; exits on failure
void cpu_gemm_close(CpuContext *ctx);  // frees the GEMM state
void cpu_gemm(Backend *backend, NnDtype dtype, int trans_a, int trans_b, int M, int N, int K, float alpha,
              const void *A, const void *B, float beta, float *C);

#endif
