// envs/vecenv.c: N envs stepped with OpenMP (see vecenv.h).
//
// Memory: one allocation holds the VecEnv, the N env states (stride rounded up to 64 bytes and the
// first state 64-byte aligned, so two threads never write to one cache line), N step-result slots
// (each on its own 64-byte lines: reward, flags, pending episode log) and the ring of K logs.
// Legend: N envs, O obs dim, A action dim, L log fields, K ring capacity.
//
// Why the result slots: the caller's rewards (N) float and terminated/truncated (N) uint8 arrays
// put many envs on one cache line, so envs stepped by different threads would write the same line
// on every step (false sharing: CartPole on 2 threads ran at a third of 1 thread's speed). Each env
// writes its own slot in parallel; a serial pass then copies the N results out, in env order.
#include "envs/vecenv.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/error.h"

#define VECENV_ALIGN 64

struct VecEnv {
  const EnvKind *kind;
  const void *shared;  // the kind's shared context (borrowed), for rebinding loaded states
  EnvSpec spec;
  int num_envs;             // N
  int num_threads;          // 0: OpenMP's default
  int started;              // vecenv_reset has run
  size_t stride;            // bytes between env states
  size_t result_stride;     // bytes between step-result slots (a multiple of 64)
  unsigned char *states;    // (N, stride)
  unsigned char *results;   // (N, result_stride) StepResult + (L) pending log, written by env i's step
  float *ring;              // (K, L) the last K finished episodes' logs
  int ring_capacity;        // K
  int ring_count;           // held, <= K
  int ring_next;            // slot the next log goes to
  uint64_t episodes_total;  // finished since init
  size_t bytes;             // the whole slab
};

typedef struct {
  float reward;
  uint8_t terminated, truncated;
  float log[];  // (L) the episode log, written when the episode ends
} StepResult;

static size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

VecEnv *vecenv_init(const EnvKind *kind, const void *params, const void *shared, int num_envs, uint64_t seed,
                    int log_capacity, int num_threads) {
  return vecenv_init_slice(kind, params, shared, num_envs, 0, num_envs, seed, log_capacity, num_threads);
}

VecEnv *vecenv_init_slice(const EnvKind *kind, const void *params, const void *shared, int num_envs, int first_index,
                          int total_envs, uint64_t seed, int log_capacity, int num_threads) {
  if (first_index < 0 || total_envs < first_index + num_envs) {
    error_set("vecenv: envs %d..%d of %d: the slice must lie inside the whole", first_index, first_index + num_envs - 1,
              total_envs);
    return NULL;
  }
  if (!kind) {
    error_set("vecenv: no env kind given");
    return NULL;
  }
  if (num_envs < 1) {
    error_set("vecenv: num_envs = %d: must be >= 1", num_envs);
    return NULL;
  }
  if (log_capacity < 1) {
    error_set("vecenv: log_capacity = %d: must be >= 1", log_capacity);
    return NULL;
  }
  if (num_threads < 0) {
    error_set("vecenv: num_threads = %d: must be >= 0 (0: OpenMP's default)", num_threads);
    return NULL;
  }
  EnvSpec spec;
  if (kind->describe(&spec, params, shared) != 0) {
    error_prepend("env '%s': ", kind->name);
    return NULL;
  }
  CHECK(spec.log_size >= 2 && spec.log_size <= ENV_LOG_MAX, "an env kind's log_size must lie in 2..ENV_LOG_MAX");
  CHECK(spec.obs_dim >= 1, "an env kind's obs_dim must be >= 1");
  CHECK(spec.state_size % 8 == 0, "an env kind's state_size must be a multiple of 8 (envs/env.h)");

  size_t stride = round_up(spec.state_size ? spec.state_size : 1, VECENV_ALIGN);
  size_t head = round_up(sizeof(VecEnv), VECENV_ALIGN);
  size_t states_bytes = (size_t)num_envs * stride;
  size_t result_stride = round_up(sizeof(StepResult) + (size_t)spec.log_size * sizeof(float), VECENV_ALIGN);
  size_t pending_bytes = (size_t)num_envs * result_stride;
  size_t ring_bytes = (size_t)log_capacity * (size_t)spec.log_size * sizeof(float);
  // + VECENV_ALIGN: room to align the states whatever malloc returns.
  size_t bytes = head + VECENV_ALIGN + states_bytes + pending_bytes + ring_bytes;
  unsigned char *slab = CHECK_ALLOC(bytes, "VecEnv slab");
  VecEnv *vec = (VecEnv *)slab;
  unsigned char *states = slab + head;
  states += (VECENV_ALIGN - (uintptr_t)states % VECENV_ALIGN) % VECENV_ALIGN;
  memset(states, 0, states_bytes);

  *vec = (VecEnv){
      .kind = kind,
      .shared = shared,
      .spec = spec,
      .num_envs = num_envs,
      .num_threads = num_threads,
      .stride = stride,
      .states = states,
      .result_stride = result_stride,
      .results = states + states_bytes,
      .ring = (float *)(states + states_bytes + pending_bytes),
      .ring_capacity = log_capacity,
      .bytes = bytes,
  };
  memset(vec->results, 0, pending_bytes + ring_bytes);
  for (int i = 0; i < num_envs; i++) {
    Rng rng;
    rng_seed(&rng, rng_stream_seed(seed, (uint64_t)(first_index + i)));
    kind->init(vec->states + (size_t)i * stride, params, shared, first_index + i, total_envs, rng);
  }
  return vec;
}

