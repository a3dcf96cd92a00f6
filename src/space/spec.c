/* Search specs: the published defaults, the presets, reading a spec from
 * JSON, and checking a spec for contradictions. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/alloc.h"
#include "syno/file.h"
#include "syno/space.h"

static const struct {
  const char *name, *description;
} rules[] = {
#define SYNO_RULE_ROW(id, name, what) {name, what},
    SYNO_RULES(SYNO_RULE_ROW)
#undef SYNO_RULE_ROW
};

const char *syno_rule_name(syno_rule_t r) { return r < SYNO_RULE_COUNT ? rules[r].name : "?"; }
const char *syno_rule_description(syno_rule_t r) { return r < SYNO_RULE_COUNT ? rules[r].description : "?"; }

syno_rule_t syno_rule_find(const char *name) {
  for (int r = 0; r < SYNO_RULE_COUNT; r++)
    if (strcmp(rules[r].name, name) == 0) return (syno_rule_t)r;
  return SYNO_RULE_COUNT;
}

void syno_space_opts_default(syno_space_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->depth = 12;
  o->max_chain = 6;
  o->max_tensors = 2;
  o->max_reductions = 5;
  o->max_pooling = 8;
  for (int k = 0; k < SYNO_PRIM_KINDS; k++) o->enable[k] = true;
  o->enable[SYNO_PRIM_STRIDE] = false;
  o->enable[SYNO_PRIM_EXPAND] = false;
  for (int k = 0; k < SYNO_PRIM_KINDS; k++) o->max_count[k] = -1;
  for (int r = 0; r < SYNO_RULE_COUNT; r++) o->rule[r] = true;
  o->max_enumerations = 5;
  o->max_vars_in_size = 3;
  o->max_powers_in_size = 16;
  o->max_rdom_multiplier = 4;
  o->min_weight_params = 100;
  o->max_unfold_kernel = 30;
  o->min_unfold_ratio = 2.0;
  o->max_strided_dim = 30;
  o->max_shift_pattern = 2.0;
  o->max_expansion_repeat = 5;
  o->max_expansion_merge = 6144;
  o->min_shared_weight_dim = 3;
  o->max_shared_weight_dim = 8;
  o->max_finalizations = 2;
  o->prune_distance = true;
  o->group_distance = true;
  o->prune_flops = true;
}

/* The primitive kind of that name, or SYNO_PRIM_KINDS. */
static int prim_find(const char *name) {
  int k = 0;
  while (k < SYNO_PRIM_KINDS && strcmp(syno_prim_name((syno_prim_kind_t)k), name) != 0) k++;
  return k;
}

int syno_space_caps_parse(const char *text, int max_count[SYNO_PRIM_KINDS], syno_error_t *err) {
  char buf[256];
  if (snprintf(buf, sizeof buf, "%s", text) >= (int)sizeof buf)
    return syno_error_set(err, "caps '%.40s...' are too long", text);
  for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
    while (*item == ' ') item++;
    char *eq = strchr(item, '='), *end;
    if (!eq) return syno_error_set(err, "cap '%s' is not KIND=COUNT", item);
    *eq = 0;
    int k = prim_find(item);
    if (k == SYNO_PRIM_KINDS)
      return syno_error_set(err, "'%s' is not a primitive (split, merge, shift, stride, unfold, share, expand)", item);
    errno = 0;
    long v = strtol(eq + 1, &end, 10);
    if (!eq[1] || *end || errno || v < -1 || v > 100)
      return syno_error_set(err, "the cap of %s, '%s', is not -1..100", item, eq + 1);
    max_count[k] = (int)v;
  }
  return 0;
}

static int finish_spec(syno_space_spec_t *spec, const char *input, const char *output, syno_error_t *err) {
  if (syno_vars_scan(&spec->vars, input, err)) return syno_error_prefix(err, "input shape");
  if (syno_vars_scan(&spec->vars, output, err)) return syno_error_prefix(err, "output shape");
  if (syno_shape_parse(&spec->vars, input, &spec->input, err)) return syno_error_prefix(err, "input shape");
  if (syno_shape_parse(&spec->vars, output, &spec->output, err)) return syno_error_prefix(err, "output shape");
  return 0;
}

