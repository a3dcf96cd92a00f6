/* The executor against the reference interpreter on operators drawn from every preset's
 * search space (conv2d, conv2d-wide, linear, linear-wide, each at two bindings, at least 200
 * distinct operators each, the FLOPs of each plan against a brute-force count of its loops),
 * and the standard operators on the fast path.
 *
 * Each operator is compiled, run forward and backward (the gradient of the
 * input and of every weight), and compared with the interpreter's forward
 * nest and backward nests at relative error 1e-4. The test counts how many
 * operators take each strategy ("gemm": one GEMM stage; "chain": one stage
 * per contraction, docs/semantics.md §7.2; "interp": the fallback) and asserts that every
 * operator runs on a fast path, every multi-weight one on the chain. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/exec.h"
#include "syno/space.h"
#include "synotest.h"

#include "../../src/exec/exec_chain.h" /* the chain with every stage as a loop */
#include "../../src/lower/stages.h"     /* the plan, for the brute-force FLOPs count */

#define TOL 1e-4

/* Checks the executor against the interpreter, and the same stages run as
 * generic loops; fails the test on any mismatch. Returns 1 when the executor
 * ran on a fast path, and its strategy. */
/* y = max(scale[ch] * y + shift[ch], 0) (no clamp without relu), ch = (j / inner) % C. */
static void apply_map(float *y, int64_t n, int64_t C, int64_t inner, const float *scale, const float *shift, int relu) {
  for (int64_t j = 0; j < n; j++) {
    float v = y[j] * scale[j / inner % C] + shift[j / inner % C];
    y[j] = relu && v < 0 ? 0.0f : v;
  }
}

/* Deployed inference (syno_exec_forward_affine, weights held): the forward followed by a
 * random per-channel map and, every other call, a ReLU, against the forward the test already
 * checked with the map applied here; then a plain forward again. Returns 1 when the map was
 * folded into a oneDNN stage. */
static int check_deployed(syno_exec_t *e, const syno_nest_t *fwd, const syno_vars_t *v, float *const *t,
                          const float *want, const char *what, syno_rng_t *rng) {
  if (fwd->n_outer < 2) return 0;
  int64_t C = syno_size_value(v, fwd->outer[1], 0), inner = 1, n_out = syno_exec_numel(e, -1);
  for (int i = 2; i < fwd->n_outer; i++) inner *= syno_size_value(v, fwd->outer[i], 0);
  float *scale = st_random(rng, C), *shift = st_random(rng, C), *out = malloc(sizeof(float) * (size_t)n_out),
        *mapped = malloc(sizeof(float) * (size_t)n_out);
  assert_non_null(out);
  assert_non_null(mapped);
  const int relu = (int)(syno_rng_uniform(rng) * 2);
  memcpy(mapped, want, sizeof(float) * (size_t)n_out);
  apply_map(mapped, n_out, C, inner, scale, shift, relu);
  syno_error_t err = {0};
  syno_exec_hold_weights(e, 7);
  int folded = 0;
  for (int rep = 0; rep < 2; rep++) { /* the second reuses the folded weight */
    int rc = syno_exec_forward_affine(e, (const float *const *)t, out, C, inner, scale, shift, relu, &err);
    if (rc < 0) fail_msg("%s: %s", what, err.msg);
    if (rc == 1) apply_map(out, n_out, C, inner, scale, shift, relu);
    folded = rc == 0;
    double fe = st_rel_err(out, mapped, n_out);
    if (!(fe <= TOL)) fail_msg("%s [deployed%s]: forward differs by %g", what, folded ? ", folded" : "", fe);
  }
  if (syno_exec_forward(e, (const float *const *)t, out, &err)) fail_msg("%s: %s", what, err.msg);
  double fe = st_rel_err(out, want, n_out);
  if (!(fe <= TOL)) fail_msg("%s [plain after deployed]: forward differs by %g", what, fe);
  syno_exec_hold_weights(e, 0);
  free(scale);
  free(shift);
  free(out);
  free(mapped);
  return folded;
}

