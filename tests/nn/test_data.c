/* Data sets: the committed UCI digits, Fashion-MNIST when its Debian package is present,
 * stratified splits, gathering, and clear errors for missing or damaged files. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>
#include <cmocka.h>

#include "syno/data.h"
#include "syno/train.h"

static char digits_path[4096];
static char tmpdir[256];

static void find_digits(void) {
  const char *src = getenv("SYNO_SOURCE_DIR");
  if (src && *src) {
    snprintf(digits_path, sizeof digits_path, "%s/data/digits.csv.gz", src);
    return;
  }
  /* Fall back to this file's location: tests/nn/test_data.c -> data/. */
  snprintf(digits_path, sizeof digits_path, "%s", __FILE__);
  char *cut = strstr(digits_path, "tests/nn/");
  if (cut) snprintf(cut, sizeof digits_path - (size_t)(cut - digits_path), "data/digits.csv.gz");
}

static int setup(void **state) {
  (void)state;
  find_digits();
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/syno-nn-data-XXXXXX", t && *t ? t : "/tmp");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

static const char *tmp(const char *name) {
  static char buf[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
  return buf[k];
}

static void write_raw(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  fclose(f);
}

static void write_gz(const char *path, const void *data, size_t len) {
  gzFile f = gzopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(gzwrite(f, data, (unsigned)len), (int)len);
  gzclose(f);
}

static void *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc((size_t)n);
  assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return p;
}

/* The load fails, and the message names the path and contains `what`. */
static void expect_digits_error(const char *path, const char *what) {
  syno_dataset_t ds;
  syno_error_t err = {{0}};
  assert_int_equal(syno_data_load_digits(path, &ds, &err), -1);
  fprintf(stderr, "  error: %s\n", err.msg);
  assert_non_null(strstr(err.msg, path));
  assert_non_null(strstr(err.msg, what));
  assert_null(ds.pixels);
}

static void test_digits_loads(void **state) {
  (void)state;
  syno_dataset_t ds;
  syno_error_t err = {{0}};
  int rc = syno_data_load_digits(digits_path, &ds, &err);
  if (rc) fail_msg("%s", err.msg);
  assert_int_equal(ds.n, 1797);
  assert_int_equal(ds.c, 1);
  assert_int_equal(ds.h, 8);
  assert_int_equal(ds.w, 8);
  assert_int_equal(ds.nclasses, 10);
  int64_t counts[10];
  const int64_t expect[10] = {178, 182, 177, 183, 181, 182, 181, 179, 174, 180};
  syno_data_class_counts(&ds, counts);
  for (int c = 0; c < 10; c++) {
    assert_int_equal(counts[c], expect[c]);
    assert_true(counts[c] >= 174 && counts[c] <= 183);
  }
  /* The first line of the file. */
  const uint8_t first[16] = {0, 0, 5, 13, 9, 1, 0, 0, 0, 0, 13, 15, 10, 15, 5, 0};
  assert_memory_equal(ds.pixels, first, 16);
  assert_int_equal(ds.labels[0], 0);
  assert_int_equal(ds.labels[1796], 8);
  /* Normalised over the whole set: mean 0, std 1 (the constants were computed on it). */
  int64_t *idx = malloc(1797 * sizeof *idx);
  for (int i = 0; i < 1797; i++) idx[i] = i;
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  int32_t *lab = malloc(1797 * sizeof *lab);
  assert_int_equal(syno_data_gather(&ds, idx, 1797, &x, lab), 0);
  assert_int_equal(x.dims[0], 1797);
  assert_int_equal(x.dims[1], 1);
  double s = 0, ss = 0;
  for (int64_t i = 0; i < syno_nn_tensor_numel(&x); i++) {
    s += x.data[i];
    ss += (double)x.data[i] * x.data[i];
  }
  double n = (double)syno_nn_tensor_numel(&x), mean = s / n;
  assert_true(fabs(mean) < 1e-3);
  assert_true(fabs(sqrt(ss / n - mean * mean) - 1.0) < 1e-3);
  assert_memory_equal(lab, ds.labels, 1797 * sizeof *lab);
  idx[0] = 1797;
  assert_int_equal(syno_data_gather(&ds, idx, 1, &x, NULL), SYNO_NN_ERANGE);
  free(lab);
  free(idx);
  syno_nn_tensor_free(&x);
  syno_data_free(&ds);
}

static int cmp_record(const void *a, const void *b) { return memcmp(a, b, 65); }

/* Sorted 65-byte records (pixels, label) of a set, to compare sets as multisets. */
static uint8_t *records(const syno_dataset_t *a, const syno_dataset_t *b) {
  int64_t n = a->n + (b ? b->n : 0);
  uint8_t *r = malloc((size_t)n * 65);
  for (int64_t i = 0; i < n; i++) {
    const syno_dataset_t *d = i < a->n ? a : b;
    int64_t j = i < a->n ? i : i - a->n;
    memcpy(r + i * 65, d->pixels + j * 64, 64);
    r[i * 65 + 64] = (uint8_t)d->labels[j];
  }
  qsort(r, (size_t)n, 65, cmp_record);
  return r;
}

static void test_digits_split(void **state) {
  (void)state;
  syno_dataset_t all, tr, te, tr2, te2;
  syno_error_t err = {{0}};
  assert_int_equal(syno_data_load_digits(digits_path, &all, &err), 0);
  assert_int_equal(syno_data_load_digits_split(digits_path, &tr, &te, &err), 0);
  assert_int_equal(tr.n, 1497);
  assert_int_equal(te.n, 300);
  assert_string_equal(te.name, "digits-test");
  int64_t ca[10], ct[10], cr[10], sum = 0;
  syno_data_class_counts(&all, ca);
  syno_data_class_counts(&te, ct);
  syno_data_class_counts(&tr, cr);
  for (int c = 0; c < 10; c++) {
    assert_true(ct[c] >= 29 && ct[c] <= 31); /* stratified: ~300 * 1/10 each */
    assert_int_equal(ct[c] + cr[c], ca[c]);
    sum += ct[c];
  }
  assert_int_equal(sum, 300);
  /* train + test is exactly the whole set, as a multiset of samples. */
  uint8_t *r_all = records(&all, NULL), *r_split = records(&tr, &te);
  assert_memory_equal(r_all, r_split, 1797 * 65);
  free(r_all);
  free(r_split);
  /* Deterministic: a second load gives the same split. */
  assert_int_equal(syno_data_load_digits_split(digits_path, &tr2, &te2, &err), 0);
  assert_memory_equal(te.pixels, te2.pixels, 300 * 64);
  assert_memory_equal(tr.labels, tr2.labels, 1497 * sizeof *tr.labels);
  /* Another seed gives another split of the same sizes. */
  syno_rng_t rng;
  syno_dataset_t sub;
  syno_rng_seed(&rng, 1, 0);
  assert_int_equal(syno_data_subset(&all, 300, &rng, &sub, &err), 0);
  assert_int_equal(sub.n, 300);
  assert_memory_not_equal(sub.pixels, te.pixels, 300 * 64);
  syno_data_free(&sub);
  assert_int_equal(syno_data_subset(&all, 1798, &rng, &sub, &err), -1);
  assert_non_null(strstr(err.msg, "1798"));
  assert_null(sub.pixels);
  syno_data_free(&all);
  syno_data_free(&tr);
  syno_data_free(&te);
  syno_data_free(&tr2);
  syno_data_free(&te2);
}

static void test_digits_bad_files(void **state) {
  (void)state;
  expect_digits_error(tmp("absent.csv.gz"), "cannot open");
  /* The real file cut in half: the gzip stream ends early. */
  size_t len;
  uint8_t *gz = read_file(digits_path, &len);
  write_raw(tmp("truncated.csv.gz"), gz, len / 2);
  expect_digits_error(tmp("truncated.csv.gz"), "corrupt or truncated gzip data");
  /* A damaged byte in the middle of the deflate data. */
  gz[len / 2] ^= 0x55;
  gz[len / 2 + 1] ^= 0xaa;
  write_raw(tmp("damaged.csv.gz"), gz, len);
  expect_digits_error(tmp("damaged.csv.gz"), "corrupt or truncated gzip data");
  free(gz);
  const char *few = "0,1,2\n";
  write_gz(tmp("few.csv.gz"), few, strlen(few));
  expect_digits_error(tmp("few.csv.gz"), "found 3 fields");
  char line[512] = "", *p = line;
  for (int i = 0; i < 64; i++) p += sprintf(p, "%d,", i == 10 ? 17 : 3);
  sprintf(p, "4\n");
  write_gz(tmp("range.csv.gz"), line, strlen(line));
  expect_digits_error(tmp("range.csv.gz"), "pixel 11 is 17");
  p = line;
  for (int i = 0; i < 64; i++) p += sprintf(p, "3,");
  sprintf(p, "12\n");
  write_gz(tmp("label.csv.gz"), line, strlen(line));
  expect_digits_error(tmp("label.csv.gz"), "label is 12");
  write_gz(tmp("text.csv.gz"), "hello,world\n", 12);
  expect_digits_error(tmp("text.csv.gz"), "unexpected text at column 1");
  write_gz(tmp("empty.csv.gz"), "", 0);
  expect_digits_error(tmp("empty.csv.gz"), "no samples");
  /* Plain (uncompressed) CSV is accepted too. */
  p = line;
  for (int i = 0; i < 64; i++) p += sprintf(p, "%d,", i % 17);
  sprintf(p, "7\n");
  write_raw(tmp("plain.csv"), line, strlen(line));
  syno_dataset_t ds;
  syno_error_t err = {{0}};
  assert_int_equal(syno_data_load_digits(tmp("plain.csv"), &ds, &err), 0);
  assert_int_equal(ds.n, 1);
  assert_int_equal(ds.labels[0], 7);
  assert_int_equal(ds.pixels[63], 63 % 17);
  syno_data_free(&ds);
}

/* ---------------------------------------------------------------- IDX */

static size_t put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24);
  p[1] = (uint8_t)(v >> 16);
  p[2] = (uint8_t)(v >> 8);
  p[3] = (uint8_t)v;
  return 4;
}

