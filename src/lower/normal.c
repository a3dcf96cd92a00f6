/* The normal form of a loop nest (see syno/normal.h for what is normalized
 * and why equal forms are equal functions).
 *
 * Three stages:
 *   1. Every index expression and guard becomes a polynomial: a sorted list
 *      of terms coef * size * atoms, where an atom is a loop variable or an
 *      opaque div/mod over normalized polynomials. Atoms are hash-consed in
 *      the context, so structural equality is id equality and like terms
 *      merge exactly. Restricts are hoisted into range conditions.
 *      Reduction variables are still the nest's own ids here.
 *   2. Canonical names for the reduction variables: colour refinement
 *      (a variable's colour is refined by the sorted texts of every place it
 *      occurs, itself written `@` and the others by their colour, a weight
 *      located by its own text since its axes and number are free), then
 *      individualization of the first tied class, depth first, keeping the
 *      smallest text over the leaves. A swap of two tied variables that maps
 *      the first leaf to an identical text is an automorphism, and its
 *      subtree is skipped.
 *   3. Rendering under a naming: terms, atoms, weight axes, weights and
 *      conditions are sorted by their rendered text, so the result depends
 *      only on the naming, never on node or factor order.
 *
 * Soundness does not depend on stage 2: every leaf renders an equivalent
 * nest, the search only picks which one. */
#include "syno/normal.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/alloc.h"
#include "syno/grow.h"

/* --- a bump arena for terms and atom lists, freed at once --- */

typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
} chunk_t;

#define ALIGN_UP(x) (((x) + _Alignof(max_align_t) - 1) & ~(size_t)(_Alignof(max_align_t) - 1))
#define CHUNK_HEAD ALIGN_UP(sizeof(chunk_t))

/* --- polynomials --- */

typedef struct {
  int64_t coef;
  syno_size_t size;
  int n;           /* number of atoms (a power repeats an atom) */
  const int *atom; /* atom ids, ascending */
} term_t;

typedef struct {
  int n;
  const term_t *t; /* sorted by term_key_cmp, distinct keys, no zero coefficient */
  uint32_t mask;   /* reduction variables occurring anywhere inside */
} poly_t;

typedef enum { AT_OUTER = 0, AT_INNER, AT_DIV, AT_MOD } atom_kind_t;

typedef struct {
  atom_kind_t kind;
  int var;
  poly_t a, b;
  uint32_t mask;
} atom_t;

typedef enum { C_RANGE = 0, C_DIVIDES, C_ZERO } cond_kind_t;

/* 0 <= a < b; a % b == 0; a == 0. For the last two the sign of a is free,
 * so the negation is kept to render whichever text is smaller. */
typedef struct {
  cond_kind_t kind;
  poly_t a, neg, b;
  uint32_t mask;
} cond_t;

typedef struct {
  const syno_nest_t *n;
  const syno_vars_t *v;
  syno_error_t *err;
  bool failed;
  chunk_t *arena;
  atom_t *atom;
  int n_atoms;
  size_t cap_atoms;
  cond_t *cond;
  int n_conds;
  size_t cap_conds;
  bool done[SYNO_MAX_NODES];
  poly_t memo[SYNO_MAX_NODES];
  poly_t idx[SYNO_MAX_TENSORS][SYNO_MAX_RANK];
  bool weight[SYNO_MAX_TENSORS]; /* factor f's layout is free */
} ctx_t;

static void fail(ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(ctx_t *c, const char *fmt, ...) {
  if (c->failed) return;
  c->failed = true;
  va_list ap;
  va_start(ap, fmt);
  syno_error_vset(c->err, fmt, ap);
  va_end(ap);
}

static void *arena_alloc(ctx_t *c, size_t bytes) {
  bytes = ALIGN_UP(bytes ? bytes : 1);
  chunk_t *k = c->arena;
  if (!k || k->cap - k->used < bytes) {
    size_t cap = bytes > 65536 ? bytes : 65536;
    k = syno_malloc(CHUNK_HEAD + cap);
    if (!k) {
      fail(c, "out of memory");
      return NULL;
    }
    k->next = c->arena;
    k->used = 0;
    k->cap = cap;
    c->arena = k;
  }
  void *p = (char *)k + CHUNK_HEAD + k->used;
  k->used += bytes;
  return p;
}

static void arena_free(ctx_t *c) {
  while (c->arena) {
    chunk_t *next = c->arena->next;
    syno_free(c->arena);
    c->arena = next;
  }
}

static int term_key_cmp(const term_t *a, const term_t *b) {
  int s = syno_size_cmp(a->size, b->size);
  if (s) return s;
  if (a->n != b->n) return a->n < b->n ? -1 : 1;
  for (int i = 0; i < a->n; i++)
    if (a->atom[i] != b->atom[i]) return a->atom[i] < b->atom[i] ? -1 : 1;
  return 0;
}

static int term_qsort_cmp(const void *a, const void *b) { return term_key_cmp(a, b); }

static bool poly_eq(const poly_t *a, const poly_t *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++)
    if (a->t[i].coef != b->t[i].coef || term_key_cmp(&a->t[i], &b->t[i])) return false;
  return true;
}

