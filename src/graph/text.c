/* The one-line operator text form (see syno/graph.h): parsing rebuilds the
 * operator through the hash-consing constructors, so printing then parsing
 * gives the identical operator. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "syno/graph.h"
#include "syno/lex.h"
#include "syno/strbuf.h"

typedef struct {
  syno_graph_t *g;
  const syno_vars_t *v;
  syno_lex_t lx;
  const syno_shape_t *output;
  int n_red;
  syno_dim_t red[SYNO_MAX_REDUCTIONS];
  int red_name[SYNO_MAX_REDUCTIONS]; /* the k of r<k> as written */
  int depth;                         /* calls open around the current expression */
  syno_error_t *err;
} parser_t;

/* Calls nested deeper than this are refused: an operator has at most a few dozen primitives,
 * and a hostile file or database row must not exhaust the stack. */
#define MAX_NESTING 64

static int expect_err(parser_t *ps, const char *what) {
  char d[64];
  syno_tok_describe(&ps->lx.tok, d, sizeof d);
  return syno_error_set(ps->err, "expected %s but found %s at column %d", what, d, ps->lx.tok.col);
}

static int expect(parser_t *ps, char c) {
  char what[8] = {'\'', c, '\'', 0};
  if (!syno_lex_accept(&ps->lx, c)) return expect_err(ps, what);
  return 0;
}

/* i<k> or r<k>: the loop name's number, or -1. */
static int loop_number(const syno_tok_t *t, char prefix) {
  if (t->kind != SYNO_TOK_IDENT || t->len < 2 || t->len > 4 || t->start[0] != prefix) return -1;
  int n = 0;
  for (size_t i = 1; i < t->len; i++) {
    if (t->start[i] < '0' || t->start[i] > '9') return -1;
    n = n * 10 + (t->start[i] - '0');
  }
  return n;
}

static int parse_expr(parser_t *ps, syno_dim_t *out);

static int at_col(parser_t *ps, int col) { return syno_error_prefix(ps->err, "at column %d", col); }

static int parse_call(parser_t *ps, const syno_tok_t *name, syno_dim_t *out) {
  syno_graph_t *g = ps->g;
  syno_dim_t a, b;
  syno_size_t s;
  int col = name->col;
  if (expect(ps, '(') || parse_expr(ps, &a)) return -1;
  if (syno_tok_eq(name, "shift")) {
    if (expect(ps, ')')) return -1;
    return syno_graph_shift(g, a, out, ps->err) ? at_col(ps, col) : 0;
  }
  if (expect(ps, ',')) return -1;
  if (syno_tok_eq(name, "split") || syno_tok_eq(name, "unfold")) {
    if (parse_expr(ps, &b) || expect(ps, ')')) return -1;
    int rc = name->start[0] == 's' ? syno_graph_split(g, a, b, out, ps->err) : syno_graph_unfold(g, a, b, out, ps->err);
    return rc ? at_col(ps, col) : 0;
  }
  if (syno_tok_eq(name, "share")) {
    int64_t w;
    if (ps->lx.tok.kind != SYNO_TOK_INT || syno_tok_int(&ps->lx.tok, &w) || w > 100)
      return expect_err(ps, "a weight number");
    syno_lex_next(&ps->lx);
    if (expect(ps, ')')) return -1;
    return syno_graph_share(g, a, (int)w, out, NULL, ps->err) ? at_col(ps, col) : 0;
  }
  if (syno_size_parse_lex(ps->v, &ps->lx, &s, ps->err) || expect(ps, ')')) return -1;
  if (syno_tok_eq(name, "stride")) return syno_graph_stride(g, a, s, out, ps->err) ? at_col(ps, col) : 0;
  syno_dim_t major, minor;
  if (syno_graph_merge(g, a, s, &major, &minor, ps->err)) return at_col(ps, col);
  *out = name->start[0] == 'd' ? major : minor;
  return 0;
}

static int parse_expr(parser_t *ps, syno_dim_t *out) {
  syno_tok_t t = ps->lx.tok;
  int k;
  if ((k = loop_number(&t, 'i')) >= 0) {
    syno_lex_next(&ps->lx);
    if (k >= ps->output->rank)
      return syno_error_set(ps->err, "output axis '%.*s' at column %d does not exist (the output has %d axes)",
                            (int)t.len, t.start, t.col, ps->output->rank);
    return syno_graph_iterator(ps->g, k, ps->output->dim[k], ps->output->unordered[k], out, ps->err) ? at_col(ps, t.col)
                                                                                                     : 0;
  }
  if ((k = loop_number(&t, 'r')) >= 0) {
    syno_lex_next(&ps->lx);
    for (int i = 0; i < ps->n_red; i++)
      if (ps->red_name[i] == k) {
        *out = ps->red[i];
        return 0;
      }
    return syno_error_set(ps->err, "reduction '%.*s' at column %d is not declared (declare it first, e.g. %.*s=sum(K))",
                          (int)t.len, t.start, t.col, (int)t.len, t.start);
  }
  static const char *calls[] = {"split", "unfold", "div", "mod", "shift", "stride", "share"};
  if (t.kind == SYNO_TOK_IDENT)
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++)
      if (syno_tok_eq(&t, calls[i])) {
        if (ps->depth >= MAX_NESTING)
          return syno_error_set(ps->err, "calls nested deeper than %d at column %d", MAX_NESTING, t.col);
        syno_lex_next(&ps->lx);
        ps->depth++;
        int rc = parse_call(ps, &t, out);
        ps->depth--;
        return rc;
      }
  return expect_err(ps, "a dimension (i<k>, r<k>, split, unfold, div, mod, shift, stride or share)");
}

