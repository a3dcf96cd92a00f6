/* Input files that are files (see syno/file.h). */
#include "syno/file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "syno/alloc.h"

int syno_open_regular(const char *path, int flags, int mode, syno_error_t *err) {
  /* O_NONBLOCK: opening a FIFO must not wait for its other end. */
  int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC, mode);
  if (fd < 0) {
    if (errno == ENXIO) return syno_error_set(err, "%s is not a regular file (a FIFO without a reader)", path);
    return syno_error_set(err, "%s: cannot open (%s)", path, strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st)) {
    int e = errno;
    close(fd);
    return syno_error_set(err, "%s: cannot open (%s)", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    const char *what = S_ISFIFO(st.st_mode)                          ? "a FIFO"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                       : S_ISDIR(st.st_mode)                         ? "a directory"
                                                                     : "not a file";
    return syno_error_set(err, "%s is %s, not a regular file", path, what);
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

char *syno_read_regular(const char *path, size_t max, size_t *len, syno_error_t *err) {
  int fd = syno_open_regular(path, O_RDONLY, 0, err);
  if (fd < 0) return NULL;
  struct stat st;
  if (fstat(fd, &st) == 0 && (unsigned long long)st.st_size > max) {
    close(fd);
    syno_error_set(err, "%s is %lld bytes, more than the %zu this file may have", path, (long long)st.st_size, max);
    return NULL;
  }
  size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096, n = 0;
  char *buf = syno_malloc(cap);
  if (!buf) {
    close(fd);
    syno_error_set(err, "out of memory");
    return NULL;
  }
  for (;;) {
    if (n + 1 >= cap) {
      if (cap > max) {
        syno_free(buf);
        close(fd);
        syno_error_set(err, "%s is more than the %zu bytes this file may have", path, max);
        return NULL;
      }
      char *b = syno_realloc(buf, cap * 2);
      if (!b) {
        syno_free(buf);
        close(fd);
        syno_error_set(err, "out of memory");
        return NULL;
      }
      buf = b, cap *= 2;
    }
    ssize_t r = read(fd, buf + n, cap - n - 1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      syno_free(buf);
      close(fd);
      syno_error_set(err, "reading %s: %s", path, strerror(e));
      return NULL;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  if (n > max) {
    syno_free(buf);
    syno_error_set(err, "%s is more than the %zu bytes this file may have", path, max);
    return NULL;
  }
  buf[n] = 0;
  if (len) *len = n;
  return buf;
}
