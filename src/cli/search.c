/* syno search: the operator search end to end (see syno/driver.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "syno/task.h"
#include "cli.h"
#include "syno/alloc.h"
#include "syno/backbone.h"
#include "syno/dist.h"
#include "syno/driver.h"
#include "syno/store.h"

static const char *usage =
    "usage: syno search --db FILE [--backbone NAME] [--dataset NAME] [OPTIONS]\n"
    "       syno search --resume FILE [--budget N] [--time T] [--workers W]\n"
    "\n"
    "Searches for operators that are faster than the standard convolution at\n"
    "almost the same accuracy. Each candidate the search proposes is put into every\n"
    "slot of the backbone, timed against the standard operator and, when it is fast\n"
    "enough (--min-speedup), trained on the proxy setting, by a `syno eval` worker\n"
    "process; every result goes into the results database before the search acts on\n"
    "it. At the end the top candidates by reward are re-trained at a larger proxy\n"
    "(--confirm). Stop it at any moment; resume continues without evaluating\n"
    "anything recorded again. `syno report --db FILE` shows the results.\n";

static const char *epilog =
    "\n"
    "On --resume the search takes its settings from its database: only --budget, --time,\n"
    "--workers, --timeout, --confirm, --log, --quiet and --mpi apply, and the others are\n"
    "refused.\n"
    "\n"
    "With --mpi, run under mpiexec (e.g. mpiexec -n 5 syno search --mpi --db FILE ...):\n"
    "rank 0 searches and writes the database (keep it on a local disk), ranks 1..K-1\n"
    "evaluate, each in a `syno eval` child as local workers do (docs/dist.md).\n";

/* Set by SIGINT and SIGTERM; the driver polls it. */
static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

/* The progress printer's state. */
typedef struct {
  int tty;
  int midline; /* a progress line is open on the terminal */
  int last_count, last_running;
  int empty; /* the search ended without a single candidate */
} printer_t;

static void show_progress(const syno_driver_progress_t *p, printer_t *pr) {
  const syno_driver_cfg_t *c = p->cfg;
  /* On a terminal the line is redrawn every second; in a log, one line per change. */
  if (!pr->tty && p->count == pr->last_count && p->running == pr->last_running) return;
  pr->last_count = p->count, pr->last_running = p->running;
  double el = p->elapsed;
  char rem[48] = "";
  if (c->time_limit > 0)
    snprintf(rem, sizeof rem, ", %.0f s left", c->time_limit - el > 0 ? c->time_limit - el : 0);
  else if (c->budget > 0 && p->evaluated > 0) {
    double per = el / p->evaluated;
    snprintf(rem, sizeof rem, ", ~%.0f s left", per * (c->budget - p->count) / (c->workers ? c->workers : 1));
  }
  char of[24] = "";
  if (c->budget > 0) snprintf(of, sizeof of, "/%d", c->budget);
  int lm = syno_task_is_lm(c->backbone);
  char best[128] = "no candidate yet", fast[48] = "";
  if (p->best_reward >= 0 && lm)
    snprintf(best, sizeof best, "best reward %.4f (ppl %.3f, %.2fx)", p->best_reward, p->best_ppl, p->best_acc_speedup);
  else if (p->best_reward >= 0)
    snprintf(best, sizeof best, "best reward %.4f (acc %.2f%%, %.2fx)", p->best_reward, 100 * p->best_acc,
             p->best_acc_speedup);
  if (p->best_speedup > 0)
    snprintf(fast, sizeof fast, ", fastest within 1 %s %.2fx", lm ? "point" : "pp", p->best_speedup);
  char slow[32] = "";
  if (p->slower) snprintf(slow, sizeof slow, " (%d too slow)", p->slower);
  fprintf(stderr, "%s[search] %d%s recorded (%d new, %d failed%s, %d replayed, %d running) %s%s  %.0f s%s%s",
          pr->tty ? "\r\033[K" : "", p->count, of, p->evaluated, p->failed, slow, p->replayed, p->running, best, fast,
          el, rem, pr->tty ? "" : "\n");
  pr->midline = pr->tty;
  fflush(stderr);
}

