/* syno/flopsgame.h - the abstract FLOPs game (docs/semantics.md §8): a lower-bound
 * estimate of an operator's FLOPs that the search space uses to prune
 * candidates before they are finished.
 *
 * The solver knows nothing of operator graphs (syno_flops_game_build reads
 * a game off one). A game has a starting numel (the input size divided by
 * every Stride factor), a list of "increases" (factors
 * that multiply the numel: Expand sizes, Unfold windows, weight-side
 * iterators), a list of "decreases" (Reduce domains that divide it) and
 * dep[d][i], true when decrease d can only happen after increase i. It plays
 * in rounds: a round picks a non-empty set of unfinished decreases, performs
 * every increase they still need, pays the numel at that moment (after the
 * increases, before the reductions) and then divides the numel by the
 * round's decreases. Decreases that need no increase are all taken together
 * in the first round, which costs the starting numel. An increase is
 * performed only when some decrease needs it; increases that no decrease
 * needs happen after the last reduction and cost nothing here. A game with
 * no decreases costs 0. The answer is the minimum total over all plays.
 *
 * Invariants the caller must respect (checked, reported through
 * syno_error_t): at most SYNO_FLOPS_GAME_MAX increases and decreases, the
 * starting numel finite and > 0, every factor finite and >= 1 (they are
 * dimension sizes; the solver's pruning is exact only because dividing by a
 * decrease never makes the numel larger). The game struct is plain data
 * owned by the caller; solving allocates a memo table of 2^n_dec doubles
 * (512 KiB at 16) and frees it before returning. Time is at worst about
 * 3^n_dec small steps: 16 decreases that each need their own increase, the
 * hardest shape, take ~0.25 s; dependent decreases prune it to far less. */
#ifndef SYNO_FLOPSGAME_H
#define SYNO_FLOPSGAME_H

#include <stdbool.h>

#include "syno/error.h"
#include "syno/graph.h"

#define SYNO_FLOPS_GAME_MAX 16

typedef struct {
  double input_size; /* starting numel */
  int n_inc, n_dec;
  double inc[SYNO_FLOPS_GAME_MAX];                    /* increase factors */
  double dec[SYNO_FLOPS_GAME_MAX];                    /* decrease (reduction domain) factors */
  bool dep[SYNO_FLOPS_GAME_MAX][SYNO_FLOPS_GAME_MAX]; /* dep[dec][inc] */
} syno_flops_game_t;

/* Writes the game's minimum total cost to *cost. Returns 0, or -1 with a
 * message when the game breaks an invariant above, the memo table cannot be
 * allocated, or the cost overflows a double. */
int syno_flops_game_solve(const syno_flops_game_t *g, double *cost, syno_error_t *err);

/* Builds the game of the graph below an interface under binding b: `tops`
 * are its dims (a partial operator's interface in the search space, or a
 * finished operator's input and weight axes), `exps` its expanded dims,
 * input_size the input's numel, which the game divides by every Stride
 * below the tops. Increases: every Unfold below the tops
 * (its window) and every expanded dim (its size); decreases: every Reduce
 * below them. dep[d][i] when reduction d lies below increase i, and, for
 * each weight, when d lies below one of the weight's Shares and i lies
 * above that Share's data side (docs/semantics.md §8.2). Below a search-space interface the
 * game holds a subset of the finished operator's increases and
 * dependencies and the same decreases once the reductions are fixed, so
 * its cost never exceeds the finished one's. Returns -1 when the graph has
 * more increases or decreases than the game holds. */
int syno_flops_game_build(const syno_graph_t *g, const syno_dim_t *tops, int n_tops, const syno_dim_t *exps, int n_exp,
                          double input_size, int b, syno_flops_game_t *out, syno_error_t *err);

/* The game of a finished operator under binding b, from its input numel. */
int syno_operator_flops_game(const syno_operator_t *op, int b, syno_flops_game_t *out, syno_error_t *err);

#endif
