// test/test_features.c: the causal feature matrix (envs/features.h).
//
// Prefix invariance and future perturbation on the shipped XAUUSD and SPY data (TRADING_ENV.md
// section 10, tests 1-2), every feature against numpy (test/make_feature_fixtures.py), sigma
// against a direct weighted sum, known values on hand-made bars, and
// scale invariance (no raw price level leaks into any feature); `ppo-data features` writes the same matrix.
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/rng.h"
#include "envs/features.h"
#include "trading_test_util.h"

// Index of the first differing float of two rows blocks, -1 when bit-identical.
static int64_t first_mismatch(const float *a, const float *b, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (memcmp(&a[i], &b[i], sizeof(float)) != 0) return i;
  return -1;
}

static void check_prefix_invariance(const char *file) {
  MarketData *d = load_shipped(file);
  Features *full = features_for(d);
  Rng rng;
  rng_seed(&rng, 4242);
  for (int k = 0; k < 12; k++) {
    int64_t t = k == 0 ? 0 : k == 1 ? d->rows - 1 : (int64_t)rng_below(&rng, (uint64_t)d->rows);
    MarketData *p = market_prefix(d, t + 1);
    Features *part = features_like(p, full);  // the dataset's params (bar size from all rows)
    int64_t bad = first_mismatch(full->values, part->values, (t + 1) * FEATURES_COUNT);
    cr_assert_eq(bad, -1, "%s: prefix to t = %lld differs at row %lld feature %s", file, (long long)t,
                 (long long)(bad / FEATURES_COUNT), full->names[bad % FEATURES_COUNT]);
    cr_assert_eq(memcmp(full->sigma, part->sigma, sizeof(double) * (t + 1)), 0, "%s: sigma prefix differs", file);
    features_free(part);
    market_data_free(p);
  }
  features_free(full);
  market_data_free(d);
}

Test(features, prefix_invariance_xauusd) { check_prefix_invariance("XAUUSD_1H.h5"); }
Test(features, prefix_invariance_spy) { check_prefix_invariance("SPY_1D.h5"); }

// Bars after t replaced by noise (still valid bars): rows 0..t unchanged bit for bit, rows after differ.
Test(features, future_perturbation_eurusd) {
  MarketData *d = load_shipped("EURUSD_1H.h5");
  Features *before = features_for(d);
  Rng rng;
  rng_seed(&rng, 99);
  for (int k = 0; k < 4; k++) {
    int64_t t = 1000 + (int64_t)rng_below(&rng, (uint64_t)(d->rows - 2000));
    MarketData *noisy = market_prefix(d, d->rows);
    for (int64_t i = t + 1; i < d->rows; i++) {
      double mid = 0.5 + 2.0 * rng_uniform(&rng), half = 1e-4 * (1 + rng_uniform(&rng));
      double o = mid * (1 + 0.01 * rng_normal(&rng)), c = mid * (1 + 0.01 * rng_normal(&rng));
      double h = (o > c ? o : c) * 1.01, l = (o < c ? o : c) * 0.99;
      bar_set(noisy, i, o, h, l, c, half);
    }
    cr_assert_eq(market_data_validate(noisy, "noisy"), 0, "%s", error_message());
    Features *after = features_for(noisy);
    int64_t bad = first_mismatch(before->values, after->values, (t + 1) * FEATURES_COUNT);
    cr_assert_eq(bad, -1, "future noise after t = %lld changed row %lld", (long long)t,
                 (long long)(bad / FEATURES_COUNT));
    cr_assert_neq(first_mismatch(before->values + (t + 1) * FEATURES_COUNT, after->values + (t + 1) * FEATURES_COUNT,
                                 FEATURES_COUNT),
                  -1, "the noise must change row t+1 (else this test cannot fail)");
    features_free(after);
    market_data_free(noisy);
  }
  features_free(before);
  market_data_free(d);
}

