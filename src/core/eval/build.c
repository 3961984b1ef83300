/* Building an evaluation (fk__eval_build): the configuration checked, the plan resolved (plan.c),
 * the variant chosen (choose.c), the pair loop created with its programs, the exclusion
 * subtraction, the decode and the bound reduction. Below create.c, which adds the known-answer
 * check of the programs (known_answer.c builds its probe evaluations here, unchecked). */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/eval/eval_internal.h"
#include "core/tuning_db/db.h"

/* The checks every entry point that names a kernel and an accumulator needs: both exist, and the
 * device can run the accumulator. */
fk_status fk__find_kernel_and_accum(fk_context *context, const char *kernel_name,
                                    const char *accum_name, const fk_kernel_desc **kernel,
                                    const fk_accum_desc **accum)
{
    if (!kernel_name)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "no kernel named");
    *kernel = fk__kernel_desc(kernel_name);
    if (!*kernel)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "unknown kernel '%s'", kernel_name);
    *accum = fk__accum_desc(accum_name);
    if (!*accum)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "unknown accumulator '%s'", accum_name);
    if ((*accum)->info.needs_fp64 && !context->info.fp64)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "accumulator '%s' needs double precision (cl_khr_fp64), which %s lacks; "
                        "use float or a compensated accumulator",
                        (*accum)->info.name, context->info.name);
    return FK_OK;
}

/* Double-single positions (config.positions, cl/forces/point.clh) go with the loops that read the
 * particles only through the force laws' loaders (their entry's double_single: all-pairs and
 * symmetric). The cell and list builds, and the lane forms, read float records themselves, and a
 * periodic box is stored in float (its minimum image would undo the precision). Automatic choices
 * that would take one of those (the algorithm, lanes) fall back to the all-pairs loop's scalar
 * template in *adjusted. */
static fk_status check_positions(fk_context *context, const fk_eval_config *config,
                                 fk_eval_config *adjusted)
{
    *adjusted = *config;
    if (config->positions == FK_POSITIONS_DEFAULT || config->positions == FK_POSITIONS_FLOAT)
        return FK_OK;
    if (config->positions != FK_POSITIONS_DOUBLE_SINGLE)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "positions %d: FK_POSITIONS_FLOAT (1) or FK_POSITIONS_DOUBLE_SINGLE (2)",
                        config->positions);
    if (config->box[0] != 0 || config->box[1] != 0 || config->box[2] != 0)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "double-single positions take open boundaries: a periodic box is stored "
                        "in float, and its minimum image would undo their precision");
    const fk__loop *named = fk__loop_for(config->algorithm); /* NULL: automatic (or unknown) */
    if (named && !named->double_single)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "double-single positions: the all-pairs and symmetric loops, not %s (its "
                        "builds read float records)",
                        fk_algorithm_name((fk_algorithm)config->algorithm));
    if (config->lanes > 0)
        return fk__fail(context, FK_ERR_UNSUPPORTED,
                        "double-single positions: the lane forms read float records; lanes -1 "
                        "or 0 run the scalar template");
    adjusted->lanes = -1;
    if (adjusted->algorithm == FK_ALGORITHM_AUTO) /* the reference loop reads them */
        adjusted->algorithm = fk__loop_reference()->algorithm;
    return FK_OK;
}

/* An automatic shape whose built kernel the device refused (fk__variant_fit_kernel: too many
 * work-items per group for its registers, or more local memory than the device has) is rebuilt
 * at the largest work-group size that the device allows, down to 1, and the evaluation says so:
 * variant.source FK_VARIANT_FITTED, the reason in fk_eval_variant_note. The loops take
 * eval->state.group_cap where they choose an automatic size; the all-pairs and lane loops take the
 * request's. An explicit work-group size never comes here: its refusal is the caller's answer. */
static fk_status fit_automatic_shape(fk_eval *eval, fk_program_request *request,
                                     fk_variant *variant)
{
    fk_context *context = eval->state.context;
    const int asked = request->work_group_size;
    char refusal[256] = "";
    snprintf(refusal, sizeof refusal, "%s", fk_context_last_error(context));
    fk_status status = FK_ERR_UNSUPPORTED;
    for (int attempt = 0; status == FK_ERR_UNSUPPORTED && eval->state.fit_group > 0 && attempt < 12;
         ++attempt) {
        const int cap = eval->state.fit_group;
        if (eval->state.group_cap && cap >= eval->state.group_cap)
            break; /* no progress: the refusal stands */
        eval->loop->destroy(eval->loop_state);
        eval->loop_state = NULL;
        eval->state.group_cap = cap;
        eval->state.fit_group = 0;
        if (variant->work_group_size > cap)
            variant->work_group_size = cap;
        /* the tiled loop takes its tile UNROLL_J at a time (fk__variant_check) */
        while (variant->local_tiling && variant->unroll_j > 1 &&
               variant->work_group_size % variant->unroll_j != 0)
            variant->unroll_j /= 2;
        request->work_group_size = variant->work_group_size;
        request->unroll_j = variant->unroll_j;
        fk__clear_error(context);
        eval->state.variant = *variant;
        eval->state.variant.program_from_cache = 1;
        eval->state.variant.build_seconds = 0;
        status = eval->loop->create(&eval->state, request, &eval->loop_state);
    }
    if (status != FK_OK)
        return status;
    eval->state.variant.source = FK_VARIANT_FITTED;
    snprintf(eval->variant_note, sizeof eval->variant_note,
             "work-group size %d narrowed to %d: the automatic shape does not fit (%s)", asked,
             eval->state.variant.work_group_size, refusal);
    return FK_OK;
}

