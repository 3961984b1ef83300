/* The host integrators (see simulate.h): velocity Verlet and the 4th-order Hermite
 * predictor-corrector, one shared step each (the periodic wrap after every drift is
 * simulate_common.c's); fkt_sim_advance hands many steps to the device integrator instead. Separate
 * from the driver because this is the numerical method, and nothing here knows where the forces
 * come from. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "support/simulate_private.h"

/* The integrators' names, in fkt_integrator's order: one table for both directions. */
static const char *const integrator_names[] = {
    [FKT_INTEGRATOR_VERLET] = "verlet",
    [FKT_INTEGRATOR_HERMITE] = "hermite",
    [FKT_INTEGRATOR_LANGEVIN] = "langevin",
};
enum { INTEGRATOR_COUNT = sizeof integrator_names / sizeof integrator_names[0] };

const char *fkt_integrator_name(fkt_integrator integrator)
{
    return (int)integrator >= 0 && (int)integrator < INTEGRATOR_COUNT ? integrator_names[integrator]
                                                                      : NULL;
}

int fkt_integrator_find(const char *name, fkt_integrator *integrator)
{
    for (int k = 0; name && k < INTEGRATOR_COUNT; ++k)
        if (strcmp(name, integrator_names[k]) == 0) {
            *integrator = (fkt_integrator)k;
            return 1;
        }
    return 0;
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
    fkt_sim__wrap_positions(sim, x);
    char what[64];
    snprintf(what, sizeof what, "step %llu", (unsigned long long)(sim->step + 1));
    fk_status status = fkt_sim__evaluate(sim, x, v, sim->next_acceleration, NULL, what);
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
    fkt_sim__wrap_positions(sim, xp);
    char what[64];
    snprintf(what, sizeof what, "step %llu", (unsigned long long)(sim->step + 1));
    fk_status status = fkt_sim__evaluate(sim, xp, vp, sim->next_acceleration, sim->next_jerk, what);
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
    fkt_sim__wrap_positions(sim, xp);
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
    if (fkt_sim_on_device(sim))
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
    if (!fkt_sim_on_device(sim)) {
        fk_status status = FK_OK;
        for (uint64_t s = 0; s < steps && status == FK_OK; ++s)
            status = fkt_sim_step(sim);
        return status;
    }
    sim->message[0] = '\0';
    if (steps == 0)
        return FK_OK;
    const fkt_sim_backend *backend = sim->config.backend;
    const fk_status status = sim->backend_integrator ? backend->step(backend->user, steps)
                                                     : fk_integrator_step(sim->integrator, steps);
    if (status != FK_OK)
        return fkt_sim__failure(sim, status, "step");
    sim->step += steps;
    sim->state_stale = 1;
    return FK_OK;
}
