/* The canonicalization rules that do not fire in the small spaces of
 * test_space.c, each in a dedicated small space where it does (docs/semantics.md §5).
 * For each rule, exhaustive enumeration shows that with the rule on its
 * uncanonical form is never generated while the canonical twin is, that
 * with only that rule off the uncanonical form appears (so the rule is
 * what removes it), and that the space counted removals under the rule's
 * name (st_check_rule). The spaces switch off the primitives a rule does
 * not need, which keeps each enumeration to a fraction of a second.
 * S1, C1 and T2 need a variant of the check; their tests say why. U5
 * also shows that every operator it removes in its space has a twin.
 *
 * Twins marked "approximately" compute the same function except at the
 * zero-padded or wrapped border (docs/semantics.md §5 counts those as duplicates).
 * Twins that compute exactly the same function with weights of the same
 * shape (S1, T1, T3, T4) are also run on the same data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spacetest.h"
#include "syno/space.h"
#include "synotest.h"

/* For twins that compute exactly the same function with weights of the
 * same shapes: both operators, run on the same random input and weights,
 * give the same output. */
static void check_same_function(const char *vars, const char *input, const char *output, const char *a, const char *b) {
  const char *binds[] = {"", NULL};
  st_op_t oa, ob;
  st_op_make(&oa, vars, input, output, a, binds);
  st_op_make(&ob, vars, input, output, b, binds);
  assert_int_equal(oa.op.n_tensors, ob.op.n_tensors);
  syno_error_t err;
  syno_lowered_t *la = malloc(sizeof *la), *lb = malloc(sizeof *lb);
  if (syno_lower(&oa.op, la, &err) || syno_lower(&ob.op, lb, &err)) fail_msg("%s", err.msg);
  syno_rng_t rng;
  syno_rng_seed(&rng, 5, 0);
  float *t[SYNO_MAX_TENSORS] = {0};
  for (int i = 0; i < oa.op.n_tensors; i++) {
    int64_t na, nb;
    assert_int_equal(syno_tensor_numel(&oa.op, i, 0, &na, &err), 0);
    assert_int_equal(syno_tensor_numel(&ob.op, i, 0, &nb, &err), 0);
    assert_int_equal(na, nb);
    t[i] = st_random(&rng, na);
  }
  int64_t n;
  assert_int_equal(syno_output_numel(&oa.op, 0, &n, &err), 0);
  float *ya = st_forward(&oa, &la->forward, 0, t), *yb = st_forward(&ob, &lb->forward, 0, t);
  double e = st_rel_err(ya, yb, n);
  if (e > 1e-5) fail_msg("'%s' and '%s' differ: %g", a, b, e);
  for (int i = 0; i < oa.op.n_tensors; i++) free(t[i]);
  free(ya);
  free(yb);
  free(la);
  free(lb);
  st_op_free(&oa);
  st_op_free(&ob);
}

/* --- Shift --- */

/* [C: unordered, H] -> [C: unordered, H]: the channels can be shifted, and
 * so can the reductions (each is an unordered scope of its own). */
#define SHIFT_SPACE                                                                                      \
  "{\"input\": \"[C: unordered, H]\", \"output\": \"[C: unordered, H]\", \"vars\": \"C=4: 2, H=4: 2\", " \
  "\"min_weight_params\": 2, \"max_finalizations\": 4, \"max_reductions\": 1, "                          \
  "\"primitives\": {\"split\": false, \"merge\": false, \"unfold\": false}, \"depth\": 3}"

static void test_s1(void **state) {
  (void)state;
  /* Summing a rolled dim is summing the dim. A reduction is its own
   * unordered scope, so U2 removes the same form: S1 is shown with U2 off,
   * and with U2 on the form is absent even with S1 off. The rolled dim is
   * the input's unordered C, so U5 removes it too, and is off as well. */
  const char *unc = "r0=sum(C); in[shift(r0), share(i1, 1)] expand[share(i0, 1)] w1[i0, i1]";
  const char *twin = "r0=sum(C); in[r0, share(i1, 1)] expand[share(i0, 1)] w1[i0, i1]";
  st_check_rule(SYNO_RULE_S1, SHIFT_SPACE, ST_RULE(SYNO_RULE_U2) | ST_RULE(SYNO_RULE_U5), unc, twin);
  check_same_function("C=4: 2, H=4: 2", "[C: unordered, H]", "[C: unordered, H]", unc, twin);
  char *ops = st_space_ops(SHIFT_SPACE, true, ST_RULE(SYNO_RULE_S1), NULL, NULL);
  if (st_lines_have(ops, unc)) fail_msg("S1 off, U2 on: '%s' was generated", unc);
  free(ops);
}

