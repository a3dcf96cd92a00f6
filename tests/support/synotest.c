#include "synotest.h"

#include "syno/space.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int st_sample(const char *spec_json, uint64_t seed, int n,
              void (*each)(syno_space_t *s, uint32_t node, uint32_t final, void *user), void *user) {
  syno_space_spec_t spec;
  syno_error_t err = {{0}};
  if (syno_space_spec_from_json(spec_json, &spec, &err)) fail_msg("%s: %s", spec_json, err.msg);
  syno_space_t *s;
  if (syno_space_new(&spec, &s, &err)) fail_msg("%s: %s", spec_json, err.msg);
  syno_rng_t walk;
  syno_rng_seed(&walk, seed, 0);
  int drawn = 0;
  for (; drawn < n; drawn++) {
    uint32_t node, final;
    int walks;
    int found = syno_space_random_walk(s, &walk, 1000000, true, &node, &final, &walks, &err);
    if (found < 0) fail_msg("random walk: %s", err.msg);
    if (!found) break; /* exhausted */
    each(s, node, final, user);
  }
  syno_space_free(s);
  return drawn;
}

typedef struct {
  void (*each)(const syno_operator_t *op, void *user);
  void *user;
  int want, n_seen, drawn;
  char **seen;
} distinct_t;

static void take_distinct(syno_space_t *s, uint32_t node, uint32_t final, void *user) {
  distinct_t *d = user;
  d->drawn++;
  if (d->n_seen >= d->want) return;
  syno_operator_t op;
  syno_error_t err;
  if (syno_node_final(s, node, final, &op, &err)) fail_msg("%s", err.msg);
  char text[4096];
  syno_operator_print(&op, text, sizeof text);
  for (int i = 0; i < d->n_seen; i++)
    if (!strcmp(d->seen[i], text)) return;
  d->seen[d->n_seen] = strdup(text);
  assert_non_null(d->seen[d->n_seen]);
  d->n_seen++;
  d->each(&op, d->user);
}

int st_sample_distinct(const char *spec_json, uint64_t seed, int n, void (*each)(const syno_operator_t *op, void *user),
                       void *user, int *drawn) {
  distinct_t d = {.each = each, .user = user, .want = n, .seen = calloc((size_t)(n > 0 ? n : 1), sizeof(char *))};
  assert_non_null(d.seen);
  for (uint64_t r = 0; d.n_seen < n && r < 20; r++) st_sample(spec_json, seed + r, n - d.n_seen, take_distinct, &d);
  for (int i = 0; i < d.n_seen; i++) free(d.seen[i]);
  free(d.seen);
  if (drawn) *drawn = d.drawn;
  return d.n_seen;
}

const char *st_builtin_small_binding(const char *name) {
  static const char *small[] = {"conv2d",           "N=2, C_in=3, C_out=4, H=7, W=6, k=3",
                                "grouped-conv2d",   "N=2, C_in=4, C_out=6, H=5, W=5, k=3, g=2",
                                "depthwise-conv2d", "N=2, C_in=3, H=6, W=5, k=3",
                                "strided-conv2d",   "N=2, C_in=3, C_out=4, H=8, W=6, k=3, s=2",
                                "linear",           "N=3, C_in=10, C_out=7",
                                "avgpool2d",        "N=2, C_in=3, H=8, W=6, k=2"};
  for (size_t j = 0; j < sizeof small / sizeof *small; j += 2)
    if (strcmp(small[j], name) == 0) return small[j + 1];
  return "";
}

