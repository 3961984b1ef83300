/* The double-precision reference of the molecular kernels (those with a pair table): the formulas
 * of docs/force-laws.md evaluated directly, O(N^2), skipping the excluded pairs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

/* Exclusions as per-particle lists (CSR), so the pair loop can mark the excluded j of each i. */
typedef struct exclusion_lists {
    size_t *start; /* n + 1 */
    size_t *partner;
} exclusion_lists;

static fk_status build_lists(const size_t *pairs, size_t count, size_t n, exclusion_lists *lists)
{
    lists->start = calloc(n + 1, sizeof *lists->start);
    lists->partner = malloc((2 * count + 1) * sizeof *lists->partner);
    if (!lists->start || !lists->partner)
        return FK_ERR_HOST_MEMORY;
    for (size_t e = 0; e < count; ++e) {
        lists->start[pairs[2 * e] + 1]++;
        lists->start[pairs[2 * e + 1] + 1]++;
    }
    for (size_t i = 0; i < n; ++i)
        lists->start[i + 1] += lists->start[i];
    size_t *fill = calloc(n, sizeof *fill);
    if (!fill)
        return FK_ERR_HOST_MEMORY;
    for (size_t e = 0; e < count; ++e)
        for (int side = 0; side < 2; ++side) {
            const size_t i = pairs[2 * e + (size_t)side], j = pairs[2 * e + 1 - (size_t)side];
            lists->partner[lists->start[i] + fill[i]++] = j;
        }
    free(fill);
    return FK_OK;
}

fk_status fk__reference_molecular(const fk_kernel_desc *kernel, const fk_particles *particles,
                                  const fk_physics *physics, size_t first, size_t end,
                                  double *forces, double *potentials)
{
    char message[256]; /* the status says what failed; the reference has no context to keep it */
    const size_t message_size = sizeof message;
    fk__physics resolved;
    fk_status status = fk__physics_resolve(kernel, physics, &resolved, message, message_size);
    if (status != FK_OK)
        return status;
    fk__pair_params params;
    status = fk__pair_params_copy(kernel, physics ? physics->pair_table : NULL, &params, message,
                                  message_size);
    if (status != FK_OK)
        return status;
    const size_t n = particles->count;
    size_t *exclusions = NULL, exclusion_count = 0;
    exclusion_lists lists = {NULL, NULL};
    unsigned char *excluded = calloc(n, 1);
    status = excluded ? fk__pair_params_check_types(&params, particles, message, message_size)
                      : FK_ERR_HOST_MEMORY;
    if (status == FK_OK && physics && physics->exclusion_count)
        status = fk__exclusions_normalize(physics->exclusions, physics->exclusion_count,
                                          &exclusions, &exclusion_count, message, message_size);
    for (size_t e = 0; status == FK_OK && e < exclusion_count; ++e)
        if (exclusions[2 * e + 1] >= n)
            status = FK_ERR_INVALID_INPUT;
    if (status == FK_OK)
        status = build_lists(exclusions, exclusion_count, n, &lists);

    const double *x = particles->position;
    for (size_t i = first; status == FK_OK && i < end; ++i) {
        for (size_t e = lists.start[i]; e < lists.start[i + 1]; ++e)
            excluded[lists.partner[e]] = 1;
        const double qi = !kernel->charged ? 0.0 : particles->mass ? particles->mass[i] : 1.0;
        const size_t ti = particles->type ? (size_t)particles->type[i] : 0;
        double force[3] = {0, 0, 0}, energy = 0;
        for (size_t j = 0; j < n; ++j) {
            if (j == i || excluded[j])
                continue;
            double d[3];
            for (int k = 0; k < 3; ++k)
                d[k] = x[3 * i + (size_t)k] - x[3 * j + (size_t)k];
            fk__minimum_image(&resolved, d);
            const double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            if (r == 0.0) {
                status = FK_ERR_INVALID_INPUT; /* coincident particles */
                break;
            }
            const double qj = !kernel->charged ? 0.0 : particles->mass ? particles->mass[j] : 1.0;
            const size_t tj = particles->type ? (size_t)particles->type[j] : 0;
            double f, u;
            fk__pair_function_shifted(kernel, &resolved,
                                      params.values + (ti * params.types + tj) * params.parameters,
                                      qi * qj, r, &f, &u);
            for (int k = 0; k < 3; ++k)
                force[k] += f * d[k] / r;
            energy += 0.5 * u;
        }
        for (size_t e = lists.start[i]; e < lists.start[i + 1]; ++e)
            excluded[lists.partner[e]] = 0;
        for (int k = 0; k < 3; ++k)
            forces[3 * (i - first) + (size_t)k] = force[k];
        if (potentials)
            potentials[i - first] = energy;
    }
    free(lists.start);
    free(lists.partner);
    free(exclusions);
    free(excluded);
    fk__pair_params_free(&params);
    return status;
}
