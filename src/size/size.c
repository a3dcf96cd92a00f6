/* Symbolic sizes: exponent arithmetic, traits, exact evaluation, printing.
 *
 * All arithmetic is on int8 exponents; evaluation multiplies bound values
 * into an int64 fraction with overflow checks, so a size that does not fit
 * is an error, never a wrapped number. */
#include "syno/size.h"
#include "syno/hash.h"
#include "syno/strbuf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

syno_size_t syno_size_one(void) {
  syno_size_t s;
  memset(&s, 0, sizeof s);
  return s;
}

syno_size_t syno_size_var(syno_var_kind_t kind, int index) {
  syno_size_t s = syno_size_one();
  if (kind == SYNO_PRIMARY)
    s.p[index] = 1;
  else
    s.c[index] = 1;
  return s;
}

syno_size_t syno_size_mul(syno_size_t a, syno_size_t b) {
  for (int i = 0; i < SYNO_MAX_VARS; i++) {
    a.p[i] = (int8_t)(a.p[i] + b.p[i]);
    a.c[i] = (int8_t)(a.c[i] + b.c[i]);
  }
  return a;
}

syno_size_t syno_size_div(syno_size_t a, syno_size_t b) {
  for (int i = 0; i < SYNO_MAX_VARS; i++) {
    a.p[i] = (int8_t)(a.p[i] - b.p[i]);
    a.c[i] = (int8_t)(a.c[i] - b.c[i]);
  }
  return a;
}

/* Unlike the original, coefficient powers are raised too (docs/semantics.md §1.1, §11). */
syno_size_t syno_size_pow(syno_size_t a, int power) {
  for (int i = 0; i < SYNO_MAX_VARS; i++) {
    a.p[i] = (int8_t)(a.p[i] * power);
    a.c[i] = (int8_t)(a.c[i] * power);
  }
  return a;
}

bool syno_size_eq(syno_size_t a, syno_size_t b) { return memcmp(&a, &b, sizeof a) == 0; }

bool syno_size_is_one(syno_size_t a) { return syno_size_eq(a, syno_size_one()); }

int syno_size_cmp(syno_size_t a, syno_size_t b) {
  for (int i = 0; i < SYNO_MAX_VARS; i++)
    if (a.p[i] != b.p[i]) return a.p[i] < b.p[i] ? -1 : 1;
  for (int i = 0; i < SYNO_MAX_VARS; i++)
    if (a.c[i] != b.c[i]) return a.c[i] < b.c[i] ? -1 : 1;
  return 0;
}

uint64_t syno_size_hash(syno_size_t a) {
  /* FNV-1a over the 16 exponent bytes, then the finalizer's first round
   * only: every stored structural hash of the graph is built on it. */
  const unsigned char *b = (const unsigned char *)&a;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof a; i++) h = (h ^ b[i]) * 1099511628211ull;
  return syno_hash_fmix64_half(h);
}

syno_trait_t syno_size_trait(syno_size_t a) {
  bool any_primary = false, any_coeff = false, neg_coeff = false;
  for (int i = 0; i < SYNO_MAX_VARS; i++) {
    if (a.p[i] < 0) return SYNO_TRAIT_INVALID;
    if (a.p[i] > 0) any_primary = true;
    if (a.c[i] != 0) any_coeff = true;
    if (a.c[i] < 0) neg_coeff = true;
  }
  if (any_primary) return SYNO_TRAIT_GENERAL;
  if (!any_coeff) return SYNO_TRAIT_ONE;
  return neg_coeff ? SYNO_TRAIT_ILLEGAL_COEFFICIENT : SYNO_TRAIT_COEFFICIENT;
}

int syno_size_total_power(syno_size_t a) {
  int t = 0;
  for (int i = 0; i < SYNO_MAX_VARS; i++) t += abs(a.p[i]) + abs(a.c[i]);
  return t;
}

unsigned syno_size_primaries(syno_size_t a) {
  unsigned m = 0;
  for (int i = 0; i < SYNO_MAX_VARS; i++)
    if (a.p[i]) m |= 1u << i;
  return m;
}

