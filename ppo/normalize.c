// ppo/normalize.c: SB3's VecNormalize and RunningMeanStd, operation for operation (see normalize.h
// for every detail and where it comes from).
//
// Legend: N envs, O obs dim, D a statistic's dimension.
// Every product that numpy rounds on its own is its own statement here: C allows a compiler to
// fuse a*b+c inside one expression (clang does by default), which would change the last bit.
#include "ppo/normalize.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/error.h"
#include "common/h5io.h"

// --- numpy's summation orders --------------------------------------------------------------------------
// np.mean and np.var (numpy/_core/_methods.py: _mean, _var) are np.add.reduce of x, then of
// (x - mean)^2. How add.reduce walks a C-contiguous (rows, D) array along axis 0, checked
// against numpy 2.4:
//   D > 1:  the rows stay the outer loop: each column is summed row after row;
//   D == 1: the size-1 axis is dropped, the rows become the inner loop, summed by pairwise_sum
//           (numpy/_core/src/umath/loops_utils.h.src: 8 accumulators up to 128 elements,
//           recursive halving above).
// A term is x (square false) or (x - mean)^2 with both operations rounded in the dtype (np.var's
// x = arr - arrmean; x = x * x).
#define PAIRWISE_BLOCK 128

static inline float term_float(float v, float mean, bool square) {
  if (!square) return v;
  float d = v - mean;
  float d2 = d * d;
  return d2;
}

static inline double term_double(double v, double mean, bool square) {
  if (!square) return v;
  double d = v - mean;
  double d2 = d * d;
  return d2;
}

static float pairwise_sum_float(const float *a, long n, float mean, bool square) {
  if (n < 8) {
    float res = 0.0f;
    for (long i = 0; i < n; i++) res += term_float(a[i], mean, square);
    return res;
  }
  if (n <= PAIRWISE_BLOCK) {
    float r[8];
    for (int j = 0; j < 8; j++) r[j] = term_float(a[j], mean, square);
    long i;
    for (i = 8; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; j++) r[j] += term_float(a[i + j], mean, square);
    float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += term_float(a[i], mean, square);
    return res;
  }
  long n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum_float(a, n2, mean, square) + pairwise_sum_float(a + n2, n - n2, mean, square);
}

static double pairwise_sum_double(const double *a, long n, double mean, bool square) {
  if (n < 8) {
    double res = 0.0;
    for (long i = 0; i < n; i++) res += term_double(a[i], mean, square);
    return res;
  }
  if (n <= PAIRWISE_BLOCK) {
    double r[8];
    for (int j = 0; j < 8; j++) r[j] = term_double(a[j], mean, square);
    long i;
    for (i = 8; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; j++) r[j] += term_double(a[i + j], mean, square);
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += term_double(a[i], mean, square);
    return res;
  }
  long n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum_double(a, n2, mean, square) + pairwise_sum_double(a + n2, n - n2, mean, square);
}

// np.add.reduce(terms, axis=0)[j] of x (rows, D).
static float column_sum_float(const float *x, int rows, int D, int j, float mean, bool square) {
  if (D == 1) return pairwise_sum_float(x, rows, mean, square);
  float s = 0.0f;
  for (int i = 0; i < rows; i++) s += term_float(x[(long)i * D + j], mean, square);
  return s;
}

static double column_sum_double(const double *x, int rows, int D, int j, double mean, bool square) {
  if (D == 1) return pairwise_sum_double(x, rows, mean, square);
  double s = 0.0;
  for (int i = 0; i < rows; i++) s += term_double(x[(long)i * D + j], mean, square);
  return s;
}

// --- RunningMeanStd -------------------------------------------------------------------------------------
void rms_reset(RunningMeanStd *rms) {
  for (int j = 0; j < rms->dim; j++) {
    rms->mean[j] = 0.0;
    rms->var[j] = 1.0;
  }
  rms->count = VECNORM_RMS_EPSILON;
}

