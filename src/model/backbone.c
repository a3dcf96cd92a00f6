/* Backbones with operator slots: the CNNs (ResNet-18/34, ResNeXt-29, DenseNet-121,
 * EfficientNetV2-S, VGG) by name, each a stage plan over a few shared block builders. See
 * syno/backbone.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/alloc.h"
#include "model_internal.h"
#include "syno/backbone.h"
#include "syno/task.h"
#include "syno/clock.h"
#include "syno/kernels.h"

typedef struct {
  syno_backbone_t *bb;
  const syno_slotop_t *op;
  syno_rng_t *rng;
  syno_error_t *err;
  int conv_backend;
  int failed;
} builder_t;

#define TRY(x)                                                 \
  do {                                                         \
    if (!(x)) {                                                \
      if (!b->failed) syno_error_set(b->err, "out of memory"); \
      b->failed = 1;                                           \
    }                                                          \
  } while (0)

/* The backbones by name; aliases share a family and its stage plan. */
enum family { F_RESNET, F_VGG, F_RESNEXT, F_DENSENET, F_EFFNET, F_GPT };

static const struct {
  const char *name;
  enum family f;
  int blocks[6]; /* blocks per stage, as published; 0: no such stage */
  int own_depth; /* a ResNet whose stages keep their published blocks (capped by --depth) */
} nets[] = {
    {"resnet18", F_RESNET, {2, 2, 2, 2}, 0},
    {"resnet", F_RESNET, {2, 2, 2, 2}, 0},
    {"resnet34", F_RESNET, {3, 4, 6, 3}, 1},
    {"resnext29", F_RESNEXT, {3, 3, 3, 0}, 0},
    {"densenet121", F_DENSENET, {6, 12, 24, 16}, 0},
    {"efficientnetv2s", F_EFFNET, {2, 4, 4, 6, 9, 15}, 0},
    {"vgg", F_VGG, {0}, 0},
    {"gpt", F_GPT, {0}, 0},
};
#define NNETS ((int)(sizeof nets / sizeof nets[0]))

/* The task table (syno/task.h) lists the backbones; nets[] adds how each is built, and
 * tests/model/test_backbones.c builds every name of the table. */
const char *const *syno_backbone_names(int images_only) { return syno_task_backbone_names(images_only ? SYNO_TASK_IMAGES : -1); }

int syno_backbone_known(const char *name, syno_error_t *err) {
  if (!syno_task_backbone_find(name, err)) return -1;
  for (int i = 0; i < NNETS; i++)
    if (!strcmp(name, nets[i].name)) return 0;
  return syno_error_set(err, "backbone '%s' has no builder", name);
}

static syno_layer_t *mk_slot(builder_t *b, int64_t ci, int64_t co, int64_t h, int64_t w, int64_t groups) {
  if (b->failed) return NULL;
  if (b->bb->nslots >= SYNO_BACKBONE_MAX_SLOTS) {
    syno_error_set(b->err, "too many slots (at most %d)", SYNO_BACKBONE_MAX_SLOTS);
    b->failed = 1;
    return NULL;
  }
  syno_layer_t *l = NULL;
  if (syno_slot_create_grouped(b->op, ci, co, h, w, groups, b->conv_backend, b->rng, &l, b->err)) {
    b->failed = 1;
    return NULL;
  }
  syno_slot_info_t info;
  syno_slot_info(l, &info);
  b->bb->slots[b->bb->nslots++] = l;
  b->bb->flops += info.flops;
  return l;
}

static syno_layer_t *mk_conv(builder_t *b, int64_t ci, int64_t co, int64_t k, int64_t pad, int64_t h, int64_t w) {
  if (b->failed) return NULL;
  syno_conv2d_cfg_t c = {0};
  c.in_channels = ci;
  c.out_channels = co;
  c.kernel_h = c.kernel_w = k;
  c.pad_h = c.pad_w = pad;
  c.backend = b->conv_backend;
  syno_layer_t *l = syno_nn_conv2d_create(&c, b->rng);
  TRY(l);
  b->bb->flops += 2 * co * ci * k * k * h * w;
  return l;
}

static syno_layer_t *seq(builder_t *b, int n, syno_layer_t **ls) {
  for (int i = 0; i < n; i++)
    if (!ls[i]) {
      for (int j = 0; j < n; j++) syno_nn_layer_free(ls[j]);
      if (!b->failed) syno_error_set(b->err, "out of memory");
      b->failed = 1;
      return NULL;
    }
  syno_layer_t *l = syno_nn_sequential_create(n, ls);
  TRY(l);
  return l;
}

static syno_layer_t *bn(builder_t *b, int64_t c) {
  syno_layer_t *l = syno_nn_batchnorm_create(c, 0.1, 1e-5);
  TRY(l);
  return l;
}

/* The shortcut of a residual block: [AvgPool2d(2)] 1x1 conv (standard) BN when the block
 * changes the shape, NULL (identity) when it does not. */
