/* The C emitter: the forward nest and the backward nest of every tensor as one
 * self-contained C file: syno_op_forward, and syno_op_backward giving the gradients of the
 * input and of every weight from the gradient of the output.
 *
 * Each nest is the interpreter's evaluation written out: the outer loops
 * over its target (the output, or a gradient) in row-major order, the reduction loops inside, guards as
 * `continue`, zero padding (restrict) as a flag that drops the product, and
 * a double accumulator divided by the Mean divisor. Every size is a
 * constant of the chosen binding, so the code needs no syno header. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "emit.h"
#include "syno/alloc.h"
#include "syno/codegen.h"
#include "syno/lower.h"
#include "syno/strbuf.h"

static const codegen_dialect_t cd = {
    .who = "codegen c",
    .letters = false,
    .num_pre = "INT64_C(",
    .num_post = ")",
    .div = "fdiv(",
    .mod = "emod(",
    .pad = "pad(",
    .pad_post = ", &ok)",
};

static void indent(syno_strbuf_t *sb, int d) {
  for (int i = 0; i < d; i++) syno_strbuf_printf(sb, "  ");
}

/* One nest as `static void NAME(x, w, gy, out)`: out[target] = the nest's sum, every point in
 * the interpreter's order (outer loops row-major over the target, ri_(n-1) outermost). */
static int emit_nest(syno_strbuf_t *sb, const syno_operator_t *op, const syno_nest_t *nest, const char *name,
                     const syno_vars_t *v, int binding, syno_error_t *err) {
  int64_t div;
  if (syno_size_eval(v, nest->divisor, binding, &div, err)) return -1;
  syno_strbuf_printf(sb,
                     "static void %s(const float *x, const float *const *w, const float *gy, float *out) {\n"
                     "  (void)x; (void)w; (void)gy; (void)fdiv; (void)emod; (void)pad;\n"
                     "  int64_t at = 0;\n",
                     name);
  int d = 1;
  for (int i = 0; i < nest->n_outer; i++) {
    int64_t e;
    if (syno_size_eval(v, nest->outer[i], binding, &e, err)) return -1;
    indent(sb, d++);
    syno_strbuf_printf(sb, "for (int64_t i%d = 0; i%d < INT64_C(%" PRId64 "); i%d++) {\n", i, i, e, i);
  }
  indent(sb, d);
  syno_strbuf_printf(sb, "double acc = 0;\n");
  int d_outer = d;
  for (int i = nest->n_inner - 1; i >= 0; i--) {
    int64_t e;
    if (syno_size_eval(v, nest->inner[i], binding, &e, err)) return -1;
    indent(sb, d++);
    syno_strbuf_printf(sb, "for (int64_t r%d = 0; r%d < INT64_C(%" PRId64 "); r%d++) {\n", i, i, e, i);
  }
  /* The point's body; `continue` leaves it (a guard failed or a read is padding). */
  indent(sb, d++);
  syno_strbuf_printf(sb, "do {\n");
  indent(sb, d);
  syno_strbuf_printf(sb, "int ok = 1;\n");
  for (int g = 0; g < nest->n_guards; g++) {
    const syno_guard_t *gd = &nest->guard[g];
    indent(sb, d);
    syno_strbuf_printf(sb, "{\n");
    indent(sb, d + 1);
    syno_strbuf_printf(sb, "int64_t ga = ");
    if (codegen_expr(sb, nest, gd->a, v, binding, &cd, NULL, err)) return -1;
    syno_strbuf_printf(sb, ", gb = ");
    if (codegen_expr(sb, nest, gd->b, v, binding, &cd, NULL, err)) return -1;
    syno_strbuf_printf(sb, ";\n");
    indent(sb, d + 1);
    switch (gd->kind) {
      case SYNO_GUARD_RANGE: syno_strbuf_printf(sb, "if (!ok || ga < 0 || ga >= gb) continue;\n"); break;
      case SYNO_GUARD_DIVIDES: syno_strbuf_printf(sb, "if (!ok || emod(ga, gb) != 0) continue;\n"); break;
      case SYNO_GUARD_EQUAL: syno_strbuf_printf(sb, "if (!ok || ga != gb) continue;\n"); break;
    }
    indent(sb, d);
    syno_strbuf_printf(sb, "}\n");
  }
  for (int f = 0; f < nest->n_factors; f++) {
    const syno_access_t *a = &nest->factor[f];
    if (a->tensor < -1 || a->tensor >= op->n_tensors)
      return syno_error_set(err, "codegen c: factor %d reads tensor %d, not a tensor of the operator", f, a->tensor);
    indent(sb, d);
    syno_strbuf_printf(sb, "int64_t o%d = 0", f);
    if (codegen_offset(sb, nest, a, v, binding, &cd, NULL, err)) return -1;
    syno_strbuf_printf(sb, ";\n");
  }
  indent(sb, d);
  syno_strbuf_printf(sb, "if (!ok) continue;\n");
  indent(sb, d);
  syno_strbuf_printf(sb, "acc += 1.0");
  for (int f = 0; f < nest->n_factors; f++) {
    const syno_access_t *a = &nest->factor[f];
    if (a->tensor < 0)
      syno_strbuf_printf(sb, " * (double)gy[o%d]", f);
    else if (a->tensor == 0)
      syno_strbuf_printf(sb, " * (double)x[o%d]", f);
    else
      syno_strbuf_printf(sb, " * (double)w[%d][o%d]", a->tensor - 1, f);
  }
  syno_strbuf_printf(sb, ";\n");
  indent(sb, --d);
  syno_strbuf_printf(sb, "} while (0);\n");
  while (d > d_outer) {
    indent(sb, --d);
    syno_strbuf_printf(sb, "}\n");
  }
  indent(sb, d);
  syno_strbuf_printf(sb, "out[at++] = (float)(acc / %" PRId64 ".0);\n", div);
  while (d > 1) {
    indent(sb, --d);
    syno_strbuf_printf(sb, "}\n");
  }
  syno_strbuf_printf(sb, "}\n\n");
  return 0;
}

