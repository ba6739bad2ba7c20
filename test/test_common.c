// test/test_common.c: calendar arithmetic, error messages, logging, atomic files, gnuplot runs, HDF5
// helpers, text escapes and the CPU-wait count.
//
// Calendar values were taken from Python's datetime (UTC), not from this code.
#define _GNU_SOURCE  // sched_setaffinity and CPU_SET, for the CPU-wait test
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/check.h"
#include "common/cpu_wait.h"
#include "common/error.h"
#include "common/gnuplot.h"
#include "common/h5io.h"
#include "common/json_writer.h"
#include "common/log.h"
#include "common/text.h"
#include "common/time_utc.h"
#include "common/timer.h"
#include "test/affinity_util.h"
#include "test/program_util.h"

// --- helpers --------------------------------------------------------------------------------------------

// A fresh empty directory per test (Criterion runs each test in its own process).
static void make_temp_dir(char *dir, size_t capacity) {
  snprintf(dir, capacity, "/tmp/ppo_test_common_XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

// Number of entries in `dir` other than . and .. (to prove no temporary file was left).
static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static void remove_tree(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

static void read_whole(const char *path, char *out, size_t capacity) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  size_t n = fread(out, 1, capacity - 1, f);
  out[n] = '\0';
  fclose(f);
}

// Runs fn in a child process with stderr captured; returns the exit status, stderr in out.
static int run_captured(void (*fn)(void), char *out, size_t capacity) {
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    dup2(fds[1], 2);
    close(fds[0]);
    fn();
    _exit(0);
  }
  close(fds[1]);
  size_t used = 0;
  ssize_t n;
  while (used + 1 < capacity && (n = read(fds[0], out + used, capacity - 1 - used)) > 0) used += (size_t)n;
  out[used] = '\0';
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// --- calendar -------------------------------------------------------------------------------------------

typedef struct {
  const char *text;
  int64_t seconds;
  int weekday;  // Monday = 0
} CalendarCase;

static const CalendarCase calendar_cases[] = {
    {"1970-01-01", 0, 3},
    {"2000-03-01", 951868800, 2},
    {"2006-03-20 00:00", 1142812800, 0},  // XAUUSD's first bar
    {"2019-02-25 23:00", 1551135600, 0},  // XAUUSD's last bar
    {"1900-02-28", -2203977600, 2},
    {"2400-02-29 12:34:56", 13574608496, 1},
    {"1969-12-31 23:59:59", -1, 2},
};

Test(time_utc, known_dates_from_python) {
  for (size_t i = 0; i < sizeof calendar_cases / sizeof calendar_cases[0]; i++) {
    int64_t t = 12345;
    cr_assert(utc_parse_iso(calendar_cases[i].text, &t), "cannot parse %s", calendar_cases[i].text);
    cr_assert_eq(t, calendar_cases[i].seconds, "%s: %lld", calendar_cases[i].text, (long long)t);
    cr_assert_eq(utc_weekday(t), calendar_cases[i].weekday, "%s weekday", calendar_cases[i].text);
  }
}

Test(time_utc, round_trip_over_a_million_days) {
  for (int64_t days = -800000; days <= 800000; days += 7) {
    int64_t t = days * 86400 + (days % 86400 + 86400) % 86400;
    CivilTime c = utc_to_civil(t);
    cr_assert(utc_civil_valid(&c));
    cr_assert_eq(utc_from_civil(&c), t, "day %lld", (long long)days);
  }
}

Test(time_utc, rejects_impossible_and_malformed_dates) {
  const char *bad[] = {"2019-02-29",       "2100-02-29", "2019-13-01", "2019-00-10",  "2019-04-31", "2019-01-01 24:00",
                       "2019-01-01 10:60", "2019-1-01",  "20190101",   "2019-01-01x", "",           "2019-01-01 10",
                       "abcd-ef-gh"};
  int64_t t;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_assert_not(utc_parse_iso(bad[i], &t), "accepted '%s'", bad[i]);
  cr_assert(utc_parse_iso("2016-02-29", &t));
  cr_assert(utc_parse_iso("2000-02-29T23:59:59", &t));
}

Test(time_utc, formats) {
  char buf[32];
  cr_assert_str_eq(utc_format(1142812800 + 3600 * 5 + 60 * 7, false, buf, sizeof buf), "2006-03-20 05:07");
  cr_assert_str_eq(utc_format(-1, true, buf, sizeof buf), "1969-12-31");
}

// Any int64 formats without overflow (a damaged checkpoint's data_first_ts of INT64_MIN overflowed
// days * 86400 in utc_to_civil, UBSan): dates within the years 0000-9999, the number outside.
// Boundaries from Python: datetime(1, 1, 1) is -62135596800 and year 0 is 366 days before it (leap).
Test(time_utc, formats_any_int64) {
  static const struct {
    int64_t seconds;
    const char *text;
  } cases[] = {
      {-62167219200, "0000-01-01 00:00"},
      {-62167219201, "-62167219201 seconds since 1970"},
      {253402300799, "9999-12-31 23:59"},
      {253402300800, "253402300800 seconds since 1970"},
      {INT64_MIN, "-9223372036854775808 seconds since 1970"},
      {INT64_MIN + 1, "-9223372036854775807 seconds since 1970"},
      {INT64_MAX, "9223372036854775807 seconds since 1970"},
  };
  char buf[64];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cr_expect_str_eq(utc_format(cases[i].seconds, false, buf, sizeof buf), cases[i].text, "%lld",
                     (long long)cases[i].seconds);
    cr_expect_eq(utc_in_four_digit_years(cases[i].seconds), cases[i].text[4] == '-', "%lld",
                 (long long)cases[i].seconds);
  }
  cr_expect_str_eq(utc_format(-62167219200, true, buf, sizeof buf), "0000-01-01");
  char small[8];  // cut, never written past
  cr_expect_str_eq(utc_format(INT64_MIN, true, small, sizeof small), "-922337");
  // utc_to_civil itself: a valid time of day at both ends of int64
  CivilTime lo = utc_to_civil(INT64_MIN), hi = utc_to_civil(INT64_MAX);
  cr_expect(lo.hour >= 0 && lo.hour < 24 && lo.minute >= 0 && lo.second >= 0 && lo.second < 60);
  cr_expect(hi.hour >= 0 && hi.hour < 24 && hi.minute >= 0 && hi.second >= 0 && hi.second < 60);
}

// --- errors and logging ------------------------------------------------------------------------------------

Test(error, set_prepend_clear) {
  error_set("bad value %d", 7);
  cr_assert_str_eq(error_message(), "bad value 7");
  error_prepend("file.ini:%d: ", 3);
  cr_assert_str_eq(error_message(), "file.ini:3: bad value 7");
  error_clear();
  cr_assert_str_eq(error_message(), "");
}

Test(error, long_messages_are_truncated_not_overflowed) {
  char big[3 * ERROR_MESSAGE_MAX];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  error_set("%s", big);
  cr_assert_eq(strlen(error_message()), ERROR_MESSAGE_MAX - 1);
  error_prepend("%s", big);
  cr_assert_eq(strlen(error_message()), ERROR_MESSAGE_MAX - 1);
}

Test(log, levels_filter_and_format, .init = cr_redirect_stderr) {
  log_set_level(LOG_LEVEL_WARN);
  log_info("hidden %d", 1);
  log_warn("shown %d", 2);
  log_error("also shown");
  log_progress("progress is for terminals only");  // stderr is a pipe here
  log_progress_end();
  fflush(stderr);
  cr_assert_stderr_eq_str("[warn] shown 2\n[error] also shown\n");
}

Test(log, parses_level_names) {
  cr_assert_eq(log_level_parse("debug"), LOG_LEVEL_DEBUG);
  cr_assert_eq(log_level_parse("error"), LOG_LEVEL_ERROR);
  cr_assert_eq(log_level_parse("verbose"), -1);
}

// --- check macros -----------------------------------------------------------------------------------

static void failing_check(void) {
  int buffers = 0;
  CHECK(buffers > 0, "set [run] threads to a positive number");
}

static void failing_check_errno(void) {
  FILE *f = fopen("/nonexistent-dir-ppo/file", "r");
  CHECK_ERRNO(f != NULL, "");
}

static void huge_allocation(void) { CHECK_ALLOC((size_t)1 << 62, "the rollout buffer"); }

Test(check, failure_names_statement_location_and_hint) {
  char text[1024];
  cr_assert_eq(run_captured(failing_check, text, sizeof text), EXIT_RUNTIME);
  cr_assert(strstr(text, "test_common.c:"), "%s", text);
  cr_assert(strstr(text, "CHECK(buffers > 0) failed"), "%s", text);
  cr_assert(strstr(text, "hint: set [run] threads to a positive number"), "%s", text);
  cr_assert_eq(run_captured(failing_check_errno, text, sizeof text), EXIT_RUNTIME);
  cr_assert(strstr(text, "CHECK(f != NULL) failed: No such file or directory"), "%s", text);
  cr_assert_eq(run_captured(huge_allocation, text, sizeof text), EXIT_RUNTIME);
  cr_assert(strstr(text, "out of memory allocating 4611686018427387904 bytes for the rollout buffer"), "%s", text);
}

// --- atomic files ----------------------------------------------------------------------------------------

Test(atomic_file, commit_replaces_and_leaves_no_temporary) {
  char dir[64], path[128], text[64];
  make_temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/out.txt", dir);
  AtomicFile af;
  FILE *f = atomic_file_open(&af, path);
  cr_assert_not_null(f, "%s", error_message());
  fputs("first", f);
  cr_assert_eq(access(path, F_OK), -1, "the final name must not exist before commit");
  cr_assert_eq(atomic_file_commit(&af), 0, "%s", error_message());
  read_whole(path, text, sizeof text);
  cr_assert_str_eq(text, "first");

  f = atomic_file_open(&af, path);
  fputs("second", f);
  read_whole(path, text, sizeof text);
  cr_assert_str_eq(text, "first", "old content visible until commit");
  cr_assert_eq(atomic_file_commit(&af), 0);
  read_whole(path, text, sizeof text);
  cr_assert_str_eq(text, "second");
  cr_assert_eq(count_entries(dir), 1);
  remove_tree(dir);
}

// A program killed mid-write (Ctrl-C during ppo-data import, a kill during ppo-eval) leaves neither
// the half-written temporary file nor a final one; a file it published before stays. Under nohup
// (SIGHUP ignored) SIGHUP stays ignored.
Test(atomic_file, a_signal_removes_the_unpublished_temporary_files) {
  const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t k = 0; k < sizeof sigs / sizeof sigs[0]; k++) {
    char dir[64], done[128], half[128], unnamed[128];
    make_temp_dir(dir, sizeof dir);
    snprintf(done, sizeof done, "%s/done.csv", dir);
    snprintf(half, sizeof half, "%s/half.csv", dir);
    snprintf(unnamed, sizeof unnamed, "%s/other.h5", dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
      atomic_file_remove_on_signals();
      AtomicFile a, b;
      fputs("published", atomic_file_open(&a, done));
      if (atomic_file_commit(&a) != 0) _exit(3);
      fputs("half", atomic_file_open(&b, half));
      fflush(b.stream);
      char tmp[160];  // a temporary made by name (as h5io does), not yet published
      if (atomic_file_temp_path(unnamed, tmp, sizeof tmp) != 0) _exit(4);
      FILE *f = fopen(tmp, "wb");
      if (!f) _exit(5);
      fclose(f);
      raise(sigs[k]);
      _exit(6);  // not reached
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == sigs[k], "signal %d: status %#x", sigs[k], status);
    cr_expect_eq(count_entries(dir), 1, "signal %d: only done.csv may be left", sigs[k]);
    cr_expect_eq(access(done, F_OK), 0, "signal %d: the published file", sigs[k]);
    remove_tree(dir);
  }
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    signal(SIGHUP, SIG_IGN);
    atomic_file_remove_on_signals();
    raise(SIGHUP);
    _exit(0);
  }
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "an ignored SIGHUP ended the process: %#x", status);
}

