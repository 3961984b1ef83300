/* Whether this device runs a kernel's loop to the end (issue #37).
 *
 * Why: Mesa 22.3's llvmpipe (Rusticl's CPU device) caps every loop of a kernel at 65,535 iterations
 * (gallivm's loop limiter, meant for shaders) and says nothing: a work-item's j-loop over more
 * pairs stops early and the forces come back wrong with success (tests/rusticl/loop_limit.c). The
 * known-answer check (src/core/eval/known_answer.c) runs 4 particles and cannot see it. So
 * before the first evaluation whose particle count could need that many iterations of one loop, the
 * host runs one work-item through PROBE_ITERATIONS stores and counts how many landed; every later
 * evaluation on the context with more particles than landed is refused with the reason. The bound
 * is conservative: a loop's trip count is at most N (a j-loop over every partner, a tile loop over
 * N / WG tiles, a list of at most N partners), so N at or below the limit is safe on any loop.
 * Probed only when an N above 65,535 comes (no cost for smaller systems), once per context; a
 * device without the cap pays one tiny kernel once. */
#include <stdlib.h>

#include "core/internal.h"

#define SMALLEST_CAP 65535u      /* llvmpipe's; no evaluation of up to this many needs the probe */
#define PROBE_ITERATIONS 262144u /* past any cap seen, and 1 MB of buffer */

/* How many iterations of one loop landed (PROBE_ITERATIONS when the loop ran to the end); 0 when
 * the probe could not run, which the caller reports as unknown and does not refuse on. */
static cl_uint probe(fk_context *context)
{
    fk_program_result built;
    if (fk__program_build_file(context, "probe_loop_limit.cl", NULL, &built) != FK_OK) {
        fk__clear_error(context);
        return 0;
    }
    cl_uint *landed = calloc(PROBE_ITERATIONS, sizeof *landed);
    cl_int err = landed ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    cl_kernel kernel = NULL;
    cl_mem out = NULL;
    if (err == CL_SUCCESS)
        kernel = clCreateKernel(built.program, "fk_probe_loop_limit", &err);
    if (err == CL_SUCCESS)
        out = clCreateBuffer(context->cl, CL_MEM_WRITE_ONLY | CL_MEM_COPY_HOST_PTR,
                             PROBE_ITERATIONS * sizeof *landed, landed, &err);
    const cl_uint n = PROBE_ITERATIONS;
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kernel, 0, sizeof out, &out);
    if (err == CL_SUCCESS)
        err = clSetKernelArg(kernel, 1, sizeof n, &n);
    const size_t global = 1;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(context->queue, kernel, 1, NULL, &global, NULL, 0, NULL, NULL);
    /* a blocking read: Rusticl 22.3's clFinish may return before a non-blocking one lands */
    if (err == CL_SUCCESS)
        err = clEnqueueReadBuffer(context->queue, out, CL_TRUE, 0,
                                  PROBE_ITERATIONS * sizeof *landed, landed, 0, NULL, NULL);
    cl_uint count = 0;
    if (err == CL_SUCCESS)
        while (count < PROBE_ITERATIONS && landed[count] == count + 1)
            ++count;
    if (out)
        clReleaseMemObject(out);
    if (kernel)
        clReleaseKernel(kernel);
    clReleaseProgram(built.program);
    free(landed);
    return count;
}

cl_uint fk__loop_limit(fk_context *context, size_t iterations)
{
    if (iterations <= SMALLEST_CAP)
        return CL_UINT_MAX;
    if (context->loop_limit == 0)
        context->loop_limit = probe(context);
    const cl_uint limit = context->loop_limit;
    return limit == 0 || limit >= PROBE_ITERATIONS ? CL_UINT_MAX : limit;
}

fk_status fk__loop_limit_check(fk_context *context, size_t n)
{
    if (n <= SMALLEST_CAP)
        return FK_OK;
    if (context->loop_limit == 0)
        context->loop_limit = probe(context);
    const cl_uint limit = context->loop_limit;
    if (limit == 0 || limit >= PROBE_ITERATIONS || n <= limit)
        return FK_OK; /* no cap found (or none could be measured: the probe is a guard, not a gate)
                       */
    const fk_device_info *device = &context->info;
    return fk__fail(context, FK_ERR_UNSUPPORTED,
                    "N = %zu is too many for %s (%s, driver %s): its kernels stop every loop after "
                    "%u iterations without an error, so a pair loop over more particles would "
                    "return wrong forces; at most %u particles on this device",
                    n, device->name, device->platform_name, device->driver_version, limit, limit);
}
