/* Element-wise activations: ReLU, GELU, SiLU, sigmoid. ReLU's and sigmoid's backward read their
 * output (y > 0 iff x > 0; sigmoid' = y (1 - y)), GELU's and SiLU's the input, which the layer
 * already keeps as a view.
 *
 * Each pass is a kernel over one span of elements (act_run): spans are split over the OpenMP
 * threads when the tensor is large enough, and the kernels that evaluate e^x are compiled for
 * AVX-512 and AVX2 besides the baseline, the CPU picking one when the library loads (GCC's
 * target_clones). bench/act times them; before, SiLU's forward loop stayed scalar and took most
 * of EfficientNetV2-S's inference. */
#include <math.h>
#include <string.h>

#include "nn_internal.h"

/* Elements per kernel call, and the tensor size from which the spans go to several threads. */
#define ACT_SPAN 16384
#define ACT_PARALLEL_MIN 65536

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define ACT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ACT_CLONES
#endif

/* q[i] = f(a[i], b[i]) for i < n; b is the second operand of a backward pass (NULL forward). */
typedef void (*act_kernel_t)(const float *restrict a, const float *restrict b, float *restrict q, int64_t n);

static void act_run(act_kernel_t kernel, const float *a, const float *b, float *q, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= ACT_PARALLEL_MIN)
  for (int64_t s = 0; s < n; s += ACT_SPAN) kernel(a + s, b ? b + s : NULL, q + s, n - s < ACT_SPAN ? n - s : ACT_SPAN);
}

static int same_shape(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out) {
  (void)self;
  memcpy(out, dims, (size_t)ndim * sizeof *out);
  return ndim;
}

/* The layers' two passes around a kernel: forward writes f(x) into the output; backward
 * writes f'(src, dy) into the input gradient, src being the layer's input or output. */
static int act_forward(syno_layer_t *self, const syno_tensor_t *x, int train, act_kernel_t kernel) {
  int rc = syno_nn_tensor_resize_like(&self->out, x);
  if (rc) return rc;
  syno_nn_begin_forward(self, x, train);
  act_run(kernel, x->data, NULL, self->out.data, syno_nn_tensor_numel(x));
  return SYNO_NN_OK;
}

static int act_backward(syno_layer_t *self, const syno_tensor_t *dy, const syno_tensor_t *src, act_kernel_t kernel) {
  int skip, rc = syno_nn_prepare_grad_in(self, &skip);
  if (rc || skip) return rc;
  act_run(kernel, src->data, dy->data, self->grad_in.data, syno_nn_tensor_numel(dy));
  return SYNO_NN_OK;
}

static void relu_fwd(const float *restrict p, const float *restrict unused, float *restrict q, int64_t n) {
  (void)unused;
  for (int64_t i = 0; i < n; i++) q[i] = p[i] > 0.0f ? p[i] : 0.0f;
}

static void relu_bwd(const float *restrict y, const float *restrict g, float *restrict q, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    const float gi = g[i]; /* read unconditionally: the select then vectorizes (a branch mispredicts half the time) */
    q[i] = y[i] > 0.0f ? gi : 0.0f;
  }
}

static void relu_self(float *q, int64_t n) {
  for (int64_t i = 0; i < n; i++) q[i] = q[i] > 0.0f ? q[i] : 0.0f;
}

void nn_relu_inplace(float *q, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= ACT_PARALLEL_MIN)
  for (int64_t s = 0; s < n; s += ACT_SPAN) relu_self(q + s, n - s < ACT_SPAN ? n - s : ACT_SPAN);
}

static int relu_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  return act_forward(self, x, train, relu_fwd);
}

static int relu_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  return act_backward(self, dy, &self->out, relu_bwd);
}

static const syno_layer_ops_t relu_ops = {
    "relu", relu_forward, relu_backward, same_shape, NULL, NULL,
};

syno_layer_t *syno_nn_relu_create(void) { return syno_nn_layer_new(sizeof(syno_layer_t), &relu_ops, 0); }

