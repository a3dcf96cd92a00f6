/* syno eval: one candidate's evaluation, as the search's worker runs it. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "syno/task.h"
#include "cli.h"
#include "syno/backbone.h"
#include "syno/evalproto.h"
#include "syno/kernels.h"
#include "syno/store.h"

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

/* The name of what ran a standard network or slot timed at lat (SYNO_LAT_*): gpt's linear
 * layers are sgemm; as kernels, kernel says which ("halide", or "exec" under best). */
static const char *std_impl(int gpt, int lat, const char *kernel) {
  return gpt ? "sgemm" : lat == SYNO_LAT_HALIDE ? kernel : syno_latency_impl_name(lat);
}

/* Times the candidate network against the standard one, in this process, with the standard
 * convolutions on oneDNN and on syno's im2col + BLAS path (and, with --kernels halide or
 * best, as Halide kernels); the baseline is the fastest. The candidate's slots run on what
 * `kernels` says. Fills the record's latency fields; each slot's entry says which kernel
 * ran it. With kernels other than exec, also prints the latencies and their kernels to
 * stderr (stdout is the JSON record). */
static int measure_latency(syno_backbone_t *cand, const syno_backbone_cfg_t *bc, syno_kernels_t kernels,
                           syno_rng_t *rng, long lat_batch, int repeats, syno_db_cand_t *rec, syno_error_t *err) {
  syno_latency_cmp_t lc;
  syno_backbone_cfg_t kc = *bc;
  kc.kernels = kernels;
  if (syno_backbone_latency_cmp(cand, &kc, rng, lat_batch, repeats, &lc, err)) return -1;
  int fast = syno_latency_fastest(lc.net);
  /* gpt has no convolution: its two standard networks are one, every linear layer an sgemm. */
  int gpt = syno_task_is_lm(bc->name);
  rec->latency_s = lc.net[SYNO_LAT_CAND];
  rec->base_latency_s = lc.net[fast];
  rec->base_impl = strdup(std_impl(gpt, fast, lc.std_kernel));
  if (kernels != SYNO_KERNELS_EXEC) {
    fprintf(stderr, "latency (--kernels %s): this network %.4f ms (slots on %s); standard network %.4f ms (%s)",
            syno_kernels_name(kernels), 1e3 * lc.net[SYNO_LAT_CAND], lc.net_kernel, 1e3 * lc.net[fast], rec->base_impl);
    if (!gpt) {
      fprintf(stderr, "; standard on oneDNN %.4f ms, im2col %.4f ms", 1e3 * lc.net[SYNO_LAT_ONEDNN],
              1e3 * lc.net[SYNO_LAT_IM2COL]);
      if (lc.net[SYNO_LAT_HALIDE] > 0)
        fprintf(stderr, ", as kernels (%s) %.4f ms", lc.std_kernel, 1e3 * lc.net[SYNO_LAT_HALIDE]);
      else
        fprintf(stderr, "; not timed as kernels: %s", lc.std_kernel_note);
    }
    fprintf(stderr, "\n");
    for (int i = 0; i < lc.nslots; i++) {
      int sf = syno_latency_fastest(lc.slot_t[i]);
      fprintf(stderr, "  slot %lldx%lld %lldx%lld: this operator %.4f ms (%s); standard %.4f ms (%s)\n",
              (long long)lc.slot[i].c_in, (long long)lc.slot[i].c_out, (long long)lc.slot[i].h, (long long)lc.slot[i].w,
              1e3 * lc.slot_t[i][SYNO_LAT_CAND], lc.slot_kernel[i], 1e3 * lc.slot_t[i][sf],
              std_impl(gpt, sf, lc.std_slot_kernel[i]));
    }
  }
  rec->nnconv_latency_s = lc.net[SYNO_LAT_IM2COL];
  rec->speedup = rec->base_latency_s / rec->latency_s;
  rec->speedup_nnconv = rec->nnconv_latency_s / rec->latency_s;
  rec->flops_ratio = lc.std_flops > 0 ? (double)cand->flops / (double)lc.std_flops : 0;
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < lc.nslots; i++) {
    const double *st = lc.slot_t[i];
    int sf = syno_latency_fastest(st);
    cJSON *s = cJSON_CreateObject();
    cJSON_AddNumberToObject(s, "c_in", (double)lc.slot[i].c_in);
    cJSON_AddNumberToObject(s, "c_out", (double)lc.slot[i].c_out);
    cJSON_AddNumberToObject(s, "h", (double)lc.slot[i].h);
    cJSON_AddNumberToObject(s, "w", (double)lc.slot[i].w);
    if (lc.slot[i].kind == SYNO_SLOT_LINEAR) cJSON_AddNumberToObject(s, "s", (double)lc.slot[i].s);
    cJSON_AddNumberToObject(s, "latency_s", st[SYNO_LAT_CAND]);
    cJSON_AddNumberToObject(s, "onednn_latency_s", st[SYNO_LAT_ONEDNN]);
    cJSON_AddNumberToObject(s, "im2col_latency_s", st[SYNO_LAT_IM2COL]);
    if (st[SYNO_LAT_HALIDE] > 0) {
      cJSON_AddNumberToObject(s, "kernels_latency_s", st[SYNO_LAT_HALIDE]);
      cJSON_AddStringToObject(s, "kernels_impl", lc.std_slot_kernel[i]);
    }
    cJSON_AddStringToObject(s, "kernel", lc.slot_kernel[i]);
    cJSON_AddStringToObject(s, "base_impl", std_impl(gpt, sf, lc.std_slot_kernel[i]));
    cJSON_AddNumberToObject(s, "speedup", st[sf] / st[SYNO_LAT_CAND]);
    cJSON_AddNumberToObject(s, "speedup_im2col", st[SYNO_LAT_IM2COL] / st[SYNO_LAT_CAND]);
    cJSON_AddItemToArray(a, s);
  }
  rec->slots_json = cJSON_PrintUnformatted(a);
  cJSON_Delete(a);
  return 0;
}

