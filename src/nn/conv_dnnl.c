/*
 * The oneDNN backend of conv2d (see conv.c for the layer and the im2col backend).
 *
 * The layer's tensors stay plain (x and y NCHW, the weight OIHW, or GOIHW with groups, which
 * is the same bytes). Primitives are created with format_any; for every argument where
 * oneDNN picked another (blocked) layout, the op owns a buffer in that layout and a reorder
 * from/to the plain tensor, run around each execute (SYNO_DNNL_BLOCKED=0 keeps everything
 * plain; docs/conv.md has the measurements: blocked is 2-3x faster here). For each input
 * shape (n, h, w) the layer keeps an entry holding the forward (training and, lazily,
 * inference) primitives and the backward-data and backward-weights ones (created at the
 * first backward); memory objects are created once and their data handles pointed at the
 * caller's buffers per call. A few entries are kept, so alternating the training batch, a
 * short last batch and an evaluation batch does not recreate primitives.
 *
 * The blocked copies of activations and gradients live only for one call (reorder in,
 * execute, reorder out), so they do not get buffers of their own: every op places them at
 * fixed offsets in one arena that all convolutions of the process share, grown to the
 * largest op's need and freed with the last convolution. Calls take the arena's lock, so
 * convolutions on different threads run one at a time. Only the blocked weights keep their
 * own buffer (a frozen layer reuses it across calls). A DenseNet-121 at batch 16 needed
 * 1.3 GB less this way than with one buffer per port and entry.
 *
 * oneDNN overwrites diff_weights/diff_bias while the layer contract accumulates (+=), so the
 * weight and bias gradients land in scratch buffers and are added afterwards.
 *
 * Output sides follow PyTorch's floor rule; oneDNN wants explicit right padding, which is
 * (o - 1) * s + (k - 1) * d + 1 - in - pad and may be smaller than pad (or negative). If
 * oneDNN refuses a configuration, the entry records it and the layer falls back (AUTO) or
 * fails with SYNO_NN_EINVAL (ONEDNN).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>

#include "nn_internal.h"

#define NCACHE 4

/* 1: let oneDNN choose the layouts (format_any) and reorder from/to the plain tensors;
 * 0: plain NCHW/OIHW throughout. See docs/conv.md for the measurements behind the choice. */
#ifndef SYNO_DNNL_BLOCKED
#define SYNO_DNNL_BLOCKED 1
#endif
#define MAXPORTS 4

/* One argument of a primitive: the caller's plain buffer and, when the primitive chose
 * another layout, its own buffer and the reorder between the two. */
typedef struct port {
  int arg, out;        /* out: the primitive writes it (reorder after, not before) */
  dnnl_memory_t user;  /* plain layout; handle set per call */
  dnnl_memory_t inner; /* NULL: the primitive reads/writes the user memory directly */
  size_t off;          /* inner in the shared arena at this offset (see port_shared) */
  dnnl_primitive_t reorder;
  uint64_t held; /* the weights: inner holds the reorder of held_ptr under this freeze id */
  const void *held_ptr;
} port_t;

typedef struct op {
  dnnl_primitive_desc_t pd;
  dnnl_primitive_t prim;
  port_t port[MAXPORTS];
  int nports;
  size_t scratch; /* arena bytes its shared ports take */
} op_t;

typedef struct entry {
  int64_t n, h, w;                                    /* key; n == 0: unused */
  int ok;                                             /* oneDNN accepted the forward */
  dnnl_memory_desc_t src_md, wei_md, bias_md, dst_md; /* plain layouts */
  dnnl_memory_desc_t src_any, wei_any, dst_any;       /* layouts left to oneDNN */
  op_t fwd_train, fwd_inf, bwd_data, bwd_w;
} entry_t;

struct nn_dnnl_conv {
  dnnl_stream_t stream;
  entry_t ent[NCACHE];
  int next; /* round-robin victim */
  float *dw, *db;
  int64_t dw_len;
};

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;

/* The shared arena of the blocked activations and gradients (see the top of the file). */
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static void *arena;
static size_t arena_len;
static int arena_users; /* live nn_dnnl_conv objects */
#define ARENA_ALIGN 64

