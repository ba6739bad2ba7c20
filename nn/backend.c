// nn/backend.c: the registry (the one place besides CMake that knows whether CUDA was built) and
// the public wrappers, which check arguments and dispatch through the backend's table.
#ifdef PPO_HAVE_CUDA
#include <dlfcn.h>
#include <unistd.h>
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/error.h"
#include "common/log.h"
#include "common/timer.h"
#include "nn/backend_impl.h"

size_t nn_dtype_size(NnDtype dtype) { return dtype == NN_F32 ? 4 : 2; }

const char *nn_dtype_name(NnDtype dtype) {
  switch (dtype) {
    case NN_F32:
      return "fp32";
    case NN_F16:
      return "fp16";
    case NN_BF16:
      return "bf16";
  }
  return "?";
}

#ifdef PPO_HAVE_CUDA
// The CUDA backend lives in a module (nn/backend_impl.h: CudaModuleHost), loaded only after the CUDA
// driver itself reports a device, so that a CPU run of a CUDA-enabled build never loads cuBLAS
// (about 210 MiB of resident memory at load): the driver library (libcuda.so.1, installed with the
// GPU driver, absent elsewhere) is asked through its own API. The message keeps the form
// "no CUDA device (...)" that the runtime's own answer had.
typedef int (*CuInitFn)(unsigned flags);
typedef int (*CuDeviceGetCountFn)(int *count);
typedef int (*CuGetErrorNameFn)(int error, const char **name);

static int cuda_driver_devices(void) {
  void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);  // kept open: the runtime loads it too
  if (!driver) {
    error_set("backend 'cuda': no CUDA device (no CUDA driver: %s)", dlerror());
    return 0;
  }
  CuInitFn init = (CuInitFn)dlsym(driver, "cuInit");
  CuDeviceGetCountFn device_count = (CuDeviceGetCountFn)dlsym(driver, "cuDeviceGetCount");
  CuGetErrorNameFn error_name = (CuGetErrorNameFn)dlsym(driver, "cuGetErrorName");
  if (!init || !device_count) {
    error_set("backend 'cuda': no CUDA device (libcuda.so.1 lacks cuInit or cuDeviceGetCount)");
    return 0;
  }
  int count = 0, rc = init(0);
  const char *step = "cuInit";
  if (rc == 0) rc = device_count(&count), step = "cuDeviceGetCount";
  if (rc != 0) {  // e.g. CUDA_ERROR_NO_DEVICE (100), CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE (804)
    const char *name = NULL;
    if (!error_name || error_name(rc, &name) != 0 || !name) name = "?";
    error_set("backend 'cuda': no CUDA device (the driver's %s failed: %s, error %d)", step, name, rc);
    return 0;
  }
  if (count == 0) error_set("backend 'cuda': no CUDA device (the driver reports none)");
  return count;
}

// PPO_CUDA_MODULE in the environment names the module (a path with a slash, relative to the working
// directory; a bare name is searched as dlopen searches); by default it is PPO_CUDA_MODULE_NAME in
// the folder of the running program (CMake puts it beside the programs in build/bin).
static Backend *open_cuda(void) {
  static CudaModuleOpen module_open;
  if (!module_open) {
    if (cuda_driver_devices() == 0) return NULL;
    char path[4096];
    const char *forced = getenv("PPO_CUDA_MODULE");
    if (forced && *forced) {
      snprintf(path, sizeof path, "%s", forced);
    } else {
      ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
      char *slash = NULL;
      if (n > 0) path[n] = '\0', slash = strrchr(path, '/');
      if (!slash) {
        error_set("backend 'cuda': the CUDA backend module was not found: /proc/self/exe does not name this "
                  "program's folder; set PPO_CUDA_MODULE to the module's path (%s)",
                  PPO_CUDA_MODULE_NAME);
        return NULL;
      }
      snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "%s", PPO_CUDA_MODULE_NAME);
    }
    void *module = dlopen(path, RTLD_NOW | RTLD_LOCAL);  // never closed: backends of it may live until exit
    if (!module) {
      error_set("backend 'cuda': the CUDA backend module did not load (%s)", dlerror());
      return NULL;
    }
    module_open = (CudaModuleOpen)dlsym(module, CUDA_MODULE_ENTRY);
    if (!module_open) {
      error_set("backend 'cuda': %s has no %s (not this project's CUDA module)", path, CUDA_MODULE_ENTRY);
      return NULL;
    }
  }
  static const CudaModuleHost program = {sizeof(Backend), sizeof(BackendOps), error_set, check_fail, nn_dtype_size};
  return module_open(&program);
}
#else
static Backend *open_cuda(void) {
  error_set("backend 'cuda': this build has no CUDA support (configure with the CUDA toolkit); use cpu");
  return NULL;
}
#endif

static Backend *open_by_name(const char *name) {
  if (!name) {
    error_set("backend: no name given (allowed: cpu, cuda, auto)");
    return NULL;
  }
  if (strcmp(name, "cpu") == 0) return backend_cpu_open();
  if (strcmp(name, "cuda") == 0) return open_cuda();
  if (strcmp(name, "auto") == 0) {  // CUDA when this build has it and a device answers, else the CPU
    Backend *backend = open_cuda();
    if (backend) return backend;
    // Why CUDA is unavailable is no error here, but said: a GPU machine whose driver did not answer
    // would otherwise train on the CPU without a word. Once per process for the same reason (a
    // walk-forward evaluation opens a backend per fold).
    static char said[ERROR_MESSAGE_MAX];
    if (strcmp(said, error_message()) != 0) {
      log_write(LOG_LEVEL_INFO, "device = auto: the CPU backend (%s)", error_message());
      snprintf(said, sizeof said, "%s", error_message());
    }
    error_clear();
    return backend_cpu_open();
  }
  error_set("backend '%s': unknown (allowed: cpu, cuda, auto)", name);
  return NULL;
}

const char *backend_name(const Backend *backend) { return backend->name; }
const char *backend_describe(const Backend *backend) { return backend->describe; }

