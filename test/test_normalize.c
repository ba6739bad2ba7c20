// test/test_normalize.c: ppo/normalize.c against Stable-Baselines3's own VecNormalize
// (test/data/normalize_fixture.h5, made by test/make_normalize_fixtures.py), frozen statistics,
// checkpoint round trips and argument checks.
//
// Legend: T steps, N envs, O obs dim.
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/h5io.h"
#include "ppo/normalize.h"

#define FIXTURE PPO_SOURCE_DIR "/test/data/normalize_fixture.h5"

typedef struct {
  int64_t N, O, T, norm_obs, norm_reward;
  double clip_obs, clip_reward, epsilon, gamma;
  float *reset_obs, *reset_obs_norm;                           // (N, O)
  float *obs, *obs_norm, *final_obs, *final_norm;              // (T, N, O)
  float *rewards, *rewards_norm;                               // (T, N)
  uint8_t *dones;                                              // (T, N)
  uint8_t *training;                                           // (T)
  double *obs_mean_t, *obs_var_t;                              // (T, O)
  double *obs_count_t, *ret_mean_t, *ret_var_t, *ret_count_t;  // (T)
  double *returns_t;                                           // (T, N)
} Case;

static void *read_array(hid_t f, const char *group, const char *name, H5ioType type, size_t elem, int rank,
                        const hsize_t *dims) {
  size_t total = 1;
  for (int i = 0; i < rank; i++) total *= dims[i];
  void *p = malloc(total * elem);
  cr_assert(p);
  char path[128];
  snprintf(path, sizeof path, "%s/%s", group, name);
  cr_assert_eq(h5io_read(f, path, type, rank, dims, p), 0, "%s (regenerate with test/make_normalize_fixtures.py)",
               error_message());
  return p;
}

static void case_load(Case *c, const char *group) {
  hid_t f = h5io_open_read(FIXTURE);
  cr_assert(f >= 0, "%s", error_message());
  cr_assert_eq(h5io_attr_read_int64(f, group, "num_envs", &c->N), 0, "%s", error_message());
  cr_assert_eq(h5io_attr_read_int64(f, group, "obs_dim", &c->O), 0);
  cr_assert_eq(h5io_attr_read_int64(f, group, "steps", &c->T), 0);
  cr_assert_eq(h5io_attr_read_int64(f, group, "norm_obs", &c->norm_obs), 0);
  cr_assert_eq(h5io_attr_read_int64(f, group, "norm_reward", &c->norm_reward), 0);
  cr_assert_eq(h5io_attr_read_double(f, group, "clip_obs", &c->clip_obs), 0);
  cr_assert_eq(h5io_attr_read_double(f, group, "clip_reward", &c->clip_reward), 0);
  cr_assert_eq(h5io_attr_read_double(f, group, "epsilon", &c->epsilon), 0);
  cr_assert_eq(h5io_attr_read_double(f, group, "gamma", &c->gamma), 0);
  hsize_t no[2] = {c->N, c->O}, tno[3] = {c->T, c->N, c->O}, tn[2] = {c->T, c->N}, t[1] = {c->T}, to[2] = {c->T, c->O};
  c->reset_obs = read_array(f, group, "reset_obs", H5IO_FLOAT32, 4, 2, no);
  c->reset_obs_norm = read_array(f, group, "reset_obs_norm", H5IO_FLOAT32, 4, 2, no);
  c->obs = read_array(f, group, "obs", H5IO_FLOAT32, 4, 3, tno);
  c->obs_norm = read_array(f, group, "obs_norm", H5IO_FLOAT32, 4, 3, tno);
  c->final_obs = read_array(f, group, "final_obs", H5IO_FLOAT32, 4, 3, tno);
  c->final_norm = read_array(f, group, "final_obs_norm", H5IO_FLOAT32, 4, 3, tno);
  c->rewards = read_array(f, group, "rewards", H5IO_FLOAT32, 4, 2, tn);
  c->rewards_norm = read_array(f, group, "rewards_norm", H5IO_FLOAT32, 4, 2, tn);
  c->dones = read_array(f, group, "dones", H5IO_UINT8, 1, 2, tn);
  c->training = read_array(f, group, "training", H5IO_UINT8, 1, 1, t);
  c->obs_mean_t = read_array(f, group, "obs_mean_t", H5IO_FLOAT64, 8, 2, to);
  c->obs_var_t = read_array(f, group, "obs_var_t", H5IO_FLOAT64, 8, 2, to);
  c->obs_count_t = read_array(f, group, "obs_count_t", H5IO_FLOAT64, 8, 1, t);
  c->ret_mean_t = read_array(f, group, "ret_mean_t", H5IO_FLOAT64, 8, 1, t);
  c->ret_var_t = read_array(f, group, "ret_var_t", H5IO_FLOAT64, 8, 1, t);
  c->ret_count_t = read_array(f, group, "ret_count_t", H5IO_FLOAT64, 8, 1, t);
  c->returns_t = read_array(f, group, "returns_t", H5IO_FLOAT64, 8, 2, tn);
  h5io_close(f);
}

