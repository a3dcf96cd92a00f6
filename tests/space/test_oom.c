/* Allocation failures in the core (syno/alloc.h), as SQLite tests them:
 * every operation runs with allocation call n failing, for n = 1, 2, 3, ...
 * until it completes without reaching the failure. At every n it must
 * either fail with a message that says out of memory or succeed with the
 * result of a clean run; it must leak nothing (the hook's count of
 * outstanding blocks here, LeakSanitizer under ASan); and run again with
 * the hook off - on the objects the failed run left behind, where it
 * leaves any (a graph, a space) - it must give the clean run's result. The
 * sweep runs twice: with one failing call, then with every call from n on
 * failing (persistent). cJSON is hooked to the layer, so the spec parser's
 * allocations fail too. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "syno/alloc.h"
#include "syno/normal.h"
#include "syno/rng.h"
#include "syno/signature.h"
#include "syno/space.h"
#include "synotest.h"

/* --- results as text (plain malloc: the test's own memory is not counted) --- */

typedef struct {
  char *s;
  size_t len, cap;
} text_t;

static void tx_printf(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tx_printf(text_t *t, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(t->s ? t->s + t->len : NULL, t->s ? t->cap - t->len : 0, fmt, ap);
    va_end(ap);
    assert_true(w >= 0);
    if (t->s && t->len + (size_t)w < t->cap) {
      t->len += (size_t)w;
      return;
    }
    size_t cap = t->cap ? 2 * t->cap : 4096;
    while (cap < t->len + (size_t)w + 1) cap *= 2;
    t->s = realloc(t->s, cap);
    assert_non_null(t->s);
    t->cap = cap;
    t->s[t->len] = 0;
  }
}

static void tx_reset(text_t *t) {
  t->len = 0;
  if (t->s) t->s[0] = 0;
}

/* The operations: run writes the result into out (reset first); *state is
 * NULL on the first run, and a run that fails may leave there what its
 * retry continues on. */
typedef struct {
  const char *name;
  int (*run)(void **state, text_t *out, syno_error_t *err);
  void (*cleanup)(void *state);
} op_t;

/* Fails the test with the hook off (cmocka's failure does not return). */
#define FAIL(...)          \
  do {                     \
    syno_alloc_hook_off(); \
    fail_msg(__VA_ARGS__); \
  } while (0)

/* The first line where two results differ, for the message. */
static const char *first_diff(const char *a, const char *b, char *buf, size_t n) {
  const char *la = a;
  for (; *a && *a == *b; a++, b++)
    if (*a == '\n') la = a + 1;
  snprintf(buf, n, "%.200s", la);
  char *nl = strchr(buf, '\n');
  if (nl) *nl = 0;
  return buf;
}

/* One sweep; returns the number of failure points tested, and in *absorbed
 * how many of them the operation survived (succeeding all the same). */
