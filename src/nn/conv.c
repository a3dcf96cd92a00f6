/*
 * 2-D convolution as im2col + sgemm.
 *
 * The batch is processed in chunks of nb images. For a chunk, the column matrix col has one
 * row per (c, i, j) input tap and one column per (image, output pixel):
 *     col[(c*kh + i)*kw + j][b*OH*OW + oh*OW + ow] = x[b][c][oh*sh - ph + i*dh][ow*sw - pw + j*dw]
 * so rows of one group are contiguous and each group is one GEMM with the weight block
 * W_g [K/g, C/g*kh*kw]. Batching images into one GEMM matters on small feature maps (7x7 in
 * a ResNet's last stage gives only 49 columns per image, too few for an efficient GEMM); the
 * chunk is bounded by workspace_floats so col stays cache-friendly and memory stays bounded.
 * The GEMM result is [K][nb*OHW], which is scattered back to NCHW; with nb == 1 it already
 * is NCHW and the GEMM writes straight into the output.
 *
 * col is recomputed in backward rather than kept from forward: storing it for every layer
 * would cost kh*kw times the activation memory, and im2col is cheap next to the GEMMs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "nn_internal.h"
#include "syno/dnnl.h"
#include "syno/clock.h"
#include "syno/train.h"

#define DEFAULT_WORKSPACE (INT64_C(1) << 20)

typedef struct conv {
  syno_layer_t base;
  syno_conv2d_cfg_t cfg;
  float *col; /* [ckk][nb*ohw] */
  float *tmp; /* [K][nb*ohw]: GEMM output / gathered dy when nb > 1 */
  int64_t col_cap, tmp_cap;
  syno_dnnl_conv_t *dnnl; /* oneDNN primitives (NULL for the im2col backend) */
  int used;             /* backend of the last forward; -1 before the first */
  float *fold;          /* [K*CKK + K]: weight and bias with a batch norm folded in (deploy.c) */
  uint64_t fold_id;     /* the freeze id fold was computed under */
} conv_t;

/* Geometry of one call. */
typedef struct geom {
  int64_t n, c, h, w, k, oh, ow, ohw, ckk, g, cg, kg, ckkg;
} geom_t;

/* The conv2d of c on an input of geometry g, as the shared oneDNN module takes it. */
static void dnnl_geo(const syno_conv2d_cfg_t *c, const geom_t *g, syno_dnnl_geo_t *d) {
  *d = (syno_dnnl_geo_t){.nsp = 2,
                         .bias = c->bias,
                         .n = g->n,
                         .ic = c->in_channels,
                         .oc = c->out_channels,
                         .groups = c->groups,
                         .in = {g->h, g->w},
                         .out = {g->oh, g->ow},
                         .k = {c->kernel_h, c->kernel_w},
                         .stride = {c->stride_h, c->stride_w},
                         .dil = {c->dilation_h, c->dilation_w},
                         .pad = {c->pad_h, c->pad_w}};
}

static int dnnl_rc(int rc) {
  return rc == SYNO_DNNL_OK ? SYNO_NN_OK : rc == SYNO_DNNL_ENOMEM ? SYNO_NN_ENOMEM : SYNO_NN_EINVAL;
}

static int conv_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  const syno_conv2d_cfg_t *c = &((const conv_t *)self)->cfg;
  if (ndim != 4 || dims[1] != c->in_channels) return SYNO_NN_ESHAPE;
  int64_t oh = syno_dnnl_out_side(dims[2], c->kernel_h, c->stride_h, c->pad_h, c->dilation_h);
  int64_t ow = syno_dnnl_out_side(dims[3], c->kernel_w, c->stride_w, c->pad_w, c->dilation_w);
  if (oh <= 0 || ow <= 0) return SYNO_NN_ESHAPE;
  out[0] = dims[0];
  out[1] = c->out_channels;
  out[2] = oh;
  out[3] = ow;
  return 4;
}

/* Range of output columns ow whose input column ow*s + off lies in [0, w). */
static void valid_range(int64_t off, int64_t s, int64_t w, int64_t ow, int64_t *lo, int64_t *hi) {
  int64_t a = off < 0 ? (-off + s - 1) / s : 0;
  int64_t b = w - 1 - off < 0 ? 0 : (w - 1 - off) / s + 1;
  if (b > ow) b = ow;
  if (a > b) a = b;
  *lo = a;
  *hi = b;
}

