/* MCTS and random search over the operator space. See syno/search.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "syno/grow.h"
#include "syno/hash.h"
#include "syno/rng.h"
#include "syno/search.h"

/* ------------------------------------------------------------ key sets */

/* A set of uint64 keys: the keys in an array, an id table (id = index + 1)
 * over it. */
typedef struct {
  uint64_t *key;
  size_t n, cap;
  syno_table_t t;
} keyset_t;

/* What a table lookup compares candidates against: an array whose element
 * id - 1 carries a key (a keyset's keys, or statistics). */
typedef struct {
  const void *arr;
  uint64_t key;
} probe_t;

static bool key_eq(const void *ctx, uint32_t id) {
  const probe_t *p = ctx;
  return ((const uint64_t *)p->arr)[id - 1] == p->key;
}

static bool keyset_has(const keyset_t *k, uint64_t key) {
  return syno_table_find(&k->t, syno_hash_fmix64(key), key_eq, &(probe_t){k->key, key}) != 0;
}

static int keyset_add(keyset_t *k, uint64_t key) {
  if (keyset_has(k, key)) return 0;
  if (k->n >= UINT32_MAX || syno_grow((void **)&k->key, &k->cap, k->n + 1, sizeof *k->key)) return -1;
  k->key[k->n] = key;
  if (syno_table_insert(&k->t, syno_hash_fmix64(key), (uint32_t)k->n + 1)) return -1;
  k->n++;
  return 0;
}

static void keyset_free(keyset_t *k) {
  free(k->key);
  syno_table_free(&k->t);
  memset(k, 0, sizeof *k);
}

/* ------------------------------------------------------------ statistics */

typedef struct {
  uint64_t key; /* the tree or step key these statistics belong to */
  double n, sum, sumsq;
  int vl;   /* outstanding proposals through here */
  int dead; /* no operator left to propose below */
  int n_order;
  size_t cap_order;
  int *order; /* revealed children (indices into the node's steps) */
} stat_t;

struct syno_search {
  syno_space_t *space;
  syno_search_opts_t o;
  syno_rng_t rng;
  syno_table_t index; /* tree key -> stats */
  stat_t *stats;
  int n_stats;
  size_t cap_stats;
  syno_table_t grave_index; /* step key -> grave stats */
  stat_t *grave;
  int n_grave;
  size_t cap_grave;
  keyset_t proposed; /* hashes of operator texts, finalization keys */
  keyset_t rdead;    /* nodes with no unproposed operator below */
  syno_search_stats_t st;
  syno_operator_t op;
};

static uint64_t final_key(uint32_t node, uint32_t final) { return 1ULL << 63 | (uint64_t)node << 24 | final; }

static uint64_t step_key(const syno_step_t *s) {
  return (uint64_t)s->kind << 56 | (uint64_t)s->prim << 48 | (s->kind == SYNO_STEP_BEGIN ? 0 : s->prim_id);
}

static bool stat_eq(const void *ctx, uint32_t id) {
  const probe_t *p = ctx;
  return ((const stat_t *)p->arr)[id - 1].key == p->key;
}

/* The statistics under key in arr (indexed by idx), or NULL. */
static stat_t *stat_find(const syno_table_t *idx, stat_t *arr, uint64_t key) {
  uint32_t id = syno_table_find(idx, syno_hash_fmix64(key), stat_eq, &(probe_t){arr, key});
  return id ? &arr[id - 1] : NULL;
}

static stat_t *stat_get(syno_search_t *s, syno_table_t *idx, stat_t **arr, int *n, size_t *cap, uint64_t key) {
  stat_t *t = stat_find(idx, *arr, key);
  if (t) return t;
  if (syno_grow((void **)arr, cap, (size_t)*n + 1, sizeof **arr)) return NULL;
  memset(&(*arr)[*n], 0, sizeof **arr);
  (*arr)[*n].key = key;
  if (syno_table_insert(idx, syno_hash_fmix64(key), (uint32_t)*n + 1)) return NULL;
  (void)s;
  return &(*arr)[(*n)++];
}