void st_op_make(st_op_t *o, const char *vars, const char *input, const char *output, const char *text,
                const char *const *binds) {
  syno_error_t err = {{0}};
  memset(o, 0, sizeof *o);
  syno_vars_init(&o->vars);
  if (vars && syno_vars_declare(&o->vars, vars, &err)) fail_msg("vars: %s", err.msg);
  if (syno_vars_scan(&o->vars, input, &err) || syno_vars_scan(&o->vars, output, &err) ||
      syno_vars_scan(&o->vars, text, &err))
    fail_msg("scan: %s", err.msg);
  for (int i = 0; binds && binds[i]; i++)
    if (syno_vars_bind(&o->vars, binds[i], &err)) fail_msg("bind '%s': %s", binds[i], err.msg);
  if (syno_shape_parse(&o->vars, input, &o->input, &err)) fail_msg("input: %s", err.msg);
  if (syno_shape_parse(&o->vars, output, &o->output, &err)) fail_msg("output: %s", err.msg);
  o->g = syno_graph_new(&o->vars);
  assert_non_null(o->g);
  if (syno_operator_parse(o->g, text, &o->input, &o->output, &o->op, &err))
    fail_msg("operator '%s': %s", text, err.msg);
}

void st_op_builtin(st_op_t *o, const char *name, const char *bind) {
  const syno_builtin_t *b = syno_builtin_find(name);
  assert_non_null(b);
  const char *binds[] = {bind, NULL};
  st_op_make(o, b->vars, b->input, b->output, b->text, binds);
}

void st_op_free(st_op_t *o) {
  syno_graph_free(o->g);
  o->g = NULL;
}

void st_write_floats(const char *path, const float *x, int64_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) fail_msg("cannot write %s", path);
  assert_int_equal(fwrite(x, sizeof(float), (size_t)n, f), (size_t)n);
  fclose(f);
}

float *st_read_floats(const char *path, int64_t n) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("%s was not written", path);
  float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
  assert_non_null(x);
  size_t got = fread(x, sizeof(float), (size_t)n, f);
  int extra = fgetc(f);
  fclose(f);
  if (got != (size_t)n || extra != EOF) fail_msg("%s: expected %lld floats", path, (long long)n);
  return x;
}

const char *st_find_python(const char *modules) {
  static char buf[512];
  const char *env = getenv("SYNO_PYTHON");
  const char *cands[] = {env, "python3", "/usr/bin/python3"};
  for (size_t i = 0; i < sizeof cands / sizeof *cands; i++) {
    if (!cands[i] || !*cands[i]) continue;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s -c 'import %s' >/dev/null 2>&1", cands[i], modules);
    if (system(cmd) == 0) {
      snprintf(buf, sizeof buf, "%s", cands[i]);
      return buf;
    }
  }
  return NULL;
}

float *st_random(syno_rng_t *rng, int64_t n) {
  float *x = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
  assert_non_null(x);
  for (int64_t i = 0; i < n; i++) x[i] = (float)syno_rng_normal(rng);
  return x;
}

