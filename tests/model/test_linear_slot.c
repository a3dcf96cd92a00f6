/* Linear slots ([N, S, C_in] -> [N, S, C_out]): the standard slot against the plain bias-free
 * linear layer, the linear operator written in primitives against the same layer, a grouped
 * linear from the linear preset against the reference interpreter (forward and every
 * gradient), finite-difference gradients of a small network of slots, and the preset checks
 * of the one parser. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "syno/backbone.h"
#include "syno/lower.h"
#include "synotest.h"

/* The builtin linear in the linear preset's shapes (i0 = N, i1 = S, i2 = C_out). */
static const char *LINEAR = "r0=sum(C_in); in[i0, i1, share(r0, 1)] expand[share(i2, 1)] w1[i2, r0]";
/* A grouped linear (s = 2 groups): half the FLOPs and weights of the linear. */
static const char *GROUPED =
    "r0=sum(s^-1*C_in); in[i0, i1, split(div(i2, s^-1*C_out), share(r0, 1))] "
    "expand[share(mod(i2, s^-1*C_out), 1)] w1[mod(i2, s^-1*C_out), r0]";

static double max_diff(const float *a, const float *b, int64_t n) {
  double d = 0, s = 0;
  for (int64_t i = 0; i < n; i++) {
    d = fmax(d, fabs((double)a[i] - b[i]));
    s = fmax(s, fabs((double)b[i]));
  }
  return s > 0 ? d / s : d;
}

static double tdiff(const syno_tensor_t *a, const syno_tensor_t *b) {
  assert_int_equal(syno_nn_tensor_numel(a), syno_nn_tensor_numel(b));
  return max_diff(a->data, b->data, syno_nn_tensor_numel(a));
}

static void test_standard_equals_linear(void **state) {
  (void)state;
  syno_rng_t r1, r2;
  syno_rng_seed(&r1, 5, 1);
  syno_rng_seed(&r2, 5, 1);
  syno_error_t err = {0};
  syno_layer_t *slot = NULL;
  assert_int_equal(syno_slot_linear_create(NULL, 6, 10, 4, &r1, &slot, &err), 0);
  syno_layer_t *lin = syno_nn_linear_create(6, 10, 0, &r2);
  int64_t d[3] = {3, 4, 6}, e[3] = {3, 4, 10};
  syno_tensor_t x = gc_randn(3, d, 1), dy = gc_randn(3, e, 2);
  assert_int_equal(syno_nn_forward(slot, &x, 1), 0);
  assert_int_equal(syno_nn_forward(lin, &x, 1), 0);
  assert_true(tdiff(&slot->out, &lin->out) == 0.0);
  assert_int_equal(syno_nn_backward(slot, &dy), 0);
  assert_int_equal(syno_nn_backward(lin, &dy), 0);
  assert_true(tdiff(&slot->grad_in, &lin->grad_in) == 0.0);
  syno_param_t *ps[2], *pl[2];
  assert_int_equal(syno_nn_params(slot, ps, 2), 1);
  assert_int_equal(syno_nn_params(lin, pl, 2), 1);
  assert_true(tdiff(&ps[0]->grad, &pl[0]->grad) == 0.0);
  syno_slot_info_t info;
  assert_true(syno_slot_info(slot, &info));
  assert_int_equal(info.kind, SYNO_SLOT_LINEAR);
  assert_int_equal(info.s, 4);
  assert_int_equal(info.c_in, 6);
  assert_int_equal(info.c_out, 10);
  assert_int_equal(info.params, 60);
  assert_int_equal(info.flops, 2 * 4 * 6 * 10);
  /* the binding holds for the standard layer too: S=5 is not this slot's input */
  int64_t bd[3] = {3, 5, 6};
  syno_tensor_t bad = gc_randn(3, bd, 3);
  assert_int_equal(syno_nn_forward(slot, &bad, 1), SYNO_NN_ESHAPE);
  assert_true(strlen(syno_slot_error(slot)) > 0);
  syno_nn_tensor_free(&bad);
  syno_nn_tensor_free(&x);
  syno_nn_tensor_free(&dy);
  syno_nn_layer_free(slot);
  syno_nn_layer_free(lin);
}

/* w1[i2, r0] is [C_out, C_in], the linear layer's layout: with the same weights both agree,
 * for the full batch and a short one. */