/* A 3-image 2x3 IDX pair; `cut` drops bytes from the image payload, `extra` appends. */
static void make_idx(const char *ip, const char *lp, uint32_t imagic, uint32_t lmagic, uint32_t nlabels, int cut,
                     int extra, uint8_t bad_label) {
  uint8_t img[16 + 18 + 1], lab[8 + 4];
  size_t k = put_be32(img, imagic);
  k += put_be32(img + k, 3);
  k += put_be32(img + k, 2);
  k += put_be32(img + k, 3);
  for (int i = 0; i < 18; i++) img[k + (size_t)i] = (uint8_t)(i * 10);
  img[34] = 0;
  write_gz(ip, img, 34 - (size_t)cut + (size_t)extra);
  k = put_be32(lab, lmagic);
  k += put_be32(lab + k, nlabels);
  lab[8] = 2;
  lab[9] = 0;
  lab[10] = bad_label;
  write_gz(lp, lab, 8 + nlabels);
}

static void expect_idx_error(const char *ip, const char *lp, const char *where, const char *what) {
  syno_dataset_t ds;
  syno_error_t err = {{0}};
  assert_int_equal(syno_data_load_idx(ip, lp, 10, &ds, &err), -1);
  fprintf(stderr, "  error: %s\n", err.msg);
  assert_non_null(strstr(err.msg, where));
  assert_non_null(strstr(err.msg, what));
  assert_null(ds.pixels);
}

