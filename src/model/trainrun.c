/* The training driver: data, backbone, optimizer (SGD or AdamW) + cosine schedule, per-epoch
 * evaluation. One loop serves every backbone: a sample source hides whether a sample is an
 * image with a class or a text window with a next character per position. See
 * syno/backbone.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "syno/task.h"
#include "syno/backbone.h"
#include "syno/clock.h"
#include "syno/data.h"

#ifndef SYNO_SOURCE_DATA_DIR
#define SYNO_SOURCE_DATA_DIR "data"
#endif

static int file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A committed data file: $SYNO_SOURCE_DIR/data, ./data, then the source tree this was built
 * from. */
static void data_path(const char *file, char *path, size_t n) {
  const char *env = getenv("SYNO_SOURCE_DIR");
  if (env && snprintf(path, n, "%s/data/%s", env, file) > 0 && file_exists(path)) return;
  snprintf(path, n, "data/%s", file);
  if (file_exists(path)) return;
  snprintf(path, n, "%s/%s", SYNO_SOURCE_DATA_DIR, file);
}

int syno_train_data_location(const char *name, char *path, size_t n) {
  const syno_task_dataset_t *d = syno_task_dataset(name);
  if (!d) return snprintf(path, n, "%s", name) < 0 ? -1 : 0;
  const char *env = d->dir_env ? getenv(d->dir_env) : NULL;
  switch (d->id) {
    case SYNO_TASK_DIGITS: data_path("digits.csv.gz", path, n); break;
    case SYNO_TASK_KJV: data_path(SYNO_KJV_FILE, path, n); break;
    case SYNO_TASK_FASHION_MNIST: snprintf(path, n, "%s", SYNO_FASHION_MNIST_DIR); break;
    default:
      if (env && *env)
        snprintf(path, n, "%s", env);
      else
        data_path(d->dir, path, n);
  }
  return 0;
}

int syno_train_image_shape(const char *dataset, int64_t *c, int64_t *h, int64_t *w, int *classes, syno_error_t *err) {
  const syno_task_dataset_t *d = syno_task_dataset(dataset);
  if (!d || d->kind != SYNO_TASK_IMAGES)
    return syno_error_set(err, "'%s' is not an image data set of the task table", dataset ? dataset : "(null)");
  if (d->channels > 0) {
    *c = d->channels, *h = *w = d->side, *classes = d->classes;
    return 0;
  }
  char dir[1024];
  syno_train_data_location(dataset, dir, sizeof dir);
  return syno_data_images_shape(dir, c, h, w, classes, err);
}

/* The loaders of the task table's data sets (syno/task.h), or of a file or directory of one
 * of their formats. */
static int load_text(const char *name, syno_text_t *train, syno_text_t *val, syno_error_t *err) {
  char path[1024];
  const syno_task_dataset_t *d = syno_task_dataset(name);
  if (!name || (d && d->id == SYNO_TASK_KJV)) {
    syno_train_data_location("kjv", path, sizeof path);
    return syno_text_load(path, train, val, err);
  }
  if (file_exists(name) && !is_dir(name)) return syno_text_load(name, train, val, err);
  return syno_error_set(err, "unknown text '%s' (known: %s, or a path to a text file)", name,
                        syno_task_dataset_names(SYNO_TASK_TEXT)[0]);
}

