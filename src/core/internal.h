/* Library internals shared by the modules in src/. Not installed. */
#ifndef FK_INTERNAL_H
#define FK_INTERNAL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "forcekit/forcekit.h"

#if defined(__GNUC__)
#define FK_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define FK_PRINTF(fmt, args)
#endif

struct fk_context {
    fk_device_info info;
    cl_platform_id platform;
    cl_device_id device;
    cl_context cl;
    cl_command_queue queue;  /* in-order */
    int profiling;           /* the queue records device times (fk_context_config.device_timing) */
    char *kernel_dir;        /* FK__BUILT_IN (install_paths.h) for the built-in copy */
    int kernels_built_in;    /* the kernel sources are the copy compiled into the library */
    char kernel_version[32]; /* kernel_dir/VERSION, "unknown" without one */
    char *cache_dir;         /* NULL: cache off */
    char *last_error;
    size_t last_error_capacity;
    struct fk_tuning_db *tuning; /* tuning databases and this device's keys (tune/db.h) */
    char *warnings;              /* fk_context_warnings: not errors, never cleared */
    int native_rsqrt; /* src/core/probes/lanes_rsqrt.c: 0 not probed yet, 1 a good estimate, 2 not
                       */
    struct fk__program_memo *programs; /* program.c: the built programs, in front of the disk */
    /* 1 once the context was created in full. A failed fk_context_create still hands the caller
     * its context, for fk_context_last_error; every other call must refuse it (issue #32). */
    int ready;
    struct fk__known_answers *known_answers; /* known_answer.c: the programs checked (#37) */
    int timing_warned; /* timing.c: the warning about implausible event times was given */
    /* known_answer.c: the last check refused its program (wrong forces, not a device limit), and
     * its error relative to the largest force; the tuner reports such a variant as wrong */
    int known_answer_refused;
    double known_answer_error;
    /* loop_limit.c: iterations of one kernel loop that land on this device; 0 not probed yet */
    cl_uint loop_limit;
};

/* Appends a line to a malloc'ed warnings text (src/core/devices/warnings.c): a context's
 * warnings, the lines the library collects where a command line would print (a corrupt tuning
 * database, a cache that cannot be written, a kernel version mismatch), read with
 * fk_context_warnings. */
void fk__warn(char **warnings, const char *format, ...) FK_PRINTF(2, 3);

/* FK_OK for a context created in full; FK_ERR_INVALID_ARGUMENT for NULL or a context whose creation
 * failed. Records nothing: a failed context keeps the detail of its failure for
 * fk_context_last_error. The first check of every entry point that takes a context. */
fk_status fk__context_usable(const fk_context *context);
/* A file of the context's kernel sources, relative to the kernel directory ("forces/ga.clh"): read
 * from the directory in use, or from the built-in copy when that is what the context found.
 * Malloc'ed and NUL-terminated (its length in *size when not NULL), or NULL. */
char *fk__kernel_source_read(const fk_context *context, const char *relative, size_t *size);

/* The steps of putting a context together (src/core/context/context.c calls them in order). The
 * device layer (src/core/devices/context.c): open the selected device with its OpenCL context and
 * queue, or check and retain the caller's (fk_context_create_cl's rules); release them. The
 * programs layer (src/core/programs/kernel_dir.c): find the kernel directory (configured, then
 * FORCEKIT_KERNEL_DIR, the installed and build-tree copies, the built-in one) and read the version
 * its sources carry (a mismatch is a warning). Each records its failure in the context. */
fk_status fk__context_open_device(fk_context *context, const fk_context_config *config);
fk_status fk__context_adopt_cl(fk_context *context, cl_context cl, cl_device_id device,
                               cl_command_queue queue, const fk_context_config *config);
void fk__context_release_device(fk_context *context);
fk_status fk__kernel_dir_resolve(fk_context *context, const char *configured);
void fk__kernel_version_read(fk_context *context);

