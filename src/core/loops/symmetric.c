/* The symmetric (Newton's third law) pair loop: cl/symmetric.cl evaluates each unordered pair once
 * in block pairs and merges the per-block results in a fixed order; see the comment there. This
 * file builds the program, chooses the variant, sizes the result slots and launches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loops/loop.h"
#include "core/tuning_db/db.h"

/* Device memory for the slots of one launch: 2 slots (i-side, j-side) of N x components packed
 * results per block distance. Distances beyond what fits go to further launches. */
#define FK_SYMMETRIC_SLOT_BUDGET ((size_t)1 << 30)

struct fk__symmetric {
    cl_program program;
    cl_kernel pair, edges, reduce; /* full block pairs, one-sided blocks, the merge */
    /* The bound pre-pass (fixed64) runs the all-pairs program with the `bound` accumulator: the
     * symmetric template has no bound form. all_pairs is the variant it was compiled for. */
    cl_program bound_program;
    cl_kernel bound_pairwise, bound_reduce;
    fk_variant all_pairs;
    size_t block;     /* particles per block: work-group size x UNROLL_I */
    size_t blocks;    /* nb for the current particles */
    size_t distances; /* nb / 2 + 1 */
    size_t batch;     /* distances per launch */
    size_t slot_bytes;
    cl_mem slots;
};

/* The accumulators whose merging of short partial sums (the j-side sums of each step) is
 * validated: float and double add, fixed64 adds integers. The compensated ones (ti, nitadori,
 * nitadori_large, narumi, composite) and ref are not offered: their error analysis assumes one
 * running sum per particle, and the symmetric loop merges many short sums. */
int fk__accum_allows_newton(const fk_accum_desc *accum)
{
    const char *name = accum->info.name;
    return strcmp(name, "float") == 0 || strcmp(name, "double") == 0 ||
           strcmp(name, "fixed64") == 0;
}

/* Built-in symmetric variants. CPU: the fastest on POCL 3.1 on an EPYC at N = 8,192 (4x1, of eight
 * variants from 1x1 to 8x2 with 64 work-items; results/2026-11-21_pocl-epyc-2core/suite).
 * GPU: the fastest of 16 variants for ga at N = 262,144 on an H200 (8x4 with 128 work-items:
 * 2.61e12 N^2-equivalent pairs/s against 2.40e12 for 4x4 and 2.02e12 for the all-pairs loop;
 * results/2026-11-21_nvidia-h200/perf/suite/symmetric_variants_ga_n262144.json). When the
 * tile and the j-sums outgrow the device's local memory (fixed64's sums are 16 bytes with their
 * overflow flag), the work-group is halved (symmetric_create). The all-pairs entries of the tuning
 * database do not apply (the loops differ); entries tuned for symmetric do
 * (`forcekit tune --algorithm symmetric`). */
static void default_variant(const fk_device_info *device, int *unroll_i, int *unroll_j, int *group)
{
    if (device->type == FK_DEVICE_GPU) {
        *unroll_i = 8;
        *unroll_j = 4;
        *group = 128;
    } else {
        *unroll_i = 4;
        *unroll_j = 1;
        *group = 64;
    }
}

/* POCL 3.1 (LLVM 15) computes wrong, run-to-run different fixed64 results with this kernel when a
 * step holds 16 or more pair evaluations per work-item (UNROLL_I x UNROLL_J >= 16: 4x4, 8x2, 8x4,
 * 8x8; seen only with two or more worker threads, always right with POCL_MAX_PTHREAD_COUNT=1;
 * float and double are right). tests/test_symmetric.c found it; until it is understood those
 * variants are refused there. */
static int known_miscompile(const fk__eval_state *eval, int unroll_i, int unroll_j)
{
    return strcmp(eval->accum->info.name, "fixed64") == 0 && unroll_i * unroll_j >= 16 &&
           strstr(eval->context->info.platform_name, "Portable Computing Language") != NULL;
}

static fk_status check_kernel_limits(fk__eval_state *eval, cl_kernel kernel, int group,
                                     const char *name)
{
    char shape[64];
    snprintf(shape, sizeof shape, "symmetric variant %dx%d", eval->variant.unroll_i,
             eval->variant.unroll_j);
    return fk__variant_fit_kernel(eval, kernel, group, shape, name);
}

