/* The Halide kernels layer (syno/kernels.h) end to end, in a private cache directory: a
 * small convolution compiled with the default autoscheduler (Adams2019) equals the
 * interpreter; asking again loads it from the cache without compiling; a missing toolchain
 * and a failing compiler are errors naming the cause, not crashes. Without libHalide or a
 * C++ compiler the test exits 77 (ctest: skipped) after saying why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "syno/kernels.h"
#include "synotest.h"

static char cache[256];

/* The operator's forward through a kernel and through the interpreter. */
static void check_equal(const st_op_t *o, syno_kernel_t *k) {
  syno_rng_t rng;
  syno_rng_seed(&rng, 11, 0);
  syno_error_t err;
  float *t[SYNO_MAX_TENSORS];
  for (int i = 0; i < o->op.n_tensors; i++) {
    int64_t n;
    assert_int_equal(syno_tensor_numel(&o->op, i, 0, &n, &err), 0);
    t[i] = st_random(&rng, n);
  }
  syno_nest_t *fwd = malloc(sizeof *fwd);
  if (syno_lower_forward(&o->op, fwd, &err)) fail_msg("%s", err.msg);
  float *want = st_forward(o, fwd, 0, t);
  int64_t n_out;
  assert_int_equal(syno_output_numel(&o->op, 0, &n_out, &err), 0);
  float *got = malloc(sizeof(float) * (size_t)n_out);
  if (syno_kernel_forward(k, (const float *const *)t, got, &err)) fail_msg("%s", err.msg);
  double e = st_rel_err(got, want, n_out);
  print_message("kernel vs interpreter: relative error %.3g over %lld outputs\n", e, (long long)n_out);
  assert_true(e <= 1e-4);
  free(got);
  free(want);
  free(fwd);
  for (int i = 0; i < o->op.n_tensors; i++) free(t[i]);
}

static void test_compile_and_cache(void **state) {
  (void)state;
  st_op_t o;
  st_op_builtin(&o, "conv2d", "N=2, C_in=4, C_out=8, H=10, W=10, k=3");
  syno_error_t err;
  syno_kernel_t *k = NULL;
  syno_kernel_info_t info;
  if (syno_kernel_get(&o.op, 0, SYNO_SCHED_ADAMS2019, &k, &info, &err)) fail_msg("%s", err.msg);
  assert_false(info.cached);
  print_message("compiled with Adams2019 in %.1f s: %s\n", info.compile_s, info.path);
  assert_int_equal(strncmp(info.path, cache, strlen(cache)), 0);
  syno_kernel_set_threads(k, 1);
  check_equal(&o, k);
  syno_kernel_free(k);
  /* The second request is a cache hit, and the loaded kernel computes the same. */
  if (syno_kernel_get(&o.op, 0, SYNO_SCHED_ADAMS2019, &k, &info, &err)) fail_msg("%s", err.msg);
  assert_true(info.cached);
  assert_true(info.compile_s == 0);
  check_equal(&o, k);
  syno_kernel_free(k);
  st_op_free(&o);
}

static void test_unscheduled(void **state) {
  (void)state;
  /* A sampled-looking operator with a Mean and padding, without an autoscheduler. */
  st_op_t o;
  st_op_builtin(&o, "avgpool2d", st_builtin_small_binding("avgpool2d"));
  syno_error_t err;
  syno_kernel_t *k = NULL;
  if (syno_kernel_get(&o.op, 0, SYNO_SCHED_NONE, &k, NULL, &err)) fail_msg("%s", err.msg);
  check_equal(&o, k);
  syno_kernel_free(k);
  st_op_free(&o);
}

static void test_errors(void **state) {
  (void)state;
  st_op_t o;
  st_op_builtin(&o, "linear", "");
  syno_error_t err;
  syno_kernel_t *k = (syno_kernel_t *)&o; /* must be reset to NULL on failure */
  setenv("SYNO_HALIDE_INCLUDE", "/nonexistent/halide", 1);
  assert_int_equal(syno_kernel_get(&o.op, 0, SYNO_SCHED_NONE, &k, NULL, &err), -1);
  assert_null(k);
  print_message("without Halide.h: %s\n", err.msg);
  assert_non_null(strstr(err.msg, "/nonexistent/halide/Halide.h is missing"));
  assert_non_null(strstr(err.msg, "libhalide14-0-dev"));
  unsetenv("SYNO_HALIDE_INCLUDE");
  setenv("SYNO_CXX", "/nonexistent/c++", 1);
  assert_int_equal(syno_kernel_get(&o.op, 0, SYNO_SCHED_NONE, &k, NULL, &err), -1);
  assert_non_null(strstr(err.msg, "no C++ compiler '/nonexistent/c++'"));
  /* A compiler that fails: the message carries its output. */
  char fake[300];
  snprintf(fake, sizeof fake, "%s/fakecxx", cache);
  FILE *f = fopen(fake, "w");
  assert_non_null(f);
  fputs("#!/bin/sh\necho 'fakecxx: this compiler refuses' >&2\nexit 3\n", f);
  fclose(f);
  assert_int_equal(chmod(fake, 0755), 0);
  setenv("SYNO_CXX", fake, 1);
  assert_int_equal(syno_kernel_get(&o.op, 0, SYNO_SCHED_NONE, &k, NULL, &err), -1);
  print_message("a failing compiler: %s\n", err.msg);
  assert_non_null(strstr(err.msg, "failed (exit 3)"));
  assert_non_null(strstr(err.msg, "fakecxx: this compiler refuses"));
  unsetenv("SYNO_CXX");
  unlink(fake);
  st_op_free(&o);
}

static void test_names(void **state) {
  (void)state;
  syno_kernels_t k;
  assert_int_equal(syno_kernels_parse("best", &k), 0);
  assert_int_equal(k, SYNO_KERNELS_BEST);
  assert_int_equal(syno_kernels_parse("bogus", &k), -1);
  syno_sched_t s;
  assert_int_equal(syno_sched_parse("li2018", &s), 0);
  assert_int_equal(s, SYNO_SCHED_LI2018);
  assert_string_equal(syno_sched_name(SYNO_SCHED_MULLAPUDI2016), "Mullapudi2016");
  assert_int_equal(syno_sched_parse("fast", &s), -1);
}

int main(void) {
  syno_error_t err;
  if (syno_kernels_available(&err)) {
    printf("SKIP: %s\n", err.msg);
    return 77;
  }
  snprintf(cache, sizeof cache, "/tmp/syno-kernels-XXXXXX");
  if (!mkdtemp(cache)) {
    perror("mkdtemp");
    return 1;
  }
  setenv("SYNO_KERNEL_CACHE", cache, 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_compile_and_cache),
      cmocka_unit_test(test_unscheduled),
      cmocka_unit_test(test_errors),
  };
  int r = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", cache);
  return r;
}