Test(features, clipped_finite_and_named) {
  MarketData *d = load_shipped("XAUUSD_1H.h5");
  Features *f = features_for(d);
  cr_assert_eq(f->count, 16);
  cr_assert_str_eq(f->names[3], "r120");
  cr_assert_eq(f->horizons[0], 4);
  cr_assert_eq(f->lookback, 120);
  int64_t clipped = 0;
  for (int64_t i = 0; i < f->rows * f->count; i++) {
    float v = f->values[i];
    cr_assert(isfinite(v) && v >= -5.0f && v <= 5.0f, "entry %lld = %g", (long long)i, v);
    clipped += fabsf(v) == 5.0f;
  }
  cr_assert_lt(clipped, f->rows * f->count / 100, "more than 1%% of entries clipped: %lld", (long long)clipped);
  features_free(f);
  market_data_free(d);
  MarketData *spy = load_shipped("SPY_1D.h5");
  Features *g = features_for(spy);
  cr_assert(g->params.daily);
  cr_assert_eq(g->params.sigma_halflife, 20.0);
  cr_assert_str_eq(g->names[1], "r5");
  cr_assert_str_eq(g->names[14], "dow_sin");
  features_free(g);
  market_data_free(spy);
}

// sigma_t = sqrt(sum_i w_i r_i^2 / sum_i w_i), w_i = 0.5^((t - i)/48), computed directly.
Test(features, sigma_equals_direct_weighted_sum) {
  MarketData *d = load_shipped("XAUUSD_1H.h5");
  Features *f = features_for(d);
  const int64_t ts[] = {1, 2, 50, 3000, 70000};
  for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) {
    int64_t t = ts[k];
    double num = 0, den = 0;
    for (int64_t i = 1; i <= t; i++) {
      double w = pow(0.5, (double)(t - i) / 48.0), r = log(d->close[i] / d->close[i - 1]);
      num += w * r * r, den += w;
    }
    double expect = sqrt(num / den);
    cr_assert_float_eq(f->sigma[t], expect, 1e-10 * expect, "t = %lld: sigma %.17g, direct %.17g", (long long)t,
                       f->sigma[t], expect);
  }
  cr_assert(isnan(f->sigma[0]));
  features_free(f);
  market_data_free(d);
}

// Every feature at chosen rows of the shipped data against numpy's evaluation of the spec's formulas
// (test/make_feature_fixtures.py, from the CSVs): float32 results of double computations done in
// another order, so equal within a few float32 ulps (the largest difference seen was 2.4e-7).
#include "data/features_expected.inc"

static void check_against_numpy(const char *file, int64_t bars, const int64_t *rows,
                                const float (*want)[FEATURES_COUNT], int n) {
  MarketData *d = load_shipped(file);
  cr_assert_eq(d->rows, bars, "%s: the fixture was made from %lld bars", file, (long long)bars);
  Features *f = features_for(d);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < FEATURES_COUNT; j++) {
      float got = f->values[rows[i] * FEATURES_COUNT + j], w = want[i][j];
      cr_expect(fabsf(got - w) <= 2e-6f * fmaxf(1.0f, fabsf(w)), "%s row %lld %s: %.9g, numpy %.9g", file,
                (long long)rows[i], f->names[j], (double)got, (double)w);
    }
  features_free(f);
  market_data_free(d);
}

Test(features, every_feature_matches_numpy_xauusd) {
  check_against_numpy("XAUUSD_1H.h5", XAUUSD_FEATURE_BARS, xauusd_feature_rows, xauusd_features,
                      (int)(sizeof xauusd_feature_rows / sizeof xauusd_feature_rows[0]));
}

Test(features, every_feature_matches_numpy_spy) {
  check_against_numpy("SPY_1D.h5", SPY_FEATURE_BARS, spy_feature_rows, spy_features,
                      (int)(sizeof spy_feature_rows / sizeof spy_feature_rows[0]));
}

