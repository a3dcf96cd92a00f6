/* syno/graph.h - dimensions, primitives and finished operators.
 *
 * An operator is a DAG whose edges are dimensions (loop iterators, tensor
 * axes) and whose vertices are primitives (docs/semantics.md §2-3). "Bottom" is
 * the output side, "top" the input side. Every primitive has output dims
 * (bottom) and input dims (top); graphs are built bottom-up, from the output
 * iterators and reductions toward the tensors, so a primitive is created from
 * its output dims and creates its input dims.
 *
 * Hash-consing: a syno_graph_t interns every leaf and every primitive, keyed
 * by (kind, parameters, output dims). Building the same sub-graph twice gives
 * the same ids, so dims and primitives compare by id. A dim is, in effect, a
 * description of everything below it.
 *
 * Ownership: the graph owns all dims and primitives (growing arrays); ids stay
 * valid until syno_graph_free (or a syno_graph_rollback past them). A
 * syno_operator_t is a plain value that refers into its graph. The graph
 * keeps its own copy of the variable table.
 *
 * Legality: each constructor checks what it can see locally (sizes that do
 * not divide, even or oversized unfold windows, distinct operands) and
 * returns an error instead of building. What needs the whole operator (every
 * dim used exactly once, weights plain, no data-discarding stride outside an
 * unfold window) is checked by syno_operator_build. */
#ifndef SYNO_GRAPH_H
#define SYNO_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "syno/hash.h"
#include "syno/size.h"

#define SYNO_MAX_TENSORS 4 /* the input plus up to three weights */
#define SYNO_MAX_REDUCTIONS 8
#define SYNO_MAX_OP_DIMS 96 /* dims in one operator, all kinds */
#define SYNO_MAX_OP_PRIMS 64

typedef uint32_t syno_dim_t; /* 0 is "no dim" */

typedef enum { SYNO_DIM_ITERATOR = 0, SYNO_DIM_REDUCE, SYNO_DIM_PRIM_INPUT } syno_dim_kind_t;

typedef enum { SYNO_REDUCE_SUM = 0, SYNO_REDUCE_MEAN } syno_reduce_type_t;

typedef enum {
  SYNO_PRIM_SPLIT = 0, /* in [A*B] -> out L [A], R [B]:  i = L*B + R          */
  SYNO_PRIM_MERGE,     /* in L [A], R [B] -> out [A*B]:  L = o / B, R = o % B  */
  SYNO_PRIM_SHIFT,     /* in [n] -> out [n]:             i = (o + 1) mod n     */
  SYNO_PRIM_STRIDE,    /* in [s*n] -> out [n]:           i = o * s             */
  SYNO_PRIM_UNFOLD,    /* in [N] -> out L [N], R [k]:    i = L + R - k/2, 0-padded */
  SYNO_PRIM_SHARE,     /* in L, R (weight w) -> out:     L = R = o             */
  SYNO_PRIM_EXPAND,    /* no input -> out:               broadcast             */
  SYNO_PRIM_KINDS
} syno_prim_kind_t;

typedef struct {
  syno_dim_kind_t kind;
  syno_size_t size;
  uint64_t hash;
  /* SYNO_DIM_ITERATOR: the output axis index and its `unordered` attribute.
   * SYNO_DIM_REDUCE: the reduction type and the multiplicity that tells
   * equal-domain reductions apart.
   * SYNO_DIM_PRIM_INPUT: the primitive this dim is an input of (the one
   * below it) and which input (0 = L or only, 1 = R). */
  int index;
  bool unordered;
  syno_reduce_type_t reduce;
  uint32_t prim;
  int slot;
} syno_dimension_t;

typedef struct {
  syno_prim_kind_t kind;
  syno_size_t param; /* Merge block B, Stride factor s */
  int weight;        /* Share: the weight tensor id, 1..SYNO_MAX_TENSORS-1 */
  int n_out, n_in;
  syno_dim_t out[2]; /* bottom side; Split/Unfold: L then R */
  syno_dim_t in[2];  /* top side;    Merge/Share: L then R */
  uint64_t hash;
} syno_prim_t;

/* Per-dim analysis (docs/semantics.md §2.5), a pure function of the dim and hence
 * computed once, when the dim is created, from the dims below it. */
typedef struct {
  int32_t left, right; /* 0: none; -1: a reduction; > 0: the id of a Merge */
} syno_neighbors_t;

