// test/test_market_data.c: market-data loaders, validation, HDF5 files and the ppo-data program.
//
// Expected values come from outside the C code: data/README.md (row counts, date ranges, gap counts,
// spreads, first and last mid price) and test/make_market_fixtures.py (pandas/numpy checksums of
// every parsed column, in test/data/market_expected.inc). Broken inputs live in
// test/data/broken_csv/ with their expected line and message in `broken_cases` below.
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "common/error.h"
#include "common/h5io.h"
#include "common/time_utc.h"
#include "envs/market_data.h"
#include "test/h5_test_util.h"

#define DATA_DIR PPO_SOURCE_DIR "/data"
#define BROKEN_DIR PPO_SOURCE_DIR "/test/data/broken_csv"
#define PPO_DATA PPO_BIN_DIR "/ppo-data"

// --- helpers -------------------------------------------------------------------------------------

enum { N_COLUMNS = 13 };
static const char *const column_names[N_COLUMNS] = {"open",     "high",      "low",       "close",    "bid_open",
                                                    "bid_high", "bid_low",   "bid_close", "ask_open", "ask_high",
                                                    "ask_low",  "ask_close", "volume"};

static double *column(const MarketData *d, int c) {
  double *const columns[N_COLUMNS] = {d->open,     d->high,      d->low,       d->close,    d->bid_open,
                                      d->bid_high, d->bid_low,   d->bid_close, d->ask_open, d->ask_high,
                                      d->ask_low,  d->ask_close, d->volume};
  return columns[c];
}

// Neumaier's compensated sum: within an ulp or two of math.fsum for these columns.
static double sum_compensated(const double *x, int64_t n) {
  double s = 0, c = 0;
  for (int64_t i = 0; i < n; i++) {
    double t = s + x[i];
    c += fabs(s) >= fabs(x[i]) ? (s - t) + x[i] : (x[i] - t) + s;
    s = t;
  }
  return s + c;
}

