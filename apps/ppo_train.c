// apps/ppo_train.c: ppo-train, the training front end (thin: parse, call, exit).
//
//   ppo-train CONFIG.ini [--set section.key=value]... [--resume CKPT.h5] [--run-dir DIR] [--plan]
//             [--iterations N] [--print-config] [--quiet]
//   ppo-train --resume CKPT.h5 [--set ...]      (the checkpoint's own configuration)
//   ppo-train --walk-forward CONFIG.ini [--set ...] [--run-dir DIR] [--iterations N] [--quiet]
//   ppo-train --help-config[=markdown] | --help
//
// Data-parallel: `mpirun -np R ppo-train CONFIG.ini` runs R ranks (docs/DISTRIBUTED.md); rank 0
// prints and writes the run directory. The run itself is ppo/train_run.c. Exit status: 0 success (also after
// SIGINT/SIGTERM with a checkpoint written), 2 bad usage, configuration, data or checkpoint, 1 a failure at run time.
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "apps/cli.h"
#include "build_info.h"  // PPO_BUILD_INFO (generated)
#include "common/error.h"
#include "common/log.h"
#include "ppo/checkpoint.h"
#include "ppo/config.h"
#include "ppo/dist.h"
#include "ppo/train_run.h"
#include "ppo/walk_forward.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: ppo-train CONFIG.ini [--set section.key=value]... [--resume CKPT.h5] [--run-dir DIR]\n"
          "                 [--plan] [--iterations N] [--print-config] [--quiet]\n"
          "       ppo-train --resume CKPT.h5 [--set section.key=value]...\n"
          "       ppo-train --walk-forward CONFIG.ini [--set section.key=value]... [--run-dir DIR]\n"
          "                 [--iterations N] [--quiet]\n"
          "       ppo-train --help-config[=markdown] | --help\n"
          "\n"
          "  CONFIG.ini            the run's configuration (INI; see configs/default.ini)\n"
          "  --set SECTION.KEY=V   override one key after the file, e.g. --set ppo.gamma=0.995 (repeatable for\n"
          "                        different keys; each key once)\n"
          "  --resume CKPT.h5      continue a run exactly from a checkpoint (RUN/checkpoints/last.h5; a run\n"
          "                        directory RUN takes its newest); without CONFIG.ini the checkpoint's own\n"
          "                        configuration is used. Only [run] total_timesteps, device, threads, name,\n"
          "                        run_dir, checkpoint_every, checkpoint_keep, log_every, memory_limit, tf32,\n"
          "                        [eval] and [walk_forward] may change\n"
          "  --walk-forward        rolling folds ([walk_forward] keys; docs/spec/TRADING_ENV.md section 2):\n"
          "                        print the fold table, write RUN/folds.csv and train one agent per fold into\n"
          "                        RUN/fold_NN\n"
          "                        (RUN = --run-dir or [run] run_dir/name) with the fold's env split dates.\n"
          "                        A finished fold gets RUN/fold_NN/done; the same command again skips done\n"
          "                        folds and resumes an unfinished one from its checkpoints/last.h5.\n"
          "                        --iterations N applies to each fold; a stopped fold ends the walk-forward.\n"
          "  --run-dir DIR         write the run here instead of [run] run_dir/name\n"
          "  --plan                print the memory plan (bytes per slab, backend and host) and exit; exit\n"
          "                        status 2 when it exceeds [run] memory_limit or the free memory\n"
          "  --iterations N        stop after N iterations of this invocation (a checkpoint is written)\n"
          "  --print-config        print the resolved configuration (every key, origins marked) and exit\n"
          "  --quiet               no configuration dump, no progress and no [info] lines on stderr (train.log\n"
          "                        still written; warnings, errors and the stop message still printed; a\n"
          "                        PPO_LOG_LEVEL set in the environment decides the log lines instead)\n"
          "  --help-config         list every configuration key with its type, default and allowed values\n"
          "                        (=markdown: the same as Markdown tables, as in docs/CONFIG.md)\n"
          "  --help                this text\n"
          "  --version             the build: version, commit, compiler, build type\n"
          "\n"
          "SIGINT, SIGTERM or SIGHUP: the run stops at the next step (or minibatch), writes a checkpoint\n"
          "of the last iteration boundary and exits 0; a second signal before that checkpoint exits at\n"
          "once (another within a second of the first is the same request: timeout(1) sends two,\n"
          "systemd a SIGHUP after its SIGTERM), one after it is ignored. With --walk-forward the\n"
          "walk-forward ends there too: run the same command again to continue. SIGPIPE is ignored (a\n"
          "closed pipe loses the progress lines, not the run).\n");
}