static void test_synthesized_matches_linear(void **state) {
  (void)state;
  syno_error_t err = {0};
  syno_slotop_t *op = NULL;
  if (syno_slotop_parse_preset("linear-wide", LINEAR, &op, &err)) fail_msg("%s", err.msg);
  assert_string_equal(op->sig.name, "linear-wide");
  syno_rng_t r1, r2;
  syno_rng_seed(&r1, 9, 1);
  syno_rng_seed(&r2, 9, 1);
  syno_layer_t *slot = NULL;
  if (syno_slot_linear_create(op, 8, 12, 5, &r1, &slot, &err)) fail_msg("%s", err.msg);
  syno_layer_t *lin = syno_nn_linear_create(8, 12, 0, &r2);
  syno_param_t *ps[2], *pl[2];
  assert_int_equal(syno_nn_params(slot, ps, 2), 1);
  assert_int_equal(syno_nn_params(lin, pl, 2), 1);
  int64_t nw = syno_nn_tensor_numel(&ps[0]->value);
  assert_int_equal(nw, syno_nn_tensor_numel(&pl[0]->value));
  /* initialisation: the standard linear's variance 1/(3 C_in) */
  double ss = 0;
  for (int64_t i = 0; i < nw; i++) ss += (double)ps[0]->value.data[i] * ps[0]->value.data[i];
  double sd = sqrt(ss / nw), want = sqrt(1.0 / 24);
  assert_true(sd > 0.7 * want && sd < 1.3 * want);
  memcpy(ps[0]->value.data, pl[0]->value.data, sizeof(float) * (size_t)nw);
  for (int n = 3; n >= 1; n -= 2) {
    int64_t d[3] = {n, 5, 8}, e[3] = {n, 5, 12};
    syno_tensor_t x = gc_randn(3, d, 10 + n), dy = gc_randn(3, e, 20 + n);
    syno_nn_zero_grad(slot);
    syno_nn_zero_grad(lin);
    assert_int_equal(syno_nn_forward(slot, &x, 1), 0);
    assert_int_equal(syno_nn_forward(lin, &x, 1), 0);
    assert_int_equal(slot->out.ndim, 3);
    assert_true(tdiff(&slot->out, &lin->out) < 1e-5);
    assert_int_equal(syno_nn_backward(slot, &dy), 0);
    assert_int_equal(syno_nn_backward(lin, &dy), 0);
    assert_true(tdiff(&slot->grad_in, &lin->grad_in) < 1e-5);
    assert_true(tdiff(&ps[0]->grad, &pl[0]->grad) < 1e-5);
    syno_nn_tensor_free(&x);
    syno_nn_tensor_free(&dy);
  }
  syno_nn_layer_free(slot);
  syno_nn_layer_free(lin);
  syno_slotop_free(op);
}

/* A grouped linear in a slot against the reference interpreter under the slot's binding. */
static void test_grouped_matches_interpreter(void **state) {
  (void)state;
  syno_error_t err = {0};
  syno_slotop_t *op = NULL;
  if (syno_slotop_parse_preset("linear-wide", GROUPED, &op, &err)) fail_msg("%s", err.msg);
  syno_rng_t rng;
  syno_rng_seed(&rng, 2, 1);
  syno_layer_t *slot = NULL;
  const int64_t n = 2, sl = 3, ci = 8, co = 6;
  if (syno_slot_linear_create(op, ci, co, sl, &rng, &slot, &err)) fail_msg("%s", err.msg);
  syno_slot_info_t info;
  syno_slot_info(slot, &info);
  assert_int_equal(info.params, (co / 2) * (ci / 2));
  assert_int_equal(info.flops, 2 * sl * co * (ci / 2));
  syno_param_t *ps[2];
  assert_int_equal(syno_nn_params(slot, ps, 2), 1);
  int64_t d[3] = {n, sl, ci}, e[3] = {n, sl, co};
  syno_tensor_t x = gc_randn(3, d, 4), dy = gc_randn(3, e, 5);
  syno_nn_zero_grad(slot);
  assert_int_equal(syno_nn_forward(slot, &x, 1), 0);
  assert_int_equal(syno_nn_backward(slot, &dy), 0);

  syno_vars_t v = *syno_graph_vars(op->g);
  v.nbind = 0;
  if (syno_vars_bind(&v, "N=2,S=3,C_in=8,C_out=6", &err)) fail_msg("%s", err.msg);
  syno_lowered_t *low = malloc(sizeof *low);
  assert_non_null(low);
  if (syno_lower(&op->op, low, &err)) fail_msg("%s", err.msg);
  const float *t[2] = {x.data, ps[0]->value.data};
  int64_t nw = syno_nn_tensor_numel(&ps[0]->value);
  float *want = malloc(sizeof(float) * (size_t)(n * sl * (ci > co ? ci : co) + nw));
  if (syno_interp_nest(&low->forward, &v, 0, t, NULL, want, &err)) fail_msg("%s", err.msg);
  assert_true(max_diff(slot->out.data, want, n * sl * co) < 1e-5);
  if (syno_interp_nest(&low->backward[0], &v, 0, t, dy.data, want, &err)) fail_msg("%s", err.msg);
  assert_true(max_diff(slot->grad_in.data, want, n * sl * ci) < 1e-5);
  if (syno_interp_nest(&low->backward[1], &v, 0, t, dy.data, want, &err)) fail_msg("%s", err.msg);
  assert_true(max_diff(ps[0]->grad.data, want, nw) < 1e-5);
  free(want);
  free(low);
  syno_nn_tensor_free(&x);
  syno_nn_tensor_free(&dy);
  syno_nn_layer_free(slot);
  syno_slotop_free(op);
}

