// test/test_walk_forward.c: walk-forward folds (TRADING_ENV.md section 2) on the shipped XAUUSD and
// SPY data, calendar-month arithmetic, the [walk_forward] keys, and `ppo-train --walk-forward` end to
// end on a small synthetic market: fold directories, folds.csv, per-fold dates, stop and resume,
// and skipping finished folds.
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "common/time_utc.h"
#include "envs/market_data.h"
#include "ppo/checkpoint.h"
#include "ppo/config.h"
#include "ppo/trainer.h"
#include "ppo/walk_forward.h"
#include "program_util.h"

#define TRAIN_BIN PPO_BIN_DIR "/ppo-train"

static int64_t day(const char *iso) {
  int64_t t;
  cr_assert(utc_parse_iso(iso, &t), "%s", iso);
  return t;
}

static char *text_of(int64_t t, char *buf) { return utc_format(t, true, buf, 32); }

static void expect_day(int64_t got, const char *want, const char *what) {
  char buf[32];
  cr_expect_eq(got, day(want), "%s: got %s, want %s", what, text_of(got, buf), want);
}

static void load(Config *cfg, int n, const char *const *sets) {
  cr_assert_eq(config_load(cfg, NULL, n, sets), 0, "%s", error_message());
}

static MarketData *shipped(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/data/%s", PPO_SOURCE_DIR, name);
  MarketData *d = market_data_load(path);
  cr_assert_not_null(d, "%s", error_message());
  return d;
}

static WalkForwardFold folds[WALK_FORWARD_FOLDS_MAX];

Test(walk_forward, xauusd_hourly_defaults_give_18_rolling_folds) {
  Config cfg;
  load(&cfg, 0, NULL);
  MarketData *d = shipped("XAUUSD_1H.h5");
  cr_assert_lt(d->bar_seconds, 12 * 3600);
  int n = 0;
  cr_assert_eq(walk_forward_plan(&cfg, d, false, folds, WALK_FORWARD_FOLDS_MAX, &n), 0, "%s", error_message());
  cr_assert_eq(n, 18);
  expect_day(folds[0].train_start, "2006-03-20", "fold 0 train_start");
  expect_day(folds[0].val_start, "2009-03-20", "fold 0 val_start");
  expect_day(folds[0].test_start, "2009-09-20", "fold 0 test_start");
  expect_day(folds[0].test_end, "2010-03-19", "fold 0 test_end");
  cr_expect_leq(folds[n - 1].test_end, day("2019-02-25"));
  expect_day(folds[17].test_start, "2018-03-20", "fold 17 test_start");
  for (int k = 0; k < n; k++) {
    cr_expect_eq(folds[k].index, k);
    cr_expect(folds[k].train_start < folds[k].val_start && folds[k].val_start < folds[k].test_start &&
              folds[k].test_start < folds[k].test_end);
    cr_expect_eq(folds[k].val_start, walk_forward_add_months(folds[k].train_start, 36));
    if (k == 0) continue;
    // Each test window starts 6 calendar months after the previous one's, on the same day.
    cr_expect_eq(folds[k].test_start, walk_forward_add_months(folds[k - 1].test_start, 6), "fold %d", k);
    cr_expect_eq(folds[k].train_start, walk_forward_add_months(folds[k - 1].train_start, 6), "fold %d", k);
  }
  market_data_free(d);
}

Test(walk_forward, spy_daily_defaults_are_8_1_1_years_stepping_1_year) {
  Config cfg;
  load(&cfg, 0, NULL);
  MarketData *d = shipped("SPY_1D.h5");
  cr_assert_geq(d->bar_seconds, 12 * 3600);
  WalkForwardLengths l = walk_forward_lengths(&cfg, true);
  cr_expect(l.train_months == 96 && l.val_months == 12 && l.test_months == 12 && l.step_months == 12);
  int n = 0;
  cr_assert_eq(walk_forward_plan(&cfg, d, true, folds, WALK_FORWARD_FOLDS_MAX, &n), 0, "%s", error_message());
  // 1998-01-02 + 10 years + k years - 1 day <= 2021-03-31: k = 0..13.
  cr_assert_eq(n, 14);
  expect_day(folds[0].train_start, "1998-01-02", "fold 0 train_start");
  expect_day(folds[0].val_start, "2006-01-02", "fold 0 val_start");
  expect_day(folds[0].test_start, "2007-01-02", "fold 0 test_start");
  expect_day(folds[0].test_end, "2008-01-01", "fold 0 test_end");
  expect_day(folds[13].test_start, "2020-01-02", "fold 13 test_start");
  expect_day(folds[13].test_end, "2021-01-01", "fold 13 test_end");
  market_data_free(d);
}

