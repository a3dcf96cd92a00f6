/* bench/space.c - the search space: exhaustive enumeration and sampling.
 *
 * (a) exhaustive enumeration of the conv2d space with the published
 *     defaults (depth 12, chain 6, 2 tensors, 5 reductions, Stride off) at
 *     N=8, C_in=C_out=16, H=W=28, k=3, s=2;
 * (b) the same at depth 12 with 3 tensors, 3 reductions, chain 5, max FLOPs
 *     5e6, C_in=3, C_out=8, H=W=64;
 * (c) sampling (b): distinct operators per second with 1 and 2 threads
 *     (syno_space_sample: walks without replacement, one space per thread,
 *     operators split among threads by structural hash as in syno sample);
 * (d) (a) under the per-kind caps of the published vision searches (at most
 *     1 Merge, 3 Splits and 2 Shifts per operator, spec 4.1).
 *
 * Each exhaustive run happens in a forked child process, so its peak memory
 * (getrusage ru_maxrss, read by the child at its end) is its own. A run stops at a time cap
 * or a node cap and then says so and prints how far it got: the counts of
 * nodes and operators per number of primitives (the node's depth) are those
 * visited so far. The sampling rate is the median of --reps runs.
 *
 * usage: space [--quick] [--cap SECONDS] [--samples N] [--reps R] [--only a|b|c|d]
 *   defaults: cap 60 s per exhaustive run, 2000 samples, 3 repeats, all parts;
 *   --quick:  cap 5 s, 300 samples, 1 repeat. */
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

#define SPEC_A "{\"preset\": \"conv2d-wide\", \"bind\": \"N=8, C_in=16, C_out=16, H=28, W=28\"}"
#define SPEC_B                                                                                                        \
  "{\"preset\": \"conv2d-wide\", \"bind\": \"N=8, C_in=3, C_out=8, H=64, W=64\", \"depth\": 12, \"max_tensors\": 3, " \
  "\"max_reductions\": 3, \"max_chain\": 5, \"max_flops\": 5e6}"
#define SPEC_D                                                                       \
  "{\"preset\": \"conv2d-wide\", \"bind\": \"N=8, C_in=16, C_out=16, H=28, W=28\", " \
  "\"max_count\": {\"merge\": 1, \"split\": 3, \"shift\": 2}}"
#define NODE_CAP 30000000u

static int load(const char *json, syno_space_spec_t *spec) {
  syno_error_t err;
  if (syno_space_spec_from_json(json, spec, &err)) {
    fprintf(stderr, "space: %s\n", err.msg);
    return -1;
  }
  return 0;
}

/* Depth-first over every node reachable from the root, like
 * syno_space_exhaust, but stopping at a time or node cap. */
