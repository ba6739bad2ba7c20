// bench/ppo_bench.c: ppo-bench, the plain-C benchmark driver (STYLE rule 13).
//
//   ppo-bench backend [--backend cpu] [--precision all|fp32|fp16|bf16] [--obs 24] [--actions 3]
//                     [--hidden 2048,1024,512] [--repeats 7] [--json FILE]
//
// For each precision, on the headline network (actor and critic with the given hidden sizes, a
// categorical head): every GEMM of the forward and backward pass at batch 32 (rollout) and 1024
// (update), each first checked against a double-precision dot product on sampled entries, then
// timed; then the full forward + backward + clip + Adam step of both networks at minibatch 1024
// (samples/s) and rollout inference (forward of both networks + sampling) at batch 32. A square
// 2048^3 GEMM gives the machine's measured best next to the network's shapes (DESIGN.md section 10).
// Times are medians of --repeats runs (the range is printed after them). --json appends one JSON
// object per line: {"name", "backend", "precision", "shape", "value", "unit"}.
// OpenMP threads spin briefly, then sleep (GOMP_SPINCOUNT=10000, set here by re-executing when
// neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set): libgomp's default spin (300000) made a
// 2-core machine shared with other work collapse (2.5x slower steps), while PASSIVE costs small
// ops (rollout inference at batch 32) a futex wake-up per parallel region, 40 % of their speed.
// bench/torch_reference.py --omp spin runs PyTorch the same way. `ppo-bench all` (bench_all.c) runs
// under the same setting and collects every row through bench_report.
// Exit status: 0, 1 when a check fails, 2 on bad usage.
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "apps/cli.h"
#include "bench/bench.h"
#include "build_info.h"  // PPO_BUILD_INFO (generated)
#include "common/check.h"
#include "common/error.h"
#include "common/log.h"
#include "common/rng.h"
#include "common/timer.h"
#include "nn/optim.h"
#include "nn/policy.h"

typedef struct {
  const char *backend;
  int precisions[3], n_precisions;
  int obs, actions, n_hidden, hidden[NN_MAX_LINEAR - 1];
  int repeats;
  const char *json;
} BenchOptions;

static FILE *json_file;
static const char *backend_label;

