/* bench/op: a synthesized operator in every slot of the ResNet backbone against the standard
 * network, whose 3x3 convolutions run once on oneDNN and once on syno's im2col + BLAS path,
 * timed round-robin in one run (inference, random weights: the latency does not depend on
 * trained values). Prints the whole network and each distinct slot binding, medians of
 * --reps, and the speed-up over the faster standard implementation. The search's `syno eval`
 * measures the same way (syno_backbone_latency_cmp), but on a machine shared with training;
 * this is the quiet re-measurement of a winner.
 *
 * --kernels halide|best runs the operator's slots as Halide kernels (or the faster of kernel
 * and executor per slot) and times the standard network as kernels too (docs/halide.md).
 *
 * usage: op [--op TEXT ...] [--preset NAME] [--dataset digits|fashion-mnist] [--pad P]
 *           [--batch B] [--threads T] [--reps R] [--kernels exec|halide|best] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "syno/backbone.h"
#include "syno/kernels.h"

#define MAX_OPS 16

/* Without --op: the operator of the Fashion-MNIST search that meets the target when
 * retrained (README, "A Fashion-MNIST search"): a 1x3 convolution. */
static const char default_op[] =
    "r0=sum(k_1) r1=sum(C_in); in[i0, share(r1, 1), i2, unfold(i3, share(r0, 1))] expand[share(i1, 1)] "
    "w1[r1, i1, r0]";

static const char usage[] =
    "usage: op --op TEXT [--op TEXT ...] [--preset NAME] [--dataset digits|fashion-mnist] [--pad P]\n"
    "          [--batch B] [--threads T] [--reps R] [--kernels exec|halide|best]\n"
    "Times each operator in every ResNet slot against the standard net (oneDNN and im2col).\n"
    "Defaults: preset conv2d (the operators' variables; conv2d-wide for older searches),\n"
    "fashion-mnist, pad 2, batch 1, 1 thread, 101 repeats; without --op, the operator\n"
    "the Fashion-MNIST search found (a 1x3 convolution, see README).\n";

