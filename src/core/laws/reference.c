/* The double-precision host reference: the same physics as the kernels, O(N^2), no shortcuts.
 * Tests compare every kernel variant with it; `forcekit accuracy` uses it as ground truth. Each
 * law's own reference is in its descriptor (ga.c, gaj.c, reference_molecular.c): this file
 * finds the law and checks what comes back. */
#include <math.h>
#include <string.h>

#include "core/internal.h"

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
