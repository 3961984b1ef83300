/* The resolved plan of an evaluation (src/core/eval/plan.c; docs/architecture.md, "The resolved
 * plan"): its configuration with every default applied, computed once by fk_eval_create and only
 * read after that, by the loops (eval->state.plan), the force law's host side, the programs (the
 * shared build options) and, through fk_eval_get_reach, the MPI layer. Not installed. */
#ifndef FK_EVAL_PLAN_H
#define FK_EVAL_PLAN_H

#include "core/internal.h"

typedef struct fk__plan {
    /* The physics: the flat fields of fk_eval_config (fk_eval_create copies config.physics into
     * them), validated and with the law's defaults applied (its cutoff, k = 1, its parameters). */
    fk__physics physics;
    /* The Verlet skin of the cells and lists, an absolute distance: config.skin resolved
     * (0: FK_DEFAULT_SKIN_FRACTION of the cutoff; negative: none, 0 here). */
    double skin;
    /* The pair loop (fk_algorithm), FK_ALGORITHM_AUTO's choice made, and why it runs. The
     * variant (unrolling, work-group size, tiling, lanes) is eval->variant: the loops refine it
     * while they build (an automatic shape the device refuses is narrowed, src/core/eval/eval.c).
     */
    int algorithm;
    fk_variant_source algorithm_source;
    /* The switches every pair program of the evaluation is built with (fk__plan_options). */
    int double_single;        /* config.positions: double-single records */
    unsigned exclusion_slots; /* molecular laws, exclusions on the fly: slots per particle */
    int double_table;         /* molecular laws, an accumulator of double pair arithmetic */
    int reproducible;         /* config.reproducible */
    int flush_denormals;      /* the accumulator allows -cl-denorms-are-zero (not reproducible) */
    /* The build options they make, with reproducible mode's (fk__plan_options). */
    char options[512];
} fk__plan;

/* Validates config's physics and exclusion options for the kernel and accumulator and fills plan
 * with them resolved, and the pair loop: config->algorithm, or for FK_ALGORITHM_AUTO the one
 * fk__eval_choose_algorithm chooses for the resolved physics (src/core/eval/choose.c).
 * automatic_slots: the exclusion slots to build on the fly when config->max_exclusions is 0. A
 * refusal is recorded with fk__fail. */
fk_status fk__plan_resolve(fk_context *context, const fk_eval_config *config,
                           const fk_kernel_desc *kernel, const fk_accum_desc *accum,
                           unsigned automatic_slots, fk__plan *plan);

/* The build options every pair program of the evaluation shares: the force law's switches
 * (softening, periodic box, shift, exclusion slots, double-single positions, double table), the
 * accumulator's denormal flush and reproducible mode's options (reproducible: those of
 * fk__eval_reproducible_options, NULL without). Written to plan->options; returns it, or NULL
 * when there are none. A loop appends only its own switches to these. */
const char *fk__plan_options(fk__plan *plan, const fk_kernel_desc *kernel,
                             const char *reproducible);

#endif
