// test/test_nn_policy.c: the actor-critic end to end on the CPU backend.
//
// Orthogonal init against its defining property (W W^T = gain^2 I on the short side), the whole
// backward pass (MLP, heads, log_std) against central finite differences in double, the low
// precisions against fp32, the optimiser's ordered step with the GradScaler on an fp16 run that
// overflows and recovers, and the no-allocation-after-init guarantee, counted twice: by the
// backend and by wrapping malloc in this executable (the linker's --wrap).
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "nn/optim.h"
#include "nn/policy.h"
#include "test/alloc_counter.h"

static Backend *cpu(void) {
  Backend *b = backend_open("cpu");
  cr_assert(b, "%s", error_message());
  return b;
}

static PolicySpec small_spec(PolicyHead head, NnDtype dtype) {
  PolicySpec s = {.obs_dim = 4,
                  .action_dim = 3,
                  .head = head,
                  .n_pi = 2,
                  .pi_layers = {6, 5},
                  .n_vf = 2,
                  .vf_layers = {7, 4},
                  .activation = NN_ACT_TANH,
                  .dtype = dtype,
                  .max_batch = 8,
                  .log_std_init = -0.3f,
                  .init = POLICY_INIT_ORTHO,
                  .seed = 3};
  return s;
}

static void fill(float *x, size_t n, Rng *rng, double lo, double hi) {
  for (size_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * rng_uniform(rng));
}

// --- init -----------------------------------------------------------------------------------------------

static void check_orthogonal(int rows, int cols, double gain) {
  Rng rng;
  rng_seed(&rng, (uint64_t)(rows * 1000 + cols));
  double *g = malloc((size_t)rows * cols * sizeof(double));
  float *w = malloc((size_t)rows * cols * sizeof(float));
  for (int i = 0; i < rows * cols; i++) g[i] = rng_normal(&rng);
  nn_orthogonal_from_gaussian(w, g, rows, cols, gain);
  // the short side is orthonormal: (W W^T) when rows <= cols, else (W^T W), equals gain^2 I
  int n = rows <= cols ? rows : cols, len = rows <= cols ? cols : rows;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      double s = 0;
      for (int k = 0; k < len; k++) {
        double a = rows <= cols ? w[(size_t)i * cols + k] : w[(size_t)k * cols + i];
        double c = rows <= cols ? w[(size_t)j * cols + k] : w[(size_t)k * cols + j];
        s += a * c;
      }
      double want = i == j ? gain * gain : 0.0;
      cr_assert(fabs(s - want) < 1e-5 * (1 + gain * gain), "(%d x %d) gram[%d][%d] = %g, expected %g", rows, cols, i, j,
                s, want);
    }
  free(g), free(w);
}

Test(nn_policy, orthogonal_init_is_orthogonal) {
  check_orthogonal(64, 8, sqrt(2.0));
  check_orthogonal(8, 64, sqrt(2.0));
  check_orthogonal(64, 64, sqrt(2.0));
  check_orthogonal(1, 64, 1.0);
  check_orthogonal(3, 64, 0.01);
  check_orthogonal(200, 130, sqrt(2.0));
}

Test(nn_policy, init_gains_biases_and_log_std) {
  Backend *b = cpu();
  PolicySpec spec = small_spec(POLICY_HEAD_GAUSSIAN, NN_F32);
  Policy *p = policy_init(b, &spec);
  cr_assert(p, "%s", error_message());
  // head rows (3 x 5): W W^T = 0.01^2 I; value head (1 x 4): |w| = 1; hidden (6 x 4): W^T W = 2 I
  const float *w = p->params.pi.w[2];
  for (int i = 0; i < 3; i++) {
    double s = 0;
    for (int k = 0; k < 5; k++) s += (double)w[i * 5 + k] * w[i * 5 + k];
    cr_assert(fabs(s - 1e-4) < 1e-9, "policy head row %d norm^2 %g", i, s);
  }
  double s = 0;
  for (int k = 0; k < 4; k++) s += (double)p->params.vf.w[2][k] * p->params.vf.w[2][k];
  cr_assert(fabs(s - 1.0) < 1e-6, "value head norm^2 %g", s);
  for (int i = 0; i < 4; i++) {
    double c = 0;
    for (int k = 0; k < 6; k++) c += (double)p->params.pi.w[0][k * 4 + i] * p->params.pi.w[0][k * 4 + i];
    cr_assert(fabs(c - 2.0) < 1e-5, "hidden column %d norm^2 %g", i, c);
  }
  for (int l = 0; l < 3; l++)
    for (int k = 0; k < p->pi_shape.dims[l + 1]; k++) cr_assert_eq(p->params.pi.b[l][k], 0.0f);
  for (int j = 0; j < 3; j++) cr_assert_eq(p->params.log_std[j], -0.3f);
  // the slab is the tensors in order, pi w0 first, log_std last, each at a multiple of 32 floats
  // (128 bytes) with zeros between them
  size_t sizes[] = {6 * 4, 6, 5 * 6, 5, 3 * 5, 3, 7 * 4, 7, 4 * 7, 4, 4, 1, 3}, at = 0, total = 0;
  const float *tensors[] = {p->params.pi.w[0], p->params.pi.b[0], p->params.pi.w[1], p->params.pi.b[1],
                            p->params.pi.w[2], p->params.pi.b[2], p->params.vf.w[0], p->params.vf.b[0],
                            p->params.vf.w[1], p->params.vf.b[1], p->params.vf.w[2], p->params.vf.b[2],
                            p->params.log_std};
  for (int k = 0; k < 13; k++) {
    cr_assert_eq(tensors[k], p->params_memory + at, "tensor %d at float %zu", k, at);
    for (size_t i = sizes[k]; i < 32; i++) cr_assert_eq(p->params_memory[at + i], 0.0f, "padding of tensor %d", k);
    at += 32;
    total += sizes[k];
  }
  cr_assert_eq(p->slab_floats, at);
  cr_assert_eq(p->parameters, total);
  cr_assert_eq(policy_parameter_count(&spec), total);
  // pack: the tensors one after the other (a checkpoint's optim/m and v); unpack: back, padding zeroed
  float *host = malloc(p->slab_floats * sizeof(float)), *want = malloc(total * sizeof(float));
  for (size_t i = 0; i < p->slab_floats; i++) host[i] = (float)i + 0.5f;
  size_t next = 0;
  for (int k = 0; k < 13; k++)
    for (size_t i = 0; i < sizes[k]; i++) want[next++] = (float)(32 * k + i) + 0.5f;
  policy_slab_pack(p, host);
  cr_assert_eq(memcmp(host, want, total * sizeof(float)), 0, "packed order");
  policy_slab_unpack(p, host);
  for (int k = 0; k < 13; k++)
    for (size_t i = 0; i < 32; i++)
      cr_assert_eq(host[32 * k + i], i < sizes[k] ? (float)(32 * k + i) + 0.5f : 0.0f, "tensor %d float %zu", k, i);
  free(host);
  free(want);
  policy_free(p);
  backend_close(b);
}

