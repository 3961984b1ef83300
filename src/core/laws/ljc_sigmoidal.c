/* ljc_sigmoidal: Lennard-Jones plus Coulomb in the sigmoidal dielectric zeta(r) = exp(P(r)),
 * P = alpha r^3 + beta r^2 + gamma r + delta (cl/forces/ljc_sigmoidal.clh):
 * U = 4 eps [(sigma/r)^12 - (sigma/r)^6] + k q_i q_j / (zeta(r) r). */
#include "core/laws/law.h"

static const fk_kernel_parameter parameters[] = {
    {.name = "dielectric",
     .description = "a, b, c, d of the dielectric zeta = exp(a r^3 + b r^2 + c r + d)",
     .count = 4,
     .default_value = 0.0,
     .minimum = -HUGE_VAL},
};

static void pair_function(const fk__physics *physics, const double *pair, double qq, double r,
                          double *force, double *energy)
{
    const double *s = physics->parameters;
    const double p = s[0] * r * r * r + s[1] * r * r + s[2] * r + s[3];
    const double dp = 3.0 * s[0] * r * r + 2.0 * s[1] * r + s[2];
    const double coulomb = physics->coulomb * qq * exp(-p) / r;
    fk__lj_part(pair, r, force, energy);
    *energy += coulomb;
    *force += coulomb * (1.0 / r + dp);
}

const fk_kernel_desc fk__law_ljc_sigmoidal = {
    .info = {.name = "ljc_sigmoidal",
             .description = "Lennard-Jones + Coulomb, dielectric exp(a r^3 + b r^2 + c r + d)",
             FK__CHARGED_LJ_INFO,
             .flops_per_interaction = 43.0, /* Elsen et al., Table 1 */
             .parameter_count = 1,
             .parameters = parameters},
    FK__CHARGED_LJ_TABLE,
    .pair_function = pair_function,
    .inexact_builtin = "exp",
};
