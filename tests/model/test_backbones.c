/* The published CNN backbones (resnet18 and its alias resnet, resnet34, resnext29,
 * densenet121, efficientnetv2s): their slot counts and bindings as published, a grouped slot against the plain
 * grouped conv, a synthesized operator in every slot (forward and backward through the whole
 * network), one short training epoch each above chance, the names every command takes, and
 * bad input. Small widths and depths keep it cheap; nothing here asserts a time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/backbone.h"
#include "syno/evalproto.h"
#include "synotest.h"

/* The conv2d preset's 1x1 conv: fits every conv slot, grouped or not. */
static const char *const conv1x1 = "r0=sum(C_in); in[i0, share(r0, 1), i2, i3] expand[share(i1, 1)] w1[r0, i1]";

static syno_backbone_cfg_t digits_cfg(const char *name, double width, int depth, const syno_slotop_t *op) {
  return (syno_backbone_cfg_t){
      .name = name, .in_c = 1, .in_h = 8, .in_w = 8, .nclasses = 10, .width = width, .depth = depth, .op = op};
}

static void build(const syno_backbone_cfg_t *c, syno_backbone_t *bb) {
  syno_rng_t rng;
  syno_rng_seed(&rng, 7, 1);
  syno_error_t err = {0};
  if (syno_backbone_build(c, &rng, bb, &err)) fail_msg("%s: %s", c->name, err.msg);
}

/* Slots as published: 2 x [2,2,2,2], 2 x [3,4,6,3], 9 bottlenecks, 6+12+24+16 dense layers,
 * 2+4+4 fused-MBConv and 6+9+15 MBConv blocks; and parameters as published (the torchvision
 * and CIFAR reference models with a 1-channel 3x3 stem and 10 classes). */
static void test_published_slots(void **state) {
  (void)state;
  static const struct {
    const char *name;
    int nslots;
  } want[] = {{"resnet18", 16}, {"resnet", 16},      {"resnet34", 32},
              {"resnext29", 9}, {"densenet121", 58}, {"efficientnetv2s", 40}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    syno_backbone_cfg_t c = digits_cfg(want[i].name, 0.25, 0, NULL);
    syno_backbone_t bb;
    build(&c, &bb);
    assert_int_equal(bb.nslots, want[i].nslots);
    assert_int_equal(bb.params, syno_nn_param_count(bb.net));
    int64_t slot_flops = 0;
    for (int s = 0; s < bb.nslots; s++) {
      syno_slot_info_t si;
      assert_true(syno_slot_info(bb.slots[s], &si));
      slot_flops += si.flops;
      if (!strcmp(want[i].name, "efficientnetv2s")) /* fused 3x3 convs, then depthwise ones */
        assert_int_equal(si.groups, s < 10 ? 1 : si.c_in);
      else
        assert_int_equal(si.groups, strcmp(want[i].name, "resnext29") ? 1 : 8);
      if (!strcmp(want[i].name, "densenet121")) { /* the bottleneck's 4k -> k, k = 32 x 0.25 */
        assert_int_equal(si.c_in, 32);
        assert_int_equal(si.c_out, 8);
      }
    }
    assert_true(bb.flops > slot_flops && slot_flops > 0);
    char buf[8192];
    assert_int_equal(syno_backbone_list_slots(&bb, buf, sizeof buf), bb.nslots);
    if (!strcmp(want[i].name, "resnext29")) assert_non_null(strstr(buf, "slot 0: C_in=32 C_out=32 H=8 W=8 groups=8"));
    fprintf(stderr, "  %-12s %2d slots, %lld FLOPs, %lld params\n", want[i].name, bb.nslots, (long long)bb.flops,
            (long long)bb.params);
    syno_backbone_free(&bb);
  }
  /* at the published widths, the published parameter counts: ResNet-18/34 and ResNeXt-29
   * 8x64d for CIFAR (width 4 here), DenseNet-121 and EfficientNetV2-S as torchvision has them
   * (stem and classifier adjusted as above) */
  static const struct {
    const char *name;
    double width;
    int64_t params;
  } pub[] = {{"resnet18", 4, 11172810},
             {"resnet34", 4, 21280970},
             {"resnext29", 4, 34425546},
             {"densenet121", 1, 7978856 - 64 * 3 * 49 - 1025000 + 64 * 9 + 10250},
             {"efficientnetv2s", 1, 21458488 - 24 * 3 * 9 - 1281000 + 24 * 9 + 12810}};
  for (size_t i = 0; i < sizeof pub / sizeof pub[0]; i++) {
    syno_backbone_cfg_t c = digits_cfg(pub[i].name, pub[i].width, 0, NULL);
    c.in_h = c.in_w = 32;
    syno_backbone_t bb;
    build(&c, &bb);
    assert_int_equal(bb.params, pub[i].params);
    syno_backbone_free(&bb);
  }
  /* the alias is the same network, drawn the same */
  syno_backbone_cfg_t a = digits_cfg("resnet", 0.5, 3, NULL), b = digits_cfg("resnet18", 0.5, 3, NULL);
  syno_backbone_t x, y;
  build(&a, &x);
  build(&b, &y);
  assert_int_equal(x.nslots, y.nslots);
  assert_int_equal(x.params, y.params);
  assert_int_equal(x.flops, y.flops);
  syno_backbone_free(&x);
  syno_backbone_free(&y);
  /* the depth knob caps the published stages */
  syno_backbone_cfg_t d = digits_cfg("densenet121", 0.25, 2, NULL);
  build(&d, &x);
  assert_int_equal(x.nslots, 8);
  syno_backbone_free(&x);
}

