/* stages.h - the stage plan of an operator's forward nest (docs/semantics.md §7),
 * internal to src/lower: which tensors are contracted in which order, and
 * the loop variables each stage iterates over. The chain executor
 * (exec_chain.c) runs this plan, and the operator's FLOPs are its cost
 * (syno_forward_flops), so the space's FLOPs limits count what is run.
 *
 * Sets are of loop variables of the forward nest (bit v: outer variable v,
 * then the inner ones). reads[t] is the set tensor t's index expressions
 * use. For a stage sequence (0 = the early-reduction stage without a
 * weight, else a weight's tensor index):
 *     part_s   = run_s | reads[w_s]     (the last stage also takes every
 *                                        output variable and the
 *                                        reductions no tensor reads)
 *     result_s = part_s & (outer | reads of the later weights)
 *     run_s+1  = result_s,   run_0 = reads[0]
 * A stage's size is the product of the extents of part_s (the numel of its
 * loops, docs/semantics.md §7.2). The plan is the order the Shares allow (a
 * weight whose Share's data side depends on tensor t comes after t) with
 * the smallest total size, with and without the early stage; a tie goes to
 * more stages (docs/semantics.md §7.2). */
#ifndef SYNO_STAGES_H
#define SYNO_STAGES_H

#include "syno/graph.h"
#include "syno/lower.h"

#define SYNO_MAX_STAGES SYNO_MAX_TENSORS /* the early reduction and up to three weights */

typedef uint64_t syno_varset_t;

typedef struct {
  int nv, n_outer, nw;
  int64_t ext[SYNO_NEST_MAX_VARS];
  int64_t divisor;                 /* the Mean divisor under the binding */
  int factor_of[SYNO_MAX_TENSORS]; /* the nest factor that reads tensor t */
  syno_varset_t reads[SYNO_MAX_TENSORS], outer, unread_inner;
  unsigned after[SYNO_MAX_TENSORS]; /* weights that must be contracted before weight t */
  int n_stages;
  int seq[SYNO_MAX_STAGES]; /* 0: the early reduction, else a weight */
  syno_varset_t part[SYNO_MAX_STAGES], result[SYNO_MAX_STAGES];
  double size; /* sum of the stages' sizes */
} lower_stages_t;

/* Plans the stages of forward nest fwd of op under binding b. Returns 0 and
 * fills *p, or 0 with *reason set (static storage) when the nest cannot be
 * staged (guards, a tensor read by several factors or by none, an empty
 * loop); -1 on error. */
int lower_stages_plan(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, int b, lower_stages_t *p,
                      const char **reason, syno_error_t *err);

/* The plan's FLOPs (multiply-add = 2): per point of a stage, one multiply
 * when it has a weight and one add when it sums a variable; one division
 * per output element for a Mean. With one stage this is syno_nest_flops. */
double lower_stages_flops(const lower_stages_t *p);

#endif
