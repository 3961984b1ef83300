/*
 * The cell grid on the device (cell_grid.h): the check, the choice of the grid, binning with
 * van Meel's fixed placeholders and the overflow retry. Moved out of cells.c so that the cell loop
 * and the neighbour-list loop build the same grid with the same code.
 */
#include "core/loops/cell_grid.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* stats[] indices, as in cl/cells_build.cl */
enum {
    STAT_MOVED = 0,
    STAT_BAD,
    STAT_OVERFLOW,
    STAT_MAX_COUNT,
    STAT_PAIRS_LO,
    STAT_PAIRS_HI,
    STAT_MIN,
    STAT_MAX = STAT_MIN + 3,
    STAT_COUNT = STAT_MAX + 3
};

static const cl_int initial_stats[STAT_COUNT] = {
    0, INT_MAX, 0, 0, 0, 0, INT_MAX, INT_MAX, INT_MAX, INT_MIN, INT_MIN, INT_MIN};

/* ---------------------------------------------------------------------------------------------- */
/* Helpers of the loops on the grid */

static double event_duration(cl_event event)
{
    cl_ulong start = 0, end = 0;
    if (!event ||
        clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) !=
            CL_SUCCESS ||
        clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) !=
            CL_SUCCESS)
        return 0.0;
    return end > start ? (double)(end - start) * 1e-9 : 0.0;
}

void fk__collect_events(cl_event *events, size_t count, double *seconds)
{
    for (size_t k = 0; k < count; ++k)
        if (events[k]) {
            if (seconds)
                *seconds += event_duration(events[k]);
            clReleaseEvent(events[k]);
            events[k] = NULL;
        }
}

fk_status fk__cell_grid_buffer(fk__eval_state *eval, const char *owner, cl_mem *buffer,
                               size_t bytes, const char *what)
{
    if (*buffer)
        clReleaseMemObject(*buffer);
    *buffer = NULL;
    const fk_device_info *device = &eval->context->info;
    if (bytes > device->max_allocation_bytes || bytes > device->global_memory_bytes)
        return fk__fail(eval->context, FK_ERR_DEVICE_MEMORY,
                        "%s: the %s need %zu bytes; %s allows %llu in one allocation", owner, what,
                        bytes, device->name, (unsigned long long)device->max_allocation_bytes);
    char name[96];
    snprintf(name, sizeof name, "%s: %s", owner, what);
    return fk__eval_create_buffer(eval, buffer, CL_MEM_READ_WRITE, bytes, NULL, name);
}

fk_status fk__create_kernel(fk_context *context, cl_program program, const char *name,
                            cl_kernel *kernel)
{
    cl_int err = CL_SUCCESS;
    *kernel = clCreateKernel(program, name, &err);
    if (err != CL_SUCCESS) {
        *kernel = NULL;
        char call[96];
        snprintf(call, sizeof call, "clCreateKernel (%s)", name);
        return fk__cl_fail(context, call, err);
    }
    return FK_OK;
}

fk_status fk__check_work_group(fk_context *context, cl_kernel kernel, size_t group,
                               const char *owner, const char *name)
{
    size_t limit = 0;
    clGetKernelWorkGroupInfo(kernel, context->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof limit,
                             &limit, NULL);
    if (limit && group > limit)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "%s: kernel %s needs %zu work-items per group; %s allows %zu", owner, name,
                        group, context->info.name, limit);
    return FK_OK;
}

