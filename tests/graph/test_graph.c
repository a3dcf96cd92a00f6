/* The hash-consed graph, constructor legality, operator assembly and the
 * text form. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synotest.h"

typedef struct {
  syno_vars_t v;
  syno_graph_t *g;
  syno_dim_t h, w, c, k; /* iterators i0:H, i1:W, i2:C; a reduction k */
} fixture_t;

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  syno_error_t err;
  syno_vars_init(&f->v);
  if (syno_vars_declare(&f->v, "H, W, C; k=3, s=2", &err) || syno_vars_bind(&f->v, "H=8, W=6, C=4", &err) ||
      syno_vars_bind(&f->v, "H=16, W=10, C=8", &err))
    return -1;
  f->g = syno_graph_new(&f->v);
  syno_size_t H, W, C, k;
  syno_size_parse(&f->v, "H", &H, NULL);
  syno_size_parse(&f->v, "W", &W, NULL);
  syno_size_parse(&f->v, "C", &C, NULL);
  syno_size_parse(&f->v, "k", &k, NULL);
  if (syno_graph_iterator(f->g, 0, H, false, &f->h, &err) || syno_graph_iterator(f->g, 1, W, false, &f->w, &err) ||
      syno_graph_iterator(f->g, 2, C, true, &f->c, &err) || syno_graph_reduce(f->g, k, SYNO_REDUCE_SUM, 0, &f->k, &err))
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  syno_graph_free(f->g);
  free(f);
  return 0;
}

static syno_size_t sz(fixture_t *f, const char *s) {
  syno_size_t out;
  syno_error_t err;
  if (syno_size_parse(&f->v, s, &out, &err)) fail_msg("%s", err.msg);
  return out;
}

static void test_hash_consing(void **state) {
  fixture_t *f = *state;
  syno_error_t err;
  syno_dim_t a, b, x, y;
  uint32_t dims = syno_graph_num_dims(f->g), prims = syno_graph_num_prims(f->g);
  /* Leaves are interned. */
  syno_dim_t h2;
  assert_int_equal(syno_graph_iterator(f->g, 0, sz(f, "H"), false, &h2, &err), 0);
  assert_int_equal(h2, f->h);
  /* The same sub-graph twice is the same object. */
  assert_int_equal(syno_graph_split(f->g, f->h, f->w, &a, &err), 0);
  assert_int_equal(syno_graph_shift(f->g, a, &x, &err), 0);
  assert_int_equal(syno_graph_split(f->g, f->h, f->w, &b, &err), 0);
  assert_int_equal(syno_graph_shift(f->g, b, &y, &err), 0);
  assert_int_equal(a, b);
  assert_int_equal(x, y);
  assert_int_equal(syno_graph_num_prims(f->g), prims + 2);
  assert_int_equal(syno_graph_num_dims(f->g), dims + 2);
  /* Different operand order or parameters are different objects. */
  syno_dim_t c, l1, r1, l2, r2;
  assert_int_equal(syno_graph_split(f->g, f->w, f->h, &c, &err), 0);
  assert_int_not_equal(c, a);
  assert_int_equal(syno_graph_merge(f->g, f->h, sz(f, "s"), &l1, &r1, &err), 0);
  assert_int_equal(syno_graph_merge(f->g, f->h, sz(f, "s^2"), &l2, &r2, &err), 0);
  assert_int_not_equal(l1, l2);
  assert_int_not_equal(l1, r1);
  assert_int_equal(syno_graph_merge(f->g, f->h, sz(f, "s"), &l2, &r2, &err), 0);
  assert_int_equal(l1, l2);
  assert_int_equal(r1, r2);
  /* The two inputs of a Share are distinct, and the weight id matters. */
  syno_dim_t d1, w1, d2, w2;
  assert_int_equal(syno_graph_share(f->g, f->c, 1, &d1, &w1, &err), 0);
  assert_int_not_equal(d1, w1);
  assert_int_equal(syno_graph_share(f->g, f->c, 2, &d2, &w2, &err), 0);
  assert_int_not_equal(d1, d2);
  assert_int_equal(syno_graph_share(f->g, f->c, 1, &d2, &w2, &err), 0);
  assert_int_equal(d1, d2);
  assert_int_equal(w1, w2);
  /* Sizes of created dims. */
  assert_true(syno_size_eq(syno_graph_dim(f->g, a)->size, sz(f, "H*W")));
  assert_true(syno_size_eq(syno_graph_dim(f->g, l1)->size, sz(f, "H/s")));
  assert_int_equal(syno_graph_below(f->g, a)->kind, SYNO_PRIM_SPLIT); /* a is the split's input */
  assert_int_equal(syno_graph_below(f->g, x)->kind, SYNO_PRIM_SHIFT);
  assert_null(syno_graph_below(f->g, f->h));
}

