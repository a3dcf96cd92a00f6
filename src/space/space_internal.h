/* Internals shared by the space's files (see space.c for which file does
 * what): the node store, the interface builder, and the functions one file
 * calls in another. Not part of the public API. */
#ifndef SYNO_SPACE_INTERNAL_H
#define SYNO_SPACE_INTERNAL_H

#include "syno/grow.h"
#include "syno/hash.h"
#include "syno/space.h"

#define SPACE_MAX_IFACE 24 /* dims in one interface */

typedef struct {
  syno_stage_t stage;
  int depth;
  int n_dims, n_exp;
  uint32_t off;                   /* dims then expansions, in the pool */
  int n_weights;                  /* the largest weight id so far */
  int8_t usage[2][SYNO_MAX_VARS]; /* occurrence of each variable (docs/semantics.md §1.5) */
  int8_t count[SYNO_PRIM_KINDS];  /* primitives of each kind below the interface */
  int distance;                   /* -1 until computed */
  bool expanded;
  bool dead;          /* known to lead to no operator */
  int8_t dead_at;     /* known to lead to no operator within this depth budget (-1: none) */
  int8_t n_red;       /* reductions below the interface (fixed once the normal stage begins) */
  bool twins;         /* two of them have the same type and domain (rule U4) */
  double red_bound;   /* the reductions' part of syno_node_flops_bound (set_reductions) */
  double red_numel;   /* sum over bindings of output numel x product of the reduction domains (for walks) */
  double flops_bound; /* syno_node_flops_bound */
  int n_children;
  uint32_t children; /* offset into the step array */
  int n_finals;
  uint32_t finals; /* offset into the final array */
  uint64_t hash;
} node_t;

/* A finished operator in compact form: its top. */
typedef struct {
  int n_tensors;
  int rank[SYNO_MAX_TENSORS];
  syno_dim_t axes[SYNO_MAX_TENSORS][SYNO_MAX_RANK];
  int n_exp;
  syno_dim_t exp[SYNO_MAX_RANK];
  double flops, params;
  bool taken; /* already returned by a walk that samples without replacement */
  uint64_t
      hash; /* its function key (space_final_key): the same in every space, and for every spelling of one function */
} final_t;

/* What the shape distance needs of a dim: a pure function of the dim (dims
 * are hash-consed), computed once per dim (space_dim_info). */
enum {
  DI_KNOWN = 1,
  DI_WEIGHT = 2,
  DI_BCAST = 4,
  DI_DISCARD = 8,
  DI_BASE_REDUCE = 16,
  DI_NO_MERGE = 32,
  DI_REDUCE = 64
};
#define DI_MAX_POOLED 4
typedef struct {
  uint8_t flags; /* DI_*: weight axis, broadcastable by a Contraction, data-discarding, shares down to a
                  * Reduce, never the output of a Merge (docs/semantics.md §5.1 R0, R4; a share's data side), a
                  * Reduce dim itself (no weight reads it yet) */
  uint8_t n_pooled;
  int16_t height;
  uint16_t want_eq; /* bit w: the dim's size equals wanted input size w */
  syno_size_t size;
  syno_dim_t id; /* the dim, for rule R2's adjacency; 0 for a Share's data side not built yet */
  /* Reductions below the dim that a primitive other than a Share consumed
   * before any Share: no weight can ever read them directly, so they pool
   * (docs/semantics.md §5.7). Up to DI_MAX_POOLED of them; fewer only weakens the bound. */
  syno_dim_t pooled[DI_MAX_POOLED];
} dim_info_t;

/* A remembered reshape-group bound (distance.c): what is known of the
 * least total for one multiset of dims, lo <= least <= hi. */
typedef struct {
  uint64_t k1, k2;
  int16_t lo, hi;
} group_memo_t;
#define SPACE_GROUP_MEMO (1u << 18)

