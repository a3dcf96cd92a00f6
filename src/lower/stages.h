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
 * more stages (docs/semantics.md §7.2).
 *
 * Lifted axes (LOWER_STAGES_LIFT, docs/semantics.md §7.3): an axis of the
 * input whose index reads variables no other input axis reads, fewer
 * elements than those variables span (an Unfold's position and window: H
 * values for H x k points), may be carried by the stages as one variable of
 * its own, lifted variable l = bit nv + l with the axis's extent, in place of
 * the variables lift_vars[l], until stage lift_until[l]: the first stage
 * whose weight reads one of them or that sums one. That stage reads the
 * running tensor's lifted axis through the input's own index expression of
 * the axis (lift_axis[l] of the input's access). When no stage needs them,
 * the axis may stay lifted to the end: a last stage without a weight (seq
 * -1, a "view") then reads the previous result through the expression and
 * writes the output, one gather per output element. Each combination is
 * priced like the others and the cheapest is taken; on a tie, the plan with
 * fewer lifted axes. */
#ifndef SYNO_STAGES_H
#define SYNO_STAGES_H

#include "syno/graph.h"
#include "syno/lower.h"

#define SYNO_MAX_STAGES (SYNO_MAX_TENSORS + 1) /* the early reduction, up to three weights, a view */
#define LOWER_STAGES_MAX_VARS (SYNO_NEST_MAX_VARS + SYNO_MAX_RANK) /* the nest's and the lifted */
#define LOWER_STAGE_VIEW (-1) /* seq[k]: the gather of lifted axes into the output */

enum { LOWER_STAGES_LIFT = 1 };

typedef uint64_t syno_varset_t;

typedef struct {
  int nv, n_outer, nw;
  int64_t ext[LOWER_STAGES_MAX_VARS]; /* the nest's variables, then the lifted ones */
  int64_t divisor;                 /* the Mean divisor under the binding */
  int factor_of[SYNO_MAX_TENSORS]; /* the nest factor that reads tensor t */
  syno_varset_t reads[SYNO_MAX_TENSORS], outer, unread_inner;
  unsigned after[SYNO_MAX_TENSORS]; /* weights that must be contracted before weight t */
  int n_stages;
  int seq[SYNO_MAX_STAGES]; /* 0: the early reduction, LOWER_STAGE_VIEW: the view, else a weight */
  syno_varset_t part[SYNO_MAX_STAGES], result[SYNO_MAX_STAGES];
  double size; /* sum of the stages' sizes */
  /* Lifted axes (bit nv + l of the sets is lifted variable l). */
  int n_lift;
  int lift_axis[SYNO_MAX_RANK];          /* the axis of the input's access */
  syno_varset_t lift_vars[SYNO_MAX_RANK]; /* the variables its index reads */
  int lift_until[SYNO_MAX_RANK];         /* the stage that reads it through the index */
  int n_used;                            /* the planner's: lifted axes of the plan so far */
} lower_stages_t;

/* Plans the stages of forward nest fwd of op under binding b. Returns 0 and
 * fills *p, or 0 with *reason set (static storage) when the nest cannot be
 * staged (guards, a tensor read by several factors or by none, an empty
 * loop); -1 on error. lower_stages_plan plans without lifted axes;
 * lower_stages_plan_ex with flags (LOWER_STAGES_LIFT) too. */
int lower_stages_plan(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, int b, lower_stages_t *p,
                      const char **reason, syno_error_t *err);
int lower_stages_plan_ex(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, int b, int flags,
                         lower_stages_t *p, const char **reason, syno_error_t *err);

/* The plan's FLOPs (multiply-add = 2): per point of a stage, one multiply
 * when it has a weight and one add when it sums a variable; a view one
 * per output element; one division per output element for a Mean. With
 * one stage this is syno_nest_flops. */
double lower_stages_flops(const lower_stages_t *p);

/* What a lifted plan runs on: fwd with one more inner variable per lifted
 * axis (lifted variable l is variable nv + l of *xn, its extent the axis's
 * size), and a node per variable (var_node[v], for v < nv + n_lift, a plain
 * OUTER/INNER node of *xn) so that an access can read a variable as an
 * axis. *input is the input's access at stage 0: its lifted axes read at
 * their lifted variables. Stage k >= 1 reads axis v of the running tensor
 * at lower_stages_node(p, fwd, var_node, k, v). -1 when xn would exceed the
 * nest's limits (the planner keeps within them). */
int lower_stages_nest(const lower_stages_t *p, const syno_nest_t *fwd, syno_nest_t *xn, int16_t *var_node,
                      syno_access_t *input);
int16_t lower_stages_node(const lower_stages_t *p, const syno_nest_t *fwd, const int16_t *var_node, int k, int v);
/* Whether stage k >= 1 reads some axis of the running tensor through an index expression. */
bool lower_stages_unlifts(const lower_stages_t *p, int k);

#endif
