// test/test_cuda_ops.c: every op of backend_cuda_ops.cu and backend_cuda_rollout.cu against the CPU
// backend on the same inputs (STYLE rule 11, ggml's test-backend-ops).
//
// Each test opens "cpu" and "cuda" inside its body (Criterion forks per test) and skips, visibly,
// when the CUDA backend cannot open: no device, or a build without CUDA (STYLE rule 12). Inputs are
// fixed-seed random, sizes not multiples of any block size, plus the edge cases of each contract.
//
// Tolerances, and why (each assert restates its own):
//   - bit-exact: ops whose arithmetic is only +, -, *, /, sqrt through ops_math.h / rng.h (Adam,
//     unscale, GradScaler.update, clipping by equal norms, uniforms, GAE, dvalues, dentropy) and
//     the permutation (a stable sort by the same keys). This needs the CUDA files compiled with
//     --fmad=false; Adam also assumes CUDA's double pow rounds to the same float as glibc's.
//   - a few ulp: ops through expf / logf / cosf, which CUDA computes within 2 ulp of glibc.
//   - one float ulp: reductions in double (CPU: fixed chunks; CUDA: fixed tree) rounded to float.
// Legend: B minibatch, A actions, T horizon, N envs.
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "common/rng.h"
#include "nn/backend.h"

// --- the two backends and twin buffers ----------------------------------------------------------------------

enum { PAIR_MAX_BUFFERS = 48 };

typedef struct {
  Backend *cpu, *gpu;
  void *owned[2][PAIR_MAX_BUFFERS];
  int count;
} Pair;

// The CUDA backend first: without it the test skips before anything else happens.
static Pair pair_open(void) {
  Pair p;
  memset(&p, 0, sizeof p);
  p.gpu = backend_open("cuda");
  if (!p.gpu) cr_skip_test("%s", error_message());
  p.cpu = backend_open("cpu");
  cr_assert(p.cpu, "backend_open(cpu): %s", error_message());
  return p;
}

static void pair_close(Pair *p) {
  for (int i = 0; i < p->count; i++) {
    backend_free(p->cpu, p->owned[0][i]);
    backend_free(p->gpu, p->owned[1][i]);
  }
  backend_close(p->cpu);
  backend_close(p->gpu);
}

// A buffer of `bytes` in each backend, holding host's bytes (zeroed when host is NULL).
typedef struct {
  void *cpu, *gpu;
  size_t bytes;
} Twin;

static Twin twin(Pair *p, const void *host, size_t bytes) {
  cr_assert(p->count < PAIR_MAX_BUFFERS, "test uses too many buffers");
  Twin t = {backend_alloc(p->cpu, bytes ? bytes : 4), backend_alloc(p->gpu, bytes ? bytes : 4), bytes};
  p->owned[0][p->count] = t.cpu;
  p->owned[1][p->count] = t.gpu;
  p->count++;
  if (host && bytes) {
    backend_upload(p->cpu, t.cpu, host, bytes);
    backend_upload(p->gpu, t.gpu, host, bytes);
  }
  return t;
}

static Twin twin_floats(Pair *p, const float *host, size_t n) { return twin(p, host, n * sizeof(float)); }

// Both backends' contents, downloaded into fresh host arrays (the caller frees them).
typedef struct {
  void *cpu, *gpu;
} Fetched;

static Fetched fetch(Pair *p, Twin t) {
  Fetched f = {malloc(t.bytes ? t.bytes : 1), malloc(t.bytes ? t.bytes : 1)};
  backend_download(p->cpu, f.cpu, t.cpu, t.bytes);
  backend_download(p->gpu, f.gpu, t.gpu, t.bytes);
  return f;
}

static void fetched_free(Fetched f) {
  free(f.cpu);
  free(f.gpu);
}

static void fill(float *x, size_t n, Rng *rng, double lo, double hi) {
  for (size_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * rng_uniform(rng));
}

static float *random_floats(size_t n, Rng *rng, double lo, double hi) {
  float *x = malloc((n ? n : 1) * sizeof(float));
  fill(x, n, rng, lo, hi);
  return x;
}

// --- comparisons: each names the first mismatching index ----------------------------------------------------

static uint32_t bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static void assert_same_bytes(Pair *p, Twin t, const char *what) {
  Fetched f = fetch(p, t);
  const unsigned char *c = f.cpu, *g = f.gpu;
  for (size_t i = 0; i < t.bytes; i++)
    cr_assert_eq(c[i], g[i], "%s: byte %zu (element %zu of 4-byte ones) differs: cpu %02x, cuda %02x", what, i, i / 4,
                 c[i], g[i]);
  fetched_free(f);
}

// any_nan: a NaN on both sides counts as the same whatever its bits. Arithmetic on a NaN keeps the
// operand's payload on x86 (0x7fc00000 stays) but gives the canonical NaN on NVIDIA GPUs (0x7fffffff);
// the seam promises nothing about NaN bits. Ops that only move bits (casts) keep the strict check.
static void assert_same_floats_nan(Pair *p, Twin t, int any_nan, const char *what) {
  Fetched f = fetch(p, t);
  const float *c = f.cpu, *g = f.gpu;
  for (size_t i = 0; i < t.bytes / sizeof(float); i++) {
    if (any_nan && isnan(c[i]) && isnan(g[i])) continue;
    cr_assert_eq(bits(c[i]), bits(g[i]), "%s[%zu]: cpu %.9g (%08x), cuda %.9g (%08x)", what, i, c[i], bits(c[i]), g[i],
                 bits(g[i]));
  }
  fetched_free(f);
}

static void assert_same_floats(Pair *p, Twin t, const char *what) { assert_same_floats_nan(p, t, 0, what); }

// |cuda - cpu| <= abs_tol + rel * |cpu|; NaN must meet NaN.
static void assert_close_floats(Pair *p, Twin t, double rel, double abs_tol, const char *what) {
  Fetched f = fetch(p, t);
  const float *c = f.cpu, *g = f.gpu;
  for (size_t i = 0; i < t.bytes / sizeof(float); i++) {
    if (isnan(c[i]) || isnan(g[i])) {
      cr_assert(isnan(c[i]) && isnan(g[i]), "%s[%zu]: cpu %.9g, cuda %.9g", what, i, c[i], g[i]);
      continue;
    }
    double tol = abs_tol + rel * fabs((double)c[i]);
    cr_assert(fabs((double)g[i] - (double)c[i]) <= tol, "%s[%zu]: cpu %.9g, cuda %.9g (tolerance %.3g)", what, i, c[i],
              g[i], tol);
  }
  fetched_free(f);
}