/* The FLOPs of the plan the executor runs (the split nest, lifted axes), counted by walking
 * every point of every stage's loops: a multiply where the stage has a weight, an add where
 * the point is summed into a result element other points also reach (the result keeps fewer
 * variables than the loops), a copy per point of a view, and a division per output element
 * for a Mean. Must equal syno_forward_flops (docs/semantics.md §7). Returns the lifted axes. */
static int check_flops_brute(const syno_operator_t *op, const syno_vars_t *v, const char *what) {
  syno_error_t err = {0};
  syno_nest_t *fwd = malloc(sizeof *fwd), *run = malloc(sizeof *run);
  assert_non_null(fwd);
  assert_non_null(run);
  if (syno_lower_forward(op, fwd, &err)) fail_msg("%s: %s", what, err.msg);
  syno_nest_split_blocks(fwd, v, run);
  lower_stages_t p;
  const char *reason = NULL;
  if (lower_stages_plan_ex(op, run, v, 0, LOWER_STAGES_LIFT, &p, &reason, &err)) fail_msg("%s: %s", what, err.msg);
  int64_t want;
  if (syno_forward_flops(op, fwd, v, 0, &want, &err)) fail_msg("%s: %s", what, err.msg);
  if (reason) {
    free(fwd);
    free(run);
    return 0;
  }
  int64_t count = 0;
  for (int k = 0; k < p.n_stages; k++) {
    int vars[LOWER_STAGES_MAX_VARS], nvars = 0;
    int64_t idx[LOWER_STAGES_MAX_VARS] = {0};
    for (int i = 0; i < p.nv + p.n_lift; i++)
      if (p.part[k] >> i & 1) vars[nvars++] = i;
    bool sums = false; /* some loop variable is not kept */
    for (int j = 0; j < nvars; j++) sums = sums || !(p.result[k] >> vars[j] & 1);
    for (;;) {
      if (p.seq[k] == LOWER_STAGE_VIEW) {
        count += 1;
      } else {
        count += p.seq[k] > 0; /* running tensor x weight */
        count += sums;         /* accumulated */
      }
      int j = nvars - 1;
      while (j >= 0 && ++idx[j] == p.ext[vars[j]]) idx[j--] = 0;
      if (j < 0) break;
    }
  }
  if (p.divisor != 1) {
    int64_t out = 1;
    for (int i = 0; i < p.n_outer; i++) out *= p.ext[i];
    count += out;
  }
  if (count != want) fail_msg("%s: the plan's loops count %lld FLOPs, syno_forward_flops %lld", what, (long long)count,
                              (long long)want);
  free(fwd);
  free(run);
  return p.n_lift;
}