/* Releases the program and its kernels (not the slots), so that another variant can be built. */
static void release_programs(struct fk__symmetric *state)
{
    FK__RELEASE_KERNELS(state->pair, state->edges, state->reduce);
    FK__RELEASE_PROGRAMS(state->program);
    state->pair = state->edges = state->reduce = NULL;
    state->program = NULL;
}

/* Builds the symmetric program for one variant, checks it against the device's limits and
 * reports it as the evaluation's variant. */
static fk_status build_variant(fk__eval_state *eval, struct fk__symmetric *state,
                               const fk_program_request *request, int unroll_i, int unroll_j,
                               int group, fk_variant_source source)
{
    fk_context *context = eval->context;
    state->block = (size_t)group * (size_t)unroll_i;

    fk_program_request own = *request;
    own.file = "symmetric.cl";
    own.unroll_i = unroll_i;
    own.unroll_j = unroll_j;
    own.work_group_size = group;
    own.local_tiling = 1;
    fk_program_result built;
    fk_status status = fk__program_build(context, &own, &built);
    if (status != FK_OK)
        return status;
    state->program = built.program;
    cl_int err = CL_SUCCESS;
    state->pair = clCreateKernel(state->program, "fk_symmetric", &err);
    if (err == CL_SUCCESS)
        state->edges = clCreateKernel(state->program, "fk_symmetric_edges", &err);
    if (err == CL_SUCCESS)
        state->reduce = clCreateKernel(state->program, "fk_symmetric_reduce", &err);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, "clCreateKernel (symmetric)", err);

    /* What runs is reported as the variant; the all-pairs variant is kept for the bound
     * pre-pass's program (state->all_pairs). */
    fk_variant *variant = &eval->variant;
    variant->unroll_i = unroll_i;
    variant->unroll_j = unroll_j;
    variant->work_group_size = group;
    variant->local_tiling = 1;
    variant->source = source;
    variant->tuned_count = 0;
    variant->program_from_cache = variant->program_from_cache && built.from_cache;
    variant->build_seconds += built.seconds;
    status = check_kernel_limits(eval, state->pair, group, "fk_symmetric");
    if (status == FK_OK)
        status = check_kernel_limits(eval, state->edges, group, "fk_symmetric_edges");
    return status;
}

static fk_status symmetric_supports(fk_context *context, const fk_kernel_desc *kernel,
                                    const fk_accum_desc *accum, const fk_eval_config *config,
                                    const fk__physics *physics, char *reason, size_t reason_size)
{
    (void)context, (void)kernel, (void)config, (void)physics;
    if (fk__accum_allows_newton(accum))
        return FK_OK;
    snprintf(reason, reason_size,
             "the symmetric algorithm supports the float, double and fixed64 accumulators, not %s "
             "(it merges many short partial sums per particle, which the compensated "
             "accumulators' error bounds do not cover); use --algorithm all-pairs",
             accum->info.name);
    return FK_ERR_UNSUPPORTED;
}

static void symmetric_destroy(void *opaque)
{
    struct fk__symmetric *state = opaque;
    if (!state)
        return;
    FK__RELEASE_BUFFERS(state->slots);
    release_programs(state);
    FK__RELEASE_KERNELS(state->bound_pairwise, state->bound_reduce);
    FK__RELEASE_PROGRAMS(state->bound_program);
    free(state);
}

/* request: the all-pairs program the evaluation would build (its variant is eval->variant on
 * entry); the symmetric program takes its force law, accumulator and switches. */
