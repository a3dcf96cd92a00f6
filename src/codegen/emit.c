/* The index-expression printer every code generator uses (see emit.h). Parentheses go around
 * every binary node, so no language's precedence rules need to be known. */
#include "emit.h"

#include <inttypes.h>

#include "syno/alloc.h"

char codegen_letter(int j) { return j < 26 ? (char)('a' + j) : (char)('A' + j - 26); }

static int loop_of(const syno_nest_t *n, const syno_expr_t *x) {
  return x->kind == SYNO_EXPR_OUTER ? x->var : n->n_outer + x->var;
}

int codegen_expr(syno_strbuf_t *sb, const syno_nest_t *n, int i, const syno_vars_t *v, int b,
                 const codegen_dialect_t *d, unsigned *used, syno_error_t *err) {
  const syno_expr_t *x = &n->node[i];
  int64_t val;
  switch (x->kind) {
    case SYNO_EXPR_OUTER:
    case SYNO_EXPR_INNER:
      if (used) *used |= 1u << loop_of(n, x);
      if (d->letters)
        syno_strbuf_printf(sb, "%c", codegen_letter(loop_of(n, x)));
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
