/* Resolving a search spec from the command line. */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "syno/alloc.h"
#include "syno/file.h"

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

/* What each of the space's prune counters means, with the limit behind it. */
static void prune_line(const syno_space_spec_t *spec, int r, char *buf, size_t n) {
  const syno_space_opts_t *o = &spec->opts;
  switch (r) {
  case SYNO_PRUNE_DISTANCE:
    snprintf(buf, n, "shape distance beyond the depth (--depth %d)", o->depth);
    break;
  case SYNO_PRUNE_CHAIN:
    snprintf(buf, n, "chain of primitives on one dim too long (max_chain %d)", o->max_chain);
    break;
  case SYNO_PRUNE_LIMIT:
    snprintf(buf, n, "a size, FLOPs, parameter or pooling limit (min_flops %.3g, max_flops %.3g, max_params %.3g)",
             o->min_flops, o->max_flops, o->max_params);
    break;
  case SYNO_PRUNE_ILLEGAL:
    snprintf(buf, n, "a primitive that does not fit the sizes");
    break;
  default:
    snprintf(buf, n, "every completion above max_flops (%.3g)", o->max_flops);
    break;
  }
}

int cli_empty_space(const char *cmd, const syno_space_spec_t *spec, const syno_space_stats_t *st, long walks) {
  char bind[512];
  syno_vars_print_binding(&spec->vars, 0, bind, sizeof bind);
  char in[48] = "";
  if (walks >= 0) snprintf(in, sizeof in, " in %ld walks", walks);
  fprintf(stderr, "syno %s: no operator found%s at depth %d, binding %s%s\n", cmd, in, spec->opts.depth, bind,
          spec->vars.nbind > 1 ? " (and the others)" : "");
  int best = -1;
  for (int r = 0; r < SYNO_PRUNE_COUNT; r++)
    if (st->prune[r] && (best < 0 || st->prune[r] > st->prune[best])) best = r;
  if (best < 0) {
    fprintf(stderr, "  no limit removed anything: the space at this depth holds no operator (try a larger --depth)\n");
    return SYNO_EXIT_FAIL;
  }
  char line[256];
  prune_line(spec, best, line, sizeof line);
  fprintf(stderr, "  the limit that removed the most: %s\n  children removed by each limit:", line);
  for (int r = 0; r < SYNO_PRUNE_COUNT; r++) {
    static const char *const name[SYNO_PRUNE_COUNT] = {"distance", "chain", "limits", "illegal", "flops bound"};
    fprintf(stderr, " %s %llu%s", name[r], (unsigned long long)st->prune[r], r + 1 < SYNO_PRUNE_COUNT ? "," : "\n");
  }
  return SYNO_EXIT_FAIL;
}

int cli_spec_for_slots(const char *path, char **json, const char **preset) {
  syno_error_t err;
  syno_space_spec_t spec;
  size_t n;
  *json = NULL;
  if (syno_space_spec_load(path, &spec, &err)) return cli_cmd_error(NULL, "--spec: %s", err.msg);
  char *text = syno_read_regular(path, 1 << 20, &n, &err);
  cJSON *o = text ? cJSON_Parse(text) : NULL;
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "preset");
  int rc = 0;
  if (!text)
    rc = cli_cmd_error(NULL, "--spec: %s", err.msg);
  else if (!cJSON_IsString(p))
    rc = cli_cmd_error(NULL,
                       "--spec %s: a spec of its own shapes cannot fill a backbone's slots; give one with a "
                       "\"preset\" (its options shape the space)",
                       path);
  else if (cJSON_HasObjectItem(o, "bind"))
    rc = cli_cmd_error(NULL, "--spec %s: drop \"bind\": the bindings are the backbone's slots", path);
  else {
    static char name[32];
    snprintf(name, sizeof name, "%s", p->valuestring);
    *preset = name;
    *json = text;
    text = NULL;
  }
  cJSON_Delete(o);
  syno_free(text);
  return rc;
}
