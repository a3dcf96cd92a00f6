/* The reference interpreter: evaluates a loop nest point by point.
 *
 * Deliberately plain: every index expression is re-evaluated at every point,
 * accumulation is in double, and zero padding and guards are checked exactly
 * as the nest states them. Faster executors are tested against this. */
#include <stdlib.h>
#include <string.h>

#include "syno/alloc.h"
#include "syno/lower.h"

#include "expr_eval.h"

typedef struct {
  const syno_nest_t *n;
  int64_t size_val[SYNO_MAX_NODES]; /* SIZE nodes evaluated under the binding */
  int64_t outer[SYNO_MAX_RANK], inner[SYNO_MAX_LOOPS];
  int64_t outer_ext[SYNO_MAX_RANK], inner_ext[SYNO_MAX_LOOPS];
  int64_t stride[SYNO_MAX_TENSORS][SYNO_MAX_RANK];
} eval_t;

int64_t syno_index_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t syno_index_mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + (b < 0 ? -b : b) : r;
}

/* Evaluates node i under the evaluator's current loop values. */
static int64_t eval(const eval_t *e, int i, bool *ok) {
  return syno_expr_eval(e->n, i, e->size_val, e->outer, e->inner, ok);
}

static bool guards_hold(const eval_t *e) {
  for (int g = 0; g < e->n->n_guards; g++) {
    const syno_guard_t *gd = &e->n->guard[g];
    bool ok = true;
    int64_t a = eval(e, gd->a, &ok), b = eval(e, gd->b, &ok);
    if (!ok) return false;
    switch (gd->kind) {
      case SYNO_GUARD_RANGE:
        if (a < 0 || a >= b) return false;
        break;
      case SYNO_GUARD_DIVIDES:
        if (syno_index_mod(a, b) != 0) return false;
        break;
      case SYNO_GUARD_EQUAL:
        if (a != b) return false;
        break;
    }
  }
  return true;
}

static int setup(eval_t *e, const syno_nest_t *n, const syno_vars_t *v, int b, syno_error_t *err) {
  memset(e, 0, sizeof *e);
  e->n = n;
  for (int i = 0; i < n->n_nodes; i++)
    if (n->node[i].kind == SYNO_EXPR_SIZE && syno_size_eval(v, n->node[i].size, b, &e->size_val[i], err)) return -1;
  for (int i = 0; i < n->n_outer; i++)
    if (syno_size_eval(v, n->outer[i], b, &e->outer_ext[i], err)) return -1;
  for (int i = 0; i < n->n_inner; i++)
    if (syno_size_eval(v, n->inner[i], b, &e->inner_ext[i], err)) return -1;
  for (int f = 0; f < n->n_factors; f++)
    if (syno_access_strides(&n->factor[f], v, b, e->stride[f], NULL, err)) return -1;
  return 0;
}

/* Offset of factor f at the current point, or -1 when zero-padded. */
static int64_t offset(const eval_t *e, int f) {
  const syno_access_t *a = &e->n->factor[f];
  int64_t off = 0;
  bool ok = true;
  for (int i = 0; i < a->rank; i++) off += eval(e, a->idx[i], &ok) * e->stride[f][i];
  return ok ? off : -1;
}

static const float *factor_data(const syno_access_t *a, const float *const *tensors, const float *grad_out) {
  return a->tensor < 0 ? grad_out : tensors[a->tensor];
}

/* Advances an odometer; returns false after the last point. */
static bool next(int64_t *idx, const int64_t *ext, int n) {
  for (int i = n - 1; i >= 0; i--) {
    if (++idx[i] < ext[i]) return true;
    idx[i] = 0;
  }
  return false;
}

static bool empty(const int64_t *ext, int n) {
  for (int i = 0; i < n; i++)
    if (ext[i] <= 0) return true;
  return false;
}

/* Calls visit at every point of the nest where the guards hold. */
typedef void (*visit_fn)(eval_t *e, void *ctx);