static void test_idx_reader(void **state) {
  (void)state;
  const char *ip = tmp("img.gz"), *lp = tmp("lab.gz");
  make_idx(ip, lp, 0x803, 0x801, 3, 0, 0, 9);
  syno_dataset_t ds;
  syno_error_t err = {{0}};
  assert_int_equal(syno_data_load_idx(ip, lp, 10, &ds, &err), 0);
  assert_int_equal(ds.n, 3);
  assert_int_equal(ds.h, 2);
  assert_int_equal(ds.w, 3);
  assert_int_equal(ds.pixels[17], 170);
  assert_int_equal(ds.labels[0], 2);
  assert_int_equal(ds.labels[2], 9);
  syno_data_free(&ds);

  make_idx(ip, lp, 0x801, 0x801, 3, 0, 0, 1);
  expect_idx_error(ip, lp, ip, "bad magic number 0x00000801; expected 0x00000803");
  make_idx(ip, lp, 0x803, 0x803, 3, 0, 0, 1);
  expect_idx_error(ip, lp, lp, "bad magic number 0x00000803; expected 0x00000801");
  make_idx(ip, lp, 0x803, 0x801, 3, 5, 0, 1);
  expect_idx_error(ip, lp, ip, "truncated: expected 18 bytes of pixel data after the header, got 13");
  make_idx(ip, lp, 0x803, 0x801, 3, 0, 1, 1);
  expect_idx_error(ip, lp, ip, "unexpected bytes after");
  make_idx(ip, lp, 0x803, 0x801, 2, 0, 0, 1);
  expect_idx_error(ip, lp, lp, "holds 2 labels");
  make_idx(ip, lp, 0x803, 0x801, 3, 0, 0, 10);
  expect_idx_error(ip, lp, lp, "label 10 at index 2; expected 0..9");
  make_idx(ip, lp, 0x803, 0x801, 3, 28, 0, 1);
  expect_idx_error(ip, lp, ip, "the IDX header needs 16 bytes, got 6");
  expect_idx_error(tmp("nope.gz"), lp, tmp("nope.gz"), "cannot open");
  /* A valid header inside a gzip stream chopped mid-way. */
  make_idx(ip, lp, 0x803, 0x801, 3, 0, 0, 1);
  size_t len;
  uint8_t *gz = read_file(ip, &len);
  write_raw(ip, gz, len - 6);
  free(gz);
  expect_idx_error(ip, lp, ip, "corrupt or truncated gzip data");
}

/* ---------------------------------------------------------------- an image set in IDX files */

/* One split of an image set as written: its headers (the image file's magic says how many of
 * n, c, h, w it holds: 3 dimensions are n, h, w), the label count, bytes cut off the pixel
 * payload, gzip, and the last label (-1: (n-1) % 3 like the others). */
typedef struct {
  uint32_t imagic, lmagic, n, c, h, w, nlabels;
  int cut, gz, last;
} split_t;

static const split_t good_train = {0x804, 0x801, 9, 2, 6, 10, 9, 0, 1, -1},
                     good_test = {0x804, 0x801, 4, 2, 6, 10, 4, 0, 0, -1};

