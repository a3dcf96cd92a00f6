/* syno/file.h - input files that are files.
 *
 * Every file syno reads because a user named it (a spec, an operator file, a data set, a
 * database) or appends to (a search log) is opened here first: a FIFO, a device or a
 * directory is refused at once with a message naming it, instead of being read (or waited
 * on) forever; what is read whole is read with a size limit.
 *
 *   syno_open_regular  open(path, flags, mode) without blocking, kept only when path is a
 *                      regular file (with O_CREAT: or does not exist yet); returns the
 *                      descriptor (blocking again, close-on-exec) or -1 with err set
 *   syno_read_regular  the whole regular file, at most max bytes (more is an error naming the
 *                      limit), NUL-terminated, into a syno_malloc'd buffer; *len (may be NULL)
 *                      its length; NULL with err set
 */
#ifndef SYNO_FILE_H
#define SYNO_FILE_H

#include <stddef.h>

#include "syno/error.h"

int syno_open_regular(const char *path, int flags, int mode, syno_error_t *err);
char *syno_read_regular(const char *path, size_t max, size_t *len, syno_error_t *err);

#endif
