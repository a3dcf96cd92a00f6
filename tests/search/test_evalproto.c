/* The search <-> worker protocol: requests through argv and back, replies
 * parsed into records, failures and malformed replies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/evalproto.h"

/* A request with every field away from its default. */
static void full_request(syno_evalreq_t *r) {
  syno_evalreq_default(r);
  r->exe = "/opt/syno/bin/syno";
  r->backbone = "vgg";
  r->dataset = "fashion-mnist";
  r->epochs = 3;
  r->batch = 32;
  r->lr = 0.05;
  r->seed = 18446744073709551557ull; /* above 2^53: must not go through a double */
  r->width = 0.25;
  r->depth = 2;
  r->subset = 300;
  r->pad = 2;
  r->time_limit = 540.5;
  r->threads = 3;
  r->latency_batch = 4;
  r->repeats = 7;
  r->latency_threads = 2;
  r->kernels = "best";
  r->min_speedup = 1.25;
  r->confirm = 1;
  r->op_text = "r0=sum(C_in); in[i0, share(r0, 1), i2, i3] expand[share(i1, 1)] w1[r0, i1]";
}

static void assert_same_request(const syno_evalreq_t *a, const syno_evalreq_t *b) {
  assert_string_equal(a->backbone, b->backbone);
  assert_string_equal(a->dataset, b->dataset);
  assert_int_equal(a->epochs, b->epochs);
  assert_int_equal(a->batch, b->batch);
  assert_true(a->lr == b->lr);
  assert_true(a->seed == b->seed);
  assert_true(a->width == b->width);
  assert_int_equal(a->depth, b->depth);
  assert_int_equal(a->subset, b->subset);
  assert_int_equal(a->pad, b->pad);
  assert_true(a->time_limit == b->time_limit);
  assert_int_equal(a->threads, b->threads);
  assert_int_equal(a->latency_batch, b->latency_batch);
  assert_int_equal(a->repeats, b->repeats);
  assert_int_equal(a->latency_threads, b->latency_threads);
  assert_string_equal(a->kernels, b->kernels);
  assert_true(a->min_speedup == b->min_speedup);
  assert_int_equal(a->confirm, b->confirm);
  if (a->op_text || b->op_text) {
    assert_non_null(a->op_text);
    assert_non_null(b->op_text);
    assert_string_equal(a->op_text, b->op_text);
  }
  assert_int_equal(a->plan, b->plan);
}

/* argv -> request, as `syno eval` reads it (argv[1] onwards). */
static int read_back(const syno_evalargv_t *a, syno_evalreq_t *r, syno_error_t *err) {
  syno_evalreq_default(r);
  char *copy[SYNO_EVALREQ_MAX_ARGS];
  memcpy(copy, a->argv, sizeof copy);
  return syno_evalreq_from_argv(a->argc - 1, copy + 1, r, err);
}

static void test_round_trip(void **state) {
  (void)state;
  syno_evalreq_t r, back;
  syno_evalargv_t a;
  syno_error_t err;
  full_request(&r);
  assert_int_equal(syno_evalreq_argv(&r, &a, &err), 0);
  assert_string_equal(a.argv[0], r.exe);
  assert_string_equal(a.argv[1], "eval");
  assert_null(a.argv[a.argc]);
  assert_int_equal(read_back(&a, &back, &err), 0);
  assert_same_request(&r, &back);

  /* The plan request and the baseline (no --op) too. */
  r.op_text = NULL;
  r.plan = 1;
  r.confirm = 0;
  assert_int_equal(syno_evalreq_argv(&r, &a, &err), 0);
  assert_string_equal(a.argv[a.argc - 1], "--plan");
  assert_int_equal(read_back(&a, &back, &err), 0);
  assert_null(back.op_text);
  assert_same_request(&r, &back);

  /* A default request reads back as the defaults. */
  syno_evalreq_default(&r);
  r.exe = "syno";
  assert_int_equal(syno_evalreq_argv(&r, &a, &err), 0);
  assert_int_equal(read_back(&a, &back, &err), 0);
  assert_same_request(&r, &back);

  /* Without a worker program there is no command line. */
  r.exe = NULL;
  assert_int_equal(syno_evalreq_argv(&r, &a, &err), -1);
  assert_non_null(strstr(err.msg, "worker program"));
}

