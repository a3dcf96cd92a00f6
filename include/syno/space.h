/* syno/space.h - the search space: staged bottom-up synthesis with
 * canonicalization, shape distance and limits (docs/semantics.md §3-5).
 *
 * A search is defined by a syno_space_spec_t: the input and output shapes,
 * the variables with their occurrence limits and one or more bindings (one
 * per operator slot), and options. The space is a DAG of nodes. A node is an
 * interface - the current top frontier of a partial operator, built from the
 * output iterators upward - plus its stage: Root (the output iterators),
 * then Reduction nodes (only reductions are added, as a multiset), then
 * Normal nodes (one primitive or one Contraction per step). A Normal node
 * whose interface matches the input tensor and the weights can be finalized
 * into operators. Equal interfaces reached in different orders are one node.
 *
 * Every canonicalization rule of docs/semantics.md §5 is a named rule that can be switched
 * off for experiments; the space counts how many children each rule and the
 * shape distance removed.
 *
 * Ownership: a syno_space_t owns its graph and all its nodes. It is not
 * thread-safe; use one space per thread (dims are compared within a space,
 * operators across spaces by their text form). */
#ifndef SYNO_SPACE_H
#define SYNO_SPACE_H

#include <stdbool.h>
#include <stdint.h>

#include "syno/graph.h"
#include "syno/signature.h"

/* The canonicalization rules (docs/semantics.md §5), each with its name. */
#define SYNO_RULES(X)                                                                                                  \
  X(R0, "R0",                                                                                                          \
    "one spelling per reshape: no split of a split's major output, no merge of a merge's major input, no merge above " \
    "a split")                                                                                                         \
  X(R1, "R1", "a split must not undo a merge (adjacent reshape blocks)")                                               \
  X(R2, "R2", "no adjacent expansions")                                                                                \
  X(R3, "R3", "a split whose halves meet the same weight belongs on the weight")                                       \
  X(R4, "R4", "no merge that is then reduced")                                                                         \
  X(S1, "S1", "no shift of a reduced dim")                                                                             \
  X(S2, "S2", "no shift next to a share or another shift")                                                             \
  X(S3, "S3", "no shift next to a reshape with a large minor block")                                                   \
  X(S4, "S4", "no unfold of a shifted dim")                                                                            \
  X(T1, "T1", "no stride of a stride")                                                                                 \
  X(T2, "T2", "no stride of an unfold's position or of a weight axis")                                                 \
  X(T3, "T3", "no stride above a split")                                                                               \
  X(T4, "T4", "no merge with a block at least the stride above a stride")                                              \
  X(O1, "O1", "chained unfolds in ascending window order")                                                             \
  X(O2, "O2", "no unfold above a split")                                                                               \
  X(O3, "O3", "no merge with a block at least the window above an unfold")                                             \
  X(O4, "O4", "no unfold of a dim that is only reduced, no reduced window")                                            \
  X(C1, "C1", "views commute with contractions they do not touch")                                                     \
  X(C2, "C2", "independent contractions in canonical order")                                                           \
  X(C3, "C3", "a contraction is matmul-like: one outer and one inner share at least")                                  \
  X(C4, "C4", "weights commute: one spelling per function at finalization")                                            \
  X(U1, "U1", "factors of an unordered dim in sorted order")                                                           \
  X(U2, "U2", "no shift of an unordered dim")                                                                          \
  X(U3, "U3", "no split-then-merge or double reduction within one unordered source")                                   \
  X(U4, "U4", "equal-domain reductions are interchangeable: one renaming per interface")                               \
  X(U5, "U5", "at finalization, from the input's unordered axes: sorted factors, no shift, no split-then-merge")

typedef enum {
#define SYNO_RULE_ENUM(id, name, what) SYNO_RULE_##id,
  SYNO_RULES(SYNO_RULE_ENUM)
#undef SYNO_RULE_ENUM
      SYNO_RULE_COUNT
} syno_rule_t;

const char *syno_rule_name(syno_rule_t r);
const char *syno_rule_description(syno_rule_t r);
/* SYNO_RULE_COUNT when there is no such rule. */
syno_rule_t syno_rule_find(const char *name);

/* What else removes children, counted beside the rules. */
typedef enum {
  SYNO_PRUNE_DISTANCE = 0, /* the shape distance exceeds the remaining depth */
  SYNO_PRUNE_CHAIN,        /* a dim's chain of primitives is too long */
  SYNO_PRUNE_LIMIT,        /* a size, FLOPs, parameter or pooling limit */
  SYNO_PRUNE_ILLEGAL,      /* a constructor refused the primitive */
  SYNO_PRUNE_FLOPS,        /* the FLOPs lower bound of every completion exceeds max FLOPs */
  SYNO_PRUNE_COUNT
} syno_prune_t;

