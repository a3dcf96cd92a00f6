/* The normal form up to a permutation of the input's unordered axes and a
 * relayout of the weights (see syno/normal.h).
 *
 * An unordered input axis (C_in) can be permuted: the layer before absorbs
 * the permutation. When the index of such an axis is a bijection of the
 * "digits" it depends on (loop variables, or div(v, q) when v is read only
 * so) onto the axis, any other bijection of those digits computes the same
 * function up to that permutation, so the index is replaced by a
 * mixed-radix one over the same digits, in the order whose normal form is
 * least. A weight read through a bijection of its digits is likewise read
 * as the weight indexed by them. Whether an index depends on a variable
 * and is a bijection is decided by evaluating it at every point, under
 * every binding. */
#include <stdlib.h>
#include <string.h>

#include "expr_eval.h"
#include "syno/alloc.h"
#include "syno/normal.h"

#define MAX_AXIS_VARS 6      /* variables in one permuted index */
#define MAX_POINTS (1 << 22) /* points enumerated to check a bijection */
#define MAX_ORDERS 5040      /* variable orders tried over all axes */

typedef struct {
  bool inner;
  int var;
} lvar_t;

/* The loop variables in the expression at node i; false when there are too
 * many or the expression is malformed. */
static bool collect(const syno_nest_t *n, int i, lvar_t *vs, int *nv) {
  if (i < 0 || i >= n->n_nodes) return false;
  const syno_expr_t *e = &n->node[i];
  switch (e->kind) {
    case SYNO_EXPR_OUTER:
    case SYNO_EXPR_INNER: {
      bool inner = e->kind == SYNO_EXPR_INNER;
      for (int k = 0; k < *nv; k++)
        if (vs[k].inner == inner && vs[k].var == e->var) return true;
      if (*nv >= MAX_AXIS_VARS) return false;
      vs[(*nv)++] = (lvar_t){inner, e->var};
      return true;
    }
    case SYNO_EXPR_SIZE:
    case SYNO_EXPR_IMM: return true;
    case SYNO_EXPR_RESTRICT: return collect(n, e->a, vs, nv);
    default: return i > e->a && i > e->b && collect(n, e->a, vs, nv) && collect(n, e->b, vs, nv);
  }
}

/* The values of the nest's SIZE nodes under binding b, for
 * syno_expr_eval; false when one does not evaluate. */
static bool size_values(const syno_nest_t *n, const syno_vars_t *v, int b, int64_t *size_val) {
  for (int i = 0; i < n->n_nodes; i++)
    if (n->node[i].kind == SYNO_EXPR_SIZE && syno_size_eval(v, n->node[i].size, b, &size_val[i], NULL)) return false;
  return true;
}

/* The value of the expression at node i at one point; false when a
 * restrict is out of range (the point reads nothing). */
static bool eval(const syno_nest_t *n, const int64_t *size_val, int i, const int64_t *outer, const int64_t *inner,
                 int64_t *out) {
  bool ok = true;
  *out = syno_expr_eval(n, i, size_val, outer, inner, &ok);
  return ok;
}

static syno_size_t extent(const syno_nest_t *n, lvar_t x) { return x.inner ? n->inner[x.var] : n->outer[x.var]; }

/* Walks the points of the variables vs under binding b (ext: their
 * extents), calling fn at each with the variables set; stops when fn
 * returns false. */
typedef bool (*point_fn)(void *ctx, const int64_t *outer, const int64_t *inner, const int64_t *at);
static bool each_point(const lvar_t *vs, int nv, const int64_t *ext, point_fn fn, void *ctx) {
  int64_t outer[SYNO_MAX_RANK] = {0}, inner[SYNO_MAX_LOOPS] = {0}, at[MAX_AXIS_VARS] = {0};
  for (;;) {
    for (int k = 0; k < nv; k++) (vs[k].inner ? inner : outer)[vs[k].var] = at[k];
    if (!fn(ctx, outer, inner, at)) return false;
    int k = 0;
    while (k < nv && ++at[k] == ext[k]) at[k++] = 0;
    if (k == nv) return true;
  }
}

