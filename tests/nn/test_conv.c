/* conv2d: forward against a direct double-precision convolution, gradients by finite
 * differences, over kernels, strides, paddings, dilations, groups and chunkings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gradcheck.h"

/* y[n][k][i][j] = b[k] + sum over the group's taps, straight from the definition. */
static void naive_conv(const syno_conv2d_cfg_t *c, const syno_tensor_t *x, const float *w, const float *b,
                       syno_tensor_t *y) {
  const int64_t n = x->dims[0], ci = x->dims[1], h = x->dims[2], wd = x->dims[3];
  const int64_t k = y->dims[1], oh = y->dims[2], ow = y->dims[3];
  const int64_t cg = ci / c->groups, kg = k / c->groups;
  for (int64_t a = 0; a < n; a++)
    for (int64_t o = 0; o < k; o++)
      for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) {
          double s = b ? b[o] : 0.0;
          int64_t g = o / kg;
          for (int64_t cc = 0; cc < cg; cc++)
            for (int64_t p = 0; p < c->kernel_h; p++)
              for (int64_t q = 0; q < c->kernel_w; q++) {
                int64_t ih = i * c->stride_h - c->pad_h + p * c->dilation_h;
                int64_t iw = j * c->stride_w - c->pad_w + q * c->dilation_w;
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                s += (double)w[((o * cg + cc) * c->kernel_h + p) * c->kernel_w + q] *
                     x->data[((a * ci + g * cg + cc) * h + ih) * wd + iw];
              }
          y->data[((a * k + o) * oh + i) * ow + j] = (float)s;
        }
}

static void check_config(syno_conv2d_cfg_t cfg, int64_t n, int64_t h, int64_t w, uint64_t seed) {
  syno_rng_t rng;
  syno_rng_seed(&rng, seed, 1);
  syno_layer_t *l = syno_nn_conv2d_create(&cfg, &rng);
  assert_non_null(l);
  const syno_conv2d_cfg_t *c = syno_nn_conv2d_cfg(l);
  assert_non_null(c);
  int64_t xd[4] = {n, cfg.in_channels, h, w}, od[4];
  syno_tensor_t x = gc_randn(4, xd, seed + 1);
  assert_int_equal(syno_nn_out_shape(l, 4, xd, od), 4);
  assert_int_equal(syno_nn_forward(l, &x, 1), SYNO_NN_OK);
  for (int i = 0; i < 4; i++) assert_int_equal(l->out.dims[i], od[i]);
  syno_tensor_t ref = SYNO_TENSOR_EMPTY;
  syno_nn_tensor_alloc(&ref, 4, od);
  naive_conv(c, &x, l->params[0].value.data, c->bias ? l->params[1].value.data : NULL, &ref);
  double maxerr = 0.0;
  for (int64_t i = 0; i < syno_nn_tensor_numel(&ref); i++)
    maxerr = fmax(maxerr, fabs((double)ref.data[i] - l->out.data[i]));
  fprintf(stderr, "conv %lldx%lld s%lldx%lld p%lldx%lld d%lldx%lld g%lld: forward max err %.2e\n",
          (long long)c->kernel_h, (long long)c->kernel_w, (long long)c->stride_h, (long long)c->stride_w,
          (long long)c->pad_h, (long long)c->pad_w, (long long)c->dilation_h, (long long)c->dilation_w,
          (long long)c->groups, maxerr);
  assert_true(maxerr < 1e-4);
  gc_opts_t o = GC_DEFAULT;
  assert_int_equal(gc_layer(l, &x, &o, seed + 2), 0);
  syno_nn_tensor_free(&ref);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(l);
}

static void test_conv_3x3_same(void **state) {
  (void)state;
  syno_conv2d_cfg_t c = {
      .in_channels = 3, .out_channels = 4, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1, .bias = 1};
  check_config(c, 2, 7, 6, 10);
}

static void test_conv_rect_strided_grouped(void **state) {
  (void)state;
  syno_conv2d_cfg_t c = {.in_channels = 4,
                         .out_channels = 6,
                         .kernel_h = 5,
                         .kernel_w = 3,
                         .stride_h = 2,
                         .stride_w = 1,
                         .pad_h = 2,
                         .pad_w = 1,
                         .groups = 2,
                         .bias = 1};
  check_config(c, 3, 9, 8, 20);
}

static void test_conv_depthwise(void **state) {
  (void)state;
  syno_conv2d_cfg_t c = {.in_channels = 4,
                         .out_channels = 8,
                         .kernel_h = 3,
                         .kernel_w = 3,
                         .stride_h = 2,
                         .stride_w = 2,
                         .pad_h = 1,
                         .pad_w = 1,
                         .groups = 4};
  check_config(c, 2, 7, 7, 30);
}

static void test_conv_dilated(void **state) {
  (void)state;
  syno_conv2d_cfg_t c = {.in_channels = 2,
                         .out_channels = 3,
                         .kernel_h = 3,
                         .kernel_w = 3,
                         .pad_h = 2,
                         .pad_w = 1,
                         .dilation_h = 2,
                         .dilation_w = 3,
                         .bias = 1};
  check_config(c, 2, 8, 9, 40);
}

static void test_conv_pointwise_strided(void **state) {
  (void)state;
  syno_conv2d_cfg_t c = {
      .in_channels = 5, .out_channels = 3, .kernel_h = 1, .kernel_w = 1, .stride_h = 2, .stride_w = 2};
  check_config(c, 3, 6, 5, 50);
}

