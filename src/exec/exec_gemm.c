/* One contraction stage as a GEMM (see exec_gemm.h).
 *
 * Forward, for each group g and each chunk of c plain-M positions:
 *     col[k][j*Me + me] = a[ip[mp0+j] + tin[g][k][me]]      (0 where tin = -1)
 *     C[n][j*Me + me]   = alpha * sum_k wg[g][n][k] col[k][j*Me + me]
 *     c[og[g] + omp[mp] + on[n] + ome[me]] = C[n][j*Me + me]
 * with wg the weight gathered through tw (all ones without a weight) and
 * alpha = 1/divisor (Mean). When the result block is a row-major [N][ldo]
 * view of c whose chunk columns are contiguous (always so for a layout the
 * plan chose), the GEMM writes c directly (and backward reads dc directly).
 * Backward gathers dc into the [N][c*Me] layout, then
 *     dwg += alpha dY col^T    (scatter-added into dW through tw)
 *     dcol = alpha wg^T dY     (scatter-added into dA through tin)
 * Replicated table entries (a variable a tensor does not read) are summed
 * by the scatter-adds, which is what the gradient of a broadcast is.
 *
 * The generic loop walks the stage's iteration space point by point,
 * evaluating the operands' offsets as the interpreter does, in float. */
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "../lower/expr_eval.h"
#include "exec_gemm.h"

#define WORKSPACE (INT64_C(1) << 20) /* floats per column buffer, as the native conv */
#define MAX_TABLE (INT64_C(1) << 26) /* entries of one offset table */

enum { CL_G, CL_MP, CL_ME, CL_N, CL_K, CL_COUNT };

typedef struct {
  int n;
  int var[SYNO_NEST_MAX_VARS];
  int64_t total;
} class_t;

typedef struct {
  const syno_nest_t *n;
  int64_t size_val[SYNO_MAX_NODES];
  int64_t val[SYNO_NEST_MAX_VARS]; /* outer vars, then inner */
} ev_t;

/* An operand as the plan reads it. */
typedef struct {
  const syno_access_t *acc;           /* NULL: linear */
  int64_t axis_stride[SYNO_MAX_RANK]; /* expression operand: row-major strides of its axes */
  int64_t stride[SYNO_NEST_MAX_VARS]; /* linear operand */
  int64_t numel;
} opnd_t;

struct exec_gemm_plan {
  int has_w;
  int64_t G, Mp, Me, N, K, chunk;
  int64_t numel_a, numel_w, numel_c;
  int32_t *tin; /* [G][K][Me] */
  /* Per row (g, k) of tin: when its valid entries are one run of
   * consecutive offsets, me in [lo, hi) with -1 outside, run[2 (g K + k)]
   * is lo and the next entry hi; else both are -1. */
  int32_t *run;
  int64_t *ip; /* [Mp] */
  int32_t *tw; /* [G][N][K] */
  int64_t *og, *omp, *on, *ome;
  int direct; /* the result block is an [N][ldo] view of c */
  int64_t ldo;
  float alpha;
  float *col, *cbuf, *wg, *dwg; /* [K][c*Me], [N][c*Me], [G][N][K], [N][K] */
  uint64_t held;                 /* wg is the gather of held_w under this hold id (0: none) */
  const float *held_w;
  /* The generic loop (generic != NULL). */
  const char *generic;
  ev_t *ev;
  opnd_t a, w;
  int nv, n_stage;
  int stage_var[SYNO_NEST_MAX_VARS];
  int64_t ext[SYNO_NEST_MAX_VARS], res_stride[SYNO_NEST_MAX_VARS];
};

/* Sets the values of the class's variables from a row-major index. */
static void decode(ev_t *e, const class_t *c, const int64_t *ext, int64_t idx) {
  for (int i = c->n - 1; i >= 0; i--) {
    int64_t x = ext[c->var[i]];
    e->val[c->var[i]] = idx % x;
    idx /= x;
  }
}

