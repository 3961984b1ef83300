/* The evaluation's state that the pair loops read (issue #35): the particles on the device, the
 * physics, the accumulator's parameters, the share and the result buffer. The evaluation
 * (src/core/eval/, struct fk_eval) holds one as its member `state` and hands the loops a pointer to
 * it; nothing else of the evaluation (its output stage, pending events, entry points) is visible
 * from src/core/loops/, so the loops depend on this header and never on the evaluation's. The
 * helpers declared here (src/core/loops/eval_state.c) work on this state alone; the evaluation
 * calls them too. Not installed. */
#ifndef FK_EVAL_STATE_H
#define FK_EVAL_STATE_H

#include "core/internal.h"
/* The plan's type (resolved in src/core/eval/plan.c, read here): a header of types and
 * declarations; no call goes up through it. */
#include "core/eval/plan.h"

#define FK_MAX_PHYSICS 16
_Static_assert(FK_MAX_PHYSICS >= FK__PHYSICS_FLOATS, "physics buffer too small for the force laws");

typedef enum fk__pass {
    FK__PASS_FORCES = 0, /* the chosen accumulator: forces (and potentials) */
    FK__PASS_BOUND       /* the `bound` accumulator: the data-scaled accumulators' pre-pass */
} fk__pass;

typedef struct fk__eval_state {
    fk_context *context;
    const fk_kernel_desc *kernel;
    const fk_accum_desc *accum;
    fk_eval_config config; /* FK_ALGORITHM_AUTO resolved to the loop that runs */
    fk_variant variant;    /* a loop's create may refine it to what it runs */
    /* The configuration resolved once at create (src/core/eval/plan.h): physics with defaults
     * applied, skin, loop, the shared build options. Read only. */
    fk__plan plan;
    unsigned components; /* per particle on the device: force components + potential */
    size_t count;        /* 0 until set_particles */
    int j_chunk;         /* the all-pairs split: j-particles per range */
    cl_mem body, body_aux, table, physics, partial, result;
    float physics_values[FK_MAX_PHYSICS];
    fk__forcelaw_state law; /* physics, pair table, exclusions (forcelaw.c) */
    float acc_param[4];     /* the accumulator's per-launch parameters (accum.c) */
    /* fk_eval_set_share: the forces pass computes part share_part of share_parts (1: all), or
     * with share_explicit (fk_eval_set_share_range) the particles [share_from, share_to). A loop
     * whose share is a range of particles (all-pairs, lanes, full lists) sets share_first,
     * share_end and share_range 1 in its forces pass and the evaluation then writes zero results
     * outside it; one whose share is not (cells: a range of cells) zeroes the results itself
     * before its pass and sets share_range 0. The bound pre-pass covers the share only under
     * config.coordinated_scale (fk__share_applies). */
    int share_part, share_parts;
    int share_explicit;
    size_t share_from, share_to;
    size_t share_first, share_end;
    int share_range;
    /* What body holds, in pinned host memory (set_particles); host_body_current is 1 when it holds
     * the positions on the device (set_particles and updates through the host write it; updates
     * converted on the device do not): the cell grid's check may then run on the host. */
    float *host_body;
    int host_body_current;
    /* FK__HOST_CHECK_COUNT (src/core/internal.h); tests lower it to reach the device's checks. */
    size_t host_check_count;
    /* The device conversion's verdict on an update (the first particle with a non-finite
     * coordinate, count for none), read without blocking into positions_verdict, a pinned word:
     * a loop whose prepare waits for the device anyway takes it there
     * (fk__eval_positions_verdict), which saves the update one round trip. positions_host: the
     * caller's doubles (fk_eval_positions_buffer), named in the refusal when verdict_from_host. */
    cl_int *positions_verdict;
    cl_event verdict_read; /* the read's event, NULL when no verdict is pending */
    int verdict_from_host;
    int positions_refused; /* the last verdict refused the update */
    double *positions_host;
    /* Fitting an automatic shape to the built kernels (issue #37, fk__variant_fit_kernel): the
     * largest work-group size the last refused kernel allows (0: none refused), and the cap the
     * loops apply to an automatic work-group size (0: none). */
    int fit_group;
    int group_cap;
} fk__eval_state;

/* Double-single positions (config.positions): the particle buffers hold two float4 records per
 * particle (hi, lo; cl/forces/point.clh), and so does body_aux for gaj's velocities. */
static inline int fk__eval_ds(const fk__eval_state *eval)
{
    return eval->plan.double_single;
}

/* Floats per particle in body, host_body and body_next: 4, or 8 with double-single positions. */
static inline size_t fk__eval_body_floats(const fk__eval_state *eval)
{
    return fk__eval_ds(eval) ? 8 : 4;
}

/* The evaluation's accumulator parameters as the kernels take them. */
cl_float4 fk__eval_acc_param(const fk__eval_state *eval);

/* clCreateBuffer with the failure recorded as "clCreateBuffer (what, N bytes) failed: ..." and
 * mapped to FK_ERR_DEVICE_MEMORY where it is an allocation failure. */
fk_status fk__eval_create_buffer(const fk__eval_state *eval, cl_mem *buffer, cl_mem_flags flags,
                                 size_t bytes, void *host, const char *what);

/* An update converted on the device leaves its verdict on the coordinates pending while the
 * loop's prepare runs on the new particles: a prepare that waits for the device (after its own
 * blocking read, which in the in-order queue comes after the verdict's) calls this before it acts
 * on what it read. FK_OK when no verdict is pending or the coordinates are finite; else
 * FK_ERR_INVALID_INPUT naming the particle, positions_refused set, and the prepare must return it
 * at once, leaving its own state as it was (the update then restores the previous particles). */
fk_status fk__eval_positions_verdict(fk__eval_state *eval);

/* Is a share set (a part of several, or an explicit range)? */
int fk__share_active(const fk__eval_state *eval);
/* fk_eval_set_share: part share_part of `units` (i-blocks, cells, particles) as [*first, *end),
 * the same split on every part; [0, units) without a share. */
void fk__share_units(const fk__eval_state *eval, size_t units, size_t *first, size_t *end);
/* Does this pass compute only the share? The forces pass always; the bound pre-pass when the
 * parts choose the scale together (config.coordinated_scale): each part then measures the bound of
 * its own share's terms and the caller combines them (the maximum of each), so the pre-pass is
 * divided among the parts like the forces. Without coordination every part measures every term,
 * so that each chooses the unshared scale by itself. */
int fk__share_applies(const fk__eval_state *eval, fk__pass pass);

#endif
