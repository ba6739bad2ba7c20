// ppo/trainer.c: one PPO run in memory and its iteration (ppo/trainer.h).
//
// The iteration, as data (DESIGN.md section 4):
//   for t in 0..T-1:
//     obs (N, O) host -> rollout.obs[t] (in the policy's dtype); episode starts -> rollout.episode_starts[t]
//     uniforms <- Philox; policy_act: actions, log-probs, values -> rollout[t]
//     actions (N, A) -> host; clip (Gaussian) or convert to int32 (categorical); step the envs
//     normalise obs and rewards (optional); truncated, not terminated: reward += gamma V(final obs),
//     the final observations of those envs in one batched critic forward
//     rewards, terminated, truncated -> rollout[t]
//   last values V(obs), last dones; GAE
//   for each epoch: permutation; for each minibatch: gather, evaluate, loss (+ KL check), backward,
//     optimiser step (unscale, clip, Adam or skip, scaler update)
//   statistics: one download of the per-minibatch rows
#include "ppo/trainer.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/error.h"
#include "common/log.h"
#include "common/rng.h"
#include "common/timer.h"
#include "envs/cartpole.h"
#include "envs/trading_env.h"
#include "ppo/checkpoint.h"
#include "ppo/dist.h"

static volatile sig_atomic_t stop_flag = 0;

void trainer_request_stop(void) { stop_flag = 1; }
bool trainer_stop_requested(void) { return stop_flag != 0; }
void trainer_clear_stop(void) { stop_flag = 0; }

// The trainer's host buffers, one allocation (STYLE rule 3; host_layout, page-locked on CUDA): the
// step's buffers and the snapshot of the state at the start of the iteration (restored when a
// rollout is interrupted), and with several ranks the buffers of their exchanges (the gathered
// moments, the replica check's slab copy). The trainer's other
// host memory, the checkpoint staging, is one malloc beside it in trainer_allocate.
typedef struct {
  float *obs;                               // (N, O) the observation to act on next (normalised when [normalize] obs)
  float *final_obs;                         // (N, O) rows of envs whose episode ended this step
  float *bootstrap_obs;                     // (N, O) the truncated envs' final observations, packed
  float *actions;                           // (N, A) as sampled
  float *actions_env;                       // (N, A) clipped to the action bounds (Gaussian) or int32 (N) indices
  float *rewards;                           // (N)
  float *episode_starts;                    // (N) 0 or 1
  float *terminated_f, *truncated_f;        // (N) the flags as floats for the buffer
  float *values;                            // (N) bootstrap values
  uint8_t *terminated, *truncated, *dones;  // (N)
  int32_t *bootstrap_env;                   // (N) env of each packed bootstrap row
  float *stats;                             // (max_minibatches, PPO_STAT_COUNT)
  float *log_std;                           // (A)
  // snapshot of the iteration's starting state
  float *snap_obs, *snap_episode_starts;
  unsigned char *snap_env_states;
  float *snap_ring;
  double *snap_norm;    // obs mean, var (O each), ret mean, var, returns (N), counts (2)
  double *moments_all;  // (R, O, 3) every rank's normalisation batch moments (several ranks only)
  double *ev_gathered;  // (R, NN_EV_MOMENTS) every rank's explained-variance moments (several ranks only)
  float *replica;       // one slab's host copy for the replica check (several ranks on a device backend)
} HostBuffers;

struct Trainer {
  Config cfg;
  bool has_market;
  EnvMarket market;
  CartPoleParams cartpole;
  const EnvKind *kind;
  VecEnv *vec;
  EnvSpec spec;
  Backend *backend;
  Policy *policy;
  Optimizer *optim;
  RolloutBuffer rollout;
  VecNormalize norm;
  int N, T, O, A, action_cols;
  int rank, ranks;  // this process's place among the data-parallel ranks (ppo/dist.h); 0 of 1 alone
  uint64_t sample_seed;
  TrainCounters counters;
  TrainerPlan plan;
  void *host_memory;
  size_t host_bytes;
  HostBuffers h;
  VecEnvStateInfo snap_info;
  TrainCounters snap_counters;
  // The optimiser's state at the start of the update (backend memory, one allocation): params,
  // Adam m, v (slab_floats floats each), then the OptimScalars; restored when an update is stopped.
  float *update_snap;
  TrainerStopCheck stop_check;  // polled during the rollout and the update; NULL (calloc): trainer_stop_requested
  void *stop_ctx;
  // The recorded graphs (backend_graph_run): a rollout step's policy, and one full minibatch's
  // update, each recorded once (the learning rate is read from the optimiser's scalars).
  BackendGraph rollout_graph, update_graph;
  size_t replica_bytes;  // HostBuffers.replica's: a parameter slab's with several ranks on a device backend, else 0
  char *ckpt_staging;    // a checkpoint save's host memory (checkpoint_staging_bytes)
};

static const char *device_name(ConfigDevice device) { return config_choice_name("run", "device", (int)device); }

// The configuration's choices as the nn layer's values. Switches without a default: -Wswitch (in
// -Wall) names a choice added to the schema and not here, which would otherwise train another one.
static NnDtype precision_dtype(ConfigPrecision precision) {
  switch (precision) {
    case CONFIG_PRECISION_FP32:
      return NN_F32;
    case CONFIG_PRECISION_FP16:
      return NN_F16;
    case CONFIG_PRECISION_BF16:
      return NN_BF16;
  }
  CHECK(false, "[run] precision has no dtype");
}

static int activation_of(ConfigActivation activation) {
  switch (activation) {
    case CONFIG_ACTIVATION_TANH:
      return NN_ACT_TANH;
    case CONFIG_ACTIVATION_RELU:
      return NN_ACT_RELU;
  }
  CHECK(false, "[policy] activation has no NN_ACT_ value");
}

PolicySpec trainer_policy_spec(const Config *cfg, const EnvSpec *spec) {
  PolicySpec p;
  memset(&p, 0, sizeof p);
  p.obs_dim = spec->obs_dim;
  if (spec->action_kind == ENV_ACTION_DISCRETE) {
    p.head = POLICY_HEAD_CATEGORICAL;
    p.action_dim = spec->action_count;
  } else {
    p.head = POLICY_HEAD_GAUSSIAN;
    p.action_dim = spec->action_dim;
  }
  p.n_pi = cfg->policy.pi_layers.count;
  memcpy(p.pi_layers, cfg->policy.pi_layers.values, sizeof(int) * (size_t)p.n_pi);
  p.n_vf = cfg->policy.vf_layers.count;
  memcpy(p.vf_layers, cfg->policy.vf_layers.values, sizeof(int) * (size_t)p.n_vf);
  p.activation = activation_of(cfg->policy.activation);
  p.dtype = precision_dtype(cfg->run.precision);
  int B = (int)cfg->ppo.batch_size, N = (int)cfg->env.n_envs;
  p.max_batch = B > N ? B : N;
  p.log_std_init = (float)cfg->policy.log_std_init;
  p.init = cfg->policy.ortho_init ? POLICY_INIT_ORTHO : POLICY_INIT_TORCH;
  p.seed = rng_stream_seed((uint64_t)cfg->run.seed, TRAINER_STREAM_INIT);
  return p;
}

