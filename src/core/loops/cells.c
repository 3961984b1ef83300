/*
 * The cell-list pair loop (van Meel et al., sec. 3), for the molecular force laws with a cutoff.
 *
 * The particles are binned on the device into a grid of cells of side >= cutoff + skin, each cell
 * a fixed array of placeholders (cell_grid.c builds it with cl/cells_build.cl, which has the
 * layout; cl/cells.cl is the pair loop); the pair loop visits only a cell's neighbours. The
 * assignment is kept while no particle has moved more than skin / 2 since the last build (Verlet's
 * criterion applied to cells): then every pair closer than the cutoff was closer than cutoff + skin
 * at the build, so it lies in neighbouring cells.
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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loops/cell_grid.h"
#include "core/tuning_db/db.h"

struct fk__cells {
    fk__cell_grid grid;
    cl_program program, bound_program;
    cl_kernel pairs, bound_pairs;
    int group;  /* work-group size of the pair loop */
    int tiling; /* 1: j-particles staged through local memory */
    int unroll; /* placeholders (i-particles) per work-item */
};

static void fill_variant(fk__eval_state *eval, const struct fk__cells *cells)
{
    fk_variant *v = &eval->variant;
    v->unroll_i = cells->unroll;
    v->unroll_j = 1;
    v->work_group_size = cells->group;
    v->local_tiling = cells->tiling;
    v->j_splits = 1;
    fk__cell_grid_report(&cells->grid, v);
    v->pairs_examined = cells->grid.built ? cells->grid.pairs_examined : 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Creation */

static fk_status build_cells_program(fk__eval_state *eval, const struct fk__cells *cells,
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

static fk_status cells_supports(fk_context *context, const fk_kernel_desc *kernel,
                                const fk_accum_desc *accum, const fk_eval_config *config,
                                const fk__physics *physics, char *reason, size_t reason_size)
{
    (void)context, (void)accum;
    return fk__cell_grid_supports("cells", kernel, config, physics, reason, reason_size);
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

static fk_status cells_create(fk__eval_state *eval, const fk_program_request *request, void **out)
{
    fk_context *context = eval->context;
    struct fk__cells *cells = calloc(1, sizeof *cells);
    if (!cells)
        return FK_ERR_HOST_MEMORY;
    *out = cells; /* the evaluation destroys it on any failure below */

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
    if (eval->config.work_group_size <= 0) /* narrowed to fit (src/core/programs/variant.c) */
        group = (size_t)fk__variant_capped_group(eval, (int)group);
    if (group > device->max_work_group_size)
        group = device->max_work_group_size;
    cells->group = (int)group;
    cells->unroll = eval->config.unroll_i ? eval->config.unroll_i
                    : tuned               ? tuned->unroll_i
                                          : builtin_unroll;
    cells->tiling = eval->config.local_tiling ? eval->config.local_tiling > 0
                    : tuned                   ? tuned->local_tiling != 0
                                              : builtin_tiling;

    /* The grid's build kernels are one program for every evaluation; the pair loop is specialized
     * like the all-pairs one. */
    fk_program_result built, bound_built = {0};
    double grid_seconds = 0.0;
    int grid_from_cache = 1;
    fk_status status =
        fk__cell_grid_create(eval, &cells->grid, "cells", &grid_seconds, &grid_from_cache);
    if (status == FK_OK)
        status = build_cells_program(eval, cells, request, eval->accum->info.name, &cells->program,
                                     &built);
    if (status == FK_OK && eval->accum->choose_parameters)
        status =
            build_cells_program(eval, cells, request, "bound", &cells->bound_program, &bound_built);
    if (status == FK_OK)
        status = fk__create_kernel(context, cells->program, "fk_cells_pairs", &cells->pairs);
    if (status == FK_OK && cells->bound_program)
        status =
            fk__create_kernel(context, cells->bound_program, "fk_cells_pairs", &cells->bound_pairs);
    if (status == FK_OK)
        status = fk__variant_fit_kernel(eval, cells->pairs, (int)group, "cells", "fk_cells_pairs");
    if (status == FK_OK && cells->bound_pairs)
        status = fk__variant_fit_kernel(eval, cells->bound_pairs, (int)group, "cells",
                                        "fk_cells_pairs (bound)");
    if (status != FK_OK)
        return status; /* fk_eval_destroy releases what was made */

    eval->variant.source = eval->config.work_group_size > 0 || eval->config.unroll_i
                               ? FK_VARIANT_EXPLICIT
                           : tuned ? tuned->origin
                                   : FK_VARIANT_DEFAULT;
    eval->variant.tuned_count = tuned ? tuned->n : 0;
    eval->variant.build_seconds += grid_seconds + built.seconds + bound_built.seconds;
    eval->variant.program_from_cache =
        eval->variant.program_from_cache && grid_from_cache && built.from_cache;
    fill_variant(eval, cells);
    return FK_OK;
}

static void cells_destroy(void *opaque)
{
    struct fk__cells *cells = opaque;
    if (!cells)
        return;
    fk__cell_grid_release(&cells->grid);
    FK__RELEASE_KERNELS(cells->pairs, cells->bound_pairs);
    FK__RELEASE_PROGRAMS(cells->program, cells->bound_program);
    free(cells);
}

/* ---------------------------------------------------------------------------------------------- */
/* Evaluation */

/* After every upload: one check on the device, a rebuild when needed; both passes then run on
 * the cells of these positions. */
static fk_status cells_prepare(fk__eval_state *eval, void *opaque)
{
    struct fk__cells *cells = opaque;
    fk_status status = fk__cell_grid_update(eval, &cells->grid, NULL);
    if (status == FK_OK && !cells->grid.current)
        status = fk__fail(eval->context, FK_ERR_STATE, "cell lists were not built");
    fill_variant(eval, cells);
    return status;
}

/* The event of an empty share's pass: a marker after the zeroing. */
static fk_status enqueue_marker(fk_context *context, cl_event *event)
{
    const cl_int err = clEnqueueMarkerWithWaitList(context->queue, 0, NULL, event);
    if (err != CL_SUCCESS) {
        *event = NULL;
        return fk__cl_fail(context, "clEnqueueMarkerWithWaitList", err);
    }
    return FK_OK;
}

static fk_status cells_enqueue(fk__eval_state *eval, void *opaque, fk__pass pass, cl_event *first,
                               cl_event *last)
{
    fk_context *context = eval->context;
    struct fk__cells *cells = opaque;
    *first = *last = NULL;
    /* The bound pre-pass is the cell loop compiled with the `bound` accumulator: it costs one
     * cell loop, not N^2. */
    cl_kernel kernel = pass == FK__PASS_BOUND ? cells->bound_pairs : cells->pairs;
    const fk__cell_grid *grid = &cells->grid;
    if (!grid->current || grid->built != eval->count)
        return fk__fail(context, FK_ERR_STATE, "compute: the cell lists are not up to date");
    const cl_int capacity = grid->capacity;
    const cl_int4 layout = {{grid->grid[0], grid->grid[1], grid->grid[2], grid->periodic}};
    const cl_float4 acc_param = fk__eval_acc_param(eval);
    fk_status status = FK__SET_ARGS(
        context, kernel, "fk_cells_pairs", 0, FK__ARG(capacity), FK__ARG(layout),
        FK__ARG(grid->count), FK__ARG(grid->slots), FK__ARG(eval->body), FK__ARG(eval->body_aux),
        FK__ARG(eval->table), FK__ARG(eval->physics), FK__ARG(acc_param), FK__ARG(eval->result));
    if (status != FK_OK)
        return status;
    const size_t group = (size_t)cells->group;
    const size_t fullest = (size_t)(grid->max_count < capacity ? grid->max_count : capacity);
    const size_t per_group = group * (size_t)cells->unroll;
    const size_t chunks = fullest ? (fullest + per_group - 1) / per_group : 1;
    size_t cell_first = 0, cell_end = grid->cells;
    cl_int err = CL_SUCCESS;
    if (fk__share_applies(eval, pass)) {
        /* The share's cells, a slab of the box: which particles that is depends on the
         * positions, so every result starts at zero and the share's particles overwrite theirs. */
        fk__share_units(eval, grid->cells, &cell_first, &cell_end);
        eval->share_range = 0;
        const cl_uint zero = 0;
        err = fk__enqueue_fill(context, eval->result, &zero, sizeof zero,
                               eval->count * eval->components * 8, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            return fk__cl_fail(context, "clEnqueueFillBuffer (the share's zero results)", err);
        if (cell_end == cell_first)
            return enqueue_marker(context, first);
    }
    const size_t offset[2] = {cell_first * group, 0};
    const size_t global[2] = {(cell_end - cell_first) * group, chunks};
    const size_t local[2] = {group, 1};
    err = clEnqueueNDRangeKernel(context->queue, kernel, 2, offset, global, local, 0, NULL, first);
    if (err != CL_SUCCESS) {
        *first = NULL;
        return fk__cl_fail(context, "clEnqueueNDRangeKernel (fk_cells_pairs)", err);
    }
    return FK_OK;
}

static size_t cells_figures(const fk__eval_state *eval, const void *opaque,
                            fk__kernel_figures *figures, size_t capacity)
{
    const struct fk__cells *cells = opaque;
    const fk__named_kernel kernels[] = {
        {cells->pairs, "fk_cells_pairs"},
        {cells->bound_pairs, "fk_cells_pairs (bound pre-pass)"},
        {cells->grid.bin, "fk_cells_bin"},
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

static void cells_invalidate(void *opaque)
{
    fk__cell_grid_invalidate(&((struct fk__cells *)opaque)->grid);
}

const fk__loop fk__loop_cells = {
    .name = "cells",
    .algorithm = FK_ALGORITHM_CELLS,
    .newton = FK__NEWTON_NEVER,
    .share_unit = FK__SHARE_CELLS,
    .reach = FK__REACH_CUTOFF_SKIN,
    .accums = FK__ACCUMS_ALL,
    .double_single = 0, /* the grid's build reads float records */
    .automatic = FK__AUTO_MEASURED,
    .supports = cells_supports,
    .create = cells_create,
    .prepare = cells_prepare,
    .enqueue = cells_enqueue,
    .figures = cells_figures,
    .destroy = cells_destroy,
    .tuning_space = cells_tuning_space,
    .default_shape = cells_default_shape,
    .invalidate = cells_invalidate,
};
