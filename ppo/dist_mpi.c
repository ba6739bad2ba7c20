// ppo/dist_mpi.c: ranks and collectives over MPI_COMM_WORLD (ppo/dist.h). Compiled when CMake found
// MPI (PPO_MPI=AUTO or ON).
#include <limits.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "ppo/dist.h"

static bool started;  // dist_init called MPI_Init
static int world_rank = 0, world_size = 1;
static char description[160] = "1 rank (not started by mpirun or srun)";

// The environment an MPI launcher gives its processes: Open MPI's mpirun, PMIx (srun --mpi=pmix,
// Open MPI 4+), PMI-1/2 (MPICH's hydra, srun --mpi=pmi2).
static bool launched_by_mpi(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE");
}

void dist_init(int *argc, char ***argv) {
  const char *launcher;
  long copies = launched_by_mpi() ? 0 : dist_unconnected_copies(&launcher);
  if (copies > 1)
    dist_abort(EXIT_BAD_INPUT,
               "%s started %ld tasks without connecting them through MPI (srun needs --mpi=pmix or --mpi=pmi2, or "
               "run mpirun inside the allocation): each would train alone into the same run directory",
               launcher, copies);
  if (started || !launched_by_mpi()) return;
  int provided;
  // OpenMP threads step the envs and run the GEMMs; only the main thread calls MPI.
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  started = true;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  char library[MPI_MAX_LIBRARY_VERSION_STRING];
  int length;
  MPI_Get_library_version(library, &length);
  library[strcspn(library, ",\n")] = '\0';  // "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"
  snprintf(description, sizeof description, "%d rank%s (%.100s)", world_size, world_size == 1 ? "" : "s", library);
}

void dist_finalize(void) {
  if (started) MPI_Finalize();
  started = false;
}

int dist_rank(void) { return world_rank; }
int dist_size(void) { return world_size; }
const char *dist_describe(void) { return description; }

_Noreturn void dist_abort(int status, const char *fmt, ...) {
  if (fmt) {
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (world_size > 1)
      fprintf(stderr, "[rank %d/%d] %s\n", world_rank, world_size, text);
    else
      fprintf(stderr, "%s\n", text);
    fflush(stderr);
  }
  if (started && world_size > 1) MPI_Abort(MPI_COMM_WORLD, status);  // mpirun ends every rank
  exit(status);
}

// MPI counts are ints: large buffers go in chunks of 2^30 elements.
#define CHUNK ((size_t)1 << 30)

void dist_host_allreduce_sum_f32(float *x, size_t n) {
  if (world_size == 1) return;
  // MPI_SUM of MPI_FLOAT is IEEE addition: an inf or NaN on any rank makes the sum inf or NaN on
  // every rank, so the GradScaler's found-inf check after the reduction agrees across ranks.
  for (size_t done = 0; done < n; done += CHUNK) {
    size_t count = n - done < CHUNK ? n - done : CHUNK;
    MPI_Allreduce(MPI_IN_PLACE, x + done, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  }
}

void dist_host_allreduce_sum_f64(double *x, size_t n) {
  if (world_size == 1) return;
  for (size_t done = 0; done < n; done += CHUNK) {
    size_t count = n - done < CHUNK ? n - done : CHUNK;
    MPI_Allreduce(MPI_IN_PLACE, x + done, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
}

void dist_host_allreduce_sum_i64(int64_t *x, size_t n) {
  if (world_size == 1) return;
  CHECK(n <= INT_MAX, "dist_host_allreduce_sum_i64: n <= INT_MAX");
  MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
}

int dist_host_allreduce_max_int(int value) {
  if (world_size == 1) return value;
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return value;
}

void dist_host_bcast(void *buf, size_t bytes, int root) {
  if (world_size == 1) return;
  for (size_t done = 0; done < bytes; done += CHUNK) {
    size_t count = bytes - done < CHUNK ? bytes - done : CHUNK;
    MPI_Bcast((char *)buf + done, (int)count, MPI_BYTE, root, MPI_COMM_WORLD);
  }
}

void dist_host_gather(const void *send, void *recv, size_t bytes, int root) {
  if (world_size == 1) {
    if (recv != send) memcpy(recv, send, bytes);
    return;
  }
  CHECK(bytes <= INT_MAX, "dist_host_gather: at most INT_MAX bytes per rank");
  MPI_Gather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
}

void dist_host_allgather(const void *send, void *recv, size_t bytes) {
  if (world_size == 1) {
    if (recv != send) memcpy(recv, send, bytes);
    return;
  }
  CHECK(bytes <= INT_MAX, "dist_host_allgather: at most INT_MAX bytes per rank");
  MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
}

void dist_barrier(void) {
  if (world_size > 1) MPI_Barrier(MPI_COMM_WORLD);
}
