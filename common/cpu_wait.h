// common/cpu_wait.h: how long this process's threads waited for a CPU while ready to run.
//
// OpenMP's threads spin between parallel regions. When another busy process shares their cores,
// every region waits until the scheduler has run each of them again, so a run slows by far more
// than its share of the CPU: two runs of 2 threads side by side on 2 cores went from 67,000-77,000
// steps/s alone to 1,500-18,000 each (one iteration took 26 s instead of 0.05), where two runs of
// 1 thread kept 56,000-65,000 each (bench/results/20261128T184817Z-oversubscription-pairs.txt),
// and the outcome changes from one try to the next. Linux counts the time each thread
// spent runnable but not running (run_delay, the second field of /proc/self/task/TID/schedstat):
// alone it is under 1 % of the threads' time, in those pairs about half. ppo-train warns from it.
// Depends on nothing.
#ifndef PPO_COMMON_CPU_WAIT_H
#define PPO_COMMON_CPU_WAIT_H

// Seconds the process's live threads have spent waiting for a CPU, summed; -1 where the kernel
// does not say (no /proc, or a kernel without schedstat).
double cpu_wait_seconds(void);

// One judgement per window of at least window_s seconds of wall time.
typedef struct {
  double window_s;
  double wall0, wait0;  // the window's start; wall0 < 0 before the first call
} CpuWaitWindow;

static inline CpuWaitWindow cpu_wait_window(double window_s) {
  return (CpuWaitWindow){.window_s = window_s, .wall0 = -1, .wait0 = 0};
}

// Call with the wall time now and the number of threads the process runs; read is
// cpu_wait_seconds (another function in tests). Reads only when a window has ended: then returns
// the share of the threads' time they spent waiting over it (0 .. 1) and starts the next window.
// Else, or when read gives -1, returns -1.
double cpu_wait_share(CpuWaitWindow *w, double now, int threads, double (*read)(void));

#endif
