/* The host pair-loop interface (issue #14): one table of operations per loop, one file per loop
 * under src/core/loops/. The evaluation (src/core/eval/) chooses the loop from
 * fk_eval_config.algorithm and only calls it; a loop never calls back into fk_eval_compute or the
 * evaluation's entry points. It may use the evaluation's shared state (struct fk_eval: particles,
 * physics, accumulator parameters, the result buffer) and the small helpers of eval.h. Not
 * installed.
 *
 * Life of a loop, as the evaluation drives it:
 *   supports  before anything is built: can the loop run this force law and accumulator with this
 *             configuration on this device? FK_OK, or the status to report and the reason.
 *   create    builds the loop's programs (forces and, for the data-scaled accumulators, the bound
 *             pre-pass) from the request the evaluation prepared (force law, accumulator, variant
 *             shape, build switches); may refine eval->variant to what it runs. Owns *state.
 *   prepare   after every upload (set_particles, update_positions): eval->count, body, body_aux,
 *             table, physics, result (and partial, the all-pairs split of eval->j_chunk) hold the
 *             new particles; the loop sizes its own buffers and brings its structures up to date.
 *   enqueue   one pass over the pairs: FK__PASS_FORCES writes the packed results of the chosen
 *             accumulator into eval->result; FK__PASS_BOUND writes the `bound` accumulator's
 *             per-particle (largest |term|, sum of |terms|) into eval->result, for the evaluation's
 *             choice of the accumulator parameters. Commands go to the in-order queue; *first and
 *             *last (NULL: same as first) are the events of the first and last command, which the
 *             evaluation waits on (after appending the exclusion subtraction to a forces pass). On
 *             failure the loop drains the queue, releases its events and leaves both NULL.
 *   figures   clGetKernelWorkGroupInfo of its kernels (bench/kernel_info.c).
 *   tuning_space, default_shape  for the tuner (src/core/tune/tune.c): the shapes worth measuring
 * for this loop, and the untuned baseline its create picks without a database entry; the tuner runs
 * each shape through fk_eval_create with config.algorithm set, and the winner is stored in the
 * tuning database under the loop's name, where create looks it up. destroy   releases *state (may
 * be NULL).
 *
 * What comes next plugs in as new loop files, without a change here:
 * - Targets against sources (the GRAPE-6/Sapporo layer) became an engine of its own instead,
 *   fk_sources (src/core/sources/sources.c, cl/g6.cl): its i-set and j-set have different sizes,
 * positions in double-single and a predictor, which an fk_eval of one particle set would only carry
 * as special cases (docs/architecture.md says more).
 * - j-sets split across MPI ranks: a loop given a j-range or a j-buffer (its state, set before
 *   prepare through the loop's own setter) evaluates eval's i-particles against that range only;
 *   the caller sums the ranks' packed fixed-point results (fixed64 sums exactly, in any order).
 * - Caller-owned OpenCL buffers: a loop (or a wrapper around any loop's table) whose prepare takes
 *   the caller's cl_mem for body/body_aux instead of the evaluation's upload; the loop sees only
 *   cl_mem handles in struct fk_eval, so the kernels and enqueue code are unchanged.
 */
#ifndef FK_LOOP_H
#define FK_LOOP_H

#include "core/eval/eval.h"
#include "core/loops/symmetric.h" /* fk__kernel_figures */

typedef enum fk__pass {
    FK__PASS_FORCES = 0, /* the chosen accumulator: forces (and potentials) */
    FK__PASS_BOUND       /* the `bound` accumulator: the data-scaled accumulators' pre-pass */
} fk__pass;

/* One point of a loop's tuning space, as fk_eval_config would pin it (local_tiling 1 on, 0 off;
 * j_splits 0 automatic; lanes 0 the scalar template). coordinate: the index along each searched
 * dimension (unroll I, unroll J, work-group size, tiling, split, lanes), so that the tuner can
 * measure neighbours of the best first. */
typedef struct fk__loop_shape {
    int unroll_i, unroll_j, work_group_size, local_tiling, j_splits, lanes;
    int coordinate[6];
} fk__loop_shape;

/* What the tuning space depends on: the device, the search's pinned dimensions (fk_tune_config:
 * unroll_i, unroll_j, work_group_size, local_tiling, j_splits, lanes; 0 searches), the N being
 * measured and the widest lanes the device holds for this kernel (0: none). */
typedef struct fk__tuning_query {
    fk_context *context;
    const char *kernel, *accum;
    const fk_tune_config *pinned;
    size_t n;
    int lane_width;
} fk__tuning_query;

typedef struct fk__loop {
    const char *name; /* fk_algorithm_name */
    fk_status (*supports)(fk_context *context, const fk_kernel_desc *kernel,
                          const fk_accum_desc *accum, const fk_eval_config *config,
                          const fk__physics *physics, char *reason, size_t reason_size);
    fk_status (*create)(fk_eval *eval, const fk_program_request *request, void **state);
    fk_status (*prepare)(fk_eval *eval, void *state);
    fk_status (*enqueue)(fk_eval *eval, void *state, fk__pass pass, cl_event *first,
                         cl_event *last);
    /* Writes up to capacity figures; returns how many the loop has. */
    size_t (*figures)(const fk_eval *eval, const void *state, fk__kernel_figures *figures,
                      size_t capacity);
    void (*destroy)(void *state);
    /* A malloc'ed array of shapes in *shapes; returns the count (0 with *shapes NULL: none or no
     * memory). */
    size_t (*tuning_space)(const fk__tuning_query *query, fk__loop_shape **shapes);
    void (*default_shape)(const fk__tuning_query *query, fk__loop_shape *shape);
    /* Forgets the current build (cells, lists), so that the next prepare rebuilds from the
     * positions then on the device; NULL for loops that keep none. For a caller that decides when
     * the lists are stale itself (the integrator, src/core/integrate/integrator.c: its check on the
     * device is against the positions of the build it asked for). */
    void (*invalidate)(void *state);
} fk__loop;

