/* The option parser (syno/opt.h): every kind with its range, the syntax (--name VALUE,
 * --name=VALUE, -x, operands, "--"), refusals with their one-line messages, values that must
 * never reach their field (wrapped, truncated, non-finite), repeatable options, help and the
 * conflict check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "syno/opt.h"

typedef struct {
  int flag;
  bool bflag;
  int epochs;
  long subset;
  int64_t big;
  uint64_t seed;
  double lr, ratio;
  const char *backbone, *text, *op, *out, *in, *log;
  const char *bind[3];
  int n_bind;
} vals_t;

static const char *const backbones[] = {"resnet", "vgg", NULL};

/* The table every case reads with (bound to v). */
static void table(vals_t *v, syno_opt_t *t) {
  syno_opt_t all[] = {
      SYNO_OPT_TEXT_OPERAND("TEXT", &v->text, "an operand"),
      SYNO_OPT_FLAG("json", &v->flag, "a flag"),
      SYNO_OPT_FLAG("quiet", &v->bflag, "a bool flag"),
      SYNO_OPT_INT("epochs", "E", &v->epochs, 1, 10000, "an int"),
      SYNO_OPT_INT("subset", "N", &v->subset, 0, 100000000, "a long"),
      SYNO_OPT_INT("big", "N", &v->big, INT64_MIN, INT64_MAX, "the whole int64 range"),
      SYNO_OPT_UINT("seed", "S", &v->seed, UINT64_MAX, "a seed"),
      SYNO_OPT_REAL("lr", "X", &v->lr, 0, 100, SYNO_OPT_OPEN_MIN, "a real, open below"),
      SYNO_OPT_REAL("ratio", "R", &v->ratio, 0, HUGE_VAL, 0, "a real, no upper bound"),
      SYNO_OPT_ENUM("backbone", "NAME", &v->backbone, backbones, "an enum"),
      SYNO_OPT_STR("op", "TEXT", &v->op, "a text"),
      SYNO_OPT_PATH("out", "DIR", &v->out, SYNO_OPT_DIR, "a directory"),
      SYNO_OPT_PATH("in", "FILE", &v->in, SYNO_OPT_FILE, "a file"),
      SYNO_OPT_PATH("log", "FILE", &v->log, SYNO_OPT_NEW, "a file to write"),
      SYNO_OPT_LIST("bind", "B", v->bind, 3, &v->n_bind, "repeatable"),
      SYNO_OPT_INT("n", "N", &v->epochs, 1, 10000, "a one-letter option"),
      SYNO_OPT_END,
  };
  memcpy(t, all, sizeof all);
}
#define NT 17

static void defaults(vals_t *v) {
  memset(v, 0, sizeof *v);
  v->epochs = 2, v->subset = 7, v->big = 5, v->seed = 1, v->lr = 0.1, v->ratio = 0.5;
}

/* Parses the words after the command name; returns syno_opt_parse's status. */
static int parse(vals_t *v, syno_opt_t *t, syno_error_t *err, const char *const *words) {
  char *argv[32] = {"cmd"};
  int argc = 1;
  while (words[argc - 1]) argv[argc] = (char *)words[argc - 1], argc++;
  defaults(v);
  table(v, t);
  err->msg[0] = 0;
  return syno_opt_parse(t, argc, argv, err);
}

#define PARSE(...) parse(&v, t, &err, (const char *const[]){__VA_ARGS__, NULL})

