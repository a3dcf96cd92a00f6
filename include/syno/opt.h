/* syno/opt.h - the one option parser of every command line in the project: the `syno`
 * sub-commands (src/cli), the search worker's request (`syno eval`, syno/evalproto.h) and the
 * benchmark programs (bench/).
 *
 * A command describes its options once, as a table of syno_opt_t ended by SYNO_OPT_END: each
 * entry is typed, says where its value goes and which values it allows, and carries its help
 * line. syno_opt_parse reads a command line by the table and syno_opt_help prints the table,
 * so every command's --help lists every option with its allowed values, and a bad value is
 * refused with one line that names the option and what it allows:
 *
 *   --epochs 4294967297: must be an integer in 1..10000
 *   --lr nan: must be a finite number in (0, 100]
 *   --backbone lenet: must be one of resnet, vgg
 *   --out /nonexistent/dir: no such directory
 *
 * The kinds (the SYNO_OPT_* macros below build the entries):
 *   FLAG  no value; sets an int or a bool to 1.
 *   INT   a decimal integer in [min, max], read with strtoll, errno and the whole string
 *         checked (no wrap-around, no trailing text), into a signed integer of 1, 2, 4 or 8
 *         bytes (int, long, int64_t) whose type holds [min, max].
 *   UINT  a decimal integer in [0, umax] without a sign (seeds), into a uint64_t.
 *   REAL  a finite decimal number in [fmin, fmax] (SYNO_OPT_OPEN_MIN, SYNO_OPT_OPEN_MAX leave
 *         an end out; fmax = HUGE_VAL: no upper bound), into a double. No inf, nan or hex.
 *   ENUM  one of a NULL-terminated list of names; the list's own string (not argv's) goes
 *         into a const char *.
 *   STR   a non-empty text (SYNO_OPT_EMPTY_OK: may be empty), into a const char * (argv's).
 *   PATH  a file name, into a const char *, checked as its flags say: SYNO_OPT_FILE an
 *         existing, readable file that is not a directory; SYNO_OPT_DIR an existing, writable
 *         directory; SYNO_OPT_NEW a file to write, whose directory exists and is writable.
 *
 * Syntax: --name VALUE or --name=VALUE; a one-letter name is written -x VALUE (or -xVALUE).
 * -h or --help anywhere before "--" asks for help: syno_opt_parse returns 1 and checks nothing.
 * Options and operands may come in any order, and "--" ends the options. An operand entry
 * (SYNO_OPT_OPERAND; its name is its placeholder, e.g. "TEXT") takes the next argument that is
 * not an option, in table order; whether it is required is the command's business. A value
 * that starts with "--" counts as a missing value (write --name=--x for such a text). An
 * option given again replaces its earlier value, except a repeatable one (SYNO_OPT_LIST: dest
 * is an array of `repeat` const char *), which collects up to `repeat` values. Names are
 * matched exactly (no abbreviations).
 *
 * Errors: syno_opt_parse returns -1 with a one-line message in err (the caller prefixes its
 * name and exits 2): an unknown option, a missing value, a malformed or out-of-range value, a
 * value given to a flag, a repeatable option given too often, an argument beyond the
 * operands. Nothing is written through dest for a value that is refused. `seen` counts how
 * often each entry was given, for the command's own checks (syno_opt_given,
 * syno_opt_conflict): contradictions and options that do not apply. */
#ifndef SYNO_OPT_H
#define SYNO_OPT_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "syno/error.h"

typedef enum {
  SYNO_OPT_KIND_END, /* the table's end (a zeroed entry) */
  SYNO_OPT_KIND_FLAG,
  SYNO_OPT_KIND_INT,
  SYNO_OPT_KIND_UINT,
  SYNO_OPT_KIND_REAL,
  SYNO_OPT_KIND_ENUM,
  SYNO_OPT_KIND_STR,
  SYNO_OPT_KIND_PATH,
} syno_opt_kind_t;

/* flags */
#define SYNO_OPT_OPEN_MIN 0x01 /* REAL: the value must be > fmin */
#define SYNO_OPT_OPEN_MAX 0x02 /* REAL: the value must be < fmax */
#define SYNO_OPT_OPERAND 0x04  /* an operand, not an option */
#define SYNO_OPT_EMPTY_OK 0x08 /* STR: "" is allowed */
#define SYNO_OPT_FILE 0x10     /* PATH: an existing readable file */
#define SYNO_OPT_DIR 0x20      /* PATH: an existing writable directory */
#define SYNO_OPT_NEW 0x40      /* PATH: a file to write: its directory exists and is writable */