/* The settings of the original's published search for a preset, on top of
 * the defaults. conv2d: its ResNet-18 run (experiments/scripts/
 * mcts_resnet18_cifar100.sh), which the other vision runs vary only in the
 * Merge cap, the FLOPs ratios and the expansion limits; linear: its GPT-2
 * run. */
static void preset_opts(const char *name, syno_space_opts_t *o) {
  bool conv = strcmp(name, "conv2d") == 0, gpt = strcmp(name, "linear") == 0;
  if (!conv && !gpt) return;
  o->max_count[SYNO_PRIM_MERGE] = conv ? 1 : 2;
  o->max_count[SYNO_PRIM_SPLIT] = conv ? 3 : 2;
  o->max_count[SYNO_PRIM_SHIFT] = 2;
  o->max_count[SYNO_PRIM_STRIDE] = 0;
  o->max_flops_ratio = conv ? 0.9 : 1.2;
  o->min_flops_ratio = conv ? 0.15 : 0.1;
  o->min_unfold_ratio = 2.3;
  o->min_shared_weight_dim = o->max_shared_weight_dim = 8;
  if (conv) {
    o->max_expansion_merge = 2048;
  } else {
    /* experiments/scripts/mcts_gpt_lm1b.sh; its min_single_weight_params
     * 100000 is for GPT-2's 768-wide layers: at the sizes here it would
     * cut every weight, so the default (100) stays. */
    o->depth = 7;
    o->max_chain = 5;
  }
}

int syno_space_preset(const char *name, const char *bind, syno_space_spec_t *spec, syno_error_t *err) {
  syno_signature_t sig;
  if (syno_signature_preset(name, bind, &sig, err)) return -1;
  memset(spec, 0, sizeof *spec);
  syno_space_opts_default(&spec->opts);
  preset_opts(name, &spec->opts);
  spec->kind = (int)sig.kind;
  spec->vars = sig.vars;
  spec->input = sig.input;
  spec->output = sig.output;
  spec->n_fixed = sig.n_fixed;
  memcpy(spec->fixed_in, sig.fixed_in, sizeof spec->fixed_in);
  memcpy(spec->fixed_out, sig.fixed_out, sizeof spec->fixed_out);
  return syno_space_spec_check(spec, err);
}

