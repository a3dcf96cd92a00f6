/* Operator slots: a layer running the standard operator (3x3 conv2d or bias-free linear) or
 * a synthesized operator through the executor API (syno/exec.h), or for inference, when told
 * (syno_slot_set_kernels), through a Halide kernel (syno/kernels.h). See syno/backbone.h for the
 * contract. Conv and linear slots share everything but the binding and the shapes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "syno/backbone.h"
#include "syno/clock.h"
#include "syno/exec.h"
#include "syno/kernels.h"
#include "syno/nn.h"

#define SLOT_CACHE 2

/* One batch size's compiled forms: the executor always (training runs on it), and, when the
 * slot's inference uses kernels other than the executor's, the Halide kernel and which of the
 * two runs inference (use_k, decided once: by the choice, or for "best" by timing both). */
typedef struct {
  int64_t n;
  syno_exec_t *e;
  syno_kernel_t *k;
  int decided, use_k;
} slot_exec_t;

typedef struct {
  syno_layer_t base;
  syno_slot_info_t info;
  /* synthesized operator (own copy: vars, graph, operator) */
  syno_slotop_t *op;
  int nweights;
  slot_exec_t cache[SLOT_CACHE];
  int next_evict;
  float *wgrad_scratch;
  int64_t wgrad_cap;
  int kernels;      /* syno_kernels_t of inference */
  const char *used; /* the kernel of the last inference forward: "exec" or "halide" */
  char path[96];    /* what ran it: syno_exec_path (copied: the executor may be evicted), or "Halide kernel" */
  syno_error_t err;
} slot_t;

int syno_slotop_parse_preset(const char *preset, const char *text, syno_slotop_t **out, syno_error_t *err) {
  *out = NULL;
  if (!preset) preset = "conv2d";
  if (!text || !*text) return syno_error_set(err, "empty operator text");
  syno_slotop_t *s = calloc(1, sizeof *s);
  if (!s) return syno_error_set(err, "out of memory");
  if (syno_signature_preset(preset, "", &s->sig, err)) {
    free(s);
    return -1;
  }
  /* Symbolic: without the preset's default binding, whose sizes (C_in=16, ...) need not be any
   * slot's. Each slot's executor checks the sizes under that slot's binding (slot_compile). */
  s->sig.vars.nbind = 0;
  s->g = syno_graph_new(&s->sig.vars);
  if (!s->g) {
    free(s);
    return syno_error_set(err, "out of memory");
  }
  if (syno_operator_parse(s->g, text, &s->sig.input, &s->sig.output, &s->op, err)) {
    syno_slotop_free(s);
    return syno_error_prefix(err, "operator does not parse as a %s slot operator", preset);
  }
  *out = s;
  return 0;
}

int syno_slotop_parse(const char *text, syno_slotop_t **out, syno_error_t *err) {
  return syno_slotop_parse_preset("conv2d", text, out, err);
}

void syno_slotop_free(syno_slotop_t *op) {
  if (!op) return;
  syno_graph_free(op->g);
  free(op);
}

/* A copy of a parsed operator (re-parsed from its printed form into a fresh graph). */
static int slotop_copy(const syno_slotop_t *src, syno_slotop_t **out, syno_error_t *err) {
  char buf[4096];
  if (syno_operator_print(&src->op, buf, sizeof buf) < 0) return syno_error_set(err, "operator text too long");
  return syno_slotop_parse_preset(src->sig.name, buf, out, err);
}

/* Appends the slot's binding with batch n to a copy of the operator's vars. */
static int slot_bind(const slot_t *s, int64_t n, syno_vars_t *v, syno_error_t *err) {
  *v = *syno_graph_vars(s->op->g);
  v->nbind = 0;
  char assign[256];
  if (s->info.kind == SYNO_SLOT_LINEAR) {
    if (syno_signature_linear_binding(&s->op->sig, n, s->info.s, s->info.c_in, s->info.c_out, assign, sizeof assign,
                                      err))
      return -1;
  } else if (syno_signature_conv_binding(&s->op->sig, n, s->info.c_in, s->info.c_out, s->info.h, s->info.w, assign,
                                         sizeof assign, err))
    return -1;
  return syno_vars_bind(v, assign, err);
}

