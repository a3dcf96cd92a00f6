/* bench/space.c - the search space against the original Syno: exhaustive enumeration of the two
 * spaces the fidelity comparison uses, and sampling.
 *
 * (a) specs/a.json enumerated exhaustively: [N, C_in: unordered, H, W] -> [N, C_out: unordered,
 *     H, W], N=8, C_in=C_out=16, H=W=28, k_1=3, s_1=2, depth 12, the published defaults;
 * (b) specs/b.json likewise: C_in=3, C_out=8, H=W=64, depth 10, 3 tensors, 3 reductions, chain
 *     5, max FLOPs 5e6, Stride on (docs/space.md, "Against the original", has both in full);
 * (c) sampling (b): distinct operators per second with 1 and 2 threads (syno_space_sample:
 *     walks without replacement, one space per thread, operators split among threads by
 *     structural hash as in syno sample). (b) holds 3,096 operators, so the default 500 samples
 *     stay well short of exhausting it (2000 take 36 s, mostly back-ups);
 * (d) (a) under the per-kind caps of the published vision searches (at most 1 Merge, 3 Splits
 *     and 2 Shifts per operator, docs/semantics.md §4.3).
 *
 * For (a) and (b) it prints, per number of primitives (a node's depth: reductions, primitives
 * and contractions), our nodes and operators, exact and cumulative, beside the original's
 * cumulative operator counts, then our time and peak memory beside the original's, and the
 * ratios. The enumeration is depth-first on one core, in a forked child process, so its peak
 * memory (getrusage ru_maxrss, read by the child at its end) is its own. It stops at a time or
 * node cap and then says so; the counts are then those visited so far. Our FLOPs count a
 * multiply-add as 2, the original's as 1: --max-flops 1e7 gives (b) the original's limit, and
 * --off U4,C4 switches off the two rules of ours that remove duplicates the original keeps.
 * The sampling rate is the median of --reps runs.
 *
 * usage: space [--quick] [--cap SECONDS] [--off RULES] [--max-flops X] [--samples N] [--reps R]
 *              [--only a|b|c|d]
 *   defaults: no practical cap (1 hour per exhaustive run), 500 samples, 3 repeats, all parts;
 *   --quick:  (b) at depth 8 (a few seconds), 200 samples, 1 repeat. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "syno/space.h"

#define SPEC_A SYNO_SOURCE_DIR "/specs/a.json"
#define SPEC_B SYNO_SOURCE_DIR "/specs/b.json"
#define NODE_CAP 100000000u
#define MAX_DEPTH 64

/* The original Syno (github.com/tsinghua-ideal/Syno, d6e7820) on the same two spaces, as
 * measured for the fidelity comparison and quoted in its issue: cumulative operators with at
 * most d primitives (-1: not reported), and the time on one core and peak memory of the whole
 * exhaustive run (0: not reported). Its search generates no Contraction, Shift or Stride when a
 * stage's shape distance equals the depth left, so its counts at the run's last two depths
 * (11-12 for (a), 9-10 for (b)) may be under-counts: compare up to depth - 2. */
typedef struct {
  int depth; /* of its run */
  long cumulative[MAX_DEPTH];
  double seconds, gib;
} original_t;

static const original_t ORIG_A = {
    .depth = 12,
    .cumulative = {-1, -1, -1, -1, 8, -1, 44, -1, 224, -1, 956, -1, 2084},
    .seconds = 19.9,
    .gib = 0,
};
static const original_t ORIG_B = {
    .depth = 10,
    .cumulative = {-1, -1, -1, -1, 15, 67, 242, 904, 1926, 3432, 6866},
    .seconds = 537,
    .gib = 3.9,
};

typedef struct {
  const char *off;  /* rules to switch off, "U4,C4" */
  double max_flops; /* > 0: replaces the spec's */
  int depth;        /* > 0: replaces the spec's */
  bool caps;        /* the published vision caps */
} variant_t;

