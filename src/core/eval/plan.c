/* The resolved plan (plan.h): the evaluation's physics, skin and build switches resolved once at
 * fk_eval_create, the build options every pair program shares, and fk_eval_get_reach. */
#include "core/eval/plan.h"

#include <stdio.h>
#include <string.h>

#include "core/eval/choose.h"
#include "core/eval/eval.h"

fk_status fk__plan_resolve(fk_context *context, const fk_eval_config *config,
                           const fk_kernel_desc *kernel, const fk_accum_desc *accum,
                           unsigned automatic_slots, fk__plan *plan)
{
    memset(plan, 0, sizeof *plan);
    fk_physics in = {.eps = config->eps, .cutoff = config->cutoff, .coulomb = config->coulomb};
    memcpy(in.parameters, config->parameters, sizeof in.parameters);
    memcpy(in.box, config->box, sizeof in.box);
    char message[512] = "";
    fk_status status = fk__physics_resolve(kernel, &in, &plan->physics, message, sizeof message);
    if (status != FK_OK)
        return fk__fail(context, status, "%s", message);
    if (config->exclusion_mode != FK_EXCLUDE_AFTERWARDS &&
        config->exclusion_mode != FK_EXCLUDE_ON_THE_FLY)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "unknown exclusion mode %d",
                        config->exclusion_mode);
    if (config->max_exclusions < 0 || config->max_exclusions > FK__MAX_EXCLUSION_SLOTS)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "max_exclusions %d is outside 0..%d",
                        config->max_exclusions, FK__MAX_EXCLUSION_SLOTS);
    plan->skin = fk__skin_resolve(config->skin, plan->physics.cutoff);
    plan->algorithm = config->algorithm;
    plan->algorithm_source = FK_VARIANT_EXPLICIT;
    if (config->algorithm == FK_ALGORITHM_AUTO) /* from the physics just resolved */
        plan->algorithm = fk__eval_choose_algorithm(context, config, kernel, accum, plan,
                                                    &plan->algorithm_source);
    plan->double_single = config->positions == FK_POSITIONS_DOUBLE_SINGLE;
    plan->reproducible = config->reproducible != 0;
    plan->flush_denormals = !config->reproducible && accum->flush_denormals;
    if (kernel->uses_table) {
        if (config->exclusion_mode == FK_EXCLUDE_ON_THE_FLY) {
            /* An explicit max_exclusions is the build; automatic (0) builds for the partners the
             * current exclusions need (fk_eval_set_exclusions rebuilds when that changes). */
            const unsigned slots =
                config->max_exclusions ? (unsigned)config->max_exclusions : automatic_slots;
            plan->exclusion_slots = (slots + 3u) / 4u * 4u; /* read as int4 */
        }
        plan->double_table = accum->double_pairs != 0;
    }
    return FK_OK;
}

/* The force law's switches: gravity's softening, the molecular laws' box, shift, exclusion slots
 * and double table, and double-single positions for both (cl/forces/point.clh: every program of
 * the evaluation reads record pairs). */
static void law_switches(const fk__plan *plan, const fk_kernel_desc *kernel, char *options,
                         size_t size)
{
    const char *positions = plan->double_single ? " -D FK_DS_POSITIONS=1" : "";
    const fk__physics *p = &plan->physics;
    if (!kernel->uses_table) {
        /* Softened in float too (eps^2 can underflow): the kernel may drop its floor on s^2. */
        const int softened = (float)(p->eps * p->eps) > 0.0f;
        snprintf(options, size, "%s%s", softened ? "-D FK_SOFTENED=1" : "", positions);
        return;
    }
    snprintf(options, size, "-D FK_PERIODIC=%d -D FK_SHIFTED=%d -D FK_EXCLUSION_SLOTS=%u%s%s",
             p->periodic, p->shifted, plan->exclusion_slots, positions,
             plan->double_table ? " -D FK_DOUBLE_TABLE=1" : "");
}

const char *fk__plan_options(fk__plan *plan, const fk_kernel_desc *kernel, const char *reproducible)
{
    char law[256];
    law_switches(plan, kernel, law, sizeof law);
    const char *flush = plan->flush_denormals ? "-cl-denorms-are-zero" : "";
    plan->options[0] = '\0';
    if (law[0] || flush[0])
        snprintf(plan->options, sizeof plan->options, "%s %s %s", law, flush,
                 reproducible ? reproducible : "");
    else if (reproducible)
        snprintf(plan->options, sizeof plan->options, "%s", reproducible);
    return plan->options[0] ? plan->options : NULL;
}

fk_status fk_eval_get_reach(const fk_eval *eval, double *cutoff, double *skin, double box[3])
{
    if (!eval)
        return FK_ERR_INVALID_ARGUMENT;
    const fk__physics *physics = &eval->state.plan.physics;
    if (cutoff)
        *cutoff = physics->cutoff;
    if (skin) /* without a cutoff every pair counts, and there is nothing to keep */
        *skin = physics->cutoff > 0 ? eval->state.plan.skin : 0.0;
    if (box)
        for (int k = 0; k < 3; ++k)
            box[k] = physics->periodic ? physics->box[k] : 0.0;
    return FK_OK;
}
