/* gaj: gravitational acceleration and its time derivative, the jerk, for Hermite integrators
 * (cl/forces/gaj.clh). body_aux holds the velocities. */
#include <math.h>
#include <string.h>

#include "core/laws/law.h"

/* The double-precision reference of this law (fk_reference_forces): the formula directly,
 * O(N^2), no shortcuts. */
static fk_status reference_gaj(const fk_kernel_desc *kernel, const fk_particles *particles,
                               const fk_physics *physics, size_t first, size_t end, double *forces,
                               double *potentials)
{
    (void)kernel;
    const size_t n = particles->count;
    const double eps2 = physics ? physics->eps * physics->eps : 0.0;
    const double *x = particles->position, *v = particles->velocity;
    if (!v)
        return FK_ERR_INVALID_ARGUMENT;
    for (size_t i = first; i < end; ++i) {
        double acc[6] = {0, 0, 0, 0, 0, 0}, phi = 0;
        for (size_t j = 0; j < n; ++j) {
            if (j == i)
                continue;
            double r[3], w[3];
            for (int k = 0; k < 3; ++k) {
                r[k] = x[3 * j + (size_t)k] - x[3 * i + (size_t)k];
                w[k] = v[3 * j + (size_t)k] - v[3 * i + (size_t)k];
            }
            const double s2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + eps2;
            if (s2 == 0.0)
                return FK_ERR_INVALID_INPUT;
            const double m = particles->mass ? particles->mass[j] : 1.0;
            const double s = sqrt(s2);
            const double rv = r[0] * w[0] + r[1] * w[1] + r[2] * w[2];
            for (int k = 0; k < 3; ++k) {
                acc[k] += m * r[k] / (s2 * s);
                acc[3 + k] += m * (w[k] / (s2 * s) - 3.0 * rv * r[k] / (s2 * s2 * s));
            }
            phi -= m / s;
        }
        memcpy(forces + 6 * (i - first), acc, sizeof acc);
        if (potentials)
            potentials[i - first] = phi;
    }
    return FK_OK;
}

const fk_kernel_desc fk__law_gaj = {
    .info = {.name = "gaj",
             .description = "gravitational acceleration and jerk (Hermite), softening eps",
             .force_components = 6,
             .input_columns = 7,
             .input_format = "x y z m vx vy vz",
             .output_format = "ax ay az jx jy jz",
             .flops_per_interaction = 42.0}, /* Elsen et al., Table 1 */
    .uses_aux = 1,
    .needs_velocity = 1,
    .reference = reference_gaj,
};
