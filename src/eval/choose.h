/* Variant choice (src/eval/choose.c): what the evaluation runs when the configuration leaves the
 * shape automatic. The tuner includes this for its untuned baseline; nothing here depends on the
 * tuner. Not installed. */
#ifndef FK_EVAL_CHOOSE_H
#define FK_EVAL_CHOOSE_H

#include "internal.h"

struct fk_tuning_entry;

/* The built-in default variant for a device: the last fallback, and the tuner's untuned
 * baseline. */
void fk__builtin_variant(const fk_device_info *device, fk_variant *variant);

/* The lane width fk_eval_create takes automatically for kernel and accumulator on this device (8
 * or 16; 0: none, the scalar template runs), with the default lane variant in *variant when not
 * 0. */
int fk__automatic_lanes(fk_context *context, const char *kernel, const char *accum,
                        fk_variant *variant);

/* The variant of a new evaluation, and the scalar one to fall back to when automatic lanes do not
 * build; tuned: the tuning database's entry they follow (NULL: none). */
typedef struct fk__variant_choice {
    fk_variant variant, scalar;
    const struct fk_tuning_entry *tuned, *scalar_tuned;
} fk__variant_choice;

/* Validates config's shape and chooses the variant (defaults, tuning database, explicit values,
 * lanes); a refusal is recorded with fk__fail. */
fk_status fk__eval_choose_variant(fk_context *context, const fk_eval_config *config,
                                  const fk_kernel_desc *kernel, const fk_accum_desc *accum,
                                  fk__variant_choice *out);

#endif
