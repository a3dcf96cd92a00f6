/* The "gemm" strategy of the executor (see exec_gemm.h).
 *
 * Forward, for each group g and each chunk of c plain-M positions:
 *     col[k][j*Me + me] = x[ip[mp0+j] + tin[g][k][me]]      (0 where tin = -1)
 *     C[n][j*Me + me]   = alpha * sum_k wg[g][n][k] col[k][j*Me + me]
 *     out[og[g] + omp[mp] + on[n] + ome[me]] = C[n][j*Me + me]
 * with wg the weight gathered through tw (all ones without a weight) and
 * alpha = 1/divisor (Mean). When the chunk is one position and the output
 * block is a row-major [N][Me] view with unit stride in me, the GEMM writes
 * the output directly (and backward reads grad_out directly).
 * Backward gathers grad_out into the [N][c*Me] layout, then
 *     dwg += alpha dY col^T    (scatter-added into dW through tw)
 *     dcol = alpha wg^T dY     (scatter-added into dX through tin)
 * Replicated table entries (a variable a tensor does not read) are summed
 * by the scatter-adds, which is what the gradient of a broadcast is. */
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "exec_gemm.h"
#include "expr_eval.h"

#define WORKSPACE (INT64_C(1) << 20) /* floats per column buffer, as the native conv */
#define MAX_TABLE (INT64_C(1) << 26) /* entries of one offset table */

enum { CL_G, CL_MP, CL_ME, CL_N, CL_K, CL_COUNT };

struct syno_gemm_plan {
  int has_w;
  int64_t G, Mp, Me, N, K, chunk;
  int64_t numel_x, numel_w, numel_out;
  int32_t *tin;  /* [G][K][Me] */
  int64_t *ip;   /* [Mp] */
  int32_t *tw;   /* [G][N][K] */
  int64_t *og, *omp, *on, *ome;
  int direct;    /* chunk == 1 and the output block is an [N][ldo] view */
  int64_t ldo;
  float alpha;
  float *col, *cbuf, *wg, *dwg; /* [K][c*Me], [N][c*Me], [G][N][K], [N][K] */
};

typedef struct {
  const syno_nest_t *n;
  int64_t size_val[SYNO_MAX_NODES];
  int64_t val[SYNO_MAX_RANK + SYNO_MAX_LOOPS]; /* outer vars, then inner */
} ev_t;


/* Counts occurrences of each loop variable in the tree of node i. */
static void count_vars(const syno_nest_t *n, int i, int *cnt) {
  const syno_expr_t *x = &n->node[i];
  switch (x->kind) {
    case SYNO_EXPR_OUTER: cnt[x->var]++; return;
    case SYNO_EXPR_INNER: cnt[n->n_outer + x->var]++; return;
    case SYNO_EXPR_SIZE:
    case SYNO_EXPR_IMM: return;
    default: count_vars(n, x->a, cnt); count_vars(n, x->b, cnt);
  }
}

typedef struct {
  int n;
  int var[SYNO_MAX_RANK + SYNO_MAX_LOOPS];
  int64_t total;
} class_t;

/* Sets the values of the class's variables from a row-major index. */
static void decode(ev_t *e, const class_t *c, const int64_t *ext, int64_t idx) {
  for (int i = c->n - 1; i >= 0; i--) {
    int64_t x = ext[c->var[i]];
    e->val[c->var[i]] = idx % x;
    idx /= x;
  }
}

static int64_t access_off(const ev_t *e, const syno_access_t *a, const int64_t *stride) {
  bool ok = true;
  int64_t off = 0;
  for (int i = 0; i < a->rank; i++)
    off += syno_expr_eval(e->n, a->idx[i], e->size_val, e->val, e->val + e->n->n_outer, &ok) * stride[i];
  return ok ? off : -1;
}

void syno_gemm_plan_free(syno_gemm_plan_t *p) {
  if (!p) return;
  free(p->tin);
  free(p->ip);
  free(p->tw);
  free(p->og);
  free(p->omp);
  free(p->on);
  free(p->ome);
  free(p->col);
  free(p->cbuf);
  free(p->wg);
  free(p->dwg);
  free(p);
}

