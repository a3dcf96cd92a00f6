/* The operator search end to end: space, search, worker processes, results
 * database. See syno/driver.h. */
#include "syno/driver.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "syno/evalproto.h"
#include "syno/pool.h"
#include "syno/search.h"
#include "syno/space.h"
#include "syno/store.h"

static volatile sig_atomic_t stop_requested;
static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void syno_driver_cfg_default(syno_driver_cfg_t *c) {
  memset(c, 0, sizeof *c);
  c->backbone = "resnet";
  c->dataset = "digits";
  c->epochs = 2;
  c->batch = 64;
  c->lr = 0.1;
  c->seed = 1;
  c->max_flops_ratio = 1.0;
  c->min_flops_ratio = 0.05;
  c->budget = -1; /* unset: 20 for a new search, the recorded one on resume */
  c->workers = 1;
  c->cand_timeout = 600;
  c->reward_lb = c->reward_ub = -1;
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
  cJSON_AddNumberToObject(o, "subset", (double)c->subset);
  cJSON_AddNumberToObject(o, "lr", c->lr);
  cJSON_AddNumberToObject(o, "seed", (double)c->seed);
  cJSON_AddNumberToObject(o, "space_depth", c->space_depth);
  cJSON_AddNumberToObject(o, "max_flops_ratio", c->max_flops_ratio);
  cJSON_AddNumberToObject(o, "min_flops_ratio", c->min_flops_ratio);
  cJSON_AddNumberToObject(o, "max_params_ratio", c->max_params_ratio);
  cJSON_AddNumberToObject(o, "max_tensors", c->max_tensors);
  if (c->max_count) cJSON_AddStringToObject(o, "max_count", c->max_count);
  cJSON_AddStringToObject(o, "algorithm", c->random ? "random" : "mcts");
  cJSON_AddNumberToObject(o, "reward_lb", c->reward_lb);
  cJSON_AddNumberToObject(o, "reward_ub", c->reward_ub);
  cJSON_AddNumberToObject(o, "budget", c->budget);
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}

/* Strings read back from the database live as long as the run. */
typedef struct {
  char backbone[64], dataset[256], max_count[256];
} owned_t;

static int settings_load(const char *json, syno_driver_cfg_t *c, owned_t *own, syno_error_t *err) {
  cJSON *o = cJSON_Parse(json);
  if (!cJSON_IsObject(o)) {
    cJSON_Delete(o);
    return syno_error_set(err, "the database's search settings are not valid JSON");
  }
  const cJSON *x;
#define NUM(field, key)                                                    \
  if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(o, key))) c->field = x->valuedouble;
#define INT(field, key)                                                    \
  if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(o, key))) c->field = (int)x->valuedouble;
  INT(epochs, "epochs") INT(batch, "batch") INT(depth, "depth") INT(pad, "pad") INT(space_depth, "space_depth");
  NUM(width, "width") NUM(lr, "lr") NUM(max_flops_ratio, "max_flops_ratio") NUM(min_flops_ratio, "min_flops_ratio");
  NUM(reward_lb, "reward_lb") NUM(reward_ub, "reward_ub") NUM(max_params_ratio, "max_params_ratio");
  INT(max_tensors, "max_tensors");
#undef NUM
#undef INT
  if (c->budget < 0 && cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(o, "budget"))) c->budget = (int)x->valuedouble;
  if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(o, "subset"))) c->subset = (long)x->valuedouble;
  if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(o, "seed"))) c->seed = (uint64_t)x->valuedouble;
  if (cJSON_IsString(x = cJSON_GetObjectItemCaseSensitive(o, "algorithm")))
    c->random = strcmp(x->valuestring, "random") == 0;
  if (cJSON_IsString(x = cJSON_GetObjectItemCaseSensitive(o, "backbone"))) {
    snprintf(own->backbone, sizeof own->backbone, "%s", x->valuestring);
    c->backbone = own->backbone;
  }
  if (cJSON_IsString(x = cJSON_GetObjectItemCaseSensitive(o, "max_count"))) {
    snprintf(own->max_count, sizeof own->max_count, "%s", x->valuestring);
    c->max_count = own->max_count;
  }
  if (cJSON_IsString(x = cJSON_GetObjectItemCaseSensitive(o, "dataset"))) {
    snprintf(own->dataset, sizeof own->dataset, "%s", x->valuestring);
    c->dataset = own->dataset;
  }
  cJSON_Delete(o);
  return 0;
}

