/* Resolving a search spec from the command line, and strict option numbers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

int syno_cli_spec_resolve(const syno_cli_spec_t *cs, syno_space_spec_t *spec) {
  syno_error_t err;
  if (!cs->preset == !cs->file) return syno_cli_usage_error("give exactly one of --preset NAME and --spec FILE");
  if (cs->preset) {
    if (syno_space_preset(cs->preset, cs->n_bind ? cs->bind[0] : "", spec, &err))
      return syno_cli_usage_error("--preset %s: %s", cs->preset, err.msg);
    for (int i = 1; i < cs->n_bind; i++)
      if (syno_vars_bind(&spec->vars, cs->bind[i], &err) || syno_space_spec_check(spec, &err))
        return syno_cli_usage_error("--bind '%s': %s", cs->bind[i], err.msg);
    return 0;
  }
  if (cs->n_bind) return syno_cli_usage_error("--bind goes into the spec file's \"bind\" field with --spec");
  if (syno_space_spec_load(cs->file, spec, &err)) return syno_cli_usage_error("--spec: %s", err.msg);
  return 0;
}

int syno_cli_parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (!*s || *end || errno || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

int syno_cli_parse_seed(const char *s, unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (!*s || *end || errno || s[0] == '-') return -1;
  *out = v;
  return 0;
}
