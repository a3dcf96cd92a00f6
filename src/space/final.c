/* Finalization (docs/semantics.md §4.4): the operators a Normal-stage interface makes.
 *
 * The interface's weight axes go to their weights and its other dims must
 * match the wanted input axes one to one by size (every assignment is
 * tried); the fixed axes are copied from the output. Each candidate is
 * built, checked by rule U5 (unordered.c), lowered and costed (FLOPs,
 * parameters, pooling, against the limits), and the cheapest
 * max_finalizations by (tensors, FLOPs) are kept, less those whose
 * function was finalized before (rule C4, fkey.c). Weight
 * axes and expansions are in structural-hash order, so an operator prints
 * the same in every space. A node's finals are one contiguous run of the
 * space's final array, and its FINALIZE steps index into that run. */
#include <string.h>

#include "space_internal.h"
#include "syno/lower.h"

static int build_final(syno_space_t *s, const final_t *fin, syno_operator_t *op, syno_error_t *err) {
  int wrank[SYNO_MAX_TENSORS - 1];
  for (int t = 1; t < fin->n_tensors; t++) wrank[t - 1] = fin->rank[t];
  return syno_operator_build(s->g, s->spec.output.rank, fin->rank[0], fin->axes[0], fin->n_exp, fin->exp,
                             fin->n_tensors - 1, wrank, (const syno_dim_t(*)[SYNO_MAX_RANK]) & fin->axes[1], op, err);
}

/* Costs a candidate; false when rule U5 or a limit rejects it. */
static bool cost_final(syno_space_t *s, final_t *fin) {
  syno_operator_t op;
  syno_nest_t nest;
  if (build_final(s, fin, &op, NULL)) {
    s->stats.prune[SYNO_PRUNE_ILLEGAL]++;
    return false;
  }
  /* U5 first, on the graph alone, as the original does before its limits. */
  if (space_rule_on(s, SYNO_RULE_U5) && !space_unordered_canonical(s, &op)) {
    space_count_rule(s, SYNO_RULE_U5);
    return false;
  }
  if (syno_lower_forward(&op, &nest, NULL)) {
    s->stats.prune[SYNO_PRUNE_ILLEGAL]++;
    return false;
  }
  const syno_space_opts_t *o = &s->spec.opts;
  const syno_vars_t *v = &s->spec.vars;
  double flops = 0, params0 = 0;
  for (int b = 0; b < v->nbind; b++) {
    int64_t f, p;
    if (syno_forward_flops(&op, &nest, v, b, &f, NULL) || syno_operator_params(&op, b, &p, NULL)) return false;
    flops += (double)f;
    if (b == 0) params0 = (double)p;
  }
  if (o->max_params > 0 && params0 > o->max_params) { /* params are those of the first binding */
    s->stats.prune[SYNO_PRUNE_LIMIT]++;
    return false;
  }
  if ((o->max_flops > 0 && flops > o->max_flops) || flops < o->min_flops) {
    s->stats.prune[SYNO_PRUNE_LIMIT]++;
    return false;
  }
  /* Pooling: reductions that no weight reads are a plain (box) sum. */
  double pool = 1;
  for (int r = 0; r < nest.n_inner; r++) {
    bool weighted = false;
    for (int f = 1; f < nest.n_factors && !weighted; f++)
      for (int i = 0; i < nest.factor[f].rank && !weighted; i++) {
        /* A weight axis is a plain loop variable or constant; check the node. */
        const syno_expr_t *e = &nest.node[nest.factor[f].idx[i]];
        weighted = e->kind == SYNO_EXPR_INNER && e->var == r;
      }
    if (!weighted) pool *= syno_size_upper_bound(v, nest.inner[r]);
  }
  if (pool > o->max_pooling) {
    s->stats.prune[SYNO_PRUNE_LIMIT]++;
    return false;
  }
  fin->flops = flops;
  fin->params = params0;
  return true;
}

/* Tries every assignment of interface dims to the wanted input axes. */
static void assign(syno_space_t *s, const syno_dim_t *cand, int n_cand, int pos, bool *taken, final_t *fin,
                   final_t *best, int *n_best) {
  const syno_space_spec_t *sp = &s->spec;
  if (pos == s->n_want) {
    final_t f = *fin;
    if (!cost_final(s, &f)) return;
    int max = sp->opts.max_finalizations;
    /* Keep the cheapest few, ordered by (tensors, FLOPs). */
    int at = *n_best;
    while (at > 0 && (best[at - 1].n_tensors > f.n_tensors ||
                      (best[at - 1].n_tensors == f.n_tensors && best[at - 1].flops > f.flops)))
      at--;
    if (at >= max) return;
    int last = *n_best < max ? *n_best : max - 1;
    for (int i = last; i > at; i--) best[i] = best[i - 1];
    best[at] = f;
    if (*n_best < max) (*n_best)++;
    return;
  }
  for (int i = 0; i < n_cand; i++) {
    if (taken[i] || !syno_size_eq(syno_graph_dim(s->g, cand[i])->size, s->want[pos])) continue;
    taken[i] = true;
    fin->axes[0][s->want_axis[pos]] = cand[i];
    assign(s, cand, n_cand, pos + 1, taken, fin, best, n_best);
    taken[i] = false;
  }
}

