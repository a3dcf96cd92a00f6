/* Training and inference throughput of the ResNet backbone (standard operator in every
 * slot): ours against the same network in PyTorch (bench/train_torch.py, run via popen with
 * torch.set_num_threads(2)), batch 128 of synthetic 1x28x28 images, medians of repeats.
 *   build/bench/train [--reps R] [--width W] [--depth D] [--batch B] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "syno/backbone.h"

int main(int argc, char **argv) {
  int reps = 5, depth = 2;
  double width = 1.0;
  int64_t batch = 128;
  static const char usage[] =
      "usage: train [--reps R] [--width W] [--depth D] [--batch B]\n"
      "Training and inference throughput of the ResNet backbone, ours against PyTorch.\n";
  syno_opt_t opts[] = {
      BENCH_OPT_REPS(&reps, 100),
      SYNO_OPT_REAL("width", "W", &width, 0, 16, SYNO_OPT_OPEN_MIN, "channel multiplier (default 1)"),
      SYNO_OPT_INT("depth", "D", &depth, 1, 8, "blocks per stage (default 2)"),
      SYNO_OPT_INT("batch", "B", &batch, 1, 65536, "batch size (default 128)"),
      SYNO_OPT_END,
  };
  bench_options("train", usage, opts, argc, argv);
  bench_signals(0);
  bench_print_setup(reps);
  printf("ResNet backbone width %g depth %d, batch %lld, 1x28x28, %d repeats\n", width, depth, (long long)batch, reps);
  syno_backbone_cfg_t bc = {
      .name = "resnet", .in_c = 1, .in_h = 28, .in_w = 28, .nclasses = 10, .width = width, .depth = depth};
  syno_rng_t rng;
  syno_rng_seed(&rng, 1, 1);
  syno_backbone_t bb;
  syno_error_t err = {0};
  if (syno_backbone_build(&bc, &rng, &bb, &err)) {
    fprintf(stderr, "train: %s\n", err.msg);
    return 1;
  }
  bb.net->skip_input_grad = 1;
  syno_tensor_t x = SYNO_TENSOR_EMPTY, dl = SYNO_TENSOR_EMPTY;
  int64_t d[4] = {batch, 1, 28, 28};
  syno_nn_tensor_alloc(&x, 4, d);
  syno_nn_fill_normal(&rng, &x, 0, 1);
  int32_t *lab = malloc(sizeof(int32_t) * (size_t)batch);
  for (int64_t i = 0; i < batch; i++) lab[i] = (int32_t)(i % 10);
  syno_sgd_t opt;
  syno_sgd_cfg_t sc = {0.9, 5e-4, 0};
  syno_nn_sgd_init_layer(&opt, bb.net, &sc);
  double *t = malloc(sizeof(double) * (size_t)(reps + 1));
  for (int r = 0; r <= reps; r++) {
    double t0 = bench_now(), loss;
    if (syno_nn_forward(bb.net, &x, 1) || syno_nn_softmax_xent(&bb.net->out, lab, &loss, &dl, NULL)) {
      fprintf(stderr, "train: forward failed\n");
      return 1;
    }
    syno_nn_sgd_zero_grad(&opt);
    if (syno_nn_backward(bb.net, &dl)) {
      fprintf(stderr, "train: backward failed\n");
      return 1;
    }
    syno_nn_sgd_step(&opt, 0.05);
    t[r] = bench_now() - t0;
  }
  double ours_train = batch / bench_median(t + 1, reps), lat;
  if (syno_net_latency(bb.net, batch, 1, 28, 28, reps, &lat, &err)) {
    fprintf(stderr, "train: %s\n", err.msg);
    return 1;
  }
  double ours_inf = batch / lat;
  printf("ours:    train %8.1f images/s   inference %8.1f images/s\n", ours_train, ours_inf);
  char args[128];
  snprintf(args, sizeof args, "%g %d %lld %d", width, depth, (long long)batch, reps);
  char *out = bench_run_torch("train_torch.py", args);
  double tt = 0, ti = 0;
  int got = out && sscanf(out, "train_ips %lf infer_ips %lf", &tt, &ti) == 2;
  free(out);
  if (!got) {
    printf("pytorch: skipped (" BENCH_PYTHON " with torch not available, or bench/train_torch.py failed)\n");
  } else {
    printf("pytorch: train %8.1f images/s   inference %8.1f images/s (torch.set_num_threads(2))\n", tt, ti);
    printf("ratio ours/pytorch: train %.2fx, inference %.2fx\n", ours_train / tt, ours_inf / ti);
  }
  free(t);
  free(lab);
  syno_nn_sgd_free(&opt);
  syno_nn_tensor_free(&x);
  syno_nn_tensor_free(&dl);
  syno_backbone_free(&bb);
  return 0;
}
