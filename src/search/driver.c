/* The operator search end to end: space, search, worker processes, results
 * database. See syno/driver.h.
 *
 * syno_driver_run goes through its phases in order, each on one run_t:
 * run_open (settings, database, pool), run_plan (the backbone's slots and
 * the search spec, for a new search), run_space (space, search, log),
 * run_baseline, run_loop (propose, launch, collect), then the summary event
 * and run_close. The driver prints nothing: it reports through cfg.progress
 * and polls cfg.stop. */
#include "syno/task.h"
#include "syno/clock.h"
#include "syno/file.h"
#include "syno/driver.h"

#include <errno.h>
#include <fcntl.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "syno/cpus.h"
#include "syno/evalproto.h"
#include "syno/pool.h"
#include "syno/search.h"
#include "syno/space.h"
#include "syno/store.h"


void syno_driver_cfg_default(syno_driver_cfg_t *c) {
  memset(c, 0, sizeof *c);
  /* What a worker trains defaults as in the protocol, so the two agree. */
  syno_evalreq_t q;
  syno_evalreq_default(&q);
  c->backbone = q.backbone;
  c->preset = q.preset;
  c->dataset = q.dataset;
  c->epochs = q.epochs;
  c->batch = (int)q.batch;
  c->lr = q.lr;
  c->seed = q.seed;
  c->min_speedup = q.min_speedup;
  c->max_flops_ratio = 0.9; /* the original's published vision searches */
  c->min_flops_ratio = 0.15;
  c->budget = -1; /* unset: 20 for a new search, the recorded one on resume */
  c->workers = 1;
  c->cand_timeout = 600;
  c->reward_lb = c->reward_ub = -1;
  c->confirm = -1; /* unset: 3 for a new search, the recorded one on resume */
}

/* ------------------------------------------------------------ settings */

/* The settings a resumed search must share with the first run. */
static char *settings_json(const syno_driver_cfg_t *c) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "backbone", c->backbone);
  cJSON_AddStringToObject(o, "dataset", c->dataset);
  cJSON_AddNumberToObject(o, "epochs", c->epochs);
  cJSON_AddNumberToObject(o, "batch", c->batch);
  cJSON_AddNumberToObject(o, "width", c->width);
  cJSON_AddNumberToObject(o, "depth", c->depth);
  cJSON_AddNumberToObject(o, "pad", c->pad);
  cJSON_AddNumberToObject(o, "augment", c->augment);
  cJSON_AddNumberToObject(o, "subset", (double)c->subset);
  cJSON_AddNumberToObject(o, "lr", c->lr);
  cJSON_AddNumberToObject(o, "seed", (double)c->seed);
  cJSON_AddNumberToObject(o, "space_depth", c->space_depth);
  cJSON_AddNumberToObject(o, "max_flops_ratio", c->max_flops_ratio);
  cJSON_AddNumberToObject(o, "min_flops_ratio", c->min_flops_ratio);
  cJSON_AddNumberToObject(o, "max_params_ratio", c->max_params_ratio);
  cJSON_AddNumberToObject(o, "max_tensors", c->max_tensors);
  if (c->max_count) cJSON_AddStringToObject(o, "max_count", c->max_count);
  cJSON_AddStringToObject(o, "preset", c->preset);
  cJSON_AddStringToObject(o, "algorithm", c->random ? "random" : "mcts");
  cJSON_AddNumberToObject(o, "reward_lb", c->reward_lb);
  cJSON_AddNumberToObject(o, "reward_ub", c->reward_ub);
  cJSON_AddNumberToObject(o, "budget", c->budget);
  cJSON_AddNumberToObject(o, "min_speedup", c->min_speedup);
  cJSON_AddNumberToObject(o, "confirm", c->confirm);
  if (c->ordered) cJSON_AddTrueToObject(o, "ordered");
  if (c->stand_in) cJSON_AddTrueToObject(o, "stand_in");
  if (c->kernels && strcmp(c->kernels, "exec")) cJSON_AddStringToObject(o, "kernels", c->kernels);
  if (c->evaluator) cJSON_AddStringToObject(o, "evaluator", c->evaluator);
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}

/* Strings read back from the database live as long as the run. */
typedef struct {
  char backbone[64], dataset[256], max_count[256], preset[32], kernels[16], evaluator[2048];
} owned_t;

/* A recorded number, when present: it must lie in [lo, hi] (and be whole when `whole`), or the
 * settings are refused: a damaged or hand-edited database must not turn into an overflowing
 * conversion. 1 read, 0 absent, -1 out of range (err set). */
static int setting(const cJSON *o, const char *key, double lo, double hi, int whole, double *v, syno_error_t *err) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(x)) return 0;
  double d = x->valuedouble;
  if (!(d >= lo && d <= hi) || (whole && d != (double)(long long)d))
    return syno_error_set(err, "the database's search settings have %s %g, outside %s%g..%g", key, d,
                          whole ? "the integers " : "", lo, hi);
  *v = d;
  return 1;
}

