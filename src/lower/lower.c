/* Lowering: value propagation through the primitives (docs/semantics.md §6.2).
 *
 * Each dim of the operator gets an index expression. Forward, the output
 * iterators and reductions are the loop variables and values flow up through
 * every primitive. Backward for tensor t, t's axes are the loop variables;
 * values flow through primitives in whichever direction the known dims allow,
 * and when nothing more follows, one unknown dim becomes a new reduction
 * loop. A primitive is resolved once; if a dim it determines already has a
 * value, the two must agree, which becomes an equality guard. */
#include <stdio.h>
#include <string.h>

#include "syno/lower.h"

typedef struct {
  const syno_operator_t *op;
  const syno_graph_t *g;
  syno_nest_t *n;
  int16_t val[SYNO_MAX_OP_DIMS];
  bool resolved[SYNO_MAX_OP_PRIMS];
  bool full; /* node or guard storage ran out */
} ctx_t;

static int local(const ctx_t *c, syno_dim_t d) {
  for (int i = 0; i < c->op->n_dims; i++)
    if (c->op->dims[i] == d) return i;
  return -1;
}

static int16_t node(ctx_t *c, syno_expr_t e) {
  if (c->n->n_nodes >= SYNO_MAX_NODES) {
    c->full = true;
    return 0;
  }
  c->n->node[c->n->n_nodes] = e;
  return (int16_t)c->n->n_nodes++;
}

static int16_t var(ctx_t *c, syno_expr_kind_t kind, int v) { return node(c, (syno_expr_t){.kind = kind, .var = v}); }
static int16_t size(ctx_t *c, syno_size_t s) { return node(c, (syno_expr_t){.kind = SYNO_EXPR_SIZE, .size = s}); }
static int16_t imm(ctx_t *c, int64_t v) { return node(c, (syno_expr_t){.kind = SYNO_EXPR_IMM, .imm = v}); }
static int16_t bin(ctx_t *c, syno_expr_kind_t k, int16_t a, int16_t b) {
  return node(c, (syno_expr_t){.kind = k, .a = a, .b = b});
}
static int16_t half(ctx_t *c, syno_size_t k) { return bin(c, SYNO_EXPR_DIV, size(c, k), imm(c, 2)); }

static void guard(ctx_t *c, syno_guard_kind_t kind, int16_t a, int16_t b) {
  if (c->n->n_guards >= SYNO_MAX_GUARDS) {
    c->full = true;
    return;
  }
  c->n->guard[c->n->n_guards++] = (syno_guard_t){.kind = kind, .a = a, .b = b};
}

static bool known(const ctx_t *c, syno_dim_t d) { return c->val[local(c, d)] >= 0; }
static int16_t get(const ctx_t *c, syno_dim_t d) { return c->val[local(c, d)]; }
static syno_size_t dsize(const ctx_t *c, syno_dim_t d) { return syno_graph_dim(c->g, d)->size; }

static void set(ctx_t *c, syno_dim_t d, int16_t e) {
  int i = local(c, d);
  if (c->val[i] < 0)
    c->val[i] = e;
  else
    guard(c, SYNO_GUARD_EQUAL, c->val[i], e);
}

