/*
 * Data-set readers (UCI digits CSV, IDX), stratified splits and batch gathering.
 *
 * Everything goes through zlib's gz* interface, which reads gzip and plain files alike; a
 * truncated or damaged gzip stream shows up as a short read plus a gzerror() code, and every
 * read checks both, so a bad file becomes an error message rather than garbage samples.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcntl.h>
#include <zlib.h>

#include "syno/file.h"

#include "syno/data.h"
#include "syno/grow.h"
#include "syno/train.h"

static int ds_alloc(syno_dataset_t *ds, int64_t n, int64_t c, int64_t h, int64_t w, int nclasses, const char *name) {
  memset(ds, 0, sizeof *ds);
  ds->pixels = malloc((size_t)(n * c * h * w > 0 ? n * c * h * w : 1));
  ds->labels = malloc((size_t)(n > 0 ? n : 1) * sizeof *ds->labels);
  if (!ds->pixels || !ds->labels) {
    syno_data_free(ds);
    return -1;
  }
  ds->n = n;
  ds->c = c;
  ds->h = h;
  ds->w = w;
  ds->nclasses = nclasses;
  for (int i = 0; i < SYNO_DATA_MAX_CHANNELS; i++) ds->scale[i] = 1.0f;
  snprintf(ds->name, sizeof ds->name, "%s", name);
  return 0;
}

void syno_data_free(syno_dataset_t *ds) {
  if (!ds) return;
  free(ds->pixels);
  free(ds->labels);
  memset(ds, 0, sizeof *ds);
}

/* The zlib error of f, or NULL if the stream is healthy. */
static const char *gz_problem(gzFile f, const char *path) {
  int code = Z_OK;
  const char *msg = gzerror(f, &code);
  if (code == Z_OK || code == Z_STREAM_END) return NULL;
  if (!msg || !*msg) return "zlib error";
  /* zlib prefixes the path, which our messages already lead with. */
  size_t n = strlen(path);
  if (strncmp(msg, path, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ') msg += n + 2;
  return msg;
}

/* Reads f to its end, so a damaged stream reports its zlib error (deflate only notices some
 * damage at the CRC check after the last block). */
static void gz_drain(gzFile f) {
  char buf[8192];
  while (gzread(f, buf, sizeof buf) > 0) {}
}

/* ---------------------------------------------------------------- UCI digits */

#define DIGITS_FIELDS 65

/* Parses one CSV line into 65 integers; returns the number of fields read, or -1 with *bad
 * pointing at the first character that is not part of a well-formed field. */
static int parse_fields(const char *line, long *v, int max, const char **bad) {
  const char *p = line;
  int n = 0;
  for (;;) {
    char *end;
    while (*p == ' ' || *p == '\t') p++;
    errno = 0;
    long x = strtol(p, &end, 10);
    if (end == p || errno) {
      *bad = p;
      return -1;
    }
    if (n < max) v[n] = x;
    n++;
    p = end;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == ',') {
      p++;
      continue;
    }
    if (*p == '\0' || *p == '\n' || *p == '\r') return n;
    *bad = p;
    return -1;
  }
}

gzFile syno_nn_gzopen(const char *path, syno_error_t *err) {
  int fd = syno_open_regular(path, O_RDONLY, 0, err);
  if (fd < 0) return NULL;
  gzFile f = gzdopen(fd, "rb");
  if (!f) {
    close(fd);
    syno_error_set(err, "%s: cannot open (out of memory)", path);
  }
  return f;
}

int syno_data_load_digits(const char *path, syno_dataset_t *out, syno_error_t *err) {
  static const char *expect =
      "expected 65 comma-separated integers per line: 64 pixels 0..16 (an 8x8 image), "
      "then the label 0..9";
  memset(out, 0, sizeof *out);
  gzFile f = syno_nn_gzopen(path, err);
  if (!f) {
    char m[sizeof err->msg];
    snprintf(m, sizeof m, "%s", err->msg);
    return syno_error_set(err, "%s; expected the UCI digits CSV (data/digits.csv.gz in the syno source tree)", m);
  }
  int64_t n = 0, lineno = 0;
  size_t cap = 2048;
  uint8_t *px = malloc((size_t)cap * 64);
  int32_t *lab = malloc((size_t)cap * sizeof *lab);
  char line[1024];
  int rc = 0;
  if (!px || !lab) rc = syno_error_set(err, "%s: out of memory", path);
  while (!rc && gzgets(f, line, sizeof line)) {
    lineno++;
    size_t len = strlen(line);
    if (len == sizeof line - 1 && line[len - 1] != '\n' && !gzeof(f)) {
      rc = syno_error_set(err, "%s:%lld: line longer than %d bytes; %s", path, (long long)lineno, (int)sizeof line - 2,
                          expect);
      break;
    }
    if (strspn(line, " \t\r\n") == len) continue; /* blank lines (e.g. a final newline) carry no sample */
    long v[DIGITS_FIELDS];
    const char *bad = NULL;
    int nf = parse_fields(line, v, DIGITS_FIELDS, &bad);
    if (nf < 0) {
      rc = syno_error_set(err, "%s:%lld: unexpected text at column %d; %s", path, (long long)lineno,
                          (int)(bad - line) + 1, expect);
      break;
    }
    if (nf != DIGITS_FIELDS) {
      rc = syno_error_set(err, "%s:%lld: found %d fields; %s", path, (long long)lineno, nf, expect);
      break;
    }
    size_t px_cap = cap;
    if (syno_grow((void **)&px, &px_cap, (size_t)n + 1, 64) ||
        syno_grow((void **)&lab, &cap, (size_t)n + 1, sizeof *lab)) {
      rc = syno_error_set(err, "%s: out of memory", path);
      break;
    }
    for (int i = 0; i < 64 && !rc; i++) {
      if (v[i] < 0 || v[i] > 16)
        rc = syno_error_set(err, "%s:%lld: pixel %d is %ld; %s", path, (long long)lineno, i + 1, v[i], expect);
      px[n * 64 + i] = (uint8_t)v[i];
    }
    if (!rc && (v[64] < 0 || v[64] > 9))
      rc = syno_error_set(err, "%s:%lld: label is %ld; %s", path, (long long)lineno, v[64], expect);
    lab[n++] = (int32_t)v[64];
  }
  /* A damaged stream usually also garbles the last line read, so its zlib error is the
   * real story and replaces any parse error. */
  if (rc) gz_drain(f);
  const char *zproblem = gz_problem(f, path);
  if (zproblem)
    rc = syno_error_set(err, "%s: corrupt or truncated gzip data near line %lld (%s); %s", path, (long long)lineno,
                        zproblem, expect);
  gzclose(f);
  if (!rc && n == 0) rc = syno_error_set(err, "%s: no samples; %s", path, expect);
  if (!rc && ds_alloc(out, n, 1, 8, 8, 10, "digits")) rc = syno_error_set(err, "%s: out of memory", path);
  if (!rc) {
    memcpy(out->pixels, px, (size_t)n * 64);
    memcpy(out->labels, lab, (size_t)n * sizeof *lab);
    out->scale[0] = (float)(1.0 / (16.0 * SYNO_DIGITS_STD));
    out->shift[0] = (float)(-SYNO_DIGITS_MEAN / SYNO_DIGITS_STD);
  }
  free(px);
  free(lab);
  return rc;
}

int syno_data_load_digits_split(const char *path, syno_dataset_t *train, syno_dataset_t *test, syno_error_t *err) {
  syno_dataset_t all;
  memset(train, 0, sizeof *train);
  memset(test, 0, sizeof *test);
  if (syno_data_load_digits(path, &all, err)) return -1;
  syno_rng_t rng;
  syno_rng_seed(&rng, SYNO_DIGITS_SPLIT_SEED, 0);
  int rc = syno_data_split(&all, SYNO_DIGITS_TEST_SIZE, &rng, train, test, err);
  syno_data_free(&all);
  if (!rc) {
    snprintf(train->name, sizeof train->name, "digits-train");
    snprintf(test->name, sizeof test->name, "digits-test");
  }
  return rc;
}

/* ---------------------------------------------------------------- IDX */

/* An IDX magic number: two zero bytes, the element type (0x08: unsigned bytes, the only one
 * read here), the number of dimensions. */
#define IDX_UBYTE 0x08u
#define IDX_MAGIC(ndim) (IDX_UBYTE << 8 | (uint32_t)(ndim))
#define IDX_MAX_DIMS 4

/* Reads up to len bytes; returns how many arrived (short on EOF or error). */
static int64_t read_bytes(gzFile f, void *buf, int64_t len) {
  int64_t got = 0;
  while (got < len) {
    int64_t want = len - got > (1 << 30) ? (1 << 30) : len - got;
    int r = gzread(f, (char *)buf + got, (unsigned)want);
    if (r <= 0) break;
    got += r;
  }
  return got;
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Opens an IDX file of unsigned bytes with lo..hi (<= IDX_MAX_DIMS) dimensions, checks its
 * magic number and reads its header: *ndim receives the count, dims the sizes. `what` names
 * the file's kind in messages. */
static gzFile idx_open(const char *path, int lo, int hi, const char *what, uint32_t *dims, int *ndim,
                       syno_error_t *err) {
  gzFile f = syno_nn_gzopen(path, err);
  if (!f) {
    char m[sizeof err->msg];
    snprintf(m, sizeof m, "%s", err->msg);
    syno_error_set(err, "%s; expected an IDX %s file", m, what);
    return NULL;
  }
  unsigned char hdr[4 + 4 * IDX_MAX_DIMS];
  int64_t got = read_bytes(f, hdr, 4), want = 4 + 4 * (int64_t)lo;
  const int nd = got == 4 ? hdr[3] : 0;
  if (got == 4 && (hdr[0] || hdr[1] || hdr[2] != IDX_UBYTE || nd < lo || nd > hi)) {
    char expect[64] = "", why[96];
    for (int k = lo; k <= hi; k++)
      snprintf(expect + strlen(expect), sizeof expect - strlen(expect), "%s0x%08x", k > lo ? " or " : "",
               (unsigned)IDX_MAGIC(k));
    if (hdr[0] || hdr[1])
      snprintf(why, sizeof why, "not an IDX file (its first two bytes are not zero)");
    else if (hdr[2] != IDX_UBYTE)
      snprintf(why, sizeof why, "element type 0x%02x, not 0x08 (unsigned bytes)", hdr[2]);
    else if (lo == hi)
      snprintf(why, sizeof why, "%d dimension%s, not %d", nd, nd == 1 ? "" : "s", lo);
    else
      snprintf(why, sizeof why, "%d dimension%s, not %d to %d", nd, nd == 1 ? "" : "s", lo, hi);
    syno_error_set(err, "%s: bad magic number 0x%08x; expected %s (an IDX %s file): %s", path, (unsigned)be32(hdr),
                   expect, what, why);
    gzclose(f);
    return NULL;
  }
  if (got == 4) {
    want = 4 + 4 * (int64_t)nd;
    got += read_bytes(f, hdr + 4, want - 4);
  }
  if (got != want) {
    /* A zlib error with a complete header is left for the payload read to report. */
    const char *zp = gz_problem(f, path);
    syno_error_set(err,
                   "%s: %s: the IDX header needs %lld bytes, got %lld%s%s%s; expected "
                   "an IDX %s file",
                   path, zp ? "corrupt gzip data" : "file too short", (long long)want, (long long)got, zp ? " (" : "",
                   zp ? zp : "", zp ? ")" : "", what);
    gzclose(f);
    return NULL;
  }
  for (int i = 0; i < nd; i++) dims[i] = be32(hdr + 4 + 4 * i);
  *ndim = nd;
  return f;
}

/* Reads exactly len payload bytes into a buffer of its own (*out, malloc'd) and checks that the
 * file ends right after them. The buffer grows as the bytes arrive (16 MiB at a time), so a header
 * that announces more than the file holds costs no more memory than the file: a 40-byte file
 * claiming 4 GB of pixels is a "truncated" error, not a 4 GB allocation. */
static int idx_payload(gzFile f, const char *path, int64_t len, const char *what, uint8_t **out, syno_error_t *err) {
  const int64_t chunk = 16 << 20;
  uint8_t *buf = NULL;
  size_t cap = 0;
  int64_t got = 0;
  *out = NULL;
  while (got < len) {
    int64_t want = len - got < chunk ? len - got : chunk;
    if (syno_grow((void **)&buf, &cap, (size_t)(got + want), 1)) {
      free(buf);
      return syno_error_set(err, "%s: out of memory for the %lld bytes of %s", path, (long long)len, what);
    }
    int64_t r = read_bytes(f, buf + got, want);
    got += r;
    if (r < want) break;
  }
  const char *zp = gz_problem(f, path);
  int rc = 0;
  if (zp)
    rc = syno_error_set(err,
                        "%s: corrupt or truncated gzip data (%s) while reading the "
                        "%lld bytes of %s after the header",
                        path, zp, (long long)len, what);
  else if (got != len)
    rc = syno_error_set(err,
                        "%s: truncated: expected %lld bytes of %s after the header, "
                        "got %lld",
                        path, (long long)len, what, (long long)got);
  if (!rc) {
    unsigned char extra;
    int r = gzread(f, &extra, 1);
    zp = gz_problem(f, path);
    if (r > 0)
      rc = syno_error_set(err,
                          "%s: unexpected bytes after the %lld bytes of %s the header "
                          "announces",
                          path, (long long)len, what);
    else if (r < 0 || zp)
      rc = syno_error_set(err, "%s: corrupt gzip data at its end (%s)", path, zp ? zp : "read error");
  }
  if (rc)
    free(buf);
  else
    *out = buf;
  return rc;
}

/* An IDX image file and its label file, their headers checked against each other: n images
 * of c x h x w (c = 1 for a 3-D image file), n labels; both left at their payloads. */
typedef struct {
  const char *ipath, *lpath;
  gzFile fi, fl;
  int64_t n, c, h, w;
} idx_pair_t;

static void idx_pair_close(idx_pair_t *p) {
  if (p->fi) gzclose(p->fi);
  if (p->fl) gzclose(p->fl);
  p->fi = p->fl = NULL;
}

/* chw: the image file may also be 4-D, [n, c, h, w]. */
static int idx_pair_open(idx_pair_t *p, const char *ip, const char *lp, int chw, syno_error_t *err) {
  memset(p, 0, sizeof *p);
  p->ipath = ip;
  p->lpath = lp;
  uint32_t d[IDX_MAX_DIMS], nl;
  int nd, one;
  p->fi = idx_open(ip, 3, chw ? 4 : 3,
                   chw ? "unsigned-byte image (N x C x H x W or N x H x W)" : "unsigned-byte image (3-D)", d, &nd, err);
  if (!p->fi) return -1;
  p->fl = idx_open(lp, 1, 1, "unsigned-byte label (1-D)", &nl, &one, err);
  if (!p->fl) {
    idx_pair_close(p);
    return -1;
  }
  p->n = d[0];
  p->c = nd == 4 ? d[1] : 1;
  p->h = d[nd - 2];
  p->w = d[nd - 1];
  int rc = 0;
  if (p->n == 0)
    rc = syno_error_set(err, "%s: holds no images (the header's count is 0); expected at least one", ip);
  else if (p->c < 1 || p->c > SYNO_DATA_MAX_CHANNELS)
    rc =
        syno_error_set(err, "%s: images of %lld channels; expected 1..%d", ip, (long long)p->c, SYNO_DATA_MAX_CHANNELS);
  else if (p->h < 1 || p->w < 1 || p->h > SYNO_DATA_MAX_SIDE || p->w > SYNO_DATA_MAX_SIDE)
    rc = syno_error_set(err, "%s: images of %lldx%lld; expected sides of 1..%d", ip, (long long)p->h, (long long)p->w,
                        SYNO_DATA_MAX_SIDE);
  else if ((int64_t)nl != p->n)
    rc = syno_error_set(err,
                        "%s: holds %lld labels, but %s holds %lld images; expected "
                        "one label per image",
                        lp, (long long)nl, ip, (long long)p->n);
  if (rc) idx_pair_close(p);
  return rc;
}

static int idx_pixels(idx_pair_t *p, uint8_t **px, syno_error_t *err) {
  return idx_payload(p->fi, p->ipath, p->n * p->c * p->h * p->w, "pixel data", px, err);
}

static int idx_labels(idx_pair_t *p, uint8_t **lab, syno_error_t *err) {
  return idx_payload(p->fl, p->lpath, p->n, "labels", lab, err);
}

/* The pair's data set: it takes px (freed on failure) and copies the labels, each below
 * nclasses. */
static int idx_dataset(const idx_pair_t *p, uint8_t *px, const uint8_t *lab, int nclasses, const char *name,
                       syno_dataset_t *out, syno_error_t *err) {
  if (ds_alloc(out, p->n, p->c, p->h, p->w, nclasses, name)) {
    free(px);
    return syno_error_set(err, "%s: out of memory for %lld images", p->ipath, (long long)p->n);
  }
  free(out->pixels);
  out->pixels = px;
  for (int64_t i = 0; i < p->n; i++) {
    if (lab[i] >= nclasses) {
      syno_data_free(out);
      return syno_error_set(err, "%s: label %d at index %lld; expected 0..%d", p->lpath, lab[i], (long long)i,
                            nclasses - 1);
    }
    out->labels[i] = lab[i];
  }
  return 0;
}

int syno_data_load_idx(const char *images_path, const char *labels_path, int nclasses, syno_dataset_t *out,
                       syno_error_t *err) {
  memset(out, 0, sizeof *out);
  idx_pair_t p;
  if (idx_pair_open(&p, images_path, labels_path, 0, err)) return -1;
  uint8_t *px = NULL, *lab = NULL;
  /* The payloads first: only once they have arrived is the count known to be real. */
  int rc = idx_pixels(&p, &px, err) || idx_labels(&p, &lab, err) ? -1 : 0;
  if (rc)
    free(px);
  else
    rc = idx_dataset(&p, px, lab, nclasses, "idx", out, err);
  free(lab);
  idx_pair_close(&p);
  if (!rc) out->scale[0] = 1.0f / 255.0f;
  return rc;
}

/* ---------------------------------------------------------------- an image set in IDX files */

static const char *const image_splits[2] = {"train", "test"};

/* dir/<split>-<kind>.idx, or .idx.gz: whichever exists (both is an error: which one is meant?). */
static int images_file(const char *dir, const char *split, const char *kind, char *path, size_t len,
                       syno_error_t *err) {
  snprintf(path, len, "%s/%s-%s.idx", dir, split, kind);
  size_t n = strlen(path);
  if (n + 4 > len) return syno_error_set(err, "%s: path too long", dir);
  int plain = access(path, F_OK) == 0;
  memcpy(path + n, ".gz", 4);
  int zipped = access(path, F_OK) == 0;
  path[n] = 0;
  if (plain && zipped) return syno_error_set(err, "%s and %s.gz both exist; keep one of them", path, path);
  if (!plain && !zipped)
    return syno_error_set(err,
                          "%s: no such file, nor %s.gz; expected the IDX files train-images, train-labels, "
                          "test-images and test-labels (.idx or .idx.gz; docs/train.md)",
                          path, path);
  if (zipped) memcpy(path + n, ".gz", 4);
  return 0;
}

/* Both splits of dir with their headers checked, their labels read and the class count. */
typedef struct {
  char ipath[2][4096], lpath[2][4096];
  idx_pair_t pair[2];
  uint8_t *lab[2];
  int classes;
} images_t;

static void images_close(images_t *s) {
  for (int i = 0; i < 2; i++) {
    idx_pair_close(&s->pair[i]);
    free(s->lab[i]);
    s->lab[i] = NULL;
  }
}

static int images_open(const char *dir, images_t *s, syno_error_t *err) {
  memset(s, 0, sizeof *s);
  int rc = 0;
  for (int i = 0; !rc && i < 2; i++)
    if (images_file(dir, image_splits[i], "images", s->ipath[i], sizeof s->ipath[i], err) ||
        images_file(dir, image_splits[i], "labels", s->lpath[i], sizeof s->lpath[i], err) ||
        idx_pair_open(&s->pair[i], s->ipath[i], s->lpath[i], 1, err) || idx_labels(&s->pair[i], &s->lab[i], err))
      rc = -1;
  const idx_pair_t *a = &s->pair[0], *b = &s->pair[1];
  if (!rc && (a->c != b->c || a->h != b->h || a->w != b->w))
    rc = syno_error_set(err,
                        "%s: images of %lld x %lld x %lld (C x H x W), but %s holds %lld x %lld x %lld; expected "
                        "the training images' shape",
                        b->ipath, (long long)b->c, (long long)b->h, (long long)b->w, a->ipath, (long long)a->c,
                        (long long)a->h, (long long)a->w);
  int top = 0;
  for (int i = 0; !rc && i < 2; i++)
    for (int64_t j = 0; j < s->pair[i].n; j++)
      if (s->lab[i][j] > top) top = s->lab[i][j];
  if (!rc && top == 0)
    rc = syno_error_set(err, "%s, %s: every label is 0; expected at least two classes (labels 0..K-1)", a->lpath,
                        b->lpath);
  s->classes = top + 1;
  if (rc) images_close(s);
  return rc;
}

int syno_data_images_shape(const char *dir, int64_t *c, int64_t *h, int64_t *w, int *classes, syno_error_t *err) {
  images_t s;
  if (images_open(dir, &s, err)) return -1;
  *c = s.pair[0].c;
  *h = s.pair[0].h;
  *w = s.pair[0].w;
  *classes = s.classes;
  images_close(&s);
  return 0;
}

/* Both splits' per-channel scale and shift: the mean and standard deviation of the training
 * images' v/255, from a histogram of each channel's byte values (exact counts whatever the
 * set's size). A channel whose pixels are all equal is only centred (v/255 - mean). */
static void images_normalise(syno_dataset_t *train, syno_dataset_t *test) {
  const int64_t plane = train->h * train->w;
  for (int64_t ch = 0; ch < train->c; ch++) {
    uint64_t hist[256] = {0};
    for (int64_t i = 0; i < train->n; i++) {
      const uint8_t *p = train->pixels + (i * train->c + ch) * plane;
      for (int64_t j = 0; j < plane; j++) hist[p[j]]++;
    }
    const double count = (double)train->n * (double)plane;
    double mean = 0, var = 0;
    for (int v = 0; v < 256; v++) mean += (double)hist[v] * (v / 255.0);
    mean /= count;
    for (int v = 0; v < 256; v++) var += (double)hist[v] * (v / 255.0 - mean) * (v / 255.0 - mean);
    const double sd = var > 0 ? sqrt(var / count) : 1.0;
    train->scale[ch] = test->scale[ch] = (float)(1.0 / (255.0 * sd));
    train->shift[ch] = test->shift[ch] = (float)(-mean / sd);
  }
}

int syno_data_load_images(const char *dir, syno_dataset_t *train, syno_dataset_t *test, syno_error_t *err) {
  memset(train, 0, sizeof *train);
  memset(test, 0, sizeof *test);
  images_t s;
  if (images_open(dir, &s, err)) return -1;
  syno_dataset_t *out[2] = {train, test};
  int rc = 0;
  for (int i = 0; !rc && i < 2; i++) {
    uint8_t *px = NULL;
    char name[16];
    snprintf(name, sizeof name, "images-%s", image_splits[i]);
    if (idx_pixels(&s.pair[i], &px, err) || idx_dataset(&s.pair[i], px, s.lab[i], s.classes, name, out[i], err))
      rc = -1;
  }
  images_close(&s);
  if (rc) {
    syno_data_free(train);
    syno_data_free(test);
    return -1;
  }
  images_normalise(train, test);
  return 0;
}

int syno_data_load_fashion_mnist(const char *dir, int train, syno_dataset_t *out, syno_error_t *err) {
  char ip[4096], lp[4096];
  const char *split = train ? "train" : "t10k";
  if (!dir) dir = SYNO_FASHION_MNIST_DIR;
  memset(out, 0, sizeof *out);
  snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte.gz", dir, split);
  snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte.gz", dir, split);
  const char *paths[2] = {ip, lp};
  for (int i = 0; i < 2; i++)
    if (access(paths[i], R_OK) != 0)
      return syno_error_set(err,
                            "%s: cannot read (%s); expected the Fashion-MNIST %s "
                            "file (Debian package dataset-fashion-mnist)",
                            paths[i], strerror(errno), i ? "labels" : "images");
  if (syno_data_load_idx(ip, lp, 10, out, err)) return -1;
  if (out->h != 28 || out->w != 28) {
    syno_error_set(err, "%s: images are %lldx%lld; expected 28x28 Fashion-MNIST images", ip, (long long)out->h,
                   (long long)out->w);
    syno_data_free(out);
    return -1;
  }
  out->scale[0] = (float)(1.0 / (255.0 * SYNO_FASHION_MNIST_STD));
  out->shift[0] = (float)(-SYNO_FASHION_MNIST_MEAN / SYNO_FASHION_MNIST_STD);
  snprintf(out->name, sizeof out->name, "fashion-mnist-%s", train ? "train" : "test");
  return 0;
}

/* ---------------------------------------------------------------- CIFAR */

/* Reads the records of one CIFAR file into the growing arrays px/lab (n so far): every
 * record whole, every label below nclasses. */
static int cifar_file(const char *path, int label_bytes, int which_label, int nclasses, uint8_t **px, int32_t **lab,
                      int64_t *n, int64_t *cap, syno_error_t *err) {
  gzFile f = syno_nn_gzopen(path, err);
  if (!f) return -1;
  enum { PIX = 3 * 32 * 32 };
  unsigned char rec[2 + PIX];
  const int len = label_bytes + PIX;
  int rc = 0;
  for (;;) {
    int got = gzread(f, rec, (unsigned)len);
    if (got == 0) break;
    if (got < 0 || gz_problem(f, path)) {
      const char *why = gz_problem(f, path);
      rc = syno_error_set(err, "%s: %s", path, why ? why : "read error");
      break;
    }
    if (got != len) {
      rc = syno_error_set(err, "%s: truncated: record %lld has %d of its %d bytes", path, (long long)*n, got, len);
      break;
    }
    if (rec[which_label] >= nclasses) {
      rc = syno_error_set(err, "%s: record %lld has label %d; expected 0..%d", path, (long long)*n, rec[which_label],
                          nclasses - 1);
      break;
    }
    if (*n == *cap) {
      int64_t nc = *cap ? 2 * *cap : 1024;
      uint8_t *p = realloc(*px, (size_t)(nc * PIX));
      if (p) *px = p;
      int32_t *l = p ? realloc(*lab, (size_t)nc * sizeof **lab) : NULL;
      if (l) *lab = l;
      if (!p || !l) {
        rc = syno_error_set(err, "%s: out of memory", path);
        break;
      }
      *cap = nc;
    }
    memcpy(*px + *n * PIX, rec + label_bytes, PIX);
    (*lab)[*n] = rec[which_label];
    (*n)++;
  }
  gzclose(f);
  return rc;
}

int syno_data_load_cifar(const char *dir, syno_cifar_t which, int train, syno_dataset_t *out, syno_error_t *err) {
  /* The published per-channel statistics of v/255 over each training set. */
  static const double mean[2][3] = {{0.4914, 0.4822, 0.4465}, {0.5071, 0.4865, 0.4409}},
                      sd[2][3] = {{0.2470, 0.2435, 0.2616}, {0.2673, 0.2564, 0.2762}};
  memset(out, 0, sizeof *out);
  const int c100 = which != SYNO_CIFAR10, nclasses = which == SYNO_CIFAR10 ? 10 : which == SYNO_CIFAR100 ? 100 : 20;
  const char *files10[] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
                           "data_batch_5.bin"};
  const char *one = c100 ? (train ? "train.bin" : "test.bin") : "test_batch.bin";
  const int nfiles = !c100 && train ? 5 : 1;
  uint8_t *px = NULL;
  int32_t *lab = NULL;
  int64_t n = 0, cap = 0;
  int rc = 0;
  for (int i = 0; !rc && i < nfiles; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, nfiles > 1 ? files10[i] : one);
    if (access(path, R_OK) != 0) {
      rc = syno_error_set(err, "%s: cannot read (%s); expected the CIFAR-%s binary version's %s", path,
                          strerror(errno), c100 ? "100" : "10",
                          c100 ? "train.bin and test.bin" : "data_batch_1.bin .. data_batch_5.bin and test_batch.bin");
      break;
    }
    rc = cifar_file(path, c100 ? 2 : 1, which == SYNO_CIFAR100 ? 1 : 0, nclasses, &px, &lab, &n, &cap, err);
  }
  if (!rc && n == 0) rc = syno_error_set(err, "%s: no CIFAR records", dir);
  if (!rc && ds_alloc(out, n, 3, 32, 32, nclasses, "cifar")) rc = syno_error_set(err, "%s: out of memory", dir);
  if (rc) {
    free(px);
    free(lab);
    return -1;
  }
  free(out->pixels);
  free(out->labels);
  out->pixels = px;
  out->labels = lab;
  for (int ch = 0; ch < 3; ch++) {
    out->scale[ch] = (float)(1.0 / (255.0 * sd[c100][ch]));
    out->shift[ch] = (float)(-mean[c100][ch] / sd[c100][ch]);
  }
  snprintf(out->name, sizeof out->name, "%s-%s", which == SYNO_CIFAR10 ? "cifar10" : "cifar100",
           train ? "train" : "test");
  return 0;
}

