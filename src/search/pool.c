/* Worker processes for the search: fork + exec per job, output collected
 * through pipes, deadlines enforced with SIGKILL. See syno/pool.h. */
#include "syno/clock.h"
#include "syno/pool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <time.h>
#include <unistd.h>

#include "syno/grow.h"

typedef struct {
  int busy;
  int out_fd, err_fd; /* -1 once at end of file */
  size_t out_cap;
  int timed_out;
  double t0; /* when the job started, on the monotonic clock (its deadline's origin) */
  syno_job_t job;
} slot_t;

struct syno_pool {
  int size;
  double timeout;
  slot_t *slots;
  int remote; /* jobs run through `transport`; slots only keep busy */
  syno_pool_transport_t transport;
};


int syno_pool_new(int size, double timeout_s, syno_pool_t **out, syno_error_t *err) {
  if (size < 1) return syno_error_set(err, "a worker pool needs at least one worker (got %d)", size);
  syno_pool_t *p = calloc(1, sizeof *p);
  if (!p || !(p->slots = calloc((size_t)size, sizeof *p->slots))) {
    free(p);
    return syno_error_set(err, "out of memory for a pool of %d workers", size);
  }
  p->size = size;
  p->timeout = timeout_s;
  *out = p;
  return 0;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

int syno_pool_new_remote(const syno_pool_transport_t *t, double timeout_s, syno_pool_t **out, syno_error_t *err) {
  if (syno_pool_new(t->size, timeout_s, out, err)) {
    if (t->stop) t->stop(t->self);
    if (t->free) t->free(t->self);
    return -1;
  }
  (*out)->remote = 1;
  (*out)->transport = *t;
  return 0;
}

void syno_pool_set_timeout(syno_pool_t *p, double timeout_s) { p->timeout = timeout_s; }

void syno_pool_free(syno_pool_t *p) {
  if (!p) return;
  if (p->remote) {
    p->transport.stop(p->transport.self);
    p->transport.free(p->transport.self);
    free(p->slots);
    free(p);
    return;
  }
  for (int i = 0; i < p->size; i++) {
    slot_t *s = &p->slots[i];
    if (!s->busy) continue;
    kill(s->job.pid, SIGKILL);
    close_fd(&s->out_fd);
    close_fd(&s->err_fd);
    while (waitpid(s->job.pid, NULL, 0) < 0 && errno == EINTR) {}
    free(s->job.out);
  }
  free(p->slots);
  free(p);
}

int syno_pool_size(const syno_pool_t *p) { return p->size; }

int syno_pool_running(const syno_pool_t *p) {
  int n = 0;
  for (int i = 0; i < p->size; i++) n += p->slots[i].busy;
  return n;
}

int syno_pool_free_slots(const syno_pool_t *p) { return p->size - syno_pool_running(p); }

int syno_pool_start(syno_pool_t *p, long tag, char *const *argv, syno_error_t *err) {
  slot_t *s = NULL;
  for (int i = 0; i < p->size && !s; i++)
    if (!p->slots[i].busy) s = &p->slots[i];
  if (!s) return syno_error_set(err, "all %d workers are busy", p->size);
  if (p->remote) {
    int slot = (int)(s - p->slots);
    if (p->transport.start(p->transport.self, slot, tag, argv, p->timeout, err)) return -1;
    s->busy = 1;
    return 0;
  }
  int out[2], errp[2];
  if (pipe(out)) return syno_error_set(err, "pipe: %s", strerror(errno));
  if (pipe(errp)) {
    close(out[0]);
    close(out[1]);
    return syno_error_set(err, "pipe: %s", strerror(errno));
  }
  fflush(NULL);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(out[0]), close(out[1]), close(errp[0]), close(errp[1]);
    return syno_error_set(err, "fork: %s", strerror(e));
  }
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(errp[1], STDERR_FILENO);
    close(out[0]), close(out[1]), close(errp[0]), close(errp[1]);
    /* Jobs must not share the terminal's Ctrl-C with the search: the search
     * decides when a job dies. */
    setpgid(0, 0);
    (void)parent;
#ifdef __linux__
    /* Nor outlive it: a search (or an MPI worker rank) killed with SIGKILL
     * takes its evaluations along instead of leaving them to run on. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
#endif
    execv(argv[0], argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(out[1]);
  close(errp[1]);
  fcntl(out[0], F_SETFD, FD_CLOEXEC);
  fcntl(errp[0], F_SETFD, FD_CLOEXEC);
  memset(s, 0, sizeof *s);
  s->busy = 1;
  s->out_fd = out[0];
  s->err_fd = errp[0];
  s->job.tag = tag;
  s->job.slot = (int)(s - p->slots);
  s->job.pid = pid;
  s->job.started = syno_clock_wall(); /* stored: a timestamp */
  s->t0 = syno_clock_seconds();
  return 0;
}

