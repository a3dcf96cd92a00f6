/* The named operator signatures (the search presets' variables and shapes).
 * See syno/signature.h. */
#include "syno/signature.h"

#include <string.h>

typedef struct {
  const char *name, *vars, *input, *output;
  int n_fixed;
  int fixed[2];
} preset_t;

static const preset_t presets[] = {
    {"conv2d",
     "N=8: 0, C_in=16: 2, C_out=16: 2, H=28: 2, W=28: 2; k=3: 4, s=2: 2",
     "[N, C_in: unordered, H, W]",
     "[N, C_out: unordered, H, W]",
     1,
     {0}},
    {"linear",
     "N=8: 0, S=64: 0, C_in=128: 2, C_out=128: 2; k=4: 4, s=2: 2",
     "[N, S, C_in: unordered]",
     "[N, S, C_out: unordered]",
     2,
     {0, 1}},
};

const char *syno_signature_names(void) { return "conv2d, linear"; }

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
  sig->n_fixed = p->n_fixed;
  for (int i = 0; i < p->n_fixed; i++) sig->fixed_in[i] = sig->fixed_out[i] = p->fixed[i];
  return 0;
}
