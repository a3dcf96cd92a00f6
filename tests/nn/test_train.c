/* PRNG, batcher, SGD and learning-rate schedule. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "syno/train.h"

static void test_pcg32_reference_values(void **state) {
  (void)state;
  /* pcg32-demo from the PCG reference implementation: srandom(42, 54). */
  const uint32_t expect[6] = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u, 0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
  syno_rng_t rng;
  syno_rng_seed(&rng, 42, 54);
  for (int i = 0; i < 6; i++) assert_int_equal(syno_rng_u32(&rng), expect[i]);
}

static void test_uniform_normal_below(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 1, 0);
  const int n = 200000;
  double s = 0, ss = 0, ns = 0, nss = 0, n4 = 0;
  for (int i = 0; i < n; i++) {
    double u = syno_rng_uniform(&rng);
    assert_true(u >= 0.0 && u < 1.0);
    s += u;
    ss += u * u;
    double z = syno_rng_normal(&rng);
    ns += z;
    nss += z * z;
    n4 += z * z * z * z;
  }
  assert_true(fabs(s / n - 0.5) < 0.005);
  assert_true(fabs(ss / n - 1.0 / 3.0) < 0.005);
  assert_true(fabs(ns / n) < 0.01);
  assert_true(fabs(nss / n - 1.0) < 0.02);
  assert_true(fabs(n4 / n - 3.0) < 0.1); /* kurtosis of a normal */
  /* below(): every bucket of [0, 7) within 3% of its expected share. */
  int64_t bucket[7] = {0};
  for (int i = 0; i < 70000; i++) {
    uint64_t v = syno_rng_below(&rng, 7);
    assert_true(v < 7);
    bucket[v]++;
  }
  for (int i = 0; i < 7; i++) assert_true(labs((long)bucket[i] - 10000) < 300);
  assert_int_equal(syno_rng_below(&rng, 1), 0);
  assert_int_equal(syno_rng_below(&rng, 0), 0);
  uint64_t big = (UINT64_C(1) << 40) + 3;
  for (int i = 0; i < 100; i++) assert_true(syno_rng_below(&rng, big) < big);
}

static void test_shuffle_is_seeded_permutation(void **state) {
  (void)state;
  int64_t a[100], b[100], c[100];
  for (int i = 0; i < 100; i++) a[i] = b[i] = c[i] = i;
  syno_rng_t r1, r2, r3;
  syno_rng_seed(&r1, 123, 0);
  syno_rng_seed(&r2, 123, 0);
  syno_rng_seed(&r3, 124, 0);
  syno_rng_shuffle(&r1, a, 100);
  syno_rng_shuffle(&r2, b, 100);
  syno_rng_shuffle(&r3, c, 100);
  assert_memory_equal(a, b, sizeof a);
  assert_memory_not_equal(a, c, sizeof a);
  int seen[100] = {0}, fixed = 0;
  for (int i = 0; i < 100; i++) {
    seen[a[i]]++;
    fixed += a[i] == i;
  }
  for (int i = 0; i < 100; i++) assert_int_equal(seen[i], 1);
  assert_true(fixed < 10);
  /* Streams of one seed differ. */
  syno_rng_seed(&r1, 5, 1);
  syno_rng_seed(&r2, 5, 2);
  assert_int_not_equal(syno_rng_u32(&r1), syno_rng_u32(&r2));
}

static void test_batcher(void **state) {
  (void)state;
  syno_batcher_t b;
  syno_rng_t rng;
  syno_rng_seed(&rng, 9, 0);
  assert_int_equal(syno_nn_batcher_init(&b, 10, 4, 0), 0);
  assert_int_equal(syno_nn_batcher_count(&b), 3);
  const int64_t *idx;
  int64_t sizes[4], total = 0, k = 0, seen[10] = {0};
  syno_nn_batcher_epoch(&b, &rng);
  int64_t first[4];
  int64_t n;
  while ((n = syno_nn_batcher_next(&b, &idx)) > 0) {
    if (k == 0) memcpy(first, idx, 4 * sizeof *idx);
    sizes[k++] = n;
    for (int64_t i = 0; i < n; i++) seen[idx[i]]++;
    total += n;
  }
  assert_int_equal(k, 3);
  assert_int_equal(sizes[0], 4);
  assert_int_equal(sizes[2], 2);
  assert_int_equal(total, 10);
  for (int i = 0; i < 10; i++) assert_int_equal(seen[i], 1);
  /* Same seed, same epoch order. */
  syno_rng_seed(&rng, 9, 0);
  syno_nn_batcher_epoch(&b, &rng);
  assert_int_equal(syno_nn_batcher_next(&b, &idx), 4);
  assert_memory_equal(idx, first, 4 * sizeof *idx);
  /* No rng: sequential order. */
  syno_nn_batcher_epoch(&b, NULL);
  assert_int_equal(syno_nn_batcher_next(&b, &idx), 4);
  assert_int_equal(idx[3], 3);
  syno_nn_batcher_free(&b);

  assert_int_equal(syno_nn_batcher_init(&b, 10, 4, 1), 0);
  assert_int_equal(syno_nn_batcher_count(&b), 2);
  syno_nn_batcher_epoch(&b, &rng);
  k = 0;
  while (syno_nn_batcher_next(&b, &idx) > 0) k++;
  assert_int_equal(k, 2);
  syno_nn_batcher_free(&b);
  assert_int_equal(syno_nn_batcher_init(&b, 10, 0, 1), SYNO_NN_EINVAL);
}

