/* Rule C4: the weights of an operator commute.
 *
 * A finished operator computes
 *
 *   out[i] = sum over the reductions r of  in[e_0(i, r)] * w1[e_1(i, r)] * w2[...] ...
 *
 * where each axis expression e is the dim's expression with its Shares
 * dropped: a Share only says that its data side, its weight axis and its
 * output carry one index. So the input's axis expressions, in order, and the
 * weights as a multiset of sets of axis expressions determine the function
 * (up to the layout and numbering of the learned weights). Two contractions
 * in a row that trade their dims (`w1[r0, D1, u] w2[D2, u]` and `w1[D2, u]
 * w2[r0, D1, u]`), or that stack on one dim in either order, are two paths
 * to one such function, and path rules cannot tell them apart without
 * breaking others (R3 judges a Split by the nearest Share, which the order
 * changes). So the space keeps the first spelling it finalizes of each
 * function: a finalization whose function key (below) was met before, and
 * whose tensors match that one's expression by expression, is dropped.
 *
 * The key doubles as the final's hash (final_t.hash), so the walks'
 * partition between threads (hash % parts) sends every spelling of a
 * function to the same thread. */
#include <stdlib.h>
#include <string.h>

#include "space_internal.h"

/* The dim below any Shares stacked under d: the same index. */
static syno_dim_t unshared(const syno_graph_t *g, syno_dim_t d) {
  const syno_prim_t *p;
  while ((p = syno_graph_below(g, d)) && p->kind == SYNO_PRIM_SHARE) d = p->out[0];
  return d;
}

static syno_dim_t renamed(const ren_t *r, syno_dim_t d) {
  for (int i = 0; i < r->m; i++)
    if (r->from[i] == d) return r->to[i];
  return d;
}

/* The structural hash of d's expression with every Share dropped and the
 * reductions renamed by r. */
static uint64_t expr_hash(const syno_graph_t *g, syno_dim_t d, const ren_t *r) {
  d = unshared(g, d);
  const syno_prim_t *p = syno_graph_below(g, d);
  if (!p) return syno_graph_dim(g, renamed(r, d))->hash;
  uint64_t h = syno_hash_mix(0x7f4a7c15u + p->kind, syno_size_hash(p->param));
  for (int i = 0; i < p->n_out; i++) h = syno_hash_mix(h, expr_hash(g, p->out[i], r) ^ ((uint64_t)i << 40));
  return syno_hash_mix(h, (uint64_t)syno_graph_dim(g, d)->slot + 1);
}

/* Whether a under ra and b under rb have the same expression with Shares
 * dropped. */
static bool expr_eq(const syno_graph_t *g, syno_dim_t a, const ren_t *ra, syno_dim_t b, const ren_t *rb) {
  a = unshared(g, a);
  b = unshared(g, b);
  const syno_prim_t *p = syno_graph_below(g, a), *q = syno_graph_below(g, b);
  if (!p || !q) return !p && !q && renamed(ra, a) == renamed(rb, b);
  if (p->kind != q->kind || !syno_size_eq(p->param, q->param) || p->n_out != q->n_out ||
      syno_graph_dim(g, a)->slot != syno_graph_dim(g, b)->slot)
    return false;
  for (int i = 0; i < p->n_out; i++)
    if (!expr_eq(g, p->out[i], ra, q->out[i], rb)) return false;
  return true;
}

/* A weight's axes in expression-hash order, with the hashes. */
typedef struct {
  int rank;
  uint64_t key;
  uint64_t h[SYNO_MAX_RANK];
  syno_dim_t axis[SYNO_MAX_RANK];
} weight_t;

static int cmp_weight(const void *a, const void *b) {
  const weight_t *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key;
}

/* The weights of f under the renaming r in key order, each with its axes in
 * hash order. */
static void weights_of(const syno_space_t *s, const final_t *f, const ren_t *r, weight_t *w) {
  for (int t = 1; t < f->n_tensors; t++) {
    weight_t *x = &w[t - 1];
    x->rank = f->rank[t];
    for (int i = 0; i < x->rank; i++) {
      x->axis[i] = f->axes[t][i];
      x->h[i] = expr_hash(s->g, x->axis[i], r);
    }
    for (int i = 1; i < x->rank; i++)
      for (int j = i; j > 0 && x->h[j - 1] > x->h[j]; j--) {
        uint64_t th = x->h[j];
        syno_dim_t ta = x->axis[j];
        x->h[j] = x->h[j - 1], x->axis[j] = x->axis[j - 1];
        x->h[j - 1] = th, x->axis[j - 1] = ta;
      }
    x->key = 0x243f6a8885a308d3ull + (uint64_t)x->rank;
    for (int i = 0; i < x->rank; i++) x->key = syno_hash_mix(x->key, x->h[i]);
  }
  qsort(w, (size_t)(f->n_tensors - 1), sizeof *w, cmp_weight);
}

