/* Every non-conv layer: forward values against their definitions, gradients by central
 * finite differences, composition through sequential/residual, and shape errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gradcheck.h"

/* Pushes every element at least `margin` away from 0, so +-eps never crosses a ReLU kink. */
static void away_from_zero(syno_tensor_t *t, float margin) {
  for (int64_t i = 0; i < syno_nn_tensor_numel(t); i++) {
    float v = t->data[i];
    t->data[i] = v >= 0 ? v + margin : v - margin;
  }
}

/* Distinct values 0.05 apart in random order, so max pooling has no near-ties. */
static syno_tensor_t distinct(int ndim, const int64_t *dims, uint64_t seed) {
  syno_tensor_t t = SYNO_TENSOR_EMPTY;
  syno_nn_tensor_alloc(&t, ndim, dims);
  int64_t n = syno_nn_tensor_numel(&t), *perm = malloc((size_t)n * sizeof *perm);
  syno_rng_t rng;
  syno_rng_seed(&rng, seed, 9);
  for (int64_t i = 0; i < n; i++) perm[i] = i;
  syno_rng_shuffle(&rng, perm, n);
  for (int64_t i = 0; i < n; i++) t.data[i] = 0.05f * (float)(perm[i] - n / 2);
  free(perm);
  return t;
}

static void check(syno_layer_t *l, syno_tensor_t *x, gc_opts_t o, uint64_t seed) {
  assert_non_null(l);
  assert_int_equal(gc_layer(l, x, &o, seed), 0);
}

static void test_linear(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 1, 1);
  syno_layer_t *l = syno_nn_linear_create(7, 5, 1, &rng);
  int64_t d2[2] = {4, 7}, d3[3] = {2, 3, 7};
  syno_tensor_t x = gc_randn(2, d2, 2), x3 = gc_randn(3, d3, 3);
  /* Forward against the definition. */
  assert_int_equal(syno_nn_forward(l, &x, 1), 0);
  const float *w = l->params[0].value.data, *b = l->params[1].value.data;
  for (int r = 0; r < 4; r++)
    for (int j = 0; j < 5; j++) {
      double s = b[j];
      for (int i = 0; i < 7; i++) s += (double)x.data[r * 7 + i] * w[j * 7 + i];
      assert_true(fabs(s - l->out.data[r * 5 + j]) < 1e-5);
    }
  check(l, &x, GC_DEFAULT, 4);
  /* Leading dims are rows: [2, 3, 7] -> [2, 3, 5]. */
  check(l, &x3, GC_DEFAULT, 5);
  assert_int_equal(l->out.ndim, 3);
  assert_int_equal(l->out.dims[2], 5);
  int64_t bad[2] = {4, 6};
  syno_tensor_t xb = gc_randn(2, bad, 6);
  assert_int_equal(syno_nn_forward(l, &xb, 1), SYNO_NN_ESHAPE);
  syno_nn_tensor_free(&x);
  syno_nn_tensor_free(&x3);
  syno_nn_tensor_free(&xb);
  syno_nn_layer_free(l);

  syno_layer_t *nb = syno_nn_linear_create(3, 2, 0, &rng);
  assert_int_equal(nb->nparams, 1);
  int64_t d[2] = {3, 3};
  syno_tensor_t xs = gc_randn(2, d, 7);
  check(nb, &xs, GC_DEFAULT, 8);
  syno_nn_tensor_free(&xs);
  syno_nn_layer_free(nb);
}

static void test_batchnorm_train(void **state) {
  (void)state;
  syno_layer_t *l = syno_nn_batchnorm_create(3, 0.1, 1e-5);
  int64_t d4[4] = {4, 3, 3, 2}, d2[2] = {6, 3};
  syno_tensor_t x = gc_randn(4, d4, 11), x2 = gc_randn(2, d2, 12);
  /* Non-trivial affine parameters so their gradients are tested at a generic point. */
  for (int c = 0; c < 3; c++) {
    l->params[0].value.data[c] = 0.5f + 0.3f * (float)c;
    l->params[1].value.data[c] = -0.2f + 0.1f * (float)c;
  }
  for (int64_t i = 0; i < syno_nn_tensor_numel(&x); i++)
    x.data[i] = x.data[i] * 2.0f + 3.0f; /* a mean far from 0 tests the two-pass stats */
  check(l, &x, GC_DEFAULT, 13);
  check(l, &x2, GC_DEFAULT, 14);
  syno_nn_tensor_free(&x);
  syno_nn_tensor_free(&x2);
  syno_nn_layer_free(l);
}

