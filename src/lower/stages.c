/* The stage plan (see stages.h). */
#include "stages.h"

#include <string.h>

#include "syno/alloc.h"

#include "expr_eval.h"

/* The tensors whose axes lie above dim d (bit t: tensor t). */
static unsigned tensors_above(const syno_operator_t *op, syno_dim_t d) {
  for (int t = 0; t < op->n_tensors; t++)
    for (int i = 0; i < op->rank[t]; i++)
      if (op->axes[t][i] == d) return 1u << t;
  for (int k = 0; k < op->n_prims; k++) {
    const syno_prim_t *p = syno_graph_prim(op->g, op->prims[k]);
    for (int o = 0; o < p->n_out; o++)
      if (p->out[o] == d) {
        unsigned m = 0;
        for (int j = 0; j < p->n_in; j++) m |= tensors_above(op, p->in[j]);
        return m;
      }
  }
  return 0; /* an expanded dim */
}

static double set_numel(const lower_stages_t *s, syno_varset_t m) {
  double x = 1;
  for (int i = 0; i < s->nv + s->n_lift; i++)
    if (m >> i & 1) x *= (double)s->ext[i];
  return x;
}

/* The variable sets of each stage of sequence seq; returns the total size. */
static double stage_sets(const lower_stages_t *s, const int *seq, int n, syno_varset_t *part, syno_varset_t *result) {
  syno_varset_t run = s->reads[0];
  double size = 0;
  for (int k = 0; k < n; k++) {
    syno_varset_t later = s->outer;
    for (int j = k + 1; j < n; j++) later |= s->reads[seq[j]];
    part[k] = run | (seq[k] ? s->reads[seq[k]] : 0);
    if (k == n - 1) {
      part[k] |= s->outer | s->unread_inner;
      result[k] = s->outer;
    } else {
      result[k] = part[k] & later;
    }
    size += set_numel(s, part[k]);
    run = result[k];
  }
  return size;
}

/* The plan of sequence seq with lifted candidate c carried until stage until[c]
 * (0: not lifted; n: to a view appended after the n stages): its sets, and its
 * size, or -1 when some candidate cannot be carried that far. */
static double lifted_sets(const lower_stages_t *s, const int *seq, int n, const int *until, int *seq_out, int *n_out,
                          syno_varset_t *part, syno_varset_t *result) {
  double size = stage_sets(s, seq, n, part, result);
  memcpy(seq_out, seq, sizeof(int) * (size_t)n);
  bool view = false;
  for (int c = 0; c < s->n_lift; c++) {
    if (!until[c]) continue;
    syno_varset_t w = s->lift_vars[c], u = (syno_varset_t)1 << (s->nv + c);
    for (int k = 0; k < n && k < until[c]; k++) {
      if ((part[k] & w) != w || (result[k] & w) != w) return -1;
      part[k] = (part[k] & ~w) | u;
      result[k] = (result[k] & ~w) | u;
    }
    view = view || until[c] == n;
  }
  *n_out = n;
  if (view) {
    seq_out[n] = LOWER_STAGE_VIEW;
    part[n] = result[n] = s->outer;
    *n_out = n + 1;
  }
  if (!view && s->n_lift == 0) return size;
  size = 0;
  for (int k = 0; k < *n_out; k++) size += set_numel(s, part[k]);
  return size;
}

