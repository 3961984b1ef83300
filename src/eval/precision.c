/* Precision: the bound pre-pass that sets the data-scaled accumulators' parameters (fixed64,
 * narumi, nitadori_large), reproducible mode, the test hooks on the accumulator parameters. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"
#include "accum.h"

/* Runs the pre-pass on the particles just uploaded (one extra evaluation per set_particles) and
 * sets acc_param and the decode scale. The largest |term| is exact and independent of the variant
 * and the order, so fixed64's scale, and hence its results, are too. */
fk_status fk__eval_choose_accum_parameters(fk_eval *eval)
{
    if (!eval->accum->choose_parameters)
        return FK_OK;
    fk_context *context = eval->context;
    fk_status status = fk__eval_run_pass(eval, FK__PASS_BOUND, NULL);
    eval->computed = 0;
    const size_t values = eval->count * eval->components;
    uint32_t *packed = status == FK_OK ? malloc(values * 2 * sizeof *packed) : NULL;
    if (status == FK_OK && !packed)
        status = FK_ERR_HOST_MEMORY;
    if (status == FK_OK)
        status = fk__eval_read_result(eval, packed);
    if (status == FK_OK) { /* poison again: the main pass must be seen to write every result */
        const cl_uchar poison = 0xff;
        cl_int err = fk__enqueue_fill(context, eval->result, &poison, 1, values * 8, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clFinish(context->queue);
        if (err != CL_SUCCESS)
            status = fk__cl_fail(context, "clEnqueueFillBuffer", err);
    }
    if (status != FK_OK) {
        free(packed);
        return status;
    }
    struct fk_accum_bound bound = {.max_term = 0, .max_sum = 0, .count = eval->count};
    for (size_t v = 0; v < values; ++v) {
        float max_term, sum;
        memcpy(&max_term, &packed[2 * v], sizeof max_term);
        memcpy(&sum, &packed[2 * v + 1], sizeof sum);
        if (!(max_term <= bound.max_term)) /* NaN sticks */
            bound.max_term = isnan(bound.max_term) ? bound.max_term : (double)max_term;
        if (!(sum <= bound.max_sum))
            bound.max_sum = isnan(bound.max_sum) ? bound.max_sum : (double)sum;
    }
    free(packed);
    struct fk_accum_params params;
    if (!eval->accum->choose_parameters(&bound, &params))
        return fk__fail(context, FK_ERR_OVERFLOW,
                        "the %s accumulator cannot represent these forces: the largest pair term "
                        "is %g (sum of magnitudes %g)",
                        eval->accum->info.name, bound.max_term, bound.max_sum);
    memcpy(eval->acc_param, params.acc_param, sizeof eval->acc_param);
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
    if (clGetDeviceInfo(eval->context->device, CL_DEVICE_SINGLE_FP_CONFIG, sizeof config, &config,
                        NULL) != CL_SUCCESS)
        config = 0;
    const int float_correctly_rounded = (config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
    const int via_double = !float_correctly_rounded && eval->context->info.fp64;
    eval->reproducible = 1;
    eval->reproducible_reason = NULL;
    if (eval->kernel->inexact_builtin)
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
        eval->acc_param[index] = value;
}
