// nn/backend_cuda_module.cu: the entry of the CUDA backend's module (libppo_cuda.so).
//
// The CUDA backend is built as a module beside the programs and loaded by nn/backend.c only when a
// run asks for CUDA on a machine with a CUDA driver and a device: cuBLAS(Lt) alone adds about 210
// MiB of resident memory when it is loaded (its initialisers; measured with an empty program
// linked to libcublasLt, 2026-11-28), which every CPU run of a CUDA-enabled build paid before.
//
// The module uses three functions of the program that loads it: error_set (the message a failed
// open leaves in the program's own thread-local buffer), check_fail (a run-time failure exits
// through the program's handler) and nn_dtype_size. They come in a table (CudaModuleHost) rather
// than as symbols the program exports, so the programs export nothing and need no special link
// flags; the module is built with hidden visibility, so these definitions bind inside it.
// Depends on nn/backend_impl.h, common/error.h, common/check.h.
#include <stdarg.h>
#include <stdio.h>

extern "C" {
#include "common/check.h"
#include "common/error.h"
#include "nn/backend_impl.h"
}

static const CudaModuleHost *host;

extern "C" void error_set(const char *fmt, ...) {
  char message[ERROR_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  host->error_set("%s", message);
}

extern "C" void check_fail(const char *stmt, const char *file, int line, const char *hint, int use_errno) {
  host->check_fail(stmt, file, line, hint, use_errno);
  __builtin_unreachable();  // (the program's check_fail exits)
}

extern "C" size_t nn_dtype_size(NnDtype dtype) { return host->dtype_size(dtype); }

extern "C" __attribute__((visibility("default"))) const BackendOps *ppo_cuda_module_ops(void) {
  return backend_cuda_ops();  // CUDA_MODULE_OPS: the table alone, for test_cuda_module
}

extern "C" __attribute__((visibility("default"))) Backend *ppo_cuda_module_open(const CudaModuleHost *program) {
  host = program;
  if (program->backend_size != sizeof(Backend) || program->ops_size != sizeof(BackendOps)) {
    error_set("backend 'cuda': the CUDA backend module is of another build (Backend %zu / %zu bytes, ops %zu / %zu)",
              sizeof(Backend), program->backend_size, sizeof(BackendOps), program->ops_size);
    return NULL;
  }
  return backend_cuda_open();
}