Test(walk_forward, months_clamp_to_the_end_of_the_month) {
  expect_day(walk_forward_add_months(day("2000-01-31"), 1), "2000-02-29", "leap February");
  expect_day(walk_forward_add_months(day("2001-01-31"), 1), "2001-02-28", "February");
  expect_day(walk_forward_add_months(day("2001-01-31"), 2), "2001-03-31", "from the anchor, not from Feb 28");
  expect_day(walk_forward_add_months(day("2001-03-31"), 1), "2001-04-30", "April");
  expect_day(walk_forward_add_months(day("2001-01-31"), -2), "2000-11-30", "backwards");
  expect_day(walk_forward_add_months(day("2001-12-15"), 1), "2002-01-15", "over the year");
  expect_day(walk_forward_add_months(day("2001-06-15"), 120), "2011-06-15", "ten years");

  // A daily market starting on Jan 31: every date keeps the anchor's day where the month has it.
  MarketData *d = market_data_new(400);
  cr_assert_not_null(d);
  for (int64_t i = 0; i < d->rows; i++) d->ts[i] = day("2001-01-31") + i * 86400;
  d->bar_seconds = 86400;
  const char *sets[] = {"walk_forward.train_months=1", "walk_forward.val_months=1", "walk_forward.test_months=1"};
  Config cfg;
  load(&cfg, 3, sets);
  int n = 0;
  cr_assert_eq(walk_forward_plan(&cfg, d, true, folds, WALK_FORWARD_FOLDS_MAX, &n), 0, "%s", error_message());
  expect_day(folds[0].train_start, "2001-01-31", "fold 0 train_start");
  expect_day(folds[0].val_start, "2001-02-28", "fold 0 val_start");
  expect_day(folds[0].test_start, "2001-03-31", "fold 0 test_start");
  expect_day(folds[0].test_end, "2001-04-29", "fold 0 test_end");
  expect_day(folds[1].train_start, "2001-02-28", "fold 1 train_start");
  expect_day(folds[1].test_start, "2001-04-30", "fold 1 test_start");
  expect_day(folds[1].test_end, "2001-05-30", "fold 1 test_end");
  // Last bar 2002-03-06: fold 10 tests 2002-01-31 .. 02-27; fold 11 would end on 2002-03-30.
  cr_expect_eq(n, 11);
  expect_day(folds[10].test_end, "2002-02-27", "fold 10 test_end");
  market_data_free(d);
}

// A fold fits when its test window ends on the data's last day (test_end is inclusive): daily bars
// 2001-01-01 .. 2001-12-31 hold exactly 10 + 1 + 1 months, fold 0 tests December 1 .. 31. One
// bar fewer and no fold fits, the error's whole months then being 11.
Test(walk_forward, a_fold_ending_on_the_last_day_fits) {
  MarketData *d = market_data_new(365);
  cr_assert_not_null(d);
  for (int64_t i = 0; i < d->rows; i++) d->ts[i] = day("2001-01-01") + i * 86400;
  d->bar_seconds = 86400;
  const char *sets[] = {"walk_forward.train_months=10", "walk_forward.val_months=1", "walk_forward.test_months=1"};
  Config cfg;
  load(&cfg, 3, sets);
  int n = 0;
  cr_assert_eq(walk_forward_plan(&cfg, d, true, folds, WALK_FORWARD_FOLDS_MAX, &n), 0, "%s", error_message());
  cr_assert_eq(n, 1);
  expect_day(folds[0].test_start, "2001-12-01", "fold 0 test_start");
  expect_day(folds[0].test_end, "2001-12-31", "fold 0 test_end");
  d->rows = 364;  // the last bar 2001-12-30
  cr_expect_eq(walk_forward_plan(&cfg, d, true, folds, WALK_FORWARD_FOLDS_MAX, &n), -1);
  cr_expect(strstr(error_message(), "test_months <= 11"), "%s", error_message());
  market_data_free(d);
}

