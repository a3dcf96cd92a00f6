/* Fuzzes the operator text form (syno_operator_parse, syno/graph.h) the way
 * `syno show`, `syno run --preset` and `syno train --op` reach it: against a
 * preset's signature (conv2d, linear, conv2d-wide, linear-wide) or, as with
 * TEXT --input --output --bind, against shapes of the user's own.
 *
 * Input: the first byte picks the signature (its value mod 5: 0 conv2d,
 * 1 linear, 2 conv2d-wide, 3 the user's own, 4 linear-wide); the rest is the
 * operator text,
 * or for 3 four lines INPUT \n OUTPUT \n BINDING \n TEXT. An operator that
 * parses must print to text that parses back to the same operator; it is
 * then lowered (forward and every backward nest), its nests printed and
 * counted, and its C and PyTorch code generated, as `syno show` does. */
#include <stdlib.h>

#include "fuzz.h"
#include "syno/codegen.h"
#include "syno/lower.h"
#include "syno/signature.h"

/* By the input's first byte mod 5; 3 is shapes of the user's own. */
static const char *presets[] = {"conv2d", "linear", "conv2d-wide", NULL, "linear-wide"};

/* The user's own shapes, as the CLI builds them (src/cli/opsel.c). */
static int own_signature(char *text, syno_signature_t *sig, const char **op_text) {
  char *line[4];
  syno_error_t err;
  fuzz_split(text, '\n', line, 4);
  *op_text = line[3];
  syno_vars_init(&sig->vars);
  if (syno_vars_scan(&sig->vars, line[0], &err) || syno_vars_scan(&sig->vars, line[1], &err) ||
      syno_vars_scan(&sig->vars, line[3], &err) || syno_shape_parse(&sig->vars, line[0], &sig->input, &err) ||
      syno_shape_parse(&sig->vars, line[1], &sig->output, &err) || syno_vars_bind(&sig->vars, line[2], &err))
    return -1;
  return 0;
}

static void lower_and_print(const syno_operator_t *op, const syno_vars_t *v) {
  syno_error_t err;
  syno_lowered_t *low = malloc(sizeof *low);
  char *buf = malloc(1 << 16);
  if (low && buf && syno_lower(op, low, &err) == 0) {
    syno_nest_print(&low->forward, v, buf, 1 << 16);
    for (int t = 0; t < op->n_tensors; t++) syno_nest_print(&low->backward[t], v, buf, 1 << 16);
    for (int b = 0; b < v->nbind; b++) {
      int64_t flops, params;
      syno_forward_flops(op, &low->forward, v, b, &flops, &err);
      syno_operator_params(op, b, &params, &err);
      for (int t = 0; t < op->n_tensors; t++) syno_nest_flops(&low->backward[t], v, b, &flops, &err);
    }
    syno_codegen_c(op, 0, buf, 1 << 16, &err);
    syno_codegen_pytorch(op, 0, buf, 1 << 16, &err);
    syno_codegen_tvm(op, 0, buf, 1 << 16, &err);
  }
  free(buf);
  free(low);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  char *text = fuzz_cstr(data + 1, size - 1);
  if (!text) return 0;
  syno_signature_t sig;
  syno_error_t err;
  const char *op_text = text;
  int rc = presets[data[0] % 5] ? syno_signature_preset(presets[data[0] % 5], "", &sig, &err)
                                : own_signature(text, &sig, &op_text);
  syno_graph_t *g = rc ? NULL : syno_graph_new(&sig.vars);
  syno_operator_t op, back;
  if (g && syno_operator_parse(g, op_text, &sig.input, &sig.output, &op, &err) == 0) {
    char printed[8192];
    int n = syno_operator_print(&op, printed, sizeof printed);
    FUZZ_CHECK(n > 0 && (size_t)n < sizeof printed);
    FUZZ_CHECK(syno_operator_parse(g, printed, &sig.input, &sig.output, &back, &err) == 0);
    FUZZ_CHECK(syno_operator_eq(&op, &back));
    lower_and_print(&op, &sig.vars);
  }
  syno_graph_free(g);
  free(text);
  return 0;
}
