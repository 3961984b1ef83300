/* Read-back: the packed results decoded to double, overflow reported. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"

fk_status fk__eval_read_result(fk_eval *eval, uint32_t *words)
{
    const size_t bytes = eval->count * eval->components * 2 * sizeof *words;
    cl_int err = clEnqueueReadBuffer(eval->context->queue, eval->result, CL_TRUE, 0, bytes, words,
                                     0, NULL, NULL);
    return err == CL_SUCCESS ? FK_OK : fk__cl_fail(eval->context, "clEnqueueReadBuffer", err);
}

/* Reads components [first, first + count) of every particle, decoded to double. */
static fk_status read_components(fk_eval *eval, unsigned first, unsigned count, double *out)
{
    fk_context *context = eval->context;
    fk__clear_error(context);
    if (!eval->computed)
        return fk__fail(context, FK_ERR_STATE, "read before compute");
    const size_t words = eval->count * eval->components * 2;
    uint32_t *packed = malloc(words * sizeof *packed);
    if (!packed)
        return FK_ERR_HOST_MEMORY;
    cl_int err = clEnqueueReadBuffer(context->queue, eval->result, CL_TRUE, 0,
                                     words * sizeof *packed, packed, 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        free(packed);
        return fk__cl_fail(context, "clEnqueueReadBuffer", err);
    }
    for (size_t i = 0; i < eval->count; ++i)
        for (unsigned k = 0; k < count; ++k) {
            size_t word = 2 * (i * eval->components + first + k);
            if (eval->accum->overflowed &&
                eval->accum->overflowed(packed[word], packed[word + 1])) {
                free(packed);
                return fk__fail(context, FK_ERR_OVERFLOW,
                                "particle %zu, component %u: a pair term or sum left the range of "
                                "the %s accumulator at scale %g (a term above its limit or not "
                                "finite)",
                                i, first + k, eval->accum->info.name, eval->accum_scale);
            }
            out[i * count + k] =
                eval->accum->decode(packed[word], packed[word + 1], eval->accum_scale);
        }
    free(packed);
    return FK_OK;
}

fk_status fk_eval_read_forces(fk_eval *eval, double *forces)
{
    if (!eval || !forces)
        return FK_ERR_INVALID_ARGUMENT;
    return read_components(eval, 0, eval->kernel->info.force_components, forces);
}

fk_status fk_eval_read_potentials(fk_eval *eval, double *potentials)
{
    if (!eval || !potentials)
        return FK_ERR_INVALID_ARGUMENT;
    if (!eval->config.potential)
        return fk__fail(eval->context, FK_ERR_STATE,
                        "potentials were not requested (fk_eval_config.potential)");
    return read_components(eval, eval->kernel->info.force_components, 1, potentials);
}

fk_status fk__eval_read_packed(fk_eval *eval, uint32_t *words)
{
    if (!eval || !words)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(eval->context);
    if (!eval->computed)
        return fk__fail(eval->context, FK_ERR_STATE, "read before compute");
    return fk__eval_read_result(eval, words);
}