Test(walk_forward, max_folds_keeps_the_earliest) {
  const char *sets[] = {"walk_forward.max_folds=3"};
  Config cfg;
  load(&cfg, 1, sets);
  MarketData *d = shipped("XAUUSD_1H.h5");
  int n = 0;
  cr_assert_eq(walk_forward_plan(&cfg, d, false, folds, WALK_FORWARD_FOLDS_MAX, &n), 0, "%s", error_message());
  cr_expect_eq(n, 3);
  expect_day(folds[2].test_start, "2010-09-20", "fold 2 test_start");
  // A capacity smaller than the folds that fit is an error, not a silent cut.
  Config all;
  load(&all, 0, NULL);
  cr_expect_eq(walk_forward_plan(&all, d, false, folds, 5, &n), -1);
  cr_expect(strstr(error_message(), "[walk_forward] max_folds = 0"), "%s", error_message());
  market_data_free(d);
}

// A step shorter than the test window would test some bars in two folds and chain them twice into
// the out-of-sample curve: refused, naming the key; a longer step (gaps between test windows) plans.
// walk_forward_plan of the defaults with one --set override on d; *n the folds planned.
static int plan_with(const char *set, const MarketData *d, bool daily, int *n) {
  Config cfg;
  load(&cfg, 1, &set);
  return walk_forward_plan(&cfg, d, daily, folds, WALK_FORWARD_FOLDS_MAX, n);
}

Test(walk_forward, overlapping_test_windows_are_refused) {
  MarketData *d = shipped("XAUUSD_1H.h5");
  int n = 7;
  cr_expect_eq(plan_with("walk_forward.step_months=3", d, false, &n), -1);
  const char *m = error_message();
  cr_expect(strstr(m, "[walk_forward] step_months = 3") && strstr(m, "shorter than test_months (6)"), "%s", m);
  cr_expect_eq(plan_with("walk_forward.step_months=12", d, false, &n), 0, "%s", error_message());
  cr_expect_eq(n, 9, "18 folds at a 6-month step, 9 at 12");
  market_data_free(d);
}

Test(walk_forward, data_too_short_is_an_error_naming_the_key) {
  MarketData *d = shipped("SPY_1D.h5");
  int n = 7;
  cr_expect_eq(plan_with("walk_forward.train_months=280", d, true, &n), -1);
  cr_expect_eq(n, 0);
  const char *m = error_message();
  cr_expect(strstr(m, "command line: --set #1: [walk_forward] train_months = 280"), "%s", m);
  cr_expect(strstr(m, "no fold fits"), "%s", m);
  cr_expect(strstr(m, "allowed: train_months + val_months + test_months <= 278"), "%s", m);
  market_data_free(d);
}

Test(walk_forward, overrides_and_keys) {
  WalkForwardFold f = {2, day("2007-03-20"), day("2010-03-20"), day("2010-09-20"), day("2011-03-19")};
  char buf[4][64];
  const char *out[4];
  cr_assert_eq(walk_forward_overrides(&f, buf, out), 4);
  cr_expect_str_eq(out[0], "env.train_start=2007-03-20");
  cr_expect_str_eq(out[1], "env.val_start=2010-03-20");
  cr_expect_str_eq(out[2], "env.test_start=2010-09-20");
  cr_expect_str_eq(out[3], "env.test_end=2011-03-19");
  Config cfg;
  load(&cfg, 4, out);  // they are valid --set arguments
  cr_expect_eq(cfg.env.test_end.seconds, day("2011-03-19"));
  Config defaults;
  load(&defaults, 0, NULL);
  cr_expect(defaults.walk_forward.train_months == 0 && defaults.walk_forward.val_months == 0 &&
            defaults.walk_forward.test_months == 0 && defaults.walk_forward.step_months == 0 &&
            defaults.walk_forward.max_folds == 0);
  const char *bad[] = {"walk_forward.test_months=-1"};
  Config c;
  cr_expect_eq(config_load(&c, NULL, 1, bad), -1);
  cr_expect(checkpoint_may_differ("walk_forward", "train_months"));
  cr_expect(checkpoint_may_differ("walk_forward", "max_folds"));
}

// --- ppo-train --walk-forward --------------------------------------------------------------------------

static char tmp_root[256];

static void setup(void) {
  log_set_level(LOG_LEVEL_ERROR);
  snprintf(tmp_root, sizeof tmp_root, "/tmp/ppo_test_walk_forward_%d", (int)getpid());
  mkdir(tmp_root, 0777);
}

static void teardown(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
  cr_expect_eq(system(cmd), 0);
}

