/* bench/search: MCTS against random search, same seed, same budget, same
 * backbone and data (ResNet on the committed digits by default). Prints the
 * best reward of each and how many evaluations MCTS needed to reach the
 * best reward random search found.
 *
 * usage: search [--budget N] [--dataset NAME] [--epochs E]   (defaults: 30 digits 3; the three
 *        may also be given as operands, BUDGET DATASET EPOCHS, in this order)
 *
 * SIGINT and SIGTERM stop it promptly: the search driver polls the flag, kills its running
 * evaluations and returns, and the benchmark ends without starting the other search. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "syno/task.h"
#include "syno/driver.h"
#include "syno/store.h"

typedef struct {
  double best, seconds;
  int n, failed;
  double curve[1024]; /* best reward after each evaluation, in evaluation order */
} result_t;

static int run(const char *exe, const char *db, int random, int budget, const char *dataset, int epochs, result_t *r) {
  syno_driver_cfg_t c;
  syno_driver_cfg_default(&c);
  c.db_path = db;
  c.worker_exe = exe;
  c.dataset = dataset;
  c.epochs = epochs;
  c.budget = budget;
  c.random = random;
  c.seed = 1;
  c.quiet = 1;
  c.stop = &bench_stop;
  unlink(db);
  syno_error_t err;
  double t0 = syno_clock_seconds();
  int rc = syno_driver_run(&c, &err);
  if (bench_stop) return -1;
  if (rc) {
    fprintf(stderr, "search: %s\n", err.msg);
    return -1;
  }
  r->seconds = syno_clock_seconds() - t0;
  syno_db_t *h;
  syno_db_cand_t *rows;
  int n;
  if (syno_db_open(db, SYNO_DB_READONLY, &h, &err) || syno_db_list(h, &rows, &n, &err)) {
    fprintf(stderr, "search: %s\n", err.msg);
    return -1;
  }
  r->best = -1, r->n = 0, r->failed = 0;
  for (int i = 0; i < n && r->n < 1024; i++) {
    if (rows[i].is_baseline) continue;
    if (rows[i].reward > r->best) r->best = rows[i].reward;
    r->failed += rows[i].status != 0;
    r->curve[r->n++] = r->best;
  }
  syno_db_list_free(rows, n);
  syno_db_close(h);
  return 0;
}

int main(int argc, char **argv) {
  const char *const *datasets = syno_task_dataset_names(SYNO_TASK_IMAGES);
  int budget = 30, epochs = 3;
  const char *dataset = "digits";
  int budget_pos = 0, epochs_pos = 0;
  const char *dataset_pos = NULL;
  syno_opt_t opts[] = {
      {.name = "BUDGET",
       .kind = SYNO_OPT_KIND_INT,
       .flags = SYNO_OPT_OPERAND,
       .dest = &budget_pos,
       .size = sizeof budget_pos,
       .min = 1,
       .max = 1024,
       .help = "the same as --budget"},
      {.name = "DATASET",
       .kind = SYNO_OPT_KIND_ENUM,
       .flags = SYNO_OPT_OPERAND,
       .dest = &dataset_pos,
       .choices = datasets,
       .help = "the same as --dataset"},
      {.name = "EPOCHS",
       .kind = SYNO_OPT_KIND_INT,
       .flags = SYNO_OPT_OPERAND,
       .dest = &epochs_pos,
       .size = sizeof epochs_pos,
       .min = 1,
       .max = 10000,
       .help = "the same as --epochs"},
      SYNO_OPT_INT("budget", "N", &budget, 1, 1024, "candidates per search (default 30)"),
      SYNO_OPT_ENUM("dataset", "NAME", &dataset, datasets, "the data (default digits)"),
      SYNO_OPT_INT("epochs", "E", &epochs, 1, 10000, "training epochs per candidate (default 3)"),
      SYNO_OPT_END,
  };
  bench_options("search",
                "usage: search [--budget N] [--dataset NAME] [--epochs E]\n"
                "       search [BUDGET [DATASET [EPOCHS]]]\n"
                "MCTS against random search on the ResNet, same seed and budget, one worker.\n",
                opts, argc, argv);
  for (int i = 0; i < 3; i++)
    if (opts[i].seen && opts[i + 3].seen) {
      fprintf(stderr, "search: give %s either as an operand or as --%s, not both\n", opts[i].name, opts[i + 3].name);
      return 2;
    }
  if (opts[0].seen) budget = budget_pos;
  if (opts[1].seen) dataset = dataset_pos;
  if (opts[2].seen) epochs = epochs_pos;
  bench_signals(1);
  char self[4096], exe[4200], dir[] = "/tmp/syno-bench-search-XXXXXX";
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0 || !mkdtemp(dir)) return 1;
  self[len] = 0;
  snprintf(exe, sizeof exe, "%s/../syno", dirname(self));
  if (access(exe, X_OK)) {
    fprintf(stderr, "search: cannot find the syno binary at %s\n", exe);
    return 1;
  }
  printf("MCTS vs random search: ResNet on %s, %d epochs per candidate, budget %d, seed 1, 1 worker\n", dataset, epochs,
         budget);
  char setup[512];
  syno_nn_threads_describe(setup, sizeof setup);
  printf("(each candidate trains in its own `syno eval` process; this process: %s)\n", setup);
  result_t m, r;
  char db_m[128], db_r[128];
  snprintf(db_m, sizeof db_m, "%s/mcts.db", dir);
  snprintf(db_r, sizeof db_r, "%s/random.db", dir);
  if (run(exe, db_r, 1, budget, dataset, epochs, &r) || run(exe, db_m, 0, budget, dataset, epochs, &m)) {
    if (!bench_stop) return 1;
    fprintf(stderr, "search: stopped by signal %d; databases in %s\n", (int)bench_stop, dir);
    signal((int)bench_stop, SIG_DFL);
    raise((int)bench_stop);
    return 128 + (int)bench_stop;
  }
  int reach = -1;
  for (int i = 0; i < m.n && reach < 0; i++)
    if (m.curve[i] >= r.best) reach = i + 1;
  printf("%-8s %12s %12s %8s %10s\n", "", "best reward", "evaluations", "failed", "seconds");
  printf("%-8s %12.4f %12d %8d %10.1f\n", "random", r.best, r.n, r.failed, r.seconds);
  printf("%-8s %12.4f %12d %8d %10.1f\n", "MCTS", m.best, m.n, m.failed, m.seconds);
  if (reach > 0)
    printf("MCTS reached random search's best reward after %d of %d evaluations\n", reach, m.n);
  else
    printf("MCTS did not reach random search's best reward (%.4f) within %d evaluations\n", r.best, m.n);
  printf("ratio of best rewards MCTS/random: %.3f\n", r.best > 0 ? m.best / r.best : 0.0);
  printf("databases kept in %s (syno report --db ...)\n", dir);
  return 0;
}