// update_from_moments for component j (the count is updated by the caller, once). m_b is
// batch_var * batch_count, rounded in the batch's dtype by the caller.
static void rms_merge(RunningMeanStd *rms, int j, double batch_mean, double m_b, double batch_count) {
  const double count = rms->count;
  double delta = batch_mean - rms->mean[j];
  double tot_count = count + batch_count;
  double shift = delta * batch_count;
  shift = shift / tot_count;
  double new_mean = rms->mean[j] + shift;
  double m_a = rms->var[j] * count;
  double cross = delta * delta;  // np.square(delta) * self.count * batch_count / (self.count + batch_count)
  cross = cross * count;
  cross = cross * batch_count;
  cross = cross / (count + batch_count);
  double m_2 = m_a + m_b;
  m_2 = m_2 + cross;
  rms->mean[j] = new_mean;
  rms->var[j] = m_2 / (count + batch_count);
}

void rms_update_float(RunningMeanStd *rms, const float *x, int rows) {
  if (rows <= 0) return;
  const int D = rms->dim;
  const float n = (float)rows;  // float32 sum / count: numpy's true_divide into the float32 result
  for (int j = 0; j < D; j++) {
    float batch_mean = column_sum_float(x, rows, D, j, 0.0f, false) / n;
    float batch_var = column_sum_float(x, rows, D, j, batch_mean, true) / n;
    float m_b = batch_var * n;  // float32 array times a Python int stays float32
    rms_merge(rms, j, (double)batch_mean, (double)m_b, (double)rows);
  }
  rms->count = (double)rows + rms->count;
}

// The two updates above with the ranks' moments merged in between (VecNormMerge): each rank's batch
// moments in its dtype, as above, then the union's moments enter update_from_moments.
static void rms_merge_all(RunningMeanStd *rms, const VecNormMerge *merge, double *moments) {
  merge->fn(merge->ctx, moments, rms->dim);
  for (int j = 0; j < rms->dim; j++) rms_merge(rms, j, moments[3 * j + 1], moments[3 * j + 2], moments[3 * j]);
  rms->count = moments[0] + rms->count;
}

static void rms_update_float_merged(RunningMeanStd *rms, const float *x, int rows, const VecNormMerge *merge,
                                    double *moments) {
  const int D = rms->dim;
  const float n = (float)rows;
  for (int j = 0; j < D; j++) {
    float batch_mean = column_sum_float(x, rows, D, j, 0.0f, false) / n;
    float batch_var = column_sum_float(x, rows, D, j, batch_mean, true) / n;
    float m_b = batch_var * n;
    moments[3 * j] = rows;
    moments[3 * j + 1] = batch_mean;
    moments[3 * j + 2] = m_b;
  }
  rms_merge_all(rms, merge, moments);
}

static void rms_update_double_merged(RunningMeanStd *rms, const double *x, int rows, const VecNormMerge *merge,
                                     double *moments) {
  const int D = rms->dim;
  const double n = (double)rows;
  for (int j = 0; j < D; j++) {
    double batch_mean = column_sum_double(x, rows, D, j, 0.0, false) / n;
    double batch_var = column_sum_double(x, rows, D, j, batch_mean, true) / n;
    moments[3 * j] = n;
    moments[3 * j + 1] = batch_mean;
    moments[3 * j + 2] = batch_var * n;
  }
  rms_merge_all(rms, merge, moments);
}

void rms_update_double(RunningMeanStd *rms, const double *x, int rows) {
  if (rows <= 0) return;
  const int D = rms->dim;
  const double n = (double)rows;
  for (int j = 0; j < D; j++) {
    double batch_mean = column_sum_double(x, rows, D, j, 0.0, false) / n;
    double batch_var = column_sum_double(x, rows, D, j, batch_mean, true) / n;
    double m_b = batch_var * n;
    rms_merge(rms, j, batch_mean, m_b, n);
  }
  rms->count = n + rms->count;
}

// --- VecNormalize ---------------------------------------------------------------------------------------
// Slab layout (doubles): obs_mean (O), obs_var (O), ret_mean (1), ret_var (1), returns (N), then the
// same again as vecnorm_load's staging area, so a failed load leaves vn untouched.
static size_t vecnorm_state_doubles(int N, int O) { return (size_t)2 * O + 2 + (size_t)N; }