/* A batch large enough for the rows' vector lanes and for splitting the channels over two
 * threads, with a mean far from 0: forward statistics and the backward pass against the
 * definitions evaluated in double. */
static void test_batchnorm_large_against_double(void **state) {
  (void)state;
  const int64_t N = 8, C = 4, HW = 2 * 1153; /* HW not a multiple of the lanes: the tail too */
  int64_t d[4] = {N, C, 2, 1153};
  syno_tensor_t x = gc_randn(4, d, 31), dy = gc_randn(4, d, 32);
  for (int64_t i = 0; i < syno_nn_tensor_numel(&x); i++) x.data[i] = x.data[i] * 0.5f + 40.0f;
  syno_nn_threads_set(2);
  syno_layer_t *l = syno_nn_batchnorm_create(C, 0.1, 1e-5);
  for (int c = 0; c < C; c++) l->params[0].value.data[c] = 0.5f + 0.25f * (float)c;
  assert_int_equal(syno_nn_forward(l, &x, 1), 0);
  syno_nn_zero_grad(l);
  assert_int_equal(syno_nn_backward(l, &dy), 0);
  const double m = (double)(N * HW);
  for (int64_t c = 0; c < C; c++) {
    double s = 0, ss = 0, sg = 0, sgx = 0;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < HW; j++) s += x.data[(n * C + c) * HW + j];
    const double mean = s / m;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < HW; j++) ss += pow(x.data[(n * C + c) * HW + j] - mean, 2);
    const double inv = 1 / sqrt(ss / m + 1e-5), g = l->params[0].value.data[c];
    assert_true(fabs(syno_nn_batchnorm_running_mean(l)->data[c] - 0.1 * mean) < 1e-4);
    assert_true(fabs(syno_nn_batchnorm_running_var(l)->data[c] - (0.9 + 0.1 * ss / (m - 1))) < 1e-5);
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < HW; j++) {
        const int64_t k = (n * C + c) * HW + j;
        const double xh = (x.data[k] - mean) * inv;
        assert_true(fabs(l->out.data[k] - g * xh) < 1e-4);
        sg += dy.data[k];
        sgx += dy.data[k] * xh;
      }
    assert_true(fabs(l->params[0].grad.data[c] - sgx) < 1e-3 * (1 + fabs(sgx)));
    assert_true(fabs(l->params[1].grad.data[c] - sg) < 1e-3 * (1 + fabs(sg)));
    double worst = 0;
    for (int64_t n = 0; n < N; n++)
      for (int64_t j = 0; j < HW; j++) {
        const int64_t k = (n * C + c) * HW + j;
        const double xh = (x.data[k] - mean) * inv;
        const double want = g * inv * (dy.data[k] - sg / m - xh * sgx / m);
        worst = fmax(worst, fabs(l->grad_in.data[k] - want) / (1e-3 + fabs(want)));
      }
    assert_true(worst < 1e-3);
  }
  syno_nn_threads_set(0);
  syno_nn_tensor_free(&x);
  syno_nn_tensor_free(&dy);
  syno_nn_layer_free(l);
}

