/* The hash-consed store of dims and primitives (docs/semantics.md §2.3).
 *
 * Leaves (iterators, reductions) and primitives each live in one growing
 * array and one open-addressing table keyed by their identity. A primitive's
 * input dims are created together with it, so they need no table of their
 * own: the primitive identifies them. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "syno/alloc.h"
#include "syno/graph.h"
#include "syno/grow.h"

struct syno_graph {
  syno_vars_t vars;
  syno_dimension_t *dims;
  syno_color_t *colors; /* parallel to dims */
  uint32_t n_dims;
  size_t cap_dims;
  syno_prim_t *prims;
  uint32_t n_prims;
  size_t cap_prims;
  syno_table_t leaf_table, prim_table; /* dim ids of leaves; primitive ids */
};

/* A primitive's hash: its kind and parameters, then each output's hash
 * (prim_hash_out); input `slot`'s dim hashes as input_hash. */
static uint64_t prim_hash_start(const syno_prim_t *p) {
  return syno_hash_mix(syno_hash_mix(0xabcdef12u + p->kind, syno_size_hash(p->param)), (uint64_t)p->weight);
}
static uint64_t prim_hash_out(uint64_t h, int i, uint64_t out_hash) {
  return syno_hash_mix(h, out_hash ^ ((uint64_t)i << 40));
}
static uint64_t input_hash(uint64_t prim_hash, int slot) { return syno_hash_mix(prim_hash, (uint64_t)slot + 1); }

syno_graph_t *syno_graph_new(const syno_vars_t *vars) {
  syno_graph_t *g = syno_calloc(1, sizeof *g);
  if (!g) return NULL;
  g->vars = *vars;
  g->cap_dims = 256;
  g->cap_prims = 256;
  g->dims = syno_calloc(g->cap_dims, sizeof *g->dims);
  g->colors = syno_calloc(g->cap_dims, sizeof *g->colors);
  g->prims = syno_calloc(g->cap_prims, sizeof *g->prims);
  if (!g->dims || !g->colors || !g->prims) {
    syno_graph_free(g);
    return NULL;
  }
  g->n_dims = 1; /* id 0 is "no dim" */
  g->n_prims = 1;
  return g;
}

void syno_graph_free(syno_graph_t *g) {
  if (!g) return;
  syno_free(g->dims);
  syno_free(g->colors);
  syno_free(g->prims);
  syno_table_free(&g->leaf_table);
  syno_table_free(&g->prim_table);
  syno_free(g);
}

void syno_graph_mark(const syno_graph_t *g, syno_graph_mark_t *m) {
  m->n_dims = g->n_dims;
  m->n_prims = g->n_prims;
}

void syno_graph_rollback(syno_graph_t *g, const syno_graph_mark_t *m) {
  if (m->n_dims >= g->n_dims && m->n_prims >= g->n_prims) return;
  g->n_dims = m->n_dims;
  g->n_prims = m->n_prims;
  syno_table_truncate(&g->leaf_table, m->n_dims);
  syno_table_truncate(&g->prim_table, m->n_prims);
}

const syno_vars_t *syno_graph_vars(const syno_graph_t *g) { return &g->vars; }
uint32_t syno_graph_num_dims(const syno_graph_t *g) { return g->n_dims - 1; }
uint32_t syno_graph_num_prims(const syno_graph_t *g) { return g->n_prims - 1; }

const syno_dimension_t *syno_graph_dim(const syno_graph_t *g, syno_dim_t d) {
  return d && d < g->n_dims ? &g->dims[d] : NULL;
}

const syno_prim_t *syno_graph_prim(const syno_graph_t *g, uint32_t p) {
  return p && p < g->n_prims ? &g->prims[p] : NULL;
}

const syno_prim_t *syno_graph_below(const syno_graph_t *g, syno_dim_t d) {
  const syno_dimension_t *dim = syno_graph_dim(g, d);
  return dim && dim->kind == SYNO_DIM_PRIM_INPUT ? &g->prims[dim->prim] : NULL;
}

const char *syno_prim_name(syno_prim_kind_t k) {
  static const char *names[] = {"split", "merge", "shift", "stride", "unfold", "share", "expand"};
  return k < SYNO_PRIM_KINDS ? names[k] : "?";
}

const syno_color_t *syno_graph_color(const syno_graph_t *g, syno_dim_t d) {
  return d && d < g->n_dims ? &g->colors[d] : NULL;
}

