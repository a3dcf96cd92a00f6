/* The node store: every interface the space has met, interned once, and
 * the steps between them.
 *
 * A node is an interface (its dims and its expansions, each sorted, in the
 * pool) at a stage. The table finds a node by its interface's hash, so every
 * step that reaches an interface reaches one node, which keeps the depth it
 * was first reached at. Node 0 is "none"; the root is 1. Nodes, the pool and
 * the steps only grow: ids and offsets stay valid, pointers into them do
 * not (re-read s->nodes after anything that may add a node). The facts set
 * when a node is created (its reductions, its FLOPs bound) depend only on
 * its interface, so whichever parent creates it gets the same answer.
 *
 * space_add_child is the one door of a generated child: rule U4's
 * renaming, the shape distance (before the table probe: a pruned interface
 * takes no memory) and the FLOPs bound are checked there, and a child that
 * passes becomes a step of the node being expanded. */
#include <string.h>

#include "space_internal.h"
#include "syno/alloc.h"
#include "syno/flopsgame.h"

/* Interfaces hold a few dozen dims at most: insertion sort beats qsort. */
static void sort_dims(syno_dim_t *d, int n) {
  for (int i = 1; i < n; i++) {
    syno_dim_t x = d[i];
    int j = i;
    for (; j > 0 && d[j - 1] > x; j--) d[j] = d[j - 1];
    d[j] = x;
  }
}

static uint64_t iface_hash(syno_stage_t stage, const iface_t *f) {
  uint64_t h = 0x9e3779b97f4a7c15ull * (stage + 1);
  for (int i = 0; i < f->n_dims; i++) h = (h ^ f->dims[i]) * 0x100000001b3ull;
  h ^= 0xabcdefull;
  for (int i = 0; i < f->n_exp; i++) h = (h ^ f->exp[i]) * 0x100000001b3ull;
  /* Spread every bit over the half the table indexes by. */
  return syno_hash_fmix64(h);
}

static bool same_iface(const syno_space_t *s, const node_t *n, syno_stage_t stage, const iface_t *f) {
  return n->stage == stage && n->n_dims == f->n_dims && n->n_exp == f->n_exp &&
         !memcmp(space_node_dims(s, n), f->dims, sizeof(syno_dim_t) * (size_t)f->n_dims) &&
         !memcmp(space_node_exps(s, n), f->exp, sizeof(syno_dim_t) * (size_t)f->n_exp);
}

/* A table probe for interface f at stage `stage`, whose hash is `hash`. */
typedef struct {
  const syno_space_t *s;
  syno_stage_t stage;
  const iface_t *f;
  uint64_t hash;
} probe_t;

static bool node_is(const void *ctx, uint32_t id) {
  const probe_t *p = ctx;
  const node_t *n = &p->s->nodes[id];
  return n->hash == p->hash && same_iface(p->s, n, p->stage, p->f);
}

/* Finds or creates the node; *id receives it, *created whether it is new.
 * With `prune`, the interface is first checked against the shape distance:
 * when depth + distance exceeds the space's depth, *id = 0 and nothing is
 * created, so pruned interfaces take no memory. The check comes before the
 * table probe, which most children would otherwise pay for nothing (an
 * existing node that fails it is pruned at this depth all the same); in
 * (a) of bench/space this visits 7% more nodes in 30 s. */
