/* The TVM emitter against the reference interpreter, as far as it can be checked without
 * TVM (which cannot be installed here). Every builtin, 50 distinct conv2d-preset and 30
 * linear-preset operators are exported with syno_codegen_tvm; one python3 process imports each file
 * against a stand-in `tvm` package (tests/codegen/tvmstub: te.placeholder, reduce_axis,
 * compute, sum, tir.if_then_else and the relax BlockBuilder/VirtualMachine names the
 * export uses, evaluated with numpy broadcasting) and calls the file's run(x, weights),
 * which builds the Relax module for the arrays' shapes, "compiles" it and runs main, at the
 * exported binding and at another batch and size where the operator allows them (the file
 * reads every size from the tensors' shapes). The output must match syno_interp_nest at
 * that binding to 1e-4 relative error. The stand-in refuses what TVM refuses where it
 * matters here (a reduction below the top of a compute, Python's // or % on expressions,
 * a truth value of an expression) and turns an out-of-bounds read into NaN, so a read that
 * padding should have masked fails the test. What it cannot check: that real TVM accepts
 * the file, schedules it and compiles it.
 *
 * Needs python3 with numpy ($SYNO_PYTHON, python3, /usr/bin/python3); without, exits 77. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "syno/codegen.h"
#include "syno/space.h"
#include "synotest.h"

#define MAX_CASES 96

static char tmpdir[256];
static const char *python;

static const char *driver =
    "import importlib.util, os, sys\n"
    "import numpy as np\n"
    "sys.path.insert(0, sys.argv[2])\n"
    "import tvm\n"
    "assert 'tvmstub' in tvm.__file__, tvm.__file__\n"
    "root = sys.argv[1]\n"
    "for case in sorted(os.listdir(root)):\n"
    "    d = os.path.join(root, case)\n"
    "    if not os.path.isdir(d):\n"
    "        continue\n"
    "    spec = importlib.util.spec_from_file_location('op_' + case, os.path.join(d, 'op.py'))\n"
    "    mod = importlib.util.module_from_spec(spec)\n"
    "    spec.loader.exec_module(mod)\n"
    "    def load(name, shape):\n"
    "        return np.fromfile(os.path.join(d, name), dtype=np.float32).reshape(shape)\n"
    "    ws = [load('t%d' % t, s) for t, s in enumerate(mod.WEIGHT_SHAPES, 1)]\n"
    "    assert len(mod.weights()) == len(mod.WEIGHT_SHAPES)\n"
    "    for line in open(os.path.join(d, 'shapes')):\n"
    "        head, outs = line.split('/')\n"
    "        j, ins = head.split()[0], tuple(map(int, head.split()[1:]))\n"
    "        outs = tuple(map(int, outs.split()))\n"
    "        if j == '0':\n"
    "            assert ins == mod.IN_SHAPE and outs == mod.OUT_SHAPE, (case, ins, outs)\n"
    "        y = mod.run(load('x' + j, ins), ws)\n"
    "        assert y.shape == outs, (case, j, y.shape, outs)\n"
    "        y.astype(np.float32).tofile(os.path.join(d, 'y' + j))\n";

#define MAX_BIND 3

typedef struct {
  char text[4096];
  int n_bind;
  char bind[MAX_BIND][256];
  int64_t n_out[MAX_BIND];
  float *want[MAX_BIND];
} case_t;

static case_t cases[MAX_CASES];
static int n_cases;

/* The interpreter's output of one case at binding b. */
typedef struct {
  case_t *c;
  const syno_nest_t *nest;
  const syno_vars_t *v;
} expect_t;

static void expect(int b, float *const *t, const int64_t *numel, int64_t n_out, void *user) {
  (void)numel;
  expect_t *x = user;
  syno_error_t err;
  x->c->n_out[b] = n_out;
  x->c->want[b] = malloc(sizeof(float) * (size_t)n_out);
  if (syno_interp_nest(x->nest, x->v, b, (const float *const *)t, NULL, x->c->want[b], &err)) fail_msg("%s", err.msg);
}

