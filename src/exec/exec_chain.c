/* The staged fast path (see exec_chain.h): runs the stage plan of
 * stages.h, each stage a GEMM plan of exec_gemm.h. */
#include <stdlib.h>
#include <string.h>

#include "syno/alloc.h"
#include "../lower/expr_eval.h"
#include "../lower/stages.h"
#include "exec_chain.h"
#include "exec_conv.h"
#include "exec_gemm.h"

struct syno_chain {
  int n_stages;
  int weight[SYNO_MAX_STAGES]; /* the stage's weight tensor, 0 = none */
  exec_gemm_plan_t *plan[SYNO_MAX_STAGES];    /* the stage as gather + GEMM + scatter, or */
  exec_conv_plan_t *conv[SYNO_MAX_STAGES];    /* as a convolution on oneDNN */
  const char *path[SYNO_MAX_STAGES];          /* what runs it */
  float *t[SYNO_MAX_STAGES], *dt[SYNO_MAX_STAGES]; /* result of stage s < n_stages-1, its gradient */
  const char *generic;
  /* A plan with lifted axes (stages.h) runs on the nest with the lifted variables,
   * the input read at them, and each running tensor read through its axes. */
  syno_nest_t *xn;
  int n_lift;
  syno_access_t input, acc[SYNO_MAX_STAGES];
  /* Deployed inference (exec_chain_forward_affine): the last stage planned again with its
   * channels laid out for the fold, for the channel layout dep; tried once per layout. */
  exec_gemm_stage_t last;
  const syno_vars_t *v;
  int b;
  exec_conv_channels_t dep;
  exec_conv_plan_t *deploy;
  int deploy_tried, deploy_used; /* deploy_used: the last forward ran it */
};

int exec_chain_stages(const exec_chain_t *c) { return c->n_stages; }
const char *exec_chain_generic(const exec_chain_t *c) { return c->generic; }
int exec_chain_lifted(const exec_chain_t *c) { return c->n_lift; }

void exec_chain_free(exec_chain_t *c) {
  if (!c) return;
  for (int k = 0; k < c->n_stages; k++) {
    exec_gemm_plan_free(c->plan[k]);
    exec_conv_plan_free(c->conv[k]);
    free(c->t[k]);
    free(c->dt[k]);
  }
  exec_conv_plan_free(c->deploy);
  free(c->xn);
  free(c);
}

int exec_chain_new(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, int b, int flags,
                   exec_chain_t **out, const char **reason, syno_error_t *err) {
  const bool loops = flags & EXEC_LOOPS;
  *out = NULL;
  *reason = NULL;
  lower_stages_t s;
  if (lower_stages_plan_ex(op, fwd, v, b, LOWER_STAGES_LIFT, &s, reason, err)) return -1;
  if (*reason) return 0;
  exec_chain_t *c = calloc(1, sizeof *c);
  exec_gemm_stage_t *st = calloc(1, sizeof *st);
  if (!c || !st) {
    free(c);
    free(st);
    return syno_error_set(err, "chain: out of memory");
  }
  const syno_nest_t *n = fwd;
  int16_t var_node[LOWER_STAGES_MAX_VARS];
  if (s.n_lift > 0) {
    c->xn = malloc(sizeof *c->xn);
    if (!c->xn) {
      syno_error_set(err, "chain: out of memory");
      goto fail;
    }
    if (lower_stages_nest(&s, fwd, c->xn, var_node, &c->input)) {
      syno_error_set(err, "chain: the nest has no room for the lifted axes");
      goto fail;
    }
    n = c->xn;
    c->n_lift = s.n_lift;
  }
  const int nv = s.nv + s.n_lift;
  int64_t prev_stride[SYNO_NEST_MAX_VARS] = {0}, prev_numel = 0;
  for (int k = 0; k < s.n_stages; k++) {
    int last = k == s.n_stages - 1;
    memset(st, 0, sizeof *st);
    st->n = n;
    for (int i = 0; i < nv; i++) {
      st->in_stage[i] = s.part[k] >> i & 1;
      st->result[i] = s.result[k] >> i & 1;
    }
    if (k == 0) {
      st->a.acc = s.n_lift > 0 ? &c->input : &fwd->factor[s.factor_of[0]];
    } else if (lower_stages_unlifts(&s, k)) {
      /* The previous result, row-major over its variables in order (as laid out below),
       * read through the input's index of each axis lifted until this stage. */
      syno_access_t *a = &c->acc[k];
      a->tensor = 0;
      a->rank = 0;
      for (int i = 0; i < nv; i++)
        if (s.result[k - 1] >> i & 1) {
          a->idx[a->rank] = lower_stages_node(&s, fwd, var_node, k, i);
          a->dim[a->rank++] = syno_nest_extent(n, i);
        }
      st->a.acc = a;
    } else {
      memcpy(st->a.stride, prev_stride, sizeof prev_stride);
      st->a.numel = prev_numel;
    }
    c->weight[k] = s.seq[k] > 0 ? s.seq[k] : 0;
    st->has_w = s.seq[k] > 0;
    if (st->has_w) st->w.acc = &fwd->factor[s.factor_of[s.seq[k]]];
    st->divisor = last ? s.divisor : 1;
    st->loop = loops;
    if (last) {
      int64_t so = 1;
      for (int i = fwd->n_outer - 1; i >= 0; i--) {
        st->res_stride[i] = so;
        so *= s.ext[i];
      }
      st->res_numel = so;
    } else if (lower_stages_unlifts(&s, k + 1)) {
      int64_t so = 1; /* row-major over the result's variables, which the next stage reads */
      for (int i = nv - 1; i >= 0; i--)
        if (s.result[k] >> i & 1) {
          st->res_stride[i] = so;
          so *= s.ext[i];
        }
      st->res_numel = so;
    } else {
      st->choose_layout = true;
    }
    c->n_stages = k + 1;
    if (last) c->last = *st;
    const char *why = NULL;
    if (!(flags & EXEC_NO_LIBRARY) && !loops && exec_conv_plan_new(st, v, b, NULL, &c->conv[k], &why, err)) goto fail;
    if (c->conv[k]) {
      c->path[k] = exec_conv_plan_desc(c->conv[k]);
    } else {
      if (exec_gemm_plan_new(st, v, b, &c->plan[k], err)) goto fail;
      if (!c->generic) c->generic = exec_gemm_plan_generic(c->plan[k]);
      c->path[k] = exec_gemm_plan_generic(c->plan[k]) ? "loop" : "gather + sgemm";
    }
    if (!last) {
      c->t[k] = syno_malloc_array(st->res_numel, sizeof(float));
      c->dt[k] = syno_malloc_array(st->res_numel, sizeof(float));
      if (!c->t[k] || !c->dt[k]) {
        syno_error_set(err, "chain: out of memory (an intermediate of %lld floats)", (long long)st->res_numel);
        goto fail;
      }
      memcpy(prev_stride, st->res_stride, sizeof prev_stride);
      prev_numel = st->res_numel;
    }
  }
  free(st);
  c->v = v;
  c->b = b;
  *out = c;
  return 0;
fail:
  free(st);
  exec_chain_free(c);
  return -1;
}

