/*
 * syno/nn.h — tensors and neural-network layers (forward and backward).
 *
 * This is the training engine the evaluator uses to score a candidate operator: a network is
 * a tree of layers, each behind one small interface (syno_layer_ops_t), so a backbone "slot"
 * can hold a standard conv2d/linear layer or, later, a synthesized operator without the
 * surrounding network knowing which.
 *
 * Tensors are float32, row-major, NCHW for images; dims are int64_t. A tensor either owns its
 * storage (freed by syno_nn_tensor_free) or is a view of storage someone else owns.
 *
 * Layer contract:
 *   - syno_nn_forward(l, x, train) computes l->out (owned by the layer, valid until the next
 *     forward of that layer). The layer keeps a view of x, so x's *data* must stay unchanged
 *     until the matching backward; containers guarantee this for their children.
 *   - syno_nn_backward(l, dy) must follow a forward; dy has l->out's shape. It writes
 *     l->grad_in (dL/dx, owned by the layer, *overwritten*) and ACCUMULATES (+=) dL/dparam into
 *     every parameter's grad, PyTorch-style, so call syno_nn_zero_grad (or the optimizer's
 *     zero_grad) between steps. Setting l->skip_input_grad skips dL/dx (useful for the first
 *     layer of a network, whose input is data).
 *   - A container (sequential, residual, dense, gate) owns its children and frees them with itself.
 *   - Layers are not thread-safe: one layer object serves one forward/backward at a time.
 * Status codes are the syno_nn_status values below; 0 is success. Arithmetic-heavy paths
 * go through CBLAS sgemm (linear, im2col conv2d) or oneDNN (conv2d by default); reductions
 * (batch statistics, losses, bias gradients) accumulate in double because float sums over
 * N*H*W elements lose digits.
 */
#ifndef SYNO_NN_H
#define SYNO_NN_H

#include <stddef.h>
#include <stdint.h>

#include "syno/error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum syno_nn_status {
  SYNO_NN_OK = 0,
  SYNO_NN_ENOMEM = -1, /* allocation failed */
  SYNO_NN_ESHAPE = -2, /* input shape does not fit the layer */
  SYNO_NN_ERANGE = -3, /* a value (e.g. a token id or label) is out of range */
  SYNO_NN_EINVAL = -4  /* bad argument (e.g. backward without forward) */
};

/* A short English description of a syno_nn_status value. */
const char *syno_nn_status_str(int status);

/* ---------------------------------------------------------------- tensors */

#define SYNO_TENSOR_MAX_DIMS 6

typedef struct syno_tensor {
  float *data; /* NULL for an empty tensor */
  int64_t dims[SYNO_TENSOR_MAX_DIMS];
  int ndim;
  int owned;        /* 1: data belongs to this tensor; 0: a view (or empty) */
  int64_t capacity; /* floats allocated when owned: shrinking reuses storage */
} syno_tensor_t;

/* An empty tensor; also what {0} initialisation gives. */
#define SYNO_TENSOR_EMPTY \
  { 0 }

int64_t syno_nn_tensor_numel(const syno_tensor_t *t);
/* Allocates zero-filled, 64-byte-aligned storage of the given shape (t's old content is
 * forgotten, not freed). Returns SYNO_NN_OK, SYNO_NN_ENOMEM or SYNO_NN_ESHAPE (bad dims). */
int syno_nn_tensor_alloc(syno_tensor_t *t, int ndim, const int64_t *dims);
/* Gives t the shape, reusing owned storage when it is large enough (then the contents are
 * unspecified, not zeroed); a view or empty tensor becomes owned. */
int syno_nn_tensor_resize(syno_tensor_t *t, int ndim, const int64_t *dims);
/* Same as resize, with the shape of `like`. */
int syno_nn_tensor_resize_like(syno_tensor_t *t, const syno_tensor_t *like);
/* A non-owning view of data with the given shape. */
syno_tensor_t syno_nn_tensor_view(float *data, int ndim, const int64_t *dims);
/* Frees owned storage and leaves t empty; views are just emptied. Safe on empty tensors. */
void syno_nn_tensor_free(syno_tensor_t *t);
int syno_nn_tensor_same_shape(const syno_tensor_t *a, const syno_tensor_t *b);
void syno_nn_tensor_zero(syno_tensor_t *t);
void syno_nn_tensor_fill(syno_tensor_t *t, float v);
/* dst := src (dst is resized to src's shape). */
int syno_nn_tensor_copy(syno_tensor_t *dst, const syno_tensor_t *src);
/* A view of t with another shape of the same element count. */
int syno_nn_tensor_reshape(const syno_tensor_t *t, int ndim, const int64_t *dims, syno_tensor_t *view);