/* A grouped standard slot is the grouped conv2d layer, drawn from the same generator. */
static void test_grouped_slot(void **state) {
  (void)state;
  syno_rng_t r1, r2;
  syno_rng_seed(&r1, 5, 1);
  syno_rng_seed(&r2, 5, 1);
  syno_error_t err = {0};
  syno_layer_t *slot = NULL;
  assert_int_equal(syno_slot_create_grouped(NULL, 8, 12, 5, 5, 4, 0, &r1, &slot, &err), 0);
  syno_conv2d_cfg_t cc = {
      .in_channels = 8, .out_channels = 12, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1, .groups = 4};
  syno_layer_t *conv = syno_nn_conv2d_create(&cc, &r2);
  syno_slot_info_t si;
  assert_true(syno_slot_info(slot, &si));
  assert_int_equal(si.groups, 4);
  assert_int_equal(si.params, 12 * 2 * 9);
  assert_int_equal(si.flops, 2 * 12 * 2 * 9 * 25);
  assert_int_equal(si.params, syno_nn_param_count(slot));
  int64_t d[4] = {3, 8, 5, 5};
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  assert_int_equal(syno_nn_tensor_alloc(&x, 4, d), 0);
  syno_nn_fill_normal(&r1, &x, 0, 1);
  assert_int_equal(syno_nn_forward(slot, &x, 1), 0);
  assert_int_equal(syno_nn_forward(conv, &x, 1), 0);
  for (int64_t i = 0; i < syno_nn_tensor_numel(&conv->out); i++) assert_true(slot->out.data[i] == conv->out.data[i]);
  assert_int_equal(syno_nn_backward(slot, &conv->out), 0);
  assert_int_equal(syno_nn_backward(conv, &conv->out), 0);
  for (int64_t i = 0; i < syno_nn_tensor_numel(&x); i++) assert_true(slot->grad_in.data[i] == conv->grad_in.data[i]);
  syno_nn_layer_free(conv);
  syno_nn_layer_free(slot);
  /* a synthesized operator replaces the whole grouped conv: bound to the full 8 -> 12 */
  syno_slotop_t *op = NULL;
  if (syno_slotop_parse(conv1x1, &op, &err)) fail_msg("%s", err.msg);
  assert_int_equal(syno_slot_create_grouped(op, 8, 12, 5, 5, 4, 0, &r1, &slot, &err), 0);
  assert_true(syno_slot_info(slot, &si));
  assert_int_equal(si.groups, 1);
  assert_int_equal(si.params, 8 * 12);
  assert_int_equal(syno_nn_forward(slot, &x, 1), 0);
  assert_int_equal(slot->out.dims[1], 12);
  syno_nn_layer_free(slot);
  /* groups that do not divide the channels */
  assert_int_equal(syno_slot_create_grouped(NULL, 8, 12, 5, 5, 3, 0, &r1, &slot, &err), -1);
  assert_non_null(strstr(err.msg, "groups=3"));
  assert_int_equal(syno_slot_create_grouped(op, 8, 12, 5, 5, 0, 0, &r1, &slot, &err), -1);
  syno_slotop_free(op);
  syno_nn_tensor_free(&x);
}

