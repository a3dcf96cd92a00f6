/* Splitting loop variables at a block (syno_nest_split_blocks, syno/lower.h).
 *
 * A channel-grouped operator reads the output channel i as div(i, B) in the
 * input (which group) and as mod(i, B) in the weight (which channel of the
 * group). Read whole, i is a variable of both tensors, and a GEMM plan can
 * only batch over it: C_out products of one column each. Written as
 * i = g*B + o, the input reads g and the weight reads o, and the nest is one
 * GEMM over all groups. The rewrite is exact: for 0 <= o < B,
 * div(g*B + o, B) = g and mod(g*B + o, B) = o; every other occurrence of i
 * becomes g*B + o. An outer variable becomes two adjacent outer variables
 * (extents E/B and B), so the target's row-major layout is unchanged; an
 * inner one keeps its index for g and appends o. */
#include <string.h>

#include "syno/lower.h"

typedef struct {
  const syno_nest_t *in;
  syno_nest_t *out;
  syno_expr_kind_t kind; /* of the variable split */
  int var;
  syno_size_t block;
  int16_t g, o, whole; /* nodes of the new variables, and of g*B + o (-1 until needed) */
  int16_t memo[SYNO_MAX_NODES];
  bool full;
} split_t;

static int16_t add(split_t *s, syno_expr_t e) {
  if (s->out->n_nodes >= SYNO_MAX_NODES) {
    s->full = true;
    return 0;
  }
  s->out->node[s->out->n_nodes] = e;
  return (int16_t)s->out->n_nodes++;
}

static bool is_split_var(const split_t *s, int i) {
  return s->in->node[i].kind == s->kind && s->in->node[i].var == s->var;
}

/* div(v, B) or mod(v, B) with the block B. */
static bool at_block(const split_t *s, const syno_expr_t *x) {
  return (x->kind == SYNO_EXPR_DIV || x->kind == SYNO_EXPR_MOD) && is_split_var(s, x->a) &&
         s->in->node[x->b].kind == SYNO_EXPR_SIZE && syno_size_eq(s->in->node[x->b].size, s->block);
}

/* Node i of the input nest, rewritten into the output nest. */
static int16_t copy(split_t *s, int i) {
  if (s->memo[i] >= 0) return s->memo[i];
  const syno_expr_t *x = &s->in->node[i];
  int16_t r;
  if (at_block(s, x)) {
    r = x->kind == SYNO_EXPR_DIV ? s->g : s->o;
  } else if (is_split_var(s, i)) {
    if (s->whole < 0) {
      int16_t b = add(s, (syno_expr_t){.kind = SYNO_EXPR_SIZE, .size = s->block});
      int16_t m = add(s, (syno_expr_t){.kind = SYNO_EXPR_MUL, .a = s->g, .b = b});
      s->whole = add(s, (syno_expr_t){.kind = SYNO_EXPR_ADD, .a = m, .b = s->o});
    }
    r = s->whole;
  } else if (x->kind == SYNO_EXPR_OUTER) {
    /* An outer split shifts the outer variables after it by one. */
    int v = x->var + (s->kind == SYNO_EXPR_OUTER && x->var > s->var);
    r = add(s, (syno_expr_t){.kind = SYNO_EXPR_OUTER, .var = v});
  } else if (x->kind == SYNO_EXPR_INNER || x->kind == SYNO_EXPR_SIZE || x->kind == SYNO_EXPR_IMM) {
    r = add(s, *x);
  } else {
    int16_t a = copy(s, x->a), b = copy(s, x->b);
    r = add(s, (syno_expr_t){.kind = x->kind, .a = a, .b = b});
  }
  s->memo[i] = r;
  return r;
}

/* The one block B at which the nest reads variable (kind, var) through
 * div/mod, found by walking the factors' trees; false when there is none or
 * more than one. */
