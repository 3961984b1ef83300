/* yukawa: screened Coulomb plus Lennard-Jones (cl/forces/yukawa.clh):
 * U = k q_i q_j exp(-kappa r) / r + 4 eps [(sigma/r)^12 - (sigma/r)^6]. */
#include "laws/law.h"

static const fk_kernel_parameter parameters[] = {
    {.name = "kappa",
     .description = "inverse screening length (Debye), 1 / distance",
     .count = 1,
     .default_value = 1.0,
     .minimum = 0.0},
};

static void pair_function(const fk__physics *physics, const double *pair, double qq, double r,
                          double *force, double *energy)
{
    const double kappa = physics->parameters[0];
    const double screened = physics->coulomb * qq * exp(-kappa * r) / r;
    fk__lj_part(pair, r, force, energy);
    *energy += screened;
    *force += screened * (1.0 + kappa * r) / r; /* -dU/dr */
}

const fk_kernel_desc fk__law_yukawa = {
    .info = {.name = "yukawa",
             .description = "screened Coulomb k q q exp(-kappa r) / r + Lennard-Jones",
             .force_components = 3,
             .input_columns = 5,
             .input_format = "x y z q type",
             .output_format = "fx fy fz",
             /* forcekit's own count, exp as one (docs/force-laws.md) */
             .flops_per_interaction = 36.0,
             .pair_parameters = 2,
             .pair_format = "a b epsilon sigma",
             .parameter_count = 1,
             .parameters = parameters},
    .uses_aux = 1,
    .uses_table = 1,
    .charged = 1,
    .table_stride = 4,
    .default_pair = fk__lj_default_pair,
    .check_pair = fk__lj_check_pair,
    .pack_pair = fk__lj_pack_pair,
    .shift_entry = 2,
    .no_short_range = fk__lj_none,
    .pair_function = pair_function,
    .reference = fk__reference_molecular,
    .inexact_builtin = "exp",
};
