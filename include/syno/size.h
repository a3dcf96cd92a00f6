/* syno/size.h - symbolic sizes, variables and concrete bindings.
 *
 * A size is a monomial over two families of variables (docs/semantics.md §1):
 * primary variables (large extents: N, C_in, H, W ...) whose powers must stay
 * >= 0 in a legal size, and coefficient variables (small factors: k, s, g ...)
 * whose powers may be negative. There are no numeric constants; the only
 * literal is `1`, the empty monomial. A size is a plain 16-byte value.
 *
 * A syno_vars_t is the variable table: at most 8 primary and 8 coefficient
 * variables, each with an occurrence limit (how often the search may use it)
 * and an optional default value, plus a list of concrete bindings - one per
 * operator slot in a network - under which every size is evaluated. One
 * symbolic operator must be valid under all bindings at once, so every
 * predicate here is "for all bindings" or a min/max over them.
 *
 * Invariant: variables are kept sorted by name (ASCII, so uppercase first)
 * within each family; sizes store powers by that index. Declare every
 * variable before creating sizes: declaring a new one re-indexes the family.
 * Names are treated by their first character when declared implicitly
 * (syno_vars_scan): an uppercase initial is primary, anything else a
 * coefficient. */
#ifndef SYNO_SIZE_H
#define SYNO_SIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "syno/error.h"
#include "syno/lex.h"

#define SYNO_MAX_VARS 8
#define SYNO_MAX_BINDINGS 32
#define SYNO_MAX_RANK 8
#define SYNO_VAR_NAME_LEN 24
#define SYNO_DEFAULT_MAX_OCCURRENCE 3

typedef enum { SYNO_PRIMARY = 0, SYNO_COEFF = 1 } syno_var_kind_t;

typedef struct {
  int8_t p[SYNO_MAX_VARS]; /* powers of the primary variables */
  int8_t c[SYNO_MAX_VARS]; /* powers of the coefficient variables */
} syno_size_t;

typedef struct {
  char name[SYNO_VAR_NAME_LEN];
  int max_occurrence;    /* the ":N" of a declaration; default 3 */
  int64_t default_value; /* the "=V" of a declaration; 0 when none */
} syno_var_t;

typedef struct {
  int64_t p[SYNO_MAX_VARS];
  int64_t c[SYNO_MAX_VARS];
} syno_binding_t;

typedef struct {
  int n[2];                         /* counts, indexed by syno_var_kind_t */
  syno_var_t var[2][SYNO_MAX_VARS]; /* sorted by name within each kind */
  int nbind;
  syno_binding_t bind[SYNO_MAX_BINDINGS];
} syno_vars_t;

/* What kind of quantity a size is (docs/semantics.md §1.2). */
typedef enum {
  SYNO_TRAIT_INVALID = 0,         /* some primary power < 0 */
  SYNO_TRAIT_ONE,                 /* every power 0 */
  SYNO_TRAIT_COEFFICIENT,         /* no primary, coefficients >= 0, not all 0 */
  SYNO_TRAIT_ILLEGAL_COEFFICIENT, /* no primary, some coefficient < 0 */
  SYNO_TRAIT_GENERAL              /* some primary power > 0 */
} syno_trait_t;

/* --- the variable table --- */

void syno_vars_init(syno_vars_t *v);

/* Adds one variable. Fails on a duplicate name, a full family, a bad name,
 * or an existing binding (bindings are made after all declarations). */
int syno_vars_add(syno_vars_t *v, syno_var_kind_t kind, const char *name, int max_occurrence, int64_t default_value,
                  syno_error_t *err);

/* Parses a declaration list: primary specs, then optionally ';' and
 * coefficient specs, each spec `NAME`, `NAME=VALUE`, `NAME: MAXOCC`,
 * `NAME=VALUE: MAXOCC`, or a bare `VALUE` (an anonymous variable named x_<i>
 * or c_<i>). Example: "N: 0, C_in, C_out, H: 2, W: 2; k=3: 4, s=2: 2".
 * Declaring a name twice is an error. */
int syno_vars_declare(syno_vars_t *v, const char *decl, syno_error_t *err);

/* Declares, with default metadata, every variable name mentioned in `text`
 * (a shape, a size or an operator text) that is not declared yet. Names
 * followed by '(' or '[', names after ':' (attributes), and the loop names
 * i<digits> / r<digits> are not variables. */
int syno_vars_scan(syno_vars_t *v, const char *text, syno_error_t *err);