// ortho_init = false (SB3): torch.nn.Linear's init, W and b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
// Checked on a layer wide enough for its moments: every value inside the bound, the mean near 0,
// the variance near bound^2 / 3 (the uniform's), the biases drawn too (SB3's zero biases are the
// orthogonal init's), and the two networks drawn differently.
Test(nn_policy, torch_default_init_without_ortho_init) {
  Backend *b = cpu();
  PolicySpec spec = small_spec(POLICY_HEAD_CATEGORICAL, NN_F32);
  spec.obs_dim = 100, spec.pi_layers[0] = 400, spec.vf_layers[0] = 400, spec.init = POLICY_INIT_TORCH;
  Policy *p = policy_init(b, &spec);
  cr_assert(p, "%s", error_message());
  const MlpParams *nets[2] = {&p->params.pi, &p->params.vf};
  const MlpShape *shapes[2] = {&p->pi_shape, &p->vf_shape};
  for (int net = 0; net < 2; net++)
    for (int l = 0; l < shapes[net]->n_linear; l++) {
      int rows = shapes[net]->dims[l + 1], cols = shapes[net]->dims[l];
      double bound = 1.0 / sqrt((double)cols), sum = 0, sq = 0;
      size_t n = (size_t)rows * cols;
      for (size_t i = 0; i < n; i++) {
        double w = nets[net]->w[l][i];
        cr_assert(fabs(w) <= bound, "net %d layer %d weight %zu = %g outside +-%g", net, l, i, w, bound);
        sum += w, sq += w * w;
      }
      int nonzero_bias = 0;
      for (int k = 0; k < rows; k++) {
        cr_assert(fabs(nets[net]->b[l][k]) <= bound, "net %d layer %d bias %d", net, l, k);
        nonzero_bias += nets[net]->b[l][k] != 0.0f;
      }
      cr_assert_eq(nonzero_bias, rows, "net %d layer %d: biases are drawn, not zero", net, l);
      if (n < 10000) continue;  // moments only where they are sharp
      double mean = sum / (double)n, var = sq / (double)n - mean * mean, want = bound * bound / 3.0;
      cr_assert(fabs(mean) < 0.02 * bound, "net %d layer %d mean %g (bound %g)", net, l, mean, bound);
      cr_assert(fabs(var / want - 1.0) < 0.05, "net %d layer %d variance %g, uniform's %g", net, l, var, want);
    }
  cr_assert(p->params.pi.w[0][0] != p->params.vf.w[0][0], "actor and critic drawn from one stream in turn");
  policy_free(p);
  backend_close(b);
}

Test(nn_policy, spec_errors_name_the_field) {
  Backend *b = cpu();
  PolicySpec spec = small_spec(POLICY_HEAD_CATEGORICAL, NN_F32);
  spec.pi_layers[1] = 0;
  cr_assert_null(policy_init(b, &spec));
  cr_assert(strstr(error_message(), "pi_layers[1]"), "%s", error_message());
  spec = small_spec(POLICY_HEAD_CATEGORICAL, NN_F32);
  spec.action_dim = 1;
  cr_assert_null(policy_init(b, &spec));
  cr_assert(strstr(error_message(), "2 actions"), "%s", error_message());
  spec = small_spec(POLICY_HEAD_CATEGORICAL, NN_F32);
  spec.max_batch = 0;
  cr_assert_null(policy_init(b, &spec));
  backend_close(b);
}

// --- backward against finite differences --------------------------------------------------------------------

typedef struct {
  float obs[8 * 4], actions[8 * 3], wl[8], we[8], wv[8];
  int B;
} Batch;

static Batch make_batch(const Policy *p, uint64_t seed) {
  Batch x;
  Rng rng;
  rng_seed(&rng, seed);
  x.B = 8;
  fill(x.obs, sizeof x.obs / 4, &rng, -1.5, 1.5);
  fill(x.wl, 8, &rng, -1, 1);
  fill(x.we, 8, &rng, -1, 1);
  fill(x.wv, 8, &rng, -1, 1);
  if (p->spec.head == POLICY_HEAD_CATEGORICAL)
    for (int i = 0; i < 8; i++) x.actions[i] = (float)rng_below(&rng, 3);
  else
    fill(x.actions, 24, &rng, -1, 1);
  return x;
}