int syno_codegen_c(const syno_operator_t *op, int binding, char *buf, size_t n, syno_error_t *err) {
  const syno_vars_t *v = syno_graph_vars(op->g);
  if (binding < 0 || binding >= v->nbind)
    return syno_error_set(err, "codegen c: binding %d does not exist (the operator has %d)", binding, v->nbind);
  syno_lowered_t *low = syno_malloc(sizeof *low);
  if (!low) return syno_error_set(err, "out of memory");
  if (syno_lower(op, low, err)) goto fail;
  syno_strbuf_t sb;
  syno_strbuf_init(&sb, buf, n);
  char text[4096], bind[512];
  syno_operator_print(op, text, sizeof text);
  syno_vars_print_binding(v, binding, bind, sizeof bind);
  syno_strbuf_printf(&sb, "/* Generated by syno: the forward and backward passes of\n *   %s\n", text);
  syno_strbuf_printf(&sb, " * under the binding %s.\n", bind);
  syno_strbuf_printf(&sb,
                     " * Every tensor is dense row-major float32. x: the input; w[t-1]: weight t;\n"
                     " * y: the output; gy: the gradient of the loss by y; gx, gw[t-1]: the\n"
                     " * gradients of x and of weight t. Outputs are overwritten. */\n");
  syno_strbuf_printf(&sb, "#include <stdint.h>\n\n");
  syno_strbuf_printf(&sb,
                     "static int64_t fdiv(int64_t a, int64_t b) {\n"
                     "  int64_t q = a / b;\n"
                     "  return (a %% b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
                     "}\n\n"
                     "static int64_t emod(int64_t a, int64_t b) {\n"
                     "  int64_t r = a %% b;\n"
                     "  return r < 0 ? r + (b < 0 ? -b : b) : r;\n"
                     "}\n\n"
                     "/* Zero padding: clears *ok when a leaves [0, size). */\n"
                     "static int64_t pad(int64_t a, int64_t size, int *ok) {\n"
                     "  if (a < 0 || a >= size) *ok = 0;\n"
                     "  return a;\n"
                     "}\n\n");
  if (emit_nest(&sb, op, &low->forward, "forward_nest", v, binding, err)) goto fail;
  for (int t = 0; t < op->n_tensors; t++) {
    char name[32];
    snprintf(name, sizeof name, "grad_nest_%d", t);
    if (emit_nest(&sb, op, &low->backward[t], name, v, binding, err)) goto fail;
  }
  syno_strbuf_printf(&sb,
                     "void syno_op_forward(const float *x, const float *const *w, float *y);\n"
                     "void syno_op_backward(const float *x, const float *const *w, const float *gy, float *gx,\n"
                     "                      float *const *gw);\n\n"
                     "void syno_op_forward(const float *x, const float *const *w, float *y) {\n"
                     "  forward_nest(x, w, 0, y);\n"
                     "}\n\n"
                     "void syno_op_backward(const float *x, const float *const *w, const float *gy, float *gx,\n"
                     "                      float *const *gw) {\n"
                     "  (void)gw;\n"
                     "  grad_nest_0(x, w, gy, gx);\n");
  for (int t = 1; t < op->n_tensors; t++) syno_strbuf_printf(&sb, "  grad_nest_%d(x, w, gy, gw[%d]);\n", t, t - 1);
  syno_strbuf_printf(&sb, "}\n");
  syno_free(low);
  if (sb.len > (size_t)INT32_MAX) return syno_error_set(err, "codegen c: the generated text is too long");
  return (int)sb.len;
fail:
  syno_free(low);
  return -1;
}
