/* conv2d's oneDNN backend against its im2col backend (forward, dX, dW, db) over kernels,
 * strides, paddings, groups, batch 1 and odd sizes; a finite-difference check of the oneDNN
 * path; backend selection and the latency helper. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gradcheck.h"

/* max |a - b| / max(max |b|, tiny): error relative to the tensor's scale. */
static double rel_err(const float *a, const float *b, int64_t n) {
  double num = 0.0, den = 1e-30;
  for (int64_t i = 0; i < n; i++) {
    num = fmax(num, fabs((double)a[i] - b[i]));
    den = fmax(den, fabs((double)b[i]));
  }
  return num / den;
}

static syno_layer_t *make(syno_conv2d_cfg_t cfg, int backend, uint64_t seed) {
  syno_rng_t rng;
  syno_rng_seed(&rng, seed, 1);
  cfg.backend = backend;
  return syno_nn_conv2d_create(&cfg, &rng);
}

static void compare(syno_conv2d_cfg_t cfg, int64_t n, int64_t h, int64_t w, uint64_t seed) {
  syno_layer_t *a = make(cfg, SYNO_CONV_ONEDNN, seed), *b = make(cfg, SYNO_CONV_IM2COL, seed);
  assert_non_null(a);
  assert_non_null(b);
  int64_t xd[4] = {n, cfg.in_channels, h, w};
  syno_tensor_t x = gc_randn(4, xd, seed + 1);
  for (int train = 0; train <= 1; train++) {
    assert_int_equal(syno_nn_forward(a, &x, train), SYNO_NN_OK);
    assert_int_equal(syno_nn_forward(b, &x, train), SYNO_NN_OK);
    assert_int_equal(syno_nn_conv2d_used_backend(a), SYNO_CONV_ONEDNN);
    assert_int_equal(syno_nn_conv2d_used_backend(b), SYNO_CONV_IM2COL);
    assert_true(syno_nn_tensor_same_shape(&a->out, &b->out));
    double e = rel_err(a->out.data, b->out.data, syno_nn_tensor_numel(&b->out));
    fprintf(stderr, "k%lldx%lld s%lld p%lld g%lld n%lld %lldx%lld train=%d: y %.2e\n", (long long)cfg.kernel_h,
            (long long)cfg.kernel_w, (long long)cfg.stride_h, (long long)cfg.pad_h,
            (long long)(cfg.groups ? cfg.groups : 1), (long long)n, (long long)h, (long long)w, train, e);
    assert_true(e <= 1e-4);
  }
  syno_tensor_t dy = gc_randn(b->out.ndim, b->out.dims, seed + 2);
  /* Twice, to check that weight/bias gradients accumulate. */
  for (int rep = 0; rep < 2; rep++) {
    assert_int_equal(syno_nn_backward(a, &dy), SYNO_NN_OK);
    assert_int_equal(syno_nn_backward(b, &dy), SYNO_NN_OK);
  }
  double ex = rel_err(a->grad_in.data, b->grad_in.data, syno_nn_tensor_numel(&x));
  double ew = rel_err(a->params[0].grad.data, b->params[0].grad.data, syno_nn_tensor_numel(&b->params[0].grad));
  double eb = cfg.bias ? rel_err(a->params[1].grad.data, b->params[1].grad.data, cfg.out_channels) : 0.0;
  fprintf(stderr, " dx %.2e dw %.2e db %.2e\n", ex, ew, eb);
  assert_true(ex <= 1e-4);
  assert_true(ew <= 1e-4);
  assert_true(eb <= 1e-4);
  /* Input gradient skipped: weights still right, grad_in left alone. */
  syno_nn_zero_grad(a);
  syno_nn_zero_grad(b);
  a->skip_input_grad = b->skip_input_grad = 1;
  assert_int_equal(syno_nn_backward(a, &dy), SYNO_NN_OK);
  assert_int_equal(syno_nn_backward(b, &dy), SYNO_NN_OK);
  assert_true(rel_err(a->params[0].grad.data, b->params[0].grad.data, syno_nn_tensor_numel(&b->params[0].grad)) <=
              1e-4);
  syno_nn_tensor_free(&dy);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(a);
  syno_nn_layer_free(b);
}

