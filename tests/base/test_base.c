/* The ground floor: PCG32 against the reference generator, unbiased bounded
 * draws, the hash finalizer and combiner, the id table (growth, fingerprint
 * collisions, absent keys, truncation), array growth, the allocation layer's
 * fault injector and the tokenizer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "syno/alloc.h"
#include "syno/clock.h"
#include "syno/grow.h"
#include "syno/hash.h"
#include "syno/lex.h"
#include "syno/rng.h"

/* ------------------------------------------------------------ PCG32 */

static void test_pcg32_reference(void **state) {
  (void)state;
  /* pcg32_srandom_r(&rng, 42, 54), then pcg32_random_r (the reference
   * pcg32-demo's first outputs). */
  static const uint32_t want[] = {0xa15c02b7, 0x7b47f409, 0xba1d3330, 0x83d2f293, 0xbfa4784b, 0xcbed606e};
  syno_rng_t r;
  syno_rng_seed(&r, 42, 54);
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) assert_int_equal(syno_rng_u32(&r), want[i]);
  /* Seeding again restarts the sequence; another stream gives another one. */
  syno_rng_t a, b;
  syno_rng_seed(&a, 42, 54);
  syno_rng_seed(&b, 42, 55);
  assert_int_equal(syno_rng_u32(&a), want[0]);
  int differ = 0;
  for (int i = 0; i < 8; i++) differ += syno_rng_u32(&a) != syno_rng_u32(&b);
  assert_true(differ > 0);
}

static void test_rng_below(void **state) {
  (void)state;
  syno_rng_t r;
  syno_rng_seed(&r, 7, 1);
  static const uint64_t ns[] = {
      1,         2, 3, 7, 10, 1000, 0x7fffffffu, 0xffffffffu, 0x100000000ull, 0x100000001ull, 0x8000000000000001ull,
      UINT64_MAX};
  for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
    uint64_t n = ns[k], top = 0;
    for (int i = 0; i < 2000; i++) {
      uint64_t v = syno_rng_below(&r, n);
      assert_true(v < n);
      if (v > top) top = v;
    }
    /* Large bounds reach their upper half (the 64-bit path is used). */
    if (n > 4) assert_true(top >= n / 2);
  }
  assert_int_equal(syno_rng_below(&r, 0), 0);
  /* Every value of a small range comes up, in roughly equal numbers. */
  int count[7] = {0};
  for (int i = 0; i < 7000; i++) count[syno_rng_below(&r, 7)]++;
  for (int v = 0; v < 7; v++) assert_in_range(count[v], 800, 1200);
}

/* ------------------------------------------------------------ hashing */

static void test_hash_values(void **state) {
  (void)state;
  /* MurmurHash3's fmix64 and the combiner: values the graph's stored
   * hashes depend on, so they must never change. */
  assert_int_equal(syno_hash_fmix64(0), 0);
  assert_int_equal(syno_hash_fmix64(1), 0xb456bcfc34c2cb2cull);
  assert_int_equal(syno_hash_fmix64(0x123456789abcdef0ull), 0x18b8c062f6f42398ull);
  assert_int_equal(syno_hash_mix(0, 0), 0x9e3779b97f4a7c15ull);
  assert_int_equal(syno_hash_mix(0x123456789abcdef0ull, 42), 0x3dee7b06cf8db10bull);
}

/* A key set for the table tests: key[id - 1] is id's key, hash[id - 1]
 * the hash it was inserted under; eq counts its calls. */
typedef struct {
  uint64_t *key, *hash;
  uint32_t n;
  long eq_calls;
  uint64_t probe;
} keys_t;

static bool keys_eq(const void *ctx, uint32_t id) {
  keys_t *k = (keys_t *)ctx;
  assert_true(id >= 1 && id <= k->n);
  k->eq_calls++;
  return k->key[id - 1] == k->probe;
}

static uint32_t keys_find(keys_t *k, const syno_table_t *t, uint64_t key, uint64_t hash) {
  k->probe = key;
  return syno_table_find(t, hash, keys_eq, k);
}

