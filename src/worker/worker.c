/* One candidate's evaluation, as the search's workers run it: the network, the speed gate, the
 * training, the record. See syno/worker.h. */
#include "syno/worker.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "syno/nn.h"
#include "syno/task.h"

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
int syno_worker_latency(syno_backbone_t *cand, syno_kernels_t kernels, syno_rng_t *rng, long lat_batch, int repeats,
                        syno_db_cand_t *rec, syno_error_t *err) {
  const syno_backbone_cfg_t *bc = &cand->cfg;
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

/* The candidate network: images from the data set's shape (the task table's, or the headers of
 * the user's files; no pixels loaded); a language model through the training driver, which
 * reads the text for its vocabulary. */
int syno_worker_build(const syno_train_cfg_t *tc, syno_backbone_t *cand, syno_error_t *err) {
  const syno_task_backbone_t *task = syno_task_backbone_find(tc->backbone, err);
  if (!task) return -1;
  const char *preset = tc->preset ? tc->preset : task->preset;
  if (task->kind == SYNO_TASK_TEXT) {
    if (strcmp(tc->dataset, task->dataset))
      return syno_error_set(err, "the %s backbone trains on %s (got '%s')", task->name, task->dataset, tc->dataset);
    if (strncmp(preset, "linear", 6))
      return syno_error_set(err, "--preset %s: the %s backbone's slots are linear (linear, linear-wide)", preset,
                            task->name);
    return syno_train_build(tc, cand, err);
  }
  if (strncmp(preset, "conv2d", 6))
    return syno_error_set(err, "--preset %s: the %s backbone's slots are convolutions (conv2d, conv2d-wide)", preset,
                          tc->backbone);
  int64_t in_c, in_h, in_w;
  int classes;
  const syno_task_dataset_t *data = syno_task_dataset(tc->dataset);
  if (!data || data->kind != SYNO_TASK_IMAGES) {
    char sets[256];
    syno_task_join(syno_task_dataset_names(SYNO_TASK_IMAGES), " or ", sets, sizeof sets);
    return syno_error_set(err, "the %s backbone trains on images: %s (got '%s')", tc->backbone, sets, tc->dataset);
  }
  if (syno_train_image_shape(tc->dataset, &in_c, &in_h, &in_w, &classes, err)) return -1;
  syno_slotop_t *op = NULL;
  if (tc->op_text && syno_slotop_parse_preset(preset, tc->op_text, &op, err)) return syno_error_prefix(err, "--op");
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
  int rc = syno_backbone_build(&bc, &rng, cand, err);
  syno_slotop_free(op);
  return rc;
}

/* The training (and network) settings of a request. */
void syno_worker_train_cfg(const syno_evalreq_t *req, syno_train_cfg_t *tc) {
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

char *syno_worker_plan(const syno_backbone_t *cand) {
  syno_evalslot_t *slots = calloc((size_t)(cand->nslots > 0 ? cand->nslots : 1), sizeof *slots);
  if (!slots) return NULL;
  for (int i = 0; i < cand->nslots; i++) {
    syno_slot_info_t si;
    syno_slot_info(cand->slots[i], &si);
    slots[i] = (syno_evalslot_t){(long)si.c_in, (long)si.c_out,   (long)si.h,
                                 (long)si.w,    (double)si.flops, si.kind == SYNO_SLOT_LINEAR ? (long)si.s : 0};
  }
  char *s = syno_evalplan_json(slots, cand->nslots, (double)cand->flops, (double)cand->params);
  free(slots);
  return s;
}

/* The proxy training on syno's runtime, into the record. */
static void train_here(const syno_train_cfg_t *tc, syno_db_cand_t *rec) {
  syno_train_result_t res;
  memset(&res, 0, sizeof res);
  syno_error_t err;
  if (syno_train_run(tc, &res, &err)) {
    rec->status = 1;
    rec->reason = strdup(err.msg);
  } else if (res.failed) {
    rec->status = 1;
    rec->reason = strdup(res.failure);
  }
  rec->accuracy = res.max_test_acc;
  if (syno_task_is_lm(tc->backbone)) rec->perplexity = exp(res.final_test_loss);
  rec->final_accuracy = res.final_test_acc;
  rec->train_loss = res.final_train_loss;
  rec->flops = (double)res.flops;
  rec->params = (double)res.params;
  rec->train_seconds = res.wall_seconds;
  rec->epochs_done = res.epochs_done;
}

int syno_worker_eval(const syno_evalreq_t *req, syno_db_cand_t *rec, syno_error_t *err) {
  memset(rec, 0, sizeof *rec);
  syno_kernels_t kernels = SYNO_KERNELS_EXEC;
  if (syno_kernels_parse(req->kernels, &kernels))
    return syno_error_set(err, "--kernels %s: exec, halide or best", req->kernels);
  syno_train_cfg_t tc;
  syno_worker_train_cfg(req, &tc);
  syno_nn_threads_set(req->confirm ? req->threads : req->latency_threads);
  syno_backbone_t cand;
  if (syno_worker_build(&tc, &cand, err)) return -1;
  syno_rng_t rng;
  syno_rng_seed(&rng, tc.seed, 99);
  if (req->stand_in) {
    double seconds;
    syno_evalres_stand_in(req, rec, &seconds);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {}
  } else if (!req->confirm) {
    /* Latency first, before anything has trained in this process: no training, nor the threads
     * it leaves spinning, shares the CPU with the measurement. A candidate that is not fast
     * enough is then not trained at all; the standard operator always is. */
    syno_error_t lerr;
    if (syno_worker_latency(&cand, kernels, &rng, req->latency_batch, req->repeats, rec, &lerr)) {
      rec->status = 1;
      rec->reason = strdup(lerr.msg);
    } else if (tc.op_text && req->min_speedup > 0 && !(rec->speedup >= req->min_speedup)) {
      rec->status = 1;
      rec->reason = syno_evalres_slower(rec->speedup, req->min_speedup);
    }
  }
  rec->flops = (double)cand.flops;
  rec->params = (double)cand.params;
  if (rec->status == 0 && !req->stand_in) {
    syno_nn_threads_set(req->threads);
    if (req->evaluator)
      syno_worker_external(req, &cand, rec);
    else
      train_here(&tc, rec);
  }
  if (tc.op_text && !rec->op_text) rec->op_text = strdup(tc.op_text);
  syno_backbone_free(&cand);
  return 0;
}

int syno_worker_retime(const syno_train_cfg_t *tc, const syno_evalreq_t *req, const char *db_path, long id,
                       syno_db_cand_t *rec, syno_error_t *err) {
  memset(rec, 0, sizeof *rec);
  syno_kernels_t kernels = SYNO_KERNELS_EXEC;
  if (syno_kernels_parse(req->kernels, &kernels))
    return syno_error_set(err, "--kernels %s: exec, halide or best", req->kernels);
  syno_nn_threads_set(req->latency_threads);
  syno_backbone_t cand;
  if (syno_worker_build(tc, &cand, err)) return -1;
  syno_rng_t rng;
  syno_rng_seed(&rng, tc->seed, 99);
  syno_db_t *db = NULL;
  int rc = syno_worker_latency(&cand, kernels, &rng, req->latency_batch, req->repeats, rec, err);
  if (rc)
    syno_error_prefix(err, "re-timing candidate %ld", id);
  else {
    /* The measurement's fields, as the row's re-timing (strings borrowed from rec). */
    const syno_db_cand_t rt = {.id = id,
                               .retime_latency_s = rec->latency_s,
                               .retime_base_latency_s = rec->base_latency_s,
                               .retime_base_impl = rec->base_impl,
                               .retime_nnconv_latency_s = rec->nnconv_latency_s,
                               .retime_speedup = rec->speedup,
                               .retime_speedup_nnconv = rec->speedup_nnconv,
                               .retime_repeats = req->repeats};
    rc = syno_db_open(db_path, 0, &db, err) || syno_db_retime(db, &rt, err) ? -1 : 0;
  }
  syno_db_close(db);
  syno_backbone_free(&cand);
  return rc;
}
