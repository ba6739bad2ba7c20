// test/test_nn_ops.c: every op of the CPU backend against numbers not computed by the op itself.
//
// Backward ops: central finite differences of the op's own forward, the objective summed in
// double (L = sum w * out with fixed random weights w), step 1e-2 on float inputs: truncation
// error ~1e-4, rounding ~1e-5, so 2e-3 relative tolerance catches any wrong term. GEMM against a
// naive double triple loop on the same (rounded) inputs. Casts against the compiler's _Float16.
// Distributions against closed forms. Optimiser pieces against torch's formulas written out.
#include <cblas.h>
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/rng.h"
#include "nn/backend.h"
#include "nn/backend_impl.h"
#include "nn/ops_math.h"
#include "test/gemm_fp16_overflow_case.h"

static Backend *cpu(void) {
  Backend *b = backend_open("cpu");
  cr_assert(b, "backend_open(cpu): %s", error_message());
  return b;
}

static void fill(float *x, size_t n, Rng *rng, double lo, double hi) {
  for (size_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * rng_uniform(rng));
}

static void assert_close(double got, double want, double rel, double abs_tol, const char *what, size_t i) {
  double tol = abs_tol + rel * fabs(want);
  cr_assert(fabs(got - want) <= tol, "%s[%zu]: got %.9g, expected %.9g (tolerance %.3g)", what, i, got, want, tol);
}

// --- registry --------------------------------------------------------------------------------------------

Test(nn_backend, open_by_name) {
  Backend *b = backend_open("cpu");
  cr_assert(b);
  cr_assert_str_eq(backend_name(b), "cpu");
  cr_assert(strlen(backend_describe(b)) > 10);
  backend_close(b);
  b = backend_open("auto");  // CUDA when built and a device answers (test_cuda_core checks which)
  cr_assert(b);
  cr_assert(strcmp(backend_name(b), "cpu") == 0 || strcmp(backend_name(b), "cuda") == 0, "%s", backend_name(b));
  backend_close(b);
  b = backend_open("cuda");  // NULL with the reason, unless CUDA is built and a device answers
  if (b)
    backend_close(b);
  else
    cr_assert(strstr(error_message(), "cuda"), "message: %s", error_message());
  cr_assert_null(backend_open("tpu"));
  cr_assert(strstr(error_message(), "unknown"), "message: %s", error_message());
  cr_assert_null(backend_open(NULL));
}

// Every required member of the CPU backend's table is set; a table lacking one is named by its
// index (backend_open refuses it), an optional member may be NULL.
Test(nn_backend, the_op_tables_are_complete) {
  Backend *b = backend_open("cpu");
  cr_assert(b, "%s", error_message());
  cr_expect_eq(backend_ops_missing(b->ops), -1, "member %d of the CPU table is NULL", backend_ops_missing(b->ops));
  BackendOps ops = *b->ops;
  ops.gae = NULL;
  cr_expect_eq(backend_ops_missing(&ops), (int)(offsetof(BackendOps, gae) / sizeof(void (*)(void))));
  ops = *b->ops;
  ops.graph_record = NULL, ops.host_alloc = NULL, ops.allreduce_sum_f64 = NULL;
  cr_expect_eq(backend_ops_missing(&ops), -1, "optional members may be NULL");
  backend_close(b);
}

Test(nn_backend, allocations_are_counted_and_zeroed) {
  Backend *b = cpu();
  size_t before = backend_alloc_count(b);
  float *x = backend_alloc(b, 1000 * sizeof(float));
  cr_assert_eq(backend_alloc_count(b), before + 1);
  cr_assert_eq((uintptr_t)x % 64, 0);
  for (int i = 0; i < 1000; i++) cr_assert_eq(x[i], 0.0f);
  float host[3] = {1, 2, 3}, back[3] = {0};
  backend_upload(b, x, host, sizeof host);
  backend_download(b, back, x, sizeof back);
  cr_assert(memcmp(host, back, sizeof host) == 0);
  backend_reserve_workspace(b, 4096);
  cr_assert_eq(backend_alloc_count(b), before + 2);
  backend_reserve_workspace(b, 1024);  // already there: no new allocation
  cr_assert_eq(backend_alloc_count(b), before + 2);
  backend_free(b, x);
  backend_close(b);
}

// --- graphs --------------------------------------------------------------------------------------------------

typedef struct {
  Backend *b;
  float *x;
  int calls;
  int download;  // 1: the function breaks the recording contract with a host wait, 2: with a free,
                 // 3: with a scalar argument that changes from call to call
} GraphArg;

static void graph_body(void *p) {
  GraphArg *g = p;
  g->calls++;
  backend_scale(g->b, g->x, g->download == 3 ? (float)g->calls : 2.0f, 4);
  if (g->download == 1) {
    float host;
    backend_download(g->b, &host, g->x, sizeof host);
  } else if (g->download == 2) {
    backend_free(g->b, g->x);
  }
}

// On the CPU a graph's function runs on every call (the CUDA backend records it once).
Test(nn_backend, graph_run_queues_the_function_each_time) {
  Backend *b = cpu();
  float *x = backend_alloc(b, 4 * sizeof(float)), host[4] = {1, 2, 3, 4};
  backend_upload(b, x, host, sizeof host);
  BackendGraph graph = {0};
  GraphArg arg = {b, x, 0, 0};
  for (int i = 0; i < 3; i++) backend_graph_run(b, &graph, graph_body, &arg);
  backend_graph_reset(b, &graph);
  cr_assert_eq(arg.calls, 3);
  backend_download(b, host, x, sizeof host);
  cr_assert_eq(host[3], 32.0f, "three doublings of 4: %g", host[3]);
  arg.download = 3;  // another scalar at each call: allowed with a reset before each (a new recording)
  for (int i = 0; i < 2; i++) {
    backend_graph_run(b, &graph, graph_body, &arg);
    backend_graph_reset(b, &graph);
  }
  backend_free(b, x);
  backend_close(b);
}

// A function that makes the host wait cannot be recorded: refused on every backend, so the CPU
// tests prove the trainer's recorded functions fit a CUDA graph.
static void run_graph_that_breaks_the_contract(int how) {
  Backend *b = cpu();
  float *x = backend_alloc(b, 4 * sizeof(float));
  BackendGraph graph = {0};
  GraphArg arg = {b, x, 0, how};
  backend_graph_run(b, &graph, graph_body, &arg);
}

Test(nn_backend, graph_run_refuses_a_host_wait, .exit_code = 1) { run_graph_that_breaks_the_contract(1); }

// So is one that frees memory (cudaFree would invalidate the capture).
Test(nn_backend, graph_run_refuses_a_free, .exit_code = 1) { run_graph_that_breaks_the_contract(2); }

// And one whose arguments change between calls (a graph replays the first call's): the first call
// records, the second is refused.
Test(nn_backend, graph_run_refuses_changed_arguments, .exit_code = 1) {
  Backend *b = cpu();
  float *x = backend_alloc(b, 4 * sizeof(float));
  BackendGraph graph = {0};
  GraphArg arg = {b, x, 0, 3};
  backend_graph_run(b, &graph, graph_body, &arg);
  backend_graph_run(b, &graph, graph_body, &arg);
}

// --- lanes (backend_lanes) -----------------------------------------------------------------------------------

enum { LANE_M = 64, LANE_N = 64, LANE_K = 64 };  // 2^18 multiply-adds: the largest product OpenBLAS runs on the caller

typedef struct {
  float *x, *w, *bias;  // inputs both lanes read
  float *y[2];          // each lane's output
  int thread[2];        // omp_get_thread_num() inside each lane
  int order[2], ran;    // the lanes in the order they started
  float scale[2];       // each lane's scalar argument
  NnDtype dtype;        // the hint's
  double macs;
} LaneArg;

static void lane_body(Backend *b, void *p, int lane) {
  LaneArg *a = p;
  a->thread[lane] = omp_get_thread_num();
  a->order[__atomic_fetch_add(&a->ran, 1, __ATOMIC_RELAXED)] = lane;
  backend_gemm(b, NN_F32, 0, 1, LANE_M, LANE_N, LANE_K, 1.0f, a->x, a->w, 0.0f, a->y[lane]);
  backend_bias_act_forward(b, a->y[lane], NN_F32, a->y[lane], a->bias, LANE_M, LANE_N,
                           lane ? NN_ACT_RELU : NN_ACT_TANH);
  backend_scale(b, a->y[lane], a->scale[lane], (size_t)LANE_M * LANE_N);
}

static LaneArg lane_arg(Backend *b) {
  LaneArg a = {.scale = {1.5f, 0.5f}, .dtype = NN_F32, .macs = (double)LANE_M * LANE_N * LANE_K};
  size_t nx = (size_t)LANE_M * LANE_K, nw = (size_t)LANE_N * LANE_K;
  float *host = malloc((nx + nw + LANE_N) * sizeof(float));
  Rng rng;
  rng_seed(&rng, 61);
  for (size_t i = 0; i < nx + nw + LANE_N; i++) host[i] = (float)(2.0 * rng_uniform(&rng) - 1.0);
  a.x = backend_alloc(b, nx * sizeof(float)), a.w = backend_alloc(b, nw * sizeof(float));
  a.bias = backend_alloc(b, LANE_N * sizeof(float));
  backend_upload(b, a.x, host, nx * sizeof(float));
  backend_upload(b, a.w, host + nx, nw * sizeof(float));
  backend_upload(b, a.bias, host + nx + nw, LANE_N * sizeof(float));
  for (int l = 0; l < 2; l++) a.y[l] = backend_alloc(b, (size_t)LANE_M * LANE_N * sizeof(float));
  free(host);
  return a;
}

// Runs the lanes and returns both outputs (host, 2 M N floats; the caller frees).
static float *lanes_output(Backend *b, LaneArg *a) {
  a->ran = 0;
  backend_lanes(b, 2, lane_body, a, a->dtype, a->macs);
  cr_assert_eq(a->ran, 2);
  size_t n = (size_t)LANE_M * LANE_N;
  float *out = malloc(2 * n * sizeof(float));
  for (int l = 0; l < 2; l++) backend_download(b, out + l * n, a->y[l], n * sizeof(float));
  return out;
}

// Two lanes of fp32 ops small enough for one thread each run on two threads, and give the bytes
// they give one after the other (one thread: omp_set_num_threads(1)).
Test(nn_backend, lanes_run_together_where_each_op_stays_on_one_thread) {
  omp_set_num_threads(2);
  Backend *b = cpu();
  LaneArg a = lane_arg(b);
  float *together = lanes_output(b, &a);
  cr_assert_eq(backend_lanes_together(b), 1, "the lanes ran one after the other");
  cr_assert_neq(a.thread[0], a.thread[1], "both lanes on thread %d", a.thread[0]);
  omp_set_num_threads(1);
  float *in_order = lanes_output(b, &a);
  cr_assert_eq(backend_lanes_together(b), 1);
  cr_assert(a.thread[0] == 0 && a.thread[1] == 0 && a.order[0] == 0 && a.order[1] == 1);
  for (size_t i = 0; i < 2 * (size_t)LANE_M * LANE_N; i++)
    cr_assert(memcmp(&together[i], &in_order[i], sizeof(float)) == 0, "element %zu: %.9g together, %.9g in order", i,
              together[i], in_order[i]);
  free(together), free(in_order);
  backend_close(b);
}

// Work that a lane would not keep on one thread, or too little to pay for the fork, runs lane after
// lane on the calling thread even with two threads.
Test(nn_backend, lanes_run_in_order_otherwise) {
  omp_set_num_threads(2);
  Backend *b = cpu();
  LaneArg a = lane_arg(b);
  const struct {
    NnDtype dtype;
    double macs;
    const char *why;
  } cases[] = {{NN_F32, (double)(1 << 18) + 1, "a product above 2^18"},
               {NN_F16, 4096.0 * 64, "fp16 (the GEMM workspace)"},
               {NN_BF16, 4096.0 * 64, "bf16 (oneDNN's state)"},
               {NN_F32, 4096.0, "one row of a 64 x 64 layer"}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    a.dtype = cases[c].dtype, a.macs = cases[c].macs;
    free(lanes_output(b, &a));
    cr_assert_eq(backend_lanes_together(b), 0, "%s: the lanes ran together", cases[c].why);
    cr_assert(a.thread[0] == 0 && a.thread[1] == 0 && a.order[0] == 0 && a.order[1] == 1, "%s", cases[c].why);
  }
  backend_close(b);
}