bool syno_graph_adjacent(const syno_graph_t *g, syno_dim_t a, syno_dim_t b) {
  const syno_color_t *x = &g->colors[a], *y = &g->colors[b];
  for (int l = 0; l < SYNO_MAX_TENSORS; l++)
    if (x->block[l].right != 0 && x->block[l].right == y->block[l].left) return true;
  return false;
}

static syno_dim_t new_dim(syno_graph_t *g, const syno_dimension_t *d, const syno_color_t *c) {
  if (g->n_dims == g->cap_dims) {
    size_t cap = g->cap_dims;
    if (syno_grow((void **)&g->dims, &cap, (size_t)g->n_dims + 1, sizeof *g->dims)) return 0;
    cap = g->cap_dims;
    if (syno_grow((void **)&g->colors, &cap, (size_t)g->n_dims + 1, sizeof *g->colors)) return 0;
    g->cap_dims = cap;
  }
  g->dims[g->n_dims] = *d;
  g->colors[g->n_dims] = *c;
  return g->n_dims++;
}

/* Leaves (docs/semantics.md §2.5): an iterator has height 0 and is unordered only when its
 * output axis is; a reduction has height 1, is its own unordered scope and
 * ends up reduced. */
static syno_color_t leaf_color(const syno_dimension_t *d, uint32_t id) {
  syno_color_t c;
  memset(&c, 0, sizeof c);
  if (d->kind == SYNO_DIM_ITERATOR) {
    c.unordered_scope = d->unordered ? 1 + d->index : 0;
  } else {
    c.height = 1;
    c.ends_up_reduce = true;
    c.unordered_scope = 1000 + (int)id;
    c.block[0].left = c.block[0].right = -1;
  }
  return c;
}

/* A graph with no binding is symbolic (syno_slotop_parse: an operator that each slot binds
 * when it compiles it). It checks what holds under every binding: the sizes of coefficients
 * alone, whose values are fixed (the variables' default values); the rest is left to the
 * bound graphs. 1 and *out for such a size, else 0. */
static int symbolic_value(const syno_graph_t *g, syno_size_t s, int64_t *out) {
  if (g->vars.nbind > 0 || syno_size_trait(s) != SYNO_TRAIT_COEFFICIENT) return 0;
  syno_vars_t v = g->vars;
  syno_error_t e;
  return syno_vars_bind(&v, "", &e) == 0 && syno_size_eval(&v, s, 0, out, &e) == 0;
}

/* Whether a stride below an unfold's position side is absorbed: with window
 * k >= 2s-1 the windows of consecutive strided positions overlap and, with
 * the centred zero padding, reach both ends, so every input element is read
 * (the standard k x k stride-s convolution). An extension of the original, which
 * absorbs strides only on the window side (docs/semantics.md §3.5, §11). */
static bool stride_absorbed(const syno_graph_t *g, const syno_prim_t *unfold) {
  const syno_dimension_t *pos = &g->dims[unfold->out[0]];
  if (pos->kind != SYNO_DIM_PRIM_INPUT) return false;
  const syno_prim_t *st = &g->prims[pos->prim];
  if (st->kind != SYNO_PRIM_STRIDE || g->colors[st->out[0]].discarding) return false;
  syno_size_t k = g->dims[unfold->out[1]].size;
  if (g->vars.nbind == 0) {
    /* symbolic: refused only when the coefficients alone decide it */
    int64_t kv, sv;
    return !(symbolic_value(g, k, &kv) && symbolic_value(g, st->param, &sv)) || kv >= 2 * sv - 1;
  }
  for (int b = 0; b < g->vars.nbind; b++)
    if (syno_size_value(&g->vars, k, b) < 2 * syno_size_value(&g->vars, st->param, b) - 1) return false;
  return true;
}

