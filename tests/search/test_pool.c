/* The worker pool: output collection, exit statuses, signals, timeouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "syno/pool.h"

static syno_job_t *run_one(syno_pool_t *p, const char *script) {
  char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
  syno_error_t err;
  assert_int_equal(syno_pool_start(p, 7, argv, &err), 0);
  syno_job_t *j = NULL;
  assert_int_equal(syno_pool_wait(p, 20.0, &j, &err), 1);
  assert_non_null(j);
  assert_int_equal(j->tag, 7);
  return j;
}

static void test_output_and_status(void **state) {
  (void)state;
  syno_pool_t *p;
  syno_error_t err;
  assert_int_equal(syno_pool_new(1, 10.0, &p, &err), 0);
  syno_job_t *j = run_one(p, "i=0; while [ $i -lt 3000 ]; do echo line$i; i=$((i+1)); done; echo oops >&2; exit 3");
  assert_int_equal(j->end, SYNO_JOB_EXITED);
  assert_int_equal(j->exit_code, 3);
  assert_non_null(strstr(j->out, "line0\nline1\n"));
  assert_non_null(strstr(j->out, "line2999\n"));
  char d[256];
  syno_pool_job_describe(j, 10.0, "worker", d, sizeof d);
  assert_string_equal(d, "worker exit status 3: oops");
  syno_pool_job_free(j);
  syno_pool_free(p);
}

static void test_signal(void **state) {
  (void)state;
  syno_pool_t *p;
  syno_error_t err;
  assert_int_equal(syno_pool_new(1, 10.0, &p, &err), 0);
  syno_job_t *j = run_one(p, "echo partial; kill -SEGV $$");
  assert_int_equal(j->end, SYNO_JOB_SIGNALED);
  assert_int_equal(j->term_signal, SIGSEGV);
  assert_string_equal(j->out, "partial\n");
  syno_pool_job_free(j);
  syno_pool_free(p);
}

static void test_timeout(void **state) {
  (void)state;
  syno_pool_t *p;
  syno_error_t err;
  assert_int_equal(syno_pool_new(1, 0.3, &p, &err), 0);
  syno_job_t *j = run_one(p, "sleep 30");
  assert_int_equal(j->end, SYNO_JOB_TIMEOUT);
  assert_true(j->finished - j->started < 10.0);
  char d[256];
  syno_pool_job_describe(j, 0.3, "worker", d, sizeof d);
  assert_non_null(strstr(d, "timeout"));
  syno_pool_job_free(j);
  syno_pool_free(p);
}

static void test_parallel_and_full(void **state) {
  (void)state;
  syno_pool_t *p;
  syno_error_t err;
  assert_int_equal(syno_pool_new(2, 10.0, &p, &err), 0);
  char *slow[] = {"/bin/sh", "-c", "sleep 0.4; echo slow", NULL};
  char *fast[] = {"/bin/sh", "-c", "echo fast", NULL};
  assert_int_equal(syno_pool_start(p, 1, slow, &err), 0);
  assert_int_equal(syno_pool_start(p, 2, fast, &err), 0);
  assert_int_equal(syno_pool_free_slots(p), 0);
  assert_int_not_equal(syno_pool_start(p, 3, fast, &err), 0);
  assert_non_null(strstr(err.msg, "busy"));
  syno_job_t *j;
  assert_int_equal(syno_pool_wait(p, 20.0, &j, &err), 1);
  assert_int_equal(j->tag, 2);
  syno_pool_job_free(j);
  /* A short wait returns 0 while the slow job runs. */
  assert_int_equal(syno_pool_wait(p, 0.01, &j, &err), 0);
  assert_int_equal(syno_pool_wait(p, 20.0, &j, &err), 1);
  assert_int_equal(j->tag, 1);
  assert_string_equal(j->out, "slow\n");
  syno_pool_job_free(j);
  assert_int_equal(syno_pool_running(p), 0);
  /* Missing program: exit 127 with the reason on stderr. */
  char *missing[] = {"/nonexistent/syno-worker", NULL};
  assert_int_equal(syno_pool_start(p, 4, missing, &err), 0);
  assert_int_equal(syno_pool_wait(p, 20.0, &j, &err), 1);
  assert_int_equal(j->exit_code, 127);
  assert_non_null(strstr(j->err_tail, "cannot run /nonexistent/syno-worker"));
  syno_pool_job_free(j);
  /* Freeing a pool kills what still runs. */
  assert_int_equal(syno_pool_start(p, 5, slow, &err), 0);
  syno_pool_free(p);
}

