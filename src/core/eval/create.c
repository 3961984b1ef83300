/* Creating an evaluation (fk_eval_create), and rebuilding it when its exclusions need other
 * programs (fk_eval_set_exclusions): the top of src/core/eval/. An evaluation is built
 * (build.c), then its programs pass the known-answer check the first time they run on the
 * context (known_answer.c, which builds its own probe through build.c): the check runs
 * evaluations, so it sits above the files it calls and below this one. */
#include <stdlib.h>
#include <string.h>

#include "core/eval/eval_internal.h"
#include "core/eval/known_answer.h"

/* fk_eval_create with the exclusion slots to build when config->max_exclusions is automatic. */
fk_status fk__eval_create_slots(fk_context *context, const fk_eval_config *config,
                                unsigned exclusion_slots, fk_eval **out)
{
    fk_status status = fk__eval_build(context, config, exclusion_slots, out);
    if (status != FK_OK)
        return status;
    /* the first time these programs run on this context (issue #37) */
    status = fk__known_answer_check(*out, exclusion_slots);
    if (status != FK_OK) {
        fk_eval_destroy(*out);
        *out = NULL;
    }
    return status;
}

/* What the caller set on an evaluation after its creation and a rebuild keeps: the pair table
 * (its copy and buffer) and the result buffers of fk_eval_set_results_cl. Exchanged between from
 * and to, so that each evaluation still releases what it holds. */
static void exchange_caller_settings(fk_eval *to, fk_eval *from)
{
    const fk__pair_params pairs = to->state.law.pairs;
    to->state.law.pairs = from->state.law.pairs;
    from->state.law.pairs = pairs;
    const cl_mem table = to->state.table;
    to->state.table = from->state.table;
    from->state.table = table;
    const cl_mem forces = to->results_forces, potentials = to->results_potentials;
    to->results_forces = from->results_forces;
    to->results_potentials = from->results_potentials;
    from->results_forces = forces;
    from->results_potentials = potentials;
}

fk_status fk__eval_rebuild(fk_eval *eval, unsigned exclusion_slots)
{
    /* From the resolved configuration: it holds FK_ALGORITHM_AUTO's choice, so the same loop
     * runs, and it keeps the reason it was chosen. */
    fk_eval *rebuilt = NULL;
    fk_status status =
        fk__eval_create_slots(eval->state.context, &eval->state.config, exclusion_slots, &rebuilt);
    if (status != FK_OK)
        return status; /* eval unchanged */
    rebuilt->state.variant.algorithm_source = eval->state.variant.algorithm_source;
    exchange_caller_settings(rebuilt, eval);
    /* The rebuilt evaluation takes this handle's place (callers keep their pointer); the old
     * contents go out through the ordinary destroy. */
    const fk_eval previous = *eval;
    *eval = *rebuilt;
    *rebuilt = previous;
    fk_eval_destroy(rebuilt);
    return FK_OK;
}

/* config->physics into the flat fields of copy, and the on-the-fly exclusion slots its
 * exclusions need (so that applying them builds nothing twice). */
static fk_status take_physics(fk_context *context, fk_eval_config *copy, unsigned *slots)
{
    const fk_physics *physics = copy->physics;
    int flat = copy->eps != 0 || copy->cutoff != 0 || copy->coulomb != 0;
    for (int k = 0; k < FK_LAW_PARAMETERS; ++k)
        flat |= copy->parameters[k] != 0;
    for (int k = 0; k < 3; ++k)
        flat |= copy->box[k] != 0;
    if (flat)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_eval_config: physics given twice, as config.physics and in the flat "
                        "fields (eps, cutoff, coulomb, parameters, box); use one");
    copy->eps = physics->eps;
    copy->cutoff = physics->cutoff;
    copy->coulomb = physics->coulomb;
    memcpy(copy->parameters, physics->parameters, sizeof copy->parameters);
    memcpy(copy->box, physics->box, sizeof copy->box);
    *slots = 0;
    if (physics->exclusion_count == 0 || copy->exclusion_mode != FK_EXCLUDE_ON_THE_FLY)
        return FK_OK;
    char message[256] = "";
    size_t *normalized = NULL, unique = 0, most = 0;
    fk_status status = fk__exclusions_normalize(physics->exclusions, physics->exclusion_count,
                                                &normalized, &unique, message, sizeof message);
    if (status == FK_OK)
        status = fk__exclusions_max_partners(normalized, unique, &most);
    free(normalized);
    if (status != FK_OK)
        return message[0] ? fk__fail(context, status, "%s", message) : status;
    /* more than the kernel can check: fk_eval_set_exclusions names the particle */
    *slots = most > FK__MAX_EXCLUSION_SLOTS ? FK__MAX_EXCLUSION_SLOTS : (unsigned)most;
    return FK_OK;
}

