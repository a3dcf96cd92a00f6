/* syno/signature.h - operator signatures: the variables and shapes an
 * operator is written against.
 *
 * A signature names the input and output shapes of an operator slot and the
 * variables (primary and coefficient, with their occurrence limits and
 * default values) its sizes may use. The search space searches operators of
 * one signature (syno/space.h adds its options on top); a slot of a network
 * parses and runs operators of one signature (syno/backbone.h). It lives
 * beside the graph, below both, so that neither needs the other.
 *
 * The named signatures are the search presets: "conv2d" (the space the
 * original searches in its vision experiments: [N, C_in: unordered, H, H]
 * -> [N, C_out: unordered, H, H], N passed through, H never in a weight or
 * a reduction, coefficients k_1=3, k_2=7, s=2, g=32), "conv2d-wide" (the
 * earlier preset: [N, C_in: unordered, H, W] -> [N, C_out: unordered, H, W],
 * H and W allowed in weights and reductions, coefficients k=3, s=2),
 * "linear" (the original's GPT-2 search: [N, seq_len, H_in: unordered] ->
 * [N, seq_len, t*H_in], N and seq_len passed through, coefficients k_1=2,
 * k_2=5, t=3, g=32; it replaces the fused QKV projection, t = 3) and
 * "linear-wide" (the earlier linear preset: [N, S, C_in: unordered] ->
 * [N, S, C_out: unordered], any linear layer). */
#ifndef SYNO_SIGNATURE_H
#define SYNO_SIGNATURE_H

#include "syno/error.h"
#include "syno/size.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYNO_MAX_FIXED 4

/* What a signature's operators replace: a convolution's slot [N, C_in, H, W]
 * -> [N, C_out, H, W], or a linear layer's [N, S, C_in] -> [N, S, C_out]. */
typedef enum { SYNO_SIG_CONV = 0, SYNO_SIG_LINEAR = 1 } syno_sig_kind_t;

typedef struct {
  char name[16]; /* the preset's name */
  syno_sig_kind_t kind;
  syno_vars_t vars; /* with at least one binding */
  syno_shape_t input, output;
  int n_fixed; /* axes passed straight from input to output (the batch N) */
  int fixed_in[SYNO_MAX_FIXED], fixed_out[SYNO_MAX_FIXED];
  bool qkv_only; /* a linear signature whose output is t*H_in: it fills a fused QKV projection only */
} syno_signature_t;

/* The signature of a preset under binding `bind` ("" or NULL for the
 * preset's defaults). Errors name the unknown preset or the bad binding. */
int syno_signature_preset(const char *name, const char *bind, syno_signature_t *sig, syno_error_t *err);
/* The preset names, comma-separated, for messages. */
const char *syno_signature_names(void);
/* The binding of a conv slot [n, c_in, h, w] -> [n, c_out, h, w] in a conv
 * signature's variables: "N=..,C_in=..,C_out=..,H=.." and ",W=.." when the
 * signature has W (a square one needs h == w). Returns 0, or -1 with err
 * naming the signature and the slot. */
int syno_signature_conv_binding(const syno_signature_t *sig, int64_t n, int64_t c_in, int64_t c_out, int64_t h,
                                int64_t w, char *buf, size_t len, syno_error_t *err);
/* The binding of a linear slot [n, s, c_in] -> [n, s, c_out]:
 * "N=..,S=..,C_in=..,C_out=.." (linear-wide) or "N=..,seq_len=..,H_in=..,t=.."
 * (linear, which needs c_out a multiple of c_in). 0, or -1 with err. */
int syno_signature_linear_binding(const syno_signature_t *sig, int64_t n, int64_t s, int64_t c_in, int64_t c_out,
                                  char *buf, size_t len, syno_error_t *err);
/* The forward FLOPs (a multiply-add counts 2) of the standard operator of
 * `kind` from `input` to `output` under binding b: a 3x3 convolution or a
 * dense linear layer, which contracts the input's unordered axes. The
 * search's FLOPs limits are ratios of it. */
double syno_signature_std_flops(syno_sig_kind_t kind, const syno_vars_t *vars, const syno_shape_t *input,
                                const syno_shape_t *output, int b);

#endif /* SYNO_SIGNATURE_H */
