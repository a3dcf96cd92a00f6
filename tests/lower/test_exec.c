/* The executor (syno/exec.h) against the reference interpreter: forward and
 * every gradient, on the standard operators. */
#include <stdlib.h>

#include "syno/exec.h"
#include "synotest.h"

static void check_builtin(const char *name, const char *bind) {
  st_op_t o;
  st_op_builtin(&o, name, bind);
  syno_error_t err = {0};
  syno_exec_t *e = NULL;
  assert_int_equal(syno_exec_new(&o.op, syno_graph_vars(o.g), 0, &e, &err), 0);
  syno_lowered_t *low = malloc(sizeof *low);
  assert_int_equal(syno_lower(&o.op, low, &err), 0);
  syno_rng_t rng;
  syno_nn_rng_seed(&rng, 7, 1);
  float *t[SYNO_MAX_TENSORS] = {0}, *g[SYNO_MAX_TENSORS] = {0}, *ref[SYNO_MAX_TENSORS] = {0};
  for (int i = 0; i < o.op.n_tensors; i++) {
    t[i] = st_random(&rng, syno_exec_numel(e, i));
    g[i] = calloc((size_t)syno_exec_numel(e, i), sizeof(float));
    ref[i] = calloc((size_t)syno_exec_numel(e, i), sizeof(float));
  }
  int64_t n_out = syno_exec_numel(e, -1);
  float *out = calloc((size_t)n_out, sizeof(float));
  float *gout = st_random(&rng, n_out);
  float *want = st_forward(&o, &low->forward, 0, t);
  assert_int_equal(syno_exec_forward(e, (const float *const *)t, out, &err), 0);
  assert_true(st_rel_err(out, want, n_out) <= 1e-4);
  assert_int_equal(syno_exec_backward(e, (const float *const *)t, gout, g, &err), 0);
  for (int i = 0; i < o.op.n_tensors; i++) {
    assert_int_equal(syno_interp_grad_scatter(&low->forward, syno_graph_vars(o.g), 0, i, (const float *const *)t,
                                              gout, ref[i], &err),
                     0);
    double ge = st_rel_err(g[i], ref[i], syno_exec_numel(e, i));
    if (ge > 1e-4) fail_msg("%s: gradient of tensor %d differs from the scatter form by %g", name, i, ge);
  }
  for (int i = 0; i < o.op.n_tensors; i++) {
    free(t[i]);
    free(g[i]);
    free(ref[i]);
  }
  free(out);
  free(gout);
  free(want);
  free(low);
  syno_exec_free(e);
  st_op_free(&o);
}

static void test_standard_operators(void **state) {
  (void)state;
  check_builtin("conv2d", "N=2,C_in=4,C_out=8,H=6,W=6,k=3");
  check_builtin("grouped-conv2d", "N=2,C_in=4,C_out=4,H=6,W=6,k=3,g=2");
  check_builtin("linear", "N=3,C_in=5,C_out=7");
  check_builtin("avgpool2d", "N=2,C_in=3,H=6,W=6,k=2");
}

static void test_bad_binding(void **state) {
  (void)state;
  st_op_t o;
  st_op_builtin(&o, "linear", "");
  syno_error_t err = {0};
  syno_exec_t *e = NULL;
  assert_int_not_equal(syno_exec_new(&o.op, syno_graph_vars(o.g), 5, &e, &err), 0);
  assert_null(e);
  st_op_free(&o);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_standard_operators), cmocka_unit_test(test_bad_binding)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
