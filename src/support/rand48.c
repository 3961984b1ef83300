/* The rand48 generator on the host and its leapfrog jump; the device launcher (cl/rand48.cl) is
 * further down. Both live in the library so that the device part can build programs and the host
 * part is at hand for the generators of initial conditions (systems.c) and the tests. */
#include "support/rand48.h"

#include <stdlib.h>

#include "core/internal.h"

void fkt_rand48_seed(fkt_rand48 *r, long seed)
{
    /* glibc keeps only the low 32 bits of the seed ("the standards say we only have 32 bits"). */
    uint64_t low = (uint64_t)seed & UINT64_C(0xFFFFFFFF);
    r->state = (low << 16) | UINT64_C(0x330E);
}

static uint64_t advance(fkt_rand48 *r)
{
    r->state = (FKT_RAND48_A * r->state + FKT_RAND48_C) & FKT_RAND48_MASK;
    return r->state;
}

long fkt_rand48_lrand(fkt_rand48 *r)
{
    return (long)(advance(r) >> 17);
}

double fkt_rand48_drand(fkt_rand48 *r)
{
    /* glibc builds the double from the 48 bits directly (ieee754 mantissa fill, minus 1.0), which
     * equals state * 2^-48 exactly: 48 bits fit a double's 53. */
    return (double)advance(r) * (1.0 / 281474976710656.0);
}

uint64_t fkt_rand48_jump(uint64_t state, uint64_t a_m, uint64_t c_m)
{
    /* Unsigned 64-bit products wrap mod 2^64, and 2^48 divides 2^64: the low 48 bits are exact. */
    return (a_m * state + c_m) & FKT_RAND48_MASK;
}

void fkt_rand48_leapfrog(uint64_t m, uint64_t *a_m, uint64_t *c_m)
{
    /* Compose the affine map x -> a x + c with itself by binary powers: (A1, C1) after (A2, C2)
     * is (A1 A2, A1 C2 + C1). power holds the map for 2^bit steps, result the steps taken so far.
     */
    uint64_t result_a = 1, result_c = 0;
    uint64_t power_a = FKT_RAND48_A, power_c = FKT_RAND48_C;
    while (m) {
        if (m & 1u) {
            result_c = (power_a * result_c + power_c) & FKT_RAND48_MASK;
            result_a = (power_a * result_a) & FKT_RAND48_MASK;
        }
        power_c = (power_a * power_c + power_c) & FKT_RAND48_MASK;
        power_a = (power_a * power_a) & FKT_RAND48_MASK;
        m >>= 1;
    }
    *a_m = result_a;
    *c_m = result_c;
}

/* ---- the device generator ----------------------------------------------------------------------
 */

struct fkt_rand48_device {
    fk_context *context;
    cl_program program;
    cl_kernel lrand_kernel, state_kernel;
};

fk_status fkt_rand48_device_open(fk_context *context, fkt_rand48_device **out)
{
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!context)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(context);
    fkt_rand48_device *generator = calloc(1, sizeof *generator);
    if (!generator)
        return FK_ERR_HOST_MEMORY;
    generator->context = context;
    fk_program_result built;
    fk_status status = fk__program_build_file(context, "rand48.cl", NULL, &built);
    if (status != FK_OK) {
        free(generator);
        return status;
    }
    generator->program = built.program;
    cl_int err = CL_SUCCESS;
    generator->lrand_kernel = clCreateKernel(generator->program, "fk_rand48_lrand", &err);
    if (err == CL_SUCCESS)
        generator->state_kernel = clCreateKernel(generator->program, "fk_rand48_state", &err);
    if (err != CL_SUCCESS) {
        status = fk__cl_fail(context, "clCreateKernel", err);
        fkt_rand48_device_close(generator);
        return status;
    }
    *out = generator;
    return FK_OK;
}

void fkt_rand48_device_close(fkt_rand48_device *generator)
{
    if (!generator)
        return;
    if (generator->lrand_kernel)
        clReleaseKernel(generator->lrand_kernel);
    if (generator->state_kernel)
        clReleaseKernel(generator->state_kernel);
    if (generator->program)
        clReleaseProgram(generator->program);
    free(generator);
}

/* Values per launch: bounds the device buffer (8 bytes a value) whatever the count. */
#define FK_RAND48_BLOCK ((size_t)1 << 22)

size_t fkt_rand48_device_work_items(const fkt_rand48_device *generator, size_t count,
                                    size_t work_items)
{
    size_t items = work_items;
    if (items == 0) /* enough streams to fill a GPU, never more than there are values */
        items = (size_t)generator->context->info.compute_units * 1024u;
    if (items > count)
        items = count;
    if (items > FK_RAND48_BLOCK)
        items = FK_RAND48_BLOCK;
    return items ? items : 1;
}

