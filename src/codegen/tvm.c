/* The TVM emitter: the forward loop nest as a Python file of TVM tensor-expression (TE)
 * definitions, with a Relax wrapper that puts them into an IRModule (docs/semantics.md §9.2).
 *
 * The nest is contracted in the stages of its plan (src/lower/stages.h), the contractions the
 * executor and the PyTorch export run: one te.compute per stage, over the variables the stage
 * keeps, whose body is a te.sum, over one te.reduce_axis per variable it sums, of the running
 * result times the next weight. The input and the weights are read through the nest's own
 * index expressions; zero padding is a condition, tvm.tir.if_then_else(te.all(...), v, 0),
 * which TVM evaluates lazily, so a padded read is never made. TE allows a reduction only at
 * the top of a compute, so the Mean divisor divides every summand of the last stage.
 *
 * Sizes are symbolic: coefficients (k, s, ...) are fixed at the exported binding; every
 * primary size is read from the shapes of the tensors forward() is given (te.floordiv for
 * derived sizes), so the same definition serves placeholders of any shape, symbolic ones
 * (tvm.tir.Var dimensions in the Relax signature) included. A primary size that no tensor
 * shows alone stays the binding's constant. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lower/expr_eval.h"
#include "../lower/stages.h"
#include "emit.h"
#include "syno/alloc.h"
#include "syno/codegen.h"
#include "syno/lower.h"
#include "syno/strbuf.h"

#define WHO "codegen tvm"
#define BODY_CAP (1 << 17)

typedef struct {
  const syno_nest_t *n;
  codegen_sizes_t z;
  syno_error_t *err;
} tvm_t;

/* Node i of the nest in TE: loop variable j is v<j>, a size its symbolic spelling. */
static int te_expr(tvm_t *t, syno_strbuf_t *sb, int i) {
  const syno_expr_t *x = &t->n->node[i];
  switch (x->kind) {
    case SYNO_EXPR_OUTER: syno_strbuf_printf(sb, "v%d", x->var); return 0;
    case SYNO_EXPR_INNER: syno_strbuf_printf(sb, "v%d", t->n->n_outer + x->var); return 0;
    case SYNO_EXPR_SIZE: syno_strbuf_printf(sb, "%s", codegen_size(&t->z, x->size)); return t->z.failed ? -1 : 0;
    case SYNO_EXPR_IMM: syno_strbuf_printf(sb, x->imm < 0 ? "(%" PRId64 ")" : "%" PRId64, x->imm); return 0;
    default: break;
  }
  const char *pre = "(", *mid = NULL, *post = ")";
  switch (x->kind) {
    case SYNO_EXPR_ADD: mid = " + "; break;
    case SYNO_EXPR_SUB: mid = " - "; break;
    case SYNO_EXPR_MUL: mid = " * "; break;
    case SYNO_EXPR_DIV: pre = "te.floordiv("; break;
    case SYNO_EXPR_MOD: pre = "te.floormod("; break;
    case SYNO_EXPR_RESTRICT:
      pre = "_pad(";
      post = ", ok)";
      break;
    default: return syno_error_set(t->err, WHO ": unknown index expression kind %d", (int)x->kind);
  }
  syno_strbuf_printf(sb, "%s", pre);
  if (te_expr(t, sb, x->a)) return -1;
  syno_strbuf_printf(sb, "%s", mid ? mid : ", ");
  if (te_expr(t, sb, x->b)) return -1;
  syno_strbuf_printf(sb, "%s", post);
  return 0;
}

static int te_access(tvm_t *t, syno_strbuf_t *sb, const syno_access_t *a) {
  syno_strbuf_printf(sb, a->tensor == 0 ? "x[" : "w%d[", a->tensor);
  for (int i = 0; i < a->rank; i++) {
    if (i) syno_strbuf_printf(sb, ", ");
    if (te_expr(t, sb, a->idx[i])) return -1;
  }
  syno_strbuf_printf(sb, "]");
  return 0;
}

