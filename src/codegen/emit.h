/* emit.h - what the code generators share (internal to src/codegen): printing an index
 * expression of a loop nest in a target language. PyTorch, TVM and C differ only in how a
 * loop variable, a number, floor division, the Euclidean remainder and zero padding are
 * spelled, so each emitter describes its spelling once as a dialect and all three print the
 * same trees the same way: the code they generate reads exactly what the interpreter reads. */
#ifndef SYNO_CODEGEN_EMIT_H
#define SYNO_CODEGEN_EMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "syno/error.h"
#include "syno/lower.h"
#include "syno/strbuf.h"

typedef struct {
  const char *who;                /* "codegen c", the prefix of error messages */
  bool letters;                   /* loop variables as einsum letters (outer ones first), else i<k> and r<k> */
  const char *num_pre, *num_post; /* around a size's value or an immediate */
  const char *div, *mod;          /* floor division and Euclidean remainder: "fdiv(" */
  const char *pad, *pad_post;     /* restrict(a, n): pad "a, n" pad_post */
} codegen_dialect_t;

/* Loop variable j of a nest (outer ones first, then the inner ones) as an einsum letter. */
char codegen_letter(int j);

/* Prints node i of nest n, sizes evaluated under binding b. Sets bit j of *used (may be
 * NULL) for every loop variable j it reads (outer first, then inner). */
int codegen_expr(syno_strbuf_t *sb, const syno_nest_t *n, int i, const syno_vars_t *v, int b,
                 const codegen_dialect_t *d, unsigned *used, syno_error_t *err);

/* Prints the flat row-major offset of access a, " + e0 * s0 + e1 * s1 ...", each stride in
 * the dialect's number spelling. */
int codegen_offset(syno_strbuf_t *sb, const syno_nest_t *n, const syno_access_t *a, const syno_vars_t *v, int b,
                   const codegen_dialect_t *d, unsigned *used, syno_error_t *err);

/* The forward nest of op with its extents under binding b of v: every tensor's shape, the
 * output's axes and the divisor. Returns a nest to syno_free, or NULL with err set ("<who>:
 * binding 5 does not exist (the operator has 1)", a size that does not evaluate). */
typedef struct {
  int64_t shape[SYNO_MAX_TENSORS + 1][SYNO_MAX_RANK]; /* tensor t's axes, then the output's */
  int64_t out[SYNO_MAX_RANK];                         /* the output's axes (the nest's outer loops) */
  int64_t div;                                        /* the nest's divisor (a Mean) */
} codegen_extents_t;
syno_nest_t *codegen_forward_at(const syno_operator_t *op, const syno_vars_t *v, int b, const char *who,
                                codegen_extents_t *x, syno_error_t *err);

/* The sizes of one generated Python function, spelled symbolically: each distinct size once,
 * as a number (coefficients are fixed at binding b), a primary's name, or a local defined in
 * `pro` (at `indent`) from the primaries: with Python's // and, unless `te`, a check that
 * raises ValueError naming the size when it is not a whole number; with `te`, te.floordiv
 * (TVM folds it on integers and keeps it on symbolic sizes). */
#define CODEGEN_MAX_SIZES 96
#define CODEGEN_NAME_LEN 40
typedef struct {
  const syno_vars_t *v;
  int b;
  syno_strbuf_t *pro;
  const char *who, *indent;
  bool te;
  int n;
  syno_size_t size[CODEGEN_MAX_SIZES];
  char name[CODEGEN_MAX_SIZES][CODEGEN_NAME_LEN];
  int next_local;
  bool failed;
  syno_error_t *err;
} codegen_sizes_t;

/* The Python name of primary variable i (prefixed "size_" where it would shadow a name the
 * generated code uses). */
void codegen_primary_name(const syno_vars_t *v, int i, char *out, size_t n);
/* The spelling of size a, stored in the table; "?" after an error (z->failed, z->err set). */
const char *codegen_size(codegen_sizes_t *z, syno_size_t a);

/* The primary size s is linear in alone (power 1, no other primary; coefficients allowed), or
 * -1; the primaries (syno_size_primaries) the tensors' shapes and the loop extents of forward
 * nest fwd of op read. */
int codegen_lone_primary(syno_size_t s);
unsigned codegen_used_primaries(const syno_operator_t *op, const syno_nest_t *fwd);

/* The comment lines a Python export (PyTorch, TVM) starts with: the operator, the binding it
 * was exported at, `intro` (further "# " lines, may be ""), its input, output (out_rank sizes
 * out) and weight shapes as sizes, `flops` (a formula, or NULL) and the coefficients fixed. */
void codegen_py_header(syno_strbuf_t *sb, const syno_operator_t *op, int binding, const syno_size_t *out, int out_rank,
                       const char *intro, const char *flops);

#endif