/* The operand's offset at the current variable values, or -1 (zero padding). */
static int64_t opnd_off(const ev_t *e, const opnd_t *o, int nv) {
  int64_t off = 0;
  if (!o->acc) {
    for (int i = 0; i < nv; i++) off += e->val[i] * o->stride[i];
    return off;
  }
  return syno_access_offset(e->n, o->acc, o->axis_stride, e->size_val, e->val);
}

static int opnd_init(opnd_t *o, const exec_gemm_operand_t *src, const syno_vars_t *v, int b, syno_error_t *err) {
  memset(o, 0, sizeof *o);
  o->acc = src->acc;
  if (!o->acc) {
    memcpy(o->stride, src->stride, sizeof o->stride);
    o->numel = src->numel;
    return 0;
  }
  return syno_access_strides(o->acc, v, b, o->axis_stride, &o->numel, err);
}

/* How often the operand reads each variable. */
static void opnd_reads(const opnd_t *o, const syno_nest_t *n, int nv, int *cnt) {
  if (!o->acc) {
    for (int i = 0; i < nv; i++) cnt[i] = o->stride[i] != 0;
    return;
  }
  for (int i = 0; i < o->acc->rank; i++) syno_expr_count_vars(n, o->acc->idx[i], cnt);
}

void exec_gemm_plan_free(exec_gemm_plan_t *p) {
  if (!p) return;
  free(p->tin);
  free(p->run);
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
  free(p->ev);
  free(p);
}

const char *exec_gemm_plan_generic(const exec_gemm_plan_t *p) { return p->generic; }

void exec_sort_by_stride(int *vars, int n, const int64_t *stride) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && stride[vars[j - 1]] < stride[vars[j]]; j--) {
      int t = vars[j];
      vars[j] = vars[j - 1];
      vars[j - 1] = t;
    }
}

static void *xcalloc(int64_t n, size_t sz) { return calloc((size_t)(n > 0 ? n : 1), sz); }

