/* The host pair-loop interface (issues #14, #35): one table entry per loop, one file per loop
 * under src/core/loops/, the table in table.c. A loop describes itself in its entry (how it
 * shares the work, Newton's third law, its reach, the pairs it counts, its tunable shape, the
 * accumulators and positions it takes), and every caller (the evaluation, the tuner, shares, the
 * CLI) asks the entry instead of comparing algorithms. The evaluation (src/core/eval/) chooses
 * the loop and only calls its operations, with its state (eval_state.h: particles, physics,
 * accumulator parameters, the result buffer); a loop never includes or calls the evaluation.
 * docs/extending.md ("Add a pair loop") says what a new loop takes. Not installed.
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
 *             for this loop, and the untuned baseline its create picks without a database entry;
 *             the tuner runs each shape through fk_eval_create with config.algorithm set, and the
 *             winner is stored in the tuning database under the loop's name, where create looks it
 *             up.
 *   destroy   releases *state (may be NULL).
 *
 * What comes next plugs in as new loop files, without a change here:
 * - Targets against sources (the GRAPE-6/Sapporo layer) became an engine of its own instead,
 *   fk_sources (src/core/sources/sources.c, cl/g6.cl): its i-set and j-set have different sizes,
 *   positions in double-single and a predictor, which an fk_eval of one particle set would only
 *   carry as special cases (docs/architecture.md says more).
 * - j-sets split across MPI ranks: a loop given a j-range or a j-buffer (its state, set before
 *   prepare through the loop's own setter) evaluates eval's i-particles against that range only;
 *   the caller sums the ranks' packed fixed-point results (fixed64 sums exactly, in any order).
 * - Caller-owned OpenCL buffers: a loop (or a wrapper around any loop's table) whose prepare takes
 *   the caller's cl_mem for body/body_aux instead of the evaluation's upload; the loop sees only
 *   cl_mem handles in its state, so the kernels and enqueue code are unchanged.
 */
#ifndef FK_LOOP_H
#define FK_LOOP_H

#include "core/loops/eval_state.h"
#include "core/loops/figures.h"

/* ---- What a loop says of itself (its table entry; the callers ask these) ------------------- */

/* Newton's third law: does a pass write both particles of each pair? */
typedef enum fk__newton {
    FK__NEWTON_NEVER = 0, /* each i-particle sums its own terms (all-pairs, cells, full lists) */
    FK__NEWTON_ALWAYS,    /* every pair once, both particles written (symmetric) */
    FK__NEWTON_HALF_LISTS /* when its lists are half lists (variant.neighbor_half_lists) */
} fk__newton;

/* What a share (fk_eval_set_share) divides among the parts, while the loop does not use Newton's
 * third law (a pass that writes both particles of a pair cannot be shared). */
typedef enum fk__share_unit {
    FK__SHARE_PARTICLES = 0, /* ranges of i-particles: fk_eval_set_share and _range */
    FK__SHARE_CELLS          /* ranges of cells: fk_eval_set_share only */
} fk__share_unit;

/* Which pairs a pass examines, and how many it counts (fk_variant.pairs_examined). */
typedef enum fk__reach {
    FK__REACH_ALL = 0,    /* every pair; pairs_examined stays 0 (N^2 counted) */
    FK__REACH_CUTOFF_SKIN /* the partners within cutoff + skin, on a cell grid (needs a cutoff);
                             pairs_examined counts those of the last build */
} fk__reach;

/* The accumulators a loop takes (its supports refuses the others, naming why). */
typedef enum fk__loop_accums {
    FK__ACCUMS_ALL = 0,   /* every accumulator */
    FK__ACCUMS_NEWTON,    /* those whose partial sums may be merged (fk__accum_allows_newton) */
    FK__ACCUMS_LANE_FORMS /* those with a lane form for the kernel (src/core/loops/lanes.c) */
} fk__loop_accums;