static double objective(Policy *p, const Batch *x) {
  policy_evaluate(p, x->obs, x->actions, x->B);
  double s = 0;
  for (int b = 0; b < x->B; b++)
    s += (double)x->wl[b] * p->acts.logp[b] + (double)x->we[b] * p->acts.entropy[b] +
         (double)x->wv[b] * policy_values(p)[b];
  return s;
}

static void fd_check(PolicyHead head) {
  Backend *b = cpu();
  PolicySpec spec = small_spec(head, NN_F32);
  Policy *p = policy_init(b, &spec);
  cr_assert(p);
  // larger head weights than the 0.01 init, so the actor's gradients are not all tiny
  for (int i = 0; i < 15; i++) p->params.pi.w[2][i] *= 50.0f;
  Batch x = make_batch(p, 21);
  policy_zero_grad(p);
  policy_evaluate(p, x.obs, x.actions, x.B);
  policy_backward(p, x.obs, x.actions, x.wl, x.we, x.wv, x.B);
  const float h = 1e-2f;
  for (size_t i = 0; i < p->slab_floats; i++) {
    float save = p->params_memory[i];
    p->params_memory[i] = save + h;
    double lp = objective(p, &x);
    p->params_memory[i] = save - h;
    double lm = objective(p, &x);
    p->params_memory[i] = save;
    double fd = (lp - lm) / (2.0 * h), got = p->grads_memory[i];
    cr_assert(fabs(got - fd) <= 3e-3 * fabs(fd) + 3e-4, "param %zu of %zu: backward %.7g, finite difference %.7g", i,
              p->slab_floats, got, fd);
  }
  policy_free(p);
  backend_close(b);
}

Test(nn_policy, categorical_backward_matches_finite_differences) { fd_check(POLICY_HEAD_CATEGORICAL); }
Test(nn_policy, gaussian_backward_matches_finite_differences) { fd_check(POLICY_HEAD_GAUSSIAN); }

Test(nn_policy, low_precision_gradients_follow_fp32) {
  Backend *b = cpu();
  for (int dt = NN_F16; dt <= NN_BF16; dt++) {
    PolicySpec s32 = small_spec(POLICY_HEAD_GAUSSIAN, NN_F32), slp = small_spec(POLICY_HEAD_GAUSSIAN, (NnDtype)dt);
    Policy *p32 = policy_init(b, &s32), *plp = policy_init(b, &slp);
    Batch x = make_batch(p32, 5);
    policy_zero_grad(p32), policy_zero_grad(plp);
    policy_evaluate(p32, x.obs, x.actions, 8);
    policy_evaluate(plp, x.obs, x.actions, 8);
    for (int i = 0; i < 8; i++) {
      cr_assert(fabsf(plp->acts.logp[i] - p32->acts.logp[i]) < (dt == NN_F16 ? 2e-3f : 2e-2f), "%s logp[%d]",
                nn_dtype_name((NnDtype)dt), i);
      cr_assert(fabsf(policy_values(plp)[i] - policy_values(p32)[i]) < (dt == NN_F16 ? 2e-3f : 2e-2f));
    }
    policy_backward(p32, x.obs, x.actions, x.wl, x.we, x.wv, 8);
    policy_backward(plp, x.obs, x.actions, x.wl, x.we, x.wv, 8);
    double num = 0, den = 0;
    for (size_t i = 0; i < p32->slab_floats; i++) {
      double d = (double)plp->grads_memory[i] - p32->grads_memory[i];
      num += d * d, den += (double)p32->grads_memory[i] * p32->grads_memory[i];
    }
    double rel = sqrt(num / den);
    cr_assert(rel < (dt == NN_F16 ? 3e-3 : 2e-2), "%s gradient relative error %g", nn_dtype_name((NnDtype)dt), rel);
    cr_assert(rel > 0, "%s must differ from fp32 at all (rounding happens)", nn_dtype_name((NnDtype)dt));
    policy_free(p32), policy_free(plp);
  }
  backend_close(b);
}

