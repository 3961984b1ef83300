/*
 * The Verlet neighbour-list pair loop, for the molecular force laws with a cutoff (issue #17).
 *
 * Lists of radius R = cutoff + skin (plus the grid's rounding margin) are built on the device from
 * the cell grid the cell loop uses (cell_grid.c, cl/cells_build.cl): cl/neighbors_build.cl walks
 * each particle's neighbouring cells, counting its partners and storing them into a scratch row,
 * and after a prefix sum copies the rows to the counted offsets (compressed rows; the layout is
 * described there); the first build, and a build whose rows overflow, walk twice instead (count,
 * then write at the counted offsets): row_mode below. cl/neighbors.cl runs the pair loop over
 * them.
 *
 * When things happen. The evaluation calls prepare after every upload of positions. The grid's
 * check runs on the device (the largest displacement since the last build against skin / 2, one
 * flag read back); the lists are rebuilt exactly when the grid is, from the same positions, so a
 * pair closer than the cutoff now was closer than R at the build. Otherwise the lists stay, and
 * both passes (the bound pre-pass of fixed64, narumi, nitadori_large with the `bound` accumulator,
 * then the forces) walk them.
 *
 * Half or full (fk_eval_config.neighbor_lists, use_half_lists below). Half lists compute each pair
 * once for both particles; only the accumulators the symmetric loop takes (fk__accum_allows_newton:
 * float, double, fixed64) can have them; the others (the compensated ones and ref, whose error
 * analysis is of one running sum of each particle's own terms) always get full lists. The bound
 * pre-pass uses the lists of the forces pass: its terms' magnitudes are the same from either
 * side.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loops/cell_grid.h"
#include "core/loops/lanes.h"
#include "core/tuning_db/db.h"

/* stats[] indices, as in cl/neighbors_build.cl */
enum {
    STAT_MISSING = 0,
    STAT_TOTAL_A,
    STAT_TOTAL_B = STAT_TOTAL_A + 2,
    STAT_MAX_ROW = STAT_TOTAL_B + 2,
    STAT_COUNT
};
static const cl_int initial_stats[8] = {0};
_Static_assert(STAT_COUNT <= 8, "neighbour statistics buffer too small");

/* FK_NB_SCAN_BLOCK in cl/neighbors_build.cl: counts per work-group of the prefix sum; FK_NB_WALK_I
 * there: placeholders per work-item of the list walks. */
enum { SCAN_ITEMS = 16, WALK_I = 4, WALK_V = 8 }; /* a scan block: aux_group x SCAN_ITEMS counts */

struct fk__neighbors {
    fk__cell_grid grid;
    int half;     /* 1: half lists, Newton's third law; 0: full lists */
    int group;    /* work-items per group of the pair kernels, one particle each */
    int unroll;   /* partners per unrolled step (UNROLL_J) */
    int lanes;    /* > 0: the lane form, partners per vector (cl/neighbors.c, FK_LANES) */
    int split;    /* work-items per particle (FK_NB_SPLIT): full lists, the scalar walk */
    int walk;     /* the list build's walk: WALK_AUTO, WALK_TILED or WALK_ITEMS (use_tiled_walk) */
    int row_mode; /* one walk: ROW_AUTO, ROW_OFF (two walks) or ROW_FORCED (choose_row) */
    int row;      /* one walk: slots per particle of the scratch rows; 0: two walks */
    int compact_lanes; /* work-items per particle of fk_neighbors_compact */
    cl_program build_program, program, bound_program;
    cl_kernel count, fill, count_tiled, fill_tiled, sort, scan_blocks, scan_top, scan_apply;
    cl_kernel count_store, count_store_tiled, count_store_vec, compact;
    /* The pair loop of each pass: fk_neighbors_half and _gather, or fk_neighbors_full (gather
     * NULL). */
    cl_kernel pairs, gather, bound_pairs, bound_gather;
    cl_mem counts, offsets, block_sums, list_a, list_b, jterms, cursor, stats, scratch;
    /* allocated elements */
    size_t counts_capacity, offsets_capacity, block_capacity, a_capacity, b_capacity,
        jterm_capacity, cursor_capacity, scratch_capacity;
    /* The current lists */
    size_t built;        /* particles of the lists; 0: none */
    size_t entries_a;    /* entries of the lists A: the pairs each pass evaluates */
    double list_seconds; /* device seconds of the last list build */
};

static const char owner[] = "neighbors";

/* ---------------------------------------------------------------------------------------------- */

static void fill_variant(fk__eval_state *eval, const struct fk__neighbors *state)
{
    fk_variant *v = &eval->variant;
    v->unroll_i = 1;
    v->unroll_j = state->unroll;
    v->lanes = state->lanes;
    v->work_group_size = state->group;
    v->local_tiling = 0;
    v->j_splits = state->split;
    fk__cell_grid_report(&state->grid, v);
    v->cell_build_seconds += state->built ? state->list_seconds : 0.0;
    v->pairs_examined = state->built ? (uint64_t)state->entries_a : 0;
    v->neighbor_half_lists = state->half;
}

/* The built-in shape, where neither the configuration nor a tuning database entry gives one.
 * CPUs: measured on POCL 3.1, 2 EPYC cores, lj float, N = 16,384 at density 0.8 (bench's lattice),
 * median of 7: 1x4 with 4, 16 or 64 work-items 0.85 ms, 1x2 0.99-1.03 ms, 1x1 1.5 ms, 1x8 as 1x4
 * (the unrolled partners give the core independent pair computations; the sum stays one chain).
 * GPUs: measured on an NVIDIA H200, ljc_constant float, full lists (the GPUs' automatic form),
 * density 0.8, rc 2.5, skin 0.3, device time per evaluation: 1x4 with 32 work-items 0.515 ms at
 * N = 1,048,576 (1x1 with 64: 0.78; every other shape of 32-256 by 1x1, 1x2, 1x4 between) and
 * 0.032 ms at 65,536 (best 0.030) (results/2026-11-25_nvidia-h200/neighbors_forms). */
static void builtin_shape(const fk_device_info *device, int *group, int *unroll)
{
    const int gpu = device->type == FK_DEVICE_GPU;
    *group = gpu ? 32 : 16;
    *unroll = 4;
}

/* The built-in work-items per particle (FK_NB_SPLIT) for full lists in the scalar walk. GPUs: 4,
 * measured on an NVIDIA H200 (ljc_constant float, density 0.8, rc 2.5, skin 0.3, periodic, 1x4,
 * device time per evaluation; results/2026-11-27_nvidia-h200/lists_split): with 32
 * work-items per group, 1 / 2 / 4 / 8 work-items per particle took 17.4 / 12.3 / 9.8 / 9.2 us at
 * N = 4,096, 19.2 / 14.7 / 12.0 / 12.6 at 16,384, 32.4 / 29.0 / 28.8 / 30.6 at 65,536,
 * 128 / 98 / 96 / 105 at 262,144 and 514 / 348 / 327 / 363 at 1,048,576 (64 work-items: no
 * better). A walk is a chain of dependent loads; four shorter chains per particle keep more loads
 * in flight. CPUs: 1 (the local-memory merge's barrier splits POCL's work-item loops, and the
 * lane form is the CPU's parallel walk). */
static int builtin_split(const fk_device_info *device)
{
    return device->type == FK_DEVICE_GPU ? 4 : 1;
}

