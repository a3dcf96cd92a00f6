/* bench/kernels: Halide kernels (syno/kernels.h) against the executor and oneDNN.
 *
 * (a) --sample operators drawn from the conv2d search space (distinct random walks, seed 1)
 *     at N=8, C_in=C_out=16, H=W=28 are timed forward through the executor; the --slowest of
 *     them (the gather-heavy kind) are compiled as Halide kernels with --sched (Adams2019 by
 *     default) and timed the same way. Prints each, the median speed-up of Halide over the
 *     executor (the goal: >= 10x) and how many Halide kernels are slower.
 * (b) The builtin conv2d (3x3, stride 1, same padding) at every distinct slot shape of the
 *     ResNet on Fashion-MNIST (28x28 padded by 2, batch --batch) as a Halide kernel against
 *     oneDNN's convolution; ratio oneDNN time / Halide time (goal >= 0.8).
 * (c) Compile + schedule seconds per kernel of (a) and (b), median (goal <= 10 s); the
 *     one-off toolchain build (GenGen and the precompiled Halide.h) is reported apart.
 * (d) Unless --no-schedulers: one Shift+Unfold+Share+Reduce operator (a 1x3 convolution
 *     along W) at the (a) binding under every schedule: Adams2019, Mullapudi2016, Li2018 and
 *     none, against the executor.
 *
 * Kernels compile into a fresh temporary cache (removed at the end) unless --cache DIR is
 * given; a kernel found in a given cache is not compiled and its compile time not counted.
 * Times are medians of --reps runs after one warm-up, in ms; one thread unless --threads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "syno/backbone.h"
#include "syno/exec.h"
#include "syno/kernels.h"
#include "syno/lower.h"
#include "syno/nn.h"
#include "syno/space.h"

#define BIND "N=8, C_in=16, C_out=16, H=28"

static const char shift_unfold_op[] =
    "r0=sum(k_1) r1=sum(C_in); in[i0, share(r1, 1), i2, unfold(i3, share(r0, 1))] expand[share(i1, 1)] "
    "w1[r1, i1, r0]";

static int reps = 11, threads = 1;
static double compile_s[4096];
static int n_compiled;

typedef struct {
  char *text;
  double exec_s, halide_s, compile_s;
} cand_t;

static float *random_buf(syno_rng_t *rng, int64_t n) {
  float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  for (int64_t i = 0; x && i < n; i++) x[i] = syno_rng_uniform(rng) * 2 - 1;
  return x;
}

/* An operator and random tensors for it at binding 0 of its graph. */
typedef struct {
  syno_graph_t *g;
  syno_operator_t op;
  int n;
  float *t[SYNO_MAX_TENSORS], *y;
} inst_t;

static int inst_make(inst_t *in, const syno_vars_t *v, const syno_shape_t *is, const syno_shape_t *os, const char *text,
                     syno_error_t *err) {
  memset(in, 0, sizeof *in);
  in->g = syno_graph_new(v);
  if (!in->g) return syno_error_set(err, "out of memory");
  if (syno_operator_parse(in->g, text, is, os, &in->op, err)) return -1;
  syno_rng_t rng;
  syno_rng_seed(&rng, 7, 1);
  in->n = in->op.n_tensors;
  for (int i = 0; i < in->n; i++) {
    int64_t k;
    if (syno_tensor_numel(&in->op, i, 0, &k, err)) return -1;
    in->t[i] = random_buf(&rng, k);
  }
  int64_t k;
  if (syno_output_numel(&in->op, 0, &k, err)) return -1;
  in->y = random_buf(&rng, k);
  return 0;
}

static void inst_free(inst_t *in) {
  for (int i = 0; i < in->n; i++) free(in->t[i]);
  free(in->y);
  if (in->g) syno_graph_free(in->g);
}

/* Median seconds of `reps` forwards (after a warm-up) through the executor (k NULL) or k. */
static double time_fwd(inst_t *in, syno_exec_t *e, syno_kernel_t *k, int n) {
  double *t = malloc(sizeof(double) * (size_t)n);
  syno_error_t err;
  for (int r = -1; r < n; r++) {
    double t0 = syno_clock_seconds();
    int rc = k ? syno_kernel_forward(k, (const float *const *)in->t, in->y, &err)
               : syno_exec_forward(e, (const float *const *)in->t, in->y, &err);
    if (rc) {
      fprintf(stderr, "kernels: forward failed: %s\n", err.msg);
      free(t);
      return NAN;
    }
    if (r >= 0) t[r] = syno_clock_seconds() - t0;
  }
  double m = syno_median(t, n);
  free(t);
  return m;
}

