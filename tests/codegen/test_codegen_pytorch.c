/* The PyTorch emitter against the reference interpreter (issue 25's equivalence test).
 * Every builtin and 250 distinct sampled operators, 150 of the conv2d preset and 100 of the
 * linear preset, are emitted as modules; syno writes random input, weights and output
 * gradient as raw float32 files, one python3 process runs every module forward and
 * backward (autograd), and the output and every gradient must match the interpreter
 * (forward nest, and gradients scattered through it) to 1e-4 relative error. Also, the
 * builtin conv2d exported by `syno export` equals torch.nn.functional.conv2d.
 *
 * Needs python3 with torch and numpy: $SYNO_PYTHON, else python3 on PATH,
 * else /usr/bin/python3. Without one, exits 77 (ctest reports a skip). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "syno/codegen.h"
#include "syno/space.h"
#include "synotest.h"

/* Sampled operators: distinct ones from the conv2d preset (the space searches explore) and
 * from the linear preset, at bindings small enough that the interpreter is quick. */
#define N_CONV 150
#define N_LINEAR 100
#define MAX_CASES (N_CONV + N_LINEAR + 16)

static char tmpdir[256];
static const char *python;

static const char *driver =
    "import importlib.util, os, sys\n"
    "import numpy as np\n"
    "import torch\n"
    "torch.set_num_threads(1)\n"
    "root = sys.argv[1]\n"
    "for case in sorted(os.listdir(root)):\n"
    "    d = os.path.join(root, case)\n"
    "    if not os.path.isdir(d):\n"
    "        continue\n"
    "    spec = importlib.util.spec_from_file_location('op_' + case, os.path.join(d, 'op.py'))\n"
    "    mod = importlib.util.module_from_spec(spec)\n"
    "    spec.loader.exec_module(mod)\n"
    "    op = mod.SynoOp()\n"
    "    def load(name, shape):\n"
    "        return torch.from_numpy(np.fromfile(os.path.join(d, name), dtype=np.float32)).view(shape)\n"
    "    x = load('t0', op.in_shape).clone().requires_grad_(True)\n"
    "    ws = [p for n, p in sorted(op.named_parameters())]\n"
    "    with torch.no_grad():\n"
    "        for t, p in enumerate(ws, 1):\n"
    "            p.copy_(load('t%d' % t, tuple(p.shape)))\n"
    "    y = op(x)\n"
    "    assert tuple(y.shape) == op.out_shape, (case, y.shape, op.out_shape)\n"
    "    y.backward(load('gout', op.out_shape))\n"
    "    y.detach().numpy().astype(np.float32).tofile(os.path.join(d, 'y'))\n"
    "    for t, g in enumerate([x] + ws):\n"
    "        gr = g.grad if g.grad is not None else torch.zeros_like(g)\n"
    "        gr.detach().numpy().astype(np.float32).tofile(os.path.join(d, 'g%d' % t))\n";

typedef struct {
  char text[4096];
  int n_tensors;
  int64_t numel[SYNO_MAX_TENSORS], n_out;
  float *want_y, *want_g[SYNO_MAX_TENSORS];
} case_t;

static case_t cases[MAX_CASES];
static int n_cases;