Test(atomic_file, abort_keeps_the_old_file) {
  char dir[64], path[128], text[64];
  make_temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/out.txt", dir);
  AtomicFile af;
  fputs("kept", atomic_file_open(&af, path));
  cr_assert_eq(atomic_file_commit(&af), 0);
  fputs("lost", atomic_file_open(&af, path));
  atomic_file_abort(&af);
  read_whole(path, text, sizeof text);
  cr_assert_str_eq(text, "kept");
  cr_assert_eq(count_entries(dir), 1);
  remove_tree(dir);
}

// A set (ppo-eval's report.json and CSVs): finished files stay under their temporary names until
// atomic_file_publish_set renames them all; aborted instead, none is published and none is left;
// and a signal before the publishing removes the finished ones too.
Test(atomic_file, a_set_is_published_all_or_none) {
  char dir[64], paths[3][128], text[64];
  make_temp_dir(dir, sizeof dir);
  const char *names[3] = {"a.csv", "b.csv", "report.json"};
  for (int k = 0; k < 3; k++) {
    snprintf(paths[k], sizeof paths[k], "%s/%s", dir, names[k]);
    cr_assert_eq(atomic_file_write_text(paths[k], "old"), 0, "%s", error_message());
  }
  AtomicFile set[3];
  for (int k = 0; k < 3; k++) {
    fputs("new", atomic_file_open(&set[k], paths[k]));
    cr_assert_eq(atomic_file_finish(&set[k]), 0, "%s", error_message());
  }
  cr_expect_eq(count_entries(dir), 6, "three finished temporary files beside the old ones");
  for (int k = 0; k < 3; k++) atomic_file_abort(&set[k]);
  cr_expect_eq(count_entries(dir), 3);
  for (int k = 0; k < 3; k++) {
    read_whole(paths[k], text, sizeof text);
    cr_expect_str_eq(text, "old", "%s", names[k]);
  }
  for (int k = 0; k < 3; k++) {
    fputs("new", atomic_file_open(&set[k], paths[k]));
    cr_assert_eq(atomic_file_finish(&set[k]), 0, "%s", error_message());
  }
  cr_assert_eq(atomic_file_publish_set(set, 3), 0, "%s", error_message());
  cr_expect_eq(count_entries(dir), 3);
  for (int k = 0; k < 3; k++) {
    read_whole(paths[k], text, sizeof text);
    cr_expect_str_eq(text, "new", "%s", names[k]);
    atomic_file_abort(&set[k]);  // nothing left to remove: the published file stays
    cr_expect_eq(access(paths[k], F_OK), 0, "%s", names[k]);
  }
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    atomic_file_remove_on_signals();
    for (int k = 0; k < 3; k++) {
      fputs("newer", atomic_file_open(&set[k], paths[k]));
      if (atomic_file_finish(&set[k]) != 0) _exit(3);
    }
    raise(SIGTERM);
    _exit(6);  // not reached
  }
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %#x", status);
  cr_expect_eq(count_entries(dir), 3, "the finished temporary files removed");
  remove_tree(dir);
}

