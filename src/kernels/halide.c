/* Halide kernels (syno/kernels.h): generator source -> C++ compiler -> the generator run with
 * an autoscheduler -> a shared object -> dlopen.
 *
 * The two things every kernel's build needs and that never change for one Halide install,
 * GenGen.cpp compiled to an object and Halide.h precompiled as a header, are built once into
 * the cache (toolchain-<hash>/) the first time a kernel is compiled, and reused: they cut a
 * kernel's build from ~12 s to the generator run itself plus ~3 s. Every step writes into a
 * private temporary directory and publishes its result with rename(), so two processes
 * compiling the same kernel at once both succeed and neither can load a half-written file.
 *
 * Paths to the toolchain default to Debian's libhalide14-0-dev (CMake passes them in) and
 * can be overridden by $SYNO_HALIDE_INCLUDE (the directory of Halide.h), $SYNO_HALIDE_LIB
 * (libHalide's shared library), $SYNO_HALIDE_PLUGINS (the directory of
 * libautoschedule_*.so), $SYNO_HALIDE_GENGEN (GenGen.cpp) and $SYNO_CXX (the compiler). */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "syno/clock.h"
#include "syno/codegen.h"
#include "syno/hash.h"
#include "syno/kernels.h"
#include "syno/lower.h"
#include "syno/proc.h"

#ifndef SYNO_HALIDE_INCLUDE_DIR
#define SYNO_HALIDE_INCLUDE_DIR "/usr/include/halide14"
#endif
#ifndef SYNO_HALIDE_LIBRARY
#define SYNO_HALIDE_LIBRARY "/usr/lib/x86_64-linux-gnu/libHalide14.so"
#endif
#ifndef SYNO_HALIDE_PLUGIN_DIR
#define SYNO_HALIDE_PLUGIN_DIR "/usr/lib/x86_64-linux-gnu/halide14"
#endif
#ifndef SYNO_HALIDE_GENGEN_CPP
#define SYNO_HALIDE_GENGEN_CPP "/usr/src/halide14/GenGen.cpp"
#endif

#define PATH_N 1024

/* snprintf for paths: they are bounded by PATH_N, and one too long to fit is cut (and then
 * fails to open or run, with its name in the message). */
static int fmt(char *buf, size_t n, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  int r = vsnprintf(buf, n, f, ap);
  va_end(ap);
  return r;
}

struct syno_kernel {
  void *dl;
  syno_hl_fn_t fn;
  int (*set_threads)(int);
  int n_tensors;
  int rank[SYNO_MAX_TENSORS + 1]; /* the tensors', then the output's */
  int64_t shape[SYNO_MAX_TENSORS + 1][SYNO_MAX_RANK];
};

static const char *const sched_names[SYNO_SCHED_COUNT] = {"Adams2019", "Mullapudi2016", "Li2018", "none"};
static const char *const sched_plugins[SYNO_SCHED_COUNT] = {
    "libautoschedule_adams2019.so", "libautoschedule_mullapudi2016.so", "libautoschedule_li2018.so", NULL};

const char *syno_kernels_name(syno_kernels_t k) {
  switch (k) {
    case SYNO_KERNELS_EXEC: return "exec";
    case SYNO_KERNELS_HALIDE: return "halide";
    case SYNO_KERNELS_BEST: return "best";
  }
  return "?";
}

int syno_kernels_parse(const char *s, syno_kernels_t *out) {
  for (int k = SYNO_KERNELS_EXEC; k <= SYNO_KERNELS_BEST; k++)
    if (s && !strcmp(s, syno_kernels_name((syno_kernels_t)k))) {
      *out = (syno_kernels_t)k;
      return 0;
    }
  return -1;
}

const char *syno_sched_name(syno_sched_t s) { return s >= 0 && s < SYNO_SCHED_COUNT ? sched_names[s] : "?"; }

