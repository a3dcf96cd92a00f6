/* The executor (syno/exec.h) against the reference interpreter: forward and
 * every gradient, on the standard operators. */
#include <stdlib.h>

#include "syno/exec.h"
#include "syno/flopsgame.h"
#include "synotest.h"

static void check_builtin(const char *name, const char *bind) {
  st_op_t o;
  st_op_builtin(&o, name, bind);
  syno_error_t err = {0};
  syno_exec_t *e = NULL;
  assert_int_equal(syno_exec_new(&o.op, syno_graph_vars(o.g), 0, &e, &err), 0);
  syno_lowered_t *low = malloc(sizeof *low);
  assert_int_equal(syno_lower(&o.op, low, &err), 0);
  syno_rng_t rng;
  syno_rng_seed(&rng, 7, 1);
  float *t[SYNO_MAX_TENSORS] = {0}, *g[SYNO_MAX_TENSORS] = {0}, *ref[SYNO_MAX_TENSORS] = {0};
  for (int i = 0; i < o.op.n_tensors; i++) {
    t[i] = st_random(&rng, syno_exec_numel(e, i));
    g[i] = calloc((size_t)syno_exec_numel(e, i), sizeof(float));
    ref[i] = calloc((size_t)syno_exec_numel(e, i), sizeof(float));
  }
  int64_t n_out = syno_exec_numel(e, -1);
  float *out = calloc((size_t)n_out, sizeof(float));
  float *gout = st_random(&rng, n_out);
  float *want = st_forward(&o, &low->forward, 0, t);
  assert_int_equal(syno_exec_forward(e, (const float *const *)t, out, &err), 0);
  assert_true(st_rel_err(out, want, n_out) <= 1e-4);
  assert_int_equal(syno_exec_backward(e, (const float *const *)t, gout, g, &err), 0);
  for (int i = 0; i < o.op.n_tensors; i++) {
    assert_int_equal(syno_interp_grad_scatter(&low->forward, syno_graph_vars(o.g), 0, i, (const float *const *)t, gout,
                                              ref[i], &err),
                     0);
    double ge = st_rel_err(g[i], ref[i], syno_exec_numel(e, i));
    if (ge > 1e-4) fail_msg("%s: gradient of tensor %d differs from the scatter form by %g", name, i, ge);
  }
  for (int i = 0; i < o.op.n_tensors; i++) {
    free(t[i]);
    free(g[i]);
    free(ref[i]);
  }
  free(out);
  free(gout);
  free(want);
  free(low);
  syno_exec_free(e);
  st_op_free(&o);
}

static void test_standard_operators(void **state) {
  (void)state;
  check_builtin("conv2d", "N=2,C_in=4,C_out=8,H=6,W=6,k=3");
  check_builtin("grouped-conv2d", "N=2,C_in=4,C_out=4,H=6,W=6,k=3,g=2");
  check_builtin("linear", "N=3,C_in=5,C_out=7");
  check_builtin("avgpool2d", "N=2,C_in=3,H=6,W=6,k=2");
}

/* Held weights (syno_exec_hold_weights): gathered once per id. An operator whose weight the
 * GEMM reads through a permutation (one weight per output half); the weights change between
 * ids, and once under an id through another buffer. */
static void test_held_weights(void **state) {
  (void)state;
  st_op_t o;
  const char *bind[] = {"N=2, C_in=4, C_out=6, H=4, s=2", NULL};
  st_op_make(&o, "N, C_in, C_out, H; s", "[N, C_in, H, H]", "[N, C_out, H, H]",
             "r0=sum(s) r1=sum(C_in); in[i0, share(r1, 1), i3, split(share(r0, 1), mod(i2, s^-1*H))] "
             "expand[share(i1, 1), share(div(i2, s^-1*H), 1)] w1[r1, i1, div(i2, s^-1*H), r0]",
             bind);
  syno_error_t err = {0};
  syno_exec_t *e = NULL;
  assert_int_equal(syno_exec_new(&o.op, syno_graph_vars(o.g), 0, &e, &err), 0);
  assert_string_equal(syno_exec_strategy(e), "gemm");
  syno_lowered_t *low = malloc(sizeof *low);
  assert_int_equal(syno_lower(&o.op, low, &err), 0);
  syno_rng_t rng;
  syno_rng_seed(&rng, 9, 1);
  int64_t nx = syno_exec_numel(e, 0), nw = syno_exec_numel(e, 1), n_out = syno_exec_numel(e, -1);
  float *x = st_random(&rng, nx), *w = st_random(&rng, nw), *w2 = st_random(&rng, nw);
  float *out = malloc(sizeof(float) * (size_t)n_out);
  const float *t[2] = {x, w};
  for (uint64_t id = 1; id <= 3; id++) {
    syno_exec_hold_weights(e, id);
    for (int rep = 0; rep < 2; rep++) {
      if (id == 2 && rep == 1) t[1] = w2; /* another buffer under the same id: gathered anew */
      float *want = st_forward(&o, &low->forward, 0, (float *const *)t);
      assert_int_equal(syno_exec_forward(e, t, out, &err), 0);
      if (!(st_rel_err(out, want, n_out) <= 1e-4)) fail_msg("id %d rep %d: forward differs", (int)id, rep);
      free(want);
    }
    t[1] = w;
    for (int64_t i = 0; i < nw; i++) w[i] = 0.25f - 2.0f * w[i]; /* new weights, then a new id */
  }
  free(x);
  free(w);
  free(w2);
  free(out);
  free(low);
  syno_exec_free(e);
  st_op_free(&o);
}