/* The command line the search sends for a candidate, word for word. */
static void test_search_command_line(void **state) {
  (void)state;
  syno_evalreq_t r;
  syno_evalreq_default(&r);
  r.exe = "/x/syno";
  r.epochs = 1;
  r.seed = 3;
  r.width = 0.5;
  r.depth = 1;
  r.subset = 200;
  r.pad = 1;
  r.time_limit = 100 * 0.9;
  r.threads = 2;
  r.op_text = "OP";
  syno_evalargv_t a;
  syno_error_t err;
  assert_int_equal(syno_evalreq_argv(&r, &a, &err), 0);
  const char *want[] = {"/x/syno",   "eval", "--backbone", "resnet", "--dataset",    "digits",
                        "--epochs",  "1",    "--batch",    "64",     "--lr",         "0.10000000000000001",
                        "--seed",    "3",    "--width",    "0.5",    "--depth",      "1",
                        "--subset",  "200",  "--pad",      "1",      "--time-limit", "90",
                        "--threads", "2",    "--op",       "OP"};
  int n = (int)(sizeof want / sizeof *want);
  assert_int_equal(a.argc, n);
  for (int i = 0; i < n; i++) assert_string_equal(a.argv[i], want[i]);
  assert_null(a.argv[n]);
  /* Knobs at 0 are left out; the training settings are always there. */
  r.width = 0, r.depth = 0, r.subset = 0, r.pad = 0, r.time_limit = 0;
  assert_int_equal(syno_evalreq_argv(&r, &a, &err), 0);
  assert_int_equal(a.argc, n - 10);
  for (int i = 0; i < a.argc; i++) {
    assert_string_not_equal(a.argv[i], "--width");
    assert_string_not_equal(a.argv[i], "--time-limit");
  }
  /* The speed-up check off (the baseline's request) is written; a confirmation says so. */
  r.min_speedup = 0;
  r.confirm = 1;
  assert_int_equal(syno_evalreq_argv(&r, &a, &err), 0);
  assert_int_equal(a.argc, n - 10 + 3);
  assert_string_equal(a.argv[a.argc - 5], "--min-speedup");
  assert_string_equal(a.argv[a.argc - 4], "0");
  assert_string_equal(a.argv[a.argc - 1], "--confirm");
  syno_evalreq_t back;
  assert_int_equal(read_back(&a, &back, &err), 0);
  assert_true(back.min_speedup == 0);
  assert_int_equal(back.confirm, 1);
}

