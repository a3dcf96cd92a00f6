/* The search space: specs and their errors, the reality of every operator
 * it yields, canonicalization rules, and the shape distance as a lower bound
 * on the true shortest completion. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spacetest.h"
#include "syno/flopsgame.h"
#include "syno/space.h"
#include "syno/train.h"
#include "synotest.h"

static void expect_spec_error(const char *json, const char *want) {
  syno_space_spec_t spec;
  syno_error_t err = {{0}};
  if (syno_space_spec_from_json(json, &spec, &err) == 0) fail_msg("accepted: %s", json);
  print_message("%s -> %s\n", json, err.msg);
  if (!strstr(err.msg, want)) fail_msg("'%s': message '%s' lacks '%s'", json, err.msg, want);
}

static void test_specs(void **state) {
  (void)state;
  syno_space_spec_t spec;
  syno_error_t err;
  assert_int_equal(syno_space_preset("conv2d-wide", "", &spec, &err), 0);
  assert_int_equal(spec.opts.depth, 12);
  assert_int_equal(spec.opts.max_chain, 6);
  assert_int_equal(spec.opts.max_reductions, 5);
  assert_false(spec.opts.enable[SYNO_PRIM_STRIDE]);
  assert_false(spec.opts.enable[SYNO_PRIM_EXPAND]);
  assert_int_equal(spec.n_fixed, 1);
  assert_int_equal(syno_space_preset("linear-wide", "N=2, S=4", &spec, &err), 0);
  assert_int_equal(spec.n_fixed, 2);
  assert_int_not_equal(syno_space_preset("conv3d", "", &spec, &err), 0);
  assert_non_null(strstr(err.msg, "unknown preset 'conv3d'"));
  assert_int_equal(
      syno_space_spec_from_json("{\"preset\": \"conv2d-wide\", \"depth\": 6, \"rules\": {\"R1\": false}, "
                                "\"primitives\": {\"stride\": true}, \"bind\": [\"H=8, W=8\", \"H=16, W=16\"]}",
                                &spec, &err),
      0);
  assert_int_equal(spec.opts.depth, 6);
  assert_false(spec.opts.rule[SYNO_RULE_R1]);
  assert_true(spec.opts.rule[SYNO_RULE_R2]);
  assert_true(spec.opts.enable[SYNO_PRIM_STRIDE]);
  assert_int_equal(spec.vars.nbind, 2);
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"min_flops\": 5e6, \"max_flops\": 1e6}", "min_flops");
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"depth\": 0}", "depth 0");
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"deep\": 3}", "unknown field 'deep'");
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"depth\": \"six\"}", "field 'depth' must be a number");
  expect_spec_error("{\"input\": \"[N, C\", \"output\": \"[N]\"}", "input shape");
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"bind\": \"Q=3\"}", "unknown variable 'Q'");
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"rules\": {\"R9\": false}}", "'R9' is not a rule");
  expect_spec_error("{\"input\": \"[H]\", \"output\": \"[H]\", \"bind\": \"H=3\", \"fixed\": [[0, 4]]}",
                    "outside the shapes");
  expect_spec_error("{\"preset\": \"conv2d-wide\"", "not valid JSON");
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"bind\": \"H=9\", \"max_tensors\": 7}", "max_tensors");
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"max_count\": {\"merg\": 1}}", "'merg' is not a primitive");
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"max_count\": {\"split\": 1.5}}",
                    "'split' is not a primitive with an integer count");
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"max_count\": {\"share\": 0}}", "max_count of share is 0");
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"max_count\": {\"share\": 1}}", "max_count of share is 1");
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"max_count\": {\"merge\": 1e20}}",
                    "'merge' is not a primitive with an integer count");
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"max_count\": {\"shift\": -2}}", "max_count of shift is -2");
  expect_spec_error("{\"preset\": \"conv2d-wide\", \"max_count\": 3}", "field 'max_count' must be an object");
  /* Found by fuzzing (tests/fuzz/regress/spec): arrays crashed, a string was silently ignored, a
   * huge integer field converted out of range. */
  expect_spec_error("{\"preset\": \"conv2d\", \"primitives\": [true]}", "field 'primitives' must be an object");
  expect_spec_error("{\"preset\": \"conv2d\", \"primitives\": \"stride\"}", "field 'primitives' must be an object");
  expect_spec_error("{\"preset\": \"conv2d\", \"rules\": [{\"R1\": false}]}", "field 'rules' must be an object");
  expect_spec_error("{\"preset\": \"conv2d\", \"depth\": 6e123}", "field 'depth' must be an integer");
  assert_int_equal(syno_space_spec_from_json(
                       "{\"preset\": \"conv2d-wide\", \"max_count\": {\"merge\": 1, \"shift\": 2}}", &spec, &err),
                   0);
  assert_int_equal(spec.opts.max_count[SYNO_PRIM_MERGE], 1);
  assert_int_equal(spec.opts.max_count[SYNO_PRIM_SHIFT], 2);
  assert_int_equal(spec.opts.max_count[SYNO_PRIM_SPLIT], -1);
  assert_int_not_equal(syno_space_spec_load("/nonexistent/spec.json", &spec, &err), 0);
  assert_non_null(strstr(err.msg, "/nonexistent/spec.json"));
}

/* conv2d carries the original's published ResNet-18 search settings; its
 * FLOPs ratios become limits on the standard 3x3 convolution's FLOPs summed
 * over the bindings, and the spec file can replace them. */