/* What FK_ALGORITHM_AUTO (src/core/eval/choose.c) may pick. */
typedef enum fk__loop_auto {
    FK__AUTO_NEVER = 0,   /* only by name */
    FK__AUTO_MEASURED,    /* when the tuning database measured it fastest for the N */
    FK__AUTO_SHORT_RANGE, /* the untuned choice for short-range laws above the break-even N */
    FK__AUTO_REFERENCE    /* the reference loop: every law; the untuned choice otherwise */
} fk__loop_auto;

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
    int algorithm;    /* fk_algorithm */
    /* The reference loop (all-pairs): every force law, accumulator and position format; the one
     * fk_tune_run tunes, whose tuning entries carry no loop name, and the fallback of choices
     * that cannot take another loop. Exactly one entry has it. */
    int reference;
    fk__newton newton;
    /* Why a share is refused while Newton's third law is used (the message of
     * fk_eval_set_share); NULL for FK__NEWTON_NEVER. */
    const char *newton_refusal;
    fk__share_unit share_unit;
    fk__reach reach;
    fk__loop_accums accums;
    int double_single; /* takes double-single positions (reads particles only through the laws) */
    fk__loop_auto automatic;
    /* Tunable shape: 1 when j_splits is built into the program (a new evaluation per value),
     * 0 when it is a launch setting of one evaluation. */
    int split_in_program;
    /* In a lane form (an entry that runs another loop with variant.lanes > 0, the all-pairs
     * loop's lane template): the loop it is a form of; NULL in the loops themselves, whose lane
     * form fk__loop_lane_form finds. A lane form names its loop and not the reverse, so that the
     * form may run the loop's launch without the two files calling each other. list_lanes: the
     * loop's lanes are list partners per step on CPUs. */
    const struct fk__loop *lane_of;
    int list_lanes;
    fk_status (*supports)(fk_context *context, const fk_kernel_desc *kernel,
                          const fk_accum_desc *accum, const fk_eval_config *config,
                          const fk__physics *physics, char *reason, size_t reason_size);
    fk_status (*create)(fk__eval_state *eval, const fk_program_request *request, void **state);
    fk_status (*prepare)(fk__eval_state *eval, void *state);
    fk_status (*enqueue)(fk__eval_state *eval, void *state, fk__pass pass, cl_event *first,
                         cl_event *last);
    /* Writes up to capacity figures; returns how many the loop has. */
    size_t (*figures)(const fk__eval_state *eval, const void *state, fk__kernel_figures *figures,
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

/* Release the OpenCL objects among objects[0 .. count) that are not NULL (a loop's destroy, the
 * evaluation's programs); FK__RELEASE_KERNELS(a, b, ...) lists them in place. */
void fk__release_kernels(const cl_kernel *kernels, size_t count);
void fk__release_programs(const cl_program *programs, size_t count);
void fk__release_buffers(const cl_mem *buffers, size_t count);
#define FK__RELEASE_KERNELS(...)                                                                   \
    fk__release_kernels((const cl_kernel[]){__VA_ARGS__},                                          \
                        sizeof((const cl_kernel[]){__VA_ARGS__}) / sizeof(cl_kernel))
#define FK__RELEASE_PROGRAMS(...)                                                                  \
    fk__release_programs((const cl_program[]){__VA_ARGS__},                                        \
                         sizeof((const cl_program[]){__VA_ARGS__}) / sizeof(cl_program))
#define FK__RELEASE_BUFFERS(...)                                                                   \
    fk__release_buffers((const cl_mem[]){__VA_ARGS__},                                             \
                        sizeof((const cl_mem[]){__VA_ARGS__}) / sizeof(cl_mem))

/* The index of value in values[0 .. count), for shape coordinates; count when absent. */
int fk__shape_index(const int *values, int count, int value);

/* ---- The table (table.c) ------------------------------------------------------------------ */

/* The loop of an algorithm; NULL for an unknown one (or FK_ALGORITHM_AUTO, a choice). */
const fk__loop *fk__loop_for(int algorithm);
/* The loop that runs variant: its algorithm's, or that loop's lane form when variant.lanes > 0. */
const fk__loop *fk__loop_for_variant(const fk_variant *variant);
/* The entry that runs loop with variant.lanes > 0 (its lane template), NULL for none. */
const fk__loop *fk__loop_lane_form(const fk__loop *loop);
/* The entries, in algorithm order: fk__loop_at(0 .. fk__loop_count() - 1); lane forms are not
 * entries of their own. */
size_t fk__loop_count(void);
const fk__loop *fk__loop_at(size_t index);
/* The reference loop (fk__loop.reference), and the untuned short-range choice of
 * FK_ALGORITHM_AUTO (FK__AUTO_SHORT_RANGE). */
const fk__loop *fk__loop_reference(void);
const fk__loop *fk__loop_short_range(void);
/* Does the loop, as variant says it ran, use Newton's third law (write both particles of a
 * pair)? */
int fk__loop_uses_newton(const fk__loop *loop, const fk_variant *variant);
/* Does the loop take this accumulator (fk__loop.accums; FK__ACCUMS_LANE_FORMS answers 1: its
 * supports asks the kernel)? */
int fk__loop_takes_accum(const fk__loop *loop, const fk_accum_desc *accum);

/* For reports (the CLI): does the algorithm's loop build a cell grid (its reach is cutoff + skin:
 * the variant's cell_* fields and pairs_examined describe the build), and does it build neighbour
 * lists (FK__NEWTON_HALF_LISTS: the variant's neighbor_half_lists says which)? 0 when unknown. */
int fk__loop_reports_grid(int algorithm);
int fk__loop_reports_lists(int algorithm);

/* The built-in default shape of the all-pairs template for a device: the last fallback of the
 * variant choice, and the tuner's untuned baseline (allpairs.c). */
void fk__builtin_variant(const fk_device_info *device, fk_variant *variant);

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
 * particles each, into eval->partial. share_only: a forces pass, which computes only the i-blocks
 * of the evaluation's share (fk__share_units) and records the particle range in share_first/end. */
fk_status fk__all_pairs_enqueue(fk__eval_state *eval, cl_kernel pairwise, cl_kernel reduce,
                                const fk_variant *shape, int splits, int share_only,
                                cl_event *first, cl_event *last);

/* Builds the all-pairs program of request (pairwise.cl or the lane file) and its two kernels. */
fk_status fk__all_pairs_build(fk__eval_state *eval, const fk_program_request *request,
                              cl_program *program, cl_kernel *pairwise, cl_kernel *reduce,
                              fk_program_result *built);

/* A built kernel against the device's word on it (CL_KERNEL_WORK_GROUP_SIZE,
 * CL_KERNEL_LOCAL_MEM_SIZE against CL_DEVICE_LOCAL_MEM_SIZE) at work-group size group: FK_OK, or
 * FK_ERR_UNSUPPORTED with the message (loop: the loop's variant words, e.g. "variant 4x1"; name:
 * the kernel) and eval->fit_group set to the largest power-of-two work-group size that it allows
 * (0: none), which fk_eval_create takes when the work-group size was automatic
 * (helpers.c). */
fk_status fk__variant_fit_kernel(fk__eval_state *eval, cl_kernel kernel, int group,
                                 const char *loop, const char *name);
/* An automatic work-group size under the evaluation's cap (eval->group_cap; 0: none). */
int fk__variant_capped_group(const fk__eval_state *eval, int group);

#endif