static stat_t *tree_stat(syno_search_t *s, uint64_t key) {
  stat_t *t = stat_get(s, &s->index, &s->stats, &s->n_stats, &s->cap_stats, key);
  s->st.tree_nodes = s->n_stats;
  return t;
}
static stat_t *tree_peek(syno_search_t *s, uint64_t key) { return stat_find(&s->index, s->stats, key); }

static double mean_of(const stat_t *t) { return t && t->n > 0 ? t->sum / t->n : 0; }
static double var_of(const stat_t *t) {
  if (!t || t->n <= 0) return 0;
  double m = t->sum / t->n, v = t->sumsq / t->n - m * m;
  return v > 0 ? v : 0;
}
/* A RAVE value: mean + std - 1/n (0 statistics count as unknown: 0). */
static double rave_value(const stat_t *t) {
  if (!t || t->n <= 0) return 0;
  return mean_of(t) + sqrt(var_of(t)) - 1.0 / t->n;
}

/* ------------------------------------------------------------ operators */

static uint64_t text_hash(const char *t) {
  uint64_t h = 1469598103934665603ULL;
  for (; *t; t++) h = (h ^ (unsigned char)*t) * 1099511628211ULL;
  return h;
}

/* Builds finalization (node, final) into c's text; 1 if it is new, 0 if it
 * was proposed already, -1 on error. */
static int final_text(syno_search_t *s, uint32_t node, uint32_t final, syno_candidate_t *c, syno_error_t *err) {
  if (syno_node_final(s->space, node, final, &s->op, err)) return -1;
  syno_operator_print(&s->op, c->text, sizeof c->text);
  return !keyset_has(&s->proposed, text_hash(c->text));
}

static void path_add(syno_search_t *s, syno_candidate_t *c, const syno_step_t *st) {
  if (c->n_steps < SYNO_SEARCH_MAX_PATH) c->steps[c->n_steps++] = step_key(st);
  size_t len = strlen(c->path);
  char buf[256];
  syno_step_print(s->space, st, buf, sizeof buf);
  if (st->kind == SYNO_STEP_FINALIZE) snprintf(buf, sizeof buf, "finalize #%u", st->target);
  snprintf(c->path + len, sizeof c->path - len, "%s%s", len ? " ; " : "", buf);
}

/* Walks one rollout may take (1 + back-ups) before it gives up. A narrow
 * FLOPs window can need thousands per operator; one costs tens of us. */
#define ROLLOUT_WALKS 16384
/* Rollouts that may give up in one proposal before it returns 2. */
#define ROLLOUT_GIVEUPS 8

static int is_rdead(syno_search_t *s, uint32_t node) {
  return syno_node_dead(s->space, node) || keyset_has(&s->rdead, node);
}

/* A random completion from `start` (whose path is already in c) to an
 * operator not proposed yet: the space's own walk without replacement
 * (syno_space_walk), which weights live children by their shape distance
 * within a random depth budget. Returns 1 found, 0 none below start (start
 * is dead), 2 gave up after ROLLOUT_WALKS walks (start may still lead to
 * operators), -1 error. */
static int rollout(syno_search_t *s, uint32_t start, syno_candidate_t *c, syno_error_t *err) {
  syno_step_t taken[SYNO_SEARCH_MAX_PATH];
  for (int repeats = 0; repeats < 64; repeats++) {
    uint32_t node, final;
    int n_taken, walks;
    int r = syno_space_walk(s->space, start, &s->rng, ROLLOUT_WALKS, true, taken, SYNO_SEARCH_MAX_PATH, &n_taken, &node,
                            &final, &walks, err);
    if (r < 0) return -1;
    if (r == 0) return is_rdead(s, start) ? 0 : 2;
    int fresh = final_text(s, node, final, c, err);
    if (fresh < 0) return -1;
    keyset_add(&s->proposed, final_key(node, final)); /* spent either way */
    if (!fresh) {                                     /* another finalization printing as one proposed before */
      s->st.repeats++;
      continue;
    }
    for (int i = 0; i < n_taken; i++) path_add(s, c, &taken[i]);
    c->node = node, c->final = final;
    return 1;
  }
  return 2;
}

