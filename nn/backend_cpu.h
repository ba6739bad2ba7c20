// nn/backend_cpu.h: the CPU backend's private state, shared by backend_cpu.c (element-wise ops,
// memory) and backend_cpu_gemm.c (GEMM through OpenBLAS or oneDNN). Seen only by those files.
// Depends on nn/backend_impl.h.
#ifndef PPO_NN_BACKEND_CPU_H
#define PPO_NN_BACKEND_CPU_H

#include "nn/backend_impl.h"

// Loops shorter than this run on one thread: the fork costs more than the work (a minibatch of 256
// x 64 activations, 16,384 elements, takes a few microseconds; a parallel region as long when the
// machine is idle and far longer when another process holds a core).
#define CPU_PARALLEL_MIN 131072
#define CPU_CAST_BLOCK 4096  // elements per OpenMP work item in casts, roundings and Adam

// The inner loops are compiled three times (AVX-512, AVX2, baseline x86-64) and the loader picks
// the best the CPU has, so the library needs no -march and still vectorises here. The build is
// ISO C (-ffp-contract=off): no clone contracts a * b + c into one rounding, and the fmaf the
// source writes (Adam's element, nn_adam_element) is one correctly rounded operation on every
// clone (the v3 and v4 clones' FMA instruction, libm's fmaf on the baseline), so all three give
// the same bits.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define CPU_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CPU_VECTOR_CLONES
#endif

// CPU_FOR(cond, (loop header), body): the loop on OpenMP's threads (static schedule) when
// `cond` is true, else on the calling thread without entering OpenMP. A parallel region whose
// if() clause is false still costs about 0.2 us (GOMP_parallel with a team of one: 218 against 35
// ns for a 64-element loop, measured on the 2-core machine), which small networks pay on every op:
// a CartPole run makes about half a million such calls. CPU_FOR_OR also ORs `var` over the threads.
#define CPU_STRINGIFY(x) #x
#define CPU_FOR(cond, header, ...)                                        \
  do {                                                                    \
    if (cond) {                                                           \
      _Pragma("omp parallel for schedule(static)") for header __VA_ARGS__ \
    } else {                                                              \
      for                                                                 \
        header __VA_ARGS__                                                \
    }                                                                     \
  } while (0)
#define CPU_FOR_OR(cond, var, header, ...)                                                                \
  do {                                                                                                    \
    if (cond) {                                                                                           \
      _Pragma(CPU_STRINGIFY(omp parallel for schedule(static) reduction(| : var))) for header __VA_ARGS__ \
    } else {                                                                                              \
      for                                                                                                 \
        header __VA_ARGS__                                                                                \
    }                                                                                                     \
  } while (0)

typedef struct CpuGemm CpuGemm;  // the GEMM library's state (oneDNN engine, stream, primitive cache)

// Whether the hand-written AVX-512 paths (tile transposes, the weight layouts) may run: the CPU has
// AVX-512F and BW, and PPO_CPU_NO_AVX512=1 was not set when the last CPU backend opened (the tests
// set it to run the scalar loops those paths stand in for, which must give the same bytes).
// Compiler-made target_clones are not affected.
extern int cpu_avx512;
// Whether fp16 values are widened with F16C (AVX and F16C, and PPO_CPU_NO_AVX512=1 not set: that
// test mode runs every hand-written vector path's scalar loop).
extern int cpu_f16c;

// PPO_CPU_STRICT=1, a test mode: backend memory is mapped page by page and kept PROT_NONE outside
// the backend's own calls, so host code that touches it directly (which a GPU backend would not
// survive) faults at the line. At most CPU_STRICT_REGIONS live allocations.
enum { CPU_STRICT_REGIONS = 256 };
typedef struct {
  void *ptr;
  size_t bytes;
} CpuRegion;

typedef struct {
  void *workspace;  // fp32 copies of fp16 (and, without oneDNN, bf16) GEMM operands
  size_t workspace_bytes;
  CpuGemm *gemm;
  int strict;  // PPO_CPU_STRICT=1 at open
  int n_regions;
  CpuRegion regions[CPU_STRICT_REGIONS];
} CpuContext;

void cpu_gemm_open(Backend *backend);  // picks the library, fills backend->describe; exits on failure
void cpu_gemm_close(CpuContext *ctx);  // frees the GEMM state
void cpu_gemm(Backend *backend, NnDtype dtype, int trans_a, int trans_b, int M, int N, int K, float alpha,
              const void *A, const void *B, float beta, void *C, NnDtype c_dtype);
// Whether a product of this dtype and size runs on the calling thread without backend state (no
// workspace, no oneDNN primitive): fp32 products of at most 2^18 multiply-adds, OpenBLAS on one
// thread (cpu_lanes_together).
int cpu_gemm_on_caller(NnDtype dtype, double macs);
// dst[0 .. n) = src (fp16 or bf16) widened to fp32 (exact), vectorised (CPU_VECTOR_CLONES).
void cpu_widen_row(float *dst, const uint16_t *src, NnDtype dtype, int n);
// dst[at .. at + n) = src rounded to dtype (fp32: copied); the rounding of every low-precision store.
void cpu_store_lp(void *dst, NnDtype dtype, size_t at, const float *src, int n);
// The weight register (backend_weights_changed): fp16 weights kept widened to fp32, and with oneDNN
// bf16 weights kept in its layout (backend_cpu_gemm.c says when each is used).
void cpu_weights_changed(Backend *backend, const void *w, NnDtype dtype, int rows, int cols);
void cpu_weights_forget(CpuContext *ctx, const void *ptr, size_t bytes);  // backend memory freed
size_t cpu_weights_bytes(Backend *backend, NnDtype dtype, int rows, int cols);

// Rollout ops (backend_cpu_rollout.c): GAE, the random permutation.
void cpu_gae(Backend *backend, float *advantages, float *returns, const float *rewards, const float *values,
             const float *episode_starts, const float *last_values, const float *last_dones, int T, int N, double gamma,
             double lambda);
size_t cpu_permutation_scratch_bytes(const Backend *backend, size_t n);
void cpu_permutation(Backend *backend, int32_t *perm, void *scratch, size_t n, uint64_t seed, uint64_t subsequence,
                     uint64_t offset);
// PPO loss ops (backend_cpu_ppo.c).
void cpu_ppo_loss(Backend *backend, float *stats, float *dlogp, float *dentropy, float *dvalues, const float *logp,
                  const float *entropy, const float *values, const float *old_logp, const float *old_values,
                  const float *advantages, const float *returns, int B, PpoLossHyper hyper, const float *loss_scale);
void cpu_explained_variance(Backend *backend, double *moments, const float *pred, const float *target, size_t n);
void cpu_advantage_count_sum(Backend *backend, double *count_sum, const float *advantages, int B);
void cpu_advantage_sq_dev(Backend *backend, double *sq_dev, const float *advantages, int B, const double *count_sum);
void cpu_advantage_normalize(Backend *backend, float *advantages, int B, const double *count_sum, const double *sq_dev);

#endif
