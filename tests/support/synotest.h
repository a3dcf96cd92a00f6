/* Helpers shared by the tests: building operators from text, random data,
 * error measures. Every helper fails the running cmocka test on error. */
#ifndef SYNOTEST_H
#define SYNOTEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "syno/graph.h"
#include "syno/lower.h"
#include "syno/train.h"

typedef struct {
  syno_vars_t vars;
  syno_shape_t input, output;
  syno_graph_t *g;
  syno_operator_t op;
} st_op_t;

/* Declares vars, scans the strings for the rest, binds each of the
 * NULL-terminated binds, parses shapes and the operator. */
void st_op_make(st_op_t *o, const char *vars, const char *input, const char *output, const char *text,
                const char *const *binds);
/* A builtin under one binding ("" for its defaults). */
void st_op_builtin(st_op_t *o, const char *name, const char *bind);
void st_op_free(st_op_t *o);
/* A small binding of a builtin, for tests that run generated code ("" for its defaults). */
const char *st_builtin_small_binding(const char *name);

float *st_random(syno_rng_t *rng, int64_t n);
/* max |a - b| / max |b| (or the absolute error when b is all zero). */
double st_rel_err(const float *a, const float *b, int64_t n);

/* Runs the operator forward under binding b into a fresh buffer. */
float *st_forward(const st_op_t *o, const syno_nest_t *fwd, int b, float *const *tensors);

/* Checks d(sum(out * gout))/d(tensor t) from the backward nest against
 * central finite differences on `probes` random elements (all when
 * probes <= 0); fails the test when the relative error exceeds tol. */
void st_check_gradient(const st_op_t *o, const syno_lowered_t *low, int b, float *const *tensors, int t, int probes,
                       double tol, syno_rng_t *rng);

/* Draws up to n operators from the space that spec_json describes, by seeded random walks
 * (seed), calling each(space, node, final, user) for every one; stops early when the space
 * is exhausted. Returns how many were drawn. */
struct syno_space;
/* The contract every binding emitter of syno/codegen.h keeps, on the builtin linear: binding
 * `bad` does not exist (err names it), and a 64-byte buffer gets a truncated, NUL-terminated
 * text while the full length is returned. */
typedef int (*st_emitter_t)(const syno_operator_t *op, int binding, char *buf, size_t n, syno_error_t *err);
void st_check_emitter_bindings(st_emitter_t emit, int bad);

/* Raw float32 files, for exchanging tensors with another process (python3 in the codegen
 * tests). st_read_floats fails the test unless the file holds exactly n floats. */
void st_write_floats(const char *path, const float *x, int64_t n);
float *st_read_floats(const char *path, int64_t n);

/* The first python interpreter that can `import <modules>` ("torch, numpy"): $SYNO_PYTHON,
 * then python3 on PATH, then /usr/bin/python3 (Debian's packages live there while a pyenv
 * python3 may come first on PATH). NULL when none can. */
const char *st_find_python(const char *modules);

int st_sample(const char *spec_json, uint64_t seed, int n,
              void (*each)(struct syno_space *s, uint32_t node, uint32_t final, void *user), void *user);

/* n distinct operators (by text) of the space `spec_json`, from rounds of random walks with
 * seeds seed, seed+1, ... (at most 20 rounds); each is passed to `each`. Returns how many
 * were passed; *drawn (may be NULL) gets how many walks finalized. */
/* Appends to v (a copy of op's variables, binding 0 the exported one) up to two bindings where
 * they exist: another batch (N + d), another size of the first other primary the input alone
 * gives (a spatial size, a sequence length), each the smallest step d in 1..12 under which
 * every dimension of op's graph and every size of its forward nest fwd is whole and the
 * weights keep binding 0's shapes: the sizes a module read from its input may take. */
void st_other_bindings(const syno_operator_t *op, const syno_nest_t *fwd, syno_vars_t *v);

/* The inputs of an exported module's check at every binding b of v (binding 0 the exported
 * one): appends "b in-dims / out-dims" to DIR/shapes, writes a random input DIR/x<b> and, at
 * binding 0 only (they keep their shapes), the weights DIR/t<t>, and calls each with that
 * binding's tensors (the input, then the weights), their element counts and the output's. */
typedef void (*st_binding_fn)(int b, float *const *tensors, const int64_t *numel, int64_t n_out, void *user);
void st_write_bindings(const syno_operator_t *op, const syno_nest_t *fwd, const syno_vars_t *v, const char *dir,
                       syno_rng_t *rng, st_binding_fn each, void *user);

int st_sample_distinct(const char *spec_json, uint64_t seed, int n, void (*each)(const syno_operator_t *op, void *user),
                       void *user, int *drawn);

#endif
