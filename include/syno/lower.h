/* syno/lower.h - lowering an operator to loop nests, and the reference
 * interpreter that runs them.
 *
 * A loop nest (docs/semantics.md §6) is: outer loops i_0.. over the target's axes,
 * inner reduction loops ri_0.., guards, and a statement
 *     target[i_0, ...] (+)= product of factors / divisor
 * where each factor is a tensor read through index expressions. The forward
 * nest's target is the output and its factors are the input and the weights.
 * The backward nest for tensor t targets grad_in_t and its factors are
 * grad_out and every tensor except t; its loops come from propagating values
 * through the primitives in both directions (docs/semantics.md §6.2), choosing a free dim
 * as a new reduction loop whenever propagation is stuck.
 *
 * Index expressions are small trees stored in the nest's node array and
 * referred to by index. `restrict(e, 0, N)` is zero padding: when e leaves
 * [0, N) the whole product is 0. Guards filter iteration points of backward
 * nests (a derived window position out of range, a stride that does not
 * divide, two derivations of one dim that disagree).
 *
 * FLOPs: a multiply-add counts as 2. A nest costs, per point of its full
 * iteration space, one multiply per factor beyond the first plus one add when
 * it has reduction loops; a Mean adds one division per target element.
 *
 * The interpreter is the oracle every faster path is checked against: it
 * evaluates the nests point by point in double precision, nothing clever. */
#ifndef SYNO_LOWER_H
#define SYNO_LOWER_H

#include <stdbool.h>
#include <stdint.h>

#include "syno/graph.h"

#define SYNO_MAX_LOOPS 24
#define SYNO_MAX_NODES 512
#define SYNO_MAX_GUARDS 24
/* Loop variables of a nest: the outer ones (one per output axis), then the inner ones. */
#define SYNO_NEST_MAX_VARS (SYNO_MAX_RANK + SYNO_MAX_LOOPS)

typedef enum {
  SYNO_EXPR_OUTER = 0, /* loop variable i_<var> */
  SYNO_EXPR_INNER,     /* reduction loop variable ri_<var> */
  SYNO_EXPR_SIZE,      /* a symbolic size */
  SYNO_EXPR_IMM,       /* an integer */
  SYNO_EXPR_ADD,
  SYNO_EXPR_SUB,
  SYNO_EXPR_MUL,
  SYNO_EXPR_DIV,      /* floor division */
  SYNO_EXPR_MOD,      /* Euclidean remainder */
  SYNO_EXPR_RESTRICT, /* a if 0 <= a < size(b), else "out of range" */
} syno_expr_kind_t;

typedef struct {
  syno_expr_kind_t kind;
  int var;          /* OUTER/INNER: loop index */
  syno_size_t size; /* SIZE */
  int64_t imm;      /* IMM */
  int16_t a, b;     /* operands (node indices) */
} syno_expr_t;

typedef enum {
  SYNO_GUARD_RANGE = 0, /* 0 <= a < size(b) */
  SYNO_GUARD_DIVIDES,   /* a % size(b) == 0 */
  SYNO_GUARD_EQUAL      /* a == b */
} syno_guard_kind_t;

typedef struct {
  syno_guard_kind_t kind;
  int16_t a, b;
} syno_guard_t;

typedef struct {
  int tensor; /* -1: grad_out; else the operator's tensor index */
  int rank;
  int16_t idx[SYNO_MAX_RANK];
  syno_size_t dim[SYNO_MAX_RANK]; /* the tensor's axis sizes (row-major) */
} syno_access_t;

typedef struct {
  int target; /* -1: the output; t: grad_in_t */
  int n_outer;
  syno_size_t outer[SYNO_MAX_RANK]; /* extents of i_0.. = the target's axes */
  int n_inner;
  syno_size_t inner[SYNO_MAX_LOOPS]; /* extents of ri_0..; ri_(n-1) is outermost */
  int n_guards;
  syno_guard_t guard[SYNO_MAX_GUARDS];
  int n_factors;
  syno_access_t factor[SYNO_MAX_TENSORS];
  syno_size_t divisor; /* product of Mean domains, or 1 */
  int n_nodes;
  syno_expr_t node[SYNO_MAX_NODES];
} syno_nest_t;

/* A lowered operator: the forward nest and one backward nest per tensor. */
typedef struct {
  const syno_operator_t *op;
  syno_nest_t forward;
  syno_nest_t backward[SYNO_MAX_TENSORS];
} syno_lowered_t;