static OptimSpec optim_spec_of(const Config *cfg) {
  OptimSpec o;
  memset(&o, 0, sizeof o);
  o.adam = (AdamHyper){cfg->ppo.learning_rate, cfg->ppo.adam_beta1, cfg->ppo.adam_beta2, cfg->ppo.adam_eps};
  o.linear_schedule = cfg->ppo.lr_schedule == CONFIG_LR_LINEAR;
  o.max_grad_norm = (float)cfg->ppo.max_grad_norm;
  o.scaler = grad_scaler_defaults(cfg->run.precision == CONFIG_PRECISION_FP16);
  o.scaler.init_scale = (float)cfg->amp.init_scale;
  o.scaler.growth_factor = cfg->amp.growth_factor;
  o.scaler.backoff_factor = cfg->amp.backoff_factor;
  o.scaler.growth_interval = (int32_t)cfg->amp.growth_interval;
  return o;
}

static RolloutSpec rollout_spec_of(const Config *cfg, const EnvSpec *spec) {
  RolloutSpec r;
  memset(&r, 0, sizeof r);
  r.n_steps = (int)cfg->ppo.n_steps;
  r.n_envs = (int)cfg->env.n_envs;
  r.obs_dim = spec->obs_dim;
  r.action_cols = spec->action_kind == ENV_ACTION_DISCRETE ? 1 : spec->action_dim;
  r.batch_size = (int)cfg->ppo.batch_size;
  int64_t total = (int64_t)r.n_steps * r.n_envs;
  r.max_minibatches = (int)(cfg->ppo.n_epochs * ((total + r.batch_size - 1) / r.batch_size));
  r.obs_dtype = precision_dtype(cfg->run.precision);  // policy_obs_dtype of trainer_policy_spec's policy
  return r;
}

// The env kind, its params and shared context for cfg; opens the market for trading and synthetic.
static int open_envs(Trainer *tr) {
  const Config *cfg = &tr->cfg;
  const void *params = NULL, *shared = NULL;
  switch (cfg->env.type) {  // no default: -Wswitch names an env type added and not opened here
    case CONFIG_ENV_CARTPOLE:
      tr->kind = &cartpole_kind;
      tr->cartpole = cartpole_params_default();
      if (!cfg->env.episode_length.is_auto) tr->cartpole.max_episode_steps = (int)cfg->env.episode_length.value;
      params = &tr->cartpole;
      break;
    case CONFIG_ENV_TRADING:
    case CONFIG_ENV_SYNTHETIC:
      if (env_market_open(&tr->market, cfg) != 0) return -1;
      tr->has_market = true;
      tr->kind = cfg->env.type == CONFIG_ENV_SYNTHETIC ? &synthetic_kind : &trading_kind;
      shared = &tr->market.context;
      break;
  }
  uint64_t env_seed = rng_stream_seed((uint64_t)cfg->run.seed, TRAINER_STREAM_ENVS);
  int N = (int)cfg->env.n_envs;  // rank r holds envs r N .. r N + N - 1 of R N: their seeds and start positions
  tr->vec = vecenv_init_slice(tr->kind, params, shared, N, tr->rank * N, tr->ranks * N, env_seed, TRAINER_LOG_CAPACITY,
                              (int)cfg->run.threads);
  if (!tr->vec) return -1;
  tr->spec = *vecenv_spec(tr->vec);
  return 0;
}

static size_t align64(size_t bytes) { return (bytes + 63) / 64 * 64; }

// Lays out HostBuffers in base (NULL: only counts bytes).
static size_t host_layout(Trainer *tr, char *base) {
  size_t N = (size_t)tr->N, O = (size_t)tr->O, A = (size_t)tr->action_cols;
  size_t rows = (size_t)tr->rollout.spec.max_minibatches;
  VecEnvStateInfo info = vecenv_state_info(tr->vec);
  size_t off = 0;
  HostBuffers *h = &tr->h;
#define TAKE(field, count, type)                       \
  do {                                                 \
    if (base) h->field = (type *)(void *)(base + off); \
    off += align64((size_t)(count) * sizeof(type));    \
  } while (0)
  TAKE(obs, N * O, float);
  TAKE(final_obs, N * O, float);
  TAKE(bootstrap_obs, N * O, float);
  TAKE(actions, N * A, float);
  TAKE(actions_env, N * A, float);
  TAKE(rewards, N, float);
  TAKE(episode_starts, N, float);
  TAKE(terminated_f, N, float);
  TAKE(truncated_f, N, float);
  TAKE(values, N, float);
  TAKE(terminated, N, uint8_t);
  TAKE(truncated, N, uint8_t);
  TAKE(dones, N, uint8_t);
  TAKE(bootstrap_env, N, int32_t);
  TAKE(stats, rows * PPO_STAT_COUNT, float);
  TAKE(log_std, A, float);
  TAKE(snap_obs, N * O, float);
  TAKE(snap_episode_starts, N, float);
  TAKE(snap_env_states, (size_t)info.num_envs * info.state_size, unsigned char);
  TAKE(snap_ring, (size_t)info.log_capacity * (size_t)info.log_size, float);
  TAKE(snap_norm, 2 * O + 2 + N + 2, double);
  TAKE(moments_all, tr->ranks > 1 ? (size_t)tr->ranks * O * 3 : 0, double);
  TAKE(ev_gathered, tr->ranks > 1 ? (size_t)tr->ranks * NN_EV_MOMENTS : 0, double);
  TAKE(replica, tr->replica_bytes / sizeof(float), float);
#undef TAKE
  return off;
}

static void plan_add(TrainerPlan *plan, const char *name, size_t bytes, bool device) {
  CHECK(plan->count < TRAINER_PLAN_MAX, "trainer plan: too many rows");
  plan->name[plan->count] = name;
  plan->bytes[plan->count] = bytes;
  plan->device[plan->count] = device;
  plan->count++;
  if (device)
    plan->device_total += bytes;
  else
    plan->host_total += bytes;
}

// A checkpoint save's host memory for a parameter slab of params_bytes (the copy keeps 64 bytes to spare).
static size_t ckpt_staging_bytes(Trainer *tr, size_t params_bytes) {
  VecEnvStateInfo info = vecenv_state_info(tr->vec);
  return checkpoint_staging_bytes(&info, tr->O, tr->ranks, dist_is_root(), params_bytes + 64);
}

// The update's snapshot: three slabs of params_bytes (params, Adam m, v), then the optimiser scalars.
static size_t update_snap_bytes(size_t params_bytes) { return 3 * params_bytes + sizeof(OptimScalars); }