static syno_layer_t *shortcut(builder_t *b, int64_t ci, int64_t co, int64_t ho, int64_t wo, int down) {
  if (!down && ci == co) return NULL;
  syno_layer_t *s[3];
  int m = 0;
  if (down) s[m++] = syno_nn_avgpool2d_create(2, 2, 0);
  s[m++] = mk_conv(b, ci, co, 1, 0, ho, wo);
  s[m++] = bn(b, co);
  return seq(b, m, s);
}

/* ReLU(body(x) + shortcut(x)): the end every residual block shares. */
static syno_layer_t *residual_relu(builder_t *b, syno_layer_t *body, syno_layer_t *sc) {
  if (b->failed) {
    syno_nn_layer_free(body);
    syno_nn_layer_free(sc);
    return NULL;
  }
  syno_layer_t *res = syno_nn_residual_create(body, sc);
  TRY(res);
  syno_layer_t *pair[2] = {res, syno_nn_relu_create()};
  return seq(b, 2, pair);
}

/* BasicBlock: [pool] slot BN ReLU slot BN (+ shortcut) ReLU. */
static syno_layer_t *basic_block(builder_t *b, int64_t ci, int64_t co, int64_t *h, int64_t *w, int down) {
  int64_t ho = down ? *h / 2 : *h, wo = down ? *w / 2 : *w;
  syno_layer_t *body[6];
  int n = 0;
  if (down) body[n++] = syno_nn_avgpool2d_create(2, 2, 0);
  body[n++] = mk_slot(b, ci, co, ho, wo, 1);
  body[n++] = bn(b, co);
  body[n++] = syno_nn_relu_create();
  body[n++] = mk_slot(b, co, co, ho, wo, 1);
  body[n++] = bn(b, co);
  syno_layer_t *bodyl = seq(b, n, body);
  syno_layer_t *sc = shortcut(b, ci, co, ho, wo, down);
  *h = ho;
  *w = wo;
  return residual_relu(b, bodyl, sc);
}

/* ResNeXt bottleneck: 1x1 conv BN ReLU, [pool] grouped 3x3 slot BN ReLU, 1x1 conv BN
 * (+ shortcut) ReLU. The 1x1 convs stay standard: only the grouped 3x3 conv is a slot. The
 * stride of the published block sits in the 3x3 conv, so the pool goes right before it. */
static syno_layer_t *bottleneck_block(builder_t *b, int64_t ci, int64_t inner, int64_t co, int64_t groups, int64_t *h,
                                      int64_t *w, int down) {
  int64_t ho = down ? *h / 2 : *h, wo = down ? *w / 2 : *w;
  syno_layer_t *body[10];
  int n = 0;
  body[n++] = mk_conv(b, ci, inner, 1, 0, *h, *w);
  body[n++] = bn(b, inner);
  body[n++] = syno_nn_relu_create();
  if (down) body[n++] = syno_nn_avgpool2d_create(2, 2, 0);
  body[n++] = mk_slot(b, inner, inner, ho, wo, groups);
  body[n++] = bn(b, inner);
  body[n++] = syno_nn_relu_create();
  body[n++] = mk_conv(b, inner, co, 1, 0, ho, wo);
  body[n++] = bn(b, co);
  syno_layer_t *bodyl = seq(b, n, body);
  syno_layer_t *sc = shortcut(b, ci, co, ho, wo, down);
  *h = ho;
  *w = wo;
  return residual_relu(b, bodyl, sc);
}

/* DenseNet-BC layer: concat(x, slot(ReLU(BN(conv1x1(ReLU(BN(x))))))), the 1x1 bottleneck
 * giving 4k channels and the 3x3 slot k (the growth rate). */
static syno_layer_t *dense_layer(builder_t *b, int64_t ci, int64_t k, int64_t h, int64_t w) {
  syno_layer_t *body[6] = {
      bn(b, ci),    syno_nn_relu_create(), mk_conv(b, ci, 4 * k, 1, 0, h, w),
      bn(b, 4 * k), syno_nn_relu_create(), mk_slot(b, 4 * k, k, h, w, 1),
  };
  syno_layer_t *bodyl = seq(b, 6, body);
  if (!bodyl) return NULL;
  syno_layer_t *l = syno_nn_dense_create(bodyl);
  TRY(l);
  return l;
}

/* Transition: BN ReLU 1x1 conv (halving the channels) AvgPool2d(2) (while the side stays
 * >= 2, as the ResNets downsample). */
static syno_layer_t *transition(builder_t *b, int64_t ci, int64_t co, int64_t *h, int64_t *w) {
  syno_layer_t *t[4] = {bn(b, ci), syno_nn_relu_create(), mk_conv(b, ci, co, 1, 0, *h, *w), NULL};
  int n = 3;
  if (*h / 2 >= 2 && *w / 2 >= 2) {
    t[n++] = syno_nn_avgpool2d_create(2, 2, 0);
    *h /= 2;
    *w /= 2;
  }
  return seq(b, n, t);
}

