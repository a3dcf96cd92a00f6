/* An offset table as strided runs (internal to exec).
 *
 * The executor moves tensors through int32 offset tables: y[i] = x[t[i]] (t[i] = -1: zero)
 * to gather, x[t[i]] = y[i] to scatter. Most tables are made of long runs in which the
 * offset grows by a constant stride: a transposed map reads a column at a time, a rolled
 * one is two contiguous pieces per row, zero padding is a run of -1. Kept as runs, a gather
 * reads no table and copies contiguous runs with memcpy. exec_runs_new compresses a table
 * when its runs are long enough to pay (else NULL: keep the table). */
#ifndef SYNO_EXEC_RUNS_H
#define SYNO_EXEC_RUNS_H

#include <stdint.h>

typedef struct exec_runs exec_runs_t;

/* NULL when the table's runs average fewer than min_len entries, or out of memory. */
exec_runs_t *exec_runs_new(const int32_t *t, int64_t n, int min_len);
void exec_runs_free(exec_runs_t *r);
/* y[i] = t[i] >= 0 ? x[t[i]] : 0 for the n entries of the table. */
void exec_runs_gather(const exec_runs_t *r, const float *x, float *y);
/* x[t[i]] = y[i] (add: +=) where t[i] >= 0. */
void exec_runs_scatter(const exec_runs_t *r, const float *y, float *x, int add);

#endif
