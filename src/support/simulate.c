/* The simulation driver's core (see simulate.h): creating and destroying a run, and the bridge to
 * the forces, from an fk_eval of this process, a backend's (MPI) or the device integrator's, with
 * every failure's message. The integrators' steps are in simulate_step.c, the choice of pair loop
 * in simulate_loops.c, energies and fingerprints in simulate_energy.c, and the checkpoint format in
 * simulate_checkpoint.c and simulate_checkpoint_read.c. */
#include "support/simulate.h"

#include "core/integrate/integrator.h" /* fk__integrator_forces: checkpoints of the device path */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/text.h"
#include "support/simulate_private.h"

static int is_gravity(const char *kernel)
{
    return strcmp(kernel, "ga") == 0 || strcmp(kernel, "gaj") == 0;
}

/* Reads the last evaluation's output and splits it into accelerations (molecular: unit masses, so
 * a = F) and jerks, checking that every value is finite: NaN or Inf means a collapsed pair (too
 * large a time step) and must stop the run rather than poison it. */
fk_status fkt_sim__read_output(fkt_sim *sim, double *acceleration, double *jerk, const char *what)
{
    const double start = fkt_sim__seconds();
    /* The decoded results where the compute left them (pinned memory), without a copy; devices
     * without fp64 decode on the host into sim->output. */
    const void *view = NULL;
    const fkt_sim_backend *backend = sim->config.backend;
    fk_status status = backend ? FK_ERR_UNSUPPORTED : fk_eval_results_view(sim->eval, &view, NULL);
    const double *output = view;
    if (status == FK_ERR_UNSUPPORTED) {
        status = backend ? backend->read_forces(backend->user, sim->output)
                         : fk_eval_read_forces(sim->eval, sim->output);
        output = sim->output;
    }
    sim->timing.read += fkt_sim__seconds() - start;
    if (status != FK_OK)
        return fkt_sim__failure(sim, status, what);
    const size_t components = sim->kernel->force_components, n = sim->n;
    /* One pass that copies and counts the values that are not finite; only when there are any, a
     * second finds the first (the state is then left as it was: the step fails). */
    size_t bad = 0;
    FK_SIM_PARALLEL(sim, components * n);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(+ : bad) if (parallel)
#endif
    for (size_t i = 0; i < n; ++i)
        for (size_t k = 0; k < components; ++k) {
            const double value = output[i * components + k];
            bad += !isfinite(value);
            if (k < 3)
                acceleration[3 * i + k] = value;
            else if (jerk && k < 6)
                jerk[3 * i + k - 3] = value;
        }
    for (size_t v = 0; bad && v < components * n; ++v)
        if (!isfinite(output[v])) {
            const size_t i = v / components, k = v % components;
            fk_format_message(
                sim->message, sizeof sim->message,
                "%s: the %s of particle %zu is %g: two particles came (nearly) on top "
                "of each other; use a smaller --dt",
                what, k < 3 ? "force" : "jerk", i, output[v]);
            return FK_ERR_INVALID_INPUT; /* the step was too large for these particles */
        }
    return FK_OK;
}

fk_status fkt_sim__compute(fkt_sim *sim, const char *what)
{
    double seconds = 0;
    const double start = fkt_sim__seconds();
    const fkt_sim_backend *backend = sim->config.backend;
    fk_status status =
        backend ? backend->compute(backend->user, &seconds) : fk_eval_compute(sim->eval, &seconds);
    sim->timing.compute += fkt_sim__seconds() - start;
    if (status != FK_OK)
        return fkt_sim__failure(sim, status, what);
    if (seconds > 0)
        sim->device_seconds += seconds;
    sim->evaluations++;
    return FK_OK;
}

/* Forces at new positions (and velocities, which gaj's jerk needs). */
fk_status fkt_sim__update_positions(fkt_sim *sim, const double *position, const double *velocity)
{
    const fkt_sim_backend *backend = sim->config.backend;
    return backend ? backend->update(backend->user, position, velocity)
                   : fk_eval_update_positions(sim->eval, position, velocity);
}