static inline float sigm(float v) { return 1.0f / (1.0f + nn_expf(-v)); }

/* GELU in its tanh form, 0.5 v (1 + tanh(u)), computed as v sigmoid(2u) (the same function:
 * 1 + tanh(u) = 2 sigmoid(2u)), so that it vectorises through nn_expf. */
#define GELU_C 0.7978845608028654 /* sqrt(2/pi) */
#define GELU_A 0.044715

ACT_CLONES static void gelu_fwd(const float *restrict p, const float *restrict unused, float *restrict q, int64_t n) {
  (void)unused;
  for (int64_t i = 0; i < n; i++) {
    float v = p[i];
    q[i] = v * sigm(2.0f * (float)GELU_C * (v + (float)GELU_A * v * v * v));
  }
}

ACT_CLONES static void gelu_bwd(const float *restrict p, const float *restrict g, float *restrict q, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float v = p[i];
    float sg = sigm(2.0f * (float)GELU_C * (v + (float)GELU_A * v * v * v));
    float du = (float)GELU_C * (1.0f + 3.0f * (float)GELU_A * v * v);
    q[i] = g[i] * (sg + 2.0f * v * sg * (1.0f - sg) * du); /* d/dv of v sigmoid(2u) */
  }
}

static int gelu_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  return act_forward(self, x, train, gelu_fwd);
}

static int gelu_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  return act_backward(self, dy, &self->in, gelu_bwd);
}

static const syno_layer_ops_t gelu_ops = {
    "gelu", gelu_forward, gelu_backward, same_shape, NULL, NULL,
};

syno_layer_t *syno_nn_gelu_create(void) { return syno_nn_layer_new(sizeof(syno_layer_t), &gelu_ops, 0); }

/* SiLU and sigmoid read their output back where it is enough: sigmoid's derivative is
 * y (1 - y); SiLU's needs sigmoid(x) too, recomputed from the input rather than stored. */
ACT_CLONES static void silu_fwd(const float *restrict p, const float *restrict unused, float *restrict q, int64_t n) {
  (void)unused;
  for (int64_t i = 0; i < n; i++) q[i] = p[i] * sigm(p[i]);
}

ACT_CLONES static void silu_bwd(const float *restrict p, const float *restrict g, float *restrict q, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    float s = sigm(p[i]);
    q[i] = g[i] * s * (1.0f + p[i] * (1.0f - s));
  }
}

static int silu_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  return act_forward(self, x, train, silu_fwd);
}

static int silu_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  return act_backward(self, dy, &self->in, silu_bwd);
}

static const syno_layer_ops_t silu_ops = {
    "silu", silu_forward, silu_backward, same_shape, NULL, NULL,
};

syno_layer_t *syno_nn_silu_create(void) { return syno_nn_layer_new(sizeof(syno_layer_t), &silu_ops, 0); }

ACT_CLONES static void sigmoid_fwd(const float *restrict p, const float *restrict unused, float *restrict q,
                                   int64_t n) {
  (void)unused;
  for (int64_t i = 0; i < n; i++) q[i] = sigm(p[i]);
}

static void sigmoid_bwd(const float *restrict y, const float *restrict g, float *restrict q, int64_t n) {
  for (int64_t i = 0; i < n; i++) q[i] = g[i] * y[i] * (1.0f - y[i]);
}

static int sigmoid_forward(syno_layer_t *self, const syno_tensor_t *x, int train) {
  return act_forward(self, x, train, sigmoid_fwd);
}

static int sigmoid_backward(syno_layer_t *self, const syno_tensor_t *dy) {
  return act_backward(self, dy, &self->out, sigmoid_bwd);
}

static const syno_layer_ops_t sigmoid_ops = {
    "sigmoid", sigmoid_forward, sigmoid_backward, same_shape, NULL, NULL,
};

syno_layer_t *syno_nn_sigmoid_create(void) { return syno_nn_layer_new(sizeof(syno_layer_t), &sigmoid_ops, 0); }