static void sort_by_hash(const syno_graph_t *g, syno_dim_t *d, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && syno_graph_dim(g, d[j - 1])->hash > syno_graph_dim(g, d[j])->hash; j--) {
      syno_dim_t t = d[j];
      d[j] = d[j - 1];
      d[j - 1] = t;
    }
}

int space_gen_finals(syno_space_t *s, uint32_t id, syno_error_t *err) {
  node_t *n = &s->nodes[id];
  if (n->n_weights == 0) return 0;
  const syno_dim_t *dims = space_node_dims(s, n);
  syno_dim_t cand[SPACE_MAX_IFACE];
  int n_cand = 0;
  final_t fin;
  memset(&fin, 0, sizeof fin);
  fin.n_tensors = 1 + n->n_weights;
  fin.rank[0] = s->spec.input.rank;
  for (int i = 0; i < n->n_dims; i++) {
    syno_dim_t d = dims[i];
    if (syno_graph_color(s->g, d)->discarding) return 0;
    if (space_weight_axis(s->g, d)) {
      int w = syno_graph_below(s->g, d)->weight;
      if (fin.rank[w] >= SYNO_MAX_RANK) return 0;
      fin.axes[w][fin.rank[w]++] = d;
    } else {
      cand[n_cand++] = d;
    }
  }
  if (n_cand != s->n_want) return 0;
  for (int t = 1; t < fin.n_tensors; t++)
    if (fin.rank[t] == 0) return 0;
  for (int f = 0; f < s->spec.n_fixed; f++) fin.axes[0][s->spec.fixed_in[f]] = s->iter[s->spec.fixed_out[f]];
  fin.n_exp = n->n_exp;
  memcpy(fin.exp, space_node_exps(s, n), sizeof(syno_dim_t) * (size_t)n->n_exp);
  /* Weight axes and expansions in structural-hash order (docs/semantics.md §4.4), so an
   * operator prints the same in every space. */
  for (int t = 1; t < fin.n_tensors; t++) sort_by_hash(s->g, fin.axes[t], fin.rank[t]);
  sort_by_hash(s->g, fin.exp, fin.n_exp);
  final_t best[16];
  int n_best = 0;
  bool taken[SPACE_MAX_IFACE] = {0};
  assign(s, cand, n_cand, 0, taken, &fin, best, &n_best);
  n = &s->nodes[id];
  if (n_best == 0) return 0;
  if (syno_grow((void **)&s->finals, &s->cap_finals, s->n_finals + (size_t)n_best, sizeof *s->finals))
    return syno_error_set(err, "out of memory");
  n->finals = (uint32_t)s->n_finals;
  int kept = 0;
  for (int i = 0; i < n_best; i++) {
    best[i].hash = space_final_key(s, &best[i]);
    if (space_rule_on(s, SYNO_RULE_C4)) {
      bool seen;
      if (space_final_seen(s, &best[i], &seen, err)) return -1;
      if (seen) {
        space_count_rule(s, SYNO_RULE_C4);
        continue;
      }
    }
    s->finals[s->n_finals++] = best[i];
    syno_step_t st = {.kind = SYNO_STEP_FINALIZE, .target = (uint32_t)kept++};
    if (space_push_step(s, st, err)) return -1;
  }
  n->n_finals = kept;
  s->stats.finals += (uint64_t)kept;
  return 0;
}

int syno_node_final(syno_space_t *s, uint32_t node, uint32_t index, syno_operator_t *op, syno_error_t *err) {
  const node_t *n = &s->nodes[node];
  if (!n->expanded || (int)index >= n->n_finals)
    return syno_error_set(err, "node %u has no finalization %u", node, index);
  return build_final(s, &s->finals[n->finals + index], op, err);
}

int syno_node_final_cost(syno_space_t *s, uint32_t node, uint32_t index, double *flops, double *params) {
  const node_t *n = &s->nodes[node];
  if (!n->expanded || (int)index >= n->n_finals) return -1;
  *flops = s->finals[n->finals + index].flops;
  *params = s->finals[n->finals + index].params;
  return 0;
}
