/* Fuzzes the text corpus reader (syno_text_load, syno/data.h), which `syno
 * train --backbone gpt --dataset PATH` reaches with a file of the user's: the
 * input is written to a temporary file (gzip or plain) and loaded, and a
 * loaded text's windows counted. */
#include "fuzz.h"
#include "syno/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
  char path[1024];
  syno_text_t train, val;
  syno_error_t err;
  if (fuzz_write("corpus.txt", data, size, path, sizeof path)) return 0;
  if (syno_text_load(path, &train, &val, &err) == 0) {
    for (int64_t context = 1; context <= 64; context *= 4) {
      (void)syno_text_windows(&train, context);
      (void)syno_text_windows(&val, context);
    }
    syno_text_free(&train);
    syno_text_free(&val);
  }
  return 0;
}
