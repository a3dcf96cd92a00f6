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
 * --ops-file FILE, --db DB and --sample N time a set of operators instead (one operator text
 * per line; every candidate of a search database; N operators sampled from the preset bound
 * to the backbone's slots): each operator in every distinct slot, as deployed, beside oneDNN's
 * 3x3 convolution in the same run; per operator its speed-up and its efficiency per FLOP (its
 * GFLOP/s over the slots against oneDNN's), then the distribution of both.
 *
 * usage: op [--op TEXT ...] [--preset NAME] [--dataset digits|fashion-mnist] [--pad P]
 *           [--batch B] [--threads T] [--reps R] [--kernels exec|halide|best]
 *           [--ops-file FILE] [--db DB] [--sample N [--seed S]] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "syno/task.h"
#include "syno/alloc.h"
#include "syno/backbone.h"
#include "syno/kernels.h"
#include "syno/signature.h"
#include "syno/space.h"
#include "syno/store.h"

#define MAX_OPS 16
#define MAX_SET 4096

/* ---------------------------------------------------------------- a set of operators */

typedef struct {
  char **text;
  int n;
} opset_t;

static int set_add(opset_t *s, const char *t) {
  if (s->n >= MAX_SET) return 0;
  char *c = syno_strdup(t);
  if (!c) return -1;
  s->text[s->n++] = c;
  return 0;
}

static int set_from_file(opset_t *s, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "op: --ops-file %s: cannot open\n", path);
    return -1;
  }
  char line[8192];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = 0;
    if (line[0] && line[0] != '#' && set_add(s, line)) break;
  }
  fclose(f);
  return 0;
}

static int set_from_db(opset_t *s, const char *path) {
  syno_error_t err;
  syno_db_t *db;
  syno_db_cand_t *list;
  int n;
  if (syno_db_open(path, SYNO_DB_READONLY, &db, &err) || syno_db_list(db, &list, &n, &err)) {
    fprintf(stderr, "op: --db %s: %s\n", path, err.msg);
    return -1;
  }
  for (int i = 0; i < n; i++)
    if (!list[i].is_baseline) set_add(s, list[i].op_text);
  syno_db_list_free(list, n);
  syno_db_close(db);
  return 0;
}

typedef struct {
  syno_slot_info_t si;
  syno_layer_t *std; /* the standard 3x3 conv slot */
} slotb_t;

/* N operators of the preset bound to every slot binding (the smallest side admits a window
 * of 3, as a search's spec does). */
static int set_from_sample(opset_t *s, const char *preset, const slotb_t *sb, int nsb, long n, uint64_t seed) {
  syno_error_t err;
  syno_space_spec_t spec;
  syno_signature_t sig;
  char b[128];
  int64_t side = 0;
  if (syno_signature_preset(preset, "", &sig, &err)) goto fail;
  for (int i = 0; i < nsb; i++) {
    if (syno_signature_conv_binding(&sig, 1, sb[i].si.c_in, sb[i].si.c_out, sb[i].si.h, sb[i].si.w, b, sizeof b,
                                    &err) ||
        (i == 0 ? syno_space_preset(preset, b, &spec, &err) : syno_vars_bind(&spec.vars, b, &err)))
      goto fail;
    if (!side || sb[i].si.h < side) side = sb[i].si.h;
  }
  if (side < 7) spec.opts.min_unfold_ratio = (double)side / 3.0 - 1e-6;
  if (syno_space_spec_check(&spec, &err)) goto fail;
  syno_sample_t *smp = calloc((size_t)n, sizeof *smp);
  if (!smp || syno_space_sample(&spec, n, 1, seed, 1000000, true, smp, NULL, &err)) {
    free(smp);
    goto fail;
  }
  for (long i = 0; i < n; i++)
    if (smp[i].text) set_add(s, smp[i].text);
  syno_space_samples_free(smp, n);
  free(smp);
  return 0;
fail:
  fprintf(stderr, "op: --sample: %s\n", err.msg);
  return -1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The q-quantile of sorted v[n] (linear between neighbours). */
static double quantile(const double *v, int n, double q) {
  double at = q * (n - 1);
  int i = (int)at;
  return i + 1 < n ? v[i] + (at - i) * (v[i + 1] - v[i]) : v[n - 1];
}

static void print_distribution(const char *what, double *v, int n, double scale, const char *unit) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  printf("  %-22s min %6.2f%s  25%% %6.2f%s  median %6.2f%s  75%% %6.2f%s  max %6.2f%s\n", what, scale * v[0], unit,
         scale * quantile(v, n, 0.25), unit, scale * quantile(v, n, 0.5), unit, scale * quantile(v, n, 0.75), unit,
         scale * v[n - 1], unit);
}

/* Times every operator of the set in every distinct slot of the backbone (bc without an
 * operator) against the standard slot, as deployed. */