/* Reads what is available on one of a slot's pipes; closes it at EOF. */
static int drain(slot_t *s, int which, syno_error_t *err) {
  char buf[8192];
  int *fd = which ? &s->err_fd : &s->out_fd;
  ssize_t r = read(*fd, buf, sizeof buf);
  if (r < 0) {
    if (errno == EINTR || errno == EAGAIN) return 0;
    return syno_error_set(err, "reading a worker's output: %s", strerror(errno));
  }
  if (r == 0) {
    close_fd(fd);
    return 0;
  }
  if (which == 0) {
    syno_job_t *j = &s->job;
    if (syno_grow((void **)&j->out, &s->out_cap, j->out_len + (size_t)r + 1, 1))
      return syno_error_set(err, "out of memory for a worker's output");
    memcpy(j->out + j->out_len, buf, (size_t)r);
    j->out_len += (size_t)r;
    j->out[j->out_len] = 0;
  } else {
    char *t = s->job.err_tail;
    size_t have = strlen(t), cap = sizeof s->job.err_tail - 1;
    size_t add = (size_t)r > cap ? cap : (size_t)r;
    const char *src = buf + ((size_t)r - add);
    if (have + add > cap) {
      memmove(t, t + (have + add - cap), cap - add);
      have = cap - add;
    }
    memcpy(t + have, src, add);
    t[have + add] = 0;
  }
  return 0;
}

static syno_job_t *finish(slot_t *s) {
  int status = 0;
  while (waitpid(s->job.pid, &status, 0) < 0 && errno == EINTR) {}
  syno_job_t *j = malloc(sizeof *j);
  if (!j) return NULL;
  *j = s->job;
  j->finished = syno_clock_wall();
  if (s->timed_out)
    j->end = SYNO_JOB_TIMEOUT;
  else if (WIFSIGNALED(status)) {
    j->end = SYNO_JOB_SIGNALED;
    j->term_signal = WTERMSIG(status);
  } else {
    j->end = SYNO_JOB_EXITED;
    j->exit_code = WEXITSTATUS(status);
  }
  if (!j->out) j->out = calloc(1, 1);
  s->busy = 0;
  return j;
}

static int wait_remote(syno_pool_t *p, double timeout_s, syno_job_t **job, syno_error_t *err) {
  if (syno_pool_running(p) == 0) return 0;
  int rc = p->transport.wait(p->transport.self, timeout_s, job, err);
  if (rc == 1) {
    if ((*job)->slot < 0 || (*job)->slot >= p->size || !p->slots[(*job)->slot].busy) {
      int slot = (*job)->slot;
      syno_pool_job_free(*job);
      *job = NULL;
      return syno_error_set(err, "a worker answered for slot %d, which runs nothing", slot);
    }
    p->slots[(*job)->slot].busy = 0;
  }
  return rc;
}

