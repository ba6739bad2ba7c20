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

#define MLP_SLICE_FLOATS (512 * 1024)  // 2 MiB of fp32 pre-activations per slice

// A hidden layer of a low-precision run keeps its fp32 pre-activation only until the bias +
// activation op has rounded it: the batch goes through in slices of rows whose fp32 block (about
// MLP_SLICE_FLOATS, reusing the start of h[l]) stays in cache between the GEMM and that op,
// instead of a (B, O) fp32 round trip through memory. bf16 headline step on the 2-core CPU at B
// 1024: 1.5-2 ms of 46 saved with spinning OpenMP threads, even with OMP_WAIT_POLICY=PASSIVE (1 MiB
// slices saved as much spinning but lost 3 ms passive, where each parallel region costs a wake-up).
// Returns the slice's rows, or B for one pass: fp32 runs (h[l] is the activation itself), fp16
// runs (the CPU widens the whole weight matrix to fp32 per GEMM call: slices would repeat that),
// and the head.
static int slice_rows(int B, int O, NnDtype dtype, int last) {
  if (dtype != NN_BF16 || last) return B;
  int rows = MLP_SLICE_FLOATS / O / 32 * 32;
  rows = rows < 128 ? 128 : rows;
  return rows < B ? rows : B;
}

void mlp_forward(Backend *backend, MlpActs *acts, const MlpShape *shape, const MlpParams *params, const MlpLowp *lowp,
                 const void *in, int B, NnDtype dtype) {
  const void *x = in;  // (B, dims[l]) of dtype
  size_t es = nn_dtype_size(dtype);
  for (int l = 0; l < shape->n_linear; l++) {
    int I = l == 0 ? lowp->in_dim : shape->dims[l], O = shape->dims[l + 1];
    const void *w = l == 0 ? lowp->w_in : lowp->w[l];
    int last = l == shape->n_linear - 1;
    int rows = slice_rows(B, O, dtype, last);
    if (rows < B) {
      for (int r0 = 0; r0 < B; r0 += rows) {
        int n = B - r0 < rows ? B - r0 : rows;
        backend_gemm(backend, dtype, 0, 1, n, O, I, 1.0f, (const char *)x + (size_t)r0 * I * es, w, 0.0f, acts->h[l]);
        backend_bias_act_forward(backend, (char *)acts->h_lp[l] + (size_t)r0 * O * es, dtype, acts->h[l], params->b[l],
                                 n, O, shape->act);
      }
      x = acts->h_lp[l];
      continue;
    }
    // h (B, O) = x (B, I) W^T in fp32, then bias and activation, stored in the dtype (hidden layers
    // of low-precision runs: h_lp) or fp32 (fp32 runs, and the head's output always)
    backend_gemm(backend, dtype, 0, 1, B, O, I, 1.0f, x, w, 0.0f, acts->h[l]);
    NnDtype out_dtype = last ? NN_F32 : dtype;
    void *out = out_dtype == NN_F32 ? (void *)acts->h[l] : acts->h_lp[l];
    backend_bias_act_forward(backend, out, out_dtype, acts->h[l], params->b[l], B, O, last ? NN_ACT_NONE : shape->act);
    x = out;
  }
}

void mlp_backward(Backend *backend, MlpParams *grads, MlpActs *acts, float *dout, const MlpShape *shape,
                  const MlpLowp *lowp, const void *in, int B, NnDtype dtype, int accumulate) {
  // dy (B, O): the gradient of layer l's output: dout in fp32 for the head, then each layer's dx,
  // which low-precision runs store in their dtype (backend_gemm_to), in dh / dh_next
  void *dy = dout;
  NnDtype dy_dtype = NN_F32;
  for (int l = shape->n_linear - 1; l >= 0; l--) {
    int I = shape->dims[l], O = shape->dims[l + 1];
    int last = l == shape->n_linear - 1;
    NnDtype out_dtype = last ? NN_F32 : dtype;
    const void *y = out_dtype == NN_F32 ? (const void *)acts->h[l] : acts->h_lp[l];
    const void *x = l == 0 ? in : (dtype == NN_F32 ? (const void *)acts->h[l - 1] : acts->h_lp[l - 1]);
    // dpre (B, O) = dy * act'(y), stored in the GEMMs' dtype; db += its column sums
    void *dpre = dtype == NN_F32 ? dy : acts->dh_lp;
    if (!accumulate) backend_memset_zero(backend, grads->b[l], (size_t)O * sizeof(float));
    if (acts->dh_t)  // the first layer's dpre is read only through dh_t (no dx): not written
      backend_bias_act_backward_t(backend, l == 0 ? NULL : dpre, acts->dh_t, dtype, grads->b[l], dy, dy_dtype, y,
                                  out_dtype, B, O, last ? NN_ACT_NONE : shape->act);
    else
      backend_bias_act_backward(backend, dpre, dtype, grads->b[l], dy, dy_dtype, y, out_dtype, B, O,
                                last ? NN_ACT_NONE : shape->act);
    // dW (O, I) += dpre^T (O, B) x (B, I), from dh_t (O, B) when there is one; = when not
    // accumulating (beta 0: no zeroing pass, and the GEMM does not read C)
    float beta = accumulate ? 1.0f : 0.0f;
    if (acts->dh_t)
      backend_gemm(backend, dtype, 0, 0, O, I, B, 1.0f, acts->dh_t, x, beta, grads->w[l]);
    else
      backend_gemm(backend, dtype, 1, 0, O, I, B, 1.0f, dpre, x, beta, grads->w[l]);
    if (l == 0) break;  // no gradient for the observations
    // dx (B, I) = dpre (B, O) W (O, I), summed in fp32 and stored in the dtype
    void *dx = dy == (void *)acts->dh ? (void *)acts->dh_next : (void *)acts->dh;
    backend_gemm_to(backend, dtype, 0, 0, B, I, O, 1.0f, dpre, lowp->w[l], 0.0f, dx, dtype);
    dy = dx;
    dy_dtype = dtype;
  }
}