typedef struct {
  int depth;       /* steps (primitives, reductions, contractions) at most */
  int max_chain;   /* longest chain of primitives above an output dim */
  int max_tensors; /* input + weights */
  int max_reductions;
  double min_flops, max_flops;             /* forward FLOPs, summed over the bindings; 0 = no bound */
  double min_flops_ratio, max_flops_ratio; /* the same as ratios of the standard operator's FLOPs (the
                                            * spec's kind), for min_flops/max_flops left at 0; 0 = none */
  double max_params;                       /* on the first binding (the reported params), 0 = no bound */
  double max_pooling;                      /* product of weightless reduction domains */
  bool enable[SYNO_PRIM_KINDS];            /* Share means Contraction; Stride and Expand off by default */
  int max_count[SYNO_PRIM_KINDS];          /* primitives of each kind in one operator, -1 = any; a
                                            * Contraction counts one Share per shared dim
                                            * (docs/semantics.md §4.3) */
  bool rule[SYNO_RULE_COUNT];
  int max_enumerations; /* powers tried per variable when enumerating sizes */
  int max_vars_in_size, max_powers_in_size;
  double max_rdom_multiplier; /* total reduction domain / input numel without the fixed axes */
  double min_weight_params;   /* each weight, lower bound over bindings */
  double max_unfold_kernel, min_unfold_ratio, max_strided_dim, max_shift_pattern;
  double max_expansion_repeat, max_expansion_merge;
  double min_shared_weight_dim, max_shared_weight_dim; /* WeightsSharing dims */
  int max_finalizations;                               /* per node */
  bool prune_distance;                                 /* prune by shape distance (off only to test the bound) */
  bool group_distance; /* with it, the reshape-group part of the distance (off to compare) */
  bool prune_flops;    /* prune nodes whose FLOPs lower bound exceeds max_flops (off only to test it) */
} syno_space_opts_t;

typedef struct {
  syno_vars_t vars; /* with at least one binding */
  syno_shape_t input, output;
  int n_fixed; /* axes passed straight from input to output (the batch N) */
  int fixed_in[SYNO_MAX_FIXED], fixed_out[SYNO_MAX_FIXED];
  int kind; /* the preset's syno_sig_kind_t (what the operators replace), -1 for a spec of its own shapes */
  syno_space_opts_t opts;
} syno_space_spec_t;

/* The original's published defaults (docs/semantics.md §4.3), with Stride and Expand off. */
void syno_space_opts_default(syno_space_opts_t *o);

/* A preset: the named signature (syno/signature.h: "conv2d", "linear")
 * with the default options and the settings of the original's published
 * searches for it (conv2d: its ResNet-18 run, see docs/space.md). `bind` is a binding ("" for the preset's
 * defaults). */
int syno_space_preset(const char *name, const char *bind, syno_space_spec_t *spec, syno_error_t *err);
/* Reads a spec from a JSON file (see README); errors name the field. */
int syno_space_spec_load(const char *path, syno_space_spec_t *spec, syno_error_t *err);
int syno_space_spec_from_json(const char *json, syno_space_spec_t *spec, syno_error_t *err);
/* Reads per-kind caps from text such as "merge=1,split=3,shift=2" into
 * max_count (kinds not named are left as they are; -1 lifts a cap). */
int syno_space_caps_parse(const char *text, int max_count[SYNO_PRIM_KINDS], syno_error_t *err);
/* Checks the spec for contradictions (min FLOPs above max, depth < 1 ...). */
int syno_space_spec_check(const syno_space_spec_t *spec, syno_error_t *err);

/* The root is the Reduction node with no reductions yet. */
typedef enum { SYNO_STAGE_REDUCTION = 0, SYNO_STAGE_NORMAL } syno_stage_t;

/* A step from a node to a child. */
typedef enum {
  SYNO_STEP_REDUCE = 0, /* add a reduction */
  SYNO_STEP_BEGIN,      /* end the reduction stage (no primitive) */
  SYNO_STEP_PRIM,       /* one primitive */
  SYNO_STEP_CONTRACT,   /* one Contraction (a new weight) */
  SYNO_STEP_FINALIZE    /* a finished operator */
} syno_step_kind_t;

typedef struct {
  syno_step_kind_t kind;
  syno_prim_kind_t prim; /* SYNO_STEP_PRIM */
  uint32_t prim_id;      /* SYNO_STEP_PRIM: the primitive; SYNO_STEP_REDUCE: the reduce dim */
  uint32_t target;       /* child node id, or finalization index for FINALIZE */
} syno_step_t;

typedef struct {
  uint64_t nodes, finals;         /* created so far */
  uint64_t rule[SYNO_RULE_COUNT]; /* children removed by each rule */
  uint64_t prune[SYNO_PRUNE_COUNT];
} syno_space_stats_t;

typedef struct syno_space syno_space_t;

int syno_space_new(const syno_space_spec_t *spec, syno_space_t **out, syno_error_t *err);
void syno_space_free(syno_space_t *s);
syno_graph_t *syno_space_graph(syno_space_t *s);
const syno_space_spec_t *syno_space_spec(const syno_space_t *s);
const syno_space_stats_t *syno_space_stats(const syno_space_t *s);

