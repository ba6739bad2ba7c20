// ppo/walk_forward.c: walk-forward folds and the per-fold training loop (ppo/walk_forward.h).
#include "ppo/walk_forward.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/error.h"
#include "common/file_check.h"
#include "common/log.h"
#include "common/text.h"
#include "common/time_utc.h"
#include "envs/synthetic.h"
#include "ppo/checkpoint.h"
#include "ppo/env_config.h"
#include "ppo/trainer.h"

#define SECONDS_PER_DAY 86400
#define DAILY_BAR_SECONDS (12 * 3600)  // as envs/features.c: bars >= 12 h apart are daily
#define PATH_CAP 1100
#define WALK_RUN_DIR_MAX 990  // characters: RUN/fold_NN stays within ppo-train's 1000

static const char *const date_keys[4] = {"train_start", "val_start", "test_start", "test_end"};

// --- dates -------------------------------------------------------------------------------------------

static int64_t day_floor(int64_t ts) {
  int64_t d = ts / SECONDS_PER_DAY;
  if (ts % SECONDS_PER_DAY < 0) d--;
  return d * SECONDS_PER_DAY;
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b < 0); }

int64_t walk_forward_add_months(int64_t day, int months) {
  CivilTime t = utc_to_civil(day);
  int64_t total = (int64_t)t.year * 12 + (t.month - 1) + months;
  int year = (int)floor_div(total, 12), month = (int)(total - (int64_t)year * 12) + 1;
  int64_t first = utc_days_from_civil(year, month, 1);
  int64_t next = month == 12 ? utc_days_from_civil(year + 1, 1, 1) : utc_days_from_civil(year, month + 1, 1);
  int last_day = (int)(next - first);
  int d = t.day < last_day ? t.day : last_day;
  return utc_days_from_civil(year, month, d) * SECONDS_PER_DAY;
}

WalkForwardLengths walk_forward_lengths(const Config *cfg, bool daily) {
  const ConfigWalkForward *w = &cfg->walk_forward;
  WalkForwardLengths l;
  l.train_months = w->train_months > 0 ? (int)w->train_months : daily ? 96 : 36;
  l.val_months = w->val_months > 0 ? (int)w->val_months : daily ? 12 : 6;
  l.test_months = w->test_months > 0 ? (int)w->test_months : daily ? 12 : 6;
  l.step_months = w->step_months > 0 ? (int)w->step_months : l.test_months;
  return l;
}

static WalkForwardFold fold_at(int64_t anchor, const WalkForwardLengths *l, int k) {
  int start = k * l->step_months;
  WalkForwardFold f;
  f.index = k;
  f.train_start = walk_forward_add_months(anchor, start);
  f.val_start = walk_forward_add_months(anchor, start + l->train_months);
  f.test_start = walk_forward_add_months(anchor, start + l->train_months + l->val_months);
  f.test_end =
      walk_forward_add_months(anchor, start + l->train_months + l->val_months + l->test_months) - SECONDS_PER_DAY;
  return f;
}

