/* The PyTorch emitter against the reference interpreter (issue 25's equivalence test).
 * Every builtin and 250 distinct sampled operators, 150 of the conv2d preset and 100 of the
 * linear preset, are emitted as modules; syno writes random input, weights and output
 * gradient as raw float32 files, one python3 process runs every module forward and
 * backward (autograd), and the output and every gradient must match the interpreter
 * (forward nest, and gradients scattered through it) to 1e-4 relative error. Also, the
 * builtin conv2d exported by `syno export` equals torch.nn.functional.conv2d. The three
 * operators whose plan lifts an input axis (docs/semantics.md §7.3) that test_exec_sampled runs
 * on the chain are checked the same way, and every module's FLOPs formula, evaluated at its
 * exported binding, must equal syno_forward_flops (the plan's FLOPs, what `syno show` prints).
 *
 * Needs python3 with torch and numpy: $SYNO_PYTHON, else python3 on PATH,
 * else /usr/bin/python3. Without one, exits 77 (ctest reports a skip). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "syno/codegen.h"
#include "syno/space.h"
#include "synotest.h"

/* Sampled operators: distinct ones of each preset (the spaces searches explore), at bindings
 * small enough that the interpreter is quick. */
#define N_CONV 150
#define N_WIDE 60
#define N_LINEAR 80
#define N_LWIDE 30
#define N_LIFTED 3
#define MAX_CASES (N_CONV + N_WIDE + N_LINEAR + N_LWIDE + N_LIFTED + 16)
#define MAX_BIND 3

static char tmpdir[256];
static const char *python;

/* Each case directory holds op.py, the weights t1.., and per binding j the input xj, the
 * output gradient goutj and a line "j in-shape / out-shape" of `shapes`. The module is built
 * with its defaults (the exported binding's channels), run eagerly at every binding, forward
 * and backward, and compiled with torch.jit.script, whose forward must equal the eager one. */
static const char *driver =
    "import importlib.util, os, sys, warnings\n"
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
    "    # the FLOPs formula of the header at the exported binding (the sizes in `sizes`)\n"
    "    env = dict((k, int(v)) for k, v in (l.split() for l in open(os.path.join(d, 'sizes'))))\n"
    "    fl = [l for l in open(os.path.join(d, 'op.py')) if l.startswith('# FLOPs  ')][0]\n"
    "    fl = fl[len('# FLOPs  '):].split(' (a multiply-add')[0]\n"
    "    open(os.path.join(d, 'flops'), 'w').write('%.17g' % eval(fl.replace('^', '**'), {}, env))\n"
    "    def load(name, shape):\n"
    "        return torch.from_numpy(np.fromfile(os.path.join(d, name), dtype=np.float32)).view(shape)\n"
    "    ws = [p for n, p in sorted(op.named_parameters())]\n"
    "    with torch.no_grad():\n"
    "        for t, p in enumerate(ws, 1):\n"
    "            p.copy_(load('t%d' % t, tuple(p.shape)))\n"
    "    try:\n"
    "        sm = torch.jit.script(op)\n"
    "    except Exception as ex:\n"
    "        sm = None\n"
    "        open(os.path.join(d, 'noscript'), 'w').write(str(ex).splitlines()[0][:200])\n"
    "    runs = []\n"
    "    for line in open(os.path.join(d, 'shapes')):\n"
    "        head, outs = line.split('/')\n"
    "        j, ins = head.split()[0], tuple(map(int, head.split()[1:]))\n"
    "        outs = tuple(map(int, outs.split()))\n"
    "        x = load('x' + j, ins).clone().requires_grad_(True)\n"
    "        for p in ws:\n"
    "            p.grad = None\n"
    "        y = op(x)\n"
    "        assert tuple(y.shape) == outs, (case, j, y.shape, outs)\n"
    "        y.backward(load('gout' + j, outs))\n"
    "        y.detach().numpy().astype(np.float32).tofile(os.path.join(d, 'y' + j))\n"
    "        for t, g in enumerate([x] + ws):\n"
    "            gr = g.grad if g.grad is not None else torch.zeros_like(g)\n"
    "            gr.detach().numpy().astype(np.float32).tofile(os.path.join(d, 'g%d_%s' % (t, j)))\n"
    "        if sm is not None:\n"
    "            with torch.no_grad():\n"
    "                e = float((sm(x.detach()) - y.detach()).abs().max()) if y.numel() else 0.0\n"
    "            open(os.path.join(d, 'script' + j), 'w').write('%g' % e)\n"
    "        runs.append((j, x.detach(), y.detach()))\n"
    "    # torch.jit.trace at the exported binding, then run at the others: exact, wrong or refused\n"
    "    with warnings.catch_warnings(record=True) as wl:\n"
    "        warnings.simplefilter('always')\n"
    "        tr = torch.jit.trace(op, runs[0][1])\n"
    "    warned = any('torch.jit.trace keeps' in str(w.message) for w in wl)\n"
    "    res = []\n"
    "    for j, x, y in runs:\n"
    "        try:\n"
    "            with torch.no_grad():\n"
    "                z = tr(x)\n"
    "            ok = z.shape == y.shape and (y.numel() == 0 or float((z - y).abs().max()) <= 1e-5 * (1 + float(y.abs().max())))\n"
    "            res.append('exact' if ok else 'wrong')\n"
    "        except Exception:\n"
    "            res.append('refused')\n"
    "    open(os.path.join(d, 'trace'), 'w').write(('warned ' if warned else 'silent ') + ' '.join(res))\n";