static void expect_fail(int rc, const syno_error_t *err, const char *want) {
  assert_int_not_equal(rc, 0);
  if (!strstr(err->msg, want)) fail_msg("message '%s' lacks '%s'", err->msg, want);
}

static void test_constructor_legality(void **state) {
  fixture_t *f = *state;
  syno_error_t err;
  syno_dim_t a, b, win;
  /* A merge block that does not divide under some binding (W=6, W=10 by 4). */
  syno_dim_t c4;
  syno_graph_reduce(f->g, sz(f, "s^2"), SYNO_REDUCE_SUM, 0, &c4, &err);
  expect_fail(syno_graph_merge(f->g, f->w, sz(f, "s^2"), &a, &b, &err), &err, "does not divide");
  expect_fail(syno_graph_merge(f->g, f->h, sz(f, "H"), &a, &b, &err), &err, "it is 1");
  expect_fail(syno_graph_merge(f->g, f->h, sz(f, "W"), &a, &b, &err), &err, "not a legal size");
  /* An even window (s = 2) and a window larger than the dim. */
  syno_dim_t even;
  syno_graph_reduce(f->g, sz(f, "s"), SYNO_REDUCE_SUM, 0, &even, &err);
  syno_graph_share(f->g, even, 1, &win, NULL, &err);
  expect_fail(syno_graph_unfold(f->g, f->h, win, &a, &err), &err, "is even");
  syno_dim_t big;
  syno_graph_reduce(f->g, sz(f, "k^3"), SYNO_REDUCE_SUM, 0, &big, &err); /* 27 > H */
  syno_graph_share(f->g, big, 1, &win, NULL, &err);
  expect_fail(syno_graph_unfold(f->g, f->h, win, &a, &err), &err, "larger than the unfolded dim");
  expect_fail(syno_graph_unfold(f->g, f->h, f->h, &a, &err), &err, "must differ");
  expect_fail(syno_graph_split(f->g, f->h, f->h, &a, &err), &err, "must differ");
  /* Weights are plain: a weight axis is never shared again nor broadcast. */
  syno_dim_t wd;
  assert_int_equal(syno_graph_share(f->g, f->c, 1, NULL, &wd, &err), 0);
  expect_fail(syno_graph_share(f->g, wd, 2, &a, &b, &err), &err, "weights are plain");
  expect_fail(syno_graph_expand(f->g, wd, NULL, &err), &err, "cannot be broadcast");
  expect_fail(syno_graph_share(f->g, f->c, 4, &a, &b, &err), &err, "out of range");
  expect_fail(syno_graph_shift(f->g, 9999, &a, &err), &err, "no such dimension");
  expect_fail(syno_graph_stride(f->g, f->h, syno_size_one(), &a, &err), &err, "stride factor");
  expect_fail(syno_graph_reduce(f->g, syno_size_one(), SYNO_REDUCE_SUM, 0, &a, &err), &err, "it is 1");
}

