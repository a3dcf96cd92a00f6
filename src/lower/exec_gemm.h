/* exec_gemm.h - the "gemm" strategy of the executor (internal to src/lower).
 *
 * A plan classifies the loop variables of a forward nest with one input and
 * at most one weight: G (outer, read by input and weight: groups, depthwise
 * channels), M (outer, not read by the weight), N (outer, read by the weight
 * but not the input) and K (every reduction variable). It precomputes int32
 * offset tables for the input gather ([G][K][Me], -1 = zero padding), the
 * weight gather ([G][N][K]) and the output scatter, so that forward and
 * backward become gather + cblas_sgemm + scatter. M variables that index the
 * input as a bare axis ("plain", like the batch N) are not tabulated: they
 * are an added stride, and blocks of them form the GEMM column chunks.
 *
 * The plan owns every buffer it uses; forward and backward allocate nothing.
 * Not thread-safe (one call at a time). */
#ifndef SYNO_EXEC_GEMM_H
#define SYNO_EXEC_GEMM_H

#include "syno/lower.h"

typedef struct syno_gemm_plan syno_gemm_plan_t;

/* Builds a plan for nest `fwd` (the forward nest of an operator with
 * n_tensors tensors) under binding b. Returns 0 and *out = the plan, or 0,
 * *out = NULL and *reason = why the strategy does not apply; -1 on error
 * (out of memory, a size that does not evaluate). */
int syno_gemm_plan_new(const syno_nest_t *fwd, int n_tensors, const syno_vars_t *v, int b, syno_gemm_plan_t **out,
                       const char **reason, syno_error_t *err);
void syno_gemm_plan_free(syno_gemm_plan_t *p);

void syno_gemm_forward(syno_gemm_plan_t *p, const float *const *tensors, float *out);
/* grads[t] may be NULL (not wanted); the others are overwritten. */
void syno_gemm_backward(syno_gemm_plan_t *p, const float *const *tensors, const float *grad_out,
                        float *const *grads);

#endif