double st_rel_err(const float *a, const float *b, int64_t n) {
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < n; i++) {
    diff = fmax(diff, fabs((double)a[i] - b[i]));
    scale = fmax(scale, fabs((double)b[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

float *st_forward(const st_op_t *o, const syno_nest_t *fwd, int b, float *const *tensors) {
  syno_error_t err;
  int64_t n;
  if (syno_output_numel(&o->op, b, &n, &err)) fail_msg("%s", err.msg);
  float *out = malloc(sizeof(float) * (size_t)n);
  assert_non_null(out);
  if (syno_interp_nest(fwd, &o->vars, b, (const float *const *)tensors, NULL, out, &err)) fail_msg("%s", err.msg);
  return out;
}

static double loss(const st_op_t *o, const syno_nest_t *fwd, int b, float *const *tensors, const float *gout,
                   int64_t n_out) {
  float *out = st_forward(o, fwd, b, tensors);
  double s = 0;
  for (int64_t i = 0; i < n_out; i++) s += (double)out[i] * gout[i];
  free(out);
  return s;
}

void st_check_gradient(const st_op_t *o, const syno_lowered_t *low, int b, float *const *tensors, int t, int probes,
                       double tol, syno_rng_t *rng) {
  syno_error_t err;
  int64_t n_out, n_t;
  if (syno_output_numel(&o->op, b, &n_out, &err) || syno_tensor_numel(&o->op, t, b, &n_t, &err))
    fail_msg("%s", err.msg);
  float *gout = st_random(rng, n_out);
  float *grad = malloc(sizeof(float) * (size_t)n_t);
  assert_non_null(grad);
  if (syno_interp_nest(&low->backward[t], &o->vars, b, (const float *const *)tensors, gout, grad, &err))
    fail_msg("%s", err.msg);
  int count = probes <= 0 || probes > n_t ? (int)n_t : probes;
  double worst = 0, scale = 1e-3;
  for (int64_t i = 0; i < n_t; i++) scale = fmax(scale, fabs(grad[i]));
  for (int p = 0; p < count; p++) {
    int64_t i = count == n_t ? p : (int64_t)syno_rng_below(rng, (uint64_t)n_t);
    float saved = tensors[t][i];
    /* The operator is linear in each tensor, so a large step is exact up to
     * rounding, and rounding shrinks as the step grows. */
    const float h = 0.5f;
    tensors[t][i] = saved + h;
    double up = loss(o, &low->forward, b, tensors, gout, n_out);
    tensors[t][i] = saved - h;
    double down = loss(o, &low->forward, b, tensors, gout, n_out);
    tensors[t][i] = saved;
    double fd = (up - down) / (2.0 * h);
    double e = fabs(fd - grad[i]) / scale;
    if (e > worst) worst = e;
    if (e > tol)
      fail_msg("gradient of tensor %d at %lld: backward nest %.7g, finite difference %.7g", t, (long long)i,
               (double)grad[i], fd);
  }
  free(gout);
  free(grad);
}

void st_check_emitter_bindings(st_emitter_t emit, int bad) {
  st_op_t o;
  st_op_builtin(&o, "linear", "");
  syno_error_t err;
  char buf[64], want[64];
  snprintf(want, sizeof want, "binding %d does not exist", bad);
  assert_int_equal(emit(&o.op, bad, buf, sizeof buf, &err), -1);
  assert_non_null(strstr(err.msg, want));
  int len = emit(&o.op, 0, buf, sizeof buf, &err);
  assert_true(len > (int)sizeof buf);
  assert_int_equal(strlen(buf), sizeof buf - 1);
  st_op_free(&o);
}

/* Whether binding b of v gives every size of op and its forward nest a whole value, with the
 * weights' shapes of binding 0. */
static bool binding_ok(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, int b) {
  syno_error_t err;
  int rank[SYNO_MAX_TENSORS + 1], rank0[SYNO_MAX_TENSORS + 1];
  int64_t ext[SYNO_MAX_TENSORS + 1][SYNO_MAX_RANK], ext0[SYNO_MAX_TENSORS + 1][SYNO_MAX_RANK], x;
  if (syno_operator_extents(op, v, b, rank, ext, &err) || syno_operator_extents(op, v, 0, rank0, ext0, &err))
    return false;
  for (int t = 1; t < op->n_tensors; t++)
    for (int i = 0; i < rank[t]; i++)
      if (ext[t][i] != ext0[t][i]) return false;
  for (int i = 0; i < fwd->n_outer; i++)
    if (syno_size_eval(v, fwd->outer[i], b, &x, &err) || x < 1) return false;
  for (int i = 0; i < fwd->n_inner; i++)
    if (syno_size_eval(v, fwd->inner[i], b, &x, &err) || x < 1) return false;
  for (int k = 0; k < op->n_prims; k++) { /* every dimension of the graph, a split's halves included */
    const syno_prim_t *p = syno_graph_prim(op->g, op->prims[k]);
    for (int j = 0; j < p->n_in + p->n_out; j++) {
      syno_dim_t d = j < p->n_in ? p->in[j] : p->out[j - p->n_in];
      if (syno_size_eval(v, syno_graph_dim(op->g, d)->size, b, &x, &err) || x < 1) return false;
    }
  }
  for (int i = 0; i < fwd->n_nodes; i++)
    if (fwd->node[i].kind == SYNO_EXPR_SIZE && syno_size_eval(v, fwd->node[i].size, b, &x, &err)) return false;
  return syno_size_eval(v, fwd->divisor, b, &x, &err) == 0;
}

/* The primaries the module reads from its input: alone in an input axis, in no weight. */
static bool read_from_input(const syno_operator_t *op, int i) {
  syno_shape_t s;
  bool alone = false;
  syno_operator_tensor_shape(op, 0, &s);
  for (int a = 0; a < s.rank; a++) alone |= s.dim[a].p[i] == 1 && syno_size_primaries(s.dim[a]) == 1u << i;
  for (int t = 1; t < op->n_tensors; t++) {
    syno_operator_tensor_shape(op, t, &s);
    for (int a = 0; a < s.rank; a++)
      if (syno_size_primaries(s.dim[a]) >> i & 1) return false;
  }
  return alone;
}

void st_other_bindings(const syno_operator_t *op, const syno_nest_t *fwd, syno_vars_t *v) {
  int batch = -1, other = -1;
  for (int i = 0; i < v->n[SYNO_PRIMARY]; i++) {
    if (!read_from_input(op, i)) continue;
    if (strcmp(v->var[SYNO_PRIMARY][i].name, "N") == 0)
      batch = i;
    else if (other < 0)
      other = i;
  }
  for (int which = 0; which < 2; which++) {
    int i = which ? other : batch;
    if (i < 0) continue;
    for (int d = 1; d <= 12; d++) {
      v->bind[v->nbind] = v->bind[0];
      v->bind[v->nbind].p[i] += d;
      v->nbind++;
      if (binding_ok(op, fwd, v, v->nbind - 1)) break;
      v->nbind--;
    }
  }
}


void st_write_bindings(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, const char *dir,
                       syno_rng_t *rng, st_binding_fn each, void *user) {
  syno_error_t err;
  char path[1024];
  float *t[SYNO_MAX_TENSORS] = {0};
  int64_t numel[SYNO_MAX_TENSORS] = {0};
  snprintf(path, sizeof path, "%s/shapes", dir);
  FILE *shapes = fopen(path, "w");
  assert_non_null(shapes);
  for (int b = 0; b < v->nbind; b++) {
    int rank[SYNO_MAX_TENSORS + 1];
    int64_t ext[SYNO_MAX_TENSORS + 1][SYNO_MAX_RANK], n_out = 1;
    if (syno_operator_extents(op, v, b, rank, ext, &err)) fail_msg("%s", err.msg);
    fprintf(shapes, "%d", b);
    for (int i = 0; i < rank[0]; i++) fprintf(shapes, " %" PRId64, ext[0][i]);
    fprintf(shapes, " /");
    for (int i = 0; i < fwd->n_outer; i++) {
      int64_t x;
      assert_int_equal(syno_size_eval(v, fwd->outer[i], b, &x, &err), 0);
      fprintf(shapes, " %" PRId64, x);
      n_out *= x;
    }
    fprintf(shapes, "\n");
    for (int i = 0; i < op->n_tensors; i++) {
      if (i > 0 && b > 0) continue; /* the weights keep their shapes */
      numel[i] = 1;
      for (int k = 0; k < rank[i]; k++) numel[i] *= ext[i][k];
      free(t[i]);
      t[i] = st_random(rng, numel[i]);
      snprintf(path, sizeof path, i == 0 ? "%s/x%d" : "%s/t%d", dir, i == 0 ? b : i);
      st_write_floats(path, t[i], numel[i]);
    }
    each(b, t, numel, n_out, user);
  }
  fclose(shapes);
  for (int i = 0; i < op->n_tensors; i++) free(t[i]);
}
