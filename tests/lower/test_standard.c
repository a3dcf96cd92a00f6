/* The standard operators written in the primitives (docs/semantics.md §10),
 * against direct C implementations written here independently of syno, on
 * random inputs under two bindings each; every gradient against finite
 * differences and the scatter form. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synotest.h"

typedef struct {
  int64_t n, cin, cout, h, w, k, s, g;
} dims_t;

/* Cross-correlation with zero padding k/2, stride s, g groups;
 * weight [cout, cin/g, k, k], output [n, cout, h/s, w/s]. */
static void conv_ref(const float *x, const float *wt, float *y, dims_t d) {
  int64_t oh = d.h / d.s, ow = d.w / d.s, cig = d.cin / d.g, cog = d.cout / d.g, p = d.k / 2;
  for (int64_t n = 0; n < d.n; n++)
    for (int64_t o = 0; o < d.cout; o++)
      for (int64_t yy = 0; yy < oh; yy++)
        for (int64_t xx = 0; xx < ow; xx++) {
          double acc = 0;
          int64_t grp = o / cog;
          for (int64_t c = 0; c < cig; c++)
            for (int64_t a = 0; a < d.k; a++)
              for (int64_t b = 0; b < d.k; b++) {
                int64_t ih = yy * d.s + a - p, iw = xx * d.s + b - p;
                if (ih < 0 || ih >= d.h || iw < 0 || iw >= d.w) continue;
                acc += (double)x[((n * d.cin + grp * cig + c) * d.h + ih) * d.w + iw] *
                       wt[((o * cig + c) * d.k + a) * d.k + b];
              }
          y[((n * d.cout + o) * oh + yy) * ow + xx] = (float)acc;
        }
}

static void linear_ref(const float *x, const float *wt, float *y, dims_t d) {
  for (int64_t n = 0; n < d.n; n++)
    for (int64_t o = 0; o < d.cout; o++) {
      double acc = 0;
      for (int64_t c = 0; c < d.cin; c++) acc += (double)x[n * d.cin + c] * wt[o * d.cin + c];
      y[n * d.cout + o] = (float)acc;
    }
}

static void avgpool_ref(const float *x, float *y, dims_t d) {
  int64_t oh = d.h / d.k, ow = d.w / d.k;
  for (int64_t n = 0; n < d.n * d.cin; n++)
    for (int64_t yy = 0; yy < oh; yy++)
      for (int64_t xx = 0; xx < ow; xx++) {
        double acc = 0;
        for (int64_t a = 0; a < d.k; a++)
          for (int64_t b = 0; b < d.k; b++) acc += x[(n * d.h + yy * d.k + a) * d.w + xx * d.k + b];
        y[(n * oh + yy) * ow + xx] = (float)(acc / (double)(d.k * d.k));
      }
}

typedef void (*ref_fn)(const float *x, const float *w, float *y, dims_t d);

static void conv_any(const float *x, const float *w, float *y, dims_t d) { conv_ref(x, w, y, d); }
static void depthwise(const float *x, const float *w, float *y, dims_t d) {
  d.cout = d.cin;
  d.g = d.cin;
  conv_ref(x, w, y, d);
}
static void linear_any(const float *x, const float *w, float *y, dims_t d) { linear_ref(x, w, y, d); }
static void pool_any(const float *x, const float *w, float *y, dims_t d) {
  (void)w;
  avgpool_ref(x, y, d);
}

/* Reads the binding's values back into dims_t (missing names keep defaults). */
static dims_t dims_of(const syno_vars_t *v, int b) {
  dims_t d = {1, 1, 1, 1, 1, 1, 1, 1};
  struct {
    const char *name;
    int64_t *slot;
  } map[] = {{"N", &d.n}, {"C_in", &d.cin}, {"C_out", &d.cout}, {"H", &d.h},
             {"W", &d.w}, {"k", &d.k},      {"s", &d.s},        {"g", &d.g}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
    syno_var_kind_t kind;
    int idx;
    if (syno_vars_find(v, map[i].name, &kind, &idx) == 0)
      *map[i].slot = kind == SYNO_PRIMARY ? v->bind[b].p[idx] : v->bind[b].c[idx];
  }
  return d;
}

