/* syno/search.h - searching the operator space: MCTS and random search.
 *
 * The search is an MDP over the space's DAG (syno/space.h): a state is a
 * node, an action adds one primitive, a terminal is a finalization. The
 * interface is ask/tell: syno_search_propose returns a finished operator
 * the search has not proposed before, syno_search_tell gives it its reward.
 * Several proposals may be outstanding at once (parallel evaluation); each
 * holds a virtual loss on its path until told.
 *
 * MCTS, as published (syno-results.md section 4):
 *  - selection by UCB1-tuned, mean + C sqrt((ln N / n) min(1/4, var +
 *    sqrt(2 ln N / n))) - 0.3 virtual_loss, C = 4 sqrt(2); unvisited
 *    children score first; children with n > 30 and sigma <= 0.001 are
 *    suppressed;
 *  - progressive widening: a node reveals children while floor(T^0.8)
 *    exceeds the number revealed (T its visits), in RAVE order:
 *    ((1 - beta) LRAVE + beta GRAVE) 0.7 + 0.3 rand, beta = c_l / (c_l +
 *    n_lrave), c_l = 3, each RAVE value mean + std - 1/n; LRAVE is the
 *    child's own statistics, GRAVE the statistics of the same step (the
 *    same primitive) anywhere in the tree;
 *  - a transposition table: statistics belong to space nodes, so every path
 *    reaching a node in the DAG shares them;
 *  - simulation: a random completion from the new leaf, each child weighted
 *    exp(-2 x shape distance), backing up from dead ends;
 *  - a failed candidate (reward < 0) is backed up as reward 0, the bottom of
 *    the accuracy reward, and is never proposed again.
 * Random search proposes uniform-ish random completions from the root (the
 * same simulation), without a tree.
 *
 * Determinism: the same seed and the same sequence of propose/tell calls
 * give the same candidates. The search borrows the space (which must
 * outlive it) and is not thread-safe. */
#ifndef SYNO_SEARCH_H
#define SYNO_SEARCH_H

#include <stdint.h>

#include "syno/error.h"
#include "syno/space.h"

typedef enum { SYNO_SEARCH_MCTS = 0, SYNO_SEARCH_RANDOM } syno_search_algo_t;

typedef struct {
  syno_search_algo_t algorithm;
  uint64_t seed;
  double exploration;  /* C, 4 sqrt(2) */
  double virtual_loss; /* 0.3 */
  double widening;     /* b, 0.8 */
  int rave;            /* 1 */
  double rave_c;       /* c_l, 3 */
  int attempts;        /* tries per proposal before the space counts as exhausted */
} syno_search_opts_t;

void syno_search_opts_default(syno_search_opts_t *o);

#define SYNO_SEARCH_MAX_PATH 64

/* A proposal: a plain value, copied freely. */
typedef struct {
  uint32_t node, final; /* the finalization */
  char text[4096];      /* the operator's one-line text form */
  char path[2048];      /* the steps from the root, " ; "-separated */
  double flops, params; /* syno_node_final_cost */
  int n_tree;           /* the tree part of the path (MCTS), for tell */
  uint32_t tree[SYNO_SEARCH_MAX_PATH];
  uint64_t steps[SYNO_SEARCH_MAX_PATH]; /* step keys along the whole path */
  int n_steps;
} syno_candidate_t;

typedef struct {
  long proposals, told, repeats; /* repeats: completions that met an operator already proposed */
  long tree_nodes;               /* nodes with statistics */
} syno_search_stats_t;

typedef struct syno_search syno_search_t;

int syno_search_new(syno_space_t *space, const syno_search_opts_t *o, syno_search_t **out, syno_error_t *err);
void syno_search_free(syno_search_t *s);
/* 0 with a new candidate, 1 when the space has no operator left that was
 * not proposed (exhausted), 2 when none was found in the tries allowed
 * (o->attempts) though some may remain (call again), -1 error. */
int syno_search_propose(syno_search_t *s, syno_candidate_t *c, syno_error_t *err);
int syno_search_tell(syno_search_t *s, const syno_candidate_t *c, double reward, syno_error_t *err);
void syno_search_get_stats(const syno_search_t *s, syno_search_stats_t *st);

/* The reward of an evaluated candidate (syno-results.md section 4):
 * ((max(acc, lb) - lb) / (ub - lb))^power, plus flops_weight x (1 -
 * flops_ratio) when flops_weight > 0 (off by default, as published);
 * -1 for a failed candidate. */
typedef struct {
  double lb, ub, power, flops_weight;
} syno_reward_cfg_t;

void syno_reward_default(syno_reward_cfg_t *r);
double syno_reward(const syno_reward_cfg_t *r, int ok, double accuracy, double flops_ratio);

#endif
