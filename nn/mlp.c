// nn/mlp.c: Linear + activation stacks. The backward pass walks the forward's calls in reverse.
#include "nn/mlp.h"

size_t mlp_param_count(const MlpShape *shape) {
  size_t n = 0;
  for (int l = 0; l < shape->n_linear; l++) n += (size_t)shape->dims[l + 1] * shape->dims[l] + shape->dims[l + 1];
  return n;
}

int mlp_max_dim(const MlpShape *shape) {
  int m = 0;
  for (int l = 1; l <= shape->n_linear; l++) m = shape->dims[l] > m ? shape->dims[l] : m;
  return m;
}

void mlp_forward(Backend *backend, MlpActs *acts, const MlpShape *shape, const MlpParams *params, const MlpLowp *lowp,
                 const void *in, int B, NnDtype dtype) {
  const void *x = in;  // (B, dims[l]) of dtype
  for (int l = 0; l < shape->n_linear; l++) {
    int I = shape->dims[l], O = shape->dims[l + 1];
    int last = l == shape->n_linear - 1;
    // h (B, O) = x (B, I) W^T in fp32, then bias and activation, stored in the dtype (hidden layers
    // of low-precision runs: h_lp) or fp32 (fp32 runs, and the head's output always)
    backend_gemm(backend, dtype, 0, 1, B, O, I, 1.0f, x, lowp->w[l], 0.0f, acts->h[l]);
    NnDtype out_dtype = last ? NN_F32 : dtype;
    void *out = out_dtype == NN_F32 ? (void *)acts->h[l] : acts->h_lp[l];
    backend_bias_act_forward(backend, out, out_dtype, acts->h[l], params->b[l], B, O, last ? NN_ACT_NONE : shape->act);
    x = out;
  }
}

void mlp_backward(Backend *backend, MlpParams *grads, MlpActs *acts, float *dout, const MlpShape *shape,
                  const MlpLowp *lowp, const void *in, int B, NnDtype dtype) {
  float *dy = dout;  // (B, O) gradient of layer l's output, fp32
  for (int l = shape->n_linear - 1; l >= 0; l--) {
    int I = shape->dims[l], O = shape->dims[l + 1];
    int last = l == shape->n_linear - 1;
    NnDtype out_dtype = last ? NN_F32 : dtype;
    const void *y = out_dtype == NN_F32 ? (const void *)acts->h[l] : acts->h_lp[l];
    const void *x = l == 0 ? in : (dtype == NN_F32 ? (const void *)acts->h[l - 1] : acts->h_lp[l - 1]);
    // dpre (B, O) = dy * act'(y), stored in the GEMMs' dtype; db += its column sums
    void *dpre = dtype == NN_F32 ? (void *)dy : acts->dh_lp;
    backend_bias_act_backward(backend, dpre, dtype, grads->b[l], dy, y, out_dtype, B, O,
                              last ? NN_ACT_NONE : shape->act);
    // dW (O, I) += dpre^T (O, B) x (B, I)
    backend_gemm(backend, dtype, 1, 0, O, I, B, 1.0f, dpre, x, 1.0f, grads->w[l]);
    if (l == 0) break;  // no gradient for the observations
    // dx (B, I) = dpre (B, O) W (O, I), fp32
    float *dx = dy == acts->dh ? acts->dh_next : acts->dh;
    backend_gemm(backend, dtype, 0, 0, B, I, O, 1.0f, dpre, lowp->w[l], 0.0f, dx);
    dy = dx;
  }
}
