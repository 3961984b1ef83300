/* The constraints every variant of the pair loops meets, in one place (issue #13): the API
 * (fk_eval_config), the command's options and the tuning database's entries all ask here, so a
 * shape that one of them accepts is never rejected, or worse run out of bounds, by another. */
#include <stdarg.h>
#include <stdio.h>

#include "core/eval/eval.h"
#include "core/internal.h"

static int fail(char *reason, size_t reason_size, const char *format, ...) FK_PRINTF(3, 4);

static int fail(char *reason, size_t reason_size, const char *format, ...)
{
    if (reason && reason_size) {
        va_list args;
        va_start(args, format);
        vsnprintf(reason, reason_size, format, args);
        va_end(args);
    }
    return 0;
}

static int valid_factor(int value)
{
    return value == 1 || value == 2 || value == 4 || value == 8;
}

int fk__variant_check(int unroll_i, int unroll_j, int work_group_size, int local_tiling,
                      char *reason, size_t reason_size)
{
    if (reason && reason_size)
        reason[0] = '\0';
    if ((unroll_i || unroll_j) && (!valid_factor(unroll_i) || !valid_factor(unroll_j)))
        return fail(reason, reason_size, "unroll %dx%d: each factor must be 1, 2, 4 or 8", unroll_i,
                    unroll_j);
    /* The upper bound is the device's (fk_eval_create: FK_ERR_UNSUPPORTED beyond it). */
    if (work_group_size < 0)
        return fail(reason, reason_size, "work-group size %d: expected 1 or more (0: automatic)",
                    work_group_size);
    /* Undocumented values (7 read as "on") would make a typo mean something. */
    if (local_tiling < -1 || local_tiling > 1)
        return fail(reason, reason_size,
                    "local tiling %d: expected 1 (on), -1 (off) or 0 (automatic)", local_tiling);
    /* The tiled loop takes a tile of WG_SIZE j-particles UNROLL_J at a time: a tile that is not
     * a whole number of steps is not a variant worth having (cl/pairwise.cl finishes such a tile
     * one by one anyway, so nothing reads past it). */
    if (local_tiling > 0 && work_group_size > 0 && unroll_j > 0 && work_group_size % unroll_j != 0)
        return fail(reason, reason_size,
                    "work-group size %d is not a multiple of the j-unrolling %d (unroll %dx%d): "
                    "with local tiling a tile of %d j-particles is taken %d at a time",
                    work_group_size, unroll_j, unroll_i, unroll_j, work_group_size, unroll_j);
    return 1;
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

int fk__variant_capped_group(const fk_eval *eval, int group)
{
    return eval->group_cap > 0 && group > eval->group_cap ? eval->group_cap : group;
}

fk_status fk__variant_fit_kernel(fk_eval *eval, cl_kernel kernel, int group, const char *loop,
                                 const char *name)
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
