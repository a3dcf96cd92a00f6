/* Sizes, variables, bindings and their parsers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synotest.h"

static void declare(syno_vars_t *v, const char *decl, const char *bind) {
  syno_error_t err;
  syno_vars_init(v);
  if (syno_vars_declare(v, decl, &err)) fail_msg("%s", err.msg);
  if (bind && syno_vars_bind(v, bind, &err)) fail_msg("%s", err.msg);
}

static syno_size_t parse(const syno_vars_t *v, const char *s) {
  syno_size_t out;
  syno_error_t err;
  if (syno_size_parse(v, s, &out, &err)) fail_msg("%s: %s", s, err.msg);
  return out;
}

static void expect_print(const syno_vars_t *v, syno_size_t s, const char *want) {
  char buf[128];
  syno_size_print(v, s, buf, sizeof buf);
  assert_string_equal(buf, want);
}

static void test_declare_sorted_and_metadata(void **state) {
  (void)state;
  syno_vars_t v;
  declare(&v, "W: 2, H: 2, N: 0, C_in; s=2: 2, k=3", NULL);
  assert_int_equal(v.n[SYNO_PRIMARY], 4);
  assert_int_equal(v.n[SYNO_COEFF], 2);
  /* ASCII order: uppercase first, so C_in < H < N < W. */
  assert_string_equal(v.var[SYNO_PRIMARY][0].name, "C_in");
  assert_string_equal(v.var[SYNO_PRIMARY][1].name, "H");
  assert_string_equal(v.var[SYNO_PRIMARY][2].name, "N");
  assert_string_equal(v.var[SYNO_PRIMARY][3].name, "W");
  assert_int_equal(v.var[SYNO_PRIMARY][1].max_occurrence, 2);
  assert_int_equal(v.var[SYNO_PRIMARY][2].max_occurrence, 0);
  assert_int_equal(v.var[SYNO_PRIMARY][0].max_occurrence, SYNO_DEFAULT_MAX_OCCURRENCE);
  assert_string_equal(v.var[SYNO_COEFF][0].name, "k");
  assert_int_equal(v.var[SYNO_COEFF][0].default_value, 3);
  assert_int_equal(v.var[SYNO_COEFF][1].default_value, 2);
  assert_int_equal(v.var[SYNO_COEFF][1].max_occurrence, 2);
  /* Anonymous variables. */
  declare(&v, "5, 7; 3: 2", NULL);
  assert_string_equal(v.var[SYNO_PRIMARY][0].name, "x_0");
  assert_int_equal(v.var[SYNO_PRIMARY][1].default_value, 7);
  assert_string_equal(v.var[SYNO_COEFF][0].name, "c_0");
  assert_int_equal(v.var[SYNO_COEFF][0].max_occurrence, 2);
}