static void case_free(Case *c) {
  void *arrays[] = {c->reset_obs,   c->reset_obs_norm, c->obs,       c->obs_norm,    c->final_obs,  c->final_norm,
                    c->rewards,     c->rewards_norm,   c->dones,     c->training,    c->obs_mean_t, c->obs_var_t,
                    c->obs_count_t, c->ret_mean_t,     c->ret_var_t, c->ret_count_t, c->returns_t};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) free(arrays[i]);
}

static void case_init(VecNormalize *vn, const Case *c) {
  cr_assert_eq(vecnorm_init(vn, (int)c->N, (int)c->O, c->norm_obs, c->norm_reward, c->clip_obs, c->clip_reward,
                            c->epsilon, c->gamma),
               0, "%s", error_message());
}

static int64_t ulp_distance(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, 4);
  memcpy(&ib, &b, 4);
  int64_t la = ia < 0 ? (int64_t)INT32_MIN - ia : ia, lb = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
  return llabs(la - lb);
}

// Values within tolerance but not bit for bit equal. The port reproduces numpy's operation order, so
// it is bit-identical to SB3 on IEEE hardware without fused multiply-add contraction; the
// tolerances (1 ulp or 1e-6 for floats, 1e-12 for statistics) give the readable first mismatch,
// the count then catches order changes (a sequential sum where numpy sums pairwise, numpy 1.x's
// float32 reward division) that stay inside them.
static int inexact;

static void expect_floats(const float *got, const float *want, long n, const char *what, int step) {
  for (long i = 0; i < n; i++) {
    bool ok = ulp_distance(got[i], want[i]) <= 1 || fabs((double)got[i] - want[i]) <= 1e-6 * fabs((double)want[i]);
    cr_assert(ok, "%s step %d [%ld]: got %.9g, SB3 %.9g (%lld ulp)", what, step, i, got[i], want[i],
              (long long)ulp_distance(got[i], want[i]));
    if (memcmp(&got[i], &want[i], 4) != 0) inexact++;
  }
}

static void expect_doubles(const double *got, const double *want, long n, const char *what, int step) {
  for (long i = 0; i < n; i++) {
    cr_assert(fabs(got[i] - want[i]) <= 1e-12 * fabs(want[i]), "%s step %d [%ld]: got %.17g, SB3 %.17g", what, step, i,
              got[i], want[i]);
    if (memcmp(&got[i], &want[i], sizeof(double)) != 0) inexact++;
  }
}