static float download_float(Backend *b, const float *x) {
  float v;
  backend_download(b, &v, x, sizeof v);
  return v;
}

// A float ulp relative: the gap between a double sum rounded to float and a neighbour.
#define FLOAT_ULP 1.1920928955078125e-7

// --- categorical ---------------------------------------------------------------------------------------------

// Rows of A logits in [-3, 3], integer actions, upstream gradients in [-1, 1]. edges: some rows get
// a -inf logit (a class of probability 0: entropy and gradient terms guarded to 0) and a few a NaN
// logit (NaN outputs on both sides), the shared formulas' other branches.
static void categorical_case(int B, int A, uint64_t seed, int edges) {
  Pair p = pair_open();
  Rng rng;
  rng_seed(&rng, seed);
  float *logits = random_floats((size_t)B * A, &rng, -3, 3), *dlogp = random_floats(B, &rng, -1, 1);
  float *dentropy = random_floats(B, &rng, -1, 1), *actions = malloc((size_t)B * sizeof(float));
  for (int b = 0; b < B; b++) actions[b] = (float)rng_below(&rng, (uint64_t)A);
  for (int b = 0; edges && A > 1 && b < B; b++) {
    int other = ((int)actions[b] + 1) % A;  // never the action's own logit (its logp would be -inf)
    if (b % 5 == 1) logits[(size_t)b * A + other] = -INFINITY;
    if (b % 97 == 3) logits[(size_t)b * A + other] = NAN;
  }
  Twin z = twin_floats(&p, logits, (size_t)B * A), a = twin_floats(&p, actions, B);
  Twin dl = twin_floats(&p, dlogp, B), de = twin_floats(&p, dentropy, B);
  Twin logp = twin_floats(&p, NULL, B), ent = twin_floats(&p, NULL, B), dz = twin_floats(&p, NULL, (size_t)B * A);
  for (int k = 0; k < 2; k++) {
    Backend *be = k ? p.gpu : p.cpu;
    float *lp = k ? logp.gpu : logp.cpu, *en = k ? ent.gpu : ent.cpu, *d = k ? dz.gpu : dz.cpu;
    const float *zz = k ? z.gpu : z.cpu, *aa = k ? a.gpu : a.cpu;
    backend_categorical_forward(be, lp, en, zz, aa, B, A);
    backend_categorical_backward(be, d, k ? dl.gpu : dl.cpu, k ? de.gpu : de.cpu, zz, aa, B, A);
  }
  // expf / logf within 2 ulp of glibc's on O(1) values: a few ulp of O(1), 2e-6 absolute (logp
  // = z_a - lse cancels, so relative alone would be wrong).
  assert_close_floats(&p, logp, 2e-6, 2e-6, "categorical logp");
  assert_close_floats(&p, ent, 2e-6, 2e-6, "categorical entropy");
  assert_close_floats(&p, dz, 2e-6, 2e-6, "categorical dlogits");
  // without dentropy (a NULL optional) and without entropy
  backend_categorical_forward(p.cpu, logp.cpu, NULL, z.cpu, a.cpu, B, A);
  backend_categorical_forward(p.gpu, logp.gpu, NULL, z.gpu, a.gpu, B, A);
  backend_categorical_backward(p.cpu, dz.cpu, dl.cpu, NULL, z.cpu, a.cpu, B, A);
  backend_categorical_backward(p.gpu, dz.gpu, dl.gpu, NULL, z.gpu, a.gpu, B, A);
  assert_close_floats(&p, logp, 2e-6, 2e-6, "categorical logp (no entropy)");
  assert_close_floats(&p, dz, 2e-6, 2e-6, "categorical dlogits (no dentropy)");
  free(logits), free(dlogp), free(dentropy), free(actions);
  pair_close(&p);
}

Test(cuda_categorical, forward_backward_b1000_a7) { categorical_case(1000, 7, 11, 0); }
Test(cuda_categorical, forward_backward_b1_a2) { categorical_case(1, 2, 12, 0); }
Test(cuda_categorical, forward_backward_b4097_a1) { categorical_case(4097, 1, 13, 0); }
Test(cuda_categorical, infinite_and_nan_logits_b1000_a7) { categorical_case(1000, 7, 14, 1); }

// The CPU exits on a non-integer action; the device cannot, and marks the row NaN instead.
// A bad action (not an integer in [0, A)) exits at the next download, as the CPU exits in the op.
// In a child process: CUDA must not be initialised before a fork, and Criterion's exit-code check
// cannot tell a skip from a pass. The child exits 77 when there is no device.
Test(cuda_categorical, an_invalid_action_is_reported_at_the_next_download) {
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    Backend *gpu = backend_open("cuda");
    if (!gpu) _exit(77);
    float logits[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, actions[2] = {1.5f, 2.0f}, out[2];
    float *z = backend_alloc(gpu, sizeof logits), *a = backend_alloc(gpu, sizeof actions),
          *lp = backend_alloc(gpu, sizeof out);
    backend_upload(gpu, z, logits, sizeof logits);
    backend_upload(gpu, a, actions, sizeof actions);
    backend_categorical_forward(gpu, lp, NULL, z, a, 2, 3);
    backend_download(gpu, out, lp, sizeof out);  // exits 1 here, naming the fault
    _exit(0);
  }
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  cr_assert(WIFEXITED(status), "the child did not exit: status %d", status);
  if (WEXITSTATUS(status) == 77) cr_skip_test("no CUDA device");
  cr_assert_eq(WEXITSTATUS(status), 1, "action 1.5: exit status %d, expected 1 at the download", WEXITSTATUS(status));
}

// The host's CDF of row z in double: the distance from u to the nearest cumulative boundary.
static double cdf_margin(const float *z, int A, float u) {
  double m = z[0], s = 0.0, cum = 0.0, best = INFINITY;
  for (int j = 1; j < A; j++) m = z[j] > m ? z[j] : m;
  for (int j = 0; j < A; j++) s += exp((double)z[j] - m);
  for (int j = 0; j < A; j++) {
    cum += exp((double)z[j] - m) / s;
    best = fmin(best, fabs(cum - (double)u));
  }
  return best;
}