static int time_set(const opset_t *set, const char *preset, syno_backbone_cfg_t *bc, long batch, int reps,
                    long sample, uint64_t seed, opset_t *sampled) {
  syno_error_t err;
  syno_rng_t rng;
  syno_rng_seed(&rng, 1, 1);
  syno_backbone_t std;
  if (syno_backbone_build(bc, &rng, &std, &err)) {
    fprintf(stderr, "op: %s\n", err.msg);
    return 1;
  }
  slotb_t sb[SYNO_BACKBONE_MAX_SLOTS];
  syno_slot_info_t distinct[SYNO_BACKBONE_MAX_SLOTS];
  int nsb = syno_backbone_distinct_slots(&std, distinct, NULL);
  for (int j = 0; j < nsb; j++) {
    const syno_slot_info_t *si = &distinct[j];
    sb[j].si = *si;
    if (syno_slot_create(NULL, si->c_in, si->c_out, si->h, si->w, 0, &rng, &sb[j].std, &err)) {
      fprintf(stderr, "op: %s\n", err.msg);
      return 1;
    }
  }
  syno_backbone_free(&std);
  if (sample > 0 && set_from_sample(sampled, preset, sb, nsb, sample, seed)) return 1;
  const opset_t *sets[2] = {set, sampled};
  int total = set->n + sampled->n, done = 0;
  double *eff = calloc((size_t)total + 1, sizeof *eff), *spd = calloc((size_t)total + 1, sizeof *spd);
  if (!eff || !spd) {
    fprintf(stderr, "op: out of memory\n");
    free(eff);
    free(spd);
    return 1;
  }
  printf("%d operators in %d distinct slots, batch %ld, as deployed; times are sums over the slots\n", total, nsb,
         batch);
  printf("  %4s %9s %9s %8s %7s %8s  %s\n", "#", "this op", "oneDNN", "speed-up", "FLOPs", "per FLOP",
         "operator (path in the first slot)");
  for (int k = 0, idx = 0; k < 2; k++)
    for (int i = 0; i < sets[k]->n; i++, idx++) {
      const char *text = sets[k]->text[i];
      syno_slotop_t *op;
      if (syno_slotop_parse_preset(preset, text, &op, &err)) {
        printf("  %4d skipped: %s\n", idx + 1, err.msg);
        continue;
      }
      double t_op = 0, t_std = 0, f_op = 0, f_std = 0;
      char path[160] = "";
      int ok = 1;
      for (int j = 0; ok && j < nsb; j++) {
        const syno_slot_info_t *si = &sb[j].si;
        syno_layer_t *sl;
        if (syno_slot_create(op, si->c_in, si->c_out, si->h, si->w, 0, &rng, &sl, &err)) {
          printf("  %4d skipped: slot %lldx%lld %lldx%lld: %s\n", idx + 1, (long long)si->c_in, (long long)si->c_out,
                 (long long)si->h, (long long)si->w, err.msg);
          ok = 0;
          break;
        }
        syno_layer_t *pair[2] = {sb[j].std, sl};
        double med[2];
        syno_slot_info_t so;
        if (syno_slot_latencies(pair, 2, batch, si->c_in, si->h, si->w, reps, med, &err) ||
            !syno_slot_info(sl, &so)) {
          printf("  %4d skipped: %s\n", idx + 1, err.msg);
          ok = 0;
        } else {
          t_std += med[0];
          t_op += med[1];
          f_std += (double)si->flops;
          f_op += (double)so.flops;
          if (j == 0) snprintf(path, sizeof path, "%s", syno_slot_path(sl) ? syno_slot_path(sl) : "?");
        }
        syno_nn_layer_free(sl);
      }
      syno_slotop_free(op);
      if (!ok) continue;
      eff[done] = (f_op / t_op) / (f_std / t_std);
      spd[done] = t_std / t_op;
      printf("  %4d %8.4fms %8.4fms %7.2fx %6.3fx %7.0f%%  %s\n       (%s)\n", idx + 1, 1e3 * t_op, 1e3 * t_std, spd[done],
             f_op / f_std, 100 * eff[done], text, path);
      fflush(stdout);
      done++;
    }
  for (int j = 0; j < nsb; j++) syno_nn_layer_free(sb[j].std);
  if (done) {
    int above = 0;
    for (int i = 0; i < done; i++) above += eff[i] >= 0.6;
    printf("\n%d operators timed; %d at >= 60%% of oneDNN's efficiency per FLOP\n", done, above);
    print_distribution("per FLOP", eff, done, 100, "%");
    print_distribution("speed-up", spd, done, 1, "x");
  }
  free(eff);
  free(spd);
  return done ? 0 : 1;
}

/* Without --op: the operator of the Fashion-MNIST search that meets the target when
 * retrained (README, "A Fashion-MNIST search"): a 1x3 convolution. */
