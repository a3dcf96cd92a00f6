/*
 * syno/backbone.h - operator slots, backbone networks and the training driver.
 *
 * A slot (the original Syno's Placeholder) is a layer that runs either the standard operator
 * or a synthesized operator through the executor API (syno/exec.h). There are two kinds:
 *   conv slots    [N, C_in, H, W] -> [N, C_out, H, W]; standard: 3x3 conv2d, stride 1,
 *                 padding 1, no bias; operators from the conv2d search preset.
 *   linear slots  [N, S, C_in] -> [N, S, C_out]; standard: linear y = x W^T, weight
 *                 [C_out, C_in], no bias (a network that wants a bias adds it outside the
 *                 slot; the gpt backbone has none); operators from the linear preset.
 * A synthesized operator is symbolic (syno_slotop_t: the variables and shapes of its search
 * preset); each slot records its own binding (C_in, C_out, H, W or C_in, C_out, S; the batch
 * N is taken from the input) and compiles an executor for it, keeping one executor per batch
 * size seen (the full batch and the last short one), so one operator fills every slot of a
 * network at once. The slot owns the operator's weights as syno_param_t, so the optimizer
 * updates them; they start as N(0, std^2) with std^2 = (g / F)^(1/w), where F is the
 * operator's multiply-adds per output element (C_in*k*k for a convolution, C_in for a
 * linear layer), w its number of weights and g the gain: 2 in conv slots (He initialisation
 * for one weight), 1/3 in linear slots (the variance of the standard linear's uniform
 * +-1/sqrt(C_in) initialisation for one weight). Images are NCHW throughout.
 *
 * Ownership: a syno_slotop_t is created by syno_slotop_parse and freed by its owner; slots
 * copy what they need (they do not keep a pointer to it). A backbone owns its layer tree.
 */
#ifndef SYNO_BACKBONE_H
#define SYNO_BACKBONE_H

#include <stdint.h>

#include "syno/error.h"
#include "syno/graph.h"
#include "syno/nn.h"
#include "syno/signature.h"
#include "syno/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- symbolic slot operators */

typedef struct syno_slotop {
  syno_signature_t sig; /* the preset's variables and shapes, without a binding (symbolic) */
  syno_graph_t *g;      /* owned */
  syno_operator_t op;
} syno_slotop_t;

/* Parses an operator's text form against a preset's signature (syno/signature.h):
 * "conv2d" (N, C_in, C_out, H; k_1, k_2, s, g: square conv slots), "conv2d-wide" (N, C_in,
 * C_out, H, W; k, s: conv slots) or "linear" (N, S, C_in, C_out; k, s: linear slots); NULL
 * means conv2d. The parse is symbolic: under no binding of the primary variables (not the
 * preset's default one, which need not be any slot's), so only what holds under every
 * binding is checked (the text, the shapes, windows of coefficients alone being odd...);
 * each slot checks the sizes under its own binding when it compiles the operator (an
 * operator from a search over a network's slots fits every one of them). Errors name the
 * problem (parse error, shapes, unknown preset). */
int syno_slotop_parse_preset(const char *preset, const char *text, syno_slotop_t **out, syno_error_t *err);
/* The same with the conv2d preset. */
int syno_slotop_parse(const char *text, syno_slotop_t **out, syno_error_t *err);
void syno_slotop_free(syno_slotop_t *op);

/* ---------------------------------------------------------------- slots */

enum syno_slot_kind { SYNO_SLOT_CONV = 0, SYNO_SLOT_LINEAR = 1 };

typedef struct syno_slot_info {
  int64_t c_in, c_out, h, w; /* h, w: conv slots only (0 in linear slots) */
  int64_t flops;             /* forward FLOPs per sample (image or sequence; multiply-add = 2) */
  int64_t params;            /* weight scalars */
  int kind;                  /* a syno_slot_kind value */
  int64_t s;                 /* linear slots: the sequence length S (0 in conv slots) */
  int64_t groups;            /* groups of the standard grouped conv it runs (1: a full conv, a
                              * linear slot, or a synthesized operator) */
} syno_slot_info_t;

