// bench/bench_all.c: `ppo-bench all`: the whole benchmark suite in one command, for the record
// (docs/BENCHMARKS.md is generated from its JSON by bench/make_benchmarks_md.py).
//
//   ppo-bench all [--quick] [--json OUT] [--only GROUP[,GROUP...]] [--repeats R]
//   groups: backend, envs, train, scaling, memory, sb3 (sb3: full mode only, when $PPO_SB3_PYTHON
//   names a Python with torch and stable-baselines3; it runs bench/sb3_compare.py on configs/cartpole.ini,
//   the engine at the config's threads, then at 2 threads against the same SB3 numbers)
//
// What it runs, on every backend that opens ("cuda" is reported as "none: <why>" when it does not)
// and every precision:
//   backend   `ppo-bench backend` (every GEMM of the headline network, the update step, rollout
//             inference, the machine's best square GEMM), through bench_backend_main
//   envs      `ppo-bench envs` (CartPole serial and VecEnv, trading VecEnv; 1 and 2 threads)
//   train     whole runs of configs/default.ini (each precision), configs/cartpole.ini (fp32) and,
//             without --quick, configs/seed.ini (bf16, fp32; also fp16 on a GPU)
//             through ppo/train_run.c, as ppo-train runs them: SPS, rollout SPS, update samples/s,
//             the rollout / GAE / update shares of the time, peak RSS
//   scaling   the same runs of configs/default.ini (n_steps 128) against n_envs (8-256, also the
//             planned memory and peak RSS), minibatch size (256-4096) and OpenMP threads (1..cores)
//   memory    trainer_memory_plan (what `ppo-train --plan` prints) per slab against network size
//             and precision: nothing is trained
// Every measurement is a warm-up and R timed repeats (R = 3 with --quick, else 5) summarised by
// median, min and max; a train measurement's warm-up is a one-iteration run of the same setting.
// Peak RSS per run: the kernel's high-water mark is reset before each run (/proc/self/clear_refs)
// and VmHWM read after it, so each run reports its own peak, not the process's.
//
// Output (default: bench/results/<UTCSTAMP>-all[-quick].json, under the working directory when it
// has bench/results, else under the source tree): the JSON
//   {"machine": {...}, "commit", "date", "command", "mode", "omp": {...},
//    "results": [{"group", "name", "backend", "precision", "params": {...}, "median", "min", "max",
//                 "unit", "repeats"}, ...], "plots": [...], "sb3_compare": {...} and, when that
//                 run succeeded, "sb3_compare_more": [{...}] (full mode only)}
// the Markdown tables next to it (same name, .md), and the scaling plots <prefix>-scaling-*.png,
// each with the gnuplot script that draws it (.gp, data inline). Without gnuplot the .gp files stay
// and a warning says so. bench_all_report.c writes these files.
// OpenMP runs with GOMP_SPINCOUNT=10000 as `ppo-bench backend` does (ppo_bench.c re-executes with it
// unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set); the JSON records the values in effect.
// --quick fits in a few minutes on 2 cores: 3 repeats, short runs, fewer scaling points.
// Exit status: 0; 1 when a benchmark or a run fails (the rest still runs and the files are
// written); 2 on bad usage.
#define _GNU_SOURCE  // readlink, mkdtemp, popen
#include "bench/bench_all.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "apps/cli.h"
#include "bench/bench.h"
#include "common/check.h"
#include "common/error.h"
#include "nn/backend.h"
#include "ppo/config.h"
#include "ppo/train_run.h"
#include "ppo/trainer.h"

#ifndef PPO_SOURCE_DIR
#define PPO_SOURCE_DIR "."
#endif

// OpenBLAS is linked through ppo_nn; its header is private to nn/, so the two queries are declared here.
char *openblas_get_corename(void);
char *openblas_get_config(void);

// The Python with torch and stable-baselines3 for the SB3 group: $PPO_SB3_PYTHON (the product never
// needs Python; a developer points this at a virtual environment), else the group is skipped.
static const char *sb3_python(void) {
  const char *p = getenv("PPO_SB3_PYTHON");
  return p && *p && access(p, X_OK) == 0 ? p : NULL;
}

// --- the result sink ---------------------------------------------------------------------------------------

static BenchSink sink_fn;
static void *sink_context;
static const char *sink_group;

void bench_set_sink(BenchSink sink, const char *group, void *context) {
  sink_fn = sink, sink_group = group, sink_context = context;
}

void bench_report(const BenchResult *result) {
  if (!sink_fn) return;
  BenchResult r = *result;
  if (!r.group) r.group = sink_group ? sink_group : "-";
  sink_fn(&r, sink_context);
}

// Results are copied: the reporters' strings live on their stacks.

static void result_store(const BenchResult *r, void *context) {
  ResultList *list = context;
  if (list->count == list->capacity) {
    list->capacity = list->capacity ? 2 * list->capacity : 256;
    list->items = realloc(list->items, (size_t)list->capacity * sizeof *list->items);
    CHECK(list->items != NULL, "out of memory for the results");
  }
  StoredResult *s = &list->items[list->count++];
  memset(s, 0, sizeof *s);
  snprintf(s->group, sizeof s->group, "%s", r->group);
  snprintf(s->name, sizeof s->name, "%s", r->name);
  snprintf(s->backend, sizeof s->backend, "%s", r->backend ? r->backend : "-");
  snprintf(s->precision, sizeof s->precision, "%s", r->precision ? r->precision : "-");
  snprintf(s->params, sizeof s->params, "%s", r->params ? r->params : "");
  snprintf(s->unit, sizeof s->unit, "%s", r->unit);
  s->median = r->median, s->min = r->min, s->max = r->max, s->repeats = r->repeats;
}

