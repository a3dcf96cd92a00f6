/* syno space: the size of the search space per depth, what each rule and
 * the shape distance removed, and (with --duplicates) the operators that
 * canonicalization failed to tell apart. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "syno/grow.h"
#include "syno/normal.h"
#include "syno/space.h"
#include "syno/train.h"

static const char *usage =
    "usage: syno space (--preset NAME | --spec FILE) [OPTIONS]\n"
    "\n"
    "Counts the nodes and finished operators of the search space per depth, and how\n"
    "many children each canonicalization rule and the shape distance removed.\n";

typedef struct {
  char **text, **form, **uform; /* uform: syno_operator_normal_form_unordered */
  size_t n, cap;
  int failed;
  const bool *unordered; /* the input's unordered axes */
} collect_t;

static int collect(syno_space_t *s, uint32_t node, uint32_t index, void *ctx) {
  collect_t *c = ctx;
  syno_operator_t op;
  syno_error_t err;
  if (syno_node_final(s, node, index, &op, &err)) return -1;
  char text[4096], form[8192], uform[8192];
  syno_operator_print(&op, text, sizeof text);
  if (syno_operator_normal_form(&op, form, sizeof form, &err) < 0) {
    c->failed++;
    return 0;
  }
  if (syno_operator_normal_form_unordered(&op, c->unordered, uform, sizeof uform, &err) < 0) strcpy(uform, form);
  size_t cap = c->cap, ucap = c->cap;
  if (syno_grow((void **)&c->text, &cap, c->n + 1, sizeof *c->text) ||
      syno_grow((void **)&c->uform, &ucap, c->n + 1, sizeof *c->uform) ||
      syno_grow((void **)&c->form, &c->cap, c->n + 1, sizeof *c->form))
    return -1;
  c->text[c->n] = strdup(text);
  c->uform[c->n] = strdup(uform);
  c->form[c->n++] = strdup(form);
  return 0;
}

static const collect_t *sort_ctx;
static int by_form(const void *a, const void *b) {
  size_t i = *(const size_t *)a, j = *(const size_t *)b;
  int c = strcmp(sort_ctx->form[i], sort_ctx->form[j]);
  return c ? c : (i > j) - (i < j);
}
static int by_uform(const void *a, const void *b) {
  size_t i = *(const size_t *)a, j = *(const size_t *)b;
  int c = strcmp(sort_ctx->uform[i], sort_ctx->uform[j]);
  return c ? c : (i > j) - (i < j);
}

