/*
 * The layer interface and the layers that only route tensors: sequential, residual, dense
 * (channel concatenation), gate (channel scaling, squeeze-and-excitation), flatten.
 * Generic checks (a forward before a backward, dy shaped like out) live here once, so
 * concrete layers can trust their arguments.
 */
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"

void *syno_nn_layer_new(size_t size, const syno_layer_ops_t *ops, int nparams) {
  syno_layer_t *l = calloc(1, size);
  if (!l) return NULL;
  l->ops = ops;
  if (nparams > 0) {
    l->params = calloc((size_t)nparams, sizeof *l->params);
    if (!l->params) {
      free(l);
      return NULL;
    }
    l->nparams = nparams;
  }
  return l;
}

void syno_nn_begin_forward(syno_layer_t *l, const syno_tensor_t *x, int train) {
  l->in = syno_nn_tensor_view(x->data, x->ndim, x->dims);
  l->train = train;
  l->has_forward = 1;
}

int syno_nn_prepare_grad_in(syno_layer_t *l, int *skip) {
  *skip = l->skip_input_grad;
  if (*skip) return SYNO_NN_OK;
  return syno_nn_tensor_resize_like(&l->grad_in, &l->in);
}

/* Frees the storage of l's grad_in unless keep points into it, and forgets the views of it
 * on the way down. */
static void release_grad(syno_layer_t *l, const float *keep) {
  syno_tensor_t *t = &l->grad_in;
  if (!t->owned) {
    for (int i = 0; t->data && i < l->nchildren; i++)
      if (l->children[i] && l->children[i]->grad_in.data == t->data) {
        release_grad(l->children[i], keep);
        break;
      }
  } else if (keep && (uintptr_t)keep >= (uintptr_t)t->data &&
             (uintptr_t)keep < (uintptr_t)(t->data + t->capacity)) {
    return; /* compared as integers: keep may point into another object */
  }
  syno_nn_tensor_free(t);
}

void syno_nn_release_grad_in(syno_layer_t *l, const syno_layer_t *consumer) {
  release_grad(l, consumer ? consumer->grad_in.data : NULL);
}

int syno_nn_forward(syno_layer_t *l, const syno_tensor_t *x, int train) {
  if (!l || !x || !x->data) return SYNO_NN_EINVAL;
  return l->ops->forward(l, x, train);
}

int syno_nn_backward(syno_layer_t *l, const syno_tensor_t *dy) {
  if (!l || !dy || !dy->data || !l->has_forward) return SYNO_NN_EINVAL;
  if (!syno_nn_tensor_same_shape(dy, &l->out)) return SYNO_NN_ESHAPE;
  return l->ops->backward(l, dy);
}

int syno_nn_out_shape(const syno_layer_t *l, int ndim, const int64_t *dims, int64_t *out) {
  if (!l || ndim < 0 || ndim > SYNO_TENSOR_MAX_DIMS) return SYNO_NN_EINVAL;
  return l->ops->out_shape(l, ndim, dims, out);
}

void syno_nn_layer_free(syno_layer_t *l) {
  if (!l) return;
  if (l->ops->destroy) l->ops->destroy(l);
  for (int i = 0; i < l->nchildren; i++) syno_nn_layer_free(l->children[i]);
  free(l->children);
  for (int i = 0; i < l->nparams; i++) syno_nn_param_free(&l->params[i]);
  free(l->params);
  syno_nn_tensor_free(&l->out);
  syno_nn_tensor_free(&l->grad_in);
  free(l);
}

const char *syno_nn_layer_kind(const syno_layer_t *l) { return l ? l->ops->kind : "(null)"; }

static int collect(syno_layer_t *l, syno_param_t **out, int cap, int n) {
  for (int i = 0; i < l->nparams; i++, n++)
    if (n < cap) out[n] = &l->params[i];
  for (int i = 0; i < l->nchildren; i++) n = collect(l->children[i], out, cap, n);
  return n;
}

int syno_nn_params(syno_layer_t *l, syno_param_t **out, int cap) { return l ? collect(l, out, out ? cap : 0, 0) : 0; }

static int64_t count_scalars(syno_layer_t *l) {
  int64_t n = 0;
  for (int i = 0; i < l->nparams; i++) n += syno_nn_tensor_numel(&l->params[i].value);
  for (int i = 0; i < l->nchildren; i++) n += count_scalars(l->children[i]);
  return n;
}

int64_t syno_nn_param_count(syno_layer_t *l) { return l ? count_scalars(l) : 0; }

