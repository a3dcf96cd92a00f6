/* Offset tables as strided runs (src/exec/exec_runs.c) against the table itself: gathers,
 * scatters and scatter-adds over tables made of transposed, rolled, reversed, padded and
 * repeated pieces, and random ones; a table of short runs is left as a table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synotest.h"

#include "../../src/exec/exec_runs.h"

/* A table of n entries into an array of m floats, built from pieces of kind 0..4. */
static void make_table(syno_rng_t *rng, int32_t *t, int64_t n, int64_t m) {
  int64_t i = 0;
  while (i < n) {
    int64_t len = 1 + (int64_t)(syno_rng_uniform(rng) * 40), kind = (int64_t)(syno_rng_uniform(rng) * 5);
    int64_t start = (int64_t)(syno_rng_uniform(rng) * (double)m);
    for (int64_t j = 0; j < len && i < n; j++, i++) {
      int64_t o;
      switch (kind) {
        case 0: o = -1; break;                            /* zero padding */
        case 1: o = (start + j) % m; break;               /* contiguous, rolled at the end */
        case 2: o = (start + 7 * j) % m; break;           /* a column of a transposed map */
        case 3: o = start - j >= 0 ? start - j : -1; break; /* reversed */
        default: o = start; break;                        /* one value repeated (stride 0) */
      }
      t[i] = (int32_t)o;
    }
  }
}

static void test_against_table(void **state) {
  (void)state;
  syno_rng_t rng;
  syno_rng_seed(&rng, 9, 1);
  for (int round = 0; round < 200; round++) {
    const int64_t n = 1 + (int64_t)(syno_rng_uniform(&rng) * 3000), m = 1 + (int64_t)(syno_rng_uniform(&rng) * 500);
    int32_t *t = malloc(sizeof *t * (size_t)n);
    float *x = st_random(&rng, m), *y = st_random(&rng, n), *want = malloc(sizeof(float) * (size_t)n);
    float *xs = malloc(sizeof(float) * (size_t)m), *xw = malloc(sizeof(float) * (size_t)m);
    make_table(&rng, t, n, m);
    exec_runs_t *r = exec_runs_new(t, n, 1);
    assert_non_null(r);
    /* gather */
    float *got = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) want[i] = t[i] >= 0 ? x[t[i]] : 0.0f;
    exec_runs_gather(r, x, got);
    assert_memory_equal(got, want, sizeof(float) * (size_t)n);
    /* scatter-add (entries may repeat) */
    memcpy(xs, x, sizeof(float) * (size_t)m);
    memcpy(xw, x, sizeof(float) * (size_t)m);
    for (int64_t i = 0; i < n; i++)
      if (t[i] >= 0) xw[t[i]] += y[i];
    exec_runs_scatter(r, y, xs, 1);
    assert_true(st_rel_err(xs, xw, m) < 1e-6);
    exec_runs_free(r);
    free(got);
    free(t);
    free(x);
    free(y);
    free(want);
    free(xs);
    free(xw);
  }
}

/* A plain scatter through a permutation (no repeats): every entry lands once. */
static void test_scatter_permutation(void **state) {
  (void)state;
  enum { H = 13, W = 29 };
  int32_t t[H * W];
  for (int h = 0; h < H; h++)
    for (int w = 0; w < W; w++) t[h * W + w] = (int32_t)(w * H + (h + 3) % H); /* transposed and rolled */
  exec_runs_t *r = exec_runs_new(t, H * W, 8);
  assert_non_null(r);
  float y[H * W], x[H * W], want[H * W];
  for (int i = 0; i < H * W; i++) y[i] = (float)i;
  for (int i = 0; i < H * W; i++) want[t[i]] = y[i];
  exec_runs_scatter(r, y, x, 0);
  assert_memory_equal(x, want, sizeof x);
  exec_runs_free(r);
  /* one entry per run: kept as a table */
  int32_t scattered[64];
  for (int i = 0; i < 64; i++) scattered[i] = (int32_t)((i * 37) % 64);
  assert_null(exec_runs_new(scattered, 64, 8));
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_against_table), cmocka_unit_test(test_scatter_permutation)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
