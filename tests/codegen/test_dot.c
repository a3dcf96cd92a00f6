/* The Graphviz drawing: every builtin operator gives text that `dot`
 * accepts, with one edge per dim and a node per primitive. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "syno/codegen.h"
#include "synotest.h"

static int have_dot(void) { return system("command -v dot >/dev/null 2>&1") == 0; }

static int count(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

static void test_builtins(void **state) {
  (void)state;
  int dot = have_dot();
  if (!dot) printf("skipping dot -Tsvg checks: graphviz not installed\n");
  for (int i = 0; syno_builtin_at(i); i++) {
    const syno_builtin_t *bi = syno_builtin_at(i);
    st_op_t o;
    st_op_builtin(&o, bi->name, "");
    syno_error_t err;
    int len = syno_codegen_dot(&o.op, NULL, 0, &err);
    if (len < 0) fail_msg("%s: %s", bi->name, err.msg);
    char *text = malloc((size_t)len + 1);
    assert_int_equal(syno_codegen_dot(&o.op, text, (size_t)len + 1, &err), len);
    assert_int_equal((int)strlen(text), len);
    assert_int_equal(count(text, " -> "), o.op.n_dims);
    assert_int_equal(count(text, "shape=ellipse"), o.op.n_prims + o.op.n_exp);
    assert_int_equal(count(text, "shape=record"), o.op.n_tensors);
    if (dot) {
      char path[] = "/tmp/syno-dot-XXXXXX";
      int fd = mkstemp(path);
      assert_true(fd >= 0);
      FILE *f = fdopen(fd, "w");
      fputs(text, f);
      fclose(f);
      char cmd[128];
      snprintf(cmd, sizeof cmd, "dot -Tsvg '%s' -o /dev/null", path);
      int rc = system(cmd);
      unlink(path);
      if (rc != 0) fail_msg("%s: dot rejected the drawing:\n%s", bi->name, text);
    }
    free(text);
    st_op_free(&o);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_builtins)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
