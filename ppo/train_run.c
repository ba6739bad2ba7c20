// ppo/train_run.c: the `ppo-train` run (ppo/train_run.h).
#define _DEFAULT_SOURCE  // realpath (XSI), hidden by _POSIX_C_SOURCE alone
#include "ppo/train_run.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/check.h"
#include "common/cpu_wait.h"
#include "common/error.h"
#include "common/file_check.h"
#include "common/host_memory.h"
#include "common/log.h"
#include "common/timer.h"
#include "nn/ops_math.h"
#include "ppo/checkpoint.h"
#include "ppo/config.h"
#include "ppo/dist.h"
#include "ppo/evaluate.h"
#include "ppo/metrics_log.h"
#include "ppo/trainer.h"

#define PATH_CAP 1100
#define RUN_DIR_MAX 1000  // characters of a run directory's path

// --- signals ---------------------------------------------------------------------------------------

static volatile sig_atomic_t signal_count = 0;
static volatile sig_atomic_t last_signal = 0;
static volatile sig_atomic_t stop_saved = 0;  // the stop's checkpoint is written: later signals are ignored
static struct timespec first_signal_at;  // written once, in the handler, before signal_count says so

// A stop signal within this long of the first is the same request: coreutils' timeout sends SIGTERM
// to the process and then to its group, two signals microseconds apart, and counting the second as
// "asked twice" killed a third of such runs without their checkpoint. Another stop signal alike:
// systemd follows its SIGTERM at once with a SIGHUP where a unit has SendSIGHUP=yes, as logind's
// session scopes do (a shutdown or a preemption stops an ssh session's, and tmux's, processes so),
// and that SIGHUP ended the run without its checkpoint.
#define SIGNAL_REPEAT_SECONDS 1.0

static void on_signal(int sig) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe (POSIX)
  if (stop_saved) return;                // done as asked: a second signal now would only turn exit 0 into a failure
  if (signal_count > 0) {
    double since =
        (double)(now.tv_sec - first_signal_at.tv_sec) + 1e-9 * (double)(now.tv_nsec - first_signal_at.tv_nsec);
    if (since < SIGNAL_REPEAT_SECONDS) return;
    signal(sig, SIG_DFL);  // asked again: leave now
    raise(sig);
    return;
  }
  first_signal_at = now;
  last_signal = sig;
  signal_count = 1;
  trainer_request_stop();
}

// SIGINT, SIGTERM and SIGHUP (the terminal or ssh session closed) ask for a stop with a checkpoint;
// a SIGHUP that was ignored when the program started (nohup) stays ignored. SIGPIPE is ignored: a
// progress line into a pipe whose reader has gone (`| head`, a tee that died) fails with EPIPE and
// training goes on (train.log and the metrics files have everything), where the default action
// killed the run without a checkpoint. The dispositions found are put back at the end.
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};
static struct sigaction saved_stop[3], saved_pipe;

static void install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int k = 0; k < 3; k++) {
    sigaction(stop_signals[k], NULL, &saved_stop[k]);
    if (stop_signals[k] == SIGHUP && saved_stop[k].sa_handler == SIG_IGN) continue;
    sigaction(stop_signals[k], &sa, NULL);
  }
  struct sigaction ignore;
  memset(&ignore, 0, sizeof ignore);
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &saved_pipe);
}

static void restore_signals(void) {
  for (int k = 0; k < 3; k++) sigaction(stop_signals[k], &saved_stop[k], NULL);
  sigaction(SIGPIPE, &saved_pipe, NULL);
  signal_count = 0;
  stop_saved = 0;
  trainer_clear_stop();
}

static int signal_depth = 0;  // open train_signals_begin pairs (one thread: the program's main)

void train_signals_begin(void) {
  if (signal_depth++ == 0) install_signals();
}

void train_signals_end(void) {
  if (signal_depth > 0 && --signal_depth == 0) restore_signals();
}

// --- files -----------------------------------------------------------------------------------------

static int write_config_file(const Config *cfg, const char *path) {
  AtomicFile af;
  if (!atomic_file_open(&af, path)) return -1;
  if (config_write_ini(cfg, af.stream) != 0) {
    error_prepend("%s: ", path);  // "cannot write the configuration: No space left on device"
    atomic_file_abort(&af);
    return -1;
  }
  return atomic_file_commit(&af);
}

// Is name a checkpoint's file name, ckpt_N.h5 with N in digits (save_checkpoint writes %06lld)? The
// one rule for every reader of checkpoints/; *iteration gets N.
static bool checkpoint_file_name(const char *name, long long *iteration) {
  if (strncmp(name, "ckpt_", 5) != 0) return false;
  const char *digits = name + 5;
  size_t n = strspn(digits, "0123456789");
  if (n == 0 || n > 18 || strcmp(digits + n, ".h5") != 0) return false;
  *iteration = strtoll(digits, NULL, 10);
  return true;
}

// The iterations of dir's checkpoint files up to max_iteration, in directory order; *count of them.
// NULL (count 0) when there are none or the directory cannot be read; the caller frees.
static int64_t *list_checkpoints(const char *dir, int64_t max_iteration, size_t *count) {
  *count = 0;
  DIR *d = opendir(dir);
  if (!d) return NULL;
  int64_t *its = NULL;
  size_t cap = 0;
  for (struct dirent *de; (de = readdir(d));) {
    long long it;
    if (!checkpoint_file_name(de->d_name, &it) || it > max_iteration) continue;
    if (*count == cap) {
      cap = cap ? 2 * cap : 64;
      int64_t *grown = realloc(its, cap * sizeof *its);
      if (!grown) break;
      its = grown;
    }
    its[(*count)++] = it;
  }
  closedir(d);
  return its;
}

// Keeps the newest `keep` checkpoints ckpt_NNNNNN.h5 of dir (0: all) up to iteration `current` (the
// one just written), by iteration number, whatever cadence wrote them (a final or interrupted run's
// checkpoint falls between multiples of every). Checkpoints past `current` are another timeline's
// (this run resumed from an earlier one): left as they are, never counted.
static void prune_checkpoints(const char *dir, int64_t keep, int64_t current) {
  size_t count;
  int64_t *its = list_checkpoints(dir, current, &count);
  for (size_t i = 0; keep > 0 && i < count; i++) {  // drop every one with `keep` or more newer ones
    size_t newer = 0;
    for (size_t j = 0; j < count; j++) newer += its[j] > its[i];
    char path[PATH_CAP];
    if (newer >= (size_t)keep &&
        snprintf(path, sizeof path, "%s/ckpt_%06lld.h5", dir, (long long)its[i]) < (int)sizeof path)
      (void)unlink(path);
  }
  free(its);
}

// best.txt's text: best.h5's record for people (and scripts), one key and value per line.
static void best_record_text(char *buf, size_t capacity, const char *metric, int64_t iteration, double value) {
  snprintf(buf, capacity, "metric %s\niteration %lld\nvalue %.17g\n", metric, (long long)iteration, value);
}

static int write_best(const char *run_dir, const char *metric, int64_t iteration, double value);

// A recorded best value that an evaluation can have written: best.h5 is written only for a
// metric above -inf (the start; evaluator_run makes a NaN metric -inf), and a metric is +inf only
// as a Sharpe or Sortino ratio with no spread or no downside. Any other value (NaN, -inf, +inf of
// total_return or calmar) is a damaged record: resumed, it never let best.h5 be replaced (NaN) or
// let any evaluation replace it (-inf), and was logged as "(best nan)" without a word.
static int check_best_value(const char *path, const char *where, const char *metric_key, const char *metric,
                            double value) {
  if (isfinite(value)) return 0;
  if (value > 0 && (strcmp(metric, "sharpe") == 0 || strcmp(metric, "sortino") == 0)) return 0;
  error_set(
      "%s: %s = %g (%s %s): must be a finite number (+inf only for sharpe or sortino: a pass without "
      "spread or downside), the value of the evaluation that wrote best.h5; a damaged record: correct it, or move "
      "best.h5 away and the next evaluation writes a new one",
      path, where, value, metric_key, metric);
  return -1;
}

// The metric and the value that selected best.h5, so a resumed run only replaces it with a better
// evaluation: best.h5's own best_* attributes (checkpoint_save_best), or for a best.h5 written
// before them the best.txt beside it. *best = -INFINITY when there is none (or it names another
// metric). -1 and the message when the recorded value is one no evaluation writes (check_best_value).
// best.txt, the same record for people, is written from best.h5's when they differ: a kill between
// the two writes (best.h5 first) left an older record there, which no equal evaluation replaced.
static int read_best(const char *run_dir, const char *metric, double *best) {
  char path[PATH_CAP], name[64];
  *best = -INFINITY;
  snprintf(path, sizeof path, "%s/best.h5", run_dir);
  if (!path_exists(path)) return 0;
  int64_t best_iteration;
  double best_value;
  int rc = checkpoint_read_best(path, name, sizeof name, &best_iteration, &best_value);
  if (rc == 0) {
    if (check_best_value(path, "root attribute best_value", "best_metric", name, best_value) != 0) return -1;
    if (isinf(best_value))
      log_warn("ppo-train: %s records best_value = inf (%s of iteration %lld): no later evaluation can replace it",
               path, name, (long long)best_iteration);
    char want[256], txt[PATH_CAP];
    best_record_text(want, sizeof want, name, best_iteration, best_value);
    snprintf(txt, sizeof txt, "%s/best.txt", run_dir);
    char have[256] = "";
    FILE *f = fopen(txt, "r");
    if (f) {
      size_t n = fread(have, 1, sizeof have - 1, f);
      have[n] = '\0';
      fclose(f);
    }
    if (strcmp(have, want) != 0 && write_best(run_dir, name, best_iteration, best_value) != 0)
      log_warn("ppo-train: %s (best.h5 itself holds the record)", error_message());
    if (strcmp(name, metric) == 0) *best = best_value;
    return 0;
  }
  if (rc < 0) {  // unreadable: the next evaluation replaces it
    log_warn("ppo-train: %s; the next evaluation replaces it", error_message());
    return 0;
  }
  snprintf(path, sizeof path, "%s/best.txt", run_dir);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  double value;
  long long iteration;
  int n = fscanf(f, "metric %63s iteration %lld value %lf", name, &iteration, &value);
  fclose(f);
  if (n != 3) return 0;
  if (check_best_value(path, "value", "metric", name, value) != 0) return -1;
  if (strcmp(name, metric) == 0) *best = value;
  return 0;
}

static int write_best(const char *run_dir, const char *metric, int64_t iteration, double value) {
  char path[PATH_CAP];
  snprintf(path, sizeof path, "%s/best.txt", run_dir);
  char text[256];
  best_record_text(text, sizeof text, metric, iteration, value);
  AtomicFile af;
  if (!atomic_file_open(&af, path)) return -1;
  fputs(text, af.stream);
  return atomic_file_commit(&af);
}

static bool last_link_warned;  // this run has said that checkpoints/last.h5 cannot be made (train_run clears it)

