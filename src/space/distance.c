/* The shape distance (docs/semantics.md §4.5): a lower bound on the steps an interface
 * still needs before it can be finalized.
 *
 * Two bounds are combined. The counting bound ((1)-(7), (9)-(11)) looks at
 * the sizes as multisets and is cheap; the reshape-group bound (8) decides
 * which current dims become which input axes and is exact about products. */
#include <math.h>
#include <string.h>

#include "space_internal.h"

typedef struct {
  int merges, splits_unfolds, unfolds; /* primitives the caps still allow (GB_INF: no cap) */
} left_t;

static int group_bound(const syno_space_t *s, const dim_info_t *info, int n_dims, int n_weights, left_t left, int floor,
                       int cap);

/* --- the counting bound ---
 *
 * A lower bound on the steps still needed: the largest of the terms below,
 * one function each. Let the current dims be the interface's non-weight
 * dims, and the wanted ones the input sizes. m is the size of the largest
 * matching between current and wanted sizes (equal sizes, never a
 * data-discarding dim), t = wanted - m, u = current - m (match). Under the
 * caps of max_count only the Merges left raise the matching by 2, only the
 * Splits and Unfolds left consume two dims, and only these lower the
 * symmetric difference of (7) by 3.
 *  (1) matching_bound: the matching still to make.
 *  (2) consume_bound: the unmatched current dims still to consume.
 *  (3) contraction_bound: a Contraction still needed.
 *  (4) ratio_bound and unfold_bound: the numel ratio R; (4')
 *      primaries_bound: its primary variables.
 *  (5) odd_bound: R as a product of odd windows.
 *  (6) chain_bound: dims whose chain is used up.
 *  (7) symdiff_bound: the symmetric difference, three per step.
 *  (8) group_bound: the reshape-group bound (further below).
 *  (9) factor2_bound: the factors 2 of R that one Contraction can broadcast.
 * (10) pooling_bound: the pooling limit.
 * (11) allowance_bound: the variables' occurrence allowance.
 * A term that finds no completion possible returns NEVER, and that is the
 * distance. The bound is the largest of these; tests compare it with the
 * true shortest completion on exhaustively enumerated small spaces. */

/* Follows the Shares below d down to the first other dim and tells whether
 * a Contraction could broadcast d (the Merge and WeightsSharing types of
 * docs/semantics.md §3.9) and whether that dim is a reduction. */
static void share_base(const syno_graph_t *g, syno_dim_t d, bool *broadcastable, bool *base_reduce) {
  bool discarding = syno_graph_color(g, d)->discarding;
  int through = 0;
  const syno_prim_t *p;
  while ((p = syno_graph_below(g, d)) && p->kind == SYNO_PRIM_SHARE) {
    d = p->out[0];
    through++;
  }
  const syno_dimension_t *b = syno_graph_dim(g, d);
  *base_reduce = b->kind == SYNO_DIM_REDUCE;
  *broadcastable = !discarding && (b->kind == SYNO_DIM_ITERATOR ? true
                                   : *base_reduce               ? through > 0
                                                                : p && p->kind == SYNO_PRIM_MERGE);
}

/* Adds a reduction to a pooled list unless it is there or the list is full. */
static int pooled_add(syno_dim_t *list, int n, syno_dim_t r) {
  for (int i = 0; i < n; i++)
    if (list[i] == r) return n;
  if (n < DI_MAX_POOLED) list[n++] = r;
  return n;
}

int syno_node_distance(syno_space_t *s, uint32_t id) {
  node_t *n = &s->nodes[id];
  if (n->distance < 0) {
    int d = space_iface_distance(s, n->stage, space_node_dims(s, n), n->n_dims, n->n_weights, n->count,
                                 n->usage[SYNO_PRIMARY], s->spec.opts.depth - n->depth);
    if (d < 0) return 0; /* out of memory (not after space_dinfo_reserve): 0 is still a bound; not kept */
    n->distance = d;
  }
  return n->distance;
}

int space_dinfo_reserve(syno_space_t *s, syno_dim_t d) {
  if (d >= s->cap_dinfo) {
    size_t cap = s->cap_dinfo;
    if (syno_grow((void **)&s->dinfo, &cap, (size_t)d + 1, sizeof *s->dinfo)) return -1;
    memset(s->dinfo + s->cap_dinfo, 0, (cap - s->cap_dinfo) * sizeof *s->dinfo);
    s->cap_dinfo = cap;
  }
  return 0;
}

int space_dim_info(syno_space_t *s, syno_dim_t d, dim_info_t *out) {
  if (space_dinfo_reserve(s, d)) return -1;
  if (!(s->dinfo[d].flags & DI_KNOWN)) {
    /* The pooled reductions of the dims below first (the array may move). */
    syno_dim_t pooled[DI_MAX_POOLED] = {0};
    int n_pooled = 0;
    const syno_prim_t *q = syno_graph_dim(s->g, d)->kind == SYNO_DIM_PRIM_INPUT ? syno_graph_below(s->g, d) : NULL;
    for (int j = 0; q && j < q->n_out; j++) {
      dim_info_t bi;
      if (space_dim_info(s, q->out[j], &bi)) return -1;
      for (int k = 0; k < bi.n_pooled; k++) n_pooled = pooled_add(pooled, n_pooled, bi.pooled[k]);
      if ((bi.flags & DI_REDUCE) && q->kind != SYNO_PRIM_SHARE) n_pooled = pooled_add(pooled, n_pooled, q->out[j]);
    }
    dim_info_t *di = &s->dinfo[d];
    di->n_pooled = (uint8_t)n_pooled;
    memcpy(di->pooled, pooled, sizeof pooled);
    const syno_color_t *c = syno_graph_color(s->g, d);
    const syno_dimension_t *dd = syno_graph_dim(s->g, d);
    bool bcast, base_reduce;
    share_base(s->g, d, &bcast, &base_reduce);
    const syno_prim_t *p = syno_graph_below(s->g, d);
    bool no_merge = (p && p->kind == SYNO_PRIM_SHARE && dd->slot == 0) ||
                    (s->spec.opts.rule[SYNO_RULE_R0] && p &&
                     (p->kind == SYNO_PRIM_SPLIT || (p->kind == SYNO_PRIM_MERGE && dd->slot == 0))) ||
                    (s->spec.opts.rule[SYNO_RULE_R4] && dd->kind == SYNO_DIM_REDUCE);
    di->flags = DI_KNOWN | (space_weight_axis(s->g, d) ? DI_WEIGHT : 0) | (bcast ? DI_BCAST : 0) |
                (c->discarding ? DI_DISCARD : 0) | (base_reduce ? DI_BASE_REDUCE : 0) | (no_merge ? DI_NO_MERGE : 0) |
                (dd->kind == SYNO_DIM_REDUCE ? DI_REDUCE : 0);
    di->height = (int16_t)c->height;
    di->size = dd->size;
    di->id = d;
    di->want_eq = 0;
    for (int w = 0; w < s->n_want; w++)
      if (syno_size_eq(dd->size, s->want[w])) di->want_eq |= (uint16_t)(1u << w);
  }
  *out = s->dinfo[d];
  return 0;
}