/* One operator fills every slot of each network; a training step's forward and backward run. */
static void test_operator_in_slots(void **state) {
  (void)state;
  syno_error_t err = {0};
  syno_slotop_t *op = NULL;
  if (syno_slotop_parse(conv1x1, &op, &err)) fail_msg("%s", err.msg);
  const char *names[] = {"resnet18", "resnet34", "resnext29", "densenet121", "efficientnetv2s"};
  for (int i = 0; i < 5; i++) {
    syno_backbone_cfg_t c = digits_cfg(names[i], 0.25, 0, op);
    syno_backbone_t bb;
    build(&c, &bb);
    int64_t d[4] = {4, 1, 8, 8};
    syno_tensor_t x = SYNO_TENSOR_EMPTY, dl = SYNO_TENSOR_EMPTY;
    assert_int_equal(syno_nn_tensor_alloc(&x, 4, d), 0);
    syno_rng_t r;
    syno_rng_seed(&r, 3, 3);
    syno_nn_fill_normal(&r, &x, 0, 1);
    int32_t labels[4] = {0, 3, 5, 9};
    double loss;
    assert_int_equal(syno_nn_forward(bb.net, &x, 1), 0);
    assert_int_equal(syno_nn_softmax_xent(&bb.net->out, labels, &loss, &dl, NULL), 0);
    assert_true(isfinite(loss));
    bb.net->skip_input_grad = 1;
    assert_int_equal(syno_nn_backward(bb.net, &dl), 0);
    for (int s = 0; s < bb.nslots; s++) {
      syno_slot_info_t si;
      syno_slot_info(bb.slots[s], &si);
      assert_int_equal(si.params, si.c_in * si.c_out); /* the 1x1 conv, not the 3x3 */
      assert_int_equal(si.groups, 1);
      double g = 0;
      syno_param_t *p[4];
      int np = syno_nn_params(bb.slots[s], p, 4);
      assert_int_equal(np, 1);
      for (int64_t j = 0; j < syno_nn_tensor_numel(&p[0]->grad); j++) g += fabs(p[0]->grad.data[j]);
      assert_true(g > 0 && isfinite(g));
    }
    syno_nn_tensor_free(&x);
    syno_nn_tensor_free(&dl);
    syno_backbone_free(&bb);
  }
  syno_slotop_free(op);
}

/* The per-step losses of a run, recovered from the progress's running mean. */
typedef struct {
  double loss[64];
  int n;
  double sum;
  int64_t seen;
} losses_t;

static void record(const syno_train_progress_t *p, void *user) {
  losses_t *l = user;
  if (p->test_acc >= 0) return; /* the end-of-epoch report */
  int64_t seen = p->step * 32;  /* full batches: the subset is a multiple of the batch */
  if (l->n < 64) l->loss[l->n++] = (p->loss * (double)seen - l->sum) / (double)(seen - l->seen);
  l->sum = p->loss * (double)seen;
  l->seen = seen;
}

