/* exec_conv.h - a contraction stage that is a convolution in disguise, run on
 * oneDNN (internal to src/exec).
 *
 * A stage (exec_gemm.h) whose running tensor is the operator's input, read
 * through index expressions, and whose weight is one tensor, is a
 * convolution when every expression of the input that mixes an output
 * variable m with a summed variable k is a window: restrict(c + s*m + d*k, R)
 * with s >= 1 (the stride) and d != 0 (the dilation, a flipped kernel when
 * negative), m and k read nowhere else. The stage's variables then map onto
 * a convolution's dimensions:
 *     batch    result variables the weight does not read (other than the
 *              windows' and the trailing ones below)
 *     groups   result variables both read (G of exec_gemm.h)
 *     out ch.  result variables only the weight reads (N)
 *     in ch.   summed variables both read, outside the windows
 *     spatial  each window (kernel = the extent of k), and result variables
 *              laid out inside every channel of the result (kernel 1),
 *              at most three in all.
 * Every other shape of the input's expressions (a permutation, a Shift's
 * roll, a Split or Merge, zero padding outside the windows) becomes a
 * gather of the input into the convolution's plain source tensor through an
 * offset table built once; when the table is the identity the input is read
 * in place. The weight is gathered likewise ([G][O][I][k...], scaled by
 * 1/divisor, once per hold id when held) and the result is written in place
 * when its layout is the convolution's, else scattered through a table.
 * Backward is oneDNN's backward-data and backward-weights with the
 * transposed tables, scatter-adding (a broadcast's gradient is a sum).
 *
 * The plan owns its buffers; forward and backward allocate nothing but what
 * oneDNN itself takes. Not thread-safe (one call at a time). */
#ifndef SYNO_EXEC_CONV_H
#define SYNO_EXEC_CONV_H

#include "exec_gemm.h"

typedef struct exec_conv_plan exec_conv_plan_t;

/* Deployed inference folds a per-channel map into the last stage (exec_conv_forward_affine):
 * the result's channel of the element at offset o is (o / inner) % C. */
typedef struct {
  int64_t C, inner;
} exec_conv_channels_t;

/* Plans stage st as a convolution. Returns 0 and *out = the plan (filling
 * st->res_stride and st->res_numel when st->choose_layout), or 0, *out = NULL
 * and *why = why the stage is not one or oneDNN declined it (static storage);
 * -1 on error. With deploy (the last stage, for frozen inference only), batch variables
 * that make up the result's channel become groups with the weight replicated (a weight
 * shared across channel groups), so that every output channel of the convolution is one
 * channel of the result; a stage where that does not hold is declined. */
int exec_conv_plan_new(exec_gemm_stage_t *st, const syno_vars_t *v, int b, const exec_conv_channels_t *deploy,
                       exec_conv_plan_t **out, const char **why, syno_error_t *err);
void exec_conv_plan_free(exec_conv_plan_t *p);

/* What runs the stage, e.g. "oneDNN conv 1x3 groups 1 (src gathered)". */
const char *exec_conv_plan_desc(const exec_conv_plan_t *p);

/* As exec_gemm_forward/backward; -1 (err set) when oneDNN fails. */
int exec_conv_forward(exec_conv_plan_t *p, const float *a, const float *w, float *c, uint64_t hold, syno_error_t *err);
/* A deploy plan's inference forward with y = max(scale[ch] * y + shift[ch], 0) (no clamp
 * without relu) folded in: the scale into the weight and the shift into a bias, once per
 * hold id (hold != 0), the ReLU fused by oneDNN. */
int exec_conv_forward_affine(exec_conv_plan_t *p, const float *a, const float *w, float *c, uint64_t hold,
                             const float *scale, const float *shift, int relu, syno_error_t *err);
int exec_conv_backward(exec_conv_plan_t *p, const float *a, const float *w, const float *dc, float *da, float *dw,
                       syno_error_t *err);

#endif