dim_info_t space_info_shared(dim_info_t d) {
  dim_info_t x = d;
  x.flags &= (uint8_t)~DI_REDUCE; /* the weight reads it */
  x.id = 0;
  x.height = (int16_t)(d.height + 1);
  x.flags |= DI_NO_MERGE; /* a share's data side is never reshaped in place */
  if (!(d.flags & DI_DISCARD) && (d.flags & (DI_BCAST | DI_BASE_REDUCE))) x.flags |= DI_BCAST;
  return x;
}

int space_iface_distance(syno_space_t *s, syno_stage_t stage, const syno_dim_t *dims, int n_dims, int n_weights,
                         const int8_t *count, const int8_t *usage, int budget) {
  dim_info_t info[SPACE_MAX_IFACE];
  for (int i = 0; i < n_dims; i++)
    if (space_dim_info(s, dims[i], &info[i])) return -1;
  return space_info_distance(s, stage, info, n_dims, n_weights, count, usage, budget);
}

#define GB_INF 1000
#define NEVER 1000 /* the distance of an interface that can never be finalized */

static int imax(int a, int b) { return a > b ? a : b; }

/* How many more primitives of a kind the caps allow: none when the kind is
 * off, GB_INF when it has no cap. */
static int kind_left(const syno_space_opts_t *o, const int8_t *count, syno_prim_kind_t k) {
  if (!o->enable[k]) return 0;
  if (o->max_count[k] < 0) return GB_INF;
  int l = o->max_count[k] - count[k];
  return l > 0 ? l : 0;
}

/* At least how many steps lower a quantity by q when each step lowers it by
 * at most `small`, and only `few` of them by `big` (> small). */
static int steps_for(int q, int small, int big, int few) {
  if (q <= 0) return 0;
  int s = (q + big - 1) / big;
  if (few < s) s = few + (q - few * big + small - 1) / small;
  return s;
}

/* What the terms of the counting bound share: the interface, and the facts
 * computed once for several terms. A term that needs a fact another term
 * records is called after it (space_info_distance keeps the order). */
typedef struct {
  const syno_space_t *s;
  const syno_space_opts_t *o;
  syno_stage_t stage;
  const dim_info_t *info;
  int n_dims, n_weights;
  const int8_t *usage;
  left_t left;       /* the primitives the caps still allow */
  syno_size_t ratio; /* R = the current sizes' product / the input numel, symbolically */
  bool can_contract; /* a Contraction is still allowed */
  bool two;          /* two are */
  /* The matching (match): t wanted and u current sizes unmatched; e of the
   * u that one Contraction can broadcast (R2 included), e2 for two. */
  int t, u, e, e2;
  int by_contract;             /* the least steps of (2) when Contractions consume what they can */
  bool must_contract;          /* no weight yet, or (10) says a reduction needs one */
  double pool;                 /* (10): the product of the pooled reductions' domains */
  int need_unfold;             /* (11): an Unfold is needed */
  double r[SYNO_MAX_BINDINGS]; /* (4): R under each binding */
  double rmax;                 /* (4): the largest, and at least 1 */
} dist_t;

/* (6) A dim whose chain is used up is never touched again (no primitive
 *     and no Contraction sees it), so it must already be an input axis:
 *     NEVER when one is not, else 0. */
static int chain_bound(const dist_t *D) {
  const dim_info_t *info = D->info;
  for (int i = 0; i < D->n_dims; i++)
    if (!(info[i].flags & DI_WEIGHT) && info[i].height >= D->o->max_chain &&
        ((info[i].flags & DI_DISCARD) || !info[i].want_eq))
      return NEVER;
  return 0;
}

/* (4) the numel ratio R, symbolically first. */
static syno_size_t numel_ratio(const dist_t *D) {
  syno_size_t prod = syno_size_one();
  for (int i = 0; i < D->n_dims; i++)
    if (!(D->info[i].flags & DI_WEIGHT)) prod = syno_size_mul(prod, D->info[i].size);
  return syno_size_div(prod, D->s->want_numel);
}

/* (4') In the normal stage only a Stride can multiply the product by a
 *      new factor; every other step keeps it or divides it by the size of
 *      a dim it removes (an Unfold's window, an expanded or outer-shared
 *      dim), and every dim's size has non-negative primary powers. So
 *      without Stride a primary variable the input needs more of than the
 *      interface holds can never appear (R = C_in^-1 ... may still
 *      evaluate to an odd integer under one binding): NEVER, else 0. */
static int primaries_bound(const dist_t *D) {
  if (D->stage == SYNO_STAGE_NORMAL && !D->o->enable[SYNO_PRIM_STRIDE])
    for (int v = 0; v < D->s->spec.vars.n[SYNO_PRIMARY]; v++)
      if (D->ratio.p[v] < 0) return NEVER;
  return 0;
}

