/* The one option parser: command lines read by a table of typed options (syno/opt.h).
 *
 * What it keeps true: a value reaches its destination only once it has parsed completely and
 * lies in its entry's range, so no caller ever sees a wrapped, truncated or non-finite number;
 * every refusal is one line naming the option and what it allows. */
#include "syno/opt.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HELP_COLUMN 24 /* where the help text starts */
#define HELP_WIDTH 100 /* a help line is wrapped before the allowed values past this */

static int is_operand(const syno_opt_t *o) { return (o->flags & SYNO_OPT_OPERAND) != 0; }

/* "--epochs", "-n" or an operand's placeholder. */
static void display_name(const syno_opt_t *o, char *buf, size_t n) {
  if (is_operand(o))
    snprintf(buf, n, "%s", o->name);
  else
    snprintf(buf, n, "%s%s", strlen(o->name) == 1 ? "-" : "--", o->name);
}

static void real_text(double x, char *buf, size_t n) { snprintf(buf, n, "%.10g", x); }

void syno_opt_allowed(const syno_opt_t *o, char *buf, size_t n) {
  char lo[32], hi[32];
  buf[0] = 0;
  switch (o->kind) {
    case SYNO_OPT_KIND_INT: snprintf(buf, n, "an integer in %lld..%lld", o->min, o->max); break;
    case SYNO_OPT_KIND_UINT:
      if (o->umax == UINT64_MAX)
        snprintf(buf, n, "a non-negative integer");
      else
        snprintf(buf, n, "an integer in 0..%llu", o->umax);
      break;
    case SYNO_OPT_KIND_REAL:
      real_text(o->fmin, lo, sizeof lo);
      real_text(o->fmax, hi, sizeof hi);
      if (o->fmax >= DBL_MAX)
        snprintf(buf, n, "a finite number %s %s", o->flags & SYNO_OPT_OPEN_MIN ? ">" : ">=", lo);
      else
        snprintf(buf, n, "a finite number in %c%s, %s%c", o->flags & SYNO_OPT_OPEN_MIN ? '(' : '[', lo, hi,
                 o->flags & SYNO_OPT_OPEN_MAX ? ')' : ']');
      break;
    case SYNO_OPT_KIND_ENUM: {
      size_t len = (size_t)snprintf(buf, n, "one of ");
      for (int i = 0; o->choices[i] && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", o->choices[i]);
    } break;
    case SYNO_OPT_KIND_PATH:
      if (o->flags & SYNO_OPT_FILE) snprintf(buf, n, "an existing file");
      if (o->flags & SYNO_OPT_DIR) snprintf(buf, n, "an existing, writable directory");
      if (o->flags & SYNO_OPT_NEW) snprintf(buf, n, "a file in an existing, writable directory");
      break;
    default: break;
  }
}

/* ------------------------------------------------------------ values */

static int bad_value(const syno_opt_t *o, const char *arg, syno_error_t *err) {
  char name[64], what[256];
  display_name(o, name, sizeof name);
  syno_opt_allowed(o, what, sizeof what);
  return syno_error_set(err, "%s %s: must be %s", name, *arg ? arg : "''", what);
}

/* Leading white space, which strtoll and strtod would skip, is not part of a number. */
static int starts_number(const char *s) { return *s && !isspace((unsigned char)*s); }

static int put_int(const syno_opt_t *o, long long v) {
  switch (o->size) {
    case 1: {
      int8_t x = (int8_t)v;
      memcpy(o->dest, &x, 1);
    } break;
    case 2: {
      int16_t x = (int16_t)v;
      memcpy(o->dest, &x, 2);
    } break;
    case 4: {
      int32_t x = (int32_t)v;
      memcpy(o->dest, &x, 4);
    } break;
    case 8: {
      int64_t x = (int64_t)v;
      memcpy(o->dest, &x, 8);
    } break;
    default: return -1;
  }
  return 0;
}

/* The range an integer field of `size` bytes holds. */
static int fits(size_t size, long long lo, long long hi) {
  switch (size) {
    case 1: return lo >= INT8_MIN && hi <= INT8_MAX;
    case 2: return lo >= INT16_MIN && hi <= INT16_MAX;
    case 4: return lo >= INT32_MIN && hi <= INT32_MAX;
    case 8: return 1;
    default: return 0;
  }
}

static int parse_int(const syno_opt_t *o, const char *arg, syno_error_t *err) {
  if (!fits(o->size, o->min, o->max) || o->min > o->max) {
    char name[64];
    display_name(o, name, sizeof name);
    return syno_error_set(err, "%s: the option's range does not fit its field (a bug)", name);
  }
  if (!starts_number(arg)) return bad_value(o, arg, err);
  char *end;
  errno = 0;
  long long v = strtoll(arg, &end, 10);
  if (end == arg || *end || errno || v < o->min || v > o->max) return bad_value(o, arg, err);
  return put_int(o, v);
}

static int parse_uint(const syno_opt_t *o, const char *arg, syno_error_t *err) {
  if (!isdigit((unsigned char)arg[0]) || o->size != sizeof(uint64_t)) return bad_value(o, arg, err);
  char *end;
  errno = 0;
  unsigned long long v = strtoull(arg, &end, 10);
  if (*end || errno || v > o->umax) return bad_value(o, arg, err);
  uint64_t x = (uint64_t)v;
  memcpy(o->dest, &x, sizeof x);
  return 0;
}

static int parse_real(const syno_opt_t *o, const char *arg, syno_error_t *err) {
  /* Decimal only: strtod would also take "inf", "nan" and hexadecimal. */
  if (!*arg || strspn(arg, "0123456789.eE+-") != strlen(arg) || o->size != sizeof(double))
    return bad_value(o, arg, err);
  char *end;
  errno = 0;
  double v = strtod(arg, &end);
  if (end == arg || *end || errno || !isfinite(v)) return bad_value(o, arg, err);
  int lo_ok = o->flags & SYNO_OPT_OPEN_MIN ? v > o->fmin : v >= o->fmin;
  int hi_ok = o->flags & SYNO_OPT_OPEN_MAX ? v < o->fmax : v <= o->fmax;
  if (!lo_ok || !hi_ok) return bad_value(o, arg, err);
  memcpy(o->dest, &v, sizeof v);
  return 0;
}

static int parse_enum(const syno_opt_t *o, const char *arg, syno_error_t *err) {
  for (int i = 0; o->choices[i]; i++)
    if (!strcmp(o->choices[i], arg)) {
      *(const char **)o->dest = o->choices[i];
      return 0;
    }
  return bad_value(o, arg, err);
}

/* The directory part of a path ("." when it has none). */
static void dir_of(const char *path, char *buf, size_t n) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(buf, n, ".");
  else if (slash == path)
    snprintf(buf, n, "/");
  else
    snprintf(buf, n, "%.*s", (int)(slash - path), path);
}