/* Ends an open progress line before a line of its own. */
static void end_line(printer_t *pr) {
  if (pr->midline) fputc('\n', stderr);
  pr->midline = 0;
}

static void show_done(const syno_driver_progress_t *p, printer_t *pr) {
  end_line(pr);
  char why[128] = "";
  if (p->exhausted == 1) snprintf(why, sizeof why, "; the space has no further operators");
  if (p->exhausted == 2)
    snprintf(why, sizeof why, "; %d proposals in a row found no new operator (is the FLOPs window too narrow?)",
             SYNO_DRIVER_FRUITLESS);
  char slow[32] = "", conf[64] = "";
  if (p->slower) snprintf(slow, sizeof slow, " (%d too slow)", p->slower);
  if (p->confirm_total)
    snprintf(conf, sizeof conf, "; %d of %d confirmed%s", p->confirm_done - p->confirm_failed, p->confirm_total,
             p->confirm_failed ? " (the others failed)" : "");
  fprintf(stderr, "[search] %s: %d candidates recorded in %s (%d evaluated now, %d failed%s, %d replayed)%s%s\n",
          p->stopped ? "stopped" : "done", p->count, p->cfg->db_path, p->evaluated, p->failed, slow, p->replayed, why,
          conf);
}

static void show_confirm_start(const syno_driver_progress_t *p) {
  char subset[32] = "all";
  if (p->confirm_subset > 0) snprintf(subset, sizeof subset, "%ld", p->confirm_subset);
  fprintf(stderr, "[search] confirming the top %d candidate(s) by reward: %d epochs, %s training images, seed %llu\n",
          p->confirm_total, p->confirm_epochs, subset, (unsigned long long)p->confirm_seed);
}

static void show_confirmed(const syno_driver_progress_t *p) {
  if (p->confirm_reason)
    fprintf(stderr, "[search] confirmation %d/%d: id %ld failed: %s\n", p->confirm_done, p->confirm_total,
            p->confirm_id, p->confirm_reason);
  else
    fprintf(stderr, "[search] confirmation %d/%d: id %ld accuracy %.2f%% (search proxy %.2f%%)\n", p->confirm_done,
            p->confirm_total, p->confirm_id, 100 * p->confirm_acc, 100 * p->confirm_proxy_acc);
}

static void on_progress(const syno_driver_progress_t *p, void *user) {
  printer_t *pr = user;
  const syno_driver_cfg_t *c = p->cfg;
  switch (p->event) {
    case SYNO_DRIVER_BASELINE_START:
      fprintf(stderr, "[search] training the baseline (standard operator in every slot)\n");
      break;
    case SYNO_DRIVER_BASELINE_DONE:
      if (syno_task_is_lm(c->backbone))
        fprintf(stderr,
                "[search] baseline perplexity %.3f (next-token accuracy %.2f%%), reward 1 at perplexity %.3f and 0 "
                "at %.3f, %s search, seed %llu\n",
                p->base_ppl, 100 * p->base_acc, -p->reward_ub, -p->reward_lb, c->random ? "random" : "MCTS",
                (unsigned long long)c->seed);
      else
        fprintf(stderr, "[search] baseline accuracy %.2f%%, reward bounds [%.3f, %.3f], %s search, seed %llu\n",
                100 * p->base_acc, p->reward_lb, p->reward_ub, c->random ? "random" : "MCTS",
                (unsigned long long)c->seed);
      break;
    case SYNO_DRIVER_PROGRESS: show_progress(p, pr); break;
    case SYNO_DRIVER_INTERRUPTED:
      fprintf(stderr, "\n[search] interrupted: %d running evaluation(s) dropped; resume with --resume\n", p->running);
      break;
    case SYNO_DRIVER_CONFIRM_START:
      end_line(pr);
      show_confirm_start(p);
      break;
    case SYNO_DRIVER_CONFIRMED: show_confirmed(p); break;
    case SYNO_DRIVER_DONE:
      if (!c->quiet) show_done(p, pr);
      if (!p->count && p->exhausted && p->space) {
        const syno_space_t *sp = p->space;
        pr->empty = 1;
        cli_empty_space("search", syno_space_spec(sp), syno_space_stats(sp), -1);
      }
      break;
  }
}