/* The colour of input `slot` of primitive p (id), from its outputs. */
static syno_color_t input_color(const syno_graph_t *g, const syno_prim_t *p, uint32_t id, int slot) {
  const syno_color_t *o0 = &g->colors[p->out[0]], *o1 = p->n_out > 1 ? &g->colors[p->out[1]] : NULL;
  syno_color_t c = *o0;
  c.height = o0->height + 1;
  switch (p->kind) {
    case SYNO_PRIM_SPLIT:
    case SYNO_PRIM_UNFOLD:
      c.height = (o0->height > o1->height ? o0->height : o1->height) + 1;
      c.weights_below = o0->weights_below | o1->weights_below;
      c.ends_up_reduce = o0->ends_up_reduce && o1->ends_up_reduce;
      c.unordered_scope = o0->unordered_scope == o1->unordered_scope ? o0->unordered_scope : 0;
      if (p->kind == SYNO_PRIM_SPLIT) {
        c.discarding = o0->discarding || o1->discarding;
        for (int l = 0; l < SYNO_MAX_TENSORS; l++) {
          c.block[l].left = o0->block[l].left;
          c.block[l].right = o1->block[l].right;
        }
      } else {
        /* The window side's discarding is absorbed (a dilated window). */
        c.discarding = o0->discarding && !stride_absorbed(g, p);
        memset(c.block, 0, sizeof c.block);
      }
      break;
    case SYNO_PRIM_MERGE:
      if (slot == 0)
        c.block[0].right = (int32_t)id;
      else
        c.block[0].left = (int32_t)id;
      break;
    case SYNO_PRIM_SHARE:
      c.weights_below |= (uint8_t)(1u << p->weight);
      c.block[p->weight] = o0->block[0];
      memset(&c.block[0], 0, sizeof c.block[0]);
      break;
    case SYNO_PRIM_STRIDE:
      c.discarding = true;
      memset(c.block, 0, sizeof c.block);
      break;
    default: /* Shift */ memset(c.block, 0, sizeof c.block); break;
  }
  return c;
}

static bool leaf_equal(const syno_dimension_t *a, const syno_dimension_t *b) {
  if (a->kind != b->kind || !syno_size_eq(a->size, b->size)) return false;
  if (a->kind == SYNO_DIM_ITERATOR) return a->index == b->index && a->unordered == b->unordered;
  return a->reduce == b->reduce && a->index == b->index;
}

/* What a table lookup compares candidates against. */
typedef struct {
  const syno_graph_t *g;
  const void *key;
} probe_t;

static bool leaf_eq(const void *ctx, uint32_t id) {
  const probe_t *p = ctx;
  return leaf_equal(&p->g->dims[id], p->key);
}

static bool prim_eq(const void *ctx, uint32_t id) {
  const probe_t *pr = ctx;
  const syno_prim_t *p = &pr->g->prims[id], *key = pr->key;
  return p->kind == key->kind && p->weight == key->weight && syno_size_eq(p->param, key->param) &&
         p->out[0] == key->out[0] && p->out[1] == key->out[1];
}

static int intern_leaf(syno_graph_t *g, syno_dimension_t *key, syno_dim_t *out, syno_error_t *err) {
  uint64_t h = syno_hash_mix(key->kind * 0x51ed27u, syno_size_hash(key->size));
  h = syno_hash_mix(syno_hash_mix(h, (uint64_t)key->index), key->unordered);
  key->hash = syno_hash_mix(h, key->reduce);
  uint64_t th = syno_hash_fmix64(key->hash);
  probe_t probe = {g, key};
  uint32_t e = syno_table_find(&g->leaf_table, th, leaf_eq, &probe);
  if (e) {
    *out = e;
    return 0;
  }
  syno_color_t color = leaf_color(key, g->n_dims);
  syno_dim_t id = new_dim(g, key, &color);
  if (!id) return syno_error_set(err, "out of memory");
  if (syno_table_insert(&g->leaf_table, th, id)) {
    g->n_dims--; /* not interned: forget it */
    return syno_error_set(err, "out of memory");
  }
  *out = id;
  return 0;
}

/* A dim size must be a legal size and, under every binding, a positive
 * integer (exact division). */
static int check_size(const syno_graph_t *g, syno_size_t s, const char *what, syno_error_t *err) {
  char buf[128];
  syno_trait_t t = syno_size_trait(s);
  if (t != SYNO_TRAIT_GENERAL && t != SYNO_TRAIT_COEFFICIENT) {
    syno_size_print(&g->vars, s, buf, sizeof buf);
    return syno_error_set(
        err, "%s has size %s, which is not a legal size (%s)", what, buf,
        t == SYNO_TRAIT_ONE ? "it is 1" : "a primary variable has a negative power or it is a pure fraction");
  }
  for (int b = 0; b < g->vars.nbind; b++) {
    int64_t num, den;
    if (syno_size_eval_frac(&g->vars, s, b, &num, &den, err)) return syno_error_prefix(err, "%s", what);
    if (den != 1) {
      char bb[256];
      syno_size_print(&g->vars, s, buf, sizeof buf);
      syno_vars_print_binding(&g->vars, b, bb, sizeof bb);
      return syno_error_set(err, "%s has size %s = %lld/%lld, which does not divide under %s", what, buf,
                            (long long)num, (long long)den, bb);
    }
  }
  return 0;
}

