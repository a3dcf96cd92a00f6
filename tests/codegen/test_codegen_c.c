/* The C emitter against the reference interpreter: every builtin and at
 * least 200 distinct operators sampled from the conv2d search space are
 * emitted, compiled by the system cc (-std=c11 -O2 -Wall -Wextra -Werror)
 * into a shared object, loaded with dlopen and run on random data. The
 * output must match syno_interp_nest, and the gradients of the input and of
 * every weight from syno_op_backward must match syno_interp_grad_scatter
 * (which walks the forward nest, independent of the backward nests the C
 * code is made from), each to 1e-4 relative error. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "syno/codegen.h"
#include "syno/space.h"
#include "synotest.h"

typedef void (*forward_fn)(const float *, const float *const *, float *);
typedef void (*backward_fn)(const float *, const float *const *, const float *, float *, float *const *);

static char tmpdir[256];
/* The largest relative errors seen: forward, gradients. */
static double max_err[2];

/* Cases are compiled in batches: one cc run per batch builds every emitted
 * file into one shared object (each file renames its function with a
 * #define in front of the generated text), which keeps the test fast. */
#define MAX_CASES 110
typedef struct {
  char text[4096];
  int n_tensors;
  float *t[SYNO_MAX_TENSORS], *gout;
  float *want, *want_g[SYNO_MAX_TENSORS];
  int64_t n_out, numel[SYNO_MAX_TENSORS];
} case_t;
static case_t cases[MAX_CASES];
static int n_cases;

static void prepare(const syno_operator_t *op, syno_rng_t *rng) {
  assert_true(n_cases < MAX_CASES);
  case_t *c = &cases[n_cases];
  syno_error_t err;
  const syno_vars_t *v = syno_graph_vars(op->g);
  syno_operator_print(op, c->text, sizeof c->text);
  int len = syno_codegen_c(op, 0, NULL, 0, &err);
  if (len < 0) fail_msg("codegen c: '%s': %s", c->text, err.msg);
  char *code = malloc((size_t)len + 1);
  assert_int_equal(syno_codegen_c(op, 0, code, (size_t)len + 1, &err), len);
  char src[300];
  snprintf(src, sizeof src, "%s/op%03d.c", tmpdir, n_cases);
  FILE *f = fopen(src, "w");
  assert_non_null(f);
  fprintf(f, "#define syno_op_forward syno_op_forward_%d\n#define syno_op_backward syno_op_backward_%d\n", n_cases,
          n_cases);
  fputs(code, f);
  fclose(f);
  free(code);
  syno_nest_t *nest = malloc(sizeof *nest);
  if (syno_lower_forward(op, nest, &err)) fail_msg("%s", err.msg);
  c->n_tensors = op->n_tensors;
  for (int i = 0; i < op->n_tensors; i++) {
    assert_int_equal(syno_tensor_numel(op, i, 0, &c->numel[i], &err), 0);
    c->t[i] = st_random(rng, c->numel[i]);
  }
  assert_int_equal(syno_output_numel(op, 0, &c->n_out, &err), 0);
  c->want = malloc(sizeof(float) * (size_t)c->n_out);
  if (syno_interp_nest(nest, v, 0, (const float *const *)c->t, NULL, c->want, &err)) fail_msg("%s", err.msg);
  c->gout = st_random(rng, c->n_out);
  for (int i = 0; i < op->n_tensors; i++) {
    c->want_g[i] = malloc(sizeof(float) * (size_t)c->numel[i]);
    if (syno_interp_grad_scatter(nest, v, 0, i, (const float *const *)c->t, c->gout, c->want_g[i], &err))
      fail_msg("%s", err.msg);
  }
  free(nest);
  n_cases++;
}