// Hand-made bars: mid 100, 101, 100, then rising by 1 a bar; 06:00 UTC start, hourly.
Test(features, known_values_on_hand_made_bars) {
  MarketData *d = market_flat(40, 100.0, 0.01, "TEST");
  for (int64_t i = 0; i < 40; i++) {
    double c = i == 1 ? 101.0 : i <= 2 ? 100.0 : 100.0 + (double)(i - 2);
    double o = i == 0 ? c : d->close[i - 1];
    bar_set(d, i, o, (o > c ? o : c) + 0.5, (o < c ? o : c) - 0.5, c, 0.01);
    d->ts[i] += 6 * 3600;
  }
  cr_assert_eq(market_data_validate(d, "hand"), 0, "%s", error_message());
  Features *f = features_for(d);
  const float *row = f->values;
  // t = 0: nothing defined but the spread, the gap (0) and the time.
  for (int j = 0; j < 12; j++) cr_assert_eq(row[j], 0.0f, "feature %s at t = 0", f->names[j]);
  cr_assert_float_eq(row[12], (float)(0.02 / 100.0 * 1e3), 1e-6, "spread in bp/10");
  cr_assert_float_eq(row[14], 1.0f, 1e-7, "sin of 06:00");
  cr_assert_float_eq(row[15], 0.0f, 1e-7, "cos of 06:00");
  // t = 2: r1 = ln(100/101) / sigma_1, and sigma_1 = |ln(101/100)|: exactly -1.
  cr_assert_float_eq(f->values[2 * FEATURES_COUNT + 0], -1.0f, 1e-6);
  cr_assert_float_eq(f->values[1 * FEATURES_COUNT + 13], (float)log(2.0), 1e-7, "gap of one hour = ln 2");
  // r4 is 0 before t = 4; on a steady rise RSI -> 1 and x_strategy = +1 (fast EMA above slow).
  cr_assert_eq(f->values[3 * FEATURES_COUNT + 1], 0.0f);
  cr_assert_neq(f->values[4 * FEATURES_COUNT + 1], 0.0f);
  cr_assert_gt(f->values[39 * FEATURES_COUNT + 11], 0.9f, "RSI on a rise");
  cr_assert_eq(f->values[39 * FEATURES_COUNT + 9], 1.0f, "x_strategy on a rise");
  cr_assert_lt(f->values[39 * FEATURES_COUNT + 7], 0.0f, "x_fast: the EMA lags below a rising price");
  features_free(f);
  market_data_free(d);
}

// Multiplying every price by 1000 changes no feature beyond rounding: no raw level enters.
Test(features, scale_invariant) {
  MarketData *d = load_shipped("EURUSD_1H.h5");
  MarketData *p = market_prefix(d, 5000), *q = market_prefix(d, 5000);
  double *cols[] = {q->open,    q->high,      q->low,      q->close,    q->bid_open, q->bid_high,
                    q->bid_low, q->bid_close, q->ask_open, q->ask_high, q->ask_low,  q->ask_close};
  for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++)
    for (int64_t i = 0; i < q->rows; i++) cols[k][i] *= 1000.0;
  Features *a = features_for(p), *b = features_for(q);
  for (int64_t i = 0; i < a->rows * a->count; i++)
    cr_assert_float_eq(a->values[i], b->values[i], 2e-4, "entry %lld (%s): %g vs %g", (long long)i,
                       a->names[i % a->count], a->values[i], b->values[i]);
  features_free(a), features_free(b);
  market_data_free(p), market_data_free(q), market_data_free(d);
}

Test(features, bad_params_rejected) {
  MarketData *d = market_flat(10, 1.0, 0.0, "X");
  FeatureParams fp = features_params_default();
  fp.ema_fast = 50, fp.ema_slow = 20;
  cr_assert_eq(features_params_resolve(&fp, d), -1);
  cr_assert_not_null(strstr(error_message(), "ema_fast"), "%s", error_message());
  market_data_free(d);
}

// --- ppo-data features -------------------------------------------------------------------------------

#define PPO_DATA PPO_BIN_DIR "/ppo-data"

