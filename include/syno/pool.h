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
 * A pool may also run its jobs elsewhere (syno_pool_new_remote): the same
 * calls, slots and job records, with a transport (src/dist: one MPI rank per
 * slot) that starts a job in a given slot and hands back finished ones. The
 * search loop does not know which kind it drives.
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
  int slot; /* the slot it ran in, 0..size-1 */
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

/* Where a remote pool's jobs run. start begins argv in slot `slot` (free),
 * to be killed after timeout_s (<= 0: none) where it runs; wait returns 1
 * and a finished job (heap-allocated, as syno_pool_wait's, its slot and tag
 * filled) within timeout_s (< 0: until one ends), 0 when none ended, -1 on
 * error; stop kills what runs and releases the far side; free releases the
 * transport's own memory. */
typedef struct {
  int size; /* slots */
  void *self;
  int (*start)(void *self, int slot, long tag, char *const *argv, double timeout_s, syno_error_t *err);
  int (*wait)(void *self, double timeout_s, syno_job_t **job, syno_error_t *err);
  void (*stop)(void *self);
  void (*free)(void *self);
} syno_pool_transport_t;

/* A pool over a transport; it owns the transport from here on (also when
 * this fails). A changed timeout applies to the jobs started later. */
int syno_pool_new_remote(const syno_pool_transport_t *t, double timeout_s, syno_pool_t **out, syno_error_t *err);
/* Changes the timeout; it applies to the running jobs and the later ones. */
void syno_pool_set_timeout(syno_pool_t *p, double timeout_s);
/* Kills (SIGKILL) and reaps every running job, then frees the pool. */
void syno_pool_free(syno_pool_t *p);
int syno_pool_size(const syno_pool_t *p);
int syno_pool_running(const syno_pool_t *p);
int syno_pool_free_slots(const syno_pool_t *p);
/* Starts argv[0] (a path) with argv (NULL-terminated) in a free slot;
 * fails if none is free or fork/pipe fail. */
int syno_pool_start(syno_pool_t *p, long tag, char *const *argv, syno_error_t *err);
/* Waits up to timeout_s (< 0: until a job ends) for a job to end. Returns 1
 * and a heap-allocated job in *job, 0 when none ended in time, -1 on error. */
int syno_pool_wait(syno_pool_t *p, double timeout_s, syno_job_t **job, syno_error_t *err);
void syno_pool_job_free(syno_job_t *job);
/* A one-line description of how a job ended, its exit status and signal
 * named as `who`'s when who is not NULL ("worker exit status 3", "worker
 * killed by signal 9 (Killed)"; NULL: "exit status 3"), or "timeout after
 * 300 s", plus the last stderr line. */
void syno_pool_job_describe(const syno_job_t *job, double timeout_s, const char *who, char *buf, size_t n);

#endif
