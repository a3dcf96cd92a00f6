/* The normal-stage generators (docs/semantics.md §3.2-3.9): each primitive's candidates
 * and every canonicalization rule that filters them. A rule that removes a
 * candidate is counted under its name; a switched-off rule lets it through. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space_internal.h"

typedef struct {
  syno_space_t *s;
  uint32_t id;
  node_t n; /* a copy: the node array may move while children are added */
  const syno_dim_t *dims;
  syno_graph_t *g;
  int n_full, n_simple;
  syno_dim_t full[SPACE_MAX_IFACE]; /* every non-weight dim with chain left */
  bool simple[SPACE_MAX_IFACE];     /* above the latest contraction: C1 keeps the simple views (Shift,
                                     * Stride, Merge, Expand) to these, and a Split to one of them */
  syno_error_t *err;
} gen_t;

/* Checks rule r: when it is on and `hit`, count and report a rejection. */
static bool reject(gen_t *G, syno_rule_t r, bool hit) {
  if (!hit || !space_rule_on(G->s, r)) return false;
  space_count_rule(G->s, r);
  return true;
}

/* Whether `more` primitives of this kind stay within the space's cap. */
static bool below_cap(gen_t *G, syno_prim_kind_t kind, int more) {
  int cap = G->s->spec.opts.max_count[kind];
  if (cap < 0 || G->n.count[kind] + more <= cap) return true;
  G->s->stats.prune[SYNO_PRUNE_LIMIT]++;
  return false;
}

static const syno_prim_t *below(const gen_t *G, syno_dim_t d) { return syno_graph_below(G->g, d); }
static bool below_is(const gen_t *G, syno_dim_t d, syno_prim_kind_t k) {
  const syno_prim_t *p = below(G, d);
  return p && p->kind == k;
}
static int slot(const gen_t *G, syno_dim_t d) { return syno_graph_dim(G->g, d)->slot; }
static bool is_reduce(const gen_t *G, syno_dim_t d) { return syno_graph_dim(G->g, d)->kind == SYNO_DIM_REDUCE; }
static bool is_weight_axis(const gen_t *G, syno_dim_t d) { return space_weight_axis(G->g, d); }
static bool is_share_data(const gen_t *G, syno_dim_t d) { return below_is(G, d, SYNO_PRIM_SHARE) && slot(G, d) == 0; }
static bool is_merge_l(const gen_t *G, syno_dim_t d) { return below_is(G, d, SYNO_PRIM_MERGE) && slot(G, d) == 0; }
static bool is_merge_r(const gen_t *G, syno_dim_t d) { return below_is(G, d, SYNO_PRIM_MERGE) && slot(G, d) == 1; }
static syno_size_t dsize(const gen_t *G, syno_dim_t d) { return syno_graph_dim(G->g, d)->size; }
static const syno_color_t *color(const gen_t *G, syno_dim_t d) { return syno_graph_color(G->g, d); }
static const syno_vars_t *vars(const gen_t *G) { return &G->s->spec.vars; }
static const syno_space_opts_t *opts(const gen_t *G) { return &G->s->spec.opts; }

/* Adds a child that replaces `gone` dims by `made` dims. */
static int emit(gen_t *G, const syno_dim_t *gone, int n_gone, const syno_dim_t *made, int n_made, syno_prim_kind_t kind,
                uint32_t prim, const syno_size_t *use, bool primary_only) {
  for (int i = 0; i < n_made; i++)
    if (color(G, made[i])->height > opts(G)->max_chain) {
      G->s->stats.prune[SYNO_PRUNE_CHAIN]++;
      return 0;
    }
  iface_t f;
  space_iface_from(G->s, &G->n, &f);
  f.count[kind]++;
  for (int i = 0; i < n_gone; i++) space_iface_remove(&f, gone[i]);
  for (int i = 0; i < n_made; i++)
    if (!space_iface_add(&f, made[i])) return 0;
  if (use && !space_iface_use(G->s, &f, *use, primary_only)) {
    G->s->stats.prune[SYNO_PRUNE_LIMIT]++;
    return 0;
  }
  syno_step_t st = {.kind = SYNO_STEP_PRIM, .prim = kind, .prim_id = prim};
  return space_add_child(G->s, G->id, SYNO_STAGE_NORMAL, &f, st, G->err);
}