/* The checks of a configuration that need no device work: the kernel and accumulator exist (and
 * the device runs the accumulator), reproducible mode, softening, scale policy, result type. */
static fk_status check_config(fk_context *context, const fk_eval_config *config,
                              const fk_kernel_desc **kernel, const fk_accum_desc **accum)
{
    const char *accum_name = config->accum          ? config->accum
                             : config->reproducible ? "fixed64"
                                                    : "float";
    fk_status found = fk__find_kernel_and_accum(context, config->kernel, accum_name, kernel, accum);
    if (found != FK_OK)
        return found;
    if (config->reproducible && strcmp(accum_name, "fixed64") != 0 &&
        strcmp(accum_name, "narumi") != 0)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "reproducible mode sums in fixed point (fixed64 or narumi: exact and "
                        "order-independent); accumulator '%s' is not",
                        accum_name);
    if (!isfinite(config->eps) || config->eps < 0)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "softening eps must be finite and >= 0");
    if (config->scale_policy != FK_SCALE_AUTO && config->scale_policy != FK_SCALE_KEEP &&
        config->scale_policy != FK_SCALE_EACH_UPLOAD)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "scale_policy %d: FK_SCALE_AUTO (0), FK_SCALE_KEEP (1) or "
                        "FK_SCALE_EACH_UPLOAD (2)",
                        config->scale_policy);
    if (config->scale_policy == FK_SCALE_KEEP && !(*accum)->overflowed)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "scale_policy FK_SCALE_KEEP needs an accumulator that detects every "
                        "overflow (fixed64), not %s",
                        (*accum)->info.name);
    if (config->result_type != FK_RESULT_DOUBLE && config->result_type != FK_RESULT_FLOAT)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "result_type %d: FK_RESULT_DOUBLE (0) or FK_RESULT_FLOAT (1)",
                        config->result_type);
    return FK_OK;
}

/* The loop and its shape: the positions' constraints, the plan (physics, skin, FK_ALGORITHM_AUTO's
 * choice and build switches resolved once, plan.c) and the variant. *resolved is config with the
 * loop that runs, which everything after sees. */
static fk_status resolve_loop(fk_context *context, const fk_eval_config *config,
                              const fk_kernel_desc *kernel, const fk_accum_desc *accum,
                              unsigned exclusion_slots, fk_eval_config *resolved, fk__plan *plan,
                              fk__variant_choice *choice)
{
    fk_status status = check_positions(context, config, resolved);
    if (status == FK_OK)
        status = fk__plan_resolve(context, resolved, kernel, accum, exclusion_slots, plan);
    if (status != FK_OK)
        return status;
    resolved->algorithm = plan->algorithm;
    status = fk__eval_choose_variant(context, resolved, kernel, accum, choice);
    if (status == FK_OK)
        choice->variant.algorithm_source = choice->scalar.algorithm_source = plan->algorithm_source;
    return status;
}

/* The build request of the loop's programs: the variant's shape and the switches every program of
 * the evaluation shares (the plan's: the force law's, denormal flushing, reproducible mode's); a
 * loop appends only its own. */
static void loop_request(fk_eval *eval, const fk_variant *variant, fk_program_request *request)
{
    const fk_eval_config *config = &eval->state.config;
    const fk_accum_desc *accum = eval->state.accum;
    *request = (fk_program_request){.force = eval->state.kernel->info.name,
                                    .accum = accum->info.name,
                                    .unroll_i = variant->unroll_i,
                                    .unroll_j = variant->unroll_j,
                                    .work_group_size = variant->work_group_size,
                                    .local_tiling = variant->local_tiling,
                                    .potential = config->potential != 0,
                                    .refresh_cache = config->refresh_cache,
                                    /* the scalar template: lanes.c asks for its own file */
                                    .file = NULL};
    eval->reproducible = -1; /* not asked; fk__eval_reproducible_options sets it when it is */
    request->extra_options =
        fk__plan_options(&eval->state.plan, eval->state.kernel,
                         config->reproducible ? fk__eval_reproducible_options(eval) : NULL);
}