int walk_forward_plan(const Config *cfg, const MarketData *data, bool daily, WalkForwardFold *folds, int capacity,
                      int *count) {
  *count = 0;
  if (!data || data->rows < 1) {
    error_set("walk-forward: the market data has no bars");
    return -1;
  }
  WalkForwardLengths l = walk_forward_lengths(cfg, daily);
  if (l.step_months < l.test_months) {  // consecutive test windows would overlap
    char where[512];
    error_set(
        "%s (resolved: %d months) is shorter than test_months (%d): consecutive folds' test windows would "
        "overlap and the chained out-of-sample curve would count those bars twice (allowed: step_months >= "
        "test_months, or 0 for test_months)",
        config_describe_key(cfg, "walk_forward", "step_months", where, sizeof where), l.step_months, l.test_months);
    return -1;
  }
  int64_t anchor = day_floor(data->ts[0]), last = day_floor(data->ts[data->rows - 1]);
  int64_t max_folds = cfg->walk_forward.max_folds;
  int n = 0;
  for (int k = 0;; k++) {
    if (max_folds > 0 && k >= max_folds) break;
    WalkForwardFold f = fold_at(anchor, &l, k);
    if (f.test_end > last) break;
    if (n >= capacity) {
      char where[512];
      error_set("%s: more than %d folds fit the data (allowed: max_folds at most %d, or a longer step_months)",
                config_describe_key(cfg, "walk_forward", "max_folds", where, sizeof where), capacity, capacity);
      return -1;
    }
    folds[n++] = f;
  }
  if (n == 0) {
    // Whole months of data from the first day: what train + val + test must fit in.
    int months = 0;
    while (walk_forward_add_months(anchor, months + 1) - SECONDS_PER_DAY <= last) months++;
    WalkForwardFold f = fold_at(anchor, &l, 0);
    char a[32], b[32], c[32], d[32], where[512];
    error_set(
        "%s, val_months = %lld, test_months = %lld (resolved for %s data: %d + %d + %d months): the first fold "
        "runs %s .. %s but the data runs %s .. %s, so no fold fits (allowed: train_months + val_months + "
        "test_months <= %d, the data's whole months)",
        config_describe_key(cfg, "walk_forward", "train_months", where, sizeof where),
        (long long)cfg->walk_forward.val_months, (long long)cfg->walk_forward.test_months, daily ? "daily" : "intraday",
        l.train_months, l.val_months, l.test_months, utc_format(f.train_start, true, a, sizeof a),
        utc_format(f.test_end, true, b, sizeof b), utc_format(anchor, true, c, sizeof c),
        utc_format(last, true, d, sizeof d), months);
    return -1;
  }
  *count = n;
  return 0;
}

int walk_forward_overrides(const WalkForwardFold *fold, char buf[4][64], const char *out[4]) {
  const int64_t dates[4] = {fold->train_start, fold->val_start, fold->test_start, fold->test_end};
  for (int i = 0; i < 4; i++) {
    char day[32];
    snprintf(buf[i], 64, "env.%s=%s", date_keys[i], utc_format(dates[i], true, day, sizeof day));
    out[i] = buf[i];
  }
  return 4;
}

// --- the run -----------------------------------------------------------------------------------------

// folds.csv as text (malloc'ed; NULL when out of memory).
static char *folds_csv(const WalkForwardFold *folds, int count, size_t *length) {
  char *text = NULL;
  FILE *out = open_memstream(&text, length);
  if (!out) return NULL;
  fprintf(out, "fold,train_start,val_start,test_start,test_end\n");
  for (int i = 0; i < count; i++) {
    char a[32], b[32], c[32], d[32];
    fprintf(out, "%d,%s,%s,%s,%s\n", folds[i].index, utc_format(folds[i].train_start, true, a, sizeof a),
            utc_format(folds[i].val_start, true, b, sizeof b), utc_format(folds[i].test_start, true, c, sizeof c),
            utc_format(folds[i].test_end, true, d, sizeof d));
  }
  fclose(out);
  return text;
}

static char *read_small_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *text = malloc(cap + 1);
  if (text) {
    n = fread(text, 1, cap, f);
    text[n] = '\0';
  }
  fclose(f);
  return text;
}

// Steps recorded in a fold's `done` marker; -1 when there is none (or it does not read).
static long long done_timesteps(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long long n = -1;
  if (fscanf(f, "timesteps %lld", &n) != 1) n = -1;
  fclose(f);
  return n;
}