/* Elements of one sample of the slot's input and output. */
static int64_t slot_in_numel(const slot_t *s) {
  return s->info.kind == SYNO_SLOT_LINEAR ? s->info.s * s->info.c_in : s->info.c_in * s->info.h * s->info.w;
}

static int64_t slot_out_numel(const slot_t *s) {
  return s->info.kind == SYNO_SLOT_LINEAR ? s->info.s * s->info.c_out : s->info.c_out * s->info.h * s->info.w;
}

static int slot_compile(slot_t *s, int64_t n, syno_exec_t **out, syno_error_t *err) {
  for (int i = 0; i < SLOT_CACHE; i++)
    if (s->cache[i].e && s->cache[i].n == n) {
      *out = s->cache[i].e;
      return 0;
    }
  syno_vars_t v;
  if (slot_bind(s, n, &v, err)) return -1;
  syno_exec_t *e = NULL;
  if (syno_exec_new(&s->op->op, &v, 0, &e, err)) return -1;
  /* the output must be exactly [n, C_out, H, W] and the input [n, C_in, H, W] (linear:
   * [n, S, C_out] and [n, S, C_in]) */
  if (syno_exec_numel(e, -1) != n * slot_out_numel(s) || syno_exec_numel(e, 0) != n * slot_in_numel(s)) {
    syno_exec_free(e);
    return syno_error_set(err, "operator shapes do not fit the slot");
  }
  int slot = -1;
  for (int i = 0; i < SLOT_CACHE; i++)
    if (!s->cache[i].e) {
      slot = i;
      break;
    }
  if (slot < 0) {
    slot = s->next_evict;
    s->next_evict = (s->next_evict + 1) % SLOT_CACHE;
    syno_exec_free(s->cache[slot].e);
    syno_kernel_free(s->cache[slot].k);
  }
  s->cache[slot] = (slot_exec_t){.n = n, .e = e};
  *out = e;
  return 0;
}

static slot_exec_t *slot_entry(slot_t *s, int64_t n) {
  for (int i = 0; i < SLOT_CACHE; i++)
    if (s->cache[i].e && s->cache[i].n == n) return &s->cache[i];
  return NULL;
}

/* The Halide kernel of the slot's operator at its binding for batch n (the operator stays
 * symbolic, as the executor takes it: the binding comes with a copy of its variables). */
static int slot_kernel_get(slot_t *s, int64_t n, syno_kernel_t **out, syno_error_t *err) {
  syno_vars_t v;
  if (slot_bind(s, n, &v, err)) return -1;
  if (syno_kernel_get_in(&s->op->op, &v, 0, syno_sched_default(), out, NULL, err)) return -1;
  syno_kernel_set_threads(*out, syno_nn_threads_get());
  return 0;
}

/* Median seconds of 5 runs of one forward (after a warm-up). */
static double time_forward(slot_t *s, slot_exec_t *c, int use_k, const float *const *t, float *y) {
  double v[5];
  for (int r = -1; r < 5; r++) {
    double t0 = syno_clock_seconds();
    int rc = use_k ? syno_kernel_forward(c->k, t, y, &s->err) : syno_exec_forward(c->e, t, y, &s->err);
    if (rc) return INFINITY;
    if (r >= 0) v[r] = syno_clock_seconds() - t0;
  }
  return syno_median(v, 5);
}