static void test_declare_errors(void **state) {
  (void)state;
  struct {
    const char *decl, *want;
  } cases[] = {
      {"H, H", "declared twice"},
      {"H, 3x", "at column 5"},
      {"H; k; s;", "a second ';'"},
      {"H=0", "positive integer value"},
      {"A,B,C,D,E,F,G,H,I", "too many primary"},
      {"i0", "reserved"},
      {"H:", "occurrence limit"},
      {"H W", "expected ',' or ';' but found 'W' at column 3"},
      {"H, =", "expected a variable name or value but found '=' at column 4"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    syno_vars_t v;
    syno_error_t err;
    syno_vars_init(&v);
    assert_int_not_equal(syno_vars_declare(&v, cases[i].decl, &err), 0);
    if (!strstr(err.msg, cases[i].want))
      fail_msg("'%s': message '%s' lacks '%s'", cases[i].decl, err.msg, cases[i].want);
  }
}

static void test_scan_kinds(void **state) {
  (void)state;
  syno_vars_t v;
  syno_error_t err;
  syno_vars_init(&v);
  assert_int_equal(syno_vars_scan(&v, "[N, C_in: unordered, s^-1*H]", &err), 0);
  assert_int_equal(syno_vars_scan(&v, "r0=sum(k); in[unfold(i2, share(r0, 1))] w1[r0]", &err), 0);
  syno_var_kind_t kind;
  int idx;
  assert_int_equal(syno_vars_find(&v, "N", &kind, &idx), 0);
  assert_int_equal(kind, SYNO_PRIMARY);
  assert_int_equal(syno_vars_find(&v, "s", &kind, &idx), 0);
  assert_int_equal(kind, SYNO_COEFF);
  assert_int_equal(syno_vars_find(&v, "k", &kind, &idx), 0);
  assert_int_equal(kind, SYNO_COEFF);
  /* Attributes, calls and loop names are not variables. */
  assert_int_not_equal(syno_vars_find(&v, "unordered", NULL, NULL), 0);
  assert_int_not_equal(syno_vars_find(&v, "share", NULL, NULL), 0);
  assert_int_not_equal(syno_vars_find(&v, "r0", NULL, NULL), 0);
  assert_int_not_equal(syno_vars_find(&v, "w1", NULL, NULL), 0);
  assert_int_equal(v.n[SYNO_PRIMARY] + v.n[SYNO_COEFF], 5);
}

static void test_bind(void **state) {
  (void)state;
  syno_vars_t v;
  syno_error_t err;
  declare(&v, "H, W; k=3", "H=8, W=6");
  assert_int_equal(syno_vars_bind(&v, "W=4,H=2,k=5", &err), 0);
  assert_int_equal(v.nbind, 2);
  assert_int_equal(v.bind[0].c[0], 3); /* default */
  assert_int_equal(v.bind[1].c[0], 5);
  assert_int_not_equal(syno_vars_bind(&v, "H=2", &err), 0);
  assert_non_null(strstr(err.msg, "no value for variable 'W'"));
  assert_int_not_equal(syno_vars_bind(&v, "H=2,W=2,Q=1", &err), 0);
  assert_non_null(strstr(err.msg, "unknown variable 'Q' at column 9"));
  assert_int_not_equal(syno_vars_bind(&v, "H=2,W=0", &err), 0);
  assert_non_null(strstr(err.msg, "column 7"));
  assert_int_not_equal(syno_vars_bind(&v, "H=2,H=3,W=1", &err), 0);
  assert_non_null(strstr(err.msg, "bound twice"));
  assert_int_equal(v.nbind, 2);
  /* No declaration after a binding: indices would move under it. */
  assert_int_not_equal(syno_vars_add(&v, SYNO_PRIMARY, "A", 3, 0, &err), 0);
}

static void test_arithmetic_and_traits(void **state) {
  (void)state;
  syno_vars_t v;
  declare(&v, "H, W; c, s", "H=12, W=8, c=2, s=3");
  syno_size_t h = parse(&v, "H"), c = parse(&v, "c");
  syno_size_t hw = syno_size_mul(h, parse(&v, "W"));
  expect_print(&v, hw, "H*W");
  expect_print(&v, syno_size_div(h, c), "c^-1*H");
  expect_print(&v, syno_size_pow(syno_size_div(h, c), 2), "c^-2*H^2");
  expect_print(&v, syno_size_one(), "1");
  assert_true(syno_size_eq(parse(&v, "H*W/W"), h));
  assert_true(syno_size_eq(parse(&v, "c^-1*H"), parse(&v, "H/c")));
  assert_int_equal(syno_size_trait(syno_size_one()), SYNO_TRAIT_ONE);
  assert_int_equal(syno_size_trait(c), SYNO_TRAIT_COEFFICIENT);
  assert_int_equal(syno_size_trait(syno_size_div(syno_size_one(), c)), SYNO_TRAIT_ILLEGAL_COEFFICIENT);
  assert_int_equal(syno_size_trait(syno_size_div(h, c)), SYNO_TRAIT_GENERAL);
  assert_int_equal(syno_size_trait(syno_size_div(c, h)), SYNO_TRAIT_INVALID);
  assert_int_equal(syno_size_total_power(parse(&v, "c^-2*H^2*W")), 5);
  assert_int_equal(syno_size_num_vars(parse(&v, "c^-2*H^2*W")), 3);
  /* Lexicographic order: primaries first. */
  assert_true(syno_size_cmp(c, h) < 0);
  assert_true(syno_size_cmp(h, hw) < 0);
  assert_int_equal(syno_size_cmp(h, h), 0);
  assert_int_not_equal(syno_size_hash(h), syno_size_hash(c));
  /* The hash's values are frozen: every structural hash is built on them. */
  assert_int_equal(syno_size_hash(syno_size_one()), 0x2c1670827a0447b6ull);
  syno_size_t x = syno_size_one();
  x.p[0] = 1, x.p[1] = 2, x.c[0] = -1;
  assert_int_equal(syno_size_hash(x), 0x95feb2307ecb1e58ull);
}

static void test_eval(void **state) {
  (void)state;
  syno_vars_t v;
  syno_error_t err;
  declare(&v, "H, W; c, s", "H=12, W=8, c=2, s=3");
  assert_int_equal(syno_vars_bind(&v, "H=10, W=8, c=5, s=3", &err), 0);
  int64_t num, den, x;
  assert_int_equal(syno_size_eval_frac(&v, parse(&v, "H*c^-1*s^-1"), 0, &num, &den, &err), 0);
  assert_int_equal(num, 2);
  assert_int_equal(den, 1);
  assert_int_equal(syno_size_eval_frac(&v, parse(&v, "W/s"), 0, &num, &den, &err), 0);
  assert_int_equal(num, 8);
  assert_int_equal(den, 3);
  assert_int_not_equal(syno_size_eval(&v, parse(&v, "W/s"), 0, &x, &err), 0);
  assert_non_null(strstr(err.msg, "not an integer"));
  assert_int_equal(syno_size_eval(&v, parse(&v, "H/c"), 1, &x, &err), 0);
  assert_int_equal(x, 2);
  /* H/c is 6 and 2: integral under both; H/s only under neither. */
  assert_true(syno_size_is_integral(&v, parse(&v, "H/c")));
  assert_false(syno_size_is_integral(&v, parse(&v, "H/s")));
  assert_true(syno_size_lower_bound(&v, parse(&v, "H/c")) == 2.0);
  assert_true(syno_size_upper_bound(&v, parse(&v, "H/c")) == 6.0);
  assert_true(syno_size_is_legal(&v, parse(&v, "H/c")));
  assert_false(syno_size_is_legal(&v, parse(&v, "c/s"))); /* 2/3 < 1 under the first binding */
  assert_false(syno_size_is_legal(&v, syno_size_one()));
  /* Overflow is an error, not a wrapped number. */
  declare(&v, "H", "H=1000000");
  assert_int_not_equal(syno_size_eval(&v, parse(&v, "H^4"), 0, &x, &err), 0);
  assert_non_null(strstr(err.msg, "overflows"));
  assert_int_not_equal(syno_size_eval(&v, parse(&v, "H"), 3, &x, &err), 0);
}

static void test_parse_errors(void **state) {
  (void)state;
  syno_vars_t v;
  declare(&v, "H, W; k", NULL);
  struct {
    const char *text, *want;
  } cases[] = {
      {"H*Q", "unknown variable 'Q' at column 3"},
      {"H*", "expected a variable name but found end of input at column 3"},
      {"3", "no numeric constants: '3' at column 1"},
      {"H^x", "expected an exponent (at most 64) but found 'x' at column 3"},
      {"H W", "expected end of size but found 'W' at column 3"},
      {"H^99", "exponent"},
      {"H^65", "an exponent (at most 64)"},
      {"", "expected a variable name but found end of input at column 1"},
      {"H\x01", "byte 0x01"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    syno_size_t s;
    syno_error_t err;
    assert_int_not_equal(syno_size_parse(&v, cases[i].text, &s, &err), 0);
    if (!strstr(err.msg, cases[i].want))
      fail_msg("'%s': message '%s' lacks '%s'", cases[i].text, err.msg, cases[i].want);
  }
}

static void test_shapes(void **state) {
  (void)state;
  syno_vars_t v;
  syno_error_t err;
  declare(&v, "N, C_in, H, W; s", "N=2, C_in=3, H=4, W=4, s=2");
  syno_shape_t sh;
  assert_int_equal(syno_shape_parse(&v, "[N, C_in: unordered, s^-1*H, W]", &sh, &err), 0);
  assert_int_equal(sh.rank, 4);
  assert_true(sh.unordered[1]);
  assert_false(sh.unordered[0]);
  char buf[128];
  syno_shape_print(&v, &sh, buf, sizeof buf);
  assert_string_equal(buf, "[N, C_in: unordered, s^-1*H, W]");
  expect_print(&v, syno_shape_numel(&sh), "s^-1*C_in*H*N*W");
  assert_int_equal(syno_shape_parse(&v, "[]", &sh, &err), 0);
  assert_int_equal(sh.rank, 0);
  const char *bad[] = {"N, H]", "[N, H", "[N: ordered]", "[N,, H]", "[N] x", "[N, H: unordered+]"};
  const char *want[] = {"'[' to open",   "',' or ']'",   "attribute 'unordered'",
                        "variable name", "end of shape", "attribute"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_not_equal(syno_shape_parse(&v, bad[i], &sh, &err), 0);
    if (!strstr(err.msg, want[i])) fail_msg("'%s': '%s' lacks '%s'", bad[i], err.msg, want[i]);
  }
}

/* Random strings over the grammar's alphabet: the parsers must return
 * cleanly (the sanitizer build checks memory). */
static void test_parse_random_input(void **state) {
  (void)state;
  syno_vars_t v;
  declare(&v, "H, W; k=3", "H=4, W=4");
  const char alphabet[] = "HWk1234567890^*/-[],: unordered=;;\x7f\x80\xff";
  syno_rng_t rng;
  syno_rng_seed(&rng, 7, 0);
  char buf[64];
  int ok = 0;
  for (int iter = 0; iter < 20000; iter++) {
    int len = (int)syno_rng_below(&rng, sizeof buf - 1);
    for (int i = 0; i < len; i++) buf[i] = alphabet[syno_rng_below(&rng, sizeof alphabet - 1)];
    buf[len] = 0;
    syno_size_t s;
    syno_shape_t sh;
    syno_vars_t w;
    syno_error_t err;
    ok += syno_size_parse(&v, buf, &s, &err) == 0;
    ok += syno_shape_parse(&v, buf, &sh, &err) == 0;
    syno_vars_init(&w);
    ok += syno_vars_declare(&w, buf, &err) == 0;
    w = v;
    w.nbind = 0;
    ok += syno_vars_bind(&w, buf, &err) == 0;
  }
  assert_true(ok > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_declare_sorted_and_metadata),
      cmocka_unit_test(test_declare_errors),
      cmocka_unit_test(test_scan_kinds),
      cmocka_unit_test(test_bind),
      cmocka_unit_test(test_arithmetic_and_traits),
      cmocka_unit_test(test_eval),
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_parse_random_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
