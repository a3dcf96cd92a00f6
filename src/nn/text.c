/* Character-level text data: reading (through zlib, so gzip and plain files alike), the
 * fixed train/validation split and window gathering. See syno/data.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "nn_internal.h"

#include "syno/data.h"
#include "syno/grow.h"

#define TEXT_MAX_BYTES (64 << 20)

void syno_text_free(syno_text_t *t) {
  if (!t) return;
  free(t->ids);
  memset(t, 0, sizeof *t);
}

static int text_part(const uint8_t *ids, int64_t n, const syno_text_t *like, const char *name, syno_text_t *out) {
  memset(out, 0, sizeof *out);
  out->ids = malloc((size_t)(n > 0 ? n : 1));
  if (!out->ids) return -1;
  memcpy(out->ids, ids, (size_t)n);
  out->n = n;
  out->vocab = like->vocab;
  memcpy(out->chars, like->chars, sizeof out->chars);
  snprintf(out->name, sizeof out->name, "%s", name);
  return 0;
}

int syno_text_load(const char *path, syno_text_t *train, syno_text_t *val, syno_error_t *err) {
  memset(train, 0, sizeof *train);
  memset(val, 0, sizeof *val);
  gzFile f = syno_nn_gzopen(path, err);
  if (!f) return -1;
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  int k = 0;
  while (buf && (k = gzread(f, buf + n, (unsigned)(cap - n))) > 0) {
    n += (size_t)k;
    if (n > TEXT_MAX_BYTES) {
      free(buf);
      gzclose(f);
      return syno_error_set(err, "%s: larger than %d bytes", path, TEXT_MAX_BYTES);
    }
    if (n == cap && syno_grow((void **)&buf, &cap, cap + 1, 1)) {
      free(buf);
      buf = NULL;
    }
  }
  int code = Z_OK;
  const char *msg = buf ? gzerror(f, &code) : NULL;
  if (buf && k < 0) {
    char m[128];
    snprintf(m, sizeof m, "%s", msg ? msg : "read error");
    free(buf);
    gzclose(f);
    return syno_error_set(err, "%s: %s", path, m);
  }
  gzclose(f);
  if (!buf) return syno_error_set(err, "out of memory");
  int seen[256] = {0};
  for (size_t i = 0; i < n; i++) seen[buf[i]] = 1;
  syno_text_t all = {0};
  int map[256];
  for (int c = 0; c < 256; c++)
    if (seen[c]) {
      map[c] = all.vocab;
      all.chars[all.vocab++] = (unsigned char)c;
    }
  if (n < 16 || all.vocab < 2) {
    free(buf);
    return syno_error_set(err, "%s: too short or a single character (%zu bytes)", path, n);
  }
  for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)map[buf[i]];
  size_t cut = (size_t)((uint64_t)n * SYNO_TEXT_VAL_NUM / SYNO_TEXT_VAL_DEN);
  /* the first line start at or after the cut (the byte after a newline) */
  int nl = seen['\n'] ? map['\n'] : -1;
  while (cut < n && cut > 0 && (int)buf[cut - 1] != nl) cut++;
  if (cut >= n) cut = (size_t)((uint64_t)n * SYNO_TEXT_VAL_NUM / SYNO_TEXT_VAL_DEN);
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (text_part(buf, (int64_t)cut, &all, base, train) || text_part(buf + cut, (int64_t)(n - cut), &all, base, val)) {
    free(buf);
    syno_text_free(train);
    syno_text_free(val);
    return syno_error_set(err, "out of memory");
  }
  free(buf);
  return 0;
}

int64_t syno_text_windows(const syno_text_t *t, int64_t context) {
  if (context < 1 || t->n < 2) return 0;
  return (t->n - 1) / context;
}

int syno_text_gather(const syno_text_t *t, int64_t context, const int64_t *idx, int64_t m, syno_tensor_t *x,
                     int32_t *labels) {
  int64_t nw = syno_text_windows(t, context);
  int64_t d[2] = {m, context};
  int rc = syno_nn_tensor_resize(x, 2, d);
  if (rc) return rc;
  for (int64_t i = 0; i < m; i++) {
    if (idx[i] < 0 || idx[i] >= nw) return SYNO_NN_ERANGE;
    const uint8_t *w = t->ids + idx[i] * context;
    for (int64_t j = 0; j < context; j++) {
      x->data[i * context + j] = (float)w[j];
      if (labels) labels[i * context + j] = w[j + 1];
    }
  }
  return SYNO_NN_OK;
}