static fk_status neighbors_supports(fk_context *context, const fk_kernel_desc *kernel,
                                    const fk_accum_desc *accum, const fk_eval_config *config,
                                    const fk__physics *physics, char *reason, size_t reason_size)
{
    (void)context;
    if (config->neighbor_lists < FK_NEIGHBOR_LISTS_AUTO ||
        config->neighbor_lists > FK_NEIGHBOR_LISTS_FULL) {
        snprintf(reason, reason_size,
                 "neighbor_lists %d: FK_NEIGHBOR_LISTS_AUTO (0), _HALF (1) or _FULL (2)",
                 config->neighbor_lists);
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (config->neighbor_lists == FK_NEIGHBOR_LISTS_HALF && !fk__accum_allows_newton(accum)) {
        snprintf(reason, reason_size,
                 "half neighbour lists need an accumulator whose partial sums may be merged "
                 "(float, double, fixed64), not %s: use full lists",
                 accum->info.name);
        return FK_ERR_UNSUPPORTED;
    }
    return fk__cell_grid_supports(owner, kernel, config, physics, reason, reason_size);
}

/* Half or full lists (fk_neighbor_lists). Automatic: half lists where the accumulator allows them,
 * except on GPUs and in the lane form. Measured on an NVIDIA H200 (ljc_constant float, density 0.8,
 * rc 2.5, skin 0.3): full lists 0.030 ms per evaluation at N = 65,536 and 0.52 ms at 1,048,576,
 * half lists 0.16 and 3.2 ms, at every work-group size from 32 to 256: the j-side terms each pair
 * stores at its place in the list and the gather that reads them back through the mirrors are
 * scattered accesses, which cost the GPU more than the pair arithmetic they save
 * (results/2026-11-25_nvidia-h200/ neighbors_forms). On CPUs the arithmetic is the cost, and
 * the scalar walk's half lists halve it; the lane form takes full lists: on POCL 3.1 (2 EPYC cores,
 * AVX-512, lj float, N = 16,384, density 0.8, periodic) 1.6-1.9 ms per evaluation with full lists
 * in lanes, 2.0-5.4 ms with half lists in lanes (the j-sides' scattered gather pass), 2.8-4.1 ms
 * for the scalar half lists. */
static int use_half_lists(const fk_device_info *device, const fk_accum_desc *accum,
                          const fk_eval_config *config, int lanes)
{
    switch (config->neighbor_lists) {
    case FK_NEIGHBOR_LISTS_HALF:
        return 1; /* neighbors_supports has refused the accumulators that cannot */
    case FK_NEIGHBOR_LISTS_FULL:
        return 0;
    default:
        return fk__accum_allows_newton(accum) && device->type != FK_DEVICE_GPU && !lanes;
    }
}

/* The lane form (cl/neighbors.cl with FK_LANES): a particle's partners in the lanes of vectors, on
 * CPUs, where POCL runs the scalar walk one pair at a time. fk_eval_config.lanes: -1 off; 0
 * automatic: on CPUs, at the device's native float vector width, in a periodic box, where the
 * force law and the accumulator have lane forms (lj and ljc_constant; float, double, narumi and,
 * with fp64, fixed64) and not in reproducible mode (correctly rounded operations, one term at a
 * time); 8 or 16 asks for that width wherever the forms exist (GPUs included, for testing).
 * Measured on POCL 3.1 (2 EPYC cores, AVX-512; lj float, density 0.8; bench's lattice, ms per
 * evaluation, ranges of interleaved runs): periodic, lanes (full lists) 1.55-1.78 against the
 * scalar half lists' 2.56-3.07 at N = 16,384 and 0.44-1.06 against 0.65-1.13 at 4,096; open
 * boundaries (no minimum image, fewer pairs at the surface), 1.24-2.09 against 1.33-2.24 at
 * 16,384 and 0.60-0.88 against 0.60-0.66 at 4,096: no gain, so automatic lanes are for periodic
 * boxes (the MD workload); `forcekit tune --algorithm neighbors` measures both forms. */
static fk_status choose_lanes(fk__eval_state *eval, const fk_tuning_entry *tuned, int *lanes)
{
    fk_context *context = eval->context;
    const fk_eval_config *config = &eval->config;
    const int asked = config->lanes;
    *lanes = 0;
    if (asked < 0)
        return FK_OK;
    const int possible =
        fk__registry_has_list_lanes(eval->kernel, eval->accum, context->info.fp64) &&
        !config->reproducible;
    const int width = fk__device_lane_width(context);
    if (asked == 0) {
        /* An explicit partner unrolling asks for the scalar walk's shape. A tuning entry from a
         * search that measured the lane form says which won (lanes -1: an entry from before the
         * tuner searched it, which decides nothing here). */
        if (possible && context->info.type == FK_DEVICE_CPU && width > 0 && !config->unroll_j &&
            config->j_splits <= 1 && (eval->plan.physics.periodic || (tuned && tuned->lanes > 0)))
            *lanes = tuned && tuned->lanes > 0 && tuned->lanes <= width ? tuned->lanes
                     : tuned && tuned->lanes == 0                       ? 0
                                                                        : width;
        return FK_OK;
    }
    if (!possible)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "neighbour lists in lanes: kernel '%s' with accumulator '%s'%s has no lane "
                        "form (lj and ljc_constant with float, double, narumi, fixed64); lanes -1 "
                        "or 0 run the scalar walk",
                        eval->kernel->info.name, eval->accum->info.name,
                        config->reproducible ? " in reproducible mode" : "");
    const fk_status wide = fk__lanes_check_width(context, asked);
    if (wide == FK_OK)
        *lanes = asked;
    return wide;
}

/* Work-items per particle (cl/neighbors.cl FK_NB_SPLIT), fk_eval_config.j_splits for this loop:
 * 1, 2, 4 or 8 sharing one particle's list, full lists and the scalar walk only (half lists store
 * each pair's j-side from the one work-item that computed it; the lane form's vectors are its
 * split). 0: a tuning entry's, else the built-in (builtin_split) where the work-group size allows
 * it. */
static fk_status choose_split(fk__eval_state *eval, struct fk__neighbors *state,
                              const fk_tuning_entry *tuned)
{
    const int asked = eval->config.j_splits;
    state->split = 1;
    if (asked == 0) {
        const int wanted =
            tuned && tuned->j_splits > 0 ? tuned->j_splits : builtin_split(&eval->context->info);
        if (wanted > 1 && !state->half && !state->lanes && state->group % wanted == 0)
            state->split = wanted;
        return FK_OK;
    }
    if (asked != 1 && asked != 2 && asked != 4 && asked != 8)
        return fk__fail(eval->context, FK_ERR_INVALID_ARGUMENT,
                        "neighbors: j_splits %d, the work-items sharing a particle's list: 1, 2, 4 "
                        "or 8",
                        asked);
    if (asked > 1 && (state->half || state->lanes))
        return fk__fail(eval->context, FK_ERR_INVALID_ARGUMENT,
                        "neighbors: j_splits %d shares a particle's list among work-items, which "
                        "only full lists in the scalar walk do (%s); use lists full and lanes -1",
                        asked, state->half ? "these are half lists" : "this is the lane form");
    if (state->group % asked)
        return fk__fail(eval->context, FK_ERR_INVALID_ARGUMENT,
                        "neighbors: j_splits %d does not divide the work-group size %d", asked,
                        state->group);
    state->split = asked;
    return FK_OK;
}

