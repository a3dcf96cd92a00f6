/* syno run: the reference interpreter on seeded random data, so a user can
 * check an operator's semantics from the shell. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/alloc.h"
#include "cli.h"
#include "syno/lower.h"
#include "syno/train.h"

static const char *usage =
    "usage: syno run (--builtin NAME | TEXT --input SHAPE --output SHAPE) [OPTIONS]\n"
    "\n"
    "Runs the operator through the reference interpreter on seeded standard-normal\n"
    "input and weights, and prints checksums (sum and L2 norm) of the output and,\n"
    "for a seeded random output gradient, of every gradient. Each gradient is\n"
    "computed twice, by its backward loop nest and by scattering through the\n"
    "forward nest, and the largest difference between the two is printed.\n";

typedef struct {
  double sum, l2;
} checksum_t;

static checksum_t checksum(const float *x, int64_t n) {
  checksum_t c = {0, 0};
  for (int64_t i = 0; i < n; i++) {
    c.sum += x[i];
    c.l2 += (double)x[i] * x[i];
  }
  c.l2 = sqrt(c.l2);
  return c;
}

static float *random_tensor(syno_rng_t *rng, int64_t n) {
  float *x = syno_malloc_array(n ? n : 1, sizeof(float));
  if (x)
    for (int64_t i = 0; i < n; i++) x[i] = (float)syno_rng_normal(rng);
  return x;
}

int cli_cmd_run(int argc, char **argv) {
  syno_opsel_t sel = {0};
  int json = 0;
  uint64_t seed = 1;
  long binding = 0;
  syno_opt_t opts[] = {
      CLI_OPSEL_OPTIONS(&sel),
      SYNO_OPT_UINT("seed", "S", &seed, UINT64_MAX, "random seed (default 1)"),
      SYNO_OPT_INT("binding", "B", &binding, 0, SYNO_MAX_BINDINGS - 1,
                   "which --bind to run, counting from 0 (default 0)"),
      SYNO_OPT_FLAG("json", &json, "print one JSON object"),
      SYNO_OPT_END,
  };
  int rc = cli_parse("run", usage, NULL, opts, argc, argv);
  if (rc >= 0) return rc;
  syno_cliop_t c;
  rc = cli_opsel_finish("run", &sel, binding, &c);
  if (rc) return rc;
  int b = (int)binding;
  const syno_operator_t *op = &c.op;
  syno_error_t err;
  syno_lowered_t *low = malloc(sizeof *low);
  float *tensors[SYNO_MAX_TENSORS] = {0}, *grads[SYNO_MAX_TENSORS] = {0}, *scatter = NULL, *out = NULL, *gout = NULL;
  int64_t numel[SYNO_MAX_TENSORS], out_n = 0;
  rc = SYNO_EXIT_FAIL;
  if (!low || syno_lower(op, low, &err) || syno_output_numel(op, b, &out_n, &err)) goto fail;
  syno_rng_t rng;
  syno_rng_seed(&rng, seed, 0);
  for (int t = 0; t < op->n_tensors; t++) {
    if (syno_tensor_numel(op, t, b, &numel[t], &err)) goto fail;
    if (!(tensors[t] = random_tensor(&rng, numel[t]))) goto oom;
  }
  out = syno_malloc_array(out_n, sizeof(float));
  gout = random_tensor(&rng, out_n);
  if (!out || !gout) goto oom;
  if (syno_interp_nest(&low->forward, &c.vars, b, (const float *const *)tensors, NULL, out, &err)) goto fail;
  char buf[512];
  syno_vars_print_binding(&c.vars, b, buf, sizeof buf);
  checksum_t co = checksum(out, out_n);
  cJSON *root = json ? cJSON_CreateObject() : NULL;
  char text[4096];
  syno_operator_print(op, text, sizeof text);
  if (json) {
    cJSON_AddStringToObject(root, "op", text);
    cJSON_AddStringToObject(root, "binding", buf);
    cJSON_AddNumberToObject(root, "seed", (double)seed);
    cJSON_AddNumberToObject(root, "output_sum", co.sum);
    cJSON_AddNumberToObject(root, "output_l2", co.l2);
  } else {
    printf("operator  %s\nbinding   %s\nseed      %llu\n", text, buf, (unsigned long long)seed);
    printf("output    %lld elements  sum %.6g  l2 %.6g\n", (long long)out_n, co.sum, co.l2);
  }
  cJSON *grad_json = json ? cJSON_AddArrayToObject(root, "gradients") : NULL;
  for (int t = 0; t < op->n_tensors; t++) {
    grads[t] = syno_malloc_array(numel[t], sizeof(float));
    free(scatter); /* overwritten whole below */
    scatter = syno_malloc_array(numel[t], sizeof(float));
    if (!grads[t] || !scatter) {
      cJSON_Delete(root);
      goto oom;
    }
    if (syno_interp_nest(&low->backward[t], &c.vars, b, (const float *const *)tensors, gout, grads[t], &err) ||
        syno_interp_grad_scatter(&low->forward, &c.vars, b, t, (const float *const *)tensors, gout, scatter, &err)) {
      cJSON_Delete(root);
      goto fail;
    }
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < numel[t]; i++) {
      diff = fmax(diff, fabs((double)grads[t][i] - scatter[i]));
      scale = fmax(scale, fabs((double)scatter[i]));
    }
    double rel = scale > 0 ? diff / scale : diff;
    checksum_t cg = checksum(grads[t], numel[t]);
    if (json) {
      cJSON *g = cJSON_CreateObject();
      cJSON_AddNumberToObject(g, "tensor", t);
      cJSON_AddNumberToObject(g, "sum", cg.sum);
      cJSON_AddNumberToObject(g, "l2", cg.l2);
      cJSON_AddNumberToObject(g, "gather_vs_scatter", rel);
      cJSON_AddItemToArray(grad_json, g);
    } else {
      printf("grad_in_%d %lld elements  sum %.6g  l2 %.6g  (backward nest vs scatter: %.2g relative)\n", t,
             (long long)numel[t], cg.sum, cg.l2, rel);
    }
  }
  if (json) {
    char *s = cJSON_PrintUnformatted(root);
    puts(s);
    free(s);
    cJSON_Delete(root);
  }
  rc = 0;
  goto done;
oom:
  snprintf(err.msg, sizeof err.msg, "out of memory");
fail:
  fprintf(stderr, "syno: %s\n", err.msg);
done:
  for (int t = 0; t < SYNO_MAX_TENSORS; t++) {
    free(tensors[t]);
    free(grads[t]);
  }
  free(scatter);
  free(out);
  free(gout);
  free(low);
  cli_op_free(&c);
  return rc;
}