static void test_bad_binding(void **state) {
  (void)state;
  st_op_t o;
  st_op_builtin(&o, "linear", "");
  syno_error_t err = {0};
  syno_exec_t *e = NULL;
  assert_int_not_equal(syno_exec_new(&o.op, syno_graph_vars(o.g), 5, &e, &err), 0);
  assert_null(e);
  st_op_free(&o);
}

/* An operator's FLOPs are those of its stages (docs/semantics.md §7.2), which the executor
 * runs: one stage costs as its fused nest; a window the weight does not read
 * is summed first, on the input, at a fraction of the fused cost. */
static void test_staged_flops(void **state) {
  (void)state;
  st_op_t conv, pooled;
  st_op_builtin(&conv, "conv2d", "N=2,C_in=4,C_out=8,H=6,W=6,k=3");
  const char *bind[] = {"N=2, C_in=4, C_out=8, H=6, W=6, k=3", NULL};
  st_op_make(&pooled, "N, C_in, C_out, H, W; k", "[N, C_in: unordered, H, W]", "[N, C_out: unordered, H, W]",
             "r0=sum(k) r1=sum(C_in); in[i0, share(r1, 1), unfold(i2, r0), i3] expand[share(i1, 1)] w1[r1, i1]", bind);
  syno_error_t err = {0};
  syno_nest_t fwd;
  int64_t staged, fused, ran;
  syno_exec_t *e = NULL;

  assert_int_equal(syno_lower_forward(&conv.op, &fwd, &err), 0);
  assert_int_equal(syno_nest_flops(&fwd, syno_graph_vars(conv.g), 0, &fused, &err), 0);
  assert_int_equal(syno_operator_flops(&conv.op, &staged, &err), 0);
  assert_int_equal(fused, 2 * 2 * 8 * 6 * 6 * 4 * 3 * 3);
  assert_int_equal(staged, fused);

  assert_int_equal(syno_lower_forward(&pooled.op, &fwd, &err), 0);
  assert_int_equal(syno_nest_flops(&fwd, syno_graph_vars(pooled.g), 0, &fused, &err), 0);
  assert_int_equal(syno_operator_flops(&pooled.op, &staged, &err), 0);
  assert_int_equal(fused, 2 * (2 * 8 * 6 * 6 * 4 * 3));
  /* sum the window on the input (one add per point), then the 1x1 contraction */
  assert_int_equal(staged, 2 * 4 * 6 * 6 * 3 + 2 * (2 * 8 * 6 * 6 * 4));
  assert_int_equal(syno_exec_new(&pooled.op, syno_graph_vars(pooled.g), 0, &e, &err), 0);
  assert_string_equal(syno_exec_strategy(e), "chain");
  ran = syno_exec_flops(e);
  assert_int_equal(ran, staged);
  syno_exec_free(e);

  /* The FLOPs game (docs/semantics.md §8) of each: the convolution's three reductions all
   * wait for both windows and C_out, so one round pays every multiply-add;
   * the pooled window needs only its Unfold (288 x 3), and C_in waits for
   * C_out (288 x 8). */
  syno_flops_game_t g;
  double cost;
  assert_int_equal(syno_operator_flops_game(&conv.op, 0, &g, &err), 0);
  assert_int_equal(g.n_inc, 3);
  assert_int_equal(g.n_dec, 3);
  assert_int_equal(syno_flops_game_solve(&g, &cost, &err), 0);
  assert_true(cost == 2 * 8 * 6 * 6 * 4 * 3 * 3);
  assert_int_equal(syno_operator_flops_game(&pooled.op, 0, &g, &err), 0);
  assert_int_equal(syno_flops_game_solve(&g, &cost, &err), 0);
  assert_true(cost == 288 * 3 + 288 * 8);
  assert_true(cost <= (double)staged);
  st_op_free(&conv);
  st_op_free(&pooled);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_standard_operators), cmocka_unit_test(test_bad_binding),
                                     cmocka_unit_test(test_held_weights),
                                     cmocka_unit_test(test_staged_flops)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