static void consider(lower_stages_t *s, const int *seq, int n) {
  syno_varset_t part[SYNO_MAX_STAGES], result[SYNO_MAX_STAGES];
  int until[SYNO_MAX_RANK] = {0}, lim[SYNO_MAX_RANK] = {0}, seq2[SYNO_MAX_STAGES], n2;
  stage_sets(s, seq, n, part, result);
  /* How far each candidate can be carried: to the first stage that needs its variables. */
  unsigned free_to_end = 0;
  for (int c = 0; c < s->n_lift; c++) {
    syno_varset_t w = s->lift_vars[c];
    int k = 0;
    while (k < n && !((seq[k] > 0 && (s->reads[seq[k]] & w)) || (w & part[k] & ~result[k]))) k++;
    lim[c] = k;
    if (k == n) free_to_end |= 1u << c;
  }
  /* Every candidate that can be carried is; those no stage needs go to a view, or to the
   * last stage: every subset of them. */
  for (unsigned sub = free_to_end;; sub = (sub - 1) & free_to_end) {
    int n_used = 0;
    for (int c = 0; c < s->n_lift; c++) {
      until[c] = free_to_end >> c & 1 ? (sub >> c & 1 ? n : n - 1) : lim[c];
      n_used += until[c] > 0;
    }
    double f = lifted_sets(s, seq, n, until, seq2, &n2, part, result);
    if (f >= 0 && (s->n_stages == 0 || f < s->size ||
                   (f == s->size && (n_used < s->n_used || (n_used == s->n_used && n2 > s->n_stages))))) {
      s->n_stages = n2;
      s->size = f;
      s->n_used = n_used;
      memcpy(s->seq, seq2, sizeof(int) * (size_t)n2);
      memcpy(s->part, part, sizeof(syno_varset_t) * (size_t)n2);
      memcpy(s->result, result, sizeof(syno_varset_t) * (size_t)n2);
      memcpy(s->lift_until, until, sizeof until);
    }
    if (!sub) break;
  }
}

/* Every order of the weights the Shares allow, after `early` leading stages. */
static void orders(lower_stages_t *s, int *seq, int n, int early, unsigned placed) {
  if (n - early == s->nw) {
    consider(s, seq, n);
    return;
  }
  for (int w = 1; w <= s->nw; w++) {
    if (placed >> w & 1 || (s->after[w] & ~placed)) continue;
    seq[n] = w;
    orders(s, seq, n + 1, early, placed | 1u << w);
  }
}

/* The input's axes that may be lifted (see stages.h): the index reads variables no other
 * axis reads, and spans more points than the axis has elements. */
static int lift_candidates(const syno_nest_t *fwd, const syno_vars_t *v, int b, lower_stages_t *s,
                           syno_error_t *err) {
  const syno_access_t *a = &fwd->factor[s->factor_of[0]];
  syno_varset_t w[SYNO_MAX_RANK] = {0};
  for (int j = 0; j < a->rank; j++) {
    int cnt[SYNO_NEST_MAX_VARS] = {0};
    syno_expr_count_vars(fwd, a->idx[j], cnt);
    for (int i = 0; i < s->nv; i++)
      if (cnt[i]) w[j] |= (syno_varset_t)1 << i;
  }
  for (int j = 0; j < a->rank; j++) {
    syno_varset_t others = 0;
    for (int k = 0; k < a->rank; k++)
      if (k != j) others |= w[k];
    if (!w[j] || (w[j] & others)) continue;
    /* The executor's nest gets one inner variable per lifted axis. */
    if (s->nv + s->n_lift >= LOWER_STAGES_MAX_VARS || fwd->n_inner + s->n_lift >= SYNO_MAX_LOOPS) break;
    int64_t axis;
    if (syno_size_eval(v, a->dim[j], b, &axis, err)) return -1;
    if (!((double)axis < set_numel(s, w[j]))) continue;
    s->lift_axis[s->n_lift] = j;
    s->lift_vars[s->n_lift] = w[j];
    s->ext[s->nv + s->n_lift] = axis;
    s->n_lift++;
  }
  return 0;
}

/* Drops the candidates the plan does not carry, renumbering the lifted variables. */
static void compact_lifts(lower_stages_t *s) {
  int to = 0;
  for (int c = 0; c < s->n_lift; c++) {
    syno_varset_t from_bit = (syno_varset_t)1 << (s->nv + c), to_bit = (syno_varset_t)1 << (s->nv + to);
    if (!s->lift_until[c]) continue;
    for (int k = 0; k < s->n_stages; k++) {
      if (s->part[k] & from_bit) s->part[k] = (s->part[k] & ~from_bit) | to_bit;
      if (s->result[k] & from_bit) s->result[k] = (s->result[k] & ~from_bit) | to_bit;
    }
    s->lift_axis[to] = s->lift_axis[c];
    s->lift_vars[to] = s->lift_vars[c];
    s->lift_until[to] = s->lift_until[c];
    s->ext[s->nv + to] = s->ext[s->nv + c];
    to++;
  }
  for (int c = to; c < s->n_lift; c++) {
    s->lift_axis[c] = s->lift_until[c] = 0;
    s->lift_vars[c] = 0;
    s->ext[s->nv + c] = 0;
  }
  s->n_lift = to;
}