int syno_graph_iterator(syno_graph_t *g, int index, syno_size_t size, bool unordered, syno_dim_t *out,
                        syno_error_t *err) {
  if (index < 0 || index >= SYNO_MAX_RANK)
    return syno_error_set(err, "output axis %d out of range (at most %d axes)", index, SYNO_MAX_RANK);
  if (check_size(g, size, "output axis", err)) return -1;
  syno_dimension_t key = {.kind = SYNO_DIM_ITERATOR, .size = size, .index = index, .unordered = unordered};
  return intern_leaf(g, &key, out, err);
}

int syno_graph_reduce(syno_graph_t *g, syno_size_t domain, syno_reduce_type_t type, int multiplicity, syno_dim_t *out,
                      syno_error_t *err) {
  if (multiplicity < 0 || multiplicity >= SYNO_MAX_REDUCTIONS)
    return syno_error_set(err, "reduction multiplicity %d out of range", multiplicity);
  if (check_size(g, domain, "reduction", err)) return -1;
  syno_dimension_t key = {.kind = SYNO_DIM_REDUCE, .size = domain, .reduce = type, .index = multiplicity};
  return intern_leaf(g, &key, out, err);
}

/* Interns a primitive given its kind, parameters and outputs; on first sight
 * creates its input dims with the given sizes. */
static int intern_prim(syno_graph_t *g, syno_prim_t *key, const syno_size_t *in_sizes, uint32_t *id_out,
                       syno_error_t *err) {
  uint64_t h = prim_hash_start(key);
  for (int i = 0; i < key->n_out; i++) h = prim_hash_out(h, i, g->dims[key->out[i]].hash);
  key->hash = h;
  uint64_t th = syno_hash_fmix64(h);
  probe_t probe = {g, key};
  uint32_t e = syno_table_find(&g->prim_table, th, prim_eq, &probe);
  if (e) {
    *id_out = e;
    return 0;
  }
  if (syno_grow((void **)&g->prims, &g->cap_prims, (size_t)g->n_prims + 1, sizeof *g->prims))
    return syno_error_set(err, "out of memory");
  /* The primitive and its input dims count once all of it is in: a failure
   * leaves the graph as it was. */
  uint32_t id = g->n_prims, n_dims = g->n_dims;
  g->prims[id] = *key;
  for (int i = 0; i < key->n_in; i++) {
    syno_dimension_t d = {
        .kind = SYNO_DIM_PRIM_INPUT, .size = in_sizes[i], .prim = id, .slot = i, .hash = input_hash(h, i)};
    syno_color_t c = input_color(g, key, id, i);
    key->in[i] = new_dim(g, &d, &c);
    if (!key->in[i]) {
      g->n_dims = n_dims;
      return syno_error_set(err, "out of memory");
    }
    g->prims[id].in[i] = key->in[i];
  }
  if (syno_table_insert(&g->prim_table, th, id)) {
    g->n_dims = n_dims;
    return syno_error_set(err, "out of memory");
  }
  g->n_prims++;
  *id_out = id;
  return 0;
}

static int check_dim(const syno_graph_t *g, syno_dim_t d, const char *what, syno_error_t *err) {
  if (!syno_graph_dim(g, d)) return syno_error_set(err, "%s: no such dimension (#%u)", what, d);
  return 0;
}

static const char *print_size(const syno_graph_t *g, syno_size_t s, char *buf, size_t n) {
  syno_size_print(&g->vars, s, buf, n);
  return buf;
}

int syno_graph_split(syno_graph_t *g, syno_dim_t major, syno_dim_t minor, syno_dim_t *in, syno_error_t *err) {
  if (check_dim(g, major, "split", err) || check_dim(g, minor, "split", err)) return -1;
  if (major == minor) return syno_error_set(err, "split: the major and minor dims must differ");
  syno_size_t s = syno_size_mul(g->dims[major].size, g->dims[minor].size);
  if (check_size(g, s, "split input", err)) return -1;
  syno_prim_t key = {.kind = SYNO_PRIM_SPLIT, .n_out = 2, .n_in = 1, .out = {major, minor}};
  uint32_t id;
  if (intern_prim(g, &key, &s, &id, err)) return -1;
  *in = g->prims[id].in[0];
  return 0;
}

