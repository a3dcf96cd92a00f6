/* The space (docs/semantics.md §4): its creation from a spec, and the public accessors.
 *
 * The work is done elsewhere: iface.c (interfaces under construction),
 * store.c (the node store), expand.c (a node's children), gen.c (the
 * Normal-stage primitives and Contractions), final.c (finalization),
 * fkey.c and twins.c (rules C4 and U4), distance.c (the shape distance),
 * walk.c (random walks and the exhaustive enumeration), sample.c (sampling
 * on threads). */
#include <stdio.h>
#include <stdlib.h>

#include "space_internal.h"
#include "syno/alloc.h"

int syno_space_new(const syno_space_spec_t *spec, syno_space_t **out, syno_error_t *err) {
  if (syno_space_spec_check(spec, err)) return -1;
  unsigned long failures = syno_alloc_failures();
  syno_space_t *s = syno_calloc(1, sizeof *s);
  if (!s) return syno_error_set(err, "out of memory");
  s->spec = *spec;
  syno_space_opts_t *o = &s->spec.opts;
  double std = 0; /* the standard operator's FLOPs over the bindings, for the ratios */
  for (int b = 0; spec->kind >= 0 && b < spec->vars.nbind; b++)
    std += syno_signature_std_flops((syno_sig_kind_t)spec->kind, &spec->vars, &spec->input, &spec->output, b);
  if (o->max_flops == 0) o->max_flops = o->max_flops_ratio * std;
  if (o->min_flops == 0) o->min_flops = o->min_flops_ratio * std;
  if (o->max_flops > 0 && o->min_flops > o->max_flops) {
    double lo = o->min_flops, hi = o->max_flops;
    syno_free(s);
    return syno_error_set(err, "min FLOPs %g is above max FLOPs %g: no operator can satisfy both", lo, hi);
  }
  s->g = syno_graph_new(&spec->vars);
  s->group_memo = syno_calloc(SPACE_GROUP_MEMO, sizeof *s->group_memo);
  s->n_nodes = 1; /* id 0 is "none" */
  s->walk_bias = 2.0;
  s->walk_fused_penalty = 2.0;
  /* The pool is never NULL, even for a root with no dims (every output axis fixed). */
  if (!s->g || !s->group_memo || syno_grow((void **)&s->nodes, &s->cap_nodes, 1, sizeof *s->nodes) ||
      syno_grow((void **)&s->pool, &s->cap_pool, 1, sizeof *s->pool)) {
    syno_space_free(s);
    return syno_error_set(err, "out of memory");
  }
  for (int b = 0; b < spec->vars.nbind; b++) {
    s->input_numel[b] = syno_size_value(&spec->vars, syno_shape_numel(&spec->input), b);
    s->output_numel[b] = syno_size_value(&spec->vars, syno_shape_numel(&spec->output), b);
    s->lift_saving[b] = space_lift_saving(spec, b);
  }
  /* The desired input sizes, without the fixed axes. */
  for (int i = 0; i < spec->input.rank; i++) {
    bool fixed = false;
    for (int f = 0; f < spec->n_fixed; f++) fixed = fixed || spec->fixed_in[f] == i;
    if (!fixed) {
      s->want_axis[s->n_want] = i;
      s->want[s->n_want++] = spec->input.dim[i];
      s->want_numel = syno_size_mul(s->want_numel, spec->input.dim[i]);
    }
  }
  for (int b = 0; b < spec->vars.nbind; b++) s->rdom_numel[b] = syno_size_value(&spec->vars, s->want_numel, b);
  iface_t root = {0};
  for (int i = 0; i < spec->output.rank; i++) {
    if (syno_graph_iterator(s->g, i, spec->output.dim[i], spec->output.unordered[i], &s->iter[i], err)) {
      syno_space_free(s);
      return syno_error_prefix(err, "output axis %d", i);
    }
    bool fixed = false;
    for (int f = 0; f < spec->n_fixed; f++) fixed = fixed || spec->fixed_out[f] == i;
    if (!fixed) space_iface_add(&root, s->iter[i]);
  }
  if (space_add_root(s, &root, err)) {
    syno_space_free(s);
    return -1;
  }
  /* The root's FLOPs bound (the FLOPs game) takes a failed allocation for
   * "no bound". */
  if (syno_alloc_failures() != failures) {
    syno_space_free(s);
    return syno_error_set(err, "out of memory");
  }
  *out = s;
  return 0;
}

void syno_space_free(syno_space_t *s) {
  if (!s) return;
  syno_graph_free(s->g);
  syno_free(s->nodes);
  syno_free(s->pool);
  syno_free(s->steps);
  syno_free(s->finals);
  syno_table_free(&s->fkeys);
  syno_table_free(&s->table);
  syno_free(s->dinfo);
  syno_free(s->group_memo);
  syno_free(s);
}

syno_graph_t *syno_space_graph(syno_space_t *s) { return s->g; }
const syno_space_spec_t *syno_space_spec(const syno_space_t *s) { return &s->spec; }
const syno_space_stats_t *syno_space_stats(const syno_space_t *s) { return &s->stats; }
int syno_space_set_partition(syno_space_t *s, int part, int parts, syno_error_t *err) {
  if (parts < 1 || part < 0 || part >= parts) return syno_error_set(err, "partition %d of %d", part, parts);
  s->part = part;
  s->parts = parts;
  return 0;
}

uint32_t syno_space_root(const syno_space_t *s) {
  (void)s;
  return 1;
}
syno_stage_t syno_node_stage(const syno_space_t *s, uint32_t node) { return s->nodes[node].stage; }
int syno_node_depth(const syno_space_t *s, uint32_t node) { return s->nodes[node].depth; }
int syno_node_dims(const syno_space_t *s, uint32_t node, const syno_dim_t **dims) {
  *dims = space_node_dims(s, &s->nodes[node]);
  return s->nodes[node].n_dims;
}

int syno_step_print(syno_space_t *s, const syno_step_t *st, char *buf, size_t n) {
  switch (st->kind) {
    case SYNO_STEP_REDUCE: {
      char sz[128];
      syno_size_print(&s->spec.vars, syno_graph_dim(s->g, st->prim_id)->size, sz, sizeof sz);
      return snprintf(buf, n, "reduce(%s)", sz);
    }
    case SYNO_STEP_BEGIN: return snprintf(buf, n, "begin");
    case SYNO_STEP_PRIM: return snprintf(buf, n, "%s", syno_prim_name(st->prim));
    case SYNO_STEP_CONTRACT: return snprintf(buf, n, "contract(w%u)", st->prim_id);
    case SYNO_STEP_FINALIZE: return snprintf(buf, n, "finalize");
  }
  return snprintf(buf, n, "?");
}