// --- options -----------------------------------------------------------------------------------------------

enum { GROUP_BACKEND = 1, GROUP_ENVS = 2, GROUP_TRAIN = 4, GROUP_SCALING = 8, GROUP_MEMORY = 16, GROUP_SB3 = 32 };
static const char *const group_names[] = {"backend", "envs", "train", "scaling", "memory", "sb3"};
#define GROUP_COUNT 6

typedef struct {
  bool quick;
  const char *json_path;  // NULL: the default name
  unsigned groups;
  int repeats;
} AllOptions;

static int all_usage(const char *why) {
  fprintf(stderr,
          "ppo-bench all: %s\n"
          "usage: ppo-bench all [--quick] [--json OUT] [--only GROUP[,GROUP...]] [--repeats R]\n"
          "  groups: backend, envs, train, scaling, memory, sb3 (default: all of them; sb3 only without --quick)\n"
          "  --repeats R: timed repeats after the warm-up, 1..64 (default 3 with --quick, else 5)\n",
          why);
  return EXIT_BAD_INPUT;
}

static int parse_groups(const char *text, unsigned *groups) {
  *groups = 0;
  size_t n = strlen(text);  // no empty name: "envs," or "a,,b" is a slip, not a list
  if (n == 0 || text[0] == ',' || text[n - 1] == ',' || strstr(text, ",,")) return -1;
  char buf[TEXT_CAP];
  snprintf(buf, sizeof buf, "%s", text);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int g = -1;
    for (int i = 0; i < GROUP_COUNT; i++)
      if (strcmp(tok, group_names[i]) == 0) g = i;
    if (g < 0) return -1;
    *groups |= 1u << g;
  }
  return *groups ? 0 : -1;
}

// --- small helpers: files, processes, text -------------------------------------------------------------------

static void text_trim(char *s) {
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = '\0';
  size_t lead = strspn(s, " \t");
  if (lead) memmove(s, s + lead, n - lead + 1);
}

// The first line of a shell command's stdout into out ("" when it fails or prints nothing).
static void command_line(const char *command, char *out, size_t capacity) {
  out[0] = '\0';
  FILE *p = popen(command, "r");
  if (!p) return;
  if (!fgets(out, (int)capacity, p)) out[0] = '\0';
  int status = pclose(p);
  if (status != 0) out[0] = '\0';
  text_trim(out);
}

// `text` in single quotes for a shell (each ' as '\''), for the command lines the report shows; cut
// short (still quoted) when it does not fit.
static const char *shell_quoted(const char *text, char *out, size_t capacity) {
  size_t n = 0;
  out[n++] = '\'';
  for (const char *c = text; *c && n + 6 < capacity; c++) {
    if (*c == '\'') {
      memcpy(out + n, "'\\''", 4);
      n += 4;
    } else {
      out[n++] = *c;
    }
  }
  out[n++] = '\'';
  out[n] = '\0';
  return out;
}

// `text` as a shell word: as it is when it holds only characters no shell reads specially, else
// shell_quoted.
static const char *shell_word(const char *text, char *out, size_t capacity) {
  if (*text && strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./,=-") == strlen(text))
    return text;
  return shell_quoted(text, out, capacity);
}

// Runs argv[0] with argv (its output to ours) and waits: its exit status, or 1 when it cannot be
// started or ends by a signal (the message on stderr).
static int run_and_wait(char *const argv[]) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    execv(argv[0], argv);
    fprintf(stderr, "ppo-bench all: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) {
    fprintf(stderr, "ppo-bench all: cannot run %s: %s\n", argv[0], strerror(errno));
    return 1;
  }
  if (WIFSIGNALED(status)) fprintf(stderr, "ppo-bench all: %s ended by signal %d\n", argv[0], WTERMSIG(status));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// The value after "key" and ':' on the first matching line of a /proc file ("" when absent).
static void proc_field(const char *path, const char *key, char *out, size_t capacity) {
  out[0] = '\0';
  FILE *f = fopen(path, "r");
  if (!f) return;
  char line[4096];
  size_t klen = strlen(key);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, klen) != 0) continue;
    char *colon = strchr(line, ':');
    if (!colon) continue;
    snprintf(out, capacity, "%s", colon + 1);
    text_trim(out);
    break;
  }
  fclose(f);
}

static void load_average(double load[3]) {
  load[0] = load[1] = load[2] = NAN;
  FILE *f = fopen("/proc/loadavg", "r");
  if (!f) return;
  if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = load[1] = load[2] = NAN;
  fclose(f);
}

