/* The evaluation's entry points and state: create (variant, loop, subtraction), destroy, compute
 * through the pair loop (src/core/loops/loop.h), waiting and timing, getters. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/eval/eval_internal.h"
#include "core/devices/known_answer.h"
#include "core/tune/tune.h"

void fk__eval_release_buffers(fk_eval *eval)
{
    /* Not the pair table: it is uploaded once, by fk_eval_set_pair_table or the first particles. */
    cl_mem *buffers[] = {&eval->state.body,    &eval->state.body_aux, &eval->state.physics,
                         &eval->state.partial, &eval->state.result,   &eval->excluded};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; ++i) {
        if (*buffers[i] &&
            (buffers[i] != &eval->state.partial || eval->state.partial != eval->state.result))
            clReleaseMemObject(*buffers[i]);
        *buffers[i] = NULL;
    }
}

void fk_eval_destroy(fk_eval *eval)
{
    if (!eval)
        return;
    if (eval->pending || eval->body_written) /* the device may still read or write our memory */
        clFinish(eval->state.context->queue);
    if (eval->pending_read) /* by its event too: clFinish alone is not enough on Rusticl 22.3 */
        clWaitForEvents(1, &eval->pending_read);
    fk__eval_release_pending(eval);
    if (eval->state.partial == eval->state.result)
        eval->state.partial = NULL;
    fk__eval_release_buffers(eval);
    fk__eval_release_output(eval);
    fk__eval_release_results_cl(eval);
    fk__eval_release_host_body(eval);
    fk__eval_release_positions(eval);
    fk__eval_release_bound_reduce(eval);
    FK__RELEASE_KERNELS(eval->convert_kernels[0], eval->convert_kernels[1], eval->decode_kernel,
                        eval->subtract);
    FK__RELEASE_PROGRAMS(eval->convert_program, eval->decode_program, eval->subtract_program);
    FK__RELEASE_BUFFERS(eval->state.table);
    fk__forcelaw_state_free(&eval->state.law);
    if (eval->loop)
        eval->loop->destroy(eval->loop_state);
    free(eval);
}

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

/* fk_eval_create with the exclusion slots to build when config->max_exclusions is automatic. */
fk_status fk__eval_create_slots(fk_context *context, const fk_eval_config *config,
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
    if (status == FK_OK) /* the first time these programs run on this context (issue #37) */
        status = fk__known_answer_check(eval, exclusion_slots);
    if (status != FK_OK) {
        fk_eval_destroy(eval);
        return status;
    }
    *out = eval;
    return FK_OK;
}

/* What the caller set on an evaluation after its creation and a rebuild keeps: the pair table
 * (its copy and buffer) and the result buffers of fk_eval_set_results_cl. Exchanged between from
 * and to, so that each evaluation still releases what it holds. */
static void exchange_caller_settings(fk_eval *to, fk_eval *from)
{
    const fk__pair_params pairs = to->state.law.pairs;
    to->state.law.pairs = from->state.law.pairs;
    from->state.law.pairs = pairs;
    const cl_mem table = to->state.table;
    to->state.table = from->state.table;
    from->state.table = table;
    const cl_mem forces = to->results_forces, potentials = to->results_potentials;
    to->results_forces = from->results_forces;
    to->results_potentials = from->results_potentials;
    from->results_forces = forces;
    from->results_potentials = potentials;
}

fk_status fk__eval_rebuild(fk_eval *eval, unsigned exclusion_slots)
{
    /* From the resolved configuration: it holds FK_ALGORITHM_AUTO's choice, so the same loop
     * runs, and it keeps the reason it was chosen. */
    fk_eval *rebuilt = NULL;
    fk_status status =
        fk__eval_create_slots(eval->state.context, &eval->state.config, exclusion_slots, &rebuilt);
    if (status != FK_OK)
        return status; /* eval unchanged */
    rebuilt->state.variant.algorithm_source = eval->state.variant.algorithm_source;
    exchange_caller_settings(rebuilt, eval);
    /* The rebuilt evaluation takes this handle's place (callers keep their pointer); the old
     * contents go out through the ordinary destroy. */
    const fk_eval previous = *eval;
    *eval = *rebuilt;
    *rebuilt = previous;
    fk_eval_destroy(rebuilt);
    return FK_OK;
}

