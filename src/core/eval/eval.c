/* The evaluation's entry points for computing: compute through the pair loop
 * (src/core/loops/loop.h), waiting and timing, destroy, getters. Creation is create.c and build.c;
 * what every entry point shares is common.c. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/eval/eval_internal.h"
#include "core/tuning_db/db.h"

void fk_eval_destroy(fk_eval *eval)
{
    if (!eval)
        return;
    if (eval->pending || eval->body_written) /* the device may still read or write our memory */
        clFinish(eval->state.context->queue);
    if (eval->pending_read) /* by its event too: clFinish alone is not enough on Rusticl 22.3 */
        clWaitForEvents(1, &eval->pending_read);
    fk__eval_release_pending(eval);
    if (eval->state.partial == eval->state.result)
        eval->state.partial = NULL;
    fk__eval_release_buffers(eval);
    fk__eval_release_output(eval);
    fk__eval_release_results_cl(eval);
    fk__eval_release_host_body(eval);
    fk__eval_release_positions(eval);
    fk__eval_release_bound_reduce(eval);
    FK__RELEASE_KERNELS(eval->convert_kernels[0], eval->convert_kernels[1], eval->decode_kernel,
                        eval->subtract);
    FK__RELEASE_PROGRAMS(eval->convert_program, eval->decode_program, eval->subtract_program);
    FK__RELEASE_BUFFERS(eval->state.table);
    fk__forcelaw_state_free(&eval->state.law);
    if (eval->loop)
        eval->loop->destroy(eval->loop_state);
    free(eval);
}

/* One pass of the loop, waited for: the forces pass with the exclusion subtraction appended. */
fk_status fk__eval_run_pass(fk_eval *eval, fk__pass pass, double *seconds)
{
    fk_context *context = eval->state.context;
    cl_event first = NULL, last = NULL;
    fk_status status = eval->loop->enqueue(&eval->state, eval->loop_state, pass, &first, &last);
    if (status != FK_OK)
        return status;
    cl_event subtracted = NULL; /* exclude afterwards, on the merged results */
    if (pass == FK__PASS_FORCES)
        status = fk__eval_share_zero(eval);
    if (pass == FK__PASS_FORCES && status == FK_OK)
        status = fk__eval_enqueue_subtraction(eval, &subtracted);
    if (status != FK_OK) {
        clFinish(context->queue);
        if (first)
            clReleaseEvent(first);
        if (last)
            clReleaseEvent(last);
        return status;
    }
    if (subtracted) {
        if (last)
            clReleaseEvent(last);
        last = subtracted;
    }
    return fk__eval_finish(eval, first, last, "pair loop", seconds);
}

fk_status fk_eval_compute_async(fk_eval *eval)
{
    if (!eval)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->state.context;
    fk_status status = fk__eval_begin(eval, "compute");
    if (status != FK_OK)
        return status;
    eval->computed = 0;
    /* Before the first enqueue: POCL runs a command as it is enqueued, so a clock read after the
     * enqueues could start after the pass and call an honest device time impossible (timing.c). */
    const double enqueued = fk__now();
    cl_event first = NULL, last = NULL, subtracted = NULL, read = NULL;
    status = eval->loop->enqueue(&eval->state, eval->loop_state, FK__PASS_FORCES, &first, &last);
    if (status != FK_OK)
        return status;
    status = fk__eval_share_zero(eval);
    if (status == FK_OK)
        status = fk__eval_enqueue_subtraction(eval, &subtracted); /* exclude afterwards */
    if (status == FK_OK)
        status = fk__eval_enqueue_output(eval, &read);
    if (status == FK_OK) { /* start the work now: the caller may do host work before waiting */
        const cl_int err = clFlush(context->queue);
        if (err != CL_SUCCESS)
            status = fk__cl_fail(context, "clFlush", err);
    }
    if (subtracted) {
        if (last)
            clReleaseEvent(last);
        last = subtracted;
    }
    eval->pending_since = enqueued;
    eval->pending_first = first;
    eval->pending_last = last;
    eval->pending_read = read;
    eval->pending = 1;
    if (status != FK_OK) {
        clFinish(context->queue);
        fk__eval_release_pending(eval);
    }
    return status;
}