static int intern_node(syno_space_t *s, syno_stage_t stage, iface_t *f, int depth, bool prune, uint32_t *id,
                       bool *created, syno_error_t *err) {
  sort_dims(f->dims, f->n_dims);
  sort_dims(f->exp, f->n_exp);
  int distance = -1; /* also when out of memory: unknown, computed again when asked */
  if (prune) {
    distance = space_iface_distance(s, stage, f->dims, f->n_dims, f->n_weights, f->count, f->usage[SYNO_PRIMARY],
                                    s->spec.opts.depth - depth);
    if (distance >= 0 && depth + distance > s->spec.opts.depth) {
      *id = 0;
      *created = false;
      return 0;
    }
  }
  uint64_t h = iface_hash(stage, f);
  probe_t probe = {s, stage, f, h};
  *created = false;
  if ((*id = syno_table_find(&s->table, h, node_is, &probe))) return 0;
  /* Room for the shape facts of the node's dims: syno_node_distance, which
   * cannot report an error, then never allocates. */
  if ((f->n_dims && space_dinfo_reserve(s, f->dims[f->n_dims - 1])) ||
      syno_grow((void **)&s->nodes, &s->cap_nodes, s->n_nodes + 1, sizeof *s->nodes) ||
      syno_grow((void **)&s->pool, &s->cap_pool, s->n_pool + (size_t)f->n_dims + (size_t)f->n_exp, sizeof *s->pool) ||
      syno_table_insert(&s->table, h, s->n_nodes))
    return syno_error_set(err, "out of memory");
  node_t *n = &s->nodes[s->n_nodes];
  memset(n, 0, sizeof *n);
  n->stage = stage;
  n->depth = depth;
  n->n_dims = f->n_dims;
  n->n_exp = f->n_exp;
  n->off = (uint32_t)s->n_pool;
  memcpy(s->pool + s->n_pool, f->dims, sizeof(syno_dim_t) * (size_t)f->n_dims);
  memcpy(s->pool + s->n_pool + f->n_dims, f->exp, sizeof(syno_dim_t) * (size_t)f->n_exp);
  s->n_pool += (size_t)f->n_dims + (size_t)f->n_exp;
  n->n_weights = f->n_weights;
  memcpy(n->usage, f->usage, sizeof n->usage);
  memcpy(n->count, f->count, sizeof n->count);
  n->distance = distance;
  n->dead_at = -1;
  n->hash = h;
  *id = s->n_nodes++;
  *created = true;
  s->stats.nodes++;
  return 0;
}

int space_push_step(syno_space_t *s, syno_step_t st, syno_error_t *err) {
  if (syno_grow((void **)&s->steps, &s->cap_steps, s->n_steps + 1, sizeof *s->steps))
    return syno_error_set(err, "out of memory");
  s->steps[s->n_steps++] = st;
  return 0;
}

/* The forward FLOPs of an operator are those of its stages (docs/semantics.md
 * §7.2, syno_forward_flops). Three lower bounds for every completion of a node:
 *  - Once it has a reduction or a weight, the output numel: the last stage
 *    spans every output variable and multiplies or adds at each point.
 *  - With one weight at most (max_tensors 2), output numel x W x 2 / L, where
 *    W is the product of the reduction domains the weight reads: the
 *    weight's stage spans those too, multiplying and adding, and every
 *    output variable but those of input axes lifted past it
 *    (docs/semantics.md §7.3), which save at most L = lift_saving (see
 *    space_lift_saving). A finished operator's weightless reductions
 *    multiply to at most max_pooling (cost_final in final.c), so W >= R /
 *    max_pooling for the product R of all of them, which only grows while
 *    reductions are added (set_reductions). An operator without a weight
 *    pools every reduction, so cost_final rejects it once R > max_pooling.
 *  - In the normal stage the reductions are fixed, and the FLOPs game of the
 *    graph below the interface (docs/semantics.md §8.2, syno_flops_game_build) holds the
 *    same decreases and a subset of the finished operator's increases and
 *    dependencies, so its cost bounds every completion's game from below,
 *    and that bounds the stages' FLOPs (tested on exhaustively enumerated
 *    spaces). Strides divide the game's starting numel, and those still to
 *    come are unknown, so the game is not played with Stride on, nor when
 *    no FLOPs limit asks for it. */