int syno_graph_merge(syno_graph_t *g, syno_dim_t out, syno_size_t block, syno_dim_t *major, syno_dim_t *minor,
                     syno_error_t *err) {
  if (check_dim(g, out, "merge", err)) return -1;
  syno_size_t sz[2] = {syno_size_div(g->dims[out].size, block), block};
  if (check_size(g, block, "merge block", err) || check_size(g, sz[0], "merge major input", err)) return -1;
  syno_prim_t key = {.kind = SYNO_PRIM_MERGE, .n_out = 1, .n_in = 2, .out = {out, 0}, .param = block};
  uint32_t id;
  if (intern_prim(g, &key, sz, &id, err)) return -1;
  *major = g->prims[id].in[0];
  *minor = g->prims[id].in[1];
  return 0;
}

int syno_graph_shift(syno_graph_t *g, syno_dim_t out, syno_dim_t *in, syno_error_t *err) {
  if (check_dim(g, out, "shift", err)) return -1;
  syno_prim_t key = {.kind = SYNO_PRIM_SHIFT, .n_out = 1, .n_in = 1, .out = {out, 0}};
  uint32_t id;
  if (intern_prim(g, &key, &g->dims[out].size, &id, err)) return -1;
  *in = g->prims[id].in[0];
  return 0;
}

int syno_graph_stride(syno_graph_t *g, syno_dim_t out, syno_size_t stride, syno_dim_t *in, syno_error_t *err) {
  if (check_dim(g, out, "stride", err) || check_size(g, stride, "stride factor", err)) return -1;
  syno_size_t s = syno_size_mul(g->dims[out].size, stride);
  if (check_size(g, s, "stride input", err)) return -1;
  syno_prim_t key = {.kind = SYNO_PRIM_STRIDE, .n_out = 1, .n_in = 1, .out = {out, 0}, .param = stride};
  uint32_t id;
  if (intern_prim(g, &key, &s, &id, err)) return -1;
  *in = g->prims[id].in[0];
  return 0;
}

/* An unfold's window k (value kv) must be odd and fit the unfolded dim n (value nv). */
static int check_window(const syno_graph_t *g, syno_size_t k, int64_t kv, syno_size_t n, int64_t nv,
                        syno_error_t *err) {
  char kb[128], nb[128];
  if (kv % 2 == 0)
    return syno_error_set(err, "unfold window %s = %lld is even (windows must be odd to be centred)",
                          print_size(g, k, kb, sizeof kb), (long long)kv);
  if (kv > nv)
    return syno_error_set(err, "unfold window %s = %lld is larger than the unfolded dim %s = %lld",
                          print_size(g, k, kb, sizeof kb), (long long)kv, print_size(g, n, nb, sizeof nb),
                          (long long)nv);
  return 0;
}

int syno_graph_unfold(syno_graph_t *g, syno_dim_t pos, syno_dim_t window, syno_dim_t *in, syno_error_t *err) {
  if (check_dim(g, pos, "unfold", err) || check_dim(g, window, "unfold", err)) return -1;
  if (pos == window) return syno_error_set(err, "unfold: the position and window dims must differ");
  syno_size_t k = g->dims[window].size, n = g->dims[pos].size;
  int64_t kv, nv;
  /* symbolic: a window of coefficients alone is checked, against the dim only if that is too */
  if (symbolic_value(g, k, &kv) && check_window(g, k, kv, n, symbolic_value(g, n, &nv) ? nv : kv, err)) return -1;
  for (int b = 0; b < g->vars.nbind; b++) {
    if (syno_size_eval(&g->vars, k, b, &kv, err) || syno_size_eval(&g->vars, n, b, &nv, err)) return -1;
    if (check_window(g, k, kv, n, nv, err)) return -1;
  }
  syno_prim_t key = {.kind = SYNO_PRIM_UNFOLD, .n_out = 2, .n_in = 1, .out = {pos, window}};
  uint32_t id;
  if (intern_prim(g, &key, &n, &id, err)) return -1;
  *in = g->prims[id].in[0];
  return 0;
}

