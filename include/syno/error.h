/* syno/error.h - the one error type every fallible syno function fills.
 *
 * A function that can fail on user input returns a status (0 on success,
 * non-zero on failure) and, when given a non-NULL syno_error_t, writes a
 * one-line message naming what was wrong: the offending token and its column
 * for parse errors, the path and what was expected for files. Callers own the
 * struct (usually on the stack); nothing is allocated.
 *
 * This is the convention of every public function, with one exception: the
 * training engine's per-step calls (tensors, layers' forward and backward,
 * optimizers, batchers: syno/nn.h, syno/train.h) return a syno_nn_status
 * code without a message. They run thousands of times per epoch on data the
 * engine built itself, fail only when memory runs out or a caller wires
 * shapes wrongly, and syno_nn_status_str names the code; whatever reads user
 * input in the engine (data sets, backbones, training runs) uses
 * syno_error_t like the rest. */
#ifndef SYNO_ERROR_H
#define SYNO_ERROR_H

#include <stdarg.h>

#define SYNO_ERROR_LEN 320

typedef struct {
  char msg[SYNO_ERROR_LEN];
} syno_error_t;

/* Formats into err->msg (if err is non-NULL) and returns -1, so a caller can
 * write `return syno_error_set(err, "...", ...);`. */
int syno_error_set(syno_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int syno_error_vset(syno_error_t *err, const char *fmt, va_list ap);

/* Prepends "<prefix>: " to an existing message; returns -1. */
int syno_error_prefix(syno_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