/* A conv slot for [N, c_in, h, w] -> [N, c_out, h, w]. op NULL: the standard 3x3 conv2d
 * (weights drawn from rng exactly as syno_nn_conv2d_create draws them; conv_backend, a
 * syno_conv_backend, picks how it computes). Otherwise compiles
 * op for the binding (checking that its shapes fit) and draws its weights from rng. Returns
 * 0 and *out, or -1 with err naming the slot's binding and the problem. */
int syno_slot_create(const syno_slotop_t *op, int64_t c_in, int64_t c_out, int64_t h, int64_t w, int conv_backend,
                     syno_rng_t *rng, syno_layer_t **out, syno_error_t *err);
/* A conv slot whose standard operator is the grouped 3x3 conv2d (groups must divide c_in and
 * c_out; 1 is syno_slot_create). A synthesized operator replaces the whole grouped conv: it is
 * bound to the full C_in -> C_out like any conv slot, and may mix every channel or group them
 * itself (the conv2d preset's g); the slot's groups then reads 1. */
int syno_slot_create_grouped(const syno_slotop_t *op, int64_t c_in, int64_t c_out, int64_t h, int64_t w, int64_t groups,
                             int conv_backend, syno_rng_t *rng, syno_layer_t **out, syno_error_t *err);
/* A linear slot for [N, s, c_in] -> [N, s, c_out]. op NULL: the standard bias-free linear
 * (weights drawn from rng exactly as syno_nn_linear_create(c_in, c_out, 0, rng) draws them).
 * Otherwise op must come from the linear preset; it is compiled for the binding
 * (N, S=s, C_in, C_out) and its weights are drawn from rng. Returns 0 and *out, or -1 with
 * err naming the slot's binding and the problem. */
int syno_slot_linear_create(const syno_slotop_t *op, int64_t c_in, int64_t c_out, int64_t s, syno_rng_t *rng,
                            syno_layer_t **out, syno_error_t *err);
/* 1 if l is a slot (then *info is filled when info is not NULL). */
int syno_slot_info(const syno_layer_t *l, syno_slot_info_t *info);
/* The message of a slot's last failed forward/backward ("" if none). */
const char *syno_slot_error(const syno_layer_t *l);
/* What runs a synthesized operator's inference forward in the slot, a syno_kernels_t
 * (syno/kernels.h): the executor (the default), its Halide kernel (compiled, or loaded from
 * the kernel cache, at the first inference forward of each batch size), or whichever of the
 * two is faster, timed once per batch size (best; the executor when the kernel cannot be
 * built). Training always runs on the executor. -1 if l is not a slot. */
int syno_slot_set_kernels(syno_layer_t *l, int kernels);
/* "exec" or "halide": what ran the slot's last inference forward; NULL for a standard slot
 * or before the first forward. */
const char *syno_slot_kernel_used(const syno_layer_t *l);
/* What ran the synthesized operator's last forward, stage by stage (syno_exec_path, e.g.
 * "oneDNN conv2d 1x3, input gathered"), or "Halide kernel"; NULL before any forward or for a
 * standard slot. */
const char *syno_slot_path(const syno_layer_t *l);

/* ---------------------------------------------------------------- backbones */

#define SYNO_BACKBONE_MAX_SLOTS 64

/* The backbone names syno_backbone_build knows, NULL-terminated: resnet18, resnet (the same
 * network, its older name), resnet34, resnext29, densenet121, efficientnetv2s, vgg and,
 * unless images_only, gpt. The one list every command's --backbone takes its choices from. */
const char *const *syno_backbone_names(int images_only);
/* 0 if name is a known backbone, else -1 with err "unknown backbone 'x' (known: ...)". */
int syno_backbone_known(const char *name, syno_error_t *err);