/* Parses text against shapes under the fixture's variables. */
static int parse_op(fixture_t *f, const char *text, const char *in, const char *out, syno_operator_t *op,
                    syno_error_t *err) {
  syno_shape_t si, so;
  if (syno_shape_parse(&f->v, in, &si, err) || syno_shape_parse(&f->v, out, &so, err)) fail_msg("%s", err->msg);
  return syno_operator_parse(f->g, text, &si, &so, op, err);
}

static void test_round_trip(void **state) {
  fixture_t *f = *state;
  struct {
    const char *text, *in, *out;
  } cases[] = {
      {"in[split(i0, i1), i2]", "[H*W, C]", "[H, W, C: unordered]"},
      {"in[div(i2, s), mod(i2, s), i0, i1]", "[s^-1*C, s, H, W]", "[H, W, C: unordered]"},
      {"in[shift(i0), i1, i2]", "[H, W, C]", "[H, W, C: unordered]"},
      {"in[share(i0, 1), i1, i2] w1[i0]", "[H, W, C]", "[H, W, C: unordered]"},
      {"in[i0, i2] expand[i1]", "[H, C]", "[H, W, C: unordered]"},
      {"r0=sum(k); in[share(r0, 1), i0, i1, i2] w1[r0]", "[k, H, W, C]", "[H, W, C: unordered]"},
      {"r0=sum(C) r1=sum(k); in[unfold(i0, share(r1, 1)), i1, share(r0, 1)] expand[share(i2, 1)] w1[i2, r0, r1]",
       "[H, W, C]", "[H, W, C: unordered]"},
      /* Two weights: a low-rank chain over C. */
      {"r0=sum(C); in[i0, i1, share(r0, 1)] expand[share(share(i2, 2), 1)] w1[share(i2, 2), r0] w2[i2]", "[H, W, C]",
       "[H, W, C: unordered]"},
      {"r0=sum(k) r1=sum(k); in[unfold(i0, share(r1, 1)), unfold(i1, share(r0, 1)), share(i2, 1)] w1[i2, r0, r1]",
       "[H, W, C]", "[H, W, C: unordered]"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    syno_operator_t a, b;
    syno_error_t err;
    if (parse_op(f, cases[i].text, cases[i].in, cases[i].out, &a, &err)) fail_msg("case %zu: %s", i, err.msg);
    char printed[2048], again[2048];
    syno_operator_print(&a, printed, sizeof printed);
    if (parse_op(f, printed, cases[i].in, cases[i].out, &b, &err)) fail_msg("reparse '%s': %s", printed, err.msg);
    assert_true(syno_operator_eq(&a, &b));
    syno_operator_print(&b, again, sizeof again);
    assert_string_equal(printed, again);
  }
  /* Two spellings of one multiset of reductions are one operator. */
  syno_operator_t x, y;
  syno_error_t err;
  assert_int_equal(parse_op(f, "r0=sum(k) r1=sum(C); in[share(r0,1), share(r1,1), i0, i1, i2] w1[r0, r1]",
                            "[k, C, H, W, C]", "[H, W, C]", &x, &err),
                   0);
  assert_int_equal(parse_op(f, "r5=sum(C) r2=sum(k); in[share(r2,1), share(r5,1), i0, i1, i2] w1[r2, r5]",
                            "[k, C, H, W, C]", "[H, W, C]", &y, &err),
                   0);
  assert_true(syno_operator_eq(&x, &y));
  /* A different weight layout is a different operator. */
  assert_int_equal(parse_op(f, "r0=sum(k) r1=sum(C); in[share(r0,1), share(r1,1), i0, i1, i2] w1[r1, r0]",
                            "[k, C, H, W, C]", "[H, W, C]", &y, &err),
                   0);
  assert_false(syno_operator_eq(&x, &y));
}

static void test_builtins_round_trip(void **state) {
  (void)state;
  for (int i = 0; syno_builtin_at(i); i++) {
    const syno_builtin_t *b = syno_builtin_at(i);
    st_op_t a;
    st_op_builtin(&a, b->name, "");
    char printed[2048];
    syno_operator_print(&a.op, printed, sizeof printed);
    syno_operator_t again;
    syno_error_t err;
    if (syno_operator_parse(a.g, printed, &a.input, &a.output, &again, &err)) fail_msg("%s: %s", b->name, err.msg);
    assert_true(syno_operator_eq(&a.op, &again));
    st_op_free(&a);
  }
}

static void test_operator_errors(void **state) {
  fixture_t *f = *state;
  struct {
    const char *text, *in, *out, *want;
  } cases[] = {
      {"in[i0, i1]", "[H, W]", "[H, W, C]", "output axis i2 is never produced"},
      {"in[i0, i1, i2, i0]", "[H, W, C, H]", "[H, W, C]", "used twice"},
      {"in[div(i0, s), i1, i2]", "[s^-1*H, W, C]", "[H, W, C]", "missing its other input"},
      {"in[share(i0, 1), i1, i2]", "[H, W, C]", "[H, W, C]", "missing its other input"},
      {"in[i0, i1, i2] w1[i0]", "[H, W, C]", "[H, W, C]", "a share is missing its other input"},
      {"in[i0, i1, i3]", "[H, W, C]", "[H, W, C]", "'i3' at column 12 does not exist"},
      {"in[i0, i1, r0]", "[H, W, C]", "[H, W, C]", "'r0' at column 12 is not declared"},
      {"in[i0, i1, foo(i2)]", "[H, W, C]", "[H, W, C]", "found 'foo' at column 12"},
      {"in[i0, i1, i2", "[H, W, C]", "[H, W, C]", "found end of input at column 14"},
      {"in[i1, i0, i2]", "[H, W, C]", "[H, W, C]", "input axis 0 has size W but the input shape says H"},
      {"in[i0, i1]", "[H, W, C]", "[H, W, C]", "has 2 axes but the input shape has 3"},
      {"r0=sum(k); in[i0, i1, i2]", "[H, W, C]", "[H, W, C]", "1 reductions are declared but 0 are used"},
      {"r0=max(k); in[i0, i1, i2]", "[H, W, C]", "[H, W, C]", "'sum' or 'mean'"},
      {"in[i0, i1, i2] w2[i0]", "[H, W, C]", "[H, W, C]", "the next weight"},
      {"in[i0, i1, i2] x", "[H, W, C]", "[H, W, C]", "found 'x' at column 16"},
      {"in[i0, i1, share(share(i2, 1), 1)] w1[i2, share(i2, 1)]", "[H, W, C]", "[H, W, C]",
       "already shared with weight 1"},
      /* A stride outside an unfold window discards data. */
      {"in[stride(i0, s), i1, i2]", "[s*H, W, C]", "[H, W, C]", "discards data"},
      {"in[unfold(i0, i1), i2]", "[H, C]", "[H, W, C]", "is even"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    syno_operator_t op;
    syno_error_t err = {{0}};
    if (parse_op(f, cases[i].text, cases[i].in, cases[i].out, &op, &err) == 0)
      fail_msg("'%s' was accepted", cases[i].text);
    if (!strstr(err.msg, cases[i].want))
      fail_msg("'%s': message '%s' lacks '%s'", cases[i].text, err.msg, cases[i].want);
  }
}

/* The stride extension: a stride on an unfold's position side is absorbed
 * only when the window covers it (k >= 2s - 1). */
static void test_stride_under_unfold(void **state) {
  fixture_t *f = *state;
  syno_operator_t op;
  syno_error_t err;
  assert_int_equal(parse_op(f, "r0=sum(k); in[unfold(stride(i0, s), share(r0, 1)), i1, i2] w1[r0]", "[s*H, W, C]",
                            "[H, W, C]", &op, &err),
                   0);
  /* Window 3 under stride 4 would skip input rows. */
  assert_int_not_equal(parse_op(f, "r0=sum(k); in[unfold(stride(i0, s^2), share(r0, 1)), i1, i2] w1[r0]",
                                "[s^2*H, W, C]", "[H, W, C]", &op, &err),
                       0);
  assert_non_null(strstr(err.msg, "discards data"));
}

/* The Contraction compound builds exactly the shares and expansions the
 * text form spells out, and refuses to share a dim twice. */
static void test_contraction(void **state) {
  fixture_t *f = *state;
  syno_error_t err;
  syno_dim_t dims[2] = {f->c, f->k}, data[2];
  bool expand[2] = {true, false};
  assert_int_equal(syno_graph_contract(f->g, 1, 2, dims, expand, data, &err), 0);
  syno_dim_t in[3] = {f->h, f->w, data[1]}, w[1][SYNO_MAX_RANK];
  int wrank = 2;
  assert_int_equal(syno_graph_share(f->g, f->c, 1, NULL, &w[0][0], &err), 0);
  assert_int_equal(syno_graph_share(f->g, f->k, 1, NULL, &w[0][1], &err), 0);
  syno_operator_t built, parsed;
  assert_int_equal(
      syno_operator_build(f->g, 3, 3, in, 1, &data[0], 1, &wrank, (const syno_dim_t(*)[SYNO_MAX_RANK])w, &built, &err),
      0);
  assert_int_equal(parse_op(f, "r0=sum(k); in[i0, i1, share(r0, 1)] expand[share(i2, 1)] w1[i2, r0]", "[H, W, k]",
                            "[H, W, C: unordered]", &parsed, &err),
                   0);
  assert_true(syno_operator_eq(&built, &parsed));
  assert_int_equal(syno_operator_count(&built, SYNO_PRIM_SHARE), 2);
  assert_int_equal(syno_operator_count(&built, SYNO_PRIM_EXPAND), 1);
  dims[1] = f->c;
  expect_fail(syno_graph_contract(f->g, 2, 2, dims, expand, data, &err), &err, "same dim twice");
}

/* Random mutations of valid texts: the parser rejects or accepts cleanly. */
static void test_parse_mutations(void **state) {
  fixture_t *f = *state;
  const char *base =
      "r0=sum(C) r1=sum(k); in[unfold(i0, share(r1, 1)), i1, share(r0, 1)] expand[share(i2, 1)] w1[i2, r0, r1]";
  syno_shape_t si, so;
  syno_shape_parse(&f->v, "[H, W, C]", &si, NULL);
  syno_shape_parse(&f->v, "[H, W, C: unordered]", &so, NULL);
  syno_rng_t rng;
  syno_rng_seed(&rng, 3, 0);
  const char alphabet[] = "ir0123()[],;=sharedivmodunfoldsplitstridesumeanw1CHWks ";
  size_t n = strlen(base);
  char buf[256];
  int accepted = 0;
  for (int iter = 0; iter < 5000; iter++) {
    memcpy(buf, base, n + 1);
    int edits = 1 + (int)syno_rng_below(&rng, 3);
    for (int e = 0; e < edits; e++) {
      size_t at = syno_rng_below(&rng, n);
      int kind = (int)syno_rng_below(&rng, 3);
      if (kind == 0)
        buf[at] = alphabet[syno_rng_below(&rng, sizeof alphabet - 1)];
      else if (kind == 1)
        memmove(buf + at, buf + at + 1, strlen(buf + at)); /* delete */
      else
        buf[at] = 0; /* truncate */
    }
    syno_operator_t op;
    syno_error_t err;
    accepted += syno_operator_parse(f->g, buf, &si, &so, &op, &err) == 0;
  }
  assert_true(accepted < 5000);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_hash_consing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_constructor_legality, setup, teardown),
      cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
      cmocka_unit_test(test_builtins_round_trip),
      cmocka_unit_test_setup_teardown(test_operator_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stride_under_unfold, setup, teardown),
      cmocka_unit_test_setup_teardown(test_contraction, setup, teardown),
      cmocka_unit_test_setup_teardown(test_parse_mutations, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
