/* syno/worker.h - one candidate's evaluation, as the search's workers run it.
 *
 * The search (syno/driver.h) hands every candidate to a worker process, `syno eval`, through
 * the protocol of syno/evalproto.h. This module is what that worker does, apart from reading
 * its command line and printing its reply:
 *
 *   build      the backbone with the operator in every slot (images: from the data set's
 *              shape, no data loaded; a language model through the training driver)
 *   plan       the backbone's slots, as the --plan reply
 *   latency    the speed gate: the candidate network timed against the standard one in the
 *              same process, before anything trains in it (the standard convolutions on
 *              oneDNN and on syno's im2col + BLAS path, the faster the baseline), whole
 *              network and per slot
 *   eval       the whole evaluation: the gate, then the proxy training, on syno's runtime or
 *              in an external evaluator (evaluator.c, docs/evaluator.md); the record
 *   retime     a search's candidate timed again, the figures recorded in its database
 *
 * Errors: -1 with err set is a request that cannot be evaluated at all (an operator that
 * does not parse, a backbone beside its data set: the worker's usage error). Everything that
 * goes wrong while evaluating (a NaN loss, the time limit, too slow, an evaluator that
 * crashed) is a record with status 1 and its reason. */
#ifndef SYNO_WORKER_H
#define SYNO_WORKER_H

#include "syno/backbone.h"
#include "syno/error.h"
#include "syno/evalproto.h"
#include "syno/kernels.h"
#include "syno/store.h"

/* The training (and network) settings of a request; strings borrowed from it. */
void syno_worker_train_cfg(const syno_evalreq_t *req, syno_train_cfg_t *tc);

/* The candidate network of tc (its operator, or the standard one without). */
int syno_worker_build(const syno_train_cfg_t *tc, syno_backbone_t *cand, syno_error_t *err);

/* The --plan reply for a built network (malloc'd; NULL when out of memory). */
char *syno_worker_plan(const syno_backbone_t *cand);

/* Times cand against the standard network as the speed gate does, at batch lat_batch with
 * `repeats` repeats (medians), its slots on `kernels`; fills the record's latency, speed-up,
 * FLOPs ratio and per-slot fields. With kernels other than exec, also says the latencies
 * and what ran them on stderr. */
int syno_worker_latency(syno_backbone_t *cand, syno_kernels_t kernels, syno_rng_t *rng, long lat_batch, int repeats,
                        syno_db_cand_t *rec, syno_error_t *err);

/* The evaluation of a request (not --plan): the stand-in, or the speed gate (not for a
 * confirmation) and then the training (req->evaluator: in that command). Fills *rec (zeroed
 * first; the caller clears it). */
int syno_worker_eval(const syno_evalreq_t *req, syno_db_cand_t *rec, syno_error_t *err);

/* The training of a request in the external evaluator req->evaluator (docs/evaluator.md):
 * writes the exported module and the request into a fresh directory, runs the command
 * there with the request's file as its argument, reads its one-line JSON reply into rec
 * (accuracy or loss / perplexity, optionally latency and a message). Anything that goes
 * wrong (the export, a crash, a timeout after req->evaluator_timeout, a bad reply) is status
 * 1 with the reason. cand is the network the worker built (its slots are the request's); rec
 * holds the speed gate's figures, which the request passes on. */
void syno_worker_external(const syno_evalreq_t *req, const syno_backbone_t *cand, syno_db_cand_t *rec);

/* Candidate `id` of the search database `db_path`, whose operator and network tc describes,
 * timed again against the standard network (req's kernels, batch, repeats, threads), the
 * figures recorded in its row (syno_db_retime) and returned in *rec (latency_s,
 * base_latency_s, base_impl, nnconv_latency_s, speedup, speedup_nnconv). */
int syno_worker_retime(const syno_train_cfg_t *tc, const syno_evalreq_t *req, const char *db_path, long id,
                       syno_db_cand_t *rec, syno_error_t *err);

#endif