/* config->physics into the flat fields of copy, and the on-the-fly exclusion slots its
 * exclusions need (so that applying them builds nothing twice). */
static fk_status take_physics(fk_context *context, fk_eval_config *copy, unsigned *slots)
{
    const fk_physics *physics = copy->physics;
    int flat = copy->eps != 0 || copy->cutoff != 0 || copy->coulomb != 0;
    for (int k = 0; k < FK_LAW_PARAMETERS; ++k)
        flat |= copy->parameters[k] != 0;
    for (int k = 0; k < 3; ++k)
        flat |= copy->box[k] != 0;
    if (flat)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_eval_config: physics given twice, as config.physics and in the flat "
                        "fields (eps, cutoff, coulomb, parameters, box); use one");
    copy->eps = physics->eps;
    copy->cutoff = physics->cutoff;
    copy->coulomb = physics->coulomb;
    memcpy(copy->parameters, physics->parameters, sizeof copy->parameters);
    memcpy(copy->box, physics->box, sizeof copy->box);
    *slots = 0;
    if (physics->exclusion_count == 0 || copy->exclusion_mode != FK_EXCLUDE_ON_THE_FLY)
        return FK_OK;
    char message[256] = "";
    size_t *normalized = NULL, unique = 0, most = 0;
    fk_status status = fk__exclusions_normalize(physics->exclusions, physics->exclusion_count,
                                                &normalized, &unique, message, sizeof message);
    if (status == FK_OK)
        status = fk__exclusions_max_partners(normalized, unique, &most);
    free(normalized);
    if (status != FK_OK)
        return message[0] ? fk__fail(context, status, "%s", message) : status;
    /* more than the kernel can check: fk_eval_set_exclusions names the particle */
    *slots = most > FK__MAX_EXCLUSION_SLOTS ? FK__MAX_EXCLUSION_SLOTS : (unsigned)most;
    return FK_OK;
}

fk_status fk_eval_create(fk_context *context, const fk_eval_config *config, fk_eval **out)
{
    fk_eval_config copy;
    /* No exclusions yet: an automatic on-the-fly build checks none (no cost per pair) until
     * fk_eval_set_exclusions says how many partners a particle has. */
    unsigned slots = 0;
    const fk_physics *physics = NULL;
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    /* before anything records on it: a failed context keeps the detail of its failure */
    if (fk__context_usable(context) != FK_OK)
        return FK_ERR_INVALID_ARGUMENT;
    if (config) {
        fk__clear_error(context);
        fk_status status = fk__config_copy(context, "fk_eval_config", &copy, sizeof copy, config,
                                           FK__SIZE_0_2(fk_eval_config, lanes));
        if (status == FK_OK && copy.physics) {
            physics = copy.physics;
            status = take_physics(context, &copy, &slots);
            copy.physics = NULL; /* the caller's; not kept */
        }
        if (status != FK_OK)
            return status;
        config = &copy;
    }
    fk_status status = fk__eval_create_slots(context, config, slots, out);
    if (status != FK_OK || !physics)
        return status;
    if (physics->pair_table)
        status = fk_eval_set_pair_table(*out, physics->pair_table);
    if (status == FK_OK && physics->exclusion_count)
        status = fk_eval_set_exclusions(*out, physics->exclusions, physics->exclusion_count);
    if (status != FK_OK) {
        fk_eval_destroy(*out);
        *out = NULL;
    }
    return status;
}

double fk__event_seconds(cl_event first, cl_event last)
{
    cl_ulong start = 0, end = 0;
    if (clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START, sizeof start, &start, NULL) !=
            CL_SUCCESS ||
        clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END, sizeof end, &end, NULL) !=
            CL_SUCCESS)
        return -1.0;
    return end > start ? (double)(end - start) * 1e-9 : 0.0;
}