int exec_gemm_plan_new(exec_gemm_stage_t *st, const syno_vars_t *v, int b, exec_gemm_plan_t **out, syno_error_t *err) {
  *out = NULL;
  const syno_nest_t *fwd = st->n;
  exec_gemm_plan_t *p = calloc(1, sizeof *p);
  ev_t *e = p ? calloc(1, sizeof *e) : NULL;
  if (!e) {
    free(p);
    return syno_error_set(err, "gemm plan: out of memory");
  }
  p->ev = e;
  e->n = fwd;
  const int nv = fwd->n_outer + fwd->n_inner;
  p->nv = nv;
  int64_t *ext = p->ext;
  if (syno_nest_sizes(fwd, v, b, e->size_val, ext, err)) goto fail;
  for (int i = 0; i < nv; i++) {
    if (!st->in_stage[i]) continue;
    if (ext[i] <= 0) {
      syno_error_set(err, "gemm plan: an empty loop");
      goto fail;
    }
    p->stage_var[p->n_stage++] = i;
  }
  p->has_w = st->has_w;
  p->alpha = (float)(1.0 / (double)st->divisor);
  if (opnd_init(&p->a, &st->a, v, b, err) || (st->has_w && opnd_init(&p->w, &st->w, v, b, err))) goto fail;
  p->numel_a = p->a.numel;
  p->numel_w = st->has_w ? p->w.numel : 1;

  /* Which variables each operand reads; which reads of A are bare axes. */
  int ca[SYNO_NEST_MAX_VARS] = {0}, cw[SYNO_NEST_MAX_VARS] = {0};
  int64_t plain[SYNO_NEST_MAX_VARS];
  opnd_reads(&p->a, fwd, nv, ca);
  if (st->has_w) opnd_reads(&p->w, fwd, nv, cw);
  for (int i = 0; i < nv; i++) plain[i] = ca[i] == 0 ? 0 : p->a.acc ? -1 : p->a.stride[i];
  if (p->a.acc)
    for (int i = 0; i < p->a.acc->rank; i++) {
      const syno_expr_t *r = &fwd->node[p->a.acc->idx[i]];
      int var = r->kind == SYNO_EXPR_OUTER ? r->var : r->kind == SYNO_EXPR_INNER ? fwd->n_outer + r->var : -1;
      if (var >= 0 && ca[var] == 1) plain[var] = p->a.axis_stride[i];
    }
  class_t cl[CL_COUNT];
  memset(cl, 0, sizeof cl);
  for (int j = 0; j < p->n_stage; j++) {
    int i = p->stage_var[j], c;
    if (!st->result[i])
      c = CL_K;
    else if (ca[i] && cw[i])
      c = CL_G;
    else if (cw[i])
      c = CL_N;
    else
      c = plain[i] >= 0 ? CL_MP : CL_ME;
    cl[c].var[cl[c].n++] = i;
  }
  /* A plain position inside (at a smaller result stride than) a gathered
   * one goes with the gathered ones: the columns then follow the result's
   * layout, which the GEMM can write directly, and a window's rows gather
   * as one run (an Unfold of H with W plain reads whole rows of the input). */
  if (!st->choose_layout && cl[CL_ME].n > 0) {
    int64_t inner = 0;
    for (int i = 0; i < cl[CL_ME].n; i++)
      if (st->res_stride[cl[CL_ME].var[i]] > inner) inner = st->res_stride[cl[CL_ME].var[i]];
    for (int i = 0; i < cl[CL_MP].n;) {
      int v = cl[CL_MP].var[i];
      if (st->res_stride[v] < inner) {
        cl[CL_ME].var[cl[CL_ME].n++] = v;
        memmove(&cl[CL_MP].var[i], &cl[CL_MP].var[i + 1], (size_t)(cl[CL_MP].n - i - 1) * sizeof(int));
        cl[CL_MP].n--;
      } else {
        i++;
      }
    }
    /* Outermost first, as decode reads them. */
    exec_sort_by_stride(cl[CL_ME].var, cl[CL_ME].n, st->res_stride);
  }
  for (int c = 0; c < CL_COUNT; c++) {
    cl[c].total = 1;
    for (int i = 0; i < cl[c].n; i++) cl[c].total *= ext[cl[c].var[i]];
  }
  p->G = cl[CL_G].total;
  p->Mp = cl[CL_MP].total;
  p->Me = cl[CL_ME].total;
  p->N = cl[CL_N].total;
  p->K = cl[CL_K].total;

  /* The result layout: chosen as [G][N][Mp][Me], or given. */
  if (st->choose_layout) {
    static const int order[] = {CL_ME, CL_MP, CL_N, CL_G};
    int64_t s = 1;
    memset(st->res_stride, 0, sizeof st->res_stride);
    for (int o = 0; o < 4; o++)
      for (int i = cl[order[o]].n - 1; i >= 0; i--) {
        st->res_stride[cl[order[o]].var[i]] = s;
        s *= ext[cl[order[o]].var[i]];
      }
    st->res_numel = s;
  }
  memcpy(p->res_stride, st->res_stride, sizeof p->res_stride);
  p->numel_c = st->res_numel;

  if (st->loop) {
    p->generic = "a stage runs as a loop: asked to";
    goto generic;
  }
  if (p->numel_a >= INT32_MAX || p->numel_w >= INT32_MAX) {
    p->generic = "a stage runs as a loop: a tensor too large for int32 offsets";
    goto generic;
  }
  if (p->G * p->K * p->Me > MAX_TABLE || p->G * p->N * p->K > MAX_TABLE) {
    p->generic = "a stage runs as a loop: an offset table would be too large";
    goto generic;
  }
  p->chunk = WORKSPACE / (p->K * p->Me);
  if (p->chunk < 1) p->chunk = 1;
  if (p->chunk > p->Mp) p->chunk = p->Mp;
  int64_t cm = p->chunk * p->Me;

  p->tin = xcalloc(p->G * p->K * p->Me, sizeof *p->tin);
  p->run = xcalloc(2 * p->G * p->K, sizeof *p->run);
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
  if (!p->tin || !p->run || !p->ip || !p->tw || !p->og || !p->omp || !p->on || !p->ome || !p->col || !p->cbuf ||
      !p->wg || !p->dwg) {
    syno_error_set(err, "gemm plan: out of memory");
    goto fail;
  }

  /* Result offsets and the plain strides of A. */
  int64_t *otab[CL_COUNT] = {p->og, p->omp, p->ome, p->on, NULL};
  for (int c = 0; c < CL_K; c++)
    for (int64_t idx = 0; idx < cl[c].total; idx++) {
      memset(e->val, 0, sizeof e->val);
      decode(e, &cl[c], ext, idx);
      int64_t o = 0;
      for (int i = 0; i < cl[c].n; i++) o += e->val[cl[c].var[i]] * p->res_stride[cl[c].var[i]];
      otab[c][idx] = o;
    }
  for (int64_t idx = 0; idx < p->Mp; idx++) {
    memset(e->val, 0, sizeof e->val);
    decode(e, &cl[CL_MP], ext, idx);
    int64_t o = 0;
    for (int i = 0; i < cl[CL_MP].n; i++) o += e->val[cl[CL_MP].var[i]] * plain[cl[CL_MP].var[i]];
    p->ip[idx] = o;
  }
  /* A gather: plain variables at 0, weight-only variables irrelevant. */
  for (int64_t g = 0; g < p->G; g++)
    for (int64_t k = 0; k < p->K; k++)
      for (int64_t me = 0; me < p->Me; me++) {
        memset(e->val, 0, sizeof e->val);
        decode(e, &cl[CL_G], ext, g);
        decode(e, &cl[CL_K], ext, k);
        decode(e, &cl[CL_ME], ext, me);
        int64_t o = opnd_off(e, &p->a, nv);
        if (o >= p->numel_a) {
          syno_error_set(err, "gemm plan: an offset of the running tensor out of range");
          goto fail;
        }
        p->tin[(g * p->K + k) * p->Me + me] = (int32_t)o;
      }
  for (int64_t r = 0; r < p->G * p->K; r++) {
    const int32_t *t = p->tin + r * p->Me;
    int64_t lo = 0, hi = p->Me;
    while (lo < hi && t[lo] < 0) lo++;
    while (hi > lo && t[hi - 1] < 0) hi--;
    int one = 1;
    for (int64_t me = lo + 1; me < hi && one; me++) one = t[me] == t[me - 1] + 1;
    p->run[2 * r] = one ? (int32_t)lo : -1;
    p->run[2 * r + 1] = one ? (int32_t)hi : -1;
  }
  if (p->has_w)
    for (int64_t g = 0; g < p->G; g++)
      for (int64_t n = 0; n < p->N; n++)
        for (int64_t k = 0; k < p->K; k++) {
          memset(e->val, 0, sizeof e->val);
          decode(e, &cl[CL_G], ext, g);
          decode(e, &cl[CL_N], ext, n);
          decode(e, &cl[CL_K], ext, k);
          int64_t o = opnd_off(e, &p->w, nv);
          if (o >= p->numel_w) {
            syno_error_set(err, "gemm plan: a weight offset out of range");
            goto fail;
          }
          p->tw[(g * p->N + n) * p->K + k] = (int32_t)o;
        }
  else
    for (int64_t i = 0; i < p->G * p->N * p->K; i++) p->wg[i] = 1.0f;

  /* Direct result: rows in n at stride ldo, unit stride in me, the plain
   * positions of a chunk contiguous after one another. */
  p->ldo = p->N > 1 ? p->on[1] - p->on[0] : cm;
  p->direct = p->ldo >= cm;
  for (int64_t me = 0; me < p->Me && p->direct; me++)
    if (p->ome[me] != me) p->direct = 0;
  for (int64_t n = 0; n < p->N && p->direct; n++)
    if (p->on[n] != n * p->ldo) p->direct = 0;
  for (int64_t mp = 0; mp < p->Mp && p->direct && p->chunk > 1; mp++)
    if (p->omp[mp] != mp * p->Me) p->direct = 0;
  *out = p;
  return 0;
generic:
  *out = p;
  return 0;
fail:
  exec_gemm_plan_free(p);
  return -1;
}

