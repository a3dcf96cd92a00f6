/* syno/rng.h - the one pseudo-random generator every module uses.
 *
 * Reproducibility is the invariant: all randomness comes from a syno_rng_t
 * the caller owns and passes explicitly (no global state), so a run is a
 * pure function of its seeds and two runs can share a process. The
 * generator is PCG32 (O'Neill 2014, "XSH RR" output): 64-bit state, a
 * selectable odd stream increment, period 2^64 per stream. Seeding follows
 * the reference pcg32_srandom_r, so outputs match the published generator. */
#ifndef SYNO_RNG_H
#define SYNO_RNG_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct syno_rng {
  uint64_t state;
  uint64_t inc; /* always odd */
  double spare; /* Box-Muller makes normals in pairs; the second waits here */
  int has_spare;
} syno_rng_t;

/* Seeds a generator; different streams with one seed give independent sequences. */
void syno_rng_seed(syno_rng_t *rng, uint64_t seed, uint64_t stream);
uint32_t syno_rng_u32(syno_rng_t *rng);
/* Uniform in [0, 1) with 53 random bits. */
double syno_rng_uniform(syno_rng_t *rng);
/* Uniform integer in [0, n), without modulo bias; n > 0 (returns 0 for n <= 0). */
uint64_t syno_rng_below(syno_rng_t *rng, uint64_t n);
/* Standard normal (Box-Muller, trigonometric form; the pair's second value is kept). */
double syno_rng_normal(syno_rng_t *rng);
/* Fisher-Yates shuffle of a[0..n). */
void syno_rng_shuffle(syno_rng_t *rng, int64_t *a, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* SYNO_RNG_H */
