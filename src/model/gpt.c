/*
 * The gpt backbone: a small decoder-only transformer (GPT-2 layout, pre-LayerNorm) whose
 * linear layers are linear slots. See syno/backbone.h.
 *
 *   ids [B, T] -> token + position embedding [B, T, C]
 *   depth x { x += attention(LN(x));  x += fc2(GELU(fc1(LN(x)))) }
 *   LN -> LM head (standard linear, no bias) -> logits [B, T, vocab]
 * attention(h) = O(causal_attention(QKV(h))), QKV (C -> 3C) the fused projection [Q | K | V]
 * (GPT-2's c_attn); QKV, O, fc1 (C -> 4C) and fc2 (4C -> C) are slots bound to S = T (the
 * context length). An operator of the linear preset (the original's GPT-2 search, output
 * t*H_in) fills QKV only, as the original's placeholder does; one of linear-wide fills all four.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "syno/backbone.h"

/* ---------------------------------------------------------------- token + position embedding */

typedef struct tokpos {
  syno_layer_t base;
  int64_t vocab, context, dim;
} tokpos_t;

static int tp_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  const tokpos_t *e = (const tokpos_t *)self;
  if (ndim != 2 || dims[0] < 1 || dims[1] < 1 || dims[1] > e->context) return SYNO_NN_ESHAPE;
  out[0] = dims[0];
  out[1] = dims[1];
  out[2] = e->dim;
  return 3;
}

static int tp_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  tokpos_t *e = (tokpos_t *)self;
  int64_t od[3];
  int rc = tp_out_shape(self, x->ndim, x->dims, od);
  if (rc < 0) return rc;
  const int64_t n = syno_nn_tensor_numel(x), T = x->dims[1], C = e->dim;
  for (int64_t i = 0; i < n; i++) {
    float v = x->data[i];
    if (!(v >= 0.0f && v < (float)e->vocab) || v != (float)(int64_t)v) return SYNO_NN_ERANGE;
  }
  if ((rc = syno_nn_tensor_resize(&self->out, 3, od))) return rc;
  syno_nn_begin_forward(self, x, train);
  const float *wte = self->params[0].value.data, *wpe = self->params[1].value.data;
  for (int64_t i = 0; i < n; i++) {
    const float *a = wte + (int64_t)x->data[i] * C, *p = wpe + (i % T) * C;
    float *y = self->out.data + i * C;
    for (int64_t j = 0; j < C; j++) y[j] = a[j] + p[j];
  }
  return SYNO_NN_OK;
}

static int tp_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  tokpos_t *e = (tokpos_t *)self;
  const int64_t n = syno_nn_tensor_numel(&self->in), T = self->in.dims[1], C = e->dim;
  float *dwte = self->params[0].grad.data, *dwpe = self->params[1].grad.data;
  for (int64_t i = 0; i < n; i++) {
    float *a = dwte + (int64_t)self->in.data[i] * C, *p = dwpe + (i % T) * C;
    const float *g = dy->data + i * C;
    for (int64_t j = 0; j < C; j++) {
      a[j] += g[j];
      p[j] += g[j];
    }
  }
  return SYNO_NN_OK;
}

static const syno_layer_ops_t tp_ops = {
    "token_pos_embedding", tp_forward, tp_backward, tp_out_shape, NULL, NULL,
};

syno_layer_t *syno_nn_token_pos_embedding_create(int64_t vocab, int64_t context, int64_t dim, syno_rng_t *rng) {
  if (vocab < 1 || vocab > (INT64_C(1) << 24) || context < 1 || dim < 1 || !rng) return NULL;
  tokpos_t *e = syno_nn_layer_new(sizeof *e, &tp_ops, 2);
  if (!e) return NULL;
  e->vocab = vocab;
  e->context = context;
  e->dim = dim;
  syno_layer_t *l = &e->base;
  int64_t wd[2] = {vocab, dim}, pd[2] = {context, dim};
  if (syno_nn_param_init(&l->params[0], "weight", 2, wd) || syno_nn_param_init(&l->params[1], "pos", 2, pd)) {
    syno_nn_layer_free(l);
    return NULL;
  }
  syno_nn_fill_normal(rng, &l->params[0].value, 0.0, 0.02);
  syno_nn_fill_normal(rng, &l->params[1].value, 0.0, 0.02);
  return l;
}

/* ---------------------------------------------------------------- attention sublayer */

/* children: 0 LN, 1 QKV (C -> 3C, the fused projection), 2 causal attention, 3 O */
typedef struct gattn {
  syno_layer_t base;
  int64_t dim;
} gattn_t;