// bf16 hidden layers wide enough go through the forward in slices of rows (nn/mlp.c slice_rows:
// 128 rows of a 4096-wide layer): a batch of 300 (slices of 128, 128, 44) gives each row what a
// batch of that row alone gives (no slicing), to the rounding a GEMM of another row count may do
// (none here: measured 0 on 2026-11-29), and its gradients follow fp32's as an unsliced batch's do.
Test(nn_policy, bf16_sliced_forward_gives_each_rows_own_result) {
  Backend *b = cpu();
  enum { B = 300, O = 8, W = 4096 };
  PolicySpec spec = small_spec(POLICY_HEAD_GAUSSIAN, NN_BF16);
  spec.obs_dim = O, spec.action_dim = 2, spec.n_pi = spec.n_vf = 1, spec.pi_layers[0] = spec.vf_layers[0] = W;
  spec.max_batch = B;
  PolicySpec spec32 = spec;
  spec32.dtype = NN_F32;
  Policy *p = policy_init(b, &spec), *p32 = policy_init(b, &spec32);
  cr_assert(p && p32, "%s", error_message());
  Rng rng;
  rng_seed(&rng, 9);
  float *obs = malloc(sizeof(float) * B * O), *actions = malloc(sizeof(float) * B * 2);
  float *logp = malloc(sizeof(float) * B), *value = malloc(sizeof(float) * B);
  float *wl = malloc(sizeof(float) * B), *we = malloc(sizeof(float) * B), *wv = malloc(sizeof(float) * B);
  fill(obs, (size_t)B * O, &rng, -2, 2);
  fill(actions, (size_t)B * 2, &rng, -1, 1);
  fill(wl, B, &rng, -1, 1), fill(we, B, &rng, -1, 1), fill(wv, B, &rng, -1, 1);
  policy_evaluate(p, obs, actions, B);
  memcpy(logp, p->acts.logp, sizeof(float) * B);
  memcpy(value, policy_values(p), sizeof(float) * B);
  double worst = 0;
  for (int r = 0; r < B; r++) {
    policy_evaluate(p, obs + (size_t)r * O, actions + (size_t)r * 2, 1);
    worst = fmax(worst, fabs((double)p->acts.logp[0] - logp[r]));
    worst = fmax(worst, fabs((double)policy_values(p)[0] - value[r]));
  }
  cr_log_info("bf16 batch of %d against single rows: worst |diff| %.3g", B, worst);
  cr_expect(worst <= 1e-3, "a row of the sliced batch differs from the row alone by %.3g", worst);
  // the gradients of the sliced batch against fp32's (same weights)
  memcpy(p32->params_memory, p->params_memory, p->slab_floats * sizeof(float));
  policy_refresh_lowp(p32);
  policy_zero_grad(p), policy_zero_grad(p32);
  policy_evaluate(p, obs, actions, B);
  policy_evaluate(p32, obs, actions, B);
  policy_backward(p, obs, actions, wl, we, wv, B);
  policy_backward(p32, obs, actions, wl, we, wv, B);
  double num = 0, den = 0;
  for (size_t i = 0; i < p32->slab_floats; i++) {
    double d = (double)p->grads_memory[i] - p32->grads_memory[i];
    num += d * d, den += (double)p32->grads_memory[i] * p32->grads_memory[i];
  }
  cr_expect(sqrt(num / den) < 2e-2, "bf16 gradient relative error %g", sqrt(num / den));
  free(obs), free(actions), free(logp), free(value), free(wl), free(we), free(wv);
  policy_free(p), policy_free(p32);
  backend_close(b);
}

// The first layer's padded operands (policy_padded_obs_dim): the weights' copy is lowp's first
// layer row by row with zero columns after it, also after an optimiser step rewrote lowp; the
// observations likewise; and the outputs are those of the same policy unpadded (obs_pad = 1: zero
// columns add exact zeros, only the GEMM's summation order may change with K).
static void check_padded_rows(const void *padded, const void *plain, int rows, int O, int O_pad, size_t es,
                              const char *what) {
  for (int r = 0; r < rows; r++) {
    const char *row = (const char *)padded + (size_t)r * O_pad * es;
    cr_assert(memcmp(row, (const char *)plain + (size_t)r * O * es, (size_t)O * es) == 0, "%s row %d differs", what, r);
    for (size_t i = (size_t)O * es; i < (size_t)O_pad * es; i++)
      cr_assert(row[i] == 0, "%s row %d: padding byte %zu is not zero", what, r, i);
  }
}

Test(nn_policy, padded_first_layer_is_the_unpadded_product) {
  Backend *b = cpu();
  enum { O = 37, B = 8 };
  for (int dt = NN_F16; dt <= NN_BF16; dt++) {
    PolicySpec spec = small_spec(POLICY_HEAD_CATEGORICAL, (NnDtype)dt), plain = spec;
    spec.obs_dim = plain.obs_dim = O;
    plain.obs_pad = 1;
    int O_pad = policy_padded_obs_dim(&spec);
    cr_assert_eq(O_pad, dt == NN_BF16 ? 64 : 40, "%s pads %d to %d", nn_dtype_name((NnDtype)dt), O, O_pad);
    cr_assert_eq(policy_padded_obs_dim(&plain), O);
    PolicySpec fp32 = spec;
    fp32.dtype = NN_F32, fp32.obs_pad = 8;
    cr_assert_eq(policy_padded_obs_dim(&fp32), O, "fp32 is never padded");
    Policy *p = policy_init(b, &spec), *q = policy_init(b, &plain);
    cr_assert(p && q, "%s", error_message());
    cr_assert(p->acts.obs_pad && !q->acts.obs_pad && q->lowp.pi.w_in == q->lowp.pi.w[0]);
    cr_assert(p->lowp.pi.in_dim == O_pad && p->lowp.vf.in_dim == O_pad && q->lowp.pi.in_dim == O);
    cr_assert(p->lowp.pi.w_in != p->lowp.pi.w[0] && p->lowp.vf.w_in != p->lowp.vf.w[0]);
    cr_assert(p->plan.lowp > q->plan.lowp && p->plan.acts > q->plan.acts, "the plan counts the padded copies");
    size_t es = nn_dtype_size((NnDtype)dt);
    float obs[B * O], actions[B];
    Rng rng;
    rng_seed(&rng, 41);
    fill(obs, B * O, &rng, -1.5, 1.5);
    for (int i = 0; i < B; i++) actions[i] = (float)rng_below(&rng, 3);
    OptimSpec os = {.adam = {.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-5},
                    .max_grad_norm = 0.5f,
                    .scaler = grad_scaler_defaults(0)};
    Optimizer *o = optim_init(b, &os);
    for (int step = 0; step < 3; step++) {
      check_padded_rows(p->lowp.pi.w_in, p->lowp.pi.w[0], p->pi_shape.dims[1], O, O_pad, es, "pi weights");
      check_padded_rows(p->lowp.vf.w_in, p->lowp.vf.w[0], p->vf_shape.dims[1], O, O_pad, es, "vf weights");
      policy_evaluate(p, obs, actions, B);
      policy_evaluate(q, obs, actions, B);
      check_padded_rows(p->acts.obs_pad, p->acts.obs_lp, B, O, O_pad, es, "observations");
      for (int i = 0; i < B; i++) {
        cr_assert(fabsf(p->acts.logp[i] - q->acts.logp[i]) <= 1e-5f * (1 + fabsf(q->acts.logp[i])),
                  "%s step %d logp[%d]: padded %.9g, plain %.9g", nn_dtype_name((NnDtype)dt), step, i, p->acts.logp[i],
                  q->acts.logp[i]);
        cr_assert(fabsf(policy_values(p)[i] - policy_values(q)[i]) <= 1e-5f * (1 + fabsf(policy_values(q)[i])),
                  "%s step %d value[%d]", nn_dtype_name((NnDtype)dt), step, i);
      }
      // one Adam step on the padded policy, from its own gradients (q keeps its init)
      float dlogp[B], dvalues[B];
      for (int i = 0; i < B; i++) dlogp[i] = -1.0f / B, dvalues[i] = policy_values(p)[i] / B;
      policy_zero_grad(p);
      policy_backward(p, obs, actions, dlogp, NULL, dvalues, B);
      optim_step(o, p);
      memcpy(q->params_memory, p->params_memory, p->slab_floats * sizeof(float));  // q follows p's weights
      policy_refresh_lowp(q);
    }
    // the forward reads the padded copies: spoiling the packed first layers changes no output
    float logp[B], values[B];
    policy_evaluate(p, obs, actions, B);
    memcpy(logp, p->acts.logp, sizeof logp), memcpy(values, policy_values(p), sizeof values);
    memset(p->lowp.pi.w[0], 0x7F, (size_t)p->pi_shape.dims[1] * O * es);
    memset(p->lowp.vf.w[0], 0x7F, (size_t)p->vf_shape.dims[1] * O * es);
    policy_evaluate(p, obs, actions, B);
    cr_assert(memcmp(logp, p->acts.logp, sizeof logp) == 0 && memcmp(values, policy_values(p), sizeof values) == 0,
              "%s: the forward read the packed first-layer weights", nn_dtype_name((NnDtype)dt));
    optim_free(o);
    policy_free(p), policy_free(q);
  }
  backend_close(b);
}