static void prepare(const syno_operator_t *op, void *user) {
  syno_rng_t *rng = user;
  assert_true(n_cases < MAX_CASES);
  case_t *c = &cases[n_cases];
  char dir[320], path[400];
  snprintf(dir, sizeof dir, "%s/c%03d", tmpdir, n_cases);
  assert_int_equal(mkdir(dir, 0700), 0);
  syno_error_t err;
  syno_operator_print(op, c->text, sizeof c->text);
  int len = syno_codegen_tvm(op, 0, NULL, 0, &err);
  if (len < 0) fail_msg("'%s': %s", c->text, err.msg);
  char *code = malloc((size_t)len + 1);
  assert_int_equal(syno_codegen_tvm(op, 0, code, (size_t)len + 1, &err), len);
  snprintf(path, sizeof path, "%s/op.py", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(code, f);
  fclose(f);
  free(code);
  syno_nest_t *nest = malloc(sizeof *nest);
  if (syno_lower_forward(op, nest, &err)) fail_msg("%s", err.msg);
  /* The exported binding and up to two others: one file serves every shape. */
  syno_vars_t v = *syno_graph_vars(op->g);
  v.nbind = 1;
  st_other_bindings(op, nest, &v);
  c->n_bind = v.nbind;
  for (int b = 0; b < v.nbind; b++) syno_vars_print_binding(&v, b, c->bind[b], sizeof c->bind[b]);
  expect_t x = {c, nest, &v};
  st_write_bindings(op, nest, &v, dir, rng, expect, &x);
  free(nest);
  n_cases++;
}

static void test_tvm_matches_interpreter(void **state) {
  (void)state;
  const char *src = getenv("SYNO_SOURCE_DIR");
  if (!src) fail_msg("SYNO_SOURCE_DIR is not set (ctest sets it; it locates tests/codegen/tvmstub)");
  syno_rng_t rng;
  syno_rng_seed(&rng, 25, 0);
  int builtins = 0;
  for (int i = 0; syno_builtin_at(i); i++, builtins++) {
    st_op_t o;
    st_op_builtin(&o, syno_builtin_at(i)->name, st_builtin_small_binding(syno_builtin_at(i)->name));
    prepare(&o.op, &rng);
    st_op_free(&o);
  }
  /* Plans that lift an input axis (docs/semantics.md §7.3): part of C_in summed first on the
   * input's own columns, then a 1 x k_1^2 window; and the same with a weight reading both
   * halves of the channel. */
  static const char *const lifted[] = {
      "r0=sum(s) r1=sum(k_1^2) r2=sum(s^-1*C_in); in[i0, split(share(r0, 1), r2), i2, unfold(i3, share(r1, 1))] "
      "expand[share(i1, 1)] w1[r1, i1, r0]",
      "r0=sum(k_2) r1=sum(s^-1*C_in); in[i0, split(share(div(i1, s^-1*C_out), 1), r1), i2, unfold(i3, share(r0, 1))] "
      "expand[share(mod(i1, s^-1*C_out), 1)] w1[div(i1, s^-1*C_out), mod(i1, s^-1*C_out), r0]",
  };
  const char *lifted_bind[] = {"N=2,C_in=8,C_out=8,H=14,k_1=3,k_2=7,s=2,g=32", NULL};
  for (size_t i = 0; i < sizeof lifted / sizeof lifted[0]; i++) {
    st_op_t o;
    st_op_make(&o, "N: 0, C_in: 2, C_out: 4, H: 0; k_1: 2, k_2: 2, s: 2, g: 3", "[N, C_in: unordered, H, H]",
               "[N, C_out: unordered, H, H]", lifted[i], lifted_bind);
    int len = syno_codegen_tvm(&o.op, 0, NULL, 0, NULL);
    char *code = malloc((size_t)len + 1);
    assert_non_null(code);
    assert_int_equal(syno_codegen_tvm(&o.op, 0, code, (size_t)len + 1, NULL), len);
    if (!strstr(code, "gather the lifted axes") && !strstr(code, "sum what only the input reads"))
      fail_msg("'%s': no lifted stage in the export", lifted[i]);
    free(code);
    prepare(&o.op, &rng);
    st_op_free(&o);
  }
  int drawn,
      sampled = st_sample_distinct("{\"preset\": \"conv2d\", \"bind\": \"N=2, C_in=4, C_out=4, H=6\", \"depth\": 7}", 9,
                                   50, prepare, &rng, &drawn);
  int linear = st_sample_distinct(
      "{\"preset\": \"linear\", \"bind\": \"N=2, seq_len=2, H_in=16, g=4, k_1=2, k_2=4, t=2\", \"depth\": 6}", 10, 30,
      prepare, &rng, &drawn);
  char path[400], cmd[1200];
  snprintf(path, sizeof path, "%s/driver.py", tmpdir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(driver, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s %s %s %s/tests/codegen/tvmstub", python, path, tmpdir, src);
  if (system(cmd) != 0) fail_msg("python failed: %s", cmd);
  double worst = 0;
  int runs = 0;
  for (int k = 0; k < n_cases; k++) {
    case_t *c = &cases[k];
    for (int b = 0; b < c->n_bind; b++, runs++) {
      snprintf(path, sizeof path, "%s/c%03d/y%d", tmpdir, k, b);
      float *y = st_read_floats(path, c->n_out[b]);
      double e = st_rel_err(y, c->want[b], c->n_out[b]);
      if (!(e <= 1e-4))
        fail_msg("'%s' at %s: the TVM export differs from the interpreter, rel err %g", c->text, c->bind[b], e);
      if (e > worst) worst = e;
      free(y);
      free(c->want[b]);
    }
  }
  print_message(
      "%d TVM exports run on the stand-in and checked (%d builtins, %d distinct conv2d-preset and %d linear-preset "
      "operators), %d runs: each file at its exported binding and at another batch and size where the operator "
      "allows; max relative error %.3g\n",
      n_cases, builtins, sampled, linear, runs, worst);
  assert_int_equal(sampled, 50);
  assert_int_equal(linear, 30);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) print_message("could not remove %s\n", tmpdir);
}

static void test_bad_binding(void **state) {
  (void)state;
  st_check_emitter_bindings(syno_codegen_tvm, 1);
}

int main(void) {
  python = st_find_python("numpy");
  if (!python) {
    printf("SKIP: no python3 with numpy (set SYNO_PYTHON)\n");
    return 77;
  }
  snprintf(tmpdir, sizeof tmpdir, "/tmp/syno-tvm-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_binding),
      cmocka_unit_test(test_tvm_matches_interpreter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
