/* The shared tokenizer (see syno/lex.h). */
#include "syno/lex.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static void scan(syno_lex_t *lx) {
  while (lx->pos < lx->end && isspace((unsigned char)*lx->pos)) lx->pos++;
  syno_tok_t *t = &lx->tok;
  t->start = lx->pos;
  t->col = (int)(lx->pos - lx->text) + 1 + lx->col0;
  if (lx->pos >= lx->end || *lx->pos == 0) {
    t->kind = SYNO_TOK_END;
    t->len = 0;
    return;
  }
  unsigned char c = (unsigned char)*lx->pos;
  if (isalpha(c) || c == '_') {
    while (lx->pos < lx->end && (isalnum((unsigned char)*lx->pos) || *lx->pos == '_')) lx->pos++;
    t->kind = SYNO_TOK_IDENT;
  } else if (isdigit(c)) {
    while (lx->pos < lx->end && isdigit((unsigned char)*lx->pos)) lx->pos++;
    t->kind = SYNO_TOK_INT;
  } else if (c == '-' && lx->pos + 1 < lx->end && lx->pos[1] == '>') {
    lx->pos += 2;
    t->kind = SYNO_TOK_ARROW;
  } else {
    lx->pos++;
    t->kind = SYNO_TOK_PUNCT;
  }
  t->len = (size_t)(lx->pos - t->start);
}

void syno_lex_init(syno_lex_t *lx, const char *text, size_t len, int col0) {
  lx->text = lx->pos = text;
  lx->end = text + len;
  lx->col0 = col0;
  scan(lx);
}

const syno_tok_t *syno_lex_next(syno_lex_t *lx) {
  scan(lx);
  return &lx->tok;
}

int syno_lex_is(const syno_lex_t *lx, char c) { return lx->tok.kind == SYNO_TOK_PUNCT && lx->tok.start[0] == c; }

int syno_lex_accept(syno_lex_t *lx, char c) {
  if (!syno_lex_is(lx, c)) return 0;
  scan(lx);
  return 1;
}

int syno_tok_eq(const syno_tok_t *t, const char *s) { return t->len == strlen(s) && memcmp(t->start, s, t->len) == 0; }

void syno_tok_describe(const syno_tok_t *t, char *buf, size_t n) {
  if (t->kind == SYNO_TOK_END) {
    snprintf(buf, n, "end of input");
    return;
  }
  int len = t->len > 40 ? 40 : (int)t->len;
  unsigned char c = (unsigned char)t->start[0];
  if (t->kind == SYNO_TOK_PUNCT && !isprint(c))
    snprintf(buf, n, "byte 0x%02x", c);
  else
    snprintf(buf, n, "'%.*s'", len, t->start);
}

int syno_tok_int(const syno_tok_t *t, int64_t *out) {
  int64_t v = 0;
  for (size_t i = 0; i < t->len; i++) {
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, t->start[i] - '0', &v)) return -1;
  }
  *out = v;
  return 0;
}