static uint32_t prim_of(const gen_t *G, syno_dim_t in) { return syno_graph_dim(G->g, in)->prim; }

/* Collects the Share weights reached from d down through Split outputs (R3). */
static unsigned weights_through_splits(const gen_t *G, syno_dim_t d) {
  const syno_prim_t *p = below(G, d);
  if (!p) return 0;
  if (p->kind == SYNO_PRIM_SHARE && slot(G, d) == 0) return 1u << p->weight;
  if (p->kind == SYNO_PRIM_SPLIT) return weights_through_splits(G, p->out[0]) | weights_through_splits(G, p->out[1]);
  return 0;
}

/* Follows Merge inputs down to the merged dim (U3). */
static syno_dim_t merge_root(const gen_t *G, syno_dim_t d, int *steps) {
  const syno_prim_t *p;
  *steps = 0;
  while ((p = below(G, d)) && p->kind == SYNO_PRIM_MERGE) {
    d = p->out[0];
    (*steps)++;
  }
  return d;
}

static double lb(const gen_t *G, syno_size_t x) { return syno_size_lower_bound(vars(G), x); }
static double ub(const gen_t *G, syno_size_t x) { return syno_size_upper_bound(vars(G), x); }

static bool odd_everywhere(const gen_t *G, syno_size_t k) {
  for (int b = 0; b < vars(G)->nbind; b++) {
    int64_t x;
    if (syno_size_eval(vars(G), k, b, &x, NULL) || x % 2 == 0) return false;
  }
  return true;
}

static int gen_split(gen_t *G) {
  for (int a = 0; a < G->n_full; a++)
    for (int b = 0; b < G->n_full; b++) {
      if (a == b) continue;
      syno_dim_t l = G->full[a], r = G->full[b];
      if (reject(G, SYNO_RULE_R0, below_is(G, l, SYNO_PRIM_SPLIT))) continue;
      if (reject(G, SYNO_RULE_C1, !G->simple[a] && !G->simple[b])) continue;
      if (reject(G, SYNO_RULE_R1, syno_graph_adjacent(G->g, l, r))) continue;
      if (reject(G, SYNO_RULE_R3, (weights_through_splits(G, l) & weights_through_splits(G, r)) != 0)) continue;
      const syno_color_t *cl = color(G, l), *cr = color(G, r);
      bool same_scope = cl->unordered_scope && cl->unordered_scope == cr->unordered_scope;
      int sl, sr;
      bool same_merge = same_scope && merge_root(G, l, &sl) == merge_root(G, r, &sr) && sl > 0 && sr > 0;
      if (reject(G, SYNO_RULE_U3, same_merge)) continue;
      if (reject(G, SYNO_RULE_U1, same_scope && syno_size_cmp(dsize(G, r), dsize(G, l)) < 0)) continue;
      syno_size_t prod = syno_size_mul(dsize(G, l), dsize(G, r));
      if (!space_size_valid(G->s, prod)) {
        G->s->stats.prune[SYNO_PRUNE_LIMIT]++;
        continue;
      }
      syno_dim_t in;
      if (syno_graph_split(G->g, l, r, &in, NULL)) {
        G->s->stats.prune[SYNO_PRUNE_ILLEGAL]++;
        continue;
      }
      syno_dim_t gone[2] = {l, r};
      if (emit(G, gone, 2, &in, 1, SYNO_PRIM_SPLIT, prim_of(G, in), NULL, false)) return -1;
    }
  return 0;
}

/* A block B of S is kept when both B and S/B are valid sizes other than 1. */
static bool keep_divisor(const syno_space_t *s, syno_size_t d, void *ctx) {
  syno_size_t q = syno_size_div(*(const syno_size_t *)ctx, d);
  return !syno_size_is_one(d) && !syno_size_is_one(q) && space_size_valid(s, d) && space_size_valid(s, q);
}

/* Merge blocks to try for a dim of size S (docs/semantics.md §1.5): per
 * variable a window of max_enumerations powers centred on half the power,
 * clipped to [0, p] for primaries (no allowance) and to the allowance for
 * coefficients. */
