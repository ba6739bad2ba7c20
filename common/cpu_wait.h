// common/cpu_wait.h: how long this process's OpenMP threads waited for a CPU while ready to run.
//
// OpenMP's threads spin between parallel regions. When another busy process shares their cores,
// every region waits until the scheduler has run each of them again, so a run slows by far more
// than its share of the CPU: two runs of 2 threads side by side on 2 cores went from 67,000-75,700
// steps/s alone to 1,700-18,100 each (4 to 44 times slower; one iteration took 26 s instead of
// 0.05), where two runs of 1 thread kept 56,400-65,200 each
// (bench/results/20261128T184817Z-oversubscription-pairs.txt, its clean passes), and the outcome
// changes from one try to the next. Linux counts the time each thread spent runnable but not
// running (run_delay, the second field of /proc/self/task/TID/schedstat): alone it is under 1 % of
// the threads' time, in those pairs about half. ppo-train warns from it. Linux only: elsewhere
// the readers return -1. Depends on nothing of ours (OpenMP).
#ifndef PPO_COMMON_CPU_WAIT_H
#define PPO_COMMON_CPU_WAIT_H

#include <stdbool.h>

#define CPU_WAIT_MAX_THREADS 1024

// The Linux thread ids of the team an OpenMP parallel region runs on now (the calling thread
// first), into tids; returns how many (at most capacity). Other threads of the process (an
// OpenBLAS worker, HDF5's, MPI's) are not among them.
int cpu_wait_omp_threads(int *tids, int capacity);

// Seconds the threads tids[0..n) have spent waiting for a CPU, summed (a thread that has ended is
// left out); -1 where none can be read (no /proc, or a kernel without schedstat).
double cpu_wait_seconds(const int *tids, int n);

// Seconds on a CPU of the process's threads other than tids[0..n) (an OpenBLAS worker, ...),
// summed over the threads alive now; -1 where /proc/self/task cannot be read.
double cpu_time_other_threads(const int *tids, int n);

// The CPUs the process's cgroup may use in time (cgroup v2 cpu.max, v1 cpu.cfs_quota_us over
// cpu.cfs_period_us; the smallest along the hierarchy, as docker --cpus or a Kubernetes limit
// sets it), which its CPU affinity does not show; -1 when there is no such quota or it cannot be read.
double cpu_quota_cpus(void);

// One judgement per window of at least window_s seconds of wall time.
typedef struct {
  double window_s;
  double wall0, wait0;  // the window's start; wall0 < 0 before the first reading
  bool off;             // a reading failed: nothing to judge on this system
} CpuWaitWindow;

static inline CpuWaitWindow cpu_wait_window(double window_s) {
  return (CpuWaitWindow){.window_s = window_s, .wall0 = -1, .wait0 = 0, .off = false};
}

// Call with the wall time now and the number of threads the readings cover; read(ctx) gives the
// seconds waited so far (cpu_wait_seconds, another function in tests). Reads only when a window
// has ended: then returns the share of the threads' time they spent waiting over it (0 .. 1) and
// starts the next window. Else returns -1; a failed reading (-1) turns the window off for good.
double cpu_wait_share(CpuWaitWindow *w, double now, int threads, double (*read)(const void *ctx), const void *ctx);

#endif
