/* syno sample: random walks through the search space that end in operators. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "syno/space.h"

static const char *help =
    "usage: syno sample (--preset NAME | --spec FILE) [OPTIONS]\n"
    "\n"
    "Draws random walks from the root of the search space until each finalizes an\n"
    "operator. A walk picks a live child with weight exp(-2 x its shape distance),\n"
    "so every operator is reachable but walks lean toward finishing; a walk that\n"
    "meets a dead end marks it dead and backs up one step.\n"
    "Prints each operator found (text form, FLOPs, parameters, the walk's depth),\n"
    "then a summary: operators per second, the fraction of walks that reached an\n"
    "operator, and how many distinct operators were found.\n"
    "\n"
    "options:\n"
    "  --preset NAME       conv2d, conv2d-wide, linear or linear-wide\n"
    "  --spec FILE         a search spec in JSON (see README)\n"
    "  --bind V=X,...      a binding for the preset (repeat for several)\n"
    "  -n N                number of walks (default 100)\n"
    "  --seed S            random seed (default 1); walk i uses stream i\n"
    "  --threads T         sample in T threads, one space each (default 1). The\n"
    "                      operators are split among the threads by a structural\n"
    "                      hash, so threads never find the same one; what is\n"
    "                      found depends on T and the seed, not on timing\n"
    "  --depth D           override the spec's depth\n"
    "  --max-count CAPS    primitives of each kind in one operator, e.g.\n"
    "                      merge=1,split=3,shift=2 (the published vision caps)\n"
    "  --repeat            sample with replacement (by default a space returns\n"
    "                      each operator once, so all are distinct per thread)\n"
    "  --json              one JSON object per line\n"
    "  -h, --help          this help\n";

int cli_cmd_sample(int argc, char **argv) {
  enum { OPT_SEED = 1, OPT_THREADS, OPT_JSON, OPT_REPEAT, OPT_HELP = 'h', OPT_N = 'n' };
  static const struct option own[] = {
      {"seed", required_argument, NULL, OPT_SEED}, {"threads", required_argument, NULL, OPT_THREADS},
      {"json", no_argument, NULL, OPT_JSON},       {"repeat", no_argument, NULL, OPT_REPEAT},
      {"help", no_argument, NULL, OPT_HELP},       {NULL, 0, NULL, 0}};
  struct option opts[SYNO_CLI_MAX_OPTS];
  cli_spec_longopts(opts, own);
  cli_spec_t cs = {0};
  long n = 100, threads = 1;
  unsigned long long seed = 1;
  bool json = false, repeat = false;
  int opt;
  optind = 1;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":hn:", opts, NULL)) != -1) {
    int r = cli_spec_option(&cs, opt, optarg);
    if (r < 0) return SYNO_EXIT_USAGE;
    if (r) continue;
    switch (opt) {
      case OPT_N:
        if (cli_parse_long(optarg, 1, 100000000, &n))
          return cli_usage_error("sample: -n '%s' is not a count of walks", optarg);
        break;
      case OPT_SEED:
        if (cli_parse_seed(optarg, &seed))
          return cli_usage_error("sample: --seed '%s' is not a non-negative integer", optarg);
        break;
      case OPT_THREADS:
        if (cli_parse_long(optarg, 1, 64, &threads))
          return cli_usage_error("sample: --threads '%s' is not 1..64", optarg);
        break;
      case OPT_JSON: json = true; break;
      case OPT_REPEAT: repeat = true; break;
      case OPT_HELP: fputs(help, stdout); return 0;
      case ':': return cli_usage_error("sample: option '%s' needs a value", argv[optind - 1]);
      default: return cli_usage_error("sample: unknown option '%s' (see syno sample --help)", argv[optind - 1]);
    }
  }
  if (optind < argc) return cli_usage_error("sample: unexpected argument '%s'", argv[optind]);
  syno_space_spec_t spec;
  int rc = cli_spec_resolve(&cs, &spec);
  if (rc) return rc;
  syno_sample_t *smp = calloc((size_t)n, sizeof *smp);
  if (!smp) {
    fprintf(stderr, "syno: out of memory\n");
    return SYNO_EXIT_FAIL;
  }
  syno_error_t err;
  double t0 = cli_now();
  rc = syno_space_sample(&spec, n, (int)threads, seed, 1000000, !repeat, smp, &err);
  double elapsed = cli_now() - t0;
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
  return rc;
}
