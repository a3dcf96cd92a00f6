/* syno/evalproto.h - the contract between the search and its workers.
 *
 * The search (syno/driver.h) evaluates every candidate in its own process,
 * `syno eval` (src/worker, syno/worker.h), through the worker pool (syno/pool.h). This
 * header is the whole protocol between the two; both sides use it, so the
 * option names and the reply's fields cannot drift apart.
 *
 * Request: the command line. A syno_evalreq_t says everything one
 * evaluation needs; syno_evalreq_argv writes it as `EXE eval --backbone NAME
 * --dataset NAME --epochs E ...` and syno_evalreq_from_argv reads such a
 * command line back (the worker's option parsing). Both are driven by one
 * option table (evalproto.c), in this order:
 *
 *   always written: --backbone --dataset --epochs --batch --lr --seed --threads
 *   written when > 0: --width --depth --subset --pad --time-limit
 *   written when not the default: --latency-batch --repeats --latency-threads,
 *     --min-speedup, --op TEXT (absent: the standard operator, the baseline),
 *     --plan, --confirm, --stand-in, --evaluator CMD
 *   written when > 0: --evaluator-timeout
 *   read only: --json (accepted; the reply is always JSON)
 *
 * Numbers are decimal (reals with 17 significant digits, so they read back
 * exactly); a value that does not parse whole, or lies outside what a worker
 * accepts (the search's own ranges, doubled where a confirmation doubles the
 * value: epochs 1..20000, subset 0..2e8), is a usage error naming the option
 * and its range. backbone (syno_backbone_names), dataset (digits,
 * fashion-mnist, kjv) and preset (conv2d, conv2d-wide, linear, linear-wide) are
 * names from fixed lists.
 *
 * Reply: one JSON object on one line of the worker's standard output; other
 * lines (none today) are ignored, the last line starting with '{' is the
 * reply.
 *
 * - With --plan, the backbone's operator slots:
 *     {"slots":[{"c_in":..,"c_out":..,"h":..,"w":..,"flops":..},...],
 *      "flops":..,"params":..}
 *   Required: "slots", an array, and in each slot the numbers "c_in",
 *   "c_out", "h" and "w". A linear slot (gpt) has "s", the sequence length,
 *   and h = w = 0. "flops" (per slot and whole network) and "params" are
 *   informative.
 * - Otherwise, the evaluation: the record of the results database
 *   (syno_db_cand_t of syno/store.h, one key per field, docs/search.md lists
 *   them). Required: "status" (0 ok, 1 failed), and "accuracy" when status is
 *   0. Every other field is optional and reads as 0 / NULL when absent. The
 *   search overwrites op_text, path, reward, worker and the times, and takes
 *   flops and params from the space when the reply has none.
 *
 * The order of an evaluation: the candidate network is timed against the
 * standard one first, before anything trains in the worker; a candidate
 * (--op given) that is not --min-speedup times faster than the standard
 * network is not trained: its reply is a failure whose reason starts with
 * SYNO_EVALRES_SLOWER, with the latency fields filled and "epochs_done" and
 * "train_seconds" 0. Then it trains. With --confirm the worker only trains
 * (no latency, no speed-up check): the search records the accuracy as the
 * candidate's confirmed accuracy (syno_db_confirm), not as a new row.
 *
 * Failures. An evaluation that fails in the worker's hands (a NaN loss, the
 * training time limit or its prediction, an operator that does not fit the
 * backbone, a failed latency measurement, too slow) is still exit status 0
 * and a reply with "status":1 and "reason". Anything else is a failure the search records itself
 * (syno_evalres_from_job): a non-zero exit status, death by a signal, the
 * pool's timeout, or no valid reply line; "reason" then says which, with
 * the last line of the worker's standard error. A usage error in the
 * request is exit status 2 and no reply.
 *
 * Ownership: a syno_evalargv_t borrows the request's strings (it only
 * formats the numbers into its own storage); a request read from a command
 * line borrows the command line's strings. Records and JSON strings are
 * heap-allocated and owned by the caller. */