/* Squeeze-and-excitation on c channels: x * sigmoid(FC(SiLU(FC(GAP(x))))), squeezed to se. */
static syno_layer_t *squeeze_excite(builder_t *b, int64_t c, int64_t se) {
  if (b->failed) return NULL;
  syno_layer_t *l[5] = {syno_nn_global_avgpool_create(), syno_nn_linear_create(c, se, 1, b->rng), syno_nn_silu_create(),
                        syno_nn_linear_create(se, c, 1, b->rng), syno_nn_sigmoid_create()};
  syno_layer_t *body = seq(b, 5, l);
  if (!body) return NULL;
  b->bb->flops += 4 * c * se;
  syno_layer_t *g = syno_nn_gate_create(body);
  TRY(g);
  return g;
}

/* EfficientNetV2's blocks, SiLU after every BN but the projection's. Fused-MBConv: [pool]
 * 3x3 slot (to e*ci, or straight to co when e = 1) BN SiLU, then 1x1 conv to co BN when
 * e > 1. MBConv: 1x1 conv to e*ci BN SiLU, [pool] depthwise 3x3 slot BN SiLU, SE (squeezed
 * to ci/4), 1x1 conv to co BN. A block adds its input only when the shape stays (no
 * projection shortcut, as published); the downsampling pool sits where the stride-2 conv is. */
static syno_layer_t *mbconv_block(builder_t *b, int fused, int64_t ci, int64_t co, int64_t e, int64_t *h, int64_t *w,
                                  int down) {
  int64_t ho = down ? *h / 2 : *h, wo = down ? *w / 2 : *w, mid = e * ci;
  syno_layer_t *body[12];
  int n = 0;
  if (fused) {
    if (down) body[n++] = syno_nn_avgpool2d_create(2, 2, 0);
    body[n++] = mk_slot(b, ci, e > 1 ? mid : co, ho, wo, 1);
    body[n++] = bn(b, e > 1 ? mid : co);
    body[n++] = syno_nn_silu_create();
  } else {
    body[n++] = mk_conv(b, ci, mid, 1, 0, *h, *w);
    body[n++] = bn(b, mid);
    body[n++] = syno_nn_silu_create();
    if (down) body[n++] = syno_nn_avgpool2d_create(2, 2, 0);
    body[n++] = mk_slot(b, mid, mid, ho, wo, mid);
    body[n++] = bn(b, mid);
    body[n++] = syno_nn_silu_create();
    body[n++] = squeeze_excite(b, mid, ci / 4 > 0 ? ci / 4 : 1);
  }
  if (!fused || e > 1) {
    body[n++] = mk_conv(b, mid, co, 1, 0, ho, wo);
    body[n++] = bn(b, co);
  }
  syno_layer_t *bodyl = seq(b, n, body);
  *h = ho;
  *w = wo;
  if (down || ci != co || !bodyl) return bodyl;
  syno_layer_t *res = syno_nn_residual_create(bodyl, NULL);
  TRY(res);
  return res;
}

static int64_t scaled(int64_t base, double width) {
  int64_t c = (int64_t)(base * width + 0.5);
  return c < 1 ? 1 : c;
}

/* The top-level layers of a backbone: at most MAX_LAYERS (VGG at depth 8 has 77). One more
 * is refused as the builder's failure, never written past the array. */
#define MAX_LAYERS 128
static void push(builder_t *b, syno_layer_t **layers, int *n, syno_layer_t *l) {
  if (*n < MAX_LAYERS) {
    layers[(*n)++] = l;
    return;
  }
  syno_nn_layer_free(l);
  if (!b->failed) syno_error_set(b->err, "the backbone has more than %d layers", MAX_LAYERS);
  b->failed = 1;
}

/* Blocks in a stage: the published count, capped by the depth knob when given. */
static int stage_blocks(int published, int depth) { return depth > 0 && depth < published ? depth : published; }