// Under PPO_CPU_STRICT a lane's call would close the memory the other lane is using.
Test(nn_backend, lanes_run_in_order_in_strict_mode) {
  cr_assert_eq(setenv("PPO_CPU_STRICT", "1", 1), 0);  // Criterion runs each test in its own process
  omp_set_num_threads(2);
  Backend *b = cpu();
  LaneArg a = lane_arg(b);
  free(lanes_output(b, &a));
  cr_assert_eq(backend_lanes_together(b), 0);
  backend_close(b);
}

// OpenBLAS on more than one thread (the backend leaves it one; here the application sets two after
// the backend opened) splits a one-row product over its own threads: lanes would contend for them.
Test(nn_backend, lanes_run_in_order_when_openblas_has_threads) {
  cr_assert_eq(setenv("PPO_CPU_GEMM", "openblas", 1), 0);
  omp_set_num_threads(2);
  Backend *b = cpu();
  openblas_set_num_threads(2);
  LaneArg a = lane_arg(b);
  free(lanes_output(b, &a));
  cr_assert_eq(backend_lanes_together(b), 0);
  openblas_set_num_threads(1);
  free(lanes_output(b, &a));
  cr_assert_eq(backend_lanes_together(b), 1, "OpenBLAS on one thread: the lanes ran in order");
  backend_close(b);
}

typedef struct {
  Backend *b;
  LaneArg *lanes;
  int calls;
  int change;  // 1 + l: lane l's scalar changes at every call
} LaneGraphArg;

static void lane_graph_body(void *p) {
  LaneGraphArg *g = p;
  g->calls++;
  if (g->change) g->lanes->scale[g->change - 1] = (float)g->calls;
  g->lanes->ran = 0;
  omp_set_num_threads(g->calls % 2 ? 2 : 1);  // together at odd calls, in order at even ones
  backend_lanes(g->b, 2, lane_body, g->lanes, NN_F32, g->lanes->macs);
}

// A recorded function's lanes are signed the same way whether they ran together or in order (calls
// 1, 2 and 4 are compared: together, in order, in order), and their ops are signed: a changed
// argument inside a lane is refused like any other.
Test(nn_backend, lanes_sign_the_same_together_or_in_order) {
  Backend *b = cpu();
  LaneArg a = lane_arg(b);
  LaneGraphArg g = {b, &a, 0, 0};
  BackendGraph graph = {0};
  for (int i = 0; i < 4; i++) backend_graph_run(b, &graph, lane_graph_body, &g);
  cr_assert_eq(backend_lanes_together(b), 2);
  backend_graph_reset(b, &graph);
  backend_close(b);
}

static void run_lanes_with_a_changed_argument(int lane) {
  Backend *b = cpu();
  LaneArg a = lane_arg(b);
  LaneGraphArg g = {b, &a, 0, 1 + lane};
  BackendGraph graph = {0};
  backend_graph_run(b, &graph, lane_graph_body, &g);
  backend_graph_run(b, &graph, lane_graph_body, &g);
}

Test(nn_backend, lanes_refuse_a_changed_argument_in_lane_0, .exit_code = 1) { run_lanes_with_a_changed_argument(0); }
Test(nn_backend, lanes_refuse_a_changed_argument_in_lane_1, .exit_code = 1) { run_lanes_with_a_changed_argument(1); }

static void nested_lane(Backend *b, void *p, int lane) { backend_lanes(b, 2, lane_body, p, NN_F32, 0.0); }

static void no_op(void *arg) { (void)arg; }

static void graph_in_lane(Backend *b, void *p, int lane) {
  BackendGraph graph = {0};
  backend_graph_run(b, &graph, no_op, p);
}

Test(nn_backend, lanes_run_no_graph, .exit_code = 1) {
  Backend *b = cpu();
  backend_lanes(b, 1, graph_in_lane, NULL, NN_F32, 0.0);
}

Test(nn_backend, lanes_do_not_nest, .exit_code = 1) {
  Backend *b = cpu();
  LaneArg a = lane_arg(b);
  backend_lanes(b, 1, nested_lane, &a, NN_F32, 0.0);
}

// --- strict mode (PPO_CPU_STRICT=1): backend memory closed to the host outside the backend's calls ----------

Test(nn_backend, strict_mode_runs_ops_and_moves_data) {
  cr_assert_eq(setenv("PPO_CPU_STRICT", "1", 1), 0);
  Backend *b = backend_open("cpu");
  float host[5] = {1, 2, 3, 4, 5}, back[5];
  float *x = backend_alloc(b, sizeof host);
  backend_upload(b, x, host, sizeof host);
  backend_scale(b, x, 2.0f, 5);
  backend_reserve_workspace(b, 1 << 20);  // a fresh region made outside a call stays closed, and works in one
  uint16_t halves[2] = {0x3C00, 0x4000};  // fp16 1 and 2
  uint16_t *ab = backend_alloc(b, sizeof halves);
  backend_upload(b, ab, halves, sizeof halves);
  backend_gemm(b, NN_F16, 0, 0, 1, 1, 1, 1.0f, ab, ab + 1, 0.0f, x);  // x[0] = 1 * 2
  backend_download(b, back, x, sizeof back);
  cr_assert(back[0] == 2.0f && back[4] == 10.0f, "%g %g", back[0], back[4]);
  backend_free(b, ab);
  backend_free(b, x);
  backend_close(b);
}

// A direct host read of backend memory, what a GPU backend would not survive, faults where it is made.
Test(nn_backend, strict_mode_faults_on_a_host_access, .signal = SIGSEGV) {
  cr_assert_eq(setenv("PPO_CPU_STRICT", "1", 1), 0);
  Backend *b = backend_open("cpu");
  float *x = backend_alloc(b, 64);
  volatile float v = x[0];
  (void)v;
}

// PPO_PROFILE=1: backend_close prints one row per op with its call count (sites of one op added).
// Each backend keeps its own counts: two open at once report their own calls, in close order.
Test(nn_backend, profile_counts_every_op_call, .init = cr_redirect_stderr) {
  cr_assert_eq(setenv("PPO_PROFILE", "1", 1), 0);
  Backend *b = backend_open("cpu"), *c = backend_open("cpu");
  float *x = backend_alloc(b, 8 * sizeof(float)), *y = backend_alloc(c, 4 * sizeof(float));
  for (int i = 0; i < 3; i++) backend_scale(b, x, 2.0f, 4);
  for (int i = 0; i < 5; i++) backend_scale(c, y, 2.0f, 4);
  backend_gemm(b, NN_F32, 0, 0, 2, 2, 1, 1.0f, x, x + 2, 0.0f, x + 4);
  backend_free(b, x);
  backend_free(c, y);
  backend_close(b);
  backend_close(c);
  fflush(stderr);
  char text[8192] = {0};
  size_t got = fread(text, 1, sizeof text - 1, cr_get_redirected_stderr());
  const char *first = strstr(text, "PPO_PROFILE: backend cpu");
  const char *second = first ? strstr(first + 1, "PPO_PROFILE: backend cpu") : NULL;
  cr_assert(got > 0 && first && second, "two tables expected; stderr: %s", text);
  unsigned long long calls = 0;
  const char *row = strstr(first, "\n  scale ");
  cr_assert(row && row < second && sscanf(row, " scale %llu", &calls) == 1 && calls == 3, "stderr: %s", text);
  row = strstr(first, "\n  gemm ");
  cr_assert(row && row < second && sscanf(row, " gemm %llu", &calls) == 1 && calls == 1, "stderr: %s", text);
  cr_assert(strstr(first, "2x2x1") && strstr(first, "2x2x1") < second, "the gemm's shape row; stderr: %s", text);
  row = strstr(second, "\n  scale ");
  cr_assert(row && sscanf(row, " scale %llu", &calls) == 1 && calls == 5, "stderr: %s", text);
  cr_assert(!strstr(second, "\n  gemm "), "the second backend ran no gemm; stderr: %s", text);
}

// --- collectives -------------------------------------------------------------------------------------------

// The CPU backend has no device-side communicator: ppo/dist.c reduces its (host) memory with MPI.
Test(nn_backend, the_cpu_has_no_communicator) {
  Backend *b = cpu();
  cr_assert_eq(backend_comm_id_bytes(b), 0);
  char id[128];
  cr_assert_eq(backend_comm_make_id(b, id), -1);
  cr_assert(strstr(error_message(), "no collectives"), "%s", error_message());
  cr_assert_eq(backend_comm_join(b, id, 0, 2), -1);
  backend_close(b);
}

Test(nn_backend, an_allreduce_before_joining_is_refused, .exit_code = 1) {
  Backend *b = cpu();
  float *x = backend_alloc(b, sizeof(float));
  backend_allreduce_sum_f32(b, x, 1);
}

// --- casts -------------------------------------------------------------------------------------------------

Test(nn_cast, fp16_matches_the_compilers_float16) {
  Backend *b = cpu();
  enum { n = 200000 };
  float *x = malloc(n * sizeof *x);
  uint16_t *h = malloc(n * sizeof *h);
  float *back = malloc(n * sizeof *back);
  Rng rng;
  rng_seed(&rng, 7);
  // Magnitudes from 2^-30 (below the smallest subnormal) to 2^17 (above the largest half), both signs,
  // plus the specials and exact ties.
  for (int i = 0; i < n; i++)
    x[i] = (float)((rng_uniform(&rng) < 0.5 ? -1 : 1) * ldexp(1.0 + rng_uniform(&rng), (int)rng_below(&rng, 48) - 31));
  const float specials[] = {0.0f,
                            -0.0f,
                            INFINITY,
                            -INFINITY,
                            NAN,
                            65504.0f,
                            65519.99f,
                            65520.0f,
                            1.0009765625f / 2 + 0.5f,
                            5.9604644775390625e-8f,
                            2.98023223876953125e-8f,
                            2.9802326e-8f,
                            6.1035156e-5f,
                            6.1032104e-5f};
  memcpy(x, specials, sizeof specials);
  backend_cast(b, h, NN_F16, x, NN_F32, n);
  backend_cast(b, back, NN_F32, h, NN_F16, n);
  for (int i = 0; i < n; i++) {
    _Float16 ref = (_Float16)x[i];
    uint16_t bits;
    memcpy(&bits, &ref, 2);
    if (isnan(x[i])) {
      cr_assert(isnan(back[i]), "NaN must stay NaN");
      continue;
    }
    cr_assert_eq(h[i], bits, "x=%a: got %04x, _Float16 gives %04x", x[i], h[i], bits);
    cr_assert(back[i] == (float)ref || (isnan(back[i]) && isnan((float)ref)), "widen %04x", bits);
  }
  free(x), free(h), free(back);
  backend_close(b);
}

Test(nn_cast, bf16_rounds_to_nearest_even) {
  Backend *b = cpu();
  // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie (rounds to even 1.0), 1 + 3*2^-8 a tie that
  // rounds up to 1 + 2^-6, 1 + 2^-8 + 2^-20 rounds up to 1 + 2^-7; FLT_MAX is past the largest bf16
  // (0x1.fep127) by more than half a step and becomes inf.
  const float in[] = {1.0f + 0x1p-8f, 1.0f + 0x3p-8f, 1.0f + 0x1p-8f + 0x1p-20f, -2.5f, 3.4028235e38f, INFINITY, NAN};
  const float want[] = {1.0f, 1.0f + 0x1p-6f, 1.0f + 0x1p-7f, -2.5f, INFINITY, INFINITY, NAN};
  uint16_t h[7];
  float back[7];
  backend_cast(b, h, NN_BF16, in, NN_F32, 7);
  backend_cast(b, back, NN_F32, h, NN_BF16, 7);
  for (int i = 0; i < 6; i++)
    cr_assert(back[i] == want[i], "case %d: %a -> %a, expected %a", i, in[i], back[i], want[i]);
  cr_assert(isnan(back[6]));
  backend_close(b);
}