static void print_table(FILE *out, const MarketData *data, bool daily, const WalkForwardLengths *l,
                        const WalkForwardFold *folds, int count) {
  char a[32], b[32], c[32], d[32];
  fprintf(out, "walk-forward: %d fold%s on %s (%lld bars %s .. %s, %s): train %d, val %d, test %d, step %d months\n",
          count, count == 1 ? "" : "s", data->symbol, (long long)data->rows, utc_format(data->ts[0], true, a, sizeof a),
          utc_format(data->ts[data->rows - 1], true, b, sizeof b), daily ? "daily" : "intraday", l->train_months,
          l->val_months, l->test_months, l->step_months);
  fprintf(out, "  fold  train_start  val_start   test_start  test_end\n");
  for (int i = 0; i < count; i++)
    fprintf(out, "  %4d  %s   %s  %s  %s\n", folds[i].index, utc_format(folds[i].train_start, true, a, sizeof a),
            utc_format(folds[i].val_start, true, b, sizeof b), utc_format(folds[i].test_start, true, c, sizeof c),
            utc_format(folds[i].test_end, true, d, sizeof d));
}

// The first line where `text` and `expected` differ (1: the first), its two versions into a and b
// (without the newline, "" past the end); 0 when they are the same.
static int first_differing_line(const char *text, const char *expected, char *a, char *b, size_t capacity) {
  for (int line = 1;; line++) {
    size_t na = strcspn(text, "\n"), nb = strcspn(expected, "\n");
    if (na != nb || strncmp(text, expected, na) != 0 || (text[na] == '\n') != (expected[nb] == '\n')) {
      snprintf(a, capacity, "%.*s", (int)na, text);
      snprintf(b, capacity, "%.*s", (int)nb, expected);
      return line;
    }
    if (!text[na]) return 0;
    text += na + 1, expected += nb + 1;
  }
}

// Is `text` the folds.csv of the first R folds of this plan, R its number of fold rows (R may be
// more than `count`, the folds of this max_folds: then the plan is made again with max_folds = R)?
// When not, why (the first fold line that differs, as the file has it and as this plan does) into
// `why`.
static bool fold_file_matches(const char *text, const Config *cfg, const MarketData *data, bool daily,
                              const WalkForwardFold *folds, int count, char *why, size_t why_capacity) {
  int rows = -1;  // lines after the header
  for (const char *p = text; *p; p++) rows += *p == '\n';
  if (rows < 1 || rows > WALK_FORWARD_FOLDS_MAX) {
    snprintf(why, why_capacity, "it holds %d fold lines (allowed: 1 .. %d)", rows < 0 ? 0 : rows,
             WALK_FORWARD_FOLDS_MAX);
    return false;
  }
  const WalkForwardFold *plan = folds;
  static WalkForwardFold more[WALK_FORWARD_FOLDS_MAX];
  static Config wide;
  int n = count;
  if (rows > count) {
    wide = *cfg;
    wide.walk_forward.max_folds = rows;
    if (walk_forward_plan(&wide, data, daily, more, WALK_FORWARD_FOLDS_MAX, &n) != 0) n = 0;
    plan = more;
  }
  size_t length = 0;
  char *expected = folds_csv(plan, n < rows ? n : rows, &length);
  if (!expected) {
    snprintf(why, why_capacity, "out of memory");
    return false;
  }
  char a[256], b[256];
  int line = first_differing_line(text, expected, a, b, sizeof a);
  free(expected);
  if (line == 0 && n >= rows) return true;
  char file_line[sizeof a];  // the file's line, edited perhaps: any bytes, escaped for the terminal (and cut)
  text_escape(a, file_line, sizeof file_line);
  if (line == 0 || (line == n + 2 && !*b && n < rows))  // every fold of this plan matches; the file has more
    snprintf(why, why_capacity, "it holds %d folds, and this data and these keys give %d", rows, n);
  else if (line == 1)
    snprintf(why, why_capacity, "its header is '%s', not '%s'", file_line, b);
  else if (*a && *b)
    snprintf(why, why_capacity,
             "fold %d there is %s where this command's plan has %s (fold,train_start,val_start,test_start,test_end)",
             line - 2, file_line, b);
  else
    snprintf(why, why_capacity,
             "its line %d is '%s' where this command's plan has '%s' (fold,train_start,val_start,test_start,"
             "test_end)",
             line, file_line, b);
  return false;
}