static void fill_plan(Trainer *tr, TrainerPlan *plan, const PolicySpec *ps, const RolloutSpec *rs) {
  memset(plan, 0, sizeof *plan);
  PolicyMemoryPlan pp = policy_plan(ps);
  plan_add(plan, "policy parameters (fp32 master)", pp.params, true);
  plan_add(plan, "gradients", pp.params, true);
  plan_add(plan, "Adam m", pp.params, true);
  plan_add(plan, "Adam v", pp.params, true);
  if (pp.lowp) plan_add(plan, "low-precision weights", pp.lowp, true);
  plan_add(plan, "activations", pp.acts, true);
  plan_add(plan, "GEMM workspace and weight layouts", policy_backend_bytes(ps, tr->backend), true);
  plan_add(plan, "rollout buffer", rollout_plan_bytes(tr->backend, rs), true);
  plan_add(plan, "optimiser scalars", sizeof(OptimScalars), true);
  plan_add(plan, "update snapshot (params, Adam m, v)", update_snap_bytes(pp.params), true);
  plan_add(plan, "envs (states, episode logs)", vecenv_memory_bytes(tr->vec), false);
  plan->host_allocated = vecenv_memory_bytes(tr->vec);  // open_envs made them (and the market) already
  if (tr->has_market) {
    const MarketData *d = tr->market.data;
    size_t bars = market_data_bytes(d->rows);
    plan_add(plan, "market data and features (shared)", bars + tr->market.features->bytes, false);
    plan->host_allocated += bars + tr->market.features->bytes;
  }
  plan->device_is_host = strcmp(backend_name(tr->backend), "cpu") == 0;
  // The replica check reads device slabs through the host; on the CPU they are host memory already.
  tr->replica_bytes = tr->ranks > 1 && !plan->device_is_host ? pp.params : 0;
  plan_add(plan, "trainer host buffers", host_layout(tr, NULL), false);
  plan_add(plan, "normalisation statistics", vecnorm_bytes(tr->N, tr->O), false);
  plan_add(plan, "checkpoint staging (envs, params)", ckpt_staging_bytes(tr, pp.params), false);
  plan->have_free = backend_memory_info(tr->backend, &plan->free_bytes, &(size_t){0}) == 0;
  snprintf(plan->backend_description, sizeof plan->backend_description, "%s", backend_describe(tr->backend));
}

void trainer_free(Trainer *tr) {
  if (!tr) return;
  vecnorm_free(&tr->norm);
  if (tr->backend) {
    backend_graph_reset(tr->backend, &tr->rollout_graph);  // before the memory the graphs use
    backend_graph_reset(tr->backend, &tr->update_graph);
    rollout_free(&tr->rollout);
    backend_free(tr->backend, tr->update_snap);
    optim_free(tr->optim);
    policy_free(tr->policy);
    backend_host_free(tr->backend, tr->host_memory);
    backend_close(tr->backend);
  }
  vecenv_free(tr->vec);
  if (tr->has_market) env_market_close(&tr->market);
  free(tr->ckpt_staging);
  free(tr);
}

// Starts every env's first episode (SB3: env.reset(), VecNormalize.reset updates the obs statistics).
// VecNormalize.reset's returns = 0 is vecnorm_init's state already, so vecnorm_obs does what
// vecnorm_reset would.
static void first_reset(Trainer *tr) {
  vecenv_reset(tr->vec, tr->h.obs);
  vecnorm_obs(&tr->norm, tr->h.obs, tr->N);
  for (int i = 0; i < tr->N; i++) tr->h.episode_starts[i] = 1.0f;  // SB3's _last_episode_starts = ones
}

void trainer_apply_threads(int64_t threads) {
  static int all_cores = 0;  // what OpenMP offered before any run narrowed it
  if (all_cores == 0) all_cores = omp_get_max_threads();
  omp_set_num_threads(threads > 0 ? (int)threads : all_cores);
}

Trainer *trainer_open(const Config *cfg) {
  Trainer *tr = calloc(1, sizeof *tr);
  CHECK(tr, "out of host memory (trainer)");
  tr->cfg = *cfg;
  tr->rank = dist_rank();
  tr->ranks = dist_size();
  trainer_apply_threads(cfg->run.threads);
  if (open_envs(tr) != 0) {
    trainer_free(tr);
    return NULL;
  }
  tr->N = (int)cfg->env.n_envs;
  tr->T = (int)cfg->ppo.n_steps;
  tr->O = tr->spec.obs_dim;
  tr->A = tr->spec.action_kind == ENV_ACTION_DISCRETE ? tr->spec.action_count : tr->spec.action_dim;
  tr->action_cols = tr->spec.action_kind == ENV_ACTION_DISCRETE ? 1 : tr->spec.action_dim;
  tr->backend = backend_open(device_name(cfg->run.device));
  if (!tr->backend) {
    error_prepend("[run] device = %s: ", device_name(cfg->run.device));
    trainer_free(tr);
    return NULL;
  }
  backend_set_tf32(tr->backend, cfg->run.tf32);
  if (tr->rank == 0 && cfg->run.precision == CONFIG_PRECISION_FP16 && strcmp(backend_name(tr->backend), "cpu") == 0)
    log_warn(
        "[run] precision = fp16 on the CPU backend (device = %s): the CPU emulates fp16 (operands widened to "
        "fp32), slower than fp32; bf16 is the CPU's fast low precision",
        device_name(cfg->run.device));
  if (dist_attach_backend(tr->backend) != 0) {  // several ranks: their communicator (NCCL on CUDA)
    error_prepend("[run] device = %s, %d ranks: ", device_name(cfg->run.device), tr->ranks);
    trainer_free(tr);
    return NULL;
  }
  PolicySpec ps = trainer_policy_spec(cfg, &tr->spec);
  if (policy_spec_check(&ps) != 0) {
    error_prepend("[policy]: ");
    trainer_free(tr);
    return NULL;
  }
  RolloutSpec rs = rollout_spec_of(cfg, &tr->spec);
  tr->rollout.spec = rs;  // host_layout reads the stats rows from here before the slab exists
  fill_plan(tr, &tr->plan, &ps, &rs);
  return tr;
}

// VecNormalize's batch moments (count, mean, M2 per component) of every rank, combined in rank order
// with Chan's parallel formula: the same numbers on every rank, so the running statistics stay
// identical (a collective: each rank's vecnorm_obs / vecnorm_reward calls it at the same step).
static void dist_merge_moments(void *ctx, double *moments, int D) {
  Trainer *tr = ctx;
  double *all = tr->h.moments_all;
  dist_host_allgather(moments, all, (size_t)D * 3 * sizeof(double));
  for (int j = 0; j < D; j++) {
    double n = all[3 * j], mean = all[3 * j + 1], m2 = all[3 * j + 2];
    for (int r = 1; r < tr->ranks; r++) {
      const double *b = all + (size_t)r * D * 3 + 3 * j;
      double tot = n + b[0], delta = b[1] - mean;
      mean += delta * b[0] / tot;
      m2 += b[2] + delta * delta * n * b[0] / tot;
      n = tot;
    }
    moments[3 * j] = n;
    moments[3 * j + 1] = mean;
    moments[3 * j + 2] = m2;
  }
}