static float decode_ordered(cl_int key)
{
    const int32_t bits = key >= 0 ? key : key ^ 0x7fffffff;
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

/* ---------------------------------------------------------------------------------------------- */
/* Creation */

fk_status fk__cell_grid_supports(const char *owner, const fk_kernel_desc *kernel,
                                 const fk_eval_config *config, const fk__physics *physics,
                                 char *reason, size_t reason_size)
{
    if (!kernel->uses_table) {
        snprintf(reason, reason_size,
                 "the %s algorithm needs a short-range force law with a cutoff; %s is "
                 "long-range gravity with no cutoff: use all-pairs or symmetric",
                 owner, kernel->info.name);
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (!physics->shifted || !(physics->cutoff > 0)) {
        snprintf(reason, reason_size,
                 "the %s algorithm needs a cutoff: %s has none unless one is given "
                 "(--cutoff, fk_eval_config.cutoff)",
                 owner, kernel->info.name);
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (!isfinite(config->skin)) {
        snprintf(reason, reason_size, "%s: the skin must be finite", owner);
        return FK_ERR_INVALID_ARGUMENT;
    }
    return FK_OK;
}

fk_status fk__cell_grid_create(fk__eval_state *eval, fk__cell_grid *grid, const char *owner,
                               double *seconds, int *from_cache)
{
    fk_context *context = eval->context;
    const fk__physics *physics = &eval->plan.physics;
    memset(grid, 0, sizeof *grid);
    grid->owner = owner;
    grid->skin = eval->plan.skin; /* config.skin resolved (src/core/eval/plan.c) */
    grid->reach = physics->cutoff + grid->skin;
    grid->periodic = physics->periodic;
    for (int d = 0; d < 3; ++d)
        grid->box[d] = physics->periodic ? physics->box[d] : 0.0;
    *seconds = 0.0;
    *from_cache = 1;
    /* The build kernels do not depend on the force law or accumulator: one program (and one
     * cache entry) for every evaluation, at FK__CELL_GRID_AUX_WG work-items per group, or at the
     * largest power of two the device allows for them when that is less (issue #37: llvmpipe
     * allows 32). Their results do not depend on the group size. */
    fk_status status = FK_OK;
    for (int group = FK__CELL_GRID_AUX_WG; group >= 1;) {
        grid->aux_group = group;
        fk_program_result built;
        char build_options[64];
        snprintf(build_options, sizeof build_options, "-D FK_CELLS_AUX_WG=%d", group);
        status = fk__program_build_file(context, "cells_build.cl", build_options, &built);
        if (status != FK_OK)
            return status;
        grid->program = built.program;
        *seconds += built.seconds;
        *from_cache = *from_cache && built.from_cache;
        status = fk__create_kernel(context, grid->program, "fk_cells_check", &grid->check);
        if (status == FK_OK)
            status = fk__create_kernel(context, grid->program, "fk_cells_bin", &grid->bin);
        if (status == FK_OK)
            status = fk__create_kernel(context, grid->program, "fk_cells_finish", &grid->finish);
        if (status != FK_OK)
            return status;
        size_t allowed = (size_t)group;
        const cl_kernel kernels[] = {grid->check, grid->bin, grid->finish};
        for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; ++k) {
            size_t limit = 0;
            clGetKernelWorkGroupInfo(kernels[k], context->device, CL_KERNEL_WORK_GROUP_SIZE,
                                     sizeof limit, &limit, NULL);
            if (limit && limit < allowed)
                allowed = limit;
        }
        if (allowed >= (size_t)group)
            break;
        int smaller = 1;
        while ((size_t)smaller * 2 <= allowed)
            smaller *= 2;
        for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; ++k)
            clReleaseKernel(kernels[k]);
        clReleaseProgram(grid->program);
        grid->check = grid->bin = grid->finish = NULL;
        grid->program = NULL;
        if (smaller >= group)
            break; /* cannot happen: allowed < group */
        group = smaller;
    }
    if (status == FK_OK && !grid->program)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "%s: the cell-grid build kernels fit no work-group size on %s", owner,
                        context->info.name);
    if (status == FK_OK)
        status = fk__check_work_group(context, grid->check, (size_t)grid->aux_group, owner,
                                      "fk_cells_check");
    if (status == FK_OK)
        status = fk__check_work_group(context, grid->finish, (size_t)grid->aux_group, owner,
                                      "fk_cells_finish");
    if (status == FK_OK)
        status = fk__cell_grid_buffer(eval, owner, &grid->stats, sizeof initial_stats,
                                      "cell statistics");
    return status;
}

void fk__cell_grid_release(fk__cell_grid *grid)
{
    cl_kernel kernels[] = {grid->check, grid->bin, grid->finish};
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; ++k)
        if (kernels[k])
            clReleaseKernel(kernels[k]);
    if (grid->program)
        clReleaseProgram(grid->program);
    cl_mem buffers[] = {grid->count, grid->slots, grid->reference, grid->stats};
    for (size_t k = 0; k < sizeof buffers / sizeof buffers[0]; ++k)
        if (buffers[k])
            clReleaseMemObject(buffers[k]);
    free(grid->host_reference);
    memset(grid, 0, sizeof *grid);
}

