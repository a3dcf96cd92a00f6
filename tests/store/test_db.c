/* The results database: records, meta, durability across SIGKILL, and
 * refusal of files that are not ours (left byte-identical). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "syno/store.h"

static char dir[256];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/syno-test-db-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}
static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd);
}

static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static syno_db_cand_t make(const char *text, int failed, double acc) {
  syno_db_cand_t c;
  memset(&c, 0, sizeof c);
  c.op_text = strdup(text);
  c.path = strdup("reduce(C_in) ; contract{C_out}");
  c.status = failed;
  c.reason = failed ? strdup("loss is NaN at step 12") : NULL;
  c.accuracy = acc;
  c.speedup = 1.5;
  c.slots_json = strdup("[{\"c_in\":16}]");
  c.finished_at = 1234.5;
  return c;
}

static void test_roundtrip(void **state) {
  (void)state;
  char p[300];
  path_in(p, sizeof p, "a.db");
  syno_db_t *db;
  syno_error_t err;
  assert_int_not_equal(syno_db_open(p, 0, &db, &err), 0);
  assert_non_null(strstr(err.msg, "no such results database"));
  assert_int_equal(syno_db_open(p, 1, &db, &err), 0);
  assert_int_equal(syno_db_meta_set(db, "seed", "7", &err), 0);
  assert_int_equal(syno_db_meta_set(db, "seed", "8", &err), 0);
  syno_db_cand_t base = make("(standard operator)", 0, 0.9);
  base.is_baseline = 1;
  assert_int_equal(syno_db_insert(db, &base, &err), 0);
  syno_db_cand_t a = make("op-a", 0, 0.8), b = make("op-b", 1, 0);
  assert_int_equal(syno_db_insert(db, &a, &err), 0);
  assert_int_equal(syno_db_insert(db, &b, &err), 0);
  assert_true(b.id > a.id && a.id > base.id);
  syno_db_cand_t dup = make("op-a", 0, 0.1);
  assert_int_not_equal(syno_db_insert(db, &dup, &err), 0);
  assert_non_null(strstr(err.msg, "op-a is already recorded"));
  syno_db_cand_clear(&dup);
  assert_int_equal(syno_db_count(db), 2);
  syno_db_close(db);

  assert_int_equal(syno_db_open(p, 0, &db, &err), 0);
  char *v;
  assert_int_equal(syno_db_meta_get(db, "seed", &v, &err), 1);
  assert_string_equal(v, "8");
  free(v);
  assert_int_equal(syno_db_meta_get(db, "nope", &v, &err), 0);
  syno_db_cand_t f;
  assert_int_equal(syno_db_find(db, "op-b", &f, &err), 1);
  assert_int_equal(f.status, 1);
  assert_string_equal(f.reason, "loss is NaN at step 12");
  assert_string_equal(f.path, b.path);
  syno_db_cand_clear(&f);
  assert_int_equal(syno_db_find(db, "op-c", &f, &err), 0);
  assert_int_equal(syno_db_find(db, "(standard operator)", &f, &err), 0); /* the baseline is not a candidate */
  assert_int_equal(syno_db_baseline(db, &f, &err), 1);
  assert_true(f.accuracy == 0.9);
  syno_db_cand_clear(&f);
  syno_db_cand_t *list;
  int n;
  assert_int_equal(syno_db_list(db, &list, &n, &err), 0);
  assert_int_equal(n, 3);
  assert_int_equal(list[0].is_baseline, 1);
  assert_string_equal(list[1].op_text, "op-a");
  assert_true(list[1].speedup == 1.5 && list[1].finished_at == 1234.5);
  assert_null(list[1].reason);
  /* JSON both ways keeps every field. */
  char *j = syno_db_cand_to_json(&list[2]);
  syno_db_cand_t back;
  assert_int_equal(syno_db_cand_from_json(j, &back, &err), 0);
  char *j2 = syno_db_cand_to_json(&back);
  assert_string_equal(j, j2);
  free(j), free(j2);
  syno_db_cand_clear(&back);
  assert_int_not_equal(syno_db_cand_from_json("[1,2]", &back, &err), 0);
  /* Integers out of range or not whole are refused, not converted (undefined behaviour). */
  const char *bad[] = {"{\"status\": 1e300}", "{\"worker\": -3e9}", "{\"id\": 1e17}", "{\"epochs_done\": 2.5}"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(syno_db_cand_from_json(bad[i], &back, &err), -1);
    assert_non_null(strstr(err.msg, "must be an integer"));
  }
  assert_int_equal(syno_db_cand_from_json("{\"worker\": -2, \"id\": 9007199254740992}", &back, &err), 0);
  assert_int_equal(back.worker, -2);
  syno_db_cand_clear(&back);
  syno_db_list_free(list, n);
  syno_db_close(db);
  syno_db_cand_clear(&base), syno_db_cand_clear(&a), syno_db_cand_clear(&b);
}