int trainer_allocate(Trainer *tr) {
  const Config *cfg = &tr->cfg;
  CHECK(!tr->policy, "trainer_allocate: called twice");
  PolicySpec ps = trainer_policy_spec(cfg, &tr->spec);  // checked by trainer_open
  tr->policy = policy_init(tr->backend, &ps);
  if (!tr->policy) return -1;
  OptimSpec os = optim_spec_of(cfg);
  tr->optim = optim_init(tr->backend, &os);
  RolloutSpec rs = tr->rollout.spec;
  CHECK(rs.obs_dtype == policy_obs_dtype(tr->policy),
        "trainer: the rollout stores observations as the policy reads them");
  if (rollout_init(&tr->rollout, tr->backend, &rs) != 0) {
    error_prepend("[ppo]: ");
    return -1;
  }
  if (vecnorm_init(&tr->norm, tr->N, tr->O, cfg->normalize.obs, cfg->normalize.reward, cfg->normalize.clip_obs,
                   cfg->normalize.clip_reward, cfg->normalize.epsilon, cfg->ppo.gamma) != 0) {
    error_prepend("[normalize]: ");
    return -1;
  }
  tr->update_snap = backend_alloc(tr->backend, update_snap_bytes(tr->policy->plan.params));
  tr->host_bytes = host_layout(tr, NULL);
  tr->host_memory = backend_host_alloc(tr->backend, tr->host_bytes);  // page-locked on CUDA, zeroed
  host_layout(tr, tr->host_memory);
  tr->ckpt_staging = malloc(ckpt_staging_bytes(tr, tr->policy->plan.params));
  CHECK(tr->ckpt_staging, "out of host memory (checkpoint staging)");
  if (tr->ranks > 1) vecnorm_set_merge(&tr->norm, (VecNormMerge){dist_merge_moments, tr});
  tr->sample_seed = rng_stream_seed((uint64_t)cfg->run.seed, TRAINER_STREAM_SAMPLE);
  first_reset(tr);
  return 0;
}

Trainer *trainer_init(const Config *cfg) {
  Trainer *tr = trainer_open(cfg);
  if (tr && trainer_allocate(tr) != 0) {
    trainer_free(tr);
    return NULL;
  }
  return tr;
}

const TrainerPlan *trainer_memory_plan(const Trainer *tr) { return &tr->plan; }

char *trainer_checkpoint_staging(Trainer *tr) { return tr->ckpt_staging; }
void trainer_plan_add(Trainer *tr, const char *name, size_t bytes, bool on_backend) {
  plan_add(&tr->plan, name, bytes, on_backend);
}
const Config *trainer_config(const Trainer *tr) { return &tr->cfg; }
const EnvMarket *trainer_market(const Trainer *tr) { return tr->has_market ? &tr->market : NULL; }
const TrainCounters *trainer_counters(const Trainer *tr) { return &tr->counters; }
Backend *trainer_backend(Trainer *tr) { return tr->backend; }
Policy *trainer_policy(Trainer *tr) { return tr->policy; }
const RolloutBuffer *trainer_rollout(const Trainer *tr) { return &tr->rollout; }
Optimizer *trainer_optimizer(Trainer *tr) { return tr->optim; }
VecEnv *trainer_vecenv(Trainer *tr) { return tr->vec; }
const EnvSpec *trainer_env_spec(const Trainer *tr) { return &tr->spec; }

int64_t trainer_total_iterations(const Trainer *tr) {
  int64_t per = (int64_t)tr->T * tr->N * tr->ranks;
  return (tr->cfg.run.total_timesteps + per - 1) / per;
}

// One slab's bytes through the host: device memory is read through HostBuffers.replica (a slab's
// size, planned in fill_plan), the CPU backend's host memory directly.
static bool slab_identical(Trainer *tr, const float *slab, size_t bytes) {
  if (tr->replica_bytes == 0) return dist_check_identical(slab, bytes);
  backend_download(tr->backend, tr->h.replica, slab, bytes);
  return dist_check_identical(tr->h.replica, bytes);
}

bool trainer_replicas_agree(Trainer *tr) {
  if (tr->ranks == 1) return true;
  Policy *pol = tr->policy;
  size_t bytes = pol->slab_floats * sizeof(float);
  OptimScalars os;
  optim_read_state(tr->optim, &os);
  bool same = slab_identical(tr, pol->params_memory, bytes);
  same &= slab_identical(tr, pol->m_memory, bytes);
  same &= slab_identical(tr, pol->v_memory, bytes);
  same &= dist_check_identical(&os, sizeof os);
  // The normalisation statistics too (obs mean, var, return mean, var are contiguous; the per-env
  // discounted returns are each rank's own).
  double counts[2] = {tr->norm.obs_rms.count, tr->norm.ret_rms.count};
  same &= dist_check_identical(tr->norm.obs_rms.mean, (2 * (size_t)tr->O + 2) * sizeof(double));
  same &= dist_check_identical(counts, sizeof counts);
  return same;
}

TrainerState trainer_state(Trainer *tr) {
  return (TrainerState){.counters = tr->counters,
                        .obs = tr->h.obs,
                        .episode_starts = tr->h.episode_starts,
                        .norm = &tr->norm,
                        .vec = tr->vec};
}

void trainer_state_loaded(Trainer *tr, const TrainCounters *counters) {
  tr->counters = *counters;
  policy_refresh_lowp(tr->policy);
}

// --- the iteration's starting state, for an interrupted rollout ---------------------------------------

// Copies the normaliser's statistics to (save) or from snap: obs mean, var (O each), return mean,
// var (1 each), returns (N), then the two counts.
static void norm_snapshot(VecNormalize *vn, double *snap, bool save) {
  size_t O = (size_t)vn->obs_dim, N = (size_t)vn->num_envs;
  double *fields[] = {vn->obs_rms.mean, vn->obs_rms.var,    vn->ret_rms.mean,  vn->ret_rms.var,
                      vn->returns,      &vn->obs_rms.count, &vn->ret_rms.count};
  size_t counts[] = {O, O, 1, 1, N, 1, 1};
  for (int k = 0; k < 7; k++) {
    if (save)
      memcpy(snap, fields[k], counts[k] * sizeof(double));
    else
      memcpy(fields[k], snap, counts[k] * sizeof(double));
    snap += counts[k];
  }
}

static void snapshot_save(Trainer *tr) {
  HostBuffers *h = &tr->h;
  memcpy(h->snap_obs, h->obs, (size_t)tr->N * (size_t)tr->O * sizeof(float));
  memcpy(h->snap_episode_starts, h->episode_starts, (size_t)tr->N * sizeof(float));
  tr->snap_info = vecenv_state_info(tr->vec);
  vecenv_state_save(tr->vec, h->snap_env_states, h->snap_ring);
  norm_snapshot(&tr->norm, h->snap_norm, true);
  tr->snap_counters = tr->counters;
}