static int enum_divisors(const gen_t *G, syno_size_t S, syno_size_t *out, int max) {
  const syno_vars_t *v = vars(G);
  int me = opts(G)->max_enumerations;
  int lo[2][SYNO_MAX_VARS], hi[2][SYNO_MAX_VARS];
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < v->n[k]; i++) {
      int p = k == SYNO_PRIMARY ? S.p[i] : S.c[i];
      int a = v->var[k][i].max_occurrence - G->n.usage[k][i];
      if (a < 0) a = 0;
      int l = p / 2 - me / 2, h;
      if (k == SYNO_PRIMARY) {
        if (l < 0) l = 0;
        h = l + me - 1;
        if (h > p) h = p;
      } else {
        h = l + me - 1;
        int alo = p >= 0 ? -a : p - a, ahi = p >= 0 ? p + a : a;
        if (l < alo) l = alo;
        if (h > ahi) h = ahi;
      }
      lo[k][i] = l;
      hi[k][i] = h;
    }
  return space_odometer(G->s, lo, hi, keep_divisor, &S, out, max);
}

static int gen_merge(gen_t *G) {
  for (int a = 0; a < G->n_full; a++) {
    syno_dim_t d = G->full[a];
    if (is_share_data(G, d)) continue; /* the data side of a share is never reshaped in place (S2-like, C4) */
    if (reject(G, SYNO_RULE_C1, !G->simple[a])) continue;
    if (reject(G, SYNO_RULE_R0, below_is(G, d, SYNO_PRIM_SPLIT) || is_merge_l(G, d))) continue;
    if (reject(G, SYNO_RULE_R4, is_reduce(G, d))) continue;
    syno_size_t blocks[256];
    int nb = enum_divisors(G, dsize(G, d), blocks, 256);
    for (int i = 0; i < nb; i++) {
      syno_size_t B = blocks[i], L = syno_size_div(dsize(G, d), B);
      const syno_prim_t *p = below(G, d);
      if (reject(G, SYNO_RULE_S3, p && p->kind == SYNO_PRIM_SHIFT && ub(G, B) > opts(G)->max_shift_pattern)) continue;
      if (reject(G, SYNO_RULE_T4, p && p->kind == SYNO_PRIM_STRIDE && lb(G, syno_size_div(B, p->param)) >= 1)) continue;
      if (p && p->kind == SYNO_PRIM_UNFOLD) {
        syno_size_t k = dsize(G, p->out[1]);
        if (reject(G, SYNO_RULE_O3, lb(G, syno_size_div(B, k)) >= 1)) continue;
        if (syno_size_trait(syno_size_div(k, B)) == SYNO_TRAIT_COEFFICIENT) { /* B properly divides the window */
          space_count_rule(G->s, SYNO_RULE_O3);
          continue;
        }
      }
      if (color(G, d)->unordered_scope) {
        if (reject(G, SYNO_RULE_U1, syno_size_cmp(B, L) < 0)) continue;
        if (is_merge_r(G, d)) {
          syno_size_t group = syno_size_div(dsize(G, p->out[0]), p->param);
          if (reject(G, SYNO_RULE_U1, syno_size_cmp(L, group) < 0)) continue;
        }
      }
      syno_dim_t l, r;
      if (syno_graph_merge(G->g, d, B, &l, &r, NULL)) {
        G->s->stats.prune[SYNO_PRUNE_ILLEGAL]++;
        continue;
      }
      syno_dim_t made[2] = {l, r};
      if (emit(G, &d, 1, made, 2, SYNO_PRIM_MERGE, prim_of(G, l), NULL, false)) return -1;
    }
  }
  return 0;
}

static int gen_shift(gen_t *G) {
  for (int a = 0; a < G->n_full; a++) {
    if (reject(G, SYNO_RULE_C1, !G->simple[a])) continue;
    syno_dim_t d = G->full[a];
    if (reject(G, SYNO_RULE_S1, is_reduce(G, d))) continue;
    if (reject(G, SYNO_RULE_S2, is_share_data(G, d) || below_is(G, d, SYNO_PRIM_SHIFT))) continue;
    if (reject(G, SYNO_RULE_U2, color(G, d)->unordered_scope != 0)) continue;
    const syno_prim_t *p = below(G, d);
    if (reject(G, SYNO_RULE_S3,
               p && p->kind == SYNO_PRIM_SPLIT && ub(G, dsize(G, p->out[1])) > opts(G)->max_shift_pattern))
      continue;
    syno_dim_t in;
    if (syno_graph_shift(G->g, d, &in, NULL)) continue;
    if (emit(G, &d, 1, &in, 1, SYNO_PRIM_SHIFT, prim_of(G, in), NULL, false)) return -1;
  }
  return 0;
}

