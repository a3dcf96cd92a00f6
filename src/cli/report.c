/* syno report: what a search found, from its results database. */
#include <cjson/cJSON.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "syno/proc.h"
#include "syno/codegen.h"
#include "syno/evalproto.h"
#include "syno/space.h"
#include "syno/store.h"

static const char *usage =
    "usage: syno report --db FILE [--top K] [--json | --csv] [--out DIR]\n"
    "       syno report --table FILE [--table FILE ...] [--json] [--out DIR]\n"
    "\n"
    "Shows what a search recorded: its settings, the baseline (the backbone with\n"
    "the standard operator), the best operators - ranked by their confirmed\n"
    "accuracy (the search's re-training at a larger proxy, --confirm) where there\n"
    "is one, then by reward - with their accuracy, accuracy loss against the\n"
    "baseline, FLOPs ratio and measured speed-up, the failures with their reasons,\n"
    "and the Pareto front of accuracy against speed-up. Every table shows the same\n"
    "speed-up of a candidate: the one its worker measured against the standard\n"
    "network in the same run. Writes DIR/NAME-pareto.png (gnuplot) and\n"
    "DIR/NAME-best.dot and -best.png (graphviz) of the best operator, NAME being the\n"
    "database's name without .db and DIR its directory unless --out is given.\n"
    "The database is only read (a file that is not a syno results database, or is\n"
    "damaged, is refused with status 2 and left as it is).\n"
    "\n"
    "--table: the results table over several searches (one per backbone, say), in\n"
    "the form of the paper's figure 5: per search, the fastest operator within 1 pp\n"
    "of its baseline's accuracy (1 point of perplexity for gpt), its speed-up, FLOPs\n"
    "and parameters against the standard network, then the geometric mean of the\n"
    "speed-ups (a search with none counts 1x); writes DIR/syno-table.png.\n";

/* What a record's quality is: its test accuracy, or for a language model (the gpt backbone) its
 * validation perplexity, lower being better. Every table, the Pareto front and the plot go
 * through these. */
static int lm;
static double quality(const syno_db_cand_t *c) { return lm ? -c->perplexity : c->accuracy; }
static const char *quality_name(void) { return lm ? "ppl" : "acc"; }
static void show_quality(char *buf, size_t n, const syno_db_cand_t *c) {
  if (lm)
    snprintf(buf, n, "%.3f", c->perplexity);
  else
    snprintf(buf, n, "%.2f%%", 100 * c->accuracy);
}
static void show_delta(char *buf, size_t n, const syno_db_cand_t *c, const syno_db_cand_t *base) {
  if (!base)
    snprintf(buf, n, "-");
  else if (lm)
    snprintf(buf, n, "%+.3f", c->perplexity - base->perplexity);
  else
    snprintf(buf, n, "%+.2fpp", 100 * (c->accuracy - base->accuracy));
}
/* Within the paper's tolerance of the baseline: 1 point of accuracy, or of perplexity. */
static const syno_task_backbone_t *task; /* the report's search's */
static int near_baseline(const syno_db_cand_t *c, const syno_db_cand_t *base) {
  return cli_near_baseline(c, base, task);
}

static int by_reward(const void *a, const void *b) {
  const syno_db_cand_t *x = *(syno_db_cand_t *const *)a, *y = *(syno_db_cand_t *const *)b;
  if (x->reward != y->reward) return x->reward < y->reward ? 1 : -1;
  return x->id < y->id ? -1 : 1;
}

/* The ranking of the tables: a confirmed accuracy (the larger proxy's) first, by it; the
 * others after, by reward. */
static int by_rank(const void *a, const void *b) {
  const syno_db_cand_t *x = *(syno_db_cand_t *const *)a, *y = *(syno_db_cand_t *const *)b;
  int cx = x->confirmed == 1, cy = y->confirmed == 1;
  if (cx != cy) return cx ? -1 : 1;
  if (cx && x->confirmed_accuracy != y->confirmed_accuracy)
    return x->confirmed_accuracy < y->confirmed_accuracy ? 1 : -1;
  return by_reward(a, b);
}