// Replays a case through vn from the reset on, comparing every output and statistic.
static void replay_case(const char *group) {
  Case c;
  case_load(&c, group);
  VecNormalize vn;
  case_init(&vn, &c);
  const long N = c.N, O = c.O;
  float *obs = malloc(N * O * sizeof(float)), *rew = malloc(N * sizeof(float)), row[64];
  cr_assert(O <= 64);
  inexact = 0;
  memcpy(obs, c.reset_obs, N * O * sizeof(float));
  vecnorm_reset(&vn, obs);
  expect_floats(obs, c.reset_obs_norm, N * O, "reset obs", -1);
  for (int t = 0; t < c.T; t++) {
    vn.training = c.training[t];
    memcpy(obs, c.obs + t * N * O, N * O * sizeof(float));
    vecnorm_obs(&vn, obs, (int)N);
    expect_floats(obs, c.obs_norm + t * N * O, N * O, "obs", t);
    memcpy(rew, c.rewards + t * N, N * sizeof(float));
    vecnorm_reward(&vn, rew, c.dones + t * N);
    expect_floats(rew, c.rewards_norm + t * N, N, "reward", t);
    for (long i = 0; i < N; i++) {
      if (!c.dones[t * N + i]) continue;
      memcpy(row, c.final_obs + (t * N + i) * O, O * sizeof(float));
      vecnorm_obs_frozen(&vn, row, 1);
      expect_floats(row, c.final_norm + (t * N + i) * O, O, "final obs", t);
    }
    expect_doubles(vn.obs_rms.mean, c.obs_mean_t + t * O, O, "obs_rms.mean", t);
    expect_doubles(vn.obs_rms.var, c.obs_var_t + t * O, O, "obs_rms.var", t);
    expect_doubles(&vn.obs_rms.count, c.obs_count_t + t, 1, "obs_rms.count", t);
    expect_doubles(vn.ret_rms.mean, c.ret_mean_t + t, 1, "ret_rms.mean", t);
    expect_doubles(vn.ret_rms.var, c.ret_var_t + t, 1, "ret_rms.var", t);
    expect_doubles(&vn.ret_rms.count, c.ret_count_t + t, 1, "ret_rms.count", t);
    expect_doubles(vn.returns, c.returns_t + t * N, N, "returns", t);
  }
  // The counts are sums of small integers and 1e-4: exact in both.
  cr_assert_eq(vn.obs_rms.count, c.obs_count_t[c.T - 1]);
  cr_assert_eq(inexact, 0, "case %s: %d values within tolerance but not bit-identical to SB3", group, inexact);
  vecnorm_free(&vn);
  free(obs);
  free(rew);
  case_free(&c);
}

Test(normalize, sb3_case_a_n4_o5) { replay_case("a"); }
Test(normalize, sb3_case_b_n16_o1_pairwise_clipped) { replay_case("b"); }
Test(normalize, sb3_case_c_norm_reward_off) { replay_case("c"); }

// Runs `steps` steps of case c (from `from`) through vn.
static void run_steps(VecNormalize *vn, const Case *c, int from, int steps, float *obs_out, float *rew_out) {
  const long N = c->N, O = c->O;
  for (int t = from; t < from + steps; t++) {
    memcpy(obs_out, c->obs + t * N * O, N * O * sizeof(float));
    vecnorm_obs(vn, obs_out, (int)N);
    memcpy(rew_out, c->rewards + t * N, N * sizeof(float));
    vecnorm_reward(vn, rew_out, c->dones + t * N);
  }
}

Test(normalize, frozen_statistics_do_not_move) {
  Case c;
  case_load(&c, "a");
  VecNormalize vn;
  case_init(&vn, &c);
  float obs[4 * 5], rew[4], obs2[4 * 5];
  run_steps(&vn, &c, 0, 10, obs, rew);
  double mean[5], var[5], rmean = vn.ret_rms.mean[0], rvar = vn.ret_rms.var[0];
  double ocount = vn.obs_rms.count, rcount = vn.ret_rms.count;
  memcpy(mean, vn.obs_rms.mean, sizeof mean);
  memcpy(var, vn.obs_rms.var, sizeof var);
  vn.training = false;
  for (int t = 10; t < 30; t++) {
    double before[4];
    memcpy(before, vn.returns, sizeof before);
    run_steps(&vn, &c, t, 1, obs, rew);
    for (int i = 0; i < 4; i++)  // frozen: no accumulation, but done still clears
      cr_assert_eq(vn.returns[i], c.dones[t * 4 + i] ? 0.0 : before[i]);
    // Normalising twice with frozen statistics gives the same numbers.
    memcpy(obs2, c.obs + t * 20, sizeof obs2);
    vecnorm_obs_frozen(&vn, obs2, 4);
    cr_assert_eq(memcmp(obs, obs2, sizeof obs), 0);
  }
  cr_assert_eq(memcmp(mean, vn.obs_rms.mean, sizeof mean), 0);
  cr_assert_eq(memcmp(var, vn.obs_rms.var, sizeof var), 0);
  cr_assert(rmean == vn.ret_rms.mean[0] && rvar == vn.ret_rms.var[0]);
  cr_assert(ocount == vn.obs_rms.count && rcount == vn.ret_rms.count);
  vecnorm_free(&vn);
  case_free(&c);
}

