/* The PyTorch emitter: a torch.nn.Module computing the forward loop nest with
 * tensor views and one contraction per stage (src/lower/views.h).
 *
 * Each factor becomes a few copies along single axes (zero padding, a roll
 * for a Shift, a repeat for div and mod) and then one strided view over the
 * loop variables it reads; each stage of the plan (src/lower/stages.h) is one
 * torch.einsum of the running result with the next weight's view, or one
 * torch.nn.functional.conv1d/2d/3d when the stage convolves the input. The
 * plan is syno_forward_flops's, lifted axes included (docs/semantics.md §7.3): a
 * stage that reads a lifted axis views the running result through the input's
 * index, as the input is viewed, and the view stage is that alone. No
 * index tensor is built: a module's memory is its weights, and padding puts
 * real zeros where the loop nest reads nothing, so an inf or NaN elsewhere in
 * the input cannot reach an output that does not read it.
 *
 * Sizes are symbolic: coefficients (k, s, ...) are fixed at the exported
 * binding; the primary sizes that shape a weight, or that the input's shape
 * does not give, are constructor arguments defaulting to the binding's; the
 * others are read from the input at every call. Every size is checked to be
 * a whole number and every input axis against the operator's shape, and a
 * mismatch raises ValueError naming it. The generated code is TorchScript
 * (torch.jit.script) as written. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lower/expr_eval.h"
#include "../lower/stages.h"
#include "../lower/views.h"
#include "emit.h"
#include "syno/alloc.h"
#include "syno/codegen.h"
#include "syno/lower.h"
#include "syno/strbuf.h"

#define WHO "codegen pytorch"
#define BODY_CAP (1 << 17)

/* The emitter's state for one operator. */
typedef struct {
  const syno_operator_t *op;
  syno_nest_t *n; /* the forward nest, its loop variables split at blocks (sum splits append nodes) */
  int n_offsets;  /* Python locals o0, o1, ... */
  codegen_sizes_t z;
  syno_strbuf_t *body;
  syno_error_t *err;
  bool failed;
} emit_t;

static void fail(emit_t *e, const char *msg) {
  if (!e->failed && !e->z.failed) syno_error_set(e->err, WHO ": %s", msg);
  e->failed = true;
}

static const char *ext(emit_t *e, int v) { return codegen_size(&e->z, syno_nest_extent(e->n, v)); }

/* The value of node i when it reads no loop variable and no primary size. */
static bool numeric(emit_t *e, int i, int64_t *val) {
  const syno_expr_t *x = &e->n->node[i];
  int64_t a, b;
  syno_error_t err;
  switch (x->kind) {
    case SYNO_EXPR_IMM: *val = x->imm; return true;
    case SYNO_EXPR_SIZE:
      for (int k = 0; k < SYNO_MAX_VARS; k++)
        if (x->size.p[k]) return false;
      return syno_size_eval(e->z.v, x->size, e->z.b, val, &err) == 0;
    case SYNO_EXPR_ADD:
    case SYNO_EXPR_SUB:
    case SYNO_EXPR_MUL:
    case SYNO_EXPR_DIV:
    case SYNO_EXPR_MOD:
      if (!numeric(e, x->a, &a) || !numeric(e, x->b, &b)) return false;
      if ((x->kind == SYNO_EXPR_DIV || x->kind == SYNO_EXPR_MOD) && b == 0) return false;
      *val = x->kind == SYNO_EXPR_ADD   ? a + b
             : x->kind == SYNO_EXPR_SUB ? a - b
             : x->kind == SYNO_EXPR_MUL ? a * b
             : x->kind == SYNO_EXPR_DIV ? syno_index_div(a, b)
                                        : syno_index_mod(a, b);
      return true;
    default: return false;
  }
}

/* A constant node as a Python int expression. */
static void py_const(emit_t *e, syno_strbuf_t *sb, int i) {
  const syno_expr_t *x = &e->n->node[i];
  int64_t val;
  if (numeric(e, i, &val)) {
    syno_strbuf_printf(sb, val < 0 ? "(%" PRId64 ")" : "%" PRId64, val);
    return;
  }
  switch (x->kind) {
    case SYNO_EXPR_SIZE: syno_strbuf_printf(sb, "%s", codegen_size(&e->z, x->size)); return;
    case SYNO_EXPR_IMM: syno_strbuf_printf(sb, x->imm < 0 ? "(%" PRId64 ")" : "%" PRId64, x->imm); return;
    case SYNO_EXPR_OUTER:
    case SYNO_EXPR_INNER:
    case SYNO_EXPR_RESTRICT: fail(e, "a loop variable or a padding in a constant"); return;
    default: break;
  }
  const char *op = x->kind == SYNO_EXPR_ADD   ? " + "
                   : x->kind == SYNO_EXPR_SUB ? " - "
                   : x->kind == SYNO_EXPR_MUL ? " * "
                   : x->kind == SYNO_EXPR_DIV ? " // "
                                              : " % ";
  syno_strbuf_printf(sb, "(");
  py_const(e, sb, x->a);
  syno_strbuf_printf(sb, "%s", op);
  py_const(e, sb, x->b);
  syno_strbuf_printf(sb, ")");
}

/* The least (hi = false) or greatest value of node i over the loops, as a
 * Python int expression; a bound, not always attained. */
static bool numeric_bound(emit_t *e, int i, bool hi, int64_t *val) {
  const syno_nest_t *n = e->n;
  const syno_expr_t *x = &n->node[i];
  int64_t a, b;
  if (lower_node_is_const(n, i)) return numeric(e, i, val);
  switch (x->kind) {
    case SYNO_EXPR_OUTER:
    case SYNO_EXPR_INNER: {
      if (!hi) return *val = 0, true;
      syno_expr_t sz = {.kind = SYNO_EXPR_SIZE, .size = syno_nest_extent(n, syno_expr_var(n, x))};
      syno_error_t err;
      for (int k = 0; k < SYNO_MAX_VARS; k++)
        if (sz.size.p[k]) return false;
      if (syno_size_eval(e->z.v, sz.size, e->z.b, val, &err)) return false;
      return --*val, true;
    }
    case SYNO_EXPR_RESTRICT:
    case SYNO_EXPR_MOD:
      if (!hi) return *val = 0, true;
      return numeric(e, x->b, val) && (--*val, true);
    case SYNO_EXPR_DIV:
      return numeric_bound(e, x->a, hi, &a) && numeric(e, x->b, &b) && b > 0 && (*val = syno_index_div(a, b), true);
    case SYNO_EXPR_ADD: return numeric_bound(e, x->a, hi, &a) && numeric_bound(e, x->b, hi, &b) && (*val = a + b, true);
    case SYNO_EXPR_SUB:
      return numeric_bound(e, x->a, hi, &a) && numeric_bound(e, x->b, !hi, &b) && (*val = a - b, true);
    case SYNO_EXPR_MUL: {
      int k = lower_node_is_const(n, x->a) ? x->a : x->b, v = k == x->a ? x->b : x->a;
      if (!numeric(e, k, &a)) return false;
      return numeric_bound(e, v, a >= 0 ? hi : !hi, &b) && (*val = a * b, true);
    }
    default: return false;
  }
}

static void py_bound(emit_t *e, syno_strbuf_t *sb, int i, bool hi) {
  const syno_nest_t *n = e->n;
  const syno_expr_t *x = &n->node[i];
  int64_t val;
  if (numeric_bound(e, i, hi, &val)) {
    syno_strbuf_printf(sb, val < 0 ? "(%" PRId64 ")" : "%" PRId64, val);
    return;
  }
  if (lower_node_is_const(n, i)) {
    py_const(e, sb, i);
    return;
  }
  switch (x->kind) {
    case SYNO_EXPR_OUTER:
    case SYNO_EXPR_INNER:
      if (hi)
        syno_strbuf_printf(sb, "(%s - 1)", ext(e, syno_expr_var(n, x)));
      else
        syno_strbuf_printf(sb, "0");
      return;
    case SYNO_EXPR_RESTRICT:
    case SYNO_EXPR_MOD:
      if (hi) {
        syno_strbuf_printf(sb, "(");
        py_const(e, sb, x->b);
        syno_strbuf_printf(sb, " - 1)");
      } else {
        syno_strbuf_printf(sb, "0");
      }
      return;
    case SYNO_EXPR_DIV:
      syno_strbuf_printf(sb, "(");
      py_bound(e, sb, x->a, hi);
      syno_strbuf_printf(sb, " // ");
      py_const(e, sb, x->b);
      syno_strbuf_printf(sb, ")");
      return;
    case SYNO_EXPR_ADD:
    case SYNO_EXPR_SUB: {
      bool sub = x->kind == SYNO_EXPR_SUB;
      syno_strbuf_printf(sb, "(");
      py_bound(e, sb, x->a, hi);
      syno_strbuf_printf(sb, sub ? " - " : " + ");
      py_bound(e, sb, x->b, sub ? !hi : hi);
      syno_strbuf_printf(sb, ")");
      return;
    }
    case SYNO_EXPR_MUL: {
      int k = lower_node_is_const(n, x->a) ? x->a : x->b, v = k == x->a ? x->b : x->a;
      if (!lower_node_is_const(n, k)) {
        fail(e, "a product of two loop variables");
        return;
      }
      int sign = lower_const_sign(n, k);
      if (sign != 0) {
        syno_strbuf_printf(sb, "(");
        py_const(e, sb, k);
        syno_strbuf_printf(sb, " * ");
        py_bound(e, sb, v, sign > 0 ? hi : !hi);
        syno_strbuf_printf(sb, ")");
        return;
      }
      syno_strbuf_printf(sb, "%s(", hi ? "max" : "min");
      for (int side = 0; side < 2; side++) {
        syno_strbuf_printf(sb, side ? ", " : "");
        py_const(e, sb, k);
        syno_strbuf_printf(sb, " * ");
        py_bound(e, sb, v, side == 1);
      }
      syno_strbuf_printf(sb, ")");
      return;
    }
    default: fail(e, "an unknown index expression"); return;
  }
}