/* Compiles every prepared case, runs each, compares, and clears the batch. */
static void run_batch(void) {
  char so[300], cmd[1024];
  snprintf(so, sizeof so, "%s/batch.so", tmpdir);
  snprintf(cmd, sizeof cmd, "cd %s && cc -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared -o batch.so op*.c", tmpdir);
  if (system(cmd) != 0) fail_msg("generated code does not compile: %s", cmd);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!h) fail_msg("dlopen: %s", dlerror());
  for (int k = 0; k < n_cases; k++) {
    case_t *c = &cases[k];
    char name[64];
    snprintf(name, sizeof name, "syno_op_forward_%d", k);
    forward_fn fwd;
    *(void **)&fwd = dlsym(h, name);
    if (!fwd) fail_msg("%s is missing from the shared object", name);
    float *got = malloc(sizeof(float) * (size_t)c->n_out);
    for (int64_t i = 0; i < c->n_out; i++) got[i] = NAN;
    fwd(c->t[0], (const float *const *)(c->t + 1), got);
    double e = st_rel_err(got, c->want, c->n_out);
    if (!(e <= 1e-4)) fail_msg("'%s': generated C differs from the interpreter, rel err %g", c->text, e);
    if (e > max_err[0]) max_err[0] = e;
    free(got);
    snprintf(name, sizeof name, "syno_op_backward_%d", k);
    backward_fn bwd;
    *(void **)&bwd = dlsym(h, name);
    if (!bwd) fail_msg("%s is missing from the shared object", name);
    float *g[SYNO_MAX_TENSORS];
    for (int i = 0; i < c->n_tensors; i++) {
      g[i] = malloc(sizeof(float) * (size_t)c->numel[i]);
      for (int64_t j = 0; j < c->numel[i]; j++) g[i][j] = NAN;
    }
    bwd(c->t[0], (const float *const *)(c->t + 1), c->gout, g[0], g + 1);
    for (int i = 0; i < c->n_tensors; i++) {
      e = st_rel_err(g[i], c->want_g[i], c->numel[i]);
      if (!(e <= 1e-4)) fail_msg("'%s': generated C gradient of tensor %d differs, rel err %g", c->text, i, e);
      if (e > max_err[1]) max_err[1] = e;
      free(g[i]);
      free(c->want_g[i]);
    }
    free(c->want);
    free(c->gout);
    for (int i = 0; i < c->n_tensors; i++) free(c->t[i]);
    snprintf(cmd, sizeof cmd, "%s/op%03d.c", tmpdir, k);
    unlink(cmd);
  }
  dlclose(h);
  unlink(so);
  n_cases = 0;
}

static void test_builtins(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 3, 0);
  int checked = 0;
  for (int i = 0; syno_builtin_at(i); i++) {
    const char *bind = st_builtin_small_binding(syno_builtin_at(i)->name);
    st_op_t o;
    st_op_builtin(&o, syno_builtin_at(i)->name, bind);
    prepare(&o.op, &rng);
    st_op_free(&o);
    checked++;
  }
  run_batch();
  assert_true(checked >= 6);
}

static void prepare_one(const syno_operator_t *op, void *rng) {
  if (n_cases == MAX_CASES) run_batch();
  prepare(op, rng);
}

/* The conv2d preset, the space searches explore, at depth 7 (fewer steps give under 200
 * distinct operators at this small binding). */
static void test_sampled(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 6, 0);
  int drawn, n = st_sample_distinct("{\"preset\": \"conv2d\", \"bind\": \"N=2, C_in=4, C_out=4, H=6\", \"depth\": 7}",
                                    5, 200, prepare_one, &rng, &drawn);
  run_batch();
  print_message("%d distinct conv2d-preset operators (of %d drawn) compiled and checked, forward and every gradient\n",
                n, drawn);
  print_message("max relative error: forward %.3g, gradients %.3g\n", max_err[0], max_err[1]);
  assert_true(n >= 200);
}

static void test_bad_binding(void **state) {
  (void)state;
  st_check_emitter_bindings(syno_codegen_c, 5);
  st_check_emitter_bindings(syno_codegen_pytorch, -1);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/syno-codegen-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_binding),
      cmocka_unit_test(test_builtins),
      cmocka_unit_test(test_sampled),
  };
  int r = cmocka_run_group_tests(tests, NULL, NULL);
  rmdir(tmpdir);
  return r;
}
