/*
 * Linear layer: every leading dim is a row, so the same layer serves [N, in] after a CNN's
 * pooling and [B, T, in] inside a transformer. Three GEMMs: forward, dX, dW.
 */
#include <math.h>
#include <string.h>

#include <cblas.h>

#include "nn_internal.h"
#include "syno/train.h"

typedef struct linear {
  syno_layer_t base;
  int64_t in, out;
  int bias;
} linear_t;

static int lin_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  const linear_t *ln = (const linear_t *)self;
  if (ndim < 1 || dims[ndim - 1] != ln->in) return SYNO_NN_ESHAPE;
  memcpy(out, dims, (size_t)ndim * sizeof *out);
  out[ndim - 1] = ln->out;
  return ndim;
}

static int lin_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  linear_t *ln = (linear_t *)self;
  int64_t od[SYNO_TENSOR_MAX_DIMS];
  int nd = lin_out_shape(self, x->ndim, x->dims, od);
  if (nd < 0) return nd;
  int64_t rows = syno_nn_tensor_numel(x) / ln->in;
  if (!nn_fits_int(rows)) return SYNO_NN_ESHAPE;
  int rc = syno_nn_tensor_resize(&self->out, nd, od);
  if (rc) return rc;
  syno_nn_begin_forward(self, x, train);
  float *y = self->out.data;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)rows, (int)ln->out, (int)ln->in, 1.0f, x->data, (int)ln->in,
              self->params[0].value.data, (int)ln->in, 0.0f, y, (int)ln->out);
  if (ln->bias) {
    const float *b = self->params[1].value.data;
    for (int64_t r = 0; r < rows; r++)
      for (int64_t j = 0; j < ln->out; j++) y[r * ln->out + j] += b[j];
  }
  return SYNO_NN_OK;
}

static int lin_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  linear_t *ln = (linear_t *)self;
  const syno_tensor_t *x = &self->in;
  int64_t rows = syno_nn_tensor_numel(x) / ln->in;
  int skip, rc = syno_nn_prepare_grad_in(self, &skip);
  if (rc) return rc;
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)ln->out, (int)ln->in, (int)rows, 1.0f, dy->data,
              (int)ln->out, x->data, (int)ln->in, 1.0f, self->params[0].grad.data, (int)ln->in);
  if (!skip)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)rows, (int)ln->in, (int)ln->out, 1.0f, dy->data,
                (int)ln->out, self->params[0].value.data, (int)ln->in, 0.0f, self->grad_in.data, (int)ln->in);
  if (ln->bias) {
    float *db = self->params[1].grad.data;
    for (int64_t j = 0; j < ln->out; j++) {
      double s = 0.0;
      for (int64_t r = 0; r < rows; r++) s += dy->data[r * ln->out + j];
      db[j] += (float)s;
    }
  }
  return SYNO_NN_OK;
}

static const syno_layer_ops_t lin_ops = {
    "linear", lin_forward, lin_backward, lin_out_shape, NULL, NULL,
};

syno_layer_t *syno_nn_linear_create(int64_t in_features, int64_t out_features, int bias, syno_rng_t *rng) {
  if (in_features <= 0 || out_features <= 0 || !nn_fits_int(in_features) || !nn_fits_int(out_features) || !rng)
    return NULL;
  linear_t *ln = syno_nn_layer_new(sizeof *ln, &lin_ops, bias ? 2 : 1);
  if (!ln) return NULL;
  ln->in = in_features;
  ln->out = out_features;
  ln->bias = bias != 0;
  syno_layer_t *l = &ln->base;
  int64_t wd[2] = {out_features, in_features};
  double bound = 1.0 / sqrt((double)in_features);
  if (syno_nn_param_init(&l->params[0], "weight", 2, wd) ||
      (bias && syno_nn_param_init(&l->params[1], "bias", 1, &out_features))) {
    syno_nn_layer_free(l);
    return NULL;
  }
  syno_nn_fill_uniform(rng, &l->params[0].value, -bound, bound);
  if (bias) {
    syno_nn_fill_uniform(rng, &l->params[1].value, -bound, bound);
    l->params[1].no_decay = 1;
  }
  return l;
}
