/* Deployed inference (src/nn/deploy.c): a frozen network's inference forward, with batch norms
 * folded into the conv2d before them and ReLUs fused, equals the plain layer-by-layer forward.
 * Checked on every CNN backbone, standard and with a synthesized operator in its slots, with
 * random batch-norm statistics; the input is left untouched; a new freeze follows changed
 * parameters; the conv2d fold on both backends, a layer whose output is a view (a flatten
 * before a batch norm), and a ReLU after a residual sum. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/backbone.h"
#include "synotest.h"

/* The published-preset winner (README): a shared 1x3 window over rolled, transposed maps. */
static const char *const winner =
    "r0=sum(k_1) r1=sum(s^-1*C_in); in[i0, split(div(i1, s^-1*C_out), share(r1, 1)), "
    "shift(unfold(i3, share(r0, 1))), i2] expand[share(mod(i1, s^-1*C_out), 1)] w1[mod(i1, s^-1*C_out), r1, r0]";

/* Random batch-norm statistics and affine parameters everywhere in l (they are 1 and 0 after
 * construction, which would make folding trivial). */
static void randomise_norms(syno_layer_t *l, syno_rng_t *rng) {
  syno_tensor_t *rm = syno_nn_batchnorm_running_mean(l), *rv = syno_nn_batchnorm_running_var(l);
  if (rm) {
    for (int64_t c = 0; c < rm->dims[0]; c++) {
      rm->data[c] = (float)(0.5 * syno_rng_normal(rng));
      rv->data[c] = (float)(0.2 + syno_rng_uniform(rng));
      l->params[0].value.data[c] = (float)(0.5 + syno_rng_uniform(rng));
      l->params[1].value.data[c] = (float)(0.3 * syno_rng_normal(rng));
    }
  }
  for (int i = 0; i < l->nchildren; i++)
    if (l->children[i]) randomise_norms(l->children[i], rng);
}

static double rel_err(const syno_tensor_t *a, const syno_tensor_t *b) {
  assert_true(syno_nn_tensor_same_shape(a, b));
  return st_rel_err(a->data, b->data, syno_nn_tensor_numel(b));
}

/* Plain inference of l on x against frozen inference (twice), x unchanged; returns the error. */
static double frozen_vs_plain(syno_layer_t *l, const syno_tensor_t *x) {
  syno_tensor_t want = SYNO_TENSOR_EMPTY, x0 = SYNO_TENSOR_EMPTY;
  assert_int_equal(syno_nn_tensor_resize_like(&x0, x), SYNO_NN_OK);
  memcpy(x0.data, x->data, sizeof(float) * (size_t)syno_nn_tensor_numel(x));
  assert_int_equal(syno_nn_forward(l, x, 0), SYNO_NN_OK);
  assert_int_equal(syno_nn_tensor_resize_like(&want, &l->out), SYNO_NN_OK);
  memcpy(want.data, l->out.data, sizeof(float) * (size_t)syno_nn_tensor_numel(&want));
  syno_nn_freeze(l, 1);
  double e = 0.0;
  for (int rep = 0; rep < 2; rep++) {
    assert_int_equal(syno_nn_forward(l, x, 0), SYNO_NN_OK);
    e = fmax(e, rel_err(&l->out, &want));
    assert_true(rel_err(x, &x0) == 0.0);
  }
  syno_nn_freeze(l, 0);
  syno_nn_tensor_free(&want);
  syno_nn_tensor_free(&x0);
  return e;
}

static syno_tensor_t random_input(int64_t n, int64_t c, int64_t h, int64_t w, syno_rng_t *rng) {
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  int64_t d[4] = {n, c, h, w};
  assert_int_equal(syno_nn_tensor_alloc(&x, 4, d), SYNO_NN_OK);
  syno_nn_fill_normal(rng, &x, 0.0, 1.0);
  return x;
}