/* digits: found as data_path finds committed files. */
static int load_data(const char *name, syno_dataset_t *train, syno_dataset_t *test, syno_error_t *err) {
  const syno_task_dataset_t *d = syno_task_dataset(name);
  char path[1024];
  if (!name || (d && d->id == SYNO_TASK_DIGITS)) {
    syno_train_data_location("digits", path, sizeof path);
    return syno_data_load_digits_split(path, train, test, err);
  }
  if (d && d->id == SYNO_TASK_IMAGES_IDX) {
    syno_train_data_location(name, path, sizeof path);
    return syno_data_load_images(path, train, test, err);
  }
  if (d && (d->id == SYNO_TASK_CIFAR10 || d->id == SYNO_TASK_CIFAR100 || d->id == SYNO_TASK_CIFAR100_COARSE)) {
    syno_train_data_location(name, path, sizeof path);
    syno_cifar_t which = d->id == SYNO_TASK_CIFAR10    ? SYNO_CIFAR10
                         : d->id == SYNO_TASK_CIFAR100 ? SYNO_CIFAR100
                                                       : SYNO_CIFAR100_COARSE;
    if (syno_data_load_cifar(path, which, 1, train, err)) return -1;
    if (syno_data_load_cifar(path, which, 0, test, err)) {
      syno_data_free(train);
      return -1;
    }
    return 0;
  }
  if ((d && d->id == SYNO_TASK_FASHION_MNIST) || is_dir(name)) {
    const char *dir = d ? NULL : name;
    if (syno_data_load_fashion_mnist(dir, 1, train, err)) return -1;
    if (syno_data_load_fashion_mnist(dir, 0, test, err)) {
      syno_data_free(train);
      return -1;
    }
    return 0;
  }
  if (file_exists(name)) return syno_data_load_digits_split(name, train, test, err);
  char known[256];
  syno_task_join(syno_task_dataset_names(SYNO_TASK_IMAGES), ", ", known, sizeof known);
  return syno_error_set(err,
                        "unknown dataset '%s' (known: %s, or a path "
                        "to a digits CSV or a Fashion-MNIST IDX directory)",
                        name, known);
}

/* ---------------------------------------------------------------- sample sources */

typedef struct {
  const syno_dataset_t *img; /* images, or */
  const syno_text_t *txt;    /* text windows of `context` */
  int64_t context;
  int64_t n; /* samples */
} source_t;

static source_t src_images(const syno_dataset_t *ds) { return (source_t){ds, NULL, 0, ds->n}; }

static source_t src_text(const syno_text_t *t, int64_t context, int64_t limit) {
  int64_t n = syno_text_windows(t, context);
  return (source_t){NULL, t, context, limit > 0 && limit < n ? limit : n};
}

static int64_t src_labels_per_sample(const source_t *s) { return s->txt ? s->context : 1; }

static int src_gather(const source_t *s, const int64_t *idx, int64_t m, syno_tensor_t *x, int32_t *labels) {
  return s->txt ? syno_text_gather(s->txt, s->context, idx, m, x, labels) : syno_data_gather(s->img, idx, m, x, labels);
}

/* ---------------------------------------------------------------- optimizers */

typedef struct {
  int adamw;
  syno_sgd_t sgd;
  syno_adamw_t adam;
} optim_t;

static int optim_init(optim_t *o, syno_layer_t *net, int adamw, double mom, double wd) {
  memset(o, 0, sizeof *o);
  o->adamw = adamw;
  if (adamw) {
    syno_adamw_cfg_t ac = {0.9, 0.99, 1e-8, wd};
    return syno_nn_adamw_init_layer(&o->adam, net, &ac);
  }
  syno_sgd_cfg_t sc = {mom, wd, 0};
  return syno_nn_sgd_init_layer(&o->sgd, net, &sc);
}

static void optim_zero_grad(optim_t *o, syno_layer_t *net) {
  if (o->adamw)
    syno_nn_zero_grad(net);
  else
    syno_nn_sgd_zero_grad(&o->sgd);
}

static void optim_step(optim_t *o, double lr) {
  if (o->adamw)
    syno_nn_adamw_step(&o->adam, lr);
  else
    syno_nn_sgd_step(&o->sgd, lr);
}

static void optim_free(optim_t *o) {
  if (o->adamw)
    syno_nn_adamw_free(&o->adam);
  else
    syno_nn_sgd_free(&o->sgd);
}

/* ---------------------------------------------------------------- the loop */