Test(cuda_categorical, sample_b1000_a7) {
  enum { B = 1000, A = 7 };
  Pair p = pair_open();
  Rng rng;
  rng_seed(&rng, 21);
  float *logits = random_floats((size_t)B * A, &rng, -3, 3), uniforms[B];
  rng_fill_uniform(uniforms, B, 5, 9, 0);
  Twin z = twin_floats(&p, logits, (size_t)B * A), u = twin_floats(&p, uniforms, B);
  Twin act = twin_floats(&p, NULL, B), lp = twin_floats(&p, NULL, B);
  backend_categorical_sample(p.cpu, act.cpu, lp.cpu, z.cpu, u.cpu, B, A);
  backend_categorical_sample(p.gpu, act.gpu, lp.gpu, z.gpu, u.gpu, B, A);
  Fetched a = fetch(&p, act), l = fetch(&p, lp);
  for (int b = 0; b < B; b++) {
    float ca = ((float *)a.cpu)[b], ga = ((float *)a.gpu)[b];
    // The same action unless u lies within the CDFs' few-ulp disagreement (1e-5) of a boundary.
    if (ca != ga) {
      double margin = cdf_margin(logits + (size_t)b * A, A, uniforms[b]);
      cr_assert(margin < 1e-5, "row %d: cpu action %g, cuda %g, u %.9g is %.3g from every CDF boundary", b, ca, ga,
                uniforms[b], margin);
      continue;
    }
    float cl = ((float *)l.cpu)[b], gl = ((float *)l.gpu)[b];
    cr_assert(fabsf(cl - gl) <= 2e-6f + 2e-6f * fabsf(cl), "row %d: logp cpu %.9g, cuda %.9g", b, cl, gl);
  }
  fetched_free(a), fetched_free(l);
  free(logits);
  pair_close(&p);
}

// --- diagonal Gaussian -------------------------------------------------------------------------------------

// dlog_std: both sum the terms in double (CUDA in a lane tree, the CPU in b order), so CUDA is
// compared with the exact sum of the CPU's terms (the shared formula, added here in double) on top of `before`.
// CUDA's expf (inv_std) is within 2 ulp of glibc's, which moves each term by a few ulp of its
// parts |dlogp| (z^2 + 1) + |dentropy|: 8 ulp of their sum, plus the two final roundings.
static void assert_dlog_std(const float *got, const float *before, const float *actions, const float *mean,
                            const float *log_std, const float *dlogp, const float *dentropy, int B, int A) {
  for (int j = 0; j < A; j++) {
    float inv_std = expf(-log_std[j]);
    double sum = 0.0, parts = 0.0;
    for (int b = 0; b < B; b++) {
      size_t i = (size_t)b * A + j;
      float dm, de = dentropy ? dentropy[b] : 0.0f;
      sum += nn_gaussian_backward_element(actions[i], mean[i], inv_std, dlogp[b], de, &dm);
      double z = ((double)actions[i] - mean[i]) * inv_std;
      parts += fabs(dlogp[b]) * (z * z + 1.0) + fabs(de);
    }
    double want = (double)before[j] + sum, tol = 8 * FLOAT_ULP * parts + FLOAT_ULP * (fabs(sum) + fabs(want));
    cr_assert(fabs(got[j] - want) <= tol, "dlog_std[%d]: cuda %.9g, exact sum of terms %.9g (tolerance %.3g)", j,
              got[j], want, tol);
  }
}

static void gaussian_case(int B, int A, uint64_t seed) {
  Pair p = pair_open();
  Rng rng;
  rng_seed(&rng, seed);
  float *mean = random_floats((size_t)B * A, &rng, -1, 1), *log_std = random_floats(A, &rng, -1, 0.5);
  float *dlogp = random_floats(B, &rng, -1, 1), *dentropy = random_floats(B, &rng, -1, 1);
  float *uniforms = malloc(2 * (size_t)B * A * sizeof(float)), *init = malloc(A * sizeof(float));
  rng_fill_uniform(uniforms, 2 * (size_t)B * A, 77, 1, 3);
  for (int j = 0; j < A; j++) init[j] = 0.25f;  // dlog_std accumulates into what is there
  Twin mu = twin_floats(&p, mean, (size_t)B * A), ls = twin_floats(&p, log_std, A);
  Twin u = twin_floats(&p, uniforms, 2 * (size_t)B * A), act = twin_floats(&p, NULL, (size_t)B * A);
  Twin lp = twin_floats(&p, NULL, B), ent = twin_floats(&p, NULL, B), dl = twin_floats(&p, dlogp, B);
  Twin de = twin_floats(&p, dentropy, B), dmu = twin_floats(&p, NULL, (size_t)B * A), dls = twin_floats(&p, init, A);

  // Sampling from the CPU's actions on both sides, so forward and backward see the same inputs.
  backend_gaussian_sample(p.cpu, act.cpu, lp.cpu, mu.cpu, ls.cpu, u.cpu, B, A);
  backend_gaussian_sample(p.gpu, act.gpu, lp.gpu, mu.gpu, ls.gpu, u.gpu, B, A);
  // Box-Muller through logf, sqrtf, cosf, expf (a few ulp each) on O(1) values.
  assert_close_floats(&p, act, 4e-6, 4e-6, "gaussian sample actions");
  assert_close_floats(&p, lp, 4e-6, 4e-6 * A, "gaussian sample logp");
  float *actions = malloc((size_t)B * A * sizeof(float));
  backend_download(p.cpu, actions, act.cpu, (size_t)B * A * sizeof(float));
  backend_upload(p.gpu, act.gpu, actions, (size_t)B * A * sizeof(float));

  backend_gaussian_forward(p.cpu, lp.cpu, ent.cpu, mu.cpu, ls.cpu, act.cpu, B, A);
  backend_gaussian_forward(p.gpu, lp.gpu, ent.gpu, mu.gpu, ls.gpu, act.gpu, B, A);
  // A sum of A terms of O(1), each through expf: a few ulp of each term.
  assert_close_floats(&p, lp, 2e-6, 2e-6 * A, "gaussian logp");
  assert_close_floats(&p, ent, 2e-6, 2e-6 * A, "gaussian entropy");

  backend_gaussian_backward(p.cpu, dmu.cpu, dls.cpu, dl.cpu, de.cpu, mu.cpu, ls.cpu, act.cpu, B, A);
  backend_gaussian_backward(p.gpu, dmu.gpu, dls.gpu, dl.gpu, de.gpu, mu.gpu, ls.gpu, act.gpu, B, A);
  // dmean: one expf (inv_std) and products: a few ulp.
  assert_close_floats(&p, dmu, 4e-6, 1e-6, "gaussian dmean");
  float *got = malloc(A * sizeof(float)), *before = malloc(A * sizeof(float));
  backend_download(p.gpu, got, dls.gpu, A * sizeof(float));
  assert_dlog_std(got, init, actions, mean, log_std, dlogp, dentropy, B, A);
  // dentropy NULL: the entropy term drops out on both sides.
  memcpy(before, got, A * sizeof(float));
  backend_gaussian_backward(p.cpu, dmu.cpu, dls.cpu, dl.cpu, NULL, mu.cpu, ls.cpu, act.cpu, B, A);
  backend_gaussian_backward(p.gpu, dmu.gpu, dls.gpu, dl.gpu, NULL, mu.gpu, ls.gpu, act.gpu, B, A);
  assert_close_floats(&p, dmu, 4e-6, 1e-6, "gaussian dmean (no dentropy)");
  backend_download(p.gpu, got, dls.gpu, A * sizeof(float));
  assert_dlog_std(got, before, actions, mean, log_std, dlogp, NULL, B, A);
  free(mean), free(log_std), free(dlogp), free(dentropy), free(uniforms), free(init), free(actions), free(got),
      free(before);
  pair_close(&p);
}