static int exhaust_capped(const char *name, const char *json, double cap) {
  syno_space_spec_t spec;
  if (load(json, &spec)) return -1;
  syno_space_t *s;
  syno_error_t err;
  if (syno_space_new(&spec, &s, &err)) {
    fprintf(stderr, "space: %s\n", err.msg);
    return -1;
  }
  int D = spec.opts.depth;
  uint64_t nodes[64] = {0}, finals[64] = {0};
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
  double t0 = bench_now();
  const char *stopped = NULL;
  unsigned long steps_done = 0;
  while (top > 0) {
    if ((++steps_done & 1023) == 0) {
      if (bench_now() - t0 > cap) {
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
  double t = bench_now() - t0;
  uint64_t tn = 0, tf = 0;
  for (int d = 0; d <= D; d++) tn += nodes[d], tf += finals[d];
  if (stopped) {
    printf(
        "(%s) STOPPED at the %s after %.2f s: the counts below are only the part visited so far "
        "(%llu nodes created, %llu visited, %llu operators)\n",
        name, stopped, t, (unsigned long long)syno_space_stats(s)->nodes, (unsigned long long)tn,
        (unsigned long long)tf);
    /* Where the depth-first search stands: the share of the tree of
     * children behind it if every child's subtree were as large as its
     * siblings' (a rough guide: subtrees differ by orders of magnitude). */
    double done = 0, w = 1;
    int n0 = 0;
    for (size_t i = 0; i < top; i++) {
      const syno_step_t *st;
      int n = syno_node_children(s, stack[i].node, &st, &err);
      if (n <= 0) break;
      if (i == 0) n0 = n;
      done += w * (stack[i].next > 0 ? stack[i].next - 1 : 0) / n;
      w /= n;
    }
    printf(
        "    depth-first position: child %d of the root's %d; %.2g%% of the space if sibling subtrees were "
        "equal\n",
        stack[0].next, n0, 100 * done);
  } else
    printf("(%s) complete in %.3f s: %llu nodes, %llu operators\n", name, t, (unsigned long long)tn,
           (unsigned long long)tf);
  printf("    primitives          nodes      operators\n");
  for (int d = 0; d <= D; d++)
    printf("    %10d %14llu %14llu\n", d, (unsigned long long)nodes[d], (unsigned long long)finals[d]);
  const syno_space_stats_t *stt = syno_space_stats(s);
  printf("    pruned children: shape distance %llu, chain %llu, limits %llu, FLOPs bound %llu, illegal %llu\n",
         (unsigned long long)stt->prune[SYNO_PRUNE_DISTANCE], (unsigned long long)stt->prune[SYNO_PRUNE_CHAIN],
         (unsigned long long)stt->prune[SYNO_PRUNE_LIMIT], (unsigned long long)stt->prune[SYNO_PRUNE_FLOPS],
         (unsigned long long)stt->prune[SYNO_PRUNE_ILLEGAL]);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("    peak memory (ru_maxrss of the enumerating process): %.1f MiB\n", (double)ru.ru_maxrss / 1024.0);
  fflush(stdout);
  free(stack);
  free(seen);
  syno_space_free(s);
  return 0;
}

/* Runs the enumeration in a child process. */
static int exhaust_child(const char *name, const char *json, double cap) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) _exit(exhaust_capped(name, json, cap) ? 1 : 0);
  int status;
  if (waitpid(pid, &status, 0) < 0) return -1;
  if (WIFSIGNALED(status)) printf("(%s) the enumeration was killed by signal %d\n", name, WTERMSIG(status));
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* One sampling run: n walks in `threads` threads (syno_space_sample), seed 1. */
static int sample(const syno_space_spec_t *spec, long n, int threads, double *seconds, long *distinct, long *walks) {
  syno_sample_t *smp = calloc((size_t)n, sizeof *smp);
  syno_error_t err;
  double t0 = bench_now();
  if (!smp || syno_space_sample(spec, n, threads, 1, 1000000, true, smp, &err)) {
    fprintf(stderr, "space: %s\n", smp ? err.msg : "out of memory");
    free(smp);
    return -1;
  }
  *seconds = bench_now() - t0;
  *walks = 0;
  for (long i = 0; i < n; i++) *walks += smp[i].walks;
  *distinct = syno_space_samples_distinct(smp, n);
  syno_space_samples_free(smp, n);
  free(smp);
  return 0;
}

int main(int argc, char **argv) {
  double cap = 60;
  long samples = 2000;
  int reps = 3;
  const char *only = "abcd";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      cap = 5;
      samples = 300;
      reps = 1;
    } else if (!strcmp(argv[i], "--cap") && i + 1 < argc) {
      cap = atof(argv[++i]);
    } else if (!strcmp(argv[i], "--samples") && i + 1 < argc) {
      samples = atol(argv[++i]);
    } else if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--only") && i + 1 < argc && strlen(argv[i + 1]) == 1 &&
               strchr("abcd", argv[i + 1][0])) {
      only = argv[++i];
    } else {
      fprintf(stderr, "usage: space [--quick] [--cap SECONDS] [--samples N] [--reps R] [--only a|b|c|d]\n");
      return 2;
    }
  }
  printf("search space benchmark (cap %.0f s or %u nodes per exhaustive run, %ld samples, %d repeat%s)\n", cap,
         NODE_CAP, samples, reps, reps > 1 ? "s" : "");
  if (strchr(only, 'a')) {
    printf("(a) exhaustive: %s\n", SPEC_A);
    if (exhaust_child("a", SPEC_A, cap)) return 1;
  }
  if (strchr(only, 'b')) {
    printf("(b) exhaustive: %s\n", SPEC_B);
    if (exhaust_child("b", SPEC_B, cap)) return 1;
  }
  if (strchr(only, 'd')) {
    printf("(d) exhaustive, (a) under the published caps: %s\n", SPEC_D);
    if (exhaust_child("d", SPEC_D, cap)) return 1;
  }
  if (!strchr(only, 'c')) return 0;
  syno_space_spec_t spec;
  if (load(SPEC_B, &spec)) return 1;
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
    double mt = bench_median(t, reps), mr = bench_median(rate, reps);
    printf("    %7d %10ld %16ld %10.3f %12.1f\n", threads, distinct, walks, mt, mr);
  }
  return 0;
}
