/*
 * Private helpers shared by the files of src/nn (not installed, not part of the API).
 * Names start with nn_ rather than syno_nn_ so nobody mistakes them for the contract.
 */
#ifndef SYNO_NN_INTERNAL_H
#define SYNO_NN_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "syno/nn.h"

/* CBLAS takes int dimensions; everything we pass must fit. */
static inline int nn_fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

/* Product of dims[from..to). */
static inline int64_t nn_prod(const int64_t *dims, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; i++) p *= dims[i];
  return p;
}

/* e^x in float, inlined so that elementwise loops vectorise (libm's expf is one call per
 * element). bench/act measures the layers that use it (act.c: restrict-qualified span
 * kernels, AVX-512 on this CPU) against libm, one thread, 64 Ki elements: SiLU 7.6x faster
 * forward (3.6 -> 0.47 ns per element), 5.7x backward; sigmoid 6.8x; GELU 33x. Before the
 * kernels were restrict-qualified and cloned, SiLU's forward ran its scalar loop (0.9x libm)
 * and took most of EfficientNetV2-S's inference. x = n ln 2 + r with
 * |r| <= ln 2 / 2; e^r by the degree-6 polynomial of the Cephes library's expf (about 1 ulp
 * here); 2^n written into the exponent bits. x is clamped to [ln FLT_MIN, 88.376], so the
 * result is finite and never below FLT_MIN times 0.7 (where libm would give inf or 0). */
static inline float nn_expf(float x) {
  x = x < -87.33654f ? -87.33654f : x > 88.37626f ? 88.37626f : x;
  const float fn = (x * 1.44269504f + 12582912.0f) - 12582912.0f; /* round(x / ln 2) */
  const float r = x - fn * 0.693359375f - fn * -2.12194440e-4f;  /* ln 2 in two parts */
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = ((int32_t)fn + 127) * (1 << 23);
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

/* Deployed inference (deploy.c): a frozen sequential's inference forward, with batch norms
 * folded and ReLUs fused into the layers before them. */
int nn_seq_forward_deployed(syno_layer_t *seq, const syno_tensor_t *x);
/* A batch norm's eval-mode map y = scale[c] * x + shift[c] (kept per freeze id): its channel
 * count, or -1 when l is not a batch norm. */
int64_t nn_bn_affine(syno_layer_t *l, const float **scale, const float **shift);
/* q = max(q, 0) over n floats. */
void nn_relu_inplace(float *q, int64_t n);

/* The gpt backbone (gpt.c), called by syno_backbone_build. */
/* A data file for zlib's gz* reading (gzip or plain), opened only when it is a regular file:
 * a FIFO, a device or a directory is refused at once (syno/file.h). NULL with err set
 * ("<path>: cannot open (...)" or "<path> is a FIFO, not a regular file"). gzFile is zlib's. */
struct gzFile_s;
struct gzFile_s *syno_nn_gzopen(const char *path, syno_error_t *err);

#endif
