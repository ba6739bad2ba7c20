// test/test_dist.c: data-parallel training across processes (ppo/dist.h, docs/DISTRIBUTED.md), run
// through mpirun with 2 ranks: the replicas stay identical, they step with the gradient one rank
// holding every env would take, 2 ranks x 16 envs learn CartPole as
// 1 rank x 32 envs does, a failing rank ends the job instead of hanging it (also one that fails to
// join the device communicator while the others wait in their joins), a signal to one rank
// stops all, a 2-rank run (with VecNormalize) resumes bit for bit, and what several ranks cannot do
// is refused with exit status 2.
//
// Every mpirun gets --timeout, so a hang fails the test instead of stalling ctest; OMP_NUM_THREADS=1
// (two ranks on the 2-core CI machine); mpi_yield_when_idle, because a rank that busy-polls in a
// collective takes the core its peer needs when the machine is busy (CartPole 2 x 16: 14 s instead
// of 1.5 s under a load average of 8); no single-copy (CMA) transfers, which containers often
// forbid; OMPI_ALLOW_RUN_AS_ROOT because CI runs as root. Registered only when the build has MPI and
// CMake found mpiexec (label `mpi`).
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/h5io.h"
#include "ppo/checkpoint.h"
#include "program_util.h"
#include "test/h5_test_util.h"

#define TRAIN PPO_BIN_DIR "/ppo-train"
#define PROBE PPO_BIN_DIR "/mpi_replica_probe"
#define ATTACH_PROBE PPO_BIN_DIR "/mpi_attach_probe"

// A small synthetic-market run (categorical trading env); the tests add [normalize] where they need it.
static const char *small_config =
    "[run]\nname = t\nseed = 7\ndevice = cpu\nthreads = 1\ncheckpoint_every = 1\ncheckpoint_keep = 0\n"
    "[env]\ntype = synthetic\nsynthetic_bars = 6000\nn_envs = 4\nepisode_length = 50\nwindow = 4\n"
    "[ppo]\nn_steps = 64\nbatch_size = 48\nn_epochs = 2\nlr_schedule = linear\ntarget_kl = 0.5\n"
    "[policy]\npi_layers = 32,32\nvf_layers = 16\n";

static char tmp_root[256], config_path[512];
static char output[1 << 16];

static void setup(void) {
  snprintf(tmp_root, sizeof tmp_root, "/tmp/ppo_test_dist_%d", (int)getpid());
  mkdir(tmp_root, 0777);
  snprintf(config_path, sizeof config_path, "%s/small.ini", tmp_root);
  write_text(config_path, small_config);
}

static void teardown(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
  cr_expect_eq(system(cmd), 0);
}

// mpirun -np `ranks` bin args, bounded by timeout_s; stdout and stderr in `output`; the exit status.
static int mpirun(int ranks, int timeout_s, const char *bin, const char *args) {
  char line[4096];
  snprintf(line, sizeof line,
           "-np %d --oversubscribe --timeout %d --mca btl_vader_single_copy_mechanism none --mca mpi_yield_when_idle 1 "
           "-x OMP_NUM_THREADS=1 "
           "'%s' %s",
           ranks, timeout_s, bin, args);
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);  // CI runs as root
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  return run_program(PPO_MPIEXEC, line, output, sizeof output);
}

static unsigned char *read_bytes(const char *path, size_t *size) {
  char *text = read_text(path, size);
  cr_assert_not_null(text, "%s missing; output:\n%s", path, output);
  return (unsigned char *)text;
}

// extra: one more override ("" for none).
static void expect_replicas_identical(const char *precision, const char *extra) {
  char out[600], args[1400], p0[700], p1[700];
  snprintf(out, sizeof out, "%s/replica_%s%s", tmp_root, precision, extra[0] ? "_extra" : "");
  snprintf(args, sizeof args, "'%s' '%s' 3 run.precision=%s %s", config_path, out, precision, extra);
  cr_assert_eq(mpirun(2, 120, PROBE, args), 0, "%s", output);
  snprintf(p0, sizeof p0, "%s.rank0.bin", out);
  snprintf(p1, sizeof p1, "%s.rank1.bin", out);
  size_t n0, n1;
  unsigned char *a = read_bytes(p0, &n0), *b = read_bytes(p1, &n1);
  cr_assert(n0 > 0 && n0 == n1, "sizes %zu and %zu", n0, n1);
  size_t first = 0;
  while (first < n0 && a[first] == b[first]) first++;
  cr_expect_eq(first, n0, "%s %s: rank 0 and rank 1 differ first at byte %zu of %zu (params, Adam m, v, normalisation)",
               precision, extra, first, n0);
  cr_expect(strstr(output, "rank 1 of 2: 1536 timesteps"), "3 iterations x 64 steps x 4 envs x 2 ranks:\n%s", output);
  // the probe exits 1 when the logged explained variance is not the pooled rollout's
  cr_expect(strstr(output, "explained variance logged"), "%s", output);
  if (strstr(extra, "init_scale"))  // of 36 minibatches, the first ones overflow and later ones step
    cr_expect(!strstr(output, " 0 skipped steps") && !strstr(output, " 36 skipped steps"),
              "some steps skipped, not all:\n%s", output);
  if (strstr(extra, "target_kl"))  // each rank's own KL would stop at different minibatches
    cr_expect(strstr(output, "rank 0 of 2") && strstr(output, "rank 1 of 2") && !strstr(output, " 0 early stops"),
              "every rank stops early:\n%s", output);
  free(a);
  free(b);
}

TestSuite(dist, .init = setup, .fini = teardown, .timeout = 600);