// eval_pending: this iteration's [eval] pass was abandoned by a stop (checkpoint_save_eval_pending).
static int save_checkpoint(Trainer *tr, const char *ckpt_dir, bool eval_pending, char *written, size_t capacity) {
  const TrainCounters *c = trainer_counters(tr);
  char path[PATH_CAP], link_tmp[PATH_CAP], link_path[PATH_CAP], target[64];
  snprintf(target, sizeof target, "ckpt_%06lld.h5", (long long)c->iterations);
  snprintf(path, sizeof path, "%s/%s", ckpt_dir, target);
  if ((eval_pending ? checkpoint_save_eval_pending(tr, path) : checkpoint_save(tr, path)) != 0) return -1;
  if (!dist_is_root()) return 0;  // rank 0 writes the files
  // checkpoints/last.h5 -> the newest, replaced atomically (a link under a temporary name + rename):
  // a symlink, or a hard link where the file system has no symlinks (CIFS, exFAT, some FUSE mounts).
  // Where neither can be made, last.h5 is removed rather than left naming an older checkpoint, and
  // train_run_latest_checkpoint finds the newest ckpt_NNNNNN.h5 itself; warned once per run.
  snprintf(link_tmp, sizeof link_tmp, "%s/.last.h5.tmp", ckpt_dir);
  snprintf(link_path, sizeof link_path, "%s/last.h5", ckpt_dir);
  (void)unlink(link_tmp);
  char why[256] = "";
  bool linked = symlink(target, link_tmp) == 0;
  if (!linked) {
    int symlink_errno = errno;
    linked = link(path, link_tmp) == 0;
    if (!linked) snprintf(why, sizeof why, "symlink: %s; hard link: %s", strerror(symlink_errno), strerror(errno));
  }
  if (linked && rename(link_tmp, link_path) != 0) {
    snprintf(why, sizeof why, "rename: %s", strerror(errno));
    linked = false;
    (void)unlink(link_tmp);
  }
  if (!linked) {  // its name in checkpoints/last.txt instead (written atomically; no link needed)
    (void)unlink(link_path);
    char name_path[PATH_CAP + 16], line[80];
    snprintf(name_path, sizeof name_path, "%s/last.txt", ckpt_dir);
    snprintf(line, sizeof line, "%s\n", target);
    int named = atomic_file_write_text(name_path, line);
    if (!last_link_warned)
      log_warn("%s: cannot point it at %s (%s): %s", link_path, target, why,
               named == 0 ? "checkpoints/last.txt names the newest checkpoint instead"
                          : "nor write checkpoints/last.txt; a resume takes the ckpt_NNNNNN.h5 written last");
    last_link_warned = true;
  }
  snprintf(written, capacity, "%s", path);
  return 0;
}

bool train_run_latest_checkpoint(const char *run_dir, char *path, size_t capacity) {
  char dir[PATH_CAP];
  if (snprintf(dir, sizeof dir, "%s/checkpoints", run_dir) >= (int)sizeof dir) return false;
  if (snprintf(path, capacity, "%s/last.h5", dir) < (int)capacity && path_exists(path)) return true;
  char name_path[PATH_CAP + 16], name[80];  // where links cannot be made: the name in last.txt
  snprintf(name_path, sizeof name_path, "%s/last.txt", dir);
  FILE *f = fopen(name_path, "r");
  if (f) {
    bool read = fgets(name, sizeof name, f) != NULL;
    fclose(f);
    long long it;
    name[read ? strcspn(name, "\n") : 0] = '\0';
    if (read && checkpoint_file_name(name, &it) && snprintf(path, capacity, "%s/%s", dir, name) < (int)capacity &&
        path_exists(path))
      return true;
  }
  // Else the one written last (what last.h5 would name): a run resumed from an earlier checkpoint
  // keeps the other timeline's later ones, so the highest iteration need not be the newest.
  DIR *d = opendir(dir);
  if (!d) return false;
  long long newest = -1;
  struct timespec newest_time = {0, 0};
  for (struct dirent *de; (de = readdir(d));) {
    long long it;
    char file[PATH_CAP + 300];
    struct stat st;
    if (!checkpoint_file_name(de->d_name, &it)) continue;
    snprintf(file, sizeof file, "%s/%s", dir, de->d_name);
    if (stat(file, &st) != 0) continue;
    bool later = st.st_mtim.tv_sec != newest_time.tv_sec     ? st.st_mtim.tv_sec > newest_time.tv_sec
                 : st.st_mtim.tv_nsec != newest_time.tv_nsec ? st.st_mtim.tv_nsec > newest_time.tv_nsec
                                                             : it > newest;
    if (newest < 0 || later) newest = it, newest_time = st.st_mtim;
  }
  closedir(d);
  return newest >= 0 && snprintf(path, capacity, "%s/ckpt_%06lld.h5", dir, newest) < (int)capacity;
}

// [eval] of the iteration the trainer has just finished. Every rank calls it: rank 0 evaluates (ev
// is NULL elsewhere), and writing best.h5 gathers every rank's envs. 1: evaluated (*er filled);
// 0: not (elsewhere than rank 0, or the pass failed: warned); -1: a stop abandoned the pass. *best
// becomes the new best when best.h5 is replaced.
static int evaluate_iteration(Trainer *tr, Evaluator *ev, bool root, const char *run_dir, int64_t iteration,
                              double *best, EvalResult *er) {
  int evaluated = 0, new_best = 0;
  double best_before = *best;
  if (ev) {
    int rc = evaluator_run(ev, tr, er);
    if (rc == 0) {
      evaluated = 1;
      if (er->metric > *best) *best = er->metric, new_best = 1;
    } else if (rc > 0) {  // a stop: the checkpoint comes first (the metrics row gets NaN), the pass after the resume
      // part of the stop's message: printed with --quiet too
      log_progress_end();  // an in-place progress line (a terminal) ends first
      fprintf(stderr, "ppo-train: evaluation of iteration %lld abandoned: a stop was requested\n",
              (long long)iteration);
      evaluated = -1;
    } else {
      log_write(LOG_LEVEL_WARN, "ppo-train: evaluation of iteration %lld failed: %s", (long long)iteration,
                error_message());
    }
  }
  dist_host_bcast(&new_best, sizeof new_best, 0);
  if (new_best) {
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/best.h5", run_dir);
    CheckpointBest record = {root ? evaluator_metric_name(ev) : "", iteration, *best};  // rank 0 writes it
    if (checkpoint_save_best(tr, path, &record) != 0) {
      log_write(LOG_LEVEL_WARN, "ppo-train: %s", error_message());
      *best = best_before;  // best.h5 still holds the earlier best: a later evaluation between the two replaces it
    } else if (root && write_best(run_dir, evaluator_metric_name(ev), iteration, *best) != 0) {
      log_write(LOG_LEVEL_WARN, "ppo-train: %s (best.h5 itself holds the record)", error_message());
    }
  }
  return evaluated;
}

static double rss_mib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return NAN;
  unsigned long long size = 0, resident = 0;
  int n = fscanf(f, "%llu %llu", &size, &resident);
  fclose(f);
  return n == 2 ? (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0) : NAN;
}

static double peak_rss_bytes(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_maxrss * 1024.0;
}

// --- the memory plan ---------------------------------------------------------------------------------

static void print_plan(const TrainerPlan *plan, FILE *out) {
  fprintf(out, "memory plan (%s)\n", plan->backend_description);
  fprintf(out, "  %-36s %14s  %s\n", "slab", "bytes", "where");
  for (int i = 0; i < plan->count; i++)
    fprintf(out, "  %-36s %14zu  %s\n", plan->name[i], plan->bytes[i],
            plan->device[i] ? (plan->device_is_host ? "backend (host)" : "device") : "host");
  fprintf(out, "  %-36s %14zu  (%.1f MiB)\n", "total backend memory", plan->device_total,
          (double)plan->device_total / 1048576.0);
  fprintf(out, "  %-36s %14zu  (%.1f MiB)\n", "total host memory", plan->host_total,
          (double)plan->host_total / 1048576.0);
  if (plan->have_free)
    fprintf(out, "  %-36s %14zu  (%.1f MiB)\n", plan->device_is_host ? "available host memory" : "free device memory",
            plan->free_bytes, (double)plan->free_bytes / 1048576.0);
}

// 0 when the plan fits [run] memory_limit and the free memory; else -1 and the message.
static int check_plan(const TrainerPlan *plan, const Config *cfg) {
  char where[512];
  size_t need = plan->device_total + plan->host_total;
  if (cfg->run.memory_limit > 0 && need > (size_t)cfg->run.memory_limit) {
    error_set(
        "%s: the run needs %zu bytes (%.1f MiB: backend %.1f, host %.1f) but the limit is %lld bytes; "
        "shrink n_steps, n_envs, batch_size or the networks, or raise the limit",
        config_describe_key(cfg, "run", "memory_limit", where, sizeof where), need, need / 1048576.0,
        plan->device_total / 1048576.0, plan->host_total / 1048576.0, (long long)cfg->run.memory_limit);
    return -1;
  }
  // The free memory was read with the envs and the market loaded: only the rest is still to come.
  size_t on_backend = plan->device_is_host ? need - plan->host_allocated : plan->device_total;
  if (plan->have_free && on_backend > plan->free_bytes) {
    error_set(
        "the run needs %zu more bytes (%.1f MiB) of %s but only %zu (%.1f MiB) are free; shrink n_steps, n_envs, "
        "batch_size or the networks",
        on_backend, on_backend / 1048576.0, plan->device_is_host ? "host memory" : "device memory", plan->free_bytes,
        plan->free_bytes / 1048576.0);
    return -1;
  }
  return 0;
}

// The metrics table (rank 0's, one row per logged iteration: metrics_log_rows) must fit the memory
// available: refused before the run directory is made, by every rank so that all refuse together.
// Its smallest size, a fresh run's, is checked (a resume keeps the earlier rows too, which its
// earlier run held).
static int check_metrics_table(const Trainer *tr, const Config *cfg) {
  int64_t rows = metrics_log_rows(trainer_total_iterations(tr), 0, cfg->run.log_every, cfg->eval.every);
  double bytes = metrics_log_bytes(rows);
  size_t available, total;
  if (host_memory_info(&available, &total) != 0 || bytes <= (double)available) return 0;
  char a[512], b[512], e[512], c[520] = "";
  if (cfg->eval.every > 0)  // an evaluated iteration is a row too
    snprintf(c, sizeof c, " and %s", config_describe_key(cfg, "eval", "every", e, sizeof e));
  error_set(
      "%s with %s%s: the metrics table of %lld rows would need %.1f GiB, more than the %.1f GiB of memory "
      "available; raise [run] log_every%s or lower total_timesteps",
      config_describe_key(cfg, "run", "total_timesteps", a, sizeof a),
      config_describe_key(cfg, "run", "log_every", b, sizeof b), c, (long long)rows, bytes / 1073741824.0,
      (double)available / 1073741824.0, cfg->eval.every > 0 ? " and [eval] every" : "");
  return -1;
}

// --- progress ----------------------------------------------------------------------------------------