/* A row is durable when insert returns, even if the process dies at once. */
static void test_sigkill(void **state) {
  (void)state;
  char p[300];
  path_in(p, sizeof p, "k.db");
  pid_t pid = fork();
  if (pid == 0) {
    syno_db_t *db;
    syno_error_t err;
    if (syno_db_open(p, 1, &db, &err)) _exit(3);
    for (int i = 0; i < 5; i++) {
      char t[32];
      snprintf(t, sizeof t, "op-%d", i);
      syno_db_cand_t c = make(t, 0, 0.5);
      if (syno_db_insert(db, &c, &err)) _exit(4);
    }
    kill(getpid(), SIGKILL);
    _exit(5);
  }
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFSIGNALED(st));
  syno_db_t *db;
  syno_error_t err;
  /* The rows are in the -wal file the writer left: a reader sees them too (the check and
   * the read go through SQLite's WAL-aware reader, not the main file alone). */
  char wal[320];
  snprintf(wal, sizeof wal, "%s-wal", p);
  assert_int_equal(access(wal, F_OK), 0);
  assert_int_equal(syno_db_open(p, SYNO_DB_READONLY, &db, &err), 0);
  assert_int_equal(syno_db_count(db), 5);
  syno_db_close(db);
  assert_int_equal(syno_db_open(p, 0, &db, &err), 0);
  assert_int_equal(syno_db_count(db), 5);
  syno_db_cand_t f;
  assert_int_equal(syno_db_find(db, "op-4", &f, &err), 1);
  syno_db_cand_clear(&f);
  syno_db_close(db);
}

