/* syno/dnnl.h - oneDNN's convolution, the one wrapper every layer uses.
 *
 * The standard conv2d layer (nn) and the executor's convolution stages (exec) both run
 * their convolutions here; nothing else in the tree calls oneDNN's convolution. A
 * convolution is described by its geometry (syno_dnnl_geo_t): batch, channels over all
 * groups, one to three spatial dimensions with kernel, stride, dilation and left padding
 * (the right padding follows from the output size). The caller's tensors are plain:
 * src [n][ic][in...], dst [n][oc][out...], weights [groups][oc/groups][ic/groups][k...]
 * (the same bytes as OIHW when groups = 1), bias [oc]. oneDNN picks its own (blocked)
 * layouts; the reorders to and from them are done around each call, and a frozen weight's
 * reorder is kept (the hold id, as syno_exec_hold_weights).
 *
 * A syno_dnnl_conv_t caches the primitives of a few geometries (it is created empty and
 * fills on first use). Not thread-safe per object; objects on different threads serialise
 * on the shared arena of blocked activations (see src/dnnl/conv.c). */
#ifndef SYNO_DNNL_H
#define SYNO_DNNL_H

#include <stdint.h>

#define SYNO_DNNL_MAX_SP 3

/* Zero-initialise before filling: the whole struct is the cache key. */
typedef struct {
  int nsp; /* spatial dimensions, 1..3 */
  int bias;
  int relu; /* ReLU fused after the forward (an inference-only geometry: no backward) */
  int64_t n, ic, oc, groups;
  int64_t in[SYNO_DNNL_MAX_SP], out[SYNO_DNNL_MAX_SP], k[SYNO_DNNL_MAX_SP];
  int64_t stride[SYNO_DNNL_MAX_SP], dil[SYNO_DNNL_MAX_SP]; /* dil 1: dense */
  int64_t pad[SYNO_DNNL_MAX_SP];                           /* left (top) padding */
} syno_dnnl_geo_t;

enum { SYNO_DNNL_OK = 0, SYNO_DNNL_ENOMEM = -1, SYNO_DNNL_EINVAL = -4 };

typedef struct syno_dnnl_conv syno_dnnl_conv_t;

/* NULL when oneDNN has no CPU engine or memory runs out. */
syno_dnnl_conv_t *syno_dnnl_conv_new(void);
void syno_dnnl_conv_free(syno_dnnl_conv_t *d);

/* Whether oneDNN accepts geometry g (creating its forward primitive if it is new). */
int syno_dnnl_conv_supported(syno_dnnl_conv_t *d, const syno_dnnl_geo_t *g);

/* dst = conv(src, wei) + bias (bias may be NULL when !g->bias), clamped at 0 when g->relu.
 * train selects the training primitive; with !train and hold != 0 the weights are the same
 * as in the previous call under the same hold id, so their reordered copy is reused. SYNO_DNNL_EINVAL when oneDNN
 * rejects g (nothing written). */
int syno_dnnl_conv_forward(syno_dnnl_conv_t *d, const syno_dnnl_geo_t *g, const float *src, const float *wei,
                           const float *bias, float *dst, int train, uint64_t hold);

/* The gradients given ddst: dwei (and dbias when g->bias) are added to (accumulate) or
 * overwritten; dsrc (NULL: not wanted) is overwritten. */
int syno_dnnl_conv_backward(syno_dnnl_conv_t *d, const syno_dnnl_geo_t *g, const float *src, const float *ddst,
                            const float *wei, float *dwei, float *dbias, float *dsrc, int accumulate);

/* Output side of a dimension of input in, kernel k, stride s, left and right padding p, dilation
 * dl (PyTorch's floor rule); 0 when the kernel does not fit. */
int64_t syno_dnnl_out_side(int64_t in, int64_t k, int64_t s, int64_t p, int64_t dl);

#endif