#ifndef SYNO_EVALPROTO_H
#define SYNO_EVALPROTO_H

#include <stdint.h>

#include "syno/error.h"
#include "syno/opt.h"
#include "syno/pool.h"
#include "syno/size.h"
#include "syno/store.h"

typedef struct {
  const char *exe;      /* the syno binary (argv[0] of the request); not an option */
  const char *backbone; /* resnet, vgg or gpt */
  const char *dataset;  /* digits or fashion-mnist; kjv for gpt */
  int epochs;
  long batch;
  double lr;
  uint64_t seed;
  double width;        /* channel multiplier; 0 = the backbone's default */
  int depth;           /* 0 = the backbone's default */
  long subset;         /* training images; 0 = all */
  int pad;             /* zero-padding of the images per side */
  int augment;         /* random crops and flips of the training images */
  double time_limit;   /* seconds of training before it counts as a failure; 0 = none */
  int threads;         /* training threads; 0 = one per CPU */
  long latency_batch;  /* batch of the latency measurements */
  int repeats;         /* timing repeats (the median is taken) */
  int latency_threads; /* threads of the latency measurements */
  const char *kernels; /* what runs the slots' inference in the latency measurements:
                        * "exec" (default), "halide" or "best" (syno/kernels.h) */
  double min_speedup;  /* a candidate less than this many times faster than the standard
                        * network is not trained (a failure); 0 = no check. Never applied
                        * to the standard operator itself (op_text NULL). */
  const char *op_text; /* the operator, in the variables of `preset`; NULL = the standard one */
  const char *preset;  /* op_text's preset (syno/signature.h): "conv2d" (default), "conv2d-wide" */
  int plan;            /* only list the backbone's slots */
  int confirm;         /* a confirmation: train only, no latency, no speed-up check */
  int stand_in;        /* answer with syno_evalres_stand_in instead of timing and training */
  const char *evaluator;    /* a command that trains the candidate instead of syno's runtime
                             * (docs/evaluator.md); NULL: syno trains it */
  double evaluator_timeout; /* seconds before the evaluator is killed (a failure); 0 = none */
} syno_evalreq_t;

/* The reason of a candidate rejected by --min-speedup starts with this,
 * followed by the measured speed-up: "slower than the baseline (0.62x)". */
#define SYNO_EVALRES_SLOWER "slower than the baseline"

/* The worker's defaults: resnet on digits, 2 epochs, batch 64, lr 0.1, seed
 * 1, latency batch 1, 30 repeats, 1 latency thread, min speed-up 1, the rest
 * 0 / NULL. */
void syno_evalreq_default(syno_evalreq_t *r);

#define SYNO_EVALREQ_MAX_ARGS 64
typedef struct {
  char *argv[SYNO_EVALREQ_MAX_ARGS]; /* NULL-terminated, for execv */
  int argc;
  char num[SYNO_EVALREQ_MAX_ARGS / 2][32];
} syno_evalargv_t;

/* The request as `syno eval`'s argument vector (argv[0] = r->exe, argv[1] =
 * "eval"). Fails (err set) without an exe, a backbone or a dataset. */
int syno_evalreq_argv(const syno_evalreq_t *r, syno_evalargv_t *a, syno_error_t *err);

/* The request's options as a table of the project's option parser (syno/opt.h), bound to *r,
 * with their help and the values a worker accepts; `syno eval` parses and prints its help with
 * it. Fills at most cap - 1 entries and the end; returns the number of options. */
#define SYNO_EVALREQ_MAX_OPTS 32
int syno_evalreq_options(syno_evalreq_t *r, syno_opt_t *table, int cap);

/* Reads a request from a command line as a command gets it: argv[0] is the
 * command's name ("eval"), the options follow. Fields not given keep their
 * values in *r (start from syno_evalreq_default). Returns 0, 1 when -h or
 * --help was given (nothing else is checked), or -1 with err set (one line
 * naming the option and the values it allows): an unknown option, a missing,
 * malformed or out-of-range value, or an argument that is not an option. */