// Observations stored in the policy's dtype (the rollout buffer's) give the bits the fp32 ones give:
// log-probs, entropies, values and every gradient, with the first layer padded (37 observations)
// and not. A stored form that read its input as fp32, or the fp32 form skipping the rounding,
// fails it; so would a backward that took the gradient input from a stale rounding (checked by
// spoiling obs_lp between the stored forward and backward).
Test(nn_policy, stored_observations_give_the_fp32_bits) {
  Backend *b = cpu();
  enum { O = 37, B = 8 };
  for (int dt = NN_F32; dt <= NN_BF16; dt++) {
    PolicySpec spec = small_spec(POLICY_HEAD_GAUSSIAN, (NnDtype)dt);
    spec.obs_dim = O;
    Policy *p = policy_init(b, &spec);
    cr_assert(p, "%s", error_message());
    cr_assert_eq(policy_obs_dtype(p), (NnDtype)dt);
    size_t es = nn_dtype_size((NnDtype)dt), n = p->slab_floats;
    float obs[B * O], actions[B * 3], wl[B], we[B], wv[B];
    Rng rng;
    rng_seed(&rng, 43);
    fill(obs, B * O, &rng, -1.7, 1.7);
    fill(actions, B * 3, &rng, -1, 1);
    fill(wl, B, &rng, -1, 1), fill(we, B, &rng, -1, 1), fill(wv, B, &rng, -1, 1);
    unsigned char stored[B * O * 4];
    backend_cast(b, stored, (NnDtype)dt, obs, NN_F32, (size_t)B * O);
    float *want = malloc((3 * B + n) * sizeof(float)), *got = malloc((3 * B + n) * sizeof(float));
    for (int pass = 0; pass < 2; pass++) {
      float *out = pass ? got : want;
      policy_zero_grad(p);
      if (pass == 0) {
        policy_evaluate(p, obs, actions, B);
      } else {
        policy_evaluate_stored(p, stored, actions, B);
        if (p->acts.obs_lp) memset(p->acts.obs_lp, 0x7F, (size_t)B * O * es);
      }
      memcpy(out, p->acts.logp, B * sizeof(float));
      memcpy(out + B, p->acts.entropy, B * sizeof(float));
      memcpy(out + 2 * B, policy_values(p), B * sizeof(float));
      if (pass == 0)
        policy_backward(p, obs, actions, wl, we, wv, B);
      else
        policy_backward_stored(p, stored, actions, wl, we, wv, B);
      memcpy(out + 3 * B, p->grads_memory, n * sizeof(float));
    }
    for (size_t i = 0; i < 3 * B + n; i++)
      cr_assert(memcmp(&got[i], &want[i], sizeof(float)) == 0, "%s: %s %zu: stored %.9g, fp32 %.9g",
                nn_dtype_name((NnDtype)dt), i < 3 * B ? "output" : "gradient", i < 3 * B ? i : i - 3 * B, got[i],
                want[i]);
    free(want), free(got);
    policy_free(p);
  }
  backend_close(b);
}

