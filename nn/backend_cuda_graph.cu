// nn/backend_cuda_graph.cu: backend_graph_run on CUDA: the function's ops at its second call (the
// first is an eager warm-up, nn/backend.c) are recorded by stream capture into a CUDA graph, which
// that call and each later one launch with one cudaGraphLaunch; and
// page-locked host memory (backend_host_alloc), the other half of a cheap rollout step.
//
// What makes the trainer's functions recordable is checked on every backend by nn/backend.c (no
// host wait, upload or allocation inside); what CUDA adds: cuBLAS must not allocate while
// capturing, so its workspace is ours (cublasSetWorkspace in reserve_workspace), and every op
// runs on ctx->stream, the stream being captured. Thread-local capture mode: a CUDA call of
// another host thread (none today) does not invalidate the recording.
// Depends on nn/backend_cuda.h.
#include "nn/backend_cuda.h"

void *cuda_graph_record(Backend *backend, void (*fn)(void *arg), void *arg) {
  CudaContext *ctx = cuda_ctx(backend);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(ctx->stream, cudaStreamCaptureModeThreadLocal));
  fn(arg);
  CUDA_CHECK(cudaStreamEndCapture(ctx->stream, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_CHECK(cudaGraphDestroy(graph));  // the executable graph keeps what it needs
  return (void *)exec;
}

void cuda_graph_launch(Backend *backend, void *exec) {
  CUDA_CHECK(cudaGraphLaunch((cudaGraphExec_t)exec, cuda_ctx(backend)->stream));
}

void cuda_graph_destroy(Backend *backend, void *exec) {
  // Destroying an executable graph that is still running is allowed: CUDA finishes it first.
  CUDA_CHECK(cudaGraphExecDestroy((cudaGraphExec_t)exec));
}

// cudaHostAlloc's memory is page-locked: copies from and to it are DMA without a staging copy, and
// an upload from it is asynchronous (nn/backend.h states the caller's part).
void *cuda_host_alloc(Backend *backend, size_t bytes) {
  CUDA_CHECK(cudaSetDevice(cuda_ctx(backend)->device));  // the context the pinning belongs to (cuda_alloc)
  void *ptr = NULL;
  cudaError_t err = cudaHostAlloc(&ptr, bytes, cudaHostAllocDefault);
  return err == cudaSuccess ? ptr : NULL;  // the wrapper reports a NULL
}

void cuda_host_free(Backend *backend, void *ptr) { CUDA_CHECK(cudaFreeHost(ptr)); }