/* The options a resumed search takes from the command line; it reads the others from its
 * database. */
static const char *const resume_options[] = {"resume",  "budget", "time",  "workers", "timeout",
                                             "confirm", "log",    "quiet", "mpi",     NULL};

static int applies_on_resume(const char *name) {
  for (int i = 0; resume_options[i]; i++)
    if (!strcmp(resume_options[i], name)) return 1;
  return 0;
}

/* Contradictions and values that do not fit together, and the defaults that depend on the
 * backbone (gpt: text, the linear preset, AdamW's rate); 0 or the exit status. */
/* --spec FILE: read by check_settings into the driver's spec (freed by search_run). */
static const char *spec_path;

static int check_settings(syno_driver_cfg_t *c, const syno_opt_t *opts) {
  syno_error_t err;
  if (syno_opt_conflict(opts, "db", "resume", &err)) return cli_cmd_error("search", "%s", err.msg);
  if (!c->db_path) return cli_cmd_error("search", "give --db FILE for a new search or --resume FILE");
  if (c->resume) {
    for (const syno_opt_t *o = opts; o->name; o++)
      if (o->seen && !applies_on_resume(o->name))
        return cli_cmd_error("search",
                             "--%s does not apply on --resume: the resumed search takes it from its database "
                             "(only --budget, --time, --workers, --timeout, --confirm, --log, --quiet and --mpi "
                             "apply)",
                             o->name);
    return 0;
  }
  if (access(c->db_path, F_OK) == 0)
    return cli_cmd_error("search", "--db %s: already exists; continue it with --resume, or choose another --db",
                         c->db_path);
  if (spec_path) {
    if (syno_opt_given(opts, "preset"))
      return cli_cmd_error("search", "give one of --preset and --spec (the spec names its preset)");
    char *json;
    int rc = cli_spec_for_slots(spec_path, &json, &c->preset);
    if (rc) return rc;
    c->spec = json;
  }
  const syno_task_backbone_t *task = syno_task_backbone(c->backbone);
  const syno_task_dataset_t *data = syno_task_dataset(c->dataset);
  if (!task || !data) return cli_cmd_error("search", "unknown --backbone %s or --dataset %s", c->backbone, c->dataset);
  if (task->kind == SYNO_TASK_TEXT) {
    /* The language model: its data, preset and training defaults, and what does not apply. */
    if (syno_opt_given(opts, "reward-lb") || syno_opt_given(opts, "reward-ub"))
      return cli_cmd_error("search",
                           "--reward-lb/--reward-ub are accuracies; gpt is rewarded by perplexity, with "
                           "bounds from its baseline (1.0 to 1.3 times its perplexity)");
    if (c->confirm > 0)
      return cli_cmd_error("search",
                           "--confirm ranks by accuracy; it is not available for gpt (rewarded by perplexity)");
    if (syno_opt_given(opts, "pad")) return cli_cmd_error("search", "--pad pads images; gpt trains on text");
    if (c->augment) return cli_cmd_error("search", "--augment transforms images; gpt trains on text");
    c->confirm = 0;
    if (!syno_opt_given(opts, "dataset")) c->dataset = task->dataset, data = syno_task_dataset(c->dataset);
    if (!syno_opt_given(opts, "preset") && !spec_path) c->preset = task->preset;
    if (!syno_opt_given(opts, "lr")) c->lr = task->lr;
    if (!syno_opt_given(opts, "batch")) c->batch = (int)task->batch;
    if (!syno_opt_given(opts, "max-flops")) c->max_flops_ratio = -1;
    if (!syno_opt_given(opts, "min-flops")) c->min_flops_ratio = -1;
    if (data->kind != SYNO_TASK_TEXT)
      return cli_cmd_error("search", "--dataset %s: %s trains on text (%s)", c->dataset, task->name, task->dataset);
    if (strncmp(c->preset, "linear", 6))
      return cli_cmd_error("search", "--preset %s: gpt's slots are linear layers (linear, linear-wide)", c->preset);
  } else {
    if (data->kind == SYNO_TASK_TEXT)
      return cli_cmd_error("search", "--dataset %s is text: it is for a language model (--backbone %s)", c->dataset,
                           syno_task_backbone_names(SYNO_TASK_TEXT)[0]);
    if (c->width > 16)
      return cli_cmd_error("search", "--width %g: the %s backbone's channel multiplier is at most 16", c->width,
                           c->backbone);
    if (strncmp(c->preset, "conv2d", 6))
      return cli_cmd_error("search", "--preset %s: the %s backbone's slots are convolutions (conv2d, conv2d-wide)",
                           c->preset, c->backbone);
    /* The images' shape (the user's set: its files' headers), so that a missing or bad set, or
     * non-square images under a square preset, is refused before the database exists. */
    int64_t ic, ih, iw;
    int classes;
    syno_signature_t sig;
    char bind[160];
    if (syno_train_image_shape(c->dataset, &ic, &ih, &iw, &classes, &err))
      return cli_cmd_error("search", "--dataset %s: %s", c->dataset, err.msg);
    if (syno_signature_preset(c->preset, "", &sig, &err) ||
        syno_signature_conv_binding(&sig, 1, ic, ic, ih, iw, bind, sizeof bind, &err))
      return cli_cmd_error("search", "--dataset %s holds %lldx%lld images: %s (--preset conv2d-wide takes them)",
                           c->dataset, (long long)ih, (long long)iw, err.msg);
  }
  if (c->max_flops_ratio > 0 && c->min_flops_ratio > c->max_flops_ratio)
    return cli_cmd_error("search", "--min-flops %g is above --max-flops %g%s", c->min_flops_ratio, c->max_flops_ratio,
                         syno_opt_given(opts, "max-flops") ? "" : " (the default)");
  if (syno_opt_given(opts, "reward-lb") && syno_opt_given(opts, "reward-ub") && !(c->reward_lb < c->reward_ub))
    return cli_cmd_error("search", "--reward-lb %g must be below --reward-ub %g", c->reward_lb, c->reward_ub);
  int caps[SYNO_PRIM_KINDS];
  if (c->max_count && syno_space_caps_parse(c->max_count, caps, &err))
    return cli_cmd_error("search", "--max-count '%s': %s", c->max_count, err.msg);
  return 0;
}

