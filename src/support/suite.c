/* Taufer et al.'s synthetic suite on the device: see suite.h and cl/sumtest.cl. */
#include "support/suite.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/accum/accum.h"
#include "core/internal.h"

struct fkt_suite {
    fk_context *context;
    cl_program program;
    int has_double;
};

static const char *const sum_names[FKT_SUM_COUNT] = {"float", "double", "composite", "ti",
                                                     "fixed64"};
static const char *const doundo_names[FKT_DOUNDO_COUNT] = {"float", "double", "composite"};

const char *fkt_sum_name(fkt_sum_representation representation)
{
    return (unsigned)representation < FKT_SUM_COUNT ? sum_names[representation] : "unknown";
}

const char *fkt_doundo_name(fkt_doundo_representation representation)
{
    return (unsigned)representation < FKT_DOUNDO_COUNT ? doundo_names[representation] : "unknown";
}

fk_status fkt_suite_open(fk_context *context, fkt_suite **out)
{
    *out = NULL;
    if (!context)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(context);
    fkt_suite *suite = calloc(1, sizeof *suite);
    if (!suite)
        return FK_ERR_HOST_MEMORY;
    suite->context = context;
    suite->has_double = context->info.fp64;
    fk_program_result built;
    fk_status status = fk__program_build_file(
        context, "sumtest.cl", suite->has_double ? "-D FK_FP64=1" : "-D FK_FP64=0", &built);
    if (status != FK_OK) {
        free(suite);
        return status;
    }
    suite->program = built.program;
    *out = suite;
    return FK_OK;
}

void fkt_suite_close(fkt_suite *suite)
{
    if (!suite)
        return;
    if (suite->program)
        clReleaseProgram(suite->program);
    free(suite);
}

int fkt_suite_has_double(const fkt_suite *suite)
{
    return suite && suite->has_double;
}

/* Runs a kernel on `items` work-items and waits; returns the device seconds in *seconds. */
static fk_status run_kernel(fkt_suite *suite, cl_kernel kernel, size_t items, double *seconds)
{
    fk_context *context = suite->context;
    cl_event event = NULL;
    cl_int err =
        clEnqueueNDRangeKernel(context->queue, kernel, 1, NULL, &items, NULL, 0, NULL, &event);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, "clEnqueueNDRangeKernel", err);
    err = clWaitForEvents(1, &event);
    cl_ulong start = 0, end = 0;
    if (err == CL_SUCCESS && seconds) {
        clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL);
        clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL);
        *seconds = end > start ? (double)(end - start) * 1e-9 : 0.0;
    }
    clReleaseEvent(event);
    return err == CL_SUCCESS ? FK_OK : fk__cl_fail(context, "clWaitForEvents", err);
}

static float word_float(uint32_t word)
{
    float value;
    memcpy(&value, &word, sizeof value);
    return value;
}

/* The host's additions of partial sums, the same algorithms as cl/accum/eft.clh (ISO C mode
 * compiles without FMA contraction). */
typedef struct pair {
    float high, low;
} pair;

static pair two_sum(float a, float b)
{
    const float s = a + b, w = s - a, z1 = b - w, v = s - w, z2 = v - a;
    return (pair){s, z1 - z2};
}

static pair fast_two_sum(float a, float b)
{
    const float s = a + b, w = s - a;
    return (pair){s, b - w};
}

static pair ti_pair_add(pair a, pair b)
{
    const pair z = two_sum(a.high, b.high);
    const float r = (a.low + b.low) + z.low;
    return fast_two_sum(z.high, r);
}

static pair composite_add(pair x, pair y)
{
    const float value = x.high + y.high;
    const float t = value - x.high;
    const float error = x.high - (value - t) + (y.high - t) + x.low + y.low;
    return (pair){value, error};
}

