/*
 * The cell-list pair loop (van Meel et al., sec. 3), for the molecular force laws with a cutoff.
 *
 * The particles are binned on the device into a grid of cells of side >= cutoff + skin, each cell
 * a fixed array of placeholders (cl/cells_build.cl has the layout and the build kernels,
 * cl/cells.cl the pair loop); the pair loop visits only a cell's neighbours. The assignment is kept
 * while no particle has moved more than skin / 2 since the last build (Verlet's criterion applied
 * to cells): then every pair closer than the cutoff was closer than cutoff + skin at the build, so
 * it lies in neighbouring cells.
 *
 * When things happen. The evaluation calls the loop's prepare (cells_prepare) after every upload
 * of positions (fk_eval_set_particles, fk_eval_update_positions). That runs one check on the
 * device (the largest displacement against skin / 2, particles far outside a periodic box, the
 * bounding box) and rebuilds only when needed. Both passes then run on those cells: the bound
 * pre-pass of the accumulators that take their scale from the data (fixed64, narumi,
 * nitadori_large) runs the cell loop compiled with the `bound` accumulator (one cell loop, not
 * N^2), then every compute the cell loop itself. Repeated computes on the same positions reuse the
 * cells.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "tune.h"

enum { AUX_WG = 64 }; /* FK_CELLS_AUX_WG in cl/cells_build.cl */

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

/* Default skin as a fraction of the cutoff: 0.3 at lj's default rc = 2.5 (sigma = 1). */
#define DEFAULT_SKIN_FRACTION 0.12

struct fk__cells {
    cl_program build_program, program, bound_program;
    cl_kernel check, bin, finish, pairs, bound_pairs;
    int group;    /* work-group size of the pair loop */
    int tiling;   /* 1: j-particles staged through local memory */
    int unroll;   /* placeholders (i-particles) per work-item */
    double skin;  /* >= 0 */
    double reach; /* cutoff + skin: the smallest cell side before the rounding margin */
    int periodic;
    double box[3];
    /* The current build */
    int grid[3];
    size_t cells;
    float origin[3], inv_size[3];
    double size[3];
    int capacity;  /* placeholders per cell */
    int max_count; /* the fullest cell of the build */
    size_t built;  /* particles of the build; 0: none yet */
    int current;   /* the build is valid for the positions on the device */
    uint64_t pairs_examined;
    size_t rebuilds, resizes;
    double build_seconds;
    cl_mem count, slots, reference, stats;
    size_t count_capacity, slot_capacity, reference_capacity; /* allocated elements */
};

/* ---------------------------------------------------------------------------------------------- */

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

/* Adds the device time of the events (each command's own, not the host's gaps between them) to
 * *seconds and releases them. */
static void collect_events(cl_event *events, size_t count, double *seconds)
{
    for (size_t k = 0; k < count; ++k)
        if (events[k]) {
            *seconds += event_duration(events[k]);
            clReleaseEvent(events[k]);
            events[k] = NULL;
        }
}

static fk_status replace_buffer(fk_eval *eval, cl_mem *buffer, size_t bytes, const char *what)
{
    if (*buffer)
        clReleaseMemObject(*buffer);
    *buffer = NULL;
    const fk_device_info *device = &eval->context->info;
    if (bytes > device->max_allocation_bytes || bytes > device->global_memory_bytes)
        return fk__fail(eval->context, FK_ERR_DEVICE_MEMORY,
                        "cell lists: the %s need %zu bytes; %s allows %llu in one allocation", what,
                        bytes, device->name, (unsigned long long)device->max_allocation_bytes);
    char name[64];
    snprintf(name, sizeof name, "cell %s", what);
    return fk__eval_create_buffer(eval, buffer, CL_MEM_READ_WRITE, bytes, NULL, name);
}