/* A record's speed-up, the one figure every table and the plot show: the candidate's, as its
 * worker measured it against the faster standard network in the same run, or, when it was
 * re-timed after the search (`syno eval --retime`), as that re-timing measured it; the baseline
 * is that standard network, 1 by definition. Absolute latencies are not compared across
 * records: each was timed in another process, under another load. */
static double speedup_of(const syno_db_cand_t *c) { return cli_speedup_of(c); }
static double speedup_nnconv_of(const syno_db_cand_t *c) {
  if (!c->is_baseline) return c->retimed == 1 ? c->retime_speedup_nnconv : c->speedup_nnconv;
  return c->base_latency_s > 0 ? c->nnconv_latency_s / c->base_latency_s : 0;
}
/* The speed-up as the tables print it: "1.38x", marked "1.38x*" when re-timed. */
static int any_retimed; /* a printed speed-up was marked: the footnote follows */
static const char *show_speedup(char *buf, size_t n, const syno_db_cand_t *c) {
  int r = !c->is_baseline && c->retimed == 1;
  any_retimed |= r;
  snprintf(buf, n, "%.2fx%s", speedup_of(c), r ? "*" : "");
  return buf;
}
static void retimed_footnote(void) {
  if (any_retimed)
    printf("* re-timed after the search (syno eval --db DB --id N --retime), not the search's own timing\n");
  any_retimed = 0;
}
/* The tables' "vs im2col" cell: a language model's linear slots have no im2col convolution. */
static const char *vs_im2col(char *buf, size_t n, const syno_db_cand_t *c) {
  if (lm) return "-";
  snprintf(buf, n, "%.2fx", speedup_nnconv_of(c));
  return buf;
}

static int by_speedup(const void *a, const void *b) {
  const syno_db_cand_t *x = *(syno_db_cand_t *const *)a, *y = *(syno_db_cand_t *const *)b;
  if (speedup_of(x) != speedup_of(y)) return speedup_of(x) > speedup_of(y) ? -1 : 1;
  if (quality(x) != quality(y)) return quality(x) > quality(y) ? -1 : 1;
  return x->id < y->id ? -1 : 1;
}

/* Non-dominated records (higher quality, higher speed-up), fastest first. */
static int pareto(syno_db_cand_t **ok, int n, syno_db_cand_t **front) {
  syno_db_cand_t **s = malloc((size_t)(n ? n : 1) * sizeof *s);
  memcpy(s, ok, (size_t)n * sizeof *s);
  qsort(s, (size_t)n, sizeof *s, by_speedup);
  int m = 0;
  double best = -HUGE_VAL;
  for (int i = 0; i < n; i++)
    if (quality(s[i]) > best) best = quality(s[i]), front[m++] = s[i];
  free(s);
  return m;
}

/* The confirmations' larger proxy, from the recorded search settings (see syno/driver.h). */
static void confirm_setting(syno_db_t *db, char *buf, size_t n) {
  char *meta = NULL;
  syno_error_t err;
  snprintf(buf, n, "at a larger proxy");
  if (syno_db_meta_get(db, "driver", &meta, &err) != 1) return;
  cJSON *o = cJSON_Parse(meta);
  free(meta);
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "epochs"), *s = cJSON_GetObjectItemCaseSensitive(o, "subset"),
              *seed = cJSON_GetObjectItemCaseSensitive(o, "seed");
  if (cJSON_IsNumber(e) && cJSON_IsNumber(s) && cJSON_IsNumber(seed)) {
    char imgs[32] = "all";
    if (s->valuedouble > 0) snprintf(imgs, sizeof imgs, "%.0f", 2 * s->valuedouble);
    snprintf(buf, n, "re-trained at %.0f epochs, %s training images, seed %.0f", 2 * e->valuedouble, imgs,
             seed->valuedouble + 1);
  }
  cJSON_Delete(o);
}

/* A gnuplot script built in memory, then given to gnuplot on its standard input (no shell). */
typedef struct {
  FILE *f;
  char *text;
  size_t len;
} script_t;

/* Starts a script writing a PNG of the given height; NULL when gnuplot is missing or the path
 * holds a control character (which gnuplot's string syntax cannot carry). */