// The slab: the state, vecnorm_load's staging copy of it, the (O, 3) batch moments for merging.
size_t vecnorm_bytes(int num_envs, int obs_dim) {
  return (2 * vecnorm_state_doubles(num_envs, obs_dim) + 3 * (size_t)obs_dim) * sizeof(double);
}

int vecnorm_init(VecNormalize *vn, int num_envs, int obs_dim, bool norm_obs, bool norm_reward, double clip_obs,
                 double clip_reward, double epsilon, double gamma) {
  memset(vn, 0, sizeof *vn);
  if (num_envs < 1) {
    error_set("normalize: num_envs = %d, at least 1 allowed", num_envs);
    return -1;
  }
  if (obs_dim < 1) {
    error_set("normalize: obs_dim = %d, at least 1 allowed", obs_dim);
    return -1;
  }
  const struct {
    const char *name;
    double value;
  } positive[] = {{"clip_obs", clip_obs}, {"clip_reward", clip_reward}, {"epsilon", epsilon}};
  for (size_t k = 0; k < sizeof positive / sizeof positive[0]; k++) {
    if (!(isfinite(positive[k].value) && positive[k].value > 0)) {
      error_set("normalize: %s = %g, a finite number > 0 allowed", positive[k].name, positive[k].value);
      return -1;
    }
  }
  if (!(gamma >= 0.0 && gamma <= 1.0)) {
    error_set("normalize: gamma = %g, a number in [0, 1] allowed", gamma);
    return -1;
  }
  const size_t state = vecnorm_state_doubles(num_envs, obs_dim);
  double *slab = CHECK_ALLOC(vecnorm_bytes(num_envs, obs_dim), "normalisation statistics");
  vn->slab = slab;
  vn->num_envs = num_envs;
  vn->obs_dim = obs_dim;
  vn->norm_obs = norm_obs;
  vn->norm_reward = norm_reward;
  vn->clip_obs = clip_obs;
  vn->clip_reward = clip_reward;
  vn->epsilon = epsilon;
  vn->gamma = gamma;
  vn->obs_rms = (RunningMeanStd){.dim = obs_dim, .mean = slab, .var = slab + obs_dim};
  vn->ret_rms = (RunningMeanStd){.dim = 1, .mean = slab + 2 * obs_dim, .var = slab + 2 * obs_dim + 1};
  vn->returns = slab + 2 * obs_dim + 2;
  vn->moments = slab + 2 * state;
  memset(slab + state, 0, (state + 3 * (size_t)obs_dim) * sizeof(double));
  rms_reset(&vn->obs_rms);
  rms_reset(&vn->ret_rms);
  for (int i = 0; i < num_envs; i++) vn->returns[i] = 0.0;
  vn->training = true;
  return 0;
}

void vecnorm_free(VecNormalize *vn) {
  if (!vn) return;
  free(vn->slab);
  memset(vn, 0, sizeof *vn);
}

// np.clip: NaN stays NaN (fmin/fmax would drop it).
static inline double clip_double(double x, double limit) {
  if (x < -limit) return -limit;
  if (x > limit) return limit;
  return x;
}

void vecnorm_obs_frozen(const VecNormalize *vn, float *obs, int rows) {
  if (!vn->norm_obs) return;
  const int O = vn->obs_dim;
  for (int j = 0; j < O; j++) {
    const double mean = vn->obs_rms.mean[j];
    const double scale = sqrt(vn->obs_rms.var[j] + vn->epsilon);
    for (int i = 0; i < rows; i++) {
      float *v = &obs[(long)i * O + j];
      double centred = (double)*v - mean;
      *v = (float)clip_double(centred / scale, vn->clip_obs);
    }
  }
}

void vecnorm_set_merge(VecNormalize *vn, VecNormMerge merge) { vn->merge = merge; }

void vecnorm_obs(VecNormalize *vn, float *obs, int rows) {
  if (!vn->norm_obs) return;
  if (vn->training && vn->merge.fn && rows > 0)
    rms_update_float_merged(&vn->obs_rms, obs, rows, &vn->merge, vn->moments);
  else if (vn->training)
    rms_update_float(&vn->obs_rms, obs, rows);
  vecnorm_obs_frozen(vn, obs, rows);
}

