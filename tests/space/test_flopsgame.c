/* The FLOPs game (docs/semantics.md §8): its two oracles (§8.1), bad input, edge
 * cases, and the pruned, memoized solver against a brute force that plays
 * every sequence of rounds on a few hundred seeded random games. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "syno/flopsgame.h"

static double solve_ok(const syno_flops_game_t *g) {
  syno_error_t err;
  double cost = -1;
  if (syno_flops_game_solve(g, &cost, &err)) fail_msg("unexpected error: %s", err.msg);
  return cost;
}

static void assert_close(double have, double want, const char *what) {
  if (fabs(have - want) > 1e-9 * fmax(1.0, fabs(want))) fail_msg("%s: %.17g, expected %.17g", what, have, want);
}

/* ---- brute force: the rules played literally, no pruning, no memo ---- */

/* Every non-empty subset of the unfinished decreases may be the next round,
 * closed or not; the round performs its pending increases, pays, reduces. */
static double brute_rest(const syno_flops_game_t *g, uint32_t done, uint32_t incs, double numel) {
  uint32_t all = (uint32_t)((1ull << g->n_dec) - 1), open = all & ~done;
  if (!open) return 0.0;
  double best = INFINITY;
  for (uint32_t r = open; r; r = (r - 1) & open) {
    uint32_t r_incs = incs;
    double pay = numel;
    for (int d = 0; d < g->n_dec; d++)
      if (r >> d & 1u)
        for (int i = 0; i < g->n_inc; i++)
          if (g->dep[d][i] && !(r_incs >> i & 1u)) {
            r_incs |= 1u << i;
            pay *= g->inc[i];
          }
    double after = pay;
    for (int d = 0; d < g->n_dec; d++)
      if (r >> d & 1u) after /= g->dec[d];
    double total = pay + brute_rest(g, done | r, r_incs, after);
    if (total < best) best = total;
  }
  return best;
}

/* The only rule beyond "any round": decreases with no dependencies are the
 * first round, all together, paying the starting numel. */
static double brute(const syno_flops_game_t *g) {
  if (g->n_dec == 0) return 0.0;
  uint32_t free_decs = 0;
  double after = g->input_size;
  for (int d = 0; d < g->n_dec; d++) {
    bool any = false;
    for (int i = 0; i < g->n_inc; i++) any |= g->dep[d][i];
    if (!any) {
      free_decs |= 1u << d;
      after /= g->dec[d];
    }
  }
  if (!free_decs) return brute_rest(g, 0, 0, g->input_size);
  return g->input_size + brute_rest(g, free_decs, 0, after);
}

/* splitmix64: a deterministic stream for the random games. */
static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static double next_unit(uint64_t *s) { return (double)(next_u64(s) >> 11) * 0x1.0p-53; }
static int next_int(uint64_t *s, int lo, int hi) { return lo + (int)(next_u64(s) % (uint64_t)(hi - lo + 1)); }

/* Half the factors are small integers (as real sizes are), half arbitrary
 * reals >= 1 (so ties between plays are rare and the comparison is sharp). */
static double random_factor(uint64_t *s) {
  return next_u64(s) & 1 ? (double)next_int(s, 1, 7) : 1.0 + 6.0 * next_unit(s);
}

static void random_game(uint64_t *s, syno_flops_game_t *g, int max_inc, int max_dec) {
  memset(g, 0, sizeof *g);
  g->n_inc = next_int(s, 0, max_inc);
  g->n_dec = next_int(s, 0, max_dec);
  g->input_size = 1.0 + 99.0 * next_unit(s);
  for (int i = 0; i < g->n_inc; i++) g->inc[i] = random_factor(s);
  for (int d = 0; d < g->n_dec; d++) g->dec[d] = random_factor(s);
  double p = 0.15 + 0.5 * next_unit(s);
  for (int d = 0; d < g->n_dec; d++)
    for (int i = 0; i < g->n_inc; i++) g->dep[d][i] = next_unit(s) < p;
}

/* ---- the oracles of docs/semantics.md §8.1 ---- */

static void test_spec_independent(void **state) {
  (void)state;
  /* input s*k2; increases {s, k1}; decreases {k2, s, s*k1}; decrease s needs
   * increase s, decrease s*k1 needs increase k1. Best: k2 in the free first
   * round (pay s*k2), then expand k1 and reduce s*k1 (pay s*k1), then
   * expand s and reduce s (pay s). */
  const double s = 2, k1 = 3, k2 = 5;
  syno_flops_game_t g = {.input_size = s * k2, .n_inc = 2, .n_dec = 3, .inc = {s, k1}, .dec = {k2, s, s * k1}};
  g.dep[1][0] = true;
  g.dep[2][1] = true;
  double cost = solve_ok(&g);
  assert_close(cost, s * k2 + s * k1 + s, "spec oracle");
  assert_close(cost, 18, "spec oracle");
  assert_close(brute(&g), 18, "brute force on the spec oracle");
}

