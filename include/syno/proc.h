/* syno/proc.h - running another program without a shell.
 *
 * Every external program syno runs (Graphviz's dot, gnuplot, the C++ compiler of the Halide
 * kernels) is started with an argv through fork and execvp, never through system() or
 * popen(): a file name is one argument whatever characters it holds, so nothing in a path,
 * a database name or an option's value is ever read by a shell.
 *
 *   syno_proc_on_path  whether `name` is an executable file in a directory of $PATH (or,
 *                      holding a '/', is an executable file itself)
 *   syno_proc_run      runs argv[0] (looked up on $PATH when it has no '/') with argv, in
 *                      directory `cwd` (NULL: ours); writes in[0..in_len) to its standard
 *                      input (in NULL: /dev/null); its standard output and error go to the
 *                      file `log` (created or truncated; NULL: /dev/null) or, with out set, its
 *                      standard output to the open descriptor *out. Returns its exit status
 *                      (0-255), 128 + the signal that killed it, or -1 with err set when it
 *                      could not be started (127: not found, as a shell says).
 */
#ifndef SYNO_PROC_H
#define SYNO_PROC_H

#include <stdbool.h>
#include <stddef.h>

#include "syno/error.h"

bool syno_proc_on_path(const char *name);
int syno_proc_run(const char *const *argv, const char *cwd, const char *in, size_t in_len, const char *log,
                  const int *out, syno_error_t *err);

#endif
