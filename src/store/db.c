/* The results database: SQLite in WAL mode. See syno/store.h.
 *
 * The record's columns are described once, in `fields`; the schema, its
 * upgrade from an older version, the insert, the select and the JSON
 * conversions are all driven by it. */
#include "syno/store.h"

#include <sys/file.h>
#include <sys/sysmacros.h>
#include <fcntl.h>
#include <math.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "syno/grow.h"

#define SYNO_DB_APPLICATION_ID 0x53594E4F /* "SYNO" */

struct syno_db {
  sqlite3 *h;
  int lock_fd; /* read-write: the file held with flock(LOCK_EX) while open; else -1 */
  char path[1024];
  int version; /* the file's schema version (older files are read as it, when read only) */
};

typedef enum { F_INT, F_LONG, F_REAL, F_TEXT } ftype_t;
typedef struct {
  const char *name;
  ftype_t type;
  size_t off;
  int since;       /* the schema version that added the column */
  const char *old; /* its value in the rows of an older file (SQL), or NULL */
} field_t;

#define FLD(name, type) \
  { #name, type, offsetof(syno_db_cand_t, name), 1, NULL }
#define FLD2(name, type, old) \
  { #name, type, offsetof(syno_db_cand_t, name), 2, old }
#define FLD3(name, type, old) \
  { #name, type, offsetof(syno_db_cand_t, name), 3, old }
#define FLD4(name, type, old) \
  { #name, type, offsetof(syno_db_cand_t, name), 4, old }
static const field_t fields[] = {
    FLD(id, F_LONG),
    FLD(is_baseline, F_INT),
    FLD(op_text, F_TEXT),
    FLD(path, F_TEXT),
    FLD(status, F_INT),
    FLD(reason, F_TEXT),
    FLD(accuracy, F_REAL),
    FLD(final_accuracy, F_REAL),
    FLD(train_loss, F_REAL),
    FLD(flops, F_REAL),
    FLD(params, F_REAL),
    FLD(flops_ratio, F_REAL),
    FLD(train_seconds, F_REAL),
    FLD(latency_s, F_REAL),
    FLD(base_latency_s, F_REAL),
    FLD(base_impl, F_TEXT),
    FLD(nnconv_latency_s, F_REAL),
    FLD(speedup, F_REAL),
    FLD(speedup_nnconv, F_REAL),
    FLD(slots_json, F_TEXT),
    FLD(reward, F_REAL),
    FLD(worker, F_INT),
    FLD(started_at, F_REAL),
    FLD(finished_at, F_REAL),
    FLD2(epochs_done, F_INT, "-1"),
    FLD2(confirmed, F_INT, NULL),
    FLD2(confirmed_accuracy, F_REAL, NULL),
    FLD2(confirm_reason, F_TEXT, NULL),
    FLD2(confirm_seconds, F_REAL, NULL),
    FLD3(perplexity, F_REAL, NULL),
    FLD4(retimed, F_INT, NULL),
    FLD4(retime_latency_s, F_REAL, NULL),
    FLD4(retime_base_latency_s, F_REAL, NULL),
    FLD4(retime_base_impl, F_TEXT, NULL),
    FLD4(retime_nnconv_latency_s, F_REAL, NULL),
    FLD4(retime_speedup, F_REAL, NULL),
    FLD4(retime_speedup_nnconv, F_REAL, NULL),
    FLD4(retime_repeats, F_INT, NULL),
};
#undef FLD
#undef FLD2
#undef FLD3
#undef FLD4
#define NFIELDS ((int)(sizeof fields / sizeof *fields))

#define AT(c, f, T) ((T *)((char *)(c) + (f)->off))

static int db_error(syno_db_t *db, syno_error_t *err, const char *what) {
  return syno_error_set(err, "%s: %s: %s", db->path, what, sqlite3_errmsg(db->h));
}

static int exec_sql(syno_db_t *db, const char *sql, syno_error_t *err) {
  char *msg = NULL;
  if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
    syno_error_set(err, "%s: %s", db->path, msg ? msg : "SQL error");
    sqlite3_free(msg);
    return -1;
  }
  return 0;
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Checks an existing file's header without letting SQLite write to it.
 * Returns 1 for an empty file (a database not yet written), 0 when it is
 * ours, -1 (err set) otherwise. */
static int check_header(const char *path, syno_error_t *err) {
  FILE *f = fopen(path, "rb");
  if (!f) return syno_error_set(err, "%s: cannot open: %s", path, strerror(errno));
  unsigned char h[100];
  size_t n = fread(h, 1, sizeof h, f);
  fclose(f);
  if (n == 0) return 1;
  if (n < sizeof h || memcmp(h, "SQLite format 3", 16) != 0)
    return syno_error_set(err, "%s is not a syno results database (not an SQLite file); refusing to touch it", path);
  if (be32(h + 68) != SYNO_DB_APPLICATION_ID)
    return syno_error_set(
        err, "%s is an SQLite database of another application (application id 0x%08x); refusing to touch it", path,
        be32(h + 68));
  uint32_t v = be32(h + 60);
  if (v > SYNO_DB_SCHEMA_VERSION)
    return syno_error_set(err, "%s has schema version %u, newer than this syno's %d; refusing to touch it", path, v,
                          SYNO_DB_SCHEMA_VERSION);
  if (v < 1) return syno_error_set(err, "%s has no syno schema (version 0); refusing to touch it", path);
  return 0;
}

static const char *sql_type(const field_t *f) {
  return f->type == F_TEXT ? "TEXT" : f->type == F_REAL ? "REAL" : "INTEGER";
}

static int create_schema(syno_db_t *db, syno_error_t *err) {
  char sql[4096];
  int n = snprintf(sql, sizeof sql,
                   "BEGIN;"
                   "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
                   "CREATE TABLE candidates(id INTEGER PRIMARY KEY AUTOINCREMENT");
  for (int i = 1; i < NFIELDS; i++)
    n += snprintf(sql + n, sizeof sql - (size_t)n, ", %s %s", fields[i].name, sql_type(&fields[i]));
  snprintf(sql + n, sizeof sql - (size_t)n,
           ");"
           "CREATE UNIQUE INDEX candidates_op ON candidates(is_baseline, op_text);"
           "PRAGMA application_id = %d;"
           "PRAGMA user_version = %d;"
           "COMMIT;",
           SYNO_DB_APPLICATION_ID, SYNO_DB_SCHEMA_VERSION);
  if (exec_sql(db, sql, err)) return -1;
  /* Put the header (application id, version) into the main file at once, so
   * a search killed now still leaves a file that is recognisably ours. */
  return exec_sql(db, "PRAGMA wal_checkpoint(TRUNCATE);", err);
}

static int user_version(syno_db_t *db) {
  sqlite3_stmt *q;
  int v = -1;
  if (sqlite3_prepare_v2(db->h, "PRAGMA user_version", -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
    v = sqlite3_column_int(q, 0);
  sqlite3_finalize(q);
  return v;
}

/* Brings a file of an older schema to this one: the columns added since,
 * with their value for the old rows, and the new version, in one
 * transaction (another process may have done it meanwhile: then nothing). */
static int upgrade(syno_db_t *db, syno_error_t *err) {
  if (exec_sql(db, "BEGIN IMMEDIATE;", err)) return syno_error_prefix(err, "upgrading the schema");
  int v = user_version(db);
  if (v >= SYNO_DB_SCHEMA_VERSION) return exec_sql(db, "COMMIT;", err);
  char sql[4096];
  int n = 0;
  for (int i = 0; i < NFIELDS; i++)
    if (fields[i].since > v)
      n += snprintf(sql + n, sizeof sql - (size_t)n, "ALTER TABLE candidates ADD COLUMN %s %s%s%s;", fields[i].name,
                    sql_type(&fields[i]), fields[i].old ? " DEFAULT " : "", fields[i].old ? fields[i].old : "");
  snprintf(sql + n, sizeof sql - (size_t)n, "PRAGMA user_version = %d; COMMIT;", SYNO_DB_SCHEMA_VERSION);
  if (exec_sql(db, sql, err)) {
    syno_error_t ignored;
    exec_sql(db, "ROLLBACK;", &ignored);
    return syno_error_prefix(err, "upgrading the schema from version %d", v);
  }
  return 0;
}

/* "file:" and the path with every byte but the unreserved ones percent-encoded, for
 * sqlite3_open_v2's URI form. */
static void file_uri(const char *path, const char *query, char *buf, size_t n) {
  static const char hex[] = "0123456789ABCDEF";
  size_t k = (size_t)snprintf(buf, n, "file:");
  for (const unsigned char *p = (const unsigned char *)path; *p && k + 4 < n; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("/._~-", *p))
      buf[k++] = (char)*p;
    else {
      buf[k++] = '%';
      buf[k++] = hex[*p >> 4];
      buf[k++] = hex[*p & 15];
    }
  }
  snprintf(buf + k, n - k, "%s", query);
}

/* Opens an existing file through a URI with `query` ("?immutable=1", "?mode=ro"). */
static int open_uri(syno_db_t *db, const char *query, int flags) {
  char uri[3200];
  file_uri(db->path, query, uri, sizeof uri);
  return sqlite3_open_v2(uri, &db->h, flags | SQLITE_OPEN_URI, NULL);
}

/* PRAGMA quick_check on an open connection: 0 when the file is sound, -1 (err set) when
 * SQLite finds it damaged. */
static int quick_check(syno_db_t *db, syno_error_t *err) {
  sqlite3_stmt *q;
  int rc = sqlite3_prepare_v2(db->h, "PRAGMA quick_check", -1, &q, NULL), bad = 0;
  char first[200] = "";
  if (rc == SQLITE_OK) {
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
      /* Each row is a problem; a row may hold several lines under a "*** in database main
       * ***" header. The message keeps the first problem's first line. */
      const char *m = (const char *)sqlite3_column_text(q, 0);
      if (!m || !strcmp(m, "ok") || bad++) continue;
      if (!strncmp(m, "***", 3) && strchr(m, '\n')) m = strchr(m, '\n') + 1;
      snprintf(first, sizeof first, "%.*s", (int)strcspn(m, "\n"), m);
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
  }
  if (rc != SQLITE_OK && !bad) snprintf(first, sizeof first, "%s", sqlite3_errmsg(db->h));
  sqlite3_finalize(q);
  if (rc == SQLITE_OK && !bad) return 0;
  return syno_error_set(err, "%s is damaged (SQLite's quick_check: %s); refusing to use it", db->path, first);
}

static int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* How to read an existing file without writing to it. Without a -wal file beside it nothing
 * is being written and everything is in the file: immutable (no locks, no -wal or -shm file
 * made). With one (a search running, or killed), as SQLite's readers do, so that the WAL's
 * pages are seen and a checkpoint in progress is not read half-way. */
static const char *read_query(const char *path) {
  char wal[1100];
  snprintf(wal, sizeof wal, "%s-wal", path);
  return file_exists(wal) ? "?mode=ro" : "?immutable=1";
}

/* The check of an existing file before anything else opens it: read only (read_query),
 * quick_check. 0 or -1. */
static int check_sound(syno_db_t *db, syno_error_t *err) {
  if (open_uri(db, read_query(db->path), SQLITE_OPEN_READONLY) != SQLITE_OK) {
    db_error(db, err, "cannot open");
    sqlite3_close(db->h);
    db->h = NULL;
    return -1;
  }
  int rc = quick_check(db, err);
  sqlite3_close(db->h);
  db->h = NULL;
  return rc;
}

/* A new file that failed half-way is removed again, with SQLite's companions. */
static void remove_new(const char *path) {
  char side[1100];
  unlink(path);
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-journal", path);
  unlink(side);
}

/* The pid holding a flock on the file open as fd (from /proc/locks), or 0 when unknown. */
static long lock_holder(int fd) {
  struct stat st;
  FILE *f = fstat(fd, &st) == 0 ? fopen("/proc/locks", "r") : NULL;
  long pid = 0;
  char line[256];
  while (f && !pid && fgets(line, sizeof line, f)) {
    char kind[16];
    long p;
    unsigned maj, min;
    unsigned long ino;
    if (sscanf(line, "%*d: %15s %*s %*s %ld %x:%x:%lu", kind, &p, &maj, &min, &ino) == 5 && !strcmp(kind, "FLOCK") &&
        ino == (unsigned long)st.st_ino && maj == major(st.st_dev) && min == minor(st.st_dev))
      pid = p;
  }
  if (f) fclose(f);
  return pid;
}

/* One writer at a time: the file is held with flock (which SQLite's own fcntl locks do not
 * see) while it is open for writing; a second writer is refused, naming the first's pid. */
static int take_lock(syno_db_t *db, syno_error_t *err) {
  db->lock_fd = open(db->path, O_RDONLY | O_CLOEXEC);
  if (db->lock_fd < 0) return syno_error_set(err, "%s: cannot open: %s", db->path, strerror(errno));
  if (flock(db->lock_fd, LOCK_EX | LOCK_NB) == 0) return 0;
  int e = errno;
  long pid = e == EWOULDBLOCK ? lock_holder(db->lock_fd) : 0;
  close(db->lock_fd);
  db->lock_fd = -1;
  if (e != EWOULDBLOCK) return syno_error_set(err, "%s: cannot lock: %s", db->path, strerror(e));
  if (pid > 0)
    return syno_error_set(err, "%s is in use by another search (pid %ld); wait for it to end, or stop it first",
                          db->path, pid);
  return syno_error_set(err, "%s is in use by another search; wait for it to end, or stop it first", db->path);
}

int syno_db_in_use(const char *path, syno_error_t *err) {
  syno_db_t probe = {.lock_fd = -1};
  snprintf(probe.path, sizeof probe.path, "%s", path);
  if (take_lock(&probe, err)) return -1;
  close(probe.lock_fd);
  return 0;
}

int syno_db_open(const char *path, int flags, syno_db_t **out, syno_error_t *err) {
  *out = NULL;
  int create = (flags & SYNO_DB_CREATE) != 0, readonly = (flags & SYNO_DB_READONLY) != 0;
  if (create && readonly) return syno_error_set(err, "%s: a database is not created read only", path);
  struct stat st;
  int fresh = 0, made = 0; /* made: this call creates the file */
  if (stat(path, &st) != 0) {
    if (!create) return syno_error_set(err, "%s: no such results database", path);
    fresh = made = 1;
  } else {
    if (!S_ISREG(st.st_mode)) return syno_error_set(err, "%s is not a regular file", path);
    int r = check_header(path, err);
    if (r < 0) return -1;
    if (r == 1) {
      if (!create) return syno_error_set(err, "%s is empty, not a syno results database", path);
      fresh = 1;
    }
  }
  syno_db_t *db = calloc(1, sizeof *db);
  if (!db) return syno_error_set(err, "out of memory");
  db->lock_fd = -1;
  snprintf(db->path, sizeof db->path, "%s", path);
  if (!fresh && check_sound(db, err)) {
    free(db);
    return -1;
  }
  int rc;
  if (readonly)
    rc = open_uri(db, read_query(path), SQLITE_OPEN_READONLY);
  else
    rc = sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE | (fresh ? SQLITE_OPEN_CREATE : 0), NULL);
  if (rc != SQLITE_OK) {
    db_error(db, err, "cannot open");
    syno_db_close(db);
    if (made) remove_new(path);
    return -1;
  }
  sqlite3_busy_timeout(db->h, 10000);
  if (!readonly &&
      (exec_sql(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", err) || (fresh && create_schema(db, err)))) {
    syno_db_close(db);
    if (made) remove_new(path);
    return -1;
  }
  if (!readonly && take_lock(db, err)) {
    syno_db_close(db);
    return -1;
  }
  /* The tables must be there too (a syno file of a newer layout would have
   * failed the version check above). */
  sqlite3_stmt *q;
  int tables = 0;
  if (sqlite3_prepare_v2(db->h,
                         "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN ('meta','candidates')", -1,
                         &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    tables = sqlite3_column_int(q, 0);
  sqlite3_finalize(q);
  if (tables != 2) {
    syno_error_set(err, "%s lacks the syno tables; refusing to use it", path);
    syno_db_close(db);
    return -1;
  }
  db->version = user_version(db);
  if (!readonly && db->version < SYNO_DB_SCHEMA_VERSION) {
    if (upgrade(db, err)) {
      syno_db_close(db);
      return -1;
    }
    db->version = SYNO_DB_SCHEMA_VERSION;
  }
  *out = db;
  return 0;
}

void syno_db_close(syno_db_t *db) {
  if (db && db->lock_fd >= 0) close(db->lock_fd);
  if (!db) return;
  sqlite3_close(db->h);
  free(db);
}

int syno_db_meta_set(syno_db_t *db, const char *key, const char *value, syno_error_t *err) {
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(db->h, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", -1, &q, NULL) != SQLITE_OK)
    return db_error(db, err, "meta");
  sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(q, 2, value ? value : "", -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(q) == SQLITE_DONE ? 0 : db_error(db, err, "writing meta");
  sqlite3_finalize(q);
  return rc;
}

int syno_db_meta_get(syno_db_t *db, const char *key, char **value, syno_error_t *err) {
  sqlite3_stmt *q;
  *value = NULL;
  if (sqlite3_prepare_v2(db->h, "SELECT value FROM meta WHERE key = ?", -1, &q, NULL) != SQLITE_OK)
    return db_error(db, err, "meta");
  sqlite3_bind_text(q, 1, key, -1, SQLITE_TRANSIENT);
  int r = sqlite3_step(q), rc = 0;
  if (r == SQLITE_ROW) {
    const char *v = (const char *)sqlite3_column_text(q, 0);
    *value = strdup(v ? v : "");
    rc = 1;
  } else if (r != SQLITE_DONE)
    rc = db_error(db, err, "reading meta");
  sqlite3_finalize(q);
  return rc;
}

/* Binds record c's value of field f to parameter i of q (op_text NULL as "": it is never NULL). */
static void bind_field(sqlite3_stmt *q, int i, const field_t *f, const syno_db_cand_t *c) {
  switch (f->type) {
    case F_INT: sqlite3_bind_int(q, i, *AT(c, f, int)); break;
    case F_LONG: sqlite3_bind_int64(q, i, *AT(c, f, long)); break;
    case F_REAL: sqlite3_bind_double(q, i, *AT(c, f, double)); break;
    case F_TEXT: {
      const char *s = *AT(c, f, char *);
      if (s)
        sqlite3_bind_text(q, i, s, -1, SQLITE_TRANSIENT);
      else if (!strcmp(f->name, "op_text"))
        sqlite3_bind_text(q, i, "", -1, SQLITE_STATIC);
      else
        sqlite3_bind_null(q, i);
    } break;
  }
}

int syno_db_insert(syno_db_t *db, syno_db_cand_t *c, syno_error_t *err) {
  char sql[2048];
  int n = snprintf(sql, sizeof sql, "INSERT INTO candidates(");
  for (int i = 1; i < NFIELDS; i++)
    n += snprintf(sql + n, sizeof sql - (size_t)n, "%s%s", i > 1 ? ", " : "", fields[i].name);
  n += snprintf(sql + n, sizeof sql - (size_t)n, ") VALUES(");
  for (int i = 1; i < NFIELDS; i++) n += snprintf(sql + n, sizeof sql - (size_t)n, "%s?", i > 1 ? ", " : "");
  snprintf(sql + n, sizeof sql - (size_t)n, ")");
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(db->h, sql, -1, &q, NULL) != SQLITE_OK) return db_error(db, err, "insert");
  for (int i = 1; i < NFIELDS; i++) bind_field(q, i, &fields[i], c);
  int r = sqlite3_step(q), rc = 0;
  if (r == SQLITE_CONSTRAINT)
    rc = syno_error_set(err, "%s: %s is already recorded", db->path, c->is_baseline ? "the baseline" : c->op_text);
  else if (r != SQLITE_DONE)
    rc = db_error(db, err, "inserting a candidate");
  else
    c->id = (long)sqlite3_last_insert_rowid(db->h);
  sqlite3_finalize(q);
  return rc;
}

/* Writes c's columns whose names start with `group` into row c->id (a candidate's, not the
 * baseline's, when candidate_only); `what` names the change in messages, `missing` ends the
 * message for a row that is not there. */
static int update_group(syno_db_t *db, const syno_db_cand_t *c, const char *group, int candidate_only, const char *what,
                        const char *missing, syno_error_t *err) {
  const size_t g = strlen(group);
  char sql[1024];
  int n = snprintf(sql, sizeof sql, "UPDATE candidates SET "), k = 0;
  for (int i = 0; i < NFIELDS; i++)
    if (!strncmp(fields[i].name, group, g))
      n += snprintf(sql + n, sizeof sql - (size_t)n, "%s%s = ?", k++ ? ", " : "", fields[i].name);
  snprintf(sql + n, sizeof sql - (size_t)n, " WHERE id = ?%s", candidate_only ? " AND is_baseline = 0" : "");
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(db->h, sql, -1, &q, NULL) != SQLITE_OK) return db_error(db, err, what);
  k = 0;
  for (int i = 0; i < NFIELDS; i++)
    if (!strncmp(fields[i].name, group, g)) bind_field(q, ++k, &fields[i], c);
  sqlite3_bind_int64(q, k + 1, c->id);
  int rc = sqlite3_step(q) == SQLITE_DONE ? 0 : db_error(db, err, what);
  sqlite3_finalize(q);
  if (rc == 0 && sqlite3_changes(db->h) != 1)
    rc = syno_error_set(err, "%s: no candidate %ld %s", db->path, c->id, missing);
  return rc;
}

int syno_db_confirm(syno_db_t *db, const syno_db_cand_t *c, syno_error_t *err) {
  return update_group(db, c, "confirm", 0, "recording a confirmation", "to confirm", err);
}

int syno_db_retime(syno_db_t *db, const syno_db_cand_t *c, syno_error_t *err) {
  syno_db_cand_t r = *c; /* a shallow copy: its strings stay c's */
  r.retimed = 1;
  return update_group(db, &r, "retime", 1, "recording a re-timing",
                      "to re-time (the baseline is the reference, not re-timed)", err);
}

void syno_db_cand_clear(syno_db_cand_t *c) {
  if (!c) return;
  for (int i = 0; i < NFIELDS; i++)
    if (fields[i].type == F_TEXT) free(*AT(c, &fields[i], char *));
  memset(c, 0, sizeof *c);
}

/* Reads one row into c. A value of the wrong kind (text where a number belongs, a number
 * that is not finite, bytes where text belongs) is damage, not data: -1 with err naming the
 * row and the column, never a 0 shown as a result. */
static int read_row(syno_db_t *db, sqlite3_stmt *q, syno_db_cand_t *c, syno_error_t *err) {
  memset(c, 0, sizeof *c);
  const char *bad = NULL;
  int bad_col = -1;
  for (int i = 0; i < NFIELDS; i++) {
    const field_t *f = &fields[i];
    int type = sqlite3_column_type(q, i);
    switch (f->type) {
      case F_INT:
      case F_LONG:
      case F_REAL:
        if (type != SQLITE_INTEGER && type != SQLITE_FLOAT && type != SQLITE_NULL) {
          if (!bad) bad = type == SQLITE_TEXT ? "text where a number belongs" : "bytes where a number belongs";
          if (bad_col < 0) bad_col = i;
        } else if (type == SQLITE_FLOAT && !isfinite(sqlite3_column_double(q, i))) {
          if (!bad) bad = "a number that is not finite";
          if (bad_col < 0) bad_col = i;
        }
        if (f->type == F_INT)
          *AT(c, f, int) = sqlite3_column_int(q, i);
        else if (f->type == F_LONG)
          *AT(c, f, long) = (long)sqlite3_column_int64(q, i);
        else
          *AT(c, f, double) = sqlite3_column_double(q, i);
        break;
      case F_TEXT: {
        if (type == SQLITE_BLOB) {
          if (!bad) bad = "bytes where text belongs";
          if (bad_col < 0) bad_col = i;
        }
        /* op_text is never NULL (insert writes "" for none): a NULL in a damaged or foreign
         * file reads as "", so no reader passes NULL on as an operator text. */
        const char *s = (const char *)sqlite3_column_text(q, i);
        if (!s && f->off == offsetof(syno_db_cand_t, op_text)) s = "";
        *AT(c, f, char *) = s ? strdup(s) : NULL;
      } break;
    }
  }
  if (!bad) return 0;
  return syno_error_set(err, "%s: candidate %ld is damaged: column '%s' holds %s; refusing to use it", db->path,
                        (long)c->id, fields[bad_col].name, bad);
}

/* Runs "SELECT <fields> FROM candidates <where>" with one optional text
 * parameter; calls back per row into a growing array. */
static int select_rows(syno_db_t *db, const char *where, const char *param, syno_db_cand_t **out, int *n,
                       syno_error_t *err) {
  char sql[2048];
  int len = snprintf(sql, sizeof sql, "SELECT ");
  /* A file of an older schema, read only, lacks the newer columns: their old value instead. */
  for (int i = 0; i < NFIELDS; i++)
    len += snprintf(sql + len, sizeof sql - (size_t)len, "%s%s", i ? ", " : "",
                    fields[i].since > db->version ? (fields[i].old ? fields[i].old : "NULL") : fields[i].name);
  snprintf(sql + len, sizeof sql - (size_t)len, " FROM candidates %s", where);
  sqlite3_stmt *q;
  if (sqlite3_prepare_v2(db->h, sql, -1, &q, NULL) != SQLITE_OK) return db_error(db, err, "select");
  if (param) sqlite3_bind_text(q, 1, param, -1, SQLITE_TRANSIENT);
  size_t cap = 0;
  int r;
  *out = NULL;
  *n = 0;
  while ((r = sqlite3_step(q)) == SQLITE_ROW) {
    if (syno_grow((void **)out, &cap, (size_t)*n + 1, sizeof **out)) {
      sqlite3_finalize(q);
      syno_db_list_free(*out, *n);
      *out = NULL, *n = 0;
      return syno_error_set(err, "out of memory");
    }
    if (read_row(db, q, &(*out)[(*n)++], err)) {
      sqlite3_finalize(q);
      syno_db_list_free(*out, *n);
      *out = NULL, *n = 0;
      return -1;
    }
  }
  sqlite3_finalize(q);
  if (r != SQLITE_DONE) {
    syno_db_list_free(*out, *n);
    *out = NULL, *n = 0;
    return db_error(db, err, "reading candidates");
  }
  return 0;
}

static int select_one(syno_db_t *db, const char *where, const char *param, syno_db_cand_t *out, syno_error_t *err) {
  syno_db_cand_t *rows;
  int n;
  if (select_rows(db, where, param, &rows, &n, err)) return -1;
  if (n > 0) {
    *out = rows[0];
    memset(&rows[0], 0, sizeof rows[0]);
  }
  syno_db_list_free(rows, n);
  return n > 0;
}

int syno_db_find(syno_db_t *db, const char *op_text, syno_db_cand_t *out, syno_error_t *err) {
  return select_one(db, "WHERE is_baseline = 0 AND op_text = ?", op_text, out, err);
}

int syno_db_baseline(syno_db_t *db, syno_db_cand_t *out, syno_error_t *err) {
  return select_one(db, "WHERE is_baseline = 1 ORDER BY id LIMIT 1", NULL, out, err);
}

int syno_db_list(syno_db_t *db, syno_db_cand_t **out, int *n, syno_error_t *err) {
  return select_rows(db, "ORDER BY id", NULL, out, n, err);
}

void syno_db_list_free(syno_db_cand_t *list, int n) {
  for (int i = 0; i < n; i++) syno_db_cand_clear(&list[i]);
  free(list);
}

int syno_db_count(syno_db_t *db) {
  sqlite3_stmt *q;
  int n = -1;
  if (sqlite3_prepare_v2(db->h, "SELECT count(*) FROM candidates WHERE is_baseline = 0", -1, &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    n = sqlite3_column_int(q, 0);
  sqlite3_finalize(q);
  return n;
}

char *syno_db_cand_to_json(const syno_db_cand_t *c) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  for (int i = 0; i < NFIELDS; i++) {
    const field_t *f = &fields[i];
    switch (f->type) {
      case F_INT: cJSON_AddNumberToObject(o, f->name, *AT(c, f, const int)); break;
      case F_LONG: cJSON_AddNumberToObject(o, f->name, (double)*AT(c, f, const long)); break;
      case F_REAL: cJSON_AddNumberToObject(o, f->name, *AT(c, f, const double)); break;
      case F_TEXT: {
        const char *s = *AT(c, f, char *const);
        if (s)
          cJSON_AddStringToObject(o, f->name, s);
        else
          cJSON_AddNullToObject(o, f->name);
      } break;
    }
  }
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}

int syno_db_cand_from_json(const char *json, syno_db_cand_t *c, syno_error_t *err) {
  memset(c, 0, sizeof *c);
  cJSON *o = cJSON_Parse(json);
  if (!cJSON_IsObject(o)) {
    cJSON_Delete(o);
    return syno_error_set(err, "a candidate record must be a JSON object");
  }
  for (int i = 0; i < NFIELDS; i++) {
    const field_t *f = &fields[i];
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, f->name);
    if (!x) continue;
    if (f->type == F_TEXT) {
      if (cJSON_IsString(x)) *AT(c, f, char *) = strdup(x->valuestring);
    } else if (cJSON_IsNumber(x)) {
      double d = x->valuedouble;
      if (f->type != F_REAL) {
        /* Checked before converting: an out-of-range conversion is undefined. */
        double lim = f->type == F_INT ? 2147483647.0 : 9007199254740992.0;
        if (!(d >= -lim && d <= lim) || d != (double)(long long)d) {
          cJSON_Delete(o);
          syno_db_cand_clear(c);
          return syno_error_set(err, "a candidate record's \"%s\" must be an integer within +-%.0f (got %g)", f->name,
                                lim, d);
        }
      }
      if (f->type == F_INT)
        *AT(c, f, int) = (int)d;
      else if (f->type == F_LONG)
        *AT(c, f, long) = (long)d;
      else
        *AT(c, f, double) = d;
    }
  }
  cJSON_Delete(o);
  return 0;
}

void syno_db_csv_header(FILE *f) {
  for (int i = 0; i < NFIELDS; i++) fprintf(f, "%s%s", i ? "," : "", fields[i].name);
  fputc('\n', f);
}

void syno_db_csv_row(FILE *f, const syno_db_cand_t *c) {
  for (int i = 0; i < NFIELDS; i++) {
    const field_t *fd = &fields[i];
    if (i) fputc(',', f);
    switch (fd->type) {
      case F_INT: fprintf(f, "%d", *AT(c, fd, const int)); break;
      case F_LONG: fprintf(f, "%ld", *AT(c, fd, const long)); break;
      case F_REAL: fprintf(f, "%.9g", *AT(c, fd, const double)); break;
      case F_TEXT: {
        const char *s = *AT(c, fd, char *const);
        if (!s) break;
        fputc('"', f);
        for (; *s; s++) {
          if (*s == '"') fputc('"', f);
          fputc(*s, f);
        }
        fputc('"', f);
      } break;
    }
  }
  fputc('\n', f);
}