/* A coefficient imm * size as a Python int expression. */
static void py_coef(emit_t *e, syno_strbuf_t *sb, lower_coef_t c) {
  const char *s = codegen_size(&e->z, c.size);
  if (strcmp(s, "1") == 0)
    syno_strbuf_printf(sb, c.imm < 0 ? "(%" PRId64 ")" : "%" PRId64, c.imm);
  else if (c.imm == 1)
    syno_strbuf_printf(sb, "%s", s);
  else
    syno_strbuf_printf(sb, "(%" PRId64 " * %s)", c.imm, s);
}

/* Factor f's access with its split axes (lower_access_split) and then its merged ones
 * (lower_access_merge) in *a, the merges in m[0..*nm); -1 when the split exceeds the rank. */
static int split_merge(const syno_nest_t *n, int f, syno_access_t *a, lower_merge_t *m, int *nm) {
  int k = lower_access_split(n, &n->factor[f], a);
  *nm = k < 0 ? 0 : lower_access_merge(n, a, m, SYNO_MAX_RANK);
  return k;
}

/* Factor f's access as split_merge leaves it in *a, the tensor `t` reshaped, rolled and merged
 * to match. */
static void emit_split(emit_t *e, int f, const char *src, syno_access_t *a) {
  syno_strbuf_t *sb = e->body;
  lower_merge_t m[SYNO_MAX_RANK];
  int nm;
  syno_access_t split;
  int k = lower_access_split(e->n, &e->n->factor[f], &split);
  if (k < 0) {
    fail(e, "a tensor read at more than 8 axes once its merged axes are split");
    return;
  }
  *a = split;
  nm = lower_access_merge(e->n, a, m, SYNO_MAX_RANK);
  syno_strbuf_printf(sb, "        t = %s\n", src);
  if (k > 0) {
    syno_strbuf_printf(sb, "        t = t.reshape([");
    for (int ax = 0; ax < split.rank; ax++)
      syno_strbuf_printf(sb, "%s%s", ax ? ", " : "", codegen_size(&e->z, split.dim[ax]));
    syno_strbuf_printf(sb, "])\n");
  }
  for (int i = 0; i < nm; i++) {
    for (int s = 0; s < 2; s++)
      for (int r = 0; r < m[i].n_rolls[s]; r++) {
        const lower_peel_t *p = &m[i].roll[s][r];
        syno_strbuf_printf(sb, "        t = torch.roll(t, %s", p->shift_neg ? "" : "-");
        py_const(e, sb, p->shift);
        syno_strbuf_printf(sb, ", %d)\n", m[i].ax + s);
      }
    if (m[i].swap) syno_strbuf_printf(sb, "        t = t.transpose(%d, %d)\n", m[i].ax, m[i].ax + 1);
    syno_strbuf_printf(sb, "        t = t.flatten(%d, %d)\n", m[i].ax, m[i].ax + 1);
  }
}

/* A new Python local "o<k>" holding the offset `value`, named into off. */
static void new_offset(emit_t *e, char *off, const char *value) {
  int k = e->n_offsets++;
  syno_strbuf_printf(e->body, "        o%d = %s\n", k, value);
  snprintf(off, 160, "o%d", k);
}

/* A repeated or tiled axis is read from the block of lo on: its offset -(lo // B) * B, fixed
 * in a new local (lo is overwritten by the next peel). */
static void block_offset(emit_t *e, char *off, int size_node) {
  char value[160];
  syno_strbuf_t os;
  syno_strbuf_init(&os, value, sizeof value);
  syno_strbuf_printf(&os, "-(lo // ");
  py_const(e, &os, size_node);
  syno_strbuf_printf(&os, ") * ");
  py_const(e, &os, size_node);
  if (os.len >= sizeof value) fail(e, "an index offset too long");
  new_offset(e, off, value);
}

/* Prints the bounds of node i into the locals lo and hi. */
static void emit_bounds(emit_t *e, int i) {
  syno_strbuf_printf(e->body, "        lo = ");
  py_bound(e, e->body, i, false);
  syno_strbuf_printf(e->body, "\n        hi = ");
  py_bound(e, e->body, i, true);
  syno_strbuf_printf(e->body, "\n");
}

/* F.pad's list for `left` and `right` zeros on axis ax of a rank-r tensor. */
static void emit_pad(emit_t *e, int ax, int rank, const char *left, const char *right) {
  syno_strbuf_printf(e->body, "        t = F.pad(t, [");
  for (int j = rank - 1; j > ax; j--) syno_strbuf_printf(e->body, "0, 0, ");
  syno_strbuf_printf(e->body, "%s, %s])\n", left, right);
}

/* Axis ax of t, read at the sum node `rest` + off[ax], as two axes over the
 * same memory: one read at its term q*c that is not affine, one at the rest
 * r (lower_sum_split). The axis is first padded with zeros to cover every
 * value the sum's bounds allow. */
static bool emit_sum_split(emit_t *e, syno_access_t *a, int ax, int rest, char off[][160], bool *fresh) {
  syno_strbuf_t *sb = e->body;
  int q;
  lower_coef_t c;
  int r = lower_sum_split(e->n, rest, &q, &c);
  if (r < 0 || a->rank >= SYNO_MAX_RANK) return false;
  emit_bounds(e, rest);
  char left[200], right[200], o[160];
  snprintf(left, sizeof left, "max(0, -(lo + %s))", off[ax]);
  snprintf(right, sizeof right, "max(0, hi + %s - t.shape[%d] + 1)", off[ax], ax);
  emit_pad(e, ax, a->rank, left, right);
  char value[400];
  snprintf(value, sizeof value, "%s + %s", off[ax], left);
  new_offset(e, o, value);
  syno_strbuf_printf(sb, "        lq = ");
  py_bound(e, sb, q, false);
  syno_strbuf_printf(sb, "\n        lr = ");
  py_bound(e, sb, r, false);
  syno_strbuf_printf(sb, "\n        st = t.stride()\n        t = t.as_strided([");
  for (int j = 0; j < a->rank; j++) {
    if (j != ax) {
      syno_strbuf_printf(sb, "t.shape[%d], ", j);
      continue;
    }
    py_bound(e, sb, q, true);
    syno_strbuf_printf(sb, " - lq + 1, ");
    py_bound(e, sb, r, true);
    syno_strbuf_printf(sb, " - lr + 1, ");
  }
  syno_strbuf_printf(sb, "], [");
  for (int j = 0; j < a->rank; j++) {
    if (j != ax) {
      syno_strbuf_printf(sb, "st[%d], ", j);
      continue;
    }
    py_coef(e, sb, c);
    syno_strbuf_printf(sb, " * st[%d], st[%d], ", j, j);
  }
  syno_strbuf_printf(sb, "], t.storage_offset() + (");
  py_coef(e, sb, c);
  syno_strbuf_printf(sb, " * lq + lr + %s) * st[%d])\n", o, ax);
  memmove(&a->idx[ax + 2], &a->idx[ax + 1], sizeof a->idx[0] * (size_t)(a->rank - ax - 1));
  memmove(&a->dim[ax + 2], &a->dim[ax + 1], sizeof a->dim[0] * (size_t)(a->rank - ax - 1));
  memmove(off[ax + 2], off[ax + 1], 160 * (size_t)(a->rank - ax - 1));
  memmove(&fresh[ax + 2], &fresh[ax + 1], sizeof fresh[0] * (size_t)(a->rank - ax - 1));
  a->rank++;
  a->idx[ax] = (int16_t)q;
  a->idx[ax + 1] = (int16_t)r;
  fresh[ax] = fresh[ax + 1] = true;
  new_offset(e, off[ax], "-lq");
  new_offset(e, off[ax + 1], "-lr");
  return true;
}

/* a's axes in the order perm (axis ax of the result is axis perm[ax] of a). */
static void permute_access(syno_access_t *a, const int *perm) {
  syno_access_t was = *a;
  for (int ax = 0; ax < a->rank; ax++) a->idx[ax] = was.idx[perm[ax]], a->dim[ax] = was.dim[perm[ax]];
}

/* Applies the peels of every axis of factor f to tensor `t` (source `src`)
 * and leaves its split access in *a, the axis views in av[] and each axis's
 * index offset in off[]. */