void vecenv_free(VecEnv *vec) {
  if (!vec) return;
  for (int i = 0; i < vec->num_envs; i++) vec->kind->close(vec->states + (size_t)i * vec->stride);
  free(vec);  // the slab starts with the VecEnv
}

const EnvSpec *vecenv_spec(const VecEnv *vec) { return &vec->spec; }
int vecenv_num_envs(const VecEnv *vec) { return vec->num_envs; }
size_t vecenv_memory_bytes(const VecEnv *vec) { return vec->bytes; }

void *vecenv_env(VecEnv *vec, int index) {
  CHECK(index >= 0 && index < vec->num_envs, "vecenv_env: env index out of range");
  return vec->states + (size_t)index * vec->stride;
}

static int vecenv_threads(const VecEnv *vec) {
  int threads = vec->num_threads > 0 ? vec->num_threads : omp_get_max_threads();
  return threads < vec->num_envs ? threads : vec->num_envs;
}

void vecenv_reset(VecEnv *vec, float *obs) {
  const int n = vec->num_envs, obs_dim = vec->spec.obs_dim;
  const int threads = vecenv_threads(vec);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (int i = 0; i < n; i++) vec->kind->reset(vec->states + (size_t)i * vec->stride, obs + (size_t)i * obs_dim);
  vec->started = 1;
}

// Env i's step and, when its episode ends, its auto-reset; writes only env i's result slot and
// rows i of obs and final_obs.
static inline void vecenv_step_one(VecEnv *vec, const VecEnvBuffers *b, int i) {
  const EnvSpec *spec = &vec->spec;
  void *env = vec->states + (size_t)i * vec->stride;
  StepResult *result = (StepResult *)(vec->results + (size_t)i * vec->result_stride);
  const void *action;
  if (spec->action_kind == ENV_ACTION_DISCRETE) {
    action = (const int32_t *)b->actions + i;  // in range: vecenv_step checked it before the parallel region
  } else {
    action = (const float *)b->actions + (size_t)i * spec->action_dim;
  }
  float *obs = b->obs + (size_t)i * spec->obs_dim;
  vec->kind->step(env, action, obs, &result->reward, &result->terminated, &result->truncated, result->log);
  if (result->terminated | result->truncated) {
    memcpy(b->final_obs + (size_t)i * spec->obs_dim, obs, (size_t)spec->obs_dim * sizeof(float));
    vec->kind->reset(env, obs);
  }
}

void vecenv_step(VecEnv *vec, const VecEnvBuffers *b) {
  CHECK(vec->started, "call vecenv_reset before the first vecenv_step");
  const int n = vec->num_envs, log_size = vec->spec.log_size;
  if (vec->spec.action_kind == ENV_ACTION_DISCRETE)  // here, not in a worker thread: CHECK exits the process
    for (int i = 0; i < n; i++)
      CHECK((uint32_t)((const int32_t *)b->actions)[i] < (uint32_t)vec->spec.action_count,
            "a discrete action lies outside 0..action_count-1");
  const int threads = vecenv_threads(vec);
  if (threads == 1) {  // no OpenMP region at all: entering one costs as much as stepping a few CartPoles
    for (int i = 0; i < n; i++) vecenv_step_one(vec, b, i);
  } else {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int i = 0; i < n; i++) vecenv_step_one(vec, b, i);
  }
  // Serial, by env index: results out to the caller's arrays, and finished episodes into the ring
  // (its order does not depend on which thread finished first).
  for (int i = 0; i < n; i++) {
    const StepResult *result = (const StepResult *)(vec->results + (size_t)i * vec->result_stride);
    b->rewards[i] = result->reward;
    b->terminated[i] = result->terminated;
    b->truncated[i] = result->truncated;
    if (!(result->terminated | result->truncated)) continue;
    memcpy(vec->ring + (size_t)vec->ring_next * log_size, result->log, (size_t)log_size * sizeof(float));
    vec->ring_next = vec->ring_next + 1 == vec->ring_capacity ? 0 : vec->ring_next + 1;
    if (vec->ring_count < vec->ring_capacity) vec->ring_count++;
    vec->episodes_total++;
  }
}

