/* Fuzzes the one option parser (syno_opt_parse, syno/opt.h) that reads every
 * command line: with the worker's request table (syno_evalreq_from_argv, as
 * `syno eval` reads what the search driver passes it) and with a table that
 * holds an entry of every kind (integers of every width, unsigned, open and
 * closed reals, names, texts, repeatable texts, paths, operands), whose help
 * is printed too.
 *
 * Input: the first byte picks the table (even: the request, odd: every
 * kind); the rest is the arguments after argv[0], one per line. A request
 * that parses must survive the trip the driver makes: written as an
 * argument vector (syno_evalreq_argv) and read back, it gives the same
 * vector (an operator text starting with '-' excepted, see request()).
 * Path entries only look at the file system (stat, access). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "syno/evalproto.h"
#include "syno/opt.h"

#define MAX_ARGS 64

static void request(int argc, char **argv) {
  syno_evalreq_t r, back;
  syno_evalargv_t a, b;
  syno_error_t err;
  syno_evalreq_default(&r);
  if (syno_evalreq_from_argv(argc, argv, &r, &err) != 0) return;
  r.exe = "syno";
  /* A text that starts with '-' reads back as an option ("--x": a missing value, "-h": help)
   * unless written --op=TEXT, which the writer does not do: no operator text starts so (the
   * driver's come from the space), and the worker would refuse it as an operator all the same. */
  if (r.op_text && r.op_text[0] == '-') return;
  if (syno_evalreq_argv(&r, &a, &err)) return;
  syno_evalreq_default(&back);
  FUZZ_CHECK(syno_evalreq_from_argv(a.argc - 1, a.argv + 1, &back, &err) == 0);
  back.exe = "syno";
  FUZZ_CHECK(syno_evalreq_argv(&back, &b, &err) == 0 && a.argc == b.argc);
  for (int i = 0; i < a.argc; i++) FUZZ_CHECK(strcmp(a.argv[i], b.argv[i]) == 0);
}

static void every_kind(int argc, char **argv) {
  static const char *const names[] = {"resnet", "vgg", "gpt", NULL};
  int flag = 0, i32 = 0, n_list = 0;
  signed char i8 = 0;
  short i16 = 0;
  long long i64 = 0;
  uint64_t seed = 0;
  double open = 1, closed = 0, unbounded = 1;
  const char *name = NULL, *text = NULL, *empty = NULL, *list[4] = {0}, *file = NULL, *dir = NULL, *out = NULL,
             *operand = NULL, *operand2 = NULL;
  syno_opt_t t[] = {
      SYNO_OPT_TEXT_OPERAND("TEXT", &operand, "the first operand"),
      SYNO_OPT_TEXT_OPERAND("MORE", &operand2, "the second operand"),
      SYNO_OPT_FLAG("quiet", &flag, "a flag"),
      SYNO_OPT_INT("b", "N", &i8, -128, 127, "one byte"),
      SYNO_OPT_INT("short", "N", &i16, -1000, 30000, "two bytes"),
      SYNO_OPT_INT("epochs", "N", &i32, 1, 10000, "an int"),
      SYNO_OPT_INT("big", "N", &i64, INT64_MIN, INT64_MAX, "eight bytes"),
      SYNO_OPT_UINT("seed", "S", &seed, SYNO_OPT_SEED_EXACT, "a seed"),
      SYNO_OPT_REAL("lr", "X", &open, 0, 100, SYNO_OPT_OPEN_MIN | SYNO_OPT_OPEN_MAX, "an open interval"),
      SYNO_OPT_REAL("ratio", "X", &closed, 0, 1, 0, "a closed interval"),
      SYNO_OPT_REAL("timeout", "S", &unbounded, 0, HUGE_VAL, SYNO_OPT_OPEN_MIN, "no upper bound"),
      SYNO_OPT_ENUM("backbone", "NAME", &name, names, "a name"),
      SYNO_OPT_STR("op", "TEXT", &text, "a text"),
      {.name = "label", .kind = SYNO_OPT_KIND_STR, .flags = SYNO_OPT_EMPTY_OK, .dest = &empty, .help = "may be empty"},
      SYNO_OPT_LIST("bind", "B", list, 4, &n_list, "repeatable"),
      SYNO_OPT_PATH("spec", "FILE", &file, SYNO_OPT_FILE, "an existing file"),
      SYNO_OPT_PATH("out", "DIR", &dir, SYNO_OPT_DIR, "a writable directory"),
      SYNO_OPT_PATH("db", "FILE", &out, SYNO_OPT_NEW, "a file to write"),
      SYNO_OPT_END,
  };
  syno_error_t err;
  if (syno_opt_parse(t, argc, argv, &err) == 0) {
    (void)syno_opt_given(t, "bind");
    syno_opt_conflict(t, "spec", "db", &err);
  }
  char *help = NULL, allowed[256];
  size_t len = 0;
  FILE *f = open_memstream(&help, &len);
  if (f) {
    syno_opt_help(f, t);
    fclose(f);
  }
  free(help);
  for (const syno_opt_t *o = t; o->name; o++) syno_opt_allowed(o, allowed, sizeof allowed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  char *text = fuzz_cstr(data + 1, size - 1);
  if (!text) return 0;
  char *argv[MAX_ARGS + 2];
  argv[0] = "eval";
  int argc = 1 + (size > 1 ? fuzz_split(text, '\n', argv + 1, MAX_ARGS) : 0);
  argv[argc] = NULL;
  if (data[0] % 2 == 0)
    request(argc, argv);
  else
    every_kind(argc, argv);
  free(text);
  return 0;
}