/* R2: one Contraction broadcasts no two adjacent dims (the halves of a
 *     Merge). Those it broadcasts are independent in the adjacency graph
 *     of the broadcastable dims bc, so they are at most as many as these
 *     less the edges of any matching in that graph: the least of that and
 *     e. */
static int r2_broadcasts(const syno_space_t *s, const syno_dim_t *bc, int n_bc, int e) {
  int edges = 0;
  unsigned taken = 0;
  for (int a = 0; a < n_bc; a++)
    for (int b = 0; b < n_bc && !(taken >> a & 1); b++)
      if (b != a && !(taken >> b & 1) &&
          (syno_graph_adjacent(s->g, bc[a], bc[b]) || syno_graph_adjacent(s->g, bc[b], bc[a]))) {
        taken |= 1u << a | 1u << b;
        edges++;
      }
  return n_bc - edges < e ? n_bc - edges : e;
}

/* The matching between current and wanted sizes, and what the terms count
 * of it: t, u, e, e2 and by_contract. */
static void match(dist_t *D) {
  const syno_space_t *s = D->s;
  const syno_space_opts_t *o = D->o;
  const dim_info_t *info = D->info;
  /* Match dims a Contraction cannot broadcast first: the matching is then
   * the best for every term of the bound at once. */
  unsigned used = 0;
  int cur = 0, matched = 0, exp_unmatched = 0, shareable = 0, n_bc = 0;
  bool two = D->two;
  syno_dim_t bc[SPACE_MAX_IFACE]; /* the broadcastable dims */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < D->n_dims; i++) {
      if (info[i].flags & DI_WEIGHT) continue;
      bool broadcastable = (info[i].flags & DI_BCAST) != 0;
      if (broadcastable != (pass == 1)) continue;
      cur++;
      if (broadcastable && info[i].id) bc[n_bc++] = info[i].id;
      unsigned free_eq = (info[i].flags & DI_DISCARD) ? 0 : info[i].want_eq & ~used;
      if (free_eq) {
        used |= free_eq & -free_eq; /* the first free wanted axis of that size */
        matched++;
      } else {
        exp_unmatched += broadcastable;
        if (two && !broadcastable && (info[i].flags & (DI_BASE_REDUCE | DI_DISCARD)) == DI_BASE_REDUCE &&
            syno_size_lower_bound(&s->spec.vars, info[i].size) >= o->min_shared_weight_dim &&
            syno_size_upper_bound(&s->spec.vars, info[i].size) <= o->max_shared_weight_dim)
          shareable++;
      }
    }
  D->t = s->n_want - matched;
  D->u = cur - matched;
  D->e = exp_unmatched;
  if (!two && !o->enable[SYNO_PRIM_EXPAND] && o->rule[SYNO_RULE_R2] && n_bc > 1)
    D->e = r2_broadcasts(s, bc, n_bc, D->e);
  /* With two Contractions left, the first can share a reduction's dim and
   * the second broadcast its data side (a WeightsSharing dim, docs/semantics.md §3.9):
   * those dims count as broadcastable for two Contractions (e2). */
  D->e2 = D->e + shareable;
  /* The least steps when Contractions consume what they can (2). */
  int SU = D->left.splits_unfolds, by_contract = 1 + steps_for(D->u - D->e, 1, 2, SU);
  if (two && 2 + steps_for(D->u - D->e2, 1, 2, SU) < by_contract) by_contract = 2 + steps_for(D->u - D->e2, 1, 2, SU);
  D->by_contract = by_contract;
}

/* (1) Each step raises the matching by at most 2 (a Merge makes two new
 *     dims; every other primitive at most one; a Contraction none), so at
 *     least ceil(t/2) steps remain. */
static int matching_bound(const dist_t *D) { return steps_for(D->t, 1, 2, D->left.merges); }

/* (2) Each unmatched current dim must be consumed. Splits and Unfolds
 *     consume two per step, other views one; only a Contraction removes
 *     several at once, and only dims it can broadcast (outer dims). With e
 *     unmatched broadcastable dims and u - e others, at least
 *     min(ceil(u/2), 1 + ceil((u-e)/2)) steps remain when a Contraction is
 *     still possible, else ceil(u/2). With two Contractions left, the
 *     first can share a reduction's dim that the second then broadcasts
 *     (within the WeightsSharing size limits): with e2 such dims and
 *     broadcastable ones, 2 + ceil((u-e2)/2) too. */
static int consume_bound(const dist_t *D) {
  int b2 = steps_for(D->u, 1, 2, D->left.splits_unfolds);
  if (D->can_contract && (D->e > 0 || (D->two && D->e2 > 0)) && D->by_contract < b2) b2 = D->by_contract;
  return b2;
}

/* (10) Pooling (docs/semantics.md §5.7): the reductions no weight reads directly are a
 *      box sum whose domains multiply to at most max_pooling. A weight
 *      reads a reduction only through Shares of its own dim, so one that
 *      another primitive consumed first pools for good: NEVER when those
 *      already pool too much, else 0. One whose dim is still in the
 *      interface needs a Contraction to read it: records must_contract
 *      when the open ones would pool too much, and the pooled product. */
static int pooling_bound(dist_t *D) {
  const syno_space_t *s = D->s;
  const dim_info_t *info = D->info;
  syno_dim_t pooled[SPACE_MAX_IFACE * DI_MAX_POOLED];
  int n_pooled = 0;
  double pool = 1, open = 1;
  for (int i = 0; i < D->n_dims; i++) {
    for (int k = 0; k < info[i].n_pooled; k++) {
      int j = 0;
      while (j < n_pooled && pooled[j] != info[i].pooled[k]) j++;
      if (j < n_pooled) continue;
      pooled[n_pooled++] = info[i].pooled[k];
      pool *= syno_size_upper_bound(&s->spec.vars, syno_graph_dim(s->g, info[i].pooled[k])->size);
    }
    if (info[i].flags & DI_REDUCE) open *= syno_size_upper_bound(&s->spec.vars, info[i].size);
  }
  D->pool = pool;
  if (pool > D->o->max_pooling * (1 + 1e-9)) return NEVER;
  if (pool * open > D->o->max_pooling * (1 + 1e-9)) D->must_contract = true;
  return 0;
}