/* The extents of vs under binding b, and their product (false past
 * MAX_POINTS or on a failed evaluation). */
static bool extents(const syno_nest_t *n, const syno_vars_t *v, int b, const lvar_t *vs, int nv, int64_t *ext,
                    int64_t *total) {
  *total = 1;
  for (int k = 0; k < nv; k++) {
    if (syno_size_eval(v, extent(n, vs[k]), b, &ext[k], NULL) || ext[k] < 1) return false;
    *total *= ext[k];
    if (*total > MAX_POINTS) return false;
  }
  return true;
}

/* A tuple of index expressions (the axes of one tensor read) and what the
 * walks over its points need. */
typedef struct {
  const syno_nest_t *n;
  int64_t size_val[SYNO_MAX_NODES]; /* the SIZE nodes' values under the binding walked */
  int k;                            /* axes */
  const int16_t *idx;               /* their roots */
  int64_t dim[SYNO_MAX_RANK];
  int drop;         /* independence test: the variable set to 0 */
  const lvar_t *vs; /* the variables walked */
  /* bijection test */
  const struct digit *dg;
  int nd;
  int64_t dext[MAX_AXIS_VARS]; /* the digits' extents */
  int64_t *map;                /* per digit tuple, the tuple's linear index, or -1 */
  unsigned char *seen;         /* the linear indices hit */
  int64_t total, filled;
} tuple_t;

/* What a bijective index is a bijection of: a loop variable, or div(v, q)
 * when the index reads v only so (a Merge's major half), with extent
 * extent(v) / q. */
typedef struct digit {
  lvar_t var;
  int node; /* -1: the variable itself; else the div node */
  syno_size_t ext;
} digit_t;

/* The row-major linear index of the tuple at a point; false when a restrict
 * is out of range or an index leaves its axis. */
static bool linear(const tuple_t *t, const int64_t *outer, const int64_t *inner, int64_t *out) {
  int64_t x = 0;
  for (int j = 0; j < t->k; j++) {
    int64_t y;
    if (!eval(t->n, t->size_val, t->idx[j], outer, inner, &y) || y < 0 || y >= t->dim[j]) return false;
    x = x * t->dim[j] + y;
  }
  *out = x;
  return true;
}

static bool same_without(void *ctx, const int64_t *outer, const int64_t *inner, const int64_t *at) {
  (void)at;
  tuple_t *t = ctx;
  int64_t o2[SYNO_MAX_RANK], i2[SYNO_MAX_LOOPS], a, b;
  memcpy(o2, outer, sizeof o2);
  memcpy(i2, inner, sizeof i2);
  lvar_t d = t->vs[t->drop];
  (d.inner ? i2 : o2)[d.var] = 0;
  return linear(t, outer, inner, &a) && linear(t, o2, i2, &b) && a == b;
}

/* At each point: the digits' tuple maps to one linear index, and no other
 * tuple maps to it. */
static bool hit_once(void *ctx, const int64_t *outer, const int64_t *inner, const int64_t *at) {
  (void)at;
  tuple_t *t = ctx;
  int64_t x, d = 0;
  for (int i = 0; i < t->nd; i++) {
    int64_t y;
    const digit_t *g = &t->dg[i];
    if (g->node < 0)
      y = (g->var.inner ? inner : outer)[g->var.var];
    else if (!eval(t->n, t->size_val, g->node, outer, inner, &y))
      return false;
    if (y < 0 || y >= t->dext[i]) return false;
    d = d * t->dext[i] + y;
  }
  if (!linear(t, outer, inner, &x) || x >= t->total) return false;
  if (t->map[d] >= 0) return t->map[d] == x;
  if (t->seen[x]) return false;
  t->seen[x] = 1;
  t->map[d] = x;
  t->filled++;
  return true;
}