typedef struct syno_backbone_cfg {
  const char *name;         /* one of syno_backbone_names(0) */
  int64_t in_c, in_h, in_w; /* images (every backbone but gpt) */
  int nclasses;             /* images */
  double width;             /* CNNs: channel multiplier, 0 means 1 (ResNet widths
                             * 16/32/64/128; ResNeXt a quarter of the published widths;
                             * DenseNet growth rate 32 x width; EfficientNet the published
                             * widths x width); gpt: the
                             * model dim C (an integer), 0 means 64 */
  int depth;                /* resnet18, gpt: blocks per stage (0 means 2); vgg: convs per
                             * stage (0 means 2); the other CNNs: at most
                             * this many blocks per stage (0: the published counts) */
  const syno_slotop_t *op;  /* NULL: the standard operator in every slot; a conv2d-preset
                             * operator for resnet/vgg, a linear-preset one for gpt */
  int64_t vocab;            /* gpt: tokens in the vocabulary */
  int64_t context;          /* gpt: context length T, 0 means 64 */
  int heads;                /* gpt: attention heads (C must be a multiple), 0 means 4 */
  int conv_backend;         /* syno_conv_backend of every standard conv (slots, stem, shortcuts);
                               0 (AUTO) is the default */
  int kernels;              /* syno_kernels_t of the slots' inference (syno_slot_set_kernels);
                               0 (exec) is the default */
} syno_backbone_cfg_t;

typedef struct syno_backbone {
  syno_layer_t *net; /* owned; [N, in_c, in_h, in_w] -> logits [N, nclasses];
                      * gpt: token ids [N, T] (as floats) -> logits [N, T, vocab] */
  int nslots;
  syno_layer_t *slots[SYNO_BACKBONE_MAX_SLOTS]; /* borrowed from net */
  int64_t flops;                                /* forward FLOPs per image (gpt: per sequence of T tokens) of conv,
                                                 * linear and slot layers (gpt: and the attention's two matmuls) */
  int64_t params;
  syno_backbone_cfg_t cfg; /* what it was built from (op NULL; the name is the caller's) */
} syno_backbone_t;

/* Builds the network. Every CNN downsamples with AvgPool2d(2) before a stride-1 slot (and
 * before the 1x1 shortcut conv, standard) where the published net has a stride-2 conv, and
 * only while the side stays >= 2 (28x28: 28,14,7,3; 8x8: 8,4,2,2).
 * resnet18 (alias resnet), resnet34: 3x3 stem conv (standard), 4 stages of BasicBlocks,
 * [2,2,2,2] or [3,4,6,3], widths 16/32/64/128 x width, whose 3x3 convs are slots.
 * resnext29: ResNeXt-29 8x64d at the same quarter scale: 3x3 stem conv to 16, 3 stages of 3
 * bottleneck blocks (1x1 conv, grouped 3x3 conv of cardinality 8, 1x1 conv; outputs
 * 64/128/256, grouped widths 128/256/512, all x width); the grouped 3x3 convs are the slots
 * (syno_slot_create_grouped: what an operator replaces there). densenet121: DenseNet-BC,
 * growth rate k = 32 x width, 3x3 stem conv to 2k BN ReLU, dense blocks of [6,12,24,16] layers
 * (BN ReLU 1x1 conv to 4k, BN ReLU 3x3 slot to k, concatenated: syno_nn_dense_create) with
 * transitions (BN ReLU 1x1 conv halving the channels, AvgPool2d(2)), BN ReLU at the end; its
 * 58 3x3 convs are the slots. efficientnetv2s: EfficientNetV2-S at the published widths x
 * width: a 3x3 stem conv (stride 1) to 24, BN, SiLU; 2 fused-MBConv (expansion 1), 4 and 4
 * fused-MBConv (expansion 4; 48, 64 channels), 6, 9 and 15 MBConv with squeeze-and-excitation
 * (expansion 4, 6, 6; 128, 160, 256 channels), a 1x1 head conv to 1280, BN, SiLU; a block
 * adds its input where its shape stays. The slots are the fused blocks' 3x3 convs and the
 * MBConv blocks' depthwise 3x3 convs (grouped slots with groups = channels): 40.
 * vgg: 3 stages of depth x (slot, BN, ReLU) then MaxPool2d(2) (while the side is >= 2),
 * widths 16/32/64 x width.
 * All the CNNs end with global average pooling and a linear classifier.
 * gpt: a decoder-only transformer (GPT-2 layout, pre-LayerNorm): token + learned position
 * embeddings (N(0, 0.02^2)), depth blocks of x += O(attn(QKV(LN x))) (causal, heads heads;
 * QKV the fused projection C -> 3C) and x += fc2(GELU(fc1(LN x))) (hidden 4C), a final
 * LayerNorm and an LM head (standard linear C -> vocab, no bias). QKV, O, fc1 and fc2 are
 * linear slots bound to S = context, 4 per block, in that order; an operator of the linear
 * preset (t*H_in) goes into QKV only, one of linear-wide into all four. */