static fk_status symmetric_create(fk__eval_state *eval, const fk_program_request *request,
                                  void **out)
{
    fk_context *context = eval->context;
    const fk_eval_config *config = &eval->config;
    int unroll_i, unroll_j, group;
    fk_variant_source source = FK_VARIANT_DEFAULT;
    default_variant(&context->info, &unroll_i, &unroll_j, &group);
    /* Automatic unrolling takes the tuning database's symmetric entry (user, then shipped) for
     * this device, kernel, accumulator and N bucket; explicit values win. */
    const fk_tuning_entry *tuned =
        config->unroll_i || config->unroll_j
            ? NULL
            : fk__tuning_lookup_loop(context->tuning, FK_ALGORITHM_SYMMETRIC,
                                     eval->kernel->info.name, eval->accum->info.name,
                                     config->expected_count);
    if (tuned) {
        unroll_i = tuned->unroll_i;
        unroll_j = tuned->unroll_j;
        group = tuned->work_group_size;
        source = tuned->origin;
    }
    if (config->unroll_i || config->unroll_j) { /* the evaluation validated them */
        unroll_i = config->unroll_i;
        unroll_j = config->unroll_j;
        source = FK_VARIANT_EXPLICIT;
    }
    if (unroll_j > unroll_i) /* the j-slots of one step come from the i-block's width */
        unroll_j = unroll_i;
    if (config->work_group_size)
        group = config->work_group_size;
    else
        group = fk__variant_capped_group(eval,
                                         group); /* narrowed to fit (src/core/programs/variant.c) */
    if ((size_t)group > context->info.max_work_group_size)
        group = (int)context->info.max_work_group_size;
    if (known_miscompile(eval, unroll_i, unroll_j))
        return fk__fail(
            context, FK_ERR_UNSUPPORTED,
            "symmetric fixed64 variant %dx%d: POCL computes wrong results for it "
            "(UNROLL_I x UNROLL_J >= 16 with fixed64; see src/core/loops/symmetric.c); use "
            "a variant with I x J <= 8",
            unroll_i, unroll_j);

    struct fk__symmetric *state = calloc(1, sizeof *state);
    if (!state)
        return FK_ERR_HOST_MEMORY;
    *out = state; /* the evaluation destroys it on any failure below */
    state->all_pairs = eval->variant;
    fk_status status = FK_OK;
    if (eval->accum->choose_parameters) {
        fk_program_request bound = *request;
        bound.accum = "bound";
        fk_program_result built;
        status = fk__all_pairs_build(eval, &bound, &state->bound_program, &state->bound_pairwise,
                                     &state->bound_reduce, &built);
        if (status != FK_OK)
            return status;
    }
    /* A variant the device refuses (a wider accumulator, fixed64 with its flag beside the sum,
     * can outgrow the 48 KB of local memory NVIDIA allows a work-group; llvmpipe allows 32
     * work-items) is narrowed by fk_eval_create when its work-group size was automatic
     * (fk__variant_fit_kernel, eval->group_cap above). */
    status = build_variant(eval, state, request, unroll_i, unroll_j, group, source);
    if (status == FK_OK)
        eval->variant.tuned_count = tuned ? tuned->n : 0;
    return status;
}

static fk_status symmetric_prepare(fk__eval_state *eval, void *opaque)
{
    struct fk__symmetric *state = opaque;
    fk_context *context = eval->context;
    const size_t n = eval->count;
    const size_t blocks = (n + state->block - 1) / state->block;
    const size_t distances = blocks / 2 + 1;
    const size_t slot_pair = 2 * n * eval->components * 8; /* i-side and j-side of a distance */
    size_t budget = FK_SYMMETRIC_SLOT_BUDGET;
    if (budget > context->info.max_allocation_bytes)
        budget = context->info.max_allocation_bytes;
    if (budget > context->info.global_memory_bytes / 8)
        budget = context->info.global_memory_bytes / 8;
    size_t batch = budget / slot_pair;
    if (batch > distances)
        batch = distances;
    if (eval->config.j_splits > 0 && (size_t)eval->config.j_splits < batch)
        batch = (size_t)eval->config.j_splits; /* pinned: distances per launch */
    if (batch < 1)
        return fk__fail(context, FK_ERR_DEVICE_MEMORY,
                        "the symmetric algorithm needs %zu bytes of device memory for one block "
                        "distance at N = %zu; %s allows %zu",
                        slot_pair, n, context->info.name, budget);
    const size_t bytes = batch * slot_pair;
    if (state->slots && state->slot_bytes != bytes) {
        clReleaseMemObject(state->slots);
        state->slots = NULL;
    }
    if (!state->slots) {
        fk_status status = fk__eval_create_buffer(eval, &state->slots, CL_MEM_READ_WRITE, bytes,
                                                  NULL, "symmetric slots");
        if (status != FK_OK) {
            state->slot_bytes = 0;
            return status;
        }
        state->slot_bytes = bytes;
    }
    state->blocks = blocks;
    state->distances = distances;
    state->batch = batch;
    /* Work-groups sharing one i-block's pairs: one per distance. */
    eval->variant.j_splits = (int)distances;
    return FK_OK;
}