/* Pixel (ch, y, x) of image i; the test images are numbered from 100. */
static uint8_t set_pixel(int i, int ch, int y, int x) { return (uint8_t)((i * 13 + ch * 71 + y * 7 + x * 3) % 256); }

static void write_split(const char *dir, const char *split, const split_t *sp) {
  static uint8_t buf[16 + 4 * 8 + 4096];
  const int first = strcmp(split, "test") ? 0 : 100, nd = (int)(sp->imagic & 0xff);
  const uint32_t c = nd == 3 ? 1 : sp->c;
  char path[600];
  for (int k = 0; k < 2; k++) {
    const char *kind = k ? "labels" : "images";
    snprintf(path, sizeof path, "%s/%s-%s.idx.gz", dir, split, kind);
    unlink(path);
    path[strlen(path) - 3] = 0;
    unlink(path);
    size_t n = put_be32(buf, k ? sp->lmagic : sp->imagic);
    if (k) {
      n += put_be32(buf + n, sp->nlabels);
      for (uint32_t i = 0; i < sp->nlabels; i++)
        buf[n++] = (uint8_t)(i + 1 == sp->nlabels && sp->last >= 0 ? (uint32_t)sp->last : i % 3);
    } else {
      const uint32_t dims[8] = {sp->n, sp->c, sp->h, sp->w, 1, 1, 1, 1}, three[3] = {sp->n, sp->h, sp->w};
      for (int d = 0; d < nd && d < 8; d++) n += put_be32(buf + n, nd == 3 ? three[d] : dims[d]);
      for (uint32_t i = 0; nd >= 3 && i < sp->n; i++)
        for (uint32_t ch = 0; ch < c; ch++)
          for (uint32_t y = 0; y < sp->h; y++)
            for (uint32_t x = 0; x < sp->w; x++) buf[n++] = set_pixel(first + (int)i, (int)ch, (int)y, (int)x);
      n -= (size_t)sp->cut;
    }
    if (!k && sp->gz) {
      strcat(path, ".gz");
      write_gz(path, buf, n);
    } else {
      write_raw(path, buf, n);
    }
  }
}

static void write_set(const char *dir, const split_t *train, const split_t *test) {
  write_split(dir, "train", train);
  write_split(dir, "test", test);
}

/* Both the loader and (header: the problem is in a header or a label file) the shape reader
 * fail, naming `where` and `what`, and return nothing. */
static void expect_images_error(const char *dir, int header, const char *where, const char *what) {
  syno_dataset_t tr, te;
  syno_error_t err = {{0}};
  assert_int_equal(syno_data_load_images(dir, &tr, &te, &err), -1);
  fprintf(stderr, "  error: %s\n", err.msg);
  assert_non_null(strstr(err.msg, where));
  assert_non_null(strstr(err.msg, what));
  assert_null(tr.pixels);
  assert_null(te.pixels);
  int64_t c, h, w;
  int classes;
  syno_error_t serr = {{0}};
  assert_int_equal(syno_data_images_shape(dir, &c, &h, &w, &classes, &serr), header ? -1 : 0);
  if (header) assert_string_equal(serr.msg, err.msg);
}

/* The user's image set: 2-channel 6x10 images of 3 classes, the training images gzipped, the
 * rest plain; pixels, labels, the shape without loading, per-channel normalisation with the
 * training images' statistics; a one-channel 3-D set; classes from the labels of both splits;
 * and every bad input named with its file. */