/* Takes the arena lock with the arena at least len bytes; 0 on success, else -1 (and the
 * lock is not held) when it cannot grow. */
static int arena_take(size_t len) {
  pthread_mutex_lock(&arena_lock);
  if (arena_len < len) {
    void *p = NULL;
    if (posix_memalign(&p, ARENA_ALIGN, len)) {
      pthread_mutex_unlock(&arena_lock);
      return -1;
    }
    free(arena);
    arena = p;
    arena_len = len;
  }
  return 0;
}

static void arena_users_add(int delta) {
  pthread_mutex_lock(&arena_lock);
  arena_users += delta;
  if (arena_users == 0) {
    free(arena);
    arena = NULL;
    arena_len = 0;
  }
  pthread_mutex_unlock(&arena_lock);
}

/* Whether p's blocked copy lives in the arena: every one but the weights', which a frozen
 * layer reuses across calls. */
static int port_shared(const port_t *p) { return p->inner && p->arg != DNNL_ARG_WEIGHTS; }

static void engine_init(void) {
  if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success) engine = NULL;
}

nn_dnnl_conv_t *nn_dnnl_conv_new(const syno_conv2d_cfg_t *c) {
  pthread_once(&engine_once, engine_init);
  if (!engine) return NULL;
  nn_dnnl_conv_t *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  d->dw_len = c->out_channels * (c->in_channels / c->groups) * c->kernel_h * c->kernel_w;
  d->dw = malloc((size_t)d->dw_len * sizeof(float));
  d->db = malloc((size_t)c->out_channels * sizeof(float));
  if (!d->dw || !d->db || dnnl_stream_create(&d->stream, engine, dnnl_stream_default_flags)) {
    free(d->dw);
    free(d->db);
    free(d);
    return NULL;
  }
  arena_users_add(1);
  return d;
}

static void op_clear(op_t *o) {
  for (int i = 0; i < o->nports; i++) {
    port_t *p = &o->port[i];
    if (p->reorder) dnnl_primitive_destroy(p->reorder);
    if (p->inner) dnnl_memory_destroy(p->inner);
    if (p->user) dnnl_memory_destroy(p->user);
  }
  if (o->prim) dnnl_primitive_destroy(o->prim);
  if (o->pd) dnnl_primitive_desc_destroy(o->pd);
  memset(o, 0, sizeof *o);
}

static void entry_clear(entry_t *e) {
  op_clear(&e->fwd_train);
  op_clear(&e->fwd_inf);
  op_clear(&e->bwd_data);
  op_clear(&e->bwd_w);
  memset(e, 0, sizeof *e);
}

void nn_dnnl_conv_free(nn_dnnl_conv_t *d) {
  if (!d) return;
  for (int i = 0; i < NCACHE; i++) entry_clear(&d->ent[i]);
  dnnl_stream_destroy(d->stream);
  free(d->dw);
  free(d->db);
  free(d);
  arena_users_add(-1);
}

/* Strides, dilations (oneDNN counts from 0) and paddings of c for input h x w / output oh x ow. */
typedef struct geo {
  dnnl_dims_t strides, dil, pl, pr;
} geo_t;

static int64_t out_side(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  int64_t span = d * (k - 1) + 1;
  return in + 2 * p < span ? 0 : (in + 2 * p - span) / s + 1;
}

static void make_geo(const syno_conv2d_cfg_t *c, int64_t h, int64_t w, int64_t oh, int64_t ow, geo_t *g) {
  memset(g, 0, sizeof *g);
  g->strides[0] = c->stride_h;
  g->strides[1] = c->stride_w;
  g->dil[0] = c->dilation_h - 1;
  g->dil[1] = c->dilation_w - 1;
  g->pl[0] = c->pad_h;
  g->pl[1] = c->pad_w;
  g->pr[0] = (oh - 1) * c->stride_h + (c->kernel_h - 1) * c->dilation_h + 1 - h - c->pad_h;
  g->pr[1] = (ow - 1) * c->stride_w + (c->kernel_w - 1) * c->dilation_w + 1 - w - c->pad_w;
}

