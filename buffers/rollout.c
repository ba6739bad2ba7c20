// buffers/rollout.c: the rollout buffer's slab, GAE and the minibatch sampler (buffers/rollout.h).
#include "buffers/rollout.h"

#include <string.h>

#include "common/check.h"
#include "common/error.h"

// The slab's arrays in order: element counts (floats or int32; observations in obs_dtype) from the spec.
typedef struct {
  size_t obs, actions, tn, n, perm, perm_scratch_bytes, uniforms, final_obs, step_obs, step_actions, mb_obs, mb_actions,
      mb, stats;
} RolloutSizes;

static RolloutSizes rollout_sizes(const Backend *backend, const RolloutSpec *s) {
  size_t T = (size_t)s->n_steps, N = (size_t)s->n_envs, O = (size_t)s->obs_dim, A = (size_t)s->action_cols,
         B = (size_t)s->batch_size;
  RolloutSizes z;
  z.obs = T * N * O;
  z.actions = T * N * A;
  z.tn = T * N;
  z.n = N;
  z.perm = T * N;
  z.perm_scratch_bytes = backend_permutation_scratch_bytes(backend, T * N);
  z.uniforms = N * A * 2;
  z.final_obs = N * O;
  z.step_obs = N * O;
  z.step_actions = N * A;
  z.mb_obs = B * O;
  z.mb_actions = B * A;
  z.mb = B;
  z.stats = (size_t)s->max_minibatches * PPO_STAT_COUNT;
  return z;
}

static size_t align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

// Walks the layout: with base NULL only counts bytes; else points every array into base.
static size_t rollout_layout(RolloutBuffer *buf, const Backend *backend, const RolloutSpec *spec, char *base) {
  RolloutSizes z = rollout_sizes(backend, spec);
  size_t off = 0;
#define TAKE(field, count, type)                                       \
  do {                                                                 \
    if (base) buf->field = (type *)(void *)(base + off);               \
    off += align64((count) * sizeof(type));                            \
  } while (0)
  TAKE(obs, z.obs * nn_dtype_size(spec->obs_dtype), char);
  TAKE(actions, z.actions, float);
  TAKE(logp, z.tn, float);
  TAKE(values, z.tn, float);
  TAKE(rewards, z.tn, float);
  TAKE(episode_starts, z.tn, float);
  TAKE(terminated, z.tn, float);
  TAKE(truncated, z.tn, float);
  TAKE(advantages, z.tn, float);
  TAKE(returns, z.tn, float);
  TAKE(last_values, z.n, float);
  TAKE(last_dones, z.n, float);
  TAKE(perm, z.perm, int32_t);
  TAKE(perm_scratch, z.perm_scratch_bytes, char);
  TAKE(uniforms, z.uniforms, float);
  TAKE(final_obs, z.final_obs, float);
  TAKE(step_obs, z.step_obs, float);
  TAKE(step_actions, z.step_actions, float);
  TAKE(mb_index, z.mb, int32_t);
  TAKE(mb_stats, PPO_STAT_COUNT, float);
  TAKE(mb_obs, z.mb_obs * nn_dtype_size(spec->obs_dtype), char);
  TAKE(mb_actions, z.mb_actions, float);
  TAKE(mb_logp, z.mb, float);
  TAKE(mb_values, z.mb, float);
  TAKE(mb_advantages, z.mb, float);
  TAKE(mb_returns, z.mb, float);
  TAKE(mb_dlogp, z.mb, float);
  TAKE(mb_dentropy, z.mb, float);
  TAKE(mb_dvalues, z.mb, float);
  TAKE(stats, z.stats, float);
  TAKE(mb_adv_moments, 3, double);
  TAKE(ev_moments, NN_EV_MOMENTS, double);
#undef TAKE
  return off;
}

