/* Interfaces under construction, and the sizes a step may bring into one.
 *
 * A generator builds each child as an iface_t: a copy of its node's
 * interface (space_iface_from), less the dims the step consumes, plus the dims and
 * expansions it makes, with the powers of every new size counted against
 * the variables' occurrence limits (docs/semantics.md §1.5). The store (store.c) then
 * sorts and interns it; until then its dims are in no particular order.
 *
 * Invariants: an iface_t holds at most SPACE_MAX_IFACE dims and as many
 * expansions, and its usage never exceeds a variable's max_occurrence: the
 * adders and space_iface_use return false instead (having possibly changed f,
 * which the caller then drops). The sizes offered to a step (the odometer,
 * space_enum_sizes) are in a fixed order, coefficients varying fastest, so
 * a space's children come out in the same order every time. */
#include <stdlib.h>
#include <string.h>

#include "space_internal.h"

void space_iface_from(const syno_space_t *s, const node_t *n, iface_t *f) {
  f->n_dims = n->n_dims;
  f->n_exp = n->n_exp;
  memcpy(f->dims, space_node_dims(s, n), sizeof(syno_dim_t) * (size_t)n->n_dims);
  memcpy(f->exp, space_node_exps(s, n), sizeof(syno_dim_t) * (size_t)n->n_exp);
  f->n_weights = n->n_weights;
  memcpy(f->usage, n->usage, sizeof f->usage);
  memcpy(f->count, n->count, sizeof f->count);
}

bool space_iface_remove(iface_t *f, syno_dim_t d) {
  for (int i = 0; i < f->n_dims; i++)
    if (f->dims[i] == d) {
      f->dims[i] = f->dims[--f->n_dims];
      return true;
    }
  return false;
}

bool space_iface_add(iface_t *f, syno_dim_t d) {
  if (f->n_dims >= SPACE_MAX_IFACE) return false;
  f->dims[f->n_dims++] = d;
  return true;
}

bool space_iface_add_exp(iface_t *f, syno_dim_t d) {
  if (f->n_exp >= SPACE_MAX_IFACE) return false;
  f->exp[f->n_exp++] = d;
  return true;
}

bool space_iface_use(const syno_space_t *s, iface_t *f, syno_size_t size, bool primary_only) {
  const syno_vars_t *v = &s->spec.vars;
  for (int k = 0; k < (primary_only ? 1 : 2); k++) {
    const int8_t *pw = k == SYNO_PRIMARY ? size.p : size.c;
    for (int i = 0; i < v->n[k]; i++) {
      int u = f->usage[k][i] + abs(pw[i]);
      if (u > v->var[k][i].max_occurrence) return false;
      f->usage[k][i] = (int8_t)u;
    }
  }
  return true;
}

/* --- sizes --- */

bool space_size_valid(const syno_space_t *s, syno_size_t x) {
  const syno_space_opts_t *o = &s->spec.opts;
  if (syno_size_num_vars(x) > o->max_vars_in_size || syno_size_total_power(x) > o->max_powers_in_size) return false;
  syno_trait_t t = syno_size_trait(x);
  if (t != SYNO_TRAIT_GENERAL && t != SYNO_TRAIT_COEFFICIENT) return false;
  if (!syno_size_is_integral(&s->spec.vars, x)) return false;
  return syno_size_lower_bound(&s->spec.vars, x) >= 1.0;
}

int space_odometer(const syno_space_t *s, int lo[2][SYNO_MAX_VARS], int hi[2][SYNO_MAX_VARS],
                   bool (*keep)(const syno_space_t *s, syno_size_t x, void *ctx), void *ctx, syno_size_t *out,
                   int max) {
  const syno_vars_t *v = &s->spec.vars;
  int cur[2][SYNO_MAX_VARS];
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < v->n[k]; i++) {
      if (lo[k][i] > hi[k][i]) return 0;
      cur[k][i] = lo[k][i];
    }
  int n = 0;
  for (;;) {
    syno_size_t x = syno_size_one();
    for (int i = 0; i < v->n[SYNO_PRIMARY]; i++) x.p[i] = (int8_t)cur[SYNO_PRIMARY][i];
    for (int i = 0; i < v->n[SYNO_COEFF]; i++) x.c[i] = (int8_t)cur[SYNO_COEFF][i];
    if (n < max && keep(s, x, ctx)) out[n++] = x;
    /* Advance: coefficients are the inner loop, primaries the outer. */
    int k = SYNO_COEFF, i = v->n[SYNO_COEFF] - 1;
    for (;;) {
      if (i < 0) {
        if (k == SYNO_PRIMARY) return n;
        k = SYNO_PRIMARY;
        i = v->n[SYNO_PRIMARY] - 1;
        continue;
      }
      if (cur[k][i] < hi[k][i]) {
        cur[k][i]++;
        break;
      }
      cur[k][i] = lo[k][i];
      i--;
    }
  }
}

static bool keep_size(const syno_space_t *s, syno_size_t x, void *ctx) {
  (void)ctx;
  return !syno_size_is_one(x) && space_size_valid(s, x);
}

/* Primary powers 0..min(allowance, maxEnum-1); coefficient powers within
 * the allowance and [maxEnum/2 - maxEnum + 1, maxEnum/2] (docs/semantics.md §1.5). */
int space_enum_sizes(const syno_space_t *s, const int8_t *usage, syno_size_t *out, int max) {
  const syno_vars_t *v = &s->spec.vars;
  int me = s->spec.opts.max_enumerations;
  int lo[2][SYNO_MAX_VARS], hi[2][SYNO_MAX_VARS];
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < v->n[k]; i++) {
      int allow = v->var[k][i].max_occurrence - usage[k * SYNO_MAX_VARS + i];
      if (allow < 0) allow = 0;
      if (k == SYNO_PRIMARY) {
        lo[k][i] = 0;
        hi[k][i] = allow < me - 1 ? allow : me - 1;
      } else {
        lo[k][i] = me / 2 - me + 1 > -allow ? me / 2 - me + 1 : -allow;
        hi[k][i] = me / 2 < allow ? me / 2 : allow;
      }
    }
  return space_odometer(s, lo, hi, keep_size, NULL, out, max);
}
