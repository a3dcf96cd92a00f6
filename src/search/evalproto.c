/* The search <-> worker protocol: the request's command line and the
 * worker's JSON reply. See syno/evalproto.h. */
#include "syno/task.h"
#include "syno/evalproto.h"

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/hash.h"

void syno_evalreq_default(syno_evalreq_t *r) {
  memset(r, 0, sizeof *r);
  r->backbone = "resnet";
  r->dataset = "digits";
  r->epochs = 2;
  r->batch = 64;
  r->lr = 0.1;
  r->seed = 1;
  r->latency_batch = 1;
  r->repeats = 30;
  r->latency_threads = 1;
  r->kernels = "exec";
  r->min_speedup = 1.0;
  r->preset = "conv2d";
}

/* ------------------------------------------------------------ the options */

typedef enum { K_STR, K_INT, K_LONG, K_REAL, K_SEED, K_FLAG, K_IGNORED } kind_t;
/* When syno_evalreq_argv writes an option. */
typedef enum { W_ALWAYS, W_POSITIVE, W_CHANGED, W_NEVER } when_t;

typedef struct {
  const char *flag; /* "--name" */
  kind_t kind;
  size_t off;
  when_t when;
  double lo, hi;              /* numbers: the values a worker accepts */
  unsigned fl;                /* syno/opt.h flags (SYNO_OPT_OPEN_MIN) */
  const char *const *(*choices)(void); /* a text from a fixed list, or NULL */
  const char *meta, *help;
} opt_t;

/* The task table's names (syno/task.h), and the presets and kernel choices. */
static const char *const *backbones(void) { return syno_task_backbone_names(-1); }
static const char *const *datasets(void) { return syno_task_dataset_names(-1); }
static const char *const *presets(void) {
  static const char *const p[] = {"conv2d", "conv2d-wide", "linear", "linear-wide", NULL};
  return p;
}
static const char *const *kernels(void) {
  static const char *const k[] = {"exec", "halide", "best", NULL};
  return k;
}

#define OPT(flag, kind, field, when, lo, hi, fl, choices, meta, help) \
  { flag, kind, offsetof(syno_evalreq_t, field), when, lo, hi, fl, choices, meta, help }
/* The one table of `syno eval`'s options, in the order they are written, with the values a
 * worker accepts: the search's own ranges, doubled where a confirmation doubles the value. */
