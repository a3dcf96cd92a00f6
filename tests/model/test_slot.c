/* Operator slots: the standard slot against the plain conv layer, a synthesized operator
 * (the builtin conv2d written in primitives) against the same conv, gradients of a tiny
 * network through a slot by finite differences, and short training runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "syno/backbone.h"
#include "syno/data.h"
#include "synotest.h"

static double max_diff(const syno_tensor_t *a, const syno_tensor_t *b) {
  assert_int_equal(syno_nn_tensor_numel(a), syno_nn_tensor_numel(b));
  double d = 0, s = 0;
  for (int64_t i = 0; i < syno_nn_tensor_numel(a); i++) {
    d = fmax(d, fabs((double)a->data[i] - b->data[i]));
    s = fmax(s, fabs((double)b->data[i]));
  }
  return s > 0 ? d / s : d;
}

static syno_layer_t *plain_conv(int64_t ci, int64_t co, syno_rng_t *rng) {
  syno_conv2d_cfg_t c = {0};
  c.in_channels = ci;
  c.out_channels = co;
  c.kernel_h = c.kernel_w = 3;
  c.pad_h = c.pad_w = 1;
  return syno_nn_conv2d_create(&c, rng);
}

static void rand_tensor(syno_tensor_t *t, int ndim, const int64_t *d, uint64_t seed) {
  syno_rng_t r;
  syno_rng_seed(&r, seed, 3);
  assert_int_equal(syno_nn_tensor_alloc(t, ndim, d), 0);
  syno_nn_fill_normal(&r, t, 0, 1);
}

static void test_standard_slot_equals_conv(void **state) {
  (void)state;
  syno_rng_t r1, r2;
  syno_rng_seed(&r1, 5, 1);
  syno_rng_seed(&r2, 5, 1);
  syno_error_t err = {0};
  syno_layer_t *slot = NULL;
  assert_int_equal(syno_slot_create(NULL, 3, 5, 6, 6, 0, &r1, &slot, &err), 0);
  syno_layer_t *conv = plain_conv(3, 5, &r2);
  syno_tensor_t x = SYNO_TENSOR_EMPTY, dy = SYNO_TENSOR_EMPTY;
  int64_t d[4] = {2, 3, 6, 6}, e[4] = {2, 5, 6, 6};
  rand_tensor(&x, 4, d, 1);
  rand_tensor(&dy, 4, e, 2);
  assert_int_equal(syno_nn_forward(slot, &x, 1), 0);
  assert_int_equal(syno_nn_forward(conv, &x, 1), 0);
  assert_true(max_diff(&slot->out, &conv->out) == 0.0);
  assert_int_equal(syno_nn_backward(slot, &dy), 0);
  assert_int_equal(syno_nn_backward(conv, &dy), 0);
  assert_true(max_diff(&slot->grad_in, &conv->grad_in) == 0.0);
  syno_param_t *ps[2], *pc[2];
  assert_int_equal(syno_nn_params(slot, ps, 2), 1);
  assert_int_equal(syno_nn_params(conv, pc, 2), 1);
  assert_true(max_diff(&ps[0]->grad, &pc[0]->grad) == 0.0);
  syno_slot_info_t info;
  assert_true(syno_slot_info(slot, &info));
  assert_int_equal(info.params, 5 * 3 * 9);
  assert_false(syno_slot_info(conv, NULL));
  syno_nn_tensor_free(&x);
  syno_nn_tensor_free(&dy);
  syno_nn_layer_free(slot);
  syno_nn_layer_free(conv);
}

static const char *conv_text(void) { return syno_builtin_find("conv2d")->text; }

/* The builtin conv2d's weight w1[i1, r0, r1, r2] is [C_out, C_in, k, k], the conv layer's
 * layout: with the same weights both must agree (forward and every gradient), and a batch
 * of another size (the short last batch) must compile and agree too. */