// --- activations ---------------------------------------------------------------------------------------------

Test(nn_math, tanh_is_within_a_few_ulp_of_libm) {
  // every 2^-12 step on [-12, 12] plus tiny and huge values, against tanh in double
  double worst = 0;
  for (int i = -12 * 4096; i <= 12 * 4096; i++) {
    float x = (float)i / 4096.0f;
    double want = tanh((double)x), got = nn_tanh(x);
    double ulp = nextafterf((float)fabs(want), INFINITY) - (float)fabs(want);
    if (want != 0)
      worst = fmax(worst, fabs(got - want) / ulp);
    else
      cr_assert_eq(got, 0.0);
  }
  cr_assert(worst <= 8.0, "worst error %g ulp", worst);  // 6.1 measured (Eigen documents "a couple")
  const float tiny[] = {1e-30f, -3e-8f, 1e-4f, 20.0f, -1e30f, INFINITY, -INFINITY};
  const double want[] = {1e-30, -3e-8, tanh(1e-4), 1.0, -1.0, 1.0, -1.0};
  for (int i = 0; i < 7; i++)
    cr_assert(fabs(nn_tanh(tiny[i]) - want[i]) <= 2e-7 * fabs(want[i]), "tanh(%g) = %.9g", tiny[i], nn_tanh(tiny[i]));
  cr_assert(isnan(nn_tanh(NAN)), "NaN must propagate (overflow detection)");
  // |tanh| <= 1 for every float of [7, 12] (clamped at 9, 246 of 20,001 points of [8.19, 9] gave
  // 1.0000002, and the backward's 1 - y^2 turned negative)
  for (float x = 7.0f; x <= 12.0f; x = nextafterf(x, INFINITY))
    if (!(nn_tanh(x) <= 1.0f && nn_tanh(-x) >= -1.0f)) cr_assert_fail("tanh(%.9g) = %.9g", x, nn_tanh(x));
}

// A class of probability 0 (a -inf logit) adds 0 to the entropy and its gradient, as in torch
// (0 x -inf would be NaN): the row's entropy is that of the other classes.
Test(nn_math, a_class_of_probability_zero_adds_nothing_to_the_entropy) {
  const float z[3] = {0.5f, -INFINITY, -0.25f}, two[2] = {0.5f, -0.25f};
  float lse = nn_logsumexp(z, 3), h = nn_categorical_entropy(z, 3, lse);
  cr_expect(isfinite(h), "entropy %g", h);
  cr_expect_float_eq(h, nn_categorical_entropy(two, 2, nn_logsumexp(two, 2)), 1e-7f);
  float dz[3];
  nn_categorical_backward_row(dz, z, 3, 0, 1.0f, 0.01f);
  for (int j = 0; j < 3; j++) cr_expect(isfinite(dz[j]), "dz[%d] = %g", j, dz[j]);
  cr_expect_eq(dz[1], 0.0f);
}

// A NaN logit makes the row's entropy and its gradient NaN, as in torch (the zero-probability guard
// must not take NaN's failed comparison for a zero): a NaN loss or gradient is what GradScaler's
// found-inf check and the divergence stop look for.
Test(nn_math, a_nan_logit_makes_the_entropy_nan) {
  const float z[3] = {0.5f, NAN, -0.25f};
  float lse = nn_logsumexp(z, 3);
  cr_expect(isnan(nn_categorical_entropy(z, 3, lse)), "entropy %g", nn_categorical_entropy(z, 3, lse));
  float dz[3];
  nn_categorical_backward_row(dz, z, 3, 0, 1.0f, 0.01f);
  cr_expect(isnan(dz[1]), "dz[1] = %g", dz[1]);
}

// relu passes NaN on, as torch.relu does (x > 0 ? x : 0 turned it into 0, hiding a NaN
// pre-activation from the loss and from fp16's overflow check); -0 and negatives give +0.
Test(nn_math, relu_passes_nan_on) {
  Backend *b = cpu();
  const float x[6] = {NAN, -NAN, -1.5f, -0.0f, 0.0f, 2.5f};
  const float bias[6] = {0};
  float got[6];
  float *d_in = backend_alloc(b, sizeof x), *d_bias = backend_alloc(b, sizeof bias),
        *d_out = backend_alloc(b, sizeof x);
  backend_upload(b, d_in, x, sizeof x);
  backend_upload(b, d_bias, bias, sizeof bias);
  backend_bias_act_forward(b, d_out, NN_F32, d_in, d_bias, 1, 6, NN_ACT_RELU);
  backend_download(b, got, d_out, sizeof got);
  cr_expect(isnan(got[0]) && isnan(got[1]), "relu(NaN) = %g, %g", got[0], got[1]);
  for (int i = 2; i < 5; i++) cr_expect(got[i] == 0.0f && !signbit(got[i]), "relu(%g) = %g", x[i], got[i]);
  cr_expect_eq(got[5], 2.5f);
  cr_expect(isnan(nn_act_forward(NAN, NN_ACT_RELU)), "the shared scalar form (CUDA's)");
  backend_free(b, d_in), backend_free(b, d_bias), backend_free(b, d_out);
  backend_close(b);
}

// The backend's vectorised loops (each x86-64 clone, the build's flags: -fno-trapping-math lets
// GCC vectorise the clamps) must give nn_tanh's bits, which the CUDA kernels share: random bit
// patterns (NaN, infinities, subnormals), values around the clamp at +-9, and ordinary ones.
Test(nn_math, the_backends_tanh_loop_gives_nn_tanh_bits) {
  Backend *b = cpu();
  enum { B = 64, H = 4096 };
  size_t n = (size_t)B * H;
  float *x = malloc(n * 4), *got = malloc(n * 4), *bias = calloc(H, 4);
  Rng rng;
  rng_seed(&rng, 97);
  for (size_t i = 0; i < n; i++) {
    uint32_t u = (uint32_t)rng_next_u64(&rng);
    if (i % 3 == 0)
      memcpy(&x[i], &u, 4);
    else
      x[i] = (float)((i % 3 == 1 ? 20.0 : 2.0) * (2.0 * rng_uniform(&rng) - 1.0));
  }
  const float edges[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e-40f, 9.0f, -9.0f, nextafterf(9.0f, 10.0f), -8.9999995f};
  memcpy(x, edges, sizeof edges);
  float *d_in = backend_alloc(b, n * 4), *d_bias = backend_alloc(b, H * 4), *d_out = backend_alloc(b, n * 4);
  backend_upload(b, d_in, x, n * 4);
  backend_upload(b, d_bias, bias, H * 4);
  backend_bias_act_forward(b, d_out, NN_F32, d_in, d_bias, B, H, NN_ACT_TANH);
  backend_download(b, got, d_out, n * 4);
  for (size_t i = 0; i < n; i++) {
    float want = nn_tanh(x[i] + 0.0f);
    cr_assert(memcmp(&want, &got[i], 4) == 0, "tanh(%a) [%zu]: backend %a, nn_tanh %a", x[i], i, got[i], want);
  }
  backend_free(b, d_in), backend_free(b, d_bias), backend_free(b, d_out);
  free(x), free(got), free(bias);
  backend_close(b);
}

// --- GEMM -------------------------------------------------------------------------------------------------

// fp16 C at the overflow threshold: infinities where IEEE rounding gives them (the CUDA suite runs
// the same case on the GPU).
Test(nn_gemm, fp16_c_rounds_to_inf_at_the_overflow_threshold) {
  Backend *b = cpu();
  gemm_fp16_overflow_case(b, "cpu");
  backend_close(b);
}

static void gemm_case(Backend *b, NnDtype dtype, int ta, int tb, int M, int N, int K, float beta) {
  Rng rng;
  rng_seed(&rng, (uint64_t)(M * 131 + N * 7 + K + ta * 2 + tb + dtype * 1000));
  float *a = malloc((size_t)M * K * 4), *bm = malloc((size_t)K * N * 4), *c = malloc((size_t)M * N * 4);
  fill(a, (size_t)M * K, &rng, -1, 1);
  fill(bm, (size_t)K * N, &rng, -1, 1);
  fill(c, (size_t)M * N, &rng, -1, 1);
  if (beta == 0.0f)  // beta 0 must not read C (as BLAS): NaN there would show
    for (size_t i = 0; i < (size_t)M * N; i++) c[i] = NAN;
  void *a_lp = backend_alloc(b, (size_t)M * K * 4), *b_lp = backend_alloc(b, (size_t)K * N * 4);
  backend_cast(b, a_lp, dtype, a, NN_F32, (size_t)M * K);
  backend_cast(b, b_lp, dtype, bm, NN_F32, (size_t)K * N);
  // the reference multiplies the rounded values, so only the summation order differs
  backend_cast(b, a, NN_F32, a_lp, dtype, (size_t)M * K);
  backend_cast(b, bm, NN_F32, b_lp, dtype, (size_t)K * N);
  double *ref = malloc((size_t)M * N * sizeof(double));
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double s = 0;
      for (int k = 0; k < K; k++)
        s += (double)(ta ? a[(size_t)k * M + i] : a[(size_t)i * K + k]) *
             (tb ? bm[(size_t)j * K + k] : bm[(size_t)k * N + j]);
      ref[(size_t)i * N + j] = 0.5 * s + (beta == 0.0f ? 0.0 : beta * (double)c[(size_t)i * N + j]);
    }
  backend_gemm(b, dtype, ta, tb, M, N, K, 0.5f, a_lp, b_lp, beta, c);
  for (size_t i = 0; i < (size_t)M * N; i++) assert_close(c[i], ref[i], 1e-5, 1e-5 * sqrt(K), "gemm", i);
  if (dtype != NN_F32 && beta == 0.0f) {
    // C in the operands' dtype (backend_gemm_to): the fp32 sum rounded once to nearest, so within
    // half a unit in the last place of the double reference (at most 2^-8 of the value in bf16,
    // 2^-11 in fp16) beside the sum's own error; C's bytes past M N elements stay untouched
    size_t n = (size_t)M * N;
    uint16_t *c_lp = malloc((n + 8) * 2);
    memset(c_lp, 0xA5, (n + 8) * 2);
    backend_gemm_to(b, dtype, ta, tb, M, N, K, 0.5f, a_lp, b_lp, 0.0f, c_lp, dtype);
    backend_cast(b, c, NN_F32, c_lp, dtype, n);
    double half_ulp = dtype == NN_BF16 ? 0x1p-8 : 0x1p-11;
    for (size_t i = 0; i < n; i++) assert_close(c[i], ref[i], half_ulp + 1e-5, 1e-5 * sqrt(K), "gemm_to", i);
    for (size_t i = n; i < n + 8; i++) cr_assert(c_lp[i] == 0xA5A5, "gemm_to wrote past C (%zu)", i);
    free(c_lp);
  }
  backend_free(b, a_lp), backend_free(b, b_lp);
  free(a), free(bm), free(c), free(ref);
}

Test(nn_gemm, every_dtype_and_transpose_against_double) {
  Backend *b = cpu();
  for (int dtype = NN_F32; dtype <= NN_BF16; dtype++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        gemm_case(b, (NnDtype)dtype, ta, tb, 37, 29, 53, 0.0f);
        gemm_case(b, (NnDtype)dtype, ta, tb, 64, 96, 130, 1.0f);  // accumulate, as parameter grads do
        gemm_case(b, (NnDtype)dtype, ta, tb, 1, 17, 5, 0.25f);
        gemm_case(b, (NnDtype)dtype, ta, tb, 32, 300, 70, 1.0f);   // few rows: oneDNN computes C^T
        gemm_case(b, (NnDtype)dtype, ta, tb, 32, 2100, 40, 0.0f);  // ... and transposes it on the threads
        gemm_case(b, (NnDtype)dtype, ta, tb, 3, 256, 40, 0.0f);
        gemm_case(b, (NnDtype)dtype, ta, tb, 1, 512, 1024, 1.0f);  // one row: a matrix-vector product
        gemm_case(b, (NnDtype)dtype, ta, tb, 1, 64, 64, 0.0f);
        gemm_case(b, (NnDtype)dtype, ta, tb, 64, 64, 64, 0.0f);  // small, B transposed on the stack
        gemm_case(b, (NnDtype)dtype, ta, tb, 20, 33, 17, 0.5f);  // the same with partial tiles
      }
  backend_close(b);
}