/* (11) The allowance (docs/semantics.md §1.5): every Share uses the primary powers of
 *      its size. Without Stride and Expand, the primary powers R holds
 *      beyond the input's leave through the dims the Contractions
 *      broadcast, which use as many, or through Unfold windows. A
 *      reduction that alone would pool too much (after (10)) must be
 *      shared, and uses its powers first. What the allowance left cannot
 *      carry takes an Unfold: 1 step, or NEVER when no Unfold is left;
 *      else 0. */
static int allowance_bound(const dist_t *D) {
  const syno_space_opts_t *o = D->o;
  const dim_info_t *info = D->info;
  if (o->enable[SYNO_PRIM_STRIDE] || o->enable[SYNO_PRIM_EXPAND]) return 0;
  const syno_vars_t *v = &D->s->spec.vars;
  int allow[SYNO_MAX_VARS], need_unfold = 0;
  for (int k = 0; k < v->n[SYNO_PRIMARY]; k++) allow[k] = v->var[SYNO_PRIMARY][k].max_occurrence - D->usage[k];
  for (int i = 0; i < D->n_dims; i++)
    if ((info[i].flags & DI_REDUCE) && D->pool * syno_size_upper_bound(v, info[i].size) > o->max_pooling * (1 + 1e-9))
      for (int k = 0; k < v->n[SYNO_PRIMARY]; k++) allow[k] -= info[i].size.p[k];
  for (int k = 0; k < v->n[SYNO_PRIMARY]; k++)
    if (D->ratio.p[k] > allow[k]) need_unfold = 1;
  if (need_unfold && D->left.unfolds == 0) return NEVER;
  return need_unfold;
}

/* (3) With no weight yet, or a reduction that must still be read by a
 *     weight (10), a Contraction is still needed (NEVER when none is
 *     allowed), and it consumes no non-broadcastable dim: at least
 *     1 + ceil((u-e)/2), or the two-Contraction count of (2). An Unfold the
 *     allowance needs (11) is one step more than the Contraction. */
static int contraction_bound(const dist_t *D) {
  int b3 = D->must_contract ? D->by_contract : 0;
  if (D->need_unfold + D->must_contract > b3) b3 = D->need_unfold + D->must_contract;
  if (D->must_contract && !D->can_contract) return NEVER;
  return b3;
}

/* (7) sd = t + u is the size of the symmetric difference between the
 *     current and the wanted multisets of sizes. A primitive removes at
 *     most two dims and adds at most one, or removes one and adds two
 *     (Split, Unfold; Merge), so it lowers sd by at most 3; a Contraction
 *     lowers it only by its outer dims. Dims a step makes only to have a
 *     Contraction remove them later cost that step 2 of its 3, so no play
 *     beats removing the e unmatched broadcastable dims there are now:
 *     at least ceil(sd/3) steps without a Contraction, 1 + ceil((sd-e)/3)
 *     with one. */
static int symdiff_bound(const dist_t *D) {
  int K = D->left.merges + D->left.splits_unfolds;
  int sd = D->t + D->u;
  int b4 = steps_for(sd, 2, 3, K), b4c = 1 + steps_for(sd - D->e, 2, 3, K);
  if (D->two && 2 + steps_for(sd - D->e2, 2, 3, K) < b4c) b4c = 2 + steps_for(sd - D->e2, 2, 3, K);
  if (D->must_contract)
    b4 = b4c;
  else if (D->can_contract && b4c < b4)
    b4 = b4c;
  return b4;
}

/* (4) Numel: Split, Merge, Shift and plain Shares keep the product of the
 *     current sizes; an Unfold divides it by its window (at least 3), an
 *     expansion by its size, a Stride multiplies it. With R = current
 *     product / input numel under some binding: without Stride, R < 1 can
 *     never be repaired (NEVER) once the reductions are made; before (the
 *     reduction stage) a reduction multiplies the product by its domain, so
 *     a layer with fewer output than input channels starts at R < 1 and is
 *     repaired by the reduction over the input channels. R != 1 needs at
 *     least one step. Records R under each binding, and the largest. */
static int ratio_bound(dist_t *D) {
  const syno_vars_t *v = &D->s->spec.vars;
  bool differs = false;
  D->rmax = 1;
  for (int b = 0; b < v->nbind; b++) {
    double r = D->r[b] = syno_size_value(v, D->ratio, b);
    if (r < 1 - 1e-9 && !D->o->enable[SYNO_PRIM_STRIDE] && D->stage == SYNO_STAGE_NORMAL) return NEVER;
    if (r < 1 - 1e-9 || r > 1 + 1e-9) differs = true;
    if (r > D->rmax) D->rmax = r;
  }
  return differs;
}

/* (5) When only Unfolds can still change the numel (no Contraction,
 *     Stride or Expand left), R is the product of their windows, and every
 *     window is odd under every binding: NEVER unless R is an odd integer
 *     under every binding, else 0. */
static int odd_bound(const dist_t *D) {
  const syno_space_opts_t *o = D->o;
  if (D->can_contract || o->enable[SYNO_PRIM_EXPAND] || o->enable[SYNO_PRIM_STRIDE]) return 0;
  for (int b = 0; b < D->s->spec.vars.nbind; b++) {
    double r = D->r[b], q = floor(r + 0.5);
    if (fabs(r - q) > 1e-9 * (q > 1 ? q : 1) || fmod(q, 2.0) == 0) return NEVER;
  }
  return 0;
}

/* (9) Without Stride and Expand, R is the product of the dims the
 *     Contractions broadcast and of the Unfold windows. The windows are
 *     odd, so the broadcast dims carry every factor 2 of R. With one
 *     Contraction left, those of type Merge multiply to at most
 *     max_expansion_merge, and each of type WeightsSharing (a dim over a
 *     reduction that an earlier weight shares: one of the current dims)
 *     is at most max_shared_weight_dim. Later reductions only multiply
 *     R by integers. NEVER when the factors 2 of R exceed that, else 0. */
