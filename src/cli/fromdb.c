/* Candidates of a search's results database, for the commands that take one with --db DB --id N
 * (train: retrain it; eval: re-time it). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/task.h"
#include "cli.h"
#include "syno/driver.h"
#include "syno/store.h"
#include "syno/space.h"

int cli_candidate_from_db(const char *path, long id, const char *verb, syno_train_cfg_t *cfg, char strs[3][256],
                          char **op) {
  syno_error_t err = {0};
  syno_db_t *db = NULL;
  syno_db_cand_t *rows = NULL;
  char *settings = NULL;
  int n = 0, rc = SYNO_EXIT_USAGE;
  *op = NULL;
  if (syno_db_open(path, SYNO_DB_READONLY, &db, &err) || syno_db_meta_get(db, "driver", &settings, &err) < 0 ||
      syno_db_list(db, &rows, &n, &err)) {
    fprintf(stderr, "syno: %s\n", err.msg);
    goto out;
  }
  const syno_db_cand_t *c = NULL;
  for (int i = 0; i < n; i++)
    if (rows[i].id == id) c = &rows[i];
  if (c && (rc = cli_check_ops(NULL, path, db, c, 1))) goto out;
  rc = SYNO_EXIT_USAGE;
  cJSON *o = settings ? cJSON_Parse(settings) : NULL;
  const cJSON *bb = cJSON_GetObjectItemCaseSensitive(o, "backbone"),
              *ds = cJSON_GetObjectItemCaseSensitive(o, "dataset");
  if (!c)
    fprintf(stderr, "syno: %s has no candidate %ld (ids 1..%d; see syno report)\n", path, id, n);
  else if (!cJSON_IsString(bb) || !cJSON_IsString(ds))
    fprintf(stderr, "syno: %s has no search settings (meta 'driver'); not a syno search database?\n", path);
  else {
    snprintf(strs[0], 256, "%s", bb->valuestring);
    snprintf(strs[1], 256, "%s", ds->valuestring);
    cfg->backbone = strs[0];
    cfg->dataset = strs[1];
    const cJSON *ps = cJSON_GetObjectItemCaseSensitive(o, "preset");
    snprintf(strs[2], 256, "%s", cJSON_IsString(ps) ? ps->valuestring : SYNO_DRIVER_LEGACY_PRESET);
    cfg->preset = strs[2];
    const cJSON *x;
    /* Range-checked before converting: a damaged database must not overflow a conversion. */
    int bad = 0;
    if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(o, "pad"))) {
      bad |= !(x->valuedouble >= 0 && x->valuedouble <= 64);
      if (!bad) cfg->pad = (int)x->valuedouble;
    }
    if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(o, "width")) && x->valuedouble != 0) {
      bad |= !(x->valuedouble > 0 && x->valuedouble <= 4096);
      if (!bad) cfg->width = x->valuedouble;
    }
    if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(o, "depth")) && x->valuedouble != 0) {
      bad |= !(x->valuedouble >= 1 && x->valuedouble <= 8);
      if (!bad) cfg->depth = (int)x->valuedouble;
    }
    if (!bad && !c->is_baseline && c->op_text) *op = strdup(c->op_text);
    if (bad)
      fprintf(stderr, "syno: %s: the search settings' pad, width or depth is out of range (damaged?)\n", path);
    else if (!c->is_baseline && !*op)
      fprintf(stderr, "syno: candidate %ld of %s has no operator text\n", id, path);
    else {
      rc = 0;
      if (verb)
        fprintf(stderr, "%s candidate %ld of %s (%s) on %s, backbone %s, pad %d\n", verb, id, path,
                c->is_baseline ? "the standard operator" : "a synthesized operator", cfg->dataset, cfg->backbone,
                cfg->pad);
    }
  }
  cJSON_Delete(o);
out:
  free(settings);
  syno_db_list_free(rows, n);
  syno_db_close(db);
  return rc;
}

double cli_speedup_of(const syno_db_cand_t *c) {
  return c->is_baseline ? 1.0 : c->retimed == 1 ? c->retime_speedup : c->speedup;
}

const syno_task_backbone_t *cli_task_of(const char *backbone) {
  const syno_task_backbone_t *t = syno_task_backbone(backbone);
  return t ? t : syno_task_backbone(syno_task_backbone_names(SYNO_TASK_IMAGES)[0]);
}

bool cli_near_baseline(const syno_db_cand_t *c, const syno_db_cand_t *base, const syno_task_backbone_t *t) {
  return t->kind == SYNO_TASK_TEXT ? syno_task_within(t, c->perplexity, base->perplexity)
                                   : syno_task_within(t, c->accuracy, base->accuracy);
}

const syno_db_cand_t *cli_best_candidate(const syno_db_cand_t *rows, int n, const syno_task_backbone_t *t) {
  const syno_db_cand_t *base = NULL, *best = NULL;
  for (int i = 0; i < n; i++)
    if (rows[i].is_baseline) base = &rows[i];
  for (int i = 0; base && i < n; i++) {
    const syno_db_cand_t *c = &rows[i];
    if (c->is_baseline || c->status != 0 || !cli_near_baseline(c, base, t)) continue;
    if (!best || cli_speedup_of(c) > cli_speedup_of(best)) best = c;
  }
  return best;
}

int cli_check_ops(const char *cmd, const char *path, syno_db_t *db, const syno_db_cand_t *rows, int n) {
  syno_error_t err;
  char *spec_text = NULL;
  int got = syno_db_meta_get(db, "spec", &spec_text, &err);
  if (got < 0) {
    return cli_cmd_error(cmd, "%s", err.msg);
  }
  if (got == 0) return 0; /* a database of before the spec was stored: nothing to parse against */
  syno_space_spec_t spec;
  int rc = syno_space_spec_from_json(spec_text, &spec, &err);
  free(spec_text);
  if (rc) {
    return cli_cmd_error(cmd, "%s: its search spec does not parse (damaged?): %s", path, err.msg);
  }
  for (int i = 0; i < n; i++) {
    if (rows[i].is_baseline) continue;
    syno_graph_t *g = syno_graph_new(&spec.vars);
    if (!g) {
      fprintf(stderr, "syno: out of memory\n");
      return SYNO_EXIT_FAIL;
    }
    syno_operator_t op;
    rc = syno_operator_parse(g, rows[i].op_text ? rows[i].op_text : "", &spec.input, &spec.output, &op, &err);
    syno_graph_free(g);
    if (rc) {
      return cli_cmd_error(cmd, "%s: candidate %ld is damaged: its operator does not parse (%s)", path, rows[i].id,
                           err.msg);
    }
  }
  return 0;
}