static void var_list(syno_strbuf_t *sb, syno_varset_t s) {
  int k = 0;
  for (int v = 0; v < SYNO_NEST_MAX_VARS; v++)
    if (s >> v & 1) syno_strbuf_printf(sb, "%sv%d", k++ ? ", " : "", v);
}

/* One te.compute: y<s> over the variables `keep`, summing `sum`, of `reads` (TE text). */
static int te_stage(tvm_t *t, syno_strbuf_t *sb, int s, syno_varset_t keep, syno_varset_t sum, const char *reads,
                    const char *divisor, const char *what) {
  syno_strbuf_printf(sb, "    # stage %d: %s\n", s, what);
  for (int v = 0; v < SYNO_NEST_MAX_VARS; v++)
    if (sum >> v & 1)
      syno_strbuf_printf(sb, "    v%d = te.reduce_axis((0, %s), name=\"v%d\")\n", v, codegen_size(&t->z, syno_nest_extent(t->n, v)),
                         v);
  syno_strbuf_printf(sb, "\n    def stage%d(", s);
  var_list(sb, keep);
  syno_strbuf_printf(sb, "):\n        ok = []\n        v = %s\n", reads);
  if (divisor) syno_strbuf_printf(sb, "        v = v / %s\n", divisor);
  syno_strbuf_printf(sb,
                     "        if ok:\n"
                     "            v = tvm.tir.if_then_else(te.all(*ok), v, tvm.tir.const(0.0, \"float32\"))\n");
  if (sum) {
    syno_strbuf_printf(sb, "        return te.sum(v, axis=[");
    var_list(sb, sum);
    syno_strbuf_printf(sb, "])\n\n");
  } else {
    syno_strbuf_printf(sb, "        return v\n\n");
  }
  syno_strbuf_printf(sb, "    y%d = te.compute((", s);
  for (int v = 0; v < SYNO_NEST_MAX_VARS; v++)
    if (keep >> v & 1) syno_strbuf_printf(sb, "%s, ", codegen_size(&t->z, syno_nest_extent(t->n, v)));
  syno_strbuf_printf(sb, "), stage%d, name=\"stage%d\")\n", s, s);
  return t->z.failed ? -1 : 0;
}

static void shape_tuple(syno_strbuf_t *sb, const int64_t *dims, int rank) {
  syno_strbuf_printf(sb, "(");
  for (int i = 0; i < rank; i++) syno_strbuf_printf(sb, "%" PRId64 ", ", dims[i]);
  syno_strbuf_printf(sb, ")");
}