static FILE *gnuplot_open(script_t *s, const char *png, int height) {
  memset(s, 0, sizeof *s);
  for (const char *c = png; *c; c++)
    if ((unsigned char)*c < 0x20) return NULL;
  if (!syno_proc_on_path("gnuplot")) return NULL;
  syno_error_t err;
  const char *probe[] = {"gnuplot", "-e", "set terminal pngcairo", NULL};
  int cairo = syno_proc_run(probe, NULL, NULL, 0, NULL, NULL, &err) == 0;
  if (!(s->f = open_memstream(&s->text, &s->len))) return NULL;
  fprintf(s->f, "set terminal %s size 900,%d\nset output '", cairo ? "pngcairo" : "png", height);
  for (const char *c = png; *c; c++) fprintf(s->f, *c == '\'' ? "''" : "%c", *c); /* '' is a quote in '...' */
  fprintf(s->f, "'\n");
  return s->f;
}

/* Runs gnuplot on the script. 0, or -1 when it failed. */
static int gnuplot_run(script_t *s) {
  if (fclose(s->f)) {
    free(s->text);
    return -1;
  }
  syno_error_t err;
  const char *argv[] = {"gnuplot", NULL};
  int st = syno_proc_run(argv, NULL, s->text, s->len, NULL, NULL, &err);
  free(s->text);
  return st == 0 ? 0 : -1;
}

/* A label for gnuplot's inline data: printable ASCII, without the quote that ends it. */
static void label(char *out, size_t n, const char *in) {
  size_t k = 0;
  for (; *in && k + 1 < n; in++) out[k++] = (*in >= 0x20 && *in < 0x7f && *in != '"' && *in != '\\') ? *in : '?';
  out[k] = 0;
}

static double plotted(const syno_db_cand_t *c) { return lm ? c->perplexity : 100 * c->accuracy; }

static int plot(const char *png, syno_db_cand_t **ok, int n, syno_db_cand_t **front, int m,
                const syno_db_cand_t *base) {
  script_t sc;
  FILE *g = gnuplot_open(&sc, png, 600);
  if (!g) return -1;
  fprintf(g,
          "set title 'syno search: %s against inference speed-up'\n"
          "set xlabel 'whole-network speed-up against the standard network (same run)'\n"
          "set ylabel '%s'\nset grid\nset key %s left\n",
          lm ? "perplexity" : "accuracy", lm ? "validation perplexity (lower is better)" : "test accuracy (%)",
          lm ? "top" : "bottom");
  fprintf(g,
          "plot '-' with points pt 7 ps 0.8 lc rgb '#7f7f7f' title 'candidates', "
          "'-' with linespoints pt 7 lw 2 lc rgb '#d62728' title 'Pareto front', "
          "'-' with points pt 9 ps 2 lc rgb '#1f77b4' title 'baseline (standard operator)'\n");
  for (int i = 0; i < n; i++)
    if (!ok[i]->is_baseline) fprintf(g, "%g %g\n", speedup_of(ok[i]), plotted(ok[i]));
  fprintf(g, "e\n");
  for (int i = 0; i < m; i++) fprintf(g, "%g %g\n", speedup_of(front[i]), plotted(front[i]));
  fprintf(g, "e\n");
  if (base) fprintf(g, "%g %g\n", speedup_of(base), plotted(base));
  fprintf(g, "e\n");
  return gnuplot_run(&sc);
}

/* The best operator as a Graphviz drawing (its shapes come from the spec). */
static int draw_best(syno_db_t *db, const syno_db_cand_t *best, const char *dot_path, const char *png_path,
                     syno_error_t *err) {
  char *spec_text = NULL;
  if (syno_db_meta_get(db, "spec", &spec_text, err) != 1) return syno_error_set(err, "the database has no search spec");
  syno_space_spec_t spec;
  int rc = syno_space_spec_from_json(spec_text, &spec, err);
  free(spec_text);
  if (rc) return -1;
  syno_graph_t *g = syno_graph_new(&spec.vars);
  syno_operator_t op;
  if (!g) return syno_error_set(err, "out of memory");
  if (syno_operator_parse(g, best->op_text, &spec.input, &spec.output, &op, err)) {
    syno_graph_free(g);
    return -1;
  }
  static char dot[1 << 16];
  rc = syno_codegen_dot(&op, dot, sizeof dot, err) < 0 ? -1 : 0;
  syno_graph_free(g);
  if (rc) return -1;
  FILE *f = fopen(dot_path, "w");
  if (!f) return syno_error_set(err, "cannot write %s", dot_path);
  fputs(dot, f);
  fclose(f);
  if (!syno_proc_on_path("dot")) return syno_error_set(err, "graphviz's dot is not installed");
  const char *argv[] = {"dot", "-Tpng", "-o", png_path, dot_path, NULL};
  int st = syno_proc_run(argv, NULL, NULL, 0, NULL, NULL, err);
  return st == 0 ? 0 : st < 0 ? -1 : syno_error_set(err, "dot failed on %s (exit %d)", dot_path, st);
}