void fk__cell_grid_report(const fk__cell_grid *grid, fk_variant *v)
{
    for (int d = 0; d < 3; ++d) {
        v->cell_grid[d] = grid->built ? grid->grid[d] : 0;
        v->cell_size[d] = grid->built ? grid->size[d] : 0.0;
    }
    v->cell_capacity = grid->built ? grid->capacity : 0;
    v->cell_skin = grid->skin;
    v->cell_rebuilds = grid->rebuilds;
    v->cell_resizes = grid->resizes;
    v->cell_build_seconds = grid->build_seconds;
}

/* ---------------------------------------------------------------------------------------------- */
/* Building */

/* The grid for this build. Cells have a side of at least cutoff + skin plus a margin for float
 * rounding: the binning's (x - origin) / side and the kernel's minimum image err by a few ulp of
 * the largest coordinate, and that must not let a pair inside the cutoff land two cells apart. At
 * most 2 N + 64 cells (larger cells are still correct): a few particles far from the rest must
 * not make a huge, empty grid. */
static void choose_grid(fk__cell_grid *grid, size_t n, const cl_int *stats)
{
    const double max_cells = 2.0 * (double)n + 64.0;
    double low[3] = {0, 0, 0}, high[3] = {0, 0, 0}, magnitude = 0.0;
    for (int d = 0; d < 3; ++d) {
        if (grid->periodic) {
            high[d] = grid->box[d];
            magnitude = fmax(magnitude, 2.0 * grid->box[d]);
        } else {
            low[d] = decode_ordered(stats[STAT_MIN + d]);
            high[d] = decode_ordered(stats[STAT_MAX + d]);
            magnitude = fmax(magnitude, fmax(fabs(low[d]), fabs(high[d])));
        }
    }
    const double side = grid->reach * (1.0 + 1e-5) + 4.0 * ldexp(magnitude, -20);
    grid->min_side = side;
    double count[3];
    if (grid->periodic) {
        for (int d = 0; d < 3; ++d)
            count[d] = fmax(1.0, floor(grid->box[d] / side));
        for (;;) {
            const double product = count[0] * count[1] * count[2];
            if (product <= max_cells)
                break;
            const double factor = cbrt(product / max_cells);
            for (int d = 0; d < 3; ++d)
                count[d] = fmax(1.0, floor(count[d] / factor));
        }
        for (int d = 0; d < 3; ++d) {
            grid->grid[d] = (int)count[d];
            grid->size[d] = grid->box[d] / count[d];
            grid->origin[d] = 0.0f;
            grid->inv_size[d] = (float)(count[d] / grid->box[d]);
        }
    } else {
        double size = side;
        for (;;) {
            for (int d = 0; d < 3; ++d)
                count[d] = floor((high[d] - low[d]) / size) + 1.0;
            const double product = count[0] * count[1] * count[2];
            if (product <= max_cells)
                break;
            size *= fmax(1.01, cbrt(product / max_cells));
        }
        for (int d = 0; d < 3; ++d) {
            grid->grid[d] = (int)count[d];
            grid->size[d] = size;
            grid->origin[d] = (float)low[d];
            grid->inv_size[d] = (float)(1.0 / size);
        }
    }
    grid->cells = (size_t)grid->grid[0] * (size_t)grid->grid[1] * (size_t)grid->grid[2];
}

