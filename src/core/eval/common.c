/* What every entry point of the evaluation shares (eval_internal.h): the first step of a call, the
 * wait for a pass and its device time, the release of the particle buffers and of a compute's
 * events, the zeroing outside a share. The lowest file of src/core/eval/: it calls only the
 * context and OpenCL, so that the entry points (eval.c, upload.c, readback.c, share.c,
 * precision.c, exclusions.c, device_step.c) all call down into it and never into each other's
 * callers. */
#include <stdio.h>

#include "core/eval/eval_internal.h"

void fk__eval_release_buffers(fk_eval *eval)
{
    /* Not the pair table: it is uploaded once, by fk_eval_set_pair_table or the first particles. */
    cl_mem *buffers[] = {&eval->state.body,    &eval->state.body_aux, &eval->state.physics,
                         &eval->state.partial, &eval->state.result,   &eval->excluded};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; ++i) {
        if (*buffers[i] &&
            (buffers[i] != &eval->state.partial || eval->state.partial != eval->state.result))
            clReleaseMemObject(*buffers[i]);
        *buffers[i] = NULL;
    }
}

double fk__event_seconds(cl_event first, cl_event last)
{
    cl_ulong start = 0, end = 0;
    if (clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) !=
            CL_SUCCESS ||
        clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) !=
            CL_SUCCESS)
        return -1.0;
    return end > start ? (double)(end - start) * 1e-9 : 0.0;
}

fk_status fk__eval_finish(fk_eval *eval, cl_event first, cl_event last, const char *what,
                          double *seconds)
{
    fk_context *context = eval->state.context;
    if (!last)
        last = first;
    fk_status status = FK_OK;
    const cl_int err = clFinish(context->queue);
    if (err != CL_SUCCESS) {
        status = fk__cl_fail(context, "clFinish", err);
    } else {
        /* An in-order queue ran first .. last; a launch that failed says so in its status. */
        cl_int state_first = CL_COMPLETE, state_last = CL_COMPLETE;
        if (first)
            clGetEventInfo(first, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state_first,
                           &state_first, NULL);
        if (last && last != first)
            clGetEventInfo(last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state_last, &state_last,
                           NULL);
        if (state_first < 0 || state_last < 0) {
            char call[96];
            snprintf(call, sizeof call, "kernel execution (%s)", what);
            status = fk__cl_fail(context, call, state_first < 0 ? state_first : state_last);
        }
    }
    if (status == FK_OK && seconds)
        *seconds = first ? fk__event_seconds(first, last) : -1.0;
    if (first)
        clReleaseEvent(first);
    if (last && last != first)
        clReleaseEvent(last);
    return status;
}

void fk__eval_release_pending(fk_eval *eval)
{
    cl_event *events[] = {&eval->pending_first, &eval->pending_last, &eval->pending_read};
    for (size_t i = 0; i < sizeof events / sizeof events[0]; ++i) {
        if (*events[i])
            clReleaseEvent(*events[i]);
        *events[i] = NULL;
    }
    eval->pending = 0;
}

/* The first step of every entry point but wait and destroy: the error cleared, no compute in
 * flight, and (call not NULL) particles set. */
fk_status fk__eval_begin(fk_eval *eval, const char *call)
{
    fk__clear_error(eval->state.context);
    if (eval->pending)
        return fk__fail(eval->state.context, FK_ERR_STATE,
                        "a compute is in flight (fk_eval_compute_async): call fk_eval_wait first");
    if (call && (eval->state.count == 0 || !eval->state.host_body))
        return fk__fail(eval->state.context, FK_ERR_STATE, "%s before set_particles", call);
    return FK_OK;
}

fk_status fk__eval_share_zero(fk_eval *eval)
{
    if (!fk__share_active(&eval->state) || !eval->state.share_range)
        return FK_OK;
    const size_t stride = eval->state.components * 8; /* packed: two words per component */
    const cl_uint zero = 0;
    const size_t ranges[2][2] = {{0, eval->state.share_first},
                                 {eval->state.share_end, eval->state.count}};
    for (int r = 0; r < 2; ++r) {
        if (ranges[r][1] <= ranges[r][0])
            continue;
        const cl_int err = fk__enqueue_fill_at(
            eval->state.context, eval->state.result, &zero, sizeof zero, ranges[r][0] * stride,
            (ranges[r][1] - ranges[r][0]) * stride, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            return fk__cl_fail(eval->state.context, "clEnqueueFillBuffer (outside the share)", err);
    }
    return FK_OK;
}