typedef struct {
  char text[4096];
  int n_tensors, n_bind;
  int64_t flops; /* syno_forward_flops at the exported binding */
  char bind[MAX_BIND][256];
  int64_t numel[MAX_BIND][SYNO_MAX_TENSORS], n_out[MAX_BIND];
  float *want_y[MAX_BIND], *want_g[MAX_BIND][SYNO_MAX_TENSORS];
} case_t;

static case_t cases[MAX_CASES];
static int n_cases;
static int n_conv;   /* modules whose first stage is a torch convolution */
static int n_lifted; /* modules whose plan lifts an input axis */

/* The expected results of one case at binding b: a random output gradient (written), the
 * interpreter's output and the gradients scattered through the forward nest. */
typedef struct {
  case_t *c;
  const syno_nest_t *nest;
  const syno_vars_t *v;
  syno_rng_t *rng;
  const char *dir;
} expect_t;

static void expect(int b, float *const *t, const int64_t *numel, int64_t n_out, void *user) {
  expect_t *x = user;
  case_t *c = x->c;
  syno_error_t err;
  char path[400];
  c->n_out[b] = n_out;
  memcpy(c->numel[b], numel, sizeof c->numel[b]);
  float *gout = st_random(x->rng, n_out);
  snprintf(path, sizeof path, "%s/gout%d", x->dir, b);
  st_write_floats(path, gout, n_out);
  c->want_y[b] = malloc(sizeof(float) * (size_t)n_out);
  if (syno_interp_nest(x->nest, x->v, b, (const float *const *)t, NULL, c->want_y[b], &err))
    fail_msg("'%s' at %s: %s", c->text, c->bind[b], err.msg);
  for (int i = 0; i < c->n_tensors; i++) {
    c->want_g[b][i] = malloc(sizeof(float) * (size_t)numel[i]);
    if (syno_interp_grad_scatter(x->nest, x->v, b, i, (const float *const *)t, gout, c->want_g[b][i], &err))
      fail_msg("%s", err.msg);
  }
  free(gout);
}