static int check_one(const syno_operator_t *op, const syno_vars_t *v, const char *what, syno_rng_t *rng,
                     const char **strategy, int *splits, int *library, int *folded) {
  syno_error_t err = {0};
  syno_exec_t *e = NULL;
  if (syno_exec_new(op, v, 0, &e, &err)) fail_msg("%s: %s", what, err.msg);
  syno_lowered_t *low = malloc(sizeof *low);
  assert_non_null(low);
  if (syno_lower(op, low, &err)) fail_msg("%s: %s", what, err.msg);
  int nt = syno_exec_num_tensors(e);
  float *t[SYNO_MAX_TENSORS] = {0}, *g[SYNO_MAX_TENSORS] = {0}, *ref[SYNO_MAX_TENSORS] = {0};
  for (int i = 0; i < nt; i++) {
    int64_t n = syno_exec_numel(e, i);
    t[i] = st_random(rng, n);
    g[i] = malloc(sizeof(float) * (size_t)n);
    ref[i] = malloc(sizeof(float) * (size_t)n);
    for (int64_t j = 0; j < n; j++) g[i][j] = 1e30f; /* the executor must overwrite */
  }
  int64_t n_out = syno_exec_numel(e, -1);
  float *out = malloc(sizeof(float) * (size_t)n_out), *want = malloc(sizeof(float) * (size_t)n_out);
  float *gout = st_random(rng, n_out);
  for (int64_t j = 0; j < n_out; j++) out[j] = 1e30f;
  if (syno_interp_nest(&low->forward, v, 0, (const float *const *)t, NULL, want, &err)) fail_msg("%s", err.msg);
  if (syno_exec_forward(e, (const float *const *)t, out, &err)) fail_msg("%s: %s", what, err.msg);
  double fe = st_rel_err(out, want, n_out);
  if (!(fe <= TOL)) fail_msg("%s [%s]: forward differs by %g", what, syno_exec_strategy(e), fe);
  int fold = check_deployed(e, &low->forward, v, t, want, what, rng);
  if (folded) *folded = fold;
  if (syno_exec_backward(e, (const float *const *)t, gout, g, &err)) fail_msg("%s: %s", what, err.msg);
  for (int i = 0; i < nt; i++) {
    if (syno_interp_nest(&low->backward[i], v, 0, (const float *const *)t, gout, ref[i], &err)) fail_msg("%s", err.msg);
    double ge = st_rel_err(g[i], ref[i], syno_exec_numel(e, i));
    if (!(ge <= TOL)) fail_msg("%s [%s]: gradient of tensor %d differs by %g", what, syno_exec_strategy(e), i, ge);
  }
  /* The forward nest with its blocks split (what the executor runs)
   * computes what the nest does, in the interpreter too. */
  syno_nest_t *split = malloc(sizeof *split);
  assert_non_null(split);
  int n_split = syno_nest_split_blocks(&low->forward, v, split);
  if (splits) *splits = n_split;
  if (n_split) {
    for (int64_t j = 0; j < n_out; j++) out[j] = 1e30f;
    if (syno_interp_nest(split, v, 0, (const float *const *)t, NULL, out, &err)) fail_msg("%s", err.msg);
    fe = st_rel_err(out, want, n_out);
    if (!(fe <= TOL)) fail_msg("%s [split nest]: forward differs by %g", what, fe);
  }
  /* The generic loop of every stage, where the staged path applies, on the
   * nest as lowered and on the split one; and the split one with every stage
   * on gather + GEMM, where the library paths would take some. */
  const syno_nest_t *nests[3] = {&low->forward, split, n_split ? split : &low->forward};
  const int flags[3] = {EXEC_LOOPS, EXEC_LOOPS, EXEC_NO_LIBRARY};
  static const char *const pass_name[3] = {"loops", "loops, split nest", "GEMM stages only"};
  for (int pass = 0; pass < 3; pass++) {
    if (pass == 1 && !n_split) continue;
    exec_chain_t *loops = NULL;
    const char *why = NULL;
    if (exec_chain_new(op, nests[pass], v, 0, flags[pass], &loops, &why, &err))
      fail_msg("%s: %s", what, err.msg);
    if (loops) {
      for (int64_t j = 0; j < n_out; j++) out[j] = 1e30f;
      if (exec_chain_forward(loops, (const float *const *)t, out, 0, &err)) fail_msg("%s: %s", what, err.msg);
      fe = st_rel_err(out, want, n_out);
      if (!(fe <= TOL)) fail_msg("%s [%s]: forward differs by %g", what, pass_name[pass], fe);
      if (exec_chain_backward(loops, (const float *const *)t, gout, g, &err)) fail_msg("%s: %s", what, err.msg);
      for (int i = 0; i < nt; i++) {
        double ge = st_rel_err(g[i], ref[i], syno_exec_numel(e, i));
        if (!(ge <= TOL)) fail_msg("%s [%s]: gradient of tensor %d differs by %g", what, pass_name[pass], i, ge);
      }
      exec_chain_free(loops);
    }
  }
  free(split);
  int fast = syno_exec_fallback_reason(e) == NULL;
  if (fast) assert_true(strcmp(syno_exec_strategy(e), "interp") != 0);
  if (strategy) *strategy = syno_exec_strategy(e);
  if (library) *library = strstr(syno_exec_path(e), "oneDNN") != NULL;
  for (int i = 0; i < nt; i++) {
    free(t[i]);
    free(g[i]);
    free(ref[i]);
  }
  free(out);
  free(want);
  free(gout);
  free(low);
  syno_exec_free(e);
  return fast;
}

