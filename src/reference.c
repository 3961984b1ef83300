/* The double-precision host reference: the same physics as the kernels, O(N^2), no shortcuts.
 * Tests compare every kernel variant with it; `forcekit accuracy` uses it as ground truth. */
#include <math.h>
#include <string.h>

#include "internal.h"

fk_status fk__reference_ga(const fk_particles *particles, const fk_physics *physics, double *forces,
                           double *potentials)
{
    const size_t n = particles->count;
    const double eps2 = physics ? physics->eps * physics->eps : 0.0;
    const double *x = particles->position;
    for (size_t i = 0; i < n; ++i) {
        double ax = 0, ay = 0, az = 0, phi = 0;
        for (size_t j = 0; j < n; ++j) {
            if (j == i)
                continue;
            const double dx = x[3 * j] - x[3 * i];
            const double dy = x[3 * j + 1] - x[3 * i + 1];
            const double dz = x[3 * j + 2] - x[3 * i + 2];
            const double s2 = dx * dx + dy * dy + dz * dz + eps2;
            if (s2 == 0.0)
                return FK_ERR_INVALID_INPUT; /* coincident bodies without softening */
            const double m = particles->mass ? particles->mass[j] : 1.0;
            const double inv_s = 1.0 / sqrt(s2);
            const double m_inv_s3 = m * inv_s * inv_s * inv_s;
            ax += dx * m_inv_s3;
            ay += dy * m_inv_s3;
            az += dz * m_inv_s3;
            phi -= m * inv_s;
        }
        forces[3 * i] = ax;
        forces[3 * i + 1] = ay;
        forces[3 * i + 2] = az;
        if (potentials)
            potentials[i] = phi;
    }
    return FK_OK;
}

fk_status fk_reference_forces(const char *kernel, const fk_particles *particles,
                              const fk_physics *physics, double *forces, double *potentials)
{
    const fk_kernel_desc *desc = fk__kernel_desc(kernel);
    if (!desc || !particles || !forces || !particles->position)
        return FK_ERR_INVALID_ARGUMENT;
    if (particles->count == 0)
        return FK_ERR_INVALID_INPUT;
    return desc->reference(particles, physics, forces, potentials);
}
