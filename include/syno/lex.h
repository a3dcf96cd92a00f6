/* syno/lex.h - the tokenizer shared by every text format of syno (sizes,
 * shapes, variable declarations, bindings, the operator text form).
 *
 * It never allocates: a token is a (start, length) slice of the input, with
 * its 1-based column, so every parser can name the offending token and where
 * it stands. */
#ifndef SYNO_LEX_H
#define SYNO_LEX_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  SYNO_TOK_END = 0,
  SYNO_TOK_IDENT, /* [A-Za-z_][A-Za-z0-9_]* */
  SYNO_TOK_INT,   /* [0-9]+ (a leading '-' is a separate PUNCT token) */
  SYNO_TOK_PUNCT, /* any other single character */
  SYNO_TOK_ARROW  /* "->" */
} syno_tok_kind_t;

typedef struct {
  syno_tok_kind_t kind;
  const char *start;
  size_t len;
  int col; /* 1-based, plus the lexer's col0 */
} syno_tok_t;

typedef struct {
  const char *text, *pos, *end;
  int col0;
  syno_tok_t tok; /* the current (peeked) token */
} syno_lex_t;

void syno_lex_init(syno_lex_t *lx, const char *text, size_t len, int col0);
/* Advances to the next token and returns it; the current one is lx->tok. */
const syno_tok_t *syno_lex_next(syno_lex_t *lx);
/* True (and advances) when the current token is the punctuation c. */
int syno_lex_accept(syno_lex_t *lx, char c);
int syno_lex_is(const syno_lex_t *lx, char c);
int syno_tok_eq(const syno_tok_t *t, const char *s);
/* Writes a printable description of the token ("'foo'", "end of input"). */
void syno_tok_describe(const syno_tok_t *t, char *buf, size_t n);
/* Parses an INT token into *out; fails on overflow. */
int syno_tok_int(const syno_tok_t *t, int64_t *out);

#endif
