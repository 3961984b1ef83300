/* The output stage (issue #16): the results of a forces pass in the caller's hands without a
 * per-call allocation, a pageable copy or a decode loop on the host.
 *
 * After the pass (and the exclusion subtraction) the evaluation enqueues, on the same in-order
 * queue, cl/decode.cl's kernel for the accumulator's format, which writes doubles (or floats,
 * config.result_type) in the caller's layout into `decoded`, and one non-blocking read of that
 * buffer into pinned host memory (a mapped CL_MEM_ALLOC_HOST_PTR buffer: the driver copies it by
 * DMA, at the bus's speed, where a read into pageable memory goes through a bounce buffer). The
 * read functions then copy (or the view functions lend) the staged arrays. Devices without fp64
 * stage the packed words and the host decodes them, with the same functions as before.
 *
 * The decode is the host's step for step in correctly rounded or exact double operations, so the
 * device's results are the bits the host decode gives (cl/decode.cl says how; test_step checks). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/eval/eval_internal.h"
#include "forcekit/forcekit_cl.h"

/* Decoded layout, in values of result_size bytes: forces (count x force components), potentials
 * (count, when asked for), then one int: the first particle whose sum overflowed (count: none). */
static size_t decoded_values(const fk_eval *eval, size_t count)
{
    const size_t forces = count * eval->state.kernel->info.force_components;
    return forces + (eval->state.config.potential ? count : 0);
}

static size_t decoded_bytes(const fk_eval *eval, size_t count)
{
    /* the overflow word on an 8-byte boundary after the values */
    return (decoded_values(eval, count) * eval->result_size + 7) / 8 * 8 + 8;
}

/* The decode kernel, built once per evaluation (the context's program cache shares the program
 * among evaluations): only with fp64, which the decode computes in. */
fk_status fk__eval_create_decode(fk_eval *eval)
{
    fk_context *context = eval->state.context;
    eval->result_size = eval->state.config.result_type == FK_RESULT_FLOAT ? 4 : 8;
    eval->device_decode = context->info.fp64 && eval->state.accum->decode_format;
    if (!eval->device_decode)
        return FK_OK;
    fk_program_result built;
    fk_status status = fk__program_build_file(context, "decode.cl", NULL, &built);
    if (status != FK_OK)
        return status;
    eval->decode_program = built.program;
    char name[64];
    snprintf(name, sizeof name, "fk_decode_%s_%s", eval->state.accum->decode_format,
             eval->result_size == 4 ? "float" : "double");
    cl_int err = CL_SUCCESS;
    eval->decode_kernel = clCreateKernel(eval->decode_program, name, &err);
    if (err != CL_SUCCESS) {
        eval->decode_kernel = NULL;
        return fk__cl_fail(context, "clCreateKernel (decode)", err);
    }
    return FK_OK;
}

void fk__eval_release_output(fk_eval *eval)
{
    if (eval->decoded)
        clReleaseMemObject(eval->decoded);
    eval->decoded = NULL;
    fk__pinned_release(eval->state.context, &eval->staging, &eval->staging_host);
    eval->staged_bytes = 0;
}

fk_status fk__eval_create_output(fk_eval *eval, size_t count)
{
    fk__eval_release_output(eval);
    const size_t bytes =
        eval->device_decode ? decoded_bytes(eval, count) : count * eval->state.components * 8;
    fk_status status = FK_OK;
    if (eval->device_decode)
        status = fk__eval_create_buffer(&eval->state, &eval->decoded, CL_MEM_READ_WRITE, bytes,
                                        NULL, "decoded results");
    if (status == FK_OK)
        status = fk__pinned_create(eval->state.context, bytes, &eval->staging, &eval->staging_host,
                                   "pinned results");
    if (status != FK_OK) {
        fk__eval_release_output(eval);
        return status;
    }
    eval->staged_bytes = bytes;
    return FK_OK;
}