static fk_status bin_once(fk__eval_state *eval, fk__cell_grid *grid, cl_int *stats, double *seconds)
{
    fk_context *context = eval->context;
    const cl_int n = (cl_int)eval->count, cell_count = (cl_int)grid->cells;
    const cl_int capacity = grid->capacity;
    const cl_int4 layout = {{grid->grid[0], grid->grid[1], grid->grid[2], grid->periodic}};
    const cl_float4 origin = {{grid->origin[0], grid->origin[1], grid->origin[2], 0.0f}};
    const cl_float4 inv_size = {{grid->inv_size[0], grid->inv_size[1], grid->inv_size[2], 0.0f}};
    cl_event events[5] = {NULL};
    const cl_int zero = 0;
    /* The call that failed, for the caller's detail. */
    const char *call = "clEnqueueFillBuffer (cell lists: cell counts)";
    cl_int err = fk__enqueue_fill(context, grid->count, &zero, sizeof zero,
                                  grid->cells * sizeof(cl_int), 0, NULL, &events[0]);
    if (err == CL_SUCCESS) {
        call = "clEnqueueWriteBuffer (cell lists: statistics)";
        err = clEnqueueWriteBuffer(context->queue, grid->stats, CL_FALSE, 0, sizeof initial_stats,
                                   initial_stats, 0, NULL, &events[1]);
    }
    fk_status status =
        FK__SET_ARGS(context, grid->bin, "fk_cells_bin", 0, FK__ARG(n), FK__ARG(eval->body),
                     FK__ARG(origin), FK__ARG(inv_size), FK__ARG(layout), FK__ARG(capacity),
                     FK__ARG(grid->count), FK__ARG(grid->slots), FK__ARG(grid->stats));
    if (status == FK_OK)
        status = FK__SET_ARGS(context, grid->finish, "fk_cells_finish", 0, FK__ARG(cell_count),
                              FK__ARG(layout), FK__ARG(capacity), FK__ARG(grid->count),
                              FK__ARG(grid->slots), FK__ARG(grid->stats));
    if (status != FK_OK) {
        clFinish(context->queue);
        fk__collect_events(events, 2, NULL);
        return status;
    }
    const size_t group = (size_t)grid->aux_group;
    const size_t bin_global = ((size_t)n + group - 1) / group * group;
    const size_t finish_global = (grid->cells + group - 1) / group * group;
    if (err == CL_SUCCESS) {
        call = "clEnqueueNDRangeKernel (fk_cells_bin)";
        err = clEnqueueNDRangeKernel(context->queue, grid->bin, 1, NULL, &bin_global, &group, 0,
                                     NULL, &events[2]);
    }
    if (err == CL_SUCCESS) {
        call = "clEnqueueNDRangeKernel (fk_cells_finish)";
        err = clEnqueueNDRangeKernel(context->queue, grid->finish, 1, NULL, &finish_global, &group,
                                     0, NULL, &events[3]);
    }
    /* The positions of this build, for the next displacement check. */
    if (err == CL_SUCCESS) {
        call = "clEnqueueCopyBuffer (cell lists: positions)";
        err = clEnqueueCopyBuffer(context->queue, eval->body, grid->reference, 0, 0,
                                  (size_t)n * 4 * sizeof(cl_float), 0, NULL, &events[4]);
    }
    if (err == CL_SUCCESS) {
        call = "clEnqueueReadBuffer (cell lists: statistics)";
        err = clEnqueueReadBuffer(context->queue, grid->stats, CL_TRUE, 0, sizeof initial_stats,
                                  stats, 0, NULL, NULL);
    }
    fk__collect_events(events, 5, err == CL_SUCCESS ? seconds : NULL);
    return err == CL_SUCCESS ? FK_OK : fk__cl_fail(context, call, err);
}