static void set_flops_bound(syno_space_t *s, uint32_t id) {
  node_t *n = &s->nodes[id];
  double out = 0, game = 0;
  for (int b = 0; b < s->spec.vars.nbind; b++) out += s->output_numel[b];
  n->flops_bound = n->n_red > 0 || n->n_weights > 0 ? out : 0;
  if (n->red_bound > n->flops_bound) n->flops_bound = n->red_bound;
  if (n->stage != SYNO_STAGE_NORMAL || s->spec.opts.max_flops <= 0 || s->spec.opts.enable[SYNO_PRIM_STRIDE]) return;
  for (int b = 0; b < s->spec.vars.nbind; b++) {
    syno_flops_game_t fg;
    double cost;
    if (syno_flops_game_build(s->g, space_node_dims(s, n), n->n_dims, space_node_exps(s, n), n->n_exp,
                              s->input_numel[b], b, &fg, NULL) ||
        syno_flops_game_solve(&fg, &cost, NULL))
      return;
    game += cost;
  }
  if (game > n->flops_bound) n->flops_bound = game;
}

/* The reductions of a new node, with the pooling term of its FLOPs bound
 * and the fused cost the walks look at (fused_over): a reduction step adds
 * one to its parent's, every other step keeps them (an interface determines
 * the reductions below it, so every parent gives the same answer). During
 * the reduction stage every reduction is still in the interface. */
static void set_reductions(syno_space_t *s, uint32_t parent, uint32_t id, syno_step_t step) {
  node_t *p = &s->nodes[parent], *n = &s->nodes[id];
  n->n_red = p->n_red;
  n->red_bound = p->red_bound;
  n->red_numel = p->red_numel;
  n->twins = p->twins;
  if (step.kind != SYNO_STEP_REDUCE) return;
  n->n_red++;
  n->twins = n->twins || syno_graph_dim(s->g, step.prim_id)->index > 0;
  const syno_space_opts_t *o = &s->spec.opts;
  bool pooling_term = o->max_tensors == 2 && o->max_pooling >= 1;
  const syno_dim_t *dims = space_node_dims(s, n);
  n->red_numel = n->red_bound = 0;
  for (int b = 0; b < s->spec.vars.nbind; b++) {
    double r = 1;
    for (int i = 0; i < n->n_dims; i++)
      if (syno_graph_dim(s->g, dims[i])->kind == SYNO_DIM_REDUCE)
        r *= syno_size_value(&s->spec.vars, syno_graph_dim(s->g, dims[i])->size, b);
    n->red_numel += r * s->output_numel[b];
    if (pooling_term && r > o->max_pooling)
      n->red_bound += 2 * s->output_numel[b] * (r / o->max_pooling) / s->lift_saving[b];
  }
}

/* An input axis lifted past the weight's stage (docs/semantics.md §7.3) reads output
 * variables only, none the weight reads, and spans more points than it has elements only
 * through Unfold windows made of them: pieces of output axes, odd under every binding, whose
 * product divides the odd part of the axis's size. A piece smaller than its axis needs a
 * Merge to cut it off. So the stage shrinks by at most the product, over the output axes,
 * of their odd parts: those of odd axes (usable whole) and the largest of the others, as
 * many as max_count allows Merges. 1 when no axis has an odd part. */
double space_lift_saving(const syno_space_spec_t *spec, int b) {
  double whole = 1, cut[SYNO_MAX_RANK];
  int n_cut = 0;
  for (int a = 0; a < spec->output.rank; a++) {
    bool fixed = false;
    for (int f = 0; f < spec->n_fixed; f++) fixed = fixed || spec->fixed_out[f] == a;
    int64_t size = syno_size_value(&spec->vars, spec->output.dim[a], b), odd = size;
    if (fixed || size < 1) continue;
    while (odd % 2 == 0) odd /= 2;
    if (odd == size)
      whole *= (double)odd;
    else if (odd > 1)
      cut[n_cut++] = (double)odd;
  }
  int merges = spec->opts.max_count[SYNO_PRIM_MERGE];
  if (merges < 0 || merges > n_cut) merges = n_cut;
  for (int i = 0; i < merges; i++) { /* the largest `merges` of them */
    int best = i;
    for (int j = i + 1; j < n_cut; j++)
      if (cut[j] > cut[best]) best = j;
    double t = cut[i];
    cut[i] = cut[best];
    cut[best] = t;
    whole *= cut[i];
  }
  return whole;
}

