/* Expansion: the children of a node, generated once, when first asked for
 * (syno_node_children).
 *
 * A Reduction-stage node has a child for each further reduction the limits
 * allow, added in non-decreasing order of domain so that each multiset of
 * reductions is met once, and one BEGIN step to the Normal stage (at the
 * same depth). A Normal-stage node has the primitives and Contractions of
 * gen.c, then its finalizations (final.c). Every child passes through
 * space_add_child (store.c). The steps of one expansion are one contiguous
 * run of the step array. When generation fails (out of memory, even where a
 * generator took it for an illegal candidate), everything it added is
 * undone (space_rollback): the node stays unexpanded, the space as it was,
 * and asking again generates the same children. */
#include <string.h>

#include "space_internal.h"
#include "syno/alloc.h"

static int gen_reductions(syno_space_t *s, uint32_t id, syno_error_t *err) {
  node_t n = s->nodes[id];
  const syno_space_opts_t *o = &s->spec.opts;
  /* Reductions form a multiset: add them in non-decreasing order of domain. */
  int n_red = 0;
  syno_size_t last = syno_size_one(), total = syno_size_one();
  /* A copy: the pool may move while children are added. */
  syno_dim_t dims[SPACE_MAX_IFACE];
  memcpy(dims, space_node_dims(s, &n), sizeof(syno_dim_t) * (size_t)n.n_dims);
  for (int i = 0; i < n.n_dims; i++) {
    const syno_dimension_t *d = syno_graph_dim(s->g, dims[i]);
    if (d->kind != SYNO_DIM_REDUCE) continue;
    n_red++;
    total = syno_size_mul(total, d->size);
    if (syno_size_cmp(d->size, last) > 0 || n_red == 1) last = d->size;
  }
  if (n_red < o->max_reductions) {
    syno_size_t cand[512];
    int nc = space_enum_sizes(s, &n.usage[0][0], cand, 512);
    for (int c = 0; c < nc; c++) {
      if (n_red > 0 && syno_size_cmp(cand[c], last) < 0) continue;
      /* The total reduction domain stays within a few times the input
       * without its fixed axes (the batch does not widen the domain). */
      syno_size_t all = syno_size_mul(total, cand[c]);
      bool small = true;
      for (int b = 0; b < s->spec.vars.nbind; b++)
        small = small && syno_size_value(&s->spec.vars, all, b) <= o->max_rdom_multiplier * s->rdom_numel[b];
      if (!small) {
        s->stats.prune[SYNO_PRUNE_LIMIT]++;
        continue;
      }
      int mult = 0;
      for (int i = 0; i < n.n_dims; i++) {
        const syno_dimension_t *d = syno_graph_dim(s->g, dims[i]);
        mult += d->kind == SYNO_DIM_REDUCE && syno_size_eq(d->size, cand[c]);
      }
      syno_dim_t r;
      if (syno_graph_reduce(s->g, cand[c], SYNO_REDUCE_SUM, mult, &r, NULL)) {
        s->stats.prune[SYNO_PRUNE_ILLEGAL]++;
        continue;
      }
      iface_t f;
      space_iface_from(s, &n, &f);
      if (!space_iface_use(s, &f, cand[c], false) || !space_iface_add(&f, r)) {
        s->stats.prune[SYNO_PRUNE_LIMIT]++;
        continue;
      }
      syno_step_t st = {.kind = SYNO_STEP_REDUCE, .prim_id = r};
      if (space_add_child(s, id, SYNO_STAGE_REDUCTION, &f, st, err)) return -1;
    }
  }
  iface_t f;
  space_iface_from(s, &n, &f);
  syno_step_t st = {.kind = SYNO_STEP_BEGIN};
  return space_add_child(s, id, SYNO_STAGE_NORMAL, &f, st, err);
}

int syno_node_children(syno_space_t *s, uint32_t id, const syno_step_t **steps, syno_error_t *err) {
  if (id == 0 || id >= s->n_nodes) return syno_error_set(err, "no node %u", id);
  if (!s->nodes[id].expanded) {
    space_mark_t mark;
    space_mark(s, &mark);
    size_t start = s->n_steps;
    s->gen_start = start;
    int rc = s->nodes[id].stage == SYNO_STAGE_REDUCTION ? gen_reductions(s, id, err) : space_gen_normal(s, id, err);
    if (!rc && s->nodes[id].stage == SYNO_STAGE_NORMAL) rc = space_gen_finals(s, id, err);
    if (!rc && syno_alloc_failures() != mark.failures) rc = syno_error_set(err, "out of memory");
    if (rc) {
      space_rollback(s, &mark);
      return -1;
    }
    node_t *n = &s->nodes[id];
    n->expanded = true;
    n->children = (uint32_t)start;
    n->n_children = (int)(s->n_steps - start);
  }
  /* No step stored yet (a space whose root has no child): no array to point into. */
  *steps = s->steps ? s->steps + s->nodes[id].children : NULL;
  return s->nodes[id].n_children;
}
