/* syno sample: random walks through the search space that end in operators. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "syno/space.h"
#include "syno/train.h"

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
    "  --preset NAME       conv2d or linear\n"
    "  --spec FILE         a search spec in JSON (see README)\n"
    "  --bind V=X,...      a binding for the preset (repeat for several)\n"
    "  -n N                number of walks (default 100)\n"
    "  --seed S            random seed (default 1); walk i uses stream i\n"
    "  --threads T         sample in T threads, one space each (default 1). The\n"
    "                      operators are split among the threads by a structural\n"
    "                      hash, so threads never find the same one; what is\n"
    "                      found depends on T and the seed, not on timing\n"
    "  --depth D           override the spec's depth\n"
    "  --repeat            sample with replacement (by default a space returns\n"
    "                      each operator once, so all are distinct per thread)\n"
    "  --json              one JSON object per line\n"
    "  -h, --help          this help\n";

typedef struct {
  const syno_space_spec_t *spec;
  int thread, threads;
  long n;
  unsigned long long seed;
  char **text;     /* per walk: the operator, or NULL */
  double *flops, *params;
  int *depth, *walks;
  int max_walks;
  bool distinct;
  char errmsg[SYNO_ERROR_LEN];
  int rc;
} job_t;

static void *run_job(void *arg) {
  job_t *j = arg;
  syno_space_t *s;
  syno_error_t err;
  if (syno_space_new(j->spec, &s, &err)) {
    snprintf(j->errmsg, sizeof j->errmsg, "%s", err.msg);
    j->rc = -1;
    return NULL;
  }
  if (syno_space_set_partition(s, j->thread, j->threads, &err)) {
    snprintf(j->errmsg, sizeof j->errmsg, "%s", err.msg);
    j->rc = -1;
    syno_space_free(s);
    return NULL;
  }
  for (long w = j->thread; w < j->n; w += j->threads) {
    syno_rng_t rng;
    syno_nn_rng_seed(&rng, j->seed, (uint64_t)w);
    uint32_t node, final;
    int walks;
    int found = syno_space_random_walk(s, &rng, j->max_walks, j->distinct, &node, &final, &walks, &err);
    j->walks[w] = walks;
    if (found < 0) {
      snprintf(j->errmsg, sizeof j->errmsg, "%s", err.msg);
      j->rc = -1;
      break;
    }
    syno_operator_t op;
    char buf[4096];
    if (found && syno_node_final(s, node, final, &op, &err) == 0) {
      syno_operator_print(&op, buf, sizeof buf);
      j->text[w] = strdup(buf);
      syno_node_final_cost(s, node, final, &j->flops[w], &j->params[w]);
      j->depth[w] = syno_node_depth(s, node);
    }
  }
  syno_space_free(s);
  return NULL;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int syno_cmd_sample(int argc, char **argv) {
  enum { OPT_SEED = 1, OPT_THREADS, OPT_JSON, OPT_REPEAT, OPT_HELP = 'h', OPT_N = 'n' };
  static const struct option own[] = {
      {"seed", required_argument, NULL, OPT_SEED}, {"threads", required_argument, NULL, OPT_THREADS},
      {"json", no_argument, NULL, OPT_JSON},       {"repeat", no_argument, NULL, OPT_REPEAT},
      {"help", no_argument, NULL, OPT_HELP},       {NULL, 0, NULL, 0}};
  struct option opts[SYNO_CLI_MAX_OPTS];
  syno_cli_spec_longopts(opts, own);
  syno_cli_spec_t cs = {0};
  long n = 100, threads = 1;
  unsigned long long seed = 1;
  bool json = false, repeat = false;
  int opt;
  optind = 1;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":hn:", opts, NULL)) != -1) {
    int r = syno_cli_spec_option(&cs, opt, optarg);
    if (r < 0) return SYNO_EXIT_USAGE;
    if (r) continue;
    switch (opt) {
      case OPT_N:
        if (syno_cli_parse_long(optarg, 1, 100000000, &n)) return syno_cli_usage_error("sample: -n '%s' is not a count of walks", optarg);
        break;
      case OPT_SEED:
        if (syno_cli_parse_seed(optarg, &seed)) return syno_cli_usage_error("sample: --seed '%s' is not a non-negative integer", optarg);
        break;
      case OPT_THREADS:
        if (syno_cli_parse_long(optarg, 1, 64, &threads)) return syno_cli_usage_error("sample: --threads '%s' is not 1..64", optarg);
        break;
      case OPT_JSON: json = true; break;
      case OPT_REPEAT: repeat = true; break;
      case OPT_HELP: fputs(help, stdout); return 0;
      case ':': return syno_cli_usage_error("sample: option '%s' needs a value", argv[optind - 1]);
      default: return syno_cli_usage_error("sample: unknown option '%s' (see syno sample --help)", argv[optind - 1]);
    }
  }
  if (optind < argc) return syno_cli_usage_error("sample: unexpected argument '%s'", argv[optind]);
  syno_space_spec_t spec;
  int rc = syno_cli_spec_resolve(&cs, &spec);
  if (rc) return rc;
  job_t *jobs = calloc((size_t)threads, sizeof *jobs);
  char **text = calloc((size_t)n, sizeof *text);
  double *flops = calloc((size_t)n, sizeof *flops), *params = calloc((size_t)n, sizeof *params);
  int *dep = calloc((size_t)n, sizeof *dep), *walks = calloc((size_t)n, sizeof *walks);
  pthread_t *tid = calloc((size_t)threads, sizeof *tid);
  if (!jobs || !text || !flops || !params || !dep || !walks || !tid) {
    fprintf(stderr, "syno: out of memory\n");
    return SYNO_EXIT_FAIL;
  }
  double t0 = syno_cli_now();
  for (long t = 0; t < threads; t++) {
    jobs[t] = (job_t){.spec = &spec, .thread = (int)t, .threads = (int)threads, .n = n, .seed = seed,
                      .text = text, .flops = flops, .params = params, .depth = dep,
                      .walks = walks, .max_walks = 1000000, .distinct = !repeat};
    if (threads == 1) run_job(&jobs[t]);
    else pthread_create(&tid[t], NULL, run_job, &jobs[t]);
  }
  if (threads > 1)
    for (long t = 0; t < threads; t++) pthread_join(tid[t], NULL);
  double elapsed = syno_cli_now() - t0;
  rc = 0;
  for (long t = 0; t < threads; t++)
    if (jobs[t].rc) {
      fprintf(stderr, "syno: %s\n", jobs[t].errmsg);
      rc = SYNO_EXIT_FAIL;
    }
  long found = 0, total_walks = 0;
  for (long w = 0; w < n; w++) total_walks += walks[w];
  for (long w = 0; w < n && !rc; w++) {
    if (!text[w]) continue;
    found++;
    if (json) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "op", text[w]);
      cJSON_AddNumberToObject(o, "flops", flops[w]);
      cJSON_AddNumberToObject(o, "params", params[w]);
      cJSON_AddNumberToObject(o, "depth", dep[w]);
      char *s = cJSON_PrintUnformatted(o);
      puts(s);
      free(s);
      cJSON_Delete(o);
    } else {
      printf("%s\n    flops %.6g  params %.6g  depth %d\n", text[w], flops[w], params[w], dep[w]);
    }
  }
  /* Distinct operators, by text form. */
  char **sorted = malloc(sizeof(char *) * (size_t)(found ? found : 1));
  long k = 0, distinct = 0;
  for (long w = 0; w < n; w++)
    if (text[w]) sorted[k++] = text[w];
  qsort(sorted, (size_t)k, sizeof *sorted, cmp_str);
  for (long i = 0; i < k; i++) distinct += i == 0 || strcmp(sorted[i], sorted[i - 1]) != 0;
  free(sorted);
  if (!rc) {
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
      printf("%ld operators from %ld walks (%.1f%% of walks and back-ups ended in one), %ld distinct, %.2f s, %.1f operators/s, %ld thread%s\n",
             found, total_walks, total_walks ? 100.0 * (double)found / (double)total_walks : 0.0, distinct, elapsed, rate,
             threads, threads > 1 ? "s" : "");
    }
  }
  for (long w = 0; w < n; w++) free(text[w]);
  free(text);
  free(flops);
  free(params);
  free(dep);
  free(walks);
  free(jobs);
  free(tid);
  return rc;
}
