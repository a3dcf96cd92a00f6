/* The training of a candidate in an external evaluator (docs/evaluator.md): the exported
 * PyTorch module and a JSON request in a fresh directory, the user's command run on it in a
 * one-slot worker pool (its timeout, its process group), one JSON line back. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "syno/codegen.h"
#include "syno/evalproto.h"
#include "syno/graph.h"
#include "syno/pool.h"
#include "syno/signature.h"
#include "syno/task.h"
#include "syno/worker.h"

#define PROTOCOL 1

static int write_file(const char *path, const char *text, syno_error_t *err) {
  FILE *f = fopen(path, "w");
  if (!f) return syno_error_set(err, "cannot write %s: %s", path, strerror(errno));
  int bad = fputs(text, f) == EOF;
  bad |= fclose(f) != 0;
  return bad ? syno_error_set(err, "cannot write %s: %s", path, strerror(errno)) : 0;
}

/* The operator exported as a PyTorch module (class SynoOp) into `path`, its constructor's
 * defaults the first slot's sizes; the one class serves every slot (docs/codegen.md). */
static int export_module(const char *preset, const char *text, const syno_slot_info_t *si, const char *path,
                         syno_error_t *err) {
  syno_signature_t sig;
  char bind[256];
  if (syno_signature_preset(preset, "", &sig, err)) return -1;
  int rc = si->kind == SYNO_SLOT_LINEAR
               ? syno_signature_linear_binding(&sig, 1, si->s, si->c_in, si->c_out, bind, sizeof bind, err)
               : syno_signature_conv_binding(&sig, 1, si->c_in, si->c_out, si->h, si->w, bind, sizeof bind, err);
  if (rc || syno_signature_preset(preset, bind, &sig, err)) return -1;
  syno_graph_t *g = syno_graph_new(&sig.vars);
  if (!g) return syno_error_set(err, "out of memory");
  syno_operator_t op;
  char *code = NULL;
  rc = -1;
  int len;
  if (syno_operator_parse(g, text, &sig.input, &sig.output, &op, err) == 0 &&
      (len = syno_codegen_pytorch(&op, 0, NULL, 0, err)) >= 0) {
    if (!(code = malloc((size_t)len + 1)))
      syno_error_set(err, "out of memory");
    else if (syno_codegen_pytorch(&op, 0, code, (size_t)len + 1, err) >= 0)
      rc = write_file(path, code, err);
  }
  free(code);
  syno_graph_free(g);
  return rc ? syno_error_prefix(err, "exporting the operator for the evaluator") : 0;
}

/* The request file's JSON (docs/evaluator.md lists the fields). */
static char *request_json(const syno_evalreq_t *req, const syno_backbone_t *cand, const char *module,
                          const syno_db_cand_t *gate) {
  const syno_task_backbone_t *task = syno_task_backbone(req->backbone);
  char data[1024];
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "protocol", PROTOCOL);
  if (req->op_text) {
    cJSON_AddStringToObject(o, "op", req->op_text);
    cJSON_AddStringToObject(o, "module", module);
    cJSON_AddStringToObject(o, "class", "SynoOp");
  } else {
    cJSON_AddNullToObject(o, "op");
    cJSON_AddNullToObject(o, "module");
    cJSON_AddNullToObject(o, "class");
  }
  cJSON_AddStringToObject(o, "preset", req->preset ? req->preset : task->preset);
  cJSON_AddStringToObject(o, "backbone", req->backbone);
  cJSON_AddStringToObject(o, "kind", task->kind == SYNO_TASK_TEXT ? "text" : "images");
  cJSON_AddStringToObject(o, "measure", task->measure);
  cJSON_AddStringToObject(o, "dataset", req->dataset);
  if (syno_train_data_location(req->dataset, data, sizeof data) == 0)
    cJSON_AddStringToObject(o, "data", data);
  else
    cJSON_AddNullToObject(o, "data");
  cJSON_AddNumberToObject(o, "width", req->width);
  cJSON_AddNumberToObject(o, "depth", req->depth);
  cJSON_AddNumberToObject(o, "pad", req->pad);
  cJSON_AddBoolToObject(o, "augment", req->augment);
  cJSON_AddNumberToObject(o, "epochs", req->epochs);
  cJSON_AddNumberToObject(o, "batch", (double)req->batch);
  cJSON_AddNumberToObject(o, "lr", req->lr);
  cJSON_AddNumberToObject(o, "subset", (double)req->subset);
  cJSON_AddNumberToObject(o, "time_limit", req->time_limit);
  cJSON_AddNumberToObject(o, "threads", req->threads);
  cJSON_AddNumberToObject(o, "seed", (double)req->seed);
  cJSON_AddBoolToObject(o, "confirm", req->confirm);
  cJSON *slots = cJSON_AddArrayToObject(o, "slots");
  for (int i = 0; i < cand->nslots; i++) {
    syno_slot_info_t si;
    syno_slot_info(cand->slots[i], &si);
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "c_in", (double)si.c_in);
    cJSON_AddNumberToObject(s, "c_out", (double)si.c_out);
    if (si.kind == SYNO_SLOT_LINEAR)
      cJSON_AddNumberToObject(s, "s", (double)si.s);
    else {
      cJSON_AddNumberToObject(s, "h", (double)si.h);
      cJSON_AddNumberToObject(s, "w", (double)si.w);
    }
    cJSON_AddItemToArray(slots, s);
  }
  cJSON_AddNumberToObject(o, "flops", (double)cand->flops);
  cJSON_AddNumberToObject(o, "params", (double)cand->params);
  if (gate->latency_s > 0) {
    cJSON *g = cJSON_AddObjectToObject(o, "speed_gate");
    cJSON_AddNumberToObject(g, "latency_s", gate->latency_s);
    cJSON_AddNumberToObject(g, "base_latency_s", gate->base_latency_s);
    cJSON_AddNumberToObject(g, "speedup", gate->speedup);
  } else {
    cJSON_AddNullToObject(o, "speed_gate");
  }
  char *s = cJSON_Print(o);
  cJSON_Delete(o);
  return s;
}