static void test_linear_slot_gradcheck(void **state) {
  (void)state;
  syno_error_t err = {0};
  syno_slotop_t *op = NULL;
  if (syno_slotop_parse_preset("linear-wide", GROUPED, &op, &err)) fail_msg("%s", err.msg);
  syno_rng_t rng;
  syno_rng_seed(&rng, 3, 1);
  syno_layer_t *s1 = NULL, *s2 = NULL, *s3 = NULL;
  assert_int_equal(syno_slot_linear_create(op, 4, 8, 3, &rng, &s1, &err), 0);
  assert_int_equal(syno_slot_linear_create(op, 8, 4, 3, &rng, &s2, &err), 0);
  assert_int_equal(syno_slot_linear_create(NULL, 4, 2, 3, &rng, &s3, &err), 0);
  syno_layer_t *ls[4] = {s1, syno_nn_gelu_create(), s2, s3};
  syno_layer_t *net = syno_nn_sequential_create(4, ls);
  assert_non_null(net);
  int64_t d[3] = {2, 3, 4};
  syno_tensor_t x = gc_randn(3, d, 4);
  assert_int_equal(gc_layer(net, &x, &GC_DEFAULT, 11), 0);
  syno_nn_tensor_free(&x);
  syno_nn_layer_free(net);
  syno_slotop_free(op);
}

static void test_presets(void **state) {
  (void)state;
  syno_error_t err = {0};
  syno_slotop_t *op = NULL;
  /* the conv2d builtin is not a linear-preset operator, nor the linear one a conv2d one */
  assert_int_not_equal(syno_slotop_parse_preset("linear-wide", syno_builtin_find("conv2d")->text, &op, &err), 0);
  assert_null(op);
  assert_non_null(strstr(err.msg, "linear"));
  assert_int_not_equal(syno_slotop_parse_preset("conv2d", LINEAR, &op, &err), 0);
  assert_int_not_equal(syno_slotop_parse_preset("pool", LINEAR, &op, &err), 0);
  assert_non_null(strstr(err.msg, "unknown preset 'pool'"));
  /* NULL is the conv2d preset (a 1x1 convolution is written alike in both conv presets) */
  assert_int_equal(syno_slotop_parse_preset(
                       NULL, "r0=sum(C_in); in[i0, share(r0, 1), i2, i3] expand[share(i1, 1)] w1[r0, i1]", &op, &err),
                   0);
  assert_string_equal(op->sig.name, "conv2d");
  /* a conv2d operator does not fit a linear slot (and vice versa) */
  syno_rng_t rng;
  syno_rng_seed(&rng, 1, 1);
  syno_layer_t *l = NULL;
  assert_int_not_equal(syno_slot_linear_create(op, 4, 4, 2, &rng, &l, &err), 0);
  assert_null(l);
  assert_non_null(strstr(err.msg, "conv2d preset"));
  syno_slotop_free(op);
  assert_int_equal(syno_slotop_parse_preset("linear-wide", LINEAR, &op, &err), 0);
  assert_int_not_equal(syno_slot_create(op, 4, 4, 2, 2, 0, &rng, &l, &err), 0);
  /* a grouped linear needs C_in and C_out divisible by the groups */
  syno_slotop_free(op);
  assert_int_equal(syno_slotop_parse_preset("linear-wide", GROUPED, &op, &err), 0);
  assert_int_not_equal(syno_slot_linear_create(op, 5, 4, 2, &rng, &l, &err), 0);
  assert_non_null(strstr(err.msg, "linear slot S=2 C_in=5 C_out=4"));
  syno_slotop_free(op);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_standard_equals_linear),
      cmocka_unit_test(test_synthesized_matches_linear),
      cmocka_unit_test(test_grouped_matches_interpreter),
      cmocka_unit_test(test_linear_slot_gradcheck),
      cmocka_unit_test(test_presets),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
