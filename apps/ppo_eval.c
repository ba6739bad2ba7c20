// apps/ppo_eval.c: ppo-eval, the backtest front end (thin: parse, call, exit).
//
//   ppo-eval --checkpoint CKPT.h5 [--config C.ini] [--split train|val|test] [--out DIR] [--set k=v]...
//            [--seeds N] [--random-seeds N] [--bootstrap N] [--no-plot] [--quiet]
//   ppo-eval --walk-forward RUN_DIR [--out DIR] [--set k=v]... [...]
//
// The run itself is ppo/eval_run.c. Exit status: 0 success, 2 bad usage, configuration, data or
// checkpoint, 1 a failure at run time.
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apps/cli.h"
#include "build_info.h"  // PPO_BUILD_INFO (generated)
#include "common/atomic_file.h"
#include "common/error.h"
#include "common/log.h"
#include "ppo/dist.h"
#include "ppo/eval_run.h"

#define MAX_OVERRIDES 256

// text in lines of at most `width` characters (words are not split), each after `indent` spaces.
static void print_wrapped(FILE *out, const char *text, int indent, int width) {
  const char *p = text;
  while (*p) {
    int n = 0, cut = 0;
    while (p[n] && n <= width - indent) {
      if (p[n] == ' ') cut = n;
      n++;
    }
    if (!p[n]) cut = n;  // the rest fits
    if (cut == 0) cut = n;
    fprintf(out, "%*s%.*s\n", indent, "", cut, p);
    p += cut;
    while (*p == ' ') p++;
  }
}

static void usage(FILE *out) {
  fprintf(out,
          "usage: ppo-eval --checkpoint CKPT.h5 [--config C.ini] [--split train|val|test] [--out DIR]\n"
          "                [--set section.key=value]... [--seeds N] [--random-seeds N] [--bootstrap N]\n"
          "                [--no-plot] [--quiet]\n"
          "       ppo-eval --walk-forward RUN_DIR [--out DIR] [--set section.key=value]... [...]\n"
          "\n"
          "Backtests a trained policy over a whole split (docs/spec/TRADING_ENV.md section 9): greedy and sampled\n"
          "actions with the checkpoint's frozen normalisation, the forced close at the end, against\n"
          "buy-and-hold, flat, a random policy, the MA rule and the zero-cost oracle on the same span and\n"
          "costs, and the agent, buy-and-hold and the MA rule at 0x, 1x and 2x the costs.\n"
          "\n"
          "  --checkpoint CKPT.h5  the policy (RUN/best.h5, RUN/checkpoints/last.h5, ...)\n"
          "  --config C.ini        market, costs and [eval] from C.ini instead of the checkpoint's own\n"
          "                        configuration (the network always comes from the checkpoint)\n"
          "  --split S             train, val or test (default test: the split evaluated once); not with\n"
          "                        --walk-forward, which evaluates each fold's test split\n"
          "  --out DIR             output directory (default RUN/eval/<checkpoint name>_<split>)\n"
          "  --set SECTION.KEY=V   override a key, e.g. --set env.cost_mult=2 or --set eval.n_trials=20;\n");
  print_wrapped(out, EVAL_SET_RULE, 24, 104);
  fprintf(out,
          "  --seeds N             sampled-agent passes (default 8; mean and sd reported)\n"
          "  --random-seeds N      random-policy passes (default 32)\n"
          "  --bootstrap N         stationary-bootstrap resamples for the Sharpe and return CIs (default 1000)\n"
          "  --walk-forward RUN    evaluate every fold of a `ppo-train --walk-forward` run on its test split\n"
          "                        and chain the out-of-sample curves (RUN/walk_forward/)\n"
          "  --no-plot             no equity.gp and no equity.png (gnuplot); an earlier pair in the directory goes\n"
          "  --quiet               no summary table on stdout and no [info] lines on stderr (warnings and\n"
          "                        errors still printed; a PPO_LOG_LEVEL set in the environment decides\n"
          "                        the log lines instead)\n"
          "  --help                this text\n"
          "  --version             the build: version, commit, compiler, build type\n"
          "\n"
          "Writes report.json, equity.csv, trades.csv, fills.csv, and without --no-plot equity.gp and\n"
          "equity.png.\n");
}

static int usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "ppo-eval: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n\n");
  usage(stderr);
  return EXIT_BAD_INPUT;
}