static void test_preset_search_settings(void **state) {
  (void)state;
  syno_space_spec_t spec;
  syno_error_t err;
  assert_int_equal(syno_space_preset("conv2d", "", &spec, &err), 0);
  assert_int_equal(spec.kind, SYNO_SIG_CONV);
  assert_int_equal(spec.opts.max_count[SYNO_PRIM_MERGE], 1);
  assert_int_equal(spec.opts.max_count[SYNO_PRIM_SPLIT], 3);
  assert_int_equal(spec.opts.max_count[SYNO_PRIM_SHIFT], 2);
  assert_int_equal(spec.opts.max_count[SYNO_PRIM_STRIDE], 0);
  assert_int_equal(spec.opts.max_count[SYNO_PRIM_UNFOLD], -1);
  assert_true(spec.opts.min_unfold_ratio == 2.3 && spec.opts.max_expansion_merge == 2048);
  assert_true(spec.opts.min_shared_weight_dim == 8 && spec.opts.max_shared_weight_dim == 8);
  assert_int_equal(syno_space_preset("conv2d-wide", "", &spec, &err), 0);
  assert_int_equal(spec.opts.max_count[SYNO_PRIM_MERGE], -1);
  assert_true(spec.opts.max_flops_ratio == 0);

  /* Two bindings: 2 x N x C_in x C_out x 9 x H x H each. */
  assert_int_equal(syno_space_spec_from_json("{\"preset\": \"conv2d\", \"bind\": [\"N=1, C_in=16, C_out=32, H=8\", "
                                             "\"N=1, C_in=32, C_out=32, H=4\"], \"depth\": 4}",
                                             &spec, &err),
                   0);
  double std = 2.0 * 9 * (16 * 32 * 64 + 32 * 32 * 16);
  syno_space_t *s;
  assert_int_equal(syno_space_new(&spec, &s, &err), 0);
  assert_float_equal(syno_space_spec(s)->opts.max_flops, 0.9 * std, 1e-6 * std);
  assert_float_equal(syno_space_spec(s)->opts.min_flops, 0.15 * std, 1e-6 * std);
  syno_space_free(s);
  /* An absolute limit wins over the ratio; a ratio of 0 lifts the limit. */
  assert_int_equal(
      syno_space_spec_from_json("{\"preset\": \"conv2d\", \"max_flops\": 1e9, \"min_flops_ratio\": 0}", &spec, &err),
      0);
  assert_int_equal(syno_space_new(&spec, &s, &err), 0);
  assert_float_equal(syno_space_spec(s)->opts.max_flops, 1e9, 1);
  assert_float_equal(syno_space_spec(s)->opts.min_flops, 0, 0);
  syno_space_free(s);
  expect_spec_error("{\"input\": \"[H]\", \"output\": \"[H]\", \"bind\": \"H=3\", \"max_flops_ratio\": 0.5}",
                    "FLOPs ratios need a preset");
  expect_spec_error("{\"preset\": \"conv2d\", \"max_flops_ratio\": -1}", "field 'max_flops_ratio' must be a number >= 0");
  expect_spec_error("{\"preset\": \"conv2d\", \"min_flops_ratio\": 0.95}", "min_flops_ratio 0.95 is above");
  /* Ratios and absolute limits that contradict each other only show on the bindings. */
  assert_int_equal(syno_space_spec_from_json("{\"preset\": \"conv2d\", \"max_flops\": 1e3}", &spec, &err), 0);
  assert_int_not_equal(syno_space_new(&spec, &s, &err), 0);
  assert_non_null(strstr(err.msg, "no operator can satisfy both"));
}

/* The FLOPs bounds hold for operator op of node `node` with FLOPs `flops`
 * (the stages', syno_forward_flops): the node's bound, and the game of the
 * finished operator itself (docs/semantics.md §8), which the node's game never exceeds.
 * Returns the operator's game. */
static double check_game(syno_space_t *s, uint32_t node, const syno_operator_t *op, double flops) {
  syno_error_t err;
  char text[4096];
  syno_operator_print(op, text, sizeof text);
  if (syno_node_flops_bound(s, node) > flops)
    fail_msg("'%s': node %u's FLOPs bound %g above the operator's %g", text, node, syno_node_flops_bound(s, node),
             flops);
  double game = 0;
  for (int b = 0; b < syno_graph_vars(op->g)->nbind; b++) {
    syno_flops_game_t g;
    double cost;
    if (syno_operator_flops_game(op, b, &g, &err) || syno_flops_game_solve(&g, &cost, &err)) fail_msg("%s", err.msg);
    game += cost;
  }
  if (game > flops) fail_msg("'%s': FLOPs game %g above the stages' %g", text, game, flops);
  return game;
}

typedef struct {
  st_op_t o; /* vars and shapes of the space, to reparse texts */
  int seen, checked_fd;
  double max_flops, max_params;
  syno_rng_t rng;
} reality_t;

/* Every operator must lower, run with the output shape, stay within the
 * limits, parse back to itself, and have consistent gradients. */
