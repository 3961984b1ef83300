/*
 * A time-stepping loop on forcekit's fast path: a cold cluster of N bodies integrated with
 * kick-drift-kick leapfrog. Each step the new positions are written straight into the
 * evaluation's pinned array (fk_eval_positions_buffer: for large N the device converts them),
 * the forces are computed asynchronously while the host does the first half of its bookkeeping,
 * and read in place (fk_eval_results_view: no copy). Exits 1 when the energy drifts by more than
 * 1e-3 over the run.
 *
 *   cc step_loop.c $(pkg-config --cflags --libs forcekit) -lm -o step_loop
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <forcekit/forcekit.h>

enum { N = 2000, STEPS = 200 };
static const double EPS = 0.05, DT = 1e-3;

static int fail(fk_context *context, fk_status status)
{
    fprintf(stderr, "forcekit: %s: %s\n", fk_status_string(status),
            context ? fk_context_last_error(context) : "");
    return 1;
}

/* Kinetic plus potential energy (the potentials of the last compute: sum m_i phi_i / 2). */
static double energy(const double *velocity, const double *mass, const double *potential)
{
    double e = 0;
    for (int i = 0; i < N; ++i)
        e += 0.5 * mass[i] *
                 (velocity[3 * i] * velocity[3 * i] + velocity[3 * i + 1] * velocity[3 * i + 1] +
                  velocity[3 * i + 2] * velocity[3 * i + 2]) +
             0.5 * mass[i] * potential[i];
    return e;
}

int main(void)
{
    static double position[3 * N], velocity[3 * N], mass[N];
    unsigned long long state = 2026;
    for (int i = 0; i < N; ++i) {
        for (int k = 0; k < 3; ++k) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            position[3 * i + k] = (double)(state >> 11) / 9007199254740992.0 - 0.5;
        }
        mass[i] = 1.0 / N;
    }

    /* The default context records device times (printed below). A code that does not need them
     * sets fk_context_config.device_timing = FK_DEVICE_TIMING_OFF: on NVIDIA's driver the
     * profiled queue costs each step tens of microseconds of host time (docs/performance.md). */
    fk_context *context = NULL;
    fk_status status = fk_context_create(NULL, &context);
    if (status != FK_OK)
        return fail(context, status);
    fk_eval_config config = {.struct_size = sizeof(fk_eval_config),
                             .kernel = "ga",
                             .accum = "float",
                             .eps = EPS,
                             .potential = 1};
    fk_eval *eval = NULL;
    const fk_particles particles = {.count = N, .position = position, .mass = mass};
    double *pinned = NULL; /* where the integrator writes positions */
    const void *forces_view = NULL, *potentials_view = NULL;
    status = fk_eval_create(context, &config, &eval);
    if (status == FK_OK)
        status = fk_eval_set_particles(eval, &particles);
    if (status == FK_OK)
        status = fk_eval_positions_buffer(eval, &pinned);
    if (status == FK_OK)
        status = fk_eval_compute(eval, NULL);
    if (status == FK_OK)
        status = fk_eval_results_view(eval, &forces_view, &potentials_view);
    if (status != FK_OK) {
        fk_eval_destroy(eval);
        fk_context_destroy(context);
        return fail(context, status);
    }
    memcpy(pinned, position, sizeof position);
    const double *acceleration = forces_view;
    const double e0 = energy(velocity, mass, potentials_view);
    double device_seconds = 0;
    for (int step = 0; step < STEPS && status == FK_OK; ++step) {
        for (int v = 0; v < 3 * N; ++v) { /* kick, drift: straight into the pinned array */
            velocity[v] += 0.5 * DT * acceleration[v];
            pinned[v] += DT * velocity[v];
        }
        status = fk_eval_update_positions(eval, pinned, NULL);
        if (status == FK_OK)
            status = fk_eval_compute_async(eval);
        /* the device works; host work that does not need the new forces would go here */
        double seconds = 0;
        if (status == FK_OK)
            status = fk_eval_wait(eval, &seconds);
        if (status == FK_OK)
            status = fk_eval_results_view(eval, &forces_view, &potentials_view);
        acceleration = forces_view;
        for (int v = 0; status == FK_OK && v < 3 * N; ++v) /* kick */
            velocity[v] += 0.5 * DT * acceleration[v];
        device_seconds += seconds > 0 ? seconds : 0;
    }
    if (status != FK_OK) {
        fk_eval_destroy(eval);
        fk_context_destroy(context);
        return fail(context, status);
    }
    const double drift = fabs(energy(velocity, mass, potentials_view) - e0) / fabs(e0);
    printf("%s: %d steps of N = %d, %.3g s on the device, relative energy drift %.2e\n",
           fk_context_device(context)->name, STEPS, N, device_seconds, drift);
    fk_eval_destroy(eval);
    fk_context_destroy(context);
    return drift < 1e-3 ? 0 : 1;
}