static fk_status symmetric_enqueue(fk__eval_state *eval, void *opaque, fk__pass pass,
                                   cl_event *first, cl_event *last)
{
    struct fk__symmetric *state = opaque;
    *first = *last = NULL;
    if (pass == FK__PASS_BOUND) {
        /* The all-pairs bound program, with the variant it was compiled for and the j-split of
         * the evaluation's upload (eval->j_chunk, eval->partial). */
        const int splits = (int)((eval->count + (size_t)eval->j_chunk - 1) / (size_t)eval->j_chunk);
        return fk__all_pairs_enqueue(eval, state->bound_pairwise, state->bound_reduce,
                                     &state->all_pairs, splits, 0, first, last);
    }
    fk_context *context = eval->context;
    const cl_int n = (cl_int)eval->count;
    const cl_int blocks = (cl_int)state->blocks;
    const cl_float4 acc_param = fk__eval_acc_param(eval);
    const size_t group = (size_t)eval->variant.work_group_size;
    const size_t reduce_group = 64;
    const size_t items = eval->count * eval->components;
    const size_t reduce_global = (items + reduce_group - 1) / reduce_group * reduce_group;

    cl_kernel pair_kernels[2] = {state->pair, state->edges};
    const char *names[2] = {"fk_symmetric", "fk_symmetric_edges"};
    fk_status status = FK_OK;
    for (int k = 0; k < 2 && status == FK_OK; ++k) /* argument 1, first_d, is set per launch */
        status = FK__SET_ARGS(context, pair_kernels[k], names[k], 0, FK__ARG(n), FK__ARG_SKIP,
                              FK__ARG(eval->body), FK__ARG(eval->body_aux), FK__ARG(eval->table),
                              FK__ARG(eval->physics), FK__ARG(acc_param), FK__ARG(state->slots));
    if (status == FK_OK)
        status = FK__SET_ARGS(context, state->reduce, "fk_symmetric_reduce", 0, FK__ARG(n),
                              FK__ARG(blocks));
    if (status == FK_OK)
        status = FK__SET_ARGS(context, state->reduce, "fk_symmetric_reduce", 5,
                              FK__ARG(state->slots), FK__ARG(eval->result));
    if (status != FK_OK)
        return status;

    cl_event start = NULL, end = NULL;
    cl_int err = CL_SUCCESS;
    for (size_t d = 0; d < state->distances && status == FK_OK; d += state->batch) {
        const cl_int first_d = (cl_int)d;
        const size_t left = state->distances - d;
        const cl_int count = (cl_int)(left < state->batch ? left : state->batch);
        const cl_int accumulate = d > 0;
        status = FK__SET_ARGS(context, state->pair, "fk_symmetric", 1, FK__ARG(first_d));
        if (status == FK_OK)
            status = FK__SET_ARGS(context, state->edges, "fk_symmetric_edges", 1, FK__ARG(first_d));
        if (status == FK_OK)
            status = FK__SET_ARGS(context, state->reduce, "fk_symmetric_reduce", 2,
                                  FK__ARG(first_d), FK__ARG(count), FK__ARG(accumulate));
        if (status != FK_OK)
            break;
        /* Both kernels cover the same grid of block pairs; each takes its own and writes its own
         * slots. */
        const size_t global[2] = {state->blocks * group, (size_t)count};
        const size_t local[2] = {group, 1};
        for (int k = 0; k < 2 && status == FK_OK; ++k) {
            cl_event event = NULL;
            err = clEnqueueNDRangeKernel(context->queue, pair_kernels[k], 2, NULL, global, local, 0,
                                         NULL, start ? NULL : &event);
            if (err != CL_SUCCESS)
                status = fk__cl_fail(context,
                                     k ? "clEnqueueNDRangeKernel (fk_symmetric_edges)"
                                       : "clEnqueueNDRangeKernel (fk_symmetric)",
                                     err);
            else if (!start)
                start = event;
        }
        if (status != FK_OK)
            break;
        if (end)
            clReleaseEvent(end);
        end = NULL;
        err = clEnqueueNDRangeKernel(context->queue, state->reduce, 1, NULL, &reduce_global,
                                     &reduce_group, 0, NULL, &end);
        if (err != CL_SUCCESS) {
            end = NULL;
            status = fk__cl_fail(context, "clEnqueueNDRangeKernel (fk_symmetric_reduce)", err);
        }
    }
    if (status == FK_OK) {
        *first = start;
        *last = end;
        return FK_OK;
    }
    clFinish(context->queue); /* drain what was queued before the failure */
    if (start)
        clReleaseEvent(start);
    if (end && end != start)
        clReleaseEvent(end);
    return status;
}