static void check_real(syno_space_t *s, uint32_t node, uint32_t index, reality_t *r) {
  syno_operator_t op;
  syno_error_t err;
  if (syno_node_final(s, node, index, &op, &err)) fail_msg("%s", err.msg);
  char text[4096];
  syno_operator_print(&op, text, sizeof text);
  const syno_space_spec_t *spec = syno_space_spec(s);
  syno_operator_t again;
  if (syno_operator_parse(syno_space_graph(s), text, &spec->input, &spec->output, &again, &err))
    fail_msg("'%s' does not parse back: %s", text, err.msg);
  assert_true(syno_operator_eq(&op, &again));
  syno_shape_t out;
  syno_operator_output_shape(&op, &out);
  assert_int_equal(out.rank, spec->output.rank);
  for (int i = 0; i < out.rank; i++) assert_true(syno_size_eq(out.dim[i], spec->output.dim[i]));
  double flops, params;
  assert_int_equal(syno_node_final_cost(s, node, index, &flops, &params), 0);
  if (r->max_flops > 0 && flops > r->max_flops) fail_msg("'%s': %g FLOPs over the limit", text, flops);
  if (flops < spec->opts.min_flops) fail_msg("'%s': %g FLOPs under the limit", text, flops);
  if (r->max_params > 0 && params > r->max_params) fail_msg("'%s': %g params over the limit", text, params);
  check_game(s, node, &op, flops);
  syno_lowered_t *low = malloc(sizeof *low);
  if (syno_lower(&op, low, &err)) fail_msg("'%s' does not lower: %s", text, err.msg);
  st_op_t view = {.vars = spec->vars, .input = spec->input, .output = spec->output, .g = syno_space_graph(s), .op = op};
  float *t[SYNO_MAX_TENSORS] = {0};
  int64_t numel[SYNO_MAX_TENSORS], n_out;
  for (int i = 0; i < op.n_tensors; i++) {
    assert_int_equal(syno_tensor_numel(&op, i, 0, &numel[i], &err), 0);
    t[i] = st_random(&r->rng, numel[i]);
  }
  assert_int_equal(syno_output_numel(&op, 0, &n_out, &err), 0);
  float *y = st_forward(&view, &low->forward, 0, t);
  for (int64_t i = 0; i < n_out; i++)
    if (!isfinite(y[i])) fail_msg("'%s': non-finite output", text);
  float *gout = st_random(&r->rng, n_out);
  for (int i = 0; i < op.n_tensors; i++) {
    float *g1 = malloc(sizeof(float) * (size_t)numel[i]), *g2 = malloc(sizeof(float) * (size_t)numel[i]);
    if (syno_interp_nest(&low->backward[i], &spec->vars, 0, (const float *const *)t, gout, g1, &err) ||
        syno_interp_grad_scatter(&low->forward, &spec->vars, 0, i, (const float *const *)t, gout, g2, &err))
      fail_msg("%s", err.msg);
    double e = st_rel_err(g1, g2, numel[i]);
    if (e > 1e-4) fail_msg("'%s': gradient %d, backward nest vs scatter %g", text, i, e);
    free(g1);
    free(g2);
  }
  if (r->seen % 25 == 0) { /* finite differences on a sample */
    for (int i = 0; i < op.n_tensors; i++) st_check_gradient(&view, low, 0, t, i, 6, 1e-3, &r->rng);
    r->checked_fd++;
  }
  free(gout);
  free(y);
  for (int i = 0; i < op.n_tensors; i++) free(t[i]);
  free(low);
  r->seen++;
}

static void check_real_cb(syno_space_t *s, uint32_t node, uint32_t final, void *r) { check_real(s, node, final, r); }

static void sample_and_check(const char *json, int n, int min_found) {
  syno_space_spec_t spec;
  syno_error_t err;
  if (syno_space_spec_from_json(json, &spec, &err)) fail_msg("%s", err.msg);
  reality_t r = {.max_flops = spec.opts.max_flops, .max_params = spec.opts.max_params};
  syno_rng_seed(&r.rng, 9, 0);
  st_sample(json, 1, n, check_real_cb, &r);
  print_message("%s: %d operators checked, %d with finite differences\n", json, r.seen, r.checked_fd);
  assert_true(r.seen >= min_found);
}

static void test_sampled_operators_are_real(void **state) {
  (void)state;
  sample_and_check(
      "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=8, H=8, W=8\", \"depth\": 5, "
      "\"max_flops\": 2e5, \"max_params\": 3000}",
      1000, 1000);
  /* the space holds 11 operators (29 with U5 off) */
  sample_and_check("{\"preset\": \"linear-wide\", \"bind\": \"N=2, S=3, C_in=16, C_out=16\", \"depth\": 6}", 1000, 11);
  /* the GPT-2 signature (output t*H_in) holds 28 at depth 5 */
  sample_and_check("{\"preset\": \"linear\", \"bind\": \"N=2, seq_len=3, H_in=16\", \"depth\": 5}", 1000, 28);
}

/* The true number of steps from each node to its nearest finalization (or
 * a large value), computed without distance pruning. */
typedef struct {
  int *best;
  size_t cap;
} truth_t;

static int true_distance(syno_space_t *s, uint32_t node, truth_t *t, syno_error_t *err) {
  if (node < t->cap && t->best[node] != -2) return t->best[node];
  const syno_step_t *steps;
  int n = syno_node_children(s, node, &steps, err);
  assert_true(n >= 0);
  int best = 1000;
  for (int i = 0; i < n; i++) {
    syno_step_t st = steps[i];
    if (st.kind == SYNO_STEP_FINALIZE) {
      best = 0;
      continue;
    }
    int d = true_distance(s, st.target, t, err);
    int cost = d + (st.kind == SYNO_STEP_BEGIN ? 0 : 1);
    if (cost < best) best = cost;
    steps = NULL;
    n = syno_node_children(s, node, &steps, err); /* the step array may have moved */
  }
  if (node >= t->cap) {
    size_t nc = node + 4096;
    t->best = realloc(t->best, nc * sizeof *t->best);
    for (size_t i = t->cap; i < nc; i++) t->best[i] = -2;
    t->cap = nc;
  }
  t->best[node] = best;
  return best;
}