static int gen_stride(gen_t *G) {
  syno_size_t cand[256];
  int nc = space_enum_sizes(G->s, &G->n.usage[0][0], cand, 256);
  for (int a = 0; a < G->n_full; a++) {
    if (reject(G, SYNO_RULE_C1, !G->simple[a])) continue;
    syno_dim_t d = G->full[a];
    if (reject(G, SYNO_RULE_T1, below_is(G, d, SYNO_PRIM_STRIDE))) continue;
    if (reject(G, SYNO_RULE_T2, below_is(G, d, SYNO_PRIM_UNFOLD))) continue;
    if (reject(G, SYNO_RULE_T3, below_is(G, d, SYNO_PRIM_SPLIT))) continue;
    /* The data side of a Share may be strided: a dilated window that a
     * weight reads (the dilated convolution). */
    for (int i = 0; i < nc; i++) {
      syno_size_t in_size = syno_size_mul(cand[i], dsize(G, d));
      if (ub(G, in_size) > opts(G)->max_strided_dim || !space_size_valid(G->s, in_size)) {
        G->s->stats.prune[SYNO_PRUNE_LIMIT]++;
        continue;
      }
      syno_dim_t in;
      if (syno_graph_stride(G->g, d, cand[i], &in, NULL)) continue;
      if (emit(G, &d, 1, &in, 1, SYNO_PRIM_STRIDE, prim_of(G, in), &cand[i], false)) return -1;
    }
  }
  return 0;
}

static int gen_unfold(gen_t *G) {
  for (int a = 0; a < G->n_full; a++)
    for (int b = 0; b < G->n_full; b++) {
      if (a == b) continue;
      syno_dim_t l = G->full[a], r = G->full[b];
      if (reject(G, SYNO_RULE_O2, below_is(G, l, SYNO_PRIM_SPLIT))) continue;
      if (reject(G, SYNO_RULE_S4, below_is(G, l, SYNO_PRIM_SHIFT))) continue;
      if (reject(G, SYNO_RULE_O4, is_reduce(G, r) || color(G, l)->ends_up_reduce)) continue;
      syno_size_t k = dsize(G, r);
      if (!odd_everywhere(G, k) || ub(G, k) > opts(G)->max_unfold_kernel ||
          lb(G, syno_size_div(dsize(G, l), k)) < opts(G)->min_unfold_ratio) {
        G->s->stats.prune[SYNO_PRUNE_LIMIT]++;
        continue;
      }
      const syno_prim_t *p = below(G, l);
      if (reject(G, SYNO_RULE_O1, p && p->kind == SYNO_PRIM_UNFOLD && lb(G, syno_size_div(k, dsize(G, p->out[1]))) < 1))
        continue;
      syno_dim_t in;
      if (syno_graph_unfold(G->g, l, r, &in, NULL)) {
        G->s->stats.prune[SYNO_PRUNE_ILLEGAL]++;
        continue;
      }
      syno_dim_t gone[2] = {l, r};
      if (emit(G, gone, 2, &in, 1, SYNO_PRIM_UNFOLD, prim_of(G, in), NULL, false)) return -1;
    }
  return 0;
}