static fk_status build_pair_program(fk__eval_state *eval, const struct fk__neighbors *state,
                                    const fk_program_request *request, const char *accum,
                                    cl_program *program, fk_program_result *built)
{
    fk_program_request own = *request;
    own.file = "neighbors.cl";
    own.accum = accum;
    own.unroll_i = 1;
    own.unroll_j = state->unroll;
    own.lanes = state->lanes;
    own.local_tiling = 0;
    own.work_group_size = state->group;
    char options[640];
    snprintf(options, sizeof options, "%s -D FK_NEIGHBORS_HALF=%d -D FK_NB_SPLIT=%d",
             request->extra_options ? request->extra_options : "", state->half, state->split);
    own.extra_options = options;
    fk_status status = fk__program_build(eval->context, &own, built);
    if (status == FK_OK)
        *program = built->program;
    return status;
}

/* The pass's kernels of one pair program, checked against the work-group size. */
static fk_status pair_kernels(fk__eval_state *eval, const struct fk__neighbors *state,
                              cl_program program, cl_kernel *pairs, cl_kernel *gather)
{
    fk_context *context = eval->context;
    const char *pairs_name = state->half ? "fk_neighbors_half" : "fk_neighbors_full";
    fk_status status = fk__create_kernel(context, program, pairs_name, pairs);
    if (status == FK_OK && state->half)
        status = fk__create_kernel(context, program, "fk_neighbors_gather", gather);
    if (status == FK_OK)
        status = fk__variant_fit_kernel(eval, *pairs, state->group, owner, pairs_name);
    if (status == FK_OK && state->half)
        status = fk__variant_fit_kernel(eval, *gather, state->group, owner, "fk_neighbors_gather");
    return status;
}

/* The list build's walk (cl/neighbors_build.cl): per item (fk_neighbors_count, _fill), four
 * placeholders of a cell per work-item, or tiled through local memory (fk_neighbors_*_tiled), a
 * work-group per cell and one placeholder per work-item. Both build the same lists entry for
 * entry. The per-item walk is a chain of dependent global loads on a few work-items per cell: on
 * a GPU with too few cells to fill it, latency is all it measures (an H200 at N = 4,096: count
 * and fill 250 and 310 us, most of a rebuild; tiled 29 and 71 us). With enough cells the tiled
 * walk's idle work-items (a cell holds a third of a group) cost more than the chains (N =
 * 1,048,576: a step 1.13 ms tiled, 0.98 per item). So on GPUs the tiled walk while the per-item
 * walk would have fewer work-items than the device holds in flight (2,048 per compute unit,
 * NVIDIA's and AMD's figure); on CPUs always per item (POCL runs it fastest). Decided at each
 * build, from that build's grid. FORCEKIT_NEIGHBOR_WALK=tiled or items forces one (the tests
 * compare them; measurements). */
enum { WALK_AUTO = 0, WALK_TILED, WALK_ITEMS, IN_FLIGHT_PER_UNIT = 2048 };

static int walk_mode(void)
{
    const char *forced = getenv("FORCEKIT_NEIGHBOR_WALK");
    if (forced && strcmp(forced, "tiled") == 0)
        return WALK_TILED;
    if (forced && strcmp(forced, "items") == 0)
        return WALK_ITEMS;
    return WALK_AUTO;
}

static int use_tiled_walk(const fk_device_info *device, int mode, size_t item_walkers)
{
    if (mode != WALK_AUTO)
        return mode == WALK_TILED;
    return device->type == FK_DEVICE_GPU &&
           item_walkers < (size_t)device->compute_units * IN_FLIGHT_PER_UNIT;
}

/* One walk or two (cl/neighbors_build.cl). Two walks (count, then fill at the counted offsets)
 * walk every particle's candidates twice; one walk counts and stores each particle's partners into
 * a scratch row of `row` slots, and a compaction copies the rows to the counted offsets: the same
 * lists. Measured on an NVIDIA H200 (LJ fluid, density 0.8, rc 2.5, skin 0.3, full lists, float,
 * lists rebuilt every ~8 steps): the count walk took 0.18 / 0.60 / 1.82 ms and the fill 0.20 /
 * 0.66 / 2.11 ms at N = 65,536 / 262,144 / 1,048,576, a third of the step at each N
 * (results/2026-11-28_nvidia-h200/steps). The rows' size is learnt: the first build walks
 * twice and sizes the rows from its mean count (mean + mean / 4 + 16); a row that overflows is
 * still counted, its build runs the fill walk instead, and the rows grow to the largest count
 * seen (+ 1/8 + 8). The scratch takes N x (row + 1) ints, where the device allows that (at most an
 * eighth of its memory, one allocation); else two walks. FORCEKIT_NEIGHBOR_ROW=0 forces two walks
 * and =K one walk with rows of K from the first build (the tests; measurements). */
enum { ROW_AUTO = -1, ROW_OFF = 0, ROW_FORCED = 1 };

/* Whether the one walk stores every candidate, not only the partners (FK_NB_STORE_ALWAYS): on
 * CPUs, where the walk is scalar code and a store costs less than the mispredicted branch on the
 * distance test; not on GPUs, where every candidate's store would be memory traffic. */
static int store_always(const fk_device_info *device)
{
    return device->type != FK_DEVICE_GPU;
}

static int row_mode(int *row)
{
    *row = 0;
    const char *forced = getenv("FORCEKIT_NEIGHBOR_ROW");
    if (!forced || !*forced)
        return ROW_AUTO;
    const long value = strtol(forced, NULL, 10);
    if (value <= 0)
        return ROW_OFF;
    *row = value > 4096 ? 4096 : (int)value;
    return ROW_FORCED;
}

