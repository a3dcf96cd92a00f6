/* The normal form of lowered operators: pairs that must share a form (weight
 * axes permuted, reductions declared in another order, weights swapped,
 * windows of one size swapped, algebraically equal index expressions,
 * guards reordered) and pairs that must not (other offsets, strides,
 * extents, transposed input, Sum vs Mean). Soundness is checked
 * empirically: whenever two nests share a form, the interpreter gives the
 * same output on one random input, with each weight laid out as the form's
 * map says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/grow.h"
#include "syno/normal.h"
#include "synotest.h"

#define NF_LEN 8192

static void nf_nest(const syno_nest_t *n, const syno_vars_t *v, char *buf, syno_normal_map_t *map) {
  syno_error_t err = {{0}};
  if (syno_nest_normal_form_map(n, v, buf, NF_LEN, map, &err) < 0) fail_msg("normal form: %s", err.msg);
}

/* --- numerical comparison of two nests with one normal form --- */

static int64_t eval_size(const syno_vars_t *v, syno_size_t s, int b) {
  int64_t x;
  syno_error_t err;
  if (syno_size_eval(v, s, b, &x, &err)) fail_msg("%s", err.msg);
  return x;
}

/* dst (original layout, dims odims) from canon (canonical layout):
 * canonical axis j is original axis axis[j]. */
static void relayout(const float *canon, float *dst, const int64_t *odims, int rank, const int *axis) {
  int64_t idx[SYNO_MAX_RANK] = {0}, numel = 1;
  for (int i = 0; i < rank; i++) numel *= odims[i];
  for (int64_t o = 0; o < numel; o++) {
    int64_t c = 0;
    for (int j = 0; j < rank; j++) c = c * odims[axis[j]] + idx[axis[j]];
    dst[o] = canon[c];
    for (int i = rank - 1; i >= 0; i--) {
      if (++idx[i] < odims[i]) break;
      idx[i] = 0;
    }
  }
}

static float *run_mapped(const syno_nest_t *n, const syno_vars_t *v, int b, const syno_normal_map_t *map,
                         float *const *canon, int64_t *numel_out) {
  float *tensors[SYNO_MAX_TENSORS] = {0}, *gout = NULL, *owned[SYNO_MAX_TENSORS] = {0};
  for (int p = 0; p < map->n_factors; p++) {
    const syno_access_t *a = &n->factor[map->factor[p]];
    int64_t od[SYNO_MAX_RANK], numel = 1;
    for (int i = 0; i < a->rank; i++) numel *= od[i] = eval_size(v, a->dim[i], b);
    owned[p] = malloc(sizeof(float) * (size_t)(numel ? numel : 1));
    assert_non_null(owned[p]);
    /* Only weights may be relaid out; in and grad_out keep their layout
     * whatever the map says, so a form that permuted them would fail here. */
    int ident[SYNO_MAX_RANK];
    for (int j = 0; j < a->rank; j++) ident[j] = j;
    relayout(canon[p], owned[p], od, a->rank, a->tensor >= 1 ? map->axis[p] : ident);
    if (a->tensor < 0)
      gout = owned[p];
    else
      tensors[a->tensor] = owned[p];
  }
  syno_error_t err;
  int64_t numel;
  if (syno_nest_target_numel(n, v, b, &numel, &err)) fail_msg("%s", err.msg);
  float *out = malloc(sizeof(float) * (size_t)(numel ? numel : 1));
  assert_non_null(out);
  if (syno_interp_nest(n, v, b, (const float *const *)tensors, gout, out, &err)) fail_msg("%s", err.msg);
  for (int p = 0; p < map->n_factors; p++) free(owned[p]);
  *numel_out = numel;
  return out;
}

/* Fails unless a and b share a normal form and compute the same output
 * under binding bind, weights related by the maps. */
static void check_same_function(const syno_nest_t *a, const syno_vars_t *va, const syno_nest_t *b,
                                const syno_vars_t *vb, int bind, const char *what) {
  char *fa = malloc(NF_LEN), *fb = malloc(NF_LEN);
  syno_normal_map_t ma, mb;
  nf_nest(a, va, fa, &ma);
  nf_nest(b, vb, fb, &mb);
  if (strcmp(fa, fb)) fail_msg("%s: forms differ:\n  %s\n  %s", what, fa, fb);
  assert_int_equal(ma.n_factors, mb.n_factors);
  syno_rng_t rng;
  syno_rng_seed(&rng, 77, 3);
  float *canon[SYNO_MAX_TENSORS] = {0};
  for (int p = 0; p < ma.n_factors; p++) {
    const syno_access_t *f = &a->factor[ma.factor[p]];
    int64_t numel = 1;
    for (int j = 0; j < f->rank; j++) numel *= eval_size(va, f->dim[ma.axis[p][j]], bind);
    canon[p] = st_random(&rng, numel);
  }
  int64_t na, nb;
  float *oa = run_mapped(a, va, bind, &ma, canon, &na), *ob = run_mapped(b, vb, bind, &mb, canon, &nb);
  assert_int_equal(na, nb);
  double e = st_rel_err(oa, ob, na);
  if (e > 1e-5) fail_msg("%s: one normal form but outputs differ (relative error %g):\n  %s", what, e, fa);
  free(oa);
  free(ob);
  for (int p = 0; p < ma.n_factors; p++) free(canon[p]);
  free(fa);
  free(fb);
}

/* --- hand-built nests: expressions and guards --- */

static syno_size_t sz(const syno_vars_t *v, const char *text) {
  syno_size_t s;
  syno_error_t err;
  if (syno_size_parse(v, text, &s, &err)) fail_msg("%s", err.msg);
  return s;
}

