/* Parsers for sizes and shapes. Grammar (docs/semantics.md §1.4):
 *   Size  := '1' | Factor (('*' | '/') Factor)*     Factor := ID ('^' '-'? INT)?
 *   Shape := '[' (Size (':' ATTR ('+' ATTR)*)? (',' Size ...)*)? ']'
 * The only attribute is `unordered`. */
#include <string.h>

#include "syno/lex.h"
#include "syno/size.h"

static int tok_err(syno_error_t *err, const syno_tok_t *t, const char *what) {
  char d[64];
  syno_tok_describe(t, d, sizeof d);
  return syno_error_set(err, "expected %s but found %s at column %d", what, d, t->col);
}

/* Parses one size at the lexer's position; leaves the lexer after it. */
int syno_size_parse_lex(const syno_vars_t *v, syno_lex_t *lx, syno_size_t *out, syno_error_t *err) {
  syno_size_t s = syno_size_one();
  if (lx->tok.kind == SYNO_TOK_INT) {
    if (!syno_tok_eq(&lx->tok, "1")) {
      return syno_error_set(
          err, "sizes have no numeric constants: '%.*s' at column %d (declare a variable with a value, e.g. k=%.*s)",
          (int)lx->tok.len, lx->tok.start, lx->tok.col, (int)lx->tok.len, lx->tok.start);
    }
    syno_lex_next(lx);
    *out = s;
    return 0;
  }
  int sign = 1;
  for (;;) {
    syno_tok_t id = lx->tok;
    if (id.kind != SYNO_TOK_IDENT) return tok_err(err, &id, "a variable name");
    char name[SYNO_VAR_NAME_LEN];
    syno_var_kind_t kind;
    int idx;
    if (id.len >= sizeof name) return syno_error_set(err, "unknown variable '%.*s' at column %d", 40, id.start, id.col);
    memcpy(name, id.start, id.len);
    name[id.len] = 0;
    if (syno_vars_find(v, name, &kind, &idx))
      return syno_error_set(err, "unknown variable '%s' at column %d", name, id.col);
    syno_lex_next(lx);
    int64_t power = 1;
    if (syno_lex_accept(lx, '^')) {
      int neg = syno_lex_accept(lx, '-');
      /* Up to the largest power a size holds (below), so every size prints to text that parses. */
      if (lx->tok.kind != SYNO_TOK_INT || syno_tok_int(&lx->tok, &power) || power > 64)
        return tok_err(err, &lx->tok, "an exponent (at most 64)");
      if (neg) power = -power;
      syno_lex_next(lx);
    }
    int8_t *slot = kind == SYNO_PRIMARY ? &s.p[idx] : &s.c[idx];
    int total = *slot + sign * (int)power;
    if (total > 64 || total < -64)
      return syno_error_set(err, "exponent of '%s' out of range at column %d", name, id.col);
    *slot = (int8_t)total;
    if (syno_lex_accept(lx, '*'))
      sign = 1;
    else if (syno_lex_accept(lx, '/'))
      sign = -1;
    else
      break;
  }
  *out = s;
  return 0;
}

int syno_size_parse_n(const syno_vars_t *v, const char *text, size_t len, int col0, syno_size_t *out,
                      syno_error_t *err) {
  syno_lex_t lx;
  syno_lex_init(&lx, text, len, col0);
  if (syno_size_parse_lex(v, &lx, out, err)) return -1;
  if (lx.tok.kind != SYNO_TOK_END) return tok_err(err, &lx.tok, "end of size");
  return 0;
}

int syno_size_parse(const syno_vars_t *v, const char *text, syno_size_t *out, syno_error_t *err) {
  return syno_size_parse_n(v, text, strlen(text), 0, out, err);
}

int syno_shape_parse(const syno_vars_t *v, const char *text, syno_shape_t *out, syno_error_t *err) {
  syno_lex_t lx;
  syno_lex_init(&lx, text, strlen(text), 0);
  memset(out, 0, sizeof *out);
  if (!syno_lex_accept(&lx, '[')) return tok_err(err, &lx.tok, "'[' to open a shape");
  if (!syno_lex_accept(&lx, ']')) {
    for (;;) {
      if (out->rank >= SYNO_MAX_RANK)
        return syno_error_set(err, "shape has more than %d dimensions at column %d", SYNO_MAX_RANK, lx.tok.col);
      if (syno_size_parse_lex(v, &lx, &out->dim[out->rank], err)) return -1;
      if (syno_lex_accept(&lx, ':')) {
        do {
          if (lx.tok.kind != SYNO_TOK_IDENT || !syno_tok_eq(&lx.tok, "unordered"))
            return tok_err(err, &lx.tok, "the attribute 'unordered'");
          out->unordered[out->rank] = true;
          syno_lex_next(&lx);
        } while (syno_lex_accept(&lx, '+'));
      }
      out->rank++;
      if (syno_lex_accept(&lx, ']')) break;
      if (!syno_lex_accept(&lx, ',')) return tok_err(err, &lx.tok, "',' or ']'");
    }
  }
  if (lx.tok.kind != SYNO_TOK_END) return tok_err(err, &lx.tok, "end of shape");
  return 0;
}