static double mean(const double *x, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) s += x[i];
  return s / n;
}

/* One short epoch on the digits (20 steps): the loss of the last 5 steps is below that of the
 * first 5. resnet34 at its published depth (at depths 1-3 it is resnet18's network); the
 * others capped at one block per stage. */
static void test_train_one_epoch(void **state) {
  (void)state;
  const struct {
    const char *name;
    int depth;
    const char *op;
  } runs[] = {{"resnet18", 1, NULL},       {"resnet34", 0, NULL},          {"resnext29", 1, NULL},
              {"densenet121", 1, NULL},    {"efficientnetv2s", 1, NULL},   {"resnext29", 1, conv1x1},
              {"densenet121", 1, conv1x1}, {"efficientnetv2s", 1, conv1x1}};
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    syno_train_cfg_t cfg = {0};
    cfg.backbone = runs[i].name;
    cfg.dataset = "digits";
    cfg.epochs = 1;
    cfg.batch = 32;
    cfg.subset = 640;
    cfg.width = 0.25;
    cfg.depth = runs[i].depth;
    cfg.op_text = runs[i].op;
    cfg.seed = 1;
    losses_t l = {{0}, 0, 0, 0};
    cfg.progress = record;
    cfg.user = &l;
    syno_train_result_t res;
    syno_error_t err = {0};
    if (syno_train_run(&cfg, &res, &err)) fail_msg("%s: %s", runs[i].name, err.msg);
    assert_int_equal(l.n, 20);
    double first = mean(l.loss, 5), last = mean(l.loss + 15, 5);
    fprintf(stderr, "  %-12s %-12s loss %.3f -> %.3f, test acc %.2f%%\n", runs[i].name,
            runs[i].op ? "1x1 operator" : "standard", first, last, 100 * res.final_test_acc);
    assert_false(res.failed);
    assert_int_equal(res.epochs_done, 1);
    assert_true(last < first);
  }
}

/* Every command takes the same names, a worker (syno eval) too. */
static void test_names(void **state) {
  (void)state;
  const char *const *all = syno_backbone_names(0), *const *img = syno_backbone_names(1);
  syno_error_t err = {0};
  int n = 0;
  for (; img[n]; n++) {
    assert_int_equal(syno_backbone_known(img[n], &err), 0);
    assert_string_equal(all[n], img[n]);
  }
  assert_string_equal(all[n], "gpt");
  assert_null(all[n + 1]);
  for (int i = 0; all[i]; i++) {
    syno_evalreq_t r;
    char *argv[] = {"eval", "--backbone", (char *)all[i], "--dataset", strcmp(all[i], "gpt") ? "digits" : "kjv", NULL};
    if (syno_evalreq_from_argv(5, argv, &r, &err)) fail_msg("a worker refuses %s: %s", all[i], err.msg);
    assert_string_equal(r.backbone, all[i]);
  }
  assert_int_equal(syno_backbone_known("lenet", &err), -1);
  assert_non_null(strstr(err.msg, "unknown backbone 'lenet' (known: resnet18, resnet, resnet34, resnext29"));
  syno_backbone_cfg_t c = digits_cfg("densenet", 0.25, 0, NULL);
  syno_backbone_t bb;
  syno_rng_t rng;
  syno_rng_seed(&rng, 1, 1);
  assert_int_equal(syno_backbone_build(&c, &rng, &bb, &err), -1);
  assert_non_null(strstr(err.msg, "'densenet'"));
  c = digits_cfg("resnext29", 17, 0, NULL);
  assert_int_equal(syno_backbone_build(&c, &rng, &bb, &err), -1);
  assert_non_null(strstr(err.msg, "width"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_published_slots),
      cmocka_unit_test(test_grouped_slot),
      cmocka_unit_test(test_operator_in_slots),
      cmocka_unit_test(test_train_one_epoch),
      cmocka_unit_test(test_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