/* An inference forward through the slot's kernels choice. */
static int slot_infer(slot_t *s, slot_exec_t *c, const float *const *t, float *y) {
  if (!c->decided) {
    c->decided = 1;
    c->use_k = 0;
    if (s->kernels != SYNO_KERNELS_EXEC) {
      syno_error_t kerr;
      if (!c->k && slot_kernel_get(s, c->n, &c->k, &kerr)) {
        if (s->kernels == SYNO_KERNELS_HALIDE) {
          c->decided = 0;
          s->err = kerr;
          return -1;
        }
        /* best: the executor is then the only candidate */
      } else if (s->kernels == SYNO_KERNELS_HALIDE) {
        c->use_k = 1;
      } else {
        c->use_k = time_forward(s, c, 1, t, y) < time_forward(s, c, 0, t, y);
      }
    }
  }
  s->used = c->use_k ? "halide" : "exec";
  snprintf(s->path, sizeof s->path, "%s", c->use_k ? "Halide kernel" : syno_exec_path(c->e));
  return c->use_k ? syno_kernel_forward(c->k, t, y, &s->err) : syno_exec_forward(c->e, t, y, &s->err);
}

static int slot_check_input(const syno_layer_t *self, int ndim, const int64_t *dims) {
  const slot_t *s = (const slot_t *)self;
  if (s->info.kind == SYNO_SLOT_LINEAR) {
    if (ndim != 3 || dims[1] != s->info.s || dims[2] != s->info.c_in || dims[0] < 1) return SYNO_NN_ESHAPE;
    return SYNO_NN_OK;
  }
  if (ndim != 4 || dims[1] != s->info.c_in || dims[2] != s->info.h || dims[3] != s->info.w || dims[0] < 1)
    return SYNO_NN_ESHAPE;
  return SYNO_NN_OK;
}

/* The output dims for a batch of n; returns the ndim. */
static int slot_out_dims(const slot_t *s, int64_t n, int64_t *out) {
  out[0] = n;
  if (s->info.kind == SYNO_SLOT_LINEAR) {
    out[1] = s->info.s;
    out[2] = s->info.c_out;
    return 3;
  }
  out[1] = s->info.c_out;
  out[2] = s->info.h;
  out[3] = s->info.w;
  return 4;
}

static int slot_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  const slot_t *s = (const slot_t *)self;
  if (!s->op) return syno_nn_out_shape(self->children[0], ndim, dims, out);
  int rc = slot_check_input(self, ndim, dims);
  if (rc) return rc;
  return slot_out_dims(s, dims[0], out);
}

/* What deployed inference applies after the slot (syno_nn_forward_affine); NULL: nothing. */
typedef struct {
  const float *scale, *shift;
  int relu;
} slot_affine_t;

/* The forward, and with aff the map after it: 0, or 1 when the map was not applied (the
 * standard layer's output, a view, is left as it is), or a status < 0. */
static int slot_run(syno_layer_t *self, const syno_tensor_t *x, int train, const slot_affine_t *aff) {
  slot_t *s = (slot_t *)self;
  if (!s->op) {
    /* a linear slot holds its binding for the standard layer too (the linear layer alone
     * would take any leading dims) */
    if (s->info.kind == SYNO_SLOT_LINEAR && slot_check_input(self, x->ndim, x->dims)) {
      syno_error_set(&s->err, "slot input shape does not match its binding");
      return SYNO_NN_ESHAPE;
    }
    syno_layer_t *c = self->children[0];
    int rc;
    if (aff && s->info.kind == SYNO_SLOT_CONV)
      rc = syno_nn_forward_affine(c, x, aff->scale, aff->shift, aff->relu);
    else if (!(rc = syno_nn_forward(c, x, train)) && aff)
      rc = 1; /* the linear layer's output, a view, is left as it is */
    if (rc < 0) return rc;
    syno_nn_begin_forward(self, x, train);
    self->out = syno_nn_tensor_view(c->out.data, c->out.ndim, c->out.dims);
    return rc;
  }
  int rc = slot_check_input(self, x->ndim, x->dims);
  if (rc) {
    syno_error_set(&s->err, "slot input shape does not match its binding");
    return rc;
  }
  syno_exec_t *e;
  if (slot_compile(s, x->dims[0], &e, &s->err)) return SYNO_NN_EINVAL;
  int64_t od[4];
  int nd = slot_out_dims(s, x->dims[0], od);
  if ((rc = syno_nn_tensor_resize(&self->out, nd, od))) return rc;
  syno_nn_begin_forward(self, x, train);
  const float *t[SYNO_MAX_TENSORS];
  t[0] = x->data;
  for (int i = 0; i < s->nweights; i++) t[i + 1] = self->params[i].value.data;
  syno_exec_hold_weights(e, train ? 0 : self->frozen);
  int mapped = 0;
  if (!train && s->kernels != SYNO_KERNELS_EXEC) {
    if (slot_infer(s, slot_entry(s, x->dims[0]), t, self->out.data)) return SYNO_NN_EINVAL;
  } else {
    s->used = "exec";
    if (aff) {
      int64_t inner = 1;
      for (int i = 2; i < nd; i++) inner *= od[i];
      rc = syno_exec_forward_affine(e, t, self->out.data, od[1], inner, aff->scale, aff->shift, aff->relu, &s->err);
      if (rc < 0) return SYNO_NN_EINVAL;
      mapped = rc == 0;
    } else if (syno_exec_forward(e, t, self->out.data, &s->err)) {
      return SYNO_NN_EINVAL;
    }
    snprintf(s->path, sizeof s->path, "%s", syno_exec_path(e));
  }
  if (aff && !mapped) syno_nn_channel_affine(&self->out, aff->scale, aff->shift, aff->relu);
  return SYNO_NN_OK;
}