/* Finds a variable by name; returns 0 and sets kind/index, or -1. */
int syno_vars_find(const syno_vars_t *v, const char *name, syno_var_kind_t *kind, int *index);

/* Appends one concrete binding from "NAME=VALUE,NAME=VALUE,...". Variables not
 * mentioned take their default value; one with neither is an error naming it.
 * Values must be >= 1. */
int syno_vars_bind(syno_vars_t *v, const char *assign, syno_error_t *err);

/* Prints binding b as "N=2, C_in=4, ..." into buf. */
void syno_vars_print_binding(const syno_vars_t *v, int b, char *buf, size_t n);

/* --- sizes --- */

syno_size_t syno_size_one(void);
syno_size_t syno_size_var(syno_var_kind_t kind, int index);
syno_size_t syno_size_mul(syno_size_t a, syno_size_t b);
syno_size_t syno_size_div(syno_size_t a, syno_size_t b);
syno_size_t syno_size_pow(syno_size_t a, int power);
bool syno_size_eq(syno_size_t a, syno_size_t b);
bool syno_size_is_one(syno_size_t a);
/* Lexicographic order: primary powers in index order, then coefficients. */
int syno_size_cmp(syno_size_t a, syno_size_t b);
uint64_t syno_size_hash(syno_size_t a);

syno_trait_t syno_size_trait(syno_size_t a);
/* Sum of |power| over all variables; number of variables with power != 0. */
int syno_size_total_power(syno_size_t a);
int syno_size_num_vars(syno_size_t a);
/* Which primary variables the size reads: bit i for a nonzero power of primary i. */
unsigned syno_size_primaries(syno_size_t a);

/* Exact value under binding b as a reduced fraction num/den (den > 0).
 * Fails on int64 overflow or an unknown binding index. */
int syno_size_eval_frac(const syno_vars_t *v, syno_size_t a, int b, int64_t *num, int64_t *den, syno_error_t *err);
/* Integer value under binding b; fails (naming the size) if it is not an
 * integer there. */
int syno_size_eval(const syno_vars_t *v, syno_size_t a, int b, int64_t *out, syno_error_t *err);
/* Value as a double (for bounds); NAN for an unknown binding or variable. */
double syno_size_value(const syno_vars_t *v, syno_size_t a, int b);
/* Min and max of the value over all bindings (both 0 when there are none). */
double syno_size_lower_bound(const syno_vars_t *v, syno_size_t a);
double syno_size_upper_bound(const syno_vars_t *v, syno_size_t a);
/* True when the size is an integer under every binding. */
bool syno_size_is_integral(const syno_vars_t *v, syno_size_t a);
/* Legal to sample (docs/semantics.md §1.2): trait General or Coefficient and lower bound >= 1. */
bool syno_size_is_legal(const syno_vars_t *v, syno_size_t a);

/* Canonical text: coefficient factors first, then primaries, joined by '*',
 * each `name` or `name^p`; the empty product is `1`. Returns the length that
 * would have been written (like snprintf). */
int syno_size_print(const syno_vars_t *v, syno_size_t a, char *buf, size_t n);

/* Parses `ID ('^' INT)? ('*' ID ('^' INT)?)* | '1'` (also accepts '/' between
 * factors as a negative power). `len` bytes of `text` are parsed; errors name
 * the token and its column (1-based, counted from `text` plus `col0`). */
int syno_size_parse_n(const syno_vars_t *v, const char *text, size_t len, int col0, syno_size_t *out,
                      syno_error_t *err);
int syno_size_parse(const syno_vars_t *v, const char *text, syno_size_t *out, syno_error_t *err);
/* Parses one size at the lexer's current token and leaves the lexer after it,
 * for formats that embed sizes (the operator text form). */
int syno_size_parse_lex(const syno_vars_t *v, syno_lex_t *lx, syno_size_t *out, syno_error_t *err);

/* --- shapes --- */

typedef struct {
  int rank;
  syno_size_t dim[SYNO_MAX_RANK];
  bool unordered[SYNO_MAX_RANK];
} syno_shape_t;

/* Parses "[N, C_in: unordered, H, W]". */
int syno_shape_parse(const syno_vars_t *v, const char *text, syno_shape_t *out, syno_error_t *err);
int syno_shape_print(const syno_vars_t *v, const syno_shape_t *s, char *buf, size_t n);
/* Product of the dims. */
syno_size_t syno_shape_numel(const syno_shape_t *s);

#endif