static int16_t node(syno_nest_t *n, syno_expr_t e) {
  assert_true(n->n_nodes < SYNO_MAX_NODES);
  n->node[n->n_nodes] = e;
  return (int16_t)n->n_nodes++;
}
static int16_t OUT(syno_nest_t *n, int v) { return node(n, (syno_expr_t){.kind = SYNO_EXPR_OUTER, .var = v}); }
static int16_t RI(syno_nest_t *n, int v) { return node(n, (syno_expr_t){.kind = SYNO_EXPR_INNER, .var = v}); }
static int16_t IMM(syno_nest_t *n, int64_t x) { return node(n, (syno_expr_t){.kind = SYNO_EXPR_IMM, .imm = x}); }
static int16_t SZ(syno_nest_t *n, syno_size_t s) { return node(n, (syno_expr_t){.kind = SYNO_EXPR_SIZE, .size = s}); }
static int16_t BIN(syno_nest_t *n, syno_expr_kind_t k, int16_t a, int16_t b) {
  return node(n, (syno_expr_t){.kind = k, .a = a, .b = b});
}
#define ADD(a, b) BIN(n, SYNO_EXPR_ADD, a, b)
#define SUB(a, b) BIN(n, SYNO_EXPR_SUB, a, b)
#define MUL(a, b) BIN(n, SYNO_EXPR_MUL, a, b)
#define DIV(a, b) BIN(n, SYNO_EXPR_DIV, a, b)
#define MOD(a, b) BIN(n, SYNO_EXPR_MOD, a, b)

static void hand_vars(syno_vars_t *v) {
  syno_error_t err;
  syno_vars_init(v);
  if (syno_vars_declare(v, "H, W; k=3", &err) || syno_vars_bind(v, "H=6, W=4", &err)) fail_msg("%s", err.msg);
}

/* out[i0 < H] = sum_{ri_0 < k, ri_1 < W} in[restrict(e, 0, H)] * w1[ri_0, ri_1],
 * with e built by `index`; ri_0 and ri_1 swap roles when `swapped`. */
typedef int16_t (*index_fn)(syno_nest_t *n, const syno_vars_t *v, int ra, int rb);

static void hand_nest(syno_nest_t *n, const syno_vars_t *v, index_fn index, bool swapped, bool hoisted) {
  memset(n, 0, sizeof *n);
  n->target = -1;
  n->divisor = syno_size_one();
  n->n_outer = 1;
  n->outer[0] = sz(v, "H");
  n->n_inner = 2;
  int ra = swapped ? 1 : 0, rb = swapped ? 0 : 1; /* ra: extent k, rb: extent W */
  n->inner[ra] = sz(v, "k");
  n->inner[rb] = sz(v, "W");
  int16_t e = index(n, v, ra, rb), h = SZ(n, sz(v, "H"));
  n->n_factors = 2;
  n->factor[0] = (syno_access_t){.tensor = 0, .rank = 1};
  n->factor[0].dim[0] = sz(v, "H");
  if (hoisted) {
    n->factor[0].idx[0] = e;
    n->guard[n->n_guards++] = (syno_guard_t){SYNO_GUARD_RANGE, e, h};
  } else {
    n->factor[0].idx[0] = BIN(n, SYNO_EXPR_RESTRICT, e, h);
  }
  n->factor[1] = (syno_access_t){.tensor = 1, .rank = 2};
  /* When swapped, the weight is also stored transposed: [W, k]. */
  int16_t a = RI(n, ra), b = RI(n, rb);
  n->factor[1].idx[0] = swapped ? b : a;
  n->factor[1].idx[1] = swapped ? a : b;
  n->factor[1].dim[0] = sz(v, swapped ? "W" : "k");
  n->factor[1].dim[1] = sz(v, swapped ? "k" : "W");
}

static int16_t half_k(syno_nest_t *n, const syno_vars_t *v) { return DIV(SZ(n, sz(v, "k")), IMM(n, 2)); }

/* (i_0 + ri_b) - k/2 */
static int16_t e_base(syno_nest_t *n, const syno_vars_t *v, int ra, int rb) {
  (void)ra;
  return SUB(ADD(OUT(n, 0), RI(n, rb)), half_k(n, v));
}
/* (ri_b + i_0) - k/2 */
static int16_t e_commuted(syno_nest_t *n, const syno_vars_t *v, int ra, int rb) {
  (void)ra;
  return SUB(ADD(RI(n, rb), OUT(n, 0)), half_k(n, v));
}
/* ri_b + (i_0 - k/2) */
static int16_t e_regrouped(syno_nest_t *n, const syno_vars_t *v, int ra, int rb) {
  (void)ra;
  return ADD(RI(n, rb), SUB(OUT(n, 0), half_k(n, v)));
}
/* (i_0 - k/2) + ri_b + (ri_a - ri_a) */
static int16_t e_cancel(syno_nest_t *n, const syno_vars_t *v, int ra, int rb) {
  return ADD(ADD(SUB(OUT(n, 0), half_k(n, v)), RI(n, rb)), SUB(RI(n, ra), RI(n, ra)));
}
/* ((i_0 + 3*2) + ri_b) - (k/2 + mod(20, 7)) - 0 */
static int16_t e_fold(syno_nest_t *n, const syno_vars_t *v, int ra, int rb) {
  (void)ra;
  int16_t six = MUL(IMM(n, 3), IMM(n, 2)), m = MOD(IMM(n, 20), IMM(n, 7));
  return SUB(SUB(ADD(ADD(OUT(n, 0), six), RI(n, rb)), ADD(half_k(n, v), m)), IMM(n, 0));
}
/* 2*(i_0 + ri_b) - (ri_b + i_0) - div(k, 2) / 1 */
static int16_t e_distribute(syno_nest_t *n, const syno_vars_t *v, int ra, int rb) {
  (void)ra;
  int16_t two = MUL(IMM(n, 2), ADD(OUT(n, 0), RI(n, rb)));
  return SUB(SUB(two, ADD(RI(n, rb), OUT(n, 0))), DIV(half_k(n, v), IMM(n, 1)));
}
/* Must differ from the above: */
static int16_t e_other_var(syno_nest_t *n, const syno_vars_t *v, int ra, int rb) {
  (void)rb;
  return SUB(ADD(OUT(n, 0), RI(n, ra)), half_k(n, v));
}
static int16_t e_minus(syno_nest_t *n, const syno_vars_t *v, int ra, int rb) {
  (void)ra;
  return SUB(SUB(OUT(n, 0), RI(n, rb)), half_k(n, v));
}
static int16_t e_offset(syno_nest_t *n, const syno_vars_t *v, int ra, int rb) {
  (void)ra;
  return SUB(ADD(OUT(n, 0), RI(n, rb)), DIV(SZ(n, sz(v, "k")), IMM(n, 3)));
}
static int16_t e_no_div(syno_nest_t *n, const syno_vars_t *v, int ra, int rb) {
  (void)ra, (void)v;
  return SUB(ADD(OUT(n, 0), RI(n, rb)), IMM(n, 1));
}
/* Opaque atoms are canonical inside: div(ri_b + i_0, 2) vs div(i_0 + ri_b, 2). */
static int16_t e_div1(syno_nest_t *n, const syno_vars_t *v, int ra, int rb) {
  (void)ra, (void)v;
  return DIV(ADD(OUT(n, 0), RI(n, rb)), IMM(n, 2));
}
static int16_t e_div2(syno_nest_t *n, const syno_vars_t *v, int ra, int rb) {
  (void)ra, (void)v;
  return DIV(ADD(RI(n, rb), ADD(IMM(n, 0), OUT(n, 0))), IMM(n, 2));
}
/* Not simplified (documented incompleteness), and not equal to e_div1. */
static int16_t e_mod(syno_nest_t *n, const syno_vars_t *v, int ra, int rb) {
  (void)ra, (void)v;
  return MOD(ADD(OUT(n, 0), RI(n, rb)), IMM(n, 2));
}

