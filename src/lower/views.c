/* Factors as tensor views, and convolutions among them (see views.h). */
#include "views.h"

#include <string.h>

#include "expr_eval.h"

bool lower_node_is_const(const syno_nest_t *n, int i) {
  const syno_expr_t *x = &n->node[i];
  switch (x->kind) {
    case SYNO_EXPR_OUTER:
    case SYNO_EXPR_INNER: return false;
    case SYNO_EXPR_SIZE:
    case SYNO_EXPR_IMM: return true;
    default: return lower_node_is_const(n, x->a) && lower_node_is_const(n, x->b);
  }
}

int lower_const_sign(const syno_nest_t *n, int i) {
  const syno_expr_t *x = &n->node[i];
  switch (x->kind) {
    case SYNO_EXPR_SIZE: return 1;
    case SYNO_EXPR_IMM: return x->imm > 0 ? 1 : x->imm < 0 ? -1 : 0;
    case SYNO_EXPR_MUL: return lower_const_sign(n, x->a) * lower_const_sign(n, x->b);
    case SYNO_EXPR_ADD: {
      int a = lower_const_sign(n, x->a), b = lower_const_sign(n, x->b);
      return a == b ? a : 0;
    }
    default: return 0;
  }
}

/* A constant product of integers and sizes into *c; false for any other constant. */
static bool const_coef(const syno_nest_t *n, int i, lower_coef_t *c) {
  const syno_expr_t *x = &n->node[i];
  switch (x->kind) {
    case SYNO_EXPR_SIZE: c->size = syno_size_mul(c->size, x->size); return true;
    case SYNO_EXPR_IMM: c->imm *= x->imm; return true;
    case SYNO_EXPR_MUL: return const_coef(n, x->a, c) && const_coef(n, x->b, c);
    default: return false;
  }
}

/* Adds mult * (node i) to the affine form; false when i is not affine. */
static bool affine(const syno_nest_t *n, int i, lower_coef_t mult, lower_axis_view_t *av, const char **reason) {
  const syno_expr_t *x = &n->node[i];
  if (lower_node_is_const(n, i)) {
    if (mult.imm == 0) return true;
    if ((mult.imm != 1 && mult.imm != -1) || !syno_size_is_one(mult.size)) {
      *reason = "a constant scaled inside an index expression";
      return false;
    }
    if (av->n_consts >= LOWER_MAX_CONSTS) {
      *reason = "too many constant terms in an index expression";
      return false;
    }
    av->cnode[av->n_consts] = (int16_t)i;
    av->csign[av->n_consts++] = (int8_t)mult.imm;
    return true;
  }
  switch (x->kind) {
    case SYNO_EXPR_OUTER:
    case SYNO_EXPR_INNER: {
      lower_coef_t *c = &av->coef[syno_expr_var(n, x)];
      if (c->imm == 0) {
        *c = mult;
      } else if (syno_size_eq(c->size, mult.size)) {
        c->imm += mult.imm;
      } else {
        *reason = "a loop variable read at two different scales";
        return false;
      }
      return true;
    }
    case SYNO_EXPR_ADD: return affine(n, x->a, mult, av, reason) && affine(n, x->b, mult, av, reason);
    case SYNO_EXPR_SUB: {
      lower_coef_t neg = {-mult.imm, mult.size};
      return affine(n, x->a, mult, av, reason) && affine(n, x->b, neg, av, reason);
    }
    case SYNO_EXPR_MUL: {
      int k = lower_node_is_const(n, x->a) ? x->a : x->b, e = k == x->a ? x->b : x->a;
      if (!lower_node_is_const(n, k) || !const_coef(n, k, &mult)) {
        *reason = "a product of loop variables, or a scale that is not a product of sizes";
        return false;
      }
      return affine(n, e, mult, av, reason);
    }
    default: *reason = "a div, mod or restrict inside a sum"; return false;
  }
}

