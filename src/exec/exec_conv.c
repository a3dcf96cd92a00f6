/* A convolution stage on oneDNN (see exec_conv.h).
 *
 * Planning substitutes each window's restrict node by its output variable m
 * in a private copy of the nest: evaluating the input's expressions with m
 * set to a position p of the window's axis then gives the input offset the
 * convolution's source reads at p, which is how the source table is built
 * (one entry per source element; -1 where another restrict is out of range,
 * i.e. zero padding). A window restrict(c + s*m + d*k, R) becomes source
 * positions lo..R-1 with lo = max(c, 0), left padding max(-c, 0), and the
 * source cut where no output reaches, so oneDNN's right padding is >= 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/alloc.h"
#include "../lower/expr_eval.h"
#include "exec_conv.h"
#include "exec_runs.h"
#include "syno/dnnl.h"

#define MAX_TABLE (INT64_C(1) << 26) /* entries of one offset table, as exec_gemm.c */
#define MAXAX (SYNO_NEST_MAX_VARS + SYNO_DNNL_MAX_SP)

/* A row-major list of axes, each setting one loop variable (var < 0: none) to off + mul * digit. */
typedef struct {
  int n;
  int var[MAXAX];
  int64_t ext[MAXAX], off[MAXAX], mul[MAXAX];
} axes_t;

static void axes_add(axes_t *x, int var, int64_t ext, int64_t off, int64_t mul) {
  x->var[x->n] = var;
  x->ext[x->n] = ext;
  x->off[x->n] = off;
  x->mul[x->n] = mul;
  x->n++;
}

static int64_t axes_total(const axes_t *x) {
  int64_t t = 1;
  for (int i = 0; i < x->n; i++) t *= x->ext[i];
  return t;
}

static void axes_decode(const axes_t *x, int64_t idx, int64_t *val) {
  for (int i = x->n - 1; i >= 0; i--) {
    int64_t d = idx % x->ext[i];
    idx /= x->ext[i];
    if (x->var[i] >= 0) val[x->var[i]] = x->off[i] + x->mul[i] * d;
  }
}

struct exec_conv_plan {
  syno_dnnl_conv_t *dnnl;
  syno_dnnl_geo_t geo;
  int64_t nsrc, nwei, ndst, numel_a, numel_w, numel_c;
  int32_t *tsrc; /* [nsrc] input offsets (-1: zero); NULL: the input is the source, from src_base */
  int64_t src_base;
  int32_t *twei; /* [nwei] weight offsets, -1: zero */
  int32_t *tdst; /* [ndst] result offsets; NULL: the result is the destination */
  exec_runs_t *rsrc, *rdst; /* tsrc and tdst as strided runs, when they are made of long ones */
  int32_t *chan;            /* deploy plans: [G*O] the result channel of each output channel */
  float *bias;              /* deploy plans: [G*O] the folded shift */
  const float *fold_scale;  /* deploy plans: the scale folded into wei under hold id held */
  float alpha;
  float *src, *wei, *dst, *dsrc, *dwei;
  uint64_t held;
  const float *held_w;
  char desc[96];
};

void exec_conv_plan_free(exec_conv_plan_t *p) {
  if (!p) return;
  syno_dnnl_conv_free(p->dnnl);
  free(p->tsrc);
  free(p->twei);
  free(p->tdst);
  exec_runs_free(p->rsrc);
  exec_runs_free(p->rdst);
  free(p->chan);
  free(p->bias);
  free(p->src);
  free(p->wei);
  free(p->dst);
  free(p->dsrc);
  free(p->dwei);
  free(p);
}

const char *exec_conv_plan_desc(const exec_conv_plan_t *p) { return p->desc; }

static bool has_restrict(const syno_nest_t *n, int i) {
  const syno_expr_t *x = &n->node[i];
  if (x->kind <= SYNO_EXPR_IMM) return false;
  return x->kind == SYNO_EXPR_RESTRICT || has_restrict(n, x->a) || has_restrict(n, x->b);
}