static int dataset_shape(const char *name, int64_t *c, int64_t *h, int64_t *w, int *classes) {
  const syno_task_dataset_t *d = syno_task_dataset(name);
  if (!d || d->kind != SYNO_TASK_IMAGES) return -1;
  *c = d->channels, *h = *w = d->side, *classes = d->classes;
  return 0;
}

/* The candidate network: images from the data set's known shape (no data loaded); gpt through
 * the training driver, which reads the text for its vocabulary. 0, or the exit status. */
static int build_candidate(const syno_train_cfg_t *tc, syno_backbone_t *cand) {
  syno_error_t err;
  const syno_task_backbone_t *task = syno_task_backbone(tc->backbone);
  if (task && task->kind == SYNO_TASK_TEXT) {
    if (strcmp(tc->dataset, task->dataset))
      return cli_cmd_error(NULL, "the %s backbone trains on %s (got '%s')", task->name, task->dataset, tc->dataset);
    if (strncmp(tc->preset, "linear", 6))
      return cli_cmd_error(NULL, "--preset %s: the gpt backbone's slots are linear (linear, linear-wide)", tc->preset);
    return syno_train_build(tc, cand, &err) ? cli_cmd_error(NULL, "%s", err.msg) : 0;
  }
  if (strncmp(tc->preset, "conv2d", 6))
    return cli_cmd_error(NULL, "--preset %s: the %s backbone's slots are convolutions (conv2d, conv2d-wide)", tc->preset,
                           tc->backbone);
  int64_t in_c, in_h, in_w;
  int classes;
  if (dataset_shape(tc->dataset, &in_c, &in_h, &in_w, &classes))
    return cli_cmd_error(NULL, "the %s backbone trains on images: digits or fashion-mnist (got '%s')", tc->backbone,
                           tc->dataset);
  syno_slotop_t *op = NULL;
  if (tc->op_text && syno_slotop_parse_preset(tc->preset, tc->op_text, &op, &err))
    return cli_cmd_error(NULL, "--op: %s", err.msg);
  syno_backbone_cfg_t bc = {.name = tc->backbone,
                            .in_c = in_c,
                            .in_h = in_h + 2 * tc->pad,
                            .in_w = in_w + 2 * tc->pad,
                            .nclasses = classes,
                            .width = tc->width,
                            .depth = tc->depth,
                            .op = op};
  syno_rng_t rng;
  syno_rng_seed(&rng, tc->seed, 99);
  int rc = syno_backbone_build(&bc, &rng, cand, &err);
  syno_slotop_free(op);
  return rc ? cli_cmd_error(NULL, "%s", err.msg) : 0;
}

/* The training (and network) settings of a request. */
static void train_cfg(const syno_evalreq_t *req, syno_train_cfg_t *tc) {
  memset(tc, 0, sizeof *tc);
  tc->backbone = req->backbone;
  tc->dataset = req->dataset;
  tc->op_text = req->op_text;
  tc->preset = req->preset;
  tc->epochs = req->epochs;
  tc->batch = req->batch;
  tc->lr = req->lr;
  tc->seed = req->seed;
  tc->width = req->width;
  tc->depth = req->depth;
  tc->subset = req->subset;
  tc->pad = req->pad;
  tc->augment = req->augment;
  tc->time_limit = req->time_limit;
  tc->quiet = 1;
}