static int factor2_bound(const dist_t *D) {
  const syno_space_opts_t *o = D->o;
  if (o->enable[SYNO_PRIM_STRIDE] || o->enable[SYNO_PRIM_EXPAND] || D->n_weights != o->max_tensors - 2) return 0;
  double cap = o->max_expansion_merge;
  for (int i = 0; i < D->n_dims; i++)
    if ((D->info[i].flags & (DI_WEIGHT | DI_BCAST | DI_BASE_REDUCE)) == (DI_BCAST | DI_BASE_REDUCE))
      cap *= o->max_shared_weight_dim;
  for (int b = 0; b < D->s->spec.vars.nbind; b++) {
    double r = D->r[b], q = floor(r + 0.5);
    if (q < 1 || q >= 0x1p53 || fabs(r - q) > 1e-9 * q) continue;
    uint64_t n = (uint64_t)q;
    if ((double)(n & (~n + 1)) > cap * (1 + 1e-9)) return NEVER;
  }
  return 0;
}

/* (4) When only Unfolds can still divide the numel (no Contraction or
 *     Expand left), each by its window, at most max(3, max_unfold_kernel):
 *     at least log(R) / log(max window) Unfolds. */
static int unfold_bound(const dist_t *D) {
  const syno_space_opts_t *o = D->o;
  if (!(D->rmax > 1 + 1e-9) || D->can_contract || o->enable[SYNO_PRIM_EXPAND]) return 0;
  return (int)ceil(log(D->rmax) / log(o->max_unfold_kernel > 3 ? o->max_unfold_kernel : 3) - 1e-9);
}

int space_info_distance(const syno_space_t *s, syno_stage_t stage, const dim_info_t *info, int n_dims, int n_weights,
                        const int8_t *count, const int8_t *usage, int budget) {
  const syno_space_opts_t *o = &s->spec.opts;
  dist_t D;
  D.s = s;
  D.o = o;
  D.stage = stage;
  D.info = info;
  D.n_dims = n_dims;
  D.n_weights = n_weights;
  D.usage = usage;
  D.left = (left_t){kind_left(o, count, SYNO_PRIM_MERGE),
                    kind_left(o, count, SYNO_PRIM_SPLIT) + kind_left(o, count, SYNO_PRIM_UNFOLD),
                    kind_left(o, count, SYNO_PRIM_UNFOLD)};
  /* Cheap terms that may find NEVER come first, and each term comes after
   * those whose facts it reads. */
  if (chain_bound(&D) == NEVER) return NEVER; /* (6) */
  D.ratio = numel_ratio(&D);
  if (primaries_bound(&D) == NEVER) return NEVER; /* (4') */
  D.can_contract = n_weights < o->max_tensors - 1;
  D.two = o->max_tensors - 1 - n_weights >= 2;
  match(&D);
  int b1 = matching_bound(&D), b2 = consume_bound(&D); /* (1), (2) */
  D.must_contract = n_weights == 0;
  if (pooling_bound(&D) == NEVER) return NEVER; /* (10) */
  D.need_unfold = allowance_bound(&D);          /* (11) */
  if (D.need_unfold == NEVER) return NEVER;
  int b3 = contraction_bound(&D); /* (3) */
  if (b3 == NEVER) return NEVER;
  int d = imax(imax(b1, b2), imax(b3, symdiff_bound(&D))); /* (7) */
  int r = ratio_bound(&D);                                 /* (4) */
  if (r == NEVER || odd_bound(&D) == NEVER) return NEVER;  /* (5) */
  d = imax(d, r);
  if (factor2_bound(&D) == NEVER) return NEVER; /* (9) */
  d = imax(d, unfold_bound(&D));                /* (4) */
  if (o->group_distance && d <= budget && stage == SYNO_STAGE_NORMAL && !o->enable[SYNO_PRIM_STRIDE])
    d = imax(d, group_bound(s, info, n_dims, n_weights, D.left, d, budget + 1)); /* (8) */
  return d;
}

/* --- (8) the reshape-group bound ---
 *
 * Look at the steps still to come as a forward graph on the data side:
 * nodes are the primitives, edges the dims. Every wanted input axis is a
 * source edge and every current dim a sink edge. A Share is a node of
 * degree 2 there (its weight input hangs off the data side); a dim a
 * Contraction broadcasts (an outer dim) and an Expand start from a node of
 * degree 1; Split, Merge and Unfold have degree 3, Shift degree 2. Cut the
 * graph into its connected components, the groups. A group with d wanted
 * axes, c current dims, x Expands, b broadcast dims and y nodes of degree 3
 * is connected, so it has at least as many edges as nodes less one; the
 * degrees add up to twice the edges:
 *     y >= d + c + x + b - 2,  and  d + c + x + b + y  is even.
 * Only Unfolds, Expands and broadcast dims change the product of sizes
 * along a group (Stride is off here), each multiplying it by a size, so the
 * group's ratio R = product(current) / product(wanted) is 1 unless one of
 * them is present, and can never have a negative primary power or a value
 * below 1. The group then needs at least, with n = d + c:
 *   R = 1:                n - 2;
 *   by Unfolds alone:     max(1, n - 2, U) rounded up to n's parity, when R
 *                         is an odd integer under every binding, with
 *                         U = log(R) / log(max window);
 *   with a broadcast dim: n - 1 (and a Contraction, once for all groups);
 *   with an Expand:       n;
 * and a group with no wanted axis (d = 0) needs c - 1 with a broadcast dim,
 * but 1 when it is a single dim that cannot be broadcast as it is, or c
 * Expands. A dim whose chain is used up can only be a group on its own with
 * an equal wanted axis. Two rules add to this:
 *  - a group whose one current dim no Merge may make (a Split's input or a
 *    Merge's left input under R0, a reduction under R4, a share's data
 *    side) and that is not an input axis as it is gets that dim from a
 *    Shift, one step more, or from a Share; a Share's Contraction cannot
 *    also broadcast into the dim it shares, so with a broadcast dim the
 *    step is due either way;
 *  - under C3 every Contraction broadcasts a dim, so a total that uses one
 *    must have a broadcast dim somewhere.
 * The caps of max_count bound the groupings too. In a group's forward
 * graph a Merge joins two edges and a Split or an Unfold parts one, so
 * counting edges from the sources (d + x + b) to the sinks (c) gives
 * (d + x + b + y - c) / 2 Merges and (y + c - d - x - b) / 2 Splits and
 * Unfolds; with y >= d + c + x + b - 2 that is at least d + x + b - 1
 * Merges and c - 1 Splits or Unfolds. So the wanted axes less the groups,
 * plus one for each group that needs an Expand or a broadcast dim (its
 * ratio is not one Unfolds alone can make), are at most the Merges left;
 * the current dims outside the pool less the groups are at most the Splits
 * and Unfolds left. A group whose ratio only Unfolds can make takes one at
 * least, and Unfolds are counted against their cap where no Expand or
 * broadcast dim could stand in.
 * The bound is the least total over all groupings, plus one Contraction
 * when one is used or there is no weight yet. A branch and bound search,
 * deepened one step at a time from the counting bound, finds it, stopping
 * at `cap`; the result is remembered per multiset of dims. */