int syno_backbone_build(const syno_backbone_cfg_t *cfg, syno_rng_t *rng, syno_backbone_t *bb, syno_error_t *err);
void syno_backbone_free(syno_backbone_t *bb);

/* The gpt attention sublayer on its own: [B, T, dim] -> [B, T, dim] with T = context (the
 * slots are bound to S = context): O(causal_attention(QKV(h))) with h = LN(x), no residual;
 * QKV (dim -> 3 dim, [Q | K | V]) and O are linear slots (op NULL: standard; O is standard
 * too when op's signature fills the QKV projection only) returned in slots[0..1] (borrowed)
 * when slots is not NULL. */
int syno_gpt_attention_create(const syno_slotop_t *op, int64_t dim, int64_t heads, int64_t context, syno_rng_t *rng,
                              syno_layer_t **out, syno_layer_t **slots, syno_error_t *err);
/* Writes one line per slot ("slot 3: C_in=16 C_out=32 H=14 W=14 flops=... params=...", or
 * "slot 3: linear S=64 C_in=64 C_out=256 flops=... params=..." for linear slots)
 * into buf (truncated to n); returns the number of slots. */
int syno_backbone_list_slots(const syno_backbone_t *bb, char *buf, size_t n);
/* The distinct slot bindings of bb (kind, channels, sides, sequence length and groups), in
 * the order of their first slot: their infos into info[] and, when first is not NULL, the
 * index of that first slot into first[] (both with room for bb->nslots). Returns the count. */
int syno_backbone_distinct_slots(const syno_backbone_t *bb, syno_slot_info_t *info, int *first);

/* Median inference-forward seconds of net on a batch of `batch` random images of shape
 * [c, h, w] over `repeats` runs (after one warm-up run). Every latency here (these and
 * syno_backbone_latency_cmp's) is the calling thread's CPU time when the compute libraries
 * run one thread (syno_nn_threads_set(1)) and no Halide kernel is timed, so that other
 * processes on a shared machine do not count; else wall time. */
int syno_net_latency(syno_layer_t *net, int64_t batch, int64_t c, int64_t h, int64_t w, int repeats,
                     double *median_seconds, syno_error_t *err);
/* The same for n nets on one input, timed round-robin (one forward of each in turn, so a
 * change of load hits all alike); medians[k] is net k's median. */
int syno_net_latencies(syno_layer_t *const *nets, int n, int64_t batch, int64_t c, int64_t h, int64_t w, int repeats,
                       double *medians, syno_error_t *err);
/* The same for n conv slots of one binding, each timed as deployed: as the layer before a
 * batch norm, in the form it runs once the norm is folded into it (syno_nn_forward_affine
 * with the identity map), as syno_backbone_latency_cmp times its slots. */
int syno_slot_latencies(syno_layer_t *const *slots, int n, int64_t batch, int64_t c, int64_t h, int64_t w, int repeats,
                        double *medians, syno_error_t *err);

/* A candidate network timed against the standard one on both conv implementations, and, when
 * the slots' inference runs on Halide kernels, on Halide too. */