static void test_synthesized_slot_matches_conv(void **state) {
  (void)state;
  syno_error_t err = {0};
  syno_slotop_t *op = NULL;
  assert_int_equal(syno_slotop_parse_preset("conv2d-wide", conv_text(), &op, &err), 0);
  syno_rng_t r1, r2;
  syno_rng_seed(&r1, 9, 1);
  syno_rng_seed(&r2, 9, 1);
  syno_layer_t *slot = NULL;
  assert_int_equal(syno_slot_create(op, 3, 4, 5, 5, 0, &r1, &slot, &err), 0);
  syno_layer_t *conv = plain_conv(3, 4, &r2);
  syno_param_t *ps[2], *pc[2];
  assert_int_equal(syno_nn_params(slot, ps, 2), 1);
  assert_int_equal(syno_nn_params(conv, pc, 2), 1);
  assert_int_equal(syno_nn_tensor_numel(&ps[0]->value), syno_nn_tensor_numel(&pc[0]->value));
  /* He init: std sqrt(2 / (C_in k k)) */
  double ss = 0;
  int64_t nw = syno_nn_tensor_numel(&ps[0]->value);
  for (int64_t i = 0; i < nw; i++) ss += (double)ps[0]->value.data[i] * ps[0]->value.data[i];
  double sd = sqrt(ss / nw), want = sqrt(2.0 / 27);
  assert_true(sd > 0.7 * want && sd < 1.3 * want);
  memcpy(ps[0]->value.data, pc[0]->value.data, sizeof(float) * (size_t)nw);
  for (int n = 3; n >= 1; n -= 2) {
    syno_tensor_t x = SYNO_TENSOR_EMPTY, dy = SYNO_TENSOR_EMPTY;
    int64_t d[4] = {n, 3, 5, 5}, e[4] = {n, 4, 5, 5};
    rand_tensor(&x, 4, d, 10 + n);
    rand_tensor(&dy, 4, e, 20 + n);
    syno_nn_zero_grad(slot);
    syno_nn_zero_grad(conv);
    assert_int_equal(syno_nn_forward(slot, &x, 1), 0);
    assert_int_equal(syno_nn_forward(conv, &x, 1), 0);
    assert_true(max_diff(&slot->out, &conv->out) < 1e-5);
    assert_int_equal(syno_nn_backward(slot, &dy), 0);
    assert_int_equal(syno_nn_backward(conv, &dy), 0);
    assert_true(max_diff(&slot->grad_in, &conv->grad_in) < 1e-5);
    assert_true(max_diff(&ps[0]->grad, &pc[0]->grad) < 1e-5);
    syno_nn_tensor_free(&x);
    syno_nn_tensor_free(&dy);
  }
  /* Frozen inference (syno_nn_freeze) follows the weights from one freeze to the next. */
  for (int round = 0; round < 3; round++) {
    syno_tensor_t x = SYNO_TENSOR_EMPTY;
    int64_t d[4] = {2, 3, 5, 5};
    rand_tensor(&x, 4, d, 30 + round);
    syno_nn_freeze(slot, 1);
    for (int rep = 0; rep < 2; rep++) {
      assert_int_equal(syno_nn_forward(slot, &x, 0), 0);
      assert_int_equal(syno_nn_forward(conv, &x, 0), 0);
      assert_true(max_diff(&slot->out, &conv->out) < 1e-5);
    }
    syno_nn_freeze(slot, 0);
    for (int64_t i = 0; i < nw; i++) ps[0]->value.data[i] = pc[0]->value.data[i] = 0.5f - 1.5f * pc[0]->value.data[i];
    syno_nn_tensor_free(&x);
  }
  /* wrong input shape */
  syno_tensor_t bad = SYNO_TENSOR_EMPTY;
  int64_t bd[4] = {1, 2, 5, 5};
  rand_tensor(&bad, 4, bd, 1);
  assert_int_not_equal(syno_nn_forward(slot, &bad, 1), 0);
  syno_nn_tensor_free(&bad);
  syno_nn_layer_free(slot);
  syno_nn_layer_free(conv);
  syno_slotop_free(op);
}