static void test_u2(void **state) {
  (void)state;
  /* Rolling the unordered channels is a permutation the weight absorbs.
   * They meet the input's unordered C through the Share, so U5 (top-down)
   * removes the same form, and is off. */
  st_check_rule(SYNO_RULE_U2, SHIFT_SPACE, ST_RULE(SYNO_RULE_U5),
                "r0=sum(H); in[share(shift(i0), 1), r0] expand[share(i1, 1)] w1[i1, shift(i0)]",
                "r0=sum(H); in[share(i0, 1), r0] expand[share(i1, 1)] w1[i0, i1]");
}

#define S3_VARS                                                                                                \
  "\"vars\": \"C_in=2: 2, C_out=2: 2, H=16: 2; s=4: 2\", \"min_weight_params\": 2, \"max_finalizations\": 4, " \
  "\"max_reductions\": 1, \"depth\": 4"

static void test_s3(void **state) {
  (void)state;
  /* Shift generator: rolling all of [A*s] (s = 4 > max_shift_pattern 2) is
   * approximately rolling the minor block. */
  st_check_rule(SYNO_RULE_S3,
                "{\"input\": \"[C_in, H]\", \"output\": \"[C_out: unordered, s^-1*H, s]\", " S3_VARS
                ", \"primitives\": {\"merge\": false, \"unfold\": false}}",
                0, "r0=sum(C_in); in[share(r0, 1), shift(split(i1, i2))] expand[share(i0, 1)] w1[r0, i0]",
                "r0=sum(C_in); in[share(r0, 1), split(i1, shift(i2))] expand[share(i0, 1)] w1[r0, i0]");
  /* Merge generator: the mirror image, a merge with block s above a shift. */
  st_check_rule(SYNO_RULE_S3,
                "{\"input\": \"[C_in, s^-1*H, s]\", \"output\": \"[C_out: unordered, H]\", " S3_VARS
                ", \"primitives\": {\"split\": false, \"unfold\": false}}",
                0,
                "r0=sum(C_in); in[share(r0, 1), div(shift(i1), s), mod(shift(i1), s)] expand[share(i0, 1)] w1[r0, i0]",
                "r0=sum(C_in); in[share(r0, 1), div(i1, s), shift(mod(i1, s))] expand[share(i0, 1)] w1[r0, i0]");
}

static void test_s4(void **state) {
  (void)state;
  /* Unfolding a rolled dim offsets the window by one, which the weight
   * absorbs (approximately: the two differ at the border). */
  st_check_rule(SYNO_RULE_S4,
                "{\"input\": \"[H]\", \"output\": \"[C_out: unordered, H]\", \"vars\": \"C_out=2: 2, H=8: 2; k=3: 2\", "
                "\"min_weight_params\": 2, \"max_finalizations\": 4, \"max_reductions\": 1, "
                "\"primitives\": {\"split\": false, \"merge\": false}, \"depth\": 4}",
                0, "r0=sum(k); in[unfold(shift(i1), share(r0, 1))] expand[share(i0, 1)] w1[i0, r0]",
                "r0=sum(k); in[unfold(i1, share(r0, 1))] expand[share(i0, 1)] w1[i0, r0]");
}

/* --- Stride ---
 *
 * A stride's input discards data, so it must end in an unfold's window (a
 * dilated window) or under an unfold's position with a window of at least
 * 2s - 1 (a strided convolution): the spaces below have both. */

/* Windows of up to 27 = k^3 taps over H = 64. */
#define STRIDE_VARS "C_out=2: 2, H=64: 2; k=3: 3"
#define STRIDE_SPACE                                                                     \
  "{\"input\": \"[H]\", \"output\": \"[C_out: unordered, H]\", \"vars\": \"" STRIDE_VARS \
  "\", "                                                                                 \
  "\"min_weight_params\": 2, \"max_finalizations\": 4, \"max_reductions\": 2, "          \
  "\"primitives\": {\"stride\": true, \"merge\": false, \"shift\": false}, \"depth\": 6}"

static void test_t1(void **state) {
  (void)state;
  /* Stride k of stride k is stride k^2: the same dilated window. */
  const char *unc = "r0=sum(k); in[unfold(share(i1, 1), stride(stride(r0, k), k))] expand[share(i0, 1)] w1[i0, i1]",
             *twin = "r0=sum(k); in[unfold(share(i1, 1), stride(r0, k^2))] expand[share(i0, 1)] w1[i0, i1]";
  st_check_rule(SYNO_RULE_T1, STRIDE_SPACE, 0, unc, twin);
  check_same_function(STRIDE_VARS, "[H]", "[C_out: unordered, H]", unc, twin);
}

static void test_t3(void **state) {
  (void)state;
  /* x[k*(3*a + b)] = x[9*a + k*b]: a stride above a split is the split with
   * the stride on its minor side. (The two windows sum(k) are
   * interchangeable, so each form is written with the renaming U4 keeps.) */
  const char
      *unc = "r0=sum(k) r1=sum(k); in[unfold(i1, stride(split(share(r1, 1), r0), k))] expand[share(i0, 1)] w1[i0, r1]",
      *twin = "r0=sum(k) r1=sum(k); in[unfold(i1, split(share(r0, 1), stride(r1, k)))] expand[share(i0, 1)] w1[i0, r0]";
  st_check_rule(SYNO_RULE_T3, STRIDE_SPACE, 0, unc, twin);
  check_same_function(STRIDE_VARS, "[H]", "[C_out: unordered, H]", unc, twin);
}