/* '[' expr (',' expr)* ']' */
static int parse_list(parser_t *ps, syno_dim_t *dims, int *n) {
  *n = 0;
  if (expect(ps, '[')) return -1;
  if (syno_lex_accept(&ps->lx, ']')) return 0;
  for (;;) {
    if (*n >= SYNO_MAX_RANK)
      return syno_error_set(ps->err, "more than %d axes at column %d", SYNO_MAX_RANK, ps->lx.tok.col);
    if (parse_expr(ps, &dims[(*n)++])) return -1;
    if (syno_lex_accept(&ps->lx, ']')) return 0;
    if (expect(ps, ',')) return -1;
  }
}

static int parse_reductions(parser_t *ps) {
  int k;
  while ((k = loop_number(&ps->lx.tok, 'r')) >= 0) {
    syno_tok_t name = ps->lx.tok;
    syno_lex_next(&ps->lx);
    if (expect(ps, '=')) return -1;
    syno_reduce_type_t type;
    if (syno_tok_eq(&ps->lx.tok, "sum"))
      type = SYNO_REDUCE_SUM;
    else if (syno_tok_eq(&ps->lx.tok, "mean"))
      type = SYNO_REDUCE_MEAN;
    else
      return expect_err(ps, "'sum' or 'mean'");
    syno_lex_next(&ps->lx);
    syno_size_t dom;
    if (expect(ps, '(') || syno_size_parse_lex(ps->v, &ps->lx, &dom, ps->err) || expect(ps, ')')) return -1;
    for (int i = 0; i < ps->n_red; i++)
      if (ps->red_name[i] == k)
        return syno_error_set(ps->err, "reduction '%.*s' declared twice at column %d", (int)name.len, name.start,
                              name.col);
    if (ps->n_red >= SYNO_MAX_REDUCTIONS)
      return syno_error_set(ps->err, "more than %d reductions at column %d", SYNO_MAX_REDUCTIONS, name.col);
    /* Multiplicity: how many equal reductions were declared before. */
    int mult = 0;
    for (int i = 0; i < ps->n_red; i++) {
      const syno_dimension_t *d = syno_graph_dim(ps->g, ps->red[i]);
      mult += d->reduce == type && syno_size_eq(d->size, dom);
    }
    if (syno_graph_reduce(ps->g, dom, type, mult, &ps->red[ps->n_red], ps->err)) return at_col(ps, name.col);
    ps->red_name[ps->n_red++] = k;
    syno_lex_accept(&ps->lx, ',');
  }
  if (ps->n_red) return expect(ps, ';');
  return 0;
}

int syno_operator_parse(syno_graph_t *g, const char *text, const syno_shape_t *input, const syno_shape_t *output,
                        syno_operator_t *op, syno_error_t *err) {
  parser_t ps = {.g = g, .v = syno_graph_vars(g), .output = output, .err = err};
  syno_lex_init(&ps.lx, text, strlen(text), 0);
  if (parse_reductions(&ps)) return -1;
  syno_dim_t in[SYNO_MAX_RANK], exp[SYNO_MAX_RANK] = {0}, w[SYNO_MAX_TENSORS - 1][SYNO_MAX_RANK];
  int n_in = 0, n_exp = 0, n_w = 0, wrank[SYNO_MAX_TENSORS - 1];
  if (!syno_tok_eq(&ps.lx.tok, "in")) return expect_err(&ps, "'in[' (the input tensor)");
  syno_lex_next(&ps.lx);
  if (parse_list(&ps, in, &n_in)) return -1;
  if (syno_tok_eq(&ps.lx.tok, "expand")) {
    syno_lex_next(&ps.lx);
    int col = ps.lx.tok.col;
    if (parse_list(&ps, exp, &n_exp)) return -1;
    for (int i = 0; i < n_exp; i++)
      if (syno_graph_expand(g, exp[i], NULL, err)) return at_col(&ps, col);
  }
  while (ps.lx.tok.kind != SYNO_TOK_END) {
    syno_tok_t t = ps.lx.tok;
    int k = loop_number(&t, 'w');
    if (k != n_w + 1)
      return expect_err(&ps, n_w + 1 < SYNO_MAX_TENSORS ? "the next weight 'w<k>[' in order, or end of input"
                                                        : "end of input (at most 3 weights)");
    if (n_w + 1 >= SYNO_MAX_TENSORS) return expect_err(&ps, "end of input (at most 3 weights)");
    syno_lex_next(&ps.lx);
    syno_dim_t shared[SYNO_MAX_RANK];
    if (parse_list(&ps, shared, &wrank[n_w])) return -1;
    for (int i = 0; i < wrank[n_w]; i++)
      if (syno_graph_share(g, shared[i], k, NULL, &w[n_w][i], err)) return at_col(&ps, t.col);
    n_w++;
  }
  if (n_in != input->rank)
    return syno_error_set(err, "the input tensor has %d axes but the input shape has %d", n_in, input->rank);
  for (int i = 0; i < n_in; i++) {
    syno_size_t have = syno_graph_dim(g, in[i])->size;
    if (!syno_size_eq(have, input->dim[i])) {
      char a[128], b[128];
      syno_size_print(ps.v, have, a, sizeof a);
      syno_size_print(ps.v, input->dim[i], b, sizeof b);
      return syno_error_set(err, "input axis %d has size %s but the input shape says %s", i, a, b);
    }
  }
  if (syno_operator_build(g, output->rank, n_in, in, n_exp, exp, n_w, wrank, (const syno_dim_t(*)[SYNO_MAX_RANK])w, op,
                          err))
    return -1;
  /* Every declared reduction must be used. */
  if (op->n_red != ps.n_red)
    return syno_error_set(err, "%d reductions are declared but %d are used", ps.n_red, op->n_red);
  return 0;
}