int syno_space_spec_check(const syno_space_spec_t *spec, syno_error_t *err) {
  const syno_space_opts_t *o = &spec->opts;
  if (spec->vars.nbind < 1) return syno_error_set(err, "the spec has no binding");
  if (o->depth < 1 || o->depth > 40) return syno_error_set(err, "depth %d out of range 1..40", o->depth);
  if (o->max_chain < 1) return syno_error_set(err, "max_chain %d must be at least 1", o->max_chain);
  if (o->max_tensors < 2 || o->max_tensors > SYNO_MAX_TENSORS)
    return syno_error_set(err, "max_tensors %d out of range 2..%d (the input plus at least one weight)", o->max_tensors,
                          SYNO_MAX_TENSORS);
  if (o->max_reductions < 0 || o->max_reductions > SYNO_MAX_REDUCTIONS)
    return syno_error_set(err, "max_reductions %d out of range 0..%d", o->max_reductions, SYNO_MAX_REDUCTIONS);
  if (o->min_flops < 0 || o->max_flops < 0) return syno_error_set(err, "FLOPs limits must not be negative");
  if (o->max_flops > 0 && o->min_flops > o->max_flops)
    return syno_error_set(err, "min_flops %g is above max_flops %g: no operator can satisfy both", o->min_flops,
                          o->max_flops);
  if (!(o->min_flops_ratio >= 0) || !(o->max_flops_ratio >= 0))
    return syno_error_set(err, "FLOPs ratios must not be negative");
  if (o->max_flops_ratio > 0 && o->min_flops_ratio > o->max_flops_ratio)
    return syno_error_set(err, "min_flops_ratio %g is above max_flops_ratio %g: no operator can satisfy both",
                          o->min_flops_ratio, o->max_flops_ratio);
  if ((o->min_flops_ratio > 0 || o->max_flops_ratio > 0) && spec->kind < 0)
    return syno_error_set(err,
                          "FLOPs ratios need a preset (they are ratios of its standard operator): "
                          "give min_flops/max_flops instead");
  if (o->max_params < 0) return syno_error_set(err, "max_params must not be negative");
  if (o->max_enumerations < 1 || o->max_enumerations > 9)
    return syno_error_set(err, "max_enumerations out of range 1..9");
  if (o->max_finalizations < 1) return syno_error_set(err, "max_finalizations must be at least 1");
  for (int k = 0; k < SYNO_PRIM_KINDS; k++)
    if (o->max_count[k] < -1 || o->max_count[k] > 100)
      return syno_error_set(err, "max_count of %s is %d: use 0..100, or -1 for no cap",
                            syno_prim_name((syno_prim_kind_t)k), o->max_count[k]);
  if (o->enable[SYNO_PRIM_SHARE] && o->max_count[SYNO_PRIM_SHARE] == 0)
    return syno_error_set(err, "max_count of share is 0: every operator needs a weight");
  if (o->rule[SYNO_RULE_C3] && o->max_count[SYNO_PRIM_SHARE] == 1)
    return syno_error_set(err, "max_count of share is 1: under rule C3 a contraction shares two dims at least");
  if (!o->enable[SYNO_PRIM_SHARE])
    return syno_error_set(err, "contractions cannot be disabled: every operator needs a weight");
  if (spec->input.rank < 1 || spec->output.rank < 1)
    return syno_error_set(err, "input and output shapes need at least one axis");
  for (int i = 0; i < spec->n_fixed; i++) {
    int a = spec->fixed_in[i], b = spec->fixed_out[i];
    if (a < 0 || a >= spec->input.rank || b < 0 || b >= spec->output.rank)
      return syno_error_set(err, "fixed pair %d (%d, %d) is outside the shapes", i, a, b);
    if (!syno_size_eq(spec->input.dim[a], spec->output.dim[b]))
      return syno_error_set(err, "fixed pair %d joins axes of different sizes", i);
  }
  /* Every shape dim must be a positive integer under every binding. */
  for (int side = 0; side < 2; side++) {
    const syno_shape_t *sh = side ? &spec->output : &spec->input;
    for (int i = 0; i < sh->rank; i++)
      for (int b = 0; b < spec->vars.nbind; b++) {
        int64_t x;
        if (syno_size_eval(&spec->vars, sh->dim[i], b, &x, err) || x < 1)
          return syno_error_prefix(err, "%s axis %d", side ? "output" : "input", i);
      }
  }
  return 0;
}

/* --- JSON --- */

static int get_number(const cJSON *obj, const char *key, double *out, bool integer, syno_error_t *err) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!x) return 0;
  if (!cJSON_IsNumber(x)) return syno_error_set(err, "field '%s' must be a number", key);
  /* The range first: converting a double beyond it to an integer is undefined. */
  if (integer && !(x->valuedouble >= INT_MIN && x->valuedouble <= INT_MAX && x->valuedouble == floor(x->valuedouble)))
    return syno_error_set(err, "field '%s' must be an integer", key);
  /* The real-valued fields are limits and ratios: none is negative. */
  if (!integer && !(x->valuedouble >= 0 && isfinite(x->valuedouble)))
    return syno_error_set(err, "field '%s' must be a number >= 0 (got %g)", key, x->valuedouble);
  *out = x->valuedouble;
  return 0;
}

/* Spec JSON is strict: one object and nothing after it, no key twice in an object, no NUL
 * escaped into a string (which would cut it short unseen). */
static int strict_json(const char *json, const cJSON *root, const char *end, syno_error_t *err) {
  for (const char *p = json; *p; p++)
    if (p[0] == '\\' && p[1] == 'u' && p[2] == '0' && p[3] == '0' && p[4] == '0' && p[5] == '0')
      return syno_error_set(err, "a \\u0000 escape at offset %ld: a string with a NUL byte", (long)(p - json));
  while (end && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) end++;
  if (end && *end) return syno_error_set(err, "data after the JSON object at offset %ld", (long)(end - json));
  for (const cJSON *a = root ? root->child : NULL; a; a = a->next)
    for (const cJSON *b = a->next; b; b = b->next)
      if (a->string && b->string && !strcmp(a->string, b->string))
        return syno_error_set(err, "field '%s' is given twice", a->string);
  return 0;
}

static int get_int(const cJSON *obj, const char *key, int *out, syno_error_t *err) {
  double d = *out;
  if (get_number(obj, key, &d, true, err)) return -1;
  *out = (int)d;
  return 0;
}

