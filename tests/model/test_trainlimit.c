/* The training time limit's prediction: a run the first steps say cannot finish in time stops
 * at once, at the prediction step, with "would take ..."; one that fits is not stopped. The
 * step time is bounded from below by a progress callback that sleeps, so the prediction's
 * outcome does not depend on how fast the machine is. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "syno/backbone.h"

static void sleepy(const syno_train_progress_t *p, void *user) {
  (void)p;
  double s = *(const double *)user;
  struct timespec ts = {0, (long)(s * 1e9)};
  nanosleep(&ts, NULL);
}

/* digits, 64 images in batches of 32: 2 steps per epoch. */
static syno_train_cfg_t small_run(int epochs, double time_limit, double *sleep_s) {
  syno_train_cfg_t cfg = {0};
  cfg.backbone = "vgg";
  cfg.dataset = "digits";
  cfg.epochs = epochs;
  cfg.batch = 32;
  cfg.subset = 64;
  cfg.width = 0.25;
  cfg.depth = 1;
  cfg.time_limit = time_limit;
  cfg.progress = sleepy;
  cfg.user = sleep_s;
  return cfg;
}

/* 2000 steps of at least 50 ms each are at least 98 s after the 40th: over a 60 s limit. The
 * prediction is made at step 40 (2%), long before the 60 s are used. */
static void test_predicted_overrun(void **state) {
  (void)state;
  double nap = 0.05;
  syno_train_cfg_t cfg = small_run(1000, 60, &nap);
  syno_train_result_t res;
  syno_error_t err;
  if (syno_train_run(&cfg, &res, &err)) fail_msg("%s", err.msg);
  assert_true(res.failed);
  if (strncmp(res.failure, "would take ", 11) ||
      !strstr(res.failure, " s, over the 60 s limit (predicted from 40 steps)"))
    fail_msg("unexpected reason: %s", res.failure);
  assert_int_equal(res.steps, 40);
  assert_int_equal(res.epochs_done, 19); /* step 40 ends epoch 20's steps, not the epoch */
  int predicted = atoi(res.failure + 11);
  assert_true(predicted >= 98);
}

/* A limit passed before the prediction step stops the run with the prediction from the steps
 * so far. */
static void test_limit_before_prediction(void **state) {
  (void)state;
  double nap = 0.02;
  syno_train_cfg_t cfg = small_run(1000, 0.01, &nap);
  syno_train_result_t res;
  syno_error_t err;
  if (syno_train_run(&cfg, &res, &err)) fail_msg("%s", err.msg);
  assert_true(res.failed);
  if (strncmp(res.failure, "would take ", 11) || !strstr(res.failure, "over the 0.01 s limit (predicted from 1 step)"))
    fail_msg("unexpected reason: %s", res.failure);
  assert_int_equal(res.steps, 1);
  assert_int_equal(res.epochs_done, 0);
}

/* A run the prediction says fits is not stopped. */
static void test_fits(void **state) {
  (void)state;
  double nap = 0;
  syno_train_cfg_t cfg = small_run(3, 1e6, &nap);
  syno_train_result_t res;
  syno_error_t err;
  if (syno_train_run(&cfg, &res, &err)) fail_msg("%s", err.msg);
  assert_false(res.failed);
  assert_int_equal(res.epochs_done, 3);
  assert_int_equal(res.steps, 6);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_predicted_overrun),
      cmocka_unit_test(test_limit_before_prediction),
      cmocka_unit_test(test_fits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
