/* Walks over the space: random walks and the exhaustive enumeration.
 *
 * A random walk (syno_space_walk) picks a depth budget, then descends from
 * its start choosing among the children that can still finish within it,
 * weighted toward those the shape distance puts nearest a finalization. At
 * a dead end it marks the node (dead_at: no finalization within that
 * budget, nor any smaller one; dead: none at all), backs up a step or
 * starts over. The marks only grow, and only prune what could not finish.
 * With `distinct`, a returned final is taken and never returned again; with
 * a partition (syno_space_set_partition), only finals whose function key
 * falls in this part are returned.
 *
 * The exhaustive enumeration (syno_space_exhaust) visits every node
 * reachable from the root once, depth first, and reports every final.
 *
 * Both expand nodes as they go, which may move the node array: they hold
 * ids, not pointers, across syno_node_children. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "space_internal.h"
#include "syno/alloc.h"
#include "syno/rng.h"

/* A depth budget for a walk from `start`: uniform over the budgets at which
 * start is not known dead and could still finish; -1 when there is none. */
static int pick_budget(syno_space_t *s, uint32_t start, struct syno_rng *rng) {
  int lo = s->nodes[start].depth + syno_node_distance(s, start), hi = s->spec.opts.depth;
  int dead = s->nodes[start].dead_at;
  if (lo <= dead) lo = dead + 1;
  if (lo < 1) lo = 1;
  if (lo > hi || s->nodes[start].dead) return -1;
  int b = lo + (int)(syno_rng_uniform(rng) * (double)(hi - lo + 1));
  return b > hi ? hi : b;
}

int syno_space_random_walk(syno_space_t *s, struct syno_rng *rng, int max_walks, bool distinct, uint32_t *node,
                           uint32_t *final, int *walks, syno_error_t *err) {
  return syno_space_walk(s, syno_space_root(s), rng, max_walks, distinct, NULL, 0, NULL, node, final, walks, err);
}

/* Whether the fused loop nest of every completion of node c would cost more
 * than max_flops: output numel x the reduction domains x (weights + 1), the
 * bound the space pruned by when it counted fused FLOPs. Such a node can
 * finish only where the stages bring the cost under the limit (a window
 * pooled first, a low-rank pair of weights), which few completions do, so
 * walks lean away from it (walk_fused_penalty). In (b) of bench/space this
 * cut the walks per distinct operator threefold. */
static bool fused_over(const syno_space_t *s, const node_t *c) {
  double per_point = (c->n_weights > 1 ? c->n_weights : 1) + (c->n_red > 0);
  return s->spec.opts.max_flops > 0 && c->red_numel * per_point > s->spec.opts.max_flops;
}