int syno_sched_parse(const char *s, syno_sched_t *out) {
  for (int k = 0; s && k < SYNO_SCHED_COUNT; k++)
    if (!strcasecmp(s, sched_names[k])) {
      *out = (syno_sched_t)k;
      return 0;
    }
  return -1;
}

syno_sched_t syno_sched_default(void) {
  syno_sched_t s;
  if (!syno_sched_parse(getenv("SYNO_HALIDE_SCHEDULER"), &s)) return s;
  return SYNO_SCHED_ADAMS2019;
}

void syno_hl_buffer_init(syno_hl_buffer_t *b, syno_hl_dim_t *dim, const float *data, int rank, const int64_t *shape) {
  memset(b, 0, sizeof *b);
  b->host = (uint8_t *)(uintptr_t)data;
  b->type_code = 2; /* halide_type_float */
  b->type_bits = 32;
  b->type_lanes = 1;
  b->dimensions = rank;
  b->dim = dim;
  int64_t stride = 1;
  for (int k = 0; k < rank; k++) {
    int i = rank - 1 - k;
    dim[k] = (syno_hl_dim_t){.min = 0, .extent = (int32_t)shape[i], .stride = (int32_t)stride, .flags = 0};
    stride *= shape[i];
  }
}

/* ------------------------------------------------------------------ paths and the toolchain */

static const char *path_of(const char *env, const char *dflt) {
  const char *p = getenv(env);
  return p && *p ? p : dflt;
}

static const char *cxx(void) { return path_of("SYNO_CXX", "c++"); }

int syno_kernels_available(syno_error_t *err) {
  static const char *const hint = " (Debian: apt-get install libhalide14-0-dev g++)";
  char p[PATH_N];
  if (!syno_proc_on_path(cxx())) return syno_error_set(err, "halide kernels: no C++ compiler '%s' on PATH%s", cxx(), hint);
  fmt(p, sizeof p, "%s/Halide.h", path_of("SYNO_HALIDE_INCLUDE", SYNO_HALIDE_INCLUDE_DIR));
  if (access(p, R_OK)) return syno_error_set(err, "halide kernels: %s is missing%s", p, hint);
  const char *lib = path_of("SYNO_HALIDE_LIB", SYNO_HALIDE_LIBRARY);
  if (access(lib, R_OK)) return syno_error_set(err, "halide kernels: libHalide (%s) is missing%s", lib, hint);
  const char *gg = path_of("SYNO_HALIDE_GENGEN", SYNO_HALIDE_GENGEN_CPP);
  if (access(gg, R_OK)) return syno_error_set(err, "halide kernels: %s is missing%s", gg, hint);
  return 0;
}

int syno_kernels_cache_dir(char *buf, size_t n) {
  const char *d = getenv("SYNO_KERNEL_CACHE");
  if (d && *d) return fmt(buf, n, "%s", d);
  d = getenv("XDG_CACHE_HOME");
  if (d && *d) return fmt(buf, n, "%s/syno/kernels", d);
  d = getenv("HOME");
  if (d && *d) return fmt(buf, n, "%s/.cache/syno/kernels", d);
  return fmt(buf, n, "/tmp/syno-kernels-%ld", (long)geteuid()); /* no home: one per user, checked below */
}

/* The cache directory must be ours and private: we load code from it. A directory of ours
 * is made private (mode 0700); anyone else's, or a link, is refused. */