static void test_bad_command_lines(void **state) {
  (void)state;
  syno_evalreq_t r;
  syno_error_t err;
  struct {
    char *argv[6];
    const char *msg;
  } bad[] = {
      {{"eval", "--epochs", "two", NULL}, "--epochs two: must be an integer in 1..20000"},
      {{"eval", "--epochs", "4294967297", NULL}, "--epochs 4294967297: must be an integer in 1..20000"},
      {{"eval", "--lr", "0.1x", NULL}, "--lr 0.1x: must be a finite number in (0, 100]"},
      {{"eval", "--lr", "nan", NULL}, "--lr nan: must be a finite number in (0, 100]"},
      {{"eval", "--seed", "", NULL}, "--seed '': must be a non-negative integer"},
      {{"eval", "--seed", "-1", NULL}, "--seed -1: must be a non-negative integer"},
      {{"eval", "--time-limit", "-1", NULL}, "--time-limit -1: must be a finite number in [0, 1000000000]"},
      {{"eval", "--backbone", "bert", NULL},
       "--backbone bert: must be one of resnet18, resnet, resnet34, resnext29, densenet121, efficientnetv2s, vgg, gpt"},
      {{"eval", "--frobnicate", NULL}, "unknown option '--frobnicate'"},
      {{"eval", "--epochs", NULL}, "--epochs: needs a value (an integer in 1..20000)"},
      {{"eval", "--plan=1", NULL}, "--plan=1: the flag takes no value"},
      {{"eval", "--op", "A", "B", NULL}, "unexpected argument 'B' (the operator goes after --op)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    int argc = 0;
    while (bad[i].argv[argc]) argc++;
    syno_evalreq_default(&r);
    err.msg[0] = 0;
    assert_int_equal(syno_evalreq_from_argv(argc, bad[i].argv, &r, &err), -1);
    assert_string_equal(err.msg, bad[i].msg);
  }
  char *help[] = {"eval", "--epochs", "3", "--help", NULL};
  assert_int_equal(syno_evalreq_from_argv(4, help, &r, &err), 1);
  char *json[] = {"eval", "--json", "--plan", NULL};
  syno_evalreq_default(&r);
  assert_int_equal(syno_evalreq_from_argv(3, json, &r, &err), 0);
  assert_int_equal(r.plan, 1);
}

static const char *ok_out =
    "some progress the worker printed\n"
    "{\"old\":1}\n"
    "{\"status\":0,\"accuracy\":0.93,\"flops\":1200,\"params\":34,\"speedup\":1.5,\"base_impl\":\"onednn\","
    "\"op_text\":\"OP\",\"reason\":null}\n";

static void test_result_ok(void **state) {
  (void)state;
  syno_db_cand_t rec;
  syno_error_t err;
  assert_int_equal(syno_evalres_parse(ok_out, &rec, &err), 0);
  assert_int_equal(rec.status, 0);
  assert_true(rec.accuracy == 0.93);
  assert_true(rec.flops == 1200 && rec.params == 34 && rec.speedup == 1.5);
  assert_string_equal(rec.base_impl, "onednn");
  assert_null(rec.reason);
  /* The worker's own line for it parses to the same record. */
  char *line = syno_evalres_json(&rec);
  assert_non_null(line);
  assert_null(strchr(line, '\n'));
  syno_db_cand_t again;
  assert_int_equal(syno_evalres_parse(line, &again, &err), 0);
  assert_true(again.accuracy == rec.accuracy && again.flops == rec.flops);
  assert_string_equal(again.op_text, "OP");
  free(line);
  syno_db_cand_clear(&again);
  syno_db_cand_clear(&rec);

  /* A failure the worker reports itself is a valid reply. */
  assert_int_equal(syno_evalres_parse("{\"status\":1,\"reason\":\"loss is NaN\"}\n", &rec, &err), 0);
  assert_int_equal(rec.status, 1);
  assert_string_equal(rec.reason, "loss is NaN");
  assert_false(syno_evalres_too_slow(&rec));
  syno_db_cand_clear(&rec);

  /* A candidate too slow to be trained. */
  assert_int_equal(syno_evalres_parse("{\"status\":1,\"reason\":\"slower than the baseline (0.62x)\","
                                      "\"speedup\":0.62,\"epochs_done\":0}\n",
                                      &rec, &err),
                   0);
  assert_true(syno_evalres_too_slow(&rec));
  assert_true(rec.speedup == 0.62);
  rec.status = 0;
  assert_false(syno_evalres_too_slow(&rec));
  syno_db_cand_clear(&rec);
}

static void test_result_malformed(void **state) {
  (void)state;
  struct {
    const char *out, *msg;
  } bad[] = {
      {"", "the worker printed no result (no line starting with '{')"},
      {"Segmentation fault\n[1,2]\n", "the worker printed no result (no line starting with '{')"},
      {"{\"status\":0,\"accuracy\":\n", "the worker's result is not valid JSON: {\"status\":0,\"accuracy\":"},
      {"{\"status\":0,\"accuracy\":0.5} trailing\n", "the worker's result is not valid JSON"},
      {"{\"accuracy\":0.5}\n", "the worker's result has no number \"status\""},
      {"{\"status\":\"0\",\"accuracy\":0.5}\n", "the worker's result has no number \"status\""},
      {"{\"status\":2}\n", "the worker's result has status 2 (0 ok or 1 failed)"},
      {"{\"status\":0,\"reason\":null}\n", "the worker's result has status 0 but no number \"accuracy\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    syno_db_cand_t rec;
    syno_error_t err;
    err.msg[0] = 0;
    assert_int_equal(syno_evalres_parse(bad[i].out, &rec, &err), -1);
    if (strncmp(err.msg, bad[i].msg, strlen(bad[i].msg)) != 0)
      fail_msg("case %zu: got \"%s\", want \"%s...\"", i, err.msg, bad[i].msg);
    assert_null(rec.reason);
    assert_int_equal(rec.status, 0);
  }
}

static syno_job_t job_of(syno_job_end_t end, int code, const char *out, const char *err_tail) {
  syno_job_t j;
  memset(&j, 0, sizeof j);
  j.end = end;
  j.exit_code = code;
  j.term_signal = end == SYNO_JOB_SIGNALED ? code : 0;
  j.out = (char *)out;
  j.out_len = strlen(out);
  snprintf(j.err_tail, sizeof j.err_tail, "%s", err_tail);
  j.started = 100, j.finished = 160;
  return j;
}

static void test_result_from_job(void **state) {
  (void)state;
  syno_db_cand_t rec;
  syno_job_t j = job_of(SYNO_JOB_EXITED, 0, ok_out, "");
  syno_evalres_from_job(&j, 600, &rec);
  assert_int_equal(rec.status, 0);
  assert_true(rec.accuracy == 0.93);
  assert_true(rec.started_at == 100 && rec.finished_at == 160);
  syno_db_cand_clear(&rec);

  /* A JSON line does not save a worker that failed. */
  j = job_of(SYNO_JOB_EXITED, 3, ok_out, "out of memory\n");
  syno_evalres_from_job(&j, 600, &rec);
  assert_int_equal(rec.status, 1);
  assert_string_equal(rec.reason, "worker exit status 3: out of memory");
  assert_true(rec.finished_at == 160);
  syno_db_cand_clear(&rec);

  j = job_of(SYNO_JOB_TIMEOUT, 0, "", "");
  syno_evalres_from_job(&j, 600, &rec);
  assert_int_equal(rec.status, 1);
  assert_string_equal(rec.reason, "timeout after 600 s");
  syno_db_cand_clear(&rec);

  /* Exit status 0 with a broken reply: the reply's fault, then how it ended. */
  j = job_of(SYNO_JOB_EXITED, 0, "{\"status\":0,\"acc", "warning: something\n");
  syno_evalres_from_job(&j, 600, &rec);
  assert_int_equal(rec.status, 1);
  assert_non_null(rec.reason);
  assert_non_null(strstr(rec.reason, "the worker's result is not valid JSON"));
  assert_non_null(strstr(rec.reason, "(worker exit status 0: warning: something)"));
  syno_db_cand_clear(&rec);
}

static void test_plan(void **state) {
  (void)state;
  /* Conv slots, and linear slots [N, s, c_in] -> [N, s, c_out] told apart by s. */
  syno_evalslot_t slots[] = {{16, 16, 8, 8, 1, 0},   {16, 16, 8, 8, 1, 0},   {16, 32, 4, 4, 2, 0},
                             {32, 32, 4, 4, 3, 0},   {64, 192, 0, 0, 4, 64}, {64, 192, 0, 0, 4, 64},
                             {64, 192, 0, 0, 5, 32}, {16, 16, 8, 8, 0.5, 0}};
  char *s = syno_evalplan_json(slots, 8, 5000, 77);
  assert_non_null(s);
  syno_evalplan_t p;
  syno_error_t err;
  assert_int_equal(syno_evalplan_parse(s, &p, &err), 0);
  free(s);
  /* each repeated slot once; a grouped conv of a full one's shape (other FLOPs) is another */
  assert_int_equal(p.n, 6);
  assert_int_equal(p.slot[5].c_in, 16);
  assert_true(p.slot[5].flops == 0.5);
  assert_int_equal(p.slot[1].c_in, 16);
  assert_int_equal(p.slot[1].c_out, 32);
  assert_int_equal(p.slot[2].h, 4);
  assert_true(p.slot[2].flops == 3);
  assert_int_equal(p.slot[2].s, 0);
  assert_int_equal(p.slot[3].s, 64);
  assert_int_equal(p.slot[3].c_out, 192);
  assert_int_equal(p.slot[4].s, 32);

  struct {
    const char *out, *msg;
  } bad[] = {
      {"nothing\n", "the worker printed no slot plan"},
      {"{\"slots\":[{\"c_in\":1,\n", "the worker's slot plan is not valid JSON"},
      {"{\"slot\":[]}\n", "the worker's slot plan has no \"slots\" array"},
      {"{\"slots\":[]}\n", "the backbone has no operator slots"},
      {"{\"slots\":[{\"c_in\":1,\"c_out\":1,\"h\":2,\"w\":2},{\"c_in\":1,\"c_out\":1,\"h\":2}]}\n",
       "slot 1 of the worker's slot plan has no number \"w\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err.msg[0] = 0;
    assert_int_equal(syno_evalplan_parse(bad[i].out, &p, &err), -1);
    if (strncmp(err.msg, bad[i].msg, strlen(bad[i].msg)) != 0)
      fail_msg("case %zu: got \"%s\", want \"%s...\"", i, err.msg, bad[i].msg);
  }

  /* More distinct shapes than the space has bindings. */
  syno_evalslot_t many[SYNO_MAX_BINDINGS + 1];
  for (int i = 0; i <= SYNO_MAX_BINDINGS; i++) many[i] = (syno_evalslot_t){i + 1, 8, 4, 4, 0, 0};
  s = syno_evalplan_json(many, SYNO_MAX_BINDINGS + 1, 0, 0);
  assert_int_equal(syno_evalplan_parse(s, &p, &err), -1);
  assert_non_null(strstr(err.msg, "more than 32 distinct slot shapes"));
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_search_command_line),
      cmocka_unit_test(test_bad_command_lines),
      cmocka_unit_test(test_result_ok),
      cmocka_unit_test(test_result_malformed),
      cmocka_unit_test(test_result_from_job),
      cmocka_unit_test(test_plan),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