// Prints one row, appends it to --json, and hands it to the result sink (`ppo-bench all`). value is the
// median; lo and hi the range over the repeats, in the same unit.
static void emit(const char *name, const char *precision, const char *shape, double value, double lo, double hi,
                 const char *unit, int repeats) {
  printf("  %-26s %-6s %-18s %12.1f %s  [%.1f, %.1f]\n", name, precision, shape, value, unit, lo, hi);
  if (json_file) {  // flushed line by line: a run killed later leaves whole lines behind
    fprintf(json_file,
            "{\"name\": \"%s\", \"backend\": \"%s\", \"precision\": \"%s\", \"shape\": \"%s\", \"value\": %.15g, "
            "\"unit\": \"%s\"}\n",
            name, backend_label, precision, shape, value, unit);
    fflush(json_file);  // a failure sets the stream's error flag, read at the close
  }
  char params[96];
  snprintf(params, sizeof params, "shape=%s", shape);
  bench_report(&(BenchResult){.name = name,
                              .backend = backend_label,
                              .precision = precision,
                              .params = params,
                              .median = value,
                              .min = lo,
                              .max = hi,
                              .unit = unit,
                              .repeats = repeats});
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

// --- GEMM: check, then time ---------------------------------------------------------------------------------

typedef struct {
  const char *name;
  int trans_a, trans_b, M, N, K;
} GemmShape;

static float load(const void *x, NnDtype dt, size_t i) {
  if (dt == NN_F16) return nn_f16_to_f32(((const uint16_t *)x)[i]);
  if (dt == NN_BF16) return nn_bf16_to_f32(((const uint16_t *)x)[i]);
  return ((const float *)x)[i];
}

// Runs C = op(A) op(B) once and compares 64 sampled entries with a double dot product of the same
// (rounded) inputs, read back from the backend. Returns 0 when all agree.
static int gemm_check(Backend *b, NnDtype dt, const GemmShape *s, const void *A_dev, const void *B_dev, float *C_dev) {
  backend_gemm(b, dt, s->trans_a, s->trans_b, s->M, s->N, s->K, 1.0f, A_dev, B_dev, 0.0f, C_dev);
  size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N, es = nn_dtype_size(dt);
  void *A = CHECK_ALLOC(na * es, "bench check"), *Bm = CHECK_ALLOC(nb * es, "bench check");
  float *C = CHECK_ALLOC(nc * sizeof(float), "bench check");
  backend_download(b, A, A_dev, na * es);
  backend_download(b, Bm, B_dev, nb * es);
  backend_download(b, C, C_dev, nc * sizeof(float));
  Rng rng;
  rng_seed(&rng, 99);
  int rc = 0;
  for (int t = 0; t < 64 && rc == 0; t++) {
    size_t i = rng_below(&rng, (uint64_t)s->M), j = rng_below(&rng, (uint64_t)s->N);
    double sum = 0, mag = 0;
    for (size_t k = 0; k < (size_t)s->K; k++) {
      double a = load(A, dt, s->trans_a ? k * s->M + i : i * s->K + k);
      double c = load(Bm, dt, s->trans_b ? j * s->K + k : k * s->N + j);
      sum += a * c, mag += fabs(a * c);
    }
    double got = C[i * s->N + j];
    if (!(fabs(got - sum) <= 1e-5 * sqrt((double)s->K) * mag + 1e-6)) {
      fprintf(stderr, "ppo-bench: %s %s (%dx%dx%d) C[%zu][%zu] = %.9g, expected %.9g\n", s->name, nn_dtype_name(dt),
              s->M, s->N, s->K, i, j, got, sum);
      rc = -1;
    }
  }
  free(A), free(Bm), free(C);
  return rc;
}

// Seconds per call of fn: median, fastest and slowest of `repeats` runs after a warm-up, each run
// long enough (>= 20 ms) to time. The backend is synchronised before each clock reading, so queued
// work (a GPU's) is inside the time; fn itself need not wait.
typedef void (*BenchFn)(void *arg);
typedef struct {
  double median, fastest, slowest;
} TimeStats;
static TimeStats time_stats(Backend *b, BenchFn fn, void *arg, int repeats) {
  fn(arg);  // warm-up (library state, caches)
  backend_sync(b);
  double t0 = timer_now();
  fn(arg);
  backend_sync(b);
  double one = timer_since(t0);
  int iters = one > 0.02 ? 1 : (int)(0.02 / (one > 1e-7 ? one : 1e-7)) + 1;
  double *samples = CHECK_ALLOC((size_t)repeats * sizeof(double), "bench samples");
  for (int r = 0; r < repeats; r++) {
    t0 = timer_now();
    for (int i = 0; i < iters; i++) fn(arg);
    backend_sync(b);
    samples[r] = timer_since(t0) / iters;
  }
  qsort(samples, (size_t)repeats, sizeof(double), compare_double);
  double median = repeats % 2 ? samples[repeats / 2] : 0.5 * (samples[repeats / 2 - 1] + samples[repeats / 2]);
  TimeStats t = {median, samples[0], samples[repeats - 1]};  // an even count: the two middle runs' mean, as envs
  free(samples);
  return t;
}

typedef struct {
  Backend *b;
  NnDtype dt;
  const GemmShape *s;
  const void *A, *B;
  float *C;
} GemmArg;

static void gemm_call(void *p) {
  GemmArg *g = p;
  backend_gemm(g->b, g->dt, g->s->trans_a, g->s->trans_b, g->s->M, g->s->N, g->s->K, 1.0f, g->A, g->B, 0.0f, g->C);
}

// n uniforms in [-1, 1), rounded to dt on the host (ops_math.h), uploaded to dst (backend memory).
static void upload_random(Backend *b, void *dst, NnDtype dt, size_t n, Rng *rng) {
  size_t es = nn_dtype_size(dt);
  unsigned char *host = CHECK_ALLOC(n * es, "bench operands");
  for (size_t i = 0; i < n; i++) {
    float x = (float)(rng_uniform(rng) * 2 - 1);
    if (dt == NN_F32)
      memcpy(host + i * 4, &x, 4);
    else {
      uint16_t h = dt == NN_F16 ? nn_f32_to_f16(x) : nn_f32_to_bf16(x);
      memcpy(host + i * 2, &h, 2);
    }
  }
  backend_upload(b, dst, host, n * es);
  free(host);
}

static int bench_gemm(Backend *b, NnDtype dt, const GemmShape *s, int repeats, const char *label) {
  size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, es = nn_dtype_size(dt);
  void *A = backend_alloc(b, na * es), *Bm = backend_alloc(b, nb * es);
  float *C = backend_alloc(b, (size_t)s->M * s->N * sizeof(float));
  Rng rng;
  rng_seed(&rng, 7);
  upload_random(b, A, dt, na, &rng);
  upload_random(b, Bm, dt, nb, &rng);
  int rc = gemm_check(b, dt, s, A, Bm, C);
  if (rc == 0) {
    GemmArg arg = {b, dt, s, A, Bm, C};
    TimeStats t = time_stats(b, gemm_call, &arg, repeats);
    char shape[64];
    snprintf(shape, sizeof shape, "%dx%dx%d%s%s", s->M, s->N, s->K, s->trans_a ? " At" : "", s->trans_b ? " Bt" : "");
    double gflop = 2.0 * s->M * s->N * s->K * 1e-9;
    emit(label, nn_dtype_name(dt), shape, gflop / t.median, gflop / t.slowest, gflop / t.fastest, "GFLOP/s", repeats);
  }
  backend_free(b, A), backend_free(b, Bm), backend_free(b, C);
  return rc;
}

// --- the full step and rollout inference -------------------------------------------------------------------

typedef struct {
  Backend *b;
  Policy *p;
  Optimizer *o;
  // backend memory: inputs, the loss's seeds (kept: dlogp0, dent0; used: dlogp, dent, scaled in place),
  // the value loss and its seed
  float *obs, *actions, *adv, *ret, *dlogp0, *dent0, *dlogp, *dent, *dval, *mse, *dloss, *uniforms;
  int B;
} StepArg;

// torch_reference.py's step: the loss -mean(logp adv) - 0.01 mean(entropy) + 0.5 mean((ret - v)^2),
// backward, clip, Adam. The policy terms' seeds do not depend on the forward (-adv / B and -0.01 / B):
// made once, copied in each step (the GradScaler scales them in place).
static void train_step(void *arg) {
  StepArg *s = arg;
  int B = s->B;
  policy_zero_grad(s->p);
  policy_evaluate(s->p, s->obs, s->actions, B);
  backend_mse_forward(s->b, s->mse, policy_values(s->p), s->ret, B);
  backend_copy(s->b, s->dlogp, s->dlogp0, (size_t)B * sizeof(float));
  backend_copy(s->b, s->dent, s->dent0, (size_t)B * sizeof(float));
  backend_mse_backward(s->b, s->dval, s->dloss, policy_values(s->p), s->ret, B);
  grad_scaler_scale_seed(&s->o->scaler, s->dlogp, (size_t)B);
  grad_scaler_scale_seed(&s->o->scaler, s->dent, (size_t)B);
  grad_scaler_scale_seed(&s->o->scaler, s->dval, (size_t)B);
  policy_backward(s->p, s->obs, s->actions, s->dlogp, s->dent, s->dval, B);
  optim_step(s->o, s->p);
}

// One rollout step's inference, waited for: its latency is the measurement.
static void rollout_step(void *arg) {
  StepArg *s = arg;
  policy_act(s->p, s->actions, s->obs, s->uniforms, s->B);
  backend_sync(s->b);
}

// The step's loss, read back (for the check only).
static float step_loss(const StepArg *s) {
  int B = s->B;
  float *host = CHECK_ALLOC((size_t)3 * B * sizeof(float), "bench check"), mse;
  backend_download(s->b, host, s->p->acts.logp, (size_t)B * sizeof(float));
  backend_download(s->b, host + B, s->p->acts.entropy, (size_t)B * sizeof(float));
  backend_download(s->b, host + 2 * B, s->adv, (size_t)B * sizeof(float));
  backend_download(s->b, &mse, s->mse, sizeof mse);
  float loss = 0.5f * mse;
  for (int i = 0; i < B; i++) loss += (-host[i] * host[2 * B + i] - 0.01f * host[B + i]) / (float)B;
  free(host);
  return loss;
}

static int bench_policy(Backend *b, const BenchOptions *opt, NnDtype dt) {
  PolicySpec spec = {.obs_dim = opt->obs,
                     .action_dim = opt->actions,
                     .head = POLICY_HEAD_CATEGORICAL,
                     .n_pi = opt->n_hidden,
                     .n_vf = opt->n_hidden,
                     .activation = NN_ACT_TANH,
                     .dtype = dt,
                     .max_batch = 1024,
                     .init = POLICY_INIT_ORTHO,
                     .seed = 1};
  memcpy(spec.pi_layers, opt->hidden, sizeof spec.pi_layers);
  memcpy(spec.vf_layers, opt->hidden, sizeof spec.vf_layers);
  Policy *p = policy_init(b, &spec);
  if (!p) return fprintf(stderr, "ppo-bench: %s\n", error_message()), -1;
  OptimSpec os = {.adam = {.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-5},
                  .max_grad_norm = 0.5f,
                  .scaler = grad_scaler_defaults(dt == NN_F16)};
  Optimizer *o = optim_init(b, &os);
  int B = 1024, O = opt->obs;
  StepArg s = {.b = b, .p = p, .o = o, .B = B};
  s.obs = backend_alloc(b, (size_t)B * O * 4);
  s.actions = backend_alloc(b, (size_t)B * 4);
  s.adv = backend_alloc(b, (size_t)B * 4), s.ret = backend_alloc(b, (size_t)B * 4);
  s.dlogp = backend_alloc(b, (size_t)B * 4), s.dent = backend_alloc(b, (size_t)B * 4);
  s.dlogp0 = backend_alloc(b, (size_t)B * 4), s.dent0 = backend_alloc(b, (size_t)B * 4);
  s.dval = backend_alloc(b, (size_t)B * 4), s.dloss = backend_alloc(b, 4), s.mse = backend_alloc(b, 4);
  s.uniforms = backend_alloc(b, (size_t)B * 4);
  float *host = CHECK_ALLOC((size_t)B * O * 4, "bench inputs");
  Rng rng;
  rng_seed(&rng, 3);
  for (int i = 0; i < B * O; i++) host[i] = (float)(rng_uniform(&rng) * 2 - 1);
  backend_upload(b, s.obs, host, (size_t)B * O * 4);
  for (int i = 0; i < B; i++) host[i] = (float)rng_below(&rng, (uint64_t)opt->actions);
  backend_upload(b, s.actions, host, (size_t)B * 4);
  for (int i = 0; i < B; i++) host[i] = (float)(rng_uniform(&rng) * 2 - 1);
  backend_upload(b, s.adv, host, (size_t)B * 4);
  backend_upload(b, s.ret, host, (size_t)B * 4);
  for (int i = 0; i < B; i++) host[i] = -host[i] / (float)B;  // d loss / d logp = -adv / B
  backend_upload(b, s.dlogp0, host, (size_t)B * 4);
  for (int i = 0; i < B; i++) host[i] = -0.01f / (float)B;
  backend_upload(b, s.dent0, host, (size_t)B * 4);
  float half = 0.5f;
  backend_upload(b, s.dloss, &half, 4);
  backend_uniform(b, s.uniforms, (size_t)B, 1, 0, 0);
  free(host);

  // check: one step changes the parameters, finitely, and is not skipped
  float first, after;
  backend_download(b, &first, p->params_memory, sizeof first);
  train_step(&s);
  float loss = step_loss(&s);
  backend_download(b, &after, p->params_memory, sizeof after);
  OptimScalars st;
  optim_read_state(o, &st);
  int rc = 0;
  if (!isfinite(loss) || st.found_inf != 0.0f || st.adam_step != 1 || after == first || !isfinite(st.grad_norm)) {
    fprintf(stderr, "ppo-bench: %s training step check failed (loss %g, found_inf %g, grad norm %g)\n",
            nn_dtype_name(dt), loss, st.found_inf, st.grad_norm);
    rc = -1;
  }
  if (rc == 0) {
    char shape[64];
    int R = opt->repeats;
    TimeStats t = time_stats(b, train_step, &s, R);
    snprintf(shape, sizeof shape, "B=1024");
    emit("train_step_fwd_bwd_adam", nn_dtype_name(dt), shape, B / t.median, B / t.slowest, B / t.fastest, "samples/s",
         R);
    s.B = 32;
    t = time_stats(b, rollout_step, &s, R);
    snprintf(shape, sizeof shape, "B=32");
    emit("rollout_inference", nn_dtype_name(dt), shape, 32 / t.median, 32 / t.slowest, 32 / t.fastest, "samples/s", R);
    emit("rollout_inference_latency", nn_dtype_name(dt), shape, t.median * 1e6, t.fastest * 1e6, t.slowest * 1e6, "us",
         R);
  }
  backend_free(b, s.obs), backend_free(b, s.actions), backend_free(b, s.adv), backend_free(b, s.ret);
  backend_free(b, s.dlogp), backend_free(b, s.dent), backend_free(b, s.dval), backend_free(b, s.dloss);
  backend_free(b, s.dlogp0), backend_free(b, s.dent0), backend_free(b, s.mse), backend_free(b, s.uniforms);
  optim_free(o);
  policy_free(p);
  return rc;
}

// --- main ---------------------------------------------------------------------------------------------------

static int usage_to(FILE *out, int status) {
  fprintf(out,
          "usage: ppo-bench backend [--backend cpu|cuda|auto] [--precision all|fp32|fp16|bf16[,...]] [--obs O]\n"
          "                         [--actions A] [--hidden 2048,1024,512] [--repeats R] [--json FILE]\n"
          "       ppo-bench envs [--envs N] [--steps S] [--repeats R] [--data FILE] [--json FILE]\n"
          "       ppo-bench train --config CONFIG.ini [--set section.key=value]... [--iterations N] [--json FILE]\n"
          "                       [--keep]\n"
          "       ppo-bench all [--quick] [--json OUT] [--only GROUP[,GROUP...]] [--repeats R]\n"
          "       ppo-bench --help | --version\n"
          "\n"
          "backend  every GEMM of an actor and a critic with --hidden layers (default the headline's\n"
          "         2048,1024,512) on --obs observations (default 24; configs/seed.ini's trading env gives 517)\n"
          "         at batch 32 and 1024, each checked against double precision first; then the update step\n"
          "         (samples/s), rollout inference and a square 2048^3 GEMM. Medians of --repeats (default 7).\n"
          "envs     env steps/s of CartPole and the trading env, discrete and continuous actions (--data,\n"
          "         default the source tree's data/XAUUSD_1H.h5) on --envs envs (default 32) for 1 and 2\n"
          "         threads, --steps vector steps (default 100000; the trading env runs a fifth of them).\n"
          "train    a whole ppo-train run of CONFIG (into a temporary directory; --keep keeps it): SPS with the\n"
          "         rollout / GAE / update split and peak RSS; --iterations N stops after N iterations.\n"
          "all      every benchmark above on every backend and precision plus scaling studies, into\n"
          "         bench/results/STAMP-all[-quick].json and .md (--json OUT names them) and gnuplot PNGs;\n"
          "         --only backend,envs,train,scaling,memory,sb3 picks groups; sb3 (full mode only) runs\n"
          "         Stable-Baselines3 from the Python named by $PPO_SB3_PYTHON.\n"
          "--json FILE: backend and envs append one JSON line per measurement (name, backend, precision, shape,\n"
          "value: the median, unit); train writes one JSON object of the run's figures to FILE, replacing it;\n"
          "all names its .json and .md files after OUT.\n"
          "Exit status: 0, 1 when a check or run fails, 2 on bad usage.\n");
  return status;
}

static int usage(void) { return usage_to(stderr, EXIT_BAD_INPUT); }

// "ppo-bench backend: <what was wrong>", then the usage; returns EXIT_BAD_INPUT.
static int backend_usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "ppo-bench backend: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n\n");
  return usage();
}

