/* syno eval: the command line over the search's worker (syno/worker.h): one candidate's
 * evaluation, its slot plan, or a candidate's re-timing. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "syno/alloc.h"
#include "syno/evalproto.h"
#include "syno/nn.h"
#include "syno/store.h"
#include "syno/task.h"
#include "syno/worker.h"

static const char *usage =
    "usage: syno eval --backbone NAME --dataset NAME [--op TEXT] [OPTIONS]\n"
    "\n"
    "Evaluates one operator the way the search does: puts it into every slot of the\n"
    "backbone (the standard operator without --op), first times inference of the\n"
    "whole network and of each slot against the standard operator in the same run\n"
    "(the standard convolutions run once on oneDNN and once on syno's im2col + BLAS\n"
    "path, and the faster is the baseline), before anything trains in this process;\n"
    "then, unless the operator is less than --min-speedup times faster than the\n"
    "baseline (a failure, not trained), trains it on the proxy setting. Prints the\n"
    "result as one JSON line (the results database's record, see docs/search.md).\n"
    "`syno search` runs one of these per candidate, in its own process.\n"
    "\n"
    "With --db DB --id N --retime it times candidate N of a search again (its operator,\n"
    "backbone and data set from the database), against the standard network in the\n"
    "same run, trains nothing, and records the figures in the database, where\n"
    "`syno report` then shows them (marked *): for timings the search took under load.\n";

/* syno eval --db DB --id N --retime: candidate N's network timed against the standard one as
 * measure_latency does, the figures written into its row (syno_db_retime), printed as one JSON
 * line, and said in words on stderr. */
static int retime_candidate(const syno_evalreq_t *req, const syno_opt_t *opts, const char *path, long id) {
  static const char *const own[] = {"op",   "preset",  "spec",     "backbone", "dataset", "pad",
                                    "width", "depth", "plan", "confirm", "stand-in", NULL};
  for (int i = 0; own[i]; i++)
    if (syno_opt_given(opts, own[i]))
      return cli_cmd_error("eval",
                           "--retime takes the operator, backbone, data set, padding, width and depth from "
                           "the search and only times; drop --%s",
                           own[i]);
  syno_train_cfg_t tc;
  syno_worker_train_cfg(req, &tc);
  char strs[3][256], *op = NULL;
  int rc = cli_candidate_from_db(path, id, "re-timing", &tc, strs, &op);
  if (rc) return rc;
  if (!op)
    return cli_cmd_error("eval", "candidate %ld of %s is the baseline, the reference of every speed-up", id, path);
  tc.op_text = op;
  syno_db_cand_t rec;
  syno_error_t err;
  if (syno_worker_retime(&tc, req, path, id, &rec, &err)) {
    fprintf(stderr, "syno eval: %s\n", err.msg);
    rc = SYNO_EXIT_FAIL;
  } else {
    fprintf(stderr, "candidate %ld: %.2fx faster than the standard network on %s (%.4f vs %.4f ms", id, rec.speedup,
            rec.base_impl, 1e3 * rec.latency_s, 1e3 * rec.base_latency_s);
    if (!syno_task_is_lm(tc.backbone)) fprintf(stderr, "; %.2fx vs im2col", rec.speedup_nnconv);
    fprintf(stderr, "), medians of %d, batch %ld, %d thread(s); recorded in %s\n", req->repeats,
            (long)req->latency_batch, req->latency_threads, path);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", (double)id);
    cJSON_AddNumberToObject(o, "latency_s", rec.latency_s);
    cJSON_AddNumberToObject(o, "base_latency_s", rec.base_latency_s);
    cJSON_AddStringToObject(o, "base_impl", rec.base_impl);
    cJSON_AddNumberToObject(o, "nnconv_latency_s", rec.nnconv_latency_s);
    cJSON_AddNumberToObject(o, "speedup", rec.speedup);
    cJSON_AddNumberToObject(o, "speedup_nnconv", rec.speedup_nnconv);
    cJSON_AddNumberToObject(o, "repeats", req->repeats);
    char *json = cJSON_PrintUnformatted(o);
    if (json) printf("%s\n", json);
    free(json);
    cJSON_Delete(o);
  }
  syno_db_cand_clear(&rec);
  free(op);
  return rc;
}

int cli_cmd_eval(int argc, char **argv) {
  syno_evalreq_t req;
  syno_evalreq_default(&req);
  syno_error_t err;
  const char *db_path = NULL;
  long db_id = 0;
  int retime = 0;
  const char *spec_path = NULL;
  syno_opt_t opts[SYNO_EVALREQ_MAX_OPTS + 4];
  int k = syno_evalreq_options(&req, opts, SYNO_EVALREQ_MAX_OPTS);
  opts[k++] = (syno_opt_t)SYNO_OPT_PATH("db", "DB", &db_path, SYNO_OPT_FILE,
                                        "with --id N --retime: a search's results database");
  opts[k++] = (syno_opt_t)SYNO_OPT_INT("id", "N", &db_id, 1, 1000000000000000LL, "the candidate of --db");
  opts[k++] = (syno_opt_t)SYNO_OPT_FLAG("retime", &retime,
                                        "time candidate --id of --db again and record it there\n"
                                        "(no training; e.g. --repeats 201 on a quiet machine)");
  opts[k++] = (syno_opt_t)SYNO_OPT_PATH("spec", "FILE", &spec_path, SYNO_OPT_FILE,
                                        "the operator's space as a spec file with a \"preset\" (the\n"
                                        "operator's variables are that preset's; instead of --preset)");
  opts[k] = (syno_opt_t)SYNO_OPT_END;
  int rc = cli_parse("eval", usage, NULL, opts, argc, argv);
  if (rc >= 0) return rc;
  if (syno_opt_conflict(opts, "plan", "confirm", &err) || syno_opt_conflict(opts, "spec", "preset", &err))
    return cli_cmd_error("eval", "%s", err.msg);
  if (spec_path) {
    char *json;
    if ((rc = cli_spec_for_slots(spec_path, &json, &req.preset))) return rc;
    syno_free(json);
  }
  if (!db_path != !db_id || !db_path != !retime)
    return cli_cmd_error("eval", "--db, --id and --retime go together (re-time candidate N of a search)");
  if (retime) return retime_candidate(&req, opts, db_path, db_id);
  if (req.plan) {
    syno_train_cfg_t tc;
    syno_worker_train_cfg(&req, &tc);
    syno_nn_threads_set(req.latency_threads);
    syno_backbone_t cand;
    if (syno_worker_build(&tc, &cand, &err)) return cli_cmd_error(NULL, "%s", err.msg);
    char *s = syno_worker_plan(&cand);
    if (s) printf("%s\n", s);
    free(s);
    syno_backbone_free(&cand);
    return s ? 0 : SYNO_EXIT_FAIL;
  }
  syno_db_cand_t rec;
  if (syno_worker_eval(&req, &rec, &err)) return cli_cmd_error(NULL, "%s", err.msg);
  char *json = syno_evalres_json(&rec);
  if (json) printf("%s\n", json);
  syno_db_cand_clear(&rec);
  rc = json ? 0 : SYNO_EXIT_FAIL;
  free(json);
  return rc;
}
