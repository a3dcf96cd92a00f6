/* exec_chain.h - the staged fast path of the executor (internal to
 * src/lower): an operator's forward nest evaluated one contraction at a
 * time, in the stage order of docs/semantics.md §7.2, each stage a GEMM
 * (exec_gemm.h) or a convolution (exec_conv.h) on the running tensor and
 * one weight.
 *
 * The stages are those of the plan in stages.h (lower_stages_plan_ex, with
 * lifted axes): the running tensor starts as the input, an optional leading
 * stage without a weight sums the reductions only the input reads, then
 * each weight is contracted into the running tensor in the planned order,
 * and each stage materialises what later stages and the output still read.
 * A lifted input axis is carried whole (one variable of the nest extended
 * by lower_stages_nest) until the stage that reads it through the input's
 * index expression, which is a gather of the running tensor as the input's
 * is; a last stage without a weight (the view) only gathers.
 *
 * Backward runs the stages in reverse, by the chain rule: each stage's
 * backward takes the gradient of its result and gives its weight's gradient
 * and the gradient of its running tensor, which is the previous stage's
 * result gradient. The intermediate tensors are recomputed first, so a
 * backward call does not depend on an earlier forward call.
 *
 * All buffers (intermediates, their gradients, the stages' tables) are
 * allocated when the chain is built; forward and backward allocate nothing. */
#ifndef SYNO_EXEC_CHAIN_H
#define SYNO_EXEC_CHAIN_H

#include "syno/graph.h"
#include "syno/lower.h"
#include "exec_conv.h"

typedef struct syno_chain exec_chain_t;

/* Builds the chain of forward nest fwd of op under binding b. Returns 0 and
 * *out = the chain, or 0, *out = NULL and *reason = why the staged path does
 * not apply (static storage); -1 on error. The nest must outlive the chain.
 * A stage that is a convolution (exec_conv.h) runs on oneDNN, any other as a
 * GEMM stage (exec_gemm.h). Flags: EXEC_LOOPS runs every stage as the
 * generic loop (tests check the loop against the interpreter, as the table
 * limits are rarely reached); EXEC_NO_LIBRARY keeps every stage on the GEMM
 * path (tests and benchmarks compare the two). */
enum { EXEC_LOOPS = 1, EXEC_NO_LIBRARY = 2 };
int exec_chain_new(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, int b, int flags,
                   exec_chain_t **out, const char **reason, syno_error_t *err);
void exec_chain_free(exec_chain_t *c);

int exec_chain_stages(const exec_chain_t *c);
/* The input axes the plan lifts (stages.h, docs/semantics.md §7.3). */
int exec_chain_lifted(const exec_chain_t *c);
/* NULL when every stage runs as a GEMM, else why one runs as a generic loop. */
const char *exec_chain_generic(const exec_chain_t *c);

/* What runs stage k ("gather + sgemm", "loop", or the convolution's description; the last
 * stage's deployed form when the last forward was exec_chain_forward_affine's folded one,
 * which exec_chain_path_deployed says). */
int exec_chain_path_deployed(const exec_chain_t *c);
const char *exec_chain_path(const exec_chain_t *c, int k);

/* hold: as syno_exec_hold_weights (0: gather every weight). -1 when a library call fails. */
int exec_chain_forward(exec_chain_t *c, const float *const *tensors, float *out, uint64_t hold, syno_error_t *err);
/* Deployed inference (hold != 0): the forward with y = max(scale[ch] * y + shift[ch], 0) (no
 * clamp without relu; scale NULL: no map) folded into the last stage when it is a
 * convolution whose output channels are channels of the result (exec_conv.h); returns 0
 * then, 1 when only the plain forward ran (the caller applies the map), -1 on error. */
int exec_chain_forward_affine(exec_chain_t *c, const float *const *tensors, float *out, uint64_t hold,
                              const exec_conv_channels_t *ch, const float *scale, const float *shift, int relu,
                              syno_error_t *err);
/* grads[t] may be NULL (not wanted); the others are overwritten. */
int exec_chain_backward(exec_chain_t *c, const float *const *tensors, const float *grad_out, float *const *grads,
                        syno_error_t *err);

#endif