static void emit_peels(emit_t *e, int f, const char *src, syno_access_t *a, lower_axis_view_t *av, char off[][160],
                       unsigned defer, int *deferred, const int *perm) {
  syno_nest_t *n = e->n;
  syno_strbuf_t *sb = e->body;
  emit_split(e, f, src, a);
  if (e->failed) return;
  if (perm) {
    syno_strbuf_printf(sb, "        t = t.permute([");
    for (int ax = 0; ax < a->rank; ax++) syno_strbuf_printf(sb, "%s%d", ax ? ", " : "", perm[ax]);
    syno_strbuf_printf(sb, "])\n");
    permute_access(a, perm);
  }
  bool fresh[SYNO_MAX_RANK] = {false}; /* an axis made here: its size is not a->dim's */
  for (int ax = 0; ax < a->rank; ax++) snprintf(off[ax], 160, "0");
  for (int ax = 0; ax < a->rank; ax++) {
    const char *reason;
    lower_axis_view(n, a->idx[ax], &av[ax], &reason);
    for (int k = 0; k < av[ax].n_peels; k++) {
      const lower_peel_t *p = &av[ax].peel[k];
      const syno_expr_t *sz = &n->node[p->size];
      emit_bounds(e, p->arg);
      /* The axis is read at node(p) + off: narrow it to the node's range, unless the axis
       * is that range already (the tensor's own axis, or what a roll left). */
      bool whole = sz->kind == SYNO_EXPR_SIZE && strcmp(off[ax], "0") == 0 &&
                   ((k == 0 && !fresh[ax] && syno_size_eq(sz->size, a->dim[ax])) ||
                    (k > 0 && av[ax].peel[k - 1].kind == LOWER_PEEL_ROLL &&
                     n->node[av[ax].peel[k - 1].size].kind == SYNO_EXPR_SIZE &&
                     syno_size_eq(n->node[av[ax].peel[k - 1].size].size, sz->size)));
      if (p->kind == LOWER_PEEL_REPEAT) {
        syno_strbuf_printf(sb, "        t = t.narrow(%d, %s + lo // ", ax, off[ax]);
        py_const(e, sb, p->size);
        syno_strbuf_printf(sb, ", hi // ");
        py_const(e, sb, p->size);
        syno_strbuf_printf(sb, " - lo // ");
        py_const(e, sb, p->size);
        syno_strbuf_printf(sb, " + 1)\n        t = torch.repeat_interleave(t, ");
        py_const(e, sb, p->size);
        syno_strbuf_printf(sb, ", %d)\n", ax);
        block_offset(e, off[ax], p->size);
        continue;
      }
      if (!whole) {
        syno_strbuf_printf(sb, "        t = t.narrow(%d, %s, ", ax, off[ax]);
        py_const(e, sb, p->size);
        syno_strbuf_printf(sb, ")\n");
      }
      if (p->kind == LOWER_PEEL_PAD && (defer >> ax & 1) && k == av[ax].n_peels - 1) {
        /* Left to the caller (a convolution's own padding): pl<k>, pr<k> and the low end lw<k>. */
        int id = deferred[ax] = e->n_offsets++;
        syno_strbuf_printf(sb, "        pl%d = max(0, -lo)\n        pr%d = max(0, hi - ", id, id);
        py_const(e, sb, p->size);
        syno_strbuf_printf(sb, " + 1)\n        lw%d = lo\n", id);
      } else if (p->kind == LOWER_PEEL_PAD) {
        char right[160];
        syno_strbuf_t rs;
        syno_strbuf_init(&rs, right, sizeof right);
        syno_strbuf_printf(&rs, "max(0, hi - ");
        py_const(e, &rs, p->size);
        syno_strbuf_printf(&rs, " + 1)");
        emit_pad(e, ax, a->rank, "max(0, -lo)", right);
        new_offset(e, off[ax], "max(0, -lo)");
      } else if (p->kind == LOWER_PEEL_ROLL) {
        syno_strbuf_printf(sb, "        t = torch.roll(t, %s", p->shift_neg ? "" : "-");
        py_const(e, sb, p->shift);
        syno_strbuf_printf(sb, ", %d)\n", ax);
        snprintf(off[ax], 160, "0");
      } else {
        syno_strbuf_printf(sb, "        t = t.repeat([");
        for (int j = 0; j < a->rank; j++) {
          if (j != ax) {
            syno_strbuf_printf(sb, "1, ");
            continue;
          }
          syno_strbuf_printf(sb, "hi // ");
          py_const(e, sb, p->size);
          syno_strbuf_printf(sb, " - lo // ");
          py_const(e, sb, p->size);
          syno_strbuf_printf(sb, " + 1, ");
        }
        syno_strbuf_printf(sb, "])\n");
        block_offset(e, off[ax], p->size);
      }
    }
    if (reason) {
      if (emit_sum_split(e, a, ax, av[ax].rest, off, fresh)) {
        ax--; /* the axis read at q: peel it */
        continue;
      }
      char msg[200];
      snprintf(msg, sizeof msg, "axis %d of tensor %d: %s", ax, a->tensor, reason);
      fail(e, msg);
      return;
    }
  }
}

/* The sign of variable v's step through the tensor: +1, -1, or 0 when the
 * axes that read it disagree. */
static int var_sign(const lower_axis_view_t *av, int rank, int v) {
  int s = 1;
  bool seen = false;
  for (int ax = 0; ax < rank; ax++) {
    int64_t c = av[ax].coef[v].imm;
    if (!c) continue;
    int cs = c > 0 ? 1 : -1;
    if (seen && cs != s) return 0;
    s = cs;
    seen = true;
  }
  return s;
}

/* Appends the storage offset of the view to sb: the constants and offsets of
 * every axis, and for each variable in `flipped` its last value. */
static void emit_offset(emit_t *e, syno_strbuf_t *sb, const lower_axis_view_t *av, int rank, char off[][160],
                        syno_varset_t flipped, const int *skip_axis) {
  syno_strbuf_printf(sb, "t.storage_offset()");
  for (int ax = 0; ax < rank; ax++) {
    if (skip_axis && skip_axis[ax]) continue;
    bool flips = false;
    for (int v = 0; v < SYNO_NEST_MAX_VARS; v++) flips |= (flipped >> v & 1) && av[ax].coef[v].imm;
    if (strcmp(off[ax], "0") == 0 && av[ax].n_consts == 0 && !flips) continue;
    syno_strbuf_printf(sb, " + (%s", off[ax]);
    for (int c = 0; c < av[ax].n_consts; c++) {
      syno_strbuf_printf(sb, av[ax].csign[c] > 0 ? " + " : " - ");
      py_const(e, sb, av[ax].cnode[c]);
    }
    for (int v = 0; v < SYNO_NEST_MAX_VARS; v++)
      if ((flipped >> v & 1) && av[ax].coef[v].imm) {
        syno_strbuf_printf(sb, " + ");
        py_coef(e, sb, av[ax].coef[v]);
        syno_strbuf_printf(sb, " * (%s - 1)", ext(e, v));
      }
    syno_strbuf_printf(sb, ") * st[%d]", ax);
  }
}

/* The stride of variable v through the view, |sum over axes of coef * stride|. */
static void emit_stride(emit_t *e, syno_strbuf_t *sb, const lower_axis_view_t *av, int rank, int v, int sign) {
  bool any = false;
  for (int ax = 0; ax < rank; ax++) {
    if (!av[ax].coef[v].imm) continue;
    lower_coef_t c = av[ax].coef[v];
    c.imm *= sign;
    syno_strbuf_printf(sb, "%s", any ? " + " : "");
    if (c.imm != 1 || !syno_size_is_one(c.size)) {
      py_coef(e, sb, c);
      syno_strbuf_printf(sb, " * ");
    }
    syno_strbuf_printf(sb, "st[%d]", ax);
    any = true;
  }
  if (!any) syno_strbuf_printf(sb, "0");
}

/* Whether the view over the variables order[0..k) only permutes the tensor's
 * axes: each axis read at one of them, unscaled, with no constant or offset.
 * perm[i] is the axis of order[i]. */
static bool perm_view(const lower_axis_view_t *av, int rank, char off[][160], const int *order, int k, int *perm) {
  if (k != rank) return false;
  for (int i = 0; i < k; i++) perm[i] = -1;
  for (int ax = 0; ax < rank; ax++) {
    if (av[ax].n_consts || strcmp(off[ax], "0") != 0) return false;
    int var = -1;
    for (int v = 0; v < SYNO_NEST_MAX_VARS; v++) {
      if (!av[ax].coef[v].imm) continue;
      if (var >= 0 || av[ax].coef[v].imm != 1 || !syno_size_is_one(av[ax].coef[v].size)) return false;
      var = v;
    }
    int at = -1;
    for (int i = 0; i < k; i++)
      if (order[i] == var) at = i;
    if (at < 0 || perm[at] >= 0) return false;
    perm[at] = ax;
  }
  return true;
}

/* Tensor t of factor f as a strided view over the variables order[0..k),
 * the first axes of the result: t = t.as_strided(...). */