// Hourly bars from 2000-01-03 to 2000-07-16: folds of 2 + 1 + 1 months stepping 1 month fit 3 times
// (test windows 04-03..05-02, 05-03..06-02, 06-03..07-02). Two iterations of 128 steps per fold.
static const char *wf_config =
    "[run]\nname = wf\nseed = 3\ndevice = cpu\nthreads = 1\ntotal_timesteps = 256\ncheckpoint_every = 1\n"
    "[env]\ntype = synthetic\nsynthetic_bars = 4700\nn_envs = 2\nepisode_length = 50\nwindow = 4\n"
    "[ppo]\nn_steps = 64\nbatch_size = 64\nn_epochs = 1\n"
    "[policy]\npi_layers = 8\nvf_layers = 8\n"
    "[walk_forward]\ntrain_months = 2\nval_months = 1\ntest_months = 1\nstep_months = 1\n";

static int run_train(const char *args, char *out, size_t capacity) {
  return run_program(TRAIN_BIN, args, out, capacity);
}

static int count_of(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

static bool exists(const char *path) { return access(path, F_OK) == 0; }

Test(walk_forward_cli, trains_each_fold_resumes_and_skips_done_folds, .init = setup, .fini = teardown) {
  static char out[1 << 17];
  char cfg[512], run[512], args[2048], path[1024];
  snprintf(cfg, sizeof cfg, "%s/wf.ini", tmp_root);
  snprintf(run, sizeof run, "%s/run", tmp_root);
  write_text(cfg, wf_config);

  // 1. One iteration per invocation: fold 0 stops half way, nothing is marked done.
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s' --quiet --iterations 1", cfg, run);
  cr_assert_eq(run_train(args, out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out, "3 folds on SYNTH-AR1"), "%s", out);
  cr_expect(strstr(out, "     0  2000-01-03   2000-03-03  2000-04-03  2000-05-02"), "%s", out);
  cr_expect(strstr(out, "run the same ppo-train --walk-forward command again"), "%s", out);
  snprintf(path, sizeof path, "%s/fold_00/checkpoints/last.h5", run);
  cr_expect(exists(path));
  snprintf(path, sizeof path, "%s/fold_00/done", run);
  cr_expect(!exists(path));
  snprintf(path, sizeof path, "%s/fold_01", run);
  cr_expect(!exists(path));

  // 2. The same command without --iterations: fold 0 resumes, folds 1 and 2 train. Fold 0's
  // last.h5 is removed first, as a file system without links leaves it: the fold resumes from its
  // newest checkpoint all the same (it was started afresh, and its directory refused).
  snprintf(path, sizeof path, "%s/fold_00/checkpoints/last.h5", run);
  cr_assert_eq(unlink(path), 0);
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s' --quiet", cfg, run);
  cr_assert_eq(run_train(args, out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out, "fold 0 (1 of 3): env.train_start=2000-01-03") &&
                strstr(out, "fold_00 (resuming from checkpoints/ckpt_000001.h5)") && !strstr(out, "fold_01 (resuming"),
            "%s", out);
  cr_expect(strstr(out, "all 3 folds done (0 skipped"), "%s", out);

  snprintf(path, sizeof path, "%s/folds.csv", run);
  char *csv = read_text(path, NULL);
  cr_assert_not_null(csv);
  cr_expect_str_eq(csv,
                   "fold,train_start,val_start,test_start,test_end\n"
                   "0,2000-01-03,2000-03-03,2000-04-03,2000-05-02\n"
                   "1,2000-02-03,2000-04-03,2000-05-03,2000-06-02\n"
                   "2,2000-03-03,2000-05-03,2000-06-03,2000-07-02\n");
  free(csv);
  static const char *const starts[3][2] = {
      {"train_start = 2000-01-03", "test_end = 2000-05-02"},
      {"train_start = 2000-02-03", "test_end = 2000-06-02"},
      {"train_start = 2000-03-03", "test_end = 2000-07-02"},
  };
  struct stat before[3];
  for (int k = 0; k < 3; k++) {
    snprintf(path, sizeof path, "%s/fold_%02d/done", run, k);
    cr_expect(exists(path), "%s", path);
    snprintf(path, sizeof path, "%s/fold_%02d/config.ini", run, k);
    char *ini = read_text(path, NULL);
    cr_assert_not_null(ini, "%s", path);
    cr_expect(strstr(ini, starts[k][0]) && strstr(ini, starts[k][1]), "fold %d:\n%s", k, ini);
    free(ini);
    snprintf(path, sizeof path, "%s/fold_%02d/metrics.csv", run, k);
    cr_assert_eq(stat(path, &before[k]), 0, "%s", path);
    char *metrics = read_text(path, NULL);
    cr_expect_eq(count_of(metrics, "\n"), 3, "fold %d: header and 2 iterations:\n%s", k, metrics);
    free(metrics);
  }
  snprintf(path, sizeof path, "%s/fold_03", run);
  cr_expect(!exists(path));

  // 3. Again: every fold is skipped, nothing is rewritten.
  cr_assert_eq(run_train(args, out, sizeof out), 0, "%s", out);
  cr_expect_eq(count_of(out, "already done ("), 3, "%s", out);
  cr_expect(strstr(out, "all 3 folds done (3 skipped"), "%s", out);
  for (int k = 0; k < 3; k++) {
    struct stat after;
    snprintf(path, sizeof path, "%s/fold_%02d/metrics.csv", run, k);
    cr_assert_eq(stat(path, &after), 0);
    cr_expect(after.st_mtim.tv_sec == before[k].st_mtim.tv_sec && after.st_mtim.tv_nsec == before[k].st_mtim.tv_nsec &&
                  after.st_size == before[k].st_size,
              "fold %d's metrics.csv was rewritten", k);
  }

  // 4. A larger total_timesteps trains every fold on from its last checkpoint; fewer folds is the same plan.
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s' --quiet --set run.total_timesteps=384", cfg, run);
  cr_assert_eq(run_train(args, out, sizeof out), 0, "%s", out);
  cr_expect_eq(count_of(out, "(resuming from checkpoints/last.h5)"), 3, "%s", out);
  snprintf(path, sizeof path, "%s/fold_02/metrics.csv", run);
  char *metrics = read_text(path, NULL);
  cr_expect_eq(count_of(metrics, "\n"), 4, "header and 3 iterations:\n%s", metrics);
  free(metrics);
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s' --quiet --set walk_forward.max_folds=2", cfg, run);
  cr_assert_eq(run_train(args, out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out, "all 2 folds done (2 skipped"), "%s", out);
  snprintf(path, sizeof path, "%s/folds.csv", run);
  csv = read_text(path, NULL);
  cr_expect_eq(count_of(csv, "\n"), 4, "the file keeps the longer plan:\n%s", csv);
  free(csv);

  // 5. Other hyperparameters or costs for the folds still to train (or done) are refused, naming
  // the fold's file and each key, and nothing is trained; the fold dates themselves differ per fold.
  snprintf(args, sizeof args,
           "--walk-forward '%s' --run-dir '%s' --quiet --set walk_forward.max_folds=4 --set ppo.learning_rate=0.01 "
           "--set env.commission_bps=50",
           cfg, run);
  cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "--set #2: [ppo] learning_rate = 0.01: ") && strstr(out, "fold_00/config.ini has 0.0003") &&
                strstr(out, "--set #3: [env] commission_bps = 50: ") && strstr(out, "fold_00/config.ini has auto") &&
                strstr(out, "2 key(s) differ from fold 0's configuration"),
            "%s", out);
  snprintf(path, sizeof path, "%s/fold_03", run);
  cr_expect(!exists(path), "a refused re-run trains no fold");
  // Nor does it extend the plan file: a run of 1 fold asked again for 2 with another learning rate
  // keeps folds.csv at 1 fold (the refusal came after the file was rewritten).
  char run_b[600];
  snprintf(run_b, sizeof run_b, "%s/run_b", tmp_root);
  snprintf(args, sizeof args,
           "--walk-forward '%s' --run-dir '%s' --quiet --iterations 1 --set walk_forward.max_folds=1", cfg, run_b);
  cr_assert_eq(run_train(args, out, sizeof out), 0, "%s", out);
  snprintf(args, sizeof args,
           "--walk-forward '%s' --run-dir '%s' --quiet --set walk_forward.max_folds=2 --set ppo.learning_rate=0.01",
           cfg, run_b);
  cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
  snprintf(path, sizeof path, "%s/folds.csv", run_b);
  csv = read_text(path, NULL);
  cr_expect_eq(count_of(csv, "\n"), 2, "a refused re-run leaves the plan of 1 fold:\n%s", csv);
  free(csv);

  // 6. Another plan in the same directory is refused, naming the first fold that moved (old and new
  // dates) and the window key that moved it (against fold 0's config.ini).
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s' --quiet --set walk_forward.step_months=2", cfg, run);
  cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out,
                   "holds another fold plan: fold 1 there is 1,2000-02-03,2000-04-03,2000-05-03,2000-06-02 where "
                   "this command's plan has 1,2000-03-03,2000-05-03,2000-06-03,2000-07-02"),
            "%s", out);
  cr_expect(strstr(out, "command line: --set #1: [walk_forward] step_months = 2: ") &&
                strstr(out, "fold_00/config.ini has 1\n"),
            "%s", out);
  // step_months = 0 stands for test_months (1), the stored value: not named; train_months is.
  snprintf(args, sizeof args,
           "--walk-forward '%s' --run-dir '%s' --quiet --set walk_forward.step_months=0 --set "
           "walk_forward.train_months=3",
           cfg, run);
  cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "[walk_forward] train_months = 3: ") && !strstr(out, "step_months = 0"), "%s", out);

  // 7. So is a folds.csv with a line added after the plan's (a prefix check let it pass with max_folds = 2).
  snprintf(path, sizeof path, "%s/folds.csv", run);
  FILE *f = fopen(path, "a");
  cr_assert_not_null(f);
  fputs("3,2000-04-03,2000-06-03,2000-07-03,2000-08-02\n", f);
  fclose(f);
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s' --quiet --set walk_forward.max_folds=2", cfg, run);
  cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "holds another fold plan: it holds 4 folds, and this data and these keys give 3"), "%s", out);

  // 8. A line of the file is shown with its control characters escaped: an edited header that
  // starts with a terminal escape does not reach the terminal as one.
  char *text = read_text(path, NULL);
  cr_assert_not_null(text);
  char edited[4096];
  snprintf(edited, sizeof edited, "\x1b[2J%s", text);
  free(text);
  write_text(path, edited);
  cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "its header is '\\x1b[2Jfold,") && !strchr(out, '\x1b'), "%s", out);
}