Test(atomic_file, missing_directory_is_a_clear_error) {
  AtomicFile af;
  cr_assert_null(atomic_file_open(&af, "/nonexistent-dir-ppo/out.txt"));
  cr_assert(strstr(error_message(), "/nonexistent-dir-ppo/out.txt: cannot create file"), "%s", error_message());
}

// --- HDF5 -----------------------------------------------------------------------------------------------

Test(h5io, round_trip_every_type_rank_and_compression) {
  char dir[64], path[128];
  make_temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/data.h5", dir);
  enum { ROWS = 1000, COLS = 3 };
  static double f64[ROWS * COLS];
  static float f32[ROWS * COLS];
  static int64_t i64[ROWS * COLS];
  static uint8_t u8[ROWS * COLS];
  static uint64_t u64[ROWS * COLS];
  for (int i = 0; i < ROWS * COLS; i++) {
    f64[i] = sin(i) * 1e3;
    f32[i] = (float)cos(i);
    i64[i] = (int64_t)i * -123456789;
    u8[i] = (uint8_t)(i * 7);
    u64[i] = 0xfedcba9876543210ull ^ (uint64_t)i;
  }
  f64[5] = NAN;
  f64[6] = -INFINITY;
  hsize_t dims2[2] = {ROWS, COLS}, dims1[1] = {ROWS * COLS}, empty[1] = {0};
  H5ioWriter w;
  cr_assert_eq(h5io_create(&w, path), 0, "%s", error_message());
  for (int compress = 0; compress <= 1; compress++) {
    char name[64];
    snprintf(name, sizeof name, "c%d/f64", compress);
    cr_assert_eq(h5io_write(w.file, name, H5IO_FLOAT64, 2, dims2, f64, compress * 6), 0, "%s", error_message());
    snprintf(name, sizeof name, "c%d/deep/f32", compress);
    cr_assert_eq(h5io_write(w.file, name, H5IO_FLOAT32, 2, dims2, f32, compress * 6), 0);
    snprintf(name, sizeof name, "c%d/i64", compress);
    cr_assert_eq(h5io_write(w.file, name, H5IO_INT64, 1, dims1, i64, compress * 6), 0);
    snprintf(name, sizeof name, "c%d/u8", compress);
    cr_assert_eq(h5io_write(w.file, name, H5IO_UINT8, 1, dims1, u8, compress * 6), 0);
    snprintf(name, sizeof name, "c%d/u64", compress);
    cr_assert_eq(h5io_write(w.file, name, H5IO_UINT64, 1, dims1, u64, compress * 6), 0);
    snprintf(name, sizeof name, "c%d/empty", compress);
    cr_assert_eq(h5io_write(w.file, name, H5IO_FLOAT64, 1, empty, NULL, compress * 6), 0, "%s", error_message());
  }
  cr_assert_eq(h5io_attr_write_string(w.file, "/", "symbol", "XAUUSD"), 0);
  cr_assert_eq(h5io_attr_write_int64(w.file, "c0", "bar_seconds", 3600), 0);
  cr_assert_eq(h5io_attr_write_double(w.file, "meta/info", "scale", 65536.0), 0, "%s", error_message());
  cr_assert_eq(h5io_attr_write_string(w.file, "/", "symbol", "EURUSD"), 0, "attributes can be replaced");
  cr_assert_eq(access(path, F_OK), -1, "nothing at the final name before commit");
  cr_assert_eq(h5io_commit(&w), 0, "%s", error_message());
  cr_assert_eq(count_entries(dir), 1);

  hid_t file = h5io_open_read(path);
  cr_assert_geq(file, 0, "%s", error_message());
  static double g64[ROWS * COLS];
  static float g32[ROWS * COLS];
  static int64_t gi64[ROWS * COLS];
  static uint8_t gu8[ROWS * COLS];
  static uint64_t gu64[ROWS * COLS];
  for (int compress = 0; compress <= 1; compress++) {
    char name[64];
    snprintf(name, sizeof name, "c%d/f64", compress);
    cr_assert_eq(h5io_read(file, name, H5IO_FLOAT64, 2, dims2, g64), 0, "%s", error_message());
    cr_assert(memcmp(f64, g64, sizeof f64) == 0, "%s differs", name);
    snprintf(name, sizeof name, "c%d/deep/f32", compress);
    cr_assert_eq(h5io_read(file, name, H5IO_FLOAT32, 2, dims2, g32), 0);
    cr_assert(memcmp(f32, g32, sizeof f32) == 0);
    snprintf(name, sizeof name, "c%d/i64", compress);
    cr_assert_eq(h5io_read(file, name, H5IO_INT64, 1, dims1, gi64), 0);
    cr_assert(memcmp(i64, gi64, sizeof i64) == 0);
    snprintf(name, sizeof name, "c%d/u8", compress);
    cr_assert_eq(h5io_read(file, name, H5IO_UINT8, 1, dims1, gu8), 0);
    cr_assert(memcmp(u8, gu8, sizeof u8) == 0);
    snprintf(name, sizeof name, "c%d/u64", compress);
    cr_assert_eq(h5io_read(file, name, H5IO_UINT64, 1, dims1, gu64), 0);
    cr_assert(memcmp(u64, gu64, sizeof u64) == 0);
    snprintf(name, sizeof name, "c%d/empty", compress);
    hsize_t shape[4];
    cr_assert_eq(h5io_shape(file, name, 4, shape), 1);
    cr_assert_eq(shape[0], 0);
  }
  char text[64];
  int64_t bar_seconds = 0;
  double scale = 0;
  cr_assert_eq(h5io_attr_read_string(file, "/", "symbol", text, sizeof text), 0, "%s", error_message());
  cr_assert_str_eq(text, "EURUSD");
  cr_assert_eq(h5io_attr_read_int64(file, "c0", "bar_seconds", &bar_seconds), 0);
  cr_assert_eq(bar_seconds, 3600);
  cr_assert_eq(h5io_attr_read_double(file, "meta/info", "scale", &scale), 0);
  cr_assert_eq(scale, 65536.0);
  cr_assert(h5io_exists(file, "c1/deep/f32"));
  cr_assert_not(h5io_exists(file, "c1/nothing/here"));
  h5io_close(file);
  remove_tree(dir);
}

