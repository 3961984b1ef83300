/* Which pair loop the simulation runs: the evaluation of one loop, and (auto_algorithm) trial
 * runs of every loop the library has, keeping the fastest. Separate from the driver because it is
 * the only part that names loops, and asks the library for them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/simulate_private.h"

#include "common/stats.h"

fk_algorithm fkt_sim_algorithm(const fkt_sim *sim)
{
    fk_variant variant; /* the loop that runs: the library's choice too, when asked for one */
    if (sim->eval && fk_eval_get_variant(sim->eval, &variant) == FK_OK)
        return (fk_algorithm)variant.algorithm;
    return (fk_algorithm)sim->config.eval.algorithm;
}

/* An evaluation of the configured kernel with the given algorithm, its particles uploaded. */
fk_status fkt_sim__make_eval(fkt_sim *sim, const fkt_sim_config *config, fk_algorithm algorithm,
                             const fk_particles *view, fk_eval **out)
{
    fk_eval_config eval_config = config->eval;
    /* This library's own layout, every field included (positions among them): struct_size 0
     * would mean 0.2's and drop the later fields. */
    eval_config.struct_size = sizeof eval_config;
    eval_config.algorithm = (int)algorithm;
    eval_config.potential = 1;
    eval_config.expected_count = view->count;
    /* The host loop's restart from a checkpoint calls set_particles, which chooses fixed64's
     * scale from the restart's positions: a scale kept across updates (FK_SCALE_AUTO's fixed64)
     * would make the restarted run differ from the uninterrupted one. The host loop keeps
     * choosing it at every update, as before FK_SCALE_AUTO; the device integrator saves its
     * bound with the checkpoint instead. */
    if (!config->device && eval_config.scale_policy == FK_SCALE_AUTO)
        eval_config.scale_policy = FK_SCALE_EACH_UPLOAD;
    fk_eval *eval = NULL;
    const fkt_sim_backend *backend = config->backend;
    if (backend)
        return backend->create(backend->user, sim->context, &eval_config, config->pair_table,
                               config->exclusions, config->exclusion_count, view, out);
    fk_status status = fk_eval_create(sim->context, &eval_config, &eval);
    if (status == FK_OK && config->pair_table)
        status = fk_eval_set_pair_table(eval, config->pair_table);
    if (status == FK_OK && config->exclusion_count)
        status = fk_eval_set_exclusions(eval, config->exclusions, config->exclusion_count);
    if (status == FK_OK)
        status = fk_eval_set_particles(eval, view);
    if (status != FK_OK) {
        fk_eval_destroy(eval);
        return status;
    }
    *out = eval;
    return FK_OK;
}

/* Seconds per step-like cycle (update, compute, read), the median of a few: what the step loop
 * will pay per evaluation with this pair loop. */
static fk_status time_eval(fkt_sim *sim, fk_eval *eval, double *seconds)
{
    enum { REPS = 3 };
    double times[REPS];
    fk_status status = fk_eval_compute(eval, NULL); /* warm-up */
    for (int r = 0; r < REPS && status == FK_OK; ++r) {
        const double start = fkt_sim__seconds();
        status = fk_eval_update_positions(eval, sim->position, sim->velocity);
        if (status == FK_OK)
            status = fk_eval_compute(eval, NULL);
        if (status == FK_OK)
            status = fk_eval_read_forces(eval, sim->output);
        times[r] = fkt_sim__seconds() - start;
    }
    *seconds = fk__median(times, REPS);
    return status;
}

/* The pair loops a trial run times, in the library's order, into loops[capacity]; their count.
 * The one place in the simulation driver that lists loops: it asks the library for each loop's
 * name (fk_algorithm's values are appended, never reused) until there is none, so a new loop is
 * tried without an edit here. (#35: once the loop table describes itself, ask it here.) */
static size_t pair_loops(fk_algorithm *loops, size_t capacity)
{
    size_t count = 0;
    for (int value = 0; count < capacity && fk_algorithm_name((fk_algorithm)value); ++value)
        loops[count++] = (fk_algorithm)value;
    return count;
}

/* auto_algorithm: the library's first loop (all-pairs, every kernel has it) is the baseline, a
 * failure there is the run's failure; the others are tried when the library has them for this
 * kernel and skipped with a note otherwise. */
fk_status fkt_sim__choose_algorithm(fkt_sim *sim, const fk_particles *view)
{
    fk_algorithm candidates[FKT_SIM_MAX_TRIALS];
    const size_t count = pair_loops(candidates, FKT_SIM_MAX_TRIALS);
    double best_seconds = HUGE_VAL;
    for (size_t c = 0; c < count; ++c) {
        fkt_sim_trial *trial = &sim->trials[sim->trial_count++];
        memset(trial, 0, sizeof *trial);
        trial->algorithm = candidates[c];
        trial->seconds_per_step = NAN;
        fk_eval *eval = NULL;
        fk_status status = fkt_sim__make_eval(sim, &sim->config, candidates[c], view, &eval);
        double seconds = NAN;
        if (status == FK_OK)
            status = time_eval(sim, eval, &seconds);
        trial->status = status;
        if (status != FK_OK) {
            snprintf(trial->note, sizeof trial->note, "%s", fk_context_last_error(sim->context));
            fk_eval_destroy(eval);
            if (c == 0) {
                char what[64];
                snprintf(what, sizeof what, "%s evaluation", fk_algorithm_name(candidates[c]));
                return fkt_sim__failure(sim, status, what);
            }
            continue;
        }
        trial->seconds_per_step = seconds;
        if (seconds < best_seconds) {
            best_seconds = seconds;
            fk_eval_destroy(sim->eval);
            sim->eval = eval;
            sim->config.eval.algorithm = (int)candidates[c];
        } else {
            fk_eval_destroy(eval);
        }
    }
    return FK_OK;
}
