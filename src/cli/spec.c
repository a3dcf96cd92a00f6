/* Resolving a search spec from the command line, and strict option numbers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"

static int resolve(const cli_spec_t *cs, syno_space_spec_t *spec);

enum { OPT_PRESET = 3000, OPT_SPEC, OPT_BIND, OPT_DEPTH, OPT_MAX_COUNT };

static const struct option spec_longopts[] = {
    {"preset", required_argument, NULL, OPT_PRESET},       {"spec", required_argument, NULL, OPT_SPEC},
    {"bind", required_argument, NULL, OPT_BIND},           {"depth", required_argument, NULL, OPT_DEPTH},
    {"max-count", required_argument, NULL, OPT_MAX_COUNT}, {NULL, 0, NULL, 0},
};

void cli_spec_longopts(struct option *out, const struct option *extra) {
  int n = 0;
  for (const struct option *o = spec_longopts; o->name; o++) out[n++] = *o;
  for (const struct option *o = extra; o->name && n < SYNO_CLI_MAX_OPTS - 1; o++) out[n++] = *o;
  out[n] = (struct option){NULL, 0, NULL, 0};
}

int cli_spec_option(cli_spec_t *cs, int opt, const char *arg) {
  switch (opt) {
    case OPT_PRESET: cs->preset = arg; return 1;
    case OPT_SPEC: cs->file = arg; return 1;
    case OPT_BIND:
      if (cs->n_bind >= SYNO_MAX_BINDINGS) {
        cli_usage_error("at most %d --bind options", SYNO_MAX_BINDINGS);
        return -1;
      }
      cs->bind[cs->n_bind++] = arg;
      return 1;
    case OPT_DEPTH:
      if (cli_parse_long(arg, 1, 40, &cs->depth)) {
        cli_usage_error("--depth '%s' is not 1..40", arg);
        return -1;
      }
      return 1;
    case OPT_MAX_COUNT: cs->caps = arg; return 1;
    default: return 0;
  }
}

double cli_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int cli_spec_resolve(const cli_spec_t *cs, syno_space_spec_t *spec) {
  int rc = resolve(cs, spec);
  if (rc) return rc;
  if (cs->depth) spec->opts.depth = (int)cs->depth;
  syno_error_t err;
  if (cs->caps && (syno_space_caps_parse(cs->caps, spec->opts.max_count, &err) || syno_space_spec_check(spec, &err)))
    return cli_usage_error("--max-count '%s': %s", cs->caps, err.msg);
  return 0;
}

static int resolve(const cli_spec_t *cs, syno_space_spec_t *spec) {
  syno_error_t err;
  if (!cs->preset == !cs->file) return cli_usage_error("give exactly one of --preset NAME and --spec FILE");
  if (cs->preset) {
    if (syno_space_preset(cs->preset, cs->n_bind ? cs->bind[0] : "", spec, &err))
      return cli_usage_error("--preset %s: %s", cs->preset, err.msg);
    for (int i = 1; i < cs->n_bind; i++)
      if (syno_vars_bind(&spec->vars, cs->bind[i], &err) || syno_space_spec_check(spec, &err))
        return cli_usage_error("--bind '%s': %s", cs->bind[i], err.msg);
    return 0;
  }
  if (cs->n_bind) return cli_usage_error("--bind goes into the spec file's \"bind\" field with --spec");
  if (syno_space_spec_load(cs->file, spec, &err)) return cli_usage_error("--spec: %s", err.msg);
  return 0;
}

int cli_parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!*s || *end || errno || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int cli_parse_seed(const char *s, unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (!*s || *end || errno || s[0] == '-') return -1;
  *out = v;
  return 0;
}