/* The index of value in values[0 .. count), for shape coordinates; count when absent. */
int fk__shape_index(const int *values, int count, int value);

extern const fk__loop fk__loop_all_pairs; /* src/core/loops/allpairs.c: cl/pairwise.cl */
/* src/core/loops/lanes.c: cl/pairwise_lanes.cl, the all-pairs loop when variant.lanes > 0 */
extern const fk__loop fk__loop_lanes;
extern const fk__loop fk__loop_symmetric; /* src/core/loops/symmetric.c: cl/symmetric.cl */
extern const fk__loop fk__loop_cells;     /* src/core/loops/cells.c: cl/cells.cl, cells_build.cl */
/* src/core/loops/neighbors.c: cl/neighbors.cl, neighbors_build.cl (on the grid of cells_build.cl)
 */
extern const fk__loop fk__loop_neighbors;

/* The loop of an algorithm; NULL for an unknown one. All-pairs with lanes is fk__loop_lanes. */
const fk__loop *fk__loop_for(int algorithm);

/* Newton's third law for an accumulator, the symmetric loop's rule: 1 for float, double and
 * fixed64, whose merging of short partial sums is validated (src/core/loops/symmetric.c says why
 * the others are not). The symmetric loop takes exactly these; the neighbour lists are half lists
 * exactly for these. */
int fk__accum_allows_newton(const fk_accum_desc *accum);

/* One kernel argument for fk__set_kernel_args: FK__ARG(value) for a variable, FK__ARG_MEM(buffer)
 * for a cl_mem (the same thing, spelled for reading), FK__ARG_SKIP for one set per launch. */
typedef struct fk__kernel_arg {
    size_t size;
    const void *value; /* NULL with size 0: leave this argument alone */
} fk__kernel_arg;
#define FK__ARG(variable) ((fk__kernel_arg){sizeof(variable), &(variable)})
#define FK__ARG_SKIP ((fk__kernel_arg){0, NULL})

/* Sets arguments first, first + 1, ... of kernel from args[0 .. count). On failure records
 * "clSetKernelArg (what, argument K) failed: ..." and returns its status, so a changed kernel
 * signature is named, not just detected. */
fk_status fk__set_kernel_args(fk_context *context, cl_kernel kernel, const char *what,
                              cl_uint first, const fk__kernel_arg *args, size_t count);
#define FK__SET_ARGS(context, kernel, what, first, ...)                                            \
    fk__set_kernel_args(context, kernel, what, first, (const fk__kernel_arg[]){__VA_ARGS__},       \
                        sizeof((const fk__kernel_arg[]){__VA_ARGS__}) / sizeof(fk__kernel_arg))

/* The evaluation's accumulator parameters as the kernels take them. */
cl_float4 fk__eval_acc_param(const fk_eval *eval);

/* A loop's kernel and the name its figures go under. */
typedef struct fk__named_kernel {
    cl_kernel kernel; /* NULL: not built, skipped */
    const char *name;
} fk__named_kernel;
/* The figures of the built ones among kernels[0 .. count), up to capacity; returns how many
 * there are (the figures operation of every loop). */
size_t fk__figures_of_kernels(fk_context *context, const fk__named_kernel *kernels, size_t count,
                              fk__kernel_figures *figures, size_t capacity);

/* clGetKernelWorkGroupInfo of one kernel (figures). */
void fk__kernel_figures_of(fk_context *context, cl_kernel kernel, const char *name,
                           fk__kernel_figures *out);

/* The all-pairs launch (fk_pairwise, then fk_reduce_splits when the j-range is split), shared with
 * the symmetric loop, whose bound pre-pass runs the all-pairs program built for that purpose:
 * shape is the variant the kernels were compiled for, splits the j-ranges of eval->j_chunk
 * particles each, into eval->partial. shared: a forces pass, which computes only the i-blocks of
 * the evaluation's share (fk__share_units) and records the particle range in share_first/end. */
fk_status fk__all_pairs_enqueue(fk_eval *eval, cl_kernel pairwise, cl_kernel reduce,
                                const fk_variant *shape, int splits, int shared, cl_event *first,
                                cl_event *last);

/* fk_eval_set_share: part share_part of `units` (i-blocks, cells, particles) as [*first, *end),
 * the same split on every part; [0, units) without a share. */
void fk__share_units(const fk_eval *eval, size_t units, size_t *first, size_t *end);
/* Does this pass compute only the share? The forces pass always; the bound pre-pass when the
 * parts choose the scale together (config.coordinated_scale): each part then measures the bound of
 * its own share's terms and the caller combines them (the maximum of each), so the pre-pass is
 * divided among the parts like the forces. Without coordination every part measures every term,
 * so that each chooses the unshared scale by itself. */
int fk__share_applies(const fk_eval *eval, fk__pass pass);

/* Builds the all-pairs program of request (pairwise.cl or the lane file) and its two kernels. */
fk_status fk__all_pairs_build(fk_eval *eval, const fk_program_request *request, cl_program *program,
                              cl_kernel *pairwise, cl_kernel *reduce, fk_program_result *built);

#endif