// One call of the table that reads or writes backend memory, with that memory open to it: a backend
// may keep its memory closed to the host otherwise (the CPU backend with PPO_CPU_STRICT=1, where a
// direct host access faults at the line that makes it, as it would be wrong on a GPU). Calls nest.
static void guard_enter(Backend *backend) {
  if (backend->ops->guard && backend->guard_depth++ == 0) backend->ops->guard(backend, 1);
}
static void guard_leave(Backend *backend) {
  if (backend->ops->guard && --backend->guard_depth == 0) backend->ops->guard(backend, 0);
}
// PPO_PROFILE=1 in the environment: every op call below is timed, and backend_close prints the
// backend's table: one row per op, then one per GEMM shape with its rate (op_profile_*). On an
// asynchronous backend the profiler waits before and after each op so that the time is the op's
// own, and backend_graph_run calls its function directly instead of replaying a graph: a profiled
// run is slower than a plain one, and its totals say where time goes, not how fast the product
// runs. Each backend keeps its own counts (Backend.profile); off, the cost is one predictable
// branch per call.
enum { OP_ROWS_MAX = 64, GEMM_SHAPES_MAX = 96, OP_NAME_MAX = 40 };

typedef struct {
  char name[OP_NAME_MAX];  // the op: the call's text up to its '('
  double seconds;
  unsigned long long count;
} OpRow;

typedef struct {
  NnDtype dtype;
  int trans_a, trans_b, M, N, K;
  double seconds;
  unsigned long long count;
} GemmShape;

struct OpProfile {
  OpRow ops[OP_ROWS_MAX];
  GemmShape gemms[GEMM_SHAPES_MAX];
  int n_ops, n_gemms;
  unsigned long long ops_dropped, gemms_dropped;  // calls of ops / shapes past the tables' room
};

static double op_profile_begin(Backend *backend) {
  if (!backend->profile) return 0.0;
  backend->ops->sync(backend);  // earlier work is not this op's (no graph is captured while profiling)
  return timer_now();
}

// Adds the op's time to its row; returns the seconds (0 when not profiling).
static double op_profile_end(Backend *backend, const char *call, double t0) {
  OpProfile *prof = backend->profile;
  if (!prof) return 0.0;
  backend->ops->sync(backend);
  double seconds = timer_now() - t0;
  size_t len = strcspn(call, "(");
  if (len >= OP_NAME_MAX) len = OP_NAME_MAX - 1;
  int i = 0;
  while (i < prof->n_ops && !(strncmp(prof->ops[i].name, call, len) == 0 && prof->ops[i].name[len] == '\0')) i++;
  if (i == prof->n_ops) {
    if (i == OP_ROWS_MAX) {
      prof->ops_dropped++;
      return seconds;
    }
    memcpy(prof->ops[i].name, call, len);
    prof->ops[i].name[len] = '\0';
    prof->n_ops++;
  }
  prof->ops[i].seconds += seconds;
  prof->ops[i].count++;
  return seconds;
}

// --- the signature of a recorded function (backend_graph_run) ----------------------------------------------
//
// While signing, every op's name and arguments (pointers, sizes, scalars, by value) are hashed
// (FNV-1a) into backend->signature. A recorded graph replays the first call's arguments; on the
// CPU every call runs fn, so backend_graph_run compares calls' signatures with the first's and
// refuses a function that would replay stale values on CUDA (a learning rate passed as an argument,
// a pointer that moves), on machines without a GPU too. Calls 2, 4, 8, ... are compared, not
// every one: hashing every op's arguments at every call cost CartPole 9 % of its steps/s (2-core
// machine); a value that changes between calls is still caught at the next power of two.

static void sign_bytes(Backend *backend, const void *p, size_t n) {
  const unsigned char *c = p;
  uint64_t h = backend->signature;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 0x100000001b3ull;
  backend->signature = h;
}

static void sign_text(Backend *backend, const char *text) {
  sign_bytes(backend, text, strlen(text) + 1);
  backend->signed_ops++;
}

// Structures field by field: their padding bytes are not values.
static void sign_adam_hyper(Backend *backend, const void *p, size_t n) {
  const AdamHyper *h = p;
  const double f[4] = {h->lr, h->beta1, h->beta2, h->eps};
  sign_bytes(backend, f, sizeof f);
  (void)n;
}

static void sign_ppo_hyper(Backend *backend, const void *p, size_t n) {
  const PpoLossHyper *h = p;
  const double f[5] = {h->clip_range, h->clip_range_vf, h->ent_coef, h->vf_coef, (double)h->normalize_advantage};
  sign_bytes(backend, f, sizeof f);
  (void)n;
}

#define SIGN_ARG(b, x)                                   \
  do {                                                   \
    __typeof__(x) sign_v_ = (x);                         \
    _Generic(sign_v_, AdamHyper                          \
             : sign_adam_hyper, PpoLossHyper             \
             : sign_ppo_hyper, default                   \
             : sign_bytes)(b, &sign_v_, sizeof sign_v_); \
  } while (0)
// SIGN_EACH(b, a1, ..., ak): SIGN_ARG of each, k <= 16.
#define SIGN_1(b, x) SIGN_ARG(b, x)
#define SIGN_2(b, x, ...) \
  SIGN_ARG(b, x);         \
  SIGN_1(b, __VA_ARGS__)
#define SIGN_3(b, x, ...) \
  SIGN_ARG(b, x);         \
  SIGN_2(b, __VA_ARGS__)
#define SIGN_4(b, x, ...) \
  SIGN_ARG(b, x);         \
  SIGN_3(b, __VA_ARGS__)
#define SIGN_5(b, x, ...) \
  SIGN_ARG(b, x);         \
  SIGN_4(b, __VA_ARGS__)
#define SIGN_6(b, x, ...) \
  SIGN_ARG(b, x);         \
  SIGN_5(b, __VA_ARGS__)
#define SIGN_7(b, x, ...) \
  SIGN_ARG(b, x);         \
  SIGN_6(b, __VA_ARGS__)
#define SIGN_8(b, x, ...) \
  SIGN_ARG(b, x);         \
  SIGN_7(b, __VA_ARGS__)
#define SIGN_9(b, x, ...) \
  SIGN_ARG(b, x);         \
  SIGN_8(b, __VA_ARGS__)
#define SIGN_10(b, x, ...) \
  SIGN_ARG(b, x);          \
  SIGN_9(b, __VA_ARGS__)