static double exec_time(inst_t *in, int n) {
  syno_exec_t *e = NULL;
  syno_error_t err;
  if (syno_exec_new(&in->op, syno_graph_vars(in->g), 0, &e, &err)) {
    fprintf(stderr, "kernels: executor: %s\n", err.msg);
    return NAN;
  }
  double s = time_fwd(in, e, NULL, n);
  syno_exec_free(e);
  return s;
}

/* The Halide kernel's time, and its compile time in *cs (0 when cached). */
static double halide_time(inst_t *in, syno_sched_t sched, int n, double *cs) {
  syno_kernel_t *k = NULL;
  syno_kernel_info_t info;
  syno_error_t err;
  if (syno_kernel_get(&in->op, 0, sched, &k, &info, &err)) {
    fprintf(stderr, "kernels: %s\n", err.msg);
    return NAN;
  }
  *cs = info.compile_s;
  if (!info.cached && n_compiled < (int)(sizeof compile_s / sizeof *compile_s))
    compile_s[n_compiled++] = info.compile_s;
  syno_kernel_set_threads(k, threads);
  double s = time_fwd(in, NULL, k, n);
  syno_kernel_free(k);
  return s;
}

static int by_exec_desc(const void *a, const void *b) {
  double x = ((const cand_t *)a)->exec_s, y = ((const cand_t *)b)->exec_s;
  return (x < y) - (x > y);
}

/* (a) */
static int sampled(long sample, int slowest, syno_sched_t sched) {
  syno_space_spec_t spec;
  syno_error_t err;
  if (syno_space_preset("conv2d", BIND, &spec, &err)) {
    fprintf(stderr, "kernels: %s\n", err.msg);
    return 1;
  }
  syno_sample_t *smp = calloc((size_t)sample, sizeof *smp);
  cand_t *c = calloc((size_t)sample, sizeof *c);
  if (!smp || !c || syno_space_sample(&spec, sample, 1, 1, 1000000, true, smp, NULL, &err)) {
    fprintf(stderr, "kernels: sampling: %s\n", smp && c ? err.msg : "out of memory");
    return 1;
  }
  int n = 0;
  double t0 = syno_clock_seconds();
  for (long i = 0; i < sample; i++) {
    if (!smp[i].text) continue;
    inst_t in;
    if (inst_make(&in, &spec.vars, &spec.input, &spec.output, smp[i].text, &err)) {
      inst_free(&in);
      continue;
    }
    double s = exec_time(&in, 3);
    inst_free(&in);
    if (isnan(s)) continue;
    c[n].text = smp[i].text;
    c[n].exec_s = s;
    n++;
  }
  qsort(c, (size_t)n, sizeof *c, by_exec_desc);
  if (slowest > n) slowest = n;
  printf(
      "(a) %d distinct conv2d-space operators at %s timed on the executor (%.0f s); the %d slowest\n"
      "    as Halide kernels (%s), %d repeats:\n",
      n, BIND, syno_clock_seconds() - t0, slowest, syno_sched_name(sched), reps);
  printf("    %9s %9s %8s %9s  operator\n", "exec ms", "halide ms", "speed-up", "compile s");
  double *ratio = malloc(sizeof(double) * (size_t)(slowest > 0 ? slowest : 1));
  int nr = 0, slower = 0, failed = 0;
  for (int i = 0; i < slowest; i++) {
    inst_t in;
    if (inst_make(&in, &spec.vars, &spec.input, &spec.output, c[i].text, &err)) {
      inst_free(&in);
      continue;
    }
    c[i].exec_s = exec_time(&in, reps);
    c[i].halide_s = halide_time(&in, sched, reps, &c[i].compile_s);
    inst_free(&in);
    if (isnan(c[i].halide_s)) {
      failed++;
      continue;
    }
    double r = c[i].exec_s / c[i].halide_s;
    ratio[nr++] = r;
    slower += r < 1;
    printf("    %9.3f %9.3f %7.2fx %9.1f  %s\n", 1e3 * c[i].exec_s, 1e3 * c[i].halide_s, r, c[i].compile_s, c[i].text);
    fflush(stdout);
  }
  if (nr)
    printf("    median speed-up of Halide over the executor: %.2fx (goal >= 10x); slower on Halide: %d of %d%s\n",
           syno_median(ratio, nr), slower, nr, failed ? " (some failed to build, see above)" : "");
  free(ratio);
  free(c);
  syno_space_samples_free(smp, sample);
  return failed > 0;
}