static void im2col(const conv_t *cv, const geom_t *g, const float *x, int64_t nb, float *col) {
  const syno_conv2d_cfg_t *c = &cv->cfg;
  const int64_t ld = nb * g->ohw, hw = g->h * g->w;
  for (int64_t ch = 0; ch < g->c; ch++)
    for (int64_t i = 0; i < c->kernel_h; i++)
      for (int64_t j = 0; j < c->kernel_w; j++) {
        float *row = col + ((ch * c->kernel_h + i) * c->kernel_w + j) * ld;
        int64_t off_w = j * c->dilation_w - c->pad_w, lo, hi;
        valid_range(off_w, c->stride_w, g->w, g->ow, &lo, &hi);
        for (int64_t b = 0; b < nb; b++) {
          const float *xp = x + (b * g->c + ch) * hw;
          float *dst = row + b * g->ohw;
          for (int64_t oh = 0; oh < g->oh; oh++, dst += g->ow) {
            int64_t ih = oh * c->stride_h - c->pad_h + i * c->dilation_h;
            if (ih < 0 || ih >= g->h) {
              memset(dst, 0, (size_t)g->ow * sizeof *dst);
              continue;
            }
            /* Index from the row start: src + off_w may point before the array. */
            const float *src = xp + ih * g->w;
            for (int64_t o = 0; o < lo; o++) dst[o] = 0.0f;
            if (c->stride_w == 1)
              memcpy(dst + lo, src + lo + off_w, (size_t)(hi - lo) * sizeof *dst);
            else
              for (int64_t o = lo; o < hi; o++) dst[o] = src[o * c->stride_w + off_w];
            for (int64_t o = hi; o < g->ow; o++) dst[o] = 0.0f;
          }
        }
      }
}

/* dx (zeroed by the caller) += the columns scattered back to their input pixels. */
static void col2im(const conv_t *cv, const geom_t *g, const float *col, int64_t nb, float *dx) {
  const syno_conv2d_cfg_t *c = &cv->cfg;
  const int64_t ld = nb * g->ohw, hw = g->h * g->w;
  for (int64_t ch = 0; ch < g->c; ch++)
    for (int64_t i = 0; i < c->kernel_h; i++)
      for (int64_t j = 0; j < c->kernel_w; j++) {
        const float *row = col + ((ch * c->kernel_h + i) * c->kernel_w + j) * ld;
        int64_t off_w = j * c->dilation_w - c->pad_w, lo, hi;
        valid_range(off_w, c->stride_w, g->w, g->ow, &lo, &hi);
        for (int64_t b = 0; b < nb; b++) {
          float *xp = dx + (b * g->c + ch) * hw;
          const float *src = row + b * g->ohw;
          for (int64_t oh = 0; oh < g->oh; oh++, src += g->ow) {
            int64_t ih = oh * c->stride_h - c->pad_h + i * c->dilation_h;
            if (ih < 0 || ih >= g->h) continue;
            float *dst = xp + ih * g->w;
            if (c->stride_w == 1)
              for (int64_t o = lo; o < hi; o++) dst[o + off_w] += src[o];
            else
              for (int64_t o = lo; o < hi; o++) dst[o * c->stride_w + off_w] += src[o];
          }
        }
      }
}

static int make_geom(const conv_t *cv, const syno_tensor_t *x, geom_t *g) {
  int64_t od[4];
  if (conv_out_shape(&cv->base, x->ndim, x->dims, od) < 0) return SYNO_NN_ESHAPE;
  const syno_conv2d_cfg_t *c = &cv->cfg;
  g->n = x->dims[0];
  g->c = x->dims[1];
  g->h = x->dims[2];
  g->w = x->dims[3];
  g->k = c->out_channels;
  g->oh = od[2];
  g->ow = od[3];
  g->ohw = g->oh * g->ow;
  g->ckk = g->c * c->kernel_h * c->kernel_w;
  g->g = c->groups;
  g->cg = g->c / g->g;
  g->kg = g->k / g->g;
  g->ckkg = g->ckk / g->g;
  return SYNO_NN_OK;
}