static void format_duration(double s, char *out, size_t capacity) {
  if (!isfinite(s) || s < 0) {
    snprintf(out, capacity, "?");
    return;
  }
  long long t = (long long)(s + 0.5);
  if (t >= 3600)
    snprintf(out, capacity, "%lldh%02lldm", t / 3600, t / 60 % 60);
  else
    snprintf(out, capacity, "%lldm%02llds", t / 60, t % 60);
}

// An [eval] metric for the progress line: -inf stands for an undefined value (a flat or ruined
// pass, ppo/evaluate.c), and for "no best yet" as the best: said in words.
static const char *eval_value_text(double v, const char *undefined, char *buf, size_t capacity) {
  if (v == -INFINITY)
    snprintf(buf, capacity, "%s", undefined);
  else
    snprintf(buf, capacity, "%.4g", v);
  return buf;
}

// A NaN as printf shows it without a sign ("nan"; a NaN's sign means nothing, and glibc prints
// "-nan" for the ones arithmetic makes), for the progress line and the divergence messages.
static double shown(double v) { return isnan(v) ? (double)NAN : v; }

// The values of an iteration's line with their NaNs made plain (shown).
static TrainStats stats_shown(const TrainStats *s) {
  TrainStats t = *s;
  double *v[] = {&t.ep_rew_mean,   &t.policy_gradient_loss, &t.value_loss, &t.entropy_loss, &t.approx_kl,
                 &t.clip_fraction, &t.explained_variance,   &t.loss,       &t.grad_norm,    &t.loss_scale};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) *v[i] = shown(*v[i]);
  return t;
}

// eval_name: the [eval] metric, shown with its value and the best so far on an iteration that
// evaluated (x->eval set); NULL without [eval].
static void progress_line(char *out, size_t capacity, const TrainStats *stats, int64_t total_iterations, double eta,
                          const MetricsExtra *x, const char *eval_name, double best, bool new_best) {
  const TrainStats shown_stats = stats_shown(stats), *s = &shown_stats;
  char eta_text[32];
  format_duration(eta, eta_text, sizeof eta_text);
  int n = snprintf(
      out, capacity,
      "iter %lld/%lld steps %lld %.0f sps ETA %s | ep_rew %.4g (%d ep) | pg %.4f vf %.4g ent %.4f kl %.4f clip %.3f "
      "ev %.3f | scale %g skip %lld | roll %.2fs upd %.2fs | host %.0f MiB dev %.0f MiB",
      (long long)s->iteration, (long long)total_iterations, (long long)s->timesteps, s->fps, eta_text, s->ep_rew_mean,
      s->episodes, s->policy_gradient_loss, s->value_loss, s->entropy_loss, s->approx_kl, s->clip_fraction,
      s->explained_variance, s->loss_scale, (long long)s->skipped_steps, s->rollout_s, s->update_s, x->host_mib,
      x->dev_mib);
  char value[32], best_text[32];
  if (eval_name && x->eval && n > 0 && (size_t)n < capacity)
    snprintf(out + n, capacity - (size_t)n, " | val %s %s (%s %s)", eval_name,
             eval_value_text(x->eval_metric, "n/a", value, sizeof value), new_best ? "new best" : "best",
             eval_value_text(best, "none", best_text, sizeof best_text));
}

static void progress_bar(const TrainStats *stats, int64_t total_iterations, double eta) {
  const TrainStats shown_stats = stats_shown(stats), *s = &shown_stats;
  char eta_text[32], bar[31];
  format_duration(eta, eta_text, sizeof eta_text);
  int filled = total_iterations > 0 ? (int)(30 * s->iteration / total_iterations) : 0;
  for (int i = 0; i < 30; i++) bar[i] = i < filled ? '#' : '.';
  bar[30] = '\0';
  log_progress("[%s] %lld/%lld it  %lld steps  %.0f sps  ETA %s  ep_rew %.4g  kl %.4f  ev %.3f", bar,
               (long long)s->iteration, (long long)total_iterations, (long long)s->timesteps, s->fps, eta_text,
               s->ep_rew_mean, s->approx_kl, s->explained_variance);
}

// The market the envs run on (bars, features, splits, every "auto" key resolved): what the run
// will use, said before it starts (STYLE rule 14).
static void print_market(const Config *cfg, const EnvMarket *market, FILE *out) {
  if (!market) return;  // CartPole
  const MarketData *data = market->data;
  const TradingContext *ctx = &market->context;
  char first[32], last[32];
  fprintf(out, "market %s: %s, %lld bars %s .. %s, bar %lld s%s\n",
          cfg->env.type == CONFIG_ENV_TRADING ? cfg->env.data : "(synthetic)", data->symbol, (long long)data->rows,
          market_time_format(data->ts[0], first, sizeof first),
          market_time_format(data->ts[data->rows - 1], last, sizeof last), (long long)data->bar_seconds,
          data->has_bid_ask ? ", bid/ask" : "");
  for (int split = TRADING_SPLIT_TRAIN; split <= TRADING_SPLIT_TEST; split++) {
    int64_t lo = ctx->split_lo[split], hi = ctx->split_hi[split];
    if (hi <= lo) {  // an empty validation or test split (env_market_open warned)
      fprintf(out, "%-5s split: 0 bars\n", trading_split_name((TradingSplit)split));
      continue;
    }
    fprintf(out, "%-5s split: %lld bars %s .. %s\n", trading_split_name((TradingSplit)split), (long long)(hi - lo),
            market_time_format(data->ts[lo], first, sizeof first),
            market_time_format(data->ts[hi - 1], last, sizeof last));
  }
  if (ctx->action_count > 0)
    fprintf(out, "observation %d floats (window %d), %d actions\n", ctx->obs_dim, ctx->window, ctx->action_count);
  else  // continuous: one number, the target weight
    fprintf(out, "observation %d floats (window %d), a continuous action (the target weight)\n", ctx->obs_dim,
            ctx->window);
  // The "auto" keys as this market resolved them (--print-config shows them as auto).
  const TradingParams *p = &ctx->params;
  char spread[64];
  if (p->use_data_spread)
    snprintf(spread, sizeof spread, "the data's bid/ask");
  else
    snprintf(spread, sizeof spread, "half %g bp", p->half_spread_bps);
  fprintf(out,
          "costs x%g: spread %s, commission %g bp, slippage %g bp (+ %g x bar vol, random up to %g bp), fee %g, "
          "financing %g / %g APR long / short\n",
          p->cost_mult, spread, p->commission_bps, p->slippage_bps, p->slippage_vol_k, p->slippage_random_max_bps,
          p->fee_fixed, p->financing_long_apr, p->financing_short_apr);
  env_market_print_generic_costs(market, out, "note: ");
  fprintf(out, "episodes of %lld bars after %lld warm-up bars, reward x %g\n", (long long)ctx->episode_length,
          (long long)p->warmup, p->reward_scale);
}

// --- configuration -----------------------------------------------------------------------------------

// Is dir the run directory the checkpoint at ckpt belongs to (checkpoint_run_dir), after links?
static bool same_directory(const char *dir, const char *ckpt) {
  char own[PATH_CAP], a[PATH_MAX], b[PATH_MAX];
  checkpoint_run_dir(ckpt, own, sizeof own);
  return realpath(dir, a) && realpath(own, b) && strcmp(a, b) == 0;
}

static int compare_descending(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x < y) - (x > y);
}

// A checkpoint that cannot be read (damaged, cut short): the message goes on with the run's other
// checkpoints beside it, the three highest iterations first, to resume from instead. Nothing when
// there are none.
static void add_other_checkpoints(const char *resume) {
  char dir[PATH_CAP], own[PATH_MAX] = "", *slash;
  snprintf(dir, sizeof dir, "%s", resume);
  slash = strrchr(dir, '/');
  if (slash)
    *slash = '\0';
  else
    snprintf(dir, sizeof dir, ".");
  char real[PATH_MAX];  // last.h5 names a checkpoint: that one is the damaged one
  if (realpath(resume, real)) snprintf(own, sizeof own, "%s", strrchr(real, '/') ? strrchr(real, '/') + 1 : real);
  long long own_iteration = -1;
  if (!checkpoint_file_name(own, &own_iteration)) own_iteration = -1;
  size_t count;
  int64_t *its = list_checkpoints(dir, INT64_MAX, &count);
  qsort(its, count, sizeof *its, compare_descending);
  char names[200] = "";
  int64_t newest = -1;
  for (size_t i = 0, shown = 0; i < count && shown < 3; i++) {
    if (its[i] == own_iteration) continue;
    size_t used = strlen(names);
    snprintf(names + used, sizeof names - used, "%sckpt_%06lld.h5", shown++ ? ", " : "", (long long)its[i]);
    if (newest < 0) newest = its[i];
  }
  free(its);
  if (newest < 0) return;
  char message[ERROR_MESSAGE_MAX];
  snprintf(message, sizeof message, "%s", error_message());
  error_set("%s; the run's other checkpoints in %s: %s (--resume %s/ckpt_%06lld.h5 goes on from the newest of them)",
            message, dir, names, dir, (long long)newest);
}

// *stored: a resume's checkpoint configuration, as it was written. *moved (optional): a resume whose
// [run] run_dir or name differ from the checkpoint's, so that it writes to the new run_dir/name
// instead of the checkpoint's own run directory. 0; CHECKPOINT_UNREADABLE when the checkpoint file
// cannot be read; -1 for a configuration refused (the message, FILE:LINE first, says which).
static int resolve_config(const TrainRunOptions *opt, Config *cfg, Config *stored, bool *moved) {
  if (moved) *moved = false;
  if (!opt->resume) return config_load(cfg, opt->config_path, opt->n_overrides, opt->overrides);
  // Without a file: the checkpoint's own configuration, with --set applied on top.
  Config *own = opt->config_path ? NULL : cfg;
  int read = checkpoint_read_config(opt->resume, stored, own, opt->n_overrides, opt->overrides);
  if (read != 0) {
    if (read == CHECKPOINT_UNREADABLE && path_exists(opt->resume)) add_other_checkpoints(opt->resume);
    return read;
  }
  if (opt->config_path && config_load(cfg, opt->config_path, opt->n_overrides, opt->overrides) != 0) return -1;
  static Config file;  // the file alone, for the refusal's remedy (a key --set that the file changes too)
  if (opt->config_path && config_load_quietly(&file, opt->config_path) != 0) return -1;  // warned of above
  if (checkpoint_check_compatible(stored, cfg, opt->config_path ? &file : NULL, opt->resume) != 0) return -1;
  if (moved)
    *moved = strcmp(stored->run.run_dir, cfg->run.run_dir) != 0 || strcmp(stored->run.name, cfg->run.name) != 0;
  // A total below the steps already taken would end the run at once and cut the metrics to it. A run
  // takes whole iterations: one that has reached its total may have passed it (it is then done).
  int64_t taken;
  if (checkpoint_read_timesteps(opt->resume, &taken) != 0) return -1;
  int64_t per_iteration = cfg->ppo.n_steps * cfg->env.n_envs * dist_size();
  int64_t reached = (cfg->run.total_timesteps + per_iteration - 1) / per_iteration * per_iteration;
  if (reached < taken) {
    char where[512];
    config_describe_key(cfg, "run", "total_timesteps", where, sizeof where);
    error_set(
        "%s: below the %lld steps the checkpoint %s has taken (whole iterations of %lld steps: %lld; a resumed run "
        "continues to a larger total)",
        where, (long long)taken, opt->resume, (long long)per_iteration, (long long)reached);
    return -1;
  }
  return 0;
}