static void snapshot_restore(Trainer *tr) {
  HostBuffers *h = &tr->h;
  memcpy(h->obs, h->snap_obs, (size_t)tr->N * (size_t)tr->O * sizeof(float));
  memcpy(h->episode_starts, h->snap_episode_starts, (size_t)tr->N * sizeof(float));
  int loaded = vecenv_state_load(tr->vec, &tr->snap_info, h->snap_env_states, h->snap_ring);
  CHECK(loaded == 0, "the snapshot of the envs was made by this VecEnv");
  norm_snapshot(&tr->norm, h->snap_norm, false);
  tr->counters = tr->snap_counters;
}

// Copies the policy's params, Adam m and v and the optimiser scalars to (save) or from the update's
// snapshot, on the backend (device to device on CUDA: no host wait). A restore also refreshes the
// low-precision weights and what derives from them, as a checkpoint load does.
static void update_snapshot(Trainer *tr, bool save) {
  Policy *pol = tr->policy;
  Backend *be = tr->backend;
  size_t slab = pol->plan.params;
  char *snap = (char *)tr->update_snap;
  void *parts[] = {pol->params_memory, pol->m_memory, pol->v_memory, tr->optim->scalars};
  size_t bytes[] = {slab, slab, slab, sizeof(OptimScalars)};
  for (int k = 0; k < 4; k++) {
    if (save)
      backend_copy(be, snap, parts[k], bytes[k]);
    else
      backend_copy(be, parts[k], snap, bytes[k]);
    snap += bytes[k];
  }
  if (!save) policy_refresh_lowp(pol);
}

// --- stopping mid-iteration ----------------------------------------------------------------------------

// Polls between the several ranks' stop votes: rollout steps, and minibatches of the update (a
// headline minibatch on the 2-core CPU is ~47 ms: a vote every ~0.2 s, against one all-reduce of
// 29 MB of gradients per minibatch).
#define STOP_VOTE_STEPS 16
#define STOP_VOTE_MINIBATCHES 4

void trainer_set_stop_check(Trainer *tr, TrainerStopCheck check, void *ctx) {
  tr->stop_check = check;
  tr->stop_ctx = ctx;
}

// Does the run stop at this poll? One rank asks its check at every poll. Several ranks must all stop
// or all go on: they vote at every `every`-th poll (each rank runs the same T steps and the same
// minibatches, so they vote at the same polls) with one integer all-reduce, microseconds.
static bool stop_agreed(Trainer *tr, TrainerPhase phase, int index, int every) {
  if (tr->ranks > 1 && index % every != 0) return false;
  bool local = tr->stop_check ? tr->stop_check(tr->stop_ctx, phase, index) : trainer_stop_requested();
  return tr->ranks == 1 ? local : dist_host_allreduce_max_int(local) != 0;
}

// --- rollout -----------------------------------------------------------------------------------------

// Rank r draws its minibatch permutations from Philox subsequence base + 2 r: rank 0 keeps the
// single-process stream, the others get their own (each permutes its own rollout).
static uint64_t rank_subsequence(const Trainer *tr, uint64_t base) { return base + 2 * (uint64_t)tr->rank; }

// Where this rank's action draws of the current rollout step start. One Philox stream (subsequence
// TRAINER_SUBSEQ_ACTIONS) serves every rank, laid out by global env: each step takes (R N, A, 2)
// words at most, env i of the run its own words_per_env (2 A; 1 for a categorical), and rank r's
// envs are envs r N .. r N + N - 1 (open_envs). So R ranks of N envs draw exactly what one process
// of R N envs draws and roll out the same first rollout (test_dist's gradient-averaging test relies
// on it); one rank draws what it always did.
static uint64_t sample_offset(const Trainer *tr, size_t words_per_env) {
  uint64_t step_words = (uint64_t)tr->ranks * (uint64_t)tr->N * (uint64_t)tr->action_cols * 2;
  return (uint64_t)tr->counters.vector_steps * step_words + (uint64_t)tr->rank * (uint64_t)tr->N * words_per_env;
}

// The policy's share of a rollout step, on fixed addresses so that it is recorded once
// (backend_graph_run): actions, log-probs and values of step_obs with the step's uniforms.
static void rollout_policy(void *arg) {
  Trainer *tr = arg;
  RolloutBuffer *rb = &tr->rollout;
  policy_act(tr->policy, rb->step_actions, rb->step_obs, rb->uniforms, tr->N);
}