fk_status fkt_rand48_device_generate(fkt_rand48_device *generator, long seed, uint64_t first,
                                     size_t count, size_t work_items, long *lrand_out,
                                     double *drand_out)
{
    if (!generator || (!lrand_out && !drand_out))
        return FK_ERR_INVALID_ARGUMENT;
    if (count == 0)
        return FK_OK;
    fk_context *context = generator->context;
    fk__clear_error(context);
    size_t items = fkt_rand48_device_work_items(generator, count, work_items);
    /* Values per work-item and launch: a block of at most 2^22 values, and no more than needed
     * (a work-item steps per_item times whether or not it stores). */
    size_t per_item_size = FK_RAND48_BLOCK / items;
    if (per_item_size > (count + items - 1) / items)
        per_item_size = (count + items - 1) / items;
    /* Mesa's llvmpipe stops a kernel's loop after 65,535 iterations without an error
     * (src/core/probes/loop_limit.c): a work-item's loop over more values left the rest unwritten.
     * Fewer values per launch, more launches: each work-item's state carries over between them. */
    const cl_uint loop_limit = fk__loop_limit(context, per_item_size);
    if (per_item_size > loop_limit)
        per_item_size = loop_limit;
    const cl_uint per_item = (cl_uint)per_item_size;
    const size_t block = (size_t)per_item * items;
    const int states = drand_out != NULL; /* drand48 needs the whole state */

    /* Work-item w starts from the state that produces value first + w: jump first + 1 steps from
     * the seeded state, then step sequentially (as in the paper, the host makes the W seeds). */
    uint64_t *start = malloc(items * sizeof *start);
    void *host_values = malloc(block * (states ? sizeof(cl_ulong) : sizeof(cl_uint)));
    if (!start || !host_values) {
        free(start);
        free(host_values);
        return FK_ERR_HOST_MEMORY;
    }
    fkt_rand48 r;
    fkt_rand48_seed(&r, seed);
    uint64_t a_m, c_m;
    fkt_rand48_leapfrog(first + 1, &a_m, &c_m);
    start[0] = fkt_rand48_jump(r.state, a_m, c_m);
    for (size_t w = 1; w < items; w++)
        start[w] = fkt_rand48_jump(start[w - 1], FKT_RAND48_A, FKT_RAND48_C);
    uint64_t jump_a, jump_c;
    fkt_rand48_leapfrog(items, &jump_a, &jump_c);

    cl_int err = CL_SUCCESS;
    cl_mem state_buffer = clCreateBuffer(context->cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                         items * sizeof(cl_ulong), start, &err);
    cl_mem value_buffer = NULL;
    if (err == CL_SUCCESS)
        value_buffer =
            clCreateBuffer(context->cl, CL_MEM_WRITE_ONLY,
                           block * (states ? sizeof(cl_ulong) : sizeof(cl_uint)), NULL, &err);
    fk_status status = err == CL_SUCCESS ? FK_OK : fk__cl_fail(context, "clCreateBuffer", err);
    cl_kernel kernel = states ? generator->state_kernel : generator->lrand_kernel;
    cl_ulong kernel_a = jump_a, kernel_c = jump_c;
    for (size_t done = 0; status == FK_OK && done < count; done += block) {
        cl_ulong remaining = (cl_ulong)(count - done);
        size_t stored = count - done < block ? count - done : block;
        err = clSetKernelArg(kernel, 0, sizeof state_buffer, &state_buffer);
        err |= clSetKernelArg(kernel, 1, sizeof kernel_a, &kernel_a);
        err |= clSetKernelArg(kernel, 2, sizeof kernel_c, &kernel_c);
        err |= clSetKernelArg(kernel, 3, sizeof per_item, &per_item);
        err |= clSetKernelArg(kernel, 4, sizeof remaining, &remaining);
        err |= clSetKernelArg(kernel, 5, sizeof value_buffer, &value_buffer);
        if (err != CL_SUCCESS) {
            status = fk__cl_fail(context, "clSetKernelArg", err);
            break;
        }
        err = clEnqueueNDRangeKernel(context->queue, kernel, 1, NULL, &items, NULL, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            status = fk__cl_fail(context, "clEnqueueNDRangeKernel", err);
            break;
        }
        err = clEnqueueReadBuffer(context->queue, value_buffer, CL_TRUE, 0,
                                  stored * (states ? sizeof(cl_ulong) : sizeof(cl_uint)),
                                  host_values, 0, NULL, NULL);
        if (err != CL_SUCCESS) {
            status = fk__cl_fail(context, "clEnqueueReadBuffer", err);
            break;
        }
        for (size_t k = 0; k < stored; k++) {
            if (states) {
                const uint64_t x = ((const cl_ulong *)host_values)[k];
                if (drand_out)
                    drand_out[done + k] = (double)x * (1.0 / 281474976710656.0);
                if (lrand_out)
                    lrand_out[done + k] = (long)(x >> 17);
            } else {
                lrand_out[done + k] = (long)((const cl_uint *)host_values)[k];
            }
        }
    }
    if (value_buffer)
        clReleaseMemObject(value_buffer);
    if (state_buffer)
        clReleaseMemObject(state_buffer);
    free(start);
    free(host_values);
    return status;
}
