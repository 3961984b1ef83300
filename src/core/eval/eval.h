/* The evaluation object: the state the evaluation (src/core/eval/) shares with the pair loops of
 * src/core/loops/ (loop.h), which read the particles, physics and accumulator parameters from it
 * and leave their results in its result buffer. Not installed. */
#ifndef FK_EVAL_H
#define FK_EVAL_H

#include "core/internal.h"
#include "core/eval/plan.h"

#define FK_MAX_PHYSICS 16
_Static_assert(FK_MAX_PHYSICS >= FK__PHYSICS_FLOATS, "physics buffer too small for the force laws");

struct fk_eval {
    fk_context *context;
    const fk_kernel_desc *kernel;
    const fk_accum_desc *accum;
    fk_eval_config config;
    fk_variant variant;
    /* The configuration resolved once at create (plan.h): physics with defaults applied, skin,
     * loop, the shared build options. Read only, by the evaluation, the loops and the programs. */
    fk__plan plan;
    unsigned components; /* per particle on the device: force components + potential */
    size_t count;
    int j_chunk;
    cl_mem body, body_aux, table, physics, partial, result;
    /* Exclude afterwards: cl/pairwise.cl's fk_subtract_exclusions (molecular kernels in that mode)
     * and the partner lists of the current particles (NULL: none to subtract). */
    cl_kernel subtract;
    cl_program subtract_program;
    cl_mem excluded;
    /* What body holds (set_particles), for fk_eval_update_positions: pinned host memory (a mapped
     * CL_MEM_ALLOC_HOST_PTR buffer, body_pinned), so the coordinates go to the device by DMA;
     * body_written is the last write from it, waited for before the next update rewrites it. */
    float *host_body;
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
    /* fk_eval_set_share: the forces pass computes part share_part of share_parts (1: all), or
     * with share_explicit (fk_eval_set_share_range) the particles [share_from, share_to). A loop
     * whose share is a range of particles (all-pairs, lanes, full lists) sets share_first,
     * share_end and share_range 1 in its forces pass and the evaluation then writes zero results
     * outside it; one whose share is not (cells: a range of cells) zeroes the results itself
     * before its pass and sets share_range 0. The bound pre-pass covers the share only under
     * config.coordinated_scale (fk__share_applies, src/core/eval/share.c). */
    int share_part, share_parts;
    int share_explicit;
    size_t share_from, share_to;
    size_t share_first, share_end;
    int share_range;
    double bound_max_term, bound_max_sum; /* the last pre-pass's measured bound */
    int rescaling;                        /* 1 while the redone compute is waited for */
    /* fk_eval_positions_buffer (upload.c): the caller's pinned doubles, and on devices that
     * convert them the double buffer, the second particle buffer and the refusal flag. */
    double *positions_host;
    cl_mem positions_pinned, positions_device, body_next, positions_flag;
    /* FK__HOST_CHECK_COUNT (src/core/internal.h); tests lower it to reach the device's checks. */
    size_t host_check_count;
    /* 1 when host_body holds the positions on the device (set_particles and updates through the
     * host write it; updates converted on the device do not): the cell grid's check may then run
     * on the host. */
    int host_body_current;
    cl_program convert_program;
    cl_kernel convert_kernels[2]; /* from 3 doubles, from float4 (fk_eval_update_positions_cl) */
    cl_int positions_reset;
    /* The device conversion's verdict (the first particle with a non-finite coordinate, count
     * for none), read without blocking: a loop whose prepare waits for the device anyway (the
     * cell grid's displacement check) takes it there (fk__eval_positions_verdict), which saves
     * the update one round trip; otherwise the update waits for it after prepare. */
    cl_mem verdict_pinned;     /* pinned host memory for it: a DMA, no bounce through a copy */
    cl_int *positions_verdict; /* its mapped host word */
    cl_event verdict_read;     /* the read's event, NULL when no verdict is pending */
    int verdict_from_host;     /* the positions came from positions_host: name the coordinate */
    int positions_refused;     /* the last verdict refused the update */
    /* fk_eval_set_results_cl: the caller's buffers (retained), NULL for the host staging. */
    cl_mem results_forces, results_potentials;
    /* The data-scaled accumulators' bound, reduced on the device (precision.c). */
    cl_program bound_program;
    cl_kernel bound_reduce;
    cl_mem bound_partials;
    float physics_values[FK_MAX_PHYSICS];
    fk__forcelaw_state law; /* physics, pair table, exclusions (forcelaw.c) */
    double accum_scale;
    float acc_param[4];              /* the accumulator's per-launch parameters (accum.c) */
    int reproducible;                /* -1 not asked, 0 asked but the device falls short, 1 yes */
    const char *reproducible_reason; /* what the device lacks */
    int computed;
    int tuned_j_splits;  /* from the tuning database entry, 0: none */
    size_t tuned_bucket; /* the entry's N bucket: its split applies only there */
    /* The pair loop of config.algorithm (src/core/loops/loop.h) and its state, which it owns. */
    const struct fk__loop *loop;
    void *loop_state;
    /* Fitting an automatic shape to the built kernels (issue #37, src/core/programs/variant.c): the
     * largest work-group size the last refused kernel allows (0: none refused), the cap the loops
     * apply to an automatic work-group size (0: none), and why the shape was narrowed ("" if not).
     */
    int fit_group;
    int group_cap;
    char variant_note[384];
};

/* Double-single positions (config.positions): the particle buffers hold two float4 records per
 * particle (hi, lo; cl/forces/point.clh), and so does body_aux for gaj's velocities. */
static inline int fk__eval_ds(const fk_eval *eval)
{
    return eval->plan.double_single;
}

/* Floats per particle in body, host_body and body_next: 4, or 8 with double-single positions. */
static inline size_t fk__eval_body_floats(const fk_eval *eval)
{
    return fk__eval_ds(eval) ? 8 : 4;
}

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

/* An update converted on the device leaves its verdict on the coordinates pending while the
 * loop's prepare runs on the new particles: a prepare that waits for the device (after its own
 * blocking read, which in the in-order queue comes after the verdict's) calls this before it acts
 * on what it read. FK_OK when no verdict is pending or the coordinates are finite; else
 * FK_ERR_INVALID_INPUT naming the particle, eval->positions_refused set, and the prepare must
 * return it at once, leaving its own state as it was (the update then restores the previous
 * particles). */
fk_status fk__eval_positions_verdict(fk_eval *eval);

/* clCreateBuffer with the failure recorded as "clCreateBuffer (what, N bytes) failed: ..." and
 * mapped to FK_ERR_DEVICE_MEMORY where it is an allocation failure. */
fk_status fk__eval_create_buffer(fk_eval *eval, cl_mem *buffer, cl_mem_flags flags, size_t bytes,
                                 void *host, const char *what);

#endif