int main(int argc, char **argv) {
  static const char *const datasets[] = {"digits", "fashion-mnist", NULL}, *const presets[] = {"conv2d", "conv2d-wide",
                                                                                               NULL};
  const char *ops[MAX_OPS];
  int nops = 0, reps = 101, threads = 1, pad = 2;
  long batch = 1;
  const char *dataset = "fashion-mnist", *preset = "conv2d", *kernels_name = "exec";
  static const char *const kernel_choices[] = {"exec", "halide", "best", NULL};
  syno_opt_t opts[] = {
      SYNO_OPT_LIST("op", "TEXT", ops, MAX_OPS, &nops, "an operator to time (default: the 1x3 convolution)"),
      SYNO_OPT_ENUM("preset", "NAME", &preset, presets, "the operators' variables (default conv2d)"),
      SYNO_OPT_ENUM("dataset", "NAME", &dataset, datasets, "the image size (default fashion-mnist)"),
      SYNO_OPT_INT("pad", "P", &pad, 0, 64, "zero-padding per side (default 2)"),
      SYNO_OPT_INT("batch", "B", &batch, 1, 65536, "inference batch (default 1)"),
      SYNO_OPT_INT("threads", "T", &threads, 1, 256, "threads (default 1)"),
      BENCH_OPT_REPS(&reps, 1000),
      SYNO_OPT_ENUM("kernels", "K", &kernels_name, kernel_choices,
                    "what runs the operator's inference: exec (default), halide\n"
                    "or best (the faster per slot); halide and best time the\n"
                    "standard network as kernels too"),
      SYNO_OPT_END,
  };
  bench_options("op", usage, opts, argc, argv);
  syno_kernels_t kernels = SYNO_KERNELS_EXEC;
  syno_kernels_parse(kernels_name, &kernels);
  bench_signals(0);
  int side = !strcmp(dataset, "digits") ? 8 : 28;
  if (!nops) ops[nops++] = default_op;
  /* Every operator parses before anything is printed or timed: a bad one is a usage error. */
  syno_slotop_t *parsed[MAX_OPS] = {0};
  for (int k = 0; k < nops; k++) {
    syno_error_t err = {0};
    if (syno_slotop_parse_preset(preset, ops[k], &parsed[k], &err)) {
      fprintf(stderr, "op: --op %d: %s\n", k + 1, err.msg);
      return 2;
    }
  }
  syno_nn_threads_set(threads);
  bench_print_setup(reps);
  printf("ResNet on %s (1x%dx%d), batch %ld, inference; times in ms\n", dataset, side + 2 * pad, side + 2 * pad, batch);
  for (int k = 0; k < nops; k++) {
    syno_error_t err = {0};
    syno_slotop_t *op = parsed[k];
    syno_backbone_cfg_t bc = {.name = "resnet",
                              .in_c = 1,
                              .in_h = side + 2 * pad,
                              .in_w = side + 2 * pad,
                              .nclasses = 10,
                              .op = op,
                              .kernels = kernels};
    syno_rng_t rng;
    syno_rng_seed(&rng, 1, 1);
    syno_backbone_t cand;
    syno_latency_cmp_t lc;
    if (syno_backbone_build(&bc, &rng, &cand, &err) ||
        syno_backbone_latency_cmp(&cand, &bc, &rng, batch, reps, &lc, &err)) {
      fprintf(stderr, "op: %s\n", err.msg);
      return 1;
    }
    printf("\noperator %d: %s\n", k + 1, ops[k]);
    printf("  %-22s %9s %9s %9s %9s  %8s %8s  %s\n", "", "this op", "oneDNN", "im2col", "kernels", "speed-up",
           "vs im2col", "this op ran on");
    int f = syno_latency_fastest(lc.net);
    printf("  %-22s %9.4f %9.4f %9.4f %9.4f  %7.2fx %8.2fx  %s   FLOPs %.3gx\n", "whole network", 1e3 * lc.net[0],
           1e3 * lc.net[1], 1e3 * lc.net[2], 1e3 * lc.net[3], lc.net[f] / lc.net[0], lc.net[2] / lc.net[0],
           lc.net_kernel, (double)cand.flops / (double)lc.std_flops);
    for (int i = 0; i < lc.nslots; i++) {
      const double *t = lc.slot_t[i];
      char name[64];
      snprintf(name, sizeof name, "slot %lldx%lld %lldx%lld", (long long)lc.slot[i].c_in, (long long)lc.slot[i].c_out,
               (long long)lc.slot[i].h, (long long)lc.slot[i].w);
      int g = syno_latency_fastest(t);
      printf("  %-22s %9.4f %9.4f %9.4f %9.4f  %7.2fx %8.2fx  %s\n", name, 1e3 * t[0], 1e3 * t[1], 1e3 * t[2],
             1e3 * t[3], t[g] / t[0], t[2] / t[0], lc.slot_kernel[i]);
    }
    /* Per FLOP: the operator's GFLOP/s (the FLOPs of its plan) against oneDNN's 3x3 conv
     * at the same slot, and what ran each stage. */
    printf("  %-22s %9s %9s %9s %9s  %s\n", "", "FLOPs", "GFLOP/s", "oneDNN", "per FLOP", "path");
    for (int i = 0; i < lc.nslots; i++) {
      const double *t = lc.slot_t[i];
      char name[64];
      snprintf(name, sizeof name, "slot %lldx%lld %lldx%lld", (long long)lc.slot[i].c_in, (long long)lc.slot[i].c_out,
               (long long)lc.slot[i].h, (long long)lc.slot[i].w);
      double fo = (double)lc.slot[i].flops * (double)batch, fs = (double)lc.std_slot_flops[i] * (double)batch;
      double go = fo / t[0] * 1e-9, gs = fs / t[1] * 1e-9;
      printf("  %-22s %8.3fx %9.1f %9.1f %8.0f%%  %s\n", name, fo / fs, go, gs, 100.0 * go / gs, lc.slot_path[i]);
    }
    syno_backbone_free(&cand);
    syno_slotop_free(op);
  }
  printf(
      "\nspeed-up = the fastest standard implementation's time / this operator's time; kernels = the\n"
      "standard network with its 3x3 convs as Halide kernels (--kernels halide|best; 0: not timed);\n"
      "FLOPs = the operator's (its cheapest plan) over the 3x3 conv's; per FLOP = its GFLOP/s over\n"
      "oneDNN's 3x3 conv's at the same slot\n");
  return 0;
}
