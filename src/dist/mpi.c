/* The search's evaluations on MPI ranks. See syno/dist.h. */
#include "syno/clock.h"
#include "syno/dist.h"

#ifndef SYNO_HAVE_MPI

#define NO_MPI                                                                                     \
  "this syno was built without MPI: install MPICH (apt-get install --no-install-recommends mpich " \
  "libmpich-dev) and rebuild (rm -rf build && make)"

int syno_dist_available(void) { return 0; }
int syno_dist_init(int *argc, char ***argv, int *rank, int *size, syno_error_t *err) {
  (void)argc, (void)argv, (void)rank, (void)size;
  return syno_error_set(err, NO_MPI);
}
int syno_dist_pool_new(double timeout_s, syno_pool_t **out, syno_error_t *err) {
  (void)timeout_s, (void)out;
  return syno_error_set(err, NO_MPI);
}
int syno_dist_serve(syno_error_t *err) { return syno_error_set(err, NO_MPI); }
void syno_dist_finalize(void) {}

#else

#include <cjson/cJSON.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "syno/cpus.h"

enum { TAG_JOB = 1, TAG_RESULT = 2, TAG_STOP = 3 };

/* How long a side sleeps between polls when nothing came. */
#define POLL_S 0.005

static int initialized;
static int local_workers = 1; /* worker ranks on this rank's node */

int syno_dist_available(void) { return 1; }


static void nap(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

static int mpi_error(syno_error_t *err, const char *what, int code) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, msg, &len);
  return syno_error_set(err, "MPI: %s: %.*s", what, len, msg);
}

int syno_dist_init(int *argc, char ***argv, int *rank, int *size, syno_error_t *err) {
  int rc = MPI_Init(argc, argv);
  if (rc != MPI_SUCCESS) return mpi_error(err, "MPI_Init", rc);
  initialized = 1;
  /* Errors come back as codes, so that they are reported, not fatal. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  /* The worker ranks that share this node's CPUs (rank 0 does no numerical work). */
  MPI_Comm node;
  int mine = *rank > 0, n = 1;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    MPI_Allreduce(&mine, &n, 1, MPI_INT, MPI_SUM, node);
    MPI_Comm_free(&node);
  }
  local_workers = n > 0 ? n : 1;
  return 0;
}

void syno_dist_finalize(void) {
  if (initialized) MPI_Finalize();
  initialized = 0;
}

/* Receives the probed message as a NUL-terminated string (malloc'd). */
static char *recv_text(const MPI_Status *st, syno_error_t *err) {
  int n = 0;
  MPI_Get_count(st, MPI_CHAR, &n);
  char *buf = malloc((size_t)n + 1);
  if (!buf) return syno_error_set(err, "out of memory for a message of %d bytes", n), NULL;
  int rc = MPI_Recv(buf, n, MPI_CHAR, st->MPI_SOURCE, st->MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) {
    free(buf);
    return mpi_error(err, "receiving a message", rc), NULL;
  }
  buf[n] = 0;
  return buf;
}

static int send_json(cJSON *o, int dest, int tag, syno_error_t *err) {
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!s) return syno_error_set(err, "out of memory for a message");
  int rc = MPI_Send(s, (int)strlen(s), MPI_CHAR, dest, tag, MPI_COMM_WORLD);
  free(s);
  return rc == MPI_SUCCESS ? 0 : mpi_error(err, "sending a message", rc);
}

static double num(const cJSON *o, const char *key) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(x) ? x->valuedouble : 0;
}

static const char *text(const cJSON *o, const char *key) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(x) ? x->valuestring : "";
}

/* ------------------------------------------------------------ the master */

typedef struct {
  int workers;
  int stopped;
} master_t;

static int master_start(void *self, int slot, long tag, char *const *argv, double timeout_s, syno_error_t *err) {
  master_t *m = self;
  if (slot < 0 || slot >= m->workers) return syno_error_set(err, "no worker rank for slot %d", slot);
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "tag", (double)tag);
  cJSON_AddNumberToObject(o, "slot", slot);
  cJSON_AddNumberToObject(o, "timeout", timeout_s);
  cJSON *a = cJSON_AddArrayToObject(o, "argv");
  for (int i = 0; argv[i]; i++) cJSON_AddItemToArray(a, cJSON_CreateString(argv[i]));
  return send_json(o, slot + 1, TAG_JOB, err);
}

/* A result message as a job record. */
static syno_job_t *job_from_json(const char *s, int source, syno_error_t *err) {
  cJSON *o = cJSON_Parse(s);
  syno_job_t *j = calloc(1, sizeof *j);
  if (!cJSON_IsObject(o) || !j) {
    cJSON_Delete(o);
    free(j);
    return syno_error_set(err, "rank %d sent a result that is not a JSON object", source), NULL;
  }
  j->tag = (long)num(o, "tag");
  j->slot = (int)num(o, "slot");
  j->end = (syno_job_end_t)(int)num(o, "end");
  j->exit_code = (int)num(o, "exit_code");
  j->term_signal = (int)num(o, "term_signal");
  j->started = num(o, "started");
  j->finished = num(o, "finished");
  j->out = strdup(text(o, "out"));
  snprintf(j->err_tail, sizeof j->err_tail, "%s", text(o, "err_tail"));
  cJSON_Delete(o);
  if (!j->out) {
    free(j);
    return syno_error_set(err, "out of memory"), NULL;
  }
  if (j->slot != source - 1) {
    syno_pool_job_free(j);
    return syno_error_set(err, "rank %d sent a result for slot %d", source, j->slot), NULL;
  }
  return j;
}

