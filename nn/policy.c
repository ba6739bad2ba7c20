// nn/policy.c: the actor-critic's slabs, init, forward, backward and rollout sampling.
#include "nn/policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/error.h"

// --- spec and shapes -------------------------------------------------------------------------------------

int policy_spec_check(const PolicySpec *spec) {
  if (spec->obs_dim < 1) return error_set("policy: obs_dim %d must be >= 1", spec->obs_dim), -1;
  if (spec->action_dim < 1) return error_set("policy: action_dim %d must be >= 1", spec->action_dim), -1;
  if (spec->head != POLICY_HEAD_CATEGORICAL && spec->head != POLICY_HEAD_GAUSSIAN)
    return error_set("policy: head must be categorical or gaussian"), -1;
  if (spec->head == POLICY_HEAD_CATEGORICAL && spec->action_dim < 2)
    return error_set("policy: a categorical head needs at least 2 actions, got %d", spec->action_dim), -1;
  for (int net = 0; net < 2; net++) {
    int n = net ? spec->n_vf : spec->n_pi;
    const int *layers = net ? spec->vf_layers : spec->pi_layers;
    const char *key = net ? "vf_layers" : "pi_layers";
    if (n < 0 || n > NN_MAX_LINEAR - 1)
      return error_set("policy: %s has %d layers, allowed 0..%d", key, n, NN_MAX_LINEAR - 1), -1;
    for (int l = 0; l < n; l++)
      if (layers[l] < 1 || layers[l] > 65536)
        return error_set("policy: %s[%d] = %d, allowed 1..65536", key, l, layers[l]), -1;
  }
  if (spec->activation <= NN_ACT_NONE || spec->activation >= NN_ACT_COUNT)
    return error_set("policy: activation %d is not an NN_ACT_ value (%d..%d)", spec->activation, NN_ACT_NONE + 1,
                     NN_ACT_COUNT - 1),
           -1;
  if (spec->dtype != NN_F32 && spec->dtype != NN_F16 && spec->dtype != NN_BF16)
    return error_set("policy: precision must be fp32, fp16 or bf16"), -1;
  if (spec->max_batch < 1) return error_set("policy: max_batch %d must be >= 1", spec->max_batch), -1;
  if (spec->obs_pad < 0 || spec->obs_pad > 256)
    return error_set("policy: obs_pad %d, allowed 0 (the precision's choice) .. 256", spec->obs_pad), -1;
  return 0;
}

int policy_obs_pad_multiple(const PolicySpec *spec) {
  if (spec->dtype == NN_F32) return 1;  // fp32 GEMMs read the observations and weights themselves
  if (spec->obs_pad > 0) return spec->obs_pad;
  return spec->dtype == NN_BF16 ? 32 : 8;
}

int policy_padded_obs_dim(const PolicySpec *spec) {
  int k = policy_obs_pad_multiple(spec);
  return (spec->obs_dim + k - 1) / k * k;
}

static MlpShape net_shape(const PolicySpec *spec, int vf) {
  MlpShape s = {0};
  int n = vf ? spec->n_vf : spec->n_pi;
  const int *layers = vf ? spec->vf_layers : spec->pi_layers;
  s.n_linear = n + 1;
  s.dims[0] = spec->obs_dim;
  for (int l = 0; l < n; l++) s.dims[l + 1] = layers[l];
  s.dims[n + 1] = vf ? 1 : spec->action_dim;
  s.act = spec->activation;
  return s;
}

// --- the size tables: one entry per tensor, in slab order ----------------------------------------------------

// Entries of the largest table (the activations': obs_lp, obs_pad; per network NN_MAX_LINEAR
// outputs, their low-precision copies but the last, dh, dh_next, dh_lp, dh_t; logp, entropy,
// dhead, dvalues), plus one. Each table adds its entries through table_add, which stops at it.
#define POLICY_MAX_ENTRIES (2 * (2 * NN_MAX_LINEAR + 4) + 5)

typedef struct {
  void **ptr;  // where the tensor's address goes
  size_t bytes;
} SlabEntry;

static size_t align64(size_t n) { return (n + 63) / 64 * 64; }

// Entry *n of a table (then *n + 1): a tensor added to the tables needs POLICY_MAX_ENTRIES raised.
static void table_add(SlabEntry *e, int *n, void **ptr, size_t bytes) {
  CHECK(*n < POLICY_MAX_ENTRIES, "policy: more slab entries than POLICY_MAX_ENTRIES (raise it)");
  e[(*n)++] = (SlabEntry){ptr, bytes};
}

