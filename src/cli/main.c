/* syno: the command-line front end. One file per sub-command. */
#include <stdio.h>
#include <string.h>

#include <errno.h>
#include <unistd.h>
#include "cli.h"

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} command_t;

static const command_t commands[] = {
    {"show", cli_cmd_show, "print an operator: shapes, FLOPs, parameters, loop nests"},
    {"export", cli_cmd_export, "write an operator as PyTorch, TVM or C code, or a Graphviz drawing"},
    {"run", cli_cmd_run, "run an operator through the reference interpreter on seeded data"},
    {"sample", cli_cmd_sample, "draw random operators from the search space"},
    {"space", cli_cmd_space, "count the search space per depth; find missed duplicates"},
    {"eval", cli_cmd_eval, "evaluate one operator in a backbone: train, time, print JSON"},
    {"search", cli_cmd_search, "search for operators: MCTS or random, results in a database"},
    {"report", cli_cmd_report, "what a search found: best operators, Pareto front, plots"},
    {"train", cli_cmd_train, "train a backbone whose conv slots hold a (synthesized) operator"},
};

static void usage(FILE *f) {
  fprintf(f,
          "usage: syno COMMAND [OPTIONS]\n"
          "\n"
          "syno synthesizes neural-network operators from dimension-level primitives.\n"
          "\n"
          "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\nRun 'syno COMMAND --help' for a command's options.\n");
}

/* A command's end. A failed one exits at once, past the libraries' exit handlers: after an
 * allocation failed, OpenBLAS's waits forever for a thread stuck allocating. A successful one
 * must also have written all its output: a full disk or a closed pipe is a failure. */
static int finish(int rc) {
  if (rc == 0 && (fflush(stdout) || ferror(stdout))) {
    fprintf(stderr, "syno: cannot write the output: %s\n", strerror(errno));
    rc = SYNO_EXIT_FAIL;
  }
  if (rc != 0) {
    fflush(NULL);
    _exit(rc);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return cli_cmd_error(NULL, 
        "give a command (show, export, run, sample, space, eval, search, report, train); see syno --help");
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
    usage(stdout);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (!strcmp(argv[1], commands[i].name)) return finish(commands[i].run(argc - 1, argv + 1));
  return cli_cmd_error(NULL, "unknown command '%s' (try 'syno --help')", argv[1]);
}
