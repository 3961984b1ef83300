/* The double-precision host reference: the same physics as the kernels, O(N^2), no shortcuts.
 * Tests compare every kernel variant with it; `forcekit accuracy` uses it as ground truth. */
#include <math.h>
#include <string.h>

#include "core/internal.h"

fk_status fk__reference_ga(const fk_kernel_desc *kernel, const fk_particles *particles,
                           const fk_physics *physics, size_t first, size_t end, double *forces,
                           double *potentials)
{
    (void)kernel;
    const size_t n = particles->count;
    const double eps2 = physics ? physics->eps * physics->eps : 0.0;
    const double *x = particles->position;
    for (size_t i = first; i < end; ++i) {
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
        forces[3 * (i - first)] = ax;
        forces[3 * (i - first) + 1] = ay;
        forces[3 * (i - first) + 2] = az;
        if (potentials)
            potentials[i - first] = phi;
    }
    return FK_OK;
}

fk_status fk__reference_gaj(const fk_kernel_desc *kernel, const fk_particles *particles,
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

static int all_finite(const double *values, size_t count)
{
    for (size_t k = 0; k < count; ++k)
        if (!isfinite(values[k]))
            return 0;
    return 1;
}

fk_status fk_reference_forces_rows(const char *kernel, const fk_particles *particles,
                                   const fk_physics *physics, size_t first, size_t end,
                                   double *forces, double *potentials)
{
    const fk_kernel_desc *desc = fk__kernel_desc(kernel);
    if (!desc || !particles || !forces || !particles->position)
        return FK_ERR_INVALID_ARGUMENT;
    const size_t n = particles->count;
    if (n == 0)
        return FK_ERR_INVALID_INPUT;
    if (first >= end || end > n)
        return FK_ERR_INVALID_ARGUMENT;
    /* NaN or Inf would not stop the sums: every force that meets one would come out NaN with no
     * error, where fk_eval_set_particles refuses the same input. */
    if (!all_finite(particles->position, 3 * n) ||
        (particles->mass && !all_finite(particles->mass, n)) ||
        (particles->velocity && !all_finite(particles->velocity, 3 * n)))
        return FK_ERR_INVALID_INPUT;
    return desc->reference(desc, particles, physics, first, end, forces, potentials);
}

fk_status fk_reference_forces(const char *kernel, const fk_particles *particles,
                              const fk_physics *physics, double *forces, double *potentials)
{
    return fk_reference_forces_rows(kernel, particles, physics, 0, particles ? particles->count : 0,
                                    forces, potentials);
}