/* A pair-loop variant's shape is valid (variant.c, the one place for these rules): unroll IxJ with
 * I, J in 1, 2, 4, 8 (0x0: automatic), work-group size 1 or more (0: automatic; the device sets
 * the upper bound), local tiling 1 on, -1 off, 0 automatic, and with tiling on a work-group size
 * that is a multiple of J. Returns 1, or 0 with the reason. */
int fk__variant_check(int unroll_i, int unroll_j, int work_group_size, int local_tiling,
                      char *reason, size_t reason_size);

/* 1 when native_rsqrt on this device is an estimate good enough for one Newton step (probed once
 * per context; src/core/probes/lanes_rsqrt.c). */
int fk__native_rsqrt_estimate_ok(fk_context *context);
/* FK_OK when an evaluation of n particles cannot meet this device's cap on a kernel loop's
 * iterations (Mesa's llvmpipe stops every loop after 65,535 without an error); else
 * FK_ERR_UNSUPPORTED with the reason. Probes the device once per context, and only for n above
 * 65,535 (src/core/probes/loop_limit.c). */
fk_status fk__loop_limit_check(fk_context *context, size_t n);
/* The most iterations one kernel loop runs on this device (the probe's count), or CL_UINT_MAX when
 * it has no cap or none could be measured; a kernel that needs `iterations` asks, so the probe runs
 * only above 65,535 (once per context). For kernels that can split their work into more launches
 * (the device rand48 generator). */
cl_uint fk__loop_limit(fk_context *context, size_t iterations);

/* 1 when a successful build's log holds a warning worth keeping (src/core/programs/program.c): a
 * line with "warning", other than NVIDIA's notes on kernels' noinline attribute. */
int fk__build_log_warns(const char *log);
/* Copies a caller's configuration struct (in, whose first member is struct_size) into out
 * (out_size bytes, this library's layout): only the bytes the caller's version has, the rest zero
 * (defaults); struct_size 0 means size_0_2, the layout of 0.2.0. FK_ERR_INVALID_ARGUMENT, with the
 * reason recorded on context (may be NULL), for an implausible size or a larger struct that sets
 * bytes this library does not know. */
fk_status fk__config_copy(fk_context *context, const char *type, void *out, size_t out_size,
                          const void *in, size_t size_0_2);
/* The sizes of 0.2.0's configuration structs (their last member's end), what struct_size 0 means.
 */
#define FK__SIZE_0_2(type, last) (offsetof(type, last) + sizeof(((type *)0)->last))

/* Records the detail of a failure and returns status (so callers can `return fk__fail(...)`). */
fk_status fk__fail(fk_context *context, fk_status status, const char *format, ...) FK_PRINTF(3, 4);
/* Appends more detail (a build log) to the last error. */
void fk__append_error(fk_context *context, const char *text);
void fk__clear_error(fk_context *context);

/* "CL_OUT_OF_RESOURCES" */
const char *fk__cl_error_name(cl_int code);
/* Maps an OpenCL error of a call to a status: allocation failures become FK_ERR_DEVICE_MEMORY. */
fk_status fk__cl_status(cl_int code);
/* fk__fail with "CALL failed: CL_..." */
fk_status fk__cl_fail(fk_context *context, const char *call, cl_int code);

/* A host array in pinned memory (issue #16): a CL_MEM_ALLOC_HOST_PTR buffer of bytes, mapped on the
 * context's queue for the caller's lifetime; transfers between it and device buffers are DMA at
 * the bus's speed, where pageable memory goes through the driver's bounce buffer. *host is NULL
 * on failure. fk__pinned_release unmaps (waiting for the queue) and releases; both may be called
 * on a NULL buffer. */
fk_status fk__pinned_create(fk_context *context, size_t bytes, cl_mem *buffer, void **host,
                            const char *what);
void fk__pinned_release(fk_context *context, cl_mem *buffer, void **host);