static int rollout_spec_check(const RolloutSpec *s) {
  if (s->n_steps < 1 || s->n_envs < 1 || s->obs_dim < 1 || s->action_cols < 1 || s->batch_size < 1 ||
      s->max_minibatches < 1) {
    error_set("rollout buffer: n_steps, n_envs, obs_dim, action columns, batch_size and minibatches must be >= 1");
    return -1;
  }
  if (s->obs_dtype != NN_F32 && s->obs_dtype != NN_F16 && s->obs_dtype != NN_BF16) {
    error_set("rollout buffer: obs_dtype %d is not NN_F32, NN_F16 or NN_BF16", (int)s->obs_dtype);
    return -1;
  }
  if ((int64_t)s->n_steps * s->n_envs >= ((int64_t)1 << 31)) {
    error_set("rollout buffer: n_steps x n_envs = %lld transitions; at most 2^31 - 1",
              (long long)s->n_steps * s->n_envs);
    return -1;
  }
  if (s->batch_size > s->n_steps * s->n_envs) {
    error_set("rollout buffer: batch_size %d exceeds the %d transitions of a rollout", s->batch_size,
              s->n_steps * s->n_envs);
    return -1;
  }
  return 0;
}

size_t rollout_plan_bytes(const Backend *backend, const RolloutSpec *spec) {
  RolloutBuffer scratch;
  return rollout_layout(&scratch, backend, spec, NULL);
}

int rollout_init(RolloutBuffer *buf, Backend *backend, const RolloutSpec *spec) {
  memset(buf, 0, sizeof *buf);
  if (rollout_spec_check(spec) != 0) return -1;
  buf->backend = backend;
  buf->spec = *spec;
  buf->bytes = rollout_layout(buf, backend, spec, NULL);
  buf->memory = backend_alloc(backend, buf->bytes);  // zeroed
  rollout_layout(buf, backend, spec, buf->memory);
  return 0;
}

void rollout_free(RolloutBuffer *buf) {
  if (buf->backend) backend_free(buf->backend, buf->memory);
  memset(buf, 0, sizeof *buf);
}

void rollout_compute_gae(RolloutBuffer *buf, double gamma, double gae_lambda) {
  backend_gae(buf->backend, buf->advantages, buf->returns, buf->rewards, buf->values, buf->episode_starts,
              buf->last_values, buf->last_dones, buf->spec.n_steps, buf->spec.n_envs, gamma, gae_lambda);
}

void rollout_permute(RolloutBuffer *buf, uint64_t seed, uint64_t subsequence, uint64_t draw) {
  size_t n = (size_t)buf->spec.n_steps * (size_t)buf->spec.n_envs;
  // Each draw reads its own n words of the stream: draws never share a word.
  backend_permutation(buf->backend, buf->perm, buf->perm_scratch, n, seed, subsequence, draw * (uint64_t)n);
}

int rollout_minibatches(const RolloutBuffer *buf) {
  int64_t total = (int64_t)buf->spec.n_steps * buf->spec.n_envs;  // total + B - 1 may pass INT_MAX
  return (int)((total + buf->spec.batch_size - 1) / buf->spec.batch_size);
}

int rollout_select(RolloutBuffer *buf, int k) {
  int total = buf->spec.n_steps * buf->spec.n_envs, B = buf->spec.batch_size;
  CHECK(k >= 0 && k < rollout_minibatches(buf), "rollout_select: minibatch index out of range");
  int start = k * B, size = total - start < B ? total - start : B;
  backend_copy(buf->backend, buf->mb_index, buf->perm + start, (size_t)size * sizeof(int32_t));
  return size;
}

void rollout_gather_selected(RolloutBuffer *buf, int size) {
  int total = buf->spec.n_steps * buf->spec.n_envs;
  const int32_t *index = buf->mb_index;
  Backend *be = buf->backend;
  size_t f = sizeof(float);
  backend_gather_rows(be, buf->mb_obs, buf->obs, index, size,
                      (size_t)buf->spec.obs_dim * nn_dtype_size(buf->spec.obs_dtype), total);
  backend_gather_rows(be, buf->mb_actions, buf->actions, index, size, (size_t)buf->spec.action_cols * f, total);
  backend_gather_rows(be, buf->mb_logp, buf->logp, index, size, f, total);
  backend_gather_rows(be, buf->mb_values, buf->values, index, size, f, total);
  backend_gather_rows(be, buf->mb_advantages, buf->advantages, index, size, f, total);
  backend_gather_rows(be, buf->mb_returns, buf->returns, index, size, f, total);
}