/* The tuning database's entry the variant follows: its split applies in its N bucket only. */
static void take_tuned_split(fk_eval *eval, const fk_tuning_entry *tuned)
{
    eval->tuned_j_splits = tuned ? tuned->j_splits : 0;
    eval->tuned_bucket = tuned ? fk_tune_bucket_for(tuned->n) : 0;
}

/* Creates the loop of the chosen variant (its create builds only the programs it needs: the
 * all-pairs program is not built for symmetric or cells), with the fallbacks of automatic
 * choices: the scalar template when automatic lanes do not build, a narrower work-group size
 * when the device refuses an automatic one. */
static fk_status create_loop(fk_eval *eval, fk_program_request *request,
                             const fk__variant_choice *choice)
{
    fk_variant variant = choice->variant;
    eval->state.variant = variant;
    eval->state.variant.program_from_cache = 1;
    eval->state.variant.build_seconds = 0;
    fk_status status = eval->loop->create(&eval->state, request, &eval->loop_state);
    if (status == FK_ERR_BUILD && variant.lanes && eval->state.config.lanes == 0) {
        /* Automatic lanes are an optimization that the registry promises for the shipped headers;
         * an edited kernel directory without the lane sections still runs the scalar template,
         * and a build error is then the template's own. */
        eval->loop->destroy(eval->loop_state);
        eval->loop_state = NULL;
        variant = choice->scalar;
        eval->loop = fk__loop_for_variant(&variant);
        take_tuned_split(eval, choice->scalar_tuned);
        request->unroll_i = variant.unroll_i;
        request->unroll_j = variant.unroll_j;
        request->work_group_size = variant.work_group_size;
        request->local_tiling = variant.local_tiling;
        fk__clear_error(eval->state.context);
        eval->state.variant = variant;
        eval->state.variant.program_from_cache = 1;
        eval->state.variant.build_seconds = 0;
        status = eval->loop->create(&eval->state, request, &eval->loop_state);
    }
    if (status == FK_ERR_UNSUPPORTED && eval->state.fit_group > 0 &&
        eval->state.config.work_group_size == 0)
        status = fit_automatic_shape(eval, request, &variant);
    return status;
}

fk_status fk__eval_build(fk_context *context, const fk_eval_config *config,
                         unsigned exclusion_slots, fk_eval **out)
{
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (fk__context_usable(context) != FK_OK)
        return FK_ERR_INVALID_ARGUMENT;
    fk__clear_error(context);
    if (!config)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "no kernel named");
    const fk_kernel_desc *kernel = NULL;
    const fk_accum_desc *accum = NULL;
    fk_status status = check_config(context, config, &kernel, &accum);
    fk_eval_config resolved;
    fk__plan plan;
    fk__variant_choice choice;
    if (status == FK_OK)
        status = resolve_loop(context, config, kernel, accum, exclusion_slots, &resolved, &plan,
                              &choice);
    if (status != FK_OK)
        return status;
    config = &resolved;

    fk_eval *eval = calloc(1, sizeof *eval);
    if (!eval)
        return FK_ERR_HOST_MEMORY;
    eval->state.context = context;
    eval->state.kernel = kernel;
    eval->state.accum = accum;
    eval->state.host_check_count = FK__HOST_CHECK_COUNT;
    eval->state.config = *config;
    eval->state.config.kernel = kernel->info.name; /* keep static strings, not the caller's */
    eval->state.config.accum = accum->info.name;
    eval->state.components = kernel->info.force_components + (config->potential ? 1u : 0u);
    eval->accum_scale = 1.0;
    eval->first_overflow = -1;
    eval->state.plan = plan;
    fk__forcelaw_prepare(kernel, &eval->state.plan.physics, config->exclusion_mode,
                         plan.exclusion_slots, plan.double_table, plan.double_single,
                         &eval->state.law, eval->state.physics_values);
    /* Lanes are the all-pairs loop in another template: its entry's lane form. */
    eval->loop = fk__loop_for_variant(&choice.variant);
    char loop_reason[512] = "";
    status = eval->loop->supports(context, kernel, accum, config, &eval->state.plan.physics,
                                  loop_reason, sizeof loop_reason);
    if (status != FK_OK) {
        fk__fail(context, status, "%s", loop_reason);
        fk_eval_destroy(eval);
        return status;
    }
    take_tuned_split(eval, choice.tuned);
    fk_program_request request;
    loop_request(eval, &choice.variant, &request);
    status = create_loop(eval, &request, &choice);
    eval->state.acc_param[0] = 1.0f;
    if (status == FK_OK)
        status = fk__eval_create_subtraction(eval, &request);
    if (status == FK_OK)
        status = fk__eval_create_decode(eval);
    if (status == FK_OK)
        status = fk__eval_create_bound_reduce(eval);
    if (status != FK_OK) {
        fk_eval_destroy(eval);
        return status;
    }
    *out = eval;
    return FK_OK;
}