static int load(const char *path, const variant_t *var, syno_space_spec_t *spec) {
  syno_error_t err;
  if (syno_space_spec_load(path, spec, &err)) {
    fprintf(stderr, "space: %s\n", err.msg);
    return -1;
  }
  if (var->max_flops > 0) spec->opts.max_flops = var->max_flops;
  if (var->depth > 0) spec->opts.depth = var->depth;
  if (var->caps && syno_space_caps_parse("merge=1,split=3,shift=2", spec->opts.max_count, &err)) {
    fprintf(stderr, "space: %s\n", err.msg);
    return -1;
  }
  if (var->off && *var->off) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", var->off);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
      syno_rule_t r = syno_rule_find(tok);
      if (r == SYNO_RULE_COUNT) {
        fprintf(stderr, "space: no rule '%s'\n", tok);
        return -1;
      }
      spec->opts.rule[r] = false;
    }
  }
  return 0;
}

/* Depth-first over every node reachable from the root, like syno_space_exhaust, but stopping
 * at a time or node cap. Prints the table against `orig` (may be NULL). */
static int exhaust_capped(const char *name, const char *path, const variant_t *var, double cap,
                          const original_t *orig) {
  syno_space_spec_t spec;
  if (load(path, var, &spec)) return -1;
  syno_space_t *s;
  syno_error_t err;
  double t0 = syno_clock_seconds();
  if (syno_space_new(&spec, &s, &err)) {
    fprintf(stderr, "space: %s\n", err.msg);
    return -1;
  }
  int D = spec.opts.depth < MAX_DEPTH ? spec.opts.depth : MAX_DEPTH - 1;
  uint64_t nodes[MAX_DEPTH] = {0}, finals[MAX_DEPTH] = {0};
  typedef struct {
    uint32_t node;
    int next;
  } frame_t;
  size_t cap_stack = 256, top = 0, seen_cap = 1 << 20;
  frame_t *stack = malloc(cap_stack * sizeof *stack);
  unsigned char *seen = calloc(seen_cap, 1);
  stack[top++] = (frame_t){syno_space_root(s), 0};
  seen[syno_space_root(s)] = 1;
  nodes[0]++;
  const char *stopped = NULL;
  unsigned long steps_done = 0;
  while (top > 0) {
    if ((++steps_done & 1023) == 0) {
      if (syno_clock_seconds() - t0 > cap) {
        stopped = "time cap";
        break;
      }
      if (syno_space_stats(s)->nodes > NODE_CAP) {
        stopped = "node cap";
        break;
      }
    }
    frame_t *f = &stack[top - 1];
    const syno_step_t *st;
    int n = syno_node_children(s, f->node, &st, &err);
    if (n < 0) {
      fprintf(stderr, "space: %s\n", err.msg);
      return -1;
    }
    if (f->next >= n) {
      top--;
      continue;
    }
    syno_step_t x = st[f->next++];
    if (x.kind == SYNO_STEP_FINALIZE) {
      finals[syno_node_depth(s, f->node)]++;
      continue;
    }
    if (x.target >= seen_cap) {
      size_t nc = 2 * (size_t)x.target;
      seen = realloc(seen, nc);
      memset(seen + seen_cap, 0, nc - seen_cap);
      seen_cap = nc;
    }
    if (seen[x.target]) continue;
    seen[x.target] = 1;
    nodes[syno_node_depth(s, x.target)]++;
    if (top == cap_stack) stack = realloc(stack, (cap_stack *= 2) * sizeof *stack);
    stack[top++] = (frame_t){x.target, 0};
  }
  double t = syno_clock_seconds() - t0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  double mib = (double)ru.ru_maxrss / 1024.0;
  uint64_t tn = 0, tf = 0;
  for (int d = 0; d <= D; d++) tn += nodes[d], tf += finals[d];
  if (stopped)
    printf("(%s) STOPPED at the %s after %.2f s: the counts below are only the part visited so far\n", name, stopped,
           t);
  else
    printf("(%s) complete: %llu nodes, %llu operators\n", name, (unsigned long long)tn, (unsigned long long)tf);
  printf("    primitives        nodes   operators  cumulative  original cumulative\n");
  uint64_t cum = 0;
  for (int d = 0; d <= D; d++) {
    cum += finals[d];
    char o[32] = "";
    if (orig && orig->cumulative[d] >= 0)
      snprintf(o, sizeof o, "%ld%s", orig->cumulative[d], d >= orig->depth - 1 ? " *" : "");
    printf("    %10d %12llu %11llu %11llu  %19s\n", d, (unsigned long long)nodes[d], (unsigned long long)finals[d],
           (unsigned long long)cum, o);
  }
  if (orig)
    printf(
        "    * the original's last two depths may be under-counts (no Contraction, Shift or Stride when the\n"
        "      distance equals the depth left): compare up to %d primitives\n",
        orig->depth - 2);
  const syno_space_stats_t *stt = syno_space_stats(s);
  printf("    removed by rule:");
  for (int r = 0; r < SYNO_RULE_COUNT; r++)
    if (stt->rule[r]) printf(" %s %llu", syno_rule_name((syno_rule_t)r), (unsigned long long)stt->rule[r]);
  printf("\n    pruned children: shape distance %llu, chain %llu, limits %llu, FLOPs bound %llu, illegal %llu\n",
         (unsigned long long)stt->prune[SYNO_PRUNE_DISTANCE], (unsigned long long)stt->prune[SYNO_PRUNE_CHAIN],
         (unsigned long long)stt->prune[SYNO_PRUNE_LIMIT], (unsigned long long)stt->prune[SYNO_PRUNE_FLOPS],
         (unsigned long long)stt->prune[SYNO_PRUNE_ILLEGAL]);
  printf("    time (one core): %.2f s", t);
  if (orig && orig->seconds > 0) printf("   original %.1f s   ratio %.3g", orig->seconds, t / orig->seconds);
  printf("\n    peak memory (ru_maxrss of the enumerating process): %.1f MiB", mib);
  if (orig && orig->gib > 0) printf("   original %.1f GiB   ratio %.3g", orig->gib, mib / 1024.0 / orig->gib);
  printf("\n");
  fflush(stdout);
  free(stack);
  free(seen);
  syno_space_free(s);
  return 0;
}

