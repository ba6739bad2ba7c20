// ppo/dist_none.c: the world of one rank, for builds without MPI (ppo/dist.h). Every collective is
// the identity; dist_abort prints and exits.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ppo/dist.h"

void dist_init(int *argc, char ***argv) {
  const char *launcher;
  long copies = dist_unconnected_copies(&launcher);
  if (copies > 1)
    dist_abort(EXIT_BAD_INPUT,
               "%s started %ld processes, but this build has no MPI (%s): each would train alone into the same "
               "run directory",
               launcher, copies,
               PPO_MPI_SWITCHED_OFF ? "configured with -DPPO_MPI=OFF; configure with -DPPO_MPI=ON"
                                    : "CMake found none; install libopenmpi-dev and configure with -DPPO_MPI=ON");
}
void dist_finalize(void) {}
int dist_rank(void) { return 0; }
int dist_size(void) { return 1; }
const char *dist_describe(void) { return "1 rank (this build has no MPI)"; }

_Noreturn void dist_abort(int status, const char *fmt, ...) {
  if (fmt) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
  }
  exit(status);
}

void dist_host_allreduce_sum_f32(float *x, size_t n) {}
void dist_host_allreduce_sum_f64(double *x, size_t n) {}
void dist_host_allreduce_sum_i64(int64_t *x, size_t n) {}
int dist_host_allreduce_max_int(int value) { return value; }
void dist_host_bcast(void *buf, size_t bytes, int root) {}
void dist_host_gather(const void *send, void *recv, size_t bytes, int root) {
  if (recv != send) memcpy(recv, send, bytes);
}
void dist_host_allgather(const void *send, void *recv, size_t bytes) {
  if (recv != send) memcpy(recv, send, bytes);
}
void dist_barrier(void) {}