fk_status fk_eval_wait(fk_eval *eval, double *seconds)
{
    if (!eval)
        return FK_ERR_INVALID_ARGUMENT;
    fk_context *context = eval->state.context;
    fk__clear_error(context);
    if (!eval->pending)
        return fk__fail(context, FK_ERR_STATE, "wait without a compute in flight");
    /* fk__eval_finish waits for the queue and checks the pass's first and last events; the read
     * came after them on the in-order queue, so it is done too, and is checked here. */
    cl_event first = eval->pending_first, last = eval->pending_last, read = eval->pending_read;
    eval->pending_first = eval->pending_last = NULL;
    fk_status status = fk__eval_finish(eval, first, last, "pair loop", seconds);
    if (status == FK_OK && seconds) { /* implausible event times are unavailable (timing.c) */
        const double n = (double)eval->state.count;
        const double pairs =
            eval->state.variant.pairs_examined ? (double)eval->state.variant.pairs_examined : n * n;
        *seconds =
            fk__plausible_device_seconds(context, *seconds, pairs, fk__now() - eval->pending_since);
    }
    if (status == FK_OK && read) {
        /* Waited for by its own event, not only by clFinish: Mesa 22.3's Rusticl returns from
         * clFinish before a non-blocking read has reached host memory, and the results were its
         * zeros (issue #37; tests/rusticl/mapped_staging.c reproduces it). */
        cl_int state = clWaitForEvents(1, &read);
        if (state == CL_SUCCESS)
            clGetEventInfo(read, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof state, &state, NULL);
        if (state < 0)
            status = fk__cl_fail(context, "decode and read of the results", state);
    }
    fk__eval_release_pending(eval);
    if (status == FK_OK)
        fk__eval_output_arrived(eval);
    if (status == FK_OK && eval->first_overflow >= 0 && fk__eval_keeps_scale(eval) &&
        !eval->rescaling &&
        !eval->state.config.coordinated_scale) { /* parts rescale together, on the caller's call */
        /* The kept scale no longer holds these forces: a new one from these positions, and the
         * pass again (its device time replaces the first's). Once: the new scale is chosen from
         * an exact bound of these very terms, so a second overflow is reported, not retried. */
        ++eval->rescales;
        status = fk__eval_choose_accum_parameters(eval);
        if (status == FK_OK)
            status = fk_eval_compute_async(eval);
        if (status == FK_OK) {
            eval->rescaling = 1;
            status = fk_eval_wait(eval, seconds);
            eval->rescaling = 0;
            return status;
        }
    }
    eval->computed = status == FK_OK;
    return status;
}

fk_status fk_eval_compute(fk_eval *eval, double *seconds)
{
    const fk_status status = fk_eval_compute_async(eval);
    return status == FK_OK ? fk_eval_wait(eval, seconds) : status;
}

void fk__eval_set_j_splits(fk_eval *eval, int j_splits)
{
    eval->state.config.j_splits = j_splits > 0 ? j_splits : 0;
}

fk_status fk_eval_get_variant(const fk_eval *eval, fk_variant *variant)
{
    if (!eval || !variant)
        return FK_ERR_INVALID_ARGUMENT;
    *variant = eval->state.variant;
    return FK_OK;
}

const char *fk_eval_variant_note(const fk_eval *eval)
{
    return eval ? eval->variant_note : "";
}

size_t fk_eval_force_components(const fk_eval *eval)
{
    return eval ? eval->state.kernel->info.force_components : 0;
}

fk_status fk__eval_kernel_figures(const fk_eval *eval, fk__kernel_figures *figures, size_t capacity,
                                  size_t *count)
{
    if (!eval || !count || (capacity && !figures))
        return FK_ERR_INVALID_ARGUMENT;
    *count = eval->loop->figures(&eval->state, eval->loop_state, figures, capacity);
    if (eval->subtract) {
        if (*count < capacity)
            fk__kernel_figures_of(eval->state.context, eval->subtract, "fk_subtract_exclusions",
                                  &figures[*count]);
        ++*count;
    }
    return FK_OK;
}

fk_status fk_eval_get_loop_traits(const fk_eval *eval, int *writes_pairs, int *cell_grid,
                                  int *shares_cells)
{
    if (!eval || !eval->loop)
        return FK_ERR_INVALID_ARGUMENT;
    if (writes_pairs)
        *writes_pairs = fk__loop_uses_newton(eval->loop, &eval->state.variant);
    if (cell_grid)
        *cell_grid = eval->loop->reach == FK__REACH_CUTOFF_SKIN;
    if (shares_cells)
        *shares_cells = eval->loop->share_unit == FK__SHARE_CELLS;
    return FK_OK;
}
