/* The autotuner (tune.c) and a context's warnings (warnings.c): what the rest of the library and
 * the tests see. The tuning database it writes is declared in db.h, included here because every
 * user of the tuner reads the database too. Not installed. */
#ifndef FK_TUNE_H
#define FK_TUNE_H

#include <stddef.h>

#include "core/internal.h"
#include "core/tune/db.h"

/* fk_tune_run for one pair loop (fk_algorithm): its tuning space (src/core/loops/), entries stored
 * under the loop's name. fk_tune_run is all-pairs. */
fk_status fk__tune_run_loop(fk_context *context, const fk_tune_config *config, int algorithm,
                            fk_tune_result **result);

/* Appends a line to a malloc'ed warnings text. */
void fk__warn(char **warnings, const char *format, ...) FK_PRINTF(2, 3);

#endif
