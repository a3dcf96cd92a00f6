/* PRNG, mini-batch iteration, SGD and the learning-rate schedule (see syno/train.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"
#include "syno/train.h"

/* ---------------------------------------------------------------- PCG32 */

#define PCG_MULT UINT64_C(6364136223846793005)

uint32_t syno_nn_rng_u32(syno_rng_t *rng)
{
    uint64_t old = rng->state;
    rng->state = old * PCG_MULT + rng->inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
    uint32_t rot = (uint32_t)(old >> 59);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

void syno_nn_rng_seed(syno_rng_t *rng, uint64_t seed, uint64_t stream)
{
    /* The reference pcg32_srandom_r sequence, so outputs match the published generator. */
    rng->state = 0;
    rng->inc = (stream << 1) | 1u;
    rng->has_spare = 0;
    rng->spare = 0.0;
    syno_nn_rng_u32(rng);
    rng->state += seed;
    syno_nn_rng_u32(rng);
}

double syno_nn_rng_uniform(syno_rng_t *rng)
{
    uint32_t a = syno_nn_rng_u32(rng) >> 5, b = syno_nn_rng_u32(rng) >> 6;
    return ((double)a * 67108864.0 + (double)b) * (1.0 / 9007199254740992.0);
}

uint64_t syno_nn_rng_below(syno_rng_t *rng, uint64_t n)
{
    if (n == 0)
        return 0;
    /* Rejecting the lowest (2^w mod n) raw values leaves a multiple of n: no modulo bias. */
    if (n <= UINT32_MAX) {
        uint32_t bound = (uint32_t)n, threshold = (uint32_t)(-bound) % bound;
        for (;;) {
            uint32_t r = syno_nn_rng_u32(rng);
            if (r >= threshold)
                return r % bound;
        }
    }
    uint64_t threshold = (0 - n) % n;
    for (;;) {
        uint64_t r = ((uint64_t)syno_nn_rng_u32(rng) << 32) | syno_nn_rng_u32(rng);
        if (r >= threshold)
            return r % n;
    }
}

double syno_nn_rng_normal(syno_rng_t *rng)
{
    if (rng->has_spare) {
        rng->has_spare = 0;
        return rng->spare;
    }
    double u1 = 1.0 - syno_nn_rng_uniform(rng); /* (0, 1]: log stays finite */
    double u2 = syno_nn_rng_uniform(rng);
    double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
    rng->spare = r * sin(th);
    rng->has_spare = 1;
    return r * cos(th);
}

void syno_nn_rng_shuffle(syno_rng_t *rng, int64_t *a, int64_t n)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)syno_nn_rng_below(rng, (uint64_t)i + 1);
        int64_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

void syno_nn_rng_fill_normal(syno_rng_t *rng, syno_tensor_t *t, double mean, double std)
{
    int64_t n = syno_nn_tensor_numel(t);
    for (int64_t i = 0; i < n && t->data; i++)
        t->data[i] = (float)(mean + std * syno_nn_rng_normal(rng));
}

void syno_nn_rng_fill_uniform(syno_rng_t *rng, syno_tensor_t *t, double lo, double hi)
{
    int64_t n = syno_nn_tensor_numel(t);
    for (int64_t i = 0; i < n && t->data; i++)
        t->data[i] = (float)(lo + (hi - lo) * syno_nn_rng_uniform(rng));
}

/* ---------------------------------------------------------------- batcher */

int syno_nn_batcher_init(syno_batcher_t *b, int64_t n, int64_t batch_size, int drop_last)
{
    memset(b, 0, sizeof *b);
    if (n < 0 || batch_size <= 0)
        return SYNO_NN_EINVAL;
    b->order = malloc((size_t)(n > 0 ? n : 1) * sizeof *b->order);
    if (!b->order)
        return SYNO_NN_ENOMEM;
    b->n = n;
    b->batch_size = batch_size;
    b->drop_last = drop_last != 0;
    syno_nn_batcher_epoch(b, NULL);
    return SYNO_NN_OK;
}