static void test_conv_large_stride_and_pad(void **state) {
  (void)state;
  /* Stride above the kernel and padding wider than the image edge. */
  syno_conv2d_cfg_t c = {.in_channels = 2,
                         .out_channels = 2,
                         .kernel_h = 2,
                         .kernel_w = 2,
                         .stride_h = 3,
                         .stride_w = 3,
                         .pad_h = 3,
                         .pad_w = 2,
                         .bias = 1};
  check_config(c, 2, 5, 5, 60);
}

/* A tiny workspace forces one image per GEMM; a big one puts the whole batch in one. Both
 * must compute the same thing (the scatter/gather between [K][nb*OHW] and NCHW). */
static void test_conv_chunking_agrees(void **state) {
  (void)state;
  syno_conv2d_cfg_t c = {.in_channels = 3,
                         .out_channels = 4,
                         .kernel_h = 3,
                         .kernel_w = 3,
                         .pad_h = 1,
                         .pad_w = 1,
                         .bias = 1,
                         .groups = 1};
  /* (C*kh*kw + K) * OH*OW = (27 + 4) * 25 floats per image: nb = 1, 2 (5 = 2+2+1), all 5. */
  const int64_t sizes[3] = {1, 2 * 31 * 25, 1 << 22};
  syno_tensor_t outs[3] = {SYNO_TENSOR_EMPTY}, dxs[3] = {SYNO_TENSOR_EMPTY}, dws[3] = {SYNO_TENSOR_EMPTY};
  int64_t xd[4] = {5, 3, 5, 5};
  syno_tensor_t x = gc_randn(4, xd, 77);
  for (int v = 0; v < 3; v++) {
    syno_rng_t rng;
    syno_rng_seed(&rng, 5, 5);
    c.workspace_floats = sizes[v];
    syno_layer_t *l = syno_nn_conv2d_create(&c, &rng);
    assert_int_equal(syno_nn_forward(l, &x, 1), 0);
    syno_tensor_t dy = gc_randn(4, l->out.dims, 78);
    assert_int_equal(syno_nn_backward(l, &dy), 0);
    syno_nn_tensor_copy(&outs[v], &l->out);
    syno_nn_tensor_copy(&dxs[v], &l->grad_in);
    syno_nn_tensor_copy(&dws[v], &l->params[0].grad);
    syno_nn_tensor_free(&dy);
    syno_nn_layer_free(l);
  }
  for (int v = 1; v < 3; v++) {
    for (int64_t i = 0; i < syno_nn_tensor_numel(&outs[0]); i++)
      assert_true(fabsf(outs[0].data[i] - outs[v].data[i]) < 1e-5f);
    for (int64_t i = 0; i < syno_nn_tensor_numel(&dxs[0]); i++)
      assert_true(fabsf(dxs[0].data[i] - dxs[v].data[i]) < 1e-5f);
    for (int64_t i = 0; i < syno_nn_tensor_numel(&dws[0]); i++)
      assert_true(fabsf(dws[0].data[i] - dws[v].data[i]) < 1e-4f);
  }
  for (int v = 0; v < 3; v++) {
    syno_nn_tensor_free(&outs[v]);
    syno_nn_tensor_free(&dxs[v]);
    syno_nn_tensor_free(&dws[v]);
  }
  syno_nn_tensor_free(&x);
}

static void test_conv_rejects_bad_config_and_shape(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 1, 1);
  syno_conv2d_cfg_t bad = {.in_channels = 3, .out_channels = 4, .kernel_h = 3, .kernel_w = 3, .groups = 2};
  assert_null(syno_nn_conv2d_create(&bad, &rng));
  syno_conv2d_cfg_t zero = {.in_channels = 3, .out_channels = 4};
  assert_null(syno_nn_conv2d_create(&zero, &rng));
  syno_conv2d_cfg_t ok = {.in_channels = 3, .out_channels = 4, .kernel_h = 3, .kernel_w = 3};
  syno_layer_t *l = syno_nn_conv2d_create(&ok, &rng);
  assert_non_null(l);
  assert_string_equal(syno_nn_layer_kind(l), "conv2d");
  int64_t wrong_c[4] = {1, 2, 5, 5}, too_small[4] = {1, 3, 2, 2};
  syno_tensor_t a = gc_randn(4, wrong_c, 1), b = gc_randn(4, too_small, 2);
  assert_int_equal(syno_nn_forward(l, &a, 1), SYNO_NN_ESHAPE);
  assert_int_equal(syno_nn_forward(l, &b, 1), SYNO_NN_ESHAPE);
  /* Backward before any successful forward is refused, not undefined. */
  assert_int_equal(syno_nn_backward(l, &a), SYNO_NN_EINVAL);
  syno_nn_tensor_free(&a);
  syno_nn_tensor_free(&b);
  syno_nn_layer_free(l);
}

static void test_conv_skip_input_grad(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 2, 1);
  syno_conv2d_cfg_t c = {.in_channels = 2, .out_channels = 3, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1};
  syno_layer_t *l = syno_nn_conv2d_create(&c, &rng);
  int64_t xd[4] = {2, 2, 4, 4};
  syno_tensor_t x = gc_randn(4, xd, 3);
  gc_opts_t o = GC_DEFAULT;
  o.check_input = 0;
  assert_int_equal(gc_layer(l, &x, &o, 4), 0);
  assert_null(l->grad_in.data);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_3x3_same),          cmocka_unit_test(test_conv_rect_strided_grouped),
      cmocka_unit_test(test_conv_depthwise),         cmocka_unit_test(test_conv_dilated),
      cmocka_unit_test(test_conv_pointwise_strided), cmocka_unit_test(test_conv_large_stride_and_pad),
      cmocka_unit_test(test_conv_chunking_agrees),   cmocka_unit_test(test_conv_rejects_bad_config_and_shape),
      cmocka_unit_test(test_conv_skip_input_grad),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