/* Emits op into its case directory with its inputs and the expected results. */
static void prepare(const syno_operator_t *op, void *user) {
  syno_rng_t *rng = user;
  assert_true(n_cases < MAX_CASES);
  case_t *c = &cases[n_cases];
  char dir[320], path[400];
  snprintf(dir, sizeof dir, "%s/c%03d", tmpdir, n_cases);
  assert_int_equal(mkdir(dir, 0700), 0);
  syno_error_t err;
  const syno_vars_t *v = syno_graph_vars(op->g);
  syno_operator_print(op, c->text, sizeof c->text);
  int len = syno_codegen_pytorch(op, 0, NULL, 0, &err);
  if (len < 0) fail_msg("'%s': %s", c->text, err.msg);
  char *code = malloc((size_t)len + 1);
  assert_int_equal(syno_codegen_pytorch(op, 0, code, (size_t)len + 1, &err), len);
  snprintf(path, sizeof path, "%s/op.py", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(code, f);
  fclose(f);
  free(code);
  syno_nest_t *nest = malloc(sizeof *nest);
  if (syno_lower_forward(op, nest, &err)) fail_msg("%s", err.msg);
  float *t[SYNO_MAX_TENSORS] = {0};
  c->n_tensors = op->n_tensors;
  for (int i = 0; i < op->n_tensors; i++) {
    assert_int_equal(syno_tensor_numel(op, i, 0, &c->numel[i], &err), 0);
    t[i] = st_random(rng, c->numel[i]);
    snprintf(path, sizeof path, "%s/t%d", dir, i);
    st_write_floats(path, t[i], c->numel[i]);
  }
  assert_int_equal(syno_output_numel(op, 0, &c->n_out, &err), 0);
  float *gout = st_random(rng, c->n_out);
  snprintf(path, sizeof path, "%s/gout", dir);
  st_write_floats(path, gout, c->n_out);
  c->want_y = malloc(sizeof(float) * (size_t)c->n_out);
  if (syno_interp_nest(nest, v, 0, (const float *const *)t, NULL, c->want_y, &err)) fail_msg("%s", err.msg);
  for (int i = 0; i < op->n_tensors; i++) {
    c->want_g[i] = malloc(sizeof(float) * (size_t)c->numel[i]);
    if (syno_interp_grad_scatter(nest, v, 0, i, (const float *const *)t, gout, c->want_g[i], &err))
      fail_msg("%s", err.msg);
  }
  for (int i = 0; i < op->n_tensors; i++) free(t[i]);
  free(gout);
  free(nest);
  n_cases++;
}

static void prepare_builtins(syno_rng_t *rng) {
  for (int i = 0; syno_builtin_at(i); i++) {
    const char *bind = st_builtin_small_binding(syno_builtin_at(i)->name);
    st_op_t o;
    st_op_builtin(&o, syno_builtin_at(i)->name, bind);
    prepare(&o.op, rng);
    st_op_free(&o);
  }
}

static void prepare_sampled(syno_rng_t *rng, int *conv, int *linear) {
  *conv = st_sample_distinct("{\"preset\": \"conv2d\", \"bind\": \"N=2, C_in=4, C_out=4, H=6\", \"depth\": 7}", 11,
                             N_CONV, prepare, rng, NULL);
  *linear = st_sample_distinct(
      "{\"preset\": \"linear\", \"bind\": \"N=2, seq_len=2, H_in=16, g=4, k_1=2, k_2=4, t=2\", \"depth\": 6}", 12,
      N_LINEAR, prepare, rng, NULL);
  assert_int_equal(*conv, N_CONV);
  assert_int_equal(*linear, N_LINEAR);
}

static void test_pytorch_matches_interpreter(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 21, 0);
  prepare_builtins(&rng);
  int builtins = n_cases, conv, linear;
  prepare_sampled(&rng, &conv, &linear);
  char path[400], cmd[1024];
  snprintf(path, sizeof path, "%s/driver.py", tmpdir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(driver, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s %s %s", python, path, tmpdir);
  if (system(cmd) != 0) fail_msg("python failed: %s", cmd);
  double worst[2] = {0, 0};
  for (int k = 0; k < n_cases; k++) {
    case_t *c = &cases[k];
    snprintf(path, sizeof path, "%s/c%03d/y", tmpdir, k);
    float *y = st_read_floats(path, c->n_out);
    double e = st_rel_err(y, c->want_y, c->n_out);
    if (!(e <= 1e-4)) fail_msg("'%s': PyTorch forward differs from the interpreter, rel err %g", c->text, e);
    if (e > worst[0]) worst[0] = e;
    free(y);
    for (int t = 0; t < c->n_tensors; t++) {
      snprintf(path, sizeof path, "%s/c%03d/g%d", tmpdir, k, t);
      float *g = st_read_floats(path, c->numel[t]);
      e = st_rel_err(g, c->want_g[t], c->numel[t]);
      if (!(e <= 1e-4)) fail_msg("'%s': autograd gradient of tensor %d differs, rel err %g", c->text, t, e);
      if (e > worst[1]) worst[1] = e;
      free(g);
    }
  }
  print_message(
      "%d PyTorch modules checked, forward and the autograd gradients of the input and every weight "
      "(%d builtins, %d distinct conv2d-preset and %d distinct linear-preset operators); "
      "max relative error: forward %.3g, gradients %.3g\n",
      n_cases, builtins, conv, linear, worst[0], worst[1]);
  assert_true(conv + linear >= 200);
  for (int k = 0; k < n_cases; k++) {
    free(cases[k].want_y);
    for (int t = 0; t < cases[k].n_tensors; t++) free(cases[k].want_g[t]);
  }
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) print_message("could not remove %s\n", tmpdir);
}

/* `syno export --to pytorch --builtin conv2d`, as a user runs it (the default binding:
 * N=8, 16 -> 16 channels, 28x28, k=3), equals torch.nn.functional.conv2d with the same
 * weights; likewise the linear builtin and F.linear. */
static const char *builtin_check =
    "import importlib.util, sys\n"
    "import torch\n"
    "import torch.nn.functional as F\n"
    "torch.manual_seed(0)\n"
    "def load(path):\n"
    "    spec = importlib.util.spec_from_file_location('m', path)\n"
    "    mod = importlib.util.module_from_spec(spec)\n"
    "    spec.loader.exec_module(mod)\n"
    "    return mod.SynoOp()\n"
    "conv, lin = load(sys.argv[1]), load(sys.argv[2])\n"
    "x = torch.randn(conv.in_shape)\n"
    "w = conv.w1.detach()\n"
    "want = F.conv2d(x, w, padding=w.shape[-1] // 2)\n"
    "got = conv(x).detach()\n"
    "e1 = float((got - want).abs().max() / want.abs().max())\n"
    "x = torch.randn(lin.in_shape)\n"
    "want = F.linear(x, lin.w1.detach())\n"
    "e2 = float((lin(x).detach() - want).abs().max() / want.abs().max())\n"
    "print('conv2d', tuple(conv.in_shape), '->', tuple(conv.out_shape), 'rel err %.3g' % e1)\n"
    "print('linear', tuple(lin.in_shape), '->', tuple(lin.out_shape), 'rel err %.3g' % e2)\n"
    "sys.exit(0 if e1 <= 1e-4 and e2 <= 1e-4 else 1)\n";

static void test_builtin_equals_torch(void **state) {
  (void)state;
  const char *syno = getenv("SYNO_BIN");
  if (!syno) fail_msg("SYNO_BIN is not set (ctest sets it to build/syno)");
  char dir[256], cmd[2048];
  snprintf(dir, sizeof dir, "/tmp/syno-pytorch-cli-XXXXXX");
  assert_non_null(mkdtemp(dir));
  snprintf(cmd, sizeof cmd,
           "'%s' export --to pytorch --builtin conv2d -o %s/conv.py && "
           "'%s' export --to pytorch --builtin linear -o %s/lin.py",
           syno, dir, syno, dir);
  if (system(cmd) != 0) fail_msg("syno export failed: %s", cmd);
  char path[320];
  snprintf(path, sizeof path, "%s/check.py", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(builtin_check, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s %s %s/conv.py %s/lin.py", python, path, dir, dir);
  int rc = system(cmd);
  snprintf(path, sizeof path, "rm -rf '%s'", dir);
  if (system(path) != 0) print_message("could not remove %s\n", dir);
  if (rc != 0) fail_msg("the exported builtin differs from torch.nn.functional: %s", cmd);
}

int main(void) {
  python = st_find_python("torch, numpy");
  if (!python) {
    printf("SKIP: no python3 with torch and numpy (set SYNO_PYTHON)\n");
    return 77;
  }
  snprintf(tmpdir, sizeof tmpdir, "/tmp/syno-pytorch-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_builtin_equals_torch),
      cmocka_unit_test(test_pytorch_matches_interpreter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