Test(cuda_gaussian, sample_forward_backward_b1000_a3) { gaussian_case(1000, 3, 31); }
Test(cuda_gaussian, sample_forward_backward_b1_a1) { gaussian_case(1, 1, 32); }
Test(cuda_gaussian, sample_forward_backward_b4099_a6) { gaussian_case(4099, 6, 33); }

// --- norms and clipping -----------------------------------------------------------------------------------------

// One ulp: both sums are double, in different fixed orders (~1e-16 apart), rounded to float.
static void assert_norms_agree(float cpu, float gpu, const char *what) {
  cr_assert(fabs((double)gpu - (double)cpu) <= FLOAT_ULP * fabs((double)cpu), "%s: cpu %.9g, cuda %.9g", what, cpu,
            gpu);
}

static void norm_case(size_t n, double amplitude, float max_norm, uint64_t seed) {
  Pair p = pair_open();
  Rng rng;
  rng_seed(&rng, seed);
  float *x = random_floats(n, &rng, -amplitude, amplitude);
  Twin g = twin_floats(&p, x, n), total = twin_floats(&p, NULL, 1), coef = twin_floats(&p, NULL, 1);

  backend_global_norm(p.cpu, total.cpu, g.cpu, n);
  backend_global_norm(p.gpu, total.gpu, g.gpu, n);
  float cpu_norm = download_float(p.cpu, total.cpu), gpu_norm = download_float(p.gpu, total.gpu);
  assert_norms_agree(cpu_norm, gpu_norm, "global_norm");

  backend_clip_coef(p.cpu, total.cpu, coef.cpu, g.cpu, n, max_norm);
  backend_clip_coef(p.gpu, total.gpu, coef.gpu, g.gpu, n, max_norm);
  int same_norm = bits(download_float(p.cpu, total.cpu)) == bits(download_float(p.gpu, total.gpu));
  // coef = min(1, max_norm / (norm + 1e-6)) in float: the CPU's bits from the same norm.
  if (same_norm)
    assert_same_floats(&p, coef, "clip_coef coef");
  else
    assert_close_floats(&p, coef, 2 * FLOAT_ULP, 0.0, "clip_coef coef (norms an ulp apart)");

  backend_clip_grad_norm(p.cpu, total.cpu, g.cpu, n, max_norm);
  backend_clip_grad_norm(p.gpu, total.gpu, g.gpu, n, max_norm);
  if (same_norm)
    assert_same_floats(&p, g, "clip_grad_norm x");
  else
    assert_close_floats(&p, g, 2 * FLOAT_ULP, 0.0, "clip_grad_norm x (norms an ulp apart)");
  // total NULL: the CUDA backend keeps the norm in its own scratch. x has changed: compare its
  // norms again first (an ulp apart from each other, then x an ulp or two apart from the first clip).
  backend_global_norm(p.cpu, total.cpu, g.cpu, n);
  backend_global_norm(p.gpu, total.gpu, g.gpu, n);
  same_norm = same_norm && bits(download_float(p.cpu, total.cpu)) == bits(download_float(p.gpu, total.gpu));
  backend_clip_grad_norm(p.cpu, NULL, g.cpu, n, max_norm);
  backend_clip_grad_norm(p.gpu, NULL, g.gpu, n, max_norm);
  if (same_norm)
    assert_same_floats(&p, g, "clip_grad_norm x (total NULL)");
  else
    assert_close_floats(&p, g, 4 * FLOAT_ULP, 0.0, "clip_grad_norm x (total NULL)");
  free(x);
  pair_close(&p);
}

Test(cuda_norm, clips_1000003_elements) { norm_case(1000003, 1e-2, 0.5f, 41); }       // norm ~5.8: clipped
Test(cuda_norm, leaves_small_gradients_alone) { norm_case(70001, 1e-3, 10.0f, 42); }  // coef 1: x untouched
Test(cuda_norm, one_element) { norm_case(1, 3.0, 0.5f, 43); }

Test(cuda_norm, empty_is_zero) {
  Pair p = pair_open();
  Twin total = twin_floats(&p, NULL, 1), coef = twin_floats(&p, NULL, 1);
  float one = 1.0f;
  backend_upload(p.gpu, total.gpu, &one, sizeof one);
  backend_clip_coef(p.gpu, total.gpu, coef.gpu, NULL, 0, 0.5f);
  cr_assert_eq(download_float(p.gpu, total.gpu), 0.0f);
  cr_assert_eq(download_float(p.gpu, coef.gpu), 1.0f);  // 0.5 / 1e-6 clamps to 1
  pair_close(&p);
}

// --- loss scaling ------------------------------------------------------------------------------------------

// x * (float)(1 / (double)scale) is one float multiply on both sides: bit-exact. found_inf is
// compared exactly: 0 stays 0 without inf/NaN, becomes 1 with either, and 1 is never cleared.
// n_fp16: the leading elements that overflow at 65520 (nn_grad_overflowed).
static void unscale_case(size_t n, size_t n_fp16, float scale, size_t bad_at, float bad, float found_before) {
  Pair p = pair_open();
  Rng rng;
  rng_seed(&rng, 51);
  float *x = random_floats(n, &rng, -1e4, 1e4);
  if (bad_at < n) x[bad_at] = bad;
  Twin g = twin_floats(&p, x, n), s = twin_floats(&p, &scale, 1), fi = twin_floats(&p, &found_before, 1);
  backend_unscale_check(p.cpu, g.cpu, n, n_fp16, s.cpu, fi.cpu);
  backend_unscale_check(p.gpu, g.gpu, n, n_fp16, s.gpu, fi.gpu);
  assert_same_floats_nan(&p, g, 1, "unscaled x");  // NaN * inv: the hardware's NaN
  assert_same_floats(&p, fi, "found_inf");
  int overflow = bad_at < n && !(fabsf(bad) < (bad_at < n_fp16 ? 65520.0f : INFINITY));
  float want = (overflow || found_before != 0.0f) ? 1.0f : 0.0f;
  cr_assert_eq(download_float(p.gpu, fi.gpu), want, "found_inf: expected %g", want);
  free(x);
  pair_close(&p);
}

