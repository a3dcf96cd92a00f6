/* Rule U4: equal-domain reductions are interchangeable.
 *
 * Two reductions of the same type and domain differ only in their
 * multiplicity, a label: renaming them (r0 <-> r1) turns an operator into
 * the same function with its weights' axes permuted. Without this rule the
 * space holds both spellings whenever the two are used differently, e.g.
 * unfold(unfold(i2, share(r0, 1)), share(r1, 1)) and the same with r0 and r1
 * swapped (144 of the 30,476 operators of conv2d at depth 7).
 *
 * The renamings of a node's reductions (all permutations within each class
 * of equal reductions) form a group G. Every generator, the shape distance
 * and the limits depend only on sizes and structure, so the subtree below a
 * renamed interface is the renamed subtree. The space therefore keeps one
 * interface per G-orbit: a new normal-stage interface is replaced by its
 * canonical renaming, the one whose sorted dim hashes (then expansion hashes)
 * are least. Equal orbits give equal canonical interfaces, so the two
 * spellings meet in one node. A node whose reductions are all different
 * (no reduction with multiplicity >= 1) is left alone at no cost.
 *
 * The exception to "depends only on structure" is rule C2, which orders
 * independent contractions by their leaders' hashes; the tests compare the
 * operators' normal forms with U4 on and off on spaces with two weights. */
#include <stdlib.h>
#include <string.h>

#include "space_internal.h"

#define MAX_PERMS 120 /* 5!: at most five reductions are in one class in practice */