/* Images per chunk, and room for its buffers. */
static int plan_chunk(conv_t *cv, const geom_t *g, int64_t *nb_out) {
  int64_t per_image = (g->ckk + g->k) * g->ohw;
  int64_t nb = cv->cfg.workspace_floats / (per_image > 0 ? per_image : 1);
  if (nb < 1) nb = 1;
  if (nb > g->n) nb = g->n;
  /* CBLAS takes int sizes and leading dimensions. */
  while (nb > 1 && !nn_fits_int(nb * g->ohw)) nb /= 2;
  if (!nn_fits_int(nb * g->ohw) || !nn_fits_int(g->ckk) || !nn_fits_int(g->k)) return SYNO_NN_ESHAPE;
  int64_t need_col = g->ckk * nb * g->ohw, need_tmp = nb > 1 ? g->k * nb * g->ohw : 0;
  if (need_col > cv->col_cap) {
    free(cv->col);
    cv->col = malloc((size_t)need_col * sizeof(float));
    cv->col_cap = cv->col ? need_col : 0;
    if (!cv->col) return SYNO_NN_ENOMEM;
  }
  if (need_tmp > cv->tmp_cap) {
    free(cv->tmp);
    cv->tmp = malloc((size_t)need_tmp * sizeof(float));
    cv->tmp_cap = cv->tmp ? need_tmp : 0;
    if (!cv->tmp) return SYNO_NN_ENOMEM;
  }
  *nb_out = nb;
  return SYNO_NN_OK;
}

/* The forward with weight w and bias (NULL: none), ReLU applied when relu (inference only);
 * hold as syno_dnnl_conv_forward's. */
static int conv_run(conv_t *cv, const syno_tensor_t *x, int train, const float *w, const float *bias, int relu,
                    uint64_t hold) {
  syno_layer_t *self = &cv->base;
  geom_t g;
  int64_t nb, od[4];
  int rc = make_geom(cv, x, &g);
  if (rc) return rc;
  conv_out_shape(self, 4, x->dims, od);
  if ((rc = syno_nn_tensor_resize(&self->out, 4, od))) return rc;
  float *y = self->out.data;
  syno_dnnl_geo_t dg;
  dnnl_geo(&cv->cfg, &g, &dg);
  dg.bias = bias != NULL;
  dg.relu = relu;
  if (cv->dnnl && syno_dnnl_conv_supported(cv->dnnl, &dg)) {
    rc = dnnl_rc(syno_dnnl_conv_forward(cv->dnnl, &dg, x->data, w, bias, y, train, hold));
    if (rc) return rc;
    syno_nn_begin_forward(self, x, train);
    cv->used = SYNO_CONV_ONEDNN;
    return SYNO_NN_OK;
  }
  if (cv->cfg.backend == SYNO_CONV_ONEDNN) return SYNO_NN_EINVAL;
  if ((rc = plan_chunk(cv, &g, &nb))) return rc;
  syno_nn_begin_forward(self, x, train);
  cv->used = SYNO_CONV_IM2COL;
  for (int64_t n0 = 0; n0 < g.n; n0 += nb) {
    int64_t cnt = g.n - n0 < nb ? g.n - n0 : nb, ld = cnt * g.ohw;
    float *res = cnt == 1 ? y + n0 * g.k * g.ohw : cv->tmp;
    im2col(cv, &g, x->data + n0 * g.c * g.h * g.w, cnt, cv->col);
    for (int64_t gi = 0; gi < g.g; gi++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g.kg, (int)ld, (int)g.ckkg, 1.0f,
                  w + gi * g.kg * g.ckkg, (int)g.ckkg, cv->col + gi * g.ckkg * ld, (int)ld, 0.0f, res + gi * g.kg * ld,
                  (int)ld);
    for (int64_t b = 0; b < cnt; b++)
      for (int64_t k = 0; k < g.k; k++) {
        float *dst = y + ((n0 + b) * g.k + k) * g.ohw;
        const float *src = res + k * ld + b * g.ohw;
        float bk = bias ? bias[k] : 0.0f;
        if (relu)
          for (int64_t s = 0; s < g.ohw; s++) dst[s] = src[s] + bk > 0.0f ? src[s] + bk : 0.0f;
        else if (dst != src)
          for (int64_t s = 0; s < g.ohw; s++) dst[s] = src[s] + bk;
        else if (bias)
          for (int64_t s = 0; s < g.ohw; s++) dst[s] += bk;
      }
  }
  return SYNO_NN_OK;
}

static int conv_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  conv_t *cv = (conv_t *)self;
  return conv_run(cv, x, train, self->params[0].value.data, cv->cfg.bias ? self->params[1].value.data : NULL, 0,
                  self->frozen);
}

/* forward_affine (deploy.c): the map folded into the weight and bias once per freeze, the ReLU
 * fused. */