// "64,64": 1 to max whole numbers in 1 .. 65536, separated by single commas. The count, or -1 for
// anything else: an empty item ("64,,64", "64,", ",64"), a sign, a space, a number out of range.
static int parse_list(const char *text, int *out, int max) {
  int n = 0;
  for (const char *p = text;; p++) {
    long long v;
    size_t len = strcspn(p, ",");
    char item[16];
    if (len == 0 || len >= sizeof item || n == max) return -1;
    memcpy(item, p, len);
    item[len] = '\0';
    if (item[0] < '0' || item[0] > '9' || !cli_parse_integer(item, 1, 65536, &v)) return -1;
    out[n++] = (int)v;
    p += len;
    if (*p == '\0') return n;
  }
}

// "all", or 1 to 3 of fp32, fp16, bf16 separated by single commas (an empty item is refused).
static int parse_precisions(const char *text, BenchOptions *o) {
  o->n_precisions = 0;
  if (strcmp(text, "all") == 0) text = "fp32,bf16,fp16";
  for (const char *p = text;; p++) {
    size_t len = strcspn(p, ",");
    int dt = len != 4                     ? -1
             : strncmp(p, "fp32", 4) == 0 ? NN_F32
             : strncmp(p, "fp16", 4) == 0 ? NN_F16
             : strncmp(p, "bf16", 4) == 0 ? NN_BF16
                                          : -1;
    if (dt < 0 || o->n_precisions == 3) return -1;
    o->precisions[o->n_precisions++] = dt;
    p += len;
    if (*p == '\0') return 0;
  }
}

