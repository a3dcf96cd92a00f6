/* Graphviz drawing of an operator: data flows top (tensors) to bottom
 * (output iterators and reductions). Every dim is one edge, labelled with
 * its size; every primitive is one node. A dim's upper end is the tensor it
 * is an axis of, or the primitive that has it among its outputs (an Expand
 * has no inputs, so broadcast dims start there); its lower end is the
 * primitive it is an input of, an output iterator, or a reduction. */
#include <stdio.h>
#include <string.h>

#include "syno/codegen.h"
#include "syno/strbuf.h"

static void size_label(const syno_operator_t *op, syno_dim_t d, char *buf, size_t n) {
  const syno_dimension_t *dim = syno_graph_dim(op->g, d);
  syno_size_print(syno_graph_vars(op->g), dim->size, buf, n);
}

static const char *tensor_name(int t, char *buf, size_t n) {
  if (t == 0)
    snprintf(buf, n, "in");
  else
    snprintf(buf, n, "w%d", t);
  return buf;
}

int syno_codegen_dot(const syno_operator_t *op, char *buf, size_t n, syno_error_t *err) {
  if (!op || !op->g) return syno_error_set(err, "dot: no operator");
  syno_strbuf_t b;
  syno_strbuf_init(&b, buf, n);
  char lab[128], nm[16];
  syno_strbuf_printf(&b,
                     "digraph operator {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=11];\n"
                     "  edge [fontname=\"Helvetica\", fontsize=10];\n");
  /* Tensors at the top, one record per tensor with one port per axis. */
  syno_strbuf_printf(&b, "  { rank=source;\n");
  for (int t = 0; t < op->n_tensors; t++) {
    syno_strbuf_printf(&b, "    t%d [shape=record, style=filled, fillcolor=\"%s\", label=\"{%s|{", t,
                       t == 0 ? "#cfe2ff" : "#ffe5b4", tensor_name(t, nm, sizeof nm));
    for (int a = 0; a < op->rank[t]; a++) {
      size_label(op, op->axes[t][a], lab, sizeof lab);
      syno_strbuf_printf(&b, "%s<a%d> %s", a ? "|" : "", a, lab);
    }
    syno_strbuf_printf(&b, "}}\"];\n");
  }
  syno_strbuf_printf(&b, "  }\n");
  /* Primitives. */
  for (int i = 0; i < op->n_prims; i++) {
    const syno_prim_t *p = syno_graph_prim(op->g, op->prims[i]);
    char extra[160] = "";
    if (p->kind == SYNO_PRIM_MERGE || p->kind == SYNO_PRIM_STRIDE) {
      syno_size_print(syno_graph_vars(op->g), p->param, lab, sizeof lab);
      snprintf(extra, sizeof extra, "\\n%s", lab);
    } else if (p->kind == SYNO_PRIM_SHARE) {
      snprintf(extra, sizeof extra, "\\nw%d", p->weight);
    }
    syno_strbuf_printf(&b, "  p%u [shape=ellipse, label=\"%s%s\"];\n", op->prims[i], syno_prim_name(p->kind), extra);
  }
  /* Outputs and reductions at the bottom. */
  syno_strbuf_printf(&b, "  { rank=sink;\n");
  for (int k = 0; k < op->n_out; k++) {
    size_label(op, op->out[k], lab, sizeof lab);
    syno_strbuf_printf(&b, "    o%d [shape=box, style=filled, fillcolor=\"#d4edda\", label=\"out i%d\\n%s\"];\n", k, k,
                       lab);
  }
  for (int r = 0; r < op->n_red; r++) {
    const syno_dimension_t *d = syno_graph_dim(op->g, op->red[r]);
    size_label(op, op->red[r], lab, sizeof lab);
    syno_strbuf_printf(&b, "    r%d [shape=invtriangle, style=filled, fillcolor=\"#f8d7da\", label=\"r%d %s\\n%s\"];\n",
                       r, r, d->reduce == SYNO_REDUCE_MEAN ? "mean" : "sum", lab);
  }
  syno_strbuf_printf(&b, "  }\n");
  /* Edges: one per dim. */
  for (int i = 0; i < op->n_dims; i++) {
    syno_dim_t d = op->dims[i];
    const syno_dimension_t *dim = syno_graph_dim(op->g, d);
    char from[32] = "", to[32] = "";
    for (int t = 0; t < op->n_tensors && !from[0]; t++)
      for (int a = 0; a < op->rank[t]; a++)
        if (op->axes[t][a] == d) {
          snprintf(from, sizeof from, "t%d:a%d", t, a);
          break;
        }
    for (int j = 0; j < op->n_prims && !from[0]; j++) {
      const syno_prim_t *p = syno_graph_prim(op->g, op->prims[j]);
      for (int o = 0; o < p->n_out; o++)
        if (p->out[o] == d) snprintf(from, sizeof from, "p%u", op->prims[j]);
    }
    for (int e = 0; e < op->n_exp && !from[0]; e++)
      if (op->exp[e] == d) {
        snprintf(from, sizeof from, "x%d", e);
        syno_strbuf_printf(&b, "  x%d [shape=ellipse, style=dashed, label=\"Expand\"];\n", e);
      }
    if (dim->kind == SYNO_DIM_PRIM_INPUT)
      snprintf(to, sizeof to, "p%u", dim->prim);
    else if (dim->kind == SYNO_DIM_ITERATOR)
      snprintf(to, sizeof to, "o%d", dim->index);
    else
      for (int r = 0; r < op->n_red; r++)
        if (op->red[r] == d) snprintf(to, sizeof to, "r%d", r);
    if (!from[0] || !to[0]) return syno_error_set(err, "dot: dim %u has no %s end", d, from[0] ? "lower" : "upper");
    size_label(op, d, lab, sizeof lab);
    syno_strbuf_printf(&b, "  %s -> %s [label=\" %s\"];\n", from, to, lab);
  }
  syno_strbuf_printf(&b, "}\n");
  return (int)b.len;
}