/* Whether node e of n always lies in [0, size of node s). */
static bool within(const syno_nest_t *n, int e, int s) {
  const syno_expr_t *x = &n->node[e], *sz = &n->node[s];
  if (sz->kind != SYNO_EXPR_SIZE) return false;
  switch (x->kind) {
    case SYNO_EXPR_RESTRICT:
    case SYNO_EXPR_MOD:
      return n->node[x->b].kind == SYNO_EXPR_SIZE && syno_size_eq(n->node[x->b].size, sz->size);
    case SYNO_EXPR_OUTER:
    case SYNO_EXPR_INNER: return syno_size_eq(syno_nest_extent(n, syno_expr_var(n, x)), sz->size);
    case SYNO_EXPR_DIV: {
      /* div(a, b) lies in [0, S) when a lies in [0, S * b): a restrict or mod by that size. */
      const syno_expr_t *a = &n->node[x->a], *b = &n->node[x->b];
      return b->kind == SYNO_EXPR_SIZE && (a->kind == SYNO_EXPR_RESTRICT || a->kind == SYNO_EXPR_MOD) &&
             n->node[a->b].kind == SYNO_EXPR_SIZE &&
             syno_size_eq(n->node[a->b].size, syno_size_mul(sz->size, b->size));
    }
    default: return false;
  }
}

void lower_axis_view(const syno_nest_t *n, int node, lower_axis_view_t *av, const char **reason) {
  memset(av, 0, sizeof *av);
  *reason = NULL;
  int i = node;
  for (;;) {
    const syno_expr_t *x = &n->node[i];
    bool peel = !lower_node_is_const(n, i) &&
                (x->kind == SYNO_EXPR_RESTRICT || x->kind == SYNO_EXPR_MOD || x->kind == SYNO_EXPR_DIV);
    if (!peel) break;
    if (!lower_node_is_const(n, x->b) || (x->kind != SYNO_EXPR_RESTRICT && lower_const_sign(n, x->b) <= 0)) {
      *reason = "a div, mod or restrict by something that is not a positive constant";
      return;
    }
    if (av->n_peels >= LOWER_MAX_PEELS) {
      *reason = "too many nested div, mod or restrict";
      return;
    }
    lower_peel_t *p = &av->peel[av->n_peels++];
    *p = (lower_peel_t){.node = (int16_t)i, .arg = x->a, .size = x->b, .shift = -1};
    if (x->kind == SYNO_EXPR_RESTRICT) {
      p->kind = LOWER_PEEL_PAD;
    } else if (x->kind == SYNO_EXPR_DIV) {
      p->kind = LOWER_PEEL_REPEAT;
    } else {
      const syno_expr_t *a = &n->node[x->a];
      p->kind = LOWER_PEEL_TILE;
      if ((a->kind == SYNO_EXPR_ADD || a->kind == SYNO_EXPR_SUB) && lower_node_is_const(n, a->b) &&
          within(n, a->a, x->b)) {
        p->kind = LOWER_PEEL_ROLL;
        p->arg = a->a;
        p->shift = a->b;
        p->shift_neg = a->kind == SYNO_EXPR_SUB;
      }
    }
    i = p->arg;
  }
  av->rest = (int16_t)i;
  affine(n, i, (lower_coef_t){1, syno_size_one()}, av, reason);
}

/* T*B + u (either order of the sum and of the product) with u within [0, B). */
static bool split_form(const syno_nest_t *n, int i, int *T, int *u, syno_size_t *B) {
  const syno_expr_t *x = &n->node[i];
  if (x->kind != SYNO_EXPR_ADD) return false;
  for (int side = 0; side < 2; side++) {
    int m = side ? x->b : x->a, rest = side ? x->a : x->b;
    const syno_expr_t *y = &n->node[m];
    if (y->kind != SYNO_EXPR_MUL) continue;
    for (int s2 = 0; s2 < 2; s2++) {
      int b = s2 ? y->a : y->b, t = s2 ? y->b : y->a;
      if (n->node[b].kind != SYNO_EXPR_SIZE || !within(n, rest, b)) continue;
      *T = t;
      *u = rest;
      *B = n->node[b].size;
      return true;
    }
  }
  return false;
}