int main(int argc, char **argv) {
  cli_standard_streams();
  log_get_level();                // a bad PPO_LOG_LEVEL is warned of now, whatever the command prints
  for (int i = 1; i < argc; i++)  // ppo-bench --help, or after a subcommand
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return usage_to(stdout, EXIT_OK);
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("ppo-bench: %s\n", PPO_BUILD_INFO);
    return EXIT_OK;
  }
  // envs runs with OpenMP's defaults (bench/results/*-envs-cpu.txt was measured so).
  if (argc >= 2 && strcmp(argv[1], "envs") == 0) return bench_envs_main(argc - 1, argv + 1);
  // train runs as ppo-train runs (its small GEMMs stay on one thread; no spin tuning).
  if (argc >= 2 && strcmp(argv[1], "train") == 0) return bench_train_main(argc - 1, argv + 1);
  int all = argc >= 2 && strcmp(argv[1], "all") == 0;
  if (argc < 2) return usage();
  if (!all && strcmp(argv[1], "backend") != 0) {
    fprintf(stderr, "ppo-bench: unknown command '%s' (backend, envs, train and all are)\n\n", argv[1]);
    return usage();
  }
  // backend and all: GOMP_SPINCOUNT=10000 (see the top of this file); `all` says so in its JSON.
  if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) {  // libgomp reads them when it loads
    CHECK_ERRNO(setenv("GOMP_SPINCOUNT", "10000", 1) == 0, "setenv");
    execv("/proc/self/exe", argv);
    fprintf(stderr, "ppo-bench: could not re-execute with GOMP_SPINCOUNT=10000; going on without it\n");
  }
  return all ? bench_all_main(argc - 1, argv + 1) : bench_backend_main(argc - 1, argv + 1);
}