fk_status fk__eval_enqueue_output(fk_eval *eval, cl_event *read)
{
    fk_context *context = eval->state.context;
    *read = NULL;
    cl_int err = CL_SUCCESS;
    if (eval->device_decode) {
        const cl_uint count = (cl_uint)eval->state.count;
        const cl_uint components = eval->state.components;
        const cl_uint force_components = (cl_uint)eval->state.kernel->info.force_components;
        const cl_double scale = eval->accum_scale;
        int exponent = 0;
        frexp(eval->accum_scale, &exponent); /* narumi's LARGE = 0.75 2^exponent */
        const cl_int scale_exponent = exponent;
        const cl_uint potentials_at = (cl_uint)(count * force_components);
        const cl_uint overflow_at =
            (cl_uint)((decoded_bytes(eval, eval->state.count) - 8) / sizeof(cl_int));
        /* the caller's buffers (fk_eval_set_results_cl), or the staging layout in `decoded` */
        const int to_caller = eval->results_forces != NULL;
        const cl_mem forces = to_caller ? eval->results_forces : eval->decoded;
        const cl_mem potentials = !to_caller                 ? eval->decoded
                                  : eval->results_potentials ? eval->results_potentials
                                                             : eval->results_forces;
        const cl_uint potentials_from = to_caller ? 0 : potentials_at;
        if (to_caller) {
            fk_status checked = fk__eval_check_results_cl(eval);
            if (checked != FK_OK)
                return checked;
        }
        fk_status status = FK__SET_ARGS(
            context, eval->decode_kernel, "decode", 0, FK__ARG(count), FK__ARG(components),
            FK__ARG(force_components), FK__ARG(scale), FK__ARG(scale_exponent),
            FK__ARG(eval->state.result), FK__ARG(forces), FK__ARG(potentials),
            FK__ARG(potentials_from), FK__ARG(eval->decoded), FK__ARG(overflow_at));
        if (status != FK_OK)
            return status;
        /* The overflow word starts at count ("none"): written from the evaluation, whose copy
         * outlives the non-blocking write (the next compute comes after the wait). */
        eval->overflow_reset = (cl_int)count;
        if (eval->state.accum->overflowed) {
            err = clEnqueueWriteBuffer(context->queue, eval->decoded, CL_FALSE,
                                       overflow_at * sizeof(cl_int), sizeof(cl_int),
                                       &eval->overflow_reset, 0, NULL, NULL);
            if (err != CL_SUCCESS)
                return fk__cl_fail(context, "clEnqueueWriteBuffer (overflow word)", err);
        }
        const size_t group = 64;
        const size_t global = (eval->state.count + group - 1) / group * group;
        err = clEnqueueNDRangeKernel(context->queue, eval->decode_kernel, 1, NULL, &global, &group,
                                     0, NULL, NULL);
        if (err != CL_SUCCESS)
            return fk__cl_fail(context, "clEnqueueNDRangeKernel (decode)", err);
        if (eval->results_forces) /* only the overflow word comes back */
            err = clEnqueueReadBuffer(
                context->queue, eval->decoded, CL_FALSE, eval->staged_bytes - 8, 8,
                (char *)eval->staging_host + eval->staged_bytes - 8, 0, NULL, read);
        else
            err = clEnqueueReadBuffer(context->queue, eval->decoded, CL_FALSE, 0,
                                      eval->staged_bytes, eval->staging_host, 0, NULL, read);
    } else {
        err = clEnqueueReadBuffer(context->queue, eval->state.result, CL_FALSE, 0,
                                  eval->staged_bytes, eval->staging_host, 0, NULL, read);
    }
    if (err != CL_SUCCESS) {
        *read = NULL;
        return fk__cl_fail(context, "clEnqueueReadBuffer (results)", err);
    }
    return FK_OK;
}

/* After the read completed: the first overflowed particle, -1 for none. */
void fk__eval_output_arrived(fk_eval *eval)
{
    eval->first_overflow = -1;
    if (!eval->state.accum->overflowed)
        return;
    if (eval->device_decode) {
        int first;
        memcpy(&first, (const char *)eval->staging_host + eval->staged_bytes - 8, sizeof first);
        if (first >= 0 && (size_t)first < eval->state.count)
            eval->first_overflow = first;
        return;
    }
    const uint32_t *packed = eval->staging_host;
    const size_t words = eval->state.count * eval->state.components * 2;
    for (size_t w = 0; w < words; w += 2)
        if (eval->state.accum->overflowed(packed[w], packed[w + 1])) {
            eval->first_overflow = (long)(w / 2 / eval->state.components);
            return;
        }
}