/* clEnqueueFillBuffer of bytes (a multiple of pattern_size) at offset 0; written from the host on
 * FK_DEVICE_OTHER devices (fill.c says why). */
cl_int fk__enqueue_fill(fk_context *context, cl_mem buffer, const void *pattern,
                        size_t pattern_size, size_t bytes, cl_uint wait_count,
                        const cl_event *wait_list, cl_event *event);
/* The same at a byte offset (a multiple of pattern_size). */
cl_int fk__enqueue_fill_at(fk_context *context, cl_mem buffer, const void *pattern,
                           size_t pattern_size, size_t offset, size_t bytes, cl_uint wait_count,
                           const cl_event *wait_list, cl_event *event);

/* Device queries used by context creation (device.c). */
fk_status fk__device_fill_info(cl_platform_id platform, cl_device_id device,
                               unsigned platform_index, unsigned device_index,
                               fk_device_info *info);
/* Finds a device by selector; on success platform and device are set and *info filled. Errors are
 * written to message[message_size]. */
fk_status fk__device_open(const char *selector, cl_platform_id *platform, cl_device_id *device,
                          fk_device_info *info, char *message, size_t message_size);

/* One descriptor per force law (src/core/laws/<name>.c), listed once in src/core/laws/registry.c:
 * everything the host knows of a law. The device side is its header cl/forces/<name>.clh; adding a
 * law is those two files, one registry line and a test (docs/extending.md). */
/* Force-law options with the defaults applied (forcelaw.c). */
typedef struct fk__physics {
    double eps;                           /* gravity */
    double cutoff;                        /* 0: none */
    double coulomb;                       /* k */
    double parameters[FK_LAW_PARAMETERS]; /* the law's named parameters, defaults applied */
    double box[3];
    int periodic, shifted;
} fk__physics;

typedef struct fk_kernel_desc {
    fk_kernel_info info; /* the public part: name, columns, flops, named parameters */
    int uses_aux;        /* body_aux carries a second float4 per particle (velocity, type) */
    int uses_table;      /* typed pair table: the molecular laws (src/core/laws/forcelaw.c) */
    /* 1: the header has a lane form (FK_INTERACT_LANES) for cl/pairwise_lanes.cl. Kept here so
     * that fk_eval_create need not read headers; tests/test_lanes.c checks the headers agree. */
    int lanes;
    /* 1: the header has a lane form over partners (FK_LAW_PAIR_LANES, for the lane form of
     * cl/neighbors.cl); tests/test_lanes.c checks the headers agree. */
    int list_lanes;
    int needs_velocity; /* gravity: body_aux holds the velocities (gaj's jerk) */

    /* Molecular laws (uses_table). */
    int charged;                /* body.w is the particle's charge (0: the law has none, as lj) */
    double default_cutoff;      /* what cutoff 0 means; 0: none (plain all-pairs) */
    unsigned table_stride;      /* values per type pair in the device table (FK_TABLE_STRIDE) */
    const double *default_pair; /* the pair parameters of the default single-type table */
    /* 1 when a pair's parameters (pair_parameters of them, finite) are valid; else 0 with the
     * reason, e.g. "epsilon = -1, sigma = 1; both must be >= 0". */
    int (*check_pair)(const double *values, char *reason, size_t reason_size);
    /* A pair's device table entry from its parameters, in double: the short-range coefficients;
     * the force shift's two values follow at shift_entry (written by forcelaw.c). The device gets
     * them rounded to float, or in double for an accumulator of double pair arithmetic (ref). */
    void (*pack_pair)(const double *values, double *entry);
    unsigned shift_entry;
    /* Pair parameters that switch the short-range part off, so that pair_function at q_i q_j = 1
     * gives the charge part alone (its force-shift constants); NULL: no charge part. */
    const double *no_short_range;
    /* The law's factor of q_i q_j in the physics buffer (FK_PHYS_COULOMB); NULL: k itself. The
     * named parameters go to FK_PHYS_LAW in any case. */
    double (*coulomb_factor)(const fk__physics *physics);
    /* The pair function in double, unshifted: f(r) = -dU/dr and U(r) at distance r for the type
     * pair's parameters and charges q_i q_j: the reference, and the source of the shift terms. */
    void (*pair_function)(const fk__physics *physics, const double *pair, double qq, double r,
                          double *force, double *energy);

    /* Host reference: forces (components per particle) and optional potentials of the particles
     * first .. end - 1 (forces[0] is particle first's), each summed over all particles. */
    fk_status (*reference)(const struct fk_kernel_desc *kernel, const fk_particles *particles,
                           const fk_physics *physics, size_t first, size_t end, double *forces,
                           double *potentials);
    /* NULL when the pair arithmetic is +, -, *, / and sqrt only, which reproducible mode makes
     * correctly rounded (the same bits everywhere); else what is not correctly rounded in OpenCL
     * ("exp"), and reproducible mode can then not promise bit identity. */
    const char *inexact_builtin;
} fk_kernel_desc;