static int build(const syno_backbone_cfg_t *cfg, syno_rng_t *rng, syno_backbone_t *bb, syno_error_t *err) {
  memset(bb, 0, sizeof *bb);
  const char *name = cfg->name ? cfg->name : "resnet";
  if (syno_backbone_known(name, err)) return -1;
  int net = 0;
  while (strcmp(nets[net].name, name)) net++;
  const enum family fam = nets[net].f;
  if (fam == F_GPT) {
    if (cfg->op && cfg->op->sig.kind != SYNO_SIG_LINEAR)
      return syno_error_set(err,
                            "the gpt backbone's slots are linear: its operator must "
                            "come from the linear preset (got %s)",
                            cfg->op->sig.name);
    return model_gpt_build(cfg, rng, bb, err);
  }
  if (cfg->op && cfg->op->sig.kind != SYNO_SIG_CONV)
    return syno_error_set(err,
                          "the %s backbone's slots are convolutions: its operator must "
                          "come from a conv preset, conv2d or conv2d-wide (got %s)",
                          name, cfg->op->sig.name);
  double width = cfg->width > 0 ? cfg->width : 1.0;
  int depth = cfg->depth > 0 ? cfg->depth : 2;
  if (cfg->depth < 0 || cfg->depth > 8) return syno_error_set(err, "depth must be in 1..8 (got %d)", cfg->depth);
  if (cfg->width < 0 || cfg->width > 16) return syno_error_set(err, "width must be in (0, 16] (got %g)", cfg->width);
  if (cfg->in_c < 1 || cfg->in_h < 1 || cfg->in_w < 1 || cfg->nclasses < 2)
    return syno_error_set(err, "bad input shape or class count");
  builder_t b = {bb, cfg->op, rng, err, cfg->conv_backend, 0};
  int64_t h = cfg->in_h, w = cfg->in_w;
  syno_layer_t *layers[MAX_LAYERS];
  int n = 0;
  int64_t c;
  if (fam == F_RESNET) {
    /* resnet18 (and its old name resnet) keeps the knob it always had: D blocks in every
     * stage, the published 2 by default; resnet34 caps its published [3, 4, 6, 3] at D */
    const int own_depth = nets[net].own_depth;
    c = scaled(16, width);
    push(&b, layers, &n, mk_conv(&b, cfg->in_c, c, 3, 1, h, w));
    push(&b, layers, &n, bn(&b, c));
    push(&b, layers, &n, syno_nn_relu_create());
    for (int st = 0; st < 4; st++) {
      int64_t co = scaled(16 << st, width);
      int nb = own_depth ? stage_blocks(nets[net].blocks[st], cfg->depth) : depth;
      for (int k = 0; k < nb; k++) {
        int down = st > 0 && k == 0 && h / 2 >= 2 && w / 2 >= 2;
        push(&b, layers, &n, basic_block(&b, c, co, &h, &w, down));
        c = co;
      }
    }
  } else if (fam == F_RESNEXT) {
    /* ResNeXt-29 8x64d for CIFAR at the ResNets' quarter scale: stem 64 -> 16, stage outputs
     * 256/512/1024 -> 64/128/256, grouped widths 8 x 64 x 2^stage -> 128/256/512, each times
     * width; a grouped width is rounded to a multiple of the cardinality 8 */
    const int64_t card = 8;
    c = scaled(16, width);
    push(&b, layers, &n, mk_conv(&b, cfg->in_c, c, 3, 1, h, w));
    push(&b, layers, &n, bn(&b, c));
    push(&b, layers, &n, syno_nn_relu_create());
    for (int st = 0; st < 3; st++) {
      int64_t co = scaled(64 << st, width), inner = (scaled(128 << st, width) + card / 2) / card * card;
      if (inner < card) inner = card;
      for (int k = 0; k < stage_blocks(nets[net].blocks[st], cfg->depth); k++) {
        int down = st > 0 && k == 0 && h / 2 >= 2 && w / 2 >= 2;
        push(&b, layers, &n, bottleneck_block(&b, c, inner, co, card, &h, &w, down));
        c = co;
      }
    }
  } else if (fam == F_DENSENET) {
    /* DenseNet-BC-121 on small images: the stem is one 3x3 conv to 2k channels, BN, ReLU (the
     * published 7x7 stride-2 conv and max pool would leave nothing of an 8x8 image); growth
     * rate k = 32 x width, compression 0.5, BN ReLU before the classifier */
    int64_t k = scaled(32, width);
    c = 2 * k;
    push(&b, layers, &n, mk_conv(&b, cfg->in_c, c, 3, 1, h, w));
    push(&b, layers, &n, bn(&b, c));
    push(&b, layers, &n, syno_nn_relu_create());
    for (int st = 0; st < 4; st++) {
      syno_layer_t *blk[24];
      int nb = stage_blocks(nets[net].blocks[st], cfg->depth);
      for (int i = 0; i < nb; i++, c += k) blk[i] = dense_layer(&b, c, k, h, w);
      push(&b, layers, &n, seq(&b, nb, blk));
      if (st < 3) {
        push(&b, layers, &n, transition(&b, c, c / 2, &h, &w));
        c /= 2;
      }
    }
    push(&b, layers, &n, bn(&b, c));
    push(&b, layers, &n, syno_nn_relu_create());
  } else if (fam == F_EFFNET) {
    /* EfficientNetV2-S (its table 4) at the published widths x width, the stem at stride 1
     * for small images: stages of fused-MBConv (expansion 1, 4, 4) then MBConv with SE
     * (4, 6, 6); stride 2 in stages 2, 3, 4 and 6; a 1x1 head conv to 1280 BN SiLU */
    static const struct {
      int fused, e, down, c;
    } st_plan[6] = {{1, 1, 0, 24}, {1, 4, 1, 48}, {1, 4, 1, 64}, {0, 4, 1, 128}, {0, 6, 0, 160}, {0, 6, 1, 256}};
    c = scaled(24, width);
    push(&b, layers, &n, mk_conv(&b, cfg->in_c, c, 3, 1, h, w));
    push(&b, layers, &n, bn(&b, c));
    push(&b, layers, &n, syno_nn_silu_create());
    for (int st = 0; st < 6; st++) {
      int64_t co = scaled(st_plan[st].c, width);
      syno_layer_t *blk[16];
      int nb = stage_blocks(nets[net].blocks[st], cfg->depth);
      for (int k = 0; k < nb; k++) {
        int down = st_plan[st].down && k == 0 && h / 2 >= 2 && w / 2 >= 2;
        blk[k] = mbconv_block(&b, st_plan[st].fused, c, co, st_plan[st].e, &h, &w, down);
        c = co;
      }
      push(&b, layers, &n, seq(&b, nb, blk));
    }
    int64_t head = scaled(1280, width);
    push(&b, layers, &n, mk_conv(&b, c, head, 1, 0, h, w));
    push(&b, layers, &n, bn(&b, head));
    push(&b, layers, &n, syno_nn_silu_create());
    c = head;
  } else {
    c = cfg->in_c;
    for (int st = 0; st < 3; st++) {
      int64_t co = scaled(16 << st, width);
      for (int k = 0; k < depth; k++) {
        /* the first conv of the network sees the raw image: a standard conv */
        push(&b, layers, &n, (st == 0 && k == 0) ? mk_conv(&b, c, co, 3, 1, h, w) : mk_slot(&b, c, co, h, w, 1));
        push(&b, layers, &n, bn(&b, co));
        push(&b, layers, &n, syno_nn_relu_create());
        c = co;
      }
      if (h / 2 >= 2 && w / 2 >= 2) {
        push(&b, layers, &n, syno_nn_maxpool2d_create(2, 2, 0));
        h /= 2;
        w /= 2;
      }
    }
  }
  push(&b, layers, &n, syno_nn_global_avgpool_create());
  push(&b, layers, &n, syno_nn_linear_create(c, cfg->nclasses, 1, rng));
  bb->flops += 2 * c * cfg->nclasses;
  if (b.failed) {
    for (int i = 0; i < n; i++) syno_nn_layer_free(layers[i]);
    memset(bb, 0, sizeof *bb);
    return -1;
  }
  bb->net = seq(&b, n, layers);
  if (!bb->net) {
    memset(bb, 0, sizeof *bb);
    return -1;
  }
  bb->params = syno_nn_param_count(bb->net);
  return 0;
}

