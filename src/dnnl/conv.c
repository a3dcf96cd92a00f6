/*
 * oneDNN's convolution (syno/dnnl.h), for the conv2d layer (src/nn/conv.c) and the executor's
 * convolution stages (src/exec/exec_conv.c).
 *
 * The callers' tensors stay plain (src and dst NC + spatial, the weight [G][O][I] + kernel).
 * Primitives are created with format_any; for every argument where oneDNN picked another
 * (blocked) layout, the op owns a buffer in that layout and a reorder from/to the plain
 * tensor, run around each execute (SYNO_DNNL_BLOCKED=0 keeps everything plain; docs/conv.md
 * has the measurements: blocked is 2-3x faster here). For each geometry the object keeps an
 * entry holding the forward (training and, lazily, inference) primitives and the
 * backward-data and backward-weights ones (created at the first backward); memory objects are
 * created once and their data handles pointed at the caller's buffers per call. A few entries
 * are kept, so alternating the training batch, a short last batch and an evaluation batch
 * does not recreate primitives.
 *
 * The blocked copies of activations and gradients live only for one call (reorder in,
 * execute, reorder out), so they do not get buffers of their own: every op places them at
 * fixed offsets in one arena that all convolutions of the process share, grown to the
 * largest op's need and freed with the last convolution. Calls take the arena's lock, so
 * convolutions on different threads run one at a time. Only the blocked weights keep their
 * own buffer (a frozen layer reuses it across calls). A DenseNet-121 at batch 16 needed
 * 1.3 GB less this way than with one buffer per port and entry.
 *
 * oneDNN overwrites diff_weights/diff_bias; a caller that accumulates (the layer contract is
 * +=) gets them through scratch buffers added afterwards.
 *
 * Output sides follow PyTorch's floor rule; oneDNN wants explicit right padding, which is
 * (o - 1) * s + (k - 1) * d + 1 - in - pad and may be smaller than pad (or negative). If
 * oneDNN refuses a geometry, the entry records it and the caller falls back.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>

#include "syno/dnnl.h"

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
  syno_dnnl_geo_t geo;                                /* key; geo.n == 0: unused */
  int ok;                                             /* oneDNN accepted the forward */
  dnnl_memory_desc_t src_md, wei_md, bias_md, dst_md; /* plain layouts */
  dnnl_memory_desc_t src_any, wei_any, dst_any;       /* layouts left to oneDNN */
  op_t fwd_train, fwd_inf, bwd_data, bwd_w;
} entry_t;

struct syno_dnnl_conv {
  dnnl_stream_t stream;
  entry_t ent[NCACHE];
  int next;       /* round-robin victim */
  float *dw, *db; /* scratch of an accumulating backward */
  int64_t dw_len, db_len;
};

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;

/* The shared arena of the blocked activations and gradients (see the top of the file). */
static pthread_mutex_t arena_lock = PTHREAD_MUTEX_INITIALIZER;
static void *arena;
static size_t arena_len;
static int arena_users; /* live syno_dnnl_conv objects */
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