/* ---------------------------------------------------------------- parameters */

typedef struct syno_param {
  syno_tensor_t value;
  syno_tensor_t grad; /* same shape as value; backward accumulates into it */
  const char *name;   /* static string: "weight", "bias", "gamma", ... */
  int no_decay;       /* 1 for biases and norm affine parameters: SGD skips weight decay */
} syno_param_t;

/* Allocates value and grad (both zero). */
int syno_nn_param_init(syno_param_t *p, const char *name, int ndim, const int64_t *dims);
void syno_nn_param_free(syno_param_t *p);

/* ---------------------------------------------------------------- the layer interface */

typedef struct syno_layer syno_layer_t;
/* Layers need the generator only to initialise weights. */
#include "syno/rng.h"

typedef struct syno_layer_ops {
  const char *kind; /* "conv2d", "linear", ... */
  int (*forward)(syno_layer_t *self, const syno_tensor_t *x, int train);
  int (*backward)(syno_layer_t *self, const syno_tensor_t *dy);
  /* Output dims for an input of the given dims; returns the output ndim or a status < 0. */
  int (*out_shape)(const syno_layer_t *self, int ndim, const int64_t *dims, int64_t *out);
  /* Frees what the concrete layer added beyond the common fields; may be NULL. */
  void (*destroy)(syno_layer_t *self);
  /* Optional (NULL: the generic way, see syno_nn_forward_affine): a frozen inference forward
   * whose result goes through a per-channel map and ReLU, folded into the layer's own work. */
  int (*forward_affine)(syno_layer_t *self, const syno_tensor_t *x, const float *scale, const float *shift, int relu);
} syno_layer_ops_t;

/* For layer authors (a layer outside src/nn, such as an operator slot, uses the same three
 * helpers the built-in layers use). */
/* Allocates a zeroed concrete layer of `size` bytes whose first member is syno_layer_t. */
void *syno_nn_layer_new(size_t size, const syno_layer_ops_t *ops, int nparams);
/* Records the input view and mode at the start of a forward. */
void syno_nn_begin_forward(syno_layer_t *l, const syno_tensor_t *x, int train);
/* Shape of the last forward's input into grad_in, unless the caller skips it. Returns a
 * status; *skip is set when no input gradient is wanted. */
int syno_nn_prepare_grad_in(syno_layer_t *l, int *skip);
/* Frees l's input gradient once consumer (the layer its gradient flowed into, or the
 * container that summed it) has used it: the buffer l owns, or, when l's grad_in is a view of
 * a child's (a sequential's is its first child's), that child's, recursively. The buffer stays
 * when consumer's own grad_in points into it (a flatten's is a view of its dy). Containers
 * call it, so that a backward holds only the gradients still in flight, not one per layer. */
void syno_nn_release_grad_in(syno_layer_t *l, const syno_layer_t *consumer);

/* The common head of every layer. Concrete layers embed it as their first member. */
struct syno_layer {
  const syno_layer_ops_t *ops;
  syno_tensor_t out;     /* result of the last forward */
  syno_tensor_t grad_in; /* dL/dx of the last backward */
  syno_tensor_t in;      /* view of the last forward's input */
  syno_param_t *params;  /* this layer's own parameters (not its children's) */
  int nparams;
  syno_layer_t **children;
  int nchildren;
  int skip_input_grad; /* set by the user: backward leaves grad_in alone */
  int train;           /* mode of the last forward */
  int has_forward;     /* a forward happened since creation (backward needs one) */
  uint64_t frozen;     /* syno_nn_freeze's id while frozen, else 0 */
};