Test(h5io, compression_shrinks_repetitive_data) {
  char dir[64], path[128];
  make_temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/z.h5", dir);
  enum { N = 200000 };
  static int64_t ts[N];
  for (int i = 0; i < N; i++) ts[i] = 1142812800 + 3600 * (int64_t)i;
  hsize_t dims[1] = {N};
  H5ioWriter w;
  cr_assert_eq(h5io_create(&w, path), 0);
  cr_assert_eq(h5io_write(w.file, "ts", H5IO_INT64, 1, dims, ts, 6), 0);
  cr_assert_eq(h5io_commit(&w), 0);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_lt(st.st_size, (off_t)(N * sizeof(int64_t) / 10), "compressed size %lld", (long long)st.st_size);
  remove_tree(dir);
}

Test(h5io, reader_errors_name_file_and_dataset) {
  char dir[64], path[128];
  make_temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/e.h5", dir);
  double x[4] = {1, 2, 3, 4};
  hsize_t dims[1] = {4};
  H5ioWriter w;
  cr_assert_eq(h5io_create(&w, path), 0);
  cr_assert_eq(h5io_write(w.file, "bars/close", H5IO_FLOAT64, 1, dims, x, 0), 0);
  cr_assert_eq(h5io_commit(&w), 0);

  hid_t file = h5io_open_read(path);
  double y[8];
  hsize_t wrong[1] = {5};
  cr_assert_eq(h5io_read(file, "bars/close", H5IO_FLOAT64, 1, wrong, y), -1);
  cr_assert(strstr(error_message(), "e.h5: dataset bars/close has shape (4) but (5) was expected"), "%s",
            error_message());
  int64_t ints[4];
  cr_assert_eq(h5io_read(file, "bars/close", H5IO_INT64, 1, dims, ints), -1);
  cr_assert(strstr(error_message(), "holds floating-point numbers but int64 was expected"), "%s", error_message());
  cr_assert_eq(h5io_read(file, "bars/open", H5IO_FLOAT64, 1, dims, y), -1);
  cr_assert(strstr(error_message(), "dataset bars/open is missing"), "%s", error_message());
  cr_assert_eq(h5io_read(file, "nogroup/open", H5IO_FLOAT64, 1, dims, y), -1);
  int64_t v;
  cr_assert_eq(h5io_attr_read_int64(file, "bars", "rows", &v), -1);
  cr_assert(strstr(error_message(), "attribute rows of bars is missing"), "%s", error_message());
  h5io_close(file);

  cr_assert_lt(h5io_open_read("/nonexistent/x.h5"), 0);
  cr_assert(strstr(error_message(), "/nonexistent/x.h5: cannot open: No such file or directory"), "%s",
            error_message());
  char text_path[128];
  snprintf(text_path, sizeof text_path, "%s/not.h5", dir);
  FILE *f = fopen(text_path, "w");
  fputs("this is a CSV, not HDF5\n", f);
  fclose(f);
  cr_assert_lt(h5io_open_read(text_path), 0);
  cr_assert(strstr(error_message(), "not an HDF5 file"), "%s", error_message());
  // cut short (a partial copy): the signature is there, the file does not open
  cr_assert_eq(truncate(path, 1000), 0);
  cr_assert_lt(h5io_open_read(path), 0);
  cr_assert(strstr(error_message(), "e.h5: the HDF5 file is cut short (a partial copy"), "%s", error_message());
  // the signature, then no valid superblock: not called short
  f = fopen(text_path, "wb");
  fputs("\x89HDF\r\n\x1a\n", f);
  for (int i = 0; i < 4088; i++) fputc(0xff, f);
  fclose(f);
  cr_assert_lt(h5io_open_read(text_path), 0);
  cr_assert(strstr(error_message(), "not.h5: cannot open this HDF5 file (damaged, written by a newer HDF5"), "%s",
            error_message());
  remove_tree(dir);
}

Test(h5io, abort_and_failed_create_leave_nothing) {
  char dir[64], path[128];
  make_temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/a.h5", dir);
  H5ioWriter w;
  cr_assert_eq(h5io_create(&w, path), 0);
  double x = 1;
  hsize_t one[1] = {1};
  cr_assert_eq(h5io_write(w.file, "x", H5IO_FLOAT64, 1, one, &x, 0), 0);
  cr_assert_eq(h5io_write(w.file, "x", H5IO_FLOAT64, 1, one, &x, 0), -1, "a dataset cannot be written twice");
  cr_assert(strstr(error_message(), "cannot create dataset x"), "%s", error_message());
  h5io_abort(&w);
  cr_assert_eq(count_entries(dir), 0);
  cr_assert_eq(h5io_create(&w, "/nonexistent-dir-ppo/a.h5"), -1);
  cr_assert(strstr(error_message(), "cannot create HDF5 file (No such file or directory)"), "%s", error_message());
  remove_tree(dir);
}

