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
 *   tvm      a Python file of TVM TE compute definitions (forward) and a
 *            Relax wrapper (docs/semantics.md §9.2)
 *   c        self-contained C functions for the forward pass and the
 *            gradients of the input and of every weight
 *   halide   a Halide Generator (C++) of the forward pass, usable with
 *            libHalide and GenGen.cpp alone (docs/halide.md)
 *
 * pytorch, tvm, c and halide start from the same lowered loop nests (syno/lower.h)
 * the interpreter evaluates, and print their index expressions with one
 * shared printer (src/codegen/emit.h). */
#ifndef SYNO_CODEGEN_H
#define SYNO_CODEGEN_H

#include <stddef.h>

#include "syno/error.h"
#include "syno/graph.h"

int syno_codegen_dot(const syno_operator_t *op, char *buf, size_t n, syno_error_t *err);
int syno_codegen_pytorch(const syno_operator_t *op, int binding, char *buf, size_t n, syno_error_t *err);
int syno_codegen_tvm(const syno_operator_t *op, int binding, char *buf, size_t n, syno_error_t *err);
int syno_codegen_c(const syno_operator_t *op, int binding, char *buf, size_t n, syno_error_t *err);
int syno_codegen_halide(const syno_operator_t *op, int binding, char *buf, size_t n, syno_error_t *err);
/* The name the Halide generator of op at binding registers ("syno_op_" and 16 hex digits of
 * a hash of the operator's text and the binding); snprintf semantics. */
int syno_codegen_halide_name(const syno_operator_t *op, int binding, char *buf, size_t n);
/* The same two with the sizes from binding b of v instead of the operator's own variables (a
 * symbolic operator, as a slot holds it, under a slot's binding: v must declare the variables
 * of op's graph in the same order, as a copy of them with bindings appended does). */
int syno_codegen_halide_in(const syno_operator_t *op, const syno_vars_t *v, int binding, char *buf, size_t n,
                           syno_error_t *err);
int syno_codegen_halide_name_in(const syno_operator_t *op, const syno_vars_t *v, int binding, char *buf, size_t n);

#endif