// K <= 4 with rows of 512 or more takes the CPU backend's own thin kernel: every K, both sides of
// its 512-column chunks (N 600), rows on OpenMP's threads (300 x 512 outputs) and on the calling
// thread, beta 0 and not; narrower rows and K 5 go to the libraries.
Test(nn_gemm, thin_products_against_double) {
  Backend *b = cpu();
  for (int dtype = NN_F32; dtype <= NN_BF16; dtype++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++)
        for (int K = 1; K <= 4; K++) {
          gemm_case(b, (NnDtype)dtype, ta, tb, 300, 600, K, 0.0f);
          gemm_case(b, (NnDtype)dtype, ta, tb, 7, 520, K, 1.0f);
          gemm_case(b, (NnDtype)dtype, ta, tb, 1, 512, K, 0.25f);
          gemm_case(b, (NnDtype)dtype, ta, tb, 64, 64, K, 0.0f);
        }
  gemm_case(b, NN_F32, 0, 1, 64, 600, 5, 0.0f);
  backend_close(b);
}

// --- finite differences --------------------------------------------------------------------------------------

#define FD_STEP 1e-2f

static double dot(const float *w, const float *x, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)w[i] * x[i];
  return s;
}

static void bias_act_objective(Backend *b, double *out_l, float *tmp, const float *w, const float *in,
                               const float *bias, int B, int H, int act) {
  backend_bias_act_forward(b, tmp, NN_F32, in, bias, B, H, act);
  *out_l = dot(w, tmp, (size_t)B * H);
}

Test(nn_fd, bias_act_backward) {
  Backend *b = cpu();
  enum { B = 5, H = 7 };
  Rng rng;
  rng_seed(&rng, 11);
  for (int act = NN_ACT_NONE; act < NN_ACT_COUNT; act++) {
    float in[B * H], bias[H], w[B * H], out[B * H], din[B * H], dbias[H], tmp[B * H];
    fill(in, B * H, &rng, -2, 2);
    fill(bias, H, &rng, -0.5, 0.5);
    fill(w, B * H, &rng, -1, 1);
    if (act == NN_ACT_RELU)  // keep clear of the kink, where the derivative has no finite difference
      for (int i = 0; i < B * H; i++)
        if (fabsf(in[i] + bias[i % H]) < 0.05f) in[i] += 0.1f;
    backend_bias_act_forward(b, out, NN_F32, in, bias, B, H, act);
    for (int i = 0; i < B * H; i++) {  // the forward in closed form (the differences below test only
      float x = in[i] + bias[i % H];   // that the backward agrees with it)
      if (act == NN_ACT_TANH)
        cr_assert(fabs(out[i] - tanh((double)x)) <= 1e-6, "tanh(%.9g) = %.9g, got %.9g", x, tanh((double)x), out[i]);
      else
        cr_assert_eq(out[i], act == NN_ACT_RELU ? (x > 0.0f ? x : 0.0f) : x, "act %d of %.9g: got %.9g", act, x,
                     out[i]);
    }
    for (int h = 0; h < H; h++) dbias[h] = 0.25f;  // accumulates onto what is there
    backend_bias_act_backward(b, din, NN_F32, dbias, w, NN_F32, out, NN_F32, B, H, act);
    for (int i = 0; i < B * H; i++) {
      double lp, lm;
      float save = in[i];
      in[i] = save + FD_STEP;
      bias_act_objective(b, &lp, tmp, w, in, bias, B, H, act);
      in[i] = save - FD_STEP;
      bias_act_objective(b, &lm, tmp, w, in, bias, B, H, act);
      in[i] = save;
      assert_close(din[i], (lp - lm) / (2.0 * FD_STEP), 2e-3, 2e-4, "din", (size_t)i);
    }
    for (int h = 0; h < H; h++) {
      double lp, lm;
      float save = bias[h];
      bias[h] = save + FD_STEP;
      bias_act_objective(b, &lp, tmp, w, in, bias, B, H, act);
      bias[h] = save - FD_STEP;
      bias_act_objective(b, &lm, tmp, w, in, bias, B, H, act);
      bias[h] = save;
      assert_close(dbias[h] - 0.25f, (lp - lm) / (2.0 * FD_STEP), 2e-3, 2e-4, "dbias", (size_t)h);
    }
  }
  backend_close(b);
}

// The transposing variant: din and dbias the same bits as the plain op, din_t din's transpose;
// sizes that cross the CPU backend's column blocks (256) and row tiles (32) with partial ones.
// (37, 300) runs on the calling thread, (512, 512) on OpenMP's threads (two column blocks). din_t
// is 64-byte aligned, so with B a multiple of 32 the CPU's AVX-512 tile transpose (full tiles,
// aligned rows) writes it: (96, 301) adds an odd column count, its last column the scalar tail's.
static void check_backward_t(Backend *b, int B, int H) {
  Rng rng;
  rng_seed(&rng, 12);
  size_t n = (size_t)B * H, hb = (size_t)H * sizeof(float);
  float *dout = malloc(n * 4), *y = malloc(n * 4), *in = malloc(n * 4), *d1 = malloc(n * 4), *d2 = malloc(n * 4);
  size_t aligned = (n * 4 + 63) / 64 * 64;
  float *dt = aligned_alloc(64, aligned), *dt2 = aligned_alloc(64, aligned), *bias = calloc((size_t)H, 4),
        *db1 = malloc(hb), *db2 = malloc(hb);
  float *db3 = malloc(hb);
  fill(in, n, &rng, -2, 2);
  fill(dout, n, &rng, -1, 1);
  for (int dtype = NN_F32; dtype <= NN_BF16; dtype++) {
    const char *name = nn_dtype_name((NnDtype)dtype);
    size_t es = nn_dtype_size((NnDtype)dtype);
    backend_bias_act_forward(b, y, (NnDtype)dtype, in, bias, B, H, NN_ACT_TANH);
    for (int h = 0; h < H; h++) db1[h] = db2[h] = db3[h] = 0.5f;
    backend_bias_act_backward(b, d1, (NnDtype)dtype, db1, dout, NN_F32, y, (NnDtype)dtype, B, H, NN_ACT_TANH);
    backend_bias_act_backward_t(b, d2, dt, (NnDtype)dtype, db2, dout, NN_F32, y, (NnDtype)dtype, B, H, NN_ACT_TANH);
    cr_assert(memcmp(d1, d2, n * es) == 0, "(%d, %d) %s: din differs", B, H, name);
    cr_assert(memcmp(db1, db2, hb) == 0, "(%d, %d) %s: dbias differs", B, H, name);
    for (int i = 0; i < B; i++)
      for (int h = 0; h < H; h++)
        cr_assert(memcmp((char *)dt + ((size_t)h * B + i) * es, (char *)d2 + ((size_t)i * H + h) * es, es) == 0,
                  "(%d, %d) %s: din_t[%d][%d] is not din[%d][%d]", B, H, name, h, i, i, h);
    // without din (the first layer): the same din_t and dbias, and dout untouched
    memset(dt2, 0xFF, n * 4);
    memcpy(d1, dout, n * 4);
    backend_bias_act_backward_t(b, NULL, dt2, (NnDtype)dtype, db3, dout, NN_F32, y, (NnDtype)dtype, B, H, NN_ACT_TANH);
    cr_assert(memcmp(dt2, dt, n * es) == 0, "(%d, %d) %s: din_t without din differs", B, H, name);
    cr_assert(memcmp(db3, db2, hb) == 0, "(%d, %d) %s: dbias without din differs", B, H, name);
    cr_assert(memcmp(d1, dout, n * 4) == 0, "(%d, %d) %s: dout was written", B, H, name);
    if (dtype == NN_F32) continue;
    // dout of the dtype (an input gradient stored by backend_gemm_to): the same bits as its values
    // widened to fp32 and passed as fp32, in place (din = dout) and into din_t
    uint16_t *g = malloc(n * 2);
    backend_cast(b, g, (NnDtype)dtype, dout, NN_F32, n);
    backend_cast(b, d1, NN_F32, g, (NnDtype)dtype, n);  // the widened values
    for (int h = 0; h < H; h++) db1[h] = db2[h] = 0.5f;
    backend_bias_act_backward_t(b, d2, dt, (NnDtype)dtype, db1, d1, NN_F32, y, (NnDtype)dtype, B, H, NN_ACT_TANH);
    backend_bias_act_backward_t(b, g, dt2, (NnDtype)dtype, db2, g, (NnDtype)dtype, y, (NnDtype)dtype, B, H,
                                NN_ACT_TANH);
    cr_assert(memcmp(g, d2, n * es) == 0, "(%d, %d) %s: din from a %s dout differs", B, H, name, name);
    cr_assert(memcmp(dt2, dt, n * es) == 0, "(%d, %d) %s: din_t from a %s dout differs", B, H, name, name);
    cr_assert(memcmp(db2, db1, hb) == 0, "(%d, %d) %s: dbias from a %s dout differs", B, H, name, name);
    free(g);
  }
  free(dout), free(y), free(in), free(d1), free(d2), free(dt), free(dt2), free(bias), free(db1), free(db2), free(db3);
}

Test(nn_ops, bias_act_backward_t_is_the_plain_op_plus_a_transpose) {
  Backend *b = cpu();
  check_backward_t(b, 37, 300);
  check_backward_t(b, 96, 301);
  check_backward_t(b, 512, 512);
  backend_close(b);
}

static double categorical_objective(Backend *b, const float *logits, const float *actions, const float *wl,
                                    const float *we, int B, int A) {
  float logp[8], ent[8];
  backend_categorical_forward(b, logp, ent, logits, actions, B, A);
  return dot(wl, logp, B) + dot(we, ent, B);
}

Test(nn_fd, categorical_backward) {
  Backend *b = cpu();
  enum { B = 6, A = 5 };
  Rng rng;
  rng_seed(&rng, 12);
  float logits[B * A], actions[B], wl[B], we[B], dlogits[B * A];
  fill(logits, B * A, &rng, -2, 2);
  fill(wl, B, &rng, -1, 1);
  fill(we, B, &rng, -1, 1);
  for (int i = 0; i < B; i++) actions[i] = (float)rng_below(&rng, A);
  backend_categorical_backward(b, dlogits, wl, we, logits, actions, B, A);
  for (int i = 0; i < B * A; i++) {
    float save = logits[i];
    logits[i] = save + FD_STEP;
    double lp = categorical_objective(b, logits, actions, wl, we, B, A);
    logits[i] = save - FD_STEP;
    double lm = categorical_objective(b, logits, actions, wl, we, B, A);
    logits[i] = save;
    assert_close(dlogits[i], (lp - lm) / (2.0 * FD_STEP), 2e-3, 2e-4, "dlogits", (size_t)i);
  }
  backend_close(b);
}