static void *xcalloc(int64_t n, size_t sz) { return calloc((size_t)(n > 0 ? n : 1), sz); }

int syno_gemm_plan_new(const syno_nest_t *fwd, int n_tensors, const syno_vars_t *v, int b, syno_gemm_plan_t **out,
                       const char **reason, syno_error_t *err) {
  *out = NULL;
  *reason = NULL;
  if (fwd->target != -1) return syno_error_set(err, "gemm plan: not a forward nest");
  if (n_tensors > 2) {
    *reason = "several weights (only one weight contraction maps to one GEMM)";
    return 0;
  }
  if (fwd->n_guards > 0) {
    *reason = "the forward nest has guards";
    return 0;
  }
  int fx = -1, fw = -1;
  for (int f = 0; f < fwd->n_factors; f++) {
    int t = fwd->factor[f].tensor;
    if (t == 0 && fx < 0) fx = f;
    else if (t == 1 && fw < 0) fw = f;
    else {
      *reason = "a tensor is read by more than one factor";
      return 0;
    }
  }
  if (fx < 0 || (n_tensors == 2) != (fw >= 0)) {
    *reason = "the factors are not one input and at most one weight";
    return 0;
  }

  ev_t *e = calloc(1, sizeof *e);
  syno_gemm_plan_t *p = calloc(1, sizeof *p);
  if (!e || !p) {
    free(e);
    free(p);
    return syno_error_set(err, "gemm plan: out of memory");
  }
  e->n = fwd;
  int nv = fwd->n_outer + fwd->n_inner;
  int64_t ext[SYNO_MAX_RANK + SYNO_MAX_LOOPS];
  int64_t sx[SYNO_MAX_RANK], sw[SYNO_MAX_RANK], so[SYNO_MAX_RANK];
  int64_t div = 1;
  for (int i = 0; i < fwd->n_nodes; i++)
    if (fwd->node[i].kind == SYNO_EXPR_SIZE && syno_size_eval(v, fwd->node[i].size, b, &e->size_val[i], err))
      goto fail;
  for (int i = 0; i < fwd->n_outer; i++)
    if (syno_size_eval(v, fwd->outer[i], b, &ext[i], err)) goto fail;
  for (int i = 0; i < fwd->n_inner; i++)
    if (syno_size_eval(v, fwd->inner[i], b, &ext[fwd->n_outer + i], err)) goto fail;
  if (syno_size_eval(v, fwd->divisor, b, &div, err)) goto fail;
  for (int i = 0; i < nv; i++)
    if (ext[i] <= 0) {
      *reason = "an empty loop";
      goto skip;
    }
  p->numel_out = 1;
  for (int i = fwd->n_outer - 1; i >= 0; i--) {
    so[i] = p->numel_out;
    p->numel_out *= ext[i];
  }
  const syno_access_t *ax = &fwd->factor[fx], *aw = fw >= 0 ? &fwd->factor[fw] : NULL;
  p->numel_x = 1;
  for (int i = ax->rank - 1; i >= 0; i--) {
    int64_t d;
    if (syno_size_eval(v, ax->dim[i], b, &d, err)) goto fail;
    sx[i] = p->numel_x;
    p->numel_x *= d;
  }
  p->numel_w = 1;
  if (aw)
    for (int i = aw->rank - 1; i >= 0; i--) {
      int64_t d;
      if (syno_size_eval(v, aw->dim[i], b, &d, err)) goto fail;
      sw[i] = p->numel_w;
      p->numel_w *= d;
    }
  if (p->numel_x >= INT32_MAX || p->numel_w >= INT32_MAX) {
    *reason = "a tensor too large for int32 offsets";
    goto skip;
  }

  /* Which variables each tensor reads; which input reads are bare axes. */
  int cx[SYNO_MAX_RANK + SYNO_MAX_LOOPS] = {0}, cw[SYNO_MAX_RANK + SYNO_MAX_LOOPS] = {0};
  int64_t plain_stride[SYNO_MAX_RANK + SYNO_MAX_LOOPS];
  for (int i = 0; i < ax->rank; i++) count_vars(fwd, ax->idx[i], cx);
  if (aw)
    for (int i = 0; i < aw->rank; i++) count_vars(fwd, aw->idx[i], cw);
  for (int i = 0; i < nv; i++) plain_stride[i] = cx[i] == 0 ? 0 : -1;
  for (int i = 0; i < ax->rank; i++) {
    const syno_expr_t *r = &fwd->node[ax->idx[i]];
    if (r->kind == SYNO_EXPR_OUTER && cx[r->var] == 1) plain_stride[r->var] = sx[i];
  }
  class_t cl[CL_COUNT];
  memset(cl, 0, sizeof cl);
  for (int i = 0; i < nv; i++) {
    int c;
    if (i >= fwd->n_outer) c = CL_K;
    else if (cx[i] && cw[i]) c = CL_G;
    else if (cw[i]) c = CL_N;
    else c = plain_stride[i] >= 0 ? CL_MP : CL_ME;
    cl[c].var[cl[c].n++] = i;
  }
  for (int c = 0; c < CL_COUNT; c++) {
    cl[c].total = 1;
    for (int i = 0; i < cl[c].n; i++) cl[c].total *= ext[cl[c].var[i]];
  }
  p->has_w = aw != NULL;
  p->G = cl[CL_G].total;
  p->Mp = cl[CL_MP].total;
  p->Me = cl[CL_ME].total;
  p->N = cl[CL_N].total;
  p->K = cl[CL_K].total;
  p->alpha = (float)(1.0 / (double)div);
  if (p->G * p->K * p->Me > MAX_TABLE || p->G * p->N * p->K > MAX_TABLE) {
    *reason = "an offset table would be too large";
    goto skip;
  }
  p->chunk = WORKSPACE / (p->K * p->Me);
  if (p->chunk < 1) p->chunk = 1;
  if (p->chunk > p->Mp) p->chunk = p->Mp;
  int64_t cm = p->chunk * p->Me;

  p->tin = xcalloc(p->G * p->K * p->Me, sizeof *p->tin);
  p->ip = xcalloc(p->Mp, sizeof *p->ip);
  p->tw = xcalloc(p->G * p->N * p->K, sizeof *p->tw);
  p->og = xcalloc(p->G, sizeof *p->og);
  p->omp = xcalloc(p->Mp, sizeof *p->omp);
  p->on = xcalloc(p->N, sizeof *p->on);
  p->ome = xcalloc(p->Me, sizeof *p->ome);
  p->col = xcalloc(p->K * cm, sizeof *p->col);
  p->cbuf = xcalloc(p->N * cm, sizeof *p->cbuf);
  p->wg = xcalloc(p->G * p->N * p->K, sizeof *p->wg);
  p->dwg = xcalloc(p->N * p->K, sizeof *p->dwg);
  if (!p->tin || !p->ip || !p->tw || !p->og || !p->omp || !p->on || !p->ome || !p->col || !p->cbuf || !p->wg ||
      !p->dwg) {
    syno_error_set(err, "gemm plan: out of memory");
    goto fail;
  }

  /* Output offsets: each outer variable is an output axis. */
  int64_t *otab[CL_COUNT] = {p->og, p->omp, p->ome, p->on, NULL};
  for (int c = 0; c < CL_K; c++)
    for (int64_t idx = 0; idx < cl[c].total; idx++) {
      memset(e->val, 0, sizeof e->val);
      decode(e, &cl[c], ext, idx);
      int64_t o = 0;
      for (int i = 0; i < cl[c].n; i++) o += e->val[cl[c].var[i]] * so[cl[c].var[i]];
      otab[c][idx] = o;
    }
  for (int64_t idx = 0; idx < p->Mp; idx++) {
    memset(e->val, 0, sizeof e->val);
    decode(e, &cl[CL_MP], ext, idx);
    int64_t o = 0;
    for (int i = 0; i < cl[CL_MP].n; i++) o += e->val[cl[CL_MP].var[i]] * plain_stride[cl[CL_MP].var[i]];
    p->ip[idx] = o;
  }
  /* Input gather: plain variables at 0, weight-only variables irrelevant. */
  for (int64_t g = 0; g < p->G; g++)
    for (int64_t k = 0; k < p->K; k++)
      for (int64_t me = 0; me < p->Me; me++) {
        memset(e->val, 0, sizeof e->val);
        decode(e, &cl[CL_G], ext, g);
        decode(e, &cl[CL_K], ext, k);
        decode(e, &cl[CL_ME], ext, me);
        int64_t o = access_off(e, ax, sx);
        if (o >= p->numel_x) {
          *reason = "an input offset out of range";
          goto skip;
        }
        p->tin[(g * p->K + k) * p->Me + me] = (int32_t)o;
      }
  if (aw)
    for (int64_t g = 0; g < p->G; g++)
      for (int64_t n = 0; n < p->N; n++)
        for (int64_t k = 0; k < p->K; k++) {
          memset(e->val, 0, sizeof e->val);
          decode(e, &cl[CL_G], ext, g);
          decode(e, &cl[CL_N], ext, n);
          decode(e, &cl[CL_K], ext, k);
          int64_t o = access_off(e, aw, sw);
          if (o >= p->numel_w) {
            *reason = "a weight offset out of range";
            goto skip;
          }
          p->tw[(g * p->N + n) * p->K + k] = (int32_t)o;
        }
  else
    for (int64_t i = 0; i < p->G * p->N * p->K; i++) p->wg[i] = 1.0f;

  /* Direct output: one position per chunk, unit stride in me, rows in n. */
  p->ldo = p->N > 1 ? p->on[1] - p->on[0] : p->Me;
  p->direct = p->chunk == 1 && p->ldo >= p->Me;
  for (int64_t me = 0; me < p->Me && p->direct; me++)
    if (p->ome[me] != me) p->direct = 0;
  for (int64_t n = 0; n < p->N && p->direct; n++)
    if (p->on[n] != n * p->ldo) p->direct = 0;

  free(e);
  *out = p;
  return 0;
skip:
  free(e);
  syno_gemm_plan_free(p);
  return 0;
fail:
  free(e);
  syno_gemm_plan_free(p);
  return -1;
}