/* Records in *q the divisor when node i is div(the variable x, a size). */
static bool is_div_of(const syno_nest_t *n, int i, lvar_t x, syno_size_t *q) {
  const syno_expr_t *e = &n->node[i];
  if (e->kind != SYNO_EXPR_DIV || n->node[e->b].kind != SYNO_EXPR_SIZE) return false;
  const syno_expr_t *a = &n->node[e->a];
  if (a->kind != (x.inner ? SYNO_EXPR_INNER : SYNO_EXPR_OUTER) || a->var != x.var) return false;
  *q = n->node[e->b].size;
  return true;
}

/* How the expression at node i reads the variable x: *bare when it reads it
 * other than as div(x, q); *at and *q the first div(x, q) and its q, *mixed
 * when two q differ. */
static void reads(const syno_nest_t *n, int i, lvar_t x, bool *bare, int *at, syno_size_t *q, bool *mixed) {
  const syno_expr_t *e = &n->node[i];
  syno_size_t d;
  if (is_div_of(n, i, x, &d)) {
    if (*at < 0) {
      *at = i;
      *q = d;
    } else if (!syno_size_eq(*q, d)) {
      *mixed = true;
    }
    return;
  }
  switch (e->kind) {
    case SYNO_EXPR_OUTER:
    case SYNO_EXPR_INNER: *bare = *bare || ((e->kind == SYNO_EXPR_INNER) == x.inner && e->var == x.var); return;
    case SYNO_EXPR_SIZE:
    case SYNO_EXPR_IMM: return;
    case SYNO_EXPR_RESTRICT: reads(n, e->a, x, bare, at, q, mixed); return;
    default: reads(n, e->a, x, bare, at, q, mixed); reads(n, e->b, x, bare, at, q, mixed);
  }
}

/* Whether the tuple of index expressions idx[0..k) with axis sizes dims is,
 * under every binding, a bijection onto its index space from the values of
 * its digits, each a function of one variable it depends on (a variable
 * whose value never changes the tuple is left out). The digits are returned
 * in dg, *nd of them. False with *oom set when memory ran out. */
static bool bijective(const syno_nest_t *n, const syno_vars_t *v, const int16_t *idx, int k, const syno_size_t *dims,
                      digit_t *dg, int *nd, bool *oom) {
  lvar_t vs[MAX_AXIS_VARS];
  int nv = 0;
  for (int j = 0; j < k; j++)
    if (!collect(n, idx[j], vs, &nv)) return false;
  bool keep[MAX_AXIS_VARS];
  for (int i = 0; i < nv; i++) keep[i] = false;
  tuple_t t = {.n = n, .k = k, .idx = idx, .vs = vs};
  for (int b = 0; b < v->nbind; b++) {
    if (!size_values(n, v, b, t.size_val)) return false;
    for (int j = 0; j < k; j++)
      if (syno_size_eval(v, dims[j], b, &t.dim[j], NULL)) return false;
    int64_t ext[MAX_AXIS_VARS], total;
    if (!extents(n, v, b, vs, nv, ext, &total)) return false;
    for (t.drop = 0; t.drop < nv; t.drop++)
      if (!keep[t.drop] && !each_point(vs, nv, ext, same_without, &t)) keep[t.drop] = true;
  }
  int m = 0;
  for (int i = 0; i < nv; i++)
    if (keep[i]) vs[m++] = vs[i];
  nv = m;
  /* The digits. */
  for (int i = 0; i < nv; i++) {
    bool bare = false, mixed = false;
    int at = -1;
    syno_size_t q = syno_size_one();
    for (int j = 0; j < k; j++) reads(n, idx[j], vs[i], &bare, &at, &q, &mixed);
    if (bare || mixed || at < 0)
      dg[i] = (digit_t){vs[i], -1, extent(n, vs[i])};
    else
      dg[i] = (digit_t){vs[i], at, syno_size_div(extent(n, vs[i]), q)};
  }
  *nd = nv;
  t.dg = dg;
  t.nd = nv;
  for (int b = 0; b < v->nbind; b++) {
    if (!size_values(n, v, b, t.size_val)) return false;
    int64_t ext[MAX_AXIS_VARS], total, want = 1, digits = 1;
    for (int j = 0; j < k; j++) {
      if (syno_size_eval(v, dims[j], b, &t.dim[j], NULL)) return false;
      want *= t.dim[j];
    }
    for (int i = 0; i < nv; i++) {
      if (syno_size_eval(v, dg[i].ext, b, &t.dext[i], NULL) || t.dext[i] < 1) return false;
      digits *= t.dext[i];
    }
    if (!extents(n, v, b, vs, nv, ext, &total) || digits != want) return false;
    t.total = want;
    t.filled = 0;
    t.seen = syno_calloc((size_t)want, 1);
    t.map = syno_malloc(sizeof *t.map * (size_t)want);
    bool ok = t.seen && t.map;
    if (!ok) *oom = true;
    for (int64_t i = 0; ok && i < want; i++) t.map[i] = -1;
    ok = ok && each_point(vs, nv, ext, hit_once, &t) && t.filled == want;
    syno_free(t.seen);
    syno_free(t.map);
    if (!ok) return false;
  }
  return true;
}

