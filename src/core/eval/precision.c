/* Precision: the bound pre-pass that sets the data-scaled accumulators' parameters (fixed64,
 * narumi, nitadori_large), reproducible mode, the test hooks on the accumulator parameters. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/eval/eval_internal.h"
#include "core/accum/accum.h"

/* The bound's reduction on the device (cl/bound_reduce.cl): groups of FK_BOUND_GROUP work-items,
 * FK_BOUND_GROUPS of them, whose partial maxima the host reads (512 bytes). */
#define FK_BOUND_GROUP 64
#define FK_BOUND_GROUPS 64

fk_status fk__eval_create_bound_reduce(fk_eval *eval)
{
    if (!eval->state.accum->choose_parameters)
        return FK_OK;
    fk_context *context = eval->state.context;
    char options[64];
    snprintf(options, sizeof options, "-D FK_BOUND_GROUP=%d", FK_BOUND_GROUP);
    fk_program_result built;
    fk_status status = fk__program_build_file(context, "bound_reduce.cl", options, &built);
    if (status != FK_OK)
        return status;
    eval->bound_program = built.program;
    cl_int err = CL_SUCCESS;
    eval->bound_reduce = clCreateKernel(eval->bound_program, "fk_bound_reduce", &err);
    if (err != CL_SUCCESS) {
        eval->bound_reduce = NULL;
        return fk__cl_fail(context, "clCreateKernel (fk_bound_reduce)", err);
    }
    return fk__eval_create_buffer(&eval->state, &eval->bound_partials, CL_MEM_READ_WRITE,
                                  FK_BOUND_GROUPS * 2 * sizeof(cl_float), NULL, "bound partials");
}

void fk__eval_release_bound_reduce(fk_eval *eval)
{
    FK__RELEASE_BUFFERS(eval->bound_partials);
    FK__RELEASE_KERNELS(eval->bound_reduce);
    FK__RELEASE_PROGRAMS(eval->bound_program);
    eval->bound_partials = NULL;
    eval->bound_reduce = NULL;
    eval->bound_program = NULL;
}

/* Runs the pre-pass on the particles just uploaded (one extra pass per set_particles and
 * update_positions), reduces it on the device and sets acc_param and the decode scale. The largest
 * |term| is exact and independent of the variant and the order, so fixed64's scale, and hence its
 * results, are too. One wait: the pass, the reduction and the poisoning of the results are
 * enqueued in order and the blocking read of the partial maxima comes last. */
