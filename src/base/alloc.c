/* The allocation layer and its fault injector (see syno/alloc.h).
 *
 * The fast path reads one relaxed atomic flag; everything the hook does lives
 * behind it, in hooked(). A failure, real or injected, goes through failed(),
 * so every NULL from here sets errno and counts in the thread's failures. */
#include "syno/alloc.h"

#include <errno.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_bool armed;
static atomic_bool persistent;
static atomic_long fail_at;     /* the call that fails (1-based); <= 0: none */
static atomic_long calls;       /* since the last syno_alloc_fail_at */
static atomic_long outstanding; /* blocks allocated minus blocks freed while armed */
static _Thread_local unsigned long failures;

#define ARMED() __builtin_expect(atomic_load_explicit(&armed, memory_order_relaxed), 0)

static void *failed(void) {
  failures++;
  errno = ENOMEM;
  return NULL;
}

/* Counts one call; true when the hook makes it fail. */
static bool inject(void) {
  long k = atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed) + 1;
  long n = atomic_load_explicit(&fail_at, memory_order_relaxed);
  return n > 0 && (k == n || (k > n && atomic_load_explicit(&persistent, memory_order_relaxed)));
}

/* A block came into being (new = a fresh one, not a moved one). */
static void *made(void *p, bool fresh) {
  if (!p) return failed();
  if (fresh && ARMED()) atomic_fetch_add_explicit(&outstanding, 1, memory_order_relaxed);
  return p;
}

void *syno_malloc(size_t n) {
  if (ARMED() && inject()) return failed();
  return made(malloc(n ? n : 1), true);
}

void *syno_calloc(size_t n, size_t size) {
  if (ARMED() && inject()) return failed();
  return made(n && size ? calloc(n, size) : calloc(1, 1), true);
}

void *syno_malloc_array(long long count, size_t elem) {
  size_t bytes;
  if (count < 0 || (unsigned long long)count > SIZE_MAX || __builtin_mul_overflow((size_t)count, elem, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  return syno_malloc(bytes);
}

void *syno_realloc(void *p, size_t n) {
  if (ARMED() && inject()) return failed();
  return made(realloc(p, n ? n : 1), p == NULL);
}

char *syno_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = syno_malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

void syno_free(void *p) {
  if (ARMED() && p) atomic_fetch_sub_explicit(&outstanding, 1, memory_order_relaxed);
  free(p);
}

unsigned long syno_alloc_failures(void) { return failures; }

void syno_alloc_fail_at(long n, bool persist) {
  atomic_store(&fail_at, n);
  atomic_store(&persistent, persist);
  atomic_store(&calls, 0);
  atomic_store(&armed, true);
}

void syno_alloc_hook_off(void) {
  atomic_store(&armed, false);
  atomic_store(&fail_at, 0);
}

long syno_alloc_calls(void) { return atomic_load(&calls); }

long syno_alloc_outstanding(void) { return atomic_load(&outstanding); }
