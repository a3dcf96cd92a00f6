/* syno/hash.h - the one hash combiner, the one finalizer and the one hash
 * table every module uses.
 *
 * syno_hash_mix folds a value into a running hash (the combiner of the
 * graph's structural hashes and of every hash derived from them);
 * syno_hash_fmix64 is MurmurHash3's 64-bit finalizer, which spreads every
 * input bit over the output (a table indexes by the low bits, so a combined
 * hash is finalized before it indexes).
 *
 * syno_table_t is an open-addressing set of ids (uint32_t, never 0) that
 * live in the caller's own array: the table stores, per id, the high half of
 * its 64-bit hash as a fingerprint beside it, indexes by that fingerprint,
 * and asks the caller whether a candidate id equals the key (pass a hash
 * whose high half is well mixed: a finalized one). So one table
 * serves every interning (graph dims, primitives, space nodes, search
 * statistics) without copying keys. It grows at 50% load; the order of its
 * slots is not part of any result (nothing iterates it). */
#ifndef SYNO_HASH_H
#define SYNO_HASH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

static inline uint64_t syno_hash_mix(uint64_t h, uint64_t v) {
  return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

/* The finalizer's first round (xorshift, multiply, xorshift). The size
 * hash and the space's function key end with it alone: their values are
 * pinned (stored structural hashes, thread partitions), so they keep it. */
static inline uint64_t syno_hash_fmix64_half(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

static inline uint64_t syno_hash_fmix64(uint64_t h) {
  h = syno_hash_fmix64_half(h) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

typedef struct {
  uint64_t *slot; /* 0 = empty; else fingerprint << 32 | id */
  uint32_t cap;   /* a power of two, or 0 before the first insert */
  uint32_t n;
} syno_table_t;

static inline uint32_t syno_table_fp(uint64_t hash) { return (uint32_t)(hash >> 32); }

/* The id equal to the key whose hash is `hash`, or 0: eq(ctx, id) is asked
 * only for ids whose fingerprint matches. */
static inline uint32_t syno_table_find(const syno_table_t *t, uint64_t hash, bool (*eq)(const void *ctx, uint32_t id),
                                       const void *ctx) {
  if (!t->cap) return 0;
  uint32_t fp = syno_table_fp(hash), mask = t->cap - 1;
  for (uint32_t j = fp & mask;; j = (j + 1) & mask) {
    uint64_t e = t->slot[j];
    if (!e) return 0;
    if ((uint32_t)(e >> 32) == fp && eq(ctx, (uint32_t)e)) return (uint32_t)e;
  }
}

/* Adds id (not 0, not already present) under hash; grows the table at 50%
 * load. Returns 0, or -1 when out of memory (the table is unchanged). */
int syno_table_insert(syno_table_t *t, uint64_t hash, uint32_t id);
/* Removes every id >= first, in place and without allocating: a caller
 * that hands out ids in increasing order forgets the ones it gave since. */
void syno_table_truncate(syno_table_t *t, uint32_t first);
/* Empties the table and frees its memory. */
void syno_table_free(syno_table_t *t);

#endif /* SYNO_HASH_H */