int lower_access_split(const syno_nest_t *n, const syno_access_t *a, syno_access_t *out) {
  *out = *a;
  int splits = 0;
  for (int ax = 0; ax < out->rank; ax++) {
    lower_axis_view_t av;
    const char *reason;
    lower_axis_view(n, out->idx[ax], &av, &reason);
    int T, u;
    syno_size_t B;
    if (!reason || !split_form(n, out->idx[ax], &T, &u, &B)) continue;
    if (out->rank >= SYNO_MAX_RANK) return -1;
    memmove(&out->idx[ax + 2], &out->idx[ax + 1], sizeof out->idx[0] * (size_t)(out->rank - ax - 1));
    memmove(&out->dim[ax + 2], &out->dim[ax + 1], sizeof out->dim[0] * (size_t)(out->rank - ax - 1));
    out->rank++;
    out->dim[ax + 1] = B;
    out->dim[ax] = syno_size_div(out->dim[ax], B);
    out->idx[ax] = (int16_t)T;
    out->idx[ax + 1] = (int16_t)u;
    splits++;
    ax--; /* T itself may be split again */
  }
  return splits;
}

/* The size of constant node i when it is one size, as *s. */
static bool size_node(const syno_nest_t *n, int i, syno_size_t *s) {
  if (n->node[i].kind != SYNO_EXPR_SIZE) return false;
  *s = n->node[i].size;
  return true;
}

/* The leading rolls of view av, each over an axis of size dim, then a peel of kind k: its index,
 * or -1. */
static int after_rolls(const syno_nest_t *n, const lower_axis_view_t *av, syno_size_t dim, lower_peel_kind_t k) {
  int r = 0;
  syno_size_t s;
  for (; r < av->n_peels && av->peel[r].kind == LOWER_PEEL_ROLL; r++)
    if (!size_node(n, av->peel[r].size, &s) || !syno_size_eq(s, dim)) return -1;
  return r < av->n_peels && av->peel[r].kind == k ? r : -1;
}

int lower_access_merge(const syno_nest_t *n, syno_access_t *a, lower_merge_t *m, int max) {
  int count = 0;
  for (int ax = 0; ax + 1 < a->rank && count < max; ax++) {
    lower_axis_view_t v[2];
    const char *reason;
    for (int s = 0; s < 2; s++) lower_axis_view(n, a->idx[ax + s], &v[s], &reason);
    for (int swap = 0; swap < 2; swap++) {
      int di = swap, mi = 1 - swap; /* the div (repeat) axis and the mod (tile) axis of the pair */
      int rd = after_rolls(n, &v[di], a->dim[ax + di], LOWER_PEEL_REPEAT);
      int rm = after_rolls(n, &v[mi], a->dim[ax + mi], LOWER_PEEL_TILE);
      syno_size_t bd, bm;
      if (rd < 0 || rm < 0 || v[di].peel[rd].arg != v[mi].peel[rm].arg ||
          !size_node(n, v[di].peel[rd].size, &bd) || !size_node(n, v[mi].peel[rm].size, &bm) ||
          !syno_size_eq(bd, bm) || !syno_size_eq(bm, a->dim[ax + mi]))
        continue;
      lower_merge_t *g = &m[count++];
      g->ax = ax;
      g->swap = swap;
      g->n_rolls[di] = rd;
      g->n_rolls[mi] = rm;
      for (int s = 0; s < 2; s++) memcpy(g->roll[s], v[s].peel, sizeof(lower_peel_t) * (size_t)g->n_rolls[s]);
      a->idx[ax] = v[di].peel[rd].arg;
      a->dim[ax] = syno_size_mul(a->dim[ax], a->dim[ax + 1]);
      memmove(&a->idx[ax + 1], &a->idx[ax + 2], sizeof a->idx[0] * (size_t)(a->rank - ax - 2));
      memmove(&a->dim[ax + 1], &a->dim[ax + 2], sizeof a->dim[0] * (size_t)(a->rank - ax - 2));
      a->rank--;
      ax--; /* the merged axis may pair with the next */
      break;
    }
  }
  return count;
}

static int append(syno_nest_t *n, syno_expr_t x) {
  if (n->n_nodes >= SYNO_MAX_NODES) return -1;
  n->node[n->n_nodes] = x;
  return n->n_nodes++;
}