static void test_images(void **state) {
  (void)state;
  char dir[512];
  snprintf(dir, sizeof dir, "%s", tmp("images"));
  assert_int_equal(mkdir(dir, 0700), 0);
  write_set(dir, &good_train, &good_test);
  syno_dataset_t tr, te;
  syno_error_t err = {{0}};
  assert_int_equal(syno_data_load_images(dir, &tr, &te, &err), 0);
  assert_int_equal(tr.n, 9);
  assert_int_equal(te.n, 4);
  assert_int_equal(tr.c, 2);
  assert_int_equal(tr.h, 6);
  assert_int_equal(tr.w, 10);
  assert_int_equal(te.c * te.h * te.w, 120);
  assert_int_equal(tr.nclasses, 3);
  assert_int_equal(te.nclasses, 3);
  for (int i = 0; i < 9; i++) assert_int_equal(tr.labels[i], i % 3);
  assert_int_equal(te.labels[3], 0);
  assert_int_equal(tr.pixels[((8 * 2 + 1) * 6 + 5) * 10 + 9], set_pixel(8, 1, 5, 9));
  assert_int_equal(te.pixels[((2 * 2 + 0) * 6 + 3) * 10 + 4], set_pixel(102, 0, 3, 4));
  int64_t c, h, w;
  int classes;
  assert_int_equal(syno_data_images_shape(dir, &c, &h, &w, &classes, &err), 0);
  assert_true(c == 2 && h == 6 && w == 10 && classes == 3);
  /* each channel standardised with the training images' mean and standard deviation of v/255,
   * the test images too */
  double mean[2] = {0, 0}, var[2] = {0, 0};
  for (int ch = 0; ch < 2; ch++) {
    for (int i = 0; i < 9; i++)
      for (int j = 0; j < 60; j++) mean[ch] += set_pixel(i, ch, j / 10, j % 10) / 255.0 / 540.0;
    for (int i = 0; i < 9; i++)
      for (int j = 0; j < 60; j++) var[ch] += pow(set_pixel(i, ch, j / 10, j % 10) / 255.0 - mean[ch], 2) / 540.0;
  }
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  int64_t idx[1] = {1};
  assert_int_equal(syno_data_gather(&te, idx, 1, &x, NULL), SYNO_NN_OK);
  for (int ch = 0; ch < 2; ch++)
    for (int j = 0; j < 60; j += 7)
      assert_true(fabs(x.data[ch * 60 + j] - (set_pixel(101, ch, j / 10, j % 10) / 255.0 - mean[ch]) / sqrt(var[ch])) <
                  1e-4);
  syno_nn_tensor_free(&x);
  syno_data_free(&tr);
  syno_data_free(&te);

  /* one channel as N x H x W; a class only the test split has still counts */
  split_t a = good_train, b = good_test;
  a.imagic = b.imagic = 0x803;
  b.last = 6;
  write_set(dir, &a, &b);
  assert_int_equal(syno_data_load_images(dir, &tr, &te, &err), 0);
  assert_true(tr.c == 1 && tr.h == 6 && tr.w == 10 && tr.nclasses == 7 && te.labels[3] == 6);
  assert_int_equal(tr.pixels[59], set_pixel(0, 0, 5, 9));
  syno_data_free(&tr);
  syno_data_free(&te);

  char path[600];
  snprintf(path, sizeof path, "%s/test-labels.idx", dir);
  unlink(path);
  expect_images_error(dir, 1, "test-labels.idx: no such file, nor", "test-labels.idx.gz");
  write_set(dir, &good_train, &good_test);
  snprintf(path, sizeof path, "%s/train-images.idx", dir);
  write_raw(path, "x", 1);
  expect_images_error(dir, 1, "train-images.idx and", "train-images.idx.gz both exist");
  /* wrong magic numbers: a label file for images, another type, too many dimensions; a 2-D
   * label file */
  const struct {
    uint32_t imagic, lmagic;
    const char *where, *what, *why;
  } magic[] = {
      {0x801, 0x801, "train-images.idx.gz", "bad magic number 0x00000801; expected 0x00000803 or 0x00000804",
       "1 dimension, not 3 to 4"},
      {0xd04, 0x801, "train-images.idx.gz", "bad magic number 0x00000d04", "element type 0x0d, not 0x08"},
      {0x805, 0x801, "train-images.idx.gz", "bad magic number 0x00000805", "5 dimensions, not 3 to 4"},
      {0x804, 0x802, "train-labels.idx", "bad magic number 0x00000802; expected 0x00000801", "2 dimensions, not 1"},
  };
  for (size_t k = 0; k < sizeof magic / sizeof *magic; k++) {
    a = good_train;
    a.imagic = magic[k].imagic;
    a.lmagic = magic[k].lmagic;
    write_set(dir, &a, &good_test);
    expect_images_error(dir, 1, magic[k].where, magic[k].what);
    expect_images_error(dir, 1, magic[k].where, magic[k].why);
  }
  a = good_train;
  a.nlabels = 8;
  write_set(dir, &a, &good_test);
  expect_images_error(dir, 1, "train-labels.idx: holds 8 labels, but", "train-images.idx.gz holds 9 images");
  a = good_train;
  a.c = 5;
  write_set(dir, &a, &good_test);
  expect_images_error(dir, 1, "train-images.idx.gz", "images of 5 channels; expected 1..4");
  b = good_test;
  b.n = b.nlabels = 0;
  write_set(dir, &good_train, &b);
  expect_images_error(dir, 1, "test-images.idx", "holds no images");
  b = good_test;
  b.w = 9;
  write_set(dir, &good_train, &b);
  expect_images_error(dir, 1, "test-images.idx: images of 2 x 6 x 9 (C x H x W), but",
                      "train-images.idx.gz holds 2 x 6 x 10; expected the training images' shape");
  a = good_train;
  a.h = 0;
  write_set(dir, &a, &good_test);
  expect_images_error(dir, 1, "train-images.idx.gz", "images of 0x10; expected sides of 1..4096");
  a = good_train;
  b = good_test;
  a.n = a.nlabels = b.n = b.nlabels = 1; /* one image each, of class 0 */
  write_set(dir, &a, &b);
  expect_images_error(dir, 1, "labels.idx", "every label is 0; expected at least two classes");
  /* a truncated payload shows when the pixels are read, not in the headers */
  b = good_test;
  b.cut = 10;
  write_set(dir, &good_train, &b);
  expect_images_error(dir, 0, "test-images.idx",
                      "truncated: expected 480 bytes of pixel data after the header, got 470");
}