// SIGTERM inside a fold: train_run writes a checkpoint and returns 0; the walk-forward stops there
// (exit 0, no later fold started) and says how to continue.
Test(walk_forward_cli, sigterm_stops_the_walk_forward, .init = setup, .fini = teardown) {
  char cfg[512], run[512], log_path[512], metrics[600];
  snprintf(cfg, sizeof cfg, "%s/wf.ini", tmp_root);
  snprintf(run, sizeof run, "%s/run", tmp_root);
  snprintf(log_path, sizeof log_path, "%s/stderr.txt", tmp_root);
  snprintf(metrics, sizeof metrics, "%s/fold_00/metrics.csv", run);
  write_text(cfg, wf_config);
  pid_t pid = fork();
  cr_assert(pid >= 0);
  if (pid == 0) {
    if (!freopen(log_path, "w", stderr)) _exit(99);
    execl(TRAIN_BIN, TRAIN_BIN, "--walk-forward", cfg, "--run-dir", run, "--quiet", "--set",
          "run.total_timesteps=100_000_000", (char *)NULL);
    _exit(98);
  }
  wait_for_lines(metrics, 3, 30);  // two iterations logged: the run's signal handlers are installed
  terminate_expect_exit_0(pid);
  char *err = read_text(log_path, NULL);
  cr_assert_not_null(err);
  cr_expect(strstr(err, "stopped in fold 0") && strstr(err, "run the same ppo-train --walk-forward command again"),
            "%s", err);
  cr_expect(!strstr(err, "continue with: ppo-train --resume"), "one way on, the walk-forward's:\n%s", err);
  free(err);
  char path[600];
  snprintf(path, sizeof path, "%s/fold_00/done", run);
  cr_expect(!exists(path));
  snprintf(path, sizeof path, "%s/fold_00/checkpoints/last.h5", run);
  cr_expect(exists(path));
  snprintf(path, sizeof path, "%s/fold_01", run);
  cr_expect(!exists(path));
}