static int private_dir(const char *dir, syno_error_t *err) {
  struct stat st;
  if (lstat(dir, &st)) return syno_error_set(err, "halide kernels: %s: %s", dir, strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return syno_error_set(err, "halide kernels: the kernel cache %s is not a directory (set SYNO_KERNEL_CACHE)", dir);
  if (st.st_uid != geteuid())
    return syno_error_set(err,
                          "halide kernels: the kernel cache %s belongs to uid %ld, not to you: code in it is not "
                          "loaded (set SYNO_KERNEL_CACHE to a directory of yours)",
                          dir, (long)st.st_uid);
  if ((st.st_mode & 077) && chmod(dir, 0700))
    return syno_error_set(err, "halide kernels: cannot make the kernel cache %s private: %s", dir, strerror(errno));
  return 0;
}

/* mkdir -p */
static int make_dirs(const char *path, syno_error_t *err) {
  char p[PATH_N];
  if (fmt(p, sizeof p, "%s", path) >= (int)sizeof p)
    return syno_error_set(err, "halide kernels: path too long: %s", path);
  for (char *s = p + 1;; s++) {
    if (*s == '/' || !*s) {
      char c = *s;
      *s = 0;
      if (mkdir(p, 0777) && errno != EEXIST)
        return syno_error_set(err, "halide kernels: cannot create %s: %s", p, strerror(errno));
      *s = c;
      if (!c) break;
    }
  }
  return 0;
}

static uint64_t hash_bytes(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

static uint64_t hash_str(uint64_t h, const char *s) { return hash_bytes(h, s, strlen(s) + 1); }

/* A file's identity for the cache key: its path, size and modification time. */
static uint64_t hash_file_id(uint64_t h, const char *path) {
  struct stat st;
  h = hash_str(h, path);
  if (!stat(path, &st)) {
    int64_t v[2] = {(int64_t)st.st_size, (int64_t)st.st_mtime};
    h = hash_bytes(h, v, sizeof v);
  }
  return h;
}

/* This CPU: the model name and the feature flags of /proc/cpuinfo's first processor. */
static uint64_t hash_cpu(uint64_t h) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return hash_str(h, "unknown cpu");
  char line[8192];
  int got = 0;
  while (got < 2 && fgets(line, sizeof line, f))
    if (!strncmp(line, "model name", 10) || !strncmp(line, "flags", 5)) {
      h = hash_str(h, line);
      got++;
    }
  fclose(f);
  return h;
}

/* The Halide install: its header, its library and GenGen. */
static uint64_t hash_halide(uint64_t h) {
  char p[PATH_N];
  fmt(p, sizeof p, "%s/Halide.h", path_of("SYNO_HALIDE_INCLUDE", SYNO_HALIDE_INCLUDE_DIR));
  h = hash_file_id(h, p);
  h = hash_file_id(h, path_of("SYNO_HALIDE_LIB", SYNO_HALIDE_LIBRARY));
  h = hash_file_id(h, path_of("SYNO_HALIDE_GENGEN", SYNO_HALIDE_GENGEN_CPP));
  return hash_str(h, cxx());
}

/* Runs argv (no shell) in directory cwd with its output to log; on failure sets err to what,
 * the exit status and the first lines of the log. */
static int run(const char *const *argv, const char *cwd, const char *log, const char *what, syno_error_t *err) {
  int st = syno_proc_run(argv, cwd, NULL, 0, log, NULL, err);
  if (st == 0) return 0;
  if (st < 0) return -1;
  char first[600] = "";
  FILE *f = fopen(log, "r");
  if (f) {
    size_t got = 0;
    char line[256];
    for (int k = 0; k < 6 && fgets(line, sizeof line, f); k++) {
      size_t l = strlen(line);
      if (got + l + 1 >= sizeof first) break;
      memcpy(first + got, line, l);
      got += l;
    }
    first[got] = 0;
    fclose(f);
    while (got && (first[got - 1] == '\n')) first[--got] = 0;
  }
  return syno_error_set(err, "halide kernels: %s failed (exit %d)%s%s", what, st, first[0] ? ":\n" : "", first);
}

static int file_exists(const char *p) { return access(p, F_OK) == 0; }

/* A fresh private directory under dir: dir/tmp-<tag>-XXXXXX. */
static int temp_dir(const char *dir, const char *tag, char *out, size_t n, syno_error_t *err) {
  fmt(out, n, "%s/tmp-%s-XXXXXX", dir, tag);
  if (!mkdtemp(out))
    return syno_error_set(err, "halide kernels: cannot create a directory in %s: %s", dir, strerror(errno));
  return 0;
}

/* rm -r of a temporary directory we made: its files and directories, no links followed. */
static void remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  while (d && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    char p[PATH_N + 256];
    struct stat st;
    fmt(p, sizeof p, "%s/%s", dir, e->d_name);
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
      remove_dir(p);
    else
      unlink(p);
  }
  if (d) closedir(d);
  rmdir(dir); /* a leftover temporary directory is harmless */
}