/* The generic loop: forward when c, else backward (da, dw may be NULL). */
static void generic_run(exec_gemm_plan_t *p, const float *a, const float *w, float *c, const float *dc, float *da,
                        float *dw) {
  ev_t *e = p->ev;
  if (c) memset(c, 0, sizeof(float) * (size_t)p->numel_c);
  if (da) memset(da, 0, sizeof(float) * (size_t)p->numel_a);
  if (dw) memset(dw, 0, sizeof(float) * (size_t)p->numel_w);
  memset(e->val, 0, sizeof e->val);
  for (;;) {
    int64_t oa = opnd_off(e, &p->a, p->nv), ow = p->has_w ? opnd_off(e, &p->w, p->nv) : 0;
    if (oa >= 0 && ow >= 0) {
      int64_t oc = 0;
      for (int j = 0; j < p->n_stage; j++) oc += e->val[p->stage_var[j]] * p->res_stride[p->stage_var[j]];
      float wv = p->has_w ? w[ow] : 1.0f;
      if (c) {
        c[oc] += p->alpha * a[oa] * wv;
      } else {
        float g = p->alpha * dc[oc];
        if (da) da[oa] += g * wv;
        if (dw) dw[ow] += g * a[oa];
      }
    }
    int j = p->n_stage - 1;
    for (; j >= 0; j--) {
      int i = p->stage_var[j];
      if (++e->val[i] < p->ext[i]) break;
      e->val[i] = 0;
    }
    if (j < 0) break;
  }
}