static int check_path(const syno_opt_t *o, const char *name, const char *arg, syno_error_t *err) {
  struct stat st;
  int exists = stat(arg, &st) == 0;
  if (o->flags & SYNO_OPT_FILE) {
    if (!exists) return syno_error_set(err, "%s %s: %s", name, arg, errno == ENOENT ? "no such file" : strerror(errno));
    if (S_ISDIR(st.st_mode)) return syno_error_set(err, "%s %s: is a directory, not a file", name, arg);
    if (access(arg, R_OK)) return syno_error_set(err, "%s %s: cannot be read (%s)", name, arg, strerror(errno));
  }
  if (o->flags & SYNO_OPT_DIR) {
    if (!exists)
      return syno_error_set(err, "%s %s: %s", name, arg, errno == ENOENT ? "no such directory" : strerror(errno));
    if (!S_ISDIR(st.st_mode)) return syno_error_set(err, "%s %s: is not a directory", name, arg);
    if (access(arg, W_OK | X_OK))
      return syno_error_set(err, "%s %s: the directory is not writable (%s)", name, arg, strerror(errno));
  }
  if (o->flags & SYNO_OPT_NEW) {
    if (exists && S_ISDIR(st.st_mode)) return syno_error_set(err, "%s %s: is a directory, not a file", name, arg);
    char dir[1024];
    dir_of(arg, dir, sizeof dir);
    if (stat(dir, &st) != 0)
      return syno_error_set(err, "%s %s: its directory %s %s", name, arg, dir,
                            errno == ENOENT ? "does not exist" : strerror(errno));
    if (!S_ISDIR(st.st_mode)) return syno_error_set(err, "%s %s: its directory %s is not a directory", name, arg, dir);
    if (access(dir, W_OK | X_OK))
      return syno_error_set(err, "%s %s: its directory %s is not writable (%s)", name, arg, dir, strerror(errno));
  }
  return 0;
}

