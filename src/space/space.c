/* The space's node store, the reduction stage and finalization. The
 * normal-stage generators live in gen.c, the shape distance in distance.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space_internal.h"
#include "syno/flopsgame.h"
#include "syno/lower.h"
#include "syno/rng.h"

/* Interfaces hold a few dozen dims at most: insertion sort beats qsort. */
static void sort_dims(syno_dim_t *d, int n) {
  for (int i = 1; i < n; i++) {
    syno_dim_t x = d[i];
    int j = i;
    for (; j > 0 && d[j - 1] > x; j--) d[j] = d[j - 1];
    d[j] = x;
  }
}

void iface_from(const syno_space_t *s, const node_t *n, iface_t *f) {
  f->n_dims = n->n_dims;
  f->n_exp = n->n_exp;
  memcpy(f->dims, node_dims(s, n), sizeof(syno_dim_t) * (size_t)n->n_dims);
  memcpy(f->exp, node_exps(s, n), sizeof(syno_dim_t) * (size_t)n->n_exp);
  f->n_weights = n->n_weights;
  memcpy(f->usage, n->usage, sizeof f->usage);
  memcpy(f->count, n->count, sizeof f->count);
}

bool iface_remove(iface_t *f, syno_dim_t d) {
  for (int i = 0; i < f->n_dims; i++)
    if (f->dims[i] == d) {
      f->dims[i] = f->dims[--f->n_dims];
      return true;
    }
  return false;
}

bool iface_add(iface_t *f, syno_dim_t d) {
  if (f->n_dims >= SPACE_MAX_IFACE) return false;
  f->dims[f->n_dims++] = d;
  return true;
}

bool iface_add_exp(iface_t *f, syno_dim_t d) {
  if (f->n_exp >= SPACE_MAX_IFACE) return false;
  f->exp[f->n_exp++] = d;
  return true;
}

bool iface_use(const syno_space_t *s, iface_t *f, syno_size_t size, bool primary_only) {
  const syno_vars_t *v = &s->spec.vars;
  for (int k = 0; k < (primary_only ? 1 : 2); k++) {
    const int8_t *pw = k == SYNO_PRIMARY ? size.p : size.c;
    for (int i = 0; i < v->n[k]; i++) {
      int u = f->usage[k][i] + abs(pw[i]);
      if (u > v->var[k][i].max_occurrence) return false;
      f->usage[k][i] = (int8_t)u;
    }
  }
  return true;
}

bool space_size_valid(const syno_space_t *s, syno_size_t x) {
  const syno_space_opts_t *o = &s->spec.opts;
  if (syno_size_num_vars(x) > o->max_vars_in_size || syno_size_total_power(x) > o->max_powers_in_size) return false;
  syno_trait_t t = syno_size_trait(x);
  if (t != SYNO_TRAIT_GENERAL && t != SYNO_TRAIT_COEFFICIENT) return false;
  if (!syno_size_is_integral(&s->spec.vars, x)) return false;
  return syno_size_lower_bound(&s->spec.vars, x) >= 1.0;
}

int space_odometer(const syno_space_t *s, int lo[2][SYNO_MAX_VARS], int hi[2][SYNO_MAX_VARS],
                   bool (*keep)(const syno_space_t *s, syno_size_t x, void *ctx), void *ctx, syno_size_t *out, int max) {
  const syno_vars_t *v = &s->spec.vars;
  int cur[2][SYNO_MAX_VARS];
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < v->n[k]; i++) {
      if (lo[k][i] > hi[k][i]) return 0;
      cur[k][i] = lo[k][i];
    }
  int n = 0;
  for (;;) {
    syno_size_t x = syno_size_one();
    for (int i = 0; i < v->n[SYNO_PRIMARY]; i++) x.p[i] = (int8_t)cur[SYNO_PRIMARY][i];
    for (int i = 0; i < v->n[SYNO_COEFF]; i++) x.c[i] = (int8_t)cur[SYNO_COEFF][i];
    if (n < max && keep(s, x, ctx)) out[n++] = x;
    /* Advance: coefficients are the inner loop, primaries the outer. */
    int k = SYNO_COEFF, i = v->n[SYNO_COEFF] - 1;
    for (;;) {
      if (i < 0) {
        if (k == SYNO_PRIMARY) return n;
        k = SYNO_PRIMARY;
        i = v->n[SYNO_PRIMARY] - 1;
        continue;
      }
      if (cur[k][i] < hi[k][i]) {
        cur[k][i]++;
        break;
      }
      cur[k][i] = lo[k][i];
      i--;
    }
  }
}

