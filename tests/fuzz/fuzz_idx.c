/* Fuzzes the IDX readers (syno/data.h): syno_data_load_idx, which `syno
 * train --dataset DIR` reaches with a Fashion-MNIST-like directory of the
 * user's, and the image set of `--dataset images` (syno_data_load_images,
 * syno_data_images_shape). The input holds both files: two bytes
 * (little-endian) give the length of the image file, which follows; the
 * label file is the rest. Each is written to a temporary file (gzip or
 * plain) and the pair loaded, then the same pair as both splits of an image
 * set. */
#include <string.h>

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
  syno_dataset_t ds, test;
  syno_error_t err;
  if (syno_data_load_idx(img, lab, 10, &ds, &err) == 0) syno_data_free(&ds);
  static const char *const names[4] = {"train-images.idx", "test-images.idx", "train-labels.idx", "test-labels.idx"};
  for (int i = 0; i < 4; i++)
    if (i < 2 ? fuzz_write(names[i], data + 2, n_img, img, sizeof img)
              : fuzz_write(names[i], data + 2 + n_img, size - 2 - n_img, lab, sizeof lab))
      return 0;
  char *slash = strrchr(img, '/');
  if (!slash) return 0;
  *slash = 0;
  int64_t c, h, w;
  int classes;
  int shape = syno_data_images_shape(img, &c, &h, &w, &classes, &err);
  if (syno_data_load_images(img, &ds, &test, &err) == 0) {
    FUZZ_CHECK(shape == 0 && ds.c == c && ds.h == h && ds.w == w && ds.nclasses == classes && classes >= 2);
    syno_data_free(&ds);
    syno_data_free(&test);
  }
  return 0;
}