/* "size(kind) ..." for a node's interface, for failure messages. */
static const char *describe(syno_space_t *s, uint32_t node) {
  static char buf[1024];
  syno_graph_t *g = syno_space_graph(s);
  const syno_dim_t *dims;
  int n = syno_node_dims(s, node, &dims);
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; i < n && len < sizeof buf - 80; i++) {
    char sz[64];
    syno_size_print(syno_graph_vars(g), syno_graph_dim(g, dims[i])->size, sz, sizeof sz);
    const syno_prim_t *p = syno_graph_below(g, dims[i]);
    const char *kind = p                                                     ? syno_prim_name(p->kind)
                       : syno_graph_dim(g, dims[i])->kind == SYNO_DIM_REDUCE ? "reduce"
                                                                             : "iterator";
    len += (size_t)snprintf(buf + len, sizeof buf - len, " %s(%s%s)", sz, kind,
                            p && p->kind == SYNO_PRIM_SHARE && syno_graph_dim(g, dims[i])->slot ? " weight" : "");
  }
  return buf;
}

/* A space with Stride on (the shape distance then leaves out the terms that
 * assume no Stride), at a depth and with extra fields. */
#define STRIDE_SPACE(depth, extra)                                                                       \
  "{\"input\": \"[C_in: unordered, H]\", \"output\": \"[C_out: unordered, H]\", \"vars\": \"C_in=4: 2, " \
  "C_out=4: 2, H=32: 2; k=3: 3\", \"depth\": " #depth                                                    \
  ", \"min_weight_params\": 4, \"max_finalizations\": 4, "                                               \
  "\"max_reductions\": 2, \"primitives\": {\"stride\": true}" extra "}"

static void test_distance_is_a_lower_bound(void **state) {
  (void)state;
  const char *specs[] = {
      "{\"input\": \"[C_in: unordered, H]\", \"output\": \"[C_out: unordered, H]\", \"vars\": \"C_in=4: 2, C_out=8: 2, "
      "H=8: 2; k=3: 2, s=2: 2\", \"depth\": 4, \"min_weight_params\": 4, \"max_finalizations\": 4}",
      "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=4, H=6, W=6\", \"depth\": 3, \"max_reductions\": "
      "3, "
      "\"min_weight_params\": 8}",
      /* one step deeper */
      "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=4, H=6, W=6\", \"depth\": 4, \"max_reductions\": "
      "1, "
      "\"min_weight_params\": 8}",
      /* under caps, which the distance counts against */
      "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=4, H=6, W=6\", \"depth\": 4, \"max_reductions\": "
      "1, "
      "\"min_weight_params\": 8, \"max_count\": {\"merge\": 1, \"split\": 1, \"unfold\": 1, \"shift\": 1}}",
      /* two weights, a pooling limit that binds (term 10), and a window s^-1*H = 3 that carries what the
       * allowance cannot (term 11) */
      "{\"input\": \"[C_in: unordered, H]\", \"output\": \"[C_out: unordered, H]\", \"vars\": \"C_in=4: 2, C_out=4: 2, "
      "H=6: 2; k=3: 2, s=2: 2\", \"depth\": 4, \"max_tensors\": 3, \"max_reductions\": 2, \"min_weight_params\": 4, "
      "\"max_finalizations\": 4, \"max_pooling\": 2}",
      /* Stride on: strided windows, among them the data side of a Share strided (a dilated window the weight
       * reads, unfold(i1, stride(share(r0, 1), k))); one and two weights */
      STRIDE_SPACE(6, ""),
      STRIDE_SPACE(5, ", \"max_tensors\": 3"),
  };
  for (size_t k = 0; k < sizeof specs / sizeof *specs; k++) {
    syno_space_spec_t spec;
    syno_error_t err;
    if (syno_space_spec_from_json(specs[k], &spec, &err)) fail_msg("%s", err.msg);
    spec.opts.prune_distance = false;
    syno_space_t *s;
    assert_int_equal(syno_space_new(&spec, &s, &err), 0);
    truth_t t = {0};
    int root = true_distance(s, syno_space_root(s), &t, &err);
    assert_true(root < 1000);
    int checked = 0, tight = 0;
    for (uint32_t id = 1; id < t.cap; id++) {
      if (t.best[id] < 0 || t.best[id] >= 1000) continue;
      int d = syno_node_distance(s, id);
      if (d > t.best[id])
        fail_msg("spec %zu node %u: distance %d exceeds the true %d at%s", k, id, d, t.best[id], describe(s, id));
      checked++;
      tight += d == t.best[id];
    }
    print_message("spec %zu: distance checked on %d nodes that can finish, exact on %d\n", k, checked, tight);
    assert_true(checked > 30);
    free(t.best);
    syno_space_free(s);
  }
}

/* Pruning by distance only removes nodes that cannot finish: the operators
 * found are the same with and without it. */