#define SIGN_11(b, x, ...) \
  SIGN_ARG(b, x);          \
  SIGN_10(b, __VA_ARGS__)
#define SIGN_12(b, x, ...) \
  SIGN_ARG(b, x);          \
  SIGN_11(b, __VA_ARGS__)
#define SIGN_13(b, x, ...) \
  SIGN_ARG(b, x);          \
  SIGN_12(b, __VA_ARGS__)
#define SIGN_14(b, x, ...) \
  SIGN_ARG(b, x);          \
  SIGN_13(b, __VA_ARGS__)
#define SIGN_15(b, x, ...) \
  SIGN_ARG(b, x);          \
  SIGN_14(b, __VA_ARGS__)
#define SIGN_16(b, x, ...) \
  SIGN_ARG(b, x);          \
  SIGN_15(b, __VA_ARGS__)
#define SIGN_COUNT(...) SIGN_PICK(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define SIGN_PICK(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, n, ...) n
#define SIGN_CAT(a, b) SIGN_CAT_(a, b)
#define SIGN_CAT_(a, b) a##b
#define SIGN_EACH(b, ...) SIGN_CAT(SIGN_, SIGN_COUNT(__VA_ARGS__))(b, __VA_ARGS__)

// One op through the table: the guard, the signature while recording, the profile (PPO_PROFILE).
#define OP(backend, name, ...)                  \
  do {                                          \
    guard_enter(backend);                       \
    if ((backend)->signing) {                   \
      sign_text(backend, #name);                \
      SIGN_EACH(backend, __VA_ARGS__);          \
    }                                           \
    double t0_ = op_profile_begin(backend);     \
    (backend)->ops->name(backend, __VA_ARGS__); \
    (void)op_profile_end(backend, #name, t0_);  \
    guard_leave(backend);                       \
  } while (0)

static void gemm_profile_add(OpProfile *prof, NnDtype dtype, int trans_a, int trans_b, int M, int N, int K,
                             double seconds) {
  int i = 0;
  while (i < prof->n_gemms) {
    const GemmShape *g = &prof->gemms[i];
    if (g->dtype == dtype && g->trans_a == trans_a && g->trans_b == trans_b && g->M == M && g->N == N && g->K == K)
      break;
    i++;
  }
  if (i == prof->n_gemms) {
    if (i == GEMM_SHAPES_MAX) {
      prof->gemms_dropped++;
      return;
    }
    prof->gemms[i] = (GemmShape){dtype, trans_a, trans_b, M, N, K, 0.0, 0};
    prof->n_gemms++;
  }
  prof->gemms[i].seconds += seconds;
  prof->gemms[i].count++;
}

static int by_op_seconds(const void *a, const void *b) {
  double x = ((const OpRow *)a)->seconds, y = ((const OpRow *)b)->seconds;
  return (x < y) - (x > y);  // largest first
}

static int by_gemm_seconds(const void *a, const void *b) {
  double x = ((const GemmShape *)a)->seconds, y = ((const GemmShape *)b)->seconds;
  return (x < y) - (x > y);
}

static void op_profile_report(const Backend *backend) {
  OpProfile *prof = backend->profile;
  qsort(prof->ops, (size_t)prof->n_ops, sizeof prof->ops[0], by_op_seconds);
  qsort(prof->gemms, (size_t)prof->n_gemms, sizeof prof->gemms[0], by_gemm_seconds);
  double total = 0.0;
  for (int i = 0; i < prof->n_ops; i++) total += prof->ops[i].seconds;
  fprintf(stderr, "PPO_PROFILE: backend %s, %.3f s in ops (each timed from a wait to a wait)\n", backend->name, total);
  fprintf(stderr, "  %-24s %12s %10s %12s %7s\n", "op", "calls", "seconds", "us/call", "share");
  for (int i = 0; i < prof->n_ops; i++) {
    const OpRow *r = &prof->ops[i];
    fprintf(stderr, "  %-24s %12llu %10.3f %12.2f %6.1f%%\n", r->name, r->count, r->seconds,
            1e6 * r->seconds / (double)r->count, total > 0 ? 100.0 * r->seconds / total : 0.0);
  }
  if (prof->ops_dropped) fprintf(stderr, "  (%llu calls of further ops not listed)\n", prof->ops_dropped);
  if (!prof->n_gemms) return;
  fprintf(stderr, "  gemm by shape (C[M x N] = op(A)[M x K] op(B)[K x N]; t = transposed operand):\n");
  fprintf(stderr, "  %-6s %-24s %12s %10s %12s %10s\n", "dtype", "M x N x K", "calls", "seconds", "us/call", "GFLOP/s");
  for (int i = 0; i < prof->n_gemms; i++) {
    const GemmShape *g = &prof->gemms[i];
    char shape[48];
    snprintf(shape, sizeof shape, "%dx%dx%d%s%s", g->M, g->N, g->K, g->trans_a ? " At" : "", g->trans_b ? " Bt" : "");
    double flops = 2.0 * g->M * g->N * g->K * (double)g->count;
    fprintf(stderr, "  %-6s %-24s %12llu %10.3f %12.2f %10.1f\n", nn_dtype_name(g->dtype), shape, g->count, g->seconds,
            1e6 * g->seconds / (double)g->count, g->seconds > 0 ? flops / g->seconds / 1e9 : 0.0);
  }
  if (prof->gemms_dropped) fprintf(stderr, "  (%llu calls of further shapes not listed)\n", prof->gemms_dropped);
}

// The members a backend may leave NULL: the wrappers test them (a fallback, or a message).
static const size_t optional_ops[] = {offsetof(BackendOps, set_tf32),         offsetof(BackendOps, lanes_together),
                                      offsetof(BackendOps, run_lanes),        offsetof(BackendOps, weights_changed),
                                      offsetof(BackendOps, weights_bytes),    offsetof(BackendOps, advantage_count_sum),
                                      offsetof(BackendOps, advantage_sq_dev), offsetof(BackendOps, advantage_normalize),
                                      offsetof(BackendOps, graph_record),     offsetof(BackendOps, graph_launch),
                                      offsetof(BackendOps, graph_destroy),    offsetof(BackendOps, host_alloc),
                                      offsetof(BackendOps, host_free),        offsetof(BackendOps, guard),
                                      offsetof(BackendOps, comm_id_bytes),    offsetof(BackendOps, comm_make_id),
                                      offsetof(BackendOps, comm_join),        offsetof(BackendOps, allreduce_sum_f32),
                                      offsetof(BackendOps, allreduce_sum_f64)};

typedef void (*AnyOp)(void);
_Static_assert(sizeof(BackendOps) % sizeof(AnyOp) == 0, "BackendOps holds function pointers only");

int backend_ops_missing(const BackendOps *ops) {
  for (size_t at = 0; at < sizeof *ops; at += sizeof(AnyOp)) {
    AnyOp fn;
    memcpy(&fn, (const char *)ops + at, sizeof fn);
    bool optional = false;
    for (size_t k = 0; k < sizeof optional_ops / sizeof optional_ops[0]; k++) optional |= optional_ops[k] == at;
    if (!fn && !optional) return (int)(at / sizeof(AnyOp));
  }
  return -1;
}

Backend *backend_open(const char *name) {
  Backend *backend = open_by_name(name);
  CHECK(!backend || backend_ops_missing(backend->ops) < 0,
        "the backend's BackendOps table lacks a required member (test_nn_ops and test_cuda_module name it)");
  const char *profile = getenv("PPO_PROFILE");
  if (backend && profile && *profile && strcmp(profile, "0") != 0)
    backend->profile = CHECK_ALLOC(sizeof *backend->profile, "PPO_PROFILE's tables");
  if (backend && backend->profile) memset(backend->profile, 0, sizeof *backend->profile);
  return backend;
}

void backend_close(Backend *backend) {
  if (!backend) return;
  OpProfile *prof = backend->profile;
  if (prof) op_profile_report(backend);
  backend->ops->close(backend);
  free(prof);
}

// The calls a graph cannot hold (backend_graph_run): a host wait, an upload, an allocation.
#define CHECK_NOT_RECORDING(backend, what) \
  CHECK(!(backend)->recording, what " inside backend_graph_run: a recorded function may only queue ops")

void *backend_alloc(Backend *backend, size_t bytes) {
  CHECK(backend, "backend_alloc needs an open backend");
  CHECK_NOT_RECORDING(backend, "backend_alloc");
  backend->alloc_count++;
  return backend->ops->alloc(backend, bytes);
}

void backend_free(Backend *backend, void *ptr) {
  if (!ptr) return;
  CHECK_NOT_RECORDING(backend, "backend_free");  // cudaFree during a capture invalidates it
  backend->ops->free(backend, ptr);
}

void *backend_host_alloc(Backend *backend, size_t bytes) {
  CHECK(backend, "backend_host_alloc needs an open backend");
  CHECK_NOT_RECORDING(backend, "backend_host_alloc");
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  void *ptr = backend->ops->host_alloc ? backend->ops->host_alloc(backend, rounded) : aligned_alloc(64, rounded);
  CHECK(ptr, "out of host memory (page-locked buffers): reduce n_envs");
  memset(ptr, 0, rounded);
  return ptr;
}

void backend_host_free(Backend *backend, void *ptr) {
  if (!ptr) return;
  CHECK_NOT_RECORDING(backend, "backend_host_free");
  if (backend->ops->host_free)
    backend->ops->host_free(backend, ptr);
  else
    free(ptr);
}

size_t backend_alloc_count(const Backend *backend) { return backend->alloc_count; }
size_t backend_sync_count(const Backend *backend) { return backend->sync_count; }

void backend_upload(Backend *backend, void *dst, const void *host_src, size_t bytes) {
  CHECK(backend && (bytes == 0 || (dst && host_src)), "backend_upload: NULL pointer");
  CHECK_NOT_RECORDING(backend, "backend_upload");
  OP(backend, upload, dst, host_src, bytes);
}

void backend_download(Backend *backend, void *host_dst, const void *src, size_t bytes) {
  CHECK(backend && (bytes == 0 || (host_dst && src)), "backend_download: NULL pointer");
  CHECK_NOT_RECORDING(backend, "backend_download");
  backend->sync_count++;
  OP(backend, download, host_dst, src, bytes);
}

void backend_memset_zero(Backend *backend, void *dst, size_t bytes) {
  CHECK(backend && (bytes == 0 || dst), "backend_memset_zero: NULL pointer");
  OP(backend, memset_zero, dst, bytes);
}

void backend_copy(Backend *backend, void *dst, const void *src, size_t bytes) {
  CHECK(backend && (bytes == 0 || (dst && src)), "backend_copy: NULL pointer");
  OP(backend, copy, dst, src, bytes);
}

void backend_copy_rows(Backend *backend, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                       size_t row_bytes, size_t rows) {
  CHECK(backend && dst_pitch >= row_bytes && src_pitch >= row_bytes, "backend_copy_rows: a pitch below row_bytes");
  if (row_bytes == 0 || rows == 0) return;
  CHECK(dst && src, "backend_copy_rows: NULL pointer");
  uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
  uintptr_t d_end = d + (rows - 1) * dst_pitch + row_bytes, s_end = s + (rows - 1) * src_pitch + row_bytes;
  CHECK(d_end <= s || s_end <= d, "backend_copy_rows: source and destination overlap");
  OP(backend, copy_rows, dst, dst_pitch, src, src_pitch, row_bytes, rows);
}

int backend_memory_info(Backend *backend, size_t *free_bytes, size_t *total_bytes) {
  CHECK(backend && free_bytes && total_bytes, "backend_memory_info: NULL pointer");
  CHECK_NOT_RECORDING(backend, "backend_memory_info");
  backend->sync_count++;
  return backend->ops->memory_info(backend, free_bytes, total_bytes);
}

void backend_sync(Backend *backend) {
  CHECK_NOT_RECORDING(backend, "backend_sync");
  backend->sync_count++;
  backend->ops->sync(backend);
}

void backend_reserve_workspace(Backend *backend, size_t bytes) {
  CHECK_NOT_RECORDING(backend, "backend_reserve_workspace");
  backend->ops->reserve_workspace(backend, bytes);
}

size_t backend_workspace_bytes(const Backend *backend) {
  CHECK(backend, "backend_workspace_bytes needs an open backend");
  return backend->ops->workspace_bytes(backend);
}

size_t backend_comm_id_bytes(const Backend *backend) {
  return backend->ops->comm_id_bytes ? backend->ops->comm_id_bytes(backend) : 0;
}

int backend_comm_make_id(Backend *backend, void *id) {
  CHECK(id, "backend_comm_make_id: NULL id");
  if (!backend->ops->comm_make_id) {
    error_set("backend '%s' has no collectives across processes", backend->name);
    return -1;
  }
  return backend->ops->comm_make_id(backend, id);
}

int backend_comm_join(Backend *backend, const void *id, int rank, int size) {
  CHECK(id && size >= 1 && rank >= 0 && rank < size, "backend_comm_join: bad argument");
  if (!backend->ops->comm_join) {
    error_set("backend '%s' has no collectives across processes", backend->name);
    return -1;
  }
  int rc = backend->ops->comm_join(backend, id, rank, size);
  backend->comm_joined = rc == 0;
  return rc;
}

void backend_allreduce_sum_f32(Backend *backend, float *x, size_t n) {
  CHECK(backend->comm_joined, "backend_allreduce_sum_f32 before backend_comm_join");
  CHECK(n == 0 || x, "backend_allreduce_sum_f32: NULL pointer");
  if (n) OP(backend, allreduce_sum_f32, x, n);
}

void backend_allreduce_sum_f64(Backend *backend, double *x, size_t n) {
  CHECK(backend->comm_joined, "backend_allreduce_sum_f64 before backend_comm_join");
  CHECK(n == 0 || x, "backend_allreduce_sum_f64: NULL pointer");
  if (n) OP(backend, allreduce_sum_f64, x, n);
}

#define FNV_OFFSET 0xcbf29ce484222325ull

// The ops and arguments just signed: they become the graph's signature at its first signing, and
// must equal it at every later one.
static void settle_signature(Backend *backend, BackendGraph *graph) {
  if (graph->ops == 0) {
    graph->signature = backend->signature, graph->ops = backend->signed_ops;
    return;
  }
  if (graph->signature != backend->signature || graph->ops != backend->signed_ops) {
    char hint[512];
    snprintf(hint, sizeof hint,
             "backend_graph_run: the function queued other ops or arguments (pointers, sizes, scalars) than at its "
             "first call (%zu ops then, %zu now); a recorded graph replays the first call's: keep a value that "
             "changes in backend memory, or backend_graph_reset before the call",
             graph->ops, backend->signed_ops);
    check_fail("the same ops and arguments at every call", __FILE__, __LINE__, hint, 0);
  }
}

// fn run as a recording, eagerly (every CPU call, CUDA's first): signed at calls 1, 2, 4, 8, ...
static void record_signed(Backend *backend, BackendGraph *graph, void (*fn)(void *arg), void *arg) {
  uint64_t call = ++graph->calls;
  backend->signing = (call & (call - 1)) == 0;  // calls 1, 2, 4, 8, ...
  backend->recording = 1;
  backend->signature = FNV_OFFSET, backend->signed_ops = 0;
  fn(arg);
  backend->recording = 0;
  if (!backend->signing) return;
  backend->signing = 0;
  settle_signature(backend, graph);
}

void backend_graph_run(Backend *backend, BackendGraph *graph, void (*fn)(void *arg), void *arg) {
  CHECK(backend && graph && fn, "backend_graph_run: NULL argument");
  CHECK_NOT_RECORDING(backend, "backend_graph_run");
  CHECK(!backend->lane_view, "backend_graph_run inside a lane (backend_lanes): a lane only queues ops");
  const BackendOps *ops = backend->ops;
  if (!ops->graph_record || backend->profile) {  // the CPU: every call is a recording, so every call
                                                 // checks the contract (and PPO_PROFILE times each op)
    record_signed(backend, graph, fn, arg);
    return;
  }
  if (!graph->exec && graph->calls == 0) {
    // The first call runs eagerly, signed: each kernel it launches and each cuBLAS path it takes is
    // loaded and set up outside a capture (the warm-up torch.cuda.graphs asks for too), and the
    // recording at the second call must queue the same ops and arguments.
    record_signed(backend, graph, fn, arg);
    return;
  }
  if (!graph->exec) {
    graph->calls++;
    backend->recording = backend->signing = 1;
    backend->signature = FNV_OFFSET, backend->signed_ops = 0;
    graph->exec = ops->graph_record(backend, fn, arg);
    backend->recording = backend->signing = 0;
    backend->graphs++;
    settle_signature(backend, graph);
  }
  ops->graph_launch(backend, graph->exec);
}

// --- lanes ----------------------------------------------------------------------------------------------------
//
// Lanes that may run together, or that are being signed, each get a copy of the Backend struct
// (same table, same ctx) whose counters and signature are its own, so that concurrent lanes write no
// common field here; after the lanes the copies' counts are added to the backend's and their
// signatures signed into it in lane order, which gives a recorded function the same signature
// whether the lanes ran one after the other or together. Otherwise (most calls: large networks,
// CUDA, one env's rollout step) the lanes run on the backend itself, one after the other.

typedef struct {
  Backend view[BACKEND_LANES_MAX];
  BackendLaneFn fn;
  void *arg;
} LaneRun;

static void lane_run(int lane, void *p) {
  LaneRun *run = p;
  run->fn(&run->view[lane], run->arg, lane);
}

void backend_lanes(Backend *backend, int lanes, BackendLaneFn fn, void *arg, NnDtype dtype, double largest_gemm_macs) {
  CHECK(backend && fn, "backend_lanes: NULL argument");
  CHECK(lanes >= 1 && lanes <= BACKEND_LANES_MAX, "backend_lanes: lanes must be in 1..BACKEND_LANES_MAX");
  CHECK(!backend->lane_view, "backend_lanes inside a lane: lanes do not nest");
  const BackendOps *ops = backend->ops;
  int together = lanes > 1 && !backend->profile && ops->lanes_together &&
                 ops->lanes_together(backend, lanes, dtype, largest_gemm_macs);
  if (!together && !backend->signing) {
    backend->lane_view = 1;  // (what a lane may not do is refused here too)
    for (int i = 0; i < lanes; i++) fn(backend, arg, i);
    backend->lane_view = 0;
    return;
  }
  LaneRun run = {.fn = fn, .arg = arg};
  for (int i = 0; i < lanes; i++) {
    Backend *v = &run.view[i];
    *v = *backend;
    v->lane_view = 1;
    v->alloc_count = 0, v->sync_count = 0;
    v->signature = FNV_OFFSET, v->signed_ops = 0;
  }
  if (together)
    backend->lanes_together += (size_t)ops->run_lanes(backend, lanes, lane_run, &run);
  else
    for (int i = 0; i < lanes; i++) lane_run(i, &run);
  for (int i = 0; i < lanes; i++) {
    const Backend *v = &run.view[i];
    backend->alloc_count += v->alloc_count;
    backend->sync_count += v->sync_count;
    if (!backend->signing) continue;
    sign_bytes(backend, &v->signature, sizeof v->signature);
    backend->signed_ops += v->signed_ops;
  }
}

size_t backend_lanes_together(const Backend *backend) { return backend->lanes_together; }

void backend_graph_reset(Backend *backend, BackendGraph *graph) {
  CHECK(backend && graph, "backend_graph_reset: NULL argument");
  CHECK(!backend->lane_view, "backend_graph_reset inside a lane (backend_lanes): a lane only queues ops");
  if (graph->exec) {
    backend->ops->graph_destroy(backend, graph->exec);
    backend->graphs--;
  }
  graph->exec = NULL;
  graph->signature = 0, graph->ops = 0, graph->calls = 0;
}

void backend_set_tf32(Backend *backend, int allow) {
  CHECK(backend, "backend_set_tf32 needs an open backend");
  // A recorded graph's GEMMs keep the compute type they were recorded with, and its signature does
  // not hold the setting: a change now would reach only eager calls.
  CHECK(backend->graphs == 0,
        "backend_set_tf32 while recorded graphs are alive: they keep the setting they were "
        "recorded with (backend_graph_reset them first)");
  if (backend->ops->set_tf32) backend->ops->set_tf32(backend, allow);
}

void backend_gemm(Backend *backend, NnDtype dtype, int trans_a, int trans_b, int M, int N, int K, float alpha,
                  const void *A, const void *B, float beta, float *C) {
  backend_gemm_to(backend, dtype, trans_a, trans_b, M, N, K, alpha, A, B, beta, C, NN_F32);
}

void backend_gemm_to(Backend *backend, NnDtype dtype, int trans_a, int trans_b, int M, int N, int K, float alpha,
                     const void *A, const void *B, float beta, void *C, NnDtype c_dtype) {
  CHECK(backend && M >= 0 && N >= 0 && K >= 0, "backend_gemm: negative size");
  CHECK(dtype == NN_F32 || dtype == NN_F16 || dtype == NN_BF16, "backend_gemm: unknown dtype");
  CHECK(c_dtype == NN_F32 || (c_dtype == dtype && beta == 0.0f),
        "backend_gemm_to: C is fp32, or of the operands' dtype with beta 0");
  if (M == 0 || N == 0) return;
  CHECK(C && (K == 0 || (A && B)), "backend_gemm: NULL operand");
  guard_enter(backend);  // OP written out: the time also goes to its shape's row
  if (backend->signing) {
    sign_text(backend, "gemm");
    SIGN_EACH(backend, dtype, trans_a, trans_b, M, N, K, alpha, A, B, beta, C, c_dtype);
  }
  double t0 = op_profile_begin(backend);
  backend->ops->gemm(backend, dtype, trans_a != 0, trans_b != 0, M, N, K, alpha, A, B, beta, C, c_dtype);
  double seconds = op_profile_end(backend, "gemm", t0);
  guard_leave(backend);
  if (backend->profile) gemm_profile_add(backend->profile, dtype, trans_a != 0, trans_b != 0, M, N, K, seconds);
}

void backend_weights_changed(Backend *backend, const void *w, NnDtype dtype, int rows, int cols) {
  CHECK(backend && w && rows > 0 && cols > 0, "backend_weights_changed: NULL matrix or empty shape");
  CHECK(dtype == NN_F32 || dtype == NN_F16 || dtype == NN_BF16, "backend_weights_changed: unknown dtype");
  if (backend->ops->weights_changed) OP(backend, weights_changed, w, dtype, rows, cols);
}

size_t backend_weights_bytes(Backend *backend, NnDtype dtype, int rows, int cols) {
  CHECK(backend && rows > 0 && cols > 0, "backend_weights_bytes: empty shape");
  return backend->ops->weights_bytes ? backend->ops->weights_bytes(backend, dtype, rows, cols) : 0;
}

static void check_act(int act) { CHECK(act >= NN_ACT_NONE && act < NN_ACT_COUNT, "unknown activation"); }

void backend_bias_act_forward(Backend *backend, void *out, NnDtype out_dtype, const float *in, const float *bias, int B,
                              int H, int act) {
  CHECK(backend && out && in && bias && B >= 0 && H >= 0, "backend_bias_act_forward: bad argument");
  CHECK(out_dtype <= NN_BF16, "backend_bias_act_forward: unknown dtype");
  check_act(act);
  OP(backend, bias_act_forward, out, out_dtype, in, bias, B, H, act);
}

void backend_bias_act_backward(Backend *backend, void *din, NnDtype din_dtype, float *dbias, const void *dout,
                               NnDtype dout_dtype, const void *out, NnDtype out_dtype, int B, int H, int act) {
  CHECK(backend && din && dbias && dout && out && B >= 0 && H >= 0, "backend_bias_act_backward: bad argument");
  CHECK(din_dtype <= NN_BF16 && dout_dtype <= NN_BF16 && out_dtype <= NN_BF16,
        "backend_bias_act_backward: unknown dtype");
  CHECK(din != dout || din_dtype == dout_dtype, "backend_bias_act_backward: din aliases dout of another dtype");
  check_act(act);
  OP(backend, bias_act_backward, din, NULL, din_dtype, dbias, dout, dout_dtype, out, out_dtype, B, H, act);
}

void backend_bias_act_backward_t(Backend *backend, void *din, void *din_t, NnDtype din_dtype, float *dbias,
                                 const void *dout, NnDtype dout_dtype, const void *out, NnDtype out_dtype, int B, int H,
                                 int act) {
  CHECK(backend && din_t && dbias && dout && out && B >= 0 && H >= 0, "backend_bias_act_backward_t: bad argument");
  CHECK(din_dtype <= NN_BF16 && dout_dtype <= NN_BF16 && out_dtype <= NN_BF16,
        "backend_bias_act_backward_t: unknown dtype");
  CHECK(din_t != din && din_t != dout, "backend_bias_act_backward_t: din_t must not alias din or dout");
  CHECK(din != dout || din_dtype == dout_dtype, "backend_bias_act_backward_t: din aliases dout of another dtype");
  check_act(act);
  OP(backend, bias_act_backward, din, din_t, din_dtype, dbias, dout, dout_dtype, out, out_dtype, B, H, act);
}

void backend_categorical_forward(Backend *backend, float *logp, float *entropy, const float *logits,
                                 const float *actions, int B, int A) {
  CHECK(backend && logp && logits && actions && B >= 0 && A >= 1, "backend_categorical_forward: bad argument");
  OP(backend, categorical_forward, logp, entropy, logits, actions, B, A);
}

void backend_categorical_backward(Backend *backend, float *dlogits, const float *dlogp, const float *dentropy,
                                  const float *logits, const float *actions, int B, int A) {
  CHECK(backend && dlogits && dlogp && logits && actions && B >= 0 && A >= 1,
        "backend_categorical_backward: bad argument");
  OP(backend, categorical_backward, dlogits, dlogp, dentropy, logits, actions, B, A);
}

void backend_categorical_sample(Backend *backend, float *actions, float *logp, const float *logits,
                                const float *uniforms, int B, int A) {
  CHECK(backend && actions && logits && uniforms && B >= 0 && A >= 1, "backend_categorical_sample: bad argument");
  OP(backend, categorical_sample, actions, logp, logits, uniforms, B, A);
}

void backend_gaussian_forward(Backend *backend, float *logp, float *entropy, const float *mean, const float *log_std,
                              const float *actions, int B, int A) {
  CHECK(backend && logp && mean && log_std && actions && B >= 0 && A >= 1, "backend_gaussian_forward: bad argument");
  OP(backend, gaussian_forward, logp, entropy, mean, log_std, actions, B, A);
}

void backend_gaussian_backward(Backend *backend, float *dmean, float *dlog_std, const float *dlogp,
                               const float *dentropy, const float *mean, const float *log_std, const float *actions,
                               int B, int A) {
  CHECK(backend && dmean && dlog_std && dlogp && mean && log_std && actions && B >= 0 && A >= 1,
        "backend_gaussian_backward: bad argument");
  OP(backend, gaussian_backward, dmean, dlog_std, dlogp, dentropy, mean, log_std, actions, B, A);
}

void backend_gaussian_sample(Backend *backend, float *actions, float *logp, const float *mean, const float *log_std,
                             const float *uniforms, int B, int A) {
  CHECK(backend && actions && mean && log_std && uniforms && B >= 0 && A >= 1, "backend_gaussian_sample: bad argument");
  OP(backend, gaussian_sample, actions, logp, mean, log_std, uniforms, B, A);
}

void backend_mse_forward(Backend *backend, float *loss, const float *pred, const float *target, int B) {
  CHECK(backend && loss && pred && target && B >= 1, "backend_mse_forward: bad argument");
  OP(backend, mse_forward, loss, pred, target, B);
}

void backend_mse_backward(Backend *backend, float *dpred, const float *dloss, const float *pred, const float *target,
                          int B) {
  CHECK(backend && dpred && dloss && pred && target && B >= 1, "backend_mse_backward: bad argument");
  OP(backend, mse_backward, dpred, dloss, pred, target, B);
}

void backend_gather_rows(Backend *backend, void *out, const void *src, const int32_t *index, int B, size_t row_bytes,
                         int rows) {
  CHECK(backend && out && src && index && B >= 0 && rows >= 0, "backend_gather_rows: bad argument");
  OP(backend, gather_rows, out, src, index, B, row_bytes, rows);
}

void backend_cast(Backend *backend, void *out, NnDtype to, const void *in, NnDtype from, size_t n) {
  CHECK(backend && (n == 0 || (out && in)), "backend_cast: NULL pointer");
  CHECK(to <= NN_BF16 && from <= NN_BF16, "backend_cast: unknown dtype");
  OP(backend, cast, out, to, in, from, n);
}

void backend_scale(Backend *backend, float *x, float alpha, size_t n) {
  CHECK(backend && (n == 0 || x), "backend_scale: NULL pointer");
  OP(backend, scale, x, alpha, n);
}

void backend_scale_by(Backend *backend, float *x, const float *alpha, size_t n) {
  CHECK(backend && alpha && (n == 0 || x), "backend_scale_by: NULL pointer");
  OP(backend, scale_by, x, alpha, n);
}

void backend_global_norm(Backend *backend, float *total, const float *x, size_t n) {
  CHECK(backend && total && (n == 0 || x), "backend_global_norm: NULL pointer");
  OP(backend, global_norm, total, x, n);
}

void backend_clip_grad_norm(Backend *backend, float *total, float *x, size_t n, float max_norm) {
  CHECK(backend && (n == 0 || x) && max_norm > 0.0f, "backend_clip_grad_norm: bad argument");
  OP(backend, clip_grad_norm, total, x, n, max_norm);
}

void backend_unscale_check(Backend *backend, float *x, size_t n, size_t n_fp16, const float *scale, float *found_inf) {
  CHECK(backend && (n == 0 || x) && scale && found_inf, "backend_unscale_check: NULL pointer");
  OP(backend, unscale_check, x, n, n_fp16, scale, found_inf);
}

void backend_grad_scaler_update(Backend *backend, float *scale, int32_t *tracker, const float *found_inf,
                                double growth_factor, double backoff_factor, int32_t growth_interval) {
  CHECK(backend && scale && tracker && found_inf, "backend_grad_scaler_update: NULL pointer");
  CHECK(growth_factor > 1.0 && backoff_factor > 0.0 && backoff_factor < 1.0 && growth_interval > 0,
        "backend_grad_scaler_update: growth > 1, 0 < backoff < 1, interval > 0");
  OP(backend, grad_scaler_update, scale, tracker, found_inf, growth_factor, backoff_factor, growth_interval);
}

void backend_clip_coef(Backend *backend, float *total, float *coef, const float *x, size_t n, float max_norm) {
  CHECK(backend && total && coef && (n == 0 || x) && max_norm > 0.0f, "backend_clip_coef: bad argument");
  OP(backend, clip_coef, total, coef, x, n, max_norm);
}

void backend_unscale_clip_coef(Backend *backend, float *x, size_t n, size_t n_fp16, const float *scale,
                               float *found_inf, float *total, float *coef, float max_norm) {
  CHECK(backend && (n == 0 || x) && scale && found_inf && total && coef, "backend_unscale_clip_coef: NULL pointer");
  OP(backend, unscale_clip_coef, x, n, n_fp16, scale, found_inf, total, coef, max_norm);
}

void backend_adam_step(Backend *backend, float *params, const float *grads, float *m, float *v, size_t n,
                       AdamHyper hyper, const double *lr_scale, int32_t *step, const float *found_inf,
                       const float *grad_scale, void *params_lp, NnDtype lp_dtype) {
  CHECK(backend && step && (n == 0 || (params && grads && m && v)), "backend_adam_step: NULL pointer");
  CHECK(hyper.beta1 >= 0.0f && hyper.beta1 < 1.0f && hyper.beta2 >= 0.0f && hyper.beta2 < 1.0f && hyper.eps >= 0.0f,
        "backend_adam_step: betas in [0, 1), eps >= 0");
  CHECK(lp_dtype <= NN_BF16, "backend_adam_step: unknown dtype");
  OP(backend, adam_step, params, grads, m, v, n, hyper, lr_scale, step, found_inf, grad_scale, params_lp, lp_dtype);
}

void backend_uniform(Backend *backend, float *out, size_t n, uint64_t seed, uint64_t subsequence, uint64_t offset) {
  CHECK(backend && (n == 0 || out), "backend_uniform: NULL pointer");
  OP(backend, uniform, out, n, seed, subsequence, offset);
}

void backend_gae(Backend *backend, float *advantages, float *returns, const float *rewards, const float *values,
                 const float *episode_starts, const float *last_values, const float *last_dones, int T, int N,
                 double gamma, double lambda) {
  CHECK(backend && T >= 0 && N >= 0, "backend_gae: bad argument");
  CHECK(
      (T == 0 || N == 0) || (advantages && returns && rewards && values && episode_starts && last_values && last_dones),
      "backend_gae: NULL pointer");
  CHECK(gamma >= 0.0 && gamma <= 1.0 && lambda >= 0.0 && lambda <= 1.0, "backend_gae: gamma and lambda in [0, 1]");
  OP(backend, gae, advantages, returns, rewards, values, episode_starts, last_values, last_dones, T, N, gamma, lambda);
}

size_t backend_permutation_scratch_bytes(const Backend *backend, size_t n) {
  CHECK(backend, "backend_permutation_scratch_bytes: NULL backend");
  return backend->ops->permutation_scratch_bytes(backend, n);
}

void backend_permutation(Backend *backend, int32_t *perm, void *scratch, size_t n, uint64_t seed, uint64_t subsequence,
                         uint64_t offset) {
  CHECK(backend && (n == 0 || (perm && scratch)), "backend_permutation: NULL pointer");
  CHECK(n < ((size_t)1 << 31), "backend_permutation: n < 2^31");
  OP(backend, permutation, perm, scratch, n, seed, subsequence, offset);
}

void backend_ppo_loss(Backend *backend, float *stats, float *dlogp, float *dentropy, float *dvalues, const float *logp,
                      const float *entropy, const float *values, const float *old_logp, const float *old_values,
                      const float *advantages, const float *returns, int B, PpoLossHyper hyper,
                      const float *loss_scale) {
  CHECK(backend && stats && B >= 1, "backend_ppo_loss: bad argument");
  CHECK(dlogp && dentropy && dvalues && logp && entropy && values && old_logp && old_values && advantages && returns,
        "backend_ppo_loss: NULL pointer");
  CHECK(hyper.clip_range > 0.0f, "backend_ppo_loss: clip_range > 0");
  OP(backend, ppo_loss, stats, dlogp, dentropy, dvalues, logp, entropy, values, old_logp, old_values, advantages,
     returns, B, hyper, loss_scale);
}

void backend_explained_variance(Backend *backend, double *moments, const float *pred, const float *target, size_t n) {
  CHECK(backend && moments && (n == 0 || (pred && target)), "backend_explained_variance: NULL pointer");
  OP(backend, explained_variance, moments, pred, target, n);
}

// The multi-rank advantage ops are optional in a backend's table: a backend without them cannot
// train across ranks with normalize_advantage, and says so instead of crashing.
static void check_advantage_ops(const Backend *backend, const void *op, const char *name) {
  if (!op) {
    error_set("%s: the %s backend has no multi-rank advantage normalisation yet", name, backend->name);
    check_fail("op != NULL", __FILE__, __LINE__, error_message(), 0);
  }
}

void backend_advantage_count_sum(Backend *backend, double *count_sum, const float *advantages, int B) {
  CHECK(backend && count_sum && advantages && B >= 1, "backend_advantage_count_sum: bad argument");
  check_advantage_ops(backend, (const void *)backend->ops->advantage_count_sum, "backend_advantage_count_sum");
  OP(backend, advantage_count_sum, count_sum, advantages, B);
}

void backend_advantage_sq_dev(Backend *backend, double *sq_dev, const float *advantages, int B,
                              const double *count_sum) {
  CHECK(backend && sq_dev && advantages && count_sum && B >= 1, "backend_advantage_sq_dev: bad argument");
  check_advantage_ops(backend, (const void *)backend->ops->advantage_sq_dev, "backend_advantage_sq_dev");
  OP(backend, advantage_sq_dev, sq_dev, advantages, B, count_sum);
}

void backend_advantage_normalize(Backend *backend, float *advantages, int B, const double *count_sum,
                                 const double *sq_dev) {
  CHECK(backend && advantages && count_sum && sq_dev && B >= 1, "backend_advantage_normalize: bad argument");
  check_advantage_ops(backend, (const void *)backend->ops->advantage_normalize, "backend_advantage_normalize");
  OP(backend, advantage_normalize, advantages, B, count_sum, sq_dev);
}
