/* The index-expression printer every code generator uses (see emit.h). Parentheses go around
 * every binary node, so no language's precedence rules need to be known. */
#include "emit.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "../lower/expr_eval.h"
#include "syno/alloc.h"

char codegen_letter(int j) { return j < 26 ? (char)('a' + j) : (char)('A' + j - 26); }

int codegen_expr(syno_strbuf_t *sb, const syno_nest_t *n, int i, const syno_vars_t *v, int b,
                 const codegen_dialect_t *d, unsigned *used, syno_error_t *err) {
  const syno_expr_t *x = &n->node[i];
  int64_t val;
  switch (x->kind) {
    case SYNO_EXPR_OUTER:
    case SYNO_EXPR_INNER:
      if (used) *used |= 1u << syno_expr_var(n, x);
      if (d->letters)
        syno_strbuf_printf(sb, "%c", codegen_letter(syno_expr_var(n, x)));
      else
        syno_strbuf_printf(sb, "%c%d", x->kind == SYNO_EXPR_OUTER ? 'i' : 'r', x->var);
      return 0;
    case SYNO_EXPR_SIZE:
      if (syno_size_eval(v, x->size, b, &val, err)) return -1;
      syno_strbuf_printf(sb, "%s%" PRId64 "%s", d->num_pre, val, d->num_post);
      return 0;
    case SYNO_EXPR_IMM: syno_strbuf_printf(sb, "%s%" PRId64 "%s", d->num_pre, x->imm, d->num_post); return 0;
    default: break;
  }
  const char *pre = "(", *mid = ", ", *post = ")";
  switch (x->kind) {
    case SYNO_EXPR_ADD: mid = " + "; break;
    case SYNO_EXPR_SUB: mid = " - "; break;
    case SYNO_EXPR_MUL: mid = " * "; break;
    case SYNO_EXPR_DIV: pre = d->div; break;
    case SYNO_EXPR_MOD: pre = d->mod; break;
    case SYNO_EXPR_RESTRICT:
      pre = d->pad;
      post = d->pad_post;
      break;
    default: return syno_error_set(err, "%s: unknown index expression kind %d", d->who, (int)x->kind);
  }
  syno_strbuf_printf(sb, "%s", pre);
  if (codegen_expr(sb, n, x->a, v, b, d, used, err)) return -1;
  syno_strbuf_printf(sb, "%s", mid);
  if (codegen_expr(sb, n, x->b, v, b, d, used, err)) return -1;
  syno_strbuf_printf(sb, "%s", post);
  return 0;
}

int codegen_offset(syno_strbuf_t *sb, const syno_nest_t *n, const syno_access_t *a, const syno_vars_t *v, int b,
                   const codegen_dialect_t *d, unsigned *used, syno_error_t *err) {
  int64_t strides[SYNO_MAX_RANK];
  if (syno_access_strides(a, v, b, strides, NULL, err)) return -1;
  for (int i = 0; i < a->rank; i++) {
    syno_strbuf_printf(sb, " + ");
    if (codegen_expr(sb, n, a->idx[i], v, b, d, used, err)) return -1;
    syno_strbuf_printf(sb, " * %s%" PRId64 "%s", d->num_pre, strides[i], d->num_post);
  }
  return 0;
}

syno_nest_t *codegen_forward_at(const syno_operator_t *op, const syno_vars_t *v, int b, const char *who,
                                codegen_extents_t *x, syno_error_t *err) {
  if (b < 0 || b >= v->nbind) {
    syno_error_set(err, "%s: binding %d does not exist (the operator has %d)", who, b, v->nbind);
    return NULL;
  }
  syno_nest_t *nest = syno_malloc(sizeof *nest);
  if (!nest) {
    syno_error_set(err, "out of memory");
    return NULL;
  }
  if (syno_lower_forward(op, nest, err)) goto fail;
  int rank[SYNO_MAX_TENSORS + 1];
  if (syno_operator_extents(op, v, b, rank, x->shape, err)) goto fail;
  for (int i = 0; i < nest->n_outer; i++)
    if (syno_size_eval(v, nest->outer[i], b, &x->out[i], err)) goto fail;
  if (syno_size_eval(v, nest->divisor, b, &x->div, err)) goto fail;
  return nest;
fail:
  syno_free(nest);
  return NULL;
}

static const char *reserved[] = {"F", "torch", "math", "np", "te", "tvm", "relax", "x", "y", "t", "w", "st", "lo", "hi", "ok", "v", "self", NULL};

void codegen_primary_name(const syno_vars_t *v, int i, char *out, size_t n) {
  const char *s = v->var[SYNO_PRIMARY][i].name;
  bool clash = false;
  for (int k = 0; reserved[k]; k++) clash |= strcmp(s, reserved[k]) == 0;
  snprintf(out, n, "%s%s", clash ? "size_" : "", s);
}