VecEnvStateInfo vecenv_state_info(const VecEnv *vec) {
  return (VecEnvStateInfo){.num_envs = vec->num_envs,
                           .log_capacity = vec->ring_capacity,
                           .log_size = vec->spec.log_size,
                           .state_size = vec->spec.state_size,
                           .ring_count = vec->ring_count,
                           .ring_next = vec->ring_next,
                           .episodes_total = vec->episodes_total};
}

void vecenv_state_save(const VecEnv *vec, unsigned char *states, float *ring) {
  size_t size = vec->spec.state_size;
  for (int i = 0; i < vec->num_envs; i++) {
    unsigned char *out = states + (size_t)i * size;
    memcpy(out, vec->states + (size_t)i * vec->stride, size);
    if (vec->kind->rebind) vec->kind->rebind(out, NULL);
  }
  memcpy(ring, vec->ring, (size_t)vec->ring_capacity * (size_t)vec->spec.log_size * sizeof(float));
}

int vecenv_state_load(VecEnv *vec, const VecEnvStateInfo *info, const unsigned char *states, const float *ring) {
  VecEnvStateInfo own = vecenv_state_info(vec);
  if (info->num_envs != own.num_envs || info->log_capacity != own.log_capacity || info->log_size != own.log_size ||
      info->state_size != own.state_size) {
    error_set("env state: %d envs x %zu bytes, ring %d x %d, but this run has %d envs x %zu bytes, ring %d x %d",
              info->num_envs, info->state_size, info->log_capacity, info->log_size, own.num_envs, own.state_size,
              own.log_capacity, own.log_size);
    return -1;
  }
  if (info->ring_count < 0 || info->ring_count > own.log_capacity || info->ring_next < 0 ||
      info->ring_next >= own.log_capacity) {
    error_set("env state: episode-log ring count %d / next %d out of range for capacity %d", info->ring_count,
              info->ring_next, own.log_capacity);
    return -1;
  }
  // The ring fills from slot 0, so until it is full the next slot is the count; it holds at most
  // the episodes finished.
  if ((info->ring_count < own.log_capacity && info->ring_next != info->ring_count) ||
      info->episodes_total < (uint64_t)info->ring_count) {
    error_set("env state: episode-log ring count %d, next %d, %llu episodes finished do not agree (capacity %d)",
              info->ring_count, info->ring_next, (unsigned long long)info->episodes_total, own.log_capacity);
    return -1;
  }
  // Every state is checked against this run's own state of the same env (its configuration: index,
  // limits) before any is taken, so a refused load leaves the envs as they were.
  size_t size = vec->spec.state_size;
  if (vec->kind->check_state) {
    unsigned char *loaded = malloc(size ? size : 1);
    CHECK(loaded, "vecenv_state_load: out of memory");
    for (int i = 0; i < vec->num_envs; i++) {
      memcpy(loaded, states + (size_t)i * size, size);
      if (vec->kind->rebind) vec->kind->rebind(loaded, vec->shared);
      if (vec->kind->check_state(loaded, vec->states + (size_t)i * vec->stride, vec->shared) != 0) {
        error_prepend("env state %d: ", i);
        free(loaded);
        return -1;
      }
    }
    free(loaded);
  }
  for (int i = 0; i < vec->num_envs; i++) {
    unsigned char *env = vec->states + (size_t)i * vec->stride;
    memcpy(env, states + (size_t)i * size, size);
    if (vec->kind->rebind) vec->kind->rebind(env, vec->shared);
  }
  memcpy(vec->ring, ring, (size_t)own.log_capacity * (size_t)own.log_size * sizeof(float));
  vec->ring_count = info->ring_count;
  vec->ring_next = info->ring_next;
  vec->episodes_total = info->episodes_total;
  vec->started = 1;
  return 0;
}

int vecenv_log_count(const VecEnv *vec) { return vec->ring_count; }
uint64_t vecenv_log_total(const VecEnv *vec) { return vec->episodes_total; }

const float *vecenv_log_get(const VecEnv *vec, int k) {
  CHECK(k >= 0 && k < vec->ring_count, "vecenv_log_get: k must lie in 0..vecenv_log_count()-1");
  int oldest = vec->ring_count < vec->ring_capacity ? 0 : vec->ring_next;
  int slot = (oldest + k) % vec->ring_capacity;
  return vec->ring + (size_t)slot * vec->spec.log_size;
}

double vecenv_log_sum(const VecEnv *vec, int field, int *defined) {
  CHECK(field >= 0 && field < vec->spec.log_size, "vecenv_log_sum: field must lie in 0..log_size-1");
  double sum = 0.0;  // oldest to newest: a fixed order
  int n = 0;
  for (int k = 0; k < vec->ring_count; k++) {
    float x = vecenv_log_get(vec, k)[field];
    if (isnan(x)) continue;
    sum += x;
    n++;
  }
  *defined = n;
  return sum;
}

double vecenv_log_mean(const VecEnv *vec, int field) {
  int n;
  double sum = vecenv_log_sum(vec, field, &n);
  return n > 0 ? sum / n : NAN;
}
