/* The training driver: data, backbone, SGD + cosine schedule, per-epoch evaluation.
 * See syno/backbone.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "syno/backbone.h"
#include "syno/data.h"

#ifndef SYNO_SOURCE_DATA_DIR
#define SYNO_SOURCE_DATA_DIR "data"
#endif

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* digits: $SYNO_SOURCE_DIR/data, ./data, then the source tree this was built from. */
static int load_data(const char *name, syno_dataset_t *train, syno_dataset_t *test,
                     syno_error_t *err)
{
    if (!name || !strcmp(name, "digits")) {
        char path[1024];
        const char *env = getenv("SYNO_SOURCE_DIR");
        if (env && snprintf(path, sizeof path, "%s/data/digits.csv.gz", env) > 0 && file_exists(path))
            return syno_data_load_digits_split(path, train, test, err);
        if (file_exists("data/digits.csv.gz"))
            return syno_data_load_digits_split("data/digits.csv.gz", train, test, err);
        return syno_data_load_digits_split(SYNO_SOURCE_DATA_DIR "/digits.csv.gz", train, test, err);
    }
    if (!strcmp(name, "fashion-mnist") || is_dir(name)) {
        const char *dir = strcmp(name, "fashion-mnist") ? name : NULL;
        if (syno_data_load_fashion_mnist(dir, 1, train, err))
            return -1;
        if (syno_data_load_fashion_mnist(dir, 0, test, err)) {
            syno_data_free(train);
            return -1;
        }
        return 0;
    }
    if (file_exists(name))
        return syno_data_load_digits_split(name, train, test, err);
    return syno_error_set(err, "unknown dataset '%s' (known: digits, fashion-mnist, or a path "
                               "to a digits CSV or a Fashion-MNIST IDX directory)", name);
}

static void default_progress(const syno_train_progress_t *p, void *user)
{
    (void)user;
    int tty = isatty(fileno(stderr));
    if (p->test_acc < 0) {
        if (!tty)
            return;
        int bar = 30, done = (int)(bar * p->step / (p->steps_per_epoch > 0 ? p->steps_per_epoch : 1));
        char b[32];
        for (int i = 0; i < bar; i++)
            b[i] = i < done ? '#' : '.';
        b[bar] = 0;
        fprintf(stderr, "\repoch %d/%d [%s] %lld/%lld loss %.4f acc %.2f%% %.0f img/s ", p->epoch,
                p->epochs, b, (long long)p->step, (long long)p->steps_per_epoch, p->loss,
                100 * p->train_acc, p->images_per_s);
        fflush(stderr);
        return;
    }
    fprintf(stderr, "%sepoch %d/%d loss %.4f train acc %.2f%% test acc %.2f%% %.0f img/s\n",
            tty ? "\r\033[K" : "", p->epoch, p->epochs, p->loss, 100 * p->train_acc,
            100 * p->test_acc, p->images_per_s);
}

static int evaluate(syno_layer_t *net, const syno_dataset_t *ds, int64_t batch, double *acc,
                    syno_error_t *err)
{
    syno_tensor_t x = SYNO_TENSOR_EMPTY;
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)batch);
    int32_t *lab = malloc(sizeof(int32_t) * (size_t)batch);
    int64_t correct = 0;
    int rc = (!idx || !lab) ? SYNO_NN_ENOMEM : 0;
    for (int64_t s = 0; !rc && s < ds->n; s += batch) {
        int64_t m = ds->n - s < batch ? ds->n - s : batch;
        for (int64_t i = 0; i < m; i++)
            idx[i] = s + i;
        if ((rc = syno_data_gather(ds, idx, m, &x, lab)))
            break;
        if ((rc = syno_nn_forward(net, &x, 0)))
            break;
        const syno_tensor_t *y = &net->out;
        int64_t k = y->dims[1];
        for (int64_t i = 0; i < m; i++) {
            const float *r = y->data + i * k;
            int64_t best = 0;
            for (int64_t j = 1; j < k; j++)
                if (r[j] > r[best])
                    best = j;
            correct += best == lab[i];
        }
    }
    free(idx);
    free(lab);
    syno_nn_tensor_free(&x);
    if (rc)
        return syno_error_set(err, "evaluation failed: %s", syno_nn_status_str(rc));
    *acc = ds->n ? (double)correct / (double)ds->n : 0;
    return 0;
}

