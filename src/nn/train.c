/* PRNG, mini-batch iteration, SGD and the learning-rate schedule (see syno/train.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "nn_internal.h"
#include "syno/train.h"

void syno_nn_fill_normal(syno_rng_t *rng, syno_tensor_t *t, double mean, double std) {
  int64_t n = syno_nn_tensor_numel(t);
  for (int64_t i = 0; i < n && t->data; i++) t->data[i] = (float)(mean + std * syno_rng_normal(rng));
}

void syno_nn_fill_uniform(syno_rng_t *rng, syno_tensor_t *t, double lo, double hi) {
  int64_t n = syno_nn_tensor_numel(t);
  for (int64_t i = 0; i < n && t->data; i++) t->data[i] = (float)(lo + (hi - lo) * syno_rng_uniform(rng));
}

/* ---------------------------------------------------------------- batcher */

int syno_nn_batcher_init(syno_batcher_t *b, int64_t n, int64_t batch_size, int drop_last) {
  memset(b, 0, sizeof *b);
  if (n < 0 || batch_size <= 0) return SYNO_NN_EINVAL;
  b->order = malloc((size_t)(n > 0 ? n : 1) * sizeof *b->order);
  if (!b->order) return SYNO_NN_ENOMEM;
  b->n = n;
  b->batch_size = batch_size;
  b->drop_last = drop_last != 0;
  syno_nn_batcher_epoch(b, NULL);
  return SYNO_NN_OK;
}

void syno_nn_batcher_epoch(syno_batcher_t *b, syno_rng_t *rng) {
  /* Restart from the identity so an epoch's order depends only on the rng state. */
  for (int64_t i = 0; i < b->n; i++) b->order[i] = i;
  if (rng) syno_rng_shuffle(rng, b->order, b->n);
  b->pos = 0;
}

int64_t syno_nn_batcher_next(syno_batcher_t *b, const int64_t **idx) {
  int64_t left = b->n - b->pos;
  int64_t cnt = left < b->batch_size ? left : b->batch_size;
  if (cnt <= 0 || (b->drop_last && cnt < b->batch_size)) return 0;
  *idx = b->order + b->pos;
  b->pos += cnt;
  return cnt;
}

int64_t syno_nn_batcher_count(const syno_batcher_t *b) {
  return b->drop_last ? b->n / b->batch_size : (b->n + b->batch_size - 1) / b->batch_size;
}

void syno_nn_batcher_free(syno_batcher_t *b) {
  free(b->order);
  memset(b, 0, sizeof *b);
}

/* ---------------------------------------------------------------- SGD */

int syno_nn_sgd_init(syno_sgd_t *opt, syno_param_t **params, int n, const syno_sgd_cfg_t *cfg) {
  memset(opt, 0, sizeof *opt);
  if (n < 0 || (n > 0 && !params) || !cfg) return SYNO_NN_EINVAL;
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
static syno_param_t **model_params(syno_layer_t *model, int *n) {
  *n = syno_nn_params(model, NULL, 0);
  syno_param_t **ps = malloc((size_t)(*n > 0 ? *n : 1) * sizeof *ps);
  if (ps) syno_nn_params(model, ps, *n);
  return ps;
}

int syno_nn_sgd_init_layer(syno_sgd_t *opt, syno_layer_t *model, const syno_sgd_cfg_t *cfg) {
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

void syno_nn_sgd_step(syno_sgd_t *opt, double lr) {
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

void syno_nn_sgd_zero_grad(syno_sgd_t *opt) {
  for (int i = 0; i < opt->nparams; i++) syno_nn_tensor_zero(&opt->params[i]->grad);
}

void syno_nn_sgd_free(syno_sgd_t *opt) {
  for (int i = 0; opt->velocity && i < opt->nparams; i++) free(opt->velocity[i]);
  free(opt->velocity);
  free(opt->params);
  memset(opt, 0, sizeof *opt);
}

/* ---------------------------------------------------------------- AdamW */

int syno_nn_adamw_init(syno_adamw_t *opt, syno_param_t **params, int n, const syno_adamw_cfg_t *cfg) {
  memset(opt, 0, sizeof *opt);
  if (n < 0 || (n > 0 && !params) || !cfg) return SYNO_NN_EINVAL;
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

int syno_nn_adamw_init_layer(syno_adamw_t *opt, syno_layer_t *model, const syno_adamw_cfg_t *cfg) {
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

void syno_nn_adamw_step(syno_adamw_t *opt, double lr) {
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

void syno_nn_adamw_free(syno_adamw_t *opt) {
  for (int i = 0; i < opt->nparams; i++) {
    if (opt->m) free(opt->m[i]);
    if (opt->v) free(opt->v[i]);
  }
  free(opt->m);
  free(opt->v);
  free(opt->params);
  memset(opt, 0, sizeof *opt);
}

/* ---------------------------------------------------------------- schedule */

double syno_nn_lr_at(const syno_lr_schedule_t *s, int64_t step) {
  if (step < 0) step = 0;
  if (step < s->warmup_steps) return s->base_lr * (double)(step + 1) / (double)s->warmup_steps;
  int64_t span = s->total_steps - s->warmup_steps;
  double p = span > 0 ? (double)(step - s->warmup_steps) / (double)span : 1.0;
  if (p > 1.0) p = 1.0;
  return s->final_lr + (s->base_lr - s->final_lr) * 0.5 * (1.0 + cos(3.141592653589793 * p));
}
