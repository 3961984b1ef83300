/* The lane rules (src/core/loops/lanes.c), for the evaluation's variant choice. Not installed. */
#ifndef FK_LANES_H
#define FK_LANES_H

#include "core/internal.h"

struct fk_tuning_entry;

/* Sets variant->lanes (and the lane variant's shape) from config->lanes; *tuned is cleared when
 * lanes replace its entry. A refusal is recorded with fk__fail. */
fk_status fk__lanes_choose(fk_context *context, const fk_eval_config *config,
                           const fk_kernel_desc *kernel, const fk_accum_desc *accum,
                           const struct fk_tuning_entry **tuned, fk_variant *variant);

/* The lane width fk_eval_create takes automatically for kernel and accumulator on this device (8
 * or 16; 0: none, the scalar template runs), with the default lane variant in *variant when not
 * 0. */
int fk__automatic_lanes(fk_context *context, const char *kernel, const char *accum,
                        fk_variant *variant);

/* Whether kernel and accumulator have a lane form on this device (the registry's lane sections;
 * no typed tables). */
int fk__lanes_possible(fk_context *context, const fk_kernel_desc *kernel,
                       const fk_accum_desc *accum);

/* An explicit width `asked` on a CPU whose float vector registers hold fewer: FK_ERR_UNSUPPORTED,
 * recorded (a wider vector is split by the compiler, with ABI warnings); FK_OK otherwise. Both lane
 * forms (all-pairs, neighbour lists) apply it. */
fk_status fk__lanes_check_width(fk_context *context, int asked);

#endif