static void test_slot_gradcheck(void **state) {
  (void)state;
  syno_error_t err = {0};
  syno_slotop_t *op = NULL;
  assert_int_equal(syno_slotop_parse_preset("conv2d-wide", conv_text(), &op, &err), 0);
  syno_rng_t rng;
  syno_rng_seed(&rng, 3, 1);
  syno_layer_t *s1 = NULL, *s2 = NULL;
  assert_int_equal(syno_slot_create(op, 2, 3, 4, 4, 0, &rng, &s1, &err), 0);
  assert_int_equal(syno_slot_create(op, 3, 2, 4, 4, 0, &rng, &s2, &err), 0);
  syno_layer_t *ls[4] = {s1, syno_nn_gelu_create(), s2, syno_nn_global_avgpool_create()};
  syno_layer_t *net = syno_nn_sequential_create(4, ls);
  assert_non_null(net);
  int64_t d[4] = {2, 2, 4, 4};
  syno_tensor_t x = gc_randn(4, d, 4);
  assert_int_equal(gc_layer(net, &x, &GC_DEFAULT, 11), 0);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(net);
  syno_slotop_free(op);
}

static void test_bad_operators(void **state) {
  (void)state;
  syno_error_t err = {0};
  syno_slotop_t *op = NULL;
  assert_int_not_equal(syno_slotop_parse_preset("conv2d-wide", "r0=sum(C_in); in[i0, share(r0, 1)", &op, &err), 0);
  assert_null(op);
  assert_true(strlen(err.msg) > 0);
  /* the linear operator's shapes are not the conv2d slot's */
  assert_int_not_equal(syno_slotop_parse_preset("conv2d-wide", syno_builtin_find("linear")->text, &op, &err), 0);
  /* avgpool needs H divisible by k=... and changes the output shape */
  assert_int_not_equal(syno_slotop_parse_preset("conv2d-wide", syno_builtin_find("avgpool2d")->text, &op, &err), 0);
}

/* An operator is parsed symbolically and each slot checks it under its own binding: one that
 * groups C_in by g = 32 (a reduction of g^-1*C_in) does not divide the conv2d preset's default
 * C_in = 16, yet parses, fills a slot with C_in = 64, and is refused by a slot with C_in = 16
 * with a message naming that slot. (The search space checks it under the network's slots; the
 * default binding is not the network's.) */
static void test_op_checked_per_slot(void **state) {
  (void)state;
  const char *grouped =
      "r0=sum(g) r1=sum(g^-1*C_in); in[i0, split(share(r0, 1), r1), i2, i3] expand[share(i1, 1)] w1[i1, r0]";
  syno_error_t err = {0};
  syno_slotop_t *op = NULL;
  if (syno_slotop_parse(grouped, &op, &err)) fail_msg("%s", err.msg);
  syno_rng_t rng;
  syno_rng_seed(&rng, 4, 1);
  syno_layer_t *ok = NULL, *bad = NULL;
  if (syno_slot_create(op, 64, 8, 4, 4, 0, &rng, &ok, &err)) fail_msg("%s", err.msg);
  syno_slot_info_t info;
  assert_true(syno_slot_info(ok, &info));
  assert_int_equal(info.params, 8 * 32);
  int64_t d[4] = {2, 64, 4, 4};
  syno_tensor_t x = gc_randn(4, d, 5);
  assert_int_equal(syno_nn_forward(ok, &x, 0), 0);
  assert_int_equal(ok->out.dims[1], 8);
  assert_int_not_equal(syno_slot_create(op, 16, 8, 4, 4, 0, &rng, &bad, &err), 0);
  assert_null(bad);
  if (!strstr(err.msg, "slot C_in=16") || !strstr(err.msg, "not an integer"))
    fail_msg("the message should name the slot and the size: %s", err.msg);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(ok);
  syno_slotop_free(op);
  /* What holds under every binding is still checked when parsing: a window of s = 2 is even. */
  const char *even =
      "r0=sum(C_in) r1=sum(s) r2=sum(k_1); in[i0, share(r0, 1), unfold(i2, share(r1, 1)), "
      "unfold(i3, share(r2, 1))] expand[share(i1, 1)] w1[i1, r0, r1, r2]";
  assert_int_not_equal(syno_slotop_parse(even, &op, &err), 0);
  if (!strstr(err.msg, "is even")) fail_msg("the even window: %s", err.msg);
}