static void default_progress(const syno_train_progress_t *p, void *user) {
  (void)user;
  int tty = isatty(fileno(stderr));
  int text = p->tokens_per_s > 0;
  double rate = text ? p->tokens_per_s : p->images_per_s;
  const char *unit = text ? "tok/s" : "img/s";
  if (p->test_acc < 0) {
    if (!tty) return;
    int bar = 30, done = (int)(bar * p->step / (p->steps_per_epoch > 0 ? p->steps_per_epoch : 1));
    char b[32];
    for (int i = 0; i < bar; i++) b[i] = i < done ? '#' : '.';
    b[bar] = 0;
    fprintf(stderr, "\repoch %d/%d [%s] %lld/%lld loss %.4f acc %.2f%% %.0f %s ", p->epoch, p->epochs, b,
            (long long)p->step, (long long)p->steps_per_epoch, p->loss, 100 * p->train_acc, rate, unit);
    fflush(stderr);
    return;
  }
  if (text)
    fprintf(stderr,
            "%sepoch %d/%d loss %.4f train acc %.2f%% val loss %.4f (ppl %.2f) "
            "val acc %.2f%% %.0f tok/s\n",
            tty ? "\r\033[K" : "", p->epoch, p->epochs, p->loss, 100 * p->train_acc, p->test_loss, exp(p->test_loss),
            100 * p->test_acc, rate);
  else
    fprintf(stderr, "%sepoch %d/%d loss %.4f train acc %.2f%% test acc %.2f%% %.0f img/s\n", tty ? "\r\033[K" : "",
            p->epoch, p->epochs, p->loss, 100 * p->train_acc, 100 * p->test_acc, rate);
}

/* Accuracy and mean cross-entropy per label of net over every sample of src, in batches of the
 * training batch: every layer's buffers are already that size, so evaluating allocates nothing
 * more (a larger batch here once held a DenseNet's activations four times over). */
static int evaluate(syno_layer_t *net, const source_t *src, int64_t batch, double *acc, double *loss,
                    syno_error_t *err) {
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  const int64_t lps = src_labels_per_sample(src);
  int64_t *idx = malloc(sizeof(int64_t) * (size_t)batch);
  int32_t *lab = malloc(sizeof(int32_t) * (size_t)(batch * lps));
  int64_t correct = 0;
  double total = 0;
  int rc = (!idx || !lab) ? SYNO_NN_ENOMEM : 0;
  for (int64_t s = 0; !rc && s < src->n; s += batch) {
    int64_t m = src->n - s < batch ? src->n - s : batch;
    for (int64_t i = 0; i < m; i++) idx[i] = s + i;
    if ((rc = src_gather(src, idx, m, &x, lab))) break;
    if ((rc = syno_nn_forward(net, &x, 0))) break;
    double l = 0;
    int64_t nc = 0;
    if ((rc = syno_nn_softmax_xent(&net->out, lab, &l, NULL, &nc))) break;
    correct += nc;
    total += l * (double)(m * lps);
  }
  free(idx);
  free(lab);
  syno_nn_tensor_free(&x);
  if (rc) return syno_error_set(err, "evaluation failed: %s", syno_nn_status_str(rc));
  double labels = (double)(src->n * lps);
  *acc = src->n ? (double)correct / labels : 0;
  *loss = src->n ? total / labels : 0;
  return 0;
}

/* The time limit's prediction: after the first max(5, 2%) steps of a run, the time so far plus
 * the remaining steps at the rate of the steps after the first (which pays one-off set-up)
 * says whether the run would pass the limit; it then stops at once rather than at the limit.
 * The per-epoch evaluations are not in the rate, so the prediction errs on the short side. */
static int64_t predict_at(int64_t total_steps) {
  int64_t p = (total_steps * 2 + 99) / 100;
  return p > 5 ? p : 5;
}

/* 1 (the reason in why) when the run would not finish within cfg->time_limit: checked at the
 * prediction step, and at every step before it once the limit is already passed (then the
 * prediction from the steps so far is the reason too). */
static int overrun(const syno_train_cfg_t *cfg, double elapsed, double first_step_s, double since_first_s, int64_t done,
                   int64_t total, char *why, size_t n) {
  if (cfg->time_limit <= 0 || done < 1 || done >= total || done > predict_at(total)) return 0;
  if (done < predict_at(total) && elapsed <= cfg->time_limit) return 0;
  double per = done > 1 ? since_first_s / (double)(done - 1) : first_step_s;
  double predicted = elapsed + per * (double)(total - done);
  if (predicted <= cfg->time_limit) return 0;
  char t[32];
  snprintf(t, sizeof t, predicted >= 10 ? "%.0f" : "%.2g", predicted);
  snprintf(why, n, "would take %s s, over the %g s limit (predicted from %lld step%s)", t, cfg->time_limit,
           (long long)done, done == 1 ? "" : "s");
  return 1;
}

