/*
 * Causal multi-head self-attention (the part between the projections). The input packs the
 * queries, keys and values along the last dim, [B, T, 3C] = [q | k | v], each C = heads * D
 * with head h in columns h*D .. h*D+D-1. Per batch element and head, with scale 1/sqrt(D):
 *   S = scale * Q K^T  (T x T),  P = softmax over each row of S with S[i][j] = -inf for j > i,
 *   Y = P V,
 * and the output is [B, T, C] with head h in columns h*D... Backward, with dY given:
 *   dV = P^T dY,  dP = dY V^T,  dS[i][j] = P[i][j] (dP[i][j] - sum_k dP[i][k] P[i][k]),
 *   dQ = scale * dS K,  dK = scale * dS^T Q.
 * P is kept from the forward ([B, heads, T, T]). Every matrix product is one cblas_sgemm on
 * strided views of the packed input, so nothing is transposed or copied.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "nn_internal.h"

typedef struct attn {
  syno_layer_t base;
  int64_t heads;
  syno_tensor_t probs; /* P of the last forward, [B, heads, T, T] */
  syno_tensor_t dp;    /* scratch [T, T] */
} attn_t;

static int attn_out_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  const attn_t *a = (const attn_t *)self;
  if (ndim != 3 || dims[0] < 1 || dims[1] < 1 || dims[2] % (3 * a->heads) != 0 || dims[2] < 3) return SYNO_NN_ESHAPE;
  out[0] = dims[0];
  out[1] = dims[1];
  out[2] = dims[2] / 3;
  return 3;
}

static int attn_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  attn_t *a = (attn_t *)self;
  int64_t od[3];
  int rc = attn_out_shape(self, x->ndim, x->dims, od);
  if (rc < 0) return rc;
  const int64_t B = x->dims[0], T = x->dims[1], C = od[2], H = a->heads, D = C / H;
  if (!nn_fits_int(3 * C) || !nn_fits_int(T * T)) return SYNO_NN_ESHAPE;
  int64_t pd[4] = {B, H, T, T};
  if ((rc = syno_nn_tensor_resize(&self->out, 3, od)) || (rc = syno_nn_tensor_resize(&a->probs, 4, pd))) return rc;
  syno_nn_begin_forward(self, x, train);
  const float scale = (float)(1.0 / sqrt((double)D));
  const int ld = (int)(3 * C), t = (int)T, d = (int)D;
  for (int64_t b = 0; b < B; b++) {
    const float *xb = x->data + b * T * 3 * C;
    float *yb = self->out.data + b * T * C;
    for (int64_t h = 0; h < H; h++) {
      const float *q = xb + h * D, *k = xb + C + h * D, *v = xb + 2 * C + h * D;
      float *p = a->probs.data + (b * H + h) * T * T;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, d, scale, q, ld, k, ld, 0.0f, p, t);
      for (int64_t i = 0; i < T; i++) {
        float *row = p + i * T;
        float mx = row[0];
        for (int64_t j = 1; j <= i; j++) mx = row[j] > mx ? row[j] : mx;
        double s = 0.0;
        for (int64_t j = 0; j <= i; j++) {
          row[j] = nn_expf(row[j] - mx);
          s += row[j];
        }
        const float inv = (float)(1.0 / s);
        for (int64_t j = 0; j <= i; j++) row[j] *= inv;
        for (int64_t j = i + 1; j < T; j++) row[j] = 0.0f;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, d, t, 1.0f, p, t, v, ld, 0.0f, yb + h * D, (int)C);
    }
  }
  return SYNO_NN_OK;
}

static int attn_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  attn_t *a = (attn_t *)self;
  int skip, rc = syno_nn_prepare_grad_in(self, &skip);
  if (rc || skip) /* no parameters: without an input gradient there is nothing to do */
    return rc;
  const syno_tensor_t *x = &self->in;
  const int64_t B = x->dims[0], T = x->dims[1], C = x->dims[2] / 3, H = a->heads, D = C / H;
  int64_t td[2] = {T, T};
  if ((rc = syno_nn_tensor_resize(&a->dp, 2, td))) return rc;
  const float scale = (float)(1.0 / sqrt((double)D));
  const int ld = (int)(3 * C), t = (int)T, d = (int)D;
  float *ds = a->dp.data;
  for (int64_t b = 0; b < B; b++) {
    const float *xb = x->data + b * T * 3 * C, *gb = dy->data + b * T * C;
    float *gx = self->grad_in.data + b * T * 3 * C;
    for (int64_t h = 0; h < H; h++) {
      const float *q = xb + h * D, *k = xb + C + h * D, *v = xb + 2 * C + h * D;
      const float *g = gb + h * D;
      const float *p = a->probs.data + (b * H + h) * T * T;
      float *dq = gx + h * D, *dk = gx + C + h * D, *dv = gx + 2 * C + h * D;
      /* dV = P^T dY */
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, d, t, 1.0f, p, t, g, (int)C, 0.0f, dv, ld);
      /* dP = dY V^T, then dS in place */
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, t, t, d, 1.0f, g, (int)C, v, ld, 0.0f, ds, t);
      for (int64_t i = 0; i < T; i++) {
        float *r = ds + i * T;
        const float *pr = p + i * T;
        double dot = 0.0;
        for (int64_t j = 0; j <= i; j++) dot += (double)r[j] * pr[j];
        for (int64_t j = 0; j <= i; j++) r[j] = pr[j] * (r[j] - (float)dot);
        for (int64_t j = i + 1; j < T; j++) r[j] = 0.0f;
      }
      /* dQ = scale dS K, dK = scale dS^T Q */
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t, d, t, scale, ds, t, k, ld, 0.0f, dq, ld);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, t, d, t, scale, ds, t, q, ld, 0.0f, dk, ld);
    }
  }
  return SYNO_NN_OK;
}

static void attn_destroy(syno_layer_t *self) {
  attn_t *a = (attn_t *)self;
  syno_nn_tensor_free(&a->probs);
  syno_nn_tensor_free(&a->dp);
}

static const syno_layer_ops_t attn_ops = {
    "causal_attention", attn_forward, attn_backward, attn_out_shape, attn_destroy, NULL,
};

syno_layer_t *syno_nn_causal_attention_create(int64_t heads) {
  if (heads < 1 || !nn_fits_int(heads)) return NULL;
  attn_t *a = syno_nn_layer_new(sizeof *a, &attn_ops, 0);
  if (!a) return NULL;
  a->heads = heads;
  return &a->base;
}

const syno_tensor_t *syno_nn_causal_attention_probs(const syno_layer_t *l) {
  if (!l || l->ops != &attn_ops) return NULL;
  return &((const attn_t *)l)->probs;
}
