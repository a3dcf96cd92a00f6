/* The syno command's shared pieces: reading a command line (every sub-command through the one
 * table-driven parser, syno/opt.h), selecting an operator from the command line (a builtin, or a
 * text form with shapes) and reporting usage errors.
 *
 * Exit statuses: 0 success, 1 a failure while working, 2 a bad argument, a malformed spec or
 * a file that is not what it should be (a one-line message on stderr, nothing on stdout). */
#ifndef SYNO_CLI_H
#define SYNO_CLI_H

#include <stdbool.h>
#include <stdio.h>

#include "syno/task.h"
#include "syno/backbone.h"
#include "syno/clock.h"
#include "syno/graph.h"
#include "syno/opt.h"
#include "syno/space.h"
#include "syno/store.h"

#define SYNO_EXIT_FAIL 1
#define SYNO_EXIT_USAGE 2

/* Reads argv by the table. -h or --help: prints `usage`, the options (syno_opt_help) and
 * `epilog` (may be NULL) to stdout and returns 0. A bad command line: prints "syno CMD:
 * MESSAGE" to stderr and returns SYNO_EXIT_USAGE. Otherwise -1: go on. */
int cli_parse(const char *cmd, const char *usage, const char *epilog, syno_opt_t *table, int argc, char **argv);

/* The one error helper of the commands: prints "syno CMD: <message>" ("syno: <message>" when
 * cmd is NULL) to stderr and returns SYNO_EXIT_USAGE. */
int cli_cmd_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The choices of --builtin and of --preset (all presets, and those whose slots are
 * convolutions), NULL-terminated, from the library's own lists. */
const char *const *cli_builtin_names(void);
const char *const *cli_preset_names(void);