/* Minimises f(w) = sum a_i (w_i - t_i)^2 / 2 (+ wd |w|^2 / 2 through the optimizer). */
static double run_quadratic(syno_sgd_cfg_t cfg, int no_decay, int steps, double lr, double *w_out) {
  const float a[4] = {1.0f, 0.5f, 2.0f, 4.0f}, t[4] = {1.0f, -2.0f, 0.5f, 3.0f};
  syno_param_t p;
  int64_t d = 4;
  assert_int_equal(syno_nn_param_init(&p, "weight", 1, &d), 0);
  p.no_decay = no_decay;
  syno_param_t *ps[1] = {&p};
  syno_sgd_t opt;
  assert_int_equal(syno_nn_sgd_init(&opt, ps, 1, &cfg), 0);
  for (int s = 0; s < steps; s++) {
    syno_nn_sgd_zero_grad(&opt);
    for (int i = 0; i < 4; i++) p.grad.data[i] += a[i] * (p.value.data[i] - t[i]);
    syno_nn_sgd_step(&opt, lr);
  }
  double f = 0;
  for (int i = 0; i < 4; i++) {
    w_out[i] = p.value.data[i];
    f += 0.5 * a[i] * (p.value.data[i] - t[i]) * (p.value.data[i] - t[i]);
  }
  syno_nn_sgd_free(&opt);
  syno_nn_param_free(&p);
  return f;
}

static void test_sgd_quadratic(void **state) {
  (void)state;
  const double a[4] = {1.0, 0.5, 2.0, 4.0}, t[4] = {1.0, -2.0, 0.5, 3.0};
  double w[4];
  syno_sgd_cfg_t plain = {0}, mom = {.momentum = 0.9}, nest = {.momentum = 0.9, .nesterov = 1};
  assert_true(run_quadratic(plain, 0, 400, 0.2, w) < 1e-8);
  assert_true(run_quadratic(mom, 0, 400, 0.05, w) < 1e-8);
  assert_true(run_quadratic(nest, 0, 400, 0.05, w) < 1e-8);
  /* Weight decay moves the minimum to a t / (a + wd); no_decay parameters ignore it. */
  syno_sgd_cfg_t wd = {.momentum = 0.9, .weight_decay = 0.5};
  run_quadratic(wd, 0, 600, 0.05, w);
  for (int i = 0; i < 4; i++) assert_true(fabs(w[i] - a[i] * t[i] / (a[i] + 0.5)) < 1e-4);
  run_quadratic(wd, 1, 600, 0.05, w);
  for (int i = 0; i < 4; i++) assert_true(fabs(w[i] - t[i]) < 1e-4);
  /* Two exact steps of PyTorch's momentum SGD from w = 0, grad = a (w - t) + wd w:
   * step 1: v = g0, w1 = -lr g0; step 2: v = 0.9 g0 + g1, w2 = w1 - lr v. */
  run_quadratic(wd, 0, 2, 0.1, w);
  double g0 = a[0] * (0 - t[0]), w1 = -0.1 * g0;
  double g1 = a[0] * (w1 - t[0]) + 0.5 * w1, w2 = w1 - 0.1 * (0.9 * g0 + g1);
  assert_true(fabs(w[0] - w2) < 1e-6);
}

static void test_sgd_on_layer(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 3, 0);
  syno_layer_t *l = syno_nn_linear_create(3, 2, 1, &rng);
  syno_sgd_t opt;
  syno_sgd_cfg_t cfg = {.momentum = 0.9, .weight_decay = 1e-4};
  assert_int_equal(syno_nn_sgd_init_layer(&opt, l, &cfg), 0);
  assert_int_equal(opt.nparams, 2);
  assert_ptr_equal(opt.params[1], &l->params[1]);
  assert_int_equal(opt.params[1]->no_decay, 1); /* biases skip weight decay */
  syno_nn_sgd_free(&opt);
  syno_nn_layer_free(l);
}

/* AdamW against the update written out in double for three steps of a quadratic, with
 * decoupled weight decay on a decayed and a no_decay parameter; then it converges. */