static void hand_form(index_fn f, bool swapped, bool hoisted, char *buf, syno_nest_t *n, syno_vars_t *v) {
  hand_nest(n, v, f, swapped, hoisted);
  nf_nest(n, v, buf, NULL);
}

static void test_expressions(void **s) {
  (void)s;
  syno_vars_t v;
  hand_vars(&v);
  syno_nest_t *base = malloc(sizeof *base), *other = malloc(sizeof *other);
  char *fb = malloc(NF_LEN), *fo = malloc(NF_LEN);
  hand_form(e_base, false, false, fb, base, &v);
  if (!strstr(fb, "in[i0 + r0 - div(k, 2): H]")) fail_msg("unexpected form: %s", fb);
  struct {
    index_fn f;
    bool swapped, hoisted;
  } same[] = {{e_base, true, false},    {e_commuted, false, false}, {e_regrouped, false, false},
              {e_cancel, false, false}, {e_fold, false, false},     {e_distribute, true, false},
              {e_commuted, true, true}, {e_base, false, true}};
  for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
    hand_form(same[i].f, same[i].swapped, same[i].hoisted, fo, other, &v);
    if (strcmp(fb, fo)) fail_msg("variant %zu differs:\n  %s\n  %s", i, fb, fo);
    check_same_function(base, &v, other, &v, 0, "hand-built expression");
  }
  index_fn differ[] = {e_other_var, e_minus, e_offset, e_no_div, e_div1, e_mod};
  for (size_t i = 0; i < sizeof differ / sizeof *differ; i++) {
    hand_form(differ[i], false, false, fo, other, &v);
    if (!strcmp(fb, fo)) fail_msg("different expression %zu got the same form: %s", i, fo);
  }
  /* div/mod are opaque but their operands are normalized. */
  hand_form(e_div1, false, false, fb, base, &v);
  hand_form(e_div2, true, false, fo, other, &v);
  assert_string_equal(fb, fo);
  check_same_function(base, &v, other, &v, 0, "div operands");
  hand_form(e_mod, false, false, fo, other, &v);
  assert_string_not_equal(fb, fo);
  free(base);
  free(other);
  free(fb);
  free(fo);
}

/* Guards: a conjunction, so their order, the sides of an equality and the
 * sign inside a divisibility test do not matter. */
static void guarded(syno_nest_t *n, const syno_vars_t *v, int order, bool flip) {
  hand_nest(n, v, e_base, false, false);
  int16_t i0 = OUT(n, 0), r0 = RI(n, 0), r1 = RI(n, 1), k = SZ(n, sz(v, "k")), h = SZ(n, sz(v, "H"));
  syno_guard_t g[3] = {
      {SYNO_GUARD_EQUAL, flip ? MOD(i0, k) : r0, flip ? r0 : MOD(i0, k)},
      {SYNO_GUARD_DIVIDES, flip ? SUB(r1, i0) : SUB(i0, r1), SZ(n, sz(v, "W"))},
      {SYNO_GUARD_RANGE, ADD(i0, r0), h},
  };
  static const int orders[3][3] = {{0, 1, 2}, {2, 0, 1}, {1, 2, 0}};
  for (int j = 0; j < 3; j++) n->guard[n->n_guards++] = g[orders[order][j]];
}

static void test_guards(void **s) {
  (void)s;
  syno_vars_t v;
  hand_vars(&v);
  syno_nest_t *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  char *fa = malloc(NF_LEN), *fb = malloc(NF_LEN);
  guarded(a, &v, 0, false);
  nf_nest(a, &v, fa, NULL);
  for (int order = 0; order < 3; order++)
    for (int flip = 0; flip < 2; flip++) {
      guarded(b, &v, order, flip);
      nf_nest(b, &v, fb, NULL);
      if (strcmp(fa, fb)) fail_msg("guard order %d flip %d:\n  %s\n  %s", order, flip, fa, fb);
      check_same_function(a, &v, b, &v, 0, "guards");
    }
  /* Dropping a guard, or changing one, changes the form. */
  guarded(b, &v, 0, false);
  b->n_guards--;
  nf_nest(b, &v, fb, NULL);
  assert_string_not_equal(fa, fb);
  guarded(b, &v, 0, false);
  b->guard[1].b = SZ(b, sz(&v, "k"));
  nf_nest(b, &v, fb, NULL);
  assert_string_not_equal(fa, fb);
  free(a);
  free(b);
  free(fa);
  free(fb);
}

/* Many interchangeable reductions: the automorphism pruning keeps this
 * quick, and any order of them gives one form. */
static void test_symmetric_reductions(void **s) {
  (void)s;
  syno_vars_t v;
  hand_vars(&v);
  syno_nest_t *n = malloc(sizeof *n);
  char *f1 = malloc(NF_LEN), *f2 = malloc(NF_LEN);
  for (int rev = 0; rev < 2; rev++) {
    memset(n, 0, sizeof *n);
    n->target = -1;
    n->divisor = syno_size_one();
    n->n_outer = 1;
    n->outer[0] = sz(&v, "H");
    n->n_inner = 8;
    n->n_factors = 2;
    n->factor[0] = (syno_access_t){.tensor = 0, .rank = 2};
    n->factor[1] = (syno_access_t){.tensor = 1, .rank = 8};
    /* in[i0, ri_a + ri_b] pairs two of them; the weight holds all eight. */
    for (int r = 0; r < 8; r++) {
      n->inner[r] = sz(&v, "k");
      n->factor[1].idx[r] = RI(n, rev ? 7 - r : r);
      n->factor[1].dim[r] = sz(&v, "k");
    }
    n->factor[0].idx[0] = OUT(n, 0);
    n->factor[0].dim[0] = sz(&v, "H");
    n->factor[0].idx[1] = ADD(RI(n, rev ? 3 : 0), RI(n, rev ? 6 : 5));
    n->factor[0].dim[1] = sz(&v, "k^2");
    nf_nest(n, &v, rev ? f2 : f1, NULL);
  }
  assert_string_equal(f1, f2);
  free(n);
  free(f1);
  free(f2);
}

