/* yukawa: screened Coulomb plus Lennard-Jones (cl/forces/yukawa.clh):
 * U = k q_i q_j exp(-kappa r) / r + 4 eps [(sigma/r)^12 - (sigma/r)^6]. */
#include "core/laws/law.h"

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
             FK__CHARGED_LJ_INFO,
             /* forcekit's own count, exp as one (docs/force-laws.md) */
             .flops_per_interaction = 36.0,
             .parameter_count = 1,
             .parameters = parameters},
    FK__CHARGED_LJ_TABLE,
    .pair_function = pair_function,
    .inexact_builtin = "exp",
};
