/* The helpers every pair loop shares (loop.h): kernel arguments, kernel figures, fitting a built
 * kernel to the device, shape coordinates, and the all-pairs launch that the all-pairs, lane and
 * symmetric loops run. They read the evaluation's state (eval_state.h) and call nothing of the
 * evaluation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loops/loop.h"

fk_status fk__set_kernel_args(fk_context *context, cl_kernel kernel, const char *what,
                              cl_uint first, const fk__kernel_arg *args, size_t count)
{
    for (size_t k = 0; k < count; ++k) {
        if (!args[k].value)
            continue;
        const cl_int err = clSetKernelArg(kernel, first + (cl_uint)k, args[k].size, args[k].value);
        if (err != CL_SUCCESS)
            return fk__fail(context, fk__cl_status(err),
                            "clSetKernelArg (%s, argument %u) failed: %s (%d)", what,
                            (unsigned)(first + (cl_uint)k), fk__cl_error_name(err), (int)err);
    }
    return FK_OK;
}

void fk__kernel_figures_of(fk_context *context, cl_kernel kernel, const char *name,
                           fk__kernel_figures *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    cl_ulong private_bytes = 0, local_bytes = 0;
    size_t group = 0, multiple = 0;
    clGetKernelWorkGroupInfo(kernel, context->device, CL_KERNEL_PRIVATE_MEM_SIZE,
                             sizeof private_bytes, &private_bytes, NULL);
    clGetKernelWorkGroupInfo(kernel, context->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local_bytes,
                             &local_bytes, NULL);
    clGetKernelWorkGroupInfo(kernel, context->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof group,
                             &group, NULL);
    clGetKernelWorkGroupInfo(kernel, context->device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                             sizeof multiple, &multiple, NULL);
    out->private_bytes = (uint64_t)private_bytes;
    out->local_bytes = (uint64_t)local_bytes;
    out->work_group_size = group;
    out->preferred_multiple = multiple;
}

/* i-particles per work-group: the unrolled ones, or the lanes. */
static size_t i_per_group(const fk_variant *variant)
{
    return (size_t)variant->work_group_size * (size_t)variant->unroll_i *
           (size_t)(variant->lanes > 0 ? variant->lanes : 1);
}

fk_status fk__all_pairs_build(fk__eval_state *eval, const fk_program_request *request,
                              cl_program *program, cl_kernel *pairwise, cl_kernel *reduce,
                              fk_program_result *built)
{
    fk_status status = fk__program_build(eval->context, request, built);
    if (status != FK_OK)
        return status;
    *program = built->program;
    cl_int err = CL_SUCCESS;
    *pairwise = clCreateKernel(*program, "fk_pairwise", &err);
    if (err == CL_SUCCESS)
        *reduce = clCreateKernel(*program, "fk_reduce_splits", &err);
    if (err != CL_SUCCESS)
        return fk__cl_fail(eval->context,
                           strcmp(request->accum, "bound") == 0 ? "clCreateKernel (bound)"
                                                                : "clCreateKernel",
                           err);
    return FK_OK;
}

fk_status fk__all_pairs_enqueue(fk__eval_state *eval, cl_kernel pairwise, cl_kernel reduce,
                                const fk_variant *shape, int splits, int share_only,
                                cl_event *first, cl_event *last)
{
    fk_context *context = eval->context;
    *first = *last = NULL;
    const cl_int n = (cl_int)eval->count;
    const cl_int chunk = eval->j_chunk;
    const cl_float4 acc_param = fk__eval_acc_param(eval);
    fk_status status =
        FK__SET_ARGS(context, pairwise, "fk_pairwise", 0, FK__ARG(n), FK__ARG(chunk),
                     FK__ARG(eval->body), FK__ARG(eval->body_aux), FK__ARG(eval->table),
                     FK__ARG(eval->physics), FK__ARG(acc_param), FK__ARG(eval->partial));
    if (status != FK_OK)
        return status;
    const size_t group = (size_t)shape->work_group_size;
    const size_t i_block = i_per_group(shape);
    size_t block_first = 0, block_end = (eval->count + i_block - 1) / i_block;
    if (share_only) {
        /* The share is a range of particles, whatever the shape (so that parts on devices of
         * different shapes still tile the particles); the launch covers it with whole i-blocks
         * and the evaluation zeroes the results outside it, those of the edge blocks' other
         * particles included. */
        size_t share_first = 0, share_end = 0;
        fk__share_units(eval, eval->count, &share_first, &share_end);
        block_first = share_first / i_block;
        block_end = (share_end + i_block - 1) / i_block;
        eval->share_first = share_first;
        eval->share_end = share_end;
        eval->share_range = 1;
    }
    /* An empty share still launches one block (a launch of no work-items is an error); its
     * results lie outside the share and are zeroed. */
    const size_t blocks = block_end > block_first ? block_end - block_first : 1;
    const size_t offset[2] = {(block_end > block_first ? block_first : 0) * group, 0};
    const size_t global[2] = {blocks * group, (size_t)splits};
    const size_t local[2] = {group, 1};
    cl_int err =
        clEnqueueNDRangeKernel(context->queue, pairwise, 2, offset, global, local, 0, NULL, first);
    if (err != CL_SUCCESS) {
        *first = NULL;
        return fk__cl_fail(context, "clEnqueueNDRangeKernel (fk_pairwise)", err);
    }
    if (splits <= 1)
        return FK_OK;
    const cl_int split_count = splits;
    status = FK__SET_ARGS(context, reduce, "fk_reduce_splits", 0, FK__ARG(n), FK__ARG(split_count),
                          FK__ARG(eval->partial), FK__ARG(eval->result));
    const size_t reduce_group = 64;
    const size_t items = eval->count * eval->components;
    const size_t reduce_global = (items + reduce_group - 1) / reduce_group * reduce_group;
    if (status == FK_OK) {
        err = clEnqueueNDRangeKernel(context->queue, reduce, 1, NULL, &reduce_global, &reduce_group,
                                     0, NULL, last);
        if (err != CL_SUCCESS) {
            *last = NULL;
            status = fk__cl_fail(context, "clEnqueueNDRangeKernel (fk_reduce_splits)", err);
        }
    }
    if (status != FK_OK) {
        clFinish(context->queue);
        clReleaseEvent(*first);
        *first = NULL;
    }
    return status;
}