static const char *slot_errors(const syno_backbone_t *bb) {
  for (int i = 0; i < bb->nslots; i++)
    if (syno_slot_error(bb->slots[i])[0]) return syno_slot_error(bb->slots[i]);
  return "";
}

typedef struct {
  const syno_train_cfg_t *cfg;
  syno_backbone_t *bb;
  const source_t *train, *test;
  int64_t batch;
  double lr, mom, wd;
  int adamw;
  double t_start;
  syno_rng_t *rng; /* continues the generator that initialised the network */
} loop_t;

/* Trains bb->net on L->train for cfg->epochs, evaluating on L->test after every epoch. */
static int train_loop(const loop_t *L, syno_train_result_t *res, syno_error_t *err) {
  const syno_train_cfg_t *cfg = L->cfg;
  syno_backbone_t *bb = L->bb;
  const source_t *tr = L->train;
  const int64_t lps = src_labels_per_sample(tr);
  const int text = tr->txt != NULL;
  optim_t opt;
  syno_batcher_t bt;
  int64_t nb = tr->n < L->batch ? tr->n : L->batch;
  int drop_last = tr->n > L->batch; /* keep BN batch statistics sane */
  if (optim_init(&opt, bb->net, L->adamw, L->mom, L->wd) || syno_nn_batcher_init(&bt, tr->n, nb, drop_last)) {
    optim_free(&opt);
    return syno_error_set(err, "out of memory");
  }
  int64_t spe = syno_nn_batcher_count(&bt);
  syno_lr_schedule_t sched = {L->lr, 0, (int64_t)cfg->warmup_epochs * spe, (int64_t)cfg->epochs * spe};
  syno_tensor_t x = SYNO_TENSOR_EMPTY, dlog = SYNO_TENSOR_EMPTY;
  int32_t *lab = malloc(sizeof(int32_t) * (size_t)(nb * lps));
  int64_t step = 0, total_steps = (int64_t)cfg->epochs * spe;
  double first_step_s = 0, t_first_end = 0; /* the first step's time, and when it ended */
  double train_time = 0;
  int64_t train_samples = 0;
  int fail = 0, rc = lab ? 0 : -1;
  if (!lab) syno_error_set(err, "out of memory");
  if (!rc && text) {
    double acc0;
    rc = evaluate(bb->net, L->test, nb, &acc0, &res->initial_test_loss, err);
  }
  syno_train_progress_t pr;
  for (int ep = 0; !rc && !fail && ep < cfg->epochs; ep++) {
    syno_nn_batcher_epoch(&bt, L->rng);
    const int64_t *idx;
    int64_t m;
    double loss_sum = 0;
    int64_t correct = 0, seen = 0, s_in_ep = 0;
    double ep_t0 = syno_clock_seconds();
    while ((m = syno_nn_batcher_next(&bt, &idx)) > 0) {
      double t0 = syno_clock_seconds();
      int r = src_gather(tr, idx, m, &x, lab);
      if (!r && cfg->augment && !text) r = syno_data_augment(&x, 4, 1, L->rng);
      if (!r) r = syno_nn_forward(bb->net, &x, 1);
      double loss = 0;
      int64_t nc = 0;
      if (!r) r = syno_nn_softmax_xent(&bb->net->out, lab, &loss, &dlog, &nc);
      if (!r && !isfinite(loss)) {
        snprintf(res->failure, sizeof res->failure, "loss is %s at step %lld", isnan(loss) ? "NaN" : "inf",
                 (long long)step);
        fail = 1;
        break;
      }
      if (!r) {
        optim_zero_grad(&opt, bb->net);
        r = syno_nn_backward(bb->net, &dlog);
      }
      if (r) {
        const char *se = slot_errors(bb);
        rc = syno_error_set(err, "training step %lld failed: %s%s%s", (long long)step, syno_nn_status_str(r),
                            se[0] ? ": " : "", se);
        break;
      }
      optim_step(&opt, syno_nn_lr_at(&sched, step));
      double t1 = syno_clock_seconds(), dt = t1 - t0;
      if (step == 0) first_step_s = dt, t_first_end = t1;
      train_time += dt;
      train_samples += m;
      step++;
      s_in_ep++;
      loss_sum += loss * (double)m;
      correct += nc;
      seen += m;
      if (!cfg->quiet) {
        double sps = seen / (syno_clock_seconds() - ep_t0);
        pr = (syno_train_progress_t){ep + 1,
                                     cfg->epochs,
                                     s_in_ep,
                                     spe,
                                     loss_sum / seen,
                                     (double)correct / (double)(seen * lps),
                                     -1,
                                     sps,
                                     -1,
                                     text ? sps * (double)lps : 0};
        (cfg->progress ? cfg->progress : default_progress)(&pr, cfg->user);
      }
      double now = syno_clock_seconds();
      if (overrun(cfg, now - L->t_start, first_step_s, now - t_first_end, step, total_steps, res->failure,
                  sizeof res->failure)) {
        fail = 1;
        break;
      }
      if (cfg->time_limit > 0 && now - L->t_start > cfg->time_limit) {
        snprintf(res->failure, sizeof res->failure, "time limit of %g s hit at step %lld", cfg->time_limit,
                 (long long)step);
        fail = 1;
        break;
      }
    }
    if (rc || (fail && seen == 0)) break;
    double ep_sps = seen / (syno_clock_seconds() - ep_t0);
    double acc = 0, tloss = 0;
    if (evaluate(bb->net, L->test, nb, &acc, &tloss, err)) {
      rc = -1;
      break;
    }
    res->final_test_acc = acc;
    res->final_test_loss = tloss;
    if (acc > res->max_test_acc) res->max_test_acc = acc;
    res->final_train_loss = seen ? loss_sum / seen : 0;
    if (!fail) res->epochs_done = ep + 1; /* a run stopped early does not count its last epoch */
    if (!cfg->quiet) {
      pr = (syno_train_progress_t){ep + 1,
                                   cfg->epochs,
                                   s_in_ep,
                                   spe,
                                   res->final_train_loss,
                                   seen ? (double)correct / (double)(seen * lps) : 0,
                                   acc,
                                   ep_sps,
                                   tloss,
                                   text ? ep_sps * (double)lps : 0};
      (cfg->progress ? cfg->progress : default_progress)(&pr, cfg->user);
    }
  }
  res->failed = fail;
  res->steps = step;
  res->train_images_per_s = train_time > 0 ? train_samples / train_time : 0;
  res->train_tokens_per_s = text ? res->train_images_per_s * (double)lps : 0;
  free(lab);
  syno_nn_tensor_free(&x);
  syno_nn_tensor_free(&dlog);
  syno_nn_batcher_free(&bt);
  optim_free(&opt);
  return rc ? -1 : 0;
}

