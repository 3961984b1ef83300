/* The lane form of the all-pairs loop (cl/pairwise_lanes.cl): on CPUs, each work-item holds 8 or
 * 16 i-particles in the lanes of one vector register. The launch and the split reduction are the
 * all-pairs loop's (allpairs.c); this file has the loop's entry and its build request, and
 * lanes_rules.c the rules for when lanes run. Lanes are tuned with all-pairs (its tuning space
 * holds both forms, stored as all-pairs entries with "lanes"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loops/lanes.h"
#include "core/loops/loop.h"
#include "core/tuning_db/db.h"

extern const fk__loop fk__loop_all_pairs; /* whose launch the lane form runs (allpairs.c) */

/* The lane file replaces the scalar template; the bound pre-pass of fixed64 and narumi has a
 * lane form too. */
static fk_status lanes_create(fk__eval_state *eval, const fk_program_request *request, void **state)
{
    fk_program_request own = *request;
    own.file = "pairwise_lanes.cl";
    own.lanes = eval->variant.lanes;
    /* Not for fixed64 and narumi, whose lane sums are the scalar template's bit for bit (same
     * rsqrt), nor their pre-pass. */
    own.lane_rsqrt_newton = !eval->config.reproducible && !eval->accum->choose_parameters &&
                            fk__native_rsqrt_estimate_ok(eval->context);
    return fk__loop_all_pairs.create(eval, &own, state);
}

static fk_status lanes_supports(fk_context *context, const fk_kernel_desc *kernel,
                                const fk_accum_desc *accum, const fk_eval_config *config,
                                const fk__physics *physics, char *reason, size_t reason_size)
{
    (void)config, (void)physics;
    if (fk__lanes_possible(context, kernel, accum))
        return FK_OK;
    snprintf(reason, reason_size, "kernel '%s' with accumulator '%s' has no lane form",
             kernel->info.name, accum->info.name);
    return FK_ERR_UNSUPPORTED;
}

static fk_status lanes_prepare(fk__eval_state *eval, void *state)
{
    return fk__loop_all_pairs.prepare(eval, state);
}

static fk_status lanes_enqueue(fk__eval_state *eval, void *state, fk__pass pass, cl_event *first,
                               cl_event *last)
{
    return fk__loop_all_pairs.enqueue(eval, state, pass, first, last);
}

static size_t lanes_figures(const fk__eval_state *eval, const void *state,
                            fk__kernel_figures *figures, size_t capacity)
{
    return fk__loop_all_pairs.figures(eval, state, figures, capacity);
}

static void lanes_destroy(void *state)
{
    fk__loop_all_pairs.destroy(state);
}

/* Not a table entry: the all-pairs entry's lane form (fk__loop_for_variant). */
const fk__loop fk__loop_lanes = {
    .name = "all-pairs",
    .algorithm = FK_ALGORITHM_ALL_PAIRS,
    .newton = FK__NEWTON_NEVER,
    .share_unit = FK__SHARE_PARTICLES,
    .reach = FK__REACH_ALL,
    .accums = FK__ACCUMS_LANE_FORMS,
    .double_single = 0, /* the lane forms read float records */
    .automatic = FK__AUTO_NEVER,
    .lane_of = &fk__loop_all_pairs,
    .supports = lanes_supports,
    .create = lanes_create,
    .prepare = lanes_prepare,
    .enqueue = lanes_enqueue,
    .figures = lanes_figures,
    .destroy = lanes_destroy,
    .tuning_space = NULL, /* searched with all-pairs */
    .default_shape = NULL,
};