static bool keep_size(const syno_space_t *s, syno_size_t x, void *ctx) {
  (void)ctx;
  return !syno_size_is_one(x) && space_size_valid(s, x);
}

/* Primary powers 0..min(allowance, maxEnum-1); coefficient powers within
 * the allowance and [maxEnum/2 - maxEnum + 1, maxEnum/2] (spec 1.5). */
int space_enum_sizes(const syno_space_t *s, const int8_t *usage, syno_size_t *out, int max) {
  const syno_vars_t *v = &s->spec.vars;
  int me = s->spec.opts.max_enumerations;
  int lo[2][SYNO_MAX_VARS], hi[2][SYNO_MAX_VARS];
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < v->n[k]; i++) {
      int allow = v->var[k][i].max_occurrence - usage[k * SYNO_MAX_VARS + i];
      if (allow < 0) allow = 0;
      if (k == SYNO_PRIMARY) {
        lo[k][i] = 0;
        hi[k][i] = allow < me - 1 ? allow : me - 1;
      } else {
        lo[k][i] = me / 2 - me + 1 > -allow ? me / 2 - me + 1 : -allow;
        hi[k][i] = me / 2 < allow ? me / 2 : allow;
      }
    }
  return space_odometer(s, lo, hi, keep_size, NULL, out, max);
}

