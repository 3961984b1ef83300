/* buck: Born-Mayer-Huggins (Buckingham) plus Coulomb, for ionic crystals (cl/forces/buck.clh):
 * U = A exp(-r / rho) - C / r^6 + k q_i q_j / r. */
#include <float.h>
#include <stdio.h>

#include "core/laws/law.h"

static const double default_pair[3] = {1.0, 1.0, 1.0}; /* A, rho, C */
static const double no_short_range[3] = {0.0, 1.0, 0.0};

static int check_pair(const double *v, char *reason, size_t reason_size)
{
    if (v[0] < 0 || !(v[1] > 0) || v[2] < 0) {
        snprintf(reason, reason_size, "A = %g, rho = %g, C = %g; need A >= 0, rho > 0, C >= 0",
                 v[0], v[1], v[2]);
        return 0;
    }
    if (v[0] > FLT_MAX || 1.0 / v[1] > FLT_MAX || v[2] > FLT_MAX) {
        snprintf(reason, reason_size, "parameters out of float range");
        return 0;
    }
    return 1;
}

/* A, 1/rho, C (cl/forces/buck.clh) */
static void pack_pair(const double *v, double *entry)
{
    entry[0] = v[0];
    entry[1] = 1.0 / v[1];
    entry[2] = v[2];
}

static void pair_function(const fk__physics *physics, const double *pair, double qq, double r,
                          double *force, double *energy)
{
    const double k = physics->coulomb;
    const double born_mayer = pair[0] * exp(-r / pair[1]);
    const double r6 = r * r * r * r * r * r;
    *force = born_mayer / pair[1] - 6.0 * pair[2] / (r6 * r) + k * qq / (r * r);
    *energy = born_mayer - pair[2] / r6 + k * qq / r;
}

const fk_kernel_desc fk__law_buck = {
    .info = {.name = "buck",
             .description = "Born-Mayer-Huggins (Buckingham) + Coulomb, for ionic crystals",
             .force_components = 3,
             .input_columns = 5,
             .input_format = "x y z q type",
             .output_format = "fx fy fz",
             .flops_per_interaction = 40.0, /* forcekit's own count */
             .pair_parameters = 3,
             .pair_format = "a b A rho C"},
    .uses_aux = 1,
    .uses_table = 1,
    .charged = 1,
    .table_stride = 8,
    .default_pair = default_pair,
    .check_pair = check_pair,
    .pack_pair = pack_pair,
    .shift_entry = 3,
    .no_short_range = no_short_range,
    .pair_function = pair_function,
    .reference = fk__reference_molecular,
    .inexact_builtin = "exp",
};