int syno_size_num_vars(syno_size_t a) {
  int t = 0;
  for (int i = 0; i < SYNO_MAX_VARS; i++) t += (a.p[i] != 0) + (a.c[i] != 0);
  return t;
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Multiplies *acc by x^power (power > 0). On overflow the fraction
 * *acc / *other is first put in lowest terms and the product retried;
 * false when it still overflows. Reducing only when needed keeps the common
 * case free of divisions; the result, once reduced, is the same. */
static bool mul_pow(int64_t *acc, int64_t *other, int64_t x, int power) {
  for (int k = 0; k < power; k++) {
    int64_t r;
    if (!__builtin_mul_overflow(*acc, x, &r)) {
      *acc = r;
      continue;
    }
    int64_t g = gcd64(*acc, *other);
    *acc /= g;
    *other /= g;
    int64_t h = gcd64(x, *other); /* x's factors can cancel against the other side */
    *other /= h;
    if (__builtin_mul_overflow(*acc, x / h, acc)) return false;
  }
  return true;
}

int syno_size_eval_frac(const syno_vars_t *v, syno_size_t a, int b, int64_t *num, int64_t *den, syno_error_t *err) {
  if (b < 0 || b >= v->nbind) return syno_error_set(err, "no binding #%d (there are %d)", b, v->nbind);
  int64_t n = 1, d = 1;
  for (int kind = 0; kind < 2; kind++) {
    const int8_t *pw = kind == SYNO_PRIMARY ? a.p : a.c;
    const int64_t *val = kind == SYNO_PRIMARY ? v->bind[b].p : v->bind[b].c;
    for (int i = 0; i < SYNO_MAX_VARS; i++) {
      if (!pw[i]) continue;
      if (i >= v->n[kind]) return syno_error_set(err, "size uses an undeclared variable");
      bool ok = pw[i] > 0 ? mul_pow(&n, &d, val[i], pw[i]) : mul_pow(&d, &n, val[i], -pw[i]);
      if (!ok) {
        char buf[128];
        syno_size_print(v, a, buf, sizeof buf);
        return syno_error_set(err, "size %s overflows 64 bits", buf);
      }
    }
  }
  if (d != 1) {
    int64_t g = gcd64(n, d);
    n /= g;
    d /= g;
  }
  *num = n;
  *den = d;
  return 0;
}

int syno_size_eval(const syno_vars_t *v, syno_size_t a, int b, int64_t *out, syno_error_t *err) {
  int64_t n, d;
  if (syno_size_eval_frac(v, a, b, &n, &d, err)) return -1;
  if (d != 1) {
    char buf[128], bb[256];
    syno_size_print(v, a, buf, sizeof buf);
    syno_vars_print_binding(v, b, bb, sizeof bb);
    return syno_error_set(err, "size %s is %lld/%lld, not an integer, under %s", buf, (long long)n, (long long)d, bb);
  }
  *out = n;
  return 0;
}

/* In doubles, numerator and denominator apart, so that a value whose both
 * parts stay below 2^53 is exact: bounds are asked for far more often than
 * exact fractions, and need no gcd. */
double syno_size_value(const syno_vars_t *v, syno_size_t a, int b) {
  if (b < 0 || b >= v->nbind) return NAN;
  double n = 1, d = 1;
  for (int kind = 0; kind < 2; kind++) {
    const int8_t *pw = kind == SYNO_PRIMARY ? a.p : a.c;
    const int64_t *val = kind == SYNO_PRIMARY ? v->bind[b].p : v->bind[b].c;
    for (int i = 0; i < SYNO_MAX_VARS; i++) {
      int p = pw[i];
      if (!p) continue;
      if (i >= v->n[kind]) return NAN;
      double x = (double)val[i];
      for (; p > 0; p--) n *= x;
      for (; p < 0; p++) d *= x;
    }
  }
  return n / d;
}

double syno_size_lower_bound(const syno_vars_t *v, syno_size_t a) {
  double lo = 0;
  for (int b = 0; b < v->nbind; b++) {
    double x = syno_size_value(v, a, b);
    if (b == 0 || x < lo) lo = x;
  }
  return lo;
}

double syno_size_upper_bound(const syno_vars_t *v, syno_size_t a) {
  double hi = 0;
  for (int b = 0; b < v->nbind; b++) {
    double x = syno_size_value(v, a, b);
    if (b == 0 || x > hi) hi = x;
  }
  return hi;
}

bool syno_size_is_integral(const syno_vars_t *v, syno_size_t a) {
  for (int b = 0; b < v->nbind; b++) {
    int64_t n, d;
    if (syno_size_eval_frac(v, a, b, &n, &d, NULL) || d != 1) return false;
  }
  return true;
}

bool syno_size_is_legal(const syno_vars_t *v, syno_size_t a) {
  syno_trait_t t = syno_size_trait(a);
  if (t != SYNO_TRAIT_GENERAL && t != SYNO_TRAIT_COEFFICIENT) return false;
  return syno_size_lower_bound(v, a) >= 1.0;
}

int syno_size_print(const syno_vars_t *v, syno_size_t a, char *buf, size_t n) {
  syno_strbuf_t b;
  syno_strbuf_init(&b, buf, n);
  /* Coefficients first, then primaries (docs/semantics.md §1.4). */
  for (int pass = 0; pass < 2; pass++) {
    syno_var_kind_t kind = pass == 0 ? SYNO_COEFF : SYNO_PRIMARY;
    const int8_t *pw = kind == SYNO_PRIMARY ? a.p : a.c;
    for (int i = 0; i < SYNO_MAX_VARS; i++) {
      if (!pw[i]) continue;
      const char *name = i < v->n[kind] ? v->var[kind][i].name : "?";
      syno_strbuf_printf(&b, "%s%s", b.len ? "*" : "", name);
      if (pw[i] != 1) syno_strbuf_printf(&b, "^%d", pw[i]);
    }
  }
  if (b.len == 0) syno_strbuf_printf(&b, "1");
  return (int)b.len;
}

syno_size_t syno_shape_numel(const syno_shape_t *s) {
  syno_size_t r = syno_size_one();
  for (int i = 0; i < s->rank; i++) r = syno_size_mul(r, s->dim[i]);
  return r;
}

int syno_shape_print(const syno_vars_t *v, const syno_shape_t *s, char *buf, size_t n) {
  syno_strbuf_t b;
  syno_strbuf_init(&b, buf, n);
  syno_strbuf_printf(&b, "[");
  for (int i = 0; i < s->rank; i++) {
    char d[128];
    syno_size_print(v, s->dim[i], d, sizeof d);
    syno_strbuf_printf(&b, "%s%s%s", i ? ", " : "", d, s->unordered[i] ? ": unordered" : "");
  }
  syno_strbuf_printf(&b, "]");
  return (int)b.len;
}