/* The search on rank 0 (or alone): checks, then the driver. c->pool, when set, is freed on
 * every path (by the driver once it runs). */
static int search_run_checked(syno_driver_cfg_t *c, const syno_opt_t *opts, const char *resume) {
  int rc;
  syno_error_t err;
  if (resume) c->db_path = resume, c->resume = 1;
  if ((rc = check_settings(c, opts))) {
    syno_pool_free(c->pool);
    return rc;
  }
  if (c->resume) {
    /* A file that is not a search database, or is damaged, is a bad argument: refused here,
     * read only, before the driver opens it for writing. */
    syno_db_t *db;
    if (syno_db_open(c->db_path, SYNO_DB_READONLY, &db, &err)) {
      syno_pool_free(c->pool);
      return cli_cmd_error("search", "%s", err.msg);
    }
    /* Its rows too: a damaged one is named, not resumed over. */
    syno_db_cand_t *rows = NULL;
    int n = 0;
    if (syno_db_list(db, &rows, &n, &err)) {
      syno_db_close(db);
      syno_pool_free(c->pool);
      return cli_cmd_error("search", "%s", err.msg);
    }
    rc = cli_check_ops("search", c->db_path, db, rows, n);
    syno_db_list_free(rows, n);
    syno_db_close(db);
    if (rc) {
      syno_pool_free(c->pool);
      return rc;
    }
    if (syno_db_in_use(c->db_path, &err)) {
      syno_pool_free(c->pool);
      return cli_cmd_error("search", "%s", err.msg);
    }
  }
  static char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    syno_pool_free(c->pool);
    return cli_cmd_error(NULL, "cannot find the syno binary for the workers");
  }
  exe[n] = 0;
  c->worker_exe = exe;
  printer_t pr = {.tty = isatty(STDERR_FILENO), .last_count = -1, .last_running = -1};
  c->progress = on_progress;
  c->user = &pr;
  c->stop = &stop_requested;
  stop_requested = 0;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  rc = syno_driver_run(c, &err);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  if (rc == 0) return pr.empty ? SYNO_EXIT_FAIL : 0;
  fprintf(stderr, "syno search: %s\n", err.msg);
  return SYNO_EXIT_FAIL;
}