static fk_status build(fk__eval_state *eval, fk__cell_grid *grid, const cl_int *check_stats,
                       double check_seconds)
{
    const size_t n = eval->count;
    const char *owner = grid->owner;
    choose_grid(grid, n, check_stats);

    if (grid->cells > grid->count_capacity || grid->cells * 4 < grid->count_capacity) {
        fk_status status = fk__cell_grid_buffer(eval, owner, &grid->count,
                                                grid->cells * sizeof(cl_int), "cell counts");
        grid->count_capacity = status == FK_OK ? grid->cells : 0;
        if (status != FK_OK)
            return status;
    }
    if (n > grid->reference_capacity) {
        fk_status status = fk__cell_grid_buffer(eval, owner, &grid->reference,
                                                n * 4 * sizeof(cl_float), "build positions");
        grid->reference_capacity = status == FK_OK ? n : 0;
        if (status != FK_OK)
            return status;
    }
    /* Placeholders: twice the mean occupancy, or what the fullest cell of the last build needed
     * (so a clustered system does not overflow at every rebuild, and a dispersed one gives the
     * memory back). */
    const double mean = (double)n / (double)grid->cells;
    double capacity =
        fmax(ceil(2.0 * mean) + 8.0, (double)grid->max_count + (double)(grid->max_count / 8) + 4.0);
    grid->capacity = (int)fmin(capacity, (double)n);

    double seconds = check_seconds;
    cl_int stats[STAT_COUNT];
    for (int attempt = 0;; ++attempt) {
        const size_t entries = grid->cells * (size_t)grid->capacity;
        if (entries > grid->slot_capacity || entries * 4 < grid->slot_capacity) {
            fk_status status = fk__cell_grid_buffer(eval, owner, &grid->slots,
                                                    entries * sizeof(cl_int), "placeholders");
            grid->slot_capacity = status == FK_OK ? entries : 0;
            if (status != FK_OK) {
                /* Keep the allocation's own detail; say "clustered" only when the last build
                 * found a cell far above the mean (a first build has not looked yet). */
                char detail[512];
                snprintf(detail, sizeof detail, "%s", fk_context_last_error(eval->context));
                const int clustered = grid->max_count > 2 * (int)ceil(mean) + 8;
                return fk__fail(eval->context, status,
                                "%s: %zu cells x %d placeholders do not fit on %s: %s%s", owner,
                                grid->cells, grid->capacity, eval->context->info.name, detail,
                                clustered ? "; the particles are too clustered for fixed "
                                            "placeholders: use the all-pairs algorithm"
                                          : "");
            }
        }
        fk_status status = bin_once(eval, grid, stats, &seconds);
        if (status != FK_OK)
            return status;
        grid->max_count = stats[STAT_MAX_COUNT];
        if (stats[STAT_OVERFLOW] == 0)
            break;
        /* Some cell had more particles than placeholders: none was dropped silently; the
         * counts are exact, so one more binning with room for the fullest cell suffices. */
        if (attempt >= 2)
            return fk__fail(eval->context, FK_ERR_OPENCL,
                            "%s: %d particles still found their cell full after growing "
                            "the placeholders to %d (device atomics?)",
                            owner, stats[STAT_OVERFLOW], grid->capacity);
        const int needed = grid->max_count + grid->max_count / 8 + 4;
        grid->capacity = needed < (int)n ? needed : (int)n;
        grid->resizes++;
    }
    grid->pairs_examined =
        (uint64_t)(uint32_t)stats[STAT_PAIRS_LO] | ((uint64_t)(uint32_t)stats[STAT_PAIRS_HI] << 32);
    grid->built = n;
    grid->current = 1;
    grid->rebuilds++;
    grid->build_seconds = seconds;
    return FK_OK;
}

/* A float as an int with the same order: the check kernel's fk_cells_ordered. */
static cl_int encode_ordered(float x)
{
    int32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return bits >= 0 ? bits : bits ^ 0x7fffffff;
}

/* fk_cells_check on the host, on the positions the host has (eval->host_body), against the build's
 * (grid->host_reference when has_reference): the same statistics, the same float arithmetic in
 * the same order (C11 without contraction: CMake's C_EXTENSIONS OFF). Only the rounding of the
 * division in the minimum image may differ from the device's (OpenCL allows 2.5 ulp), which the
 * cell side's margin covers as it covers the device's own rounding. */