/* Resolves primitive p if enough of its dims are known; returns whether it did. */
static bool resolve(ctx_t *c, const syno_prim_t *p) {
  switch (p->kind) {
    case SYNO_PRIM_SPLIT: {
      syno_dim_t i = p->in[0], l = p->out[0], r = p->out[1];
      if (known(c, i)) {
        int16_t b = size(c, dsize(c, r));
        set(c, l, bin(c, SYNO_EXPR_DIV, get(c, i), b));
        set(c, r, bin(c, SYNO_EXPR_MOD, get(c, i), b));
      } else if (known(c, l) && known(c, r)) {
        set(c, i, bin(c, SYNO_EXPR_ADD, bin(c, SYNO_EXPR_MUL, get(c, l), size(c, dsize(c, r))), get(c, r)));
      } else {
        return false;
      }
      return true;
    }
    case SYNO_PRIM_MERGE: {
      syno_dim_t l = p->in[0], r = p->in[1], o = p->out[0];
      if (known(c, o)) {
        int16_t b = size(c, p->param);
        set(c, l, bin(c, SYNO_EXPR_DIV, get(c, o), b));
        set(c, r, bin(c, SYNO_EXPR_MOD, get(c, o), b));
      } else if (known(c, l) && known(c, r)) {
        set(c, o, bin(c, SYNO_EXPR_ADD, bin(c, SYNO_EXPR_MUL, get(c, l), size(c, p->param)), get(c, r)));
      } else {
        return false;
      }
      return true;
    }
    case SYNO_PRIM_SHIFT: {
      syno_dim_t i = p->in[0], o = p->out[0];
      if (known(c, o)) {
        set(c, i, bin(c, SYNO_EXPR_MOD, bin(c, SYNO_EXPR_ADD, get(c, o), imm(c, 1)), size(c, dsize(c, o))));
      } else if (known(c, i)) {
        int16_t n = size(c, dsize(c, o));
        set(c, o, bin(c, SYNO_EXPR_MOD, bin(c, SYNO_EXPR_SUB, bin(c, SYNO_EXPR_ADD, get(c, i), n), imm(c, 1)), n));
      } else {
        return false;
      }
      return true;
    }
    case SYNO_PRIM_STRIDE: {
      syno_dim_t i = p->in[0], o = p->out[0];
      if (known(c, o)) {
        set(c, i, bin(c, SYNO_EXPR_MUL, get(c, o), size(c, p->param)));
      } else if (known(c, i)) {
        int16_t s = size(c, p->param);
        guard(c, SYNO_GUARD_DIVIDES, get(c, i), s);
        set(c, o, bin(c, SYNO_EXPR_DIV, get(c, i), s));
      } else {
        return false;
      }
      return true;
    }
    case SYNO_PRIM_UNFOLD: {
      syno_dim_t i = p->in[0], l = p->out[0], r = p->out[1];
      syno_size_t k = dsize(c, r), n = dsize(c, l);
      if (known(c, l) && known(c, r)) {
        int16_t e = bin(c, SYNO_EXPR_SUB, bin(c, SYNO_EXPR_ADD, get(c, l), get(c, r)), half(c, k));
        set(c, i, bin(c, SYNO_EXPR_RESTRICT, e, size(c, n)));
      } else if (known(c, i) && known(c, r)) {
        int16_t e = bin(c, SYNO_EXPR_ADD, bin(c, SYNO_EXPR_SUB, get(c, i), get(c, r)), half(c, k));
        guard(c, SYNO_GUARD_RANGE, e, size(c, n));
        set(c, l, e);
      } else if (known(c, i) && known(c, l)) {
        int16_t e = bin(c, SYNO_EXPR_ADD, bin(c, SYNO_EXPR_SUB, get(c, i), get(c, l)), half(c, k));
        guard(c, SYNO_GUARD_RANGE, e, size(c, k));
        set(c, r, e);
      } else {
        return false;
      }
      return true;
    }
    case SYNO_PRIM_SHARE: {
      syno_dim_t all[3] = {p->out[0], p->in[0], p->in[1]};
      for (int s = 0; s < 3; s++)
        if (known(c, all[s])) {
          int16_t e = get(c, all[s]);
          for (int k = 0; k < 3; k++)
            if (k != s) set(c, all[k], e);
          return true;
        }
      return false;
    }
    default: return false;
  }
}

/* Resolves primitives until nothing more follows. */
static void propagate(ctx_t *c) {
  for (bool progress = true; progress;) {
    progress = false;
    for (int i = 0; i < c->op->n_prims; i++) {
      if (c->resolved[i]) continue;
      if (resolve(c, syno_graph_prim(c->g, c->op->prims[i]))) { c->resolved[i] = progress = true; }
    }
  }
}

static bool is_stride_input(const ctx_t *c, syno_dim_t d) {
  const syno_prim_t *p = syno_graph_below(c->g, d);
  return p && p->kind == SYNO_PRIM_STRIDE;
}

/* The next dim to loop over when propagation is stuck: the other tensors'
 * axes first, last axis first (locality), then anything else; a stride
 * input only as a last resort, since it is better derived from below. */
static syno_dim_t pick_free(const ctx_t *c) {
  for (int t = 0; t < c->op->n_tensors; t++)
    for (int i = c->op->rank[t] - 1; i >= 0; i--) {
      syno_dim_t d = c->op->axes[t][i];
      if (!known(c, d) && !is_stride_input(c, d)) return d;
    }
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < c->op->n_dims; i++) {
      syno_dim_t d = c->op->dims[i];
      if (!known(c, d) && (pass || !is_stride_input(c, d))) return d;
    }
  return 0;
}

static void make_access(ctx_t *c, syno_access_t *a, int tensor, int rank, const syno_dim_t *dims) {
  a->tensor = tensor;
  a->rank = rank;
  for (int i = 0; i < rank; i++) {
    a->idx[i] = get(c, dims[i]);
    a->dim[i] = dsize(c, dims[i]);
  }
}