const char *codegen_size(codegen_sizes_t *z, syno_size_t a) {
  for (int i = 0; i < z->n; i++)
    if (syno_size_eq(z->size[i], a)) return z->name[i];
  if (z->n >= CODEGEN_MAX_SIZES) {
    if (!z->failed) syno_error_set(z->err, "%s: more than %d distinct sizes", z->who, CODEGEN_MAX_SIZES);
    z->failed = true;
    return "?";
  }
  syno_size_t coeff = a;
  memset(coeff.p, 0, sizeof coeff.p);
  int64_t num, den;
  if (syno_size_eval_frac(z->v, coeff, z->b, &num, &den, z->err)) {
    z->failed = true;
    return "?";
  }
  char prod[256] = "", text[128];
  syno_strbuf_t ps;
  syno_strbuf_init(&ps, prod, sizeof prod);
  int factors = 0, lone = -1;
  for (int i = 0; i < z->v->n[SYNO_PRIMARY]; i++) {
    if (a.p[i] < 0) {
      syno_size_print(z->v, a, text, sizeof text);
      if (!z->failed) syno_error_set(z->err, "%s: the size %s has a negative power of a primary variable", z->who, text);
      z->failed = true;
      return "?";
    }
    for (int k = 0; k < a.p[i]; k++) {
      char pn[CODEGEN_NAME_LEN];
      codegen_primary_name(z->v, i, pn, sizeof pn);
      syno_strbuf_printf(&ps, "%s%s", factors ? " * " : "", pn);
      lone = factors ? -1 : i;
      factors++;
    }
  }
  char *name = z->name[z->n];
  if (factors == 0) {
    if (den != 1) {
      syno_size_print(z->v, a, text, sizeof text);
      if (!z->failed) syno_error_set(z->err, "%s: the size %s is %" PRId64 "/%" PRId64 ", not whole", z->who, text, num, den);
      z->failed = true;
      return "?";
    }
    snprintf(name, CODEGEN_NAME_LEN, "%" PRId64, num);
  } else if (factors == 1 && num == 1 && den == 1 && lone >= 0) {
    codegen_primary_name(z->v, lone, name, CODEGEN_NAME_LEN);
  } else {
    snprintf(name, CODEGEN_NAME_LEN, "s%d", z->next_local++);
    syno_size_print(z->v, a, text, sizeof text);
    if (num != 1) syno_strbuf_printf(&ps, " * %" PRId64, num);
    if (den != 1 && !z->te) {
      syno_strbuf_printf(z->pro, "%sif (%s) %% %" PRId64 " != 0:\n", z->indent, prod, den);
      syno_strbuf_printf(z->pro, "%s    raise ValueError('SynoOp: the size %s = (%s) / %" PRId64
                                 " is not a whole number at'", z->indent, text, prod, den);
      for (int i = 0; i < z->v->n[SYNO_PRIMARY]; i++)
        if (a.p[i] > 0) {
          char pn[CODEGEN_NAME_LEN];
          codegen_primary_name(z->v, i, pn, sizeof pn);
          syno_strbuf_printf(z->pro, " + ' %s = ' + str(%s)", pn, pn);
        }
      syno_strbuf_printf(z->pro, ")\n");
    }
    if (den != 1 && z->te)
      syno_strbuf_printf(z->pro, "%s%s = te.floordiv(%s, %" PRId64 ")  # %s\n", z->indent, name, prod, den, text);
    else if (den != 1)
      syno_strbuf_printf(z->pro, "%s%s = (%s) // %" PRId64 "  # %s\n", z->indent, name, prod, den, text);
    else
      syno_strbuf_printf(z->pro, "%s%s = %s  # %s\n", z->indent, name, prod, text);
  }
  z->size[z->n++] = a;
  return name;
}


void codegen_py_header(syno_strbuf_t *sb, const syno_operator_t *op, int binding, const syno_size_t *out, int out_rank,
                       const char *intro, const char *flops) {
  const syno_vars_t *v = syno_graph_vars(op->g);
  char text[4096], bind[512], tmp[256];
  syno_operator_print(op, text, sizeof text);
  syno_vars_print_binding(v, binding, bind, sizeof bind);
  syno_strbuf_printf(sb, "# Generated by syno: the operator\n#   %s\n# exported at the binding %s.\n%s#\n", text,
                     bind, intro);
  syno_shape_t s;
  syno_operator_tensor_shape(op, 0, &s);
  syno_shape_print(v, &s, tmp, sizeof tmp);
  syno_strbuf_printf(sb, "# input  %s\n", tmp);
  syno_shape_t o = {.rank = out_rank};
  for (int i = 0; i < out_rank; i++) o.dim[i] = out[i];
  syno_shape_print(v, &o, tmp, sizeof tmp);
  syno_strbuf_printf(sb, "# output %s\n", tmp);
  for (int t = 1; t < op->n_tensors; t++) {
    syno_operator_tensor_shape(op, t, &s);
    syno_shape_print(v, &s, tmp, sizeof tmp);
    syno_strbuf_printf(sb, "# w%d     %s\n", t, tmp);
  }
  if (flops) syno_strbuf_printf(sb, "# FLOPs  %s (a multiply-add counts as 2)\n", flops);
  syno_strbuf_printf(sb, "# fixed  ");
  for (int i = 0; i < v->n[SYNO_COEFF]; i++)
    syno_strbuf_printf(sb, "%s%s=%" PRId64, i ? ", " : "", v->var[SYNO_COEFF][i].name, v->bind[binding].c[i]);
  syno_strbuf_printf(sb, "%s\n", v->n[SYNO_COEFF] ? "" : "none");
}

int codegen_lone_primary(syno_size_t s) {
  unsigned m = syno_size_primaries(s);
  if (!m || (m & (m - 1))) return -1;
  int i = __builtin_ctz(m);
  return s.p[i] == 1 ? i : -1;
}

unsigned codegen_used_primaries(const syno_operator_t *op, const syno_nest_t *fwd) {
  unsigned used = 0;
  for (int t = 0; t < op->n_tensors; t++) {
    syno_shape_t s;
    syno_operator_tensor_shape(op, t, &s);
    for (int a = 0; a < s.rank; a++) used |= syno_size_primaries(s.dim[a]);
  }
  for (int v = 0; v < fwd->n_outer + fwd->n_inner; v++) used |= syno_size_primaries(syno_nest_extent(fwd, v));
  return used;
}
