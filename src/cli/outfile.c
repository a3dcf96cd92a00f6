/* Output files written whole or not at all (see cli.h). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

int cli_outfile_open(const char *cmd, const char *path, cli_outfile_t *o) {
  memset(o, 0, sizeof *o);
  struct stat st;
  /* An existing link is followed: its target is replaced, the link stays a link. */
  char *real = lstat(path, &st) == 0 && S_ISLNK(st.st_mode) ? realpath(path, NULL) : NULL;
  snprintf(o->path, sizeof o->path, "%s", real ? real : path);
  free(real);
  if (stat(o->path, &st) == 0 && !S_ISREG(st.st_mode)) {
    /* A device or a FIFO is written as it is: it cannot be replaced, nor removed. */
    o->direct = true;
    if (!(o->f = fopen(o->path, "w"))) return cli_cmd_error(cmd, "%s: %s", path, strerror(errno));
    return 0;
  }
  const char *slash = strrchr(o->path, '/');
  int dir_len = slash ? (int)(slash - o->path) + 1 : 0;
  if (snprintf(o->tmp, sizeof o->tmp, "%.*s.syno-tmp-XXXXXX", dir_len, o->path) >= (int)sizeof o->tmp)
    return cli_cmd_error(cmd, "%s: the path is too long", path);
  int fd = mkstemp(o->tmp);
  if (fd < 0) return cli_cmd_error(cmd, "%s: cannot create a file beside it: %s", path, strerror(errno));
  /* The new file gets what the old had, or what a new one would (0666 less the umask). */
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, stat(o->path, &st) == 0 ? st.st_mode & 07777 : 0666 & ~mask);
  if (!(o->f = fdopen(fd, "w"))) {
    int e = errno;
    close(fd);
    unlink(o->tmp);
    return cli_cmd_error(cmd, "%s: %s", path, strerror(e));
  }
  return 0;
}

int cli_outfile_close(const char *cmd, cli_outfile_t *o, int rc) {
  if (!o->f) return rc;
  int bad = fflush(o->f) || ferror(o->f);
  int e = errno;
  if (fclose(o->f)) bad = 1, e = errno;
  o->f = NULL;
  if (bad && !rc) {
    fprintf(stderr, "syno %s: writing %s: %s\n", cmd, o->path, strerror(e));
    rc = SYNO_EXIT_FAIL;
  }
  if (o->direct) return rc;
  if (!rc && rename(o->tmp, o->path)) {
    fprintf(stderr, "syno %s: cannot replace %s: %s\n", cmd, o->path, strerror(errno));
    rc = SYNO_EXIT_FAIL;
  }
  if (rc) unlink(o->tmp);
  return rc;
}
