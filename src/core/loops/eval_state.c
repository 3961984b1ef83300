/* The helpers of the evaluation's state that the loops read (eval_state.h): the accumulator's
 * parameters, buffers, the positions verdict and the split of a share. The evaluation calls them
 * too; they never call into it. */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "core/loops/eval_state.h"

cl_float4 fk__eval_acc_param(const fk__eval_state *eval)
{
    const cl_float4 value = {
        {eval->acc_param[0], eval->acc_param[1], eval->acc_param[2], eval->acc_param[3]}};
    return value;
}

fk_status fk__eval_create_buffer(const fk__eval_state *eval, cl_mem *buffer, cl_mem_flags flags,
                                 size_t bytes, void *host, const char *what)
{
    cl_int err = CL_SUCCESS;
    *buffer = clCreateBuffer(eval->context->cl, flags, bytes, host, &err);
    if (err != CL_SUCCESS)
        return fk__fail(eval->context, fk__cl_status(err),
                        "clCreateBuffer (%s, %zu bytes) failed: %s (%d)", what, bytes,
                        fk__cl_error_name(err), (int)err);
    return FK_OK;
}

fk_status fk__eval_positions_verdict(fk__eval_state *eval)
{
    if (!eval->verdict_read)
        return FK_OK;
    /* Done already when the loop's own blocking read came after it (the usual case): no wait */
    cl_int state = CL_QUEUED;
    cl_int err = clGetEventInfo(eval->verdict_read, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state,
                                &state, NULL);
    if (err == CL_SUCCESS && state != CL_COMPLETE)
        err = state < 0 ? state : clWaitForEvents(1, &eval->verdict_read);
    clReleaseEvent(eval->verdict_read);
    eval->verdict_read = NULL;
    fk_context *context = eval->context;
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, "clEnqueueReadBuffer (positions flag)", err);
    const cl_int first_bad = *eval->positions_verdict;
    if (first_bad < 0 || (size_t)first_bad >= eval->count)
        return FK_OK;
    eval->positions_refused = 1;
    if (eval->verdict_from_host)
        for (int k = 0; k < 3; ++k) {
            const double x = eval->positions_host[3 * (size_t)first_bad + (size_t)k];
            if (!(fabsf((float)x) <= FLT_MAX))
                return fk__fail(context, FK_ERR_INVALID_INPUT,
                                "particle %d: coordinate %d is %g (not a finite float)", first_bad,
                                k, x);
        }
    return fk__fail(context, FK_ERR_INVALID_INPUT,
                    "particle %d: a coordinate is NaN, infinite or beyond float's range",
                    first_bad);
}

int fk__share_active(const fk__eval_state *eval)
{
    return eval->share_parts > 1 || eval->share_explicit;
}

void fk__share_units(const fk__eval_state *eval, size_t units, size_t *first, size_t *end)
{
    if (eval->share_explicit) { /* only loops whose units are particles take a range */
        *first = eval->share_from < units ? eval->share_from : units;
        *end = eval->share_to < units ? eval->share_to : units;
        return;
    }
    if (eval->share_parts <= 1) {
        *first = 0;
        *end = units;
        return;
    }
    /* The same formula on every part: the ranges tile [0, units) exactly. */
    const uint64_t parts = (uint64_t)eval->share_parts, part = (uint64_t)eval->share_part;
    *first = (size_t)((uint64_t)units * part / parts);
    *end = (size_t)((uint64_t)units * (part + 1) / parts);
}

int fk__share_applies(const fk__eval_state *eval, fk__pass pass)
{
    return fk__share_active(eval) && (pass == FK__PASS_FORCES || eval->config.coordinated_scale);
}