static void test_table_many(void **state) {
  (void)state;
  enum { N = 5000 };
  keys_t k = {calloc(N, sizeof(uint64_t)), calloc(N, sizeof(uint64_t)), 0, 0, 0};
  assert_non_null(k.key);
  assert_non_null(k.hash);
  syno_table_t t = {0};
  assert_int_equal(keys_find(&k, &t, 1, syno_hash_fmix64(1)), 0); /* empty table */
  uint32_t last_cap = 0;
  int grew = 0;
  for (uint32_t i = 0; i < N; i++) {
    uint64_t key = (uint64_t)i * 1000003u + 17;
    k.key[i] = key;
    k.hash[i] = syno_hash_fmix64(key);
    k.n = i + 1;
    assert_int_equal(syno_table_insert(&t, k.hash[i], i + 1), 0);
    assert_int_equal(t.n, i + 1);
    /* A power of two, never more than half full. */
    assert_true(t.cap >= 64 && (t.cap & (t.cap - 1)) == 0);
    assert_true(2 * t.n <= t.cap);
    if (t.cap != last_cap) grew++, last_cap = t.cap;
    /* Everything inserted so far is still found (checked at 2^k ids). */
    if ((i & (i + 1)) == 0)
      for (uint32_t j = 0; j <= i; j++) assert_int_equal(keys_find(&k, &t, k.key[j], k.hash[j]), j + 1);
  }
  assert_true(grew >= 8); /* 64 -> 16384 */
  for (uint32_t i = 0; i < N; i++) assert_int_equal(keys_find(&k, &t, k.key[i], k.hash[i]), i + 1);
  /* Absent keys are not found; a key under another key's hash is not
   * found either (eq decides, not the fingerprint). */
  for (uint64_t x = 0; x < 2000; x++) {
    uint64_t key = x * 1000003u + 18;
    assert_int_equal(keys_find(&k, &t, key, syno_hash_fmix64(key)), 0);
  }
  assert_int_equal(keys_find(&k, &t, 12345, k.hash[10]), 0);
  syno_table_free(&t);
  assert_null(t.slot);
  assert_int_equal(t.cap, 0);
  assert_int_equal(t.n, 0);
  assert_int_equal(keys_find(&k, &t, k.key[0], k.hash[0]), 0);
  free(k.key);
  free(k.hash);
}

static void test_table_fingerprints(void **state) {
  (void)state;
  enum { N = 3000, SAME = 600 };
  keys_t k = {calloc(N, sizeof(uint64_t)), calloc(N, sizeof(uint64_t)), 0, 0, 0};
  assert_non_null(k.key);
  syno_table_t t = {0};
  /* Ids 1..SAME share one fingerprint (the high half of the hash) with
   * different low halves; the rest have distinct fingerprints, some of them
   * landing in the colliding run's slots. */
  for (uint32_t i = 0; i < N; i++) {
    k.key[i] = 0xabc00000u + i;
    k.hash[i] = i < SAME ? (uint64_t)0x5eed5eedu << 32 | i : (uint64_t)(0x5eed5eedu + i) << 32 | 0xffffffffu;
    k.n = i + 1;
    assert_int_equal(syno_table_insert(&t, k.hash[i], i + 1), 0);
  }
  for (uint32_t i = 0; i < N; i++) assert_int_equal(keys_find(&k, &t, k.key[i], k.hash[i]), i + 1);
  /* eq is asked only on a fingerprint match: a distinct fingerprint costs
   * one call, a colliding one up to one per id of its run. */
  for (uint32_t i = SAME; i < N; i++) {
    k.eq_calls = 0;
    assert_int_equal(keys_find(&k, &t, k.key[i], k.hash[i]), i + 1);
    assert_int_equal(k.eq_calls, 1);
  }
  k.eq_calls = 0;
  assert_int_equal(keys_find(&k, &t, k.key[SAME - 1], k.hash[SAME - 1]), SAME);
  assert_in_range(k.eq_calls, 1, SAME);
  /* A key absent under the shared fingerprint is compared with each of the
   * run and not found; under a fresh fingerprint, with none. */
  k.eq_calls = 0;
  assert_int_equal(keys_find(&k, &t, 1, (uint64_t)0x5eed5eedu << 32), 0);
  assert_int_equal(k.eq_calls, SAME);
  k.eq_calls = 0;
  assert_int_equal(keys_find(&k, &t, 1, (uint64_t)0x12345u << 32), 0);
  assert_int_equal(k.eq_calls, 0);
  syno_table_free(&t);
  free(k.key);
  free(k.hash);
}

/* Truncation forgets the newest ids and keeps every other one findable,
 * also in runs that wrap round the end of the slots; the forgotten ids can
 * be handed out again. */
