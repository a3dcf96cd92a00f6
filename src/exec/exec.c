/* The operator executor (syno/exec.h). This file holds the compile step, the
 * dispatch, and the fallback strategy, which runs the lowered loop nests
 * through the reference interpreter: always correct, slow. The compile step
 * first tries the staged fast path (exec_chain.c: one GEMM stage per
 * contraction, exec_gemm.c), named "gemm" when it is a single stage and
 * "chain" otherwise; when it does not apply, the reason is kept for
 * syno_exec_fallback_reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec_chain.h"
#include "syno/exec.h"

struct syno_exec {
  syno_vars_t vars; /* a private copy: the binding index stays valid */
  int b;
  syno_operator_t op;
  syno_lowered_t low;
  syno_nest_t run; /* the forward nest the chain runs: low.forward with its blocks split */
  int64_t numel_out;
  int64_t numel[SYNO_MAX_TENSORS];
  int64_t flops;
  const char *strategy;
  const char *fallback_reason; /* NULL on a fast path */
  exec_chain_t *chain;
  uint64_t hold; /* syno_exec_hold_weights */
  char path[256]; /* syno_exec_path */
  int path_deployed; /* path names the last stage's deployed form (exec_chain_forward_affine) */
};

/* What ran each stage of the last forward (syno_exec_path). */
static void set_path(syno_exec_t *e) {
  size_t len = 0;
  e->path_deployed = exec_chain_path_deployed(e->chain);
  for (int k = 0; k < exec_chain_stages(e->chain) && len < sizeof e->path; k++)
    len += (size_t)snprintf(e->path + len, sizeof e->path - len, "%s%s", k ? "; " : "", exec_chain_path(e->chain, k));
}

int syno_exec_new(const syno_operator_t *op, const syno_vars_t *v, int b, syno_exec_t **out, syno_error_t *err) {
  *out = NULL;
  if (b < 0 || b >= v->nbind) return syno_error_set(err, "executor: no binding %d (the table has %d)", b, v->nbind);
  syno_exec_t *e = calloc(1, sizeof *e);
  if (!e) return syno_error_set(err, "executor: out of memory");
  e->vars = *v;
  e->b = b;
  e->op = *op;
  if (syno_lower(&e->op, &e->low, err)) goto fail;
  e->low.op = &e->op;
  if (syno_nest_target_numel(&e->low.forward, &e->vars, b, &e->numel_out, err)) goto fail;
  for (int t = 0; t < op->n_tensors; t++)
    if (syno_nest_target_numel(&e->low.backward[t], &e->vars, b, &e->numel[t], err)) goto fail;
  if (syno_forward_flops(&e->op, &e->low.forward, &e->vars, b, &e->flops, err)) goto fail;
  const char *reason = NULL;
  syno_nest_split_blocks(&e->low.forward, &e->vars, &e->run);
  if (exec_chain_new(&e->op, &e->run, &e->vars, b, 0, &e->chain, &reason, err)) goto fail;
  if (e->chain) {
    e->strategy = exec_chain_stages(e->chain) == 1 ? "gemm" : "chain";
    e->fallback_reason = exec_chain_generic(e->chain); /* a stage that runs as a loop, or NULL */
    set_path(e);
  } else {
    snprintf(e->path, sizeof e->path, "interpreter");
    e->strategy = "interp";
    e->fallback_reason = reason;
  }
  *out = e;
  return 0;
fail:
  free(e);
  return -1;
}

void syno_exec_free(syno_exec_t *e) {
  if (!e) return;
  exec_chain_free(e->chain);
  free(e);
}

int64_t syno_exec_numel(const syno_exec_t *e, int t) {
  if (t < 0) return e->numel_out;
  return t < e->op.n_tensors ? e->numel[t] : 0;
}

int syno_exec_num_tensors(const syno_exec_t *e) { return e->op.n_tensors; }
int64_t syno_exec_flops(const syno_exec_t *e) { return e->flops; }
const char *syno_exec_strategy(const syno_exec_t *e) { return e->strategy; }
const char *syno_exec_path(const syno_exec_t *e) { return e->path; }
const char *syno_exec_fallback_reason(const syno_exec_t *e) { return e->fallback_reason; }

void syno_exec_hold_weights(syno_exec_t *e, uint64_t id) { e->hold = id; }

int syno_exec_forward(syno_exec_t *e, const float *const *tensors, float *out, syno_error_t *err) {
  if (e->chain) {
    int rc = exec_chain_forward(e->chain, tensors, out, e->hold, err);
    if (e->path_deployed) set_path(e);
    return rc;
  }
  return syno_interp_nest(&e->low.forward, &e->vars, e->b, tensors, NULL, out, err);
}

int syno_exec_forward_affine(syno_exec_t *e, const float *const *tensors, float *out, int64_t C, int64_t inner,
                             const float *scale, const float *shift, int relu, syno_error_t *err) {
  if (!e->chain || !e->hold || C < 1 || inner < 1) return syno_exec_forward(e, tensors, out, err) ? -1 : 1;
  exec_conv_channels_t ch = {C, inner};
  int rc = exec_chain_forward_affine(e->chain, tensors, out, e->hold, &ch, scale, shift, relu, err);
  if (e->path_deployed != exec_chain_path_deployed(e->chain)) set_path(e);
  return rc;
}

int syno_exec_backward(syno_exec_t *e, const float *const *tensors, const float *grad_out, float *const *grads,
                       syno_error_t *err) {
  if (e->chain) return exec_chain_backward(e->chain, tensors, grad_out, grads, err);
  for (int t = 0; t < e->op.n_tensors; t++) {
    if (!grads[t]) continue;
    if (syno_interp_nest(&e->low.backward[t], &e->vars, e->b, tensors, grad_out, grads[t], err)) return -1;
  }
  return 0;
}