static void test_backbones(void **state) {
  (void)state;
  static const char *const names[] = {"resnet18", "resnet34", "resnext29", "densenet121", "efficientnetv2s", "vgg"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    for (int cand = 0; cand < 2; cand++) {
      syno_error_t err = {0};
      syno_slotop_t *op = NULL;
      if (cand && syno_slotop_parse_preset(!strcmp(names[i], "efficientnetv2s") ? "conv2d-wide" : "conv2d",
                                           !strcmp(names[i], "efficientnetv2s")
                                               ? "r0=sum(C_in); in[i0, share(r0, 1), i2, i3] expand[share(i1, 1)] "
                                                 "w1[r0, i1]"
                                               : winner,
                                           &op, &err))
        fail_msg("%s: %s", names[i], err.msg);
      syno_backbone_cfg_t c = {.name = names[i],
                               .in_c = 1,
                               .in_h = 16,
                               .in_w = 16,
                               .nclasses = 10,
                               .width = 0.25,
                               .depth = 0,
                               .op = op};
      syno_rng_t rng;
      syno_rng_seed(&rng, 11 + i, 1);
      syno_backbone_t bb;
      if (syno_backbone_build(&c, &rng, &bb, &err)) {
        /* an operator a backbone's slots cannot take is not what this test is about */
        fprintf(stderr, "  %-16s %s: skipped (%s)\n", names[i], cand ? "operator" : "standard", err.msg);
        assert_true(cand);
        syno_slotop_free(op);
        continue;
      }
      randomise_norms(bb.net, &rng);
      syno_tensor_t x = random_input(3, 1, 16, 16, &rng);
      double e = frozen_vs_plain(bb.net, &x);
      fprintf(stderr, "  %-16s %s: frozen vs plain %.2e\n", names[i], cand ? "operator" : "standard", e);
      assert_true(e < 1e-4);
      /* The winner's convolution writes ResNet's channels: the norm and ReLU after every slot
       * fold into it (its shared weight replicated across the channel groups). */
      if (cand && !strcmp(names[i], "resnet18")) {
        syno_nn_freeze(bb.net, 1);
        assert_int_equal(syno_nn_forward(bb.net, &x, 0), SYNO_NN_OK);
        syno_nn_freeze(bb.net, 0);
        for (int k = 0; k < bb.nslots; k++) {
          const char *path = syno_slot_path(bb.slots[k]);
          if (k == 0) fprintf(stderr, "    slot 0 ran on: %s\n", path);
          assert_non_null(strstr(path, "norm and ReLU folded"));
        }
      }
      syno_nn_tensor_free(&x);
      syno_backbone_free(&bb);
      syno_slotop_free(op);
    }
}

/* conv BN ReLU conv BN ReLU on one backend; then the same after the norms change: the fold
 * follows the freeze. */
static void test_conv_fold(void **state) {
  (void)state;
  for (int backend = SYNO_CONV_IM2COL; backend <= SYNO_CONV_ONEDNN; backend++)
    for (int bias = 0; bias <= 1; bias++) {
      syno_rng_t rng;
      syno_rng_seed(&rng, 5 + backend, 1);
      syno_conv2d_cfg_t c1 = {.in_channels = 3, .out_channels = 8, .kernel_h = 3, .kernel_w = 3, .pad_h = 1,
                              .pad_w = 1, .bias = bias, .backend = backend};
      syno_conv2d_cfg_t c2 = {.in_channels = 8, .out_channels = 4, .kernel_h = 1, .kernel_w = 3, .pad_w = 1,
                              .stride_h = 2, .groups = 2, .bias = bias, .backend = backend};
      syno_layer_t *ls[6] = {syno_nn_conv2d_create(&c1, &rng), syno_nn_batchnorm_create(8, 0.1, 1e-5),
                             syno_nn_relu_create(),            syno_nn_conv2d_create(&c2, &rng),
                             syno_nn_batchnorm_create(4, 0.1, 1e-5), syno_nn_relu_create()};
      syno_layer_t *net = syno_nn_sequential_create(6, ls);
      assert_non_null(net);
      syno_tensor_t x = random_input(2, 3, 9, 7, &rng);
      for (int round = 0; round < 2; round++) {
        randomise_norms(net, &rng);
        /* Folded, the norms do not run: their outputs stay empty. */
        syno_nn_tensor_free(&ls[1]->out);
        syno_nn_tensor_free(&ls[4]->out);
        syno_nn_freeze(net, 1);
        assert_int_equal(syno_nn_forward(net, &x, 0), SYNO_NN_OK);
        syno_nn_freeze(net, 0);
        assert_null(ls[1]->out.data);
        assert_null(ls[4]->out.data);
        double e = frozen_vs_plain(net, &x);
        fprintf(stderr, "  conv fold, backend %d, bias %d, round %d: %.2e\n", backend, bias, round, e);
        assert_true(e < 1e-5);
        assert_int_equal(syno_nn_conv2d_used_backend(ls[0]), backend);
      }
      syno_nn_tensor_free(&x);
      syno_nn_layer_free(net);
    }
}

/* A flatten's output is a view of its input: a batch norm after it is not applied in place
 * (which would change the tensor the residual block adds back); a ReLU after a residual sum
 * is. */
static void test_views_and_residual(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 3, 1);
  syno_layer_t *body[3] = {syno_nn_flatten_create(), syno_nn_batchnorm_create(4 * 5 * 5, 0.1, 1e-5),
                           syno_nn_relu_create()};
  syno_layer_t *inner = syno_nn_sequential_create(3, body);
  syno_layer_t *flat[2] = {syno_nn_flatten_create(), NULL};
  syno_layer_t *res = syno_nn_residual_create(inner, syno_nn_sequential_create(1, flat));
  syno_layer_t *outer[2] = {res, syno_nn_relu_create()};
  syno_layer_t *net = syno_nn_sequential_create(2, outer);
  assert_non_null(net);
  randomise_norms(net, &rng);
  syno_tensor_t x = random_input(2, 4, 5, 5, &rng);
  double e = frozen_vs_plain(net, &x);
  syno_nn_tensor_free(&body[1]->out); /* the norm after the flatten ran as a layer */
  syno_nn_freeze(net, 1);
  assert_int_equal(syno_nn_forward(net, &x, 0), SYNO_NN_OK);
  syno_nn_freeze(net, 0);
  assert_non_null(body[1]->out.data);
  fprintf(stderr, "  flatten + batch norm in a residual block: %.2e\n", e);
  assert_true(e < 1e-6);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(net);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_fold),
      cmocka_unit_test(test_views_and_residual),
      cmocka_unit_test(test_backbones),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