static void test_builtins_fast(void **state) {
  (void)state;
  static const char *cases[][2] = {
      {"conv2d", "N=2,C_in=4,C_out=8,H=6,W=6,k=3"},
      {"grouped-conv2d", "N=2,C_in=4,C_out=6,H=5,W=6,k=3,g=2"},
      {"depthwise-conv2d", "N=3,C_in=4,H=6,W=5,k=3"},
      {"strided-conv2d", "N=2,C_in=3,C_out=5,H=8,W=8,k=3,s=2"},
      {"linear", "N=3,C_in=5,C_out=7"},
      {"avgpool2d", "N=2,C_in=3,H=6,W=6,k=2"},
      /* a batch large enough for several GEMM column chunks */
      {"conv2d", "N=40,C_in=16,C_out=8,H=14,W=14,k=3"},
  };
  syno_rng_t rng;
  syno_rng_seed(&rng, 11, 1);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    st_op_t o;
    st_op_builtin(&o, cases[i][0], cases[i][1]);
    syno_error_t err = {0};
    syno_exec_t *e = NULL;
    assert_int_equal(syno_exec_new(&o.op, syno_graph_vars(o.g), 0, &e, &err), 0);
    if (strcmp(syno_exec_strategy(e), "gemm") != 0)
      fail_msg("%s: not on the fast path (%s)", cases[i][0], syno_exec_fallback_reason(e));
    assert_null(syno_exec_fallback_reason(e));
    printf("%s at %s: %s\n", cases[i][0], cases[i][1], syno_exec_path(e));
    syno_exec_free(e);
    assert_int_equal(check_one(&o.op, syno_graph_vars(o.g), cases[i][0], &rng, NULL, NULL, NULL, NULL), 1);
    st_op_free(&o);
  }
}

/* Operators the searches found (README): each must run on oneDNN and equal the interpreter,
 * forward and gradients, at ResNet-like bindings (two maps, channels growing). */
static void test_found_operators(void **state) {
  (void)state;
  static const char *const ops[] = {
      /* the published-preset winner: a 1x3 conv over a transposed, rolled map, its weight
       * shared by two channel groups */
      "r0=sum(k_1) r1=sum(s^-1*C_in); in[i0, split(div(i1, s^-1*C_out), share(r1, 1)), shift(unfold(i3, "
      "share(r0, 1))), i2] expand[share(mod(i1, s^-1*C_out), 1)] w1[mod(i1, s^-1*C_out), r1, r0]",
      /* the 1x3 conv winner */
      "r0=sum(k_1) r1=sum(C_in); in[i0, share(r1, 1), i2, unfold(i3, share(r0, 1))] expand[share(i1, 1)] "
      "w1[r1, i1, r0]",
  };
  static const char *const binds[] = {"N=3,C_in=8,C_out=8,H=10,k_1=3,k_2=7,s=2,g=32",
                                      "N=2,C_in=8,C_out=16,H=5,k_1=3,k_2=7,s=2,g=32", NULL};
  syno_rng_t rng;
  syno_rng_seed(&rng, 13, 1);
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    for (int b = 0; binds[b]; b++) {
      const char *one[2] = {binds[b], NULL};
      st_op_t o;
      st_op_make(&o, "N: 0, C_in: 2, C_out: 4, H: 0; k_1: 2, k_2: 2, s: 2, g: 3", "[N, C_in: unordered, H, H]",
                 "[N, C_out: unordered, H, H]", ops[i], one);
      syno_error_t err = {0};
      syno_exec_t *e = NULL;
      assert_int_equal(syno_exec_new(&o.op, syno_graph_vars(o.g), 0, &e, &err), 0);
      printf("found operator %zu at %s: %s\n", i + 1, binds[b], syno_exec_path(e));
      if (!strstr(syno_exec_path(e), "oneDNN")) fail_msg("operator %zu: not on oneDNN (%s)", i + 1, syno_exec_path(e));
      syno_exec_free(e);
      int folded = 0;
      assert_int_equal(check_one(&o.op, syno_graph_vars(o.g), ops[i], &rng, NULL, NULL, NULL, &folded), 1);
      if (!folded) fail_msg("operator %zu at %s: the deployed map was not folded into its convolution", i + 1, binds[b]);
      st_op_free(&o);
    }
}