/* Emits op into its case directory with its inputs and the expected results at each binding. */
static void prepare(const syno_operator_t *op, void *user) {
  syno_rng_t *rng = user;
  assert_true(n_cases < MAX_CASES);
  case_t *c = &cases[n_cases];
  char dir[320], path[400];
  snprintf(dir, sizeof dir, "%s/c%03d", tmpdir, n_cases);
  assert_int_equal(mkdir(dir, 0700), 0);
  syno_error_t err;
  syno_operator_print(op, c->text, sizeof c->text);
  int len = syno_codegen_pytorch(op, 0, NULL, 0, &err);
  if (len < 0) fail_msg("'%s': %s", c->text, err.msg);
  char *code = malloc((size_t)len + 1);
  assert_int_equal(syno_codegen_pytorch(op, 0, code, (size_t)len + 1, &err), len);
  n_conv += strstr(code, "# stage 1: a convolution of the input") != NULL;
  bool lifted = strstr(code, "lifted (read whole") != NULL;
  n_lifted += lifted;
  snprintf(path, sizeof path, "%s/op.py", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(code, f);
  fclose(f);
  free(code);
  syno_nest_t *nest = malloc(sizeof *nest);
  if (syno_lower_forward(op, nest, &err)) fail_msg("%s", err.msg);
  syno_vars_t v = *syno_graph_vars(op->g);
  v.nbind = 1;
  if (syno_forward_flops(op, nest, &v, 0, &c->flops, &err)) fail_msg("'%s': %s", c->text, err.msg);
  snprintf(path, sizeof path, "%s/sizes", dir);
  FILE *zf = fopen(path, "w");
  assert_non_null(zf);
  for (int kind = 0; kind < 2; kind++) {
    syno_var_kind_t k = kind ? SYNO_COEFF : SYNO_PRIMARY;
    for (int i = 0; i < v.n[k]; i++)
      fprintf(zf, "%s %" PRId64 "\n", v.var[k][i].name, kind ? v.bind[0].c[i] : v.bind[0].p[i]);
  }
  fclose(zf);
  st_other_bindings(op, nest, &v);
  c->n_tensors = op->n_tensors;
  c->n_bind = v.nbind;
  for (int b = 0; b < v.nbind; b++) syno_vars_print_binding(&v, b, c->bind[b], sizeof c->bind[b]);
  expect_t x = {c, nest, &v, rng, dir};
  st_write_bindings(op, nest, &v, dir, rng, expect, &x);
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

/* The operators whose plan lifts an input axis that test_exec_sampled's test_lifted_operators
 * runs on the chain: a piece of the merged output row as the column's Unfold window (a view
 * gathers it last), part of C_in summed before a 1 x k_1^2 window, and the same with the weight
 * reading both halves of the channel. */
static void prepare_lifted(syno_rng_t *rng) {
  static const char *const ops[N_LIFTED] = {
      "r0=sum(k_2) r1=sum(C_in); in[i0, share(r1, 1), split(div(i2, k_2), share(r0, 1)), unfold(i3, mod(i2, "
      "k_2))] expand[share(i1, 1)] w1[r1, i1, r0]",
      "r0=sum(s) r1=sum(k_1^2) r2=sum(s^-1*C_in); in[i0, split(share(r0, 1), r2), i2, unfold(i3, share(r1, "
      "1))] expand[share(i1, 1)] w1[r1, i1, r0]",
      "r0=sum(k_2) r1=sum(s^-1*C_in); in[i0, split(share(div(i1, s^-1*C_out), 1), r1), i2, unfold(i3, share(r0, "
      "1))] expand[share(mod(i1, s^-1*C_out), 1)] w1[div(i1, s^-1*C_out), mod(i1, s^-1*C_out), r0]",
  };
  static const char *const binds[] = {"N=2,C_in=8,C_out=8,H=14,k_1=3,k_2=7,s=2,g=32", NULL};
  for (int i = 0; i < N_LIFTED; i++) {
    int before = n_lifted;
    st_op_t o;
    st_op_make(&o, "N: 0, C_in: 2, C_out: 4, H: 0; k_1: 2, k_2: 2, s: 2, g: 3", "[N, C_in: unordered, H, H]",
               "[N, C_out: unordered, H, H]", ops[i], binds);
    prepare(&o.op, rng);
    st_op_free(&o);
    if (n_lifted == before) fail_msg("'%s': the export does not lift an axis", ops[i]);
  }
}

static int prepare_sampled(syno_rng_t *rng, int count[4]) {
  count[0] = st_sample_distinct("{\"preset\": \"conv2d\", \"bind\": \"N=2, C_in=4, C_out=4, H=6\", \"depth\": 7}", 11,
                                N_CONV, prepare, rng, NULL);
  count[1] = st_sample_distinct(
      "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=4, H=6, W=4, k=3, s=2\", \"depth\": 6}", 13, N_WIDE,
      prepare, rng, NULL);
  count[2] = st_sample_distinct(
      "{\"preset\": \"linear\", \"bind\": \"N=2, seq_len=2, H_in=16, g=4, k_1=2, k_2=4, t=2\", \"depth\": 6}", 12,
      N_LINEAR, prepare, rng, NULL);
  count[3] = st_sample_distinct(
      "{\"preset\": \"linear-wide\", \"bind\": \"N=2, S=4, C_in=32, C_out=32, k=4, s=2\", \"depth\": 6}", 14, N_LWIDE,
      prepare, rng, NULL);
  assert_int_equal(count[0], N_CONV);
  assert_int_equal(count[1], N_WIDE);
  assert_int_equal(count[2], N_LINEAR);
  assert_int_equal(count[3], N_LWIDE);
  return count[0] + count[1] + count[2] + count[3];
}

static void compare(const case_t *c, int b, const char *what, const char *file, const float *want, int64_t n,
                    double *worst) {
  float *got = st_read_floats(file, n);
  double e = st_rel_err(got, want, n);
  if (!(e <= 1e-4)) fail_msg("'%s' at %s: %s differs from the interpreter, rel err %g", c->text, c->bind[b], what, e);
  if (e > *worst) *worst = e;
  free(got);
}

static void test_pytorch_matches_interpreter(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 21, 0);
  prepare_builtins(&rng);
  int builtins = n_cases, count[4];
  int sampled = prepare_sampled(&rng, count);
  prepare_lifted(&rng);
  char path[400], cmd[1024];
  snprintf(path, sizeof path, "%s/driver.py", tmpdir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(driver, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s %s %s", python, path, tmpdir);
  if (system(cmd) != 0) fail_msg("python failed: %s", cmd);
  double worst[2] = {0, 0};
  int runs = 0, multi = 0, scripted = 0, unscripted = 0, traced[3] = {0, 0, 0}, at_export_exact = 0;
  for (int k = 0; k < n_cases; k++) {
    case_t *c = &cases[k];
    multi += c->n_bind > 1;
    snprintf(path, sizeof path, "%s/c%03d/noscript", tmpdir, k);
    FILE *ns = fopen(path, "r");
    if (ns) {
      char why[256] = "";
      if (!fgets(why, sizeof why, ns)) why[0] = 0;
      fclose(ns);
      if (unscripted++ < 5) print_message("not scriptable: '%s': %s\n", c->text, why);
    } else {
      scripted++;
    }
    snprintf(path, sizeof path, "%s/c%03d/trace", tmpdir, k);
    FILE *tf = fopen(path, "r");
    char word[16];
    if (!tf || fscanf(tf, "%15s", word) != 1) fail_msg("'%s': no torch.jit.trace result", c->text);
    if (strcmp(word, "warned") != 0) fail_msg("'%s': torch.jit.trace gave no warning that it keeps sizes", c->text);
    for (int b = 0; b < c->n_bind; b++) {
      if (fscanf(tf, "%15s", word) != 1) fail_msg("'%s': a torch.jit.trace result is missing", c->text);
      int kind = !strcmp(word, "exact") ? 0 : !strcmp(word, "wrong") ? 1 : 2;
      if (b == 0)
        at_export_exact += kind == 0;
      else
        traced[kind]++;
    }
    fclose(tf);
    snprintf(path, sizeof path, "%s/c%03d/flops", tmpdir, k);
    FILE *ff = fopen(path, "r");
    double fl = -1;
    if (!ff || fscanf(ff, "%lf", &fl) != 1) fail_msg("'%s': no FLOPs formula evaluated", c->text);
    fclose(ff);
    if (fabs(fl - (double)c->flops) > 1e-9 * (double)c->flops)
      fail_msg("'%s': the module's FLOPs formula gives %.17g, its plan (syno_forward_flops) %" PRId64, c->text, fl,
               c->flops);
    for (int b = 0; b < c->n_bind; b++) {
      runs++;
      snprintf(path, sizeof path, "%s/c%03d/y%d", tmpdir, k, b);
      compare(c, b, "the forward", path, c->want_y[b], c->n_out[b], &worst[0]);
      for (int t = 0; t < c->n_tensors; t++) {
        char what[64];
        snprintf(what, sizeof what, "the autograd gradient of tensor %d", t);
        snprintf(path, sizeof path, "%s/c%03d/g%d_%d", tmpdir, k, t, b);
        compare(c, b, what, path, c->want_g[b][t], c->numel[b][t], &worst[1]);
      }
      if (!ns) {
        snprintf(path, sizeof path, "%s/c%03d/script%d", tmpdir, k, b);
        FILE *sf = fopen(path, "r");
        double e = -1;
        if (!sf || fscanf(sf, "%lf", &e) != 1) fail_msg("'%s': no TorchScript result at %s", c->text, c->bind[b]);
        fclose(sf);
        if (!(e <= 1e-5)) fail_msg("'%s' at %s: TorchScript differs from eager by %g", c->text, c->bind[b], e);
      }
      free(c->want_y[b]);
      for (int t = 0; t < c->n_tensors; t++) free(c->want_g[b][t]);
    }
  }
  print_message(
      "%d PyTorch modules checked (%d builtins, %d lifted operators; distinct sampled operators: %d conv2d, %d "
      "conv2d-wide, %d linear, %d linear-wide), %d module runs: each at its exported binding and, for %d, at another "
      "batch and/or size; forward and the autograd gradients of the input and every weight; max relative error: "
      "forward %.3g, gradients %.3g; torch.jit.script: %d compiled and equal to eager, %d not scriptable; %d run "
      "their first stage as a torch convolution; %d run a plan with a lifted axis; every FLOPs formula equals "
      "syno_forward_flops\n",
      n_cases, builtins, N_LIFTED, count[0], count[1], count[2], count[3], runs, multi, worst[0], worst[1], scripted,
      unscripted, n_conv, n_lifted);
  print_message(
      "torch.jit.trace (each module warns that it keeps sizes): exact at the traced binding for %d of %d; "
      "at the other bindings %d exact, %d wrong, %d refused, so a traced module is for its traced shape only\n",
      at_export_exact, n_cases, traced[0], traced[1], traced[2]);
  assert_int_equal(at_export_exact, n_cases);
  assert_true(sampled >= 300);
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
    "# zero padding is zero: an inf and a NaN in the input reach only the outputs that read them\n"
    "xb = x.clone()\n"
    "xb[0, 0, 0, 0] = float('inf')\n"
    "xb[0, 1, -1, -1] = float('nan')\n"
    "yb = conv(xb).detach()\n"
    "reach = F.conv2d(torch.isinf(xb[:, :1]).float() + torch.isnan(xb[:, 1:2]).float(), torch.ones(1, 1, 3, 3), padding=1)\n"
    "leak = int((~torch.isfinite(yb) & (reach == 0)).sum())\n"
    "print('inf/NaN border: %d outputs that do not read them are not finite' % leak)\n"
    "x = torch.randn(lin.in_shape)\n"
    "want = F.linear(x, lin.w1.detach())\n"
    "e2 = float((lin(x).detach() - want).abs().max() / want.abs().max())\n"
    "print('conv2d', tuple(conv.in_shape), '->', tuple(conv.out_shape), 'rel err %.3g' % e1)\n"
    "print('linear', tuple(lin.in_shape), '->', tuple(lin.out_shape), 'rel err %.3g' % e2)\n"
    "sys.exit(0 if e1 <= 1e-4 and e2 <= 1e-4 and leak == 0 else 1)\n";

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
