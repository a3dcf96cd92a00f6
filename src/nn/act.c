/* Element-wise activations: ReLU, GELU, SiLU, sigmoid. ReLU's and sigmoid's backward read their
 * output (y > 0 iff x > 0; sigmoid' = y (1 - y)), GELU's and SiLU's the input, which the layer
 * already keeps as a view. */
#include <math.h>
#include <string.h>

#include "nn_internal.h"

static int same_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  (void)self;
  memcpy(out, dims, (size_t)ndim * sizeof *out);
  return ndim;
}

static int relu_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  int rc = syno_nn_tensor_resize_like(&self->out, x);
  if (rc) return rc;
  syno_nn_begin_forward(self, x, train);
  const int64_t n = syno_nn_tensor_numel(x);
  const float *p = x->data;
  float *q = self->out.data;
  for (int64_t i = 0; i < n; i++) q[i] = p[i] > 0.0f ? p[i] : 0.0f;
  return SYNO_NN_OK;
}

static int relu_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  int skip, rc = syno_nn_prepare_grad_in(self, &skip);
  if (rc || skip) return rc;
  const int64_t n = syno_nn_tensor_numel(dy);
  const float *y = self->out.data, *g = dy->data;
  float *q = self->grad_in.data;
  for (int64_t i = 0; i < n; i++) q[i] = y[i] > 0.0f ? g[i] : 0.0f;
  return SYNO_NN_OK;
}

static const syno_layer_ops_t relu_ops = {
    "relu", relu_forward, relu_backward, same_shape, NULL,
};

syno_layer_t *syno_nn_relu_create(void) { return syno_nn_layer_new(sizeof(syno_layer_t), &relu_ops, 0); }

static inline float sigm(float v) { return 1.0f / (1.0f + nn_expf(-v)); }

/* GELU in its tanh form, 0.5 v (1 + tanh(u)), computed as v sigmoid(2u) (the same function:
 * 1 + tanh(u) = 2 sigmoid(2u)), so that it vectorises through nn_expf. */
#define GELU_C 0.7978845608028654 /* sqrt(2/pi) */
#define GELU_A 0.044715

static int gelu_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  int rc = syno_nn_tensor_resize_like(&self->out, x);
  if (rc) return rc;
  syno_nn_begin_forward(self, x, train);
  const int64_t n = syno_nn_tensor_numel(x);
  const float *p = x->data;
  float *q = self->out.data;
  for (int64_t i = 0; i < n; i++) {
    float v = p[i];
    q[i] = v * sigm(2.0f * (float)GELU_C * (v + (float)GELU_A * v * v * v));
  }
  return SYNO_NN_OK;
}

static int gelu_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  int skip, rc = syno_nn_prepare_grad_in(self, &skip);
  if (rc || skip) return rc;
  const int64_t n = syno_nn_tensor_numel(dy);
  const float *p = self->in.data, *g = dy->data;
  float *q = self->grad_in.data;
  for (int64_t i = 0; i < n; i++) {
    float v = p[i];
    float sg = sigm(2.0f * (float)GELU_C * (v + (float)GELU_A * v * v * v));
    float du = (float)GELU_C * (1.0f + 3.0f * (float)GELU_A * v * v);
    q[i] = g[i] * (sg + 2.0f * v * sg * (1.0f - sg) * du); /* d/dv of v sigmoid(2u) */
  }
  return SYNO_NN_OK;
}

static const syno_layer_ops_t gelu_ops = {
    "gelu", gelu_forward, gelu_backward, same_shape, NULL,
};

syno_layer_t *syno_nn_gelu_create(void) { return syno_nn_layer_new(sizeof(syno_layer_t), &gelu_ops, 0); }

/* SiLU and sigmoid read their output back where it is enough: sigmoid's derivative is
 * y (1 - y); SiLU's needs sigmoid(x) too, recomputed from the input rather than stored. */
static int silu_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  int rc = syno_nn_tensor_resize_like(&self->out, x);
  if (rc) return rc;
  syno_nn_begin_forward(self, x, train);
  const int64_t n = syno_nn_tensor_numel(x);
  const float *p = x->data;
  float *q = self->out.data;
  for (int64_t i = 0; i < n; i++) q[i] = p[i] * sigm(p[i]);
  return SYNO_NN_OK;
}

static int silu_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  int skip, rc = syno_nn_prepare_grad_in(self, &skip);
  if (rc || skip) return rc;
  const int64_t n = syno_nn_tensor_numel(dy);
  const float *p = self->in.data, *g = dy->data;
  float *q = self->grad_in.data;
  for (int64_t i = 0; i < n; i++) {
    float s = sigm(p[i]);
    q[i] = g[i] * s * (1.0f + p[i] * (1.0f - s));
  }
  return SYNO_NN_OK;
}

static const syno_layer_ops_t silu_ops = {
    "silu", silu_forward, silu_backward, same_shape, NULL,
};

syno_layer_t *syno_nn_silu_create(void) { return syno_nn_layer_new(sizeof(syno_layer_t), &silu_ops, 0); }

static int sigmoid_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  int rc = syno_nn_tensor_resize_like(&self->out, x);
  if (rc) return rc;
  syno_nn_begin_forward(self, x, train);
  const int64_t n = syno_nn_tensor_numel(x);
  for (int64_t i = 0; i < n; i++) self->out.data[i] = sigm(x->data[i]);
  return SYNO_NN_OK;
}

static int sigmoid_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  int skip, rc = syno_nn_prepare_grad_in(self, &skip);
  if (rc || skip) return rc;
  const int64_t n = syno_nn_tensor_numel(dy);
  const float *y = self->out.data, *g = dy->data;
  for (int64_t i = 0; i < n; i++) self->grad_in.data[i] = g[i] * y[i] * (1.0f - y[i]);
  return SYNO_NN_OK;
}

static const syno_layer_ops_t sigmoid_ops = {
    "sigmoid", sigmoid_forward, sigmoid_backward, same_shape, NULL,
};

syno_layer_t *syno_nn_sigmoid_create(void) { return syno_nn_layer_new(sizeof(syno_layer_t), &sigmoid_ops, 0); }
