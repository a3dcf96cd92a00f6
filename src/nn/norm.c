/*
 * Batch and layer normalisation. Statistics use two passes (the mean, then the squared
 * deviations from it), summed in double across rows: the one-pass E[x^2] - E[x]^2 form cancels
 * catastrophically in float when |mean| >> std, which happens after ReLU layers with large
 * activations.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

/* ---------------------------------------------------------------- batch norm */

typedef struct bn {
  syno_layer_t base;
  int64_t c;
  double momentum, eps;
  syno_tensor_t running_mean, running_var;
  double *mean, *invstd; /* [c]: what the last forward normalised with */
  float *fold;           /* [2c]: eval-mode scale, then shift, under freeze id fold_id */
  uint64_t fold_id;
} bn_t;

static int bn_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  const bn_t *b = (const bn_t *)self;
  if (ndim < 2 || dims[1] != b->c) return SYNO_NN_ESHAPE;
  memcpy(out, dims, (size_t)ndim * sizeof *out);
  return ndim;
}

/* One row's sums in LANES float accumulators, folded into a double: the compiler vectorises
 * them without -ffast-math, and a row (one sample's plane of one channel) is short enough
 * that float partial sums lose nothing the two passes care about. */
#define LANES 8
static double row_sum(const float *p, int64_t k) {
  float acc[LANES] = {0};
  int64_t j = 0;
  for (; j + LANES <= k; j += LANES)
    for (int l = 0; l < LANES; l++) acc[l] += p[j + l];
  double s = 0.0;
  for (int l = 0; l < LANES; l++) s += acc[l];
  for (; j < k; j++) s += p[j];
  return s;
}

static double row_sqdev(const float *p, int64_t k, float mean) {
  float acc[LANES] = {0};
  int64_t j = 0;
  for (; j + LANES <= k; j += LANES)
    for (int l = 0; l < LANES; l++) {
      float d = p[j + l] - mean;
      acc[l] += d * d;
    }
  double s = 0.0;
  for (int l = 0; l < LANES; l++) s += acc[l];
  for (; j < k; j++) s += (double)(p[j] - mean) * (p[j] - mean);
  return s;
}

/* sum g and sum g * (p - mean) over one row. */
static void row_dots(const float *g, const float *p, int64_t k, float mean, double *sg, double *sgd) {
  float a[LANES] = {0}, b[LANES] = {0};
  int64_t j = 0;
  for (; j + LANES <= k; j += LANES)
    for (int l = 0; l < LANES; l++) {
      a[l] += g[j + l];
      b[l] += g[j + l] * (p[j + l] - mean);
    }
  double x = 0.0, y = 0.0;
  for (int l = 0; l < LANES; l++) x += a[l], y += b[l];
  for (; j < k; j++) x += g[j], y += (double)g[j] * (p[j] - mean);
  *sg += x;
  *sgd += y;
}

/* Channels are independent: split them over the threads when there is enough work. */
#define BN_PARALLEL_MIN 65536

static int bn_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  bn_t *b = (bn_t *)self;
  int64_t od[SYNO_TENSOR_MAX_DIMS];
  if (bn_out_shape(self, x->ndim, x->dims, od) < 0) return SYNO_NN_ESHAPE;
  int rc = syno_nn_tensor_resize_like(&self->out, x);
  if (rc) return rc;
  syno_nn_begin_forward(self, x, train);
  const int64_t n = x->dims[0], c = b->c, inner = nn_prod(x->dims, 2, x->ndim);
  const int64_t m = n * inner;
  const float *gamma = self->params[0].value.data, *beta = self->params[1].value.data;
  float *rm = b->running_mean.data, *rv = b->running_var.data;
#pragma omp parallel for schedule(static) if (c * m >= BN_PARALLEL_MIN)
  for (int64_t ch = 0; ch < c; ch++) {
    double mean, var;
    if (train) {
      double s = 0.0, ss = 0.0;
      for (int64_t i = 0; i < n; i++) s += row_sum(x->data + (i * c + ch) * inner, inner);
      mean = m > 0 ? s / (double)m : 0.0;
      for (int64_t i = 0; i < n; i++) ss += row_sqdev(x->data + (i * c + ch) * inner, inner, (float)mean);
      var = m > 0 ? ss / (double)m : 0.0;
      double unbiased = m > 1 ? ss / (double)(m - 1) : var;
      rm[ch] = (float)((1.0 - b->momentum) * rm[ch] + b->momentum * mean);
      rv[ch] = (float)((1.0 - b->momentum) * rv[ch] + b->momentum * unbiased);
    } else {
      mean = rm[ch];
      var = rv[ch];
    }
    double inv = 1.0 / sqrt(var + b->eps);
    b->mean[ch] = mean;
    b->invstd[ch] = inv;
    float scale = (float)(gamma[ch] * inv), shift = (float)(beta[ch] - mean * gamma[ch] * inv);
    for (int64_t i = 0; i < n; i++) {
      const float *p = x->data + (i * c + ch) * inner;
      float *q = self->out.data + (i * c + ch) * inner;
      for (int64_t j = 0; j < inner; j++) q[j] = p[j] * scale + shift;
    }
  }
  return SYNO_NN_OK;
}

