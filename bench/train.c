/* Training and inference throughput of a CNN backbone (standard operator in every slot): ours
 * against the same network in PyTorch (bench/train_torch.py builds it layer for layer, run via
 * popen with torch.set_num_threads(T)), batch 128 of synthetic 1xSxS images, medians of
 * repeats, both on --threads T threads (default 2). Both sides print their parameter count,
 * and a difference is reported: the two nets are the same only when the counts agree.
 * With --op TEXT, the network with that operator in every slot is trained too, round-robin
 * with the standard one, and the ratio of their training throughputs printed.
 *   build/bench/train [--backbone NAME] [--reps R] [--width W] [--depth D] [--batch B] [--side S]
 *                     [--threads T] [--op TEXT [--preset NAME]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"
#include "syno/task.h"
#include "syno/backbone.h"

/* One SGD step of net on x; seconds, or < 0 on failure. */
static double train_step(syno_layer_t *net, syno_sgd_t *opt, const syno_tensor_t *x, const int32_t *lab,
                         syno_tensor_t *dl) {
  double t0 = syno_clock_seconds(), loss;
  if (syno_nn_forward(net, x, 1) || syno_nn_softmax_xent(&net->out, lab, &loss, dl, NULL)) return -1;
  syno_nn_sgd_zero_grad(opt);
  if (syno_nn_backward(net, dl)) return -1;
  syno_nn_sgd_step(opt, 0.05);
  return syno_clock_seconds() - t0;
}

