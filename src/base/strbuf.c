/* Bounded appending with snprintf semantics (see syno/strbuf.h). */
#include "syno/strbuf.h"

#include <stdarg.h>
#include <stdio.h>

void syno_strbuf_init(syno_strbuf_t *b, char *buf, size_t n) {
  b->buf = buf;
  b->n = n;
  b->len = 0;
  if (n) buf[0] = 0;
}

void syno_strbuf_printf(syno_strbuf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  size_t at = b->len < b->n ? b->len : b->n;
  int w = vsnprintf(b->buf + at, b->n - at, fmt, ap);
  va_end(ap);
  if (w > 0) b->len += (size_t)w;
}