static syno_conv2d_cfg_t cfg_of(int64_t c, int64_t k, int64_t ks, int64_t s, int64_t p, int64_t g, int bias) {
  syno_conv2d_cfg_t cfg = {.in_channels = c,
                           .out_channels = k,
                           .kernel_h = ks,
                           .kernel_w = ks,
                           .stride_h = s,
                           .stride_w = s,
                           .pad_h = p,
                           .pad_w = p,
                           .groups = g,
                           .bias = bias};
  return cfg;
}

static void test_3x3(void **state) {
  (void)state;
  compare(cfg_of(3, 8, 3, 1, 1, 1, 1), 4, 9, 9, 10);   /* same padding */
  compare(cfg_of(5, 6, 3, 1, 0, 1, 1), 3, 7, 11, 20);  /* valid, odd sizes */
  compare(cfg_of(4, 8, 3, 2, 1, 1, 0), 2, 9, 8, 30);   /* stride 2, no bias */
  compare(cfg_of(6, 4, 3, 2, 0, 1, 1), 1, 8, 10, 40);  /* stride 2, pad 0, batch 1 */
  compare(cfg_of(16, 16, 3, 1, 1, 1, 0), 8, 7, 7, 45); /* a ResNet-like stage */
}

static void test_1x1(void **state) {
  (void)state;
  compare(cfg_of(8, 12, 1, 1, 0, 1, 1), 3, 5, 7, 50);
  compare(cfg_of(8, 16, 1, 2, 0, 1, 0), 2, 9, 9, 60); /* ResNet downsampling shortcut */
  compare(cfg_of(3, 5, 1, 1, 1, 1, 1), 1, 4, 3, 70);  /* 1x1 with padding */
}

static void test_groups_rect_dilation(void **state) {
  (void)state;
  compare(cfg_of(8, 12, 3, 1, 1, 4, 1), 2, 7, 9, 80); /* grouped */
  compare(cfg_of(6, 6, 3, 2, 1, 6, 1), 3, 9, 7, 90);  /* depthwise, stride 2 */
  syno_conv2d_cfg_t c = {.in_channels = 4,
                         .out_channels = 6,
                         .kernel_h = 2,
                         .kernel_w = 5,
                         .stride_h = 2,
                         .stride_w = 1,
                         .pad_h = 1,
                         .pad_w = 2,
                         .dilation_h = 2,
                         .dilation_w = 1,
                         .groups = 2,
                         .bias = 1};
  compare(c, 2, 9, 8, 100);
}

static void test_gradcheck_onednn(void **state) {
  (void)state;
  syno_conv2d_cfg_t cfgs[] = {cfg_of(3, 4, 3, 1, 1, 1, 1), cfg_of(4, 6, 3, 2, 0, 2, 1), cfg_of(3, 5, 1, 1, 0, 1, 0)};
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    syno_layer_t *l = make(cfgs[i], SYNO_CONV_ONEDNN, 200 + i);
    assert_non_null(l);
    int64_t xd[4] = {2, cfgs[i].in_channels, 7, 6};
    syno_tensor_t x = gc_randn(4, xd, 300 + i);
    gc_opts_t o = GC_DEFAULT;
    assert_int_equal(gc_layer(l, &x, &o, 400 + i), 0);
    assert_int_equal(syno_nn_conv2d_used_backend(l), SYNO_CONV_ONEDNN);
    syno_nn_tensor_free(&x);
    syno_nn_layer_free(l);
  }
}

/* A zero-initialised cfg (plus sizes) means AUTO, which picks oneDNN; shapes change between
 * calls (the primitive cache) and results stay equal to im2col's. */
