/* ga: gravitational acceleration and potential, softening eps (cl/forces/ga.clh). */
#include "core/laws/law.h"

const fk_kernel_desc fk__law_ga = {
    .info = {.name = "ga",
             .description = "gravitational acceleration (optional potential), softening eps",
             .force_components = 3,
             .input_columns = 4,
             .input_format = "x y z m",
             .output_format = "ax ay az",
             /* Elsen et al., Table 1's count for gaj and ljc_*, and 19 here: docs/force-laws.md
              * "Force laws" gives our own count of what each kernel executes. */
             .flops_per_interaction = 19.0},
    .lanes = 1,
    .reference = fk__reference_ga,
};