/* Renumbers reduction loops (docs/semantics.md §6.2): loops that index no tensor directly
 * get the lowest numbers (innermost), in their order; the others follow in
 * order of first appearance, scanning each factor from its last axis. */
static void renumber(syno_nest_t *n) {
  int order[SYNO_MAX_LOOPS], m = 0;
  bool direct[SYNO_MAX_LOOPS] = {0};
  int seen[SYNO_MAX_LOOPS], ns = 0;
  for (int f = 0; f < n->n_factors; f++)
    for (int i = n->factor[f].rank - 1; i >= 0; i--) {
      const syno_expr_t *e = &n->node[n->factor[f].idx[i]];
      if (e->kind == SYNO_EXPR_INNER && !direct[e->var]) {
        direct[e->var] = true;
        seen[ns++] = e->var;
      }
    }
  for (int v = 0; v < n->n_inner; v++)
    if (!direct[v]) order[m++] = v;
  for (int i = 0; i < ns; i++) order[m++] = seen[i];
  int newnum[SYNO_MAX_LOOPS];
  syno_size_t extent[SYNO_MAX_LOOPS];
  for (int i = 0; i < n->n_inner; i++) {
    newnum[order[i]] = i;
    extent[i] = n->inner[order[i]];
  }
  memcpy(n->inner, extent, sizeof(syno_size_t) * (size_t)n->n_inner);
  for (int i = 0; i < n->n_nodes; i++)
    if (n->node[i].kind == SYNO_EXPR_INNER) n->node[i].var = newnum[n->node[i].var];
}

static void init(ctx_t *c, const syno_operator_t *op, syno_nest_t *n) {
  memset(c, 0, sizeof *c);
  memset(n, 0, sizeof *n);
  c->op = op;
  c->g = op->g;
  c->n = n;
  for (int i = 0; i < SYNO_MAX_OP_DIMS; i++) c->val[i] = -1;
  n->divisor = syno_size_one();
  for (int i = 0; i < op->n_red; i++) {
    const syno_dimension_t *d = syno_graph_dim(op->g, op->red[i]);
    if (d->reduce == SYNO_REDUCE_MEAN) n->divisor = syno_size_mul(n->divisor, d->size);
  }
}

static int finish(ctx_t *c, syno_error_t *err) {
  if (c->full)
    return syno_error_set(err, "operator too large to lower (more than %d index nodes or %d guards)", SYNO_MAX_NODES,
                          SYNO_MAX_GUARDS);
  renumber(c->n);
  return 0;
}

int syno_lower_forward(const syno_operator_t *op, syno_nest_t *n, syno_error_t *err) {
  ctx_t c;
  init(&c, op, n);
  n->target = -1;
  n->n_outer = op->n_out;
  for (int i = 0; i < op->n_out; i++) {
    n->outer[i] = dsize(&c, op->out[i]);
    c.val[local(&c, op->out[i])] = var(&c, SYNO_EXPR_OUTER, i);
  }
  n->n_inner = op->n_red;
  for (int i = 0; i < op->n_red; i++) {
    n->inner[i] = dsize(&c, op->red[i]);
    c.val[local(&c, op->red[i])] = var(&c, SYNO_EXPR_INNER, i);
  }
  propagate(&c);
  for (int i = 0; i < op->n_dims; i++)
    if (c.val[i] < 0 && !c.full) return syno_error_set(err, "internal: a dim got no forward value");
  n->n_factors = op->n_tensors;
  for (int t = 0; t < op->n_tensors; t++) make_access(&c, &n->factor[t], t, op->rank[t], op->axes[t]);
  return finish(&c, err);
}

int syno_lower_backward(const syno_operator_t *op, int t, syno_nest_t *n, syno_error_t *err) {
  ctx_t c;
  init(&c, op, n);
  n->target = t;
  n->n_outer = op->rank[t];
  for (int i = 0; i < op->rank[t]; i++) {
    n->outer[i] = dsize(&c, op->axes[t][i]);
    c.val[local(&c, op->axes[t][i])] = var(&c, SYNO_EXPR_OUTER, i);
  }
  for (;;) {
    propagate(&c);
    syno_dim_t d = pick_free(&c);
    if (!d) break;
    if (n->n_inner >= SYNO_MAX_LOOPS)
      return syno_error_set(err, "operator too large to lower (more than %d loops)", SYNO_MAX_LOOPS);
    n->inner[n->n_inner] = dsize(&c, d);
    c.val[local(&c, d)] = var(&c, SYNO_EXPR_INNER, n->n_inner++);
  }
  make_access(&c, &n->factor[n->n_factors++], -1, op->n_out, op->out);
  for (int u = 0; u < op->n_tensors; u++)
    if (u != t) make_access(&c, &n->factor[n->n_factors++], u, op->rank[u], op->axes[u]);
  return finish(&c, err);
}

