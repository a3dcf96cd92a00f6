/* syno/store.h - the results database of an operator search (SQLite).
 *
 * One file per search. It holds the search's settings (meta key/value
 * pairs) and one row per evaluated candidate, successes and failures, plus
 * one baseline row: the backbone with its standard operator.
 *
 * Durability: the file is in WAL mode with synchronous=FULL, and every
 * insert is one transaction, so a row is on disk when syno_db_insert
 * returns; a search killed at any moment loses only evaluations that had
 * not been inserted yet.
 *
 * Safety: syno_db_open never writes to a file it does not recognise. Before
 * SQLite touches an existing file it checks the SQLite header, then (read
 * only) the application id and schema version, then runs SQLite's PRAGMA
 * quick_check through a read-only connection (immutable, so with no locks
 * and no -wal or -shm file made, unless a -wal file shows a search writing
 * or killed); a file that is not SQLite, belongs to another
 * application, has a newer schema or is damaged is refused with a message
 * naming the path and the reason, and left byte for byte as it was. A file
 * that a failed open had just created is removed again.
 *
 * Schema versions: 1 had the candidate columns up to finished_at; 2 added
 * epochs_done and the confirmation columns (confirmed, confirmed_accuracy,
 * confirm_reason, confirm_seconds); 3 added perplexity (language-model
 * searches); 4 added the re-timing columns (retimed, retime_*: `syno eval --retime`). syno_db_open upgrades an older
 * file in place, in one transaction, by adding the missing columns: its rows keep every value, epochs_done reads -1
 * (unknown) in rows recorded before version 2, the confirmation columns 0 / NULL (not confirmed), perplexity 0, retimed
 * 0. An older syno then refuses the upgraded file (a newer schema).
 *
 * Meta keys written by `syno search`: "spec" (the search spec as JSON, read
 * by syno_space_spec_from_json), "driver" (the search settings as JSON),
 * "backbone", "dataset", "seed", "algorithm" ("mcts" or "random"),
 * "started_at" (unix seconds).
 *
 * Ownership: the strings of a syno_db_cand_t are heap copies owned by the
 * record; syno_db_cand_clear frees them. */
#ifndef SYNO_STORE_H
#define SYNO_STORE_H

#include "syno/error.h"

#define SYNO_DB_SCHEMA_VERSION 4

typedef struct syno_db syno_db_t;

typedef struct {
  long id;         /* evaluation order (set by insert) */
  int is_baseline; /* the standard operator's own evaluation */
  char *op_text;   /* the operator's one-line text form; never NULL when read from a database */
  char *path;      /* the search path that reached it */
  int status;      /* 0 ok, 1 failed */
  char *reason;    /* why it failed */
  double accuracy; /* max test accuracy over the epochs */
  double final_accuracy, train_loss;
  double flops, params; /* whole network, per image */
  double flops_ratio;   /* vs the baseline network */
  double train_seconds;
  double latency_s;        /* whole network inference, this operator */
  double base_latency_s;   /* the standard network, the faster of its two implementations */
  char *base_impl;         /* which that was: "onednn" or "im2col" */
  double nnconv_latency_s; /* the standard network on syno's own im2col + BLAS conv */
  double speedup, speedup_nnconv;
  char *slots_json; /* per-slot latencies and bindings */
  double reward;
  int worker;
  double started_at, finished_at; /* unix seconds */
  /* Schema 2. */
  int epochs_done;           /* training epochs finished: 0 not trained (e.g. too slow); -1 unknown
                              * (recorded before schema 2) */
  int confirmed;             /* 0 not confirmed, 1 confirmed_accuracy holds the re-training's
                              * accuracy, -1 the re-training failed (confirm_reason) */
  double confirmed_accuracy; /* max test accuracy of the re-training at the larger proxy */
  char *confirm_reason;      /* why the re-training failed */
  double confirm_seconds;    /* wall time of the re-training's worker */
  /* Schema 3. */
  double perplexity; /* a language model's validation perplexity (its reward's measure;
                      * accuracy then holds next-token accuracy); 0 for images */
  /* Schema 4: a re-timing after the search (syno_db_retime), the candidate and the standard
   * network timed again in one process, e.g. on a quiet machine; the fields mean what the
   * search's latency_s, base_latency_s, ... mean. */
  int retimed; /* 1: the retime_ fields hold one */
  double retime_latency_s, retime_base_latency_s;
  char *retime_base_impl;
  double retime_nnconv_latency_s, retime_speedup, retime_speedup_nnconv;
  int retime_repeats; /* the timing repeats whose median each latency is */
} syno_db_cand_t;

