// bench/bench_train.c: `ppo-bench train`: a whole training run of a configuration, timed end to end
// with the rollout / GAE / update split and the peak resident memory.
//
//   ppo-bench train --config CONFIG.ini [--set section.key=value]... [--iterations N] [--json OUT]
//
// Runs ppo/train_run.c exactly as ppo-train does (quietly, into a fresh directory under $TMPDIR,
// removed afterwards unless --keep, whether the run succeeds or not), so the numbers include
// everything a user's run pays: env steps, uploads, the truncation bootstrap, GAE, every minibatch,
// logging and checkpoints.
// samples/s of the update = n_epochs x n_steps x n_envs per iteration over the update seconds.
// --json OUT is checked before the run (exit 2 when it cannot be written there) and written under a
// temporary name, then renamed (common/atomic_file.h); a failed write exits 1 and leaves OUT as it was.
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "apps/cli.h"
#include "bench/bench.h"
#include "build_info.h"  // PPO_BUILD_INFO (generated)
#include "common/atomic_file.h"
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

// "ppo-bench train: <what was wrong>", then the usage; returns EXIT_BAD_INPUT.
static int train_usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "ppo-bench train: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n");
  return train_usage();
}

int bench_output_path_check(const char *path) {
  char tmp[ATOMIC_PATH_MAX];
  struct stat st;
  size_t len = strlen(path);
  if ((len > 0 && path[len - 1] == '/') || (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
    error_set("it names a directory, not a file");
    return -1;
  }
  if (atomic_file_temp_path(path, tmp, sizeof tmp) != 0) return -1;  // too long
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) {
    error_set("cannot create a file there: %s", strerror(errno));
    return -1;
  }
  close(fd);
  atomic_file_discard(tmp);
  return 0;
}

// The run's figures as one JSON object, into path under a temporary name. 0, or -1 and the error
// message (a write, the close or the rename failed; path is then untouched).
static int write_result_json(const char *path, const char *config, const TrainRunResult *r, double steps, double sps,
                             double rollout_sps, double update_sps) {
  AtomicFile af;
  FILE *f = atomic_file_open(&af, path);
  if (!f) return -1;
  JsonWriter w;  // NaN (no episode ended: ep_rew_mean) becomes null, which JSON can read
  json_init(&w, f);
  json_object_begin(&w);
  json_kv_string(&w, "config", config);
  json_kv_string(&w, "build", PPO_BUILD_INFO);  // the binary measured, whatever the checkout holds now
  json_kv_int(&w, "iterations", r->iterations);
  json_kv_number(&w, "timesteps", steps);
  json_kv_number(&w, "seconds", r->seconds);
  json_kv_number(&w, "sps", sps);
  json_kv_number(&w, "rollout_s", r->rollout_s);
  json_kv_number(&w, "gae_s", r->gae_s);
  json_kv_number(&w, "update_s", r->update_s);
  json_kv_number(&w, "rollout_sps", rollout_sps);
  json_kv_number(&w, "update_samples_per_s", update_sps);
  json_kv_number(&w, "peak_rss_bytes", r->peak_rss_bytes);
  json_kv_number(&w, "ep_rew_mean", r->ep_rew_mean);
  json_object_end(&w);
  json_finish(&w);
  return atomic_file_commit(&af);  // the stream's error flag covers every write above, then fclose
}

int bench_train_main(int argc, char **argv) {
  const char *config = NULL, *json = NULL;
  const char **sets = calloc((size_t)argc + 1, sizeof *sets);
  int n_sets = 0, keep = 0;
  long long iterations = 0;
  if (!sets) return EXIT_RUNTIME;
  int status = EXIT_OK;
  CliSeen seen = {.count = 0};
  for (int i = 1; i < argc && status == EXIT_OK; i++) {  // "--opt VALUE" or "--opt=VALUE" (apps/cli.h)
    const char *arg = argv[i], *v;
    if (strcmp(arg, "--keep") == 0) {
      keep = 1;
      continue;
    }
    const char *name = cli_is_option(arg, "--config")       ? "--config"
                       : cli_is_option(arg, "--set")        ? "--set"
                       : cli_is_option(arg, "--iterations") ? "--iterations"
                       : cli_is_option(arg, "--json")       ? "--json"
                                                            : NULL;
    if (!name)
      status = train_usage_error(arg[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", arg);
    else if (strcmp(name, "--set") != 0 && cli_repeated(&seen, name))
      status = train_usage_error("%s is given twice; give it once", name);
    else if (!(v = cli_option_value(argc, argv, &i, name)))
      status = train_usage_error("%s needs a value", name);
    else if (strcmp(name, "--config") == 0)
      config = v;
    else if (strcmp(name, "--set") == 0) {
      if ((status = cli_check_set("ppo-bench train", v)) == EXIT_OK) sets[n_sets++] = v;
    } else if (strcmp(name, "--json") == 0)
      json = v;
    else if (!cli_parse_integer(v, 1, LLONG_MAX, &iterations))
      status = cli_bad_value("ppo-bench train", "--iterations", v, "a whole number of at least 1 allowed");
  }
  if (status == EXIT_OK && !config) status = train_usage_error("%s", "missing --config CONFIG.ini");
  if (status != EXIT_OK) {
    free(sets);
    return status;
  }
  Config cfg;
  if (config_load(&cfg, config, n_sets, sets) != 0) {
    fprintf(stderr, "%s\n", error_message());
    free(sets);
    return EXIT_BAD_INPUT;
  }
  if (json && bench_output_path_check(json) != 0) {
    free(sets);
    return cli_bad_value("ppo-bench train", "--json", json, error_message());
  }
  const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char dir[ATOMIC_PATH_MAX], run_dir[ATOMIC_PATH_MAX + 8];
  if (snprintf(dir, sizeof dir, "%s/ppo-bench-train-XXXXXX", tmp) >= (int)sizeof dir) {
    free(sets);
    return cli_bad_value("ppo-bench train", "TMPDIR", tmp, "too long for a directory name");
  }
  if (!mkdtemp(dir)) {
    fprintf(stderr, "ppo-bench train: cannot create a directory under %s (TMPDIR): %s\n", tmp, strerror(errno));
    free(sets);
    return EXIT_RUNTIME;
  }
  snprintf(run_dir, sizeof run_dir, "%s/run", dir);
  TrainRunOptions opt = {.config_path = config,
                         .n_overrides = n_sets,
                         .overrides = sets,
                         .run_dir = run_dir,
                         .max_iterations = iterations,
                         .quiet = true,
                         .scratch = !keep};
  TrainRunResult r;
  status = train_run(&opt, &r);
  free(sets);
  if (status == EXIT_OK && r.stopped) {  // a part of a run is no measurement of it
    fprintf(stderr, "ppo-bench train: stopped by a signal after %lld iterations: no result%s\n",
            (long long)r.iterations, json ? " (--json not written)" : "");
    status = EXIT_RUNTIME;
  } else if (status == EXIT_OK) {
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
    if (json && write_result_json(json, config, &r, steps, sps, rollout_sps, update_sps) != 0) {
      fprintf(stderr, "ppo-bench train: --json: %s\n", error_message());
      status = EXIT_RUNTIME;
    }
  }
  // The temporary tree goes on every path from here: a failed run leaves its files there too.
  if (keep)
    printf("  run directory kept: %s\n", run_dir);
  else
    bench_remove_tree(dir);
  return status;
}