static double combine(fkt_sum_representation representation, const uint32_t *partial,
                      size_t threads, double scale)
{
    switch (representation) {
    case FKT_SUM_FLOAT: {
        float sum = 0.0f;
        for (size_t t = 0; t < threads; ++t)
            sum += word_float(partial[2 * t]);
        return sum;
    }
    case FKT_SUM_DOUBLE: {
        double sum = 0.0;
        for (size_t t = 0; t < threads; ++t) {
            const uint64_t bits = ((uint64_t)partial[2 * t + 1] << 32) | partial[2 * t];
            double value;
            memcpy(&value, &bits, sizeof value);
            sum += value;
        }
        return sum;
    }
    case FKT_SUM_COMPOSITE:
    case FKT_SUM_TI: {
        pair sum = {0.0f, 0.0f};
        for (size_t t = 0; t < threads; ++t) {
            const pair part = {word_float(partial[2 * t]), word_float(partial[2 * t + 1])};
            sum = representation == FKT_SUM_TI ? ti_pair_add(sum, part) : composite_add(sum, part);
        }
        return (double)sum.high + (double)sum.low;
    }
    case FKT_SUM_FIXED64: {
        uint64_t sum = 0; /* the scale leaves room for every partial: no wrap */
        for (size_t t = 0; t < threads; ++t) {
            if (fk__fixed64_overflowed(partial[2 * t], partial[2 * t + 1]))
                return NAN;
            sum += ((uint64_t)partial[2 * t + 1] << 32) | partial[2 * t];
        }
        int64_t value;
        memcpy(&value, &sum, sizeof value);
        return (double)value / scale;
    }
    case FKT_SUM_COUNT:
        break;
    }
    return NAN;
}

static const char *const sum_kernels[FKT_SUM_COUNT] = {
    "fk_sum_float", "fk_sum_double", "fk_sum_composite", "fk_sum_ti", "fk_sum_fixed64"};

fk_status fkt_suite_sum(fkt_suite *suite, const float *values, size_t count, size_t threads,
                        double sums[FKT_SUM_COUNT])
{
    if (!suite || !values || count == 0 || threads == 0 || threads > count || count > (1u << 30))
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = suite->context;
    fk__clear_error(context);
    fk_accum_bound bound = {.max_term = 0, .max_sum = 0, .count = count};
    for (size_t i = 0; i < count; ++i)
        if (!(fabs(values[i]) <= bound.max_term))
            bound.max_term = fabs(values[i]);
    fk_accum_params params;
    if (!fk__choose_fixed64(&bound, &params))
        return fk__fail(context, FK_ERR_INVALID_INPUT, "the values are not all finite");

    cl_int err = CL_SUCCESS;
    cl_mem input = clCreateBuffer(context->cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                  count * sizeof *values, (void *)values, &err);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, "clCreateBuffer", err);
    cl_mem output = clCreateBuffer(context->cl, CL_MEM_WRITE_ONLY, threads * 8, NULL, &err);
    uint32_t *partial = malloc(threads * 8);
    fk_status status = err != CL_SUCCESS ? fk__cl_fail(context, "clCreateBuffer", err)
                       : !partial        ? FK_ERR_HOST_MEMORY
                                         : FK_OK;
    const cl_int count_arg = (cl_int)count, threads_arg = (cl_int)threads;
    const cl_float2 scale_limit = {{params.acc_param[0], params.acc_param[1]}};
    for (int r = 0; r < FKT_SUM_COUNT && status == FK_OK; ++r) {
        sums[r] = NAN;
        if (r == FKT_SUM_DOUBLE && !suite->has_double)
            continue;
        cl_kernel kernel = clCreateKernel(suite->program, sum_kernels[r], &err);
        if (err != CL_SUCCESS) {
            status = fk__cl_fail(context, "clCreateKernel", err);
            break;
        }
        cl_uint a = 0;
        err |= clSetKernelArg(kernel, a++, sizeof input, &input);
        err |= clSetKernelArg(kernel, a++, sizeof count_arg, &count_arg);
        err |= clSetKernelArg(kernel, a++, sizeof threads_arg, &threads_arg);
        if (r == FKT_SUM_FIXED64)
            err |= clSetKernelArg(kernel, a++, sizeof scale_limit, &scale_limit);
        err |= clSetKernelArg(kernel, a++, sizeof output, &output);
        status = err != CL_SUCCESS ? fk__cl_fail(context, "clSetKernelArg", err)
                                   : run_kernel(suite, kernel, threads, NULL);
        clReleaseKernel(kernel);
        if (status == FK_OK) {
            err = clEnqueueReadBuffer(context->queue, output, CL_TRUE, 0, threads * 8, partial, 0,
                                      NULL, NULL);
            if (err != CL_SUCCESS)
                status = fk__cl_fail(context, "clEnqueueReadBuffer", err);
        }
        if (status == FK_OK)
            sums[r] = combine((fkt_sum_representation)r, partial, threads, params.scale);
        if (status == FK_OK && r == FKT_SUM_FIXED64 && isnan(sums[r]))
            status = fk__fail(context, FK_ERR_OVERFLOW, "fixed64 sum left its range");
    }
    free(partial);
    if (output)
        clReleaseMemObject(output);
    clReleaseMemObject(input);
    return status;
}