static const opt_t opts[] = {
    OPT("--backbone", K_STR, backbone, W_ALWAYS, 0, 0, 0, backbones, "NAME", "the network (default resnet)"),
    OPT("--dataset", K_STR, dataset, W_ALWAYS, 0, 0, 0, datasets, "NAME", "the data (default digits)"),
    OPT("--epochs", K_INT, epochs, W_ALWAYS, 1, 20000, 0, NULL, "E", "training epochs (default 2)"),
    OPT("--batch", K_LONG, batch, W_ALWAYS, 1, 65536, 0, NULL, "B", "batch size (default 64)"),
    OPT("--lr", K_REAL, lr, W_ALWAYS, 0, 100, SYNO_OPT_OPEN_MIN, NULL, "X", "learning rate (default 0.1)"),
    OPT("--seed", K_SEED, seed, W_ALWAYS, 0, 0, 0, NULL, "S", "seed (default 1)"),
    OPT("--width", K_REAL, width, W_POSITIVE, 0, 4096, SYNO_OPT_OPEN_MIN, NULL, "W",
        "the backbone's channel multiplier, at most 16 (default 1);\n"
        "for gpt the model dim (default 64)"),
    OPT("--depth", K_INT, depth, W_POSITIVE, 1, 8, 0, NULL, "D",
        "the backbone's blocks per stage (default 2; resnet34, resnext29,\n"
        "densenet121, efficientnetv2s: at most D, default as published)"),
    OPT("--subset", K_LONG, subset, W_POSITIVE, 0, 200000000, 0, NULL, "N", "train on N images (default 0: all)"),
    OPT("--pad", K_INT, pad, W_POSITIVE, 0, 64, 0, NULL, "P", "zero-pad the images by P pixels per side"),
    OPT("--augment", K_INT, augment, W_POSITIVE, 0, 1, 0, NULL, "0|1",
        "1: random crops (padding 4) and horizontal flips of the\n"
        "training images (default 0)"),
    OPT("--time-limit", K_REAL, time_limit, W_POSITIVE, 0, 1e9, 0, NULL, "T",
        "stop training after T seconds, or as soon as the first\n"
        "steps predict it would take longer (a failure; default 0: none)"),
    OPT("--threads", K_INT, threads, W_ALWAYS, 0, 256, 0, NULL, "T", "threads for training (default 0: one per CPU)"),
    OPT("--latency-batch", K_LONG, latency_batch, W_CHANGED, 1, 65536, 0, NULL, "B",
        "batch size for the latency measurements (default 1)"),
    OPT("--repeats", K_INT, repeats, W_CHANGED, 1, 1000, 0, NULL, "R",
        "timing repeats, the median is taken (default 30)"),
    OPT("--latency-threads", K_INT, latency_threads, W_CHANGED, 1, 256, 0, NULL, "T",
        "threads for the latency measurements (default 1)"),
    OPT("--kernels", K_STR, kernels, W_CHANGED, 0, 0, 0, kernels, "K",
        "what runs the operator's inference in the latency measurement:\n"
        "exec (the executor, default), halide (a Halide kernel, compiled\n"
        "once and cached) or best (the faster of the two per slot); with\n"
        "halide or best the standard network is timed on Halide too\n"
        "(docs/halide.md)"),
    OPT("--min-speedup", K_REAL, min_speedup, W_CHANGED, 0, 1000, 0, NULL, "X",
        "do not train an operator less than X times faster than\n"
        "the baseline: a failure \"slower than the baseline (0.62x)\"\n"
        "(default 1; 0 = train whatever its speed; never applied\n"
        "to the standard operator)"),
    OPT("--op", K_STR, op_text, W_CHANGED, 0, 0, 0, NULL, "TEXT",
        "the operator's text form, in the variables of --preset\n"
        "(default: the standard operator)"),
    OPT("--preset", K_STR, preset, W_CHANGED, 0, 0, 0, presets, "NAME", "the operator's preset (default conv2d)"),
    OPT("--plan", K_FLAG, plan, W_CHANGED, 0, 0, 0, NULL, NULL, "only print the backbone's slots as JSON"),
    OPT("--confirm", K_FLAG, confirm, W_CHANGED, 0, 0, 0, NULL, NULL,
        "only train (no latency, no speed-up check): the search's\n"
        "re-training of a top candidate at a larger proxy"),
    OPT("--stand-in", K_FLAG, stand_in, W_CHANGED, 0, 0, 0, NULL, NULL,
        "a deterministic stand-in for the evaluation (for tests of\n"
        "the search machinery): no training, no timing; accuracy,\n"
        "speed-up and a run time of 0.05-0.5 s from a hash of the\n"
        "operator (syno/evalproto.h)"),
    OPT("--evaluator", K_STR, evaluator, W_CHANGED, 0, 0, 0, NULL, "CMD",
        "train in this command instead of syno's runtime: it gets a\n"
        "request file's path and answers one JSON line\n"
        "(docs/evaluator.md); the speed gate runs first as without"),
    OPT("--evaluator-timeout", K_REAL, evaluator_timeout, W_POSITIVE, 0, 1e9, 0, NULL, "S",
        "kill the evaluator after S seconds, a failure (default 0: none)"),
    OPT("--json", K_IGNORED, plan, W_NEVER, 0, 0, 0, NULL, NULL, "accepted: the reply is always JSON"),
};
#undef OPT
#define NOPTS ((int)(sizeof opts / sizeof *opts))

#define AT(r, o, T) ((T *)((char *)(r) + (o)->off))

/* The option's value as a number (0 for strings). */
static double num_of(const syno_evalreq_t *r, const opt_t *o) {
  switch (o->kind) {
    case K_INT:
    case K_FLAG: return *AT(r, o, const int);
    case K_LONG: return (double)*AT(r, o, const long);
    case K_REAL: return *AT(r, o, const double);
    case K_SEED: return (double)*AT(r, o, const uint64_t);
    default: return 0;
  }
}

static int changed(const syno_evalreq_t *r, const syno_evalreq_t *d, const opt_t *o) {
  if (o->kind == K_SEED) return *AT(r, o, const uint64_t) != *AT(d, o, const uint64_t);
  if (o->kind != K_STR) return num_of(r, o) != num_of(d, o);
  const char *a = *AT(r, o, const char *const), *b = *AT(d, o, const char *const);
  return a != b && (!a || !b || strcmp(a, b) != 0);
}

