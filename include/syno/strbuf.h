/* syno/strbuf.h - appending formatted text to a caller's fixed buffer.
 *
 * Every printer in syno has snprintf semantics: it writes what fits, always
 * NUL-terminates, and reports the length the whole text would have had, so
 * a caller can detect truncation. This is the one helper they share. */
#ifndef SYNO_STRBUF_H
#define SYNO_STRBUF_H

#include <stddef.h>

typedef struct {
  char *buf;
  size_t n;   /* capacity, including the NUL */
  size_t len; /* length of the full text so far (may exceed n - 1) */
} syno_strbuf_t;

void syno_strbuf_init(syno_strbuf_t *b, char *buf, size_t n);
void syno_strbuf_printf(syno_strbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