static void check_pruning_keeps_every_operator(const char *json) {
  uint64_t a, b;
  char *with = st_space_ops(json, true, 0, NULL, &a), *without = st_space_ops(json, false, 0, NULL, &b);
  char **la, **lb;
  int na = st_sorted_lines(with, &la), nb = st_sorted_lines(without, &lb);
  assert_int_equal(na, nb);
  for (int i = 0; i < na; i++) assert_string_equal(la[i], lb[i]);
  print_message("%d operators with and without distance pruning\n", na);
  assert_true(na > 10);
  /* No operator is found twice: equal interfaces are one node. */
  for (int i = 1; i < na; i++)
    if (!strcmp(la[i], la[i - 1])) fail_msg("operator found twice: %s", la[i]);
  free(la);
  free(lb);
  free(with);
  free(without);
}

static void test_pruning_keeps_every_operator(void **state) {
  (void)state;
  check_pruning_keeps_every_operator(
      "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=4, H=6, W=6\", \"depth\": 3, "
      "\"max_reductions\": 3, \"min_weight_params\": 8}");
  /* where the broadcast dims' limit (term 9) binds */
  check_pruning_keeps_every_operator(
      "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=4, H=6, W=6\", \"depth\": 3, "
      "\"max_reductions\": 3, \"min_weight_params\": 8, \"max_expansion_merge\": 4}");
  /* where the pooling limit (term 10) binds */
  check_pruning_keeps_every_operator(
      "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=4, H=6, W=6\", \"depth\": 3, "
      "\"max_reductions\": 3, \"min_weight_params\": 8, \"max_pooling\": 2}");
  /* with Stride on */
  check_pruning_keeps_every_operator(STRIDE_SPACE(6, ""));
}

/* The reshape-group bound only removes nodes that cannot finish either, on
 * a space too large to enumerate without any distance: the operators are
 * the same with the counting bound alone. */
static void test_group_bound_keeps_every_operator(void **state) {
  (void)state;
  const char *json =
      "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=8, H=6, W=6\", \"depth\": 6, "
      "\"max_reductions\": 1, \"min_weight_params\": 8}";
  syno_space_spec_t spec;
  syno_error_t err;
  if (syno_space_spec_from_json(json, &spec, &err)) fail_msg("%s", err.msg);
  syno_space_stats_t with_st, without_st;
  char *with = st_spec_ops(&spec, &with_st, NULL);
  spec.opts.group_distance = false;
  char *without = st_spec_ops(&spec, &without_st, NULL);
  char **la, **lb;
  int na = st_sorted_lines(with, &la), nb = st_sorted_lines(without, &lb);
  assert_int_equal(na, nb);
  for (int i = 0; i < na; i++) assert_string_equal(la[i], lb[i]);
  print_message("%d operators with and without the group bound; %llu and %llu nodes\n", na,
                (unsigned long long)with_st.nodes, (unsigned long long)without_st.nodes);
  assert_true(na > 1000);
  assert_true(with_st.nodes < without_st.nodes);
  free(la);
  free(lb);
  free(with);
  free(without);
}

/* The per-kind caps (docs/semantics.md §4.3): a capped space yields exactly the operators
 * of the uncapped space that have no more primitives of each kind than the
 * caps allow. Generation stops at a cap and the distance counts with the
 * caps left, so this checks both: a cap that the generators miss adds an
 * operator, a distance term that is unsound under the caps loses one. */
typedef struct {
  FILE *f;
  const int *cap; /* NULL: keep all */
  int kept, dropped;
} caps_ctx_t;

static int collect_capped(syno_space_t *s, uint32_t node, uint32_t index, void *ctx) {
  (void)node;
  caps_ctx_t *c = ctx;
  syno_operator_t op;
  syno_error_t err;
  if (syno_node_final(s, node, index, &op, &err)) return -1;
  int count[SYNO_PRIM_KINDS] = {0};
  for (int i = 0; i < op.n_prims; i++) count[syno_graph_prim(op.g, op.prims[i])->kind]++;
  for (int k = 0; k < SYNO_PRIM_KINDS && c->cap; k++)
    if (c->cap[k] >= 0 && count[k] > c->cap[k]) {
      c->dropped++;
      return 0;
    }
  char buf[4096];
  syno_operator_print(&op, buf, sizeof buf);
  fprintf(c->f, "%s\n", buf);
  c->kept++;
  return 0;
}

static char *enumerate_capped(const syno_space_spec_t *spec, const int *filter, caps_ctx_t *c, uint64_t *nodes) {
  syno_space_t *s;
  syno_error_t err;
  assert_int_equal(syno_space_new(spec, &s, &err), 0);
  char *buf = NULL;
  size_t len = 0;
  *c = (caps_ctx_t){open_memstream(&buf, &len), filter, 0, 0};
  if (syno_space_exhaust(s, collect_capped, c, NULL, NULL, &err)) fail_msg("%s", err.msg);
  fclose(c->f);
  *nodes = syno_space_stats(s)->nodes;
  syno_space_free(s);
  return buf;
}