static int written(const syno_evalreq_t *r, const syno_evalreq_t *d, const opt_t *o) {
  switch (o->when) {
    case W_ALWAYS: return 1;
    case W_POSITIVE: return num_of(r, o) > 0;
    case W_CHANGED: return changed(r, d, o);
    default: return 0;
  }
}

static void push(syno_evalargv_t *a, const char *s) {
  if (a->argc < SYNO_EVALREQ_MAX_ARGS - 1) a->argv[a->argc++] = (char *)s;
  a->argv[a->argc] = NULL;
}

int syno_evalreq_argv(const syno_evalreq_t *r, syno_evalargv_t *a, syno_error_t *err) {
  memset(a, 0, sizeof *a);
  if (!r->exe || !r->backbone || !r->dataset)
    return syno_error_set(err, "an evaluation request needs the worker program, a backbone and a data set");
  syno_evalreq_t d;
  syno_evalreq_default(&d);
  int nn = 0;
  push(a, r->exe);
  push(a, "eval");
  for (int i = 0; i < NOPTS; i++) {
    const opt_t *o = &opts[i];
    if (!written(r, &d, o)) continue;
    push(a, o->flag);
    if (o->kind == K_FLAG) continue;
    if (o->kind == K_STR) {
      push(a, *AT(r, o, const char *const));
      continue;
    }
    char *v = a->num[nn++];
    size_t n = sizeof a->num[0];
    switch (o->kind) {
      case K_INT: snprintf(v, n, "%d", *AT(r, o, const int)); break;
      case K_LONG: snprintf(v, n, "%ld", *AT(r, o, const long)); break;
      case K_SEED: snprintf(v, n, "%llu", (unsigned long long)*AT(r, o, const uint64_t)); break;
      default: snprintf(v, n, "%.17g", *AT(r, o, const double)); break;
    }
    push(a, v);
  }
  return 0;
}

int syno_evalreq_options(syno_evalreq_t *r, syno_opt_t *t, int cap) {
  static int ignored;
  int n = 0;
  for (int i = 0; i < NOPTS && n < cap - 1; i++) {
    const opt_t *o = &opts[i];
    void *dest = (char *)r + o->off;
    syno_opt_t e = {.name = o->flag + 2, .meta = o->meta, .help = o->help, .dest = dest};
    switch (o->kind) {
      case K_STR:
        e.kind = o->choices ? SYNO_OPT_KIND_ENUM : SYNO_OPT_KIND_STR;
        e.choices = o->choices ? o->choices() : NULL;
        break;
      case K_INT:
      case K_LONG:
        e.kind = SYNO_OPT_KIND_INT;
        e.size = o->kind == K_INT ? sizeof(int) : sizeof(long);
        e.min = (long long)o->lo, e.max = (long long)o->hi;
        break;
      case K_SEED:
        e.kind = SYNO_OPT_KIND_UINT;
        e.size = sizeof(uint64_t);
        e.umax = UINT64_MAX;
        break;
      case K_REAL:
        e.kind = SYNO_OPT_KIND_REAL;
        e.size = sizeof(double);
        e.fmin = o->lo, e.fmax = o->hi, e.flags = o->fl;
        break;
      case K_FLAG:
      case K_IGNORED:
        e.kind = SYNO_OPT_KIND_FLAG;
        e.size = sizeof(int);
        if (o->kind == K_IGNORED) e.dest = &ignored;
        break;
    }
    t[n++] = e;
  }
  t[n] = (syno_opt_t)SYNO_OPT_END;
  return n;
}

int syno_evalreq_from_argv(int argc, char **argv, syno_evalreq_t *r, syno_error_t *err) {
  syno_opt_t t[SYNO_EVALREQ_MAX_OPTS];
  syno_evalreq_options(r, t, SYNO_EVALREQ_MAX_OPTS);
  int rc = syno_opt_parse(t, argc, argv, err);
  if (rc < 0 && err && !strncmp(err->msg, "unexpected argument", 19)) {
    size_t len = strlen(err->msg);
    snprintf(err->msg + len, sizeof err->msg - len, " (the operator goes after --op)");
  }
  return rc;
}

/* ------------------------------------------------------------ the reply */