static void test_errors(void **s) {
  (void)s;
  syno_vars_t v;
  hand_vars(&v);
  syno_nest_t *n = malloc(sizeof *n);
  syno_error_t err = {{0}};
  char buf[64];
  hand_nest(n, &v, e_base, false, false);
  int len = syno_nest_normal_form(n, &v, NULL, 0, &err);
  assert_true(len > 0);
  char *full = malloc((size_t)len + 1);
  assert_int_equal(syno_nest_normal_form(n, &v, full, (size_t)len + 1, &err), len);
  assert_int_equal((int)strlen(full), len);
  /* Never truncated: a short buffer is an error, left empty. */
  assert_int_equal(syno_nest_normal_form(n, &v, full, (size_t)len, &err), -1);
  assert_non_null(strstr(err.msg, "too small"));
  assert_string_equal(full, "");
  assert_int_equal(syno_nest_normal_form(n, &v, buf, sizeof buf, &err), -1);
  free(full);

  hand_nest(n, &v, e_base, false, false);
  n->factor[0].idx[0] = (int16_t)(n->n_nodes + 5);
  assert_int_equal(syno_nest_normal_form(n, &v, NULL, 0, &err), -1);
  assert_non_null(strstr(err.msg, "malformed"));

  hand_nest(n, &v, e_base, false, false);
  n->node[n->n_nodes - 1] = (syno_expr_t){.kind = SYNO_EXPR_ADD, .a = (int16_t)(n->n_nodes - 1), .b = 0};
  n->factor[0].idx[0] = (int16_t)(n->n_nodes - 1);
  assert_int_equal(syno_nest_normal_form(n, &v, NULL, 0, &err), -1);
  assert_non_null(strstr(err.msg, "earlier node"));

  hand_nest(n, &v, e_base, false, false);
  n->node[0] = (syno_expr_t){.kind = SYNO_EXPR_INNER, .var = 9};
  assert_int_equal(syno_nest_normal_form(n, &v, NULL, 0, &err), -1);
  assert_non_null(strstr(err.msg, "malformed"));

  hand_nest(n, &v, e_base, false, false);
  n->factor[1].tensor = 0;
  assert_int_equal(syno_nest_normal_form(n, &v, NULL, 0, &err), -1);
  assert_non_null(strstr(err.msg, "two factors"));

  /* Coefficients that overflow are refused, not wrapped. */
  hand_nest(n, &v, e_base, false, false);
  int16_t big = IMM(n, INT64_MAX / 2 + 1);
  n->factor[0].idx[0] = BIN(n, SYNO_EXPR_MUL, big, BIN(n, SYNO_EXPR_ADD, OUT(n, 0), IMM(n, 4)));
  assert_int_equal(syno_nest_normal_form(n, &v, NULL, 0, &err), -1);
  assert_non_null(strstr(err.msg, "overflow"));
  free(n);
}

/* --- operators --- */

typedef struct {
  const char *name, *vars, *input, *output, *bind;
} family_t;

#define CONV_IN "[N, C_in: unordered, H, W]"
#define CONV_OUT "[N, C_out: unordered, H, W]"

static const family_t families[] = {
    {"conv2d", NULL, NULL, NULL, "N=1, C_in=2, C_out=3, H=4, W=5, k=3"},
    {"conv-kl", "N, C_in, C_out, H, W; k, l", CONV_IN, CONV_OUT, "N=1, C_in=2, C_out=2, H=6, W=6, k=3, l=5"},
    {"grouped-conv2d", NULL, NULL, NULL, "N=1, C_in=4, C_out=4, H=4, W=4, k=3, g=2"},
    {"depthwise-conv2d", NULL, NULL, NULL, "N=1, C_in=3, H=4, W=5, k=3"},
    {"strided-conv2d", NULL, NULL, NULL, "N=1, C_in=2, C_out=2, H=4, W=6, k=3, s=2"},
    {"linear", NULL, NULL, NULL, "N=2, C_in=3, C_out=4"},
    {"avgpool2d", NULL, NULL, NULL, "N=1, C_in=2, H=4, W=6, k=2"},
    {"lowrank", "H, W; c=2, k=3", "[H, W, c*H]", "[H, W, c*H]", "H=4, W=3"},
    {"split", "H", "[H*H]", "[H, H]", "H=3"},
    {"square", "H", "[H, H]", "[H, H]", "H=3"},
};
enum { N_FAMILIES = sizeof families / sizeof *families };

static family_t family_of(int f) {
  family_t fam = families[f];
  if (!fam.vars) {
    const syno_builtin_t *b = syno_builtin_find(fam.name);
    assert_non_null(b);
    fam.vars = b->vars;
    fam.input = b->input;
    fam.output = b->output;
  }
  return fam;
}

typedef struct {
  int family;
  const char *label; /* expected class: equal labels, equal forms */
  char text[512];
} entry_t;

typedef struct {
  entry_t *e;
  int n;
  size_t cap;
} entries_t;