static const char *slot_errors(const syno_backbone_t *bb)
{
    for (int i = 0; i < bb->nslots; i++)
        if (syno_slot_error(bb->slots[i])[0])
            return syno_slot_error(bb->slots[i]);
    return "";
}

int syno_train_run(const syno_train_cfg_t *cfg, syno_train_result_t *res, syno_error_t *err)
{
    memset(res, 0, sizeof *res);
    double t_start = now_s();
    if (cfg->epochs < 1 || cfg->epochs > 10000)
        return syno_error_set(err, "epochs must be in 1..10000 (got %d)", cfg->epochs);
    int64_t batch = cfg->batch ? cfg->batch : 128;
    if (batch < 1 || batch > 65536)
        return syno_error_set(err, "batch must be in 1..65536 (got %lld)", (long long)cfg->batch);
    double lr = cfg->lr ? cfg->lr : 0.1;
    double mom = cfg->momentum < 0 ? 0 : cfg->momentum ? cfg->momentum : 0.9;
    double wd = cfg->weight_decay < 0 ? 0 : cfg->weight_decay ? cfg->weight_decay : 5e-4;
    if (!(lr > 0) || !isfinite(lr))
        return syno_error_set(err, "lr must be positive (got %g)", cfg->lr);
    if (cfg->subset < 0)
        return syno_error_set(err, "subset must be >= 0");
    const char *bname = cfg->backbone ? cfg->backbone : "resnet";
    if (strcmp(bname, "resnet") && strcmp(bname, "vgg"))
        return syno_error_set(err, "unknown backbone '%s' (known: resnet, vgg)", bname);

    syno_slotop_t *op = NULL;
    if (cfg->op_text && syno_slotop_parse(cfg->op_text, &op, err))
        return -1;
    syno_dataset_t train = {0}, test = {0}, sub = {0};
    if (load_data(cfg->dataset, &train, &test, err) || syno_data_pad(&train, cfg->pad, err) ||
        syno_data_pad(&test, cfg->pad, err)) {
        syno_data_free(&train);
        syno_data_free(&test);
        syno_slotop_free(op);
        return -1;
    }
    syno_rng_t rng;
    syno_nn_rng_seed(&rng, cfg->seed, 1);
    const syno_dataset_t *tr = &train;
    if (cfg->subset && cfg->subset < train.n) {
        syno_rng_t srng;
        syno_nn_rng_seed(&srng, cfg->seed, 2);
        if (syno_data_subset(&train, cfg->subset, &srng, &sub, err)) {
            syno_data_free(&train);
            syno_data_free(&test);
            syno_slotop_free(op);
            return -1;
        }
        tr = &sub;
    }
    syno_backbone_cfg_t bc = {.name = bname, .in_c = tr->c, .in_h = tr->h, .in_w = tr->w, .nclasses = tr->nclasses,
                              .width = cfg->width, .depth = cfg->depth, .op = op};
    syno_backbone_t bb;
    int rc = syno_backbone_build(&bc, &rng, &bb, err);
    syno_slotop_free(op);
    if (rc) {
        syno_data_free(&train);
        syno_data_free(&test);
        syno_data_free(&sub);
        return -1;
    }
    res->flops = bb.flops;
    res->params = bb.params;
    bb.net->skip_input_grad = 1;

    syno_sgd_t opt;
    syno_sgd_cfg_t sc = {mom, wd, 0};
    syno_batcher_t bt;
    int64_t nb = tr->n < batch ? tr->n : batch;
    int drop_last = tr->n > batch; /* keep BN batch statistics sane */
    if (syno_nn_sgd_init_layer(&opt, bb.net, &sc) ||
        syno_nn_batcher_init(&bt, tr->n, nb, drop_last)) {
        syno_backbone_free(&bb);
        syno_data_free(&train);
        syno_data_free(&test);
        syno_data_free(&sub);
        return syno_error_set(err, "out of memory");
    }
    int64_t spe = syno_nn_batcher_count(&bt);
    syno_lr_schedule_t sched = {lr, 0, (int64_t)cfg->warmup_epochs * spe, (int64_t)cfg->epochs * spe};
    syno_tensor_t x = SYNO_TENSOR_EMPTY, dlog = SYNO_TENSOR_EMPTY;
    int32_t *lab = malloc(sizeof(int32_t) * (size_t)nb);
    int64_t step = 0;
    double train_time = 0;
    int64_t train_images = 0;
    int fail = 0;
    rc = lab ? 0 : -1;
    if (!lab)
        syno_error_set(err, "out of memory");
    syno_train_progress_t pr;
    for (int ep = 0; !rc && !fail && ep < cfg->epochs; ep++) {
        syno_nn_batcher_epoch(&bt, &rng);
        const int64_t *idx;
        int64_t m;
        double loss_sum = 0;
        int64_t correct = 0, seen = 0, s_in_ep = 0;
        double ep_t0 = now_s();
        while ((m = syno_nn_batcher_next(&bt, &idx)) > 0) {
            double t0 = now_s();
            int r = syno_data_gather(tr, idx, m, &x, lab);
            if (!r)
                r = syno_nn_forward(bb.net, &x, 1);
            double loss = 0;
            int64_t nc = 0;
            if (!r)
                r = syno_nn_softmax_xent(&bb.net->out, lab, &loss, &dlog, &nc);
            if (!r && !isfinite(loss)) {
                snprintf(res->failure, sizeof res->failure, "loss is %s at step %lld",
                         isnan(loss) ? "NaN" : "inf", (long long)step);
                fail = 1;
                break;
            }
            if (!r) {
                syno_nn_sgd_zero_grad(&opt);
                r = syno_nn_backward(bb.net, &dlog);
            }
            if (r) {
                const char *se = slot_errors(&bb);
                rc = syno_error_set(err, "training step %lld failed: %s%s%s", (long long)step,
                                    syno_nn_status_str(r), se[0] ? ": " : "", se);
                break;
            }
            syno_nn_sgd_step(&opt, syno_nn_lr_at(&sched, step));
            double dt = now_s() - t0;
            train_time += dt;
            train_images += m;
            step++;
            s_in_ep++;
            loss_sum += loss * (double)m;
            correct += nc;
            seen += m;
            if (!cfg->quiet) {
                pr = (syno_train_progress_t){ep + 1, cfg->epochs, s_in_ep, spe, loss_sum / seen,
                                             (double)correct / seen, -1,
                                             seen / (now_s() - ep_t0)};
                (cfg->progress ? cfg->progress : default_progress)(&pr, cfg->user);
            }
            if (cfg->time_limit > 0 && now_s() - t_start > cfg->time_limit) {
                snprintf(res->failure, sizeof res->failure,
                         "time limit of %g s hit at step %lld", cfg->time_limit, (long long)step);
                fail = 1;
                break;
            }
        }
        if (rc || (fail && seen == 0))
            break;
        double acc = 0;
        if (evaluate(bb.net, &test, 256, &acc, err)) {
            rc = -1;
            break;
        }
        res->final_test_acc = acc;
        if (acc > res->max_test_acc)
            res->max_test_acc = acc;
        res->final_train_loss = seen ? loss_sum / seen : 0;
        res->epochs_done = ep + 1;
        if (!cfg->quiet) {
            pr = (syno_train_progress_t){ep + 1, cfg->epochs, s_in_ep, spe, res->final_train_loss,
                                         seen ? (double)correct / seen : 0, acc,
                                         seen / (now_s() - ep_t0)};
            (cfg->progress ? cfg->progress : default_progress)(&pr, cfg->user);
        }
    }
    res->failed = fail;
    res->train_images_per_s = train_time > 0 ? train_images / train_time : 0;
    res->wall_seconds = now_s() - t_start;
    free(lab);
    syno_nn_tensor_free(&x);
    syno_nn_tensor_free(&dlog);
    syno_nn_batcher_free(&bt);
    syno_nn_sgd_free(&opt);
    syno_backbone_free(&bb);
    syno_data_free(&train);
    syno_data_free(&test);
    syno_data_free(&sub);
    return rc ? -1 : 0;
}