/* Everything a run needs before its first step: settings, data, backbone. */
typedef struct {
  int gpt, adamw;
  int64_t batch;
  double lr, mom, wd;
  syno_dataset_t train, test, sub;
  syno_text_t ttrain, tval;
  source_t s_train, s_test;
  syno_backbone_t bb;
  syno_rng_t rng;
} run_t;

static void run_free(run_t *r) {
  syno_backbone_free(&r->bb);
  syno_data_free(&r->train);
  syno_data_free(&r->test);
  syno_data_free(&r->sub);
  syno_text_free(&r->ttrain);
  syno_text_free(&r->tval);
}

static int run_prepare(const syno_train_cfg_t *cfg, run_t *r, syno_error_t *err) {
  memset(r, 0, sizeof *r);
  const char *bname = cfg->backbone ? cfg->backbone : "resnet";
  if (syno_backbone_known(bname, err)) return -1;
  const syno_task_backbone_t *task = syno_task_backbone(bname);
  r->gpt = task->kind == SYNO_TASK_TEXT;
  const char *oname = cfg->optimizer ? cfg->optimizer : r->gpt ? "adamw" : "sgd";
  if (strcmp(oname, "sgd") && strcmp(oname, "adamw"))
    return syno_error_set(err, "unknown optimizer '%s' (known: sgd, adamw)", oname);
  r->adamw = !strcmp(oname, "adamw");
  r->batch = cfg->batch ? cfg->batch : r->gpt ? task->batch : 128;
  if (r->batch < 1 || r->batch > 65536)
    return syno_error_set(err, "batch must be in 1..65536 (got %lld)", (long long)cfg->batch);
  r->lr = cfg->lr ? cfg->lr : r->adamw ? 3e-3 : 0.1;
  r->mom = cfg->momentum < 0 ? 0 : cfg->momentum ? cfg->momentum : 0.9;
  r->wd = cfg->weight_decay < 0 ? 0 : cfg->weight_decay ? cfg->weight_decay : r->adamw ? 0.1 : 5e-4;
  if (!(r->lr > 0) || !isfinite(r->lr)) return syno_error_set(err, "lr must be positive (got %g)", cfg->lr);
  if (cfg->subset < 0) return syno_error_set(err, "subset must be >= 0");
  if (cfg->context < 0 || cfg->heads < 0) return syno_error_set(err, "context and heads must be positive");

  syno_slotop_t *op = NULL;
  if (cfg->op_text && syno_slotop_parse_preset(cfg->preset ? cfg->preset
                                               : r->gpt    ? "linear"
                                                           : "conv2d",
                                               cfg->op_text, &op, err))
    return -1;
  syno_backbone_cfg_t bc = {0};
  bc.name = bname;
  bc.width = cfg->width;
  bc.depth = cfg->depth;
  bc.op = op;
  syno_rng_seed(&r->rng, cfg->seed, 1);
  int rc = 0;
  if (r->gpt) {
    rc = load_text(cfg->dataset, &r->ttrain, &r->tval, err);
    if (!rc) {
      bc.vocab = r->ttrain.vocab;
      bc.context = cfg->context ? cfg->context : 64;
      bc.heads = cfg->heads;
      r->s_train = src_text(&r->ttrain, bc.context, cfg->subset);
      r->s_test = src_text(&r->tval, bc.context, 0);
      if (r->s_train.n < 1 || r->s_test.n < 1)
        rc = syno_error_set(err, "the text is too short for context %lld", (long long)bc.context);
    }
  } else {
    rc = load_data(cfg->dataset, &r->train, &r->test, err);
    if (!rc) rc = syno_data_pad(&r->train, cfg->pad, err) || syno_data_pad(&r->test, cfg->pad, err) ? -1 : 0;
    const syno_dataset_t *tr = &r->train;
    if (!rc && cfg->subset && cfg->subset < r->train.n) {
      syno_rng_t srng;
      syno_rng_seed(&srng, cfg->seed, 2);
      rc = syno_data_subset(&r->train, cfg->subset, &srng, &r->sub, err);
      tr = &r->sub;
    }
    if (!rc) {
      r->s_train = src_images(tr);
      r->s_test = src_images(&r->test);
      bc.in_c = tr->c;
      bc.in_h = tr->h;
      bc.in_w = tr->w;
      bc.nclasses = tr->nclasses;
    }
  }
  if (!rc) rc = syno_backbone_build(&bc, &r->rng, &r->bb, err);
  syno_slotop_free(op);
  if (rc) {
    run_free(r);
    return -1;
  }
  return 0;
}