/* Sets one entry from its value text. */
static int set_value(syno_opt_t *o, const char *arg, syno_error_t *err) {
  char name[64];
  display_name(o, name, sizeof name);
  switch (o->kind) {
    case SYNO_OPT_KIND_INT: return parse_int(o, arg, err);
    case SYNO_OPT_KIND_UINT: return parse_uint(o, arg, err);
    case SYNO_OPT_KIND_REAL: return parse_real(o, arg, err);
    case SYNO_OPT_KIND_ENUM: return parse_enum(o, arg, err);
    case SYNO_OPT_KIND_PATH:
      if (!*arg) return syno_error_set(err, "%s: the path is empty", name);
      if (check_path(o, name, arg, err)) return -1;
      *(const char **)o->dest = arg;
      return 0;
    case SYNO_OPT_KIND_STR:
      if (!*arg && !(o->flags & SYNO_OPT_EMPTY_OK)) return syno_error_set(err, "%s: the value is empty", name);
      if (o->repeat > 1) {
        if (o->seen >= o->repeat) return syno_error_set(err, "%s: given more than %d times", name, o->repeat);
        ((const char **)o->dest)[o->seen] = arg;
        if (o->count) *o->count = o->seen + 1;
      } else
        *(const char **)o->dest = arg;
      return 0;
    default: return syno_error_set(err, "%s: an option of no kind (a bug)", name);
  }
}

/* ------------------------------------------------------------ parsing */

static syno_opt_t *find_option(syno_opt_t *t, const char *name, size_t len) {
  for (; t->name; t++)
    if (!is_operand(t) && strlen(t->name) == len && !strncmp(t->name, name, len)) return t;
  return NULL;
}

/* A value cannot start with "--" (that is the next option: the value is missing). */
static int looks_like_option(const char *s) { return s[0] == '-' && s[1] == '-' && s[2]; }

static int missing_value(const syno_opt_t *o, syno_error_t *err) {
  char name[64], what[256];
  display_name(o, name, sizeof name);
  syno_opt_allowed(o, what, sizeof what);
  if (*what) return syno_error_set(err, "%s: needs a value (%s)", name, what);
  return syno_error_set(err, "%s: needs a value%s%s", name, o->meta ? " " : "", o->meta ? o->meta : "");
}

int syno_opt_parse(syno_opt_t *t, int argc, char **argv, syno_error_t *err) {
  for (syno_opt_t *o = t; o->name; o++) {
    o->seen = 0;
    if (o->count) *o->count = 0;
  }
  for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return 1;
  int no_more_options = 0;
  syno_opt_t *next_operand = t;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!no_more_options && !strcmp(a, "--")) {
      no_more_options = 1;
      continue;
    }
    if (no_more_options || a[0] != '-' || !a[1]) {
      while (next_operand->name && !is_operand(next_operand)) next_operand++;
      if (!next_operand->name) return syno_error_set(err, "unexpected argument '%s'", a);
      if (set_value(next_operand, a, err)) return -1;
      next_operand++->seen++;
      continue;
    }
    /* --name, --name=VALUE, -x, -xVALUE */
    const char *name = a[1] == '-' ? a + 2 : a + 1, *eq = NULL;
    size_t len;
    if (a[1] == '-') {
      eq = strchr(name, '=');
      len = eq ? (size_t)(eq - name) : strlen(name);
    } else {
      len = 1;
    }
    syno_opt_t *o = find_option(t, name, len);
    if (!o || (a[1] == '-' && len == 1) || (a[1] != '-' && strlen(o->name) != 1))
      return syno_error_set(err, "unknown option '%s'", a);
    const char *value = NULL;
    if (eq)
      value = eq + 1;
    else if (a[1] != '-' && a[2])
      value = a + 2;
    if (o->kind == SYNO_OPT_KIND_FLAG) {
      if (value) return syno_error_set(err, "%s: the flag takes no value", a);
      int one = 1;
      if (o->size == sizeof one)
        memcpy(o->dest, &one, sizeof one);
      else
        memset(o->dest, 0, o->size), *(unsigned char *)o->dest = 1;
      o->seen++;
      continue;
    }
    if (!value) {
      if (i + 1 >= argc || looks_like_option(argv[i + 1])) return missing_value(o, err);
      value = argv[++i];
    }
    if (set_value(o, value, err)) return -1;
    o->seen++;
  }
  return 0;
}