fk_status fk__eval_read_result(fk_eval *eval, uint32_t *words)
{
    const size_t bytes = eval->state.count * eval->state.components * 2 * sizeof *words;
    cl_int err = clEnqueueReadBuffer(eval->state.context->queue, eval->state.result, CL_TRUE, 0,
                                     bytes, words, 0, NULL, NULL);
    return err == CL_SUCCESS ? FK_OK : fk__cl_fail(eval->state.context, "clEnqueueReadBuffer", err);
}

/* What every read and view checks first. */
static fk_status readable(fk_eval *eval)
{
    fk_context *context = eval->state.context;
    fk__clear_error(context);
    if (eval->pending)
        return fk__fail(context, FK_ERR_STATE,
                        "results read while a compute is in flight: call fk_eval_wait first");
    if (!eval->computed)
        return fk__fail(context, FK_ERR_STATE, "read before compute");
    if (eval->results_forces)
        return fk__fail(context, FK_ERR_STATE,
                        "the results go to the caller's OpenCL buffers (fk_eval_set_results_cl)");
    if (eval->first_overflow >= 0)
        return fk__fail(context, FK_ERR_OVERFLOW,
                        "particle %ld: a pair term or sum left the range of the %s accumulator at "
                        "scale %g (a term above its limit or not finite)",
                        eval->first_overflow, eval->state.accum->info.name, eval->accum_scale);
    return FK_OK;
}

/* Components [first, first + count) of every particle into out (double or float). */
static void copy_components(const fk_eval *eval, unsigned first, unsigned count, void *out,
                            size_t out_size)
{
    const size_t n = eval->state.count;
    if (!eval->device_decode) {
        const uint32_t *packed = eval->staging_host;
        for (size_t i = 0; i < n; ++i)
            for (unsigned k = 0; k < count; ++k) {
                const size_t word = 2 * (i * eval->state.components + first + k);
                const double value =
                    eval->state.accum->decode(packed[word], packed[word + 1], eval->accum_scale);
                if (out_size == 8)
                    ((double *)out)[i * count + k] = value;
                else
                    ((float *)out)[i * count + k] = (float)value;
            }
        return;
    }
    /* first is 0 (the forces) or force_components (the potentials, stored after every force) */
    const size_t offset = first ? n * eval->state.kernel->info.force_components : 0;
    const size_t values = n * count;
    if (out_size == eval->result_size) {
        memcpy(out, (const char *)eval->staging_host + offset * out_size, values * out_size);
    } else if (out_size == 8) { /* float staged, double asked for: exact */
        const float *staged = (const float *)eval->staging_host + offset;
        for (size_t v = 0; v < values; ++v)
            ((double *)out)[v] = staged[v];
    } else { /* double staged, float asked for: rounded to nearest, as the device would */
        const double *staged = (const double *)eval->staging_host + offset;
        for (size_t v = 0; v < values; ++v)
            ((float *)out)[v] = (float)staged[v];
    }
}

static fk_status read_forces(fk_eval *eval, void *forces, size_t size)
{
    if (!eval || !forces)
        return FK_ERR_INVALID_ARGUMENT;
    const fk_status status = readable(eval);
    if (status == FK_OK)
        copy_components(eval, 0, (unsigned)eval->state.kernel->info.force_components, forces, size);
    return status;
}

static fk_status read_potentials(fk_eval *eval, void *potentials, size_t size)
{
    if (!eval || !potentials)
        return FK_ERR_INVALID_ARGUMENT;
    if (!eval->state.config.potential)
        return fk__fail(eval->state.context, FK_ERR_STATE,
                        "potentials were not requested (fk_eval_config.potential)");
    const fk_status status = readable(eval);
    if (status == FK_OK)
        copy_components(eval, (unsigned)eval->state.kernel->info.force_components, 1, potentials,
                        size);
    return status;
}

fk_status fk_eval_read_forces(fk_eval *eval, double *forces)
{
    return read_forces(eval, forces, sizeof *forces);
}

fk_status fk_eval_read_potentials(fk_eval *eval, double *potentials)
{
    return read_potentials(eval, potentials, sizeof *potentials);
}

fk_status fk_eval_read_forces_float(fk_eval *eval, float *forces)
{
    return read_forces(eval, forces, sizeof *forces);
}

fk_status fk_eval_read_potentials_float(fk_eval *eval, float *potentials)
{
    return read_potentials(eval, potentials, sizeof *potentials);
}

