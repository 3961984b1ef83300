/* gaj: gravitational acceleration and its time derivative, the jerk, for Hermite integrators
 * (cl/forces/gaj.clh). body_aux holds the velocities. */
#include "core/laws/law.h"

const fk_kernel_desc fk__law_gaj = {
    .info = {.name = "gaj",
             .description = "gravitational acceleration and jerk (Hermite), softening eps",
             .force_components = 6,
             .input_columns = 7,
             .input_format = "x y z m vx vy vz",
             .output_format = "ax ay az jx jy jz",
             .flops_per_interaction = 42.0}, /* Elsen et al., Table 1 */
    .uses_aux = 1,
    .needs_velocity = 1,
    .reference = fk__reference_gaj,
};