/* The first term of the sum at node i that is not affine, with its scale. */
static bool find_term(const syno_nest_t *n, int i, lower_coef_t mult, int *q, lower_coef_t *c) {
  const syno_expr_t *x = &n->node[i];
  if (lower_node_is_const(n, i)) return false;
  switch (x->kind) {
    case SYNO_EXPR_OUTER:
    case SYNO_EXPR_INNER: return false;
    case SYNO_EXPR_ADD: return find_term(n, x->a, mult, q, c) || find_term(n, x->b, mult, q, c);
    case SYNO_EXPR_SUB: {
      lower_coef_t neg = {-mult.imm, mult.size};
      return find_term(n, x->a, mult, q, c) || find_term(n, x->b, neg, q, c);
    }
    case SYNO_EXPR_MUL: {
      int k = lower_node_is_const(n, x->a) ? x->a : x->b, e = k == x->a ? x->b : x->a;
      return lower_node_is_const(n, k) && const_coef(n, k, &mult) && find_term(n, e, mult, q, c);
    }
    default:
      *q = i;
      *c = mult;
      return true;
  }
}

/* Node i with the term q replaced by 0, rebuilt along the path to q. */
static int without(syno_nest_t *n, int i, int q) {
  if (i == q) return append(n, (syno_expr_t){.kind = SYNO_EXPR_IMM, .imm = 0});
  syno_expr_t x = n->node[i];
  if (x.kind != SYNO_EXPR_ADD && x.kind != SYNO_EXPR_SUB && x.kind != SYNO_EXPR_MUL) return i;
  int a = without(n, x.a, q), b = a < 0 ? -1 : without(n, x.b, q);
  if (a < 0 || b < 0) return -1;
  if (a == x.a && b == x.b) return i;
  x.a = (int16_t)a;
  x.b = (int16_t)b;
  return append(n, x);
}

int lower_sum_split(syno_nest_t *n, int i, int *q, lower_coef_t *c) {
  const syno_expr_t *x = &n->node[i];
  if (x->kind != SYNO_EXPR_ADD && x->kind != SYNO_EXPR_SUB && x->kind != SYNO_EXPR_MUL) return -1;
  if (!find_term(n, i, (lower_coef_t){1, syno_size_one()}, q, c) || c->imm <= 0) return -1;
  return without(n, i, *q);
}

static int popcount(syno_varset_t s) {
  int c = 0;
  for (; s; s &= s - 1) c++;
  return c;
}

static int lowest(syno_varset_t s) {
  for (int i = 0; i < 64; i++)
    if (s >> i & 1) return i;
  return -1;
}

bool lower_view_conv(const lower_stages_t *p, const lower_axis_view_t *av, int rank, lower_conv_t *c) {
  memset(c, 0, sizeof *c);
  if (p->n_stages < 1 || p->seq[0] == 0) return false;
  syno_varset_t X = p->reads[0], W = p->reads[p->seq[0]], R = p->result[0];
  if ((X & ~W & ~R) || (W & ~X & ~R)) return false;
  c->batch = X & R & ~W;
  c->group = X & W & R;
  c->out = W & R & ~X;
  c->chan = X & W & ~R;
  syno_varset_t on_axis[SYNO_MAX_RANK];
  for (int a = 0; a < rank; a++) {
    on_axis[a] = 0;
    for (int v = 0; v < SYNO_NEST_MAX_VARS; v++)
      if (av[a].coef[v].imm) on_axis[a] |= (syno_varset_t)1 << v;
  }
  for (int a = 0; a < rank; a++) {
    syno_varset_t s = on_axis[a], others = 0;
    for (int b = 0; b < rank; b++)
      if (b != a) others |= on_axis[b];
    if (popcount(s) != 2 || popcount(s & c->batch) != 1 || popcount(s & c->chan) != 1 || (s & others)) continue;
    int m = lowest(s & c->batch), k = lowest(s & c->chan);
    /* A window's stride and dilation are coefficients (k, s, ...): a primary size
     * there is a merged channel axis, not a spatial one. */
    if (av[a].coef[m].imm <= 0 || syno_size_primaries(av[a].coef[m].size) || syno_size_primaries(av[a].coef[k].size) ||
        c->n_win >= LOWER_MAX_WINDOWS)
      continue;
    int w = c->n_win++;
    c->axis[w] = a;
    c->m[w] = m;
    c->k[w] = k;
    c->stride[w] = av[a].coef[m];
    c->dil[w] = av[a].coef[k];
    c->batch &= ~((syno_varset_t)1 << m);
    c->chan &= ~((syno_varset_t)1 << k);
  }
  return c->n_win > 0;
}