struct fk_accum_bound; /* accum.h */
struct fk_accum_params;
typedef struct fk_accum_desc {
    fk_accum_info info;
    /* Decodes one packed 8-byte result (lo, hi words) to double. */
    double (*decode)(uint32_t lo, uint32_t hi, double scale);
    /* The same decode on the device: the fk_decode_<format>_{double,float} kernels of
     * cl/decode.cl (fk__decode_format_name), bit for bit the host's. */
    const char *decode_format;
    /* NULL: no per-launch parameters. Otherwise the evaluation runs the bound pre-pass
     * (cl/accum/bound.clh) on new particles and this sets acc_param and the decode scale from it
     * (accum.c); it returns 0 when the data cannot be represented. */
    int (*choose_parameters)(const struct fk_accum_bound *bound, struct fk_accum_params *params);
    /* NULL: the representation cannot overflow. Else 1 when a packed result is the overflow
     * sentinel, which the evaluation reports as FK_ERR_OVERFLOW. */
    int (*overflowed)(uint32_t lo, uint32_t hi);
    /* 1: single-precision denormals may be flushed (-cl-denorms-are-zero) outside reproducible
     * mode. NVIDIA's rsqrt then needs no denormal fix-up: ga runs 15-17% faster on an H200. Not for
     * the compensated float pairs, whose error terms must stay exact all the way down. */
    int flush_denormals;
    /* Lane form (FK_ACC_LANES) for cl/pairwise_lanes.cl: 0 none, 1 yes, FK_LANES_NEED_FP64 one
     * that computes in double (fixed64's conversion), built only where the device has fp64. */
    int lanes;
    /* 1: the pair terms are computed in double (fk_real is double: ref). The molecular laws' pair
     * table and physics constants then go to the device in double (forcelaw.c, -D
     * FK_DOUBLE_TABLE=1), not rounded to float (issue #36). */
    int double_pairs;
} fk_accum_desc;
#define FK_LANES_NEED_FP64 2

const fk_kernel_desc *fk__kernel_desc(const char *name);
const fk_accum_desc *fk__accum_desc(const char *name);
/* Both names exist and the device can run the accumulator; otherwise records why (src/core/eval/).
 */
fk_status fk__find_kernel_and_accum(fk_context *context, const char *kernel_name,
                                    const char *accum_name, const fk_kernel_desc **kernel,
                                    const fk_accum_desc **accum);

/* Programs (program.c). */
typedef struct fk_program_request {
    const char *force; /* "ga" */
    const char *accum; /* "float" */
    int unroll_i, unroll_j, work_group_size, local_tiling, potential;
    const char *extra_options; /* appended to the build options, may be NULL */
    int refresh_cache;
    const char *file; /* the template to specialize; NULL: "pairwise.cl" (cells: "cells.cl") */
    int lanes; /* > 0: -D FK_LANES=lanes (cl/pairwise_lanes.cl's i-particles per work-item) */
    int lane_rsqrt_newton; /* lanes: -D FK_LANE_RSQRT_NEWTON=1 (src/core/probes/lanes_rsqrt.c) */
} fk_program_request;

