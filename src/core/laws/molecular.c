/* The Lennard-Jones part shared by the lj and ljc_* descriptors. */
#include <float.h>
#include <stdio.h>

#include "core/laws/law.h"

const double fk__lj_default_pair[2] = {1.0, 1.0}; /* epsilon, sigma */
const double fk__lj_none[2] = {0.0, 0.0};

void fk__lj_part(const double *pair, double r, double *force, double *energy)
{
    const double sr = pair[1] / r, sr2 = sr * sr, sr6 = sr2 * sr2 * sr2;
    *force = 4.0 * pair[0] * (12.0 * sr6 * sr6 - 6.0 * sr6) / r;
    *energy = 4.0 * pair[0] * (sr6 * sr6 - sr6);
}

int fk__lj_check_pair(const double *v, char *reason, size_t reason_size)
{
    if (v[0] < 0 || v[1] < 0) {
        snprintf(reason, reason_size, "epsilon = %g, sigma = %g; both must be >= 0", v[0], v[1]);
        return 0;
    }
    if (48.0 * v[0] * pow(v[1], 12) > FLT_MAX) {
        snprintf(reason, reason_size, "48 epsilon sigma^12 = %g exceeds single precision",
                 48.0 * v[0] * pow(v[1], 12));
        return 0;
    }
    return 1;
}

void fk__lj_pack_pair(const double *v, double *entry)
{
    entry[0] = 48.0 * v[0] * pow(v[1], 12);
    entry[1] = 24.0 * v[0] * pow(v[1], 6);
}

double fk__coulomb_over_parameter(const fk__physics *physics)
{
    return physics->coulomb / physics->parameters[0];
}