/* Collects the restrict nodes of the tree of i that contain no other restrict. */
static void innermost_restricts(const syno_nest_t *n, int i, int *out, int *cnt) {
  const syno_expr_t *x = &n->node[i];
  if (x->kind <= SYNO_EXPR_IMM) return;
  if (x->kind == SYNO_EXPR_RESTRICT && !has_restrict(n, x->a)) {
    if (*cnt < SYNO_MAX_NODES) out[(*cnt)++] = i;
    return;
  }
  innermost_restricts(n, x->a, out, cnt);
  innermost_restricts(n, x->b, out, cnt);
}

typedef struct {
  int node, m, k;         /* the restrict node, its output and summed variable (k < 0: none) */
  int64_t lo, len, pad;   /* source positions lo..lo+len-1, left padding */
  int64_t s, d, o, kext;  /* stride, dilation (> 0), output and kernel extent */
  bool flip;              /* the kernel runs backwards (d < 0 in the expression) */
} window_t;

/* Fits restrict(c + s*m + d*k, R) to window w; false when the argument is not affine in m, k. */
static bool fit_window(const syno_nest_t *n, const int64_t *size_val, const int64_t *ext, window_t *w) {
  const syno_expr_t *r = &n->node[w->node];
  int64_t val[SYNO_NEST_MAX_VARS] = {0};
  bool ok = true;
  int64_t R = syno_expr_eval(n, r->b, size_val, val, val + n->n_outer, &ok);
  int64_t c = syno_expr_eval(n, r->a, size_val, val, val + n->n_outer, &ok);
  val[w->m] = 1;
  int64_t s = syno_expr_eval(n, r->a, size_val, val, val + n->n_outer, &ok) - c, d = 0;
  val[w->m] = 0;
  w->kext = 1;
  if (w->k >= 0) {
    val[w->k] = 1;
    d = syno_expr_eval(n, r->a, size_val, val, val + n->n_outer, &ok) - c;
    val[w->k] = 0;
    w->kext = ext[w->k];
  }
  w->o = ext[w->m];
  if (!ok || s < 1 || (w->k >= 0 && d == 0) || w->o * w->kext > (INT64_C(1) << 20)) return false;
  for (int64_t mi = 0; mi < w->o; mi++)
    for (int64_t ki = 0; ki < w->kext; ki++) {
      val[w->m] = mi;
      if (w->k >= 0) val[w->k] = ki;
      if (syno_expr_eval(n, r->a, size_val, val, val + n->n_outer, &ok) != c + s * mi + d * ki) return false;
    }
  w->flip = d < 0;
  if (w->flip) { /* k -> kext-1-t: c + d(kext-1) + s m + |d| t */
    c += d * (w->kext - 1);
    d = -d;
  }
  w->s = s;
  w->d = w->k >= 0 ? d : 1;
  w->lo = c > 0 ? c : 0;
  w->pad = c < 0 ? -c : 0;
  w->len = R - w->lo;
  int64_t reach = (w->o - 1) * w->s + (w->kext - 1) * w->d + 1 - w->pad; /* source positions any output reads */
  if (reach < w->len) w->len = reach;
  return w->len > 0;
}

/* Fills table t[total(x)] with the access's offsets over axes x; -1 when one is beyond numel. */
static int fill_table(const syno_nest_t *n, const syno_access_t *acc, const int64_t *stride, const int64_t *size_val,
                      const axes_t *x, int64_t numel, int32_t *t) {
  int64_t val[SYNO_NEST_MAX_VARS] = {0}, total = axes_total(x);
  for (int64_t i = 0; i < total; i++) {
    axes_decode(x, i, val);
    int64_t o = syno_access_offset(n, acc, stride, size_val, val);
    if (o >= numel) return -1;
    t[i] = (int32_t)o;
  }
  return 0;
}

enum { R_NONE, R_BATCH, R_GROUP, R_OUT, R_IN, R_SPATIAL, R_TAP };

