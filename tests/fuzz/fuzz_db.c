/* Fuzzes the results database loader (syno/store.h) the way `syno report
 * --db FILE` and `syno train --db FILE --id K` read a file of the user's:
 * the input is written to a temporary file, opened read only with
 * syno_db_open, and its settings and records read; the recorded spec is read
 * as a spec and the best candidate's operator text parsed against it, and
 * every record is printed as JSON (and read back) and as CSV. A file that
 * opens is then opened to write, as `syno search --resume` does, and read
 * again. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz.h"
#include "syno/evalproto.h"
#include "syno/graph.h"
#include "syno/space.h"
#include "syno/store.h"

static const char *meta_keys[] = {"spec", "driver", "backbone", "dataset", "seed", "algorithm", "started_at"};

/* The recorded spec, and the first successful candidate's operator on it. */
static void parse_best(syno_db_t *db, const syno_db_cand_t *rows, int n) {
  char *spec_text = NULL;
  syno_error_t err;
  syno_space_spec_t spec;
  if (syno_db_meta_get(db, "spec", &spec_text, &err) == 1 && syno_space_spec_from_json(spec_text, &spec, &err) == 0) {
    for (int i = 0; i < n; i++) {
      if (rows[i].is_baseline || rows[i].status != 0) continue;
      syno_graph_t *g = syno_graph_new(&spec.vars);
      syno_operator_t op;
      if (g) syno_operator_parse(g, rows[i].op_text, &spec.input, &spec.output, &op, &err);
      syno_graph_free(g);
      break;
    }
  }
  free(spec_text);
}

static void print_rows(const syno_db_cand_t *rows, int n) {
  char *csv = NULL;
  size_t csv_len = 0;
  FILE *f = open_memstream(&csv, &csv_len);
  if (f) syno_db_csv_header(f);
  for (int i = 0; i < n; i++) {
    if (f) syno_db_csv_row(f, &rows[i]);
    (void)syno_evalres_too_slow(&rows[i]);
    char *json = syno_db_cand_to_json(&rows[i]);
    syno_db_cand_t back;
    syno_error_t err;
    if (json && syno_db_cand_from_json(json, &back, &err) == 0) syno_db_cand_clear(&back);
    free(json);
  }
  if (f) fclose(f);
  free(csv);
}

/* What `syno report` and `syno train --db` read, from a read-only open. */
static void read_all(syno_db_t *db) {
  syno_error_t err;
  for (size_t k = 0; k < sizeof meta_keys / sizeof *meta_keys; k++) {
    char *value = NULL;
    syno_db_meta_get(db, meta_keys[k], &value, &err);
    free(value);
  }
  (void)syno_db_count(db);
  syno_db_cand_t base;
  if (syno_db_baseline(db, &base, &err) == 1) syno_db_cand_clear(&base);
  syno_db_cand_t *rows;
  int n;
  if (syno_db_list(db, &rows, &n, &err) == 0) {
    parse_best(db, rows, n);
    print_rows(rows, n);
    syno_db_cand_t found;
    if (n > 0 && syno_db_find(db, rows[0].op_text, &found, &err) == 1) syno_db_cand_clear(&found);
    syno_db_list_free(rows, n);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 20) return 0;
  char path[1024], wal[1100], shm[1100];
  if (fuzz_path("fuzz.db", path, sizeof path)) return 0;
  /* A journal left by an earlier input would be replayed into this one. */
  snprintf(wal, sizeof wal, "%s-wal", path);
  snprintf(shm, sizeof shm, "%s-shm", path);
  unlink(wal);
  unlink(shm);
  if (fuzz_write("fuzz.db", data, size, path, sizeof path)) return 0;
  syno_db_t *db;
  syno_error_t err;
  if (syno_db_open(path, SYNO_DB_READONLY, &db, &err)) return 0;
  read_all(db);
  syno_db_close(db);
  /* `syno search --resume` then opens it to write (an older schema is upgraded) and reads its
   * settings and records. */
  if (syno_db_open(path, 0, &db, &err)) return 0;
  read_all(db);
  syno_db_close(db);
  return 0;
}