// (a) Summed gradients, agreed KL stop and reduced advantage moments keep the replicas identical.
Test(dist, replicas_stay_identical_fp32) { expect_replicas_identical("fp32", ""); }
Test(dist, replicas_stay_identical_fp16_with_loss_scaling) { expect_replicas_identical("fp16", ""); }
// A loss scale of 1e9 overflows fp16: the first steps find inf in the summed gradients and are
// skipped on every rank alike while the scale backs off, the later ones step, and the replicas stay
// identical.
Test(dist, replicas_agree_on_skipped_steps_fp16) { expect_replicas_identical("fp16", "amp.init_scale=1e9"); }
// The approx-KL early stop is agreed across ranks (the base config's target_kl = 0.5 never triggers).
Test(dist, replicas_agree_on_the_kl_early_stop) { expect_replicas_identical("fp32", "ppo.target_kl=0.00002"); }
// VecNormalize's statistics take every rank's batch moments at every step: the same on each rank.
Test(dist, replicas_share_the_normalisation_statistics) {
  expect_replicas_identical("fp32", "normalize.obs=true normalize.reward=true");
}

// The replica file's parameter count and its Adam m slab (after the header and the parameters).
static float *replica_m_slab(const char *out, int64_t *count) {
  char path[700];
  snprintf(path, sizeof path, "%s.rank0.bin", out);
  size_t size;
  unsigned char *bytes = read_bytes(path, &size);
  memcpy(count, bytes, sizeof *count);
  size_t n = (size_t)*count, offset = sizeof *count + n * sizeof(float);
  cr_assert(*count > 0 && size >= offset + 2 * n * sizeof(float), "%s: %zu bytes for %lld parameters", path, size,
            (long long)*count);
  float *m = malloc(n * sizeof(float));
  cr_assert_not_null(m);
  memcpy(m, bytes + offset, n * sizeof(float));
  free(bytes);
  return m;
}

// The last iteration's logged loss `name` ("policy", "value", "entropy", "total", "kl") from the probe's
// output.
static double logged_loss(const char *name) {
  const char *at = strstr(output, "losses logged:");
  cr_assert_not_null(at, "%s", output);
  char key[32];
  snprintf(key, sizeof key, " %s ", name);
  const char *field = strstr(at, key);
  cr_assert_not_null(field, "%s", output);
  return atof(field + strlen(key));
}

static double logged_explained_variance(void) {
  const char *at = strstr(output, "explained variance logged ");
  cr_assert_not_null(at, "%s", output);
  return atof(at + strlen("explained variance logged "));
}

// (b) The ranks step with the mean of their gradients over the union of their minibatches: the
// gradient of one process holding every rank's envs. R ranks of N envs roll out what one process
// of R N envs rolls out (the same envs and the same action draws), so with one minibatch of the
// whole rollout (n_epochs = 1) the first step of 2 ranks x 4 envs (batch 256 each) and of 1 rank x 8
// envs (batch 512) take the same gradient, up to the order of the float sums: the advantages
// normalised over all 512 rows, the loss's mean over 512 rows (each rank's seeds times 1/2, then
// the sum over the ranks). After one Adam step from zero, m = (1 - beta1) g, so the m slabs compare
// the gradients themselves; no clipping (max_grad_norm 1e9), which would hide a gradient twice too
// large, as Adam's step itself would.
Test(dist, ranks_step_with_the_gradient_of_one_rank_holding_every_env) {
  const char *common = "1 ppo.n_epochs=1 ppo.max_grad_norm=1e9";
  char args[1400], out2[600], out1[600];
  snprintf(out2, sizeof out2, "%s/mean_2x4", tmp_root);
  snprintf(out1, sizeof out1, "%s/mean_1x8", tmp_root);
  snprintf(args, sizeof args, "'%s' '%s' %s env.n_envs=4 ppo.batch_size=256", config_path, out2, common);
  cr_assert_eq(mpirun(2, 120, PROBE, args), 0, "%s", output);
  double ev2 = logged_explained_variance();
  static const char *losses[] = {"policy", "value", "entropy", "total"};
  double loss2[4], loss1[4];
  for (int k = 0; k < 4; k++) loss2[k] = logged_loss(losses[k]);
  snprintf(args, sizeof args, "'%s' '%s' %s env.n_envs=8 ppo.batch_size=512", config_path, out1, common);
  cr_assert_eq(mpirun(1, 120, PROBE, args), 0, "%s", output);
  double ev1 = logged_explained_variance();
  cr_expect(fabs(ev2 - ev1) <= 1e-5, "explained variance: 2 x 4 envs %.7f, 1 x 8 envs %.7f (the same rollout)", ev2,
            ev1);
  // The logged losses are the means over the ranks' equal minibatches: one minibatch of the same 512
  // rows, so those of the one process (policy and total loss are small: an absolute floor).
  for (int k = 0; k < 4; k++) {
    loss1[k] = logged_loss(losses[k]);
    cr_expect(fabs(loss2[k] - loss1[k]) <= 1e-5 * fabs(loss1[k]) + 1e-7,
              "logged %s loss: 2 x 4 envs %.9g, 1 x 8 envs %.9g (the same minibatch)", losses[k], loss2[k], loss1[k]);
  }
  cr_expect(fabs(loss1[1]) > 1e-4, "a value loss to compare: %g", loss1[1]);
  int64_t n2, n1;
  float *m2 = replica_m_slab(out2, &n2), *m1 = replica_m_slab(out1, &n1);
  cr_assert_eq(n2, n1);
  double scale = 0;
  for (int64_t i = 0; i < n1; i++) scale = fmax(scale, fabs(m1[i]));
  cr_assert_gt(scale, 0.0, "the step moved nothing");
  int64_t worst = 0;
  for (int64_t i = 1; i < n1; i++)
    if (fabs(m2[i] - m1[i]) > fabs(m2[worst] - m1[worst])) worst = i;
  cr_log_info(
      "Adam m, 2 x 4 envs vs 1 x 8: largest difference %.3g at %lld (|m| up to %.3g); explained variance %.7f, %.7f",
      fabs(m2[worst] - m1[worst]), (long long)worst, scale, ev2, ev1);
  cr_expect_leq(fabs(m2[worst] - m1[worst]), 1e-4 * scale,
                "Adam m (0.1 x the gradient) at %lld of %lld: 2 ranks %.9g, 1 rank %.9g (largest |m| %.3g)",
                (long long)worst, (long long)n1, m2[worst], m1[worst], scale);
  free(m2);
  free(m1);
}