/* A stand-alone Expand of a Merge's minor input: repeat_interleave (docs/semantics.md §3.7). */
static int gen_expand(gen_t *G) {
  const syno_dim_t *exps = space_node_exps(G->s, &G->n);
  double repeat = 1;
  for (int i = 0; i < G->n.n_exp; i++)
    if (below_is(G, exps[i], SYNO_PRIM_MERGE)) repeat *= ub(G, dsize(G, exps[i]));
  for (int a = 0; a < G->n_full; a++) {
    syno_dim_t d = G->full[a];
    if (!is_merge_r(G, d) && !is_merge_l(G, d)) continue;
    if (reject(G, SYNO_RULE_C1, !G->simple[a])) continue;
    bool adjacent = false;
    for (int i = 0; i < G->n.n_exp; i++)
      adjacent = adjacent || syno_graph_adjacent(G->g, d, exps[i]) || syno_graph_adjacent(G->g, exps[i], d);
    if (reject(G, SYNO_RULE_R2, adjacent)) continue;
    if (repeat * ub(G, dsize(G, d)) > opts(G)->max_expansion_repeat) {
      G->s->stats.prune[SYNO_PRUNE_LIMIT]++;
      continue;
    }
    uint32_t prim;
    if (syno_graph_expand(G->g, d, &prim, NULL)) continue;
    iface_t f;
    space_iface_from(G->s, &G->n, &f);
    f.count[SYNO_PRIM_EXPAND]++;
    space_iface_remove(&f, d);
    space_iface_add_exp(&f, d);
    syno_step_t st = {.kind = SYNO_STEP_PRIM, .prim = SYNO_PRIM_EXPAND, .prim_id = prim};
    if (space_add_child(G->s, G->id, SYNO_STAGE_NORMAL, &f, st, G->err)) return -1;
  }
  return 0;
}

/* --- Contraction (docs/semantics.md §3.9) --- */

typedef enum { CT_NORMAL = 0, CT_MERGE, CT_SHARED } ctype_t;

typedef struct {
  gen_t *G;
  int w; /* the new weight id */
  int n;
  syno_dim_t cand[SPACE_MAX_IFACE];
  ctype_t type[SPACE_MAX_IFACE];
  int choice[SPACE_MAX_IFACE]; /* 0 skip, 1 share, 2 expand + share */
  int8_t usage[2][SYNO_MAX_VARS];
  syno_dim_t prev_leader;                          /* of weight w-1, or 0 */
  int at[SPACE_MAX_IFACE];                         /* cand[i] is the node's dim at[i] */
  double lo[SPACE_MAX_IFACE], hi[SPACE_MAX_IFACE]; /* cand[i]'s size, lower and upper bound over bindings */
  double *val;                                     /* cand[i]'s size under binding b: val[i * nbind + b] */
  dim_info_t info[SPACE_MAX_IFACE];                /* of the node's dims */
  dim_info_t shared[SPACE_MAX_IFACE];              /* the same, as a share's data side */
  /* The last Contraction without Stride or Expand: only odd Unfold windows
   * change the numel after it, so the dims it broadcasts must carry every
   * factor 2 of the numel ratio R under each binding (distance term (5)).
   * two[i][b]: the power of 2 in cand[i] under binding b; need[b]: in R;
   * rest[i][b]: in cand[i..] that can be broadcast; have[b]: in those
   * chosen so far. */
  bool odd_after;
  int16_t two[SPACE_MAX_IFACE][SYNO_MAX_BINDINGS], rest[SPACE_MAX_IFACE + 1][SYNO_MAX_BINDINGS];
  int need[SYNO_MAX_BINDINGS], have[SYNO_MAX_BINDINGS];
} contract_t;

static ctype_t contraction_type(const gen_t *G, syno_dim_t d) {
  int through = 0;
  const syno_prim_t *p;
  syno_dim_t b = d;
  while ((p = below(G, b)) && p->kind == SYNO_PRIM_SHARE && slot(G, b) == 0) {
    b = p->out[0];
    through++;
  }
  const syno_dimension_t *bd = syno_graph_dim(G->g, b);
  if (bd->kind == SYNO_DIM_ITERATOR || (p && p->kind == SYNO_PRIM_MERGE)) return CT_MERGE;
  if (bd->kind == SYNO_DIM_REDUCE && through > 0) return CT_SHARED;
  return CT_NORMAL;
}

/* GlobalLessThan: by height, then by the structural hash, so the order
 * does not depend on the order dims were created in. */
static bool global_less(const gen_t *G, syno_dim_t a, syno_dim_t b) {
  int ha = color(G, a)->height, hb = color(G, b)->height;
  if (ha != hb) return ha < hb;
  uint64_t xa = syno_graph_dim(G->g, a)->hash, xb = syno_graph_dim(G->g, b)->hash;
  return xa != xb ? xa < xb : a < b;
}