/* A number of the reply: 1 and *v when present and finite, 0 when absent, -1 when malformed. */
static int number(const cJSON *o, const char *key, double *v) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!x || cJSON_IsNull(x)) return 0;
  if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble)) return -1;
  *v = x->valuedouble;
  return 1;
}

/* The reply line into rec: status 1 with the reason when it is not a valid reply. */
static void read_reply(const char *line, int lm, syno_db_cand_t *rec, char *why, size_t n) {
  cJSON *o = cJSON_Parse(line);
  double v, acc = 0, loss = 0, ppl = 0, lat = 0, base = 0, status = 0;
  int has_acc = 0, has_loss = 0, has_ppl = 0, bad = 0;
  const char *badkey = NULL;
  const char *keys[] = {"status", "accuracy", "loss", "perplexity", "latency_s", "base_latency_s",
                        "final_accuracy", "train_loss", "train_seconds", "epochs_done"};
  if (!cJSON_IsObject(o)) {
    snprintf(why, n, "its reply is not a JSON object: %.200s", line);
    goto fail;
  }
  for (size_t i = 0; i < sizeof keys / sizeof *keys && !bad; i++)
    if (number(o, keys[i], &v) < 0) bad = 1, badkey = keys[i];
  if (bad) {
    snprintf(why, n, "its reply's \"%s\" is not a finite number: %.200s", badkey, line);
    goto fail;
  }
  const cJSON *msg = cJSON_GetObjectItemCaseSensitive(o, "message");
  number(o, "status", &status);
  if (status != 0) {
    snprintf(why, n, "it failed: %.300s", cJSON_IsString(msg) ? msg->valuestring : "(no message)");
    goto fail;
  }
  has_acc = number(o, "accuracy", &acc) > 0;
  has_loss = number(o, "loss", &loss) > 0;
  has_ppl = number(o, "perplexity", &ppl) > 0;
  if (lm && !has_ppl && has_loss) ppl = exp(loss), has_ppl = 1;
  if (lm ? !has_ppl : !has_acc) {
    snprintf(why, n, "its reply has no %s: %.200s", lm ? "\"perplexity\" or \"loss\"" : "\"accuracy\"", line);
    goto fail;
  }
  if (!lm && !(acc >= 0 && acc <= 1)) {
    snprintf(why, n, "its reply's accuracy %g is not in 0..1", acc);
    goto fail;
  }
  rec->accuracy = has_acc ? acc : 0;
  if (has_ppl) rec->perplexity = ppl;
  number(o, "final_accuracy", &rec->final_accuracy);
  number(o, "train_loss", &rec->train_loss);
  number(o, "train_seconds", &rec->train_seconds);
  if (number(o, "epochs_done", &v) > 0) rec->epochs_done = (int)v;
  /* The evaluator's own latency, both sides of the ratio, replaces the speed gate's. */
  if (number(o, "latency_s", &lat) > 0 && number(o, "base_latency_s", &base) > 0 && lat > 0 && base > 0) {
    rec->latency_s = lat;
    rec->base_latency_s = base;
    rec->speedup = base / lat;
    rec->nnconv_latency_s = rec->speedup_nnconv = 0; /* syno's im2col figure is not beside these */
    free(rec->base_impl);
    rec->base_impl = strdup("evaluator");
  }
  if (cJSON_IsString(msg) && *msg->valuestring) fprintf(stderr, "evaluator: %s\n", msg->valuestring);
  cJSON_Delete(o);
  return;
fail:
  cJSON_Delete(o);
  rec->status = 1;
}