/* Overflow checks keep INT64_MIN out, so negation is always exact. */
static int64_t add_coef(ctx_t *c, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r) || r == INT64_MIN) {
    fail(c, "index expression coefficient overflows 64 bits");
    return 0;
  }
  return r;
}

static int64_t mul_coef(ctx_t *c, int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r) || r == INT64_MIN) {
    fail(c, "index expression coefficient overflows 64 bits");
    return 0;
  }
  return r;
}

/* Sizes store int8 powers; a product that would wrap could alias another
 * monomial, so it is refused rather than merged. */
static syno_size_t mul_size(ctx_t *c, syno_size_t a, syno_size_t b) {
  for (int i = 0; i < SYNO_MAX_VARS; i++)
    if (a.p[i] + b.p[i] > 100 || a.p[i] + b.p[i] < -100 || a.c[i] + b.c[i] > 100 || a.c[i] + b.c[i] < -100) {
      fail(c, "size power overflows in an index expression");
      return a;
    }
  return syno_size_mul(a, b);
}

/* Sorts terms (owned by the arena, modified in place), merges equal keys and
 * drops zero coefficients. */
static poly_t poly_norm(ctx_t *c, term_t *t, int n) {
  poly_t p = {0, t, 0};
  if (n > 1) qsort(t, (size_t)n, sizeof *t, term_qsort_cmp);
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (m > 0 && term_key_cmp(&t[m - 1], &t[i]) == 0) {
      t[m - 1].coef = add_coef(c, t[m - 1].coef, t[i].coef);
    } else {
      if (m > 0 && t[m - 1].coef == 0) m--;
      t[m++] = t[i];
    }
  }
  if (m > 0 && t[m - 1].coef == 0) m--;
  p.n = m;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < t[i].n; j++) p.mask |= c->atom[t[i].atom[j]].mask;
  return p;
}

static poly_t poly_term(ctx_t *c, int64_t coef, syno_size_t size, int atom) {
  if (c->failed) return (poly_t){0, NULL, 0}; /* `atom` may be the 0 of an intern that ran out of memory */
  term_t *t = arena_alloc(c, sizeof *t);
  int *a = atom >= 0 ? arena_alloc(c, sizeof *a) : NULL;
  if (!t || (atom >= 0 && !a)) return (poly_t){0, NULL, 0};
  if (a) *a = atom;
  *t = (term_t){coef, size, atom >= 0 ? 1 : 0, a};
  return poly_norm(c, t, coef != 0 ? 1 : 0);
}

static poly_t poly_const(ctx_t *c, int64_t v) { return poly_term(c, v, syno_size_one(), -1); }

static bool poly_is_const(const poly_t *p, int64_t *v) {
  if (p->n == 0) {
    *v = 0;
    return true;
  }
  if (p->n == 1 && p->t[0].n == 0 && syno_size_is_one(p->t[0].size)) {
    *v = p->t[0].coef;
    return true;
  }
  return false;
}

static poly_t poly_add(ctx_t *c, poly_t a, poly_t b, int sign) {
  term_t *t = arena_alloc(c, sizeof *t * (size_t)(a.n + b.n));
  if (!t) return (poly_t){0, NULL, 0};
  for (int i = 0; i < a.n; i++) t[i] = a.t[i];
  for (int i = 0; i < b.n; i++) {
    t[a.n + i] = b.t[i];
    if (sign < 0) t[a.n + i].coef = -b.t[i].coef;
  }
  return poly_norm(c, t, a.n + b.n);
}

static poly_t poly_neg(ctx_t *c, poly_t a) { return poly_add(c, poly_const(c, 0), a, -1); }

static poly_t poly_mul(ctx_t *c, poly_t a, poly_t b) {
  int n = a.n * b.n;
  term_t *t = arena_alloc(c, sizeof *t * (size_t)n);
  if (!t) return (poly_t){0, NULL, 0};
  for (int i = 0; i < a.n; i++)
    for (int j = 0; j < b.n; j++) {
      const term_t *x = &a.t[i], *y = &b.t[j];
      int *at = arena_alloc(c, sizeof *at * (size_t)(x->n + y->n));
      if (!at) return (poly_t){0, NULL, 0};
      /* Merge the two ascending atom lists. */
      int p = 0, q = 0, k = 0;
      while (p < x->n || q < y->n)
        at[k++] = (q >= y->n || (p < x->n && x->atom[p] <= y->atom[q])) ? x->atom[p++] : y->atom[q++];
      t[i * b.n + j] = (term_t){mul_coef(c, x->coef, y->coef), mul_size(c, x->size, y->size), k, at};
    }
  return poly_norm(c, t, n);
}