/* (b) */
static int builtin_conv(int batch) {
  syno_backbone_cfg_t bc = {.name = "resnet", .in_c = 1, .in_h = 32, .in_w = 32, .nclasses = 10};
  syno_rng_t rng;
  syno_rng_seed(&rng, 1, 1);
  syno_backbone_t bb;
  syno_error_t err;
  if (syno_backbone_build(&bc, &rng, &bb, &err)) {
    fprintf(stderr, "kernels: %s\n", err.msg);
    return 1;
  }
  const syno_builtin_t *b = syno_builtin_find("conv2d");
  printf(
      "\n(b) builtin conv2d (3x3, stride 1, same padding) at the ResNet's slot shapes (Fashion-MNIST\n"
      "    padded to 32x32), batch %d: Halide (Adams2019) against oneDNN, %d repeats:\n",
      batch, reps);
  printf("    %-20s %9s %9s %8s %9s\n", "slot", "oneDNN ms", "halide ms", "ratio", "compile s");
  double ratio[SYNO_BACKBONE_MAX_SLOTS];
  int nr = 0, rc = 0;
  syno_slot_info_t distinct[SYNO_BACKBONE_MAX_SLOTS];
  int nd = syno_backbone_distinct_slots(&bb, distinct, NULL);
  for (int d = 0; d < nd; d++) {
    const syno_slot_info_t si = distinct[d];
    syno_vars_t v;
    syno_vars_init(&v);
    char bind[256];
    snprintf(bind, sizeof bind, "N=%d, C_in=%lld, C_out=%lld, H=%lld, W=%lld, k=3", batch, (long long)si.c_in,
             (long long)si.c_out, (long long)si.h, (long long)si.w);
    syno_shape_t is, os;
    inst_t in;
    memset(&in, 0, sizeof in);
    if (syno_vars_declare(&v, b->vars, &err) || syno_vars_scan(&v, b->input, &err) ||
        syno_vars_scan(&v, b->output, &err) || syno_vars_scan(&v, b->text, &err) || syno_vars_bind(&v, bind, &err) ||
        syno_shape_parse(&v, b->input, &is, &err) || syno_shape_parse(&v, b->output, &os, &err) ||
        inst_make(&in, &v, &is, &os, b->text, &err)) {
      fprintf(stderr, "kernels: %s: %s\n", bind, err.msg);
      inst_free(&in);
      rc = 1;
      continue;
    }
    double cs = 0, hs = halide_time(&in, SYNO_SCHED_ADAMS2019, reps, &cs), ds = NAN;
    inst_free(&in);
    syno_conv2d_cfg_t cc = {.in_channels = si.c_in,
                            .out_channels = si.c_out,
                            .kernel_h = 3,
                            .kernel_w = 3,
                            .stride_h = 1,
                            .stride_w = 1,
                            .pad_h = 1,
                            .pad_w = 1,
                            .dilation_h = 1,
                            .dilation_w = 1,
                            .groups = 1,
                            .backend = SYNO_CONV_ONEDNN};
    if (syno_nn_conv2d_latency(&cc, batch, si.h, si.w, reps, &ds, &err)) fprintf(stderr, "kernels: %s\n", err.msg);
    char name[64];
    snprintf(name, sizeof name, "%lldx%lld %lldx%lld", (long long)si.c_in, (long long)si.c_out, (long long)si.h,
             (long long)si.w);
    printf("    %-20s %9.4f %9.4f %7.2fx %9.1f\n", name, 1e3 * ds, 1e3 * hs, ds / hs, cs);
    fflush(stdout);
    if (!isnan(ds / hs))
      ratio[nr++] = ds / hs;
    else
      rc = 1;
  }
  if (nr) printf("    median oneDNN / Halide: %.2fx (goal >= 0.8x)\n", syno_median(ratio, nr));
  syno_backbone_free(&bb);
  return rc;
}

/* (d) */
static int schedulers(void) {
  syno_space_spec_t spec;
  syno_error_t err;
  inst_t in;
  memset(&in, 0, sizeof in);
  if (syno_space_preset("conv2d", BIND, &spec, &err) ||
      inst_make(&in, &spec.vars, &spec.input, &spec.output, shift_unfold_op, &err)) {
    fprintf(stderr, "kernels: %s\n", err.msg);
    inst_free(&in);
    return 1;
  }
  printf("\n(d) every schedule on one Shift+Unfold+Share+Reduce operator at %s:\n    %s\n", BIND, shift_unfold_op);
  printf("    %-14s %9s %9s %9s\n", "", "ms", "vs exec", "compile s");
  double e = exec_time(&in, reps);
  printf("    %-14s %9.3f %9s %9s\n", "executor", 1e3 * e, "1.00x", "-");
  for (int s = 0; s < SYNO_SCHED_COUNT; s++) {
    double cs = 0, h = halide_time(&in, (syno_sched_t)s, reps, &cs);
    printf("    %-14s %9.3f %8.2fx %9.1f\n", syno_sched_name((syno_sched_t)s), 1e3 * h, e / h, cs);
    fflush(stdout);
  }
  inst_free(&in);
  return 0;
}

