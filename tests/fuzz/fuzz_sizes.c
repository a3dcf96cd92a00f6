/* Fuzzes the size layer's parsers (syno/size.h): variable declarations,
 * bindings, sizes and shapes, as `--vars`, `--bind`, `--input` and
 * `--output` and a spec's "vars", "bind", "input" and "output" reach them.
 *
 * Input: four lines, DECL \n BINDINGS \n SIZE \n SHAPE, the bindings
 * separated by '|'. The names of SIZE and SHAPE are declared implicitly
 * (syno_vars_scan) as a spec's shapes are. A size or shape that parses must
 * print to text that parses back to itself. */
#include <stdlib.h>

#include "fuzz.h"
#include "syno/size.h"

static void evaluate(const syno_vars_t *v, syno_size_t s) {
  syno_error_t err;
  for (int b = 0; b < v->nbind; b++) {
    int64_t num, den, x;
    syno_size_eval_frac(v, s, b, &num, &den, &err);
    syno_size_eval(v, s, b, &x, &err);
    (void)syno_size_value(v, s, b);
  }
  (void)syno_size_lower_bound(v, s);
  (void)syno_size_upper_bound(v, s);
  (void)syno_size_is_integral(v, s);
  (void)syno_size_is_legal(v, s);
  (void)syno_size_trait(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  char *text = fuzz_cstr(data, size);
  if (!text) return 0;
  char *line[4], *bind[SYNO_MAX_BINDINGS + 1];
  fuzz_split(text, '\n', line, 4);
  syno_vars_t v;
  syno_error_t err;
  syno_vars_init(&v);
  syno_vars_declare(&v, line[0], &err);
  syno_vars_scan(&v, line[2], &err);
  syno_vars_scan(&v, line[3], &err);
  int nb = fuzz_split(line[1], '|', bind, SYNO_MAX_BINDINGS + 1);
  for (int i = 0; i < nb; i++) syno_vars_bind(&v, bind[i], &err);
  for (int b = 0; b < v.nbind; b++) {
    char buf[1024];
    syno_vars_print_binding(&v, b, buf, sizeof buf);
  }

  char printed[2048];
  syno_size_t s, back;
  if (syno_size_parse(&v, line[2], &s, &err) == 0) {
    int n = syno_size_print(&v, s, printed, sizeof printed);
    FUZZ_CHECK(n > 0 && (size_t)n < sizeof printed);
    FUZZ_CHECK(syno_size_parse(&v, printed, &back, &err) == 0 && syno_size_eq(s, back));
    evaluate(&v, s);
  }
  syno_shape_t sh, sh_back;
  if (syno_shape_parse(&v, line[3], &sh, &err) == 0) {
    int n = syno_shape_print(&v, &sh, printed, sizeof printed);
    FUZZ_CHECK(n > 0 && (size_t)n < sizeof printed);
    FUZZ_CHECK(syno_shape_parse(&v, printed, &sh_back, &err) == 0 && sh_back.rank == sh.rank);
    for (int i = 0; i < sh.rank; i++)
      FUZZ_CHECK(syno_size_eq(sh.dim[i], sh_back.dim[i]) && sh.unordered[i] == sh_back.unordered[i]);
    evaluate(&v, syno_shape_numel(&sh));
  }
  free(text);
  return 0;
}