int exec_conv_plan_new(exec_gemm_stage_t *st, const syno_vars_t *v, int b, const exec_conv_channels_t *deploy,
                       exec_conv_plan_t **out, const char **why, syno_error_t *err) {
  *out = NULL;
  *why = NULL;
  const syno_nest_t *n = st->n;
  if (!st->a.acc || !st->has_w || !st->w.acc) {
    *why = "not a convolution: the stage reads an intermediate or has no weight";
    return 0;
  }
  const int nv = n->n_outer + n->n_inner;
  int64_t ext[SYNO_NEST_MAX_VARS] = {0}, size_val[SYNO_MAX_NODES] = {0};
  if (syno_nest_sizes(n, v, b, size_val, ext, err)) return -1;
  const syno_access_t *A = st->a.acc, *W = st->w.acc;
  int ca[SYNO_NEST_MAX_VARS] = {0}, cw[SYNO_NEST_MAX_VARS] = {0};
  for (int i = 0; i < A->rank; i++) syno_expr_count_vars(n, A->idx[i], ca);
  for (int i = 0; i < W->rank; i++) syno_expr_count_vars(n, W->idx[i], cw);

  /* Windows: innermost restricts of the input mixing one result variable the weight does
   * not read with at most one summed variable. */
  window_t win[SYNO_DNNL_MAX_SP];
  int nwin = 0, cand[SYNO_MAX_NODES], ncand = 0;
  for (int i = 0; i < A->rank; i++) innermost_restricts(n, A->idx[i], cand, &ncand);
  for (int c = 0; c < ncand; c++) {
    int cnt[SYNO_NEST_MAX_VARS] = {0}, m = -1, k = -1, bad = 0;
    syno_expr_count_vars(n, n->node[cand[c]].a, cnt);
    for (int i = 0; i < nv; i++) {
      if (!cnt[i] || !st->in_stage[i]) continue;
      int *slot = st->result[i] && !cw[i] ? &m : !st->result[i] ? &k : NULL;
      if (!slot || *slot >= 0) bad = 1;
      if (slot) *slot = i;
    }
    if (bad || m < 0 || k < 0) continue; /* left to the gather (a result variable alone is a batch) */
    for (int j = 0; j < nwin; j++)
      if (win[j].m == m || win[j].k == k) {
        *why = "not a convolution: two windows share a variable";
        return 0;
      }
    if (nwin == SYNO_DNNL_MAX_SP) {
      *why = "not a convolution: more than three windows";
      return 0;
    }
    window_t *w = &win[nwin++];
    memset(w, 0, sizeof *w);
    w->node = cand[c];
    w->m = m;
    w->k = k;
    if (!fit_window(n, size_val, ext, w)) {
      *why = "not a convolution: a window is not affine with stride >= 1";
      return 0;
    }
  }
  if (!nwin) {
    *why = "not a convolution: no window";
    return 0;
  }

  /* The input's expressions with each window replaced by its position variable. */
  syno_nest_t *sub = malloc(sizeof *sub);
  if (!sub) return syno_error_set(err, "conv plan: out of memory");
  *sub = *n;
  for (int j = 0; j < nwin; j++) {
    syno_expr_t *x = &sub->node[win[j].node];
    int m = win[j].m;
    memset(x, 0, sizeof *x);
    x->kind = m < n->n_outer ? SYNO_EXPR_OUTER : SYNO_EXPR_INNER;
    x->var = m < n->n_outer ? m : m - n->n_outer;
  }
  int cs[SYNO_NEST_MAX_VARS] = {0};
  for (int i = 0; i < A->rank; i++) syno_expr_count_vars(sub, A->idx[i], cs);

  /* Roles. */
  int role[SYNO_NEST_MAX_VARS] = {0};
  for (int j = 0; j < nwin; j++) {
    role[win[j].m] = R_SPATIAL;
    role[win[j].k] = R_TAP;
  }
  for (int i = 0; i < nv && !*why; i++) {
    if (!st->in_stage[i] || role[i]) continue;
    if (st->result[i])
      role[i] = ca[i] && cw[i] ? R_GROUP : cw[i] ? R_OUT : R_BATCH;
    else if (ca[i] && cw[i])
      role[i] = R_IN;
    else
      *why = "not a convolution: a summed variable only one tensor reads";
  }
  for (int j = 0; j < nwin && !*why; j++)
    if (cs[win[j].m] != 1 || cs[win[j].k] != 0) *why = "not a convolution: a window's variable is read outside it";
  if (*why) {
    free(sub);
    return 0;
  }

  /* Spatial dimensions: the windows, and batch variables laid out inside every channel. */
  int sp[SYNO_NEST_MAX_VARS], nsp = 0, bat[SYNO_NEST_MAX_VARS], nbat = 0, grp[SYNO_NEST_MAX_VARS], ngrp = 0,
      oc[SYNO_NEST_MAX_VARS], noc = 0, ic[SYNO_NEST_MAX_VARS], nic = 0;
  int64_t inner_ch = INT64_MAX;
  for (int i = 0; i < nv; i++)
    if ((role[i] == R_GROUP || role[i] == R_OUT) && st->res_stride[i] < inner_ch) inner_ch = st->res_stride[i];
  for (int i = 0; i < nv; i++) {
    if (role[i] == R_SPATIAL) sp[nsp++] = i;
    if (role[i] == R_GROUP) grp[ngrp++] = i;
    if (role[i] == R_OUT) oc[noc++] = i;
    if (role[i] == R_IN) ic[nic++] = i;
  }
  for (int i = 0; i < nv; i++) {
    if (role[i] != R_BATCH) continue;
    /* Deployed: a batch variable inside the result's channel becomes a group (the weight,
     * which does not read it, replicated across its values). */
    if (deploy && st->res_stride[i] >= deploy->inner && st->res_stride[i] < deploy->inner * deploy->C) {
      role[i] = R_GROUP;
      grp[ngrp++] = i;
      continue;
    }
    if (!st->choose_layout && st->res_stride[i] < inner_ch && nsp < SYNO_DNNL_MAX_SP) {
      role[i] = R_SPATIAL;
      sp[nsp++] = i;
    } else {
      bat[nbat++] = i;
    }
  }
  if (!st->choose_layout) {
    exec_sort_by_stride(sp, nsp, st->res_stride);
    exec_sort_by_stride(bat, nbat, st->res_stride);
    exec_sort_by_stride(grp, ngrp, st->res_stride);
    exec_sort_by_stride(oc, noc, st->res_stride);
  }

  /* The geometry and the three tables' axes. */
  exec_conv_plan_t *p = calloc(1, sizeof *p);
  if (!p) {
    free(sub);
    return syno_error_set(err, "conv plan: out of memory");
  }
  axes_t xs = {0}, xw = {0}, xd = {0};
  int64_t Nb = 1, G = 1, O = 1, I = 1;
  for (int i = 0; i < nbat; i++) {
    axes_add(&xs, bat[i], ext[bat[i]], 0, 1);
    axes_add(&xd, bat[i], ext[bat[i]], 0, 1);
    Nb *= ext[bat[i]];
  }
  for (int i = 0; i < ngrp; i++) {
    axes_add(&xs, grp[i], ext[grp[i]], 0, 1);
    axes_add(&xw, grp[i], ext[grp[i]], 0, 1);
    axes_add(&xd, grp[i], ext[grp[i]], 0, 1);
    G *= ext[grp[i]];
  }
  for (int i = 0; i < noc; i++) {
    axes_add(&xw, oc[i], ext[oc[i]], 0, 1);
    axes_add(&xd, oc[i], ext[oc[i]], 0, 1);
    O *= ext[oc[i]];
  }
  for (int i = 0; i < nic; i++) {
    axes_add(&xs, ic[i], ext[ic[i]], 0, 1);
    axes_add(&xw, ic[i], ext[ic[i]], 0, 1);
    I *= ext[ic[i]];
  }
  syno_dnnl_geo_t *g = &p->geo;
  memset(g, 0, sizeof *g);
  g->nsp = nsp;
  g->n = Nb;
  g->groups = G;
  g->ic = G * I;
  g->oc = G * O;
  for (int j = 0; j < nsp; j++) {
    const window_t *w = NULL;
    for (int q = 0; q < nwin; q++)
      if (win[q].m == sp[j]) w = &win[q];
    if (w) {
      axes_add(&xs, w->m, w->len, w->lo, 1);
      axes_add(&xw, w->k, w->kext, w->flip ? w->kext - 1 : 0, w->flip ? -1 : 1);
      g->in[j] = w->len;
      g->out[j] = w->o;
      g->k[j] = w->kext;
      g->stride[j] = w->s;
      g->dil[j] = w->d;
      g->pad[j] = w->pad;
    } else {
      axes_add(&xs, sp[j], ext[sp[j]], 0, 1);
      g->in[j] = g->out[j] = ext[sp[j]];
      g->k[j] = g->stride[j] = g->dil[j] = 1;
    }
    axes_add(&xd, sp[j], ext[sp[j]], 0, 1);
  }
  p->nsrc = axes_total(&xs);
  p->nwei = axes_total(&xw);
  p->ndst = axes_total(&xd);
  p->alpha = (float)(1.0 / (double)st->divisor);

  /* The result's layout: the convolution's when the plan chooses it; else is it? */
  int64_t dstride[SYNO_NEST_MAX_VARS] = {0}, s = 1;
  for (int i = xd.n - 1; i >= 0; i--) {
    dstride[xd.var[i]] = s;
    s *= xd.ext[i];
  }
  if (st->choose_layout) {
    memcpy(st->res_stride, dstride, sizeof dstride);
    st->res_numel = s;
  }
  bool direct = st->res_numel == s;
  for (int i = 0; i < nv; i++)
    if (st->in_stage[i] && st->result[i] && st->res_stride[i] != dstride[i]) direct = false;

  int64_t astride[SYNO_MAX_RANK], wstride[SYNO_MAX_RANK];
  if (syno_access_strides(A, v, b, astride, &p->numel_a, err) || syno_access_strides(W, v, b, wstride, &p->numel_w, err))
    goto fail;
  p->numel_c = st->res_numel;
  if (p->nsrc > MAX_TABLE || p->nwei > MAX_TABLE || p->ndst > MAX_TABLE || p->numel_a >= INT32_MAX ||
      p->numel_w >= INT32_MAX || p->numel_c >= INT32_MAX) {
    *why = "not a convolution here: a table would be too large";
    goto decline;
  }
  p->tsrc = malloc(sizeof(int32_t) * (size_t)p->nsrc);
  p->twei = malloc(sizeof(int32_t) * (size_t)p->nwei);
  p->src = syno_malloc_array(p->nsrc, sizeof(float));
  p->dsrc = syno_malloc_array(p->nsrc, sizeof(float));
  p->wei = syno_malloc_array(p->nwei, sizeof(float));
  p->dwei = syno_malloc_array(p->nwei, sizeof(float));
  if (!direct) {
    p->tdst = malloc(sizeof(int32_t) * (size_t)p->ndst);
    p->dst = syno_malloc_array(p->ndst, sizeof(float));
  }
  if (!p->tsrc || !p->twei || !p->src || !p->dsrc || !p->wei || !p->dwei || (!direct && (!p->tdst || !p->dst))) {
    syno_error_set(err, "conv plan: out of memory");
    goto fail;
  }
  if (fill_table(sub, A, astride, size_val, &xs, p->numel_a, p->tsrc) ||
      fill_table(n, W, wstride, size_val, &xw, p->numel_w, p->twei)) {
    syno_error_set(err, "conv plan: an offset out of range");
    goto fail;
  }
  if (!direct) {
    int64_t val[SYNO_NEST_MAX_VARS] = {0};
    for (int64_t i = 0; i < p->ndst; i++) {
      axes_decode(&xd, i, val);
      int64_t o = 0;
      for (int q = 0; q < xd.n; q++) o += val[xd.var[q]] * st->res_stride[xd.var[q]];
      p->tdst[i] = (int32_t)o;
    }
  }
  /* The input read in place: consecutive offsets from a base, none padding. */
  bool ident = p->tsrc[0] >= 0 && p->tsrc[0] + p->nsrc <= p->numel_a;
  for (int64_t i = 1; i < p->nsrc && ident; i++) ident = p->tsrc[i] == p->tsrc[0] + i;
  if (ident) {
    p->src_base = p->tsrc[0];
    free(p->tsrc);
    p->tsrc = NULL;
    free(p->src);
    p->src = NULL;
  }
  /* Deployed: the result channel of each of the convolution's output channels, which must
   * be one whatever the batch and spatial position. */
  if (deploy) {
    const int64_t noc_all = G * O, sp_total = p->ndst / (Nb * noc_all);
    p->chan = malloc(sizeof(int32_t) * (size_t)noc_all);
    p->bias = syno_malloc_array(noc_all, sizeof(float));
    if (!p->chan || !p->bias) {
      syno_error_set(err, "conv plan: out of memory");
      goto fail;
    }
    for (int64_t q = 0; q < noc_all; q++) p->chan[q] = -1;
    for (int64_t i = 0; i < p->ndst; i++) {
      int64_t o = p->tdst ? p->tdst[i] : i, q = i / sp_total % noc_all, ch = o / deploy->inner % deploy->C;
      if (p->chan[q] < 0) p->chan[q] = (int32_t)ch;
      if (p->chan[q] != ch) {
        *why = "not foldable: an output channel of the convolution spans channels of the result";
        goto decline;
      }
    }
  }
  /* A gather or scatter of a few entries per run is as fast through the table. */
  if (p->tsrc) p->rsrc = exec_runs_new(p->tsrc, p->nsrc, 8);
  if (p->tdst) p->rdst = exec_runs_new(p->tdst, p->ndst, 8);
  p->dnnl = syno_dnnl_conv_new();
  if (!p->dnnl || !syno_dnnl_conv_supported(p->dnnl, g)) {
    *why = "not a convolution here: oneDNN declined the geometry";
    goto decline;
  }
  {
    char ks[32] = "";
    int len = 0;
    for (int j = 0; j < nsp; j++)
      len += snprintf(ks + len, sizeof ks - (size_t)len, "%s%lld", j ? "x" : "", (long long)g->k[j]);
    snprintf(p->desc, sizeof p->desc, "oneDNN conv%dd %s%s%s%s%s", nsp, ks, G > 1 ? " grouped" : "",
             ident ? "" : ", input gathered", direct ? "" : ", output scattered",
             deploy ? ", norm and ReLU folded" : "");
  }
  free(sub);
  *out = p;
  return 0;
decline:
  free(sub);
  exec_conv_plan_free(p);
  return 0;
fail:
  free(sub);
  exec_conv_plan_free(p);
  return -1;
}