static void rollout_step(Trainer *tr, int t) {
  Backend *be = tr->backend;
  RolloutBuffer *rb = &tr->rollout;
  HostBuffers *h = &tr->h;
  const int N = tr->N, O = tr->O, A = tr->action_cols;
  size_t row = (size_t)t * (size_t)N;
  size_t obs_bytes = (size_t)N * (size_t)O * sizeof(float), action_bytes = (size_t)N * (size_t)A * sizeof(float);
  backend_upload(be, rb->step_obs, h->obs, obs_bytes);
  backend_upload(be, rb->episode_starts + row, h->episode_starts, (size_t)N * sizeof(float));
  size_t words_per_env = tr->spec.action_kind == ENV_ACTION_DISCRETE ? 1 : (size_t)A * 2;
  backend_uniform(be, rb->uniforms, (size_t)N * words_per_env, tr->sample_seed, TRAINER_SUBSEQ_ACTIONS,
                  sample_offset(tr, words_per_env));
  backend_graph_run(be, &tr->rollout_graph, rollout_policy, tr);
  backend_download(be, h->actions, rb->step_actions, action_bytes);
  // The step's rows of the buffer, queued after the download (the step's wait, besides a truncation
  // bootstrap's below): on CUDA the device stores them while the host steps the envs; the stream
  // orders them before anything later overwrites step_obs or the policy's outputs (the next upload,
  // a bootstrap forward). Observations are stored as the first layer reads them (policy_obs_dtype):
  // rounded in fp16 and bf16 runs.
  NnDtype odt = rb->spec.obs_dtype;
  backend_cast(be, (char *)rb->obs + row * (size_t)O * nn_dtype_size(odt), odt, rb->step_obs, NN_F32,
               (size_t)N * (size_t)O);
  backend_copy(be, rb->actions + row * (size_t)A, rb->step_actions, action_bytes);
  backend_copy(be, rb->logp + row, tr->policy->acts.logp, (size_t)N * sizeof(float));
  backend_copy(be, rb->values + row, policy_values(tr->policy), (size_t)N * sizeof(float));

  // The env's view of the actions: integer indices, or the sample clipped to the bounds (SB3 stores
  // the unclipped sample, whose log-prob is in the buffer).
  if (tr->spec.action_kind == ENV_ACTION_DISCRETE) {
    int32_t *idx = (int32_t *)(void *)h->actions_env;
    for (int i = 0; i < N; i++) idx[i] = (int32_t)h->actions[i];
  } else {
    float lo = tr->spec.action_low, hi = tr->spec.action_high;
    for (int i = 0; i < N * A; i++) h->actions_env[i] = fminf(fmaxf(h->actions[i], lo), hi);
  }
  VecEnvBuffers vb = {.actions = h->actions_env,
                      .obs = h->obs,
                      .rewards = h->rewards,
                      .terminated = h->terminated,
                      .truncated = h->truncated,
                      .final_obs = h->final_obs};
  vecenv_step(tr->vec, &vb);
  tr->counters.vector_steps++;
  tr->counters.timesteps += (int64_t)N * tr->ranks;  // the run's steps: every rank steps N envs

  // VecNormalize.step_wait's order: obs statistics and obs, then rewards, then final observations.
  for (int i = 0; i < N; i++) h->dones[i] = h->terminated[i] | h->truncated[i];
  vecnorm_obs(&tr->norm, h->obs, N);
  vecnorm_reward(&tr->norm, h->rewards, h->dones);

  // Truncation bootstrap (SB3 collect_rollouts): reward += gamma V(final obs) where the episode was
  // cut, not ended; one critic forward over the packed final observations of those envs. It runs
  // over all N rows (the first k are this step's; the rest are earlier steps' or zero), the shape
  // rollout_finish's forward has: a GEMM shape per k would make the CPU backend build a oneDNN
  // primitive for each count of cut episodes inside the loop.
  int k = 0;
  for (int i = 0; i < N; i++) {
    if (h->truncated[i] && !h->terminated[i]) {
      memcpy(h->bootstrap_obs + (size_t)k * (size_t)O, h->final_obs + (size_t)i * (size_t)O, (size_t)O * sizeof(float));
      h->bootstrap_env[k++] = i;
    }
  }
  if (k > 0) {
    vecnorm_obs_frozen(&tr->norm, h->bootstrap_obs, k);
    backend_upload(be, rb->final_obs, h->bootstrap_obs, (size_t)N * (size_t)O * sizeof(float));
    policy_value_forward(tr->policy, rb->final_obs, N);
    backend_download(be, h->values, policy_values(tr->policy), (size_t)k * sizeof(float));
    float gamma = (float)tr->cfg.ppo.gamma;
    for (int j = 0; j < k; j++) h->rewards[h->bootstrap_env[j]] += gamma * h->values[j];
  }
  for (int i = 0; i < N; i++) {
    h->terminated_f[i] = (float)h->terminated[i];
    h->truncated_f[i] = (float)h->truncated[i];
    h->episode_starts[i] = (float)h->dones[i];
  }
  backend_upload(be, rb->rewards + row, h->rewards, (size_t)N * sizeof(float));
  backend_upload(be, rb->terminated + row, h->terminated_f, (size_t)N * sizeof(float));
  backend_upload(be, rb->truncated + row, h->truncated_f, (size_t)N * sizeof(float));
}

// After the last step: last_values = V(obs), last_dones = the last step's dones.
static void rollout_finish(Trainer *tr) {
  Backend *be = tr->backend;
  RolloutBuffer *rb = &tr->rollout;
  backend_upload(be, rb->final_obs, tr->h.obs, (size_t)tr->N * (size_t)tr->O * sizeof(float));
  policy_value_forward(tr->policy, rb->final_obs, tr->N);
  backend_copy(be, rb->last_values, policy_values(tr->policy), (size_t)tr->N * sizeof(float));
  backend_upload(be, rb->last_dones, tr->h.episode_starts, (size_t)tr->N * sizeof(float));
}

// --- data parallelism (ppo/dist.h): what the ranks reduce in the update ---------------------------------

// SB3 normalises the advantages over the minibatch; across ranks the minibatch is the union of the
// ranks' minibatches (R x batch_size rows), so its mean and std are reduced (two sums of doubles
// over the ranks) and the loss then runs on the normalised advantages without normalising again.
static void dist_normalize_advantages(Trainer *tr, int B, PpoLossHyper *hyper) {
  if (!hyper->normalize_advantage) return;
  Backend *be = tr->backend;
  RolloutBuffer *rb = &tr->rollout;
  double *count_sum = rb->mb_adv_moments, *sq_dev = rb->mb_adv_moments + 2;
  backend_advantage_count_sum(be, count_sum, rb->mb_advantages, B);
  dist_allreduce_sum_f64(be, count_sum, 2);
  backend_advantage_sq_dev(be, sq_dev, rb->mb_advantages, B, count_sum);
  dist_allreduce_sum_f64(be, sq_dev, 1);
  backend_advantage_normalize(be, rb->mb_advantages, B, count_sum, sq_dev);
  hyper->normalize_advantage = 0;
}

static double dist_mean_over_ranks(const Trainer *tr, double value) {
  dist_host_allreduce_sum_f64(&value, 1);
  return value / tr->ranks;
}

// The gradient of the mean loss over the ranks is the mean of the ranks' gradients: each rank's
// backward starts from its seeds times 1/R (three (B) arrays instead of a pass over the slab) and
// the grads slab is then summed over the ranks.
static void dist_scale_loss_seeds(Trainer *tr, int B) {
  float inv = 1.0f / (float)tr->ranks;
  backend_scale(tr->backend, tr->rollout.mb_dlogp, inv, (size_t)B);
  backend_scale(tr->backend, tr->rollout.mb_dentropy, inv, (size_t)B);
  backend_scale(tr->backend, tr->rollout.mb_dvalues, inv, (size_t)B);
}

// One all-reduce over the whole grads slab, before unscale / clip / Adam: those then see the same
// gradients on every rank (an inf or NaN on one rank is one on all: dist_host_allreduce_sum_f32),
// so the GradScaler's found-inf, the clip coefficient and the step agree without more messages.
static void dist_sum_gradients(Trainer *tr) {
  Policy *pol = tr->policy;
  policy_grads_settle(pol);
  dist_allreduce_sum_f32(tr->backend, pol->grads_memory, pol->slab_floats);
}

// --- update --------------------------------------------------------------------------------------------

typedef struct {
  int rows;            // stats rows written
  int last_epoch_row;  // first row of the last epoch run
  bool early_stopped;
  bool stopped;  // a stop was agreed before minibatch `rows`: the caller restores the snapshot
} UpdateResult;

// One minibatch's update in two halves around SB3's approx-KL check. The arguments are the same
// for every full minibatch of an iteration, and the rows come from rb->mb_index (rollout_select),
// so a full minibatch without the KL check is one recorded graph (backend_graph_run) in a
// one-rank run (several ranks reduce through MPI on the host between the ops).
typedef struct {
  Trainer *tr;
  PpoLossHyper hyper;
  const float *loss_scale;  // the GradScaler's scale (backend memory), NULL without it
  int B;
} Minibatch;