static char *make_temp_dir(void) {
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char *dir = malloc(strlen(base) + 32);
  cr_assert(dir);
  sprintf(dir, "%s/ppo_market_XXXXXX", base);
  cr_assert(mkdtemp(dir), "mkdtemp failed in %s", base);
  return dir;
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert(d, "cannot list %s", dir);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static void remove_tree(const char *dir) {  // flat directories only (all this suite makes)
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

static void write_file(const char *path, const void *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert(f, "cannot write %s", path);
  cr_assert_eq(fwrite(bytes, 1, n, f), n);
  cr_assert_eq(fclose(f), 0);
}

// program_util.h's read_text, asserting that the file could be read.
static char *read_file_text(const char *path) {
  char *text = read_text(path, NULL);
  cr_assert(text, "cannot read %s", path);
  return text;
}

// Runs ppo-data with argv (NULL-terminated), stdout and stderr into the given files. Returns the
// exit status, or -1 when it did not exit normally (a crash).
static int run_ppo_data(char *const argv[], const char *out_path, const char *err_path) {
  pid_t pid = fork();
  cr_assert(pid >= 0, "fork failed");
  if (pid == 0) {
    int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) _exit(127);
    dup2(out, 1), dup2(err, 2);
    execv(PPO_DATA, argv);
    _exit(127);
  }
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Where a ppo-data run's stdout and stderr go (run_ppo_data): files in a directory of their own.
typedef struct {
  char *dir;
  char out[1024], err[1024];
} CliLogs;

static CliLogs cli_logs_open(void) {
  CliLogs logs;
  logs.dir = make_temp_dir();
  snprintf(logs.out, sizeof logs.out, "%s/stdout.txt", logs.dir);
  snprintf(logs.err, sizeof logs.err, "%s/stderr.txt", logs.dir);
  return logs;
}

static void cli_logs_close(CliLogs *logs) {
  remove_tree(logs->dir);
  free(logs->dir);
}

// "PATH:LINE:" at the start of msg; line 0 accepts any line number.
static bool message_names_line(const char *msg, const char *path, int line) {
  size_t n = strlen(path);
  if (strncmp(msg, path, n) != 0 || msg[n] != ':') return false;
  const char *p = msg + n + 1;
  if (line > 0) {
    char want[32];
    snprintf(want, sizeof want, "%d:", line);
    return strncmp(p, want, strlen(want)) == 0;
  }
  if (*p < '0' || *p > '9') return false;
  while (*p >= '0' && *p <= '9') p++;
  return *p == ':';
}

static void assert_same_data(const MarketData *a, const MarketData *b, const char *what) {
  cr_assert_eq(a->rows, b->rows, "%s: rows %lld vs %lld", what, (long long)a->rows, (long long)b->rows);
  cr_assert_eq(memcmp(a->ts, b->ts, (size_t)a->rows * sizeof *a->ts), 0, "%s: ts differ", what);
  for (int c = 0; c < N_COLUMNS; c++)
    cr_assert_eq(memcmp(column(a, c), column(b, c), (size_t)a->rows * sizeof(double)), 0, "%s: column %s differs", what,
                 column_names[c]);
  cr_assert_eq(a->has_bid_ask, b->has_bid_ask, "%s", what);
  cr_assert_eq(a->has_volume, b->has_volume, "%s", what);
  cr_assert_eq(a->bar_seconds, b->bar_seconds, "%s", what);
  cr_assert_str_eq(a->symbol, b->symbol, "%s", what);
  cr_assert_str_eq(a->timezone, b->timezone, "%s", what);
}

// --- the shipped files, against independently computed checksums ------------------------------------

typedef struct {
  const char *file, *layout;
  int64_t rows, first, last, ts_sum;
  bool has_bid_ask, has_volume;
  int64_t bar_seconds, gaps, weekend, other;
  double sums[N_COLUMNS];
} Expected;

static const Expected expected[] = {
#include "data/market_expected.inc"
};
enum { N_EXPECTED = sizeof expected / sizeof expected[0] };

static void check_against_expected(const MarketData *d, const Expected *e, const char *how) {
  cr_assert_eq(d->rows, e->rows, "%s %s: rows %lld, expected %lld", e->file, how, (long long)d->rows,
               (long long)e->rows);
  cr_assert_eq(d->ts[0], e->first, "%s %s: first ts", e->file, how);
  cr_assert_eq(d->ts[d->rows - 1], e->last, "%s %s: last ts", e->file, how);
  int64_t ts_sum = 0;
  for (int64_t i = 0; i < d->rows; i++) ts_sum += d->ts[i];
  cr_assert_eq(ts_sum, e->ts_sum, "%s %s: sum of ts %lld, expected %lld", e->file, how, (long long)ts_sum,
               (long long)e->ts_sum);
  cr_assert_eq(d->has_bid_ask, e->has_bid_ask, "%s %s", e->file, how);
  cr_assert_eq(d->has_volume, e->has_volume, "%s %s", e->file, how);
  cr_assert_eq(d->bar_seconds, e->bar_seconds, "%s %s: bar_seconds", e->file, how);
  cr_assert_str_eq(d->source_format, e->layout, "%s %s", e->file, how);
  for (int c = 0; c < N_COLUMNS; c++) {
    const double *x = column(d, c);
    if (isnan(e->sums[c])) {
      for (int64_t i = 0; i < d->rows; i++)
        cr_assert(isnan(x[i]), "%s %s: column %s row %lld = %g, expected NaN (absent)", e->file, how, column_names[c],
                  (long long)i, x[i]);
      continue;
    }
    double got = sum_compensated(x, d->rows);
    cr_assert(fabs(got - e->sums[c]) <= 1e-12 * fabs(e->sums[c]), "%s %s: sum of %s = %.17g, expected %.17g", e->file,
              how, column_names[c], got, e->sums[c]);
  }
  MarketGaps gaps = market_data_gaps(d);
  cr_assert_eq(gaps.count, e->gaps, "%s %s: gaps", e->file, how);
  cr_assert_eq(gaps.weekend, e->weekend, "%s %s: weekend gaps", e->file, how);
  cr_assert_eq(gaps.other, e->other, "%s %s: other gaps", e->file, how);
}

Test(market_data, shipped_csv_every_loader_matches_checksums) {
  cr_assert_eq(N_EXPECTED, 5);
  for (int k = 0; k < N_EXPECTED; k++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/csv/%s", DATA_DIR, expected[k].file);
    MarketFormat format;
    cr_assert_eq(market_format_parse(expected[k].layout, &format), 0);
    MarketData *forced = market_data_load_csv(path, format);
    cr_assert(forced, "%s", error_message());
    check_against_expected(forced, &expected[k], "(forced layout)");
    MarketData *detected = market_data_load(path);
    cr_assert(detected, "%s", error_message());
    check_against_expected(detected, &expected[k], "(auto)");
    market_data_free(forced);
    market_data_free(detected);
  }
}

// The figures of data/README.md (not computed by us).
typedef struct {
  const char *file;
  int64_t rows;
  const char *first, *last;
} ReadmeFacts;

Test(market_data, shipped_csv_match_data_readme) {
  static const ReadmeFacts facts[] = {
      {"XAUUSD_OANDA_1H_BIDASK.csv.gz", 76499, "2006-03-20 00:00", "2019-02-25 23:00"},
      {"EURUSD_OANDA_1H_BIDASK.csv.gz", 74439, "2007-01-01 21:00", "2018-12-31 21:00"},
      {"SPY_1D_LEAN.csv.gz", 5849, "1998-01-02 00:00", "2021-03-31 00:00"},
      {"FOREX_EURUSD_1H_ASK.csv.gz", 6225, "2017-01-01 22:00", "2017-12-29 21:00"},
      {"STOCKS_GOOGL.csv.gz", 2335, "2009-05-22 00:00", "2018-08-29 00:00"},
  };
  for (size_t k = 0; k < sizeof facts / sizeof facts[0]; k++) {
    char path[1024], first[40], last[40];
    snprintf(path, sizeof path, "%s/csv/%s", DATA_DIR, facts[k].file);
    MarketData *d = market_data_load_csv(path, MARKET_FORMAT_AUTO);
    cr_assert(d, "%s", error_message());
    cr_expect_eq(d->rows, facts[k].rows, "%s: %lld rows", facts[k].file, (long long)d->rows);
    cr_expect_str_eq(market_time_format(d->ts[0], first, sizeof first), facts[k].first, "%s", facts[k].file);
    cr_expect_str_eq(market_time_format(d->ts[d->rows - 1], last, sizeof last), facts[k].last, "%s", facts[k].file);
    MarketGaps gaps = market_data_gaps(d);
    if (k == 0) {  // XAUUSD: 677 weekend gaps, 847 short intraday gaps; spread p50 2.8 bp; mid 555.45 -> 1327.6
      cr_expect_eq(gaps.weekend, 677);
      cr_expect_eq(gaps.other, 847);
      cr_expect(fabs(market_data_median_spread_bp(d) - 2.8) < 0.05, "spread %g", market_data_median_spread_bp(d));
      cr_expect(fabs(d->close[0] - 555.45) < 1e-9, "first mid %.17g", d->close[0]);
      cr_expect(fabs(d->close[d->rows - 1] - 1327.6) < 0.05, "last mid %.17g", d->close[d->rows - 1]);
    }
    if (k == 1) {  // EURUSD: 628 weekend gaps, 13 other; spread p50 1.0 bp
      cr_expect_eq(gaps.weekend, 628);
      cr_expect_eq(gaps.other, 13);
      cr_expect(fabs(market_data_median_spread_bp(d) - 1.0) < 0.05, "spread %g", market_data_median_spread_bp(d));
    }
    if (k == 2) cr_expect(fabs(d->open[0] - 97.31) < 1e-12, "973100 deci-cents = $97.31, got %.17g", d->open[0]);
    if (k == 3) {  // forex-v0: 48 weekend gaps of 49 h
      int n49 = 0;
      for (int64_t i = 1; i < d->rows; i++) n49 += d->ts[i] - d->ts[i - 1] == 49 * 3600;
      cr_expect_eq(n49, 48);
      cr_expect(isnan(market_data_median_spread_bp(d)));
    }
    cr_expect_eq(d->bar_seconds, k == 2 || k == 4 ? 86400 : 3600);
    market_data_free(d);
  }
}

Test(market_data, shipped_h5_equal_fresh_import_and_round_trip) {
  static const struct {
    const char *h5, *csv, *symbol, *timezone;
  } shipped[] = {
      {"XAUUSD_1H.h5", "XAUUSD_OANDA_1H_BIDASK.csv.gz", "XAUUSD", "UTC"},
      {"EURUSD_1H.h5", "EURUSD_OANDA_1H_BIDASK.csv.gz", "EURUSD", "UTC"},
      {"SPY_1D.h5", "SPY_1D_LEAN.csv.gz", "SPY", "America/New_York"},
  };
  char *dir = make_temp_dir();
  for (size_t k = 0; k < sizeof shipped / sizeof shipped[0]; k++) {
    char h5_path[1024], csv_path[1024], copy_path[1024];
    snprintf(h5_path, sizeof h5_path, "%s/%s", DATA_DIR, shipped[k].h5);
    snprintf(csv_path, sizeof csv_path, "%s/csv/%s", DATA_DIR, shipped[k].csv);
    snprintf(copy_path, sizeof copy_path, "%s/%s", dir, shipped[k].h5);
    MarketData *from_h5 = market_data_load_h5(h5_path);
    cr_assert(from_h5, "%s", error_message());
    MarketData *from_csv = market_data_load_csv(csv_path, MARKET_FORMAT_AUTO);
    cr_assert(from_csv, "%s", error_message());
    strcpy(from_csv->timezone, shipped[k].timezone);
    cr_assert_str_eq(from_h5->symbol, shipped[k].symbol);
    cr_assert_str_eq(from_h5->timezone, shipped[k].timezone);
    cr_assert_str_eq(from_h5->source, shipped[k].csv);
    assert_same_data(from_h5, from_csv, shipped[k].h5);
    cr_assert_eq(market_data_save_h5(from_csv, copy_path), 0, "%s", error_message());
    MarketData *again = market_data_load(copy_path);  // by signature
    cr_assert(again, "%s", error_message());
    assert_same_data(again, from_csv, "round trip");
    cr_assert_str_eq(again->source, from_csv->source);
    cr_assert_str_eq(again->source_format, from_csv->source_format);
    market_data_free(from_h5);
    market_data_free(from_csv);
    market_data_free(again);
  }
  cr_assert_eq(count_entries(dir), 3, "only the three saved files (no temporary files left)");
  remove_tree(dir);
  free(dir);
}

// --- the broken corpus ----------------------------------------------------------------------------------

typedef struct {
  const char *file;
  const char *format;  // --format
  int line;            // 0: any line (where zlib notices a cut stream)
  const char *fragment;
} BrokenCase;

static const BrokenCase broken_cases[] = {
    {"empty.csv", "auto", 1, "empty file"},
    {"blank_lines_only.csv", "auto", 3, "empty file"},
    {"header_only.csv", "auto", 1, "no data rows"},
    {"unknown_column.csv", "auto", 1, "unknown column 'Turnover' (column 6) (recognised, case-insensitive: time|date"},
    {"no_time_column.csv", "auto", 1, "no time column"},
    {"duplicate_column.csv", "auto", 1, "column 'open' (column 3) repeats column 2"},
    {"partial_bid_ask.csv", "auto", 1, "missing columns ask_high, ask_low, ask_close"},
    {"mid_and_bid_ask.csv", "auto", 1, "give one or the other"},
    {"lean_quote_missing_column.csv", "auto", 3, "10 columns, expected 11 (lean-quote"},
    {"lean_quote_extra_column.csv", "auto", 2, "12 columns, expected 11"},
    {"lean_wrong_column_count.csv", "auto", 1, "8 columns, expected 11 (lean-quote"},
    {"lean_equity_as_quote.csv", "lean-quote", 1, "6 columns, expected 11"},
    {"csv_missing_column.csv", "auto", 3, "6 columns, expected 7 (csv, as named by the header on line 1)"},
    {"lean_bad_number.csv", "auto", 3, "column bid_high = '55x.6': not a number (allowed: "},
    {"nan_price.csv", "auto", 3, "column Close = 'nan': not a number"},
    {"overflow_price.csv", "csv", 4, "column High = '1e999': out of range"},
    {"negative_price.csv", "lean-quote", 2, "column ask_low = '-556.7': prices must be positive"},
    {"zero_price.csv", "auto", 2, "column open = '0': prices must be positive"},
    {"negative_volume.csv", "lean-equity", 2, "column volume = '-5': must not be negative"},
    {"empty_field.csv", "auto", 2, "column bid_open = '': empty"},
    {"bad_timestamp.csv", "auto", 2, "column time = '2006032 01:00': not a timestamp (allowed: YYYYMMDD HH:MM)"},
    {"impossible_date_iso.csv", "auto", 3, "column Date = '2019-02-30': no such date"},
    {"impossible_time_lean.csv", "auto", 2, "column time = '20060320 24:00': no such date"},
    {"subsecond.csv", "auto", 4, "fractions of a second are not supported"},
    {"crlf_bad_value.csv", "auto", 3, "column High = '1.05426.1': not a number"},
    {"duplicate_timestamp.csv", "auto", 3, "duplicate timestamp 2006-03-20 01:00 (also on line 2)"},
    {"decreasing_timestamp.csv", "auto", 3, "timestamp 2006-03-20 01:00 is before 2006-03-20 02:00 on line 2"},
    {"bid_low_above_open.csv", "auto", 2, "bid open 554.2 < low 554.3"},
    {"ask_close_above_high.csv", "auto", 4, "ask close 557.5 > high 557.4"},
    {"low_above_high.csv", "auto", 3, "price low 203 > high 202.702698"},
    {"ask_below_bid_open.csv", "auto", 2, "ask_open 554.1 < bid_open 554.2 (need ask >= bid)"},
    {"ask_below_bid_close.csv", "auto", 2, "ask_close 1.14 < bid_close 1.15 (need ask >= bid)"},
    {"unknown_format.csv", "auto", 1, "unknown format: the first field '1.5'"},
    {"nul_byte.csv", "auto", 2, "NUL byte"},
    {"truncated.csv.gz", "auto", 0, "cannot read: unexpected end of file"},
    {"lean_equity_decimal.csv", "auto", 1, "column open = '100.000000': lean-equity prices are whole numbers"},
};
enum { N_BROKEN = sizeof broken_cases / sizeof broken_cases[0] };

Test(market_data, broken_corpus_rejected_with_line) {
  cr_assert_eq(count_entries(BROKEN_DIR), N_BROKEN, "every file in test/data/broken_csv has a row in broken_cases");
  for (int k = 0; k < N_BROKEN; k++) {
    const BrokenCase *b = &broken_cases[k];
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", BROKEN_DIR, b->file);
    MarketFormat format;
    cr_assert_eq(market_format_parse(b->format, &format), 0);
    error_clear();
    MarketData *d = market_data_load_csv(path, format);
    cr_expect_null(d, "%s was accepted", b->file);
    market_data_free(d);
    const char *msg = error_message();
    cr_expect(message_names_line(msg, path, b->line), "%s: expected line %d, got: %s", b->file, b->line, msg);
    cr_expect(strstr(msg, b->fragment), "%s: expected '%s' in: %s", b->file, b->fragment, msg);
  }
}

Test(market_data, broken_corpus_through_ppo_data_import) {
  char *out_dir = make_temp_dir();
  CliLogs logs = cli_logs_open();
  char out_h5[1024];
  snprintf(out_h5, sizeof out_h5, "%s/out.h5", out_dir);
  for (int k = 0; k < N_BROKEN; k++) {
    const BrokenCase *b = &broken_cases[k];
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", BROKEN_DIR, b->file);
    char *argv[] = {"ppo-data", "import", path, out_h5, "--format", (char *)b->format, NULL};
    int status = run_ppo_data(argv, logs.out, logs.err);
    cr_expect_eq(status, 2, "%s: exit status %d, expected 2", b->file, status);
    cr_expect_eq(count_entries(out_dir), 0, "%s: something was left in the output directory", b->file);
    char *err = read_file_text(logs.err);
    char want[1100];
    snprintf(want, sizeof want, "ppo-data: %s:", path);
    cr_expect(strncmp(err, want, strlen(want)) == 0 && message_names_line(err + 10, path, b->line), "%s: stderr: %s",
              b->file, err);
    cr_expect(strstr(err, b->fragment), "%s: expected '%s' in stderr: %s", b->file, b->fragment, err);
    free(err);
  }
  remove_tree(out_dir), cli_logs_close(&logs);
  free(out_dir);
}

// --- ppo-data on good input and bad usage ---------------------------------------------------------------

Test(market_data, ppo_data_import_info_and_usage) {
  char *dir = make_temp_dir();
  CliLogs logs = cli_logs_open();
  char out_h5[1024], csv[1024], h5[1024];
  snprintf(out_h5, sizeof out_h5, "%s/googl.h5", dir);
  snprintf(csv, sizeof csv, "%s/csv/STOCKS_GOOGL.csv.gz", DATA_DIR);
  snprintf(h5, sizeof h5, "%s/XAUUSD_1H.h5", DATA_DIR);

  char *import_argv[] = {"ppo-data", "import", csv, out_h5, "--timezone", "America/New_York", NULL};
  cr_assert_eq(run_ppo_data(import_argv, logs.out, logs.err), 0);
  char *out = read_file_text(logs.out);
  cr_expect(strstr(out, "GOOGL, 2335 bars 2009-05-22 00:00 .. 2018-08-29 00:00 (America/New_York)"), "%s", out);
  free(out);
  cr_expect_eq(count_entries(dir), 1);
  MarketData *d = market_data_load_h5(out_h5);
  cr_assert(d, "%s", error_message());
  cr_expect_str_eq(d->symbol, "GOOGL");
  cr_expect_str_eq(d->timezone, "America/New_York");
  market_data_free(d);

  // options take "--opt VALUE" or "--opt=VALUE", as in ppo-train and ppo-eval (apps/cli.h)
  char *symbol_argv[] = {"ppo-data", "import", csv, out_h5, "--symbol=GOOG.A", "--format", "csv", NULL};
  cr_assert_eq(run_ppo_data(symbol_argv, logs.out, logs.err), 0);
  d = market_data_load_h5(out_h5);
  cr_assert(d, "%s", error_message());
  cr_expect_str_eq(d->symbol, "GOOG.A");
  market_data_free(d);

  char *info_argv[] = {"ppo-data", "info", h5, NULL};
  cr_assert_eq(run_ppo_data(info_argv, logs.out, logs.err), 0);
  out = read_file_text(logs.out);
  cr_expect(strstr(out, "rows           76499"), "%s", out);
  cr_expect(strstr(out, "gaps           1524 (weekend 677, other 847)"), "%s", out);
  cr_expect(strstr(out, "median spread  2.8"), "%s", out);
  free(out);
  char *info_csv_argv[] = {"ppo-data", "info", csv, NULL};
  cr_assert_eq(run_ppo_data(info_csv_argv, logs.out, logs.err), 0);

  char *help_argv[] = {"ppo-data", "--help", NULL};
  cr_expect_eq(run_ppo_data(help_argv, logs.out, logs.err), 0);
  out = read_file_text(logs.out);
  cr_expect(strstr(out, "usage: ppo-data import"), "%s", out);
  free(out);

  char *bad[][8] = {
      {"ppo-data", NULL},
      {"ppo-data", "convert", NULL},
      {"ppo-data", "import", csv, NULL},
      {"ppo-data", "import", csv, out_h5, "--format", "json", NULL},
      {"ppo-data", "import", csv, out_h5, "--format", NULL},
      {"ppo-data", "import", csv, out_h5, "--format=", NULL},
      {"ppo-data", "import", csv, out_h5, "--formats=csv", NULL},
      {"ppo-data", "import", csv, out_h5, "--frobnicate", NULL},
      {"ppo-data", "import", csv, out_h5, "--symbol", "bad symbol", NULL},
      {"ppo-data", "import", out_h5, out_h5, NULL},  // onto its own input (the file made above)
      {"ppo-data", "info", NULL},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    cr_expect_eq(run_ppo_data(bad[k], logs.out, logs.err), 2, "usage case %zu", k);
    char *err = read_file_text(logs.err);
    cr_expect(strstr(err, "usage: ppo-data"), "usage case %zu: %s", k, err);
    free(err);
  }
  // bad data in an HDF5 file given to info, and a missing file
  char missing[1024];
  snprintf(missing, sizeof missing, "%s/no_such.csv", dir);
  char *missing_argv[] = {"ppo-data", "info", missing, NULL};
  cr_expect_eq(run_ppo_data(missing_argv, logs.out, logs.err), 2);
  char *err = read_file_text(logs.err);
  cr_expect(strstr(err, "no_such.csv: cannot open"), "%s", err);
  free(err);
  // the output directory does not exist: a user error, nothing created
  char nowhere[1024];
  snprintf(nowhere, sizeof nowhere, "%s/missing_dir/out.h5", dir);
  char *nowhere_argv[] = {"ppo-data", "import", csv, nowhere, NULL};
  cr_expect_eq(run_ppo_data(nowhere_argv, logs.out, logs.err), 2);
  cr_expect_eq(count_entries(dir), 1);
  remove_tree(dir), cli_logs_close(&logs);
  free(dir);
}

// A market file's string attributes are any bytes the file holds: info prints the ones not held to
// a character set at load (source, source_format, timezone; the symbol is) with control characters
// escaped, so that a crafted file cannot put a line of its own or an escape sequence on the
// terminal (they were printed as they were). Other UTF-8 characters stay as they are.
Test(market_data, ppo_data_info_escapes_control_characters_in_attributes) {
  char *dir = make_temp_dir();
  CliLogs logs = cli_logs_open();
  char spy[1024], h5[1024];
  snprintf(spy, sizeof spy, "%s/SPY_1D.h5", DATA_DIR);
  snprintf(h5, sizeof h5, "%s/crafted.h5", dir);
  MarketData *d = market_data_load_h5(spy);
  cr_assert(d, "%s", error_message());
  // A forged line, colours, a bell, DEL, a lone byte that is not UTF-8, a backslash; CSI as the C1
  // character U+009B (0xc2 0x9b), a clear screen on a terminal that honours it; and an e acute.
  snprintf(d->source, sizeof d->source, "%s", "spy.csv\nsymbol         EVIL\x1b[31m\xff");
  snprintf(d->source_format, sizeof d->source_format, "%s", "csv\r\a\x7f\\x41");
  snprintf(d->timezone, sizeof d->timezone, "%s",
           "UTC\t\xc2\x9b"
           "2J caf\xc3\xa9");
  cr_assert_eq(market_data_save_h5(d, h5), 0, "%s", error_message());
  market_data_free(d);
  char *info_argv[] = {"ppo-data", "info", h5, NULL};
  cr_assert_eq(run_ppo_data(info_argv, logs.out, logs.err), 0);
  char *out = read_file_text(logs.out);
  cr_expect(strstr(out, "\nsymbol         SPY\n"), "%s", out);
  cr_expect(strstr(out, "\nsource         spy.csv\\nsymbol         EVIL\\x1b[31m\\xff (csv\\r\\x07\\x7f\\\\x41)\n"),
            "%s", out);
  cr_expect(strstr(out, "\ntimezone       UTC\\t\\xc2\\x9b2J caf\xc3\xa9\n"), "%s", out);
  int symbol_lines = 0;
  for (const char *p = out; *p; p++) {
    cr_expect((unsigned char)*p >= 0x20 || *p == '\n', "a control character 0x%02x in: %s", (unsigned char)*p, out);
    if (strncmp(p, "symbol ", 7) == 0 && (p == out || p[-1] == '\n')) symbol_lines++;
  }
  cr_expect_eq(symbol_lines, 1, "%s", out);
  free(out);
  remove_tree(dir), cli_logs_close(&logs);
  free(dir);
}

// local_zone: a wall clock with daylight saving to UTC (the zone database, tzdata, is required on
// Debian): the repeated autumn hour told apart by order, hourly and by the minute; the skipped
// spring hour refused; a zone without daylight saving; TZ as it was after the load.
Test(market_data, local_time_converted_to_utc) {
  char *dir = make_temp_dir(), path[1024];
  setenv("TZ", "Asia/Kolkata", 1);
  MarketCsvOptions options = market_csv_options_default();
  options.local_zone = "America/New_York";
  MarketCsvSummary summary;
  // 2022-11-06: EDT (UTC-4) until 02:00 local, then EST (UTC-5): 01:00 comes twice
  const char *fall =
      "time,open,high,low,close\n2022-11-06 00:00,1,2,0.5,1.5\n2022-11-06 01:00,1,2,0.5,1.5\n"
      "2022-11-06 01:00,1,2,0.5,1.4\n2022-11-06 02:00,1,2,0.5,1.5\n";
  snprintf(path, sizeof path, "%s/fall.csv", dir);
  write_file(path, fall, strlen(fall));
  MarketData *d = market_data_load_csv_with(path, &options, &summary);
  cr_assert(d, "%s", error_message());
  const int64_t four_utc = 1667707200;  // 2022-11-06 04:00 UTC = 00:00 EDT
  for (int i = 0; i < 4; i++) cr_expect_eq(d->ts[i], four_utc + 3600 * i, "row %d", i);
  cr_expect_eq(summary.repeated_hours, 1);
  market_data_free(d);
  cr_expect_str_eq(getenv("TZ"), "Asia/Kolkata", "TZ is restored");

  const char *minutes =
      "time,open,high,low,close\n2022-11-06 01:58,1,2,0.5,1.5\n2022-11-06 01:59,1,2,0.5,1.5\n"
      "2022-11-06 01:00,1,2,0.5,1.5\n2022-11-06 01:01,1,2,0.5,1.5\n";
  snprintf(path, sizeof path, "%s/minutes.csv", dir);
  write_file(path, minutes, strlen(minutes));
  d = market_data_load_csv_with(path, &options, &summary);
  cr_assert(d, "%s", error_message());
  for (int i = 0; i < 4; i++) cr_expect_eq(d->ts[i], four_utc + 3600 + 58 * 60 + 60 * i, "row %d", i);
  cr_expect_eq(summary.repeated_hours, 2);
  market_data_free(d);

  const char *spring = "time,open,high,low,close\n2022-03-13 01:30,1,2,0.5,1.5\n2022-03-13 02:30,1,2,0.5,1.5\n";
  snprintf(path, sizeof path, "%s/spring.csv", dir);
  write_file(path, spring, strlen(spring));
  cr_expect_null(market_data_load_csv_with(path, &options, NULL));
  cr_expect(strstr(error_message(), "spring.csv:3: 2022-03-13 02:30 does not exist in America/New_York"), "%s",
            error_message());

  options.local_zone = "Asia/Tokyo";  // UTC+9 all year
  d = market_data_load_csv_with(path, &options, &summary);
  cr_assert(d, "%s", error_message());
  cr_expect(d->ts[0] == 1647135000 - 9 * 3600 && d->ts[1] == d->ts[0] + 3600);  // 1647135000: 2022-03-13 01:30 UTC
  cr_expect_eq(summary.repeated_hours, 0);
  market_data_free(d);

  // Times that are instants already (an offset, Unix time) or dates alone are not wall-clock times of day.
  options.local_zone = "America/New_York";
  static const char *const not_wall[][2] = {
      {"offset.csv", "time,open,high,low,close\n2024-01-02T09:30:00-05:00,1,2,0.5,1.5\n"},
      {"unix.csv", "time,open,high,low,close\n1704205800,1,2,0.5,1.5\n"},
      {"daily.csv", "date,open,high,low,close\n2024-03-29,1,2,0.5,1.5\n"},
  };
  for (int k = 0; k < 3; k++) {
    char file[1024];
    snprintf(file, sizeof file, "%s/%s", dir, not_wall[k][0]);
    write_file(file, not_wall[k][1], strlen(not_wall[k][1]));
    cr_expect_null(market_data_load_csv_with(file, &options, NULL), "%s", not_wall[k][0]);
    cr_expect(strstr(error_message(), ":2: ") && strstr(error_message(), "--to-utc converts wall-clock times of day") &&
                  strstr(error_message(), k < 2 ? "UTC already" : "a date without a time of day"),
              "%s", error_message());
  }
  // An exact repeat inside the repeated hour is dropped before its conversion (it would read as the
  // second pass, and every first-pass row after it as out of order).
  const char *repeat =
      "time,open,high,low,close\n2022-11-06 01:00,1,2,0.5,1.5\n2022-11-06 01:01,1,2,0.5,1.5\n"
      "2022-11-06 01:01,1,2,0.5,1.5\n2022-11-06 01:02,1,2,0.5,1.5\n2022-11-06 01:00,1,2,0.5,1.4\n";
  snprintf(path, sizeof path, "%s/repeat.csv", dir);
  write_file(path, repeat, strlen(repeat));
  options.drop_duplicates = true;
  d = market_data_load_csv_with(path, &options, &summary);
  cr_assert(d, "%s", error_message());
  cr_expect(d->rows == 4 && summary.duplicate_rows == 1 && summary.repeated_hours == 1 && summary.ambiguous_rows == 4);
  cr_expect(d->ts[0] == four_utc + 3600 && d->ts[2] == four_utc + 3600 + 120 && d->ts[3] == four_utc + 7200);
  market_data_free(d);
  options.drop_duplicates = false;
  // The repeated hour's rows with no step back: all read as its first pass, counted for a warning.
  const char *one_pass = "time,open,high,low,close\n2022-11-06 00:30,1,2,0.5,1.5\n2022-11-06 01:30,1,2,0.5,1.5\n";
  snprintf(path, sizeof path, "%s/one_pass.csv", dir);
  write_file(path, one_pass, strlen(one_pass));
  d = market_data_load_csv_with(path, &options, &summary);
  cr_assert(d, "%s", error_message());
  cr_expect(summary.ambiguous_rows == 1 && summary.repeated_hours == 0 && d->ts[1] == d->ts[0] + 3600);
  market_data_free(d);
  // mktime's -1 is a time like any other: 1970-01-01 08:59:59 in Tokyo
  options.local_zone = "Asia/Tokyo";
  const char *epoch = "time,open,high,low,close\n1970-01-01 08:59:59,1,2,0.5,1.5\n";
  snprintf(path, sizeof path, "%s/epoch.csv", dir);
  write_file(path, epoch, strlen(epoch));
  d = market_data_load_csv_with(path, &options, &summary);
  cr_assert(d, "%s", error_message());
  cr_expect_eq(d->ts[0], -1);
  market_data_free(d);

  static const char *const not_zones[] = {"Mars/Olympus", "America", "../zoneinfo/UTC", "right/UTC", "zone.tab"};
  for (int k = 0; k < 5; k++) {
    options.local_zone = not_zones[k];
    cr_expect_null(market_data_load_csv_with(path, &options, NULL));
    cr_expect(strstr(error_message(), "cannot convert from the time zone") && strstr(error_message(), not_zones[k]),
              "%s", error_message());
  }
  options.local_zone = "America/New_York";
  options.sort = true;
  cr_expect_null(market_data_load_csv_with(path, &options, NULL));
  cr_expect(strstr(error_message(), "needs the rows oldest first"), "%s", error_message());
  cr_expect_str_eq(getenv("TZ"), "Asia/Kolkata");
  unsetenv("TZ");
  remove_tree(dir);
  free(dir);
}

// --timezone Etc/GMT+2 is UTC-2 (POSIX's sign): warned of, with the zone a broker's "GMT+2" means;
// the conversion still follows the zone database. A named zone gets no such warning.
Test(market_data, ppo_data_warns_of_the_posix_sign_of_etc_gmt_zones) {
  char *dir = make_temp_dir();
  CliLogs logs = cli_logs_open();
  char csv[1024], h5[1024];
  snprintf(csv, sizeof csv, "%s/SRV.csv", dir);
  const char *text = "time,open,high,low,close\n2019-01-02 00:00,1,1,1,1\n2019-01-02 01:00,1,1,1,1\n";
  write_file(csv, text, strlen(text));
  static const char *const zones[][2] = {{"Etc/GMT+2", "--timezone Etc/GMT+2 is UTC-2, 2 hours behind UTC"},
                                         {"Etc/GMT-3", "--timezone Etc/GMT-3 is UTC+3, 3 hours ahead of UTC"},
                                         {"Europe/Berlin", NULL}};
  const int64_t first_utc[3] = {1546394400, 1546376400, 1546383600};  // 02:00, 21:00 the day before, 23:00
  for (int k = 0; k < 3; k++) {
    snprintf(h5, sizeof h5, "%s/srv%d.h5", dir, k);
    char *argv[] = {"ppo-data", "import", csv, h5, "--timezone", (char *)zones[k][0], "--to-utc", NULL};
    cr_assert_eq(run_ppo_data(argv, logs.out, logs.err), 0);
    char *err = read_file_text(logs.err);
    if (zones[k][1])
      cr_expect(strstr(err, zones[k][1]) && strstr(err, k == 0 ? "is Etc/GMT-2" : "is Etc/GMT+3"), "%s", err);
    else
      cr_expect(!strstr(err, "POSIX"), "%s", err);
    free(err);
    MarketData *d = market_data_load_h5(h5);
    cr_assert(d, "%s", error_message());
    cr_expect_eq(d->ts[0], first_utc[k], "%s", zones[k][0]);
    market_data_free(d);
  }
  remove_tree(dir), cli_logs_close(&logs);
  free(dir);
}

// ppo-data import's flags reach the loader, it says what they did, and it warns of a one-bar move
// no market makes; info prints the close's range and largest move.
Test(market_data, ppo_data_import_options_summary_and_warning) {
  char *dir = make_temp_dir();
  CliLogs logs = cli_logs_open();
  char csv[1024], h5[1024];
  snprintf(csv, sizeof csv, "%s/ACME.csv", dir);
  snprintf(h5, sizeof h5, "%s/acme.h5", dir);
  const char *text =
      "Date,Open,High,Low,Close,Adj Close,Volume,Turnover\n"
      "2024-01-04,102,106,100,104,52,11,1\n"
      "2024-01-03,null,null,null,null,null,null,null\n"
      "2024-01-02,100,104,98,102,51,10,1\n"
      "2024-01-02,100,104,98,102,51,10,1\n"
      "2024-01-05,52,53,51,52.5,52.5,30,1\n";
  write_file(csv, text, strlen(text));
  char *argv[] = {"ppo-data",          "import",           csv,        h5,  "--skip-null-rows", "--sort",
                  "--drop-duplicates", "--ignore-columns", "turnover", NULL};
  cr_assert_eq(run_ppo_data(argv, logs.out, logs.err), 0);
  char *out = read_file_text(logs.out), *err = read_file_text(logs.err);
  cr_expect(strstr(out, "ACME, 3 bars 2024-01-02 00:00 .. 2024-01-05 00:00") &&
                strstr(out, "(csv adjusted by adj_close)\n") &&
                strstr(out,
                       "  adjusted open/high/low/close by adj_close / close (factors 0.5 .. 1; --raw-prices keeps "
                       "them)\n") &&
                strstr(out, "  skipped 1 rows without prices (--skip-null-rows)\n") &&
                strstr(out, "  sorted by time: 3 rows moved (--sort)\n") &&
                strstr(out, "  dropped 1 repeated rows (--drop-duplicates)\n") &&
                strstr(out, "  left out 1 columns (--ignore-columns)\n"),
            "%s", out);
  cr_expect_str_eq(err, "", "adjusted prices move +1.96 % at most: no warning");
  free(out), free(err);

  char *raw_argv[] = {"ppo-data",
                      "import",
                      csv,
                      h5,
                      "--raw-prices",
                      "--sort",
                      "--skip-null-rows",
                      "--drop-duplicates",
                      "--ignore-columns=Turnover",
                      NULL};
  cr_assert_eq(run_ppo_data(raw_argv, logs.out, logs.err), 0);
  err = read_file_text(logs.err);
  cr_expect(strstr(err, "ppo-data: warning: ") && strstr(err,
                                                         "ACME.csv: the close moves -49.5 % at 2024-01-05 00:00 "
                                                         "(close 104 -> 52.5) in one bar: an unadjusted split"),
            "%s", err);
  free(err);
  char *info_argv[] = {"ppo-data", "info", h5, NULL};
  cr_assert_eq(run_ppo_data(info_argv, logs.out, logs.err), 0);
  out = read_file_text(logs.out);
  cr_expect(strstr(out, "close range    52.5 .. 104\n") &&
                strstr(out,
                       "largest move   -49.5 % at 2024-01-05 00:00 (close 104 -> 52.5)  <- a split or a bad "
                       "price?\n"),
            "%s", out);
  free(out);

  char local[1024];  // New York's wall clock, its autumn hour twice, to UTC: the file's zone is UTC
  snprintf(local, sizeof local, "%s/NYSE.csv", dir);
  const char *fall = "time,open,high,low,close\n2022-11-06 01:00,1,2,0.5,1.5\n2022-11-06 01:00,1,2,0.5,1.5\n";
  write_file(local, fall, strlen(fall));
  char *utc_argv[] = {"ppo-data", "import", local, h5, "--timezone", "America/New_York", "--to-utc", NULL};
  cr_assert_eq(run_ppo_data(utc_argv, logs.out, logs.err), 0);
  out = read_file_text(logs.out);
  cr_expect(strstr(out, "2 bars 2022-11-06 05:00 .. 2022-11-06 06:00 (UTC)") &&
                strstr(out,
                       "  converted from America/New_York to UTC (2 rows in a repeated hour, 1 of them read as its "
                       "second pass)"),
            "%s", out);
  free(out);
  const char *one_pass = "time,open,high,low,close\n2022-11-06 00:30,1,2,0.5,1.5\n2022-11-06 01:30,1,2,0.5,1.5\n";
  write_file(local, one_pass, strlen(one_pass));  // the repeated hour once: read as its first pass, and said
  cr_assert_eq(run_ppo_data(utc_argv, logs.out, logs.err), 0);
  err = read_file_text(logs.err);
  cr_expect(strstr(err, "NYSE.csv: 1 rows fell in an hour America/New_York repeats and none stepped back in time"),
            "%s", err);
  free(err);
  char *no_zone_argv[] = {"ppo-data", "import", local, h5, "--to-utc", NULL};
  cr_expect_eq(run_ppo_data(no_zone_argv, logs.out, logs.err), 2);
  err = read_file_text(logs.err);
  cr_expect(strstr(err, "--to-utc needs --timezone ZONE"), "%s", err);
  free(err);
  const char *offsets = "time,open,high,low,close\n2024-01-02T09:30:00-05:00,1,2,0.5,1.5\n";
  write_file(local, offsets, strlen(offsets));  // instants already: a zone would mislabel them
  char *label_argv[] = {"ppo-data", "import", local, h5, "--timezone", "America/New_York", NULL};
  cr_expect_eq(run_ppo_data(label_argv, logs.out, logs.err), 2);
  err = read_file_text(logs.err);
  cr_expect(strstr(err,
                   "--timezone America/New_York: the file's times carry UTC offsets (or are Unix times) and are "
                   "stored as UTC"),
            "%s", err);
  free(err);
  char *utc_sort_argv[] = {"ppo-data", "import", local, h5, "--to-utc", "--sort", NULL};
  cr_expect_eq(run_ppo_data(utc_sort_argv, logs.out, logs.err), 2);
  err = read_file_text(logs.err);
  cr_expect(strstr(err, "--to-utc needs the rows oldest first"), "%s", err);
  free(err);

  char flat[1024];  // prices of 0.0001 printed to 4 places: the close moves on 5 bars of 29
  snprintf(flat, sizeof flat, "%s/TINY.csv", dir);
  char tiny[4096] = "time,open,high,low,close\n";
  for (int k = 0; k < 30; k++) {
    const char *p = k % 10 == 9 ? "0.0002" : "0.0001";  // up at k = 9, 19, 29 and down after the first two
    char row[128];
    snprintf(row, sizeof row, "2024-01-02 00:%02d,%s,%s,%s,%s\n", k, p, p, p, p);
    strcat(tiny, row);
  }
  write_file(flat, tiny, strlen(tiny));
  char *flat_argv[] = {"ppo-data", "import", flat, h5, NULL};
  cr_assert_eq(run_ppo_data(flat_argv, logs.out, logs.err), 0);
  err = read_file_text(logs.err);
  cr_expect(strstr(err, "TINY.csv: the close is unchanged on 24 of 29 bars: prices rounded to too few decimals?"), "%s",
            err);
  free(err);
  cr_assert_eq(run_ppo_data(info_argv, logs.out, logs.err), 0);
  out = read_file_text(logs.out);
  cr_expect(strstr(out, "unchanged      24 of 29 bars (82.8 %)  <- prices rounded too coarsely?\n"), "%s", out);
  free(out);

  // an FX export's volume column of zeros (MetaTrader's <VOL>): info says so
  const char *zeros =
      "time,open,high,low,close,volume\n2024-01-02 00:00,1,2,0.5,1.5,0\n2024-01-02 01:00,1,2,0.5,1.5,0\n";
  write_file(flat, zeros, strlen(zeros));
  cr_assert_eq(run_ppo_data(flat_argv, logs.out, logs.err), 0);
  cr_assert_eq(run_ppo_data(info_argv, logs.out, logs.err), 0);
  out = read_file_text(logs.out);
  cr_expect(strstr(out, "volume         yes, but 0 on every bar\n"), "%s", out);
  free(out);

  char *twice_argv[] = {"ppo-data", "import", csv, h5, "--sort", "--sort", NULL};
  cr_expect_eq(run_ppo_data(twice_argv, logs.out, logs.err), 2);
  err = read_file_text(logs.err);
  cr_expect(strstr(err, "--sort is given twice"), "%s", err);
  free(err);
  char *strict_argv[] = {"ppo-data", "import", csv, h5, NULL};
  cr_expect_eq(run_ppo_data(strict_argv, logs.out, logs.err), 2);
  err = read_file_text(logs.err);
  cr_expect(strstr(err, "ACME.csv:1: unknown column 'Turnover'"), "%s", err);
  free(err);
  remove_tree(dir), cli_logs_close(&logs);
  free(dir);
}

// Dukascopy exports each side on its own ("Gmt time,Open,High,Low,Close,Volume"). Both sides of the
// shipped gold file, written that way and joined with --ask, give the same bid, ask and mid prices as
// the LEAN loader's import of the original (which computes the mid itself); the volume is the sum.
// Sides that differ in a row, in length or in order are refused naming the file and the row.
// One side of d's bars as a Dukascopy export, without row skip_row (-1: none); row low_row (-1: none)
// opens and lows at the other side's price minus a hundredth (a valid bar of its own).
static void write_dukascopy_side(const char *path, const MarketData *d, int64_t rows, bool ask, int64_t skip_row,
                                 int64_t low_row) {
  FILE *f = fopen(path, "w");
  cr_assert(f, "cannot write %s", path);
  fprintf(f, "Gmt time,Open,High,Low,Close,Volume\n");
  for (int64_t i = 0; i < rows; i++) {
    if (i == skip_row) continue;
    CivilTime t = utc_to_civil(d->ts[i]);
    double open = ask ? d->ask_open[i] : d->bid_open[i], low = ask ? d->ask_low[i] : d->bid_low[i];
    if (i == low_row) open = (ask ? d->bid_open[i] : d->ask_open[i]) - 0.01, low = fmin(low, open);
    fprintf(f, "%02d.%02d.%04d %02d:%02d:%02d.000,%.17g,%.17g,%.17g,%.17g,%.17g\n", t.day, t.month, t.year, t.hour,
            t.minute, t.second, open, ask ? d->ask_high[i] : d->bid_high[i], low,
            ask ? d->ask_close[i] : d->bid_close[i], ask ? 0.25 * (double)i : 1.5);
  }
  cr_assert_eq(fclose(f), 0);
}

Test(market_data, ppo_data_import_joins_dukascopy_bid_and_ask) {
  char *dir = make_temp_dir();
  CliLogs logs = cli_logs_open();
  char lean[1024], bid[1024], ask[1024], h5[1024];
  snprintf(lean, sizeof lean, "%s/csv/XAUUSD_OANDA_1H_BIDASK.csv.gz", DATA_DIR);
  snprintf(bid, sizeof bid, "%s/XAUUSD_Candlestick_1_Hour_BID_20.03.2006-26.08.2006.csv", dir);
  snprintf(ask, sizeof ask, "%s/XAUUSD_Candlestick_1_Hour_ASK_20.03.2006-26.08.2006.csv", dir);
  snprintf(h5, sizeof h5, "%s/xauusd.h5", dir);
  MarketData *reference = market_data_load_csv(lean, MARKET_FORMAT_LEAN_QUOTE);
  cr_assert(reference, "%s", error_message());
  const int64_t rows = 3000;  // five months of hourly bars, weekends included
  write_dukascopy_side(bid, reference, rows, false, -1, -1);
  write_dukascopy_side(ask, reference, rows, true, -1, -1);

  char *argv[] = {"ppo-data", "import", bid, h5, "--ask", ask, NULL};
  cr_assert_eq(run_ppo_data(argv, logs.out, logs.err), 0, "%s", read_file_text(logs.err));
  char *out = read_file_text(logs.out);
  cr_expect(strstr(out, "XAUUSD, 3000 bars 2006-03-20 00:00 .. ") && strstr(out, "(UTC), bar 3600 s (1 h), bid/ask") &&
                strstr(out, "(csv bid + ask)") && strstr(out, "_BID_20.03.2006-26.08.2006.csv: bid side\n") &&
                strstr(out, "_ASK_20.03.2006-26.08.2006.csv: ask side\n"),
            "%s", out);
  free(out);
  char *err = read_file_text(logs.err);
  cr_expect(!strstr(err, "one side of the quote"), "%s", err);
  free(err);
  // One side alone imports as the mid, with a warning that the file name says it is one side.
  char *one_side_argv[] = {"ppo-data", "import", ask, h5, NULL};
  cr_assert_eq(run_ppo_data(one_side_argv, logs.out, logs.err), 0, "%s", read_file_text(logs.err));
  err = read_file_text(logs.err);
  cr_expect(strstr(err,
                   "_ASK_20.03.2006-26.08.2006.csv: the name says ASK prices, one side of the quote; they are "
                   "stored as the mid") &&
                strstr(err, "ppo-data import BID.csv OUT.h5 --ask ASK.csv"),
            "%s", err);
  free(err);
  cr_assert_eq(run_ppo_data(argv, logs.out, logs.err), 0, "%s", read_file_text(logs.err));
  MarketData *joined = market_data_load_h5(h5);
  cr_assert(joined, "%s", error_message());
  cr_assert_eq(joined->rows, rows);
  cr_assert(joined->has_bid_ask && joined->has_volume);
  cr_expect_eq(memcmp(joined->ts, reference->ts, (size_t)rows * sizeof *joined->ts), 0);
  for (int c = 0; c < 12; c++)  // open..ask_close: the LEAN loader's values, bit for bit
    cr_expect_eq(memcmp(column(joined, c), column(reference, c), (size_t)rows * sizeof(double)), 0, "column %s differs",
                 column_names[c]);
  for (int64_t i = 0; i < rows; i++)
    cr_assert_eq(joined->volume[i], 1.5 + 0.25 * (double)i, "row %lld: volume %g", (long long)i, joined->volume[i]);
  market_data_free(joined);

  struct {
    const char *what;
    int64_t skip_row, ask_rows;  // the ask side without that row (-1: none), and its length
    bool swapped;
    int64_t low_row;  // the ask side's bar below the bid there (-1: none)
    const char *says[2], *not_said;
  } cases[] = {
      {"a row missing",
       1000,
       rows,
       false,
       -1,
       {"_ASK_20.03.2006-26.08.2006.csv has a bar at 2006-05-19 10:00 where ",
        "(bar 1001 of each, counting from 1): the two sides must hold the same bars, row by row"},
       NULL},
      {"shorter", -1, rows - 5, false, -1, {"has 3000 bars and ", "the first 2995 agree"}, NULL},
      {"swapped",
       -1,
       rows,
       true,
       -1,
       {": bar 1 of each, counting from 1 (2006-03-20 00:00): ask_open ",
        "(need ask >= bid); 3000 of the 3000 bars fail so (the bid side comes first, the ask side second: are the two "
        "swapped?)"},
       NULL},
      {"one ask below the bid",
       -1,
       rows,
       false,
       1000,
       {"_ASK_20.03.2006-26.08.2006.csv: bar 1001 of each, counting from 1 (2006-05-19 09:00): ask_open ",
        "(need ask >= bid); 1 of the 3000 bars fail so\n"},
       "swapped"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    write_dukascopy_side(bid, reference, rows, cases[k].swapped, -1, -1);
    write_dukascopy_side(ask, reference, cases[k].ask_rows, !cases[k].swapped, cases[k].skip_row, cases[k].low_row);
    unlink(h5);
    cr_expect_eq(run_ppo_data(argv, logs.out, logs.err), 2, "%s", cases[k].what);
    err = read_file_text(logs.err);
    for (int j = 0; j < 2; j++) cr_expect(strstr(err, cases[k].says[j]), "%s: %s", cases[k].what, err);
    cr_expect(!cases[k].not_said || !strstr(err, cases[k].not_said), "%s: %s", cases[k].what, err);
    free(err);
    cr_expect_eq(access(h5, F_OK), -1, "%s: nothing is written", cases[k].what);
  }
  char *both_argv[] = {"ppo-data", "import", bid, h5, "--ask", lean, NULL};  // already bid/ask
  cr_expect_eq(run_ppo_data(both_argv, logs.out, logs.err), 2);
  err = read_file_text(logs.err);
  cr_expect(strstr(err, "XAUUSD_OANDA_1H_BIDASK.csv.gz: has bid_/ask_ columns already"), "%s", err);
  free(err);
  const char *adjusted = "time,open,high,low,close,adj_close\n2024-01-02 00:00,1.1,1.2,1.0,1.1,1.1\n";
  write_file(ask, adjusted, strlen(adjusted));  // quotes are not adjusted: --raw-prices is asked for
  cr_expect_eq(run_ppo_data(argv, logs.out, logs.err), 2);
  err = read_file_text(logs.err);
  cr_expect(strstr(err,
                   "_ASK_20.03.2006-26.08.2006.csv: has an adj_close column, and bid and ask quotes are not "
                   "adjusted: give --raw-prices"),
            "%s", err);
  free(err);
  char *self_argv[] = {"ppo-data", "import", bid, h5, "--ask", bid, NULL};
  cr_expect_eq(run_ppo_data(self_argv, logs.out, logs.err), 2);
  err = read_file_text(logs.err);
  cr_expect(strstr(err, "is INPUT itself"), "%s", err);
  free(err);
  market_data_free(reference);
  remove_tree(dir), cli_logs_close(&logs);
  free(dir);
}

// --- accepted variants ---------------------------------------------------------------------------------------

static MarketData *load_text(const char *dir, const char *name, const char *text, MarketFormat format) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  write_file(path, text, strlen(text));
  return market_data_load_csv(path, format);
}

Test(market_data, accepted_variants_load_alike) {
  char *dir = make_temp_dir();
  const char *lf =
      "20060320 00:00,552.8,554.7,552.4,554.2,0,555.3,557.2,554.9,556.7,0\n"
      "20060320 01:00,554.2,554.8,554.2,554.6,0,556.7,557.3,556.7,557.1,0\n";
  const char *crlf_no_final_newline =
      "20060320 00:00,552.8,554.7,552.4,554.2,0,555.3,557.2,554.9,556.7,0\r\n"
      "\r\n"
      "20060320 01:00, 554.2 ,554.8,554.2,554.6,0,556.7,557.3,556.7,557.1,0";
  const char *header =
      "\xEF\xBB\xBF"
      "Timestamp,Bid Open,BID_HIGH,bid-low,bid_close,ask_open,ask_high,ask_low,ask_close,Bid_Size\n"
      "2006-03-20T00:00,552.8,554.7,552.4,554.2,555.3,557.2,554.9,556.7,0\n"
      "2006-03-20 01:00:00,554.2,554.8,554.2,554.6,556.7,557.3,556.7,557.1,0\n";
  MarketData *a = load_text(dir, "a.csv", lf, MARKET_FORMAT_AUTO);
  cr_assert(a, "%s", error_message());
  MarketData *b = load_text(dir, "a_crlf.csv", crlf_no_final_newline, MARKET_FORMAT_LEAN_QUOTE);
  cr_assert(b, "%s", error_message());
  MarketData *c = load_text(dir, "a_header.csv", header, MARKET_FORMAT_AUTO);
  cr_assert(c, "%s", error_message());
  char bom_lean[512];  // a byte-order mark before headerless LEAN rows: detected as LEAN all the same
  snprintf(bom_lean, sizeof bom_lean, "\xEF\xBB\xBF%s", lf);
  MarketData *d = load_text(dir, "a_bom.csv", bom_lean, MARKET_FORMAT_AUTO);
  cr_assert(d, "%s", error_message());
  strcpy(c->symbol, a->symbol);
  strcpy(d->symbol, a->symbol);
  assert_same_data(a, b, "CRLF, blank line, spaces, no final newline");
  assert_same_data(a, c, "header with ISO times, mixed-case names");
  assert_same_data(a, d, "LEAN rows after a byte-order mark");
  market_data_free(d);
  cr_expect_eq(a->rows, 2);
  cr_expect_eq(a->close[1], (554.6 + 557.1) / 2);
  cr_expect_str_eq(a->symbol, "A");
  cr_expect_str_eq(c->source_format, "csv");
  market_data_free(a), market_data_free(b), market_data_free(c);

  // one bar: loads, bar_seconds 0, no gaps
  MarketData *one = load_text(dir, "one.csv", "Date,Close,Open,Low,High\n2020-01-02,2,2,1,3", MARKET_FORMAT_AUTO);
  cr_assert(one, "%s", error_message());
  cr_expect_eq(one->rows, 1);
  cr_expect_eq(one->bar_seconds, 0);
  cr_expect_eq(market_data_gaps(one).count, 0);
  cr_expect(!one->has_volume && isnan(one->volume[0]));
  market_data_free(one);
  remove_tree(dir);
  free(dir);
}

// The same two bars in the shapes real exports have: MetaTrader 5 (tabs, <NAMES>, a date and a
// time column, tick volume and spread), semicolons with the time before the date, quoted fields,
// Unix seconds, milliseconds and microseconds, UTC offsets, dates with '.', '/' and day first.
Test(market_data, export_shapes_load_alike) {
  char *dir = make_temp_dir();
  static const char *const shapes[][2] = {
      {"base.csv", "time,open,high,low,close,volume\n2024-01-02 00:00,1,2,0.5,1.5,7\n2024-01-02 01:00,1.5,2.5,1,2,9\n"},
      {"mt5.csv",
       "<DATE>\t<TIME>\t<OPEN>\t<HIGH>\t<LOW>\t<CLOSE>\t<TICKVOL>\t<VOL>\t<SPREAD>\n"
       "2024.01.02\t00:00:00\t1\t2\t0.5\t1.5\t120\t7\t3\n2024.01.02\t01:00:00\t1.5\t2.5\t1\t2\t130\t9\t2\n"},
      {"semicolon.csv",
       "Time;Date;Open;High;Low;Close;Vol\n00:00;02.01.2024;1;2;0.5;1.5;7\n01:00;02.01.2024;1.5;2.5;1;2;9\n"},
      {"quoted.csv",
       "\"Date\",\"Open\",\"High\",\"Low\",\"Close\",\"Volume\"\n\"2024/01/02 "
       "00:00\",\"1\",\"2\",\"0.5\",\"1.5\",\"7\"\n"
       "\"2024/01/02 01:00:00.000\",\"1.5\",\"2.5\",\"1\",\"2\",\"9\"\n"},
      {"seconds.csv", "timestamp,open,high,low,close,volume\n1704153600,1,2,0.5,1.5,7\n1704157200,1.5,2.5,1,2,9\n"},
      {"millis.csv",
       "open_time,open,high,low,close,volume\n1704153600000,1,2,0.5,1.5,7\n1704157200000,1.5,2.5,1,2,9\n"},
      {"micros.csv",
       "open_time,open,high,low,close,volume\n1704153600000000,1,2,0.5,1.5,7\n1704157200000000,1.5,2.5,1,2,9\n"},
      {"offsets.csv",
       "datetime,open,high,low,close,volume\n2024-01-02T00:00:00Z,1,2,0.5,1.5,7\n2024-01-01 20:00 "
       "-0500,1.5,2.5,1,2,9\n"},
      {"trailing_comma.csv",
       "time,open,high,low,close,volume,\n2024-01-02 00:00,1,2,0.5,1.5,7,\n2024-01-02 01:00,1.5,2.5,1,2,9,\n"},
      {"utc_word.csv",
       "datetime,open,high,low,close,volume\n20240102 01:00 +01:00,1,2,0.5,1.5,7\n2024-01-02 01:00 "
       "UTC,1.5,2.5,1,2,9\n"},
  };
  enum { N_SHAPES = sizeof shapes / sizeof shapes[0] };
  MarketData *base = load_text(dir, shapes[0][0], shapes[0][1], MARKET_FORMAT_AUTO);
  cr_assert(base, "%s", error_message());
  cr_expect_eq(base->ts[0], 1704153600);
  for (int k = 1; k < N_SHAPES; k++) {
    MarketData *d = load_text(dir, shapes[k][0], shapes[k][1], MARKET_FORMAT_AUTO);
    cr_assert(d, "%s: %s", shapes[k][0], error_message());
    strcpy(d->symbol, base->symbol);
    assert_same_data(base, d, shapes[k][0]);
    cr_expect_str_eq(d->source_format, "csv", "%s", shapes[k][0]);
    market_data_free(d);
  }
  market_data_free(base);
  remove_tree(dir);
  free(dir);
}

// Timestamps and headers the loader cannot read name the line, the column, the value and the shapes.
Test(market_data, export_shapes_refused_naming_the_field) {
  char *dir = make_temp_dir();
  static const char *const cases[][3] = {
      {"frac.csv", "time,open,high,low,close\n2024-01-02 00:00:00.250,1,2,0.5,1.5\n",
       ":2: column time = '2024-01-02 00:00:00.250': fractions of a second are not supported"},
      {"millis.csv", "time,open,high,low,close\n1704153600123,1,2,0.5,1.5\n",
       ":2: column time = '1704153600123': fractions of a second"},
      {"digits.csv", "time,open,high,low,close\n17041536001,1,2,0.5,1.5\n",
       ":2: column time = '17041536001': not a timestamp (allowed: YYYY-MM-DD[ HH:MM[:SS]]"},
      {"us_order.csv", "time,open,high,low,close\n01/02/2024,1,2,0.5,1.5\n", ":2: column time = '01/02/2024': not a"},
      {"mixed_sep.csv", "time,open,high,low,close\n2024-01.02,1,2,0.5,1.5\n", ":2: column time = '2024-01.02': not a"},
      {"decimal_comma.csv", "Date;Open;High;Low;Close\n02.01.2024;1,5;2;0,5;1,5\n",
       ":2: column Open = '1,5': not a number (a decimal comma: write decimal points)"},
      {"offset.csv", "time,open,high,low,close\n2024-01-02T00:00+15:00,1,2,0.5,1.5\n", "not a timestamp"},
      {"offset_colon.csv", "time,open,high,low,close\n2024-01-02T00:00+05:,1,2,0.5,1.5\n", "not a timestamp"},
      {"mixed_kinds.csv", "time,open,high,low,close\n2024-01-02 00:00Z,1,2,0.5,1.5\n2024-01-02 01:00,1,2,0.5,1.5\n",
       ":3: a time without a UTC offset (or Unix time) where the rows before had one"},
      {"adj_inf.csv", "date,open,high,low,close,adj close\n2024-01-02,1e-300,1e-300,1e-300,1e-300,1e300\n",
       ":2: adjusted by adj_close / close = inf: not a finite factor > 0"},
      {"clock.csv", "date,time,open,high,low,close\n2024-01-02,24:00,1,2,0.5,1.5\n",
       ":2: column time = '24:00': no such date or time"},
      {"clock_shape.csv", "date,time,open,high,low,close\n2024-01-02,9:30,1,2,0.5,1.5\n",
       ":2: column time = '9:30': not a time of day (allowed: HH:MM[:SS])"},
      {"date_with_clock.csv", "date,time,open,high,low,close\n2024-01-02 00:00,00:00,1,2,0.5,1.5\n",
       ":2: column date = '2024-01-02 00:00': not a timestamp"},
      {"two_dates.csv", "date,datetime,open,high,low,close\n2024-01-02,2024-01-02,1,2,0.5,1.5\n",
       ":1: column 'datetime' (column 2) repeats column 1 ('time' names the same column; a date column and a time "
       "column are read together)"},
      {"adj_bid_ask.csv",
       "time,bid_open,bid_high,bid_low,bid_close,ask_open,ask_high,ask_low,ask_close,adj_close\n"
       "2024-01-02,1,2,0.5,1.5,1,2,0.5,1.5,1\n",
       ":1: an adj_close column with bid_/ask_ prices"},
      {"null_row.csv",
       "Date,Open,High,Low,Close,Adj Close,Volume\n2024-01-02,1,2,0.5,1.5,1.5,7\n2024-01-03,null,null,"
       "null,null,null,null\n",
       ":3: a row without prices (every column but the time is like 'null'); ppo-data import --skip-null-rows skips "
       "such rows"},
      // quoted data on line 1 is not a header of unknown columns
      {"quoted.csv", "\"2019-01-01 00:00\",\"1.13\",\"1.14\",\"1.12\",\"1.135\"\n",
       ":1: no header line: the first field '2019-01-01 00:00' is data; add a header line"},
      // data.binance.vision's klines have no header: the refusal gives theirs
      {"BTCUSDT-1h-2023-01.csv",
       "1672531200000,16500.0,16608.0,16418.3,16447.1,891.5,1672534799999,14663691.4,8295,445.7,7331845.7,0\n",
       ":1: no header line: the first field '1672531200000' is data, and 12 columns starting with Unix milliseconds "
       "(or microseconds) look like Binance's klines: add their header, open_time,open,high,low,close,volume,"
       "close_time,quote_volume,count,taker_buy_volume,taker_buy_quote_volume,ignore"},
      {"repeat.csv", "time,open,high,low,close\n2024-01-02 10:00,1,2,0.5,1.5\n2024-01-02 10:00,1,2,0.5,1.5\n",
       ":3: duplicate timestamp 2024-01-02 10:00 (also on line 2); the rows are equal: ppo-data import "
       "--drop-duplicates"},
      // A field is quoted as UTF-8 with its control characters escaped, and cut after 48 characters.
      {"euro.csv", "time,open,high,low,close\n2024-01-02,1,2,0.5,1.5\xe2\x82\xac\n",
       ":2: column close = '1.5\xe2\x82\xac': not a number"},
      {"long.csv",
       "time,open,high,low,close\n2024-01-02,1,2,0.5,\x1b[2J123456789012345678901234567890123456789012345678\n",
       ":2: column close = '\\x1b[2J12345678901234567890123456789012345678901234...': not a number"},
      // a header ending with a separator: the last field stays empty, a value there is not dropped unread
      {"unnamed_last.csv", "time,open,high,low,close,\n2024-01-02,1,2,0.5,1.5,\n2024-01-03,1,2,0.5,1.5,7\n",
       ":3: column (empty) = '7': a value in the column the header leaves without a name"},
      {"dst.csv", "time,open,high,low,close\n2022-11-06 01:00,1,2,0.5,1.5\n2022-11-06 01:00,1,2,0.5,1.4\n",
       "(also on line 2); the rows differ (two sets of prices for one bar: overlapping downloads, a partial last "
       "bar?); or the file is in local time, which repeats an hour when daylight saving ends: ppo-data import "
       "--timezone ZONE --to-utc"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    error_clear();
    MarketData *d = load_text(dir, cases[k][0], cases[k][1], MARKET_FORMAT_AUTO);
    cr_expect_null(d, "%s was accepted", cases[k][0]);
    market_data_free(d);
    cr_expect(strstr(error_message(), cases[k][0]) && strstr(error_message(), cases[k][2]), "%s: expected '%s' in: %s",
              cases[k][0], cases[k][2], error_message());
  }
  remove_tree(dir);
  free(dir);
}

// A four-digit year is every year a MarketData may hold (market_data_validate, the HDF5 loader), but
// a UTC offset or --to-utc moves a time at the ends of that range past it: such a row is refused
// naming its line, rather than imported into an HDF5 file that ppo-data info then refuses.
Test(market_data, times_moved_past_the_four_digit_years_are_refused) {
  char *dir = make_temp_dir(), path[1024];
  static const char *const refused[][2] = {
      {"before.csv", "time,open,high,low,close\n0000-01-01 00:00+01:00,1,2,0.5,1.5\n"},
      {"after.csv", "time,open,high,low,close\n9999-12-31 23:00-02:00,1,2,0.5,1.5\n"},
  };
  for (int k = 0; k < 2; k++) {
    error_clear();
    MarketData *d = load_text(dir, refused[k][0], refused[k][1], MARKET_FORMAT_AUTO);
    if (d)
      cr_expect_eq(market_data_validate(d, "loaded"), 0, "%s accepted but invalid: %s", refused[k][0], error_message());
    cr_expect_null(d, "%s was accepted", refused[k][0]);
    market_data_free(d);
    cr_expect(strstr(error_message(), refused[k][0]) && strstr(error_message(), ":2: ") &&
                  strstr(error_message(), "outside the years 0000 to 9999"),
              "%s: %s", refused[k][0], error_message());
  }
  // The ends themselves load (and validate).
  MarketData *d = load_text(dir, "ends.csv",
                            "time,open,high,low,close\n0000-01-01 00:00+00:00,1,2,0.5,1.5\n"
                            "9999-12-31 23:59:59Z,1,2,0.5,1.5\n",
                            MARKET_FORMAT_AUTO);
  cr_assert(d, "%s", error_message());
  cr_expect_eq(market_data_validate(d, "ends"), 0, "%s", error_message());
  market_data_free(d);
  // The same through a zone's wall clock: New York's 9999-12-31 22:00 is 10000-01-01 03:00 UTC,
  // Tokyo's 0000-01-01 00:00 is in the year -1 in UTC.
  static const char *const zoned[][3] = {
      {"ny.csv", "time,open,high,low,close\n9999-12-31 22:00,1,2,0.5,1.5\n", "America/New_York"},
      {"tokyo.csv", "time,open,high,low,close\n0000-01-01 00:00,1,2,0.5,1.5\n", "Asia/Tokyo"},
  };
  for (int k = 0; k < 2; k++) {
    snprintf(path, sizeof path, "%s/%s", dir, zoned[k][0]);
    write_file(path, zoned[k][1], strlen(zoned[k][1]));
    MarketCsvOptions options = market_csv_options_default();
    options.local_zone = zoned[k][2];
    error_clear();
    d = market_data_load_csv_with(path, &options, NULL);
    if (d)
      cr_expect_eq(market_data_validate(d, "loaded"), 0, "%s accepted but invalid: %s", zoned[k][0], error_message());
    cr_expect_null(d, "%s was accepted", zoned[k][0]);
    market_data_free(d);
    cr_expect(strstr(error_message(), ":2: ") && strstr(error_message(), "outside the years 0000 to 9999"), "%s: %s",
              zoned[k][0], error_message());
  }
  remove_tree(dir);
  free(dir);
}

// adj_close adjusts open..close row by row (yfinance's auto_adjust) unless raw_prices; the options
// for rows in another order, repeated rows, rows without prices and columns to leave out.
Test(market_data, csv_options_adjust_sort_drop_and_ignore) {
  char *dir = make_temp_dir(), path[1024];
  snprintf(path, sizeof path, "%s/ACME.csv", dir);
  // a 2:1 split between the second and third rows, which Close shows and Adj Close does not
  write_file(path,
             "Date,Open,High,Low,Close,Adj Close,Volume\n"
             "2024-01-02,100,104,98,102,51,10\n"
             "2024-01-03,null,null,null,null,null,null\n"
             "2024-01-04,102,106,100,104,52,11\n"
             "2024-01-05,52,53,51,52.5,52.5,30\n",
             strlen("Date,Open,High,Low,Close,Adj Close,Volume\n2024-01-02,100,104,98,102,51,10\n"
                    "2024-01-03,null,null,null,null,null,null\n2024-01-04,102,106,100,104,52,11\n"
                    "2024-01-05,52,53,51,52.5,52.5,30\n"));
  MarketCsvOptions options = market_csv_options_default();
  options.skip_null_rows = true;
  MarketCsvSummary summary;
  MarketData *d = market_data_load_csv_with(path, &options, &summary);
  cr_assert(d, "%s", error_message());
  cr_expect_eq(d->rows, 3);
  cr_expect_eq(summary.null_rows, 1);
  cr_expect(summary.adjusted && summary.factor_min == 0.5 && summary.factor_max == 1.0);
  cr_expect(d->open[0] == 50.0 && d->high[0] == 52.0 && d->low[0] == 49.0, "%g %g %g", d->open[0], d->high[0],
            d->low[0]);
  cr_expect(d->close[0] == 51.0 && d->close[1] == 52.0 && d->close[2] == 52.5);
  cr_expect_eq(d->volume[0], 10.0, "volume is not adjusted (as yfinance)");
  cr_expect_str_eq(d->source_format, "csv adjusted by adj_close");
  MarketMoves moves = market_data_moves(d);
  cr_expect(fabs(moves.largest_move - (52.0 / 51.0 - 1.0)) < 1e-15, "%.17g", moves.largest_move);
  market_data_free(d);

  options.raw_prices = true;
  d = market_data_load_csv_with(path, &options, &summary);
  cr_assert(d, "%s", error_message());
  cr_expect(!summary.adjusted);
  cr_expect(d->close[0] == 102.0 && d->close[2] == 52.5);
  cr_expect_str_eq(d->source_format, "csv");
  moves = market_data_moves(d);
  cr_expect_eq(moves.largest_at, d->ts[2]);
  cr_expect(moves.largest_move == 52.5 / 104.0 - 1.0 && moves.largest_from == 104.0);
  cr_expect(moves.close_min == 52.5 && moves.close_max == 104.0);
  cr_expect_eq(moves.unchanged, 0);
  cr_expect(fabs(log1p(moves.largest_move)) > MARKET_SUSPECT_MOVE_LOG, "a 2:1 split is past the warning's line");
  market_data_free(d);

  // newest first, with an overlap of two equal rows and two columns to leave out
  snprintf(path, sizeof path, "%s/klines.csv", dir);
  const char *klines =
      "open_time,open,high,low,close,volume,close_time,ignore\n"
      "1704160800000,2,3,1.5,2.5,5,1704164399999,0\n"
      "1704157200000,1.5,2.5,1,2,9,1704160799999,0\n"
      "1704160800000,2,3,1.5,2.5,5,1704164399999,0\n"
      "1704153600000,1,2,0.5,1.5,7,1704157199999,0\n";
  write_file(path, klines, strlen(klines));
  options = market_csv_options_default();
  cr_expect_null(market_data_load_csv_with(path, &options, NULL));
  cr_expect(strstr(error_message(), "unknown column 'close_time' (column 7)") &&
                strstr(error_message(), "--ignore-columns leaves a column out"),
            "%s", error_message());
  options.ignore_columns = "Close Time, ignore";
  cr_expect_null(market_data_load_csv_with(path, &options, NULL));
  cr_expect(strstr(error_message(), "klines.csv:3: timestamp 2024-01-02 01:00 is before 2024-01-02 02:00 on line 2") &&
                strstr(error_message(), "--sort sorts the rows by time"),
            "%s", error_message());
  options.sort = true;
  cr_expect_null(market_data_load_csv_with(path, &options, NULL));
  cr_expect(strstr(error_message(),
                   "klines.csv:4: duplicate timestamp 2024-01-02 02:00 (also on line 2); the rows are "
                   "equal"),
            "%s", error_message());
  options.drop_duplicates = true;
  d = market_data_load_csv_with(path, &options, &summary);
  cr_assert(d, "%s", error_message());
  cr_expect_eq(d->rows, 3);
  cr_expect(d->ts[0] == 1704153600 && d->ts[1] == 1704157200 && d->ts[2] == 1704160800);
  cr_expect(d->close[0] == 1.5 && d->close[1] == 2 && d->close[2] == 2.5 && d->volume[1] == 9);
  cr_expect_eq(summary.duplicate_rows, 1);
  cr_expect_eq(summary.ignored_columns, 2);
  cr_expect_eq(summary.moved_rows, 3, "all but line 3's row (second before and after) changed place");
  // Two different rows of one time are not dropped, and the message says why (it gave only the
  // daylight-saving hint, in January).
  const char *differ = "time,open,high,low,close\n2024-01-09 10:00,1,2,0.5,1.5\n2024-01-09 10:00,1,2,0.5,1.4\n";
  char differ_path[1024];
  snprintf(differ_path, sizeof differ_path, "%s/differ.csv", dir);
  write_file(differ_path, differ, strlen(differ));
  MarketCsvOptions differ_options = market_csv_options_default();
  differ_options.drop_duplicates = true;
  cr_expect_null(market_data_load_csv_with(differ_path, &differ_options, NULL));
  cr_expect(strstr(error_message(),
                   "differ.csv:3: duplicate timestamp 2024-01-09 10:00 (also on line 2); the rows "
                   "differ (two sets of prices for one bar: overlapping downloads, a partial last "
                   "bar?), and --drop-duplicates drops only equal rows"),
            "%s", error_message());
  market_data_free(d);
  options.ignore_columns = "close_time,ignore,turnover";
  cr_expect_null(market_data_load_csv_with(path, &options, NULL));
  cr_expect(strstr(error_message(), "klines.csv:1: --ignore-columns names 'turnover', which is not a column"), "%s",
            error_message());
  remove_tree(dir);
  free(dir);
}

// Text in an encoding or with line ends the reader does not take is named for what it is: UTF-16
// (Excel's "Unicode Text"), plain or gzipped, and lines ending in CR alone (classic Mac OS; the
// whole file one line, refused as a long header or a long line) or in CR CR LF.
Test(market_data, utf16_and_carriage_return_line_ends_are_named) {
  char *dir = make_temp_dir(), path[1024];
  static const char utf16[] = "\xff\xfet\0i\0m\0e\0,\0o\0p\0e\0n\0\r\0\n\0";
  snprintf(path, sizeof path, "%s/unicode.csv", dir);
  write_file(path, utf16, sizeof utf16 - 1);
  cr_assert_null(market_data_load_csv(path, MARKET_FORMAT_AUTO));
  cr_expect(message_names_line(error_message(), path, 1), "%s", error_message());
  cr_expect(strstr(error_message(), "UTF-16 text (it starts with the byte-order mark FF FE)"), "%s", error_message());
  snprintf(path, sizeof path, "%s/unicode.csv.gz", dir);
  gzFile gz = gzopen(path, "wb");
  cr_assert(gz);
  cr_assert_eq(gzwrite(gz, utf16, sizeof utf16 - 1), (int)(sizeof utf16 - 1));
  cr_assert_eq(gzclose(gz), Z_OK);
  cr_assert_null(market_data_load_csv(path, MARKET_FORMAT_AUTO));
  cr_expect(strstr(error_message(), "UTF-16 text"), "%s", error_message());
  // without a byte-order mark: every other byte NUL (little- and big-endian)
  static const char le[] = "t\0i\0m\0e\0,\0o\0p\0e\0n\0\n\0", be[] = "\0t\0i\0m\0e\0,\0o\0p\0e\0n\0\n";
  const char *texts[2] = {le, be}, *want[2] = {"iconv -f UTF-16LE", "iconv -f UTF-16BE"};
  const size_t sizes[2] = {sizeof le - 1, sizeof be - 1};
  for (int k = 0; k < 2; k++) {
    snprintf(path, sizeof path, "%s/unmarked%d.csv", dir, k);
    write_file(path, texts[k], sizes[k]);
    cr_assert_null(market_data_load_csv(path, MARKET_FORMAT_AUTO));
    cr_expect(strstr(error_message(), "UTF-16 text without a byte-order mark?") && strstr(error_message(), want[k]),
              "%s", error_message());
  }
  static const char *const cases[][2] = {
      {"mac.csv", "time,open,high,low,close\r2024-01-02,1,2,0.5,1.5\r2024-01-03,1,2,0.5,1.5\r"},
      {"twice.csv", "time,open,high,low,close\r\r\n2024-01-02,1,2,0.5,1.5\r\r\n"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    error_clear();
    cr_expect_null(load_text(dir, cases[k][0], cases[k][1], MARKET_FORMAT_AUTO), "%s was accepted", cases[k][0]);
    snprintf(path, sizeof path, "%s/%s", dir, cases[k][0]);
    cr_expect(message_names_line(error_message(), path, 1), "%s", error_message());
    cr_expect(strstr(error_message(), "carriage return (\\r) inside the line, at byte 25"), "%s", error_message());
  }
  // A file of CR-ended lines longer than a line may be: the line ends are named, not the length.
  size_t n = (size_t)MARKET_LINE_MAX + 100;
  char *text = malloc(n + 1);
  cr_assert(text);
  for (size_t i = 0; i < n; i++) text[i] = "2024-01-02,1,2,0.5,1.5\r"[i % 23];
  text[n] = '\0';
  error_clear();
  cr_expect_null(load_text(dir, "long_mac.csv", text, MARKET_FORMAT_AUTO));
  cr_expect(strstr(error_message(), "carriage return (\\r) inside the line, at byte 23"), "%s", error_message());
  free(text);
  // CR LF line ends, a blank CR LF line and a last line without one still load.
  error_clear();
  MarketData *d =
      load_text(dir, "crlf.csv", "time,open,high,low,close\r\n\r\n2024-01-02,1,2,0.5,1.5\r\n2024-01-03,1,2,0.5,1.5",
                MARKET_FORMAT_AUTO);
  cr_assert(d, "%s", error_message());
  cr_expect_eq(d->rows, 2);
  market_data_free(d);
  remove_tree(dir);
  free(dir);
}

// 12 digits that are also YYYYMMDDHHMM (10 that are YYYYMMDDHH) read as Unix milliseconds of 1976
// (seconds after 2030): a daily file of such dates imported as 10-second bars of 1976. Refused as
// ambiguous; Unix seconds and milliseconds of real dates still load.
Test(market_data, compact_dates_that_read_as_unix_time_are_refused_as_ambiguous) {
  char *dir = make_temp_dir(), path[1024];
  static const char *const refused[][3] = {
      {"d12.csv", "time,open,high,low,close\n201901020000,1,2,0.5,1.5\n201901030000,1,2,0.5,1.5\n", "YYYYMMDDHHMM"},
      {"d10.csv", "time,open,high,low,close\n2019010200,1,2,0.5,1.5\n2019010201,1,2,0.5,1.5\n", "YYYYMMDDHH"},
  };
  for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
    error_clear();
    cr_expect_null(load_text(dir, refused[k][0], refused[k][1], MARKET_FORMAT_AUTO), "%s was accepted", refused[k][0]);
    snprintf(path, sizeof path, "%s/%s", dir, refused[k][0]);
    cr_expect(message_names_line(error_message(), path, 2), "%s", error_message());
    cr_expect(strstr(error_message(), "ambiguous"), "%s", error_message());
    cr_expect(strstr(error_message(), refused[k][2]), "%s", error_message());
  }
  static const char *const loaded[][2] = {
      {"s.csv", "time,open,high,low,close\n1546387200,1,2,0.5,1.5\n1546390800,1,2,0.5,1.5\n"},
      {"ms.csv", "time,open,high,low,close\n1546387200000,1,2,0.5,1.5\n1546390800000,1,2,0.5,1.5\n"},
      {"old_ms.csv", "time,open,high,low,close\n946684800000,1,2,0.5,1.5\n946688400000,1,2,0.5,1.5\n"},
  };
  for (size_t k = 0; k < sizeof loaded / sizeof loaded[0]; k++) {
    MarketData *d = load_text(dir, loaded[k][0], loaded[k][1], MARKET_FORMAT_AUTO);
    cr_assert(d, "%s: %s", loaded[k][0], error_message());
    cr_expect_eq(d->ts[1] - d->ts[0], 3600, "%s", loaded[k][0]);
    market_data_free(d);
  }
  remove_tree(dir);
  free(dir);
}

// A volume written -0 is stored as 0, not as -0.0, whose other bits would give the same market
// another data hash (found by fuzzing).
Test(market_data, a_negative_zero_volume_is_stored_as_zero) {
  char *dir = make_temp_dir();
  MarketData *d = load_text(dir, "negzero.csv",
                            "time,open,high,low,close,volume\n2024-01-02,1,2,0.5,1.5,-0\n"
                            "2024-01-03,1,2,0.5,1.5,0\n",
                            MARKET_FORMAT_AUTO);
  cr_assert(d, "%s", error_message());
  cr_expect(d->volume[0] == 0.0 && !signbit(d->volume[0]), "volume %g (sign bit %d)", d->volume[0],
            (int)(signbit(d->volume[0]) != 0));
  market_data_free(d);
  remove_tree(dir);
  free(dir);
}

Test(market_data, long_line_is_an_error_naming_it) {
  char *dir = make_temp_dir();
  size_t n = (size_t)MARKET_LINE_MAX + 100;
  char *text = malloc(n + 200);
  cr_assert(text);
  strcpy(text, "Date,Open,High,Low,Close\n2020-01-02,1,2,1,1\n2020-01-03,1,2,1,");
  size_t len = strlen(text);
  memset(text + len, '1', n);
  strcpy(text + len + n, "\n");
  char path[1024];
  snprintf(path, sizeof path, "%s/long.csv", dir);
  write_file(path, text, strlen(text));
  free(text);
  cr_assert_null(market_data_load_csv(path, MARKET_FORMAT_AUTO));
  cr_expect(message_names_line(error_message(), path, 3), "%s", error_message());
  cr_expect(strstr(error_message(), "line longer than"), "%s", error_message());
  remove_tree(dir);
  free(dir);
}

// --- HDF5 files that are not right -------------------------------------------------------------------------

static MarketData *small_data(void) {
  MarketData *d = market_data_new(3);
  for (int i = 0; i < 3; i++) {
    d->ts[i] = 1577836800 + 3600 * i;
    d->open[i] = 10 + i, d->high[i] = 12 + i, d->low[i] = 9 + i, d->close[i] = 11 + i, d->volume[i] = 100;
  }
  d->has_volume = true;
  strcpy(d->symbol, "TEST"), strcpy(d->timezone, "UTC"), strcpy(d->source, "unit"), strcpy(d->source_format, "test");
  cr_assert_eq(market_data_validate(d, "small"), 0, "%s", error_message());
  cr_assert_eq(d->bar_seconds, 3600);
  return d;
}

// Writes `d` like market_data_save_h5 but lets the test break one thing.
typedef enum {
  BREAK_NONE,
  BREAK_VERSION,
  BREAK_MISSING_CLOSE,
  BREAK_SHORT_LOW,
  BREAK_ROWS_ATTR,
  BREAK_SYMBOL,
  BREAK_EMPTY_SYMBOL
} H5Break;

static void write_broken_h5(const MarketData *d, const char *path, H5Break how) {
  H5ioWriter w;
  cr_assert_eq(h5io_create(&w, path), 0, "%s", error_message());
  hsize_t dims[1] = {(hsize_t)d->rows}, short_dims[1] = {(hsize_t)d->rows - 1};
  cr_assert_eq(h5io_write(w.file, "bars/ts", H5IO_INT64, 1, dims, d->ts, 6), 0);
  const char *names[] = {"open", "high", "low", "close", "volume"};
  const double *cols[] = {d->open, d->high, d->low, d->close, d->volume};
  for (int c = 0; c < 5; c++) {
    char name[64];
    snprintf(name, sizeof name, "bars/%s", names[c]);
    if (how == BREAK_MISSING_CLOSE && c == 3) continue;
    cr_assert_eq(
        h5io_write(w.file, name, H5IO_FLOAT64, 1, how == BREAK_SHORT_LOW && c == 2 ? short_dims : dims, cols[c], 6), 0);
  }
  cr_assert_eq(h5io_attr_write_int64(w.file, "bars", "format_version", how == BREAK_VERSION ? 7 : 1), 0);
  cr_assert_eq(h5io_attr_write_int64(w.file, "bars", "rows", how == BREAK_ROWS_ATTR ? 0 : d->rows), 0);
  cr_assert_eq(h5io_attr_write_int64(w.file, "bars", "bar_seconds", d->bar_seconds), 0);
  cr_assert_eq(h5io_attr_write_int64(w.file, "bars", "has_bid_ask", 0), 0);
  cr_assert_eq(h5io_attr_write_int64(w.file, "bars", "has_volume", 1), 0);
  const char *attrs[] = {"symbol", "timezone", "source", "source_format"};
  const char *symbol = how == BREAK_SYMBOL ? "S P/Y\n;x" : how == BREAK_EMPTY_SYMBOL ? "" : "x";
  for (int a = 0; a < 4; a++) cr_assert_eq(h5io_attr_write_string(w.file, "bars", attrs[a], a ? "x" : symbol), 0);
  cr_assert_eq(h5io_commit(&w), 0, "%s", error_message());
}

Test(market_data, h5_layout_errors_name_file_and_dataset) {
  char *dir = make_temp_dir();
  MarketData *d = small_data();
  char path[1024];
  static const struct {
    H5Break how;
    const char *fragment;
  } cases[] = {
      {BREAK_NONE, NULL},
      {BREAK_VERSION, "format_version = 7 (allowed: 1"},
      {BREAK_MISSING_CLOSE, "dataset /bars/close is missing"},
      {BREAK_SHORT_LOW, "dataset /bars/low has 2 elements, but the rows attribute says 3"},
      {BREAK_ROWS_ATTR, "attribute rows = 0"},
      {BREAK_SYMBOL, "/bars attribute symbol = 'S P/Y\\n;x': must be 1 to 63 letters, digits or . _ - /"},
      {BREAK_EMPTY_SYMBOL, "/bars attribute symbol = '': must be 1 to 63"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    snprintf(path, sizeof path, "%s/case%zu.h5", dir, k);
    write_broken_h5(d, path, cases[k].how);
    MarketData *got = market_data_load_h5(path);
    if (!cases[k].fragment) {
      cr_assert(got, "the unbroken file must load: %s", error_message());
      market_data_free(got);
      continue;
    }
    cr_expect_null(got, "case %zu loaded", k);
    market_data_free(got);
    cr_expect(strncmp(error_message(), path, strlen(path)) == 0, "names the file: %s", error_message());
    cr_expect(strstr(error_message(), cases[k].fragment), "case %zu: %s", k, error_message());
  }
  // rows that break the rules, through the public writer
  d->low[1] = 20;  // above high 13
  snprintf(path, sizeof path, "%s/bad_row.h5", dir);
  cr_assert_eq(market_data_save_h5(d, path), 0, "%s", error_message());
  cr_expect_null(market_data_load_h5(path));
  cr_expect(strstr(error_message(), "bad_row.h5: row 1 (2020-01-01 01:00): price low 20 > high 13"), "%s",
            error_message());
  d->low[1] = 10, d->ts[2] = d->ts[1];
  snprintf(path, sizeof path, "%s/bad_ts.h5", dir);
  cr_assert_eq(market_data_save_h5(d, path), 0, "%s", error_message());
  cr_expect_null(market_data_load(path));
  cr_expect(strstr(error_message(), "row 2: timestamp 2020-01-01 01:00 repeats row 1's"), "%s", error_message());
  // not an HDF5 file, no such file
  snprintf(path, sizeof path, "%s/x.csv", DATA_DIR);
  cr_expect_null(market_data_load_h5(path));
  cr_expect(strstr(error_message(), "x.csv: cannot open"), "%s", error_message());
  snprintf(path, sizeof path, "%s/csv/SPY_1D_LEAN.csv.gz", DATA_DIR);
  cr_expect_null(market_data_load_h5(path));
  cr_expect(strstr(error_message(), "not an HDF5 file"), "%s", error_message());
  // market_data_load (by content) says so too for a name ending in .h5, instead of reading it as CSV
  snprintf(path, sizeof path, "%s/text.h5", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("garbage\n", f);
  fclose(f);
  cr_expect_null(market_data_load(path));
  cr_expect(strstr(error_message(), "text.h5: not an HDF5 file") && !strstr(error_message(), "column"), "%s",
            error_message());
  market_data_free(d);
  cr_expect_eq(count_entries(dir), 10, "7 cases + 2 bad rows + text.h5, no temporary files");
  remove_tree(dir);
  free(dir);
}

// A market file changed behind HDF5's back (a bad disk, a partial copy) is refused naming the damage,
// instead of training on altered prices: a price chunk fails its Fletcher32 checksum, the /bars
// attributes their header's (HDF5 1.10 format, h5io_create; a file in the earliest format fails this case).
Test(market_data, damaged_h5_is_refused_naming_the_damage) {
  char *dir = make_temp_dir();
  MarketData *d = small_data();
  char clean[1024], path[1024], cmd[3200];
  snprintf(clean, sizeof clean, "%s/clean.h5", dir);
  cr_assert_eq(market_data_save_h5(d, clean), 0, "%s", error_message());
  MarketData *got = market_data_load_h5(clean);
  cr_assert_not_null(got, "%s", error_message());
  market_data_free(got);
  static const struct {
    const char *what;  // a dataset (its first chunk) or, with attr, a text in the /bars header
    bool attr;
    const char *message;
  } cases[] = {
      {"bars/close", false, "dataset bars/close does not match its checksum: the file is damaged"},
      {"bars/ts", false, "dataset bars/ts does not match its checksum: the file is damaged"},
      {"unit", true, "cannot read the attributes of bars: the file's structure is damaged"},  // source = "unit"
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    snprintf(path, sizeof path, "%s/damaged%zu.h5", dir, k);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", clean, path);
    cr_assert_eq(system(cmd), 0);
    flip_byte(path, cases[k].attr ? file_offset_of(path, cases[k].what) : first_chunk_offset(path, cases[k].what) + 3);
    got = market_data_load_h5(path);
    cr_expect_null(got, "%s loaded", cases[k].what);
    market_data_free(got);
    cr_expect(strncmp(error_message(), path, strlen(path)) == 0, "names the file: %s", error_message());
    cr_expect(strstr(error_message(), cases[k].message), "%s: %s", cases[k].what, error_message());
  }
  market_data_free(d);
  remove_tree(dir);
  free(dir);
}

// The same data saved twice, more than a second apart, gives the same file bytes: no object in the
// file (the root group included) records when it was made or changed, so an import or a checkpoint
// is reproducible byte for byte (HDF5 stores times in seconds by default).
Test(market_data, the_same_data_saved_twice_is_the_same_bytes) {
  char *dir = make_temp_dir();
  MarketData *d = small_data();
  char first[1024], second[1024];
  snprintf(first, sizeof first, "%s/first.h5", dir);
  snprintf(second, sizeof second, "%s/second.h5", dir);
  cr_assert_eq(market_data_save_h5(d, first), 0, "%s", error_message());
  nanosleep(&(struct timespec){1, 100000000}, NULL);  // a later second on the clock
  cr_assert_eq(market_data_save_h5(d, second), 0, "%s", error_message());
  size_t n_first = 0, n_second = 0;
  char *a = read_text(first, &n_first), *b = read_text(second, &n_second);
  cr_assert(a && b);
  cr_assert_eq(n_first, n_second, "sizes %zu and %zu", n_first, n_second);
  size_t at = 0;
  while (at < n_first && a[at] == b[at]) at++;
  cr_expect_eq(at, n_first, "the files differ first at byte %zu of %zu", at, n_first);
  free(a), free(b);
  market_data_free(d);
  remove_tree(dir);
  free(dir);
}

// A /bars rows attribute larger than any machine's memory (its chunked datasets declared that long,
// no chunk written) is refused as the file's fault before the allocation (it exited 1 there); a
// timestamp outside the years 0000-9999 is refused by name (their differences could overflow).
Test(market_data, h5_of_impossible_size_or_time_is_refused) {
  char *dir = make_temp_dir();
  MarketData *d = small_data();
  char path[1024];
  snprintf(path, sizeof path, "%s/huge.h5", dir);
  cr_assert_eq(market_data_save_h5(d, path), 0, "%s", error_message());
  hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert_geq(f, 0);
  const hsize_t huge = (hsize_t)1e11, chunk = 4096;
  const char *names[] = {"bars/ts", "bars/open", "bars/high", "bars/low", "bars/close", "bars/volume"};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    if (H5Lexists(f, names[k], H5P_DEFAULT) <= 0) continue;
    hid_t old = H5Dopen2(f, names[k], H5P_DEFAULT), type = H5Dget_type(old);
    H5Dclose(old);
    cr_assert_geq(H5Ldelete(f, names[k], H5P_DEFAULT), 0);
    hid_t space = H5Screate_simple(1, &huge, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    hid_t ds = H5Dcreate2(f, names[k], type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    cr_assert_geq(ds, 0, "%s", names[k]);
    H5Dclose(ds), H5Pclose(dcpl), H5Sclose(space), H5Tclose(type);
  }
  cr_assert_geq(H5Adelete_by_name(f, "bars", "rows", H5P_DEFAULT), 0);
  H5Fclose(f);
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert_eq(h5io_attr_write_int64(f, "bars", "rows", (int64_t)huge), 0, "%s", error_message());
  H5Fclose(f);
  MarketData *got = market_data_load_h5(path);
  cr_expect_null(got);
  market_data_free(got);
  cr_expect(strstr(error_message(), "huge.h5: /bars attribute rows = 100000000000 would need"), "%s", error_message());

  d->ts[0] = -9000000000000000000LL;
  cr_expect_eq(market_data_validate(d, "mem"), -1);
  cr_expect(strstr(error_message(), "mem: row 0: timestamp -9000000000000000000 seconds since 1970 (allowed: "), "%s",
            error_message());
  market_data_free(d);
  remove_tree(dir);
  free(dir);
}

Test(market_data, validate_bid_ask_rules) {
  MarketData *d = market_data_new(2);
  d->has_bid_ask = true;
  for (int i = 0; i < 2; i++) {
    d->ts[i] = 86400 * i;
    d->bid_open[i] = 1.0, d->bid_high[i] = 1.2, d->bid_low[i] = 0.9, d->bid_close[i] = 1.1;
    d->ask_open[i] = 1.1, d->ask_high[i] = 1.3, d->ask_low[i] = 1.0, d->ask_close[i] = 1.2;
    d->open[i] = (1.0 + 1.1) / 2, d->high[i] = (1.2 + 1.3) / 2, d->low[i] = (0.9 + 1.0) / 2,
    d->close[i] = (1.1 + 1.2) / 2;
  }
  cr_assert_eq(market_data_validate(d, "mem"), 0, "%s", error_message());
  cr_expect_eq(d->bar_seconds, 86400);
  d->close[1] = 1.16;  // not the mid
  cr_expect_eq(market_data_validate(d, "mem"), -1);
  cr_expect(strstr(error_message(), "mem: row 1 (1970-01-02 00:00): close 1.16 != (bid_close + ask_close) / 2"), "%s",
            error_message());
  d->close[1] = (1.1 + 1.2) / 2, d->ask_close[1] = 1.05, d->ask_low[1] = 1.0;
  cr_expect_eq(market_data_validate(d, "mem"), -1);
  cr_expect(strstr(error_message(), "ask_close 1.05 < bid_close 1.1"), "%s", error_message());
  d->ask_close[1] = 1.2, d->bid_high[1] = NAN;
  cr_expect_eq(market_data_validate(d, "mem"), -1);
  cr_expect(strstr(error_message(), "bid_high = nan: prices must be finite and > 0"), "%s", error_message());
  market_data_free(d);
}

Test(market_data, names_and_formats) {
  char symbol[MARKET_SYMBOL_MAX];
  static const char *const cases[][2] = {
      {"/x/XAUUSD_OANDA_1H_BIDASK.csv", "XAUUSD"},
      {"STOCKS_GOOGL.csv", "GOOGL"},
      {"FOREX_EURUSD_1H_ASK.csv.gz", "EURUSD"},
      {"data/csv/SPY_1D_LEAN.csv.gz", "SPY"},
      {"spy.csv", "SPY"},
      {"_.csv", ""},
      {"FOREX", ""},
      {"BTCUSDT-1h-2023-01.csv", "BTCUSDT"},  // Binance's data dumps
      {"EURUSD-H1-2019.csv", "EURUSD"},
      {"SPY-daily.csv", "SPY"},
      {"AAPL-2024.csv", "AAPL"},
      {"BRK-B.csv", "BRK-B"},  // a ticker with a dash keeps it
      {"EUR-USD_1H.csv", "EUR-USD"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    market_symbol_from_path(cases[k][0], symbol, sizeof symbol);
    cr_expect_str_eq(symbol, cases[k][1], "%s", cases[k][0]);
  }
  MarketFormat f;
  cr_expect_eq(market_format_parse("lean-equity", &f), 0);
  cr_expect_eq(f, MARKET_FORMAT_LEAN_EQUITY);
  cr_expect_eq(market_format_parse("LEAN", &f), -1);
  cr_expect(strstr(error_message(), "allowed: auto, lean-quote, lean-equity, csv"), "%s", error_message());
  char buf[40];
  cr_expect_str_eq(market_time_format(1551135600, buf, sizeof buf), "2019-02-25 23:00");
  cr_expect_str_eq(market_time_format(1551135601, buf, sizeof buf), "2019-02-25 23:00:01");
  int64_t ts[] = {0, 60, 120, 300, 360, 420, 720};  // differences 60 x4, 180, 300
  cr_expect_eq(market_data_bar_seconds(ts, 7), 60);
  cr_expect_eq(market_data_bar_seconds(ts, 1), 0);
}

// --- mutation fuzzing ------------------------------------------------------------------------------------------

static uint64_t fuzz_next(uint64_t *state) {  // splitmix64: the state is ours, passed in
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static size_t fuzz_below(uint64_t *state, size_t n) { return n ? (size_t)(fuzz_next(state) % n) : 0; }

// One random change to text (length *len, capacity cap). Returns the new length.
static size_t fuzz_mutate(uint64_t *rng, char *text, size_t len, size_t cap) {
  static const char alphabet[] = "0123456789,,,\n\n\r.-+: eE9T\t";
  size_t at = fuzz_below(rng, len + 1);
  switch (fuzz_below(rng, 8)) {
    case 0:  // replace a byte with an interesting one
    case 1:
      if (len) text[fuzz_below(rng, len)] = alphabet[fuzz_below(rng, sizeof alphabet - 1)];
      break;
    case 2:  // any byte at all, NUL and high bytes included
      if (len) text[fuzz_below(rng, len)] = (char)fuzz_next(rng);
      break;
    case 3:  // insert
      if (len + 1 < cap) {
        memmove(text + at + 1, text + at, len - at);
        text[at] = alphabet[fuzz_below(rng, sizeof alphabet - 1)];
        len++;
      }
      break;
    case 4:  // delete
      if (at < len) memmove(text + at, text + at + 1, len - at - 1), len--;
      break;
    case 5:  // truncate
      len = at;
      break;
    case 6:    // duplicate a line
    case 7: {  // or swap it with the next
      size_t start = at;
      while (start > 0 && text[start - 1] != '\n') start--;
      size_t end = start;
      while (end < len && text[end] != '\n') end++;
      if (end < len) end++;  // include its newline
      size_t n = end - start;
      if (n == 0) break;
      if (fuzz_below(rng, 2) == 0 && len + n < cap) {
        memmove(text + end + n, text + end, len - end);
        memcpy(text + end, text + start, n);
        len += n;
      } else if (end < len) {
        size_t next_end = end;
        while (next_end < len && text[next_end] != '\n') next_end++;
        if (next_end < len) next_end++;
        char tmp[4096];
        size_t m = next_end - end;
        if (n + m <= sizeof tmp) {
          memcpy(tmp, text + end, m);
          memcpy(tmp + m, text + start, n);
          memcpy(text + start, tmp, n + m);
        }
      }
      break;
    }
  }
  return len;
}

Test(market_data, mutation_fuzz_never_crashes) {
  static const char *const seeds[] = {
      "20060320 00:00,552.8,554.7,552.4,554.2,0,555.3,557.2,554.9,556.7,0\n"
      "20060320 01:00,554.2,554.8,554.2,554.6,0,556.7,557.3,556.7,557.1,0\n"
      "20060320 02:00,554.6,554.6,554.4,554.4,0,557.1,557.1,556.9,556.9,0\n"
      "20060320 03:00,554.4,554.9,554.3,554.8,0,556.9,557.4,556.8,557.3,0\n"
      "20060320 05:00,554.8,555.0,554.1,554.5,0,557.3,557.5,556.6,557.0,0",
      "19980102 00:00,973100,975300,965300,973600,2150000\n"
      "19980105 00:00,978400,984400,967800,977500,4030800\n"
      "19980106 00:00,972500,972800,961900,966300,2821800\n"
      "19980107 00:00,965000,970000,960000,969000,3000000",
      "Date,Open,High,Low,Close,Adj Close,Volume\n"
      "2009-05-22,198.528534,199.524521,196.196198,196.946945,196.946945,3433700\n"
      "2009-05-26,196.171173,202.702698,195.195190,202.382385,202.382385,6202700\n"
      "2009-05-27,203.023026,206.136139,202.607605,202.982986,202.982986,6062500\n",
      "Time,Open,High,Low,Close,Volume\r\n"
      "01.01.2017 22:00:00.000,1.05236,1.05253,1.05221,1.05227,143539993.3\r\n"
      "01.01.2017 23:00:00.000,1.05227,1.05426,1.05226,1.05282,253139999.4\r\n"
      "02.01.2017 00:00:00.000,1.05282,1.05339,1.05255,1.05301,168760001.2\r\n",
      "timestamp,bid_open,bid_high,bid_low,bid_close,ask_open,ask_high,ask_low,ask_close,volume\n"
      "2019-01-02 10:00,1.1,1.2,1.0,1.15,1.11,1.21,1.01,1.16,5\n"
      "2019-01-02 11:00:00,1.15,1.25,1.1,1.2,1.16,1.26,1.11,1.21,0\n"
      "2019-01-02T12:00,1.2,1.3,1.1,1.25,1.21,1.31,1.11,1.26,7e2\n",
  };
  static const MarketFormat seed_formats[] = {MARKET_FORMAT_LEAN_QUOTE, MARKET_FORMAT_LEAN_EQUITY, MARKET_FORMAT_CSV,
                                              MARKET_FORMAT_CSV, MARKET_FORMAT_CSV};
  enum { N_SEEDS = sizeof seeds / sizeof seeds[0], PER_SEED = 800, CAP = 8192 };
  char *dir = make_temp_dir();
  char path[1024];
  snprintf(path, sizeof path, "%s/mutant.csv", dir);
  char *text = malloc(CAP);
  cr_assert(text);
  uint64_t rng = 20240611;
  int accepted = 0, rejected = 0;
  for (int s = 0; s < N_SEEDS; s++) {
    // the unmutated seed loads
    write_file(path, seeds[s], strlen(seeds[s]));
    MarketData *d = market_data_load_csv(path, MARKET_FORMAT_AUTO);
    cr_assert(d, "seed %d: %s", s, error_message());
    market_data_free(d);
    for (int k = 0; k < PER_SEED; k++) {
      size_t len = strlen(seeds[s]);
      memcpy(text, seeds[s], len);
      int n_mutations = 1 + (int)fuzz_below(&rng, 4);
      for (int m = 0; m < n_mutations; m++) len = fuzz_mutate(&rng, text, len, CAP);
      write_file(path, text, len);
      MarketFormat format = k % 2 ? seed_formats[s] : MARKET_FORMAT_AUTO;
      error_clear();
      d = market_data_load_csv(path, format);
      if (d) {
        accepted++;
        cr_assert(d->rows >= 1);
        cr_assert_eq(market_data_validate(d, "fuzz"), 0, "seed %d mutant %d accepted but invalid: %s", s, k,
                     error_message());
        market_data_free(d);
      } else {
        rejected++;
        cr_assert(message_names_line(error_message(), path, 0), "seed %d mutant %d: no FILE:LINE: in '%s'", s, k,
                  error_message());
      }
    }
  }
  cr_log_info("mutation fuzz: %d accepted, %d rejected", accepted, rejected);
  cr_expect(accepted > 100 && rejected > 1000, "the mutations exercise both outcomes (%d accepted, %d rejected)",
            accepted, rejected);
  free(text);
  remove_tree(dir);
  free(dir);
}