static void test_table_truncate(void **state) {
  (void)state;
  enum { N = 1500 };
  keys_t k = {calloc(N, sizeof(uint64_t)), calloc(N, sizeof(uint64_t)), 0, 0, 0};
  assert_non_null(k.key);
  assert_non_null(k.hash);
  syno_table_t t = {0};
  /* Few fingerprints, some at the top of every power of two: long runs, and
   * runs that wrap. */
  for (uint32_t i = 0; i < N; i++) {
    k.key[i] = 0x77700000u + i;
    k.hash[i] = (uint64_t)(0xffffffffu - (i * 2654435761u) % 97u) << 32 | i;
  }
  uint32_t cuts[] = {N, 1400, 1400, 1025, 700, 513, 300, 64, 2, 1};
  uint32_t have = 0;
  for (size_t c = 0; c < sizeof cuts / sizeof *cuts; c++) {
    /* Insert up to N, then truncate to cuts[c] - 1 ids. */
    for (; have < N; have++) {
      k.n = have + 1;
      assert_int_equal(syno_table_insert(&t, k.hash[have], have + 1), 0);
    }
    uint32_t cap = t.cap;
    syno_table_truncate(&t, cuts[c]);
    have = cuts[c] - 1;
    assert_int_equal(t.n, have);
    assert_int_equal(t.cap, cap); /* in place */
    for (uint32_t i = 0; i < N; i++) assert_int_equal(keys_find(&k, &t, k.key[i], k.hash[i]), i < have ? i + 1 : 0);
  }
  syno_table_truncate(&t, 1);
  assert_int_equal(t.n, 0);
  for (uint32_t i = 0; i < t.cap; i++) assert_int_equal(t.slot[i], 0);
  syno_table_free(&t);
  syno_table_truncate(&t, 1); /* an empty table */
  free(k.key);
  free(k.hash);
}

/* ------------------------------------------------------------ growth */

static void test_grow(void **state) {
  (void)state;
  int *a = NULL;
  size_t cap = 0;
  assert_int_equal(syno_grow((void **)&a, &cap, 0, sizeof *a), 0); /* nothing needed */
  assert_null(a);
  assert_int_equal(cap, 0);
  assert_int_equal(syno_grow((void **)&a, &cap, 1, sizeof *a), 0);
  assert_non_null(a);
  assert_int_equal(cap, 64);
  for (int i = 0; i < 64; i++) a[i] = i;
  /* Enough room: nothing changes. */
  int *before = a;
  assert_int_equal(syno_grow((void **)&a, &cap, 64, sizeof *a), 0);
  assert_ptr_equal(a, before);
  assert_int_equal(cap, 64);
  /* One more doubles; far more doubles until it fits; contents stay. */
  assert_int_equal(syno_grow((void **)&a, &cap, 65, sizeof *a), 0);
  assert_int_equal(cap, 128);
  assert_int_equal(syno_grow((void **)&a, &cap, 1000, sizeof *a), 0);
  assert_int_equal(cap, 1024);
  for (int i = 0; i < 64; i++) assert_int_equal(a[i], i);
  a[999] = 7;
  /* Impossible sizes fail and leave the array as it was. */
  before = a;
  assert_int_equal(syno_grow((void **)&a, &cap, SIZE_MAX, sizeof *a), -1);
  assert_int_equal(syno_grow((void **)&a, &cap, SIZE_MAX / 4, 64), -1);
  assert_ptr_equal(a, before);
  assert_int_equal(cap, 1024);
  assert_int_equal(a[999], 7);
  free(a);
  /* A capacity that is not a power of two doubles from where it is. */
  char *s = malloc(100);
  size_t sc = 100;
  assert_non_null(s);
  assert_int_equal(syno_grow((void **)&s, &sc, 101, 1), 0);
  assert_int_equal(sc, 200);
  free(s);
}

/* ------------------------------------------------------------ allocation */

/* The fault injector: the n-th call fails (and with persistence every later
 * one), failures set errno and count per thread, and the outstanding count
 * follows allocations and syno_free while armed. */
static void test_alloc_hook(void **state) {
  (void)state;
  unsigned long f0 = syno_alloc_failures();
  syno_alloc_fail_at(3, false);
  long out0 = syno_alloc_outstanding();
  void *a = syno_malloc(10), *b = syno_calloc(4, 4);
  assert_non_null(a);
  assert_non_null(b);
  errno = 0;
  assert_null(syno_malloc(0)); /* the 3rd call */
  assert_int_equal(errno, ENOMEM);
  assert_int_equal(syno_alloc_failures(), f0 + 1);
  char *c = syno_strdup("abc"); /* the 4th succeeds again */
  assert_string_equal(c, "abc");
  assert_int_equal(syno_alloc_calls(), 4);
  assert_int_equal(syno_alloc_outstanding(), out0 + 3);
  /* A failed realloc leaves the block as it was. */
  syno_alloc_fail_at(1, false);
  assert_null(syno_realloc(c, 1000));
  assert_string_equal(c, "abc");
  c = syno_realloc(c, 1000);
  assert_non_null(c);
  assert_string_equal(c, "abc");
  assert_int_equal(syno_alloc_outstanding(), out0 + 3); /* moved, not new */
  /* Persistent: every call from the n-th on fails. */
  syno_alloc_fail_at(2, true);
  void *d = syno_realloc(NULL, 8);
  assert_non_null(d);
  for (int i = 0; i < 5; i++) assert_null(syno_malloc(8));
  int *g = NULL;
  size_t cap = 0;
  assert_int_equal(syno_grow((void **)&g, &cap, 1, sizeof *g), -1);
  assert_int_equal(syno_alloc_calls(), 7);
  assert_int_equal(syno_alloc_failures(), f0 + 8);
  syno_alloc_fail_at(0, false); /* counting only */
  syno_free(a);
  syno_free(b);
  syno_free(c);
  syno_free(d);
  syno_free(NULL);
  assert_int_equal(syno_alloc_outstanding(), out0);
  /* Off: nothing fails and nothing is counted. */
  syno_alloc_hook_off();
  void *e = syno_malloc(1);
  assert_non_null(e);
  syno_free(e);
  assert_int_equal(syno_alloc_outstanding(), out0);
}

