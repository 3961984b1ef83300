/* ljc_linear: Lennard-Jones plus Coulomb in the distance-dependent dielectric D = s r
 * (cl/forces/ljc_linear.clh): U = 4 eps [(sigma/r)^12 - (sigma/r)^6] + k q_i q_j / (s r^2). */
#include "core/laws/law.h"

static const fk_kernel_parameter parameters[] = {
    {.name = "dielectric",
     .description = "s in the dielectric D = s r",
     .count = 1,
     .default_value = 1.0,
     .minimum = 0.0},
};

static void pair_function(const fk__physics *physics, const double *pair, double qq, double r,
                          double *force, double *energy)
{
    const double k = physics->coulomb, s = physics->parameters[0];
    fk__lj_part(pair, r, force, energy);
    *energy += k * qq / (s * r * r);
    *force += 2.0 * k * qq / (s * r * r * r);
}

const fk_kernel_desc fk__law_ljc_linear = {
    .info = {.name = "ljc_linear",
             .description = "Lennard-Jones + Coulomb, dielectric D = s r (energy-consistent)",
             FK__CHARGED_LJ_INFO,
             .flops_per_interaction = 30.0, /* Elsen et al., Table 1 */
             .parameter_count = 1,
             .parameters = parameters},
    FK__CHARGED_LJ_TABLE,
    .coulomb_factor = fk__coulomb_over_parameter,
    .pair_function = pair_function,
};