static int master_wait(void *self, double timeout_s, syno_job_t **job, syno_error_t *err) {
  (void)self;
  double deadline = timeout_s < 0 ? -1 : syno_clock_seconds() + timeout_s;
  for (;;) {
    int flag = 0;
    MPI_Status st;
    int rc = MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &flag, &st);
    if (rc != MPI_SUCCESS) return mpi_error(err, "waiting for results", rc);
    if (flag) {
      char *s = recv_text(&st, err);
      if (!s) return -1;
      *job = job_from_json(s, st.MPI_SOURCE, err);
      free(s);
      return *job ? 1 : -1;
    }
    if (deadline >= 0 && syno_clock_seconds() >= deadline) return 0;
    nap(POLL_S);
  }
}

static void master_stop(void *self) {
  master_t *m = self;
  if (m->stopped) return;
  m->stopped = 1;
  for (int r = 1; r <= m->workers; r++) MPI_Send(NULL, 0, MPI_CHAR, r, TAG_STOP, MPI_COMM_WORLD);
}

static void master_free(void *self) { free(self); }

int syno_dist_pool_new(double timeout_s, syno_pool_t **out, syno_error_t *err) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2)
    return syno_error_set(
        err, "at least 2 ranks are needed, a master and a worker (got %d): run under mpiexec -n K, K >= 2", size);
  master_t *m = calloc(1, sizeof *m);
  if (!m) return syno_error_set(err, "out of memory");
  m->workers = size - 1;
  syno_pool_transport_t t = {.size = m->workers,
                             .self = m,
                             .start = master_start,
                             .wait = master_wait,
                             .stop = master_stop,
                             .free = master_free};
  return syno_pool_new_remote(&t, timeout_s, out, err);
}

/* ------------------------------------------------------------ a worker */

/* This rank's share of its node's CPUs. */
static int thread_share(void) {
  int per = syno_cpu_count() / local_workers;
  return per > 0 ? (int)per : 1;
}

/* Starts a job message's command in the local pool; a malformed job is answered as a failed
 * job (it ran nothing), so the master hears of it. */
static int run_job(syno_pool_t *pool, const char *msg, syno_job_t *bad, syno_error_t *err) {
  cJSON *o = cJSON_Parse(msg);
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "argv");
  int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
  bad->tag = (long)num(o, "tag");
  bad->slot = (int)num(o, "slot");
  char **argv = calloc((size_t)n + 1, sizeof *argv);
  char threads[16];
  snprintf(threads, sizeof threads, "%d", thread_share());
  int ok = n > 0 && argv != NULL, rc = 0;
  for (int i = 0; ok && i < n; i++) {
    const cJSON *x = cJSON_GetArrayItem(a, i);
    if (!cJSON_IsString(x))
      ok = 0;
    else
      argv[i] = (i > 0 && !strcmp(argv[i - 1], "--threads")) ? threads : x->valuestring;
  }
  if (!ok) {
    bad->end = SYNO_JOB_EXITED;
    bad->exit_code = 127;
    snprintf(bad->err_tail, sizeof bad->err_tail, "the worker rank got a malformed job");
    rc = 1;
  } else {
    syno_pool_set_timeout(pool, num(o, "timeout"));
    if (syno_pool_start(pool, bad->tag, argv, err)) rc = -1;
  }
  free(argv);
  cJSON_Delete(o);
  return rc;
}

static int send_result(const syno_job_t *j, syno_error_t *err) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "tag", (double)j->tag);
  cJSON_AddNumberToObject(o, "slot", j->slot);
  cJSON_AddNumberToObject(o, "end", (double)j->end);
  cJSON_AddNumberToObject(o, "exit_code", j->exit_code);
  cJSON_AddNumberToObject(o, "term_signal", j->term_signal);
  cJSON_AddNumberToObject(o, "started", j->started);
  cJSON_AddNumberToObject(o, "finished", j->finished);
  cJSON_AddStringToObject(o, "out", j->out ? j->out : "");
  cJSON_AddStringToObject(o, "err_tail", j->err_tail);
  return send_json(o, 0, TAG_RESULT, err);
}

int syno_dist_serve(syno_error_t *err) {
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  syno_pool_t *pool;
  if (syno_pool_new(1, 0, &pool, err)) return -1;
  int rc = 0, slot = 0;
  for (;;) {
    int flag = 0;
    MPI_Status st;
    int mrc = MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    if (mrc != MPI_SUCCESS) {
      rc = mpi_error(err, "waiting for the master", mrc);
      break;
    }
    if (flag && st.MPI_TAG == TAG_STOP) {
      MPI_Recv(NULL, 0, MPI_CHAR, 0, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      break; /* the pool's free kills what runs */
    }
    if (flag) {
      char *msg = recv_text(&st, err);
      if (!msg) {
        rc = -1;
        break;
      }
      syno_job_t bad;
      memset(&bad, 0, sizeof bad);
      int r = run_job(pool, msg, &bad, err);
      free(msg);
      slot = bad.slot;
      if (r < 0 || (r == 1 && send_result(&bad, err))) {
        rc = -1;
        break;
      }
      continue;
    }
    if (syno_pool_running(pool) == 0) {
      nap(POLL_S);
      continue;
    }
    syno_job_t *job = NULL;
    int w = syno_pool_wait(pool, POLL_S, &job, err);
    if (w < 0) {
      rc = -1;
      break;
    }
    if (w == 1) {
      job->slot = slot; /* the master's slot, not the local pool's */
      int s = send_result(job, err);
      syno_pool_job_free(job);
      if (s) {
        rc = -1;
        break;
      }
    }
  }
  syno_pool_free(pool);
  return rc;
}

#endif