static size_t symmetric_figures(const fk__eval_state *eval, const void *opaque,
                                fk__kernel_figures *figures, size_t capacity)
{
    const struct fk__symmetric *state = opaque;
    const fk__named_kernel kernels[] = {
        {state->bound_pairwise, "fk_pairwise (bound pre-pass)"},
        {state->pair, "fk_symmetric"},
        {state->edges, "fk_symmetric_edges"},
        {state->reduce, "fk_symmetric_reduce"},
    };
    return fk__figures_of_kernels(eval->context, kernels, sizeof kernels / sizeof kernels[0],
                                  figures, capacity);
}

/* ---------------------------------------------------------------------------------------------- */
/* Tuning space: unroll IxJ with J <= I (the j-slots of a step come from the i-block), the
 * work-group sizes the all-pairs search tries, tiling always (the block pairs are staged through
 * local memory). j_splits (distances per launch) only when pinned: it bounds memory, not time. */

static const int symmetric_unrolls[] = {1, 2, 4, 8};
static const int symmetric_gpu_groups[] = {64, 128, 256, 512};
static const int symmetric_cpu_groups[] = {16, 32, 64, 128, 256};

static int pinned_or(int pinned, int value)
{
    return !pinned || pinned == value;
}

static size_t symmetric_tuning_space(const fk__tuning_query *query, fk__loop_shape **out)
{
    *out = NULL;
    const fk_device_info *device = &query->context->info;
    const fk_tune_config *pinned = query->pinned;
    const int gpu = device->type == FK_DEVICE_GPU;
    const int *groups = gpu ? symmetric_gpu_groups : symmetric_cpu_groups;
    const int group_count = gpu ? 4 : 5;
    if (pinned->local_tiling < 0 || pinned->lanes > 0)
        return 0;
    fk__loop_shape *space = calloc(4 * 4 * (size_t)group_count, sizeof *space);
    if (!space)
        return 0;
    size_t count = 0;
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b <= a; ++b)
            for (int g = 0; g < group_count; ++g) {
                if (!pinned_or(pinned->unroll_i, symmetric_unrolls[a]) ||
                    !pinned_or(pinned->unroll_j, symmetric_unrolls[b]) ||
                    !pinned_or(pinned->work_group_size, groups[g]) ||
                    (size_t)groups[g] > device->max_work_group_size)
                    continue;
                fk__loop_shape *s = &space[count++];
                s->unroll_i = symmetric_unrolls[a];
                s->unroll_j = symmetric_unrolls[b];
                s->work_group_size = groups[g];
                s->local_tiling = 1;
                s->j_splits = pinned->j_splits > 0 ? pinned->j_splits : 0;
                const int coordinate[6] = {a, b, g, 1, 0, 0};
                memcpy(s->coordinate, coordinate, sizeof coordinate);
            }
    if (count == 0) {
        free(space);
        return 0;
    }
    *out = space;
    return count;
}

static void symmetric_default_shape(const fk__tuning_query *query, fk__loop_shape *shape)
{
    memset(shape, 0, sizeof *shape);
    default_variant(&query->context->info, &shape->unroll_i, &shape->unroll_j,
                    &shape->work_group_size);
    if ((size_t)shape->work_group_size > query->context->info.max_work_group_size)
        shape->work_group_size = (int)query->context->info.max_work_group_size;
    shape->local_tiling = 1;
}

const fk__loop fk__loop_symmetric = {
    .name = "symmetric",
    .algorithm = FK_ALGORITHM_SYMMETRIC,
    .newton = FK__NEWTON_ALWAYS,
    .newton_refusal = "the symmetric loop writes both particles of each pair (use all-pairs)",
    .reach = FK__REACH_ALL,
    .accums = FK__ACCUMS_NEWTON,
    .double_single = 1,
    .automatic = FK__AUTO_NEVER, /* fewer accumulators than all-pairs; chosen by name */
    .supports = symmetric_supports,
    .create = symmetric_create,
    .prepare = symmetric_prepare,
    .enqueue = symmetric_enqueue,
    .figures = symmetric_figures,
    .destroy = symmetric_destroy,
    .tuning_space = symmetric_tuning_space,
    .default_shape = symmetric_default_shape,
};