/* --- the node store --- */

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
         !memcmp(node_dims(s, n), f->dims, sizeof(syno_dim_t) * (size_t)f->n_dims) &&
         !memcmp(node_exps(s, n), f->exp, sizeof(syno_dim_t) * (size_t)f->n_exp);
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
  int distance = -1;
  if (prune) {
    distance = space_iface_distance(s, stage, f->dims, f->n_dims, f->n_weights, f->count, f->usage[SYNO_PRIMARY],
                                   s->spec.opts.depth - depth);
    if (depth + distance > s->spec.opts.depth) {
      *id = 0;
      *created = false;
      return 0;
    }
  }
  uint64_t h = iface_hash(stage, f);
  probe_t probe = {s, stage, f, h};
  *created = false;
  if ((*id = syno_table_find(&s->table, h, node_is, &probe))) return 0;
  if (syno_grow((void **)&s->nodes, &s->cap_nodes, s->n_nodes + 1, sizeof *s->nodes) ||
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

static int push_step(syno_space_t *s, syno_step_t st, syno_error_t *err) {
  if (syno_grow((void **)&s->steps, &s->cap_steps, s->n_steps + 1, sizeof *s->steps)) return syno_error_set(err, "out of memory");
  s->steps[s->n_steps++] = st;
  return 0;
}

/* The forward FLOPs of an operator are those of its stages (spec 7,
 * syno_forward_flops). Three lower bounds for every completion of a node:
 *  - Once it has a reduction or a weight, the output numel: the last stage
 *    spans every output variable and multiplies or adds at each point.
 *  - With one weight at most (max_tensors 2), output numel x W x 2, where W
 *    is the product of the reduction domains the weight reads: the weight's
 *    stage is the last and spans those too, multiplying and adding. A
 *    finished operator's weightless reductions multiply to at most
 *    max_pooling (cost_final), so W >= R / max_pooling for the product R of
 *    all of them, which only grows while reductions are added
 *    (set_reductions). An operator without a weight pools every
 *    reduction, so cost_final rejects it once R > max_pooling.
 *  - In the normal stage the reductions are fixed, and the FLOPs game of the
 *    graph below the interface (spec 8, syno_flops_game_build) holds the
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
    if (syno_flops_game_build(s->g, node_dims(s, n), n->n_dims, node_exps(s, n), n->n_exp, s->input_numel[b], b,
                              &fg, NULL) ||
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
  const syno_dim_t *dims = node_dims(s, n);
  n->red_numel = n->red_bound = 0;
  for (int b = 0; b < s->spec.vars.nbind; b++) {
    double r = 1;
    for (int i = 0; i < n->n_dims; i++)
      if (syno_graph_dim(s->g, dims[i])->kind == SYNO_DIM_REDUCE)
        r *= syno_size_value(&s->spec.vars, syno_graph_dim(s->g, dims[i])->size, b);
    n->red_numel += r * s->output_numel[b];
    if (pooling_term && r > o->max_pooling) n->red_bound += 2 * s->output_numel[b] * (r / o->max_pooling);
  }
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
               rule_on(s, SYNO_RULE_U4);
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
        count_rule(s, SYNO_RULE_U4);
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
  return push_step(s, step, err);
}

/* --- construction --- */

int syno_space_new(const syno_space_spec_t *spec, syno_space_t **out, syno_error_t *err) {
  if (syno_space_spec_check(spec, err)) return -1;
  syno_space_t *s = calloc(1, sizeof *s);
  if (!s) return syno_error_set(err, "out of memory");
  s->spec = *spec;
  s->g = syno_graph_new(&spec->vars);
  s->group_memo = calloc(SPACE_GROUP_MEMO, sizeof *s->group_memo);
  s->n_nodes = 1; /* id 0 is "none" */
  s->walk_bias = 2.0;
  s->walk_fused_penalty = 2.0;
  if (!s->g || !s->group_memo || syno_grow((void **)&s->nodes, &s->cap_nodes, 1, sizeof *s->nodes)) {
    syno_space_free(s);
    return syno_error_set(err, "out of memory");
  }
  for (int b = 0; b < spec->vars.nbind; b++) {
    s->input_numel[b] = syno_size_value(&spec->vars, syno_shape_numel(&spec->input), b);
    s->output_numel[b] = syno_size_value(&spec->vars, syno_shape_numel(&spec->output), b);
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
  iface_t root = {0};
  for (int i = 0; i < spec->output.rank; i++) {
    if (syno_graph_iterator(s->g, i, spec->output.dim[i], spec->output.unordered[i], &s->iter[i], err)) {
      syno_space_free(s);
      return syno_error_prefix(err, "output axis %d", i);
    }
    bool fixed = false;
    for (int f = 0; f < spec->n_fixed; f++) fixed = fixed || spec->fixed_out[f] == i;
    if (!fixed) iface_add(&root, s->iter[i]);
  }
  uint32_t id;
  bool created;
  if (intern_node(s, SYNO_STAGE_REDUCTION, &root, 0, false, &id, &created, err)) {
    syno_space_free(s);
    return -1;
  }
  for (int b = 0; b < spec->vars.nbind; b++) s->nodes[id].red_numel += s->output_numel[b];
  set_flops_bound(s, id);
  *out = s;
  return 0;
}

void syno_space_free(syno_space_t *s) {
  if (!s) return;
  syno_graph_free(s->g);
  free(s->nodes);
  free(s->pool);
  free(s->steps);
  free(s->finals);
  syno_table_free(&s->fkeys);
  syno_table_free(&s->table);
  free(s->dinfo);
  free(s->group_memo);
  free(s);
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
  *dims = node_dims(s, &s->nodes[node]);
  return s->nodes[node].n_dims;
}

/* --- the reduction stage --- */

static int gen_reductions(syno_space_t *s, uint32_t id, syno_error_t *err) {
  node_t n = s->nodes[id];
  const syno_space_opts_t *o = &s->spec.opts;
  /* Reductions form a multiset: add them in non-decreasing order of domain. */
  int n_red = 0;
  syno_size_t last = syno_size_one(), total = syno_size_one();
  /* A copy: the pool may move while children are added. */
  syno_dim_t dims[SPACE_MAX_IFACE];
  memcpy(dims, node_dims(s, &n), sizeof(syno_dim_t) * (size_t)n.n_dims);
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
      /* The total reduction domain stays within a few times the input. */
      syno_size_t all = syno_size_mul(total, cand[c]);
      bool small = true;
      for (int b = 0; b < s->spec.vars.nbind; b++)
        small = small && syno_size_value(&s->spec.vars, all, b) <= o->max_rdom_multiplier * s->input_numel[b];
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
      iface_from(s, &n, &f);
      if (!iface_use(s, &f, cand[c], false) || !iface_add(&f, r)) {
        s->stats.prune[SYNO_PRUNE_LIMIT]++;
        continue;
      }
      syno_step_t st = {.kind = SYNO_STEP_REDUCE, .prim_id = r};
      if (space_add_child(s, id, SYNO_STAGE_REDUCTION, &f, st, err)) return -1;
    }
  }
  iface_t f;
  iface_from(s, &n, &f);
  syno_step_t st = {.kind = SYNO_STEP_BEGIN};
  return space_add_child(s, id, SYNO_STAGE_NORMAL, &f, st, err);
}