fk_status fk__eval_finish(fk_eval *eval, cl_event first, cl_event last, const char *what,
                          double *seconds)
{
    fk_context *context = eval->state.context;
    if (!last)
        last = first;
    fk_status status = FK_OK;
    const cl_int err = clFinish(context->queue);
    if (err != CL_SUCCESS) {
        status = fk__cl_fail(context, "clFinish", err);
    } else {
        /* An in-order queue ran first .. last; a launch that failed says so in its status. */
        cl_int state_first = CL_COMPLETE, state_last = CL_COMPLETE;
        if (first)
            clGetEventInfo(first, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state_first,
                           &state_first, NULL);
        if (last && last != first)
            clGetEventInfo(last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state_last, &state_last,
                           NULL);
        if (state_first < 0 || state_last < 0) {
            char call[96];
            snprintf(call, sizeof call, "kernel execution (%s)", what);
            status = fk__cl_fail(context, call, state_first < 0 ? state_first : state_last);
        }
    }
    if (status == FK_OK && seconds)
        *seconds = first ? fk__event_seconds(first, last) : -1.0;
    if (first)
        clReleaseEvent(first);
    if (last && last != first)
        clReleaseEvent(last);
    return status;
}

/* One pass of the loop, waited for: the forces pass with the exclusion subtraction appended. */
fk_status fk__eval_run_pass(fk_eval *eval, fk__pass pass, double *seconds)
{
    fk_context *context = eval->state.context;
    cl_event first = NULL, last = NULL;
    fk_status status = eval->loop->enqueue(&eval->state, eval->loop_state, pass, &first, &last);
    if (status != FK_OK)
        return status;
    cl_event subtracted = NULL; /* exclude afterwards, on the merged results */
    if (pass == FK__PASS_FORCES)
        status = fk__eval_share_zero(eval);
    if (pass == FK__PASS_FORCES && status == FK_OK)
        status = fk__eval_enqueue_subtraction(eval, &subtracted);
    if (status != FK_OK) {
        clFinish(context->queue);
        if (first)
            clReleaseEvent(first);
        if (last)
            clReleaseEvent(last);
        return status;
    }
    if (subtracted) {
        if (last)
            clReleaseEvent(last);
        last = subtracted;
    }
    return fk__eval_finish(eval, first, last, "pair loop", seconds);
}

void fk__eval_release_pending(fk_eval *eval)
{
    cl_event *events[] = {&eval->pending_first, &eval->pending_last, &eval->pending_read};
    for (size_t i = 0; i < sizeof events / sizeof events[0]; ++i) {
        if (*events[i])
            clReleaseEvent(*events[i]);
        *events[i] = NULL;
    }
    eval->pending = 0;
}

/* The first step of every entry point but wait and destroy: the error cleared, no compute in
 * flight, and (call not NULL) particles set. */
fk_status fk__eval_begin(fk_eval *eval, const char *call)
{
    fk__clear_error(eval->state.context);
    if (eval->pending)
        return fk__fail(eval->state.context, FK_ERR_STATE,
                        "a compute is in flight (fk_eval_compute_async): call fk_eval_wait first");
    if (call && (eval->state.count == 0 || !eval->state.host_body))
        return fk__fail(eval->state.context, FK_ERR_STATE, "%s before set_particles", call);
    return FK_OK;
}

fk_status fk_eval_compute_async(fk_eval *eval)
{
    if (!eval)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->state.context;
    fk_status status = fk__eval_begin(eval, "compute");
    if (status != FK_OK)
        return status;
    eval->computed = 0;
    /* Before the first enqueue: POCL runs a command as it is enqueued, so a clock read after the
     * enqueues could start after the pass and call an honest device time impossible (timing.c). */
    const double enqueued = fk__now();
    cl_event first = NULL, last = NULL, subtracted = NULL, read = NULL;
    status = eval->loop->enqueue(&eval->state, eval->loop_state, FK__PASS_FORCES, &first, &last);
    if (status != FK_OK)
        return status;
    status = fk__eval_share_zero(eval);
    if (status == FK_OK)
        status = fk__eval_enqueue_subtraction(eval, &subtracted); /* exclude afterwards */
    if (status == FK_OK)
        status = fk__eval_enqueue_output(eval, &read);
    if (status == FK_OK) { /* start the work now: the caller may do host work before waiting */
        const cl_int err = clFlush(context->queue);
        if (err != CL_SUCCESS)
            status = fk__cl_fail(context, "clFlush", err);
    }
    if (subtracted) {
        if (last)
            clReleaseEvent(last);
        last = subtracted;
    }
    eval->pending_since = enqueued;
    eval->pending_first = first;
    eval->pending_last = last;
    eval->pending_read = read;
    eval->pending = 1;
    if (status != FK_OK) {
        clFinish(context->queue);
        fk__eval_release_pending(eval);
    }
    return status;
}