static int settings_load(const char *json, syno_driver_cfg_t *c, owned_t *own, syno_error_t *err) {
  cJSON *o = cJSON_Parse(json);
  if (!cJSON_IsObject(o)) {
    cJSON_Delete(o);
    return syno_error_set(err, "the database's search settings are not valid JSON");
  }
  const cJSON *x;
  double v = 0;
  int bad = 0;
  c->min_speedup = 0; /* a search recorded before the check existed trained every candidate */
  /* The ranges are the command line's (flops and reward bounds: -1 is "unset"). */
#define NUM(field, key, lo, hi) \
  if (!bad && (bad = setting(o, key, lo, hi, 0, &v, err)) == 1) c->field = v, bad = 0;
#define INT(field, key, lo, hi, T) \
  if (!bad && (bad = setting(o, key, lo, hi, 1, &v, err)) == 1) c->field = (T)v, bad = 0;
  INT(epochs, "epochs", 1, 10000, int) INT(batch, "batch", 1, 65536, int) INT(depth, "depth", 0, 8, int);
  INT(pad, "pad", 0, 64, int) INT(augment, "augment", 0, 1, int) INT(space_depth, "space_depth", 0, 40, int) INT(max_tensors, "max_tensors", 0, 64, int);
  NUM(width, "width", 0, 4096) NUM(lr, "lr", 1e-12, 100) NUM(max_flops_ratio, "max_flops_ratio", -1, 1000);
  NUM(min_flops_ratio, "min_flops_ratio", -1, 1000)
  NUM(reward_lb, "reward_lb", -1, 1) NUM(reward_ub, "reward_ub", -1, 1);
  NUM(max_params_ratio, "max_params_ratio", 0, 1e6) NUM(min_speedup, "min_speedup", 0, 1000);
  INT(subset, "subset", 0, 1e8, long) INT(seed, "seed", 0, 9007199254740992.0, uint64_t);
  if (c->budget < 0) INT(budget, "budget", 0, 1e9, int);
  if (c->confirm < 0) INT(confirm, "confirm", 0, 1000, int);
#undef NUM
#undef INT
  if (bad) {
    cJSON_Delete(o);
    return -1;
  }
  c->ordered = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ordered"));
  c->stand_in = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "stand_in"));
  if (cJSON_IsString(x = cJSON_GetObjectItemCaseSensitive(o, "algorithm")))
    c->random = strcmp(x->valuestring, "random") == 0;
  if (cJSON_IsString(x = cJSON_GetObjectItemCaseSensitive(o, "backbone"))) {
    snprintf(own->backbone, sizeof own->backbone, "%s", x->valuestring);
    c->backbone = own->backbone;
  }
  x = cJSON_GetObjectItemCaseSensitive(o, "preset");
  snprintf(own->preset, sizeof own->preset, "%s", cJSON_IsString(x) ? x->valuestring : SYNO_DRIVER_LEGACY_PRESET);
  c->preset = own->preset;
  if (cJSON_IsString(x = cJSON_GetObjectItemCaseSensitive(o, "max_count"))) {
    snprintf(own->max_count, sizeof own->max_count, "%s", x->valuestring);
    c->max_count = own->max_count;
  }
  if (cJSON_IsString(x = cJSON_GetObjectItemCaseSensitive(o, "dataset"))) {
    snprintf(own->dataset, sizeof own->dataset, "%s", x->valuestring);
    c->dataset = own->dataset;
  }
  x = cJSON_GetObjectItemCaseSensitive(o, "kernels");
  snprintf(own->kernels, sizeof own->kernels, "%s", cJSON_IsString(x) ? x->valuestring : "exec");
  c->kernels = own->kernels;
  c->evaluator = NULL;
  if (cJSON_IsString(x = cJSON_GetObjectItemCaseSensitive(o, "evaluator"))) {
    snprintf(own->evaluator, sizeof own->evaluator, "%s", x->valuestring);
    c->evaluator = own->evaluator;
  }
  cJSON_Delete(o);
  return 0;
}

/* ------------------------------------------------------------ the run */

/* A candidate proposed and not yet told to the search: running, or (ordered) finished and
 * held until the older ones are told. */
typedef struct {
  int busy;
  long seq; /* the order of proposal */
  syno_candidate_t cand;
  syno_job_t *held; /* its finished evaluation, not yet collected */
} pending_t;

/* One run's state, from opening the database to the summary. */
typedef struct {
  syno_driver_cfg_t c; /* the settings; on resume completed from the database */
  owned_t own;
  syno_db_t *db;
  syno_pool_t *pool;
  syno_space_t *space;
  syno_search_t *search;
  FILE *log;
  char *spec_text;
  syno_db_cand_t base; /* the baseline's record */
  syno_reward_cfg_t rw;
  pending_t *pend;             /* the candidates not yet told, c.workers entries */
  long seq_next, seq_told;     /* proposals launched, and (ordered) told, in order */
  syno_driver_progress_t prog; /* the counters, as reported */
  double t0;
  int fruitless; /* proposals in a row that found nothing */
} run_t;

static int stopping(const run_t *r) { return r->c.stop && *r->c.stop; }

static int time_up(const run_t *r) { return r->c.time_limit > 0 && syno_clock_seconds() - r->t0 >= r->c.time_limit; }