static void set_frozen(syno_layer_t *l, uint64_t id) {
  l->frozen = id;
  for (int i = 0; i < l->nchildren; i++) set_frozen(l->children[i], id);
}

void syno_nn_freeze(syno_layer_t *l, int on) {
  static _Atomic uint64_t last_id;
  if (l) set_frozen(l, on ? ++last_id : 0);
}

void syno_nn_zero_grad(syno_layer_t *l) {
  if (!l) return;
  for (int i = 0; i < l->nparams; i++) syno_nn_tensor_zero(&l->params[i].grad);
  for (int i = 0; i < l->nchildren; i++) syno_nn_zero_grad(l->children[i]);
}

/* ---------------------------------------------------------------- sequential */

static int seq_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  syno_nn_begin_forward(self, x, train);
  if (self->frozen && !train) return nn_seq_forward_deployed(self, x);
  const syno_tensor_t *cur = x;
  for (int i = 0; i < self->nchildren; i++) {
    int rc = syno_nn_forward(self->children[i], cur, train);
    if (rc) return rc;
    cur = &self->children[i]->out;
  }
  /* A view, refreshed every time, because a child may reallocate its output. */
  self->out = syno_nn_tensor_view(cur->data, cur->ndim, cur->dims);
  return SYNO_NN_OK;
}

static int seq_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  const syno_tensor_t *g = dy;
  for (int i = self->nchildren - 1; i >= 0; i--) {
    syno_layer_t *c = self->children[i];
    c->skip_input_grad = i == 0 ? self->skip_input_grad : 0;
    int rc = syno_nn_backward(c, g);
    if (rc) return rc;
    if (i + 1 < self->nchildren) syno_nn_release_grad_in(self->children[i + 1], c);
    g = &c->grad_in;
  }
  if (!self->skip_input_grad) self->grad_in = syno_nn_tensor_view(g->data, g->ndim, g->dims);
  return SYNO_NN_OK;
}

static int seq_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  int64_t cur[SYNO_TENSOR_MAX_DIMS], next[SYNO_TENSOR_MAX_DIMS];
  memcpy(cur, dims, (size_t)ndim * sizeof *cur);
  for (int i = 0; i < self->nchildren; i++) {
    ndim = syno_nn_out_shape(self->children[i], ndim, cur, next);
    if (ndim < 0) return ndim;
    memcpy(cur, next, (size_t)ndim * sizeof *cur);
  }
  memcpy(out, cur, (size_t)ndim * sizeof *cur);
  return ndim;
}

static void view_destroy(syno_layer_t *self) {
  /* out/grad_in are views into children; forget them so the generic free leaves them. */
  self->out = (syno_tensor_t)SYNO_TENSOR_EMPTY;
  self->grad_in = (syno_tensor_t)SYNO_TENSOR_EMPTY;
}

static const syno_layer_ops_t seq_ops = {
    "sequential", seq_forward, seq_backward, seq_out_shape, view_destroy, NULL,
};

syno_layer_t *syno_nn_sequential_create(int n, syno_layer_t **layers) {
  syno_layer_t *l = NULL;
  int ok = n > 0 && layers;
  for (int i = 0; ok && i < n; i++) ok = layers[i] != NULL;
  if (ok) l = syno_nn_layer_new(sizeof *l, &seq_ops, 0);
  if (l) {
    l->children = malloc((size_t)n * sizeof *l->children);
    if (l->children) {
      memcpy(l->children, layers, (size_t)n * sizeof *l->children);
      l->nchildren = n;
      return l;
    }
    free(l);
  }
  for (int i = 0; layers && i < n; i++) syno_nn_layer_free(layers[i]);
  return NULL;
}

/* ---------------------------------------------------------------- residual */

static void add_into(float *y, const float *a, const float *b, int64_t n, int relu) {
  if (relu)
    for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i] > 0.0f ? a[i] + b[i] : 0.0f;
  else
    for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

/* body(x) + shortcut(x), clamped at 0 when relu (deployed inference fuses the ReLU after the
 * sum), then the channel map when scale (see res_forward_affine). */
