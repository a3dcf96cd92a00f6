/* Operator signatures: the presets' variables and shapes, and the binding
 * of a conv slot in a signature's variables (syno/signature.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "syno/signature.h"

static void test_presets(void **state) {
  (void)state;
  syno_signature_t sig;
  syno_error_t err;
  assert_int_equal(syno_signature_preset("conv2d", "", &sig, &err), 0);
  assert_string_equal(sig.name, "conv2d");
  assert_int_equal(sig.kind, SYNO_SIG_CONV);
  assert_int_equal(sig.input.rank, 4);
  assert_int_equal(sig.n_fixed, 1);
  /* the published vision signature: square, its four coefficients */
  assert_int_equal(syno_vars_find(&sig.vars, "W", NULL, NULL), -1);
  const char *coeffs[] = {"k_1", "k_2", "s", "g"};
  for (int i = 0; i < 4; i++) {
    syno_var_kind_t kind;
    assert_int_equal(syno_vars_find(&sig.vars, coeffs[i], &kind, NULL), 0);
    assert_int_equal(kind, SYNO_COEFF);
  }
  assert_int_equal(syno_signature_preset("conv2d-wide", "", &sig, &err), 0);
  assert_int_equal(syno_vars_find(&sig.vars, "W", NULL, NULL), 0);
  assert_int_equal(syno_signature_preset("linear-wide", "N=2, S=4", &sig, &err), 0);
  assert_int_equal(sig.kind, SYNO_SIG_LINEAR);
  assert_int_equal(sig.n_fixed, 2);
  assert_int_not_equal(syno_signature_preset("conv3d", "", &sig, &err), 0);
  assert_non_null(strstr(err.msg, "unknown preset 'conv3d' (known: conv2d, conv2d-wide, linear, linear-wide)"));
  assert_int_not_equal(syno_signature_preset("conv2d", "W=3", &sig, &err), 0);
}

static void test_conv_binding(void **state) {
  (void)state;
  syno_signature_t sig;
  syno_error_t err;
  char buf[128];
  assert_int_equal(syno_signature_preset("conv2d", "", &sig, &err), 0);
  assert_int_equal(syno_signature_conv_binding(&sig, 1, 4, 8, 6, 6, buf, sizeof buf, &err), 0);
  assert_string_equal(buf, "N=1,C_in=4,C_out=8,H=6");
  assert_int_not_equal(syno_signature_conv_binding(&sig, 1, 4, 8, 6, 5, buf, sizeof buf, &err), 0);
  assert_non_null(strstr(err.msg, "square"));
  assert_int_not_equal(syno_signature_conv_binding(&sig, 1, 4, 8, 6, 6, buf, 10, &err), 0);
  assert_int_equal(syno_signature_preset("conv2d-wide", "", &sig, &err), 0);
  assert_int_equal(syno_signature_conv_binding(&sig, 2, 4, 8, 6, 5, buf, sizeof buf, &err), 0);
  assert_string_equal(buf, "N=2,C_in=4,C_out=8,H=6,W=5");
  assert_int_equal(syno_signature_preset("linear", "", &sig, &err), 0);
  assert_int_not_equal(syno_signature_conv_binding(&sig, 1, 4, 8, 6, 6, buf, sizeof buf, &err), 0);
}

/* linear is the original's GPT-2 signature: it binds a fused QKV projection
 * (t = C_out / C_in), not a slot whose output is not a multiple of its input;
 * linear-wide binds any linear slot. */
static void test_linear_binding(void **state) {
  (void)state;
  syno_signature_t sig;
  syno_error_t err;
  char buf[128];
  assert_int_equal(syno_signature_preset("linear", "", &sig, &err), 0);
  assert_true(sig.qkv_only);
  assert_int_equal(sig.n_fixed, 2);
  assert_int_equal(syno_signature_linear_binding(&sig, 2, 16, 8, 24, buf, sizeof buf, &err), 0);
  assert_string_equal(buf, "N=2,seq_len=16,H_in=8,t=3");
  assert_int_not_equal(syno_signature_linear_binding(&sig, 2, 16, 32, 8, buf, sizeof buf, &err), 0);
  assert_non_null(strstr(err.msg, "t*H_in"));
  assert_float_equal(syno_signature_std_flops(sig.kind, &sig.vars, &sig.input, &sig.output, 0),
                     2.0 * 8 * 64 * 384 * 128, 1);
  assert_int_equal(syno_signature_preset("linear-wide", "", &sig, &err), 0);
  assert_false(sig.qkv_only);
  assert_int_equal(syno_signature_linear_binding(&sig, 2, 16, 32, 8, buf, sizeof buf, &err), 0);
  assert_string_equal(buf, "N=2,S=16,C_in=32,C_out=8");
  assert_int_equal(syno_signature_preset("conv2d", "", &sig, &err), 0);
  assert_int_not_equal(syno_signature_linear_binding(&sig, 2, 16, 32, 8, buf, sizeof buf, &err), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_presets), cmocka_unit_test(test_conv_binding),
                                     cmocka_unit_test(test_linear_binding)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
