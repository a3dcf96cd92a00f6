/* bench/exec.c - the operator executor against the native conv layer, and
 * against the reference interpreter on operators with two weights.
 *
 * The builtin conv2d operator (k x k, stride 1, same padding) compiled by
 * syno_exec_new (its stage runs on oneDNN's convolution, exec_conv.c) is
 * timed against syno_nn_conv2d on oneDNN and on its own im2col + sgemm (no
 * bias), on the same input and weight, forward and forward+backward (input
 * and weight gradients), at the training shapes. Medians of --reps repeats
 * after one warm-up, round-robin; the ratios are oneDNN's time / the
 * executor's (above 1 = executor faster; the generic path's goal is 1) and
 * im2col's / the executor's. The outputs are compared first (relative error
 * printed).
 *
 * Then a few two-weight operators drawn from the conv2d search space (the
 * same enumeration as tests/lower/test_exec_sampled.c) are compiled at a
 * larger binding and timed through the executor ("chain" strategy: one GEMM
 * stage per contraction) against the reference interpreter (the forward
 * nest, and the forward nest plus every backward nest), medians of
 * --sample-reps repeats; the ratio is interpreter / executor (the speed-up).
 * Times are in ms. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "bench.h"
#include "syno/exec.h"
#include "syno/graph.h"
#include "syno/lower.h"
#include "syno/nn.h"
#include "syno/space.h"
#include "syno/train.h"

static double rel_err(const float *a, const float *b, int64_t n) {
  double m = 0, d = 0;
  for (int64_t i = 0; i < n; i++) {
    double e = fabs((double)a[i] - b[i]);
    if (e > d) d = e;
    if (fabs((double)b[i]) > m) m = fabs((double)b[i]);
  }
  return m > 0 ? d / m : d;
}

typedef struct {
  syno_vars_t vars;
  syno_shape_t in, out;
  syno_graph_t *g;
  syno_operator_t op;
} built_t;

static int build(built_t *o, const char *bind, syno_error_t *err) {
  const syno_builtin_t *b = syno_builtin_find("conv2d");
  if (!b) return syno_error_set(err, "no builtin conv2d");
  syno_vars_init(&o->vars);
  if (syno_vars_declare(&o->vars, b->vars, err) || syno_vars_scan(&o->vars, b->input, err) ||
      syno_vars_scan(&o->vars, b->output, err) || syno_vars_scan(&o->vars, b->text, err) ||
      syno_vars_bind(&o->vars, bind, err) || syno_shape_parse(&o->vars, b->input, &o->in, err) ||
      syno_shape_parse(&o->vars, b->output, &o->out, err))
    return -1;
  o->g = syno_graph_new(&o->vars);
  if (!o->g) return syno_error_set(err, "out of memory");
  return syno_operator_parse(o->g, b->text, &o->in, &o->out, &o->op, err);
}

/* --- two-weight operators from the search space --- */

#define SAMPLE_PICK 4    /* operators timed */
#define SAMPLE_STRIDE 10 /* every 10th distinct two-weight operator of the enumeration */
#define SAMPLE_BIND "N=8,C_in=16,C_out=16,H=16,W=16,k=3,s=2"

typedef struct {
  int n_seen, n_two;
  char seen[600][1024];
  int n_ops;
  syno_operator_t ops[SAMPLE_PICK];
} sample_t;

static int sample_visit(syno_space_t *s, uint32_t node, uint32_t index, void *ctx) {
  sample_t *c = ctx;
  syno_error_t err = {0};
  syno_operator_t op;
  if (syno_node_final(s, node, index, &op, &err)) return 0;
  char buf[1024];
  syno_operator_print(&op, buf, sizeof buf);
  for (int i = 0; i < c->n_seen; i++)
    if (strcmp(c->seen[i], buf) == 0) return 0;
  if (c->n_seen < 600) strcpy(c->seen[c->n_seen++], buf);
  if (op.n_tensors != 3) return 0;
  if (c->n_two++ % SAMPLE_STRIDE == 0) c->ops[c->n_ops++] = op;
  return c->n_ops >= SAMPLE_PICK || c->n_seen >= 600;
}

static float *random_buf(syno_rng_t *rng, int64_t n) {
  float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; x && i < n; i++) x[i] = syno_rng_uniform(rng) * 2 - 1;
  return x;
}