static void emit(run_t *r, syno_driver_event_t ev) {
  if (!r->c.progress || (r->c.quiet && ev != SYNO_DRIVER_DONE)) return;
  r->prog.event = ev;
  r->prog.cfg = &r->c;
  r->prog.elapsed = syno_clock_seconds() - r->t0;
  r->c.progress(&r->prog, r->c.user);
}

static void set_str(char **dst, const char *s) {
  free(*dst);
  *dst = s ? strdup(s) : NULL;
}

/* A language model (the gpt backbone) is judged by validation perplexity, lower being better;
 * the image backbones by test accuracy. */
static int is_lm(const syno_driver_cfg_t *c) { return syno_task_is_lm(c->backbone); }

/* The measure the reward grows with: accuracy, or minus the perplexity. */
static double score(const syno_driver_cfg_t *c, const syno_db_cand_t *r) {
  return is_lm(c) ? -r->perplexity : r->accuracy;
}

static void note_best(const syno_driver_cfg_t *c, syno_driver_progress_t *p, const syno_db_cand_t *r) {
  if (r->status != 0 || r->is_baseline) return;
  if (r->reward > p->best_reward) {
    p->best_reward = r->reward;
    p->best_acc = r->accuracy;
    p->best_ppl = r->perplexity;
    p->best_acc_speedup = r->speedup;
  }
  /* Within the task's tolerance (the paper's: 1 point of accuracy, or of perplexity). */
  const syno_task_backbone_t *t = syno_task_backbone(c->backbone ? c->backbone : "resnet");
  int near = t && (is_lm(c) ? syno_task_within(t, r->perplexity, p->base_ppl)
                            : syno_task_within(t, r->accuracy, p->base_acc));
  if (near && r->speedup > p->best_speedup) p->best_speedup = r->speedup;
}

/* ------------------------------------------------------------ workers */

/* One evaluation with the run's training settings: op NULL is the standard
 * operator, plan only lists the slots. */
static void eval_request(const syno_driver_cfg_t *c, const char *op, int plan, syno_evalreq_t *q) {
  syno_evalreq_default(q);
  q->exe = c->worker_exe;
  q->backbone = c->backbone;
  q->dataset = c->dataset;
  q->epochs = c->epochs;
  q->batch = c->batch;
  q->lr = c->lr;
  q->seed = c->seed;
  q->width = c->width;
  q->depth = c->depth;
  q->subset = c->subset;
  q->pad = c->pad;
  q->augment = c->augment;
  if (c->cand_timeout > 0) q->time_limit = c->cand_timeout * 0.9;
  /* The CPUs shared among the workers, so that W workers do not oversubscribe them. */
  int per = syno_cpu_count() / (c->workers > 0 ? c->workers : 1);
  q->threads = per > 0 ? per : 1;
  q->op_text = op;
  q->stand_in = c->stand_in;
  q->preset = c->preset;
  q->plan = plan;
  q->min_speedup = op ? c->min_speedup : 0; /* the standard operator is always trained */
  if (c->kernels) q->kernels = c->kernels;
  q->evaluator = c->evaluator;
  /* The evaluator stops a little before the pool's timeout, so that its failure says so. */
  if (c->evaluator && c->cand_timeout > 0) q->evaluator_timeout = c->cand_timeout * 0.95;
}

/* The confirmation's larger proxy: twice the epochs, twice the training images (all stay
 * all), the next seed. The work grows by this factor, and so do the time limits. */
static double confirm_scale(const syno_driver_cfg_t *c) { return c->subset > 0 ? 4 : 2; }

static void confirm_request(const syno_driver_cfg_t *c, const char *op, syno_evalreq_t *q) {
  eval_request(c, op, 0, q);
  q->confirm = 1;
  q->min_speedup = 0;
  q->epochs = 2 * c->epochs;
  q->subset = 2 * c->subset;
  q->seed = c->seed + 1;
  if (c->cand_timeout > 0) q->time_limit = confirm_scale(c) * c->cand_timeout * 0.9;
}

/* Runs one evaluation to completion (the plan and the baseline). */
static int run_sync(run_t *r, const syno_evalreq_t *q, syno_job_t **job, syno_error_t *err) {
  syno_evalargv_t a;
  if (syno_evalreq_argv(q, &a, err) || syno_pool_start(r->pool, -1, a.argv, err)) return -1;
  for (;;) {
    int w = syno_pool_wait(r->pool, 0.5, job, err);
    if (w < 0) return -1;
    if (w == 1) return 0;
    if (stopping(r)) return syno_error_set(err, "interrupted");
  }
}

/* ------------------------------------------------------------ opening */

static int run_resume(run_t *r, syno_error_t *err) {
  char *meta = NULL;
  if (syno_db_meta_get(r->db, "driver", &meta, err) != 1)
    return syno_error_set(err, "%s has no search settings to resume (not made by syno search)", r->c.db_path);
  int rc = settings_load(meta, &r->c, &r->own, err);
  free(meta);
  if (rc) return -1;
  if (syno_db_meta_get(r->db, "spec", &r->spec_text, err) != 1)
    return syno_error_set(err, "%s has no search spec to resume", r->c.db_path);
  return 0;
}

/* Checks the settings, opens the database (on resume: takes the recorded
 * settings and spec from it) and makes the worker pool. */
