// test/mpi_replica_probe.c: a helper program for test_dist.c, started by mpirun. Every rank trains
// CONFIG.ini (with --set style overrides) for ITERATIONS iterations through the trainer alone (not
// ppo-train, whose own per-iteration replica check would stop a diverging run) and writes the bytes
// of its parameter, Adam m and Adam v slabs and of its normalisation statistics (obs and return
// mean and var, the counts) to OUT.rank<r>.bin, so the test compares the ranks' replicas itself. Exit status 0, or 2 on
// a bad configuration.
//
// PROBE_STOP_IN_UPDATE="RANK MINIBATCH": that rank asks to stop in the second iteration's update from
// that minibatch on (as a signal to it alone would); every rank must then stop at the same vote, go
// back to the iteration's start, and run it again.
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/error.h"
#include "ppo/config.h"
#include "ppo/dist.h"
#include "ppo/trainer.h"

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
  char path[1024];
  snprintf(path, sizeof path, "%s.rank%d.bin", argv[2], dist_rank());
  FILE *f = fopen(path, "wb");
  if (!f) dist_abort(EXIT_RUNTIME, "cannot write %s", path);
  Policy *pol = trainer_policy(tr);
  const float *slabs[] = {pol->params_memory, pol->m_memory, pol->v_memory};  // CPU backend: host memory
  for (int k = 0; k < 3; k++) fwrite(slabs[k], sizeof(float), pol->param_count, f);
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