int main(int argc, char **argv) {
  int reps = 5, depth = 0;
  const char *op_text = NULL, *preset = "conv2d";
  static const char *const presets[] = {"conv2d", "conv2d-wide", NULL};
  double width = 1.0;
  int64_t batch = 128, side = 28, threads = 2;
  const char *name = "resnet";
  const char *const *backbones = syno_task_backbone_names(SYNO_TASK_IMAGES);
  static const char usage[] =
      "usage: train [--backbone NAME] [--reps R] [--width W] [--depth D] [--batch B] [--side S] [--threads T]\n"
      "             [--op TEXT [--preset NAME]]\n"
      "Training and inference throughput of a backbone, ours against the same net in PyTorch;\n"
      "with --op, the network with that operator in its slots against the standard one too.\n";
  syno_opt_t opts[] = {
      SYNO_OPT_ENUM("backbone", "NAME", &name, backbones, "the network (default resnet)"),
      BENCH_OPT_REPS(&reps, 100),
      SYNO_OPT_REAL("width", "W", &width, 0, 16, SYNO_OPT_OPEN_MIN, "channel multiplier (default 1)"),
      SYNO_OPT_INT("depth", "D", &depth, 0, 8, "blocks per stage (default 0: resnet 2, the others as published)"),
      SYNO_OPT_INT("batch", "B", &batch, 1, 65536, "batch size (default 128)"),
      SYNO_OPT_INT("side", "S", &side, 4, 1024, "image side (default 28; Fashion-MNIST padded by 2: 32)"),
      SYNO_OPT_INT("threads", "T", &threads, 1, 256, "threads of both sides (default 2)"),
      SYNO_OPT_STR("op", "TEXT", &op_text, "an operator for every slot, trained beside the standard net"),
      SYNO_OPT_ENUM("preset", "NAME", &preset, presets, "the operator's variables (default conv2d)"),
      SYNO_OPT_END,
  };
  bench_options("train", usage, opts, argc, argv);
  bench_signals(0);
  syno_nn_threads_set((int)threads);
  bench_print_setup(reps);
  printf("%s backbone width %g depth %d%s, batch %lld, 1x%lldx%lld, %d repeats\n", name, width, depth,
         depth ? "" : " (its default)", (long long)batch, (long long)side, (long long)side, reps);
  syno_backbone_cfg_t bc = {
      .name = name, .in_c = 1, .in_h = side, .in_w = side, .nclasses = 10, .width = width, .depth = depth};
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
  int64_t d[4] = {batch, 1, side, side};
  syno_nn_tensor_alloc(&x, 4, d);
  syno_nn_fill_normal(&rng, &x, 0, 1);
  int32_t *lab = malloc(sizeof(int32_t) * (size_t)batch);
  for (int64_t i = 0; i < batch; i++) lab[i] = (int32_t)(i % 10);
  syno_sgd_t opt;
  syno_sgd_cfg_t sc = {0.9, 5e-4, 0};
  syno_nn_sgd_init_layer(&opt, bb.net, &sc);
  /* With --op: the candidate network, trained round-robin with the standard one. */
  syno_backbone_t cb = {0};
  syno_sgd_t copt;
  syno_slotop_t *op = NULL;
  if (op_text) {
    syno_backbone_cfg_t cc = bc;
    if (syno_slotop_parse_preset(preset, op_text, &op, &err) || (cc.op = op, syno_backbone_build(&cc, &rng, &cb, &err))) {
      fprintf(stderr, "train: --op: %s\n", err.msg);
      return 1;
    }
    cb.net->skip_input_grad = 1;
    syno_nn_sgd_init_layer(&copt, cb.net, &sc);
  }
  double *t = malloc(sizeof(double) * 2 * (size_t)(reps + 1)), *tc = t + reps + 1;
  for (int r = 0; r <= reps; r++) {
    t[r] = train_step(bb.net, &opt, &x, lab, &dl);
    tc[r] = op ? train_step(cb.net, &copt, &x, lab, &dl) : 0;
    if (t[r] < 0 || tc[r] < 0) {
      fprintf(stderr, "train: a training step failed\n");
      return 1;
    }
  }
  double ours_train = batch / syno_median(t + 1, reps), lat;
  if (op) {
    double cand_train = batch / syno_median(tc + 1, reps);
    printf("operator: train %8.1f images/s, the standard net %8.1f images/s in the same run: %.2fx (FLOPs %.3gx)\n",
           cand_train, ours_train, cand_train / ours_train, (double)cb.flops / (double)bb.flops);
    syno_nn_sgd_free(&copt);
    syno_backbone_free(&cb);
    syno_slotop_free(op);
  }
  if (syno_net_latency(bb.net, batch, 1, side, side, reps, &lat, &err)) {
    fprintf(stderr, "train: %s\n", err.msg);
    return 1;
  }
  double ours_inf = batch / lat;
  struct rusage ru;
  double ours_mb = getrusage(RUSAGE_SELF, &ru) ? 0.0 : ru.ru_maxrss / 1024.0; /* Linux: KiB */
  printf("ours:    train %8.1f images/s   inference %8.1f images/s   %lld params   peak memory %7.0f MiB\n",
         ours_train, ours_inf, (long long)bb.params, ours_mb);
  char args[192];
  snprintf(args, sizeof args, "%s %g %d %lld %d %lld %lld", name, width, depth, (long long)batch, reps,
           (long long)side, (long long)threads);
  char *out = bench_run_torch("train_torch.py", args);
  double tt = 0, ti = 0, tmb = 0;
  long long tparams = 0;
  int got = out && sscanf(out, "train_ips %lf infer_ips %lf params %lld maxrss_mb %lf", &tt, &ti, &tparams, &tmb) == 4;
  free(out);
  if (!got) {
    printf("pytorch: skipped (" BENCH_PYTHON " with torch not available, or bench/train_torch.py failed)\n");
  } else {
    printf("pytorch: train %8.1f images/s   inference %8.1f images/s   %lld params   peak memory %7.0f MiB "
           "(torch.set_num_threads(%lld))\n",
           tt, ti, tparams, tmb, (long long)threads);
    if (tparams != (long long)bb.params)
      printf("warning: the two nets differ (%lld against %lld parameters): the ratio compares different nets\n",
             (long long)bb.params, tparams);
    printf("ratio ours/pytorch: train %.2fx, inference %.2fx, peak memory %.2fx\n", ours_train / tt, ours_inf / ti,
           ours_mb / tmb);
  }
  free(t);
  free(lab);
  syno_nn_sgd_free(&opt);
  syno_nn_tensor_free(&x);
  syno_nn_tensor_free(&dl);
  syno_backbone_free(&bb);
  return 0;
}