static const char *const doundo_kernels[FKT_DOUNDO_COUNT] = {"fk_doundo_float", "fk_doundo_double",
                                                             "fk_doundo_composite"};

fk_status fkt_suite_doundo(fkt_suite *suite, fkt_doundo_representation representation, float x0,
                           float y_low, float y_high, uint32_t seed, int iterations,
                           int divide_first, double *final, double *seconds)
{
    if (!suite || (unsigned)representation >= FKT_DOUNDO_COUNT || iterations < 0 || !final)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = suite->context;
    fk__clear_error(context);
    if (representation == FKT_DOUNDO_DOUBLE && !suite->has_double)
        return fk__fail(context, FK_ERR_UNSUPPORTED, "%s has no double precision",
                        context->info.name);
    cl_int err = CL_SUCCESS;
    cl_mem output = clCreateBuffer(context->cl, CL_MEM_WRITE_ONLY, 8, NULL, &err);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, "clCreateBuffer", err);
    cl_kernel kernel = clCreateKernel(suite->program, doundo_kernels[representation], &err);
    if (err != CL_SUCCESS) {
        clReleaseMemObject(output);
        return fk__cl_fail(context, "clCreateKernel", err);
    }
    const cl_float2 range = {{y_low, y_high}};
    const cl_uint seed_arg = seed ? seed : 1u; /* xorshift's state must not be 0 */
    const cl_int iterations_arg = iterations, divide_arg = divide_first != 0;
    cl_uint a = 0;
    err |= clSetKernelArg(kernel, a++, sizeof x0, &x0);
    err |= clSetKernelArg(kernel, a++, sizeof range, &range);
    err |= clSetKernelArg(kernel, a++, sizeof seed_arg, &seed_arg);
    err |= clSetKernelArg(kernel, a++, sizeof iterations_arg, &iterations_arg);
    err |= clSetKernelArg(kernel, a++, sizeof divide_arg, &divide_arg);
    err |= clSetKernelArg(kernel, a++, sizeof output, &output);
    fk_status status = err != CL_SUCCESS ? fk__cl_fail(context, "clSetKernelArg", err)
                                         : run_kernel(suite, kernel, 1, seconds);
    uint32_t words[2] = {0, 0};
    if (status == FK_OK) {
        err = clEnqueueReadBuffer(context->queue, output, CL_TRUE, 0, sizeof words, words, 0, NULL,
                                  NULL);
        if (err != CL_SUCCESS)
            status = fk__cl_fail(context, "clEnqueueReadBuffer", err);
    }
    if (status == FK_OK) {
        if (representation == FKT_DOUNDO_DOUBLE) {
            const uint64_t bits = ((uint64_t)words[1] << 32) | words[0];
            memcpy(final, &bits, sizeof *final);
        } else if (representation == FKT_DOUNDO_COMPOSITE) {
            *final = (double)word_float(words[0]) + (double)word_float(words[1]);
        } else {
            *final = word_float(words[0]);
        }
    }
    clReleaseKernel(kernel);
    clReleaseMemObject(output);
    return status;
}
