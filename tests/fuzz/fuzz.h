/* Shared pieces of the fuzz harnesses (tests/fuzz, docs/fuzz.md).
 *
 * Each fuzz_<target>.c defines LLVMFuzzerTestOneInput for one parser a user
 * can reach. The same file links either with libFuzzer (`make fuzz`, clang)
 * or with replay.c (`make test`, any compiler), which feeds it every file of
 * the committed corpus and regressions. A harness frees everything it
 * allocates (libFuzzer reports leaks) and writes only in its temporary
 * directory (fuzz_write). */
#ifndef SYNO_FUZZ_H
#define SYNO_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A NUL-terminated malloc'd copy of the input (NULL when out of memory). */
char *fuzz_cstr(const uint8_t *data, size_t size);

/* Splits s in place at each `sep` into at most max parts; the last part
 * keeps any further separators. Missing parts are "". Returns the count. */
int fuzz_split(char *s, char sep, char **parts, int max);

/* Writes data to <dir>/<name> (replacing it) and puts that path into path.
 * The directory, syno-fuzz-XXXXXX under $TMPDIR (or /tmp), is the
 * harness's own: made on first use, removed with its files at exit. 0 or
 * -1. */
int fuzz_write(const char *name, const void *data, size_t size, char *path, size_t n);

/* <dir>/<name> into path, without writing anything; 0 or -1. */
int fuzz_path(const char *name, char *path, size_t n);

/* Stops the run on a broken invariant: the input is kept as a crash. */
#define FUZZ_CHECK(cond)                               \
  do {                                                 \
    if (!(cond)) fuzz_fail(__FILE__, __LINE__, #cond); \
  } while (0)
void fuzz_fail(const char *file, int line, const char *what) __attribute__((noreturn));

#endif