int syno_pool_wait(syno_pool_t *p, double timeout_s, syno_job_t **job, syno_error_t *err) {
  if (p->remote) return wait_remote(p, timeout_s, job, err);
  double deadline = timeout_s < 0 ? -1 : syno_clock_seconds() + timeout_s;
  struct pollfd *fds = calloc((size_t)p->size * 2, sizeof *fds);
  int *owner = calloc((size_t)p->size * 2, sizeof *owner);
  int rc = 0;
  if (!fds || !owner) {
    rc = syno_error_set(err, "out of memory");
    goto done;
  }
  for (;;) {
    double now = syno_clock_seconds();
    /* Finished jobs first (both pipes at EOF), then deadlines. */
    for (int i = 0; i < p->size; i++) {
      slot_t *s = &p->slots[i];
      if (!s->busy) continue;
      if (s->out_fd < 0 && s->err_fd < 0) {
        if (!(*job = finish(s)))
          rc = syno_error_set(err, "out of memory");
        else
          rc = 1;
        goto done;
      }
      if (p->timeout > 0 && !s->timed_out && now - s->t0 > p->timeout) {
        s->timed_out = 1;
        kill(-s->job.pid, SIGKILL);
        kill(s->job.pid, SIGKILL);
      }
    }
    int n = 0;
    double wait = deadline < 0 ? 1.0 : deadline - now;
    for (int i = 0; i < p->size; i++) {
      slot_t *s = &p->slots[i];
      if (!s->busy) continue;
      if (p->timeout > 0 && !s->timed_out) {
        double left = s->t0 + p->timeout - now;
        if (left < wait) wait = left;
      }
      if (s->out_fd >= 0) fds[n] = (struct pollfd){.fd = s->out_fd, .events = POLLIN}, owner[n++] = 2 * i;
      if (s->err_fd >= 0) fds[n] = (struct pollfd){.fd = s->err_fd, .events = POLLIN}, owner[n++] = 2 * i + 1;
    }
    if (n == 0 && syno_pool_running(p) == 0) goto done; /* nothing to wait for */
    if (deadline >= 0 && now >= deadline) goto done;
    if (wait < 0) wait = 0;
    int ms = (int)(wait * 1000.0) + 1;
    int r = poll(fds, (nfds_t)n, ms);
    if (r < 0) {
      if (errno == EINTR) continue;
      rc = syno_error_set(err, "poll: %s", strerror(errno));
      goto done;
    }
    for (int k = 0; k < n; k++)
      if (fds[k].revents)
        if (drain(&p->slots[owner[k] / 2], owner[k] % 2, err)) {
          rc = -1;
          goto done;
        }
  }
done:
  free(fds);
  free(owner);
  return rc;
}

void syno_pool_job_free(syno_job_t *job) {
  if (!job) return;
  free(job->out);
  free(job);
}

void syno_pool_job_describe(const syno_job_t *job, double timeout_s, const char *who, char *buf, size_t n) {
  int len;
  const char *sp = who ? " " : "";
  if (!who) who = "";
  switch (job->end) {
    case SYNO_JOB_TIMEOUT: len = snprintf(buf, n, "timeout after %.0f s", timeout_s); break;
    case SYNO_JOB_SIGNALED:
      len = snprintf(buf, n, "%s%skilled by signal %d (%s)", who, sp, job->term_signal, strsignal(job->term_signal));
      break;
    default: len = snprintf(buf, n, "%s%sexit status %d", who, sp, job->exit_code); break;
  }
  /* The last non-empty line of stderr says why, when the worker said anything. */
  const char *t = job->err_tail;
  size_t e = strlen(t);
  while (e > 0 && (t[e - 1] == '\n' || t[e - 1] == ' ')) e--;
  size_t b = e;
  while (b > 0 && t[b - 1] != '\n') b--;
  if (e > b && len >= 0 && (size_t)len < n) snprintf(buf + len, n - (size_t)len, ": %.*s", (int)(e - b), t + b);
}