static void test_values(void **state) {
  (void)state;
  vals_t v;
  syno_opt_t t[NT];
  syno_error_t err;
  assert_int_equal(
      PARSE("--json", "--quiet", "--epochs", "10000", "--subset=0", "--seed", "18446744073709551615", "--lr", "1e-3",
            "--ratio", "1e300", "--backbone", "vgg", "--op", "x y", "--big", "-9223372036854775808"),
      0);
  assert_int_equal(v.flag, 1);
  assert_true(v.bflag);
  assert_int_equal(v.epochs, 10000);
  assert_int_equal(v.subset, 0);
  assert_true(v.seed == UINT64_MAX);
  assert_true(v.lr == 1e-3 && v.ratio == 1e300);
  assert_ptr_equal(v.backbone, backbones[1]); /* the list's own string */
  assert_string_equal(v.op, "x y");
  assert_true(v.big == INT64_MIN);
  assert_int_equal(syno_opt_given(t, "json"), 1);
  assert_int_equal(syno_opt_given(t, "lr"), 1);
  assert_int_equal(syno_opt_given(t, "out"), 0);
  assert_int_equal(syno_opt_given(t, "nonexistent"), 0);

  /* Operands in any order, "--" ends the options, a one-letter option, the last value wins. */
  assert_int_equal(PARSE("--epochs", "3", "OPERATOR", "--epochs", "4"), 0);
  assert_string_equal(v.text, "OPERATOR");
  assert_int_equal(v.epochs, 4);
  assert_int_equal(syno_opt_given(t, "epochs"), 2);
  assert_int_equal(PARSE("--", "--json"), 0);
  assert_string_equal(v.text, "--json");
  assert_int_equal(v.flag, 0);
  assert_int_equal(PARSE("-n", "12"), 0);
  assert_int_equal(v.epochs, 12);
  assert_int_equal(PARSE("-n5"), 0);
  assert_int_equal(v.epochs, 5);
  assert_int_equal(PARSE("--bind", "a", "--bind", "b"), 0);
  assert_int_equal(v.n_bind, 2);
  assert_string_equal(v.bind[0], "a");
  assert_string_equal(v.bind[1], "b");
  /* A negative number is a value, not an option. */
  assert_int_equal(PARSE("--big", "-3"), 0);
  assert_true(v.big == -3);

  /* Help anywhere before "--", whatever else is wrong. */
  assert_int_equal(PARSE("--epochs", "0", "--help"), 1);
  assert_int_equal(PARSE("--frob", "-h"), 1);
  assert_int_equal(PARSE("--", "--help"), 0);
}