static int bn_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  bn_t *b = (bn_t *)self;
  const syno_tensor_t *x = &self->in;
  int skip, rc = syno_nn_prepare_grad_in(self, &skip);
  if (rc) return rc;
  const int64_t n = x->dims[0], c = b->c, inner = nn_prod(x->dims, 2, x->ndim);
  const double m = (double)(n * inner);
  const float *gamma = self->params[0].value.data;
  float *dgamma = self->params[0].grad.data, *dbeta = self->params[1].grad.data;
#pragma omp parallel for schedule(static) if ((double)c * m >= BN_PARALLEL_MIN)
  for (int64_t ch = 0; ch < c; ch++) {
    const double mean = b->mean[ch], inv = b->invstd[ch];
    double sdy = 0.0, sdyd = 0.0; /* sum dy, sum dy * (x - mean) */
    for (int64_t i = 0; i < n; i++)
      row_dots(dy->data + (i * c + ch) * inner, x->data + (i * c + ch) * inner, inner, (float)mean, &sdy, &sdyd);
    const double sdyx = sdyd * inv; /* sum dy * xhat */
    dgamma[ch] += (float)sdyx;
    dbeta[ch] += (float)sdy;
    if (skip) continue;
    /* In eval mode the statistics are constants, so only the scale flows back:
     * dx = k (dy - a - xhat bx), xhat = (x - mean) inv. */
    const double k = gamma[ch] * inv;
    const double a = self->train ? sdy / m : 0.0, bx = self->train ? sdyx / m : 0.0;
    const float kf = (float)k, off = (float)(-k * a), slope = (float)(-k * bx * inv), meanf = (float)mean;
    for (int64_t i = 0; i < n; i++) {
      const float *p = x->data + (i * c + ch) * inner;
      const float *g = dy->data + (i * c + ch) * inner;
      float *q = self->grad_in.data + (i * c + ch) * inner;
      for (int64_t j = 0; j < inner; j++) q[j] = kf * g[j] + off + slope * (p[j] - meanf);
    }
  }
  return SYNO_NN_OK;
}

static void bn_destroy(syno_layer_t *self) {
  bn_t *b = (bn_t *)self;
  syno_nn_tensor_free(&b->running_mean);
  syno_nn_tensor_free(&b->running_var);
  free(b->mean);
  free(b->invstd);
  free(b->fold);
}

static const syno_layer_ops_t bn_ops = {
    "batchnorm", bn_forward, bn_backward, bn_out_shape, bn_destroy, NULL,
};

syno_layer_t *syno_nn_batchnorm_create(int64_t channels, double momentum, double eps) {
  if (channels <= 0 || momentum < 0.0 || momentum > 1.0 || !(eps > 0.0)) return NULL;
  bn_t *b = syno_nn_layer_new(sizeof *b, &bn_ops, 2);
  if (!b) return NULL;
  syno_layer_t *l = &b->base;
  b->c = channels;
  b->momentum = momentum;
  b->eps = eps;
  b->mean = calloc((size_t)channels, sizeof *b->mean);
  b->invstd = calloc((size_t)channels, sizeof *b->invstd);
  b->fold = malloc(2 * (size_t)channels * sizeof *b->fold);
  if (!b->mean || !b->invstd || !b->fold || syno_nn_param_init(&l->params[0], "gamma", 1, &channels) ||
      syno_nn_param_init(&l->params[1], "beta", 1, &channels) || syno_nn_tensor_alloc(&b->running_mean, 1, &channels) ||
      syno_nn_tensor_alloc(&b->running_var, 1, &channels)) {
    syno_nn_layer_free(l);
    return NULL;
  }
  syno_nn_tensor_fill(&l->params[0].value, 1.0f);
  syno_nn_tensor_fill(&b->running_var, 1.0f);
  l->params[0].no_decay = l->params[1].no_decay = 1;
  return l;
}

int64_t nn_bn_affine(syno_layer_t *l, const float **scale, const float **shift) {
  if (!l || l->ops != &bn_ops) return -1;
  bn_t *b = (bn_t *)l;
  if (!l->frozen || b->fold_id != l->frozen) {
    const float *gamma = l->params[0].value.data, *beta = l->params[1].value.data;
    for (int64_t ch = 0; ch < b->c; ch++) {
      /* As bn_forward computes them in eval mode. */
      double inv = 1.0 / sqrt((double)b->running_var.data[ch] + b->eps);
      b->fold[ch] = (float)(gamma[ch] * inv);
      b->fold[b->c + ch] = (float)(beta[ch] - b->running_mean.data[ch] * gamma[ch] * inv);
    }
    b->fold_id = l->frozen;
  }
  *scale = b->fold;
  *shift = b->fold + b->c;
  return b->c;
}

syno_tensor_t *syno_nn_batchnorm_running_mean(syno_layer_t *l) {
  return l && l->ops == &bn_ops ? &((bn_t *)l)->running_mean : NULL;
}

syno_tensor_t *syno_nn_batchnorm_running_var(syno_layer_t *l) {
  return l && l->ops == &bn_ops ? &((bn_t *)l)->running_var : NULL;
}

