/* Printing loop nests and index expressions (docs/semantics.md §6.3). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "syno/lower.h"
#include "syno/strbuf.h"

typedef struct {
  syno_strbuf_t sb;
  const syno_nest_t *nest;
  const syno_vars_t *v;
} out_t;

#define put(o, ...) syno_strbuf_printf(&(o)->sb, __VA_ARGS__)

static void put_size(out_t *o, syno_size_t s) {
  char b[128];
  syno_size_print(o->v, s, b, sizeof b);
  put(o, "%s", b);
}

/* Precedence values of docs/semantics.md §6.3: a child is parenthesized when its value is
 * greater than its parent's (or equal, on the right of - / %). */
static int prec(const syno_expr_t *e) {
  switch (e->kind) {
    case SYNO_EXPR_DIV: return 1;
    case SYNO_EXPR_MUL:
    case SYNO_EXPR_SIZE: return 2;
    case SYNO_EXPR_MOD: return 3;
    case SYNO_EXPR_SUB: return 4;
    case SYNO_EXPR_ADD: return 5;
    default: return 0;
  }
}

static void put_expr(out_t *o, int i);

static void put_child(out_t *o, int parent, int child, bool right) {
  const syno_expr_t *p = &o->nest->node[parent], *c = &o->nest->node[child];
  bool nonassoc = p->kind == SYNO_EXPR_SUB || p->kind == SYNO_EXPR_DIV || p->kind == SYNO_EXPR_MOD;
  bool wrap = prec(c) > prec(p) || (right && nonassoc && prec(c) == prec(p) && prec(c) > 0);
  if (wrap) put(o, "(");
  put_expr(o, child);
  if (wrap) put(o, ")");
}

static void put_expr(out_t *o, int i) {
  const syno_expr_t *e = &o->nest->node[i];
  static const char *ops[] = {[SYNO_EXPR_ADD] = " + ",
                              [SYNO_EXPR_SUB] = " - ",
                              [SYNO_EXPR_MUL] = " * ",
                              [SYNO_EXPR_DIV] = " / ",
                              [SYNO_EXPR_MOD] = " % "};
  switch (e->kind) {
    case SYNO_EXPR_OUTER: put(o, "i_%d", e->var); return;
    case SYNO_EXPR_INNER: put(o, "ri_%d", e->var); return;
    case SYNO_EXPR_SIZE: put_size(o, e->size); return;
    case SYNO_EXPR_IMM: put(o, "%lld", (long long)e->imm); return;
    case SYNO_EXPR_RESTRICT:
      put(o, "restrict(");
      put_expr(o, e->a);
      put(o, ", 0, ");
      put_expr(o, e->b);
      put(o, ")");
      return;
    default:
      put_child(o, i, e->a, false);
      put(o, "%s", ops[e->kind]);
      put_child(o, i, e->b, true);
  }
}

int syno_expr_print(const syno_nest_t *n, int node, const syno_vars_t *v, char *buf, size_t size) {
  out_t o = {.nest = n, .v = v};
  syno_strbuf_init(&o.sb, buf, size);
  put_expr(&o, node);
  return (int)o.sb.len;
}

static void indent(out_t *o, int depth) { put(o, "%*s", 4 * depth, ""); }

static void put_access(out_t *o, const syno_access_t *a) {
  if (a->tensor < 0)
    put(o, "grad_out[");
  else
    put(o, "in_%d[", a->tensor);
  for (int i = 0; i < a->rank; i++) {
    if (i) put(o, ", ");
    put_expr(o, a->idx[i]);
  }
  put(o, "]");
}

static void put_body(out_t *o) {
  const syno_nest_t *n = o->nest;
  for (int f = 0; f < n->n_factors; f++) {
    if (f) put(o, " * ");
    put_access(o, &n->factor[f]);
  }
}

static void put_guards(out_t *o) {
  const syno_nest_t *n = o->nest;
  for (int g = 0; g < n->n_guards; g++) {
    const syno_guard_t *gd = &n->guard[g];
    if (g) put(o, " && ");
    switch (gd->kind) {
      case SYNO_GUARD_RANGE:
        put(o, "0 <= ");
        put_expr(o, gd->a);
        put(o, " && ");
        put_expr(o, gd->a);
        put(o, " < ");
        put_expr(o, gd->b);
        break;
      case SYNO_GUARD_DIVIDES:
        put_expr(o, gd->a);
        put(o, " %% ");
        put_expr(o, gd->b);
        put(o, " == 0");
        break;
      case SYNO_GUARD_EQUAL:
        put_expr(o, gd->a);
        put(o, " == ");
        put_expr(o, gd->b);
        break;
    }
  }
}

static void put_target(out_t *o) {
  const syno_nest_t *n = o->nest;
  if (n->target < 0)
    put(o, "out[");
  else
    put(o, "grad_in_%d[", n->target);
  for (int i = 0; i < n->n_outer; i++) put(o, "%si_%d", i ? ", " : "", i);
  put(o, "]");
}

int syno_nest_print(const syno_nest_t *n, const syno_vars_t *v, char *buf, size_t size) {
  out_t o = {.nest = n, .v = v};
  syno_strbuf_init(&o.sb, buf, size);
  int depth = 0;
  for (int i = 0; i < n->n_outer; i++, depth++) {
    indent(&o, depth);
    put(&o, "for (int i_%d = 0; i_%d < ", i, i);
    put_size(&o, n->outer[i]);
    put(&o, "; i_%d++) {\n", i);
  }
  bool div = !syno_size_is_one(n->divisor);
  if (n->n_inner == 0) {
    indent(&o, depth);
    put_target(&o);
    put(&o, " = ");
    if (n->n_guards) {
      put(&o, "(");
      put_guards(&o);
      put(&o, ") ? ");
    }
    if (div) put(&o, "(");
    put_body(&o);
    if (div) {
      put(&o, ") / (");
      put_size(&o, n->divisor);
      put(&o, ")");
    }
    if (n->n_guards) put(&o, " : 0");
    put(&o, ";\n");
  } else {
    for (int r = n->n_inner - 1; r >= 0; r--, depth++) {
      indent(&o, depth);
      put(&o, "float temp_ri_%d = 0;\n", r);
      indent(&o, depth);
      put(&o, "for (int ri_%d = 0; ri_%d < ", r, r);
      put_size(&o, n->inner[r]);
      put(&o, "; ri_%d++) {\n", r);
    }
    indent(&o, depth);
    if (n->n_guards) {
      put(&o, "if (");
      put_guards(&o);
      put(&o, ") ");
    }
    put(&o, "temp_ri_0 += ");
    put_body(&o);
    put(&o, ";\n");
    for (int r = 0; r < n->n_inner; r++) {
      depth--;
      indent(&o, depth);
      put(&o, "}\n");
      indent(&o, depth);
      if (r + 1 < n->n_inner) {
        put(&o, "temp_ri_%d += temp_ri_%d;\n", r + 1, r);
      } else {
        put_target(&o);
        put(&o, " = temp_ri_%d", r);
        if (div) {
          put(&o, " / (");
          put_size(&o, n->divisor);
          put(&o, ")");
        }
        put(&o, ";\n");
      }
    }
  }
  for (int i = n->n_outer - 1; i >= 0; i--) {
    depth--;
    indent(&o, depth);
    put(&o, "}\n");
  }
  return (int)o.sb.len;
}
