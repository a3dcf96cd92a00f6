/*
 * Pooling. Max pooling remembers the arg-max of every output (an index into its input plane)
 * so backward is a scatter, and ties go to the first maximum, as in PyTorch.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

typedef struct pool {
  syno_layer_t base;
  int64_t k, s, p;
  int32_t *argmax; /* max pooling only: [numel(out)] */
  int64_t argmax_cap;
} pool_t;

static int pool_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  const pool_t *pl = (const pool_t *)self;
  if (ndim != 4 || dims[2] + 2 * pl->p < pl->k || dims[3] + 2 * pl->p < pl->k) return SYNO_NN_ESHAPE;
  out[0] = dims[0];
  out[1] = dims[1];
  out[2] = (dims[2] + 2 * pl->p - pl->k) / pl->s + 1;
  out[3] = (dims[3] + 2 * pl->p - pl->k) / pl->s + 1;
  return 4;
}

static int pool_begin(syno_layer_t *self, const syno_tensor_t *x, int train) {
  int64_t od[4];
  if (pool_out_shape(self, x->ndim, x->dims, od) < 0 || x->dims[2] * x->dims[3] > INT32_MAX) return SYNO_NN_ESHAPE;
  int rc = syno_nn_tensor_resize(&self->out, 4, od);
  if (rc) return rc;
  syno_nn_begin_forward(self, x, train);
  return SYNO_NN_OK;
}

static int max_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  pool_t *pl = (pool_t *)self;
  int rc = pool_begin(self, x, train);
  if (rc) return rc;
  const int64_t nout = syno_nn_tensor_numel(&self->out);
  if (nout > pl->argmax_cap) {
    free(pl->argmax);
    pl->argmax = malloc((size_t)nout * sizeof *pl->argmax);
    pl->argmax_cap = pl->argmax ? nout : 0;
    if (!pl->argmax) return SYNO_NN_ENOMEM;
  }
  const int64_t planes = x->dims[0] * x->dims[1], h = x->dims[2], w = x->dims[3];
  const int64_t oh = self->out.dims[2], ow = self->out.dims[3];
  for (int64_t pc = 0; pc < planes; pc++) {
    const float *src = x->data + pc * h * w;
    float *dst = self->out.data + pc * oh * ow;
    int32_t *am = pl->argmax + pc * oh * ow;
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++) {
        float best = -FLT_MAX;
        int32_t arg = -1;
        for (int64_t a = 0; a < pl->k; a++) {
          int64_t ih = i * pl->s - pl->p + a;
          if (ih < 0 || ih >= h) continue;
          for (int64_t b = 0; b < pl->k; b++) {
            int64_t iw = j * pl->s - pl->p + b;
            if (iw < 0 || iw >= w) continue;
            float v = src[ih * w + iw];
            if (arg < 0 || v > best) {
              best = v;
              arg = (int32_t)(ih * w + iw);
            }
          }
        }
        /* A window entirely in the padding has no input: output 0, no gradient. */
        dst[i * ow + j] = arg < 0 ? 0.0f : best;
        am[i * ow + j] = arg;
      }
  }
  return SYNO_NN_OK;
}

static int max_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  pool_t *pl = (pool_t *)self;
  int skip, rc = syno_nn_prepare_grad_in(self, &skip);
  if (rc || skip) return rc;
  syno_nn_tensor_zero(&self->grad_in);
  const int64_t planes = self->in.dims[0] * self->in.dims[1];
  const int64_t hw = self->in.dims[2] * self->in.dims[3];
  const int64_t ohw = self->out.dims[2] * self->out.dims[3];
  for (int64_t pc = 0; pc < planes; pc++) {
    float *dst = self->grad_in.data + pc * hw;
    const float *g = dy->data + pc * ohw;
    const int32_t *am = pl->argmax + pc * ohw;
    for (int64_t i = 0; i < ohw; i++)
      if (am[i] >= 0) dst[am[i]] += g[i];
  }
  return SYNO_NN_OK;
}

static int avg_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  pool_t *pl = (pool_t *)self;
  int rc = pool_begin(self, x, train);
  if (rc) return rc;
  const int64_t planes = x->dims[0] * x->dims[1], h = x->dims[2], w = x->dims[3];
  const int64_t oh = self->out.dims[2], ow = self->out.dims[3];
  const double scale = 1.0 / (double)(pl->k * pl->k);
  if (pl->k == 2 && pl->s == 2 && pl->p == 0) {
    /* The ResNet downsampling window: same sums, in the same order, as the loop below. */
    for (int64_t pc = 0; pc < planes; pc++) {
      const float *src = x->data + pc * h * w;
      float *dst = self->out.data + pc * oh * ow;
      for (int64_t i = 0; i < oh; i++) {
        const float *r0 = src + 2 * i * w, *r1 = r0 + w;
        for (int64_t j = 0; j < ow; j++)
          dst[i * ow + j] = (float)(((((double)r0[2 * j] + r0[2 * j + 1]) + r1[2 * j]) + r1[2 * j + 1]) * scale);
      }
    }
    return SYNO_NN_OK;
  }
  for (int64_t pc = 0; pc < planes; pc++) {
    const float *src = x->data + pc * h * w;
    float *dst = self->out.data + pc * oh * ow;
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++) {
        double s = 0.0;
        for (int64_t a = 0; a < pl->k; a++) {
          int64_t ih = i * pl->s - pl->p + a;
          if (ih < 0 || ih >= h) continue;
          for (int64_t b = 0; b < pl->k; b++) {
            int64_t iw = j * pl->s - pl->p + b;
            if (iw >= 0 && iw < w) s += src[ih * w + iw];
          }
        }
        dst[i * ow + j] = (float)(s * scale);
      }
  }
  return SYNO_NN_OK;
}

