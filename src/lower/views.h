/* views.h - a factor of a loop nest as tensor views (internal to src/lower;
 * the PyTorch code generator prints them).
 *
 * A factor reads its tensor at one index expression per axis. Read from the
 * outside in, each expression is a chain of "peels" around an affine rest:
 *     restrict(e, N)   zero padding: pad the axis, then read e
 *     mod(e0 + c, N)   a Shift (e0 in [0, N)): roll the axis by -c, read e0
 *     mod(e, B)        a tiled axis: repeat the axis, read e
 *     div(e, B)        each element repeated B times: read e
 * and the rest is sum_v coef_v * v + constant over the loop variables, with
 * each coefficient an integer times a size. After the peels, a tensor whose
 * axes are read at affine expressions is one strided view over the loop
 * variables (stride of v = sum over axes of coef_v * the axis's stride), so
 * a factor is: a few copies (pad, roll, repeat), then one strided view, and
 * a stage of the plan (stages.h) is one contraction of such views.
 *
 * A convolution is recognised from the views: a window is an axis read at
 * c + s*m + d*k, where m is a result variable no weight reads, k a variable
 * the weight reads and the stage sums, s > 0 and d != 0 (d < 0: a flipped
 * kernel) both made of coefficients only, m and k read by no other axis of
 * the input. */
#ifndef SYNO_VIEWS_H
#define SYNO_VIEWS_H

#include <stdbool.h>

#include "stages.h"
#include "syno/lower.h"

#define LOWER_MAX_PEELS 8
#define LOWER_MAX_CONSTS 8
#define LOWER_MAX_WINDOWS 3

typedef enum {
  LOWER_PEEL_PAD = 0, /* node: restrict(arg, size) */
  LOWER_PEEL_ROLL,    /* node: mod(arg + shift, size), arg in [0, size) */
  LOWER_PEEL_TILE,    /* node: mod(arg, size) */
  LOWER_PEEL_REPEAT   /* node: div(arg, size) */
} lower_peel_kind_t;

typedef struct {
  lower_peel_kind_t kind;
  int16_t node, arg;
  int16_t size;   /* the constant node of the restrict's extent, the modulus or the divisor */
  int16_t shift;  /* ROLL: the constant node c */
  bool shift_neg; /* ROLL: arg - c */
} lower_peel_t;

/* An integer times a size; imm == 0 when the variable is not read. */
typedef struct {
  int64_t imm;
  syno_size_t size;
} lower_coef_t;

typedef struct {
  int n_peels;
  lower_peel_t peel[LOWER_MAX_PEELS]; /* outermost first */
  int16_t rest;                       /* the node inside the peels */
  lower_coef_t coef[SYNO_NEST_MAX_VARS];
  int n_consts; /* the constant: sum of sign * node */
  int16_t cnode[LOWER_MAX_CONSTS];
  int8_t csign[LOWER_MAX_CONSTS];
} lower_axis_view_t;

/* The view of node `node` of nest n into *av: its peels, and the affine form of
 * what they leave (av->rest). *reason is NULL, or static text saying why the
 * rest is not affine (the peels are filled all the same). */
void lower_axis_view(const syno_nest_t *n, int node, lower_axis_view_t *av, const char **reason);

/* An axis of size D read at T*B + u, with u always in [0, B) and T not
 * affine, is two axes of sizes D/B and B read at T and u: the tensor is
 * reshaped, and T can be peeled. Writes a's axes so split into *out (and
 * their sizes); returns the number of axes split, or -1 when the rank would
 * exceed SYNO_MAX_RANK. */
int lower_access_split(const syno_nest_t *n, const syno_access_t *a, syno_access_t *out);

/* Two adjacent axes of an access (after lower_access_split) read at div(E, B) and mod(E, B) of
 * one node E, each under rolls of its own (a Shift of one part of a split axis), with the mod
 * axis of size B and each roll over its whole axis, are one axis read at E: roll each, put the
 * div axis outside (a transpose when the mod axis comes first) and merge the two. The window
 * an Unfold made of E is then a window of that one axis, which a convolution takes, where the
 * split left a diagonal of two repeated axes. */
typedef struct {
  int ax;                               /* the pair's first axis, numbered before this merge */
  bool swap;                            /* the mod axis is the first: transpose the pair */
  int n_rolls[2];                       /* the roll peels of axes ax and ax + 1 */
  lower_peel_t roll[2][LOWER_MAX_PEELS]; /* outermost first */
} lower_merge_t;

/* Finds the merges of access *a in order, at most max, rewriting *a to the merged axes (each
 * merged axis read at its E, of the product size). Returns their number. */
int lower_access_merge(const syno_nest_t *n, syno_access_t *a, lower_merge_t *m, int max);

/* A sum with a term that is not affine: node i is q*c + r, where q is a
 * div, mod or restrict reading loop variables and c a positive constant
 * product of sizes. Such an axis is two: one read at q (which peels) and one
 * at r, over the same memory. Sets *q and *c and returns the node of r
 * (appended to n), or -1 when i has no such form or n is full. */
int lower_sum_split(syno_nest_t *n, int i, int *q, lower_coef_t *c);

/* True when node i of n reads no loop variable. */
bool lower_node_is_const(const syno_nest_t *n, int i);
/* The sign of constant node i when it is known from its form (sizes are
 * positive): +1, -1, or 0 (zero or unknown). */
int lower_const_sign(const syno_nest_t *n, int i);

/* A stage that convolves the input with one weight. Roles of the loop
 * variables (bit sets as in stages.h):
 *   batch: read by the input and kept, not by the weight
 *   group: read by the input and the weight and kept
 *   out:   read by the weight and kept, not by the input
 *   chan:  read by the input and the weight and summed
 * and one window per spatial dimension: input axis `axis` read at
 * const + stride*m + dil*k. */
typedef struct {
  syno_varset_t batch, group, out, chan;
  int n_win;
  int axis[LOWER_MAX_WINDOWS];
  int m[LOWER_MAX_WINDOWS], k[LOWER_MAX_WINDOWS];
  lower_coef_t stride[LOWER_MAX_WINDOWS], dil[LOWER_MAX_WINDOWS];
} lower_conv_t;

/* Whether the first stage of plan p (a weight's) is a convolution of the
 * input, whose `rank` axes have the views av[]. Returns true and fills *c. */
bool lower_view_conv(const lower_stages_t *p, const lower_axis_view_t *av, int rank, lower_conv_t *c);

#endif