static fk_status neighbors_create(fk__eval_state *eval, const fk_program_request *request,
                                  void **out)
{
    fk_context *context = eval->context;
    const fk_eval_config *config = &eval->config;
    struct fk__neighbors *state = calloc(1, sizeof *state);
    if (!state)
        return FK_ERR_HOST_MEMORY;
    *out = state; /* the evaluation destroys it on any failure below */

    /* The shape: one particle per work-item, its partners UNROLL_J per unrolled step
     * (config.unroll_j), config.work_group_size work-items per group. The loop has no i-unrolling
     * and no tiling: config.unroll_i and local_tiling do not apply, and the variant reports what
     * runs (1, off), as the cell loop reports the j-unrolling it does not have. A tuning database
     * entry for this loop (`forcekit tune --algorithm neighbors`) replaces the built-in shape where
     * the configuration leaves it automatic. */
    const fk_device_info *device = &context->info;
    const int explicit_shape = config->work_group_size > 0 || config->unroll_j;
    const fk_tuning_entry *tuned =
        explicit_shape ? NULL
                       : fk__tuning_lookup_loop(context->tuning, FK_ALGORITHM_NEIGHBORS,
                                                eval->kernel->info.name, eval->accum->info.name,
                                                config->expected_count);
    int builtin_group, builtin_unroll;
    builtin_shape(device, &builtin_group, &builtin_unroll);
    size_t group = config->work_group_size > 0 ? (size_t)config->work_group_size
                   : tuned                     ? (size_t)tuned->work_group_size
                                               : (size_t)builtin_group;
    if (config->work_group_size <= 0) /* narrowed to fit (src/core/programs/variant.c) */
        group = (size_t)fk__variant_capped_group(eval, (int)group);
    if (group > device->max_work_group_size)
        group = device->max_work_group_size;
    state->group = (int)group;
    state->unroll = config->unroll_j ? config->unroll_j : tuned ? tuned->unroll_j : builtin_unroll;
    fk_status lanes_status = choose_lanes(eval, tuned, &state->lanes);
    if (lanes_status != FK_OK)
        return lanes_status;
    if (state->lanes)
        state->unroll = 1; /* the lanes are the unrolling */
    state->half = use_half_lists(&context->info, eval->accum, config, state->lanes);
    fk_status split_status = choose_split(eval, state, tuned);
    if (split_status != FK_OK)
        return split_status;

    double grid_seconds = 0.0;
    int grid_from_cache = 1;
    fk_program_result built_lists = {0}, built = {0}, bound_built = {0};
    fk_status status =
        fk__cell_grid_create(eval, &state->grid, owner, &grid_seconds, &grid_from_cache);
    if (status == FK_OK) {
        /* The list build does not depend on the force law or accumulator: one program for every
         * evaluation. */
        char build_options[96];
        snprintf(build_options, sizeof build_options,
                 "-D FK_CELLS_AUX_WG=%d -D FK_NB_STORE_ALWAYS=%d", state->grid.aux_group,
                 store_always(&context->info));
        status = fk__program_build_file(context, "neighbors_build.cl", build_options, &built_lists);
        if (status == FK_OK)
            state->build_program = built_lists.program;
    }
    /* Every build kernel runs in groups of the grid's aux_group (launch below). The tiled walk's
     * kernels only where they may run (GPUs, or forced): a CPU device need not take their local
     * memory and barriers. */
    state->walk = walk_mode();
    state->row_mode = row_mode(&state->row);
    state->compact_lanes = context->info.type == FK_DEVICE_GPU ? 32 : 1;
    const int may_tile = use_tiled_walk(&context->info, state->walk, 0); /* the fewest walkers */
    const struct {
        const char *name;
        cl_kernel *kernel;
    } build_kernels[] = {
        {"fk_neighbors_count", &state->count},
        {"fk_neighbors_fill", &state->fill},
        {may_tile ? "fk_neighbors_count_tiled" : NULL, &state->count_tiled},
        {may_tile ? "fk_neighbors_fill_tiled" : NULL, &state->fill_tiled},
        {"fk_neighbors_count_store", &state->count_store},
        {may_tile ? "fk_neighbors_count_store_tiled" : NULL, &state->count_store_tiled},
        {"fk_neighbors_compact", &state->compact},
        {store_always(&context->info) ? "fk_neighbors_count_store_vec" : NULL,
         &state->count_store_vec},
        {"fk_neighbors_sort", &state->sort},
        {"fk_neighbors_scan_blocks", &state->scan_blocks},
        {"fk_neighbors_scan_top", &state->scan_top},
        {"fk_neighbors_scan_apply", &state->scan_apply},
    };
    for (size_t k = 0; k < sizeof build_kernels / sizeof build_kernels[0] && status == FK_OK; ++k) {
        if (!build_kernels[k].name)
            continue;
        status = fk__create_kernel(context, state->build_program, build_kernels[k].name,
                                   build_kernels[k].kernel);
        if (status == FK_OK)
            status =
                fk__check_work_group(context, *build_kernels[k].kernel,
                                     (size_t)state->grid.aux_group, owner, build_kernels[k].name);
    }
    if (status == FK_OK)
        status = build_pair_program(eval, state, request, eval->accum->info.name, &state->program,
                                    &built);
    if (status == FK_OK)
        status = pair_kernels(eval, state, state->program, &state->pairs, &state->gather);
    if (status == FK_OK && eval->accum->choose_parameters) {
        status =
            build_pair_program(eval, state, request, "bound", &state->bound_program, &bound_built);
        if (status == FK_OK)
            status = pair_kernels(eval, state, state->bound_program, &state->bound_pairs,
                                  &state->bound_gather);
    }
    if (status == FK_OK)
        status = fk__cell_grid_buffer(eval, owner, &state->stats, sizeof initial_stats,
                                      "list statistics");
    if (status != FK_OK)
        return status; /* fk_eval_destroy releases what was made */

    eval->variant.source = explicit_shape ? FK_VARIANT_EXPLICIT
                           : tuned        ? tuned->origin
                                          : FK_VARIANT_DEFAULT;
    eval->variant.tuned_count = tuned ? tuned->n : 0;
    eval->variant.build_seconds +=
        grid_seconds + built_lists.seconds + built.seconds + bound_built.seconds;
    eval->variant.program_from_cache = eval->variant.program_from_cache && grid_from_cache &&
                                       built_lists.from_cache && built.from_cache;
    fill_variant(eval, state);
    return FK_OK;
}

static void neighbors_destroy(void *opaque)
{
    struct fk__neighbors *state = opaque;
    if (!state)
        return;
    fk__cell_grid_release(&state->grid);
    FK__RELEASE_KERNELS(state->count, state->fill, state->count_tiled, state->fill_tiled,
                        state->count_store, state->count_store_tiled, state->compact, state->sort,
                        state->scan_blocks, state->scan_top, state->scan_apply, state->pairs,
                        state->gather, state->bound_pairs, state->bound_gather,
                        state->count_store_vec);
    FK__RELEASE_PROGRAMS(state->build_program, state->program, state->bound_program);
    FK__RELEASE_BUFFERS(state->counts, state->offsets, state->block_sums, state->list_a,
                        state->list_b, state->jterms, state->cursor, state->stats, state->scratch);
    free(state);
}

/* ---------------------------------------------------------------------------------------------- */
/* Building the lists */

/* *buffer holds at least `needed` elements of `size` bytes: a new one when it is too small or more
 * than twice too large. Grown to the count plus 1/16, so that a count that creeps up between
 * rebuilds does not reallocate every time; never below the count (nothing is ever dropped). */
static fk_status ensure_buffer(fk__eval_state *eval, cl_mem *buffer, size_t *capacity,
                               size_t needed, size_t size, const char *what)
{
    if (needed == 0)
        needed = 1; /* OpenCL has no empty buffers */
    if (*buffer && needed <= *capacity && needed >= *capacity / 2)
        return FK_OK;
    const size_t elements = needed + needed / 16;
    if (elements > SIZE_MAX / size) {
        *capacity = 0;
        return fk__fail(eval->context, FK_ERR_DEVICE_MEMORY, "%s: the %s need %zu x %zu bytes",
                        owner, what, elements, size);
    }
    fk_status status = fk__cell_grid_buffer(eval, owner, buffer, elements * size, what);
    *capacity = status == FK_OK ? elements : 0;
    return status;
}

static size_t round_up(size_t value, size_t multiple)
{
    return (value + multiple - 1) / multiple * multiple;
}

/* One launch of a build kernel, 1-D, in groups of `group` (the grid's aux_group); err and call
 * keep the first failure (later launches are skipped). */
static void launch(fk_context *context, cl_kernel kernel, size_t group, size_t items,
                   const char *name, cl_event *event, cl_int *err, const char **call)
{
    if (*err != CL_SUCCESS)
        return;
    const size_t global = round_up(items ? items : 1, group);
    *err = clEnqueueNDRangeKernel(context->queue, kernel, 1, NULL, &global, &group, 0, NULL, event);
    if (*err != CL_SUCCESS) {
        *event = NULL;
        *call = name;
    }
}

static uint64_t stat_u64(const cl_int *stats, int index)
{
    return (uint64_t)(uint32_t)stats[index] | ((uint64_t)(uint32_t)stats[index + 1] << 32);
}

/* Whether a buffer of `capacity` elements is one ensure_buffer would keep for `needed`. */
static int buffer_fits(cl_mem buffer, size_t capacity, size_t needed)
{
    if (needed == 0)
        needed = 1;
    return buffer && needed <= capacity && needed >= capacity / 2;
}