struct syno_space {
  syno_space_spec_t spec;
  syno_graph_t *g;
  node_t *nodes;
  uint32_t n_nodes;
  size_t cap_nodes;
  syno_dim_t *pool;
  size_t n_pool, cap_pool;
  syno_step_t *steps;
  size_t n_steps, cap_steps;
  final_t *finals;
  size_t n_finals, cap_finals;
  syno_table_t table;             /* node ids by interface (node_t.hash) */
  syno_dim_t iter[SYNO_MAX_RANK]; /* the output iterators */
  int n_want;
  syno_size_t want[SYNO_MAX_RANK]; /* input sizes the search must reach (fixed axes excluded) */
  syno_size_t want_numel;          /* their product */
  dim_info_t *dinfo;               /* per dim, for the shape distance (distance.c) */
  size_t cap_dinfo;
  group_memo_t *group_memo;              /* SPACE_GROUP_MEMO entries, direct-mapped (distance.c) */
  int want_axis[SYNO_MAX_RANK];          /* their input positions */
  double input_numel[SYNO_MAX_BINDINGS]; /* with the fixed axes (the FLOPs game's input size) */
  double rdom_numel[SYNO_MAX_BINDINGS];  /* without them (want_numel): the base of max_rdom_multiplier */
  double output_numel[SYNO_MAX_BINDINGS];
  double lift_saving[SYNO_MAX_BINDINGS]; /* what lifted axes may save a weight's stage (store.c) */
  syno_space_stats_t stats;
  double walk_bias;          /* random walks weight children by exp(-bias * distance) */
  double walk_fused_penalty; /* ... counting this many more steps when the fused FLOPs bound is over max */
  int part, parts;           /* random walks return only operators with hash % parts == part */
  size_t gen_start;          /* the first step of the node being expanded */
  syno_table_t fkeys;        /* the functions finalized so far (rule C4): 1 + their index in finals, by key */
};

/* A candidate child interface under construction. */
typedef struct {
  int n_dims, n_exp;
  syno_dim_t dims[SPACE_MAX_IFACE];
  syno_dim_t exp[SPACE_MAX_IFACE];
  int n_weights;
  int8_t usage[2][SYNO_MAX_VARS];
  int8_t count[SYNO_PRIM_KINDS];
} iface_t;

/* Whether d is a weight's axis: the weight-side input of a Share. */
static inline bool space_weight_axis(const syno_graph_t *g, syno_dim_t d) {
  const syno_prim_t *p = syno_graph_below(g, d);
  return p && p->kind == SYNO_PRIM_SHARE && syno_graph_dim(g, d)->slot == 1;
}

static inline node_t *space_node(const syno_space_t *s, uint32_t id) { return &s->nodes[id]; }
static inline const syno_dim_t *space_node_dims(const syno_space_t *s, const node_t *n) { return s->pool + n->off; }
static inline const syno_dim_t *space_node_exps(const syno_space_t *s, const node_t *n) {
  return s->pool + n->off + n->n_dims;
}

/* Interfaces under construction (iface.c). Starts a child interface as a
 * copy of node n's. */
void space_iface_from(const syno_space_t *s, const node_t *n, iface_t *f);
bool space_iface_remove(iface_t *f, syno_dim_t d);
bool space_iface_add(iface_t *f, syno_dim_t d);
bool space_iface_add_exp(iface_t *f, syno_dim_t d);
/* Adds |powers| of `size` (primary only when primary_only) to the usage;
 * false when some variable would exceed its occurrence limit. */
bool space_iface_use(const syno_space_t *s, iface_t *f, syno_size_t size, bool primary_only);

/* Calls keep on every size whose exponents lie in [lo, hi] per variable
 * (coefficients vary fastest) and stores those it keeps, up to max. */
int space_odometer(const syno_space_t *s, int lo[2][SYNO_MAX_VARS], int hi[2][SYNO_MAX_VARS],
                   bool (*keep)(const syno_space_t *s, syno_size_t x, void *ctx), void *ctx, syno_size_t *out, int max);
/* Sizes to try for a reduction or stride within the allowance (docs/semantics.md §1.5). */
int space_enum_sizes(const syno_space_t *s, const int8_t *usage, syno_size_t *out, int max);
/* Whether a size is valid for the space: legal, integral under every
 * binding, and within the per-size variable limits. */
bool space_size_valid(const syno_space_t *s, syno_size_t x);

/* The node store (store.c). Records a child step from `parent` to the node
 * with interface f (found or created), unless the depth would be exceeded
 * or the shape distance says it cannot finish. Returns -1 on error. */
/* The factor lifted input axes may save a weight's stage under binding b (store.c). */
double space_lift_saving(const syno_space_spec_t *spec, int b);
int space_add_child(syno_space_t *s, uint32_t parent, syno_stage_t stage, iface_t *f, syno_step_t step,
                    syno_error_t *err);
/* Creates the root, node 1, with interface f. */
int space_add_root(syno_space_t *s, iface_t *f, syno_error_t *err);
/* Appends a step to the node being expanded. */
int space_push_step(syno_space_t *s, syno_step_t st, syno_error_t *err);

