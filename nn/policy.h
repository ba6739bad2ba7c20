// nn/policy.h: the actor and the critic (separate MLPs, SB3's ActorCriticPolicy with
// share_features_extractor=False and net_arch=dict(pi=..., vf=...)), their heads, and every slab
// they need.
//
// The policy owns six slabs, each one backend allocation made in policy_init and addressed
// through the pointer structs below, filled from one size table (STYLE rule 3, llm.c):
//   params (fp32 master), grads, adam_m, adam_v (all PolicyParams layout, slab_floats floats:
//           the tensors in order, each at a multiple of 32 floats, zeros between them),
//   lowp   (fp16 / bf16 copy of the params slab, same layout, so Adam writes it in the same
//           pass; the GEMMs read its weights; absent in fp32 runs; then, when the observations are
//           padded (policy_padded_obs_dim), each network's first-layer weights with zero columns;
//           the backend may keep these weights in its own layout too: backend_weights_changed),
//   acts   (activations and their gradients for max_batch rows).
// policy_init also reserves the backend's GEMM workspace for max_batch, so the policy's calls
// allocate nothing after it, neither backend memory nor with malloc (the backend's allocation count
// and a malloc counter check it in test_nn_policy.c, after one warm-up call; the libraries'
// allocations, such as oneDNN's primitive per GEMM shape at its first use, are not counted).
//
// Heads: categorical (logits of action_dim actions, actions stored as float indices) or diagonal
// Gaussian (action_dim means and a state-independent log_std parameter, initialised to
// log_std_init). Value head: one output.
//
// Init (spec.init), each from an xoshiro stream of spec.seed:
//   POLICY_INIT_ORTHO: SB3's orthogonal init, ortho_init = True (torch.nn.init.orthogonal_: QR of a
//     Gaussian matrix with the signs of R's diagonal folded into Q), gain sqrt(2) for hidden layers,
//     0.01 for the policy head, 1 for the value head, zero biases.
//   POLICY_INIT_TORCH: SB3 with ortho_init = False, i.e. torch.nn.Linear's own init: weights and
//     biases uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)) (kaiming_uniform_ with a = sqrt(5)).
//   POLICY_INIT_ZERO: every parameter zero, for callers that then set all of them (fixtures).
//
// Legend for shapes: T horizon, N envs, B minibatch, O obs dim, A actions, H hidden.
// Depends on nn/backend.h, nn/mlp.h, common/rng.h.
#ifndef PPO_NN_POLICY_H
#define PPO_NN_POLICY_H

#include <stdint.h>

#include "common/rng.h"
#include "nn/mlp.h"

typedef enum { POLICY_HEAD_CATEGORICAL = 0, POLICY_HEAD_GAUSSIAN = 1 } PolicyHead;
typedef enum { POLICY_INIT_ZERO = 0, POLICY_INIT_ORTHO = 1, POLICY_INIT_TORCH = 2 } PolicyInit;

typedef struct {
  int obs_dim;     // O
  int action_dim;  // A: number of actions (categorical) or action dimensions (Gaussian)
  PolicyHead head;
  int n_pi, pi_layers[NN_MAX_LINEAR - 1];  // hidden sizes of the actor, e.g. 64,64 or 2048,1024,512
  int n_vf, vf_layers[NN_MAX_LINEAR - 1];  // hidden sizes of the critic
  int activation;                          // NN_ACT_TANH or NN_ACT_RELU
  NnDtype dtype;                           // GEMM precision: NN_F32, NN_F16 or NN_BF16
  int max_batch;                           // largest B any call will use (rollout or minibatch)
  float log_std_init;                      // Gaussian head only (SB3 default 0)
  PolicyInit init;                         // see above; the config's ortho_init picks ORTHO or TORCH
  uint64_t seed;                           // init stream
  int obs_pad;  // the first layer's forward GEMM reads observations and weights with zero columns up to a multiple
                // of this: 0 = the precision's choice (policy_obs_pad_multiple), 1 = none
} PolicySpec;

typedef struct {
  MlpParams pi, vf;
  float *log_std;  // (A) Gaussian head only, else NULL
} PolicyParams;    // the layout of params, grads, adam_m and adam_v

typedef struct {
  MlpLowp pi, vf;
} PolicyLowp;

typedef struct {
  void *obs_lp;    // (B, O) the observations rounded to the dtype (fp16 / bf16 runs)
  void *obs_pad;   // (B, O padded) obs_lp with zero columns up to the padded width; NULL: no padding
  MlpActs pi, vf;  // pi output (B, A): logits or means; vf output (B, 1): values
  float *logp;     // (B) log-prob of the given or sampled actions
  float *entropy;  // (B)
  float *dhead;    // (B, A) gradient of the policy head's output
  float *dvalues;  // (B) gradient of the values (copied: the MLP backward overwrites it)
} PolicyActs;

typedef struct {
  size_t params, lowp, acts;  // bytes of the params slab (grads, m, v are the same), low-precision copy, activations
  size_t total;               // all six slabs together
} PolicyMemoryPlan;

typedef struct {
  Backend *backend;  // not owned
  PolicySpec spec;
  MlpShape pi_shape, vf_shape;
  double largest_layer;  // the largest in x out of a layer of either network (the first layer's input as
                         // its forward GEMM reads it): B times it bounds a GEMM's multiply-adds at batch B
  size_t slab_floats;    // floats in each of params, grads, adam_m, adam_v (the padding included)
  size_t parameters;     // the networks' parameters (slab_floats less the padding between tensors; checkpoints'
                         // param_count attribute)
  PolicyMemoryPlan plan;
  float *params_memory, *grads_memory, *m_memory, *v_memory;  // the slabs
  void *lowp_memory, *acts_memory;
  PolicyParams params, grads, m, v;
  PolicyLowp lowp;
  PolicyActs acts;
  int grads_zero_pending;     // policy_zero_grad was called: the next backward writes grads instead of adding
  NnDtype forward_obs_dtype;  // the last forward's observations: NN_F32 or stored; its backward must match
} Policy;

