/* The syno command's shared pieces: selecting an operator from the command
 * line (a builtin, or a text form with shapes) and reporting usage errors.
 *
 * Exit statuses: 0 success, 1 a failure while working, 2 a bad argument or a
 * malformed spec (a one-line message on stderr, nothing on stdout). */
#ifndef SYNO_CLI_H
#define SYNO_CLI_H

#include <getopt.h>
#include <stdbool.h>

#include "syno/graph.h"
#include "syno/space.h"

#define SYNO_EXIT_FAIL 1
#define SYNO_EXIT_USAGE 2

/* Options naming an operator, shared by show and run. */
typedef struct {
  const char *builtin;
  const char *preset; /* shapes and variables from a search preset */
  const char *text;
  const char *input, *output;
  const char *vars;
  int n_bind;
  const char *bind[SYNO_MAX_BINDINGS];
} syno_opsel_t;

/* What an operator selection resolves to; owns the graph. */
typedef struct {
  syno_vars_t vars;
  syno_shape_t input, output;
  syno_graph_t *graph;
  syno_operator_t op;
  const syno_builtin_t *builtin;
} syno_cliop_t;

/* Handles --builtin/--input/--output/--vars/--bind; returns 1 if the option
 * was one of them, 0 if not, -1 on a bad value (message printed). */
int cli_opsel_option(syno_opsel_t *sel, int opt, const char *arg);
/* Writes the selection's getopt_long entries followed by a command's own
 * `extra` ones (zero-terminated) into out, which holds 16 entries. */
#define SYNO_CLI_MAX_OPTS 16
void cli_opsel_longopts(struct option *out, const struct option *extra);
#define SYNO_OPSEL_HELP                                                                    \
  "  --builtin NAME      a standard operator: conv2d, grouped-conv2d, depthwise-conv2d,\n" \
  "                      strided-conv2d, linear, avgpool2d\n"                              \
  "  TEXT                an operator in its text form (see README), with:\n"               \
  "  --input SHAPE       its input shape, e.g. '[N, C_in: unordered, H, W]'\n"             \
  "  --output SHAPE      its output shape\n"                                               \
  "  --vars DECL         variable declarations, e.g. 'N, C_in, H; k=3' (primary;\n"        \
  "                      coefficient); undeclared names are primary when they start\n"     \
  "                      with an uppercase letter, coefficients otherwise\n"               \
  "  --preset NAME       take --input, --output and the variables from a search\n"         \
  "                      preset (conv2d, conv2d-wide, linear, linear-wide)\n"              \
  "  --bind V=X,...      a concrete binding; repeat for several (one per slot)\n"

/* Builds vars, shapes and the operator; prints the error and returns 2 on
 * bad input. */
int cli_opsel_resolve(const syno_opsel_t *sel, syno_cliop_t *out);
/* After getopt: takes the operator text from argv[optind] (when given),
 * refuses further arguments, resolves the selection and checks that
 * `binding` exists. `cmd` names the command in messages. 0 or a status. */
int cli_opsel_finish(const char *cmd, syno_opsel_t *sel, int argc, char **argv, long binding, syno_cliop_t *out);
void cli_op_free(syno_cliop_t *c);

/* Prints "syno: <message>" to stderr and returns SYNO_EXIT_USAGE. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Options naming a search spec, shared by sample and space. */
typedef struct {
  const char *preset, *file;
  int n_bind;
  const char *bind[SYNO_MAX_BINDINGS];
  long depth;       /* 0: the spec's own */
  const char *caps; /* --max-count KIND=N,...; NULL: the spec's own */
} cli_spec_t;

/* --preset, --spec, --bind, --depth, --max-count, then a command's own `extra` entries
 * (zero-terminated), into out (SYNO_CLI_MAX_OPTS entries). */
void cli_spec_longopts(struct option *out, const struct option *extra);
/* Handles one of those options: 1 if it was one, 0 if not, -1 on a bad
 * value (message printed). */
int cli_spec_option(cli_spec_t *cs, int opt, const char *arg);

/* Builds the spec from a preset (with its bindings) or a JSON file, and
 * applies --depth and --max-count; prints the error and returns 2 on bad
 * input. */
int cli_spec_resolve(const cli_spec_t *cs, syno_space_spec_t *spec);

/* Monotonic seconds, for timing summaries. */
double cli_now(void);

/* Strict number parsing for options: 0 on success. */
int cli_parse_long(const char *s, long lo, long hi, long *out);
int cli_parse_seed(const char *s, unsigned long long *out);

int cli_cmd_show(int argc, char **argv);
int cli_cmd_sample(int argc, char **argv);
int cli_cmd_space(int argc, char **argv);
int cli_cmd_run(int argc, char **argv);
int cli_cmd_train(int argc, char **argv);
int cli_cmd_eval(int argc, char **argv);
int cli_cmd_search(int argc, char **argv);
int cli_cmd_report(int argc, char **argv);

#endif
