/* Selecting an operator from the command line. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

enum { OPT_BUILTIN = 1000, OPT_INPUT, OPT_OUTPUT, OPT_VARS, OPT_BIND, OPT_PRESET };

static const struct option opsel_longopts[] = {
    {"builtin", required_argument, NULL, OPT_BUILTIN},
    {"input", required_argument, NULL, OPT_INPUT},
    {"output", required_argument, NULL, OPT_OUTPUT},
    {"vars", required_argument, NULL, OPT_VARS},
    {"bind", required_argument, NULL, OPT_BIND},
    {"preset", required_argument, NULL, OPT_PRESET},
    {NULL, 0, NULL, 0},
};

void cli_opsel_longopts(struct option *out, const struct option *extra) {
  int n = 0;
  for (const struct option *o = opsel_longopts; o->name; o++) out[n++] = *o;
  for (const struct option *o = extra; o->name && n < SYNO_CLI_MAX_OPTS - 1; o++) out[n++] = *o;
  out[n] = (struct option){NULL, 0, NULL, 0};
}

int cli_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("syno: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return SYNO_EXIT_USAGE;
}

int cli_opsel_option(syno_opsel_t *sel, int opt, const char *arg) {
  switch (opt) {
    case OPT_BUILTIN: sel->builtin = arg; return 1;
    case OPT_INPUT: sel->input = arg; return 1;
    case OPT_OUTPUT: sel->output = arg; return 1;
    case OPT_VARS: sel->vars = arg; return 1;
    case OPT_PRESET: sel->preset = arg; return 1;
    case OPT_BIND:
      if (sel->n_bind >= SYNO_MAX_BINDINGS) {
        cli_usage_error("at most %d --bind options", SYNO_MAX_BINDINGS);
        return -1;
      }
      sel->bind[sel->n_bind++] = arg;
      return 1;
    default: return 0;
  }
}

/* The last step of every selection: the operator itself. */
static int parse_operator(syno_cliop_t *c, const char *text) {
  syno_error_t err;
  c->graph = syno_graph_new(&c->vars);
  if (!c->graph) {
    fprintf(stderr, "syno: out of memory\n");
    return SYNO_EXIT_FAIL;
  }
  if (syno_operator_parse(c->graph, text, &c->input, &c->output, &c->op, &err)) {
    cli_op_free(c);
    return cli_usage_error("operator: %s", err.msg);
  }
  return 0;
}

int cli_opsel_resolve(const syno_opsel_t *sel, syno_cliop_t *c) {
  memset(c, 0, sizeof *c);
  syno_error_t err;
  const char *vars = sel->vars, *input = sel->input, *output = sel->output, *text = sel->text;
  if (sel->builtin) {
    c->builtin = syno_builtin_find(sel->builtin);
    if (!c->builtin) {
      char names[256] = "";
      for (int i = 0; syno_builtin_at(i); i++) {
        if (i) strncat(names, ", ", sizeof names - strlen(names) - 1);
        strncat(names, syno_builtin_at(i)->name, sizeof names - strlen(names) - 1);
      }
      return cli_usage_error("unknown builtin '%s' (known: %s)", sel->builtin, names);
    }
    if (text) return cli_usage_error("give either --builtin or an operator text, not both");
    if (sel->preset) return cli_usage_error("--preset cannot be combined with --builtin");
    if (input || output) return cli_usage_error("--input/--output cannot be combined with --builtin");
    if (vars) return cli_usage_error("--vars cannot be combined with --builtin (its variables are fixed)");
    vars = c->builtin->vars;
    input = c->builtin->input;
    output = c->builtin->output;
    text = c->builtin->text;
  } else if (sel->preset) {
    if (!text) return cli_usage_error("--preset needs an operator text");
    if (input || output || vars) return cli_usage_error("--input/--output/--vars cannot be combined with --preset");
    cli_spec_t cs = {.preset = sel->preset, .n_bind = sel->n_bind};
    memcpy(cs.bind, sel->bind, sizeof cs.bind);
    syno_space_spec_t spec;
    int rc = cli_spec_resolve(&cs, &spec);
    if (rc) return rc;
    c->vars = spec.vars;
    c->input = spec.input;
    c->output = spec.output;
    return parse_operator(c, text);
  } else {
    if (!text) return cli_usage_error("no operator: give --builtin NAME or an operator text (see --help)");
    if (!input) return cli_usage_error("an operator text needs --input SHAPE");
    if (!output) return cli_usage_error("an operator text needs --output SHAPE");
  }
  syno_vars_init(&c->vars);
  if (vars && syno_vars_declare(&c->vars, vars, &err)) return cli_usage_error("--vars: %s", err.msg);
  if (syno_vars_scan(&c->vars, input, &err)) return cli_usage_error("--input: %s", err.msg);
  if (syno_vars_scan(&c->vars, output, &err)) return cli_usage_error("--output: %s", err.msg);
  if (syno_vars_scan(&c->vars, text, &err)) return cli_usage_error("operator: %s", err.msg);
  if (syno_shape_parse(&c->vars, input, &c->input, &err)) return cli_usage_error("--input: %s", err.msg);
  if (syno_shape_parse(&c->vars, output, &c->output, &err)) return cli_usage_error("--output: %s", err.msg);
  if (sel->n_bind == 0) {
    if (syno_vars_bind(&c->vars, "", &err)) return cli_usage_error("%s", err.msg);
  }
  for (int i = 0; i < sel->n_bind; i++)
    if (syno_vars_bind(&c->vars, sel->bind[i], &err)) return cli_usage_error("--bind '%s': %s", sel->bind[i], err.msg);
  return parse_operator(c, text);
}

void cli_op_free(syno_cliop_t *c) {
  syno_graph_free(c->graph);
  c->graph = NULL;
}

int cli_opsel_finish(const char *cmd, syno_opsel_t *sel, int argc, char **argv, long binding, syno_cliop_t *out) {
  if (optind < argc) sel->text = argv[optind++];
  if (optind < argc) return cli_usage_error("%s: unexpected argument '%s'", cmd, argv[optind]);
  int rc = cli_opsel_resolve(sel, out);
  if (rc) return rc;
  if (binding >= out->vars.nbind) {
    int n = out->vars.nbind;
    cli_op_free(out);
    return cli_usage_error("%s: --binding %ld does not exist (the operator has %d)", cmd, binding, n);
  }
  return 0;
}