static int ga_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  const gattn_t *g = (const gattn_t *)self;
  if (ndim != 3 || dims[2] != g->dim) return SYNO_NN_ESHAPE;
  memcpy(out, dims, 3 * sizeof *out);
  return 3;
}

static int ga_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  syno_layer_t **c = self->children;
  int64_t od[3];
  int rc = ga_out_shape(self, x->ndim, x->dims, od);
  if (rc < 0) return rc;
  syno_nn_begin_forward(self, x, train);
  for (int i = 0; i < 4; i++)
    if ((rc = syno_nn_forward(c[i], i ? &c[i - 1]->out : x, train))) return rc;
  self->out = syno_nn_tensor_view(c[3]->out.data, c[3]->out.ndim, c[3]->out.dims);
  return SYNO_NN_OK;
}

static int ga_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  syno_layer_t **c = self->children;
  int rc;
  for (int i = 3; i >= 0; i--) {
    c[i]->skip_input_grad = i ? 0 : self->skip_input_grad;
    if ((rc = syno_nn_backward(c[i], i == 3 ? dy : &c[i + 1]->grad_in))) return rc;
    if (i < 3) syno_nn_release_grad_in(c[i + 1], c[i]);
  }
  if (!self->skip_input_grad)
    self->grad_in = syno_nn_tensor_view(c[0]->grad_in.data, c[0]->grad_in.ndim, c[0]->grad_in.dims);
  return SYNO_NN_OK;
}

static void ga_destroy(syno_layer_t *self) {
  /* out and grad_in are views into children */
  self->out = (syno_tensor_t)SYNO_TENSOR_EMPTY;
  self->grad_in = (syno_tensor_t)SYNO_TENSOR_EMPTY;
}

static const syno_layer_ops_t ga_ops = {
    "gpt_attention", ga_forward, ga_backward, ga_out_shape, ga_destroy, NULL,
};

/* The operator of a slot that is not the QKV projection: op, unless op's
 * signature fills the QKV projection only (then the standard layer). */
static const syno_slotop_t *other_op(const syno_slotop_t *op) { return op && !op->sig.qkv_only ? op : NULL; }

int syno_gpt_attention_create(const syno_slotop_t *op, int64_t dim, int64_t heads, int64_t context, syno_rng_t *rng,
                              syno_layer_t **out, syno_layer_t **slots, syno_error_t *err) {
  *out = NULL;
  if (dim < 1 || heads < 1 || dim % heads)
    return syno_error_set(err, "the model dim %lld is not a multiple of the heads %lld", (long long)dim,
                          (long long)heads);
  gattn_t *g = syno_nn_layer_new(sizeof *g, &ga_ops, 0);
  syno_layer_t *self = &g->base;
  if (!g || !(self->children = calloc(4, sizeof *self->children))) {
    free(g);
    return syno_error_set(err, "out of memory");
  }
  self->nchildren = 4;
  g->dim = dim;
  self->children[0] = syno_nn_layernorm_create(dim, 1e-5);
  for (int i = 0; i < 2; i++) {
    syno_layer_t *s = NULL;
    if (syno_slot_linear_create(i ? other_op(op) : op, dim, i ? dim : 3 * dim, context, rng, &s, err)) {
      syno_nn_layer_free(self);
      return -1;
    }
    self->children[i ? 3 : 1] = s;
    if (slots) slots[i] = s;
  }
  self->children[2] = syno_nn_causal_attention_create(heads);
  if (!self->children[0] || !self->children[2]) {
    syno_nn_layer_free(self);
    return syno_error_set(err, "out of memory");
  }
  *out = self;
  return 0;
}

/* ---------------------------------------------------------------- the backbone */

static int add_slot(syno_backbone_t *bb, syno_layer_t *s, syno_error_t *err) {
  if (bb->nslots >= SYNO_BACKBONE_MAX_SLOTS)
    return syno_error_set(err, "too many slots (at most %d)", SYNO_BACKBONE_MAX_SLOTS);
  syno_slot_info_t info;
  syno_slot_info(s, &info);
  bb->slots[bb->nslots++] = s;
  bb->flops += info.flops;
  return 0;
}