int syno_nn_forward(syno_layer_t *l, const syno_tensor_t *x, int train);
int syno_nn_backward(syno_layer_t *l, const syno_tensor_t *dy);
/* Output dims of l for input dims; returns the output ndim or a status < 0. */
int syno_nn_out_shape(const syno_layer_t *l, int ndim, const int64_t *dims, int64_t *out);
/* Frees l, its children and all their tensors. NULL is fine. */
void syno_nn_layer_free(syno_layer_t *l);
const char *syno_nn_layer_kind(const syno_layer_t *l);

/* Every parameter of l and its descendants, depth first. Writes at most cap pointers into
 * out (which may be NULL when cap is 0) and returns the total count. */
int syno_nn_params(syno_layer_t *l, syno_param_t **out, int cap);
/* Number of trainable scalars in l and its descendants. */
int64_t syno_nn_param_count(syno_layer_t *l);
/* Zeroes the gradient of every parameter of l and its descendants. */
void syno_nn_zero_grad(syno_layer_t *l);
/* Freezing (on = 1) promises that no parameter of l or its descendants changes until it is
 * thawed (on = 0), so inference forwards may reuse what they derive from the parameters: a
 * layer whose kernel wants its weight in another layout (an operator slot's GEMM stages, a
 * oneDNN convolution's blocked weight) then converts it once, as deployed inference does,
 * instead of at every forward. Each freeze takes a new id, so what a layer kept from an
 * earlier freeze is never reused; training forwards ignore it. The latency measurements
 * freeze the networks they time. */
void syno_nn_freeze(syno_layer_t *l, int on);

/* Deployed inference (src/nn/deploy.c). A frozen sequential's inference forward runs each
 * layer followed by a batch norm and/or a ReLU through this: l's inference forward, then
 * y = max(scale[c] * y + shift[c], 0) per channel c of dim 1 (scale NULL: no map; relu 0: no
 * clamp), as one piece of work where l can (a conv2d folds the map into its weight and bias
 * and fuses the ReLU; a layer owning its output applies both in place in one pass). Returns
 * SYNO_NN_OK when the map was applied, 1 when only the forward ran (l's output is a view of
 * another layer's tensor, which must not change: the caller applies the map itself), or a
 * status < 0. scale and shift have dims[1] entries of the output. */
int syno_nn_forward_affine(syno_layer_t *l, const syno_tensor_t *x, const float *scale, const float *shift, int relu);
/* y = max(scale[c] * y + shift[c], 0) in place, c over dim 1 of y (ndim >= 2); the same
 * conventions (for a forward_affine hook that applies the map itself). */
void syno_nn_channel_affine(syno_tensor_t *y, const float *scale, const float *shift, int relu);

/* ---------------------------------------------------------------- layers */

/* 2-D convolution, NCHW, weight [C_out, C_in/groups, kh, kw], optional bias [C_out].
 * Computed per chunk of images as im2col + one sgemm per group, so a chunk's column matrix
 * stays within workspace_floats. Zero stride/dilation/groups mean 1. Weights: He-normal
 * (std sqrt(2/fan_in)), bias uniform in +-1/sqrt(fan_in). */
typedef struct syno_conv2d_cfg {
  int64_t in_channels, out_channels;
  int64_t kernel_h, kernel_w;
  int64_t stride_h, stride_w;
  int64_t pad_h, pad_w;
  int64_t dilation_h, dilation_w;
  int64_t groups;
  int bias;
  int64_t workspace_floats; /* 0: default (1<<20 floats, i.e. 4 MiB per layer) */
  int backend;              /* a syno_conv_backend value; 0 (AUTO) is the default */
} syno_conv2d_cfg_t;

/* How a conv2d layer computes. AUTO uses oneDNN (primitives created once per input shape and
 * cached in the layer, reorders to oneDNN's blocked layouts internally; the layer's tensors
 * stay NCHW/OIHW) when oneDNN accepts the shape and im2col
 * otherwise; IM2COL forces the im2col + sgemm path above; ONEDNN forces oneDNN, and a
 * forward of a shape oneDNN rejects fails with SYNO_NN_EINVAL. */
enum syno_conv_backend { SYNO_CONV_AUTO = 0, SYNO_CONV_IM2COL = 1, SYNO_CONV_ONEDNN = 2 };

/* Returns NULL on an invalid configuration (non-positive sizes, channels not divisible by
 * groups) or when memory runs out. */