typedef struct {
  int height;            /* longest chain of primitives below (a Reduce is 1) */
  uint8_t weights_below; /* bit w: a Share with weight w lies below */
  bool discarding;       /* some index value is never read (a Stride not absorbed by an Unfold) */
  bool ends_up_reduce;   /* every leaf below is a reduction */
  int unordered_scope;   /* 0: ordered; else the unordered source it descends from */
  /* The reshape neighbours of the dim in each contraction layer (layer 0 is
   * below every Share; a Share moves layer 0 to its weight's layer): two dims
   * are adjacent when they meet at the same Merge, or are both reductions. */
  syno_neighbors_t block[SYNO_MAX_TENSORS];
} syno_color_t;

typedef struct syno_graph syno_graph_t;

syno_graph_t *syno_graph_new(const syno_vars_t *vars);
void syno_graph_free(syno_graph_t *g);

/* A point in the graph's history. syno_graph_rollback forgets every dim and
 * primitive interned after the mark, so that a caller whose larger operation
 * failed half-way (out of memory) leaves the graph, and the ids it will hand
 * out next, as they were; nothing may still refer to the forgotten ones.
 * (A builder that fails leaves the graph as it was by itself.) */
typedef struct {
  uint32_t n_dims, n_prims;
} syno_graph_mark_t;
void syno_graph_mark(const syno_graph_t *g, syno_graph_mark_t *m);
void syno_graph_rollback(syno_graph_t *g, const syno_graph_mark_t *m);

const syno_vars_t *syno_graph_vars(const syno_graph_t *g);

const syno_dimension_t *syno_graph_dim(const syno_graph_t *g, syno_dim_t d);
const syno_prim_t *syno_graph_prim(const syno_graph_t *g, uint32_t p);
uint32_t syno_graph_num_dims(const syno_graph_t *g);
uint32_t syno_graph_num_prims(const syno_graph_t *g);
const syno_color_t *syno_graph_color(const syno_graph_t *g, syno_dim_t d);
/* True when a's right reshape neighbour is b's left one in some layer. */
bool syno_graph_adjacent(const syno_graph_t *g, syno_dim_t a, syno_dim_t b);
/* The primitive below a dim (the one consuming it), or NULL for a leaf. */
const syno_prim_t *syno_graph_below(const syno_graph_t *g, syno_dim_t d);

/* --- leaves --- */
int syno_graph_iterator(syno_graph_t *g, int index, syno_size_t size, bool unordered, syno_dim_t *out,
                        syno_error_t *err);
int syno_graph_reduce(syno_graph_t *g, syno_size_t domain, syno_reduce_type_t type, int multiplicity, syno_dim_t *out,
                      syno_error_t *err);

/* --- primitives, each built from its output dims --- */
int syno_graph_split(syno_graph_t *g, syno_dim_t major, syno_dim_t minor, syno_dim_t *in, syno_error_t *err);
int syno_graph_merge(syno_graph_t *g, syno_dim_t out, syno_size_t block, syno_dim_t *major, syno_dim_t *minor,
                     syno_error_t *err);
int syno_graph_shift(syno_graph_t *g, syno_dim_t out, syno_dim_t *in, syno_error_t *err);
int syno_graph_stride(syno_graph_t *g, syno_dim_t out, syno_size_t stride, syno_dim_t *in, syno_error_t *err);
int syno_graph_unfold(syno_graph_t *g, syno_dim_t pos, syno_dim_t window, syno_dim_t *in, syno_error_t *err);
/* data: the L input, continuing toward the input tensor; wdim: the R input,
 * an axis of weight `weight`. */
int syno_graph_share(syno_graph_t *g, syno_dim_t out, int weight, syno_dim_t *data, syno_dim_t *wdim,
                     syno_error_t *err);
/* Marks `out` as broadcast: no tensor provides it. */
int syno_graph_expand(syno_graph_t *g, syno_dim_t out, uint32_t *prim, syno_error_t *err);

/* The Contraction compound: one new weight `weight` sharing each dims[i];
 * where expand[i] is set, the data side of that share is broadcast (an
 * "outer" dim, e.g. C_out), otherwise it continues up (an "inner" dim, e.g.
 * C_in). data[i] receives each data-side dim (an Expand output when
 * expanded). */
int syno_graph_contract(syno_graph_t *g, int weight, int n, const syno_dim_t *dims, const bool *expand,
                        syno_dim_t *data, syno_error_t *err);

/* The dim the same primitives build over renamed leaves: d with each leaf
 * from[i] replaced by to[i] (n pairs), e.g. two equal-domain reductions
 * swapped. *out receives it (created if new) and *hash its structural hash;
 * with out NULL nothing is created and only the hash is computed. The
 * renaming must keep every size, so the new primitives are as legal as the
 * old ones and are not checked again. */