/* ---------------------------------------------------------------- Fashion-MNIST */

static void test_fashion_mnist(void **state) {
  (void)state;
  char probe[512];
  snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte.gz", SYNO_FASHION_MNIST_DIR);
  if (access(probe, R_OK) != 0) {
    printf(
        "SKIP: %s not found; install Debian package dataset-fashion-mnist to run this "
        "test\n",
        probe);
    skip();
  }
  syno_dataset_t tr, te, sub;
  syno_error_t err = {{0}};
  if (syno_data_load_fashion_mnist(NULL, 1, &tr, &err)) fail_msg("%s", err.msg);
  if (syno_data_load_fashion_mnist(SYNO_FASHION_MNIST_DIR, 0, &te, &err)) fail_msg("%s", err.msg);
  assert_int_equal(tr.n, 60000);
  assert_int_equal(te.n, 10000);
  assert_int_equal(tr.h, 28);
  assert_int_equal(te.w, 28);
  int64_t c[10];
  syno_data_class_counts(&tr, c);
  for (int k = 0; k < 10; k++) assert_int_equal(c[k], 6000);
  syno_data_class_counts(&te, c);
  for (int k = 0; k < 10; k++) assert_int_equal(c[k], 1000);
  /* Normalisation: the training pixels have mean 0 and std 1 after gathering. */
  int64_t idx[6000];
  for (int i = 0; i < 6000; i++) idx[i] = i * 10;
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  assert_int_equal(syno_data_gather(&tr, idx, 6000, &x, NULL), 0);
  double s = 0, ss = 0, n = (double)syno_nn_tensor_numel(&x);
  for (int64_t i = 0; i < syno_nn_tensor_numel(&x); i++) {
    s += x.data[i];
    ss += (double)x.data[i] * x.data[i];
  }
  fprintf(stderr, "  fashion-mnist train sample: mean %.4f std %.4f\n", s / n, sqrt(ss / n - (s / n) * (s / n)));
  assert_true(fabs(s / n) < 0.02);
  assert_true(fabs(sqrt(ss / n - (s / n) * (s / n)) - 1.0) < 0.02);
  syno_rng_t rng;
  syno_rng_seed(&rng, 7, 0);
  assert_int_equal(syno_data_subset(&tr, 10000, &rng, &sub, &err), 0);
  syno_data_class_counts(&sub, c);
  for (int k = 0; k < 10; k++) assert_int_equal(c[k], 1000);
  /* The real test labels cut to a third: reported against the labels file. */
  char real_img[512], real_lab[512];
  snprintf(real_img, sizeof real_img, "%s/t10k-images-idx3-ubyte.gz", SYNO_FASHION_MNIST_DIR);
  snprintf(real_lab, sizeof real_lab, "%s/t10k-labels-idx1-ubyte.gz", SYNO_FASHION_MNIST_DIR);
  size_t len;
  uint8_t *gz = read_file(real_lab, &len);
  write_raw(tmp("t10k-labels-cut.gz"), gz, len / 3);
  free(gz);
  expect_idx_error(real_img, tmp("t10k-labels-cut.gz"), tmp("t10k-labels-cut.gz"), "corrupt or truncated gzip data");
  syno_nn_tensor_free(&x);
  syno_data_free(&sub);
  syno_data_free(&tr);
  syno_data_free(&te);
}

static void test_fashion_mnist_missing_dir(void **state) {
  (void)state;
  syno_dataset_t ds;
  syno_error_t err = {{0}};
  assert_int_equal(syno_data_load_fashion_mnist(tmp("no-such-dir"), 1, &ds, &err), -1);
  fprintf(stderr, "  error: %s\n", err.msg);
  assert_non_null(strstr(err.msg, "no-such-dir/train-images-idx3-ubyte.gz"));
  assert_non_null(strstr(err.msg, "dataset-fashion-mnist"));
  /* A directory whose files are valid IDX but not 28x28 is refused too. */
  char dir[512];
  snprintf(dir, sizeof dir, "%s", tmp("fm"));
  char cmd[600];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
  assert_int_equal(system(cmd), 0);
  char ip[600], lp[600];
  snprintf(ip, sizeof ip, "%s/t10k-images-idx3-ubyte.gz", dir);
  snprintf(lp, sizeof lp, "%s/t10k-labels-idx1-ubyte.gz", dir);
  make_idx(ip, lp, 0x803, 0x801, 3, 0, 0, 1);
  assert_int_equal(syno_data_load_fashion_mnist(dir, 0, &ds, &err), -1);
  assert_non_null(strstr(err.msg, "expected 28x28"));
}

