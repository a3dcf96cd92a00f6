/* The FLOPs game solver (see syno/flopsgame.h for the rules).
 *
 * State. At a round boundary the only thing that matters is the set `done`
 * of finished decreases: the increases performed so far are exactly those
 * some finished decrease needed (increases are never performed early), so
 * the numel is a function of `done` too, and so is the cheapest way to
 * finish. memo[done] caches that remaining cost.
 *
 * Rounds. A round is built by walking the unfinished decreases in index
 * order and either taking or skipping each. Taking one performs its pending
 * increases; any other unfinished decrease whose needs are now all met is
 * "unlocked". Because the round's cost is paid before its reductions, adding
 * an unlocked decrease to the round costs nothing now and (factors >= 1)
 * can only shrink every later numel, so every optimal play can be rewritten
 * into one whose rounds are closed: they hold every decrease they unlock.
 * The walk therefore adds unlocked later-indexed decreases on the spot, and
 * a take that unlocks an earlier-indexed decrease the walk already skipped
 * is redundant - the same closed round is reached on the path that took the
 * earlier one - so that take is dropped (spec 8: "a trial that unlocks an
 * earlier-indexed decrease is redundant"). Only the take is dropped; the
 * skip at the same index is still explored, since rounds without the
 * current decrease are unrelated to the redundancy. A walk that takes
 * nothing is not a round (spec 8: "a round with no decrease is invalid").
 *
 * Invariant at every round boundary: no unfinished decrease has all its
 * needs met. It holds after the free first round (the rest all need an
 * increase nobody has performed) and after every closed round, and it is
 * why "needs now all met" during a walk always means "just unlocked". */
#include "syno/flopsgame.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
  const syno_flops_game_t *g;
  uint32_t need[SYNO_FLOPS_GAME_MAX];  /* need[d]: bitmask of the increases decrease d depends on */
  uint32_t users[SYNO_FLOPS_GAME_MAX]; /* users[i]: bitmask of the decreases that depend on increase i */
  uint32_t all;                        /* bitmask of every decrease */
  double *memo;                        /* memo[done]; NAN until computed */
} solver_t;

static double finish(solver_t *s, uint32_t done, uint32_t incs, double numel);

static int lowest(uint32_t m) { return __builtin_ctz(m); }

/* Continues the walk of one round from index i. `chosen` are the round's
 * decreases so far, `incs` the increases performed (before and in this
 * round), `numel` the numel after them and `red` the product of the chosen
 * decreases' factors. Returns the cheapest total of this round and
 * everything after it, or INFINITY when no valid round follows. The walk
 * visits up to 3^n_dec (state, round) pairs overall, so the per-step work
 * is kept to bit operations on the few increases and decreases involved. */
static double walk(solver_t *s, uint32_t done, uint32_t chosen, uint32_t incs, double numel, double red, int i) {
  const syno_flops_game_t *g = s->g;
  uint32_t open = s->all & ~(done | chosen) & ~((1u << i) - 1u);
  if (!open) {
    if (!chosen) return INFINITY;
    return numel + finish(s, done | chosen, incs, numel / red);
  }
  i = lowest(open);

  /* Take decrease i: only increases it newly needs can unlock anything, so
   * only their users are candidates. */
  uint32_t fresh = s->need[i] & ~incs, t_incs = incs | fresh, t_chosen = chosen | 1u << i, cand = 0;
  double t_numel = numel, t_red = red * g->dec[i];
  for (uint32_t m = fresh; m; m &= m - 1) {
    int k = lowest(m);
    t_numel *= g->inc[k];
    cand |= s->users[k];
  }
  bool redundant = false;
  for (uint32_t m = cand & ~(done | t_chosen); m && !redundant; m &= m - 1) {
    int d = lowest(m);
    if (s->need[d] & ~t_incs) continue;
    if (d < i) {
      redundant = true;
    } else {
      t_chosen |= 1u << d;
      t_red *= g->dec[d];
    }
  }
  double best = redundant ? INFINITY : walk(s, done, t_chosen, t_incs, t_numel, t_red, i + 1);
  double skip = walk(s, done, chosen, incs, numel, red, i + 1);
  return skip < best ? skip : best;
}

/* The cheapest cost of finishing from the round boundary where `done` is
 * finished; `incs` and `numel` are determined by `done` and passed along
 * only to avoid recomputing them. */
static double finish(solver_t *s, uint32_t done, uint32_t incs, double numel) {
  if (done == s->all) return 0.0;
  double *m = &s->memo[done];
  if (isnan(*m)) *m = walk(s, done, 0, incs, numel, 1.0, 0);
  return *m;
}

static int check_factor(double f, const char *what, int i, syno_error_t *err) {
  if (!isfinite(f) || !(f >= 1.0))
    return syno_error_set(err, "flops game: %s %d has factor %g; factors must be finite and >= 1", what, i, f);
  return 0;
}

int syno_flops_game_solve(const syno_flops_game_t *g, double *cost, syno_error_t *err) {
  if (g->n_inc < 0 || g->n_inc > SYNO_FLOPS_GAME_MAX)
    return syno_error_set(err, "flops game: %d increases; at most %d are supported", g->n_inc, SYNO_FLOPS_GAME_MAX);
  if (g->n_dec < 0 || g->n_dec > SYNO_FLOPS_GAME_MAX)
    return syno_error_set(err, "flops game: %d decreases; at most %d are supported", g->n_dec, SYNO_FLOPS_GAME_MAX);
  if (!isfinite(g->input_size) || !(g->input_size > 0.0))
    return syno_error_set(err, "flops game: input size %g; it must be finite and > 0", g->input_size);
  for (int i = 0; i < g->n_inc; i++)
    if (check_factor(g->inc[i], "increase", i, err)) return -1;
  for (int d = 0; d < g->n_dec; d++)
    if (check_factor(g->dec[d], "decrease", d, err)) return -1;

  if (g->n_dec == 0) {
    *cost = 0.0;
    return 0;
  }

  solver_t s = {.g = g, .all = (uint32_t)((1ull << g->n_dec) - 1)};
  uint32_t free_decs = 0;
  double after_free = g->input_size;
  for (int d = 0; d < g->n_dec; d++) {
    for (int i = 0; i < g->n_inc; i++)
      if (g->dep[d][i]) {
        s.need[d] |= 1u << i;
        s.users[i] |= 1u << d;
      }
    if (!s.need[d]) {
      free_decs |= 1u << d;
      after_free /= g->dec[d];
    }
  }
  size_t n_states = (size_t)1 << g->n_dec;
  s.memo = malloc(n_states * sizeof *s.memo);
  if (!s.memo) return syno_error_set(err, "flops game: out of memory for %zu memo entries", n_states);
  for (size_t k = 0; k < n_states; k++) s.memo[k] = NAN;

  /* The free decreases form the first round on their own, paying the
   * starting numel; without any, the first round is an ordinary one. */
  double total = free_decs ? g->input_size + finish(&s, free_decs, 0, after_free) : finish(&s, 0, 0, g->input_size);
  free(s.memo);
  if (!isfinite(total)) return syno_error_set(err, "flops game: the minimum cost overflows a double");
  *cost = total;
  return 0;
}