/* A transport that runs nothing: it remembers what it was asked and answers what the test
 * queues, so the remote pool's own bookkeeping is what is tested. */
typedef struct {
  int started[4];
  long tag[4];
  double timeout[4];
  int answer_slot; /* the slot of the next answer; -1: none */
  int stopped, freed;
} fake_t;

static int fake_start(void *self, int slot, long tag, char *const *argv, double timeout_s, syno_error_t *err) {
  (void)argv, (void)err;
  fake_t *f = self;
  f->started[slot]++;
  f->tag[slot] = tag;
  f->timeout[slot] = timeout_s;
  return 0;
}

static int fake_wait(void *self, double timeout_s, syno_job_t **job, syno_error_t *err) {
  (void)timeout_s, (void)err;
  fake_t *f = self;
  if (f->answer_slot < 0) return 0;
  syno_job_t *j = calloc(1, sizeof *j);
  j->slot = f->answer_slot;
  j->tag = f->tag[f->answer_slot];
  j->out = strdup("{}");
  f->answer_slot = -1;
  *job = j;
  return 1;
}

static void fake_stop(void *self) { ((fake_t *)self)->stopped++; }
static void fake_free(void *self) { ((fake_t *)self)->freed++; }

static void test_remote(void **state) {
  (void)state;
  fake_t f = {.answer_slot = -1};
  syno_pool_transport_t t = {
      .size = 2, .self = &f, .start = fake_start, .wait = fake_wait, .stop = fake_stop, .free = fake_free};
  syno_pool_t *p;
  syno_error_t err;
  assert_int_equal(syno_pool_new_remote(&t, 30.0, &p, &err), 0);
  assert_int_equal(syno_pool_size(p), 2);
  char *argv[] = {"/bin/true", NULL};
  assert_int_equal(syno_pool_start(p, 10, argv, &err), 0);
  syno_pool_set_timeout(p, 60.0);
  assert_int_equal(syno_pool_start(p, 11, argv, &err), 0);
  assert_int_equal(f.started[0] + f.started[1], 2);
  assert_true(f.timeout[0] == 30.0 && f.timeout[1] == 60.0);
  assert_int_equal(syno_pool_free_slots(p), 0);
  assert_int_equal(syno_pool_start(p, 12, argv, &err), -1); /* full */
  syno_job_t *j = NULL;
  assert_int_equal(syno_pool_wait(p, 0.0, &j, &err), 0); /* nothing answered */
  f.answer_slot = 1;
  assert_int_equal(syno_pool_wait(p, 1.0, &j, &err), 1);
  assert_int_equal(j->tag, 11);
  syno_pool_job_free(j);
  assert_int_equal(syno_pool_running(p), 1);
  /* An answer for a slot that runs nothing is an error, not a freed slot. */
  f.answer_slot = 1;
  assert_int_equal(syno_pool_wait(p, 1.0, &j, &err), -1);
  assert_non_null(strstr(err.msg, "slot 1"));
  assert_int_equal(syno_pool_running(p), 1);
  syno_pool_free(p);
  assert_int_equal(f.stopped, 1);
  assert_int_equal(f.freed, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_output_and_status), cmocka_unit_test(test_signal), cmocka_unit_test(test_timeout),
      cmocka_unit_test(test_parallel_and_full), cmocka_unit_test(test_remote),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