static void gather(const int32_t *t, int64_t n, const float *x, float *y) {
  for (int64_t i = 0; i < n; i++) y[i] = t[i] >= 0 ? x[t[i]] : 0.0f;
}

/* y = x read through table t[n], as runs when the plan keeps them. */
static void take(const exec_runs_t *r, const int32_t *t, int64_t n, const float *x, float *y) {
  if (r)
    exec_runs_gather(r, x, y);
  else
    gather(t, n, x, y);
}

static void gather_weight(exec_conv_plan_t *p, const float *w) {
  for (int64_t i = 0; i < p->nwei; i++) p->wei[i] = p->twei[i] >= 0 ? p->alpha * w[p->twei[i]] : 0.0f;
}

/* Whether p->wei still holds w under hold id hold (and records that it will after a gather). */
static bool weight_held(exec_conv_plan_t *p, const float *w, uint64_t hold) {
  bool held = hold && p->held == hold && p->held_w == w;
  p->held = hold;
  p->held_w = w;
  return held;
}

static const float *source(exec_conv_plan_t *p, const float *a) {
  if (!p->tsrc) return a + p->src_base;
  take(p->rsrc, p->tsrc, p->nsrc, a, p->src);
  return p->src;
}

static int dnnl_fail(int rc, syno_error_t *err) {
  return syno_error_set(err, "oneDNN convolution: %s", rc == SYNO_DNNL_ENOMEM ? "out of memory" : "failed");
}

