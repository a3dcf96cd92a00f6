/* syno export: one operator as code for another tool (PyTorch, TVM, C) or as a Graphviz
 * drawing. The operator is chosen exactly as `syno show` chooses it (opsel.c), and
 * `syno show --emit` calls cli_export_write below, so there is one path from an operator to
 * its code. Every check a user can fail (the output path, the operator text, the binding,
 * a missing Graphviz) happens before any code is generated, so a refused command leaves no
 * half-written file behind. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "syno/codegen.h"
#include "syno/proc.h"

static const char *usage =
    "usage: syno export --to LANG (--builtin NAME | TEXT --input SHAPE --output SHAPE |\n"
    "                              --db DB (--id N | --best)) [OPTIONS]\n"
    "\n"
    "Writes an operator as code: a PyTorch nn.Module (views and one einsum or convolution\n"
    "per stage; channels as constructor arguments, batch and sizes read from the input),\n"
    "a TVM script (TE compute per stage plus a Relax wrapper, sizes from the tensors'\n"
    "shapes), a dependency-free C file with the forward pass and the gradients of the\n"
    "input and every weight, a Halide generator of the forward pass (both for the\n"
    "binding's sizes), or a Graphviz drawing. --db takes the operator of a search.\n";
static const char *epilog =
    "\n"
    "examples:\n"
    "  syno export --to pytorch --builtin conv2d --bind N=8,C_in=16,C_out=32,H=28,W=28,k=3 -o conv.py\n"
    "  syno export --to c --preset conv2d 'TEXT' --bind N=1,C_in=4,C_out=4,H=8,W=8 -o op.c\n"
    "  syno export --to halide --builtin conv2d --bind N=8,C_in=16,C_out=16,H=28,W=28,k=3 -o conv.cpp\n"
    "  syno export --to dot --builtin conv2d --png -o conv2d.png\n"
    "  syno export --to pytorch --db results.db --best -o op.py\n";

const char *const cli_export_langs[] = {"pytorch", "tvm", "c", "halide", "dot", NULL};

int cli_export_write(const syno_cliop_t *c, const char *lang, long binding, FILE *out) {
  syno_error_t err;
  int b = (int)binding, len;
  int is_dot = strcmp(lang, "dot") == 0;
  int (*fn)(const syno_operator_t *, int, char *, size_t, syno_error_t *) = NULL;
  if (!strcmp(lang, "pytorch"))
    fn = syno_codegen_pytorch;
  else if (!strcmp(lang, "tvm"))
    fn = syno_codegen_tvm;
  else if (!strcmp(lang, "c"))
    fn = syno_codegen_c;
  else if (!strcmp(lang, "halide"))
    fn = syno_codegen_halide;
  else if (!is_dot)
    return cli_cmd_error(NULL, "'%s' is not a code generator (pytorch, tvm, c, halide, dot)", lang);
  len = is_dot ? syno_codegen_dot(&c->op, NULL, 0, &err) : fn(&c->op, b, NULL, 0, &err);
  if (len < 0) {
    fprintf(stderr, "syno: %s\n", err.msg);
    return SYNO_EXIT_FAIL;
  }
  char *code = malloc((size_t)len + 1);
  if (!code) {
    fprintf(stderr, "syno: out of memory\n");
    return SYNO_EXIT_FAIL;
  }
  if (is_dot)
    syno_codegen_dot(&c->op, code, (size_t)len + 1, &err);
  else
    fn(&c->op, b, code, (size_t)len + 1, &err);
  int bad = fputs(code, out) == EOF;
  free(code);
  if (bad) {
    fprintf(stderr, "syno: cannot write the code: %s\n", strerror(errno));
    return SYNO_EXIT_FAIL;
  }
  return 0;
}

/* Pipes the DOT text into `dot -Tpng` (to `file`, or our stdout). Run without a shell, so
 * no file name needs quoting. */
static int write_png(const syno_cliop_t *c, const char *file) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (!m) {
    fprintf(stderr, "syno: out of memory\n");
    return SYNO_EXIT_FAIL;
  }
  int rc = cli_export_write(c, "dot", 0, m);
  if (fclose(m) && !rc) rc = SYNO_EXIT_FAIL;
  if (rc) {
    free(text);
    return rc;
  }
  syno_error_t err;
  const char *to_file[] = {"dot", "-Tpng", "-o", file, NULL}, *to_stdout[] = {"dot", "-Tpng", NULL};
  const int out = STDOUT_FILENO;
  int st = syno_proc_run(file ? to_file : to_stdout, NULL, text, len, NULL, file ? NULL : &out, &err);
  free(text);
  if (st < 0) {
    fprintf(stderr, "syno: export: %s\n", err.msg);
    return SYNO_EXIT_FAIL;
  }
  if (st != 0) {
    fprintf(stderr, "syno: export: Graphviz 'dot -Tpng' failed (exit %d)\n", st);
    return SYNO_EXIT_FAIL;
  }
  return 0;
}

/* The operator and preset of candidate `id` of database `db` (or its best, `best`) into sel;
 * `what` gets a comment line naming them. 0 or an exit status, the message printed. */