/* The shared pieces of every build: <cache>/toolchain-<hash>/{GenGen.o, pch/Halide.h.gch}. */
static int toolchain(const char *cache, char *tc, size_t n, syno_error_t *err) {
  uint64_t h = hash_halide(1469598103934665603ull);
  fmt(tc, n, "%s/toolchain-%016" PRIx64, cache, syno_hash_fmix64(h));
  char gengen_o[PATH_N], gch[PATH_N];
  fmt(gengen_o, sizeof gengen_o, "%s/GenGen.o", tc);
  fmt(gch, sizeof gch, "%s/pch/Halide.h.gch", tc);
  if (file_exists(gengen_o) && file_exists(gch)) return 0;
  char tmp[PATH_N], log[PATH_N + 16], p[PATH_N + 32];
  if (temp_dir(cache, "toolchain", tmp, sizeof tmp, err)) return -1;
  fmt(log, sizeof log, "%s/log", tmp);
  const char *inc = path_of("SYNO_HALIDE_INCLUDE", SYNO_HALIDE_INCLUDE_DIR);
  int rc = 0;
  /* GenGen.o */
  char inc_flag[PATH_N + 4];
  fmt(inc_flag, sizeof inc_flag, "-I%s", inc);
  fmt(p, sizeof p, "%s/GenGen.o", tmp);
  const char *gengen[] = {cxx(), "-std=c++17", "-fno-rtti", "-O1", inc_flag, "-c",
                          path_of("SYNO_HALIDE_GENGEN", SYNO_HALIDE_GENGEN_CPP), "-o", p, NULL};
  rc = run(gengen, NULL, log, "compiling GenGen.cpp", err);
  /* Halide.h as a precompiled header, with the flags every generator is compiled with */
  if (!rc) {
    fmt(p, sizeof p, "%s/pch", tmp);
    rc = make_dirs(p, err);
  }
  if (!rc) {
    char hdr[PATH_N + 16];
    fmt(hdr, sizeof hdr, "%s/Halide.h", inc);
    fmt(p, sizeof p, "%s/pch/Halide.h.gch", tmp);
    const char *pch[] = {cxx(), "-std=c++17", "-fno-rtti", "-O0", "-x", "c++-header", hdr, "-o", p, NULL};
    rc = run(pch, NULL, log, "precompiling Halide.h", err);
  }
  if (!rc) {
    unlink(log);
    /* Another process may have published it first; then ours is dropped. */
    if (rename(tmp, tc) == 0) return 0;
    if (file_exists(gengen_o) && file_exists(gch)) {
      remove_dir(tmp);
      return 0;
    }
    rc = syno_error_set(err, "halide kernels: cannot publish %s: %s", tc, strerror(errno));
  }
  remove_dir(tmp);
  return rc;
}

/* ------------------------------------------------------------------ kernels */