static void test_caps_keep_exactly_the_capped_operators(void **state) {
  (void)state;
  const char *json =
      "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=8, H=6, W=6\", \"depth\": 5, "
      "\"max_reductions\": 2, \"min_weight_params\": 8}";
  const int caps[][SYNO_PRIM_KINDS] = {
      /* split merge shift stride unfold share expand */
      {1, 1, 1, -1, -1, -1, -1}, /* the published vision caps, tightened to bind at depth 5 */
      {0, 0, -1, -1, 1, 2, -1},
      {-1, -1, 0, -1, 0, -1, -1},
  };
  syno_space_spec_t spec;
  syno_error_t err;
  if (syno_space_spec_from_json(json, &spec, &err)) fail_msg("%s", err.msg);
  caps_ctx_t all;
  uint64_t all_nodes;
  char *full = enumerate_capped(&spec, NULL, &all, &all_nodes);
  free(full);
  for (size_t k = 0; k < sizeof caps / sizeof *caps; k++) {
    caps_ctx_t filtered, capped;
    uint64_t n1, n2;
    char *want = enumerate_capped(&spec, caps[k], &filtered, &n1);
    syno_space_spec_t cs = spec;
    memcpy(cs.opts.max_count, caps[k], sizeof cs.opts.max_count);
    char *got = enumerate_capped(&cs, NULL, &capped, &n2);
    char **lw, **lg;
    int nw = st_sorted_lines(want, &lw), ng = st_sorted_lines(got, &lg);
    for (int i = 0, j = 0; i < nw || j < ng;) {
      int c = i == nw ? 1 : j == ng ? -1 : strcmp(lw[i], lg[j]);
      if (c < 0) fail_msg("caps %zu: lost '%s'", k, lw[i]);
      if (c > 0) fail_msg("caps %zu: '%s' is over a cap", k, lg[j]);
      i++, j++;
    }
    print_message("caps %zu: %d of %d operators within the caps, %llu nodes (%llu uncapped)\n", k, ng, all.kept,
                  (unsigned long long)n2, (unsigned long long)all_nodes);
    assert_true(filtered.dropped > 0); /* the caps bind */
    assert_true(ng > 10);
    assert_true(n2 < all_nodes);
    free(lw);
    free(lg);
    free(want);
    free(got);
  }
}

/* FLOPs pruning only removes nodes whose every operator is over max FLOPs:
 * enumerating with a bound and the pruning on yields exactly the operators
 * of the unbounded space whose FLOPs are within the bound. */
typedef struct {
  FILE *f;
  double max; /* 0: keep all */
  double *flops;
  int n, cap;
  int games; /* operators whose game is strictly below their FLOPs */
} flops_ctx_t;

static int collect_flops(syno_space_t *s, uint32_t node, uint32_t index, void *ctx) {
  flops_ctx_t *c = ctx;
  syno_operator_t op;
  syno_error_t err;
  double flops, params;
  if (syno_node_final(s, node, index, &op, &err) || syno_node_final_cost(s, node, index, &flops, &params)) return -1;
  c->games += check_game(s, node, &op, flops) < flops;
  if (c->max > 0 && flops > c->max) return 0;
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 256;
    c->flops = realloc(c->flops, sizeof(double) * (size_t)c->cap);
  }
  c->flops[c->n++] = flops;
  char buf[4096];
  syno_operator_print(&op, buf, sizeof buf);
  fprintf(c->f, "%s\n", buf);
  return 0;
}