int lower_stages_plan(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, int b, lower_stages_t *s,
                      const char **reason, syno_error_t *err) {
  return lower_stages_plan_ex(op, fwd, v, b, 0, s, reason, err);
}

int lower_stages_plan_ex(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, int b, int flags,
                         lower_stages_t *s, const char **reason, syno_error_t *err) {
  memset(s, 0, sizeof *s);
  *reason = NULL;
  if (fwd->target != -1) return syno_error_set(err, "stages: not a forward nest");
  if (fwd->n_guards > 0) {
    *reason = "the forward nest has guards";
    return 0;
  }
  for (int t = 0; t < SYNO_MAX_TENSORS; t++) s->factor_of[t] = -1;
  for (int f = 0; f < fwd->n_factors; f++) {
    int t = fwd->factor[f].tensor;
    if (t < 0 || t >= op->n_tensors || s->factor_of[t] >= 0) {
      *reason = "a tensor is read by more than one factor";
      return 0;
    }
    s->factor_of[t] = f;
  }
  for (int t = 0; t < op->n_tensors; t++)
    if (s->factor_of[t] < 0) {
      *reason = "a tensor is not a factor of the forward nest";
      return 0;
    }
  s->n_outer = fwd->n_outer;
  s->nv = fwd->n_outer + fwd->n_inner;
  s->nw = op->n_tensors - 1;
  for (int i = 0; i < fwd->n_outer; i++)
    if (syno_size_eval(v, fwd->outer[i], b, &s->ext[i], err)) return -1;
  for (int i = 0; i < fwd->n_inner; i++)
    if (syno_size_eval(v, fwd->inner[i], b, &s->ext[fwd->n_outer + i], err)) return -1;
  for (int i = 0; i < s->nv; i++)
    if (s->ext[i] <= 0) {
      *reason = "an empty loop";
      return 0;
    }
  s->divisor = 1;
  if (syno_size_eval(v, fwd->divisor, b, &s->divisor, err)) return -1;
  syno_varset_t any = 0;
  for (int t = 0; t < op->n_tensors; t++) {
    int cnt[SYNO_NEST_MAX_VARS] = {0};
    const syno_access_t *a = &fwd->factor[s->factor_of[t]];
    for (int i = 0; i < a->rank; i++) syno_expr_count_vars(fwd, a->idx[i], cnt);
    for (int i = 0; i < s->nv; i++)
      if (cnt[i]) s->reads[t] |= (syno_varset_t)1 << i;
    any |= s->reads[t];
  }
  for (int i = 0; i < s->nv; i++) {
    if (i < s->n_outer)
      s->outer |= (syno_varset_t)1 << i;
    else if (!(any >> i & 1))
      s->unread_inner |= (syno_varset_t)1 << i;
  }
  /* The weight on a Share's R side comes after every tensor above its L side
   * (docs/semantics.md §7.2). */
  for (int k = 0; k < op->n_prims; k++) {
    const syno_prim_t *p = syno_graph_prim(op->g, op->prims[k]);
    if (p->kind != SYNO_PRIM_SHARE || p->weight < 1 || p->weight > s->nw) continue;
    s->after[p->weight] |= tensors_above(op, p->in[0]) & ~1u & ~(1u << p->weight);
  }
  if (flags & LOWER_STAGES_LIFT && lift_candidates(fwd, v, b, s, err)) return -1;
  int seq[SYNO_MAX_STAGES];
  syno_varset_t weights_read = 0;
  for (int t = 1; t < op->n_tensors; t++) weights_read |= s->reads[t];
  syno_varset_t inner_only_x = s->reads[0] & ~s->outer & ~weights_read;
  if (s->nw > 0) orders(s, seq, 0, 0, 0);
  if (s->nw > 0 && inner_only_x) {
    seq[0] = 0;
    orders(s, seq, 1, 1, 0);
  }
  if (s->nw == 0) {
    seq[0] = 0;
    consider(s, seq, 1);
  }
  if (s->n_stages == 0) *reason = "no order of the weights satisfies the Shares";
  compact_lifts(s);
  return 0;
}