Test(cuda_unscale, finite_leaves_found_inf_clear) { unscale_case(100003, 100000, 65536.0f, SIZE_MAX, 0.0f, 0.0f); }
Test(cuda_unscale, inf_sets_found_inf) { unscale_case(100003, 0, 1024.0f, 99999, INFINITY, 0.0f); }
Test(cuda_unscale, nan_sets_found_inf) { unscale_case(100003, 0, 3.0f, 0, NAN, 0.0f); }
Test(cuda_unscale, found_inf_is_never_cleared) { unscale_case(257, 257, 0.7f, SIZE_MAX, 0.0f, 1.0f); }
Test(cuda_unscale, an_fp16_gradient_overflows_at_65520) { unscale_case(100003, 50000, 2.0f, 49999, 65520.0f, 0.0f); }
Test(cuda_unscale, log_std_gradients_overflow_only_at_inf) { unscale_case(100003, 50000, 2.0f, 50000, 1e30f, 0.0f); }

// The fused unscale + clip coefficient: grads and found-inf bit-exact (the same float multiply), the
// norm one float ulp (double sums in two orders), the coefficient one ulp relative to the norm's.
// bad at bad_at (none past n); the first n / 2 elements overflow at 65520 too (n_fp16).
static void unscale_clip_coef_case(size_t n, float scale, size_t bad_at, float bad, float max_norm) {
  Pair p = pair_open();
  Rng rng;
  rng_seed(&rng, 53);
  float *x = random_floats(n, &rng, -1e4, 1e4), zero = 0.0f;
  if (bad_at < n) x[bad_at] = bad;
  Twin g = twin_floats(&p, x, n), s = twin_floats(&p, &scale, 1), fi = twin_floats(&p, &zero, 1);
  Twin total = twin_floats(&p, NULL, 1), coef = twin_floats(&p, NULL, 1);
  backend_unscale_clip_coef(p.cpu, g.cpu, n, n / 2, s.cpu, fi.cpu, total.cpu, coef.cpu, max_norm);
  backend_unscale_clip_coef(p.gpu, g.gpu, n, n / 2, s.gpu, fi.gpu, total.gpu, coef.gpu, max_norm);
  assert_same_floats(&p, g, "unscaled x");
  assert_same_floats(&p, fi, "found_inf");
  int overflow = bad_at < n && !(fabsf(bad) < (bad_at < n / 2 ? 65520.0f : INFINITY));
  cr_assert_eq(download_float(p.gpu, fi.gpu), overflow ? 1.0f : 0.0f, "found_inf");
  if (!overflow) {
    float cn = download_float(p.cpu, total.cpu), gn = download_float(p.gpu, total.gpu);
    float cc = download_float(p.cpu, coef.cpu), gc = download_float(p.gpu, coef.gpu);
    cr_assert(fabs((double)gn - (double)cn) <= FLOAT_ULP * fabs((double)cn), "norm: cpu %.9g, cuda %.9g", cn, gn);
    cr_assert(fabs((double)gc - (double)cc) <= 2 * FLOAT_ULP * fabs((double)cc), "coef: cpu %.9g, cuda %.9g", cc, gc);
  }
  free(x);
  pair_close(&p);
}

Test(cuda_unscale, fused_with_the_clip_coefficient) {
  unscale_clip_coef_case(1000003, 65536.0f, SIZE_MAX, 0.0f, 0.5f);  // clipped
  unscale_clip_coef_case(1000003, 65536.0f, SIZE_MAX, 0.0f, 1e9f);  // coefficient 1
  unscale_clip_coef_case(4097, 1024.0f, 17, INFINITY, 0.5f);        // an inf: found_inf set, grads still scaled
  unscale_clip_coef_case(1000003, 2.0f, 499999, 65520.0f, 0.5f);    // an fp16 overflow (before n / 2)
  unscale_clip_coef_case(1000003, 2.0f, 500001, 65520.0f, 0.5f);    // past n / 2: none
}

// GradScaler.update: pure float/int logic on both sides, compared exactly after every call.
Test(cuda_grad_scaler, update_sequence_matches) {
  Pair p = pair_open();
  float scale = 65536.0f;
  int32_t tracker = 0;
  Twin s = twin_floats(&p, &scale, 1), tr = twin(&p, &tracker, sizeof tracker), fi = twin_floats(&p, NULL, 1);
  static const float infs[] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0};
  for (size_t k = 0; k < sizeof infs / sizeof *infs; k++) {
    backend_upload(p.cpu, fi.cpu, &infs[k], sizeof(float));
    backend_upload(p.gpu, fi.gpu, &infs[k], sizeof(float));
    backend_grad_scaler_update(p.cpu, s.cpu, tr.cpu, fi.cpu, 2.0f, 0.5f, 3);
    backend_grad_scaler_update(p.gpu, s.gpu, tr.gpu, fi.gpu, 2.0f, 0.5f, 3);
    assert_same_floats(&p, s, "scale");
    assert_same_bytes(&p, tr, "growth tracker");
  }
  // growth that would overflow keeps the scale and resets the tracker
  scale = 3e38f;
  tracker = 2;
  float zero = 0.0f;
  Twin s2 = twin_floats(&p, &scale, 1), tr2 = twin(&p, &tracker, sizeof tracker), f2 = twin_floats(&p, &zero, 1);
  backend_grad_scaler_update(p.cpu, s2.cpu, tr2.cpu, f2.cpu, 2.0f, 0.5f, 3);
  backend_grad_scaler_update(p.gpu, s2.gpu, tr2.gpu, f2.gpu, 2.0f, 0.5f, 3);
  assert_same_floats(&p, s2, "scale at overflow");
  assert_same_bytes(&p, tr2, "tracker at overflow");
  cr_assert_eq(download_float(p.gpu, s2.gpu), 3e38f);
  pair_close(&p);
}