fk_status fkt_sim__evaluate(fkt_sim *sim, const double *position, const double *velocity,
                            double *acceleration, double *jerk, const char *what)
{
    const double start = fkt_sim__seconds();
    fk_status status = fkt_sim__update_positions(sim, position, velocity);
    sim->timing.update += fkt_sim__seconds() - start;
    if (status == FK_ERR_OVERFLOW) {
        /* The data-scaled accumulators' pre-pass saw a term that is not finite (the input was
         * checked, so a collapsed pair): the same event as a NaN force below, the same status. */
        fkt_sim__failure(sim, status, what);
        size_t used = strlen(sim->message);
        fk_format_message(
            sim->message + used, sizeof sim->message - used,
            " (two particles came (nearly) on top of each other: use a smaller --dt)");
        return FK_ERR_INVALID_INPUT;
    }
    if (status != FK_OK)
        return fkt_sim__failure(sim, status, what);
    status = fkt_sim__compute(sim, what);
    if (status == FK_OK)
        status = fkt_sim__read_output(sim, acceleration, jerk, what);
    return status;
}

/* The device's forces of the current step into acceleration (and jerk), or (write) back. */
static fk_status device_forces(fkt_sim *sim, int write)
{
    const size_t components = sim->kernel->force_components, n = sim->n;
    double *forces = sim->output;
    for (size_t i = 0; write && i < n; ++i)
        for (size_t k = 0; k < components; ++k)
            forces[components * i + k] = k < 3                ? sim->acceleration[3 * i + k]
                                         : sim->jerk && k < 6 ? sim->jerk[3 * i + k - 3]
                                                              : 0.0;
    const fk_status status = fk__integrator_forces(sim->integrator, forces, write);
    for (size_t i = 0; status == FK_OK && !write && i < n; ++i)
        for (size_t k = 0; k < components && k < 6; ++k) {
            if (k < 3) /* molecular: forces, a = F with the unit masses */
                sim->acceleration[3 * i + k] = forces[components * i + k];
            else if (sim->jerk)
                sim->jerk[3 * i + k - 3] = forces[components * i + k];
        }
    return status;
}

int fkt_sim_on_device(const fkt_sim *sim)
{
    return sim && (sim->integrator || sim->backend_integrator);
}

fk_status fkt_sim_sync(fkt_sim *sim)
{
    if (!sim)
        return FK_ERR_INVALID_ARGUMENT;
    if (!fkt_sim_on_device(sim) || !sim->state_stale)
        return FK_OK;
    sim->message[0] = '\0';
    uint64_t step = 0;
    const fkt_sim_backend *backend = sim->config.backend;
    fk_status status =
        sim->backend_integrator
            ? backend->get_state(backend->user, sim->position, sim->velocity)
            : fk_integrator_get_state(sim->integrator, sim->position, sim->velocity, &step);
    if (status == FK_OK && sim->integrator)
        status = device_forces(sim, 0);
    if (status != FK_OK)
        return fkt_sim__failure(sim, status, "reading the state");
    sim->state_stale = 0;
    return FK_OK;
}

fk_status fkt_sim_restore(fkt_sim *sim, uint64_t step, const double *position,
                          const double *velocity, const double *acceleration, const double *jerk,
                          const double *bound)
{
    const size_t bytes = 3 * sim->n * sizeof(double);
    sim->step = step;
    memcpy(sim->position, position, bytes);
    memcpy(sim->velocity, velocity, bytes);
    if (acceleration)
        memcpy(sim->acceleration, acceleration, bytes);
    if (sim->jerk && jerk)
        memcpy(sim->jerk, jerk, bytes);
    sim->potential_current = 0;
    if (sim->backend_integrator) {
        /* No forces to write back: computed again with the kept scale (see simulate.h). */
        sim->message[0] = '\0';
        sim->state_stale = 0;
        const fkt_sim_backend *backend = sim->config.backend;
        const fk_status status = backend->set_state(backend->user, position, velocity, step, bound);
        return status == FK_OK ? FK_OK : fkt_sim__failure(sim, status, "restoring the checkpoint");
    }
    if (!sim->integrator)
        return FK_OK;
    /* set_state evaluates the forces and chooses fixed64's scale from these positions; the
     * uninterrupted run had the scale of its last rescale and (Hermite) the forces at the
     * prediction: both come back from the checkpoint. */
    sim->message[0] = '\0';
    sim->state_stale = 0;
    fk_status status = fk_integrator_set_state(sim->integrator, position, velocity, step);
    if (status == FK_OK && bound)
        status = fk_eval_set_bound(sim->eval, bound[0], bound[1], 0);
    if (status == FK_OK)
        status = device_forces(sim, 1);
    return status == FK_OK ? FK_OK : fkt_sim__failure(sim, status, "restoring the checkpoint");
}

