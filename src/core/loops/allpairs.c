/* The all-pairs loop: every i-particle against every j-particle, the scalar template
 * (cl/pairwise.cl, unrolled IxJ, optionally tiled through local memory) or its lane form
 * (cl/pairwise_lanes.cl, variant.lanes > 0); the j-range may be split across work-groups
 * (eval->j_chunk) and the partial sums merged by fk_reduce_splits. Also the helpers every loop
 * shares (loop.h): setting kernel arguments, kernel figures, the loop table by algorithm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/eval/choose.h"
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

cl_float4 fk__eval_acc_param(const fk_eval *eval)
{
    const cl_float4 value = {
        {eval->acc_param[0], eval->acc_param[1], eval->acc_param[2], eval->acc_param[3]}};
    return value;
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

const fk__loop *fk__loop_for(int algorithm)
{
    switch (algorithm) {
    case FK_ALGORITHM_ALL_PAIRS:
        return &fk__loop_all_pairs;
    case FK_ALGORITHM_SYMMETRIC:
        return &fk__loop_symmetric;
    case FK_ALGORITHM_CELLS:
        return &fk__loop_cells;
    case FK_ALGORITHM_NEIGHBORS:
        return &fk__loop_neighbors;
    default:
        return NULL;
    }
}

/* ---------------------------------------------------------------------------------------------- */

typedef struct all_pairs {
    cl_program program, bound_program;
    cl_kernel pairwise, reduce;             /* the chosen accumulator */
    cl_kernel bound_pairwise, bound_reduce; /* the bound pre-pass of fixed64, narumi, ... */
} all_pairs;

/* i-particles per work-group: the unrolled ones, or the lanes. */
static size_t i_per_group(const fk_variant *variant)
{
    return (size_t)variant->work_group_size * (size_t)variant->unroll_i *
           (size_t)(variant->lanes > 0 ? variant->lanes : 1);
}

fk_status fk__all_pairs_build(fk_eval *eval, const fk_program_request *request, cl_program *program,
                              cl_kernel *pairwise, cl_kernel *reduce, fk_program_result *built)
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

static fk_status all_pairs_supports(fk_context *context, const fk_kernel_desc *kernel,
                                    const fk_accum_desc *accum, const fk_eval_config *config,
                                    const fk__physics *physics, char *reason, size_t reason_size)
{
    (void)context, (void)kernel, (void)accum, (void)config, (void)physics;
    if (reason_size)
        reason[0] = '\0';
    return FK_OK; /* the reference loop: every force law and accumulator */
}

static void all_pairs_destroy(void *opaque)
{
    all_pairs *state = opaque;
    if (!state)
        return;
    cl_kernel kernels[] = {state->pairwise, state->reduce, state->bound_pairwise,
                           state->bound_reduce};
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; ++k)
        if (kernels[k])
            clReleaseKernel(kernels[k]);
    if (state->program)
        clReleaseProgram(state->program);
    if (state->bound_program)
        clReleaseProgram(state->bound_program);
    free(state);
}

static fk_status all_pairs_create(fk_eval *eval, const fk_program_request *request, void **out)
{
    all_pairs *state = calloc(1, sizeof *state);
    if (!state)
        return FK_ERR_HOST_MEMORY;
    *out = state; /* the evaluation destroys it on any failure below */
    fk_program_result built;
    fk_status status = fk__all_pairs_build(eval, request, &state->program, &state->pairwise,
                                           &state->reduce, &built);
    if (status != FK_OK)
        return status;
    eval->variant.program_from_cache = built.from_cache;
    eval->variant.build_seconds = built.seconds;

    const fk_variant *variant = &eval->variant;
    char shape[64];
    snprintf(shape, sizeof shape, "variant %dx%d", variant->unroll_i, variant->unroll_j);
    status = fk__variant_fit_kernel(eval, state->pairwise, variant->work_group_size, shape,
                                    "fk_pairwise");
    if (status != FK_OK)
        return status;
    if (!eval->accum->choose_parameters)
        return FK_OK;
    /* fixed64, narumi and nitadori_large take their scale or LARGE from the data: a program of
     * the same variant with the `bound` accumulator measures the pair terms. */
    fk_program_request bound = *request;
    bound.accum = "bound";
    status = fk__all_pairs_build(eval, &bound, &state->bound_program, &state->bound_pairwise,
                                 &state->bound_reduce, &built);
    if (status == FK_OK)
        status = fk__variant_fit_kernel(eval, state->bound_pairwise, variant->work_group_size,
                                        shape, "fk_pairwise (bound)");
    return status;
}