/* What a failed expansion puts back (store.c): the nodes, the steps, the
 * finals and rule C4's table, the graph's dims and primitives, the counters.
 * The space is then as it was before, and the ids it hands out next are
 * those of a run that never failed. `failures` is syno_alloc_failures() at
 * the mark: the generators take a primitive the graph could not build for
 * an illegal one, so an allocation that failed since means the children are
 * incomplete even when nothing reported it. */
typedef struct {
  uint32_t n_nodes;
  size_t n_pool, n_steps, n_finals;
  syno_graph_mark_t graph;
  syno_space_stats_t stats;
  unsigned long failures;
} space_mark_t;
void space_mark(const syno_space_t *s, space_mark_t *m);
void space_rollback(syno_space_t *s, const space_mark_t *m);

/* Finalization (final.c): the FINALIZE steps of a Normal-stage node. */
int space_gen_finals(syno_space_t *s, uint32_t node, syno_error_t *err);

/* Rule U5 (unordered.c): whether a finished operator is canonical given the
 * input's unordered axes (sorted factors, no shift, no split-then-merge or
 * double reduction of one unordered source), checked top-down. */
bool space_unordered_canonical(const syno_space_t *s, const syno_operator_t *op);

/* Rule U4 (twins.c): replaces the interface f by its canonical renaming of
 * equal-domain reductions. */
int space_canon_twins(syno_space_t *s, iface_t *f, syno_error_t *err);

/* The renamings of the equal-domain reductions below some dims: the m
 * reductions `from` (class by class, each in multiplicity order) and
 * `total` permutations of them, the first the identity. */
typedef struct {
  int m, n_cls, total;
  syno_dim_t from[SYNO_MAX_REDUCTIONS];
  int size[SYNO_MAX_REDUCTIONS], radix[SYNO_MAX_REDUCTIONS]; /* per class: members, permutations */
} twins_t;
void space_twins_find(const syno_space_t *s, const syno_dim_t *dims, int n, twins_t *t);
/* Renaming k < t->total: from[i] becomes to[i]. */
void space_twins_renaming(const twins_t *t, int k, syno_dim_t *to);
/* A renaming as the leaf map it is: from[i] reads as to[i] (m pairs). */
typedef struct {
  int m;
  const syno_dim_t *from, *to;
} ren_t;

/* Rule C4 (fkey.c): the function key of a finalization, a hash of its
 * tensors' axis expressions with Shares dropped and the weights unordered;
 * equal for every spelling of one function. */
uint64_t space_final_key(const syno_space_t *s, const final_t *f);
/* Whether a function with f's key (in f->hash) and f's expressions was
 * finalized before; if not, records f as the next of the space's finals. */
int space_final_seen(syno_space_t *s, const final_t *f, bool *seen, syno_error_t *err);

/* The shape distance (distance.c). */
int space_dim_info(syno_space_t *s, syno_dim_t d, dim_info_t *out);
/* Makes room for the infos of dims up to d, so that space_dim_info of them
 * (and of the dims below them) cannot run out of memory. -1 when out of
 * memory. */
int space_dinfo_reserve(syno_space_t *s, syno_dim_t d);
/* The info of the data-side input of a Share of a dim with info d. */
dim_info_t space_info_shared(dim_info_t d);
/* The shape distance (syno_node_distance) of an interface given by the
 * infos of its dims; lets a generator test a child before building it.
 * `count` holds the primitives of each kind below the interface (for the
 * caps of max_count), `usage` the occurrences of each primary variable so
 * far (docs/semantics.md §1.5). `budget` is the number of steps the space still allows:
 * a bound above it may be reported as budget + 1, which prunes the same. */
int space_info_distance(const syno_space_t *s, syno_stage_t stage, const dim_info_t *info, int n_dims, int n_weights,
                        const int8_t *count, const int8_t *usage, int budget);
/* The same from the dims themselves; -1 when out of memory. */
int space_iface_distance(syno_space_t *s, syno_stage_t stage, const syno_dim_t *dims, int n_dims, int n_weights,
                         const int8_t *count, const int8_t *usage, int budget);

/* The normal-stage generators (gen.c). */
int space_gen_normal(syno_space_t *s, uint32_t node, syno_error_t *err);

static inline void space_count_rule(syno_space_t *s, syno_rule_t r) { s->stats.rule[r]++; }
static inline bool space_rule_on(const syno_space_t *s, syno_rule_t r) { return s->spec.opts.rule[r]; }

#endif
