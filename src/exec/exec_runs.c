/* Offset tables as strided runs (see exec_runs.h). */
#include <stdlib.h>
#include <string.h>

#include "exec_runs.h"

typedef struct {
  int32_t len, start, stride; /* start -1: a run of zeros */
} run_t;

struct exec_runs {
  int64_t nruns;
  run_t run[];
};

/* The run starting at t[i]: its length and stride. */
static run_t next_run(const int32_t *t, int64_t n, int64_t i) {
  run_t r = {1, t[i], 1};
  if (t[i] < 0) {
    while (i + r.len < n && t[i + r.len] < 0 && r.len < INT32_MAX) r.len++;
    r.start = -1;
    return r;
  }
  if (i + 1 < n && t[i + 1] >= 0) r.stride = t[i + 1] - t[i];
  while (i + r.len < n && t[i + r.len] >= 0 && t[i + r.len] == t[i + r.len - 1] + r.stride && r.len < INT32_MAX)
    r.len++;
  return r;
}

exec_runs_t *exec_runs_new(const int32_t *t, int64_t n, int min_len) {
  int64_t nruns = 0;
  for (int64_t i = 0; i < n; i += next_run(t, n, i).len) nruns++;
  if (nruns * min_len > n) return NULL;
  exec_runs_t *r = malloc(sizeof *r + (size_t)nruns * sizeof(run_t));
  if (!r) return NULL;
  r->nruns = 0;
  for (int64_t i = 0; i < n;) {
    run_t u = next_run(t, n, i);
    r->run[r->nruns++] = u;
    i += u.len;
  }
  return r;
}

void exec_runs_free(exec_runs_t *r) { free(r); }

/* Runs are short (a transposed map's rows of 16 to 32 floats, cut by a roll): GCC's -O3
 * vectorization of the strided copy costs more in set-up than it saves (bench/op, the
 * published winner's first slot: 21.6-22.5 us against 25.9-27.0 us with it). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
void exec_runs_gather(const exec_runs_t *r, const float *x, float *y) {
  for (int64_t k = 0; k < r->nruns; k++) {
    const run_t u = r->run[k];
    if (u.start < 0)
      memset(y, 0, sizeof(float) * (size_t)u.len);
    else if (u.stride == 1)
      memcpy(y, x + u.start, sizeof(float) * (size_t)u.len);
    else {
      const float *p = x + u.start;
      for (int32_t j = 0; j < u.len; j++) y[j] = p[(int64_t)j * u.stride];
    }
    y += u.len;
  }
}

void exec_runs_scatter(const exec_runs_t *r, const float *y, float *x, int add) {
  for (int64_t k = 0; k < r->nruns; k++) {
    const run_t u = r->run[k];
    if (u.start >= 0) {
      float *p = x + u.start;
      if (add)
        for (int32_t j = 0; j < u.len; j++) p[(int64_t)j * u.stride] += y[j];
      else if (u.stride == 1)
        memcpy(p, y, sizeof(float) * (size_t)u.len);
      else
        for (int32_t j = 0; j < u.len; j++) p[(int64_t)j * u.stride] = y[j];
    }
    y += u.len;
  }
}