/* --- printing --- */

typedef struct {
  syno_strbuf_t sb;
  const syno_operator_t *op;
} out_t;

#define put(o, ...) syno_strbuf_printf(&(o)->sb, __VA_ARGS__)

static void put_size(out_t *o, syno_size_t s) {
  char b[128];
  syno_size_print(syno_graph_vars(o->op->g), s, b, sizeof b);
  put(o, "%s", b);
}

static void put_dim(out_t *o, syno_dim_t id) {
  const syno_graph_t *g = o->op->g;
  const syno_dimension_t *d = syno_graph_dim(g, id);
  if (d->kind == SYNO_DIM_ITERATOR) {
    put(o, "i%d", d->index);
    return;
  }
  if (d->kind == SYNO_DIM_REDUCE) {
    for (int i = 0; i < o->op->n_red; i++)
      if (o->op->red[i] == id) put(o, "r%d", i);
    return;
  }
  const syno_prim_t *p = syno_graph_prim(g, d->prim);
  switch (p->kind) {
    case SYNO_PRIM_SPLIT:
    case SYNO_PRIM_UNFOLD:
      put(o, "%s(", syno_prim_name(p->kind));
      put_dim(o, p->out[0]);
      put(o, ", ");
      put_dim(o, p->out[1]);
      put(o, ")");
      return;
    case SYNO_PRIM_MERGE:
    case SYNO_PRIM_STRIDE:
      put(o, "%s(", p->kind == SYNO_PRIM_STRIDE ? "stride" : d->slot == 0 ? "div" : "mod");
      put_dim(o, p->out[0]);
      put(o, ", ");
      put_size(o, p->param);
      put(o, ")");
      return;
    case SYNO_PRIM_SHIFT:
      put(o, "shift(");
      put_dim(o, p->out[0]);
      put(o, ")");
      return;
    case SYNO_PRIM_SHARE:
      if (d->slot == 1) { /* a weight axis names the dim it shares */
        put_dim(o, p->out[0]);
        return;
      }
      put(o, "share(");
      put_dim(o, p->out[0]);
      put(o, ", %d)", p->weight);
      return;
    default: put(o, "?");
  }
}

static void put_list(out_t *o, const char *name, const syno_dim_t *d, int n) {
  put(o, "%s[", name);
  for (int i = 0; i < n; i++) {
    if (i) put(o, ", ");
    put_dim(o, d[i]);
  }
  put(o, "]");
}

int syno_operator_print(const syno_operator_t *op, char *buf, size_t n) {
  out_t o = {.op = op};
  syno_strbuf_init(&o.sb, buf, n);
  for (int i = 0; i < op->n_red; i++) {
    const syno_dimension_t *d = syno_graph_dim(op->g, op->red[i]);
    put(&o, "%sr%d=%s(", i ? " " : "", i, d->reduce == SYNO_REDUCE_MEAN ? "mean" : "sum");
    put_size(&o, d->size);
    put(&o, ")");
  }
  if (op->n_red) put(&o, "; ");
  put_list(&o, "in", op->axes[0], op->rank[0]);
  if (op->n_exp) {
    put(&o, " ");
    put_list(&o, "expand", op->exp, op->n_exp);
  }
  for (int t = 1; t < op->n_tensors; t++) {
    char name[16];
    snprintf(name, sizeof name, "w%d", t);
    put(&o, " ");
    put_list(&o, name, op->axes[t], op->rank[t]);
  }
  return (int)o.sb.len;
}