// Gathers the selected rows; the loss, its statistics (rb->mb_stats) and per-sample gradients.
static void minibatch_loss(Minibatch *mb) {
  Trainer *tr = mb->tr;
  RolloutBuffer *rb = &tr->rollout;
  Policy *pol = tr->policy;
  rollout_gather_selected(rb, mb->B);
  policy_evaluate_stored(pol, rb->mb_obs, rb->mb_actions, mb->B);
  PpoLossHyper hyper = mb->hyper;
  if (tr->ranks > 1) dist_normalize_advantages(tr, mb->B, &hyper);
  backend_ppo_loss(tr->backend, rb->mb_stats, rb->mb_dlogp, rb->mb_dentropy, rb->mb_dvalues, pol->acts.logp,
                   pol->acts.entropy, policy_values(pol), rb->mb_logp, rb->mb_values, rb->mb_advantages, rb->mb_returns,
                   mb->B, hyper, mb->loss_scale);
}

// Backward, then the optimiser step (unscale, clip, Adam, scaler update); found-inf and the grad
// norm go into rb->mb_stats.
static void minibatch_step(Minibatch *mb) {
  Trainer *tr = mb->tr;
  RolloutBuffer *rb = &tr->rollout;
  Policy *pol = tr->policy;
  policy_zero_grad(pol);
  if (tr->ranks > 1) dist_scale_loss_seeds(tr, mb->B);
  policy_backward_stored(pol, rb->mb_obs, rb->mb_actions, rb->mb_dlogp, rb->mb_dentropy, rb->mb_dvalues, mb->B);
  if (tr->ranks > 1) dist_sum_gradients(tr);
  optim_step(tr->optim, pol);
  backend_copy(tr->backend, rb->mb_stats + TRAINER_STAT_SKIPPED, &tr->optim->scalars->found_inf, sizeof(float));
  backend_copy(tr->backend, rb->mb_stats + TRAINER_STAT_GRAD_NORM, &tr->optim->scalars->grad_norm, sizeof(float));
}

static void minibatch_whole(void *arg) {
  minibatch_loss(arg);
  minibatch_step(arg);
}

static UpdateResult update(Trainer *tr) {
  const Config *cfg = &tr->cfg;
  Backend *be = tr->backend;
  RolloutBuffer *rb = &tr->rollout;
  Minibatch mb = {
      .tr = tr,
      .hyper = {.clip_range = cfg->ppo.clip_range,
                .clip_range_vf = cfg->ppo.clip_range_vf.is_none ? 0.0 : cfg->ppo.clip_range_vf.value,
                .ent_coef = cfg->ppo.ent_coef,
                .vf_coef = cfg->ppo.vf_coef,
                .normalize_advantage = cfg->ppo.normalize_advantage},
      .loss_scale = tr->optim->spec.scaler.enabled ? tr->optim->scaler.scale : NULL,
  };
  bool check_kl = !cfg->ppo.target_kl.is_none;
  double kl_limit = check_kl ? 1.5 * cfg->ppo.target_kl.value : 0.0;
  UpdateResult r = {0, 0, false, false};
  int per_epoch = rollout_minibatches(rb);
  for (int epoch = 0; epoch < (int)cfg->ppo.n_epochs && !r.early_stopped; epoch++) {
    rollout_permute(rb, tr->sample_seed, rank_subsequence(tr, TRAINER_SUBSEQ_PERMUTATION),
                    (uint64_t)tr->counters.epochs_drawn++);
    r.last_epoch_row = r.rows;
    for (int k = 0; k < per_epoch; k++) {
      // A stop request between two minibatches (not after the last: the update is then done)
      if (r.rows > 0 && stop_agreed(tr, TRAINER_PHASE_UPDATE, r.rows, STOP_VOTE_MINIBATCHES)) {
        r.stopped = true;
        return r;
      }
      mb.B = rollout_select(rb, k);
      float *stats = rb->stats + (size_t)r.rows * PPO_STAT_COUNT;
      r.rows++;
      if (!check_kl && tr->ranks == 1 && mb.B == rb->spec.batch_size) {
        backend_graph_run(be, &tr->update_graph, minibatch_whole, &mb);
      } else {  // the KL check reads approx_kl between the halves; a last partial minibatch is not recorded
        minibatch_loss(&mb);
        if (check_kl) {  // SB3 checks before the step (a host read per minibatch, only with target_kl)
          float kl;
          backend_download(be, &kl, rb->mb_stats + PPO_STAT_APPROX_KL, sizeof kl);
          double mean_kl = tr->ranks > 1 ? dist_mean_over_ranks(tr, kl) : (double)kl;  // every rank stops together
          if (mean_kl > kl_limit) {
            backend_copy(be, stats, rb->mb_stats, PPO_STAT_COUNT * sizeof(float));
            r.early_stopped = true;
            break;
          }
        }
        minibatch_step(&mb);
      }
      backend_copy(be, stats, rb->mb_stats, PPO_STAT_COUNT * sizeof(float));
    }
    tr->counters.n_updates++;  // SB3 counts the epoch that stopped early too
  }
  return r;
}

// The logged values of the whole run (rank 0 logs them): the update's losses, KL and clip fraction
// averaged over the ranks (each rank's minibatches are equally many and equally large); the episode
// means weighted by each rank's episode count (the last 100 episodes of each rank). grad_norm, std,
// loss_scale, skipped steps and the explained variance (fill_stats) are the same on every rank
// already.
static void dist_reduce_stats(Trainer *tr, TrainStats *s) {
  double v[7 + 2 * ENV_LOG_MAX];
  int k = 0;
  double *means[] = {&s->policy_gradient_loss, &s->value_loss, &s->entropy_loss, &s->approx_kl,
                     &s->clip_fraction,        &s->loss};
  const int n_means = (int)(sizeof means / sizeof means[0]);
  for (int i = 0; i < n_means; i++) v[k++] = *means[i] / tr->ranks;
  v[k++] = s->episodes;
  double *episode_means[2 + ENV_LOG_MAX] = {&s->ep_rew_mean, &s->ep_len_mean};
  for (int f = 0; f < s->n_env_metrics; f++) episode_means[2 + f] = &s->env_metrics[f];
  int n_episode = 2 + s->n_env_metrics;
  for (int f = 0; f < n_episode; f++) {  // each field's sum and count: a field may lack a value (NaN)
    int defined;
    v[k++] = vecenv_log_sum(tr->vec, f, &defined);
    v[k++] = defined;
  }
  dist_host_allreduce_sum_f64(v, (size_t)k);
  for (int i = 0; i < n_means; i++) *means[i] = v[i];
  s->episodes = (int)v[n_means];
  for (int f = 0; f < n_episode; f++) {
    double sum = v[n_means + 1 + 2 * f], defined = v[n_means + 2 + 2 * f];
    *episode_means[f] = defined > 0 ? sum / defined : NAN;
  }
}

