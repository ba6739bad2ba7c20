// ppo/metrics_log.c: metrics.csv and metrics.h5 (ppo/metrics_log.h).
#include "ppo/metrics_log.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/error.h"
#include "common/h5io.h"

// The fixed columns, in order; then trade/<field> per env metric, then eval/<metric>.
static const char *const fixed_columns[] = {
    "time/iterations",           "time/total_timesteps",   "time/fps",                   "time/time_elapsed",
    "time/rollout_s",            "time/gae_s",             "time/update_s",              "rollout/ep_rew_mean",
    "rollout/ep_len_mean",       "rollout/episodes",       "train/policy_gradient_loss", "train/value_loss",
    "train/entropy_loss",        "train/approx_kl",        "train/clip_fraction",        "train/loss",
    "train/explained_variance",  "train/learning_rate",    "train/clip_range",           "train/clip_range_vf",
    "train/n_updates",           "train/std",              "train/loss_scale",           "train/skipped_steps",
    "train/grad_norm",           "train/early_stopped",    "memory/host_mib",            "memory/device_mib",
};
#define N_FIXED ((int)(sizeof fixed_columns / sizeof fixed_columns[0]))

// The evaluation's metrics logged besides the one that picks best.h5.
static const char *const eval_columns[] = {"total_return", "cagr", "sharpe", "sortino", "max_drawdown", "calmar"};
#define N_EVAL ((int)(sizeof eval_columns / sizeof eval_columns[0]))
static double eval_value(const Metrics *m, int k) {
  const double v[N_EVAL] = {m->total_return, m->cagr, m->sharpe, m->sortino, m->max_drawdown, m->calmar};
  return v[k];
}

static void row_values(const MetricsLog *log, const TrainStats *s, const MetricsExtra *x, double *out) {
  double fixed[N_FIXED] = {
      (double)s->iteration,    (double)s->timesteps,  x->fps,           x->time_elapsed,
      s->rollout_s,            s->gae_s,              s->update_s,      s->ep_rew_mean,
      s->ep_len_mean,          (double)s->episodes,   s->policy_gradient_loss, s->value_loss,
      s->entropy_loss,         s->approx_kl,          s->clip_fraction, s->loss,
      s->explained_variance,   s->learning_rate,      s->clip_range,    s->clip_range_vf,
      (double)s->n_updates,    s->std,                s->loss_scale,    (double)s->skipped_steps,
      s->grad_norm,            (double)s->early_stopped, x->host_mib,   x->dev_mib,
  };
  memcpy(out, fixed, sizeof fixed);
  int c = N_FIXED;
  for (int k = 0; k < s->n_env_metrics; k++) out[c++] = s->env_metrics[k];
  if (c < log->n_columns) out[c++] = x->eval_metric;
  for (; c < log->n_columns; c++) {  // the other eval/ columns, by name (and old-only columns: NaN)
    const char *name = log->names[c] + 5;
    double v = NAN;
    if (x->eval && strncmp(log->names[c], "eval/", 5) == 0)
      for (int k = 0; k < N_EVAL; k++)
        if (strcmp(name, eval_columns[k]) == 0) v = eval_value(x->eval, k);
    out[c] = v;
  }
}

static int write_h5(const MetricsLog *log) {
  H5ioWriter w;
  if (h5io_create(&w, log->h5_path) != 0) return -1;
  double *col = malloc((size_t)(log->rows > 0 ? log->rows : 1) * sizeof(double));
  CHECK(col, "out of host memory (metrics column)");
  int rc = 0;
  hsize_t n = (hsize_t)log->rows;
  for (int c = 0; c < log->n_columns && rc == 0; c++) {
    for (int64_t r = 0; r < log->rows; r++) col[r] = log->table[r * log->n_columns + c];
    rc = h5io_write(w.file, log->names[c], H5IO_FLOAT64, 1, &n, col, H5IO_CHECKSUM);
  }
  free(col);
  if (rc == 0) rc = h5io_attr_write_string(w.file, "/", "source", "ppo-engine metrics: one row per iteration");
  if (rc == 0) return h5io_commit(&w);
  h5io_abort(&w);
  return -1;
}

static void write_csv_row(FILE *f, const double *row, int n) {
  for (int c = 0; c < n; c++) {
    if (c) fputc(',', f);
    if (isnan(row[c]))
      fputs("nan", f);  // one token for an undefined value: printf wrote "-nan" for a NaN of either sign
    else
      fprintf(f, "%.17g", row[c]);
  }
  fputc('\n', f);
}