fk_status fk__eval_choose_accum_parameters(fk_eval *eval)
{
    if (!eval->state.accum->choose_parameters)
        return FK_OK;
    fk_context *context = eval->state.context;
    eval->computed = 0;
    cl_event first = NULL, last = NULL;
    fk_status status =
        eval->loop->enqueue(&eval->state, eval->loop_state, FK__PASS_BOUND, &first, &last);
    if (status != FK_OK)
        return status;
    /* A coordinated part measured its share only: the other particles' terms read as zero. */
    if (fk__share_applies(&eval->state, FK__PASS_BOUND))
        status = fk__eval_share_zero(eval);
    const cl_uint values = (cl_uint)(eval->state.count * eval->state.components);
    if (status == FK_OK)
        status = FK__SET_ARGS(context, eval->bound_reduce, "fk_bound_reduce", 0, FK__ARG(values),
                              FK__ARG(eval->state.result), FK__ARG(eval->bound_partials));
    const size_t group = FK_BOUND_GROUP, global = (size_t)FK_BOUND_GROUP * FK_BOUND_GROUPS;
    cl_int err = CL_SUCCESS;
    if (status == FK_OK) {
        err = clEnqueueNDRangeKernel(context->queue, eval->bound_reduce, 1, NULL, &global, &group,
                                     0, NULL, NULL);
        if (err != CL_SUCCESS)
            status = fk__cl_fail(context, "clEnqueueNDRangeKernel (fk_bound_reduce)", err);
    }
    if (status == FK_OK) { /* poison again: the main pass must be seen to write every result */
        const cl_uchar poison = 0xff;
        err = fk__enqueue_fill(context, eval->state.result, &poison, 1, (size_t)values * 8, 0, NULL,
                               NULL);
        if (err != CL_SUCCESS)
            status = fk__cl_fail(context, "clEnqueueFillBuffer", err);
    }
    cl_float partials[2 * FK_BOUND_GROUPS];
    if (status == FK_OK) {
        err = clEnqueueReadBuffer(context->queue, eval->bound_partials, CL_TRUE, 0, sizeof partials,
                                  partials, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            status = fk__cl_fail(context, "clEnqueueReadBuffer (bound)", err);
    }
    if (status != FK_OK) {
        clFinish(context->queue);
        if (first)
            clReleaseEvent(first);
        if (last)
            clReleaseEvent(last);
        return status;
    }
    status = fk__eval_finish(eval, first, last, "bound pre-pass", NULL);
    if (status != FK_OK)
        return status;
    struct fk_accum_bound bound = {.max_term = 0, .max_sum = 0, .count = eval->state.count};
    for (size_t g = 0; g < FK_BOUND_GROUPS; ++g) {
        const float max_term = partials[2 * g], sum = partials[2 * g + 1];
        if (!(max_term <= bound.max_term)) /* NaN sticks */
            bound.max_term = isnan(bound.max_term) ? bound.max_term : (double)max_term;
        if (!(sum <= bound.max_sum))
            bound.max_sum = isnan(bound.max_sum) ? bound.max_sum : (double)sum;
    }
    eval->bound_max_term = bound.max_term;
    eval->bound_max_sum = bound.max_sum;
    return fk__eval_apply_bound(eval, &bound);
}

/* The parameters of a bound (the pre-pass's, or fk_eval_set_bound's). */
fk_status fk__eval_apply_bound(fk_eval *eval, const struct fk_accum_bound *bound)
{
    struct fk_accum_params params;
    if (!eval->state.accum->choose_parameters(bound, &params))
        return fk__fail(eval->state.context, FK_ERR_OVERFLOW,
                        "the %s accumulator cannot represent these forces: the largest pair term "
                        "is %g (sum of magnitudes %g)",
                        eval->state.accum->info.name, bound->max_term, bound->max_sum);
    memcpy(eval->state.acc_param, params.acc_param, sizeof eval->state.acc_param);
    eval->accum_scale = params.scale;
    return FK_OK;
}

/* Reproducible mode: REPRODUCIBLE=1 so that force laws use correctly rounded divide and sqrt
 * instead of rsqrt: in float where the device has them (the build flag is only valid there), else
 * through double (cl/forces/reproducible.clh). Denormals are kept: no -cl-denorms-are-zero. What
 * stands in the way of bit identity is reported through fk_eval_reproducible(). */
const char *fk__eval_reproducible_options(fk_eval *eval)
{
    cl_device_fp_config config = 0;
    if (clGetDeviceInfo(eval->state.context->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof config,
                        &config, NULL) != CL_SUCCESS)
        config = 0;
    const int float_correctly_rounded = (config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
    const int via_double = !float_correctly_rounded && eval->state.context->info.fp64;
    eval->reproducible = 1;
    eval->reproducible_reason = NULL;
    if (eval->state.kernel->inexact_builtin)
        eval->reproducible_reason =
            "the force law uses exp, which OpenCL does not round correctly: "
            "its terms may differ between devices and between programs";
    else if (!float_correctly_rounded && !via_double)
        eval->reproducible_reason = "the device has neither correctly rounded single-precision "
                                    "divide and sqrt (CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) nor "
                                    "double precision to build them from";
    else if (!(config & CL_FP_DENORM))
        eval->reproducible_reason = "the device flushes single-precision denormals to zero";
    if (eval->reproducible_reason)
        eval->reproducible = 0;
    if (float_correctly_rounded)
        return "-D REPRODUCIBLE=1 -cl-fp32-correctly-rounded-divide-sqrt";
    return via_double ? "-D REPRODUCIBLE=1 -D FK_CR_VIA_DOUBLE=1" : "-D REPRODUCIBLE=1";
}

int fk_eval_reproducible(const fk_eval *eval, const char **reason)
{
    if (reason)
        *reason = eval ? eval->reproducible_reason : NULL;
    return eval ? eval->reproducible : -1;
}

double fk__eval_accum_scale(const fk_eval *eval)
{
    return eval ? eval->accum_scale : 0.0;
}

void fk__eval_set_accum_param(fk_eval *eval, unsigned index, float value)
{
    if (eval && index < 4)
        eval->state.acc_param[index] = value;
}