static int padded(const PolicySpec *spec) { return policy_padded_obs_dim(spec) > spec->obs_dim; }

// Bytes of one network's padded first-layer weights (dims[1], padded O) in the low precision.
static size_t padded_w_bytes(const PolicySpec *spec, const MlpShape *s) {
  return padded(spec) ? align64((size_t)s->dims[1] * policy_padded_obs_dim(spec) * nn_dtype_size(spec->dtype)) : 0;
}

// Parameter tensors of `p`, each starting at a multiple of POLICY_PARAM_ALIGN floats of the slab
// (zero floats between them). Packed tensors put every critic tensor of seed.ini's networks (an odd
// 3,685,379 actor parameters before it) 12 bytes past a 16-byte boundary, and its fp16 / bf16
// copies 6 bytes past one, where cuBLAS's tensor-core kernels need 16-byte aligned operands and
// AVX-512 loads split cache lines. The padding stays zero for good: its gradient is zero, so Adam
// leaves it at zero (m = v = 0, step 0), and it adds nothing to the gradient norm.
#define POLICY_PARAM_ALIGN 32  // floats: 128 bytes of fp32, 64 of the fp16 / bf16 copy

// Entry n of the table: `floats` of the tensor, padded; used[n] (when asked for) its own bytes.
static void param_entry(SlabEntry *e, size_t *used, int n, void **ptr, size_t floats) {
  size_t padded = (floats + POLICY_PARAM_ALIGN - 1) / POLICY_PARAM_ALIGN * POLICY_PARAM_ALIGN;
  int at = n;
  table_add(e, &at, ptr, padded * sizeof(float));
  if (used) used[n] = floats * sizeof(float);
}

static int param_table(SlabEntry *e, size_t *used, PolicyParams *p, const MlpShape *pi, const MlpShape *vf,
                       const PolicySpec *spec) {
  int n = 0;
  const MlpShape *shapes[2] = {pi, vf};
  MlpParams *nets[2] = {&p->pi, &p->vf};
  for (int net = 0; net < 2; net++)
    for (int l = 0; l < shapes[net]->n_linear; l++) {
      size_t I = (size_t)shapes[net]->dims[l], O = (size_t)shapes[net]->dims[l + 1];
      param_entry(e, used, n++, (void **)&nets[net]->w[l], O * I);
      param_entry(e, used, n++, (void **)&nets[net]->b[l], O);
    }
  p->log_std = NULL;
  if (spec->head == POLICY_HEAD_GAUSSIAN) param_entry(e, used, n++, (void **)&p->log_std, (size_t)spec->action_dim);
  return n;
}

size_t policy_parameter_count(const PolicySpec *spec) {
  MlpShape pi = net_shape(spec, 0), vf = net_shape(spec, 1);
  return mlp_param_count(&pi) + mlp_param_count(&vf) +
         (spec->head == POLICY_HEAD_GAUSSIAN ? (size_t)spec->action_dim : 0);
}

// Moves each tensor of a host copy of a params-layout slab between its slab place and the packed
// order (tensor after tensor, no padding: the checkpoint's optim/m and optim/v). Unpacking zeroes
// the padding.
static void slab_repack(const Policy *policy, float *host, int pack) {
  SlabEntry e[POLICY_MAX_ENTRIES];
  size_t used[POLICY_MAX_ENTRIES];
  PolicyParams dummy;
  int n = param_table(e, used, &dummy, &policy->pi_shape, &policy->vf_shape, &policy->spec);
  size_t slab_at[POLICY_MAX_ENTRIES], packed_at[POLICY_MAX_ENTRIES], at = 0, packed = 0;
  for (int i = 0; i < n; i++) {
    slab_at[i] = at / sizeof(float);
    packed_at[i] = packed / sizeof(float);
    at += e[i].bytes;
    packed += used[i];
  }
  if (pack) {  // forwards: each tensor moves to a lower (or the same) place
    for (int i = 0; i < n; i++) memmove(host + packed_at[i], host + slab_at[i], used[i]);
    return;
  }
  for (int i = n - 1; i >= 0; i--) {  // backwards: each tensor moves to a higher place
    memmove(host + slab_at[i], host + packed_at[i], used[i]);
    size_t end = slab_at[i] + used[i] / sizeof(float), next = slab_at[i] + e[i].bytes / sizeof(float);
    memset(host + end, 0, (next - end) * sizeof(float));
  }
}

