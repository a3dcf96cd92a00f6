/* expr_eval.h - evaluating an index expression of a loop nest (internal to
 * src/lower). The interpreter and the executor's offset tables both use it;
 * it is static inline because both call it in their innermost loops. Also
 * which loop variables an expression reads, for the executor's planning. */
#ifndef SYNO_EXPR_EVAL_H
#define SYNO_EXPR_EVAL_H

#include <stdbool.h>

#include "syno/lower.h"

/* The value of node i of nest n, given the values of the outer and inner
 * loop variables and of the SIZE nodes (size_val[j] for node j). *ok becomes
 * false when a restrict is out of range (the access reads zero padding). */
static inline int64_t syno_expr_eval(const syno_nest_t *n, int i, const int64_t *size_val, const int64_t *outer,
                                     const int64_t *inner, bool *ok) {
  const syno_expr_t *x = &n->node[i];
  switch (x->kind) {
    case SYNO_EXPR_OUTER: return outer[x->var];
    case SYNO_EXPR_INNER: return inner[x->var];
    case SYNO_EXPR_SIZE: return size_val[i];
    case SYNO_EXPR_IMM: return x->imm;
    default: break;
  }
  int64_t a = syno_expr_eval(n, x->a, size_val, outer, inner, ok),
          b = syno_expr_eval(n, x->b, size_val, outer, inner, ok);
  switch (x->kind) {
    case SYNO_EXPR_ADD: return a + b;
    case SYNO_EXPR_SUB: return a - b;
    case SYNO_EXPR_MUL: return a * b;
    case SYNO_EXPR_DIV: return syno_index_div(a, b);
    case SYNO_EXPR_MOD: return syno_index_mod(a, b);
    case SYNO_EXPR_RESTRICT:
      if (a < 0 || a >= b) *ok = false;
      return a;
    default: return 0;
  }
}

/* The loop variable of an OUTER or INNER node (outer variables first, then the inner ones). */
static inline int syno_expr_var(const syno_nest_t *n, const syno_expr_t *x) {
  return x->kind == SYNO_EXPR_OUTER ? x->var : n->n_outer + x->var;
}

/* The symbolic extent of loop variable v (outer variables first, then the inner ones). */
static inline syno_size_t syno_nest_extent(const syno_nest_t *n, int v) {
  return v < n->n_outer ? n->outer[v] : n->inner[v - n->n_outer];
}

/* The offset of access acc (row-major strides `stride`) at the loop variable values val
 * (outer variables, then inner), or -1 when a restrict is out of range (zero padding). */
static inline int64_t syno_access_offset(const syno_nest_t *n, const syno_access_t *acc, const int64_t *stride,
                                         const int64_t *size_val, const int64_t *val) {
  bool ok = true;
  int64_t off = 0;
  for (int i = 0; i < acc->rank; i++)
    off += syno_expr_eval(n, acc->idx[i], size_val, val, val + n->n_outer, &ok) * stride[i];
  return ok ? off : -1;
}

/* Under binding b: size_val[j] for every SIZE node j of n, and ext[v] for every loop
 * variable v (outer, then inner). -1 (err set) when a size does not evaluate. */
static inline int syno_nest_sizes(const syno_nest_t *n, const syno_vars_t *v, int b, int64_t *size_val, int64_t *ext,
                                  syno_error_t *err) {
  for (int i = 0; i < n->n_nodes; i++)
    if (n->node[i].kind == SYNO_EXPR_SIZE && syno_size_eval(v, n->node[i].size, b, &size_val[i], err)) return -1;
  for (int i = 0; i < n->n_outer + n->n_inner; i++)
    if (syno_size_eval(v, syno_nest_extent(n, i), b, &ext[i], err)) return -1;
  return 0;
}

/* Adds to cnt[v] the occurrences of loop variable v (outer variables first,
 * then inner: ri_j is n->n_outer + j) in the tree of node i. */
static inline void syno_expr_count_vars(const syno_nest_t *n, int i, int *cnt) {
  const syno_expr_t *x = &n->node[i];
  switch (x->kind) {
    case SYNO_EXPR_OUTER: cnt[x->var]++; return;
    case SYNO_EXPR_INNER: cnt[n->n_outer + x->var]++; return;
    case SYNO_EXPR_SIZE:
    case SYNO_EXPR_IMM: return;
    default: syno_expr_count_vars(n, x->a, cnt); syno_expr_count_vars(n, x->b, cnt);
  }
}

#endif