// The actor's and the critic's passes are two lanes (backend_lanes): at CartPole's size (4 obs,
// [64, 64] networks, 64-row minibatches) the CPU runs them on two threads, and every output and
// gradient is the same bytes as on one thread. Both heads; the Gaussian one writes log_std's
// gradient inside the actor's lane.
Test(nn_policy, lanes_together_give_the_bits_of_one_thread) {
  enum { O = 4, B = 64, A = 2 };
  for (int head = POLICY_HEAD_CATEGORICAL; head <= POLICY_HEAD_GAUSSIAN; head++) {
    omp_set_num_threads(2);
    Backend *b = cpu();
    PolicySpec spec = small_spec((PolicyHead)head, NN_F32);
    spec.obs_dim = O, spec.action_dim = A, spec.max_batch = B;
    spec.pi_layers[0] = spec.pi_layers[1] = spec.vf_layers[0] = spec.vf_layers[1] = 64;
    Policy *p = policy_init(b, &spec);
    cr_assert(p, "%s", error_message());
    size_t n = p->slab_floats;
    float obs[B * O], actions[B * A], wl[B], we[B], wv[B];
    Rng rng;
    rng_seed(&rng, 71);
    fill(obs, B * O, &rng, -2, 2);
    for (int i = 0; i < B * A; i++) actions[i] = head ? (float)(rng_uniform(&rng) - 0.5) : (float)(i % A);
    fill(wl, B, &rng, -1, 1), fill(we, B, &rng, -1, 1), fill(wv, B, &rng, -1, 1);
    float *out[2];
    for (int threads = 2; threads >= 1; threads--) {
      omp_set_num_threads(threads);
      size_t before = backend_lanes_together(b);
      float *o = out[threads - 1] = malloc((3 * B + n) * sizeof(float));
      policy_zero_grad(p);
      policy_evaluate(p, obs, actions, B);
      memcpy(o, p->acts.logp, B * sizeof(float));
      memcpy(o + B, p->acts.entropy, B * sizeof(float));
      memcpy(o + 2 * B, policy_values(p), B * sizeof(float));
      policy_backward(p, obs, actions, wl, we, wv, B);
      memcpy(o + 3 * B, p->grads_memory, n * sizeof(float));
      cr_assert_eq(backend_lanes_together(b) - before, threads == 2 ? 2u : 0u, "%d threads: %zu passes ran together",
                   threads, backend_lanes_together(b) - before);
    }
    for (size_t i = 0; i < 3 * B + n; i++)
      cr_assert(memcmp(&out[1][i], &out[0][i], sizeof(float)) == 0, "head %d, %s %zu: %.9g together, %.9g alone", head,
                i < 3 * B ? "output" : "gradient", i < 3 * B ? i : i - 3 * B, out[1][i], out[0][i]);
    free(out[0]), free(out[1]);
    policy_free(p);
    backend_close(b);
  }
}

// A backward of the other form than its forward is refused: after a stored forward, the fp32
// backward would take the first layer's input from a rounding no forward made.
Test(nn_policy, a_backward_of_the_other_form_is_refused, .exit_code = 1) {
  Backend *b = cpu();
  PolicySpec spec = small_spec(POLICY_HEAD_CATEGORICAL, NN_BF16);
  Policy *p = policy_init(b, &spec);
  Batch x = make_batch(p, 9);
  uint16_t stored[8 * 4];
  backend_cast(b, stored, NN_BF16, x.obs, NN_F32, 8 * 4);
  policy_evaluate_stored(p, stored, x.actions, 8);
  policy_backward(p, x.obs, x.actions, x.wl, x.we, x.wv, 8);
  cr_assert_fail("the fp32 backward after a stored forward returned");
}

// The backend's copies of small_spec's weight matrices (backend_weights_changed): pi 8 -> 6 -> 5 -> 3
// and vf 8 -> 7 -> 4 -> 1, the observations padded from 4 to 8 columns in fp16.
static size_t small_spec_weight_copies(Backend *b, NnDtype dtype) {
  static const int pi[] = {8, 6, 5, 3}, vf[] = {8, 7, 4, 1};
  size_t bytes = 0;
  for (int l = 0; l < 3; l++)
    bytes += backend_weights_bytes(b, dtype, pi[l + 1], pi[l]) + backend_weights_bytes(b, dtype, vf[l + 1], vf[l]);
  return bytes;
}

// The plan's backend bytes are what the backend holds once the policy reserved its workspace and
// registered its weights: the policy's own reservation on a fresh backend, and more where the
// backend already keeps more (as CUDA keeps cuBLAS's 32 MiB from the start), plus the weight copies
// (the CPU keeps fp16 weights widened). The plan must match the memory held after init.
Test(nn_policy, backend_bytes_count_the_workspace_held) {
  PolicySpec spec = small_spec(POLICY_HEAD_CATEGORICAL, NN_F16);
  Backend *b = cpu();
  size_t own = policy_backend_bytes(&spec, b), copies = small_spec_weight_copies(b, NN_F16);
  // by hand: each W's floats in whole 64-byte lines, 48 30 15 (pi) and 56 28 4 (vf) weights
  cr_assert_eq(copies, 192 + 128 + 64 + 256 + 128 + 64, "fp16 weights kept widened: %zu bytes", copies);
  cr_assert(own > copies, "fp16 needs scratch for widened operands too");
  Policy *p = policy_init(b, &spec);
  cr_assert(p, "%s", error_message());
  cr_assert_eq(backend_workspace_bytes(b) + copies, own, "the policy reserved %zu and %zu of copies, the plan said %zu",
               backend_workspace_bytes(b), copies, own);
  policy_free(p);
  backend_close(b);
  b = cpu();
  backend_reserve_workspace(b, own + ((size_t)32 << 20));
  size_t held = policy_backend_bytes(&spec, b);
  p = policy_init(b, &spec);
  cr_assert(p, "%s", error_message());
  cr_assert_eq(held, backend_workspace_bytes(b) + copies, "the plan said %zu, the backend holds %zu and %zu of copies",
               held, backend_workspace_bytes(b), copies);
  policy_free(p);
  backend_close(b);
}

