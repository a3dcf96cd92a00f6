/* The staged fast path (see exec_chain.h).
 *
 * Planning works on sets of loop variables of the forward nest (bit v:
 * outer variable v, then the inner ones). reads[t] is the set tensor t's
 * index expressions use. For a stage sequence (0 = the early-reduction
 * stage without a weight, else a weight's tensor index):
 *     part_s   = run_s | reads[w_s]     (the last stage also takes every
 *                                        output variable and the
 *                                        reductions no tensor reads)
 *     result_s = part_s & (outer | reads of the later weights)
 *     run_s+1  = result_s,   run_0 = reads[0]
 * and a stage costs the product of the extents of part_s (spec 7.1's FLOPs
 * of a contraction tensor). */
#include <stdlib.h>
#include <string.h>

#include "exec_chain.h"
#include "exec_gemm.h"
#include "expr_eval.h"

#define MAX_STAGES SYNO_MAX_TENSORS /* the early reduction and up to three weights */

typedef uint64_t varset_t;

struct syno_chain {
  int n_stages;
  int weight[MAX_STAGES]; /* the stage's weight tensor, 0 = none */
  syno_gemm_plan_t *plan[MAX_STAGES];
  float *t[MAX_STAGES], *dt[MAX_STAGES]; /* result of stage s < n_stages-1, its gradient */
  const char *generic;
};

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

typedef struct {
  int nv, n_outer, nw;
  int64_t ext[SYNO_GEMM_MAX_VARS];
  varset_t reads[SYNO_MAX_TENSORS], outer, unread_inner;
  unsigned after[SYNO_MAX_TENSORS]; /* weights that must be contracted before weight t */
  /* the best sequence so far */
  int best_n, best_seq[MAX_STAGES];
  double best_flops;
} search_t;

static double set_numel(const search_t *s, varset_t m) {
  double x = 1;
  for (int i = 0; i < s->nv; i++)
    if (m >> i & 1) x *= (double)s->ext[i];
  return x;
}

/* The variable sets of each stage of sequence seq; returns the FLOPs. */
static double stage_sets(const search_t *s, const int *seq, int n, varset_t *part, varset_t *result) {
  varset_t run = s->reads[0];
  double flops = 0;
  for (int k = 0; k < n; k++) {
    varset_t later = s->outer;
    for (int j = k + 1; j < n; j++) later |= s->reads[seq[j]];
    part[k] = run | (seq[k] ? s->reads[seq[k]] : 0);
    if (k == n - 1) {
      part[k] |= s->outer | s->unread_inner;
      result[k] = s->outer;
    } else {
      result[k] = part[k] & later;
    }
    flops += set_numel(s, part[k]);
    run = result[k];
  }
  return flops;
}

static void consider(search_t *s, const int *seq, int n) {
  varset_t part[MAX_STAGES], result[MAX_STAGES];
  double f = stage_sets(s, seq, n, part, result);
  if (s->best_n == 0 || f < s->best_flops || (f == s->best_flops && n > s->best_n)) {
    s->best_n = n;
    s->best_flops = f;
    memcpy(s->best_seq, seq, sizeof(int) * (size_t)n);
  }
}