/* Collects the reduction leaves below d (each once). */
static void collect_reductions(const syno_graph_t *g, syno_dim_t d, syno_dim_t *red, int *n) {
  const syno_dimension_t *dim = syno_graph_dim(g, d);
  if (dim->kind == SYNO_DIM_REDUCE) {
    for (int i = 0; i < *n; i++)
      if (red[i] == d) return;
    if (*n < SYNO_MAX_REDUCTIONS) red[(*n)++] = d;
    return;
  }
  const syno_prim_t *p = syno_graph_below(g, d);
  if (!p) return;
  for (int i = 0; i < p->n_out; i++) collect_reductions(g, p->out[i], red, n);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The renaming's key: the hashes of the renamed dims all[0..n_dims) and of
 * the renamed expansions all[n_dims..n), each part sorted. */
static int renamed_key(syno_space_t *s, const syno_dim_t *all, int n_dims, int n, const ren_t *r, uint64_t *key,
                       syno_error_t *err) {
  for (int i = 0; i < n; i++)
    if (syno_graph_relabel(s->g, all[i], r->m, r->from, r->to, NULL, &key[i], err)) return -1;
  qsort(key, (size_t)n_dims, sizeof *key, cmp_u64);
  qsort(key + n_dims, (size_t)(n - n_dims), sizeof *key, cmp_u64);
  return 0;
}

/* The k-th permutation of 0..n-1 (factorial number system). */
static void nth_perm(int n, int k, int *out) {
  int pool[SYNO_MAX_REDUCTIONS];
  for (int i = 0; i < n; i++) pool[i] = i;
  for (int i = 0, m = n; i < n; i++, m--) {
    int f = 1;
    for (int j = 2; j < m; j++) f *= j;
    int at = k / f;
    k %= f;
    out[i] = pool[at];
    memmove(pool + at, pool + at + 1, sizeof *pool * (size_t)(m - at - 1));
  }
}

void space_twins_find(const syno_space_t *s, const syno_dim_t *dims, int n, twins_t *t) {
  syno_dim_t red[SYNO_MAX_REDUCTIONS];
  int n_red = 0;
  for (int i = 0; i < n; i++) collect_reductions(s->g, dims[i], red, &n_red);
  /* The classes of equal reductions, each in multiplicity order. */
  int n_cls = 0, cls_n[SYNO_MAX_REDUCTIONS];
  syno_dim_t cls[SYNO_MAX_REDUCTIONS][SYNO_MAX_REDUCTIONS];
  for (int i = 0; i < n_red; i++) {
    const syno_dimension_t *a = syno_graph_dim(s->g, red[i]);
    int c = 0;
    while (c < n_cls) {
      const syno_dimension_t *b = syno_graph_dim(s->g, cls[c][0]);
      if (a->reduce == b->reduce && syno_size_eq(a->size, b->size)) break;
      c++;
    }
    if (c == n_cls) cls_n[n_cls++] = 0;
    int j = cls_n[c]++;
    while (j > 0 && syno_graph_dim(s->g, cls[c][j - 1])->index > a->index) {
      cls[c][j] = cls[c][j - 1];
      j--;
    }
    cls[c][j] = red[i];
  }
  /* Only the classes with two or more members rename anything. */
  memset(t, 0, sizeof *t);
  t->total = 1;
  for (int c = 0; c < n_cls; c++) {
    if (cls_n[c] < 2) continue;
    int fact = 1;
    for (int j = 2; j <= cls_n[c]; j++) fact *= j;
    if (t->total * fact > MAX_PERMS) break; /* more renamings than we try: fewer orbits merge, none is lost */
    t->size[t->n_cls] = cls_n[c];
    t->radix[t->n_cls++] = fact;
    t->total *= fact;
    for (int j = 0; j < cls_n[c]; j++) t->from[t->m++] = cls[c][j];
  }
}

void space_twins_renaming(const twins_t *t, int k, syno_dim_t *to) {
  for (int c = 0, at = 0; c < t->n_cls; at += t->size[c], c++) {
    int perm[SYNO_MAX_REDUCTIONS];
    nth_perm(t->size[c], k % t->radix[c], perm);
    k /= t->radix[c];
    for (int j = 0; j < t->size[c]; j++) to[at + j] = t->from[at + perm[j]];
  }
}

int space_canon_twins(syno_space_t *s, iface_t *f, syno_error_t *err) {
  syno_dim_t all[2 * SPACE_MAX_IFACE];
  int n = f->n_dims + f->n_exp;
  memcpy(all, f->dims, sizeof *all * (size_t)f->n_dims);
  memcpy(all + f->n_dims, f->exp, sizeof *all * (size_t)f->n_exp);
  twins_t t;
  space_twins_find(s, all, n, &t);
  if (t.total == 1) return 0;
  uint64_t best[2 * SPACE_MAX_IFACE], key[2 * SPACE_MAX_IFACE];
  for (int i = 0; i < n; i++) best[i] = syno_graph_dim(s->g, all[i])->hash; /* the identity's key */
  qsort(best, (size_t)f->n_dims, sizeof *best, cmp_u64);
  qsort(best + f->n_dims, (size_t)f->n_exp, sizeof *best, cmp_u64);
  syno_dim_t to[SYNO_MAX_REDUCTIONS], best_to[SYNO_MAX_REDUCTIONS];
  bool found = false;
  for (int k = 1; k < t.total; k++) {
    space_twins_renaming(&t, k, to);
    ren_t r = {t.m, t.from, to};
    if (renamed_key(s, all, f->n_dims, n, &r, key, err)) return -1;
    int cmp = 0;
    for (int i = 0; i < n && !cmp; i++) cmp = key[i] < best[i] ? -1 : key[i] > best[i];
    if (cmp < 0) {
      memcpy(best, key, sizeof *key * (size_t)n);
      memcpy(best_to, to, sizeof to);
      found = true;
    }
  }
  if (!found) return 0;
  for (int i = 0; i < f->n_dims; i++)
    if (syno_graph_relabel(s->g, f->dims[i], t.m, t.from, best_to, &f->dims[i], NULL, err)) return -1;
  for (int i = 0; i < f->n_exp; i++)
    if (syno_graph_relabel(s->g, f->exp[i], t.m, t.from, best_to, &f->exp[i], NULL, err) ||
        syno_graph_expand(s->g, f->exp[i], NULL, err))
      return -1;
  return 0;
}
