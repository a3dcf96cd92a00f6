/* Error formatting shared by every module. */
#include "syno/error.h"

#include <stdio.h>
#include <string.h>

int syno_error_vset(syno_error_t *err, const char *fmt, va_list ap) {
  if (err) vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  return -1;
}

int syno_error_set(syno_error_t *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  syno_error_vset(err, fmt, ap);
  va_end(ap);
  return -1;
}

int syno_error_prefix(syno_error_t *err, const char *fmt, ...) {
  if (!err) return -1;
  char prefix[SYNO_ERROR_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  /* Shift the old message right by the prefix and ": ", truncating its end. */
  size_t pl = strlen(prefix), room = sizeof err->msg - 1;
  if (pl + 2 > room) pl = room - 2;
  memmove(err->msg + pl + 2, err->msg, room - pl - 2);
  err->msg[room] = 0;
  memcpy(err->msg, prefix, pl);
  memcpy(err->msg + pl, ": ", 2);
  return -1;
}