static int res_run(syno_layer_t *self, const syno_tensor_t *x, int train, const float *scale, const float *shift,
                   int relu) {
  syno_nn_begin_forward(self, x, train);
  syno_layer_t *body = self->children[0];
  syno_layer_t *sc = self->nchildren > 1 ? self->children[1] : NULL;
  int rc = syno_nn_forward(body, x, train);
  if (!rc && sc) rc = syno_nn_forward(sc, x, train);
  if (rc) return rc;
  const syno_tensor_t *other = sc ? &sc->out : x;
  if (!syno_nn_tensor_same_shape(&body->out, other)) return SYNO_NN_ESHAPE;
  rc = syno_nn_tensor_resize_like(&self->out, other);
  if (rc) return rc;
  add_into(self->out.data, body->out.data, other->data, syno_nn_tensor_numel(other), relu && !scale);
  if (scale) syno_nn_channel_affine(&self->out, scale, shift, relu);
  return SYNO_NN_OK;
}

static int res_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  return res_run(self, x, train, NULL, NULL, 0);
}

static int res_forward_affine(syno_layer_t *self, const syno_tensor_t *x, const float *scale, const float *shift,
                              int relu) {
  return res_run(self, x, 0, scale, shift, relu);
}

static int res_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  syno_layer_t *body = self->children[0];
  syno_layer_t *sc = self->nchildren > 1 ? self->children[1] : NULL;
  body->skip_input_grad = self->skip_input_grad;
  int rc = syno_nn_backward(body, dy);
  if (!rc && sc) {
    sc->skip_input_grad = self->skip_input_grad;
    rc = syno_nn_backward(sc, dy);
  }
  if (rc || self->skip_input_grad) return rc;
  const syno_tensor_t *other = sc ? &sc->grad_in : dy;
  if (!syno_nn_tensor_same_shape(&body->grad_in, other)) return SYNO_NN_ESHAPE;
  rc = syno_nn_tensor_resize_like(&self->grad_in, &self->in);
  if (rc) return rc;
  add_into(self->grad_in.data, body->grad_in.data, other->data, syno_nn_tensor_numel(other), 0);
  syno_nn_release_grad_in(body, self);
  if (sc) syno_nn_release_grad_in(sc, self);
  return SYNO_NN_OK;
}

static int res_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  int nd = syno_nn_out_shape(self->children[0], ndim, dims, out);
  if (nd < 0) return nd;
  int64_t other[SYNO_TENSOR_MAX_DIMS];
  int no = ndim;
  if (self->nchildren > 1)
    no = syno_nn_out_shape(self->children[1], ndim, dims, other);
  else
    memcpy(other, dims, (size_t)ndim * sizeof *other);
  if (no != nd) return no < 0 ? no : SYNO_NN_ESHAPE;
  for (int i = 0; i < nd; i++)
    if (out[i] != other[i]) return SYNO_NN_ESHAPE;
  return nd;
}

static const syno_layer_ops_t res_ops = {
    "residual", res_forward, res_backward, res_out_shape, NULL, res_forward_affine,
};

syno_layer_t *syno_nn_residual_create(syno_layer_t *body, syno_layer_t *shortcut) {
  syno_layer_t *l = body ? syno_nn_layer_new(sizeof *l, &res_ops, 0) : NULL;
  if (l) {
    l->children = malloc(2 * sizeof *l->children);
    if (l->children) {
      l->children[0] = body;
      l->children[1] = shortcut;
      l->nchildren = shortcut ? 2 : 1;
      return l;
    }
    free(l);
  }
  syno_nn_layer_free(body);
  syno_nn_layer_free(shortcut);
  return NULL;
}

/* ---------------------------------------------------------------- flatten */

static int flat_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  (void)self;
  if (ndim < 1) return SYNO_NN_ESHAPE;
  out[0] = dims[0];
  out[1] = nn_prod(dims, 1, ndim);
  return 2;
}

static int flat_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  int64_t d[2];
  if (flat_out_shape(self, x->ndim, x->dims, d) < 0) return SYNO_NN_ESHAPE;
  syno_nn_begin_forward(self, x, train);
  self->out = syno_nn_tensor_view(x->data, 2, d);
  return SYNO_NN_OK;
}

static int flat_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  if (!self->skip_input_grad) self->grad_in = syno_nn_tensor_view(dy->data, self->in.ndim, self->in.dims);
  return SYNO_NN_OK;
}

static const syno_layer_ops_t flat_ops = {
    "flatten", flat_forward, flat_backward, flat_out_shape, view_destroy, NULL,
};

syno_layer_t *syno_nn_flatten_create(void) { return syno_nn_layer_new(sizeof(syno_layer_t), &flat_ops, 0); }

/* ---------------------------------------------------------------- add */