static void test_t4(void **state) {
  (void)state;
  /* A merge with block k^2 above a stride k is a merge with block k whose
   * minor half is strided: div(k*a, k^2) = div(a, k), mod(k*a, k^2) =
   * k*mod(a, k). The halves are the windows of two unfolds. */
  const char *unc =
                 "in[unfold(i2, div(stride(i1, k), k^2)), share(unfold(i3, mod(stride(i1, k), k^2)), 1)] "
                 "expand[share(i0, 1)] w1[i0, unfold(i3, mod(stride(i1, k), k^2))]",
             *twin =
                 "in[unfold(i2, div(i1, k)), share(unfold(i3, stride(mod(i1, k), k)), 1)] expand[share(i0, 1)] "
                 "w1[i0, unfold(i3, stride(mod(i1, k), k))]";
  st_check_rule(
      SYNO_RULE_T4,
      "{\"input\": \"[X, Y]\", \"output\": \"[C_out: unordered, k^2, X, Y]\", "
      "\"vars\": \"C_out=2: 2, X=8: 2, Y=20: 2; k=3: 4\", \"min_weight_params\": 2, \"max_finalizations\": 4, "
      "\"max_reductions\": 0, \"primitives\": {\"stride\": true, \"split\": false, \"shift\": false}, \"depth\": 5}",
      0, unc, twin);
  check_same_function("C_out=2: 2, X=8: 2, Y=20: 2; k=3: 4", "[X, Y]", "[C_out: unordered, k^2, X, Y]", unc, twin);
}

static void test_t2(void **state) {
  (void)state;
  /* T2 is a restriction, not a canonicalization: in the original (docs/semantics.md §5.3) a
   * stride of an unfold's position can never be absorbed, so it only cuts dead ends. Here
   * an unfold above can absorb it (window k >= 2s - 1 under the position, the
   * strided convolution), and the removed form - an unfold, a stride, then a
   * dilated unfold over the strided grid - is a legal operator with no twin
   * in the space. The test shows that T2 is what removes it. */
  const char *json =
      "{\"input\": \"[s*H]\", \"output\": \"[C_out: unordered, H]\", \"vars\": \"C_out=2: 2, H=8: 2; k=3: 3, s=2: 2\", "
      "\"min_weight_params\": 2, \"max_finalizations\": 4, \"max_reductions\": 2, "
      "\"primitives\": {\"stride\": true, \"split\": false, \"merge\": false, \"shift\": false}, \"depth\": 6}";
  const char *removed =
      "r0=sum(k) r1=sum(k); in[unfold(stride(unfold(i1, share(r1, 1)), s), share(r0, 1))] expand[share(i0, 1)] w1[i0, "
      "r1, r0]";
  syno_space_stats_t st;
  char *on = st_space_ops(json, true, 0, &st, NULL), *off = st_space_ops(json, true, ST_RULE(SYNO_RULE_T2), NULL, NULL);
  if (st_lines_have(on, removed)) fail_msg("T2 on: '%s' was generated", removed);
  if (!st_lines_have(off, removed)) fail_msg("T2 off: '%s' was not generated", removed);
  assert_true(st.rule[SYNO_RULE_T2] > 0);
  print_message("T2: %llu removals counted\n", (unsigned long long)st.rule[SYNO_RULE_T2]);
  /* The strided convolution itself (the stride below the unfold) is kept. */
  assert_true(st_lines_have(on, "r0=sum(k); in[unfold(stride(i1, s), share(r0, 1))] expand[share(i0, 1)] w1[i0, r0]"));
  free(on);
  free(off);
}

static void test_stride_of_share_data(void **state) {
  (void)state;
  /* Not a rule: the data side of a Share may be strided. The weight then
   * reads a dilated window (the dilated convolution), and no other spelling
   * of it is in the space. */
  char *ops = st_space_ops(STRIDE_SPACE, true, 0, NULL, NULL);
  const char *dilated = "r0=sum(k); in[unfold(i1, stride(share(r0, 1), k))] expand[share(i0, 1)] w1[i0, r0]";
  if (!st_lines_have(ops, dilated)) fail_msg("'%s' was not generated", dilated);
  free(ops);
}

/* --- Unfold --- */