void policy_slab_pack(const Policy *policy, float *host) { slab_repack(policy, host, 1); }
void policy_slab_unpack(const Policy *policy, float *host) { slab_repack(policy, host, 0); }

static int acts_table(SlabEntry *e, PolicyActs *a, const MlpShape *pi, const MlpShape *vf, const PolicySpec *spec) {
  int n = 0;
  size_t B = (size_t)spec->max_batch, lp = nn_dtype_size(spec->dtype);
  int low = spec->dtype != NN_F32;
  if (low) table_add(e, &n, &a->obs_lp, align64(B * spec->obs_dim * lp));
  a->obs_pad = NULL;
  if (padded(spec)) table_add(e, &n, &a->obs_pad, align64(B * policy_padded_obs_dim(spec) * lp));
  const MlpShape *shapes[2] = {pi, vf};
  MlpActs *nets[2] = {&a->pi, &a->vf};
  for (int net = 0; net < 2; net++) {
    const MlpShape *s = shapes[net];
    size_t maxd = (size_t)mlp_max_dim(s);
    for (int l = 0; l < s->n_linear; l++) {
      table_add(e, &n, (void **)&nets[net]->h[l], align64(B * s->dims[l + 1] * sizeof(float)));
      if (low && l < s->n_linear - 1) table_add(e, &n, &nets[net]->h_lp[l], align64(B * s->dims[l + 1] * lp));
    }
    size_t gs = low ? lp : sizeof(float);  // the input gradients' dtype (mlp_backward)
    table_add(e, &n, &nets[net]->dh, align64(B * maxd * gs));
    table_add(e, &n, &nets[net]->dh_next, align64(B * maxd * gs));
    if (low) table_add(e, &n, &nets[net]->dh_lp, align64(B * maxd * lp));
    nets[net]->dh_t = NULL;
    if (spec->dtype == NN_BF16) table_add(e, &n, &nets[net]->dh_t, align64(B * maxd * lp));
  }
  table_add(e, &n, (void **)&a->logp, align64(B * sizeof(float)));
  table_add(e, &n, (void **)&a->entropy, align64(B * sizeof(float)));
  table_add(e, &n, (void **)&a->dhead, align64(B * spec->action_dim * sizeof(float)));
  table_add(e, &n, (void **)&a->dvalues, align64(B * sizeof(float)));
  return n;
}

static size_t table_bytes(const SlabEntry *e, int n) {
  size_t total = 0;
  for (int i = 0; i < n; i++) total += e[i].bytes;
  return total;
}

static void table_point(const SlabEntry *e, int n, void *base) {
  char *p = base;
  for (int i = 0; i < n; i++) {
    *e[i].ptr = p;
    p += e[i].bytes;
  }
}

// The first layer's input width: the observations, padded in fp16 and bf16 (policy_padded_obs_dim).
static int first_in_dim(const PolicySpec *spec) { return padded(spec) ? policy_padded_obs_dim(spec) : spec->obs_dim; }

// Policy.largest_layer: the largest in x out of a layer of either network, the first layer's input as
// its forward GEMM reads it.
static double largest_layer(const PolicySpec *spec, const MlpShape *pi, const MlpShape *vf) {
  double largest = 0.0;
  const MlpShape *shapes[2] = {pi, vf};
  for (int net = 0; net < 2; net++)
    for (int l = 0; l < shapes[net]->n_linear; l++) {
      double in = l == 0 ? first_in_dim(spec) : shapes[net]->dims[l];
      double macs = in * shapes[net]->dims[l + 1];
      if (macs > largest) largest = macs;
    }
  return largest;
}

// GEMM scratch (nn/backend.h: backend_reserve_workspace): operands widened from fp16 / bf16, and
// a (B, O) output the CPU backend transposes for few-row products; the largest call of any batch
static size_t workspace_bytes(const PolicySpec *spec, const MlpShape *pi, const MlpShape *vf) {
  size_t most = 0, B = (size_t)spec->max_batch;
  for (int net = 0; net < 2; net++) {
    const MlpShape *s = net ? vf : pi;
    for (int l = 0; l < s->n_linear; l++) {
      size_t I = (size_t)(l == 0 ? first_in_dim(spec) : s->dims[l]), O = (size_t)s->dims[l + 1];
      size_t fwd = B * I + O * I, dw = B * O + B * I, dx = B * O + O * I;
      size_t m = spec->dtype == NN_F32 ? 0 : (fwd > dw ? fwd : dw);
      m = spec->dtype == NN_F32 ? 0 : (m > dx ? m : dx);
      m += B * (O > I ? O : I);
      most = m > most ? m : most;
    }
  }
  return most * sizeof(float);
}