int exec_chain_path_deployed(const exec_chain_t *c) { return c->deploy && c->deploy_used; }

const char *exec_chain_path(const exec_chain_t *c, int k) {
  if (k == c->n_stages - 1 && exec_chain_path_deployed(c)) return exec_conv_plan_desc(c->deploy);
  return k >= 0 && k < c->n_stages ? c->path[k] : NULL;
}

static int run_forward(exec_chain_t *c, const float *const *tensors, int n, float *out, uint64_t hold,
                       syno_error_t *err) {
  for (int k = 0; k < n; k++) {
    const float *a = k ? c->t[k - 1] : tensors[0], *w = c->weight[k] ? tensors[c->weight[k]] : NULL;
    float *res = k == c->n_stages - 1 ? out : c->t[k];
    if (c->conv[k]) {
      if (exec_conv_forward(c->conv[k], a, w, res, hold, err)) return -1;
    } else {
      exec_gemm_forward(c->plan[k], a, w, res, hold);
    }
  }
  return 0;
}

int exec_chain_forward(exec_chain_t *c, const float *const *tensors, float *out, uint64_t hold, syno_error_t *err) {
  c->deploy_used = 0;
  return run_forward(c, tensors, c->n_stages, out, hold, err);
}

int exec_chain_forward_affine(exec_chain_t *c, const float *const *tensors, float *out, uint64_t hold,
                              const exec_conv_channels_t *ch, const float *scale, const float *shift, int relu,
                              syno_error_t *err) {
  const int k = c->n_stages - 1;
  c->deploy_used = 0;
  if (!hold || !c->conv[k]) return run_forward(c, tensors, c->n_stages, out, hold, err) ? -1 : 1;
  if (!c->deploy_tried || c->dep.C != ch->C || c->dep.inner != ch->inner) {
    exec_conv_plan_free(c->deploy);
    c->deploy = NULL;
    c->dep = *ch;
    c->deploy_tried = 1;
    const char *why;
    exec_gemm_stage_t st = c->last;
    if (exec_conv_plan_new(&st, c->v, c->b, ch, &c->deploy, &why, err)) return -1;
  }
  if (!c->deploy) return run_forward(c, tensors, c->n_stages, out, hold, err) ? -1 : 1;
  if (run_forward(c, tensors, k, NULL, hold, err)) return -1;
  const float *a = k ? c->t[k - 1] : tensors[0], *w = c->weight[k] ? tensors[c->weight[k]] : NULL;
  if (exec_conv_forward_affine(c->deploy, a, w, out, hold, scale, shift, relu, err)) return -1;
  c->deploy_used = 1;
  return 0;
}

int exec_chain_backward(exec_chain_t *c, const float *const *tensors, const float *grad_out, float *const *grads,
                        syno_error_t *err) {
  if (run_forward(c, tensors, c->n_stages - 1, NULL, 0, err)) return -1;
  const float *g = grad_out;
  for (int k = c->n_stages - 1; k >= 0; k--) {
    const float *a = k ? c->t[k - 1] : tensors[0], *w = c->weight[k] ? tensors[c->weight[k]] : NULL;
    float *da = k ? c->dt[k - 1] : grads[0], *dw = c->weight[k] ? grads[c->weight[k]] : NULL;
    if (c->conv[k]) {
      if (exec_conv_backward(c->conv[k], a, w, g, da, dw, err)) return -1;
    } else {
      exec_gemm_backward(c->plan[k], a, w, g, da, dw);
    }
    if (k) g = c->dt[k - 1];
  }
  return 0;
}
