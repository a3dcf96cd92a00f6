#include "spacetest.h"

#include "syno/normal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum { NO_FORM = 0, FORM, UFORM } form_t;

typedef struct {
  FILE *f;
  form_t forms;          /* each line starts with the operator's normal form (FORM) or its form up to the
                          * input's unordered axes (UFORM) and a tab */
  const bool *unordered; /* the input's unordered axes (UFORM) */
} collect_t;

static int collect(syno_space_t *s, uint32_t node, uint32_t index, void *ctx) {
  collect_t *c = ctx;
  syno_operator_t op;
  syno_error_t err;
  if (syno_node_final(s, node, index, &op, &err)) return -1;
  char buf[4096];
  syno_operator_print(&op, buf, sizeof buf);
  if (c->forms) {
    char form[8192];
    if ((c->forms == FORM ? syno_operator_normal_form(&op, form, sizeof form, &err)
                          : syno_operator_normal_form_unordered(&op, c->unordered, form, sizeof form, &err)) < 0)
      fail_msg("normal form of '%s': %s", buf, err.msg);
    fprintf(c->f, "%s\t", form);
  }
  fprintf(c->f, "%s\n", buf);
  return 0;
}

static char *spec_lines(const syno_space_spec_t *spec, form_t forms, syno_space_stats_t *stats, uint64_t *count) {
  syno_error_t err;
  syno_space_t *s;
  assert_int_equal(syno_space_new(spec, &s, &err), 0);
  char *buf = NULL;
  size_t len = 0;
  collect_t c = {open_memstream(&buf, &len), forms, spec->input.unordered};
  uint64_t finals[64] = {0};
  if (syno_space_exhaust(s, collect, &c, NULL, finals, &err)) fail_msg("%s", err.msg);
  fclose(c.f);
  if (count) *count = 0;
  for (int i = 0; i < 64 && count; i++) *count += finals[i];
  if (stats) *stats = *syno_space_stats(s);
  syno_space_free(s);
  return buf;
}

char *st_spec_ops(const syno_space_spec_t *spec, syno_space_stats_t *stats, uint64_t *count) {
  return spec_lines(spec, NO_FORM, stats, count);
}

/* The spec `json` with the rules in `off` switched off. */
static void spec_with_rules_off(const char *json, uint32_t off, syno_space_spec_t *spec) {
  syno_error_t err;
  if (syno_space_spec_from_json(json, spec, &err)) fail_msg("%s", err.msg);
  for (int r = 0; r < SYNO_RULE_COUNT; r++)
    if (off & ST_RULE(r)) spec->opts.rule[r] = false;
}

char *st_space_forms(const char *json, uint32_t off, syno_space_stats_t *stats) {
  syno_space_spec_t spec;
  spec_with_rules_off(json, off, &spec);
  return spec_lines(&spec, FORM, stats, NULL);
}

char *st_space_uforms(const char *json, uint32_t off, syno_space_stats_t *stats) {
  syno_space_spec_t spec;
  spec_with_rules_off(json, off, &spec);
  return spec_lines(&spec, UFORM, stats, NULL);
}

char *st_space_ops(const char *json, bool prune, uint32_t off, syno_space_stats_t *stats, uint64_t *count) {
  syno_space_spec_t spec;
  spec_with_rules_off(json, off, &spec);
  spec.opts.prune_distance = prune;
  return st_spec_ops(&spec, stats, count);
}

bool st_lines_have(const char *buf, const char *text) {
  size_t n = strlen(text);
  for (const char *p = buf; (p = strstr(p, text)); p++)
    if ((p == buf || p[-1] == '\n') && (p[n] == '\n' || p[n] == 0)) return true;
  return false;
}

static int cmp_line(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int st_sorted_lines(char *buf, char ***lines) {
  int n = 0;
  for (char *p = buf; *p; p++) n += *p == '\n';
  *lines = malloc(sizeof(char *) * (size_t)(n + 1));
  int i = 0;
  for (char *tok = strtok(buf, "\n"); tok; tok = strtok(NULL, "\n")) (*lines)[i++] = tok;
  qsort(*lines, (size_t)i, sizeof(char *), cmp_line);
  return i;
}

static int count_lines(const char *buf) {
  int n = 0;
  for (; *buf; buf++) n += *buf == '\n';
  return n;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void st_check_rule(syno_rule_t rule, const char *json, uint32_t base, const char *uncanonical, const char *canonical) {
  static char *on_json, *on;
  static uint32_t on_base;
  static syno_space_stats_t on_stats;
  double t0 = now();
  if (!on_json || strcmp(on_json, json) || on_base != base) {
    free(on_json);
    free(on);
    on_json = strdup(json);
    on_base = base;
    on = st_space_ops(json, true, base, &on_stats, NULL);
  }
  char *off = st_space_ops(json, true, base | ST_RULE(rule), NULL, NULL);
  const char *name = syno_rule_name(rule);
  if (getenv("SYNO_TEST_VERBOSE")) print_message("%s on:\n%s\n", name, on);
  if (st_lines_have(on, uncanonical)) fail_msg("%s on: '%s' was generated", name, uncanonical);
  if (!st_lines_have(on, canonical)) fail_msg("%s on: the canonical '%s' was not generated", name, canonical);
  if (!st_lines_have(off, uncanonical)) fail_msg("%s off: '%s' was not generated", name, uncanonical);
  if (on_stats.rule[rule] == 0) fail_msg("%s on: the space counted no removal by %s", name, name);
  print_message("%s: %d operators on, %d off, %llu removals counted, %.2f s\n", name, count_lines(on), count_lines(off),
                (unsigned long long)on_stats.rule[rule], now() - t0);
  free(off);
}