/* One search's row of the results table. */
typedef struct {
  char db[256], backbone[64];
  int lm, candidates;
  syno_db_cand_t base, best; /* best.id 0: none within the tolerance */
} table_row_t;

/* A record's copy without its strings (they stay with, and are freed with, the list). */
static void numbers_only(syno_db_cand_t *c) {
  c->op_text = c->path = c->reason = c->base_impl = c->slots_json = c->confirm_reason = c->retime_base_impl = NULL;
}

/* The fastest candidate within the tolerance of one search. 0, or the exit status. */
static int table_row(const char *path, table_row_t *t) {
  syno_error_t err;
  syno_db_t *db;
  memset(t, 0, sizeof *t);
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", path);
  snprintf(t->db, sizeof t->db, "%s", basename(tmp));
  if (syno_db_open(path, SYNO_DB_READONLY, &db, &err)) return cli_cmd_error("report", "%s", err.msg);
  char *bb = NULL;
  snprintf(t->backbone, sizeof t->backbone, "?");
  if (syno_db_meta_get(db, "backbone", &bb, &err) == 1) snprintf(t->backbone, sizeof t->backbone, "%s", bb);
  free(bb);
  task = cli_task_of(t->backbone);
  t->lm = lm = task->kind == SYNO_TASK_TEXT;
  syno_db_cand_t *rows;
  int n;
  if (syno_db_list(db, &rows, &n, &err)) {
    syno_db_close(db);
    return cli_cmd_error("report", "%s", err.msg);
  }
  const syno_db_cand_t *base = NULL, *best = cli_best_candidate(rows, n, task);
  for (int i = 0; i < n; i++) {
    if (rows[i].is_baseline)
      base = &rows[i];
    else
      t->candidates++;
  }
  int rc = 0;
  if (!base)
    rc = cli_cmd_error("report", "%s has no baseline record (not a finished search's start?)", path);
  else {
    /* Only numbers are kept: the strings stay with the rows. */
    t->base = *base;
    if (best) t->best = *best;
    numbers_only(&t->base);
    numbers_only(&t->best);
  }
  syno_db_list_free(rows, n);
  syno_db_close(db);
  return rc;
}

static int table_plot(const char *png, const table_row_t *t, int n, double geo) {
  script_t sc;
  FILE *g = gnuplot_open(&sc, png, 500);
  if (!g) return -1;
  fprintf(g,
          "set title 'syno: fastest operator within 1 pp (1 point of perplexity) per search; geomean %.2fx'\n"
          "set ylabel 'inference speed-up over the standard network'\nset style fill solid 0.6\n"
          "set boxwidth 0.6\nset yrange [0:*]\nset grid y\nset key top left\nset xtics rotate by -20\n"
          "plot '-' using 0:2:xtic(1) with boxes lc rgb '#1f77b4' notitle, 1 with lines lc rgb '#d62728' "
          "title 'standard network'\n",
          geo);
  for (int i = 0; i < n; i++) {
    char bb[64], db[256];
    label(bb, sizeof bb, t[i].backbone);
    label(db, sizeof db, t[i].db);
    fprintf(g, "\"%s (%s)\" %g\n", bb, db, t[i].best.id ? speedup_of(&t[i].best) : 1.0);
  }
  fprintf(g, "e\n");
  return gnuplot_run(&sc);
}