int syno_graph_relabel(syno_graph_t *g, syno_dim_t d, int n, const syno_dim_t *from, const syno_dim_t *to,
                       syno_dim_t *out, uint64_t *hash, syno_error_t *err);

/* --- finished operators --- */

typedef struct {
  syno_graph_t *g;
  int n_out;                     /* output rank */
  syno_dim_t out[SYNO_MAX_RANK]; /* output iterators, by index */
  int n_red;
  syno_dim_t red[SYNO_MAX_REDUCTIONS]; /* reductions: (type, domain, multiplicity) order */
  int n_tensors;                       /* 1 + number of weights */
  int rank[SYNO_MAX_TENSORS];
  syno_dim_t axes[SYNO_MAX_TENSORS][SYNO_MAX_RANK]; /* tensor 0: input axes; t >= 1: weight t's axes (Share R dims) */
  int n_exp;
  syno_dim_t exp[SYNO_MAX_RANK]; /* expanded (broadcast) dims */
  int n_prims;
  uint32_t prims[SYNO_MAX_OP_PRIMS]; /* top-down (data-flow) order */
  int n_dims;
  syno_dim_t dims[SYNO_MAX_OP_DIMS]; /* every dim of the operator */
} syno_operator_t;

/* Assembles and checks an operator from its top: the input tensor's axes (in
 * the user's order), the expanded dims, and each weight's axes (weight t's
 * axes must be the R inputs of Shares with weight id t). Checks that walking
 * down consumes every dim exactly once and ends at exactly the output
 * iterators 0..n_out-1 plus reductions with contiguous multiplicities, that
 * the input holds no weight axis, and that no tensor axis discards data. */
int syno_operator_build(syno_graph_t *g, int n_out, int in_rank, const syno_dim_t *in_axes, int n_exp,
                        const syno_dim_t *exp, int n_weights, const int *weight_rank,
                        const syno_dim_t (*weight_axes)[SYNO_MAX_RANK], syno_operator_t *op, syno_error_t *err);

/* Structural equality (same graph): same tensors, axes and expansions. */
bool syno_operator_eq(const syno_operator_t *a, const syno_operator_t *b);

/* Shapes of the output and of tensor t (symbolic). */
void syno_operator_output_shape(const syno_operator_t *op, syno_shape_t *s);
void syno_operator_tensor_shape(const syno_operator_t *op, int t, syno_shape_t *s);
/* Number of weight parameters (sum over weights) under binding b. */
int syno_operator_params(const syno_operator_t *op, int b, int64_t *params, syno_error_t *err);
int syno_operator_count(const syno_operator_t *op, syno_prim_kind_t kind);

/* --- the one-line text form ---
 *
 *   r0=sum(C_in) r1=sum(k) r2=sum(k); in[i0, share(r0,1), unfold(i2,share(r1,1)),
 *   unfold(i3,share(r2,1))] expand[share(i1,1)] w1[i1, r0, r1, r2]
 *
 * Reductions are declared first (`sum` or `mean` of a size); then each
 * tensor lists its axes as expressions built bottom-up from the output
 * iterators i<k> and reductions r<k>: split(major, minor), unfold(pos,
 * window), div(o, B) / mod(o, B) (the two inputs of a Merge with block B),
 * shift(o), stride(o, s), share(o, w) (the data side of a Share with weight
 * w). A weight w<t> lists the dims it shares: axis `e` of w<t> is the R side
 * of share(e, t). Printing then parsing gives the identical operator. */
int syno_operator_parse(syno_graph_t *g, const char *text, const syno_shape_t *input, const syno_shape_t *output,
                        syno_operator_t *op, syno_error_t *err);
int syno_operator_print(const syno_operator_t *op, char *buf, size_t n);

const char *syno_prim_name(syno_prim_kind_t k);

/* --- standard operators written in the primitives (docs/semantics.md §10) --- */

typedef struct {
  const char *name;    /* conv2d, grouped-conv2d, ... */
  const char *summary; /* one line for --help */
  const char *vars;    /* declaration, for syno_vars_declare */
  const char *input;   /* shape */
  const char *output;  /* shape */
  const char *text;    /* the operator's text form */
} syno_builtin_t;

/* NULL when there is no such builtin. */
const syno_builtin_t *syno_builtin_find(const char *name);
/* The i-th builtin, or NULL past the end. */
const syno_builtin_t *syno_builtin_at(int i);

#endif