const char *syno_evalres_line(const char *out) {
  const char *best = NULL;
  for (const char *p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (*p == '{') best = p;
  return best;
}

/* The reply line as a JSON object (cJSON_Delete it), or NULL with err set. */
static cJSON *reply_object(const char *out, const char *what, syno_error_t *err) {
  const char *line = syno_evalres_line(out);
  if (!line) {
    syno_error_set(err, "the worker printed no %s (no line starting with '{')", what);
    return NULL;
  }
  const char *end = NULL;
  cJSON *o = cJSON_ParseWithOpts(line, &end, 0);
  if (o && end) {
    while (*end == ' ' || *end == '\t' || *end == '\r') end++;
    if (*end && *end != '\n') {
      cJSON_Delete(o);
      o = NULL;
    }
  }
  size_t len = strcspn(line, "\n");
  if (!o) {
    syno_error_set(err, "the worker's %s is not valid JSON: %.*s%s", what, len > 80 ? 80 : (int)len, line,
                   len > 80 ? "..." : "");
    return NULL;
  }
  if (!cJSON_IsObject(o)) {
    cJSON_Delete(o);
    syno_error_set(err, "the worker's %s is not a JSON object", what);
    return NULL;
  }
  return o;
}

int syno_evalres_parse(const char *out, syno_db_cand_t *rec, syno_error_t *err) {
  memset(rec, 0, sizeof *rec);
  cJSON *o = reply_object(out, "result", err);
  if (!o) return -1;
  const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "status");
  const cJSON *acc = cJSON_GetObjectItemCaseSensitive(o, "accuracy");
  int rc = 0;
  if (!cJSON_IsNumber(st))
    rc = syno_error_set(err, "the worker's result has no number \"status\"");
  else if (st->valuedouble != 0 && st->valuedouble != 1)
    rc = syno_error_set(err, "the worker's result has status %g (0 ok or 1 failed)", st->valuedouble);
  else if (st->valuedouble == 0 && !cJSON_IsNumber(acc))
    rc = syno_error_set(err, "the worker's result has status 0 but no number \"accuracy\"");
  cJSON_Delete(o);
  if (rc) return rc;
  char *line = strndup(syno_evalres_line(out), strcspn(syno_evalres_line(out), "\n"));
  if (!line) return syno_error_set(err, "out of memory");
  rc = syno_db_cand_from_json(line, rec, err);
  free(line);
  return rc;
}

void syno_evalres_from_job(const syno_job_t *job, double timeout_s, syno_db_cand_t *rec) {
  syno_error_t err;
  int exited = job->end == SYNO_JOB_EXITED && job->exit_code == 0;
  if (!exited || syno_evalres_parse(job->out, rec, &err)) {
    char how[600], why[SYNO_ERROR_LEN + sizeof how + 4];
    syno_pool_job_describe(job, timeout_s, "worker", how, sizeof how);
    /* A worker that ended well but wrote no usable reply: that first. */
    if (exited)
      snprintf(why, sizeof why, "%s (%s)", err.msg, how);
    else
      snprintf(why, sizeof why, "%s", how);
    memset(rec, 0, sizeof *rec);
    rec->status = 1;
    rec->reason = strdup(why);
  }
  rec->started_at = job->started;
  rec->finished_at = job->finished;
}

char *syno_evalres_json(const syno_db_cand_t *rec) { return syno_db_cand_to_json(rec); }

/* ------------------------------------------------------------ the stand-in */

/* A uniform number in [0, 1) from the text, the seed and a stream number. */
static double stand_in_u(const char *text, uint64_t seed, uint64_t stream) {
  uint64_t h = syno_hash_mix(seed, stream);
  for (const unsigned char *c = (const unsigned char *)text; *c; c++) h = syno_hash_mix(h, *c);
  return (double)(syno_hash_fmix64(h) >> 11) / 9007199254740992.0;
}

void syno_evalres_stand_in(const syno_evalreq_t *r, syno_db_cand_t *rec, double *seconds) {
  const char *text = r->op_text ? r->op_text : "";
  uint64_t seed = r->seed + (r->confirm ? 1000003u : 0u);
  *seconds = 0.05 + 0.45 * stand_in_u(text, seed, 3);
  rec->status = 0;
  rec->base_latency_s = 1e-3;
  rec->speedup = r->op_text ? 0.5 + 2.0 * stand_in_u(text, seed, 2) : 1.0;
  rec->latency_s = rec->base_latency_s / rec->speedup;
  rec->accuracy = rec->final_accuracy = r->op_text ? 0.6 + 0.35 * stand_in_u(text, seed, 1) : 0.9;
  rec->epochs_done = r->epochs;
  if (r->op_text && !r->confirm && r->min_speedup > 0 && rec->speedup < r->min_speedup) {
    rec->status = 1;
    rec->accuracy = rec->final_accuracy = 0;
    rec->epochs_done = 0;
    rec->reason = syno_evalres_slower(rec->speedup, r->min_speedup);
  }
}