fk_status fk_eval_results_view(fk_eval *eval, const void **forces, const void **potentials)
{
    if (!eval || (!forces && !potentials))
        return FK_ERR_INVALID_ARGUMENT;
    if (forces)
        *forces = NULL;
    if (potentials)
        *potentials = NULL;
    fk_status status = readable(eval);
    if (status != FK_OK)
        return status;
    if (!eval->device_decode)
        return fk__fail(eval->state.context, FK_ERR_UNSUPPORTED,
                        "no view of the results on %s: without fp64 the host decodes them "
                        "(fk_eval_read_forces)",
                        eval->state.context->info.name);
    if (potentials && !eval->state.config.potential)
        return fk__fail(eval->state.context, FK_ERR_STATE,
                        "potentials were not requested (fk_eval_config.potential)");
    if (forces)
        *forces = eval->staging_host;
    if (potentials)
        *potentials =
            (const char *)eval->staging_host +
            eval->state.count * eval->state.kernel->info.force_components * eval->result_size;
    return FK_OK;
}

fk_status fk__eval_read_packed(fk_eval *eval, uint32_t *words)
{
    if (!eval || !words)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(eval->state.context);
    if (eval->pending)
        return fk__fail(eval->state.context, FK_ERR_STATE, "a compute is in flight");
    if (!eval->computed)
        return fk__fail(eval->state.context, FK_ERR_STATE, "read before compute");
    return fk__eval_read_result(eval, words);
}

/* The caller's result buffers: on this context, and large enough for the current count. */
static fk_status check_result_buffer(fk_eval *eval, cl_mem buffer, size_t values, const char *what)
{
    cl_context owner = NULL;
    size_t bytes = 0;
    if (clGetMemObjectInfo(buffer, CL_MEM_CONTEXT, sizeof owner, &owner, NULL) != CL_SUCCESS ||
        clGetMemObjectInfo(buffer, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) != CL_SUCCESS)
        return fk__fail(eval->state.context, FK_ERR_INVALID_ARGUMENT, "%s is not a valid cl_mem",
                        what);
    if (owner != eval->state.context->cl)
        return fk__fail(eval->state.context, FK_ERR_INVALID_ARGUMENT,
                        "%s belongs to another OpenCL context (fk_context_create_cl)", what);
    if (bytes < values * eval->result_size)
        return fk__fail(eval->state.context, FK_ERR_INVALID_ARGUMENT,
                        "%s holds %zu bytes; %zu particles need %zu", what, bytes,
                        eval->state.count, values * eval->result_size);
    return FK_OK;
}

fk_status fk__eval_check_results_cl(fk_eval *eval)
{
    fk_status status = check_result_buffer(
        eval, eval->results_forces, eval->state.count * eval->state.kernel->info.force_components,
        "forces");
    if (status == FK_OK && eval->results_potentials)
        status =
            check_result_buffer(eval, eval->results_potentials, eval->state.count, "potentials");
    return status;
}

void fk__eval_release_results_cl(fk_eval *eval)
{
    if (eval->results_forces)
        clReleaseMemObject(eval->results_forces);
    if (eval->results_potentials)
        clReleaseMemObject(eval->results_potentials);
    eval->results_forces = eval->results_potentials = NULL;
}

fk_status fk_eval_set_results_cl(fk_eval *eval, cl_mem forces, cl_mem potentials)
{
    if (!eval || (!forces && potentials))
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->state.context;
    fk_status status = fk__eval_begin(eval, NULL);
    if (status != FK_OK)
        return status;
    if (forces && !eval->device_decode)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "results into OpenCL buffers need the decode on the device, which needs "
                        "fp64: %s has none",
                        context->info.name);
    if (potentials && !eval->state.config.potential)
        return fk__fail(context, FK_ERR_STATE,
                        "potentials were not requested (fk_eval_config.potential)");
    if (eval->state.config.potential && forces && !potentials)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "config.potential is set: give a buffer for the potentials too");
    fk__eval_release_results_cl(eval);
    if (forces)
        clRetainMemObject(forces);
    if (potentials)
        clRetainMemObject(potentials);
    eval->results_forces = forces;
    eval->results_potentials = potentials;
    eval->computed = 0;
    if (forces && eval->state.count) { /* a wrong buffer is reported now, not at the next compute */
        status = fk__eval_check_results_cl(eval);
        if (status != FK_OK)
            fk__eval_release_results_cl(eval);
    }
    return status;
}
