/* Selecting an operator from the command line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "syno/signature.h"

int cli_cmd_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (cmd)
    fprintf(stderr, "syno %s: ", cmd);
  else
    fputs("syno: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return SYNO_EXIT_USAGE;
}

int cli_parse(const char *cmd, const char *usage, const char *epilog, syno_opt_t *table, int argc, char **argv) {
  syno_error_t err;
  int rc = syno_opt_parse(table, argc, argv, &err);
  if (rc == 1) {
    syno_opt_usage(stdout, usage, table, epilog);
    return 0;
  }
  if (rc < 0) {
    int lost = !strncmp(err.msg, "unknown option", 14) || !strncmp(err.msg, "unexpected argument", 19);
    return cli_cmd_error(cmd, "%s%s%s%s", err.msg, lost ? " (see syno " : "", lost ? cmd : "", lost ? " --help)" : "");
  }
  return -1;
}

/* Splits a comma-separated list of names ("a, b, c") into a NULL-terminated array, once. */
#define MAX_NAMES 32
static void split_names(const char *list, char *buf, size_t n, const char **out) {
  snprintf(buf, n, "%s", list);
  int k = 0;
  for (char *tok = strtok(buf, ", "); tok && k < MAX_NAMES - 1; tok = strtok(NULL, ", ")) out[k++] = tok;
  out[k] = NULL;
}

const char *const *cli_builtin_names(void) {
  static const char *names[MAX_NAMES];
  if (!names[0]) {
    int k = 0;
    for (int i = 0; syno_builtin_at(i) && k < MAX_NAMES - 1; i++) names[k++] = syno_builtin_at(i)->name;
    names[k] = NULL;
  }
  return names;
}

const char *const *cli_preset_names(void) {
  static char buf[512];
  static const char *names[MAX_NAMES];
  if (!names[0]) split_names(syno_signature_names(), buf, sizeof buf, names);
  return names;
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
    return cli_cmd_error(NULL, "operator: %s", err.msg);
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
      return cli_cmd_error(NULL, "unknown builtin '%s' (known: %s)", sel->builtin, names);
    }
    if (text) return cli_cmd_error(NULL, "give either --builtin or an operator text, not both");
    if (sel->preset || sel->spec) return cli_cmd_error(NULL, "--preset/--spec cannot be combined with --builtin");
    if (input || output) return cli_cmd_error(NULL, "--input/--output cannot be combined with --builtin");
    if (vars) return cli_cmd_error(NULL, "--vars cannot be combined with --builtin (its variables are fixed)");
    vars = c->builtin->vars;
    input = c->builtin->input;
    output = c->builtin->output;
    text = c->builtin->text;
  } else if (sel->preset || sel->spec) {
    const char *which = sel->preset ? "--preset" : "--spec";
    if (sel->preset && sel->spec) return cli_cmd_error(NULL, "give either --preset or --spec, not both");
    if (!text) return cli_cmd_error(NULL, "%s needs an operator text", which);
    if (input || output || vars) return cli_cmd_error(NULL, "--input/--output/--vars cannot be combined with %s", which);
    cli_spec_t cs = {.preset = sel->preset, .file = sel->spec, .n_bind = sel->n_bind};
    memcpy(cs.bind, sel->bind, sizeof cs.bind);
    syno_space_spec_t spec;
    int rc = cli_spec_resolve(&cs, &spec);
    if (rc) return rc;
    c->vars = spec.vars;
    c->input = spec.input;
    c->output = spec.output;
    return parse_operator(c, text);
  } else {
    if (!text) return cli_cmd_error(NULL, "no operator: give --builtin NAME or an operator text (see --help)");
    if (!input) return cli_cmd_error(NULL, "an operator text needs --input SHAPE");
    if (!output) return cli_cmd_error(NULL, "an operator text needs --output SHAPE");
  }
  syno_vars_init(&c->vars);
  if (vars && syno_vars_declare(&c->vars, vars, &err)) return cli_cmd_error(NULL, "--vars: %s", err.msg);
  if (syno_vars_scan(&c->vars, input, &err)) return cli_cmd_error(NULL, "--input: %s", err.msg);
  if (syno_vars_scan(&c->vars, output, &err)) return cli_cmd_error(NULL, "--output: %s", err.msg);
  if (syno_vars_scan(&c->vars, text, &err)) return cli_cmd_error(NULL, "operator: %s", err.msg);
  if (syno_shape_parse(&c->vars, input, &c->input, &err)) return cli_cmd_error(NULL, "--input: %s", err.msg);
  if (syno_shape_parse(&c->vars, output, &c->output, &err)) return cli_cmd_error(NULL, "--output: %s", err.msg);
  if (sel->n_bind == 0) {
    if (syno_vars_bind(&c->vars, "", &err)) return cli_cmd_error(NULL, "%s", err.msg);
  }
  for (int i = 0; i < sel->n_bind; i++)
    if (syno_vars_bind(&c->vars, sel->bind[i], &err)) return cli_cmd_error(NULL, "--bind '%s': %s", sel->bind[i], err.msg);
  return parse_operator(c, text);
}

void cli_op_free(syno_cliop_t *c) {
  syno_graph_free(c->graph);
  c->graph = NULL;
}

int cli_opsel_finish(const char *cmd, const syno_opsel_t *sel, long binding, syno_cliop_t *out) {
  int rc = cli_opsel_resolve(sel, out);
  if (rc) return rc;
  if (binding >= out->vars.nbind) {
    int n = out->vars.nbind;
    cli_op_free(out);
    return cli_cmd_error(NULL, "%s: --binding %ld does not exist (the operator has %d)", cmd, binding, n);
  }
  return 0;
}
