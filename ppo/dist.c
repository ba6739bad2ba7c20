// ppo/dist.c: what the MPI and the single-process builds share (ppo/dist.h): the root test, the
// replica check and the backend-memory reductions, on top of the primitives of ppo/dist_mpi.c or
// ppo/dist_none.c (CMake compiles one of the two).
#include "ppo/dist.h"

#include <string.h>

bool dist_is_root(void) { return dist_rank() == 0; }

// Backend memory is host memory on the CPU backend: MPI reduces it in place. A device backend
// needs its own all-reduce (NCCL on the device pointers, with the backend's stream) here.
static void check_host_memory(Backend *backend, const char *what) {
  if (strcmp(backend_name(backend), "cpu") != 0)
    dist_abort(EXIT_RUNTIME,
               "%s: an all-reduce of %s backend memory across ranks is not built yet (run the ranks "
               "with [run] device = cpu)",
               what, backend_name(backend));
}

void dist_allreduce_sum_f32(Backend *backend, float *x, size_t n) {
  if (dist_size() == 1) return;
  check_host_memory(backend, "dist_allreduce_sum_f32");
  dist_host_allreduce_sum_f32(x, n);
}

void dist_allreduce_sum_f64(Backend *backend, double *x, size_t n) {
  if (dist_size() == 1) return;
  check_host_memory(backend, "dist_allreduce_sum_f64");
  dist_host_allreduce_sum_f64(x, n);
}

bool dist_check_identical(const void *data, size_t bytes) {
  if (dist_size() == 1) return true;
  // FNV-1a over 64-bit words (the tail bytewise): a replica that drifted by one bit differs.
  uint64_t hash = 1469598103934665603ull;
  const unsigned char *p = data;
  size_t words = bytes / 8;
  for (size_t i = 0; i < words; i++) {
    uint64_t w;
    memcpy(&w, p + 8 * i, 8);
    hash = (hash ^ w) * 1099511628211ull;
  }
  for (size_t i = 8 * words; i < bytes; i++) hash = (hash ^ p[i]) * 1099511628211ull;
  uint64_t root_hash = hash;
  dist_host_bcast(&root_hash, sizeof root_hash, 0);
  return dist_host_allreduce_max_int(root_hash != hash) == 0;
}