/* ------------------------------------------------------------ workers */

/* Proposals in a row that may come back empty (syno_search_propose returning
 * 2, each after a few seconds of rollouts) before the search stops. */
#define SEARCH_FRUITLESS 20

static int cpu_count(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

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
  if (c->cand_timeout > 0) q->time_limit = c->cand_timeout * 0.9;
  /* The CPUs shared among the workers, so that W workers do not oversubscribe them. */
  int per = cpu_count() / (c->workers > 0 ? c->workers : 1);
  q->threads = per > 0 ? per : 1;
  q->op_text = op;
  q->plan = plan;
}

/* Runs one job to completion (the plan and the baseline). */
static int run_sync(syno_pool_t *pool, const syno_evalreq_t *q, syno_job_t **job, syno_error_t *err) {
  syno_evalargv_t a;
  if (syno_evalreq_argv(q, &a, err) || syno_pool_start(pool, -1, a.argv, err)) return -1;
  for (;;) {
    int r = syno_pool_wait(pool, 0.5, job, err);
    if (r < 0) return -1;
    if (r == 1) return 0;
    if (stop_requested) return syno_error_set(err, "interrupted");
  }
}

/* ------------------------------------------------------------ the plan */

/* The search spec for the plan: the conv2d preset bound to every distinct
 * slot shape (batch 1, so FLOPs are per image). */
static char *spec_json(const syno_driver_cfg_t *c, const syno_evalplan_t *plan) {
  const syno_evalslot_t *p = plan->slot;
  double std_flops = 0; /* the standard operator's FLOPs over the distinct slots, per image */
  for (int i = 0; i < plan->n; i++)
    std_flops += 2.0 * (double)p[i].c_in * (double)p[i].c_out * 9.0 * (double)p[i].h * (double)p[i].w;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "preset", "conv2d");
  cJSON *b = cJSON_AddArrayToObject(o, "bind");
  for (int i = 0; i < plan->n; i++) {
    char s[128];
    snprintf(s, sizeof s, "N=1,C_in=%ld,C_out=%ld,H=%ld,W=%ld", p[i].c_in, p[i].c_out, p[i].h, p[i].w);
    cJSON_AddItemToArray(b, cJSON_CreateString(s));
  }
  if (c->space_depth > 0) cJSON_AddNumberToObject(o, "depth", c->space_depth);
  if (c->max_flops_ratio > 0) cJSON_AddNumberToObject(o, "max_flops", c->max_flops_ratio * std_flops);
  if (c->min_flops_ratio > 0) cJSON_AddNumberToObject(o, "min_flops", c->min_flops_ratio * std_flops);
  /* Params are counted on the first binding (syno_node_final_cost). */
  if (c->max_params_ratio > 0)
    cJSON_AddNumberToObject(o, "max_params", c->max_params_ratio * 9.0 * (double)p[0].c_in * (double)p[0].c_out);
  if (c->max_tensors > 0) cJSON_AddNumberToObject(o, "max_tensors", c->max_tensors);
  int caps[SYNO_PRIM_KINDS];
  for (int k = 0; k < SYNO_PRIM_KINDS; k++) caps[k] = -1;
  syno_error_t cerr; /* checked by syno_driver_run */
  if (c->max_count && syno_space_caps_parse(c->max_count, caps, &cerr) == 0) {
    cJSON *m = cJSON_AddObjectToObject(o, "max_count");
    for (int k = 0; k < SYNO_PRIM_KINDS; k++)
      if (caps[k] >= 0) cJSON_AddNumberToObject(m, syno_prim_name((syno_prim_kind_t)k), caps[k]);
  }
  /* An Unfold needs its dim to be min_unfold_ratio (2) times the window by
   * default. The standard 3x3 convolution the operators replace runs on
   * every slot, so the smallest slot side (4 in the last ResNet stage) must
   * admit a window of 3: relax the ratio to that side / 3. */
  long side = 0;
  for (int i = 0; i < plan->n; i++) {
    long m = p[i].h < p[i].w ? p[i].h : p[i].w;
    if (side == 0 || m < side) side = m;
  }
  if (side > 0 && side < 6) cJSON_AddNumberToObject(o, "min_unfold_ratio", (double)side / 3.0 - 1e-6);
  char *s = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  return s;
}

/* ------------------------------------------------------------ results */