static void check_on_host(const fk__eval_state *eval, const fk__cell_grid *grid, int has_reference,
                          float threshold2, cl_int stats[STAT_COUNT])
{
    memcpy(stats, initial_stats, sizeof initial_stats);
    const size_t n = eval->count;
    const float *body = eval->host_body, *reference = grid->host_reference;
    const float box[3] = {(float)grid->box[0], (float)grid->box[1], (float)grid->box[2]};
    const float half_box[3] = {0.5f * box[0], 0.5f * box[1], 0.5f * box[2]};
    /* Branch-free passes the compiler vectorizes (at N = 4,096 the check is on the step's path);
     * the rare cases get a second, exact pass. */
    if (grid->periodic) {
        int outside = 0;
        for (size_t i = 0; i < n; ++i) {
            const float *p = body + 4 * i;
            outside |= (p[0] < -box[0]) | (p[0] >= 2.0f * box[0]) | (p[1] < -box[1]) |
                       (p[1] >= 2.0f * box[1]) | (p[2] < -box[2]) | (p[2] >= 2.0f * box[2]);
        }
        for (size_t i = 0; outside && i < n; ++i) /* the first one, as the kernel's atomic_min */
            for (int k = 0; k < 3; ++k)
                if (body[4 * i + k] < -box[k] || body[4 * i + k] >= 2.0f * box[k]) {
                    stats[STAT_BAD] = (cl_int)i;
                    outside = 0;
                }
    }
    if (has_reference) {
        /* Below half a box the minimum image's rint gives 0 and d stays (also where d / box
         * rounds up to 0.5: ties go to even), so the first pass skips it; where some |d| reaches
         * half a box, the exact pass decides. */
        int moved = 0, wraps = 0;
        for (size_t i = 0; i < n; ++i) {
            const float dx = body[4 * i] - reference[4 * i],
                        dy = body[4 * i + 1] - reference[4 * i + 1],
                        dz = body[4 * i + 2] - reference[4 * i + 2];
            wraps |= !(fabsf(dx) < half_box[0]) | !(fabsf(dy) < half_box[1]) |
                     !(fabsf(dz) < half_box[2]);
            moved |= (dx * dx + dy * dy) + dz * dz > threshold2;
        }
        if (wraps && grid->periodic) {
            moved = 0;
            for (size_t i = 0; i < n && !moved; ++i) {
                float d[3];
                for (int k = 0; k < 3; ++k) {
                    d[k] = body[4 * i + k] - reference[4 * i + k];
                    d[k] -= box[k] * rintf(d[k] / box[k]);
                }
                moved = (d[0] * d[0] + d[1] * d[1]) + d[2] * d[2] > threshold2;
            }
        }
        stats[STAT_MOVED] = moved;
    }
    if (!grid->periodic)
        for (size_t i = 0; i < n; ++i)
            for (int k = 0; k < 3; ++k) {
                const cl_int key = encode_ordered(body[4 * i + k]);
                stats[STAT_MIN + k] = key < stats[STAT_MIN + k] ? key : stats[STAT_MIN + k];
                stats[STAT_MAX + k] = key > stats[STAT_MAX + k] ? key : stats[STAT_MAX + k];
            }
}

/* After a build: keep its positions on the host when the host checks the next updates. */
static fk_status keep_host_reference(fk__eval_state *eval, fk__cell_grid *grid)
{
    grid->host_reference_valid = 0;
    if (!eval->host_body_current || eval->count > eval->host_check_count)
        return FK_OK;
    if (eval->count > grid->host_reference_capacity) {
        float *grown = realloc(grid->host_reference, 4 * eval->count * sizeof *grown);
        if (!grown)
            return FK_ERR_HOST_MEMORY;
        grid->host_reference = grown;
        grid->host_reference_capacity = eval->count;
    }
    memcpy(grid->host_reference, eval->host_body, 4 * eval->count * sizeof(float));
    grid->host_reference_valid = 1;
    return FK_OK;
}

/* The checks' verdict, from the device's statistics or the host's. */
static fk_status act_on_check(fk__eval_state *eval, fk__cell_grid *grid, int has_reference,
                              const cl_int *stats, double seconds, int *rebuilt)
{
    fk_context *context = eval->context;
    if (stats[STAT_BAD] != INT_MAX) {
        const cl_int bad = stats[STAT_BAD];
        cl_float p[4] = {0};
        if (eval->host_body_current)
            memcpy(p, eval->host_body + 4 * (size_t)bad, sizeof p);
        else
            clEnqueueReadBuffer(context->queue, eval->body, CL_TRUE, (size_t)bad * sizeof p,
                                sizeof p, p, 0, NULL, NULL);
        return fk__fail(context, FK_ERR_INVALID_INPUT,
                        "particle %d at (%g, %g, %g) is more than one box length outside the "
                        "periodic box [0, %g) x [0, %g) x [0, %g); the %s algorithm bins "
                        "positions modulo the box: wrap them into it",
                        bad, (double)p[0], (double)p[1], (double)p[2], grid->box[0], grid->box[1],
                        grid->box[2], grid->owner);
    }
    if (has_reference && !stats[STAT_MOVED]) {
        grid->current = 1; /* within the skin: the assignment still holds */
        return FK_OK;
    }
    fk_status status = build(eval, grid, stats, seconds);
    if (status == FK_OK)
        status = keep_host_reference(eval, grid);
    if (status == FK_OK && rebuilt)
        *rebuilt = 1;
    return status;
}