static int load(const char *so, const syno_operator_t *op, const syno_vars_t *v, int binding, syno_kernel_t **out,
                syno_error_t *err) {
  struct stat st;
  if (lstat(so, &st)) return syno_error_set(err, "halide kernels: %s: %s", so, strerror(errno));
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
    return syno_error_set(err,
                          "halide kernels: %s is not a file of yours that only you can write: it is not loaded", so);
  syno_kernel_t *k = calloc(1, sizeof *k);
  if (!k) return syno_error_set(err, "out of memory");
  k->dl = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  if (!k->dl) {
    const char *e = dlerror();
    free(k);
    return syno_error_set(err, "halide kernels: cannot load %s: %s", so, e ? e : "?");
  }
  *(void **)&k->fn = dlsym(k->dl, "syno_kernel_argv");
  *(void **)&k->set_threads = dlsym(k->dl, "halide_set_num_threads");
  if (!k->fn) {
    dlclose(k->dl);
    free(k);
    return syno_error_set(err, "halide kernels: %s has no syno_kernel_argv", so);
  }
  k->n_tensors = op->n_tensors;
  if (syno_operator_extents(op, v, binding, k->rank, k->shape, err)) {
    syno_kernel_free(k);
    return -1;
  }
  *out = k;
  return 0;
}

int syno_kernel_get(const syno_operator_t *op, int binding, syno_sched_t s, syno_kernel_t **out,
                    syno_kernel_info_t *info, syno_error_t *err) {
  return syno_kernel_get_in(op, syno_graph_vars(op->g), binding, s, out, info, err);
}

