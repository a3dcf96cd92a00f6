/* The variable table: declarations, implicit declaration by scanning, and
 * concrete bindings. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "syno/lex.h"
#include "syno/size.h"
#include "syno/strbuf.h"

static const char *kind_name(syno_var_kind_t k) { return k == SYNO_PRIMARY ? "primary" : "coefficient"; }

void syno_vars_init(syno_vars_t *v) { memset(v, 0, sizeof *v); }

int syno_vars_find(const syno_vars_t *v, const char *name, syno_var_kind_t *kind, int *index) {
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < v->n[k]; i++)
      if (strcmp(v->var[k][i].name, name) == 0) {
        if (kind) *kind = (syno_var_kind_t)k;
        if (index) *index = i;
        return 0;
      }
  return -1;
}

/* Loop names and operator keywords cannot be variables. */
static bool reserved_name(const char *name) {
  if ((name[0] == 'i' || name[0] == 'r' || name[0] == 'w') && isdigit((unsigned char)name[1])) {
    for (const char *p = name + 1; *p; p++)
      if (!isdigit((unsigned char)*p)) return false;
    return true;
  }
  return false;
}

int syno_vars_add(syno_vars_t *v, syno_var_kind_t kind, const char *name, int max_occurrence, int64_t default_value,
                  syno_error_t *err) {
  size_t len = strlen(name);
  if (len == 0 || len >= SYNO_VAR_NAME_LEN)
    return syno_error_set(err, "variable name '%s' must have 1 to %d characters", name, SYNO_VAR_NAME_LEN - 1);
  if (!(isalpha((unsigned char)name[0]) || name[0] == '_'))
    return syno_error_set(err, "variable name '%s' must start with a letter", name);
  for (const char *p = name; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_'))
      return syno_error_set(err, "variable name '%s' has the character '%c'", name, *p);
  if (reserved_name(name))
    return syno_error_set(err, "variable name '%s' is reserved (i<k>, r<k> and w<k> name loops and weights)", name);
  if (syno_vars_find(v, name, NULL, NULL) == 0) return syno_error_set(err, "variable '%s' is declared twice", name);
  if (v->nbind) return syno_error_set(err, "variable '%s' declared after a binding was made", name);
  if (v->n[kind] >= SYNO_MAX_VARS)
    return syno_error_set(err, "too many %s variables (at most %d) at '%s'", kind_name(kind), SYNO_MAX_VARS, name);
  if (max_occurrence < 0) return syno_error_set(err, "variable '%s': negative occurrence limit", name);
  if (default_value < 0) return syno_error_set(err, "variable '%s': negative value", name);
  /* Insert in name order so indices do not depend on declaration order. */
  int at = v->n[kind];
  while (at > 0 && strcmp(v->var[kind][at - 1].name, name) > 0) {
    v->var[kind][at] = v->var[kind][at - 1];
    at--;
  }
  syno_var_t *var = &v->var[kind][at];
  memset(var, 0, sizeof *var);
  memcpy(var->name, name, len + 1);
  var->max_occurrence = max_occurrence;
  var->default_value = default_value;
  v->n[kind]++;
  return 0;
}

static int tok_err(syno_error_t *err, const syno_tok_t *t, const char *what) {
  char d[64];
  syno_tok_describe(t, d, sizeof d);
  return syno_error_set(err, "expected %s but found %s at column %d", what, d, t->col);
}

/* One spec: NAME | NAME=INT | INT, then optionally ':' INT. */
static int parse_spec(syno_vars_t *v, syno_lex_t *lx, syno_var_kind_t kind, int *anon, syno_error_t *err) {
  char name[SYNO_VAR_NAME_LEN];
  int64_t value = 0, occ = SYNO_DEFAULT_MAX_OCCURRENCE;
  syno_tok_t first = lx->tok;
  if (first.kind == SYNO_TOK_IDENT) {
    if (first.len >= sizeof name) return syno_error_set(err, "variable name at column %d is too long", first.col);
    memcpy(name, first.start, first.len);
    name[first.len] = 0;
    syno_lex_next(lx);
    if (syno_lex_accept(lx, '=')) {
      if (lx->tok.kind != SYNO_TOK_INT || syno_tok_int(&lx->tok, &value) || value < 1)
        return tok_err(err, &lx->tok, "a positive integer value");
      syno_lex_next(lx);
    }
  } else if (first.kind == SYNO_TOK_INT) {
    if (syno_tok_int(&first, &value) || value < 1) return tok_err(err, &first, "a positive integer value");
    snprintf(name, sizeof name, "%s_%d", kind == SYNO_PRIMARY ? "x" : "c", (*anon)++);
    syno_lex_next(lx);
  } else {
    return tok_err(err, &first, "a variable name or value");
  }
  if (syno_lex_accept(lx, ':')) {
    if (lx->tok.kind != SYNO_TOK_INT || syno_tok_int(&lx->tok, &occ) || occ > 100)
      return tok_err(err, &lx->tok, "an occurrence limit (0..100)");
    syno_lex_next(lx);
  }
  if (syno_vars_add(v, kind, name, (int)occ, value, err)) return syno_error_prefix(err, "at column %d", first.col);
  return 0;
}

int syno_vars_declare(syno_vars_t *v, const char *decl, syno_error_t *err) {
  syno_lex_t lx;
  syno_lex_init(&lx, decl, strlen(decl), 0);
  syno_var_kind_t kind = SYNO_PRIMARY;
  int anon[2] = {0, 0};
  while (lx.tok.kind != SYNO_TOK_END) {
    if (syno_lex_accept(&lx, ';')) {
      if (kind == SYNO_COEFF)
        return syno_error_set(
            err, "a second ';' before column %d: one ';' separates the primary and the coefficient variables",
            lx.tok.col);
      kind = SYNO_COEFF;
      continue;
    }
    if (parse_spec(v, &lx, kind, &anon[kind], err)) return -1;
    if (lx.tok.kind == SYNO_TOK_END || syno_lex_is(&lx, ';')) continue;
    if (!syno_lex_accept(&lx, ',')) return tok_err(err, &lx.tok, "',' or ';'");
  }
  return 0;
}

int syno_vars_scan(syno_vars_t *v, const char *text, syno_error_t *err) {
  syno_lex_t lx;
  syno_lex_init(&lx, text, strlen(text), 0);
  bool after_colon = false;
  while (lx.tok.kind != SYNO_TOK_END) {
    syno_tok_t t = lx.tok;
    syno_lex_next(&lx);
    if (t.kind == SYNO_TOK_IDENT && !after_colon && !syno_lex_is(&lx, '(') && !syno_lex_is(&lx, '[')) {
      char name[SYNO_VAR_NAME_LEN];
      if (t.len >= sizeof name) return syno_error_set(err, "name at column %d is too long", t.col);
      memcpy(name, t.start, t.len);
      name[t.len] = 0;
      if (!reserved_name(name) && syno_vars_find(v, name, NULL, NULL) != 0) {
        syno_var_kind_t kind = isupper((unsigned char)name[0]) ? SYNO_PRIMARY : SYNO_COEFF;
        if (syno_vars_add(v, kind, name, SYNO_DEFAULT_MAX_OCCURRENCE, 0, err))
          return syno_error_prefix(err, "at column %d", t.col);
      }
    }
    after_colon = t.kind == SYNO_TOK_PUNCT && t.start[0] == ':';
  }
  return 0;
}

int syno_vars_bind(syno_vars_t *v, const char *assign, syno_error_t *err) {
  if (v->nbind >= SYNO_MAX_BINDINGS) return syno_error_set(err, "too many bindings (at most %d)", SYNO_MAX_BINDINGS);
  syno_binding_t b;
  bool set[2][SYNO_MAX_VARS] = {{0}};
  memset(&b, 0, sizeof b);
  syno_lex_t lx;
  syno_lex_init(&lx, assign, strlen(assign), 0);
  while (lx.tok.kind != SYNO_TOK_END) {
    syno_tok_t name = lx.tok;
    if (name.kind != SYNO_TOK_IDENT) return tok_err(err, &name, "a variable name");
    char nm[SYNO_VAR_NAME_LEN];
    snprintf(nm, sizeof nm, "%.*s", (int)(name.len < sizeof nm ? name.len : sizeof nm - 1), name.start);
    syno_var_kind_t kind;
    int idx;
    if (name.len >= sizeof nm || syno_vars_find(v, nm, &kind, &idx))
      return syno_error_set(err, "unknown variable '%.*s' at column %d", (int)name.len, name.start, name.col);
    syno_lex_next(&lx);
    if (!syno_lex_accept(&lx, '=')) return tok_err(err, &lx.tok, "'='");
    int64_t val;
    if (lx.tok.kind != SYNO_TOK_INT || syno_tok_int(&lx.tok, &val) || val < 1 || val > (1ll << 40))
      return tok_err(err, &lx.tok, "a positive integer value");
    if (set[kind][idx]) return syno_error_set(err, "variable '%s' bound twice at column %d", nm, name.col);
    set[kind][idx] = true;
    (kind == SYNO_PRIMARY ? b.p : b.c)[idx] = val;
    syno_lex_next(&lx);
    if (lx.tok.kind != SYNO_TOK_END && !syno_lex_accept(&lx, ',')) return tok_err(err, &lx.tok, "','");
  }
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < v->n[k]; i++) {
      if (set[k][i]) continue;
      int64_t d = v->var[k][i].default_value;
      if (!d)
        return syno_error_set(err, "no value for variable '%s' (bind it with %s=VALUE)", v->var[k][i].name,
                              v->var[k][i].name);
      (k == SYNO_PRIMARY ? b.p : b.c)[i] = d;
    }
  v->bind[v->nbind++] = b;
  return 0;
}

void syno_vars_print_binding(const syno_vars_t *v, int b, char *buf, size_t n) {
  syno_strbuf_t sb;
  syno_strbuf_init(&sb, buf, n);
  if (b < 0 || b >= v->nbind) return;
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < v->n[k]; i++)
      syno_strbuf_printf(&sb, "%s%s=%lld", sb.len ? ", " : "", v->var[k][i].name,
                         (long long)(k == SYNO_PRIMARY ? v->bind[b].p[i] : v->bind[b].c[i]));
}