static void check_builtin(const char *name, ref_fn ref, const char *bind0, const char *bind1, int64_t expect_params0) {
  const syno_builtin_t *bi = syno_builtin_find(name);
  assert_non_null(bi);
  st_op_t o;
  const char *binds[] = {bind0, bind1, NULL};
  st_op_make(&o, bi->vars, bi->input, bi->output, bi->text, binds);
  syno_lowered_t *low = malloc(sizeof *low);
  syno_error_t err;
  if (syno_lower(&o.op, low, &err)) fail_msg("%s", err.msg);
  syno_rng_t rng;
  syno_rng_seed(&rng, 5, 1);
  for (int b = 0; b < 2; b++) {
    dims_t d = dims_of(&o.vars, b);
    float *t[SYNO_MAX_TENSORS] = {0};
    int64_t numel[SYNO_MAX_TENSORS], n_out;
    for (int i = 0; i < o.op.n_tensors; i++) {
      if (syno_tensor_numel(&o.op, i, b, &numel[i], &err)) fail_msg("%s", err.msg);
      t[i] = st_random(&rng, numel[i]);
    }
    if (syno_output_numel(&o.op, b, &n_out, &err)) fail_msg("%s", err.msg);
    if (b == 0 && expect_params0 >= 0) {
      int64_t params;
      assert_int_equal(syno_operator_params(&o.op, 0, &params, &err), 0);
      assert_int_equal(params, expect_params0);
    }
    float *want = malloc(sizeof(float) * (size_t)n_out);
    ref(t[0], t[1], want, d);
    float *have = st_forward(&o, &low->forward, b, t);
    double e = st_rel_err(have, want, n_out);
    if (e > 1e-4) fail_msg("%s under binding %d: relative error %g against the direct implementation", name, b, e);
    float *gout = st_random(&rng, n_out);
    for (int i = 0; i < o.op.n_tensors; i++) {
      float *g1 = malloc(sizeof(float) * (size_t)numel[i]), *g2 = malloc(sizeof(float) * (size_t)numel[i]);
      if (syno_interp_nest(&low->backward[i], &o.vars, b, (const float *const *)t, gout, g1, &err) ||
          syno_interp_grad_scatter(&low->forward, &o.vars, b, i, (const float *const *)t, gout, g2, &err))
        fail_msg("%s", err.msg);
      e = st_rel_err(g1, g2, numel[i]);
      if (e > 1e-5) fail_msg("%s: gradient of tensor %d: backward nest vs scatter %g", name, i, e);
      free(g1);
      free(g2);
      st_check_gradient(&o, low, b, t, i, 24, 1e-4, &rng);
    }
    free(gout);
    free(want);
    free(have);
    for (int i = 0; i < o.op.n_tensors; i++) free(t[i]);
  }
  free(low);
  st_op_free(&o);
}

static void test_conv2d(void **s) {
  (void)s;
  check_builtin("conv2d", conv_any, "N=2, C_in=3, C_out=4, H=5, W=6, k=3", "N=1, C_in=2, C_out=3, H=7, W=5, k=5",
                4 * 3 * 3 * 3);
}
static void test_grouped_conv2d(void **s) {
  (void)s;
  check_builtin("grouped-conv2d", conv_any, "N=2, C_in=4, C_out=6, H=5, W=5, k=3, g=2",
                "N=1, C_in=6, C_out=3, H=6, W=4, k=3, g=3", 6 * 2 * 3 * 3);
}
static void test_depthwise_conv2d(void **s) {
  (void)s;
  check_builtin("depthwise-conv2d", depthwise, "N=2, C_in=3, H=5, W=6, k=3", "N=1, C_in=2, H=7, W=7, k=5", 3 * 9);
}
static void test_strided_conv2d(void **s) {
  (void)s;
  check_builtin("strided-conv2d", conv_any, "N=2, C_in=3, C_out=4, H=6, W=8, k=3, s=2",
                "N=1, C_in=2, C_out=2, H=9, W=6, k=5, s=3", 4 * 3 * 9);
}
static void test_linear(void **s) {
  (void)s;
  check_builtin("linear", linear_any, "N=3, C_in=5, C_out=4", "N=2, C_in=7, C_out=3", 20);
}
static void test_avgpool2d(void **s) {
  (void)s;
  check_builtin("avgpool2d", pool_any, "N=2, C_in=3, H=4, W=6, k=2", "N=1, C_in=2, H=9, W=6, k=3", 0);
}

/* The FLOPs of a k x k convolution: 2 * N * C_out * H * W * C_in * k * k. */
static void test_conv_flops(void **s) {
  (void)s;
  st_op_t o;
  st_op_builtin(&o, "conv2d", "N=2, C_in=4, C_out=8, H=9, W=9, k=3");
  int64_t flops;
  syno_error_t err;
  assert_int_equal(syno_operator_flops(&o.op, &flops, &err), 0);
  assert_int_equal(flops, 2LL * 8 * 9 * 9 * 4 * 3 * 3 * 2);
  st_op_free(&o);
  /* Average pooling: one add per window element plus one division per output. */
  st_op_builtin(&o, "avgpool2d", "N=1, C_in=2, H=4, W=4, k=2");
  assert_int_equal(syno_operator_flops(&o.op, &flops, &err), 0);
  assert_int_equal(flops, 2 * 2 * 2 * 4 + 2 * 2 * 2);
  st_op_free(&o);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv2d),           cmocka_unit_test(test_grouped_conv2d),
      cmocka_unit_test(test_depthwise_conv2d), cmocka_unit_test(test_strided_conv2d),
      cmocka_unit_test(test_linear),           cmocka_unit_test(test_avgpool2d),
      cmocka_unit_test(test_conv_flops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