// The keys that place the fold windows ([walk_forward] train_months .. step_months, [env] data)
// where this command differs from the fold's config.ini written when fold 0 started (the command
// that wrote folds.csv): one line each ("WHERE: [section] key = value: FILE has VALUE") into msg,
// "" when there is no such file or none differs.
static void window_key_changes(const Config *cfg, bool daily, const char *run_dir, char *msg, size_t capacity) {
  msg[0] = '\0';
  char path[PATH_CAP + 32];
  snprintf(path, sizeof path, "%s/fold_00/config.ini", run_dir);
  if (access(path, F_OK) != 0) return;
  static Config stored;
  if (config_load_quietly(&stored, path) != 0) return;  // the file's warnings are not this command's
  static const char *const keys[][2] = {{"walk_forward", "train_months"},
                                        {"walk_forward", "val_months"},
                                        {"walk_forward", "test_months"},
                                        {"walk_forward", "step_months"},
                                        {"env", "data"}};
  // The month keys as they resolve (0 = the bar size's default, step_months 0 = test_months):
  // 0 and the default it stands for are the same window.
  const WalkForwardLengths was = walk_forward_lengths(&stored, daily), is = walk_forward_lengths(cfg, daily);
  const int months[4][2] = {{was.train_months, is.train_months},
                            {was.val_months, is.val_months},
                            {was.test_months, is.test_months},
                            {was.step_months, is.step_months}};
  size_t used = 0;
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
    int index = config_key_index(keys[k][0], keys[k][1]);
    char a[512], b[512], where[1024];
    config_value_text(&stored, index, a, sizeof a);
    config_value_text(cfg, index, b, sizeof b);
    if (k < 4 ? months[k][0] == months[k][1] : strcmp(a, b) == 0) continue;
    config_describe_key(cfg, keys[k][0], keys[k][1], where, sizeof where);
    int n = snprintf(msg + used, capacity - used, "%s: %s has %s\n", where, path, a);
    if (n > 0 && (size_t)n < capacity - used) used += (size_t)n;
  }
}