static int run_open(run_t *r, syno_error_t *err) {
  syno_driver_cfg_t *c = &r->c;
  if ((r->pool = c->pool)) c->workers = syno_pool_size(c->pool);
  if (!c->db_path) return syno_error_set(err, "no database path");
  if (!c->worker_exe) return syno_error_set(err, "no worker program");
  if (c->workers < 1) return syno_error_set(err, "workers must be at least 1 (got %d)", c->workers);
  if (c->pad < 0 || c->pad > 64) return syno_error_set(err, "pad must be in 0..64 (got %d)", c->pad);
  if (!(c->min_speedup >= 0)) return syno_error_set(err, "min_speedup must not be negative");
  int caps[SYNO_PRIM_KINDS];
  if (c->max_count && syno_space_caps_parse(c->max_count, caps, err)) return syno_error_prefix(err, "max_count");
  if (!c->resume && access(c->db_path, F_OK) == 0) return syno_error_set(err, "%s already exists", c->db_path);
  if (syno_db_open(c->db_path, c->resume ? 0 : SYNO_DB_CREATE, &r->db, err)) return -1;
  if (c->resume && run_resume(r, err)) return -1;
  if (c->budget < 0) c->budget = 20;
  if (c->confirm < 0) c->confirm = 3;
  if (r->pool) {
    syno_pool_set_timeout(r->pool, c->cand_timeout);
    return 0;
  }
  return syno_pool_new(c->workers, c->cand_timeout, &r->pool, err);
}

/* ------------------------------------------------------------ the plan */

/* The search spec for the plan: the preset bound to every distinct slot
 * shape (batch 1, so FLOPs are per image). NULL with err when the preset
 * cannot fill a slot (a square preset in a non-square slot). */