// Reads the rows of an earlier metrics.csv with iteration <= keep, its columns matched by name.
static int read_old_rows(MetricsLog *log, int64_t keep) {
  FILE *f = fopen(log->csv_path, "r");
  if (!f) return 0;  // nothing logged before (a checkpoint copied elsewhere): start a fresh table
  log->resumed_csv = true;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len = getline(&line, &cap, f);
  // The old header's columns, matched to ours by name: a resumed run may log other columns ([eval]
  // switched on or off, another metric); old-only columns are kept (NaN in the new rows), new ones
  // are NaN in the old rows.
  int map[METRICS_MAX_COLUMNS], n_old = 0, rc = 0, n_ours = log->n_columns;
  if (len > 0 && line[len - 1] == '\n') {  // a header without its newline is torn: a cut name is no column
    line[--len] = '\0';
    for (char *name = strtok(line, ","); name; name = strtok(NULL, ",")) {
      if (n_old == METRICS_MAX_COLUMNS) {
        error_set("%s: more than %d columns; move it away to resume into this directory", log->csv_path,
                  METRICS_MAX_COLUMNS);
        rc = -1;
        break;
      }
      int c = 0;
      while (c < log->n_columns && strcmp(log->names[c], name) != 0) c++;
      if (c == log->n_columns) {
        if (log->n_columns == METRICS_MAX_COLUMNS || strlen(name) >= sizeof log->names[0]) {
          error_set("%s: column %s does not fit this run's table; move it away to resume into this directory",
                    log->csv_path, name);
          rc = -1;
          break;
        }
        snprintf(log->names[log->n_columns++], sizeof log->names[0], "%s", name);
      }
      map[n_old++] = c;
    }
  }
  if (log->n_columns != n_ours) {  // old-only columns were added: the table gets their width
    free(log->table);
    log->table = calloc((size_t)log->capacity * (size_t)log->n_columns, sizeof(double));
    CHECK(log->table, "out of host memory (metrics table)");  // no wider than metrics_log_bytes() allowed for
  }
  for (int64_t line_no = 2; rc == 0 && n_old > 0 && (len = getline(&line, &cap, f)) > 0; line_no++) {
    double *row = log->table + log->rows * log->n_columns;
    for (int c = 0; c < log->n_columns; c++) row[c] = NAN;
    char *p = line;
    int j = 0;
    for (; j < n_old; j++) {
      char *end;
      double v = strtod(p, &end);
      if (end == p) break;
      row[map[j]] = v;
      p = *end == ',' ? end + 1 : end;
    }
    // A torn last line (a crash mid-write, a partial copy) is dropped; one with rows after it is
    // damage, unless its iteration is past the resumed one (the resume drops those rows anyway).
    // The last line without its newline is torn too: cut inside its last field, it parses in full.
    if (j != n_old || line[len - 1] != '\n') {
      char *next = NULL;
      size_t next_cap = 0;
      if (!(row[0] > (double)keep) && getline(&next, &next_cap, f) > 0) {
        error_set("%s: line %lld: field %d (%s) is not a number, and rows follow; move it away to resume into this "
                  "directory",
                  log->csv_path, (long long)line_no, j + 1, log->names[map[j]]);
        rc = -1;
      }
      free(next);
      break;
    }
    if (row[0] > (double)keep) break;
    if (log->rows + 1 >= log->capacity) break;
    log->rows++;
  }
  free(line);
  fclose(f);
  return rc;
}

static int rewrite_csv(MetricsLog *log);

int64_t metrics_log_rows(int64_t total_iterations, int64_t start_iteration, int64_t log_every, int64_t eval_every) {
  // the multiples of log_every and of eval_every in (start, total], the last iteration, and a row
  // per earlier iteration (a multiple of both is counted twice: a bound, not the count)
  int64_t rows = start_iteration + total_iterations / log_every - start_iteration / log_every + 1;
  if (eval_every > 0) rows += total_iterations / eval_every - start_iteration / eval_every;
  return rows < total_iterations ? rows : total_iterations;
}

double metrics_log_bytes(int64_t rows) { return ((double)rows + 1.0) * METRICS_MAX_COLUMNS * sizeof(double); }