// h5io_create writes the 1.10 format: a superblock of version 3 and chunk indexes with checksums
// (a fixed array: a flipped bit in a chunk's address is refused, where the 1.8 format's v1 B-tree
// read the dataset as zeros); files in the earlier formats still load: the earliest (superblock 0,
// the shipped market files' before they were rebuilt) and 1.8 (checkpoints written before), both with
// v1 B-tree chunk indexes. A dataset of several chunks, checksummed, and the root's attributes.
Test(h5io, writes_the_1_10_format_and_reads_the_earlier_ones) {
  char dir[64], path[128];
  make_temp_dir(dir, sizeof dir);
  enum { N = 100000 };  // 800 KB of float64: four chunks of about 256 KiB
  double *values = malloc(N * sizeof *values), *got = malloc(N * sizeof *got);
  cr_assert(values && got);
  for (int i = 0; i < N; i++) values[i] = 0.5 * i;
  const hsize_t dims[1] = {N};
  static const struct {
    const char *name;
    H5F_libver_t low;  // -1: h5io_create
    unsigned superblock;
  } formats[] = {{"new", (H5F_libver_t)-1, 3}, {"earliest", H5F_LIBVER_EARLIEST, 0}, {"v18", H5F_LIBVER_V18, 2}};
  for (size_t k = 0; k < sizeof formats / sizeof formats[0]; k++) {
    snprintf(path, sizeof path, "%s/%s.h5", dir, formats[k].name);
    H5ioWriter w = {.file = H5I_INVALID_HID};
    if ((int)formats[k].low < 0) {
      cr_assert_eq(h5io_create(&w, path), 0, "%s", error_message());
    } else {
      hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
      H5Pset_libver_bounds(fapl, formats[k].low, H5F_LIBVER_V18);
      w.file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
      H5Pclose(fapl);
      cr_assert(w.file >= 0);
    }
    cr_assert_eq(h5io_write(w.file, "g/x", H5IO_FLOAT64, 1, dims, values, H5IO_CHECKSUM | 6), 0, "%s", error_message());
    cr_assert_eq(h5io_attr_write_int64(w.file, "/", "answer", 42), 0, "%s", error_message());
    if ((int)formats[k].low < 0)
      cr_assert_eq(h5io_commit(&w), 0, "%s", error_message());
    else
      cr_assert(H5Fclose(w.file) >= 0);
    hid_t file = h5io_open_read(path);
    cr_assert(file >= 0, "%s: %s", formats[k].name, error_message());
    H5F_info2_t info;
    cr_assert(H5Fget_info2(file, &info) >= 0);
    cr_expect_eq(info.super.version, formats[k].superblock, "%s: superblock version %u", formats[k].name,
                 info.super.version);
    memset(got, 0, N * sizeof *got);
    int64_t answer = 0;
    cr_expect_eq(h5io_read(file, "g/x", H5IO_FLOAT64, 1, dims, got), 0, "%s: %s", formats[k].name, error_message());
    cr_expect_eq(memcmp(got, values, N * sizeof *got), 0, "%s: the values read back", formats[k].name);
    cr_expect_eq(h5io_attr_read_int64(file, "/", "answer", &answer), 0, "%s", error_message());
    cr_expect_eq(answer, 42);
    h5io_close(file);
  }
  // The new file's fixed-array data block ("FADB": signature, version, client, header address, then
  // per chunk its address, size and filter mask): one bit of the first chunk's address flipped.
  snprintf(path, sizeof path, "%s/new.h5", dir);
  FILE *f = fopen(path, "rb");
  cr_assert(f);
  static char bytes[1 << 20];
  size_t size = fread(bytes, 1, sizeof bytes, f);
  fclose(f);
  cr_assert(size > 0 && size < sizeof bytes);
  char *block = NULL;
  for (size_t i = 0; i + 4 <= size && !block; i++)
    if (memcmp(bytes + i, "FADB", 4) == 0) block = bytes + i;
  cr_assert(block, "no fixed-array data block: not the 1.10 chunk index");
  block[4 + 1 + 1 + 8] ^= 0x10;
  snprintf(path, sizeof path, "%s/flipped.h5", dir);
  f = fopen(path, "wb");
  cr_assert(f && fwrite(bytes, 1, size, f) == size && fclose(f) == 0);
  hid_t file = h5io_open_read(path);
  cr_assert(file >= 0, "%s", error_message());
  cr_expect_eq(h5io_read(file, "g/x", H5IO_FLOAT64, 1, dims, got), -1, "a flipped chunk address was read");
  cr_expect(strstr(error_message(), "damaged"), "%s", error_message());
  h5io_close(file);
  free(values), free(got);
  remove_tree(dir);
}

Test(h5io, reads_variable_length_string_attributes) {
  // h5py writes strings as variable-length by default; files made by users' scripts must load.
  char dir[64], path[128];
  make_temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/v.h5", dir);
  hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = H5Acreate2(file, "symbol", type, space, H5P_DEFAULT, H5P_DEFAULT);
  const char *value = "SPY";
  H5Awrite(attr, type, &value);
  H5Aclose(attr);
  H5Sclose(space);
  H5Tclose(type);
  H5Fclose(file);
  file = h5io_open_read(path);
  char text[16];
  cr_assert_eq(h5io_attr_read_string(file, "/", "symbol", text, sizeof text), 0, "%s", error_message());
  cr_assert_str_eq(text, "SPY");
  h5io_close(file);
  remove_tree(dir);
}

// What does not fit is refused, never written past the buffer: an array of strings (h5py's
// attrs['symbol'] = ['XAU', 'USD']) and a variable-length string longer than the room.
Test(h5io, refuses_string_arrays_and_long_variable_length_strings) {
  char dir[64], path[128];
  make_temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/v.h5", dir);
  hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t vtype = H5Tcopy(H5T_C_S1), ftype = H5Tcopy(H5T_C_S1);
  H5Tset_size(vtype, H5T_VARIABLE);
  H5Tset_size(ftype, 4);
  hsize_t two = 2;
  hid_t pair = H5Screate_simple(1, &two, NULL), scalar = H5Screate(H5S_SCALAR);
  const char *values[2] = {"XAU", "USD"}, *long_value = "XAUUSD-SPOT-LONDON";
  hid_t a = H5Acreate2(file, "vpair", vtype, pair, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, vtype, values);
  H5Aclose(a);
  a = H5Acreate2(file, "fpair", ftype, pair, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, ftype, "XAU\0USD\0");
  H5Aclose(a);
  a = H5Acreate2(file, "vlong", vtype, scalar, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, vtype, &long_value);
  H5Aclose(a);
  H5Sclose(pair), H5Sclose(scalar), H5Tclose(vtype), H5Tclose(ftype);
  H5Fclose(file);
  file = h5io_open_read(path);
  struct {
    char text[8], guard[8];
  } out;
  memset(&out, 0x5a, sizeof out);
  const char *arrays[] = {"vpair", "fpair"};
  for (int k = 0; k < 2; k++) {
    cr_expect_eq(h5io_attr_read_string(file, "/", arrays[k], out.text, sizeof out.text), -1, "%s", arrays[k]);
    cr_expect(strstr(error_message(), "holds 2 strings, one expected") && strstr(error_message(), arrays[k]), "%s",
              error_message());
  }
  cr_expect_eq(h5io_attr_read_string(file, "/", "vlong", out.text, sizeof out.text), -1);
  cr_expect(strstr(error_message(), "vlong") && strstr(error_message(), "too long (18 bytes, at most 7)"), "%s",
            error_message());
  for (size_t i = 0; i < sizeof out.guard; i++) cr_expect_eq(out.guard[i], 0x5a, "byte %zu past the buffer written", i);
  h5io_close(file);
  remove_tree(dir);
}

// A JsonWriter on a memory stream: *buf holds the text after fclose(out).
static FILE *json_to_memory(JsonWriter *w, char **buf, size_t *len) {
  *buf = NULL, *len = 0;
  FILE *out = open_memstream(buf, len);
  cr_assert_not_null(out);
  json_init(w, out);
  return out;
}