// The normalisation statistics in a replica file (after the count and the three slabs): obs mean and
// var (O each), return mean and var, the two counts; *n doubles.
static double *replica_normalisation(const char *out, size_t *n) {
  char path[700];
  snprintf(path, sizeof path, "%s.rank0.bin", out);
  size_t size;
  unsigned char *bytes = read_bytes(path, &size);
  int64_t count;
  memcpy(&count, bytes, sizeof count);
  size_t offset = sizeof count + 3 * (size_t)count * sizeof(float);
  cr_assert(count > 0 && size > offset && (size - offset) % sizeof(double) == 0, "%s: %zu bytes", path, size);
  *n = (size - offset) / sizeof(double);
  double *v = malloc(size - offset);
  cr_assert_not_null(v);
  memcpy(v, bytes + offset, size - offset);
  free(bytes);
  return v;
}

// The approx-KL early stop compares the mean of the ranks' minibatch KLs with 1.5 target_kl: the KL of
// the union of their minibatches, as one rank holding every env sees it. With one minibatch per epoch
// and 2 epochs, the second epoch's KL k (before its step) is what 1 rank x 8 envs logs; 2 ranks x 4
// envs must then go on at target_kl = k / 1.2 (limit 1.25 k) and stop at k / 1.875 (limit 0.8 k).
Test(dist, the_kl_early_stop_takes_the_mean_of_the_ranks_kl) {
  const char *common = "1 ppo.n_epochs=2 ppo.max_grad_norm=1e9";
  char args[1400], out[600];
  snprintf(out, sizeof out, "%s/kl", tmp_root);
  snprintf(args, sizeof args, "'%s' '%s' %s env.n_envs=8 ppo.batch_size=512", config_path, out, common);
  cr_assert_eq(mpirun(1, 120, PROBE, args), 0, "%s", output);
  const double k = logged_loss("kl");
  cr_assert_gt(k, 1e-7, "the second epoch's KL: %g", k);
  const double targets[2] = {k / 1.2, k / 1.875};
  for (int stop = 0; stop < 2; stop++) {
    snprintf(args, sizeof args, "'%s' '%s' %s env.n_envs=4 ppo.batch_size=256 ppo.target_kl=%.9g", config_path, out,
             common, targets[stop]);
    cr_assert_eq(mpirun(2, 120, PROBE, args), 0, "%s", output);
    cr_expect(strstr(output, stop ? " 1 early stops" : " 0 early stops"),
              "KL %.9g (1 x 8 envs), target_kl %.9g: %s expected:\n%s", k, targets[stop], stop ? "a stop" : "no stop",
              output);
  }
}

// VecNormalize's running statistics take each step's batch of every rank's envs (Chan's merge of the
// ranks' batch moments): 2 ranks x 4 envs end the rollout with the statistics of 1 rank x 8 envs, which
// steps the same envs with the same draws and takes their moments as one batch of 8 (up to the float
// rounding of the batch means, SB3's float32 for observations: 2e-6 relative; 0.11 when the merge
// drops the n_a n_b / n weight of the means' difference).
Test(dist, ranks_normalise_with_the_statistics_of_one_rank_holding_every_env) {
  const char *common = "1 ppo.n_epochs=1 normalize.obs=true normalize.reward=true";
  char args[1400], out2[600], out1[600];
  snprintf(out2, sizeof out2, "%s/norm_2x4", tmp_root);
  snprintf(out1, sizeof out1, "%s/norm_1x8", tmp_root);
  snprintf(args, sizeof args, "'%s' '%s' %s env.n_envs=4 ppo.batch_size=256", config_path, out2, common);
  cr_assert_eq(mpirun(2, 120, PROBE, args), 0, "%s", output);
  snprintf(args, sizeof args, "'%s' '%s' %s env.n_envs=8 ppo.batch_size=512", config_path, out1, common);
  cr_assert_eq(mpirun(1, 120, PROBE, args), 0, "%s", output);
  size_t n2, n1;
  double *a = replica_normalisation(out2, &n2), *b = replica_normalisation(out1, &n1);
  cr_assert_eq(n2, n1);
  cr_assert_geq(n1, 6);
  const size_t O = (n1 - 4) / 2;
  size_t worst = 0;
  double worst_diff = -1;
  for (size_t i = 0; i < n1; i++) {
    double diff = fabs(a[i] - b[i]) / (1e-3 + fabs(b[i]));
    if (diff > worst_diff) worst_diff = diff, worst = i;
  }
  cr_log_info("normalisation statistics, 2 x 4 envs vs 1 x 8: largest relative difference %.3g at %zu", worst_diff,
              worst);
  cr_expect_leq(worst_diff, 1e-4,
                "%s %zu: 2 x 4 envs %.17g, 1 x 8 envs %.17g (O = %zu: obs mean, var, ret mean, var, counts)",
                worst < O       ? "obs mean"
                : worst < 2 * O ? "obs var"
                                : "ret/count",
                worst, a[worst], b[worst], O);
  double spread = 0;  // the obs variance of some component is not ~0 (else the merge checks nothing)
  for (size_t i = O; i < 2 * O; i++) spread = fmax(spread, b[i]);
  cr_expect_gt(spread, 1e-2);
  free(a);
  free(b);
}