static void test_spec_dependent(void **state) {
  (void)state;
  /* The second oracle of docs/semantics.md §8.1: when both decreases depend on one
   * increase, the answer is k1*k2, with input k1, the single
   * increase k2, decreases {k1, k2}, both needing that increase. Neither is
   * free, so the first round must expand by k2, which unlocks both: one
   * round paying k1*k2. (Doing k1 alone first would pay k1*k2 as well and
   * then k2 more, so the closed round is strictly better.) */
  const double k1 = 3, k2 = 5;
  syno_flops_game_t g = {.input_size = k1, .n_inc = 1, .n_dec = 2, .inc = {k2}, .dec = {k1, k2}};
  g.dep[0][0] = g.dep[1][0] = true;
  assert_close(solve_ok(&g), k1 * k2, "dependent oracle");
  assert_close(brute(&g), k1 * k2, "brute force on the dependent oracle");
}

/* ---- edge cases ---- */

static void test_no_decreases_cost_nothing(void **state) {
  (void)state;
  syno_flops_game_t g = {.input_size = 64, .n_inc = 3, .inc = {2, 3, 4}};
  assert_close(solve_ok(&g), 0, "no decreases");
}

static void test_all_free_is_one_round(void **state) {
  (void)state;
  /* Increases nobody needs never enter the cost. */
  syno_flops_game_t g = {.input_size = 60, .n_inc = 2, .n_dec = 3, .inc = {7, 9}, .dec = {3, 4, 5}};
  assert_close(solve_ok(&g), 60, "all decreases free");
}

static void test_free_round_then_rest(void **state) {
  (void)state;
  /* input 12 = 3*4, decrease 3 free, decrease 4 needs increase 2:
   * pay 12, numel 4, expand to 8, pay 8. */
  syno_flops_game_t g = {.input_size = 12, .n_inc = 1, .n_dec = 2, .inc = {2}, .dec = {3, 4}};
  g.dep[1][0] = true;
  assert_close(solve_ok(&g), 20, "free round then one more");
}

static void test_pruning_keeps_the_skip(void **state) {
  (void)state;
  /* Decrease 0 needs {a}, decrease 1 needs {a, b}, decrease 2 needs {c}.
   * Taking 1 after skipping 0 unlocks 0, so that take is redundant - but
   * the round {2} alone (skip 0, skip 1, take 2) must still be played.
   * Best: {2}: pay 10*2 = 20, numel 2; {0}: pay 2*100 = 200, numel 20;
   * {1}: pay 20*2 = 40. Total 260. Pruning the whole walk at index 1
   * instead would force decrease 0 into the first round (>= 1000). */
  syno_flops_game_t g = {.input_size = 10, .n_inc = 3, .n_dec = 3, .inc = {100, 2, 2}, .dec = {10, 10, 10}};
  g.dep[0][0] = true;
  g.dep[1][0] = g.dep[1][1] = true;
  g.dep[2][2] = true;
  assert_close(brute(&g), 260, "brute force");
  assert_close(solve_ok(&g), 260, "solver");
}

static void test_largest_games(void **state) {
  (void)state;
  /* 16 decreases all needing one increase: a single round, input*inc. */
  syno_flops_game_t g = {.input_size = 1000, .n_inc = 16, .n_dec = 16};
  for (int k = 0; k < 16; k++) g.inc[k] = g.dec[k] = 2;
  for (int d = 0; d < 16; d++) g.dep[d][5] = true;
  assert_close(solve_ok(&g), 2000, "16 decreases on one increase");

  /* Dense random 16x16 games finish and beat two plays we can price by
   * hand: everything in one round, and one decrease per round in order. */
  uint64_t seed = 16;
  for (int t = 0; t < 4; t++) {
    memset(&g, 0, sizeof g);
    g.input_size = 1.0 + 99.0 * next_unit(&seed);
    g.n_inc = g.n_dec = 16;
    for (int k = 0; k < 16; k++) {
      g.inc[k] = random_factor(&seed);
      g.dec[k] = random_factor(&seed);
    }
    for (int d = 0; d < 16; d++)
      for (int i = 0; i < 16; i++) g.dep[d][i] = next_unit(&seed) < 0.2;
    for (int d = 0; d < 16; d++) g.dep[d][d] = true; /* no free decreases */
    double one_round = g.input_size, in_order = 0, numel = g.input_size;
    bool done_inc[16] = {false};
    for (int i = 0; i < 16; i++) one_round *= g.inc[i]; /* every increase is needed */
    for (int d = 0; d < 16; d++) {
      for (int i = 0; i < 16; i++)
        if (g.dep[d][i] && !done_inc[i]) {
          done_inc[i] = true;
          numel *= g.inc[i];
        }
      in_order += numel;
      numel /= g.dec[d];
    }
    double cost = solve_ok(&g);
    if (!(cost > 0 && cost <= one_round * (1 + 1e-12) && cost <= in_order * (1 + 1e-12)))
      fail_msg("16x16 game %d: cost %g, one round %g, in order %g", t, cost, one_round, in_order);
  }
}