static void test_adamw(void **state) {
  (void)state;
  syno_param_t p, q;
  int64_t d = 2;
  assert_int_equal(syno_nn_param_init(&p, "weight", 1, &d), 0);
  assert_int_equal(syno_nn_param_init(&q, "bias", 1, &d), 0);
  q.no_decay = 1;
  const double t[2] = {1.5, -0.5};
  syno_param_t *ps[2] = {&p, &q};
  syno_adamw_cfg_t cfg = {0.9, 0.99, 1e-8, 0.1};
  syno_adamw_t opt;
  assert_int_equal(syno_nn_adamw_init(&opt, ps, 2, &cfg), 0);
  double w[2][2] = {{0, 0}, {0, 0}}, m[2][2] = {{0}}, v[2][2] = {{0}};
  const double lr = 0.05;
  for (int step = 1; step <= 3; step++) {
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < 2; i++) {
        double g = ps[k]->value.data[i] - t[i];
        ps[k]->grad.data[i] = (float)g;
        double wd = k == 0 ? 0.1 : 0.0, gr = w[k][i] - t[i];
        w[k][i] *= 1 - lr * wd;
        m[k][i] = 0.9 * m[k][i] + 0.1 * gr;
        v[k][i] = 0.99 * v[k][i] + 0.01 * gr * gr;
        double mh = m[k][i] / (1 - pow(0.9, step)), vh = v[k][i] / (1 - pow(0.99, step));
        w[k][i] -= lr * mh / (sqrt(vh) + 1e-8);
      }
    syno_nn_adamw_step(&opt, lr);
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < 2; i++) assert_true(fabs(ps[k]->value.data[i] - w[k][i]) < 1e-5);
  }
  assert_int_equal(opt.t, 3);
  for (int s = 0; s < 600; s++) {
    for (int k = 0; k < 2; k++)
      for (int i = 0; i < 2; i++) ps[k]->grad.data[i] = ps[k]->value.data[i] - (float)t[i];
    syno_nn_adamw_step(&opt, s < 500 ? 0.02 : 0.002);
  }
  /* no_decay converges to t; decay pulls the other towards 0: the fixed point of
   * g / sqrt(g^2) = -wd w (|w - t| small) is near t, within lr-sized noise */
  for (int i = 0; i < 2; i++) {
    assert_true(fabs(q.value.data[i] - t[i]) < 0.01);
    assert_true(fabs(p.value.data[i]) < fabs(t[i]) + 0.01);
  }
  syno_nn_adamw_free(&opt);
  syno_nn_param_free(&p);
  syno_nn_param_free(&q);
}

static void test_cosine_schedule(void **state) {
  (void)state;
  syno_lr_schedule_t s = {.base_lr = 0.1, .final_lr = 0.0, .warmup_steps = 10, .total_steps = 110};
  assert_true(fabs(syno_nn_lr_at(&s, 0) - 0.01) < 1e-12);
  assert_true(fabs(syno_nn_lr_at(&s, 4) - 0.05) < 1e-12);
  assert_true(fabs(syno_nn_lr_at(&s, 9) - 0.1) < 1e-12);
  assert_true(fabs(syno_nn_lr_at(&s, 10) - 0.1) < 1e-12);
  assert_true(fabs(syno_nn_lr_at(&s, 60) - 0.05) < 1e-12);
  assert_true(fabs(syno_nn_lr_at(&s, 35) - 0.05 * (1 + cos(3.141592653589793 / 4))) < 1e-12);
  assert_true(fabs(syno_nn_lr_at(&s, 110)) < 1e-12);
  assert_true(fabs(syno_nn_lr_at(&s, 500)) < 1e-12);
  for (int64_t i = 11; i <= 110; i++) assert_true(syno_nn_lr_at(&s, i) <= syno_nn_lr_at(&s, i - 1));
  syno_lr_schedule_t nw = {.base_lr = 1.0, .final_lr = 0.1, .warmup_steps = 0, .total_steps = 4};
  assert_true(fabs(syno_nn_lr_at(&nw, 0) - 1.0) < 1e-12);
  assert_true(fabs(syno_nn_lr_at(&nw, 2) - 0.55) < 1e-12);
  assert_true(fabs(syno_nn_lr_at(&nw, 4) - 0.1) < 1e-12);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pcg32_reference_values),
      cmocka_unit_test(test_uniform_normal_below),
      cmocka_unit_test(test_shuffle_is_seeded_permutation),
      cmocka_unit_test(test_batcher),
      cmocka_unit_test(test_sgd_quadratic),
      cmocka_unit_test(test_sgd_on_layer),
      cmocka_unit_test(test_adamw),
      cmocka_unit_test(test_cosine_schedule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