static void emit_view(emit_t *e, int f, const char *src, const int *order, int k) {
  lower_axis_view_t av[SYNO_MAX_RANK];
  char off[SYNO_MAX_RANK][160];
  syno_access_t a;
  emit_peels(e, f, src, &a, av, off, 0, NULL, NULL);
  if (e->failed) return;
  int rank = a.rank;
  syno_strbuf_t *sb = e->body;
  syno_varset_t flipped = 0;
  for (int i = 0; i < k; i++) {
    int s = var_sign(av, rank, order[i]);
    if (s == 0) {
      fail(e, "a loop variable that steps forward on one axis and backward on another");
      return;
    }
    if (s < 0) flipped |= (syno_varset_t)1 << order[i];
  }
  int perm[SYNO_MAX_RANK];
  if (!flipped && perm_view(av, rank, off, order, k, perm)) {
    bool identity = true;
    for (int i = 0; i < k; i++) identity &= perm[i] == i;
    if (!identity) {
      syno_strbuf_printf(sb, "        t = t.permute([");
      for (int i = 0; i < k; i++) syno_strbuf_printf(sb, "%s%d", i ? ", " : "", perm[i]);
      syno_strbuf_printf(sb, "])\n");
    }
    return;
  }
  syno_strbuf_printf(sb, "        st = t.stride()\n        t = t.as_strided([");
  for (int i = 0; i < k; i++) syno_strbuf_printf(sb, "%s%s", i ? ", " : "", ext(e, order[i]));
  syno_strbuf_printf(sb, "], [");
  for (int i = 0; i < k; i++) {
    syno_strbuf_printf(sb, "%s", i ? ", " : "");
    emit_stride(e, sb, av, rank, order[i], (flipped >> order[i] & 1) ? -1 : 1);
  }
  syno_strbuf_printf(sb, "], ");
  emit_offset(e, sb, av, rank, off, flipped, NULL);
  syno_strbuf_printf(sb, ")\n");
  if (flipped) {
    syno_strbuf_printf(sb, "        t = torch.flip(t, [");
    for (int i = 0, c = 0; i < k; i++)
      if (flipped >> order[i] & 1) syno_strbuf_printf(sb, "%s%d", c++ ? ", " : "", i);
    syno_strbuf_printf(sb, "])\n");
  }
}

static int set_order(syno_varset_t s, int *order) {
  int k = 0;
  for (int v = 0; v < SYNO_NEST_MAX_VARS; v++)
    if (s >> v & 1) order[k++] = v;
  return k;
}

/* The loop variables factor f reads. */
static syno_varset_t factor_vars(const syno_nest_t *n, int f) {
  int cnt[SYNO_NEST_MAX_VARS] = {0};
  for (int i = 0; i < n->factor[f].rank; i++) syno_expr_count_vars(n, n->factor[f].idx[i], cnt);
  syno_varset_t s = 0;
  for (int v = 0; v < n->n_outer + n->n_inner; v++)
    if (cnt[v]) s |= (syno_varset_t)1 << v;
  return s;
}

static void letters(syno_strbuf_t *sb, const int *order, int k) {
  for (int i = 0; i < k; i++) syno_strbuf_printf(sb, "%c", codegen_letter(order[i]));
}

static void list_ext(emit_t *e, syno_strbuf_t *sb, const int *order, int k) {
  for (int i = 0; i < k; i++) syno_strbuf_printf(sb, "%s%s", i ? ", " : "", ext(e, order[i]));
}

static void prod_ext(emit_t *e, syno_strbuf_t *sb, syno_varset_t s) {
  int order[SYNO_NEST_MAX_VARS], k = set_order(s, order);
  if (!k) syno_strbuf_printf(sb, "1");
  for (int i = 0; i < k; i++) syno_strbuf_printf(sb, "%s%s", i ? " * " : "", ext(e, order[i]));
}

/* How a convolution stage is laid out: the variables of each role, and the
 * spatial dimensions in the input's axis order: the windows, and batch
 * variables laid out inside the channels, as dimensions of kernel 1 (so the
 * input needs no transposition and the output none before the result's). */
typedef struct {
  int nb, ng, nc, no, ns;
  int b[SYNO_NEST_MAX_VARS], g[SYNO_NEST_MAX_VARS], ch[SYNO_NEST_MAX_VARS], o[SYNO_NEST_MAX_VARS];
  int win[LOWER_MAX_WINDOWS]; /* per spatial dimension: the window, or -1 for a kernel-1 variable */
  int var[LOWER_MAX_WINDOWS]; /* its result variable: the window's m, or the kernel-1 variable */
  int axis[LOWER_MAX_WINDOWS];
} conv_layout_t;

static int axis_of_var(const lower_axis_view_t *av, int rank, int v, int *count) {
  int at = -1;
  *count = 0;
  for (int ax = 0; ax < rank; ax++)
    if (av[ax].coef[v].imm) at = ax, ++*count;
  return at;
}

static void conv_layout(const lower_conv_t *c, const lower_axis_view_t *av, int rank, conv_layout_t *L) {
  memset(L, 0, sizeof *L);
  int bo[SYNO_NEST_MAX_VARS], nbo = set_order(c->batch, bo);
  L->ng = set_order(c->group, L->g);
  L->nc = set_order(c->chan, L->ch);
  L->no = set_order(c->out, L->o);
  int inner = -1, cnt;
  for (int i = 0; i < L->ng + L->nc; i++)
    for (int ax = 0; ax < rank; ax++)
      if (av[ax].coef[i < L->ng ? L->g[i] : L->ch[i - L->ng]].imm && ax > inner) inner = ax;
  bool spatial[SYNO_MAX_RANK] = {false};
  int var_at[SYNO_MAX_RANK], win_at[SYNO_MAX_RANK];
  for (int w = 0; w < c->n_win; w++) spatial[c->axis[w]] = true, win_at[c->axis[w]] = w, var_at[c->axis[w]] = c->m[w];
  int ns = c->n_win;
  for (int i = 0; i < nbo; i++) {
    int ax = axis_of_var(av, rank, bo[i], &cnt);
    int others = 0;
    for (int v = 0; v < SYNO_NEST_MAX_VARS; v++) others += ax >= 0 && v != bo[i] && av[ax].coef[v].imm;
    if (ns < LOWER_MAX_WINDOWS && cnt == 1 && ax > inner && !others && !spatial[ax]) {
      spatial[ax] = true, win_at[ax] = -1, var_at[ax] = bo[i];
      ns++;
    } else {
      L->b[L->nb++] = bo[i];
    }
  }
  for (int ax = 0; ax < rank; ax++)
    if (spatial[ax]) {
      L->win[L->ns] = win_at[ax];
      L->var[L->ns] = var_at[ax];
      L->axis[L->ns++] = ax;
    }
}

/* The input of a convolution from t: x1 = [batch, group * chan, spatial...]. With `own_pad`,
 * the deferred paddings are the convolution's and each window covers its whole axis;
 * otherwise t was padded and a window starts at its constant plus the padding. */
