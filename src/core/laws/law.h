/* What the force-law descriptors (src/core/laws/<name>.c) share: the descriptor type is in
 * internal.h; here the pieces several laws are built from (molecular.c). */
#ifndef FK_LAWS_LAW_H
#define FK_LAWS_LAW_H

#include <math.h>

#include "core/internal.h"

/* The Lennard-Jones part of lj and the ljc_* laws, pair = (epsilon, sigma):
 * U = 4 eps [(sigma/r)^12 - (sigma/r)^6], f = -dU/dr. */
void fk__lj_part(const double *pair, double r, double *force, double *energy);
/* epsilon, sigma >= 0 and 48 eps sigma^12 (the device's force coefficient) within float. */
int fk__lj_check_pair(const double *values, char *reason, size_t reason_size);
/* Table entry: the force coefficients 12 c12 = 48 eps sigma^12 and 6 c6 = 24 eps sigma^6
 * (cl/forces/molecular.clh fk_lj_part). */
void fk__lj_pack_pair(const double *values, double *entry);
/* The default single-type table (epsilon = sigma = 1) and a pair without LJ (for the charge
 * part's shift). */
extern const double fk__lj_default_pair[2];
extern const double fk__lj_none[2];
/* k / parameters[0]: the Coulomb factor of a law whose first parameter divides k (ljc_constant's
 * D0, ljc_linear's s). */
double fk__coulomb_over_parameter(const fk__physics *physics);

/* What every charged law with a Lennard-Jones pair table shares (the ljc_* laws, yukawa): the
 * public columns and pair format ... */
#define FK__CHARGED_LJ_INFO                                                                        \
    .force_components = 3, .input_columns = 5, .input_format = "x y z q type",                     \
    .output_format = "fx fy fz", .pair_parameters = 2, .pair_format = "a b epsilon sigma"
/* ... and the descriptor's table handling: epsilon and sigma packed as the LJ force
 * coefficients, the force shift after them, the charge part's shift from a pair without LJ. */
#define FK__CHARGED_LJ_TABLE                                                                       \
    .uses_aux = 1, .uses_table = 1, .charged = 1, .table_stride = 4,                               \
    .default_pair = fk__lj_default_pair, .check_pair = fk__lj_check_pair,                          \
    .pack_pair = fk__lj_pack_pair, .shift_entry = 2, .no_short_range = fk__lj_none,                \
    .reference = fk__reference_molecular

#endif