static char *spec_json(const syno_driver_cfg_t *c, const syno_evalplan_t *plan, syno_error_t *err) {
  syno_signature_t sig;
  if (syno_signature_preset(c->preset, "", &sig, err)) return NULL;
  int linear = sig.kind == SYNO_SIG_LINEAR;
  if (linear != is_lm(c))
    return syno_error_set(err, "the %s backbone's slots are %s; preset %s is not", c->backbone,
                          is_lm(c) ? "linear layers (presets linear, linear-wide)" : "convolutions", c->preset),
           NULL;
  const syno_evalslot_t *p = plan->slot;
  cJSON *o = c->spec ? cJSON_Parse(c->spec) : cJSON_CreateObject();
  if (!cJSON_IsObject(o)) {
    cJSON_Delete(o);
    return syno_error_set(err, "the search's spec is not a JSON object"), NULL;
  }
  /* A spec of the user's: its preset is the search's (checked by the caller); its own FLOPs
   * ratios replace the command line's; the slots bind it. */
  double user_hi = -1, user_lo = -1;
  const cJSON *ux;
  if (cJSON_IsNumber(ux = cJSON_GetObjectItemCaseSensitive(o, "max_flops_ratio")) && ux->valuedouble > 0)
    user_hi = ux->valuedouble;
  if (cJSON_IsNumber(ux = cJSON_GetObjectItemCaseSensitive(o, "min_flops_ratio")) && ux->valuedouble > 0)
    user_lo = ux->valuedouble;
  const int user_abs_hi = cJSON_HasObjectItem(o, "max_flops"), user_abs_lo = cJSON_HasObjectItem(o, "min_flops");
  cJSON_DeleteItemFromObjectCaseSensitive(o, "max_flops_ratio");
  cJSON_DeleteItemFromObjectCaseSensitive(o, "min_flops_ratio");
  cJSON_DeleteItemFromObjectCaseSensitive(o, "preset");
  cJSON_DeleteItemFromObjectCaseSensitive(o, "bind");
  cJSON_AddStringToObject(o, "preset", c->preset);
  cJSON *b = cJSON_AddArrayToObject(o, "bind");
  const syno_evalslot_t *first = NULL;
  double ref = 0; /* the standard operators' FLOPs in the bound slots */
  for (int i = 0; i < plan->n; i++) {
    char s[128];
    /* A QKV-only preset (linear, t*H_in) fills the fused QKV projections alone. */
    if (linear && sig.qkv_only && p[i].c_out != 3 * p[i].c_in) continue;
    if (linear ? syno_signature_linear_binding(&sig, 1, p[i].s, p[i].c_in, p[i].c_out, s, sizeof s, err)
               : syno_signature_conv_binding(&sig, 1, p[i].c_in, p[i].c_out, p[i].h, p[i].w, s, sizeof s, err)) {
      cJSON_Delete(o);
      return NULL;
    }
    if (!(p[i].flops > 0)) {
      cJSON_Delete(o);
      return syno_error_set(err, "slot %d of the plan has no standard-operator FLOPs", i), NULL;
    }
    cJSON_AddItemToArray(b, cJSON_CreateString(s));
    ref += p[i].flops;
    if (!first) first = &p[i];
  }
  if (!first) {
    cJSON_Delete(o);
    return syno_error_set(err, "no slot of the %s backbone fits preset %s", c->backbone, c->preset), NULL;
  }
  if (c->space_depth > 0) {
    cJSON_DeleteItemFromObjectCaseSensitive(o, "depth");
    cJSON_AddNumberToObject(o, "depth", c->space_depth);
  }
  /* The FLOPs limits are ratios (negative: the preset's own) of the standard operator each
   * slot runs, the grouped or depthwise conv where the network has one, not the preset's full
   * one: per image (batch 1), summed over the distinct slots as the space sums an operator's.
   * They go into the spec as absolute limits, the ratios 0 so that neither falls back to the
   * preset's. */
  syno_space_spec_t ps;
  if (syno_space_preset(c->preset, "", &ps, err)) {
    cJSON_Delete(o);
    return NULL;
  }
  double hi = user_hi > 0 ? user_hi : c->max_flops_ratio >= 0 ? c->max_flops_ratio : ps.opts.max_flops_ratio;
  double lo = user_lo > 0 ? user_lo : c->min_flops_ratio >= 0 ? c->min_flops_ratio : ps.opts.min_flops_ratio;
  if (!user_abs_hi) cJSON_AddNumberToObject(o, "max_flops", hi * ref);
  if (!user_abs_lo) cJSON_AddNumberToObject(o, "min_flops", lo * ref);
  cJSON_AddNumberToObject(o, "max_flops_ratio", 0);
  cJSON_AddNumberToObject(o, "min_flops_ratio", 0);
  /* Params are counted on the first binding (syno_node_final_cost). */
  if (c->max_params_ratio > 0) cJSON_DeleteItemFromObjectCaseSensitive(o, "max_params");
  if (c->max_params_ratio > 0)
    cJSON_AddNumberToObject(o, "max_params",
                            c->max_params_ratio * (linear ? 1.0 : 9.0) * (double)first->c_in * (double)first->c_out);
  if (c->max_tensors > 0) {
    cJSON_DeleteItemFromObjectCaseSensitive(o, "max_tensors");
    cJSON_AddNumberToObject(o, "max_tensors", c->max_tensors);
  }
  int caps[SYNO_PRIM_KINDS];
  for (int k = 0; k < SYNO_PRIM_KINDS; k++) caps[k] = -2; /* not named: the preset's cap stays */
  syno_error_t cerr;                                      /* checked by run_open */
  if (c->max_count && syno_space_caps_parse(c->max_count, caps, &cerr) == 0) {
    cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "max_count");
    if (!cJSON_IsObject(m)) {
      cJSON_DeleteItemFromObjectCaseSensitive(o, "max_count");
      m = cJSON_AddObjectToObject(o, "max_count");
    }
    for (int k = 0; k < SYNO_PRIM_KINDS; k++)
      if (caps[k] != -2) {
        cJSON_DeleteItemFromObjectCaseSensitive(m, syno_prim_name((syno_prim_kind_t)k));
        cJSON_AddNumberToObject(m, syno_prim_name((syno_prim_kind_t)k), caps[k]);
      }
  }
  /* An Unfold needs its dim to be min_unfold_ratio (2.3 in conv2d) times the
   * window. The standard 3x3 convolution the operators replace runs on
   * every slot, so the smallest slot side (4 in the last ResNet stage) must
   * admit a window of 3: relax the ratio to that side / 3. */
  long side = 0;
  for (int i = 0; !linear && i < plan->n; i++) {
    long m = p[i].h < p[i].w ? p[i].h : p[i].w;
    if (side == 0 || m < side) side = m;
  }
  if (side > 0 && side < 7 && !cJSON_HasObjectItem(o, "min_unfold_ratio"))
    cJSON_AddNumberToObject(o, "min_unfold_ratio", (double)side / 3.0 - 1e-6);
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}

/* The spec and the settings of a new search, into the database. */
static int record_settings(run_t *r, syno_error_t *err) {
  const syno_driver_cfg_t *c = &r->c;
  syno_db_t *db = r->db;
  char *settings = settings_json(c);
  char seed[32], started[32];
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
  snprintf(started, sizeof started, "%.0f", syno_clock_wall());
  int rc = syno_db_meta_set(db, "spec", r->spec_text, err) || syno_db_meta_set(db, "driver", settings, err) ||
           syno_db_meta_set(db, "backbone", c->backbone, err) || syno_db_meta_set(db, "dataset", c->dataset, err) ||
           syno_db_meta_set(db, "seed", seed, err) ||
           syno_db_meta_set(db, "algorithm", c->random ? "random" : "mcts", err) ||
           syno_db_meta_set(db, "started_at", started, err);
  free(settings);
  return rc ? -1 : 0;
}

/* A new search asks a worker which slots the backbone has, and makes and
 * records the search spec for them; a resumed one has its spec. */
static int run_plan(run_t *r, syno_error_t *err) {
  if (r->spec_text) return 0;
  syno_evalreq_t q;
  eval_request(&r->c, NULL, 1, &q);
  syno_job_t *job = NULL;
  if (run_sync(r, &q, &job, err)) return -1;
  syno_evalplan_t plan;
  int rc;
  if (job->end != SYNO_JOB_EXITED || job->exit_code != 0) {
    char why[600];
    syno_pool_job_describe(job, r->c.cand_timeout, "worker", why, sizeof why);
    rc = syno_error_set(err, "cannot list the backbone's slots: %s", why);
  } else
    rc = syno_evalplan_parse(job->out, &plan, err);
  syno_pool_job_free(job);
  if (rc) return -1;
  if (!(r->spec_text = spec_json(&r->c, &plan, err))) return -1;
  return record_settings(r, err);
}