static void gather_weight(syno_gemm_plan_t *p, const float *w) {
  if (!p->has_w) return;
  int64_t n = p->G * p->N * p->K;
  for (int64_t i = 0; i < n; i++) p->wg[i] = p->tw[i] >= 0 ? w[p->tw[i]] : 0.0f;
}

static void gather_col(const syno_gemm_plan_t *p, int64_t g, int64_t mp0, int64_t nc, const float *x) {
  const int64_t ld = nc * p->Me;
  for (int64_t k = 0; k < p->K; k++) {
    const int32_t *t = p->tin + (g * p->K + k) * p->Me;
    float *row = p->col + k * ld;
    for (int64_t j = 0; j < nc; j++) {
      const float *xb = x + p->ip[mp0 + j];
      float *dst = row + j * p->Me;
      for (int64_t me = 0; me < p->Me; me++) dst[me] = t[me] >= 0 ? xb[t[me]] : 0.0f;
    }
  }
}

static void scatter_col_add(const syno_gemm_plan_t *p, int64_t g, int64_t mp0, int64_t nc, const float *dcol,
                            float *dx) {
  const int64_t ld = nc * p->Me;
  for (int64_t k = 0; k < p->K; k++) {
    const int32_t *t = p->tin + (g * p->K + k) * p->Me;
    const float *row = dcol + k * ld;
    for (int64_t j = 0; j < nc; j++) {
      float *xb = dx + p->ip[mp0 + j];
      const float *src = row + j * p->Me;
      for (int64_t me = 0; me < p->Me; me++)
        if (t[me] >= 0) xb[t[me]] += src[me];
    }
  }
}