typedef struct fk_program_result {
    cl_program program;
    int from_cache;
    double seconds;
} fk_program_result;

fk_status fk__program_build(fk_context *context, const fk_program_request *request,
                            fk_program_result *result);
/* Releases the context's in-memory program cache (fk_context_destroy). */
void fk__program_memo_free(fk_context *context);
/* Builds another .cl file of the kernel directory (the Taufer suite, device unit tests) with the
 * same include expansion and program cache; options may be NULL. */
fk_status fk__program_build_file(fk_context *context, const char *file, const char *options,
                                 fk_program_result *result);
/* 1 when the force law's and the accumulator's headers (forces/<force>.clh, accum/<accum>.clh)
 * both declare a lane form (a line `#define FK_INTERACT_LANES` and `#define FK_ACC_LANES`), so
 * that cl/pairwise_lanes.cl can be built for them; 0 otherwise, or when a header cannot be read. */
int fk__program_has_lanes(fk_context *context, const char *force, const char *accum);
/* The same from src/core/laws/registry.c's lane flags, without reading files: what fk_eval_create
 * uses. */
int fk__registry_has_lanes(const fk_kernel_desc *kernel, const fk_accum_desc *accum, int fp64);
/* The same for the lane form of the neighbour-list loop (FK_LAW_PAIR_LANES in the force law's
 * header, FK_ACC_LANES in the accumulator's). */
int fk__program_has_list_lanes(fk_context *context, const char *force, const char *accum);
/* The widest lane count the device holds in one float vector register (8 with AVX2, 16 with
 * AVX-512; src/core/loops/lanes.c); 0: narrower than 8, no lanes. */
int fk__device_lane_width(const fk_context *context);
int fk__registry_has_list_lanes(const fk_kernel_desc *kernel, const fk_accum_desc *accum, int fp64);

/* Precision internals (eval/), for tests: the packed 8-byte results of the last compute (2 words
 * per component, force components then the potential) and the decode scale in use. */
fk_status fk__eval_read_packed(fk_eval *eval, uint32_t *words);
double fk__eval_accum_scale(const fk_eval *eval);
/* Overrides one per-launch accumulator parameter until the next set_particles (overflow tests). */
void fk__eval_set_accum_param(fk_eval *eval, unsigned index, float value);
/* Up to this many particles the host runs the checks an update needs where it has the positions
 * (eval->host_check_count): the refusal of non-finite coordinates in an update from the pinned
 * positions array (fk_eval_positions_buffer), which it then converts itself, and the cells and
 * neighbors loops' displacement check (src/core/loops/cell_grid.c). Above, the device runs them and
 * the host reads their verdict back, a round trip to the device (15-30 us on an H200 with its
 * driver); the host pass costs less than that up to about 16,384 particles and more above
 * (results/2026-11-25_nvidia-h200/step: the copy mode's update against the pinned mode's).
 * Either way the same positions reach the device and the same verdicts come out. */
#define FK__HOST_CHECK_COUNT ((size_t)16384)
/* Sets eval's limit (tests: 0 sends every check to the device). */
void fk__eval_set_host_check_count(fk_eval *eval, size_t count);

/* Reads a whole file; NULL on failure (errno set). */
char *fk__read_file(const char *path, size_t *size);
/* Monotonic wall-clock seconds. */
double fk__now(void);
/* A device time from event profiling (seconds, -1 unavailable) for `pairs` pair interactions
 * (0: unknown) that took wall_seconds from enqueue to completion (0: unknown): seconds when it is
 * plausible, else -1 with a warning in fk_context_warnings (once per context;
 * src/core/devices/timing.c). */
double fk__plausible_device_seconds(fk_context *context, double seconds, double pairs,
                                    double wall_seconds);
