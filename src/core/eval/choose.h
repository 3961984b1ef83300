/* Variant choice (src/core/eval/choose.c): what the evaluation runs when the configuration leaves
 * the shape automatic. The tuner includes this for its untuned baseline; nothing here depends on
 * the tuner. Not installed. */
#ifndef FK_EVAL_CHOOSE_H
#define FK_EVAL_CHOOSE_H

#include "core/internal.h"
#include "core/eval/plan.h"

struct fk_tuning_entry;

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

/* FK_ALGORITHM_AUTO: the pair loop fk_eval_create runs (one whose table entry allows it:
 * all-pairs, cells or neighbors), for the cutoff, skin and box of the plan (resolved from config).
 * From the tuning database when it has measured entries of two or more of those loops for this
 * device, kernel, accumulator and N's bucket (*source: the database's origin), else by
 * fk__eval_auto_rule (*source FK_VARIANT_DEFAULT). Never fails: a loop the configuration cannot
 * run is refused later by the loop itself, as for an explicit choice. */
int fk__eval_choose_algorithm(fk_context *context, const fk_eval_config *config,
                              const fk_kernel_desc *kernel, const fk_accum_desc *accum,
                              const fk__plan *plan, fk_variant_source *source);
/* The untuned rule (docs/algorithms.md, "Choosing a loop"): all-pairs for long-range laws, below
 * a device's break-even N, and when the partners within cutoff + skin are half the system or
 * more; otherwise neighbors. n 0: unknown (a loop); box all 0: open
 * boundaries (density 0.8 assumed). skin as fk_eval_config.skin (0: default, < 0: none). */
int fk__eval_auto_rule(const fk_device_info *device, int short_range, double cutoff, double skin,
                       size_t n, const double box[3]);

#endif
