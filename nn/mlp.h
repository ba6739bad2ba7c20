// nn/mlp.h: a stack of Linear layers with an activation between them, forward and backward.
//
// Layer l maps (B, dims[l]) to (B, dims[l + 1]) as y = act(x W_l^T + b_l) with W_l (dims[l + 1],
// dims[l]) in torch's nn.Linear layout; the last layer has no activation. The MLP owns no memory:
// the caller (nn/policy.c) points the structs below into its slabs (STYLE rule 3).
//
// Precision: in fp32 every GEMM input is fp32 and `lowp` points at the fp32 weights. In fp16 / bf16
// (DESIGN.md section 6, torch autocast's policy) the GEMMs read low-precision weights (lowp,
// refreshed by each optimiser step) and inputs, accumulate in fp32; hidden activations are stored
// only in the low precision (h_lp, rounded once by the bias + activation op, whose backward reads
// them), the pre-activation gradient fed to the GEMMs is rounded to it (dh_lp), and so is each
// layer's input gradient, which a GEMM sums in fp32 and stores rounded (torch's autocast keeps its
// matmuls' gradients in the low precision too); the element-wise math, the head's output and its
// gradient, bias gradients and all parameter gradients are fp32.
//
// Legend for shapes: T horizon, N envs, B minibatch, O obs dim, A actions, H hidden.
// Depends on nn/backend.h.
#ifndef PPO_NN_MLP_H
#define PPO_NN_MLP_H

#include "nn/backend.h"

#define NN_MAX_LINEAR 9  // up to 8 hidden layers plus the head

typedef struct {
  int n_linear;                 // number of Linear layers (hidden layers + 1)
  int dims[NN_MAX_LINEAR + 1];  // dims[0] input, dims[n_linear] output
  int act;                      // NN_ACT_TANH or NN_ACT_RELU, after every layer but the last
} MlpShape;

typedef struct {
  float *w[NN_MAX_LINEAR];  // (dims[l + 1], dims[l])
  float *b[NN_MAX_LINEAR];  // (dims[l + 1])
} MlpParams;                // parameters, and with the same layout their grads and Adam m and v

typedef struct {
  void *w[NN_MAX_LINEAR];  // (dims[l + 1], dims[l]) in the run's dtype; the fp32 weights in fp32 runs
  // The first layer's forward GEMM reads w_in (dims[1], in_dim) and an input of in_dim columns:
  // w[0] and dims[0], or (nn/policy.c, low precision) copies padded with zero columns to a width the
  // GEMM kernels run faster on. Zero columns add exact zeros: the product is the unpadded one.
  const void *w_in;
  int in_dim;
} MlpLowp;

typedef struct {
  float *h[NN_MAX_LINEAR];    // (B, dims[l + 1]) layer outputs after activation; h[n_linear - 1] is the output
  void *h_lp[NN_MAX_LINEAR];  // (B, dims[l + 1]) h rounded to the dtype, the next GEMM's input (l < n_linear - 1); = h
                              // in fp32
  void *dh;                   // (B, max dim) gradient scratch in the dtype (a layer's input gradient)
  void *dh_lp;                // (B, max dim) the pre-activation gradient in the dtype; = dh in fp32
  void *dh_next;              // (B, max dim) the gradient flowing to the layer below, in the dtype
  void *dh_t;                 // (max dim, B) dh_lp transposed, the weight-gradient GEMM's operand; NULL: dW
                              // reads dh_lp transposed (bf16 only: there the plain operand runs faster)
} MlpActs;

size_t mlp_param_count(const MlpShape *shape);  // weights and biases
int mlp_max_dim(const MlpShape *shape);         // largest dims[l], l >= 1

// acts.h (B, dims[l + 1]) for every layer from in (B, lowp->in_dim) of type dtype.
void mlp_forward(Backend *backend, MlpActs *acts, const MlpShape *shape, const MlpParams *params, const MlpLowp *lowp,
                 const void *in, int B, NnDtype dtype);
// grads += d(loss)/d(params) given dout (B, dims[n_linear]) (overwritten: it is the last layer's
// pre-activation gradient) and the activations of the last mlp_forward on the same `in`; with
// accumulate 0, grads = d(loss)/d(params) instead (whatever grads held is overwritten, not read).
// `in` is the forward's input unpadded: (B, dims[0]).
void mlp_backward(Backend *backend, MlpParams *grads, MlpActs *acts, float *dout, const MlpShape *shape,
                  const MlpLowp *lowp, const void *in, int B, NnDtype dtype, int accumulate);

#endif