/* syno report --table: the results table over several searches. */
static int report_table(const char *const *paths, int n, const char *out_dir, int json) {
  table_row_t *t = calloc((size_t)n, sizeof *t);
  if (!t) return cli_cmd_error("report", "out of memory");
  for (int i = 0; i < n; i++) {
    int rc = table_row(paths[i], &t[i]);
    if (rc) {
      free(t);
      return rc;
    }
  }
  double logsum = 0;
  for (int i = 0; i < n; i++) logsum += log(t[i].best.id ? speedup_of(&t[i].best) : 1.0);
  double geo = exp(logsum / n);
  char png[1100];
  snprintf(png, sizeof png, "%s/syno-table.png", out_dir ? out_dir : ".");
  int plotted = table_plot(png, t, n, geo) == 0;
  if (json) {
    for (int i = 0; i < n; i++) {
      cJSON *o = cJSON_CreateObject();
      lm = t[i].lm;
      cJSON_AddStringToObject(o, "db", t[i].db);
      cJSON_AddStringToObject(o, "backbone", t[i].backbone);
      cJSON_AddStringToObject(o, "quality", lm ? "perplexity" : "accuracy");
      cJSON_AddNumberToObject(o, "candidates", t[i].candidates);
      cJSON_AddNumberToObject(o, "baseline", lm ? t[i].base.perplexity : t[i].base.accuracy);
      if (t[i].best.id) {
        cJSON_AddNumberToObject(o, "best_id", (double)t[i].best.id);
        cJSON_AddNumberToObject(o, "best", lm ? t[i].best.perplexity : t[i].best.accuracy);
        cJSON_AddNumberToObject(o, "speedup", speedup_of(&t[i].best));
        cJSON_AddBoolToObject(o, "retimed", t[i].best.retimed == 1);
        cJSON_AddNumberToObject(o, "flops_ratio", t[i].best.flops_ratio);
        cJSON_AddNumberToObject(o, "params_ratio", t[i].base.params > 0 ? t[i].best.params / t[i].base.params : 0);
      }
      char *s = cJSON_PrintUnformatted(o);
      printf("%s\n", s);
      free(s);
      cJSON_Delete(o);
    }
    printf("{\"summary\":true,\"searches\":%d,\"geomean_speedup\":%.6g%s%s%s}\n", n, geo, plotted ? ",\"png\":\"" : "",
           plotted ? png : "", plotted ? "\"" : "");
  } else {
    printf("%-15s %-24s %5s %10s %5s %10s %10s %9s %7s %7s\n", "backbone", "search", "cands", "baseline", "id", "best",
           "delta", "speed-up", "FLOPs", "params");
    for (int i = 0; i < n; i++) {
      lm = t[i].lm;
      char b[24], q[24] = "-", d[24] = "-", id[16] = "none", sp[16] = "1.00x", fl[16] = "-", pr[16] = "-";
      show_quality(b, sizeof b, &t[i].base);
      if (t[i].best.id) {
        show_quality(q, sizeof q, &t[i].best);
        show_delta(d, sizeof d, &t[i].best, &t[i].base);
        snprintf(id, sizeof id, "%ld", t[i].best.id);
        show_speedup(sp, sizeof sp, &t[i].best);
        snprintf(fl, sizeof fl, "%.2fx", t[i].best.flops_ratio);
        if (t[i].base.params > 0) snprintf(pr, sizeof pr, "%.2fx", t[i].best.params / t[i].base.params);
      }
      printf("%-15s %-24.24s %5d %10s %5s %10s %10s %9s %7s %7s\n", t[i].backbone, t[i].db, t[i].candidates, b, id, q, d,
             sp, fl, pr);
    }
    retimed_footnote();
    printf(
        "geometric mean speed-up over %d search(es): %.2fx (a search with no operator within the tolerance counts "
        "1x)\n",
        n, geo);
    if (plotted)
      printf("wrote %s\n", png);
    else
      printf("no plot: gnuplot is missing or failed\n");
  }
  free(t);
  return 0;
}