enum { SYNO_LAT_CAND = 0, SYNO_LAT_ONEDNN = 1, SYNO_LAT_IM2COL = 2, SYNO_LAT_HALIDE = 3, SYNO_LAT_N = 4 };
typedef struct syno_latency_cmp {
  double net[SYNO_LAT_N]; /* median seconds: candidate, standard on oneDNN, standard on im2col,
                           * standard with the 3x3 conv slots as Halide kernels (0: not timed) */
  int64_t std_flops;      /* forward FLOPs per image of the standard network */
  int nslots;             /* distinct slot bindings, in slot order */
  syno_slot_info_t slot[SYNO_BACKBONE_MAX_SLOTS];
  double slot_t[SYNO_BACKBONE_MAX_SLOTS][SYNO_LAT_N];
  /* What ran the candidate's slots: per distinct slot "exec", "halide" or "standard"; for
   * the network, the same when every slot agrees, else "mixed" */
  char net_kernel[16];
  char slot_kernel[SYNO_BACKBONE_MAX_SLOTS][16];
  char slot_path[SYNO_BACKBONE_MAX_SLOTS][160]; /* syno_slot_path of the candidate's slot */
  int64_t std_slot_flops[SYNO_BACKBONE_MAX_SLOTS]; /* the standard slot's FLOPs per sample */
  /* The same for the standard network of SYNO_LAT_HALIDE (its 3x3 convs in primitives under
   * the kernels choice: "halide", or with best "exec" where that was faster); when it could
   * not be built (a 3x3 window over a smaller map), why, and net[SYNO_LAT_HALIDE] is 0 */
  char std_kernel[16];
  char std_slot_kernel[SYNO_BACKBONE_MAX_SLOTS][16];
  char std_kernel_note[sizeof(((syno_error_t *)0)->msg)];
} syno_latency_cmp_t;

/* Builds the standard network of cfg (cfg->op ignored) once with oneDNN and once with im2col
 * convolutions and times inference of cand->net against both, round-robin, on batches of
 * `batch` random images (gpt: sequences of token ids); then each distinct slot binding alike
 * (a linear slot on [batch, S, C_in]). For gpt the two standard networks are the same (no
 * convolution: every linear layer is one sgemm). When cfg->kernels is not exec (conv
 * backbones), a third standard network is timed too: the 3x3 convolution written in the
 * conv2d preset's primitives in every slot, under the same kernels choice (SYNO_LAT_HALIDE;
 * skipped, with std_kernel_note saying why, when that conv does not fit every slot).
 * cand's slots run under cfg->kernels. Returns 0, or -1 with err. */
int syno_backbone_latency_cmp(syno_backbone_t *cand, const syno_backbone_cfg_t *cfg, syno_rng_t *rng, int64_t batch,
                              int repeats, syno_latency_cmp_t *out, syno_error_t *err);
/* The fastest standard implementation of a timing row: SYNO_LAT_ONEDNN, SYNO_LAT_IM2COL or
 * (when timed, t[SYNO_LAT_HALIDE] > 0) SYNO_LAT_HALIDE. */
int syno_latency_fastest(const double t[SYNO_LAT_N]);
/* "onednn", "im2col" or "halide" for a SYNO_LAT_* of the standard network. */
const char *syno_latency_impl_name(int lat);

/* ---------------------------------------------------------------- training driver */

typedef struct syno_train_progress {
  int epoch, epochs;
  int64_t step, steps_per_epoch;
  double loss;         /* mean train loss of the epoch so far (per label: per token for gpt) */
  double train_acc;    /* of the epoch so far (gpt: next-token accuracy) */
  double test_acc;     /* after the epoch; -1 while the epoch runs */
  double images_per_s; /* samples (images or sequences) per second */
  double test_loss;    /* after the epoch (mean per label); -1 while the epoch runs */
  double tokens_per_s; /* gpt: training tokens per second; 0 for images */
} syno_train_progress_t;