// argv[0] is "backend".
int bench_backend_main(int argc, char **argv) {
  BenchOptions opt = {
      .backend = "cpu", .obs = 24, .actions = 3, .n_hidden = 3, .hidden = {2048, 1024, 512}, .repeats = 7};
  parse_precisions("all", &opt);
  static const char *const options[] = {"--backend", "--precision", "--obs", "--actions",
                                        "--repeats", "--hidden",    "--json"};
  CliSeen seen = {.count = 0};
  for (int i = 1; i < argc; i++) {
    const char *a = NULL, *v;
    for (size_t k = 0; k < sizeof options / sizeof options[0] && !a; k++)
      if (cli_is_option(argv[i], options[k])) a = options[k];
    if (!a) return backend_usage_error(argv[i][0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", argv[i]);
    if (cli_repeated(&seen, a)) return backend_usage_error("%s is given twice; give it once", a);
    if (!(v = cli_option_value(argc, argv, &i, a))) return backend_usage_error("%s needs a value", a);
    if (strcmp(a, "--backend") == 0)
      opt.backend = v;
    else if (strcmp(a, "--precision") == 0) {
      if (parse_precisions(v, &opt))
        return cli_bad_value("ppo-bench backend", a, v,
                             "all, or one to three of fp32, fp16, bf16 separated by single commas, allowed");
    } else if (strcmp(a, "--obs") == 0 || strcmp(a, "--actions") == 0 || strcmp(a, "--repeats") == 0) {
      int *dst = strcmp(a, "--obs") == 0 ? &opt.obs : strcmp(a, "--actions") == 0 ? &opt.actions : &opt.repeats;
      long long n, lo = dst == &opt.actions ? 2 : 1;  // a categorical head needs two actions
      if (!cli_parse_integer(v, lo, 65536, &n))
        return cli_bad_value("ppo-bench backend", a, v,
                             lo == 2 ? "a whole number in 2 .. 65536 allowed" : "a whole number in 1 .. 65536 allowed");
      *dst = (int)n;
    } else if (strcmp(a, "--hidden") == 0) {
      if ((opt.n_hidden = parse_list(v, opt.hidden, NN_MAX_LINEAR - 1)) < 1)
        return cli_bad_value("ppo-bench backend", a, v,
                             "1 to 8 layer widths, each 1 .. 65536, separated by single commas, allowed");
    } else
      opt.json = v;
  }
  Backend *b = backend_open(opt.backend);
  if (!b) return fprintf(stderr, "ppo-bench: %s\n", error_message()), EXIT_BAD_INPUT;
  backend_label = backend_name(b);
  if (opt.json) {
    json_file = fopen(opt.json, "a");
    if (!json_file) {
      char why[128];  // the file is appended to: a JSON object per line
      snprintf(why, sizeof why, "cannot open it for appending: %s", strerror(errno));
      int status = cli_bad_value("ppo-bench backend", "--json", opt.json, why);
      backend_close(b);
      return status;
    }
  }
  double load[3] = {0};
  FILE *la = fopen("/proc/loadavg", "r");
  if (la) {
    if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
    fclose(la);
  }
  time_t now = time(NULL);
  char when[32];
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  printf(
      "ppo-bench backend  %s\n  %s\n  OpenMP threads %d (OMP_WAIT_POLICY=%s, GOMP_SPINCOUNT=%s), load average %.2f "
      "%.2f %.2f, median of %d runs\n",
      when, backend_describe(b), omp_get_max_threads(), getenv("OMP_WAIT_POLICY") ? getenv("OMP_WAIT_POLICY") : "unset",
      getenv("GOMP_SPINCOUNT") ? getenv("GOMP_SPINCOUNT") : "unset", load[0], load[1], load[2], opt.repeats);
  printf("  network: obs %d, actor and critic hidden", opt.obs);
  for (int l = 0; l < opt.n_hidden; l++) printf("%s%d", l ? "," : " ", opt.hidden[l]);
  printf(", %d actions (categorical)\n\n", opt.actions);

  int rc = 0;
  for (int pi = 0; pi < opt.n_precisions; pi++) {
    NnDtype dt = (NnDtype)opt.precisions[pi];
    GemmShape peak = {"peak_square", 0, 1, 2048, 2048, 2048};
    rc |= bench_gemm(b, dt, &peak, opt.repeats, "machine_best_gemm");
    int dims[NN_MAX_LINEAR + 1], n = opt.n_hidden + 1;
    dims[0] = opt.obs;
    for (int l = 0; l < opt.n_hidden; l++) dims[l + 1] = opt.hidden[l];
    dims[n] = opt.actions;
    const int batches[2] = {32, 1024};
    for (int bi = 0; bi < 2; bi++) {
      int B = batches[bi];
      for (int l = 0; l < n; l++) {
        int I = dims[l], O = dims[l + 1];
        char name[3][48];
        snprintf(name[0], sizeof name[0], "gemm_fwd_l%d_B%d", l + 1, B);
        snprintf(name[1], sizeof name[1], "gemm_dW_l%d_B%d", l + 1, B);
        snprintf(name[2], sizeof name[2], "gemm_dx_l%d_B%d", l + 1, B);
        GemmShape fwd = {name[0], 0, 1, B, O, I}, dw = {name[1], 1, 0, O, I, B}, dx = {name[2], 0, 0, B, I, O};
        rc |= bench_gemm(b, dt, &fwd, opt.repeats, fwd.name);
        if (B == 1024) {  // the rollout (B = 32) runs forward only
          rc |= bench_gemm(b, dt, &dw, opt.repeats, dw.name);
          if (l > 0) rc |= bench_gemm(b, dt, &dx, opt.repeats, dx.name);
        }
      }
    }
    rc |= bench_policy(b, &opt, dt);
    printf("\n");
  }
  if (json_file) {
    int lost = ferror(json_file);  // a failed flush dropped its bytes: only the error flag still knows
    if (fclose(json_file) != 0 || lost) {
      fprintf(stderr, "ppo-bench backend: write error on --json %s\n", opt.json);
      rc = -1;
    }
  }
  json_file = NULL;
  backend_close(b);
  return rc ? EXIT_RUNTIME : EXIT_OK;
}