/* Interns an atom; structurally equal atoms get one id. */
static int intern(ctx_t *c, atom_t a) {
  for (int i = 0; i < c->n_atoms; i++) {
    const atom_t *b = &c->atom[i];
    if (b->kind == a.kind && b->var == a.var && poly_eq(&b->a, &a.a) && poly_eq(&b->b, &a.b)) return i;
  }
  if (syno_grow((void **)&c->atom, &c->cap_atoms, (size_t)c->n_atoms + 1, sizeof *c->atom)) {
    fail(c, "out of memory");
    return 0;
  }
  switch (a.kind) {
    case AT_OUTER: a.mask = 0; break;
    case AT_INNER: a.mask = 1u << a.var; break;
    default: a.mask = a.a.mask | a.b.mask; break;
  }
  c->atom[c->n_atoms] = a;
  return c->n_atoms++;
}

static void add_cond(ctx_t *c, cond_kind_t kind, poly_t a, poly_t b) {
  if (syno_grow((void **)&c->cond, &c->cap_conds, (size_t)c->n_conds + 1, sizeof *c->cond)) {
    fail(c, "out of memory");
    return;
  }
  cond_t *d = &c->cond[c->n_conds++];
  d->kind = kind;
  d->a = a;
  d->b = b;
  d->neg = kind == C_RANGE ? a : poly_neg(c, a);
  d->mask = a.mask | b.mask;
}

static poly_t norm_node(ctx_t *c, int i);

static poly_t norm_divmod(ctx_t *c, atom_kind_t kind, poly_t a, poly_t b) {
  int64_t x = 0, y = 0;
  bool ca = poly_is_const(&a, &x), cb = poly_is_const(&b, &y);
  /* Folds only where the value is the same at every point the interpreter
   * can evaluate: a nonzero integer divisor (INT64_MIN / -1 excluded). */
  if (cb && y != 0 && !(ca && x == INT64_MIN && y == -1)) {
    if (ca) return poly_const(c, kind == AT_DIV ? syno_index_div(x, y) : syno_index_mod(x, y));
    if (y == 1) return kind == AT_DIV ? a : poly_const(c, 0);
    if (y == -1 && kind == AT_MOD) return poly_const(c, 0);
  }
  int id = intern(c, (atom_t){.kind = kind, .var = 0, .a = a, .b = b});
  return poly_term(c, 1, syno_size_one(), id);
}

static poly_t norm_node_uncached(ctx_t *c, int i) {
  const syno_nest_t *n = c->n;
  const syno_expr_t *e = &n->node[i];
  switch (e->kind) {
    case SYNO_EXPR_OUTER:
      if (e->var < 0 || e->var >= n->n_outer) break;
      return poly_term(c, 1, syno_size_one(), intern(c, (atom_t){.kind = AT_OUTER, .var = e->var}));
    case SYNO_EXPR_INNER:
      if (e->var < 0 || e->var >= n->n_inner) break;
      return poly_term(c, 1, syno_size_one(), intern(c, (atom_t){.kind = AT_INNER, .var = e->var}));
    case SYNO_EXPR_SIZE: return poly_term(c, 1, e->size, -1);
    case SYNO_EXPR_IMM:
      if (e->imm == INT64_MIN) break;
      return poly_const(c, e->imm);
    case SYNO_EXPR_ADD:
    case SYNO_EXPR_SUB:
    case SYNO_EXPR_MUL:
    case SYNO_EXPR_DIV:
    case SYNO_EXPR_MOD:
    case SYNO_EXPR_RESTRICT: {
      /* Children come before their parent in the node array (lowering
       * builds bottom-up); requiring it rules out cycles. */
      if (e->a < 0 || e->a >= i || e->b < 0 || e->b >= i) {
        fail(c, "malformed nest: node %d has an operand that is not an earlier node", i);
        return (poly_t){0, NULL, 0};
      }
      poly_t a = norm_node(c, e->a), b = norm_node(c, e->b);
      switch (e->kind) {
        case SYNO_EXPR_ADD: return poly_add(c, a, b, 1);
        case SYNO_EXPR_SUB: return poly_add(c, a, b, -1);
        case SYNO_EXPR_MUL: return poly_mul(c, a, b);
        case SYNO_EXPR_DIV: return norm_divmod(c, AT_DIV, a, b);
        case SYNO_EXPR_MOD: return norm_divmod(c, AT_MOD, a, b);
        default:
          /* An out-of-range restrict zeroes the whole product wherever it
           * sits, which is what a range condition on the point does. */
          add_cond(c, C_RANGE, a, b);
          return a;
      }
    }
  }
  fail(c, "malformed nest: node %d (kind %d) is not a valid expression", i, (int)e->kind);
  return (poly_t){0, NULL, 0};
}

static poly_t norm_node(ctx_t *c, int i) {
  if (i < 0 || i >= c->n->n_nodes) {
    fail(c, "malformed nest: node index %d out of range", i);
    return (poly_t){0, NULL, 0};
  }
  if (!c->done[i] && !c->failed) {
    c->memo[i] = norm_node_uncached(c, i);
    c->done[i] = true;
  }
  return c->done[i] ? c->memo[i] : (poly_t){0, NULL, 0};
}