/* The convolution of a's source with the gathered weight (and bias, or NULL) under geometry
 * g, written to c through the result's table. */
static int run(exec_conv_plan_t *p, const syno_dnnl_geo_t *g, const float *a, const float *bias, float *c, uint64_t hold,
               syno_error_t *err) {
  const float *src = source(p, a);
  float *dst = p->tdst ? p->dst : c;
  int rc = syno_dnnl_conv_forward(p->dnnl, g, src, p->wei, bias, dst, !hold, hold);
  if (rc) return dnnl_fail(rc, err);
  if (p->rdst)
    exec_runs_scatter(p->rdst, p->dst, c, 0);
  else if (p->tdst)
    for (int64_t i = 0; i < p->ndst; i++) c[p->tdst[i]] = p->dst[i];
  return 0;
}

int exec_conv_forward(exec_conv_plan_t *p, const float *a, const float *w, float *c, uint64_t hold, syno_error_t *err) {
  if (!weight_held(p, w, hold)) gather_weight(p, w);
  return run(p, &p->geo, a, NULL, c, hold, err);
}

int exec_conv_forward_affine(exec_conv_plan_t *p, const float *a, const float *w, float *c, uint64_t hold,
                             const float *scale, const float *shift, int relu, syno_error_t *err) {
  const int64_t noc = p->geo.oc, per = p->nwei / noc;
  if (!weight_held(p, w, hold) || p->fold_scale != scale) {
    gather_weight(p, w);
    for (int64_t q = 0; q < noc; q++) {
      const float k = scale ? scale[p->chan[q]] : 1.0f;
      for (int64_t j = 0; j < per; j++) p->wei[q * per + j] *= k;
      p->bias[q] = scale ? shift[p->chan[q]] : 0.0f;
    }
    p->fold_scale = scale;
  }
  syno_dnnl_geo_t g = p->geo;
  g.bias = 1;
  g.relu = relu;
  return run(p, &g, a, p->bias, c, hold, err);
}