// Peak RSS of this process since the last reset: reset_peak_rss() then VmHWM. The reset returns false
// when the kernel does not allow it (the caller then uses the run's own getrusage figure). The peak
// includes what the process holds between runs (libraries, oneDNN's primitive cache, the results).
static bool reset_peak_rss(void) {
  malloc_trim(0);  // what earlier runs freed goes back to the kernel, so it does not count again
  FILE *f = fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  bool ok = fputs("5", f) >= 0;
  return fclose(f) == 0 && ok;
}

static double peak_rss_bytes(void) {
  char text[64];
  proc_field("/proc/self/status", "VmHWM", text, sizeof text);
  return text[0] ? atof(text) * 1024.0 : NAN;  // "12345 kB"
}

void bench_remove_tree(const char *dir) {
  pid_t pid = fork();
  if (pid == 0) {
    execlp("rm", "rm", "-rf", "--", dir, (char *)NULL);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fprintf(stderr, "ppo-bench: warning: could not remove %s\n", dir);
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct {
  double median, min, max;
} Summary;

// Median (the mean of the middle two for an even count), min and max of n values; NaNs are ignored.
static Summary summarise(const double *values, int n) {
  double sorted[128];
  int m = 0;
  for (int i = 0; i < n && m < 128; i++)
    if (!isnan(values[i])) sorted[m++] = values[i];
  if (m == 0) return (Summary){NAN, NAN, NAN};
  qsort(sorted, (size_t)m, sizeof(double), compare_double);
  double median = m % 2 ? sorted[m / 2] : 0.5 * (sorted[m / 2 - 1] + sorted[m / 2]);
  return (Summary){median, sorted[0], sorted[m - 1]};
}

// --- the machine ------------------------------------------------------------------------------------------

// The CPU features that decide the GEMM kernels, in the order they matter.
static void cpu_flags_of_interest(char *out, size_t capacity) {
  char flags[8192];
  out[0] = '\0';
  proc_field("/proc/cpuinfo", "flags", flags, sizeof flags);
  static const char *const wanted[] = {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile"};
  size_t used = 0;
  for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
    char padded[64];
    snprintf(padded, sizeof padded, " %s ", wanted[i]);
    char hay[8200];
    snprintf(hay, sizeof hay, " %s ", flags);
    if (strstr(hay, padded) && used + strlen(wanted[i]) + 2 < capacity)
      used += (size_t)snprintf(out + used, capacity - used, "%s%s", used ? " " : "", wanted[i]);
  }
  if (!out[0]) snprintf(out, capacity, "none of avx2/avx512/amx");
}

static void machine_describe(Machine *m) {
  memset(m, 0, sizeof *m);
  proc_field("/proc/cpuinfo", "model name", m->cpu_model, sizeof m->cpu_model);
  if (!m->cpu_model[0]) snprintf(m->cpu_model, sizeof m->cpu_model, "unknown");
  cpu_flags_of_interest(m->cpu_flags, sizeof m->cpu_flags);
  proc_field("/proc/meminfo", "MemTotal", m->memory, sizeof m->memory);
  struct utsname u;
  if (uname(&u) == 0) snprintf(m->kernel, sizeof m->kernel, "%s %s %s", u.sysname, u.release, u.machine);
  m->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
  m->omp_threads = omp_get_max_threads();
  snprintf(m->blas_core, sizeof m->blas_core, "%s", openblas_get_corename() ? openblas_get_corename() : "unknown");
  snprintf(m->blas_config, sizeof m->blas_config, "%s", openblas_get_config() ? openblas_get_config() : "unknown");
  text_trim(m->blas_config);

  Backend *cpu = backend_open("cpu");
  if (cpu) {
    snprintf(m->backend_cpu, sizeof m->backend_cpu, "%s", backend_describe(cpu));
    snprintf(m->backends[m->n_backends++], sizeof m->backends[0], "cpu");
    backend_close(cpu);
  }
  Backend *cuda = backend_open("cuda");
  if (cuda) {
    snprintf(m->cuda_backend, sizeof m->cuda_backend, "%s", backend_describe(cuda));
    snprintf(m->backends[m->n_backends++], sizeof m->backends[0], "cuda");
    backend_close(cuda);
  } else {
    snprintf(m->cuda_backend, sizeof m->cuda_backend, "none: %s", error_message());
  }
  command_line("nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null", m->gpu,
               sizeof m->gpu);
  if (!m->gpu[0]) snprintf(m->gpu, sizeof m->gpu, "none");

  // Read-only git queries (--no-optional-locks: no index refresh while others work in the tree).
  char head[64], dirty[TEXT_CAP];
  command_line("git -C '" PPO_SOURCE_DIR "' rev-parse --short=12 HEAD 2>/dev/null", head, sizeof head);
  command_line("git -C '" PPO_SOURCE_DIR "' --no-optional-locks status --porcelain --untracked-files=no 2>/dev/null",
               dirty, sizeof dirty);
  snprintf(m->commit, sizeof m->commit, "%s%s", head[0] ? head : "unknown", dirty[0] ? " + uncommitted changes" : "");

  time_t now = time(NULL);
  strftime(m->date, sizeof m->date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  strftime(m->stamp, sizeof m->stamp, "%Y%m%dT%H%M%SZ", gmtime(&now));

  // The binary, relative to the working directory when it lies under it (for the command line).
  char exe[PATH_CAP_ALL], cwd[PATH_CAP_ALL];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  size_t cl = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
  if (cl && strncmp(exe, cwd, cl) == 0 && exe[cl] == '/')
    snprintf(m->binary, sizeof m->binary, "%s", exe + cl + 1);
  else
    snprintf(m->binary, sizeof m->binary, "%s", n > 0 ? exe : "ppo-bench");
  load_average(m->load_before);
}

// --- train runs ---------------------------------------------------------------------------------------------

typedef struct {
  const char *config;  // path
  const char *sets[16];
  int n_sets;
  int64_t iterations;
} TrainSetting;

typedef struct {
  double sps, rollout_sps, update_sps, rollout_share, gae_share, update_share, peak_rss;
} TrainSample;

static void setting_add(TrainSetting *s, const char *set) {
  CHECK(s->n_sets < 16, "too many --set overrides in a bench setting");
  s->sets[s->n_sets++] = set;
}

// One train_run of the setting into a fresh directory under $TMPDIR, removed afterwards.
// Returns 0, or the run's exit status (its message already printed).
static int train_once(const TrainSetting *s, int64_t iterations, TrainSample *out) {
  Config cfg;
  if (config_load(&cfg, s->config, s->n_sets, s->sets) != 0) {
    fprintf(stderr, "ppo-bench all: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char dir[PATH_CAP_ALL], run_dir[PATH_CAP_ALL + 8];
  snprintf(dir, sizeof dir, "%s/ppo-bench-all-XXXXXX", tmp);
  if (!mkdtemp(dir)) {
    fprintf(stderr, "ppo-bench all: cannot create a directory under %s\n", tmp);
    return EXIT_RUNTIME;
  }
  snprintf(run_dir, sizeof run_dir, "%s/run", dir);
  TrainRunOptions opt = {.config_path = s->config,
                         .n_overrides = s->n_sets,
                         .overrides = s->sets,
                         .run_dir = run_dir,
                         .max_iterations = iterations,
                         .quiet = true};
  bool reset = reset_peak_rss();
  TrainRunResult r;
  int status = train_run(&opt, &r);
  double peak = reset ? peak_rss_bytes() : r.peak_rss_bytes;
  bench_remove_tree(dir);
  if (status != 0) return status;
  double steps = (double)r.iterations * (double)cfg.ppo.n_steps * (double)cfg.env.n_envs;
  out->sps = steps / r.seconds;
  out->rollout_sps = steps / r.rollout_s;
  out->update_sps = steps * (double)cfg.ppo.n_epochs / r.update_s;
  out->rollout_share = 100.0 * r.rollout_s / r.seconds;
  out->gae_share = 100.0 * r.gae_s / r.seconds;
  out->update_share = 100.0 * r.update_s / r.seconds;
  out->peak_rss = peak;
  return 0;
}

// A warm-up run of one iteration, then `repeats` runs; reports each metric as median, min, max.
// extra_bytes > 0 adds a "planned_bytes" row (the memory plan of the setting).
static int train_measure(const TrainSetting *s, const char *group, const char *backend, const char *precision,
                         const char *params, int repeats, double planned_bytes) {
  TrainSample warm, samples[64];
  int status = train_once(s, 1, &warm);
  if (status != 0) return status;
  if (repeats > 64) repeats = 64;
  for (int r = 0; r < repeats; r++)
    if ((status = train_once(s, s->iterations, &samples[r])) != 0) return status;
  static const struct {
    const char *name, *unit;
    size_t offset;
    double scale;
  } metrics[] = {
      {"sps", "steps/s", offsetof(TrainSample, sps), 1},
      {"rollout_sps", "steps/s", offsetof(TrainSample, rollout_sps), 1},
      {"update_samples_per_s", "samples/s", offsetof(TrainSample, update_sps), 1},
      {"rollout_share", "%", offsetof(TrainSample, rollout_share), 1},
      {"gae_share", "%", offsetof(TrainSample, gae_share), 1},
      {"update_share", "%", offsetof(TrainSample, update_share), 1},
      {"peak_rss", "MiB", offsetof(TrainSample, peak_rss), 1.0 / 1048576.0},
  };
  printf("  %-14s %-5s %-48s", backend, precision, params);
  for (size_t k = 0; k < sizeof metrics / sizeof metrics[0]; k++) {
    double values[64];
    for (int r = 0; r < repeats; r++)
      values[r] = *(const double *)((const char *)&samples[r] + metrics[k].offset) * metrics[k].scale;
    Summary sm = summarise(values, repeats);
    bench_report(&(BenchResult){.group = group,
                                .name = metrics[k].name,
                                .backend = backend,
                                .precision = precision,
                                .params = params,
                                .median = sm.median,
                                .min = sm.min,
                                .max = sm.max,
                                .unit = metrics[k].unit,
                                .repeats = repeats});
    if (k == 0) printf(" %9.0f steps/s [%.0f, %.0f]", sm.median, sm.min, sm.max);
    if (k == 6) printf(" peak %.1f MiB", sm.median);
  }
  if (planned_bytes > 0)
    bench_report(&(BenchResult){.group = group,
                                .name = "planned_bytes",
                                .backend = backend,
                                .precision = precision,
                                .params = params,
                                .median = planned_bytes,
                                .min = planned_bytes,
                                .max = planned_bytes,
                                .unit = "bytes",
                                .repeats = 1});
  printf("\n");
  fflush(stdout);
  return 0;
}

// The memory plan of a configuration (trainer_open only: market, envs, backend; no slab allocated).
static const TrainerPlan *plan_open(const char *config, int n_sets, const char *const *sets, Trainer **trainer,
                                    const EnvSpec **spec) {
  Config cfg;
  *trainer = NULL;
  if (config_load(&cfg, config, n_sets, sets) != 0 || !(*trainer = trainer_open(&cfg))) {
    fprintf(stderr, "ppo-bench all: %s\n", error_message());
    return NULL;
  }
  if (spec) *spec = trainer_env_spec(*trainer);
  return trainer_memory_plan(*trainer);
}

static double planned_total(const TrainSetting *s) {
  Trainer *t;
  const TrainerPlan *plan = plan_open(s->config, s->n_sets, s->sets, &t, NULL);
  double total = plan ? (double)(plan->device_total + plan->host_total) : NAN;
  trainer_free(t);
  return total;
}

// --- the groups ---------------------------------------------------------------------------------------------

static const char *const precisions[3] = {"fp32", "bf16", "fp16"};

static int run_backend_group(const Machine *m, int repeats) {
  int rc = 0;
  char r[16];
  snprintf(r, sizeof r, "%d", repeats);
  for (int b = 0; b < m->n_backends; b++) {
    omp_set_num_threads(m->omp_threads);  // a trainer run before may have narrowed it (trainer_apply_threads)
    char name[16];
    snprintf(name, sizeof name, "%s", m->backends[b]);
    char *argv[] = {"backend", "--backend", name, "--precision", "all", "--repeats", r, NULL};
    rc |= bench_backend_main(7, argv) != 0;
  }
  return rc;
}

static int run_envs_group(bool quick, int repeats) {
  char r[16];
  snprintf(r, sizeof r, "%d", repeats);
  char *argv[] = {"envs", "--steps", quick ? "20000" : "100000", "--repeats", r, NULL};
  return bench_envs_main(5, argv) != 0;
}

// Overrides every bench run shares: no evaluation pass, no periodic checkpoints.
#define QUIET_SETS(s) (setting_add((s), "eval.every=0"), setting_add((s), "run.checkpoint_every=0"))

static int run_train_group(const Machine *m, bool quick, int repeats) {
  int rc = 0;
  printf("\ntrain: whole runs through ppo/train_run.c (warm-up run + %d repeats)\n", repeats);
  char device[32], precision[32], params[TEXT_CAP];
  for (int b = 0; b < m->n_backends; b++) {
    snprintf(device, sizeof device, "run.device=%s", m->backends[b]);
    for (int p = 0; p < 3; p++) {
      snprintf(precision, sizeof precision, "run.precision=%s", precisions[p]);
      TrainSetting s = {.config = "configs/default.ini", .iterations = quick ? 3 : 8};
      QUIET_SETS(&s);
      setting_add(&s, device), setting_add(&s, precision);
      snprintf(params, sizeof params, "config=configs/default.ini,iterations=%lld", (long long)s.iterations);
      rc |= train_measure(&s, "train", m->backends[b], precisions[p], params, repeats, 0) != 0;
    }
    TrainSetting s = {.config = "configs/cartpole.ini", .iterations = quick ? 3 : 10};
    QUIET_SETS(&s);
    setting_add(&s, device);
    snprintf(params, sizeof params, "config=configs/cartpole.ini,iterations=%lld", (long long)s.iterations);
    rc |= train_measure(&s, "train", m->backends[b], "fp32", params, repeats, 0) != 0;
    // The headline network (seed.ini), with a shorter rollout so a run takes seconds: in its own
    // precision (fp16) on a GPU, and in bf16 and fp32 everywhere (the CPU emulates fp16: ppo-bench
    // backend measures that; a whole headline run in it took over a minute per repeat).
    static const char *const headline_precisions[3] = {"fp16", "bf16", "fp32"};
    int on_cpu = strcmp(m->backends[b], "cpu") == 0;
    for (int p = on_cpu; p < 3 && !quick; p++) {
      TrainSetting h = {.config = "configs/seed.ini", .iterations = 2};
      QUIET_SETS(&h);
      snprintf(precision, sizeof precision, "run.precision=%s", headline_precisions[p]);
      setting_add(&h, device), setting_add(&h, precision), setting_add(&h, "ppo.n_steps=256");
      snprintf(params, sizeof params, "config=configs/seed.ini,n_steps=256,iterations=2");
      rc |= train_measure(&h, "train", m->backends[b], headline_precisions[p], params, repeats, 0) != 0;
    }
  }
  return rc;
}

// The scaling studies on configs/default.ini with n_steps 128 (4096 transitions at 32 envs, so the
// largest minibatch fits), on the first backend in fp32.
static int run_scaling_group(const Machine *m, bool quick, int repeats) {
  int rc = 0;
  const char *backend = m->backends[0];
  char device[32], value[64], params[TEXT_CAP];
  snprintf(device, sizeof device, "run.device=%s", backend);
  const int64_t iterations = quick ? 2 : 5;

  static const int envs_full[] = {8, 16, 32, 64, 128, 256}, envs_quick[] = {8, 32, 128, 256};
  const int *envs = quick ? envs_quick : envs_full;
  int n_envs_points = quick ? 4 : 6;
  printf("\nscaling: n_envs (configs/default.ini, n_steps 128, batch 256, 1 thread, fp32)\n");
  for (int i = 0; i < n_envs_points; i++) {
    TrainSetting s = {.config = "configs/default.ini", .iterations = iterations};
    QUIET_SETS(&s);
    setting_add(&s, device), setting_add(&s, "ppo.n_steps=128");
    snprintf(value, sizeof value, "env.n_envs=%d", envs[i]);
    setting_add(&s, value);
    snprintf(params, sizeof params, "n_envs=%d,n_steps=128,batch_size=256,threads=1", envs[i]);
    rc |= train_measure(&s, "scaling_envs", backend, "fp32", params, repeats, planned_total(&s)) != 0;
  }

  static const int batch_full[] = {256, 512, 1024, 2048, 4096}, batch_quick[] = {256, 1024, 4096};
  const int *batches = quick ? batch_quick : batch_full;
  int n_batch_points = quick ? 3 : 5;
  printf("\nscaling: minibatch size (configs/default.ini, 32 envs, n_steps 128, 1 thread, fp32)\n");
  for (int i = 0; i < n_batch_points; i++) {
    TrainSetting s = {.config = "configs/default.ini", .iterations = iterations};
    QUIET_SETS(&s);
    setting_add(&s, device), setting_add(&s, "ppo.n_steps=128");
    snprintf(value, sizeof value, "ppo.batch_size=%d", batches[i]);
    setting_add(&s, value);
    snprintf(params, sizeof params, "batch_size=%d,n_envs=32,n_steps=128,threads=1", batches[i]);
    rc |= train_measure(&s, "scaling_minibatch", backend, "fp32", params, repeats, planned_total(&s)) != 0;
  }

  printf("\nscaling: OpenMP threads (configs/default.ini, 64 envs, n_steps 128, batch 1024, fp32)\n");
  for (int threads = 1; threads <= m->cores; threads *= 2) {
    TrainSetting s = {.config = "configs/default.ini", .iterations = iterations};
    QUIET_SETS(&s);
    setting_add(&s, device), setting_add(&s, "ppo.n_steps=128"), setting_add(&s, "env.n_envs=64");
    setting_add(&s, "ppo.batch_size=1024");
    snprintf(value, sizeof value, "run.threads=%d", threads);
    setting_add(&s, value);
    snprintf(params, sizeof params, "threads=%d,n_envs=64,n_steps=128,batch_size=1024", threads);
    rc |= train_measure(&s, "scaling_threads", backend, "fp32", params, repeats, 0) != 0;
    if (threads < m->cores && 2 * threads > m->cores) threads = m->cores / 2;  // end on every core
  }
  return rc;
}

// Memory plan per slab against network size and precision (configs/default.ini otherwise).
static int run_memory_group(const Machine *m, bool quick) {
  static const char *const nets_full[] = {"64,64",     "256,256",       "512,512",
                                          "1024,1024", "2048,1024,512", "4096,2048,1024"};
  static const char *const nets_quick[] = {"64,64", "256,256", "1024,1024", "2048,1024,512"};
  const char *const *nets = quick ? nets_quick : nets_full;
  int n_nets = quick ? 4 : 6, rc = 0;
  printf("\nmemory plan per slab (configs/default.ini: 32 envs, n_steps 256, batch 256; nothing trained)\n");
  char device[32], pi[64], vf[64], precision[32], params[TEXT_CAP], net[64];
  snprintf(device, sizeof device, "run.device=%s", m->backends[0]);
  for (int p = 0; p < 3; p++)
    for (int n = 0; n < n_nets; n++) {
      snprintf(pi, sizeof pi, "policy.pi_layers=%s", nets[n]);
      snprintf(vf, sizeof vf, "policy.vf_layers=%s", nets[n]);
      snprintf(precision, sizeof precision, "run.precision=%s", precisions[p]);
      const char *sets[] = {device, pi, vf, precision};
      Trainer *t;
      const TrainerPlan *plan = plan_open("configs/default.ini", 4, sets, &t, NULL);
      if (!plan) {
        trainer_free(t);
        rc = 1;
        continue;
      }
      snprintf(net, sizeof net, "%s", nets[n]);
      for (char *c = net; *c; c++)
        if (*c == ',') *c = '-';
      PolicySpec ps = trainer_policy_spec(trainer_config(t), trainer_env_spec(t));
      double n_params = (double)policy_parameter_count(&ps);
      snprintf(params, sizeof params, "network=%s,parameters=%.0f", net, n_params);
      for (int i = 0; i < plan->count; i++) {
        double v = (double)plan->bytes[i];
        bench_report(
            &(BenchResult){"memory_plan", plan->name[i], m->backends[0], precisions[p], params, v, v, v, "bytes", 1});
      }
      double dev = (double)plan->device_total, host = (double)plan->host_total;
      bench_report(&(BenchResult){"memory_plan", "total backend memory", m->backends[0], precisions[p], params, dev,
                                  dev, dev, "bytes", 1});
      bench_report(&(BenchResult){"memory_plan", "total host memory", m->backends[0], precisions[p], params, host, host,
                                  host, "bytes", 1});
      printf("  %-5s %-16s %12.0f parameters  backend %10.1f MiB  host %8.1f MiB\n", precisions[p], nets[n], n_params,
             dev / 1048576.0, host / 1048576.0);
      trainer_free(t);
    }
  return rc;
}

// --- main -----------------------------------------------------------------------------------------------------

int bench_all_main(int argc, char **argv) {
  AllOptions o = {.groups = (1u << GROUP_COUNT) - 1};
  static const char *const options[] = {"--quick", "--json", "--only", "--repeats"};  // --quick takes no value
  CliSeen seen = {.count = 0};
  for (int i = 1; i < argc; i++) {  // "--opt VALUE" or "--opt=VALUE" (apps/cli.h), each once
    const char *a = NULL, *v = NULL;
    char why[TEXT_CAP];
    for (size_t k = 0; k < sizeof options / sizeof options[0] && !a; k++)
      if (k == 0 ? strcmp(argv[i], options[k]) == 0 : cli_is_option(argv[i], options[k])) a = options[k];
    if (!a) {
      snprintf(why, sizeof why, "unknown option '%s'", argv[i]);
      return all_usage(why);
    }
    if (cli_repeated(&seen, a)) {
      snprintf(why, sizeof why, "%s is given twice; give it once", a);
      return all_usage(why);
    }
    if (strcmp(a, "--quick") == 0) {
      o.quick = true;
      continue;
    }
    if (!(v = cli_option_value(argc, argv, &i, a))) {
      snprintf(why, sizeof why, "%s needs a value", a);
      return all_usage(why);
    }
    if (strcmp(a, "--json") == 0) {
      size_t n = strlen(v);
      if (n < 6 || strcmp(v + n - 5, ".json") != 0) return all_usage("--json OUT: OUT must end in .json");
      o.json_path = v;
    } else if (strcmp(a, "--only") == 0) {
      if (parse_groups(v, &o.groups) != 0) {
        snprintf(why, sizeof why, "--only %s: allowed groups are backend, envs, train, scaling, memory, sb3", v);
        return all_usage(why);
      }
    } else {
      char *end;
      long r = strtol(v, &end, 10);
      if (end == v || *end || r < 1 || r > 64) return all_usage("--repeats R: R must be an integer in 1..64");
      o.repeats = (int)r;
    }
  }
  if (o.repeats == 0) o.repeats = o.quick ? 3 : 5;
  if (o.quick) o.groups &= ~(unsigned)GROUP_SB3;  // the SB3 side by side takes minutes: full mode only
  if (!sb3_python()) o.groups &= ~(unsigned)GROUP_SB3;
  if (o.groups == 0) return all_usage("nothing to run (sb3 runs only without --quick, with PPO_SB3_PYTHON set)");

  Machine m;
  machine_describe(&m);
  if (m.n_backends == 0) {
    fprintf(stderr, "ppo-bench all: no backend opens: %s\n", error_message());
    return EXIT_RUNTIME;
  }
  // Outputs: <prefix>-all[-quick].json / .md and <prefix>-scaling-*.png.
  char results_dir[PREFIX_CAP - 64], prefix[PREFIX_CAP], json_path[PATH_CAP_ALL], md_path[PATH_CAP_ALL];
  struct stat st;
  if (stat("bench/results", &st) == 0 && S_ISDIR(st.st_mode))
    snprintf(results_dir, sizeof results_dir, "bench/results");
  else
    snprintf(results_dir, sizeof results_dir, "%s/bench/results", PPO_SOURCE_DIR);
  if (o.json_path) {
    if (strlen(o.json_path) >= PREFIX_CAP) return all_usage("--json OUT: the path is too long");
    snprintf(json_path, sizeof json_path, "%s", o.json_path);
    snprintf(prefix, sizeof prefix, "%.*s", (int)(strlen(o.json_path) - 5), o.json_path);
    snprintf(md_path, sizeof md_path, "%s.md", prefix);
  } else {
    snprintf(prefix, sizeof prefix, "%s/%s", results_dir, m.stamp);
    snprintf(json_path, sizeof json_path, "%s-all%s.json", prefix, o.quick ? "-quick" : "");
    snprintf(md_path, sizeof md_path, "%s-all%s.md", prefix, o.quick ? "-quick" : "");
  }
  // The outputs' place, before the runs (minutes): the Markdown and the gnuplot files go beside the JSON.
  if (bench_output_path_check(json_path) != 0 || bench_output_path_check(md_path) != 0) {
    if (o.json_path) return cli_bad_value("ppo-bench all", "--json", o.json_path, error_message());
    fprintf(stderr, "ppo-bench all: %s: %s\n", json_path, error_message());
    return EXIT_BAD_INPUT;
  }
  char command[1024];
  int used = snprintf(command, sizeof command, "%s all", m.binary);
  for (int i = 1; i < argc && used < (int)sizeof command; i++)
    used += snprintf(command + used, sizeof command - (size_t)used, " %s", argv[i]);

  // The configs are read relative to the working directory, as ppo-train reads them.
  if (access("configs/default.ini", R_OK) != 0 && (o.groups & (GROUP_TRAIN | GROUP_SCALING | GROUP_MEMORY))) {
    fprintf(stderr, "ppo-bench all: configs/default.ini not found: run from the repository root (%s)\n",
            PPO_SOURCE_DIR);
    return EXIT_BAD_INPUT;
  }
  printf(
      "ppo-bench all (%s)  %s  commit %s\n  %s, %d cores (%s)\n  %s\n  OpenBLAS core %s; CUDA backend %s; GPU %s\n"
      "  warm-up + %d repeats (median [min, max]); output %s\n",
      o.quick ? "quick" : "full", m.date, m.commit, m.cpu_model, m.cores, m.cpu_flags, m.backend_cpu, m.blas_core,
      m.cuda_backend, m.gpu, o.repeats, json_path);
  fflush(stdout);

  ResultList list = {0};
  double t0 = (double)time(NULL);
  int rc = 0;
  if (o.groups & GROUP_BACKEND) {
    bench_set_sink(result_store, "backend", &list);
    rc |= run_backend_group(&m, o.repeats);
  }
  if (o.groups & GROUP_ENVS) {
    bench_set_sink(result_store, "envs", &list);
    rc |= run_envs_group(o.quick, o.repeats);
  }
  bench_set_sink(result_store, "train", &list);
  if (o.groups & GROUP_TRAIN) rc |= run_train_group(&m, o.quick, o.repeats);
  if (o.groups & GROUP_SCALING) rc |= run_scaling_group(&m, o.quick, o.repeats);
  if (o.groups & GROUP_MEMORY) rc |= run_memory_group(&m, o.quick);
  bench_set_sink(NULL, NULL, NULL);

  Report rep = {.m = &m, .list = &list, .command = command, .mode = o.quick ? "quick" : "full"};
  char sb3_json[2][PATH_CAP_ALL], sb3_command[2][4096];
  if (o.groups & GROUP_SB3) {
    char exe[PATH_CAP_ALL];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    snprintf(sb3_json[0], sizeof sb3_json[0], "%s-sb3-cartpole.json", prefix);
    snprintf(sb3_json[1], sizeof sb3_json[1], "%s-sb3-cartpole-threads2.json", prefix);
    // SB3 at its fastest of 1 and 2 torch threads against the engine at the config's thread count
    // (1), then the engine again at 2 threads (the actor's and the critic's passes side by side:
    // docs/ARCHITECTURE.md, lanes) against the same SB3 measurement.
    char *const first[] = {"--threads", "1,2", NULL, NULL};
    char *const second[] = {"--sb3-from", sb3_json[0], "--set", "run.threads=2"};
    for (int i = 0; i < 2 && (i == 0 || rep.sb3_status[0] == 0); i++) {
      char *const *extra = i ? second : first;
      char *sb3_argv[16] = {(char *)sb3_python(),   "bench/sb3_compare.py", "--config",
                            "configs/cartpole.ini", "--timesteps",          "50000"};
      int sb3_argc = 6;
      for (int k = 0; k < 4 && extra[k]; k++) sb3_argv[sb3_argc++] = extra[k];
      char *const tail[] = {"--engine", exe, "--json", sb3_json[i], NULL};
      for (int k = 0; k < 5; k++) sb3_argv[sb3_argc + k] = tail[k];
      sb3_argc += 4;
      // the command as a reader would type it; the program itself starts without a shell (below)
      size_t len = 0;
      sb3_command[i][0] = '\0';
      for (int k = 0; k < sb3_argc && len < sizeof sb3_command[i]; k++) {
        char quoted[PATH_CAP_ALL * 2];
        len += (size_t)snprintf(sb3_command[i] + len, sizeof sb3_command[i] - len, "%s%s", k ? " " : "",
                                k == 0 ? shell_quoted(sb3_argv[0], quoted, sizeof quoted)  // never read as an assignment
                                       : shell_word(sb3_argv[k], quoted, sizeof quoted));
      }
      printf("\nsb3: %s\n", sb3_command[i]);
      fflush(stdout);
      // fork and exec, not system(): no shell reads the paths (the command above is for the reader)
      rep.sb3_status[i] = run_and_wait(sb3_argv);
      rep.sb3_command[i] = sb3_command[i], rep.sb3_json[i] = sb3_json[i];
      rep.n_sb3 = i + 1;
      rc |= rep.sb3_status[i] != 0;
    }
  }

  PlotList plots = {0};
  if (bench_all_plots(&plots, &list, prefix, o.groups & GROUP_SCALING, o.groups & GROUP_MEMORY) != 0) rc = 1;
  rep.plots = &plots;
  load_average(rep.load_after);
  rep.seconds = (double)time(NULL) - t0;
  if (bench_all_write_json(json_path, &rep) != 0 || bench_all_write_markdown(md_path, &rep) != 0) {
    fprintf(stderr, "ppo-bench all: %s\n", error_message());
    free(list.items);
    return EXIT_RUNTIME;
  }
  printf("\nppo-bench all: %d results in %.0f s -> %s, %s", list.count, rep.seconds, json_path, md_path);
  for (int i = 0; i < plots.count; i++) printf(", %s", bench_base_name(plots.items[i].path));
  printf("\n");
  free(list.items);
  return rc ? EXIT_RUNTIME : EXIT_OK;
}