/* Options naming an operator, shared by show and run. */
typedef struct {
  const char *builtin;
  const char *preset; /* shapes and variables from a search preset */
  const char *spec;   /* ... or from a search spec file */
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

/* The option table entries of an operator selection (sel: a syno_opsel_t *). */
#define CLI_OPSEL_OPTIONS(sel)                                                                                         \
  SYNO_OPT_TEXT_OPERAND("TEXT", &(sel)->text, "an operator in its text form (docs/commands.md), with --input and --output"), \
      SYNO_OPT_ENUM("builtin", "NAME", &(sel)->builtin, cli_builtin_names(), "a standard operator"),                   \
      SYNO_OPT_STR("input", "SHAPE", &(sel)->input,                                                                    \
                   "the operator text's input shape, e.g. '[N, C_in: unordered, H, W]'"),                              \
      SYNO_OPT_STR("output", "SHAPE", &(sel)->output, "its output shape"),                                             \
      SYNO_OPT_STR("vars", "DECL", &(sel)->vars,                                                                       \
                   "variable declarations, e.g. 'N, C_in, H; k=3' (primary;\n"                                         \
                   "coefficient); undeclared names are primary when they start\n"                                      \
                   "with an uppercase letter, coefficients otherwise"),                                                \
      SYNO_OPT_ENUM("preset", "NAME", &(sel)->preset, cli_preset_names(),                                              \
                    "take --input, --output and the variables from a search preset"),                                  \
      SYNO_OPT_PATH("spec", "FILE", &(sel)->spec, SYNO_OPT_FILE,                                                       \
                    "take them from a search spec in JSON instead (docs/space.md)"),                                      \
      SYNO_OPT_LIST("bind", "V=X,...", (sel)->bind, SYNO_MAX_BINDINGS, &(sel)->n_bind,                                 \
                    "a concrete binding; repeat for several (one per slot)")

/* Builds vars, shapes and the operator; prints the error and returns 2 on
 * bad input. */
int cli_opsel_resolve(const syno_opsel_t *sel, syno_cliop_t *out);
/* After parsing: resolves the selection and checks that `binding` exists. `cmd` names the
 * command in messages. 0 or a status. */
int cli_opsel_finish(const char *cmd, const syno_opsel_t *sel, long binding, syno_cliop_t *out);
void cli_op_free(syno_cliop_t *c);

/* Options naming a search spec, shared by sample and space. */
typedef struct {
  const char *preset, *file;
  int n_bind;
  const char *bind[SYNO_MAX_BINDINGS];
  long depth;       /* 0: the spec's own */
  const char *caps; /* --max-count KIND=N,...; NULL: the spec's own */
} cli_spec_t;

/* The option table entries of a spec selection (cs: a cli_spec_t *). */
#define CLI_SPEC_OPTIONS(cs)                                                                           \
  SYNO_OPT_ENUM("preset", "NAME", &(cs)->preset, cli_preset_names(), "a search preset"),               \
      SYNO_OPT_PATH("spec", "FILE", &(cs)->file, SYNO_OPT_FILE, "a search spec in JSON (docs/space.md)"), \
      SYNO_OPT_LIST("bind", "V=X,...", (cs)->bind, SYNO_MAX_BINDINGS, &(cs)->n_bind,                   \
                    "a binding for the preset (repeat for several)"),                                  \
      SYNO_OPT_INT("depth", "D", &(cs)->depth, 1, 40, "override the spec's depth"),                    \
      SYNO_OPT_STR("max-count", "CAPS", &(cs)->caps,                                                   \
                   "primitives of each kind in one operator, e.g.\n"                                   \
                   "merge=1,split=3,shift=2 (the published vision caps)")

/* Builds the spec from a preset (with its bindings) or a JSON file, and
 * applies --depth and --max-count; prints the error and returns 2 on bad
 * input. */
int cli_spec_resolve(const cli_spec_t *cs, syno_space_spec_t *spec);
/* A sample or search that found no operator: says so on stderr, naming the binding and the
 * limit that removed the most (from the space's statistics st after `walks` walks; < 0: not
 * said), and returns SYNO_EXIT_FAIL. */
/* A spec file for a search, train or eval: it must have a "preset" (the slots bind it) and no
 * "bind". Its text into *json (syno_free it) and the preset's name into *preset (static
 * storage); 0, or the exit status with the message printed. */
int cli_spec_for_slots(const char *path, char **json, const char **preset);
int cli_empty_space(const char *cmd, const syno_space_spec_t *spec, const syno_space_stats_t *st, long walks);

/* --to of export (and --emit of show): pytorch, tvm, c, dot; NULL-terminated. */
extern const char *const cli_export_langs[];
/* Writes op's code in `lang` for `binding` to `out`; the one path from an operator to its code
 * (export, show --emit). Prints the error and returns a status on failure. */
int cli_export_write(const syno_cliop_t *c, const char *lang, long binding, FILE *out);

/* The candidate `id` of a search's database: its operator (*op, malloc'd; NULL for the
 * baseline) and the search's backbone, preset, data set, padding and backbone knobs into cfg
 * (strings kept in strs). With verb ("retraining"), says on stderr what it is about to do with
 * which candidate. Exit status on error, with the message printed. */
int cli_candidate_from_db(const char *path, long id, const char *verb, syno_train_cfg_t *cfg, char strs[3][256],
                          char **op);

/* An output file written whole or not at all: into a new file beside it, renamed over it
 * when everything was written, removed otherwise, so a failed write leaves what was there as
 * it was (an existing link's target is replaced; a device or a FIFO is written directly and
 * never removed). open prints the error and returns a status; close takes the status of the
 * writing (0: commit) and returns it, or 1 when flushing, closing or renaming failed. */
typedef struct {
  FILE *f;
  bool direct;
  char path[4096], tmp[4096 + 32];
} cli_outfile_t;
int cli_outfile_open(const char *cmd, const char *path, cli_outfile_t *o);
int cli_outfile_close(const char *cmd, cli_outfile_t *o, int rc);

/* A candidate's speed-up over the standard network: its re-timed one when it has one. */
double cli_speedup_of(const syno_db_cand_t *c);
/* The task of a search's backbone (syno/task.h); an unknown or missing name (an old
 * database) gives the first image task. */
const syno_task_backbone_t *cli_task_of(const char *backbone);
/* Within the task's tolerance of the baseline (1 point of accuracy, or of perplexity for a
 * language model). */
bool cli_near_baseline(const syno_db_cand_t *c, const syno_db_cand_t *base, const syno_task_backbone_t *t);
/* The fastest finished candidate within the tolerance (the one `syno report` names); NULL
 * when there is none or no baseline row. */
const syno_db_cand_t *cli_best_candidate(const syno_db_cand_t *rows, int n, const syno_task_backbone_t *t);

/* Whether every candidate's operator of a search's database parses against its stored spec:
 * 0, or 2 (a damaged file is bad input) after a message naming the first damaged row. */
int cli_check_ops(const char *cmd, const char *path, syno_db_t *db, const syno_db_cand_t *rows, int n);

int cli_cmd_show(int argc, char **argv);
int cli_cmd_export(int argc, char **argv);
int cli_cmd_sample(int argc, char **argv);
int cli_cmd_space(int argc, char **argv);
int cli_cmd_run(int argc, char **argv);
int cli_cmd_train(int argc, char **argv);
int cli_cmd_eval(int argc, char **argv);
int cli_cmd_search(int argc, char **argv);
int cli_cmd_report(int argc, char **argv);

#endif
