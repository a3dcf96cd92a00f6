/* Sampling operators from a space in parallel (see syno/space.h,
 * syno_space_sample). Each thread builds its own space, partitioned by
 * structural hash, and takes walks thread, thread + T, ...; walk i is
 * seeded with stream i, so the result depends on the seed and T only. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/alloc.h"
#include "syno/rng.h"
#include "syno/space.h"

typedef struct {
  const syno_space_spec_t *spec;
  int thread, threads;
  long n;
  uint64_t seed;
  int max_walks;
  bool distinct;
  syno_sample_t *out;
  syno_space_stats_t stats; /* of the thread's space, at its end */
  syno_error_t err;
  int rc;
  bool running; /* on a thread of its own, to be joined */
} job_t;

static void *run_job(void *arg) {
  job_t *j = arg;
  syno_space_t *s;
  if (syno_space_new(j->spec, &s, &j->err)) {
    j->rc = -1;
    return NULL;
  }
  if (syno_space_set_partition(s, j->thread, j->threads, &j->err)) {
    j->rc = -1;
    syno_space_free(s);
    return NULL;
  }
  for (long w = j->thread; w < j->n; w += j->threads) {
    syno_rng_t rng;
    syno_rng_seed(&rng, j->seed, (uint64_t)w);
    uint32_t node, final;
    syno_sample_t *o = &j->out[w];
    int found = syno_space_random_walk(s, &rng, j->max_walks, j->distinct, &node, &final, &o->walks, &j->err);
    if (found < 0) {
      j->rc = -1;
      break;
    }
    syno_operator_t op;
    char buf[4096];
    if (found && syno_node_final(s, node, final, &op, &j->err) == 0) {
      syno_operator_print(&op, buf, sizeof buf);
      if (!(o->text = syno_strdup(buf))) {
        j->rc = syno_error_set(&j->err, "out of memory");
        break;
      }
      syno_node_final_cost(s, node, final, &o->flops, &o->params);
      o->depth = syno_node_depth(s, node);
    }
  }
  j->stats = *syno_space_stats(s);
  syno_space_free(s);
  return NULL;
}

int syno_space_sample(const syno_space_spec_t *spec, long n, int threads, uint64_t seed, int max_walks, bool distinct,
                      syno_sample_t *out, syno_space_stats_t *stats, syno_error_t *err) {
  if (threads < 1 || threads > 64) return syno_error_set(err, "sampling threads %d out of 1..64", threads);
  memset(out, 0, (size_t)n * sizeof *out);
  job_t *jobs = syno_calloc((size_t)threads, sizeof *jobs);
  pthread_t *tid = syno_calloc((size_t)threads, sizeof *tid);
  if (!jobs || !tid) {
    syno_free(jobs);
    syno_free(tid);
    return syno_error_set(err, "out of memory");
  }
  for (int t = 0; t < threads; t++) {
    jobs[t] = (job_t){.spec = spec,
                      .thread = t,
                      .threads = threads,
                      .n = n,
                      .seed = seed,
                      .max_walks = max_walks,
                      .distinct = distinct,
                      .out = out};
    if (threads == 1)
      run_job(&jobs[t]);
    else if (pthread_create(&tid[t], NULL, run_job, &jobs[t]) == 0)
      jobs[t].running = true;
    else
      jobs[t].rc = syno_error_set(&jobs[t].err, "cannot start sampling thread %d", t);
  }
  for (int t = 0; t < threads; t++)
    if (jobs[t].running) pthread_join(tid[t], NULL);
  int rc = 0;
  if (stats) {
    memset(stats, 0, sizeof *stats);
    for (int t = 0; t < threads; t++) {
      const syno_space_stats_t *x = &jobs[t].stats;
      stats->nodes += x->nodes;
      stats->finals += x->finals;
      for (int r = 0; r < SYNO_RULE_COUNT; r++) stats->rule[r] += x->rule[r];
      for (int r = 0; r < SYNO_PRUNE_COUNT; r++) stats->prune[r] += x->prune[r];
    }
  }
  for (int t = 0; t < threads && !rc; t++)
    if (jobs[t].rc) {
      *err = jobs[t].err;
      rc = -1;
    }
  syno_free(jobs);
  syno_free(tid);
  if (rc) syno_space_samples_free(out, n);
  return rc;
}

void syno_space_samples_free(syno_sample_t *s, long n) {
  for (long i = 0; i < n; i++) {
    syno_free(s[i].text);
    s[i].text = NULL;
  }
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

long syno_space_samples_distinct(const syno_sample_t *s, long n) {
  char **t = syno_malloc((size_t)(n > 0 ? n : 1) * sizeof *t);
  if (!t) return -1;
  long k = 0, d = 0;
  for (long i = 0; i < n; i++)
    if (s[i].text) t[k++] = s[i].text;
  qsort(t, (size_t)k, sizeof *t, cmp_str);
  for (long i = 0; i < k; i++) d += i == 0 || strcmp(t[i], t[i - 1]) != 0;
  syno_free(t);
  return d;
}