void fkt_sim_destroy(fkt_sim *sim)
{
    if (!sim)
        return;
    fk_integrator_destroy(sim->integrator); /* before its evaluation */
    if (sim->config.backend)                /* its evaluation is the backend's */
        sim->config.backend->destroy(sim->config.backend->user);
    else
        fk_eval_destroy(sim->eval);
    if (sim->position_pinned) /* the evaluation's, released with it */
        sim->position = NULL;
    double *arrays[] = {sim->position,          sim->velocity,      sim->mass,
                        sim->acceleration,      sim->jerk,          sim->output,
                        sim->potential,         sim->next_position, sim->next_velocity,
                        sim->next_acceleration, sim->next_jerk};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; ++i)
        free(arrays[i]);
    free(sim);
}

/* config.device: the library's integrator on the evaluation, its state the initial one. */
static fk_status create_integrator(fkt_sim *sim, const fkt_sim_config *config)
{
    fk_integrator_config ic = FK_CONFIG_INIT(fk_integrator_config);
    ic.kind = config->integrator == FKT_INTEGRATOR_LANGEVIN  ? FK_INTEGRATOR_LANGEVIN
              : config->integrator == FKT_INTEGRATOR_HERMITE ? FK_INTEGRATOR_HERMITE
                                                             : FK_INTEGRATOR_VERLET;
    ic.dt = config->dt;
    if (ic.kind == FK_INTEGRATOR_LANGEVIN) {
        ic.temperature = config->temperature;
        ic.friction = config->friction;
        ic.seed = config->seed;
    }
    /* masses NULL: the molecular kernels' unit masses; gravity takes the evaluation's */
    const fkt_sim_backend *backend = config->backend;
    fk_status status = FK_OK;
    if (backend) {
        status = backend->integrator_create(backend->user, &ic);
        sim->backend_integrator = status == FK_OK;
        if (status == FK_OK)
            status = backend->set_state(backend->user, sim->position, sim->velocity, 0, NULL);
        return status == FK_OK ? FK_OK : fkt_sim__failure(sim, status, "the device integrator");
    }
    status = fk_integrator_create(sim->eval, &ic, &sim->integrator);
    if (status == FK_OK)
        status = fk_integrator_set_state(sim->integrator, sim->position, sim->velocity, 0);
    return status == FK_OK ? FK_OK : fkt_sim__failure(sim, status, "the device integrator");
}