int syno_graph_share(syno_graph_t *g, syno_dim_t out, int weight, syno_dim_t *data, syno_dim_t *wdim,
                     syno_error_t *err) {
  if (check_dim(g, out, "share", err)) return -1;
  if (weight < 1 || weight >= SYNO_MAX_TENSORS)
    return syno_error_set(err, "share: weight id %d out of range 1..%d", weight, SYNO_MAX_TENSORS - 1);
  const syno_prim_t *below = syno_graph_below(g, out);
  if (below && below->kind == SYNO_PRIM_SHARE && g->dims[out].slot == 1)
    return syno_error_set(err, "share: a weight axis cannot be shared again (weights are plain)");
  /* A chain of shares meets each weight once: w[x] * w[x] is one learned w'[x]. */
  for (syno_dim_t d = out; (below = syno_graph_below(g, d)) && below->kind == SYNO_PRIM_SHARE; d = below->out[0])
    if (below->weight == weight) return syno_error_set(err, "share: the dim is already shared with weight %d", weight);
  syno_size_t sz[2] = {g->dims[out].size, g->dims[out].size};
  syno_prim_t key = {.kind = SYNO_PRIM_SHARE, .n_out = 1, .n_in = 2, .out = {out, 0}, .weight = weight};
  uint32_t id;
  if (intern_prim(g, &key, sz, &id, err)) return -1;
  if (data) *data = g->prims[id].in[0];
  if (wdim) *wdim = g->prims[id].in[1];
  return 0;
}

int syno_graph_expand(syno_graph_t *g, syno_dim_t out, uint32_t *prim, syno_error_t *err) {
  if (check_dim(g, out, "expand", err)) return -1;
  const syno_prim_t *below = syno_graph_below(g, out);
  if (below && below->kind == SYNO_PRIM_SHARE && g->dims[out].slot == 1)
    return syno_error_set(err, "expand: a weight axis cannot be broadcast");
  syno_prim_t key = {.kind = SYNO_PRIM_EXPAND, .n_out = 1, .n_in = 0, .out = {out, 0}};
  uint32_t id;
  if (intern_prim(g, &key, NULL, &id, err)) return -1;
  if (prim) *prim = id;
  return 0;
}

/* One step of syno_graph_relabel: *changed tells whether d contains a
 * renamed leaf. */
static int relabel(syno_graph_t *g, syno_dim_t d, int n, const syno_dim_t *from, const syno_dim_t *to, bool build,
                   syno_dim_t *out, uint64_t *hash, bool *changed, syno_error_t *err) {
  const syno_dimension_t *dim = &g->dims[d];
  *out = d;
  *hash = dim->hash;
  *changed = false;
  if (dim->kind != SYNO_DIM_PRIM_INPUT) {
    for (int i = 0; i < n; i++)
      if (from[i] == d) {
        *out = to[i];
        *hash = g->dims[to[i]].hash;
        *changed = to[i] != d;
      }
    return 0;
  }
  syno_prim_t key = g->prims[dim->prim]; /* a copy: interning may move the array */
  int slot = dim->slot;
  syno_size_t in_sizes[2] = {g->dims[key.in[0]].size, key.n_in > 1 ? g->dims[key.in[1]].size : syno_size_one()};
  uint64_t h = prim_hash_start(&key);
  bool any = false;
  for (int i = 0; i < key.n_out; i++) {
    uint64_t ho;
    bool c;
    if (relabel(g, key.out[i], n, from, to, build, &key.out[i], &ho, &c, err)) return -1;
    h = prim_hash_out(h, i, ho);
    any = any || c;
  }
  if (!any) return 0;
  *changed = true;
  *hash = input_hash(h, slot);
  if (!build) return 0;
  uint32_t id;
  if (intern_prim(g, &key, in_sizes, &id, err)) return -1;
  *out = g->prims[id].in[slot];
  return 0;
}

int syno_graph_relabel(syno_graph_t *g, syno_dim_t d, int n, const syno_dim_t *from, const syno_dim_t *to,
                       syno_dim_t *out, uint64_t *hash, syno_error_t *err) {
  if (check_dim(g, d, "relabel", err)) return -1;
  syno_dim_t o;
  uint64_t h;
  bool changed;
  if (relabel(g, d, n, from, to, out != NULL, &o, &h, &changed, err)) return -1;
  if (out) *out = o;
  if (hash) *hash = h;
  return 0;
}

int syno_graph_contract(syno_graph_t *g, int weight, int n, const syno_dim_t *dims, const bool *expand,
                        syno_dim_t *data, syno_error_t *err) {
  if (n < 1) return syno_error_set(err, "contraction needs at least one dim");
  for (int i = 0; i < n; i++)
    for (int j = 0; j < i; j++)
      if (dims[i] == dims[j]) return syno_error_set(err, "contraction shares the same dim twice");
  for (int i = 0; i < n; i++) {
    if (syno_graph_share(g, dims[i], weight, &data[i], NULL, err)) return -1;
    if (expand[i] && syno_graph_expand(g, data[i], NULL, err)) return -1;
  }
  return 0;
}