/* C = alpha op(A) op(B) + beta C, row-major, as cblas_sgemm. Products too
 * small to repay a BLAS call (a Hadamard stage has K = 1; a stage with many
 * groups has small ones) run as plain loops. */
#define SMALL_GEMM 4096 /* multiply-adds */
static void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                 const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m * n * k > SMALL_GEMM) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
    return;
  }
  for (int64_t i = 0; i < m; i++) {
    float *ci = c + i * ldc;
    if (beta == 0.0f)
      for (int64_t j = 0; j < n; j++) ci[j] = 0.0f;
    else if (beta != 1.0f)
      for (int64_t j = 0; j < n; j++) ci[j] *= beta;
    if (tb && !ta) { /* rows of A and B are both contiguous: dot products */
      for (int64_t j = 0; j < n; j++) {
        float acc = 0.0f;
        for (int64_t q = 0; q < k; q++) acc += a[i * lda + q] * b[j * ldb + q];
        ci[j] += alpha * acc;
      }
      continue;
    }
    for (int64_t q = 0; q < k; q++) {
      float x = alpha * (ta ? a[q * lda + i] : a[i * lda + q]);
      if (tb)
        for (int64_t j = 0; j < n; j++) ci[j] += x * b[j * ldb + q];
      else
        for (int64_t j = 0; j < n; j++) ci[j] += x * b[q * ldb + j];
    }
  }
}

/* wg from w; hold != 0 reuses the gather of the last call with the same hold and w. */
static void gather_weight(exec_gemm_plan_t *p, const float *w, uint64_t hold) {
  if (!p->has_w || (hold && p->held == hold && p->held_w == w)) return;
  p->held = hold;
  p->held_w = w;
  int64_t n = p->G * p->N * p->K;
  for (int64_t i = 0; i < n; i++) p->wg[i] = p->tw[i] >= 0 ? w[p->tw[i]] : 0.0f;
}