static int search_run(syno_driver_cfg_t *c, const syno_opt_t *opts, const char *resume) {
  int rc = search_run_checked(c, opts, resume);
  syno_free((char *)c->spec); /* --spec's text, read by check_settings */
  c->spec = NULL;
  return rc;
}

/* --mpi: every rank parsed the same command line; rank 0 searches, the others serve. */
static int search_mpi(syno_driver_cfg_t *c, const syno_opt_t *opts, const char *resume, int *argc, char ***argv) {
  syno_error_t err;
  int rank = 0, size = 0, rc;
  if (syno_dist_init(argc, argv, &rank, &size, &err)) return cli_cmd_error("search", "--mpi: %s", err.msg);
  if (rank > 0) {
    rc = syno_dist_serve(&err);
    if (rc) fprintf(stderr, "syno search: MPI worker rank %d: %s\n", rank, err.msg);
    syno_dist_finalize();
    return rc ? SYNO_EXIT_FAIL : 0;
  }
  (void)size;
  if (syno_dist_pool_new(c->cand_timeout, &c->pool, &err)) /* fails only with no worker rank */
    rc = cli_cmd_error("search", "--mpi: %s", err.msg);
  else
    rc = search_run(c, opts, resume);
  syno_dist_finalize();
  return rc;
}

static const char *const kernel_choices[] = {"exec", "halide", "best", NULL};