static void test_batchnorm_running_stats_and_eval(void **state) {
  (void)state;
  syno_layer_t *l = syno_nn_batchnorm_create(2, 0.1, 1e-5);
  int64_t d[4] = {3, 2, 2, 2};
  syno_tensor_t x = gc_randn(4, d, 21);
  assert_int_equal(syno_nn_forward(l, &x, 1), 0);
  syno_tensor_t *rm = syno_nn_batchnorm_running_mean(l), *rv = syno_nn_batchnorm_running_var(l);
  assert_non_null(rm);
  assert_null(syno_nn_batchnorm_running_mean(NULL));
  for (int c = 0; c < 2; c++) {
    double s = 0, ss = 0;
    for (int n = 0; n < 3; n++)
      for (int i = 0; i < 4; i++) s += x.data[(n * 2 + c) * 4 + i];
    double mean = s / 12;
    for (int n = 0; n < 3; n++)
      for (int i = 0; i < 4; i++) {
        double v = x.data[(n * 2 + c) * 4 + i] - mean;
        ss += v * v;
      }
    assert_true(fabs(rm->data[c] - 0.1 * mean) < 1e-6);
    assert_true(fabs(rv->data[c] - (0.9 + 0.1 * ss / 11)) < 1e-6);
    /* Train-mode output has zero mean and unit (biased) variance per channel. */
    double ys = 0, yss = 0;
    for (int n = 0; n < 3; n++)
      for (int i = 0; i < 4; i++) {
        double y = l->out.data[(n * 2 + c) * 4 + i];
        ys += y;
        yss += y * y;
      }
    assert_true(fabs(ys / 12) < 1e-5);
    assert_true(fabs(yss / 12 - 1.0) < 1e-3);
  }
  /* Eval mode uses the running statistics, and is differentiable with them fixed. */
  rm->data[0] = 0.3f;
  rm->data[1] = -0.7f;
  rv->data[0] = 2.0f;
  rv->data[1] = 0.5f;
  l->params[0].value.data[1] = 1.5f;
  assert_int_equal(syno_nn_forward(l, &x, 0), 0);
  float expect = (float)((x.data[4] + 0.7) / sqrt(0.5 + 1e-5) * 1.5);
  assert_true(fabsf(l->out.data[4] - expect) < 1e-5f);
  gc_opts_t o = GC_DEFAULT;
  o.train = 0;
  check(l, &x, o, 22);
  assert_true(fabsf(rm->data[0] - 0.3f) < 1e-7f); /* eval never touches the statistics */
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(l);
}

static void test_layernorm(void **state) {
  (void)state;
  syno_layer_t *l = syno_nn_layernorm_create(6, 1e-5);
  int64_t d[3] = {2, 3, 6};
  syno_tensor_t x = gc_randn(3, d, 31);
  for (int j = 0; j < 6; j++) {
    l->params[0].value.data[j] = 1.0f + 0.1f * (float)j;
    l->params[1].value.data[j] = 0.05f * (float)j;
  }
  check(l, &x, GC_DEFAULT, 32);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(l);
}

static void test_relu_gelu(void **state) {
  (void)state;
  int64_t d[4] = {2, 3, 4, 5};
  syno_tensor_t x = gc_randn(4, d, 41);
  away_from_zero(&x, 0.05f);
  syno_layer_t *r = syno_nn_relu_create(), *g = syno_nn_gelu_create();
  check(r, &x, GC_DEFAULT, 42);
  for (int64_t i = 0; i < syno_nn_tensor_numel(&x); i++)
    assert_true(r->out.data[i] == (x.data[i] > 0 ? x.data[i] : 0.0f));
  check(g, &x, GC_DEFAULT, 43);
  assert_int_equal(syno_nn_forward(g, &x, 1), 0); /* the check left a perturbed forward */
  /* The tanh form stays within 1e-3 of the exact erf GELU. */
  for (int64_t i = 0; i < syno_nn_tensor_numel(&x); i++) {
    double v = x.data[i], exact = 0.5 * v * (1.0 + erf(v / sqrt(2.0)));
    assert_true(fabs(g->out.data[i] - exact) < 1e-3);
    /* and within float rounding of the tanh form itself */
    double tanh_form = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    assert_true(fabs(g->out.data[i] - tanh_form) < 1e-6 * (1.0 + fabs(v)));
  }
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(r);
  syno_nn_layer_free(g);
}

/* Tensors large enough to be split into spans over two threads, with a tail: every
 * activation's forward and backward against its definition evaluated in double. */