char *syno_evalres_slower(double speedup, double min_speedup) {
  char why[128];
  if (min_speedup == 1.0)
    snprintf(why, sizeof why, "%s (%.2fx)", SYNO_EVALRES_SLOWER, speedup);
  else
    snprintf(why, sizeof why, "%s (%.2fx, the minimum is %gx)", SYNO_EVALRES_SLOWER, speedup, min_speedup);
  return strdup(why);
}

int syno_evalres_too_slow(const syno_db_cand_t *rec) {
  return rec->status != 0 && rec->reason && !strncmp(rec->reason, SYNO_EVALRES_SLOWER, strlen(SYNO_EVALRES_SLOWER));
}

/* ------------------------------------------------------------ the plan */

static const char *const slot_keys[4] = {"c_in", "c_out", "h", "w"};

int syno_evalplan_parse(const char *out, syno_evalplan_t *p, syno_error_t *err) {
  memset(p, 0, sizeof *p);
  cJSON *o = reply_object(out, "slot plan", err);
  if (!o) return -1;
  const cJSON *slots = cJSON_GetObjectItemCaseSensitive(o, "slots");
  int rc = cJSON_IsArray(slots) ? 0 : syno_error_set(err, "the worker's slot plan has no \"slots\" array");
  int i = 0;
  for (const cJSON *s = rc ? NULL : slots->child; s && rc == 0; s = s->next, i++) {
    long v[4];
    for (int k = 0; k < 4 && rc == 0; k++) {
      const cJSON *x = cJSON_GetObjectItemCaseSensitive(s, slot_keys[k]);
      if (cJSON_IsNumber(x))
        v[k] = (long)x->valuedouble;
      else
        rc = syno_error_set(err, "slot %d of the worker's slot plan has no number \"%s\"", i, slot_keys[k]);
    }
    int dup = 0;
    const cJSON *sx = cJSON_GetObjectItemCaseSensitive(s, "s"), *f = cJSON_GetObjectItemCaseSensitive(s, "flops");
    long seq = cJSON_IsNumber(sx) ? (long)sx->valuedouble : 0;
    double flops = cJSON_IsNumber(f) ? f->valuedouble : 0;
    /* the FLOPs tell a full conv from a grouped one of the same shape */
    for (int j = 0; rc == 0 && j < p->n; j++) {
      const syno_evalslot_t *e = &p->slot[j];
      dup |= e->c_in == v[0] && e->c_out == v[1] && e->h == v[2] && e->w == v[3] && e->s == seq && e->flops == flops;
    }
    if (rc || dup) continue;
    if (p->n == SYNO_MAX_BINDINGS) {
      rc = syno_error_set(err, "the backbone has more than %d distinct slot shapes", SYNO_MAX_BINDINGS);
      break;
    }
    p->slot[p->n++] = (syno_evalslot_t){v[0], v[1], v[2], v[3], flops, seq};
  }
  cJSON_Delete(o);
  if (rc == 0 && p->n == 0) rc = syno_error_set(err, "the backbone has no operator slots");
  return rc;
}

char *syno_evalplan_json(const syno_evalslot_t *slots, int n, double flops, double params) {
  cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "slots");
  for (int i = 0; i < n; i++) {
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, slot_keys[0], (double)slots[i].c_in);
    cJSON_AddNumberToObject(s, slot_keys[1], (double)slots[i].c_out);
    cJSON_AddNumberToObject(s, slot_keys[2], (double)slots[i].h);
    cJSON_AddNumberToObject(s, slot_keys[3], (double)slots[i].w);
    cJSON_AddNumberToObject(s, "flops", slots[i].flops);
    if (slots[i].s > 0) cJSON_AddNumberToObject(s, "s", (double)slots[i].s);
    cJSON_AddItemToArray(a, s);
  }
  cJSON_AddNumberToObject(o, "flops", flops);
  cJSON_AddNumberToObject(o, "params", params);
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}