// The last value of a metrics.csv column.
// metrics.csv's `column` in data row `row` (1 = the first; -1 = the last).
static double metric_at(const char *run_dir, int row, const char *column) {
  char path[700];
  snprintf(path, sizeof path, "%s/metrics.csv", run_dir);
  char *text = read_text(path, NULL);
  cr_assert_not_null(text, "%s; output:\n%s", path, output);
  char *header_end = strchr(text, '\n');
  cr_assert_not_null(header_end);
  *header_end = '\0';
  int index = -1, k = 0;
  for (char *field = strtok(text, ","); field; field = strtok(NULL, ","), k++)
    if (strcmp(field, column) == 0) index = k;
  cr_assert_geq(index, 0, "no column %s in %s", column, path);
  char *line = header_end + 1;
  if (row < 0)
    for (char *nl; (nl = strchr(line, '\n')) && nl[1]; line = nl + 1) {
    }
  else
    for (int r = 1; r < row; r++) {
      char *nl = strchr(line, '\n');
      cr_assert(nl && nl[1], "%s: no row %d", path, row);
      line = nl + 1;
    }
  char *field = line;  // empty fields count (strtok would skip them)
  for (int i = 0; i < index; i++) {
    field += strcspn(field, ",\n");
    cr_assert_eq(*field, ',', "%s: row %d has too few fields", path, row);
    field++;
  }
  double value = (*field == ',' || *field == '\n' || !*field) ? NAN : strtod(field, NULL);
  free(text);
  return value;
}

// (c) The same global batch two ways: 2 ranks x 16 envs with minibatch 64 per rank, and 1 rank x 32
// envs with minibatch 128 (4096 steps per iteration, 32 minibatches of 128 per epoch either way).
// Both must solve CartPole (mean return of the last 100 episodes >= 475) within 200k steps, the
// criterion of test_train's cartpole test.
Test(dist, cartpole_2_ranks_x_16_envs_learns_like_1_x_32) {
  const char *common = "--set run.total_timesteps=200000 --set ppo.n_steps=128 --quiet";
  char args[1400], dir2[600], dir1[600];
  snprintf(dir2, sizeof dir2, "%s/cartpole_2x16", tmp_root);
  snprintf(dir1, sizeof dir1, "%s/cartpole_1x32", tmp_root);
  snprintf(args, sizeof args, "'%s/configs/cartpole.ini' %s --set env.n_envs=16 --set ppo.batch_size=64 --run-dir '%s'",
           PPO_SOURCE_DIR, common, dir2);
  time_t t0 = time(NULL);
  cr_assert_eq(mpirun(2, 300, TRAIN, args), 0, "%s", output);
  time_t t1 = time(NULL);
  snprintf(args, sizeof args,
           "'%s/configs/cartpole.ini' %s --set env.n_envs=32 --set ppo.batch_size=128 --run-dir '%s'", PPO_SOURCE_DIR,
           common, dir1);
  cr_assert_eq(mpirun(1, 300, TRAIN, args), 0, "%s", output);
  time_t t2 = time(NULL);
  double two = metric_at(dir2, -1, "rollout/ep_rew_mean"), one = metric_at(dir1, -1, "rollout/ep_rew_mean");
  cr_log_info("cartpole 200k steps: 2 x 16 envs %.1f (%lld s), 1 x 32 envs %.1f (%lld s)", two, (long long)(t1 - t0),
              one, (long long)(t2 - t1));
  cr_expect_geq(two, 475.0, "2 ranks x 16 envs: ep_rew_mean %.1f", two);
  cr_expect_geq(one, 475.0, "1 rank x 32 envs: ep_rew_mean %.1f", one);
  cr_expect_eq(metric_at(dir2, -1, "time/total_timesteps"), 200704.0, "49 iterations x 4096 steps over both ranks");
}

// (d) A rank that fails alone ends the whole job with its status, well inside mpirun's timeout.
Test(dist, a_failing_rank_ends_every_rank) {
  char args[1400];
  snprintf(args, sizeof args, "'%s' --set run.total_timesteps=100_000_000 --run-dir '%s/fail' --quiet", config_path,
           tmp_root);
  setenv("PPO_TEST_FAIL_RANK", "1", 1);
  time_t t0 = time(NULL);
  int status = mpirun(2, 120, TRAIN, args);
  time_t seconds = time(NULL) - t0;
  unsetenv("PPO_TEST_FAIL_RANK");
  cr_expect_eq(status, 1, "exit status %d:\n%s", status, output);
  cr_expect_lt(seconds, 60, "took %lld s (a hang would take the 120 s timeout)", (long long)seconds);
  cr_expect(strstr(output, "[rank 1/2] ppo-train: failed with exit status 1"), "%s", output);
}

// A rank whose communicator join fails (NCCL's ncclCommInitRank on a GPU another rank holds) ends
// the job with its message and status 2, though the other rank is inside its own join waiting for
// it (test/mpi_attach_probe.c stands in for the CUDA backend); every join working, both ranks go on.
Test(dist, a_rank_that_cannot_join_the_communicator_ends_every_rank) {
  cr_expect_eq(mpirun(2, 60, ATTACH_PROBE, "-1"), 0, "%s", output);
  cr_expect(strstr(output, "rank 0 joined") && strstr(output, "rank 1 joined"), "%s", output);
  for (int fail = 0; fail < 2; fail++) {
    char arg[8], said[200];
    snprintf(arg, sizeof arg, "%d", fail);
    time_t t0 = time(NULL);
    int status = mpirun(2, 120, ATTACH_PROBE, arg);
    time_t seconds = time(NULL) - t0;
    cr_expect_eq(status, 2, "rank %d fails: exit status %d:\n%s", fail, status, output);
    cr_expect_lt(seconds, 60, "rank %d fails: took %lld s (a hang would take the 120 s timeout)", fail,
                 (long long)seconds);
    snprintf(said, sizeof said, "[rank %d/2] backend 'stand-in': rank %d of 2 could not join the communicator", fail,
             fail);
    cr_expect(strstr(output, said), "rank %d fails, expected \"%s\":\n%s", fail, said, output);
    cr_expect(strstr(output, "ending every rank"), "%s", output);
    cr_expect(!strstr(output, "joined"), "no rank gets past the join:\n%s", output);
  }
}