// Makes the run directory and checks the RUN/folds.csv a first run wrote. *pending: the folds.csv
// to write (NULL: the file already holds this plan or a longer one), written by the caller once the
// command is known to go ahead. 0, or an exit status.
static int prepare_run_dir(const TrainRunOptions *opt, const Config *cfg, const MarketData *data, bool daily,
                           char *run_dir, size_t run_dir_cap, const WalkForwardFold *folds, int count, char **pending) {
  if (opt->run_dir)
    snprintf(run_dir, run_dir_cap, "%s", opt->run_dir);
  else
    snprintf(run_dir, run_dir_cap, "%s/%s", cfg->run.run_dir, cfg->run.name);
  if (strlen(run_dir) > WALK_RUN_DIR_MAX) {
    fprintf(stderr, "ppo-train --walk-forward: run directory %.60s...: longer than %d characters\n", run_dir,
            WALK_RUN_DIR_MAX);
    return EXIT_BAD_INPUT;
  }
  char path[PATH_CAP];
  snprintf(path, sizeof path, "%s/metrics.csv", run_dir);  // a plain run's: the folds would mix with it
  if (path_exists(path)) {
    fprintf(stderr,
            "ppo-train --walk-forward: run directory %s holds a training run (metrics.csv), not a walk-forward; "
            "choose another [run] name (--set run.name=...) or --run-dir\n",
            run_dir);
    return EXIT_BAD_INPUT;
  }
  if (make_directories(run_dir) != 0) {
    fprintf(stderr, "ppo-train --walk-forward: %s (%s)\n", error_message(),
            opt->run_dir ? "--run-dir" : "[run] run_dir and name");
    return EXIT_BAD_INPUT;
  }
  // Every file the walk-forward and its folds write, checked before the first fold trains: a
  // directory (or a FIFO, ...) at one failed when that fold got there (a FIFO at folds.csv blocked
  // its reading).
  snprintf(path, sizeof path, "%s/folds.csv", run_dir);
  bool usable = file_check_output(path, "the walk-forward's fold plan") == 0;
  for (int i = 0; i < count && usable; i++) {
    char fold_dir[PATH_CAP], done_path[PATH_CAP + 16];
    snprintf(fold_dir, sizeof fold_dir, "%s/fold_%02d", run_dir, folds[i].index);
    snprintf(done_path, sizeof done_path, "%s/done", fold_dir);
    usable = file_check_output(done_path, "the fold's done marker") == 0 && train_run_check_outputs(fold_dir) == 0;
  }
  if (!usable) {
    fprintf(stderr, "ppo-train --walk-forward: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  size_t length = 0;
  char *csv = folds_csv(folds, count, &length);
  if (!csv) {
    fprintf(stderr, "ppo-train --walk-forward: out of memory\n");
    return EXIT_RUNTIME;
  }
  // A second run of the same command resumes. The same folds with a different max_folds are the
  // same plan (the file keeps the longer), so a folds.csv of R fold rows must be exactly what this
  // data and these keys give with max_folds = R; any other file (other folds, edits, a line added)
  // is refused.
  snprintf(path, sizeof path, "%s/folds.csv", run_dir);
  char *existing = read_small_file(path);
  size_t existing_length = existing ? strlen(existing) : 0;
  char why[768];
  if (existing && !fold_file_matches(existing, cfg, data, daily, folds, count, why, sizeof why)) {
    static char changes[4096];
    window_key_changes(cfg, daily, run_dir, changes, sizeof changes);
    fprintf(stderr,
            "%sppo-train --walk-forward: %s holds another fold plan: %s. The fold windows follow the data and "
            "[walk_forward] train_months, val_months, test_months and step_months (%s; max_folds only adds or "
            "drops folds at the end): run the command that wrote it, or choose another --run-dir or [run] name, or "
            "remove that directory\n",
            changes, path, why, changes[0] ? "changed as above" : "changed, or the file was edited");
    free(existing);
    free(csv);
    return EXIT_BAD_INPUT;
  }
  if (existing && existing_length >= length)
    free(csv);
  else
    *pending = csv;
  free(existing);
  return EXIT_OK;
}

// Checks the command and the data and plans the folds (*pending: prepare_run_dir's). 0, or an exit status.
static int prepare(const TrainRunOptions *opt, Config *cfg, char *run_dir, size_t run_dir_cap, WalkForwardFold *folds,
                   int *count, char **pending) {
  char where[512];
  if (config_load(cfg, opt->config_path, opt->n_overrides, opt->overrides) != 0) {
    fprintf(stderr, "%s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  if (!config_env_has_market(cfg->env.type)) {
    fprintf(stderr,
            "ppo-train --walk-forward: %s: walk-forward folds need market data (allowed: env.type = trading or "
            "synthetic)\n",
            config_describe_key(cfg, "env", "type", where, sizeof where));
    return EXIT_BAD_INPUT;
  }
  for (int i = 0; i < 4; i++) {
    int k = config_key_index("env", date_keys[i]);
    if (cfg->origin[k].kind == CONFIG_ORIGIN_SET) {
      fprintf(stderr,
              "ppo-train --walk-forward: %s: the walk-forward sets the split dates of each fold; drop this --set "
              "(allowed: the [walk_forward] keys)\n",
              config_describe_key(cfg, "env", date_keys[i], where, sizeof where));
      return EXIT_BAD_INPUT;
    }
  }
  MarketData *data = env_config_load_bars(cfg);  // no features or splits: the plan needs the days
  if (!data) {
    fprintf(stderr, "ppo-train --walk-forward: %s\n", error_message());
    return EXIT_BAD_INPUT;
  }
  bool daily = data->bar_seconds >= DAILY_BAR_SECONDS;
  if (walk_forward_plan(cfg, data, daily, folds, WALK_FORWARD_FOLDS_MAX, count) != 0) {
    fprintf(stderr, "ppo-train --walk-forward: %s\n", error_message());
    market_data_free(data);
    return EXIT_BAD_INPUT;
  }
  WalkForwardLengths l = walk_forward_lengths(cfg, daily);
  int status = prepare_run_dir(opt, cfg, data, daily, run_dir, run_dir_cap, folds, *count, pending);
  if (status == EXIT_OK) print_table(stderr, data, daily, &l, folds, *count);  // a refusal is the last line said
  market_data_free(data);
  return status;
}

// The [env] dates each fold sets for itself.
static bool is_fold_date_key(const char *section, const char *key) {
  if (strcmp(section, "env") != 0) return false;
  for (int k = 0; k < 4; k++)
    if (strcmp(key, date_keys[k]) == 0) return true;
  return false;
}

// One walk-forward trains every fold with one configuration: a re-run whose keys differ from a
// fold already started (its config.ini) would chain agents of other hyperparameters or costs into
// one out-of-sample curve. Refused naming the fold's file and each key, as --resume refuses them;
// the fold dates and the keys a resume may change (checkpoint_may_differ) are let through. 0, or an
// exit status.
static int check_fold_configs(const Config *cfg, const char *run_dir, const WalkForwardFold *folds, int count) {
  for (int i = 0; i < count; i++) {
    char path[PATH_CAP + 32];
    snprintf(path, sizeof path, "%s/fold_%02d/config.ini", run_dir, folds[i].index);
    if (access(path, F_OK) != 0) continue;
    static Config stored;
    if (config_load_quietly(&stored, path) != 0) {  // its warnings are this command's, printed already
      fprintf(stderr, "ppo-train --walk-forward: %s (a fold's own configuration, written when it started)\n",
              error_message());
      return EXIT_BAD_INPUT;
    }
    static char msg[8192];
    int differing = checkpoint_config_differences(&stored, cfg, path, is_fold_date_key, msg, sizeof msg);
    if (differing > 0) {
      fprintf(stderr,
              "%s\nppo-train --walk-forward: %d key(s) differ from fold %d's configuration (%s): every fold of a "
              "walk-forward trains with one configuration. Run the command that started it (its keys are in that "
              "file; more [run] total_timesteps and the keys --resume may change are allowed), or choose another "
              "--run-dir or [run] name\n",
              msg, differing, folds[i].index, path);
      return EXIT_BAD_INPUT;
    }
  }
  return EXIT_OK;
}

static int walk_forward_body(const TrainRunOptions *opt) {
  static WalkForwardFold folds[WALK_FORWARD_FOLDS_MAX];
  Config cfg;
  char run_dir[1024];
  int count = 0;
  char *pending = NULL;
  int status = prepare(opt, &cfg, run_dir, sizeof run_dir, folds, &count, &pending);
  if (status == EXIT_OK) status = check_fold_configs(&cfg, run_dir, folds, count);
  if (status == EXIT_OK && pending) {  // only now: a refused re-run leaves the plan file as it was
    char path[PATH_CAP];
    snprintf(path, sizeof path, "%s/folds.csv", run_dir);
    if (atomic_file_write_text(path, pending) != 0) {
      fprintf(stderr, "ppo-train --walk-forward: %s\n", error_message());
      status = EXIT_RUNTIME;
    }
  }
  free(pending);
  if (status != EXIT_OK) return status;

  const char **sets = calloc((size_t)opt->n_overrides + 4, sizeof *sets);
  if (!sets) {
    fprintf(stderr, "ppo-train --walk-forward: out of memory\n");
    return EXIT_RUNTIME;
  }
  for (int i = 0; i < opt->n_overrides; i++) sets[i] = opt->overrides[i];
  int skipped = 0;
  for (int i = 0; i < count && status == EXIT_OK; i++) {
    char fold_dir[PATH_CAP], done_path[PATH_CAP + 16], last_path[PATH_CAP + 32], date_buf[4][64];
    if (trainer_stop_requested()) {  // a signal during start-up or after the last fold's train_run
      fprintf(stderr,
              "ppo-train --walk-forward: stopped before fold %d (%d of %d); run the same ppo-train --walk-forward "
              "command again to continue\n",
              folds[i].index, i + 1, count);
      free(sets);
      return EXIT_OK;
    }
    snprintf(fold_dir, sizeof fold_dir, "%s/fold_%02d", run_dir, folds[i].index);
    snprintf(done_path, sizeof done_path, "%s/done", fold_dir);
    // Done: trained to [run] total_timesteps. A larger total_timesteps resumes the fold from its
    // newest checkpoint.
    if (done_timesteps(done_path) >= cfg.run.total_timesteps) {
      fprintf(stderr, "walk-forward: fold %d (%d of %d) already done (%s): skipped\n", folds[i].index, i + 1, count,
              done_path);
      skipped++;
      continue;
    }
    walk_forward_overrides(&folds[i], date_buf, sets + opt->n_overrides);
    bool resume = train_run_latest_checkpoint(fold_dir, last_path, sizeof last_path);
    fprintf(stderr, "walk-forward: fold %d (%d of %d): %s, %s, %s, %s -> %s%s%s%s\n", folds[i].index, i + 1, count,
            sets[opt->n_overrides], sets[opt->n_overrides + 1], sets[opt->n_overrides + 2], sets[opt->n_overrides + 3],
            fold_dir, resume ? " (resuming from " : "", resume ? last_path + strlen(fold_dir) + 1 : "",
            resume ? ")" : "");
    TrainRunOptions fold_opt = *opt;
    fold_opt.overrides = sets;
    fold_opt.n_overrides = opt->n_overrides + 4;
    fold_opt.run_dir = fold_dir;
    fold_opt.resume = resume ? last_path : NULL;
    fold_opt.plan_only = false;
    fold_opt.in_walk_forward = true;
    TrainRunResult result;
    status = train_run(&fold_opt, &result);
    if (status != EXIT_OK) {
      fprintf(stderr, "ppo-train --walk-forward: fold %d (%s) failed with exit status %d\n", folds[i].index, fold_dir,
              status);
      break;
    }
    // Not finished: a signal or --iterations stopped it short, or a stop abandoned its last [eval]
    // pass (best.h5 would miss that iteration: the next run resumes the fold and evaluates it first).
    if (result.timesteps < cfg.run.total_timesteps || result.eval_pending) {
      fprintf(stderr,
              "ppo-train --walk-forward: stopped in fold %d at %lld of %lld steps%s (checkpoint %s); run the same "
              "ppo-train --walk-forward command again to continue\n",
              folds[i].index, (long long)result.timesteps, (long long)cfg.run.total_timesteps,
              result.eval_pending ? ", before its last evaluation pass" : "", result.last_checkpoint);
      free(sets);
      return EXIT_OK;
    }
    char line[64];
    snprintf(line, sizeof line, "timesteps %lld\n", (long long)result.timesteps);
    if (atomic_file_write_text(done_path, line) != 0) {
      fprintf(stderr, "ppo-train --walk-forward: %s\n", error_message());
      status = EXIT_RUNTIME;
    }
  }
  free(sets);
  if (status == EXIT_OK)
    fprintf(stderr, "walk-forward: %s %d fold%s done (%d skipped as already done); run directory %s\n",
            count == 1 ? "the" : "all", count, count == 1 ? "" : "s", skipped, run_dir);
  return status;
}

// The signal handlers cover the whole walk-forward, not only each fold's training: a SIGTERM while
// the market loads, the folds are planned or a fold's done file is written stops it with exit 0
// before the next fold, as one during a fold's training does after that fold's checkpoint.
int walk_forward_run(const TrainRunOptions *opt) {
  if (!opt->config_path) {
    fprintf(stderr, "ppo-train --walk-forward: needs CONFIG.ini\n");
    return EXIT_BAD_INPUT;
  }
  train_signals_begin();
  int status = walk_forward_body(opt);
  train_signals_end();
  return status;
}