// The writer's output for nested objects and arrays, escapes, NaN/inf as null, exact doubles; and
// python3 -c 'import json; json.loads(...)' would accept it (the expected text is valid JSON).
Test(json_writer, writes_nested_values_escaped_and_exact) {
  char *buf;
  size_t len;
  JsonWriter w;
  FILE *out = json_to_memory(&w, &buf, &len);
  json_object_begin(&w);
  json_kv_string(&w, "name", "a \"quoted\" \\ path\n\ttab\x01");
  json_kv_number(&w, "third", 1.0 / 3.0);
  json_kv_number(&w, "nan", NAN);
  json_kv_number(&w, "inf", -INFINITY);
  json_kv_int(&w, "big", 9007199254740993LL);
  json_key(&w, "list");
  json_array_begin(&w);
  json_bool(&w, true);
  json_null(&w);
  json_object_begin(&w);
  json_object_end(&w);
  json_array_begin(&w);
  json_array_end(&w);
  json_string(&w, NULL);
  json_array_end(&w);
  json_object_end(&w);
  json_finish(&w);
  fclose(out);
  cr_expect_str_eq(buf,
                   "{\n"
                   "  \"name\": \"a \\\"quoted\\\" \\\\ path\\n\\ttab\\u0001\",\n"
                   "  \"third\": 0.33333333333333331,\n"
                   "  \"nan\": null,\n"
                   "  \"inf\": null,\n"
                   "  \"big\": 9007199254740993,\n"
                   "  \"list\": [\n"
                   "    true,\n"
                   "    null,\n"
                   "    {},\n"
                   "    [],\n"
                   "    null\n"
                   "  ]\n"
                   "}\n");
  cr_expect_eq(strtod("0.33333333333333331", NULL), 1.0 / 3.0, "%.17g reads back to the same double");
  free(buf);
}

// Well-formed UTF-8 passes through; each byte that does not begin a well-formed sequence (a Latin-1
// byte, a lone continuation byte, an overlong form, a surrogate, past U+10FFFF, a sequence cut short)
// becomes \ufffd, so strings read from files cannot make the document invalid JSON.
Test(json_writer, strings_that_are_not_utf8_are_written_as_replacement_characters) {
  const struct {
    const char *in, *out;
  } cases[] = {
      {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\x88", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x93\x88\""},
      {"caf\xe9", "\"caf\\ufffd\""},
      {"\x80x", "\"\\ufffdx\""},
      {"\xc0\xafx", "\"\\ufffd\\ufffdx\""},
      {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},
      {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},
      {"\xe2\x82", "\"\\ufffd\\ufffd\""},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char *buf;
    size_t len;
    JsonWriter w;
    FILE *out = json_to_memory(&w, &buf, &len);
    json_array_begin(&w);
    json_string(&w, cases[k].in);
    json_array_end(&w);
    fclose(out);
    cr_expect(strstr(buf, cases[k].out), "case %zu: %s", k, buf);
    free(buf);
  }
}

Test(json_writer, a_value_without_a_key_is_a_programming_error, .exit_code = 1) {
  JsonWriter w;
  json_init(&w, stderr);
  json_object_begin(&w);
  json_number(&w, 1.0);
}

Test(atomic_file, make_directories_creates_parents_and_names_the_failure) {
  char root[] = "/tmp/ppo_test_mkdir_XXXXXX", path[256], file[256];
  cr_assert_not_null(mkdtemp(root));
  snprintf(path, sizeof path, "%s/a/b/c", root);
  cr_expect(!path_exists(path));
  cr_assert_eq(make_directories(path), 0, "%s", error_message());
  cr_expect(path_exists(path));
  cr_expect_eq(make_directories(path), 0, "an existing directory is fine");
  snprintf(file, sizeof file, "%s/plain", root);
  write_text(file, "");
  snprintf(path, sizeof path, "%s/plain/sub", root);
  cr_expect_eq(make_directories(path), -1);
  cr_expect(strstr(error_message(), "plain: exists and is not a directory"), "%s", error_message());
  cr_expect_eq(make_directories(file), -1, "a file where the directory should be");  // mkdir says EEXIST
  cr_expect(strstr(error_message(), "plain: exists and is not a directory"), "%s", error_message());
  snprintf(path, sizeof path, "/proc/ppo_no_such_dir/sub");  // a failing mkdir names its reason
  cr_expect_eq(make_directories(path), -1);
  cr_expect(strstr(error_message(), "/proc/ppo_no_such_dir: cannot create directory: "), "%s", error_message());
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  cr_expect_eq(system(cmd), 0);
}

// text_escape: control characters (C0, DEL, C1) and bytes that are not UTF-8 escaped, a backslash
// doubled, other UTF-8 kept; a text that does not fit is cut before a whole character or escape.
Test(text, escape_keeps_utf8_and_escapes_controls) {
  char out[64];
  cr_expect_str_eq(text_escape("plain.csv", out, sizeof out), "plain.csv");
  cr_expect_str_eq(text_escape("a\nb\tc\rd", out, sizeof out), "a\\nb\\tc\\rd");
  cr_expect_str_eq(text_escape("\x1b[31mred\x7f", out, sizeof out), "\\x1b[31mred\\x7f");
  cr_expect_str_eq(text_escape("caf\xc3\xa9 \xe2\x82\xac", out, sizeof out), "caf\xc3\xa9 \xe2\x82\xac");  // é €
  cr_expect_str_eq(text_escape("\xc2\x9b"
                               "2J",
                               out, sizeof out),
                   "\\xc2\\x9b2J");                                            // C1 CSI
  cr_expect_str_eq(text_escape("\xff\xc3(", out, sizeof out), "\\xff\\xc3(");  // not UTF-8
  cr_expect_str_eq(text_escape("a\\nb", out, sizeof out), "a\\\\nb");
  cr_expect_str_eq(text_escape("abc\xc3\xa9", out, 5), "abc", "é does not fit whole");
  cr_expect_str_eq(text_escape("ab\n", out, 4), "ab", "nor does \\n");
  cr_expect_eq(text_utf8_length((const unsigned char *)"\xc0\xaf"), 0, "overlong");
  cr_expect_eq(text_utf8_length((const unsigned char *)"\xed\xa0\x80"), 0, "surrogate");
  cr_expect_eq(text_utf8_length((const unsigned char *)"\xf0\x9f\x98\x80"), 4);
}

