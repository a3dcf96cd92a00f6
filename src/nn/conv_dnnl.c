/*
 * The oneDNN backend of conv2d (see conv.c for the layer and the im2col backend).
 *
 * Memory stays plain: x and y NCHW, the weight OIHW (GOIHW with groups, which is the same
 * bytes), so the layer's tensors are handed to oneDNN as they are and nothing is reordered.
 * For each input shape (n, h, w) the layer keeps an entry holding the forward (training and,
 * lazily, inference) primitives, the backward-data and backward-weights primitives (created
 * at the first backward), and memory objects whose data handles are pointed at the caller's
 * buffers before every execute. A few entries are kept, so alternating the training batch,
 * a short last batch and an evaluation batch does not recreate primitives.
 *
 * oneDNN overwrites diff_weights/diff_bias while the layer contract accumulates (+=), so the
 * weight and bias gradients land in scratch buffers and are added afterwards.
 *
 * Output sides follow PyTorch's floor rule; oneDNN wants explicit right padding, which is
 * (o - 1) * s + (k - 1) * d + 1 - in - pad and may be smaller than pad (or negative). If
 * oneDNN refuses a configuration, the entry records it and the layer falls back (AUTO) or
 * fails with SYNO_NN_EINVAL (ONEDNN).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>

#include "nn_internal.h"

#define NCACHE 4

typedef struct entry {
    int64_t n, h, w; /* key; n == 0: unused */
    int ok;          /* oneDNN accepted the forward */
    dnnl_primitive_desc_t fwd_train_pd, fwd_inf_pd, bwd_data_pd, bwd_w_pd;
    dnnl_primitive_t fwd_train, fwd_inf, bwd_data, bwd_w;
    dnnl_memory_desc_t src_md, wei_md, bias_md, dst_md;
    dnnl_memory_t src, wei, bias, dst; /* handles set per call; also used for the diffs */
} entry_t;

struct nn_dnnl_conv {
    dnnl_stream_t stream;
    entry_t ent[NCACHE];
    int next; /* round-robin victim */
    float *dw, *db;
    int64_t dw_len;
};

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static dnnl_engine_t engine;

static void engine_init(void)
{
    if (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success)
        engine = NULL;
}

nn_dnnl_conv_t *nn_dnnl_conv_new(const syno_conv2d_cfg_t *c)
{
    pthread_once(&engine_once, engine_init);
    if (!engine)
        return NULL;
    nn_dnnl_conv_t *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->dw_len = c->out_channels * (c->in_channels / c->groups) * c->kernel_h * c->kernel_w;
    d->dw = malloc((size_t)d->dw_len * sizeof(float));
    d->db = malloc((size_t)c->out_channels * sizeof(float));
    if (!d->dw || !d->db || dnnl_stream_create(&d->stream, engine, dnnl_stream_default_flags)) {
        free(d->dw);
        free(d->db);
        free(d);
        return NULL;
    }
    return d;
}

static void entry_clear(entry_t *e)
{
    dnnl_primitive_t prims[] = {e->fwd_train, e->fwd_inf, e->bwd_data, e->bwd_w};
    dnnl_primitive_desc_t pds[] = {e->fwd_train_pd, e->fwd_inf_pd, e->bwd_data_pd, e->bwd_w_pd};
    dnnl_memory_t mems[] = {e->src, e->wei, e->bias, e->dst};
    for (int i = 0; i < 4; i++) {
        if (prims[i])
            dnnl_primitive_destroy(prims[i]);
        if (pds[i])
            dnnl_primitive_desc_destroy(pds[i]);
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    }
    memset(e, 0, sizeof *e);
}

void nn_dnnl_conv_free(nn_dnnl_conv_t *d)
{
    if (!d)
        return;
    for (int i = 0; i < NCACHE; i++)
        entry_clear(&d->ent[i]);
    dnnl_stream_destroy(d->stream);
    free(d->dw);
    free(d->db);
    free(d);
}

/* Strides, dilations (oneDNN counts from 0) and paddings of c for input h x w / output oh x ow. */
typedef struct geo {
    dnnl_dims_t strides, dil, pl, pr;
} geo_t;

static int64_t out_side(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d)
{
    int64_t span = d * (k - 1) + 1;
    return in + 2 * p < span ? 0 : (in + 2 * p - span) / s + 1;
}

static void make_geo(const syno_conv2d_cfg_t *c, int64_t h, int64_t w, int64_t oh, int64_t ow,
                     geo_t *g)
{
    memset(g, 0, sizeof *g);
    g->strides[0] = c->stride_h;
    g->strides[1] = c->stride_w;
    g->dil[0] = c->dilation_h - 1;
    g->dil[1] = c->dilation_w - 1;
    g->pl[0] = c->pad_h;
    g->pl[1] = c->pad_w;
    g->pr[0] = (oh - 1) * c->stride_h + (c->kernel_h - 1) * c->dilation_h + 1 - h - c->pad_h;
    g->pr[1] = (ow - 1) * c->stride_w + (c->kernel_w - 1) * c->dilation_w + 1 - w - c->pad_w;
}