static void add(entries_t *es, int family, const char *label, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(entries_t *es, int family, const char *label, const char *fmt, ...) {
  assert_int_equal(syno_grow((void **)&es->e, &es->cap, (size_t)es->n + 1, sizeof *es->e), 0);
  entry_t *e = &es->e[es->n++];
  e->family = family;
  e->label = label;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(e->text, sizeof e->text, fmt, ap);
  va_end(ap);
  assert_true(w > 0 && w < (int)sizeof e->text);
}

static int family_index(const char *name) {
  for (int f = 0; f < N_FAMILIES; f++)
    if (!strcmp(families[f].name, name)) return f;
  fail_msg("no family %s", name);
  return -1;
}

/* Lexicographic next permutation; false after the last. */
static bool next_perm(int *p, int n) {
  int i = n - 2;
  while (i >= 0 && p[i] >= p[i + 1]) i--;
  if (i < 0) return false;
  int j = n - 1;
  while (p[j] <= p[i]) j--;
  int t = p[i];
  p[i] = p[j];
  p[j] = t;
  for (int a = i + 1, b = n - 1; a < b; a++, b--) t = p[a], p[a] = p[b], p[b] = t;
  return true;
}

/* A convolution-like operator: reductions roles[0..nr) with sizes rsize,
 * declared in order decl (decl[q] = the role declared as r<q>), the text's
 * %0 %1 %2 standing for the roles and the weight listing items in order
 * wperm. */
typedef struct {
  int nr;
  const char *rsize[3];
  const char *body; /* with %0..%2 for the roles, and %W for the weight axes */
  int ni;
  const char *items[5]; /* weight axes, with %0..%2 */
} shape_t;

static void expand(char *out, size_t cap, const char *tmpl, char names[3][16]) {
  size_t len = 0;
  for (const char *p = tmpl; *p; p++) {
    const char *ins = NULL;
    char one[2] = {*p, 0};
    if (p[0] == '%' && p[1] >= '0' && p[1] <= '2')
      ins = names[*++p - '0'];
    else
      ins = one;
    size_t l = strlen(ins);
    assert_true(len + l < cap);
    memcpy(out + len, ins, l);
    len += l;
  }
  out[len] = 0;
}

static void add_shape(entries_t *es, int family, const char *label, const shape_t *sh, const int *decl,
                      const int *wperm) {
  char names[3][16], decls[128] = "", items[256] = "", body[384], item[96];
  for (int q = 0; q < sh->nr; q++) {
    snprintf(names[decl[q]], sizeof names[0], "r%d", q);
    size_t l = strlen(decls);
    snprintf(decls + l, sizeof decls - l, "%sr%d=sum(%s)", q ? " " : "", q, sh->rsize[decl[q]]);
  }
  for (int j = 0; j < sh->ni; j++) {
    expand(item, sizeof item, sh->items[wperm[j]], names);
    size_t l = strlen(items);
    snprintf(items + l, sizeof items - l, "%s%s", j ? ", " : "", item);
  }
  expand(body, sizeof body, sh->body, names);
  add(es, family, label, "%s; %s w1[%s]", decls, body, items);
}

/* Every weight-axis order (or every `step`-th), and every declaration order. */
static void add_shape_variants(entries_t *es, int family, const char *label, const shape_t *sh, int step) {
  int decl[3] = {0, 1, 2}, wperm[5] = {0, 1, 2, 3, 4};
  int k = 0;
  do {
    if (k++ % step == 0) add_shape(es, family, label, sh, decl, wperm);
  } while (next_perm(wperm, sh->ni));
  for (int j = 0; j < 5; j++) wperm[j] = j;
  while (next_perm(decl, sh->nr)) add_shape(es, family, label, sh, decl, wperm);
}

static const shape_t conv_shape = {
    3,
    {"C_in", "k", "k"},
    "in[i0, share(%0, 1), unfold(i2, share(%1, 1)), unfold(i3, share(%2, 1))] expand[share(i1, 1)]",
    4,
    {"i1", "%0", "%1", "%2"}};
static const shape_t conv_kl_shape = {
    3,
    {"C_in", "k", "l"},
    "in[i0, share(%0, 1), unfold(i2, share(%1, 1)), unfold(i3, share(%2, 1))] expand[share(i1, 1)]",
    4,
    {"i1", "%0", "%1", "%2"}};
static const shape_t grouped_shape = {
    3,
    {"g^-1*C_in", "k", "k"},
    "in[i0, split(share(div(i1, g^-1*C_out), 1), share(%0, 1)), unfold(i2, share(%1, 1)), unfold(i3, share(%2, 1))] "
    "expand[share(mod(i1, g^-1*C_out), 1)]",
    5,
    {"div(i1, g^-1*C_out)", "mod(i1, g^-1*C_out)", "%0", "%1", "%2"}};
static const shape_t depthwise_shape = {
    2, {"k", "k"}, "in[i0, share(i1, 1), unfold(i2, share(%0, 1)), unfold(i3, share(%1, 1))]", 3, {"i1", "%0", "%1"}};
static const shape_t strided_shape = {3,
                                      {"C_in", "k", "k"},
                                      "in[i0, share(%0, 1), unfold(stride(i2, s), share(%1, 1)), unfold(stride(i3, s), "
                                      "share(%2, 1))] expand[share(i1, 1)]",
                                      4,
                                      {"i1", "%0", "%1", "%2"}};

static void build_entries(entries_t *es) {
  int conv = family_index("conv2d"), kl = family_index("conv-kl");
  /* The builtins as they are, each in its family. */
  for (int i = 0; syno_builtin_at(i); i++)
    add(es, family_index(syno_builtin_at(i)->name), syno_builtin_at(i)->name, "%s", syno_builtin_at(i)->text);
  /* conv2d: all 24 weight layouts and all 6 declaration orders. */
  add_shape_variants(es, conv, "conv2d", &conv_shape, 1);
  /* The two k-windows swapped between H and W: with the weight's layout
   * free this is conv2d again (rename r1 <-> r2, transpose the kernel). */
  add(es, conv, "conv2d",
      "r0=sum(C_in) r1=sum(k) r2=sum(k); in[i0, share(r0, 1), unfold(i2, share(r2, 1)), unfold(i3, share(r1, 1))] "
      "expand[share(i1, 1)] w1[i1, r0, r1, r2]");
  /* Other window offsets: a shifted position is not the same window. */
  add(es, conv, "conv-shift-h",
      "r0=sum(C_in) r1=sum(k) r2=sum(k); in[i0, share(r0, 1), unfold(shift(i2), share(r1, 1)), unfold(i3, share(r2, "
      "1))] "
      "expand[share(i1, 1)] w1[i1, r0, r1, r2]");
  add(es, conv, "conv-shift-w",
      "r0=sum(C_in) r1=sum(k) r2=sum(k); in[i0, share(r0, 1), unfold(i2, share(r1, 1)), unfold(shift(i3), share(r2, "
      "1))] "
      "expand[share(i1, 1)] w1[r2, r0, i1, r1]");
  /* One window along H, along W, unfold vs shift, an unweighted box along W. */
  add(es, conv, "conv-1d-h",
      "r0=sum(C_in) r1=sum(k); in[i0, share(r0, 1), unfold(i2, share(r1, 1)), i3] expand[share(i1, 1)] w1[i1, r0, r1]");
  add(es, conv, "conv-1d-h",
      "r0=sum(k) r1=sum(C_in); in[i0, share(r1, 1), unfold(i2, share(r0, 1)), i3] expand[share(i1, 1)] w1[r0, i1, r1]");
  add(es, conv, "conv-1d-w",
      "r0=sum(C_in) r1=sum(k); in[i0, share(r0, 1), i2, unfold(i3, share(r1, 1))] expand[share(i1, 1)] w1[i1, r0, r1]");
  add(es, conv, "conv-1d-h-shift-w",
      "r0=sum(C_in) r1=sum(k); in[i0, share(r0, 1), unfold(i2, share(r1, 1)), shift(i3)] expand[share(i1, 1)] w1[i1, "
      "r0, r1]");
  add(es, conv, "conv-box-w",
      "r0=sum(C_in) r1=sum(k) r2=sum(k); in[i0, share(r0, 1), unfold(i2, share(r1, 1)), unfold(i3, r2)] "
      "expand[share(i1, 1)] w1[i1, r0, r1]");
  add(es, conv, "conv-mean-w",
      "r0=sum(C_in) r1=sum(k) r2=mean(k); in[i0, share(r0, 1), unfold(i2, share(r1, 1)), unfold(i3, r2)] "
      "expand[share(i1, 1)] w1[i1, r0, r1]");
  add(es, conv, "pointwise", "r0=sum(C_in); in[i0, share(r0, 1), i2, i3] expand[share(i1, 1)] w1[i1, r0]");
  add(es, conv, "pointwise", "r0=sum(C_in); in[i0, share(r0, 1), i2, i3] expand[share(i1, 1)] w1[r0, i1]");
  /* Windows of different sizes: swapping them between H and W is a
   * different operator (k x l vs l x k receptive field). */
  add_shape_variants(es, kl, "conv-kl", &conv_kl_shape, 3);
  add(es, kl, "conv-lk",
      "r0=sum(C_in) r1=sum(k) r2=sum(l); in[i0, share(r0, 1), unfold(i2, share(r2, 1)), unfold(i3, share(r1, 1))] "
      "expand[share(i1, 1)] w1[i1, r0, r1, r2]");
  /* conv2d spelled in another family's variables: the same symbolic form. */
  add(es, kl, "conv2d",
      "r0=sum(C_in) r1=sum(k) r2=sum(k); in[i0, share(r0, 1), unfold(i2, share(r1, 1)), unfold(i3, share(r2, 1))] "
      "expand[share(i1, 1)] w1[i1, r0, r1, r2]");
  add_shape_variants(es, family_index("grouped-conv2d"), "grouped-conv2d", &grouped_shape, 11);
  add_shape_variants(es, family_index("depthwise-conv2d"), "depthwise-conv2d", &depthwise_shape, 1);
  add_shape_variants(es, family_index("strided-conv2d"), "strided-conv2d", &strided_shape, 5);
  int lin = family_index("linear"), pool = family_index("avgpool2d");
  add(es, lin, "linear", "r0=sum(C_in); in[i0, share(r0, 1)] expand[share(i1, 1)] w1[r0, i1]");
  /* Sum vs Mean. */
  add(es, pool, "sumpool2d", "r0=sum(k) r1=sum(k); in[i0, i1, split(i2, r0), split(i3, r1)]");
  add(es, pool, "avgpool2d", "r0=mean(k) r1=mean(k); in[i0, i1, split(i2, r1), split(i3, r0)]");
  /* Which window is the Mean does not matter: the divisor is k either way. */
  add(es, pool, "pool-mixed", "r0=sum(k) r1=mean(k); in[i0, i1, split(i2, r0), split(i3, r1)]");
  add(es, pool, "pool-mixed", "r0=sum(k) r1=mean(k); in[i0, i1, split(i2, r1), split(i3, r0)]");
  /* Two weights: swapped numbers, axes permuted, declarations reordered. */
  int lr = family_index("lowrank");
  add(es, lr, "lowrank",
      "r0=sum(c*H) r1=sum(k); in[i0, i1, share(r0, 1)] expand[share(share(r1, 2), 1), share(i2, 2)] "
      "w1[share(r1, 2), r0] w2[i2, r1]");
  add(es, lr, "lowrank",
      "r0=sum(c*H) r1=sum(k); in[i0, i1, share(r0, 2)] expand[share(share(r1, 1), 2), share(i2, 1)] "
      "w1[i2, r1] w2[share(r1, 1), r0]");
  add(es, lr, "lowrank",
      "r0=sum(k) r1=sum(c*H); in[i0, i1, share(r1, 1)] expand[share(share(r0, 2), 1), share(i2, 2)] "
      "w1[r1, share(r0, 2)] w2[r0, i2]");
  add(es, lr, "linear-last", "r0=sum(c*H); in[i0, i1, share(r0, 1)] expand[share(i2, 1)] w1[i2, r0]");
  add(es, lr, "linear-last", "r0=sum(c*H); in[i0, i1, share(r0, 1)] expand[share(i2, 1)] w1[r0, i2]");
  /* Split order, transposed input, shifts. */
  int sp = family_index("split"), sq = family_index("square");
  add(es, sp, "split01", "in[split(i0, i1)]");
  add(es, sp, "split10", "in[split(i1, i0)]");
  add(es, sq, "identity", "in[i0, i1]");
  add(es, sq, "transpose", "in[i1, i0]");
  add(es, sq, "shift0", "in[shift(i0), i1]");
  add(es, sq, "shift1", "in[i0, shift(i1)]");
  add(es, sq, "shift-transpose", "in[shift(i1), i0]");
}

typedef struct {
  entries_t es;
  st_op_t *op;
  syno_lowered_t *low;
  char (*fwd)[NF_LEN], (*bwd)[NF_LEN];
  char (*wgrad)[SYNO_MAX_TENSORS][NF_LEN]; /* forms of the weight-gradient nests, "" when none */
} world_t;

static void world_make(world_t *w) {
  memset(w, 0, sizeof *w);
  build_entries(&w->es);
  int n = w->es.n;
  w->op = calloc((size_t)n, sizeof *w->op);
  w->low = calloc((size_t)n, sizeof *w->low);
  w->fwd = calloc((size_t)n, sizeof *w->fwd);
  w->bwd = calloc((size_t)n, sizeof *w->bwd);
  w->wgrad = calloc((size_t)n, sizeof *w->wgrad);
  assert_true(w->op && w->low && w->fwd && w->bwd && w->wgrad);
  syno_error_t err;
  for (int i = 0; i < n; i++) {
    family_t fam = family_of(w->es.e[i].family);
    const char *binds[] = {fam.bind, NULL};
    st_op_make(&w->op[i], fam.vars, fam.input, fam.output, w->es.e[i].text, binds);
    if (syno_lower(&w->op[i].op, &w->low[i], &err)) fail_msg("%s: %s", w->es.e[i].text, err.msg);
    const syno_vars_t *v = syno_graph_vars(w->op[i].g);
    nf_nest(&w->low[i].forward, v, w->fwd[i], NULL);
    nf_nest(&w->low[i].backward[0], v, w->bwd[i], NULL);
    for (int t = 1; t < w->op[i].op.n_tensors; t++) nf_nest(&w->low[i].backward[t], v, w->wgrad[i][t], NULL);
    /* The operator entry point agrees with lowering by hand. */
    char *f = malloc(NF_LEN);
    if (syno_operator_normal_form(&w->op[i].op, f, NF_LEN, &err) < 0) fail_msg("%s", err.msg);
    assert_string_equal(f, w->fwd[i]);
    free(f);
  }
}

static void world_free(world_t *w) {
  for (int i = 0; i < w->es.n; i++) st_op_free(&w->op[i]);
  free(w->op);
  free(w->low);
  free(w->fwd);
  free(w->bwd);
  free(w->wgrad);
  free(w->es.e);
}

static void test_golden_conv2d(void **s) {
  (void)s;
  st_op_t o;
  st_op_builtin(&o, "conv2d", "");
  char *buf = malloc(NF_LEN);
  syno_error_t err;
  assert_true(syno_operator_normal_form(&o.op, buf, NF_LEN, &err) > 0);
  assert_string_equal(buf,
                      "out[N, C_out, H, W] = sum(r0: C_in, r1: k, r2: k) "
                      "if(0 <= i2 + r1 - div(k, 2) < H; 0 <= i3 + r2 - div(k, 2) < W) "
                      "in[i0: N, r0: C_in, i2 + r1 - div(k, 2): H, i3 + r2 - div(k, 2): W] * "
                      "w[i1: C_out, r0: C_in, r1: k, r2: k]");
  free(buf);
  st_op_free(&o);
}

/* Equal expected classes give equal forms, different classes different
 * forms (across families too: a form names sizes symbolically); and the
 * forms do abstract over something (the raw nests differ). */
static void test_expected_classes(void **s) {
  (void)s;
  world_t w;
  world_make(&w);
  int equal_pairs = 0, raw_differ = 0;
  char *pa = malloc(1 << 14), *pb = malloc(1 << 14);
  for (int i = 0; i < w.es.n; i++)
    for (int j = i + 1; j < w.es.n; j++) {
      const entry_t *a = &w.es.e[i], *b = &w.es.e[j];
      bool same_form = !strcmp(w.fwd[i], w.fwd[j]);
      bool expect = !strcmp(a->label, b->label);
      if (same_form != expect)
        fail_msg("%s (%s) vs %s (%s): forms %s, expected %s:\n  %s\n  %s", a->text, a->label, b->text, b->label,
                 same_form ? "equal" : "differ", expect ? "equal" : "different", w.fwd[i], w.fwd[j]);
      if (same_form) {
        equal_pairs++;
        syno_nest_print(&w.low[i].forward, syno_graph_vars(w.op[i].g), pa, 1 << 14);
        syno_nest_print(&w.low[j].forward, syno_graph_vars(w.op[j].g), pb, 1 << 14);
        raw_differ += strcmp(pa, pb) != 0;
      }
    }
  printf("%d operators, %d pairs with one normal form, %d of them with different loop nests\n", w.es.n, equal_pairs,
         raw_differ);
  assert_true(raw_differ > 100);
  free(pa);
  free(pb);
  world_free(&w);
}

/* The property that matters: one form, one function. Every pair with equal
 * forward (or input-gradient) forms is run through the interpreter on the
 * same random data, weights laid out by the maps. */
static void test_equal_forms_equal_functions(void **s) {
  (void)s;
  world_t w;
  world_make(&w);
  int checked = 0, checked_bwd = 0, checked_wgrad = 0;
  for (int i = 0; i < w.es.n; i++)
    for (int j = i + 1; j < w.es.n; j++) {
      if (w.es.e[i].family != w.es.e[j].family) continue;
      const syno_vars_t *vi = syno_graph_vars(w.op[i].g), *vj = syno_graph_vars(w.op[j].g);
      if (!strcmp(w.fwd[i], w.fwd[j])) {
        check_same_function(&w.low[i].forward, vi, &w.low[j].forward, vj, 0, w.es.e[j].text);
        checked++;
      }
      if (!strcmp(w.bwd[i], w.bwd[j])) {
        check_same_function(&w.low[i].backward[0], vi, &w.low[j].backward[0], vj, 0, w.es.e[j].text);
        checked_bwd++;
      }
      /* Weight gradients: the target's layout is fixed, weights may be
       * renumbered, so any weight of one may match any weight of the other. */
      for (int t = 1; t < w.op[i].op.n_tensors; t++)
        for (int u = 1; u < w.op[j].op.n_tensors; u++)
          if (!strcmp(w.wgrad[i][t], w.wgrad[j][u])) {
            check_same_function(&w.low[i].backward[t], vi, &w.low[j].backward[u], vj, 0, w.es.e[j].text);
            checked_wgrad++;
          }
    }
  printf("checked %d forward, %d input-gradient and %d weight-gradient pairs numerically\n", checked, checked_bwd,
         checked_wgrad);
  assert_true(checked > 100 && checked_bwd > 50 && checked_wgrad > 20);
  world_free(&w);
}

/* The "must differ" pairs really are different functions: same layouts,
 * same data, different outputs. Guards against an expected class that is
 * wrong in the other direction. */
static void test_different_forms_differ_numerically(void **s) {
  (void)s;
  static const char *const pairs[][2] = {
      {"split01", "split10"},        {"identity", "transpose"},  {"shift0", "shift1"},
      {"avgpool2d", "sumpool2d"},    {"conv-1d-h", "conv-1d-w"}, {"conv-1d-h", "conv-1d-h-shift-w"},
      {"conv-box-w", "conv-mean-w"},
  };
  world_t w;
  world_make(&w);
  for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++) {
    int a = -1, b = -1;
    for (int i = 0; i < w.es.n; i++) {
      if (a < 0 && !strcmp(w.es.e[i].label, pairs[p][0])) a = i;
      if (b < 0 && !strcmp(w.es.e[i].label, pairs[p][1])) b = i;
    }
    assert_true(a >= 0 && b >= 0);
    assert_string_not_equal(w.fwd[a], w.fwd[b]);
    syno_rng_t rng;
    syno_rng_seed(&rng, 9, 0);
    float *t[SYNO_MAX_TENSORS] = {0};
    syno_error_t err;
    for (int i = 0; i < w.op[a].op.n_tensors; i++) {
      int64_t na, nb;
      if (syno_tensor_numel(&w.op[a].op, i, 0, &na, &err) || syno_tensor_numel(&w.op[b].op, i, 0, &nb, &err))
        fail_msg("%s", err.msg);
      assert_int_equal(na, nb);
      t[i] = st_random(&rng, na);
    }
    int64_t n;
    if (syno_output_numel(&w.op[a].op, 0, &n, &err)) fail_msg("%s", err.msg);
    float *oa = st_forward(&w.op[a], &w.low[a].forward, 0, t), *ob = st_forward(&w.op[b], &w.low[b].forward, 0, t);
    if (st_rel_err(oa, ob, n) < 1e-3) fail_msg("%s and %s compute the same outputs", pairs[p][0], pairs[p][1]);
    free(oa);
    free(ob);
    for (int i = 0; i < w.op[a].op.n_tensors; i++) free(t[i]);
  }
  world_free(&w);
}