static int bench_sample(int reps) {
  syno_space_spec_t spec;
  syno_error_t err = {0};
  if (syno_space_preset("conv2d-wide", "N=2,C_in=4,C_out=4,H=6,W=6,k=3,s=2", &spec, &err)) {
    fprintf(stderr, "exec: %s\n", err.msg);
    return 1;
  }
  spec.opts.depth = 4;
  spec.opts.max_tensors = 3;
  syno_space_t *sp = NULL;
  sample_t *c = calloc(1, sizeof *c);
  if (!c || syno_space_new(&spec, &sp, &err) || syno_space_exhaust(sp, sample_visit, c, NULL, NULL, &err)) {
    fprintf(stderr, "exec: %s\n", err.msg);
    return 1;
  }
  printf("\ntwo-weight operators of the conv2d space at %s; %d repeats, medians in ms\n", SAMPLE_BIND, reps);
  printf("%-3s %-6s %9s %9s %7s | %9s %9s %7s | %s\n", "op", "stages", "exec fwd", "interp", "speedup", "exec f+b",
         "interp", "speedup", "rel err");
  int rc = 0;
  for (int k = 0; k < c->n_ops; k++) {
    const syno_operator_t *op = &c->ops[k];
    char text[1024];
    syno_operator_print(op, text, sizeof text);
    printf("#%d: %s\n", k, text);
    syno_vars_t v = *syno_graph_vars(op->g);
    v.nbind = 0;
    syno_exec_t *e = NULL;
    syno_lowered_t *low = malloc(sizeof *low);
    if (!low || syno_vars_bind(&v, SAMPLE_BIND, &err) || syno_exec_new(op, &v, 0, &e, &err) ||
        syno_lower(op, low, &err)) {
      fprintf(stderr, "exec: %s\n", err.msg);
      return 1;
    }
    if (strcmp(syno_exec_strategy(e), "chain") != 0 || syno_exec_fallback_reason(e)) {
      fprintf(stderr, "exec: operator %d is not on the chain (%s)\n", k, syno_exec_fallback_reason(e));
      return 1;
    }
    syno_rng_t rng;
    syno_rng_seed(&rng, 7, (uint64_t)k);
    int nt = syno_exec_num_tensors(e);
    float *ts[SYNO_MAX_TENSORS] = {0}, *gs[SYNO_MAX_TENSORS] = {0}, *ref[SYNO_MAX_TENSORS] = {0};
    for (int t = 0; t < nt; t++) {
      ts[t] = random_buf(&rng, syno_exec_numel(e, t));
      gs[t] = random_buf(&rng, syno_exec_numel(e, t));
      ref[t] = random_buf(&rng, syno_exec_numel(e, t));
    }
    int64_t ny = syno_exec_numel(e, -1);
    float *y = random_buf(&rng, ny), *yr = random_buf(&rng, ny), *dy = random_buf(&rng, ny);
    const float *const *cts = (const float *const *)ts;
    double *tm = malloc(sizeof(double) * (size_t)reps * 4);
    double *tef = tm, *tif = tm + reps, *teb = tm + 2 * reps, *tib = tm + 3 * reps, re = 0;
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up and agreement */
      double t0 = syno_clock_seconds();
      syno_exec_forward(e, cts, y, &err);
      double t1 = syno_clock_seconds();
      syno_interp_nest(&low->forward, &v, 0, cts, NULL, yr, &err);
      double t2 = syno_clock_seconds();
      syno_exec_forward(e, cts, y, &err);
      syno_exec_backward(e, cts, dy, gs, &err);
      double t3 = syno_clock_seconds();
      syno_interp_nest(&low->forward, &v, 0, cts, NULL, yr, &err);
      for (int t = 0; t < nt; t++) syno_interp_nest(&low->backward[t], &v, 0, cts, dy, ref[t], &err);
      double t4 = syno_clock_seconds();
      if (r < 0) {
        re = rel_err(y, yr, ny);
        for (int t = 0; t < nt; t++) {
          double x = rel_err(gs[t], ref[t], syno_exec_numel(e, t));
          if (x > re) re = x;
        }
        if (re > 1e-4) rc = 1;
        continue;
      }
      tef[r] = t1 - t0;
      tif[r] = t2 - t1;
      teb[r] = t3 - t2;
      tib[r] = t4 - t3;
    }
    double ef = syno_median(tef, reps), inf = syno_median(tif, reps), eb = syno_median(teb, reps),
           ib = syno_median(tib, reps);
    char label[16];
    snprintf(label, sizeof label, "#%d", k);
    printf("%-3s %-6s %9.2f %9.1f %7.0f | %9.2f %9.1f %7.0f | %.1e\n", label, syno_exec_strategy(e), 1e3 * ef,
           1e3 * inf, inf / ef, 1e3 * eb, 1e3 * ib, ib / eb, re);
    free(tm);
    for (int t = 0; t < nt; t++) {
      free(ts[t]);
      free(gs[t]);
      free(ref[t]);
    }
    free(y);
    free(yr);
    free(dy);
    free(low);
    syno_exec_free(e);
  }
  syno_space_free(sp);
  free(c);
  if (rc) fprintf(stderr, "exec: the executor and the interpreter disagree beyond 1e-4\n");
  return rc;
}