size_t policy_backend_bytes(const PolicySpec *spec, Backend *backend) {
  MlpShape pi = net_shape(spec, 0), vf = net_shape(spec, 1);
  // what the backend will hold once policy_init reserved this: more where it keeps its own (CUDA)
  size_t bytes = workspace_bytes(spec, &pi, &vf), held = backend_workspace_bytes(backend);
  bytes = held > bytes ? held : bytes;
  for (int net = 0; net < 2 && spec->dtype != NN_F32; net++) {  // policy_refresh_derived's matrices
    const MlpShape *s = net ? &vf : &pi;
    for (int l = 0; l < s->n_linear; l++)
      bytes += backend_weights_bytes(backend, spec->dtype, s->dims[l + 1], l == 0 ? first_in_dim(spec) : s->dims[l]);
  }
  return bytes;
}

PolicyMemoryPlan policy_plan(const PolicySpec *spec) {
  MlpShape pi = net_shape(spec, 0), vf = net_shape(spec, 1);
  PolicyParams p;
  PolicyActs a;
  SlabEntry e[POLICY_MAX_ENTRIES];
  PolicyMemoryPlan plan = {0};
  plan.params = align64(table_bytes(e, param_table(e, NULL, &p, &pi, &vf, spec)));
  size_t count = table_bytes(e, param_table(e, NULL, &p, &pi, &vf, spec)) / sizeof(float);
  plan.lowp = spec->dtype == NN_F32 ? 0 : align64(count * nn_dtype_size(spec->dtype));
  plan.lowp += padded_w_bytes(spec, &pi) + padded_w_bytes(spec, &vf);  // after the copy of the params slab
  plan.acts = table_bytes(e, acts_table(e, &a, &pi, &vf, spec));
  plan.total = 4 * plan.params + plan.lowp + plan.acts;
  return plan;
}

// --- orthogonal init ------------------------------------------------------------------------------------------

// Householder QR of the tall (m, n) matrix T (column-major, m >= n), Q's column j multiplied by the
// sign of R[j][j], exactly torch's orthogonal_ (q, r = qr(A); q *= sign(diag(r))).
static void orthogonal_tall(double *Q, double *T, int m, int n) {
  double *V = CHECK_ALLOC((size_t)m * n * sizeof(double), "orthogonal init: Householder vectors");
  double *vnorm2 = CHECK_ALLOC((size_t)n * sizeof(double), "orthogonal init");
  double *rdiag = CHECK_ALLOC((size_t)n * sizeof(double), "orthogonal init");
  for (int k = 0; k < n; k++) {
    double *col = T + (size_t)k * m, *v = V + (size_t)k * m;
    double norm = 0;
    for (int i = k; i < m; i++) norm += col[i] * col[i];
    norm = sqrt(norm);
    double alpha = col[k] >= 0 ? -norm : norm;
    for (int i = 0; i < m; i++) v[i] = i < k ? 0.0 : col[i];
    v[k] -= alpha;
    double vv = 0;
    for (int i = k; i < m; i++) vv += v[i] * v[i];
    vnorm2[k] = vv;
    rdiag[k] = alpha;
    if (vv == 0) continue;
#pragma omp parallel for schedule(static)
    for (int j = k; j < n; j++) {
      double *c = T + (size_t)j * m, s = 0;
      for (int i = k; i < m; i++) s += v[i] * c[i];
      s *= 2.0 / vv;
      for (int i = k; i < m; i++) c[i] -= s * v[i];
    }
  }
  // Q = H_0 ... H_{n-1} I(m, n), applied right to left
  memset(Q, 0, (size_t)m * n * sizeof(double));
  for (int j = 0; j < n; j++) Q[(size_t)j * m + j] = 1.0;
  for (int k = n - 1; k >= 0; k--) {
    const double *v = V + (size_t)k * m;
    double vv = vnorm2[k];
    if (vv == 0) continue;
#pragma omp parallel for schedule(static)
    for (int j = 0; j < n; j++) {
      double *c = Q + (size_t)j * m, s = 0;
      for (int i = k; i < m; i++) s += v[i] * c[i];
      s *= 2.0 / vv;
      for (int i = k; i < m; i++) c[i] -= s * v[i];
    }
  }
  for (int j = 0; j < n; j++) {
    double sign = rdiag[j] > 0 ? 1.0 : rdiag[j] < 0 ? -1.0 : 0.0;
    for (int i = 0; i < m; i++) Q[(size_t)j * m + i] *= sign;
  }
  free(V), free(vnorm2), free(rdiag);
}

