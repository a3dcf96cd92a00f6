/* exec_gemm.h - one contraction stage of the executor as a GEMM (internal to
 * src/lower).
 *
 * A stage computes, over some of the loop variables of a forward nest,
 *     C[result vars] = alpha * sum over the other stage vars of A[..] * W[..]
 * where A (the running tensor: the input, or the previous stage's result)
 * and W (one weight, or none) are each read either through the nest's index
 * expressions (an "expression" operand, e.g. the operator's input) or
 * linearly, one stride per loop variable (a "linear" operand: an
 * intermediate tensor of the chain, exec_chain.c).
 *
 * The plan classifies the stage's variables: G (result, read by A and W:
 * groups, depthwise channels, batched GEMM), M (result, not read by W), N
 * (result, read by W but not A) and K (every other stage variable: the
 * contraction). It precomputes int32 offset tables for the A gather
 * ([G][K][Me], -1 = zero padding), the W gather ([G][N][K]) and the result
 * scatter, so that forward and backward become gather + cblas_sgemm +
 * scatter. M variables that index A as a bare axis ("plain", like the batch
 * N) are not tabulated: they are an added stride, and blocks of them form
 * the GEMM column chunks.
 *
 * When a table would not fit (too many entries, offsets beyond int32) the
 * stage runs as a generic loop over its iteration space instead: slower, but
 * exact and still allocation-free; exec_gemm_plan_generic says so.
 *
 * The plan owns every buffer it uses; forward and backward allocate nothing.
 * Not thread-safe (one call at a time). */
#ifndef SYNO_EXEC_GEMM_H
#define SYNO_EXEC_GEMM_H

#include "syno/lower.h"

/* How a stage reads one tensor. */
typedef struct {
  const syno_access_t *acc;           /* an access of the nest, or NULL: linear */
  int64_t stride[SYNO_NEST_MAX_VARS]; /* linear: per loop variable, 0 = not read */
  int64_t numel;                      /* linear: element count */
} exec_gemm_operand_t;

typedef struct {
  const syno_nest_t *n;              /* the forward nest: extents and index expressions */
  bool in_stage[SYNO_NEST_MAX_VARS]; /* the variables this stage iterates over */
  bool result[SYNO_NEST_MAX_VARS];   /* those kept in C (the others are summed) */
  exec_gemm_operand_t a, w;
  bool has_w;
  /* The layout of C: when choose_layout, the plan picks it ([G][N][M], so
   * that the GEMM writes C in place) and fills res_stride and res_numel;
   * otherwise res_stride gives the stride of each result variable. */
  bool choose_layout;
  int64_t res_stride[SYNO_NEST_MAX_VARS];
  int64_t res_numel;
  int64_t divisor; /* alpha = 1 / divisor */
  bool loop;       /* run as the generic loop even when the tables fit (tests) */
} exec_gemm_stage_t;

typedef struct exec_gemm_plan exec_gemm_plan_t;

/* Builds a plan for stage st under binding b of v (fills st->res_stride and
 * st->res_numel when st->choose_layout). The nest and the accesses must
 * outlive the plan. 0 on success; -1 on error (out of memory, a size that
 * does not evaluate, an empty loop). */
int exec_gemm_plan_new(exec_gemm_stage_t *st, const syno_vars_t *v, int b, exec_gemm_plan_t **out, syno_error_t *err);
void exec_gemm_plan_free(exec_gemm_plan_t *p);

/* NULL when the stage runs as gather + GEMM + scatter, else why it runs as a
 * generic loop (static storage). */
const char *exec_gemm_plan_generic(const exec_gemm_plan_t *p);
/* Sorts the loop variables vars[0..n) by decreasing stride (the outermost first). */
void exec_sort_by_stride(int *vars, int n, const int64_t *stride);

/* c = alpha * sum A W (w ignored without a weight); c is overwritten. hold != 0: w is the
 * same as in the previous forward under the same hold, so its gathered copy is reused
 * (syno_exec_hold_weights). */
void exec_gemm_forward(exec_gemm_plan_t *p, const float *a, const float *w, float *c, uint64_t hold);
/* da = dL/dA, dw = dL/dW given dc = dL/dC; either may be NULL (not wanted),
 * the others are overwritten. */
void exec_gemm_backward(exec_gemm_plan_t *p, const float *a, const float *w, const float *dc, float *da, float *dw);

#endif