/* ------------------------------------------------------------ help */

/* Prints `text` from column HELP_COLUMN, its '\n' starting new indented lines; then the
 * allowed values after "; " on the last line, or on a line of their own when too long. */
static void help_text(FILE *f, int col, const char *text, const char *allowed) {
  if (col + 2 > HELP_COLUMN) {
    fputc('\n', f);
    col = 0;
  }
  fprintf(f, "%*s", HELP_COLUMN - col, "");
  int len = HELP_COLUMN;
  for (const char *p = text ? text : ""; *p; p++) {
    if (*p == '\n') {
      fprintf(f, "\n%*s", HELP_COLUMN, "");
      len = HELP_COLUMN;
    } else {
      fputc(*p, f);
      len++;
    }
  }
  if (*allowed) {
    int empty = !text || !*text;
    if (!empty && len + 2 + (int)strlen(allowed) > HELP_WIDTH)
      fprintf(f, "\n%*s%s", HELP_COLUMN, "", allowed);
    else
      fprintf(f, "%s%s", empty ? "" : "; ", allowed);
  }
  fputc('\n', f);
}

void syno_opt_usage(FILE *f, const char *usage, const syno_opt_t *table, const char *epilog) {
  fputs(usage, f);
  fputs("\noptions:\n", f);
  syno_opt_help(f, table);
  if (epilog) fputs(epilog, f);
}

void syno_opt_help(FILE *f, const syno_opt_t *t) {
  char allowed[256];
  for (int pass = 0; pass < 2; pass++)
    for (const syno_opt_t *o = t; o->name; o++) {
      if (is_operand(o) != (pass == 0)) continue;
      char name[64];
      display_name(o, name, sizeof name);
      int col = fprintf(f, "  %s%s%s", name, o->meta ? " " : "", o->meta ? o->meta : "");
      syno_opt_allowed(o, allowed, sizeof allowed);
      if (o->kind == SYNO_OPT_KIND_PATH) allowed[0] = 0; /* the help says what the file is */
      if (o->repeat > 1) snprintf(allowed, sizeof allowed, "repeatable, up to %d times", o->repeat);
      help_text(f, col, o->help, allowed);
    }
  help_text(f, fprintf(f, "  -h, --help"), "this help", "");
}

/* ------------------------------------------------------------ queries */

const syno_opt_t *syno_opt_find(const syno_opt_t *t, const char *name) {
  for (; t->name; t++)
    if (!strcmp(t->name, name)) return t;
  return NULL;
}

int syno_opt_given(const syno_opt_t *t, const char *name) {
  const syno_opt_t *o = syno_opt_find(t, name);
  return o ? o->seen : 0;
}

int syno_opt_conflict(const syno_opt_t *t, const char *a, const char *b, syno_error_t *err) {
  if (!syno_opt_given(t, a) || !syno_opt_given(t, b)) return 0;
  char na[64], nb[64];
  display_name(syno_opt_find(t, a), na, sizeof na);
  display_name(syno_opt_find(t, b), nb, sizeof nb);
  return syno_error_set(err, "%s and %s exclude each other", na, nb);
}
