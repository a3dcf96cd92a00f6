/* model_internal.h - what the files of src/model share and nothing else sees. */
#ifndef SYNO_MODEL_INTERNAL_H
#define SYNO_MODEL_INTERNAL_H

#include "syno/backbone.h"

/* Builds the gpt backbone (see syno_backbone_build), in gpt.c. */
int model_gpt_build(const syno_backbone_cfg_t *cfg, syno_rng_t *rng, syno_backbone_t *bb, syno_error_t *err);

#endif /* SYNO_MODEL_INTERNAL_H */