uint32_t syno_space_root(const syno_space_t *s);
syno_stage_t syno_node_stage(const syno_space_t *s, uint32_t node);
int syno_node_depth(const syno_space_t *s, uint32_t node);
/* The interface dims of a node. */
int syno_node_dims(const syno_space_t *s, uint32_t node, const syno_dim_t **dims);
/* Lower bound on the steps still needed to finalize (shape distance). */
int syno_node_distance(syno_space_t *s, uint32_t node);
/* Lower bound on the forward FLOPs (all bindings) of every operator
 * finalized at or below the node. */
double syno_node_flops_bound(const syno_space_t *s, uint32_t node);

/* The node's children, generated on first use, in a deterministic order;
 * finalizations come last. Returns the count, or -1 on error. */
int syno_node_children(syno_space_t *s, uint32_t node, const syno_step_t **steps, syno_error_t *err);
/* Builds finalization `index` of a node into an operator. */
int syno_node_final(syno_space_t *s, uint32_t node, uint32_t index, syno_operator_t *op, syno_error_t *err);
/* Forward FLOPs (all bindings) and params (first binding) of a finalization. */
int syno_node_final_cost(syno_space_t *s, uint32_t node, uint32_t index, double *flops, double *params);

/* A random walk from the root to a finished operator. Each live child is
 * chosen with weight exp(-2 x its shape distance), so every operator can be
 * reached but walks lean toward finishing. A walk that reaches a node with
 * no live children marks it dead and backs up one step, up to max_walks
 * times; *walks receives 1 + the number of back-ups. With `distinct`, an operator once
 * returned is not returned again (sampling without replacement). Returns 1
 * with the node and finalization index when an operator was reached, 0 when
 * none was (the space may be exhausted), -1 on error. The rng is the one of
 * syno/train.h (PCG32). */
struct syno_rng;
/* Random walks of this space return only the operators whose structural
 * hash is `part` modulo `parts` (0 of 1, every operator, by default). An
 * operator hashes the same in every space, so `parts` spaces with parts
 * 0..parts-1 - one per thread - sample disjoint sets. */
int syno_space_set_partition(syno_space_t *s, int part, int parts, syno_error_t *err);
int syno_space_random_walk(syno_space_t *s, struct syno_rng *rng, int max_walks, bool distinct, uint32_t *node,
                           uint32_t *final, int *walks, syno_error_t *err);
/* The same walk from `start` instead of the root (a walk restarts from
 * start, with a new depth budget, after a few back-ups). When `taken` is not
 * NULL it receives the steps from start to the operator, the finalization
 * last (at most max_taken), and *n_taken their number. Returns 0 when no
 * operator was reached: syno_node_dead tells whether none is left below. */
int syno_space_walk(syno_space_t *s, uint32_t start, struct syno_rng *rng, int max_walks, bool distinct,
                    syno_step_t *taken, int max_taken, int *n_taken, uint32_t *node, uint32_t *final, int *walks,
                    syno_error_t *err);
/* Whether a node is known to lead to no operator (at the space's depth). */
bool syno_node_dead(const syno_space_t *s, uint32_t node);
/* Marks a finalization as returned, so that distinct walks skip it. */
void syno_node_final_take(syno_space_t *s, uint32_t node, uint32_t index);

/* One walk of syno_space_sample: the operator's text (malloc'ed; NULL when
 * the walk reached none), its FLOPs and params (syno_node_final_cost), the
 * depth of its node, and the walks taken (1 + back-ups). */
typedef struct {
  char *text;
  double flops, params;
  int depth, walks;
} syno_sample_t;
/* n random walks from the root in `threads` threads (1..64), one space each,
 * partitioned by structural hash (syno_space_set_partition) so that threads
 * never return the same operator. Walk i is seeded with stream i of `seed`,
 * so the result depends on the seed and the thread count, not on timing.
 * `out` has n entries; free their texts with syno_space_samples_free. stats (may be NULL)
 * receives the threads' space statistics summed: what the walks pruned, and why. */
int syno_space_sample(const syno_space_spec_t *spec, long n, int threads, uint64_t seed, int max_walks, bool distinct,
                      syno_sample_t *out, syno_space_stats_t *stats, syno_error_t *err);
void syno_space_samples_free(syno_sample_t *s, long n);
/* How many distinct operator texts the samples hold (-1: out of memory). */
long syno_space_samples_distinct(const syno_sample_t *s, long n);

/* Visits every node reachable from the root once (depth first, children in
 * order) and calls `final` for each finalization; stops early when it
 * returns non-zero. nodes_by_depth[d] and finals_by_depth[d] (each of
 * opts.depth + 1 entries, may be NULL) receive the counts per depth. */
typedef int (*syno_space_final_fn)(syno_space_t *s, uint32_t node, uint32_t index, void *ctx);
int syno_space_exhaust(syno_space_t *s, syno_space_final_fn final, void *ctx, uint64_t *nodes_by_depth,
                       uint64_t *finals_by_depth, syno_error_t *err);

/* A short text for a step ("split(C_in, k)", "contract{C_out+, C_in}", ...). */
int syno_step_print(syno_space_t *s, const syno_step_t *st, char *buf, size_t n);

#endif