static int check_shape(ctx_t *c) {
  const syno_nest_t *n = c->n;
  if (n->n_nodes < 0 || n->n_nodes > SYNO_MAX_NODES || n->n_outer < 0 || n->n_outer > SYNO_MAX_RANK || n->n_inner < 0 ||
      n->n_inner > SYNO_MAX_LOOPS || n->n_guards < 0 || n->n_guards > SYNO_MAX_GUARDS || n->n_factors < 0 ||
      n->n_factors > SYNO_MAX_TENSORS) {
    fail(c, "malformed nest: a count is out of range");
    return -1;
  }
  for (int f = 0; f < n->n_factors; f++) {
    const syno_access_t *a = &n->factor[f];
    if (a->rank < 0 || a->rank > SYNO_MAX_RANK || a->tensor < -1 || a->tensor >= SYNO_MAX_TENSORS) {
      fail(c, "malformed nest: factor %d has a bad tensor or rank", f);
      return -1;
    }
    /* Relayout is only a relayout when each weight is read once: two reads
     * of one weight must be permuted together. */
    for (int g = 0; g < f; g++)
      if (n->factor[g].tensor == a->tensor) {
        fail(c, "tensor %d is read by two factors; the normal form needs each tensor once", a->tensor);
        return -1;
      }
    c->weight[f] = a->tensor >= 1;
  }
  return 0;
}

static int normalize(ctx_t *c) {
  const syno_nest_t *n = c->n;
  if (check_shape(c)) return -1;
  for (int f = 0; f < n->n_factors; f++)
    for (int j = 0; j < n->factor[f].rank; j++) c->idx[f][j] = norm_node(c, n->factor[f].idx[j]);
  for (int g = 0; g < n->n_guards && !c->failed; g++) {
    const syno_guard_t *gd = &n->guard[g];
    poly_t a = norm_node(c, gd->a), b = norm_node(c, gd->b);
    switch (gd->kind) {
      case SYNO_GUARD_RANGE: add_cond(c, C_RANGE, a, b); break;
      case SYNO_GUARD_DIVIDES: add_cond(c, C_DIVIDES, a, b); break;
      case SYNO_GUARD_EQUAL: add_cond(c, C_ZERO, poly_add(c, a, b, -1), poly_const(c, 0)); break;
      default: fail(c, "malformed nest: guard %d has kind %d", g, (int)gd->kind);
    }
  }
  return c->failed ? -1 : 0;
}

/* --- rendering --- */

typedef struct {
  char *s;
  size_t len, cap;
  bool oom;
} sb_t;