/* The space from the spec, the search over it, and the log. */
static int run_space(run_t *r, syno_error_t *err) {
  syno_space_spec_t spec;
  if (syno_space_spec_from_json(r->spec_text, &spec, err)) return syno_error_prefix(err, "search spec");
  if (syno_space_new(&spec, &r->space, err)) return -1;
  syno_search_opts_t so;
  syno_search_opts_default(&so);
  so.algorithm = r->c.random ? SYNO_SEARCH_RANDOM : SYNO_SEARCH_MCTS;
  so.seed = r->c.seed;
  if (syno_search_new(r->space, &so, &r->search, err)) return -1;
  if (r->c.log_path) {
    int fd = syno_open_regular(r->c.log_path, O_WRONLY | O_CREAT | O_APPEND, 0644, err);
    if (fd < 0) return syno_error_prefix(err, "the log");
    if (!(r->log = fdopen(fd, "a"))) {
      close(fd);
      return syno_error_set(err, "cannot open the log %s: %s", r->c.log_path, strerror(errno));
    }
  }
  return 0;
}

/* ------------------------------------------------------------ the baseline */

/* The backbone with its standard operator, evaluated and recorded. */
static int train_baseline(run_t *r, syno_error_t *err) {
  emit(r, SYNO_DRIVER_BASELINE_START);
  syno_evalreq_t q;
  eval_request(&r->c, NULL, 0, &q);
  syno_job_t *job = NULL;
  if (run_sync(r, &q, &job, err)) return -1;
  syno_evalres_from_job(job, r->c.cand_timeout, &r->base);
  syno_pool_job_free(job);
  if (r->base.status != 0)
    return syno_error_set(err, "the baseline network failed: %s", r->base.reason ? r->base.reason : "unknown");
  if (is_lm(&r->c) && !(r->base.perplexity > 0))
    return syno_error_set(err, "the baseline language model reported no perplexity");
  r->base.is_baseline = 1;
  set_str(&r->base.op_text, "(standard operator)");
  set_str(&r->base.path, "");
  r->base.reward = 0;
  return syno_db_insert(r->db, &r->base, err);
}

/* The baseline (recorded, or trained now) and the reward's bounds from it. */
static int run_baseline(run_t *r, syno_error_t *err) {
  const syno_driver_cfg_t *c = &r->c;
  r->prog.best_reward = -1;
  r->t0 = syno_clock_seconds();
  int have = syno_db_baseline(r->db, &r->base, err);
  if (have < 0) return -1;
  if (!have && train_baseline(r, err)) return -1;
  syno_reward_default(&r->rw);
  if (is_lm(c)) {
    /* Perplexity, as minus itself: 1 at the baseline's, 0 at 1.3 times it (the accuracy
     * bounds' 0.3 below, relative). */
    r->rw.ub = -r->base.perplexity;
    r->rw.lb = -1.3 * r->base.perplexity;
  } else {
    r->rw.ub = c->reward_ub >= 0 ? c->reward_ub : r->base.accuracy;
    r->rw.lb = c->reward_lb >= 0 ? c->reward_lb : (r->rw.ub - 0.3 > 0 ? r->rw.ub - 0.3 : 0);
  }
  r->prog.base_acc = r->base.accuracy;
  r->prog.base_ppl = r->base.perplexity;
  r->prog.reward_lb = r->rw.lb;
  r->prog.reward_ub = r->rw.ub;
  emit(r, SYNO_DRIVER_BASELINE_DONE);
  return 0;
}

/* ------------------------------------------------------------ the main loop */

/* A proposal recorded by an earlier run gets its recorded reward and is not
 * evaluated: 1 replayed, 0 not recorded, -1 error. */
static int replay(run_t *r, const syno_candidate_t *cand, syno_error_t *err) {
  syno_db_cand_t known;
  int f = syno_db_find(r->db, cand->text, &known, err);
  if (f != 1) return f;
  int rc = syno_search_tell(r->search, cand, known.reward, err);
  if (rc == 0) {
    note_best(&r->c, &r->prog, &known);
    r->prog.replayed++;
  }
  syno_db_cand_clear(&known);
  return rc ? -1 : 1;
}

static int pending(const run_t *r) {
  int n = 0;
  for (int i = 0; i < r->c.workers; i++) n += r->pend[i].busy;
  return n;
}

/* Starts a worker on a candidate; a pending entry is free (and so is a pool slot: every
 * evaluation running has its entry). */
static int start(run_t *r, const syno_candidate_t *cand, syno_error_t *err) {
  int slot = 0;
  while (r->pend[slot].busy) slot++;
  pending_t *pe = &r->pend[slot];
  pe->busy = 1;
  pe->seq = r->seq_next++;
  pe->cand = *cand;
  syno_evalreq_t q;
  eval_request(&r->c, pe->cand.text, 0, &q);
  syno_evalargv_t a;
  if (syno_evalreq_argv(&q, &a, err) || syno_pool_start(r->pool, slot, a.argv, err)) return -1;
  if (r->log) {
    fprintf(r->log, "evaluate %s\n", cand->text);
    fflush(r->log);
  }
  return 0;
}

