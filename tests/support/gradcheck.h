/*
 * Central finite-difference gradient checks for syno layers, shared by the tests in tests/nn
 * (header-only: the build turns every test_*.c into its own executable).
 *
 * The scalar checked is L = sum(out * r) for a fixed random r, so dL/dout = r and one backward
 * gives every analytic gradient. Each checked element is perturbed by +-eps and L recomputed
 * in double; float32 rounding then limits agreement to ~1e-4 absolute, hence the tolerance
 * |num - ana| <= atol + rtol * max(|num|, |ana|).
 */
#ifndef SYNO_TESTS_GRADCHECK_H
#define SYNO_TESTS_GRADCHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "syno/nn.h"
#include "syno/train.h"

typedef struct gc_opts {
  double eps, atol, rtol;
  int train;
  int check_input;
  int64_t max_elems; /* per tensor: check a random sample when larger */
} gc_opts_t;

static const gc_opts_t GC_DEFAULT = {1e-2, 5e-4, 1e-2, 1, 1, 400};

static double gc_loss(syno_layer_t *l, const syno_tensor_t *x, const syno_tensor_t *r, int train) {
  if (syno_nn_forward(l, x, train)) return NAN;
  double s = 0.0;
  int64_t n = syno_nn_tensor_numel(&l->out);
  for (int64_t i = 0; i < n; i++) s += (double)l->out.data[i] * r->data[i];
  return s;
}

/* Compares numeric and analytic gradients of one tensor; returns the number of failures. */
static int gc_tensor(syno_layer_t *l, syno_tensor_t *x, const syno_tensor_t *r, float *vals, int64_t n,
                     const float *ana, const gc_opts_t *o, const char *what, syno_rng_t *rng) {
  int fails = 0;
  double worst = 0.0;
  int64_t count = n < o->max_elems ? n : o->max_elems;
  for (int64_t k = 0; k < count; k++) {
    int64_t i = n <= o->max_elems ? k : (int64_t)syno_rng_below(rng, (uint64_t)n);
    float keep = vals[i];
    vals[i] = keep + (float)o->eps;
    double lp = gc_loss(l, x, r, o->train);
    vals[i] = keep - (float)o->eps;
    double lm = gc_loss(l, x, r, o->train);
    vals[i] = keep;
    /* The perturbation actually applied, after float rounding. */
    double h = ((double)(keep + (float)o->eps) - (double)(keep - (float)o->eps));
    double num = (lp - lm) / h, a = ana[i];
    double err = fabs(num - a), lim = o->atol + o->rtol * fmax(fabs(num), fabs(a));
    if (err / lim > worst) worst = err / lim;
    if (!(err <= lim)) {
      if (fails < 5) fprintf(stderr, "  %s[%lld]: numeric %.6g analytic %.6g\n", what, (long long)i, num, a);
      fails++;
    }
  }
  fprintf(stderr, "  gradcheck %-8s %-10s %5lld elems, worst err/tol %.3f%s\n", syno_nn_layer_kind(l), what,
          (long long)count, worst, fails ? "  FAIL" : "");
  return fails;
}

/* Full check of a layer at input x (modified and restored). Returns the failure count. */
static int gc_layer(syno_layer_t *l, syno_tensor_t *x, const gc_opts_t *o, uint64_t seed) {
  syno_rng_t rng;
  syno_rng_seed(&rng, seed, 7);
  if (syno_nn_forward(l, x, o->train)) {
    fprintf(stderr, "  forward failed\n");
    return 1;
  }
  syno_tensor_t r = SYNO_TENSOR_EMPTY, dx = SYNO_TENSOR_EMPTY;
  syno_nn_tensor_alloc(&r, l->out.ndim, l->out.dims);
  syno_nn_fill_normal(&rng, &r, 0.0, 1.0);
  syno_nn_zero_grad(l);
  l->skip_input_grad = !o->check_input;
  if (syno_nn_backward(l, &r)) {
    fprintf(stderr, "  backward failed\n");
    syno_nn_tensor_free(&r);
    return 1;
  }
  int fails = 0;
  if (o->check_input) {
    syno_nn_tensor_copy(&dx, &l->grad_in);
    fails += gc_tensor(l, x, &r, x->data, syno_nn_tensor_numel(x), dx.data, o, "input", &rng);
  }
  int np = syno_nn_params(l, NULL, 0);
  syno_param_t **ps = malloc((size_t)(np > 0 ? np : 1) * sizeof *ps);
  syno_nn_params(l, ps, np);
  for (int p = 0; p < np; p++) {
    syno_tensor_t g = SYNO_TENSOR_EMPTY;
    syno_nn_tensor_copy(&g, &ps[p]->grad);
    fails += gc_tensor(l, x, &r, ps[p]->value.data, syno_nn_tensor_numel(&g), g.data, o, ps[p]->name, &rng);
    syno_nn_tensor_free(&g);
  }
  free(ps);
  syno_nn_tensor_free(&dx);
  syno_nn_tensor_free(&r);
  return fails;
}

/* A tensor of the given shape filled with N(0, 1). */
static syno_tensor_t gc_randn(int ndim, const int64_t *dims, uint64_t seed) {
  syno_rng_t rng;
  syno_tensor_t t = SYNO_TENSOR_EMPTY;
  syno_rng_seed(&rng, seed, 3);
  syno_nn_tensor_alloc(&t, ndim, dims);
  syno_nn_fill_normal(&rng, &t, 0.0, 1.0);
  return t;
}

#endif
