/* bench/bench.h - what every benchmark program shares: the clock, medians, the report of the
 * BLAS and thread counts in effect, the --reps option, and running a PyTorch side script.
 * Header-only (static functions): each bench/<name>.c is its own program. */
#ifndef SYNO_BENCH_H
#define SYNO_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "syno/nn.h"

#ifndef SYNO_SOURCE_DIR
#define SYNO_SOURCE_DIR "."
#endif

/* Debian's python3 with torch; the python3 first on PATH may be another one. */
#define BENCH_PYTHON "/usr/bin/python3"

static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts t in place. */
static inline double bench_median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, bench_cmp_d);
  return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* Parses the options every benchmark takes: --reps R (1..max_reps) and --help (prints usage
 * and exits 0). Other options are left to the caller: *i is the index of an option this did
 * not take, and the return value 1 means "yours"; 0 means consumed; it exits 2 on a bad
 * value. */
static inline int bench_common_opt(const char *prog, const char *usage, int argc, char **argv, int *i, int *reps,
                                   int max_reps) {
  if (!strcmp(argv[*i], "--help") || !strcmp(argv[*i], "-h")) {
    fputs(usage, stdout);
    exit(0);
  }
  if (!strcmp(argv[*i], "--reps") && *i + 1 < argc) {
    char *end = NULL;
    long r = strtol(argv[++*i], &end, 10);
    if (*end || r < 1 || r > max_reps) {
      fprintf(stderr, "%s: --reps '%s' is not 1..%d\n", prog, argv[*i], max_reps);
      exit(2);
    }
    *reps = (int)r;
    return 0;
  }
  return 1;
}

static inline void bench_unknown_opt(const char *prog, const char *opt) {
  fprintf(stderr, "%s: unknown option '%s' (see --help)\n", prog, opt);
  exit(2);
}

/* "BLAS: OpenBLAS (...), 2 threads; oneDNN: 2 OpenMP threads; 7 repeats, medians" */
static inline void bench_print_setup(int reps) {
  char buf[512];
  syno_nn_threads_describe(buf, sizeof buf);
  printf("%s; %d repeats, medians\n", buf, reps);
}

/* Runs `BENCH_PYTHON SYNO_SOURCE_DIR/bench/<script> <args>` and returns its stdout (malloc'd,
 * NUL-terminated), or NULL when python or torch is missing or the script failed. */
static inline char *bench_run_torch(const char *script, const char *args) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s %s/bench/%s %s 2>/dev/null", BENCH_PYTHON, SYNO_SOURCE_DIR, script, args);
  FILE *p = popen(cmd, "r");
  if (!p) return NULL;
  size_t n = 0, cap = 4096;
  char *out = malloc(cap);
  for (size_t k; out && (k = fread(out + n, 1, cap - n - 1, p)) > 0;) {
    n += k;
    if (n + 1 == cap) {
      char *bigger = realloc(out, cap *= 2);
      if (!bigger) {
        free(out);
        out = NULL;
      } else
        out = bigger;
    }
  }
  int status = pclose(p);
  if (!out || status != 0) {
    free(out);
    return NULL;
  }
  out[n] = '\0';
  return out;
}

#endif
