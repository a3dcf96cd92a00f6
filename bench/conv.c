/*
 * conv2d backends on ResNet shapes (N = 128, 3x3, padding 1, C -> C, no bias): the im2col +
 * sgemm baseline against the oneDNN backend, forward (inference mode) and forward+backward
 * (training mode, dx and dW), plus PyTorch's F.conv2d (bench/conv_torch.py run with
 * /usr/bin/python3, 2 threads; skipped with a note when torch is missing). Medians over
 * --reps runs after a warm-up; GFLOP/s counts 2*N*K*C*9*OH*OW per pass (3x for f+b).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "syno/nn.h"
#include "syno/train.h"

static const int64_t shapes[][2] = {{16, 28}, {32, 14}, {64, 7}, {128, 4}};
#define NSHAPES (sizeof shapes / sizeof shapes[0])
static const int64_t N = 128;

/* Median seconds of forward (bwd = 0, inference mode) or forward+backward (training). */
static double time_layer(syno_layer_t *l, const syno_tensor_t *x, const syno_tensor_t *dy, int bwd, int reps) {
  double *t = malloc((size_t)reps * sizeof *t);
  for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
    double t0 = syno_clock_seconds();
    if (syno_nn_forward(l, x, bwd) || (bwd && syno_nn_backward(l, dy))) {
      fprintf(stderr, "conv: forward/backward failed\n");
      exit(1);
    }
    if (r >= 0) t[r] = syno_clock_seconds() - t0;
  }
  double m = syno_median(t, reps);
  free(t);
  return m;
}

int main(int argc, char **argv) {
  int reps = 7;
  syno_opt_t opts[] = {BENCH_OPT_REPS(&reps, 1000), SYNO_OPT_END};
  bench_options("conv",
                "usage: conv [--reps R]   (default 7)\n"
                "Times conv2d im2col vs oneDNN (and PyTorch F.conv2d) on N=128 ResNet shapes.\n",
                opts, argc, argv);
  bench_signals(0);
  bench_print_setup(reps);

  double tsec[NSHAPES][2][2]; /* [shape][im2col, onednn][fwd, f+b] */
  double flops[NSHAPES];
  for (size_t s = 0; s < NSHAPES; s++) {
    int64_t C = shapes[s][0], H = shapes[s][1];
    flops[s] = 2.0 * (double)(N * C * C * 9 * H * H);
    syno_conv2d_cfg_t cfg = {.in_channels = C, .out_channels = C, .kernel_h = 3, .kernel_w = 3, .pad_h = 1, .pad_w = 1};
    int64_t xd[4] = {N, C, H, H};
    syno_rng_t rng;
    syno_rng_seed(&rng, 42, 1);
    syno_tensor_t x = SYNO_TENSOR_EMPTY, dy = SYNO_TENSOR_EMPTY;
    syno_nn_tensor_alloc(&x, 4, xd);
    syno_nn_tensor_alloc(&dy, 4, xd);
    syno_nn_fill_normal(&rng, &x, 0.0, 1.0);
    syno_nn_fill_normal(&rng, &dy, 0.0, 1.0);
    syno_layer_t *l[2];
    for (int b = 0; b < 2; b++) {
      cfg.backend = b ? SYNO_CONV_ONEDNN : SYNO_CONV_IM2COL;
      syno_rng_seed(&rng, 7, 1);
      l[b] = syno_nn_conv2d_create(&cfg, &rng);
      if (!l[b]) {
        fprintf(stderr, "conv: layer creation failed\n");
        return 1;
      }
    }
    /* Interleave the backends so drift in machine load hits both alike. */
    for (int bwd = 0; bwd < 2; bwd++)
      for (int b = 0; b < 2; b++) tsec[s][b][bwd] = time_layer(l[b], &x, &dy, bwd, reps);
    /* Agreement of the two, as a sanity check of what was timed. */
    syno_nn_forward(l[0], &x, 0);
    syno_nn_forward(l[1], &x, 0);
    double num = 0.0, den = 1e-30;
    for (int64_t i = 0; i < syno_nn_tensor_numel(&l[0]->out); i++) {
      num = fmax(num, fabs((double)l[0]->out.data[i] - l[1]->out.data[i]));
      den = fmax(den, fabs((double)l[0]->out.data[i]));
    }
    if (num / den > 1e-4) {
      fprintf(stderr, "conv: backends disagree (rel err %.2e)\n", num / den);
      return 1;
    }
    syno_nn_layer_free(l[0]);
    syno_nn_layer_free(l[1]);
    syno_nn_tensor_free(&x);
    syno_nn_tensor_free(&dy);
  }

  /* PyTorch, in a child process. */
  double torch_t[NSHAPES][2];
  int have_torch = 0;
  char args[512], torch_ver[64] = "";
  int len = snprintf(args, sizeof args, "%lld %d", (long long)N, reps);
  for (size_t s = 0; s < NSHAPES; s++)
    len +=
        snprintf(args + len, sizeof args - (size_t)len, " %lld:%lld", (long long)shapes[s][0], (long long)shapes[s][1]);
  char *out = bench_run_torch("conv_torch.py", args);
  if (out) {
    int got = 0, tthreads = 0, off = 0;
    if (sscanf(out, "torch %63s threads %d\n%n", torch_ver, &tthreads, &off) == 2) {
      for (size_t s = 0; s < NSHAPES; s++) {
        long long c, h;
        int adv = 0;
        if (sscanf(out + off, "%lld %lld %lf %lf\n%n", &c, &h, &torch_t[s][0], &torch_t[s][1], &adv) != 4 || adv == 0)
          break;
        off += adv;
        got += c == shapes[s][0] && h == shapes[s][1];
      }
    }
    free(out);
    have_torch = got == (int)NSHAPES;
    if (have_torch) printf("PyTorch %s F.conv2d, %d thread(s)\n", torch_ver, tthreads);
  }
  if (!have_torch) printf("note: PyTorch not run (" BENCH_PYTHON " without torch, or the script failed)\n");

  const char *pass[2] = {"forward (inference)", "forward+backward"};
  for (int bwd = 0; bwd < 2; bwd++) {
    printf("\n%s\n%-18s %9s %7s %9s %7s %7s", pass[bwd], "shape (N,C,HxW)", "im2col", "GF/s", "oneDNN", "GF/s",
           "speedup");
    if (have_torch) printf(" %9s %7s %9s", "torch", "GF/s", "torch/dnnl");
    printf("\n");
    double mult = bwd ? 3.0 : 1.0;
    for (size_t s = 0; s < NSHAPES; s++) {
      char name[32];
      snprintf(name, sizeof name, "%lld,%lld,%lldx%lld", (long long)N, (long long)shapes[s][0], (long long)shapes[s][1],
               (long long)shapes[s][1]);
      double a = tsec[s][0][bwd], b = tsec[s][1][bwd], f = mult * flops[s] * 1e-9;
      printf("%-18s %9.2f %7.1f %9.2f %7.1f %6.2fx", name, a * 1e3, f / a, b * 1e3, f / b, a / b);
      if (have_torch) {
        double t = torch_t[s][bwd];
        printf(" %9.2f %7.1f %9.2fx", t * 1e3, f / t, t / b);
      }
      printf("\n");
    }
  }
  printf(
      "\nspeedup = im2col time / oneDNN time; torch/dnnl = torch time / oneDNN time "
      "(> 1: oneDNN faster)\n");
  return 0;
}