int syno_train_build(const syno_train_cfg_t *cfg, syno_backbone_t *bb, syno_error_t *err) {
  memset(bb, 0, sizeof *bb);
  run_t r;
  if (run_prepare(cfg, &r, err)) return -1;
  *bb = r.bb;
  memset(&r.bb, 0, sizeof r.bb);
  run_free(&r);
  return 0;
}

int syno_train_run(const syno_train_cfg_t *cfg, syno_train_result_t *res, syno_error_t *err) {
  memset(res, 0, sizeof *res);
  double t_start = syno_clock_seconds();
  if (cfg->epochs < 1 || cfg->epochs > 10000)
    return syno_error_set(err, "epochs must be in 1..10000 (got %d)", cfg->epochs);
  run_t r;
  if (run_prepare(cfg, &r, err)) return -1;
  res->flops = r.bb.flops;
  res->params = r.bb.params;
  r.bb.net->skip_input_grad = 1;
  loop_t L = {cfg, &r.bb, &r.s_train, &r.s_test, r.batch, r.lr, r.mom, r.wd, r.adamw, t_start, &r.rng};
  int rc = train_loop(&L, res, err);
  res->wall_seconds = syno_clock_seconds() - t_start;
  run_free(&r);
  return rc ? -2 : 0;
}