static int slot_forward(syno_layer_t *self, const syno_tensor_t *x, int train) { return slot_run(self, x, train, NULL); }

static int slot_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  slot_t *s = (slot_t *)self;
  if (!s->op) {
    syno_layer_t *c = self->children[0];
    c->skip_input_grad = self->skip_input_grad;
    int rc = syno_nn_backward(c, dy);
    if (rc) return rc;
    if (!self->skip_input_grad) self->grad_in = syno_nn_tensor_view(c->grad_in.data, c->grad_in.ndim, c->grad_in.dims);
    return SYNO_NN_OK;
  }
  syno_exec_t *e;
  if (slot_compile(s, self->in.dims[0], &e, &s->err)) return SYNO_NN_EINVAL;
  int skip, rc = syno_nn_prepare_grad_in(self, &skip);
  if (rc) return rc;
  int64_t need = 0;
  for (int i = 0; i < s->nweights; i++) need += syno_nn_tensor_numel(&self->params[i].value);
  if (need > s->wgrad_cap) {
    float *p = realloc(s->wgrad_scratch, sizeof(float) * (size_t)need);
    if (!p) return SYNO_NN_ENOMEM;
    s->wgrad_scratch = p;
    s->wgrad_cap = need;
  }
  const float *t[SYNO_MAX_TENSORS];
  float *g[SYNO_MAX_TENSORS];
  t[0] = self->in.data;
  g[0] = skip ? NULL : self->grad_in.data;
  float *w = s->wgrad_scratch;
  for (int i = 0; i < s->nweights; i++) {
    t[i + 1] = self->params[i].value.data;
    g[i + 1] = w;
    w += syno_nn_tensor_numel(&self->params[i].value);
  }
  if (syno_exec_backward(e, t, dy->data, g, &s->err)) return SYNO_NN_EINVAL;
  for (int i = 0; i < s->nweights; i++) {
    float *acc = self->params[i].grad.data;
    const float *src = g[i + 1];
    int64_t n = syno_nn_tensor_numel(&self->params[i].grad);
    for (int64_t j = 0; j < n; j++) acc[j] += src[j];
  }
  return SYNO_NN_OK;
}

static void slot_destroy(syno_layer_t *self) {
  slot_t *s = (slot_t *)self;
  for (int i = 0; i < SLOT_CACHE; i++) {
    syno_exec_free(s->cache[i].e);
    syno_kernel_free(s->cache[i].k);
  }
  free(s->wgrad_scratch);
  syno_slotop_free(s->op);
}

/* Deployed inference (syno_nn_forward_affine): the standard layer folds the map itself; an
 * operator's output is the slot's own, mapped in place. */