/* The form up to a permutation of the input's unordered axes and a relayout
 * of the weights (syno_operator_normal_form_unordered): numberings of the
 * unordered C_in (its factors in either order, a roll) and a weight read
 * through a bijection share it; the plain forms differ, and so do the forms
 * when C_in is ordered. A roll of a dim merged from C_in and a broadcast is
 * not a renumbering of C_in alone and keeps its own form. */
static void uform(const char *text, const bool *unordered, char *buf) {
  const char *binds[] = {"", NULL};
  st_op_t o;
  st_op_make(&o, "N=2: 0, C_in=3: 2, C_out=2: 2, H=4: 0, W=4: 0; k_1=3: 4", "[N, C_in, H, W]", "[N, C_out, H, W]", text,
             binds);
  syno_error_t err;
  if (syno_operator_normal_form_unordered(&o.op, unordered, buf, NF_LEN, &err) < 0) fail_msg("%s", err.msg);
  st_op_free(&o);
}

static void test_unordered_input_axes(void **s) {
  (void)s;
  static const char *const same[][2] = {
      /* the factors of C_in in either order */
      {"r0=sum(k_1) r1=sum(k_1^-1*C_in); in[i0, split(r1, share(r0, 1)), i2, i3] expand[share(i1, 1)] w1[i1, r0]",
       "r0=sum(k_1) r1=sum(k_1^-1*C_in); in[i0, split(share(r0, 1), r1), i2, i3] expand[share(i1, 1)] w1[i1, r0]"},
      /* a roll of C_in */
      {"r0=sum(k_1) r1=sum(k_1^-1*C_in); in[i0, shift(split(share(r1, 1), r0)), i2, i3] expand[share(i1, 1)] w1[i1, "
       "r1]",
       "r0=sum(k_1) r1=sum(k_1^-1*C_in); in[i0, split(share(r1, 1), r0), i2, i3] expand[share(i1, 1)] w1[i1, r1]"},
      /* a roll of C_out x C_in: C_in rolled, the weight read through a bijection of (i1, r0) */
      {"r0=sum(C_in); in[i0, share(mod(shift(split(i1, r0)), C_in), 1), i2, i3] expand[share(div(shift(split(i1, r0)), "
       "C_in), 1)] w1[mod(shift(split(i1, r0)), C_in), div(shift(split(i1, r0)), C_in)]",
       "r0=sum(C_in); in[i0, share(r0, 1), i2, i3] expand[share(i1, 1)] w1[r0, i1]"},
  };
  const bool unordered[SYNO_MAX_RANK] = {false, true, false, false}, ordered[SYNO_MAX_RANK] = {false};
  char *a = malloc(NF_LEN), *b = malloc(NF_LEN);
  for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
    uform(same[i][0], unordered, a);
    uform(same[i][1], unordered, b);
    if (strcmp(a, b)) fail_msg("'%s' and '%s': forms differ:\n  %s\n  %s", same[i][0], same[i][1], a, b);
    uform(same[i][0], ordered, a);
    uform(same[i][1], ordered, b);
    if (!strcmp(a, b)) fail_msg("C_in ordered: '%s' and '%s' share a form", same[i][0], same[i][1]);
  }
  /* Channel 0 meets the next output channel's kernel: a different function. */
  uform(
      "r0=sum(k_1) r1=sum(C_in); in[i0, mod(shift(split(i1, r1)), C_in), i2, unfold(i3, share(r0, 1))] "
      "expand[share(div(shift(split(i1, r1)), C_in), 1)] w1[r0, div(shift(split(i1, r1)), C_in)]",
      unordered, a);
  uform("r0=sum(k_1) r1=sum(C_in); in[i0, r1, i2, unfold(i3, share(r0, 1))] expand[share(i1, 1)] w1[r0, i1]", unordered,
        b);
  assert_string_not_equal(a, b);
  free(a);
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_expressions),
      cmocka_unit_test(test_guards),
      cmocka_unit_test(test_symmetric_reductions),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_golden_conv2d),
      cmocka_unit_test(test_expected_classes),
      cmocka_unit_test(test_equal_forms_equal_functions),
      cmocka_unit_test(test_different_forms_differ_numerically),
      cmocka_unit_test(test_unordered_input_axes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
