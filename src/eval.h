/* The evaluation object: the state the evaluation (src/eval/) shares with the pair loops of
 * src/loops/ (loop.h), which read the particles, physics and accumulator parameters from it and
 * leave their results in its result buffer. Not installed. */
#ifndef FK_EVAL_H
#define FK_EVAL_H

#include "internal.h"

#define FK_MAX_PHYSICS 16
_Static_assert(FK_MAX_PHYSICS >= FK__PHYSICS_FLOATS, "physics buffer too small for the force laws");

struct fk_eval {
    fk_context *context;
    const fk_kernel_desc *kernel;
    const fk_accum_desc *accum;
    fk_eval_config config;
    fk_variant variant;
    unsigned components; /* per particle on the device: force components + potential */
    size_t count;
    int j_chunk;
    cl_mem body, body_aux, table, physics, partial, result;
    /* Exclude afterwards: cl/pairwise.cl's fk_subtract_exclusions (molecular kernels in that mode)
     * and the partner lists of the current particles (NULL: none to subtract). */
    cl_kernel subtract;
    cl_program subtract_program;
    cl_mem excluded;
    float *host_body; /* what body holds (set_particles), for fk_eval_update_positions */
    float physics_values[FK_MAX_PHYSICS];
    fk__forcelaw_state law; /* physics, pair table, exclusions (forcelaw.c) */
    double accum_scale;
    float acc_param[4];              /* the accumulator's per-launch parameters (accum.c) */
    int reproducible;                /* -1 not asked, 0 asked but the device falls short, 1 yes */
    const char *reproducible_reason; /* what the device lacks */
    int computed;
    int tuned_j_splits;  /* from the tuning database entry, 0: none */
    size_t tuned_bucket; /* the entry's N bucket: its split applies only there */
    /* The pair loop of config.algorithm (src/loops/loop.h) and its state, which it owns. */
    const struct fk__loop *loop;
    void *loop_state;
};

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

/* clCreateBuffer with the failure recorded as "clCreateBuffer (what, N bytes) failed: ..." and
 * mapped to FK_ERR_DEVICE_MEMORY where it is an allocation failure. */
fk_status fk__eval_create_buffer(fk_eval *eval, cl_mem *buffer, cl_mem_flags flags, size_t bytes,
                                 void *host, const char *what);

#endif
