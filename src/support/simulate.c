/* Time integration on top of the force evaluation: velocity Verlet, 4th-order Hermite, energy
 * bookkeeping and checkpoints (see simulate.h). */
#include "support/simulate.h"

#include "core/integrate/integrator.h" /* fk__integrator_forces: checkpoints of the device path */
#include "common/stats.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* Header-only (as src/core/programs/cache.c): the checkpoints' checksum. */
#define XXH_INLINE_ALL
#include <xxhash.h>

static void set_message(char *buffer, size_t size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
static void set_message(char *buffer, size_t size, const char *format, ...)
{
    if (!buffer || size == 0)
        return;
    va_list args;
    va_start(args, format);
    vsnprintf(buffer, size, format, args);
    va_end(args);
}

const char *fkt_integrator_name(fkt_integrator integrator)
{
    switch (integrator) {
    case FKT_INTEGRATOR_VERLET:
        return "verlet";
    case FKT_INTEGRATOR_HERMITE:
        return "hermite";
    case FKT_INTEGRATOR_LANGEVIN:
        return "langevin";
    }
    return NULL;
}

int fkt_integrator_find(const char *name, fkt_integrator *integrator)
{
    if (!name)
        return 0;
    if (strcmp(name, "verlet") == 0)
        *integrator = FKT_INTEGRATOR_VERLET;
    else if (strcmp(name, "hermite") == 0)
        *integrator = FKT_INTEGRATOR_HERMITE;
    else if (strcmp(name, "langevin") == 0)
        *integrator = FKT_INTEGRATOR_LANGEVIN;
    else
        return 0;
    return 1;
}

static int is_gravity(const char *kernel)
{
    return strcmp(kernel, "ga") == 0 || strcmp(kernel, "gaj") == 0;
}

static double monotonic_seconds(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* A library failure: what was being done and the context's detail (the caller prints the
 * status's name). */
static fk_status library_failure(fkt_sim *sim, fk_status status, const char *what)
{
    const fkt_sim_backend *backend = sim->config.backend;
    const char *detail =
        backend ? backend->last_error(backend->user) : fk_context_last_error(sim->context);
    set_message(sim->message, sizeof sim->message, "%s: %s", what,
                detail && *detail ? detail : fk_status_string(status));
    return status;
}

/* An element-wise loop over `count` values on OpenMP's threads when there are enough of them
 * (sim->parallel_min); each iteration writes only its own elements, so the result is the same
 * bits with any number of threads. Without OpenMP the pragma is not there. */
#ifdef _OPENMP
#define FK_SIM_PARALLEL_FOR _Pragma("omp parallel for schedule(static) if (parallel)")
#else
#define FK_SIM_PARALLEL_FOR
#endif
#define FK_SIM_PARALLEL(sim, count)                                                                \
    const int parallel = (count) >= (sim)->parallel_min;                                           \
    (void)parallel /* unused without OpenMP */

/* Keeps a coordinate in [0, L): a multiple of L off, in double, so the dynamics is unchanged.
 * A coordinate already in [0, L) is returned as it is, which is what the general path gives it
 * too (floor(x / L) is 0 there: x / L rounds below 1 for every x < L, since 1 - x / L >= ulp(L) /
 * L > 2^-53), without the division and floor that made this pass 28 ms per step at N = 1M. */
static double wrap(double x, double side)
{
    if (x >= 0 && x < side)
        return x;
    x -= side * floor(x / side);
    if (x >= side)
        x -= side;
    if (x < 0)
        x += side;
    return x;
}

static void wrap_positions(const fkt_sim *sim, double *position)
{
    if (!sim->periodic)
        return;
    const size_t values = 3 * sim->n;
    const double *box = sim->config.eval.box;
    FK_SIM_PARALLEL(sim, values);
    FK_SIM_PARALLEL_FOR
    for (size_t m = 0; m < values; ++m)
        position[m] = wrap(position[m], box[m % 3]);
}

/* Reads the last evaluation's output and splits it into accelerations (molecular: unit masses, so
 * a = F) and jerks, checking that every value is finite: NaN or Inf means a collapsed pair (too
 * large a time step) and must stop the run rather than poison it. */
static fk_status read_output(fkt_sim *sim, double *acceleration, double *jerk, const char *what)
{
    const double start = monotonic_seconds();
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
    sim->timing.read += monotonic_seconds() - start;
    if (status != FK_OK)
        return library_failure(sim, status, what);
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
            set_message(sim->message, sizeof sim->message,
                        "%s: the %s of particle %zu is %g: two particles came (nearly) on top "
                        "of each other; use a smaller --dt",
                        what, k < 3 ? "force" : "jerk", i, output[v]);
            return FK_ERR_INVALID_INPUT; /* the step was too large for these particles */
        }
    return FK_OK;
}

static fk_status compute(fkt_sim *sim, const char *what)
{
    double seconds = 0;
    const double start = monotonic_seconds();
    const fkt_sim_backend *backend = sim->config.backend;
    fk_status status =
        backend ? backend->compute(backend->user, &seconds) : fk_eval_compute(sim->eval, &seconds);
    sim->timing.compute += monotonic_seconds() - start;
    if (status != FK_OK)
        return library_failure(sim, status, what);
    if (seconds > 0)
        sim->device_seconds += seconds;
    sim->evaluations++;
    return FK_OK;
}

/* Forces at new positions (and velocities, which gaj's jerk needs). */
static fk_status update_positions(fkt_sim *sim, const double *position, const double *velocity)
{
    const fkt_sim_backend *backend = sim->config.backend;
    return backend ? backend->update(backend->user, position, velocity)
                   : fk_eval_update_positions(sim->eval, position, velocity);
}

static fk_status evaluate(fkt_sim *sim, const double *position, const double *velocity,
                          double *acceleration, double *jerk, const char *what)
{
    const double start = monotonic_seconds();
    fk_status status = update_positions(sim, position, velocity);
    sim->timing.update += monotonic_seconds() - start;
    if (status == FK_ERR_OVERFLOW) {
        /* The data-scaled accumulators' pre-pass saw a term that is not finite (the input was
         * checked, so a collapsed pair): the same event as a NaN force below, the same status. */
        library_failure(sim, status, what);
        size_t used = strlen(sim->message);
        set_message(sim->message + used, sizeof sim->message - used,
                    " (two particles came (nearly) on top of each other: use a smaller --dt)");
        return FK_ERR_INVALID_INPUT;
    }
    if (status != FK_OK)
        return library_failure(sim, status, what);
    status = compute(sim, what);
    if (status == FK_OK)
        status = read_output(sim, acceleration, jerk, what);
    return status;
}

static void swap(double **a, double **b)
{
    double *t = *a;
    *a = *b;
    *b = t;
}

/* Kick-drift-kick: v(t + dt/2) = v + a dt/2; x(t + dt) = x + v(t + dt/2) dt; a(t + dt);
 * v(t + dt) = v(t + dt/2) + a(t + dt) dt/2. */
static fk_status verlet_step(fkt_sim *sim)
{
    const double dt = sim->config.dt, half = 0.5 * dt;
    const size_t values = 3 * sim->n;
    /* in place in the evaluation's pinned array (each element reads its own old value first) */
    double *x = sim->position_pinned ? sim->position : sim->next_position, *v = sim->next_velocity;
    const double *x0 = sim->position, *v0 = sim->velocity, *a0 = sim->acceleration;
    FK_SIM_PARALLEL(sim, values);
    FK_SIM_PARALLEL_FOR
    for (size_t m = 0; m < values; ++m) {
        v[m] = v0[m] + half * a0[m];
        x[m] = x0[m] + dt * v[m];
    }
    wrap_positions(sim, x);
    char what[64];
    snprintf(what, sizeof what, "step %llu", (unsigned long long)(sim->step + 1));
    fk_status status = evaluate(sim, x, v, sim->next_acceleration, NULL, what);
    if (status != FK_OK)
        return status;
    const double *a = sim->next_acceleration;
    FK_SIM_PARALLEL_FOR
    for (size_t m = 0; m < values; ++m)
        v[m] += half * a[m];
    if (!sim->position_pinned)
        swap(&sim->position, &sim->next_position);
    swap(&sim->velocity, &sim->next_velocity);
    swap(&sim->acceleration, &sim->next_acceleration);
    sim->potential_current = 1;
    return FK_OK;
}

/* Hermite (Makino & Aarseth 1992), shared step, in the time-symmetric corrector form:
 *   predict  x_p = x + v dt + a dt^2/2 + j dt^3/6,  v_p = v + a dt + j dt^2/2
 *   evaluate a1, j1 at (x_p, v_p)
 *   correct  v1 = v + (a + a1) dt/2 + (j - j1) dt^2/12,  x1 = x + (v + v1) dt/2 + (a - a1) dt^2/12
 * which equals adding the interpolated snap and crackle terms to the prediction. The next step
 * starts from a1 and j1, evaluated at the predicted positions (PEC: one evaluation per step). */
static fk_status hermite_step(fkt_sim *sim)
{
    const double dt = sim->config.dt;
    const size_t values = 3 * sim->n;
    const double *x = sim->position, *v = sim->velocity, *a = sim->acceleration, *j = sim->jerk;
    double *xp = sim->next_position, *vp = sim->next_velocity;
    FK_SIM_PARALLEL(sim, values);
    FK_SIM_PARALLEL_FOR
    for (size_t m = 0; m < values; ++m) {
        xp[m] = x[m] + dt * (v[m] + dt * (0.5 * a[m] + dt * (j[m] / 6.0)));
        vp[m] = v[m] + dt * (a[m] + dt * (0.5 * j[m]));
    }
    wrap_positions(sim, xp);
    char what[64];
    snprintf(what, sizeof what, "step %llu", (unsigned long long)(sim->step + 1));
    fk_status status = evaluate(sim, xp, vp, sim->next_acceleration, sim->next_jerk, what);
    if (status != FK_OK)
        return status;
    const double *a1 = sim->next_acceleration, *j1 = sim->next_jerk;
    const double half = 0.5 * dt, twelfth = dt * dt / 12.0;
    FK_SIM_PARALLEL_FOR
    for (size_t m = 0; m < values; ++m) {
        const double v1 = v[m] + half * (a[m] + a1[m]) + twelfth * (j[m] - j1[m]);
        xp[m] = x[m] + half * (v[m] + v1) + twelfth * (a[m] - a1[m]);
        vp[m] = v1;
    }
    wrap_positions(sim, xp);
    swap(&sim->position, &sim->next_position);
    swap(&sim->velocity, &sim->next_velocity);
    swap(&sim->acceleration, &sim->next_acceleration);
    swap(&sim->jerk, &sim->next_jerk);
    sim->potential_current = 0; /* evaluated at the predicted positions */
    return FK_OK;
}

fk_status fkt_sim_step(fkt_sim *sim)
{
    if (!sim)
        return FK_ERR_INVALID_ARGUMENT;
    if (sim->integrator)
        return fkt_sim_advance(sim, 1);
    sim->message[0] = '\0';
    fk_status status =
        sim->config.integrator == FKT_INTEGRATOR_HERMITE ? hermite_step(sim) : verlet_step(sim);
    if (status == FK_OK)
        sim->step++;
    return status;
}

fk_status fkt_sim_advance(fkt_sim *sim, uint64_t steps)
{
    if (!sim)
        return FK_ERR_INVALID_ARGUMENT;
    if (!sim->integrator) {
        fk_status status = FK_OK;
        for (uint64_t s = 0; s < steps && status == FK_OK; ++s)
            status = fkt_sim_step(sim);
        return status;
    }
    sim->message[0] = '\0';
    if (steps == 0)
        return FK_OK;
    const fk_status status = fk_integrator_step(sim->integrator, steps);
    if (status != FK_OK)
        return library_failure(sim, status, "step");
    sim->step += steps;
    sim->state_stale = 1;
    return FK_OK;
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

fk_status fkt_sim_sync(fkt_sim *sim)
{
    if (!sim)
        return FK_ERR_INVALID_ARGUMENT;
    if (!sim->integrator || !sim->state_stale)
        return FK_OK;
    sim->message[0] = '\0';
    uint64_t step = 0;
    fk_status status =
        fk_integrator_get_state(sim->integrator, sim->position, sim->velocity, &step);
    if (status == FK_OK)
        status = device_forces(sim, 0);
    if (status != FK_OK)
        return library_failure(sim, status, "reading the state");
    sim->state_stale = 0;
    return FK_OK;
}

fk_status fkt_sim_energy(fkt_sim *sim, double *kinetic, double *potential)
{
    if (!sim || !kinetic || !potential)
        return FK_ERR_INVALID_ARGUMENT;
    sim->message[0] = '\0';
    fk_status status = FK_OK;
    if (sim->integrator) {
        status = fk_integrator_energies(sim->integrator, kinetic, potential);
        return status == FK_OK ? FK_OK : library_failure(sim, status, "energy");
    }
    if (!sim->potential_current) {
        status = update_positions(sim, sim->position, sim->velocity);
        if (status != FK_OK)
            return library_failure(sim, status, "energy");
        status = compute(sim, "energy");
        if (status != FK_OK)
            return status;
        sim->potential_current = 1;
    }
    const fkt_sim_backend *backend = sim->config.backend;
    status = backend ? backend->read_potentials(backend->user, sim->potential)
                     : fk_eval_read_potentials(sim->eval, sim->potential);
    if (status != FK_OK)
        return library_failure(sim, status, "energy");
    double k = 0, u = 0;
    for (size_t i = 0; i < sim->n; ++i) {
        const double *v = sim->velocity + 3 * i;
        k += 0.5 * sim->mass[i] * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        /* gravity: phi_i is the potential per unit mass and counts each pair from both sides;
         * the molecular kernels already give 1/2 sum_j U_ij */
        u += sim->gravity ? 0.5 * sim->mass[i] * sim->potential[i] : sim->potential[i];
    }
    *kinetic = k;
    *potential = u;
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
    memcpy(sim->acceleration, acceleration, bytes);
    if (sim->jerk && jerk)
        memcpy(sim->jerk, jerk, bytes);
    sim->potential_current = 0;
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
    return status == FK_OK ? FK_OK : library_failure(sim, status, "restoring the checkpoint");
}

fk_algorithm fkt_sim_algorithm(const fkt_sim *sim)
{
    fk_variant variant; /* the loop that runs: FK_ALGORITHM_AUTO's choice too */
    if (sim->eval && fk_eval_get_variant(sim->eval, &variant) == FK_OK)
        return (fk_algorithm)variant.algorithm;
    return (fk_algorithm)sim->config.eval.algorithm;
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

/* An evaluation of the configured kernel with the given algorithm, its particles uploaded. */
static fk_status make_eval(fkt_sim *sim, const fkt_sim_config *config, fk_algorithm algorithm,
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
        const double start = monotonic_seconds();
        status = fk_eval_update_positions(eval, sim->position, sim->velocity);
        if (status == FK_OK)
            status = fk_eval_compute(eval, NULL);
        if (status == FK_OK)
            status = fk_eval_read_forces(eval, sim->output);
        times[r] = monotonic_seconds() - start;
    }
    *seconds = fk__median(times, REPS);
    return status;
}

/* auto_algorithm: all-pairs is the baseline (a failure there is the run's failure); the others
 * are tried when the library has them for this kernel and skipped with a note otherwise. */
static fk_status choose_algorithm(fkt_sim *sim, const fk_particles *view)
{
    static const fk_algorithm candidates[] = {FK_ALGORITHM_ALL_PAIRS, FK_ALGORITHM_SYMMETRIC,
                                              FK_ALGORITHM_CELLS, FK_ALGORITHM_NEIGHBORS};
    double best_seconds = HUGE_VAL;
    for (size_t c = 0; c < sizeof candidates / sizeof candidates[0]; ++c) {
        fkt_sim_trial *trial = &sim->trials[sim->trial_count++];
        memset(trial, 0, sizeof *trial);
        trial->algorithm = candidates[c];
        trial->seconds_per_step = NAN;
        fk_eval *eval = NULL;
        fk_status status = make_eval(sim, &sim->config, candidates[c], view, &eval);
        double seconds = NAN;
        if (status == FK_OK)
            status = time_eval(sim, eval, &seconds);
        trial->status = status;
        if (status != FK_OK) {
            snprintf(trial->note, sizeof trial->note, "%s", fk_context_last_error(sim->context));
            fk_eval_destroy(eval);
            if (candidates[c] == FK_ALGORITHM_ALL_PAIRS)
                return library_failure(sim, status, "all-pairs evaluation");
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
    fk_status status = fk_integrator_create(sim->eval, &ic, &sim->integrator);
    if (status == FK_OK)
        status = fk_integrator_set_state(sim->integrator, sim->position, sim->velocity, 0);
    return status == FK_OK ? FK_OK : library_failure(sim, status, "the device integrator");
}

fk_status fkt_sim_create(fk_context *context, const fkt_sim_config *config,
                         const fkt_particle_set *particles, fkt_sim **out, char *error,
                         size_t error_size)
{
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    if (!context || !config || !particles || !config->eval.kernel) {
        set_message(error, error_size, "invalid arguments to fkt_sim_create");
        return FK_ERR_INVALID_ARGUMENT;
    }
    const fk_kernel_info *kernel = fk_kernel_find(config->eval.kernel);
    if (!kernel) {
        set_message(error, error_size, "unknown kernel '%s'", config->eval.kernel);
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (!(config->dt > 0) || !isfinite(config->dt)) {
        set_message(error, error_size, "the time step must be finite and > 0");
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (config->backend && config->auto_algorithm) {
        set_message(error, error_size,
                    "the algorithm is not chosen by trial runs here: name one (or auto, the "
                    "library's built-in choice)");
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (config->device && config->backend) {
        set_message(error, error_size, "the device integrator runs on one evaluation (no backend)");
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (config->integrator == FKT_INTEGRATOR_LANGEVIN && !config->device) {
        set_message(error, error_size, "Langevin dynamics runs on the device integrator only");
        return FK_ERR_INVALID_ARGUMENT;
    }
    if (config->integrator == FKT_INTEGRATOR_HERMITE && strcmp(kernel->name, "gaj") != 0) {
        set_message(error, error_size, "the Hermite integrator needs the jerk: kernel gaj, not %s",
                    kernel->name);
        return FK_ERR_INVALID_ARGUMENT;
    }
    const size_t n = particles->count;
    if (n == 0 || !particles->position || !particles->velocity) {
        set_message(error, error_size, "%s", n ? "the particles have no velocities" : "N = 0");
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
        set_message(error, error_size, "out of host memory for %zu particles", n);
        return FK_ERR_HOST_MEMORY;
    }
    memcpy(sim->position, particles->position, values * sizeof(double));
    memcpy(sim->velocity, particles->velocity, values * sizeof(double));
    for (size_t i = 0; i < n; ++i) /* molecular kernels: the mass array holds charges */
        sim->mass[i] = sim->gravity && particles->mass ? particles->mass[i] : 1.0;
    wrap_positions(sim, sim->position);

    fk_particles view = fkt_particle_set_view(particles);
    view.position = sim->position;
    fk_status status = FK_OK;
    if (config->auto_algorithm) {
        status = choose_algorithm(sim, &view);
    } else {
        status = make_eval(sim, config, (fk_algorithm)config->eval.algorithm, &view, &sim->eval);
        if (status != FK_OK)
            library_failure(sim, status, "the initial forces");
    }
    if (status == FK_OK)
        status = compute(sim, "the initial forces");
    if (status == FK_OK)
        status = read_output(sim, sim->acceleration, sim->jerk, "the initial forces");
    if (status != FK_OK) {
        set_message(error, error_size, "%s", sim->message);
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
        set_message(error, error_size, "%s", sim->message);
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

/* ---------------------------------------------------------------------------------------------- */
/* Fingerprints and energy analysis */

static uint64_t fnv1a(uint64_t hash, const void *data, size_t size)
{
    const unsigned char *bytes = data;
    for (size_t i = 0; i < size; ++i) {
        hash ^= bytes[i];
        hash *= 0x100000001b3ull;
    }
    return hash;
}

uint64_t fkt_sim_fingerprint(const fkt_particle_set *particles, const double box[3],
                             const fk_pair_table *table, unsigned pair_parameters,
                             const size_t *exclusions, size_t exclusion_count)
{
    uint64_t hash = 0xcbf29ce484222325ull;
    const uint64_t count = particles->count;
    hash = fnv1a(hash, &count, sizeof count);
    if (particles->position)
        hash = fnv1a(hash, particles->position, 3 * count * sizeof(double));
    if (particles->velocity)
        hash = fnv1a(hash, particles->velocity, 3 * count * sizeof(double));
    if (particles->mass)
        hash = fnv1a(hash, particles->mass, count * sizeof(double));
    if (particles->type)
        hash = fnv1a(hash, particles->type, count * sizeof(int));
    if (box)
        hash = fnv1a(hash, box, 3 * sizeof(double));
    if (table && table->types && table->values) {
        const uint64_t types = table->types, pairs = table->types * table->types;
        hash = fnv1a(hash, &types, sizeof types);
        hash = fnv1a(hash, table->values, pairs * pair_parameters * sizeof(double));
        if (table->present)
            hash = fnv1a(hash, table->present, pairs);
    }
    if (exclusion_count)
        hash = fnv1a(hash, exclusions, 2 * exclusion_count * sizeof *exclusions);
    return hash;
}

double fkt_sim_energy_slope(const fkt_sim_sample *samples, size_t count, double dt)
{
    if (count < 2)
        return NAN;
    /* Centred sums: the energies are all close to E0, so subtracting the means first keeps the
     * fit's rounding far below the drift being measured. */
    double mean_t = 0, mean_e = 0;
    for (size_t s = 0; s < count; ++s) {
        mean_t += (double)samples[s].step * dt;
        mean_e += samples[s].kinetic + samples[s].potential;
    }
    mean_t /= (double)count;
    mean_e /= (double)count;
    double stt = 0, ste = 0;
    for (size_t s = 0; s < count; ++s) {
        const double t = (double)samples[s].step * dt - mean_t;
        stt += t * t;
        ste += t * (samples[s].kinetic + samples[s].potential - mean_e);
    }
    return stt > 0 ? ste / stt : NAN;
}

/* ---------------------------------------------------------------------------------------------- */
/* Checkpoints */

/* The writer's output and the checksum of everything it wrote (the file's bytes: it writes "\n"
 * line ends, the canonical form). */
typedef struct checksum_writer {
    FILE *file;
    XXH3_state_t hash;
    int failed;
} checksum_writer;

static void emit(checksum_writer *w, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void emit(checksum_writer *w, const char *format, ...)
{
    char text[1024]; /* the longest piece is an option line: 32 + 480 bytes */
    va_list args;
    va_start(args, format);
    const int length = vsnprintf(text, sizeof text, format, args);
    va_end(args);
    if (length < 0 || (size_t)length >= sizeof text) {
        w->failed = 1;
        return;
    }
    XXH3_64bits_update(&w->hash, text, (size_t)length);
    if (fwrite(text, 1, (size_t)length, w->file) != (size_t)length)
        w->failed = 1;
}

static int write_checkpoint_body(FILE *file, const fkt_sim *sim, const fkt_sim_option *options,
                                 size_t option_count, const fkt_sim_sample *samples,
                                 size_t sample_count)
{
    const int has_jerk = sim->jerk != NULL;
    checksum_writer w = {.file = file};
    XXH3_64bits_reset(&w.hash);
    emit(&w, "forcekit-checkpoint %d\n", FKT_SIM_CHECKPOINT_VERSION);
    emit(&w, "# forcekit simulate state; continue with --restart FILE and the same options. "
             "Numbers are C99 hexadecimal floats (exact). The last line is the XXH3-64 of every "
             "line before it.\n");
    for (size_t o = 0; o < option_count; ++o) {
        char value[sizeof options[o].value];
        size_t k = 0;
        for (const char *c = options[o].value; *c && k + 1 < sizeof value; ++c) /* one line */
            value[k++] = *c == '\n' || *c == '\r' ? ' ' : *c;
        value[k] = '\0';
        emit(&w, "option %s %s\n", options[o].key, value);
    }
    emit(&w, "step %llu\nn %zu\ncolumns %d\nsamples %zu\n", (unsigned long long)sim->step, sim->n,
         has_jerk ? 12 : 9, sample_count);
    for (size_t s = 0; s < sample_count; ++s)
        emit(&w, "%llu %a %a\n", (unsigned long long)samples[s].step, samples[s].kinetic,
             samples[s].potential);
    emit(&w, "particles\n");
    for (size_t i = 0; i < sim->n && !w.failed; ++i) {
        const double *rows[] = {sim->position, sim->velocity, sim->acceleration, sim->jerk};
        for (int r = 0; r < (has_jerk ? 4 : 3); ++r)
            for (int k = 0; k < 3; ++k)
                emit(&w, r == 0 && k == 0 ? "%a" : " %a", rows[r][3 * i + (size_t)k]);
        emit(&w, "\n");
    }
    emit(&w, "end\n");
    if (w.failed)
        return -1;
    return fprintf(file, "checksum XXH3-64 %016llx\n",
                   (unsigned long long)XXH3_64bits_digest(&w.hash)) < 0
               ? -1
               : 0;
}

/* A line's canonical form for the checksum: its text without the terminator ("\n", or "\r\n" from
 * a CRLF conversion), then "\n". */
static void hash_line(XXH3_state_t *hash, const char *text, size_t length)
{
    if (length > 0 && text[length - 1] == '\n')
        --length;
    if (length > 0 && text[length - 1] == '\r')
        --length;
    XXH3_64bits_update(hash, text, length);
    XXH3_64bits_update(hash, "\n", 1);
}

uint64_t fkt_sim_checkpoint_checksum(const char *body, size_t size)
{
    XXH3_state_t hash;
    XXH3_64bits_reset(&hash);
    size_t at = 0;
    while (at < size) {
        const char *newline = memchr(body + at, '\n', size - at);
        const size_t length = newline ? (size_t)(newline - (body + at)) + 1 : size - at;
        hash_line(&hash, body + at, length);
        at += length;
    }
    return XXH3_64bits_digest(&hash);
}

/* "checksum XXH3-64 " and 16 hexadecimal digits. */
static int parse_checksum_line(const char *line, uint64_t *value)
{
    static const char prefix[] = "checksum XXH3-64 ";
    if (strncmp(line, prefix, sizeof prefix - 1) != 0)
        return 0;
    const char *digits = line + sizeof prefix - 1;
    uint64_t v = 0;
    for (int k = 0; k < 16; ++k) {
        const char c = digits[k];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return 0;
        v = v << 4 | (uint64_t)d;
    }
    if (digits[16] != '\0')
        return 0;
    *value = v;
    return 1;
}

typedef struct checkpoint_parts {
    const fkt_sim *sim;
    const fkt_sim_option *options;
    size_t option_count;
    const fkt_sim_sample *samples;
    size_t sample_count;
} checkpoint_parts;

static int write_checkpoint_to(FILE *file, const void *context)
{
    const checkpoint_parts *parts = context;
    return write_checkpoint_body(file, parts->sim, parts->options, parts->option_count,
                                 parts->samples, parts->sample_count);
}

fk_status fkt_sim_checkpoint_write(const char *path, const fkt_sim *sim,
                                   const fkt_sim_option *options, size_t option_count,
                                   const fkt_sim_sample *samples, size_t sample_count, char *error,
                                   size_t error_size)
{
    if (!path || !*path || !sim) {
        set_message(error, error_size, "invalid arguments to fkt_sim_checkpoint_write");
        return FK_ERR_INVALID_ARGUMENT;
    }
    const checkpoint_parts parts = {sim, options, option_count, samples, sample_count};
    return fkt_io_write_atomic(path, write_checkpoint_to, &parts, error, error_size);
}

void fkt_sim_checkpoint_free(fkt_sim_checkpoint *checkpoint)
{
    if (!checkpoint)
        return;
    free(checkpoint->position);
    free(checkpoint->velocity);
    free(checkpoint->acceleration);
    free(checkpoint->jerk);
    free(checkpoint->samples);
    memset(checkpoint, 0, sizeof *checkpoint);
}

const char *fkt_sim_checkpoint_option(const fkt_sim_checkpoint *checkpoint, const char *key)
{
    for (size_t o = 0; o < checkpoint->option_count; ++o)
        if (strcmp(checkpoint->options[o].key, key) == 0)
            return checkpoint->options[o].value;
    return NULL;
}

typedef struct reader {
    FILE *file;
    const char *path;
    char *line;
    size_t capacity;
    size_t number;
    int too_long; /* a line beyond FKT_IO_MAX_LINE: input too large */
    int hashing;  /* the lines read go into hash (all but the checksum line) */
    XXH3_state_t hash;
} reader;

/* The next line without its line end ("\n" or "\r\n": a CRLF copy reads the same); NULL at the
 * end of the file. */
static char *next_line(reader *r)
{
    long length = fkt_io_getline(&r->line, &r->capacity, r->file);
    if (length == -2)
        r->too_long = 1;
    if (length < 0)
        return NULL;
    r->number++;
    if (r->hashing)
        hash_line(&r->hash, r->line, (size_t)length);
    if (length > 0 && r->line[length - 1] == '\n')
        r->line[--length] = '\0';
    if (length > 0 && r->line[length - 1] == '\r')
        r->line[--length] = '\0';
    return r->line;
}

/* The first pass: the checksum of every line but the last, against the last line's
 * ("checksum XXH3-64 H"), before anything else in the file is believed. Returns the problem, or
 * NULL with *stored the checksum; detail holds the text of a problem made here. */
static const char *verify_checksum(reader *r, uint64_t *stored, char *detail, size_t size)
{
    XXH3_state_t hash;
    XXH3_64bits_reset(&hash);
    char *held = NULL; /* the line before the current one, hashed once another follows it */
    size_t held_capacity = 0;
    long held_length = -1, length = 0;
    for (;;) {
        length = fkt_io_getline(&r->line, &r->capacity, r->file);
        if (length == -2)
            r->too_long = 1;
        if (length < 0)
            break;
        if (held_length >= 0)
            hash_line(&hash, held, (size_t)held_length);
        char *swap_line = held;
        size_t swap_capacity = held_capacity;
        held = r->line;
        held_capacity = r->capacity;
        held_length = length;
        r->line = swap_line;
        r->capacity = swap_capacity;
    }
    const char *problem = NULL;
    if (r->too_long || ferror(r->file)) {
        problem = ""; /* reported by the caller */
    } else if (length == -3) {
        snprintf(detail, size, "cannot read checkpoint %s: out of memory", r->path);
        problem = detail;
    } else {
        if (held_length > 0 && held[held_length - 1] == '\n')
            held[--held_length] = '\0';
        if (held_length > 0 && held[held_length - 1] == '\r')
            held[--held_length] = '\0';
        const uint64_t computed = XXH3_64bits_digest(&hash);
        if (held_length < 0 || !parse_checksum_line(held, stored)) {
            snprintf(detail, size,
                     "checkpoint %s is damaged: its last line is not 'checksum XXH3-64 "
                     "<16 hex digits>' (truncated or edited?)",
                     r->path);
            problem = detail;
        } else if (computed != *stored) {
            snprintf(detail, size,
                     "checkpoint %s is damaged: checksum mismatch (its content's XXH3-64 is "
                     "%016llx, its last line says %016llx: the file was changed after it was "
                     "written)",
                     r->path, (unsigned long long)computed, (unsigned long long)*stored);
            problem = detail;
        }
    }
    free(held);
    return problem;
}

/* "KEY VALUE" with an unsigned integer value. */
static int parse_count_line(const char *line, const char *key, unsigned long long *value)
{
    const size_t length = strlen(key);
    if (strncmp(line, key, length) != 0 || line[length] != ' ')
        return 0;
    const char *start = line + length + 1;
    if (*start < '0' || *start > '9')
        return 0;
    char *end = NULL;
    errno = 0;
    *value = strtoull(start, &end, 10);
    return errno == 0 && *end == '\0';
}

/* count numbers separated by spaces (strtod reads %a's hexadecimal floats exactly). */
static int parse_numbers(const char *text, double *values, size_t count)
{
    const char *cursor = text;
    for (size_t c = 0; c < count; ++c) {
        char *end = NULL;
        errno = 0;
        values[c] = strtod(cursor, &end);
        if (end == cursor || errno == ERANGE || !isfinite(values[c]))
            return 0;
        cursor = end;
    }
    while (*cursor == ' ')
        ++cursor;
    return *cursor == '\0';
}

/* Room for entry index in an array whose final length is count: grown by doubling. */
static int grow_array(void **array, size_t index, size_t count, size_t element, size_t *capacity)
{
    if (index < *capacity)
        return 1;
    size_t grown = *capacity ? 2 * *capacity : 1024;
    if (grown > count)
        grown = count;
    if (grown <= index || grown > SIZE_MAX / element)
        return 0;
    void *bigger = realloc(*array, grown * element);
    if (!bigger)
        return 0;
    *array = bigger;
    *capacity = grown;
    return 1;
}

static int grow_samples(fkt_sim_checkpoint *checkpoint, size_t index, size_t *capacity)
{
    void *samples = checkpoint->samples;
    int ok = grow_array(&samples, index, checkpoint->sample_count, sizeof *checkpoint->samples,
                        capacity);
    checkpoint->samples = samples;
    return ok;
}

static int grow_particles(fkt_sim_checkpoint *checkpoint, size_t index, size_t *capacity)
{
    double **arrays[] = {&checkpoint->position, &checkpoint->velocity, &checkpoint->acceleration,
                         &checkpoint->jerk};
    const int count = checkpoint->has_jerk ? 4 : 3;
    if (index < *capacity)
        return 1;
    size_t capacities[4];
    for (int a = 0; a < count; ++a) {
        capacities[a] = *capacity;
        void *array = *arrays[a];
        int ok = grow_array(&array, index, checkpoint->n, 3 * sizeof(double), &capacities[a]);
        *arrays[a] = array;
        if (!ok)
            return 0;
    }
    *capacity = capacities[0];
    return 1;
}

fk_status fkt_sim_checkpoint_read(const char *path, fkt_sim_checkpoint *checkpoint, char *error,
                                  size_t error_size)
{
    memset(checkpoint, 0, sizeof *checkpoint);
    reader r = {.path = path};
    r.file = fopen(path, "r");
    if (!r.file) {
        set_message(error, error_size, "cannot open checkpoint %s: %s", path, strerror(errno));
        return FK_ERR_IO;
    }
    const char *problem = NULL;
    char detail[160] = "";
    /* A whole-file refusal (a damaged file) is reported without a line number. */
    char whole[4608] = ""; /* a path (up to PATH_MAX) and the reason */
    uint64_t stored = 0;
    char *line = next_line(&r);
    int version = 0;
    char tail = 0;
    if (!line || sscanf(line, "forcekit-checkpoint %d%c", &version, &tail) != 1) {
        problem = "not a forcekit checkpoint (the first line must be 'forcekit-checkpoint "
                  "VERSION')";
        goto done;
    }
    if (version == 1) {
        /* Format 1 had no checksum, and was written only by development versions before 0.2.0
         * (checkpoints arrived with 0.2.0): a restart that cannot be checked is refused rather
         * than trusted, and the run it came from can be repeated from its inputs. */
        problem = "checkpoint format version 1 has no checksum and is no longer read (it came "
                  "only from development versions before 0.2.0: repeat that run); this "
                  "forcekit reads 2";
        goto done;
    }
    if (version != FKT_SIM_CHECKPOINT_VERSION) {
        snprintf(detail, sizeof detail, "checkpoint format version %d; this forcekit reads %d",
                 version, FKT_SIM_CHECKPOINT_VERSION);
        problem = detail;
        goto done;
    }
    /* The checksum first, over the whole file; then the content, hashed again as it is parsed
     * (the bytes parsed are the bytes checked, whatever happened to the file in between). */
    if (fseek(r.file, 0, SEEK_SET) != 0) {
        snprintf(whole, sizeof whole,
                 "cannot read checkpoint %s twice (the checksum, then the content): it must be "
                 "a regular file",
                 path);
        goto done;
    }
    problem = verify_checksum(&r, &stored, whole, sizeof whole);
    if (problem) {
        problem = NULL; /* in whole, or r.too_long / a read error */
        goto done;
    }
    if (fseek(r.file, 0, SEEK_SET) != 0) {
        snprintf(whole, sizeof whole, "cannot read checkpoint %s again", path);
        goto done;
    }
    r.number = 0;
    r.hashing = 1;
    XXH3_64bits_reset(&r.hash);
    line = next_line(&r); /* the version line, read above */
    unsigned long long value = 0;
    /* options and comments, up to "step" */
    for (;;) {
        line = next_line(&r);
        if (!line) {
            problem = "truncated: no 'step' line";
            goto done;
        }
        if (line[0] == '#' || line[0] == '\0')
            continue;
        if (strncmp(line, "option ", 7) == 0) {
            const char *key = line + 7, *space = strchr(key, ' ');
            const size_t key_length = space ? (size_t)(space - key) : strlen(key);
            if (key_length == 0 || key_length >= sizeof checkpoint->options[0].key ||
                checkpoint->option_count == FKT_SIM_MAX_OPTIONS) {
                problem = "malformed or too many options";
                goto done;
            }
            fkt_sim_option *option = &checkpoint->options[checkpoint->option_count++];
            memcpy(option->key, key, key_length);
            option->key[key_length] = '\0';
            snprintf(option->value, sizeof option->value, "%s", space ? space + 1 : "");
            continue;
        }
        if (!parse_count_line(line, "step", &value)) {
            problem = "expected 'step S'";
            goto done;
        }
        checkpoint->step = value;
        break;
    }
    line = next_line(&r);
    if (!line || !parse_count_line(line, "n", &value) || value == 0 || value > (1ull << 30)) {
        problem = "expected 'n N' with 0 < N <= 2^30";
        goto done;
    }
    checkpoint->n = (size_t)value;
    line = next_line(&r);
    if (!line || !parse_count_line(line, "columns", &value) || (value != 9 && value != 12)) {
        problem = "expected 'columns 9' or 'columns 12'";
        goto done;
    }
    checkpoint->has_jerk = value == 12;
    const size_t columns = (size_t)value;
    line = next_line(&r);
    if (!line || !parse_count_line(line, "samples", &value) || value > (1ull << 32)) {
        problem = "expected 'samples M'";
        goto done;
    }
    checkpoint->sample_count = (size_t)value;
    const size_t n = checkpoint->n;
    /* The header's counts drive no allocation before the data is there (a 71-byte file asked
     * for 24.7 GB): the arrays grow as the lines arrive, never beyond the counts. */
    size_t sample_capacity = 0, particle_capacity = 0;
    for (size_t s = 0; s < checkpoint->sample_count; ++s) {
        if (!grow_samples(checkpoint, s, &sample_capacity)) {
            problem = "out of memory";
            goto done;
        }
        line = next_line(&r);
        char *end = NULL;
        double energies[2];
        if (!line || line[0] < '0' || line[0] > '9') {
            problem = "truncated or malformed energy sample";
            goto done;
        }
        errno = 0;
        checkpoint->samples[s].step = strtoull(line, &end, 10);
        if (errno || *end != ' ' || !parse_numbers(end, energies, 2)) {
            problem = "malformed energy sample (expected: step kinetic potential)";
            goto done;
        }
        checkpoint->samples[s].kinetic = energies[0];
        checkpoint->samples[s].potential = energies[1];
    }
    line = next_line(&r);
    if (!line || strcmp(line, "particles") != 0) {
        problem = "expected 'particles'";
        goto done;
    }
    for (size_t i = 0; i < n; ++i) {
        double row[12];
        if (!grow_particles(checkpoint, i, &particle_capacity)) {
            problem = "out of memory";
            goto done;
        }
        line = next_line(&r);
        if (!line) {
            problem = "truncated: fewer particle lines than n";
            goto done;
        }
        if (!parse_numbers(line, row, columns)) {
            snprintf(detail, sizeof detail, "expected %zu finite numbers", columns);
            problem = detail;
            goto done;
        }
        for (int k = 0; k < 3; ++k) {
            checkpoint->position[3 * i + (size_t)k] = row[k];
            checkpoint->velocity[3 * i + (size_t)k] = row[3 + k];
            checkpoint->acceleration[3 * i + (size_t)k] = row[6 + k];
            if (checkpoint->jerk)
                checkpoint->jerk[3 * i + (size_t)k] = row[9 + k];
        }
    }
    line = next_line(&r);
    if (!line || strcmp(line, "end") != 0) {
        problem = "truncated: no 'end' line after the particles";
        goto done;
    }
    r.hashing = 0; /* the checksum line */
    uint64_t again = 0;
    line = next_line(&r);
    if (!line || !parse_checksum_line(line, &again) || again != stored ||
        XXH3_64bits_digest(&r.hash) != stored) {
        snprintf(whole, sizeof whole,
                 "checkpoint %s is damaged: checksum mismatch (the file changed while it was "
                 "read, or holds text after 'end')",
                 path);
        goto done;
    }
    if (next_line(&r)) {
        problem = "text after the checksum line";
        goto done;
    }
done:;
    if (r.too_long) {
        problem = "input too large: a line longer than FKT_IO_MAX_LINE (1 MiB)";
        whole[0] = '\0';
    }
    const int read_error = ferror(r.file);
    fclose(r.file);
    free(r.line);
    if (read_error) {
        set_message(error, error_size, "cannot read checkpoint %s", path);
        fkt_sim_checkpoint_free(checkpoint);
        return FK_ERR_IO;
    }
    if (whole[0]) {
        set_message(error, error_size, "%s", whole);
        fkt_sim_checkpoint_free(checkpoint);
        return FK_ERR_PARSE;
    }
    if (problem) {
        set_message(error, error_size, "%s:%zu: %s", path, r.number, problem);
        fkt_sim_checkpoint_free(checkpoint);
        return FK_ERR_PARSE;
    }
    return FK_OK;
}