static int get_bool(const cJSON *obj, const char *key, bool *out, syno_error_t *err) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!x) return 0;
  if (!cJSON_IsBool(x)) return syno_error_set(err, "field '%s' must be true or false", key);
  *out = cJSON_IsTrue(x);
  return 0;
}

static const char *get_string(const cJSON *obj, const char *key, syno_error_t *err, int *rc) {
  const cJSON *x = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!x) return NULL;
  if (!cJSON_IsString(x)) *rc = syno_error_set(err, "field '%s' must be a string", key);
  return cJSON_IsString(x) ? x->valuestring : NULL;
}

static const char *known_fields[] = {"preset",
                                     "vars",
                                     "input",
                                     "output",
                                     "bind",
                                     "fixed",
                                     "depth",
                                     "max_chain",
                                     "max_tensors",
                                     "max_reductions",
                                     "min_flops",
                                     "max_flops",
                                     "min_flops_ratio",
                                     "max_flops_ratio",
                                     "max_params",
                                     "max_pooling",
                                     "primitives",
                                     "max_count",
                                     "rules",
                                     "max_finalizations",
                                     "min_weight_params",
                                     "max_rdom_multiplier",
                                     "max_unfold_kernel",
                                     "min_unfold_ratio",
                                     "max_shift_pattern",
                                     "max_expansion_merge",
                                     "max_expansion_repeat",
                                     "max_strided_dim",
                                     "min_shared_weight_dim",
                                     "max_shared_weight_dim",
                                     "max_enumerations",
                                     "max_vars_in_size",
                                     "max_powers_in_size",
                                     "prune_distance",
                                     "group_distance",
                                     "prune_flops",
                                     NULL};