static int add_node(syno_nest_t *n, syno_expr_t e) {
  if (n->n_nodes >= SYNO_MAX_NODES) return -1;
  n->node[n->n_nodes] = e;
  return n->n_nodes++;
}

/* The node of a digit: its div node, or a new node for its variable. */
static int digit_node(syno_nest_t *n, const digit_t *g) {
  if (g->node >= 0) return g->node;
  return add_node(n, (syno_expr_t){.kind = g->var.inner ? SYNO_EXPR_INNER : SYNO_EXPR_OUTER, .var = g->var.var});
}

/* Appends the mixed-radix index of the digits in order `ord`:
 * d0 + e0 * (d1 + e1 * (... d_last)). */
static int mixed_radix(syno_nest_t *n, const digit_t *dg, const int *ord, int nd) {
  int t = -1;
  for (int k = nd - 1; k >= 0; k--) {
    const digit_t *g = &dg[ord[k]];
    int var = digit_node(n, g);
    if (var < 0) return -1;
    if (t < 0) {
      t = var;
      continue;
    }
    int sz = add_node(n, (syno_expr_t){.kind = SYNO_EXPR_SIZE, .size = g->ext});
    int mul = sz < 0 ? -1 : add_node(n, (syno_expr_t){.kind = SYNO_EXPR_MUL, .a = (int16_t)sz, .b = (int16_t)t});
    t = mul < 0 ? -1 : add_node(n, (syno_expr_t){.kind = SYNO_EXPR_ADD, .a = (int16_t)var, .b = (int16_t)mul});
    if (t < 0) return -1;
  }
  return t;
}

/* The k-th permutation of 0..m-1 (factorial number system). */
static void nth_order(int k, int m, int *ord) {
  int pool[MAX_AXIS_VARS];
  for (int i = 0; i < m; i++) pool[i] = i;
  for (int i = 0; i < m; i++) {
    int f = 1;
    for (int j = 2; j < m - i; j++) f *= j;
    int q = k / f;
    k %= f;
    ord[i] = pool[q];
    memmove(pool + q, pool + q + 1, sizeof(int) * (size_t)(m - i - 1 - q));
  }
}

static int factorial(int m) { return m <= 1 ? 1 : m * factorial(m - 1); }

