/* The evaluation object (src/core/eval/): the state it hands the pair loops (`state`,
 * src/core/loops/eval_state.h: particles, physics, accumulator parameters, the result buffer) and
 * what only the evaluation uses (the output stage, pending events, uploads, exclusions afterwards).
 * Not installed. */
#ifndef FK_EVAL_H
#define FK_EVAL_H

#include "core/loops/eval_state.h"
#include "core/loops/figures.h"

struct fk_eval {
    /* What the pair loops read (src/core/loops/eval_state.h); they get &state, never the rest. */
    fk__eval_state state;
    /* Exclude afterwards: cl/pairwise.cl's fk_subtract_exclusions (molecular kernels in that mode)
     * and the partner lists of the current particles (NULL: none to subtract). */
    cl_kernel subtract;
    cl_program subtract_program;
    cl_mem excluded;
    /* What body holds (set_particles), for fk_eval_update_positions: pinned host memory (a mapped
     * CL_MEM_ALLOC_HOST_PTR buffer, body_pinned), so the coordinates go to the device by DMA;
     * body_written is the last write from it, waited for before the next update rewrites it. */
    cl_mem body_pinned;
    cl_event body_written;
    /* The output stage (src/core/eval/readback.c), sized at set_particles: with fp64, a forces pass
     * is followed by cl/decode.cl's kernel (decode_kernel), which writes the results in the
     * caller's layout (forces, then potentials, then the first overflowed particle) into `decoded`,
     * and by one read of that into pinned host memory (staging_host, the mapped `staging`). Without
     * fp64 the packed words are staged and the host decodes them. */
    cl_program decode_program;
    cl_kernel decode_kernel;
    int device_decode;
    size_t result_size; /* bytes per decoded value: 8 (double) or 4 (float) */
    cl_mem decoded, staging;
    void *staging_host;
    size_t staged_bytes;
    /* An enqueued compute not yet waited for (fk_eval_compute_async): the pass's first and last
     * events and the read's; pending is 1 until fk_eval_wait. */
    cl_event pending_first, pending_last, pending_read;
    double pending_since; /* fk__now() at compute_async: the wall-clock bound of the device time */
    int pending;
    long first_overflow; /* from the last wait: -1 none, else the first particle that overflowed */
    cl_int overflow_reset; /* the value the overflow word starts at (readback.c) */
    size_t rescales;       /* FK_SCALE_KEEP: computes redone after an overflow with a new scale */
    double bound_max_term, bound_max_sum; /* the last pre-pass's measured bound */
    int rescaling;                        /* 1 while the redone compute is waited for */
    /* fk_eval_positions_buffer (upload.c): the caller's pinned doubles, and on devices that
     * convert them the double buffer, the second particle buffer and the refusal flag. */
    cl_mem positions_pinned, positions_device, body_next, positions_flag;
    cl_program convert_program;
    cl_kernel convert_kernels[2]; /* from 3 doubles, from float4 (fk_eval_update_positions_cl) */
    cl_int positions_reset;
    /* The device conversion's verdict (the first particle with a non-finite coordinate, count
     * for none), read without blocking: a loop whose prepare waits for the device anyway (the
     * cell grid's displacement check) takes it there (fk__eval_positions_verdict), which saves
     * the update one round trip; otherwise the update waits for it after prepare. */
    cl_mem verdict_pinned; /* pinned host memory for it: a DMA, no bounce through a copy */
    /* fk_eval_set_results_cl: the caller's buffers (retained), NULL for the host staging. */
    cl_mem results_forces, results_potentials;
    /* The data-scaled accumulators' bound, reduced on the device (precision.c). */
    cl_program bound_program;
    cl_kernel bound_reduce;
    cl_mem bound_partials;
    double accum_scale;
    int reproducible;                /* -1 not asked, 0 asked but the device falls short, 1 yes */
    const char *reproducible_reason; /* what the device lacks */
    int computed;
    int tuned_j_splits;  /* from the tuning database entry, 0: none */
    size_t tuned_bucket; /* the entry's N bucket: its split applies only there */
    /* The pair loop of config.algorithm (src/core/loops/loop.h) and its state, which it owns. */
    const struct fk__loop *loop;
    void *loop_state;
    /* Why an automatic shape was narrowed to fit the built kernels ("" if not; issue #37). */
    char variant_note[384];
};

/* The figures of every kernel the evaluation holds (its loop's and the exclusion subtraction),
 * up to capacity; *count says how many there are (bench/kernel_info.c). */
fk_status fk__eval_kernel_figures(const fk_eval *eval, fk__kernel_figures *figures, size_t capacity,
                                  size_t *count);

/* For the tuner: the j-split (j_splits > 0; 0 automatic) the next set_particles applies. */
void fk__eval_set_j_splits(fk_eval *eval, int j_splits);

/* Event-profiled device seconds from the start of first to the end of last ; -1 when the
 * profiling information is missing. */
double fk__event_seconds(cl_event first, cl_event last);

/* Waits for the queue, then checks the execution status of first and last (last NULL: first
 * alone); a failed launch is reported as "kernel execution (what)". On success *seconds (may be
 * NULL) gets the device time from first's start to last's end. Releases both events. */
fk_status fk__eval_finish(fk_eval *eval, cl_event first, cl_event last, const char *what,
                          double *seconds);

#endif