/* Proposes and starts what the budget, the time and the free slots allow. */
static int launch(run_t *r, syno_error_t *err) {
  const syno_driver_cfg_t *c = &r->c;
  syno_driver_progress_t *p = &r->prog;
  int up = time_up(r);
  while (!stopping(r) && !up && !p->exhausted && pending(r) < c->workers &&
         (c->budget == 0 || p->count + pending(r) < c->budget)) {
    syno_candidate_t cand;
    int got = syno_search_propose(r->search, &cand, err);
    if (got < 0) return -1;
    if (got == 1) {
      p->exhausted = 1;
      break;
    }
    if (got == 2) { /* nothing found this time; the space may still have some */
      if (++r->fruitless == SYNO_DRIVER_FRUITLESS) p->exhausted = 2;
      if (p->exhausted || time_up(r)) break;
      continue;
    }
    r->fruitless = 0;
    int f = replay(r, &cand, err);
    if (f < 0 || (f == 0 && start(r, &cand, err))) return -1;
  }
  return 0;
}

/* A finished evaluation: its record into the database, then its reward to
 * the search. */
static int collect(run_t *r, syno_job_t *job, syno_error_t *err) {
  pending_t *pe = &r->pend[job->tag];
  syno_db_cand_t rec;
  syno_evalres_from_job(job, r->c.cand_timeout, &rec);
  set_str(&rec.op_text, pe->cand.text);
  set_str(&rec.path, pe->cand.path);
  if (rec.flops <= 0) rec.flops = pe->cand.flops;
  if (rec.params <= 0) rec.params = pe->cand.params;
  if (rec.status == 0 && r->base.flops > 0) rec.flops_ratio = rec.flops / r->base.flops;
  rec.worker = (int)job->tag;
  int slow = syno_evalres_too_slow(&rec);
  /* Too slow is a verdict on the operator, not a breakdown: reward 0, not a failure's -1. */
  rec.reward = slow ? 0 : syno_reward(&r->rw, rec.status == 0, score(&r->c, &rec), rec.flops_ratio);
  syno_pool_job_free(job);
  int rc = syno_db_insert(r->db, &rec, err) || syno_search_tell(r->search, &pe->cand, rec.reward, err) ? -1 : 0;
  if (rc == 0) {
    pe->busy = 0;
    r->prog.count++;
    r->prog.evaluated++;
    r->prog.failed += rec.status != 0;
    r->prog.slower += slow;
    note_best(&r->c, &r->prog, &rec);
  }
  syno_db_cand_clear(&rec);
  return rc;
}

/* The finished evaluation to collect next: (ordered) the oldest pending one once it is
 * finished, else any finished one; NULL when there is none. */
static pending_t *next_held(run_t *r) {
  for (int i = 0; i < r->c.workers; i++) {
    pending_t *pe = &r->pend[i];
    if (pe->busy && pe->held && (!r->c.ordered || pe->seq == r->seq_told)) return pe;
  }
  return NULL;
}

/* Collects what may be collected; ordered, each result is followed by the proposal it
 * makes room for, so the k-th proposal always follows the same k - workers + 1 results. */
static int collect_held(run_t *r, syno_error_t *err) {
  pending_t *pe;
  while ((pe = next_held(r))) {
    syno_job_t *job = pe->held;
    pe->held = NULL;
    if (collect(r, job, err)) return -1;
    r->seq_told++;
    if (r->c.ordered && launch(r, err)) return -1;
  }
  return 0;
}

/* Launches and collects until nothing runs and nothing more may start, or
 * the stop flag is set. */
static int run_loop(run_t *r, syno_error_t *err) {
  syno_driver_progress_t *p = &r->prog;
  if (!(r->pend = calloc((size_t)r->c.workers, sizeof *r->pend))) return syno_error_set(err, "out of memory");
  p->count = syno_db_count(r->db);
  for (;;) {
    if (launch(r, err)) return -1;
    p->running = pending(r);
    emit(r, SYNO_DRIVER_PROGRESS);
    if (p->running == 0) break;
    if (stopping(r)) {
      emit(r, SYNO_DRIVER_INTERRUPTED);
      break;
    }
    syno_job_t *job = NULL;
    int w = syno_pool_wait(r->pool, 1.0, &job, err);
    if (w < 0) return -1;
    if (w == 1) {
      r->pend[job->tag].held = job;
      if (collect_held(r, err)) return -1;
    }
  }
  return 0;
}

/* ------------------------------------------------------------ confirmation */

static int by_reward(const void *a, const void *b) {
  const syno_db_cand_t *x = *(syno_db_cand_t *const *)a, *y = *(syno_db_cand_t *const *)b;
  if (x->reward != y->reward) return x->reward < y->reward ? 1 : -1;
  return x->id < y->id ? -1 : 1;
}