/* Creates the forward-training primitive and the memory objects of a fresh entry; e->ok
 * says whether oneDNN accepted all of it. */
static void entry_init(entry_t *e, const syno_conv2d_cfg_t *c, int64_t n, int64_t h, int64_t w)
{
    memset(e, 0, sizeof *e);
    e->n = n;
    e->h = h;
    e->w = w;
    int64_t oh = out_side(h, c->kernel_h, c->stride_h, c->pad_h, c->dilation_h);
    int64_t ow = out_side(w, c->kernel_w, c->stride_w, c->pad_w, c->dilation_w);
    if (oh <= 0 || ow <= 0)
        return;
    geo_t g;
    make_geo(c, h, w, oh, ow, &g);
    dnnl_dims_t sd = {n, c->in_channels, h, w}, dd = {n, c->out_channels, oh, ow};
    dnnl_dims_t bd = {c->out_channels};
    dnnl_dims_t wd4 = {c->out_channels, c->in_channels, c->kernel_h, c->kernel_w};
    dnnl_dims_t wd5 = {c->groups, c->out_channels / c->groups, c->in_channels / c->groups,
                       c->kernel_h, c->kernel_w};
    if (dnnl_memory_desc_init_by_tag(&e->src_md, 4, sd, dnnl_f32, dnnl_nchw) ||
        dnnl_memory_desc_init_by_tag(&e->dst_md, 4, dd, dnnl_f32, dnnl_nchw) ||
        dnnl_memory_desc_init_by_tag(&e->bias_md, 1, bd, dnnl_f32, dnnl_x) ||
        (c->groups == 1
             ? dnnl_memory_desc_init_by_tag(&e->wei_md, 4, wd4, dnnl_f32, dnnl_oihw)
             : dnnl_memory_desc_init_by_tag(&e->wei_md, 5, wd5, dnnl_f32, dnnl_goihw)))
        return;
    dnnl_convolution_desc_t cd;
    if (dnnl_dilated_convolution_forward_desc_init(
            &cd, dnnl_forward_training, dnnl_convolution_direct, &e->src_md, &e->wei_md,
            c->bias ? &e->bias_md : NULL, &e->dst_md, g.strides, g.dil, g.pl, g.pr))
        return;
    if (dnnl_primitive_desc_create(&e->fwd_train_pd, &cd, NULL, engine, NULL)) {
        e->fwd_train_pd = NULL;
        return;
    }
    if (dnnl_primitive_create(&e->fwd_train, e->fwd_train_pd)) {
        e->fwd_train = NULL;
        return;
    }
    if (dnnl_memory_create(&e->src, &e->src_md, engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&e->wei, &e->wei_md, engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&e->bias, &e->bias_md, engine, DNNL_MEMORY_NONE) ||
        dnnl_memory_create(&e->dst, &e->dst_md, engine, DNNL_MEMORY_NONE))
        return;
    e->ok = 1;
}

static entry_t *lookup(nn_dnnl_conv_t *d, const syno_conv2d_cfg_t *c, int64_t n, int64_t h,
                       int64_t w)
{
    for (int i = 0; i < NCACHE; i++)
        if (d->ent[i].n == n && d->ent[i].h == h && d->ent[i].w == w)
            return &d->ent[i];
    entry_t *e = &d->ent[d->next];
    d->next = (d->next + 1) % NCACHE;
    entry_clear(e);
    entry_init(e, c, n, h, w);
    return e;
}

int nn_dnnl_conv_supported(nn_dnnl_conv_t *d, const syno_conv2d_cfg_t *c, int64_t n,
                           int64_t h, int64_t w)
{
    return d && lookup(d, c, n, h, w)->ok;
}

/* Creates *prim from an op descriptor (hint: the training forward); 0 on success. */
static int make_prim(entry_t *e, const void *op, dnnl_primitive_desc_t *pd, dnnl_primitive_t *prim)
{
    if (dnnl_primitive_desc_create(pd, op, NULL, engine, e->fwd_train_pd)) {
        *pd = NULL;
        return -1;
    }
    if (dnnl_primitive_create(prim, *pd)) {
        *prim = NULL;
        return -1;
    }
    return 0;
}

static int run(nn_dnnl_conv_t *d, dnnl_primitive_t p, int nargs, const dnnl_exec_arg_t *args)
{
    if (dnnl_primitive_execute(p, d->stream, nargs, args) || dnnl_stream_wait(d->stream))
        return SYNO_NN_EINVAL;
    return SYNO_NN_OK;
}

