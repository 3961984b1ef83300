/* The bookkeeping of a run: kinetic and potential energy at the current step, the energy drift's
 * slope over the samples, and the fingerprint of a run's inputs that a checkpoint is checked
 * against. Separate from the integrators: it reads the state and never steps it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/simulate_private.h"

fk_status fkt_sim_energy(fkt_sim *sim, double *kinetic, double *potential)
{
    if (!sim || !kinetic || !potential)
        return FK_ERR_INVALID_ARGUMENT;
    sim->message[0] = '\0';
    fk_status status = FK_OK;
    if (fkt_sim_on_device(sim)) {
        const fkt_sim_backend *backend = sim->config.backend;
        status = sim->backend_integrator
                     ? backend->energies(backend->user, kinetic, potential)
                     : fk_integrator_energies(sim->integrator, kinetic, potential);
        return status == FK_OK ? FK_OK : fkt_sim__failure(sim, status, "energy");
    }
    if (!sim->potential_current) {
        status = fkt_sim__update_positions(sim, sim->position, sim->velocity);
        if (status != FK_OK)
            return fkt_sim__failure(sim, status, "energy");
        status = fkt_sim__compute(sim, "energy");
        if (status != FK_OK)
            return status;
        sim->potential_current = 1;
    }
    const fkt_sim_backend *backend = sim->config.backend;
    status = backend ? backend->read_potentials(backend->user, sim->potential)
                     : fk_eval_read_potentials(sim->eval, sim->potential);
    if (status != FK_OK)
        return fkt_sim__failure(sim, status, "energy");
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