static bool find_block(split_t *s, int i, bool *seen, int *n_blocks) {
  if (seen[i]) return true;
  seen[i] = true;
  const syno_expr_t *x = &s->in->node[i];
  if ((x->kind == SYNO_EXPR_DIV || x->kind == SYNO_EXPR_MOD) && is_split_var(s, x->a)) {
    const syno_expr_t *b = &s->in->node[x->b];
    if (b->kind != SYNO_EXPR_SIZE) return false;
    if (*n_blocks == 0) s->block = b->size;
    if (*n_blocks > 0 && !syno_size_eq(s->block, b->size)) return false;
    (*n_blocks)++;
    return true;
  }
  if (x->kind >= SYNO_EXPR_ADD) return find_block(s, x->a, seen, n_blocks) && find_block(s, x->b, seen, n_blocks);
  return true;
}

/* Splits one variable of *n in place when it qualifies; true if it did. */
static bool split_one(syno_nest_t *n, const syno_vars_t *v, syno_expr_kind_t kind, int var, syno_nest_t *tmp) {
  split_t s = {.in = n, .out = tmp, .kind = kind, .var = var, .g = -1, .o = -1, .whole = -1};
  bool seen[SYNO_MAX_NODES] = {false};
  int n_blocks = 0;
  for (int f = 0; f < n->n_factors; f++)
    for (int a = 0; a < n->factor[f].rank; a++)
      if (!find_block(&s, n->factor[f].idx[a], seen, &n_blocks)) return false;
  syno_size_t extent = kind == SYNO_EXPR_OUTER ? n->outer[var] : n->inner[var];
  if (n_blocks == 0 || syno_size_is_one(s.block) || syno_size_eq(s.block, extent)) return false;
  syno_size_t groups = syno_size_div(extent, s.block);
  if (!syno_size_is_integral(v, groups) || !syno_size_is_integral(v, s.block)) return false;
  if (kind == SYNO_EXPR_OUTER ? n->n_outer >= SYNO_MAX_RANK : n->n_inner >= SYNO_MAX_LOOPS) return false;

  *tmp = *n;
  tmp->n_nodes = 0;
  memset(s.memo, 0xff, sizeof s.memo); /* -1 */
  if (kind == SYNO_EXPR_OUTER) {
    memmove(&tmp->outer[var + 1], &tmp->outer[var], sizeof *tmp->outer * (size_t)(n->n_outer - var));
    tmp->n_outer++;
    tmp->outer[var] = groups;
    tmp->outer[var + 1] = s.block;
    s.g = add(&s, (syno_expr_t){.kind = SYNO_EXPR_OUTER, .var = var});
    s.o = add(&s, (syno_expr_t){.kind = SYNO_EXPR_OUTER, .var = var + 1});
  } else {
    tmp->inner[var] = groups;
    tmp->inner[tmp->n_inner] = s.block;
    s.g = add(&s, (syno_expr_t){.kind = SYNO_EXPR_INNER, .var = var});
    s.o = add(&s, (syno_expr_t){.kind = SYNO_EXPR_INNER, .var = tmp->n_inner++});
  }
  for (int f = 0; f < n->n_factors; f++)
    for (int a = 0; a < n->factor[f].rank; a++) tmp->factor[f].idx[a] = copy(&s, n->factor[f].idx[a]);
  if (s.full) return false;
  *n = *tmp;
  return true;
}

int syno_nest_split_blocks(const syno_nest_t *in, const syno_vars_t *v, syno_nest_t *out) {
  *out = *in;
  if (in->n_guards > 0) return 0;
  syno_nest_t tmp;
  int splits = 0;
  /* Each split adds two variables that may split again (nested blocks);
   * variables are revisited until none qualifies. */
  for (bool again = true; again;) {
    again = false;
    for (int i = 0; i < out->n_outer && !again; i++) again = split_one(out, v, SYNO_EXPR_OUTER, i, &tmp);
    for (int i = 0; i < out->n_inner && !again; i++) again = split_one(out, v, SYNO_EXPR_INNER, i, &tmp);
    splits += again;
  }
  return splits;
}