/* One walk for this build (*store) where rows are sized and their scratch fits the device. */
static fk_status choose_row(fk__eval_state *eval, struct fk__neighbors *state, int *store)
{
    *store = 0;
    if (state->row_mode == ROW_OFF || state->row <= 0)
        return FK_OK;
    const fk_device_info *device = &eval->context->info;
    const size_t n = eval->count, stride = (size_t)state->row + 1; /* a spare slot per row */
    const size_t slots = n * stride; /* indexed in 32 bits on the device */
    if (n > UINT32_MAX / stride || slots > SIZE_MAX / 2 / sizeof(cl_int) ||
        2 * slots * sizeof(cl_int) > device->max_allocation_bytes ||
        8 * slots * sizeof(cl_int) > device->global_memory_bytes)
        return FK_OK; /* two walks (ensure_buffer's margin: the factor 2 above) */
    fk_status status = ensure_buffer(eval, &state->scratch, &state->scratch_capacity, slots,
                                     sizeof(cl_int), "scratch rows");
    *store = status == FK_OK;
    return status;
}

/* The rows' size for the next build: from the first build's mean, or grown past an overflow. */
static void learn_row(struct fk__neighbors *state, size_t n, size_t total_a, int max_row)
{
    if (state->row_mode == ROW_OFF)
        return;
    size_t row = (size_t)state->row;
    if (max_row > 0)
        row = (size_t)max_row + (size_t)max_row / 8 + 8;
    else if (row == 0) {
        const size_t mean = n ? (total_a + n - 1) / n : 0;
        row = mean + mean / 4 + 16;
    }
    row = round_up(row, 4);
    state->row = row > 4096 ? 0 : (int)row; /* beyond: two walks */
}

/* The second half of a build, after the prefix sum: half lists' mirror cursors from 0, then the
 * fill walk (use_fill) or the compaction of the scratch rows, then half lists' sort of the
 * mirrors. events: three slots. */
static fk_status enqueue_second_half(fk__eval_state *eval, struct fk__neighbors *state,
                                     int use_fill, cl_kernel fill_kernel, size_t walkers,
                                     cl_event *events)
{
    fk_context *context = eval->context;
    const size_t n = eval->count, aux = (size_t)state->grid.aux_group;
    const cl_int n_int = (cl_int)n, half = state->half, row = state->row;
    const cl_int lanes = state->compact_lanes;
    const cl_uint capacity_a =
        (cl_uint)(state->a_capacity > UINT32_MAX ? UINT32_MAX : state->a_capacity);
    const cl_uint capacity_b =
        (cl_uint)(state->b_capacity > UINT32_MAX ? UINT32_MAX : state->b_capacity);
    fk_status status =
        use_fill
            ? FK__SET_ARGS(context, fill_kernel, "fk_neighbors_fill", 9, FK__ARG(state->offsets),
                           FK__ARG(state->list_a), FK__ARG(state->list_b), FK__ARG(state->cursor))
            : FK__SET_ARGS(context, state->compact, "fk_neighbors_compact", 0, FK__ARG(n_int),
                           FK__ARG(half), FK__ARG(row), FK__ARG(lanes), FK__ARG(state->counts),
                           FK__ARG(state->scratch), FK__ARG(state->offsets), FK__ARG(state->list_a),
                           FK__ARG(capacity_a), FK__ARG(state->list_b), FK__ARG(capacity_b),
                           FK__ARG(state->cursor));
    if (status == FK_OK && state->half)
        status = FK__SET_ARGS(context, state->sort, "fk_neighbors_sort", 0, FK__ARG(n_int),
                              FK__ARG(state->offsets), FK__ARG(state->list_b),
                              FK__ARG(state->cursor), FK__ARG(state->stats));
    if (status != FK_OK)
        return status;
    const char *call = NULL;
    cl_int err = CL_SUCCESS;
    if (state->half) {
        const cl_int zero = 0;
        call = "clEnqueueFillBuffer (neighbour lists: mirror cursors)";
        err = fk__enqueue_fill(context, state->cursor, &zero, sizeof zero, n * sizeof(cl_int), 0,
                               NULL, &events[0]);
    }
    if (use_fill)
        launch(context, fill_kernel, aux, walkers, "clEnqueueNDRangeKernel (fk_neighbors_fill)",
               &events[1], &err, &call);
    else
        launch(context, state->compact, aux, n * (size_t)lanes,
               "clEnqueueNDRangeKernel (fk_neighbors_compact)", &events[1], &err, &call);
    if (state->half)
        launch(context, state->sort, aux, n, "clEnqueueNDRangeKernel (fk_neighbors_sort)",
               &events[2], &err, &call);
    return err == CL_SUCCESS ? FK_OK : fk__cl_fail(context, call, err);
}

/* The walks of one build: the kernels that count (and, in one walk, store) and fill the
 * partners, and their work-items. */
typedef struct walk_plan {
    cl_kernel count_kernel, fill_kernel;
    size_t count_walkers, walkers;
    int store; /* one walk: the count stores the partners in scratch rows */
} walk_plan;

/* Chooses the walks of this build (tiled or per item, one walk or two, vectors on CPUs) and sets
 * the arguments of the walks and the prefix sum over `blocks` scan blocks. */
static fk_status prepare_walks(fk__eval_state *eval, struct fk__neighbors *state, size_t blocks,
                               walk_plan *plan)
{
    fk_context *context = eval->context;
    const fk__cell_grid *grid = &state->grid;
    const size_t n = eval->count;
    const size_t aux = (size_t)state->grid.aux_group;
    const double radius = grid->min_side;
    float radius2 = (float)(radius * radius);
    if ((double)radius2 < radius * radius) /* round up: a pair at R must not be lost to rounding */
        radius2 = nextafterf(radius2, INFINITY);
    const float *physics = eval->physics_values;
    const cl_float4 box = {
        {physics[FK_PHYS_BOX], physics[FK_PHYS_BOX + 1], physics[FK_PHYS_BOX + 2], 0.0f}};
    const cl_float4 inv_box = {{physics[FK_PHYS_INV_BOX], physics[FK_PHYS_INV_BOX + 1],
                                physics[FK_PHYS_INV_BOX + 2], 0.0f}};
    const cl_int4 layout = {{grid->grid[0], grid->grid[1], grid->grid[2], grid->periodic}};
    const cl_int capacity = grid->capacity, half = state->half;
    const cl_int n_int = (cl_int)n, block_count = (cl_int)blocks;
    /* The walk's work-items: FK_NB_WALK_I (cl/neighbors_build.cl) placeholders of a cell each;
     * tiled, a group of aux per block of aux placeholders of a cell, one each. */
    const size_t item_walkers = grid->cells * (((size_t)grid->capacity + WALK_I - 1) / WALK_I);
    const int tiled =
        state->count_tiled && use_tiled_walk(&context->info, state->walk, item_walkers);
    const size_t walkers =
        tiled ? grid->cells * (((size_t)grid->capacity + aux - 1) / aux) * aux : item_walkers;
    /* One walk where the scratch rows may be had (choose_row), else two. */
    int store = 0;
    fk_status status = choose_row(eval, state, &store);
    if (status != FK_OK)
        return status;
    const cl_int row = state->row;
    /* On CPUs the one walk per item runs in vectors of WALK_V placeholders (FK_NB_WALK_V). */
    const int vec = store && !tiled && state->count_store_vec;
    cl_kernel count_kernel = vec     ? state->count_store_vec
                             : store ? (tiled ? state->count_store_tiled : state->count_store)
                                     : (tiled ? state->count_tiled : state->count);
    const size_t count_walkers =
        vec ? grid->cells * (((size_t)grid->capacity + WALK_V - 1) / WALK_V) : walkers;
    cl_kernel fill_kernel = tiled ? state->fill_tiled : state->fill;
    /* The walks take the same first arguments: the grid and the radius. */
    for (int k = 0; k < 2 && status == FK_OK; ++k)
        status = FK__SET_ARGS(context, k ? fill_kernel : count_kernel,
                              k ? "fk_neighbors_fill" : "fk_neighbors_count", 0, FK__ARG(half),
                              FK__ARG(capacity), FK__ARG(layout), FK__ARG(grid->count),
                              FK__ARG(grid->slots), FK__ARG(eval->body), FK__ARG(radius2),
                              FK__ARG(box), FK__ARG(inv_box));
    if (status == FK_OK)
        status =
            FK__SET_ARGS(context, count_kernel, "fk_neighbors_count", 9, FK__ARG(state->counts));
    if (status == FK_OK && store)
        status = FK__SET_ARGS(context, count_kernel, "fk_neighbors_count_store", 10, FK__ARG(row),
                              FK__ARG(state->scratch), FK__ARG(state->stats));
    if (status == FK_OK)
        status = FK__SET_ARGS(context, state->scan_blocks, "fk_neighbors_scan_blocks", 0,
                              FK__ARG(n_int), FK__ARG(state->counts), FK__ARG(state->block_sums));
    if (status == FK_OK)
        status = FK__SET_ARGS(context, state->scan_top, "fk_neighbors_scan_top", 0, FK__ARG(n_int),
                              FK__ARG(block_count), FK__ARG(state->block_sums),
                              FK__ARG(state->offsets), FK__ARG(state->stats));
    if (status == FK_OK)
        status = FK__SET_ARGS(context, state->scan_apply, "fk_neighbors_scan_apply", 0,
                              FK__ARG(n_int), FK__ARG(state->counts), FK__ARG(state->block_sums),
                              FK__ARG(state->offsets));
    plan->count_kernel = count_kernel;
    plan->fill_kernel = fill_kernel;
    plan->count_walkers = count_walkers;
    plan->walkers = walkers;
    plan->store = store;
    return status;
}