int syno_nest_normal_form_unordered(const syno_nest_t *n, const syno_vars_t *v, const bool *unordered, char *buf,
                                    size_t size, syno_error_t *err) {
  if (!buf || size == 0) return syno_error_set(err, "no buffer for the normal form");
  syno_nest_t *w = syno_malloc(sizeof *w);
  char *best = syno_malloc(size), *cur = syno_malloc(size);
  int best_len = -1, rc = 0;
  bool oom = false;
  if (!w || !best || !cur) {
    rc = syno_error_set(err, "out of memory");
    goto done;
  }
  *w = *n;
  /* A weight read through a bijection of its variables is, relaid out, the
   * weight indexed by those variables. */
  for (int f = 0; f < w->n_factors; f++) {
    syno_access_t *a = &w->factor[f];
    digit_t dg[MAX_AXIS_VARS];
    int m;
    if (a->tensor < 1 || !bijective(n, v, a->idx, a->rank, a->dim, dg, &m, &oom) || m < 1 || m > SYNO_MAX_RANK)
      continue;
    int at[SYNO_MAX_RANK];
    bool ok = true;
    for (int j = 0; j < m && ok; j++) ok = (at[j] = digit_node(w, &dg[j])) >= 0;
    if (!ok) break;
    a->rank = m;
    for (int j = 0; j < m; j++) {
      a->idx[j] = (int16_t)at[j];
      a->dim[j] = dg[j].ext;
    }
  }
  /* The unordered input axes whose index is a bijection of its variables. */
  int in = -1;
  for (int f = 0; f < n->n_factors; f++)
    if (n->factor[f].tensor == 0) in = f;
  int axis[SYNO_MAX_RANK], nv[SYNO_MAX_RANK], n_axes = 0, orders = 1;
  digit_t dg[SYNO_MAX_RANK][MAX_AXIS_VARS];
  for (int j = 0; in >= 0 && j < n->factor[in].rank; j++) {
    int m;
    if (!unordered[j] || !bijective(n, v, &n->factor[in].idx[j], 1, &n->factor[in].dim[j], dg[n_axes], &m, &oom) ||
        m < 1 || orders * factorial(m) > MAX_ORDERS)
      continue;
    orders *= factorial(m);
    axis[n_axes] = j;
    nv[n_axes++] = m;
  }
  syno_nest_t *base = oom ? NULL : syno_malloc(sizeof *base);
  if (!base) {
    rc = syno_error_set(err, "out of memory");
    goto done;
  }
  *base = *w;
  for (int k = 0; k < orders; k++) {
    *w = *base;
    int rest = k;
    for (int a = 0; a < n_axes; a++) {
      int f = factorial(nv[a]), ord[MAX_AXIS_VARS];
      nth_order(rest % f, nv[a], ord);
      rest /= f;
      int t = mixed_radix(w, dg[a], ord, nv[a]);
      if (t < 0) {
        syno_free(base);
        rc = syno_error_set(err, "nest too large to renumber its unordered input axes");
        goto done;
      }
      w->factor[in].idx[axis[a]] = (int16_t)t;
    }
    int len = syno_nest_normal_form(w, v, cur, size, err);
    if (len < 0) {
      syno_free(base);
      rc = -1;
      goto done;
    }
    if (best_len < 0 || strcmp(cur, best) < 0) {
      memcpy(best, cur, (size_t)len + 1);
      best_len = len;
    }
  }
  syno_free(base);
  memcpy(buf, best, (size_t)best_len + 1);
  rc = best_len;
done:
  syno_free(w);
  syno_free(best);
  syno_free(cur);
  return rc;
}

int syno_operator_normal_form_unordered(const syno_operator_t *op, const bool *unordered, char *buf, size_t size,
                                        syno_error_t *err) {
  syno_nest_t *n = syno_malloc(sizeof *n);
  if (!n) return syno_error_set(err, "out of memory");
  int r = syno_lower_forward(op, n, err);
  if (r == 0) r = syno_nest_normal_form_unordered(n, syno_graph_vars(op->g), unordered, buf, size, err);
  syno_free(n);
  return r;
}
