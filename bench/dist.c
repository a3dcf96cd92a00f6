/* bench/dist: how far the search's evaluations scale, with local worker processes and with
 * MPI ranks (syno search --mpi, docs/dist.md).
 *
 * For 1, 2 and 4 workers (4 oversubscribes this 2-core machine), a search of --budget
 * candidates (default 40) on the stand-in evaluator (`syno eval --stand-in`: no training,
 * 0.05-0.5 s of sleep, so the workers' CPUs are not the limit) runs once with local worker
 * processes and once under `mpiexec -n W+1` (this program again, as rank 0 with the MPI
 * transport and W worker ranks). It prints evaluations per minute, the ideal (W over the
 * mean evaluation time, process start included, as measured in the run), their ratio, and
 * the master's own CPU time per candidate (MCTS, the database, the transport; not the
 * workers'). Then SQLite commits per second of the results database alone. Together they
 * say how many workers one master can keep busy: about (evaluation time) / (master time
 * per candidate).
 *
 * usage: dist [--budget N] [--workers LIST]      (defaults 40, "1,2,4")
 * (internal: dist --mpi-rank W BUDGET DB, run by mpiexec) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench.h"
#include "syno/cpus.h"
#include "syno/dist.h"
#include "syno/driver.h"
#include "syno/store.h"

typedef struct {
  int n;           /* candidates recorded */
  double wall;     /* seconds of the search phase (after the space and the baseline) */
  double cpu;      /* the master's user + system seconds in it */
  double mean_job; /* mean evaluation time, started to finished */
} result_t;

static double cpu_self(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
         1e-6 * (double)ru.ru_stime.tv_usec;
}

static char syno_exe[4096];

/* The master's clock and CPU time when the search phase begins (the space is built and the
 * baseline recorded: what follows is the cost per candidate) and when it ends. */
typedef struct {
  double wall0, cpu0, wall1, cpu1;
} marks_t;

static void on_progress(const syno_driver_progress_t *p, void *user) {
  marks_t *m = user;
  if (p->event == SYNO_DRIVER_BASELINE_DONE) m->wall0 = syno_clock_seconds(), m->cpu0 = cpu_self();
  if (p->event == SYNO_DRIVER_DONE) m->wall1 = syno_clock_seconds(), m->cpu1 = cpu_self();
}

/* The search of one configuration, in this process (as rank 0 when pool is given). */
static int search(int workers, syno_pool_t *pool, int budget, const char *db, result_t *r) {
  syno_driver_cfg_t c;
  syno_driver_cfg_default(&c);
  c.db_path = db;
  c.worker_exe = syno_exe;
  c.workers = workers;
  c.pool = pool;
  c.budget = budget;
  c.stand_in = 1;
  c.confirm = 0;
  marks_t m = {0, 0, 0, 0};
  c.progress = on_progress;
  c.user = &m;
  c.stop = &bench_stop;
  unlink(db);
  syno_error_t err;
  if (syno_driver_run(&c, &err)) {
    fprintf(stderr, "dist: %s\n", err.msg);
    return -1;
  }
  r->wall = m.wall1 - m.wall0;
  r->cpu = m.cpu1 - m.cpu0;
  syno_db_t *h;
  syno_db_cand_t *rows;
  int n;
  if (syno_db_open(db, SYNO_DB_READONLY, &h, &err) || syno_db_list(h, &rows, &n, &err)) {
    fprintf(stderr, "dist: %s\n", err.msg);
    return -1;
  }
  double sum = 0;
  r->n = 0;
  for (int i = 0; i < n; i++) {
    if (rows[i].is_baseline) continue;
    r->n++;
    sum += rows[i].finished_at - rows[i].started_at;
  }
  r->mean_job = r->n ? sum / r->n : 0;
  syno_db_list_free(rows, n);
  syno_db_close(h);
  unlink(db);
  return 0;
}

/* Under mpiexec: rank 0 searches over the MPI pool and prints one RESULT line. */
static int mpi_rank(int *argc, char ***argv, int budget, const char *db) {
  syno_error_t err;
  int rank, size;
  if (syno_dist_init(argc, argv, &rank, &size, &err)) {
    fprintf(stderr, "dist: %s\n", err.msg);
    return 1;
  }
  int rc = 0;
  if (rank > 0)
    rc = syno_dist_serve(&err) ? 1 : 0;
  else {
    syno_pool_t *pool;
    result_t r;
    if (syno_dist_pool_new(0, &pool, &err) || search(size - 1, pool, budget, db, &r))
      rc = 1;
    else
      printf("RESULT %d %.6f %.6f %.6f\n", r.n, r.wall, r.cpu, r.mean_job);
  }
  if (rc) fprintf(stderr, "dist: rank %d: %s\n", rank, err.msg);
  syno_dist_finalize();
  return rc;
}

/* The MPI configuration: mpiexec -n W+1 this program --mpi-rank ... */
static int search_mpi(const char *self, int workers, int budget, const char *db, result_t *r) {
  char n[16], w[16], b[16];
  snprintf(n, sizeof n, "%d", workers + 1);
  snprintf(w, sizeof w, "%d", workers);
  snprintf(b, sizeof b, "%d", budget);
  char *argv[] = {"/usr/bin/mpiexec", "-n", n, (char *)self, "--mpi-rank", w, b, (char *)db, NULL};
  char *out = bench_run_capture(argv);
  const char *line = out ? strstr(out, "RESULT ") : NULL;
  int ok = line && sscanf(line, "RESULT %d %lf %lf %lf", &r->n, &r->wall, &r->cpu, &r->mean_job) == 4;
  free(out);
  return ok ? 0 : -1;
}

