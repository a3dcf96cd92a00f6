/* Array growth (see syno/grow.h). */
#include "syno/grow.h"

#include <stdint.h>

#include "syno/alloc.h"

int syno_grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap : 64;
  while (nc < need) {
    if (nc > SIZE_MAX / 2) return -1;
    nc *= 2;
  }
  if (elem && nc > SIZE_MAX / elem) return -1;
  void *np = syno_realloc(*p, nc * elem);
  if (!np) return -1;
  *p = np;
  *cap = nc;
  return 0;
}