typedef struct {
  const syno_space_t *s;
  int n; /* current dims, ordered: used-up chains first, then by primaries */
  syno_size_t cur[SPACE_MAX_IFACE];
  bool bcast[SPACE_MAX_IFACE];
  bool used_up[SPACE_MAX_IFACE];
  bool no_merge[SPACE_MAX_IFACE];
  bool same_as_prev[SPACE_MAX_IFACE]; /* interchangeable with dim i - 1 */
  int choice[SPACE_MAX_IFACE];
  unsigned carries_after[SPACE_MAX_IFACE + 1]; /* primaries of cur[i..] */
  int G;
  int gd[SYNO_MAX_RANK], gc[SYNO_MAX_RANK], gwant[SYNO_MAX_RANK];
  bool gsealed[SYNO_MAX_RANK];
  bool gno_merge[SYNO_MAX_RANK]; /* of the group's first current dim */
  syno_size_t gR[SYNO_MAX_RANK];
  unsigned gneg[SYNO_MAX_RANK]; /* primaries with a negative power in gR */
  int pool_b, pool_nb, pool_nm;
  int contractions; /* Contractions left */
  bool can_contract, must_contract, expand, unfold;
  bool outer_needed; /* a Contraction broadcasts one dim at least (C3) */
  left_t left;
  int splits; /* current dims outside the pool less the groups, so far */
  int merges; /* wanted axes less the groups, of the grouping searched */
  double log_window;
  int best; /* the search looks only for totals below it */
} gb_t;

static int group_search(gb_t *B, int floor, int cap);

/* Unfolds alone: the least number of steps, or GB_INF; *unfolds gets the
 * least number of Unfolds among them. `tree` tells whether the group can be
 * a tree (n - 2 nodes); see tree_possible. */
static int unfold_steps(const gb_t *B, syno_size_t R, int n, bool tree, int *unfolds) {
  const syno_vars_t *v = &B->s->spec.vars;
  int u = 1;
  *unfolds = GB_INF;
  for (int b = 0; b < v->nbind; b++) {
    double r = syno_size_value(v, R, b), q = floor(r + 0.5);
    if (!(q >= 1) || fabs(r - q) > 1e-9 * q || fmod(q, 2.0) == 0) return GB_INF;
    if (q > 1) u = imax(u, (int)ceil(log(q) / B->log_window - 1e-9));
  }
  *unfolds = u;
  int y = imax(u, tree ? n - 2 : n);
  if ((y - n) & 1) y++;
  return y;
}

/* The pool holds the dims of groups with no wanted axis: b that a
 * Contraction can broadcast as they are, nb others, nm of which no Merge may
 * make. With one Contraction left, an other dim needs a view above it that
 * only dims to broadcast come from: its own Merge, or a Shift then a Merge
 * when no Merge may make it, or a Split or an Unfold that joins it with
 * another pool dim (a Split's product then no Merge may make either). So k
 * joined dims cost k - 1 joins and at least one step more: nb steps at
 * least, and one Merge; a lone dim no Merge may make costs two. A second
 * Contraction could instead share the dims and broadcast their data sides. */
static int pool_cost(const gb_t *B, int b, int nb, int nm, bool contract) {
  if (contract) {
    if (nb == 0) return 0;
    if (B->contractions > 1) return imax(1, nb - 1);
    return B->expand ? nb : nb + (nb == 1 && nm == 1);
  }
  return b + nb == 0 ? 0 : B->expand ? b + nb : GB_INF;
}

/* A group with one wanted axis S that is a tree and has no broadcast dim or
 * Expand has one source, so no Merge: from S down, Splits keep the product
 * and an Unfold keeps its spatial side's size, so the current dims that do
 * not descend from a window multiply to S. Without such a subset the group
 * has a cycle, and n nodes at least. (Too many dims to try: assume one.) */
static bool tree_possible(const gb_t *B, int g) {
  int idx[SPACE_MAX_IFACE], c = 0;
  for (int i = 0; i < B->n; i++)
    if (B->choice[i] == g) idx[c++] = i;
  if (c > 10) return true;
  syno_size_t want = B->s->want[B->gwant[g]];
  for (unsigned m = 1; m < 1u << c; m++) {
    syno_size_t p = syno_size_one();
    for (int k = 0; k < c; k++)
      if (m >> k & 1) p = syno_size_mul(p, B->cur[idx[k]]);
    if (syno_size_eq(p, want)) return true;
  }
  return false;
}