int cli_cmd_search(int argc, char **argv) {
  const char *const *datasets = syno_task_dataset_names(-1), *const *backbones = syno_task_backbone_names(-1);
  syno_driver_cfg_t c;
  syno_driver_cfg_default(&c);
  const char *resume = NULL;
  int mpi = 0;
  syno_opt_t opts[] = {
      SYNO_OPT_PATH("db", "FILE", &c.db_path, SYNO_OPT_NEW, "a new results database"),
      SYNO_OPT_PATH("resume", "FILE", &resume, SYNO_OPT_FILE,
                    "continue the search recorded in FILE (its settings are\n"
                    "used; only --budget, --time, --workers, --timeout, --confirm,\n"
                    "--log and --quiet apply)"),
      SYNO_OPT_ENUM("backbone", "NAME", &c.backbone, backbones,
                    "the network (default resnet); gpt is the small transformer\n"
                    "on characters, rewarded by validation perplexity"),
      SYNO_OPT_ENUM("preset", "NAME", &c.preset, cli_preset_names(),
                    "the space: conv2d (default; the space the original Syno\n"
                    "searches: square H, no weight over H) or conv2d-wide\n"
                    "(weights and reductions may range over H and W); for gpt\n"
                    "linear (default; the original's GPT-2 space, filling the\n"
                    "fused QKV projections) or linear-wide (every linear slot)"),
      SYNO_OPT_PATH("spec", "FILE", &spec_path, SYNO_OPT_FILE,
                    "the space as a spec file (syno space's format) with a\n"
                    "\"preset\" and its options, bound to the backbone's slots;\n"
                    "recorded with the database, which --resume reads it from"),
      SYNO_OPT_ENUM("dataset", "NAME", &c.dataset, datasets, "the data (default digits; kjv for gpt)"),
      SYNO_OPT_INT("budget", "N", &c.budget, 0, 1000000000,
                   "candidates to record in all, failures included (default 20;\n"
                   "0 = until --time or the space runs out)"),
      SYNO_OPT_REAL("time", "T", &c.time_limit, 0, 1e9, 0,
                    "stop starting evaluations after T seconds (default 0: none;\n"
                    "the confirmations follow)"),
      SYNO_OPT_INT("workers", "W", &c.workers, 1, 256, "evaluations at once, one process each (default 1)"),
      SYNO_OPT_REAL("timeout", "T", &c.cand_timeout, 0, 1e7, SYNO_OPT_OPEN_MIN,
                    "seconds one evaluation may take (default 600)"),
      SYNO_OPT_FLAG("mpi", &mpi,
                    "evaluate on MPI ranks: run under mpiexec -n K (K >= 2);\n"
                    "rank 0 searches, ranks 1..K-1 evaluate (replaces --workers)"),
      SYNO_OPT_FLAG("ordered", &c.ordered,
                    "tell the search the results in the order it proposed the\n"
                    "candidates: the same seed gives the same search whatever the\n"
                    "workers' speeds (a worker may wait for an older evaluation)"),
      SYNO_OPT_FLAG("stand-in", &c.stand_in,
                    "evaluate with a deterministic stand-in instead of timing and\n"
                    "training (for testing the search machinery; syno eval --help)"),
      SYNO_OPT_FLAG("random", &c.random, "random search instead of MCTS"),
      SYNO_OPT_UINT("seed", "S", &c.seed, SYNO_OPT_SEED_EXACT,
                    "seed of the search and of training (default 1; stored\n"
                    "with the search, so at most 2^53)"),
      SYNO_OPT_INT("epochs", "E", &c.epochs, 1, 10000, "proxy training epochs (default 2)"),
      SYNO_OPT_INT("subset", "N", &c.subset, 0, 100000000, "proxy training images (default 0: all)"),
      SYNO_OPT_INT("batch", "B", &c.batch, 1, 65536, "proxy training batch size (default 64; gpt 32)"),
      SYNO_OPT_REAL("lr", "X", &c.lr, 0, 100, SYNO_OPT_OPEN_MIN, "proxy learning rate (default 0.1; gpt 3e-3, AdamW)"),
      SYNO_OPT_REAL("width", "W", &c.width, 0, 4096, SYNO_OPT_OPEN_MIN,
                    "the backbone's channel multiplier (default 1, at most 16);\n"
                    "gpt: the model dim (default 64)"),
      SYNO_OPT_INT("depth", "D", &c.depth, 1, 8,
                   "the backbone's blocks per stage (default 2; resnet34, resnext29,\n"
                   "densenet121, efficientnetv2s: at most D, default as published)"),
      SYNO_OPT_FLAG("augment", &c.augment, "random crops (padding 4) and horizontal flips of the\n"
                                           "training images (colour images: CIFAR)"),
      SYNO_OPT_INT("pad", "P", &c.pad, 0, 64,
                   "zero-pad the images by P pixels per side (2 puts Fashion-MNIST\n"
                   "at 32x32: every ResNet stage then has an even side, so the\n"
                   "operators may split H and W by s=2)"),
      SYNO_OPT_INT("space-depth", "D", &c.space_depth, 1, 40, "max primitives per operator (default: the preset's)"),
      SYNO_OPT_REAL("max-flops", "R", &c.max_flops_ratio, 0, 1000, 0,
                    "max FLOPs vs the standard operator in the slots, each slot's\n"
                    "own (grouped, depthwise) (default 0.9, as the original's\n"
                    "vision searches; gpt: the preset's, 1.2; 0 = no limit)"),
      SYNO_OPT_REAL("min-flops", "R", &c.min_flops_ratio, 0, 1000, 0,
                    "min FLOPs ratio (default 0.15; gpt: the preset's, 0.1)"),
      SYNO_OPT_REAL("max-params", "R", &c.max_params_ratio, 0, 1e6, 0,
                    "max parameters vs the standard operator in the first slot\n"
                    "(default 0: no limit)"),
      SYNO_OPT_INT("max-tensors", "T", &c.max_tensors, 2, SYNO_MAX_TENSORS,
                   "input + weights of an operator (default 2: one weight)"),
      SYNO_OPT_STR("max-count", "CAPS", &c.max_count,
                   "primitives of each kind in one operator, e.g. split=2 (the\n"
                   "kinds named replace the preset's caps; conv2d has the\n"
                   "published merge=1,split=3,shift=2,stride=0)"),
      SYNO_OPT_REAL("reward-lb", "A", &c.reward_lb, 0, 1, 0,
                    "the accuracy at which the reward is 0 (default: the\n"
                    "baseline accuracy - 0.3)"),
      SYNO_OPT_REAL("reward-ub", "A", &c.reward_ub, 0, 1, 0,
                    "the accuracy at which the reward is 1 (default: the\n"
                    "baseline accuracy)"),
      SYNO_OPT_REAL("min-speedup", "X", &c.min_speedup, 0, 1000, 0,
                    "do not train a candidate less than X times faster than the\n"
                    "standard network (timed first): a failure \"slower than the\n"
                    "baseline\" with reward 0 (default 1; 0 = train all)"),
      SYNO_OPT_ENUM("kernels", "K", &c.kernels, kernel_choices,
                    "what runs each candidate's inference when it is timed: exec\n"
                    "(the executor, default), halide (Halide kernels, compiled\n"
                    "once and cached; the standard network is timed on Halide\n"
                    "too) or best (the faster per slot); docs/halide.md"),
      SYNO_OPT_STR("evaluator", "CMD", &c.evaluator,
                   "train each candidate (after the speed gate) in this shell\n"
                   "command, e.g. '/usr/bin/python3 examples/torch_evaluator.py':\n"
                   "it gets a request file's path (the exported PyTorch module,\n"
                   "the slots, the budget) and answers one JSON line with the\n"
                   "accuracy; docs/evaluator.md (default: syno trains it)"),
      SYNO_OPT_INT("confirm", "K", &c.confirm, 0, 1000,
                   "at the end, re-train the top K candidates by reward that\n"
                   "have no confirmed accuracy yet at twice the epochs, twice\n"
                   "the subset and seed + 1 (default 3; 0 = none; gpt: none)"),
      SYNO_OPT_PATH("log", "FILE", &c.log_path, SYNO_OPT_NEW, "append one line per evaluation started"),
      SYNO_OPT_FLAG("quiet", &c.quiet, "no progress line"),
      SYNO_OPT_END,
  };
  int rc = cli_parse("search", usage, epilog, opts, argc, argv);
  if (rc >= 0) return rc;
  syno_error_t err;
  if (syno_opt_conflict(opts, "mpi", "workers", &err)) return cli_cmd_error("search", "%s", err.msg);
  return mpi ? search_mpi(&c, opts, resume, &argc, &argv) : search_run(&c, opts, resume);
}