/* flags: 0 opens an existing file for reading and writing; SYNO_DB_CREATE makes the file if
 * it does not exist (or is empty); SYNO_DB_READONLY opens an existing file only to read it
 * (no schema upgrade: an older file reads with the newer columns at their old values, and
 * without a -wal file beside it, nothing is made beside it either). */
#define SYNO_DB_CREATE 1
#define SYNO_DB_READONLY 2
int syno_db_open(const char *path, int flags, syno_db_t **out, syno_error_t *err);
/* A database open for writing is held by its process (flock); another open for writing is
 * refused naming that process's pid. syno_db_in_use: 0 when no one holds path, else -1 with
 * err ("x.db is in use by another search (pid 123); ..."). */
int syno_db_in_use(const char *path, syno_error_t *err);
void syno_db_close(syno_db_t *db);

/* syno_db_meta_get: 1 found (*value malloc'd), 0 missing, -1 error. */
int syno_db_meta_set(syno_db_t *db, const char *key, const char *value, syno_error_t *err);
int syno_db_meta_get(syno_db_t *db, const char *key, char **value, syno_error_t *err);

/* Inserts one record in its own transaction; sets c->id. A second row with
 * the same op_text (or a second baseline) is refused. */
int syno_db_insert(syno_db_t *db, syno_db_cand_t *c, syno_error_t *err);
/* Records a confirmation: writes c's confirmed, confirmed_accuracy,
 * confirm_reason and confirm_seconds into row c->id (nothing else). An id
 * that is not recorded is an error. */
int syno_db_confirm(syno_db_t *db, const syno_db_cand_t *c, syno_error_t *err);
/* Records a re-timing: writes retimed = 1 and c's retime_ fields into row c->id (nothing
 * else). An id that is not a recorded candidate (or is the baseline) is an error. */
int syno_db_retime(syno_db_t *db, const syno_db_cand_t *c, syno_error_t *err);
/* 1 found, 0 not, -1 error. Candidates only (not the baseline). */
int syno_db_find(syno_db_t *db, const char *op_text, syno_db_cand_t *out, syno_error_t *err);
int syno_db_baseline(syno_db_t *db, syno_db_cand_t *out, syno_error_t *err);
/* Every row in id order, the baseline included. */
int syno_db_list(syno_db_t *db, syno_db_cand_t **out, int *n, syno_error_t *err);
void syno_db_list_free(syno_db_cand_t *list, int n);
/* Candidate rows (the baseline excluded), or -1. */
int syno_db_count(syno_db_t *db);
void syno_db_cand_clear(syno_db_cand_t *c);

/* One-line JSON of a record (malloc'd; NULL when out of memory), and back.
 * Missing fields read as 0 / NULL; anything but a JSON object is an error. */
char *syno_db_cand_to_json(const syno_db_cand_t *c);
/* CSV (RFC 4180 quoting): the header line, and one line per record. */
#include <stdio.h>
void syno_db_csv_header(FILE *f);
void syno_db_csv_row(FILE *f, const syno_db_cand_t *c);
int syno_db_cand_from_json(const char *json, syno_db_cand_t *c, syno_error_t *err);

#endif