typedef struct syno_train_cfg {
  const char *backbone; /* one of syno_backbone_names(0); NULL: resnet */
  const char *dataset;  /* images: digits, fashion-mnist, or a path (a digits CSV or an IDX
                         * dir); gpt: kjv (committed in data/) or a path to a text file
                         * (gzip or plain); NULL: digits, or kjv for gpt */
  int epochs;
  int64_t batch;       /* 0: 128 (gpt: 32 sequences) */
  double lr;           /* 0: 0.1 for SGD, 3e-3 for AdamW */
  double momentum;     /* SGD: <0: 0; 0 means default 0.9 */
  double weight_decay; /* <0: 0; 0 means default 5e-4 for SGD, 0.1 for AdamW */
  int warmup_epochs;   /* warm-up in epochs (0: none) */
  int64_t subset;      /* 0: all training samples; images: a stratified seeded subset;
                        * gpt: the first `subset` training windows */
  int pad;             /* images: zero-pad every image by this many pixels per side (0: none) */
  int augment;         /* images: random crops (padding 4) and horizontal flips of every
                        * training batch (syno_data_augment) */
  uint64_t seed;
  double width; /* see syno_backbone_cfg_t (gpt: the model dim) */
  int depth;
  const char *op_text; /* NULL: standard operator; gpt: a linear-preset operator */
  const char *preset;  /* op_text's preset (syno/signature.h); NULL: conv2d, linear for gpt */
  double time_limit;   /* seconds, 0 = none. After the first max(5, 2%) steps the run
                        * stops at once, failed, when the time so far plus the remaining
                        * steps at the rate seen predict it would pass the limit ("would take
                        * 412 s, over the 30 s limit (predicted from 12 steps)"); a limit
                        * passed before that point stops it with the same prediction */
  int quiet;
  void (*progress)(const syno_train_progress_t *p, void *user); /* NULL: built-in printer */
  void *user;
  const char *optimizer; /* "sgd" or "adamw" (betas 0.9, 0.99; eps 1e-8); NULL: sgd for
                          * resnet/vgg, adamw for gpt */
  int heads;             /* gpt: attention heads, 0 means 4 */
  int64_t context;       /* gpt: context length, 0 means 64 */
} syno_train_cfg_t;

typedef struct syno_train_result {
  double final_test_acc, max_test_acc; /* gpt: next-token accuracy on the validation text */
  double final_train_loss;
  int64_t flops, params;
  double train_images_per_s; /* samples (images or sequences) per second */
  double wall_seconds;
  int epochs_done;           /* epochs run to their end (one stopped early does not count) */
  int failed;                /* 1 when training stopped early (NaN loss, time limit or its
                              * prediction) */
  char failure[128];         /* the reason, e.g. "loss is NaN at step 17" */
  double final_test_loss;    /* mean cross-entropy per label on the test/validation set
                              * (gpt: nats per token; perplexity = exp of it) */
  double initial_test_loss;  /* gpt: the same before the first step (0 for images) */
  double train_tokens_per_s; /* gpt: training tokens per second; 0 for images */
  int64_t steps;             /* optimizer steps taken */
} syno_train_result_t;

/* Loads the data, builds the backbone, trains with SGD or AdamW and a cosine schedule (with
 * warm-up), evaluates after every epoch (gpt: also before the first step). Images: one sample is an
 * image, its label the class. gpt: one sample is a window of context+1 characters of the
 * training text (syno_text_windows), every position predicts the next character, and the
 * validation text's windows are the test set. Returns 0 (also when training diverged or hit
 * the time limit: then res->failed is set), -1 with err on bad configuration or data, or -2
 * with err when training itself failed (out of memory, a step that could not run). */
int syno_train_run(const syno_train_cfg_t *cfg, syno_train_result_t *res, syno_error_t *err);

/* Where the data set of that name is read from (a file or a directory: the committed
 * data/ file, the directory of its $dir_env or data/<dir>, ...; a name that is not in the task
 * table is a path, returned as it is). For an external evaluator, which reads the same data. */
int syno_train_data_location(const char *name, char *path, size_t n);

/* The input shape (channels, height, width, before --pad) and class count of the image data
 * set of that name, without loading it: the task table's, or for a set whose table entry says
 * 0 (images) its files' (syno_data_images_shape on syno_train_data_location's directory).
 * Returns 0, or -1 with err (not an image data set of the table, or the files' problem). */
int syno_train_image_shape(const char *dataset, int64_t *c, int64_t *h, int64_t *w, int *classes, syno_error_t *err);

/* The backbone syno_train_run would train for cfg (same data shapes, vocabulary and seeded
 * initialisation), without training; the caller frees it. Returns 0, or -1 with err. */
int syno_train_build(const syno_train_cfg_t *cfg, syno_backbone_t *bb, syno_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* SYNO_BACKBONE_H */