static void test_activations_large_against_double(void **state) {
  (void)state;
  int64_t d[2] = {7, 10007}; /* 70049 elements: 4 spans and a tail, over the parallel threshold */
  syno_tensor_t x = gc_randn(2, d, 131), dy = gc_randn(2, d, 132);
  const int64_t n = syno_nn_tensor_numel(&x);
  for (int64_t i = 0; i < n; i++) x.data[i] *= 4.0f;
  syno_nn_threads_set(2);
  syno_layer_t *layers[4] = {syno_nn_relu_create(), syno_nn_gelu_create(), syno_nn_silu_create(),
                             syno_nn_sigmoid_create()};
  for (int a = 0; a < 4; a++) {
    syno_layer_t *l = layers[a];
    assert_int_equal(syno_nn_forward(l, &x, 1), 0);
    assert_int_equal(syno_nn_backward(l, &dy), 0);
    double worst_y = 0, worst_g = 0;
    for (int64_t i = 0; i < n; i++) {
      const double v = x.data[i], s = 1 / (1 + exp(-v));
      const double u = 0.7978845608028654 * (v + 0.044715 * v * v * v), t = tanh(u);
      double y, dydv;
      if (a == 0) y = v > 0 ? v : 0, dydv = v > 0 ? 1 : 0;
      else if (a == 1)
        y = 0.5 * v * (1 + t), dydv = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * v * v);
      else if (a == 2) y = v * s, dydv = s * (1 + v * (1 - s));
      else y = s, dydv = s * (1 - s);
      worst_y = fmax(worst_y, fabs(l->out.data[i] - y) / (1 + fabs(y)));
      worst_g = fmax(worst_g, fabs(l->grad_in.data[i] - dy.data[i] * dydv) / (1 + fabs(dy.data[i] * dydv)));
    }
    fprintf(stderr, "%s on %lld elements, 2 threads: worst error forward %.1e, backward %.1e\n", l->ops->kind,
            (long long)n, worst_y, worst_g);
    assert_true(worst_y < 1e-5 && worst_g < 1e-5);
    syno_nn_layer_free(l);
  }
  syno_nn_threads_set(0);
  syno_nn_tensor_free(&x);
  syno_nn_tensor_free(&dy);
}

static void test_maxpool(void **state) {
  (void)state;
  int64_t d[4] = {2, 2, 6, 5};
  syno_tensor_t x = distinct(4, d, 51);
  syno_layer_t *a = syno_nn_maxpool2d_create(2, 0, 0), *b = syno_nn_maxpool2d_create(3, 2, 1);
  check(a, &x, GC_DEFAULT, 52);
  assert_int_equal(a->out.dims[2], 3);
  assert_int_equal(a->out.dims[3], 2);
  /* out[0][0][0][0] is the max of the top-left 2x2 window. */
  float m = fmaxf(fmaxf(x.data[0], x.data[1]), fmaxf(x.data[5], x.data[6]));
  assert_true(a->out.data[0] == m);
  check(b, &x, GC_DEFAULT, 53);
  assert_int_equal(b->out.dims[2], 3);
  assert_int_equal(b->out.dims[3], 3);
  assert_null(syno_nn_maxpool2d_create(2, 2, 2)); /* padding wider than half the window */
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(a);
  syno_nn_layer_free(b);
}

static void test_avgpool_and_gap(void **state) {
  (void)state;
  int64_t d[4] = {2, 3, 5, 6};
  syno_tensor_t x = gc_randn(4, d, 61);
  syno_layer_t *a = syno_nn_avgpool2d_create(2, 2, 0), *b = syno_nn_avgpool2d_create(3, 1, 1);
  syno_layer_t *g = syno_nn_global_avgpool_create();
  check(a, &x, GC_DEFAULT, 62);
  assert_true(fabsf(a->out.data[0] - (x.data[0] + x.data[1] + x.data[6] + x.data[7]) / 4) < 1e-6f);
  /* every output of the 2x2 window (5x6 -> 2x3; the odd last row is dropped) */
  for (int pc = 0; pc < 6; pc++)
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 3; j++) {
        const float *r = x.data + pc * 30 + 2 * i * 6 + 2 * j;
        assert_true(fabsf(a->out.data[pc * 6 + i * 3 + j] - (r[0] + r[1] + r[6] + r[7]) / 4) < 1e-6f);
      }
  check(b, &x, GC_DEFAULT, 63);
  /* count_include_pad: the corner window holds 4 real pixels but divides by 9. */
  assert_true(fabsf(b->out.data[0] - (x.data[0] + x.data[1] + x.data[6] + x.data[7]) / 9) < 1e-6f);
  check(g, &x, GC_DEFAULT, 64);
  assert_int_equal(g->out.ndim, 2);
  double s = 0;
  for (int i = 0; i < 30; i++) s += x.data[30 + i];
  assert_true(fabs(g->out.data[1] - s / 30) < 1e-6);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(a);
  syno_nn_layer_free(b);
  syno_nn_layer_free(g);
}