// --- Adam ------------------------------------------------------------------------------------------------

// Five steps, the third skipped by found_inf, alternating a grad_scale (clip coefficient): params,
// m, v, the step count and the low-precision copy bit-exact (nn_adam_element is +, *, /, sqrtf;
// the per-step scalars come from double pow, assumed to round to the same floats as glibc's).
static void adam_case(size_t n, NnDtype lp_dtype, int with_lp, double beta1) {
  Pair p = pair_open();
  Rng rng;
  rng_seed(&rng, 61);
  float *params = random_floats(n, &rng, -1, 1), *grads = random_floats(n, &rng, -1e-2, 1e-2);
  int32_t step = 7;  // a resumed run: the bias corrections use 8, 9, ...
  float coef = 0.37f, zero = 0.0f;
  Twin pr = twin_floats(&p, params, n), gr = twin_floats(&p, grads, n), m = twin_floats(&p, NULL, n);
  Twin v = twin_floats(&p, NULL, n), st = twin(&p, &step, sizeof step), fi = twin_floats(&p, &zero, 1);
  Twin gs = twin_floats(&p, &coef, 1), lp = twin(&p, NULL, n * nn_dtype_size(lp_dtype));
  AdamHyper hyper = {3e-4, beta1, 0.999, 1e-5};
  const double schedule = 0.6180339887;  // a linear schedule's factor, read from memory
  Twin lrs = twin(&p, &schedule, sizeof schedule);
  for (int k = 0; k < 5; k++) {
    float inf = k == 2 ? 1.0f : 0.0f;
    backend_upload(p.cpu, fi.cpu, &inf, sizeof inf);
    backend_upload(p.gpu, fi.gpu, &inf, sizeof inf);
    for (int side = 0; side < 2; side++) {
      Backend *be = side ? p.gpu : p.cpu;
      backend_adam_step(be, side ? pr.gpu : pr.cpu, side ? gr.gpu : gr.cpu, side ? m.gpu : m.cpu, side ? v.gpu : v.cpu,
                        n, hyper, k >= 3 ? (side ? lrs.gpu : lrs.cpu) : NULL, side ? st.gpu : st.cpu,
                        side ? fi.gpu : fi.cpu, k % 2 ? (side ? gs.gpu : gs.cpu) : NULL,
                        with_lp ? (side ? lp.gpu : lp.cpu) : NULL, lp_dtype);
    }
    assert_same_floats(&p, pr, "adam params");
    assert_same_floats(&p, m, "adam m");
    assert_same_floats(&p, v, "adam v");
    assert_same_bytes(&p, st, "adam step");
    if (with_lp) assert_same_bytes(&p, lp, "adam params_lp");
  }
  int32_t final_step;
  backend_download(p.gpu, &final_step, st.gpu, sizeof final_step);
  cr_assert_eq(final_step, 11, "7 + 4 steps taken, 1 skipped: got %d", final_step);
  free(params), free(grads);
  pair_close(&p);
}

Test(cuda_adam, fp32_without_copy) { adam_case(300007, NN_F32, 0, 0.9); }
Test(cuda_adam, bf16_copy) { adam_case(300007, NN_BF16, 1, 0.9); }
Test(cuda_adam, fp16_copy) { adam_case(4099, NN_F16, 1, 0.9); }
Test(cuda_adam, fp32_copy) { adam_case(33, NN_F32, 1, 0.9); }
// torch's lerp takes its other branch for a weight (1 - beta1) >= 0.5 (nn_adam_element)
Test(cuda_adam, beta1_below_one_half) { adam_case(4099, NN_F32, 1, 0.3); }

// --- uniforms ---------------------------------------------------------------------------------------------------

// Philox words and their mapping are integer / exact float work: bit-exact, for streams that start
// and end inside a 4-word block.
Test(cuda_uniform, matches_the_cpu_stream) {
  Pair p = pair_open();
  static const uint64_t cases[][4] = {{4099, 0, 0, 0},
                                      {4099, 42, 7, 3},
                                      {1, 5, 1, 2},
                                      {2, 5, 1, 3},
                                      {100001, 0x123456789abcdefull, 1ull << 40, (1ull << 33) + 1}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    size_t n = (size_t)cases[c][0];
    Twin out = twin_floats(&p, NULL, n);
    backend_uniform(p.cpu, out.cpu, n, cases[c][1], cases[c][2], cases[c][3]);
    backend_uniform(p.gpu, out.gpu, n, cases[c][1], cases[c][2], cases[c][3]);
    assert_same_floats(&p, out, "uniforms");
  }
  pair_close(&p);
}

// --- GAE --------------------------------------------------------------------------------------------------

// The CPU's float operations in the CPU's order: advantages and returns bit-exact.
static void gae_case(int T, int N, uint64_t seed) {
  Pair p = pair_open();
  Rng rng;
  rng_seed(&rng, seed);
  size_t tn = (size_t)T * N;
  float *rewards = random_floats(tn, &rng, -1, 1), *values = random_floats(tn, &rng, -2, 2);
  float *starts = malloc(tn * sizeof(float)), *last_values = random_floats(N, &rng, -2, 2);
  float *last_dones = malloc(N * sizeof(float));
  for (size_t i = 0; i < tn; i++) starts[i] = rng_uniform(&rng) < 0.05 ? 1.0f : 0.0f;
  for (int n = 0; n < N; n++) last_dones[n] = rng_uniform(&rng) < 0.3 ? 1.0f : 0.0f;
  Twin r = twin_floats(&p, rewards, tn), v = twin_floats(&p, values, tn), s = twin_floats(&p, starts, tn);
  Twin lv = twin_floats(&p, last_values, N), ld = twin_floats(&p, last_dones, N);
  Twin adv = twin_floats(&p, NULL, tn), ret = twin_floats(&p, NULL, tn);
  backend_gae(p.cpu, adv.cpu, ret.cpu, r.cpu, v.cpu, s.cpu, lv.cpu, ld.cpu, T, N, 0.99, 0.95);
  backend_gae(p.gpu, adv.gpu, ret.gpu, r.gpu, v.gpu, s.gpu, lv.gpu, ld.gpu, T, N, 0.99, 0.95);
  assert_same_floats(&p, adv, "advantages");
  assert_same_floats(&p, ret, "returns");
  free(rewards), free(values), free(starts), free(last_values), free(last_dones);
  pair_close(&p);
}