/* Operators whose plan lifts an input axis (docs/semantics.md §7.3): each of the three kinds
 * the conv2d preset holds must run on the chain with the axis lifted, at the FLOPs of its
 * plan, and equal the interpreter on every path (check_one). */
static void test_lifted_operators(void **state) {
  (void)state;
  static const struct {
    const char *text;
    int stages; /* of the chain, the view included */
  } ops[] = {
      /* a piece of the merged output row as the Unfold window of the column: the
       * contraction runs over the input's columns, then one gather (the view) */
      {"r0=sum(k_2) r1=sum(C_in); in[i0, share(r1, 1), split(div(i2, k_2), share(r0, 1)), unfold(i3, mod(i2, "
       "k_2))] expand[share(i1, 1)] w1[r1, i1, r0]",
       2},
      /* part of C_in summed first, on the input's own columns, then the 1 x k_1^2 window */
      {"r0=sum(s) r1=sum(k_1^2) r2=sum(s^-1*C_in); in[i0, split(share(r0, 1), r2), i2, unfold(i3, share(r1, "
       "1))] expand[share(i1, 1)] w1[r1, i1, r0]",
       2},
      /* the same with the weight reading both halves of the channel */
      {"r0=sum(k_2) r1=sum(s^-1*C_in); in[i0, split(share(div(i1, s^-1*C_out), 1), r1), i2, unfold(i3, share(r0, "
       "1))] expand[share(mod(i1, s^-1*C_out), 1)] w1[div(i1, s^-1*C_out), mod(i1, s^-1*C_out), r0]",
       2},
  };
  static const char *const binds[] = {"N=2,C_in=8,C_out=8,H=14,k_1=3,k_2=7,s=2,g=32", NULL};
  syno_rng_t rng;
  syno_rng_seed(&rng, 17, 1);
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    st_op_t o;
    st_op_make(&o, "N: 0, C_in: 2, C_out: 4, H: 0; k_1: 2, k_2: 2, s: 2, g: 3", "[N, C_in: unordered, H, H]",
               "[N, C_out: unordered, H, H]", ops[i].text, binds);
    const syno_vars_t *v = syno_graph_vars(o.g);
    syno_error_t err = {0};
    syno_nest_t *fwd = malloc(sizeof *fwd), *run = malloc(sizeof *run);
    assert_non_null(fwd);
    assert_non_null(run);
    assert_int_equal(syno_lower_forward(&o.op, fwd, &err), 0);
    syno_nest_split_blocks(fwd, v, run);
    exec_chain_t *c = NULL;
    const char *why = NULL;
    if (exec_chain_new(&o.op, run, v, 0, 0, &c, &why, &err)) fail_msg("%s: %s", ops[i].text, err.msg);
    if (!c) fail_msg("%s: not staged (%s)", ops[i].text, why);
    assert_int_equal(exec_chain_lifted(c), 1);
    assert_int_equal(exec_chain_stages(c), ops[i].stages);
    exec_chain_free(c);
    int64_t staged, fused;
    assert_int_equal(syno_forward_flops(&o.op, fwd, v, 0, &staged, &err), 0);
    assert_int_equal(syno_nest_flops(fwd, v, 0, &fused, &err), 0);
    printf("lifted operator %zu: %lld FLOPs staged, %lld fused\n", i + 1, (long long)staged, (long long)fused);
    assert_true(staged < fused);
    check_flops_brute(&o.op, v, ops[i].text);
    assert_int_equal(check_one(&o.op, v, ops[i].text, &rng, NULL, NULL, NULL, NULL), 1);
    free(fwd);
    free(run);
    st_op_free(&o);
  }
}