static void gather_col(const exec_gemm_plan_t *p, int64_t g, int64_t mp0, int64_t nc, const float *x) {
  const int64_t ld = nc * p->Me;
  for (int64_t k = 0; k < p->K; k++) {
    const int32_t *t = p->tin + (g * p->K + k) * p->Me;
    float *row = p->col + k * ld;
    const int32_t lo = p->run[2 * (g * p->K + k)], hi = p->run[2 * (g * p->K + k) + 1];
    if (lo >= 0) { /* one contiguous run: copy it, zero the padding around it */
      for (int64_t j = 0; j < nc; j++) {
        float *dst = row + j * p->Me;
        memset(dst, 0, (size_t)lo * sizeof *dst);
        if (hi > lo) memcpy(dst + lo, x + p->ip[mp0 + j] + t[lo], (size_t)(hi - lo) * sizeof *dst);
        memset(dst + hi, 0, (size_t)(p->Me - hi) * sizeof *dst);
      }
      continue;
    }
    for (int64_t j = 0; j < nc; j++) {
      const float *xb = x + p->ip[mp0 + j];
      float *dst = row + j * p->Me;
      for (int64_t me = 0; me < p->Me; me++) dst[me] = t[me] >= 0 ? xb[t[me]] : 0.0f;
    }
  }
}

static void scatter_col_add(const exec_gemm_plan_t *p, int64_t g, int64_t mp0, int64_t nc, const float *dcol,
                            float *dx) {
  const int64_t ld = nc * p->Me;
  for (int64_t k = 0; k < p->K; k++) {
    const int32_t *t = p->tin + (g * p->K + k) * p->Me;
    const float *row = dcol + k * ld;
    const int32_t lo = p->run[2 * (g * p->K + k)], hi = p->run[2 * (g * p->K + k) + 1];
    if (lo >= 0) { /* one contiguous run */
      for (int64_t j = 0; j < nc; j++) {
        float *xb = dx + p->ip[mp0 + j] + (hi > lo ? t[lo] : 0);
        const float *src = row + j * p->Me + lo;
        for (int32_t me = 0; me < hi - lo; me++) xb[me] += src[me];
      }
      continue;
    }
    for (int64_t j = 0; j < nc; j++) {
      float *xb = dx + p->ip[mp0 + j];
      const float *src = row + j * p->Me;
      for (int64_t me = 0; me < p->Me; me++)
        if (t[me] >= 0) xb[t[me]] += src[me];
    }
  }
}

void exec_gemm_forward(exec_gemm_plan_t *p, const float *x, const float *w, float *out, uint64_t hold) {
  if (p->generic) {
    generic_run(p, x, w, out, NULL, NULL, NULL);
    return;
  }
  gather_weight(p, w, hold);
  for (int64_t g = 0; g < p->G; g++)
    for (int64_t mp0 = 0; mp0 < p->Mp; mp0 += p->chunk) {
      int64_t nc = p->Mp - mp0 < p->chunk ? p->Mp - mp0 : p->chunk, ld = nc * p->Me;
      gather_col(p, g, mp0, nc, x);
      const float *wg = p->wg + g * p->N * p->K;
      if (p->direct) {
        gemm(false, false, p->N, ld, p->K, p->alpha, wg, p->K, p->col, ld, 0.0f, out + p->og[g] + p->omp[mp0], p->ldo);
        continue;
      }
      gemm(false, false, p->N, ld, p->K, p->alpha, wg, p->K, p->col, ld, 0.0f, p->cbuf, ld);
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

void exec_gemm_backward(exec_gemm_plan_t *p, const float *x, const float *w, const float *grad_out, float *dx,
                        float *dw) {
  if (!p->has_w) dw = NULL;
  if (!dx && !dw) return;
  if (p->generic) {
    generic_run(p, x, w, NULL, grad_out, dx, dw);
    return;
  }
  if (dx) {
    memset(dx, 0, sizeof(float) * (size_t)p->numel_a);
    gather_weight(p, w, 0);
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
        gemm(false, true, p->N, p->K, ld, p->alpha, dy, ldy, p->col, ld, mp0 == 0 ? 0.0f : 1.0f, p->dwg, p->K);
      }
      if (dx) {
        gemm(true, false, p->K, ld, p->N, p->alpha, p->wg + g * p->N * p->K, p->K, dy, ldy, 0.0f, dcol, ld);
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