static void test_embedding(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 71, 1);
  syno_layer_t *e = syno_nn_embedding_create(5, 3, &rng);
  int64_t d[2] = {2, 4};
  syno_tensor_t ids = SYNO_TENSOR_EMPTY;
  syno_nn_tensor_alloc(&ids, 2, d);
  const float v[8] = {0, 4, 2, 2, 1, 0, 3, 2}; /* repeats: gradients must add up */
  memcpy(ids.data, v, sizeof v);
  assert_int_equal(syno_nn_forward(e, &ids, 1), 0);
  assert_int_equal(e->out.ndim, 3);
  assert_int_equal(e->out.dims[2], 3);
  assert_memory_equal(e->out.data + 3, e->params[0].value.data + 4 * 3, 3 * sizeof(float));
  gc_opts_t o = GC_DEFAULT;
  o.check_input = 0;
  check(e, &ids, o, 72);
  ids.data[3] = 5.0f;
  assert_int_equal(syno_nn_forward(e, &ids, 1), SYNO_NN_ERANGE);
  ids.data[3] = 1.5f;
  assert_int_equal(syno_nn_forward(e, &ids, 1), SYNO_NN_ERANGE);
  ids.data[3] = -1.0f;
  assert_int_equal(syno_nn_forward(e, &ids, 1), SYNO_NN_ERANGE);
  syno_nn_tensor_free(&ids);
  syno_nn_layer_free(e);
}

static double xent_loss(const syno_tensor_t *z, const int32_t *lab) {
  double loss;
  assert_int_equal(syno_nn_softmax_xent(z, lab, &loss, NULL, NULL), 0);
  return loss;
}

static void test_softmax_xent(void **state) {
  (void)state;
  int64_t d[2] = {4, 5};
  syno_tensor_t z = gc_randn(2, d, 81), dz = SYNO_TENSOR_EMPTY;
  int32_t lab[4] = {0, 3, 4, 3};
  double loss;
  int64_t correct = -1;
  assert_int_equal(syno_nn_softmax_xent(&z, lab, &loss, &dz, &correct), 0);
  /* Loss from the definition, and accuracy from the arg-max. */
  double ref = 0;
  int64_t ref_correct = 0;
  for (int r = 0; r < 4; r++) {
    double s = 0;
    int arg = 0;
    for (int j = 0; j < 5; j++) {
      s += exp(z.data[r * 5 + j]);
      if (z.data[r * 5 + j] > z.data[r * 5 + arg]) arg = j;
    }
    ref += log(s) - z.data[r * 5 + lab[r]];
    ref_correct += arg == lab[r];
  }
  assert_true(fabs(loss - ref / 4) < 1e-9);
  assert_int_equal(correct, ref_correct);
  /* Gradient by central differences. */
  for (int64_t i = 0; i < 20; i++) {
    float keep = z.data[i];
    z.data[i] = keep + 1e-2f;
    double lp = xent_loss(&z, lab);
    z.data[i] = keep - 1e-2f;
    double lm = xent_loss(&z, lab);
    z.data[i] = keep;
    double num = (lp - lm) / ((double)(keep + 1e-2f) - (double)(keep - 1e-2f));
    assert_true(fabs(num - dz.data[i]) < 1e-4 + 1e-2 * fabs(num));
  }
  /* Huge logits neither overflow nor produce NaN. */
  z.data[0] = 1e30f;
  assert_int_equal(syno_nn_softmax_xent(&z, lab, &loss, &dz, NULL), 0);
  assert_true(isfinite(loss));
  lab[1] = 5;
  assert_int_equal(syno_nn_softmax_xent(&z, lab, &loss, NULL, NULL), SYNO_NN_ERANGE);
  syno_nn_tensor_free(&z);
  syno_nn_tensor_free(&dz);
}

/* conv -> bn -> gelu -> residual(conv-bn, 1x1-conv shortcut) -> avgpool -> flatten -> linear:
 * the containers route gradients correctly when the whole chain is checked at once. */