Test(nn_distributions, categorical_closed_forms_and_sampling) {
  Backend *b = cpu();
  // Uniform logits: log p = -log A, entropy = log A. Probabilities (0.2, 0.3, 0.5) from log-probs.
  float z[2 * 3] = {0.7f, 0.7f, 0.7f, logf(0.2f), logf(0.3f), logf(0.5f)};
  float act[2] = {2, 1}, logp[2], ent[2];
  backend_categorical_forward(b, logp, ent, z, act, 2, 3);
  assert_close(logp[0], -log(3.0), 1e-6, 1e-6, "logp", 0);
  assert_close(ent[0], log(3.0), 1e-6, 1e-6, "entropy", 0);
  assert_close(logp[1], log(0.3), 1e-6, 1e-6, "logp", 1);
  assert_close(ent[1], -(0.2 * log(0.2) + 0.3 * log(0.3) + 0.5 * log(0.5)), 1e-6, 1e-6, "entropy", 1);
  // inverse CDF on (0.2, 0.5, 1.0]: u = 0.1 -> 0, 0.19 -> 0, 0.21 -> 1, 0.49 -> 1, 0.51 -> 2, 1.0 -> 2
  const float u[] = {0.1f, 0.19f, 0.21f, 0.49f, 0.51f, 1.0f};
  const float want[] = {0, 0, 1, 1, 2, 2};
  float zz[6 * 3], drawn[6], lp[6];
  for (int i = 0; i < 6; i++) memcpy(zz + 3 * i, z + 3, 3 * sizeof(float));
  backend_categorical_sample(b, drawn, lp, zz, u, 6, 3);
  for (int i = 0; i < 6; i++) {
    cr_assert_eq(drawn[i], want[i], "u=%g drew %g, expected %g", u[i], drawn[i], want[i]);
    assert_close(lp[i], log(i < 2 ? 0.2 : i < 4 ? 0.3 : 0.5), 1e-6, 1e-6, "sample logp", (size_t)i);
  }
  // u = 1 above a total that rounds below 1 (logits 0, 0.002: 0.99999994) takes the last action of
  // nonzero probability, not the third, whose probability e^-200 is 0 in float
  float z0[3] = {0.0f, 0.002f, -200.0f}, one = 1.0f, a0, lp0, lse0 = nn_logsumexp(z0, 3), total = 0.0f;
  for (int j = 0; j < 3; j++) total += expf(z0[j] - lse0);
  cr_assert_lt(total, 1.0f, "the case needs a total below 1 (%.9g)", total);
  cr_assert_eq(nn_categorical_sample(z0, 3, lse0, one), 1, "u = 1 above the total");
  backend_categorical_sample(b, &a0, &lp0, z0, &one, 1, 3);
  cr_assert_neq(a0, 2.0f, "u = 1 drew the action of probability 0");
  cr_assert(isfinite(lp0), "its log-prob %g", lp0);
  // Frequencies over many Philox uniforms follow p within 4 sigma.
  enum { n = 20000 };
  float *uu = malloc(n * sizeof(float)), *zs = malloc(n * 3 * sizeof(float)), *d = malloc(n * sizeof(float));
  backend_uniform(b, uu, n, 5, 0, 0);
  for (int i = 0; i < n; i++) memcpy(zs + 3 * i, z + 3, 3 * sizeof(float));
  backend_categorical_sample(b, d, NULL, zs, uu, n, 3);
  int count[3] = {0};
  for (int i = 0; i < n; i++) count[(int)d[i]]++;
  const double p[3] = {0.2, 0.3, 0.5};
  for (int j = 0; j < 3; j++) {
    double sigma = sqrt(n * p[j] * (1 - p[j]));
    cr_assert(fabs(count[j] - n * p[j]) < 4 * sigma, "action %d drawn %d times of %d", j, count[j], n);
  }
  free(uu), free(zs), free(d);
  backend_close(b);
}

static double gaussian_objective(Backend *b, const float *mean, const float *log_std, const float *actions,
                                 const float *wl, const float *we, int B, int A) {
  float logp[8], ent[8];
  backend_gaussian_forward(b, logp, ent, mean, log_std, actions, B, A);
  return dot(wl, logp, B) + dot(we, ent, B);
}

Test(nn_fd, gaussian_backward) {
  Backend *b = cpu();
  enum { B = 5, A = 3 };
  Rng rng;
  rng_seed(&rng, 13);
  float mean[B * A], log_std[A], actions[B * A], wl[B], we[B], dmean[B * A], dlog_std[A] = {0.5f, 0.5f, 0.5f};
  fill(mean, B * A, &rng, -1, 1);
  fill(log_std, A, &rng, -0.5, 0.5);
  fill(actions, B * A, &rng, -2, 2);
  fill(wl, B, &rng, -1, 1);
  fill(we, B, &rng, -1, 1);
  backend_gaussian_backward(b, dmean, dlog_std, wl, we, mean, log_std, actions, B, A);
  for (int i = 0; i < B * A; i++) {
    float save = mean[i];
    mean[i] = save + FD_STEP;
    double lp = gaussian_objective(b, mean, log_std, actions, wl, we, B, A);
    mean[i] = save - FD_STEP;
    double lm = gaussian_objective(b, mean, log_std, actions, wl, we, B, A);
    mean[i] = save;
    assert_close(dmean[i], (lp - lm) / (2.0 * FD_STEP), 2e-3, 2e-4, "dmean", (size_t)i);
  }
  for (int j = 0; j < A; j++) {
    float save = log_std[j];
    log_std[j] = save + FD_STEP;
    double lp = gaussian_objective(b, mean, log_std, actions, wl, we, B, A);
    log_std[j] = save - FD_STEP;
    double lm = gaussian_objective(b, mean, log_std, actions, wl, we, B, A);
    log_std[j] = save;
    assert_close(dlog_std[j] - 0.5f, (lp - lm) / (2.0 * FD_STEP), 2e-3, 2e-4, "dlog_std", (size_t)j);
  }
  backend_close(b);
}

// A minibatch of 2^20 rows seeded with SB3's -1/B: dlog_std's terms (magnitudes summing to ~1)
// cancel to ~8e-4. Within a couple of float roundings of the double sum of the very terms (the
// shared per-element formula), and the MSE of 2^20 rows likewise: float accumulators (the CUDA
// kernels sum in double) were off by 1.9e-6 and 4.6e-4 relative here.
Test(nn_distributions, large_minibatch_sums_keep_their_precision) {
  Backend *b = cpu();
  enum { B = 1 << 20 };
  Rng rng;
  rng_seed(&rng, 7);
  float *a = malloc(B * 4), *mu = malloc(B * 4), *dlogp = malloc(B * 4), *dmean = malloc(B * 4);
  float *pred = malloc(B * 4), *target = malloc(B * 4);
  const float log_std = -0.5f, inv_std = expf(-log_std);
  for (int i = 0; i < B; i++) {
    mu[i] = (float)(2.0 * rng_uniform(&rng) - 1.0);
    a[i] = mu[i] + (float)rng_normal(&rng) * expf(log_std);
    dlogp[i] = (float)(-1.0 / B);
    pred[i] = (float)rng_normal(&rng);
    target[i] = (float)(0.1 + rng_normal(&rng));
  }
  double exact = 0.0, parts = 0.0, mse = 0.0;
  for (int i = 0; i < B; i++) {
    float term = nn_gaussian_backward_element(a[i], mu[i], inv_std, dlogp[i], 0.0f, &dmean[i]);
    exact += term, parts += fabs(term);
    double d = (double)(pred[i] - target[i]);
    mse += d * d;
  }
  mse /= B;
  float dlog_std = 0.0f, loss;
  backend_gaussian_backward(b, dmean, &dlog_std, dlogp, NULL, mu, &log_std, a, B, 1);
  cr_expect(fabs(dlog_std - exact) <= 2.4e-7 * fabs(exact) + 1e-15 * parts,
            "dlog_std %.9g, double sum of the terms %.9g (terms' magnitudes sum to %.3g)", dlog_std, exact, parts);
  backend_mse_forward(b, &loss, pred, target, B);
  cr_expect(fabs(loss - mse) <= 2.4e-7 * mse, "mse %.9g, double %.9g", loss, mse);
  free(a), free(mu), free(dlogp), free(dmean), free(pred), free(target);
  backend_close(b);
}

Test(nn_distributions, gaussian_closed_forms_and_sampling) {
  Backend *b = cpu();
  // N(0; 0, 1): log pdf = -log(sqrt(2 pi)) = -0.918938533204672742; entropy 0.5 (1 + log 2 pi) = 1.418938533204672742.
  // N(3; 1, e^0.5) over two dims, one with log_std 0: sum of the two.
  float mean[4] = {0, 0, 1, 0}, log_std[2] = {0.5f, 0.0f}, act[4] = {0, 0, 3, 0}, logp[2], ent[2];
  backend_gaussian_forward(b, logp, ent, mean, log_std, act, 2, 2);
  assert_close(logp[0], 2 * -0.918938533204672742 - 0.5, 1e-6, 1e-6, "logp", 0);
  assert_close(logp[1], (-0.918938533204672742 - 0.5 - 0.5 * 4.0 / exp(1.0)) - 0.918938533204672742, 1e-6, 1e-6, "logp",
               1);
  assert_close(ent[0], 2 * 1.418938533204672742 + 0.5, 1e-6, 1e-6, "entropy", 0);
  // Box-Muller: u1 = e^-0.5 gives radius 1, u2 = 1 angle 2 pi (cos = 1), u2 = 0.5 cos = -1.
  float u[4] = {expf(-0.5f), 1.0f, expf(-2.0f), 0.5f}, drawn[2], m1[2] = {0.25f, -1.0f}, ls[1] = {logf(2.0f)};
  backend_gaussian_sample(b, drawn, NULL, m1, ls, u, 2, 1);
  assert_close(drawn[0], 0.25 + 2.0 * 1.0, 1e-5, 1e-5, "sample", 0);
  assert_close(drawn[1], -1.0 + 2.0 * -2.0, 1e-5, 1e-5, "sample", 1);
  // Moments over many Philox uniforms: mean and variance of the standard draws.
  enum { n = 40000 };
  float *uu = malloc(2 * n * sizeof(float)), *zero = calloc(n, sizeof(float)), *d = malloc(n * sizeof(float));
  float ls0 = 0.0f;
  backend_uniform(b, uu, 2 * n, 9, 1, 0);
  backend_gaussian_sample(b, d, NULL, zero, &ls0, uu, n, 1);
  double s = 0, s2 = 0;
  for (int i = 0; i < n; i++) s += d[i], s2 += (double)d[i] * d[i];
  cr_assert(fabs(s / n) < 4.0 / sqrt(n), "mean %g", s / n);
  cr_assert(fabs(s2 / n - 1.0) < 4.0 * sqrt(2.0 / n), "variance %g", s2 / n);
  free(uu), free(zero), free(d);
  backend_close(b);
}

Test(nn_fd, mse_backward) {
  Backend *b = cpu();
  enum { B = 9 };
  Rng rng;
  rng_seed(&rng, 14);
  float pred[B], target[B], dpred[B], loss, dloss = 0.7f;
  fill(pred, B, &rng, -2, 2);
  fill(target, B, &rng, -2, 2);
  backend_mse_forward(b, &loss, pred, target, B);
  double want = 0;
  for (int i = 0; i < B; i++) want += ((double)pred[i] - target[i]) * ((double)pred[i] - target[i]) / B;
  assert_close(loss, want, 1e-6, 1e-7, "mse", 0);
  backend_mse_backward(b, dpred, &dloss, pred, target, B);
  for (int i = 0; i < B; i++) {
    float save = pred[i], lp, lm;
    pred[i] = save + FD_STEP;
    backend_mse_forward(b, &lp, pred, target, B);
    pred[i] = save - FD_STEP;
    backend_mse_forward(b, &lm, pred, target, B);
    pred[i] = save;
    assert_close(dpred[i], 0.7 * ((double)lp - lm) / (2.0 * FD_STEP), 2e-3, 2e-4, "dpred", (size_t)i);
  }
  backend_close(b);
}

// --- data movement, reductions, scaling, optimiser ------------------------------------------------------------

// 300 rows run on the calling thread, 8000 (592,000 bytes) on OpenMP's threads.
Test(nn_ops, copy_rows_into_a_wider_pitch_and_back) {
  Backend *b = cpu();
  enum { NARROW = 74, WIDE = 80 };  // 37 fp16 values per row, padded to 40
  static const int row_counts[] = {300, 8000};
  for (int c = 0; c < 2; c++) {
    int rows = row_counts[c];
    unsigned char *narrow = malloc((size_t)rows * NARROW), *wide = malloc((size_t)rows * WIDE);
    unsigned char *back = malloc((size_t)rows * NARROW);
    for (size_t i = 0; i < (size_t)rows * NARROW; i++) narrow[i] = (unsigned char)(i * 13 + 5);
    memset(wide, 0xAB, (size_t)rows * WIDE);
    backend_copy_rows(b, wide, WIDE, narrow, NARROW, NARROW, (size_t)rows);
    for (int r = 0; r < rows; r++)
      for (int i = 0; i < WIDE; i++)
        cr_assert_eq(wide[r * WIDE + i], i < NARROW ? narrow[r * NARROW + i] : 0xAB, "%d rows: row %d byte %d", rows, r,
                     i);
    backend_copy_rows(b, back, NARROW, wide, WIDE, NARROW, (size_t)rows);
    cr_assert(memcmp(back, narrow, (size_t)rows * NARROW) == 0, "%d rows: the copy back differs", rows);
    free(narrow), free(wide), free(back);
  }
  backend_close(b);
}