double lower_stages_flops(const lower_stages_t *s) {
  double flops = 0;
  for (int k = 0; k < s->n_stages; k++)
    flops += set_numel(s, s->part[k]) *
             (s->seq[k] == LOWER_STAGE_VIEW ? 1 : (s->seq[k] > 0) + (s->part[k] != s->result[k]));
  if (s->divisor != 1) flops += set_numel(s, s->outer);
  return flops;
}

int syno_forward_flops(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, int b, int64_t *flops,
                       syno_error_t *err) {
  lower_stages_t s;
  const char *reason;
  syno_nest_t *run = syno_malloc(sizeof *run);
  if (!run) return syno_error_set(err, "out of memory");
  /* The nest the executor runs: its blocks split (syno_nest_split_blocks). */
  syno_nest_split_blocks(fwd, v, run);
  int rc = lower_stages_plan_ex(op, run, v, b, LOWER_STAGES_LIFT, &s, &reason, err);
  if (!rc && reason) rc = syno_nest_flops(fwd, v, b, flops, err);
  syno_free(run);
  if (rc || reason) return rc;
  double f = lower_stages_flops(&s);
  if (!(f < 0x1p62)) return syno_error_set(err, "FLOP count overflows 64 bits");
  *flops = (int64_t)f;
  return 0;
}

int lower_stages_nest(const lower_stages_t *p, const syno_nest_t *fwd, syno_nest_t *xn, int16_t *var_node,
                      syno_access_t *input) {
  *xn = *fwd;
  const syno_access_t *a = &fwd->factor[p->factor_of[0]];
  if (fwd->n_inner + p->n_lift > SYNO_MAX_LOOPS) return -1;
  for (int l = 0; l < p->n_lift; l++) xn->inner[xn->n_inner + l] = a->dim[p->lift_axis[l]];
  xn->n_inner += p->n_lift;
  for (int v = 0; v < p->nv + p->n_lift; v++) {
    syno_expr_t x = v < p->n_outer ? (syno_expr_t){.kind = SYNO_EXPR_OUTER, .var = v}
                                   : (syno_expr_t){.kind = SYNO_EXPR_INNER, .var = v - p->n_outer};
    var_node[v] = -1;
    for (int i = 0; i < xn->n_nodes && var_node[v] < 0; i++)
      if (xn->node[i].kind == x.kind && xn->node[i].var == x.var) var_node[v] = (int16_t)i;
    if (var_node[v] >= 0) continue;
    if (xn->n_nodes >= SYNO_MAX_NODES) return -1;
    xn->node[xn->n_nodes] = x;
    var_node[v] = (int16_t)xn->n_nodes++;
  }
  *input = *a;
  for (int l = 0; l < p->n_lift; l++) input->idx[p->lift_axis[l]] = var_node[p->nv + l];
  return 0;
}

int16_t lower_stages_node(const lower_stages_t *p, const syno_nest_t *fwd, const int16_t *var_node, int k, int v) {
  int l = v - p->nv;
  if (l >= 0 && l < p->n_lift && p->lift_until[l] == k) return fwd->factor[p->factor_of[0]].idx[p->lift_axis[l]];
  return var_node[v];
}

bool lower_stages_unlifts(const lower_stages_t *p, int k) {
  for (int l = 0; l < p->n_lift; l++)
    if (p->lift_until[l] == k) return true;
  return false;
}
