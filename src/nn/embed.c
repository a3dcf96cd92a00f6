/* Token embedding. Ids arrive as floats so the layer fits the one-tensor layer interface;
 * floats hold every integer below 2^24 exactly, far above any vocabulary we train. */
#include <math.h>
#include <string.h>

#include "nn_internal.h"
#include "syno/train.h"

typedef struct embed {
  syno_layer_t base;
  int64_t vocab, dim;
} embed_t;

static int emb_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  if (ndim >= SYNO_TENSOR_MAX_DIMS) return SYNO_NN_ESHAPE;
  memcpy(out, dims, (size_t)ndim * sizeof *out);
  out[ndim] = ((const embed_t *)self)->dim;
  return ndim + 1;
}

static int emb_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  embed_t *e = (embed_t *)self;
  int64_t od[SYNO_TENSOR_MAX_DIMS];
  int nd = emb_out_shape(self, x->ndim, x->dims, od);
  if (nd < 0) return nd;
  const int64_t n = syno_nn_tensor_numel(x);
  for (int64_t i = 0; i < n; i++) {
    float v = x->data[i];
    if (!(v >= 0.0f && v < (float)e->vocab) || v != floorf(v)) return SYNO_NN_ERANGE;
  }
  int rc = syno_nn_tensor_resize(&self->out, nd, od);
  if (rc) return rc;
  syno_nn_begin_forward(self, x, train);
  const float *w = self->params[0].value.data;
  for (int64_t i = 0; i < n; i++)
    memcpy(self->out.data + i * e->dim, w + (int64_t)x->data[i] * e->dim, (size_t)e->dim * sizeof(float));
  return SYNO_NN_OK;
}

static int emb_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  embed_t *e = (embed_t *)self;
  const int64_t n = syno_nn_tensor_numel(&self->in);
  float *dw = self->params[0].grad.data;
  for (int64_t i = 0; i < n; i++) {
    float *row = dw + (int64_t)self->in.data[i] * e->dim;
    const float *g = dy->data + i * e->dim;
    for (int64_t j = 0; j < e->dim; j++) row[j] += g[j];
  }
  return SYNO_NN_OK;
}

static const syno_layer_ops_t emb_ops = {
    "embedding", emb_forward, emb_backward, emb_out_shape, NULL, NULL,
};

syno_layer_t *syno_nn_embedding_create(int64_t vocab, int64_t dim, syno_rng_t *rng) {
  if (vocab <= 0 || vocab > (INT64_C(1) << 24) || dim <= 0 || !rng) return NULL;
  embed_t *e = syno_nn_layer_new(sizeof *e, &emb_ops, 1);
  if (!e) return NULL;
  e->vocab = vocab;
  e->dim = dim;
  int64_t wd[2] = {vocab, dim};
  if (syno_nn_param_init(&e->base.params[0], "weight", 2, wd)) {
    syno_nn_layer_free(&e->base);
    return NULL;
  }
  syno_nn_fill_normal(rng, &e->base.params[0].value, 0.0, 1.0);
  return &e->base;
}