static void sb_putn(sb_t *b, const char *s, size_t n) {
  if (b->oom) return;
  if (syno_grow((void **)&b->s, &b->cap, b->len + n + 1, 1)) {
    b->oom = true;
    return;
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

static void sb_puts(sb_t *b, const char *s) { sb_putn(b, s, strlen(s)); }

static void sb_printf(sb_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sb_t *b, const char *fmt, ...) {
  char tmp[64];
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (w > 0) sb_putn(b, tmp, (size_t)w < sizeof tmp ? (size_t)w : sizeof tmp - 1);
}

static void sb_size(sb_t *b, const syno_vars_t *v, syno_size_t s) {
  char tmp[512];
  int w = syno_size_print(v, s, tmp, sizeof tmp);
  if (w >= (int)sizeof tmp)
    b->oom = true; /* cannot happen: 16 names of < 24 bytes */
  else
    sb_puts(b, tmp);
}

/* Takes the text (an empty string when nothing was written); NULL on OOM. */
static char *sb_take(ctx_t *c, sb_t *b) {
  if (!b->oom && !b->s) sb_putn(b, "", 0);
  if (b->oom) {
    syno_free(b->s);
    fail(c, "out of memory");
    return NULL;
  }
  return b->s;
}

static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void free_strs(char **s, int n) {
  for (int i = 0; i < n; i++) syno_free(s[i]);
}

/* names[v] is the text of reduction variable v under the current naming. */
typedef const char *const *names_t;

static void put_poly(ctx_t *c, sb_t *b, const poly_t *p, names_t names);

static void put_atom(ctx_t *c, sb_t *b, int id, names_t names) {
  const atom_t *a = &c->atom[id];
  switch (a->kind) {
    case AT_OUTER: sb_printf(b, "i%d", a->var); return;
    case AT_INNER: sb_puts(b, names[a->var]); return;
    case AT_DIV:
    case AT_MOD:
      sb_puts(b, a->kind == AT_DIV ? "div(" : "mod(");
      put_poly(c, b, &a->a, names);
      sb_puts(b, ", ");
      put_poly(c, b, &a->b, names);
      sb_puts(b, ")");
      return;
  }
}

typedef struct {
  char *m;   /* the monomial: atoms sorted by text, then the size */
  int klass; /* 0: loop variables only, 1: has div/mod, 2: no atoms */
  int64_t coef;
} rterm_t;

/* Readable order: loop-variable terms, then div/mod terms, then symbolic
 * and integer constants; the integer last of all. */
static int rterm_cmp(const void *x, const void *y) {
  const rterm_t *a = x, *b = y;
  if (a->klass != b->klass) return a->klass < b->klass ? -1 : 1;
  bool ea = !a->m[0], eb = !b->m[0];
  if (ea != eb) return ea ? 1 : -1;
  int s = strcmp(a->m, b->m);
  if (s) return s;
  return a->coef < b->coef ? -1 : a->coef > b->coef;
}

static void put_poly(ctx_t *c, sb_t *b, const poly_t *p, names_t names) {
  if (p->n == 0) {
    sb_puts(b, "0");
    return;
  }
  rterm_t *rt = syno_calloc((size_t)p->n, sizeof *rt);
  if (!rt) {
    b->oom = true;
    return;
  }
  for (int i = 0; i < p->n; i++) {
    const term_t *t = &p->t[i];
    char **as = syno_calloc((size_t)(t->n ? t->n : 1), sizeof *as);
    if (!as) {
      b->oom = true;
      break;
    }
    rt[i].klass = t->n ? 0 : 2;
    rt[i].coef = t->coef;
    int k = 0;
    for (; k < t->n; k++) {
      sb_t ab = {0};
      put_atom(c, &ab, t->atom[k], names);
      if (ab.oom || !ab.s) {
        syno_free(ab.s);
        b->oom = true;
        break;
      }
      as[k] = ab.s;
      if (c->atom[t->atom[k]].kind >= AT_DIV) rt[i].klass = 1;
    }
    if (k == t->n) qsort(as, (size_t)t->n, sizeof *as, str_cmp);
    sb_t mb = {0};
    for (int j = 0; j < k; j++) {
      if (j) sb_puts(&mb, "*");
      sb_puts(&mb, as[j]);
    }
    if (!syno_size_is_one(t->size)) {
      if (k) sb_puts(&mb, "*");
      sb_size(&mb, c->v, t->size);
    }
    free_strs(as, k);
    syno_free(as);
    if (!mb.oom && !mb.s) sb_putn(&mb, "", 0);
    if (mb.oom) {
      syno_free(mb.s);
      b->oom = true;
      break;
    }
    rt[i].m = mb.s;
  }
  if (!b->oom) {
    qsort(rt, (size_t)p->n, sizeof *rt, rterm_cmp);
    for (int i = 0; i < p->n; i++) {
      int64_t a = rt[i].coef < 0 ? -rt[i].coef : rt[i].coef;
      if (i)
        sb_puts(b, rt[i].coef < 0 ? " - " : " + ");
      else if (rt[i].coef < 0)
        sb_puts(b, "-");
      if (!rt[i].m[0])
        sb_printf(b, "%lld", (long long)a);
      else {
        if (a != 1) sb_printf(b, "%lld*", (long long)a);
        sb_puts(b, rt[i].m);
      }
    }
  }
  for (int i = 0; i < p->n; i++) syno_free(rt[i].m);
  syno_free(rt);
}

/* The smaller of the texts of p and -p. */
static void put_signless(ctx_t *c, sb_t *b, const poly_t *p, const poly_t *neg, names_t names) {
  sb_t x = {0}, y = {0};
  put_poly(c, &x, p, names);
  put_poly(c, &y, neg, names);
  if (x.oom || y.oom)
    b->oom = true;
  else
    sb_puts(b, strcmp(x.s, y.s) <= 0 ? x.s : y.s);
  syno_free(x.s);
  syno_free(y.s);
}

static void put_cond(ctx_t *c, sb_t *b, const cond_t *d, names_t names) {
  switch (d->kind) {
    case C_RANGE:
      sb_puts(b, "0 <= ");
      put_poly(c, b, &d->a, names);
      sb_puts(b, " < ");
      put_poly(c, b, &d->b, names);
      return;
    case C_DIVIDES:
      sb_puts(b, "mod(");
      put_signless(c, b, &d->a, &d->neg, names);
      sb_puts(b, ", ");
      put_poly(c, b, &d->b, names);
      sb_puts(b, ") == 0");
      return;
    case C_ZERO:
      put_signless(c, b, &d->a, &d->neg, names);
      sb_puts(b, " == 0");
      return;
  }
}

static const char *factor_name(const syno_access_t *a) {
  return a->tensor < 0 ? "grad_out" : a->tensor == 0 ? "in" : "w";
}

typedef struct {
  char *s;
  int index;
} istr_t;

static int istr_cmp(const void *x, const void *y) {
  const istr_t *a = x, *b = y;
  int s = strcmp(a->s, b->s);
  return s ? s : (a->index > b->index) - (a->index < b->index);
}

/* Renders factor f; a weight's axes are sorted by text, and perm receives
 * the original axis of each printed axis. */
static char *render_factor(ctx_t *c, int f, names_t names, int *perm) {
  const syno_access_t *a = &c->n->factor[f];
  istr_t ax[SYNO_MAX_RANK];
  int made = 0;
  for (; made < a->rank; made++) {
    sb_t b = {0};
    put_poly(c, &b, &c->idx[f][made], names);
    sb_puts(&b, ": ");
    sb_size(&b, c->v, a->dim[made]);
    ax[made] = (istr_t){sb_take(c, &b), made};
    if (!ax[made].s) break;
  }
  char *out = NULL;
  if (made == a->rank) {
    if (c->weight[f]) qsort(ax, (size_t)a->rank, sizeof *ax, istr_cmp);
    sb_t b = {0};
    sb_puts(&b, factor_name(a));
    sb_puts(&b, "[");
    for (int j = 0; j < a->rank; j++) {
      if (j) sb_puts(&b, ", ");
      sb_puts(&b, ax[j].s);
      if (perm) perm[j] = ax[j].index;
    }
    sb_puts(&b, "]");
    out = sb_take(c, &b);
  }
  for (int j = 0; j < made; j++) syno_free(ax[j].s);
  return out;
}

/* --- canonical naming of the reduction variables --- */

typedef struct {
  char **s;
  int n;
  size_t cap;
  bool oom;
} strv_t;

static void strv_push(strv_t *v, char *s) {
  if (!s) {
    v->oom = true;
    return;
  }
  if (syno_grow((void **)&v->s, &v->cap, (size_t)v->n + 1, sizeof *v->s)) {
    syno_free(s);
    v->oom = true;
    return;
  }
  v->s[v->n++] = s;
}

static void strv_free(strv_t *v) {
  free_strs(v->s, v->n);
  syno_free(v->s);
}

/* Dense ranks of the strings (equal strings, equal rank); returns the
 * number of distinct ones. */
static int rank_strings(char **sig, int n, int *rank) {
  istr_t tmp[SYNO_MAX_LOOPS];
  for (int i = 0; i < n; i++) tmp[i] = (istr_t){sig[i], i};
  qsort(tmp, (size_t)n, sizeof *tmp, istr_cmp);
  int r = -1;
  for (int i = 0; i < n; i++) {
    if (i == 0 || strcmp(tmp[i].s, tmp[i - 1].s)) r++;
    rank[tmp[i].index] = r;
  }
  return r + 1;
}

static int count_classes(const int *col, int n) {
  int m = 0;
  for (int i = 0; i < n; i++)
    if (col[i] + 1 > m) m = col[i] + 1;
  return m;
}

/* One round of refinement: a variable's new colour is its old colour, its
 * extent and the sorted texts of its occurrences. Weights are located by
 * their own text (their index and axis order are free); in and grad_out by
 * axis position. Returns the number of classes, or -1 on failure. */
static int refine_round(ctx_t *c, int *col) {
  const syno_nest_t *n = c->n;
  int nv = n->n_inner;
  char cname[SYNO_MAX_LOOPS][16];
  const char *names[SYNO_MAX_LOOPS];
  for (int u = 0; u < nv; u++) {
    snprintf(cname[u], sizeof cname[u], "#%d", col[u]);
    names[u] = cname[u];
  }
  char *wtext[SYNO_MAX_TENSORS] = {0};
  for (int f = 0; f < n->n_factors; f++)
    if (c->weight[f]) wtext[f] = render_factor(c, f, names, NULL);
  char *sig[SYNO_MAX_LOOPS] = {0};
  for (int u = 0; u < nv && !c->failed; u++) {
    names[u] = "@";
    strv_t occ = {0};
    uint32_t bit = 1u << u;
    for (int f = 0; f < n->n_factors; f++)
      for (int j = 0; j < n->factor[f].rank; j++) {
        if (!(c->idx[f][j].mask & bit)) continue;
        sb_t b = {0};
        if (c->weight[f]) {
          sb_puts(&b, "w<");
          sb_puts(&b, wtext[f] ? wtext[f] : "");
          sb_puts(&b, ">=");
        } else {
          sb_printf(&b, "%s#%d=", factor_name(&n->factor[f]), j);
        }
        put_poly(c, &b, &c->idx[f][j], names);
        sb_puts(&b, ": ");
        sb_size(&b, c->v, n->factor[f].dim[j]);
        strv_push(&occ, sb_take(c, &b));
      }
    for (int g = 0; g < c->n_conds; g++) {
      if (!(c->cond[g].mask & bit)) continue;
      sb_t b = {0};
      sb_puts(&b, "if=");
      put_cond(c, &b, &c->cond[g], names);
      strv_push(&occ, sb_take(c, &b));
    }
    names[u] = cname[u];
    if (occ.oom)
      fail(c, "out of memory");
    else if (occ.n)
      qsort(occ.s, (size_t)occ.n, sizeof *occ.s, str_cmp);
    sb_t b = {0};
    sb_printf(&b, "%06d|", col[u]);
    sb_size(&b, c->v, n->inner[u]);
    for (int k = 0; k < occ.n && !occ.oom; k++) {
      sb_puts(&b, "|");
      sb_puts(&b, occ.s[k]);
    }
    strv_free(&occ);
    sig[u] = sb_take(c, &b);
  }
  int classes = -1;
  if (!c->failed) classes = rank_strings(sig, nv, col);
  for (int u = 0; u < nv; u++) syno_free(sig[u]);
  for (int f = 0; f < n->n_factors; f++) syno_free(wtext[f]);
  return classes;
}

static int refine(ctx_t *c, int *col) {
  int nv = c->n->n_inner, classes = count_classes(col, nv);
  for (;;) {
    int next = refine_round(c, col);
    if (next < 0) return -1;
    if (next == classes || next == nv) return next;
    classes = next;
  }
}

/* Renders the whole nest with reduction variable u named r<col[u]> (col a
 * permutation); fills map when non-NULL. */
static char *render_nest(ctx_t *c, const int *col, syno_normal_map_t *map) {
  const syno_nest_t *n = c->n;
  char rname[SYNO_MAX_LOOPS][16];
  const char *names[SYNO_MAX_LOOPS];
  int by_name[SYNO_MAX_LOOPS];
  for (int u = 0; u < n->n_inner; u++) {
    snprintf(rname[u], sizeof rname[u], "r%d", col[u]);
    names[u] = rname[u];
    by_name[col[u]] = u;
  }
  sb_t b = {0};
  sb_puts(&b, n->target < 0 ? "out[" : n->target == 0 ? "grad_in[" : "grad_w[");
  for (int i = 0; i < n->n_outer; i++) {
    if (i) sb_puts(&b, ", ");
    sb_size(&b, c->v, n->outer[i]);
  }
  sb_puts(&b, "] = ");
  if (n->n_inner) {
    sb_puts(&b, "sum(");
    for (int k = 0; k < n->n_inner; k++) {
      sb_printf(&b, "%sr%d: ", k ? ", " : "", k);
      sb_size(&b, c->v, n->inner[by_name[k]]);
    }
    sb_puts(&b, ") ");
  }
  /* Conditions: a conjunction, so a sorted set. */
  strv_t cs = {0};
  for (int g = 0; g < c->n_conds; g++) {
    sb_t cb = {0};
    put_cond(c, &cb, &c->cond[g], names);
    strv_push(&cs, sb_take(c, &cb));
  }
  if (!cs.oom && cs.n) {
    qsort(cs.s, (size_t)cs.n, sizeof *cs.s, str_cmp);
    sb_puts(&b, "if(");
    for (int g = 0; g < cs.n; g++) {
      if (g && strcmp(cs.s[g], cs.s[g - 1]) == 0) continue;
      if (g) sb_puts(&b, "; ");
      sb_puts(&b, cs.s[g]);
    }
    sb_puts(&b, ") ");
  }
  strv_free(&cs);
  /* Factors: grad_out, then in (fixed), then the weights sorted by text. */
  istr_t fs[SYNO_MAX_TENSORS];
  int perm[SYNO_MAX_TENSORS][SYNO_MAX_RANK], nf = 0;
  for (int pass = -1; pass <= 1; pass++)
    for (int f = 0; f < n->n_factors; f++) {
      int t = n->factor[f].tensor;
      if ((pass < 1 && t != pass) || (pass == 1 && t < 1)) continue;
      fs[nf] = (istr_t){render_factor(c, f, names, perm[f]), f};
      if (!fs[nf].s) cs.oom = true;
      nf++;
    }
  int fixed = 0;
  while (fixed < nf && !c->weight[fs[fixed].index]) fixed++;
  if (!cs.oom) {
    qsort(fs + fixed, (size_t)(nf - fixed), sizeof *fs, istr_cmp);
    for (int p = 0; p < nf; p++) {
      if (p) sb_puts(&b, " * ");
      sb_puts(&b, fs[p].s);
    }
    if (nf == 0) sb_puts(&b, "1");
    if (!syno_size_is_one(n->divisor)) {
      sb_puts(&b, " / (");
      sb_size(&b, c->v, n->divisor);
      sb_puts(&b, ")");
    }
  }
  for (int p = 0; p < nf; p++) syno_free(fs[p].s);
  if (cs.oom) {
    syno_free(b.s);
    fail(c, "out of memory");
    return NULL;
  }
  if (map && !cs.oom) {
    memset(map, 0, sizeof *map);
    map->n_factors = nf;
    for (int p = 0; p < nf; p++) {
      int f = fs[p].index;
      map->factor[p] = f;
      for (int j = 0; j < n->factor[f].rank; j++) map->axis[p][j] = perm[f][j];
    }
    map->n_inner = n->n_inner;
    for (int k = 0; k < n->n_inner; k++) map->inner[k] = by_name[k];
  }
  return sb_take(c, &b);
}

typedef struct {
  ctx_t *c;
  int leaves;
  char *best;
  syno_normal_map_t best_map;
} search_t;

/* Depth-first individualization-refinement. first receives the colouring
 * of the first leaf reached below this node (for automorphism pruning). */
static void descend(search_t *s, const int *col0, int *first) {
  ctx_t *c = s->c;
  int nv = c->n->n_inner, col[SYNO_MAX_LOOPS];
  memcpy(col, col0, sizeof(int) * (size_t)nv);
  int classes = refine(c, col);
  if (classes < 0) return;
  if (classes == nv) {
    syno_normal_map_t map;
    char *txt = render_nest(c, col, &map);
    if (!txt) return;
    s->leaves++;
    memcpy(first, col, sizeof(int) * (size_t)nv);
    if (!s->best || strcmp(txt, s->best) < 0) {
      syno_free(s->best);
      s->best = txt;
      s->best_map = map;
    } else {
      syno_free(txt);
    }
    return;
  }
  /* The first tied class, by colour. */
  int target = -1, members[SYNO_MAX_LOOPS], m = 0;
  for (int k = 0; k < classes && target < 0; k++) {
    int cnt = 0;
    for (int u = 0; u < nv; u++) cnt += col[u] == k;
    if (cnt > 1) target = k;
  }
  for (int u = 0; u < nv; u++)
    if (col[u] == target) members[m++] = u;
  int leaf[SYNO_MAX_LOOPS];
  char *leaf_txt = NULL;
  for (int i = 0; i < m && !c->failed; i++) {
    int v = members[i];
    if (i > 0 && s->leaves >= SYNO_NORMAL_MAX_LEAVES) break;
    if (i > 0 && leaf_txt) {
      /* If swapping members[0] and v leaves the first leaf's text unchanged,
       * the swap is an automorphism and v's subtree repeats members[0]'s. */
      int sw[SYNO_MAX_LOOPS];
      memcpy(sw, leaf, sizeof(int) * (size_t)nv);
      sw[members[0]] = leaf[v];
      sw[v] = leaf[members[0]];
      char *t = render_nest(c, sw, NULL);
      bool same = t && strcmp(t, leaf_txt) == 0;
      syno_free(t);
      if (same) continue;
    }
    int next[SYNO_MAX_LOOPS];
    /* Individualize v: it sorts first within its class; ranks stay dense. */
    for (int u = 0; u < nv; u++) next[u] = 2 * col[u] + (u == v ? 0 : 1);
    char key[SYNO_MAX_LOOPS][16], *keys[SYNO_MAX_LOOPS];
    for (int u = 0; u < nv; u++) {
      snprintf(key[u], sizeof key[u], "%06d", next[u]);
      keys[u] = key[u];
    }
    rank_strings(keys, nv, next);
    int sub_first[SYNO_MAX_LOOPS];
    for (int u = 0; u < nv; u++) sub_first[u] = -1;
    descend(s, next, sub_first);
    if (i == 0 && sub_first[0] >= 0) {
      memcpy(leaf, sub_first, sizeof(int) * (size_t)nv);
      memcpy(first, sub_first, sizeof(int) * (size_t)nv);
      leaf_txt = render_nest(c, leaf, NULL);
    }
  }
  syno_free(leaf_txt);
}

int syno_nest_normal_form_map(const syno_nest_t *n, const syno_vars_t *v, char *buf, size_t size,
                              syno_normal_map_t *map, syno_error_t *err) {
  ctx_t *c = syno_calloc(1, sizeof *c);
  if (!c) return syno_error_set(err, "out of memory");
  c->n = n;
  c->v = v;
  c->err = err;
  int result = -1;
  if (normalize(c) == 0) {
    search_t s = {.c = c};
    int col[SYNO_MAX_LOOPS] = {0}, first[SYNO_MAX_LOOPS];
    for (int u = 0; u < SYNO_MAX_LOOPS; u++) first[u] = -1;
    descend(&s, col, first);
    if (!c->failed && s.best) {
      size_t len = strlen(s.best);
      if (len > (size_t)INT32_MAX) {
        fail(c, "normal form too long");
      } else if (buf || size) {
        if (len >= size) {
          fail(c, "buffer of %zu bytes too small for the normal form (%zu bytes)", size, len + 1);
          if (buf && size) buf[0] = 0;
        } else {
          memcpy(buf, s.best, len + 1);
          result = (int)len;
        }
      } else {
        result = (int)len;
      }
      if (result >= 0 && map) *map = s.best_map;
    } else if (!c->failed) {
      fail(c, "internal: no normal form was produced");
    }
    syno_free(s.best);
  }
  arena_free(c);
  syno_free(c->atom);
  syno_free(c->cond);
  syno_free(c);
  return result;
}

int syno_nest_normal_form(const syno_nest_t *n, const syno_vars_t *v, char *buf, size_t size, syno_error_t *err) {
  return syno_nest_normal_form_map(n, v, buf, size, NULL, err);
}

int syno_operator_normal_form(const syno_operator_t *op, char *buf, size_t size, syno_error_t *err) {
  syno_nest_t *n = syno_malloc(sizeof *n);
  if (!n) return syno_error_set(err, "out of memory");
  int r = syno_lower_forward(op, n, err);
  if (r == 0) r = syno_nest_normal_form(n, syno_graph_vars(op->g), buf, size, err);
  syno_free(n);
  return r;
}