/* Every order of the weights the Shares allow, with and without the early stage. */
static void orders(search_t *s, int *seq, int n, int early, unsigned placed) {
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

int syno_chain_stages(const syno_chain_t *c) { return c->n_stages; }
const char *syno_chain_generic(const syno_chain_t *c) { return c->generic; }

void syno_chain_free(syno_chain_t *c) {
  if (!c) return;
  for (int k = 0; k < c->n_stages; k++) {
    syno_gemm_plan_free(c->plan[k]);
    free(c->t[k]);
    free(c->dt[k]);
  }
  free(c);
}

int syno_chain_new(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, int b, bool loops,
                   syno_chain_t **out, const char **reason, syno_error_t *err) {
  *out = NULL;
  *reason = NULL;
  if (fwd->target != -1) return syno_error_set(err, "chain: not a forward nest");
  if (fwd->n_guards > 0) {
    *reason = "the forward nest has guards";
    return 0;
  }
  int factor_of[SYNO_MAX_TENSORS];
  for (int t = 0; t < SYNO_MAX_TENSORS; t++) factor_of[t] = -1;
  for (int f = 0; f < fwd->n_factors; f++) {
    int t = fwd->factor[f].tensor;
    if (t < 0 || t >= op->n_tensors || factor_of[t] >= 0) {
      *reason = "a tensor is read by more than one factor";
      return 0;
    }
    factor_of[t] = f;
  }
  for (int t = 0; t < op->n_tensors; t++)
    if (factor_of[t] < 0) {
      *reason = "a tensor is not a factor of the forward nest";
      return 0;
    }

  search_t s;
  memset(&s, 0, sizeof s);
  s.n_outer = fwd->n_outer;
  s.nv = fwd->n_outer + fwd->n_inner;
  s.nw = op->n_tensors - 1;
  for (int i = 0; i < fwd->n_outer; i++)
    if (syno_size_eval(v, fwd->outer[i], b, &s.ext[i], err)) return -1;
  for (int i = 0; i < fwd->n_inner; i++)
    if (syno_size_eval(v, fwd->inner[i], b, &s.ext[fwd->n_outer + i], err)) return -1;
  for (int i = 0; i < s.nv; i++)
    if (s.ext[i] <= 0) {
      *reason = "an empty loop";
      return 0;
    }
  int64_t div = 1;
  if (syno_size_eval(v, fwd->divisor, b, &div, err)) return -1;
  varset_t any = 0;
  for (int t = 0; t < op->n_tensors; t++) {
    int cnt[SYNO_GEMM_MAX_VARS] = {0};
    const syno_access_t *a = &fwd->factor[factor_of[t]];
    for (int i = 0; i < a->rank; i++) syno_expr_count_vars(fwd, a->idx[i], cnt);
    for (int i = 0; i < s.nv; i++)
      if (cnt[i]) s.reads[t] |= (varset_t)1 << i;
    any |= s.reads[t];
  }
  for (int i = 0; i < s.nv; i++) {
    if (i < s.n_outer) s.outer |= (varset_t)1 << i;
    else if (!(any >> i & 1)) s.unread_inner |= (varset_t)1 << i;
  }
  /* Spec 7.2: the weight on a Share's R side comes after every tensor above its L side. */
  for (int k = 0; k < op->n_prims; k++) {
    const syno_prim_t *p = syno_graph_prim(op->g, op->prims[k]);
    if (p->kind != SYNO_PRIM_SHARE || p->weight < 1 || p->weight > s.nw) continue;
    s.after[p->weight] |= tensors_above(op, p->in[0]) & ~1u & ~(1u << p->weight);
  }
  int seq[MAX_STAGES];
  varset_t weights_read = 0, inner_only_x = 0;
  for (int t = 1; t < op->n_tensors; t++) weights_read |= s.reads[t];
  inner_only_x = s.reads[0] & ~s.outer & ~weights_read;
  if (s.nw > 0) orders(&s, seq, 0, 0, 0);
  if (s.nw > 0 && inner_only_x) {
    seq[0] = 0;
    orders(&s, seq, 1, 1, 0);
  }
  if (s.nw == 0) {
    seq[0] = 0;
    consider(&s, seq, 1);
  }
  if (s.best_n == 0) {
    *reason = "no order of the weights satisfies the Shares";
    return 0;
  }

  syno_chain_t *c = calloc(1, sizeof *c);
  syno_gemm_stage_t *st = calloc(1, sizeof *st);
  if (!c || !st) {
    free(c);
    free(st);
    return syno_error_set(err, "chain: out of memory");
  }
  varset_t part[MAX_STAGES], result[MAX_STAGES];
  stage_sets(&s, s.best_seq, s.best_n, part, result);
  int64_t prev_stride[SYNO_GEMM_MAX_VARS] = {0}, prev_numel = 0;
  for (int k = 0; k < s.best_n; k++) {
    int last = k == s.best_n - 1;
    memset(st, 0, sizeof *st);
    st->n = fwd;
    for (int i = 0; i < s.nv; i++) {
      st->in_stage[i] = part[k] >> i & 1;
      st->result[i] = result[k] >> i & 1;
    }
    if (k == 0) {
      st->a.acc = &fwd->factor[factor_of[0]];
    } else {
      memcpy(st->a.stride, prev_stride, sizeof prev_stride);
      st->a.numel = prev_numel;
    }
    c->weight[k] = s.best_seq[k];
    st->has_w = s.best_seq[k] > 0;
    if (st->has_w) st->w.acc = &fwd->factor[factor_of[s.best_seq[k]]];
    st->divisor = last ? div : 1;
    st->loop = loops;
    if (last) {
      int64_t so = 1;
      for (int i = fwd->n_outer - 1; i >= 0; i--) {
        st->res_stride[i] = so;
        so *= s.ext[i];
      }
      st->res_numel = so;
    } else {
      st->choose_layout = true;
    }
    c->n_stages = k + 1;
    if (syno_gemm_plan_new(st, v, b, &c->plan[k], err)) goto fail;
    if (!c->generic) c->generic = syno_gemm_plan_generic(c->plan[k]);
    if (!last) {
      c->t[k] = malloc(sizeof(float) * (size_t)st->res_numel);
      c->dt[k] = malloc(sizeof(float) * (size_t)st->res_numel);
      if (!c->t[k] || !c->dt[k]) {
        syno_error_set(err, "chain: out of memory (an intermediate of %lld floats)", (long long)st->res_numel);
        goto fail;
      }
      memcpy(prev_stride, st->res_stride, sizeof prev_stride);
      prev_numel = st->res_numel;
    }
  }
  free(st);
  *out = c;
  return 0;
fail:
  free(st);
  syno_chain_free(c);
  return -1;
}

static void run_forward(syno_chain_t *c, const float *const *tensors, int n, float *out) {
  for (int k = 0; k < n; k++) {
    const float *a = k ? c->t[k - 1] : tensors[0], *w = c->weight[k] ? tensors[c->weight[k]] : NULL;
    syno_gemm_forward(c->plan[k], a, w, k == c->n_stages - 1 ? out : c->t[k]);
  }
}

void syno_chain_forward(syno_chain_t *c, const float *const *tensors, float *out) {
  run_forward(c, tensors, c->n_stages, out);
}

void syno_chain_backward(syno_chain_t *c, const float *const *tensors, const float *grad_out, float *const *grads) {
  run_forward(c, tensors, c->n_stages - 1, NULL);
  const float *g = grad_out;
  for (int k = c->n_stages - 1; k >= 0; k--) {
    const float *a = k ? c->t[k - 1] : tensors[0], *w = c->weight[k] ? tensors[c->weight[k]] : NULL;
    float *da = k ? c->dt[k - 1] : grads[0], *dw = c->weight[k] ? grads[c->weight[k]] : NULL;
    syno_gemm_backward(c->plan[k], a, w, g, da, dw);
    if (k) g = c->dt[k - 1];
  }
}