static const char default_op[] =
    "r0=sum(k_1) r1=sum(C_in); in[i0, share(r1, 1), i2, unfold(i3, share(r0, 1))] expand[share(i1, 1)] "
    "w1[r1, i1, r0]";

static const char usage[] =
    "usage: op --op TEXT [--op TEXT ...] [--preset NAME] [--dataset digits|fashion-mnist] [--pad P]\n"
    "          [--batch B] [--threads T] [--reps R] [--kernels exec|halide|best]\n"
    "       op [--ops-file FILE] [--db DB] [--sample N [--seed S]] [--preset NAME] [--batch B] ...\n"
    "Times each operator in every ResNet slot against the standard net (oneDNN and im2col);\n"
    "with a set of operators, each in every distinct slot against oneDNN, and the distribution.\n"
    "Defaults: preset conv2d (the operators' variables; conv2d-wide for older searches),\n"
    "fashion-mnist, pad 2, batch 1, 1 thread, 101 repeats; without --op, the operator\n"
    "the Fashion-MNIST search found (a 1x3 convolution, see docs/results.md).\n";

int main(int argc, char **argv) {
  static const char *const presets[] = {"conv2d", "conv2d-wide", NULL};
  const char *const *datasets = syno_task_dataset_names(SYNO_TASK_IMAGES);
  const char *ops[MAX_OPS];
  int nops = 0, reps = 101, threads = 1, pad = 2;
  long batch = 1;
  const char *dataset = "fashion-mnist", *preset = "conv2d", *kernels_name = "exec", *ops_file = NULL, *db = NULL;
  long sample = 0, seed = 1;
  static const char *const kernel_choices[] = {"exec", "halide", "best", NULL};
  syno_opt_t opts[] = {
      SYNO_OPT_LIST("op", "TEXT", ops, MAX_OPS, &nops, "an operator to time (default: the 1x3 convolution)"),
      SYNO_OPT_ENUM("preset", "NAME", &preset, presets, "the operators' variables (default conv2d)"),
      SYNO_OPT_ENUM("dataset", "NAME", &dataset, datasets, "the image size (default fashion-mnist)"),
      SYNO_OPT_INT("pad", "P", &pad, 0, 64, "zero-padding per side (default 2)"),
      SYNO_OPT_INT("batch", "B", &batch, 1, 65536, "inference batch (default 1)"),
      SYNO_OPT_INT("threads", "T", &threads, 1, 256, "threads (default 1)"),
      BENCH_OPT_REPS(&reps, 1000),
      SYNO_OPT_STR("ops-file", "FILE", &ops_file, "time the operators of FILE (one per line)"),
      SYNO_OPT_STR("db", "DB", &db, "time every candidate of a search database"),
      SYNO_OPT_INT("sample", "N", &sample, 0, MAX_SET, "time N operators sampled from the preset at the slots"),
      SYNO_OPT_INT("seed", "S", &seed, 0, 1L << 30, "the sample's seed (default 1)"),
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
  /* The data set's image shape: the network is built for it (no pixel is loaded). */
  int64_t in_c, in_h, in_w;
  int classes;
  syno_error_t serr;
  if (syno_train_image_shape(dataset, &in_c, &in_h, &in_w, &classes, &serr)) {
    fprintf(stderr, "op: --dataset %s: %s\n", dataset, serr.msg);
    return 2;
  }
  const syno_backbone_cfg_t net = {.name = "resnet",
                                   .in_c = in_c,
                                   .in_h = in_h + 2 * pad,
                                   .in_w = in_w + 2 * pad,
                                   .nclasses = classes,
                                   .kernels = kernels};
  if (ops_file || db || sample) {
    char *text[MAX_SET], *stext[MAX_SET];
    opset_t set = {text, 0}, sampled = {stext, 0};
    for (int k = 0; k < nops; k++) set_add(&set, ops[k]);
    if ((ops_file && set_from_file(&set, ops_file)) || (db && set_from_db(&set, db))) return 2;
    syno_nn_threads_set(threads);
    bench_print_setup(reps);
    printf("ResNet on %s (%lldx%lldx%lld)\n", dataset, (long long)net.in_c, (long long)net.in_h,
           (long long)net.in_w);
    syno_backbone_cfg_t bc = net;
    bc.kernels = SYNO_KERNELS_EXEC;
    int rc = time_set(&set, preset, &bc, batch, reps, sample, (uint64_t)seed, &sampled);
    for (int i = 0; i < set.n; i++) free(set.text[i]);
    for (int i = 0; i < sampled.n; i++) free(sampled.text[i]);
    return rc;
  }
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
  printf("ResNet on %s (%lldx%lldx%lld), batch %ld, inference; times in ms\n", dataset, (long long)net.in_c,
         (long long)net.in_h, (long long)net.in_w, batch);
  for (int k = 0; k < nops; k++) {
    syno_error_t err = {0};
    syno_slotop_t *op = parsed[k];
    syno_backbone_cfg_t bc = net;
    bc.op = op;
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