static void test_auto_and_cache(void **state) {
  (void)state;
  syno_conv2d_cfg_t c = {0};
  c.in_channels = 3;
  c.out_channels = 4;
  c.kernel_h = c.kernel_w = 3;
  c.pad_h = c.pad_w = 1;
  syno_layer_t *a = make(c, SYNO_CONV_AUTO, 5), *b = make(c, SYNO_CONV_IM2COL, 5);
  assert_non_null(a);
  assert_non_null(b);
  assert_int_equal(syno_nn_conv2d_used_backend(a), -1);
  int64_t shapes[][3] = {{2, 6, 6}, {1, 5, 7}, {3, 6, 6}, {2, 4, 4}, {5, 3, 3}, {2, 6, 6}};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    int64_t xd[4] = {shapes[i][0], 3, shapes[i][1], shapes[i][2]};
    syno_tensor_t x = gc_randn(4, xd, 600 + i);
    assert_int_equal(syno_nn_forward(a, &x, (int)(i % 2)), SYNO_NN_OK);
    assert_int_equal(syno_nn_forward(b, &x, (int)(i % 2)), SYNO_NN_OK);
    assert_int_equal(syno_nn_conv2d_used_backend(a), SYNO_CONV_ONEDNN);
    assert_true(rel_err(a->out.data, b->out.data, syno_nn_tensor_numel(&b->out)) <= 1e-4);
    syno_nn_tensor_free(&x);
  }
  syno_nn_layer_free(a);
  syno_nn_layer_free(b);
  /* An out-of-range backend is an invalid configuration. */
  c.backend = 7;
  syno_rng_t rng;
  syno_rng_seed(&rng, 1, 1);
  assert_null(syno_nn_conv2d_create(&c, &rng));
}

/* Frozen (syno_nn_freeze), the oneDNN layer reorders its weight once per freeze: a new freeze
 * after the weights changed sees the new weights. */
static void test_frozen_weights(void **state) {
  (void)state;
  syno_conv2d_cfg_t c = cfg_of(16, 32, 3, 1, 1, 1, 0);
  syno_layer_t *a = make(c, SYNO_CONV_ONEDNN, 8), *b = make(c, SYNO_CONV_IM2COL, 8);
  assert_non_null(a);
  assert_non_null(b);
  int64_t xd[4] = {1, 16, 8, 8};
  syno_tensor_t x = gc_randn(4, xd, 81);
  int64_t nw = syno_nn_tensor_numel(&a->params[0].value);
  for (int round = 0; round < 3; round++) {
    syno_nn_freeze(a, 1);
    for (int rep = 0; rep < 2; rep++) {
      assert_int_equal(syno_nn_forward(a, &x, 0), SYNO_NN_OK);
      assert_int_equal(syno_nn_forward(b, &x, 0), SYNO_NN_OK);
      assert_true(rel_err(a->out.data, b->out.data, syno_nn_tensor_numel(&b->out)) <= 1e-4);
    }
    syno_nn_freeze(a, 0);
    /* what an optimizer step does between two evaluations */
    for (int64_t i = 0; i < nw; i++) {
      a->params[0].value.data[i] = b->params[0].value.data[i] = 0.5f - a->params[0].value.data[i] * 1.5f;
    }
  }
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(a);
  syno_nn_layer_free(b);
}

/* Every oneDNN convolution keeps its blocked activations in one shared arena: a large and a
 * small layer, interleaved (forward, forward, backward, backward, again after the large one is
 * freed, which leaves the arena to the small one), each agree with their im2col twins. */
