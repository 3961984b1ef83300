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
    if (!eval->state.kernel->uses_table ||
        eval->state.config.exclusion_mode != FK_EXCLUDE_AFTERWARDS)
        return FK_OK;
    cl_int err = CL_SUCCESS;
    fk_program_request own = *request;
    own.file = NULL;
    own.lanes = 0;
    fk_program_result built;
    fk_status status = fk__program_build(eval->state.context, &own, &built);
    if (status != FK_OK)
        return status;
    eval->subtract_program = built.program;
    eval->subtract = clCreateKernel(eval->subtract_program, "fk_subtract_exclusions", &err);
    if (err != CL_SUCCESS) {
        eval->subtract = NULL;
        return fk__cl_fail(eval->state.context, "clCreateKernel (fk_subtract_exclusions)", err);
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
    const cl_int n = (cl_int)eval->state.count;
    const cl_float4 acc_param = fk__eval_acc_param(&eval->state);
    fk_status status =
        FK__SET_ARGS(eval->state.context, eval->subtract, "fk_subtract_exclusions", 0, FK__ARG(n),
                     FK__ARG(eval->excluded), FK__ARG(eval->state.body),
                     FK__ARG(eval->state.body_aux), FK__ARG(eval->state.table),
                     FK__ARG(eval->state.physics), FK__ARG(acc_param), FK__ARG(eval->state.result));
    if (status != FK_OK)
        return status;
    const size_t group = 64;
    const size_t global = (eval->state.count + group - 1) / group * group;
    const cl_int err = clEnqueueNDRangeKernel(eval->state.context->queue, eval->subtract, 1, NULL,
                                              &global, &group, 0, NULL, event);
    if (err != CL_SUCCESS) {
        *event = NULL;
        return fk__cl_fail(eval->state.context, "clEnqueueNDRangeKernel (fk_subtract_exclusions)",
                           err);
    }
    return FK_OK;
}