// The newest child process of `parent` (from /proc): with mpirun as the parent, the last rank started.
static pid_t newest_child(pid_t parent) {
  DIR *d = opendir("/proc");
  cr_assert_not_null(d);
  pid_t newest = -1;
  struct dirent *de;
  while ((de = readdir(d))) {
    char path[300], stat[512];
    if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
    snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *close_paren = strrchr(stat, ')');  // "pid (comm) state ppid ..."
    int ppid = 0;
    char state;
    if (close_paren && sscanf(close_paren + 1, " %c %d", &state, &ppid) == 2 && ppid == parent) {
      pid_t pid = (pid_t)atoi(de->d_name);
      if (pid > newest) newest = pid;
    }
  }
  closedir(d);
  return newest;
}

// A SIGTERM that reaches one rank only (a preemption notice to one node) stops every rank at the same
// point (the same rollout step, or after the same update): rank 0 writes the checkpoint, the job
// exits 0 and the checkpoint resumes.
Test(dist, a_signal_to_one_rank_stops_every_rank) {
  char dir[600], metrics[700], args[1400];
  snprintf(dir, sizeof dir, "%s/signal", tmp_root);
  snprintf(metrics, sizeof metrics, "%s/metrics.csv", dir);
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  char err_path[700];
  snprintf(err_path, sizeof err_path, "%s/signal_stderr.txt", tmp_root);
  pid_t mpirun_pid = fork();
  cr_assert(mpirun_pid >= 0);
  if (mpirun_pid == 0) {
    int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(126);
    execl(PPO_MPIEXEC, PPO_MPIEXEC, "-np", "2", "--oversubscribe", "--timeout", "120", "--mca", "mpi_yield_when_idle",
          "1", "--mca", "btl_vader_single_copy_mechanism", "none", "-x", "OMP_NUM_THREADS=1", TRAIN, config_path,
          "--set", "run.total_timesteps=100_000_000", "--set", "run.checkpoint_every=0", "--run-dir", dir, "--quiet",
          (char *)NULL);
    _exit(127);
  }
  wait_for_lines(metrics, 3, 60);  // two iterations logged: both ranks run the loop
  pid_t rank = newest_child(mpirun_pid);
  cr_assert_gt(rank, 0, "no rank under mpirun %d", (int)mpirun_pid);
  cr_assert_eq(kill(rank, SIGTERM), 0);
  int status = 0;
  cr_assert_eq(waitpid(mpirun_pid, &status, 0), mpirun_pid);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "mpirun status %d", status);
  char *err = read_text(err_path, NULL);  // the way on names the ranks the checkpoint needs
  cr_assert_not_null(err);
  cr_expect(strstr(err, "ppo-train: continue with: mpirun -np 2 ppo-train --resume "), "%s", err);
  free(err);
  snprintf(args, sizeof args, "--resume '%s/checkpoints/last.h5' --iterations 1 --quiet", dir);
  cr_expect_eq(mpirun(2, 120, TRAIN, args), 0, "the checkpoint of the stop resumes:\n%s", output);
}

// Every dataset of two checkpoints, byte for byte.
static void expect_same_checkpoint(const char *a_path, const char *b_path) {
  static const char *const names[] = {
      "params/pi/weight0", "params/pi/bias2",
      "params/vf/weight0", "params/vf/bias1",
      "optim/m",           "optim/v",
      "optim/step",        "envs/state",
      "envs/obs",          "envs/episode_starts",
      "envs/episode_logs", "envs/ring_counters",
      "envs/norm_returns", "normalize/obs_mean",
      "normalize/obs_var", "normalize/obs_count",
      "normalize/ret_var", "rng/vector_steps",
      "rng/epochs_drawn",
  };
  expect_same_datasets(a_path, b_path, names, sizeof names / sizeof names[0]);
  hid_t a = h5io_open_read(a_path);
  cr_assert(a >= 0, "%s", error_message());
  int64_t ranks = 0;
  cr_expect_eq(h5io_attr_read_int64(a, "/", "ranks", &ranks), 0);
  cr_expect_eq(ranks, 2);
  h5io_close(a);
}

// (e) 2 + 2 iterations with a resume in between end where 4 straight do; the checkpoint holds both
// ranks' envs (8 rows), and resuming it on one rank is refused.
// A stop asked by rank 1 alone in the middle of the second iteration's update: both ranks stop at
// the same vote, return to the iteration's start and run it again, ending with the bytes of a run
// that was never stopped.
Test(dist, a_stop_during_the_update_is_agreed_and_undone) {
  char out[2][600], args[2048], path[1300];
  unsigned char *bytes[2][2];
  size_t sizes[2][2];
  for (int stopped = 0; stopped < 2; stopped++) {
    snprintf(out[stopped], sizeof out[stopped], "%s/update_stop_%d", tmp_root, stopped);
    snprintf(args, sizeof args, "'%s' '%s' 3 run.precision=fp16 ppo.target_kl=none", config_path, out[stopped]);
    if (stopped) setenv("PROBE_STOP_IN_UPDATE", "1 5", 1);  // the ranks vote every 4 minibatches: before the 8th
    cr_assert_eq(mpirun(2, 120, PROBE, args), 0, "%s", output);
    unsetenv("PROBE_STOP_IN_UPDATE");
    const char *expect = stopped ? "1 interrupted" : "0 interrupted";
    for (int r = 0; r < 2; r++) {
      char rank_line[64];
      snprintf(rank_line, sizeof rank_line, "rank %d of 2: 1536 timesteps", r);
      const char *line = strstr(output, rank_line);
      cr_expect(line && strstr(line, expect) && strchr(line, '\n') > strstr(line, expect), "rank %d, %s:\n%s", r,
                expect, output);
      snprintf(path, sizeof path, "%s.rank%d.bin", out[stopped], r);
      bytes[stopped][r] = read_bytes(path, &sizes[stopped][r]);
    }
  }
  for (int r = 0; r < 2; r++) {
    cr_assert_eq(sizes[0][r], sizes[1][r]);
    cr_expect_eq(memcmp(bytes[0][r], bytes[1][r], sizes[0][r]), 0, "rank %d: the stopped run ends elsewhere", r);
    free(bytes[0][r]);
    free(bytes[1][r]);
  }
}

