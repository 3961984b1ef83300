/* The autotuner (tune.c): what the rest of the library and the tests see. The tuning database it
 * writes is a layer below (src/core/tuning_db/db.h), included here because every user of the
 * tuner reads the database too; the evaluation and the loops include db.h alone. Not
 * installed. */
#ifndef FK_TUNE_H
#define FK_TUNE_H

#include <stddef.h>

#include "core/internal.h"
#include "core/tuning_db/db.h"

/* fk_tune_run for one pair loop (fk_algorithm): its tuning space (src/core/loops/), entries stored
 * under the loop's name. fk_tune_run is all-pairs. */
fk_status fk__tune_run_loop(fk_context *context, const fk_tune_config *config, int algorithm,
                            fk_tune_result **result);

#endif