/* A synthesized operator in a slot trains: a tiny net (slot, BN, ReLU, GAP, linear) on 96
 * digits images, full-batch SGD; the loss must fall well below its start. Then the driver
 * runs a small VGG with the operator in every slot for an epoch without failing. */
static void test_train_synthesized(void **state) {
  (void)state;
  syno_error_t err = {0};
  char path[1024];
  const char *src = getenv("SYNO_SOURCE_DIR");
  snprintf(path, sizeof path, "%s/data/digits.csv.gz", src ? src : ".");
  syno_dataset_t ds;
  if (syno_data_load_digits(path, &ds, &err)) fail_msg("%s", err.msg);
  syno_slotop_t *op = NULL;
  assert_int_equal(syno_slotop_parse_preset("conv2d-wide", conv_text(), &op, &err), 0);
  syno_rng_t rng;
  syno_rng_seed(&rng, 4, 1);
  syno_layer_t *s1 = NULL;
  assert_int_equal(syno_slot_create(op, 1, 8, 8, 8, 0, &rng, &s1, &err), 0);
  syno_layer_t *ls[5] = {s1, syno_nn_batchnorm_create(8, 0.1, 1e-5), syno_nn_relu_create(), syno_nn_flatten_create(),
                         syno_nn_linear_create(512, 10, 1, &rng)};
  syno_layer_t *net = syno_nn_sequential_create(5, ls);
  assert_non_null(net);
  net->skip_input_grad = 1;
  int64_t idx[96];
  int32_t lab[96];
  for (int i = 0; i < 96; i++) idx[i] = i;
  syno_tensor_t x = SYNO_TENSOR_EMPTY, dl = SYNO_TENSOR_EMPTY;
  assert_int_equal(syno_data_gather(&ds, idx, 96, &x, lab), 0);
  syno_sgd_t opt;
  syno_sgd_cfg_t sc = {0.9, 0, 0};
  assert_int_equal(syno_nn_sgd_init_layer(&opt, net, &sc), 0);
  double first = 0, loss = 0;
  for (int step = 0; step < 40; step++) {
    assert_int_equal(syno_nn_forward(net, &x, 1), 0);
    assert_int_equal(syno_nn_softmax_xent(&net->out, lab, &loss, &dl, NULL), 0);
    if (step == 0) first = loss;
    syno_nn_sgd_zero_grad(&opt);
    assert_int_equal(syno_nn_backward(net, &dl), 0);
    syno_nn_sgd_step(&opt, 0.05);
  }
  fprintf(stderr, "  synthesized slot: loss %.3f -> %.3f\n", first, loss);
  assert_true(loss < 0.6 * first);
  syno_nn_sgd_free(&opt);
  syno_nn_tensor_free(&x);
  syno_nn_tensor_free(&dl);
  syno_nn_layer_free(net);
  syno_slotop_free(op);
  syno_data_free(&ds);

  syno_train_cfg_t cfg = {0};
  cfg.backbone = "vgg";
  cfg.dataset = "digits";
  cfg.epochs = 1;
  cfg.batch = 32;
  cfg.subset = 64;
  cfg.width = 0.25;
  cfg.depth = 1;
  cfg.op_text = conv_text();
  cfg.preset = "conv2d-wide";
  cfg.quiet = 1;
  syno_train_result_t res;
  if (syno_train_run(&cfg, &res, &err)) fail_msg("%s", err.msg);
  assert_false(res.failed);
  assert_int_equal(res.epochs_done, 1);
  assert_true(isfinite(res.final_train_loss) && res.final_train_loss > 0);
}