static int avg_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  pool_t *pl = (pool_t *)self;
  int skip, rc = syno_nn_prepare_grad_in(self, &skip);
  if (rc || skip) return rc;
  syno_nn_tensor_zero(&self->grad_in);
  const int64_t planes = self->in.dims[0] * self->in.dims[1];
  const int64_t h = self->in.dims[2], w = self->in.dims[3];
  const int64_t oh = self->out.dims[2], ow = self->out.dims[3];
  const float scale = 1.0f / (float)(pl->k * pl->k);
  for (int64_t pc = 0; pc < planes; pc++) {
    float *dst = self->grad_in.data + pc * h * w;
    const float *g = dy->data + pc * oh * ow;
    for (int64_t i = 0; i < oh; i++)
      for (int64_t j = 0; j < ow; j++) {
        float v = g[i * ow + j] * scale;
        for (int64_t a = 0; a < pl->k; a++) {
          int64_t ih = i * pl->s - pl->p + a;
          if (ih < 0 || ih >= h) continue;
          for (int64_t b = 0; b < pl->k; b++) {
            int64_t iw = j * pl->s - pl->p + b;
            if (iw >= 0 && iw < w) dst[ih * w + iw] += v;
          }
        }
      }
  }
  return SYNO_NN_OK;
}

static void pool_destroy(syno_layer_t *self) { free(((pool_t *)self)->argmax); }

static const syno_layer_ops_t max_ops = {
    "maxpool2d", max_forward, max_backward, pool_out_shape, pool_destroy, NULL,
};
static const syno_layer_ops_t avg_ops = {
    "avgpool2d", avg_forward, avg_backward, pool_out_shape, pool_destroy, NULL,
};

static syno_layer_t *pool_create(const syno_layer_ops_t *ops, int64_t k, int64_t s, int64_t p) {
  if (s == 0) s = k;
  /* pad > k/2 would allow windows made only of padding; PyTorch rejects it too. */
  if (k <= 0 || s <= 0 || p < 0 || 2 * p > k) return NULL;
  pool_t *pl = syno_nn_layer_new(sizeof *pl, ops, 0);
  if (!pl) return NULL;
  pl->k = k;
  pl->s = s;
  pl->p = p;
  return &pl->base;
}

syno_layer_t *syno_nn_maxpool2d_create(int64_t kernel, int64_t stride, int64_t pad) {
  return pool_create(&max_ops, kernel, stride, pad);
}

syno_layer_t *syno_nn_avgpool2d_create(int64_t kernel, int64_t stride, int64_t pad) {
  return pool_create(&avg_ops, kernel, stride, pad);
}

/* ---------------------------------------------------------------- global average pooling */

static int gap_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  (void)self;
  if (ndim != 4) return SYNO_NN_ESHAPE;
  out[0] = dims[0];
  out[1] = dims[1];
  return 2;
}

static int gap_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  int64_t od[2];
  if (gap_out_shape(self, x->ndim, x->dims, od) < 0 || x->dims[2] * x->dims[3] == 0) return SYNO_NN_ESHAPE;
  int rc = syno_nn_tensor_resize(&self->out, 2, od);
  if (rc) return rc;
  syno_nn_begin_forward(self, x, train);
  const int64_t planes = od[0] * od[1], hw = x->dims[2] * x->dims[3];
  for (int64_t pc = 0; pc < planes; pc++) {
    const float *p = x->data + pc * hw;
    double s = 0.0;
    for (int64_t i = 0; i < hw; i++) s += p[i];
    self->out.data[pc] = (float)(s / (double)hw);
  }
  return SYNO_NN_OK;
}

static int gap_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  int skip, rc = syno_nn_prepare_grad_in(self, &skip);
  if (rc || skip) return rc;
  const int64_t planes = dy->dims[0] * dy->dims[1];
  const int64_t hw = self->in.dims[2] * self->in.dims[3];
  for (int64_t pc = 0; pc < planes; pc++) {
    float v = dy->data[pc] / (float)hw, *q = self->grad_in.data + pc * hw;
    for (int64_t i = 0; i < hw; i++) q[i] = v;
  }
  return SYNO_NN_OK;
}

static const syno_layer_ops_t gap_ops = {
    "global_avgpool", gap_forward, gap_backward, gap_out_shape, NULL, NULL,
};

syno_layer_t *syno_nn_global_avgpool_create(void) { return syno_nn_layer_new(sizeof(syno_layer_t), &gap_ops, 0); }
