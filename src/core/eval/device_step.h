/* The evaluation's hooks for callers that keep the particles on the device between steps (the
 * integrator, src/core/integrate/integrator.c): they write eval->body with their own kernels and
 * drive the pair loop themselves, without the host upload of fk_eval_update_positions and without
 * the blocking read of fk_eval_wait. Not installed. */
#ifndef FK_EVAL_DEVICE_STEP_H
#define FK_EVAL_DEVICE_STEP_H

#include "core/eval/eval.h"

/* FK_OK when the evaluation can take positions from the device now: particles set, no compute in
 * flight (FK_ERR_STATE otherwise), the last host write of its particles finished, and the particle
 * buffers (body; gaj's body_aux) writable by kernels. Marks the host's copy of the particles stale
 * and the results not computed: the caller writes eval->body next. */
fk_status fk__eval_device_begin(fk_eval *eval);

/* The loop's prepare on the positions now in eval->body (the cell grid's check, and a rebuild of
 * the cells and lists when some particle moved more than skin / 2): blocking. */
fk_status fk__eval_device_prepare(fk_eval *eval);

/* The data-scaled accumulators' scale chosen again from the positions in eval->body (the bound
 * pre-pass): blocking. Nothing for the other accumulators. */
fk_status fk__eval_device_rescale(fk_eval *eval);

/* Enqueues one forces pass on eval->body (the loop's pass, the exclusion subtraction) and the
 * decode of its results into forces (force components per particle) and, with config.potential,
 * potentials (one per particle), in the evaluation's result type (eval->result_size bytes each):
 * nothing is waited for or read back. The first particle whose fixed-point sum overflowed goes to
 * flags[overflow_at] by atomic_min (the caller sets it to count beforehand). Needs the device
 * decode (eval->device_decode). */
fk_status fk__eval_enqueue_device_forces(fk_eval *eval, cl_mem forces, cl_mem potentials,
                                         cl_mem flags, cl_uint overflow_at);

#endif