int syno_backbone_build(const syno_backbone_cfg_t *cfg, syno_rng_t *rng, syno_backbone_t *bb, syno_error_t *err) {
  if (build(cfg, rng, bb, err)) return -1;
  for (int i = 0; i < bb->nslots; i++) syno_slot_set_kernels(bb->slots[i], cfg->kernels);
  bb->cfg = *cfg;
  bb->cfg.op = NULL;
  return 0;
}

void syno_backbone_free(syno_backbone_t *bb) {
  if (!bb) return;
  syno_nn_layer_free(bb->net);
  memset(bb, 0, sizeof *bb);
}

int syno_backbone_distinct_slots(const syno_backbone_t *bb, syno_slot_info_t *info, int *first) {
  int n = 0;
  for (int i = 0; i < bb->nslots; i++) {
    syno_slot_info_t si;
    syno_slot_info(bb->slots[i], &si);
    int dup = 0;
    for (int j = 0; j < n && !dup; j++)
      dup = si.c_in == info[j].c_in && si.c_out == info[j].c_out && si.h == info[j].h && si.w == info[j].w &&
            si.s == info[j].s && si.kind == info[j].kind && si.groups == info[j].groups;
    if (dup) continue;
    info[n] = si;
    if (first) first[n] = i;
    n++;
  }
  return n;
}

int syno_backbone_list_slots(const syno_backbone_t *bb, char *buf, size_t n) {
  size_t used = 0;
  if (n) buf[0] = 0;
  for (int i = 0; i < bb->nslots; i++) {
    syno_slot_info_t s;
    syno_slot_info(bb->slots[i], &s);
    if (used < n) {
      char groups[32] = "";
      if (s.groups > 1) snprintf(groups, sizeof groups, " groups=%lld", (long long)s.groups);
      int k =
          s.kind == SYNO_SLOT_LINEAR
              ? snprintf(buf + used, n - used, "slot %d: linear S=%lld C_in=%lld C_out=%lld flops=%lld params=%lld\n",
                         i, (long long)s.s, (long long)s.c_in, (long long)s.c_out, (long long)s.flops,
                         (long long)s.params)
              : snprintf(buf + used, n - used, "slot %d: C_in=%lld C_out=%lld H=%lld W=%lld%s flops=%lld params=%lld\n",
                         i, (long long)s.c_in, (long long)s.c_out, (long long)s.h, (long long)s.w, groups,
                         (long long)s.flops, (long long)s.params);
      if (k > 0) used += (size_t)k;
    }
  }
  return bb->nslots;
}