/* syno eval --db DB --id N --retime: candidate N's network timed against the standard one as
 * measure_latency does, the figures written into its row (syno_db_retime), printed as one JSON
 * line, and said in words on stderr. */
static int retime_candidate(const syno_evalreq_t *req, const syno_opt_t *opts, const char *path, long id) {
  static const char *const own[] = {"op",    "preset", "backbone", "dataset",  "pad", "width",
                                    "depth", "plan",   "confirm",  "stand-in", NULL};
  for (int i = 0; own[i]; i++)
    if (syno_opt_given(opts, own[i]))
      return cli_cmd_error("eval",
                           "--retime takes the operator, backbone, data set, padding, width and depth from "
                           "the search and only times; drop --%s",
                           own[i]);
  syno_train_cfg_t tc;
  train_cfg(req, &tc);
  char strs[3][256], *op = NULL;
  int rc = cli_candidate_from_db(path, id, "re-timing", &tc, strs, &op);
  if (rc) return rc;
  if (!op)
    return cli_cmd_error("eval", "candidate %ld of %s is the baseline, the reference of every speed-up", id, path);
  tc.op_text = op;
  syno_kernels_t kernels = SYNO_KERNELS_EXEC;
  if (syno_kernels_parse(req->kernels, &kernels)) {
    free(op);
    return cli_cmd_error(NULL, "--kernels %s: exec, halide or best", req->kernels);
  }
  syno_nn_threads_set(req->latency_threads);
  syno_backbone_t cand;
  if ((rc = build_candidate(&tc, &cand))) {
    free(op);
    return rc;
  }
  syno_rng_t rng;
  syno_rng_seed(&rng, tc.seed, 99);
  syno_db_cand_t rec;
  memset(&rec, 0, sizeof rec);
  syno_error_t err;
  syno_db_t *db = NULL;
  rc = SYNO_EXIT_FAIL;
  if (measure_latency(&cand, &cand.cfg, kernels, &rng, req->latency_batch, req->repeats, &rec, &err))
    fprintf(stderr, "syno eval: re-timing candidate %ld failed: %s\n", id, err.msg);
  else {
    /* The measurement's fields, as the row's re-timing (strings borrowed from rec). */
    const syno_db_cand_t rt = {.id = id,
                               .retime_latency_s = rec.latency_s,
                               .retime_base_latency_s = rec.base_latency_s,
                               .retime_base_impl = rec.base_impl,
                               .retime_nnconv_latency_s = rec.nnconv_latency_s,
                               .retime_speedup = rec.speedup,
                               .retime_speedup_nnconv = rec.speedup_nnconv,
                               .retime_repeats = req->repeats};
    if (syno_db_open(path, 0, &db, &err) || syno_db_retime(db, &rt, &err))
      fprintf(stderr, "syno eval: %s\n", err.msg);
    else {
      rc = 0;
      int gpt = syno_task_is_lm(tc.backbone);
      fprintf(stderr, "candidate %ld: %.2fx faster than the standard network on %s (%.4f vs %.4f ms", id, rec.speedup,
              rec.base_impl, 1e3 * rec.latency_s, 1e3 * rec.base_latency_s);
      if (!gpt) fprintf(stderr, "; %.2fx vs im2col", rec.speedup_nnconv);
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
  }
  syno_db_close(db);
  syno_db_cand_clear(&rec);
  syno_backbone_free(&cand);
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
  syno_opt_t opts[SYNO_EVALREQ_MAX_OPTS + 3];
  int k = syno_evalreq_options(&req, opts, SYNO_EVALREQ_MAX_OPTS);
  opts[k++] = (syno_opt_t)SYNO_OPT_PATH("db", "DB", &db_path, SYNO_OPT_FILE,
                                        "with --id N --retime: a search's results database");
  opts[k++] = (syno_opt_t)SYNO_OPT_INT("id", "N", &db_id, 1, 1000000000000000LL, "the candidate of --db");
  opts[k++] = (syno_opt_t)SYNO_OPT_FLAG("retime", &retime,
                                        "time candidate --id of --db again and record it there\n"
                                        "(no training; e.g. --repeats 201 on a quiet machine)");
  opts[k] = (syno_opt_t)SYNO_OPT_END;
  int rc = cli_parse("eval", usage, NULL, opts, argc, argv);
  if (rc >= 0) return rc;
  if (syno_opt_conflict(opts, "plan", "confirm", &err)) return cli_cmd_error("eval", "%s", err.msg);
  if (!db_path != !db_id || !db_path != !retime)
    return cli_cmd_error("eval", "--db, --id and --retime go together (re-time candidate N of a search)");
  if (retime) return retime_candidate(&req, opts, db_path, db_id);
  syno_train_cfg_t tc;
  train_cfg(&req, &tc);
  int plan = req.plan, repeats = req.repeats, threads = req.threads, lat_threads = req.latency_threads;
  long lat_batch = req.latency_batch;
  syno_nn_threads_set(req.confirm ? threads : lat_threads);
  if (tc.pad < 0 || tc.pad > 64) return cli_cmd_error(NULL, "--pad must be in 0..64 (got %d)", tc.pad);
  syno_backbone_t cand;
  if ((rc = build_candidate(&tc, &cand))) return rc;
  const syno_backbone_cfg_t *bc = &cand.cfg;
  int gpt = syno_task_is_lm(tc.backbone);
  syno_rng_t rng;
  syno_rng_seed(&rng, tc.seed, 99);
  if (plan) {
    syno_evalslot_t *slots = calloc((size_t)(cand.nslots > 0 ? cand.nslots : 1), sizeof *slots);
    for (int i = 0; slots && i < cand.nslots; i++) {
      syno_slot_info_t si;
      syno_slot_info(cand.slots[i], &si);
      slots[i] = (syno_evalslot_t){(long)si.c_in, (long)si.c_out,   (long)si.h,
                                   (long)si.w,    (double)si.flops, si.kind == SYNO_SLOT_LINEAR ? (long)si.s : 0};
    }
    char *s = slots ? syno_evalplan_json(slots, cand.nslots, (double)cand.flops, (double)cand.params) : NULL;
    int ok = s != NULL;
    if (ok) printf("%s\n", s);
    free(s);
    free(slots);
    syno_backbone_free(&cand);
    return ok ? 0 : SYNO_EXIT_FAIL;
  }

  syno_db_cand_t rec;
  memset(&rec, 0, sizeof rec);
  rc = 0;
  if (req.stand_in) {
    double seconds;
    syno_evalres_stand_in(&req, &rec, &seconds);
    rec.flops = (double)cand.flops;
    rec.params = (double)cand.params;
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {}
  } else if (!req.confirm) {
    /* Latency first, before anything has trained in this process: no training, nor the threads
     * it leaves spinning, shares the CPU with the measurement. A candidate that is not fast
     * enough is then not trained at all; the standard operator always is. */
    syno_kernels_t kernels = SYNO_KERNELS_EXEC;
    if (syno_kernels_parse(req.kernels, &kernels))
      return cli_cmd_error(NULL, "--kernels %s: exec, halide or best", req.kernels);
    if (measure_latency(&cand, bc, kernels, &rng, lat_batch, repeats, &rec, &err)) {
      rec.status = 1;
      rec.reason = strdup(err.msg);
    } else if (tc.op_text && req.min_speedup > 0 && !(rec.speedup >= req.min_speedup)) {
      rec.status = 1;
      rec.reason = syno_evalres_slower(rec.speedup, req.min_speedup);
    }
  }
  if (rec.status == 0 && !req.stand_in) {
    syno_nn_threads_set(threads);
    syno_train_result_t res;
    if (syno_train_run(&tc, &res, &err)) {
      rec.status = 1;
      rec.reason = strdup(err.msg);
    } else if (res.failed) {
      rec.status = 1;
      rec.reason = strdup(res.failure);
    }
    rec.accuracy = res.max_test_acc;
    if (gpt) rec.perplexity = exp(res.final_test_loss);
    rec.final_accuracy = res.final_test_acc;
    rec.train_loss = res.final_train_loss;
    rec.flops = (double)res.flops;
    rec.params = (double)res.params;
    rec.train_seconds = res.wall_seconds;
    rec.epochs_done = res.epochs_done;
  } else {
    rec.flops = (double)cand.flops;
    rec.params = (double)cand.params;
  }
  if (tc.op_text) rec.op_text = strdup(tc.op_text);
  char *json = syno_evalres_json(&rec);
  if (!json)
    rc = SYNO_EXIT_FAIL;
  else {
    printf("%s\n", json);
    free(json);
  }
  syno_db_cand_clear(&rec);
  syno_backbone_free(&cand);
  return rc;
}