fk_status fk_eval_create(fk_context *context, const fk_eval_config *config, fk_eval **out)
{
    fk_eval_config copy;
    /* No exclusions yet: an automatic on-the-fly build checks none (no cost per pair) until
     * fk_eval_set_exclusions says how many partners a particle has. */
    unsigned slots = 0;
    const fk_physics *physics = NULL;
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    /* before anything records on it: a failed context keeps the detail of its failure */
    if (fk__context_usable(context) != FK_OK)
        return FK_ERR_INVALID_ARGUMENT;
    if (config) {
        fk__clear_error(context);
        fk_status status = fk__config_copy(context, "fk_eval_config", &copy, sizeof copy, config,
                                           FK__SIZE_0_2(fk_eval_config, lanes));
        if (status == FK_OK && copy.physics) {
            physics = copy.physics;
            status = take_physics(context, &copy, &slots);
            copy.physics = NULL; /* the caller's; not kept */
        }
        if (status != FK_OK)
            return status;
        config = &copy;
    }
    fk_status status = fk__eval_create_slots(context, config, slots, out);
    if (status != FK_OK || !physics)
        return status;
    if (physics->pair_table)
        status = fk_eval_set_pair_table(*out, physics->pair_table);
    if (status == FK_OK && physics->exclusion_count)
        status = fk_eval_set_exclusions(*out, physics->exclusions, physics->exclusion_count);
    if (status != FK_OK) {
        fk_eval_destroy(*out);
        *out = NULL;
    }
    return status;
}

fk_status fk_eval_set_exclusions(fk_eval *eval, const size_t *pairs, size_t count)
{
    if (!eval || (count && !pairs))
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->state.context;
    fk_status begun = fk__eval_begin(eval, NULL);
    if (begun != FK_OK)
        return begun;
    if (count && !eval->state.kernel->uses_table)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "exclusions apply to the molecular kernels, not to %s",
                        eval->state.kernel->info.name);
    char message[256] = "";
    size_t *normalized = NULL, unique = 0;
    fk_status status =
        fk__exclusions_normalize(pairs, count, &normalized, &unique, message, sizeof message);
    if (status != FK_OK)
        return fk__fail(context, status, "%s", message);
    if (eval->state.config.exclusion_mode == FK_EXCLUDE_ON_THE_FLY &&
        eval->state.config.max_exclusions == 0) {
        size_t partners = 0;
        status = fk__exclusions_max_partners(normalized, unique, &partners);
        if (status == FK_OK && partners > FK__MAX_EXCLUSION_SLOTS)
            status = fk__fail(context, FK_ERR_INVALID_INPUT,
                              "a particle has %zu excluded partners; exclusions on the fly check "
                              "at most %d per particle (a compare per partner per pair): exclude "
                              "afterwards (FK_EXCLUDE_AFTERWARDS) for such data",
                              partners, FK__MAX_EXCLUSION_SLOTS);
        const unsigned slots = (unsigned)(partners + 3u) / 4u * 4u;
        if (status == FK_OK && slots != eval->state.law.exclusion_slots)
            status = fk__eval_rebuild(eval, slots); /* programs for the new partners */
        if (status != FK_OK) {
            free(normalized);
            return status;
        }
    }
    free(eval->state.law.exclusions);
    eval->state.law.exclusions = normalized;
    eval->state.law.exclusion_count = unique;
    eval->state.count = 0;
    eval->computed = 0;
    return FK_OK;
}
