/* How many threads the compute libraries use: OpenBLAS (its own pthreads) and oneDNN (the
 * OpenMP runtime it was built with). See syno/nn.h. The cblas alternative installed may or
 * may not be OpenBLAS, so its thread calls are looked up at run time rather than linked. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "syno/cpus.h"
#include "syno/nn.h"

static void *blas_sym(const char *name) { return dlsym(RTLD_DEFAULT, name); }

int syno_nn_threads_set(int n) {
  if (n < 1) n = syno_cpu_count();
  void (*set)(int) = NULL;
  void *sym = blas_sym("openblas_set_num_threads");
  memcpy(&set, &sym, sizeof sym);
  if (set) set(n);
  omp_set_num_threads(n);
  return n;
}

int syno_nn_threads_get(void) { return omp_get_max_threads(); }

void syno_nn_threads_describe(char *buf, size_t size) {
  char *(*cfg)(void) = NULL;
  int (*nth)(void) = NULL;
  void *sym = blas_sym("openblas_get_config");
  memcpy(&cfg, &sym, sizeof sym);
  sym = blas_sym("openblas_get_num_threads");
  memcpy(&nth, &sym, sizeof sym);
  if (cfg)
    snprintf(buf, size, "BLAS: OpenBLAS (%s), %d threads; oneDNN: %d OpenMP threads", cfg(), nth ? nth() : -1,
             omp_get_max_threads());
  else
    snprintf(buf, size, "BLAS: not OpenBLAS (no openblas_get_config); oneDNN: %d OpenMP threads",
             omp_get_max_threads());
}
