/* The evaluation's hooks for the integrator (device_step.h): the forces pass without the host. */
#include <math.h>

#include "core/eval/device_step.h"
#include "core/eval/eval_internal.h"

/* *buffer as a buffer kernels may write: set_particles creates the particle buffers read-only (a
 * hint the driver may act on, and writing such a buffer from a kernel is undefined), so the first
 * time a read-only one is replaced by a read-write copy. */
static fk_status make_writable(fk_eval *eval, cl_mem *buffer, const char *what)
{
    cl_mem_flags flags = 0;
    size_t bytes = 0;
    cl_int err = clGetMemObjectInfo(*buffer, CL_MEM_FLAGS, sizeof flags, &flags, NULL);
    if (err == CL_SUCCESS)
        err = clGetMemObjectInfo(*buffer, CL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    if (err != CL_SUCCESS)
        return fk__cl_fail(eval->state.context, "clGetMemObjectInfo (particles)", err);
    if (!(flags & CL_MEM_READ_ONLY))
        return FK_OK;
    cl_mem copy = NULL;
    fk_status status =
        fk__eval_create_buffer(&eval->state, &copy, CL_MEM_READ_WRITE, bytes, NULL, what);
    if (status != FK_OK)
        return status;
    err =
        clEnqueueCopyBuffer(eval->state.context->queue, *buffer, copy, 0, 0, bytes, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        clReleaseMemObject(copy);
        return fk__cl_fail(eval->state.context, "clEnqueueCopyBuffer (particles)", err);
    }
    clReleaseMemObject(*buffer); /* the copy was enqueued first: the runtime keeps it alive */
    *buffer = copy;
    return FK_OK;
}

fk_status fk__eval_device_begin(fk_eval *eval)
{
    fk_status status = fk__eval_begin(eval, "the integrator's step");
    if (status != FK_OK)
        return status;
    if (eval->body_written) { /* a host update's copy must land before the kernels overwrite it */
        const cl_int err = clWaitForEvents(1, &eval->body_written);
        clReleaseEvent(eval->body_written);
        eval->body_written = NULL;
        if (err != CL_SUCCESS)
            return fk__cl_fail(eval->state.context, "clEnqueueWriteBuffer (particles)", err);
    }
    status = make_writable(eval, &eval->state.body, "particles");
    if (status == FK_OK && eval->state.kernel->needs_velocity)
        status = make_writable(eval, &eval->state.body_aux, "velocities");
    if (status != FK_OK)
        return status;
    eval->state.host_body_current = 0; /* the host does not see the device's positions */
    eval->computed = 0;
    return FK_OK;
}

fk_status fk__eval_device_prepare(fk_eval *eval)
{
    eval->state.host_body_current = 0;
    return eval->loop->prepare(&eval->state, eval->loop_state);
}

fk_status fk__eval_device_rescale(fk_eval *eval)
{
    return fk__eval_choose_accum_parameters(eval);
}

fk_status fk__eval_enqueue_device_forces(fk_eval *eval, cl_mem forces, cl_mem potentials,
                                         cl_mem flags, cl_uint overflow_at)
{
    fk_context *context = eval->state.context;
    if (!eval->device_decode)
        return fk__fail(context, FK_ERR_UNSUPPORTED, "the device decode needs fp64");
    cl_event first = NULL, last = NULL, subtracted = NULL;
    fk_status status =
        eval->loop->enqueue(&eval->state, eval->loop_state, FK__PASS_FORCES, &first, &last);
    if (status != FK_OK)
        return status;
    status = fk__eval_share_zero(eval);
    if (status == FK_OK)
        status = fk__eval_enqueue_subtraction(eval, &subtracted); /* exclude afterwards */
    cl_event *events[] = {&first, &last, &subtracted};
    for (size_t k = 0; k < sizeof events / sizeof events[0]; ++k)
        if (*events[k]) /* the in-order queue orders what follows: nothing waits on them */
            clReleaseEvent(*events[k]);
    if (status != FK_OK) {
        clFinish(context->queue);
        return status;
    }
    const cl_uint count = (cl_uint)eval->state.count;
    const cl_uint components = eval->state.components;
    const cl_uint force_components = (cl_uint)eval->state.kernel->info.force_components;
    const cl_double scale = eval->accum_scale;
    int exponent = 0;
    frexp(eval->accum_scale, &exponent); /* as fk__eval_enqueue_output */
    const cl_int scale_exponent = exponent;
    const cl_uint potentials_from = 0;
    const cl_mem potential_buffer = potentials ? potentials : forces;
    status =
        FK__SET_ARGS(context, eval->decode_kernel, "decode", 0, FK__ARG(count), FK__ARG(components),
                     FK__ARG(force_components), FK__ARG(scale), FK__ARG(scale_exponent),
                     FK__ARG(eval->state.result), FK__ARG(forces), FK__ARG(potential_buffer),
                     FK__ARG(potentials_from), FK__ARG(flags), FK__ARG(overflow_at));
    if (status != FK_OK)
        return status;
    const size_t group = 64;
    const size_t global = (eval->state.count + group - 1) / group * group;
    const cl_int err = clEnqueueNDRangeKernel(context->queue, eval->decode_kernel, 1, NULL, &global,
                                              &group, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, "clEnqueueNDRangeKernel (decode)", err);
    return FK_OK;
}
