/* syno/codegen.h - a finished operator as source code for other tools.
 *
 * Every emitter has snprintf semantics (see syno/strbuf.h): it writes what
 * fits into buf, always NUL-terminates, and returns the length the whole
 * text would have had, or -1 with err set when the operator cannot be
 * emitted. Generated code is checked against the reference interpreter in
 * tests (PyTorch through python3-torch, C by compiling it).
 *
 *   dot      a Graphviz drawing of the operator's graph (for `dot -Tpng`)
 *   pytorch  a torch.nn.Module whose forward computes the operator
 *   c        a self-contained C function computing the forward pass */
#ifndef SYNO_CODEGEN_H
#define SYNO_CODEGEN_H

#include <stddef.h>

#include "syno/error.h"
#include "syno/graph.h"

int syno_codegen_dot(const syno_operator_t *op, char *buf, size_t n, syno_error_t *err);
int syno_codegen_pytorch(const syno_operator_t *op, int binding, char *buf, size_t n, syno_error_t *err);
int syno_codegen_c(const syno_operator_t *op, int binding, char *buf, size_t n, syno_error_t *err);

#endif
