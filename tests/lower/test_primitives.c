/* Each primitive's forward and backward semantics, through lowering and the
 * interpreter: the printed accesses of docs/semantics.md §6.3, outputs against values
 * computed here by hand, and every gradient against the scatter form and
 * finite differences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synotest.h"

/* Output index (a, b, z) of a rank-3 output [A, B, Z]. */
typedef float (*expect_fn)(float *const *t, int64_t a, int64_t b, int64_t z);

static void check(const char *vars, const char *bind, const char *input, const char *output, const char *text,
                  const char *access, expect_fn expect, int64_t A, int64_t B, int64_t Z) {
  st_op_t o;
  const char *binds[] = {bind, NULL};
  st_op_make(&o, vars, input, output, text, binds);
  syno_lowered_t *low = malloc(sizeof *low);
  syno_error_t err;
  assert_non_null(low);
  if (syno_lower(&o.op, low, &err)) fail_msg("%s", err.msg);
  char *nest = malloc(1 << 14);
  syno_nest_print(&low->forward, &o.vars, nest, 1 << 14);
  if (!strstr(nest, access)) fail_msg("forward nest of '%s' lacks '%s':\n%s", text, access, nest);
  free(nest);

  syno_rng_t rng;
  syno_rng_seed(&rng, 11, 0);
  float *t[SYNO_MAX_TENSORS] = {0};
  int64_t numel[SYNO_MAX_TENSORS];
  for (int i = 0; i < o.op.n_tensors; i++) {
    if (syno_tensor_numel(&o.op, i, 0, &numel[i], &err)) fail_msg("%s", err.msg);
    t[i] = st_random(&rng, numel[i]);
  }
  float *out = st_forward(&o, &low->forward, 0, t);
  for (int64_t a = 0; a < A; a++)
    for (int64_t b = 0; b < B; b++)
      for (int64_t z = 0; z < Z; z++) {
        float want = expect(t, a, b, z), have = out[(a * B + b) * Z + z];
        if (fabsf(want - have) > 1e-5f * (1 + fabsf(want)))
          fail_msg("'%s' at (%lld,%lld,%lld): %g, expected %g", text, (long long)a, (long long)b, (long long)z, have,
                   want);
      }
  /* Gradients: the backward nest against the scatter form, and against finite differences. */
  int64_t n_out = A * B * Z;
  float *gout = st_random(&rng, n_out);
  for (int i = 0; i < o.op.n_tensors; i++) {
    float *g1 = malloc(sizeof(float) * (size_t)numel[i]), *g2 = malloc(sizeof(float) * (size_t)numel[i]);
    if (syno_interp_nest(&low->backward[i], &o.vars, 0, (const float *const *)t, gout, g1, &err) ||
        syno_interp_grad_scatter(&low->forward, &o.vars, 0, i, (const float *const *)t, gout, g2, &err))
      fail_msg("%s", err.msg);
    double e = st_rel_err(g1, g2, numel[i]);
    if (e > 1e-5) fail_msg("'%s': gradient %d, backward nest differs from scatter by %g", text, i, e);
    free(g1);
    free(g2);
    st_check_gradient(&o, low, 0, t, i, 0, 1e-4, &rng);
  }
  free(gout);
  free(out);
  for (int i = 0; i < o.op.n_tensors; i++) free(t[i]);
  free(low);
  st_op_free(&o);
}

/* H = W = 4, c = 2; output [H, W, c*H]. */
#define VARS "H, W; c=2, k=3"
#define BIND "H=4, W=4"
#define OUT "[H, W, c*H]"
enum { H = 4, W = 4, C = 2, Z = C * H };

static float split_e(float *const *t, int64_t a, int64_t b, int64_t z) { return t[0][(a * W + b) * Z + z]; }
static void test_split(void **s) {
  (void)s;
  check(VARS, BIND, "[H*W, c*H]", OUT, "in[split(i0, i1), i2]", "in_0[i_0 * W + i_1, i_2]", split_e, H, W, Z);
}

static float merge_e(float *const *t, int64_t a, int64_t b, int64_t z) {
  return t[0][(((z / H) * H + z % H) * H + a) * W + b];
}
static void test_merge(void **s) {
  (void)s;
  check(VARS, BIND, "[c, H, H, W]", OUT, "in[div(i2, H), mod(i2, H), i0, i1]", "in_0[i_2 / (H), i_2 % H, i_0, i_1]",
        merge_e, H, W, Z);
}

static float shift_e(float *const *t, int64_t a, int64_t b, int64_t z) { return t[0][(((a + 1) % H) * W + b) * Z + z]; }
static void test_shift(void **s) {
  (void)s;
  check(VARS, BIND, "[H, W, c*H]", OUT, "in[shift(i0), i1, i2]", "in_0[(i_0 + 1) % H, i_1, i_2]", shift_e, H, W, Z);
}

