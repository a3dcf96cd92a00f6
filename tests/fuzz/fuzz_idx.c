/* Fuzzes the IDX reader (syno_data_load_idx, syno/data.h), which `syno
 * train --dataset DIR` reaches with a Fashion-MNIST-like directory of the
 * user's. The input holds both files: two bytes (little-endian) give the
 * length of the image file, which follows; the label file is the rest. Each
 * is written to a temporary file (gzip or plain) and the pair loaded. */
#include "fuzz.h"
#include "syno/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2 || size > 65536) return 0;
  size_t n_img = (size_t)data[0] | (size_t)data[1] << 8;
  if (n_img > size - 2) n_img = size - 2;
  char img[1024], lab[1024];
  if (fuzz_write("images-idx3-ubyte", data + 2, n_img, img, sizeof img) ||
      fuzz_write("labels-idx1-ubyte", data + 2 + n_img, size - 2 - n_img, lab, sizeof lab))
    return 0;
  syno_dataset_t ds;
  syno_error_t err;
  if (syno_data_load_idx(img, lab, 10, &ds, &err) == 0) syno_data_free(&ds);
  return 0;
}