static void test_composite_network(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 91, 1);
  syno_conv2d_cfg_t c1 = {.in_channels = 2, .out_channels = 3, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1};
  syno_conv2d_cfg_t c2 = {.in_channels = 3,
                          .out_channels = 4,
                          .kernel_h = 3,
                          .kernel_w = 3,
                          .pad_h = 1,
                          .pad_w = 1,
                          .stride_h = 2,
                          .stride_w = 2};
  syno_conv2d_cfg_t sc = {
      .in_channels = 3, .out_channels = 4, .kernel_h = 1, .kernel_w = 1, .stride_h = 2, .stride_w = 2};
  syno_layer_t *body[2] = {syno_nn_conv2d_create(&c2, &rng), syno_nn_batchnorm_create(4, 0.1, 1e-5)};
  syno_layer_t *layers[7] = {
      syno_nn_conv2d_create(&c1, &rng),
      syno_nn_batchnorm_create(3, 0.1, 1e-5),
      syno_nn_gelu_create(),
      syno_nn_residual_create(syno_nn_sequential_create(2, body), syno_nn_conv2d_create(&sc, &rng)),
      syno_nn_avgpool2d_create(2, 2, 0),
      syno_nn_flatten_create(),
      syno_nn_linear_create(4 * 2 * 2, 3, 1, &rng),
  };
  syno_layer_t *net = syno_nn_sequential_create(7, layers);
  assert_non_null(net);
  int64_t d[4] = {3, 2, 8, 8}, od[SYNO_TENSOR_MAX_DIMS];
  assert_int_equal(syno_nn_out_shape(net, 4, d, od), 2);
  assert_int_equal(od[0], 3);
  assert_int_equal(od[1], 3);
  assert_int_equal(syno_nn_params(net, NULL, 0), 9);
  assert_int_equal(syno_nn_param_count(net), 54 + 6 + 108 + 8 + 12 + 16 * 3 + 3);
  syno_tensor_t x = gc_randn(4, d, 92);
  gc_opts_t o = GC_DEFAULT;
  o.max_elems = 60;
  check(net, &x, o, 93);
  assert_int_equal(net->out.dims[1], 3);
  /* Gradients accumulate until zeroed. */
  syno_tensor_t dy = gc_randn(2, net->out.dims, 94), g1 = SYNO_TENSOR_EMPTY;
  syno_param_t *p[9];
  syno_nn_params(net, p, 9);
  syno_nn_zero_grad(net);
  assert_int_equal(syno_nn_forward(net, &x, 1), 0);
  assert_int_equal(syno_nn_backward(net, &dy), 0);
  syno_nn_tensor_copy(&g1, &p[0]->grad);
  assert_int_equal(syno_nn_backward(net, &dy), 0);
  for (int64_t i = 0; i < syno_nn_tensor_numel(&g1); i++)
    assert_true(fabsf(p[0]->grad.data[i] - 2 * g1.data[i]) <= 1e-5f + 1e-5f * fabsf(g1.data[i]));
  /* After a backward only the gradients still read are kept: the first layer's (the net's
   * input gradient is a view of it) and the linear's (the flatten's is a view of it). Every
   * other one was freed once the layer before it had consumed it, the residual's inner ones
   * too. */
  assert_non_null(layers[0]->grad_in.data);
  assert_ptr_equal(net->grad_in.data, layers[0]->grad_in.data);
  for (int i = 1; i <= 5; i++) assert_null(layers[i]->grad_in.data);
  assert_non_null(layers[6]->grad_in.data);
  assert_null(body[0]->grad_in.data);
  assert_null(body[1]->grad_in.data);
  /* Wrong dy shape and wrong input shape are reported, not crashed on. */
  int64_t wd[2] = {3, 4};
  syno_tensor_t bad = gc_randn(2, wd, 95);
  assert_int_equal(syno_nn_backward(net, &bad), SYNO_NN_ESHAPE);
  assert_int_equal(syno_nn_forward(net, &bad, 1), SYNO_NN_ESHAPE);
  syno_nn_tensor_free(&bad);
  syno_nn_tensor_free(&g1);
  syno_nn_tensor_free(&dy);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(net);
}