void syno_gemm_forward(syno_gemm_plan_t *p, const float *const *tensors, float *out) {
  const float *x = tensors[0];
  gather_weight(p, p->has_w ? tensors[1] : NULL);
  for (int64_t g = 0; g < p->G; g++)
    for (int64_t mp0 = 0; mp0 < p->Mp; mp0 += p->chunk) {
      int64_t nc = p->Mp - mp0 < p->chunk ? p->Mp - mp0 : p->chunk, ld = nc * p->Me;
      gather_col(p, g, mp0, nc, x);
      const float *wg = p->wg + g * p->N * p->K;
      if (p->direct) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p->N, (int)ld, (int)p->K, p->alpha, wg,
                    (int)p->K, p->col, (int)ld, 0.0f, out + p->og[g] + p->omp[mp0], (int)p->ldo);
        continue;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)p->N, (int)ld, (int)p->K, p->alpha, wg,
                  (int)p->K, p->col, (int)ld, 0.0f, p->cbuf, (int)ld);
      for (int64_t j = 0; j < nc; j++) {
        float *ob = out + p->og[g] + p->omp[mp0 + j];
        for (int64_t n = 0; n < p->N; n++) {
          const float *src = p->cbuf + n * ld + j * p->Me;
          float *o = ob + p->on[n];
          for (int64_t me = 0; me < p->Me; me++) o[p->ome[me]] = src[me];
        }
      }
    }
}