size_t fk__figures_of_kernels(fk_context *context, const fk__named_kernel *kernels, size_t count,
                              fk__kernel_figures *figures, size_t capacity)
{
    size_t built = 0;
    for (size_t k = 0; k < count; ++k) {
        if (!kernels[k].kernel)
            continue;
        if (built < capacity)
            fk__kernel_figures_of(context, kernels[k].kernel, kernels[k].name, &figures[built]);
        ++built;
    }
    return built;
}

int fk__shape_index(const int *values, int count, int value)
{
    int k = 0;
    while (k < count && values[k] != value)
        ++k;
    return k;
}

/* ---- Fitting a built kernel (issue #37) ------------------------------------------------------
 * The device says per built kernel how many work-items a group may have (registers: llvmpipe
 * allows 32 for the pair loops where POCL allows 4096) and how much local memory it takes. A shape
 * chosen automatically that does not fit is narrowed by fk_eval_create to the largest power of
 * two that does (the tuned shapes and WG_SIZE, the j-tile of the tiled loops, are powers of two);
 * an explicit work-group size is the caller's and stays an error. */

static int floor_power_of_two(size_t value)
{
    int power = 1;
    while ((size_t)power * 2 <= value && power < (1 << 20))
        power *= 2;
    return value ? power : 0;
}

int fk__variant_capped_group(const fk__eval_state *eval, int group)
{
    return eval->group_cap > 0 && group > eval->group_cap ? eval->group_cap : group;
}

fk_status fk__variant_fit_kernel(fk__eval_state *eval, cl_kernel kernel, int group,
                                 const char *loop, const char *name)
{
    fk_context *context = eval->context;
    size_t kernel_group = 0, multiple = 0;
    cl_ulong local_bytes = 0;
    clGetKernelWorkGroupInfo(kernel, context->device, CL_KERNEL_WORK_GROUP_SIZE,
                             sizeof kernel_group, &kernel_group, NULL);
    clGetKernelWorkGroupInfo(kernel, context->device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local_bytes,
                             &local_bytes, NULL);
    clGetKernelWorkGroupInfo(kernel, context->device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                             sizeof multiple, &multiple, NULL);
    const cl_ulong device_local = context->info.local_memory_bytes;
    const int group_fits = !kernel_group || (size_t)group <= kernel_group;
    const int local_fits = local_bytes <= device_local;
    if (group_fits && local_fits)
        return FK_OK;
    /* The largest size both limits allow: the work-items the kernel takes, and the local memory
     * of the tiles, which grows with the work-group size (WG_SIZE j-particles per tile). */
    size_t largest = kernel_group ? kernel_group : (size_t)group;
    if (!local_fits && local_bytes > 0) {
        const size_t by_local =
            (size_t)((double)group * (double)device_local / (double)local_bytes);
        if (by_local < largest)
            largest = by_local;
    }
    if (largest >= (size_t)group)
        largest = (size_t)group / 2; /* a limit that shrinks with the group: halve and see */
    int fit = floor_power_of_two(largest);
    /* the preferred multiple (SIMD width) where the limit leaves room for it */
    if (multiple > 1 && (size_t)fit > multiple && fit % (int)multiple != 0)
        fit -= fit % (int)multiple;
    eval->fit_group = fit;
    /* An explicit size is the caller's: say what would fit instead of changing it. */
    char hint[128] = "";
    if (eval->config.work_group_size > 0)
        snprintf(hint, sizeof hint,
                 "; the work-group size was given explicitly: %d or an automatic one fits", fit);
    if (!group_fits)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "%s with work-group size %d exceeds this kernel's limit of %zu work-items "
                        "on %s (registers; kernel %s)%s",
                        loop, group, kernel_group, context->info.name, name, hint);
    return fk__fail(context, FK_ERR_UNSUPPORTED,
                    "%s with work-group size %d needs %llu bytes of local memory; %s has %llu "
                    "(kernel %s)%s",
                    loop, group, (unsigned long long)local_bytes, context->info.name,
                    (unsigned long long)device_local, name, hint);
}

void fk__release_kernels(const cl_kernel *kernels, size_t count)
{
    for (size_t k = 0; k < count; ++k)
        if (kernels[k])
            clReleaseKernel(kernels[k]);
}

void fk__release_programs(const cl_program *programs, size_t count)
{
    for (size_t k = 0; k < count; ++k)
        if (programs[k])
            clReleaseProgram(programs[k]);
}

void fk__release_buffers(const cl_mem *buffers, size_t count)
{
    for (size_t k = 0; k < count; ++k)
        if (buffers[k])
            clReleaseMemObject(buffers[k]);
}
