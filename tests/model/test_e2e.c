/* End to end: a small CNN (conv-bn-relu-pool-linear) trained on the committed UCI digits
 * must pass 85% test accuracy within a few epochs. This is the proof that the layers,
 * optimizer, schedule, batcher and data set compose and learn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "syno/data.h"
#include "syno/train.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void digits_path(char *buf, size_t len) {
  const char *src = getenv("SYNO_SOURCE_DIR");
  if (src && *src) {
    snprintf(buf, len, "%s/data/digits.csv.gz", src);
    return;
  }
  snprintf(buf, len, "%s", __FILE__);
  char *cut = strstr(buf, "tests/nn/");
  if (cut) snprintf(cut, len - (size_t)(cut - buf), "data/digits.csv.gz");
}

static syno_layer_t *small_cnn(syno_rng_t *rng) {
  syno_conv2d_cfg_t conv = {.in_channels = 1, .out_channels = 16, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1};
  syno_layer_t *layers[6] = {
      syno_nn_conv2d_create(&conv, rng),
      syno_nn_batchnorm_create(16, 0.1, 1e-5),
      syno_nn_relu_create(),
      syno_nn_maxpool2d_create(2, 2, 0),
      syno_nn_flatten_create(),
      syno_nn_linear_create(16 * 4 * 4, 10, 1, rng),
  };
  return syno_nn_sequential_create(6, layers);
}

/* Mean loss and accuracy of net (eval mode) over a data set. */
static double evaluate(syno_layer_t *net, const syno_dataset_t *ds, double *loss_out) {
  syno_batcher_t b;
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  int32_t labels[100];
  const int64_t *idx;
  int64_t n, correct = 0;
  double loss_sum = 0;
  assert_int_equal(syno_nn_batcher_init(&b, ds->n, 100, 0), 0);
  while ((n = syno_nn_batcher_next(&b, &idx)) > 0) {
    int64_t c;
    double loss;
    assert_int_equal(syno_data_gather(ds, idx, n, &x, labels), 0);
    assert_int_equal(syno_nn_forward(net, &x, 0), 0);
    assert_int_equal(syno_nn_softmax_xent(&net->out, labels, &loss, NULL, &c), 0);
    correct += c;
    loss_sum += loss * (double)n;
  }
  syno_nn_batcher_free(&b);
  syno_nn_tensor_free(&x);
  *loss_out = loss_sum / (double)ds->n;
  return (double)correct / (double)ds->n;
}

static void test_digits_cnn_learns(void **state) {
  (void)state;
  char path[4096];
  digits_path(path, sizeof path);
  syno_dataset_t train, test;
  syno_error_t err = {{0}};
  if (syno_data_load_digits_split(path, &train, &test, &err)) fail_msg("%s", err.msg);

  syno_rng_t rng;
  syno_rng_seed(&rng, 2024, 0);
  syno_layer_t *net = small_cnn(&rng);
  assert_non_null(net);
  net->skip_input_grad = 1; /* the input is data: no gradient wanted */

  const int epochs = 4, batch = 32;
  syno_batcher_t b;
  assert_int_equal(syno_nn_batcher_init(&b, train.n, batch, 1), 0);
  syno_sgd_t opt;
  syno_sgd_cfg_t cfg = {.momentum = 0.9, .weight_decay = 5e-4, .nesterov = 1};
  assert_int_equal(syno_nn_sgd_init_layer(&opt, net, &cfg), 0);
  const int64_t steps = epochs * syno_nn_batcher_count(&b);
  syno_lr_schedule_t sched = {.base_lr = 0.05, .final_lr = 0.0, .warmup_steps = 20, .total_steps = steps};
  syno_tensor_t x = SYNO_TENSOR_EMPTY, dlogits = SYNO_TENSOR_EMPTY;
  int32_t labels[32];
  int64_t step = 0;
  double acc = 0, t0 = now();
  for (int e = 0; e < epochs; e++) {
    double t_epoch = now(), loss_sum = 0;
    int64_t seen = 0, correct = 0, n;
    const int64_t *idx;
    syno_nn_batcher_epoch(&b, &rng);
    while ((n = syno_nn_batcher_next(&b, &idx)) > 0) {
      double loss;
      int64_t c;
      assert_int_equal(syno_data_gather(&train, idx, n, &x, labels), 0);
      assert_int_equal(syno_nn_forward(net, &x, 1), 0);
      assert_int_equal(syno_nn_softmax_xent(&net->out, labels, &loss, &dlogits, &c), 0);
      syno_nn_sgd_zero_grad(&opt);
      assert_int_equal(syno_nn_backward(net, &dlogits), 0);
      syno_nn_sgd_step(&opt, syno_nn_lr_at(&sched, step++));
      loss_sum += loss * (double)n;
      correct += c;
      seen += n;
    }
    double dt = now() - t_epoch, test_loss;
    acc = evaluate(net, &test, &test_loss);
    printf("epoch %d: train loss %.4f acc %.2f%% | test loss %.4f acc %.2f%% | %.0f img/s\n", e + 1,
           loss_sum / (double)seen, 100.0 * (double)correct / (double)seen, test_loss, 100.0 * acc, (double)seen / dt);
  }
  double total = now() - t0;
  printf("digits CNN: %d epochs in %.2f s, test accuracy %.2f%% (%d test samples)\n", epochs, total, 100.0 * acc,
         (int)test.n);
  assert_true(acc > 0.85); /* the time is printed, not asserted: speed belongs in bench/ */

  syno_nn_tensor_free(&x);
  syno_nn_tensor_free(&dlogits);
  syno_nn_sgd_free(&opt);
  syno_nn_batcher_free(&b);
  syno_nn_layer_free(net);
  syno_data_free(&train);
  syno_data_free(&test);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_digits_cnn_learns),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
