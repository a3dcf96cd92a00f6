/* Replays fuzz inputs without libFuzzer: `replay_<target> DIR...` calls the
 * target's LLVMFuzzerTestOneInput once on every file of every DIR (in name
 * order, so a failure is reproducible), the committed corpus and the crash
 * inputs kept as regressions (tests/fuzz/regress). A crash fails the ctest
 * test; a directory that does not exist is skipped (git keeps no empty
 * one), but replaying nothing at all is a failure. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Reads a whole file; NULL on error. */
static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, len = 0;
  unsigned char *buf = malloc(cap);
  for (size_t got; buf && (got = fread(buf + len, 1, cap - len, f)) > 0;) {
    len += got;
    if (len == cap) {
      unsigned char *more = realloc(buf, cap *= 2);
      if (!more) free(buf);
      buf = more;
    }
  }
  fclose(f);
  *n = len;
  return buf;
}

static int replay_dir(const char *dir, long *count) {
  DIR *d = opendir(dir);
  if (!d) {
    printf("replay: %s: no such directory, skipped\n", dir);
    return 0;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      char **more = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
      if (!more) break;
      names = more;
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, by_name);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      size_t len = 0;
      unsigned char *data = slurp(path, &len);
      if (!data) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        rc = -1;
      } else {
        printf("replay: %s (%zu bytes)\n", path, len);
        fflush(stdout);
        LLVMFuzzerTestOneInput(data, len);
        free(data);
        (*count)++;
      }
    }
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  long count = 0;
  int rc = 0;
  if (argc < 2) {
    fprintf(stderr, "usage: %s DIR...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; i++) rc |= replay_dir(argv[i], &count);
  printf("replay: %ld inputs, no crash\n", count);
  if (count == 0) {
    fprintf(stderr, "replay: no input found\n");
    return 1;
  }
  return rc ? 1 : 0;
}