int syno_lower(const syno_operator_t *op, syno_lowered_t *out, syno_error_t *err);
int syno_lower_forward(const syno_operator_t *op, syno_nest_t *n, syno_error_t *err);
int syno_lower_backward(const syno_operator_t *op, int t, syno_nest_t *n, syno_error_t *err);

/* Splits each loop variable v of extent E that the nest reads through
 * div(v, B) or mod(v, B), all at one block B, into two, v = g*B + o (g of
 * extent E/B, o of extent B): div(v, B) becomes g, mod(v, B) becomes o, any
 * other occurrence g*B + o. A channel-grouped operator, whose input reads the
 * group div(i, B) and whose weight reads mod(i, B), then reads g and o
 * separately, and the executor runs it as one GEMM instead of one per
 * channel. An outer variable becomes two adjacent outer ones, so the target
 * keeps its layout; an inner one keeps its index for g and appends o. The
 * tensors and their layouts are unchanged: *out computes what *in does.
 * Nests with guards are copied unchanged. Returns the number of splits. */
int syno_nest_split_blocks(const syno_nest_t *in, const syno_vars_t *v, syno_nest_t *out);

/* The index arithmetic of loop nests: floor division and the Euclidean
 * remainder (docs/semantics.md §3.10). Every evaluator and simplifier uses these. */
int64_t syno_index_div(int64_t a, int64_t b);
int64_t syno_index_mod(int64_t a, int64_t b);

/* FLOPs of one nest under binding b (see the header comment). */
int syno_nest_flops(const syno_nest_t *n, const syno_vars_t *v, int b, int64_t *flops, syno_error_t *err);
/* FLOPs of forward nest fwd of op under binding b as the executor runs it:
 * contracted one tensor at a time in the stage order of docs/semantics.md §7.2
 * (src/lower/stages.h), each stage costing as a nest of its own variables.
 * A nest that cannot be staged (guards) costs syno_nest_flops, and so does
 * one whose plan has a single stage. */
int syno_forward_flops(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, int b, int64_t *flops,
                       syno_error_t *err);
/* syno_forward_flops of the operator's forward nest, summed over all bindings. */
int syno_operator_flops(const syno_operator_t *op, int64_t *flops, syno_error_t *err);

/* Prints the nest in the format of docs/semantics.md §6.3 (4-space indents, one
 * temp_ri_<k> accumulator per reduction loop). Returns the length that would
 * have been written. */
int syno_nest_print(const syno_nest_t *n, const syno_vars_t *v, char *buf, size_t size);
/* Prints one index expression. */
int syno_expr_print(const syno_nest_t *n, int node, const syno_vars_t *v, char *buf, size_t size);

/* --- the reference interpreter ---
 *
 * Every tensor is dense row-major float32 in its axis order under binding b.
 * tensors[t] is the operator's tensor t (tensors[0] the input); grad_out is
 * needed by backward nests. The target buffer is overwritten. */
int syno_interp_nest(const syno_nest_t *n, const syno_vars_t *v, int b, const float *const *tensors,
                     const float *grad_out, float *target, syno_error_t *err);

/* Gradient of tensor t computed the other way round: walk the forward nest
 * and scatter grad_out times the other factors into grad_t. Independent of
 * the backward nests, so tests can check one against the other. */
int syno_interp_grad_scatter(const syno_nest_t *forward, const syno_vars_t *v, int b, int t,
                             const float *const *tensors, const float *grad_out, float *grad_t, syno_error_t *err);

/* Number of elements of the nest's target, and of tensor t of an operator,
 * under binding b. */
/* Row-major strides of an access's tensor (strides[rank], may be NULL) and its element
 * count (may be NULL) under binding b. */
int syno_access_strides(const syno_access_t *a, const syno_vars_t *v, int b, int64_t *strides, int64_t *numel,
                        syno_error_t *err);
int syno_nest_target_numel(const syno_nest_t *n, const syno_vars_t *v, int b, int64_t *numel, syno_error_t *err);
int syno_tensor_numel(const syno_operator_t *op, int t, int b, int64_t *numel, syno_error_t *err);
int syno_output_numel(const syno_operator_t *op, int b, int64_t *numel, syno_error_t *err);
/* The axis sizes of every tensor of op under binding b of v (the graph's own variables, or a
 * copy bound to other sizes): rank[t] and extent[t] for tensor t (the input, then the
 * weights), rank[op->n_tensors] and extent[op->n_tensors] for the output. */
int syno_operator_extents(const syno_operator_t *op, const syno_vars_t *v, int b, int rank[SYNO_MAX_TENSORS + 1],
                          int64_t extent[SYNO_MAX_TENSORS + 1][SYNO_MAX_RANK], syno_error_t *err);

#endif
