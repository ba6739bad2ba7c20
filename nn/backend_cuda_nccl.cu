// nn/backend_cuda_nccl.cu: the all-reduce of a multi-rank run on device memory, through NCCL
// (ppo/dist.h: one rank per GPU). Compiled in builds where CMake found NCCL (PPO_HAVE_NCCL).
//
// The ranks join one communicator: rank 0 makes NCCL's unique id, ppo/dist.c broadcasts it over
// MPI, every rank joins with its rank (ncclCommInitRank, on the device this backend opened). The
// sums run on the backend's stream, queued behind the backward that wrote the gradients and ahead
// of the optimiser that reads them: no host wait. NCCL's all-reduce gives every rank the same
// bytes, so the replicas stay identical as they do with MPI on the CPU.
// Depends on nn/backend_cuda.h, NCCL.
#include <nccl.h>
#include <string.h>

#include "nn/backend_cuda.h"  // and common/check.h, common/error.h

#define NCCL_CHECK(call)                                                               \
  do {                                                                                 \
    ncclResult_t nccl_check_r_ = (call);                                               \
    if (nccl_check_r_ != ncclSuccess)                                                  \
      check_fail(#call, __FILE__, __LINE__, ncclGetErrorString(nccl_check_r_), 0);     \
  } while (0)

size_t cuda_comm_id_bytes(const Backend *backend) { return sizeof(ncclUniqueId); }

int cuda_comm_make_id(Backend *backend, void *id) {
  ncclResult_t r = ncclGetUniqueId((ncclUniqueId *)id);
  if (r == ncclSuccess) return 0;
  error_set("backend 'cuda': NCCL could not make the communicator's id (%s)", ncclGetErrorString(r));
  return -1;
}

int cuda_comm_join(Backend *backend, const void *id, int rank, int size) {
  CudaContext *ctx = cuda_ctx(backend);
  ncclUniqueId uid;
  memcpy(&uid, id, sizeof uid);
  ncclComm_t comm = NULL;
  CUDA_CHECK(cudaSetDevice(ctx->device));
  ncclResult_t r = ncclCommInitRank(&comm, size, uid, rank);
  if (r != ncclSuccess) {
    error_set("backend 'cuda': rank %d of %d could not join the NCCL communicator on device %d (%s; each rank "
              "needs its own GPU)",
              rank, size, ctx->device, ncclGetErrorString(r));
    return -1;
  }
  ctx->comm = comm;
  return 0;
}

void cuda_allreduce_sum_f32(Backend *backend, float *x, size_t n) {
  CudaContext *ctx = cuda_ctx(backend);
  NCCL_CHECK(ncclAllReduce(x, x, n, ncclFloat32, ncclSum, (ncclComm_t)ctx->comm, ctx->stream));
}

void cuda_allreduce_sum_f64(Backend *backend, double *x, size_t n) {
  CudaContext *ctx = cuda_ctx(backend);
  NCCL_CHECK(ncclAllReduce(x, x, n, ncclFloat64, ncclSum, (ncclComm_t)ctx->comm, ctx->stream));
}

void cuda_comm_close(CudaContext *ctx) {
  if (ctx->comm) NCCL_CHECK(ncclCommDestroy((ncclComm_t)ctx->comm));
  ctx->comm = NULL;
}