syno_layer_t *syno_nn_conv2d_create(const syno_conv2d_cfg_t *cfg, syno_rng_t *rng);
/* The configuration of a conv2d layer (with defaults filled in), or NULL if l is not one. */
const syno_conv2d_cfg_t *syno_nn_conv2d_cfg(const syno_layer_t *l);
/* The backend the last forward of conv2d layer l ran on (SYNO_CONV_IM2COL or
 * SYNO_CONV_ONEDNN), or -1 before any forward or if l is not a conv2d layer. */
int syno_nn_conv2d_used_backend(const syno_layer_t *l);
/* Median wall time in seconds (into *seconds) of an inference-mode forward of a conv2d layer
 * built from cfg on a random [n, in_channels, h, w] input, over `repeats` (>= 1) timed runs
 * after one warm-up run, with the backend cfg selects. Returns 0, or -1 with err filled. */
int syno_nn_conv2d_latency(const syno_conv2d_cfg_t *cfg, int64_t n, int64_t h, int64_t w, int repeats, double *seconds,
                           syno_error_t *err);

/* Threads of the compute libraries: OpenBLAS and oneDNN's OpenMP runtime. syno_nn_threads_set
 * sets both to n (n < 1: one per CPU this process may run on, syno/cpus.h) and returns the count set; the setting is
 * per process (OpenMP: per calling thread). syno_nn_threads_describe writes a one-line report of the BLAS loaded and
 * the thread counts in effect, for benchmark output. */
int syno_nn_threads_set(int n);
/* The thread count the compute libraries use now (OpenMP's, which syno_nn_threads_set sets). */
int syno_nn_threads_get(void);
void syno_nn_threads_describe(char *buf, size_t size);

/* Linear: y = x W^T + b over the last dim of x ([..., in] -> [..., out]); weight [out, in]
 * as in PyTorch, initialised uniform in +-1/sqrt(in) (bias too). */
syno_layer_t *syno_nn_linear_create(int64_t in_features, int64_t out_features, int bias, syno_rng_t *rng);

/* Batch normalisation over dim 1 of [N, C] or [N, C, H, W] (statistics over all other dims).
 * Train mode normalises with the batch's biased variance and updates running_mean/var with
 * the unbiased one: r = (1-momentum) r + momentum * stat (PyTorch convention). Eval mode
 * normalises with the running statistics. gamma=1, beta=0, running mean 0, var 1. */
syno_layer_t *syno_nn_batchnorm_create(int64_t channels, double momentum, double eps);
/* Running statistics of a batchnorm layer ([C] tensors), or NULL if l is not one. */
syno_tensor_t *syno_nn_batchnorm_running_mean(syno_layer_t *l);
syno_tensor_t *syno_nn_batchnorm_running_var(syno_layer_t *l);

/* Layer normalisation over the last dim (size `features`), affine gamma=1, beta=0. */
syno_layer_t *syno_nn_layernorm_create(int64_t features, double eps);

syno_layer_t *syno_nn_relu_create(void);
/* GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), as
 * PyTorch's gelu(approximate="tanh"); differs from the erf form by < 1e-3. */
syno_layer_t *syno_nn_gelu_create(void);

/* SiLU (swish): x sigmoid(x). */
syno_layer_t *syno_nn_silu_create(void);
/* The logistic sigmoid 1 / (1 + exp(-x)). */
syno_layer_t *syno_nn_sigmoid_create(void);

/* Max pooling over [N, C, H, W]; padding positions never win. Output side
 * floor((H + 2 pad - k) / stride) + 1. stride 0 means stride = kernel; pad may be at most
 * kernel / 2 (as in PyTorch), so every window holds a real pixel. NULL on bad arguments. */
syno_layer_t *syno_nn_maxpool2d_create(int64_t kernel, int64_t stride, int64_t pad);
/* Average pooling; the divisor is always k*k (padding counts as zeros, PyTorch's default
 * count_include_pad=True). Same arguments and limits as max pooling. */
