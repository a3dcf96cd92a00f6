/*
 * Deployed inference: what a frozen sequential's inference forward does instead of running
 * its children one by one (syno_nn_freeze; seq_forward calls it).
 *
 * A batch norm in eval mode is a per-channel affine map y = scale * x + shift, and the
 * ReLU after it is a clamp; run as layers, each is one more pass over the activations. As
 * deployed networks do, a frozen sequential folds them into the layer before:
 *
 * - a conv2d followed by a batch norm (and a ReLU) runs with the norm folded into its weight
 *   and bias (w' = scale[o] * w, b' = scale[o] * b + shift[o]; computed once per freeze) and
 *   the ReLU fused (oneDNN's eltwise post-op, or the im2col path's bias pass);
 * - an operator slot folds them into its last stage when that is a oneDNN convolution
 *   writing the output's channels (src/model/slot.c, syno_exec_forward_affine), a residual
 *   sum fuses the ReLU into its add;
 * - any other layer that owns its output (an operator slot on GEMM stages, a pooling)
 *   followed by a batch norm and/or a ReLU gets them applied in place, in one pass
 *   (syno_nn_forward_affine).
 *
 * A layer whose output is a view (a flatten, a nested sequential) keeps the plain path: its
 * output may be another layer's tensor, such as the input a residual block reads again for
 * its shortcut. A layer that wraps another (an operator slot holding the standard conv2d)
 * passes the call on through its forward_affine hook. The skipped norm and ReLU layers keep
 * their last outputs, which nothing reads in inference. Training forwards never come here.
 */
#include "nn_internal.h"

static int is_kind(const syno_layer_t *l, const char *kind) { return !strcmp(l->ops->kind, kind); }

void syno_nn_channel_affine(syno_tensor_t *y, const float *scale, const float *shift, int relu) {
  if (!scale) {
    if (relu) nn_relu_inplace(y->data, syno_nn_tensor_numel(y));
    return;
  }
  const int64_t n = y->dims[0], c = y->dims[1], inner = nn_prod(y->dims, 2, y->ndim);
#pragma omp parallel for schedule(static) if (n * c * inner >= 65536)
  for (int64_t ch = 0; ch < c; ch++) {
    const float a = scale[ch], b = shift[ch];
    for (int64_t i = 0; i < n; i++) {
      float *q = y->data + (i * c + ch) * inner;
      if (relu)
        for (int64_t j = 0; j < inner; j++) {
          float v = q[j] * a + b;
          q[j] = v > 0.0f ? v : 0.0f;
        }
      else
        for (int64_t j = 0; j < inner; j++) q[j] = q[j] * a + b;
    }
  }
}

int syno_nn_forward_affine(syno_layer_t *l, const syno_tensor_t *x, const float *scale, const float *shift,
                           int relu) {
  if (l->frozen && l->ops->forward_affine) return l->ops->forward_affine(l, x, scale, shift, relu);
  int rc = syno_nn_forward(l, x, 0);
  if (rc) return rc;
  if (!l->out.owned || l->out.ndim < 2) return 1;
  syno_nn_channel_affine(&l->out, scale, shift, relu);
  return SYNO_NN_OK;
}

int nn_seq_forward_deployed(syno_layer_t *self, const syno_tensor_t *x) {
  const syno_tensor_t *cur = x;
  const int n = self->nchildren;
  for (int i = 0; i < n;) {
    syno_layer_t *c = self->children[i];
    syno_layer_t *bn = i + 1 < n && is_kind(self->children[i + 1], "batchnorm") ? self->children[i + 1] : NULL;
    const int r = i + 1 + (bn != NULL);
    const int relu = r < n && is_kind(self->children[r], "relu");
    const float *scale = NULL, *shift = NULL;
    int64_t od[SYNO_TENSOR_MAX_DIMS];
    int rc, nd = bn || relu ? syno_nn_out_shape(c, cur->ndim, cur->dims, od) : 0;
    if (nd >= 2 && (!bn || nn_bn_affine(bn, &scale, &shift) == od[1]))
      rc = syno_nn_forward_affine(c, cur, scale, shift, relu);
    else if (!(rc = syno_nn_forward(c, cur, 0)))
      rc = 1;
    if (rc < 0) return rc;
    i += rc == SYNO_NN_OK ? 1 + (bn != NULL) + relu : 1;
    cur = &c->out;
  }
  self->out = syno_nn_tensor_view(cur->data, cur->ndim, cur->dims);
  return SYNO_NN_OK;
}
