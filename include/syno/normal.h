/* syno/normal.h - a normal form of lowered operators, to find operators that
 * compute the same function although their graphs differ (duplicates that
 * canonicalization of the search space missed).
 *
 * The normal form of a loop nest is one line of text that describes the nest
 * completely, after rewriting it in ways that cannot change what it computes:
 *
 *   - Index expressions become polynomials over atoms: + and - are flattened,
 *     products distributed, like terms collected, integer constants folded,
 *     size monomials multiplied out; terms and factors are sorted. Floor
 *     division and Euclidean remainder stay opaque atoms `div(p, q)` and
 *     `mod(p, q)` over normalized operands (folded only when both operands
 *     are integers, or the divisor is 1 (mod by -1 too)).
 *   - `restrict(e, 0, N)` is hoisted out of its expression: it contributes
 *     the value e and the range condition 0 <= e < N on the whole point
 *     (an out-of-range restrict anywhere zeroes the product, exactly like a
 *     failed guard). Range conditions, divisibility and equality guards form
 *     one sorted, deduplicated set.
 *   - Reduction loops are renamed r0, r1, ... canonically (colour
 *     refinement plus individualization, below), so their declaration order
 *     and numbering do not matter.
 *   - Weights (factors with tensor >= 1) are learned, so their layout and
 *     numbering are free: each weight's axes are sorted by their text, and
 *     the weights by theirs; they print as `w[...]` with no number.
 *   - Fixed: the outer loops i0.. (the target's axes), the axis order of the
 *     input in[...] and of grad_out[...], the divisor.
 *
 * Example, conv2d:
 *   out[N, C_out, H, W] = sum(r0: C_in, r1: k, r2: k)
 *   if(0 <= i2 + r1 - div(k, 2) < H; 0 <= i3 + r2 - div(k, 2) < W)
 *   in[i0: N, r0: C_in, i2 + r1 - div(k, 2): H, i3 + r2 - div(k, 2): W] *
 *   w[i1: C_out, r0: C_in, r1: k, r2: k]                    (one line)
 *
 * Soundness (equal forms never mean different functions): the form is an
 * unambiguous description of a nest N' obtained from N by value-preserving
 * rewrites only - polynomial identities over the integers, hoisting a
 * restrict into a condition, reordering a conjunction, renaming bound
 * summation variables bijectively (extents travel with them), and relaying
 * out / renumbering weights. Loop names i<k>, r<k> are reserved words of the
 * variable table, so they cannot be confused with sizes. Two nests with one
 * form therefore both equal the same N' and compute the same function of the
 * input (and grad_out), up to a relayout of the weights that
 * syno_nest_normal_form_map reports. The search for canonical names only
 * decides which of these equivalent descriptions is printed; however it
 * chooses, the printed nest is equivalent, so soundness never rests on it.
 *
 * Incompleteness (equal functions may get different forms):
 *   - div/mod are opaque: (i*B + j) / B is not simplified to i, nor are
 *     nested div/mod chains, nor restrict ranges implied by others.
 *   - Conditions are compared as written: a guard implied by the others,
 *     or two ranges describing one set, are not merged; a condition that
 *     always holds is kept.
 *   - Outer loops are never permuted, the input's axes never reordered, and
 *     the axes of a weight-gradient target are fixed.
 *   - Equalities that need the loop extents (i mod N = i for i < N,
 *     padding that never triggers) or particular bindings (s = t) are missed.
 *   - A function factored differently into weights (one weight vs the
 *     product of two) is a different nest.
 *   - The canonical naming explores at most SYNO_NORMAL_MAX_LEAVES
 *     individualization leaves (symmetric loops are pruned by checking swaps
 *     against the first leaf); past that, two equivalent nests can, very
 *     rarely, print differently.
 *
 * Floating-point summation order is ignored: equal forms mean equal as
 * exact sums.
 *
 * Cost: polynomial in the nest's size, except the tie-breaking search,
 * which is bounded by SYNO_NORMAL_MAX_LEAVES renderings; the standard
 * operators take about 10 microseconds per forward nest. Nothing is kept between
 * calls; the functions are reentrant. */
#ifndef SYNO_NORMAL_H
#define SYNO_NORMAL_H

#include <stddef.h>

#include "syno/lower.h"

#define SYNO_NORMAL_MAX_LEAVES 256

/* How the normal form relates to the nest it came from. Canonical factor p
 * (in printed order) is the nest's factor[factor[p]]; its canonical axis j is
 * that factor's axis axis[p][j] (the identity for in and grad_out);
 * canonical reduction loop r<k> is the nest's ri_<inner[k]>. */
typedef struct {
  int n_factors;
  int factor[SYNO_MAX_TENSORS];
  int axis[SYNO_MAX_TENSORS][SYNO_MAX_RANK];
  int n_inner;
  int inner[SYNO_MAX_LOOPS];
} syno_normal_map_t;

/* Writes the normal form of nest n (sizes printed with v's names) into buf
 * and returns its length. With buf == NULL and size == 0 it only returns
 * the length. A form that does not fit is an error, never truncated, so
 * comparing two buffers is always meaningful. Fails (-1, err filled) on a
 * malformed nest (node index out of range or not below its parent, a
 * variable with no loop, a tensor read by two factors), on coefficient
 * overflow, and on running out of memory. */
int syno_nest_normal_form(const syno_nest_t *n, const syno_vars_t *v, char *buf, size_t size, syno_error_t *err);

/* The same, also filling map (may be NULL). */
int syno_nest_normal_form_map(const syno_nest_t *n, const syno_vars_t *v, char *buf, size_t size,
                              syno_normal_map_t *map, syno_error_t *err);

/* The normal form of the operator's forward nest (syno_lower_forward),
 * sizes named by the operator's graph. */
int syno_operator_normal_form(const syno_operator_t *op, char *buf, size_t size, syno_error_t *err);

/* The normal form up to a permutation of the input's unordered axes
 * (unordered[j] for input axis j, e.g. C_in: the layer before absorbs a
 * permutation of its channels) and a bijective relayout of each weight.
 * Two rewrites, each checked point by point under every binding, come
 * before syno_nest_normal_form:
 *   - a weight whose axes' indices, together, are a bijection of the loop
 *     variables they depend on onto the weight's index space is read as
 *     the weight indexed by those variables (a relayout: weights are
 *     learned);
 *   - an unordered input axis whose index is a bijection of the variables
 *     it depends on onto the axis is given a mixed-radix index over those
 *     variables, in the order (all are tried) whose form is least.
 * The variables are those the indices depend on (i in (i*C + r) mod C is
 * left out); a variable read only as div(v, q) (a Merge's major half)
 * counts as that quotient. Equal forms mean the same function up to a
 * permutation of those input axes (each new index is the old one followed
 * by a fixed permutation) and a relayout of the weights. What this adds to
 * syno_nest_normal_form: two numberings of one unordered axis (its factors
 * in either order, a roll, a split merged back in another order) get one
 * form, and so do weights read through any bijection. It misses an index
 * read through a zero-padded window or through other digits (mod(v, q)
 * beside div(v, q), a div of a mod), two loops that could be one (two
 * reductions read only together), and indices over more than six
 * variables, 5040 orders in all, or 2^22 points. buf must hold the form
 * (size > 0); returns its length, or -1 with err filled. */
int syno_nest_normal_form_unordered(const syno_nest_t *n, const syno_vars_t *v, const bool *unordered, char *buf,
                                    size_t size, syno_error_t *err);
int syno_operator_normal_form_unordered(const syno_operator_t *op, const bool *unordered, char *buf, size_t size,
                                        syno_error_t *err);

#endif