static void test_o1(void **state) {
  (void)state;
  /* Two unfolds of one axis add their offsets: windows k then k^2 (the
   * larger nearer the input) is the one order kept (approximately equal:
   * the zero padding of the intermediate position differs at the border). */
  st_check_rule(
      SYNO_RULE_O1,
      "{\"input\": \"[H]\", \"output\": \"[C_out: unordered, H]\", \"vars\": \"C_out=2: 2, H=20: 2; k=3: 3\", "
      "\"min_weight_params\": 2, \"max_finalizations\": 4, \"max_reductions\": 2, "
      "\"primitives\": {\"split\": false, \"merge\": false, \"shift\": false}, \"depth\": 5}",
      0,
      "r0=sum(k) r1=sum(k^2); in[unfold(unfold(i1, share(r1, 1)), share(r0, 1))] expand[share(i0, 1)] w1[i0, r0, r1]",
      "r0=sum(k) r1=sum(k^2); in[unfold(unfold(i1, share(r0, 1)), share(r1, 1))] expand[share(i0, 1)] w1[i0, r0, r1]");
}

#define BLOCK_VARS                                                                                          \
  "\"vars\": \"C_out=2: 2, H=64: 2; k=3: 2, s=8: 2\", \"min_weight_params\": 2, \"max_finalizations\": 4, " \
  "\"max_reductions\": 1, \"depth\": 4"

static void test_o2(void **state) {
  (void)state;
  /* Unfolding [H] and then splitting it into blocks of s is approximately
   * unfolding each block (they differ at the block borders). */
  st_check_rule(SYNO_RULE_O2,
                "{\"input\": \"[H]\", \"output\": \"[C_out: unordered, s^-1*H, s]\", " BLOCK_VARS
                ", \"primitives\": {\"merge\": false, \"shift\": false}}",
                0, "r0=sum(k); in[unfold(split(i1, i2), share(r0, 1))] expand[share(i0, 1)] w1[i0, r0]",
                "r0=sum(k); in[split(i1, unfold(i2, share(r0, 1)))] expand[share(i0, 1)] w1[i0, r0]");
}

static void test_o3(void **state) {
  (void)state;
  /* Merging [H/s, s] and then unfolding with k <= s is approximately
   * unfolding the minor block s and then merging. */
  st_check_rule(SYNO_RULE_O3,
                "{\"input\": \"[s^-1*H, s]\", \"output\": \"[C_out: unordered, H]\", " BLOCK_VARS
                ", \"primitives\": {\"split\": false, \"shift\": false}}",
                0,
                "r0=sum(k); in[div(unfold(i1, share(r0, 1)), s), mod(unfold(i1, share(r0, 1)), s)] expand[share(i0, "
                "1)] w1[i0, r0]",
                "r0=sum(k); in[div(i1, s), unfold(mod(i1, s), share(r0, 1))] expand[share(i0, 1)] w1[i0, r0]");
}

/* --- Contractions --- */

static void test_c2(void **state) {
  (void)state;
  /* Two contractions that do not touch each other ({C_in, C_out} and
   * {H, H}) generated in either order are one operator with the weight
   * ids swapped. */
  st_check_rule(
      SYNO_RULE_C2,
      "{\"input\": \"[C_in, H]\", \"output\": \"[C_out: unordered, H]\", \"vars\": \"C_in=2: 2, C_out=2: 2, H=4: 3\", "
      "\"min_weight_params\": 2, \"max_finalizations\": 4, \"max_reductions\": 2, \"max_tensors\": 3, "
      "\"primitives\": {\"split\": false, \"merge\": false, \"shift\": false, \"unfold\": false}, \"depth\": 4}",
      0,
      "r0=sum(H) r1=sum(C_in); in[share(r1, 2), share(r0, 1)] expand[share(i0, 2), share(i1, 1)] w1[r0, i1] w2[r1, i0]",
      "r0=sum(H) r1=sum(C_in); in[share(r1, 1), share(r0, 2)] expand[share(i0, 1), share(i1, 2)] w1[r1, i0] w2[r0, "
      "i1]");
}

/* C1 removes paths, not operators: a view generated after a contraction it
 * does not touch reaches the same interface as the view generated first,
 * and equal interfaces are one node. So C1 is checked on the space's
 * steps: a Shift, Stride, Merge or Expand step on a dim without the latest
 * weight below it, or a Split step with neither dim above it, is
 * uncanonical. */