int syno_nn_add(const syno_tensor_t *a, const syno_tensor_t *b, syno_tensor_t *y) {
  if (!syno_nn_tensor_same_shape(a, b)) return SYNO_NN_ESHAPE;
  if (y == a || y == b) return SYNO_NN_EINVAL;
  int rc = syno_nn_tensor_resize_like(y, a);
  if (rc) return rc;
  add_into(y->data, a->data, b->data, syno_nn_tensor_numel(a), 0);
  return SYNO_NN_OK;
}

/* ---------------------------------------------------------------- dense (channel concatenation) */

/* y = concat(x, body(x)) along dim 1, a DenseNet layer's whole data flow in one container, so
 * the network stays a tree. The body's gradient is a slice of dy that is not contiguous per
 * image, hence the scratch copy; grad_in is dy's x slice plus the body's input gradient. */
typedef struct {
  syno_layer_t base;
  syno_tensor_t dbody; /* dy's body slice, contiguous */
} dense_t;

/* dims[1] of x and of the body's output, and the per-image sizes, for one forward/backward. */
static int dense_split(const syno_tensor_t *x, const syno_tensor_t *b, int64_t *inner, int64_t *cx, int64_t *cb) {
  if (x->ndim < 2 || b->ndim != x->ndim || b->dims[0] != x->dims[0]) return SYNO_NN_ESHAPE;
  for (int i = 2; i < x->ndim; i++)
    if (b->dims[i] != x->dims[i]) return SYNO_NN_ESHAPE;
  *inner = nn_prod(x->dims, 2, x->ndim);
  *cx = x->dims[1];
  *cb = b->dims[1];
  return SYNO_NN_OK;
}

static int dense_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  syno_nn_begin_forward(self, x, train);
  syno_layer_t *body = self->children[0];
  int rc = syno_nn_forward(body, x, train);
  if (rc) return rc;
  int64_t inner, cx, cb;
  if ((rc = dense_split(x, &body->out, &inner, &cx, &cb))) return rc;
  int64_t d[SYNO_TENSOR_MAX_DIMS];
  memcpy(d, x->dims, (size_t)x->ndim * sizeof *d);
  d[1] = cx + cb;
  if ((rc = syno_nn_tensor_resize(&self->out, x->ndim, d))) return rc;
  for (int64_t n = 0; n < x->dims[0]; n++) {
    float *y = self->out.data + n * (cx + cb) * inner;
    memcpy(y, x->data + n * cx * inner, sizeof(float) * (size_t)(cx * inner));
    memcpy(y + cx * inner, body->out.data + n * cb * inner, sizeof(float) * (size_t)(cb * inner));
  }
  return SYNO_NN_OK;
}

static int dense_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  dense_t *s = (dense_t *)self;
  syno_layer_t *body = self->children[0];
  int64_t inner, cx, cb;
  int rc = dense_split(&self->in, &body->out, &inner, &cx, &cb);
  if (rc || (rc = syno_nn_tensor_resize_like(&s->dbody, &body->out))) return rc;
  for (int64_t n = 0; n < self->in.dims[0]; n++)
    memcpy(s->dbody.data + n * cb * inner, dy->data + (n * (cx + cb) + cx) * inner,
           sizeof(float) * (size_t)(cb * inner));
  body->skip_input_grad = self->skip_input_grad;
  if ((rc = syno_nn_backward(body, &s->dbody))) return rc;
  int skip;
  if ((rc = syno_nn_prepare_grad_in(self, &skip)) || skip) return rc;
  for (int64_t n = 0; n < self->in.dims[0]; n++)
    add_into(self->grad_in.data + n * cx * inner, dy->data + n * (cx + cb) * inner, body->grad_in.data + n * cx * inner,
             cx * inner, 0);
  syno_nn_release_grad_in(body, self);
  return SYNO_NN_OK;
}

static int dense_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  int nd = syno_nn_out_shape(self->children[0], ndim, dims, out);
  if (nd < 0) return nd;
  if (nd != ndim || ndim < 2 || out[0] != dims[0]) return SYNO_NN_ESHAPE;
  for (int i = 2; i < ndim; i++)
    if (out[i] != dims[i]) return SYNO_NN_ESHAPE;
  out[1] += dims[1];
  return nd;
}

static void dense_destroy(syno_layer_t *self) { syno_nn_tensor_free(&((dense_t *)self)->dbody); }

static const syno_layer_ops_t dense_ops = {
    "dense", dense_forward, dense_backward, dense_out_shape, dense_destroy, NULL,
};