/* Removes the request's directory and what the worker wrote into it (the evaluator's own
 * files stay: the directory then stays too, and says where they are). */
static void cleanup(const char *dir, const char *req_path, const char *module) {
  if (req_path[0]) unlink(req_path);
  if (module[0]) unlink(module);
  rmdir(dir);
}

void syno_worker_external(const syno_evalreq_t *req, const syno_backbone_t *cand, syno_db_cand_t *rec) {
  const char *tmp = getenv("TMPDIR");
  char dir[1024], req_path[1100] = "", module[1100] = "", why[1024] = "";
  syno_error_t e;
  char *json = NULL;
  syno_pool_t *pool = NULL;
  syno_job_t *job = NULL;
  snprintf(dir, sizeof dir, "%s/syno-eval-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    snprintf(why, sizeof why, "cannot make a directory in %s: %s", tmp && *tmp ? tmp : "/tmp", strerror(errno));
    dir[0] = 0;
    goto fail;
  }
  snprintf(req_path, sizeof req_path, "%s/request.json", dir);
  if (req->op_text) {
    snprintf(module, sizeof module, "%s/op.py", dir);
    syno_slot_info_t si;
    syno_slot_info(cand->slots[0], &si);
    if (export_module(req->preset, req->op_text, &si, module, &e)) {
      snprintf(why, sizeof why, "%s", e.msg);
      goto fail;
    }
  }
  if (!(json = request_json(req, cand, module, rec))) {
    snprintf(why, sizeof why, "out of memory");
    goto fail;
  }
  if (write_file(req_path, json, &e)) {
    snprintf(why, sizeof why, "%s", e.msg);
    goto fail;
  }
  /* The command is the user's shell line; the request's path is its argument "$1", never
   * part of the line the shell reads. */
  char line[4096];
  snprintf(line, sizeof line, "%s \"$1\"", req->evaluator);
  char *argv[] = {"/bin/sh", "-c", line, "syno-evaluator", req_path, NULL};
  if (syno_pool_new(1, req->evaluator_timeout, &pool, &e) || syno_pool_start(pool, 0, argv, &e) ||
      syno_pool_wait(pool, -1, &job, &e) < 0) {
    snprintf(why, sizeof why, "%s", e.msg);
    goto fail;
  }
  const char *reply = syno_evalres_line(job->out);
  if (job->end != SYNO_JOB_EXITED || job->exit_code != 0 || !reply) {
    char how[768];
    syno_pool_job_describe(job, req->evaluator_timeout, NULL, how, sizeof how);
    snprintf(why, sizeof why, "%s", !reply && job->end == SYNO_JOB_EXITED && job->exit_code == 0
                                        ? "it wrote no reply line (a JSON object on one line)"
                                        : how);
    goto fail;
  }
  size_t len = strcspn(reply, "\n");
  char *one = strndup(reply, len);
  if (one) read_reply(one, syno_task_is_lm(req->backbone), rec, why, sizeof why);
  free(one);
  if (rec->status) goto fail;
  rec->train_seconds = rec->train_seconds > 0 ? rec->train_seconds : job->finished - job->started;
  syno_pool_job_free(job);
  syno_pool_free(pool);
  free(json);
  cleanup(dir, req_path, module);
  return;
fail:
  rec->status = 1;
  free(rec->reason);
  {
    size_t n = strlen(req->evaluator) + strlen(why) + 32;
    rec->reason = malloc(n);
    if (rec->reason) snprintf(rec->reason, n, "evaluator '%s': %s", req->evaluator, why);
  }
  syno_pool_job_free(job);
  syno_pool_free(pool);
  free(json);
  if (dir[0]) cleanup(dir, req_path, module);
}
