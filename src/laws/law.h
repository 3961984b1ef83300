/* What the force-law descriptors (src/laws/<name>.c) share: the descriptor type is in internal.h;
 * here the pieces several laws are built from (molecular.c). */
#ifndef FK_LAWS_LAW_H
#define FK_LAWS_LAW_H

#include <math.h>

#include "internal.h"

/* The Lennard-Jones part of lj and the ljc_* laws, pair = (epsilon, sigma):
 * U = 4 eps [(sigma/r)^12 - (sigma/r)^6], f = -dU/dr. */
void fk__lj_part(const double *pair, double r, double *force, double *energy);
/* epsilon, sigma >= 0 and 48 eps sigma^12 (the device's force coefficient) within float. */
int fk__lj_check_pair(const double *values, char *reason, size_t reason_size);
/* Table entry: the force coefficients 12 c12 = 48 eps sigma^12 and 6 c6 = 24 eps sigma^6
 * (cl/forces/molecular.clh fk_lj_part). */
void fk__lj_pack_pair(const double *values, float *entry);
/* The default single-type table (epsilon = sigma = 1) and a pair without LJ (for the charge
 * part's shift). */
extern const double fk__lj_default_pair[2];
extern const double fk__lj_none[2];

#endif