void syno_gemm_backward(syno_gemm_plan_t *p, const float *const *tensors, const float *grad_out,
                        float *const *grads) {
  const float *x = tensors[0];
  float *dx = grads[0], *dw = p->has_w ? grads[1] : NULL;
  if (!dx && !dw) return;
  if (dx) {
    memset(dx, 0, sizeof(float) * (size_t)p->numel_x);
    gather_weight(p, p->has_w ? tensors[1] : NULL);
  }
  if (dw) memset(dw, 0, sizeof(float) * (size_t)p->numel_w);
  /* dcol reuses the column buffer: the forward columns are gathered only for dW. */
  float *dcol = p->col;
  for (int64_t g = 0; g < p->G; g++) {
    for (int64_t mp0 = 0; mp0 < p->Mp; mp0 += p->chunk) {
      int64_t nc = p->Mp - mp0 < p->chunk ? p->Mp - mp0 : p->chunk, ld = nc * p->Me;
      const float *dy;
      int64_t ldy;
      if (p->direct) {
        dy = grad_out + p->og[g] + p->omp[mp0];
        ldy = p->ldo;
      } else {
        for (int64_t j = 0; j < nc; j++) {
          const float *ob = grad_out + p->og[g] + p->omp[mp0 + j];
          for (int64_t n = 0; n < p->N; n++) {
            float *dst = p->cbuf + n * ld + j * p->Me;
            const float *o = ob + p->on[n];
            for (int64_t me = 0; me < p->Me; me++) dst[me] = o[p->ome[me]];
          }
        }
        dy = p->cbuf;
        ldy = ld;
      }
      if (dw) {
        gather_col(p, g, mp0, nc, x);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)p->N, (int)p->K, (int)ld, p->alpha, dy, (int)ldy,
                    p->col, (int)ld, mp0 == 0 ? 0.0f : 1.0f, p->dwg, (int)p->K);
      }
      if (dx) {
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)p->K, (int)ld, (int)p->N, p->alpha,
                    p->wg + g * p->N * p->K, (int)p->K, dy, (int)ldy, 0.0f, dcol, (int)ld);
        scatter_col_add(p, g, mp0, nc, dcol, dx);
      }
    }
    if (dw) {
      const int32_t *t = p->tw + g * p->N * p->K;
      for (int64_t i = 0; i < p->N * p->K; i++)
        if (t[i] >= 0) dw[t[i]] += p->dwg[i];
    }
  }
}