Test(nn_ops, copy_rows_refuses_overlap, .exit_code = 1) {
  Backend *b = cpu();
  unsigned char buf[256];
  backend_copy_rows(b, buf + 8, 16, buf, 16, 16, 4);
}

Test(nn_ops, gather_rows) {
  Backend *b = cpu();
  float src[4 * 3], out[5 * 3];
  for (int i = 0; i < 12; i++) src[i] = (float)i;
  int32_t idx[5] = {3, 0, 0, 2, 1};
  backend_gather_rows(b, out, src, idx, 5, 3 * sizeof(float), 4);
  for (int r = 0; r < 5; r++)
    for (int d = 0; d < 3; d++) cr_assert_eq(out[r * 3 + d], (float)(idx[r] * 3 + d));
  backend_close(b);
}

// Rows of any byte width: 2-byte elements (fp16 / bf16 observations) and odd widths move whole.
Test(nn_ops, gather_rows_of_any_width) {
  Backend *b = cpu();
  uint16_t src[4 * 5], out[3 * 5 + 1];
  for (int i = 0; i < 20; i++) src[i] = (uint16_t)(1000 + i);
  int32_t idx[3] = {2, 3, 0};
  out[15] = 7;
  backend_gather_rows(b, out, src, idx, 3, 5 * sizeof(uint16_t), 4);
  for (int r = 0; r < 3; r++)
    for (int d = 0; d < 5; d++) cr_assert_eq(out[r * 5 + d], 1000 + idx[r] * 5 + d);
  cr_assert_eq(out[15], 7, "wrote past B rows");
  unsigned char bytes[4 * 3] = {0}, got[2 * 3];
  for (int i = 0; i < 12; i++) bytes[i] = (unsigned char)(i + 1);
  int32_t idx2[2] = {3, 1};
  backend_gather_rows(b, got, bytes, idx2, 2, 3, 4);
  for (int r = 0; r < 2; r++)
    for (int d = 0; d < 3; d++) cr_assert_eq(got[r * 3 + d], idx2[r] * 3 + d + 1);
  backend_close(b);
}

Test(nn_ops, gather_rows_rejects_out_of_range, .exit_code = 1) {
  Backend *b = cpu();
  float src[4], out[2];
  int32_t idx[2] = {0, 4};
  backend_gather_rows(b, out, src, idx, 2, sizeof(float), 4);
}

Test(nn_ops, global_norm_and_clip_follow_torch) {
  Backend *b = cpu();
  float x[3] = {3, 4, 12}, total;
  backend_global_norm(b, &total, x, 3);
  cr_assert_eq(total, 13.0f);
  // max_norm 0.5: coef = 0.5 / (13 + 1e-6), applied to every element.
  backend_clip_grad_norm(b, &total, x, 3, 0.5f);
  cr_assert_eq(total, 13.0f);
  float coef = 0.5f / (13.0f + 1e-6f);
  cr_assert_eq(x[0], 3.0f * coef);
  cr_assert_eq(x[2], 12.0f * coef);
  // a norm below max_norm leaves x as it is
  float y[2] = {0.1f, 0.2f};
  backend_clip_grad_norm(b, NULL, y, 2, 0.5f);
  cr_assert(y[0] == 0.1f && y[1] == 0.2f);
  // the same bits for any length split: a long vector's norm against a double sum
  enum { n = 100003 };
  float *z = malloc(n * sizeof(float));
  double s = 0;
  for (int i = 0; i < n; i++) z[i] = (float)((i % 17) - 8) * 0.01f, s += (double)z[i] * z[i];
  backend_global_norm(b, &total, z, n);
  assert_close(total, sqrt(s), 1e-7, 0, "norm", 0);
  free(z);
  // torch.clamp passes NaN on: a NaN gradient makes the coefficient NaN and clip_grad_norm_ turns
  // every gradient NaN (a run that diverged stops; ppo/train_run.c); an infinite norm gives 0
  float w[3] = {1, NAN, 2}, clip;
  backend_clip_coef(b, &total, &clip, w, 3, 0.5f);
  cr_expect(isnan(total) && isnan(clip), "norm %g coef %g", total, clip);
  backend_clip_grad_norm(b, NULL, w, 3, 0.5f);
  cr_expect(isnan(w[0]) && isnan(w[2]), "%g %g", w[0], w[2]);
  cr_expect_eq(nn_clip_coef(INFINITY, 0.5f), 0.0f);
  cr_expect_eq(nn_clip_coef(0.25f, 0.5f), 1.0f);
  backend_close(b);
}

// torch's min and clamp pass NaN on where fminf / fmaxf drop it: a NaN log-ratio, or an infinite
// ratio times a zero advantage (0 x inf), gives a NaN term and gradient, as torch's loss does.
Test(nn_math, ppo_surrogate_and_value_clip_pass_nan_on) {
  float term, dterm, kl;
  nn_ppo_surrogate(1.0f, NAN, 0.2f, 0.8f, 1.2f, &term, &dterm, &kl);
  cr_expect(isnan(term) && isnan(dterm), "%g %g", term, dterm);
  nn_ppo_surrogate(0.0f, 100.0f, 0.2f, 0.8f, 1.2f, &term, &dterm, &kl);
  cr_expect(isnan(term) && isnan(dterm), "%g %g", term, dterm);
  nn_ppo_surrogate(2.0f, logf(1.5f), 0.2f, 0.8f, 1.2f, &term, &dterm, &kl);  // clipped: 2 x 1.2, no gradient
  cr_expect(term == 2.0f * 1.2f && dterm == 0.0f, "%g %g", term, dterm);
  float d;
  cr_expect(isnan(nn_ppo_value_pred(NAN, 1.0f, 0.5f, &d)));
  cr_expect_eq(nn_ppo_value_pred(3.0f, 1.0f, 0.5f, &d), 1.5f);
  cr_expect_eq(d, 0.0f);
}

Test(nn_ops, unscale_check_flags_inf_and_nan) {
  Backend *b = cpu();
  float scale = 3.0f, found = 0.0f;
  float x[4] = {3, 6, -9, 0.3f};
  backend_unscale_check(b, x, 4, 4, &scale, &found);
  cr_assert_eq(found, 0.0f);
  float inv = (float)(1.0 / 3.0);
  cr_assert(x[0] == 3.0f * inv && x[1] == 6.0f * inv && x[3] == 0.3f * inv);
  float y[3] = {1, INFINITY, 2};
  backend_unscale_check(b, y, 3, 0, &scale, &found);
  cr_assert_eq(found, 1.0f);
  cr_assert_eq(y[2], 2.0f * inv, "grads are multiplied even when one is inf");
  found = 0.0f;
  float w[2] = {NAN, 1};
  backend_unscale_check(b, w, 2, 0, &scale, &found);
  cr_assert_eq(found, 1.0f);
  // The first n_fp16 elements (weights and biases, fp16 GEMM outputs under torch's autocast)
  // overflow at 65520, what fp16 rounds to inf; later ones (log_std's, fp32 in torch) only at inf.
  const struct {
    float big;
    size_t n_fp16;
    float found;
  } cases[] = {{65520.0f, 2, 1.0f},
               {-65520.0f, 2, 1.0f},
               {nextafterf(65520.0f, 0.0f), 2, 0.0f},
               {1e30f, 1, 0.0f},
               {65520.0f, 0, 0.0f}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    float v[3] = {1, cases[k].big, 2};
    found = 0.0f;
    backend_unscale_check(b, v, 3, cases[k].n_fp16, &scale, &found);
    cr_expect_eq(found, cases[k].found, "case %zu: %.9g with n_fp16 %zu", k, (double)cases[k].big, cases[k].n_fp16);
  }
  backend_close(b);
}

// The fused unscale + clip coefficient gives exactly the two ops' bits: grads, found-inf, norm and
// coefficient, for sizes around the parallel threshold, a clipped and an unclipped case, an inf, and
// an fp16 overflow (with a 7e4 past n_fp16 that is none).
// (The two-op path itself is checked against torch by test_nn_torch.)
Test(nn_ops, unscale_clip_coef_is_unscale_then_clip_coef) {
  Backend *b = cpu();
  static const size_t sizes[] = {1, 7, 131071, 131072 * 3 + 5};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
    for (int with_inf = 0; with_inf < 3; with_inf++)  // none, an inf, an fp16 overflow (7e4 in the first n_fp16)
      for (int clipped = 0; clipped < 2; clipped++) {
        size_t n = sizes[k];
        float *x = backend_alloc(b, n * sizeof(float)), *y = backend_alloc(b, n * sizeof(float));
        Rng rng;
        rng_seed(&rng, 17 + k);
        for (size_t i = 0; i < n; i++) x[i] = y[i] = (float)((rng_uniform(&rng) * 2 - 1) * 1024.0);
        size_t n_fp16 = n > 1 ? n - 1 : n;
        if (n > 1) x[n - 1] = y[n - 1] = 7e4f;  // past n_fp16 (a log_std's gradient): no overflow there
        if (with_inf) x[n / 2] = y[n / 2] = with_inf == 1 ? INFINITY : 7e4f;
        float scale = 2048.0f, max_norm = clipped ? 1e-3f : 1e9f;
        float found_a = 0.0f, total_a = 0.0f, coef_a = 0.0f, found_b = 0.0f, total_b = 0.0f, coef_b = 0.0f;
        backend_unscale_check(b, x, n, n_fp16, &scale, &found_a);
        backend_clip_coef(b, &total_a, &coef_a, x, n, max_norm);
        backend_unscale_clip_coef(b, y, n, n_fp16, &scale, &found_b, &total_b, &coef_b, max_norm);
        cr_assert(memcmp(x, y, n * sizeof(float)) == 0, "n %zu: grads differ", n);
        cr_assert_eq(found_a, found_b, "n %zu: found_inf", n);
        cr_assert(memcmp(&total_a, &total_b, sizeof(float)) == 0, "n %zu: norm %.9g vs %.9g", n, total_a, total_b);
        cr_assert(memcmp(&coef_a, &coef_b, sizeof(float)) == 0, "n %zu: coef %.9g vs %.9g", n, coef_a, coef_b);
        cr_assert_eq(found_b, with_inf ? 1.0f : 0.0f);
        if (!with_inf) cr_assert(clipped ? coef_b < 1.0f : coef_b == 1.0f, "n %zu: coef %g", n, coef_b);
        backend_free(b, x);
        backend_free(b, y);
      }
  backend_close(b);
}

Test(nn_ops, grad_scaler_update_rules) {
  Backend *b = cpu();
  float scale = 65536.0f, found = 0.0f;
  int32_t tracker = 0;
  backend_grad_scaler_update(b, &scale, &tracker, &found, 2.0f, 0.5f, 3);
  backend_grad_scaler_update(b, &scale, &tracker, &found, 2.0f, 0.5f, 3);
  cr_assert(scale == 65536.0f && tracker == 2);
  backend_grad_scaler_update(b, &scale, &tracker, &found, 2.0f, 0.5f, 3);
  cr_assert(scale == 131072.0f && tracker == 0, "grows at the interval");
  found = 1.0f;
  backend_grad_scaler_update(b, &scale, &tracker, &found, 2.0f, 0.5f, 3);
  cr_assert(scale == 65536.0f && tracker == 0, "backs off");
  // no lower clamp: 200 backoffs reach 0
  for (int i = 0; i < 200; i++) backend_grad_scaler_update(b, &scale, &tracker, &found, 2.0f, 0.5f, 3);
  cr_assert_eq(scale, 0.0f);
  // growth to inf is refused
  scale = 3e38f, found = 0.0f, tracker = 2;
  backend_grad_scaler_update(b, &scale, &tracker, &found, 2.0f, 0.5f, 3);
  cr_assert(scale == 3e38f && tracker == 0);
  backend_close(b);
}

