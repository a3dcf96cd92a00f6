/* syno/alloc.h - the one door to the heap, and the fault injector that the
 * allocation-failure tests step through it.
 *
 * The core (sizes, graph, lowering, space, code generation) and the ground
 * floor allocate only through these calls. They behave as their libc
 * namesakes, with two differences: a size of 0 allocates one byte, so NULL
 * always means out of memory, and every failure (a real one or an injected
 * one) sets errno to ENOMEM and counts in syno_alloc_failures. Memory from
 * here may be released with free(); syno_free is free plus the count of
 * outstanding blocks below, so the core uses it.
 *
 * The test hook, after SQLite's fault injection: syno_alloc_fail_at(n, p)
 * makes the n-th allocation call from now fail (return NULL without
 * allocating), and with `persistent` every call after it too. A test runs an
 * operation with n = 1, 2, 3, ... until it completes without reaching the
 * failure (syno_alloc_calls() < n), and checks at each n that the operation
 * failed cleanly or succeeded, leaked nothing and can be run again. While the
 * hook is armed it also counts the blocks allocated minus the blocks freed
 * through syno_free (syno_alloc_outstanding), so a test sees a leak at once.
 * Off, the hook costs one predictable branch per call; its counters are
 * atomic, so threads may allocate while it is armed, but arming and
 * disarming are for one test thread. */
#ifndef SYNO_ALLOC_H
#define SYNO_ALLOC_H

#include <stdbool.h>
#include <stddef.h>

void *syno_malloc(size_t n);
void *syno_calloc(size_t n, size_t size);
/* On failure the block p is left as it was (as realloc does). */
void *syno_realloc(void *p, size_t n);
char *syno_strdup(const char *s);
void syno_free(void *p);
/* count elements of elem bytes: NULL (errno ENOMEM) when count is negative or the byte count
 * overflows, so an element count computed from user sizes is checked before it allocates. */
void *syno_malloc_array(long long count, size_t elem);

/* How many allocation calls have failed in the calling thread so far (a
 * thread-local count). A caller that lets a helper treat a failed
 * allocation as a plain "no" (a candidate that cannot be built) compares it
 * before and after, and reports out of memory instead of a wrong answer. */
unsigned long syno_alloc_failures(void);

/* --- the test hook --- */

/* Arms the hook and restarts the call count: allocation call number n
 * (1 = the next) fails, and with `persistent` every later one too; n <= 0
 * only counts. Calling it again moves the failure point; the count of
 * outstanding blocks carries on. */
void syno_alloc_fail_at(long n, bool persistent);
/* Disarms the hook: no call fails and nothing is counted. */
void syno_alloc_hook_off(void);
/* Allocation calls (syno_malloc, syno_calloc, syno_realloc, syno_strdup)
 * since the last syno_alloc_fail_at, failed ones included. */
long syno_alloc_calls(void);
/* Blocks allocated minus blocks freed with syno_free while the hook was
 * armed: back at its starting value when everything allocated since was
 * freed. */
long syno_alloc_outstanding(void);

#endif /* SYNO_ALLOC_H */