// A stop during a fold's last [eval] pass (PPO_TEST_STOP_BEFORE_EVAL: requested as iteration 2's
// pass starts) leaves the fold unfinished: its checkpoint holds the pending pass, and the same
// command again resumes the fold, runs that pass first and only then marks it done, so best.h5 and
// best.txt end as an uninterrupted walk-forward's (the fold was marked done and the pass lost).
Test(walk_forward_cli, a_stop_in_a_folds_last_evaluation_leaves_it_unfinished, .init = setup, .fini = teardown) {
  static char out[1 << 17];
  char cfg[512], run[512], straight[512], args[2048], path[1024];
  snprintf(cfg, sizeof cfg, "%s/wf.ini", tmp_root);
  snprintf(run, sizeof run, "%s/run", tmp_root);
  snprintf(straight, sizeof straight, "%s/straight", tmp_root);
  write_text(cfg, wf_config);
  const char *common = "--quiet --set eval.every=1 --set walk_forward.max_folds=2";
  setenv("PPO_TEST_STOP_BEFORE_EVAL", "2", 1);
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s' %s", cfg, run, common);
  int status = run_train(args, out, sizeof out);
  unsetenv("PPO_TEST_STOP_BEFORE_EVAL");
  cr_assert_eq(status, 0, "%s", out);
  cr_expect(strstr(out, "stopped in fold 0 at 256 of 256 steps, before its last evaluation pass"), "%s", out);
  snprintf(path, sizeof path, "%s/fold_00/done", run);
  cr_expect(!exists(path), "the fold was marked done without its last evaluation");
  snprintf(path, sizeof path, "%s/fold_01", run);
  cr_expect(!exists(path));

  cr_assert_eq(run_train(args, out, sizeof out), 0, "%s", out);
  cr_expect(strstr(out, "all 2 folds done (0 skipped"), "%s", out);
  cr_expect(!strstr(out, "nothing to train"), "the fold's pending pass is not 'nothing to train':\n%s", out);
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s' %s", cfg, straight, common);
  cr_assert_eq(run_train(args, out, sizeof out), 0, "%s", out);
  for (int k = 0; k < 2; k++) {
    char a[1024], b[1024];
    snprintf(a, sizeof a, "%s/fold_%02d/best.txt", run, k);
    snprintf(b, sizeof b, "%s/fold_%02d/best.txt", straight, k);
    char *resumed = read_text(a, NULL), *uninterrupted = read_text(b, NULL);
    cr_assert(resumed && uninterrupted, "%s, %s", a, b);
    cr_expect_str_eq(resumed, uninterrupted, "fold %d's best.txt", k);
    free(resumed), free(uninterrupted);
  }
}

