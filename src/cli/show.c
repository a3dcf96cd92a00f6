/* syno show: everything about one operator, as text or one JSON object. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "syno/codegen.h"
#include "syno/lower.h"

static const char *usage =
    "usage: syno show (--builtin NAME | TEXT --input SHAPE --output SHAPE) [OPTIONS]\n"
    "\n"
    "Prints an operator's text form, its input, output and weight shapes, FLOPs\n"
    "(a multiply-add counts as 2), parameters, and its forward and backward loop nests.\n";
static const char *epilog =
    "\n"
    "example:\n"
    "  syno show --builtin conv2d --bind N=2,C_in=4,C_out=8,H=9,W=9,k=3\n"
    "  syno show --builtin linear --emit pytorch > op.py\n";

static cJSON *shape_values(const syno_vars_t *v, const syno_shape_t *s, int b) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; i < s->rank; i++) {
    int64_t x = 0;
    syno_size_eval(v, s->dim[i], b, &x, NULL);
    cJSON_AddItemToArray(a, cJSON_CreateNumber((double)x));
  }
  return a;
}

static void print_values(const syno_vars_t *v, const syno_shape_t *s, int b) {
  printf("[");
  for (int i = 0; i < s->rank; i++) {
    int64_t x = 0;
    syno_size_eval(v, s->dim[i], b, &x, NULL);
    printf("%s%lld", i ? ", " : "", (long long)x);
  }
  printf("]");
}

static const char *tensor_name(int t, char *buf, size_t n) {
  if (t == 0)
    snprintf(buf, n, "input");
  else
    snprintf(buf, n, "weight %d", t);
  return buf;
}

/* Everything that depends on binding b, as one object. */
static cJSON *binding_json(const syno_cliop_t *c, const syno_lowered_t *low, const syno_shape_t *out, int b,
                           syno_error_t *err) {
  const syno_vars_t *v = &c->vars;
  const syno_operator_t *op = &c->op;
  char buf[512];
  int64_t flops, params, back = 0;
  if (syno_forward_flops(op, &low->forward, v, b, &flops, err) || syno_operator_params(op, b, &params, err))
    return NULL;
  for (int t = 0; t < op->n_tensors; t++) {
    int64_t f = 0;
    if (syno_nest_flops(&low->backward[t], v, b, &f, err)) return NULL;
    back += f;
  }
  cJSON *o = cJSON_CreateObject();
  syno_vars_print_binding(v, b, buf, sizeof buf);
  cJSON_AddStringToObject(o, "binding", buf);
  cJSON_AddItemToObject(o, "input", shape_values(v, &c->input, b));
  cJSON_AddItemToObject(o, "output", shape_values(v, out, b));
  cJSON *weights = cJSON_AddArrayToObject(o, "weights");
  for (int t = 1; t < op->n_tensors; t++) {
    syno_shape_t s;
    syno_operator_tensor_shape(op, t, &s);
    cJSON *w = cJSON_CreateObject();
    syno_shape_print(v, &s, buf, sizeof buf);
    cJSON_AddStringToObject(w, "symbolic", buf);
    cJSON_AddItemToObject(w, "shape", shape_values(v, &s, b));
    int64_t n = 0;
    syno_tensor_numel(op, t, b, &n, NULL);
    cJSON_AddNumberToObject(w, "params", (double)n);
    cJSON_AddItemToArray(weights, w);
  }
  cJSON_AddNumberToObject(o, "flops", (double)flops);
  cJSON_AddNumberToObject(o, "backward_flops", (double)back);
  cJSON_AddNumberToObject(o, "params", (double)params);
  return o;
}

static int show_json(const syno_cliop_t *c, const syno_lowered_t *low, const char *text) {
  const syno_vars_t *v = &c->vars;
  const syno_operator_t *op = &c->op;
  syno_error_t err;
  cJSON *root = cJSON_CreateObject();
  char buf[512];
  cJSON_AddStringToObject(root, "op", text);
  if (c->builtin) cJSON_AddStringToObject(root, "builtin", c->builtin->name);
  syno_shape_t out;
  syno_operator_output_shape(op, &out);
  syno_shape_print(v, &c->input, buf, sizeof buf);
  cJSON_AddStringToObject(root, "input_symbolic", buf);
  syno_shape_print(v, &out, buf, sizeof buf);
  cJSON_AddStringToObject(root, "output_symbolic", buf);
  /* The first binding's figures at the top level; all of them in "bindings". */
  cJSON *bindings = cJSON_CreateArray();
  double flops_total = 0;
  for (int b = 0; b < v->nbind; b++) {
    cJSON *o = binding_json(c, low, &out, b, &err);
    if (!o) {
      cJSON_Delete(root);
      cJSON_Delete(bindings);
      fprintf(stderr, "syno: %s\n", err.msg);
      return SYNO_EXIT_FAIL;
    }
    flops_total += cJSON_GetObjectItem(o, "flops")->valuedouble;
    if (b == 0)
      for (cJSON *item = o->child; item; item = item->next)
        cJSON_AddItemToObject(root, item->string, cJSON_Duplicate(item, 1));
    cJSON_AddItemToArray(bindings, o);
  }
  cJSON_AddItemToObject(root, "bindings", bindings);
  cJSON_AddNumberToObject(root, "flops_total", flops_total);
  cJSON_AddStringToObject(root, "flops_convention", "multiply-add = 2");
  cJSON *prims = cJSON_AddObjectToObject(root, "primitives");
  for (int k = 0; k < SYNO_PRIM_KINDS; k++) {
    int n = syno_operator_count(op, (syno_prim_kind_t)k);
    if (n) cJSON_AddNumberToObject(prims, syno_prim_name((syno_prim_kind_t)k), n);
  }
  cJSON_AddNumberToObject(prims, "reduce", op->n_red);
  char *nest = malloc(1 << 16);
  if (nest) {
    syno_nest_print(&low->forward, v, nest, 1 << 16);
    cJSON_AddStringToObject(root, "forward", nest);
    cJSON *bw = cJSON_AddArrayToObject(root, "backward");
    for (int t = 0; t < op->n_tensors; t++) {
      syno_nest_print(&low->backward[t], v, nest, 1 << 16);
      cJSON_AddItemToArray(bw, cJSON_CreateString(nest));
    }
    free(nest);
  }
  char *s = cJSON_PrintUnformatted(root);
  puts(s);
  free(s);
  cJSON_Delete(root);
  return 0;
}