void nn_orthogonal_from_gaussian(float *out, double *gauss, int rows, int cols, double gain) {
  int tall = rows >= cols;
  int m = tall ? rows : cols, n = tall ? cols : rows;
  double *T = CHECK_ALLOC((size_t)m * n * sizeof(double), "orthogonal init");
  double *Q = CHECK_ALLOC((size_t)m * n * sizeof(double), "orthogonal init");
  // T(i, j) column-major: gauss when tall, its transpose otherwise
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      size_t at = tall ? (size_t)c * m + r : (size_t)r * m + c;
      T[at] = gauss[(size_t)r * cols + c];
    }
  orthogonal_tall(Q, T, m, n);
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      double q = tall ? Q[(size_t)c * m + r] : Q[(size_t)r * m + c];
      out[(size_t)r * cols + c] = (float)(gain * q);
    }
  free(T), free(Q);
}

static void init_net(Policy *policy, MlpParams *p, const MlpShape *s, double head_gain, Rng *rng) {
  for (int l = 0; l < s->n_linear; l++) {
    int rows = s->dims[l + 1], cols = s->dims[l];
    size_t n = (size_t)rows * cols;
    double *gauss = CHECK_ALLOC(n * sizeof(double), "orthogonal init");
    float *w = CHECK_ALLOC(n * sizeof(float), "orthogonal init");
    for (size_t i = 0; i < n; i++) gauss[i] = rng_normal(rng);
    double gain = l == s->n_linear - 1 ? head_gain : sqrt(2.0);
    nn_orthogonal_from_gaussian(w, gauss, rows, cols, gain);
    backend_upload(policy->backend, p->w[l], w, n * sizeof(float));
    free(gauss), free(w);
  }
}

// torch.nn.Linear.reset_parameters: W and b uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)), each
// layer's weights (row-major) then its biases.
static void init_net_torch(Policy *policy, MlpParams *p, const MlpShape *s, Rng *rng) {
  for (int l = 0; l < s->n_linear; l++) {
    int rows = s->dims[l + 1], cols = s->dims[l];
    size_t n = (size_t)rows * cols;
    float *host = CHECK_ALLOC((n + (size_t)rows) * sizeof(float), "torch default init");
    double bound = 1.0 / sqrt((double)cols);
    for (size_t i = 0; i < n + (size_t)rows; i++) host[i] = (float)((2.0 * rng_uniform(rng) - 1.0) * bound);
    backend_upload(policy->backend, p->w[l], host, n * sizeof(float));
    backend_upload(policy->backend, p->b[l], host + n, (size_t)rows * sizeof(float));
    free(host);
  }
}

// --- lifetime ---------------------------------------------------------------------------------------------------