int syno_space_spec_from_json(const char *json, syno_space_spec_t *spec, syno_error_t *err) {
  /* cJSON reports a failed allocation as a syntax error; malloc's ENOMEM
   * (and the allocation layer's, when cJSON is hooked to it) tells them apart. */
  errno = 0;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(json, &end, false);
  if (!root) {
    if (errno == ENOMEM) return syno_error_set(err, "out of memory");
    const char *at = cJSON_GetErrorPtr();
    return syno_error_set(err, "not valid JSON near '%.20s'", at ? at : "");
  }
  int rc = 0;
  if (!cJSON_IsObject(root)) {
    rc = syno_error_set(err, "the spec must be a JSON object");
    goto done;
  }
  if ((rc = strict_json(json, root, end, err))) goto done;
  for (const cJSON *f = root->child; f; f = f->next) {
    bool known = false;
    for (int i = 0; known_fields[i]; i++) known = known || strcmp(f->string, known_fields[i]) == 0;
    if (!known) {
      rc = syno_error_set(err, "unknown field '%s'", f->string);
      goto done;
    }
  }
  const char *preset = get_string(root, "preset", err, &rc), *vars = get_string(root, "vars", err, &rc);
  const char *input = get_string(root, "input", err, &rc), *output = get_string(root, "output", err, &rc);
  if (rc) goto done;
  /* Bindings: one string or an array of strings. */
  const cJSON *bind = cJSON_GetObjectItemCaseSensitive(root, "bind");
  const char *binds[SYNO_MAX_BINDINGS];
  int n_bind = 0;
  if (cJSON_IsString(bind))
    binds[n_bind++] = bind->valuestring;
  else if (cJSON_IsArray(bind)) {
    for (const cJSON *b = bind->child; b; b = b->next) {
      if (cJSON_IsString(b) && !b->valuestring[0]) {
        rc = syno_error_set(err, "field 'bind' has an empty binding (give \"N=8, ...\", or leave 'bind' out)");
        goto done;
      }
      if (!cJSON_IsString(b) || n_bind >= SYNO_MAX_BINDINGS) {
        rc = syno_error_set(err, "field 'bind' must be a string or an array of at most %d strings", SYNO_MAX_BINDINGS);
        goto done;
      }
      binds[n_bind++] = b->valuestring;
    }
  } else if (bind) {
    rc = syno_error_set(err, "field 'bind' must be a string or an array of strings");
    goto done;
  }
  if (preset) {
    if (vars || input || output || cJSON_GetObjectItemCaseSensitive(root, "fixed")) {
      rc = syno_error_set(err, "field 'preset' cannot be combined with 'vars', 'input', 'output' or 'fixed'");
      goto done;
    }
    if ((rc = syno_space_preset(preset, n_bind ? binds[0] : "", spec, err))) {
      syno_error_prefix(err, "field 'preset'");
      goto done;
    }
    for (int i = 1; i < n_bind; i++)
      if ((rc = syno_vars_bind(&spec->vars, binds[i], err))) {
        syno_error_prefix(err, "field 'bind'");
        goto done;
      }
  } else {
    if (!input || !output) {
      rc = syno_error_set(err, "the spec needs 'input' and 'output' shapes (or a 'preset')");
      goto done;
    }
    memset(spec, 0, sizeof *spec);
    syno_space_opts_default(&spec->opts);
    spec->kind = -1;
    syno_vars_init(&spec->vars);
    if (vars && (rc = syno_vars_declare(&spec->vars, vars, err))) {
      syno_error_prefix(err, "field 'vars'");
      goto done;
    }
    if ((rc = finish_spec(spec, input, output, err))) goto done;
    if (n_bind == 0) binds[n_bind++] = "";
    for (int i = 0; i < n_bind; i++)
      if ((rc = syno_vars_bind(&spec->vars, binds[i], err))) {
        syno_error_prefix(err, "field 'bind'");
        goto done;
      }
    const cJSON *fixed = cJSON_GetObjectItemCaseSensitive(root, "fixed");
    if (fixed) {
      if (!cJSON_IsArray(fixed)) {
        rc = syno_error_set(err, "field 'fixed' must be an array of [input axis, output axis] pairs");
        goto done;
      }
      for (const cJSON *p = fixed->child; p; p = p->next) {
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 || !cJSON_IsNumber(p->child) ||
            !cJSON_IsNumber(p->child->next) || spec->n_fixed >= SYNO_MAX_FIXED ||
            !(p->child->valuedouble >= 0 && p->child->valuedouble < SYNO_MAX_RANK &&
              p->child->valuedouble == floor(p->child->valuedouble)) ||
            !(p->child->next->valuedouble >= 0 && p->child->next->valuedouble < SYNO_MAX_RANK &&
              p->child->next->valuedouble == floor(p->child->next->valuedouble))) {
          rc = syno_error_set(err, "field 'fixed' must be an array of at most %d [input axis, output axis] pairs",
                              SYNO_MAX_FIXED);
          goto done;
        }
        spec->fixed_in[spec->n_fixed] = p->child->valueint;
        spec->fixed_out[spec->n_fixed++] = p->child->next->valueint;
      }
    }
  }
  syno_space_opts_t *o = &spec->opts;
  if ((rc = get_int(root, "depth", &o->depth, err)) || (rc = get_int(root, "max_chain", &o->max_chain, err)) ||
      (rc = get_int(root, "max_tensors", &o->max_tensors, err)) ||
      (rc = get_int(root, "max_reductions", &o->max_reductions, err)) ||
      (rc = get_int(root, "max_finalizations", &o->max_finalizations, err)) ||
      (rc = get_number(root, "min_flops", &o->min_flops, false, err)) ||
      (rc = get_number(root, "max_flops", &o->max_flops, false, err)) ||
      (rc = get_number(root, "min_flops_ratio", &o->min_flops_ratio, false, err)) ||
      (rc = get_number(root, "max_flops_ratio", &o->max_flops_ratio, false, err)) ||
      (rc = get_number(root, "max_params", &o->max_params, false, err)) ||
      (rc = get_number(root, "max_pooling", &o->max_pooling, false, err)) ||
      (rc = get_number(root, "min_weight_params", &o->min_weight_params, false, err)) ||
      (rc = get_number(root, "max_rdom_multiplier", &o->max_rdom_multiplier, false, err)) ||
      (rc = get_number(root, "max_unfold_kernel", &o->max_unfold_kernel, false, err)) ||
      (rc = get_number(root, "min_unfold_ratio", &o->min_unfold_ratio, false, err)) ||
      (rc = get_number(root, "max_shift_pattern", &o->max_shift_pattern, false, err)) ||
      (rc = get_number(root, "max_expansion_merge", &o->max_expansion_merge, false, err)) ||
      (rc = get_number(root, "max_expansion_repeat", &o->max_expansion_repeat, false, err)) ||
      (rc = get_number(root, "max_strided_dim", &o->max_strided_dim, false, err)) ||
      (rc = get_number(root, "min_shared_weight_dim", &o->min_shared_weight_dim, false, err)) ||
      (rc = get_number(root, "max_shared_weight_dim", &o->max_shared_weight_dim, false, err)) ||
      (rc = get_int(root, "max_enumerations", &o->max_enumerations, err)) ||
      (rc = get_int(root, "max_vars_in_size", &o->max_vars_in_size, err)) ||
      (rc = get_int(root, "max_powers_in_size", &o->max_powers_in_size, err)) ||
      (rc = get_bool(root, "prune_distance", &o->prune_distance, err)) ||
      (rc = get_bool(root, "group_distance", &o->group_distance, err)) ||
      (rc = get_bool(root, "prune_flops", &o->prune_flops, err)))
    goto done;
  /* -1: no limit on the variables or powers in a size (the C++ defaults) */
  if (o->max_vars_in_size < 0) o->max_vars_in_size = INT_MAX;
  if (o->max_powers_in_size < 0) o->max_powers_in_size = INT_MAX;
  /* "primitives": {"stride": true, "expand": false, ...}; "rules": {"R1": false, ...} */
  const cJSON *prims = cJSON_GetObjectItemCaseSensitive(root, "primitives");
  if (prims && !cJSON_IsObject(prims)) {
    rc = syno_error_set(err, "field 'primitives' must be an object of primitive names and true/false");
    goto done;
  }
  for (const cJSON *p = prims ? prims->child : NULL; p; p = p->next) {
    int k = prim_find(p->string);
    if (k == SYNO_PRIM_KINDS || !cJSON_IsBool(p)) {
      rc = syno_error_set(err, "field 'primitives': '%s' is not a primitive with a true/false value", p->string);
      goto done;
    }
    o->enable[k] = cJSON_IsTrue(p);
  }
  /* "max_count": {"merge": 1, "split": 3, ...}; -1 lifts a cap */
  const cJSON *caps = cJSON_GetObjectItemCaseSensitive(root, "max_count");
  if (caps && !cJSON_IsObject(caps)) {
    rc = syno_error_set(err, "field 'max_count' must be an object of primitive names and counts");
    goto done;
  }
  for (const cJSON *p = caps ? caps->child : NULL; p; p = p->next) {
    int k = prim_find(p->string);
    if (k == SYNO_PRIM_KINDS || !cJSON_IsNumber(p) || fabs(p->valuedouble) > 1e6 ||
        p->valuedouble != floor(p->valuedouble)) {
      rc = syno_error_set(err, "field 'max_count': '%s' is not a primitive with an integer count", p->string);
      goto done;
    }
    o->max_count[k] = p->valueint;
  }
  const cJSON *rl = cJSON_GetObjectItemCaseSensitive(root, "rules");
  if (rl && !cJSON_IsObject(rl)) {
    rc = syno_error_set(err, "field 'rules' must be an object of rule names and true/false");
    goto done;
  }
  for (const cJSON *r = rl ? rl->child : NULL; r; r = r->next) {
    syno_rule_t id = syno_rule_find(r->string);
    if (id == SYNO_RULE_COUNT || !cJSON_IsBool(r)) {
      rc = syno_error_set(err, "field 'rules': '%s' is not a rule with a true/false value", r->string);
      goto done;
    }
    o->rule[id] = cJSON_IsTrue(r);
  }
  rc = syno_space_spec_check(spec, err);
done:
  cJSON_Delete(root);
  return rc ? -1 : 0;
}

int syno_space_spec_load(const char *path, syno_space_spec_t *spec, syno_error_t *err) {
  size_t n;
  char *buf = syno_read_regular(path, 1 << 20, &n, err);
  if (!buf) return syno_error_prefix(err, "spec file");
  size_t len = strlen(buf);
  if (len != n) {
    syno_free(buf);
    return syno_error_set(err, "spec file %s is not valid JSON: a NUL byte at offset %zu", path, len);
  }
  int rc = syno_space_spec_from_json(buf, spec, err);
  syno_free(buf);
  return rc ? syno_error_prefix(err, "%s", path) : 0;
}
