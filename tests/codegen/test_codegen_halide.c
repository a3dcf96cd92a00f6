/* The Halide emitter against the reference interpreter: every builtin and at least 200
 * distinct operators sampled from the conv2d search space are emitted as Halide generators,
 * all of them put into one C++ translation unit that is compiled and linked with GenGen.cpp
 * once; the generator program is then run once per operator (target=host for the first, which
 * carries the Halide runtime, host-no_runtime for the rest; no autoscheduler), the objects
 * linked into one shared object and loaded with dlopen. Each forward must equal
 * syno_interp_nest on random inputs to 1e-4 relative error. Without libHalide or a C++
 * compiler the test exits 77 (ctest: skipped) after saying why. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "syno/codegen.h"
#include "syno/kernels.h"
#include "syno/space.h"
#include "synotest.h"

#define MAX_CASES 400

typedef struct {
  char text[4096], name[64];
  int n_tensors;
  float *t[SYNO_MAX_TENSORS], *want;
  int rank[SYNO_MAX_TENSORS + 1];
  int64_t shape[SYNO_MAX_TENSORS + 1][SYNO_MAX_RANK];
  int64_t n_out;
} case_t;

static case_t cases[MAX_CASES];
static int n_cases;
static char tmpdir[256];
static FILE *tu;

static void prepare(const syno_operator_t *op, syno_rng_t *rng) {
  assert_true(n_cases < MAX_CASES);
  case_t *c = &cases[n_cases];
  syno_error_t err;
  const syno_vars_t *v = syno_graph_vars(op->g);
  syno_operator_print(op, c->text, sizeof c->text);
  syno_codegen_halide_name(op, 0, c->name, sizeof c->name);
  for (int k = 0; k < n_cases; k++)
    if (!strcmp(cases[k].name, c->name)) return; /* the same operator at the same binding */
  int len = syno_codegen_halide(op, 0, NULL, 0, &err);
  if (len < 0) fail_msg("codegen halide: '%s': %s", c->text, err.msg);
  char *code = malloc((size_t)len + 1);
  assert_int_equal(syno_codegen_halide(op, 0, code, (size_t)len + 1, &err), len);
  fputs(code, tu);
  fputs("\n", tu);
  free(code);
  c->n_tensors = op->n_tensors;
  if (syno_operator_extents(op, v, 0, c->rank, c->shape, &err)) fail_msg("%s", err.msg);
  syno_nest_t *nest = malloc(sizeof *nest);
  if (syno_lower_forward(op, nest, &err)) fail_msg("%s", err.msg);
  for (int i = 0; i < op->n_tensors; i++) {
    int64_t n;
    assert_int_equal(syno_tensor_numel(op, i, 0, &n, &err), 0);
    c->t[i] = st_random(rng, n);
  }
  assert_int_equal(syno_output_numel(op, 0, &c->n_out, &err), 0);
  c->want = malloc(sizeof(float) * (size_t)c->n_out);
  if (syno_interp_nest(nest, v, 0, (const float *const *)c->t, NULL, c->want, &err)) fail_msg("%s", err.msg);
  free(nest);
  n_cases++;
}

static void prepare_one(const syno_operator_t *op, void *rng) { prepare(op, rng); }

static void sh(const char *cmd) {
  if (system(cmd) != 0) fail_msg("failed: %s", cmd);
}