// policy_act draws by inverse CDF from the head's softmax, and its log-probs are policy_evaluate's.
Test(nn_policy, act_samples_from_the_head) {
  Backend *b = cpu();
  PolicySpec spec = small_spec(POLICY_HEAD_CATEGORICAL, NN_F32);
  Policy *p = policy_init(b, &spec);
  Batch x = make_batch(p, 8);
  float u[8], actions[8];
  backend_uniform(b, u, 8, 1, 2, 0);
  policy_act(p, actions, x.obs, u, 8);
  // each action is the inverse CDF of its uniform over the softmax of its row's logits (in double;
  // the first action whose cumulative probability reaches u), unless u sits on a boundary
  const float *z = policy_head_out(p);
  int distinct = 0;
  for (int i = 0; i < 8; i++) {
    double m = z[i * 3], sum = 0, cum = 0, margin = 1;
    for (int j = 1; j < 3; j++) m = fmax(m, z[i * 3 + j]);
    for (int j = 0; j < 3; j++) sum += exp(z[i * 3 + j] - m);
    int want = -1;
    for (int j = 0; j < 3; j++) {
      cum += exp(z[i * 3 + j] - m) / sum;
      margin = fmin(margin, fabs(cum - u[i]));
      if (want < 0 && u[i] <= cum) want = j;
    }
    if (margin < 1e-5) continue;
    cr_assert_eq(actions[i], (float)want, "row %d: u %.7f gave action %g, the inverse CDF %d", i, u[i], actions[i],
                 want);
    distinct |= 1 << want;
  }
  cr_assert(distinct != 1 && distinct != 2 && distinct != 4, "the draws cover more than one action");
  float logp_act[8];
  memcpy(logp_act, p->acts.logp, sizeof logp_act);
  policy_evaluate(p, x.obs, actions, 8);  // the log-probs of the drawn actions agree
  for (int i = 0; i < 8; i++) cr_assert_eq(logp_act[i], p->acts.logp[i]);
  policy_free(p);
  backend_close(b);
}

// --- optimiser, loss scaling, allocation ---------------------------------------------------------------------

// A regression problem for the critic: values -> target; the seed is dvalues = 2 (v - t) / B * loss_weight.
static float critic_step(Policy *p, Optimizer *o, const Batch *x, const float *target, float loss_weight) {
  float zeros[8] = {0}, dv[8];
  policy_zero_grad(p);
  policy_evaluate(p, x->obs, x->actions, 8);
  float loss = 0;
  for (int i = 0; i < 8; i++) {
    float d = policy_values(p)[i] - target[i];
    loss += d * d / 8;
    dv[i] = loss_weight * 2 * d / 8;
  }
  grad_scaler_scale_seed(&o->scaler, dv, 8);
  policy_backward(p, x->obs, x->actions, zeros, NULL, dv, 8);
  optim_step(o, p);
  return loss;
}

// Adam (lr 3e-3), clipping at 0.5 and torch's default GradScaler: the fp16 optimiser tests' setup.
static OptimSpec scaled_optim_spec(void) {
  return (OptimSpec){.adam = {.lr = 3e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-5},
                     .max_grad_norm = 0.5f,
                     .scaler = grad_scaler_defaults(1)};
}

// torch's autocast forms the weight and bias gradients as fp16 GEMM and sum outputs, which overflow
// at 65520 (scaled); log_std's is fp32. The engine keeps all in fp32, so the unscale pass counts a
// network gradient of 65520 as the overflow torch would see, and a log_std gradient only at inf.
Test(nn_optim, fp16_network_gradients_overflow_at_65520_and_log_std_at_inf) {
  Backend *b = cpu();
  PolicySpec spec = small_spec(POLICY_HEAD_GAUSSIAN, NN_F16);
  Policy *p = policy_init(b, &spec);
  OptimSpec os = scaled_optim_spec();
  Optimizer *o = optim_init(b, &os);
  const struct {
    float *at;
    float value, found;
  } cases[] = {{p->grads.pi.w[0], 65520.0f, 1.0f},
               {p->grads.vf.b[1], -65520.0f, 1.0f},
               {p->grads.pi.w[0], 65500.0f, 0.0f},
               {p->grads.log_std, 1e30f, 0.0f},
               {p->grads.log_std, INFINITY, 1.0f}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    memset(p->grads_memory, 0, p->slab_floats * sizeof(float));  // CPU backend: host memory
    cases[k].at[0] = cases[k].value;
    optim_step(o, p);
    OptimScalars st;
    optim_read_state(o, &st);
    cr_expect_eq(st.found_inf, cases[k].found, "case %zu: a gradient of %g", k, (double)cases[k].value);
  }
  optim_free(o);
  policy_free(p);
  backend_close(b);
}