static void emit_conv_input(emit_t *e, const lower_conv_t *c, const conv_layout_t *L, const lower_axis_view_t *av,
                            int rank, char off[][160], const int *deferred, bool own_pad, const char *indent) {
  syno_strbuf_t *sb = e->body;
  int vo[SYNO_NEST_MAX_VARS], nv = 0;
  for (int i = 0; i < L->nb; i++) vo[nv++] = L->b[i];
  for (int i = 0; i < L->ng; i++) vo[nv++] = L->g[i];
  for (int i = 0; i < L->nc; i++) vo[nv++] = L->ch[i];
  /* A permutation of the axes when each is read whole by one entry. */
  int perm[SYNO_MAX_RANK], np = 0, cnt;
  bool used[SYNO_MAX_RANK] = {false}, is_perm = own_pad && nv + L->ns == rank;
  for (int i = 0; is_perm && i < nv + L->ns; i++) {
    int ax = i < nv ? axis_of_var(av, rank, vo[i], &cnt) : L->axis[i - nv];
    if (i < nv) {
      lower_axis_view_t one = av[ax];
      int v1[1] = {vo[i]}, p1[1];
      char o1[1][160];
      snprintf(o1[0], 160, "%s", off[ax]);
      is_perm = cnt == 1 && perm_view(&one, 1, o1, v1, 1, p1);
    }
    is_perm = is_perm && !used[ax];
    if (is_perm) used[ax] = true, perm[np++] = ax;
  }
  if (is_perm) {
    bool identity = true;
    for (int i = 0; i < np; i++) identity &= perm[i] == i;
    syno_strbuf_printf(sb, "%sx1 = t", indent);
    if (!identity) {
      syno_strbuf_printf(sb, ".permute([");
      for (int i = 0; i < np; i++) syno_strbuf_printf(sb, "%s%d", i ? ", " : "", perm[i]);
      syno_strbuf_printf(sb, "])");
    }
    syno_strbuf_printf(sb, "\n");
  } else {
    int win_of_axis[SYNO_MAX_RANK] = {0};
    for (int w = 0; w < c->n_win; w++) win_of_axis[c->axis[w]] = 1;
    syno_strbuf_printf(sb, "%sst = t.stride()\n%sx1 = t.as_strided([", indent, indent);
    for (int i = 0; i < nv; i++) syno_strbuf_printf(sb, "%s, ", ext(e, vo[i]));
    for (int d = 0; d < L->ns; d++) {
      int w = L->win[d];
      syno_strbuf_printf(sb, "%s", d ? ", " : "");
      if (w < 0) {
        syno_strbuf_printf(sb, "%s", ext(e, L->var[d]));
      } else if (own_pad) {
        syno_strbuf_printf(sb, "t.shape[%d]", c->axis[w]);
      } else {
        py_coef(e, sb, c->stride[w]);
        syno_strbuf_printf(sb, " * (%s - 1) + ", ext(e, c->m[w]));
        lower_coef_t dl = c->dil[w];
        dl.imm = dl.imm < 0 ? -dl.imm : dl.imm;
        py_coef(e, sb, dl);
        syno_strbuf_printf(sb, " * (%s - 1) + 1", ext(e, c->k[w]));
      }
    }
    syno_strbuf_printf(sb, "], [");
    for (int i = 0; i < nv; i++) {
      emit_stride(e, sb, av, rank, vo[i], 1);
      syno_strbuf_printf(sb, ", ");
    }
    for (int d = 0; d < L->ns; d++) {
      syno_strbuf_printf(sb, "%s", d ? ", " : "");
      if (L->win[d] < 0)
        emit_stride(e, sb, av, rank, L->var[d], 1);
      else
        syno_strbuf_printf(sb, "st[%d]", L->axis[d]);
    }
    syno_strbuf_printf(sb, "], ");
    emit_offset(e, sb, av, rank, off, 0, win_of_axis);
    for (int w = 0; w < c->n_win && !own_pad; w++) {
      int ax = c->axis[w];
      syno_strbuf_printf(sb, " + (%s", off[ax]);
      if (deferred[ax] >= 0) syno_strbuf_printf(sb, " + pl%d", deferred[ax]);
      for (int k = 0; k < av[ax].n_consts; k++) {
        syno_strbuf_printf(sb, av[ax].csign[k] > 0 ? " + " : " - ");
        py_const(e, sb, av[ax].cnode[k]);
      }
      if (c->dil[w].imm < 0) {
        syno_strbuf_printf(sb, " + ");
        py_coef(e, sb, c->dil[w]);
        syno_strbuf_printf(sb, " * (%s - 1)", ext(e, c->k[w]));
      }
      syno_strbuf_printf(sb, ") * st[%d]", ax);
    }
    syno_strbuf_printf(sb, ")\n");
  }
  if (L->nb != 1 || L->ng + L->nc != 1) {
    syno_strbuf_printf(sb, "%sx1 = x1.reshape([", indent);
    if (L->nb == 0) syno_strbuf_printf(sb, "1");
    for (int i = 0; i < L->nb; i++) syno_strbuf_printf(sb, "%s%s", i ? " * " : "", ext(e, L->b[i]));
    syno_strbuf_printf(sb, ", ");
    prod_ext(e, sb, c->group | c->chan);
    for (int d = 0; d < L->ns; d++) syno_strbuf_printf(sb, ", x1.shape[%d]", nv + d);
    syno_strbuf_printf(sb, "])\n");
  }
}

/* y = the convolution of x1 and w1, its padding the deferred pl<k> or none. */
static void emit_conv_call(emit_t *e, const lower_conv_t *c, const conv_layout_t *L, const int *deferred,
                           bool own_pad, const char *indent) {
  syno_strbuf_t *sb = e->body;
  syno_strbuf_printf(sb, "%sy = F.conv%dd(x1, w1, None, [", indent, L->ns);
  for (int d = 0; d < L->ns; d++) {
    syno_strbuf_printf(sb, "%s", d ? ", " : "");
    if (L->win[d] < 0)
      syno_strbuf_printf(sb, "1");
    else
      py_coef(e, sb, c->stride[L->win[d]]);
  }
  syno_strbuf_printf(sb, "], [");
  for (int d = 0; d < L->ns; d++) {
    int ax = L->axis[d];
    if (L->win[d] >= 0 && own_pad && deferred[ax] >= 0)
      syno_strbuf_printf(sb, "%spl%d", d ? ", " : "", deferred[ax]);
    else
      syno_strbuf_printf(sb, "%s0", d ? ", " : "");
  }
  syno_strbuf_printf(sb, "], [");
  for (int d = 0; d < L->ns; d++) {
    syno_strbuf_printf(sb, "%s", d ? ", " : "");
    if (L->win[d] < 0) {
      syno_strbuf_printf(sb, "1");
      continue;
    }
    lower_coef_t dl = c->dil[L->win[d]];
    dl.imm = dl.imm < 0 ? -dl.imm : dl.imm;
    py_coef(e, sb, dl);
  }
  syno_strbuf_printf(sb, "], ");
  prod_ext(e, sb, c->group);
  syno_strbuf_printf(sb, ")\n");
}

/* The first stage as a convolution: y over the variables batch, group, out
 * and the spatial ones (conv_layout), in that order (returned in order[]). A
 * window whose only padding is symmetric (decided at each call) is padded by
 * the convolution itself; otherwise the input is padded first. */
static int emit_conv_from(emit_t *e, int xf, const int *perm, int wf, const char *wsrc, const lower_conv_t *c,
                          int *order) {
  syno_strbuf_t *sb = e->body;
  /* The input's views first (the layout depends on them), kept as xt. */
  syno_access_t a;
  lower_axis_view_t av[SYNO_MAX_RANK];
  char off[SYNO_MAX_RANK][160];
  unsigned defer = 0;
  lower_merge_t m[SYNO_MAX_RANK];
  int nm;
  if (split_merge(e->n, xf, &a, m, &nm) < 0) {
    fail(e, "a tensor read at more than 8 axes once its merged axes are split");
    return 0;
  }
  if (perm) permute_access(&a, perm);
  for (int w = 0; w < c->n_win; w++) {
    const char *reason;
    lower_axis_view(e->n, a.idx[c->axis[w]], &av[0], &reason);
    /* The padding is the window's innermost peel (a roll or a repeat may come before it). */
    if (!reason && av[0].n_peels >= 1 && av[0].peel[av[0].n_peels - 1].kind == LOWER_PEEL_PAD && c->dil[w].imm > 0)
      defer |= 1u << c->axis[w];
  }
  int deferred[SYNO_MAX_RANK];
  for (int ax = 0; ax < SYNO_MAX_RANK; ax++) deferred[ax] = -1;
  emit_peels(e, xf, "x", &a, av, off, defer, deferred, perm);
  if (e->failed) return 0;
  int rank = a.rank;
  conv_layout_t L;
  conv_layout(c, av, rank, &L);
  for (int i = 0; i < L.nb + L.ng + L.nc; i++) {
    int v = i < L.nb ? L.b[i] : i < L.nb + L.ng ? L.g[i - L.nb] : L.ch[i - L.nb - L.ng];
    if (var_sign(av, rank, v) <= 0) {
      fail(e, "a convolution whose input steps backward");
      return 0;
    }
  }
  for (int d = 0; d < L.ns; d++)
    if (L.win[d] < 0 && var_sign(av, rank, L.var[d]) <= 0) {
      fail(e, "a convolution whose input steps backward");
      return 0;
    }
  syno_strbuf_printf(sb, "        xt = t\n");
  /* Weight: [group..., out..., chan..., kernel...], flipped where the dilation is negative. */
  int wo[SYNO_NEST_MAX_VARS], k = 0;
  for (int i = 0; i < L.ng; i++) wo[k++] = L.g[i];
  for (int i = 0; i < L.no; i++) wo[k++] = L.o[i];
  for (int i = 0; i < L.nc; i++) wo[k++] = L.ch[i];
  int first_k = k;
  for (int d = 0; d < L.ns; d++)
    if (L.win[d] >= 0) wo[k++] = c->k[L.win[d]];
  emit_view(e, wf, wsrc, wo, k);
  bool flip = false;
  for (int w = 0; w < c->n_win; w++) flip |= c->dil[w].imm < 0;
  if (flip) {
    syno_strbuf_printf(sb, "        t = torch.flip(t, [");
    for (int d = 0, j = first_k, f = 0; d < L.ns; d++) {
      if (L.win[d] < 0) continue;
      if (c->dil[L.win[d]].imm < 0) syno_strbuf_printf(sb, "%s%d", f++ ? ", " : "", j);
      j++;
    }
    syno_strbuf_printf(sb, "])\n");
  }
  bool plain = L.ng + L.no == 1 && L.nc == 1 && L.ns == c->n_win;
  if (!plain) {
    syno_strbuf_printf(sb, "        t = t.reshape([");
    prod_ext(e, sb, c->group | c->out);
    syno_strbuf_printf(sb, ", ");
    prod_ext(e, sb, c->chan);
    for (int d = 0; d < L.ns; d++) syno_strbuf_printf(sb, ", %s", L.win[d] < 0 ? "1" : ext(e, c->k[L.win[d]]));
    syno_strbuf_printf(sb, "])\n");
  }
  syno_strbuf_printf(sb, "        w1 = t\n        t = xt\n");
  bool all = defer != 0;
  for (int w = 0; w < c->n_win; w++) all &= deferred[c->axis[w]] >= 0;
  if (all) {
    /* Symmetric padding from the window's start: the convolution pads. */
    syno_strbuf_printf(sb, "        if ");
    for (int w = 0; w < c->n_win; w++) {
      int id = deferred[c->axis[w]];
      syno_strbuf_printf(sb, "%spl%d == pr%d and lw%d == -pl%d", w ? " and " : "", id, id, id, id);
    }
    syno_strbuf_printf(sb, ":\n");
    emit_conv_input(e, c, &L, av, rank, off, deferred, true, "            ");
    emit_conv_call(e, c, &L, deferred, true, "            ");
    syno_strbuf_printf(sb, "        else:\n");
  }
  const char *ind = all ? "            " : "        ";
  for (int ax = 0; ax < rank; ax++)
    if (deferred[ax] >= 0) {
      syno_strbuf_printf(sb, "%st = F.pad(t, [", ind);
      for (int j = rank - 1; j > ax; j--) syno_strbuf_printf(sb, "0, 0, ");
      syno_strbuf_printf(sb, "pl%d, pr%d])\n", deferred[ax], deferred[ax]);
    }
  emit_conv_input(e, c, &L, av, rank, off, deferred, false, ind);
  emit_conv_call(e, c, &L, deferred, false, ind);
  int r = 0;
  for (int i = 0; i < L.nb; i++) order[r++] = L.b[i];
  for (int i = 0; i < L.ng; i++) order[r++] = L.g[i];
  for (int i = 0; i < L.no; i++) order[r++] = L.o[i];
  for (int d = 0; d < L.ns; d++) order[r++] = L.var[d];
  if (L.nb != 1 || L.ng + L.no != 1) {
    syno_strbuf_printf(sb, "        y = y.reshape([");
    list_ext(e, sb, order, r);
    syno_strbuf_printf(sb, "])\n");
  }
  return r;
}

