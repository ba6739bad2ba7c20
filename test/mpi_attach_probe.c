// test/mpi_attach_probe.c: a helper program for test_dist.c, started by mpirun. Every rank attaches
// a stand-in device backend (dist_attach_backend) whose join behaves as NCCL's ncclCommInitRank
// does: it returns on a rank only once every rank has joined (here an MPI_Barrier), so a rank that
// never arrives leaves the others waiting inside it. FAIL_RANK's join fails at once instead (as
// NCCL's does on a rank whose GPU is taken or whose network interface is wrong); -1: none fails.
// Prints "rank R joined" and exits 0 when the attach works; a failing join must end every rank
// with its message instead of leaving them in their joins until mpirun's timeout.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "nn/backend_impl.h"
#include "ppo/dist.h"

static int fail_rank = -1;

static size_t stand_in_id_bytes(const Backend *backend) { return 16; }

static int stand_in_make_id(Backend *backend, void *id) {
  memcpy(id, "stand-in comm id", 16);
  return 0;
}

static int stand_in_join(Backend *backend, const void *id, int rank, int size) {
  if (memcmp(id, "stand-in comm id", 16) != 0) {
    error_set("rank %d of %d: the communicator id did not arrive", rank, size);
    return -1;
  }
  if (rank == fail_rank) {
    error_set("backend 'stand-in': rank %d of %d could not join the communicator (as told)", rank, size);
    return -1;
  }
  MPI_Barrier(MPI_COMM_WORLD);  // every rank's join waits for every other rank's
  return 0;
}

int main(int argc, char **argv) {
  dist_init(&argc, &argv);
  if (argc != 2) dist_abort(EXIT_BAD_INPUT, "usage: mpi_attach_probe FAIL_RANK (-1: none)");
  fail_rank = atoi(argv[1]);
  static const BackendOps ops = {
      .comm_id_bytes = stand_in_id_bytes, .comm_make_id = stand_in_make_id, .comm_join = stand_in_join};
  Backend backend = {.name = "stand-in", .ops = &ops};
  if (dist_attach_backend(&backend) != 0) dist_abort(EXIT_RUNTIME, "attach: %s", error_message());
  printf("rank %d joined\n", dist_rank());
  fflush(stdout);
  dist_finalize();
  return 0;
}
