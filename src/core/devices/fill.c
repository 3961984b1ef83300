/* Filling device buffers with a byte pattern (poison, zeroed counters). */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/*
 * clEnqueueFillBuffer, except on devices that are not one kind of hardware (FK_DEVICE_OTHER:
 * emulators and checkers such as oclgrind), where the pattern is written from the host instead.
 * oclgrind 21.10's uninitialized-value check loses track of a filled buffer: it reports the fill's
 * bytes as uninitialized, and also values a later kernel wrote there and another kernel reads
 * (tests/oclgrind_fill_repro.c reproduces both). Written from the host, the buffer is tracked
 * right, so oclgrind's diagnostics are left for real faults. Real devices keep the fill: it costs
 * no host memory and no transfer. The write blocks (the host copy is freed at once); it returns
 * an event like the fill, for wait lists.
 */
cl_int fk__enqueue_fill(fk_context *context, cl_mem buffer, const void *pattern,
                        size_t pattern_size, size_t bytes, cl_uint wait_count,
                        const cl_event *wait_list, cl_event *event)
{
    return fk__enqueue_fill_at(context, buffer, pattern, pattern_size, 0, bytes, wait_count,
                               wait_list, event);
}

cl_int fk__enqueue_fill_at(fk_context *context, cl_mem buffer, const void *pattern,
                           size_t pattern_size, size_t offset, size_t bytes, cl_uint wait_count,
                           const cl_event *wait_list, cl_event *event)
{
    if (context->info.type != FK_DEVICE_OTHER)
        return clEnqueueFillBuffer(context->queue, buffer, pattern, pattern_size, offset, bytes,
                                   wait_count, wait_list, event);
    unsigned char *host = malloc(bytes ? bytes : 1);
    if (!host)
        return CL_OUT_OF_HOST_MEMORY;
    for (size_t at = 0; at < bytes; at += pattern_size)
        memcpy(host + at, pattern, pattern_size);
    const cl_int err = clEnqueueWriteBuffer(context->queue, buffer, CL_TRUE, offset, bytes, host,
                                            wait_count, wait_list, event);
    free(host);
    return err;
}
