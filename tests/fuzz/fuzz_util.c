/* The fuzz harnesses' shared helpers (see fuzz.h): input copies, and the
 * one temporary directory a harness may write in. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

static char tmpdir[512];

char *fuzz_cstr(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return NULL;
  if (size) memcpy(s, data, size);
  s[size] = 0;
  return s;
}

int fuzz_split(char *s, char sep, char **parts, int max) {
  int n = 0;
  for (int i = 0; i < max; i++) parts[i] = "";
  if (max < 1) return 0;
  parts[n++] = s;
  for (char *p = s; n < max && (p = strchr(p, sep)); p++) {
    *p = 0;
    parts[n++] = p + 1;
  }
  return n;
}

/* Removes the files of the directory (only plain names: it holds no
 * sub-directories), then the directory. */
static void remove_tmpdir(void) {
  if (!tmpdir[0]) return;
  DIR *d = opendir(tmpdir);
  if (d) {
    for (struct dirent *e; (e = readdir(d));) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char p[1024];
      snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(tmpdir);
  tmpdir[0] = 0;
}

static const char *fuzz_tmpdir(void) {
  if (tmpdir[0]) return tmpdir;
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  snprintf(tmpdir, sizeof tmpdir, "%s/syno-fuzz-XXXXXX", base);
  if (!mkdtemp(tmpdir)) {
    perror(tmpdir);
    abort(); /* the harness cannot run at all */
  }
  atexit(remove_tmpdir);
  return tmpdir;
}

int fuzz_path(const char *name, char *path, size_t n) {
  int len = snprintf(path, n, "%s/%s", fuzz_tmpdir(), name);
  return len < 0 || (size_t)len >= n ? -1 : 0;
}

int fuzz_write(const char *name, const void *data, size_t size, char *path, size_t n) {
  if (fuzz_path(name, path, n)) return -1;
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t put = size ? fwrite(data, 1, size, f) : 0;
  return fclose(f) == 0 && put == size ? 0 : -1;
}

void fuzz_fail(const char *file, int line, const char *what) {
  fprintf(stderr, "%s:%d: fuzz check failed: %s\n", file, line, what);
  abort();
}