/* The first stage as a convolution (emit_conv_from). Its spatial dimensions follow the input's
 * axes, and the result is permuted into the output's order after it: a copy of the result. When
 * the input is copied anyway before the convolution (a roll or a repeat of an axis), its axes
 * are permuted first instead, so that the copy lays the input out in the output's order of
 * those dimensions and the result needs no permutation. */
static int emit_conv(emit_t *e, int xf, int wf, const char *wsrc, const lower_conv_t *c, int *order) {
  syno_strbuf_printf(e->body, "        # stage 1: a convolution of the input\n");
  syno_access_t a;
  lower_merge_t m[SYNO_MAX_RANK];
  int nm;
  if (split_merge(e->n, xf, &a, m, &nm) < 0) return emit_conv_from(e, xf, NULL, wf, wsrc, c, order);
  lower_axis_view_t av[SYNO_MAX_RANK];
  bool copied = false;
  for (int ax = 0; ax < a.rank; ax++) {
    const char *reason;
    lower_axis_view(e->n, a.idx[ax], &av[ax], &reason);
    for (int k = 0; k < av[ax].n_peels; k++) copied |= av[ax].peel[k].kind != LOWER_PEEL_PAD;
  }
  conv_layout_t L;
  conv_layout(c, av, a.rank, &L);
  /* The spatial axes sorted by their result variable (the output's order). */
  int by_var[LOWER_MAX_WINDOWS], perm[SYNO_MAX_RANK], inv[SYNO_MAX_RANK];
  for (int d = 0; d < L.ns; d++) by_var[d] = d;
  for (int i = 1; i < L.ns; i++)
    for (int j = i; j > 0 && L.var[by_var[j]] < L.var[by_var[j - 1]]; j--) {
      int t = by_var[j];
      by_var[j] = by_var[j - 1], by_var[j - 1] = t;
    }
  bool sorted = true;
  for (int d = 0; d < L.ns; d++) sorted &= by_var[d] == d;
  if (sorted || !copied) return emit_conv_from(e, xf, NULL, wf, wsrc, c, order);
  for (int ax = 0; ax < a.rank; ax++) perm[ax] = ax;
  for (int d = 0; d < L.ns; d++) perm[L.axis[d]] = L.axis[by_var[d]];
  for (int ax = 0; ax < a.rank; ax++) inv[perm[ax]] = ax;
  lower_conv_t pc = *c;
  for (int w = 0; w < pc.n_win; w++) pc.axis[w] = inv[c->axis[w]];
  return emit_conv_from(e, xf, perm, wf, wsrc, &pc, order);
}

static void tensor_src(int t, char *buf, size_t n) {
  if (t == 0)
    snprintf(buf, n, "x");
  else
    snprintf(buf, n, "self.w%d", t);
}

/* Axes order[0..r) of the running result y as an access in factor slot xf of e->n, for stage
 * k of a lifted plan: each axis read at its variable, or, for a lifted axis the stage reads
 * through the input's index (lower_stages_node), at that expression. False when y has more
 * axes than an access. */
static bool running_access(emit_t *e, const syno_nest_t *plan_n, const lower_stages_t *p, const int16_t *var_node,
                           int k, const int *order, int r) {
  if (r > SYNO_MAX_RANK) return false;
  syno_access_t ya = {.tensor = 0, .rank = r};
  for (int i = 0; i < r; i++) {
    ya.idx[i] = lower_stages_node(p, plan_n, var_node, k, order[i]);
    ya.dim[i] = syno_nest_extent(e->n, order[i]);
  }
  e->n->factor[p->factor_of[0]] = ya;
  return true;
}

/* The contraction of the forward nest: y over the variables order[0..r). A lifted plan
 * (p->n_lift > 0) runs on e->n = n, the plan's nest plan_n extended by the lifted variables
 * (lower_stages_nest), whose input factor reads them; a stage that reads a lifted axis through
 * the input's index first views y through it as the input is viewed (the input's factor slot
 * of n then holds y's access), and the view stage (LOWER_STAGE_VIEW) is that view alone. */
static int emit_stages(emit_t *e, syno_nest_t *n, const syno_nest_t *plan_n, const lower_stages_t *p,
                       const int16_t *var_node, bool planned, int *order) {
  syno_strbuf_t *sb = e->body;
  char src[32];
  if (!planned) {
    /* One einsum of every factor. */
    syno_varset_t present = 0;
    for (int f = 0; f < n->n_factors; f++) {
      int fo[SYNO_NEST_MAX_VARS];
      syno_varset_t s = factor_vars(n, f);
      present |= s;
      tensor_src(n->factor[f].tensor, src, sizeof src);
      syno_strbuf_printf(sb, "        # factor %d\n", f);
      emit_view(e, f, src, fo, set_order(s, fo));
      syno_strbuf_printf(sb, "        f%d = t\n", f);
    }
    syno_varset_t outer = ((syno_varset_t)1 << n->n_outer) - 1;
    int r = set_order(present & outer, order);
    syno_strbuf_printf(sb, "        y = torch.einsum('");
    for (int f = 0; f < n->n_factors; f++) {
      int fo[SYNO_NEST_MAX_VARS];
      syno_strbuf_printf(sb, "%s", f ? "," : "");
      letters(sb, fo, set_order(factor_vars(n, f), fo));
    }
    syno_strbuf_printf(sb, "->");
    letters(sb, order, r);
    syno_strbuf_printf(sb, "', [");
    for (int f = 0; f < n->n_factors; f++) syno_strbuf_printf(sb, "%sf%d", f ? ", " : "", f);
    syno_strbuf_printf(sb, "])\n");
    syno_varset_t unread = ((((syno_varset_t)1 << (n->n_outer + n->n_inner)) - 1) & ~outer) & ~present;
    if (unread) {
      syno_strbuf_printf(sb, "        y = y * (");
      prod_ext(e, sb, unread);
      syno_strbuf_printf(sb, ")\n");
    }
    return r;
  }
  syno_varset_t cur = 0;
  int r = 0, first = 0;
  lower_conv_t conv;
  lower_axis_view_t av[SYNO_MAX_RANK];
  int xf = p->factor_of[0];
  syno_access_t xa;
  lower_merge_t m[SYNO_MAX_RANK];
  int nm;
  /* A convolution only in a plan without lifted axes. */
  bool conv_ok = p->n_lift == 0 && split_merge(n, xf, &xa, m, &nm) >= 0;
  for (int ax = 0; conv_ok && ax < xa.rank; ax++) {
    const char *reason;
    lower_axis_view(n, xa.idx[ax], &av[ax], &reason);
    conv_ok = reason == NULL;
  }
  if (conv_ok && lower_view_conv(p, av, xa.rank, &conv)) {
    tensor_src(p->seq[0], src, sizeof src);
    r = emit_conv(e, xf, p->factor_of[p->seq[0]], src, &conv, order);
    cur = p->result[0];
    first = 1;
  } else {
    cur = factor_vars(n, xf); /* reads[0], the lifted axes read at their variables */
    r = set_order(cur, order);
    if (p->n_lift > 0)
      syno_strbuf_printf(sb,
                         "        # the input's view, %d axis%s lifted (read whole, each at a variable of its own)\n",
                         p->n_lift, p->n_lift > 1 ? "es" : "");
    else
      syno_strbuf_printf(sb, "        # the input's view\n");
    emit_view(e, xf, "x", order, r);
    syno_strbuf_printf(sb, "        y = t\n");
  }
  for (int s = first; s < p->n_stages && !e->failed; s++) {
    int w = p->seq[s], wo[SYNO_NEST_MAX_VARS], nwo = 0;
    if (lower_stages_unlifts(p, s)) {
      if (!running_access(e, plan_n, p, var_node, s, order, r)) {
        fail(e, "a lifted axis read back from a result of more than 8 axes");
        return 0;
      }
      syno_strbuf_printf(
          sb, "        # stage %d: %s through the input's index\n", s + 1,
          w == LOWER_STAGE_VIEW ? "gather the lifted axes into the output (a view)" : "read the lifted axes of y");
      cur = factor_vars(n, xf);
      r = set_order(cur, order);
      emit_view(e, xf, "y", order, r);
      syno_strbuf_printf(sb, "        y = t\n");
    }
    if (w == LOWER_STAGE_VIEW) continue; /* the view reads every output variable it keeps */
    syno_varset_t wr = w ? p->reads[w] : 0, res = p->result[s] & (cur | wr);
    if (w) {
      nwo = set_order(wr, wo);
      tensor_src(w, src, sizeof src);
      syno_strbuf_printf(sb, "        # stage %d: contract weight %d\n", s + 1, w);
      emit_view(e, p->factor_of[w], src, wo, nwo);
    } else {
      syno_strbuf_printf(sb, "        # stage %d: sum what only the input reads\n", s + 1);
    }
    int ro[SYNO_NEST_MAX_VARS], nr = set_order(res, ro);
    syno_strbuf_printf(sb, "        y = torch.einsum('");
    letters(sb, order, r);
    if (w) {
      syno_strbuf_printf(sb, ",");
      letters(sb, wo, nwo);
    }
    syno_strbuf_printf(sb, "->");
    letters(sb, ro, nr);
    syno_strbuf_printf(sb, "', [y%s])\n", w ? ", t" : "");
    memcpy(order, ro, sizeof(int) * (size_t)nr);
    r = nr;
    cur = res;
  }
  if (p->unread_inner) {
    syno_strbuf_printf(sb, "        y = y * (");
    prod_ext(e, sb, p->unread_inner);
    syno_strbuf_printf(sb, ")\n");
  }
  return r;
}

