/* The CPUs this process may run on. See syno/cpus.h. */
#define _GNU_SOURCE
#include "syno/cpus.h"

#include <sched.h>
#include <unistd.h>

int syno_cpu_count(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}