static int finish_contraction(contract_t *C) {
  gen_t *G = C->G;
  int shares = 0, outer = 0, inner = 0;
  syno_dim_t leader = 0;
  unsigned tags = 0;
  for (int i = 0; i < C->n; i++) {
    if (!C->choice[i]) continue;
    shares++;
    outer += C->choice[i] == 2;
    inner += C->choice[i] == 1;
    if (!leader || global_less(G, C->cand[i], leader)) leader = C->cand[i];
    tags |= color(G, C->cand[i])->weights_below;
  }
  if (shares == 0) return 0;
  if (!below_cap(G, SYNO_PRIM_SHARE, shares)) return 0;
  if (reject(G, SYNO_RULE_C3, shares < 2 || outer < 1 || inner < 1)) return 0;
  /* The weight's numel, least over the bindings (sizes are integers, so
   * the products are exact). */
  int nb = vars(G)->nbind;
  double numel_lb = 0;
  for (int b = 0; b < nb; b++) {
    double x = 1;
    for (int i = 0; i < C->n; i++)
      if (C->choice[i]) x *= C->val[i * nb + b];
    if (b == 0 || x < numel_lb) numel_lb = x;
  }
  if (numel_lb < opts(G)->min_weight_params) {
    G->s->stats.prune[SYNO_PRUNE_LIMIT]++;
    return 0;
  }
  /* C2: a contraction not stacked on the previous weight comes in leader order. */
  int last = 0;
  for (int w = 1; w < SYNO_MAX_TENSORS; w++)
    if (tags & (1u << w)) last = w;
  if (C->prev_leader && last + 1 != C->w && reject(G, SYNO_RULE_C2, !global_less(G, C->prev_leader, leader))) return 0;
  /* The child's shape distance, from the dims' infos, before any dim is
   * built: most contractions are pruned here. */
  if (opts(G)->prune_distance && G->n.depth + 1 <= opts(G)->depth) {
    int choice_at[SPACE_MAX_IFACE] = {0}, nv = 0;
    for (int i = 0; i < C->n; i++) choice_at[C->at[i]] = C->choice[i];
    dim_info_t v[SPACE_MAX_IFACE];
    for (int j = 0; j < G->n.n_dims; j++)
      if (choice_at[j] == 0)
        v[nv++] = C->info[j];
      else if (choice_at[j] == 1)
        v[nv++] = C->shared[j];
    int8_t count[SYNO_PRIM_KINDS];
    memcpy(count, G->n.count, sizeof count);
    count[SYNO_PRIM_SHARE] = (int8_t)(count[SYNO_PRIM_SHARE] + shares);
    if (G->n.depth + 1 +
            space_info_distance(G->s, SYNO_STAGE_NORMAL, v, nv, C->w, count, C->usage[SYNO_PRIMARY],
                                opts(G)->depth - G->n.depth - 1) >
        opts(G)->depth) {
      G->s->stats.prune[SYNO_PRUNE_DISTANCE]++;
      return 0;
    }
  }
  iface_t f;
  space_iface_from(G->s, &G->n, &f);
  memcpy(f.usage, C->usage, sizeof f.usage);
  f.n_weights = C->w;
  f.count[SYNO_PRIM_SHARE] = (int8_t)(f.count[SYNO_PRIM_SHARE] + shares);
  for (int i = 0; i < C->n; i++) {
    if (!C->choice[i]) continue;
    syno_dim_t data, wdim;
    if (syno_graph_share(G->g, C->cand[i], C->w, &data, &wdim, NULL)) {
      G->s->stats.prune[SYNO_PRUNE_ILLEGAL]++;
      return 0;
    }
    space_iface_remove(&f, C->cand[i]);
    if (!space_iface_add(&f, wdim)) return 0;
    if (C->choice[i] == 2) {
      if (syno_graph_expand(G->g, data, NULL, NULL) || !space_iface_add_exp(&f, data)) return 0;
    } else if (!space_iface_add(&f, data)) {
      return 0;
    }
    if (color(G, data)->height > opts(G)->max_chain) {
      G->s->stats.prune[SYNO_PRUNE_CHAIN]++;
      return 0;
    }
  }
  syno_step_t st = {.kind = SYNO_STEP_CONTRACT, .prim_id = (uint32_t)C->w};
  return space_add_child(G->s, G->id, SYNO_STAGE_NORMAL, &f, st, G->err);
}

