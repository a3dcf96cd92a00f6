/* Fuzzes the digits CSV reader (syno_data_load_digits, syno/data.h), which
 * `syno train --dataset PATH` reaches with a file of the user's: the input
 * is written to a temporary file (plain or, when it starts with the gzip
 * magic, gzip: zlib reads both) and loaded; a loaded set is split as
 * syno_data_load_digits_split splits it. */
#include "fuzz.h"
#include "syno/data.h"
#include "syno/rng.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 65536) return 0;
  char path[1024];
  syno_dataset_t all, train, test;
  syno_error_t err;
  if (fuzz_write("digits.csv", data, size, path, sizeof path)) return 0;
  if (syno_data_load_digits(path, &all, &err) == 0) {
    syno_rng_t rng;
    syno_rng_seed(&rng, SYNO_DIGITS_SPLIT_SEED, 0);
    if (syno_data_split(&all, all.n / 4, &rng, &train, &test, &err) == 0) {
      syno_data_free(&train);
      syno_data_free(&test);
    }
    syno_data_free(&all);
  }
  return 0;
}
