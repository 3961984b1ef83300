/* ljc_constant: Lennard-Jones plus Coulomb in a constant dielectric D0
 * (cl/forces/ljc_constant.clh): U = 4 eps [(sigma/r)^12 - (sigma/r)^6] + k q_i q_j / (D0 r). */
#include "core/laws/law.h"

static const fk_kernel_parameter parameters[] = {
    {.name = "dielectric",
     .description = "the dielectric constant D0",
     .count = 1,
     .default_value = 1.0,
     .minimum = 0.0},
};

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
             FK__CHARGED_LJ_INFO,
             .flops_per_interaction = 30.0, /* Elsen et al., Table 1 */
             .parameter_count = 1,
             .parameters = parameters},
    FK__CHARGED_LJ_TABLE,
    .list_lanes = 1, /* fk_law_pair_lanes in cl/forces/ljc_constant.clh */
    .coulomb_factor = fk__coulomb_over_parameter,
    .pair_function = pair_function,
};