// SB3's explained variance of the rollout's values against its returns; with several ranks, of
// every rank's rollout as one buffer: the ranks' moments are gathered and merged in rank order, so
// every rank logs the same number (one rank: the moments' own, SB3's formula).
static double explained_variance(Trainer *tr) {
  double moments[NN_EV_MOMENTS];
  backend_explained_variance(tr->backend, tr->rollout.ev_moments, tr->rollout.values, tr->rollout.returns,
                             (size_t)tr->T * (size_t)tr->N);
  backend_download(tr->backend, moments, tr->rollout.ev_moments, sizeof moments);
  if (tr->ranks > 1) {
    dist_host_allgather(moments, tr->h.ev_gathered, sizeof moments);
    memcpy(moments, tr->h.ev_gathered, sizeof moments);
    for (int r = 1; r < tr->ranks; r++) nn_ev_moments_merge(moments, tr->h.ev_gathered + (size_t)r * NN_EV_MOMENTS);
  }
  return nn_explained_variance(moments);
}

static void fill_stats(Trainer *tr, TrainStats *s, const UpdateResult *u, double progress_remaining) {
  const Config *cfg = &tr->cfg;
  HostBuffers *h = &tr->h;
  backend_download(tr->backend, h->stats, tr->rollout.stats, (size_t)u->rows * PPO_STAT_COUNT * sizeof(float));
  double pg = 0, vl = 0, ent = 0, cf = 0, kl = 0, gn = 0;
  int64_t skipped = 0;
  int steps = 0;
  for (int r = 0; r < u->rows; r++) {
    const float *row = h->stats + (size_t)r * PPO_STAT_COUNT;
    pg += row[PPO_STAT_POLICY_LOSS];
    vl += row[PPO_STAT_VALUE_LOSS];
    ent += row[PPO_STAT_ENTROPY_LOSS];
    cf += row[PPO_STAT_CLIP_FRACTION];
    if (r >= u->last_epoch_row) kl += row[PPO_STAT_APPROX_KL];
    bool stepped = !(u->early_stopped && r == u->rows - 1);
    if (stepped && row[TRAINER_STAT_SKIPPED] != 0.0f) {
      skipped++;  // its norm is inf or NaN (the scaler skipped it): not in the mean
    } else if (stepped) {
      gn += row[TRAINER_STAT_GRAD_NORM];
      steps++;
    }
  }
  int rows = u->rows > 0 ? u->rows : 1;
  s->policy_gradient_loss = pg / rows;
  s->value_loss = vl / rows;
  s->entropy_loss = ent / rows;
  s->clip_fraction = cf / rows;
  s->approx_kl = kl / (u->rows - u->last_epoch_row > 0 ? u->rows - u->last_epoch_row : 1);
  s->loss = u->rows > 0 ? h->stats[(size_t)(u->rows - 1) * PPO_STAT_COUNT + PPO_STAT_LOSS] : NAN;
  s->grad_norm = steps > 0 ? gn / steps : NAN;
  s->steps = steps;
  s->skipped_steps = skipped;
  s->minibatches = u->rows;
  s->early_stopped = u->early_stopped;
  tr->counters.skipped_steps += skipped;

  s->explained_variance = explained_variance(tr);
  s->learning_rate = optim_lr(tr->optim, progress_remaining);
  s->clip_range = cfg->ppo.clip_range;
  s->clip_range_vf = cfg->ppo.clip_range_vf.is_none ? NAN : cfg->ppo.clip_range_vf.value;
  s->std = NAN;
  if (tr->policy->params.log_std) {
    backend_download(tr->backend, h->log_std, tr->policy->params.log_std, (size_t)tr->A * sizeof(float));
    double sum = 0;
    for (int j = 0; j < tr->A; j++) sum += exp(h->log_std[j]);
    s->std = sum / tr->A;
  }
  OptimScalars os;
  optim_read_state(tr->optim, &os);
  s->loss_scale = tr->optim->spec.scaler.enabled ? os.scale : 1.0;

  s->episodes = vecenv_log_count(tr->vec);
  s->ep_rew_mean = vecenv_log_mean(tr->vec, ENV_LOG_EPISODE_RETURN);
  s->ep_len_mean = vecenv_log_mean(tr->vec, ENV_LOG_EPISODE_LENGTH);
  s->n_env_metrics = tr->spec.log_size - 2;
  for (int f = 2; f < tr->spec.log_size; f++) {
    s->env_metric_names[f - 2] = tr->spec.log_names[f];
    s->env_metrics[f - 2] = vecenv_log_mean(tr->vec, f);
  }
  if (tr->ranks > 1) dist_reduce_stats(tr, s);
}

// GAE, the update and the statistics: the iteration's second half, after a rollout (t0: its start).
static TrainerStatus learn(Trainer *tr, TrainStats *s, double t0) {
  backend_sync(tr->backend);
  double t1 = timer_now();
  rollout_compute_gae(&tr->rollout, tr->cfg.ppo.gamma, tr->cfg.ppo.gae_lambda);
  backend_sync(tr->backend);
  double t2 = timer_now();
  // SB3 updates the progress after the rollout, before train(): the update uses the new value.
  double progress = 1.0 - (double)tr->counters.timesteps / (double)tr->cfg.run.total_timesteps;
  if (progress < 0.0) progress = 0.0;
  optim_set_progress(tr->optim, progress);  // before the snapshot, which then holds the same rate
  update_snapshot(tr, true);
  size_t syncs_before_update = backend_sync_count(tr->backend);
  UpdateResult u = update(tr);
  s->update_host_syncs = (int64_t)(backend_sync_count(tr->backend) - syncs_before_update);
  if (u.stopped) {  // the optimiser's state and the envs' back to the iteration's start
    update_snapshot(tr, false);
    snapshot_restore(tr);
    return TRAINER_INTERRUPTED;
  }
  backend_sync(tr->backend);
  double t3 = timer_now();
  tr->counters.iterations++;
  fill_stats(tr, s, &u, progress);
  s->iteration = tr->counters.iterations;
  s->timesteps = tr->counters.timesteps;
  s->n_updates = tr->counters.n_updates;
  s->rollout_s = t1 - t0;
  s->gae_s = t2 - t1;
  s->update_s = t3 - t2;
  s->fps = (double)tr->T * tr->N * tr->ranks / (t3 - t0);
  return TRAINER_OK;
}

TrainerStatus trainer_iteration(Trainer *tr, TrainStats *s) {
  memset(s, 0, sizeof *s);
  snapshot_save(tr);
  double t0 = timer_now();
  for (int t = 0; t < tr->T; t++) {
    // A preemption notice: back to the iteration's start (several ranks vote every STOP_VOTE_STEPS)
    if (stop_agreed(tr, TRAINER_PHASE_ROLLOUT, t, STOP_VOTE_STEPS)) {
      snapshot_restore(tr);
      return TRAINER_INTERRUPTED;
    }
    rollout_step(tr, t);
  }
  rollout_finish(tr);
  return learn(tr, s, t0);
}

TrainerStatus trainer_learn(Trainer *tr, TrainStats *s) {
  memset(s, 0, sizeof *s);
  snapshot_save(tr);
  return learn(tr, s, timer_now());
}
