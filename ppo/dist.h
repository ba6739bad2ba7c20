// ppo/dist.h: data-parallel training across processes (MPI): who this process is, and the few
// collectives the trainer needs (docs/DISTRIBUTED.md).
//
// One rank = one process with its own envs, rollout buffer and a full replica of the networks and
// the optimiser. The ranks agree on everything that shapes the parameters: the gradients are summed
// over the ranks every minibatch (dist_allreduce_sum_f32 on the grads slab), the minibatch's
// advantage moments, the approx-KL early stop and the stop flag are reduced too, so Adam runs on
// identical inputs on every rank and the replicas stay identical bit for bit (checked once per
// iteration with dist_check_identical).
//
// Without MPI in the build (CMake PPO_MPI=OFF or no MPI found), or in a process that mpirun / srun
// did not start, this is a world of one rank: every collective is a no-op or a copy, and training is
// exactly the single-process engine. MPI is initialised only when the launcher's environment says
// so (OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_SIZE), so a plain `ppo-train` never starts MPI's
// singleton machinery and Criterion's forked tests never touch MPI.
//
// Failure: every collective takes part on every rank; a rank that fails must not leave the others
// waiting in the next collective forever, so fatal errors go through dist_abort (message prefixed
// with the rank, then MPI_Abort, which makes mpirun end every rank with that status). MPI's own
// errors are fatal (MPI_ERRORS_ARE_FATAL). A rank that hangs without failing (a stuck file system)
// is what mpirun's `--timeout SECONDS` is for.
//
// Memory: the _f32 / _f64 reductions on backend memory take the Backend: on the CPU backend it is
// host memory and MPI reduces it in place; a CUDA backend attached with dist_attach_backend reduces
// it on the device with NCCL (nn/backend_cuda_nccl.cu), queued on its stream. The host_ variants
// reduce host memory.
// Depends on nn/backend.h, common/.
#ifndef PPO_DIST_H
#define PPO_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "nn/backend.h"

// Initialises MPI when this process was started by an MPI launcher and the build has MPI; a world
// of one rank otherwise. Call once, first thing in main (MPI may consume its own arguments).
// A process that a launcher started as one of several but that would run as a world of one (a
// build without MPI under mpirun; srun without an MPI plugin) is refused there, with exit status 2:
// every copy would train alone into the same run directory.
void dist_init(int *argc, char ***argv);
// The number of processes the launcher's environment says it started alongside this one when MPI
// does not connect them (dist_init's check; 0 when none); *launcher names it.
long dist_unconnected_copies(const char **launcher);
void dist_finalize(void);         // MPI_Finalize when dist_init started MPI; call on the success path only
int dist_rank(void);              // 0 .. size-1
int dist_size(void);              // R, 1 without MPI
bool dist_is_root(void);          // rank 0: the rank that logs and writes files
const char *dist_describe(void);  // "1 rank (this build has no MPI)", "2 ranks (Open MPI v4.1.4)", ...

// Prints "[rank r/R] " + the message to stderr (when fmt is not NULL) and ends every rank with
// `status` (MPI_Abort; exit() in a world of one).
_Noreturn void dist_abort(int status, const char *fmt, ...) PPO_PRINTF(2, 3);

// Joins the ranks' backends into one communicator when the backend reduces its own memory (CUDA
// with NCCL: one GPU per rank); with the CPU backend there is nothing to join. Collective: every
// rank calls it after opening its backend, and every rank gets the same answer: 0, or -1 with the
// error message (a device backend without a communicator in this build, rank 0 could not make the
// communicator's id). A rank whose own join fails ends the job with its message and exit status 2
// (dist_abort): the other ranks are inside their joins, waiting for it, and cannot take a vote.
int dist_attach_backend(Backend *backend);

// In-place sums over the ranks. Backend memory (x from backend_alloc; see the header comment):
void dist_allreduce_sum_f32(Backend *backend, float *x, size_t n);
void dist_allreduce_sum_f64(Backend *backend, double *x, size_t n);
// Host memory:
void dist_host_allreduce_sum_f32(float *x, size_t n);
void dist_host_allreduce_sum_f64(double *x, size_t n);
void dist_host_allreduce_sum_i64(int64_t *x, size_t n);
int dist_host_allreduce_max_int(int value);  // the largest value over the ranks (stop flags, statuses)
void dist_host_bcast(void *buf, size_t bytes, int root);
// Rank r's `bytes` bytes of send land at recv + r bytes on root (recv: size x bytes, root only).
void dist_host_gather(const void *send, void *recv, size_t bytes, int root);
void dist_host_allgather(const void *send, void *recv, size_t bytes);  // the same, on every rank
void dist_barrier(void);

// Do all ranks hold the same bytes? Hashes them (FNV-1a 64) and compares with rank 0's hash.
// Returns true on every rank when they agree, false on every rank otherwise.
bool dist_check_identical(const void *data, size_t bytes);

#endif