static int conv_forward_affine(syno_layer_t *self, const syno_tensor_t *x, const float *scale, const float *shift,
                               int relu) {
  conv_t *cv = (conv_t *)self;
  const float *w = self->params[0].value.data, *b = cv->cfg.bias ? self->params[1].value.data : NULL;
  if (scale) {
    const int64_t k = cv->cfg.out_channels, per = syno_nn_tensor_numel(&self->params[0].value) / k;
    if (!cv->fold) {
      cv->fold = malloc((size_t)(k * per + k) * sizeof *cv->fold);
      if (!cv->fold) return SYNO_NN_ENOMEM;
    }
    if (cv->fold_id != self->frozen) {
      for (int64_t o = 0; o < k; o++) {
        for (int64_t i = 0; i < per; i++) cv->fold[o * per + i] = w[o * per + i] * scale[o];
        cv->fold[k * per + o] = (b ? b[o] * scale[o] : 0.0f) + shift[o];
      }
      cv->fold_id = self->frozen;
    }
    w = cv->fold;
    b = cv->fold + k * per;
  }
  return conv_run(cv, x, 0, w, b, relu, self->frozen);
}

static int conv_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  conv_t *cv = (conv_t *)self;
  const syno_tensor_t *x = &self->in;
  geom_t g;
  int64_t nb;
  int skip, rc = make_geom(cv, x, &g);
  if (rc) return rc;
  const float *w = self->params[0].value.data;
  float *dw = self->params[0].grad.data;
  if (cv->used == SYNO_CONV_ONEDNN) {
    if ((rc = syno_nn_prepare_grad_in(self, &skip))) return rc;
    syno_dnnl_geo_t dg;
    dnnl_geo(&cv->cfg, &g, &dg);
    return dnnl_rc(syno_dnnl_conv_backward(cv->dnnl, &dg, x->data, dy->data, w, dw,
                                           cv->cfg.bias ? self->params[1].grad.data : NULL,
                                           skip ? NULL : self->grad_in.data, 1));
  }
  if ((rc = plan_chunk(cv, &g, &nb)) || (rc = syno_nn_prepare_grad_in(self, &skip))) return rc;
  if (cv->cfg.bias) {
    float *db = self->params[1].grad.data;
    for (int64_t k = 0; k < g.k; k++) {
      double s = 0.0;
      for (int64_t n = 0; n < g.n; n++) {
        const float *p = dy->data + (n * g.k + k) * g.ohw;
        for (int64_t i = 0; i < g.ohw; i++) s += p[i];
      }
      db[k] += (float)s;
    }
  }
  if (!skip) syno_nn_tensor_zero(&self->grad_in);
  for (int64_t n0 = 0; n0 < g.n; n0 += nb) {
    int64_t cnt = g.n - n0 < nb ? g.n - n0 : nb, ld = cnt * g.ohw;
    const float *dyt = dy->data + n0 * g.k * g.ohw;
    if (cnt > 1) {
      for (int64_t b = 0; b < cnt; b++)
        for (int64_t k = 0; k < g.k; k++)
          memcpy(cv->tmp + k * ld + b * g.ohw, dyt + (b * g.k + k) * g.ohw, (size_t)g.ohw * sizeof(float));
      dyt = cv->tmp;
    }
    im2col(cv, &g, x->data + n0 * g.c * g.h * g.w, cnt, cv->col);
    for (int64_t gi = 0; gi < g.g; gi++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g.kg, (int)g.ckkg, (int)ld, 1.0f, dyt + gi * g.kg * ld,
                  (int)ld, cv->col + gi * g.ckkg * ld, (int)ld, 1.0f, dw + gi * g.kg * g.ckkg, (int)g.ckkg);
    if (skip) continue;
    /* col is free again: reuse it for d(col). */
    for (int64_t gi = 0; gi < g.g; gi++)
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)g.ckkg, (int)ld, (int)g.kg, 1.0f,
                  w + gi * g.kg * g.ckkg, (int)g.ckkg, dyt + gi * g.kg * ld, (int)ld, 0.0f, cv->col + gi * g.ckkg * ld,
                  (int)ld);
    col2im(cv, &g, cv->col, cnt, self->grad_in.data + n0 * g.c * g.h * g.w);
  }
  return SYNO_NN_OK;
}

static void conv_destroy(syno_layer_t *self) {
  conv_t *cv = (conv_t *)self;
  free(cv->col);
  free(cv->tmp);
  free(cv->fold);
  syno_dnnl_conv_free(cv->dnnl);
}

static const syno_layer_ops_t conv_ops = {
    "conv2d", conv_forward, conv_backward, conv_out_shape, conv_destroy, conv_forward_affine,
};