void vecnorm_reset(VecNormalize *vn, float *obs) {
  for (int i = 0; i < vn->num_envs; i++) vn->returns[i] = 0.0;
  vecnorm_obs(vn, obs, vn->num_envs);
}

void vecnorm_reward(VecNormalize *vn, float *rewards, const uint8_t *dones) {
  const int N = vn->num_envs;
  if (vn->training) {  // _update_reward: also when norm_reward is false, as in SB3
    for (int i = 0; i < N; i++) {
      double discounted = vn->returns[i] * vn->gamma;
      vn->returns[i] = discounted + (double)rewards[i];
    }
    if (vn->merge.fn)
      rms_update_double_merged(&vn->ret_rms, vn->returns, N, &vn->merge, vn->moments);
    else
      rms_update_double(&vn->ret_rms, vn->returns, N);
  }
  if (vn->norm_reward) {
    const double scale = sqrt(vn->ret_rms.var[0] + vn->epsilon);
    for (int i = 0; i < N; i++) rewards[i] = (float)clip_double((double)rewards[i] / scale, vn->clip_reward);
  }
  for (int i = 0; i < N; i++)
    if (dones[i]) vn->returns[i] = 0.0;
}

// --- checkpoints ----------------------------------------------------------------------------------------
typedef struct {
  const char *name;
  double *data;
  hsize_t len;
} StatField;

// The seven datasets, pointing at the live arrays (base = the slab) or at the staging copy.
static int vecnorm_fields(const VecNormalize *vn, double *base, double *counts, StatField out[7]) {
  const int O = vn->obs_dim, N = vn->num_envs;
  out[0] = (StatField){"obs_mean", base, (hsize_t)O};
  out[1] = (StatField){"obs_var", base + O, (hsize_t)O};
  out[2] = (StatField){"obs_count", &counts[0], 1};
  out[3] = (StatField){"ret_mean", base + 2 * O, 1};
  out[4] = (StatField){"ret_var", base + 2 * O + 1, 1};
  out[5] = (StatField){"ret_count", &counts[1], 1};
  out[6] = (StatField){"returns", base + 2 * O + 2, (hsize_t)N};
  return 7;
}

int vecnorm_save(const VecNormalize *vn, hid_t file, const char *group) {
  double counts[2] = {vn->obs_rms.count, vn->ret_rms.count};
  StatField fields[7];
  int n = vecnorm_fields(vn, vn->slab, counts, fields);
  for (int k = 0; k < n; k++) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", group, fields[k].name);
    if (h5io_write(file, path, H5IO_FLOAT64, 1, &fields[k].len, fields[k].data, H5IO_CHECKSUM) != 0) return -1;
  }
  return 0;
}

int vecnorm_load(VecNormalize *vn, hid_t file, const char *group) {
  const size_t state = vecnorm_state_doubles(vn->num_envs, vn->obs_dim);
  double *staging = (double *)vn->slab + state;
  double counts[2];
  StatField fields[7];
  int n = vecnorm_fields(vn, staging, counts, fields);
  for (int k = 0; k < n; k++) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", group, fields[k].name);
    if (h5io_read(file, path, H5IO_FLOAT64, 1, &fields[k].len, fields[k].data) != 0) return -1;
    for (hsize_t i = 0; i < fields[k].len; i++) {
      double v = fields[k].data[i];
      bool is_count = k == 2 || k == 5, is_var = k == 1 || k == 4;
      bool ok = isfinite(v) && (!is_count || v > 0) && (!is_var || v >= 0);
      if (!ok) {
        char name[256];
        ssize_t len = H5Fget_name(file, name, sizeof name);
        error_set("%s: dataset %s[%llu] = %g, %s allowed", len > 0 ? name : "checkpoint", path, (unsigned long long)i,
                  v,
                  is_count ? "a finite count > 0"
                  : is_var ? "a finite variance >= 0"
                           : "a finite number");
        return -1;
      }
    }
  }
  memcpy(vn->slab, staging, state * sizeof(double));
  vn->obs_rms.count = counts[0];
  vn->ret_rms.count = counts[1];
  return 0;
}
