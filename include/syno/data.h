/*
 * syno/data.h — labelled image data sets for training candidate networks.
 *
 * The UCI optical digits (1,797 8x8 images, committed as data/digits.csv.gz so syno trains
 * on a fresh machine with no package), Fashion-MNIST (Debian's dataset-fashion-mnist, IDX
 * files under SYNO_FASHION_MNIST_DIR), the CIFAR binary versions, and a user's own image set
 * of any shape in IDX files (syno_data_load_images). Files are read
 * through zlib, so both gzip-compressed and plain files work. Every reader validates what it
 * reads (field counts and value ranges, IDX magic numbers, sizes, truncation, trailing bytes)
 * and reports a problem as a status -1 plus a syno_error_t naming the path and what was
 * expected; nothing aborts on a bad file.
 *
 * A data set owns its pixels and labels; syno_data_free releases them. Pixels are stored as
 * bytes (Fashion-MNIST train is 47 MB that way, 188 MB as floats) and normalised on the way
 * out by syno_data_gather: value = pixel * scale + shift, with the per-set constants below.
 * Splits and subsets are stratified and seeded, so they are reproducible and keep the class
 * balance.
 */
#ifndef SYNO_DATA_H
#define SYNO_DATA_H

#include <stdint.h>

#include "syno/error.h"
#include "syno/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SYNO_DATA_MAX_CHANNELS 4

typedef struct syno_dataset {
  uint8_t *pixels; /* [n, c, h, w], owned */
  int32_t *labels; /* [n], owned, in [0, nclasses) */
  int64_t n, c, h, w; /* c <= SYNO_DATA_MAX_CHANNELS */
  int nclasses;
  float scale[SYNO_DATA_MAX_CHANNELS], shift[SYNO_DATA_MAX_CHANNELS]; /* per channel, applied by syno_data_gather */
  char name[32];
} syno_dataset_t;

/* Digits pixels are 0..16; they are mapped to v/16 and standardised with the mean and
 * standard deviation of v/16 over all 1,797 samples. */
#define SYNO_DIGITS_MEAN 0.30526
#define SYNO_DIGITS_STD 0.37605
/* The held-out split used by syno for digits: 300 test samples, stratified, this seed. */
#define SYNO_DIGITS_TEST_SIZE 300
#define SYNO_DIGITS_SPLIT_SEED 20240501u

/* Fashion-MNIST pixels 0..255 map to v/255 standardised with the training set's mean/std
 * (computed over all 60,000 x 784 training pixels). */
#define SYNO_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#define SYNO_FASHION_MNIST_MEAN 0.28604
#define SYNO_FASHION_MNIST_STD 0.35302

/* Reads the UCI digits CSV (gzip or plain): one sample per line, 64 integers 0..16 (an 8x8
 * image, row-major) then the label 0..9. Gives a [n, 1, 8, 8] set with 10 classes. */
int syno_data_load_digits(const char *path, syno_dataset_t *out, syno_error_t *err);

/* Loads digits from path and splits it into the standard train (1,497) and test (300) sets:
 * syno_data_split with SYNO_DIGITS_TEST_SIZE and a PCG32 seeded with SYNO_DIGITS_SPLIT_SEED. */
int syno_data_load_digits_split(const char *path, syno_dataset_t *train, syno_dataset_t *test, syno_error_t *err);

/* Reads an IDX image file (magic 0x00000803, uint8 [n, rows, cols]) and its IDX label file
 * (magic 0x00000801, uint8 [n]) into a [n, 1, rows, cols] set; labels must be < nclasses. */
int syno_data_load_idx(const char *images_path, const char *labels_path, int nclasses, syno_dataset_t *out,
                       syno_error_t *err);

/* A labelled image set of any size and channel count (docs/train.md, "Data sets"): four IDX
 * files in dir, each plain or gzip-compressed (NAME.idx or NAME.idx.gz, not both):
 *   train-images.idx  magic 0x00000804, uint8 [n, c, h, w] (or 0x00000803, [n, h, w]: c = 1)
 *   train-labels.idx  magic 0x00000801, uint8 [n]
 *   test-images.idx, test-labels.idx  the same, the images of the training set's c, h, w.
 * Dimensions are big-endian uint32 after the magic, the payload row-major right after them.
 * 1 <= c <= SYNO_DATA_MAX_CHANNELS, 1 <= h, w <= SYNO_DATA_MAX_SIDE (h need not equal w),
 * n >= 1; the classes are 0 .. the largest label of both splits, at least two. Both splits
 * are normalised per channel with the mean and standard deviation of the training images'
 * v/255. */
#define SYNO_DATA_MAX_SIDE 4096
int syno_data_load_images(const char *dir, syno_dataset_t *train, syno_dataset_t *test, syno_error_t *err);

/* The shape of dir's image set without its pixels: the headers of all four files (checked as
 * syno_data_load_images checks them) and the labels, for the class count. */
int syno_data_images_shape(const char *dir, int64_t *c, int64_t *h, int64_t *w, int *classes, syno_error_t *err);