int metrics_log_open(MetricsLog *log, const char *run_dir, const TrainStats *stats, const char *eval_name,
                     int64_t capacity, int64_t keep_iterations) {
  memset(log, 0, sizeof *log);
  snprintf(log->csv_path, sizeof log->csv_path, "%s/metrics.csv", run_dir);
  snprintf(log->h5_path, sizeof log->h5_path, "%s/metrics.h5", run_dir);
  for (int c = 0; c < N_FIXED; c++) snprintf(log->names[log->n_columns++], sizeof log->names[0], "%s", fixed_columns[c]);
  for (int k = 0; k < stats->n_env_metrics && log->n_columns < METRICS_MAX_COLUMNS - 1; k++)
    snprintf(log->names[log->n_columns++], sizeof log->names[0], "trade/%s", stats->env_metric_names[k]);
  if (eval_name) {
    snprintf(log->names[log->n_columns++], sizeof log->names[0], "eval/%s", eval_name);
    for (int k = 0; k < N_EVAL && log->n_columns < METRICS_MAX_COLUMNS; k++)
      if (strcmp(eval_columns[k], eval_name) != 0)
        snprintf(log->names[log->n_columns++], sizeof log->names[0], "eval/%s", eval_columns[k]);
  }
  log->capacity = capacity + 1;
  log->table = calloc((size_t)log->capacity * (size_t)log->n_columns, sizeof(double));
  if (!log->table) {
    error_set("%s: the metrics table of %lld rows (%.1f MiB) does not fit in memory", log->csv_path,
              (long long)log->capacity, metrics_log_bytes(log->capacity) / 1048576.0);
    return -1;
  }
  if (keep_iterations >= 0) {  // resumed: the files stay as they are until the first new row
    if (read_old_rows(log, keep_iterations) != 0) {
      free(log->table);
      return METRICS_LOG_BAD_FILE;
    }
    return 0;
  }
  if (rewrite_csv(log) != 0) {
    free(log->table);
    return -1;
  }
  return 0;
}

// metrics.csv rewritten (atomically) with the header and the table's rows, then opened for appending.
static int rewrite_csv(MetricsLog *log) {
  AtomicFile af;
  if (!atomic_file_open(&af, log->csv_path)) return -1;
  for (int c = 0; c < log->n_columns; c++) fprintf(af.stream, c ? ",%s" : "%s", log->names[c]);
  fputc('\n', af.stream);
  for (int64_t r = 0; r < log->rows; r++) write_csv_row(af.stream, log->table + r * log->n_columns, log->n_columns);
  if (atomic_file_commit(&af) != 0) return -1;
  log->csv = fopen(log->csv_path, "a");
  if (!log->csv) {
    error_set("%s: cannot open for appending: %s", log->csv_path, strerror(errno));
    return -1;
  }
  return 0;
}

int metrics_log_append(MetricsLog *log, const TrainStats *stats, const MetricsExtra *extra) {
  CHECK(log->rows < log->capacity, "metrics table full: capacity was sized from total_timesteps");
  double *row = log->table + log->rows * log->n_columns;
  row_values(log, stats, extra, row);
  log->rows++;
  if (!log->csv) {  // a resumed run's first row: the kept rows and this one replace the file
    if (rewrite_csv(log) != 0) return -1;
  } else {
    write_csv_row(log->csv, row, log->n_columns);
    // Flushed and synced row by row, as metrics.h5 is: after a lost machine the file holds every
    // row before the checkpoint the run resumes from (a resume keeps those and never recomputes them).
    if (fflush(log->csv) != 0 || fsync(fileno(log->csv)) != 0) {
      error_set("%s: write failed: %s", log->csv_path, strerror(errno));
      return -1;
    }
  }
  return write_h5(log);
}

void metrics_log_set_eval(MetricsLog *log, int64_t iteration, const char *metric, double value, const Metrics *eval) {
  for (int64_t r = 0; r < log->rows; r++) {
    double *row = log->table + r * log->n_columns;
    if (row[0] != (double)iteration) continue;  // column 0: time/iterations
    for (int c = 0; c < log->n_columns; c++) {
      if (strncmp(log->names[c], "eval/", 5) != 0) continue;
      const char *name = log->names[c] + 5;
      if (strcmp(name, metric) == 0) row[c] = value;  // as row_values logs it
      else
        for (int k = 0; k < N_EVAL; k++)
          if (strcmp(name, eval_columns[k]) == 0) row[c] = eval_value(eval, k);
    }
  }
}

int metrics_log_settle(MetricsLog *log) {
  if (log->csv) return 0;
  if (rewrite_csv(log) != 0) return -1;
  return write_h5(log);
}

int64_t metrics_log_last_iteration(const MetricsLog *log) {
  return log->rows > 0 ? (int64_t)log->table[(log->rows - 1) * log->n_columns] : -1;  // column 0: time/iterations
}

void metrics_log_close(MetricsLog *log) {
  if (log->csv) fclose(log->csv);
  free(log->table);
  memset(log, 0, sizeof *log);
}