/* The FLOPs of plan p as a formula over the sizes: "2*N*C_out*... + ..." (lower_stages_flops:
 * a view stage one per point). n is the nest the plan's variables are of, the lifted ones
 * included (lower_stages_nest). */
static void flops_formula(const syno_vars_t *v, const syno_nest_t *n, const lower_stages_t *p, bool planned,
                          syno_strbuf_t *sb) {
  char text[256];
  int terms = 0;
  syno_varset_t all = (((syno_varset_t)1 << (n->n_outer + n->n_inner)) - 1), outer = ((syno_varset_t)1 << n->n_outer) - 1;
  int stages = planned ? p->n_stages : 1;
  for (int s = 0; s < stages; s++) {
    syno_varset_t part = planned ? p->part[s] : all;
    int k = !planned                        ? (n->n_factors - 1) + (n->n_inner > 0)
            : p->seq[s] == LOWER_STAGE_VIEW ? 1
                                            : (p->seq[s] > 0) + (p->part[s] != p->result[s]);
    if (!k) continue;
    syno_size_t m = syno_size_one();
    for (int i = 0; i < n->n_outer + n->n_inner; i++)
      if (part >> i & 1) m = syno_size_mul(m, syno_nest_extent(n, i));
    syno_size_print(v, m, text, sizeof text);
    syno_strbuf_printf(sb, "%s%d*%s", terms++ ? " + " : "", k, text);
  }
  if (!syno_size_is_one(n->divisor)) {
    syno_size_t m = syno_size_one();
    for (int i = 0; i < n->n_outer; i++)
      if (outer >> i & 1) m = syno_size_mul(m, syno_nest_extent(n, i));
    syno_size_print(v, m, text, sizeof text);
    syno_strbuf_printf(sb, "%s%s", terms++ ? " + " : "", text);
  }
  if (!terms) syno_strbuf_printf(sb, "0");
}

/* The module of forward nest fwd (n: its blocks split) with the plan of n under `flags`
 * (lower_stages_plan_ex); *lifted tells whether the plan lifts an axis. */
