/* Tensors and parameters: allocation, views, resizing that reuses storage, copies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "syno/nn.h"

static void test_alloc_zeroed_aligned(void **state) {
  (void)state;
  syno_tensor_t t = SYNO_TENSOR_EMPTY;
  int64_t d[4] = {2, 3, 4, 5};
  assert_int_equal(syno_nn_tensor_alloc(&t, 4, d), SYNO_NN_OK);
  assert_int_equal(syno_nn_tensor_numel(&t), 120);
  assert_true(t.owned);
  assert_int_equal((uintptr_t)t.data % 64, 0);
  for (int i = 0; i < 120; i++) assert_true(t.data[i] == 0.0f);
  syno_nn_tensor_free(&t);
  assert_null(t.data);
  assert_int_equal(t.ndim, 0);
  syno_nn_tensor_free(&t); /* freeing twice is harmless */
}

static void test_bad_shapes(void **state) {
  (void)state;
  syno_tensor_t t = SYNO_TENSOR_EMPTY;
  int64_t neg[2] = {2, -1}, huge[3] = {INT64_C(1) << 30, INT64_C(1) << 30, 4};
  int64_t seven[7] = {1, 1, 1, 1, 1, 1, 1};
  assert_int_equal(syno_nn_tensor_alloc(&t, 2, neg), SYNO_NN_ESHAPE);
  assert_int_equal(syno_nn_tensor_alloc(&t, 3, huge), SYNO_NN_ESHAPE);
  assert_int_equal(syno_nn_tensor_alloc(&t, 7, seven), SYNO_NN_ESHAPE);
  assert_null(t.data);
}

static void test_resize_reuses_storage(void **state) {
  (void)state;
  syno_tensor_t t = SYNO_TENSOR_EMPTY;
  int64_t big[2] = {64, 10}, small[2] = {17, 10}, bigger[2] = {65, 10};
  assert_int_equal(syno_nn_tensor_resize(&t, 2, big), 0);
  float *p = t.data;
  assert_int_equal(syno_nn_tensor_resize(&t, 2, small), 0);
  assert_ptr_equal(t.data, p); /* an epoch's short last batch keeps the buffer */
  assert_int_equal(t.dims[0], 17);
  assert_int_equal(t.capacity, 640);
  assert_int_equal(syno_nn_tensor_resize(&t, 2, bigger), 0);
  assert_int_equal(t.capacity, 650);
  syno_nn_tensor_free(&t);
}

static void test_views_copy_reshape(void **state) {
  (void)state;
  float buf[12];
  for (int i = 0; i < 12; i++) buf[i] = (float)i;
  int64_t d[2] = {3, 4}, r[3] = {2, 2, 3}, wrong[2] = {5, 2};
  syno_tensor_t v = syno_nn_tensor_view(buf, 2, d), rv, c = SYNO_TENSOR_EMPTY;
  assert_false(v.owned);
  assert_int_equal(syno_nn_tensor_reshape(&v, 3, r, &rv), 0);
  assert_ptr_equal(rv.data, buf);
  assert_int_equal(syno_nn_tensor_reshape(&v, 2, wrong, &rv), SYNO_NN_ESHAPE);
  assert_int_equal(syno_nn_tensor_copy(&c, &v), 0);
  assert_true(c.owned);
  assert_true(syno_nn_tensor_same_shape(&c, &v));
  assert_memory_equal(c.data, buf, sizeof buf);
  syno_nn_tensor_fill(&c, 2.5f);
  assert_true(c.data[11] == 2.5f && buf[11] == 11.0f);
  /* Resizing a view gives it its own storage and never touches (or frees) the original. */
  assert_int_equal(syno_nn_tensor_resize(&v, 2, d), 0);
  assert_true(v.owned && v.data != buf);
  syno_nn_tensor_zero(&c);
  assert_true(c.data[3] == 0.0f);
  syno_nn_tensor_free(&v); /* frees v's new storage only */
  syno_nn_tensor_free(&c);
  syno_tensor_t view = syno_nn_tensor_view(buf, 2, d);
  syno_nn_tensor_free(&view);
  assert_true(buf[5] == 5.0f);
}

static void test_params(void **state) {
  (void)state;
  syno_param_t p;
  int64_t d[2] = {3, 2};
  assert_int_equal(syno_nn_param_init(&p, "weight", 2, d), 0);
  assert_string_equal(p.name, "weight");
  assert_true(syno_nn_tensor_same_shape(&p.value, &p.grad));
  assert_int_equal(p.no_decay, 0);
  syno_nn_param_free(&p);
  assert_string_equal(syno_nn_status_str(SYNO_NN_ESHAPE), "tensor shape does not fit the layer");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alloc_zeroed_aligned),
      cmocka_unit_test(test_bad_shapes),
      cmocka_unit_test(test_resize_reuses_storage),
      cmocka_unit_test(test_views_copy_reshape),
      cmocka_unit_test(test_params),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
