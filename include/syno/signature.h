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
 * The named signatures are the search presets: "conv2d"
 * ([N, C_in: unordered, H, W] -> [N, C_out: unordered, H, W], N passed
 * through) and "linear" ([N, S, C_in: unordered] -> [N, S, C_out: unordered],
 * N and S passed through). */
#ifndef SYNO_SIGNATURE_H
#define SYNO_SIGNATURE_H

#include "syno/error.h"
#include "syno/size.h"

#define SYNO_MAX_FIXED 4

typedef struct {
  syno_vars_t vars; /* with at least one binding */
  syno_shape_t input, output;
  int n_fixed; /* axes passed straight from input to output (the batch N) */
  int fixed_in[SYNO_MAX_FIXED], fixed_out[SYNO_MAX_FIXED];
} syno_signature_t;

/* The signature of a preset under binding `bind` ("" or NULL for the
 * preset's defaults). Errors name the unknown preset or the bad binding. */
int syno_signature_preset(const char *name, const char *bind, syno_signature_t *sig, syno_error_t *err);
/* The preset names, comma-separated, for messages ("conv2d, linear"). */
const char *syno_signature_names(void);

#endif /* SYNO_SIGNATURE_H */
