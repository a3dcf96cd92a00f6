/*
 * Tensors and parameters. Owned storage is 64-byte aligned (cache line and AVX-512 width)
 * and remembers its capacity, so layers whose batch size shrinks on an epoch's last batch
 * reuse their buffers instead of reallocating.
 */
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

const char *syno_nn_status_str(int status) {
  switch (status) {
    case SYNO_NN_OK: return "ok";
    case SYNO_NN_ENOMEM: return "out of memory";
    case SYNO_NN_ESHAPE: return "tensor shape does not fit the layer";
    case SYNO_NN_ERANGE: return "value out of range";
    case SYNO_NN_EINVAL: return "invalid argument";
    default: return "unknown status";
  }
}

int64_t syno_nn_tensor_numel(const syno_tensor_t *t) { return nn_prod(t->dims, 0, t->ndim); }

/* Element count of a shape, or -1 if the shape is malformed or absurdly large. */
static int64_t shape_numel(int ndim, const int64_t *dims) {
  if (ndim < 0 || ndim > SYNO_TENSOR_MAX_DIMS) return -1;
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (dims[i] < 0) return -1;
    if (dims[i] != 0 && n > (INT64_C(1) << 40) / dims[i]) return -1;
    n *= dims[i];
  }
  return n;
}

static float *alloc_floats(int64_t n) {
  size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(float);
  bytes = (bytes + 63) & ~(size_t)63; /* aligned_alloc wants a multiple of the alignment */
  return aligned_alloc(64, bytes);
}

static void set_shape(syno_tensor_t *t, int ndim, const int64_t *dims) {
  t->ndim = ndim;
  for (int i = 0; i < SYNO_TENSOR_MAX_DIMS; i++) t->dims[i] = i < ndim ? dims[i] : 0;
}

int syno_nn_tensor_alloc(syno_tensor_t *t, int ndim, const int64_t *dims) {
  int64_t n = shape_numel(ndim, dims);
  if (n < 0) return SYNO_NN_ESHAPE;
  float *p = alloc_floats(n);
  if (!p) return SYNO_NN_ENOMEM;
  memset(p, 0, (size_t)n * sizeof(float));
  t->data = p;
  t->owned = 1;
  t->capacity = n;
  set_shape(t, ndim, dims);
  return SYNO_NN_OK;
}

int syno_nn_tensor_resize(syno_tensor_t *t, int ndim, const int64_t *dims) {
  int64_t n = shape_numel(ndim, dims);
  if (n < 0) return SYNO_NN_ESHAPE;
  if (t->owned && t->data && t->capacity >= n) {
    set_shape(t, ndim, dims);
    return SYNO_NN_OK;
  }
  float *p = alloc_floats(n);
  if (!p) return SYNO_NN_ENOMEM;
  if (t->owned) free(t->data);
  t->data = p;
  t->owned = 1;
  t->capacity = n;
  set_shape(t, ndim, dims);
  return SYNO_NN_OK;
}

int syno_nn_tensor_resize_like(syno_tensor_t *t, const syno_tensor_t *like) {
  return syno_nn_tensor_resize(t, like->ndim, like->dims);
}

syno_tensor_t syno_nn_tensor_view(float *data, int ndim, const int64_t *dims) {
  syno_tensor_t t = SYNO_TENSOR_EMPTY;
  if (ndim < 0 || ndim > SYNO_TENSOR_MAX_DIMS) return t;
  t.data = data;
  set_shape(&t, ndim, dims);
  return t;
}

void syno_nn_tensor_free(syno_tensor_t *t) {
  if (t->owned) free(t->data);
  memset(t, 0, sizeof *t);
}

int syno_nn_tensor_same_shape(const syno_tensor_t *a, const syno_tensor_t *b) {
  if (a->ndim != b->ndim) return 0;
  for (int i = 0; i < a->ndim; i++)
    if (a->dims[i] != b->dims[i]) return 0;
  return 1;
}

void syno_nn_tensor_zero(syno_tensor_t *t) {
  if (t->data) memset(t->data, 0, (size_t)syno_nn_tensor_numel(t) * sizeof(float));
}

void syno_nn_tensor_fill(syno_tensor_t *t, float v) {
  int64_t n = syno_nn_tensor_numel(t);
  for (int64_t i = 0; i < n && t->data; i++) t->data[i] = v;
}

int syno_nn_tensor_copy(syno_tensor_t *dst, const syno_tensor_t *src) {
  if (dst == src) return SYNO_NN_OK;
  int rc = syno_nn_tensor_resize_like(dst, src);
  if (rc) return rc;
  if (src->data) memcpy(dst->data, src->data, (size_t)syno_nn_tensor_numel(src) * sizeof(float));
  return SYNO_NN_OK;
}

int syno_nn_tensor_reshape(const syno_tensor_t *t, int ndim, const int64_t *dims, syno_tensor_t *view) {
  int64_t n = shape_numel(ndim, dims);
  if (n < 0 || n != syno_nn_tensor_numel(t)) return SYNO_NN_ESHAPE;
  *view = syno_nn_tensor_view(t->data, ndim, dims);
  return SYNO_NN_OK;
}

int syno_nn_param_init(syno_param_t *p, const char *name, int ndim, const int64_t *dims) {
  memset(p, 0, sizeof *p);
  p->name = name;
  int rc = syno_nn_tensor_alloc(&p->value, ndim, dims);
  if (rc == SYNO_NN_OK) rc = syno_nn_tensor_alloc(&p->grad, ndim, dims);
  if (rc != SYNO_NN_OK) syno_nn_param_free(p);
  return rc;
}

void syno_nn_param_free(syno_param_t *p) {
  syno_nn_tensor_free(&p->value);
  syno_nn_tensor_free(&p->grad);
}
