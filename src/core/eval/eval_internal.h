/* What the files of the evaluation (src/core/eval/) share among themselves; the pair loops see only
 * eval.h and loops/loop.h. Not installed. */
#ifndef FK_EVAL_INTERNAL_H
#define FK_EVAL_INTERNAL_H

#include "core/eval/eval.h"
#include "core/eval/choose.h"
#include "core/loops/loop.h"

/* create.c: fk_eval_create with the exclusion slots to build when config->max_exclusions is
 * automatic (build.c's evaluation, its programs through the known-answer check). */
fk_status fk__eval_create_slots(fk_context *context, const fk_eval_config *config,
                                unsigned exclusion_slots, fk_eval **out);
/* build.c: the same without the known-answer check (the check's own probes are built so). */
fk_status fk__eval_build(fk_context *context, const fk_eval_config *config,
                         unsigned exclusion_slots, fk_eval **out);
/* Rebuilds eval's programs for exclusion_slots on-the-fly exclusion slots (fk_eval_set_exclusions
 * with automatic slots), keeping its resolved configuration, its pair table and result buffers;
 * the particles must be set again. On failure eval is left as it was. */
fk_status fk__eval_rebuild(fk_eval *eval, unsigned exclusion_slots);
/* common.c: releases the particle buffers (not the pair table). */
void fk__eval_release_buffers(fk_eval *eval);
/* eval.c: one pass of the loop, waited for: the forces pass with the exclusion subtraction
 * appended; *seconds (may be NULL) gets the device time. */
fk_status fk__eval_run_pass(fk_eval *eval, fk__pass pass, double *seconds);

/* precision.c */
struct fk_accum_bound;
/* Sets acc_param and the decode scale from a bound (FK_ERR_OVERFLOW when it cannot be held). */
fk_status fk__eval_apply_bound(fk_eval *eval, const struct fk_accum_bound *bound);
/* Runs the bound pre-pass on the particles just uploaded and sets acc_param and the decode scale
 * (nothing for accumulators without data-scaled parameters). */
fk_status fk__eval_choose_accum_parameters(fk_eval *eval);
/* FK_SCALE_KEEP, or FK_SCALE_AUTO where it keeps the scale (src/core/eval/share.c) */
int fk__eval_keeps_scale(const fk_eval *eval);
/* The device reduction of the bound (fk_eval_create, for the data-scaled accumulators). */
fk_status fk__eval_create_bound_reduce(fk_eval *eval);
void fk__eval_release_bound_reduce(fk_eval *eval);
/* Reproducible mode's build options; sets eval->reproducible and its reason. */
const char *fk__eval_reproducible_options(fk_eval *eval);

/* common.c: after a forces pass, zero the results outside the share's particle range. */
fk_status fk__eval_share_zero(fk_eval *eval);

/* exclusions.c */
fk_status fk__eval_create_subtraction(fk_eval *eval, const fk_program_request *request);
fk_status fk__eval_enqueue_subtraction(fk_eval *eval, cl_event *event);

/* common.c: releases the events of an enqueued compute and clears pending. */
void fk__eval_release_pending(fk_eval *eval);
/* The first step of every entry point but wait and destroy: clears the error; FK_ERR_STATE (with
 * the message) while a compute is in flight, or when call is not NULL and no particles are set
 * ("<call> before set_particles"). */
fk_status fk__eval_begin(fk_eval *eval, const char *call);

/* upload.c: the pinned host copy of the particles (and the wait for its last write). */
void fk__eval_release_host_body(fk_eval *eval);
void fk__eval_release_positions(fk_eval *eval);

/* readback.c: the output stage. */
/* The decode kernel for the accumulator (fk_eval_create; nothing without fp64). */
fk_status fk__eval_create_decode(fk_eval *eval);
/* The decoded buffer and the pinned staging for count particles (set_particles). */
fk_status fk__eval_create_output(fk_eval *eval, size_t count);
void fk__eval_release_output(fk_eval *eval);
/* Enqueues the decode and the non-blocking read into the staging after a forces pass. */
fk_status fk__eval_enqueue_output(fk_eval *eval, cl_event *read);
/* fk_eval_set_results_cl's buffers: checked against the count; released. */
fk_status fk__eval_check_results_cl(fk_eval *eval);
void fk__eval_release_results_cl(fk_eval *eval);
/* After the read completed: records the first overflowed particle. */
void fk__eval_output_arrived(fk_eval *eval);
/* The packed results of the last pass (2 words per component), a blocking read. */
fk_status fk__eval_read_result(fk_eval *eval, uint32_t *words);

#endif