/* ------------------------------------------------------------ MCTS */

static double ucb(const syno_search_t *s, const stat_t *parent, const stat_t *child) {
  if (!child || child->n <= 0) return 1e9 - (child ? child->vl : 0);
  double np = parent->n + parent->vl, n = child->n;
  double lg = log(np > 1 ? np : 1);
  double v = var_of(child) + sqrt(2 * lg / n);
  return mean_of(child) + s->o.exploration * sqrt(lg / n * (v < 0.25 ? v : 0.25)) - s->o.virtual_loss * child->vl;
}

static uint64_t child_key(uint32_t node, const syno_step_t *st) {
  return st->kind == SYNO_STEP_FINALIZE ? final_key(node, st->target) : st->target;
}

/* Reveals children of `node` up to floor(T^b), best RAVE score first. */
static int widen(syno_search_t *s, uint32_t node, stat_t *t, const syno_step_t *steps, int n, int at_least) {
  double T = t->n + t->vl;
  int allowed = (int)floor(pow(T > 1 ? T : 1, s->o.widening));
  if (allowed < at_least) allowed = at_least;
  while (t->n_order < allowed && t->n_order < n) {
    int best = -1;
    double best_score = -1e300;
    for (int i = 0; i < n; i++) {
      int taken = 0;
      for (int k = 0; k < t->n_order && !taken; k++) taken = t->order[k] == i;
      if (taken) continue;
      stat_t *c = tree_peek(s, child_key(node, &steps[i]));
      if (c && c->dead) continue;
      if (steps[i].kind != SYNO_STEP_FINALIZE && is_rdead(s, steps[i].target)) continue;
      double score = syno_rng_uniform(&s->rng) * 0.3;
      if (s->o.rave) {
        const stat_t *g = stat_find(&s->grave_index, s->grave, step_key(&steps[i]));
        double nl = c ? c->n : 0, beta = s->o.rave_c / (s->o.rave_c + nl);
        score += ((1 - beta) * rave_value(c) + beta * rave_value(g)) * 0.7;
      }
      if (score > best_score) best_score = score, best = i;
    }
    if (best < 0) break;
    if (syno_grow((void **)&t->order, &t->cap_order, (size_t)t->n_order + 1, sizeof *t->order)) return -1;
    t->order[t->n_order++] = best;
  }
  return 0;
}