static void test_identity_residual_and_add(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 101, 1);
  syno_conv2d_cfg_t c = {
      .in_channels = 2, .out_channels = 2, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1, .bias = 1};
  syno_layer_t *r = syno_nn_residual_create(syno_nn_conv2d_create(&c, &rng), NULL);
  int64_t d[4] = {2, 2, 4, 4};
  syno_tensor_t x = gc_randn(4, d, 102);
  check(r, &x, GC_DEFAULT, 103);
  /* A shortcut whose shape differs from the body's is a shape error. */
  syno_conv2d_cfg_t wide = c;
  wide.out_channels = 3;
  syno_layer_t *bad = syno_nn_residual_create(syno_nn_conv2d_create(&wide, &rng), NULL);
  int64_t od[4];
  assert_int_equal(syno_nn_out_shape(bad, 4, d, od), SYNO_NN_ESHAPE);
  assert_int_equal(syno_nn_forward(bad, &x, 1), SYNO_NN_ESHAPE);
  syno_tensor_t y = SYNO_TENSOR_EMPTY, z = gc_randn(4, d, 104);
  assert_int_equal(syno_nn_add(&x, &z, &y), 0);
  assert_true(y.data[5] == x.data[5] + z.data[5]);
  syno_tensor_t w = gc_randn(2, d, 105);
  assert_int_equal(syno_nn_add(&x, &w, &y), SYNO_NN_ESHAPE);
  syno_nn_tensor_free(&w);
  syno_nn_tensor_free(&y);
  syno_nn_tensor_free(&z);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(r);
  syno_nn_layer_free(bad);
}

/* Dense (DenseNet concatenation): the output is x's channels then the body's, and the input
 * gradient (dy's x slice plus the body's) and the body's weight gradients pass finite
 * differences, also nested as a dense block is (two layers, the second sees both). */
static void test_dense_concat(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 111, 1);
  syno_conv2d_cfg_t c = {.in_channels = 2, .out_channels = 3, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1};
  syno_layer_t *d = syno_nn_dense_create(syno_nn_conv2d_create(&c, &rng));
  int64_t dims[4] = {2, 2, 4, 3}, od[4];
  syno_tensor_t x = gc_randn(4, dims, 112);
  assert_int_equal(syno_nn_out_shape(d, 4, dims, od), 4);
  assert_int_equal(od[1], 5);
  assert_int_equal(syno_nn_forward(d, &x, 1), 0);
  const syno_tensor_t *b = &d->children[0]->out;
  for (int n = 0; n < 2; n++)
    for (int i = 0; i < 12; i++) {
      for (int ch = 0; ch < 2; ch++) assert_true(d->out.data[(n * 5 + ch) * 12 + i] == x.data[(n * 2 + ch) * 12 + i]);
      for (int ch = 0; ch < 3; ch++)
        assert_true(d->out.data[(n * 5 + 2 + ch) * 12 + i] == b->data[(n * 3 + ch) * 12 + i]);
    }
  check(d, &x, GC_DEFAULT, 113);
  syno_conv2d_cfg_t c2 = c;
  c2.in_channels = 5;
  c2.out_channels = 2;
  syno_layer_t *two[2] = {d, syno_nn_dense_create(syno_nn_conv2d_create(&c2, &rng))};
  syno_layer_t *block = syno_nn_sequential_create(2, two);
  check(block, &x, GC_DEFAULT, 114);
  assert_int_equal(block->out.dims[1], 7);
  /* a body that changes the spatial size cannot be concatenated */
  syno_layer_t *bad = syno_nn_dense_create(syno_nn_maxpool2d_create(2, 2, 0));
  assert_int_equal(syno_nn_out_shape(bad, 4, dims, od), SYNO_NN_ESHAPE);
  assert_int_equal(syno_nn_forward(bad, &x, 1), SYNO_NN_ESHAPE);
  assert_null(syno_nn_dense_create(NULL));
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(block);
  syno_nn_layer_free(bad);
}

/* SiLU and sigmoid against their definitions and by finite differences; the SE gate
 * (x times a per-channel gate computed from x) by finite differences through both paths. */