int main(int argc, char **argv) {
  int reps = 5, sample_reps = 3, threads = 2;
  static const char usage[] =
      "usage: exec [--reps R] [--sample-reps S] [--threads T]   (defaults 5, 3, 2; S = 0 skips the\n"
      "       second part)\n"
      "Times the builtin conv2d through syno_exec (gemm strategy) against syno_nn_conv2d, then\n"
      "two-weight operators of the conv2d space through syno_exec (chain strategy) against the\n"
      "reference interpreter.\n";
  syno_opt_t opts[] = {
      BENCH_OPT_REPS(&reps, 1000),
      SYNO_OPT_INT("sample-reps", "S", &sample_reps, 0, 1000,
                   "repeats of the second part, two-weight operators (default 3;\n"
                   "0 skips it)"),
      SYNO_OPT_INT("threads", "T", &threads, 1, 256, "threads (default 2)"),
      SYNO_OPT_END,
  };
  bench_options("exec", usage, opts, argc, argv);
  bench_signals(0);
  syno_nn_threads_set(threads);
  bench_print_setup(reps);
  printf("times in ms; speed = the layer's time / the executor's\n%-22s %8s %8s %8s %6s %6s | %8s %8s %8s %6s %6s | %s\n",
         "shape (N, C, HxW, k)", "exec fwd", "oneDNN", "im2col", "speed", "im2col", "exec f+b", "oneDNN", "im2col",
         "speed", "im2col", "rel err");
  static const int64_t shapes[][3] = {{16, 28, 28}, {32, 14, 14}, {64, 7, 7}, {128, 4, 4}};
  const int64_t N = 128, k = 3;
  int rc = 0;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int64_t C = shapes[s][0], H = shapes[s][1], W = shapes[s][2];
    char bind[128];
    snprintf(bind, sizeof bind, "N=%lld,C_in=%lld,C_out=%lld,H=%lld,W=%lld,k=%lld", (long long)N, (long long)C,
             (long long)C, (long long)H, (long long)W, (long long)k);
    syno_error_t err = {0};
    built_t o;
    syno_exec_t *e = NULL;
    if (build(&o, bind, &err) || syno_exec_new(&o.op, syno_graph_vars(o.g), 0, &e, &err)) {
      fprintf(stderr, "exec: %s: %s\n", bind, err.msg);
      return 1;
    }
    if (strcmp(syno_exec_strategy(e), "gemm") != 0) {
      fprintf(stderr, "exec: %s fell back: %s\n", bind, syno_exec_fallback_reason(e));
      return 1;
    }
    syno_rng_t rng;
    syno_rng_seed(&rng, 42, s);
    syno_conv2d_cfg_t cfg = {.backend = SYNO_CONV_IM2COL,
                             .in_channels = C,
                             .out_channels = C,
                             .kernel_h = k,
                             .kernel_w = k,
                             .pad_h = k / 2,
                             .pad_w = k / 2,
                             .bias = 0};
    syno_layer_t *conv = syno_nn_conv2d_create(&cfg, &rng);
    cfg.backend = SYNO_CONV_ONEDNN;
    syno_layer_t *dconv = syno_nn_conv2d_create(&cfg, &rng);
    if (!conv || !dconv) return 1;
    memcpy(dconv->params[0].value.data, conv->params[0].value.data,
           sizeof(float) * (size_t)syno_nn_tensor_numel(&conv->params[0].value));
    int64_t nx = syno_exec_numel(e, 0), nw = syno_exec_numel(e, 1), ny = syno_exec_numel(e, -1);
    if (conv->nparams != 1 || syno_nn_tensor_numel(&conv->params[0].value) != nw) {
      fprintf(stderr, "exec: the native conv's weight is not [C_out, C_in, k, k]\n");
      return 1;
    }
    float *x = malloc(sizeof(float) * (size_t)nx), *y = malloc(sizeof(float) * (size_t)ny);
    float *dy = malloc(sizeof(float) * (size_t)ny), *dx = malloc(sizeof(float) * (size_t)nx);
    float *dw = malloc(sizeof(float) * (size_t)nw);
    const float *w = conv->params[0].value.data;
    for (int64_t i = 0; i < nx; i++) x[i] = syno_rng_uniform(&rng) * 2 - 1;
    for (int64_t i = 0; i < ny; i++) dy[i] = syno_rng_uniform(&rng) * 2 - 1;
    int64_t xd[4] = {N, C, H, W}, yd[4] = {N, C, H, W};
    syno_tensor_t xt = syno_nn_tensor_view(x, 4, xd), dyt = syno_nn_tensor_view(dy, 4, yd);
    const float *ts[2] = {x, w};
    float *gs[2] = {dx, dw};

    /* Agreement first: forward, input gradient, weight gradient. */
    syno_nn_zero_grad(conv);
    if (syno_exec_forward(e, ts, y, &err) || syno_exec_backward(e, ts, dy, gs, &err)) {
      fprintf(stderr, "exec: %s\n", err.msg);
      return 1;
    }
    if (syno_nn_forward(conv, &xt, 1) || syno_nn_backward(conv, &dyt)) return 1;
    double re = rel_err(y, conv->out.data, ny);
    double rx = rel_err(dx, conv->grad_in.data, nx), rw = rel_err(dw, conv->params[0].grad.data, nw);
    if (rx > re) re = rx;
    if (rw > re) re = rw;
    if (re > 1e-4) rc = 1;

    /* [0] exec, [1] oneDNN, [2] im2col; forward, then forward + backward */
    double *tf = malloc(sizeof(double) * (size_t)reps * 6);
    syno_layer_t *layer[3] = {NULL, dconv, conv};
    for (int r = -1; r < reps; r++) /* r = -1: warm-up */
      for (int b = 0; b < 2; b++)
        for (int m = 0; m < 3; m++) {
          double t0 = syno_clock_seconds();
          if (!m) {
            syno_exec_forward(e, ts, y, &err);
            if (b) syno_exec_backward(e, ts, dy, gs, &err);
          } else {
            syno_nn_zero_grad(layer[m]);
            syno_nn_forward(layer[m], &xt, b);
            if (b) syno_nn_backward(layer[m], &dyt);
          }
          if (r >= 0) tf[(b * 3 + m) * reps + r] = syno_clock_seconds() - t0;
        }
    double med[6];
    for (int i = 0; i < 6; i++) med[i] = syno_median(tf + i * reps, reps);
    char label[64];
    snprintf(label, sizeof label, "%lld, %lld, %lldx%lld, %lld", (long long)N, (long long)C, (long long)H, (long long)W,
             (long long)k);
    printf("%-22s %8.2f %8.2f %8.2f %5.2fx %5.2fx | %8.2f %8.2f %8.2f %5.2fx %5.2fx | %.1e\n", label, 1e3 * med[0],
           1e3 * med[1], 1e3 * med[2], med[1] / med[0], med[2] / med[0], 1e3 * med[3], 1e3 * med[4], 1e3 * med[5],
           med[4] / med[3], med[5] / med[3], re);
    free(tf);
    free(x);
    free(y);
    free(dy);
    free(dx);
    free(dw);
    syno_nn_layer_free(conv);
    syno_nn_layer_free(dconv);
    syno_exec_free(e);
    syno_graph_free(o.g);
  }
  if (rc) fprintf(stderr, "exec: the executor and the native conv disagree beyond 1e-4\n");
  if (sample_reps > 0 && bench_sample(sample_reps)) rc = 1;
  return rc;
}