fk_status fk_eval_wait(fk_eval *eval, double *seconds)
{
    if (!eval)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->state.context;
    fk__clear_error(context);
    if (!eval->pending)
        return fk__fail(context, FK_ERR_STATE, "wait without a compute in flight");
    /* fk__eval_finish waits for the queue and checks the pass's first and last events; the read
     * came after them on the in-order queue, so it is done too, and is checked here. */
    cl_event first = eval->pending_first, last = eval->pending_last, read = eval->pending_read;
    eval->pending_first = eval->pending_last = NULL;
    fk_status status = fk__eval_finish(eval, first, last, "pair loop", seconds);
    if (status == FK_OK && seconds) { /* implausible event times are unavailable (timing.c) */
        const double n = (double)eval->state.count;
        const double pairs =
            eval->state.variant.pairs_examined ? (double)eval->state.variant.pairs_examined : n * n;
        *seconds =
            fk__plausible_device_seconds(context, *seconds, pairs, fk__now() - eval->pending_since);
    }
    if (status == FK_OK && read) {
        /* Waited for by its own event, not only by clFinish: Mesa 22.3's Rusticl returns from
         * clFinish before a non-blocking read has reached host memory, and the results were its
         * zeros (issue #37; tests/rusticl/mapped_staging.c reproduces it). */
        cl_int state = clWaitForEvents(1, &read);
        if (state == CL_SUCCESS)
            clGetEventInfo(read, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state, NULL);
        if (state < 0)
            status = fk__cl_fail(context, "decode and read of the results", state);
    }
    fk__eval_release_pending(eval);
    if (status == FK_OK)
        fk__eval_output_arrived(eval);
    if (status == FK_OK && eval->first_overflow >= 0 && fk__eval_keeps_scale(eval) &&
        !eval->rescaling &&
        !eval->state.config.coordinated_scale) { /* parts rescale together, on the caller's call */
        /* The kept scale no longer holds these forces: a new one from these positions, and the
         * pass again (its device time replaces the first's). Once: the new scale is chosen from
         * an exact bound of these very terms, so a second overflow is reported, not retried. */
        ++eval->rescales;
        status = fk__eval_choose_accum_parameters(eval);
        if (status == FK_OK)
            status = fk_eval_compute_async(eval);
        if (status == FK_OK) {
            eval->rescaling = 1;
            status = fk_eval_wait(eval, seconds);
            eval->rescaling = 0;
            return status;
        }
    }
    eval->computed = status == FK_OK;
    return status;
}

fk_status fk_eval_compute(fk_eval *eval, double *seconds)
{
    const fk_status status = fk_eval_compute_async(eval);
    return status == FK_OK ? fk_eval_wait(eval, seconds) : status;
}

void fk__eval_set_j_splits(fk_eval *eval, int j_splits)
{
    eval->state.config.j_splits = j_splits > 0 ? j_splits : 0;
}

fk_status fk_eval_get_variant(const fk_eval *eval, fk_variant *variant)
{
    if (!eval || !variant)
        return FK_ERR_INVALID_ARGUMENT;
    *variant = eval->state.variant;
    return FK_OK;
}

const char *fk_eval_variant_note(const fk_eval *eval)
{
    return eval ? eval->variant_note : "";
}

size_t fk_eval_force_components(const fk_eval *eval)
{
    return eval ? eval->state.kernel->info.force_components : 0;
}

fk_status fk__eval_kernel_figures(const fk_eval *eval, fk__kernel_figures *figures, size_t capacity,
                                  size_t *count)
{
    if (!eval || !count || (capacity && !figures))
        return FK_ERR_INVALID_ARGUMENT;
    *count = eval->loop->figures(&eval->state, eval->loop_state, figures, capacity);
    if (eval->subtract) {
        if (*count < capacity)
            fk__kernel_figures_of(eval->state.context, eval->subtract, "fk_subtract_exclusions",
                                  &figures[*count]);
        ++*count;
    }
    return FK_OK;
}