Test(cuda_gae, t257_n37) { gae_case(257, 37, 71); }
Test(cuda_gae, t4096_n32) { gae_case(4096, 32, 72); }
Test(cuda_gae, t1_n1) { gae_case(1, 1, 73); }
Test(cuda_gae, t3_n1000) { gae_case(3, 1000, 74); }

// --- permutation -----------------------------------------------------------------------------------------------

// A stable sort by the same 32-bit keys: the same permutation, bit for bit. 4096 x 32 keys of 32
// bits hold a tie or two on average, so the tie rule is exercised too.
static void permutation_case(size_t n, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  Pair p = pair_open();
  Twin perm = twin(&p, NULL, n * sizeof(int32_t));
  size_t cpu_bytes = backend_permutation_scratch_bytes(p.cpu, n),
         gpu_bytes = backend_permutation_scratch_bytes(p.gpu, n);
  void *cpu_scratch = backend_alloc(p.cpu, cpu_bytes ? cpu_bytes : 4);
  void *gpu_scratch = backend_alloc(p.gpu, gpu_bytes ? gpu_bytes : 4);
  backend_permutation(p.cpu, perm.cpu, cpu_scratch, n, seed, subsequence, offset);
  backend_permutation(p.gpu, perm.gpu, gpu_scratch, n, seed, subsequence, offset);
  assert_same_bytes(&p, perm, "permutation");
  backend_free(p.cpu, cpu_scratch);
  backend_free(p.gpu, gpu_scratch);
  pair_close(&p);
}

Test(cuda_permutation, t4096_n32) { permutation_case(4096 * 32, 1, 0, 0); }
Test(cuda_permutation, odd_size_and_offset) { permutation_case(100003, 42, 3, 1001); }
Test(cuda_permutation, one_and_two) {
  permutation_case(1, 9, 9, 9);
  permutation_case(2, 9, 9, 10);
}

// Forced ties: keys from a stream where many indices share a word cannot be made, so check the
// CUDA result's order directly on a large n where ties are near certain (n^2 / 2^33 > 30).
Test(cuda_permutation, ties_keep_index_order) {
  enum { N = 1 << 19 };
  Pair p = pair_open();
  Twin perm = twin(&p, NULL, N * sizeof(int32_t));
  void *scratch = backend_alloc(p.gpu, backend_permutation_scratch_bytes(p.gpu, N));
  backend_permutation(p.gpu, perm.gpu, scratch, N, 3, 4, 5);
  int32_t *got = malloc(N * sizeof(int32_t));
  backend_download(p.gpu, got, perm.gpu, N * sizeof(int32_t));
  int ties = 0;
  for (size_t i = 1; i < N; i++) {
    uint32_t k0 = philox_u32(3, 4, 5 + (uint64_t)got[i - 1]), k1 = philox_u32(3, 4, 5 + (uint64_t)got[i]);
    cr_assert(k0 < k1 || (k0 == k1 && got[i - 1] < got[i]), "position %zu: keys %08x %08x, indices %d %d", i, k0, k1,
              got[i - 1], got[i]);
    ties += k0 == k1;
  }
  cr_assert(ties > 0, "no tie among %d keys: the tie rule went untested", N);
  free(got);
  backend_free(p.gpu, scratch);
  pair_close(&p);
}

// --- PPO loss ------------------------------------------------------------------------------------------------

static void ppo_loss_case(int B, int normalize, double clip_vf, int with_scale, uint64_t seed) {
  Pair p = pair_open();
  Rng rng;
  rng_seed(&rng, seed);
  float *logp = random_floats(B, &rng, -2, 0), *old_logp = malloc(B * sizeof(float));
  for (int b = 0; b < B; b++) old_logp[b] = logp[b] + (float)(0.4 * rng_uniform(&rng) - 0.2);  // ratios around the clip
  float *entropy = random_floats(B, &rng, 0, 2), *values = random_floats(B, &rng, -1, 1);
  float *old_values = random_floats(B, &rng, -1, 1), *adv = random_floats(B, &rng, -3, 3);
  float *returns = random_floats(B, &rng, -1, 1), scale = 1024.0f;
  Twin lp = twin_floats(&p, logp, B), olp = twin_floats(&p, old_logp, B), ent = twin_floats(&p, entropy, B);
  Twin val = twin_floats(&p, values, B), oval = twin_floats(&p, old_values, B), ad = twin_floats(&p, adv, B);
  Twin ret = twin_floats(&p, returns, B), sc = twin_floats(&p, &scale, 1),
       stats = twin_floats(&p, NULL, PPO_STAT_COUNT);
  Twin dlp = twin_floats(&p, NULL, B), dent = twin_floats(&p, NULL, B), dval = twin_floats(&p, NULL, B);
  PpoLossHyper hyper = {0.2, clip_vf, 0.01, 0.5, normalize};
  backend_ppo_loss(p.cpu, stats.cpu, dlp.cpu, dent.cpu, dval.cpu, lp.cpu, ent.cpu, val.cpu, olp.cpu, oval.cpu, ad.cpu,
                   ret.cpu, B, hyper, with_scale ? sc.cpu : NULL);
  backend_ppo_loss(p.gpu, stats.gpu, dlp.gpu, dent.gpu, dval.gpu, lp.gpu, ent.gpu, val.gpu, olp.gpu, oval.gpu, ad.gpu,
                   ret.gpu, B, hyper, with_scale ? sc.gpu : NULL);
  // A ratio within a few ulp of 1 -+ clip may fall on different sides of the clip on the two
  // sides (expf differs by up to 2 ulp): such samples may differ in their gradient (adv r or 0) and
  // in the clip count, nothing else (the min of the two surrogates is continuous there).
  int near = 0;
  char *is_near = calloc((size_t)B, 1);
  for (int b = 0; b < B; b++) {
    double r = exp((double)(logp[b] - old_logp[b]));
    is_near[b] = fabs(r - 0.8) < 1e-5 || fabs(r - 1.2) < 1e-5;
    near += is_near[b];
  }
  Fetched st = fetch(&p, stats), dg = fetch(&p, dlp);
  for (int k = 0; k < PPO_STAT_COUNT; k++) {
    // Means of O(1) terms in double (two orders, then rounded); each term's ratio through expf
    // moves it by a few ulp: 2e-6. The clip fraction also by the near samples' share.
    double c = ((float *)st.cpu)[k], g = ((float *)st.gpu)[k];
    double tol = 2e-6 + 2e-6 * fabs(c) + (k == PPO_STAT_CLIP_FRACTION ? (double)near / B : 0.0);
    cr_assert(fabs(g - c) <= tol, "ppo stats[%d]: cpu %.9g, cuda %.9g (tolerance %.3g)", k, c, g, tol);
  }
  for (int b = 0; b < B; b++) {
    // dlogp = g_policy * adv' * ratio (or 0): the ratio's expf and the normalisation's moments
    // (double sums in two orders, rounded to float) move it by a few ulp: 4e-6 relative.
    float c = ((float *)dg.cpu)[b], g = ((float *)dg.gpu)[b];
    if (is_near[b]) continue;
    cr_assert(fabsf(g - c) <= 1e-9f + 4e-6f * fabsf(c), "ppo dlogp[%d]: cpu %.9g, cuda %.9g", b, c, g);
  }
  fetched_free(st), fetched_free(dg);
  free(is_near);
  // No transcendental in the value and entropy gradients: bit-exact.
  assert_same_floats(&p, dval, "ppo dvalues");
  assert_same_floats(&p, dent, "ppo dentropy");
  free(logp), free(old_logp), free(entropy), free(values), free(old_values), free(adv), free(returns);
  pair_close(&p);
}