/* A finished confirmation into its candidate's confirmation columns. */
static int collect_confirm(run_t *r, const syno_db_cand_t *cand, syno_job_t *job, syno_error_t *err) {
  syno_driver_progress_t *p = &r->prog;
  syno_db_cand_t rec, conf;
  syno_evalres_from_job(job, confirm_scale(&r->c) * r->c.cand_timeout, &rec);
  syno_pool_job_free(job);
  memset(&conf, 0, sizeof conf);
  conf.id = cand->id;
  conf.confirmed = rec.status == 0 ? 1 : -1;
  conf.confirmed_accuracy = rec.status == 0 ? rec.accuracy : 0;
  conf.confirm_reason = rec.status == 0 ? NULL : rec.reason;
  conf.confirm_seconds = rec.finished_at - rec.started_at;
  int rc = syno_db_confirm(r->db, &conf, err);
  if (rc == 0) {
    p->confirm_done++;
    p->confirm_failed += rec.status != 0;
    p->confirm_id = cand->id;
    p->confirm_proxy_acc = cand->accuracy;
    p->confirm_acc = conf.confirmed_accuracy;
    p->confirm_reason = conf.confirm_reason ? conf.confirm_reason : (rec.status ? "unknown" : NULL);
    emit(r, SYNO_DRIVER_CONFIRMED);
    p->confirm_reason = NULL;
  }
  syno_db_cand_clear(&rec);
  return rc;
}

/* Confirms, in the pool, those of the top c->confirm candidates by reward that have no
 * confirmation yet. */
static int confirm_top(run_t *r, syno_db_cand_t **top, int n, syno_error_t *err) {
  const syno_driver_cfg_t *c = &r->c;
  syno_driver_progress_t *p = &r->prog;
  p->confirm_total = n;
  p->confirm_epochs = 2 * c->epochs;
  p->confirm_subset = 2 * c->subset;
  p->confirm_seed = c->seed + 1;
  emit(r, SYNO_DRIVER_CONFIRM_START);
  if (c->cand_timeout > 0) syno_pool_set_timeout(r->pool, confirm_scale(c) * c->cand_timeout);
  for (int next = 0;;) {
    while (!stopping(r) && next < n && syno_pool_free_slots(r->pool) > 0) {
      syno_evalreq_t q;
      confirm_request(c, top[next]->op_text, &q);
      syno_evalargv_t a;
      if (syno_evalreq_argv(&q, &a, err) || syno_pool_start(r->pool, next, a.argv, err)) return -1;
      if (r->log) {
        fprintf(r->log, "confirm %s\n", top[next]->op_text);
        fflush(r->log);
      }
      next++;
    }
    p->running = syno_pool_running(r->pool);
    if (p->running == 0) return 0;
    if (stopping(r)) {
      emit(r, SYNO_DRIVER_INTERRUPTED);
      return 0;
    }
    syno_job_t *job = NULL;
    int w = syno_pool_wait(r->pool, 1.0, &job, err);
    if (w < 0) return -1;
    if (w == 1 && collect_confirm(r, top[job->tag], job, err)) return -1;
  }
}

/* After the search phase (not after the stop flag): the top candidates' confirmations. */
static int run_confirm(run_t *r, syno_error_t *err) {
  if (r->c.confirm <= 0 || stopping(r)) return 0;
  syno_db_cand_t *rows;
  int n;
  if (syno_db_list(r->db, &rows, &n, err)) return -1;
  syno_db_cand_t **top = malloc((size_t)(n ? n : 1) * sizeof *top);
  if (!top) {
    syno_db_list_free(rows, n);
    return syno_error_set(err, "out of memory");
  }
  int m = 0, k = 0;
  for (int i = 0; i < n; i++)
    if (!rows[i].is_baseline && rows[i].status == 0) top[m++] = &rows[i];
  qsort(top, (size_t)m, sizeof *top, by_reward);
  for (int i = 0; i < m && i < r->c.confirm; i++)
    if (top[i]->confirmed == 0) top[k++] = top[i];
  int rc = k > 0 ? confirm_top(r, top, k, err) : 0;
  free(top);
  syno_db_list_free(rows, n);
  return rc;
}

/* ------------------------------------------------------------ the run */

static void run_close(run_t *r) {
  syno_pool_free(r->pool); /* kills what still runs */
  if (r->log) fclose(r->log);
  for (int i = 0; r->pend && i < r->c.workers; i++) syno_pool_job_free(r->pend[i].held);
  free(r->pend);
  syno_search_free(r->search);
  syno_space_free(r->space);
  syno_db_cand_clear(&r->base);
  syno_db_close(r->db);
  free(r->spec_text);
}

int syno_driver_run(const syno_driver_cfg_t *cfg, syno_error_t *err) {
  run_t r;
  memset(&r, 0, sizeof r);
  r.c = *cfg;
  int rc = run_open(&r, err) || run_plan(&r, err) || run_space(&r, err) || run_baseline(&r, err) || run_loop(&r, err) ||
                   run_confirm(&r, err)
               ? -1
               : 0;
  if (rc == 0) {
    r.prog.stopped = stopping(&r);
    r.prog.space = r.space;
    emit(&r, SYNO_DRIVER_DONE);
  }
  run_close(&r);
  return rc;
}