fk_status fk__cell_grid_update(fk__eval_state *eval, fk__cell_grid *grid, int *rebuilt)
{
    fk_context *context = eval->context;
    if (rebuilt)
        *rebuilt = 0;
    const int was_current = grid->current;
    grid->current = 0;
    if (eval->host_body_current && eval->count <= eval->host_check_count &&
        (grid->built != eval->count || grid->host_reference_valid)) {
        /* No round trip: the host has the positions and, unless the particles are new, the
         * build's. */
        const int has_reference = grid->built == eval->count;
        const double half_skin = 0.5 * grid->skin;
        cl_int stats[STAT_COUNT];
        check_on_host(eval, grid, has_reference, (float)(half_skin * half_skin), stats);
        return act_on_check(eval, grid, has_reference, stats, 0.0, rebuilt);
    }
    const cl_int n = (cl_int)eval->count;
    const cl_int has_reference = grid->built == eval->count;
    const cl_mem reference = has_reference ? grid->reference : eval->body;
    const double half_skin = 0.5 * grid->skin;
    const cl_float threshold2 = (cl_float)(half_skin * half_skin);
    const cl_float4 box = {
        {(cl_float)grid->box[0], (cl_float)grid->box[1], (cl_float)grid->box[2], 0.0f}};
    const cl_int periodic = grid->periodic;
    cl_event events[2] = {NULL};
    const char *call = "clEnqueueWriteBuffer (cell lists: statistics)"; /* what failed */
    cl_int err = clEnqueueWriteBuffer(context->queue, grid->stats, CL_FALSE, 0,
                                      sizeof initial_stats, initial_stats, 0, NULL, &events[0]);
    fk_status status =
        FK__SET_ARGS(context, grid->check, "fk_cells_check", 0, FK__ARG(n), FK__ARG(eval->body),
                     FK__ARG(reference), FK__ARG(has_reference), FK__ARG(threshold2), FK__ARG(box),
                     FK__ARG(periodic), FK__ARG(grid->stats));
    if (status != FK_OK) {
        clFinish(context->queue);
        fk__collect_events(events, 1, NULL);
        return status;
    }
    const size_t group = (size_t)grid->aux_group;
    const size_t global = ((size_t)n + group - 1) / group * group;
    if (err == CL_SUCCESS) {
        call = "clEnqueueNDRangeKernel (fk_cells_check)";
        err = clEnqueueNDRangeKernel(context->queue, grid->check, 1, NULL, &global, &group, 0, NULL,
                                     &events[1]);
    }
    cl_int stats[STAT_COUNT];
    if (err == CL_SUCCESS) {
        call = "clEnqueueReadBuffer (cell lists: statistics)";
        err = clEnqueueReadBuffer(context->queue, grid->stats, CL_TRUE, 0, sizeof stats, stats, 0,
                                  NULL, NULL);
    }
    double seconds = 0.0;
    fk__collect_events(events, 2, &seconds);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, call, err);
    /* An update converted on the device: its verdict on the coordinates arrived with the
     * statistics (one round trip for both). Refused, the grid stays as it was. */
    status = fk__eval_positions_verdict(eval);
    if (status != FK_OK) {
        if (eval->positions_refused)
            grid->current = was_current;
        return status;
    }
    return act_on_check(eval, grid, has_reference, stats, seconds, rebuilt);
}

void fk__cell_grid_invalidate(fk__cell_grid *grid)
{
    grid->built = 0;
    grid->current = 0;
    grid->host_reference_valid = 0;
}