int syno_space_walk(syno_space_t *s, uint32_t start, struct syno_rng *rng, int max_walks, bool distinct,
                    syno_step_t *taken, int max_taken, int *n_taken, uint32_t *node, uint32_t *final, int *walks,
                    syno_error_t *err) {
  uint32_t path[64];
  syno_step_t via[64];
  int len = 0, backups = 0;
  uint32_t id = start;
  *walks = 1;
  if (n_taken) *n_taken = 0;
  int budget = pick_budget(s, start, rng);
  if (budget < 0) return 0; /* nothing left below start */
  const int max_backups = 2 * s->spec.opts.depth;
  double *wgt = NULL;
  size_t wcap = 0;
  int rc;
  for (;;) {
    const syno_step_t *steps;
    int n = syno_node_children(s, id, &steps, err);
    if (n < 0) {
      rc = -1;
      break;
    }
    if (syno_grow((void **)&wgt, &wcap, (size_t)n, sizeof *wgt)) {
      rc = syno_error_set(err, "out of memory");
      break;
    }
    /* Choose among live children, weighting each by exp(-bias * distance):
     * every live child stays possible, but walks lean toward finishing. A
     * child is live when it can still finish within the walk's budget. */
    double total = 0;
    const node_t *cur = &s->nodes[id];
    for (int i = 0; i < n; i++) {
      wgt[i] = 0;
      if (steps[i].kind == SYNO_STEP_FINALIZE) {
        const final_t *f = &s->finals[cur->finals + steps[i].target];
        if (!f->taken && (s->parts <= 1 || f->hash % (uint64_t)s->parts == (uint64_t)s->part)) wgt[i] = 1;
      } else {
        int dist = syno_node_distance(s, steps[i].target);
        const node_t *c = &s->nodes[steps[i].target];
        if (!c->dead && c->dead_at < budget && c->depth + dist <= budget)
          wgt[i] = exp(-s->walk_bias * (dist + (fused_over(s, c) ? s->walk_fused_penalty : 0)));
      }
      total += wgt[i];
    }
    if (total <= 0) {
      /* A dead end at this budget (and so at every smaller one): mark it,
       * back up a step (the neighbourhood of a failure is often alive), and
       * after a few back-ups start over from `start` with a new budget. */
      if (s->nodes[id].dead_at < budget) s->nodes[id].dead_at = (int8_t)budget;
      if (budget >= s->spec.opts.depth) s->nodes[id].dead = true;
      if (++*walks > max_walks) {
        rc = 0;
        break;
      }
      if (id != start && ++backups <= max_backups && len > 0) {
        id = path[--len];
        continue;
      }
      budget = pick_budget(s, start, rng);
      if (budget < 0) { /* nothing left below start */
        rc = 0;
        break;
      }
      id = start;
      backups = len = 0;
      continue;
    }
    double pick = syno_rng_uniform(rng) * total;
    int chosen = -1;
    for (int i = 0; i < n && chosen < 0; i++) {
      if (wgt[i] > 0 && pick < wgt[i]) chosen = i;
      pick -= wgt[i];
    }
    for (int i = n - 1; i >= 0 && chosen < 0; i--) /* rounding */
      if (wgt[i] > 0) chosen = i;
    const syno_step_t *st = &steps[chosen];
    if (st->kind == SYNO_STEP_FINALIZE) {
      *node = id;
      *final = st->target;
      if (distinct) s->finals[s->nodes[id].finals + st->target].taken = true;
      if (taken) {
        int k = 0;
        for (; k < len && k < max_taken; k++) taken[k] = via[k];
        if (k < max_taken) taken[k++] = *st;
        *n_taken = k;
      }
      rc = 1;
      break;
    }
    if (len == 64) { /* deeper than any depth limit (40) and stage steps allow */
      rc = syno_error_set(err, "random walk deeper than 64 steps");
      break;
    }
    via[len] = *st;
    path[len++] = id;
    id = st->target;
  }
  syno_free(wgt);
  return rc;
}

bool syno_node_dead(const syno_space_t *s, uint32_t node) { return s->nodes[node].dead; }

void syno_node_final_take(syno_space_t *s, uint32_t node, uint32_t index) {
  s->finals[s->nodes[node].finals + index].taken = true;
}

int syno_space_exhaust(syno_space_t *s, syno_space_final_fn final, void *ctx, uint64_t *nodes_by_depth,
                       uint64_t *finals_by_depth, syno_error_t *err) {
  /* An explicit stack of (node, next child); a node is expanded when first met. */
  typedef struct {
    uint32_t node;
    int next;
  } frame_t;
  size_t cap = 0, top = 0;
  frame_t *stack = NULL;
  bool *seen = syno_calloc(s->n_nodes + 1, 1);
  size_t seen_cap = s->n_nodes + 1;
  if (syno_grow((void **)&stack, &cap, 256, sizeof *stack) || !seen) {
    syno_free(stack);
    syno_free(seen);
    return syno_error_set(err, "out of memory");
  }
  int rc = 0;
  stack[top++] = (frame_t){syno_space_root(s), 0};
  seen[syno_space_root(s)] = true;
  if (nodes_by_depth) nodes_by_depth[0]++;
  while (top > 0 && rc == 0) {
    frame_t *f = &stack[top - 1];
    const syno_step_t *steps = NULL;
    int n = syno_node_children(s, f->node, &steps, err);
    if (n < 0) {
      rc = -1;
      break;
    }
    if (f->next >= n) {
      top--;
      continue;
    }
    syno_step_t st = steps[f->next++];
    if (st.kind == SYNO_STEP_FINALIZE) {
      if (finals_by_depth) finals_by_depth[s->nodes[f->node].depth]++;
      if (final) rc = final(s, f->node, st.target, ctx);
      continue;
    }
    if (st.target >= seen_cap) { /* the space grew */
      size_t old = seen_cap;
      if (syno_grow((void **)&seen, &seen_cap, (size_t)s->n_nodes + 1, sizeof *seen)) {
        rc = syno_error_set(err, "out of memory");
        break;
      }
      memset(seen + old, 0, seen_cap - old);
    }
    if (seen[st.target]) continue;
    seen[st.target] = true;
    if (nodes_by_depth) nodes_by_depth[s->nodes[st.target].depth]++;
    if (syno_grow((void **)&stack, &cap, top + 1, sizeof *stack)) {
      rc = syno_error_set(err, "out of memory");
      break;
    }
    stack[top++] = (frame_t){st.target, 0};
  }
  syno_free(stack);
  syno_free(seen);
  return rc > 0 ? 0 : rc;
}
