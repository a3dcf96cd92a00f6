/* syno/pool.h - a pool of worker processes, one per job.
 *
 * The search evaluates each candidate in its own process (the `syno eval`
 * command), so a candidate that crashes, exhausts memory or hangs cannot
 * take the search down. A pool runs at most `size` jobs at once; each job is
 * a program with its arguments, started with fork + execv. The pool
 * collects the job's standard output whole and the last part of its
 * standard error, and reports how the job ended: its exit status, the
 * signal that killed it, or a timeout (the pool then kills it with SIGKILL).
 *
 * The parent does no numerical work, so nothing it holds (thread pools,
 * OpenMP runtimes) is duplicated into a job: every job starts from exec.
 *
 * Ownership: the pool owns the jobs' argument copies and output buffers
 * until syno_pool_wait hands a finished job to the caller, who frees it with
 * syno_pool_job_free. Not thread-safe. */
#ifndef SYNO_POOL_H
#define SYNO_POOL_H

#include <stddef.h>
#include <sys/types.h>

#include "syno/error.h"

typedef enum {
  SYNO_JOB_EXITED = 0, /* exit_code holds the status */
  SYNO_JOB_SIGNALED,   /* term_signal holds the signal */
  SYNO_JOB_TIMEOUT,    /* killed after the pool's timeout */
} syno_job_end_t;

typedef struct {
  long tag; /* the caller's, returned unchanged */
  pid_t pid;
  double started, finished; /* seconds since the epoch */
  syno_job_end_t end;
  int exit_code, term_signal;
  char *out; /* all of stdout, NUL-terminated */
  size_t out_len;
  char err_tail[512]; /* the last bytes of stderr, NUL-terminated */
} syno_job_t;

typedef struct syno_pool syno_pool_t;

/* timeout_s <= 0: no timeout. */
int syno_pool_new(int size, double timeout_s, syno_pool_t **out, syno_error_t *err);
/* Changes the timeout; it applies to the running jobs and the later ones. */
void syno_pool_set_timeout(syno_pool_t *p, double timeout_s);
/* Kills (SIGKILL) and reaps every running job, then frees the pool. */
void syno_pool_free(syno_pool_t *p);
int syno_pool_running(const syno_pool_t *p);
int syno_pool_free_slots(const syno_pool_t *p);
/* Starts argv[0] (a path) with argv (NULL-terminated) in a free slot;
 * fails if none is free or fork/pipe fail. */
int syno_pool_start(syno_pool_t *p, long tag, char *const *argv, syno_error_t *err);
/* Waits up to timeout_s (< 0: until a job ends) for a job to end. Returns 1
 * and a heap-allocated job in *job, 0 when none ended in time, -1 on error. */
int syno_pool_wait(syno_pool_t *p, double timeout_s, syno_job_t **job, syno_error_t *err);
void syno_pool_job_free(syno_job_t *job);
/* A one-line description of how a job ended ("exit status 3", "killed by
 * signal 9 (Killed)", "timeout after 300 s"), plus the last stderr line. */
void syno_pool_job_describe(const syno_job_t *job, double timeout_s, char *buf, size_t n);

#endif