static void test_refusals(void **state) {
  (void)state;
  vals_t v;
  syno_opt_t t[NT];
  syno_error_t err;
  struct {
    const char *words[4];
    const char *msg;
  } bad[] = {
      {{"--epochs", "4294967297"}, "--epochs 4294967297: must be an integer in 1..10000"},
      {{"--epochs", "0"}, "--epochs 0: must be an integer in 1..10000"},
      {{"--epochs", "2x"}, "--epochs 2x: must be an integer in 1..10000"},
      {{"--epochs", " 2"}, "--epochs  2: must be an integer in 1..10000"},
      {{"--epochs", "2.0"}, "--epochs 2.0: must be an integer in 1..10000"},
      {{"--epochs", ""}, "--epochs '': must be an integer in 1..10000"},
      {{"--subset", "-5"}, "--subset -5: must be an integer in 0..100000000"},
      {{"--big", "9223372036854775808"},
       "--big 9223372036854775808: must be an integer in -9223372036854775808..9223372036854775807"},
      {{"--seed", "-1"}, "--seed -1: must be a non-negative integer"},
      {{"--seed", "18446744073709551616"}, "--seed 18446744073709551616: must be a non-negative integer"},
      {{"--seed", "+1"}, "--seed +1: must be a non-negative integer"},
      {{"--lr", "nan"}, "--lr nan: must be a finite number in (0, 100]"},
      {{"--lr", "inf"}, "--lr inf: must be a finite number in (0, 100]"},
      {{"--lr", "0"}, "--lr 0: must be a finite number in (0, 100]"},
      {{"--lr", "-1"}, "--lr -1: must be a finite number in (0, 100]"},
      {{"--lr", "0x10"}, "--lr 0x10: must be a finite number in (0, 100]"},
      {{"--lr", "1e999"}, "--lr 1e999: must be a finite number in (0, 100]"},
      {{"--ratio", "-0.5"}, "--ratio -0.5: must be a finite number >= 0"},
      {{"--backbone", "lenet"}, "--backbone lenet: must be one of resnet, vgg"},
      {{"--op", ""}, "--op: the value is empty"},
      {{"--epochs"}, "--epochs: needs a value (an integer in 1..10000)"},
      {{"--op", "--json"}, "--op: needs a value TEXT"},
      {{"--json=1"}, "--json=1: the flag takes no value"},
      {{"--frob"}, "unknown option '--frob'"},
      {{"--jso"}, "unknown option '--jso'"}, /* no abbreviations */
      {{"-x"}, "unknown option '-x'"},
      {{"--n", "3"}, "unknown option '--n'"},
      {{"a", "b"}, "unexpected argument 'b'"},
      {{"--bind", "1", "--bind", "2"}, NULL}, /* fine: filled below */
      {{"--out", "/nonexistent-syno-dir/x"}, "--out /nonexistent-syno-dir/x: no such directory"},
      {{"--out", "/dev/null"}, "--out /dev/null: is not a directory"},
      {{"--in", "/nonexistent-syno-file"}, "--in /nonexistent-syno-file: no such file"},
      {{"--in", "/"}, "--in /: is a directory, not a file"},
      {{"--log", "/nonexistent-syno-dir/x.log"},
       "--log /nonexistent-syno-dir/x.log: its directory /nonexistent-syno-dir does not exist"},
      {{"--log", "/dev/null/x.log"}, "--log /dev/null/x.log: its directory /dev/null is not a directory"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    if (!bad[i].msg) continue;
    int n = 0;
    while (n < 4 && bad[i].words[n]) n++;
    const char *w[5] = {0};
    memcpy(w, bad[i].words, sizeof(char *) * (size_t)n);
    char *argv[8] = {"cmd"};
    for (int k = 0; k < n; k++) argv[k + 1] = (char *)w[k];
    defaults(&v);
    table(&v, t);
    err.msg[0] = 0;
    if (syno_opt_parse(t, n + 1, argv, &err) != -1 || strcmp(err.msg, bad[i].msg)) {
      print_error("case %zu: got '%s', wanted '%s'\n", i, err.msg, bad[i].msg);
      fail();
    }
    /* Nothing reached a field. */
    assert_int_equal(v.epochs, 2);
    assert_int_equal(v.subset, 7);
    assert_true(v.seed == 1 && v.lr == 0.1 && v.ratio == 0.5 && v.big == 5);
    assert_null(v.backbone);
  }
  /* A repeatable option holds what it has room for. */
  assert_int_equal(PARSE("--bind", "1", "--bind", "2", "--bind", "3", "--bind", "4"), -1);
  assert_string_equal(err.msg, "--bind: given more than 3 times");
}

static void test_conflict_and_help(void **state) {
  (void)state;
  vals_t v;
  syno_opt_t t[NT];
  syno_error_t err;
  assert_int_equal(PARSE("--json", "--op", "x"), 0);
  assert_int_equal(syno_opt_conflict(t, "json", "quiet", &err), 0);
  assert_int_equal(syno_opt_conflict(t, "json", "op", &err), -1);
  assert_string_equal(err.msg, "--json and --op exclude each other");

  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  syno_opt_help(f, t);
  fclose(f);
  assert_non_null(strstr(buf, "  TEXT                  an operand\n"));
  assert_non_null(strstr(buf, "  --epochs E            an int; an integer in 1..10000\n"));
  assert_non_null(strstr(buf, "  --lr X                a real, open below; a finite number in (0, 100]\n"));
  assert_non_null(strstr(buf, "  --backbone NAME       an enum; one of resnet, vgg\n"));
  assert_non_null(strstr(buf, "  -n N                  a one-letter option; an integer in 1..10000\n"));
  assert_non_null(strstr(buf, "repeatable, up to 3 times"));
  assert_non_null(strstr(buf, "  -h, --help            this help\n"));
  /* The operand comes first. */
  assert_true(strstr(buf, "TEXT") < strstr(buf, "--json"));
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_values),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_conflict_and_help),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
