// bench/bench_allreduce.c: ppo-bench-allreduce, the cost of the gradient all-reduce of data-parallel
// training (ppo/dist.h): dist_allreduce_sum_f32 over a grads-sized buffer of CPU-backend memory,
// as the trainer calls it once per minibatch. Run under mpirun:
//
//   mpirun -np 2 ppo-bench-allreduce [FLOATS]... [--reps N]
//
// Default sizes: 9,155 floats (CartPole's [64, 64] actor and critic), 5,517,829 (the issue's "5.5 M
// parameters"), 7,369,732 (the headline [2048, 1024, 512] actor and critic on the trading env's
// 517 observations: configs/seed.ini) and a few between. Rank 0 prints one
// line per size: min, median and mean milliseconds per call over the repetitions (after 3 warm-up
// calls, a barrier before each call so every rank starts together; averaged over the ranks) and the
// bus bandwidth of a ring all-reduce, 2 (R-1)/R x bytes / median time.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/cli.h"
#include "common/timer.h"
#include "nn/backend.h"
#include "ppo/dist.h"

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  dist_init(&argc, &argv);
  size_t sizes[16];
  int n_sizes = 0, reps = 50;
  for (int i = 1; i < argc; i++) {
    long long n;
    if (strcmp(argv[i], "--reps") == 0) {
      const char *v = i + 1 < argc ? argv[++i] : "";
      if (!cli_parse_integer(v, 1, 100000, &n))
        dist_abort(EXIT_BAD_INPUT, "ppo-bench-allreduce: --reps '%s': a whole number in 1 .. 100000 allowed", v);
      reps = (int)n;
    } else if (n_sizes == 16 || !cli_parse_integer(argv[i], 1, (long long)1 << 32, &n)) {
      dist_abort(EXIT_BAD_INPUT,
                 "ppo-bench-allreduce: '%s': up to 16 sizes, whole numbers of floats in 1 .. 2^32, allowed", argv[i]);
    } else {
      sizes[n_sizes++] = (size_t)n;
    }
  }
  if (n_sizes == 0) {
    const size_t defaults[] = {9155, 65536, 524288, 2097152, 5517829, 7369732};
    for (size_t k = 0; k < sizeof defaults / sizeof defaults[0]; k++) sizes[n_sizes++] = defaults[k];
  }
  Backend *be = backend_open("cpu");
  if (!be) dist_abort(EXIT_RUNTIME, "ppo-bench-allreduce: no CPU backend");
  double *times = malloc((size_t)reps * sizeof *times);
  if (dist_is_root())
    printf("all-reduce (sum, in place, fp32) over %s, %d repetitions\n%12s %12s %10s %10s %10s %10s\n", dist_describe(),
           reps, "floats", "bytes", "min ms", "median ms", "mean ms", "GB/s");
  for (int k = 0; k < n_sizes; k++) {
    float *x = backend_alloc(be, sizes[k] * sizeof(float));
    for (size_t i = 0; i < sizes[k]; i++) x[i] = 1e-3f * (float)(i % 1000);
    for (int w = 0; w < 3; w++) dist_allreduce_sum_f32(be, x, sizes[k]);
    double sum = 0.0;
    for (int r = 0; r < reps; r++) {
      dist_barrier();
      double t0 = timer_now();
      dist_allreduce_sum_f32(be, x, sizes[k]);
      times[r] = timer_now() - t0;
      sum += times[r];
    }
    // Each rank's min, median and mean, averaged over the ranks (after the barrier they differ by
    // the barrier's own skew, a few microseconds).
    qsort(times, (size_t)reps, sizeof *times, compare_double);
    double stats[3] = {times[0], times[reps / 2], sum / reps};
    dist_host_allreduce_sum_f64(stats, 3);
    for (int s = 0; s < 3; s++) stats[s] /= dist_size();
    double bytes = (double)sizes[k] * sizeof(float);
    double ring = dist_size() > 1 ? 2.0 * (dist_size() - 1) / dist_size() * bytes : bytes;
    if (dist_is_root())
      printf("%12zu %12.0f %10.3f %10.3f %10.3f %10.2f\n", sizes[k], bytes, 1e3 * stats[0], 1e3 * stats[1],
             1e3 * stats[2], ring / stats[1] / 1e9);
    backend_free(be, x);
  }
  free(times);
  backend_close(be);
  dist_finalize();
  return EXIT_OK;
}
