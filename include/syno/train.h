/*
 * syno/train.h — what turns layers into a training run: random tensors, mini-batch iteration,
 * SGD with momentum and weight decay, AdamW, and a cosine learning-rate schedule with warm-up.
 *
 * Reproducibility is the invariant: all randomness comes from a syno_rng_t (syno/rng.h) the
 * caller owns and passes explicitly, so a run is a pure function of its seeds.
 *
 * The optimizer borrows the parameters it updates (they stay owned by their layers) and owns
 * only its momentum buffers; free it before the layers. The batcher owns its index array.
 */
#ifndef SYNO_TRAIN_H
#define SYNO_TRAIN_H

#include <stdint.h>

#include "syno/nn.h"
#include "syno/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- random tensors */

/* Fills t with N(mean, std^2) samples. */
void syno_nn_fill_normal(syno_rng_t *rng, syno_tensor_t *t, double mean, double std);
/* Fills t with uniform samples in [lo, hi). */
void syno_nn_fill_uniform(syno_rng_t *rng, syno_tensor_t *t, double lo, double hi);

/* ---------------------------------------------------------------- mini-batches */

/* Iterates over sample indices 0..n-1 in batches, reshuffled at each epoch start. */
typedef struct syno_batcher {
  int64_t *order; /* owned permutation of 0..n-1 */
  int64_t n;
  int64_t batch_size;
  int64_t pos;
  int drop_last; /* 1: skip the final partial batch (keeps batch statistics sane) */
} syno_batcher_t;

int syno_nn_batcher_init(syno_batcher_t *b, int64_t n, int64_t batch_size, int drop_last);
/* Starts an epoch: shuffles the order with rng, or restores 0..n-1 when rng is NULL. */
void syno_nn_batcher_epoch(syno_batcher_t *b, syno_rng_t *rng);
/* Points *idx at the next batch's indices and returns its size; 0 at the end of the epoch. */
int64_t syno_nn_batcher_next(syno_batcher_t *b, const int64_t **idx);
/* Batches per epoch. */
int64_t syno_nn_batcher_count(const syno_batcher_t *b);
void syno_nn_batcher_free(syno_batcher_t *b);

/* ---------------------------------------------------------------- SGD */

typedef struct syno_sgd_cfg {
  double momentum;     /* 0 for plain SGD */
  double weight_decay; /* L2 coefficient added to the gradient; skipped for no_decay params */
  int nesterov;
} syno_sgd_cfg_t;

/* PyTorch's SGD: g = grad + wd*w; v = momentum*v + g; w -= lr * (nesterov ? g + momentum*v : v).
 * The first step starts from v = 0, which equals PyTorch's v = g for dampening 0. */
typedef struct syno_sgd {
  syno_param_t **params; /* borrowed */
  float **velocity;      /* owned, one buffer per parameter */
  int nparams;
  syno_sgd_cfg_t cfg;
} syno_sgd_t;

/* Optimises the n given parameters (the array is copied). */
int syno_nn_sgd_init(syno_sgd_t *opt, syno_param_t **params, int n, const syno_sgd_cfg_t *cfg);
/* Optimises every parameter of a layer tree. */
int syno_nn_sgd_init_layer(syno_sgd_t *opt, syno_layer_t *model, const syno_sgd_cfg_t *cfg);
void syno_nn_sgd_step(syno_sgd_t *opt, double lr);
void syno_nn_sgd_zero_grad(syno_sgd_t *opt);
void syno_nn_sgd_free(syno_sgd_t *opt);

/* ---------------------------------------------------------------- AdamW */

typedef struct syno_adamw_cfg {
  double beta1, beta2; /* moment decay rates, e.g. 0.9 and 0.999 */
  double eps;          /* added to sqrt(v_hat), e.g. 1e-8 */
  double weight_decay; /* decoupled; skipped for no_decay params */
} syno_adamw_cfg_t;

/* PyTorch's AdamW (amsgrad off): at step t = 1, 2, ...
 *   w -= lr * wd * w;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
 *   w -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
 * Borrows the parameters, owns the moment buffers. */
typedef struct syno_adamw {
  syno_param_t **params; /* borrowed */
  float **m, **v;        /* owned, one buffer each per parameter */
  int nparams;
  int64_t t; /* steps taken */
  syno_adamw_cfg_t cfg;
} syno_adamw_t;

int syno_nn_adamw_init(syno_adamw_t *opt, syno_param_t **params, int n, const syno_adamw_cfg_t *cfg);
int syno_nn_adamw_init_layer(syno_adamw_t *opt, syno_layer_t *model, const syno_adamw_cfg_t *cfg);
void syno_nn_adamw_step(syno_adamw_t *opt, double lr);
void syno_nn_adamw_free(syno_adamw_t *opt);

/* ---------------------------------------------------------------- learning-rate schedule */

/* Linear warm-up then cosine decay, per optimizer step:
 *   step < warmup:  lr = base * (step + 1) / warmup      (the first step is never 0)
 *   otherwise:      p = (step - warmup) / (total - warmup), clamped to [0, 1]
 *                   lr = final + (base - final) * (1 + cos(pi p)) / 2
 * so lr reaches `final` at step == total and stays there. */
typedef struct syno_lr_schedule {
  double base_lr;
  double final_lr;
  int64_t warmup_steps;
  int64_t total_steps;
} syno_lr_schedule_t;

double syno_nn_lr_at(const syno_lr_schedule_t *s, int64_t step);

#ifdef __cplusplus
}
#endif

#endif /* SYNO_TRAIN_H */