static int slot_forward_affine(syno_layer_t *self, const syno_tensor_t *x, const float *scale, const float *shift,
                               int relu) {
  const slot_affine_t aff = {scale, shift, relu};
  return slot_run(self, x, 0, &aff);
}

static const syno_layer_ops_t slot_ops = {
    "slot", slot_forward, slot_backward, slot_out_shape, slot_destroy, slot_forward_affine,
};

int syno_slot_info(const syno_layer_t *l, syno_slot_info_t *info) {
  if (!l || l->ops != &slot_ops) return 0;
  if (info) *info = ((const slot_t *)l)->info;
  return 1;
}

int syno_slot_set_kernels(syno_layer_t *l, int kernels) {
  if (!l || l->ops != &slot_ops) return -1;
  slot_t *s = (slot_t *)l;
  if (s->kernels != kernels)
    for (int i = 0; i < SLOT_CACHE; i++) s->cache[i].decided = 0;
  s->kernels = kernels;
  return 0;
}

const char *syno_slot_kernel_used(const syno_layer_t *l) {
  if (!l || l->ops != &slot_ops) return NULL;
  const slot_t *s = (const slot_t *)l;
  return s->op ? s->used : NULL;
}

const char *syno_slot_path(const syno_layer_t *l) {
  if (!l || l->ops != &slot_ops) return NULL;
  const slot_t *s = (const slot_t *)l;
  return s->op && s->path[0] ? s->path : NULL;
}

const char *syno_slot_error(const syno_layer_t *l) {
  if (!l || l->ops != &slot_ops) return "";
  return ((const slot_t *)l)->err.msg;
}

/* The shared part of creating a slot; s->info has the kind and binding filled in and the
 * standard child (if op is NULL) is attached by the caller. */
static int slot_finish(slot_t *s, const syno_slotop_t *op, double gain, syno_rng_t *rng, const char *where,
                       syno_layer_t **out, syno_error_t *err) {
  syno_layer_t *self = &s->base;
  if ((int)op->sig.kind != s->info.kind) {
    const char *want = s->info.kind == SYNO_SLOT_LINEAR ? "linear" : "convolution (conv2d or conv2d-wide)";
    syno_nn_layer_free(self);
    return syno_error_set(err, "%s: the operator is from the %s preset, the slot needs a %s one", where, op->sig.name,
                          want);
  }
  if (slotop_copy(op, &s->op, err)) {
    syno_nn_layer_free(self);
    return syno_error_prefix(err, "%s", where);
  }
  syno_exec_t *e;
  if (slot_compile(s, 1, &e, err)) {
    syno_nn_layer_free(self);
    return syno_error_prefix(err, "%s", where);
  }
  int64_t flops = syno_exec_flops(e);
  s->info.flops = flops;
  double fan = (double)flops / 2.0 / (double)slot_out_numel(s);
  if (fan < 1) fan = 1;
  int nw = s->nweights;
  double std = pow(gain / fan, 0.5 / (nw > 0 ? nw : 1));
  for (int i = 0; i < nw; i++) {
    int64_t n = syno_exec_numel(e, i + 1);
    if (syno_nn_param_init(&self->params[i], "weight", 1, &n)) {
      syno_nn_layer_free(self);
      return syno_error_set(err, "out of memory");
    }
    syno_nn_fill_normal(rng, &self->params[i].value, 0.0, std);
    s->info.params += n;
  }
  *out = self;
  return 0;
}

/* Attaches the standard layer as the slot's only child (frees the slot on failure). */
static int slot_set_child(slot_t *s, syno_layer_t *child, syno_layer_t **out, syno_error_t *err) {
  syno_layer_t *self = &s->base;
  self->children = malloc(sizeof *self->children);
  if (!child || !self->children) {
    syno_nn_layer_free(child);
    syno_nn_layer_free(self);
    return syno_error_set(err, "out of memory");
  }
  self->children[0] = child;
  self->nchildren = 1;
  *out = self;
  return 0;
}