// Under mpirun each rank says it in one write (three writes of two ranks interleaved into
// "ppo-train: ppo-train: ..."), naming itself; the usage text comes from rank 0 only.
static int usage_error(const char *fmt, const char *arg) {
  char text[2048];
  snprintf(text, sizeof text, fmt, arg);
  if (dist_size() > 1)
    fprintf(stderr, "ppo-train (rank %d): %s\n", dist_rank(), text);
  else
    fprintf(stderr, "ppo-train: %s\n", text);
  if (dist_rank() == 0) {
    fputc('\n', stderr);
    usage(stderr);
  }
  return EXIT_BAD_INPUT;
}

static int train_main(int argc, char **argv) {
  TrainRunOptions opt;
  memset(&opt, 0, sizeof opt);
  bool print_config = false, walk_forward = false;
  const char **overrides = calloc((size_t)argc + 1, sizeof *overrides);  // at most one --set per argument
  if (!overrides) {
    fprintf(stderr, "ppo-train: out of memory\n");
    return EXIT_RUNTIME;
  }
  int status = EXIT_OK;
  CliSeen seen = {.count = 0};
  for (int i = 1; i < argc && status == EXIT_OK; i++) {
    const char *arg = argv[i];
    static const char *const once[] = {"--resume", "--run-dir", "--iterations"};
    for (int k = 0; k < 3 && status == EXIT_OK; k++)
      if (cli_is_option(arg, once[k]) && cli_repeated(&seen, once[k]))
        status = usage_error("%s is given twice; give it once", once[k]);
    if (status != EXIT_OK) break;
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      usage(stdout);
      free(overrides);
      return EXIT_OK;
    } else if (strcmp(arg, "--version") == 0) {
      if (argc != 2) {  // as ppo-data and ppo-bench: what else was asked would not be done
        status = usage_error("%s", "--version goes alone");
        break;
      }
      if (dist_rank() == 0) printf("ppo-train: %s\n", PPO_BUILD_INFO);
      free(overrides);
      return EXIT_OK;
    } else if (strcmp(arg, "--help-config") == 0) {
      config_write_help(stdout);
      free(overrides);
      return EXIT_OK;
    } else if (strcmp(arg, "--help-config=markdown") == 0) {
      config_write_markdown(stdout);  // docs/CONFIG.md
      free(overrides);
      return EXIT_OK;
    } else if (strcmp(arg, "--print-config") == 0) {
      print_config = true;
    } else if (strcmp(arg, "--walk-forward") == 0) {
      walk_forward = true;
    } else if (strcmp(arg, "--plan") == 0) {
      opt.plan_only = true;
    } else if (strcmp(arg, "--quiet") == 0) {
      opt.quiet = true;
    } else if (cli_is_option(arg, "--set")) {
      const char *v = cli_option_value(argc, argv, &i, "--set");
      if (!v)
        status = usage_error("%s needs an argument: --set section.key=value", arg);
      else if ((status = cli_check_set("ppo-train", v)) == EXIT_OK)
        overrides[opt.n_overrides++] = v;
    } else if (cli_is_option(arg, "--resume")) {
      if (!(opt.resume = cli_option_value(argc, argv, &i, "--resume")))
        status = usage_error("%s needs a checkpoint", arg);
    } else if (cli_is_option(arg, "--run-dir")) {
      if (!(opt.run_dir = cli_option_value(argc, argv, &i, "--run-dir")))
        status = usage_error("%s needs a directory", arg);
    } else if (cli_is_option(arg, "--iterations")) {
      const char *v = cli_option_value(argc, argv, &i, "--iterations");
      long long n;
      if (!cli_parse_integer(v, 1, LLONG_MAX, &n))
        status = usage_error("--iterations needs a whole number in 1 .. 9223372036854775807, got '%s'", v ? v : "");
      else
        opt.max_iterations = n;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      status = usage_error("unknown option '%s'", arg);
    } else if (opt.config_path) {
      status = usage_error("more than one configuration file ('%s')", arg);
    } else {
      opt.config_path = arg;
    }
  }
  if (status == EXIT_OK && !opt.config_path && !opt.resume) status = usage_error("%s", "missing CONFIG.ini");
  if (opt.quiet) log_quiet();  // no [info] lines either (device = auto's choice, ...)
  // --resume RUN_DIR: the run's newest checkpoint (checkpoints/last.h5, or the newest ckpt_*.h5).
  // Where there is none (yet), a run that another ppo-train is writing is said to be in use, as a
  // fresh start there is told, rather than to lack checkpoints: it has not written its first.
  static char resume_path[1200];
  struct stat st;
  bool is_dir = false;
  if (status == EXIT_OK && opt.resume &&
      (stat(opt.resume, &st) == 0 ? (is_dir = S_ISDIR(st.st_mode)) : errno == ENOENT)) {
    char parent[1200], probe[1200], run_dir[1200];  // RUN/checkpoints itself names its run too
    snprintf(parent, sizeof parent, "%s/..", opt.resume);
    snprintf(probe, sizeof probe, "%s/last.h5", opt.resume);
    checkpoint_run_dir(is_dir ? probe : opt.resume, run_dir, sizeof run_dir);  // RUN, from RUN or RUN/checkpoints
    bool found = is_dir && (train_run_latest_checkpoint(opt.resume, resume_path, sizeof resume_path) ||
                            train_run_latest_checkpoint(parent, resume_path, sizeof resume_path));
    if (found) {
      opt.resume = resume_path;
    } else if (train_run_check_not_in_use(run_dir) != 0) {
      fprintf(stderr, "ppo-train: --resume %s: %s\n", opt.resume, error_message());
      status = EXIT_BAD_INPUT;
    } else if (is_dir) {  // bad input, not bad usage: no usage text
      fprintf(stderr,
              "ppo-train: --resume %s: a directory without checkpoints (checkpoints/last.h5 or ckpt_*.h5 in it); "
              "name a run directory or a checkpoint file\n",
              opt.resume);
      status = EXIT_BAD_INPUT;
    }
  }
  if (status == EXIT_OK && walk_forward && dist_size() > 1)
    status = usage_error("%s", "--walk-forward runs on one rank (start it without mpirun)");
  if (status == EXIT_OK && walk_forward && (opt.resume || opt.plan_only || print_config || !opt.config_path))
    status = usage_error("%s",
                         "--walk-forward takes CONFIG.ini and not --resume, --plan or --print-config (it resumes "
                         "by itself: run the same command again)");
  // Under mpirun every rank must take the same path through the program: an MPMD launch (`mpirun
  // ... : ...`) can give each rank its own options, and a rank leaving for --print-config or --plan,
  // or stopping at another --iterations, left the others waiting in a collective until mpirun's
  // --timeout. Refused on every rank (train_run compares the configurations' keys).
  if (status == EXIT_OK && dist_size() > 1) {
    const long long options[5] = {print_config, opt.plan_only, opt.max_iterations, walk_forward, opt.resume != NULL};
    if (!dist_check_identical(options, sizeof options))
      status = usage_error("%s",
                           "the ranks were given different options (--print-config, --plan, --iterations, "
                           "--walk-forward or --resume); every rank of one mpirun needs the same ones");
  }
  if (status != EXIT_OK) {
    free(overrides);
    return status;
  }
  opt.overrides = overrides;
  if (print_config) {
    Config cfg;
    int rc = train_run_resolve_config(&opt, &cfg);  // with --resume: the checkpoint's, checked
    free(overrides);
    if (rc != 0) {
      fprintf(stderr, "%s\n", error_message());
      return EXIT_BAD_INPUT;
    }
    // A reader that went away (`--print-config | head`) is no failure, as for --help-config. Under
    // mpirun every rank resolved it (and reports its own errors); rank 0 alone prints it.
    if (dist_rank() == 0 && config_write_ini(&cfg, stdout) != 0 && errno != EPIPE) {
      fprintf(stderr, "ppo-train: %s\n", error_message());
      return EXIT_RUNTIME;
    }
    return EXIT_OK;
  }
  if (walk_forward) {
    status = walk_forward_run(&opt);
    free(overrides);
    return status;
  }
  TrainRunResult result;
  status = train_run(&opt, &result);
  free(overrides);
  return status;
}

// Under mpirun every rank runs this (ppo/dist.h). A rank that fails alone must not leave the others
// waiting in the next collective: any failure ends every rank (MPI_Abort) with its status.
int main(int argc, char **argv) {
  cli_standard_streams();
  log_get_level();  // a bad PPO_LOG_LEVEL is warned of now, whatever the command prints
  dist_init(&argc, &argv);
  // SIGINT and SIGTERM are caught from here to the exit, not only inside train_run: one that came
  // after the last checkpoint, while the process was ending, killed it with 143 instead of 0.
  train_signals_begin();
  int status = train_main(argc, argv);
  if (status != EXIT_OK && dist_size() > 1)
    dist_abort(status, "ppo-train: failed with exit status %d; ending every rank", status);
  dist_finalize();
  return status;
}