static int emit_module(const syno_operator_t *op, int binding, const syno_nest_t *fwd, const syno_nest_t *n, int flags,
                       bool *lifted, char *buf, size_t bufsize, syno_error_t *err) {
  const syno_vars_t *v = syno_graph_vars(op->g);
  char *pro_buf = syno_malloc(BODY_CAP), *body_buf = syno_malloc(BODY_CAP);
  lower_stages_t *p = syno_malloc(sizeof *p);
  syno_nest_t *sn = syno_malloc(sizeof *sn); /* the nest the stages read: n, the lifted variables added */
  int rc = -1;
  *lifted = false;
  if (!pro_buf || !body_buf || !p || !sn) {
    syno_error_set(err, "out of memory");
    goto done;
  }
  const char *reason = NULL;
  if (lower_stages_plan_ex(op, n, v, binding, flags, p, &reason, err)) goto done;
  bool planned = reason == NULL;
  int16_t var_node[LOWER_STAGES_MAX_VARS];
  *sn = *n;
  if (planned && p->n_lift > 0) {
    *lifted = true;
    syno_access_t input;
    if (p->nv + p->n_lift > 52) {
      syno_error_set(err, WHO ": %d loops and lifted axes exceed einsum's 52 letters", p->nv + p->n_lift);
      goto done;
    }
    if (lower_stages_nest(p, n, sn, var_node, &input)) {
      syno_error_set(err, WHO ": the nest has no room for the lifted axes");
      goto done;
    }
    sn->factor[p->factor_of[0]] = input;
  }

  /* Which primaries the input gives (axis read), and which are constructor arguments. */
  syno_shape_t shape[SYNO_MAX_TENSORS];
  for (int t = 0; t < op->n_tensors; t++) syno_operator_tensor_shape(op, t, &shape[t]);
  int read_at[SYNO_MAX_VARS];
  for (int i = 0; i < SYNO_MAX_VARS; i++) read_at[i] = -1;
  for (int a = 0; a < shape[0].rank; a++) {
    int i = codegen_lone_primary(shape[0].dim[a]);
    if (i >= 0 && read_at[i] < 0) read_at[i] = a;
  }
  unsigned used = codegen_used_primaries(op, fwd), ctor = 0;
  for (int t = 1; t < op->n_tensors; t++)
    for (int a = 0; a < shape[t].rank; a++) ctor |= syno_size_primaries(shape[t].dim[a]);
  for (int i = 0; i < v->n[SYNO_PRIMARY]; i++)
    if ((used >> i & 1) && read_at[i] < 0) ctor |= 1u << i;

  syno_strbuf_t sb, pro, body;
  syno_strbuf_init(&sb, buf, bufsize);
  syno_strbuf_init(&pro, pro_buf, BODY_CAP);
  syno_strbuf_init(&body, body_buf, BODY_CAP);
  char tmp[256], flops[1024];
  syno_strbuf_t fb;
  syno_strbuf_init(&fb, flops, sizeof flops);
  flops_formula(v, sn, p, planned, &fb);
  codegen_py_header(&sb, op, binding, fwd->outer, fwd->n_outer, "", flops);
  syno_strbuf_printf(&sb, "\nimport math\nimport warnings\n\nimport torch\nimport torch.nn.functional as F\n\n\n");
  syno_strbuf_printf(&sb, "class SynoOp(torch.nn.Module):\n    \"\"\"The operator above as views and contractions.\n\n");
  syno_strbuf_printf(&sb, "    Constructor arguments (the sizes that shape the weights, default: the\n    exported binding):");
  for (int i = 0; i < v->n[SYNO_PRIMARY]; i++)
    if (ctor >> i & 1) {
      codegen_primary_name(v, i, tmp, sizeof tmp);
      syno_strbuf_printf(&sb, " %s", tmp);
    }
  syno_strbuf_printf(&sb, ".\n    Read from the input at every call:");
  int nread = 0;
  for (int i = 0; i < v->n[SYNO_PRIMARY]; i++)
    if ((used >> i & 1) && !(ctor >> i & 1)) {
      codegen_primary_name(v, i, tmp, sizeof tmp);
      syno_strbuf_printf(&sb, " %s", tmp);
      nread++;
    }
  syno_strbuf_printf(&sb, "%s.\n", nread ? "" : " nothing");
  syno_strbuf_printf(&sb,
                     "    An input whose shape the operator does not admit raises ValueError.\n"
                     "    Weights w1.. are initialised uniform in +-1/sqrt(fan_in), fan_in = numel /\n"
                     "    first axis. torch.jit.script compiles the module for every shape;\n"
                     "    torch.jit.trace keeps sizes of the example input (it warns): a traced\n"
                     "    module is exact at the traced shape only.\n    \"\"\"\n\n");
  int64_t val;
  syno_strbuf_printf(&sb, "    in_shape = (");
  for (int a = 0; a < shape[0].rank; a++) {
    if (syno_size_eval(v, shape[0].dim[a], binding, &val, err)) goto done;
    syno_strbuf_printf(&sb, "%" PRId64 ", ", val);
  }
  syno_strbuf_printf(&sb, ")\n    out_shape = (");
  for (int a = 0; a < fwd->n_outer; a++) {
    if (syno_size_eval(v, fwd->outer[a], binding, &val, err)) goto done;
    syno_strbuf_printf(&sb, "%" PRId64 ", ", val);
  }
  syno_strbuf_printf(&sb, ")\n\n    def __init__(self");
  for (int i = 0; i < v->n[SYNO_PRIMARY]; i++)
    if (ctor >> i & 1) {
      codegen_primary_name(v, i, tmp, sizeof tmp);
      syno_strbuf_printf(&sb, ", %s: int = %" PRId64, tmp, v->bind[binding].p[i]);
    }
  syno_strbuf_printf(&sb, "):\n        super().__init__()\n");
  for (int i = 0; i < v->n[SYNO_PRIMARY]; i++)
    if (ctor >> i & 1) {
      codegen_primary_name(v, i, tmp, sizeof tmp);
      syno_strbuf_printf(&sb, "        self.%s = %s\n", tmp, tmp);
    }
  {
    /* The weights' sizes are spelled in __init__ by a table of its own. */
    syno_strbuf_t ipro;
    char *ibuf = pro_buf;
    syno_strbuf_init(&ipro, ibuf, BODY_CAP);
    codegen_sizes_t iz = {.v = v, .b = binding, .pro = &ipro, .who = WHO, .indent = "        ", .err = err};
    char wline[SYNO_MAX_TENSORS][1024];
    for (int t = 1; t < op->n_tensors; t++) {
      syno_strbuf_t ws;
      syno_strbuf_init(&ws, wline[t], sizeof wline[t]);
      syno_strbuf_printf(&ws, "        w = torch.empty([");
      for (int a = 0; a < shape[t].rank; a++) syno_strbuf_printf(&ws, "%s%s", a ? ", " : "", codegen_size(&iz, shape[t].dim[a]));
      syno_strbuf_printf(&ws, "])\n        bound = 1.0 / math.sqrt(max(1, w[0].numel()))\n");
      syno_strbuf_printf(&ws, "        self.w%d = torch.nn.Parameter(w.uniform_(-bound, bound))\n", t);
    }
    if (iz.failed) goto done;
    syno_strbuf_printf(&sb, "%s", ibuf);
    for (int t = 1; t < op->n_tensors; t++) syno_strbuf_printf(&sb, "%s", wline[t]);
  }

  /* forward: the input's axes, the sizes, then the stages. */
  emit_t e = {.op = op, .n = sn, .z = {.v = v, .b = binding, .pro = &pro, .who = WHO, .indent = "        ", .err = err}, .body = &body, .err = err};
  syno_strbuf_init(&pro, pro_buf, BODY_CAP);
  syno_shape_print(v, &shape[0], tmp, sizeof tmp);
  syno_strbuf_printf(&pro, "\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n");
  syno_strbuf_printf(&pro,
                     "        if x.dim() != %d:\n"
                     "            raise ValueError('SynoOp: the input has ' + str(x.dim()) + ' axes, the operator "
                     "takes %d: %s')\n",
                     shape[0].rank, shape[0].rank, tmp);
  syno_strbuf_printf(&pro,
                     "        if torch.jit.is_tracing():\n"
                     "            warnings.warn('SynoOp: torch.jit.trace keeps sizes of the example input; "
                     "use torch.jit.script for a module that serves every size')\n");
  for (int i = 0; i < v->n[SYNO_PRIMARY]; i++) {
    if (!(used >> i & 1)) continue;
    codegen_primary_name(v, i, tmp, sizeof tmp);
    if (ctor >> i & 1) {
      syno_strbuf_printf(&pro, "        %s = self.%s\n", tmp, tmp);
      continue;
    }
    syno_size_t c = shape[0].dim[read_at[i]];
    c.p[i] = 0;
    int64_t num, den;
    if (syno_size_eval_frac(v, c, binding, &num, &den, err)) goto done;
    if (num == 1 && den == 1)
      syno_strbuf_printf(&pro, "        %s = x.shape[%d]\n", tmp, read_at[i]);
    else
      syno_strbuf_printf(&pro, "        %s = x.shape[%d] * %" PRId64 " // %" PRId64 "\n", tmp, read_at[i], den, num);
  }
  {
    const char *dimname[SYNO_MAX_RANK];
    char dimtext[SYNO_MAX_RANK][64];
    for (int a = 0; a < shape[0].rank; a++) {
      dimname[a] = codegen_size(&e.z, shape[0].dim[a]);
      syno_size_print(v, shape[0].dim[a], dimtext[a], sizeof dimtext[a]);
    }
    for (int a = 0; a < shape[0].rank; a++) {
      bool given = false; /* the axis a primary was read from, whole */
      for (int i = 0; i < v->n[SYNO_PRIMARY]; i++)
        given |= read_at[i] == a && !(ctor >> i & 1) && strcmp(dimname[a], v->var[SYNO_PRIMARY][i].name) == 0;
      if (given) continue;
      syno_strbuf_printf(&pro,
                         "        if x.shape[%d] != %s:\n"
                         "            raise ValueError('SynoOp: input axis %d has ' + str(x.shape[%d]) + ', the "
                         "operator needs %s = ' + str(%s))\n",
                         a, dimname[a], a, a, dimtext[a], dimname[a]);
    }
  }
  int order[SYNO_NEST_MAX_VARS];
  int r = emit_stages(&e, sn, n, p, var_node, planned, order);
  if (e.failed || e.z.failed) goto done;
  /* The result's variables into the output's order and shape. */
  int perm[SYNO_NEST_MAX_VARS], np = 0;
  bool identity = true, missing = false;
  for (int j = 0; j < n->n_outer; j++) {
    int at = -1;
    for (int i = 0; i < r; i++)
      if (order[i] == j) at = i;
    if (at < 0) {
      missing = true;
      continue;
    }
    identity &= at == np;
    perm[np++] = at;
  }
  if (!identity) {
    syno_strbuf_printf(&body, "        y = y.permute([");
    for (int i = 0; i < np; i++) syno_strbuf_printf(&body, "%s%d", i ? ", " : "", perm[i]);
    syno_strbuf_printf(&body, "])\n");
  }
  if (missing) {
    syno_strbuf_printf(&body, "        y = y.reshape([");
    for (int j = 0; j < n->n_outer; j++) {
      bool has = false;
      for (int i = 0; i < r; i++) has |= order[i] == j;
      syno_strbuf_printf(&body, "%s%s", j ? ", " : "", has ? ext(&e, j) : "1");
    }
    syno_strbuf_printf(&body, "]).expand([");
    for (int j = 0; j < n->n_outer; j++) syno_strbuf_printf(&body, "%s%s", j ? ", " : "", ext(&e, j));
    syno_strbuf_printf(&body, "])\n");
  }
  syno_strbuf_printf(&body, "        y = y.reshape([");
  for (int j = 0; j < fwd->n_outer; j++) syno_strbuf_printf(&body, "%s%s", j ? ", " : "", codegen_size(&e.z, fwd->outer[j]));
  syno_strbuf_printf(&body, "])\n");
  if (!syno_size_is_one(fwd->divisor)) syno_strbuf_printf(&body, "        y = y / %s\n", codegen_size(&e.z, fwd->divisor));
  syno_strbuf_printf(&body, "        return y.contiguous()\n");
  if (e.failed || e.z.failed) goto done;
  if (pro.len >= BODY_CAP || body.len >= BODY_CAP) {
    syno_error_set(err, WHO ": the generated forward is too long");
    goto done;
  }
  syno_strbuf_printf(&sb, "%s%s", pro_buf, body_buf);
  if (sb.len > (size_t)INT32_MAX) {
    syno_error_set(err, WHO ": the generated text is too long");
    goto done;
  }
  rc = (int)sb.len;
done:
  syno_free(pro_buf);
  syno_free(body_buf);
  syno_free(p);
  syno_free(sn);
  return rc;
}

int syno_codegen_pytorch(const syno_operator_t *op, int binding, char *buf, size_t bufsize, syno_error_t *err) {
  const syno_vars_t *v = syno_graph_vars(op->g);
  if (binding < 0 || binding >= v->nbind)
    return syno_error_set(err, WHO ": binding %d does not exist (the operator has %d)", binding, v->nbind);
  syno_nest_t *fwd = syno_malloc(sizeof *fwd), *n = syno_malloc(sizeof *n);
  int rc = -1;
  if (!fwd || !n) {
    syno_error_set(err, "out of memory");
    goto done;
  }
  if (syno_lower_forward(op, fwd, err)) goto done;
  if (fwd->n_guards) {
    syno_error_set(err, WHO ": the forward loop nest has guards");
    goto done;
  }
  if (fwd->n_outer + fwd->n_inner > 26) {
    syno_error_set(err, WHO ": %d loops exceed einsum's 26 letters", fwd->n_outer + fwd->n_inner);
    goto done;
  }
  syno_nest_split_blocks(fwd, v, n);
  if (n->n_outer + n->n_inner > 52) {
    syno_error_set(err, WHO ": %d loops exceed einsum's 52 letters", n->n_outer + n->n_inner);
    goto done;
  }
  /* The plan the FLOPs count and the executor run (syno_forward_flops: the split nest, lifted
   * axes); when the emitter cannot write it, the plan without lifted axes. */
  bool lifted = false;
  rc = emit_module(op, binding, fwd, n, LOWER_STAGES_LIFT, &lifted, buf, bufsize, err);
  if (rc < 0 && lifted) rc = emit_module(op, binding, fwd, n, 0, &lifted, buf, bufsize, err);
done:
  syno_free(fwd);
  syno_free(n);
  return rc;
}