/* A dim as text, from the leaves up, to compare nodes across spaces. */
static size_t dim_text(const syno_graph_t *g, syno_dim_t d, char *buf, size_t n) {
  const syno_dimension_t *dm = syno_graph_dim(g, d);
  char sz[96];
  syno_size_print(syno_graph_vars(g), dm->size, sz, sizeof sz);
  if (dm->kind == SYNO_DIM_ITERATOR) return (size_t)snprintf(buf, n, "i%d", dm->index);
  if (dm->kind == SYNO_DIM_REDUCE) return (size_t)snprintf(buf, n, "r(%s,%d)", sz, dm->index);
  const syno_prim_t *p = syno_graph_prim(g, dm->prim);
  size_t len = (size_t)snprintf(buf, n, "%s.%d(", syno_prim_name(p->kind), dm->slot);
  for (int i = 0; i < p->n_out && len < n; i++) {
    len += dim_text(g, p->out[i], buf + len, n - len);
    if (len < n) len += (size_t)snprintf(buf + len, n - len, ",");
  }
  char param[96];
  syno_size_print(syno_graph_vars(g), p->param, param, sizeof param);
  if (len < n) len += (size_t)snprintf(buf + len, n - len, "%s,w%d)", param, p->weight);
  return len;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A node as text: its stage and its dims, sorted. */
static char *node_text(syno_space_t *s, uint32_t node) {
  const syno_dim_t *dims;
  int n = syno_node_dims(s, node, &dims);
  char *parts[64], *out = malloc(8192);
  for (int i = 0; i < n; i++) {
    parts[i] = malloc(1024);
    dim_text(syno_space_graph(s), dims[i], parts[i], 1024);
  }
  qsort(parts, (size_t)n, sizeof *parts, cmp_str);
  size_t len = (size_t)snprintf(out, 8192, "%d:", (int)syno_node_stage(s, node));
  for (int i = 0; i < n; i++) {
    if (len < 8192) len += (size_t)snprintf(out + len, 8192 - len, " %s", parts[i]);
    free(parts[i]);
  }
  if (len >= 8192) fail_msg("node %u: description too long", node);
  return out;
}

typedef struct {
  int n_nodes, n_bad, bad_kind[SYNO_PRIM_KINDS];
  char **nodes, **bad_targets;
  syno_space_stats_t stats;
} c1_walk_t;

/* Whether step st of node `node` is a simple view (or split) that does not
 * touch the node's latest weight. */
static bool c1_uncanonical(syno_space_t *s, uint32_t node, const syno_step_t *st) {
  if (st->kind != SYNO_STEP_PRIM) return false;
  const syno_graph_t *g = syno_space_graph(s);
  const syno_dim_t *dims;
  int n = syno_node_dims(s, node, &dims), latest = 0;
  for (int i = 0; i < n; i++) {
    const syno_prim_t *p = syno_graph_below(g, dims[i]);
    if (p && p->kind == SYNO_PRIM_SHARE && syno_graph_dim(g, dims[i])->slot == 1 && p->weight > latest)
      latest = p->weight;
  }
  if (latest == 0 || st->prim == SYNO_PRIM_UNFOLD) return false;
  const syno_prim_t *p = syno_graph_prim(g, st->prim_id);
  for (int i = 0; i < p->n_out; i++)
    if (syno_graph_color(g, p->out[i])->weights_below & (1u << latest)) return false;
  return true;
}

static void c1_walk(const char *json, uint32_t off, c1_walk_t *w) {
  syno_space_spec_t spec;
  syno_error_t err;
  if (syno_space_spec_from_json(json, &spec, &err)) fail_msg("%s", err.msg);
  for (int r = 0; r < SYNO_RULE_COUNT; r++)
    if (off & ST_RULE(r)) spec.opts.rule[r] = false;
  syno_space_t *s;
  assert_int_equal(syno_space_new(&spec, &s, &err), 0);
  memset(w, 0, sizeof *w);
  /* Node ids are dense, and a node is on the stack at most once. */
  size_t cap = 1 << 12, n_seen = cap, cap_bad = cap;
  uint32_t *stack = malloc(cap * sizeof *stack);
  bool *seen = calloc(n_seen, 1);
  w->nodes = malloc(cap * sizeof *w->nodes);
  w->bad_targets = malloc(cap_bad * sizeof *w->bad_targets);
  size_t top = 0;
  stack[top++] = syno_space_root(s);
  seen[syno_space_root(s)] = true;
  while (top > 0) {
    uint32_t node = stack[--top];
    if ((size_t)w->n_nodes == cap) {
      cap *= 2;
      stack = realloc(stack, cap * sizeof *stack);
      w->nodes = realloc(w->nodes, cap * sizeof *w->nodes);
    }
    w->nodes[w->n_nodes++] = node_text(s, node);
    const syno_step_t *steps;
    int n = syno_node_children(s, node, &steps, &err);
    assert_true(n >= 0);
    for (int i = 0; i < n; i++) {
      syno_step_t st = steps[i];
      if (st.kind == SYNO_STEP_FINALIZE) continue;
      if (c1_uncanonical(s, node, &st)) {
        if ((size_t)w->n_bad == cap_bad)
          w->bad_targets = realloc(w->bad_targets, (cap_bad *= 2) * sizeof *w->bad_targets);
        w->bad_targets[w->n_bad++] = node_text(s, st.target);
        w->bad_kind[st.prim]++;
      }
      if (st.target >= n_seen) {
        size_t nn = 2 * (size_t)st.target;
        seen = realloc(seen, nn);
        memset(seen + n_seen, 0, nn - n_seen);
        n_seen = nn;
      }
      if (!seen[st.target]) {
        seen[st.target] = true;
        if (top == cap) {
          cap *= 2;
          stack = realloc(stack, cap * sizeof *stack);
          w->nodes = realloc(w->nodes, cap * sizeof *w->nodes);
        }
        stack[top++] = st.target;
      }
    }
  }
  qsort(w->nodes, (size_t)w->n_nodes, sizeof *w->nodes, cmp_str);
  w->stats = *syno_space_stats(s);
  free(stack);
  free(seen);
  syno_space_free(s);
}

static void c1_free(c1_walk_t *w) {
  for (int i = 0; i < w->n_nodes; i++) free(w->nodes[i]);
  for (int i = 0; i < w->n_bad; i++) free(w->bad_targets[i]);
  free(w->nodes);
  free(w->bad_targets);
}

#define SPLIT_STRIDE_C1                                                                                                \
  "{\"input\": \"[C_in, H]\", \"output\": \"[C_out: unordered, s^-1*H, s]\", "                                         \
  "\"vars\": \"C_in=2: 2, C_out=2: 2, H=8: 2; s=2: 2\", \"min_weight_params\": 2, \"max_finalizations\": 4, "          \
  "\"max_reductions\": 1, \"primitives\": {\"merge\": false, \"shift\": false, \"unfold\": false, \"stride\": true}, " \
  "\"depth\": 4}"

static void check_c1(const char *json, const syno_prim_kind_t *kinds, int n_kinds) {
  c1_walk_t on, off;
  c1_walk(json, 0, &on);
  c1_walk(json, ST_RULE(SYNO_RULE_C1), &off);
  if (on.n_bad)
    fail_msg("C1 on: %d views after a contraction they do not touch, e.g. to %s", on.n_bad, on.bad_targets[0]);
  for (int k = 0; k < n_kinds; k++)
    if (!off.bad_kind[kinds[k]])
      fail_msg("C1 off: no %s after a contraction it does not touch", syno_prim_name(kinds[k]));
  assert_true(on.stats.rule[SYNO_RULE_C1] > 0);
  /* Each such step leads to an interface that the canonical order (the view
   * first, then the contraction) reaches with C1 on. */
  for (int i = 0; i < off.n_bad; i++)
    if (!bsearch(&off.bad_targets[i], on.nodes, (size_t)on.n_nodes, sizeof *on.nodes, cmp_str))
      fail_msg("C1 off: '%s' has no canonical path", off.bad_targets[i]);
  print_message(
      "C1: %d nodes on, %d off; %d uncanonical steps off (%d shift, %d merge, %d stride, %d expand, %d split), "
      "%llu removals counted\n",
      on.n_nodes, off.n_nodes, off.n_bad, off.bad_kind[SYNO_PRIM_SHIFT], off.bad_kind[SYNO_PRIM_MERGE],
      off.bad_kind[SYNO_PRIM_STRIDE], off.bad_kind[SYNO_PRIM_EXPAND], off.bad_kind[SYNO_PRIM_SPLIT],
      (unsigned long long)on.stats.rule[SYNO_RULE_C1]);
  /* The operators are the same either way. */
  char *a = st_space_ops(json, true, 0, NULL, NULL), *b = st_space_ops(json, true, ST_RULE(SYNO_RULE_C1), NULL, NULL);
  char **la, **lb;
  int na = st_sorted_lines(a, &la), nb = st_sorted_lines(b, &lb);
  assert_int_equal(na, nb);
  assert_true(na > 0);
  for (int i = 0; i < na; i++) assert_string_equal(la[i], lb[i]);
  free(la);
  free(lb);
  free(a);
  free(b);
  c1_free(&on);
  c1_free(&off);
}

static void test_c1(void **state) {
  (void)state;
  /* [C_in, H] -> [C_out, H]: shift(H), merges of C_out and H and the
   * broadcast of a merge half commute with the contraction over C_in and
   * C_out ... */
  const syno_prim_kind_t views[] = {SYNO_PRIM_SHIFT, SYNO_PRIM_MERGE, SYNO_PRIM_EXPAND};
  check_c1(
      "{\"input\": \"[C_in, H]\", \"output\": \"[C_out: unordered, H]\", "
      "\"vars\": \"C_in=2: 2, C_out=4: 2, H=4: 2; s=2: 2\", \"min_weight_params\": 2, \"max_finalizations\": 4, "
      "\"max_reductions\": 1, \"primitives\": {\"unfold\": false, \"expand\": true}, \"depth\": 4}",
      views, 3);
  /* ... and so do splits and strides of the dims it does not touch. */
  const syno_prim_kind_t split_stride[] = {SYNO_PRIM_SPLIT, SYNO_PRIM_STRIDE};
  check_c1(SPLIT_STRIDE_C1, split_stride, 2);
}

/* --- Unorderedness --- */

static void test_u3(void **state) {
  (void)state;
  /* Splitting the two halves of a merge of the unordered [C^2] back in
   * swapped order is a channel permutation (a transpose of C x C). */
  st_check_rule(SYNO_RULE_U3,
                "{\"input\": \"[C^2, H]\", \"output\": \"[C^2: unordered, H]\", \"vars\": \"C=2: 4, H=4: 2\", "
                "\"min_weight_params\": 2, \"max_finalizations\": 4, \"max_reductions\": 1, "
                "\"primitives\": {\"shift\": false, \"unfold\": false}, \"depth\": 4}",
                0,
                "r0=sum(H); in[share(split(mod(i0, C), div(i0, C)), 1), r0] expand[share(i1, 1)] "
                "w1[i1, split(mod(i0, C), div(i0, C))]",
                "r0=sum(H); in[share(i0, 1), r0] expand[share(i1, 1)] w1[i1, i0]");
}

/* Spec (b) of docs/space.md ("Against the original") at a depth. */
#define B_SPACE(depth)                                                                                             \
  "{\"input\": \"[N, C_in: unordered, H, W]\", \"output\": \"[N, C_out: unordered, H, W]\", "                      \
  "\"vars\": \"N=3: 0, C_in=3: 2, C_out=8: 2, H=64: 0, W=64: 0; k_1=3: 4, s_1=2: 0\", \"fixed\": [[0, 0]], "       \
  "\"depth\": " #depth                                                                                             \
  ", \"max_chain\": 5, \"max_tensors\": 3, \"max_reductions\": 3, \"max_flops\": 5e6, "                            \
  "\"primitives\": {\"stride\": true}, \"min_weight_params\": 1, \"max_rdom_multiplier\": 32, "                    \
  "\"max_finalizations\": 5, \"max_shift_pattern\": 5.0, \"max_expansion_merge\": 512, \"max_vars_in_size\": -1, " \
  "\"max_powers_in_size\": -1}"

/* Every operator the rule removes from the space `json` has a twin that it
 * keeps: one with the same form up to a permutation of the input's
 * unordered axes and a relayout of the weights (st_space_uforms). */
static void check_removes_duplicates(syno_rule_t rule, const char *json) {
  char *text[2] = {st_space_uforms(json, 0, NULL), st_space_uforms(json, ST_RULE(rule), NULL)};
  char **lines[2];
  int n[2];
  for (int k = 0; k < 2; k++) n[k] = st_sorted_lines(text[k], &lines[k]);
  char **forms = malloc(sizeof(char *) * (size_t)(n[0] + 1));
  for (int i = 0; i < n[0]; i++) {
    forms[i] = strdup(lines[0][i]);
    *strchr(forms[i], '\t') = 0;
  }
  int removed = 0;
  for (int i = 0, j = 0; i < n[1]; i++) {
    while (j < n[0] && strcmp(lines[0][j], lines[1][i]) < 0) j++;
    if (j < n[0] && !strcmp(lines[0][j], lines[1][i])) continue; /* kept */
    removed++;
    char *tab = strchr(lines[1][i], '\t');
    *tab = 0;
    bool twin = false;
    for (int k = 0; k < n[0] && !twin; k++) twin = !strcmp(forms[k], lines[1][i]);
    if (!twin) fail_msg("%s removed '%s', which has no twin", syno_rule_name(rule), tab + 1);
  }
  print_message("%s: %d operators on, %d off, each of the %d removed has a twin\n", syno_rule_name(rule), n[0], n[1],
                removed);
  assert_true(removed > 0);
  assert_int_equal(n[1] - n[0], removed);
  for (int i = 0; i < n[0]; i++) free(forms[i]);
  free(forms);
  for (int k = 0; k < 2; k++) {
    free(lines[k]);
    free(text[k]);
  }
}

static void test_u5(void **state) {
  (void)state;
  /* C_in = 3 = k_1 * (k_1^-1 * C_in): the input's unordered axis split with
   * the larger factor minor is the other split with the input's channels
   * permuted (which the layer before absorbs). */
  st_check_rule(SYNO_RULE_U5, B_SPACE(4), 0,
                "r0=sum(k_1) r1=sum(k_1^-1*C_in); in[i0, split(r1, share(r0, 1)), i2, i3] expand[share(i1, 1)] w1[i1, "
                "r0]",
                "r0=sum(k_1) r1=sum(k_1^-1*C_in); in[i0, split(share(r0, 1), r1), i2, i3] expand[share(i1, 1)] w1[i1, "
                "r0]");
  /* One step deeper (rolls of C_in too, 11 removed), every removal is such a
   * renumbering. Deeper, U5 also removes a roll of C_in merged with a
   * broadcast, which is not (docs/space.md). */
  check_removes_duplicates(SYNO_RULE_U5, B_SPACE(5));
}

/* A rule that keeps one spelling of each function (U4, C4), checked with
 * the operators' normal forms (syno/normal.h: reduction loops renamed
 * canonically, weights' layout and numbering free, so every spelling of one
 * function has one form). On the space `json`, with the rules in `base` off
 * throughout, and the rule on and off:
 *  - the same set of forms: the rule loses no function;
 *  - with `strict`: with the rule off, some forms are shared by two
 *    operators; with it on, none is (so exactly one spelling of each is
 *    kept);
 *  - with the rule on, the space counted removals under it. */
static void check_one_spelling(syno_rule_t rule, uint32_t base, bool strict, const char *json) {
  const char *name = syno_rule_name(rule);
  syno_space_stats_t st;
  char *text[2] = {st_space_forms(json, base, &st), st_space_forms(json, base | ST_RULE(rule), NULL)};
  if (st.rule[rule] == 0) fail_msg("%s on: the space counted no removal by %s", name, name);
  char **lines[2], **forms[2];
  int n[2], nf[2] = {0, 0}, pairs[2] = {0, 0};
  for (int k = 0; k < 2; k++) {
    n[k] = st_sorted_lines(text[k], &lines[k]);
    forms[k] = malloc(sizeof(char *) * (size_t)(n[k] + 1));
    for (int i = 0; i < n[k]; i++) {
      char *tab = strchr(lines[k][i], '\t');
      assert_non_null(tab);
      *tab = 0;
      if (nf[k] && !strcmp(forms[k][nf[k] - 1], lines[k][i])) {
        if (k == 0 && strict)
          fail_msg("%s on: '%s' and '%s' compute one function", name, lines[k][i - 1] + strlen(lines[k][i - 1]) + 1,
                   tab + 1);
        pairs[k]++;
        continue;
      }
      forms[k][nf[k]++] = lines[k][i];
    }
  }
  if (strict && pairs[1] == 0)
    fail_msg("%s off: no function has two spellings, so the space does not test %s", name, name);
  assert_int_equal(nf[0], nf[1]);
  for (int i = 0; i < nf[0]; i++)
    if (strcmp(forms[0][i], forms[1][i]))
      fail_msg("%s changed the functions of the space: '%s' vs '%s'", name, forms[0][i], forms[1][i]);
  print_message("%s: %d operators on, %d off (%d pairs with one form), %d functions, %llu removals counted\n", name,
                n[0], n[1], pairs[1], nf[0], (unsigned long long)st.rule[rule]);
  for (int k = 0; k < 2; k++) {
    free(forms[k]);
    free(lines[k]);
    free(text[k]);
  }
}

#define TWINS_SPACE(extra)                                                        \
  "{\"input\": \"[C_in: unordered, H]\", \"output\": \"[C_out: unordered, H]\", " \
  "\"vars\": \"C_in=4: 2, C_out=4: 2, H=8: 2; k=3: 4, s=2: 2\", \"min_weight_params\": 8, \"depth\": 6" extra "}"

static void test_u4(void **state) {
  (void)state;
  /* Two windows sum(k) unfolded in either order and shared into the weight
   * are one operator. With two weights, C2 orders independent contractions
   * by their leaders' hashes, which a renaming changes; the functions must
   * not change. C4 would drop the renamed spellings at finalization, so it
   * is off in the first check; in the second it removes what U4 leaves
   * (weights that trade dims), and only the functions are compared. */
  check_one_spelling(SYNO_RULE_U4, ST_RULE(SYNO_RULE_C4), true, TWINS_SPACE(""));
  check_one_spelling(SYNO_RULE_U4, 0, false, TWINS_SPACE(", \"max_tensors\": 3"));
}

static void test_c4(void **state) {
  (void)state;
  /* Two weights that trade dims (w1[r0, D1, u] w2[D2, u] and w1[D2, u]
   * w2[r0, D1, u]) or stack on a dim in either order are one function: 330
   * pairs among 6,258 operators without C4. */
  check_one_spelling(SYNO_RULE_C4, 0, true, TWINS_SPACE(", \"max_tensors\": 3"));
  /* Its key is the least over the renamings of equal reductions, so alone
   * it also drops what U4 prunes, and the spellings that combine a renaming
   * with a trade of weights (four weights, two reductions sum(k*s)). */
  check_one_spelling(SYNO_RULE_C4, ST_RULE(SYNO_RULE_U4), true, TWINS_SPACE(", \"max_tensors\": 3"));
  check_one_spelling(SYNO_RULE_C4, 0, true,
                     "{\"preset\": \"conv2d-wide\", \"bind\": \"N=2, C_in=4, C_out=8, H=8, W=8\", \"depth\": 6, "
                     "\"max_tensors\": 4, \"max_reductions\": 3}");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_s1), cmocka_unit_test(test_u2), cmocka_unit_test(test_s3),
      cmocka_unit_test(test_s4), cmocka_unit_test(test_t1), cmocka_unit_test(test_t2),
      cmocka_unit_test(test_t3), cmocka_unit_test(test_t4), cmocka_unit_test(test_stride_of_share_data),
      cmocka_unit_test(test_o1), cmocka_unit_test(test_o2), cmocka_unit_test(test_o3),
      cmocka_unit_test(test_c1), cmocka_unit_test(test_c2), cmocka_unit_test(test_u3),
      cmocka_unit_test(test_u4), cmocka_unit_test(test_c4), cmocka_unit_test(test_u5),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