syno_layer_t *syno_nn_avgpool2d_create(int64_t kernel, int64_t stride, int64_t pad);
/* Global average pooling: [N, C, H, W] -> [N, C]. */
syno_layer_t *syno_nn_global_avgpool_create(void);
/* [N, d1, d2, ...] -> [N, d1*d2*...]; out and grad_in are views, no copy. */
syno_layer_t *syno_nn_flatten_create(void);

/* Causal multi-head self-attention without projections: the input is [B, T, 3C], the
 * queries, keys and values packed along the last dim ([q | k | v], C = heads * D, head h in
 * columns h*D..h*D+D-1 of each), the output [B, T, C] (head h in columns h*D..):
 * softmax(Q K^T / sqrt(D) + causal mask) V per batch element and head, where position i
 * attends to positions 0..i. Keeps the attention probabilities ([B, heads, T, T]) for the
 * backward. No parameters. NULL if heads < 1; an input whose last dim is not a multiple of
 * 3 * heads gives SYNO_NN_ESHAPE. */
syno_layer_t *syno_nn_causal_attention_create(int64_t heads);
/* The probabilities of the last forward of an attention layer, or NULL if l is not one. */
const syno_tensor_t *syno_nn_causal_attention_probs(const syno_layer_t *l);

/* Embedding: the input holds token ids stored as floats (exact below 2^24), any shape S;
 * the output is S + [dim]. Ids outside [0, vocab) give SYNO_NN_ERANGE. There is no input
 * gradient: backward only accumulates into the weight, and grad_in stays empty. Weight
 * [vocab, dim] initialised N(0, 1) as in PyTorch. */
syno_layer_t *syno_nn_embedding_create(int64_t vocab, int64_t dim, syno_rng_t *rng);

/* Token plus learned position embedding for sequence models: the input is [B, T] token ids
 * (floats, as for syno_nn_embedding), T <= context; the output [B, T, dim] is
 * weight[id] + pos[t]. No input gradient. Both tables ("weight" [vocab, dim] and "pos"
 * [context, dim]) start N(0, 0.02^2) as in GPT-2. */
syno_layer_t *syno_nn_token_pos_embedding_create(int64_t vocab, int64_t context, int64_t dim, syno_rng_t *rng);

/* Runs children in order. Takes ownership of the n layers (also on failure, when it frees
 * them). out and grad_in are views of the last and first child's tensors. */
syno_layer_t *syno_nn_sequential_create(int n, syno_layer_t **layers);
/* y = body(x) + shortcut(x), or body(x) + x when shortcut is NULL (a ResNet block without
 * its final ReLU). Takes ownership of body and shortcut (also on failure). */
syno_layer_t *syno_nn_residual_create(syno_layer_t *body, syno_layer_t *shortcut);

/* y = concat(x, body(x)) along dim 1 (channels): a DenseNet layer. body must keep every dim
 * but dim 1. dL/dx is dy's first x->dims[1] channels plus the body's input gradient. Takes
 * ownership of body (also on failure). */
syno_layer_t *syno_nn_dense_create(syno_layer_t *body);

/* y[n, c, ...] = x[n, c, ...] * body(x)[n, c] (squeeze-and-excitation): body maps x to one
 * gate per image and channel ([N, C], or any shape of N*C elements with dims[0] = N). dL/dx
 * is dy * gate plus the body's input gradient. Takes ownership of body (also on failure). */
syno_layer_t *syno_nn_gate_create(syno_layer_t *body);

/* ---------------------------------------------------------------- stateless ops */

/* y = a + b (same shapes; y is resized and may alias neither input). The backward of an add
 * is the identity for each input, so residual branches just share dy. */
int syno_nn_add(const syno_tensor_t *a, const syno_tensor_t *b, syno_tensor_t *y);

/* Softmax cross-entropy over the last dim of logits ([rows, classes] after flattening the
 * leading dims), mean over rows. labels[i] in [0, classes). Writes the mean loss to *loss
 * and, if dlogits is not NULL, d(mean loss)/d(logits) into it (resized). If ncorrect is not
 * NULL it receives the number of rows whose arg-max (first on ties) equals the label. */
int syno_nn_softmax_xent(const syno_tensor_t *logits, const int32_t *labels, double *loss, syno_tensor_t *dlogits,
                         int64_t *ncorrect);

#ifdef __cplusplus
}
#endif

#endif /* SYNO_NN_H */