static char *slurp(const char *p, size_t *n) {
  FILE *f = fopen(p, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc(*n + 1);
  assert_int_equal(fread(b, 1, *n, f), *n);
  fclose(f);
  return b;
}

static void expect_refused(const char *p, const char *why) {
  size_t n0, n1;
  char *before = slurp(p, &n0);
  syno_db_t *db;
  syno_error_t err;
  assert_int_not_equal(syno_db_open(p, 1, &db, &err), 0);
  assert_non_null(strstr(err.msg, p));
  assert_non_null(strstr(err.msg, why));
  char *after = slurp(p, &n1);
  assert_int_equal(n0, n1);
  assert_memory_equal(before, after, n0);
  free(before), free(after);
}

static void make_sqlite(const char *p, const char *sql) {
  sqlite3 *h;
  assert_int_equal(sqlite3_open(p, &h), SQLITE_OK);
  assert_int_equal(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(h);
}

static void test_refusals(void **state) {
  (void)state;
  char p[300];
  path_in(p, sizeof p, "junk.db");
  FILE *f = fopen(p, "wb");
  for (int i = 0; i < 3000; i++) fputc((i * 7919) & 0xff, f);
  fclose(f);
  expect_refused(p, "not an SQLite file");

  path_in(p, sizeof p, "foreign.db");
  make_sqlite(p, "CREATE TABLE t(x); INSERT INTO t VALUES(1);");
  expect_refused(p, "another application");

  path_in(p, sizeof p, "newer.db");
  syno_db_t *db;
  syno_error_t err;
  assert_int_equal(syno_db_open(p, 1, &db, &err), 0);
  syno_db_close(db);
  make_sqlite(p, "PRAGMA user_version = 99;");
  expect_refused(p, "newer");
}

/* A confirmation goes into its row's confirmation columns and nowhere else. */
static void test_confirm(void **state) {
  (void)state;
  char p[300];
  path_in(p, sizeof p, "c.db");
  syno_db_t *db;
  syno_error_t err;
  assert_int_equal(syno_db_open(p, 1, &db, &err), 0);
  syno_db_cand_t a = make("op-a", 0, 0.8), b = make("op-b", 0, 0.7);
  a.epochs_done = 2;
  assert_int_equal(syno_db_insert(db, &a, &err), 0);
  assert_int_equal(syno_db_insert(db, &b, &err), 0);
  syno_db_cand_t c = {.id = a.id, .confirmed = 1, .confirmed_accuracy = 0.85, .confirm_seconds = 12.5};
  assert_int_equal(syno_db_confirm(db, &c, &err), 0);
  c = (syno_db_cand_t){.id = b.id, .confirmed = -1, .confirm_reason = "timeout after 600 s"};
  assert_int_equal(syno_db_confirm(db, &c, &err), 0);
  c.id = 999;
  assert_int_not_equal(syno_db_confirm(db, &c, &err), 0);
  assert_non_null(strstr(err.msg, "no candidate 999"));
  syno_db_close(db);

  assert_int_equal(syno_db_open(p, 0, &db, &err), 0);
  syno_db_cand_t f;
  assert_int_equal(syno_db_find(db, "op-a", &f, &err), 1);
  assert_int_equal(f.confirmed, 1);
  assert_true(f.confirmed_accuracy == 0.85 && f.confirm_seconds == 12.5 && f.accuracy == 0.8);
  assert_int_equal(f.epochs_done, 2);
  assert_null(f.confirm_reason);
  syno_db_cand_clear(&f);
  assert_int_equal(syno_db_find(db, "op-b", &f, &err), 1);
  assert_int_equal(f.confirmed, -1);
  assert_string_equal(f.confirm_reason, "timeout after 600 s");
  assert_true(f.accuracy == 0.7);
  syno_db_cand_clear(&f);
  syno_db_close(db);
  syno_db_cand_clear(&a), syno_db_cand_clear(&b);
}

/* A results database written by schema version 1 (before epochs_done and the confirmation
 * columns), byte for byte as that version made it. */
static const char *schema1 =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE candidates(id INTEGER PRIMARY KEY AUTOINCREMENT, is_baseline INTEGER, op_text TEXT, path TEXT,"
    " status INTEGER, reason TEXT, accuracy REAL, final_accuracy REAL, train_loss REAL, flops REAL, params REAL,"
    " flops_ratio REAL, train_seconds REAL, latency_s REAL, base_latency_s REAL, base_impl TEXT,"
    " nnconv_latency_s REAL, speedup REAL, speedup_nnconv REAL, slots_json TEXT, reward REAL, worker INTEGER,"
    " started_at REAL, finished_at REAL);"
    "CREATE UNIQUE INDEX candidates_op ON candidates(is_baseline, op_text);"
    "INSERT INTO meta VALUES('backbone', 'resnet');"
    "INSERT INTO candidates(is_baseline, op_text, path, status, accuracy, flops, latency_s, base_latency_s, speedup,"
    " reward) VALUES(1, '(standard operator)', '', 0, 0.9, 3e6, 2e-4, 2e-4, 1, 0);"
    "INSERT INTO candidates(is_baseline, op_text, path, status, accuracy, flops, latency_s, base_latency_s, speedup,"
    " reward) VALUES(0, 'op-old', 'p', 0, 0.85, 1e6, 1e-4, 2e-4, 2, 0.5);"
    "PRAGMA application_id = 1398361679;" /* 0x53594E4F */
    "PRAGMA user_version = 1;";

/* An old database opens: it is upgraded in place, keeps its rows, reads epochs_done -1
 * (unknown) and no confirmation, takes new rows and confirmations, and `syno report` reads it. */
static void test_upgrade(void **state) {
  (void)state;
  char p[300];
  path_in(p, sizeof p, "v1.db");
  make_sqlite(p, schema1);
  syno_db_t *db;
  syno_error_t err;
  assert_int_equal(syno_db_open(p, 0, &db, &err), 0);
  syno_db_cand_t *list;
  int n;
  assert_int_equal(syno_db_list(db, &list, &n, &err), 0);
  assert_int_equal(n, 2);
  assert_string_equal(list[1].op_text, "op-old");
  assert_true(list[1].accuracy == 0.85 && list[1].speedup == 2 && list[1].reward == 0.5);
  assert_int_equal(list[1].epochs_done, -1);
  assert_int_equal(list[1].confirmed, 0);
  syno_db_cand_t c = {.id = list[1].id, .confirmed = 1, .confirmed_accuracy = 0.86};
  assert_int_equal(syno_db_confirm(db, &c, &err), 0);
  syno_db_list_free(list, n);
  /* By reward the order would be op-new, op-old, op-c; confirmed first, by confirmed accuracy,
   * it is op-c, op-old, op-new. */
  syno_db_cand_t a = make("op-new", 0, 0.8), b = make("op-c", 0, 0.6);
  a.reward = 0.9, b.reward = 0.1;
  assert_int_equal(syno_db_insert(db, &a, &err), 0);
  assert_int_equal(syno_db_insert(db, &b, &err), 0);
  c = (syno_db_cand_t){.id = b.id, .confirmed = 1, .confirmed_accuracy = 0.95};
  assert_int_equal(syno_db_confirm(db, &c, &err), 0);
  syno_db_cand_clear(&a), syno_db_cand_clear(&b);
  syno_db_close(db);

  sqlite3 *h;
  sqlite3_stmt *q;
  assert_int_equal(sqlite3_open(p, &h), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA user_version", -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(q, 0), SYNO_DB_SCHEMA_VERSION);
  sqlite3_finalize(q);
  sqlite3_close(h);

  /* The report of the upgraded file: every row, the confirmed ones ranked first. */
  const char *bin = getenv("SYNO_BIN");
  if (!bin) return;
  char cmd[1024], out[300];
  path_in(out, sizeof out, "v1.json");
  snprintf(cmd, sizeof cmd, "'%s' report --db '%s' --json --out '%s' > '%s' 2>/dev/null", bin, p, dir, out);
  assert_int_equal(system(cmd), 0);
  size_t len;
  char *json = slurp(out, &len);
  assert_non_null(strstr(json, "\"op_text\":\"op-old\""));
  assert_non_null(strstr(json, "\"confirmed_accuracy\":0.86"));
  assert_non_null(strstr(json, "\"ranked_ids\":[4,2,3]"));
  assert_non_null(strstr(json, "\"best_confirmed_accuracy\":0.95"));
  free(json);
}

static int exists(const char *p) { return access(p, F_OK) == 0; }

/* A database with a damaged page is refused, read only or not, by quick_check, and left byte
 * for byte as it was, with no -wal or -shm file made beside it. */
static void test_damaged(void **state) {
  (void)state;
  char p[300], side[320];
  path_in(p, sizeof p, "damaged.db");
  syno_db_t *db;
  syno_error_t err;
  assert_int_equal(syno_db_open(p, SYNO_DB_CREATE, &db, &err), 0);
  for (int i = 0; i < 40; i++) {
    char name[32];
    snprintf(name, sizeof name, "op-%d", i);
    syno_db_cand_t c = make(name, i % 3 == 0, 0.5);
    assert_int_equal(syno_db_insert(db, &c, &err), 0);
    syno_db_cand_clear(&c);
  }
  syno_db_close(db);
  /* Scribble over the candidates table's pages past the header (page 1). */
  size_t n;
  char *b = slurp(p, &n);
  assert_true(n > 3 * 4096);
  for (size_t i = 4096 + 8; i < n; i += 7) b[i] = (char)0xA5;
  FILE *f = fopen(p, "wb");
  assert_int_equal(fwrite(b, 1, n, f), n);
  fclose(f);
  free(b);
  int flags[] = {0, SYNO_DB_READONLY, SYNO_DB_CREATE};
  for (int i = 0; i < 3; i++) {
    b = slurp(p, &n);
    assert_int_not_equal(syno_db_open(p, flags[i], &db, &err), 0);
    assert_non_null(strstr(err.msg, "is damaged (SQLite's quick_check: "));
    assert_null(strchr(err.msg, '\n'));
    size_t n2;
    char *after = slurp(p, &n2);
    assert_int_equal(n, n2);
    assert_memory_equal(b, after, n);
    free(b), free(after);
    snprintf(side, sizeof side, "%s-wal", p);
    assert_false(exists(side));
    snprintf(side, sizeof side, "%s-shm", p);
    assert_false(exists(side));
  }
}

/* Read only: an old schema is read as it is (the newer columns at their old values), not
 * upgraded; nothing is written, the file and its directory stay as they were. */
static void test_readonly(void **state) {
  (void)state;
  char p[300], side[320];
  path_in(p, sizeof p, "v1ro.db");
  make_sqlite(p, schema1);
  size_t n0, n1;
  char *before = slurp(p, &n0);
  syno_db_t *db;
  syno_error_t err;
  assert_int_equal(syno_db_open(p, SYNO_DB_READONLY, &db, &err), 0);
  syno_db_cand_t *list;
  int n;
  assert_int_equal(syno_db_list(db, &list, &n, &err), 0);
  assert_int_equal(n, 2);
  assert_string_equal(list[1].op_text, "op-old");
  assert_int_equal(list[1].epochs_done, -1);
  assert_int_equal(list[1].confirmed, 0);
  syno_db_list_free(list, n);
  syno_db_cand_t c = make("op-new", 0, 0.8);
  assert_int_not_equal(syno_db_insert(db, &c, &err), 0);
  syno_db_cand_clear(&c);
  syno_db_close(db);
  char *after = slurp(p, &n1);
  assert_int_equal(n0, n1);
  assert_memory_equal(before, after, n0);
  free(before), free(after);
  snprintf(side, sizeof side, "%s-wal", p);
  assert_false(exists(side));
  snprintf(side, sizeof side, "%s-shm", p);
  assert_false(exists(side));
  /* Not there: refused, not made. */
  path_in(p, sizeof p, "absent.db");
  assert_int_not_equal(syno_db_open(p, SYNO_DB_READONLY, &db, &err), 0);
  assert_false(exists(p));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_roundtrip), cmocka_unit_test(test_sigkill), cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_confirm),   cmocka_unit_test(test_upgrade), cmocka_unit_test(test_damaged),
      cmocka_unit_test(test_readonly),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