int exec_conv_backward(exec_conv_plan_t *p, const float *a, const float *w, const float *dc, float *da, float *dw,
                       syno_error_t *err) {
  gather_weight(p, w);
  p->held = 0;
  const float *src = source(p, a);
  const float *ddst = dc;
  if (p->tdst) {
    take(p->rdst, p->tdst, p->ndst, dc, p->dst);
    ddst = p->dst;
  }
  /* The input's gradient lands in da directly when the input is the source. */
  float *dsrc = !da ? NULL : p->tsrc || p->src_base || p->nsrc != p->numel_a ? p->dsrc : da;
  int rc = syno_dnnl_conv_backward(p->dnnl, &p->geo, src, ddst, p->wei, p->dwei, NULL, dsrc, 0);
  if (rc) return dnnl_fail(rc, err);
  if (dw) {
    memset(dw, 0, sizeof(float) * (size_t)p->numel_w);
    for (int64_t i = 0; i < p->nwei; i++)
      if (p->twei[i] >= 0) dw[p->twei[i]] += p->alpha * p->dwei[i];
  }
  if (da && dsrc != da) {
    memset(da, 0, sizeof(float) * (size_t)p->numel_a);
    if (p->rsrc) {
      exec_runs_scatter(p->rsrc, p->dsrc, da, 1);
      return 0;
    }
    for (int64_t i = 0; i < p->nsrc; i++) {
      int64_t o = p->tsrc ? p->tsrc[i] : p->src_base + i;
      if (o >= 0) da[o] += p->dsrc[i];
    }
  }
  return 0;
}