/* The second half of a build that the early copy did not complete: lists grown to what was
 * counted (total_a + padding entries, total_b mirrors, the pair terms and cursors of half lists),
 * then the copy (and the count again where the rows overflowed or there was no store) and the
 * statistics read again into stats. events: the second half's three. */
static fk_status refill_lists(fk__eval_state *eval, struct fk__neighbors *state,
                              const walk_plan *plan, int walk_again, uint64_t total_a,
                              uint64_t total_b, size_t padding, cl_event *events, cl_int stats[8],
                              double *seconds)
{
    fk_context *context = eval->context;
    const size_t n = eval->count;
    const size_t jterms_needed = state->half ? (size_t)total_a * eval->components : 0;
    fk_status status = ensure_buffer(eval, &state->list_a, &state->a_capacity,
                                     (size_t)total_a + padding, sizeof(cl_int), "lists");
    if (status == FK_OK)
        status = ensure_buffer(eval, &state->list_b, &state->b_capacity, (size_t)total_b,
                               sizeof(cl_int), "mirrors");
    if (status == FK_OK && state->half)
        status = ensure_buffer(eval, &state->jterms, &state->jterm_capacity, jterms_needed,
                               sizeof(cl_float), "pair terms");
    /* Half lists: the mirrors each particle has received, from 0 (the atomic slots). */
    if (status == FK_OK)
        status = ensure_buffer(eval, &state->cursor, &state->cursor_capacity, n, sizeof(cl_int),
                               "mirror cursors");
    if (status != FK_OK)
        return status;
    /* The statistics' missing-mirror count starts again from 0 (an early sort may have
     * counted the mirrors the full lists could not take). */
    const cl_int zero = 0;
    const char *call = "clEnqueueWriteBuffer (neighbour lists: statistics)";
    cl_int err =
        clEnqueueWriteBuffer(context->queue, state->stats, CL_FALSE, STAT_MISSING * sizeof(cl_int),
                             sizeof zero, &zero, 0, NULL, NULL);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, call, err);
    status = enqueue_second_half(eval, state, walk_again, plan->fill_kernel, plan->walkers, events);
    if (status != FK_OK) {
        clFinish(context->queue);
        fk__collect_events(events, 3, NULL);
        return status;
    }
    call = "clEnqueueReadBuffer (neighbour lists: statistics)";
    err = clEnqueueReadBuffer(context->queue, state->stats, CL_TRUE, 0, 8 * sizeof *stats, stats, 0,
                              NULL, NULL);
    if (err != CL_SUCCESS) {
        clFinish(context->queue);
        fk__collect_events(events, 3, NULL);
        return fk__cl_fail(context, call, err);
    }
    fk__collect_events(events, 3, seconds);
    return FK_OK;
}

/* The lists of the grid just built: count, prefix sum, allocate what was counted, fill (half lists:
 * the mirrors scattered too), and for half lists sort each particle's mirrors. */
