/* PCG32, the one generator (see syno/rng.h). */
#include "syno/rng.h"

#include <math.h>

/* ---------------------------------------------------------------- PCG32 */

#define PCG_MULT UINT64_C(6364136223846793005)

uint32_t syno_rng_u32(syno_rng_t *rng) {
  uint64_t old = rng->state;
  rng->state = old * PCG_MULT + rng->inc;
  uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
  uint32_t rot = (uint32_t)(old >> 59);
  return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

void syno_rng_seed(syno_rng_t *rng, uint64_t seed, uint64_t stream) {
  /* The reference pcg32_srandom_r sequence, so outputs match the published generator. */
  rng->state = 0;
  rng->inc = (stream << 1) | 1u;
  rng->has_spare = 0;
  rng->spare = 0.0;
  syno_rng_u32(rng);
  rng->state += seed;
  syno_rng_u32(rng);
}

double syno_rng_uniform(syno_rng_t *rng) {
  uint32_t a = syno_rng_u32(rng) >> 5, b = syno_rng_u32(rng) >> 6;
  return ((double)a * 67108864.0 + (double)b) * (1.0 / 9007199254740992.0);
}

uint64_t syno_rng_below(syno_rng_t *rng, uint64_t n) {
  if (n == 0) return 0;
  /* Rejecting the lowest (2^w mod n) raw values leaves a multiple of n: no modulo bias. */
  if (n <= UINT32_MAX) {
    uint32_t bound = (uint32_t)n, threshold = (uint32_t)(-bound) % bound;
    for (;;) {
      uint32_t r = syno_rng_u32(rng);
      if (r >= threshold) return r % bound;
    }
  }
  uint64_t threshold = (0 - n) % n;
  for (;;) {
    uint64_t r = ((uint64_t)syno_rng_u32(rng) << 32) | syno_rng_u32(rng);
    if (r >= threshold) return r % n;
  }
}

double syno_rng_normal(syno_rng_t *rng) {
  if (rng->has_spare) {
    rng->has_spare = 0;
    return rng->spare;
  }
  double u1 = 1.0 - syno_rng_uniform(rng); /* (0, 1]: log stays finite */
  double u2 = syno_rng_uniform(rng);
  double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
  rng->spare = r * sin(th);
  rng->has_spare = 1;
  return r * cos(th);
}

void syno_rng_shuffle(syno_rng_t *rng, int64_t *a, int64_t n) {
  for (int64_t i = n - 1; i > 0; i--) {
    int64_t j = (int64_t)syno_rng_below(rng, (uint64_t)i + 1);
    int64_t t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
}