/* Runs the enumeration in a child process. */
static int exhaust_child(const char *name, const char *path, const variant_t *var, double cap, const original_t *orig) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) _exit(exhaust_capped(name, path, var, cap, orig) ? 1 : 0);
  bench_child = pid; /* a signal kills the enumeration too */
  int status, w;
  while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {}
  bench_child = 0;
  if (w < 0) return -1;
  if (WIFSIGNALED(status)) printf("(%s) the enumeration was killed by signal %d\n", name, WTERMSIG(status));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* One sampling run: n walks in `threads` threads (syno_space_sample), seed 1. */
static int sample(const syno_space_spec_t *spec, long n, int threads, double *seconds, long *distinct, long *walks) {
  syno_sample_t *smp = calloc((size_t)n, sizeof *smp);
  syno_error_t err;
  double t0 = syno_clock_seconds();
  if (!smp || syno_space_sample(spec, n, threads, 1, 1000000, true, smp, NULL, &err)) {
    fprintf(stderr, "space: %s\n", smp ? err.msg : "out of memory");
    free(smp);
    return -1;
  }
  *seconds = syno_clock_seconds() - t0;
  *walks = 0;
  for (long i = 0; i < n; i++) *walks += smp[i].walks;
  *distinct = syno_space_samples_distinct(smp, n);
  syno_space_samples_free(smp, n);
  free(smp);
  return 0;
}

static void describe(const variant_t *v) {
  if (v->off && *v->off) printf(", rules %s off", v->off);
  if (v->max_flops > 0) printf(", max FLOPs %g", v->max_flops);
  if (v->depth > 0) printf(", depth %d", v->depth);
  printf("\n");
}

