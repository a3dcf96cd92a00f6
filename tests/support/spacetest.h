/* Helpers shared by the search-space tests: exhaustive enumeration of a
 * small space into operator texts, and the three-way check of one
 * canonicalization rule. Every helper fails the running cmocka test on
 * error. */
#ifndef SPACETEST_H
#define SPACETEST_H

#include <stdbool.h>
#include <stdint.h>

#include "syno/space.h"
#include "synotest.h"

/* A set of rules, bit r for rule r (SYNO_RULE_COUNT < 32). */
#define ST_RULE(r) (1u << (r))

/* Every operator of the space `json`, one text per line, with distance
 * pruning `prune` and the rules in `off` switched off. `stats` (may be
 * NULL) receives the space's counters, `count` (may be NULL) the number of
 * finalizations. The caller frees the text. */
char *st_space_ops(const char *json, bool prune, uint32_t off, syno_space_stats_t *stats, uint64_t *count);
/* The same for a spec as it is. */
char *st_spec_ops(const syno_space_spec_t *spec, syno_space_stats_t *stats, uint64_t *count);

/* Every operator of the space `json` (rules in `off` switched off), one
 * per line as "normal form<TAB>text" (syno_operator_normal_form). */
char *st_space_forms(const char *json, uint32_t off, syno_space_stats_t *stats);

/* The same with the form up to a permutation of the input's unordered axes
 * and a relayout of the weights (syno_operator_normal_form_unordered). */
char *st_space_uforms(const char *json, uint32_t off, syno_space_stats_t *stats);

/* Whether one line of `buf` is exactly `text`. */
bool st_lines_have(const char *buf, const char *text);

/* Splits buf into lines in place and sorts them; *lines is malloc'ed. */
int st_sorted_lines(char *buf, char ***lines);

/* Checks a rule on the space `json`, with the rules in `base` off in every
 * enumeration (a rule that shadows the one under test):
 *  1. with `rule` on, `uncanonical` is never generated;
 *  2. with `rule` on, `canonical` (its twin) is generated;
 *  3. with only `rule` off as well, `uncanonical` is generated;
 *  4. with `rule` on, the space counted removals under `rule`.
 * The enumeration with the rule on is shared by consecutive checks on the
 * same space. Prints the operator counts and the time taken. */
void st_check_rule(syno_rule_t rule, const char *json, uint32_t base, const char *uncanonical, const char *canonical);

#endif
