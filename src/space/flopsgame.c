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
 * earlier one - so that take is dropped (docs/semantics.md §8.1). Only the take is
 * dropped; the skip at the same index is still explored, since rounds
 * without the current decrease are unrelated to the redundancy. A walk
 * that takes nothing is not a round (a round holds at least one decrease,
 * docs/semantics.md §8.1).
 *
 * Invariant at every round boundary: no unfinished decrease has all its
 * needs met. It holds after the free first round (the rest all need an
 * increase nobody has performed) and after every closed round, and it is
 * why "needs now all met" during a walk always means "just unlocked". */
#include "syno/flopsgame.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "syno/alloc.h"

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
  s.memo = syno_malloc(n_states * sizeof *s.memo);
  if (!s.memo) return syno_error_set(err, "flops game: out of memory for %zu memo entries", n_states);
  for (size_t k = 0; k < n_states; k++) s.memo[k] = NAN;

  /* The free decreases form the first round on their own, paying the
   * starting numel; without any, the first round is an ordinary one. */
  double total = free_decs ? g->input_size + finish(&s, free_decs, 0, after_free) : finish(&s, 0, 0, g->input_size);
  syno_free(s.memo);
  if (!isfinite(total)) return syno_error_set(err, "flops game: the minimum cost overflows a double");
  *cost = total;
  return 0;
}

/* --- the game of a graph --- */

typedef struct {
  const syno_graph_t *g;
  int n_red;
  syno_dim_t red[SYNO_FLOPS_GAME_MAX];
  int n_unfold, n_share, n_stride;
  uint32_t unfold[SYNO_FLOPS_GAME_MAX], share[SYNO_MAX_OP_PRIMS], stride[SYNO_MAX_OP_PRIMS];
} scan_t;

static int index_of(const syno_dim_t *a, int n, syno_dim_t d) {
  for (int i = 0; i < n; i++)
    if (a[i] == d) return i;
  return -1;
}

static bool add_prim(uint32_t *a, int *n, int max, uint32_t p) {
  for (int i = 0; i < *n; i++)
    if (a[i] == p) return true;
  if (*n >= max) return false;
  a[(*n)++] = p;
  return true;
}

/* Collects the reductions, Unfolds, Shares and Strides below d. False when there
 * are too many for the game. */
static bool scan(scan_t *sc, syno_dim_t d) {
  const syno_dimension_t *dim = syno_graph_dim(sc->g, d);
  if (dim->kind == SYNO_DIM_REDUCE) {
    if (index_of(sc->red, sc->n_red, d) < 0) {
      if (sc->n_red >= SYNO_FLOPS_GAME_MAX) return false;
      sc->red[sc->n_red++] = d;
    }
    return true;
  }
  if (dim->kind != SYNO_DIM_PRIM_INPUT) return true;
  const syno_prim_t *p = syno_graph_prim(sc->g, dim->prim);
  if (p->kind == SYNO_PRIM_UNFOLD && !add_prim(sc->unfold, &sc->n_unfold, SYNO_FLOPS_GAME_MAX, dim->prim)) return false;
  if (p->kind == SYNO_PRIM_SHARE && !add_prim(sc->share, &sc->n_share, SYNO_MAX_OP_PRIMS, dim->prim)) return false;
  if (p->kind == SYNO_PRIM_STRIDE && !add_prim(sc->stride, &sc->n_stride, SYNO_MAX_OP_PRIMS, dim->prim)) return false;
  for (int o = 0; o < p->n_out; o++)
    if (!scan(sc, p->out[o])) return false;
  return true;
}

/* The reductions below d (bit: index in sc->red) and the weights whose
 * Share has its data side at or below d. */
static void below(const scan_t *sc, syno_dim_t d, uint32_t *reds, unsigned *weights) {
  const syno_dimension_t *dim = syno_graph_dim(sc->g, d);
  if (dim->kind == SYNO_DIM_REDUCE) {
    *reds |= 1u << index_of(sc->red, sc->n_red, d);
    return;
  }
  if (dim->kind != SYNO_DIM_PRIM_INPUT) return;
  const syno_prim_t *p = syno_graph_prim(sc->g, dim->prim);
  if (p->kind == SYNO_PRIM_SHARE && dim->slot == 0) *weights |= 1u << p->weight;
  for (int o = 0; o < p->n_out; o++) below(sc, p->out[o], reds, weights);
}