static long sweep(const op_t *op, bool persistent, const char *clean, long *absorbed) {
  *absorbed = 0;
  for (long n = 1;; n++) {
    syno_alloc_fail_at(n, persistent);
    long out0 = syno_alloc_outstanding();
    void *state = NULL;
    text_t t = {0};
    syno_error_t err = {{0}};
    int rc = op->run(&state, &t, &err);
    bool reached = syno_alloc_calls() >= n;
    syno_alloc_fail_at(0, false); /* count on, fail no more */
    if (rc) {
      if (!reached) FAIL("%s: failed with no allocation failing: %s", op->name, err.msg);
      if (!strstr(err.msg, "out of memory"))
        FAIL("%s: allocation %ld failing%s: the error does not say out of memory: %s", op->name, n,
             persistent ? " (persistent)" : "", err.msg);
      syno_error_t again = {{0}};
      if (op->run(&state, &t, &again))
        FAIL("%s: after allocation %ld failed (%s), the run again failed: %s", op->name, n, err.msg, again.msg);
    } else if (reached) {
      ++*absorbed;
    }
    if (strcmp(t.s ? t.s : "", clean)) {
      char d[256];
      FAIL("%s: allocation %ld failing%s: %s, and the result differs from the clean run's at: %s", op->name, n,
           persistent ? " (persistent)" : "", rc ? "after the run again" : "it succeeded",
           first_diff(t.s ? t.s : "", clean, d, sizeof d));
    }
    op->cleanup(state);
    free(t.s);
    long leaked = syno_alloc_outstanding() - out0;
    if (leaked)
      FAIL("%s: allocation %ld failing%s: %ld blocks leaked", op->name, n, persistent ? " (persistent)" : "", leaked);
    if (!reached) {
      syno_alloc_hook_off();
      return n - 1;
    }
  }
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void check_op(const op_t *op) {
  double t0 = now();
  syno_alloc_hook_off();
  void *state = NULL;
  text_t clean = {0};
  syno_error_t err = {{0}};
  if (op->run(&state, &clean, &err)) fail_msg("%s: the clean run failed: %s", op->name, err.msg);
  op->cleanup(state);
  long a1, a2, once = sweep(op, false, clean.s ? clean.s : "", &a1),
               always = sweep(op, true, clean.s ? clean.s : "", &a2);
  print_message("%-34s %5ld failure points (%ld persistent; %ld and %ld survived), %.1f s\n", op->name, once, always,
                a1, a2, now() - t0);
  free(clean.s);
}

static void no_state(void *state) { (void)state; }

/* --- sizes, variables and shapes --- */

static int run_sizes(void **state, text_t *out, syno_error_t *err) {
  (void)state;
  tx_reset(out);
  syno_vars_t v;
  syno_vars_init(&v);
  syno_size_t s;
  syno_shape_t sh;
  int64_t x;
  char buf[256];
  if (syno_vars_declare(&v, "N: 0, C_in, C_out, H: 2, W: 2; k=3: 4, s=2: 2", err) ||
      syno_vars_scan(&v, "[G, C_in]", err) || syno_vars_bind(&v, "N=2, C_in=4, C_out=8, H=6, W=6, G=1", err) ||
      syno_vars_bind(&v, "N=2, C_in=4, C_out=8, H=6, W=6, G=3", err) ||
      syno_size_parse(&v, "k^2*s^-1*C_in*H", &s, err) || syno_size_eval(&v, s, 1, &x, err) ||
      syno_shape_parse(&v, "[N, C_in: unordered, H, W]", &sh, err))
    return -1;
  syno_size_print(&v, s, buf, sizeof buf);
  tx_printf(out, "%s = %lld\n", buf, (long long)x);
  syno_shape_print(&v, &sh, buf, sizeof buf);
  tx_printf(out, "%s\n", buf);
  syno_vars_print_binding(&v, 1, buf, sizeof buf);
  tx_printf(out, "%s\n", buf);
  return 0;
}

/* --- a spec from JSON --- */

static const char *const spec_json[] = {
    "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=4, H=6, W=6\", \"depth\": 4, \"max_reductions\": 1}",
    "{\"vars\": \"N: 0, C_in: 2, C_out: 2, H: 2, W: 2; k=3: 4\", \"input\": \"[N, C_in: unordered, H, W]\", "
    "\"output\": \"[N, C_out: unordered, H, W]\", \"bind\": [\"N=2, C_in=4, C_out=8, H=6, W=6\", \"N=1, C_in=8, "
    "C_out=8, H=4, W=4\"], \"fixed\": [[0, 0]], \"depth\": 5, \"max_flops\": 1e9, \"primitives\": {\"stride\": "
    "true}, \"max_count\": {\"merge\": 1}, \"rules\": {\"R1\": false, \"U4\": false}}",
};

static void describe_spec(const syno_space_spec_t *sp, text_t *out) {
  char in[256], o[256], b[256];
  syno_shape_print(&sp->vars, &sp->input, in, sizeof in);
  syno_shape_print(&sp->vars, &sp->output, o, sizeof o);
  tx_printf(out, "%s -> %s, %d bindings, %d fixed, depth %d, max_flops %g, min_flops %g\n", in, o, sp->vars.nbind,
            sp->n_fixed, sp->opts.depth, sp->opts.max_flops, sp->opts.min_flops);
  for (int i = 0; i < sp->vars.nbind; i++) {
    syno_vars_print_binding(&sp->vars, i, b, sizeof b);
    tx_printf(out, "  bind %s\n", b);
  }
  tx_printf(out, "  enable");
  for (int k = 0; k < SYNO_PRIM_KINDS; k++) tx_printf(out, " %d/%d", sp->opts.enable[k], sp->opts.max_count[k]);
  tx_printf(out, "\n  rules");
  for (int r = 0; r < SYNO_RULE_COUNT; r++) tx_printf(out, " %d", sp->opts.rule[r]);
  tx_printf(out, "\n");
}

static int run_spec(void **state, text_t *out, syno_error_t *err) {
  (void)state;
  tx_reset(out);
  for (size_t i = 0; i < sizeof spec_json / sizeof *spec_json; i++) {
    syno_space_spec_t sp;
    if (syno_space_spec_from_json(spec_json[i], &sp, err)) return -1;
    describe_spec(&sp, out);
  }
  return 0;
}

/* --- an operator against the conv2d preset: parsing, lowering, normal
 * forms, the interpreter --- */

#define PRESET_BIND "N=2, C_in=4, C_out=4, H=6"
/* A 3x3 convolution written in the preset's variables. */
#define CONV_TEXT                                                                         \
  "r0=sum(C_in) r1=sum(k_1) r2=sum(k_1); in[i0, share(r0, 1), unfold(i2, share(r1, 1)), " \
  "unfold(i3, share(r2, 1))] expand[share(i1, 1)] w1[i1, r0, r1, r2]"
/* A channel-grouped one with a shift and a pooled window. */
#define GROUPED_TEXT                                                                           \
  "r0=sum(g^-1*C_in) r1=sum(k_1); in[i0, split(share(div(i1, g^-1*C_out), 1), share(r0, 1)), " \
  "unfold(shift(i2), share(r1, 1)), i3] expand[share(mod(i1, g^-1*C_out), 1)] "                \
  "w1[div(i1, g^-1*C_out), mod(i1, g^-1*C_out), r0, r1]"

typedef struct {
  syno_signature_t sig;
  syno_graph_t *g;
  syno_operator_t op;
} parsed_t;

static void free_parsed(void *state) {
  parsed_t *p = state;
  if (p) syno_graph_free(p->g);
  free(p);
}

/* Parses `text` into the graph of *state (made on first use; kept when the
 * parse fails, so the run again parses into the graph the failure left). */
static int parse_into(void **state, const char *text, syno_error_t *err) {
  parsed_t *p = *state;
  if (!p) {
    p = calloc(1, sizeof *p);
    assert_non_null(p);
    *state = p;
    if (syno_signature_preset("conv2d", PRESET_BIND ", g=2", &p->sig, err)) return -1;
  }
  if (!p->g && !(p->g = syno_graph_new(&p->sig.vars))) return syno_error_set(err, "out of memory");
  return syno_operator_parse(p->g, text, &p->sig.input, &p->sig.output, &p->op, err);
}

static int run_parse(void **state, text_t *out, syno_error_t *err) {
  tx_reset(out);
  const char *texts[] = {CONV_TEXT, GROUPED_TEXT};
  for (int i = 0; i < 2; i++) {
    if (parse_into(state, texts[i], err)) return -1;
    char buf[4096];
    syno_operator_print(&((parsed_t *)*state)->op, buf, sizeof buf);
    tx_printf(out, "%s\n", buf);
  }
  return 0;
}

static int run_lower(void **state, text_t *out, syno_error_t *err) {
  tx_reset(out);
  const char *texts[] = {CONV_TEXT, GROUPED_TEXT};
  for (int i = 0; i < 2; i++) {
    if (parse_into(state, texts[i], err)) return -1;
    parsed_t *p = *state;
    syno_lowered_t low;
    int64_t flops;
    if (syno_lower(&p->op, &low, err) || syno_operator_flops(&p->op, &flops, err)) return -1;
    char buf[16384];
    syno_nest_print(&low.forward, &p->sig.vars, buf, sizeof buf);
    tx_printf(out, "%s\nflops %lld\n", buf, (long long)flops);
    for (int t = 0; t < p->op.n_tensors; t++) {
      syno_nest_print(&low.backward[t], &p->sig.vars, buf, sizeof buf);
      tx_printf(out, "%s\n", buf);
    }
  }
  return 0;
}

static int run_normal(void **state, text_t *out, syno_error_t *err) {
  tx_reset(out);
  const char *texts[] = {CONV_TEXT, GROUPED_TEXT};
  for (int i = 0; i < 2; i++) {
    if (parse_into(state, texts[i], err)) return -1;
    parsed_t *p = *state;
    char buf[8192];
    if (syno_operator_normal_form(&p->op, buf, sizeof buf, err) < 0) return -1;
    tx_printf(out, "%s\n", buf);
    if (syno_operator_normal_form_unordered(&p->op, p->sig.input.unordered, buf, sizeof buf, err) < 0) return -1;
    tx_printf(out, "%s\n", buf);
  }
  return 0;
}

static uint64_t fnv(const float *x, int64_t n) {
  uint64_t h = 1469598103934665603ull;
  const unsigned char *b = (const unsigned char *)x;
  for (size_t i = 0; i < sizeof(float) * (size_t)n; i++) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

static int run_interp(void **state, text_t *out, syno_error_t *err) {
  tx_reset(out);
  if (parse_into(state, GROUPED_TEXT, err)) return -1;
  parsed_t *p = *state;
  const syno_vars_t *v = &p->sig.vars;
  syno_lowered_t low;
  if (syno_lower(&p->op, &low, err)) return -1;
  syno_rng_t rng;
  syno_rng_seed(&rng, 7, 0);
  float *tensors[SYNO_MAX_TENSORS] = {0}, *gout = NULL, *target = NULL;
  int64_t n_out = 0, numel[SYNO_MAX_TENSORS] = {0};
  int rc = syno_output_numel(&p->op, 0, &n_out, err);
  for (int t = 0; !rc && t < p->op.n_tensors; t++) rc = syno_tensor_numel(&p->op, t, 0, &numel[t], err);
  if (rc) return -1;
  for (int t = 0; t < p->op.n_tensors; t++) tensors[t] = st_random(&rng, numel[t]);
  gout = st_random(&rng, n_out);
  target = malloc(sizeof(float) * 4096);
  assert_non_null(target);
  assert_true(n_out <= 4096);
  rc = syno_interp_nest(&low.forward, v, 0, (const float *const *)tensors, NULL, target, err);
  if (!rc) tx_printf(out, "forward %016llx\n", (unsigned long long)fnv(target, n_out));
  for (int t = 0; !rc && t < p->op.n_tensors; t++) {
    assert_true(numel[t] <= 4096);
    rc = syno_interp_nest(&low.backward[t], v, 0, (const float *const *)tensors, gout, target, err);
    if (!rc) tx_printf(out, "backward %d %016llx\n", t, (unsigned long long)fnv(target, numel[t]));
    if (!rc) rc = syno_interp_grad_scatter(&low.forward, v, 0, t, (const float *const *)tensors, gout, target, err);
    if (!rc) tx_printf(out, "scatter %d %016llx\n", t, (unsigned long long)fnv(target, numel[t]));
  }
  for (int t = 0; t < p->op.n_tensors; t++) free(tensors[t]);
  free(gout);
  free(target);
  return rc;
}

/* --- the space: creation, exhaustion, sampling --- */

static syno_space_spec_t space_spec; /* spec_json[0]: conv2d at depth 4 under a tiny binding */

static void describe_stats(const syno_space_stats_t *st, text_t *out) {
  tx_printf(out, "nodes %llu finals %llu rules", (unsigned long long)st->nodes, (unsigned long long)st->finals);
  for (int r = 0; r < SYNO_RULE_COUNT; r++) tx_printf(out, " %llu", (unsigned long long)st->rule[r]);
  tx_printf(out, " prune");
  for (int k = 0; k < SYNO_PRUNE_COUNT; k++) tx_printf(out, " %llu", (unsigned long long)st->prune[k]);
  tx_printf(out, "\n");
}

static void free_space(void *state) { syno_space_free(state); }

static int run_space_new(void **state, text_t *out, syno_error_t *err) {
  tx_reset(out);
  syno_space_t *s;
  if (syno_space_new(&space_spec, &s, err)) return -1;
  *state = s;
  const syno_dim_t *dims;
  int n = syno_node_dims(s, syno_space_root(s), &dims);
  tx_printf(out, "root: %d dims, distance %d, flops bound %g, %u graph dims\n", n,
            syno_node_distance(s, syno_space_root(s)), syno_node_flops_bound(s, syno_space_root(s)),
            syno_graph_num_dims(syno_space_graph(s)));
  describe_stats(syno_space_stats(s), out);
  return 0;
}

static int each_final(syno_space_t *s, uint32_t node, uint32_t index, void *ctx) {
  text_t *out = ctx;
  syno_operator_t op;
  syno_error_t err;
  double flops, params;
  if (syno_node_final(s, node, index, &op, &err) || syno_node_final_cost(s, node, index, &flops, &params))
    FAIL("a final cannot be built: %s", err.msg);
  char buf[4096];
  syno_operator_print(&op, buf, sizeof buf);
  tx_printf(out, "%u.%u d%d %g %g %s\n", node, index, syno_node_depth(s, node), flops, params, buf);
  return 0;
}

/* Exhausts the space in *state (made on first use); a failed exhaustion
 * keeps the space, and the run again continues on it. */
static int run_exhaust(void **state, text_t *out, syno_error_t *err) {
  tx_reset(out);
  if (!*state) {
    syno_space_t *s;
    if (syno_space_new(&space_spec, &s, err)) return -1;
    *state = s;
  }
  syno_space_t *s = *state;
  uint64_t nodes[64] = {0}, finals[64] = {0};
  if (syno_space_exhaust(s, each_final, out, nodes, finals, err)) return -1;
  for (int d = 0; d <= space_spec.opts.depth; d++)
    tx_printf(out, "depth %d: %llu nodes %llu finals\n", d, (unsigned long long)nodes[d],
              (unsigned long long)finals[d]);
  describe_stats(syno_space_stats(s), out);
  tx_printf(out, "%u graph dims, %u primitives\n", syno_graph_num_dims(syno_space_graph(s)),
            syno_graph_num_prims(syno_space_graph(s)));
  return 0;
}

static int run_sample(void **state, text_t *out, syno_error_t *err) {
  (void)state;
  tx_reset(out);
  enum { N = 6 };
  syno_sample_t smp[N];
  if (syno_space_sample(&space_spec, N, 1, 11, 256, true, smp, NULL, err)) return -1;
  for (int i = 0; i < N; i++)
    tx_printf(out, "%d %d %g %g %s\n", smp[i].depth, smp[i].walks, smp[i].flops, smp[i].params,
              smp[i].text ? smp[i].text : "-");
  syno_space_samples_free(smp, N);
  return 0;
}

/* Every allocation of every expansion of the space, one at a time: a failed
 * expansion leaves the space exactly as it was (graph, nodes, counters), and
 * asking again gives the children a clean space gives, with the same ids.
 * The nodes are expanded depth first, in the same order in a clean space A
 * and in B, where the failures are injected. */
typedef struct {
  uint32_t dims, prims;
  syno_space_stats_t stats;
} snap_t;

static snap_t snap(syno_space_t *s) {
  snap_t x;
  memset(&x, 0, sizeof x);
  x.dims = syno_graph_num_dims(syno_space_graph(s));
  x.prims = syno_graph_num_prims(syno_space_graph(s));
  x.stats = *syno_space_stats(s);
  return x;
}

static long expand_rollback(bool persistent) {
  syno_error_t err;
  syno_space_t *a, *b;
  syno_alloc_fail_at(0, false);
  long out0 = syno_alloc_outstanding();
  if (syno_space_new(&space_spec, &a, &err) || syno_space_new(&space_spec, &b, &err)) FAIL("space: %s", err.msg);
  size_t cap = 1 << 16, top = 0;
  uint32_t *stack = malloc(cap * sizeof *stack);
  bool *seen = calloc(1 << 20, 1);
  assert_non_null(stack);
  assert_non_null(seen);
  stack[top++] = syno_space_root(a);
  seen[syno_space_root(a)] = true;
  long points = 0;
  syno_step_t want[4096];
  while (top > 0) {
    uint32_t x = stack[--top];
    const syno_step_t *steps;
    int n = syno_node_children(a, x, &steps, &err);
    if (n < 0 || n > 4096) FAIL("clean expansion of node %u: %s", x, err.msg);
    memcpy(want, steps, sizeof *steps * (size_t)n);
    snap_t before = snap(b);
    for (long k = 1;; k++) {
      syno_alloc_fail_at(k, persistent);
      int m = syno_node_children(b, x, &steps, &err);
      bool reached = syno_alloc_calls() >= k;
      syno_alloc_fail_at(0, false);
      if (m >= 0) break;
      points++;
      if (!reached || !strstr(err.msg, "out of memory")) FAIL("node %u, allocation %ld failing: %s", x, k, err.msg);
      snap_t after = snap(b);
      if (memcmp(&before, &after, sizeof before))
        FAIL("node %u, allocation %ld failing: the space changed (dims %u -> %u, prims %u -> %u, nodes %llu -> %llu)",
             x, k, before.dims, after.dims, before.prims, after.prims, (unsigned long long)before.stats.nodes,
             (unsigned long long)after.stats.nodes);
    }
    int m = syno_node_children(b, x, &steps, &err);
    snap_t sa = snap(a), sb = snap(b);
    if (m != n || memcmp(steps, want, sizeof *steps * (size_t)n) || memcmp(&sa, &sb, sizeof sa))
      FAIL("node %u: the children or the space differ from a clean space's after failed expansions", x);
    for (int i = n - 1; i >= 0; i--)
      if (want[i].kind != SYNO_STEP_FINALIZE && !seen[want[i].target]) {
        if (top == cap || want[i].target >= 1 << 20) FAIL("the test's stack is too small");
        seen[want[i].target] = true;
        stack[top++] = want[i].target;
      }
  }
  free(stack);
  free(seen);
  syno_space_free(a);
  syno_space_free(b);
  if (syno_alloc_outstanding() != out0) FAIL("expansions leaked %ld blocks", syno_alloc_outstanding() - out0);
  syno_alloc_hook_off();
  return points;
}

static void test_expand_rollback(void **st) {
  (void)st;
  double t0 = now();
  long once = expand_rollback(false), always = expand_rollback(true);
  print_message("%-34s %5ld failure points (%ld persistent), %.1f s\n", "each expansion of a space", once, always,
                now() - t0);
}

/* --- the tests --- */

static void test_sizes(void **st) {
  (void)st;
  check_op(&(op_t){"sizes, variables and shapes", run_sizes, no_state});
}
static void test_spec(void **st) {
  (void)st;
  check_op(&(op_t){"spec from JSON", run_spec, no_state});
}
static void test_parse(void **st) {
  (void)st;
  check_op(&(op_t){"operator text against a preset", run_parse, free_parsed});
}
static void test_lower(void **st) {
  (void)st;
  check_op(&(op_t){"building and lowering", run_lower, free_parsed});
}
static void test_normal(void **st) {
  (void)st;
  check_op(&(op_t){"normal forms", run_normal, free_parsed});
}
static void test_interp(void **st) {
  (void)st;
  check_op(&(op_t){"the interpreter", run_interp, free_parsed});
}
static void test_space_new(void **st) {
  (void)st;
  check_op(&(op_t){"creating a space", run_space_new, free_space});
}
static void test_exhaust(void **st) {
  (void)st;
  check_op(&(op_t){"exhausting a space", run_exhaust, free_space});
}
static void test_sample(void **st) {
  (void)st;
  check_op(&(op_t){"sampling", run_sample, no_state});
}

int main(void) {
  cJSON_InitHooks(&(cJSON_Hooks){syno_malloc, syno_free});
  syno_error_t err;
  if (syno_space_spec_from_json(spec_json[0], &space_spec, &err)) {
    fprintf(stderr, "spec: %s\n", err.msg);
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sizes),     cmocka_unit_test(test_spec),    cmocka_unit_test(test_parse),
      cmocka_unit_test(test_lower),     cmocka_unit_test(test_normal),  cmocka_unit_test(test_interp),
      cmocka_unit_test(test_space_new), cmocka_unit_test(test_exhaust), cmocka_unit_test(test_expand_rollback),
      cmocka_unit_test(test_sample),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