/* Host<->device bandwidth from pinned memory (bytes per second, the median of reps blocking
 * transfers of `bytes`), for the step benchmark (src/core/devices/bandwidth.c). */
fk_status fk__measure_pinned_bandwidth(fk_context *context, size_t bytes, int reps,
                                       double *to_device, double *to_host);

/* The molecular laws' shared reference (reference_molecular.c), for their descriptors; ga and gaj
 * keep theirs in their own files. */
fk_status fk__reference_molecular(const fk_kernel_desc *kernel, const fk_particles *particles,
                                  const fk_physics *physics, size_t first, size_t end,
                                  double *forces, double *potentials);
/* A validated pair table in double: parameters per pair as in fk_kernel_info.pair_format. */
typedef struct fk__pair_params {
    size_t types;
    unsigned parameters;
    double *values;         /* types * types * parameters */
    unsigned char *present; /* types * types */
} fk__pair_params;

/* Validates physics options for a kernel and applies defaults. Writes why into message on
 * failure (FK_ERR_INVALID_ARGUMENT). */
fk_status fk__physics_resolve(const fk_kernel_desc *kernel, const fk_physics *in, fk__physics *out,
                              char *message, size_t message_size);
/* config.skin for a cutoff: skin > 0 itself, 0 the default (FK_DEFAULT_SKIN_FRACTION cutoff),
 * negative (or NaN) none, 0. The one place the default skin is applied (forcelaw.c, beside the
 * physics' other defaults; the plan and the loop choice both ask it). */
double fk__skin_resolve(double skin, double cutoff);
/* Copies and validates a pair table (NULL: the kernel's default, one type). FK_ERR_INVALID_INPUT
 * for bad values (NaN, negative sigma, asymmetric), naming the type pair. */
fk_status fk__pair_params_copy(const fk_kernel_desc *kernel, const fk_pair_table *table,
                               fk__pair_params *out, char *message, size_t message_size);
void fk__pair_params_free(fk__pair_params *params);
/* Checks particle types against the table: in range, and every type pair the particles use has
 * parameters. FK_ERR_INVALID_INPUT naming the particles otherwise. */
fk_status fk__pair_params_check_types(const fk__pair_params *params, const fk_particles *particles,
                                      char *message, size_t message_size);
/* The pair function of a molecular law in double, unshifted: f(r) = -dU/dr and U(r), at distance
 * r for type-pair parameters pair (fk__pair_params values of the pair) and charges q_i q_j. */
void fk__pair_function(const fk_kernel_desc *kernel, const fk__physics *physics, const double *pair,
                       double qq, double r, double *force, double *energy);
/* The same with the cutoff and force shift applied (0 at and beyond the cutoff). */
void fk__pair_function_shifted(const fk_kernel_desc *kernel, const fk__physics *physics,
                               const double *pair, double qq, double r, double *force,
                               double *energy);
/* Minimum image of d in the periodic box (no-op for open boundaries). */
void fk__minimum_image(const fk__physics *physics, double d[3]);
/* Exclusions: pairs (2 per exclusion) normalized to i < j, sorted, duplicates removed. Returns a
 * malloc'ed copy (NULL with *unique 0 for count 0), FK_ERR_INVALID_INPUT for i == j. */
fk_status fk__exclusions_normalize(const size_t *pairs, size_t count, size_t **normalized,
                                   size_t *unique, char *message, size_t message_size);
/* Two of the n particles at the same position, modulo box where box is not NULL (sides > 0):
 * *first < *second, or both SIZE_MAX when there are none. body: stride floats per particle, 4 (a
 * float4: the same single-precision position) or 8 (double-single records hi, lo: the same
 * hi + lo). O(N log N); no shared state. */
fk_status fk__find_coincident(const float *body, size_t stride, size_t n, const double *box,
                              size_t *first, size_t *second);
/* The most partners any particle has among count normalized exclusions. */
fk_status fk__exclusions_max_partners(const size_t *normalized, size_t count,
                                      size_t *most_partners);

