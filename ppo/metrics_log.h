// ppo/metrics_log.h: the run's metrics table: one row per iteration with SB3's key names
// (PPO_SEMANTICS.md section 7), the engine's own and the env's episode metrics (trade/...), written
// as metrics.csv (appended and flushed row by row, so `tail -f` and a crash both see whole rows) and
// as the same table in metrics.h5 (one float64 dataset per column, the key's slash making the group:
// /train/value_loss; rewritten atomically after each row).
//
// The table is held in memory for metrics.h5, sized at open for the whole run (`capacity` rows),
// so appending never allocates. Resuming keeps the rows of the iterations up to the checkpoint's
// (read back from metrics.csv) and drops later ones, which the resumed run recomputes: both files
// are rewritten at the resumed run's first row or first checkpoint past the resumed iteration
// (metrics_log_settle), whichever comes first, not at open: a run resumed from an older checkpoint
// that ends before either (killed, stopped) leaves them as they were.
// Depends on ppo/trainer.h (TrainStats), common/h5io.h.
#ifndef PPO_METRICS_LOG_H
#define PPO_METRICS_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "envs/metrics.h"
#include "ppo/trainer.h"

#define METRICS_MAX_COLUMNS 64

typedef struct {
  char csv_path[1100], h5_path[1100];
  FILE *csv;  // NULL until a resumed run's first row (or metrics_log_settle) rewrites the file
  int n_columns;
  char names[METRICS_MAX_COLUMNS][48];  // "time/iterations", ...
  int64_t capacity, rows;
  double *table;     // (capacity, n_columns) row-major
  bool resumed_csv;  // resumed, and an earlier metrics.csv was there (its rows may still be none)
} MetricsLog;

// Extra values a row carries besides TrainStats (elapsed time, memory, evaluation).
typedef struct {
  double time_elapsed;       // seconds since the run (or the resumed run) started
  double fps;                // SB3's time/fps: steps since then over time_elapsed (not this iteration's rate)
  double host_mib, dev_mib;  // resident host memory, backend slabs
  double eval_metric;        // NaN when no evaluation ran at this iteration
  const Metrics *eval;       // that evaluation's metrics (eval/total_return, ...); NULL when none ran
} MetricsExtra;

// The rows a run logs from start_iteration (0: a fresh run) to total_iterations: every log_every-th
// iteration, every eval_every-th (an [eval] pass; 0: none) and the last, after at most one kept row
// per earlier iteration; the table's capacity.
int64_t metrics_log_rows(int64_t total_iterations, int64_t start_iteration, int64_t log_every, int64_t eval_every);
// The most bytes a table of `rows` rows can take (METRICS_MAX_COLUMNS doubles a row).
double metrics_log_bytes(int64_t rows);

#define METRICS_LOG_BAD_FILE (-2)  // metrics_log_open: the earlier metrics.csv cannot be resumed into

// Opens (creates, or with keep_iterations >= 0 resumes) the files in run_dir for rows shaped like
// `stats` (the env metric names), room for `capacity` rows (metrics_log_rows); eval_name non-NULL
// adds an eval/<name> column (the metric that picks best.h5) and eval/total_return, eval/cagr,
// eval/sharpe, eval/sortino, eval/max_drawdown, eval/calmar (the ones not already named). 0; -1 and
// the error message (writing, memory); METRICS_LOG_BAD_FILE and the message naming the earlier
// metrics.csv's column that does not fit.
int metrics_log_open(MetricsLog *log, const char *run_dir, const TrainStats *stats, const char *eval_name,
                     int64_t capacity, int64_t keep_iterations);
int metrics_log_append(MetricsLog *log, const TrainStats *stats, const MetricsExtra *extra);  // 0, or -1 + message
// A resumed run's files rewritten now with the rows kept so far, if no row has done it yet: before
// a checkpoint past the resumed iteration, which a later resume keeps the rows up to. 0, or -1 + message.
int metrics_log_settle(MetricsLog *log);
// Fills the eval/ columns of the kept row of `iteration` (a resumed run's evaluation of the
// iteration whose pass a stop abandoned); written with the next rewrite. Nothing when no such row.
// metric names the column that picks best.h5 (value: its value as logged, -inf for NaN).
void metrics_log_set_eval(MetricsLog *log, int64_t iteration, const char *metric, double value, const Metrics *eval);
// The iteration of the table's last row (a resumed run: the last kept one); -1 when there is none.
int64_t metrics_log_last_iteration(const MetricsLog *log);
void metrics_log_close(MetricsLog *log);

#endif