static int mcts_propose(syno_search_t *s, syno_candidate_t *c, syno_error_t *err) {
  uint32_t root = syno_space_root(s->space);
  /* A failed descent marks something dead (a spent finalization, a node
   * without live children, or a leaf whose simulation found nothing), or
   * meets a repeat, or gives up on a barren leaf; `attempts` bounds the
   * last two, ROLLOUT_GIVEUPS the give-ups alone. */
  int giveups = 0;
  for (int attempt = 0; attempt < s->o.attempts;) {
    memset(c, 0, sizeof *c);
    uint32_t cur = root;
    stat_t *t = tree_stat(s, root);
    if (!t) return syno_error_set(err, "out of memory for the search tree");
    if (t->dead) return 1;
    c->tree[c->n_tree++] = root;
    for (;;) {
      const syno_step_t *steps;
      int n = syno_node_children(s->space, cur, &steps, err);
      if (n < 0) return -1;
      t = tree_stat(s, cur);
      if (!t || widen(s, cur, t, steps, n, 1)) return syno_error_set(err, "out of memory for the search tree");
    select:;
      int best = -1;
      double best_u = -1e300;
      for (int k = 0; k < t->n_order; k++) {
        const syno_step_t *st = &steps[t->order[k]];
        stat_t *ch = tree_peek(s, child_key(cur, st));
        if (ch && ch->dead) continue;
        if (st->kind != SYNO_STEP_FINALIZE && is_rdead(s, st->target)) continue;
        if (ch && ch->n > 30 && sqrt(var_of(ch)) <= 0.001 && t->n_order > 1) continue; /* settled */
        double u = ucb(s, t, ch);
        if (u > best_u) best_u = u, best = t->order[k];
      }
      if (best < 0) {
        /* Nothing revealed is alive: reveal more next time, or this node is spent. */
        int live = 0;
        for (int i = 0; i < n && !live; i++) {
          stat_t *ch = tree_peek(s, child_key(cur, &steps[i]));
          live = !(ch && ch->dead) && !(steps[i].kind != SYNO_STEP_FINALIZE && is_rdead(s, steps[i].target));
        }
        if (live) { /* reveal one more child beyond the widening */
          int before = t->n_order;
          if (widen(s, cur, t, steps, n, t->n_order + 1))
            return syno_error_set(err, "out of memory for the search tree");
          if (t->n_order > before) goto select;
        }
        t->dead = 1;
        keyset_add(&s->rdead, cur);
        break;
      }
      const syno_step_t *st = &steps[best];
      path_add(s, c, st);
      uint64_t key = child_key(cur, st);
      stat_t *ch = tree_stat(s, key);
      if (!ch) return syno_error_set(err, "out of memory for the search tree");
      if (st->kind == SYNO_STEP_FINALIZE) {
        int fresh = final_text(s, cur, st->target, c, err);
        if (fresh < 0) return -1;
        keyset_add(&s->proposed, key);
        syno_node_final_take(s->space, cur, st->target); /* rollouts skip it too */
        ch->dead = 1;                                    /* proposed once, never again */
        if (!fresh) {
          s->st.repeats++;
          attempt++;
          break;
        }
        c->node = cur, c->final = st->target;
        return 0;
      }
      if (c->n_tree < SYNO_SEARCH_MAX_PATH) c->tree[c->n_tree++] = st->target;
      if (ch->n <= 0 && ch->vl <= 0) { /* a new leaf: simulate from it */
        int r = rollout(s, st->target, c, err);
        if (r < 0) return -1;
        if (r == 1) return 0;
        if (r == 2) {
          /* Gave up: the leaf is not known dead, but operators are rare
           * below it. Count the try as a visit with reward 0 along the
           * path, so the next descents lean elsewhere. */
          for (int i = 0; i < c->n_tree; i++) {
            stat_t *v = tree_stat(s, c->tree[i]);
            if (!v) return syno_error_set(err, "out of memory for the search tree");
            v->n += 1;
          }
          if (++giveups == ROLLOUT_GIVEUPS) {
            /* The tree's leaves are barren: fall back to a rollout from the
             * root (what random search does). The tree learns from its
             * reward through the root and the RAVE statistics of its steps. */
            memset(c, 0, sizeof *c);
            c->tree[c->n_tree++] = root;
            int f = rollout(s, root, c, err);
            return f < 0 ? -1 : f == 1 ? 0 : f == 0 ? 1 : 2;
          }
          attempt++;
          break;
        }
        ch->dead = 1;
        break;
      }
      cur = st->target;
    }
  }
  const stat_t *rt = tree_peek(s, root);
  return (rt && rt->dead) || is_rdead(s, root) ? 1 : 2;
}

/* ------------------------------------------------------------ public */

void syno_search_opts_default(syno_search_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->algorithm = SYNO_SEARCH_MCTS;
  o->seed = 1;
  o->exploration = 4 * sqrt(2.0);
  o->virtual_loss = 0.3;
  o->widening = 0.8;
  o->rave = 1;
  o->rave_c = 3.0;
  o->attempts = 200;
}