/* One block: residual(attention) then residual(MLP). */
static syno_layer_t *gpt_block(const syno_backbone_cfg_t *cfg, int64_t C, int64_t H, int64_t T, syno_rng_t *rng,
                               syno_backbone_t *bb, syno_error_t *err) {
  syno_layer_t *attn = NULL, *sl[2], *fc1 = NULL, *fc2 = NULL;
  if (syno_gpt_attention_create(cfg->op, C, H, T, rng, &attn, sl, err)) return NULL;
  for (int i = 0; i < 2; i++)
    if (add_slot(bb, sl[i], err)) {
      syno_nn_layer_free(attn);
      return NULL;
    }
  bb->flops += 2 * 2 * T * T * C; /* Q K^T and P V over the full T x T */
  syno_layer_t *ra = syno_nn_residual_create(attn, NULL);
  if (syno_slot_linear_create(other_op(cfg->op), C, 4 * C, T, rng, &fc1, err) ||
      syno_slot_linear_create(other_op(cfg->op), 4 * C, C, T, rng, &fc2, err) || add_slot(bb, fc1, err) ||
      add_slot(bb, fc2, err)) {
    syno_nn_layer_free(ra);
    syno_nn_layer_free(fc1);
    syno_nn_layer_free(fc2);
    return NULL;
  }
  syno_layer_t *m[4] = {syno_nn_layernorm_create(C, 1e-5), fc1, syno_nn_gelu_create(), fc2};
  if (!m[0] || !m[2]) {
    for (int i = 0; i < 4; i++) syno_nn_layer_free(m[i]);
    syno_nn_layer_free(ra);
    syno_error_set(err, "out of memory");
    return NULL;
  }
  syno_layer_t *rm = syno_nn_residual_create(syno_nn_sequential_create(4, m), NULL);
  syno_layer_t *pair[2] = {ra, rm};
  syno_layer_t *blk = (ra && rm) ? syno_nn_sequential_create(2, pair) : NULL;
  if (!blk) {
    if (!ra || !rm) {
      syno_nn_layer_free(ra);
      syno_nn_layer_free(rm);
    }
    syno_error_set(err, "out of memory");
  }
  return blk;
}

int model_gpt_build(const syno_backbone_cfg_t *cfg, syno_rng_t *rng, syno_backbone_t *bb, syno_error_t *err) {
  const int64_t C = cfg->width > 0 ? (int64_t)cfg->width : 64;
  const int64_t H = cfg->heads > 0 ? cfg->heads : 4;
  const int64_t T = cfg->context > 0 ? cfg->context : 64;
  const int depth = cfg->depth > 0 ? cfg->depth : 2;
  const int64_t V = cfg->vocab;
  if (cfg->width < 0 || (double)C != (cfg->width > 0 ? cfg->width : 64) || C > 4096)
    return syno_error_set(err, "gpt width is the model dim, an integer in 1..4096 (got %g)", cfg->width);
  if (cfg->depth < 0 || depth > 8) return syno_error_set(err, "depth must be in 1..8 (got %d)", cfg->depth);
  if (cfg->heads < 0 || C % H)
    return syno_error_set(err, "the model dim %lld is not a multiple of the heads %lld", (long long)C, (long long)H);
  if (cfg->context < 0 || T > 4096)
    return syno_error_set(err, "context must be in 1..4096 (got %lld)", (long long)cfg->context);
  if (V < 2 || V > 65536)
    return syno_error_set(err, "gpt needs a vocabulary of 2..65536 tokens (got %lld)", (long long)V);
  syno_layer_t *ls[12] = {0};
  int n = 0, failed = 0;
  ls[n++] = syno_nn_token_pos_embedding_create(V, T, C, rng);
  failed = !ls[0];
  if (failed) syno_error_set(err, "out of memory");
  for (int i = 0; !failed && i < depth; i++) {
    ls[n] = gpt_block(cfg, C, H, T, rng, bb, err);
    failed = !ls[n++];
  }
  if (!failed) {
    ls[n++] = syno_nn_layernorm_create(C, 1e-5);
    ls[n++] = syno_nn_linear_create(C, V, 0, rng);
    failed = !ls[n - 2] || !ls[n - 1];
    if (failed) syno_error_set(err, "out of memory");
    bb->flops += 2 * T * C * V;
  }
  if (failed) {
    for (int i = 0; i < n; i++) syno_nn_layer_free(ls[i]);
    memset(bb, 0, sizeof *bb);
    return -1;
  }
  bb->net = syno_nn_sequential_create(n, ls);
  if (!bb->net) {
    memset(bb, 0, sizeof *bb);
    return syno_error_set(err, "out of memory");
  }
  bb->params = syno_nn_param_count(bb->net);
  return 0;
}