// The width the first layer's forward GEMM uses for O observations: in fp16 and bf16, O rounded up
// to spec->obs_pad, or by default to 32 in bf16 (the CPU's AMX tiles take 32 bf16 per row: obs 517
// padded to 544 made the headline bf16 step 8 % and rollout inference 20 % faster on the 2-core
// machine) and 8 in fp16 (a GPU's tensor-core GEMMs want 16-byte rows); O itself in fp32 (padding
// measured no gain there; obs_pad is ignored).
int policy_obs_pad_multiple(const PolicySpec *spec);
int policy_padded_obs_dim(const PolicySpec *spec);
// Checks the spec; on bad values returns -1 and sets error_message() naming the field and what is allowed.
int policy_spec_check(const PolicySpec *spec);
size_t policy_parameter_count(const PolicySpec *spec);  // weights, biases (and log_std) of both networks
// A host copy of a params-layout slab (slab_floats floats) in place to the packed order (the
// `parameters` floats of every tensor, one after the other, as checkpoints store Adam's m and v),
// and back (the padding zeroed).
void policy_slab_pack(const Policy *policy, float *host);
void policy_slab_unpack(const Policy *policy, float *host);
// The memory plan of a spec without allocating (for --plan); spec must pass policy_spec_check.
PolicyMemoryPlan policy_plan(const PolicySpec *spec);
// The backend memory a policy of this spec makes the backend keep beside the slabs: the GEMM
// workspace it holds once policy_init reserved the policy's (backend_workspace_bytes: on CUDA at
// least cuBLAS's 32 MiB) and the weights in the backend's own layout (backend_weights_bytes).
size_t policy_backend_bytes(const PolicySpec *spec, Backend *backend);
// Allocates the slabs, initialises the parameters and the low-precision copies. Returns NULL and
// sets error_message() when the spec is invalid. The caller owns the result: policy_free.
Policy *policy_init(Backend *backend, const PolicySpec *spec);
void policy_free(Policy *policy);  // frees the slabs and the struct; NULL is fine

// acts.pi output (B, A) and acts.vf output (B, 1) from obs (B, O) (fp32, backend memory).
void policy_forward(Policy *policy, const float *obs, int B);
// The critic alone: acts.vf output (B, 1) from obs (B, O) (the truncation bootstrap V(final_obs)).
void policy_value_forward(Policy *policy, const float *obs, int B);
// policy_forward, then acts.logp and acts.entropy (B) of actions: (B) indices or (B, A) values.
void policy_evaluate(Policy *policy, const float *obs, const float *actions, int B);
// grads += gradient of sum_b dlogp[b] logp[b] + dentropy[b] entropy[b] + dvalues[b] values[b], using
// the activations of the last policy_evaluate on the same obs and actions. dentropy may be NULL.
void policy_backward(Policy *policy, const float *obs, const float *actions, const float *dlogp, const float *dentropy,
                     const float *dvalues, int B);
// The dtype the first layer reads observations in: spec.dtype (fp32, fp16 or bf16). Observations
// kept for later (the rollout buffer) can be stored in it, rounded by backend_cast, and passed to
// the _stored forms below, which give the same bits as the fp32 forms given the unrounded
// observations: those round them on entry (the update's GEMMs read nothing else of them). A
// backward takes the form of the forward before it (checked: the fp32 backward reads the rounding
// its forward made).
NnDtype policy_obs_dtype(const Policy *policy);
void policy_evaluate_stored(Policy *policy, const void *obs, const float *actions, int B);
void policy_backward_stored(Policy *policy, const void *obs, const float *actions, const float *dlogp,
                            const float *dentropy, const float *dvalues, int B);
// Rollout: policy_forward, then actions drawn with uniforms ((B) categorical, (B, A, 2) Gaussian);
// actions (B) or (B, A), logp (B) into acts.logp; values are acts.vf.h[last] (B).
void policy_act(Policy *policy, float *actions, const float *obs, const float *uniforms, int B);
const float *policy_values(const Policy *policy);    // (B) values of the last forward
const float *policy_head_out(const Policy *policy);  // (B, A) logits or means of the last forward

// Zeroes the grads slab, lazily: it marks the grads as zero, and the next policy_backward writes
// them (its weight-gradient GEMMs run with beta 0, bias gradients are zeroed first) instead of
// adding to them, which saves a pass over the slab and the GEMMs' read of it. optim_step zeroes the
// slab for real when no backward came in between. Read grads_memory after a backward (or call
// policy_grads_settle), not between policy_zero_grad and the backward.
void policy_zero_grad(Policy *policy);
void policy_grads_settle(Policy *policy);  // performs a pending zero_grad now (a no-op when none is pending)
void policy_refresh_lowp(Policy *policy);  // lowp = params rounded (after changing params outside optim_step)
// What is derived from lowp (optim_step calls it after Adam): the padded first-layer copies, then
// backend_weights_changed for every weight matrix the GEMMs read (the backend's own layouts).
void policy_refresh_derived(Policy *policy);

// Orthogonal matrix (rows, cols) scaled by gain, as torch.nn.init.orthogonal_ builds it from a
// Gaussian matrix `gauss` (rows, cols) (overwritten). Exposed for the tests.
void nn_orthogonal_from_gaussian(float *out, double *gauss, int rows, int cols, double gain);

#endif