int train_run_resolve_config(const TrainRunOptions *opt, Config *cfg) {
  static Config stored;
  return resolve_config(opt, cfg, &stored, NULL);
}

// Data-parallel ranks train one model: every key that shapes training must have the same value on
// every rank (an MPMD launch can give each its own --set). Per-process keys may differ.
#define KEY_TEXT 1024  // per key: the longest value text compared (paths)
// *differing: on a rank whose keys differ from rank 0's, the first three, "[ppo] gamma = 0.5
// (rank 0: 0.99)"; "" on rank 0 and where they agree.
static bool same_config_on_every_rank(const Config *cfg, char *differing, size_t capacity) {
  differing[0] = '\0';
  if (dist_size() == 1) return true;
  static const char *const per_process[] = {"threads", "name", "run_dir", "log_every", "memory_limit"};
  int count;
  const ConfigKey *keys = config_schema(&count);
  char *text = calloc((size_t)count, KEY_TEXT);
  CHECK(text, "out of host memory (configuration check)");
  for (int i = 0; i < count; i++) {
    bool skip = false;
    for (size_t k = 0; k < sizeof per_process / sizeof *per_process; k++)
      skip |= strcmp(keys[i].section, "run") == 0 && strcmp(keys[i].key, per_process[k]) == 0;
    if (!skip) config_value_text(cfg, i, text + (size_t)i * KEY_TEXT, KEY_TEXT);
  }
  bool same = dist_check_identical(text, (size_t)count * KEY_TEXT);
  if (!same) {  // rank 0's texts to every rank, which names its own differing keys
    char *root_text = malloc((size_t)count * KEY_TEXT);
    CHECK(root_text, "out of host memory (configuration check)");
    memcpy(root_text, text, (size_t)count * KEY_TEXT);
    dist_host_bcast(root_text, (size_t)count * KEY_TEXT, 0);
    for (int i = 0, told = 0; i < count && told < 3; i++) {
      const char *mine = text + (size_t)i * KEY_TEXT, *theirs = root_text + (size_t)i * KEY_TEXT;
      if (strcmp(mine, theirs) == 0) continue;
      size_t used = strlen(differing);
      snprintf(differing + used, capacity - used, "%s[%s] %s = %.200s (rank 0: %.200s)", told++ ? "; " : "",
               keys[i].section, keys[i].key, mine, theirs);
    }
    free(root_text);
  }
  free(text);
  return same;
}

// Every rank loads [env] data itself (or generates the synthetic market): a relative path read from
// another directory, or a node-local copy that differs, gave the ranks different bars, and they
// trained on them without a word (the replica check compares networks, not markets). Rank 0's
// rows, first and last bar and market_data_hash go to every rank; a rank whose own differ names
// both. True on every rank when they agree (CartPole: no market).
static bool same_market_on_every_rank(const Config *cfg, const EnvMarket *market, char *differing, size_t capacity) {
  differing[0] = '\0';
  if (dist_size() == 1 || !market) return true;
  const MarketData *d = market->data;
  int64_t own[4] = {d->rows, d->ts[0], d->ts[d->rows - 1], (int64_t)market_data_hash(d)}, root[4];
  memcpy(root, own, sizeof root);
  dist_host_bcast(root, sizeof root, 0);
  bool mine = memcmp(own, root, sizeof own) == 0;
  if (dist_host_allreduce_max_int(!mine) == 0) return true;
  if (!mine) {
    char where[520], a[32], b[32], c[32], e[32];
    snprintf(differing, capacity,
             "this rank's %s gave %lld bars %s .. %s (hash %016llx), rank 0's %lld bars %s .. %s (hash %016llx)",
             cfg->env.type == CONFIG_ENV_TRADING ? config_describe_key(cfg, "env", "data", where, sizeof where)
                                                 : "[env] synthetic_* keys",
             (long long)own[0], market_time_format(own[1], a, sizeof a), market_time_format(own[2], b, sizeof b),
             (unsigned long long)own[3], (long long)root[0], market_time_format(root[1], c, sizeof c),
             market_time_format(root[2], e, sizeof e), (unsigned long long)root[3]);
  }
  return false;
}

// --- the run -------------------------------------------------------------------------------------------

// One ppo-train per run directory at a time: two would interleave their metrics rows and
// checkpoints, and the second, finding no checkpoint yet, would start the first's run again over
// it. RUN/.lock carries an exclusive flock(2) for the life of the run (the kernel drops it however
// the process ends: a killed run leaves nothing to clean up) and the holder's pid, for the message.
// *fd stays -1 while run_dir does not exist yet (nothing in it to protect; it is locked once made).
// The message for a lock file f (at path) that another process holds; closes f.
static void lock_held_message(const char *run_dir, const char *path, int f) {
  char text[24] = "";
  ssize_t n = pread(f, text, sizeof text - 1, 0);
  text[n > 0 ? n : 0] = '\0';
  long pid = strtol(text, NULL, 10);  // 0 when the holder has not written it yet
  close(f);
  char holder[48] = "";
  if (pid > 0) snprintf(holder, sizeof holder, " (pid %ld)", pid);
  error_set(
      "run directory %s is in use by another ppo-train%s, which holds %s: wait for it to end or stop it "
      "(SIGTERM writes a checkpoint), or choose another [run] name (--set run.name=...) or --run-dir",
      run_dir, holder, path);
}

static int lock_run_dir(const char *run_dir, int *fd) {
  char path[PATH_CAP];
  snprintf(path, sizeof path, "%s/.lock", run_dir);
  int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (f < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return EXIT_OK;  // not made yet (make_directories says why it cannot be)
    error_set("%s: cannot create the run directory's lock file: %s", path, strerror(errno));
    return EXIT_BAD_INPUT;
  }
  if (flock(f, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err == EWOULDBLOCK) {
      lock_held_message(run_dir, path, f);
      return EXIT_BAD_INPUT;
    }
    // A file system without locks (some network mounts): the run goes on, unprotected.
    log_warn("%s: cannot lock it (%s): nothing stops a second ppo-train from writing into this run directory", path,
             strerror(err));
  } else if (ftruncate(f, 0) != 0 || dprintf(f, "%ld\n", (long)getpid()) < 0) {
    log_warn("%s: cannot write this process's pid into it: %s", path, strerror(errno));
  }
  *fd = f;
  return EXIT_OK;
}