/* ---------------------------------------------------------------- splits */

static int ds_take(const syno_dataset_t *src, const int64_t *idx, int64_t n, syno_dataset_t *dst) {
  if (ds_alloc(dst, n, src->c, src->h, src->w, src->nclasses, src->name)) return -1;
  const int64_t sz = src->c * src->h * src->w;
  for (int64_t i = 0; i < n; i++) {
    memcpy(dst->pixels + i * sz, src->pixels + idx[i] * sz, (size_t)sz);
    dst->labels[i] = src->labels[idx[i]];
  }
  memcpy(dst->scale, src->scale, sizeof dst->scale);
  memcpy(dst->shift, src->shift, sizeof dst->shift);
  return 0;
}

int syno_data_split(const syno_dataset_t *src, int64_t n_test, syno_rng_t *rng, syno_dataset_t *train,
                    syno_dataset_t *test, syno_error_t *err) {
  if (train) memset(train, 0, sizeof *train);
  memset(test, 0, sizeof *test);
  if (n_test < 0 || n_test > src->n)
    return syno_error_set(err, "%s: cannot take %lld samples out of %lld", src->name, (long long)n_test,
                          (long long)src->n);
  const int k = src->nclasses;
  int64_t *count = calloc((size_t)k, sizeof *count), *quota = calloc((size_t)k, sizeof *quota);
  int64_t *rem = calloc((size_t)k, sizeof *rem), *start = calloc((size_t)k + 1, sizeof *start);
  int64_t *byclass = malloc((size_t)(src->n > 0 ? src->n : 1) * sizeof *byclass);
  /* pick first holds one fill cursor per class, then sample indices: a set with fewer samples than
   * classes needs k entries. */
  int64_t *pick = malloc((size_t)(src->n > k ? src->n : k > 0 ? k : 1) * sizeof *pick);
  unsigned char *in_test = calloc((size_t)(src->n > 0 ? src->n : 1), 1);
  int rc = 0;
  if (!count || !quota || !rem || !start || !byclass || !pick || !in_test) {
    rc = syno_error_set(err, "%s: out of memory while splitting", src->name);
    goto done;
  }
  for (int64_t i = 0; i < src->n; i++)
    if (src->labels[i] < 0 || src->labels[i] >= k) {
      rc = syno_error_set(err, "%s: sample %lld has label %d; expected 0..%d", src->name, (long long)i, src->labels[i],
                          k - 1);
      goto done;
    }
  syno_data_class_counts(src, count);
  /* Largest-remainder apportionment of n_test over the classes. */
  int64_t given = 0;
  for (int c = 0; c < k; c++) {
    quota[c] = src->n ? n_test * count[c] / src->n : 0;
    rem[c] = src->n ? n_test * count[c] % src->n : 0;
    given += quota[c];
  }
  while (given < n_test) {
    int best = -1;
    for (int c = 0; c < k; c++)
      if (quota[c] < count[c] && (best < 0 || rem[c] > rem[best])) best = c;
    if (best < 0) break;
    quota[best]++;
    rem[best] = -1;
    given++;
  }
  for (int c = 0; c < k; c++) start[c + 1] = start[c] + count[c];
  memcpy(pick, start, (size_t)k * sizeof *pick); /* fill cursors */
  for (int64_t i = 0; i < src->n; i++) byclass[pick[src->labels[i]]++] = i;
  int64_t nt = 0;
  for (int c = 0; c < k; c++) {
    syno_rng_shuffle(rng, byclass + start[c], count[c]);
    for (int64_t j = 0; j < quota[c]; j++) in_test[byclass[start[c] + j]] = 1;
  }
  for (int64_t i = 0; i < src->n; i++)
    if (in_test[i]) pick[nt++] = i;
  if (ds_take(src, pick, nt, test)) {
    rc = syno_error_set(err, "%s: out of memory while splitting", src->name);
    goto done;
  }
  if (train) {
    int64_t nr = 0;
    for (int64_t i = 0; i < src->n; i++)
      if (!in_test[i]) pick[nr++] = i;
    if (ds_take(src, pick, nr, train)) {
      syno_data_free(test);
      rc = syno_error_set(err, "%s: out of memory while splitting", src->name);
    }
  }
done:
  free(count);
  free(quota);
  free(rem);
  free(start);
  free(byclass);
  free(pick);
  free(in_test);
  return rc;
}

