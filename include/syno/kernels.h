/* syno/kernels.h - compiled forward kernels of operators, through Halide.
 *
 * A kernel is an operator's forward pass at one binding, compiled ahead of time: the Halide
 * generator of syno/codegen.h is built with the system C++ compiler against libHalide
 * (Debian libhalide14-0-dev), run with an autoscheduler for this CPU (Adams2019 unless told
 * otherwise), linked into a shared object and loaded with dlopen. Nothing of Halide is
 * needed to build syno: whether the toolchain is there is found out when a kernel is first
 * asked for, and its absence is an error naming what is missing.
 *
 * Compiled kernels are cached on disk under a key hashing the generator's source, the
 * scheduler, this CPU and the Halide version: the directory $SYNO_KERNEL_CACHE, else
 * $XDG_CACHE_HOME/syno/kernels, else ~/.cache/syno/kernels. A kernel in the cache is never
 * compiled again; an entry appears under its final name only once complete (written under a
 * temporary name, then renamed), so a half-written one is never loaded.
 *
 * The kernel owns its dlopen handle; kernels are independent of each other and of the
 * operator they came from (which may be freed once the kernel exists). */
#ifndef SYNO_KERNELS_H
#define SYNO_KERNELS_H

#include <stdbool.h>
#include <stdint.h>

#include "syno/error.h"
#include "syno/graph.h"

/* Which implementation runs an operator's inference forward (syno eval --kernels). */
typedef enum {
  SYNO_KERNELS_EXEC = 0, /* the executor (syno/exec.h) */
  SYNO_KERNELS_HALIDE,   /* a Halide kernel */
  SYNO_KERNELS_BEST      /* whichever of the two is faster, per slot, timed */
} syno_kernels_t;

const char *syno_kernels_name(syno_kernels_t k);
/* "exec", "halide" or "best"; -1 on anything else. */
int syno_kernels_parse(const char *s, syno_kernels_t *out);

/* The Halide schedule of a kernel. */
typedef enum {
  SYNO_SCHED_ADAMS2019 = 0, /* the default: the learned cost model's beam search */
  SYNO_SCHED_MULLAPUDI2016,
  SYNO_SCHED_LI2018,
  SYNO_SCHED_NONE, /* no autoscheduler: the accumulator at root, nothing else */
  SYNO_SCHED_COUNT
} syno_sched_t;

const char *syno_sched_name(syno_sched_t s);
/* Case-insensitive "Adams2019", "Mullapudi2016", "Li2018" or "none"; -1 otherwise. */
int syno_sched_parse(const char *s, syno_sched_t *out);
/* $SYNO_HALIDE_SCHEDULER when set to a valid name, else Adams2019. */
syno_sched_t syno_sched_default(void);

/* The ABI of Halide's halide_buffer_t and halide_dimension_t (HalideRuntime.h), so callers
 * need no Halide header. */
typedef struct {
  int32_t min, extent, stride;
  uint32_t flags;
} syno_hl_dim_t;

typedef struct {
  uint64_t device;
  const void *device_interface;
  uint8_t *host;
  uint64_t flags;
  uint8_t type_code, type_bits; /* halide_type_t: float is code 2, 32 bits, 1 lane */
  uint16_t type_lanes;
  int32_t dimensions;
  syno_hl_dim_t *dim;
  void *padding;
} syno_hl_buffer_t;

/* Describes a dense row-major float32 tensor of the given shape (outermost first) as a
 * Halide buffer: dim must hold rank entries; Halide's dimension 0 is the innermost. */
void syno_hl_buffer_init(syno_hl_buffer_t *b, syno_hl_dim_t *dim, const float *data, int rank, const int64_t *shape);

/* The Halide entry point (the generated function's _argv form): args[i] points to the
 * syno_hl_buffer_t of the inputs (x, then the weights), then of the output; 0 on success. */
typedef int (*syno_hl_fn_t)(void **args);

typedef struct syno_kernel syno_kernel_t;

typedef struct {
  bool cached;      /* loaded from the cache, nothing compiled */
  double compile_s; /* seconds spent building (0 when cached) */
  char path[1024];  /* the shared object */
} syno_kernel_info_t;

/* Whether the toolchain is there (a C++ compiler, Halide.h, libHalide, GenGen.cpp, the
 * autoscheduler plugins); 0, or -1 with err naming what is missing and how to get it. */
int syno_kernels_available(syno_error_t *err);

/* The cache directory kernels go to (see above); snprintf semantics. */
int syno_kernels_cache_dir(char *buf, size_t n);

/* The forward kernel of op at binding under schedule s: from the cache, or compiled into it.
 * info may be NULL. A compile failure's message carries the compiler's first lines. */
int syno_kernel_get(const syno_operator_t *op, int binding, syno_sched_t s, syno_kernel_t **out,
                    syno_kernel_info_t *info, syno_error_t *err);
/* The same with the sizes from binding b of v (syno_codegen_halide_in): a symbolic operator
 * under a binding of a copy of its variables. */
int syno_kernel_get_in(const syno_operator_t *op, const syno_vars_t *v, int binding, syno_sched_t s,
                       syno_kernel_t **out, syno_kernel_info_t *info, syno_error_t *err);
/* Runs the forward: tensors[0] the input, tensors[1..] the weights, out the output, every
 * one dense row-major float32 of the binding's shapes. */
int syno_kernel_forward(syno_kernel_t *k, const float *const *tensors, float *out, syno_error_t *err);
/* The number of threads the kernel's Halide runtime may use (its own pool). */
void syno_kernel_set_threads(syno_kernel_t *k, int threads);
void syno_kernel_free(syno_kernel_t *k);

#endif