static void test_shared_arena(void **state) {
  (void)state;
  syno_conv2d_cfg_t cfg[2] = {cfg_of(16, 32, 3, 1, 1, 1, 0), cfg_of(32, 16, 1, 2, 0, 1, 1)};
  int64_t xd[2][4] = {{4, 16, 12, 12}, {2, 32, 6, 5}};
  syno_layer_t *a[2], *b[2];
  syno_tensor_t x[2], dy[2];
  for (int i = 0; i < 2; i++) {
    a[i] = make(cfg[i], SYNO_CONV_ONEDNN, 90 + i);
    b[i] = make(cfg[i], SYNO_CONV_IM2COL, 90 + i);
    assert_non_null(a[i]);
    assert_non_null(b[i]);
    x[i] = gc_randn(4, xd[i], 92 + i);
  }
  for (int round = 0; round < 2; round++) {
    int first = round; /* round 1: the large layer is gone */
    for (int i = first; i < 2; i++) {
      assert_int_equal(syno_nn_forward(a[i], &x[i], 1), SYNO_NN_OK);
      assert_int_equal(syno_nn_forward(b[i], &x[i], 1), SYNO_NN_OK);
    }
    for (int i = first; i < 2; i++) {
      assert_true(rel_err(a[i]->out.data, b[i]->out.data, syno_nn_tensor_numel(&b[i]->out)) <= 1e-4);
      if (round == 0) dy[i] = gc_randn(b[i]->out.ndim, b[i]->out.dims, 94 + i);
      syno_nn_zero_grad(a[i]);
      syno_nn_zero_grad(b[i]);
    }
    for (int i = 1; i >= first; i--) {
      assert_int_equal(syno_nn_backward(a[i], &dy[i]), SYNO_NN_OK);
      assert_int_equal(syno_nn_backward(b[i], &dy[i]), SYNO_NN_OK);
    }
    for (int i = first; i < 2; i++) {
      assert_true(rel_err(a[i]->grad_in.data, b[i]->grad_in.data, syno_nn_tensor_numel(&x[i])) <= 1e-4);
      assert_true(rel_err(a[i]->params[0].grad.data, b[i]->params[0].grad.data,
                          syno_nn_tensor_numel(&b[i]->params[0].grad)) <= 1e-4);
    }
    if (round == 0) {
      syno_nn_layer_free(a[0]);
      syno_nn_layer_free(b[0]);
    }
  }
  for (int i = 0; i < 2; i++) {
    syno_nn_tensor_free(&x[i]);
    syno_nn_tensor_free(&dy[i]);
  }
  syno_nn_layer_free(a[1]);
  syno_nn_layer_free(b[1]);
}

static void test_latency(void **state) {
  (void)state;
  syno_conv2d_cfg_t c = cfg_of(8, 8, 3, 1, 1, 1, 0);
  for (int be = SYNO_CONV_AUTO; be <= SYNO_CONV_ONEDNN; be++) {
    c.backend = be;
    double s = -1.0;
    syno_error_t err = {{0}};
    assert_int_equal(syno_nn_conv2d_latency(&c, 4, 8, 8, 5, &s, &err), 0);
    assert_true(s > 0.0 && s < 1.0);
  }
  double s = -1.0;
  syno_error_t err = {{0}};
  assert_int_not_equal(syno_nn_conv2d_latency(&c, 4, 8, 8, 0, &s, &err), 0);
  assert_true(err.msg[0] != '\0');
  /* Input smaller than the kernel: a forward error, reported. */
  syno_conv2d_cfg_t big = cfg_of(2, 2, 5, 1, 0, 1, 0);
  err.msg[0] = '\0';
  assert_int_not_equal(syno_nn_conv2d_latency(&big, 1, 3, 3, 3, &s, &err), 0);
  assert_true(err.msg[0] != '\0');
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_3x3),
      cmocka_unit_test(test_1x1),
      cmocka_unit_test(test_groups_rect_dilation),
      cmocka_unit_test(test_gradcheck_onednn),
      cmocka_unit_test(test_auto_and_cache),
      cmocka_unit_test(test_frozen_weights),
      cmocka_unit_test(test_shared_arena),
      cmocka_unit_test(test_latency),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