syno_layer_t *syno_nn_conv2d_create(const syno_conv2d_cfg_t *cfg, syno_rng_t *rng) {
  if (!cfg || !rng) return NULL;
  syno_conv2d_cfg_t c = *cfg;
  if (c.stride_h == 0) c.stride_h = 1;
  if (c.stride_w == 0) c.stride_w = 1;
  if (c.dilation_h == 0) c.dilation_h = 1;
  if (c.dilation_w == 0) c.dilation_w = 1;
  if (c.groups == 0) c.groups = 1;
  if (c.workspace_floats <= 0) c.workspace_floats = DEFAULT_WORKSPACE;
  c.bias = c.bias != 0;
  if (c.in_channels <= 0 || c.out_channels <= 0 || c.kernel_h <= 0 || c.kernel_w <= 0 || c.stride_h < 0 ||
      c.stride_w < 0 || c.pad_h < 0 || c.pad_w < 0 || c.dilation_h < 0 || c.dilation_w < 0 || c.groups < 0 ||
      c.in_channels % c.groups || c.out_channels % c.groups || c.backend < SYNO_CONV_AUTO ||
      c.backend > SYNO_CONV_ONEDNN)
    return NULL;
  conv_t *cv = syno_nn_layer_new(sizeof *cv, &conv_ops, c.bias ? 2 : 1);
  if (!cv) return NULL;
  cv->cfg = c;
  cv->used = -1;
  syno_layer_t *l = &cv->base;
  if (c.backend != SYNO_CONV_IM2COL) {
    cv->dnnl = syno_dnnl_conv_new();
    /* AUTO without a working oneDNN engine still runs, on im2col. */
    if (!cv->dnnl && c.backend == SYNO_CONV_ONEDNN) {
      syno_nn_layer_free(l);
      return NULL;
    }
  }
  int64_t wd[4] = {c.out_channels, c.in_channels / c.groups, c.kernel_h, c.kernel_w};
  int64_t fan_in = wd[1] * wd[2] * wd[3];
  if (syno_nn_param_init(&l->params[0], "weight", 4, wd)) {
    syno_nn_layer_free(l);
    return NULL;
  }
  syno_nn_fill_normal(rng, &l->params[0].value, 0.0, sqrt(2.0 / (double)fan_in));
  if (c.bias) {
    if (syno_nn_param_init(&l->params[1], "bias", 1, &c.out_channels)) {
      syno_nn_layer_free(l);
      return NULL;
    }
    double bound = 1.0 / sqrt((double)fan_in);
    syno_nn_fill_uniform(rng, &l->params[1].value, -bound, bound);
    l->params[1].no_decay = 1;
  }
  return l;
}

const syno_conv2d_cfg_t *syno_nn_conv2d_cfg(const syno_layer_t *l) {
  return l && l->ops == &conv_ops ? &((const conv_t *)l)->cfg : NULL;
}

int syno_nn_conv2d_used_backend(const syno_layer_t *l) {
  return l && l->ops == &conv_ops ? ((const conv_t *)l)->used : -1;
}

int syno_nn_conv2d_latency(const syno_conv2d_cfg_t *cfg, int64_t n, int64_t h, int64_t w, int repeats, double *seconds,
                           syno_error_t *err) {
  if (!cfg || !seconds || repeats < 1 || n < 1 || h < 1 || w < 1)
    return syno_error_set(err,
                          "conv2d latency: bad argument (need cfg, seconds, "
                          "repeats >= 1 and positive n, h, w)");
  syno_rng_t rng;
  syno_rng_seed(&rng, 1, 1);
  syno_layer_t *l = syno_nn_conv2d_create(cfg, &rng);
  if (!l) return syno_error_set(err, "conv2d latency: invalid configuration or out of memory");
  int64_t xd[4] = {n, cfg->in_channels, h, w};
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  double *t = malloc((size_t)repeats * sizeof *t);
  int rc = t ? syno_nn_tensor_alloc(&x, 4, xd) : SYNO_NN_ENOMEM;
  if (!rc) {
    syno_nn_fill_normal(&rng, &x, 0.0, 1.0);
    syno_nn_freeze(l, 1); /* the weight reordered once, as deployed (syno_nn_freeze) */
    rc = syno_nn_forward(l, &x, 0); /* warm-up: creates primitives, touches buffers */
  }
  for (int i = 0; !rc && i < repeats; i++) {
    double t0 = syno_clock_seconds();
    rc = syno_nn_forward(l, &x, 0);
    t[i] = syno_clock_seconds() - t0;
  }
  if (!rc) *seconds = syno_median(t, repeats);
  free(t);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(l);
  if (rc)
    return syno_error_set(err, "conv2d latency: forward of [%lld, %lld, %lld, %lld] failed: %s", (long long)n,
                          (long long)cfg->in_channels, (long long)h, (long long)w, syno_nn_status_str(rc));
  return 0;
}
