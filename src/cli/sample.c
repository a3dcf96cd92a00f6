/* syno sample: random walks through the search space that end in operators. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "syno/space.h"

static const char *usage =
    "usage: syno sample (--preset NAME | --spec FILE) [OPTIONS]\n"
    "\n"
    "Draws random walks from the root of the search space until each finalizes an\n"
    "operator. A walk picks a live child with weight exp(-2 x its shape distance),\n"
    "so every operator is reachable but walks lean toward finishing; a walk that\n"
    "meets a dead end marks it dead and backs up one step.\n"
    "Prints each operator found (text form, FLOPs, parameters, the walk's depth),\n"
    "then a summary: operators per second, the fraction of walks that reached an\n"
    "operator, and how many distinct operators were found.\n";

int cli_cmd_sample(int argc, char **argv) {
  cli_spec_t cs = {0};
  long n = 100, threads = 1;
  uint64_t seed = 1;
  int json = 0, repeat = 0;
  syno_opt_t opts[] = {
      CLI_SPEC_OPTIONS(&cs),
      SYNO_OPT_INT("n", "N", &n, 1, 100000000, "number of walks (default 100)"),
      SYNO_OPT_UINT("seed", "S", &seed, UINT64_MAX, "random seed (default 1); walk i uses stream i"),
      SYNO_OPT_INT("threads", "T", &threads, 1, 64,
                   "sample in T threads, one space each (default 1). The\n"
                   "operators are split among the threads by a structural\n"
                   "hash, so threads never find the same one; what is\n"
                   "found depends on T and the seed, not on timing"),
      SYNO_OPT_FLAG("repeat", &repeat,
                    "sample with replacement (by default a space returns\n"
                    "each operator once, so all are distinct per thread)"),
      SYNO_OPT_FLAG("json", &json, "one JSON object per line"),
      SYNO_OPT_END,
  };
  int rc = cli_parse("sample", usage, NULL, opts, argc, argv);
  if (rc >= 0) return rc;
  syno_space_spec_t spec;
  rc = cli_spec_resolve(&cs, &spec);
  if (rc) return rc;
  syno_sample_t *smp = calloc((size_t)n, sizeof *smp);
  if (!smp) {
    fprintf(stderr, "syno: out of memory\n");
    return SYNO_EXIT_FAIL;
  }
  syno_error_t err;
  syno_space_stats_t stats;
  double t0 = syno_clock_seconds();
  rc = syno_space_sample(&spec, n, (int)threads, seed, 1000000, !repeat, smp, &stats, &err);
  double elapsed = syno_clock_seconds() - t0;
  if (rc) {
    fprintf(stderr, "syno: %s\n", err.msg);
    free(smp);
    return SYNO_EXIT_FAIL;
  }
  long found = 0, total_walks = 0;
  for (long w = 0; w < n; w++) total_walks += smp[w].walks;
  for (long w = 0; w < n; w++) {
    const syno_sample_t *o = &smp[w];
    if (!o->text) continue;
    found++;
    if (json) {
      cJSON *j = cJSON_CreateObject();
      cJSON_AddStringToObject(j, "op", o->text);
      cJSON_AddNumberToObject(j, "flops", o->flops);
      cJSON_AddNumberToObject(j, "params", o->params);
      cJSON_AddNumberToObject(j, "depth", o->depth);
      char *t = cJSON_PrintUnformatted(j);
      puts(t);
      free(t);
      cJSON_Delete(j);
    } else {
      printf("%s\n    flops %.6g  params %.6g  depth %d\n", o->text, o->flops, o->params, o->depth);
    }
  }
  long distinct = syno_space_samples_distinct(smp, n);
  double rate = elapsed > 0 ? (double)found / elapsed : 0;
  if (json) {
    cJSON *o = cJSON_CreateObject(), *sum = cJSON_AddObjectToObject(o, "summary");
    cJSON_AddNumberToObject(sum, "samples", (double)n);
    cJSON_AddNumberToObject(sum, "walks", (double)total_walks);
    cJSON_AddNumberToObject(sum, "operators", (double)found);
    cJSON_AddNumberToObject(sum, "valid_fraction", total_walks ? (double)found / (double)total_walks : 0);
    cJSON_AddNumberToObject(sum, "distinct", (double)distinct);
    cJSON_AddNumberToObject(sum, "seconds", elapsed);
    cJSON_AddNumberToObject(sum, "operators_per_second", rate);
    cJSON_AddNumberToObject(sum, "threads", (double)threads);
    char *s = cJSON_PrintUnformatted(o);
    puts(s);
    free(s);
    cJSON_Delete(o);
  } else {
    printf(
        "%ld operators from %ld walks (%.1f%% of walks and back-ups ended in one), %ld distinct, %.2f s, %.1f "
        "operators/s, %ld thread%s\n",
        found, total_walks, total_walks ? 100.0 * (double)found / (double)total_walks : 0.0, distinct, elapsed, rate,
        threads, threads > 1 ? "s" : "");
  }
  syno_space_samples_free(smp, n);
  free(smp);
  return found ? rc : cli_empty_space("sample", &spec, &stats, total_walks);
}
