/* ga: gravitational acceleration and potential, softening eps (cl/forces/ga.clh). */
#include <math.h>

#include "core/laws/law.h"

/* The double-precision reference of this law (fk_reference_forces): the formula directly,
 * O(N^2), no shortcuts. */
static fk_status reference_ga(const fk_kernel_desc *kernel, const fk_particles *particles,
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

const fk_kernel_desc fk__law_ga = {
    .info = {.name = "ga",
             .description = "gravitational acceleration (optional potential), softening eps",
             .force_components = 3,
             .input_columns = 4,
             .input_format = "x y z m",
             .output_format = "ax ay az",
             /* Elsen et al., Table 1's count for gaj and ljc_*, and 19 here: docs/force-laws.md
              * "Force laws" gives our own count of what each kernel executes. */
             .flops_per_interaction = 19.0},
    .lanes = 1,
    .reference = reference_ga,
};