int syno_evalreq_from_argv(int argc, char **argv, syno_evalreq_t *r, syno_error_t *err);

/* ---- the reply */

/* The reply line in a worker's standard output: the last line starting with
 * '{' (up to its newline or the end), or NULL when there is none. */
const char *syno_evalres_line(const char *out);

/* The reason of a candidate below min_speedup: "slower than the baseline (0.62x)",
 * with ", the minimum is 1.5x" when the minimum is not 1 (malloc'd). */
char *syno_evalres_slower(double speedup, double min_speedup);

/* 1 when a record is a candidate the worker did not train because it was
 * slower than --min-speedup allows (its reason starts with SYNO_EVALRES_SLOWER). */
int syno_evalres_too_slow(const syno_db_cand_t *rec);

/* An evaluation's reply (the worker's whole standard output) as a record.
 * 0, or -1 with err set and *rec zeroed: no reply line, not JSON, not an
 * object, a missing or non-numeric "status" (or "accuracy" when status is
 * 0), a status other than 0 and 1. */
int syno_evalres_parse(const char *out, syno_db_cand_t *rec, syno_error_t *err);

/* A finished worker as a record: its reply when it exited with status 0 and
 * wrote a valid one, else a failure (status 1) whose reason says how it
 * ended (timeout_s is the pool's, for the message). started_at and
 * finished_at are the job's. Never fails: out of memory leaves reason NULL. */
void syno_evalres_from_job(const syno_job_t *job, double timeout_s, syno_db_cand_t *rec);

/* The reply line for a record (one line, no newline; malloc'd, NULL when out
 * of memory). */
char *syno_evalres_json(const syno_db_cand_t *rec);

/* The stand-in evaluation (--stand-in), for tests and benchmarks of the
 * search machinery: a pure function of the request's operator text (NULL:
 * the standard operator), seed, min_speedup and confirm. The standard
 * operator gets accuracy 0.9 and speed-up 1; an operator gets accuracy
 * 0.6 + 0.35 u1 and speed-up 0.5 + 2 u2 (u1, u2 in [0, 1) from an FNV-1a hash of
 * the text and the seed), and is "slower than the baseline" when the
 * speed-up is below min_speedup (not confirm). *seconds is how long the
 * worker should take, 0.05 + 0.45 u3, so that evaluations end out of order.
 * Fills the record's status, reason, accuracy, speed-up and latencies. */
void syno_evalres_stand_in(const syno_evalreq_t *r, syno_db_cand_t *rec, double *seconds);

/* ---- the slot plan (--plan) */

typedef struct {
  long c_in, c_out, h, w; /* a conv slot [N, c_in, h, w] -> [N, c_out, h, w] */
  double flops;           /* the standard operator's in this slot, whole batch of 1 */
  long s;                 /* > 0: a linear slot [N, s, c_in] -> [N, s, c_out] (h, w 0) */
} syno_evalslot_t;

/* The distinct slots (shape and standard-operator FLOPs), in the order of their first
 * appearance. */
typedef struct {
  int n;
  syno_evalslot_t slot[SYNO_MAX_BINDINGS];
} syno_evalplan_t;

/* A --plan reply (the worker's whole standard output) as its distinct slot
 * shapes. 0, or -1 with err set: no reply line, not JSON, no "slots" array, a
 * slot without its four numbers, no slot at all, or more than
 * SYNO_MAX_BINDINGS distinct shapes. */
int syno_evalplan_parse(const char *out, syno_evalplan_t *p, syno_error_t *err);

/* The --plan reply for n slots (all of them, repeats included) and the whole
 * network's FLOPs and parameters (malloc'd, NULL when out of memory). */
char *syno_evalplan_json(const syno_evalslot_t *slots, int n, double flops, double params);

#endif