int main(int argc, char **argv) {
  static const char *usage =
      "usage: space [--quick] [--cap SECONDS] [--off RULES] [--max-flops X] [--samples N] [--reps R]\n"
      "             [--only a|b|c|d]\n"
      "  (a), (b): specs/a.json and specs/b.json enumerated exhaustively, per number of primitives\n"
      "  beside the original Syno's counts, time and memory; (c) sampling (b); (d) (a) under caps.\n";
  static const char *const parts[] = {"a", "b", "c", "d", NULL};
  double cap = 3600, max_flops = 0;
  long samples = 500;
  int reps = 3, quick = 0;
  const char *only = NULL, *off = NULL;
  syno_opt_t opts[] = {
      SYNO_OPT_FLAG("quick", &quick, "(b) at depth 8, 200 samples, 1 repeat"),
      SYNO_OPT_REAL("cap", "SECONDS", &cap, 0, 1e7, SYNO_OPT_OPEN_MIN,
                    "time cap of each exhaustive run (default 3600)"),
      SYNO_OPT_STR("off", "RULES", &off,
                   "switch rules off in (a), (b), (d), e.g. U4,C4 (these two remove\n"
                   "duplicates the original keeps)"),
      SYNO_OPT_REAL("max-flops", "X", &max_flops, 0, 1e18, SYNO_OPT_OPEN_MIN,
                    "(b)'s limit (1e7 = the original's 5e6, which counts a\n"
                    "multiply-add as 1)"),
      SYNO_OPT_INT("samples", "N", &samples, 1, 10000000, "walks of (c) (default 500)"),
      BENCH_OPT_REPS(&reps, 16),
      SYNO_OPT_ENUM("only", "PART", &only, parts, "run one part only"),
      SYNO_OPT_END,
  };
  bench_options("space", usage, opts, argc, argv);
  bench_signals(0);
  if (quick) {
    if (!syno_opt_given(opts, "samples")) samples = 200;
    if (!syno_opt_given(opts, "reps")) reps = 1;
  }
  if (!only) only = "abcd";
  variant_t var = {.off = off, .max_flops = max_flops};
  if (off) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", off);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
      if (syno_rule_find(tok) == SYNO_RULE_COUNT) {
        fprintf(stderr, "space: --off %s: '%s' is not a rule (see docs/space.md)\n", off, tok);
        return 2;
      }
  }
  printf("search space benchmark: exhaustive runs capped at %.0f s or %u nodes, one core; %ld samples, %d repeat%s\n",
         cap, NODE_CAP, samples, reps, reps > 1 ? "s" : "");
  if (strchr(only, 'a')) {
    printf("(a) %s, exhaustive", SPEC_A);
    describe(&var);
    if (exhaust_child("a", SPEC_A, &var, cap, &ORIG_A)) return 1;
  }
  if (strchr(only, 'b')) {
    variant_t vb = var;
    if (quick) vb.depth = 8;
    printf("(b) %s, exhaustive", SPEC_B);
    describe(&vb);
    if (exhaust_child("b", SPEC_B, &vb, cap, &ORIG_B)) return 1;
  }
  if (strchr(only, 'd')) {
    variant_t vd = var;
    vd.caps = true;
    printf("(d) %s under the published caps merge=1, split=3, shift=2, exhaustive", SPEC_A);
    describe(&vd);
    if (exhaust_child("d", SPEC_A, &vd, cap, NULL)) return 1;
  }
  if (!strchr(only, 'c')) return 0;
  syno_space_spec_t spec;
  if (load(SPEC_B, &var, &spec)) return 1;
  printf("(c) sampling (b), %ld walks without replacement, seed 1 (walk i uses stream i)\n", samples);
  printf("    threads   distinct   walks+back-ups   median s   distinct/s\n");
  for (int threads = 1; threads <= 2; threads++) {
    double t[16], rate[16];
    long distinct = 0, walks = 0;
    for (int r = 0; r < reps && r < 16; r++) {
      if (sample(&spec, samples, threads, &t[r], &distinct, &walks)) {
        fprintf(stderr, "space: sampling failed\n");
        return 1;
      }
      rate[r] = (double)distinct / t[r];
    }
    double mt = syno_median(t, reps), mr = syno_median(rate, reps);
    printf("    %7d %10ld %16ld %10.3f %12.1f\n", threads, distinct, walks, mt, mr);
  }
  return 0;
}