int syno_flops_game_build(const syno_graph_t *g, const syno_dim_t *tops, int n_tops, const syno_dim_t *exps, int n_exp,
                          double input_size, int b, syno_flops_game_t *out, syno_error_t *err) {
  scan_t sc = {.g = g};
  bool ok = true;
  for (int i = 0; i < n_tops && ok; i++) ok = scan(&sc, tops[i]);
  for (int i = 0; i < n_exp && ok; i++) ok = scan(&sc, exps[i]);
  if (!ok || sc.n_unfold + n_exp > SYNO_FLOPS_GAME_MAX)
    return syno_error_set(err, "flops game: more than %d increases or decreases", SYNO_FLOPS_GAME_MAX);
  const syno_vars_t *v = syno_graph_vars(g);
  memset(out, 0, sizeof *out);
  out->input_size = input_size;
  for (int k = 0; k < sc.n_stride; k++)
    out->input_size /= syno_size_value(v, syno_graph_prim(g, sc.stride[k])->param, b);
  out->n_dec = sc.n_red;
  for (int d = 0; d < sc.n_red; d++) out->dec[d] = syno_size_value(v, syno_graph_dim(g, sc.red[d])->size, b);
  /* Each increase: the reductions below it and the weights whose data side it reaches. */
  uint32_t inc_reds[SYNO_FLOPS_GAME_MAX] = {0};
  unsigned inc_weights[SYNO_FLOPS_GAME_MAX] = {0};
  for (int k = 0; k < sc.n_unfold; k++) {
    const syno_prim_t *p = syno_graph_prim(g, sc.unfold[k]);
    out->inc[out->n_inc] = syno_size_value(v, syno_graph_dim(g, p->out[1])->size, b);
    for (int o = 0; o < p->n_out; o++) below(&sc, p->out[o], &inc_reds[out->n_inc], &inc_weights[out->n_inc]);
    out->n_inc++;
  }
  for (int k = 0; k < n_exp; k++) {
    out->inc[out->n_inc] = syno_size_value(v, syno_graph_dim(g, exps[k])->size, b);
    below(&sc, exps[k], &inc_reds[out->n_inc], &inc_weights[out->n_inc]);
    out->n_inc++;
  }
  /* Each weight: the reductions below any of its Shares. */
  uint32_t weight_reds[SYNO_MAX_TENSORS] = {0};
  for (int k = 0; k < sc.n_share; k++) {
    const syno_prim_t *p = syno_graph_prim(g, sc.share[k]);
    unsigned unused = 0;
    if (p->weight > 0 && p->weight < SYNO_MAX_TENSORS) below(&sc, p->out[0], &weight_reds[p->weight], &unused);
  }
  for (int i = 0; i < out->n_inc; i++) {
    uint32_t reds = inc_reds[i];
    for (int w = 1; w < SYNO_MAX_TENSORS; w++)
      if (inc_weights[i] >> w & 1) reds |= weight_reds[w];
    for (int d = 0; d < out->n_dec; d++) out->dep[d][i] = reds >> d & 1;
  }
  return 0;
}

int syno_operator_flops_game(const syno_operator_t *op, int b, syno_flops_game_t *out, syno_error_t *err) {
  syno_dim_t tops[SYNO_MAX_TENSORS * SYNO_MAX_RANK];
  int n = 0;
  for (int t = 0; t < op->n_tensors; t++)
    for (int i = 0; i < op->rank[t]; i++) tops[n++] = op->axes[t][i];
  const syno_vars_t *v = syno_graph_vars(op->g);
  syno_shape_t in;
  syno_operator_tensor_shape(op, 0, &in);
  double input_size = syno_size_value(v, syno_shape_numel(&in), b);
  return syno_flops_game_build(op->g, tops, n, op->exp, op->n_exp, input_size, b, out, err);
}