int main(int argc, char **argv) {
  cli_standard_streams();
  log_get_level();                  // a bad PPO_LOG_LEVEL is warned of now, whatever the command prints
  atomic_file_remove_on_signals();  // Ctrl-C or a kill leaves no half-written temporary file behind
  EvalRunOptions o;
  eval_run_options_default(&o);
  const char *overrides[MAX_OVERRIDES];
  int n_overrides = 0;
  CliSeen seen = {.count = 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return EXIT_OK;
    } else if (strcmp(a, "--version") == 0) {
      if (argc != 2) return usage_error("%s", "--version goes alone");  // as ppo-data and ppo-bench
      printf("ppo-eval: %s\n", PPO_BUILD_INFO);
      return EXIT_OK;
    } else if (strcmp(a, "--no-plot") == 0) {
      o.plot = false;
    } else if (strcmp(a, "--quiet") == 0) {
      o.quiet = true;
    } else if (cli_is_option(a, "--checkpoint") || cli_is_option(a, "--config") || cli_is_option(a, "--split") ||
               cli_is_option(a, "--out") || cli_is_option(a, "--walk-forward") || cli_is_option(a, "--set") ||
               cli_is_option(a, "--seeds") || cli_is_option(a, "--random-seeds") || cli_is_option(a, "--bootstrap")) {
      const char *name = a;
      char opt[32];
      snprintf(opt, sizeof opt, "%.*s", (int)strcspn(name, "="), name);
      if (strcmp(opt, "--set") != 0 && cli_repeated(&seen, opt))
        return usage_error("%s is given twice; give it once", opt);
      if (!(v = cli_option_value(argc, argv, &i, opt))) return usage_error("%s needs a value", opt);
      if (strcmp(opt, "--checkpoint") == 0)
        o.checkpoint = v;
      else if (strcmp(opt, "--config") == 0)
        o.config_path = v;
      else if (strcmp(opt, "--split") == 0)
        o.split = v;
      else if (strcmp(opt, "--out") == 0)
        o.out_dir = v;
      else if (strcmp(opt, "--walk-forward") == 0)
        o.walk_forward = v;
      else if (strcmp(opt, "--set") == 0) {
        if (n_overrides == MAX_OVERRIDES) return usage_error("more than %s --set options", "256");
        if (cli_check_set("ppo-eval", v) != EXIT_OK) return EXIT_BAD_INPUT;
        overrides[n_overrides++] = v;
      } else {
        int *dst = strcmp(opt, "--seeds") == 0          ? &o.sampled_seeds
                   : strcmp(opt, "--random-seeds") == 0 ? &o.random_seeds
                                                        : &o.bootstrap_samples;
        long long n;
        if (!cli_parse_integer(v, 0, 1000000, &n)) {
          fprintf(stderr, "ppo-eval: %s %s: a whole number in 0..1000000 allowed\n", opt, v);
          return EXIT_BAD_INPUT;
        }
        *dst = (int)n;
      }
    } else {
      return usage_error("unknown argument %s", a);
    }
  }
  if (o.checkpoint && o.walk_forward) return usage_error("%s", "--checkpoint and --walk-forward exclude each other");
  // Each fold is evaluated on its own split dates (from its checkpoint): a config or an override that
  // set them would put every fold on one span and chain overlapping windows.
  if (o.walk_forward && o.config_path)
    return usage_error("%s",
                       "--config does not go with --walk-forward (each fold is evaluated on its own split dates)");
  if (o.walk_forward && o.split)
    return usage_error("--split %s does not go with --walk-forward (each fold is evaluated on its test split)",
                       o.split);
  static const char *const split_keys[] = {"env.train_start", "env.val_start", "env.test_start", "env.test_end"};
  for (int k = 0; o.walk_forward && k < n_overrides; k++)
    for (int j = 0; j < 4; j++)
      if (strncmp(overrides[k], split_keys[j], strlen(split_keys[j])) == 0 &&
          strchr("= ", overrides[k][strlen(split_keys[j])]))
        return usage_error("--set %s: the split dates are each fold's own with --walk-forward", overrides[k]);
  if (!o.checkpoint && !o.walk_forward)
    return usage_error("%s", "--checkpoint CKPT.h5 or --walk-forward RUN is required");
  // A backtest runs in one process: R copies under mpirun or srun would each run all of it and
  // write the same report files in turn.
  const char *launcher;
  long copies = dist_unconnected_copies(&launcher);
  if (copies > 1) {
    fprintf(stderr,
            "ppo-eval: %s started %ld processes; ppo-eval runs in one process (a backtest is not split across "
            "ranks): run it without %s, or with one task\n",
            launcher, copies, launcher);
    return EXIT_BAD_INPUT;
  }
  o.n_overrides = n_overrides;
  o.overrides = overrides;
  if (o.quiet) log_quiet();  // no [info] lines either (device = auto's choice)
  return cli_finish_stdout("ppo-eval", eval_run(&o));
}