static int run_ppo_data(char *const argv[], const char *log_path) {
  pid_t pid = fork();
  cr_assert(pid >= 0, "fork failed");
  if (pid == 0) {
    int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) _exit(127);
    dup2(fd, 1), dup2(fd, 2);
    execv(PPO_DATA, argv);
    _exit(127);
  }
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The CSV holds every bar and reads back to the matrix features_compute gives, float for float.
Test(features, ppo_data_features_csv) {
  char dir[] = "/tmp/ppo_features_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char out[256], log_path[256];
  snprintf(out, sizeof out, "%s/spy.csv", dir);
  snprintf(log_path, sizeof log_path, "%s/log.txt", dir);
  char out_opt[300];
  snprintf(out_opt, sizeof out_opt, "--out=%s", out);
  char *argv[] = {"ppo-data", "features", DATA_DIR "/SPY_1D.h5", out_opt, NULL};
  cr_assert_eq(run_ppo_data(argv, log_path), 0);
  MarketData *d = load_shipped("SPY_1D.h5");
  Features *f = features_for(d);
  FILE *in = fopen(out, "r");
  cr_assert_not_null(in);
  static char line[4096];
  cr_assert_not_null(fgets(line, sizeof line, in));
  cr_assert_str_eq(line,
                   "time,r1,r5,r21,r63,vol_regime,range,body,x_fast,x_slow,x_strategy,macd,rsi,spread,gap,"
                   "dow_sin,dow_cos\n");
  int64_t t = 0;
  char when[40];
  while (fgets(line, sizeof line, in)) {
    char *p = strchr(line, ',');
    cr_assert_not_null(p);
    *p = '\0';
    cr_assert_str_eq(line, market_time_format(d->ts[t], when, sizeof when), "row %lld", (long long)t);
    for (int j = 0; j < FEATURES_COUNT; j++) {
      char *end;
      float v = strtof(p + 1, &end);
      cr_assert_eq(v, f->values[t * FEATURES_COUNT + j], "row %lld feature %s", (long long)t, f->names[j]);
      p = end;
    }
    t++;
  }
  cr_assert_eq(t, d->rows);
  fclose(in);
  // Bad input: exit 2 and nothing written.
  char missing[256];
  snprintf(missing, sizeof missing, "%s/none.csv", dir);
  char *bad[] = {"ppo-data", "features", "/nonexistent.h5", "--out", missing, NULL};
  cr_assert_eq(run_ppo_data(bad, log_path), 2);
  cr_assert_neq(access(missing, F_OK), 0);
  char *no_out[] = {"ppo-data", "features", DATA_DIR "/SPY_1D.h5", NULL};
  cr_assert_eq(run_ppo_data(no_out, log_path), 2);
  char *empty_out[] = {"ppo-data", "features", DATA_DIR "/SPY_1D.h5", "--out", "", NULL};
  cr_assert_eq(run_ppo_data(empty_out, log_path), 2);
  char no_dir[300];  // a directory that is not there: bad input (a failing write, disk full, is exit 1)
  snprintf(no_dir, sizeof no_dir, "%s/none/f.csv", dir);
  char *missing_dir[] = {"ppo-data", "features", DATA_DIR "/SPY_1D.h5", "--out", no_dir, NULL};
  cr_assert_eq(run_ppo_data(missing_dir, log_path), 2);
  // A file that cannot be made (under /proc) is named once: the message said it twice.
  char *in_proc[] = {"ppo-data", "features", DATA_DIR "/SPY_1D.h5", "--out", "/proc/ppo_features.csv", NULL};
  cr_assert_eq(run_ppo_data(in_proc, log_path), 2);
  FILE *log = fopen(log_path, "r");
  cr_assert_not_null(log);
  char said[1024] = "";
  size_t n_said = fread(said, 1, sizeof said - 1, log);
  said[n_said] = '\0';
  fclose(log);
  cr_expect(strstr(said, "ppo-data: /proc/ppo_features.csv: ") && !strstr(said, ".csv: /proc/ppo_features.csv"), "%s",
            said);
  char *onto_input[] = {"ppo-data", "features", out, "--out", out, NULL};  // the CSV written above as input
  cr_assert_eq(run_ppo_data(onto_input, log_path), 2);
  cr_assert_eq(access(out, F_OK), 0, "the input must be left alone");
  unlink(out), unlink(log_path), rmdir(dir);
  features_free(f);
  market_data_free(d);
}