static void set_str(char **dst, const char *s) {
  free(*dst);
  *dst = s ? strdup(s) : NULL;
}

typedef struct {
  int evaluated, failed, replayed;
  double best_reward, best_acc, best_acc_speedup; /* best reward, and that candidate's */
  double base_acc;      /* the baseline network's accuracy */
  double best_speedup;  /* the fastest candidate within 1 pp of base_acc, 0 if none */
  double t0;
} progress_t;

static void show_progress(const syno_driver_cfg_t *c, const progress_t *p, int count, int running, int tty) {
  if (c->quiet) return;
  /* On a terminal the line is redrawn every second; in a log, one line per change. */
  static int last_count = -1, last_running = -1;
  if (!tty && count == last_count && running == last_running) return;
  last_count = count, last_running = running;
  double el = now_s() - p->t0;
  char rem[48] = "";
  if (c->time_limit > 0) snprintf(rem, sizeof rem, ", %.0f s left", c->time_limit - el > 0 ? c->time_limit - el : 0);
  else if (c->budget > 0 && p->evaluated > 0) {
    double per = el / p->evaluated;
    snprintf(rem, sizeof rem, ", ~%.0f s left", per * (c->budget - count) / (c->workers ? c->workers : 1));
  }
  char of[24] = "";
  if (c->budget > 0) snprintf(of, sizeof of, "/%d", c->budget);
  char best[128] = "no candidate yet", fast[48] = "";
  if (p->best_reward >= 0)
    snprintf(best, sizeof best, "best reward %.4f (acc %.2f%%, %.2fx)", p->best_reward, 100 * p->best_acc,
             p->best_acc_speedup);
  if (p->best_speedup > 0) snprintf(fast, sizeof fast, ", fastest within 1 pp %.2fx", p->best_speedup);
  fprintf(stderr, "%s[search] %d%s recorded (%d new, %d failed, %d replayed, %d running) %s%s  %.0f s%s%s",
          tty ? "\r\033[K" : "", count, of, p->evaluated, p->failed, p->replayed, running, best, fast, el, rem,
          tty ? "" : "\n");
  fflush(stderr);
}

static void note_best(progress_t *p, const syno_db_cand_t *r) {
  if (r->status != 0 || r->is_baseline) return;
  if (r->reward > p->best_reward) {
    p->best_reward = r->reward;
    p->best_acc = r->accuracy;
    p->best_acc_speedup = r->speedup;
  }
  if (r->accuracy >= p->base_acc - 0.01 && r->speedup > p->best_speedup) p->best_speedup = r->speedup;
}

/* ------------------------------------------------------------ the run */

typedef struct {
  int busy;
  syno_candidate_t cand;
} pending_t;