int syno_kernel_get_in(const syno_operator_t *op, const syno_vars_t *v, int binding, syno_sched_t s,
                       syno_kernel_t **out, syno_kernel_info_t *info, syno_error_t *err) {
  syno_kernel_info_t dummy;
  if (!info) info = &dummy;
  memset(info, 0, sizeof *info);
  *out = NULL;
  if (s < 0 || s >= SYNO_SCHED_COUNT) return syno_error_set(err, "halide kernels: unknown schedule %d", (int)s);
  int len = syno_codegen_halide_in(op, v, binding, NULL, 0, err);
  if (len < 0) return -1;
  char *src = malloc((size_t)len + 1);
  if (!src) return syno_error_set(err, "out of memory");
  syno_codegen_halide_in(op, v, binding, src, (size_t)len + 1, err);
  char name[64];
  syno_codegen_halide_name_in(op, v, binding, name, sizeof name);

  uint64_t h = hash_str(1469598103934665603ull, src);
  h = hash_str(h, sched_names[s]);
  h = hash_cpu(h);
  h = hash_halide(h);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu < 1) ncpu = 1;
  h = hash_bytes(h, &ncpu, sizeof ncpu);
  char key[32], cache[PATH_N], so[PATH_N + 64];
  fmt(key, sizeof key, "%016" PRIx64, syno_hash_fmix64(h));
  syno_kernels_cache_dir(cache, sizeof cache);
  fmt(so, sizeof so, "%s/%s-%s.so", cache, name, key);
  fmt(info->path, sizeof info->path, "%s", so);
  if (file_exists(so)) {
    free(src);
    info->cached = true;
    return private_dir(cache, err) ? -1 : load(so, op, v, binding, out, err);
  }
  if (syno_kernels_available(err) || make_dirs(cache, err) || private_dir(cache, err)) {
    free(src);
    return -1;
  }
  double t0 = syno_clock_seconds();
  char tc[PATH_N];
  if (toolchain(cache, tc, sizeof tc, err)) {
    free(src);
    return -1;
  }
  char tmp[PATH_N], p[PATH_N + 64], log[PATH_N + 16];
  if (temp_dir(cache, key, tmp, sizeof tmp, err)) {
    free(src);
    return -1;
  }
  fmt(log, sizeof log, "%s/log", tmp);
  fmt(p, sizeof p, "%s/gen.cpp", tmp);
  FILE *f = fopen(p, "w");
  int rc = 0;
  if (!f || fputs(src, f) == EOF) rc = syno_error_set(err, "halide kernels: cannot write %s: %s", p, strerror(errno));
  if (f && fclose(f) && !rc) rc = syno_error_set(err, "halide kernels: cannot write %s: %s", p, strerror(errno));
  free(src);
  const char *inc = path_of("SYNO_HALIDE_INCLUDE", SYNO_HALIDE_INCLUDE_DIR);
  if (!rc) { /* the generator: compile against the precompiled Halide.h, link with GenGen.o */
    char pch_flag[PATH_N + 8], inc_flag[PATH_N + 4], gengen_o[PATH_N + 16];
    fmt(pch_flag, sizeof pch_flag, "-I%s/pch", tc);
    fmt(inc_flag, sizeof inc_flag, "-I%s", inc);
    fmt(gengen_o, sizeof gengen_o, "%s/GenGen.o", tc);
    const char *compile[] = {cxx(), "-std=c++17", "-fno-rtti", "-O0", pch_flag, inc_flag, "-c", "gen.cpp",
                             "-o", "gen.o", NULL};
    const char *link[] = {cxx(), "gen.o", gengen_o, "-o", "gen", path_of("SYNO_HALIDE_LIB", SYNO_HALIDE_LIBRARY),
                          "-ldl", "-lpthread", NULL};
    rc = run(compile, tmp, log, "compiling the Halide generator", err);
    if (!rc) rc = run(link, tmp, log, "linking the Halide generator", err);
  }
  if (!rc) { /* the generator run: schedule and compile for this CPU */
    char plugin[PATH_N + 64], sched[64], params[96];
    const char *gen[20] = {"./gen", "-g", name, "-f", "syno_kernel", "-o", ".", "-e", "object"};
    int k = 9;
    if (sched_plugins[s]) {
      fmt(plugin, sizeof plugin, "%s/%s", path_of("SYNO_HALIDE_PLUGINS", SYNO_HALIDE_PLUGIN_DIR), sched_plugins[s]);
      fmt(sched, sizeof sched, "%s", sched_names[s]);
      fmt(params, sizeof params, "machine_params=%ld,16777216,40", ncpu);
      gen[k++] = "-p";
      gen[k++] = plugin;
      gen[k++] = "-s";
      gen[k++] = sched;
      gen[k++] = "auto_schedule=true";
      gen[k++] = params;
    }
    gen[k++] = "target=host";
    gen[k] = NULL;
    rc = run(gen, tmp, log, "running the Halide generator", err);
  }
  if (!rc) { /* the shared object, published by rename */
    const char *so_link[] = {cxx(), "-shared", "-o", "kernel.so", "syno_kernel.o", "-ldl", "-lpthread", NULL};
    rc = run(so_link, tmp, log, "linking the kernel", err);
  }
  if (!rc) {
    fmt(p, sizeof p, "%s/kernel.so", tmp);
    if (chmod(p, 0755) || rename(p, so)) rc = syno_error_set(err, "halide kernels: cannot publish %s: %s", so, strerror(errno));
  }
  remove_dir(tmp);
  if (rc) return -1;
  info->compile_s = syno_clock_seconds() - t0;
  return load(so, op, v, binding, out, err);
}

int syno_kernel_forward(syno_kernel_t *k, const float *const *tensors, float *out, syno_error_t *err) {
  syno_hl_buffer_t b[SYNO_MAX_TENSORS + 1];
  syno_hl_dim_t d[SYNO_MAX_TENSORS + 1][SYNO_MAX_RANK];
  void *args[SYNO_MAX_TENSORS + 1];
  for (int t = 0; t <= k->n_tensors; t++) {
    syno_hl_buffer_init(&b[t], d[t], t < k->n_tensors ? tensors[t] : out, k->rank[t], k->shape[t]);
    args[t] = &b[t];
  }
  int rc = k->fn(args);
  if (rc) return syno_error_set(err, "halide kernels: the kernel failed (Halide error %d)", rc);
  return 0;
}

void syno_kernel_set_threads(syno_kernel_t *k, int threads) {
  if (k && k->set_threads && threads > 0) k->set_threads(threads);
}

void syno_kernel_free(syno_kernel_t *k) {
  if (!k) return;
  if (k->dl) dlclose(k->dl);
  free(k);
}