Test(normalize, norm_off_passes_values_but_tracks_returns) {
  VecNormalize vn;
  cr_assert_eq(vecnorm_init(&vn, 2, 3, false, false, 10, 10, 1e-8, 0.99), 0);
  float obs[6] = {1, -2, 3e6f, 4, NAN, -6}, want[6];
  memcpy(want, obs, sizeof obs);
  vecnorm_obs(&vn, obs, 2);
  cr_assert_eq(memcmp(obs, want, sizeof obs), 0);
  cr_assert_eq(vn.obs_rms.count, VECNORM_RMS_EPSILON);
  float rew[2] = {1.5f, -30.f};
  uint8_t dones[2] = {0, 1};
  vecnorm_reward(&vn, rew, dones);
  cr_assert(rew[0] == 1.5f && rew[1] == -30.f);
  cr_assert(vn.returns[0] == 1.5 && vn.returns[1] == 0.0);  // SB3 updates ret_rms whenever training
  cr_assert_eq(vn.ret_rms.count, 2 + VECNORM_RMS_EPSILON);
  vecnorm_free(&vn);
}

static void temp_path(char *buf, size_t n, const char *tag) {
  snprintf(buf, n, "/tmp/test_normalize_%s_%ld.h5", tag, (long)getpid());
}

static void save_to(const VecNormalize *vn, const char *path) {
  H5ioWriter w;
  cr_assert_eq(h5io_create(&w, path), 0, "%s", error_message());
  cr_assert_eq(vecnorm_save(vn, w.file, "normalize"), 0, "%s", error_message());
  cr_assert_eq(h5io_commit(&w), 0, "%s", error_message());
}

Test(normalize, save_load_round_trip_is_exact) {
  Case c;
  case_load(&c, "a");
  VecNormalize a, b;
  case_init(&a, &c);
  case_init(&b, &c);
  float obs[20], rew[4], obs_b[20], rew_b[4];
  run_steps(&a, &c, 0, 23, obs, rew);  // returns are mid-episode
  char path[128];
  temp_path(path, sizeof path, "rt");
  save_to(&a, path);
  hid_t f = h5io_open_read(path);
  cr_assert(f >= 0);
  cr_assert_eq(vecnorm_load(&b, f, "normalize"), 0, "%s", error_message());
  h5io_close(f);
  unlink(path);
  cr_assert_eq(memcmp(a.obs_rms.mean, b.obs_rms.mean, 5 * sizeof(double)), 0);
  cr_assert_eq(memcmp(a.obs_rms.var, b.obs_rms.var, 5 * sizeof(double)), 0);
  cr_assert_eq(memcmp(a.ret_rms.mean, b.ret_rms.mean, sizeof(double)), 0);
  cr_assert_eq(memcmp(a.ret_rms.var, b.ret_rms.var, sizeof(double)), 0);
  cr_assert_eq(memcmp(a.returns, b.returns, 4 * sizeof(double)), 0);
  cr_assert_eq(memcmp(&a.obs_rms.count, &b.obs_rms.count, sizeof(double)), 0);
  cr_assert_eq(memcmp(&a.ret_rms.count, &b.ret_rms.count, sizeof(double)), 0);
  // Save, reload, continue: the same numbers as never stopping.
  for (int t = 23; t < 40; t++) {
    run_steps(&a, &c, t, 1, obs, rew);
    run_steps(&b, &c, t, 1, obs_b, rew_b);
    cr_assert_eq(memcmp(obs, obs_b, sizeof obs), 0, "step %d", t);
    cr_assert_eq(memcmp(rew, rew_b, sizeof rew), 0, "step %d", t);
  }
  vecnorm_free(&a);
  vecnorm_free(&b);
  case_free(&c);
}