static void test_train_standard_digits(void **state) {
  (void)state;
  syno_train_cfg_t cfg = {0};
  cfg.dataset = "digits";
  cfg.backbone = "vgg";
  cfg.epochs = 3;
  cfg.width = 0.5;
  cfg.depth = 1;
  cfg.batch = 64;
  cfg.seed = 1;
  cfg.quiet = 1;
  syno_train_result_t res;
  syno_error_t err = {0};
  if (syno_train_run(&cfg, &res, &err)) fail_msg("%s", err.msg);
  assert_true(res.final_test_acc > 0.8);
  assert_true(res.flops > 0 && res.params > 0 && res.train_images_per_s > 0);
  /* divergence stops at once with a reason */
  cfg.lr = 1e6;
  cfg.weight_decay = -1;
  cfg.epochs = 2;
  assert_int_equal(syno_train_run(&cfg, &res, &err), 0);
  if (res.failed) assert_non_null(strstr(res.failure, "at step"));
  /* bad configuration */
  cfg.lr = 0.1;
  cfg.backbone = "lenet";
  assert_int_not_equal(syno_train_run(&cfg, &res, &err), 0);
  assert_non_null(strstr(err.msg, "lenet"));
  cfg.backbone = "resnet";
  cfg.dataset = "/nonexistent/file.csv";
  assert_int_not_equal(syno_train_run(&cfg, &res, &err), 0);
}

/* The latency comparison builds both standard networks, times each distinct slot binding
 * once, and a standard candidate has the standard FLOPs (that the two conv backends agree is
 * tests/nn/test_conv_dnnl.c's). */
static void test_latency_cmp(void **state) {
  (void)state;
  syno_error_t err = {0};
  syno_backbone_cfg_t bc = {.name = "resnet", .in_c = 1, .in_h = 8, .in_w = 8, .nclasses = 10};
  syno_rng_t rng;
  syno_rng_seed(&rng, 3, 1);
  syno_backbone_t cand;
  assert_int_equal(syno_backbone_build(&bc, &rng, &cand, &err), 0);
  syno_latency_cmp_t lc;
  assert_int_equal(syno_backbone_latency_cmp(&cand, &bc, &rng, 2, 3, &lc, &err), 0);
  assert_int_equal(lc.std_flops, cand.flops);
  /* 8x8 ResNet: 16x16@8, 16x32@4, 32x32@4, 32x64@2, 64x64@2, 64x128@2, 128x128@2 */
  assert_int_equal(lc.nslots, 7);
  for (int k = 0; k < 3; k++) assert_true(lc.net[k] > 0);
  for (int i = 0; i < lc.nslots; i++)
    for (int k = 0; k < 3; k++) assert_true(lc.slot_t[i][k] > 0);
  int f = syno_latency_fastest(lc.net);
  assert_true(lc.net[f] <= lc.net[SYNO_LAT_ONEDNN] && lc.net[f] <= lc.net[SYNO_LAT_IM2COL]);
  assert_int_equal(syno_backbone_latency_cmp(&cand, &bc, &rng, 0, 3, &lc, &err), -1);
  assert_non_null(strstr(err.msg, "batch"));
  syno_backbone_free(&cand);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_standard_slot_equals_conv),
      cmocka_unit_test(test_synthesized_slot_matches_conv),
      cmocka_unit_test(test_slot_gradcheck),
      cmocka_unit_test(test_bad_operators),
      cmocka_unit_test(test_op_checked_per_slot),
      cmocka_unit_test(test_train_synthesized),
      cmocka_unit_test(test_train_standard_digits),
      cmocka_unit_test(test_latency_cmp),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
