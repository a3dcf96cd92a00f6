/* syno/grow.h - the one way to grow an array: doubling from 64 elements. */
#ifndef SYNO_GROW_H
#define SYNO_GROW_H

#include <stddef.h>

/* Makes room for `need` elements of `elem` bytes in *p (capacity *cap,
 * counted in elements): doubles the capacity (from 64) until it holds need.
 * Returns 0, or -1 when out of memory (then *p and *cap are unchanged). */
int syno_grow(void **p, size_t *cap, size_t need, size_t elem);

#endif /* SYNO_GROW_H */
