/* syno search: the operator search end to end (see syno/driver.h). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "syno/driver.h"

static const char *help =
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
    "anything recorded again. `syno report --db FILE` shows the results.\n"
    "\n"
    "options:\n"
    "  --db FILE             a new results database\n"
    "  --resume FILE         continue the search recorded in FILE (its settings are\n"
    "                        used; only --budget, --time, --workers, --timeout and\n"
    "                        --confirm apply)\n"
    "  --backbone NAME       resnet or vgg (default resnet)\n"
    "  --preset NAME         the space: conv2d (default; the space the original Syno\n"
    "                        searches: square H, no weight over H) or conv2d-wide\n"
    "                        (weights and reductions may range over H and W)\n"
    "  --dataset NAME        digits or fashion-mnist (default digits)\n"
    "  --budget N            candidates to record in all, failures included (default 20;\n"
    "                        0 = until --time or the space runs out)\n"
    "  --time T              stop starting evaluations after T seconds (default none;\n"
    "                        the confirmations follow)\n"
    "  --workers W           evaluations at once, one process each (default 1)\n"
    "  --timeout T           seconds one evaluation may take (default 600)\n"
    "  --random              random search instead of MCTS\n"
    "  --seed S              seed of the search and of training (default 1)\n"
    "  --epochs E            proxy training epochs (default 2)\n"
    "  --subset N            proxy training images (default all)\n"
    "  --batch B, --lr X     proxy training batch size (64) and learning rate (0.1)\n"
    "  --width W, --depth D  backbone knobs\n"
    "  --pad P               zero-pad the images by P pixels per side (2 puts Fashion-MNIST\n"
    "                        at 32x32: every ResNet stage then has an even side, so the\n"
    "                        operators may split H and W by s=2)\n"
    "  --space-depth D       max primitives per operator (default: the preset's)\n"
    "  --max-flops R         max FLOPs vs the standard operator in the slots (default 0.9,\n"
    "                        as the original's vision searches; 0 = no limit)\n"
    "  --min-flops R         min FLOPs ratio (default 0.15)\n"
    "  --max-params R        max parameters vs the standard operator in the first slot\n"
    "                        (default: no limit)\n"
    "  --max-tensors T       input + weights of an operator (default 2: one weight)\n"
    "  --max-count CAPS      primitives of each kind in one operator, e.g. split=2 (the\n"
    "                        kinds named replace the preset's caps; conv2d has the\n"
    "                        published merge=1,split=3,shift=2,stride=0)\n"
    "  --reward-lb A, --reward-ub A   accuracy bounds of the reward (default:\n"
    "                        baseline accuracy - 0.3 and the baseline accuracy)\n"
    "  --min-speedup X       do not train a candidate less than X times faster than the\n"
    "                        standard network (timed first): a failure \"slower than the\n"
    "                        baseline\" with reward 0 (default 1; 0 = train all)\n"
    "  --confirm K           at the end, re-train the top K candidates by reward that\n"
    "                        have no confirmed accuracy yet at twice the epochs, twice\n"
    "                        the subset and seed + 1 (default 3; 0 = none)\n"
    "  --log FILE            append one line per evaluation started\n"
    "  --quiet               no progress line\n"
    "  -h, --help            this help\n";

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
  char best[128] = "no candidate yet", fast[48] = "";
  if (p->best_reward >= 0)
    snprintf(best, sizeof best, "best reward %.4f (acc %.2f%%, %.2fx)", p->best_reward, 100 * p->best_acc,
             p->best_acc_speedup);
  if (p->best_speedup > 0) snprintf(fast, sizeof fast, ", fastest within 1 pp %.2fx", p->best_speedup);
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
    case SYNO_DRIVER_DONE: show_done(p, pr); break;
  }
}

int cli_cmd_search(int argc, char **argv) {
  syno_driver_cfg_t c;
  syno_driver_cfg_default(&c);
  static const struct option opts[] = {{"db", required_argument, 0, 'f'},
                                       {"resume", required_argument, 0, 'R'},
                                       {"backbone", required_argument, 0, 'b'},
                                       {"dataset", required_argument, 0, 'd'},
                                       {"preset", required_argument, 0, 'Y'},
                                       {"budget", required_argument, 0, 'n'},
                                       {"time", required_argument, 0, 'T'},
                                       {"workers", required_argument, 0, 'W'},
                                       {"timeout", required_argument, 0, 'O'},
                                       {"random", no_argument, 0, 'r'},
                                       {"seed", required_argument, 0, 's'},
                                       {"epochs", required_argument, 0, 'e'},
                                       {"subset", required_argument, 0, 'S'},
                                       {"batch", required_argument, 0, 'B'},
                                       {"lr", required_argument, 0, 'l'},
                                       {"width", required_argument, 0, 'w'},
                                       {"depth", required_argument, 0, 'D'},
                                       {"space-depth", required_argument, 0, 'p'},
                                       {"max-flops", required_argument, 0, 'M'},
                                       {"min-flops", required_argument, 0, 'm'},
                                       {"max-params", required_argument, 0, 'x'},
                                       {"max-tensors", required_argument, 0, 't'},
                                       {"reward-lb", required_argument, 0, 'a'},
                                       {"reward-ub", required_argument, 0, 'A'},
                                       {"log", required_argument, 0, 'L'},
                                       {"pad", required_argument, 0, 'P'},
                                       {"max-count", required_argument, 0, 'C'},
                                       {"quiet", no_argument, 0, 'q'},
                                       {"help", no_argument, 0, 'h'},
                                       {"min-speedup", required_argument, 0, 'X'},
                                       {"confirm", required_argument, 0, 'K'},
                                       {0, 0, 0, 0}};
  optind = 1;
  for (int o, idx = 0; (o = getopt_long(argc, argv, "h", opts, &idx)) != -1;) {
    char *end = NULL;
    switch (o) {
      case 'f': c.db_path = optarg; break;
      case 'R': c.db_path = optarg, c.resume = 1; break;
      case 'b': c.backbone = optarg; break;
      case 'd': c.dataset = optarg; break;
      case 'Y': c.preset = optarg; break;
      case 'n': c.budget = (int)strtol(optarg, &end, 10); break;
      case 'T': c.time_limit = strtod(optarg, &end); break;
      case 'W': c.workers = (int)strtol(optarg, &end, 10); break;
      case 'O': c.cand_timeout = strtod(optarg, &end); break;
      case 'r': c.random = 1; break;
      case 's': c.seed = strtoull(optarg, &end, 10); break;
      case 'e': c.epochs = (int)strtol(optarg, &end, 10); break;
      case 'S': c.subset = strtol(optarg, &end, 10); break;
      case 'P': c.pad = (int)strtol(optarg, &end, 10); break;
      case 'B': c.batch = (int)strtol(optarg, &end, 10); break;
      case 'l': c.lr = strtod(optarg, &end); break;
      case 'w': c.width = strtod(optarg, &end); break;
      case 'D': c.depth = (int)strtol(optarg, &end, 10); break;
      case 'p': c.space_depth = (int)strtol(optarg, &end, 10); break;
      case 'M': c.max_flops_ratio = strtod(optarg, &end); break;
      case 'm': c.min_flops_ratio = strtod(optarg, &end); break;
      case 'x': c.max_params_ratio = strtod(optarg, &end); break;
      case 't': c.max_tensors = (int)strtol(optarg, &end, 10); break;
      case 'a': c.reward_lb = strtod(optarg, &end); break;
      case 'A': c.reward_ub = strtod(optarg, &end); break;
      case 'L': c.log_path = optarg; break;
      case 'C': c.max_count = optarg; break;
      case 'X': c.min_speedup = strtod(optarg, &end); break;
      case 'K': c.confirm = (int)strtol(optarg, &end, 10); break;
      case 'q': c.quiet = 1; break;
      case 'h': fputs(help, stdout); return 0;
      default: return SYNO_EXIT_USAGE;
    }
    if (end && (*end || end == optarg)) return cli_usage_error("--%s: '%s' is not a number", opts[idx].name, optarg);
    if (o == 'K' && c.confirm < 0) return cli_usage_error("--confirm must not be negative");
  }
  if (optind < argc) return cli_usage_error("unexpected argument '%s'", argv[optind]);
  if (!c.db_path) return cli_usage_error("give --db FILE for a new search or --resume FILE");
  if (c.workers < 1 || c.workers > 64) return cli_usage_error("--workers must be in 1..64");
  if (c.budget < -1) return cli_usage_error("--budget must not be negative");
  if (c.epochs < 1) return cli_usage_error("--epochs must be at least 1");
  if (c.max_params_ratio < 0) return cli_usage_error("--max-params must not be negative");
  if (!(c.min_speedup >= 0)) return cli_usage_error("--min-speedup must not be negative");
  if (c.max_tensors < 0 || c.max_tensors == 1) return cli_usage_error("--max-tensors must be at least 2");
  int caps[SYNO_PRIM_KINDS];
  syno_error_t cerr;
  if (c.max_count && syno_space_caps_parse(c.max_count, caps, &cerr))
    return cli_usage_error("--max-count '%s': %s", c.max_count, cerr.msg);
  static char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return cli_usage_error("cannot find the syno binary for the workers");
  exe[n] = 0;
  c.worker_exe = exe;
  syno_error_t err;
  /* The driver's own checks, with the flags named (status 1, as from the driver). */
  if (c.pad < 0 || c.pad > 64)
    syno_error_set(&err, "--pad must be in 0..64 (got %d)", c.pad);
  else if (!c.resume && access(c.db_path, F_OK) == 0)
    syno_error_set(&err, "%s already exists; continue it with --resume, or choose another --db", c.db_path);
  else {
    printer_t pr = {.tty = isatty(STDERR_FILENO), .last_count = -1, .last_running = -1};
    c.progress = on_progress;
    c.user = &pr;
    c.stop = &stop_requested;
    stop_requested = 0;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int rc = syno_driver_run(&c, &err);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (rc == 0) return 0;
  }
  fprintf(stderr, "syno search: %s\n", err.msg);
  return SYNO_EXIT_FAIL;
}
