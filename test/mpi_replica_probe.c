// test/mpi_replica_probe.c: a helper program for test_dist.c, started by mpirun. Every rank trains
// CONFIG.ini (with --set style overrides) for ITERATIONS iterations through the trainer alone (not
// ppo-train, whose own per-iteration replica check would stop a diverging run) and writes the
// parameter count (int64), the bytes of its parameter, Adam m and Adam v slabs and of its
// normalisation statistics (obs and return mean and var, the counts) to OUT.rank<r>.bin, so the
// test compares the ranks' replicas itself. Exit status 0, or 2 on a bad configuration.
//
// Rank 0 prints the last iteration's logged losses and approx-KL ("losses logged: policy X value Y
// entropy Z total W kl K").
//
// It also checks the logged explained variance against one computed here over every rank's last
// rollout gathered on rank 0 (one pass of double sums: not the trainer's merge of moments) and
// prints "explained variance logged X, pooled Y" (rank 0) or exits 1 when they differ.
//
// PROBE_STOP_IN_UPDATE="RANK MINIBATCH": that rank asks to stop in the second iteration's update from
// that minibatch on (as a signal to it alone would); every rank must then stop at the same vote, go
// back to the iteration's start, and run it again.
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/error.h"
#include "ppo/config.h"
#include "ppo/dist.h"
#include "ppo/trainer.h"

// 1 - Var[returns - values] / Var[returns] over every rank's rollout, from rank 0's gather (CPU
// backend: the buffers are host memory); NaN on the other ranks.
static double pooled_explained_variance(Trainer *tr) {
  const RolloutBuffer *rb = trainer_rollout(tr);
  size_t n = (size_t)rb->spec.n_steps * (size_t)rb->spec.n_envs, all = n * (size_t)dist_size();
  float *values = malloc(all * sizeof(float)), *returns = malloc(all * sizeof(float));
  if (!values || !returns) dist_abort(EXIT_RUNTIME, "out of memory");
  dist_host_gather(rb->values, values, n * sizeof(float), 0);
  dist_host_gather(rb->returns, returns, n * sizeof(float), 0);
  double s_y = 0, s_yy = 0, s_d = 0, s_dd = 0;
  for (size_t i = 0; i < all; i++) {
    double y = returns[i], d = (double)returns[i] - (double)values[i];
    s_y += y, s_yy += y * y, s_d += d, s_dd += d * d;
  }
  free(values), free(returns);
  if (!dist_is_root()) return NAN;
  double var_y = s_yy / all - (s_y / all) * (s_y / all), var_d = s_dd / all - (s_d / all) * (s_d / all);
  return 1.0 - var_d / var_y;
}

static bool stop_in_update(void *ctx, TrainerPhase phase, int index) {
  return phase == TRAINER_PHASE_UPDATE && index >= *(const int *)ctx;
}

int main(int argc, char **argv) {
  dist_init(&argc, &argv);
  if (argc < 4) dist_abort(EXIT_BAD_INPUT, "usage: mpi_replica_probe CONFIG.ini OUT ITERATIONS [section.key=value]...");
  Config cfg;
  if (config_load(&cfg, argv[1], argc - 4, (const char *const *)argv + 4) != 0)
    dist_abort(EXIT_BAD_INPUT, "%s", error_message());
  Trainer *tr = trainer_init(&cfg);
  if (!tr) dist_abort(EXIT_BAD_INPUT, "%s", error_message());
  int iterations = atoi(argv[3]);
  TrainStats s;
  int early = 0, interrupted = 0;  // iterations the approx-KL stop cut short; stopped and run again
  int stop_rank = -1, stop_at = 0;
  const char *stop = getenv("PROBE_STOP_IN_UPDATE");
  if (stop && sscanf(stop, "%d %d", &stop_rank, &stop_at) != 2)
    dist_abort(EXIT_BAD_INPUT, "PROBE_STOP_IN_UPDATE: %s", stop);
  for (int i = 0; i < iterations; i++) {
    bool stopping = i == 1 && stop_rank == dist_rank() && interrupted == 0;
    trainer_set_stop_check(tr, stopping ? stop_in_update : NULL, &stop_at);
    if (trainer_iteration(tr, &s) == TRAINER_INTERRUPTED) {
      interrupted++;
      i--;
      continue;
    }
    early += s.early_stopped;
  }
  double pooled = pooled_explained_variance(tr);
  if (dist_is_root()) {
    printf("explained variance logged %.6f, pooled %.6f\n", s.explained_variance, pooled);
    printf("losses logged: policy %.9g value %.9g entropy %.9g total %.9g kl %.9g\n", s.policy_gradient_loss,
           s.value_loss, s.entropy_loss, s.loss, s.approx_kl);
    if (!(fabs(s.explained_variance - pooled) <= 1e-4)) dist_abort(EXIT_RUNTIME, "explained variance differs");
  }
  char path[1024];
  snprintf(path, sizeof path, "%s.rank%d.bin", argv[2], dist_rank());
  FILE *f = fopen(path, "wb");
  if (!f) dist_abort(EXIT_RUNTIME, "cannot write %s", path);
  Policy *pol = trainer_policy(tr);
  int64_t floats = (int64_t)pol->slab_floats;
  fwrite(&floats, sizeof floats, 1, f);
  const float *slabs[] = {pol->params_memory, pol->m_memory, pol->v_memory};  // CPU backend: host memory
  for (int k = 0; k < 3; k++) fwrite(slabs[k], sizeof(float), pol->slab_floats, f);
  VecNormalize *norm = trainer_state(tr).norm;
  fwrite(norm->obs_rms.mean, sizeof(double), 2 * (size_t)norm->obs_dim + 2, f);  // obs mean, var, ret mean, var
  fwrite(&norm->obs_rms.count, sizeof(double), 1, f);
  fwrite(&norm->ret_rms.count, sizeof(double), 1, f);
  fclose(f);
  printf(
      "rank %d of %d: %lld timesteps, %lld skipped steps, ep_rew_mean %.3f over %d episodes, %d early stops, %d "
      "interrupted\n",
      dist_rank(), dist_size(), (long long)trainer_counters(tr)->timesteps,
      (long long)trainer_counters(tr)->skipped_steps, s.ep_rew_mean, s.episodes, early, interrupted);
  trainer_free(tr);
  dist_finalize();
  return EXIT_OK;
}