static char *enumerate_flops(const char *json, bool prune, double bound, double filter, flops_ctx_t *c,
                             uint64_t *pruned) {
  syno_space_spec_t spec;
  syno_error_t err;
  if (syno_space_spec_from_json(json, &spec, &err)) fail_msg("%s", err.msg);
  spec.opts.prune_flops = prune;
  spec.opts.max_flops = bound;
  syno_space_t *s;
  assert_int_equal(syno_space_new(&spec, &s, &err), 0);
  char *buf = NULL;
  size_t len = 0;
  c->f = open_memstream(&buf, &len);
  c->max = filter;
  if (syno_space_exhaust(s, collect_flops, c, NULL, NULL, &err)) fail_msg("%s", err.msg);
  fclose(c->f);
  *pruned = syno_space_stats(s)->prune[SYNO_PRUNE_FLOPS];
  syno_space_free(s);
  return buf;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void test_flops_pruning_keeps_every_operator(void **state) {
  (void)state;
  const char *specs[] = {
      "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=4, H=6, W=6\", \"depth\": 3, \"max_reductions\": "
      "3, "
      "\"min_weight_params\": 8}",
      "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=4, H=6, W=6\", \"depth\": 4, \"max_tensors\": 3, "
      "\"max_reductions\": 2, "
      "\"min_weight_params\": 8}",
  };
  for (size_t k = 0; k < sizeof specs / sizeof *specs; k++) {
    /* The unbounded space; the bound is its lower-quartile FLOPs, so most go. */
    flops_ctx_t all = {0};
    uint64_t pruned;
    char *every = enumerate_flops(specs[k], false, 0, 0, &all, &pruned);
    assert_true(all.n > 10);
    qsort(all.flops, (size_t)all.n, sizeof(double), cmp_double);
    double bound = all.flops[all.n / 4];
    free(every);
    flops_ctx_t a = {0}, b = {0};
    uint64_t pa, pb;
    char *off = enumerate_flops(specs[k], false, 0, bound, &a, &pa);
    char *on = enumerate_flops(specs[k], true, bound, 0, &b, &pb);
    char **la, **lb;
    int na = st_sorted_lines(off, &la), nb = st_sorted_lines(on, &lb);
    print_message(
        "spec %zu: %d operators (%d with a game below their FLOPs), %d within %g FLOPs; with the bound and "
        "pruning on %d, %llu nodes pruned\n",
        k, all.n, all.games, na, bound, nb, (unsigned long long)pb);
    assert_int_equal(na, nb);
    for (int i = 0; i < na; i++) assert_string_equal(la[i], lb[i]);
    assert_true(na < all.n);
    assert_true(pb > 0);
    free(la);
    free(lb);
    free(off);
    free(on);
    free(all.flops);
    free(a.flops);
    free(b.flops);
  }
}

/* A rule that is switched off lets its uncanonical twin through, and the
 * canonical form is generated either way (st_check_rule, spacetest.h). The
 * rules that never fire in these two spaces are tested in test_rules.c. */
#define SMALL                                                                                                        \
  "{\"input\": \"[C_in: unordered, H]\", \"output\": \"[C_out: unordered, H]\", \"vars\": \"C_in=4: 2, C_out=8: 2, " \
  "H=8: 2; k=3: 2, s=2: 2\", \"min_weight_params\": 4, \"max_finalizations\": 4, \"depth\": "

/* A walk from an inner node: the steps it returns lead, child by child,
 * from that node to the operator it returned; without replacement it never
 * returns an operator twice; once a subtree is used up it says so
 * (syno_node_dead), and the walk from the root still finds the rest. */
static void test_walk_from_a_node(void **state) {
  (void)state;
  syno_space_spec_t spec;
  syno_error_t err;
  assert_int_equal(
      syno_space_spec_from_json("{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=4, H=6, W=6\", "
                                "\"depth\": 3, \"min_weight_params\": 8}",
                                &spec, &err),
      0);
  syno_space_t *s;
  assert_int_equal(syno_space_new(&spec, &s, &err), 0);
  const syno_step_t *steps;
  int n = syno_node_children(s, syno_space_root(s), &steps, &err);
  assert_true(n > 1);
  /* The start: the last child of the root that leads to an operator (the
   * walks that find none mark their children dead on the way). */
  syno_rng_t rng;
  syno_rng_seed(&rng, 7, 0);
  uint32_t start = 0;
  for (int i = n - 1; i >= 0 && !start; i--) {
    if (steps[i].kind == SYNO_STEP_FINALIZE) continue;
    syno_space_t *probe;
    assert_int_equal(syno_space_new(&spec, &probe, &err), 0);
    const syno_step_t *ps;
    assert_int_equal(syno_node_children(probe, syno_space_root(probe), &ps, &err), n);
    uint32_t pn, pf;
    int pw;
    if (syno_space_walk(probe, ps[i].target, &rng, 100000, false, NULL, 0, NULL, &pn, &pf, &pw, &err) == 1)
      start = steps[i].target;
    syno_space_free(probe);
  }
  assert_true(start != 0);
  char seen[64][1024];
  int found = 0;
  for (;;) {
    syno_step_t taken[64];
    int n_taken, walks;
    uint32_t node, final;
    int r = syno_space_walk(s, start, &rng, 100000, true, taken, 64, &n_taken, &node, &final, &walks, &err);
    assert_true(r >= 0);
    if (r == 0) break;
    /* Replay the steps from start. */
    uint32_t at = start;
    assert_true(n_taken >= 1);
    for (int i = 0; i < n_taken; i++) {
      int m = syno_node_children(s, at, &steps, &err), hit = -1;
      for (int j = 0; j < m && hit < 0; j++)
        if (steps[j].kind == taken[i].kind && steps[j].target == taken[i].target) hit = j;
      assert_true(hit >= 0);
      if (i + 1 < n_taken) at = taken[i].target;
    }
    assert_int_equal(taken[n_taken - 1].kind, SYNO_STEP_FINALIZE);
    assert_int_equal(at, node);
    assert_int_equal(taken[n_taken - 1].target, final);
    syno_operator_t op;
    assert_int_equal(syno_node_final(s, node, final, &op, &err), 0);
    assert_true(found < 64);
    syno_operator_print(&op, seen[found], sizeof seen[found]);
    for (int i = 0; i < found; i++) assert_string_not_equal(seen[i], seen[found]);
    found++;
  }
  print_message("%d operators below node %u\n", found, start);
  assert_true(found > 0);
  assert_true(syno_node_dead(s, start));
  uint32_t node, final;
  int walks;
  assert_int_equal(syno_space_random_walk(s, &rng, 100000, true, &node, &final, &walks, &err), 1);
  syno_space_free(s);
}

static void test_rules(void **state) {
  (void)state;
  /* S2: shifting a shared dim is the same as a rolled (learned) weight. */
  st_check_rule(SYNO_RULE_S2, SMALL "3}", 0,
                "r0=sum(C_in); in[share(r0, 1), shift(share(i1, 1))] expand[share(i0, 1)] w1[r0, i0, i1]",
                "r0=sum(C_in); in[share(r0, 1), share(i1, 1)] expand[share(i0, 1)] w1[r0, i0, i1]");
  /* R2: broadcasting both halves of a merged C_out is one broadcast of C_out. */
  st_check_rule(
      SYNO_RULE_R2, SMALL "3}", 0,
      "r0=sum(C_in); in[share(r0, 1), i1] expand[share(div(i0, s^-1*C_out), 1), share(mod(i0, s^-1*C_out), 1)] "
      "w1[r0, div(i0, s^-1*C_out), mod(i0, s^-1*C_out)]",
      "r0=sum(C_in); in[share(r0, 1), i1] expand[share(i0, 1)] w1[r0, i0]");
  /* R4: summing a merged dim is two reductions; here one half only meets the
   * weight, so it sums the weight alone. */
  st_check_rule(SYNO_RULE_R4, SMALL "3}", 0,
                "r0=sum(s*C_in); in[share(mod(r0, C_in), 1), i1] expand[share(div(r0, C_in), 1), share(i0, 1)] "
                "w1[div(r0, C_in), mod(r0, C_in), i0]",
                "r0=sum(C_in); in[share(r0, 1), i1] expand[share(i0, 1)] w1[r0, i0]");
  /* C3: a contraction with no inner share is a pure outer product. */
  st_check_rule(SYNO_RULE_C3, SMALL "3}", 0, "r0=sum(C_in); in[r0, i1] expand[share(i0, 1)] w1[i0]",
                "r0=sum(C_in); in[share(r0, 1), i1] expand[share(i0, 1)] w1[r0, i0]");
  /* R1: splitting the two halves of a merge back together is the identity. */
  const char *conv =
      "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=4, H=6, W=6\", \"depth\": 4, "
      "\"min_weight_params\": 8}";
  st_check_rule(SYNO_RULE_R1, conv, 0,
                "r0=sum(C_in); in[i0, r0, share(i2, 1), split(div(i3, k), mod(i3, k))] expand[share(i1, 1)] w1[i1, i2]",
                "r0=sum(C_in); in[i0, r0, share(i2, 1), i3] expand[share(i1, 1)] w1[i1, i2]");
  /* O4: a window that is only summed is a weightless box filter. */
  st_check_rule(SYNO_RULE_O4, conv, 0,
                "r0=sum(k) r1=sum(C_in); in[i0, share(r1, 1), i2, unfold(i3, r0)] expand[share(i1, 1)] w1[r1, i1]",
                "r0=sum(C_in); in[i0, share(r0, 1), i2, i3] expand[share(i1, 1)] w1[r0, i1]");
  /* R0: splitting W and merging its halves back with H is a reshape of the
   * input that the plain contraction over the same dims spells once. */
  st_check_rule(SYNO_RULE_R0, conv, 0,
                "r0=sum(C_in); in[i0, div(split(i2, r0), H), mod(split(i2, r0), H), share(i3, 1)] expand[share(i1, 1)] "
                "w1[i1, i3]",
                "r0=sum(C_in); in[i0, r0, i2, share(i3, 1)] expand[share(i1, 1)] w1[i1, i3]");
  /* R3: a split of W whose two halves both meet the weight is the weight
   * reshaped; W shared whole is the canonical spelling. */
  st_check_rule(SYNO_RULE_R3, conv, 0,
                "r0=sum(C_in); in[i0, r0, i2, split(share(mod(i3, k), 1), share(div(i3, k), 1))] expand[share(i1, 1)] "
                "w1[i1, div(i3, k), mod(i3, k)]",
                "r0=sum(C_in); in[i0, r0, i2, share(i3, 1)] expand[share(i1, 1)] w1[i1, i3]");
  /* U1: the factors of the unordered C_out come in sorted order; the
   * unsorted factorization (s, C_out/s) is the sorted one relabelled. */
  st_check_rule(SYNO_RULE_U1, conv, 0,
                "r0=sum(s^-1*C_in); in[i0, split(mod(i1, s), r0), i2, share(i3, 1)] expand[share(div(i1, s), 1)] "
                "w1[div(i1, s), i3]",
                "r0=sum(s^-1*C_in); in[i0, split(div(i1, s^-1*C_out), r0), i2, share(i3, 1)] expand[share(mod(i1, "
                "s^-1*C_out), 1)] "
                "w1[mod(i1, s^-1*C_out), i3]");
}

/* Switching any rule off only ever adds operators, and each rule that fires
 * in this space removes some. */
static void test_rules_only_remove(void **state) {
  (void)state;
  const char *json = SMALL "3}";
  char *on = st_space_ops(json, true, 0, NULL, NULL);
  char **lon;
  int non = st_sorted_lines(on, &lon);
  for (int r = 0; r < SYNO_RULE_COUNT; r++) {
    char *buf = st_space_ops(json, true, ST_RULE(r), NULL, NULL);
    char **loff;
    int noff = st_sorted_lines(buf, &loff);
    for (int i = 0, j = 0; i < non; i++) {
      while (j < noff && strcmp(loff[j], lon[i]) < 0) j++;
      if (j >= noff || strcmp(loff[j], lon[i])) fail_msg("%s off lost '%s'", syno_rule_name((syno_rule_t)r), lon[i]);
    }
    print_message("%s off: %d operators (%d with every rule on)\n", syno_rule_name((syno_rule_t)r), noff, non);
    free(loff);
    free(buf);
  }
  free(lon);
  free(on);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_specs),
      cmocka_unit_test(test_preset_search_settings),
      cmocka_unit_test(test_sampled_operators_are_real),
      cmocka_unit_test(test_distance_is_a_lower_bound),
      cmocka_unit_test(test_pruning_keeps_every_operator),
      cmocka_unit_test(test_group_bound_keeps_every_operator),
      cmocka_unit_test(test_caps_keep_exactly_the_capped_operators),
      cmocka_unit_test(test_flops_pruning_keeps_every_operator),
      cmocka_unit_test(test_walk_from_a_node),
      cmocka_unit_test(test_rules),
      cmocka_unit_test(test_rules_only_remove),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