int syno_slot_create(const syno_slotop_t *op, int64_t c_in, int64_t c_out, int64_t h, int64_t w, int conv_backend,
                     syno_rng_t *rng, syno_layer_t **out, syno_error_t *err) {
  return syno_slot_create_grouped(op, c_in, c_out, h, w, 1, conv_backend, rng, out, err);
}

int syno_slot_create_grouped(const syno_slotop_t *op, int64_t c_in, int64_t c_out, int64_t h, int64_t w, int64_t groups,
                             int conv_backend, syno_rng_t *rng, syno_layer_t **out, syno_error_t *err) {
  *out = NULL;
  if (c_in < 1 || c_out < 1 || h < 1 || w < 1)
    return syno_error_set(err, "slot sizes must be positive (C_in=%lld C_out=%lld H=%lld W=%lld)", (long long)c_in,
                          (long long)c_out, (long long)h, (long long)w);
  if (groups < 1 || c_in % groups || c_out % groups)
    return syno_error_set(err, "slot groups=%lld must divide C_in=%lld and C_out=%lld", (long long)groups,
                          (long long)c_in, (long long)c_out);
  int nw = op ? op->op.n_tensors - 1 : 0;
  slot_t *s = syno_nn_layer_new(sizeof *s, &slot_ops, nw);
  if (!s) return syno_error_set(err, "out of memory");
  s->info.kind = SYNO_SLOT_CONV;
  s->info.c_in = c_in;
  s->info.c_out = c_out;
  s->info.h = h;
  s->info.w = w;
  s->nweights = nw;
  if (!op) {
    s->info.groups = groups;
    syno_conv2d_cfg_t cc = {0};
    cc.in_channels = c_in;
    cc.out_channels = c_out;
    cc.kernel_h = cc.kernel_w = 3;
    cc.pad_h = cc.pad_w = 1;
    cc.groups = groups;
    cc.backend = conv_backend;
    s->info.flops = 2 * c_out * (c_in / groups) * 9 * h * w;
    s->info.params = c_out * (c_in / groups) * 9;
    return slot_set_child(s, syno_nn_conv2d_create(&cc, rng), out, err);
  }
  /* The operator replaces the whole grouped convolution: it is bound to the slot's full
   * C_in -> C_out and is free to mix every channel (or to group them itself, through the
   * preset's g), so the slot records groups=1: the standard layer's grouping is gone. */
  s->info.groups = 1;
  char where[160];
  snprintf(where, sizeof where, "slot C_in=%lld C_out=%lld H=%lld W=%lld", (long long)c_in, (long long)c_out,
           (long long)h, (long long)w);
  return slot_finish(s, op, 2.0, rng, where, out, err);
}

int syno_slot_linear_create(const syno_slotop_t *op, int64_t c_in, int64_t c_out, int64_t sl, syno_rng_t *rng,
                            syno_layer_t **out, syno_error_t *err) {
  *out = NULL;
  if (c_in < 1 || c_out < 1 || sl < 1)
    return syno_error_set(err, "slot sizes must be positive (S=%lld C_in=%lld C_out=%lld)", (long long)sl,
                          (long long)c_in, (long long)c_out);
  int nw = op ? op->op.n_tensors - 1 : 0;
  slot_t *s = syno_nn_layer_new(sizeof *s, &slot_ops, nw);
  if (!s) return syno_error_set(err, "out of memory");
  s->info.kind = SYNO_SLOT_LINEAR;
  s->info.c_in = c_in;
  s->info.c_out = c_out;
  s->info.s = sl;
  s->info.groups = 1;
  s->nweights = nw;
  if (!op) {
    s->info.flops = 2 * sl * c_in * c_out;
    s->info.params = c_in * c_out;
    return slot_set_child(s, syno_nn_linear_create(c_in, c_out, 0, rng), out, err);
  }
  char where[160];
  snprintf(where, sizeof where, "linear slot S=%lld C_in=%lld C_out=%lld", (long long)sl, (long long)c_in,
           (long long)c_out);
  return slot_finish(s, op, 1.0 / 3.0, rng, where, out, err);
}