/* The clock of a latency: with one compute thread and no Halide kernels (whose runtime has a
 * thread pool of its own), every forward runs on the calling thread, so its CPU time is its
 * latency without the time other processes held the CPU (on a loaded machine the wall clock's
 * medians put one speed-up at 1.96x and 3.05x in two runs, CPU time at 1.81x and 1.79x; quiet,
 * both said 1.85x); otherwise the wall clock. */
static double (*latency_clock(int kernels))(void) {
  return kernels == SYNO_KERNELS_EXEC && syno_nn_threads_get() == 1 ? syno_clock_thread_seconds : syno_clock_seconds;
}

/* One inference forward of a frozen net, or of a slot as deployed: as the layer before a batch
 * norm (syno_nn_forward_affine with the identity map), which is how a network runs it once
 * the norm after it is folded (src/nn/deploy.c). */
static int infer(syno_layer_t *net, const syno_tensor_t *x, int slot) {
  if (!slot) return syno_nn_forward(net, x, 0);
  int rc = syno_nn_forward_affine(net, x, NULL, NULL, 0);
  return rc > 0 ? 0 : rc;
}

/* Times n nets (slot: n slots, as deployed) on input x, round-robin, on latency_clock(kernels);
 * medians[k] is net k's median. */
static int latencies_on(syno_layer_t *const *nets, int n, const syno_tensor_t *x, int repeats, int kernels, int slot,
                        double *medians, syno_error_t *err) {
  double (*clk)(void) = latency_clock(kernels);
  double *t = syno_malloc_array((long long)repeats * n, sizeof(double));
  int rc = t ? 0 : SYNO_NN_ENOMEM;
  /* Frozen, as a deployed network is: weights converted to a kernel's layout once, in the
   * warm-up (syno_nn_freeze). */
  for (int k = 0; k < n; k++) syno_nn_freeze(nets[k], 1);
  for (int k = 0; !rc && k < n; k++) rc = infer(nets[k], x, slot); /* warm-up: primitives, scratch buffers */
  /* Round-robin, so that a change of load on a shared machine hits every net alike. */
  for (int i = 0; !rc && i < repeats; i++)
    for (int k = 0; !rc && k < n; k++) {
      double t0 = clk();
      rc = infer(nets[k], x, slot);
      t[(size_t)k * (size_t)repeats + (size_t)i] = clk() - t0;
    }
  for (int k = 0; k < n; k++) syno_nn_freeze(nets[k], 0);
  if (rc) {
    free(t);
    return syno_error_set(err, "latency: forward failed: %s", syno_nn_status_str(rc));
  }
  for (int k = 0; k < n; k++) medians[k] = syno_median(t + (size_t)k * (size_t)repeats, repeats);
  free(t);
  return 0;
}

/* A random input of the given shape (normal values), seeded alike for every measurement. */
static int random_input(int ndim, const int64_t *d, syno_tensor_t *x, syno_error_t *err) {
  if (syno_nn_tensor_alloc(x, ndim, d)) return syno_error_set(err, "latency: out of memory");
  syno_rng_t rng;
  syno_rng_seed(&rng, 1, 99);
  syno_nn_fill_normal(&rng, x, 0, 1);
  return 0;
}

/* The input of cfg's network for `batch` samples: random images, or (gpt) token ids. */
static int net_input(const syno_backbone_cfg_t *cfg, int64_t batch, syno_tensor_t *x, syno_error_t *err) {
  if (syno_task_is_lm(cfg->name)) {
    int64_t d[2] = {batch, cfg->context > 0 ? cfg->context : 64};
    if (syno_nn_tensor_alloc(x, 2, d)) return syno_error_set(err, "latency: out of memory");
    for (int64_t i = 0; i < d[0] * d[1]; i++) x->data[i] = (float)((i * 7) % (cfg->vocab > 0 ? cfg->vocab : 1));
    return 0;
  }
  int64_t d[4] = {batch, cfg->in_c, cfg->in_h, cfg->in_w};
  return random_input(4, d, x, err);
}

static int latencies_of(syno_layer_t *const *nets, int n, int slot, int64_t batch, int64_t c, int64_t h, int64_t w,
                        int repeats, double *medians, syno_error_t *err) {
  if (n < 1 || batch < 1 || repeats < 1 || repeats > 1000)
    return syno_error_set(err, "latency: nets, batch and repeats must be positive (repeats <= 1000)");
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  int64_t d[4] = {batch, c, h, w};
  if (random_input(4, d, &x, err)) return -1;
  int rc = latencies_on(nets, n, &x, repeats, SYNO_KERNELS_EXEC, slot, medians, err);
  syno_nn_tensor_free(&x);
  return rc;
}

