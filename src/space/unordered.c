/* Rule U5: unorderedness at finalization, from the input's side.
 *
 * U1-U3 (gen.c) work bottom-up, on the unordered scopes of the colours,
 * which start at the unordered output iterators and at reductions. Once an
 * operator is finished, the input's unordered axes (C_in) are known too: a
 * permutation of such an axis is absorbed by the weights, so two operators
 * that differ by one compute the same function up to a relabelling of the
 * input's channels. This pass, top-down from the tops of a finished
 * operator, removes those spellings as the original Syno does at
 * finalization (IsCanonicalGivenUnorderedness, Transforms/Canonicalization.cpp).
 *
 * Each dim carries an unorderedness: ordered; unordered with a source (one
 * per unordered input axis); or unordered without a source (a weight axis,
 * an expansion). It also remembers the topmost Split of an unordered dim it
 * comes from. Walking down:
 *  - Shift, Stride: the input's unorderedness, the Split forgotten; a Shift
 *    of an unordered dim is uncanonical (a roll the weight absorbs);
 *  - Split of an unordered dim: both outputs as the input, remembering the
 *    topmost Split; its factors must come in sorted order: the block (or, if
 *    the block is split again, that Split's major output) not less than the
 *    major output; Unfold: as the input, the Split forgotten;
 *  - Merge, Share: ordered if either input is; an unordered input without a
 *    source takes the other's source; two with different sources are
 *    ordered; two with the same source (or none) stay unordered, and if both
 *    descend from the same Split the dim was split and merged back, which
 *    is uncanonical.
 * At the end, two reductions that descend from the same Split are one
 * reduction split in two: uncanonical. */
#include "space_internal.h"

typedef struct {
  syno_dim_t d;
  bool unordered;
  int source;     /* 0: none; 1 + the input axis */
  uint32_t split; /* 0: none; 1 + the topmost Split's id */
} uattr_t;

static const uattr_t *find(const uattr_t *a, int n, syno_dim_t d) {
  for (int i = 0; i < n; i++)
    if (a[i].d == d) return &a[i];
  return NULL;
}

bool space_unordered_canonical(const syno_space_t *s, const syno_operator_t *op) {
  const syno_graph_t *g = op->g;
  uattr_t a[SYNO_MAX_OP_DIMS];
  int n = 0;
  for (int i = 0; i < op->rank[0]; i++) {
    bool u = s->spec.input.unordered[i];
    a[n++] = (uattr_t){op->axes[0][i], u, u ? 1 + i : 0, 0};
  }
  for (int t = 1; t < op->n_tensors; t++)
    for (int i = 0; i < op->rank[t]; i++) a[n++] = (uattr_t){op->axes[t][i], true, 0, 0};
  for (int i = 0; i < op->n_exp; i++) a[n++] = (uattr_t){op->exp[i], true, 0, 0};
  /* op->prims is in top-down order: a primitive's inputs are known when it
   * is reached. */
  for (int k = 0; k < op->n_prims; k++) {
    uint32_t pid = op->prims[k];
    const syno_prim_t *p = syno_graph_prim(g, pid);
    const uattr_t *in0 = find(a, n, p->in[0]), *in1 = p->n_in > 1 ? find(a, n, p->in[1]) : NULL;
    if (!in0 || (p->n_in > 1 && !in1)) return true; /* not a finished operator: nothing to say */
    uattr_t r = *in0;
    switch (p->kind) {
      case SYNO_PRIM_SHIFT:
        if (r.unordered) return false;
        r.split = 0;
        break;
      case SYNO_PRIM_STRIDE: r.split = 0; break;
      case SYNO_PRIM_SPLIT:
        if (r.unordered) {
          if (!r.split) r.split = 1 + pid;
          syno_size_t major = syno_graph_dim(g, p->out[0])->size, minor = syno_graph_dim(g, p->out[1])->size;
          const syno_prim_t *c = syno_graph_below(g, p->out[1]);
          if (c && c->kind == SYNO_PRIM_SPLIT) minor = syno_graph_dim(g, c->out[0])->size;
          if (syno_size_cmp(minor, major) < 0) return false;
        }
        break;
      case SYNO_PRIM_UNFOLD:
        if (r.unordered) r.split = 0;
        break;
      case SYNO_PRIM_MERGE:
      case SYNO_PRIM_SHARE: {
        uattr_t L = *in0, R = *in1;
        r = (uattr_t){0, false, 0, 0};
        if (L.unordered && R.unordered) {
          if ((L.source != 0) != (R.source != 0)) {
            r = (uattr_t){0, true, L.source ? L.source : R.source, 0};
          } else if (L.source == R.source) {
            if (L.split && L.split == R.split) return false;
            r = (uattr_t){0, true, L.source, 0};
          }
        }
        break;
      }
      default: break;
    }
    for (int o = 0; o < p->n_out; o++) {
      if (n >= SYNO_MAX_OP_DIMS) return true;
      r.d = p->out[o];
      a[n++] = r;
    }
  }
  /* A reduction is a merge too: two from one Split are one reduction. */
  for (int i = 0; i < op->n_red; i++) {
    const uattr_t *x = find(a, n, op->red[i]);
    if (!x || !x->split) continue;
    for (int j = 0; j < i; j++) {
      const uattr_t *y = find(a, n, op->red[j]);
      if (y && y->split == x->split) return false;
    }
  }
  return true;
}