int main(int argc, char **argv) {
  static const char usage[] =
      "usage: kernels [--sample N] [--slowest K] [--batch B] [--sched NAME] [--reps R] [--threads T]\n"
      "               [--cache DIR] [--no-schedulers]\n"
      "Halide kernels against the executor (the slowest of N sampled conv2d-space operators) and\n"
      "against oneDNN (the builtin conv2d at the ResNet slot shapes), compile times, schedules.\n"
      "Defaults: 500 sampled, 50 slowest, batch 8, Adams2019, 11 repeats, 1 thread, a fresh cache.\n";
  static const char *const scheds[] = {"Adams2019", "Mullapudi2016", "Li2018", "none", NULL};
  long sample = 500;
  int slowest = 50, batch = 8, no_sched = 0;
  const char *sched_name = "Adams2019", *cache = NULL;
  syno_opt_t opts[] = {
      SYNO_OPT_INT("sample", "N", &sample, 1, 100000, "operators sampled and timed on the executor (default 500)"),
      SYNO_OPT_INT("slowest", "K", &slowest, 0, 100000, "of which the K slowest go through Halide (default 50)"),
      SYNO_OPT_INT("batch", "B", &batch, 1, 4096, "(b)'s batch (default 8)"),
      SYNO_OPT_ENUM("sched", "NAME", &sched_name, scheds, "(a)'s schedule (default Adams2019)"),
      BENCH_OPT_REPS(&reps, 1000),
      SYNO_OPT_INT("threads", "T", &threads, 1, 256, "threads of BLAS, oneDNN and Halide (default 1)"),
      SYNO_OPT_PATH("cache", "DIR", &cache, SYNO_OPT_DIR,
                    "the kernel cache, an existing directory (default: a fresh\none, removed after)"),
      SYNO_OPT_FLAG("no-schedulers", &no_sched, "skip (d)"),
      SYNO_OPT_END,
  };
  bench_options("kernels", usage, opts, argc, argv);
  syno_sched_t sched = SYNO_SCHED_ADAMS2019;
  syno_sched_parse(sched_name, &sched);
  syno_error_t err;
  if (syno_kernels_available(&err)) {
    fprintf(stderr, "kernels: %s\n", err.msg);
    return 1;
  }
  char tmp[] = "/tmp/syno-bench-kernels-XXXXXX";
  if (!cache) {
    if (!mkdtemp(tmp)) {
      perror("kernels: mkdtemp");
      return 1;
    }
    cache = tmp;
  }
  setenv("SYNO_KERNEL_CACHE", cache, 1);
  syno_nn_threads_set(threads);
  bench_print_setup(reps);
  printf("Halide kernels cached in %s; compile = C++ generator build + schedule + code generation + link\n\n", cache);
  /* The one-off toolchain build, timed apart: a kernel nobody times compiles it. */
  {
    syno_space_spec_t spec;
    inst_t in;
    memset(&in, 0, sizeof in);
    double t0 = syno_clock_seconds();
    syno_kernel_t *k = NULL;
    if (syno_space_preset("conv2d", "N=1, C_in=2, C_out=2, H=4", &spec, &err) ||
        inst_make(&in, &spec.vars, &spec.input, &spec.output, shift_unfold_op, &err) ||
        syno_kernel_get(&in.op, 0, SYNO_SCHED_NONE, &k, NULL, &err)) {
      fprintf(stderr, "kernels: %s\n", err.msg);
      return 1;
    }
    syno_kernel_free(k);
    inst_free(&in);
    printf("toolchain (GenGen.o, precompiled Halide.h) and one unscheduled kernel: %.1f s\n\n",
           syno_clock_seconds() - t0);
  }
  int rc = 0;
  if (slowest > 0) rc |= sampled(sample, slowest, sched);
  rc |= builtin_conv(batch);
  if (n_compiled) {
    double med = syno_median(compile_s, n_compiled); /* sorts */
    printf("\n(c) compile + schedule per kernel (%d compiled): median %.1f s (goal <= 10 s), max %.1f s\n", n_compiled,
           med, compile_s[n_compiled - 1]);
  }
  if (!no_sched) rc |= schedulers();
  if (cache == tmp) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd)) fprintf(stderr, "kernels: could not remove %s\n", tmp);
  }
  return rc;
}