/* Whether the broadcast dims chosen so far and those left can still carry
 * exactly the factors 2 of R (see odd_after); at the end, whether they do. */
static bool twos_reachable(const contract_t *C, int i) {
  for (int b = 0; b < vars(C->G)->nbind; b++)
    if (C->have[b] > C->need[b] || C->have[b] + C->rest[i][b] < C->need[b]) return false;
  return true;
}

/* The power of 2 in a positive integer (a size under a binding). */
static int twos(double x) {
  if (!(x >= 1 && x < 0x1p63)) return 0;
  uint64_t n = (uint64_t)x;
  int t = 0;
  while (!(n & 1)) n >>= 1, t++;
  return t;
}

/* Chooses 0 (skip), 1 (share) or 2 (share and broadcast) for cand[i..].
 * Families of children that cannot be kept are cut where they are known:
 * two broadcast dims that are adjacent (R2), broadcast dims that cannot
 * carry the factors 2 (distance term (5)); each cut counts once. */
static int enum_contraction(contract_t *C, int i, double outer_numel) {
  gen_t *G = C->G;
  if (C->odd_after && !twos_reachable(C, i)) {
    G->s->stats.prune[SYNO_PRUNE_DISTANCE]++;
    return 0;
  }
  if (i == C->n) return finish_contraction(C);
  C->choice[i] = 0;
  if (enum_contraction(C, i + 1, outer_numel)) return -1;
  syno_size_t sz = dsize(G, C->cand[i]);
  double lo = C->lo[i], hi = C->hi[i];
  int8_t saved[2][SYNO_MAX_VARS];
  memcpy(saved, C->usage, sizeof saved);
  /* The allowance counts the primary part of every shared size (docs/semantics.md §1.5). */
  bool fits = true;
  for (int v = 0; v < vars(G)->n[SYNO_PRIMARY]; v++) {
    int u = C->usage[SYNO_PRIMARY][v] + abs(sz.p[v]);
    if (u > vars(G)->var[SYNO_PRIMARY][v].max_occurrence) fits = false;
    C->usage[SYNO_PRIMARY][v] = (int8_t)u;
  }
  if (fits) {
    C->choice[i] = 1;
    if (enum_contraction(C, i + 1, outer_numel)) return -1;
    bool can_expand = C->type[i] == CT_MERGE ? outer_numel * hi <= opts(G)->max_expansion_merge
                      : C->type[i] == CT_SHARED
                          ? lo >= opts(G)->min_shared_weight_dim && hi <= opts(G)->max_shared_weight_dim
                          : false;
    /* R2: the outer dims' reshape blocks must not be adjacent. */
    for (int j = 0; j < i && can_expand; j++)
      if (C->choice[j] == 2 && reject(G, SYNO_RULE_R2,
                                      syno_graph_adjacent(G->g, C->cand[i], C->cand[j]) ||
                                          syno_graph_adjacent(G->g, C->cand[j], C->cand[i])))
        can_expand = false;
    if (can_expand) {
      C->choice[i] = 2;
      for (int b = 0; b < vars(G)->nbind; b++) C->have[b] += C->two[i][b];
      int rc = enum_contraction(C, i + 1, C->type[i] == CT_MERGE ? outer_numel * hi : outer_numel);
      for (int b = 0; b < vars(G)->nbind; b++) C->have[b] -= C->two[i][b];
      if (rc) return -1;
    }
  } else {
    G->s->stats.prune[SYNO_PRUNE_LIMIT]++;
  }
  memcpy(C->usage, saved, sizeof saved);
  C->choice[i] = 0;
  return 0;
}