Test(nn_optim, fp16_overflow_skips_backs_off_and_recovers) {
  Backend *b = cpu();
  PolicySpec spec = small_spec(POLICY_HEAD_CATEGORICAL, NN_F16);
  Policy *p = policy_init(b, &spec);
  OptimSpec os = scaled_optim_spec();
  os.scaler.growth_interval = 4;
  Optimizer *o = optim_init(b, &os);
  Batch x = make_batch(p, 9);
  float target[8];
  for (int i = 0; i < 8; i++) target[i] = 0.5f * x.obs[i * 4] - 0.25f * x.obs[i * 4 + 1];
  float first = critic_step(p, o, &x, target, 1.0f);
  OptimScalars st;
  optim_read_state(o, &st);
  cr_assert(st.found_inf == 0.0f && st.adam_step == 1 && st.scale == 65536.0f && st.tracker == 1);
  // A huge loss: its gradient times 65536 overflows fp32 (inf), the step is skipped.
  float *before = malloc(p->slab_floats * sizeof(float));
  memcpy(before, p->params_memory, p->slab_floats * sizeof(float));
  critic_step(p, o, &x, target, 1e36f);
  optim_read_state(o, &st);
  cr_assert_eq(st.found_inf, 1.0f);
  cr_assert_eq(st.adam_step, 1, "a skipped step does not count");
  cr_assert_eq(st.scale, 32768.0f, "backoff halves the scale");
  cr_assert_eq(st.tracker, 0);
  cr_assert(memcmp(before, p->params_memory, p->slab_floats * sizeof(float)) == 0, "parameters untouched");
  // Training goes on. fp16 activations overflow again whenever the scale has grown too far (the
  // scaled gradients pass 65504): each step must follow the rules exactly, mirrored here.
  float loss = 0;
  int skipped = 0, grown = 0;
  for (int it = 0; it < 60; it++) {
    OptimScalars prev = st;
    loss = critic_step(p, o, &x, target, 1.0f);
    optim_read_state(o, &st);
    if (st.found_inf != 0.0f) {
      skipped++;
      cr_assert(st.scale == prev.scale * 0.5f && st.tracker == 0 && st.adam_step == prev.adam_step, "step %d", it);
    } else if (prev.tracker + 1 == 4) {
      grown++;
      cr_assert(st.scale == prev.scale * 2.0f && st.tracker == 0 && st.adam_step == prev.adam_step + 1, "step %d", it);
    } else {
      cr_assert(st.scale == prev.scale && st.tracker == prev.tracker + 1 && st.adam_step == prev.adam_step + 1,
                "step %d", it);
    }
  }
  cr_assert(grown >= 3 && skipped <= 20, "grown %d times, skipped %d", grown, skipped);
  cr_assert(loss < 0.2f * first, "loss %g did not fall from %g", loss, first);
  free(before);
  optim_free(o);
  policy_free(p);
  backend_close(b);
}

static void no_allocation_after_init(NnDtype dtype, int width) {
  Backend *b = cpu();
  PolicySpec spec = small_spec(POLICY_HEAD_GAUSSIAN, dtype);
  spec.pi_layers[0] = width, spec.pi_layers[1] = width;
  Policy *p = policy_init(b, &spec);
  OptimSpec os = {.adam = {.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-5},
                  .max_grad_norm = 0.5f,
                  .scaler = grad_scaler_defaults(dtype == NN_F16)};
  Optimizer *o = optim_init(b, &os);
  Batch x = make_batch(p, 4);
  float target[8] = {0}, u[8 * 3 * 2], actions[8 * 3];
  size_t backend_allocs = backend_alloc_count(b);
  critic_step(p, o, &x, target, 1.0f);  // the first call of each GEMM shape may build library state
  long before = alloc_counter_read();
  for (int it = 0; it < 5; it++) {
    critic_step(p, o, &x, target, 1.0f);
    backend_uniform(b, u, 48, 1, (uint64_t)it, 0);
    policy_act(p, actions, x.obs, u, 8);
  }
  long after = alloc_counter_read();
  cr_assert_eq(backend_alloc_count(b), backend_allocs, "%s: the backend allocated after init", nn_dtype_name(dtype));
  cr_assert_eq(after, before, "%s: %ld malloc calls in the training loop", nn_dtype_name(dtype), after - before);
  // the counter works: an allocation is seen
  void *volatile probe = malloc(16);
  cr_assert_gt(alloc_counter_read(), after);
  free(probe);
  optim_free(o);
  policy_free(p);
  backend_close(b);
}

Test(nn_optim, no_allocation_after_init_fp32) { no_allocation_after_init(NN_F32, 64); }
Test(nn_optim, no_allocation_after_init_fp16) { no_allocation_after_init(NN_F16, 64); }
Test(nn_optim, no_allocation_after_init_bf16) { no_allocation_after_init(NN_BF16, 64); }
// 300 wide at batch 8: the CPU backend's few-row GEMMs go through its transposing scratch
Test(nn_optim, no_allocation_after_init_wide_fp32) { no_allocation_after_init(NN_F32, 300); }
Test(nn_optim, no_allocation_after_init_wide_fp16) { no_allocation_after_init(NN_F16, 300); }

Test(nn_optim, linear_schedule_and_state_roundtrip) {
  Backend *b = cpu();
  OptimSpec os = {.adam = {.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-5},
                  .linear_schedule = 1,
                  .scaler = grad_scaler_defaults(1)};
  Optimizer *o = optim_init(b, &os);
  cr_assert_eq(optim_lr(o, 1.0), 3e-4);
  cr_assert_eq(optim_lr(o, 0.25), 3e-4 * 0.25);
  OptimScalars st = {.adam_step = 17, .scale = 1024.0f, .tracker = 5, .found_inf = 0, .grad_norm = 0.3f}, back;
  optim_set_progress(o, 0.25);
  optim_write_state(o, &st);  // the state; the schedule's factor stays the one set
  optim_read_state(o, &back);
  cr_assert_eq(back.lr_scale, 0.25);
  st.lr_scale = 0.25;
  cr_assert(memcmp(&st, &back, sizeof st) == 0);
  optim_free(o);
  backend_close(b);
}