#define MAX_OPS 600
#define MAX_REASONS 16

static const char *const strategies[] = {"gemm", "chain", "interp"};
enum { N_STRATEGIES = 3 };

typedef struct {
  char **seen;
  int n_seen, fast, target;
  int split;   /* operators whose forward nest has a block split */
  int library; /* operators with a stage on oneDNN */
  int folded;  /* of those, operators whose deployed norm and ReLU fold into the last one */
  int lifted;  /* operators whose plan lifts an input axis */
  int n_tensors_hist[SYNO_MAX_TENSORS + 1];
  int by_strategy[SYNO_MAX_TENSORS + 1][N_STRATEGIES]; /* [tensors][strategy] */
  const char *reason[MAX_REASONS];
  int reason_n[MAX_REASONS];
  syno_rng_t rng;
} census_t;

/* Checks one finalization of the space; stops the walk at the target. */
static int visit(syno_space_t *s, uint32_t node, uint32_t index, void *ctx) {
  census_t *c = ctx;
  syno_error_t err = {0};
  syno_operator_t op;
  if (syno_node_final(s, node, index, &op, &err)) fail_msg("%s", err.msg);
  const syno_vars_t *v = syno_graph_vars(syno_space_graph(s));
  char buf[4096];
  syno_operator_print(&op, buf, sizeof buf);
  for (int i = 0; i < c->n_seen; i++)
    if (strcmp(c->seen[i], buf) == 0) return 0;
  c->seen[c->n_seen++] = strdup(buf);
  c->n_tensors_hist[op.n_tensors]++;
  c->lifted += check_flops_brute(&op, v, buf) > 0;
  const char *strategy = NULL;
  int splits = 0, library = 0, folded = 0;
  int fast = check_one(&op, v, buf, &c->rng, &strategy, &splits, &library, &folded);
  c->folded += folded;
  c->split += splits > 0;
  c->library += library;
  int k = 0;
  while (k < N_STRATEGIES && strcmp(strategies[k], strategy) != 0) k++;
  if (k == N_STRATEGIES) fail_msg("%s: unknown strategy %s", buf, strategy);
  c->by_strategy[op.n_tensors][k]++;
  /* Every operator with two or more weights runs on the chain. */
  if (op.n_tensors >= 3 && strcmp(strategy, "chain") != 0) fail_msg("%s: on %s, not on the chain", buf, strategy);
  if (fast) {
    c->fast++;
  } else {
    syno_exec_t *e = NULL;
    assert_int_equal(syno_exec_new(&op, v, 0, &e, &err), 0);
    const char *r = syno_exec_fallback_reason(e);
    assert_non_null(r);
    int j = 0;
    while (j < MAX_REASONS - 1 && c->reason[j] && strcmp(c->reason[j], r) != 0) j++;
    c->reason[j] = r;
    c->reason_n[j]++;
    syno_exec_free(e);
  }
  return c->n_seen >= c->target;
}

/* Checks `target` distinct operators of a preset at one binding: all of depth 4, then those
 * of the next depths (depth first), up to max_depth. With `mix`, the sample must also show
 * block splits, two-weight operators and oneDNN stages (a convolution preset's first binding,
 * whose sample reaches the depths that hold them). */