/* ------------------------------------------------------------ tokenizer */

/* The median of timings: odd and even counts, sorted in place, nothing for no samples; and
 * the clock does not run backwards. */
static void test_median_clock(void **state) {
  (void)state;
  double odd[5] = {5, 1, 4, 2, 3}, even[4] = {4, 1, 3, 2}, one[1] = {7};
  assert_true(syno_median(odd, 5) == 3);
  for (int i = 0; i < 5; i++) assert_true(odd[i] == i + 1);
  assert_true(syno_median(even, 4) == 2.5);
  assert_true(syno_median(one, 1) == 7);
  assert_true(syno_median(NULL, 0) == 0);
  double a = syno_clock_seconds(), b = syno_clock_seconds();
  assert_true(a > 0 && b >= a);
  /* The thread's CPU clock runs while it computes and stands while it sleeps. */
  double c0 = syno_clock_thread_seconds();
  volatile double sink = 0;
  while (syno_clock_thread_seconds() - c0 < 0.01) sink += 1;
  double c1 = syno_clock_thread_seconds(), w1 = syno_clock_seconds();
  struct timespec nap = {0, 100000000};
  while (nanosleep(&nap, &nap) != 0) {}
  double c2 = syno_clock_thread_seconds(), w2 = syno_clock_seconds();
  assert_true(c1 - c0 >= 0.01 && w2 - w1 >= 0.1);
  assert_true(c2 - c1 < 0.05); /* a sleep of 0.1 s costs microseconds of CPU */
}

static void test_lex(void **state) {
  (void)state;
  const char *text = "  foo_1 ->[42, x^-3] \x01";
  syno_lex_t lx;
  syno_lex_init(&lx, text, strlen(text), 10);
  static const struct {
    syno_tok_kind_t kind;
    const char *s;
    int col;
  } want[] = {{SYNO_TOK_IDENT, "foo_1", 13}, {SYNO_TOK_ARROW, "->", 19},  {SYNO_TOK_PUNCT, "[", 21},
              {SYNO_TOK_INT, "42", 22},      {SYNO_TOK_PUNCT, ",", 24},   {SYNO_TOK_IDENT, "x", 26},
              {SYNO_TOK_PUNCT, "^", 27},     {SYNO_TOK_PUNCT, "-", 28},   {SYNO_TOK_INT, "3", 29},
              {SYNO_TOK_PUNCT, "]", 30},     {SYNO_TOK_PUNCT, "\x01", 32}};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    assert_int_equal(lx.tok.kind, want[i].kind);
    assert_true(syno_tok_eq(&lx.tok, want[i].s));
    assert_int_equal(lx.tok.col, want[i].col);
    syno_lex_next(&lx);
  }
  assert_int_equal(lx.tok.kind, SYNO_TOK_END);
  char d[64];
  syno_tok_describe(&lx.tok, d, sizeof d);
  assert_string_equal(d, "end of input");
  /* Integers: value, and overflow refused. */
  int64_t v;
  syno_lex_init(&lx, "9223372036854775807 9223372036854775808", 39, 0);
  assert_int_equal(syno_tok_int(&lx.tok, &v), 0);
  assert_true(v == INT64_MAX);
  syno_lex_next(&lx);
  assert_int_equal(syno_tok_int(&lx.tok, &v), -1);
  /* accept takes only the matching punctuation. */
  syno_lex_init(&lx, "(a", 2, 0);
  assert_false(syno_lex_accept(&lx, ')'));
  assert_true(syno_lex_accept(&lx, '('));
  assert_true(syno_tok_eq(&lx.tok, "a"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pcg32_reference),
      cmocka_unit_test(test_rng_below),
      cmocka_unit_test(test_hash_values),
      cmocka_unit_test(test_table_many),
      cmocka_unit_test(test_table_fingerprints),
      cmocka_unit_test(test_table_truncate),
      cmocka_unit_test(test_grow),
      cmocka_unit_test(test_alloc_hook),
      cmocka_unit_test(test_median_clock),
      cmocka_unit_test(test_lex),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
