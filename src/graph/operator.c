/* Finished operators: assembling one from its top (tensors and expansions),
 * checking it is a well-formed, valid-by-construction operator, and simple
 * queries on it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/graph.h"

typedef struct {
  int n;
  syno_dim_t d[SYNO_MAX_OP_DIMS];
} dimset_t;

static int find(const dimset_t *s, syno_dim_t d) {
  for (int i = 0; i < s->n; i++)
    if (s->d[i] == d) return i;
  return -1;
}

static int push(dimset_t *s, syno_dim_t d, syno_error_t *err) {
  if (find(s, d) >= 0) return syno_error_set(err, "a dimension is used twice");
  if (s->n >= SYNO_MAX_OP_DIMS)
    return syno_error_set(err, "operator has too many dimensions (at most %d)", SYNO_MAX_OP_DIMS);
  s->d[s->n++] = d;
  return 0;
}

static void drop(dimset_t *s, syno_dim_t d) {
  int i = find(s, d);
  if (i >= 0) s->d[i] = s->d[--s->n];
}

static bool is_weight_axis(const syno_graph_t *g, syno_dim_t d) {
  const syno_prim_t *p = syno_graph_below(g, d);
  return p && p->kind == SYNO_PRIM_SHARE && syno_graph_dim(g, d)->slot == 1;
}

static int cmp_reduce(const syno_graph_t *g, syno_dim_t a, syno_dim_t b) {
  const syno_dimension_t *x = syno_graph_dim(g, a), *y = syno_graph_dim(g, b);
  if (x->reduce != y->reduce) return x->reduce < y->reduce ? -1 : 1;
  int c = syno_size_cmp(x->size, y->size);
  if (c) return c;
  return x->index - y->index;
}

int syno_operator_build(syno_graph_t *g, int n_out, int in_rank, const syno_dim_t *in_axes, int n_exp,
                        const syno_dim_t *exp, int n_weights, const int *weight_rank,
                        const syno_dim_t (*weight_axes)[SYNO_MAX_RANK], syno_operator_t *op, syno_error_t *err) {
  memset(op, 0, sizeof *op);
  op->g = g;
  if (n_out < 0 || n_out > SYNO_MAX_RANK) return syno_error_set(err, "output rank %d out of range", n_out);
  if (in_rank < 1 || in_rank > SYNO_MAX_RANK) return syno_error_set(err, "input rank %d out of range", in_rank);
  if (n_exp < 0 || n_exp > SYNO_MAX_RANK) return syno_error_set(err, "too many expansions");
  if (n_weights < 0 || n_weights >= SYNO_MAX_TENSORS)
    return syno_error_set(err, "at most %d weights", SYNO_MAX_TENSORS - 1);
  op->n_out = n_out;
  op->n_tensors = 1 + n_weights;
  op->rank[0] = in_rank;
  op->n_exp = n_exp;

  dimset_t avail = {0}, all = {0};
  for (int i = 0; i < in_rank; i++) {
    if (!syno_graph_dim(g, in_axes[i])) return syno_error_set(err, "input axis %d: no such dimension", i);
    if (is_weight_axis(g, in_axes[i]))
      return syno_error_set(err, "input axis %d is a weight axis (the R side of a share)", i);
    op->axes[0][i] = in_axes[i];
    if (push(&avail, in_axes[i], err)) return syno_error_prefix(err, "input axis %d", i);
  }
  for (int i = 0; i < n_exp; i++) {
    if (!syno_graph_dim(g, exp[i]) || is_weight_axis(g, exp[i]))
      return syno_error_set(err, "expansion %d: not a broadcastable dimension", i);
    op->exp[i] = exp[i];
    if (push(&avail, exp[i], err)) return syno_error_prefix(err, "expansion %d", i);
  }
  for (int t = 1; t <= n_weights; t++) {
    int r = weight_rank[t - 1];
    if (r < 1 || r > SYNO_MAX_RANK) return syno_error_set(err, "weight %d: rank %d out of range", t, r);
    op->rank[t] = r;
    for (int i = 0; i < r; i++) {
      syno_dim_t d = weight_axes[t - 1][i];
      const syno_prim_t *p = syno_graph_below(g, d);
      if (!is_weight_axis(g, d) || p->weight != t)
        return syno_error_set(err, "weight %d axis %d is not the weight side of a share with weight %d", t, i, t);
      op->axes[t][i] = d;
      if (push(&avail, d, err)) return syno_error_prefix(err, "weight %d axis %d", t, i);
    }
  }
  all = avail;

  /* Walk down: a primitive fires once all its inputs are available. */
  for (bool progress = true; progress;) {
    progress = false;
    for (int i = 0; i < avail.n; i++) {
      const syno_dimension_t *d = syno_graph_dim(g, avail.d[i]);
      if (d->kind != SYNO_DIM_PRIM_INPUT) continue;
      const syno_prim_t *p = syno_graph_prim(g, d->prim);
      bool ready = true;
      for (int k = 0; k < p->n_in; k++) ready = ready && find(&avail, p->in[k]) >= 0;
      if (!ready) continue;
      if (op->n_prims >= SYNO_MAX_OP_PRIMS) return syno_error_set(err, "operator has too many primitives");
      op->prims[op->n_prims++] = d->prim;
      for (int k = 0; k < p->n_in; k++) drop(&avail, p->in[k]);
      for (int k = 0; k < p->n_out; k++)
        if (push(&avail, p->out[k], err) || push(&all, p->out[k], err))
          return syno_error_prefix(err, "%s below", syno_prim_name(p->kind));
      progress = true;
      break;
    }
  }

  bool seen[SYNO_MAX_RANK] = {0};
  for (int i = 0; i < avail.n; i++) {
    syno_dim_t id = avail.d[i];
    const syno_dimension_t *d = syno_graph_dim(g, id);
    if (d->kind == SYNO_DIM_PRIM_INPUT) {
      const syno_prim_t *p = syno_graph_prim(g, d->prim);
      return syno_error_set(err,
                            "a %s is missing its other input: every input of a primitive must be a tensor axis, an "
                            "expansion or the output of another primitive",
                            syno_prim_name(p->kind));
    }
    if (d->kind == SYNO_DIM_ITERATOR) {
      if (d->index >= n_out)
        return syno_error_set(err, "output axis i%d does not exist (output rank %d)", d->index, n_out);
      seen[d->index] = true;
      op->out[d->index] = id;
    } else {
      if (op->n_red >= SYNO_MAX_REDUCTIONS) return syno_error_set(err, "at most %d reductions", SYNO_MAX_REDUCTIONS);
      op->red[op->n_red++] = id;
    }
  }
  for (int i = 0; i < n_out; i++)
    if (!seen[i]) return syno_error_set(err, "output axis i%d is never produced", i);
  /* Sort reductions; multiplicities of equal reductions must be 0, 1, 2... */
  for (int i = 1; i < op->n_red; i++)
    for (int j = i; j > 0 && cmp_reduce(g, op->red[j - 1], op->red[j]) > 0; j--) {
      syno_dim_t t = op->red[j];
      op->red[j] = op->red[j - 1];
      op->red[j - 1] = t;
    }
  for (int i = 0; i < op->n_red; i++) {
    const syno_dimension_t *d = syno_graph_dim(g, op->red[i]);
    int expect = 0;
    if (i > 0) {
      const syno_dimension_t *p = syno_graph_dim(g, op->red[i - 1]);
      if (p->reduce == d->reduce && syno_size_eq(p->size, d->size)) expect = p->index + 1;
    }
    if (d->index != expect) return syno_error_set(err, "reduction multiplicities must count up from 0");
  }
  op->n_dims = all.n;
  memcpy(op->dims, all.d, sizeof(syno_dim_t) * (size_t)all.n);

  for (int t = 0; t < op->n_tensors; t++)
    for (int i = 0; i < op->rank[t]; i++)
      if (syno_graph_color(g, op->axes[t][i])->discarding)
        return syno_error_set(err, "%s %d axis %d discards data: a stride must sit inside an unfold window",
                              t ? "weight" : "input", t, i);
  for (int i = 0; i < n_exp; i++)
    if (syno_graph_color(g, op->exp[i])->discarding) return syno_error_set(err, "expansion %d discards data", i);
  return 0;
}