static fk_status build_lists(fk__eval_state *eval, struct fk__neighbors *state)
{
    fk_context *context = eval->context;
    const size_t n = eval->count;
    const size_t aux = (size_t)state->grid.aux_group, scan_block = aux * SCAN_ITEMS;
    const size_t blocks = (n + scan_block - 1) / scan_block;
    state->built = 0;
    fk_status status = ensure_buffer(eval, &state->counts, &state->counts_capacity, n,
                                     sizeof(cl_int2), "partner counts");
    if (status == FK_OK)
        status = ensure_buffer(eval, &state->offsets, &state->offsets_capacity, n + 1,
                               sizeof(cl_uint2), "list offsets");
    if (status == FK_OK)
        status = ensure_buffer(eval, &state->block_sums, &state->block_capacity, blocks,
                               sizeof(cl_ulong2), "prefix-sum blocks");
    if (status != FK_OK)
        return status;

    walk_plan plan;
    status = prepare_walks(eval, state, blocks, &plan);
    if (status != FK_OK)
        return status;
    const int store = plan.store;
    cl_kernel count_kernel = plan.count_kernel, fill_kernel = plan.fill_kernel;
    const size_t count_walkers = plan.count_walkers, walkers = plan.walkers;

    /* Count (one walk: and store) and prefix sum; the totals come back with the statistics. One
     * walk with lists from an earlier build: the copy into them (and the mirrors' sort) goes to
     * the queue before the totals are read, on the lists as they are allocated (the compaction
     * drops what does not fit), so that a rebuild waits for the device once; the rare build whose
     * lists outgrow them, or whose rows overflow, does its second half again below. */
    const int early =
        store && state->list_a && state->list_b && state->cursor && (!state->half || state->jterms);
    cl_event events[12] = {NULL};
    const char *call = "clEnqueueWriteBuffer (neighbour lists: statistics)";
    cl_int err = clEnqueueWriteBuffer(context->queue, state->stats, CL_FALSE, 0,
                                      sizeof initial_stats, initial_stats, 0, NULL, &events[0]);
    launch(context, count_kernel, aux, count_walkers, "clEnqueueNDRangeKernel (fk_neighbors_count)",
           &events[1], &err, &call);
    launch(context, state->scan_blocks, aux, blocks * aux,
           "clEnqueueNDRangeKernel (fk_neighbors_scan_blocks)", &events[2], &err, &call);
    launch(context, state->scan_top, aux, aux, "clEnqueueNDRangeKernel (fk_neighbors_scan_top)",
           &events[3], &err, &call);
    launch(context, state->scan_apply, aux, blocks * aux,
           "clEnqueueNDRangeKernel (fk_neighbors_scan_apply)", &events[4], &err, &call);
    cl_int stats[8];
    if (early && err == CL_SUCCESS) {
        status = enqueue_second_half(eval, state, 0, fill_kernel, walkers, events + 5);
        if (status != FK_OK) {
            clFinish(context->queue);
            fk__collect_events(events, 8, NULL);
            return status;
        }
    }
    if (err == CL_SUCCESS) {
        call = "clEnqueueReadBuffer (neighbour lists: statistics)";
        err = clEnqueueReadBuffer(context->queue, state->stats, CL_TRUE, 0, sizeof stats, stats, 0,
                                  NULL, NULL);
    }
    double seconds = 0.0;
    if (err != CL_SUCCESS) {
        clFinish(context->queue); /* nothing of this build may still run when the caller retries */
        fk__collect_events(events, 8, NULL);
        return fk__cl_fail(context, call, err);
    }
    fk__collect_events(events, 8, &seconds);
    const uint64_t total_a = stat_u64(stats, STAT_TOTAL_A), total_b = stat_u64(stats, STAT_TOTAL_B);
    if (total_a > INT_MAX || total_b > INT_MAX)
        return fk__fail(context, FK_ERR_DEVICE_MEMORY,
                        "%s: %llu pairs within cutoff + skin exceed the lists' 2^31 entries; use "
                        "the cells algorithm or a smaller skin",
                        owner, (unsigned long long)(total_a + total_b));
    const int overflow = store && stats[STAT_MAX_ROW] > 0;

    /* The lists hold exactly what was counted (plus the growth margin of ensure_buffer). The lane
     * form reads whole vectors of FK_LANES entries and may read up to FK_LANES entries past the
     * last list (masked, cl/neighbors.cl): that many more, zeroed below (valid particle indices).
     */
    const size_t padding = (size_t)state->lanes;
    const size_t jterms_needed = state->half ? (size_t)total_a * eval->components : 0;
    const int done =
        early && !overflow &&
        buffer_fits(state->list_a, state->a_capacity, (size_t)total_a + padding) &&
        buffer_fits(state->list_b, state->b_capacity, (size_t)total_b) &&
        (!state->half || buffer_fits(state->jterms, state->jterm_capacity, jterms_needed)) &&
        buffer_fits(state->cursor, state->cursor_capacity, n);
    if (!done) {
        status = refill_lists(eval, state, &plan, !store || overflow, total_a, total_b, padding,
                              events + 5, stats, &seconds);
        if (status != FK_OK)
            return status;
    }
    if (stats[STAT_MISSING] != 0)
        return fk__fail(context, FK_ERR_OPENCL,
                        "%s: %d particles did not receive the mirrors of the lower partners they "
                        "counted (the device computed a pair's distance differently for its two "
                        "particles)",
                        owner, stats[STAT_MISSING]);
    if (padding) {
        const cl_int zero = 0;
        err = fk__enqueue_fill_at(context, state->list_a, &zero, sizeof zero,
                                  (size_t)total_a * sizeof(cl_int), padding * sizeof(cl_int), 0,
                                  NULL, NULL);
        if (err != CL_SUCCESS)
            return fk__cl_fail(context, "clEnqueueFillBuffer (neighbour lists: padding)", err);
    }
    learn_row(state, n, (size_t)total_a, overflow ? stats[STAT_MAX_ROW] : 0);
    state->entries_a = (size_t)total_a;
    state->list_seconds = seconds;
    state->built = n;
    return FK_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Evaluation */

/* After every upload: the grid's check on the device; when the grid is rebuilt (new particles, or
 * some particle moved more than skin / 2), the lists are rebuilt from the same positions. */
static fk_status neighbors_prepare(fk__eval_state *eval, void *opaque)
{
    struct fk__neighbors *state = opaque;
    int rebuilt = 0;
    fk_status status = fk__cell_grid_update(eval, &state->grid, &rebuilt);
    if (status == FK_OK && (rebuilt || state->built != eval->count))
        status = build_lists(eval, state);
    if (status == FK_OK && !state->grid.current)
        status = fk__fail(eval->context, FK_ERR_STATE, "neighbour lists were not built");
    if (status != FK_OK && !eval->positions_refused) {
        /* Lists must come from the positions the grid's check measures displacements from: the
         * next upload rebuilds both. (A refused update left both as they were.) */
        state->built = 0;
        state->grid.built = 0;
        state->grid.current = 0;
    }
    fill_variant(eval, state);
    return status;
}

static fk_status neighbors_enqueue(fk__eval_state *eval, void *opaque, fk__pass pass,
                                   cl_event *first, cl_event *last)
{
    fk_context *context = eval->context;
    struct fk__neighbors *state = opaque;
    *first = *last = NULL;
    if (!state->grid.current || state->built != eval->count)
        return fk__fail(context, FK_ERR_STATE, "compute: the neighbour lists are not up to date");
    /* The bound pre-pass is the same loop compiled with the `bound` accumulator. */
    cl_kernel pairs = pass == FK__PASS_BOUND ? state->bound_pairs : state->pairs;
    cl_kernel gather = pass == FK__PASS_BOUND ? state->bound_gather : state->gather;
    /* A share (full lists only, src/core/eval/share.c): its particles [first, end), end as the
     * kernel's bound. */
    size_t first_i = 0, end_i = eval->count;
    if (fk__share_applies(eval, pass)) {
        fk__share_units(eval, eval->count, &first_i, &end_i);
        eval->share_first = first_i;
        eval->share_end = end_i;
        eval->share_range = 1;
    }
    const cl_int n = (cl_int)end_i;
    const cl_float4 acc_param = fk__eval_acc_param(eval);
    fk_status status;
    if (state->half) {
        status = FK__SET_ARGS(context, pairs, "fk_neighbors_half", 0, FK__ARG(n),
                              FK__ARG(state->offsets), FK__ARG(state->list_a), FK__ARG(eval->body),
                              FK__ARG(eval->body_aux), FK__ARG(eval->table), FK__ARG(eval->physics),
                              FK__ARG(acc_param), FK__ARG(state->jterms), FK__ARG(eval->result));
        if (status == FK_OK)
            status =
                FK__SET_ARGS(context, gather, "fk_neighbors_gather", 0, FK__ARG(n),
                             FK__ARG(state->offsets), FK__ARG(state->list_b),
                             FK__ARG(state->jterms), FK__ARG(acc_param), FK__ARG(eval->result));
    } else {
        status = FK__SET_ARGS(context, pairs, "fk_neighbors_full", 0, FK__ARG(n),
                              FK__ARG(state->offsets), FK__ARG(state->list_a), FK__ARG(eval->body),
                              FK__ARG(eval->body_aux), FK__ARG(eval->table), FK__ARG(eval->physics),
                              FK__ARG(acc_param), FK__ARG(eval->result));
    }
    if (status == FK_OK && state->lanes) {
        /* The lane form's arguments after the scalar walk's: one_type (one pair-table entry for
         * every pair: no column loads), and for half lists the entries of the lists A, the stride
         * of the j-sides' planes. */
        const cl_int one_type = eval->law.pairs.types <= 1;
        const cl_int stride = (cl_int)state->entries_a;
        if (state->half) {
            status = FK__SET_ARGS(context, pairs, "fk_neighbors_half", 10, FK__ARG(one_type),
                                  FK__ARG(stride));
            if (status == FK_OK)
                status = FK__SET_ARGS(context, gather, "fk_neighbors_gather", 6, FK__ARG(stride));
        } else {
            status = FK__SET_ARGS(context, pairs, "fk_neighbors_full", 9, FK__ARG(one_type));
        }
    }
    if (status != FK_OK)
        return status;
    const size_t group = (size_t)state->group, split = (size_t)state->split;
    const size_t global = round_up((end_i > first_i ? end_i - first_i : 1) * split, group);
    const size_t offset = end_i > first_i ? first_i * split : 0;
    cl_int err =
        clEnqueueNDRangeKernel(context->queue, pairs, 1, &offset, &global, &group, 0, NULL, first);
    if (err != CL_SUCCESS) {
        *first = NULL;
        return fk__cl_fail(context,
                           state->half ? "clEnqueueNDRangeKernel (fk_neighbors_half)"
                                       : "clEnqueueNDRangeKernel (fk_neighbors_full)",
                           err);
    }
    if (!state->half)
        return FK_OK;
    err = clEnqueueNDRangeKernel(context->queue, gather, 1, NULL, &global, &group, 0, NULL, last);
    if (err != CL_SUCCESS) {
        *last = NULL;
        clFinish(context->queue); /* drain what was queued before the failure */
        clReleaseEvent(*first);
        *first = NULL;
        return fk__cl_fail(context, "clEnqueueNDRangeKernel (fk_neighbors_gather)", err);
    }
    return FK_OK;
}

static size_t neighbors_figures(const fk__eval_state *eval, const void *opaque,
                                fk__kernel_figures *figures, size_t capacity)
{
    const struct fk__neighbors *state = opaque;
    const fk__named_kernel kernels[] = {
        {state->pairs, state->half ? "fk_neighbors_half" : "fk_neighbors_full"},
        {state->gather, "fk_neighbors_gather"},
        {state->bound_pairs,
         state->half ? "fk_neighbors_half (bound pre-pass)" : "fk_neighbors_full (bound pre-pass)"},
        {state->bound_gather, "fk_neighbors_gather (bound pre-pass)"},
        {state->count, "fk_neighbors_count"},
        {state->fill, "fk_neighbors_fill"},
        {state->count_tiled, "fk_neighbors_count_tiled"},
        {state->fill_tiled, "fk_neighbors_fill_tiled"},
        {state->count_store, "fk_neighbors_count_store"},
        {state->count_store_tiled, "fk_neighbors_count_store_tiled"},
        {state->compact, "fk_neighbors_compact"},
        {state->count_store_vec, "fk_neighbors_count_store_vec"},
    };
    return fk__figures_of_kernels(eval->context, kernels, sizeof kernels / sizeof kernels[0],
                                  figures, capacity);
}

/* ---------------------------------------------------------------------------------------------- */
/* Tuning space: work-items per group (one particle each) and partners per unrolled step
 * (unroll 1xJ); no tiling, no split. */

static const int neighbor_unrolls[] = {1, 2, 4, 8};
/* Work-items per particle searched on GPUs (full lists): 0 is the built-in (builtin_split: 4). */
static const int neighbor_gpu_splits[] = {0, 1, 2, 8};
static const int neighbor_cpu_groups[] = {1, 4, 16, 64};
static const int neighbor_gpu_groups[] = {32, 64, 128, 256};

static size_t neighbors_tuning_space(const fk__tuning_query *query, fk__loop_shape **out)
{
    *out = NULL;
    const fk_device_info *device = &query->context->info;
    const fk_tune_config *pinned = query->pinned;
    const int gpu = device->type == FK_DEVICE_GPU;
    const int *groups = gpu ? neighbor_gpu_groups : neighbor_cpu_groups;
    const int group_count = 4;
    const int unroll_count = (int)(sizeof neighbor_unrolls / sizeof neighbor_unrolls[0]);
    if (pinned->local_tiling > 0 || (pinned->unroll_i && pinned->unroll_i != 1))
        return 0;
    /* The lane form at the device's width where it has one (query->lane_width, CPUs), its
     * partners per step the lanes (unroll 1x1), beside the scalar walk's shapes. */
    const int lanes = query->lane_width;
    const int split_count = gpu ? 4 : 1;
    fk__loop_shape *space =
        calloc((size_t)((unroll_count + 1) * group_count * split_count), sizeof *space);
    if (!space)
        return 0;
    size_t count = 0;
    for (int u = 0; u <= unroll_count; ++u)
        for (int sp = 0; sp < split_count; ++sp) {
            const int lane_shape = u == unroll_count;
            if (lane_shape ? lanes == 0 || pinned->lanes < 0 ||
                                 (pinned->lanes > 0 && pinned->lanes != lanes) ||
                                 (pinned->unroll_j && pinned->unroll_j != 1)
                           : pinned->lanes > 0 ||
                                 (pinned->unroll_j && pinned->unroll_j != neighbor_unrolls[u]))
                continue;
            const int split = gpu ? neighbor_gpu_splits[sp] : 0;
            const int effective_split = split ? split : builtin_split(device);
            if ((lane_shape && split != 0) ||
                (pinned->j_splits > 0 && effective_split != pinned->j_splits))
                continue;
            for (int g = 0; g < group_count; ++g) {
                if ((pinned->work_group_size && pinned->work_group_size != groups[g]) ||
                    (size_t)groups[g] > device->max_work_group_size)
                    continue;
                fk__loop_shape *s = &space[count++];
                s->unroll_i = 1;
                s->unroll_j = lane_shape ? 1 : neighbor_unrolls[u];
                s->work_group_size = groups[g];
                s->local_tiling = 0;
                s->j_splits = split;
                s->lanes = lane_shape ? lanes : 0;
                const int coordinate[6] = {0, u, g, 0, sp, lane_shape};
                memcpy(s->coordinate, coordinate, sizeof coordinate);
            }
        }
    if (count == 0) {
        free(space);
        return 0;
    }
    *out = space;
    return count;
}

static void neighbors_default_shape(const fk__tuning_query *query, fk__loop_shape *shape)
{
    memset(shape, 0, sizeof *shape);
    builtin_shape(&query->context->info, &shape->work_group_size, &shape->unroll_j);
    if ((size_t)shape->work_group_size > query->context->info.max_work_group_size)
        shape->work_group_size = (int)query->context->info.max_work_group_size;
    shape->unroll_i = 1;
    if (query->lane_width > 0 && query->pinned->lanes >= 0) { /* fk_eval_create's automatic form */
        shape->lanes = query->lane_width;
        shape->unroll_j = 1;
    }
}

/* The lists come from the grid's build: both are rebuilt at the next prepare. */
static void neighbors_invalidate(void *opaque)
{
    struct fk__neighbors *state = opaque;
    state->built = 0;
    fk__cell_grid_invalidate(&state->grid);
}

const fk__loop fk__loop_neighbors = {
    .name = "neighbors",
    .algorithm = FK_ALGORITHM_NEIGHBORS,
    .newton = FK__NEWTON_HALF_LISTS,
    .newton_refusal = "half neighbour lists write both particles of each pair (use "
                      "FK_NEIGHBOR_LISTS_FULL)",
    .share_unit = FK__SHARE_PARTICLES, /* full lists: a range of particles */
    .reach = FK__REACH_CUTOFF_SKIN,
    .accums = FK__ACCUMS_ALL, /* half lists only for those fk__accum_allows_newton */
    .double_single = 0,       /* the builds read float records */
    .automatic = FK__AUTO_SHORT_RANGE,
    .split_in_program = 1, /* FK_NB_SPLIT: work-items per particle */
    .list_lanes = 1,       /* partners in lanes, on CPUs */
    .supports = neighbors_supports,
    .create = neighbors_create,
    .prepare = neighbors_prepare,
    .enqueue = neighbors_enqueue,
    .figures = neighbors_figures,
    .destroy = neighbors_destroy,
    .tuning_space = neighbors_tuning_space,
    .default_shape = neighbors_default_shape,
    .invalidate = neighbors_invalidate,
};
