/* The Halide emitter: the forward loop nest as a Halide Generator (C++), for one binding.
 *
 * The nest becomes one Func over the output axes with a pure definition 0 and one update
 * that adds, over an RDom of the reduction loops, the product of the factors, each read
 * through the nest's own index expressions (printed by the shared printer, emit.h, so Halide
 * reads what the interpreter reads). Halide's `/` and `%` on integer Exprs are already floor
 * division and the Euclidean remainder. Zero padding (restrict) and guards become one
 * condition: the summand is select(cond, product, 0), and a padded read is made at the
 * clamped index, so every read stays inside its buffer. (A zero-extended boundary,
 * BoundaryConditions::constant_exterior, would say the same, but the Adams2019
 * autoscheduler has crashed on it; a select over a clamped read it handles.)
 *
 * Halide buffers list their innermost (stride 1) dimension first, so a row-major tensor
 * [d0, .., dk] is a Halide buffer of dimensions (dk, .., d0) and every access is written in
 * reverse. The inputs and the output carry their concrete extents both as constraints (the
 * compiled code may rely on them) and as estimates for the autoscheduler. Without an
 * autoscheduler the accumulator is computed at root and nothing else is scheduled. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "syno/alloc.h"
#include "syno/codegen.h"
#include "syno/hash.h"
#include "syno/lower.h"
#include "syno/strbuf.h"

static const codegen_dialect_t hd = {
    .who = "codegen halide",
    .letters = false,
    .num_pre = "Expr(",
    .num_post = ")",
    .div = "fdiv(",
    .mod = "emod(",
    .pad = "pad(",
    .pad_post = ", ok)",
};

int syno_codegen_halide_name(const syno_operator_t *op, int binding, char *buf, size_t n) {
  return syno_codegen_halide_name_in(op, syno_graph_vars(op->g), binding, buf, n);
}

int syno_codegen_halide_name_in(const syno_operator_t *op, const syno_vars_t *v, int binding, char *buf, size_t n) {
  char text[4096], bind[512];
  syno_operator_print(op, text, sizeof text);
  bind[0] = 0;
  if (binding >= 0 && binding < v->nbind) syno_vars_print_binding(v, binding, bind, sizeof bind);
  /* FNV-1a over the text and the binding, finished by the project's mixer. */
  uint64_t h = 1469598103934665603ull;
  for (const char *p = text; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  h = (h ^ 0xff) * 1099511628211ull;
  for (const char *p = bind; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  return snprintf(buf, n, "syno_op_%016" PRIx64, syno_hash_fmix64(h));
}

static void tensor_name(char *buf, size_t n, int t) {
  if (t == 0)
    snprintf(buf, n, "x");
  else
    snprintf(buf, n, "w%d", t);
}

/* The extents of a buffer, innermost first: {{0, dk}, .., {0, d0}}. */
static void extents(syno_strbuf_t *sb, const int64_t *dims, int rank) {
  syno_strbuf_printf(sb, "{");
  for (int i = rank - 1; i >= 0; i--) syno_strbuf_printf(sb, "{0, %" PRId64 "}%s", dims[i], i ? ", " : "");
  syno_strbuf_printf(sb, "}");
}

/* Constraints and estimates of one buffer parameter. */
static void bounds(syno_strbuf_t *sb, const char *name, const int64_t *dims, int rank) {
  for (int i = rank - 1, k = 0; i >= 0; i--, k++)
    syno_strbuf_printf(sb, "    %s.dim(%d).set_bounds(0, %" PRId64 ");\n", name, k, dims[i]);
  syno_strbuf_printf(sb, "    %s.set_estimates(", name);
  extents(sb, dims, rank);
  syno_strbuf_printf(sb, ");\n");
}

static void outer_args(syno_strbuf_t *sb, int n_outer) {
  for (int i = n_outer - 1; i >= 0; i--) syno_strbuf_printf(sb, "i%d%s", i, i ? ", " : "");
}

int syno_codegen_halide(const syno_operator_t *op, int binding, char *buf, size_t n, syno_error_t *err) {
  return syno_codegen_halide_in(op, syno_graph_vars(op->g), binding, buf, n, err);
}

int syno_codegen_halide_in(const syno_operator_t *op, const syno_vars_t *v, int binding, char *buf, size_t n,
                           syno_error_t *err) {
  if (binding < 0 || binding >= v->nbind)
    return syno_error_set(err, "codegen halide: binding %d does not exist (the operator has %d)", binding, v->nbind);
  syno_nest_t *nest = syno_malloc(sizeof *nest);
  if (!nest) return syno_error_set(err, "out of memory");
  if (syno_lower_forward(op, nest, err)) goto fail;
  int64_t shape[SYNO_MAX_TENSORS][SYNO_MAX_RANK], out[SYNO_MAX_RANK], div;
  for (int t = 0; t < op->n_tensors; t++) {
    syno_shape_t s;
    syno_operator_tensor_shape(op, t, &s);
    for (int i = 0; i < s.rank; i++)
      if (syno_size_eval(v, s.dim[i], binding, &shape[t][i], err)) goto fail;
  }
  for (int i = 0; i < nest->n_outer; i++)
    if (syno_size_eval(v, nest->outer[i], binding, &out[i], err)) goto fail;
  if (syno_size_eval(v, nest->divisor, binding, &div, err)) goto fail;

  syno_strbuf_t sb;
  syno_strbuf_init(&sb, buf, n);
  char text[4096], bind[512], name[64], tn[16];
  syno_operator_print(op, text, sizeof text);
  syno_vars_print_binding(v, binding, bind, sizeof bind);
  syno_codegen_halide_name_in(op, v, binding, name, sizeof name);
  syno_strbuf_printf(&sb, "// Generated by syno: the forward pass of the operator\n//   %s\n", text);
  syno_strbuf_printf(&sb, "// under the binding %s, as a Halide generator named %s.\n", bind, name);
  syno_strbuf_printf(&sb,
                     "// Buffers are float32 and dense; Halide lists a row-major tensor's axes\n"
                     "// innermost first. Inputs: x, then the weights w1..; output: y.\n"
                     "// Build: c++ -std=c++17 -fno-rtti THIS.cpp GenGen.cpp -lHalide -o gen, then\n"
                     "//   ./gen -g %s -o DIR -e object,c_header target=host\n"
                     "#include \"Halide.h\"\n\n"
                     "#ifndef SYNO_HALIDE_HELPERS\n"
                     "#define SYNO_HALIDE_HELPERS\n"
                     "namespace syno_halide {\n"
                     "// Halide's integer / and %% are floor division and the Euclidean remainder.\n"
                     "inline Halide::Expr fdiv(Halide::Expr a, Halide::Expr b) { return a / b; }\n"
                     "inline Halide::Expr emod(Halide::Expr a, Halide::Expr b) { return a %% b; }\n"
                     "// Zero padding: the product counts only where 0 <= a < size; the read itself\n"
                     "// is made at the clamped index, so it stays inside the buffer.\n"
                     "inline Halide::Expr pad(Halide::Expr a, Halide::Expr size, std::vector<Halide::Expr> &ok) {\n"
                     "  ok.push_back(a >= 0 && a < size);\n"
                     "  return Halide::clamp(a, 0, size - 1);\n"
                     "}\n"
                     "}  // namespace syno_halide\n"
                     "#endif\n\n",
                     name);
  syno_strbuf_printf(&sb,
                     "namespace {\n\n"
                     "class Gen_%s : public Halide::Generator<Gen_%s> {\n"
                     " public:\n",
                     name, name);
  for (int t = 0; t < op->n_tensors; t++) {
    tensor_name(tn, sizeof tn, t);
    syno_strbuf_printf(&sb, "  Input<Buffer<float>> %s{\"%s\", %d};\n", tn, tn, op->rank[t]);
  }
  syno_strbuf_printf(&sb, "  Output<Buffer<float>> y{\"y\", %d};\n\n", nest->n_outer);
  syno_strbuf_printf(&sb,
                     "  void generate() {\n"
                     "    using namespace Halide;\n"
                     "    using namespace syno_halide;\n");
  for (int t = 0; t < op->n_tensors; t++) {
    tensor_name(tn, sizeof tn, t);
    bounds(&sb, tn, shape[t], op->rank[t]);
  }
  for (int i = 0; i < nest->n_outer; i++) syno_strbuf_printf(&sb, "    Var i%d(\"i%d\");\n", i, i);
  if (nest->n_inner) {
    /* r0 is the innermost reduction loop, as in the interpreter's order. */
    syno_strbuf_printf(&sb, "    RDom r({");
    for (int i = 0; i < nest->n_inner; i++) {
      int64_t e;
      if (syno_size_eval(v, nest->inner[i], binding, &e, err)) goto fail;
      syno_strbuf_printf(&sb, "{0, %" PRId64 "}%s", e, i + 1 < nest->n_inner ? ", " : "");
    }
    syno_strbuf_printf(&sb, "}, \"r\");\n");
    for (int i = 0; i < nest->n_inner; i++) syno_strbuf_printf(&sb, "    Expr r%d = r[%d];\n", i, i);
  }
  syno_strbuf_printf(&sb, "    std::vector<Expr> ok;\n");
  for (int g = 0; g < nest->n_guards; g++) {
    const syno_guard_t *gd = &nest->guard[g];
    syno_strbuf_printf(&sb, "    {\n      Expr ga = ");
    if (codegen_expr(&sb, nest, gd->a, v, binding, &hd, NULL, err)) goto fail;
    syno_strbuf_printf(&sb, ", gb = ");
    if (codegen_expr(&sb, nest, gd->b, v, binding, &hd, NULL, err)) goto fail;
    switch (gd->kind) {
      case SYNO_GUARD_RANGE: syno_strbuf_printf(&sb, ";\n      ok.push_back(ga >= 0 && ga < gb);\n"); break;
      case SYNO_GUARD_DIVIDES: syno_strbuf_printf(&sb, ";\n      ok.push_back(ga %% gb == 0);\n"); break;
      case SYNO_GUARD_EQUAL: syno_strbuf_printf(&sb, ";\n      ok.push_back(ga == gb);\n"); break;
    }
    syno_strbuf_printf(&sb, "    }\n");
  }
  syno_strbuf_printf(&sb, "    Expr v = ");
  for (int f = 0; f < nest->n_factors; f++) {
    const syno_access_t *a = &nest->factor[f];
    if (a->tensor < 0 || a->tensor >= op->n_tensors) {
      syno_error_set(err, "codegen halide: factor %d reads tensor %d, not a tensor of the operator", f, a->tensor);
      goto fail;
    }
    tensor_name(tn, sizeof tn, a->tensor);
    syno_strbuf_printf(&sb, "%s%s(", f ? " * " : "", tn);
    for (int i = a->rank - 1; i >= 0; i--) {
      if (codegen_expr(&sb, nest, a->idx[i], v, binding, &hd, NULL, err)) goto fail;
      if (i) syno_strbuf_printf(&sb, ", ");
    }
    syno_strbuf_printf(&sb, ")");
  }
  if (nest->n_factors == 0) syno_strbuf_printf(&sb, "Expr(1.0f)");
  syno_strbuf_printf(&sb,
                     ";\n"
                     "    Expr cond = Halide::Internal::const_true();\n"
                     "    for (const Expr &c : ok) cond = cond && c;\n"
                     "    v = select(cond, v, 0.0f);\n"
                     "    acc(");
  outer_args(&sb, nest->n_outer);
  syno_strbuf_printf(&sb, ") = 0.0f;\n    acc(");
  outer_args(&sb, nest->n_outer);
  syno_strbuf_printf(&sb, ") += v;\n    y(");
  outer_args(&sb, nest->n_outer);
  syno_strbuf_printf(&sb, ") = acc(");
  outer_args(&sb, nest->n_outer);
  if (div != 1)
    syno_strbuf_printf(&sb, ") / %" PRId64 ".0f;\n", div);
  else
    syno_strbuf_printf(&sb, ");\n");
  /* The output's buffer exists only once y is defined. */
  bounds(&sb, "y", out, nest->n_outer);
  syno_strbuf_printf(&sb,
                     "  }\n\n"
                     "  void schedule() {\n"
                     "    if (!auto_schedule) acc.compute_root();\n"
                     "  }\n\n"
                     " private:\n"
                     "  Func acc{\"acc\"};\n"
                     "};\n\n"
                     "}  // namespace\n\n"
                     "HALIDE_REGISTER_GENERATOR(Gen_%s, %s)\n",
                     name, name);
  syno_free(nest);
  if (sb.len > (size_t)INT32_MAX) return syno_error_set(err, "codegen halide: the generated text is too long");
  return (int)sb.len;
fail:
  syno_free(nest);
  return -1;
}
