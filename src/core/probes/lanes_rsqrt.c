/* The CPU lane loop's reciprocal square root (cl/forces/ga.clh, FK_LANE_RSQRT_NEWTON): whether
 * this device's native_rsqrt is a good enough estimate for one Newton step.
 *
 * Why: the lane loop is bound by its one rsqrt per pair. rsqrt (2 ulp) becomes a square root and a
 * division on x86 (POCL, Intel's runtime), which share one divider; GCC's baseline takes vrsqrtps
 * (a 12-bit estimate) and one Newton step instead. Intel's runtime maps native_rsqrt to that
 * estimate, and native_rsqrt plus one Newton step made ga's lane loop 1.25x faster there (0.76x to
 * 0.95x the OpenMP baseline, N = 8,192). native_ accuracy is implementation-defined, so the host
 * measures it once per context: relative error at most 2^-11 on inputs spread over 2^-100 ..
 * 2^100, so that after the step the error is a few units of the last place (1.5 e^2 + rounding),
 * like rsqrt's. Where native_rsqrt is as accurate as rsqrt (POCL: the same square root and
 * division) the step would only cost, and the lane loop keeps rsqrt; so it does on any failure of
 * the probe. */
#include <math.h>
#include <stdlib.h>

#include "core/internal.h"

#define PROBE_COUNT 4096
#define PROBE_TOLERANCE 0x1p-11 /* x86 vrsqrtps: 1.5 * 2^-12 */
/* A native_rsqrt this accurate is no estimate (POCL's is the square root and the division): the
 * Newton step would only add work, so the lane loop keeps rsqrt. */
#define FULL_PRECISION 0x1p-22

static int probe(fk_context *context)
{
    float *x = malloc(2 * PROBE_COUNT * sizeof *x);
    if (!x)
        return 0;
    float *y = x + PROBE_COUNT;
    /* Every binade from 2^-100 to 2^100 at a few mantissas, plus a fine sweep of one binade. */
    for (size_t i = 0; i < PROBE_COUNT; ++i)
        x[i] = i < PROBE_COUNT / 2
                   ? ldexpf(1.0f + (float)(i % 16) / 16.0f + 1.0f / 4096.0f, (int)(i / 16) - 100)
                   : 1.0f + (float)(i - PROBE_COUNT / 2) / (float)(PROBE_COUNT / 2) * 3.0f;
    fk_program_result built;
    int good = 0;
    cl_int err = CL_SUCCESS;
    cl_kernel kernel = NULL;
    cl_mem in = NULL, out = NULL;
    /* The context's last error is not this probe's business: a failure just means "no". */
    if (fk__program_build_file(context, "probe_native_rsqrt.cl", NULL, &built) != FK_OK) {
        fk__clear_error(context);
        free(x);
        return 0;
    }
    kernel = clCreateKernel(built.program, "fk_probe_native_rsqrt", &err);
    if (err == CL_SUCCESS)
        in = clCreateBuffer(context->cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                            PROBE_COUNT * sizeof *x, x, &err);
    if (err == CL_SUCCESS)
        out = clCreateBuffer(context->cl, CL_MEM_WRITE_ONLY, PROBE_COUNT * sizeof *y, NULL, &err);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kernel, 0, sizeof in, &in);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kernel, 1, sizeof out, &out);
    const size_t global = PROBE_COUNT;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(context->queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(context->queue, out, CL_TRUE, 0, PROBE_COUNT * sizeof *y, y, 0,
                                  NULL, NULL);
    if (err == CL_SUCCESS) {
        double worst = 0;
        for (size_t i = 0; i < PROBE_COUNT; ++i) {
            const double exact = 1.0 / sqrt((double)x[i]);
            const double relative = fabs((double)y[i] - exact) / exact;
            if (!(relative <= worst)) /* NaN sticks */
                worst = relative;
        }
        good = worst <= PROBE_TOLERANCE && worst > FULL_PRECISION;
    }
    if (out)
        clReleaseMemObject(out);
    if (in)
        clReleaseMemObject(in);
    if (kernel)
        clReleaseKernel(kernel);
    clReleaseProgram(built.program);
    free(x);
    return good;
}

int fk__native_rsqrt_estimate_ok(fk_context *context)
{
    if (context->native_rsqrt == 0)
        context->native_rsqrt = probe(context) ? 1 : 2;
    return context->native_rsqrt == 1;
}