int syno_search_new(syno_space_t *space, const syno_search_opts_t *o, syno_search_t **out, syno_error_t *err) {
  if (o->widening <= 0 || o->widening > 1)
    return syno_error_set(err, "progressive widening exponent %g out of (0, 1]", o->widening);
  if (o->attempts < 1) return syno_error_set(err, "attempts must be at least 1");
  syno_search_t *s = calloc(1, sizeof *s);
  if (!s) return syno_error_set(err, "out of memory");
  s->space = space;
  s->o = *o;
  syno_rng_seed(&s->rng, o->seed, 0x5ea4c4);
  *out = s;
  return 0;
}

void syno_search_free(syno_search_t *s) {
  if (!s) return;
  for (int i = 0; i < s->n_stats; i++) free(s->stats[i].order);
  free(s->stats);
  free(s->grave);
  syno_table_free(&s->index), syno_table_free(&s->grave_index);
  keyset_free(&s->proposed), keyset_free(&s->rdead);
  free(s);
}

int syno_search_propose(syno_search_t *s, syno_candidate_t *c, syno_error_t *err) {
  int r;
  if (s->o.algorithm == SYNO_SEARCH_RANDOM) {
    memset(c, 0, sizeof *c);
    r = 2;
    for (int a = 0; a < s->o.attempts && a < ROLLOUT_GIVEUPS && r == 2; a++) {
      memset(c, 0, sizeof *c);
      int f = rollout(s, syno_space_root(s->space), c, err);
      if (f < 0) return -1;
      if (f == 1)
        r = 0;
      else if (f == 0)
        r = 1;
    }
  } else {
    r = mcts_propose(s, c, err);
  }
  if (r != 0) return r;
  keyset_add(&s->proposed, text_hash(c->text));
  syno_node_final_cost(s->space, c->node, c->final, &c->flops, &c->params);
  /* Virtual loss on the tree part of the path. */
  for (int i = 0; i < c->n_tree; i++) {
    stat_t *t = tree_stat(s, c->tree[i]);
    if (t) t->vl++;
  }
  s->st.proposals++;
  return 0;
}

int syno_search_tell(syno_search_t *s, const syno_candidate_t *c, double reward, syno_error_t *err) {
  double r = reward < 0 ? 0 : reward;
  for (int i = 0; i < c->n_tree; i++) {
    stat_t *t = tree_stat(s, c->tree[i]);
    if (!t) return syno_error_set(err, "out of memory for the search tree");
    if (t->vl > 0) t->vl--;
    t->n += 1, t->sum += r, t->sumsq += r * r;
  }
  stat_t *leaf = tree_stat(s, final_key(c->node, c->final));
  if (leaf) leaf->n += 1, leaf->sum += r, leaf->sumsq += r * r, leaf->dead = 1;
  if (s->o.rave)
    for (int i = 0; i < c->n_steps; i++) {
      stat_t *g = stat_get(s, &s->grave_index, &s->grave, &s->n_grave, &s->cap_grave, c->steps[i]);
      if (!g) return syno_error_set(err, "out of memory for RAVE statistics");
      g->n += 1, g->sum += r, g->sumsq += r * r;
    }
  s->st.told++;
  return 0;
}

void syno_search_get_stats(const syno_search_t *s, syno_search_stats_t *st) { *st = s->st; }

void syno_reward_default(syno_reward_cfg_t *r) { r->lb = 0.4, r->ub = 0.7, r->power = 4, r->flops_weight = 0; }

double syno_reward(const syno_reward_cfg_t *r, int ok, double accuracy, double flops_ratio) {
  if (!ok) return -1;
  double span = r->ub - r->lb;
  double a = span > 0 ? ((accuracy > r->lb ? accuracy : r->lb) - r->lb) / span : 0;
  double v = pow(a, r->power);
  if (r->flops_weight > 0) v += r->flops_weight * (1 - flops_ratio);
  return v;
}