static void walk(eval_t *e, visit_fn before_inner, visit_fn point, visit_fn after_inner, void *ctx) {
  const syno_nest_t *n = e->n;
  if (empty(e->outer_ext, n->n_outer)) return;
  memset(e->outer, 0, sizeof e->outer);
  do {
    if (before_inner) before_inner(e, ctx);
    if (!empty(e->inner_ext, n->n_inner)) {
      memset(e->inner, 0, sizeof e->inner);
      do {
        if (guards_hold(e)) point(e, ctx);
      } while (next(e->inner, e->inner_ext, n->n_inner));
    }
    if (after_inner) after_inner(e, ctx);
  } while (next(e->outer, e->outer_ext, n->n_outer));
}

typedef struct {
  const float *const *tensors;
  const float *grad_out;
  float *target;
  int64_t target_off;
  double acc, divisor;
  int skip; /* scatter: the factor that is the gradient's tensor */
  float *grad;
} run_t;

static void begin(eval_t *e, void *ctx) {
  (void)e;
  ((run_t *)ctx)->acc = 0;
}

static void accumulate(eval_t *e, void *ctx) {
  run_t *r = ctx;
  double prod = 1;
  for (int f = 0; f < e->n->n_factors; f++) {
    int64_t off = offset(e, f);
    if (off < 0) return;
    prod *= factor_data(&e->n->factor[f], r->tensors, r->grad_out)[off];
  }
  r->acc += prod;
}

static void store(eval_t *e, void *ctx) {
  run_t *r = ctx;
  r->target[r->target_off++] = (float)(r->acc / r->divisor);
  (void)e;
}

int syno_interp_nest(const syno_nest_t *n, const syno_vars_t *v, int b, const float *const *tensors,
                     const float *grad_out, float *target, syno_error_t *err) {
  eval_t *e = syno_malloc(sizeof *e);
  if (!e) return syno_error_set(err, "out of memory");
  int64_t div = 1;
  if (setup(e, n, v, b, err) || syno_size_eval(v, n->divisor, b, &div, err)) {
    syno_free(e);
    return -1;
  }
  run_t r = {.tensors = tensors, .grad_out = grad_out, .target = target, .divisor = (double)div};
  walk(e, begin, accumulate, store, &r);
  syno_free(e);
  return 0;
}

static void scatter(eval_t *e, void *ctx) {
  run_t *r = ctx;
  double prod = 1;
  int64_t at = -1;
  for (int f = 0; f < e->n->n_factors; f++) {
    int64_t off = offset(e, f);
    if (off < 0) return;
    if (f == r->skip)
      at = off;
    else
      prod *= factor_data(&e->n->factor[f], r->tensors, r->grad_out)[off];
  }
  /* The forward target's offset is the row-major index of the outer loops. */
  int64_t o = 0;
  for (int i = 0; i < e->n->n_outer; i++) o = o * e->outer_ext[i] + e->outer[i];
  r->grad[at] += (float)(prod * r->grad_out[o] / r->divisor);
}

int syno_interp_grad_scatter(const syno_nest_t *forward, const syno_vars_t *v, int b, int t,
                             const float *const *tensors, const float *grad_out, float *grad_t, syno_error_t *err) {
  if (forward->target != -1) return syno_error_set(err, "scatter gradients need the forward nest");
  int skip = -1;
  for (int f = 0; f < forward->n_factors; f++)
    if (forward->factor[f].tensor == t) skip = f;
  if (skip < 0) return syno_error_set(err, "tensor %d is not a factor of the nest", t);
  eval_t *e = syno_malloc(sizeof *e);
  if (!e) return syno_error_set(err, "out of memory");
  int64_t div = 1, numel = 1;
  if (setup(e, forward, v, b, err) || syno_size_eval(v, forward->divisor, b, &div, err) ||
      syno_access_strides(&forward->factor[skip], v, b, NULL, &numel, err)) {
    syno_free(e);
    return -1;
  }
  memset(grad_t, 0, sizeof(float) * (size_t)numel);
  run_t r = {.tensors = tensors, .grad_out = grad_out, .divisor = (double)div, .skip = skip, .grad = grad_t};
  walk(e, NULL, scatter, NULL, &r);
  syno_free(e);
  return 0;
}