static void test_pad(void **state) {
  (void)state;
  syno_dataset_t ds = {0};
  ds.n = 2, ds.c = 1, ds.h = 2, ds.w = 3, ds.nclasses = 2;
  ds.pixels = malloc(12);
  ds.labels = calloc(2, sizeof *ds.labels);
  for (int i = 0; i < 12; i++) ds.pixels[i] = (uint8_t)(i + 1);
  syno_error_t err = {0};
  assert_int_equal(syno_data_pad(&ds, -1, &err), -1);
  assert_non_null(strstr(err.msg, "pad"));
  assert_int_equal(syno_data_pad(&ds, 0, &err), 0);
  assert_int_equal(ds.h, 2);
  assert_int_equal(syno_data_pad(&ds, 1, &err), 0);
  assert_int_equal(ds.h, 4);
  assert_int_equal(ds.w, 5);
  /* image 1, row 1 (first image row) is 0 7 8 9 0; the border is 0 */
  const uint8_t *im1 = ds.pixels + 20;
  uint8_t row[5] = {0, 7, 8, 9, 0};
  assert_memory_equal(im1 + 5, row, 5);
  for (int x = 0; x < 5; x++) assert_int_equal(im1[x] + im1[15 + x], 0);
  assert_int_equal(ds.pixels[5 + 1], 1);
  syno_data_free(&ds);
}

/* CIFAR records: label byte(s) then the R, G, B planes; pixel (c, y, x) of record r is
 * (r * 7 + c * 31 + y * 3 + x) mod 256 so every plane and record differs. */
static size_t cifar_records(uint8_t *buf, int nrec, int labels, int first, int nclasses) {
  size_t k = 0;
  for (int r = 0; r < nrec; r++) {
    int id = first + r;
    if (labels == 2) buf[k++] = (uint8_t)(id % 20); /* coarse */
    buf[k++] = (uint8_t)(id % nclasses);
    for (int c = 0; c < 3; c++)
      for (int y = 0; y < 32; y++)
        for (int x = 0; x < 32; x++) buf[k++] = (uint8_t)((id * 7 + c * 31 + y * 3 + x) % 256);
  }
  return k;
}

static void check_cifar_pixels(const syno_dataset_t *ds, int first) {
  for (int64_t r = 0; r < ds->n; r++)
    for (int c = 0; c < 3; c++) {
      const uint8_t *p = ds->pixels + ((r * 3 + c) * 32) * 32;
      int id = first + (int)r;
      assert_int_equal(p[0], (id * 7 + c * 31) % 256);
      assert_int_equal(p[5 * 32 + 9], (id * 7 + c * 31 + 15 + 9) % 256);
    }
}

/* Both CIFAR binary formats on files written here: the five CIFAR-10 training batches (one
 * gzip-compressed) and its test batch, CIFAR-100's train.bin with fine and coarse labels;
 * per-channel normalisation; a truncated record, a label out of range and a missing file
 * named in the error. */
static void test_cifar(void **state) {
  (void)state;
  static uint8_t buf[8 * (2 + 3072)];
  char dir10[512], dir100[512], path[600];
  snprintf(dir10, sizeof dir10, "%s", tmp("cifar10"));
  snprintf(dir100, sizeof dir100, "%s", tmp("cifar100"));
  assert_int_equal(mkdir(dir10, 0700), 0);
  assert_int_equal(mkdir(dir100, 0700), 0);
  for (int b = 1; b <= 5; b++) {
    size_t len = cifar_records(buf, 3, 1, 3 * (b - 1), 10);
    snprintf(path, sizeof path, "%s/data_batch_%d.bin", dir10, b);
    if (b == 3)
      write_gz(path, buf, len);
    else
      write_raw(path, buf, len);
  }
  snprintf(path, sizeof path, "%s/test_batch.bin", dir10);
  write_raw(path, buf, cifar_records(buf, 4, 1, 100, 10));
  syno_dataset_t ds;
  syno_error_t err = {{0}};
  assert_int_equal(syno_data_load_cifar(dir10, SYNO_CIFAR10, 1, &ds, &err), 0);
  assert_int_equal(ds.n, 15);
  assert_int_equal(ds.c, 3);
  assert_int_equal(ds.h, 32);
  assert_int_equal(ds.nclasses, 10);
  for (int i = 0; i < 15; i++) assert_int_equal(ds.labels[i], i % 10);
  check_cifar_pixels(&ds, 0);
  /* per channel: pixel 0 of record 0 is 0, 31, 62 in R, G, B; normalised with the means and
   * standard deviations of CIFAR-10 */
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  int64_t idx[1] = {0};
  int32_t lab[1];
  assert_int_equal(syno_data_gather(&ds, idx, 1, &x, lab), SYNO_NN_OK);
  assert_true(fabs(x.data[0] - (0.0 - 0.4914) / 0.2470) < 1e-4);
  assert_true(fabs(x.data[1024] - (31 / 255.0 - 0.4822) / 0.2435) < 1e-4);
  assert_true(fabs(x.data[2048] - (62 / 255.0 - 0.4465) / 0.2616) < 1e-4);
  syno_nn_tensor_free(&x);
  syno_data_free(&ds);
  assert_int_equal(syno_data_load_cifar(dir10, SYNO_CIFAR10, 0, &ds, &err), 0);
  assert_int_equal(ds.n, 4);
  assert_int_equal(ds.labels[3], 103 % 10);
  check_cifar_pixels(&ds, 100);
  syno_data_free(&ds);
  /* CIFAR-100: fine and coarse labels of the same file */
  snprintf(path, sizeof path, "%s/train.bin", dir100);
  write_raw(path, buf, cifar_records(buf, 8, 2, 90, 100));
  assert_int_equal(syno_data_load_cifar(dir100, SYNO_CIFAR100, 1, &ds, &err), 0);
  assert_int_equal(ds.n, 8);
  assert_int_equal(ds.nclasses, 100);
  assert_int_equal(ds.labels[7], 97);
  check_cifar_pixels(&ds, 90);
  syno_data_free(&ds);
  assert_int_equal(syno_data_load_cifar(dir100, SYNO_CIFAR100_COARSE, 1, &ds, &err), 0);
  assert_int_equal(ds.nclasses, 20);
  assert_int_equal(ds.labels[7], 97 % 20);
  syno_data_free(&ds);
  /* bad files: the error names the file and the problem, and nothing is returned */
  size_t len = cifar_records(buf, 2, 2, 0, 100);
  write_raw(path, buf, len - 100);
  assert_int_equal(syno_data_load_cifar(dir100, SYNO_CIFAR100, 1, &ds, &err), -1);
  fprintf(stderr, "  error: %s\n", err.msg);
  assert_non_null(strstr(err.msg, "train.bin: truncated: record 1"));
  assert_null(ds.pixels);
  buf[0] = 20; /* a coarse label out of range */
  write_raw(path, buf, len);
  assert_int_equal(syno_data_load_cifar(dir100, SYNO_CIFAR100_COARSE, 1, &ds, &err), -1);
  fprintf(stderr, "  error: %s\n", err.msg);
  assert_non_null(strstr(err.msg, "record 0 has label 20; expected 0..19"));
  assert_int_equal(syno_data_load_cifar(dir100, SYNO_CIFAR100, 0, &ds, &err), -1);
  fprintf(stderr, "  error: %s\n", err.msg);
  assert_non_null(strstr(err.msg, "test.bin"));
}