static int from_db(const char *db, long id, int best, syno_opsel_t *sel, char strs[3][256], char **op, char *what,
                   size_t n) {
  if (best) {
    syno_error_t err;
    syno_db_t *h = NULL;
    syno_db_cand_t *rows = NULL;
    int k = 0;
    char *bb = NULL;
    if (syno_db_open(db, SYNO_DB_READONLY, &h, &err) || syno_db_meta_get(h, "backbone", &bb, &err) < 0 ||
        syno_db_list(h, &rows, &k, &err)) {
      fprintf(stderr, "syno: %s\n", err.msg);
      free(bb);
      syno_db_list_free(rows, k);
      syno_db_close(h);
      return SYNO_EXIT_USAGE;
    }
    const syno_db_cand_t *c = cli_best_candidate(rows, k, cli_task_of(bb));
    id = c ? c->id : 0;
    free(bb);
    syno_db_list_free(rows, k);
    syno_db_close(h);
    if (!id) return cli_cmd_error("export", "%s has no finished candidate within 1 point of its baseline", db);
  }
  syno_train_cfg_t cfg = {0};
  int rc = cli_candidate_from_db(db, id, NULL, &cfg, strs, op);
  if (rc) return rc;
  if (!*op)
    return cli_cmd_error("export", "candidate %ld of %s is the standard operator: export it with --builtin", id, db);
  sel->text = *op;
  sel->preset = cfg.preset;
  snprintf(what, n, "From candidate %ld of %s%s: backbone %s, data set %s, preset %s.\n", id, db,
           best ? " (the fastest within 1 point of the baseline)" : "", cfg.backbone, cfg.dataset, cfg.preset);
  return 0;
}

int cli_cmd_export(int argc, char **argv) {
  const char *lang = NULL, *file = NULL, *db = NULL;
  long binding = 0, id = 0;
  int png = 0, best = 0;
  syno_opsel_t sel = {0};
  syno_opt_t opts[] = {
      CLI_OPSEL_OPTIONS(&sel),
      SYNO_OPT_ENUM("to", "LANG", &lang, cli_export_langs,
                    "what to write (required): pytorch (a torch.nn.Module), tvm\n"
                    "(TE compute and a Relax wrapper), c (forward and backward\n"
                    "C11 functions), halide (a Halide generator of the forward)\n"
                    "or dot (Graphviz); see docs/codegen.md"),
      SYNO_OPT_INT("binding", "B", &binding, 0, SYNO_MAX_BINDINGS - 1,
                   "the binding the code is for, from 0 (default 0)"),
      SYNO_OPT_PATH("o", "FILE", &file, SYNO_OPT_NEW, "write to FILE instead of stdout"),
      SYNO_OPT_FLAG("png", &png, "with --to dot: a PNG drawn by Graphviz's dot instead"),
      SYNO_OPT_PATH("db", "DB", &db, SYNO_OPT_FILE,
                    "a search's results database: export its candidate --id N,\n"
                    "or with --best the one syno report names (the fastest within\n"
                    "1 point of the baseline), with the search's preset"),
      SYNO_OPT_INT("id", "N", &id, 1, 1000000000000000LL, "the candidate of --db"),
      SYNO_OPT_FLAG("best", &best, "with --db: its fastest candidate within the tolerance"),
      SYNO_OPT_END,
  };
  int rc = cli_parse("export", usage, epilog, opts, argc, argv);
  if (rc >= 0) return rc;
  if (!lang) return cli_cmd_error("export", "give --to LANG (pytorch, tvm, c, halide, dot)");
  if (png && strcmp(lang, "dot") != 0) return cli_cmd_error("export", "--png applies to --to dot only");
  if (png && !syno_proc_on_path("dot"))
    return cli_cmd_error("export", "--png needs Graphviz's 'dot' on PATH (Debian: apt-get install graphviz)");
  char strs[3][256], *db_op = NULL, what[1024] = "";
  if ((id || best) && !db) return cli_cmd_error("export", "--id and --best choose a candidate of --db DB");
  if (db) {
    if (!!id == !!best) return cli_cmd_error("export", "with --db, give either --id N or --best");
    if (sel.text || sel.builtin || sel.preset || sel.spec || sel.input || sel.output || sel.vars)
      return cli_cmd_error("export", "--db takes the operator and its preset from the search; drop the operator options");
    rc = from_db(db, id, best, &sel, strs, &db_op, what, sizeof what);
    if (rc) {
      free(db_op);
      return rc;
    }
  }
  /* SYNO_OPT_NEW checked the directory; an existing file must be writable too. */
  if (file && access(file, F_OK) == 0 && access(file, W_OK) != 0)
    return cli_cmd_error("export", "-o %s: %s", file, strerror(EACCES));
  syno_cliop_t c;
  rc = cli_opsel_finish("export", &sel, binding, &c);
  free(db_op);
  if (rc) return rc;
  if (png) {
    rc = write_png(&c, file);
    cli_op_free(&c);
    return rc;
  }
  cli_outfile_t of = {0};
  FILE *out = stdout;
  if (file) {
    rc = cli_outfile_open("export", file, &of);
    if (rc) {
      cli_op_free(&c);
      return rc;
    }
    out = of.f;
  }
  /* The candidate's origin, as a comment of the language written. */
  const char *cmt = !strcmp(lang, "pytorch") || !strcmp(lang, "tvm") ? "# " : "// ";
  rc = what[0] && fprintf(out, "%s%s", cmt, what) < 0 ? SYNO_EXIT_FAIL : 0;
  if (!rc) rc = cli_export_write(&c, lang, binding, out);
  if (file) rc = cli_outfile_close("export", &of, rc);
  cli_op_free(&c);
  return rc;
}