/* --- finalization (spec 4.3) --- */

static int build_final(syno_space_t *s, const final_t *fin, syno_operator_t *op, syno_error_t *err) {
  int wrank[SYNO_MAX_TENSORS - 1];
  for (int t = 1; t < fin->n_tensors; t++) wrank[t - 1] = fin->rank[t];
  return syno_operator_build(s->g, s->spec.output.rank, fin->rank[0], fin->axes[0], fin->n_exp, fin->exp,
                             fin->n_tensors - 1, wrank, (const syno_dim_t(*)[SYNO_MAX_RANK])&fin->axes[1], op, err);
}

/* Costs a candidate; false when a limit rejects it. */
static bool cost_final(syno_space_t *s, final_t *fin) {
  syno_operator_t op;
  syno_nest_t nest;
  if (build_final(s, fin, &op, NULL) || syno_lower_forward(&op, &nest, NULL)) {
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

static int gen_finals(syno_space_t *s, uint32_t id, syno_error_t *err) {
  node_t *n = &s->nodes[id];
  if (n->n_weights == 0) return 0;
  const syno_dim_t *dims = node_dims(s, n);
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
  memcpy(fin.exp, node_exps(s, n), sizeof(syno_dim_t) * (size_t)n->n_exp);
  /* Weight axes and expansions in structural-hash order (spec 4.3), so an
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
    if (rule_on(s, SYNO_RULE_C4)) {
      bool seen;
      if (space_final_seen(s, &best[i], &seen, err)) return -1;
      if (seen) {
        count_rule(s, SYNO_RULE_C4);
        continue;
      }
    }
    s->finals[s->n_finals++] = best[i];
    syno_step_t st = {.kind = SYNO_STEP_FINALIZE, .target = (uint32_t)kept++};
    if (push_step(s, st, err)) return -1;
  }
  n->n_finals = kept;
  s->stats.finals += (uint64_t)kept;
  return 0;
}

int syno_node_children(syno_space_t *s, uint32_t id, const syno_step_t **steps, syno_error_t *err) {
  if (id == 0 || id >= s->n_nodes) return syno_error_set(err, "no node %u", id);
  if (!s->nodes[id].expanded) {
    size_t start = s->n_steps;
    s->gen_start = start;
    int rc = s->nodes[id].stage == SYNO_STAGE_REDUCTION ? gen_reductions(s, id, err) : space_gen_normal(s, id, err);
    if (!rc && s->nodes[id].stage == SYNO_STAGE_NORMAL) rc = gen_finals(s, id, err);
    if (rc) {
      s->n_steps = start;
      return -1;
    }
    node_t *n = &s->nodes[id];
    n->expanded = true;
    n->children = (uint32_t)start;
    n->n_children = (int)(s->n_steps - start);
  }
  *steps = s->steps + s->nodes[id].children;
  return s->nodes[id].n_children;
}

int syno_node_final(syno_space_t *s, uint32_t node, uint32_t index, syno_operator_t *op, syno_error_t *err) {
  const node_t *n = &s->nodes[node];
  if (!n->expanded || (int)index >= n->n_finals) return syno_error_set(err, "node %u has no finalization %u", node, index);
  return build_final(s, &s->finals[n->finals + index], op, err);
}

int syno_node_final_cost(syno_space_t *s, uint32_t node, uint32_t index, double *flops, double *params) {
  const node_t *n = &s->nodes[node];
  if (!n->expanded || (int)index >= n->n_finals) return -1;
  *flops = s->finals[n->finals + index].flops;
  *params = s->finals[n->finals + index].params;
  return 0;
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

/* A depth budget for a walk from `start`: uniform over the budgets at which
 * start is not known dead and could still finish; -1 when there is none. */
static int pick_budget(syno_space_t *s, uint32_t start, struct syno_rng *rng) {
  int lo = s->nodes[start].depth + syno_node_distance(s, start), hi = s->spec.opts.depth;
  int dead = s->nodes[start].dead_at;
  if (lo <= dead) lo = dead + 1;
  if (lo < 1) lo = 1;
  if (lo > hi || s->nodes[start].dead) return -1;
  int b = lo + (int)(syno_rng_uniform(rng) * (double)(hi - lo + 1));
  return b > hi ? hi : b;
}

int syno_space_random_walk(syno_space_t *s, struct syno_rng *rng, int max_walks, bool distinct, uint32_t *node,
                           uint32_t *final, int *walks, syno_error_t *err) {
  return syno_space_walk(s, syno_space_root(s), rng, max_walks, distinct, NULL, 0, NULL, node, final, walks, err);
}

/* Whether the fused loop nest of every completion of node c would cost more
 * than max_flops: output numel x the reduction domains x (weights + 1), the
 * bound the space pruned by when it counted fused FLOPs. Such a node can
 * finish only where the stages bring the cost under the limit (a window
 * pooled first, a low-rank pair of weights), which few completions do, so
 * walks lean away from it (walk_fused_penalty). In (b) of bench/space this
 * cut the walks per distinct operator threefold. */
static bool fused_over(const syno_space_t *s, const node_t *c) {
  double per_point = (c->n_weights > 1 ? c->n_weights : 1) + (c->n_red > 0);
  return s->spec.opts.max_flops > 0 && c->red_numel * per_point > s->spec.opts.max_flops;
}

int syno_space_walk(syno_space_t *s, uint32_t start, struct syno_rng *rng, int max_walks, bool distinct,
                    syno_step_t *taken, int max_taken, int *n_taken, uint32_t *node, uint32_t *final, int *walks,
                    syno_error_t *err) {
  uint32_t path[64];
  syno_step_t via[64];
  int len = 0, backups = 0;
  uint32_t id = start;
  *walks = 1;
  if (n_taken) *n_taken = 0;
  int budget = pick_budget(s, start, rng);
  if (budget < 0) return 0; /* nothing left below start */
  const int max_backups = 2 * s->spec.opts.depth;
  double *wgt = NULL;
  size_t wcap = 0;
  int rc;
  for (;;) {
    const syno_step_t *steps;
    int n = syno_node_children(s, id, &steps, err);
    if (n < 0) {
      rc = -1;
      break;
    }
    if (syno_grow((void **)&wgt, &wcap, (size_t)n, sizeof *wgt)) {
      rc = syno_error_set(err, "out of memory");
      break;
    }
    /* Choose among live children, weighting each by exp(-bias * distance):
     * every live child stays possible, but walks lean toward finishing. A
     * child is live when it can still finish within the walk's budget. */
    double total = 0;
    const node_t *cur = &s->nodes[id];
    for (int i = 0; i < n; i++) {
      wgt[i] = 0;
      if (steps[i].kind == SYNO_STEP_FINALIZE) {
        const final_t *f = &s->finals[cur->finals + steps[i].target];
        if (!f->taken && (s->parts <= 1 || f->hash % (uint64_t)s->parts == (uint64_t)s->part)) wgt[i] = 1;
      } else {
        int dist = syno_node_distance(s, steps[i].target);
        const node_t *c = &s->nodes[steps[i].target];
        if (!c->dead && c->dead_at < budget && c->depth + dist <= budget)
          wgt[i] = exp(-s->walk_bias * (dist + (fused_over(s, c) ? s->walk_fused_penalty : 0)));
      }
      total += wgt[i];
    }
    if (total <= 0) {
      /* A dead end at this budget (and so at every smaller one): mark it,
       * back up a step (the neighbourhood of a failure is often alive), and
       * after a few back-ups start over from `start` with a new budget. */
      if (s->nodes[id].dead_at < budget) s->nodes[id].dead_at = (int8_t)budget;
      if (budget >= s->spec.opts.depth) s->nodes[id].dead = true;
      if (++*walks > max_walks) {
        rc = 0;
        break;
      }
      if (id != start && ++backups <= max_backups && len > 0) {
        id = path[--len];
        continue;
      }
      budget = pick_budget(s, start, rng);
      if (budget < 0) { /* nothing left below start */
        rc = 0;
        break;
      }
      id = start;
      backups = len = 0;
      continue;
    }
    double pick = syno_rng_uniform(rng) * total;
    int chosen = -1;
    for (int i = 0; i < n && chosen < 0; i++) {
      if (wgt[i] > 0 && pick < wgt[i]) chosen = i;
      pick -= wgt[i];
    }
    for (int i = n - 1; i >= 0 && chosen < 0; i--) /* rounding */
      if (wgt[i] > 0) chosen = i;
    const syno_step_t *st = &steps[chosen];
    if (st->kind == SYNO_STEP_FINALIZE) {
      *node = id;
      *final = st->target;
      if (distinct) s->finals[s->nodes[id].finals + st->target].taken = true;
      if (taken) {
        int k = 0;
        for (; k < len && k < max_taken; k++) taken[k] = via[k];
        if (k < max_taken) taken[k++] = *st;
        *n_taken = k;
      }
      rc = 1;
      break;
    }
    if (len == 64) { /* deeper than any depth limit (40) and stage steps allow */
      rc = syno_error_set(err, "random walk deeper than 64 steps");
      break;
    }
    via[len] = *st;
    path[len++] = id;
    id = st->target;
  }
  free(wgt);
  return rc;
}

bool syno_node_dead(const syno_space_t *s, uint32_t node) { return s->nodes[node].dead; }

void syno_node_final_take(syno_space_t *s, uint32_t node, uint32_t index) {
  s->finals[s->nodes[node].finals + index].taken = true;
}

int syno_space_exhaust(syno_space_t *s, syno_space_final_fn final, void *ctx, uint64_t *nodes_by_depth,
                       uint64_t *finals_by_depth, syno_error_t *err) {
  /* An explicit stack of (node, next child); a node is expanded when first met. */
  typedef struct {
    uint32_t node;
    int next;
  } frame_t;
  size_t cap = 0, top = 0;
  frame_t *stack = NULL;
  bool *seen = calloc(s->n_nodes + 1, 1);
  size_t seen_cap = s->n_nodes + 1;
  if (syno_grow((void **)&stack, &cap, 256, sizeof *stack) || !seen) {
    free(stack);
    free(seen);
    return syno_error_set(err, "out of memory");
  }
  int rc = 0;
  stack[top++] = (frame_t){syno_space_root(s), 0};
  seen[syno_space_root(s)] = true;
  if (nodes_by_depth) nodes_by_depth[0]++;
  while (top > 0 && rc == 0) {
    frame_t *f = &stack[top - 1];
    const syno_step_t *steps = NULL;
    int n = syno_node_children(s, f->node, &steps, err);
    if (n < 0) {
      rc = -1;
      break;
    }
    if (f->next >= n) {
      top--;
      continue;
    }
    syno_step_t st = steps[f->next++];
    if (st.kind == SYNO_STEP_FINALIZE) {
      if (finals_by_depth) finals_by_depth[s->nodes[f->node].depth]++;
      if (final) rc = final(s, f->node, st.target, ctx);
      continue;
    }
    if (st.target >= seen_cap) { /* the space grew */
      size_t old = seen_cap;
      if (syno_grow((void **)&seen, &seen_cap, (size_t)s->n_nodes + 1, sizeof *seen)) {
        rc = syno_error_set(err, "out of memory");
        break;
      }
      memset(seen + old, 0, seen_cap - old);
    }
    if (seen[st.target]) continue;
    seen[st.target] = true;
    if (nodes_by_depth) nodes_by_depth[s->nodes[st.target].depth]++;
    if (syno_grow((void **)&stack, &cap, top + 1, sizeof *stack)) {
      rc = syno_error_set(err, "out of memory");
      break;
    }
    stack[top++] = (frame_t){st.target, 0};
  }
  free(stack);
  free(seen);
  return rc > 0 ? 0 : rc;
}