/* Fashion-MNIST from dir (NULL means SYNO_FASHION_MNIST_DIR): the training split
 * (train-*-ubyte.gz, 60,000 images) when train is non-zero, else the test split (t10k-*,
 * 10,000). Images must be 28x28. */
int syno_data_load_fashion_mnist(const char *dir, int train, syno_dataset_t *out, syno_error_t *err);

/* CIFAR-10 and CIFAR-100 in their binary versions (https://www.cs.toronto.edu/~kriz/cifar.html):
 * a record is the label byte (CIFAR-100: the coarse label byte, then the fine one) and
 * 3072 pixel bytes, the red, green and blue 32x32 planes row-major. CIFAR-10 reads
 * dir/data_batch_1.bin .. data_batch_5.bin (train) or dir/test_batch.bin; CIFAR-100
 * dir/train.bin or dir/test.bin, with its 100 fine labels or (coarse) its 20 superclasses.
 * Files may be gzip-compressed under the same names. Gives a [n, 3, 32, 32] set normalised
 * per channel with the published training-set means and standard deviations of v/255. */
typedef enum { SYNO_CIFAR10 = 0, SYNO_CIFAR100 = 1, SYNO_CIFAR100_COARSE = 2 } syno_cifar_t;
int syno_data_load_cifar(const char *dir, syno_cifar_t which, int train, syno_dataset_t *out, syno_error_t *err);

/* Stratified split: test receives n_test samples, each class contributing in proportion to
 * its size (largest-remainder rounding, ties to the lower class), chosen uniformly with rng;
 * train receives the rest. Both keep the source order. */
int syno_data_split(const syno_dataset_t *src, int64_t n_test, syno_rng_t *rng, syno_dataset_t *train,
                    syno_dataset_t *test, syno_error_t *err);

/* Zero-pads every image by `pad` pixels on each side, in place (h and w grow by 2 * pad);
 * pixel 0 is the background of both data sets. pad 0 does nothing. */
int syno_data_pad(syno_dataset_t *ds, int pad, syno_error_t *err);

/* A stratified random subset of n samples (the "test" half of syno_data_split). */
int syno_data_subset(const syno_dataset_t *src, int64_t n, syno_rng_t *rng, syno_dataset_t *out, syno_error_t *err);

/* Copies the samples idx[0..n) into x (resized to [n, c, h, w], normalised) and their labels
 * into labels (which may be NULL). Returns a syno_nn_status. */
int syno_data_gather(const syno_dataset_t *ds, const int64_t *idx, int64_t n, syno_tensor_t *x, int32_t *labels);

/* The usual augmentation of a batch of normalised images x [n, c, h, w], in place: each
 * image shifted by a random offset in [-pad, pad] along both sides (a random crop of the
 * image zero-padded by pad; the vacated pixels 0, the data set's mean after normalisation)
 * and, when flip, mirrored left to right with probability 1/2. Returns a syno_nn_status. */
int syno_data_augment(syno_tensor_t *x, int pad, int flip, syno_rng_t *rng);
/* Number of samples per class into counts[0..nclasses). */
void syno_data_class_counts(const syno_dataset_t *ds, int64_t *counts);

void syno_data_free(syno_dataset_t *ds);

/* ---------------------------------------------------------------- character-level text */

/* A text as a sequence of character ids. The vocabulary is every byte value that occurs in
 * the whole file (both splits), in increasing byte order: id i is byte chars[i]. A text
 * owns its ids. */
typedef struct syno_text {
  uint8_t *ids; /* [n], owned, each < vocab */
  int64_t n;
  int vocab;
  unsigned char chars[256];
  char name[32];
} syno_text_t;

/* The King James Version of Genesis and Exodus, committed as data/kjv.txt.gz (see
 * data/README). */
#define SYNO_KJV_FILE "kjv.txt.gz"
/* The fixed split: validation is the text from the first line start at or after
 * floor(n * 9 / 10), training everything before it. */
#define SYNO_TEXT_VAL_NUM 9
#define SYNO_TEXT_VAL_DEN 10

/* Reads a text file (gzip or plain, at most 64 MiB, at least 2 distinct bytes) and splits it
 * as above into train and val (both with the file's vocabulary). */
int syno_text_load(const char *path, syno_text_t *train, syno_text_t *val, syno_error_t *err);

/* Training samples of context T: the non-overlapping windows ids[i*T .. i*T+T] (T+1 ids:
 * the inputs and, one later, the targets), i = 0 .. (n-1)/T - 1. */
int64_t syno_text_windows(const syno_text_t *t, int64_t context);

/* Windows idx[0..m) into x ([m, T] ids as floats, resized) and labels ([m*T] next ids).
 * Returns a syno_nn_status (SYNO_NN_ERANGE for a window index out of range). */
int syno_text_gather(const syno_text_t *t, int64_t context, const int64_t *idx, int64_t m, syno_tensor_t *x,
                     int32_t *labels);

void syno_text_free(syno_text_t *t);

#ifdef __cplusplus
}
#endif

#endif /* SYNO_DATA_H */