int syno_codegen_tvm(const syno_operator_t *op, int binding, char *buf, size_t n, syno_error_t *err) {
  const syno_vars_t *v = syno_graph_vars(op->g);
  codegen_extents_t x;
  syno_nest_t *nest = codegen_forward_at(op, v, binding, WHO, &x, err);
  if (!nest) return -1;
  int rc = -1;
  char *pro_buf = syno_malloc(BODY_CAP), *body_buf = syno_malloc(BODY_CAP), *reads = syno_malloc(BODY_CAP);
  lower_stages_t *p = syno_malloc(sizeof *p);
  /* The plan with lifted axes (stages.h), on the nest as lowered: the executor and the FLOPs
   * count plan on it with its blocks split (syno_nest_split_blocks), which here would change
   * the output's axes; an axis that needs the split to be lifted stays unlifted. */
  syno_nest_t *run = nest, *xn = syno_malloc(sizeof *xn);
  if (!pro_buf || !body_buf || !reads || !p || !xn) {
    syno_error_set(err, "out of memory");
    goto done;
  }
  const char *reason = NULL;
  if (lower_stages_plan_ex(op, run, v, binding, LOWER_STAGES_LIFT, p, &reason, err)) goto done;
  bool planned = reason == NULL;
  const syno_nest_t *sn = planned ? run : nest; /* what the stages read */
  int16_t var_node[LOWER_STAGES_MAX_VARS];
  syno_access_t input;
  if (planned && p->n_lift > 0) {
    if (lower_stages_nest(p, run, xn, var_node, &input)) {
      syno_error_set(err, WHO ": the nest has no room for the lifted axes");
      goto done;
    }
    sn = xn;
  }

  syno_strbuf_t sb, pro, body;
  syno_strbuf_init(&sb, buf, n);
  syno_strbuf_init(&pro, pro_buf, BODY_CAP);
  syno_strbuf_init(&body, body_buf, BODY_CAP);
  tvm_t t = {.n = sn, .z = {.v = v, .b = binding, .pro = &pro, .who = WHO, .indent = "    ", .te = true, .err = err},
             .err = err};

  /* The primaries: each from the first tensor axis it sizes alone. */
  syno_shape_t shape[SYNO_MAX_TENSORS];
  int from_t[SYNO_MAX_VARS], from_a[SYNO_MAX_VARS];
  unsigned used = codegen_used_primaries(op, nest);
  for (int i = 0; i < SYNO_MAX_VARS; i++) from_t[i] = -1;
  for (int k = 0; k < op->n_tensors; k++) {
    syno_operator_tensor_shape(op, k, &shape[k]);
    for (int a = 0; a < shape[k].rank; a++) {
      int i = codegen_lone_primary(shape[k].dim[a]);
      if (i >= 0 && from_t[i] < 0) from_t[i] = k, from_a[i] = a;
    }
  }
  char name[CODEGEN_NAME_LEN];
  for (int i = 0; i < v->n[SYNO_PRIMARY]; i++) {
    if (!(used >> i & 1)) continue;
    codegen_primary_name(v, i, name, sizeof name);
    if (from_t[i] < 0) {
      syno_strbuf_printf(&pro, "    %s = %" PRId64 "  # no tensor shows it alone: the binding's\n", name,
                         v->bind[binding].p[i]);
      continue;
    }
    syno_size_t c = shape[from_t[i]].dim[from_a[i]];
    c.p[i] = 0;
    int64_t num, den;
    if (syno_size_eval_frac(v, c, binding, &num, &den, err)) goto done;
    char src[16];
    if (from_t[i] == 0)
      snprintf(src, sizeof src, "x");
    else
      snprintf(src, sizeof src, "w%d", from_t[i]);
    if (num == 1 && den == 1)
      syno_strbuf_printf(&pro, "    %s = %s.shape[%d]\n", name, src, from_a[i]);
    else
      syno_strbuf_printf(&pro, "    %s = te.floordiv(%s.shape[%d] * %" PRId64 ", %" PRId64 ")\n", name, src,
                         from_a[i], den, num);
  }

  /* The stages. */
  char divisor[64] = "";
  if (x.div != 1) {
    const char *d = codegen_size(&t.z, nest->divisor);
    if (t.z.failed) goto done;
    int64_t dv;
    bool number = sscanf(d, "%" SCNd64, &dv) == 1;
    snprintf(divisor, sizeof divisor, number ? "%s.0" : "tvm.tir.Cast(\"float32\", %s)", d);
  }
  syno_strbuf_t rs;
  syno_varset_t all = (((syno_varset_t)1 << (nest->n_outer + nest->n_inner)) - 1);
  syno_varset_t outer = ((syno_varset_t)1 << nest->n_outer) - 1;
  int last = 0;
  if (!planned) {
    syno_strbuf_init(&rs, reads, BODY_CAP);
    for (int f = 0; f < nest->n_factors; f++) {
      if (f) syno_strbuf_printf(&rs, " * ");
      if (te_access(&t, &rs, &nest->factor[f])) goto done;
    }
    if (nest->n_factors == 0) syno_strbuf_printf(&rs, "tvm.tir.const(1.0, \"float32\")");
    if (te_stage(&t, &body, 1, outer, all & ~outer, reads, divisor[0] ? divisor : NULL, "every factor at once"))
      goto done;
    last = 1;
  } else {
    syno_varset_t prev = 0;
    for (int s = 0; s < p->n_stages; s++) {
      int w = p->seq[s];
      syno_strbuf_init(&rs, reads, BODY_CAP);
      if (s == 0) {
        if (te_access(&t, &rs, p->n_lift > 0 ? &input : &run->factor[p->factor_of[0]])) goto done;
      } else {
        /* y<s> by its variables; an axis lifted until this stage through the input's index */
        syno_strbuf_printf(&rs, "y%d[", s);
        int k = 0;
        for (int i = 0; i < p->nv + p->n_lift; i++)
          if (prev >> i & 1) {
            if (k++) syno_strbuf_printf(&rs, ", ");
            if (p->n_lift == 0)
              syno_strbuf_printf(&rs, "v%d", i);
            else if (te_expr(&t, &rs, lower_stages_node(p, run, var_node, s, i)))
              goto done;
          }
        syno_strbuf_printf(&rs, "]");
      }
      if (w > 0) {
        syno_strbuf_printf(&rs, " * ");
        if (te_access(&t, &rs, &run->factor[p->factor_of[w]])) goto done;
      }
      char what[64];
      if (w > 0)
        snprintf(what, sizeof what, "%s weight %d", s == 0 ? "the input times" : "contract", w);
      else if (w == LOWER_STAGE_VIEW)
        snprintf(what, sizeof what, "gather the lifted axes into the output");
      else
        snprintf(what, sizeof what, "sum what only the input reads");
      bool final = s == p->n_stages - 1;
      if (te_stage(&t, &body, s + 1, p->result[s], p->part[s] & ~p->result[s], reads,
                   final && divisor[0] ? divisor : NULL, what))
        goto done;
      prev = p->result[s];
    }
    last = p->n_stages;
  }
  syno_strbuf_printf(&body, "    return y%d\n\n\n", last);

  /* The header, the shapes of the binding, forward, and the Relax side. */
  codegen_py_header(&sb, op, binding, nest->outer, nest->n_outer,
                    "# As TVM tensor expressions (forward, one te.compute per stage of its plan) and a\n"
                    "# Relax wrapper. Tensors are float32, row-major: x the input, w1.. the weights.\n",
                    NULL);
  syno_strbuf_printf(&sb,
                     "\nfrom typing import List, Optional, Sequence\n\n"
                     "import numpy as np\n"
                     "import tvm\n"
                     "from tvm import relax, te\n\n");
  syno_strbuf_printf(&sb, "IN_SHAPE = ");
  shape_tuple(&sb, x.shape[0], op->rank[0]);
  syno_strbuf_printf(&sb, "\nOUT_SHAPE = ");
  shape_tuple(&sb, x.out, nest->n_outer);
  syno_strbuf_printf(&sb, "\nWEIGHT_SHAPES = [");
  for (int k = 1; k < op->n_tensors; k++) {
    shape_tuple(&sb, x.shape[k], op->rank[k]);
    syno_strbuf_printf(&sb, ", ");
  }
  syno_strbuf_printf(&sb,
                     "]\n\n\n"
                     "def _pad(a, size, ok):\n"
                     "    \"\"\"Zero padding: the product counts only where 0 <= a < size.\"\"\"\n"
                     "    ok.append(a >= 0)\n"
                     "    ok.append(a < size)\n"
                     "    return a\n\n\n");
  syno_strbuf_printf(&sb, "def forward(x: te.Tensor");
  for (int k = 1; k < op->n_tensors; k++) syno_strbuf_printf(&sb, ", w%d: te.Tensor", k);
  syno_strbuf_printf(&sb,
                     ") -> te.Tensor:\n"
                     "    \"\"\"The operator's output. Every size is read from the tensors' shapes, so the\n"
                     "    same definition serves any shape the operator admits, symbolic ones included.\"\"\"\n");
  if (pro.len >= BODY_CAP || body.len >= BODY_CAP) {
    syno_error_set(err, WHO ": the generated forward is too long");
    goto done;
  }
  syno_strbuf_printf(&sb, "%s%s", pro_buf, body_buf);
  syno_strbuf_printf(&sb,
                     "def weights(seed: int = 0, shapes: Optional[Sequence] = None) -> List[relax.Constant]:\n"
                     "    \"\"\"Weights uniform in +-1/sqrt(fan_in), fan_in = numel / first axis.\"\"\"\n"
                     "    rng = np.random.default_rng(seed)\n"
                     "    out = []\n"
                     "    for shape in WEIGHT_SHAPES if shapes is None else shapes:\n"
                     "        bound = 1.0 / np.sqrt(max(1, int(np.prod(shape[1:]))))\n"
                     "        out.append(relax.const(rng.uniform(-bound, bound, size=shape).astype(\"float32\")))\n"
                     "    return out\n\n\n"
                     "def build(bb: relax.BlockBuilder, x: relax.Expr, *ws: relax.Expr) -> relax.Var:\n"
                     "    \"\"\"Emits the operator into bb's current function; returns its output.\"\"\"\n"
                     "    return bb.emit_te(forward, x, *ws)\n\n\n"
                     "def module(in_shape: Sequence = IN_SHAPE, weight_shapes: Sequence = WEIGHT_SHAPES) -> tvm.IRModule:\n"
                     "    \"\"\"An IRModule whose main(x, w1, ...) computes the operator. The shapes may hold\n"
                     "    tvm.tir.Var dimensions (e.g. a symbolic batch).\"\"\"\n"
                     "    bb = relax.BlockBuilder()\n"
                     "    params = [relax.Var(\"x\", relax.TensorStructInfo(tuple(in_shape), \"float32\"))]\n"
                     "    for t, shape in enumerate(weight_shapes, 1):\n"
                     "        params.append(relax.Var(\"w%%d\" %% t, relax.TensorStructInfo(tuple(shape), \"float32\")))\n"
                     "    with bb.function(\"main\", params):\n"
                     "        with bb.dataflow():\n"
                     "            y = bb.emit_output(build(bb, *params))\n"
                     "        bb.emit_func_output(y)\n"
                     "    return bb.get()\n\n\n"
                     "def run(x: np.ndarray, ws: List[np.ndarray], target: str = \"llvm\") -> np.ndarray:\n"
                     "    \"\"\"Compiles module() for the shapes of x and ws and runs it on the CPU.\"\"\"\n"
                     "    ex = relax.build(module(x.shape, [w.shape for w in ws]), target=target)\n"
                     "    vm = relax.VirtualMachine(ex, tvm.cpu())\n"
                     "    args = [tvm.nd.array(np.ascontiguousarray(a, dtype=\"float32\")) for a in [x] + list(ws)]\n"
                     "    return vm[\"main\"](*args).numpy()\n\n\n"
                     "if __name__ == \"__main__\":\n"
                     "    x = np.random.default_rng(1).standard_normal(IN_SHAPE).astype(\"float32\")\n"
                     "    y = run(x, [w.data.numpy() for w in weights()])\n"
                     "    print(\"output\", y.shape, \"mean |y|\", float(np.abs(y).mean()))\n");
  if (sb.len > (size_t)INT32_MAX) {
    syno_error_set(err, WHO ": the generated text is too long");
    goto done;
  }
  rc = (int)sb.len;
done:
  syno_free(pro_buf);
  syno_free(body_buf);
  syno_free(reads);
  syno_free(p);
  syno_free(xn);
  syno_free(nest);
  return rc;
}
