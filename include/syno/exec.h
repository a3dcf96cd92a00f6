/* syno/exec.h - running a finished operator on real tensors, fast.
 *
 * An executor is an operator compiled for one concrete binding (every size
 * fixed, the batch N included). It computes the forward pass and the
 * gradients of the input and of every weight, on dense row-major float32
 * buffers laid out as in the reference interpreter (syno/lower.h): tensor t
 * in the axis order of the operator's tensor t, the output in output-axis
 * order.
 *
 * The interpreter is the oracle: every strategy an executor picks must give
 * its results to within float rounding (tests compare at relative error
 * 1e-4). syno_exec_strategy names the strategy chosen, so tests and
 * benchmarks can tell a fast path from the fallback.
 *
 * Strategies: the staged fast path evaluates the contractions one at a time
 * in the stage order of docs/semantics.md §7.2, each stage a convolution on oneDNN
 * when it is one in disguise (a window, any gather of the input, groups),
 * else an offset-table gather, cblas_sgemm and scatter on the running tensor
 * and one weight, backward by
 * the chain rule (see docs/exec.md). It is named "gemm" when it is a single
 * stage (an input and at most one weight) and "chain" when it has several
 * (several weights, or an early reduction of the input). "interp" is the
 * interpreter, for nests the staged path does not take (forward guards).
 * None allocates per call.
 *
 * Ownership: the executor copies what it needs from the operator and the
 * variable table; it does not keep pointers to them. It owns its scratch
 * buffers and is not thread-safe: one executor serves one call at a time. */
#ifndef SYNO_EXEC_H
#define SYNO_EXEC_H

#include <stdint.h>

#include "syno/graph.h"
#include "syno/lower.h"

typedef struct syno_exec syno_exec_t;

/* Compiles `op` under binding b of `v` (usually the operator's own graph
 * vars, or a copy with a binding added for a slot's batch size). */
int syno_exec_new(const syno_operator_t *op, const syno_vars_t *v, int b, syno_exec_t **out, syno_error_t *err);
void syno_exec_free(syno_exec_t *e);

/* Element counts: t = -1 for the output, else the operator's tensor t. */
int64_t syno_exec_numel(const syno_exec_t *e, int t);
int syno_exec_num_tensors(const syno_exec_t *e);
/* Forward FLOPs of this binding (multiply-add = 2), as syno_forward_flops. */
int64_t syno_exec_flops(const syno_exec_t *e);
/* A short name of the strategy chosen ("interp" for the fallback). */
const char *syno_exec_strategy(const syno_exec_t *e);

/* What runs each stage, in stage order, separated by "; ": "gather + sgemm" (a GEMM
 * stage), "loop" (its generic loop), a convolution on oneDNN (e.g. "oneDNN conv2d 1x3,
 * input gathered"), or "interpreter". Owned by the executor. */
const char *syno_exec_path(const syno_exec_t *e);

/* NULL when the executor runs entirely on GEMM stages; else why not: why
 * the staged path does not apply (strategy "interp"), or why one of its
 * stages runs as a generic loop (an offset table too large; the strategy
 * stays "gemm" or "chain"). Static storage. */
const char *syno_exec_fallback_reason(const syno_exec_t *e);

/* Holding the weights: a GEMM stage gathers its weight into the matrix its GEMM reads on
 * every forward (the weight's layout is the operator's, rarely the GEMM's), which at batch 1
 * can cost more than the GEMM. A deployed operator packs its weights once; so does the
 * executor while the caller holds them: with id != 0 the caller promises that the weights of
 * every later forward are the same tensors with the same values as in the previous forward
 * given the same id, and a stage gathers only at the first forward under an id (or when a
 * weight pointer changes). 0 (the default) promises nothing. Take a new id whenever the
 * weights may have changed (syno_nn_freeze does). */
void syno_exec_hold_weights(syno_exec_t *e, uint64_t id);

/* out = op(tensors[0], ..., tensors[n_tensors-1]); out is overwritten. */
int syno_exec_forward(syno_exec_t *e, const float *const *tensors, float *out, syno_error_t *err);

/* Deployed inference, with the weights held (syno_exec_hold_weights, id != 0): the forward
 * followed by y = max(scale[ch] * y + shift[ch], 0) (no clamp without relu; scale NULL: no
 * map), ch = (offset / inner) % C being the channel of an output element (C = dims[1] and
 * inner = the product of the later dims for an [N, C, ...] output): a batch norm and a ReLU
 * after the operator. When the last stage is a oneDNN convolution whose output channels are
 * channels of the output (a weight shared across channel groups is replicated for it), the
 * map is folded into its weight and a bias and the ReLU fused, and 0 is returned. Otherwise
 * only the forward runs and 1 is returned: the caller applies the map. -1 on error. */
int syno_exec_forward_affine(syno_exec_t *e, const float *const *tensors, float *out, int64_t C, int64_t inner,
                             const float *scale, const float *shift, int relu, syno_error_t *err);

/* grads[t] = d(sum(out * grad_out)) / d tensors[t], overwritten, for every t
 * whose grads[t] is not NULL. The tensors must be the forward's. */
int syno_exec_backward(syno_exec_t *e, const float *const *tensors, const float *grad_out, float *const *grads,
                       syno_error_t *err);

#endif
