/* The host<->device bandwidth from pinned memory, for the step benchmark (issue #16): the bound
 * that a step's transfers are judged against. Measured in the run that reports the steps, on the
 * context's queue, with blocking transfers timed by the wall clock (what a caller waits). */
#include <stdlib.h>

#include "common/stats.h"
#include "core/internal.h"

fk_status fk__measure_pinned_bandwidth(fk_context *context, size_t bytes, int reps,
                                       double *to_device, double *to_host)
{
    if (fk__context_usable(context) != FK_OK || !to_device || !to_host || bytes == 0 || reps < 1 ||
        reps > 1000)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(context);
    *to_device = *to_host = 0;
    cl_int err = CL_SUCCESS;
    cl_mem pinned =
        clCreateBuffer(context->cl, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, "clCreateBuffer (pinned probe)", err);
    cl_mem device = clCreateBuffer(context->cl, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        clReleaseMemObject(pinned);
        return fk__cl_fail(context, "clCreateBuffer (bandwidth probe)", err);
    }
    void *host = clEnqueueMapBuffer(context->queue, pinned, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                    bytes, 0, NULL, NULL, &err);
    double *up = malloc((size_t)reps * sizeof *up), *down = malloc((size_t)reps * sizeof *down);
    fk_status status = FK_OK;
    if (err != CL_SUCCESS || !host)
        status = fk__cl_fail(context, "clEnqueueMapBuffer (pinned probe)", err);
    else if (!up || !down)
        status = FK_ERR_HOST_MEMORY;
    /* one untimed round trip first: the first transfer pays for mappings and page tables */
    for (int rep = -1; status == FK_OK && rep < reps; ++rep) {
        const double start = fk__now();
        err = clEnqueueWriteBuffer(context->queue, device, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
        const double written = fk__now();
        if (err == CL_SUCCESS)
            err =
                clEnqueueReadBuffer(context->queue, device, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
        const double read = fk__now();
        if (err != CL_SUCCESS)
            status = fk__cl_fail(context, "bandwidth probe transfer", err);
        else if (rep >= 0) {
            up[rep] = written - start;
            down[rep] = read - written;
        }
    }
    if (status == FK_OK) {
        /* the median: a bound that a step can meet, not a lucky best */
        *to_device = (double)bytes / fk__median(up, (size_t)reps);
        *to_host = (double)bytes / fk__median(down, (size_t)reps);
    }
    free(up);
    free(down);
    if (host)
        clEnqueueUnmapMemObject(context->queue, pinned, host, 0, NULL, NULL);
    clFinish(context->queue);
    clReleaseMemObject(device);
    clReleaseMemObject(pinned);
    return status;
}