int syno_lower(const syno_operator_t *op, syno_lowered_t *out, syno_error_t *err) {
  out->op = op;
  if (syno_lower_forward(op, &out->forward, err)) return -1;
  for (int t = 0; t < op->n_tensors; t++)
    if (syno_lower_backward(op, t, &out->backward[t], err)) return syno_error_prefix(err, "gradient of tensor %d", t);
  return 0;
}

static int numel_of(const syno_vars_t *v, const syno_size_t *dims, int n, int b, int64_t *out, syno_error_t *err) {
  int64_t total = 1;
  for (int i = 0; i < n; i++) {
    int64_t x;
    if (syno_size_eval(v, dims[i], b, &x, err)) return -1;
    if (__builtin_mul_overflow(total, x, &total)) return syno_error_set(err, "element count overflows 64 bits");
  }
  *out = total;
  return 0;
}

int syno_access_strides(const syno_access_t *a, const syno_vars_t *v, int b, int64_t *strides, int64_t *numel,
                        syno_error_t *err) {
  int64_t s = 1;
  for (int i = a->rank - 1; i >= 0; i--) {
    int64_t d;
    if (syno_size_eval(v, a->dim[i], b, &d, err)) return -1;
    if (strides) strides[i] = s;
    if (__builtin_mul_overflow(s, d, &s)) return syno_error_set(err, "element count overflows 64 bits");
  }
  if (numel) *numel = s;
  return 0;
}

int syno_nest_target_numel(const syno_nest_t *n, const syno_vars_t *v, int b, int64_t *numel, syno_error_t *err) {
  return numel_of(v, n->outer, n->n_outer, b, numel, err);
}

int syno_tensor_numel(const syno_operator_t *op, int t, int b, int64_t *numel, syno_error_t *err) {
  syno_shape_t s;
  syno_operator_tensor_shape(op, t, &s);
  return numel_of(syno_graph_vars(op->g), s.dim, s.rank, b, numel, err);
}

int syno_output_numel(const syno_operator_t *op, int b, int64_t *numel, syno_error_t *err) {
  syno_shape_t s;
  syno_operator_output_shape(op, &s);
  return numel_of(syno_graph_vars(op->g), s.dim, s.rank, b, numel, err);
}

int syno_operator_extents(const syno_operator_t *op, const syno_vars_t *v, int b, int rank[SYNO_MAX_TENSORS + 1],
                          int64_t extent[SYNO_MAX_TENSORS + 1][SYNO_MAX_RANK], syno_error_t *err) {
  for (int t = 0; t <= op->n_tensors; t++) {
    syno_shape_t s;
    if (t < op->n_tensors)
      syno_operator_tensor_shape(op, t, &s);
    else
      syno_operator_output_shape(op, &s);
    rank[t] = s.rank;
    for (int i = 0; i < s.rank; i++)
      if (syno_size_eval(v, s.dim[i], b, &extent[t][i], err)) return -1;
  }
  return 0;
}

int syno_nest_flops(const syno_nest_t *n, const syno_vars_t *v, int b, int64_t *flops, syno_error_t *err) {
  int64_t outer = 0, inner = 0;
  if (numel_of(v, n->outer, n->n_outer, b, &outer, err) || numel_of(v, n->inner, n->n_inner, b, &inner, err)) return -1;
  int64_t per_point = (n->n_factors - 1) + (n->n_inner > 0 ? 1 : 0), total;
  if (__builtin_mul_overflow(outer, inner, &total) || __builtin_mul_overflow(total, per_point, &total))
    return syno_error_set(err, "FLOP count overflows 64 bits");
  if (!syno_size_is_one(n->divisor)) total += outer;
  *flops = total;
  return 0;
}

int syno_operator_flops(const syno_operator_t *op, int64_t *flops, syno_error_t *err) {
  syno_nest_t fwd;
  if (syno_lower_forward(op, &fwd, err)) return -1;
  const syno_vars_t *v = syno_graph_vars(op->g);
  int64_t total = 0;
  for (int b = 0; b < v->nbind; b++) {
    int64_t f = 0;
    if (syno_forward_flops(op, &fwd, v, b, &f, err)) return -1;
    total += f;
  }
  *flops = total;
  return 0;
}