void syno_nn_batcher_epoch(syno_batcher_t *b, syno_rng_t *rng)
{
    /* Restart from the identity so an epoch's order depends only on the rng state. */
    for (int64_t i = 0; i < b->n; i++)
        b->order[i] = i;
    if (rng)
        syno_nn_rng_shuffle(rng, b->order, b->n);
    b->pos = 0;
}

int64_t syno_nn_batcher_next(syno_batcher_t *b, const int64_t **idx)
{
    int64_t left = b->n - b->pos;
    int64_t cnt = left < b->batch_size ? left : b->batch_size;
    if (cnt <= 0 || (b->drop_last && cnt < b->batch_size))
        return 0;
    *idx = b->order + b->pos;
    b->pos += cnt;
    return cnt;
}

int64_t syno_nn_batcher_count(const syno_batcher_t *b)
{
    return b->drop_last ? b->n / b->batch_size : (b->n + b->batch_size - 1) / b->batch_size;
}

void syno_nn_batcher_free(syno_batcher_t *b)
{
    free(b->order);
    memset(b, 0, sizeof *b);
}

/* ---------------------------------------------------------------- SGD */

int syno_nn_sgd_init(syno_sgd_t *opt, syno_param_t **params, int n, const syno_sgd_cfg_t *cfg)
{
    memset(opt, 0, sizeof *opt);
    if (n < 0 || (n > 0 && !params) || !cfg)
        return SYNO_NN_EINVAL;
    opt->cfg = *cfg;
    opt->params = calloc((size_t)(n > 0 ? n : 1), sizeof *opt->params);
    opt->velocity = calloc((size_t)(n > 0 ? n : 1), sizeof *opt->velocity);
    if (!opt->params || !opt->velocity) {
        syno_nn_sgd_free(opt);
        return SYNO_NN_ENOMEM;
    }
    opt->nparams = n;
    for (int i = 0; i < n; i++) {
        opt->params[i] = params[i];
        if (cfg->momentum != 0.0) {
            int64_t k = syno_nn_tensor_numel(&params[i]->value);
            opt->velocity[i] = calloc((size_t)(k > 0 ? k : 1), sizeof(float));
            if (!opt->velocity[i]) {
                syno_nn_sgd_free(opt);
                return SYNO_NN_ENOMEM;
            }
        }
    }
    return SYNO_NN_OK;
}

/* The parameters of model (malloc'd, *n of them), or NULL when memory runs out. */
static syno_param_t **model_params(syno_layer_t *model, int *n)
{
    *n = syno_nn_params(model, NULL, 0);
    syno_param_t **ps = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *ps);
    if (ps)
        syno_nn_params(model, ps, *n);
    return ps;
}

int syno_nn_sgd_init_layer(syno_sgd_t *opt, syno_layer_t *model, const syno_sgd_cfg_t *cfg)
{
    int n;
    syno_param_t **ps = model_params(model, &n);
    if (!ps) {
        memset(opt, 0, sizeof *opt);
        return SYNO_NN_ENOMEM;
    }
    int rc = syno_nn_sgd_init(opt, ps, n, cfg);
    free(ps);
    return rc;
}

void syno_nn_sgd_step(syno_sgd_t *opt, double lr)
{
    const float mu = (float)opt->cfg.momentum, flr = (float)lr;
    for (int i = 0; i < opt->nparams; i++) {
        syno_param_t *p = opt->params[i];
        const int64_t n = syno_nn_tensor_numel(&p->value);
        const float wd = p->no_decay ? 0.0f : (float)opt->cfg.weight_decay;
        float *w = p->value.data, *v = opt->velocity[i];
        const float *g = p->grad.data;
        for (int64_t j = 0; j < n; j++) {
            float d = g[j] + wd * w[j];
            if (v) {
                v[j] = mu * v[j] + d;
                d = opt->cfg.nesterov ? d + mu * v[j] : v[j];
            }
            w[j] -= flr * d;
        }
    }
}

void syno_nn_sgd_zero_grad(syno_sgd_t *opt)
{
    for (int i = 0; i < opt->nparams; i++)
        syno_nn_tensor_zero(&opt->params[i]->grad);
}

void syno_nn_sgd_free(syno_sgd_t *opt)
{
    for (int i = 0; opt->velocity && i < opt->nparams; i++)
        free(opt->velocity[i]);
    free(opt->velocity);
    free(opt->params);
    memset(opt, 0, sizeof *opt);
}

