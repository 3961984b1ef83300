/* ljc_constant: Lennard-Jones plus Coulomb in a constant dielectric D0
 * (cl/forces/ljc_constant.clh): U = 4 eps [(sigma/r)^12 - (sigma/r)^6] + k q_i q_j / (D0 r). */
#include "laws/law.h"

static const fk_kernel_parameter parameters[] = {
    {.name = "dielectric",
     .description = "the dielectric constant D0",
     .count = 1,
     .default_value = 1.0,
     .minimum = 0.0},
};

static double coulomb_factor(const fk__physics *physics)
{
    return physics->coulomb / physics->parameters[0];
}

static void pair_function(const fk__physics *physics, const double *pair, double qq, double r,
                          double *force, double *energy)
{
    const double k = physics->coulomb, d0 = physics->parameters[0];
    fk__lj_part(pair, r, force, energy);
    *energy += k * qq / (d0 * r);
    *force += k * qq / (d0 * r * r);
}

const fk_kernel_desc fk__law_ljc_constant = {
    .info = {.name = "ljc_constant",
             .description = "Lennard-Jones + Coulomb, constant dielectric D0",
             .force_components = 3,
             .input_columns = 5,
             .input_format = "x y z q type",
             .output_format = "fx fy fz",
             .flops_per_interaction = 30.0, /* Elsen et al., Table 1 */
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
    .coulomb_factor = coulomb_factor,
    .pair_function = pair_function,
    .reference = fk__reference_molecular,
};
