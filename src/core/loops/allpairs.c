/* The all-pairs loop: every i-particle against every j-particle, the scalar template
 * (cl/pairwise.cl, unrolled IxJ, optionally tiled through local memory) or its lane form
 * (cl/pairwise_lanes.cl, variant.lanes > 0); the j-range may be split across work-groups
 * (eval->j_chunk) and the partial sums merged by fk_reduce_splits. Its launch, which the
 * symmetric and lane loops share, is in helpers.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loops/lanes.h"
#include "core/loops/loop.h"


/* ---------------------------------------------------------------------------------------------- */

/* Built-in defaults, the last fallback when no tuning database has an entry for the device:
 * measured on POCL (x86, AVX-512) and an NVIDIA H100/H200; see results/. */
void fk__builtin_variant(const fk_device_info *device, fk_variant *variant)
{
    if (device->type == FK_DEVICE_GPU) {
        variant->unroll_i = 4;
        variant->unroll_j = 8;
        variant->work_group_size = 256;
    } else {
        variant->unroll_i = 4;
        variant->unroll_j = 1;
        variant->work_group_size = 64;
    }
    variant->local_tiling = 1;
}

typedef struct all_pairs {
    cl_program program, bound_program;
    cl_kernel pairwise, reduce;             /* the chosen accumulator */
    cl_kernel bound_pairwise, bound_reduce; /* the bound pre-pass of fixed64, narumi, ... */
} all_pairs;

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
    FK__RELEASE_KERNELS(state->pairwise, state->reduce, state->bound_pairwise, state->bound_reduce);
    FK__RELEASE_PROGRAMS(state->program, state->bound_program);
    free(state);
}

static fk_status all_pairs_create(fk__eval_state *eval, const fk_program_request *request,
                                  void **out)
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

static fk_status all_pairs_prepare(fk__eval_state *eval, void *state)
{
    (void)eval, (void)state; /* the evaluation's upload sized partial and the split */
    return FK_OK;
}

static fk_status all_pairs_enqueue(fk__eval_state *eval, void *opaque, fk__pass pass,
                                   cl_event *first, cl_event *last)
{
    all_pairs *state = opaque;
    const int bound = pass == FK__PASS_BOUND;
    return fk__all_pairs_enqueue(eval, bound ? state->bound_pairwise : state->pairwise,
                                 bound ? state->bound_reduce : state->reduce, &eval->variant,
                                 eval->variant.j_splits, fk__share_applies(eval, pass), first,
                                 last);
}

static size_t all_pairs_figures(const fk__eval_state *eval, const void *opaque,
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
    .algorithm = FK_ALGORITHM_ALL_PAIRS,
    .reference = 1,
    .newton = FK__NEWTON_NEVER,
    .share_unit = FK__SHARE_PARTICLES, /* i-blocks covering a range of particles */
    .reach = FK__REACH_ALL,
    .accums = FK__ACCUMS_ALL,
    .double_single = 1,
    .automatic = FK__AUTO_REFERENCE,
    .split_in_program = 0, /* the j-split is a launch setting (eval->j_chunk) */
    .supports = all_pairs_supports,
    .create = all_pairs_create,
    .prepare = all_pairs_prepare,
    .enqueue = all_pairs_enqueue,
    .figures = all_pairs_figures,
    .destroy = all_pairs_destroy,
    .tuning_space = all_pairs_tuning_space,
    .default_shape = all_pairs_default_shape,
};