/* The physics buffer's layout, shared with the device (cl/forces/molecular_layout.h). */
#include "../../cl/forces/molecular_layout.h"

/* What an evaluation of a molecular law keeps on the host (forcelaw.c). */
typedef struct fk__forcelaw_state {
    /* The physics the evaluation's plan resolved (src/core/eval/plan.h), given to
     * fk__forcelaw_prepare: the law's functions below read it here, never resolve it again. */
    fk__physics physics;
    fk__pair_params pairs; /* types 0 until a table is set: the default is used */
    size_t *exclusions;    /* normalized pairs */
    size_t exclusion_count;
    int exclusion_mode;       /* fk_exclusion_mode */
    unsigned exclusion_slots; /* on the fly: slots per particle compiled into the kernel */
    /* 1: the accumulator computes the pair terms in double (fk_accum_desc.double_pairs): the
     * device table is doubles, led by the physics constants in double (cl/forces/molecular.clh) */
    int double_table;
    double physics_double[FK_PHYSICS_FLOATS]; /* the physics constants before rounding to float */
} fk__forcelaw_state;

#define FK__PHYSICS_FLOATS FK_PHYSICS_FLOATS
/* The most excluded partners per particle the on-the-fly kernel checks (a compare per slot per
 * pair); beyond it, exclude afterwards. */
#define FK__MAX_EXCLUSION_SLOTS 64
/* Keeps the resolved physics (fk__physics_resolve's, from the evaluation's plan) in state and
 * fills the physics constants for the device from it: gravity's eps^2 (a float pair with
 * double-single positions), the molecular laws' constants, rounded once from double and kept in
 * double for a double table. exclusion_slots and double_table are the plan's; the build options
 * that go with them are fk__plan_options's. */
void fk__forcelaw_prepare(const fk_kernel_desc *kernel, const fk__physics *physics,
                          int exclusion_mode, unsigned exclusion_slots, int double_table,
                          int double_single, fk__forcelaw_state *state,
                          float values[FK__PHYSICS_FLOATS]);
void fk__forcelaw_state_free(fk__forcelaw_state *state);
/* The device pair table (malloc'ed) from the current or default parameters: floats, or with
 * state->double_table the physics constants and then the entries in double. */
fk_status fk__forcelaw_table(fk_context *context, const fk_kernel_desc *kernel,
                             fk__forcelaw_state *state, void **table, size_t *bytes);
/* gaj's velocities (3 n doubles) as the device's body_aux records: stride 4 (float4, the fourth
 * value 0) or 8 (double-single: hi and lo records). *records is malloc'ed; a velocity that is not a
 * finite float is FK_ERR_INVALID_INPUT naming the particle. */
fk_status fk__velocity_records(fk_context *context, const double *velocity, size_t n, size_t stride,
                               float **records);
/* Per-particle data for a new particle set: sets body[stride i + 3] for the law (charge or 0; with
 * stride 8, double-single records, body[stride i + 7] too), checks types, pairs, exclusions and
 * (molecular) coincident particles, and builds body_aux (malloc'ed, NULL when the kernel has
 * none; gaj's velocities as double-single records with stride 8). */
fk_status fk__forcelaw_particles(fk_context *context, const fk_kernel_desc *kernel,
                                 fk__forcelaw_state *state, const fk_particles *particles,
                                 float *body, size_t stride, void **aux, size_t *aux_bytes);
/* Exclude afterwards: each particle's excluded partners for the device (cl/pairwise.cl
 * fk_subtract_exclusions) as CSR lists of int32, n + 1 offsets then the partners in increasing
 * order (malloc'ed; NULL when there is nothing to subtract: on the fly, or no exclusions). */
fk_status fk__forcelaw_exclusion_lists(fk_context *context, const fk__forcelaw_state *state,
                                       size_t n, int32_t **lists, size_t *bytes);

#endif