static void census(const char *preset, const char *binding, int max_depth, int target, bool mix) {
  /* Random walks draw only a few operators a second at these depths, so the
   * operators come from enumerating the space. Up to two weights. */
  census_t *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->seen = calloc(MAX_OPS, sizeof *c->seen);
  assert_non_null(c->seen);
  c->target = target;
  syno_rng_seed(&c->rng, 5, 3);
  for (int depth = 4; depth <= max_depth && c->n_seen < c->target; depth++) {
    syno_space_spec_t spec;
    syno_error_t err = {0};
    if (syno_space_preset(preset, binding, &spec, &err)) fail_msg("%s", err.msg);
    spec.opts.depth = depth;
    spec.opts.max_tensors = 3;
    syno_space_t *s = NULL;
    if (syno_space_new(&spec, &s, &err)) fail_msg("%s", err.msg);
    if (syno_space_exhaust(s, visit, c, NULL, NULL, &err)) fail_msg("%s", err.msg);
    syno_space_free(s);
  }
  printf("%s at %s: checked %d distinct operators: %d entirely on fast stages, %d not\n", preset, binding, c->n_seen,
         c->fast, c->n_seen - c->fast);
  for (int t = 1; t <= SYNO_MAX_TENSORS; t++) {
    if (!c->n_tensors_hist[t]) continue;
    printf("  %d operators with %d tensor(s):", c->n_tensors_hist[t], t);
    for (int k = 0; k < N_STRATEGIES; k++) printf(" %s %d", strategies[k], c->by_strategy[t][k]);
    printf("\n");
  }
  for (int k = 0; k < MAX_REASONS && c->reason[k]; k++) printf("  not fast (%d): %s\n", c->reason_n[k], c->reason[k]);
  printf("  %d operators run with a loop variable split at a block (div/mod)\n", c->split);
  printf("  %d operators lift an input axis (docs/semantics.md §7.3); the FLOPs of every plan equal its loops' count\n",
         c->lifted);
  printf("  %d operators run a stage as a oneDNN convolution, %d of them fold a deployed norm and ReLU into it\n",
         c->library, c->folded);
  assert_true(c->n_seen >= target - 20);
  if (mix) {
    assert_true(c->split > 0);
    assert_true(c->n_tensors_hist[3] > 0);
    assert_true(c->library > 0);
  }
  if (c->library > 20) assert_true(c->folded > 0);
  /* No operator of the sample needs the interpreter or a loop stage. */
  assert_int_equal(c->fast, c->n_seen);
  for (int t = 1; t <= SYNO_MAX_TENSORS; t++) assert_int_equal(c->by_strategy[t][2], 0);
  for (int i = 0; i < c->n_seen; i++) free(c->seen[i]);
  free(c->seen);
  free(c);
}

/* Every preset at two bindings (another batch, other channels, another map or sequence), at
 * least 200 distinct operators each. */
static void test_sampled_operators(void **state) {
  (void)state;
  census("conv2d-wide", "N=2,C_in=4,C_out=4,H=6,W=6,k=3,s=2", 5, 520, true);
  census("conv2d-wide", "N=3,C_in=4,C_out=8,H=4,W=6,k=3,s=2", 5, 200, false);
  /* The published preset (its operators appear from depth 4, most at 6). */
  census("conv2d", "N=2,C_in=8,C_out=8,H=8,g=2,k_1=3,k_2=5,s=2", 6, 300, true);
  census("conv2d", "N=1,C_in=4,C_out=8,H=6,g=2,k_1=3,k_2=5,s=2", 6, 200, false);
  census("linear", "N=2,seq_len=2,H_in=16,g=4,k_1=2,k_2=4,t=2", 6, 200, false);
  census("linear", "N=3,seq_len=3,H_in=32,g=4,k_1=2,k_2=4,t=3", 6, 200, false);
  census("linear-wide", "N=2,S=4,C_in=32,C_out=32,k=4,s=2", 7, 200, false);
  census("linear-wide", "N=1,S=2,C_in=16,C_out=32,k=4,s=2", 7, 200, false);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_builtins_fast), cmocka_unit_test(test_found_operators),
                                     cmocka_unit_test(test_lifted_operators),
                                     cmocka_unit_test(test_sampled_operators)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