/* ---------------------------------------------------------------- AdamW */

int syno_nn_adamw_init(syno_adamw_t *opt, syno_param_t **params, int n,
                       const syno_adamw_cfg_t *cfg)
{
    memset(opt, 0, sizeof *opt);
    if (n < 0 || (n > 0 && !params) || !cfg)
        return SYNO_NN_EINVAL;
    opt->cfg = *cfg;
    size_t k = (size_t)(n > 0 ? n : 1);
    opt->params = calloc(k, sizeof *opt->params);
    opt->m = calloc(k, sizeof *opt->m);
    opt->v = calloc(k, sizeof *opt->v);
    if (!opt->params || !opt->m || !opt->v) {
        syno_nn_adamw_free(opt);
        return SYNO_NN_ENOMEM;
    }
    opt->nparams = n;
    for (int i = 0; i < n; i++) {
        opt->params[i] = params[i];
        int64_t e = syno_nn_tensor_numel(&params[i]->value);
        opt->m[i] = calloc((size_t)(e > 0 ? e : 1), sizeof(float));
        opt->v[i] = calloc((size_t)(e > 0 ? e : 1), sizeof(float));
        if (!opt->m[i] || !opt->v[i]) {
            syno_nn_adamw_free(opt);
            return SYNO_NN_ENOMEM;
        }
    }
    return SYNO_NN_OK;
}

int syno_nn_adamw_init_layer(syno_adamw_t *opt, syno_layer_t *model, const syno_adamw_cfg_t *cfg)
{
    int n;
    syno_param_t **ps = model_params(model, &n);
    if (!ps) {
        memset(opt, 0, sizeof *opt);
        return SYNO_NN_ENOMEM;
    }
    int rc = syno_nn_adamw_init(opt, ps, n, cfg);
    free(ps);
    return rc;
}

void syno_nn_adamw_step(syno_adamw_t *opt, double lr)
{
    opt->t++;
    const double b1 = opt->cfg.beta1, b2 = opt->cfg.beta2;
    const double c1 = 1.0 - pow(b1, (double)opt->t), c2 = 1.0 - pow(b2, (double)opt->t);
    const float fb1 = (float)b1, fb2 = (float)b2, eps = (float)opt->cfg.eps;
    const float step = (float)(lr / c1), inv_c2 = (float)(1.0 / c2);
    for (int i = 0; i < opt->nparams; i++) {
        syno_param_t *p = opt->params[i];
        const int64_t n = syno_nn_tensor_numel(&p->value);
        const float decay = p->no_decay ? 1.0f : (float)(1.0 - lr * opt->cfg.weight_decay);
        float *w = p->value.data, *m = opt->m[i], *v = opt->v[i];
        const float *g = p->grad.data;
        for (int64_t j = 0; j < n; j++) {
            m[j] = fb1 * m[j] + (1.0f - fb1) * g[j];
            v[j] = fb2 * v[j] + (1.0f - fb2) * g[j] * g[j];
            w[j] = w[j] * decay - step * m[j] / (sqrtf(v[j] * inv_c2) + eps);
        }
    }
}

void syno_nn_adamw_free(syno_adamw_t *opt)
{
    for (int i = 0; i < opt->nparams; i++) {
        if (opt->m)
            free(opt->m[i]);
        if (opt->v)
            free(opt->v[i]);
    }
    free(opt->m);
    free(opt->v);
    free(opt->params);
    memset(opt, 0, sizeof *opt);
}

/* ---------------------------------------------------------------- schedule */

double syno_nn_lr_at(const syno_lr_schedule_t *s, int64_t step)
{
    if (step < 0)
        step = 0;
    if (step < s->warmup_steps)
        return s->base_lr * (double)(step + 1) / (double)s->warmup_steps;
    int64_t span = s->total_steps - s->warmup_steps;
    double p = span > 0 ? (double)(step - s->warmup_steps) / (double)span : 1.0;
    if (p > 1.0)
        p = 1.0;
    return s->final_lr + (s->base_lr - s->final_lr) * 0.5 * (1.0 + cos(3.141592653589793 * p));
}
