/* lj: Lennard-Jones, truncated and force-shifted at the cutoff, 2.5 by default
 * (cl/forces/lj.clh). No charges. */
#include "core/laws/law.h"

static void pair_function(const fk__physics *physics, const double *pair, double qq, double r,
                          double *force, double *energy)
{
    (void)physics;
    (void)qq;
    fk__lj_part(pair, r, force, energy);
}

const fk_kernel_desc fk__law_lj = {
    .info = {.name = "lj",
             .description = "Lennard-Jones, truncated and force-shifted at the cutoff (2.5)",
             .force_components = 3,
             .input_columns = 4,
             .input_format = "x y z type",
             .output_format = "fx fy fz",
             .flops_per_interaction = 30.0, /* forcekit's own count */
             .pair_parameters = 2,
             .pair_format = "a b epsilon sigma"},
    .uses_aux = 1,
    .uses_table = 1,
    .list_lanes = 1, /* fk_law_pair_lanes in cl/forces/lj.clh */
    .default_cutoff = 2.5,
    .table_stride = 4,
    .default_pair = fk__lj_default_pair,
    .check_pair = fk__lj_check_pair,
    .pack_pair = fk__lj_pack_pair,
    .shift_entry = 2,
    .pair_function = pair_function,
    .reference = fk__reference_molecular,
};