// A signal outside every fold's training (start-up, between folds) also stops the walk-forward
// with exit 0, before the next fold: the handlers cover the whole walk_forward_run. Here the
// SIGTERM arrives inside an enclosing signal scope before the walk-forward starts; it must not kill
// the process (the scope's handler), and the walk-forward must start no fold (without its check
// fold 0 would start, stop at its first step and leave fold_00 behind).
Test(walk_forward_cli, a_signal_before_a_fold_starts_none, .init = setup, .fini = teardown) {
  char cfg[512], run[512], path[600];
  snprintf(cfg, sizeof cfg, "%s/wf.ini", tmp_root);
  snprintf(run, sizeof run, "%s/run", tmp_root);
  write_text(cfg, wf_config);
  train_signals_begin();
  cr_assert_eq(raise(SIGTERM), 0);
  cr_assert(trainer_stop_requested());
  TrainRunOptions opt = {.config_path = cfg, .run_dir = run, .quiet = true};
  cr_expect_eq(walk_forward_run(&opt), EXIT_OK);
  cr_expect(trainer_stop_requested(), "an inner scope's end cleared the request");
  train_signals_end();
  cr_expect(!trainer_stop_requested(), "the outermost end clears the request");
  snprintf(path, sizeof path, "%s/fold_00", run);
  cr_expect(!exists(path), "a fold started after the stop request");
  snprintf(path, sizeof path, "%s/folds.csv", run);
  cr_expect(exists(path), "the walk-forward did not prepare its run directory");
}