static void test_equivalence(void **state) {
  (void)state;
  char path[512], cmd[2048];
  snprintf(path, sizeof path, "%s/all.cpp", tmpdir);
  tu = fopen(path, "w");
  assert_non_null(tu);
  syno_rng_t rng;
  syno_rng_seed(&rng, 3, 0);
  int builtins = 0;
  for (int i = 0; syno_builtin_at(i); i++) {
    st_op_t o;
    st_op_builtin(&o, syno_builtin_at(i)->name, st_builtin_small_binding(syno_builtin_at(i)->name));
    prepare(&o.op, &rng);
    st_op_free(&o);
    builtins++;
  }
  /* The sample test_codegen_c draws: the conv2d preset at depth 7. */
  int drawn, n = st_sample_distinct("{\"preset\": \"conv2d\", \"bind\": \"N=2, C_in=4, C_out=4, H=6\", \"depth\": 7}",
                                    5, 200, prepare_one, &rng, &drawn);
  fclose(tu);
  assert_true(n >= 200);

  /* One translation unit, one link with GenGen, then one generator run per operator (two
   * shell scripts side by side, one per core). */
  snprintf(cmd, sizeof cmd,
           "cd %s && c++ -std=c++17 -fno-rtti -O0 -I/usr/include/halide14 all.cpp /usr/src/halide14/GenGen.cpp "
           "-o gen -lHalide14 -ldl -lpthread",
           tmpdir);
  sh(cmd);
  for (int part = 0; part < 2; part++) {
    snprintf(path, sizeof path, "%s/run%d.sh", tmpdir, part);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "set -e\ncd %s\n", tmpdir);
    for (int k = part; k < n_cases; k += 2)
      fprintf(f, "./gen -g %s -f op%d -o . -e object target=%s\n", cases[k].name, k,
              k == 0 ? "host" : "host-no_runtime");
    fclose(f);
  }
  snprintf(cmd, sizeof cmd,
           "cd %s && (sh run0.sh & p=$!; sh run1.sh; s=$?; wait $p && [ $s -eq 0 ]) && "
           "c++ -shared -o ops.so op*.o -ldl -lpthread",
           tmpdir);
  sh(cmd);
  snprintf(path, sizeof path, "%s/ops.so", tmpdir);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) fail_msg("dlopen: %s", dlerror());
  int agree = 0;
  double max_err = 0;
  for (int k = 0; k < n_cases; k++) {
    case_t *c = &cases[k];
    char sym[64];
    snprintf(sym, sizeof sym, "op%d_argv", k);
    syno_hl_fn_t fn;
    *(void **)&fn = dlsym(h, sym);
    if (!fn) fail_msg("%s is missing from the shared object", sym);
    float *got = malloc(sizeof(float) * (size_t)c->n_out);
    for (int64_t i = 0; i < c->n_out; i++) got[i] = NAN;
    syno_hl_buffer_t b[SYNO_MAX_TENSORS + 1];
    syno_hl_dim_t d[SYNO_MAX_TENSORS + 1][SYNO_MAX_RANK];
    void *args[SYNO_MAX_TENSORS + 1];
    for (int t = 0; t <= c->n_tensors; t++) {
      syno_hl_buffer_init(&b[t], d[t], t < c->n_tensors ? c->t[t] : got, c->rank[t], c->shape[t]);
      args[t] = &b[t];
    }
    int rc = fn(args);
    double e = st_rel_err(got, c->want, c->n_out);
    if (rc == 0 && e <= 1e-4)
      agree++;
    else
      print_message("DIFFERS: '%s': Halide status %d, rel err %g\n", c->text, rc, e);
    if (e > max_err) max_err = e;
    free(got);
    free(c->want);
    for (int t = 0; t < c->n_tensors; t++) free(c->t[t]);
  }
  dlclose(h);
  print_message("%d builtins and %d distinct conv2d-preset operators (of %d drawn) through Halide\n", builtins, n,
                drawn);
  print_message("%d of %d agree, max rel err %.3g\n", agree, n_cases, max_err);
  assert_int_equal(agree, n_cases);
}

static void test_bad_binding(void **state) {
  (void)state;
  st_check_emitter_bindings(syno_codegen_halide, 3);
}

int main(void) {
  syno_error_t err;
  if (syno_kernels_available(&err)) {
    printf("SKIP: %s\n", err.msg);
    return 77;
  }
  snprintf(tmpdir, sizeof tmpdir, "/tmp/syno-halide-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_binding),
      cmocka_unit_test(test_equivalence),
  };
  int r = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpdir);
  return r;
}