Test(dist, a_two_rank_run_resumes_bit_exactly) {
  char args[1400], straight[600], resumed[600], a[700], b[700];
  snprintf(straight, sizeof straight, "%s/straight", tmp_root);
  snprintf(resumed, sizeof resumed, "%s/resumed", tmp_root);
  // 4 iterations of 64 x 4 x 2, with both normalisations (their per-env returns are each rank's) and
  // rank 0's validation pass, whose best.h5 every rank takes part in writing
  const char *total =
      "--set run.total_timesteps=2048 --set normalize.obs=true --set normalize.reward=true "
      "--set eval.every=2 --quiet";
  snprintf(args, sizeof args, "'%s' %s --run-dir '%s'", config_path, total, straight);
  cr_assert_eq(mpirun(2, 120, TRAIN, args), 0, "%s", output);
  snprintf(args, sizeof args, "'%s' %s --run-dir '%s' --iterations 2", config_path, total, resumed);
  cr_assert_eq(mpirun(2, 120, TRAIN, args), 0, "%s", output);
  snprintf(args, sizeof args, "--resume '%s/checkpoints/last.h5' --quiet", resumed);
  cr_assert_eq(mpirun(2, 120, TRAIN, args), 0, "%s", output);
  snprintf(a, sizeof a, "%s/checkpoints/ckpt_000004.h5", straight);
  snprintf(b, sizeof b, "%s/checkpoints/ckpt_000004.h5", resumed);
  expect_same_checkpoint(a, b);
  snprintf(b, sizeof b, "%s/best.h5", straight);
  cr_expect_eq(access(b, F_OK), 0, "[eval] every = 2 writes best.h5");
  hid_t f = h5io_open_read(a);
  hsize_t dims[2];
  cr_expect_eq(h5io_shape(f, "envs/obs", 2, dims), 2);
  cr_expect_eq(dims[0], 8, "2 ranks x 4 envs of rows, got %llu", (unsigned long long)dims[0]);
  // each rank's own envs (own seeds and start positions), not rank 0's written twice
  float *obs = malloc((size_t)dims[0] * dims[1] * sizeof(float));
  cr_assert_not_null(obs);
  cr_assert_eq(h5io_read(f, "envs/obs", H5IO_FLOAT32, 2, dims, obs), 0, "%s", error_message());
  size_t half = (size_t)dims[0] / 2 * dims[1];
  cr_expect_neq(memcmp(obs, obs + half, half * sizeof(float)), 0, "rank 1's env rows equal rank 0's");
  free(obs);
  h5io_close(f);
  snprintf(args, sizeof args, "--resume '%s' --run-dir '%s/one' --quiet", a, tmp_root);
  cr_expect_eq(run_program(TRAIN, args, output, sizeof output), 2, "%s", output);
  cr_expect(strstr(output, "holds the envs of 2 rank(s) and this run has 1"), "%s", output);
  // A NaN among the ranks' per-env discounted returns is refused by name (it reached every
  // normalised reward and ended the run as diverged, exit 1).
  char damaged[700], cmd[1600];
  snprintf(damaged, sizeof damaged, "%s/nan_returns.h5", tmp_root);
  copy_with_element(a, damaged, "envs/norm_returns", 5, NAN);
  snprintf(args, sizeof args, "--resume '%s' --run-dir '%s/nan_run' --quiet", damaged, tmp_root);
  cr_expect_eq(mpirun(2, 120, TRAIN, args), 2, "%s", output);
  cr_expect(strstr(output, "envs/norm_returns[5] = nan: must be finite"), "%s", output);
  // Ranks resuming from different checkpoints (each names its own file) are refused before the
  // first step, naming the rank's file: exit 2 (it was 1, blaming the build or the BLAS).
  char line[4096];
  snprintf(line, sizeof line,
           "--oversubscribe --timeout 60 --mca btl_vader_single_copy_mechanism none -x OMP_NUM_THREADS=1 -np 1 '%s' "
           "--resume '%s/checkpoints/ckpt_000003.h5' --run-dir '%s/two_ckpts' --quiet : -np 1 '%s' --resume '%s' "
           "--run-dir '%s/two_ckpts' --quiet",
           TRAIN, straight, tmp_root, TRAIN, a, tmp_root);
  cr_expect_eq(run_program(PPO_MPIEXEC, line, output, sizeof output), 2, "%s", output);
  cr_expect(strstr(output, "every rank's --resume must name the same checkpoint"), "%s", output);
  snprintf(line, sizeof line, "%s/two_ckpts", tmp_root);  // rank 0 made it, with its lock, before the check
  cr_expect_neq(access(line, F_OK), 0, "the refused run left %s", line);
  // A checkpoint of a build whose ranks drew per-rank action streams (no action_draws attribute)
  // resumes, saying it will not retrace its run.
  snprintf(damaged, sizeof damaged, "%s/old_draws.h5", tmp_root);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", a, damaged);
  cr_assert_eq(system(cmd), 0);
  hid_t df = H5Fopen(damaged, H5F_ACC_RDWR, H5P_DEFAULT);
  cr_assert_geq(H5Adelete(df, "action_draws"), 0, "the 2-rank checkpoint names its action draws");
  H5Fclose(df);
  snprintf(args, sizeof args, "--resume '%s' --run-dir '%s/old_draws_run' --set run.total_timesteps=2560", damaged,
           tmp_root);
  cr_expect_eq(mpirun(2, 120, TRAIN, args), 0, "%s", output);
  cr_expect(strstr(output, "does not say how its ranks drew their actions") &&
                strstr(output, "does not retrace the run it continues"),
            "%s", output);
}