double syno_node_flops_bound(const syno_space_t *s, uint32_t id) { return s->nodes[id].flops_bound; }

int space_add_child(syno_space_t *s, uint32_t parent, syno_stage_t stage, iface_t *f, syno_step_t step,
                    syno_error_t *err) {
  int depth = s->nodes[parent].depth + (step.kind == SYNO_STEP_BEGIN ? 0 : 1);
  if (depth > s->spec.opts.depth) return 0;
  /* U4: one renaming of equal-domain reductions per interface. Two steps
   * whose children are renamings of each other then reach one node, and
   * the second is dropped. */
  bool twins = stage == SYNO_STAGE_NORMAL && step.kind != SYNO_STEP_BEGIN && s->nodes[parent].twins &&
               space_rule_on(s, SYNO_RULE_U4);
  if (twins && space_canon_twins(s, f, err)) return -1;
  uint32_t id;
  bool created;
  if (intern_node(s, stage, f, depth, s->spec.opts.prune_distance, &id, &created, err)) return -1;
  if (!id) {
    s->stats.prune[SYNO_PRUNE_DISTANCE]++;
    return 0;
  }
  if (twins && !created)
    for (size_t i = s->gen_start; i < s->n_steps; i++)
      if (s->steps[i].target == id) {
        space_count_rule(s, SYNO_RULE_U4);
        return 0;
      }
  if (created) {
    set_reductions(s, parent, id, step);
    set_flops_bound(s, id);
  }
  if (s->spec.opts.prune_flops && s->spec.opts.max_flops > 0 &&
      syno_node_flops_bound(s, id) > s->spec.opts.max_flops * (1 + 1e-12)) {
    s->stats.prune[SYNO_PRUNE_FLOPS]++;
    return 0;
  }
  if (s->spec.opts.prune_distance && depth + syno_node_distance(s, id) > s->spec.opts.depth) {
    s->stats.prune[SYNO_PRUNE_DISTANCE]++;
    return 0;
  }
  step.target = id;
  return space_push_step(s, step, err);
}

void space_mark(const syno_space_t *s, space_mark_t *m) {
  m->n_nodes = s->n_nodes;
  m->n_pool = s->n_pool;
  m->n_steps = s->n_steps;
  m->n_finals = s->n_finals;
  syno_graph_mark(s->g, &m->graph);
  m->stats = s->stats;
  m->failures = syno_alloc_failures();
}

void space_rollback(syno_space_t *s, const space_mark_t *m) {
  size_t n_dims = (size_t)syno_graph_num_dims(s->g) + 1;
  s->n_nodes = m->n_nodes;
  s->n_pool = m->n_pool;
  s->n_steps = m->n_steps;
  s->n_finals = m->n_finals;
  syno_table_truncate(&s->table, m->n_nodes);
  syno_table_truncate(&s->fkeys, (uint32_t)m->n_finals + 1);
  syno_graph_rollback(s->g, &m->graph);
  /* The forgotten dims' ids will name other dims: forget their shape facts. */
  if (n_dims > s->cap_dinfo) n_dims = s->cap_dinfo;
  if (n_dims > m->graph.n_dims) memset(s->dinfo + m->graph.n_dims, 0, (n_dims - m->graph.n_dims) * sizeof *s->dinfo);
  s->stats = m->stats;
}

int space_add_root(syno_space_t *s, iface_t *f, syno_error_t *err) {
  uint32_t id;
  bool created;
  if (intern_node(s, SYNO_STAGE_REDUCTION, f, 0, false, &id, &created, err)) return -1;
  for (int b = 0; b < s->spec.vars.nbind; b++) s->nodes[id].red_numel += s->output_numel[b];
  set_flops_bound(s, id);
  return 0;
}
