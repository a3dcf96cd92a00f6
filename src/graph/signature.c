/* The named operator signatures (the search presets' variables and shapes).
 * See syno/signature.h. */
#include "syno/signature.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct {
  const char *name, *vars, *input, *output;
  int n_fixed;
  int fixed[2];
  syno_sig_kind_t kind;
  bool qkv_only;
} preset_t;

/* conv2d is the space the original Syno searches in its vision experiments
 * (experiments/base/models/common.py: ResNet-18/34, DenseNet-121,
 * ResNeXt-29, EfficientNet-V2-S): a square image, no weight or reduction
 * over H (H: 0), four coefficients (two kernel sizes, a stride, groups).
 * conv2d-wide is the earlier, wider preset: H and W may appear twice in a
 * size, so weights and reductions may range over them (not
 * translation-equivariant), with one kernel size and one stride. */
static const preset_t presets[] = {
    {"conv2d",
     "N=8: 0, C_in=16: 2, C_out=16: 4, H=28: 0; k_1=3: 2, k_2=7: 2, s=2: 2, g=32: 3",
     "[N, C_in: unordered, H, H]",
     "[N, C_out: unordered, H, H]",
     1,
     {0},
     SYNO_SIG_CONV,
     false},
    {"conv2d-wide",
     "N=8: 0, C_in=16: 2, C_out=16: 2, H=28: 2, W=28: 2; k=3: 4, s=2: 2",
     "[N, C_in: unordered, H, W]",
     "[N, C_out: unordered, H, W]",
     1,
     {0},
     SYNO_SIG_CONV,
     false},
    {"linear",
     "N=8: 0, seq_len=64: 0, H_in=128: 4; k_1=2: 3, k_2=5: 2, t=3: 3, g=32: 3",
     "[N, seq_len, H_in: unordered]",
     "[N, seq_len, t*H_in]",
     2,
     {0, 1},
     SYNO_SIG_LINEAR,
     true},
    {"linear-wide",
     "N=8: 0, S=64: 0, C_in=128: 2, C_out=128: 2; k=4: 4, s=2: 2",
     "[N, S, C_in: unordered]",
     "[N, S, C_out: unordered]",
     2,
     {0, 1},
     SYNO_SIG_LINEAR,
     false},
};

const char *syno_signature_names(void) { return "conv2d, conv2d-wide, linear, linear-wide"; }

int syno_signature_preset(const char *name, const char *bind, syno_signature_t *sig, syno_error_t *err) {
  const preset_t *p = NULL;
  for (size_t i = 0; i < sizeof presets / sizeof *presets; i++)
    if (strcmp(presets[i].name, name) == 0) p = &presets[i];
  if (!p) return syno_error_set(err, "unknown preset '%s' (known: %s)", name, syno_signature_names());
  memset(sig, 0, sizeof *sig);
  syno_vars_init(&sig->vars);
  if (syno_vars_declare(&sig->vars, p->vars, err)) return -1;
  if (syno_vars_scan(&sig->vars, p->input, err) || syno_vars_scan(&sig->vars, p->output, err)) return -1;
  if (syno_vars_bind(&sig->vars, bind ? bind : "", err)) return -1;
  if (syno_shape_parse(&sig->vars, p->input, &sig->input, err)) return syno_error_prefix(err, "input shape");
  if (syno_shape_parse(&sig->vars, p->output, &sig->output, err)) return syno_error_prefix(err, "output shape");
  snprintf(sig->name, sizeof sig->name, "%s", p->name);
  sig->kind = p->kind;
  sig->qkv_only = p->qkv_only;
  sig->n_fixed = p->n_fixed;
  for (int i = 0; i < p->n_fixed; i++) sig->fixed_in[i] = sig->fixed_out[i] = p->fixed[i];
  return 0;
}

static int declares(const syno_signature_t *sig, const char *name) {
  syno_var_kind_t kind;
  int index;
  return syno_vars_find(&sig->vars, name, &kind, &index) == 0;
}

int syno_signature_conv_binding(const syno_signature_t *sig, int64_t n, int64_t c_in, int64_t c_out, int64_t h,
                                int64_t w, char *buf, size_t len, syno_error_t *err) {
  if (sig->kind != SYNO_SIG_CONV) return syno_error_set(err, "the %s signature is not a convolution's", sig->name);
  int wide = declares(sig, "W");
  if (!wide && h != w)
    return syno_error_set(err, "the %s signature is square (H only): it cannot fill a %lldx%lld slot", sig->name,
                          (long long)h, (long long)w);
  int k = snprintf(buf, len, "N=%lld,C_in=%lld,C_out=%lld,H=%lld", (long long)n, (long long)c_in, (long long)c_out,
                   (long long)h);
  if (wide && k >= 0 && (size_t)k < len) k += snprintf(buf + k, len - (size_t)k, ",W=%lld", (long long)w);
  if (k < 0 || (size_t)k >= len) return syno_error_set(err, "binding too long");
  return 0;
}

int syno_signature_linear_binding(const syno_signature_t *sig, int64_t n, int64_t s, int64_t c_in, int64_t c_out,
                                  char *buf, size_t len, syno_error_t *err) {
  if (sig->kind != SYNO_SIG_LINEAR) return syno_error_set(err, "the %s signature is not a linear layer's", sig->name);
  int k;
  if (sig->qkv_only) {
    if (c_in < 1 || c_out % c_in != 0)
      return syno_error_set(err, "the %s signature's output is t*H_in: it cannot fill a %lld -> %lld linear slot",
                            sig->name, (long long)c_in, (long long)c_out);
    k = snprintf(buf, len, "N=%lld,seq_len=%lld,H_in=%lld,t=%lld", (long long)n, (long long)s, (long long)c_in,
                 (long long)(c_out / c_in));
  } else {
    k = snprintf(buf, len, "N=%lld,S=%lld,C_in=%lld,C_out=%lld", (long long)n, (long long)s, (long long)c_in,
                 (long long)c_out);
  }
  if (k < 0 || (size_t)k >= len) return syno_error_set(err, "binding too long");
  return 0;
}

double syno_signature_std_flops(syno_sig_kind_t kind, const syno_vars_t *vars, const syno_shape_t *input,
                                const syno_shape_t *output, int b) {
  double f = 2.0 * syno_size_value(vars, syno_shape_numel(output), b) * (kind == SYNO_SIG_CONV ? 9.0 : 1.0);
  for (int i = 0; i < input->rank; i++)
    if (input->unordered[i]) f *= syno_size_value(vars, input->dim[i], b);
  return f;
}