int cli_cmd_report(int argc, char **argv) {
  const char *db_path = NULL, *out_dir = NULL;
  long top = 10;
  int json = 0, csv = 0, ntable = 0;
  const char *tables[32];
  syno_opt_t opts[] = {
      SYNO_OPT_PATH("db", "FILE", &db_path, SYNO_OPT_FILE, "the results database of `syno search`"),
      SYNO_OPT_LIST("table", "FILE", tables, 32, &ntable,
                    "the results table over these searches' databases\n"
                    "(repeat it, up to 32)"),
      SYNO_OPT_INT("top", "K", &top, 1, 1000000, "how many operators to list (default 10)"),
      SYNO_OPT_FLAG("json", &json, "one JSON object per record, then a summary object"),
      SYNO_OPT_FLAG("csv", &csv, "a header and one row per record"),
      SYNO_OPT_PATH("out", "DIR", &out_dir, SYNO_OPT_DIR,
                    "where to write the pictures (an existing, writable directory;\n"
                    "default: the database's)"),
      SYNO_OPT_END,
  };
  int rc = cli_parse("report", usage, NULL, opts, argc, argv);
  if (rc >= 0) return rc;
  syno_error_t err;
  if (syno_opt_conflict(opts, "db", "table", &err) || syno_opt_conflict(opts, "table", "csv", &err) ||
      syno_opt_conflict(opts, "table", "top", &err))
    return cli_cmd_error("report", "%s", err.msg);
  if (ntable > 0) return report_table(tables, ntable, out_dir, json);
  if (!db_path) return cli_cmd_error("report", "give the results database with --db FILE (or --table FILE ...)");
  if (syno_opt_conflict(opts, "json", "csv", &err)) return cli_cmd_error("report", "%s", err.msg);
  syno_db_t *db;
  if (syno_db_open(db_path, SYNO_DB_READONLY, &db, &err)) return cli_cmd_error("report", "%s", err.msg);
  char *bb = NULL;
  task = cli_task_of(syno_db_meta_get(db, "backbone", &bb, &err) == 1 ? bb : NULL);
  lm = task->kind == SYNO_TASK_TEXT;
  free(bb);
  syno_db_cand_t *rows;
  int n;
  if (syno_db_list(db, &rows, &n, &err)) {
    syno_db_close(db);
    return cli_cmd_error("report", "%s", err.msg); /* a damaged row: bad input */
  }
  int bad = cli_check_ops("report", db_path, db, rows, n);
  if (bad) {
    syno_db_list_free(rows, n);
    syno_db_close(db);
    return bad;
  }
  syno_db_cand_t *base = NULL;
  syno_db_cand_t **ok = malloc((size_t)(n + 1) * sizeof *ok), **front = malloc((size_t)(n + 1) * sizeof *front);
  int n_ok = 0, n_failed = 0, n_slow = 0, n_confirmed = 0;
  for (int i = 0; i < n; i++) {
    if (rows[i].is_baseline) base = &rows[i];
    if (rows[i].status == 0)
      ok[n_ok++] = &rows[i];
    else
      n_failed++;
    n_slow += syno_evalres_too_slow(&rows[i]);
    n_confirmed += rows[i].confirmed == 1;
  }
  int n_front = pareto(ok, n_ok, front);
  qsort(ok, (size_t)n_ok, sizeof *ok, by_rank);
  syno_db_cand_t *best = NULL;
  for (int i = 0; i < n_ok && !best; i++)
    if (!ok[i]->is_baseline) best = ok[i];

  /* Where the pictures go. */
  char dir[1024], name[512], png[1600], dot[1600], best_png[1600];
  {
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", db_path);
    snprintf(dir, sizeof dir, "%s", out_dir ? out_dir : dirname(tmp));
    snprintf(tmp, sizeof tmp, "%s", db_path);
    snprintf(name, sizeof name, "%s", basename(tmp));
    char *dotpos = strrchr(name, '.');
    if (dotpos && dotpos != name) *dotpos = 0;
  }
  snprintf(png, sizeof png, "%s/%s-pareto.png", dir, name);
  snprintf(dot, sizeof dot, "%s/%s-best.dot", dir, name);
  snprintf(best_png, sizeof best_png, "%s/%s-best.png", dir, name);
  int plotted = plot(png, ok, n_ok, front, n_front, base) == 0;
  syno_error_t derr;
  int drawn = best && draw_best(db, best, dot, best_png, &derr) == 0;

  if (json || csv) {
    if (csv) syno_db_csv_header(stdout);
    for (int i = 0; i < n; i++) {
      if (csv) {
        syno_db_csv_row(stdout, &rows[i]);
        continue;
      }
      char *j = syno_db_cand_to_json(&rows[i]);
      printf("%s\n", j);
      free(j);
    }
    if (json) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddBoolToObject(o, "summary", 1);
      cJSON_AddNumberToObject(o, "candidates", n - (base ? 1 : 0));
      cJSON_AddNumberToObject(o, "ok", n_ok - (base && base->status == 0 ? 1 : 0));
      cJSON_AddNumberToObject(o, "failed", n_failed);
      cJSON_AddNumberToObject(o, "too_slow", n_slow);
      cJSON_AddNumberToObject(o, "confirmed", n_confirmed);
      if (base) cJSON_AddNumberToObject(o, "baseline_accuracy", base->accuracy);
      if (base && lm) cJSON_AddNumberToObject(o, "baseline_perplexity", base->perplexity);
      cJSON_AddStringToObject(o, "quality", lm ? "perplexity" : "accuracy");
      cJSON_AddStringToObject(o, "ranking", "confirmed_accuracy, then reward");
      cJSON *rk = cJSON_AddArrayToObject(o, "ranked_ids");
      for (int i = 0; i < n_ok; i++)
        if (!ok[i]->is_baseline) cJSON_AddItemToArray(rk, cJSON_CreateNumber((double)ok[i]->id));
      if (best) {
        cJSON_AddStringToObject(o, "best_op", best->op_text);
        cJSON_AddNumberToObject(o, "best_reward", best->reward);
        cJSON_AddNumberToObject(o, "best_accuracy", best->accuracy);
        if (lm) cJSON_AddNumberToObject(o, "best_perplexity", best->perplexity);
        if (best->confirmed == 1) cJSON_AddNumberToObject(o, "best_confirmed_accuracy", best->confirmed_accuracy);
        cJSON_AddNumberToObject(o, "best_speedup", best->speedup);
      }
      cJSON *pf = cJSON_AddArrayToObject(o, "pareto_ids");
      for (int i = 0; i < n_front; i++) cJSON_AddItemToArray(pf, cJSON_CreateNumber((double)front[i]->id));
      if (plotted) cJSON_AddStringToObject(o, "pareto_png", png);
      if (drawn) cJSON_AddStringToObject(o, "best_png", best_png);
      char *s = cJSON_PrintUnformatted(o);
      printf("%s\n", s);
      free(s);
      cJSON_Delete(o);
    }
  } else {
    const char *keys[] = {"backbone", "dataset", "algorithm", "seed", "driver", "spec"};
    printf("search recorded in %s\n", db_path);
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
      char *v;
      if (syno_db_meta_get(db, keys[k], &v, &err) == 1) printf("  %-10s %s\n", keys[k], v);
      if (v) free(v), v = NULL;
    }
    if (base && lm)
      printf(
          "\nbaseline (standard linear layers): perplexity %.3f (next-token accuracy %.2f%%), %.3g MFLOPs, %.0f "
          "params, latency %.3f ms (%s)\n",
          base->perplexity, 100 * base->accuracy, base->flops / 1e6, base->params, 1e3 * base->base_latency_s,
          base->base_impl ? base->base_impl : "?");
    else if (base)
      printf(
          "\nbaseline (standard operator): accuracy %.2f%%, %.3g MFLOPs, %.0f params, latency %.3f ms (%s), "
          "%.3f ms with syno's im2col conv\n",
          100 * base->accuracy, base->flops / 1e6, base->params, 1e3 * base->base_latency_s,
          base->base_impl ? base->base_impl : "?", 1e3 * base->nnconv_latency_s);
    printf("\n%d candidates: %d ok, %d failed", n - (base ? 1 : 0), n_ok - (base && base->status == 0), n_failed);
    if (n_slow) printf(" (%d of them slower than the baseline, not trained)", n_slow);
    printf("\n");
    if (n_confirmed) {
      char setting[160];
      confirm_setting(db, setting, sizeof setting);
      printf("\nbest operators, ranked by confirmed accuracy (%d confirmed: %s), then by reward:\n", n_confirmed,
             setting);
    } else
      printf("\nbest operators by reward (none confirmed yet; confirmed ones would rank first):\n");
    char dname[8];
    snprintf(dname, sizeof dname, "d-%s", quality_name());
    printf("  %4s %7s %8s %8s %8s %7s %9s %9s  %s\n", "id", "reward", quality_name(), "conf-acc", dname, "FLOPs",
           "speed-up", "vs im2col", "operator");
    int shown = 0;
    for (int i = 0; i < n_ok && shown < top; i++) {
      const syno_db_cand_t *c = ok[i];
      if (c->is_baseline) continue;
      shown++;
      char conf[16] = "-";
      if (c->confirmed == 1) snprintf(conf, sizeof conf, "%.2f%%", 100 * c->confirmed_accuracy);
      if (c->confirmed == -1) snprintf(conf, sizeof conf, "failed");
      char q[24], d[24];
      show_quality(q, sizeof q, c);
      show_delta(d, sizeof d, c, base);
      char v[24], sp[24];
      printf("  %4ld %7.4f %8s %8s %9s %6.2fx %9s %9s  %s\n", c->id, c->reward, q, conf, d, c->flops_ratio,
             show_speedup(sp, sizeof sp, c), vs_im2col(v, sizeof v, c), c->op_text);
    }
    if (n_failed) {
      printf("\nfailures:\n");
      for (int i = 0; i < n; i++)
        if (rows[i].status != 0)
          printf("  %4ld  %s\n        %s\n", rows[i].id, rows[i].reason ? rows[i].reason : "?", rows[i].op_text);
    }
    if (base) {
      /* The question the search answers: how much faster at (almost) the same quality. */
      const syno_db_cand_t *fast[5] = {0};
      for (int i = 0; i < n_ok; i++) {
        const syno_db_cand_t *c = ok[i];
        if (c->is_baseline || !near_baseline(c, base)) continue;
        for (int k = 0; k < 5; k++)
          if (!fast[k] || speedup_of(c) > speedup_of(fast[k])) {
            memmove(&fast[k + 1], &fast[k], sizeof fast[0] * (size_t)(4 - k));
            fast[k] = c;
            break;
          }
      }
      printf("\nfastest within 1 %s of the baseline's %s:\n  %4s %8s %9s %9s %9s  %s\n", lm ? "point" : "pp",
             lm ? "perplexity" : "accuracy", "id", quality_name(), dname, "speed-up", "vs im2col", "operator");
      if (!fast[0]) printf("  none yet\n");
      for (int k = 0; k < 5 && fast[k]; k++) {
        char q[24], d[24], v[24], sp[24];
        show_quality(q, sizeof q, fast[k]);
        show_delta(d, sizeof d, fast[k], base);
        printf("  %4ld %8s %9s %9s %9s  %s\n", fast[k]->id, q, d, show_speedup(sp, sizeof sp, fast[k]),
               vs_im2col(v, sizeof v, fast[k]), fast[k]->op_text);
      }
      if (fast[0]) printf("  retrain one fully: syno train --db %s --id %ld --epochs 10\n", db_path, fast[0]->id);
    }
    printf("\nPareto front (%s against speed-up):\n  %4s %8s %8s %9s  %s\n", lm ? "perplexity" : "accuracy", "id",
           quality_name(), "speed-up", "vs im2col", "operator");
    for (int i = 0; i < n_front; i++) {
      char q[24], v[24], sp[24];
      show_quality(q, sizeof q, front[i]);
      printf("  %4ld %8s %8s %9s  %s\n", front[i]->id, q, show_speedup(sp, sizeof sp, front[i]),
             vs_im2col(v, sizeof v, front[i]), front[i]->is_baseline ? "(baseline)" : front[i]->op_text);
    }
    retimed_footnote();
    printf("\n");
    if (plotted)
      printf("wrote %s\n", png);
    else
      printf("no plot: gnuplot is missing or failed\n");
    if (drawn)
      printf("wrote %s and %s\n", dot, best_png);
    else if (best)
      printf("no drawing of the best operator: %s\n", derr.msg);
  }
  free(ok);
  free(front);
  syno_db_list_free(rows, n);
  syno_db_close(db);
  return 0;
}