// text_escape_cut counts characters of the text (a UTF-8 character, an escaped byte or a C1 pair
// is one), and says "..." only when something is left out.
Test(text, escape_cut_counts_characters_and_marks_the_cut) {
  char out[64];
  cr_expect_str_eq(text_escape_cut("abcdef", 3, out, sizeof out), "abc...");
  cr_expect_str_eq(text_escape_cut("abc", 3, out, sizeof out), "abc", "nothing left out");
  cr_expect_str_eq(text_escape_cut("\xc3\xa9t\xc3\xa9s", 3, out, sizeof out), "\xc3\xa9t\xc3\xa9...");  // étés
  cr_expect_str_eq(text_escape_cut("\x1b[2J", 2, out, sizeof out), "\\x1b[...");
  cr_expect_str_eq(text_escape_cut("\xc2\x9b"
                                   "2J",
                                   1, out, sizeof out),
                   "\\xc2\\x9b...");
  cr_expect_str_eq(text_escape_cut("abcdef", 3, out, 6), "abc", "no room for the dots");
  cr_expect_str_eq(text_escape_cut("abcdef", 0, out, sizeof out), "...");
  char c1s[121] = "", wide[8 * 48 + 4];  // 60 C1 characters, 8 bytes each once escaped
  for (int k = 0; k < 60; k++) strcat(c1s, "\xc2\x9b");
  text_escape_cut(c1s, 48, wide, sizeof wide);
  cr_expect_eq(strlen(wide), 8 * 48 + 3, "8 max_chars + 4 bytes hold the cut and its dots");
  cr_expect_str_eq(wide + 8 * 48, "...");
}

Test(gnuplot, quote_doubles_quotes_and_blanks_control_characters) {
  char out[64];
  cr_assert(gnuplot_quote(out, sizeof out, "O'NEIL 'A'"));
  cr_assert_str_eq(out, "'O''NEIL ''A'''");  // gnuplot's escape inside single quotes
  cr_assert(gnuplot_quote(out, sizeof out, "a\nb\tc"));
  cr_assert_str_eq(out, "'a b c'");  // a newline would end the command
  cr_assert(gnuplot_quote(out, sizeof out, ""));
  cr_assert_str_eq(out, "''");
  // Cut where it does not fit, never between the two quotes of a pair, and still closed.
  cr_assert_not(gnuplot_quote(out, 6, "ab'cd"));
  cr_assert_str_eq(out, "'ab'");
  cr_assert_not(gnuplot_quote(out, 7, "ab'cd"));
  cr_assert_str_eq(out, "'ab'''");
}

// A script that fails after `set output` (gnuplot has made the file by then): no temporary file
// stays, and an older PNG of the name goes (it would show an earlier run). Without gnuplot the
// failure is "not installed", with the same clean-up.
Test(gnuplot, a_failed_run_leaves_no_temporary_file_and_no_older_png) {
  char dir[64], path[128];
  make_temp_dir(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/plot.gp", dir);
  write_text(path,
             "if (!exists('out')) out = 'plot.png'\nset terminal pngcairo size 64,64\nset output out\n"
             "plot no_such_function(x)\n");
  snprintf(path, sizeof path, "%s/plot.png", dir);
  write_text(path, "an earlier run's picture");
  // With gnuplot the script fails after `set output` made the temporary file; without it, only the
  // older PNG's removal is checked here.
  bool installed = system("command -v gnuplot > /dev/null 2>&1") == 0;
  cr_assert_eq(gnuplot_render(dir, "plot.gp", "plot.png"), -1);
  cr_expect(strstr(error_message(), installed ? "gnuplot failed" : "gnuplot is not installed"), "%s", error_message());
  cr_expect_eq(access(path, F_OK), -1, "the older plot.png must go");
  cr_expect_eq(count_entries(dir), 1, "only plot.gp stays");
  remove_tree(dir);
}

// A signal while gnuplot draws (Ctrl-C during ppo-eval's plot, or a kill of ppo-eval alone) removes
// the PNG's temporary file: its name is noted with the directory it is in, not relative to where the
// program runs, and the handler ends gnuplot first, so that it cannot make the file afterwards. A
// stand-in gnuplot on PATH (its `-e "out='NAME'"` is shell syntax too) makes the file at once, or
// marks that it started and makes the file a second later; the signal goes to the drawing process
// only, never to the stand-in.
static void signal_while_drawing(const char *stand_in, bool late) {
  char dir[64], bin[96], fake[128], gp[128], old_path[4096];
  make_temp_dir(dir, sizeof dir);
  snprintf(bin, sizeof bin, "%s/bin", dir);
  cr_assert_eq(mkdir(bin, 0777), 0);
  snprintf(fake, sizeof fake, "%s/gnuplot", bin);
  write_text(fake, stand_in);
  cr_assert_eq(chmod(fake, 0755), 0);
  snprintf(gp, sizeof gp, "%s/plot.gp", dir);
  write_text(gp, "");
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);  // the stand-in is in its group: the test ends it whatever happens
    snprintf(old_path, sizeof old_path, "%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", old_path, 1);
    atomic_file_remove_on_signals();
    gnuplot_render(dir, "plot.gp", "plot.png");
    _exit(3);  // not reached: killed while drawing
  }
  // Wait (at most 10 s) for the stand-in's first file: plot.gp, bin and it.
  for (int i = 0; i < 1000 && count_entries(dir) < 3; i++) nanosleep(&(struct timespec){0, 10000000}, NULL);
  cr_expect_eq(count_entries(dir), 3, "the stand-in started");
  kill(pid, SIGTERM);
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  if (late) nanosleep(&(struct timespec){1, 500000000}, NULL);  // past the stand-in's second
  kill(-pid, SIGKILL);                                          // the stand-in, if it still runs
  cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %#x", status);
  cr_expect_eq(count_entries(dir), late ? 3 : 2, "plot.gp, bin%s and no temporary PNG", late ? ", started" : "");
  remove_tree(dir);
}

Test(gnuplot, a_signal_while_it_draws_removes_the_temporary_file) {
  signal_while_drawing("#!/bin/sh\neval \"$2\"\n: > \"$out\"\nexec sleep 30\n", false);
}

Test(gnuplot, a_signal_while_it_draws_ends_gnuplot_before_it_makes_the_file) {
  signal_while_drawing("#!/bin/sh\neval \"$2\"\n: > started\nsleep 1\n: > \"$out\"\nexec sleep 30\n", true);
}

// The PNG is drawn under its temporary name and renamed; a quote in the directory, the PNG's name
// and the title (a market symbol can hold one) is escaped for gnuplot.
Test(gnuplot, draws_into_a_directory_and_a_name_holding_quotes) {
  if (system("command -v gnuplot > /dev/null 2>&1") != 0) cr_skip_test("gnuplot is not installed");
  char dir[64], sub[96], path[160], title[64];
  make_temp_dir(dir, sizeof dir);
  snprintf(sub, sizeof sub, "%s/it's", dir);
  cr_assert_eq(mkdir(sub, 0777), 0);
  snprintf(path, sizeof path, "%s/o'k.gp", sub);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  cr_assert(gnuplot_quote(title, sizeof title, "O'NEIL"));
  fprintf(f, "set terminal pngcairo size 320,240\nset output out\nset title %s\nplot x\n", title);
  fclose(f);
  cr_assert_eq(gnuplot_render(sub, "o'k.gp", "o'k.png"), 0, "%s", error_message());
  snprintf(path, sizeof path, "%s/o'k.png", sub);
  char head[9] = {0};
  f = fopen(path, "rb");
  cr_assert_not_null(f, "%s expected", path);
  cr_assert_eq(fread(head, 1, 8, f), 8);
  fclose(f);
  cr_expect(memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0, "a PNG file");
  cr_expect_eq(count_entries(sub), 2, "o'k.gp and o'k.png, no temporary file");
  remove_tree(dir);
}

