// ppo/dist.c: what the MPI and the single-process builds share (ppo/dist.h): the root test, the
// replica check and the backend-memory reductions, on top of the primitives of ppo/dist_mpi.c or
// ppo/dist_none.c (CMake compiles one of the two).
#include "ppo/dist.h"

#include <stdlib.h>
#include <string.h>

bool dist_is_root(void) { return dist_rank() == 0; }

static long env_count(const char *name) {
  const char *v = getenv(name);
  return v && *v ? strtol(v, NULL, 10) : 0;
}

long dist_unconnected_copies(const char **launcher) {
  long mpirun = env_count("OMPI_COMM_WORLD_SIZE"), pmi = env_count("PMI_SIZE");
  long srun = getenv("SLURM_PROCID") ? env_count("SLURM_STEP_NUM_TASKS") : 0;  // srun's tasks, not sbatch's
  *launcher = mpirun > 1 ? "mpirun" : pmi > 1 ? "an MPI launcher (PMI)" : "srun";
  long n = mpirun > 1 ? mpirun : pmi > 1 ? pmi : srun;
  return n > 1 ? n : 0;
}

// The backend whose communicator the ranks joined (dist_attach_backend): its memory is reduced on
// the device by the backend itself (NCCL); any other backend's memory must be host memory.
static Backend *joined_backend = NULL;

int dist_attach_backend(Backend *backend) {
  if (dist_size() == 1) return 0;
  size_t id_bytes = backend_comm_id_bytes(backend);
  if (id_bytes == 0) {
    if (strcmp(backend_name(backend), "cpu") == 0) return 0;  // host memory: MPI reduces it in place
    error_set(
        "the %s backend of this build has no all-reduce across ranks (CUDA needs NCCL at build time); "
        "run the ranks with [run] device = cpu",
        backend_name(backend));
    return -1;
  }
  // Rank 0 makes the id; every rank learns whether that worked before it waits for anything else,
  // and a rank whose own call worked names the one that failed.
  unsigned char *id = calloc(1, id_bytes);
  if (!id) dist_abort(EXIT_RUNTIME, "out of host memory (communicator id)");
  int mine = dist_is_root() ? backend_comm_make_id(backend, id) != 0 : 0;
  int failed = dist_host_allreduce_max_int(mine);
  if (failed) {
    if (!mine) error_set("rank 0 could not make the %s communicator's id", backend_name(backend));
    free(id);
    return -1;
  }
  dist_host_bcast(id, id_bytes, 0);
  // The join is itself a collective (ncclCommInitRank returns on a rank only once every rank has
  // joined), so a rank whose join fails cannot tell the others through a vote: they are still
  // inside their joins, waiting for it. It ends the job instead (MPI_Abort: mpirun stops every rank).
  if (backend_comm_join(backend, id, dist_rank(), dist_size()) != 0)
    dist_abort(EXIT_BAD_INPUT, "%s; ending every rank (the others wait in their joins for this one)", error_message());
  free(id);
  joined_backend = backend;
  return 0;
}

// Backend memory is host memory on the CPU backend: MPI reduces it in place. A device backend
// reduces its own memory once attached (NCCL on the device pointers, on the backend's stream).
static void check_host_memory(Backend *backend, const char *what) {
  if (strcmp(backend_name(backend), "cpu") != 0)
    dist_abort(EXIT_RUNTIME, "%s: %s backend memory but no communicator joined (dist_attach_backend)", what,
               backend_name(backend));
}

void dist_allreduce_sum_f32(Backend *backend, float *x, size_t n) {
  if (dist_size() == 1) return;
  if (backend == joined_backend) {
    backend_allreduce_sum_f32(backend, x, n);
    return;
  }
  check_host_memory(backend, "dist_allreduce_sum_f32");
  dist_host_allreduce_sum_f32(x, n);
}

void dist_allreduce_sum_f64(Backend *backend, double *x, size_t n) {
  if (dist_size() == 1) return;
  if (backend == joined_backend) {
    backend_allreduce_sum_f64(backend, x, n);
    return;
  }
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