static int gen_contraction(gen_t *G) {
  if (G->n.n_weights + 1 >= opts(G)->max_tensors) return 0;
  contract_t C;
  memset(&C, 0, sizeof C);
  C.G = G;
  C.w = G->n.n_weights + 1;
  memcpy(C.usage, G->n.usage, sizeof C.usage);
  for (int j = 0; j < G->n.n_dims; j++) {
    if (space_dim_info(G->s, G->dims[j], &C.info[j])) return syno_error_set(G->err, "out of memory");
    C.shared[j] = space_info_shared(C.info[j]);
  }
  for (int a = 0; a < G->n_full; a++) {
    syno_dim_t d = G->full[a];
    if (color(G, d)->discarding) continue;
    C.cand[C.n] = d;
    for (int j = 0; j < G->n.n_dims; j++)
      if (G->dims[j] == d) C.at[C.n] = j;
    C.type[C.n++] = contraction_type(G, d);
  }
  int nb = vars(G)->nbind;
  double val[SPACE_MAX_IFACE * SYNO_MAX_BINDINGS];
  C.val = val;
  for (int i = 0; i < C.n; i++)
    for (int b = 0; b < nb; b++) {
      double x = val[i * nb + b] = syno_size_value(vars(G), dsize(G, C.cand[i]), b);
      if (b == 0 || x < C.lo[i]) C.lo[i] = x;
      if (b == 0 || x > C.hi[i]) C.hi[i] = x;
    }
  const syno_space_opts_t *o = opts(G);
  C.odd_after = o->prune_distance && G->n.depth + 1 <= o->depth && C.w == o->max_tensors - 1 &&
                !o->enable[SYNO_PRIM_EXPAND] && !o->enable[SYNO_PRIM_STRIDE];
  if (C.odd_after) {
    for (int b = 0; b < nb; b++) C.need[b] = -twos(syno_size_value(vars(G), G->s->want_numel, b));
    for (int j = 0; j < G->n.n_dims; j++)
      if (!is_weight_axis(G, G->dims[j]))
        for (int b = 0; b < nb; b++) C.need[b] += twos(syno_size_value(vars(G), dsize(G, G->dims[j]), b));
    for (int i = C.n - 1; i >= 0; i--)
      for (int b = 0; b < nb; b++) {
        C.two[i][b] = (int16_t)twos(val[i * nb + b]);
        C.rest[i][b] = (int16_t)(C.rest[i + 1][b] + (C.type[i] != CT_NORMAL ? C.two[i][b] : 0));
      }
  }
  /* The previous weight's leader: the least of its shares' outputs. */
  for (int i = 0; i < G->n.n_dims; i++) {
    syno_dim_t d = G->dims[i];
    if (!is_weight_axis(G, d) || below(G, d)->weight != G->n.n_weights) continue;
    syno_dim_t o = below(G, d)->out[0];
    if (!C.prev_leader || global_less(G, o, C.prev_leader)) C.prev_leader = o;
  }
  return enum_contraction(&C, 0, 1);
}

int space_gen_normal(syno_space_t *s, uint32_t id, syno_error_t *err) {
  gen_t G;
  memset(&G, 0, sizeof G);
  G.s = s;
  G.id = id;
  G.n = s->nodes[id];
  G.g = s->g;
  G.err = err;
  /* The node's dims are copied: the pool may move while children are added. */
  syno_dim_t dims[SPACE_MAX_IFACE];
  memcpy(dims, space_node_dims(s, &G.n), sizeof(syno_dim_t) * (size_t)G.n.n_dims);
  G.dims = dims;
  for (int i = 0; i < G.n.n_dims; i++) {
    syno_dim_t d = dims[i];
    if (is_weight_axis(&G, d)) continue;
    if (color(&G, d)->height >= s->spec.opts.max_chain) {
      s->stats.prune[SYNO_PRUNE_CHAIN]++;
      continue;
    }
    G.simple[G.n_full] = G.n.n_weights == 0 || (color(&G, d)->weights_below & (1u << G.n.n_weights));
    G.full[G.n_full++] = d;
  }
  const syno_space_opts_t *o = &s->spec.opts;
  /* A kind at its cap is not generated at all; a Contraction checks its
   * number of Shares when it knows it. */
#define GEN(kind, fn) (o->enable[kind] && (o->max_count[kind] < 0 || G.n.count[kind] < o->max_count[kind]) && fn(&G))
  if (GEN(SYNO_PRIM_SHARE, gen_contraction) || GEN(SYNO_PRIM_SPLIT, gen_split) || GEN(SYNO_PRIM_MERGE, gen_merge) ||
      GEN(SYNO_PRIM_SHIFT, gen_shift) || GEN(SYNO_PRIM_STRIDE, gen_stride) || GEN(SYNO_PRIM_UNFOLD, gen_unfold) ||
      GEN(SYNO_PRIM_EXPAND, gen_expand))
    return -1;
#undef GEN
  return 0;
}