/* A layer of `size` bytes around one child, body (owned from here on, freed on failure). */
static syno_layer_t *wrap_create(size_t size, const syno_layer_ops_t *ops, syno_layer_t *body) {
  syno_layer_t *l = body ? syno_nn_layer_new(size, ops, 0) : NULL;
  if (l) {
    l->children = malloc(sizeof *l->children);
    if (l->children) {
      l->children[0] = body;
      l->nchildren = 1;
      return l;
    }
    free(l);
  }
  syno_nn_layer_free(body);
  return NULL;
}

syno_layer_t *syno_nn_dense_create(syno_layer_t *body) { return wrap_create(sizeof(dense_t), &dense_ops, body); }

/* ---------------------------------------------------------------- gate (squeeze-and-excitation) */

/* y[n, c, ...] = x[n, c, ...] * body(x)[n, c]: the body squeezes x to one gate per channel
 * (an SE branch: pooling, two FCs, a sigmoid). Both paths of x meet in grad_in:
 * dL/dx = dy * g + body's input gradient for dL/dg[n, c] = sum over the rest of dy * x. */
typedef struct {
  syno_layer_t base;
  syno_tensor_t dgate; /* dL/d body(x), shaped like the body's output */
} gate_t;

static int gate_check(const syno_tensor_t *x, const syno_tensor_t *g) {
  if (x->ndim < 2 || syno_nn_tensor_numel(g) != x->dims[0] * x->dims[1] || g->dims[0] != x->dims[0])
    return SYNO_NN_ESHAPE;
  return SYNO_NN_OK;
}

static int gate_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  syno_nn_begin_forward(self, x, train);
  syno_layer_t *body = self->children[0];
  int rc = syno_nn_forward(body, x, train);
  if (rc || (rc = gate_check(x, &body->out)) || (rc = syno_nn_tensor_resize_like(&self->out, x))) return rc;
  const int64_t rows = x->dims[0] * x->dims[1], inner = nn_prod(x->dims, 2, x->ndim);
  for (int64_t r = 0; r < rows; r++) {
    const float g = body->out.data[r], *p = x->data + r * inner;
    float *q = self->out.data + r * inner;
    for (int64_t i = 0; i < inner; i++) q[i] = p[i] * g;
  }
  return SYNO_NN_OK;
}

static int gate_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  gate_t *s = (gate_t *)self;
  syno_layer_t *body = self->children[0];
  const syno_tensor_t *x = &self->in;
  int rc = gate_check(x, &body->out);
  if (rc || (rc = syno_nn_tensor_resize_like(&s->dgate, &body->out))) return rc;
  const int64_t rows = x->dims[0] * x->dims[1], inner = nn_prod(x->dims, 2, x->ndim);
  for (int64_t r = 0; r < rows; r++) {
    double acc = 0;
    for (int64_t i = 0; i < inner; i++) acc += (double)dy->data[r * inner + i] * x->data[r * inner + i];
    s->dgate.data[r] = (float)acc;
  }
  body->skip_input_grad = self->skip_input_grad;
  if ((rc = syno_nn_backward(body, &s->dgate))) return rc;
  int skip;
  if ((rc = syno_nn_prepare_grad_in(self, &skip)) || skip) return rc;
  for (int64_t r = 0; r < rows; r++) {
    const float g = body->out.data[r];
    for (int64_t i = 0; i < inner; i++)
      self->grad_in.data[r * inner + i] = dy->data[r * inner + i] * g + body->grad_in.data[r * inner + i];
  }
  return SYNO_NN_OK;
}

static int gate_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  int64_t g[SYNO_TENSOR_MAX_DIMS];
  int nd = syno_nn_out_shape(self->children[0], ndim, dims, g);
  if (nd < 0) return nd;
  if (ndim < 2 || nn_prod(g, 0, nd) != dims[0] * dims[1] || g[0] != dims[0]) return SYNO_NN_ESHAPE;
  memcpy(out, dims, (size_t)ndim * sizeof *out);
  return ndim;
}

static void gate_destroy(syno_layer_t *self) { syno_nn_tensor_free(&((gate_t *)self)->dgate); }

static const syno_layer_ops_t gate_ops = {
    "gate", gate_forward, gate_backward, gate_out_shape, gate_destroy, NULL,
};

syno_layer_t *syno_nn_gate_create(syno_layer_t *body) { return wrap_create(sizeof(gate_t), &gate_ops, body); }
