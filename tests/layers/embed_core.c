/* An embedder of the core alone: includes the one header, links only
 * syno_core and syno_base (no BLAS, oneDNN, SQLite), and parses the builtin
 * conv2d against the conv2d preset. It links only while the core calls
 * nothing above it. */
#include <stdio.h>

#include "syno/syno.h"

int main(void) {
  syno_error_t err;
  syno_space_spec_t spec;
  if (syno_space_preset("conv2d-wide", "N=1,C_in=2,C_out=2,H=4,W=4", &spec, &err)) {
    fprintf(stderr, "preset: %s\n", err.msg);
    return 1;
  }
  const syno_builtin_t *b = syno_builtin_find("conv2d");
  syno_graph_t *g = syno_graph_new(&spec.vars);
  syno_operator_t op;
  int rc = !g || !b || syno_operator_parse(g, b->text, &spec.input, &spec.output, &op, &err);
  if (!rc)
    printf("conv2d parses against the conv2d signature: %d tensors\n", op.n_tensors);
  else
    fprintf(stderr, "parse: %s\n", err.msg);
  syno_graph_free(g);
  return rc;
}