/* What an op's port is bound to: the oneDNN argument, the plain layout, and direction. */
typedef struct bind {
  int arg;
  const dnnl_memory_desc_t *plain;
  int out;
} bind_t;

/* Creates o's primitive from an op descriptor (hint: the training forward, or NULL) and its
 * ports; 0 on success. */
static int op_init(op_t *o, const void *opdesc, const_dnnl_primitive_desc_t hint, const bind_t *b, int nb) {
  if (dnnl_primitive_desc_create(&o->pd, opdesc, NULL, engine, hint)) {
    o->pd = NULL;
    return -1;
  }
  if (dnnl_primitive_create(&o->prim, o->pd)) {
    o->prim = NULL;
    return -1;
  }
  for (int i = 0; i < nb; i++) {
    port_t *p = &o->port[o->nports++];
    p->arg = b[i].arg;
    p->out = b[i].out;
    if (dnnl_memory_create(&p->user, b[i].plain, engine, DNNL_MEMORY_NONE)) {
      p->user = NULL;
      return -1;
    }
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(o->pd, dnnl_query_exec_arg_md, p->arg);
    if (!md || dnnl_memory_desc_equal(md, b[i].plain)) continue;
    const int shared = p->arg != DNNL_ARG_WEIGHTS;
    if (dnnl_memory_create(&p->inner, md, engine, shared ? DNNL_MEMORY_NONE : DNNL_MEMORY_ALLOCATE)) {
      p->inner = NULL;
      return -1;
    }
    if (port_shared(p)) {
      p->off = o->scratch;
      o->scratch += (dnnl_memory_desc_get_size(md) + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
    }
    dnnl_primitive_desc_t rpd;
    if (p->out ? dnnl_reorder_primitive_desc_create(&rpd, md, engine, b[i].plain, engine, NULL)
               : dnnl_reorder_primitive_desc_create(&rpd, b[i].plain, engine, md, engine, NULL))
      return -1;
    int bad = dnnl_primitive_create(&p->reorder, rpd) != dnnl_success;
    dnnl_primitive_desc_destroy(rpd);
    if (bad) {
      p->reorder = NULL;
      return -1;
    }
  }
  return 0;
}

static int reorder(nn_dnnl_conv_t *d, port_t *p, dnnl_memory_t from, dnnl_memory_t to) {
  dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  return dnnl_primitive_execute(p->reorder, d->stream, 2, a) != dnnl_success;
}

/* op_exec's work, under the arena lock; base is the arena. */
static int op_run(nn_dnnl_conv_t *d, op_t *o, void *const *ptr, uint64_t hold, char *base) {
  dnnl_exec_arg_t args[MAXPORTS];
  for (int i = 0; i < o->nports; i++) {
    port_t *p = &o->port[i];
    if (dnnl_memory_set_data_handle(p->user, ptr[i]) ||
        (port_shared(p) && dnnl_memory_set_data_handle(p->inner, base + p->off)))
      return SYNO_NN_EINVAL;
    if (p->inner && !p->out) {
      const int weights = !port_shared(p);
      if (!(weights && hold && p->held == hold && p->held_ptr == ptr[i]) && reorder(d, p, p->user, p->inner))
        return SYNO_NN_EINVAL;
      p->held = weights ? hold : 0;
      p->held_ptr = ptr[i];
    }
    args[i].arg = p->arg;
    args[i].memory = p->inner ? p->inner : p->user;
  }
  if (dnnl_primitive_execute(o->prim, d->stream, o->nports, args)) return SYNO_NN_EINVAL;
  for (int i = 0; i < o->nports; i++) {
    port_t *p = &o->port[i];
    if (p->inner && p->out && reorder(d, p, p->inner, p->user)) return SYNO_NN_EINVAL;
  }
  return dnnl_stream_wait(d->stream) ? SYNO_NN_EINVAL : SYNO_NN_OK;
}

/* Runs o on the caller's plain buffers ptr[i] (one per port, in port order), its blocked
 * activations in the shared arena. hold != 0: the weights are unchanged since the last run
 * under the same id (syno_nn_freeze), so their reordered copy is reused. */
static int op_exec(nn_dnnl_conv_t *d, op_t *o, void *const *ptr, uint64_t hold) {
  if (arena_take(o->scratch)) return SYNO_NN_ENOMEM;
  int rc = op_run(d, o, ptr, hold, arena);
  pthread_mutex_unlock(&arena_lock);
  return rc;
}

static int fwd_init(entry_t *e, const syno_conv2d_cfg_t *c, op_t *o, dnnl_prop_kind_t kind) {
  geo_t g;
  make_geo(c, e->h, e->w, e->dst_md.dims[2], e->dst_md.dims[3], &g);
  dnnl_convolution_desc_t cd;
  if (dnnl_dilated_convolution_forward_desc_init(&cd, kind, dnnl_convolution_direct, &e->src_any, &e->wei_any,
                                                 c->bias ? &e->bias_md : NULL, &e->dst_any, g.strides, g.dil, g.pl,
                                                 g.pr))
    return -1;
  bind_t b[4] = {{DNNL_ARG_SRC, &e->src_md, 0},
                 {DNNL_ARG_WEIGHTS, &e->wei_md, 0},
                 {DNNL_ARG_DST, &e->dst_md, 1},
                 {DNNL_ARG_BIAS, &e->bias_md, 0}};
  return op_init(o, &cd, NULL, b, c->bias ? 4 : 3);
}

/* Sets up a fresh entry and its training forward; e->ok says whether oneDNN accepted it. */
static void entry_init(entry_t *e, const syno_conv2d_cfg_t *c, int64_t n, int64_t h, int64_t w) {
  memset(e, 0, sizeof *e);
  e->n = n;
  e->h = h;
  e->w = w;
  int64_t oh = out_side(h, c->kernel_h, c->stride_h, c->pad_h, c->dilation_h);
  int64_t ow = out_side(w, c->kernel_w, c->stride_w, c->pad_w, c->dilation_w);
  if (oh <= 0 || ow <= 0) return;
  dnnl_dims_t sd = {n, c->in_channels, h, w}, dd = {n, c->out_channels, oh, ow};
  dnnl_dims_t bd = {c->out_channels};
  dnnl_dims_t wd4 = {c->out_channels, c->in_channels, c->kernel_h, c->kernel_w};
  dnnl_dims_t wd5 = {c->groups, c->out_channels / c->groups, c->in_channels / c->groups, c->kernel_h, c->kernel_w};
  int g1 = c->groups == 1;
  if (dnnl_memory_desc_init_by_tag(&e->src_md, 4, sd, dnnl_f32, dnnl_nchw) ||
      dnnl_memory_desc_init_by_tag(&e->dst_md, 4, dd, dnnl_f32, dnnl_nchw) ||
      dnnl_memory_desc_init_by_tag(&e->bias_md, 1, bd, dnnl_f32, dnnl_x) ||
      dnnl_memory_desc_init_by_tag(&e->wei_md, g1 ? 4 : 5, g1 ? wd4 : wd5, dnnl_f32, g1 ? dnnl_oihw : dnnl_goihw))
    return;
#if SYNO_DNNL_BLOCKED
  const dnnl_format_tag_t any = dnnl_format_tag_any;
  if (dnnl_memory_desc_init_by_tag(&e->src_any, 4, sd, dnnl_f32, any) ||
      dnnl_memory_desc_init_by_tag(&e->dst_any, 4, dd, dnnl_f32, any) ||
      dnnl_memory_desc_init_by_tag(&e->wei_any, g1 ? 4 : 5, g1 ? wd4 : wd5, dnnl_f32, any))
    return;
#else
  e->src_any = e->src_md;
  e->dst_any = e->dst_md;
  e->wei_any = e->wei_md;
#endif
  if (fwd_init(e, c, &e->fwd_train, dnnl_forward_training)) return;
  e->ok = 1;
}

static entry_t *lookup(nn_dnnl_conv_t *d, const syno_conv2d_cfg_t *c, int64_t n, int64_t h, int64_t w) {
  for (int i = 0; i < NCACHE; i++)
    if (d->ent[i].n == n && d->ent[i].h == h && d->ent[i].w == w) return &d->ent[i];
  entry_t *e = &d->ent[d->next];
  d->next = (d->next + 1) % NCACHE;
  entry_clear(e);
  entry_init(e, c, n, h, w);
  return e;
}

int nn_dnnl_conv_supported(nn_dnnl_conv_t *d, const syno_conv2d_cfg_t *c, int64_t n, int64_t h, int64_t w) {
  return d && lookup(d, c, n, h, w)->ok;
}

int nn_dnnl_conv_forward(nn_dnnl_conv_t *d, const syno_conv2d_cfg_t *c, const syno_tensor_t *x, const float *wt,
                         const float *bias, float *y, int train, uint64_t hold) {
  entry_t *e = lookup(d, c, x->dims[0], x->dims[2], x->dims[3]);
  if (!e->ok) return SYNO_NN_EINVAL;
  op_t *o = &e->fwd_train;
  if (!train) {
    if (!e->fwd_inf.prim) {
      op_clear(&e->fwd_inf);
      if (fwd_init(e, c, &e->fwd_inf, dnnl_forward_inference)) return SYNO_NN_EINVAL;
    }
    o = &e->fwd_inf;
  }
  void *ptr[4] = {(void *)x->data, (void *)wt, y, (void *)bias};
  return op_exec(d, o, ptr, train ? 0 : hold);
}

int nn_dnnl_conv_backward(nn_dnnl_conv_t *d, const syno_conv2d_cfg_t *c, const syno_tensor_t *x, const float *dy,
                          const float *wt, float *dw, float *db, float *dx) {
  entry_t *e = lookup(d, c, x->dims[0], x->dims[2], x->dims[3]);
  if (!e->ok) return SYNO_NN_EINVAL;
  geo_t g;
  make_geo(c, e->h, e->w, e->dst_md.dims[2], e->dst_md.dims[3], &g);
  if (!e->bwd_w.prim) {
    dnnl_convolution_desc_t cd;
    bind_t b[4] = {{DNNL_ARG_SRC, &e->src_md, 0},
                   {DNNL_ARG_DIFF_DST, &e->dst_md, 0},
                   {DNNL_ARG_DIFF_WEIGHTS, &e->wei_md, 1},
                   {DNNL_ARG_DIFF_BIAS, &e->bias_md, 1}};
    op_clear(&e->bwd_w);
    if (dnnl_dilated_convolution_backward_weights_desc_init(&cd, dnnl_convolution_direct, &e->src_any, &e->wei_any,
                                                            c->bias ? &e->bias_md : NULL, &e->dst_any, g.strides, g.dil,
                                                            g.pl, g.pr) ||
        op_init(&e->bwd_w, &cd, e->fwd_train.pd, b, c->bias ? 4 : 3))
      return SYNO_NN_EINVAL;
  }
  if (dx && !e->bwd_data.prim) {
    dnnl_convolution_desc_t cd;
    bind_t b[3] = {
        {DNNL_ARG_DIFF_DST, &e->dst_md, 0}, {DNNL_ARG_WEIGHTS, &e->wei_md, 0}, {DNNL_ARG_DIFF_SRC, &e->src_md, 1}};
    op_clear(&e->bwd_data);
    if (dnnl_dilated_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &e->src_any, &e->wei_any,
                                                         &e->dst_any, g.strides, g.dil, g.pl, g.pr) ||
        op_init(&e->bwd_data, &cd, e->fwd_train.pd, b, 3))
      return SYNO_NN_EINVAL;
  }
  /* Weight (and bias) gradients into scratch, then accumulated. */
  void *wptr[4] = {(void *)x->data, (void *)dy, d->dw, d->db};
  int rc = op_exec(d, &e->bwd_w, wptr, 0);
  if (rc) return rc;
  for (int64_t i = 0; i < d->dw_len; i++) dw[i] += d->dw[i];
  if (db)
    for (int64_t k = 0; k < c->out_channels; k++) db[k] += d->db[k];
  if (!dx) return SYNO_NN_OK;
  void *dptr[3] = {(void *)dy, (void *)wt, dx};
  return op_exec(d, &e->bwd_data, dptr, 0);
}