static float decode_ordered(cl_int key)
{
    const int32_t bits = key >= 0 ? key : key ^ 0x7fffffff;
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

static void fill_variant(fk_eval *eval, const struct fk__cells *cells)
{
    fk_variant *v = &eval->variant;
    v->unroll_i = cells->unroll;
    v->unroll_j = 1;
    v->work_group_size = cells->group;
    v->local_tiling = cells->tiling;
    v->j_splits = 1;
    for (int d = 0; d < 3; ++d) {
        v->cell_grid[d] = cells->built ? cells->grid[d] : 0;
        v->cell_size[d] = cells->built ? cells->size[d] : 0.0;
    }
    v->cell_capacity = cells->built ? cells->capacity : 0;
    v->cell_skin = cells->skin;
    v->cell_rebuilds = cells->rebuilds;
    v->cell_resizes = cells->resizes;
    v->cell_build_seconds = cells->build_seconds;
    v->pairs_examined = cells->built ? cells->pairs_examined : 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Creation */

static fk_status build_cells_program(fk_eval *eval, const struct fk__cells *cells,
                                     const fk_program_request *request, const char *accum,
                                     cl_program *program, fk_program_result *built)
{
    fk_program_request cells_request = *request;
    cells_request.file = "cells.cl";
    cells_request.accum = accum;
    cells_request.unroll_i = cells->unroll;
    cells_request.unroll_j = 1;
    cells_request.local_tiling = cells->tiling;
    cells_request.work_group_size = cells->group;
    fk_status status = fk__program_build(eval->context, &cells_request, built);
    if (status == FK_OK)
        *program = built->program;
    return status;
}

static fk_status create_kernel(fk_eval *eval, cl_program program, const char *name,
                               cl_kernel *kernel)
{
    cl_int err = CL_SUCCESS;
    *kernel = clCreateKernel(program, name, &err);
    if (err != CL_SUCCESS) {
        char call[96];
        snprintf(call, sizeof call, "clCreateKernel (%s)", name);
        return fk__cl_fail(eval->context, call, err);
    }
    return FK_OK;
}

static fk_status check_group(fk_eval *eval, cl_kernel kernel, size_t group, const char *name)
{
    size_t limit = 0;
    clGetKernelWorkGroupInfo(kernel, eval->context->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof limit,
                             &limit, NULL);
    if (limit && group > limit)
        return fk__fail(eval->context, FK_ERR_UNSUPPORTED,
                        "cells: kernel %s needs %zu work-items per group; %s allows %zu", name,
                        group, eval->context->info.name, limit);
    return FK_OK;
}

static fk_status cells_supports(fk_context *context, const fk_kernel_desc *kernel,
                                const fk_accum_desc *accum, const fk_eval_config *config,
                                const fk__physics *physics, char *reason, size_t reason_size)
{
    (void)context, (void)accum;
    if (!kernel->uses_table) {
        snprintf(reason, reason_size,
                 "the cells algorithm needs a short-range force law with a cutoff; %s is "
                 "long-range gravity with no cutoff: use all-pairs or symmetric",
                 kernel->info.name);
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (!physics->shifted || !(physics->cutoff > 0)) {
        snprintf(reason, reason_size,
                 "the cells algorithm needs a cutoff: %s has none unless one is given "
                 "(--cutoff, fk_eval_config.cutoff)",
                 kernel->info.name);
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (!isfinite(config->skin)) {
        snprintf(reason, reason_size, "cells: the skin must be finite");
        return FK_ERR_INVALID_ARGUMENT;
    }
    return FK_OK;
}

/* The built-in shape of the pair loop, where neither the configuration nor a tuning database
 * entry gives one (the measurements are in cells_create). Local memory pays on GPUs; on CPUs it
 * is ordinary memory, and the loop without barriers compiles faster and runs faster on POCL
 * (measured: docs/algorithms.md "Cell lists"). */
static void builtin_shape(const fk_device_info *device, int *group, int *unroll, int *tiling)
{
    const int gpu = device->type == FK_DEVICE_GPU;
    *group = gpu ? 32 : 1;
    *unroll = gpu ? 1 : 4;
    *tiling = gpu;
}

static fk_status cells_create(fk_eval *eval, const fk_program_request *request, void **out)
{
    fk_context *context = eval->context;
    const fk__physics *physics = &eval->law.physics;
    const double skin_config = eval->config.skin;
    struct fk__cells *cells = calloc(1, sizeof *cells);
    if (!cells)
        return FK_ERR_HOST_MEMORY;
    *out = cells; /* the evaluation destroys it on any failure below */
    cells->skin = skin_config > 0    ? skin_config
                  : skin_config == 0 ? DEFAULT_SKIN_FRACTION * physics->cutoff
                                     : 0.0;
    cells->reach = physics->cutoff + cells->skin;
    cells->periodic = physics->periodic;
    for (int d = 0; d < 3; ++d)
        cells->box[d] = physics->periodic ? physics->box[d] : 0.0;

    /* The group shape: a cell holds ~2 (density 0.1) to ~20 (liquid) particles with the default
     * skin, and a group's work-items past the cell's count are wasted. GPUs: a warp. POCL (which
     * does not vectorize this loop across work-items): one work-item of 4 unrolled placeholders,
     * 4 independent sums; at densities 0.1 to 1 it measured 1.3 to 9 times faster than 4 x 4 and
     * 16 x 1, 1 to 4.4 times faster than 1 x 1, 3 to 7 than 1 x 8, 1.2 to 2.4 times faster than 2 x
     * 4 at 0.4 and 0.1 and 5% slower at 1 (docs/algorithms.md "Cell lists"). config.work_group_size
     * and unroll_i override. */
    const fk_device_info *device = &context->info;
    /* A tuning database entry for the cell loop (`forcekit tune --algorithm cells`) replaces the
     * built-in shape where the configuration leaves it automatic. */
    const fk_tuning_entry *tuned =
        eval->config.work_group_size > 0 || eval->config.unroll_i
            ? NULL
            : fk__tuning_lookup_loop(context->tuning, FK_ALGORITHM_CELLS, eval->kernel->info.name,
                                     eval->accum->info.name, eval->config.expected_count);
    int builtin_group, builtin_unroll, builtin_tiling;
    builtin_shape(device, &builtin_group, &builtin_unroll, &builtin_tiling);
    size_t group = eval->config.work_group_size > 0 ? (size_t)eval->config.work_group_size
                   : tuned                          ? (size_t)tuned->work_group_size
                                                    : (size_t)builtin_group;
    if (group > device->max_work_group_size)
        group = device->max_work_group_size;
    if (device->max_work_group_size < AUX_WG)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "cells: the build kernels need %d work-items per group; %s allows %zu",
                        AUX_WG, device->name, device->max_work_group_size);
    cells->group = (int)group;
    cells->unroll = eval->config.unroll_i ? eval->config.unroll_i
                    : tuned               ? tuned->unroll_i
                                          : builtin_unroll;
    cells->tiling = eval->config.local_tiling ? eval->config.local_tiling > 0
                    : tuned                   ? tuned->local_tiling != 0
                                              : builtin_tiling;

    /* The build kernels do not depend on the force law or accumulator: one program (and one
     * cache entry) for every evaluation; the pair loop is specialized like the all-pairs one. */
    fk_program_result built_kernels, built, bound_built = {0};
    char build_options[64];
    snprintf(build_options, sizeof build_options, "-D FK_CELLS_AUX_WG=%d", AUX_WG);
    fk_status status =
        fk__program_build_file(context, "cells_build.cl", build_options, &built_kernels);
    if (status == FK_OK) {
        cells->build_program = built_kernels.program;
        status = build_cells_program(eval, cells, request, eval->accum->info.name, &cells->program,
                                     &built);
    }
    if (status == FK_OK && eval->accum->choose_parameters)
        status =
            build_cells_program(eval, cells, request, "bound", &cells->bound_program, &bound_built);
    if (status == FK_OK)
        status = create_kernel(eval, cells->build_program, "fk_cells_check", &cells->check);
    if (status == FK_OK)
        status = create_kernel(eval, cells->build_program, "fk_cells_bin", &cells->bin);
    if (status == FK_OK)
        status = create_kernel(eval, cells->build_program, "fk_cells_finish", &cells->finish);
    if (status == FK_OK)
        status = create_kernel(eval, cells->program, "fk_cells_pairs", &cells->pairs);
    if (status == FK_OK && cells->bound_program)
        status = create_kernel(eval, cells->bound_program, "fk_cells_pairs", &cells->bound_pairs);
    if (status == FK_OK)
        status = check_group(eval, cells->pairs, group, "fk_cells_pairs");
    if (status == FK_OK && cells->bound_pairs)
        status = check_group(eval, cells->bound_pairs, group, "fk_cells_pairs (bound)");
    if (status == FK_OK)
        status = check_group(eval, cells->check, AUX_WG, "fk_cells_check");
    if (status == FK_OK)
        status = check_group(eval, cells->finish, AUX_WG, "fk_cells_finish");
    if (status == FK_OK)
        status = replace_buffer(eval, &cells->stats, sizeof initial_stats, "statistics");
    if (status != FK_OK)
        return status; /* fk_eval_destroy releases what was made */

    eval->variant.source = eval->config.work_group_size > 0 || eval->config.unroll_i
                               ? FK_VARIANT_EXPLICIT
                           : tuned ? tuned->origin
                                   : FK_VARIANT_DEFAULT;
    eval->variant.tuned_count = tuned ? tuned->n : 0;
    eval->variant.build_seconds += built_kernels.seconds + built.seconds + bound_built.seconds;
    eval->variant.program_from_cache =
        eval->variant.program_from_cache && built_kernels.from_cache && built.from_cache;
    fill_variant(eval, cells);
    return FK_OK;
}

static void cells_destroy(void *opaque)
{
    struct fk__cells *cells = opaque;
    if (!cells)
        return;
    cl_kernel kernels[] = {cells->check, cells->bin, cells->finish, cells->pairs,
                           cells->bound_pairs};
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; ++k)
        if (kernels[k])
            clReleaseKernel(kernels[k]);
    if (cells->build_program)
        clReleaseProgram(cells->build_program);
    if (cells->program)
        clReleaseProgram(cells->program);
    if (cells->bound_program)
        clReleaseProgram(cells->bound_program);
    cl_mem buffers[] = {cells->count, cells->slots, cells->reference, cells->stats};
    for (size_t k = 0; k < sizeof buffers / sizeof buffers[0]; ++k)
        if (buffers[k])
            clReleaseMemObject(buffers[k]);
    free(cells);
}

/* ---------------------------------------------------------------------------------------------- */
/* Building */

/* The grid for this build. Cells have a side of at least cutoff + skin plus a margin for float
 * rounding: the binning's (x - origin) / side and the kernel's minimum image err by a few ulp of
 * the largest coordinate, and that must not let a pair inside the cutoff land two cells apart. At
 * most 2 N + 64 cells (larger cells are still correct): a few particles far from the rest must
 * not make a huge, empty grid. */
static void choose_grid(struct fk__cells *cells, size_t n, const cl_int *stats)
{
    const double max_cells = 2.0 * (double)n + 64.0;
    double low[3] = {0, 0, 0}, high[3] = {0, 0, 0}, magnitude = 0.0;
    for (int d = 0; d < 3; ++d) {
        if (cells->periodic) {
            high[d] = cells->box[d];
            magnitude = fmax(magnitude, 2.0 * cells->box[d]);
        } else {
            low[d] = decode_ordered(stats[STAT_MIN + d]);
            high[d] = decode_ordered(stats[STAT_MAX + d]);
            magnitude = fmax(magnitude, fmax(fabs(low[d]), fabs(high[d])));
        }
    }
    const double side = cells->reach * (1.0 + 1e-5) + 4.0 * ldexp(magnitude, -20);
    double count[3];
    if (cells->periodic) {
        for (int d = 0; d < 3; ++d)
            count[d] = fmax(1.0, floor(cells->box[d] / side));
        for (;;) {
            const double product = count[0] * count[1] * count[2];
            if (product <= max_cells)
                break;
            const double factor = cbrt(product / max_cells);
            for (int d = 0; d < 3; ++d)
                count[d] = fmax(1.0, floor(count[d] / factor));
        }
        for (int d = 0; d < 3; ++d) {
            cells->grid[d] = (int)count[d];
            cells->size[d] = cells->box[d] / count[d];
            cells->origin[d] = 0.0f;
            cells->inv_size[d] = (float)(count[d] / cells->box[d]);
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
            cells->grid[d] = (int)count[d];
            cells->size[d] = size;
            cells->origin[d] = (float)low[d];
            cells->inv_size[d] = (float)(1.0 / size);
        }
    }
    cells->cells = (size_t)cells->grid[0] * (size_t)cells->grid[1] * (size_t)cells->grid[2];
}

static fk_status bin_once(fk_eval *eval, struct fk__cells *cells, cl_int *stats, double *seconds)
{
    fk_context *context = eval->context;
    const cl_int n = (cl_int)eval->count, cell_count = (cl_int)cells->cells;
    const cl_int capacity = cells->capacity;
    const cl_int4 grid = {{cells->grid[0], cells->grid[1], cells->grid[2], cells->periodic}};
    const cl_float4 origin = {{cells->origin[0], cells->origin[1], cells->origin[2], 0.0f}};
    const cl_float4 inv_size = {{cells->inv_size[0], cells->inv_size[1], cells->inv_size[2], 0.0f}};
    cl_event events[5] = {NULL};
    const cl_int zero = 0;
    /* The call that failed, for the caller's detail. */
    const char *call = "clEnqueueFillBuffer (cell lists: cell counts)";
    cl_int err = fk__enqueue_fill(context, cells->count, &zero, sizeof zero,
                                  cells->cells * sizeof(cl_int), 0, NULL, &events[0]);
    if (err == CL_SUCCESS) {
        call = "clEnqueueWriteBuffer (cell lists: statistics)";
        err = clEnqueueWriteBuffer(context->queue, cells->stats, CL_FALSE, 0, sizeof initial_stats,
                                   initial_stats, 0, NULL, &events[1]);
    }
    fk_status status =
        FK__SET_ARGS(context, cells->bin, "fk_cells_bin", 0, FK__ARG(n), FK__ARG(eval->body),
                     FK__ARG(origin), FK__ARG(inv_size), FK__ARG(grid), FK__ARG(capacity),
                     FK__ARG(cells->count), FK__ARG(cells->slots), FK__ARG(cells->stats));
    if (status == FK_OK)
        status = FK__SET_ARGS(context, cells->finish, "fk_cells_finish", 0, FK__ARG(cell_count),
                              FK__ARG(grid), FK__ARG(capacity), FK__ARG(cells->count),
                              FK__ARG(cells->slots), FK__ARG(cells->stats));
    if (status != FK_OK) {
        clFinish(context->queue);
        for (size_t k = 0; k < 2; ++k)
            if (events[k])
                clReleaseEvent(events[k]);
        return status;
    }
    const size_t group = AUX_WG;
    const size_t bin_global = ((size_t)n + group - 1) / group * group;
    const size_t finish_global = (cells->cells + group - 1) / group * group;
    if (err == CL_SUCCESS) {
        call = "clEnqueueNDRangeKernel (fk_cells_bin)";
        err = clEnqueueNDRangeKernel(context->queue, cells->bin, 1, NULL, &bin_global, &group, 0,
                                     NULL, &events[2]);
    }
    if (err == CL_SUCCESS) {
        call = "clEnqueueNDRangeKernel (fk_cells_finish)";
        err = clEnqueueNDRangeKernel(context->queue, cells->finish, 1, NULL, &finish_global, &group,
                                     0, NULL, &events[3]);
    }
    /* The positions of this build, for the next displacement check. */
    if (err == CL_SUCCESS) {
        call = "clEnqueueCopyBuffer (cell lists: positions)";
        err = clEnqueueCopyBuffer(context->queue, eval->body, cells->reference, 0, 0,
                                  (size_t)n * 4 * sizeof(cl_float), 0, NULL, &events[4]);
    }
    if (err == CL_SUCCESS) {
        call = "clEnqueueReadBuffer (cell lists: statistics)";
        err = clEnqueueReadBuffer(context->queue, cells->stats, CL_TRUE, 0, sizeof initial_stats,
                                  stats, 0, NULL, NULL);
    }
    if (err == CL_SUCCESS)
        collect_events(events, 5, seconds);
    else
        collect_events(events, 5, &(double){0});
    return err == CL_SUCCESS ? FK_OK : fk__cl_fail(context, call, err);
}

static fk_status build(fk_eval *eval, struct fk__cells *cells, const cl_int *check_stats,
                       double check_seconds)
{
    const size_t n = eval->count;
    choose_grid(cells, n, check_stats);

    if (cells->cells > cells->count_capacity || cells->cells * 4 < cells->count_capacity) {
        fk_status status =
            replace_buffer(eval, &cells->count, cells->cells * sizeof(cl_int), "cell counts");
        cells->count_capacity = status == FK_OK ? cells->cells : 0;
        if (status != FK_OK)
            return status;
    }
    if (n > cells->reference_capacity) {
        fk_status status =
            replace_buffer(eval, &cells->reference, n * 4 * sizeof(cl_float), "positions");
        cells->reference_capacity = status == FK_OK ? n : 0;
        if (status != FK_OK)
            return status;
    }
    /* Placeholders: twice the mean occupancy, or what the fullest cell of the last build needed
     * (so a clustered system does not overflow at every rebuild, and a dispersed one gives the
     * memory back). */
    const double mean = (double)n / (double)cells->cells;
    double capacity = fmax(ceil(2.0 * mean) + 8.0,
                           (double)cells->max_count + (double)(cells->max_count / 8) + 4.0);
    cells->capacity = (int)fmin(capacity, (double)n);

    double seconds = check_seconds;
    cl_int stats[STAT_COUNT];
    for (int attempt = 0;; ++attempt) {
        const size_t entries = cells->cells * (size_t)cells->capacity;
        if (entries > cells->slot_capacity || entries * 4 < cells->slot_capacity) {
            fk_status status =
                replace_buffer(eval, &cells->slots, entries * sizeof(cl_int), "placeholders");
            cells->slot_capacity = status == FK_OK ? entries : 0;
            if (status != FK_OK) {
                /* Keep the allocation's own detail; say "clustered" only when the last build
                 * found a cell far above the mean (a first build has not looked yet). */
                char detail[512];
                snprintf(detail, sizeof detail, "%s", fk_context_last_error(eval->context));
                const int clustered = cells->max_count > 2 * (int)ceil(mean) + 8;
                return fk__fail(eval->context, status,
                                "cell lists: %zu cells x %d placeholders do not fit on %s: %s%s",
                                cells->cells, cells->capacity, eval->context->info.name, detail,
                                clustered ? "; the particles are too clustered for fixed "
                                            "placeholders: use the all-pairs algorithm"
                                          : "");
            }
        }
        fk_status status = bin_once(eval, cells, stats, &seconds);
        if (status != FK_OK)
            return status;
        cells->max_count = stats[STAT_MAX_COUNT];
        if (stats[STAT_OVERFLOW] == 0)
            break;
        /* Some cell had more particles than placeholders: none was dropped silently; the
         * counts are exact, so one more binning with room for the fullest cell suffices. */
        if (attempt >= 2)
            return fk__fail(eval->context, FK_ERR_OPENCL,
                            "cell lists: %d particles still found their cell full after growing "
                            "the placeholders to %d (device atomics?)",
                            stats[STAT_OVERFLOW], cells->capacity);
        const int needed = cells->max_count + cells->max_count / 8 + 4;
        cells->capacity = needed < (int)n ? needed : (int)n;
        cells->resizes++;
    }
    cells->pairs_examined =
        (uint64_t)(uint32_t)stats[STAT_PAIRS_LO] | ((uint64_t)(uint32_t)stats[STAT_PAIRS_HI] << 32);
    cells->built = n;
    cells->current = 1;
    cells->rebuilds++;
    cells->build_seconds = seconds;
    return FK_OK;
}

/* Brings the cells up to date with the positions on the device: one check, and a build when the
 * particles are new or some particle moved more than skin / 2 since the last build. */
static fk_status update(fk_eval *eval, struct fk__cells *cells)
{
    fk_context *context = eval->context;
    cells->current = 0;
    const cl_int n = (cl_int)eval->count;
    const cl_int has_reference = cells->built == eval->count;
    const cl_mem reference = has_reference ? cells->reference : eval->body;
    const double half_skin = 0.5 * cells->skin;
    const cl_float threshold2 = (cl_float)(half_skin * half_skin);
    const cl_float4 box = {
        {(cl_float)cells->box[0], (cl_float)cells->box[1], (cl_float)cells->box[2], 0.0f}};
    const cl_int periodic = cells->periodic;
    cl_event events[2] = {NULL};
    const char *call = "clEnqueueWriteBuffer (cell lists: statistics)"; /* what failed */
    cl_int err = clEnqueueWriteBuffer(context->queue, cells->stats, CL_FALSE, 0,
                                      sizeof initial_stats, initial_stats, 0, NULL, &events[0]);
    fk_status status =
        FK__SET_ARGS(context, cells->check, "fk_cells_check", 0, FK__ARG(n), FK__ARG(eval->body),
                     FK__ARG(reference), FK__ARG(has_reference), FK__ARG(threshold2), FK__ARG(box),
                     FK__ARG(periodic), FK__ARG(cells->stats));
    if (status != FK_OK) {
        clFinish(context->queue);
        if (events[0])
            clReleaseEvent(events[0]);
        return status;
    }
    const size_t group = AUX_WG;
    const size_t global = ((size_t)n + group - 1) / group * group;
    if (err == CL_SUCCESS) {
        call = "clEnqueueNDRangeKernel (fk_cells_check)";
        err = clEnqueueNDRangeKernel(context->queue, cells->check, 1, NULL, &global, &group, 0,
                                     NULL, &events[1]);
    }
    cl_int stats[STAT_COUNT];
    if (err == CL_SUCCESS) {
        call = "clEnqueueReadBuffer (cell lists: statistics)";
        err = clEnqueueReadBuffer(context->queue, cells->stats, CL_TRUE, 0, sizeof stats, stats, 0,
                                  NULL, NULL);
    }
    double seconds = 0.0;
    collect_events(events, 2, &seconds);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, call, err);
    if (stats[STAT_BAD] != INT_MAX) {
        const cl_int bad = stats[STAT_BAD];
        cl_float p[4] = {0};
        clEnqueueReadBuffer(context->queue, eval->body, CL_TRUE, (size_t)bad * sizeof p, sizeof p,
                            p, 0, NULL, NULL);
        return fk__fail(context, FK_ERR_INVALID_INPUT,
                        "particle %d at (%g, %g, %g) is more than one box length outside the "
                        "periodic box [0, %g) x [0, %g) x [0, %g); the cells algorithm bins "
                        "positions modulo the box: wrap them into it",
                        bad, (double)p[0], (double)p[1], (double)p[2], cells->box[0], cells->box[1],
                        cells->box[2]);
    }
    if (has_reference && !stats[STAT_MOVED]) {
        cells->current = 1; /* within the skin: the assignment still holds */
        return FK_OK;
    }
    return build(eval, cells, stats, seconds);
}

/* ---------------------------------------------------------------------------------------------- */
/* Evaluation */

/* After every upload: one check on the device, a rebuild when needed; both passes then run on
 * the cells of these positions. */
static fk_status cells_prepare(fk_eval *eval, void *opaque)
{
    struct fk__cells *cells = opaque;
    fk_status status = update(eval, cells);
    if (status == FK_OK && !cells->current)
        status = fk__fail(eval->context, FK_ERR_STATE, "cell lists were not built");
    fill_variant(eval, cells);
    return status;
}

static fk_status cells_enqueue(fk_eval *eval, void *opaque, fk__pass pass, cl_event *first,
                               cl_event *last)
{
    fk_context *context = eval->context;
    struct fk__cells *cells = opaque;
    *first = *last = NULL;
    /* The bound pre-pass is the cell loop compiled with the `bound` accumulator: it costs one
     * cell loop, not N^2. */
    cl_kernel kernel = pass == FK__PASS_BOUND ? cells->bound_pairs : cells->pairs;
    if (!cells->current || cells->built != eval->count)
        return fk__fail(context, FK_ERR_STATE, "compute: the cell lists are not up to date");
    const cl_int capacity = cells->capacity;
    const cl_int4 grid = {{cells->grid[0], cells->grid[1], cells->grid[2], cells->periodic}};
    const cl_float4 acc_param = fk__eval_acc_param(eval);
    fk_status status = FK__SET_ARGS(
        context, kernel, "fk_cells_pairs", 0, FK__ARG(capacity), FK__ARG(grid),
        FK__ARG(cells->count), FK__ARG(cells->slots), FK__ARG(eval->body), FK__ARG(eval->body_aux),
        FK__ARG(eval->table), FK__ARG(eval->physics), FK__ARG(acc_param), FK__ARG(eval->result));
    if (status != FK_OK)
        return status;
    const size_t group = (size_t)cells->group;
    const size_t fullest = (size_t)(cells->max_count < capacity ? cells->max_count : capacity);
    const size_t per_group = group * (size_t)cells->unroll;
    const size_t chunks = fullest ? (fullest + per_group - 1) / per_group : 1;
    const size_t global[2] = {cells->cells * group, chunks};
    const size_t local[2] = {group, 1};
    const cl_int err =
        clEnqueueNDRangeKernel(context->queue, kernel, 2, NULL, global, local, 0, NULL, first);
    if (err != CL_SUCCESS) {
        *first = NULL;
        return fk__cl_fail(context, "clEnqueueNDRangeKernel (fk_cells_pairs)", err);
    }
    return FK_OK;
}

static size_t cells_figures(const fk_eval *eval, const void *opaque, fk__kernel_figures *figures,
                            size_t capacity)
{
    const struct fk__cells *cells = opaque;
    const fk__named_kernel kernels[] = {
        {cells->pairs, "fk_cells_pairs"},
        {cells->bound_pairs, "fk_cells_pairs (bound pre-pass)"},
        {cells->bin, "fk_cells_bin"},
    };
    return fk__figures_of_kernels(eval->context, kernels, sizeof kernels / sizeof kernels[0],
                                  figures, capacity);
}

/* ---------------------------------------------------------------------------------------------- */
/* Tuning space: placeholders per work-item (unroll I; J is 1: a cell's j-particles are not
 * unrolled), work-group sizes around a cell's occupancy (2 to 20 particles with the default skin)
 * and tiling on and off. */

static const int cells_unrolls[] = {1, 2, 4, 8};
static const int cells_cpu_groups[] = {1, 2, 4, 8, 16, 32};
static const int cells_gpu_groups[] = {8, 16, 32, 64, 128};

static int pinned_or(int pinned, int value)
{
    return !pinned || pinned == value;
}

static size_t cells_tuning_space(const fk__tuning_query *query, fk__loop_shape **out)
{
    *out = NULL;
    const fk_device_info *device = &query->context->info;
    const fk_tune_config *pinned = query->pinned;
    const int gpu = device->type == FK_DEVICE_GPU;
    const int *groups = gpu ? cells_gpu_groups : cells_cpu_groups;
    const int group_count = gpu ? 5 : 6;
    if (pinned->lanes > 0 || pinned->j_splits > 0 || (pinned->unroll_j && pinned->unroll_j != 1))
        return 0;
    fk__loop_shape *space = calloc(4 * (size_t)group_count * 2, sizeof *space);
    if (!space)
        return 0;
    size_t count = 0;
    for (int a = 0; a < 4; ++a)
        for (int g = 0; g < group_count; ++g)
            for (int tiling = 1; tiling >= 0; --tiling) {
                if (!pinned_or(pinned->unroll_i, cells_unrolls[a]) ||
                    !pinned_or(pinned->work_group_size, groups[g]) ||
                    (pinned->local_tiling && (pinned->local_tiling > 0) != tiling) ||
                    (size_t)groups[g] > device->max_work_group_size)
                    continue;
                fk__loop_shape *s = &space[count++];
                s->unroll_i = cells_unrolls[a];
                s->unroll_j = 1;
                s->work_group_size = groups[g];
                s->local_tiling = tiling;
                const int coordinate[6] = {a, 0, g, tiling, 0, 0};
                memcpy(s->coordinate, coordinate, sizeof coordinate);
            }
    if (count == 0) {
        free(space);
        return 0;
    }
    *out = space;
    return count;
}

static void cells_default_shape(const fk__tuning_query *query, fk__loop_shape *shape)
{
    memset(shape, 0, sizeof *shape);
    builtin_shape(&query->context->info, &shape->work_group_size, &shape->unroll_i,
                  &shape->local_tiling);
    if ((size_t)shape->work_group_size > query->context->info.max_work_group_size)
        shape->work_group_size = (int)query->context->info.max_work_group_size;
    shape->unroll_j = 1;
}

const fk__loop fk__loop_cells = {
    .name = "cells",
    .supports = cells_supports,
    .create = cells_create,
    .prepare = cells_prepare,
    .enqueue = cells_enqueue,
    .figures = cells_figures,
    .destroy = cells_destroy,
    .tuning_space = cells_tuning_space,
    .default_shape = cells_default_shape,
};
