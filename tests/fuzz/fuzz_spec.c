/* Fuzzes the search-spec reader (syno_space_spec_from_json, syno/space.h),
 * as `syno sample/space/search --spec FILE` and a results database's "spec"
 * reach it. A spec that is accepted must make a space: the space is created,
 * its root's children generated once, and freed. */
#include <stdlib.h>

#include "fuzz.h"
#include "syno/space.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 16384) return 0;
  char *json = fuzz_cstr(data, size);
  if (!json) return 0;
  syno_space_spec_t spec;
  syno_error_t err;
  if (syno_space_spec_from_json(json, &spec, &err) == 0) {
    syno_space_t *s;
    if (syno_space_new(&spec, &s, &err) == 0) {
      const syno_step_t *steps;
      syno_node_children(s, syno_space_root(s), &steps, &err);
      syno_space_free(s);
    }
  }
  free(json);
  return 0;
}