int cli_cmd_space(int argc, char **argv) {
  cli_spec_t cs = {0};
  long walks = 2000;
  uint64_t seed = 1;
  int exhaustive = 0, duplicates = 0, json = 0;
  syno_opt_t opts[] = {
      CLI_SPEC_OPTIONS(&cs),
      SYNO_OPT_FLAG("exhaustive", &exhaustive,
                    "enumerate every node (exact counts); otherwise the counts\n"
                    "are estimated from random walks (Knuth's estimator, which\n"
                    "counts a node once per path to it)"),
      SYNO_OPT_INT("walks", "N", &walks, 1, 100000000, "walks for the estimate (default 2000)"),
      SYNO_OPT_UINT("seed", "S", &seed, UINT64_MAX, "random seed of the estimate (default 1)"),
      SYNO_OPT_FLAG("duplicates", &duplicates,
                    "with --exhaustive: put every operator's loop nest in a\n"
                    "normal form and list operators whose forms collide;\n"
                    "then the same up to a permutation of the input's\n"
                    "unordered axes (which the layer before absorbs) and\n"
                    "any bijective relayout of a weight"),
      SYNO_OPT_FLAG("json", &json, "one JSON object"),
      SYNO_OPT_END,
  };
  int rc = cli_parse("space", usage, NULL, opts, argc, argv);
  if (rc >= 0) return rc;
  if (duplicates && !exhaustive) return cli_cmd_error(NULL, "space: --duplicates needs --exhaustive");
  if (syno_opt_given(opts, "walks") && exhaustive)
    return cli_cmd_error(NULL, "space: --walks is for the estimate; --exhaustive enumerates every node");
  syno_space_spec_t spec;
  rc = cli_spec_resolve(&cs, &spec);
  if (rc) return rc;
  syno_space_t *s;
  syno_error_t err;
  if (syno_space_new(&spec, &s, &err)) return cli_cmd_error(NULL, "space: %s", err.msg);
  int D = spec.opts.depth;
  double *nodes = calloc((size_t)D + 1, sizeof *nodes), *finals = calloc((size_t)D + 1, sizeof *finals);
  collect_t c = {0};
  c.unordered = spec.input.unordered;
  double t0 = syno_clock_seconds();
  if (exhaustive) {
    uint64_t *nd = calloc((size_t)D + 1, sizeof *nd), *fd = calloc((size_t)D + 1, sizeof *fd);
    rc = syno_space_exhaust(s, duplicates ? collect : NULL, &c, nd, fd, &err);
    for (int d = 0; d <= D; d++) {
      nodes[d] = (double)nd[d];
      finals[d] = (double)fd[d];
    }
    free(nd);
    free(fd);
  } else {
    /* Knuth's estimator: along a uniform walk, the product of the branching
     * factors estimates the number of paths of that length. */
    for (long w = 0; w < walks && !rc; w++) {
      syno_rng_t rng;
      syno_rng_seed(&rng, seed, (uint64_t)w);
      uint32_t id = syno_space_root(s);
      double weight = 1;
      nodes[0] += 1.0 / (double)walks;
      for (;;) {
        const syno_step_t *steps;
        int n = syno_node_children(s, id, &steps, &err);
        if (n < 0) {
          rc = -1;
          break;
        }
        int n_final = 0;
        for (int i = 0; i < n; i++) n_final += steps[i].kind == SYNO_STEP_FINALIZE;
        finals[syno_node_depth(s, id)] += weight * n_final / (double)walks;
        if (n == n_final) break;
        weight *= n - n_final;
        const syno_step_t *st = &steps[syno_rng_below(&rng, (uint64_t)(n - n_final))];
        id = st->target;
        nodes[syno_node_depth(s, id)] += weight / (double)walks;
      }
    }
  }
  double elapsed = syno_clock_seconds() - t0;
  if (rc) {
    fprintf(stderr, "syno: %s\n", err.msg);
    syno_space_free(s);
    return SYNO_EXIT_FAIL;
  }
  /* Duplicates: operators whose normal forms collide. */
  size_t *order = NULL, *uorder = NULL, n_dup_pairs = 0, n_udup_pairs = 0;
  if (duplicates) {
    order = malloc(sizeof *order * (c.n ? c.n : 1));
    uorder = malloc(sizeof *uorder * (c.n ? c.n : 1));
    for (size_t i = 0; i < c.n; i++) order[i] = uorder[i] = i;
    sort_ctx = &c;
    qsort(order, c.n, sizeof *order, by_form);
    qsort(uorder, c.n, sizeof *uorder, by_uform);
    for (size_t i = 1; i < c.n; i++) n_dup_pairs += !strcmp(c.form[order[i]], c.form[order[i - 1]]);
    for (size_t i = 1; i < c.n; i++) n_udup_pairs += !strcmp(c.uform[uorder[i]], c.uform[uorder[i - 1]]);
  }
  const syno_space_stats_t *st = syno_space_stats(s);
  cJSON *root = cJSON_CreateObject();
  double tn = 0, tf = 0;
  if (!json)
    printf("%s space, depth %d (%s)\n%5s %14s %14s\n", cs.preset ? cs.preset : cs.file, D,
           exhaustive ? "exhaustive" : "estimated", "depth", "nodes", "operators");
  cJSON *per = cJSON_AddArrayToObject(root, "depths");
  for (int d = 0; d <= D; d++) {
    tn += nodes[d];
    tf += finals[d];
    if (json) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddNumberToObject(o, "depth", d);
      cJSON_AddNumberToObject(o, "nodes", nodes[d]);
      cJSON_AddNumberToObject(o, "operators", finals[d]);
      cJSON_AddItemToArray(per, o);
    } else {
      printf("%5d %14.0f %14.0f\n", d, nodes[d], finals[d]);
    }
  }
  if (!json) {
    printf("%5s %14.0f %14.0f\n", "all", tn, tf);
    printf("children removed by rule:");
    for (int r = 0; r < SYNO_RULE_COUNT; r++)
      if (st->rule[r]) printf(" %s %llu", syno_rule_name((syno_rule_t)r), (unsigned long long)st->rule[r]);
    printf("\nchildren removed by shape distance %llu, chain length %llu, limits %llu, FLOPs bound %llu\n",
           (unsigned long long)st->prune[SYNO_PRUNE_DISTANCE], (unsigned long long)st->prune[SYNO_PRUNE_CHAIN],
           (unsigned long long)st->prune[SYNO_PRUNE_LIMIT], (unsigned long long)st->prune[SYNO_PRUNE_FLOPS]);
    printf("%.3f s\n", elapsed);
    if (duplicates) {
      printf("duplicates missed by canonicalization: %zu (among %zu operators)\n", n_dup_pairs, c.n);
      for (size_t i = 1; i < c.n; i++)
        if (!strcmp(c.form[order[i]], c.form[order[i - 1]]))
          printf("  %s\n  == %s\n", c.text[order[i - 1]], c.text[order[i]]);
      printf(
          "duplicates up to a permutation of the input's unordered axes and a relayout of the weights: %zu (among %zu "
          "operators)\n",
          n_udup_pairs, c.n);
      for (size_t i = 1; i < c.n; i++) {
        size_t a = uorder[i - 1], b = uorder[i];
        if (!strcmp(c.uform[a], c.uform[b]) && strcmp(c.form[a], c.form[b]))
          printf("  %s\n  ~= %s\n", c.text[a], c.text[b]);
      }
    }
  } else {
    cJSON_AddBoolToObject(root, "exhaustive", exhaustive);
    cJSON_AddNumberToObject(root, "depth", D);
    cJSON_AddNumberToObject(root, "nodes", tn);
    cJSON_AddNumberToObject(root, "operators", tf);
    cJSON *rules = cJSON_AddObjectToObject(root, "rules");
    for (int r = 0; r < SYNO_RULE_COUNT; r++)
      cJSON_AddNumberToObject(rules, syno_rule_name((syno_rule_t)r), (double)st->rule[r]);
    cJSON_AddNumberToObject(root, "pruned_by_distance", (double)st->prune[SYNO_PRUNE_DISTANCE]);
    cJSON_AddNumberToObject(root, "pruned_by_flops", (double)st->prune[SYNO_PRUNE_FLOPS]);
    cJSON_AddNumberToObject(root, "seconds", elapsed);
    if (duplicates) {
      cJSON_AddNumberToObject(root, "duplicates", (double)n_dup_pairs);
      cJSON *pairs = cJSON_AddArrayToObject(root, "duplicate_pairs");
      for (size_t i = 1; i < c.n; i++)
        if (!strcmp(c.form[order[i]], c.form[order[i - 1]])) {
          cJSON *p = cJSON_CreateArray();
          cJSON_AddItemToArray(p, cJSON_CreateString(c.text[order[i - 1]]));
          cJSON_AddItemToArray(p, cJSON_CreateString(c.text[order[i]]));
          cJSON_AddItemToArray(pairs, p);
        }
      cJSON_AddNumberToObject(root, "duplicates_unordered", (double)n_udup_pairs);
      cJSON *upairs = cJSON_AddArrayToObject(root, "unordered_pairs");
      for (size_t i = 1; i < c.n; i++) {
        size_t a = uorder[i - 1], b = uorder[i];
        if (!strcmp(c.uform[a], c.uform[b]) && strcmp(c.form[a], c.form[b])) {
          cJSON *p = cJSON_CreateArray();
          cJSON_AddItemToArray(p, cJSON_CreateString(c.text[a]));
          cJSON_AddItemToArray(p, cJSON_CreateString(c.text[b]));
          cJSON_AddItemToArray(upairs, p);
        }
      }
    }
    char *out = cJSON_PrintUnformatted(root);
    puts(out);
    free(out);
  }
  cJSON_Delete(root);
  for (size_t i = 0; i < c.n; i++) {
    free(c.text[i]);
    free(c.form[i]);
    free(c.uform[i]);
  }
  free(c.text);
  free(c.form);
  free(c.uform);
  free(order);
  free(uorder);
  free(nodes);
  free(finals);
  syno_space_free(s);
  return 0;
}