int syno_net_latencies(syno_layer_t *const *nets, int n, int64_t batch, int64_t c, int64_t h, int64_t w, int repeats,
                       double *medians, syno_error_t *err) {
  return latencies_of(nets, n, 0, batch, c, h, w, repeats, medians, err);
}

int syno_slot_latencies(syno_layer_t *const *slots, int n, int64_t batch, int64_t c, int64_t h, int64_t w, int repeats,
                        double *medians, syno_error_t *err) {
  return latencies_of(slots, n, 1, batch, c, h, w, repeats, medians, err);
}

int syno_net_latency(syno_layer_t *net, int64_t batch, int64_t c, int64_t h, int64_t w, int repeats,
                     double *median_seconds, syno_error_t *err) {
  return syno_net_latencies(&net, 1, batch, c, h, w, repeats, median_seconds, err);
}

int syno_latency_fastest(const double t[SYNO_LAT_N]) {
  int f = t[SYNO_LAT_IM2COL] < t[SYNO_LAT_ONEDNN] ? SYNO_LAT_IM2COL : SYNO_LAT_ONEDNN;
  if (t[SYNO_LAT_HALIDE] > 0 && t[SYNO_LAT_HALIDE] < t[f]) f = SYNO_LAT_HALIDE;
  return f;
}

const char *syno_latency_impl_name(int lat) {
  switch (lat) {
    case SYNO_LAT_ONEDNN: return "onednn";
    case SYNO_LAT_IM2COL: return "im2col";
    case SYNO_LAT_HALIDE: return "halide";
    default: return "candidate";
  }
}

/* The standard 3x3 convolution written in the conv2d preset's primitives: what a Halide
 * kernel of the standard network computes in its slots. */
static const char std_conv_text[] =
    "r0=sum(C_in) r1=sum(k_1) r2=sum(k_1); in[i0, share(r0, 1), unfold(i2, share(r1, 1)), unfold(i3, share(r2, 1))] "
    "expand[share(i1, 1)] w1[i1, r0, r1, r2]";

/* What ran slot i of cand in its last inference forward. */
static const char *slot_kernel(const syno_backbone_t *cand, int i) {
  const char *k = syno_slot_kernel_used(cand->slots[i]);
  return k ? k : "standard";
}

/* The error of a failed forward: the first slot's message when one failed, else the status. */
static int forward_error(const syno_backbone_t *const *bbs, int n, syno_error_t *err) {
  for (int k = 0; k < n; k++)
    for (int i = 0; bbs[k] && i < bbs[k]->nslots; i++) {
      const char *m = syno_slot_error(bbs[k]->slots[i]);
      if (m && *m) return syno_error_set(err, "latency: slot %d: %s", i, m);
    }
  return -1;
}