// cpu_wait_share judges a window once it has lasted window_s: the readings' difference over the
// window's thread time, clamped to [0, 1]; no reading before that; a failed reading turns it off.
static double fake_wait;
static int fake_reads;
static double fake_read(const void *ctx) {
  cr_expect_eq(ctx, &fake_wait);
  fake_reads++;
  return fake_wait;
}

Test(cpu_wait, share_over_each_window) {
  CpuWaitWindow w = cpu_wait_window(2.0);
  fake_wait = 10.0, fake_reads = 0;
  cr_expect_eq(cpu_wait_share(&w, 100.0, 2, fake_read, &fake_wait), -1, "the first call starts the window");
  cr_expect_eq(fake_reads, 1);
  fake_wait = 11.0;
  cr_expect_eq(cpu_wait_share(&w, 101.9, 2, fake_read, &fake_wait), -1, "1.9 s: the window goes on");
  cr_expect_eq(fake_reads, 1, "and the kernel is not asked");
  cr_expect_float_eq(cpu_wait_share(&w, 102.5, 2, fake_read, &fake_wait), 1.0 / (2.5 * 2), 1e-12);  // 1 of 5 thread-s
  fake_wait = 11.5;
  cr_expect_float_eq(cpu_wait_share(&w, 104.5, 1, fake_read, &fake_wait), 0.5 / 2.0, 1e-12);
  fake_wait = 1.0;  // a thread with 10.5 s of waiting ended
  cr_expect_eq(cpu_wait_share(&w, 107.0, 2, fake_read, &fake_wait), 0.0);
  fake_wait = 100.0;
  cr_expect_eq(cpu_wait_share(&w, 110.0, 2, fake_read, &fake_wait), 1.0, "clamped");
  fake_wait = -1;  // no schedstat
  cr_expect_eq(cpu_wait_share(&w, 120.0, 2, fake_read, &fake_wait), -1);
  fake_wait = 200.0, fake_reads = 0;
  cr_expect_eq(cpu_wait_share(&w, 130.0, 2, fake_read, &fake_wait), -1, "off after a failed reading");
  cr_expect_eq(fake_reads, 0);
}

// The team's thread ids: one per OpenMP thread, all different, the caller's first.
Test(cpu_wait, the_openmp_team_is_listed) {
  omp_set_num_threads(3);
  int tids[8];
  cr_assert_eq(cpu_wait_omp_threads(tids, 8), 3);
  cr_expect_eq(tids[0], (int)getpid(), "the main thread's id is the process id");
  cr_expect(tids[1] > 0 && tids[2] > 0 && tids[1] != tids[0] && tids[2] != tids[0] && tids[1] != tids[2]);
  cr_expect_eq(cpu_wait_omp_threads(tids, 2), 2, "capacity");
}

static int spinner_tids[2];
static void *spin_for_half_a_second(void *arg) {
  int *slot = arg;
  *slot = (int)syscall(SYS_gettid);
  const double t0 = timer_now();
  volatile unsigned long n = 0;
  while (timer_since(t0) < 0.5) n++;
  return NULL;
}

// Two busy threads on one CPU: each waits while the other runs, and the kernel's count says so.
Test(cpu_wait, two_busy_threads_on_one_cpu_wait_for_it) {
  int self = (int)getpid();
  if (cpu_wait_seconds(&self, 1) < 0) cr_skip_test("this kernel gives no /proc/self/task/*/schedstat");
  cr_assert_eq(pin_to_one_cpu(), 0);  // the threads made below inherit it
  pthread_t t[2];
  for (int k = 0; k < 2; k++) cr_assert_eq(pthread_create(&t[k], NULL, spin_for_half_a_second, &spinner_tids[k]), 0);
  struct timespec start = {0, 50000000}, pause = {0, 400000000};
  nanosleep(&start, NULL);  // both have written their ids
  const double before = cpu_wait_seconds(spinner_tids, 2);
  // Read while both are alive: an ended thread's count leaves /proc/self/task with it.
  nanosleep(&pause, NULL);
  const double waited = cpu_wait_seconds(spinner_tids, 2) - before;
  const double main_thread = cpu_wait_seconds(&self, 1);
  for (int k = 0; k < 2; k++) pthread_join(t[k], NULL);
  cr_log_info("two threads spinning on one CPU for 0.4 s waited %.3f s between them", waited);
  cr_expect_geq(waited, 0.15, "two threads spinning on one CPU for 0.4 s waited %.3f s between them", waited);
  cr_expect_lt(main_thread, 0.1, "the sleeping main thread waited %.3f s", main_thread);
}

// A cgroup with half a CPU of quota (cgroup v1's cpu controller, or v2's cpu.max), made for the
// test and left again: a process inside it reads 0.5. Skips where cgroups cannot be made (not
// root, a read-only /sys/fs/cgroup).
Test(cpu_wait, a_cgroup_cpu_quota_is_read) {
  char dir[128], file[200];
  bool v2 = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0;
  snprintf(dir, sizeof dir, v2 ? "/sys/fs/cgroup/ppo_test_quota_%d" : "/sys/fs/cgroup/cpu/ppo_test_quota_%d",
           (int)getpid());
  if (mkdir(dir, 0755) != 0) cr_skip_test("cannot make the cgroup %s: %s", dir, strerror(errno));
  snprintf(file, sizeof file, v2 ? "%s/cpu.max" : "%s/cpu.cfs_quota_us", dir);
  FILE *f = fopen(file, "w");
  bool set = f && fprintf(f, v2 ? "50000 100000\n" : "50000\n") > 0;
  if (f && fclose(f) != 0) set = false;
  if (!set) {
    rmdir(dir);
    cr_skip_test("cannot set %s (no cpu controller there)", file);
  }
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    char procs[200], me[32];
    snprintf(procs, sizeof procs, "%s/cgroup.procs", dir);
    snprintf(me, sizeof me, "%d\n", (int)getpid());
    FILE *p = fopen(procs, "w");
    double q = p && fputs(me, p) >= 0 && fclose(p) == 0 ? cpu_quota_cpus() : -2;
    _exit(write(fds[1], &q, sizeof q) == (ssize_t)sizeof q ? 0 : 1);
  }
  double q = 0;
  int status = 0;
  cr_expect_eq(read(fds[0], &q, sizeof q), (ssize_t)sizeof q);
  waitpid(pid, &status, 0);
  close(fds[0]), close(fds[1]);
  cr_expect_eq(rmdir(dir), 0, "%s: %s", dir, strerror(errno));
  if (q == -2) cr_skip_test("cannot move a process into %s (cgroup v2's rules, a delegation)", dir);
  cr_expect_float_eq(q, 0.5, 1e-12, "quota read inside %s: %g", dir, q);
}