/* ---- bad input ---- */

static void expect_error(const syno_flops_game_t *g, const char *needle) {
  syno_error_t err = {{0}};
  double cost = 12345;
  assert_int_equal(syno_flops_game_solve(g, &cost, &err), -1);
  if (!strstr(err.msg, needle)) fail_msg("error '%s' lacks '%s'", err.msg, needle);
  assert_true(cost == 12345); /* nothing written on failure */
}

static void test_bad_input(void **state) {
  (void)state;
  syno_flops_game_t g = {.input_size = 4, .n_inc = 1, .n_dec = 1, .inc = {2}, .dec = {2}};
  g.n_dec = 17;
  expect_error(&g, "17 decreases");
  g.n_dec = -1;
  expect_error(&g, "-1 decreases");
  g.n_dec = 1, g.n_inc = 17;
  expect_error(&g, "17 increases");
  g.n_inc = 1, g.input_size = 0;
  expect_error(&g, "input size 0");
  g.input_size = NAN;
  expect_error(&g, "input size nan");
  g.input_size = 4, g.inc[0] = 0.5;
  expect_error(&g, "increase 0 has factor 0.5");
  g.inc[0] = 2, g.dec[0] = INFINITY;
  expect_error(&g, "decrease 0 has factor inf");
  g.dec[0] = 1e300, g.input_size = 1e300, g.inc[0] = 1e300, g.dep[0][0] = true;
  expect_error(&g, "overflows");
  syno_error_t err;
  double cost;
  g.dec[0] = 2, g.input_size = 4, g.inc[0] = 2;
  assert_int_equal(syno_flops_game_solve(&g, &cost, NULL), 0); /* a NULL error is allowed */
  assert_int_equal(syno_flops_game_solve(&g, &cost, &err), 0);
  assert_close(cost, 8, "one dependent decrease");
}

/* ---- solver against brute force ---- */

static void test_random_against_brute_force(void **state) {
  (void)state;
  uint64_t seed = 0x5e1f;
  int with_free = 0, nontrivial = 0;
  for (int t = 0; t < 400; t++) {
    syno_flops_game_t g;
    random_game(&seed, &g, 5, 6);
    double want = brute(&g), have = solve_ok(&g);
    if (fabs(have - want) > 1e-9 * fmax(1.0, want)) {
      fprintf(stderr, "game %d: input %g, n_inc %d, n_dec %d\n", t, g.input_size, g.n_inc, g.n_dec);
      fail_msg("random game %d: solver %.17g, brute force %.17g", t, have, want);
    }
    for (int d = 0; d < g.n_dec; d++) {
      bool any = false;
      for (int i = 0; i < g.n_inc; i++) any |= g.dep[d][i];
      if (!any) {
        with_free++;
        break;
      }
    }
    nontrivial += g.n_dec >= 3 && g.n_inc >= 2;
  }
  /* The stream must exercise both kinds of first round and real choices. */
  assert_true(with_free > 50);
  assert_true(nontrivial > 100);

  /* A few bigger games: 8 decreases, 545835 sequences of rounds each. */
  for (int t = 0; t < 6; t++) {
    syno_flops_game_t g;
    random_game(&seed, &g, 6, 8);
    g.n_dec = 8;
    g.n_inc = 6;
    for (int d = 0; d < 8; d++) g.dec[d] = random_factor(&seed);
    for (int i = 0; i < 6; i++) g.inc[i] = random_factor(&seed);
    for (int d = 0; d < 8; d++)
      for (int i = 0; i < 6; i++) g.dep[d][i] = next_unit(&seed) < 0.3;
    assert_close(solve_ok(&g), brute(&g), "8-decrease game");
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_spec_independent),
      cmocka_unit_test(test_spec_dependent),
      cmocka_unit_test(test_no_decreases_cost_nothing),
      cmocka_unit_test(test_all_free_is_one_round),
      cmocka_unit_test(test_free_round_then_rest),
      cmocka_unit_test(test_pruning_keeps_the_skip),
      cmocka_unit_test(test_largest_games),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_random_against_brute_force),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