int syno_data_subset(const syno_dataset_t *src, int64_t n, syno_rng_t *rng, syno_dataset_t *out, syno_error_t *err) {
  return syno_data_split(src, n, rng, NULL, out, err);
}

int syno_data_pad(syno_dataset_t *ds, int pad, syno_error_t *err) {
  if (pad < 0 || pad > 64) return syno_error_set(err, "pad must be in 0..64 (got %d)", pad);
  if (pad == 0) return 0;
  int64_t h = ds->h + 2 * pad, w = ds->w + 2 * pad, plane = ds->h * ds->w;
  uint8_t *px = calloc((size_t)(ds->n * ds->c * h * w) + 1, 1);
  if (!px) return syno_error_set(err, "out of memory padding %s to %lldx%lld", ds->name, (long long)h, (long long)w);
  for (int64_t i = 0; i < ds->n * ds->c; i++)
    for (int64_t y = 0; y < ds->h; y++)
      memcpy(px + i * h * w + (y + pad) * w + pad, ds->pixels + i * plane + y * ds->w, (size_t)ds->w);
  free(ds->pixels);
  ds->pixels = px;
  ds->h = h;
  ds->w = w;
  return 0;
}

int syno_data_gather(const syno_dataset_t *ds, const int64_t *idx, int64_t n, syno_tensor_t *x, int32_t *labels) {
  int64_t dims[4] = {n, ds->c, ds->h, ds->w};
  int rc = syno_nn_tensor_resize(x, 4, dims);
  if (rc) return rc;
  const int64_t sz = ds->c * ds->h * ds->w;
  for (int64_t i = 0; i < n; i++) {
    if (idx[i] < 0 || idx[i] >= ds->n) return SYNO_NN_ERANGE;
    const uint8_t *p = ds->pixels + idx[i] * sz;
    float *q = x->data + i * sz;
    const int64_t plane = ds->h * ds->w;
    for (int64_t ch = 0; ch < ds->c; ch++) {
      const float a = ds->scale[ch], b = ds->shift[ch];
      for (int64_t j = ch * plane; j < (ch + 1) * plane; j++) q[j] = (float)p[j] * a + b;
    }
    if (labels) labels[i] = ds->labels[idx[i]];
  }
  return SYNO_NN_OK;
}