int train_run_check_not_in_use(const char *run_dir) {
  char path[PATH_CAP];
  if (snprintf(path, sizeof path, "%s/.lock", run_dir) >= (int)sizeof path) return 0;
  int f = open(path, O_RDONLY | O_CLOEXEC);  // none: no run has locked it
  if (f < 0) return 0;
  if (flock(f, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    lock_held_message(run_dir, path, f);
    return -1;
  }
  close(f);  // the shared lock, if taken, goes with it
  return 0;
}

// Removes the temporary files of writers that died in dir (SIGKILL, out of memory or a lost
// instance in the middle of a write: .NAME.tmp.PID of common/atomic_file.c, from checkpoints,
// best.h5, metrics.csv and .h5, config.ini, best.txt). Called with the run directory locked, so no
// other ppo-train writes there; a file whose pid is alive is left all the same (a directory used on
// a file system without locks), except this process's own: it has written nothing there yet, so
// such a file is an earlier process's that had the same pid (a container's PID 1, run after run).
static void remove_dead_writers_files(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  for (struct dirent *de; (de = readdir(d));) {
    const char *name = de->d_name, *tmp = NULL;
    for (const char *p = name; (p = strstr(p, ".tmp.")); p++) tmp = p;  // the last ".tmp."
    if (name[0] != '.' || !tmp || tmp == name) continue;
    char *end;
    long pid = strtol(tmp + 5, &end, 10);
    if (*end != '\0' || end == tmp + 5 || pid <= 0) continue;
    if (pid != (long)getpid() && (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) continue;
    char path[PATH_CAP];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path && unlink(path) == 0)
      log_info("removed %s, left by a writer (pid %ld) that did not finish", path, pid);
  }
  closedir(d);
}

// Does run_dir/checkpoints hold a checkpoint (ckpt_*.h5 or last.h5, dangling or not)? Looser than
// checkpoint_file_name on purpose: it guards another run's files against a fresh start over them,
// so a renamed checkpoint (ckpt_old.h5) still counts.
static bool holds_checkpoint(const char *run_dir) {
  char dir[PATH_CAP + 16];
  snprintf(dir, sizeof dir, "%s/checkpoints", run_dir);
  DIR *d = opendir(dir);
  if (!d) return false;
  bool found = false;
  for (struct dirent *de; !found && (de = readdir(d));) {
    size_t len = strlen(de->d_name);
    found = strcmp(de->d_name, "last.h5") == 0 ||
            (strncmp(de->d_name, "ckpt_", 5) == 0 && len > 8 && strcmp(de->d_name + len - 3, ".h5") == 0);
  }
  closedir(d);
  return found;
}

int train_run_check_outputs(const char *run_dir) {
  static const struct {
    const char *name, *what;
  } outputs[] = {
      {"config.ini", "the run's configuration"},
      {"train.log", "the run's progress log"},
      {"metrics.csv", "the run's metrics table"},
      {"metrics.h5", "the run's metrics table (HDF5)"},
      {"best.h5", "the best evaluated checkpoint"},
      {"best.txt", "the best evaluation's record"},
      {"checkpoints/last.h5", "the link to the newest checkpoint"},
      {"checkpoints/last.txt", "the newest checkpoint's name"},
  };
  char path[PATH_CAP + 300];
  for (size_t k = 0; k < sizeof outputs / sizeof outputs[0]; k++) {
    snprintf(path, sizeof path, "%s/%s", run_dir, outputs[k].name);
    if (file_check_output(path, outputs[k].what) != 0) return -1;
  }
  // The checkpoints a run writes, ckpt_NNNNNN.h5, are named by iteration: any of them there.
  char dir[PATH_CAP];
  snprintf(dir, sizeof dir, "%s/checkpoints", run_dir);
  DIR *d = opendir(dir);
  if (!d) return 0;
  int rc = 0;
  for (struct dirent *de; rc == 0 && (de = readdir(d));) {
    long long it;
    if (!checkpoint_file_name(de->d_name, &it)) continue;
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    rc = file_check_output(path, "a checkpoint");
  }
  closedir(d);
  return rc;
}

// The run directory (at most RUN_DIR_MAX characters, so that every file's path under it fits
// PATH_CAP), refused before anything is loaded when it cannot serve: too long, or holding another
// run (one with a checkpoint: a run killed before its first is started again).
// *existed: whether the directory was there (a new one is made and locked only after the slabs).
static int choose_run_dir(const TrainRunOptions *opt, const Config *cfg, bool moved, bool root, char *run_dir,
                          size_t capacity, int *lock_fd, bool *existed) {
  char path[PATH_CAP];
  if (opt->run_dir)
    snprintf(run_dir, capacity, "%s", opt->run_dir);
  else if (opt->resume && !moved)  // the checkpoint's own run, continued where it is
    checkpoint_run_dir(opt->resume, run_dir, capacity);
  else
    snprintf(run_dir, capacity, "%s/%s", cfg->run.run_dir, cfg->run.name);
  if (strlen(run_dir) > RUN_DIR_MAX) {
    fprintf(stderr, "ppo-train: run directory %.60s...: longer than %d characters (%s)\n", run_dir, RUN_DIR_MAX,
            opt->run_dir            ? "--run-dir"
            : opt->resume && !moved ? "the checkpoint's directory"
                                    : "[run] run_dir and name");
    return EXIT_BAD_INPUT;
  }
  *existed = path_exists(run_dir);
  snprintf(path, sizeof path, "%s/folds.csv", run_dir);  // a walk-forward's: this run would mix with its folds
  if (root && path_exists(path)) {
    fprintf(stderr,
            "ppo-train: run directory %s holds a walk-forward (folds.csv); run the walk-forward again with "
            "--walk-forward, or choose another [run] name (--set run.name=...) or --run-dir\n",
            run_dir);
    return EXIT_BAD_INPUT;
  }
  if (root) {  // before anything in it is read: another run may be writing it
    int status = lock_run_dir(run_dir, lock_fd);
    if (status != EXIT_OK) {
      fprintf(stderr, "ppo-train: %s\n", error_message());
      return status;
    }
  }
  // A directory (or a FIFO, ...) where a file of the run goes failed at its first write, after the
  // market, the slabs and (for best.h5 and the checkpoints) the training: refused before any of them.
  if (root && train_run_check_outputs(run_dir) != 0) {
    fprintf(stderr, "ppo-train: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  snprintf(path, sizeof path, "%s/metrics.csv", run_dir);
  char best[PATH_CAP + 16];
  snprintf(best, sizeof best, "%s/best.h5", run_dir);
  const bool has_metrics = path_exists(path), has_best = path_exists(best), has_checkpoint = holds_checkpoint(run_dir);
  // A fresh start in a directory that holds a run's checkpoints, or a best.h5 without the metrics
  // of a run that made it (checkpoints and best.h5 copied back from storage), would overwrite them.
  if (root && !opt->resume && (has_checkpoint || (has_best && !has_metrics))) {
    char last[PATH_CAP + 32];
    if (!train_run_latest_checkpoint(run_dir, last, sizeof last))
      snprintf(last, sizeof last, "%s/checkpoints/last.h5", run_dir);
    if (has_checkpoint)
      error_set(
          "run directory %s already holds a run (%s); resume it with --resume %s, or choose another [run] name "
          "(--set run.name=...) or --run-dir",
          run_dir, has_metrics ? "metrics.csv" : "its checkpoints", last);
    else
      error_set(
          "run directory %s holds best.h5 of an earlier run, which a new run's evaluations would replace; move it "
          "away, or choose another [run] name (--set run.name=...) or --run-dir",
          run_dir);
    fprintf(stderr, "ppo-train: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  if (root && !opt->resume && has_metrics) {
    // Killed before its first checkpoint (SIGKILL, out of memory, a lost instance): nothing to
    // resume, and the same configuration retraces the same iterations. Start it again.
    log_warn(
        "run directory %s holds a run that ended before its first checkpoint (no checkpoints/last.h5): starting "
        "it again from the beginning",
        run_dir);
  }
  if (root && opt->resume && path_exists(path) && !same_directory(run_dir, opt->resume)) {
    error_set(
        "%s %s already holds a run (metrics.csv) other than the checkpoint's: resume into the checkpoint's "
        "own run directory or into a new one",
        opt->run_dir ? "--run-dir" : "[run] run_dir/name", run_dir);
    fprintf(stderr, "ppo-train: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  return EXIT_OK;
}

// --- the run, phase by phase ------------------------------------------------------------------------

// One run from its start to its end: what the phases share, and what run_close releases however
// the run ends.
#define CPU_WAIT_WINDOW_S 2.0     // warn_cpu_wait's judgements cover at least this much wall time
#define CPU_WAIT_WARN_SHARE 0.15  // and warn from this share of the threads' time spent waiting,
#define CPU_WAIT_WARN_WINDOWS 2   // over this many windows in a row (not for one burst of other work)
typedef struct {
  TrainRunOptions opt;  // the caller's, quiet on every rank but rank 0
  bool root;            // rank 0 (ppo/dist.h): it alone prints progress and writes the run directory
  Config cfg;
  Config stored;  // a resume's checkpoint configuration, as the run that wrote it had it
  char run_dir[RUN_DIR_MAX + 2], ckpt_dir[PATH_CAP];
  Trainer *tr;
  Evaluator *ev;  // NULL without [eval] and on the other ranks
  MetricsLog metrics;
  bool metrics_open;
  FILE *train_log;
  int64_t total_iterations, start_iteration;
  // The loop's state (run_begin_loop).
  bool tty;                              // a progress bar rather than lines
  double t_start, dev_mib;               // the loop's start; the plan's backend bytes, for the progress lines
  int64_t timesteps_at_start;            // SB3's _num_timesteps_at_start
  double best;                           // the [eval] metric best.h5 holds
  int64_t done_here;                     // iterations of this invocation
  int64_t saved_at;                      // the iteration of the last checkpoint written here (-1: none)
  int64_t eval_pending;                  // the iteration whose [eval] pass a stop abandoned (-1: none)
  bool pending_ran;                      // a resume's abandoned pass ran now
  bool pending_settled;                  // ... and rewrote the metrics (every rank knows: run_begin_loop)
  bool complete;                         // a resume with nothing to do (resume_is_complete)
  int64_t resume_eval_pending;           // the checkpoint's abandoned [eval] pass's iteration (-1: none)
  bool interrupted;                      // a stop request ended the loop
  bool fork_unsaved;                     // resumed from other than the directory's newest: run_after_iteration
  int64_t fail_after, stop_before_eval;  // fault injection for the tests (-1: off)
  CpuWaitWindow cpu_wait;                // the OpenMP threads waiting for a CPU (warn_cpu_wait)
  int cpu_wait_tids[CPU_WAIT_MAX_THREADS], cpu_wait_n;
  int cpu_wait_hot;   // windows in a row over CPU_WAIT_WARN_SHARE (-1: warned)
  double cpu_other0;  // the process's other threads' CPU seconds at the window's start
} Run;

static void run_close(Run *r) {
  if (r->train_log) fclose(r->train_log);
  if (r->metrics_open) metrics_log_close(&r->metrics);
  evaluator_free(r->ev);
  trainer_free(r->tr);
}

// The resume of a finished run: what it is and how to train on.
static void say_nothing_to_train(const Run *r) {
  fprintf(stderr,
          "ppo-train: nothing to train: the run is complete (%lld steps, [run] total_timesteps = %lld); resume with "
          "--set run.total_timesteps=N to train on\n",
          (long long)trainer_counters(r->tr)->timesteps, (long long)r->cfg.run.total_timesteps);
}

// A --resume (not a walk-forward's fold) of a run that has trained all its iterations and has no
// [eval] pass left that a stop abandoned: the same on every rank (resume_eval_pending is rank 0's).
static bool resume_is_complete(const Run *r) {
  const TrainRunOptions *opt = &r->opt;
  if (!opt->resume || opt->in_walk_forward || r->start_iteration < r->total_iterations) return false;
  return r->resume_eval_pending != r->start_iteration;
}

// The configuration, the run directory (chosen before the market loads, locked once it exists),
// the market, envs and backend, the memory plan (printed; --plan ends here), the slabs, the
// --resume checkpoint read into them, and the replicas checked alike. An exit status (the message
// said).
static int run_prepare(Run *r, TrainRunResult *result, int *lock_fd) {
  const TrainRunOptions *opt = &r->opt;
  const bool root = r->root;
  bool moved;
  int resolved = resolve_config(opt, &r->cfg, &r->stored, &moved);
  if (resolved != 0) {
    // A configuration's errors are "FILE:LINE: ..." lines, as a compiler prints them; one about the
    // checkpoint file itself (cut short, damaged) gets the program's prefix, as the others do.
    fprintf(stderr, "%s%s\n", resolved == CHECKPOINT_UNREADABLE ? "ppo-train: --resume: " : "", error_message());
    return EXIT_BAD_INPUT;
  }
  const Config *cfg = &r->cfg;
  char differing[1400];
  if (!same_config_on_every_rank(cfg, differing, sizeof differing)) {
    fprintf(stderr,
            "ppo-train (rank %d): the ranks resolved different configurations (another file or --set on some rank); "
            "every key but [run] threads, name, run_dir, log_every and memory_limit must be the same on every "
            "rank%s%s\n",
            dist_rank(), differing[0] ? ": this rank has " : "", differing);
    return EXIT_BAD_INPUT;
  }
  bool dir_existed = true;
  if (!opt->plan_only) {  // an unusable run directory is said before the market loads
    int status = choose_run_dir(opt, cfg, moved, root, r->run_dir, sizeof r->run_dir, lock_fd, &dir_existed);
    if (status != EXIT_OK) return status;
  }
  if (!opt->quiet) config_write_ini(cfg, stderr);  // STYLE rule 14: say what the run uses
  if (!opt->quiet && dist_size() > 1) fprintf(stderr, "data-parallel: %s\n", dist_describe());

  // Market, envs and backend first; the slabs only once the plan is known to fit.
  Trainer *tr = r->tr = trainer_open(cfg);
  if (!tr) {
    fprintf(stderr, "ppo-train: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  if (!same_market_on_every_rank(cfg, trainer_market(tr), differing, sizeof differing)) {
    fprintf(stderr,
            "ppo-train (rank %d): the ranks loaded different market data; every rank must read the same bars (one "
            "file on a file system all ranks see, or identical copies; a relative path is read from each rank's "
            "current directory)%s%s\n",
            dist_rank(), differing[0] ? ": " : "", differing);
    return EXIT_BAD_INPUT;
  }
  if (!opt->quiet) print_market(cfg, trainer_market(tr), stderr);
  // The evaluation pass's memory (rank 0 evaluates) is made before the first step, so it is planned.
  // An [eval] that cannot run (CartPole; a split without bars) is bad input, on every rank alike: it
  // was once a warning, and a run asked for best.h5 ended without one.
  size_t eval_host = 0, eval_backend = 0;
  if (cfg->eval.every > 0) {
    if (evaluator_plan(tr, &eval_host, &eval_backend) != 0) {
      char where[520];
      fprintf(stderr, "ppo-train: %s: %s; or set [eval] every = 0\n",
              config_describe_key(cfg, "eval", "every", where, sizeof where), error_message());
      return EXIT_BAD_INPUT;
    }
    if (root) {
      trainer_plan_add(tr, "evaluation pass (records)", eval_host, false);
      trainer_plan_add(tr, "evaluation pass (observations)", eval_backend, true);
    }
  }
  const TrainerPlan *plan = trainer_memory_plan(tr);
  if (opt->plan_only && root)
    print_plan(plan, stdout);
  else if (!opt->quiet)
    print_plan(plan, stderr);
  if (check_plan(plan, cfg) != 0 || check_metrics_table(tr, cfg) != 0) {
    fprintf(stderr, "ppo-train: refusing to start: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  if (opt->plan_only) {
    // The plan is what --plan was asked for: one that could not be written (stdout on a full disk)
    // is a failure, where a reader that went away (`--plan | head`) is not, as for --print-config.
    if (root && fflush(stdout) != 0 && errno != EPIPE) {
      fprintf(stderr, "ppo-train: cannot write the memory plan: %s\n", strerror(errno));
      return EXIT_RUNTIME;
    }
    return EXIT_OK;
  }

  // The slabs, and the checkpoint read into them, before the run directory is made or locked: a
  // refused --resume (a damaged or mismatched checkpoint) leaves no directory behind.
  if (trainer_allocate(tr) != 0) {
    fprintf(stderr, "ppo-train: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  if (opt->resume && checkpoint_load(tr, opt->resume) != 0) {
    if (error_is_damage()) add_other_checkpoints(opt->resume);  // damaged, not a misfit
    fprintf(stderr, "ppo-train: --resume: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  // The same init seed gives every rank the same networks, and a resume reads the same file: check
  // it before the first step, and after every iteration (run_loop).
  if (!trainer_replicas_agree(tr)) {
    if (opt->resume) {  // each rank reads its own --resume: one file, or a copy of it on each node
      fprintf(stderr,
              "ppo-train: the ranks resumed into different parameters or normalisation statistics: every rank's "
              "--resume must name the same checkpoint (or an identical copy of it); this rank's is %s\n",
              opt->resume);
      return EXIT_BAD_INPUT;
    }
    fprintf(stderr,
            "ppo-train: the ranks start from different parameters or normalisation statistics (a different "
            "build or BLAS per rank?)\n");
    return EXIT_RUNTIME;
  }
  r->total_iterations = trainer_total_iterations(tr);
  r->start_iteration = trainer_counters(tr)->iterations;
  // The checkpoint's abandoned [eval] pass, read once, by rank 0 (which evaluates), for every rank.
  r->resume_eval_pending = opt->resume && root && cfg->eval.every > 0 ? checkpoint_read_eval_pending(opt->resume) : -1;
  if (opt->resume) dist_host_bcast(&r->resume_eval_pending, sizeof r->resume_eval_pending, 0);
  // A resume with nothing to do changes nothing: decided before the run directory is made (a new
  // --run-dir was left holding .lock and checkpoints/).
  if ((r->complete = resume_is_complete(r))) return EXIT_OK;
  // Every rank has passed its checks (the replica check above is a collective: a rank that refused
  // returned before it, and its exit ends the others, MPI_Abort) before rank 0 makes the run
  // directory, so a refusal on any rank leaves nothing behind (rank 0 made the directory and its
  // lock while rank 1 refused its memory limit or its --resume).
  snprintf(result->run_dir, sizeof result->run_dir, "%s", r->run_dir);
  snprintf(r->ckpt_dir, sizeof r->ckpt_dir, "%s/checkpoints", r->run_dir);
  if (root && make_directories(r->ckpt_dir) != 0) {  // the directory given is unusable: bad input
    fprintf(stderr, "ppo-train: %s (%s)\n", error_message(),
            opt->run_dir  ? "--run-dir"
            : opt->resume ? "the checkpoint's run directory"
                          : "[run] run_dir and name");
    return EXIT_BAD_INPUT;
  }
  if (root) {
    int status = *lock_fd < 0 ? lock_run_dir(r->run_dir, lock_fd) : EXIT_OK;  // made just now
    if (status != EXIT_OK) {
      fprintf(stderr, "ppo-train: %s\n", error_message());
      return status;
    }
    // Absent when chosen, and now holding a run: another ppo-train started there in between (it
    // made the directory first, ran and let go of the lock).
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/metrics.csv", r->run_dir);
    if (!dir_existed && path_exists(path)) {
      fprintf(stderr,
              "ppo-train: run directory %s was started by another ppo-train while this one was starting; choose "
              "another [run] name (--set run.name=...) or --run-dir\n",
              r->run_dir);
      return EXIT_BAD_INPUT;
    }
    remove_dead_writers_files(r->run_dir);
    remove_dead_writers_files(r->ckpt_dir);
  }
  // A resume from a checkpoint other than the one a resume of the directory takes (an earlier one,
  // best.h5, another directory's) starts a timeline of its own (run_after_iteration).
  if (opt->resume) {
    int fork = 0;
    if (root) {
      char latest[PATH_CAP];  // the same file: last.h5 is a symlink or, without symlinks, a hard link
      struct stat a, b;
      fork = !train_run_latest_checkpoint(r->run_dir, latest, sizeof latest) || stat(latest, &a) != 0 ||
             stat(opt->resume, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino;
    }
    dist_host_bcast(&fork, sizeof fork, 0);
    r->fork_unsaved = fork != 0;
  }
  return EXIT_OK;
}

// A resumed metrics.csv whose rows stop short of the checkpoint's iteration: the last iteration
// that logged a row (a multiple of log_every or of eval.every) is missing. A resume from an earlier
// checkpoint dropped the rows after it, and a resume from a checkpoint of the timeline it left
// cannot bring them back; or the file was cut (a torn last line is dropped). Said, not refused:
// the checkpoint is whole, and the run logs on from it. A table without rows and without a file
// is a resume into a new directory, whose rows start at the checkpoint; a metrics.csv without rows
// (cut in or after its header) lacks them all.
static void warn_missing_rows(Run *r) {
  const int64_t at = r->start_iteration, found = metrics_log_last_iteration(&r->metrics);
  if (found < 0 && !r->metrics.resumed_csv) return;
  const int64_t last = found < 0 ? 0 : found;
  if (last >= at) return;
  // The rows due are those of the run that wrote them: the checkpoint's log_every and eval.every (a
  // resume may change both).
  const Config *stored = &r->stored;
  int64_t due = at / stored->run.log_every * stored->run.log_every;
  if (stored->eval.every > 0 && at / stored->eval.every * stored->eval.every > due)
    due = at / stored->eval.every * stored->eval.every;
  if (last >= due) return;
  char missing[96];
  if (last + 1 == at)
    snprintf(missing, sizeof missing, "iteration %lld has no row", (long long)at);
  else
    snprintf(missing, sizeof missing, "iterations %lld..%lld have no rows", (long long)(last + 1), (long long)at);
  char rows[64];
  if (found < 0)
    snprintf(rows, sizeof rows, "it has no rows");
  else
    snprintf(rows, sizeof rows, "its rows end at iteration %lld", (long long)last);
  log_warn(
      "%s/metrics.csv: %s, the checkpoint is of iteration %lld: %s (a resume from an earlier checkpoint "
      "dropped them, or the file was cut); the run logs on from iteration %lld",
      r->run_dir, rows, (long long)at, missing, (long long)(at + 1));
}

// The evaluator, the metrics files (an earlier metrics.csv that does not fit is bad input, before
// any step), config.ini and train.log. An exit status.
static int run_open_outputs(Run *r) {
  const TrainRunOptions *opt = &r->opt;
  if (r->root && r->cfg.eval.every > 0 && !(r->ev = evaluator_init(r->tr))) {  // its split was checked
    fprintf(stderr, "ppo-train: [eval]: %s\n", error_message());
    return EXIT_RUNTIME;
  }
  // The best a resumed run must beat, checked before any file of the run directory is rewritten.
  r->best = -INFINITY;
  if (r->ev && opt->resume && read_best(r->run_dir, evaluator_metric_name(r->ev), &r->best) != 0) {
    fprintf(stderr, "ppo-train: --resume: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  if (!r->root) return EXIT_OK;
  // The metrics table needs the env metric names: they come with the env spec.
  TrainStats shape;
  memset(&shape, 0, sizeof shape);
  const EnvSpec *spec = trainer_env_spec(r->tr);
  shape.n_env_metrics = spec->log_size - 2;
  for (int f = 2; f < spec->log_size; f++) shape.env_metric_names[f - 2] = spec->log_names[f];
  int opened = metrics_log_open(
      &r->metrics, r->run_dir, &shape, r->ev ? evaluator_metric_name(r->ev) : NULL,
      metrics_log_rows(r->total_iterations, r->start_iteration, r->cfg.run.log_every, r->cfg.eval.every),
      opt->resume ? r->start_iteration : -1);
  if (opened != 0) {
    fprintf(stderr, "ppo-train: %s\n", error_message());
    return opened == METRICS_LOG_BAD_FILE ? EXIT_BAD_INPUT : EXIT_RUNTIME;
  }
  r->metrics_open = true;
  if (opt->resume) warn_missing_rows(r);
  // After the checkpoint and the earlier metrics files proved usable: a refused resume leaves the
  // run directory's config.ini as it was.
  char path[PATH_CAP];
  snprintf(path, sizeof path, "%s/config.ini", r->run_dir);
  if (write_config_file(&r->cfg, path) != 0) {
    fprintf(stderr, "ppo-train: %s\n", error_message());
    return EXIT_RUNTIME;
  }
  snprintf(path, sizeof path, "%s/train.log", r->run_dir);
  r->train_log = fopen(path, opt->resume ? "a" : "w");
  if (!r->train_log) {
    log_warn("%s: cannot open it (%s): the progress lines are not kept in the run directory", path, strerror(errno));
  } else if (opt->resume) {  // lines of iterations after it above belong to the abandoned timeline
    char target[PATH_CAP];   // last.h5 moves on: the file it named then is the one read
    ssize_t n = readlink(opt->resume, target, sizeof target - 1);
    if (n > 0) target[n] = '\0';
    fprintf(r->train_log, "resumed from %s%s%s%s at iteration %lld\n", opt->resume, n > 0 ? " (-> " : "",
            n > 0 ? target : "", n > 0 ? ")" : "", (long long)r->start_iteration);
  }
  return EXIT_OK;
}

// A line into train.log (when it is open), flushed at once: the file is read while the run goes on.
static void train_log_line(Run *r, const char *prefix, const char *line) {
  if (!r->train_log) return;
  fprintf(r->train_log, "%s%s\n", prefix, line);
  fflush(r->train_log);
}

// Seconds the run's OpenMP team has waited for a CPU (warn_cpu_wait's reading).
static double read_cpu_wait(const void *ctx) {
  const Run *r = ctx;
  return cpu_wait_seconds(r->cpu_wait_tids, r->cpu_wait_n);
}

static int report_pending_pass(Run *r, const EvalResult *er, double best_before);

// The loop's starting state; then, for a resume whose checkpoint says a stop abandoned its
// iteration's [eval] pass, that pass first, as the uninterrupted run ran it after that iteration.
static int run_begin_loop(Run *r) {
  const TrainRunOptions *opt = &r->opt;
  r->tty = log_is_tty() && !opt->quiet;
  r->t_start = timer_now();
  r->dev_mib = (double)trainer_memory_plan(r->tr)->device_total / 1048576.0;
  r->timesteps_at_start = trainer_counters(r->tr)->timesteps;
  r->eval_pending = r->saved_at = -1;
  const char *fail_rank = getenv("PPO_TEST_FAIL_RANK");  // fault injection for the multi-rank tests
  r->fail_after = fail_rank && atoi(fail_rank) == dist_rank() ? 2 : -1;
  const char *stop_eval = getenv("PPO_TEST_STOP_BEFORE_EVAL");  // fault injection: a stop during that pass
  r->stop_before_eval = stop_eval ? atoll(stop_eval) : -1;
  r->cpu_wait = cpu_wait_window(CPU_WAIT_WINDOW_S);
  r->cpu_wait_hot = 0;
  r->cpu_wait_n = omp_get_max_threads() >= 2 ? cpu_wait_omp_threads(r->cpu_wait_tids, CPU_WAIT_MAX_THREADS) : 0;
  if (r->cpu_wait_n > 0) {
    (void)cpu_wait_share(&r->cpu_wait, r->t_start, r->cpu_wait_n, read_cpu_wait, r);  // the first window starts
    r->cpu_other0 = cpu_time_other_threads(r->cpu_wait_tids, r->cpu_wait_n);
  }
  if (!opt->resume || r->cfg.eval.every <= 0 || r->resume_eval_pending != r->start_iteration) return EXIT_OK;
  EvalResult er;
  const double best_before = r->best;
  if (r->stop_before_eval == r->start_iteration) trainer_request_stop();  // fault injection for the tests
  int evaluated = evaluate_iteration(r->tr, r->ev, r->root, r->run_dir, r->start_iteration, &r->best, &er);
  if (evaluated < 0) r->eval_pending = r->start_iteration;
  int settled = evaluated > 0 && report_pending_pass(r, &er, best_before) == 0;  // rank 0's, for every rank
  dist_host_bcast(&settled, sizeof settled, 0);
  r->pending_settled = settled != 0;
  return evaluated > 0 && !settled ? EXIT_RUNTIME : EXIT_OK;
}

// The resume's abandoned pass, evaluated now (rank 0): said, and its row's eval/ values written with
// the metrics, which this rewrites (the new timeline's first commit). 0, or -1 (said).
static int report_pending_pass(Run *r, const EvalResult *er, double best_before) {
  // its value, as the iteration's progress line would have shown it (that line is in train.log already)
  char line[256], value[32], best_text[32];
  snprintf(line, sizeof line, "iteration %lld evaluated now (its pass was abandoned by the stop): val %s %s (%s %s)",
           (long long)r->start_iteration, evaluator_metric_name(r->ev),
           eval_value_text(er->metric, "n/a", value, sizeof value), r->best > best_before ? "new best" : "best",
           eval_value_text(r->best, "none", best_text, sizeof best_text));
  log_write(LOG_LEVEL_INFO, "ppo-train: %s", line);
  train_log_line(r, "", line);
  r->pending_ran = true;
  // the row's eval/ values, written now: the run may stop before any other row
  metrics_log_set_eval(&r->metrics, r->start_iteration, evaluator_metric_name(r->ev), er->metric, &er->metrics);
  if (metrics_log_settle(&r->metrics) != 0) {
    fprintf(stderr, "ppo-train: %s\n", error_message());
    return -1;
  }
  return 0;
}

// Several threads that wait for a CPU 15 % of their time or more over two windows of 2 s or more
// in a row (alone: under 1 %; two runs sharing 2 cores: about 50 %; 2 threads on one CPU: 21-27 %)
// share their cores with other busy processes, or outnumber them: OpenMP's spinning then costs far
// more than that share (common/cpu_wait.h). Said once per run, on the rank that sees it (rank 0
// also into train.log).
static void warn_cpu_wait(Run *r) {
  const int threads = r->cpu_wait_n;
  if (r->cpu_wait_hot < 0 || threads < 2) return;
  const double window_start = r->cpu_wait.wall0, now = timer_now();
  const double share = cpu_wait_share(&r->cpu_wait, now, threads, read_cpu_wait, r);
  if (share < 0) return;  // the window goes on
  const double other0 = r->cpu_other0, other = cpu_time_other_threads(r->cpu_wait_tids, threads);
  r->cpu_other0 = other;
  // CPUs kept busy meanwhile by this process's threads outside the team (an OpenBLAS worker)
  const double other_cpus = other >= 0 && other0 >= 0 ? (other - other0) / (now - window_start) : 0;
  r->cpu_wait_hot = share >= CPU_WAIT_WARN_SHARE ? r->cpu_wait_hot + 1 : 0;
  if (r->cpu_wait_hot < CPU_WAIT_WARN_WINDOWS) return;
  r->cpu_wait_hot = -1;
  char rank[32] = "";
  if (dist_size() > 1) snprintf(rank, sizeof rank, " (rank %d)", dist_rank());
  const int cpus = omp_get_num_procs();  // the CPUs this process may run on (its affinity)
  const double quota = cpu_quota_cpus();  // docker --cpus, a Kubernetes limit: not in the affinity
  char text[768];
  int n = snprintf(text, sizeof text,
                   "this run's %d threads%s waited for a CPU %.0f%% of the time over the last %.1f s: ", threads, rank,
                   100 * share, now - window_start);
  if (other_cpus >= 0.5)  // this process's own other threads
    snprintf(text + n, sizeof text - (size_t)n,
             "this process's other threads (a library's own thread pool) kept %.1f CPUs busy beside them. Give that "
             "library fewer threads or set [run] threads lower (docs/GUIDE.md section 2.1)",
             other_cpus);
  else if (threads > cpus)  // its own threads outnumber its CPUs (taskset, mpirun's binding, a cpuset)
    snprintf(text + n, sizeof text - (size_t)n,
             "it has %d CPU%s to run on (the machine's, or fewer by taskset, mpirun's binding or a cpuset). Set "
             "[run] threads to at most %d (docs/GUIDE.md section 2.1)",
             cpus, cpus == 1 ? "" : "s", cpus);
  else if (quota > 0 && threads > quota + 1e-9)  // a cgroup's CPU time quota
    snprintf(text + n, sizeof text - (size_t)n,
             "its cgroup may use %.3g CPUs' time (a CPU quota: docker --cpus, a Kubernetes limit), fewer than its "
             "threads. Set [run] threads to at most %d (docs/GUIDE.md section 2.1)",
             quota, quota >= 2 ? (int)quota : 1);
  else
    snprintf(text + n, sizeof text - (size_t)n,
             "other busy processes share its %d CPUs, and OpenMP's threads, which spin between parallel regions, "
             "then hold up every region (two runs of 2 threads on 2 cores each trained 4 to 44 times slower than "
             "one alone). Give each run cores of its own with [run] threads (OMP_WAIT_POLICY=PASSIVE also helps, but "
             "slows a run that is alone; docs/GUIDE.md section 2.1)",
             cpus);
  log_warn("%s", text);
  train_log_line(r, "[warn] ", text);
}

// A checkpoint of the state at this iteration boundary, during the loop (periodic, or a fork's
// first): the metrics settled first (metrics_log_settle: a resume from it keeps the rows up to
// it), last.h5 moved on, the older ones pruned. 0, or -1 (said).
static int save_checkpoint_now(Run *r, TrainRunResult *result) {
  const int64_t iterations = trainer_counters(r->tr)->iterations;
  if ((r->root && metrics_log_settle(&r->metrics) != 0) ||
      save_checkpoint(r->tr, r->ckpt_dir, r->eval_pending == iterations, result->last_checkpoint,
                      sizeof result->last_checkpoint) != 0) {
    fprintf(stderr, "ppo-train: %s\n", error_message());
    return -1;
  }
  if (r->root) prune_checkpoints(r->ckpt_dir, r->cfg.run.checkpoint_keep, iterations);
  r->saved_at = iterations;
  r->fork_unsaved = false;
  return 0;
}

// What follows an iteration: its [eval] pass, metrics row and progress line, the divergence stop,
// the periodic checkpoint. EXIT_OK to go on, else the exit status that ends the loop.
static int run_after_iteration(Run *r, const TrainStats *s, TrainRunResult *result) {
  const Config *cfg = &r->cfg;
  Trainer *tr = r->tr;
  result->rollout_s += s->rollout_s;
  result->gae_s += s->gae_s;
  result->update_s += s->update_s;
  MetricsExtra x = {
      .time_elapsed = timer_now() - r->t_start, .host_mib = rss_mib(), .dev_mib = r->dev_mib, .eval_metric = NAN};
  x.fps = (double)(s->timesteps - r->timesteps_at_start) / x.time_elapsed;
  // Diverged: a NaN or infinite gradient norm without a loss scaler (fp16 skips such steps) has
  // turned the parameters NaN (clip_grad_norm_'s NaN coefficient, or Adam's NaN step). The row is
  // logged, then the run stops: no evaluation (best.h5) and no checkpoint holds them. The norm is
  // the all-reduced one, the same on every rank. An iteration whose KL check stopped its first
  // minibatch took no step: its norm is NaN and its parameters are as they were.
  // In fp16 the scaler skips such steps and backs the scale off; a scale a backoff no longer
  // changes (0, from which growth never returns, or the smallest float denormals, where a
  // backoff_factor above 0.5 rounds back up: nn_grad_scaler_backoff) after an iteration that
  // skipped every step can never let a step through: every step's gradients stayed inf or NaN
  // some 170 steps in a row (from 65536), as when a weight past fp16's 65504 makes every forward
  // non-finite. torch's GradScaler would skip steps forever; the run stops (diverged includes it).
  const bool fp16 = cfg->run.precision == CONFIG_PRECISION_FP16;
  const float scale = (float)s->loss_scale;
  const bool scale_dead =
      fp16 && s->steps == 0 && s->skipped_steps > 0 && nn_grad_scaler_backoff(scale, cfg->amp.backoff_factor) == scale;
  const bool diverged = (!fp16 && s->steps > 0 && !isfinite(s->grad_norm)) || scale_dead;
  EvalResult er;  // x.eval points here until the row is logged
  bool new_best = false;
  const bool eval_due = !diverged && cfg->eval.every > 0 && s->iteration % cfg->eval.every == 0;
  if (eval_due) {
    if (r->stop_before_eval == s->iteration) trainer_request_stop();  // fault injection for the tests
    const double best_before = r->best;
    int evaluated = evaluate_iteration(tr, r->ev, r->root, r->run_dir, s->iteration, &r->best, &er);
    new_best = r->best > best_before;
    if (evaluated > 0) x.eval_metric = er.metric, x.eval = &er.metrics;
    if (evaluated < 0) r->eval_pending = s->iteration;
  }
  double per_it = x.time_elapsed / (double)r->done_here;
  double eta = per_it * (double)(r->total_iterations - s->iteration);
  bool last = trainer_counters(tr)->timesteps >= cfg->run.total_timesteps;
  // An iteration with an evaluation is logged whatever log_every says (as SB3's EvalCallback dumps
  // its logger): its eval/ values would be lost otherwise. Also one whose pass a stop abandoned:
  // the resumed run evaluates it first and fills its row in (metrics_log_set_eval).
  const bool row = s->iteration % cfg->run.log_every == 0 || last || eval_due;
  // A run resumed from other than the directory's newest checkpoint commits its own timeline at its
  // first row, which rewrites the metrics: with a checkpoint first (the metrics settled to the
  // resumed iteration's rows), so that checkpoints/last.h5 names it. Killed after the row, the run
  // left last.h5 naming the abandoned timeline's newest, and a resume of the directory continued
  // that timeline under this one's rows.
  if (row && r->fork_unsaved && !diverged && save_checkpoint_now(r, result) != 0) return EXIT_RUNTIME;
  if (r->root && row) {
    if (metrics_log_append(&r->metrics, s, &x) != 0) {
      fprintf(stderr, "ppo-train: %s\n", error_message());
      return EXIT_RUNTIME;
    }
    char line[1024];
    progress_line(line, sizeof line, s, r->total_iterations, eta, &x, r->ev ? evaluator_metric_name(r->ev) : NULL,
                  r->best, new_best);
    train_log_line(r, "", line);
    if (r->tty)
      progress_bar(s, r->total_iterations, eta);
    else if (!r->opt.quiet)
      fprintf(stderr, "%s\n", line);
  }
  result->ep_rew_mean = s->ep_rew_mean;
  warn_cpu_wait(r);
  // a diverged run's message names the checkpoint to go back to
  const char *resume_point = result->last_checkpoint[0] ? result->last_checkpoint
                             : r->opt.resume            ? r->opt.resume
                                                        : "none yet";
  if (scale_dead) {
    fprintf(stderr,
            "ppo-train: training diverged in iteration %lld: the fp16 loss scale has fallen to %g, which its backoff "
            "no longer lowers (%lld of %d steps skipped in this iteration, loss %g): every step's gradients were inf "
            "or NaN until the scale underflowed, so no step can be taken again; the run stops without a checkpoint "
            "of this state (the last one: %s). A weight or activation past fp16's range (65504) makes every forward "
            "non-finite: try bf16 or fp32, a lower [ppo] learning_rate, or [normalize] obs and reward\n",
            (long long)s->iteration, (double)scale, (long long)s->skipped_steps, (int)(s->skipped_steps + s->steps),
            shown(s->loss), resume_point);
    return EXIT_RUNTIME;
  }
  if (diverged) {
    fprintf(stderr,
            "ppo-train: training diverged in iteration %lld: gradient norm %g, loss %g (%s, no loss scaler); the "
            "parameters are no longer finite, so the run stops without a checkpoint of them (the last one: %s). "
            "Try a lower [ppo] learning_rate, a [ppo] max_grad_norm, or [normalize] obs and reward\n",
            (long long)s->iteration, shown(s->grad_norm), shown(s->loss),
            cfg->run.precision == CONFIG_PRECISION_BF16 ? "bf16" : "fp32", resume_point);
    return EXIT_RUNTIME;
  }
  if (cfg->run.checkpoint_every > 0 && s->iteration % cfg->run.checkpoint_every == 0 && !last &&
      r->saved_at != s->iteration && save_checkpoint_now(r, result) != 0)
    return EXIT_RUNTIME;
  return EXIT_OK;
}

// Iterations until [run] total_timesteps, --iterations, a stop request or a failure. An exit status.
static int run_loop(Run *r, TrainRunResult *result) {
  Trainer *tr = r->tr;
  // The resume's abandoned pass rewrote the metrics (run_begin_loop): a fork commits its timeline
  // there, with its checkpoint (see run_after_iteration).
  if (r->fork_unsaved && r->pending_settled && save_checkpoint_now(r, result) != 0) return EXIT_RUNTIME;
  // A stop during start-up or the resume's abandoned [eval] pass (run_begin_loop) stops the run here.
  // The loop's first step would see it too, but a run with every iteration done has no step left:
  // one whose last pass a stop abandoned again ended as "nothing to train: the run is complete".
  if (dist_host_allreduce_max_int(trainer_stop_requested())) {
    r->interrupted = true;
    return EXIT_OK;
  }
  while (trainer_counters(tr)->timesteps < r->cfg.run.total_timesteps) {
    if (r->opt.max_iterations > 0 && r->done_here >= r->opt.max_iterations) break;
    TrainStats s;
    if (trainer_iteration(tr, &s) == TRAINER_INTERRUPTED) {
      r->interrupted = true;
      break;
    }
    r->done_here++;
    if (r->done_here == r->fail_after) {
      fprintf(stderr, "ppo-train: rank %d: PPO_TEST_FAIL_RANK: failing after iteration %lld\n", dist_rank(),
              (long long)s.iteration);
      return EXIT_RUNTIME;
    }
    if (!trainer_replicas_agree(tr)) {
      fprintf(stderr,
              "ppo-train: the ranks' parameters or normalisation statistics differ after iteration %lld (the "
              "all-reduce gave ranks different sums?)\n",
              (long long)s.iteration);
      return EXIT_RUNTIME;
    }
    int status = run_after_iteration(r, &s, result);
    if (status != EXIT_OK) return status;
    // A signal may reach the ranks at different steps: they stop together, after the same iteration.
    if (dist_host_allreduce_max_int(trainer_stop_requested())) {
      r->interrupted = true;
      break;
    }
  }
  return EXIT_OK;
}

// The end, however the loop ended: at the end or stopped, a checkpoint of the state at the last
// iteration boundary (not again when this iteration's periodic checkpoint was just written: a
// preemption's grace period is short) and the line that says how the run ended; the result's
// counters in every case. The run's exit status.
static int run_finish(Run *r, TrainRunResult *result, int status) {
  const TrainRunOptions *opt = &r->opt;
  Trainer *tr = r->tr;
  const bool root = r->root;
  if (r->tty) log_progress_end();
  result->seconds = timer_now() - r->t_start;
  const int64_t iterations = trainer_counters(tr)->iterations;
  if (status == EXIT_OK) {
    // A checkpoint past the resumed iteration first drops the abandoned timeline's metrics rows
    // (metrics_log_settle); one at the resumed iteration itself (a stop before the first step) keeps them.
    bool moved_on = iterations > r->start_iteration;
    bool saved =
        r->saved_at == iterations || ((!root || !moved_on || metrics_log_settle(&r->metrics) == 0) &&
                                      save_checkpoint(tr, r->ckpt_dir, r->eval_pending == iterations,
                                                      result->last_checkpoint, sizeof result->last_checkpoint) == 0);
    if (saved && r->interrupted) {
      stop_saved = 1;
      const char *again = getenv("PPO_TEST_SIGNAL_AFTER_STOP");  // fault injection: a signal arriving now
      if (again) raise(atoi(again));
    }
    if (saved && root) prune_checkpoints(r->ckpt_dir, r->cfg.run.checkpoint_keep, iterations);
    if (!saved) {
      fprintf(stderr, "ppo-train: %s\n", error_message());
      status = EXIT_RUNTIME;
    } else if (r->interrupted && root) {
      char by[64];  // with several ranks the signal may have reached another rank only
      if (last_signal)
        snprintf(by, sizeof by, "signal %d", (int)last_signal);
      else
        snprintf(by, sizeof by, dist_size() > 1 ? "a signal to another rank" : "a stop request");
      if (opt->scratch)  // its checkpoint goes with the directory
        fprintf(stderr, "ppo-train: stopped by %s after iteration %lld\n", by, (long long)iterations);
      else
        fprintf(stderr, "ppo-train: stopped by %s after iteration %lld; checkpoint %s\n", by, (long long)iterations,
                result->last_checkpoint);
      if (!opt->in_walk_forward && !opt->scratch) {  // the walk-forward says how to go on (the same command)
        char launch[48] = "";       // a checkpoint of R ranks resumes with R ranks
        if (dist_size() > 1) snprintf(launch, sizeof launch, "mpirun -np %d ", dist_size());
        fprintf(stderr, "ppo-train: continue with: %sppo-train --resume %s\n", launch, result->last_checkpoint);
      }
    } else if (root && r->done_here == 0 && opt->resume && opt->max_iterations == 0 && !opt->in_walk_forward) {
      if (r->pending_ran)  // the resume had only the abandoned evaluation left to do
        fprintf(stderr, "ppo-train: the run is complete (%lld steps); iteration %lld's [eval] pass ran now\n",
                (long long)trainer_counters(tr)->timesteps, (long long)r->start_iteration);
      else
        say_nothing_to_train(r);
    } else if (!opt->quiet) {
      fprintf(stderr, "ppo-train: done: %lld iteration%s, %lld steps in %.1f s; run directory %s\n",
              (long long)iterations, iterations == 1 ? "" : "s", (long long)trainer_counters(tr)->timesteps,
              result->seconds, r->run_dir);
    }
  }
  result->iterations = iterations;
  result->stopped = r->interrupted;
  result->timesteps = trainer_counters(tr)->timesteps;
  result->eval_pending = r->eval_pending >= 0 && r->eval_pending == result->iterations;
  result->peak_rss_bytes = peak_rss_bytes();
  return status;
}

// lock_fd: the run directory's lock (lock_run_dir), held until train_run returns.
static int train_run_body(const TrainRunOptions *opt, TrainRunResult *result, int *lock_fd) {
  memset(result, 0, sizeof *result);
  result->ep_rew_mean = NAN;
  Run *r = CHECK_ALLOC(sizeof *r, "the run's state");
  memset(r, 0, sizeof *r);
  r->root = dist_is_root();
  r->opt = *opt;
  r->opt.quiet = opt->quiet || !r->root;  // every rank still reports its own errors
  int status = run_prepare(r, result, lock_fd);
  if (status == EXIT_OK && !opt->plan_only && r->complete) {
    // Nothing to do: the run directory is left exactly as it was (a retry loop's pass rewrote the
    // last checkpoint, config.ini and train.log each time).
    if (r->root) say_nothing_to_train(r);
    result->iterations = r->start_iteration;
    result->timesteps = trainer_counters(r->tr)->timesteps;
    snprintf(result->last_checkpoint, sizeof result->last_checkpoint, "%s", opt->resume);
  } else if (status == EXIT_OK && !opt->plan_only) {
    status = run_open_outputs(r);
    if (status == EXIT_OK) {
      status = run_begin_loop(r);
      if (status == EXIT_OK) status = run_loop(r, result);
      status = run_finish(r, result, status);
    }
  }
  run_close(r);
  free(r);
  return status;
}

// The handlers go in first: a signal during start-up (market, allocation, checkpoint load) stops
// the run at its first step, with a checkpoint and exit 0, instead of killing it half-way through
// writing its files.
int train_run(const TrainRunOptions *opt, TrainRunResult *result) {
  last_link_warned = false;
  train_signals_begin();
  int lock_fd = -1;
  int status = train_run_body(opt, result, &lock_fd);
  if (lock_fd >= 0) close(lock_fd);  // the lock goes with it
  train_signals_end();
  return status;
}