static float share_e(float *const *t, int64_t a, int64_t b, int64_t z) { return t[0][(a * W + b) * Z + z] * t[1][a]; }
static void test_share(void **s) {
  (void)s;
  check(VARS, BIND, "[H, W, c*H]", OUT, "in[share(i0, 1), i1, i2] w1[i0]", "in_0[i_0, i_1, i_2] * in_1[i_0]", share_e,
        H, W, Z);
}

static float expand_e(float *const *t, int64_t a, int64_t b, int64_t z) {
  (void)b;
  return t[0][a * Z + z];
}
static void test_expand(void **s) {
  (void)s;
  check(VARS, BIND, "[H, c*H]", OUT, "in[i0, i2] expand[i1]", "in_0[i_0, i_2]", expand_e, H, W, Z);
}

static float reduce_e(float *const *t, int64_t a, int64_t b, int64_t z) {
  float s = 0;
  for (int r = 0; r < H * W; r++) s += t[0][((r * H + a) * W + b) * Z + z];
  return s;
}
static void test_reduce_sum(void **s) {
  (void)s;
  check(VARS, BIND, "[H*W, H, W, c*H]", OUT, "r0=sum(H*W); in[r0, i0, i1, i2]", "in_0[ri_0, i_0, i_1, i_2]", reduce_e,
        H, W, Z);
}

static float mean_e(float *const *t, int64_t a, int64_t b, int64_t z) { return reduce_e(t, a, b, z) / (H * W); }
static void test_reduce_mean(void **s) {
  (void)s;
  check(VARS, BIND, "[H*W, H, W, c*H]", OUT, "r0=mean(H*W); in[r0, i0, i1, i2]", "temp_ri_0 / (H*W)", mean_e, H, W, Z);
}

static float unfold_e(float *const *t, int64_t a, int64_t b, int64_t z) {
  float s = 0;
  for (int r = 0; r < 3; r++) {
    int64_t h = a + r - 1;
    if (h >= 0 && h < H) s += t[0][(h * W + b) * Z + z] * t[1][r];
  }
  return s;
}
static void test_unfold(void **s) {
  (void)s;
  check(VARS, BIND, "[H, W, c*H]", OUT, "r0=sum(k); in[unfold(i0, share(r0, 1)), i1, i2] w1[r0]",
        "in_0[restrict((i_0 + ri_0) - (k) / 2, 0, H), i_1, i_2] * in_1[ri_0]", unfold_e, H, W, Z);
}

/* A stride inside an unfold window is a dilated window, not centred
 * (docs/semantics.md §3.5): with c = 3 the offsets are -4, -1, +2. */
enum { DH = 9, DW = 4, DC = 3 };
static float dilated_e(float *const *t, int64_t a, int64_t b, int64_t j) {
  int64_t h = a + DC * j - (DC * DC) / 2;
  return h >= 0 && h < DH ? t[0][h * DW + b] : 0.0f;
}
static void test_stride_in_window(void **s) {
  (void)s;
  check("H, W; c=3", "H=9, W=4", "[H, W]", "[H, W, c]", "in[unfold(i0, stride(i2, c)), i1]",
        "in_0[restrict((i_0 + i_2 * c) - (c^2) / 2, 0, H), i_1]", dilated_e, DH, DW, DC);
}

/* Two weights sharing a reduced rank axis that the data does not have
 * (low rank): out[a,b,z] = sum_{c,r} x[a,b,c] * U[r,c] * V[z,r]. */
enum { LR = 3 };
static float lowrank_e(float *const *t, int64_t a, int64_t b, int64_t z) {
  float s = 0;
  for (int c = 0; c < Z; c++)
    for (int r = 0; r < LR; r++) s += t[0][(a * W + b) * Z + c] * t[1][r * Z + c] * t[2][z * LR + r];
  return s;
}
static void test_two_weights(void **s) {
  (void)s;
  check(VARS, BIND, "[H, W, c*H]", OUT,
        "r0=sum(c*H) r1=sum(k); in[i0, i1, share(r0, 1)] expand[share(share(r1, 2), 1), share(i2, 2)] "
        "w1[share(r1, 2), r0] w2[i2, r1]",
        "in_2[i_2, ri_", lowrank_e, H, W, Z);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split),       cmocka_unit_test(test_merge),  cmocka_unit_test(test_shift),
      cmocka_unit_test(test_share),       cmocka_unit_test(test_expand), cmocka_unit_test(test_reduce_sum),
      cmocka_unit_test(test_reduce_mean), cmocka_unit_test(test_unfold), cmocka_unit_test(test_stride_in_window),
      cmocka_unit_test(test_two_weights),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