Test(normalize, load_rejects_other_shapes_and_bad_values) {
  VecNormalize a, b;
  cr_assert_eq(vecnorm_init(&a, 4, 5, true, true, 10, 10, 1e-8, 0.99), 0);
  cr_assert_eq(vecnorm_init(&b, 4, 6, true, true, 10, 10, 1e-8, 0.99), 0);
  a.obs_rms.var[2] = 7.0;
  char path[128];
  temp_path(path, sizeof path, "shape");
  save_to(&a, path);
  hid_t f = h5io_open_read(path);
  cr_assert(f >= 0);
  cr_assert_eq(vecnorm_load(&b, f, "normalize"), -1);
  cr_assert(strstr(error_message(), "normalize/obs_mean") && strstr(error_message(), "shape"), "%s", error_message());
  cr_assert_eq(b.obs_rms.var[2], 1.0, "a failed load leaves the statistics alone");
  cr_assert_eq(vecnorm_load(&a, f, "elsewhere"), -1);
  cr_assert(strstr(error_message(), "elsewhere/obs_mean"), "%s", error_message());
  h5io_close(f);
  unlink(path);
  vecnorm_free(&b);
  // A negative variance in the file (a hand-edited or damaged checkpoint).
  cr_assert_eq(vecnorm_init(&b, 4, 5, true, true, 10, 10, 1e-8, 0.99), 0);
  a.obs_rms.var[1] = -1.0;
  save_to(&a, path);
  f = h5io_open_read(path);
  cr_assert_eq(vecnorm_load(&b, f, "normalize"), -1);
  cr_assert(strstr(error_message(), "normalize/obs_var[1]"), "%s", error_message());
  cr_assert_eq(b.obs_rms.var[1], 1.0);
  h5io_close(f);
  unlink(path);
  // A count of 0: the statistics of no observation (a fresh one counts VECNORM_RMS_EPSILON).
  a.obs_rms.var[1] = 1.0;
  a.ret_rms.count = 0.0;
  save_to(&a, path);
  f = h5io_open_read(path);
  cr_assert_eq(vecnorm_load(&b, f, "normalize"), -1);
  cr_assert(strstr(error_message(), "normalize/ret_count[0] = 0, a finite count > 0 allowed"), "%s", error_message());
  cr_assert_eq(b.ret_rms.count, VECNORM_RMS_EPSILON);
  h5io_close(f);
  unlink(path);
  vecnorm_free(&a);
  vecnorm_free(&b);
}

Test(normalize, init_rejects_bad_values) {
  VecNormalize vn;
  struct {
    int n, o;
    double clip_obs, clip_reward, eps, gamma;
    const char *key;
  } bad[] = {
      {0, 5, 10, 10, 1e-8, 0.99, "num_envs"},
      {4, 0, 10, 10, 1e-8, 0.99, "obs_dim"},
      {4, 5, 0, 10, 1e-8, 0.99, "clip_obs"},
      {4, 5, 10, -1, 1e-8, 0.99, "clip_reward"},
      {4, 5, 10, 10, 0, 0.99, "epsilon"},
      {4, 5, NAN, 10, 1e-8, 0.99, "clip_obs"},
      {4, 5, 10, INFINITY, 1e-8, 0.99, "clip_reward"},
      {4, 5, 10, 10, 1e-8, 1.5, "gamma"},
      {4, 5, 10, 10, 1e-8, NAN, "gamma"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    error_clear();
    cr_assert_eq(vecnorm_init(&vn, bad[k].n, bad[k].o, true, true, bad[k].clip_obs, bad[k].clip_reward, bad[k].eps,
                              bad[k].gamma),
                 -1, "case %zu accepted", k);
    cr_assert(strstr(error_message(), bad[k].key), "case %zu: message '%s' does not name %s", k, error_message(),
              bad[k].key);
    cr_assert_null(vn.slab);
    vecnorm_free(&vn);
  }
  cr_assert_eq(vecnorm_init(&vn, 1, 1, true, true, 10, 10, 1e-8, 0.0), 0, "%s", error_message());
  cr_assert(vn.training && vn.obs_rms.count == 1e-4 && vn.obs_rms.var[0] == 1.0 && vn.returns[0] == 0.0);
  vecnorm_free(&vn);
  vecnorm_free(&vn);  // idempotent
}