/* Augmentation: without padding or flips nothing moves; with them every image is its own
 * copy shifted by at most the padding (zeros coming in) and maybe mirrored, and over a
 * batch both flips and several shifts occur. */
static void test_augment(void **state) {
  (void)state;
  enum { N = 64, C = 2, H = 5, W = 6, P = 2 };
  syno_tensor_t x = SYNO_TENSOR_EMPTY;
  int64_t d[4] = {N, C, H, W};
  assert_int_equal(syno_nn_tensor_alloc(&x, 4, d), SYNO_NN_OK);
  static float orig[N * C * H * W];
  for (int i = 0; i < N * C * H * W; i++) orig[i] = x.data[i] = 1.0f + (float)(i % 997);
  syno_rng_t rng;
  syno_rng_seed(&rng, 5, 1);
  assert_int_equal(syno_data_augment(&x, 0, 0, &rng), SYNO_NN_OK);
  assert_memory_equal(x.data, orig, sizeof orig);
  assert_int_equal(syno_data_augment(&x, P, 1, &rng), SYNO_NN_OK);
  int flips = 0, shifts[2 * P + 1][2 * P + 1] = {{0}}, kinds = 0;
  for (int n = 0; n < N; n++) {
    const float *a = orig + n * C * H * W, *b = x.data + n * C * H * W;
    int found = 0;
    for (int m = 0; m < 2 && !found; m++)
      for (int dy = -P; dy <= P && !found; dy++)
        for (int dx = -P; dx <= P && !found; dx++) {
          int same = 1;
          for (int c = 0; c < C && same; c++)
            for (int y = 0; y < H && same; y++)
              for (int xx = 0; xx < W && same; xx++) {
                int sy = y + dy, sx = (m ? W - 1 - xx : xx) + dx;
                float want = sy >= 0 && sy < H && sx >= 0 && sx < W ? a[(c * H + sy) * W + sx] : 0.0f;
                same = b[(c * H + y) * W + xx] == want;
              }
          if (same) {
            found = 1;
            flips += m;
            kinds += !shifts[dy + P][dx + P]++;
          }
        }
    assert_true(found);
  }
  fprintf(stderr, "  augment: %d of %d mirrored, %d distinct shifts\n", flips, N, kinds);
  assert_true(flips > 0 && flips < N);
  assert_true(kinds > 5);
  syno_nn_tensor_free(&x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_augment),
      cmocka_unit_test(test_cifar),
      cmocka_unit_test(test_digits_loads),
      cmocka_unit_test(test_digits_split),
      cmocka_unit_test(test_digits_bad_files),
      cmocka_unit_test(test_idx_reader),
      cmocka_unit_test(test_images),
      cmocka_unit_test(test_fashion_mnist),
      cmocka_unit_test(test_fashion_mnist_missing_dir),
      cmocka_unit_test(test_pad),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