Test(cuda_ppo_loss, b1000_normalized_no_value_clip) { ppo_loss_case(1000, 1, 0.0, 0, 81); }
Test(cuda_ppo_loss, b1000_normalized_value_clip_scaled) { ppo_loss_case(1000, 1, 0.1, 1, 82); }
Test(cuda_ppo_loss, b1000_raw_advantages_value_clip) { ppo_loss_case(1000, 0, 0.2, 0, 83); }
Test(cuda_ppo_loss, b1_is_not_normalized) { ppo_loss_case(1, 1, 0.1, 1, 84); }
Test(cuda_ppo_loss, b65536_normalized) { ppo_loss_case(65536, 1, 0.0, 1, 85); }
Test(cuda_ppo_loss, b1025_normalized) { ppo_loss_case(1025, 1, 0.0, 0, 86); }

// --- explained variance ---------------------------------------------------------------------------------------

// The explained variance of each backend's moments; the moments agree to 1e-12 of their size or
// of the terms' (double sums of n float terms of order 1 in two orders).
static float explained_variance_pair(Pair *p, const float *pred, const float *target, size_t n, float *gpu_out) {
  Twin pr = twin_floats(p, pred, n), ta = twin_floats(p, target, n);
  Twin out = twin(p, NULL, NN_EV_MOMENTS * sizeof(double));
  backend_explained_variance(p->cpu, out.cpu, pr.cpu, ta.cpu, n);
  backend_explained_variance(p->gpu, out.gpu, pr.gpu, ta.gpu, n);
  Fetched f = fetch(p, out);
  const double *c = f.cpu, *g = f.gpu;
  for (int m = 0; m < NN_EV_MOMENTS; m++)
    cr_assert(fabs(g[m] - c[m]) <= 1e-12 * (fabs(c[m]) + 1.0), "moment %d: cpu %.17g, cuda %.17g", m, c[m], g[m]);
  *gpu_out = nn_explained_variance(g);
  float cpu = nn_explained_variance(c);
  fetched_free(f);
  return cpu;
}

Test(cuda_explained_variance, random_constant_and_empty) {
  enum { N = 4096 * 32 + 7 };
  Pair p = pair_open();
  Rng rng;
  rng_seed(&rng, 91);
  float *target = random_floats(N, &rng, -2, 2), *pred = malloc(N * sizeof(float)), gpu;
  for (size_t i = 0; i < N; i++) pred[i] = target[i] + (float)(0.5 * rng_uniform(&rng) - 0.25);
  float cpu = explained_variance_pair(&p, pred, target, N, &gpu);
  // 1 - ratio of double sums (two orders, ~1e-16 apart) rounded to float: one ulp of the result.
  cr_assert(fabs((double)gpu - (double)cpu) <= FLOAT_ULP * fabs((double)cpu), "random: cpu %.9g, cuda %.9g", cpu, gpu);
  for (size_t i = 0; i < N; i++) target[i] = 1.25f;  // Var[target] = 0 exactly on both sides: NaN
  cpu = explained_variance_pair(&p, pred, target, N, &gpu);
  cr_assert(isnan(cpu) && isnan(gpu), "constant target: cpu %g, cuda %g", cpu, gpu);
  cpu = explained_variance_pair(&p, pred, target, 0, &gpu);
  cr_assert(isnan(cpu) && isnan(gpu), "empty: cpu %g, cuda %g", cpu, gpu);
  free(target), free(pred);
  pair_close(&p);
}

// --- multi-rank advantage normalisation ----------------------------------------------------------------------

// The three ops of a multi-rank run on one rank's minibatch: the sums in double in two orders
// (relative 1e-12 covers any order of 1000 float terms), and the normalised advantages formed from
// each backend's own sums: a few float ulp apart (mean and divisor may differ in the last bit).
Test(cuda_advantage, count_sum_sq_dev_normalize_b1000) {
  enum { B = 1000 };
  Pair p = pair_open();
  Rng rng;
  rng_seed(&rng, 101);
  float *adv = random_floats(B, &rng, -3, 5);
  Twin a = twin_floats(&p, adv, B), cs = twin(&p, NULL, 2 * sizeof(double)), sq = twin(&p, NULL, sizeof(double));
  Backend *be[2] = {p.cpu, p.gpu};
  void *a_of[2] = {a.cpu, a.gpu}, *cs_of[2] = {cs.cpu, cs.gpu}, *sq_of[2] = {sq.cpu, sq.gpu};
  double sums[2][3];
  for (int k = 0; k < 2; k++) {
    backend_advantage_count_sum(be[k], cs_of[k], a_of[k], B);
    backend_advantage_sq_dev(be[k], sq_of[k], a_of[k], B, cs_of[k]);
    backend_advantage_normalize(be[k], a_of[k], B, cs_of[k], sq_of[k]);
    backend_download(be[k], sums[k], cs_of[k], 2 * sizeof(double));
    backend_download(be[k], &sums[k][2], sq_of[k], sizeof(double));
  }
  cr_assert_eq(sums[1][0], (double)B, "count: cuda %g", sums[1][0]);
  for (int j = 1; j < 3; j++)
    cr_assert(fabs(sums[1][j] - sums[0][j]) <= 1e-12 * fabs(sums[0][j]), "sum %d: cpu %.17g, cuda %.17g", j, sums[0][j],
              sums[1][j]);
  assert_close_floats(&p, a, 4 * FLOAT_ULP, 4 * FLOAT_ULP, "normalised advantages");
  free(adv);
  pair_close(&p);
}