Policy *policy_init(Backend *backend, const PolicySpec *spec) {
  if (policy_spec_check(spec) != 0) return NULL;
  Policy *policy = CHECK_ALLOC(sizeof *policy, "policy");
  memset(policy, 0, sizeof *policy);
  policy->backend = backend;
  policy->spec = *spec;
  policy->pi_shape = net_shape(spec, 0);
  policy->vf_shape = net_shape(spec, 1);
  policy->largest_layer = largest_layer(spec, &policy->pi_shape, &policy->vf_shape);
  policy->plan = policy_plan(spec);
  policy->parameters = policy_parameter_count(spec);

  SlabEntry e[POLICY_MAX_ENTRIES];
  int n = param_table(e, NULL, &policy->params, &policy->pi_shape, &policy->vf_shape, spec);
  policy->slab_floats = table_bytes(e, n) / sizeof(float);
  policy->params_memory = backend_alloc(backend, policy->plan.params);
  table_point(e, n, policy->params_memory);
  n = param_table(e, NULL, &policy->grads, &policy->pi_shape, &policy->vf_shape, spec);
  policy->grads_memory = backend_alloc(backend, policy->plan.params);
  table_point(e, n, policy->grads_memory);
  n = param_table(e, NULL, &policy->m, &policy->pi_shape, &policy->vf_shape, spec);
  policy->m_memory = backend_alloc(backend, policy->plan.params);
  table_point(e, n, policy->m_memory);
  n = param_table(e, NULL, &policy->v, &policy->pi_shape, &policy->vf_shape, spec);
  policy->v_memory = backend_alloc(backend, policy->plan.params);
  table_point(e, n, policy->v_memory);
  if (spec->dtype != NN_F32) {  // the params slab's layout (padding included), in 2-byte elements
    policy->lowp_memory = backend_alloc(backend, policy->plan.lowp);
    char *base = policy->lowp_memory;
    size_t es = nn_dtype_size(spec->dtype);
    for (int l = 0; l < policy->pi_shape.n_linear; l++)
      policy->lowp.pi.w[l] = base + (size_t)(policy->params.pi.w[l] - policy->params_memory) * es;
    for (int l = 0; l < policy->vf_shape.n_linear; l++)
      policy->lowp.vf.w[l] = base + (size_t)(policy->params.vf.w[l] - policy->params_memory) * es;
    char *pad = base + align64(policy->slab_floats * es);  // the padded first layers, zero columns from the alloc
    policy->lowp.pi.w_in = padded(spec) ? pad : policy->lowp.pi.w[0];
    policy->lowp.vf.w_in = padded(spec) ? pad + padded_w_bytes(spec, &policy->pi_shape) : policy->lowp.vf.w[0];
  } else {
    for (int l = 0; l < policy->pi_shape.n_linear; l++) policy->lowp.pi.w[l] = policy->params.pi.w[l];
    for (int l = 0; l < policy->vf_shape.n_linear; l++) policy->lowp.vf.w[l] = policy->params.vf.w[l];
    policy->lowp.pi.w_in = policy->lowp.pi.w[0];
    policy->lowp.vf.w_in = policy->lowp.vf.w[0];
  }
  policy->lowp.pi.in_dim = policy->lowp.vf.in_dim = first_in_dim(spec);
  n = acts_table(e, &policy->acts, &policy->pi_shape, &policy->vf_shape, spec);
  policy->acts_memory = backend_alloc(backend, policy->plan.acts);
  table_point(e, n, policy->acts_memory);

  if (spec->init == POLICY_INIT_ORTHO) {
    Rng rng;
    rng_seed(&rng, spec->seed);
    init_net(policy, &policy->params.pi, &policy->pi_shape, 0.01, &rng);
    init_net(policy, &policy->params.vf, &policy->vf_shape, 1.0, &rng);
  } else if (spec->init == POLICY_INIT_TORCH) {
    Rng rng;
    rng_seed(&rng, spec->seed);
    init_net_torch(policy, &policy->params.pi, &policy->pi_shape, &rng);
    init_net_torch(policy, &policy->params.vf, &policy->vf_shape, &rng);
  }
  if (policy->params.log_std) {
    float *host = CHECK_ALLOC((size_t)spec->action_dim * sizeof(float), "log_std init");
    for (int j = 0; j < spec->action_dim; j++) host[j] = spec->log_std_init;
    backend_upload(backend, policy->params.log_std, host, (size_t)spec->action_dim * sizeof(float));
    free(host);
  }
  policy_refresh_lowp(policy);

  backend_reserve_workspace(backend, workspace_bytes(spec, &policy->pi_shape, &policy->vf_shape));
  return policy;
}

void policy_free(Policy *policy) {
  if (!policy) return;
  Backend *b = policy->backend;
  backend_free(b, policy->params_memory);
  backend_free(b, policy->grads_memory);
  backend_free(b, policy->m_memory);
  backend_free(b, policy->v_memory);
  backend_free(b, policy->lowp_memory);
  backend_free(b, policy->acts_memory);
  free(policy);
}

void policy_zero_grad(Policy *policy) { policy->grads_zero_pending = 1; }

void policy_grads_settle(Policy *policy) {
  if (!policy->grads_zero_pending) return;
  backend_memset_zero(policy->backend, policy->grads_memory, policy->slab_floats * sizeof(float));
  policy->grads_zero_pending = 0;
}

void policy_refresh_lowp(Policy *policy) {
  if (policy->spec.dtype == NN_F32) return;
  backend_cast(policy->backend, policy->lowp_memory, policy->spec.dtype, policy->params_memory, NN_F32,
               policy->slab_floats);
  policy_refresh_derived(policy);
}