Test(walk_forward_cli, bad_input_exits_2, .init = setup, .fini = teardown) {
  static char out[1 << 16];
  char cfg[512], args[2048];
  snprintf(cfg, sizeof cfg, "%s/wf.ini", tmp_root);
  write_text(cfg, wf_config);
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s/r' --set env.type=cartpole", cfg, tmp_root);
  cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "[env] type = cartpole") && strstr(out, "allowed: env.type = trading or synthetic"), "%s", out);
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s/r' --set env.val_start=2000-02-01", cfg, tmp_root);
  cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "[env] val_start = 2000-02-01") && strstr(out, "sets the split dates"), "%s", out);
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s/r' --set walk_forward.train_months=12", cfg, tmp_root);
  cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "[walk_forward] train_months = 12") && strstr(out, "no fold fits"), "%s", out);
  snprintf(args, sizeof args, "--walk-forward '%s' --resume x.h5", cfg);
  cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "--walk-forward takes CONFIG.ini"), "%s", out);
  char dir[600];
  snprintf(dir, sizeof dir, "%s/r", tmp_root);
  cr_expect(!exists(dir), "a refused walk-forward must not create its directory");
  snprintf(args, sizeof args, "'%s' --iterations 99999999999999999999", cfg);  // past int64
  cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "--iterations needs a whole number in 1 .. 9223372036854775807"), "%s", out);
  // run directories that cannot be: empty (it was the filesystem's root), under a file, too long
  const char *modes[] = {"--walk-forward ", ""};
  for (int m = 0; m < 2; m++) {
    snprintf(args, sizeof args, "%s'%s' --run-dir ''", modes[m], cfg);
    cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "--run-dir needs a directory"), "%s", out);
    snprintf(args, sizeof args, "%s'%s' --run-dir --quiet", modes[m], cfg);  // a forgotten value: not a dir --quiet
    cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "--run-dir needs a directory"), "%s", out);
    snprintf(args, sizeof args, "%s'%s' --run-dir '%s/r'", modes[m], cfg, cfg);
    cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "wf.ini: exists and is not a directory") && strstr(out, "(--run-dir)"), "%s", out);
    static char long_dir[1600], long_args[2400];
    snprintf(long_dir, sizeof long_dir, "%s/%01040d", tmp_root, 0);
    snprintf(long_args, sizeof long_args, "%s'%s' --run-dir '%s'", modes[m], cfg, long_dir);
    cr_expect_eq(run_train(long_args, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, "longer than"), "%s", out);
    cr_expect(!exists(long_dir));
  }
  // A training run and a walk-forward do not share a directory (the README's two commands once
  // both wrote runs/default): each refuses the other's, writing nothing.
  static const struct {
    const char *name, *first, *second, *refusal, *not_written;
  } pairs[] = {
      {"plain", "", "--walk-forward ", "plain holds a training run (metrics.csv), not a walk-forward", "folds.csv"},
      {"wf", "--walk-forward ", "", "wf holds a walk-forward (folds.csv)", "metrics.csv"},
  };
  for (int k = 0; k < 2; k++) {
    char file[700];
    snprintf(dir, sizeof dir, "%s/%s", tmp_root, pairs[k].name);
    snprintf(args, sizeof args, "%s'%s' --run-dir '%s' --quiet --iterations 1", pairs[k].first, cfg, dir);
    cr_assert_eq(run_train(args, out, sizeof out), 0, "%s", out);
    snprintf(args, sizeof args, "%s'%s' --run-dir '%s' --quiet", pairs[k].second, cfg, dir);
    cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
    cr_expect(strstr(out, pairs[k].refusal), "%s", out);
    cr_expect(!strstr(out, " folds on ") && !strstr(out, " fold on "), "the refusal alone, not the fold table: %s",
              out);
    snprintf(file, sizeof file, "%s/%s", dir, pairs[k].not_written);
    cr_expect(!exists(file), "the refused run wrote %s", pairs[k].not_written);
  }
  // A directory where a later fold writes its metrics: refused before the first fold trains (that
  // fold failed with exit 1 after the ones before it had trained).
  char file[700];
  snprintf(dir, sizeof dir, "%s/blocked", tmp_root);
  snprintf(file, sizeof file, "%s/fold_02/metrics.csv", dir);
  cr_assert_eq(mkdir(dir, 0777), 0);
  snprintf(args, sizeof args, "%s/fold_02", dir);
  cr_assert_eq(mkdir(args, 0777), 0);
  cr_assert_eq(mkdir(file, 0777), 0);
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s' --quiet", cfg, dir);
  cr_expect_eq(run_train(args, out, sizeof out), 2, "%s", out);
  cr_expect(strstr(out, "fold_02/metrics.csv: is a directory, not a regular file: the run's metrics table"), "%s", out);
  snprintf(file, sizeof file, "%s/fold_00", dir);
  cr_expect(!exists(file), "the refused walk-forward trained fold 0");
  snprintf(file, sizeof file, "%s/folds.csv", dir);
  cr_expect(!exists(file), "the refused walk-forward wrote folds.csv");
}