Test(nn_ops, adam_first_step_is_lr_sign_and_skips_on_inf) {
  Backend *b = cpu();
  // Step 1: m = 0.1 g, v = 0.001 g^2, bias corrections 0.1 and 0.001, so p -= lr g / (|g| + eps).
  float p[3] = {1, -2, 0.5f}, g[3] = {0.3f, -4, 1e-6f}, m[3] = {0}, v[3] = {0};
  int32_t step = 0;
  AdamHyper hyper = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-5};
  float found = 1.0f;
  backend_adam_step(b, p, g, m, v, 3, hyper, NULL, &step, &found, NULL, NULL, NN_F32);
  cr_assert(step == 0 && p[0] == 1.0f && m[0] == 0.0f, "found_inf skips everything");
  found = 0.0f;
  backend_adam_step(b, p, g, m, v, 3, hyper, NULL, &step, &found, NULL, NULL, NN_F32);
  cr_assert_eq(step, 1);
  const float p0[3] = {1, -2, 0.5f};
  for (int i = 0; i < 3; i++)
    assert_close(p[i], p0[i] - 1e-3 * g[i] / (fabs(g[i]) + 1e-5), 1e-6, 1e-9, "adam p", (size_t)i);
  backend_close(b);
}

// The schedule's factor read from memory (lr_scale) gives the bits of the product passed as hyper.lr.
Test(nn_ops, adam_lr_scale_from_memory_equals_the_scaled_rate) {
  Backend *b = cpu();
  enum { n = 1000 };
  float p1[n], p2[n], p3[n], g[n], m1[n] = {0}, m2[n] = {0}, m3[n] = {0}, v1[n] = {0}, v2[n] = {0}, v3[n] = {0};
  Rng rng;
  rng_seed(&rng, 5);
  fill(p1, n, &rng, -1, 1);
  fill(g, n, &rng, -0.1, 0.1);
  memcpy(p2, p1, sizeof p1);
  memcpy(p3, p1, sizeof p1);
  const double scale = 0.3183098861837907;  // not a power of two: the product is rounded
  AdamHyper scaled = {.lr = 3e-4 * scale, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-5}, base = scaled;
  base.lr = 3e-4;
  int32_t s1 = 0, s2 = 0, s3 = 0;
  for (int it = 0; it < 3; it++) {
    backend_adam_step(b, p1, g, m1, v1, n, scaled, NULL, &s1, NULL, NULL, NULL, NN_F32);
    backend_adam_step(b, p2, g, m2, v2, n, base, &scale, &s2, NULL, NULL, NULL, NN_F32);
    backend_adam_step(b, p3, g, m3, v3, n, base, NULL, &s3, NULL, NULL, NULL, NN_F32);
  }
  cr_assert_eq(memcmp(p1, p2, sizeof p1), 0, "the same parameters");
  cr_assert_eq(memcmp(m1, m2, sizeof m1), 0);
  cr_assert_neq(memcmp(p3, p1, sizeof p3), 0, "the unscaled rate moves them elsewhere");
  backend_close(b);
}

Test(nn_ops, uniform_is_philox) {
  Backend *b = cpu();
  float u[10];
  backend_uniform(b, u, 10, 42, 3, 5);
  for (int i = 0; i < 10; i++) cr_assert_eq(u[i], rng_uniform_from_u32(philox_u32(42, 3, 5 + (uint64_t)i)));
  backend_close(b);
}

Test(nn_ops, fused_clip_and_lowp_adam_equals_the_separate_passes) {
  Backend *b = cpu();
  enum { n = 50000 };
  float *p1 = malloc(n * 4), *p2 = malloc(n * 4), *g1 = malloc(n * 4), *g2 = malloc(n * 4);
  float *m1 = calloc(n, 4), *m2 = calloc(n, 4), *v1 = calloc(n, 4), *v2 = calloc(n, 4);
  uint16_t *lp1 = malloc(n * 2), *lp2 = malloc(n * 2);
  Rng rng;
  rng_seed(&rng, 31);
  fill(p1, n, &rng, -1, 1);
  fill(g1, n, &rng, -0.1, 0.1);
  memcpy(p2, p1, n * 4);
  memcpy(g2, g1, n * 4);
  AdamHyper hyper = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-5};
  int32_t s1 = 0, s2 = 0;
  for (int it = 0; it < 3; it++) {
    float total1, total2, coef;
    backend_clip_grad_norm(b, &total1, g1, n, 0.5f);  // separate: scale grads in place, step, cast
    backend_adam_step(b, p1, g1, m1, v1, n, hyper, NULL, &s1, NULL, NULL, NULL, NN_F32);
    backend_cast(b, lp1, NN_BF16, p1, NN_F32, n);
    backend_clip_coef(b, &total2, &coef, g2, n, 0.5f);  // fused
    backend_adam_step(b, p2, g2, m2, v2, n, hyper, NULL, &s2, NULL, &coef, lp2, NN_BF16);
    cr_assert_eq(total1, total2);
    cr_assert_lt(coef, 1.0f, "the test must clip");
    cr_assert(memcmp(p1, p2, n * 4) == 0 && memcmp(m1, m2, n * 4) == 0 && memcmp(v1, v2, n * 4) == 0, "step %d", it);
    cr_assert(memcmp(lp1, lp2, n * 2) == 0, "step %d low-precision copy", it);
    memcpy(g1, g2, n * 4);  // the fused path leaves grads unclipped: start the next step equal
  }
  free(p1), free(p2), free(g1), free(g2), free(m1), free(m2), free(v1), free(v2), free(lp1), free(lp2);
  backend_close(b);
}

// --- weights kept in oneDNN's layout (backend_weights_changed) ---

// C (M, N) = A (M, K) op(W) in double from bf16 bits, op(W) = W^T (W (N, K)) or W (W (K, N)); and
// each entry's sum of |products| (the fp32 accumulation's error scale).
static void bf16_reference(double *ref, double *scale, const uint16_t *a, const uint16_t *w, int M, int N, int K,
                           int trans_w) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double sum = 0.0, abs_sum = 0.0;
      for (int k = 0; k < K; k++) {
        double p = (double)nn_bf16_to_f32(a[(size_t)i * K + k]) *
                   (double)nn_bf16_to_f32(w[trans_w ? (size_t)j * K + k : (size_t)k * N + j]);
        sum += p, abs_sum += fabs(p);
      }
      ref[(size_t)i * N + j] = sum, scale[(size_t)i * N + j] = abs_sum;
    }
}

static void random_bf16(uint16_t *x, size_t n, Rng *rng) {
  for (size_t i = 0; i < n; i++) x[i] = nn_f32_to_bf16((float)(2.0 * rng_uniform(rng) - 1.0));
}

// One product through backend_gemm against the double reference (fp32 accumulation of K terms).
static void check_weight_product(Backend *b, const uint16_t *a_host, const uint16_t *w_host, const void *w_dev, int M,
                                 int N, int K, int trans_w, const char *what) {
  uint16_t *a = backend_alloc(b, (size_t)M * K * 2);
  float *c = backend_alloc(b, (size_t)M * N * 4), *got = malloc((size_t)M * N * 4);
  double *ref = malloc((size_t)M * N * 8), *scale = malloc((size_t)M * N * 8);
  backend_upload(b, a, a_host, (size_t)M * K * 2);
  backend_gemm(b, NN_BF16, 0, trans_w, M, N, K, 1.0f, a, w_dev, 0.0f, c);
  backend_download(b, got, c, (size_t)M * N * 4);
  bf16_reference(ref, scale, a_host, w_host, M, N, K, trans_w);
  for (size_t i = 0; i < (size_t)M * N; i++)
    cr_assert(fabs(got[i] - ref[i]) <= 1e-6 * K * scale[i] + 1e-30, "%s (M %d) [%zu]: got %.9g, expected %.9g", what, M,
              i, got[i], ref[i]);
  backend_free(b, a), backend_free(b, c);
  free(got), free(ref), free(scale);
}

// W (128, 192) bf16 registered: x W^T at few rows and dy W at the update's batch read the copy in
// oneDNN's layout (both layouts apply: 192 and 128 are multiples of 32 and 64). A wrong block or
// pair order gives O(1) errors.
static void weights_layout_case(void) {
  Backend *b = cpu();
  if (!strstr(backend_describe(b), "oneDNN")) {
    backend_close(b);
    cr_skip("built without oneDNN: GEMMs read the weights as they are");
  }
  enum { R = 128, C = 192, MAX_M = 1024 };
  Rng rng;
  rng_seed(&rng, 77);
  uint16_t *w_host = malloc(R * C * 2), *w_old = malloc(R * C * 2), *a_host = malloc((size_t)MAX_M * C * 2);
  random_bf16(w_host, R * C, &rng);
  random_bf16(a_host, (size_t)MAX_M * C, &rng);
  // the plan's bytes: both layouts for (128, 192); only x W^T's for (128, 96) (dy W's 96 columns are
  // not a whole number of 64-column blocks); none in fp32
  cr_assert_eq(backend_weights_bytes(b, NN_BF16, R, C), (size_t)2 * R * C * 2);
  cr_assert_eq(backend_weights_bytes(b, NN_BF16, R, 96), (size_t)R * 96 * 2);
  cr_assert_eq(backend_weights_bytes(b, NN_F32, R, C), 0);
  uint16_t *w = backend_alloc(b, R * C * 2);
  backend_upload(b, w, w_host, R * C * 2);
  backend_weights_changed(b, w, NN_BF16, R, C);
  int rows[] = {32, 5, 1024, 100};
  for (int i = 0; i < 4; i++) {
    check_weight_product(b, a_host, w_host, w, rows[i], R, C, 1, "x W^T");  // (M, 192) x (192, 128)
    check_weight_product(b, a_host, w_host, w, rows[i], C, R, 0, "dy W");   // (M, 128) x (128, 192)
  }
  // a change announced is seen; one not announced is not (the products read the copy: the test
  // above went through it)
  memcpy(w_old, w_host, R * C * 2);
  random_bf16(w_host, R * C, &rng);
  backend_upload(b, w, w_host, R * C * 2);
  backend_weights_changed(b, w, NN_BF16, R, C);
  check_weight_product(b, a_host, w_host, w, 32, R, C, 1, "x W^T after the change");
  check_weight_product(b, a_host, w_host, w, 1024, C, R, 0, "dy W after the change");
  backend_upload(b, w, w_old, R * C * 2);  // not announced
  check_weight_product(b, a_host, w_host, w, 1024, C, R, 0, "dy W from the copy");
  // freed: the memory is not those weights any more. Strict mode's blocks are whole pages from
  // mmap, and a new one of the same size usually gets the freed address back; where it does, its
  // products read it as it is (with a stale register they would read the freed weights' copy).
  backend_free(b, w);
  backend_close(b);
  setenv("PPO_CPU_STRICT", "1", 1);  // Criterion runs each test in its own process
  b = cpu();
  enum { BR = 512, BC = 1024 };
  uint16_t *big_host = malloc((size_t)BR * BC * 2), *a_big = malloc((size_t)32 * BR * 2);
  random_bf16(big_host, (size_t)BR * BC, &rng);
  random_bf16(a_big, (size_t)32 * BR, &rng);
  uint16_t *big = backend_alloc(b, (size_t)BR * BC * 2);
  backend_upload(b, big, big_host, (size_t)BR * BC * 2);
  backend_weights_changed(b, big, NN_BF16, BR, BC);
  check_weight_product(b, a_big, big_host, big, 32, BC, BR, 0, "dy W, W (512, 1024)");
  backend_free(b, big);
  uint16_t *x = backend_alloc(b, (size_t)BR * BC * 2);
  random_bf16(big_host, (size_t)BR * BC, &rng);
  backend_upload(b, x, big_host, (size_t)BR * BC * 2);
  if (x == big)
    check_weight_product(b, a_big, big_host, x, 32, BC, BR, 0, "a new allocation at a freed W's address");
  else
    cr_log_warn("the allocator did not reuse the freed address: the register's forgetting went untested");
  backend_free(b, x);
  free(big_host), free(a_big);
  free(w_host), free(w_old), free(a_host);
  backend_close(b);
}

Test(nn_gemm, weights_in_onednn_layout_give_the_plain_product) { weights_layout_case(); }