int syno_backbone_latency_cmp(syno_backbone_t *cand, const syno_backbone_cfg_t *cfg, syno_rng_t *rng, int64_t batch,
                              int repeats, syno_latency_cmp_t *out, syno_error_t *err) {
  memset(out, 0, sizeof *out);
  int gpt = syno_task_is_lm(cfg->name);
  int nstd = cfg->kernels != SYNO_KERNELS_EXEC && !gpt ? 3 : 2;
  syno_backbone_cfg_t sc = *cfg;
  sc.op = NULL;
  sc.kernels = SYNO_KERNELS_EXEC;
  syno_backbone_t std[3];
  syno_slotop_t *conv = NULL;
  int built = 0, rc = 0;
  for (int i = 0; i < cand->nslots; i++) syno_slot_set_kernels(cand->slots[i], cfg->kernels);
  for (; built < nstd; built++) {
    sc.conv_backend = built == 1 ? SYNO_CONV_IM2COL : SYNO_CONV_AUTO;
    if (built == 2) {
      /* Only the full 3x3 conv is written in primitives: grouped slots' standard operator
       * (resnext29, efficientnetv2s) would be timed as a dense conv, not what they run. */
      int grouped = 0;
      for (int i = 0; i < std[0].nslots; i++) {
        syno_slot_info_t si;
        grouped |= syno_slot_info(std[0].slots[i], &si) && si.groups > 1;
      }
      if (grouped) {
        snprintf(out->std_kernel_note, sizeof out->std_kernel_note,
                 "grouped slots (their standard grouped conv is not written as a kernel)");
        nstd = 2;
        break;
      }
      if (syno_slotop_parse_preset("conv2d", std_conv_text, &conv, err)) {
        rc = -1;
        break;
      }
      sc.op = conv;
      sc.kernels = cfg->kernels;
    }
    if (syno_backbone_build(&sc, rng, &std[built], err)) {
      if (built == 2) { /* the conv in primitives does not fit every slot */
        snprintf(out->std_kernel_note, sizeof out->std_kernel_note, "%s", err->msg);
        nstd = 2;
        break;
      }
      rc = -1;
      break;
    }
    if (std[built].nslots != cand->nslots) {
      syno_backbone_free(&std[built]);
      rc = syno_error_set(err, "latency: the candidate has %d slots, the standard network %d", cand->nslots,
                          std[built].nslots);
      break;
    }
  }
  syno_slotop_free(conv);
  if (!rc) {
    out->std_flops = std[0].flops;
    syno_layer_t *nets[4] = {cand->net, std[0].net, std[1].net, nstd > 2 ? std[2].net : NULL};
    syno_tensor_t x = SYNO_TENSOR_EMPTY;
    rc = batch < 1 || repeats < 1 || repeats > 1000
             ? syno_error_set(err, "latency: batch and repeats must be positive (repeats <= 1000)")
             : net_input(cfg, batch, &x, err);
    if (!rc && nstd > 2 && syno_nn_forward(std[2].net, &x, 0)) {
      /* The conv in primitives does not fit every slot (a 3x3 window over a 2x2 map) or its
       * kernels could not be built: the standard network is then not timed as kernels. */
      for (int i = 0; i < std[2].nslots && !out->std_kernel_note[0]; i++) {
        const char *m = syno_slot_error(std[2].slots[i]);
        if (m && *m) snprintf(out->std_kernel_note, sizeof out->std_kernel_note, "slot %d: %s", i, m);
      }
      syno_backbone_free(&std[2]);
      built = nstd = 2;
    }
    if (!rc) rc = latencies_on(nets, 1 + nstd, &x, repeats, cfg->kernels, 0, out->net, err);
    syno_nn_tensor_free(&x);
    if (rc) {
      const syno_backbone_t *bbs[4] = {cand, &std[0], &std[1], nstd > 2 ? &std[2] : NULL};
      forward_error(bbs, 4, err);
    }
  }
  for (int i = 0; !rc && i < cand->nslots; i++) {
    const char *k = slot_kernel(cand, i);
    if (i == 0)
      snprintf(out->net_kernel, sizeof out->net_kernel, "%s", k);
    else if (strcmp(out->net_kernel, k))
      snprintf(out->net_kernel, sizeof out->net_kernel, "mixed");
    if (nstd > 2) {
      k = slot_kernel(&std[2], i);
      if (i == 0)
        snprintf(out->std_kernel, sizeof out->std_kernel, "%s", k);
      else if (strcmp(out->std_kernel, k))
        snprintf(out->std_kernel, sizeof out->std_kernel, "mixed");
    }
  }
  syno_slot_info_t distinct[SYNO_BACKBONE_MAX_SLOTS];
  int first[SYNO_BACKBONE_MAX_SLOTS], nd = syno_backbone_distinct_slots(cand, distinct, first);
  for (int d = 0; !rc && d < nd; d++) {
    const int i = first[d];
    const syno_slot_info_t si = distinct[d];
    syno_layer_t *sl[4] = {cand->slots[i], std[0].slots[i], std[1].slots[i], nstd > 2 ? std[2].slots[i] : NULL};
    out->slot[out->nslots] = si;
    syno_tensor_t x = SYNO_TENSOR_EMPTY;
    int64_t conv4[4] = {batch, si.c_in, si.h, si.w}, lin[3] = {batch, si.s, si.c_in};
    rc = si.kind == SYNO_SLOT_LINEAR ? random_input(3, lin, &x, err) : random_input(4, conv4, &x, err);
    if (!rc) rc = latencies_on(sl, 1 + nstd, &x, repeats, cfg->kernels, 1, out->slot_t[out->nslots], err);
    syno_nn_tensor_free(&x);
    if (rc) {
      const syno_backbone_t *bbs[4] = {cand, &std[0], &std[1], nstd > 2 ? &std[2] : NULL};
      forward_error(bbs, 4, err);
    }
    snprintf(out->slot_kernel[out->nslots], sizeof out->slot_kernel[0], "%s", slot_kernel(cand, i));
    const char *path = syno_slot_path(cand->slots[i]);
    snprintf(out->slot_path[out->nslots], sizeof out->slot_path[0], "%s", path ? path : "standard");
    syno_slot_info_t ss;
    out->std_slot_flops[out->nslots] = syno_slot_info(std[0].slots[i], &ss) ? ss.flops : 0;
    if (nstd > 2)
      snprintf(out->std_slot_kernel[out->nslots], sizeof out->std_slot_kernel[0], "%s", slot_kernel(&std[2], i));
    out->nslots++;
  }
  for (int k = 0; k < built; k++) syno_backbone_free(&std[k]);
  return rc;
}
