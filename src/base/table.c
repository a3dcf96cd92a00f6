/* The open-addressing id table (see syno/hash.h). An entry carries its own
 * fingerprint, which is also its index, so growing needs no callback. */
#include <string.h>

#include "syno/alloc.h"
#include "syno/hash.h"

static void put(uint64_t *slot, uint32_t cap, uint64_t e) {
  uint32_t j = (uint32_t)(e >> 32) & (cap - 1);
  while (slot[j]) j = (j + 1) & (cap - 1);
  slot[j] = e;
}

int syno_table_insert(syno_table_t *t, uint64_t hash, uint32_t id) {
  if (2 * ((uint64_t)t->n + 1) > t->cap) {
    if (t->cap >= UINT32_C(1) << 31) return -1;
    uint32_t ncap = t->cap ? 2 * t->cap : 64;
    uint64_t *ns = syno_calloc(ncap, sizeof *ns);
    if (!ns) return -1;
    for (uint32_t i = 0; i < t->cap; i++)
      if (t->slot[i]) put(ns, ncap, t->slot[i]);
    syno_free(t->slot);
    t->slot = ns;
    t->cap = ncap;
  }
  put(t->slot, t->cap, (uint64_t)syno_table_fp(hash) << 32 | id);
  t->n++;
  return 0;
}

/* Removal in place: drop the ids, then put every survivor again, walking
 * once round the slots from one that was empty before. No probe run crossed
 * that slot, so each survivor moves only back toward its home, over slots the
 * walk has already settled, and every run stays unbroken (the rehash after a
 * deletion in linear probing, for many deletions at once). */
void syno_table_truncate(syno_table_t *t, uint32_t first) {
  if (!t->cap) return;
  uint32_t mask = t->cap - 1, start = 0;
  while (t->slot[start]) start++; /* the load stays at most 50%: one exists */
  for (uint32_t i = 0; i < t->cap; i++)
    if (t->slot[i] && (uint32_t)t->slot[i] >= first) {
      t->slot[i] = 0;
      t->n--;
    }
  for (uint32_t k = 1; k < t->cap; k++) {
    uint32_t j = (start + k) & mask;
    uint64_t e = t->slot[j];
    if (!e) continue;
    t->slot[j] = 0;
    put(t->slot, t->cap, e);
  }
}

void syno_table_free(syno_table_t *t) {
  syno_free(t->slot);
  memset(t, 0, sizeof *t);
}
