/* bench/act: the elementwise activations that need e^x (SiLU, sigmoid, GELU), forward and
 * backward through their layers, against the same formulas written with libm's expf / tanhf
 * one element at a time (what the layers did before they used the inlined nn_expf), in one
 * run (the layers on --threads threads, default 1; the loops always on one). Inputs are uniform
 * in [-8, 8]; --elems elements (default 65536: L2 resident) and 4 Mi (memory bound) are timed.
 * Prints ns per element and the ratio.
 *   build/bench/act [--reps R] [--elems N] [--threads T] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "syno/train.h"

#define GELU_C 0.7978845608028654f
#define GELU_A 0.044715f

/* The libm baselines: forward (backward = 0) or the input gradient for dy = g. */
static void ref_silu(const float *x, const float *g, float *y, int64_t n, int backward) {
  for (int64_t i = 0; i < n; i++) {
    float s = 1.0f / (1.0f + expf(-x[i]));
    y[i] = backward ? g[i] * s * (1.0f + x[i] * (1.0f - s)) : x[i] * s;
  }
}

static void ref_sigmoid(const float *x, const float *g, float *y, int64_t n, int backward) {
  for (int64_t i = 0; i < n; i++) {
    float s = 1.0f / (1.0f + expf(-x[i]));
    y[i] = backward ? g[i] * s * (1.0f - s) : s;
  }
}

static void ref_gelu(const float *x, const float *g, float *y, int64_t n, int backward) {
  for (int64_t i = 0; i < n; i++) {
    float v = x[i], t = tanhf(GELU_C * (v + GELU_A * v * v * v));
    y[i] = backward ? g[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_C * (1.0f + 3.0f * GELU_A * v * v))
                    : 0.5f * v * (1.0f + t);
  }
}

typedef struct {
  const char *name;
  syno_layer_t *(*create)(void);
  void (*ref)(const float *, const float *, float *, int64_t, int);
} act_t;

int main(int argc, char **argv) {
  int reps = 21;
  int64_t elems = 65536, threads = 1;
  static const char usage[] =
      "usage: act [--reps R] [--elems N] [--threads T]\n"
      "SiLU, sigmoid and GELU layers (inlined e^x) against libm expf/tanhf loops, ns per element.\n";
  syno_opt_t opts[] = {
      BENCH_OPT_REPS(&reps, 10000),
      SYNO_OPT_INT("elems", "N", &elems, 1, 1 << 26, "elements of the smaller size (default 65536)"),
      SYNO_OPT_INT("threads", "T", &threads, 1, 256, "threads of the layers (default 1)"),
      SYNO_OPT_END,
  };
  bench_options("act", usage, opts, argc, argv);
  bench_signals(0);
  syno_nn_threads_set((int)threads);
  bench_print_setup(reps);
  const act_t acts[] = {{"silu", syno_nn_silu_create, ref_silu},
                        {"sigmoid", syno_nn_sigmoid_create, ref_sigmoid},
                        {"gelu", syno_nn_gelu_create, ref_gelu}};
  const int64_t sizes[2] = {elems, 4 << 20};
  double *t = malloc(sizeof(double) * (size_t)reps);
  printf("%-8s %9s %4s %12s %12s %7s\n", "layer", "elements", "pass", "libm ns/el", "ours ns/el", "ratio");
  for (int si = 0; si < 2; si++) {
    const int64_t n = sizes[si];
    syno_tensor_t x = SYNO_TENSOR_EMPTY, dy = SYNO_TENSOR_EMPTY;
    int64_t d[1] = {n};
    float *y = malloc(sizeof(float) * (size_t)n);
    if (!y || syno_nn_tensor_alloc(&x, 1, d) || syno_nn_tensor_alloc(&dy, 1, d)) {
      fprintf(stderr, "act: out of memory at %lld elements\n", (long long)n);
      return 1;
    }
    syno_rng_t rng;
    syno_rng_seed(&rng, 1, 1);
    for (int64_t i = 0; i < n; i++) x.data[i] = (float)(16.0 * syno_rng_uniform(&rng) - 8.0);
    syno_nn_fill_normal(&rng, &dy, 0, 1);
    for (size_t a = 0; a < sizeof acts / sizeof acts[0] && !bench_stop; a++) {
      syno_layer_t *l = acts[a].create();
      for (int backward = 0; backward <= 1; backward++) {
        double base, ours;
        for (int r = 0; r < reps; r++) {
          double t0 = syno_clock_seconds();
          acts[a].ref(x.data, dy.data, y, n, backward);
          t[r] = syno_clock_seconds() - t0;
        }
        base = syno_median(t, reps);
        for (int r = 0; r < reps; r++) {
          double t0 = syno_clock_seconds();
          int rc = syno_nn_forward(l, &x, 1);
          if (!rc && backward) {
            t0 = syno_clock_seconds(); /* time the backward alone */
            rc = syno_nn_backward(l, &dy);
          }
          t[r] = syno_clock_seconds() - t0;
          if (rc) {
            fprintf(stderr, "act: %s failed\n", acts[a].name);
            return 1;
          }
        }
        ours = syno_median(t, reps);
        printf("%-8s %9lld %4s %12.3f %12.3f %6.2fx\n", acts[a].name, (long long)n, backward ? "bwd" : "fwd",
               base * 1e9 / (double)n, ours * 1e9 / (double)n, base / ours);
      }
      syno_nn_layer_free(l);
    }
    free(y);
    syno_nn_tensor_free(&x);
    syno_nn_tensor_free(&dy);
  }
  free(t);
  return 0;
}