static fk_status all_pairs_prepare(fk_eval *eval, void *state)
{
    (void)eval, (void)state; /* the evaluation's upload sized partial and the split */
    return FK_OK;
}

fk_status fk__all_pairs_enqueue(fk_eval *eval, cl_kernel pairwise, cl_kernel reduce,
                                const fk_variant *shape, int splits, int shared, cl_event *first,
                                cl_event *last)
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
    if (shared) {
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

static fk_status all_pairs_enqueue(fk_eval *eval, void *opaque, fk__pass pass, cl_event *first,
                                   cl_event *last)
{
    all_pairs *state = opaque;
    const int bound = pass == FK__PASS_BOUND;
    return fk__all_pairs_enqueue(eval, bound ? state->bound_pairwise : state->pairwise,
                                 bound ? state->bound_reduce : state->reduce, &eval->variant,
                                 eval->variant.j_splits, fk__share_applies(eval, pass), first,
                                 last);
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

static size_t all_pairs_figures(const fk_eval *eval, const void *opaque,
                                fk__kernel_figures *figures, size_t capacity)
{
    const all_pairs *state = opaque;
    const fk__named_kernel kernels[] = {
        {state->pairwise, "fk_pairwise"},
        {state->reduce, "fk_reduce_splits"},
        {state->bound_pairwise, "fk_pairwise (bound pre-pass)"},
    };
    return fk__figures_of_kernels(eval->context, kernels, sizeof kernels / sizeof kernels[0],
                                  figures, capacity);
}

/* ---------------------------------------------------------------------------------------------- */
/* Tuning space (src/core/tune/tune.c measures it) */

#define SPLIT_SEARCH_MAX_N 65536 /* above this N the automatic split is the only one searched */

static const int unroll_values[] = {1, 2, 4, 8};
static const int gpu_groups[] = {64, 128, 256, 512};
static const int cpu_groups[] = {16, 32, 64, 128, 256};
static const int split_values[] = {0, 1, 4, 16, 64}; /* 0: automatic */
/* The lane loop (cl/pairwise_lanes.cl) on CPUs: its widths, j-unrolling and work-group sizes. */
static const int lane_widths[] = {8, 16};
static const int lane_unrolls[] = {1, 2, 4};
static const int lane_groups[] = {4, 8, 16, 32};

int fk__shape_index(const int *values, int count, int value)
{
    int k = 0;
    while (k < count && values[k] != value)
        ++k;
    return k;
}

static int pinned_or(int pinned, int value)
{
    return !pinned || pinned == value;
}

static size_t all_pairs_tuning_space(const fk__tuning_query *t, fk__loop_shape **out)
{
    *out = NULL;
    const fk_device_info *device = &t->context->info;
    const fk_tune_config *config = t->pinned;
    const int gpu = device->type == FK_DEVICE_GPU;
    const int *groups = gpu ? gpu_groups : cpu_groups;
    const size_t group_count =
        gpu ? sizeof gpu_groups / sizeof gpu_groups[0] : sizeof cpu_groups / sizeof cpu_groups[0];
    const size_t splits_count = sizeof split_values / sizeof split_values[0];
    const size_t capacity = (4 * 4 * group_count * 2 + 2 * 3 * 4) * splits_count;
    fk__loop_shape *space = calloc(capacity, sizeof *space);
    if (!space)
        return 0;
    size_t count = 0;
    for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b)
            for (size_t g = 0; g < group_count; ++g)
                for (int tiling = 1; tiling >= 0; --tiling)
                    for (size_t s = 0; s < splits_count; ++s) {
                        const int group = groups[g], splits = split_values[s];
                        if (config->lanes > 0 || !pinned_or(config->unroll_i, unroll_values[a]) ||
                            !pinned_or(config->unroll_j, unroll_values[b]) ||
                            !pinned_or(config->work_group_size, group) ||
                            (size_t)group > device->max_work_group_size)
                            continue;
                        if (config->local_tiling && (config->local_tiling > 0) != tiling)
                            continue;
                        /* The split matters for small N only; a split larger than N / WG would be
                         * capped to that and repeat another candidate. */
                        if (config->j_splits
                                ? (config->j_splits < 0 ? splits != 0 : splits != config->j_splits)
                                : splits != 0 &&
                                      (t->n > SPLIT_SEARCH_MAX_N ||
                                       (size_t)splits > (t->n + (size_t)group - 1) / (size_t)group))
                            continue;
                        fk__loop_shape *c = &space[count++];
                        c->unroll_i = unroll_values[a];
                        c->unroll_j = unroll_values[b];
                        c->work_group_size = group;
                        c->local_tiling = tiling;
                        c->j_splits = splits;
                        const int coordinate[6] = {a, b, (int)g, tiling, (int)s, 0};
                        memcpy(c->coordinate, coordinate, sizeof coordinate);
                    }
    /* The lane loop, where the device holds the width (t->lane_width, from the evaluation's rule).
     */
    for (size_t w = 0; w < sizeof lane_widths / sizeof lane_widths[0]; ++w)
        for (size_t b = 0; b < sizeof lane_unrolls / sizeof lane_unrolls[0]; ++b)
            for (size_t g = 0; g < sizeof lane_groups / sizeof lane_groups[0]; ++g)
                for (size_t s = 0; s < splits_count; ++s) {
                    const int lanes = lane_widths[w], group = lane_groups[g];
                    const int splits = split_values[s];
                    if (config->lanes < 0 || lanes > t->lane_width ||
                        (config->lanes > 0 && config->lanes != lanes) || config->unroll_i > 1 ||
                        !pinned_or(config->unroll_j, lane_unrolls[b]) ||
                        !pinned_or(config->work_group_size, group) || config->local_tiling > 0 ||
                        (size_t)group > device->max_work_group_size)
                        continue;
                    const size_t i_block = (size_t)group * (size_t)lanes;
                    if (config->j_splits
                            ? (config->j_splits < 0 ? splits != 0 : splits != config->j_splits)
                            : splits != 0 && (t->n > SPLIT_SEARCH_MAX_N ||
                                              (size_t)splits > (t->n + i_block - 1) / i_block))
                        continue;
                    fk__loop_shape *c = &space[count++];
                    c->unroll_i = 1;
                    c->unroll_j = lane_unrolls[b];
                    c->work_group_size = group;
                    c->local_tiling = 0;
                    c->j_splits = splits;
                    c->lanes = lanes;
                    const int coordinate[6] = {0, (int)b, (int)g, 0, (int)s, 1 + (int)w};
                    memcpy(c->coordinate, coordinate, sizeof coordinate);
                }
    /* An explicit split the user pinned but that is not in split_values. */
    if (config->j_splits > 0 && count == 0) {
        free(space);
        return 0;
    }
    *out = space;
    return count;
}

/* fk_eval_create's defaults: the lane loop at the device's width on a CPU where the kernel and
 * accumulator have one, else the built-in scalar variant. */
static void all_pairs_default_shape(const fk__tuning_query *query, fk__loop_shape *shape)
{
    fk_variant builtin = {0};
    if (query->lane_width == 0 || query->pinned->lanes < 0 ||
        !fk__automatic_lanes(query->context, query->kernel, query->accum, &builtin))
        fk__builtin_variant(&query->context->info, &builtin);
    memset(shape, 0, sizeof *shape);
    shape->unroll_i = builtin.unroll_i;
    shape->unroll_j = builtin.unroll_j;
    shape->work_group_size = builtin.work_group_size;
    shape->local_tiling = builtin.local_tiling != 0;
    shape->lanes = builtin.lanes;
}

const fk__loop fk__loop_all_pairs = {
    .name = "all-pairs",
    .supports = all_pairs_supports,
    .create = all_pairs_create,
    .prepare = all_pairs_prepare,
    .enqueue = all_pairs_enqueue,
    .figures = all_pairs_figures,
    .destroy = all_pairs_destroy,
    .tuning_space = all_pairs_tuning_space,
    .default_shape = all_pairs_default_shape,
};