int syno_data_augment(syno_tensor_t *x, int pad, int flip, syno_rng_t *rng) {
  if (x->ndim != 4 || pad < 0) return SYNO_NN_ESHAPE;
  const int64_t c = x->dims[1], h = x->dims[2], w = x->dims[3], sz = c * h * w;
  float *tmp = malloc(sizeof(float) * (size_t)(sz > 0 ? sz : 1));
  if (!tmp) return SYNO_NN_ENOMEM;
  for (int64_t i = 0; i < x->dims[0]; i++) {
    float *img = x->data + i * sz;
    const int64_t dy = (int64_t)(syno_rng_uniform(rng) * (2 * pad + 1)) - pad,
                  dx = (int64_t)(syno_rng_uniform(rng) * (2 * pad + 1)) - pad;
    const int mirror = flip && syno_rng_uniform(rng) < 0.5;
    memcpy(tmp, img, sizeof(float) * (size_t)sz);
    for (int64_t ch = 0; ch < c; ch++)
      for (int64_t y = 0; y < h; y++)
        for (int64_t xx = 0; xx < w; xx++) {
          const int64_t sy = y + dy, sx = (mirror ? w - 1 - xx : xx) + dx;
          img[(ch * h + y) * w + xx] = sy >= 0 && sy < h && sx >= 0 && sx < w ? tmp[(ch * h + sy) * w + sx] : 0.0f;
        }
  }
  free(tmp);
  return SYNO_NN_OK;
}

void syno_data_class_counts(const syno_dataset_t *ds, int64_t *counts) {
  for (int c = 0; c < ds->nclasses; c++) counts[c] = 0;
  for (int64_t i = 0; i < ds->n; i++)
    if (ds->labels[i] >= 0 && ds->labels[i] < ds->nclasses) counts[ds->labels[i]]++;
}