int syno_driver_run(const syno_driver_cfg_t *cfg_in, syno_error_t *err) {
  syno_driver_cfg_t cfg = *cfg_in, *c = &cfg;
  owned_t own;
  int rc = -1;
  syno_db_t *db = NULL;
  syno_pool_t *pool = NULL;
  syno_space_t *space = NULL;
  syno_search_t *search = NULL;
  pending_t *pend = NULL;
  char *settings = NULL, *spec_text = NULL;
  FILE *log = NULL;
  syno_job_t *job = NULL;
  syno_db_cand_t base;
  memset(&base, 0, sizeof base);

  if (!c->db_path) return syno_error_set(err, "no database given (--db FILE)");
  if (!c->worker_exe) return syno_error_set(err, "no worker program");
  if (c->workers < 1) return syno_error_set(err, "--workers must be at least 1 (got %d)", c->workers);
  if (c->pad < 0 || c->pad > 64) return syno_error_set(err, "--pad must be in 0..64 (got %d)", c->pad);
  int caps[SYNO_PRIM_KINDS];
  if (c->max_count && syno_space_caps_parse(c->max_count, caps, err)) return syno_error_prefix(err, "--max-count");
  if (!c->resume && access(c->db_path, F_OK) == 0)
    return syno_error_set(err, "%s already exists; continue it with --resume, or choose another --db", c->db_path);
  if (syno_db_open(c->db_path, !c->resume, &db, err)) return -1;

  char *meta = NULL;
  if (c->resume) {
    if (syno_db_meta_get(db, "driver", &meta, err) != 1) {
      syno_error_set(err, "%s has no search settings to resume (not made by syno search)", c->db_path);
      goto out;
    }
    int r = settings_load(meta, c, &own, err);
    free(meta);
    if (r) goto out;
    if (syno_db_meta_get(db, "spec", &spec_text, err) != 1) {
      syno_error_set(err, "%s has no search spec to resume", c->db_path);
      goto out;
    }
  }
  if (c->budget < 0) c->budget = 20;
  if (syno_pool_new(c->workers, c->cand_timeout, &pool, err)) goto out;
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  stop_requested = 0;

  if (!spec_text) {
    /* Ask a worker which slots the backbone has. */
    syno_evalreq_t q;
    eval_request(c, NULL, 1, &q);
    if (run_sync(pool, &q, &job, err)) goto out;
    if (job->end != SYNO_JOB_EXITED || job->exit_code != 0) {
      char why[600];
      syno_pool_job_describe(job, c->cand_timeout, why, sizeof why);
      syno_error_set(err, "cannot list the backbone's slots: %s", why);
      goto out;
    }
    syno_evalplan_t plan;
    if (syno_evalplan_parse(job->out, &plan, err)) goto out;
    syno_pool_job_free(job);
    job = NULL;
    spec_text = spec_json(c, &plan);
    settings = settings_json(c);
    char seed[32], started[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
    snprintf(started, sizeof started, "%.0f", now_s());
    if (syno_db_meta_set(db, "spec", spec_text, err) || syno_db_meta_set(db, "driver", settings, err) ||
        syno_db_meta_set(db, "backbone", c->backbone, err) || syno_db_meta_set(db, "dataset", c->dataset, err) ||
        syno_db_meta_set(db, "seed", seed, err) ||
        syno_db_meta_set(db, "algorithm", c->random ? "random" : "mcts", err) ||
        syno_db_meta_set(db, "started_at", started, err))
      goto out;
  }

  syno_space_spec_t spec;
  if (syno_space_spec_from_json(spec_text, &spec, err)) {
    syno_error_prefix(err, "search spec");
    goto out;
  }
  if (syno_space_new(&spec, &space, err)) goto out;
  syno_search_opts_t so;
  syno_search_opts_default(&so);
  so.algorithm = c->random ? SYNO_SEARCH_RANDOM : SYNO_SEARCH_MCTS;
  so.seed = c->seed;
  if (syno_search_new(space, &so, &search, err)) goto out;
  if (c->log_path && !(log = fopen(c->log_path, "a"))) {
    syno_error_set(err, "cannot open the log %s", c->log_path);
    goto out;
  }

  progress_t prog = {.best_reward = -1, .t0 = now_s()};
  int tty = isatty(STDERR_FILENO);

  /* The baseline: the backbone with its standard operator. */
  int have_base = syno_db_baseline(db, &base, err);
  if (have_base < 0) goto out;
  if (!have_base) {
    if (!c->quiet) fprintf(stderr, "[search] training the baseline (standard operator in every slot)\n");
    syno_evalreq_t q;
    eval_request(c, NULL, 0, &q);
    if (run_sync(pool, &q, &job, err)) goto out;
    syno_evalres_from_job(job, c->cand_timeout, &base);
    syno_pool_job_free(job);
    job = NULL;
    if (base.status != 0) {
      syno_error_set(err, "the baseline network failed: %s", base.reason ? base.reason : "unknown");
      goto out;
    }
    base.is_baseline = 1;
    set_str(&base.op_text, "(standard operator)");
    set_str(&base.path, "");
    base.reward = 0;
    if (syno_db_insert(db, &base, err)) goto out;
  }
  syno_reward_cfg_t rw;
  syno_reward_default(&rw);
  rw.ub = c->reward_ub >= 0 ? c->reward_ub : base.accuracy;
  rw.lb = c->reward_lb >= 0 ? c->reward_lb : (rw.ub - 0.3 > 0 ? rw.ub - 0.3 : 0);
  prog.base_acc = base.accuracy;
  if (!c->quiet)
    fprintf(stderr, "[search] baseline accuracy %.2f%%, reward bounds [%.3f, %.3f], %s search, seed %llu\n",
            100 * base.accuracy, rw.lb, rw.ub, c->random ? "random" : "MCTS", (unsigned long long)c->seed);

  pend = calloc((size_t)c->workers, sizeof *pend);
  if (!pend) {
    syno_error_set(err, "out of memory");
    goto out;
  }
  /* exhausted: 1 the space has nothing left, 2 proposals keep finding nothing. */
  int count = syno_db_count(db), exhausted = 0, fruitless = 0;
  for (;;) {
    int running = syno_pool_running(pool);
    double el = now_s() - prog.t0;
    int time_up = c->time_limit > 0 && el >= c->time_limit;
    /* Start what the budget allows. */
    while (!stop_requested && !time_up && !exhausted && syno_pool_free_slots(pool) > 0 &&
           (c->budget == 0 || count + running < c->budget)) {
      syno_candidate_t cand;
      int r = syno_search_propose(search, &cand, err);
      if (r < 0) goto out;
      if (r == 1) {
        exhausted = 1;
        break;
      }
      if (r == 2) { /* nothing found this time; the space may still have some */
        if (++fruitless == SEARCH_FRUITLESS) exhausted = 2;
        if (exhausted || (c->time_limit > 0 && now_s() - prog.t0 >= c->time_limit)) break;
        continue;
      }
      fruitless = 0;
      syno_db_cand_t known;
      int f = syno_db_find(db, cand.text, &known, err);
      if (f < 0) goto out;
      if (f == 1) { /* recorded by an earlier run: replay, do not evaluate */
        if (syno_search_tell(search, &cand, known.reward, err)) goto out;
        note_best(&prog, &known);
        prog.replayed++;
        syno_db_cand_clear(&known);
        continue;
      }
      int slot = 0;
      while (pend[slot].busy) slot++;
      pend[slot].busy = 1;
      pend[slot].cand = cand;
      syno_evalreq_t q;
      eval_request(c, pend[slot].cand.text, 0, &q);
      syno_evalargv_t a;
      if (syno_evalreq_argv(&q, &a, err) || syno_pool_start(pool, slot, a.argv, err)) goto out;
      if (log) {
        fprintf(log, "evaluate %s\n", cand.text);
        fflush(log);
      }
      running++;
    }
    show_progress(c, &prog, count, running, tty);
    if (running == 0) break;
    if (stop_requested) {
      if (!c->quiet) fprintf(stderr, "\n[search] interrupted: %d running evaluation(s) dropped; resume with --resume\n", running);
      break;
    }
    int r = syno_pool_wait(pool, 1.0, &job, err);
    if (r < 0) goto out;
    if (r == 0) continue;
    pending_t *p = &pend[job->tag];
    syno_db_cand_t rec;
    syno_evalres_from_job(job, c->cand_timeout, &rec);
    set_str(&rec.op_text, p->cand.text);
    set_str(&rec.path, p->cand.path);
    if (rec.flops <= 0) rec.flops = p->cand.flops;
    if (rec.params <= 0) rec.params = p->cand.params;
    if (rec.status == 0 && base.flops > 0) rec.flops_ratio = rec.flops / base.flops;
    rec.worker = (int)job->tag;
    rec.reward = syno_reward(&rw, rec.status == 0, rec.accuracy, rec.flops_ratio);
    syno_pool_job_free(job);
    job = NULL;
    if (syno_db_insert(db, &rec, err)) {
      syno_db_cand_clear(&rec);
      goto out;
    }
    if (syno_search_tell(search, &p->cand, rec.reward, err)) {
      syno_db_cand_clear(&rec);
      goto out;
    }
    p->busy = 0;
    count++;
    prog.evaluated++;
    prog.failed += rec.status != 0;
    note_best(&prog, &rec);
    syno_db_cand_clear(&rec);
  }
  if (!c->quiet) {
    if (tty) fputc('\n', stderr);
    char why[128] = "";
    if (exhausted == 1) snprintf(why, sizeof why, "; the space has no further operators");
    if (exhausted == 2)
      snprintf(why, sizeof why, "; %d proposals in a row found no new operator (is the FLOPs window too narrow?)",
               SEARCH_FRUITLESS);
    fprintf(stderr, "[search] %s: %d candidates recorded in %s (%d evaluated now, %d failed, %d replayed)%s\n",
            stop_requested ? "stopped" : "done", count, c->db_path, prog.evaluated, prog.failed, prog.replayed, why);
  }
  rc = 0;
out:
  syno_pool_job_free(job);
  syno_pool_free(pool); /* kills what still runs */
  if (log) fclose(log);
  free(pend);
  syno_search_free(search);
  syno_space_free(space);
  syno_db_cand_clear(&base);
  syno_db_close(db);
  free(settings);
  free(spec_text);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  return rc;
}