typedef struct {
  const char *name; /* "epochs" for --epochs, "n" for -n; an operand's placeholder ("TEXT") */
  syno_opt_kind_t kind;
  unsigned flags;
  void *dest;
  size_t size;                /* sizeof *dest (FLAG, INT) */
  long long min, max;         /* INT */
  unsigned long long umax;    /* UINT */
  double fmin, fmax;          /* REAL */
  const char *const *choices; /* ENUM, NULL-terminated */
  int repeat;                 /* > 1: repeatable, dest holds `repeat` const char * */
  int *count;                 /* repeatable: the number of values given (may be NULL) */
  const char *meta;           /* the value's placeholder in the help ("N", "FILE") */
  const char *help;           /* its description; '\n' starts another help line */
  int seen;                   /* set by syno_opt_parse: how often it was given */
} syno_opt_t;

#define SYNO_OPT_FLAG(nm, d, h) \
  { .name = (nm), .kind = SYNO_OPT_KIND_FLAG, .dest = (d), .size = sizeof *(d), .help = (h) }
#define SYNO_OPT_INT(nm, mt, d, lo, hi, h)                                                                             \
  {                                                                                                                    \
    .name = (nm), .kind = SYNO_OPT_KIND_INT, .dest = (d), .size = sizeof *(d), .min = (lo), .max = (hi), .meta = (mt), \
    .help = (h)                                                                                                        \
  }
#define SYNO_OPT_UINT(nm, mt, d, hi, h)                                                                     \
  {                                                                                                         \
    .name = (nm), .kind = SYNO_OPT_KIND_UINT, .dest = (d), .size = sizeof *(d), .umax = (hi), .meta = (mt), \
    .help = (h)                                                                                             \
  }
#define SYNO_OPT_REAL(nm, mt, d, lo, hi, fl, h)                                                              \
  {                                                                                                          \
    .name = (nm), .kind = SYNO_OPT_KIND_REAL, .flags = (fl), .dest = (d), .size = sizeof *(d), .fmin = (lo), \
    .fmax = (hi), .meta = (mt), .help = (h)                                                                  \
  }
#define SYNO_OPT_ENUM(nm, mt, d, ch, h) \
  { .name = (nm), .kind = SYNO_OPT_KIND_ENUM, .dest = (d), .choices = (ch), .meta = (mt), .help = (h) }
#define SYNO_OPT_STR(nm, mt, d, h) \
  { .name = (nm), .kind = SYNO_OPT_KIND_STR, .dest = (d), .meta = (mt), .help = (h) }
#define SYNO_OPT_PATH(nm, mt, d, fl, h) \
  { .name = (nm), .kind = SYNO_OPT_KIND_PATH, .flags = (fl), .dest = (d), .meta = (mt), .help = (h) }
/* A repeatable text: arr is an array of n const char *, *cnt the number given. */
#define SYNO_OPT_LIST(nm, mt, arr, n, cnt, h) \
  { .name = (nm), .kind = SYNO_OPT_KIND_STR, .dest = (arr), .repeat = (n), .count = (cnt), .meta = (mt), .help = (h) }
/* A text operand. */
#define SYNO_OPT_TEXT_OPERAND(nm, d, h) \
  { .name = (nm), .kind = SYNO_OPT_KIND_STR, .flags = SYNO_OPT_OPERAND, .dest = (d), .help = (h) }
#define SYNO_OPT_END \
  { .name = NULL }

/* The largest seed a double holds exactly (a search stores its seed in JSON). */
#define SYNO_OPT_SEED_EXACT 9007199254740992ULL

/* Reads argv[1..argc-1] by the table (argv[0], the command's name, is skipped). 0 when
 * parsed, 1 when -h or --help was given (nothing else is read), -1 with err set. */
int syno_opt_parse(syno_opt_t *table, int argc, char **argv, syno_error_t *err);

/* Prints one line (or more) per entry: operands first, then the options in table order, each
 * with its help and the values it allows, then -h, --help. */
void syno_opt_help(FILE *f, const syno_opt_t *table);
/* The whole --help text: `usage`, "options:", the table (syno_opt_help), then `epilog`
 * (may be NULL). */
void syno_opt_usage(FILE *f, const char *usage, const syno_opt_t *table, const char *epilog);

/* What an entry allows, as the messages and the help say it ("an integer in 1..10000"); ""
 * for flags and texts. */
void syno_opt_allowed(const syno_opt_t *o, char *buf, size_t n);

/* The entry named `name` (without dashes), or NULL. */
const syno_opt_t *syno_opt_find(const syno_opt_t *table, const char *name);
/* How often the option was given (0 when the table has no such option). */
int syno_opt_given(const syno_opt_t *table, const char *name);
/* -1 with err set ("--a and --b exclude each other") when both were given, else 0. */
int syno_opt_conflict(const syno_opt_t *table, const char *a, const char *b, syno_error_t *err);

#endif