/* ---------------------------------------------------------------- layer norm */

typedef struct ln {
  syno_layer_t base;
  int64_t d;
  double eps;
  double *stats; /* [2*rows]: mean, invstd per row of the last forward */
  int64_t stats_cap;
  double *acc; /* [2*d]: dgamma, dbeta partial sums in double */
} ln_t;

static int ln_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  if (ndim < 1 || dims[ndim - 1] != ((const ln_t *)self)->d) return SYNO_NN_ESHAPE;
  memcpy(out, dims, (size_t)ndim * sizeof *out);
  return ndim;
}

static int ln_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  ln_t *ln = (ln_t *)self;
  int64_t od[SYNO_TENSOR_MAX_DIMS];
  if (ln_out_shape(self, x->ndim, x->dims, od) < 0) return SYNO_NN_ESHAPE;
  const int64_t d = ln->d, rows = syno_nn_tensor_numel(x) / d;
  int rc = syno_nn_tensor_resize_like(&self->out, x);
  if (rc) return rc;
  if (2 * rows > ln->stats_cap) {
    free(ln->stats);
    ln->stats = malloc((size_t)(2 * rows) * sizeof *ln->stats);
    ln->stats_cap = ln->stats ? 2 * rows : 0;
    if (!ln->stats) return SYNO_NN_ENOMEM;
  }
  syno_nn_begin_forward(self, x, train);
  const float *gamma = self->params[0].value.data, *beta = self->params[1].value.data;
  for (int64_t r = 0; r < rows; r++) {
    const float *p = x->data + r * d;
    float *q = self->out.data + r * d;
    double s = 0.0, ss = 0.0;
    for (int64_t j = 0; j < d; j++) s += p[j];
    double mean = s / (double)d;
    for (int64_t j = 0; j < d; j++) ss += (p[j] - mean) * (p[j] - mean);
    double inv = 1.0 / sqrt(ss / (double)d + ln->eps);
    ln->stats[2 * r] = mean;
    ln->stats[2 * r + 1] = inv;
    for (int64_t j = 0; j < d; j++) q[j] = (float)((p[j] - mean) * inv) * gamma[j] + beta[j];
  }
  return SYNO_NN_OK;
}

static int ln_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  ln_t *ln = (ln_t *)self;
  const syno_tensor_t *x = &self->in;
  const int64_t d = ln->d, rows = syno_nn_tensor_numel(x) / d;
  int skip, rc = syno_nn_prepare_grad_in(self, &skip);
  if (rc) return rc;
  const float *gamma = self->params[0].value.data;
  double *dg = ln->acc, *db = ln->acc + d;
  memset(ln->acc, 0, (size_t)(2 * d) * sizeof *ln->acc);
  for (int64_t r = 0; r < rows; r++) {
    const float *p = x->data + r * d, *g = dy->data + r * d;
    const double mean = ln->stats[2 * r], inv = ln->stats[2 * r + 1];
    double s1 = 0.0, s2 = 0.0; /* sum dxhat, sum dxhat * xhat */
    for (int64_t j = 0; j < d; j++) {
      double xh = (p[j] - mean) * inv, dxh = (double)g[j] * gamma[j];
      dg[j] += g[j] * xh;
      db[j] += g[j];
      s1 += dxh;
      s2 += dxh * xh;
    }
    if (skip) continue;
    s1 /= (double)d;
    s2 /= (double)d;
    float *q = self->grad_in.data + r * d;
    for (int64_t j = 0; j < d; j++) {
      double xh = (p[j] - mean) * inv;
      q[j] = (float)(inv * ((double)g[j] * gamma[j] - s1 - xh * s2));
    }
  }
  float *dgamma = self->params[0].grad.data, *dbeta = self->params[1].grad.data;
  for (int64_t j = 0; j < d; j++) {
    dgamma[j] += (float)dg[j];
    dbeta[j] += (float)db[j];
  }
  return SYNO_NN_OK;
}

static void ln_destroy(syno_layer_t *self) {
  ln_t *ln = (ln_t *)self;
  free(ln->stats);
  free(ln->acc);
}

static const syno_layer_ops_t ln_ops = {
    "layernorm", ln_forward, ln_backward, ln_out_shape, ln_destroy, NULL,
};

syno_layer_t *syno_nn_layernorm_create(int64_t features, double eps) {
  if (features <= 0 || !(eps > 0.0)) return NULL;
  ln_t *ln = syno_nn_layer_new(sizeof *ln, &ln_ops, 2);
  if (!ln) return NULL;
  syno_layer_t *l = &ln->base;
  ln->d = features;
  ln->eps = eps;
  ln->acc = malloc((size_t)(2 * features) * sizeof *ln->acc);
  if (!ln->acc || syno_nn_param_init(&l->params[0], "gamma", 1, &features) ||
      syno_nn_param_init(&l->params[1], "beta", 1, &features)) {
    syno_nn_layer_free(l);
    return NULL;
  }
  syno_nn_tensor_fill(&l->params[0].value, 1.0f);
  l->params[0].no_decay = l->params[1].no_decay = 1;
  return l;
}