// A stop during iteration 2's [eval] pass (rank 0 runs it; PPO_TEST_STOP_BEFORE_EVAL asks every rank
// to stop as it starts) abandons it: the checkpoint both ranks write says so, and the resumed 2-rank
// run evaluates iteration 2 first (every rank agrees to, and takes part in writing best.h5), so the
// metrics rows, best.txt and the state at iteration 4 end as the uninterrupted run's.
Test(dist, an_evaluation_abandoned_by_a_stop_runs_after_a_two_rank_resume) {
  char args[1400], straight[600], stopped[600], a[700], b[700];
  snprintf(straight, sizeof straight, "%s/eval_straight", tmp_root);
  snprintf(stopped, sizeof stopped, "%s/eval_stopped", tmp_root);
  const char *total = "--set run.total_timesteps=2048 --set eval.every=2 --quiet";  // 4 iterations
  snprintf(args, sizeof args, "'%s' %s --run-dir '%s'", config_path, total, straight);
  cr_assert_eq(mpirun(2, 120, TRAIN, args), 0, "%s", output);
  snprintf(args, sizeof args, "'%s' %s --run-dir '%s'", config_path, total, stopped);
  setenv("PPO_TEST_STOP_BEFORE_EVAL", "2", 1);
  int status = mpirun(2, 120, TRAIN, args);
  unsetenv("PPO_TEST_STOP_BEFORE_EVAL");
  cr_assert_eq(status, 0, "%s", output);
  cr_expect(strstr(output, "evaluation of iteration 2 abandoned"), "%s", output);
  snprintf(a, sizeof a, "%s/checkpoints/last.h5", stopped);
  cr_expect_eq(checkpoint_read_eval_pending(a), 2, "the stopped run's checkpoint asks for iteration 2's pass");
  cr_expect(isnan(metric_at(stopped, 2, "eval/sharpe")), "row 2 has no evaluation yet");
  snprintf(args, sizeof args, "--resume '%s' --quiet", a);
  cr_assert_eq(mpirun(2, 120, TRAIN, args), 0, "%s", output);
  for (int row = 1; row <= 4; row++) {
    double want = metric_at(straight, row, "eval/sharpe"), got = metric_at(stopped, row, "eval/sharpe");
    cr_expect(got == want || (isnan(got) && isnan(want)), "row %d's eval/sharpe: %.17g, uninterrupted %.17g", row, got,
              want);
  }
  cr_expect(!isnan(metric_at(stopped, 2, "eval/sharpe")), "row 2 evaluated after the resume");
  snprintf(a, sizeof a, "%s/best.txt", straight);
  snprintf(b, sizeof b, "%s/best.txt", stopped);
  char *best_a = read_text(a, NULL), *best_b = read_text(b, NULL);
  cr_assert(best_a && best_b, "best.txt missing; output:\n%s", output);
  cr_expect_str_eq(best_b, best_a, "best.txt");
  free(best_a), free(best_b);
  snprintf(a, sizeof a, "%s/checkpoints/ckpt_000004.h5", straight);
  snprintf(b, sizeof b, "%s/checkpoints/ckpt_000004.h5", stopped);
  expect_same_checkpoint(a, b);
  cr_expect_eq(checkpoint_read_eval_pending(b), -1, "later checkpoints carry no pending evaluation");
}