static void gb_leaf(gb_t *B) {
  const syno_vars_t *v = &B->s->spec.vars;
  /* With one Contraction used, and without; `force` is the least it costs
   * to make some group take a broadcast dim when none does (C3). */
  int with = 1, without = 0, force = GB_INF;
  int unf_with = 0, unf_without = 0; /* Unfolds that nothing else could replace */
  int mrg_with = 0, mrg_without = 0; /* groups that need d Merges, not d - 1 */
  bool broadcasts = B->pool_b + B->pool_nb > 0;
  for (int g = 0; g < B->G; g++) {
    if (B->gc[g] == 0) return;
    int n = B->gd[g] + B->gc[g];
    syno_size_t R = B->gR[g];
    bool one = syno_size_is_one(R);
    /* A lone current dim that no Merge may make, unless it is an input
     * axis as it is, comes from a Shift (one step more) or from a Share
     * (the Contraction, which then cannot also broadcast into it). */
    int nm = B->gc[g] == 1 && B->gno_merge[g] && !(B->gd[g] == 1 && one);
    if (one) {
      with += n - 2;
      without += n - 2 + nm;
      continue;
    }
    for (int k = 0; k < v->n[SYNO_PRIMARY]; k++)
      if (R.p[k] < 0) return;
    for (int b = 0; b < v->nbind; b++)
      if (syno_size_value(v, R, b) < 1 - 1e-9) return;
    int unfolds = GB_INF;
    int x = B->unfold ? unfold_steps(B, R, n, B->gd[g] != 1 || tree_possible(B, g), &unfolds) : GB_INF;
    if (B->expand && n < x) x = n;
    int bc = B->can_contract ? n - 1 + nm : GB_INF;
    if (!B->expand && x < GB_INF) {
      unf_without += unfolds;
      if (bc == GB_INF) unf_with += unfolds;
    }
    if (unfolds == GB_INF) { /* an Expand or a broadcast dim is one more source */
      mrg_without++;
      mrg_with++;
    }
    without += x + nm;
    if (bc <= x) {
      with += bc;
      broadcasts = true;
    } else {
      with += x;
      if (bc < GB_INF && bc - x < force) force = bc - x;
    }
  }
  with += pool_cost(B, B->pool_b, B->pool_nb, B->pool_nm, true);
  without += pool_cost(B, B->pool_b, B->pool_nb, B->pool_nm, false);
  if (B->pool_nb > 0 && B->contractions == 1 && !B->expand) mrg_with++;
  if (unf_with > B->left.unfolds || B->merges + mrg_with > B->left.merges) with = GB_INF;
  if (unf_without > B->left.unfolds || B->merges + mrg_without > B->left.merges) without = GB_INF;
  if (!broadcasts && B->outer_needed) with += force;
  int t = B->must_contract ? with : B->can_contract && with < without ? with : without;
  if (t < B->best) B->best = t;
}

static unsigned primaries(const syno_vars_t *v, syno_size_t x) {
  unsigned m = 0;
  for (int k = 0; k < v->n[SYNO_PRIMARY]; k++)
    if (x.p[k] > 0) m |= 1u << k;
  return m;
}

static unsigned negative_primaries(const syno_vars_t *v, syno_size_t x) {
  unsigned m = 0;
  for (int k = 0; k < v->n[SYNO_PRIMARY]; k++)
    if (x.p[k] < 0) m |= 1u << k;
  return m;
}

/* Places current dim i and the rest; lb is a lower bound on every total
 * below. Choices are numbered (groups, then the pool) and equal dims take
 * non-decreasing choices, so each grouping is met once. */
static void gb_search(gb_t *B, int i, int lb) {
  if (lb >= B->best) return;
  /* A group short of a primary no later dim carries can never balance. */
  for (int g = 0; g < B->G; g++)
    if (B->gneg[g] & ~B->carries_after[i]) return;
  if (i == B->n) {
    gb_leaf(B);
    return;
  }
  syno_size_t x = B->cur[i];
  int first = i > 0 && B->same_as_prev[i] ? B->choice[i - 1] : 0;
  for (int g = first; g < B->G; g++) {
    if (B->gsealed[g]) continue;
    if (B->used_up[i] && (B->gc[g] || B->gd[g] != 1 || !syno_size_eq(x, B->s->want[B->gwant[g]]))) continue;
    syno_size_t R = B->gR[g];
    unsigned neg = B->gneg[g];
    B->gR[g] = syno_size_mul(R, x);
    B->gneg[g] = neg ? negative_primaries(&B->s->spec.vars, B->gR[g]) : 0;
    B->gsealed[g] = B->used_up[i];
    if (!B->gc[g]) B->gno_merge[g] = B->no_merge[i];
    B->gc[g]++;
    B->choice[i] = g;
    B->splits += B->gc[g] > 1;
    if (B->splits <= B->left.splits_unfolds) gb_search(B, i + 1, lb + (B->gc[g] > 1));
    B->splits -= B->gc[g] > 1;
    B->gc[g]--;
    B->gsealed[g] = false;
    B->gR[g] = R;
    B->gneg[g] = neg;
  }
  if (B->used_up[i]) return;
  int before = pool_cost(B, B->pool_b, B->pool_nb, B->pool_nm, B->can_contract);
  if (B->bcast[i])
    B->pool_b++;
  else
    B->pool_nb++, B->pool_nm += B->no_merge[i];
  int after = pool_cost(B, B->pool_b, B->pool_nb, B->pool_nm, B->can_contract);
  B->choice[i] = B->G;
  if (after < GB_INF) gb_search(B, i + 1, lb + after - before);
  if (B->bcast[i])
    B->pool_b--;
  else
    B->pool_nb--, B->pool_nm -= B->no_merge[i];
}

