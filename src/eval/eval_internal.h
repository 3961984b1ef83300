/* What the files of the evaluation (src/eval/) share among themselves; the pair loops see only
 * eval.h and loops/loop.h. Not installed. */
#ifndef FK_EVAL_INTERNAL_H
#define FK_EVAL_INTERNAL_H

#include "eval.h"
#include "eval/choose.h"
#include "loops/loop.h"

/* eval.c */
/* fk_eval_create with the exclusion slots to build when config->max_exclusions is automatic. */
fk_status fk__eval_create_slots(fk_context *context, const fk_eval_config *config,
                                unsigned exclusion_slots, fk_eval **out);
/* Releases the particle buffers (not the pair table). */
void fk__eval_release_buffers(fk_eval *eval);
/* One pass of the loop, waited for: the forces pass with the exclusion subtraction appended;
 * *seconds (may be NULL) gets the device time. */
fk_status fk__eval_run_pass(fk_eval *eval, fk__pass pass, double *seconds);

/* precision.c */
/* Runs the bound pre-pass on the particles just uploaded and sets acc_param and the decode scale
 * (nothing for accumulators without data-scaled parameters). */
fk_status fk__eval_choose_accum_parameters(fk_eval *eval);
/* Reproducible mode's build options; sets eval->reproducible and its reason. */
const char *fk__eval_reproducible_options(fk_eval *eval);

/* exclusions.c */
fk_status fk__eval_create_subtraction(fk_eval *eval, const fk_program_request *request);
fk_status fk__eval_enqueue_subtraction(fk_eval *eval, cl_event *event);

/* readback.c: the packed results of the last pass (2 words per component). */
fk_status fk__eval_read_result(fk_eval *eval, uint32_t *words);

#endif