fk_status fkt_sim_create(fk_context *context, const fkt_sim_config *config,
                         const fkt_particle_set *particles, fkt_sim **out, char *error,
                         size_t error_size)
{
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!context || !config || !particles || !config->eval.kernel) {
        fk_format_message(error, error_size, "invalid arguments to fkt_sim_create");
        return FK_ERR_INVALID_ARGUMENT;
    }
    const fk_kernel_info *kernel = fk_kernel_find(config->eval.kernel);
    if (!kernel) {
        fk_format_message(error, error_size, "unknown kernel '%s'", config->eval.kernel);
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (!(config->dt > 0) || !isfinite(config->dt)) {
        fk_format_message(error, error_size, "the time step must be finite and > 0");
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (config->backend && config->auto_algorithm) {
        fk_format_message(error, error_size,
                          "the algorithm is not chosen by trial runs here: name one (or auto, the "
                          "library's built-in choice)");
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (config->device && config->backend && !config->backend->integrator_create) {
        fk_format_message(error, error_size,
                          "the device integrator runs on one evaluation (this backend has none)");
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (config->integrator == FKT_INTEGRATOR_LANGEVIN && !config->device) {
        fk_format_message(error, error_size,
                          "Langevin dynamics runs on the device integrator only");
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (config->integrator == FKT_INTEGRATOR_HERMITE && strcmp(kernel->name, "gaj") != 0) {
        fk_format_message(error, error_size,
                          "the Hermite integrator needs the jerk: kernel gaj, not %s",
                          kernel->name);
        return FK_ERR_INVALID_ARGUMENT;
    }
    const size_t n = particles->count;
    if (n == 0 || !particles->position || !particles->velocity) {
        fk_format_message(error, error_size, "%s",
                          n ? "the particles have no velocities" : "N = 0");
        return FK_ERR_INVALID_INPUT;
    }
    fkt_sim *sim = calloc(1, sizeof *sim);
    if (!sim)
        return FK_ERR_HOST_MEMORY;
    sim->parallel_min = FKT_SIM_PARALLEL_MIN;
    sim->context = context;
    sim->config = *config;
    sim->config.pair_table = NULL; /* not kept: the evaluation has copied them */
    sim->config.exclusions = NULL;
    sim->kernel = kernel;
    sim->gravity = is_gravity(kernel->name);
    sim->periodic = config->eval.box[0] > 0 && config->eval.box[1] > 0 && config->eval.box[2] > 0;
    sim->n = n;
    const size_t values = 3 * n;
    const int hermite = config->integrator == FKT_INTEGRATOR_HERMITE;
    sim->position = malloc(values * sizeof(double));
    sim->velocity = malloc(values * sizeof(double));
    sim->mass = malloc(n * sizeof(double));
    sim->acceleration = calloc(values, sizeof(double));
    sim->output = calloc(n * kernel->force_components, sizeof(double));
    sim->potential = calloc(n, sizeof(double));
    sim->next_position = calloc(values, sizeof(double));
    sim->next_velocity = calloc(values, sizeof(double));
    sim->next_acceleration = calloc(values, sizeof(double));
    if (hermite) {
        sim->jerk = calloc(values, sizeof(double));
        sim->next_jerk = calloc(values, sizeof(double));
    }
    if (!sim->position || !sim->velocity || !sim->mass || !sim->acceleration || !sim->output ||
        !sim->potential || !sim->next_position || !sim->next_velocity || !sim->next_acceleration ||
        (hermite && (!sim->jerk || !sim->next_jerk))) {
        fkt_sim_destroy(sim);
        fk_format_message(error, error_size, "out of host memory for %zu particles", n);
        return FK_ERR_HOST_MEMORY;
    }
    memcpy(sim->position, particles->position, values * sizeof(double));
    memcpy(sim->velocity, particles->velocity, values * sizeof(double));
    for (size_t i = 0; i < n; ++i) /* molecular kernels: the mass array holds charges */
        sim->mass[i] = sim->gravity && particles->mass ? particles->mass[i] : 1.0;
    fkt_sim__wrap_positions(sim, sim->position);

    fk_particles view = fkt_particle_set_view(particles);
    view.position = sim->position;
    fk_status status = FK_OK;
    if (config->auto_algorithm) {
        status = fkt_sim__choose_algorithm(sim, &view);
    } else {
        status = fkt_sim__make_eval(sim, config, (fk_algorithm)config->eval.algorithm, &view,
                                    &sim->eval);
        if (status != FK_OK)
            fkt_sim__failure(sim, status, "the initial forces");
    }
    /* A backend's integrator computes the initial forces itself (and takes its evaluation
     * over): one distributed evaluation less. */
    const int initial_forces = !(config->device && config->backend);
    if (status == FK_OK && initial_forces)
        status = fkt_sim__compute(sim, "the initial forces");
    if (status == FK_OK && initial_forces)
        status = fkt_sim__read_output(sim, sim->acceleration, sim->jerk, "the initial forces");
    if (status != FK_OK) {
        fk_format_message(error, error_size, "%s", sim->message);
        fkt_sim_destroy(sim);
        return status;
    }
    /* The auto trials updated the chosen evaluation with these same positions; either way its
     * last evaluation is at the current positions. */
    sim->potential_current = 1;
    /* Velocity Verlet steps the positions in place in the evaluation's pinned array: the updates
     * then take the library's cheapest path (see position_pinned). */
    if (config->device)
        status = create_integrator(sim, config);
    if (status != FK_OK) {
        fk_format_message(error, error_size, "%s", sim->message);
        fkt_sim_destroy(sim);
        return status;
    }
    double *pinned = NULL;
    if (!config->backend && !config->device && config->integrator != FKT_INTEGRATOR_HERMITE &&
        fk_eval_positions_buffer(sim->eval, &pinned) == FK_OK && pinned) {
        memcpy(pinned, sim->position, values * sizeof(double));
        free(sim->position);
        sim->position = pinned;
        sim->position_pinned = 1;
    }
    *out = sim;
    return FK_OK;
}
