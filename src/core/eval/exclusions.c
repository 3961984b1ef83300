/* Exclusions: exclude afterwards (the subtraction kernel, built and enqueued after a forces
 * pass) and fk_eval_set_exclusions (with automatic on-the-fly slots, a rebuild for the partners
 * the new exclusions need). */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/eval/eval_internal.h"

/* Exclude afterwards subtracts on the device, after any of the pair loops (fk_eval_compute), with
 * cl/pairwise.cl's fk_subtract_exclusions, built with the loop's request on the scalar template:
 * for the scalar all-pairs loop that is the loop's own program, which the context's program cache
 * hands back without a second build. */
fk_status fk__eval_create_subtraction(fk_eval *eval, const fk_program_request *request)
{
    if (!eval->kernel->uses_table || eval->config.exclusion_mode != FK_EXCLUDE_AFTERWARDS)
        return FK_OK;
    cl_int err = CL_SUCCESS;
    fk_program_request own = *request;
    own.file = NULL;
    own.lanes = 0;
    fk_program_result built;
    fk_status status = fk__program_build(eval->context, &own, &built);
    if (status != FK_OK)
        return status;
    eval->subtract_program = built.program;
    eval->subtract = clCreateKernel(eval->subtract_program, "fk_subtract_exclusions", &err);
    if (err != CL_SUCCESS) {
        eval->subtract = NULL;
        return fk__cl_fail(eval->context, "clCreateKernel (fk_subtract_exclusions)", err);
    }
    return FK_OK;
}

/* Exclude afterwards: enqueues fk_subtract_exclusions on the results of the pair loop just
 * enqueued (the queue is in order). *event stays NULL when there is nothing to subtract. Not after
 * the bound pre-pass: it measures every pair's term, which bounds the subtracted ones too
 * (cl/pairwise.cl). */
fk_status fk__eval_enqueue_subtraction(fk_eval *eval, cl_event *event)
{
    *event = NULL;
    if (!eval->excluded)
        return FK_OK;
    const cl_int n = (cl_int)eval->count;
    const cl_float4 acc_param = fk__eval_acc_param(eval);
    fk_status status = FK__SET_ARGS(
        eval->context, eval->subtract, "fk_subtract_exclusions", 0, FK__ARG(n),
        FK__ARG(eval->excluded), FK__ARG(eval->body), FK__ARG(eval->body_aux), FK__ARG(eval->table),
        FK__ARG(eval->physics), FK__ARG(acc_param), FK__ARG(eval->result));
    if (status != FK_OK)
        return status;
    const size_t group = 64;
    const size_t global = (eval->count + group - 1) / group * group;
    const cl_int err = clEnqueueNDRangeKernel(eval->context->queue, eval->subtract, 1, NULL,
                                              &global, &group, 0, NULL, event);
    if (err != CL_SUCCESS) {
        *event = NULL;
        return fk__cl_fail(eval->context, "clEnqueueNDRangeKernel (fk_subtract_exclusions)", err);
    }
    return FK_OK;
}

/* Exclusions on the fly with automatic slots: the programs are rebuilt for the partners the new
 * exclusions need. A new evaluation of the same configuration takes over; the pair table the caller
 * set moves with it. On failure the evaluation is left as it was. */
static fk_status rebuild_for_exclusion_slots(fk_eval *eval, unsigned slots)
{
    fk_eval *fresh = NULL;
    fk_status status = fk__eval_create_slots(eval->context, &eval->config, slots, &fresh);
    if (status != FK_OK)
        return status;
    const fk__pair_params pairs = eval->law.pairs;
    eval->law.pairs = fresh->law.pairs;
    fresh->law.pairs = pairs;
    cl_mem table = eval->table;
    eval->table = fresh->table;
    fresh->table = table;
    /* the caller's result buffers (fk_eval_set_results_cl) stay set too */
    const cl_mem forces = eval->results_forces, potentials = eval->results_potentials;
    eval->results_forces = fresh->results_forces;
    eval->results_potentials = fresh->results_potentials;
    fresh->results_forces = forces;
    fresh->results_potentials = potentials;
    const fk_eval previous = *eval;
    *eval = *fresh;
    *fresh = previous;
    /* the same loop (config holds FK_ALGORITHM_AUTO's choice), chosen for the same reason */
    eval->variant.algorithm_source = previous.variant.algorithm_source;
    fk_eval_destroy(fresh);
    return FK_OK;
}

fk_status fk_eval_set_exclusions(fk_eval *eval, const size_t *pairs, size_t count)
{
    if (!eval || (count && !pairs))
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->context;
    fk_status begun = fk__eval_begin(eval, NULL);
    if (begun != FK_OK)
        return begun;
    if (count && !eval->kernel->uses_table)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "exclusions apply to the molecular kernels, not to %s",
                        eval->kernel->info.name);
    char message[256] = "";
    size_t *normalized = NULL, unique = 0;
    fk_status status =
        fk__exclusions_normalize(pairs, count, &normalized, &unique, message, sizeof message);
    if (status != FK_OK)
        return fk__fail(context, status, "%s", message);
    if (eval->config.exclusion_mode == FK_EXCLUDE_ON_THE_FLY && eval->config.max_exclusions == 0) {
        size_t partners = 0;
        status = fk__exclusions_max_partners(normalized, unique, &partners);
        if (status == FK_OK && partners > FK__MAX_EXCLUSION_SLOTS)
            status = fk__fail(context, FK_ERR_INVALID_INPUT,
                              "a particle has %zu excluded partners; exclusions on the fly check "
                              "at most %d per particle (a compare per partner per pair): exclude "
                              "afterwards (FK_EXCLUDE_AFTERWARDS) for such data",
                              partners, FK__MAX_EXCLUSION_SLOTS);
        const unsigned slots = (unsigned)(partners + 3u) / 4u * 4u;
        if (status == FK_OK && slots != eval->law.exclusion_slots)
            status = rebuild_for_exclusion_slots(eval, slots);
        if (status != FK_OK) {
            free(normalized);
            return status;
        }
    }
    free(eval->law.exclusions);
    eval->law.exclusions = normalized;
    eval->law.exclusion_count = unique;
    eval->count = 0;
    eval->computed = 0;
    return FK_OK;
}