// Every binary16 bit pattern widened by the backend (backend_cast, and the GEMMs' operands through
// the same row function) gives nn_f16_to_f32's bits: the F16C path's signalling NaNs included (the
// instruction quiets them; the scalar function keeps them).
static void check_every_f16_widens_exactly(void) {
  Backend *b = cpu();
  uint16_t *host = malloc(65536 * 2);
  float *got = malloc(65536 * 4);
  for (int i = 0; i < 65536; i++) host[i] = (uint16_t)i;
  uint16_t *h = backend_alloc(b, 65536 * 2);
  float *f = backend_alloc(b, 65536 * 4);
  backend_upload(b, h, host, 65536 * 2);
  for (int tail = 0; tail < 2; tail++) {  // whole blocks of 8, then 5 left after the last group
    int n = tail ? 65536 - 3 : 65536;
    backend_memset_zero(b, f, 65536 * 4);
    backend_cast(b, f, NN_F32, h, NN_F16, (size_t)n);
    backend_download(b, got, f, 65536 * 4);
    for (int i = 0; i < n; i++) {
      float want = nn_f16_to_f32((uint16_t)i);
      cr_assert(memcmp(&got[i], &want, 4) == 0, "fp16 0x%04x widened to 0x%08x, expected 0x%08x (n %d)", i,
                nn_f32_bits(got[i]), nn_f32_bits(want), n);
    }
    for (int i = n; i < 65536; i++) cr_assert_eq(got[i], 0.0f, "written past n");
  }
  backend_free(b, h), backend_free(b, f);
  free(host), free(got);
  backend_close(b);
}

Test(nn_cast, every_f16_widens_to_its_exact_value) { check_every_f16_widens_exactly(); }

Test(nn_cast, every_f16_widens_to_its_exact_value_without_f16c) {
  setenv("PPO_CPU_NO_AVX512", "1", 1);  // the scalar loop (Criterion: a process per test)
  check_every_f16_widens_exactly();
}

// fp16 W registered: every fp16 product with B = W reads W widened once per change, the same
// values the per-call widening gave, so the products equal, bit for bit, those on an unregistered
// copy of W (fp32 and fp16 C, both transposes, the rollout's and the update's row counts, with and
// without oneDNN's swapped few-row products). A change announced is seen, one not announced is not;
// freed weights leave the register.
static void wide_product(Backend *b, const void *a, const void *w, int M, int N, int K, int trans_w, NnDtype c_dtype,
                         void *out) {
  size_t bytes = (size_t)M * N * nn_dtype_size(c_dtype);
  void *c = backend_alloc(b, bytes);
  backend_gemm_to(b, NN_F16, 0, trans_w, M, N, K, 1.0f, a, w, 0.0f, c, c_dtype);
  backend_download(b, out, c, bytes);
  backend_free(b, c);
}

static void check_wide_weights(Backend *b, const uint16_t *a, const void *w, const void *w_plain, int M, int N, int K,
                               int trans_w, const char *what) {
  for (int lp = 0; lp < 2; lp++) {
    NnDtype c_dtype = lp ? NN_F16 : NN_F32;
    size_t bytes = (size_t)M * N * nn_dtype_size(c_dtype);
    char *got = malloc(bytes), *want = malloc(bytes);
    wide_product(b, a, w, M, N, K, trans_w, c_dtype, got);
    wide_product(b, a, w_plain, M, N, K, trans_w, c_dtype, want);
    cr_assert(memcmp(got, want, bytes) == 0, "%s (M %d, %s C): the registered W's product differs from the plain one",
              what, M, lp ? "fp16" : "fp32");
    free(got), free(want);
  }
}

Test(nn_gemm, fp16_weights_widened_once_give_the_same_bits) {
  setenv("PPO_CPU_STRICT", "1", 1);  // whole pages: a freed W's address comes back (Criterion: a process per test)
  Backend *b = cpu();
  enum { R = 1024, C = 512, MAX_M = 1024 };
  cr_assert_eq(backend_weights_bytes(b, NN_F16, R, C), (size_t)R * C * 4, "the plan counts W widened");
  cr_assert_eq(backend_weights_bytes(b, NN_F16, 3, 5), 64, "whole cache lines");
  Rng rng;
  rng_seed(&rng, 78);
  uint16_t *w_host = malloc((size_t)R * C * 2), *a_host = malloc((size_t)MAX_M * R * 2);
  for (size_t i = 0; i < (size_t)R * C; i++) w_host[i] = nn_f32_to_f16((float)(0.1 * (2 * rng_uniform(&rng) - 1)));
  for (size_t i = 0; i < (size_t)MAX_M * R; i++) a_host[i] = nn_f32_to_f16((float)(2 * rng_uniform(&rng) - 1));
  uint16_t *w = backend_alloc(b, (size_t)R * C * 2), *plain = backend_alloc(b, (size_t)R * C * 2);
  uint16_t *a = backend_alloc(b, (size_t)MAX_M * R * 2);
  backend_upload(b, a, a_host, (size_t)MAX_M * R * 2);
  backend_upload(b, w, w_host, (size_t)R * C * 2);
  backend_upload(b, plain, w_host, (size_t)R * C * 2);
  backend_weights_changed(b, w, NN_F16, R, C);
  int rows[] = {32, 1, 5, 1024};
  for (int i = 0; i < 4; i++) {
    check_wide_weights(b, a, w, plain, rows[i], R, C, 1, "x W^T");  // (M, 512) x (512, 1024)
    check_wide_weights(b, a, w, plain, rows[i], C, R, 0, "dy W");   // (M, 1024) x (1024, 512)
  }
  // announced: the copy is laid out again; not announced: the products still read the copy
  for (size_t i = 0; i < (size_t)R * C; i++) w_host[i] ^= 0x0400;  // each weight's exponent changes
  backend_upload(b, w, w_host, (size_t)R * C * 2);
  backend_upload(b, plain, w_host, (size_t)R * C * 2);
  backend_weights_changed(b, w, NN_F16, R, C);
  check_wide_weights(b, a, w, plain, 32, R, C, 1, "x W^T after the change");
  check_wide_weights(b, a, w, plain, 1024, C, R, 0, "dy W after the change");
  uint16_t *zero = calloc((size_t)R * C, 2);
  backend_upload(b, w, zero, (size_t)R * C * 2);  // not announced
  check_wide_weights(b, a, w, plain, 32, R, C, 1, "x W^T from the copy");
  // freed: forgotten (strict mode: a new block of the same size usually gets the address back)
  backend_free(b, w);
  uint16_t *x = backend_alloc(b, (size_t)R * C * 2);
  backend_upload(b, x, zero, (size_t)R * C * 2);
  if (x == w) {
    float *c = malloc((size_t)32 * R * 4);
    wide_product(b, a, x, 32, R, C, 1, NN_F32, c);
    for (size_t i = 0; i < (size_t)32 * R; i++) cr_assert_eq(c[i], 0.0f, "a new allocation at a freed W's address");
    free(c);
  } else {
    cr_log_warn("the allocator did not reuse the freed address: the register's forgetting went untested");
  }
  backend_free(b, x), backend_free(b, plain), backend_free(b, a);
  free(zero), free(w_host), free(a_host);
  backend_close(b);
}

// The hand-written AVX-512 paths' scalar loops (other CPUs), forced: the weight layouts, the
// transposed low-precision gradient tiles, the transposes of few-row and small NT products.
Test(nn_gemm, the_scalar_loops_behind_the_avx512_paths) {
  setenv("PPO_CPU_NO_AVX512", "1", 1);  // Criterion runs each test in its own process
  Backend *b = cpu();
  check_backward_t(b, 512, 512);                   // full aligned tiles
  gemm_case(b, NN_F32, 0, 1, 32, 2100, 40, 0.0f);  // oneDNN computes C^T, transposed on the threads
  gemm_case(b, NN_F32, 0, 1, 64, 64, 64, 0.0f);    // B transposed on the stack
  gemm_case(b, NN_BF16, 0, 1, 32, 300, 70, 1.0f);
  backend_close(b);
  weights_layout_case();
}

int openblas_get_num_threads(void);  // OpenBLAS's own API (cblas.h declares it too)

// OpenBLAS runs on the calling thread in every mode (its large products are split over OpenMP's
// threads instead): its sgemv's own threads, spinning against OpenMP's, once made a 1 x 64 x 1024
// product 80x slower, and its sgemm's made an AR(1) run 4x slower with PPO_CPU_GEMM=openblas.
Test(nn_gemm, openblas_stays_on_the_calling_thread) {
  openblas_set_num_threads(2);
  Backend *b = cpu();
  cr_assert_eq(openblas_get_num_threads(), 1, "%s", backend_describe(b));
  backend_close(b);
  openblas_set_num_threads(2);
  setenv("PPO_CPU_GEMM", "openblas", 1);
  b = cpu();
  cr_assert_eq(openblas_get_num_threads(), 1, "%s", backend_describe(b));
  backend_close(b);
}

Test(nn_gemm, openblas_path_against_double) {
  setenv("PPO_CPU_GEMM", "openblas", 1);  // Criterion runs each test in its own process
  Backend *b = cpu();
  cr_assert(strstr(backend_describe(b), "sgemm"), "%s", backend_describe(b));
  omp_set_num_threads(2);  // products of 2^20 multiply-adds and up: C in one block per thread
  for (int dtype = NN_F32; dtype <= NN_F16; dtype++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        gemm_case(b, (NnDtype)dtype, ta, tb, 64, 96, 130, 1.0f);   // one thread (below 2^20)
        gemm_case(b, (NnDtype)dtype, ta, tb, 64, 200, 130, 1.0f);  // columns 0..95 and 96..199
        gemm_case(b, (NnDtype)dtype, ta, tb, 300, 40, 100, 0.0f);  // rows 0..143 and 144..299
        gemm_case(b, (NnDtype)dtype, ta, tb, 33, 400, 80, 1.0f);   // columns 0..191 and 192..399
      }
  backend_close(b);
}

Test(nn_ops, bias_act_low_precision_storage_rounds_the_fp32_result_once) {
  Backend *b = cpu();
  enum { B = 3, H = 300 };  // more than one 256-column block
  Rng rng;
  rng_seed(&rng, 41);
  static float in[B * H], bias[H], out32[B * H], dout[B * H], din32[B * H], y[B * H], db32[H], dblp[H];
  uint16_t outlp[B * H], dinlp[B * H];
  fill(in, B * H, &rng, -2, 2);
  fill(bias, H, &rng, -0.5, 0.5);
  fill(dout, B * H, &rng, -1, 1);
  for (int dt = NN_F16; dt <= NN_BF16; dt++) {
    backend_bias_act_forward(b, out32, NN_F32, in, bias, B, H, NN_ACT_TANH);
    backend_bias_act_forward(b, outlp, (NnDtype)dt, in, bias, B, H, NN_ACT_TANH);
    for (int i = 0; i < B * H; i++) {
      uint16_t want = dt == NN_F16 ? nn_f32_to_f16(out32[i]) : nn_f32_to_bf16(out32[i]);
      cr_assert_eq(outlp[i], want, "%s forward [%d]", nn_dtype_name((NnDtype)dt), i);
    }
    // backward from the stored low-precision output: the fp32 op on the widened values, rounded once
    backend_cast(b, y, NN_F32, outlp, (NnDtype)dt, B * H);
    memset(db32, 0, sizeof db32), memset(dblp, 0, sizeof dblp);
    backend_bias_act_backward(b, din32, NN_F32, db32, dout, NN_F32, y, NN_F32, B, H, NN_ACT_TANH);
    backend_bias_act_backward(b, dinlp, (NnDtype)dt, dblp, dout, NN_F32, outlp, (NnDtype)dt, B, H, NN_ACT_TANH);
    for (int i = 0; i < B * H; i++) {
      uint16_t want = dt == NN_F16 ? nn_f32_to_f16(din32[i]) : nn_f32_to_bf16(din32[i]);
      cr_assert_eq(dinlp[i], want, "%s backward [%d]", nn_dtype_name((NnDtype)dt), i);
    }
    cr_assert(memcmp(db32, dblp, sizeof db32) == 0, "bias gradients come from the unrounded values");
  }
  backend_close(b);
}