static int group_bound(const syno_space_t *s, const dim_info_t *info, int n_dims, int n_weights, left_t left, int floor,
                       int cap) {
  const syno_space_opts_t *o = &s->spec.opts;
  const syno_vars_t *v = &s->spec.vars;
  gb_t B;
  B.s = s;
  B.n = 0;
  B.splits = 0;
  B.can_contract = n_weights < o->max_tensors - 1;
  B.must_contract = n_weights == 0;
  B.expand = o->enable[SYNO_PRIM_EXPAND];
  B.unfold = left.unfolds > 0;
  B.outer_needed = o->rule[SYNO_RULE_C3];
  B.log_window = log(o->max_unfold_kernel > 3 ? o->max_unfold_kernel : 3);
  B.pool_b = B.pool_nb = B.pool_nm = 0;
  B.contractions = o->max_tensors - 1 - n_weights;
  /* Used-up chains first (they seal their group), then dims that carry
   * primaries: both narrow the search early. */
  for (int pass = 0; pass < 3; pass++)
    for (int i = 0; i < n_dims; i++) {
      if (info[i].flags & DI_WEIGHT) continue;
      if (info[i].flags & DI_DISCARD) return 0; /* only with Stride, which this bound leaves out */
      bool used_up = info[i].height >= o->max_chain;
      int kind = used_up ? 0 : primaries(v, info[i].size) ? 1 : 2;
      if (kind != pass) continue;
      B.cur[B.n] = info[i].size;
      B.used_up[B.n] = used_up;
      B.no_merge[B.n] = (info[i].flags & DI_NO_MERGE) != 0;
      B.bcast[B.n] = B.can_contract && (info[i].flags & DI_BCAST);
      B.n++;
    }
  /* Budgets above what the grouping could use are all the same to it. */
  B.left.merges = left.merges < s->n_want + 1 ? left.merges : s->n_want + 1;
  B.left.splits_unfolds = left.splits_unfolds < B.n ? left.splits_unfolds : B.n;
  B.left.unfolds = left.unfolds < GB_INF ? left.unfolds : GB_INF;
  B.carries_after[B.n] = 0;
  for (int i = B.n - 1; i >= 0; i--) B.carries_after[i] = B.carries_after[i + 1] | primaries(v, B.cur[i]);
  for (int i = 0; i < B.n; i++)
    B.same_as_prev[i] = i > 0 && syno_size_eq(B.cur[i], B.cur[i - 1]) && B.bcast[i] == B.bcast[i - 1] &&
                        B.used_up[i] == B.used_up[i - 1] && B.no_merge[i] == B.no_merge[i - 1];
  /* The bound depends only on the multiset of the dims' (size, facts) and
   * on the weights and the caps left: remembered under two independent 64-bit sums of
   * per-dim hashes. */
  uint64_t kb = (uint64_t)n_weights | (uint64_t)B.left.merges << 8 | (uint64_t)B.left.splits_unfolds << 16 |
                (uint64_t)B.left.unfolds << 24;
  uint64_t k1 = syno_hash_fmix64(kb), k2 = kb;
  for (int i = 0; i < B.n; i++) {
    uint64_t h = syno_size_hash(B.cur[i]) ^ ((uint64_t)(B.bcast[i] | B.used_up[i] << 1 | B.no_merge[i] << 2) << 59);
    k1 += syno_hash_fmix64(h);
    k2 += syno_hash_fmix64(syno_hash_mix(h, 1));
  }
  group_memo_t *memo = &s->group_memo[k1 & (SPACE_GROUP_MEMO - 1)];
  if (memo->k1 == k1 && memo->k2 == k2) {
    if (memo->hi <= floor) return memo->hi;
    if (memo->lo >= cap) return cap;
    if (memo->lo == memo->hi) return memo->lo;
    if (memo->lo - 1 > floor) floor = memo->lo - 1; /* no total below lo: start the deepening there */
  } else {
    *memo = (group_memo_t){.k1 = k1, .k2 = k2, .lo = 0, .hi = GB_INF};
  }
  int r = group_search(&B, floor, cap);
  if (r <= floor) { /* some total is r: the least is at most that */
    if (r < memo->hi) memo->hi = (int16_t)r;
  } else if (r < cap) {
    memo->lo = memo->hi = (int16_t)r;
  } else if (cap > memo->lo) {
    memo->lo = (int16_t)cap;
  }
  return r;
}

/* The least total below cap, or cap; stops at the first total <= floor. */
static int group_search(gb_t *Bp, int floor, int cap) {
  gb_t B = *Bp;
  const syno_space_t *s = B.s;
  const syno_vars_t *v = &s->spec.vars;
  /* Every partition of the wanted axes into groups, as restricted growth
   * strings (axis w joins group a[w] <= 1 + max(a[0..w-1])), finest first:
   * the finest is the usual best, and the search stops when it meets the
   * floor. */
  int m = s->n_want;
  if (m == 0) return 0;
  static _Thread_local int8_t parts[4140][SYNO_MAX_RANK]; /* Bell(8) */
  int np = 0;
  int8_t a[SYNO_MAX_RANK] = {0};
  for (;;) {
    memcpy(parts[np++], a, sizeof a);
    int w = m - 1;
    for (; w > 0; w--) {
      int top = 0;
      for (int j = 0; j < w; j++) top = imax(top, a[j]);
      if (a[w] <= top) {
        a[w]++;
        break;
      }
      a[w] = 0;
    }
    if (w == 0) break;
  }
  /* Deepening: the pass with best = target finds a grouping below target
   * if there is one, and prunes everything that cannot beat it; the
   * passes before it found none below target - 1. */
  for (int target = floor + 1; target <= cap; target++) {
    B.best = target;
    for (int q = np - 1; q >= 0 && B.best == target; q--) {
      const int8_t *pa = parts[q];
      B.G = 0;
      for (int w = 0; w < m; w++) B.G = imax(B.G, pa[w] + 1);
      B.merges = m - B.G;
      if (B.merges > B.left.merges) continue;
      int lb = B.must_contract;
      for (int g = 0; g < B.G; g++) {
        B.gd[g] = B.gc[g] = 0;
        B.gsealed[g] = false;
        B.gR[g] = syno_size_one();
      }
      for (int w = 0; w < m; w++) {
        B.gd[pa[w]]++;
        B.gwant[pa[w]] = w;
        B.gR[pa[w]] = syno_size_div(B.gR[pa[w]], s->want[w]);
      }
      for (int g = 0; g < B.G; g++) {
        lb += B.gd[g] - 1;
        B.gneg[g] = negative_primaries(v, B.gR[g]);
      }
      gb_search(&B, 0, lb);
    }
    if (B.best < target) return B.best;
  }
  return cap;
}