// An MPMD launch can give the ranks different settings: refused before training, exit status 2.
Test(dist, ranks_with_different_configurations_are_refused) {
  char line[4096];
  const char *common = "--oversubscribe --timeout 60 --mca btl_vader_single_copy_mechanism none -x OMP_NUM_THREADS=1";
  snprintf(line, sizeof line,
           "%s -np 1 '%s' '%s' --run-dir '%s/mpmd' --quiet : -np 1 '%s' '%s' --quiet --set ppo.gamma=0.5", common,
           TRAIN, config_path, tmp_root, TRAIN, config_path);
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  cr_expect_eq(run_program(PPO_MPIEXEC, line, output, sizeof output), 2, "%s", output);
  cr_expect(strstr(output, "the ranks resolved different configurations") &&
                strstr(output, "this rank has [ppo] gamma = 0.5 (rank 0: "),
            "%s", output);
  // per-process keys may differ
  snprintf(line, sizeof line,
           "%s -np 1 '%s' '%s' --run-dir '%s/mpmd2' --quiet --set run.total_timesteps=512 : -np 1 '%s' '%s' --quiet "
           "--set run.total_timesteps=512 --set run.log_every=3",
           common, TRAIN, config_path, tmp_root, TRAIN, config_path);
  cr_expect_eq(run_program(PPO_MPIEXEC, line, output, sizeof output), 0, "%s", output);
  // ... and one rank refusing its own (a memory limit the plan exceeds) leaves no run directory:
  // rank 0, whose plan fit, had made it and its lock
  snprintf(line, sizeof line,
           "%s -np 1 '%s' '%s' --run-dir '%s/mpmd_limit' --quiet : -np 1 '%s' '%s' --quiet --set "
           "run.memory_limit=100KiB",
           common, TRAIN, config_path, tmp_root, TRAIN, config_path);
  cr_expect_eq(run_program(PPO_MPIEXEC, line, output, sizeof output), 2, "%s", output);
  cr_expect(strstr(output, "[run] memory_limit = 100KiB"), "%s", output);
  snprintf(line, sizeof line, "%s/mpmd_limit", tmp_root);
  cr_expect_neq(access(line, F_OK), 0, "the refused run left %s", line);
  // Options that send the ranks down different paths (one stops after 2 iterations, the other goes
  // on; one prints its plan and leaves) are refused at once: they waited in mismatched collectives
  // until mpirun's --timeout (exit status 110).
  static const char *const options[][2] = {
      {"--iterations 2", "--iterations 3"}, {"", "--plan"}, {"--print-config", ""}};
  for (int k = 0; k < 3; k++) {
    snprintf(line, sizeof line, "%s -np 1 '%s' '%s' --run-dir '%s/mpmd%d' --quiet %s : -np 1 '%s' '%s' --quiet %s",
             common, TRAIN, config_path, tmp_root, 3 + k, options[k][0], TRAIN, config_path, options[k][1]);
    time_t t0 = time(NULL);
    cr_expect_eq(run_program(PPO_MPIEXEC, line, output, sizeof output), 2, "%s", output);
    cr_expect_lt(time(NULL) - t0, 30, "options %s / %s: a hang until the 60 s timeout", options[k][0], options[k][1]);
    cr_expect(strstr(output, "the ranks were given different options"), "%s", output);
  }
  // --print-config on every rank prints the configuration once (rank 0's)
  snprintf(line, sizeof line, "'%s' --print-config", config_path);
  cr_expect_eq(mpirun(2, 60, TRAIN, line), 0, "%s", output);
  const char *first = strstr(output, "\n[run]\n");
  cr_expect(first && !strstr(first + 1, "\n[run]\n"), "printed by every rank: %s", output);
}

// Each rank loads [env] data itself: a relative path read from another directory on one rank (an MPMD
// --wdir here; a node-local copy that differs on a cluster) gave the ranks different bars, and the
// job trained on them, exit 0. Refused before training (exit status 2, naming both markets, no run
// directory); the same file under both directories trains.
Test(dist, ranks_that_loaded_different_market_data_are_refused) {
  char dirs[2][600], config[700], line[4096], cmd[2000];
  const char *files[2] = {"XAUUSD_1H.h5", "EURUSD_1H.h5"};
  for (int k = 0; k < 2; k++) {
    snprintf(dirs[k], sizeof dirs[k], "%s/node%d", tmp_root, k);
    cr_assert_eq(mkdir(dirs[k], 0777), 0);
  }
  snprintf(config, sizeof config, "%s/trading.ini", tmp_root);
  write_text(config,
             "[run]\nseed = 3\ndevice = cpu\nthreads = 1\ntotal_timesteps = 128\ncheckpoint_every = 0\n"
             "[env]\ntype = trading\ndata = market.h5\nn_envs = 2\n"
             "[ppo]\nn_steps = 32\nbatch_size = 32\nn_epochs = 1\n[policy]\npi_layers = 8\nvf_layers = 8\n");
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  for (int differ = 1; differ >= 0; differ--) {
    for (int k = 0; k < 2; k++) {
      snprintf(cmd, sizeof cmd, "ln -sfn '%s/data/%s' '%s/market.h5'", PPO_SOURCE_DIR, files[differ ? k : 0], dirs[k]);
      cr_assert_eq(system(cmd), 0);
    }
    snprintf(line, sizeof line,
             "--oversubscribe --timeout 60 --mca btl_vader_single_copy_mechanism none -x OMP_NUM_THREADS=1 -np 1 "
             "--wdir '%s' '%s' '%s' --run-dir '%s/market%d' --quiet : -np 1 --wdir '%s' '%s' '%s' --run-dir "
             "'%s/market%d' --quiet",
             dirs[0], TRAIN, config, tmp_root, differ, dirs[1], TRAIN, config, tmp_root, differ);
    int status = run_program(PPO_MPIEXEC, line, output, sizeof output);
    snprintf(cmd, sizeof cmd, "%s/market%d", tmp_root, differ);
    if (!differ) {
      cr_expect_eq(status, 0, "one file under both directories:\n%s", output);
      continue;
    }
    cr_expect_eq(status, 2, "%s", output);
    cr_expect(strstr(output, "ppo-train (rank 1): the ranks loaded different market data") &&
                  strstr(output, "[env] data = market.h5 gave ") && strstr(output, "rank 0's "),
              "%s", output);
    cr_expect_neq(access(cmd, F_OK), 0, "the refused run left %s", cmd);
  }
}

// What several ranks do not support is a usage error (exit status 2).
Test(dist, walk_forward_with_two_ranks_is_refused) {
  char args[1400];
  snprintf(args, sizeof args, "--walk-forward '%s' --run-dir '%s/wf' --quiet", config_path, tmp_root);
  cr_expect_eq(mpirun(2, 60, TRAIN, args), 2, "%s", output);
  // each rank's line whole (two ranks' pieces once made "ppo-train: ppo-train: ..."), the usage once
  cr_expect(strstr(output, "ppo-train (rank 0): --walk-forward runs on one rank"), "%s", output);
  cr_expect(strstr(output, "ppo-train (rank 1): --walk-forward runs on one rank"), "%s", output);
  const char *usage = strstr(output, "usage: ppo-train");
  cr_expect(usage && !strstr(usage + 1, "usage: ppo-train"), "the usage text once:\n%s", output);
}