static int show_text(const syno_cliop_t *c, const syno_lowered_t *low, const char *text) {
  const syno_vars_t *v = &c->vars;
  const syno_operator_t *op = &c->op;
  syno_error_t err;
  char buf[512];
  syno_shape_t out;
  syno_operator_output_shape(op, &out);
  if (c->builtin) printf("builtin   %s: %s\n", c->builtin->name, c->builtin->summary);
  printf("operator  %s\n", text);
  for (int b = 0; b < v->nbind; b++) {
    syno_vars_print_binding(v, b, buf, sizeof buf);
    printf("binding   %s\n", buf);
    syno_shape_print(v, &c->input, buf, sizeof buf);
    printf("input     %s = ", buf);
    print_values(v, &c->input, b);
    syno_shape_print(v, &out, buf, sizeof buf);
    printf("\noutput    %s = ", buf);
    print_values(v, &out, b);
    printf("\n");
    for (int t = 1; t < op->n_tensors; t++) {
      syno_shape_t s;
      syno_operator_tensor_shape(op, t, &s);
      syno_shape_print(v, &s, buf, sizeof buf);
      int64_t n = 0;
      syno_tensor_numel(op, t, b, &n, NULL);
      printf("weight %d  %s = ", t, buf);
      print_values(v, &s, b);
      printf(" (%lld parameters)\n", (long long)n);
    }
    int64_t flops, params;
    if (syno_forward_flops(op, &low->forward, v, b, &flops, &err) || syno_operator_params(op, b, &params, &err)) {
      fprintf(stderr, "syno: %s\n", err.msg);
      return SYNO_EXIT_FAIL;
    }
    printf("FLOPs     %lld (forward; a multiply-add counts as 2)\n", (long long)flops);
    printf("params    %lld\n", (long long)params);
  }
  printf("primitives");
  for (int k = 0; k < SYNO_PRIM_KINDS; k++) {
    int n = syno_operator_count(op, (syno_prim_kind_t)k);
    if (n) printf(" %s %d,", syno_prim_name((syno_prim_kind_t)k), n);
  }
  printf(" reduce %d\n", op->n_red);
  char *nest = malloc(1 << 16);
  if (!nest) return SYNO_EXIT_FAIL;
  syno_nest_print(&low->forward, v, nest, 1 << 16);
  printf("\nforward:\n%s", nest);
  for (int t = 0; t < op->n_tensors; t++) {
    syno_nest_print(&low->backward[t], v, nest, 1 << 16);
    char name[32];
    printf("\ngradient of the %s (grad_in_%d):\n%s", tensor_name(t, name, sizeof name), t, nest);
  }
  free(nest);
  return 0;
}

int cli_cmd_show(int argc, char **argv) {
  static const char *const langs[] = {"pytorch", "c", "halide", NULL};
  const char *lang = NULL;
  long binding = 0;
  syno_opsel_t sel = {0};
  int json = 0;
  syno_opt_t opts[] = {
      CLI_OPSEL_OPTIONS(&sel),
      SYNO_OPT_FLAG("json", &json, "print one JSON object instead"),
      SYNO_OPT_ENUM("emit", "LANG", &lang, langs,
                    "print generated code instead: pytorch (a torch.nn.Module),\n"
                    "c (C functions syno_op_forward, syno_op_backward) or halide\n"
                    "(a Halide generator); an alias of syno export --to\n"
                    "pytorch|c|halide, see docs/codegen.md"),
      SYNO_OPT_INT("binding", "B", &binding, 0, SYNO_MAX_BINDINGS - 1,
                   "the binding the generated code is for, from 0 (default 0)"),
      SYNO_OPT_END,
  };
  int rc = cli_parse("show", usage, epilog, opts, argc, argv);
  if (rc >= 0) return rc;
  syno_error_t err;
  if (syno_opt_conflict(opts, "json", "emit", &err)) return cli_cmd_error("show", "%s", err.msg);
  syno_cliop_t c;
  rc = cli_opsel_finish("show", &sel, binding, &c);
  if (rc) return rc;
  if (lang) {
    rc = cli_export_write(&c, lang, binding, stdout);
    cli_op_free(&c);
    return rc;
  }
  syno_lowered_t *low = malloc(sizeof *low);
  if (!low || syno_lower(&c.op, low, &err)) {
    if (low) fprintf(stderr, "syno: %s\n", err.msg);
    free(low);
    cli_op_free(&c);
    return SYNO_EXIT_FAIL;
  }
  char text[4096];
  syno_operator_print(&c.op, text, sizeof text);
  rc = json ? show_json(&c, low, text) : show_text(&c, low, text);
  free(low);
  cli_op_free(&c);
  return rc;
}