static uint64_t key_under(const syno_space_t *s, const final_t *f, const ren_t *r) {
  uint64_t h = 0xcbf29ce484222325ull + (uint64_t)f->n_tensors;
  for (int i = 0; i < f->rank[0]; i++) h = syno_hash_mix(h, expr_hash(s->g, f->axes[0][i], r));
  weight_t w[SYNO_MAX_TENSORS - 1];
  weights_of(s, f, r, w);
  for (int t = 0; t + 1 < f->n_tensors; t++) h = syno_hash_mix(h, w[t].key);
  /* The finalizer's first round only: the key chooses the thread of a
   * partitioned walk (hash % parts), so it stays what it has been. */
  return syno_hash_fmix64_half(h);
}

/* The renamings of f's equal-domain reductions (rule U4 renames a node's
 * interface, not the spellings two nodes give one function). */
static void twins_of(const syno_space_t *s, const final_t *f, twins_t *t) {
  syno_dim_t all[SYNO_MAX_TENSORS * SYNO_MAX_RANK + SYNO_MAX_RANK];
  int n = 0;
  for (int k = 0; k < f->n_tensors; k++)
    for (int i = 0; i < f->rank[k]; i++) all[n++] = f->axes[k][i];
  for (int i = 0; i < f->n_exp; i++) all[n++] = f->exp[i];
  space_twins_find(s, all, n, t);
}

/* The least key over the renamings, and the renaming that gives it (to). */
static uint64_t least_key(const syno_space_t *s, const final_t *f, const twins_t *t, syno_dim_t *to) {
  uint64_t best = 0;
  syno_dim_t cur[SYNO_MAX_REDUCTIONS];
  for (int k = 0; k < t->total; k++) {
    space_twins_renaming(t, k, cur);
    ren_t r = {t->m, t->from, cur};
    uint64_t h = key_under(s, f, &r);
    if (k == 0 || h < best) {
      best = h;
      memcpy(to, cur, sizeof cur);
    }
  }
  return best;
}

uint64_t space_final_key(const syno_space_t *s, const final_t *f) {
  twins_t t;
  syno_dim_t to[SYNO_MAX_REDUCTIONS];
  twins_of(s, f, &t);
  return least_key(s, f, &t, to);
}

/* Whether a and b compute one function: under the renamings that give their
 * keys, the same input expressions in order, and weights that pair up axis
 * by axis. Ties (of keys between renamings, of hashes between weights or
 * axes) are resolved one way only, so they can only make this answer false
 * (both are kept), never wrongly true. */
static bool same_function(const syno_space_t *s, const final_t *a, const final_t *b) {
  if (a->n_tensors != b->n_tensors || a->rank[0] != b->rank[0]) return false;
  twins_t ta, tb;
  syno_dim_t toa[SYNO_MAX_REDUCTIONS], tob[SYNO_MAX_REDUCTIONS];
  twins_of(s, a, &ta);
  twins_of(s, b, &tb);
  least_key(s, a, &ta, toa);
  least_key(s, b, &tb, tob);
  ren_t ra = {ta.m, ta.from, toa}, rb = {tb.m, tb.from, tob};
  for (int i = 0; i < a->rank[0]; i++)
    if (!expr_eq(s->g, a->axes[0][i], &ra, b->axes[0][i], &rb)) return false;
  weight_t wa[SYNO_MAX_TENSORS - 1], wb[SYNO_MAX_TENSORS - 1];
  weights_of(s, a, &ra, wa);
  weights_of(s, b, &rb, wb);
  for (int t = 0; t + 1 < a->n_tensors; t++) {
    if (wa[t].rank != wb[t].rank) return false;
    for (int i = 0; i < wa[t].rank; i++)
      if (!expr_eq(s->g, wa[t].axis[i], &ra, wb[t].axis[i], &rb)) return false;
  }
  return true;
}

/* A table probe for the final f (rule C4). */
typedef struct {
  const syno_space_t *s;
  const final_t *f;
} probe_t;

static bool same_final(const void *ctx, uint32_t id) {
  const probe_t *p = ctx;
  const final_t *g = &p->s->finals[id - 1];
  return g->hash == p->f->hash && same_function(p->s, g, p->f);
}

int space_final_seen(syno_space_t *s, const final_t *f, bool *seen, syno_error_t *err) {
  probe_t probe = {s, f};
  *seen = syno_table_find(&s->fkeys, f->hash, same_final, &probe) != 0;
  if (*seen) return 0;
  /* f is about to become s->finals[s->n_finals]. */
  if (syno_table_insert(&s->fkeys, f->hash, (uint32_t)s->n_finals + 1)) return syno_error_set(err, "out of memory");
  return 0;
}
