/* Resolving a search spec from the command line. */
#include <stdio.h>

#include "cli.h"

static int resolve(const cli_spec_t *cs, syno_space_spec_t *spec);

int cli_spec_resolve(const cli_spec_t *cs, syno_space_spec_t *spec) {
  int rc = resolve(cs, spec);
  if (rc) return rc;
  if (cs->depth) spec->opts.depth = (int)cs->depth;
  syno_error_t err;
  if (cs->caps && (syno_space_caps_parse(cs->caps, spec->opts.max_count, &err) || syno_space_spec_check(spec, &err)))
    return cli_cmd_error(NULL, "--max-count '%s': %s", cs->caps, err.msg);
  return 0;
}

static int resolve(const cli_spec_t *cs, syno_space_spec_t *spec) {
  syno_error_t err;
  if (!cs->preset == !cs->file) return cli_cmd_error(NULL, "give exactly one of --preset NAME and --spec FILE");
  if (cs->preset) {
    if (syno_space_preset(cs->preset, cs->n_bind ? cs->bind[0] : "", spec, &err))
      return cli_cmd_error(NULL, "--preset %s: %s", cs->preset, err.msg);
    for (int i = 1; i < cs->n_bind; i++)
      if (syno_vars_bind(&spec->vars, cs->bind[i], &err) || syno_space_spec_check(spec, &err))
        return cli_cmd_error(NULL, "--bind '%s': %s", cs->bind[i], err.msg);
    return 0;
  }
  if (cs->n_bind) return cli_cmd_error(NULL, "--bind goes into the spec file's \"bind\" field with --spec");
  if (syno_space_spec_load(cs->file, spec, &err)) return cli_cmd_error(NULL, "--spec: %s", err.msg);
  return 0;
}