bool syno_operator_eq(const syno_operator_t *a, const syno_operator_t *b) {
  if (a->g != b->g || a->n_tensors != b->n_tensors || a->n_exp != b->n_exp || a->n_out != b->n_out) return false;
  for (int t = 0; t < a->n_tensors; t++) {
    if (a->rank[t] != b->rank[t]) return false;
    for (int i = 0; i < a->rank[t]; i++)
      if (a->axes[t][i] != b->axes[t][i]) return false;
  }
  /* Expansions are a set. */
  for (int i = 0; i < a->n_exp; i++) {
    bool found = false;
    for (int j = 0; j < b->n_exp; j++) found = found || a->exp[i] == b->exp[j];
    if (!found) return false;
  }
  return true;
}

void syno_operator_output_shape(const syno_operator_t *op, syno_shape_t *s) {
  memset(s, 0, sizeof *s);
  s->rank = op->n_out;
  for (int i = 0; i < op->n_out; i++) {
    const syno_dimension_t *d = syno_graph_dim(op->g, op->out[i]);
    s->dim[i] = d->size;
    s->unordered[i] = d->unordered;
  }
}

void syno_operator_tensor_shape(const syno_operator_t *op, int t, syno_shape_t *s) {
  memset(s, 0, sizeof *s);
  s->rank = op->rank[t];
  for (int i = 0; i < op->rank[t]; i++) s->dim[i] = syno_graph_dim(op->g, op->axes[t][i])->size;
}

int syno_operator_params(const syno_operator_t *op, int b, int64_t *params, syno_error_t *err) {
  int64_t total = 0;
  for (int t = 1; t < op->n_tensors; t++) {
    syno_shape_t s;
    syno_operator_tensor_shape(op, t, &s);
    int64_t n;
    if (syno_size_eval(syno_graph_vars(op->g), syno_shape_numel(&s), b, &n, err)) return -1;
    total += n;
  }
  *params = total;
  return 0;
}

int syno_operator_count(const syno_operator_t *op, syno_prim_kind_t kind) {
  if (kind == SYNO_PRIM_EXPAND) return op->n_exp;
  int n = 0;
  for (int i = 0; i < op->n_prims; i++) n += syno_graph_prim(op->g, op->prims[i])->kind == kind;
  return n;
}
