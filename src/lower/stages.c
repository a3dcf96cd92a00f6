/* The stage plan (see stages.h). */
#include "stages.h"

#include <string.h>

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
  for (int i = 0; i < s->nv; i++)
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

static void consider(lower_stages_t *s, const int *seq, int n) {
  syno_varset_t part[SYNO_MAX_STAGES], result[SYNO_MAX_STAGES];
  double f = stage_sets(s, seq, n, part, result);
  if (s->n_stages == 0 || f < s->size || (f == s->size && n > s->n_stages)) {
    s->n_stages = n;
    s->size = f;
    memcpy(s->seq, seq, sizeof(int) * (size_t)n);
    memcpy(s->part, part, sizeof(syno_varset_t) * (size_t)n);
    memcpy(s->result, result, sizeof(syno_varset_t) * (size_t)n);
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

int lower_stages_plan(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, int b, lower_stages_t *s,
                      const char **reason, syno_error_t *err) {
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
  return 0;
}

double lower_stages_flops(const lower_stages_t *s) {
  double flops = 0;
  for (int k = 0; k < s->n_stages; k++)
    flops += set_numel(s, s->part[k]) * ((s->seq[k] > 0) + (s->part[k] != s->result[k]));
  if (s->divisor != 1) flops += set_numel(s, s->outer);
  return flops;
}

int syno_forward_flops(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, int b, int64_t *flops,
                       syno_error_t *err) {
  lower_stages_t s;
  const char *reason;
  if (lower_stages_plan(op, fwd, v, b, &s, &reason, err)) return -1;
  if (reason) return syno_nest_flops(fwd, v, b, flops, err);
  double f = lower_stages_flops(&s);
  if (!(f < 0x1p62)) return syno_error_set(err, "FLOP count overflows 64 bits");
  *flops = (int64_t)f;
  return 0;
}