void policy_refresh_derived(Policy *policy) {
  if (policy->spec.dtype == NN_F32) return;  // the GEMMs read the fp32 params themselves
  size_t es = nn_dtype_size(policy->spec.dtype), O = (size_t)policy->spec.obs_dim;
  size_t pitch = (size_t)policy_padded_obs_dim(&policy->spec) * es;
  MlpLowp *nets[2] = {&policy->lowp.pi, &policy->lowp.vf};
  const MlpShape *shapes[2] = {&policy->pi_shape, &policy->vf_shape};
  for (int net = 0; net < 2; net++) {
    if (padded(&policy->spec))
      backend_copy_rows(policy->backend, (void *)nets[net]->w_in, pitch, nets[net]->w[0], O * es, O * es,
                        (size_t)shapes[net]->dims[1]);
    for (int l = 0; l < shapes[net]->n_linear; l++)
      backend_weights_changed(policy->backend, l == 0 ? nets[net]->w_in : nets[net]->w[l], policy->spec.dtype,
                              shapes[net]->dims[l + 1], l == 0 ? nets[net]->in_dim : shapes[net]->dims[l]);
  }
}

// --- forward, backward, sampling
// --------------------------------------------------------------------------------------

// The first layer's weight-gradient input: obs of obs_dtype in the policy's dtype (B, O), as they
// came or as the last forward rounded them.
static const void *net_input(Policy *policy, const void *obs, NnDtype obs_dtype) {
  return obs_dtype == policy->spec.dtype ? obs : policy->acts.obs_lp;
}

// The observations (fp32, or already in the policy's dtype) rounded to the dtype (and padded): the
// first layer's forward input.
static const void *forward_input(Policy *policy, const void *obs, NnDtype obs_dtype, int B) {
  NnDtype dt = policy->spec.dtype;
  CHECK(obs_dtype == NN_F32 || obs_dtype == dt, "policy: observations are fp32 or in the policy's dtype");
  policy->forward_obs_dtype = obs_dtype;
  if (dt == NN_F32) return obs;
  Backend *b = policy->backend;
  size_t O = (size_t)policy->spec.obs_dim;
  const void *lp = obs;
  if (obs_dtype == NN_F32) {
    backend_cast(b, policy->acts.obs_lp, dt, obs, NN_F32, (size_t)B * O);
    lp = policy->acts.obs_lp;
  }
  if (!policy->acts.obs_pad) return lp;
  size_t es = nn_dtype_size(dt);
  backend_copy_rows(b, policy->acts.obs_pad, (size_t)policy_padded_obs_dim(&policy->spec) * es, lp, O * es, O * es,
                    (size_t)B);
  return policy->acts.obs_pad;
}

// The actor and the critic are separate networks: their passes are two lanes (backend_lanes), lane 0
// the actor's, lane 1 the critic's, which the backend may run side by side. The hint is the
// largest product either lane makes at batch B: B x Policy.largest_layer (the backward's products
// have the forward's sizes).
typedef struct {
  Policy *policy;
  const void *in;  // the first layer's input: forward_input's in the forward, net_input's in the backward
  int B;
  const float *actions, *dlogp, *dentropy, *dvalues;  // the backward's
  int accumulate;
} PassArgs;

static void forward_lane(Backend *b, void *arg, int lane) {
  const PassArgs *a = arg;
  Policy *p = a->policy;
  if (lane == 0)
    mlp_forward(b, &p->acts.pi, &p->pi_shape, &p->params.pi, &p->lowp.pi, a->in, a->B, p->spec.dtype);
  else
    mlp_forward(b, &p->acts.vf, &p->vf_shape, &p->params.vf, &p->lowp.vf, a->in, a->B, p->spec.dtype);
}

static void forward_of(Policy *policy, const void *obs, NnDtype obs_dtype, int B) {
  CHECK(B >= 1 && B <= policy->spec.max_batch, "policy_forward: batch must be in 1..max_batch");
  PassArgs args = {.policy = policy, .in = forward_input(policy, obs, obs_dtype, B), .B = B};
  backend_lanes(policy->backend, 2, forward_lane, &args, policy->spec.dtype, B * policy->largest_layer);
}

void policy_forward(Policy *policy, const float *obs, int B) { forward_of(policy, obs, NN_F32, B); }

NnDtype policy_obs_dtype(const Policy *policy) { return policy->spec.dtype; }

void policy_value_forward(Policy *policy, const float *obs, int B) {
  CHECK(B >= 1 && B <= policy->spec.max_batch, "policy_value_forward: batch must be in 1..max_batch");
  Backend *b = policy->backend;
  NnDtype dt = policy->spec.dtype;
  mlp_forward(b, &policy->acts.vf, &policy->vf_shape, &policy->params.vf, &policy->lowp.vf,
              forward_input(policy, obs, NN_F32, B), B, dt);
}

const float *policy_head_out(const Policy *policy) { return policy->acts.pi.h[policy->pi_shape.n_linear - 1]; }
const float *policy_values(const Policy *policy) { return policy->acts.vf.h[policy->vf_shape.n_linear - 1]; }