syno_dnnl_conv_t *syno_dnnl_conv_new(void) {
  pthread_once(&engine_once, engine_init);
  if (!engine) return NULL;
  syno_dnnl_conv_t *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  if (dnnl_stream_create(&d->stream, engine, dnnl_stream_default_flags)) {
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

void syno_dnnl_conv_free(syno_dnnl_conv_t *d) {
  if (!d) return;
  for (int i = 0; i < NCACHE; i++) entry_clear(&d->ent[i]);
  dnnl_stream_destroy(d->stream);
  free(d->dw);
  free(d->db);
  free(d);
  arena_users_add(-1);
}

/* Strides, dilations (oneDNN counts from 0) and paddings of geometry g. */
typedef struct geo {
  dnnl_dims_t strides, dil, pl, pr;
} geo_t;

int64_t syno_dnnl_out_side(int64_t in, int64_t k, int64_t s, int64_t p, int64_t dl) {
  int64_t span = dl * (k - 1) + 1;
  return in + 2 * p < span ? 0 : (in + 2 * p - span) / s + 1;
}

static void make_geo(const syno_dnnl_geo_t *c, geo_t *g) {
  memset(g, 0, sizeof *g);
  for (int i = 0; i < c->nsp; i++) {
    g->strides[i] = c->stride[i];
    g->dil[i] = c->dil[i] - 1;
    g->pl[i] = c->pad[i];
    g->pr[i] = (c->out[i] - 1) * c->stride[i] + (c->k[i] - 1) * c->dil[i] + 1 - c->in[i] - c->pad[i];
  }
}

/* What an op's port is bound to: the oneDNN argument, the plain layout, and direction. */
typedef struct bind {
  int arg;
  const dnnl_memory_desc_t *plain;
  int out;
} bind_t;

/* Creates o's primitive from an op descriptor (attr: its post-ops, or NULL; hint: the
 * training forward, or NULL) and its ports; 0 on success. */
static int op_init(op_t *o, const void *opdesc, const_dnnl_primitive_attr_t attr, const_dnnl_primitive_desc_t hint, const bind_t *b, int nb) {
  if (dnnl_primitive_desc_create(&o->pd, opdesc, attr, engine, hint)) {
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

static int reorder(syno_dnnl_conv_t *d, port_t *p, dnnl_memory_t from, dnnl_memory_t to) {
  dnnl_exec_arg_t a[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  return dnnl_primitive_execute(p->reorder, d->stream, 2, a) != dnnl_success;
}

/* op_exec's work, under the arena lock; base is the arena. */
static int op_run(syno_dnnl_conv_t *d, op_t *o, void *const *ptr, uint64_t hold, char *base) {
  dnnl_exec_arg_t args[MAXPORTS];
  for (int i = 0; i < o->nports; i++) {
    port_t *p = &o->port[i];
    if (dnnl_memory_set_data_handle(p->user, ptr[i]) ||
        (port_shared(p) && dnnl_memory_set_data_handle(p->inner, base + p->off)))
      return SYNO_DNNL_EINVAL;
    if (p->inner && !p->out) {
      const int weights = !port_shared(p);
      if (!(weights && hold && p->held == hold && p->held_ptr == ptr[i]) && reorder(d, p, p->user, p->inner))
        return SYNO_DNNL_EINVAL;
      p->held = weights ? hold : 0;
      p->held_ptr = ptr[i];
    }
    args[i].arg = p->arg;
    args[i].memory = p->inner ? p->inner : p->user;
  }
  if (dnnl_primitive_execute(o->prim, d->stream, o->nports, args)) return SYNO_DNNL_EINVAL;
  for (int i = 0; i < o->nports; i++) {
    port_t *p = &o->port[i];
    if (p->inner && p->out && reorder(d, p, p->inner, p->user)) return SYNO_DNNL_EINVAL;
  }
  return dnnl_stream_wait(d->stream) ? SYNO_DNNL_EINVAL : SYNO_DNNL_OK;
}

/* Runs o on the caller's plain buffers ptr[i] (one per port, in port order), its blocked
 * activations in the shared arena. hold != 0: the weights are unchanged since the last run
 * under the same id (syno_nn_freeze, syno_exec_hold_weights), so their reordered copy is reused. */
static int op_exec(syno_dnnl_conv_t *d, op_t *o, void *const *ptr, uint64_t hold) {
  if (arena_take(o->scratch)) return SYNO_DNNL_ENOMEM;
  int rc = op_run(d, o, ptr, hold, arena);
  pthread_mutex_unlock(&arena_lock);
  return rc;
}

static int fwd_init(entry_t *e, op_t *o, dnnl_prop_kind_t kind) {
  geo_t g;
  make_geo(&e->geo, &g);
  dnnl_convolution_desc_t cd;
  const int bias = e->geo.bias;
  if (dnnl_dilated_convolution_forward_desc_init(&cd, kind, dnnl_convolution_direct, &e->src_any, &e->wei_any,
                                                 bias ? &e->bias_md : NULL, &e->dst_any, g.strides, g.dil, g.pl, g.pr))
    return -1;
  bind_t b[4] = {{DNNL_ARG_SRC, &e->src_md, 0},
                 {DNNL_ARG_WEIGHTS, &e->wei_md, 0},
                 {DNNL_ARG_DST, &e->dst_md, 1},
                 {DNNL_ARG_BIAS, &e->bias_md, 0}};
  if (!e->geo.relu) return op_init(o, &cd, NULL, NULL, b, bias ? 4 : 3);
  /* ReLU fused as an eltwise post-op: applied to the result before it leaves the primitive. */
  dnnl_primitive_attr_t attr = NULL;
  dnnl_post_ops_t po = NULL;
  int rc = -1;
  if (!dnnl_primitive_attr_create(&attr) && !dnnl_post_ops_create(&po) &&
      !dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f) &&
      !dnnl_primitive_attr_set_post_ops(attr, po))
    rc = op_init(o, &cd, attr, NULL, b, bias ? 4 : 3);
  if (po) dnnl_post_ops_destroy(po);
  if (attr) dnnl_primitive_attr_destroy(attr);
  return rc;
}

/* The plain descriptor of a tensor of dims d (rank r) with tag t, and the one left to oneDNN. */
static int md_pair(dnnl_memory_desc_t *plain, dnnl_memory_desc_t *any, int r, const dnnl_dims_t d,
                   dnnl_format_tag_t t) {
  if (dnnl_memory_desc_init_by_tag(plain, r, d, dnnl_f32, t)) return -1;
#if SYNO_DNNL_BLOCKED
  return dnnl_memory_desc_init_by_tag(any, r, d, dnnl_f32, dnnl_format_tag_any) ? -1 : 0;
#else
  *any = *plain;
  return 0;
#endif
}

/* Sizes oneDNN could take at all; the right padding it judges itself. */
static int geo_valid(const syno_dnnl_geo_t *c) {
  if (c->nsp < 1 || c->nsp > SYNO_DNNL_MAX_SP || c->n <= 0 || c->groups <= 0 || c->ic <= 0 || c->oc <= 0 ||
      c->ic % c->groups || c->oc % c->groups)
    return 0;
  for (int i = 0; i < c->nsp; i++)
    if (c->in[i] <= 0 || c->k[i] <= 0 || c->stride[i] <= 0 || c->dil[i] <= 0 || c->pad[i] < 0 || c->out[i] <= 0)
      return 0;
  return 1;
}

/* Sets up a fresh entry and its training forward; e->ok says whether oneDNN accepted it. */
static void entry_init(entry_t *e, const syno_dnnl_geo_t *c) {
  memset(e, 0, sizeof *e);
  e->geo = *c;
  if (!geo_valid(c)) return;
  static const dnnl_format_tag_t act[] = {dnnl_ncw, dnnl_nchw, dnnl_ncdhw}, w1[] = {dnnl_oiw, dnnl_oihw, dnnl_oidhw},
                                 wg[] = {dnnl_goiw, dnnl_goihw, dnnl_goidhw};
  const int r = 2 + c->nsp, g1 = c->groups == 1;
  dnnl_dims_t sd = {c->n, c->ic}, dd = {c->n, c->oc}, bd = {c->oc}, wd;
  int wr = 0;
  if (!g1) wd[wr++] = c->groups;
  wd[wr++] = c->oc / c->groups;
  wd[wr++] = c->ic / c->groups;
  for (int i = 0; i < c->nsp; i++) {
    sd[2 + i] = c->in[i];
    dd[2 + i] = c->out[i];
    wd[wr++] = c->k[i];
  }
  if (md_pair(&e->src_md, &e->src_any, r, sd, act[c->nsp - 1]) ||
      md_pair(&e->dst_md, &e->dst_any, r, dd, act[c->nsp - 1]) ||
      md_pair(&e->wei_md, &e->wei_any, wr, wd, g1 ? w1[c->nsp - 1] : wg[c->nsp - 1]) ||
      dnnl_memory_desc_init_by_tag(&e->bias_md, 1, bd, dnnl_f32, dnnl_x))
    return;
  if (fwd_init(e, &e->fwd_train, dnnl_forward_training)) return;
  e->ok = 1;
}

static entry_t *lookup(syno_dnnl_conv_t *d, const syno_dnnl_geo_t *c) {
  for (int i = 0; i < NCACHE; i++)
    if (d->ent[i].geo.n && !memcmp(&d->ent[i].geo, c, sizeof *c)) return &d->ent[i];
  entry_t *e = &d->ent[d->next];
  d->next = (d->next + 1) % NCACHE;
  entry_clear(e);
  entry_init(e, c);
  return e;
}

int syno_dnnl_conv_supported(syno_dnnl_conv_t *d, const syno_dnnl_geo_t *c) { return d && lookup(d, c)->ok; }

int syno_dnnl_conv_forward(syno_dnnl_conv_t *d, const syno_dnnl_geo_t *c, const float *src, const float *wei,
                           const float *bias, float *dst, int train, uint64_t hold) {
  entry_t *e = lookup(d, c);
  if (!e->ok) return SYNO_DNNL_EINVAL;
  op_t *o = &e->fwd_train;
  if (!train) {
    if (!e->fwd_inf.prim) {
      op_clear(&e->fwd_inf);
      if (fwd_init(e, &e->fwd_inf, dnnl_forward_inference)) return SYNO_DNNL_EINVAL;
    }
    o = &e->fwd_inf;
  }
  void *ptr[4] = {(void *)src, (void *)wei, dst, (void *)bias};
  return op_exec(d, o, ptr, train ? 0 : hold);
}

/* Grows one of the scratch buffers to n floats. */
static int scratch(float **buf, int64_t *len, int64_t n) {
  if (*len >= n) return 0;
  float *p = realloc(*buf, (size_t)n * sizeof(float));
  if (!p) return -1;
  *buf = p;
  *len = n;
  return 0;
}

int syno_dnnl_conv_backward(syno_dnnl_conv_t *d, const syno_dnnl_geo_t *c, const float *src, const float *ddst,
                            const float *wei, float *dwei, float *dbias, float *dsrc, int accumulate) {
  entry_t *e = lookup(d, c);
  if (!e->ok || c->relu) return SYNO_DNNL_EINVAL;
  geo_t g;
  make_geo(c, &g);
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
        op_init(&e->bwd_w, &cd, NULL, e->fwd_train.pd, b, c->bias ? 4 : 3))
      return SYNO_DNNL_EINVAL;
  }
  if (dsrc && !e->bwd_data.prim) {
    dnnl_convolution_desc_t cd;
    bind_t b[3] = {
        {DNNL_ARG_DIFF_DST, &e->dst_md, 0}, {DNNL_ARG_WEIGHTS, &e->wei_md, 0}, {DNNL_ARG_DIFF_SRC, &e->src_md, 1}};
    op_clear(&e->bwd_data);
    if (dnnl_dilated_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &e->src_any, &e->wei_any,
                                                         &e->dst_any, g.strides, g.dil, g.pl, g.pr) ||
        op_init(&e->bwd_data, &cd, NULL, e->fwd_train.pd, b, 3))
      return SYNO_DNNL_EINVAL;
  }
  int64_t nw = c->oc * (c->ic / c->groups);
  for (int i = 0; i < c->nsp; i++) nw *= c->k[i];
  float *dw = dwei, *db = dbias;
  if (accumulate) {
    if (scratch(&d->dw, &d->dw_len, nw) || (c->bias && scratch(&d->db, &d->db_len, c->oc))) return SYNO_DNNL_ENOMEM;
    dw = d->dw;
    db = d->db;
  }
  void *wptr[4] = {(void *)src, (void *)ddst, dw, db};
  int rc = op_exec(d, &e->bwd_w, wptr, 0);
  if (rc) return rc;
  if (accumulate) {
    for (int64_t i = 0; i < nw; i++) dwei[i] += d->dw[i];
    if (c->bias)
      for (int64_t k = 0; k < c->oc; k++) dbias[k] += d->db[k];
  }
  if (!dsrc) return SYNO_DNNL_OK;
  void *dptr[3] = {(void *)ddst, (void *)wei, dsrc};
  return op_exec(d, &e->bwd_data, dptr, 0);
}
