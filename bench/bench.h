/* bench/bench.h - what every benchmark program shares: the clock, medians, the report of the
 * BLAS and thread counts in effect, reading the command line (the syno option parser) and the
 * --reps option, stopping on SIGINT and SIGTERM, and running a PyTorch side script.
 * Header-only (static functions): each bench/<name>.c is its own program. */
#ifndef SYNO_BENCH_H
#define SYNO_BENCH_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "syno/clock.h"
#include "syno/nn.h"
#include "syno/opt.h"

#ifndef SYNO_SOURCE_DIR
#define SYNO_SOURCE_DIR "."
#endif

/* Debian's python3 with torch; the python3 first on PATH may be another one. */
#define BENCH_PYTHON "/usr/bin/python3"

/* Reads the command line by the benchmark's option table (syno/opt.h, the parser of every
 * syno command): -h or --help prints `usage`, the options and exits 0; a bad command line
 * (an unknown option, a missing, malformed or out-of-range value) prints one line "PROG:
 * MESSAGE" and exits 2. */
static inline void bench_options(const char *prog, const char *usage, syno_opt_t *table, int argc, char **argv) {
  syno_error_t err;
  int rc = syno_opt_parse(table, argc, argv, &err);
  if (rc == 1) {
    syno_opt_usage(stdout, usage, table, NULL);
    exit(0);
  }
  if (rc < 0) {
    fprintf(stderr, "%s: %s (see %s --help)\n", prog, err.msg, prog);
    exit(2);
  }
}

/* The --reps option every benchmark takes. */
#define BENCH_OPT_REPS(reps, max) SYNO_OPT_INT("reps", "R", reps, 1, max, "repeats; the median is taken")

/* SIGINT and SIGTERM stop a benchmark promptly, its child processes with it: a child the
 * benchmark waits for is registered in bench_child and killed first. Then the benchmark dies
 * of the signal, unless it installed the handlers as graceful: then the first signal only
 * sets bench_stop (the signal's number), which the benchmark polls to stop cleanly (bench/search:
 * the search driver kills its workers), and a second one ends it at once. */
static volatile sig_atomic_t bench_stop __attribute__((unused));
static volatile sig_atomic_t bench_child __attribute__((unused)); /* a pid, or 0 */
static int bench_graceful __attribute__((unused));

static inline void bench_on_signal(int sig) {
  if (bench_child > 0) kill((pid_t)bench_child, SIGKILL);
  if (bench_graceful && !bench_stop) {
    bench_stop = sig;
    return;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

static inline void bench_signals(int graceful) {
  bench_graceful = graceful;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = bench_on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

/* "BLAS: OpenBLAS (...), 2 threads; oneDNN: 2 OpenMP threads; 7 repeats, medians" */
static inline void bench_print_setup(int reps) {
  char buf[512];
  syno_nn_threads_describe(buf, sizeof buf);
  printf("%s; %d repeats, medians\n", buf, reps);
}

/* Runs argv[0] (a path) with argv as a child the signal handlers know, its stderr to
 * /dev/null, and returns its stdout (malloc'd, NUL-terminated), or NULL when it could not run
 * or did not exit with status 0. */
static inline char *bench_run_capture(char *const *argv) {
  int fd[2];
  if (pipe(fd)) return NULL;
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    return NULL;
  }
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(fd[1], STDOUT_FILENO);
    if (null >= 0) dup2(null, STDERR_FILENO);
    close(fd[0]);
    close(fd[1]);
    execv(argv[0], argv);
    _exit(127);
  }
  bench_child = pid;
  close(fd[1]);
  size_t len = 0, cap = 4096;
  char *out = malloc(cap);
  for (ssize_t k; out && (k = read(fd[0], out + len, cap - len - 1)) != 0;) {
    if (k < 0) {
      if (errno == EINTR) continue;
      break;
    }
    len += (size_t)k;
    if (len + 1 == cap) {
      char *bigger = realloc(out, cap *= 2);
      if (!bigger) {
        free(out);
        out = NULL;
      } else
        out = bigger;
    }
  }
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  bench_child = 0;
  if (!out || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    free(out);
    return NULL;
  }
  out[len] = '\0';
  return out;
}

/* Runs `BENCH_PYTHON SYNO_SOURCE_DIR/bench/<script> <args>` (args split at spaces) with
 * bench_run_capture: its stdout, or NULL when python or torch is missing or the script
 * failed. */
static inline char *bench_run_torch(const char *script, const char *args) {
  char path[1024], words[1024];
  snprintf(path, sizeof path, "%s/bench/%s", SYNO_SOURCE_DIR, script);
  snprintf(words, sizeof words, "%s", args);
  char *argv[64];
  int n = 0;
  argv[n++] = (char *)BENCH_PYTHON;
  argv[n++] = path;
  for (char *w = strtok(words, " "); w && n < 63; w = strtok(NULL, " ")) argv[n++] = w;
  argv[n] = NULL;
  return bench_run_capture(argv);
}

#endif