static void evaluate_of(Policy *policy, const void *obs, NnDtype obs_dtype, const float *actions, int B) {
  forward_of(policy, obs, obs_dtype, B);
  const float *head = policy_head_out(policy);  // (B, A)
  int A = policy->spec.action_dim;
  if (policy->spec.head == POLICY_HEAD_CATEGORICAL)
    backend_categorical_forward(policy->backend, policy->acts.logp, policy->acts.entropy, head, actions, B, A);
  else
    backend_gaussian_forward(policy->backend, policy->acts.logp, policy->acts.entropy, head, policy->params.log_std,
                             actions, B, A);
}

void policy_evaluate(Policy *policy, const float *obs, const float *actions, int B) {
  evaluate_of(policy, obs, NN_F32, actions, B);
}

void policy_evaluate_stored(Policy *policy, const void *obs, const float *actions, int B) {
  evaluate_of(policy, obs, policy->spec.dtype, actions, B);
}

// Lane 0: the distribution, then the actor below it. Lane 1: the critic, from a copy of its output
// gradient, since the MLP backward overwrites it.
static void backward_lane(Backend *b, void *arg, int lane) {
  const PassArgs *a = arg;
  Policy *p = a->policy;
  NnDtype dt = p->spec.dtype;
  int A = p->spec.action_dim, B = a->B;
  if (lane == 1) {
    backend_cast(b, p->acts.dvalues, NN_F32, a->dvalues, NN_F32, (size_t)B);
    mlp_backward(b, &p->grads.vf, &p->acts.vf, p->acts.dvalues, &p->vf_shape, &p->lowp.vf, a->in, B, dt, a->accumulate);
    return;
  }
  const float *head = policy_head_out(p);
  if (p->spec.head == POLICY_HEAD_CATEGORICAL) {
    backend_categorical_backward(b, p->acts.dhead, a->dlogp, a->dentropy, head, a->actions, B, A);
  } else {
    if (!a->accumulate) backend_memset_zero(b, p->grads.log_std, (size_t)A * sizeof(float));
    backend_gaussian_backward(b, p->acts.dhead, p->grads.log_std, a->dlogp, a->dentropy, head, p->params.log_std,
                              a->actions, B, A);
  }
  mlp_backward(b, &p->grads.pi, &p->acts.pi, p->acts.dhead, &p->pi_shape, &p->lowp.pi, a->in, B, dt, a->accumulate);
}

static void backward_of(Policy *policy, const void *obs, NnDtype obs_dtype, const float *actions, const float *dlogp,
                        const float *dentropy, const float *dvalues, int B) {
  CHECK(B >= 1 && B <= policy->spec.max_batch, "policy_backward: batch must be in 1..max_batch");
  CHECK(obs_dtype == policy->forward_obs_dtype,
        "policy_backward: the observations' form (fp32 or stored) is the last forward's");
  // a pending zero_grad: every gradient tensor is written below instead of added to
  int accumulate = !policy->grads_zero_pending;
  policy->grads_zero_pending = 0;
  PassArgs args = {.policy = policy,
                   .in = net_input(policy, obs, obs_dtype),
                   .B = B,
                   .actions = actions,
                   .dlogp = dlogp,
                   .dentropy = dentropy,
                   .dvalues = dvalues,
                   .accumulate = accumulate};
  backend_lanes(policy->backend, 2, backward_lane, &args, policy->spec.dtype, B * policy->largest_layer);
}

void policy_backward(Policy *policy, const float *obs, const float *actions, const float *dlogp, const float *dentropy,
                     const float *dvalues, int B) {
  backward_of(policy, obs, NN_F32, actions, dlogp, dentropy, dvalues, B);
}

void policy_backward_stored(Policy *policy, const void *obs, const float *actions, const float *dlogp,
                            const float *dentropy, const float *dvalues, int B) {
  backward_of(policy, obs, policy->spec.dtype, actions, dlogp, dentropy, dvalues, B);
}

void policy_act(Policy *policy, float *actions, const float *obs, const float *uniforms, int B) {
  policy_forward(policy, obs, B);
  const float *head = policy_head_out(policy);
  int A = policy->spec.action_dim;
  if (policy->spec.head == POLICY_HEAD_CATEGORICAL)
    backend_categorical_sample(policy->backend, actions, policy->acts.logp, head, uniforms, B, A);
  else
    backend_gaussian_sample(policy->backend, actions, policy->acts.logp, head, policy->params.log_std, uniforms, B, A);
}