static void print_row(const char *how, int workers, const result_t *r) {
  double rate = 60.0 * r->n / r->wall, ideal = r->mean_job > 0 ? 60.0 * workers / r->mean_job : 0;
  printf("%-6s %7d %10d %9.1f %14.1f %10.1f %7.2f %18.2f\n", how, workers, r->n, r->wall, rate, ideal,
         ideal > 0 ? rate / ideal : 0, 1e3 * r->cpu / r->n);
}

/* Commits per second of the results database: one transaction per record, as the search
 * inserts them. */
static double db_commits(const char *path, int n) {
  syno_error_t err;
  syno_db_t *db;
  unlink(path);
  if (syno_db_open(path, SYNO_DB_CREATE, &db, &err)) return 0;
  double t0 = syno_clock_seconds();
  for (int i = 0; i < n; i++) {
    syno_db_cand_t c;
    memset(&c, 0, sizeof c);
    char text[64];
    snprintf(text, sizeof text, "candidate %d", i);
    c.op_text = text;
    c.path = text;
    c.accuracy = 0.5;
    c.reason = NULL;
    if (syno_db_insert(db, &c, &err)) {
      syno_db_close(db);
      return 0;
    }
  }
  double t = syno_clock_seconds() - t0;
  syno_db_close(db);
  unlink(path);
  return n / t;
}

int main(int argc, char **argv) {
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return fprintf(stderr, "dist: cannot find this program\n"), 1;
  self[len] = 0;
  snprintf(syno_exe, sizeof syno_exe, "%s", self);
  char *slash = strrchr(syno_exe, '/');
  if (slash) *slash = 0;
  slash = strrchr(syno_exe, '/');
  if (slash) snprintf(slash + 1, sizeof syno_exe - (size_t)(slash + 1 - syno_exe), "syno");
  if (access(syno_exe, X_OK)) return fprintf(stderr, "dist: %s not found (build it first)\n", syno_exe), 1;
  if (argc == 5 && !strcmp(argv[1], "--mpi-rank")) return mpi_rank(&argc, &argv, atoi(argv[3]), argv[4]);
  int budget = 40;
  const char *list = "1,2,4";
  syno_opt_t opts[] = {
      SYNO_OPT_INT("budget", "N", &budget, 1, 100000, "candidates per search (default 40)"),
      SYNO_OPT_STR("workers", "LIST", &list, "worker counts, comma-separated (default 1,2,4)"),
      SYNO_OPT_END,
  };
  bench_options("dist",
                "usage: dist [--budget N] [--workers LIST]\n\n"
                "Evaluations per minute of the search with local workers and MPI ranks, on the\n"
                "stand-in evaluator, and the master's own time per candidate.\n",
                opts, argc, argv);
  bench_signals(1);
  int counts[16], ncounts = 0;
  char words[256];
  snprintf(words, sizeof words, "%s", list);
  for (char *w = strtok(words, ","); w; w = strtok(NULL, ",")) {
    char *end;
    long k = strtol(w, &end, 10);
    if (*end || k < 1 || k > 256 || ncounts == 16)
      return fprintf(stderr, "dist: --workers: '%s' is not a worker count in 1..256 (at most 16 of them)\n", w), 2;
    counts[ncounts++] = (int)k;
  }
  int mpi = syno_dist_available() && access("/usr/bin/mpiexec", X_OK) == 0;
  long cpus = syno_cpu_count();
  printf(
      "bench/dist: search of %d candidates on the stand-in evaluator (0.05-0.5 s each, no training), "
      "MCTS over the conv2d preset, ResNet on digits; %ld CPUs; MPI: %s\n",
      budget, cpus, mpi ? "MPICH (mpiexec -n W+1)" : "not in this build or mpiexec missing: local only");
  printf("%-6s %7s %10s %9s %14s %10s %7s %18s\n", "how", "workers", "candidates", "wall s", "evals/min", "ideal",
         "ratio", "master ms/cand");
  char db[256];
  snprintf(db, sizeof db, "/tmp/syno-bench-dist-%d.db", (int)getpid());
  double worst_ms = 0;
  for (int i = 0; i < ncounts && !bench_stop; i++) {
    int workers = counts[i];
    result_t r;
    if (search(workers, NULL, budget, db, &r)) return 1;
    print_row("local", workers, &r);
    if (1e3 * r.cpu / r.n > worst_ms) worst_ms = 1e3 * r.cpu / r.n;
    if (!mpi) continue;
    if (search_mpi(self, workers, budget, db, &r)) return fprintf(stderr, "dist: the MPI run failed\n"), 1;
    print_row("mpi", workers, &r);
    if (1e3 * r.cpu / r.n > worst_ms) worst_ms = 1e3 * r.cpu / r.n;
  }
  if (bench_stop) return 1;
  double commits = db_commits(db, 500);
  printf(
      "results database: %.0f commits/s (one transaction per record, WAL, synchronous=FULL, as the search writes "
      "them)\n",
      commits);
  printf(
      "one master keeps about E / %.1f ms workers busy for evaluations of E ms (the search's own time per "
      "candidate, worst row above), and records at most %.0f candidates/s\n",
      worst_ms, commits);
  return 0;
}