static void test_silu_sigmoid_gate(void **state) {
  (void)state;
  int64_t d[4] = {2, 3, 4, 5};
  syno_tensor_t x = gc_randn(4, d, 121);
  syno_layer_t *si = syno_nn_silu_create(), *sg = syno_nn_sigmoid_create();
  check(si, &x, GC_DEFAULT, 122);
  check(sg, &x, GC_DEFAULT, 123);
  assert_int_equal(syno_nn_forward(si, &x, 1), 0); /* the check left a perturbed forward */
  assert_int_equal(syno_nn_forward(sg, &x, 1), 0);
  for (int64_t i = 0; i < syno_nn_tensor_numel(&x); i++) {
    double v = x.data[i], s = 1 / (1 + exp(-v));
    assert_true(fabs(sg->out.data[i] - s) < 1e-6);
    assert_true(fabs(si->out.data[i] - v * s) < 1e-6 * (1 + fabs(v)));
  }
  /* From -100 to 100, past where e^-x leaves float's range: finite, and within 1e-6 of the
   * double definitions relative to their value where that is a normal float. */
  int64_t sd[1] = {4001};
  syno_tensor_t sweep = gc_randn(1, sd, 125);
  for (int64_t i = 0; i < sd[0]; i++) sweep.data[i] = (float)(-100.0 + 0.05 * (double)i);
  assert_int_equal(syno_nn_forward(si, &sweep, 0), 0);
  assert_int_equal(syno_nn_forward(sg, &sweep, 0), 0);
  double worst = 0.0;
  for (int64_t i = 0; i < sd[0]; i++) {
    double v = sweep.data[i], s = 1 / (1 + exp(-v));
    assert_true(isfinite(sg->out.data[i]) && isfinite(si->out.data[i]));
    assert_true(sg->out.data[i] >= 0.0f && sg->out.data[i] <= 1.0f);
    if (v < -87.0) continue;
    worst = fmax(worst, fabs(sg->out.data[i] - s) / s);
    worst = fmax(worst, fabs(si->out.data[i] - v * s) / fmax(fabs(v * s), 1e-30));
  }
  fprintf(stderr, "sigmoid/SiLU worst relative error on [-87, 100]: %.2e\n", worst);
  assert_true(worst < 1e-6);
  syno_nn_tensor_free(&sweep);
  syno_rng_t rng;
  syno_rng_seed(&rng, 124, 1);
  syno_layer_t *se[5] = {syno_nn_global_avgpool_create(), syno_nn_linear_create(3, 2, 1, &rng), syno_nn_silu_create(),
                         syno_nn_linear_create(2, 3, 1, &rng), syno_nn_sigmoid_create()};
  syno_layer_t *gate = syno_nn_gate_create(syno_nn_sequential_create(5, se));
  int64_t od[4];
  assert_int_equal(syno_nn_out_shape(gate, 4, d, od), 4);
  assert_int_equal(od[1], 3);
  check(gate, &x, GC_DEFAULT, 125);
  assert_int_equal(syno_nn_forward(gate, &x, 1), 0);
  const syno_tensor_t *g = &gate->children[0]->out;
  for (int64_t r = 0; r < 6; r++)
    for (int64_t i = 0; i < 20; i++) assert_true(gate->out.data[r * 20 + i] == x.data[r * 20 + i] * g->data[r]);
  /* a body whose output is not one value per channel */
  syno_layer_t *bad = syno_nn_gate_create(syno_nn_global_avgpool_create());
  int64_t d2[4] = {2, 3, 1, 1};
  assert_int_equal(syno_nn_out_shape(bad, 4, d2, od), 4);
  syno_nn_layer_free(bad);
  syno_layer_t *wrong[2] = {syno_nn_global_avgpool_create(), syno_nn_linear_create(3, 2, 1, &rng)};
  bad = syno_nn_gate_create(syno_nn_sequential_create(2, wrong));
  assert_int_equal(syno_nn_out_shape(bad, 4, d, od), SYNO_NN_ESHAPE);
  assert_int_equal(syno_nn_forward(bad, &x, 1), SYNO_NN_ESHAPE);
  syno_nn_layer_free(bad);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(si);
  syno_nn_layer_free(sg);
  syno_nn_layer_free(gate);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_linear),
      cmocka_unit_test(test_batchnorm_train),
      cmocka_unit_test(test_batchnorm_running_stats_and_eval),
      cmocka_unit_test(test_batchnorm_large_against_double),
      cmocka_unit_test(test_layernorm),
      cmocka_unit_test(test_relu_gelu),
      cmocka_unit_test(test_activations_large_against_double),
      cmocka_unit_test(test_maxpool),
      cmocka_unit_test(test_avgpool_and_gap),
      cmocka_unit_test(test_embedding),
      cmocka_unit_test(test_softmax_xent),
      cmocka_unit_test(test_composite_network),
      cmocka_unit_test(test_identity_residual_and_add),
      cmocka_unit_test(test_dense_concat),
      cmocka_unit_test(test_silu_sigmoid_gate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
