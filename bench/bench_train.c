// bench/bench_train.c: `ppo-bench train`: a whole training run of a configuration, timed end to end
// with the rollout / GAE / update split and the peak resident memory.
//
//   ppo-bench train --config CONFIG.ini [--set section.key=value]... [--iterations N] [--json OUT]
//
// Runs ppo/train_run.c exactly as ppo-train does (quietly, into a fresh directory under $TMPDIR,
// removed afterwards unless --keep), so the numbers include everything a user's run pays: env
// steps, uploads, the truncation bootstrap, GAE, every minibatch, logging and checkpoints.
// samples/s of the update = n_epochs x n_steps x n_envs per iteration over the update seconds.
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apps/cli.h"
#include "bench/bench.h"
#include "common/error.h"
#include "common/json_writer.h"
#include "ppo/config.h"
#include "ppo/train_run.h"

static int train_usage(void) {
  fprintf(stderr,
          "usage: ppo-bench train --config CONFIG.ini [--set section.key=value]... [--iterations N] [--json OUT]\n"
          "                       [--keep]\n");
  return EXIT_BAD_INPUT;
}

int bench_train_main(int argc, char **argv) {
  const char *config = NULL, *json = NULL;
  const char **sets = calloc((size_t)argc + 1, sizeof *sets);
  int n_sets = 0, keep = 0;
  long long iterations = 0;
  if (!sets) return EXIT_RUNTIME;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
      config = argv[++i];
    else if (strcmp(argv[i], "--set") == 0 && i + 1 < argc)
      sets[n_sets++] = argv[++i];
    else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      if (!cli_parse_integer(argv[++i], 1, LLONG_MAX, &iterations)) {
        free(sets);
        return cli_bad_value("ppo-bench train", "--iterations", argv[i], "a whole number of at least 1 allowed");
      }
    } else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
      json = argv[++i];
    else if (strcmp(argv[i], "--keep") == 0)
      keep = 1;
    else {
      free(sets);
      return train_usage();
    }
  }
  if (!config) {
    free(sets);
    return train_usage();
  }
  Config cfg;
  if (config_load(&cfg, config, n_sets, sets) != 0) {
    fprintf(stderr, "%s\n", error_message());
    free(sets);
    return EXIT_BAD_INPUT;
  }
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/ppo-bench-train-XXXXXX", tmp);
  if (!mkdtemp(dir)) {
    fprintf(stderr, "ppo-bench train: cannot create a directory under %s\n", tmp);
    free(sets);
    return EXIT_RUNTIME;
  }
  char run_dir[1100];
  snprintf(run_dir, sizeof run_dir, "%s/run", dir);
  TrainRunOptions opt = {.config_path = config,
                         .n_overrides = n_sets,
                         .overrides = sets,
                         .run_dir = run_dir,
                         .max_iterations = iterations,
                         .quiet = true};
  TrainRunResult r;
  int status = train_run(&opt, &r);
  free(sets);
  if (status != 0) return status;
  double per_iteration = (double)cfg.ppo.n_steps * (double)cfg.env.n_envs;
  double steps = (double)r.iterations * per_iteration;  // this invocation started at 0
  double sps = steps / r.seconds, rollout_sps = steps / r.rollout_s;
  double update_sps = steps * (double)cfg.ppo.n_epochs / r.update_s;
  printf("ppo-bench train: %s (%lld iterations, %.0f steps)\n", config, (long long)r.iterations, steps);
  printf("  %-28s %12.0f steps/s\n", "end to end", sps);
  printf("  %-28s %12.0f steps/s   (%.2f s, %.0f %%)\n", "rollout", rollout_sps, r.rollout_s,
         100.0 * r.rollout_s / r.seconds);
  printf("  %-28s %12.3f s         (%.1f %%)\n", "GAE", r.gae_s, 100.0 * r.gae_s / r.seconds);
  printf("  %-28s %12.0f samples/s (%.2f s, %.0f %%)\n", "update", update_sps, r.update_s,
         100.0 * r.update_s / r.seconds);
  printf("  %-28s %12.1f MiB\n", "peak RSS", r.peak_rss_bytes / 1048576.0);
  printf("  %-28s %12.4g\n", "ep_rew_mean at the end", r.ep_rew_mean);
  if (json) {
    FILE *f = fopen(json, "w");
    if (!f) {
      fprintf(stderr, "ppo-bench train: cannot write %s\n", json);
      return EXIT_RUNTIME;
    }
    JsonWriter w;  // NaN (no episode ended: ep_rew_mean) becomes null, which JSON can read
    json_init(&w, f);
    json_object_begin(&w);
    json_kv_string(&w, "config", config);
    json_kv_int(&w, "iterations", r.iterations);
    json_kv_number(&w, "timesteps", steps);
    json_kv_number(&w, "seconds", r.seconds);
    json_kv_number(&w, "sps", sps);
    json_kv_number(&w, "rollout_s", r.rollout_s);
    json_kv_number(&w, "gae_s", r.gae_s);
    json_kv_number(&w, "update_s", r.update_s);
    json_kv_number(&w, "rollout_sps", rollout_sps);
    json_kv_number(&w, "update_samples_per_s", update_sps);
    json_kv_number(&w, "peak_rss_bytes", r.peak_rss_bytes);
    json_kv_number(&w, "ep_rew_mean", r.ep_rew_mean);
    json_object_end(&w);
    json_finish(&w);
    fclose(f);
  }
  if (!keep) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "ppo-bench train: could not remove %s\n", dir);
  } else {
    printf("  run directory kept: %s\n", run_dir);
  }
  return EXIT_OK;
}