int nn_dnnl_conv_forward(nn_dnnl_conv_t *d, const syno_conv2d_cfg_t *c, const syno_tensor_t *x,
                         const float *wt, const float *bias, float *y, int train)
{
    entry_t *e = lookup(d, c, x->dims[0], x->dims[2], x->dims[3]);
    if (!e->ok)
        return SYNO_NN_EINVAL;
    dnnl_primitive_t p = e->fwd_train;
    if (!train) {
        if (!e->fwd_inf) {
            int64_t oh = e->dst_md.dims[2], ow = e->dst_md.dims[3];
            geo_t g;
            make_geo(c, e->h, e->w, oh, ow, &g);
            dnnl_convolution_desc_t cd;
            if (dnnl_dilated_convolution_forward_desc_init(
                    &cd, dnnl_forward_inference, dnnl_convolution_direct, &e->src_md,
                    &e->wei_md, c->bias ? &e->bias_md : NULL, &e->dst_md, g.strides, g.dil,
                    g.pl, g.pr) ||
                make_prim(e, &cd, &e->fwd_inf_pd, &e->fwd_inf))
                return SYNO_NN_EINVAL;
        }
        p = e->fwd_inf;
    }
    dnnl_memory_set_data_handle(e->src, (void *)x->data);
    dnnl_memory_set_data_handle(e->wei, (void *)wt);
    dnnl_memory_set_data_handle(e->dst, y);
    dnnl_exec_arg_t args[4] = {
        {DNNL_ARG_SRC, e->src}, {DNNL_ARG_WEIGHTS, e->wei}, {DNNL_ARG_DST, e->dst},
        {DNNL_ARG_BIAS, e->bias}};
    if (bias)
        dnnl_memory_set_data_handle(e->bias, (void *)bias);
    return run(d, p, bias ? 4 : 3, args);
}

int nn_dnnl_conv_backward(nn_dnnl_conv_t *d, const syno_conv2d_cfg_t *c, const syno_tensor_t *x,
                          const float *dy, const float *wt, float *dw, float *db, float *dx)
{
    entry_t *e = lookup(d, c, x->dims[0], x->dims[2], x->dims[3]);
    if (!e->ok)
        return SYNO_NN_EINVAL;
    geo_t g;
    make_geo(c, e->h, e->w, e->dst_md.dims[2], e->dst_md.dims[3], &g);
    if (!e->bwd_w) {
        dnnl_convolution_desc_t cd;
        if (dnnl_dilated_convolution_backward_weights_desc_init(
                &cd, dnnl_convolution_direct, &e->src_md, &e->wei_md,
                c->bias ? &e->bias_md : NULL, &e->dst_md, g.strides, g.dil, g.pl, g.pr) ||
            make_prim(e, &cd, &e->bwd_w_pd, &e->bwd_w))
            return SYNO_NN_EINVAL;
    }
    if (dx && !e->bwd_data) {
        dnnl_convolution_desc_t cd;
        if (dnnl_dilated_convolution_backward_data_desc_init(
                &cd, dnnl_convolution_direct, &e->src_md, &e->wei_md, &e->dst_md, g.strides,
                g.dil, g.pl, g.pr) ||
            make_prim(e, &cd, &e->bwd_data_pd, &e->bwd_data))
            return SYNO_NN_EINVAL;
    }
    /* Weights (and bias) gradient into scratch, then accumulate. */
    dnnl_memory_set_data_handle(e->src, (void *)x->data);
    dnnl_memory_set_data_handle(e->dst, (void *)dy);
    dnnl_memory_set_data_handle(e->wei, d->dw);
    dnnl_memory_set_data_handle(e->bias, d->db);
    dnnl_exec_arg_t wargs[4] = {{DNNL_ARG_SRC, e->src},
                                {DNNL_ARG_DIFF_DST, e->dst},
                                {DNNL_ARG_DIFF_WEIGHTS, e->wei},
                                {DNNL_ARG_DIFF_BIAS, e->bias}};
    int rc = run(d, e->bwd_w, db ? 4 : 3, wargs);
    if (rc)
        return rc;
    for (int64_t i = 0; i < d->dw_len; i++)
        dw[i] += d->dw[i];
    if (db)
        for (int64_t k = 0; k < c->out_channels; k++)
            db[k] += d->db[k];
    if (!dx)
        return SYNO_NN_OK;
    dnnl_memory_set_data_handle(e->src, dx);
    dnnl_memory_set_data_handle(e->wei, (void *)wt);
    dnnl_exec_arg_t dargs[3] = {{DNNL_ARG_DIFF_DST, e->dst},
                                {DNNL_ARG_WEIGHTS, e->wei},
                                {DNNL_ARG_DIFF_SRC, e->src}};
    return run(d, e->bwd_data, 3, dargs);
}
