/*
 * forcekit: pairwise force kernels for N-body and molecular dynamics on OpenCL devices.
 *
 * The API is opaque handles with create/destroy pairs. Every call returns an fk_status; the detail
 * of a failure (the OpenCL call that failed, a build log, a path searched) is kept in the context
 * and read with fk_context_last_error(). The library never prints and never exits.
 *
 * Configuration structs follow the rule "zero means default": memset them to 0 (or use {0}) and set
 * only what you need, so fields added later break nobody. Their first member, struct_size, makes
 * that hold for binaries too: set it to sizeof the struct (FK_CONFIG_INIT(type) does), and a later
 * library that has grown the struct reads only the bytes your program has and takes its new
 * fields as zero. 0 means the layout of 0.2.0, the first with the field; a struct larger than the
 * library knows is accepted when the bytes it does not know are zero, and refused
 * (FK_ERR_INVALID_ARGUMENT) when they set something.
 *
 * Threads: objects of different contexts may be used concurrently from different threads; one
 * context and everything created from it (its evaluations, tuning runs) must be used from one
 * thread at a time (the caller serializes). Functions that take no context (fk_devices_list,
 * fk_reference_forces, the registry queries, fk_version) may be called from any thread at any
 * time. The library keeps no mutable process-wide state except a lock around device discovery;
 * environment variables are read at context creation, so do not change them meanwhile.
 * tests/test_threads.c runs two contexts at once under ThreadSanitizer.
 */
#ifndef FORCEKIT_FORCEKIT_H
#define FORCEKIT_FORCEKIT_H

#include <stddef.h>
#include <stdint.h>

#include "forcekit/version.h" /* FK_VERSION_MAJOR/MINOR/PATCH, generated from CMake's project */

/* Every public function carries FK_API; the library exports nothing else (it is built with hidden
 * visibility, and tests/abi/exported_symbols.txt lists what it exports). */
#if defined(__GNUC__) || defined(__clang__)
#define FK_API __attribute__((visibility("default")))
#else
#define FK_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* An initializer for a configuration struct with its struct_size set and everything else zero
 * (default): fk_eval_config config = FK_CONFIG_INIT(fk_eval_config); */
#define FK_CONFIG_INIT(type)                                                                       \
    {                                                                                              \
        .struct_size = sizeof(type)                                                                \
    }

/* The library's version, "MAJOR.MINOR.PATCH", and as MAJOR * 10000 + MINOR * 100 + PATCH: that
 * of the library loaded at run time, which may differ from the FK_VERSION_* a program was
 * compiled against. */
FK_API const char *fk_version(void);
FK_API unsigned fk_version_number(void);

/* The values are part of the ABI: never renumbered; new codes get new numbers. */
typedef enum fk_status {
    FK_OK = 0,
    FK_ERR_INVALID_ARGUMENT = 1, /* a NULL handle, an unknown name, an option out of range */
    FK_ERR_INVALID_INPUT = 2,    /* particle data the kernel cannot evaluate (NaN, coincident) */
    FK_ERR_HOST_MEMORY = 3,      /* malloc failed */
    FK_ERR_NO_DEVICE = 4,        /* no OpenCL platform or device at all */
    FK_ERR_DEVICE_NOT_FOUND = 5, /* no device matches the selector */
    FK_ERR_UNSUPPORTED = 6,   /* the device lacks a feature the request needs (fp64, work-group) */
    FK_ERR_KERNEL_SOURCE = 7, /* kernel directory or .cl file missing or unreadable */
    FK_ERR_BUILD = 8,         /* the OpenCL compiler rejected the kernel; the build log is kept */
    FK_ERR_DEVICE_MEMORY = 9, /* the device could not allocate the buffers */
    FK_ERR_OPENCL = 10,       /* any other OpenCL failure; the failing call is kept */
    FK_ERR_IO = 11,           /* a file could not be read or written */
    FK_ERR_PARSE = 12,        /* a file is malformed */
    FK_ERR_STATE = 13,        /* calls in the wrong order (compute before set_particles) */
    FK_ERR_OVERFLOW = 14      /* a fixed-point accumulator (fixed64) went out of its range */
} fk_status;

/* A short, static, human-readable name of a status ("device memory exhausted"). */
FK_API const char *fk_status_string(fk_status status);

/* ---------------------------------------------------------------------------------------------- */
/* Devices */

typedef enum fk_device_type {
    FK_DEVICE_OTHER = 0,
    FK_DEVICE_CPU,
    FK_DEVICE_GPU,
    FK_DEVICE_ACCELERATOR
} fk_device_type;

typedef struct fk_device_info {
    unsigned platform_index;
    unsigned device_index;
    char selector[32]; /* "P:D" */
    char name[256];
    char vendor[256];
    char platform_name[256];
    char platform_version[256];
    char device_version[256]; /* "OpenCL 3.0 CUDA" */
    char driver_version[256];
    char opencl_c_version[128];
    fk_device_type type;
    unsigned compute_units;
    uint64_t global_memory_bytes;
    uint64_t local_memory_bytes;
    uint64_t max_allocation_bytes;
    size_t max_work_group_size;
    int fp64; /* 1 when the device has double precision */
} fk_device_info;

/* Lists every device of every platform. *devices is allocated; free it with fk_devices_free(). */
FK_API fk_status fk_devices_list(fk_device_info **devices, size_t *count);
FK_API void fk_devices_free(fk_device_info *devices);

/* "cpu", "gpu", "accelerator" or "other". */
FK_API const char *fk_device_type_name(fk_device_type type);

/* Resolves a selector against a device list: "P:D", a case-insensitive substring of the device
 * name, "cpu" or "gpu"; NULL or "" means the first GPU, else the first CPU, else the first device.
 * Returns FK_ERR_DEVICE_NOT_FOUND when nothing matches. */
FK_API fk_status fk_device_select(const fk_device_info *devices, size_t count, const char *selector,
                                  size_t *chosen);

/* ---------------------------------------------------------------------------------------------- */
/* Context: one device, its queue, kernel sources and the compiled-program cache */

typedef struct fk_context fk_context;

typedef struct fk_context_config {
    size_t struct_size; /* sizeof(fk_context_config), or 0 (0.2.0); see the top of this file */
    const char *device; /* selector; NULL: $FORCEKIT_DEVICE, else first GPU, else first CPU */
    /* NULL: $FORCEKIT_KERNEL_DIR, then share/forcekit/cl beside the installed library (wherever
     * the prefix was moved; for a program linked with the static library, beside the program),
     * then the build tree for the build tree's own library, then the configured install prefix's,
     * then (since 0.2, issue #32) the copy of the kernel sources compiled into the library at
     * build time, so that a static program runs anywhere. A directory found on disk always wins
     * over the built-in copy; a directory named here or in $FORCEKIT_KERNEL_DIR must hold the
     * kernels (FK_ERR_KERNEL_SOURCE otherwise, never a fallback). */
    const char *kernel_dir;
    const char
        *cache_dir; /* NULL: $FORCEKIT_CACHE_DIR, else $XDG_CACHE_HOME/forcekit; "off" disables */
    /* fk_device_timing (added in 0.2, issue #16): whether the context's queue records device
     * times. 0 (default) or FK_DEVICE_TIMING_ON: as before 0.6. FK_DEVICE_TIMING_OFF: the queue
     * is created without OpenCL event profiling, which on some drivers costs every command host
     * time (NVIDIA's, on an H200: 8-29 us per step of the step path at N = 4,096 to 65,536,
     * docs/performance.md); the device times are then -1 (fk_eval_compute's seconds) or
     * FK_ERR_UNSUPPORTED (fk_sources_device_seconds), and fk_tune_run, which times by profiling,
     * refuses such a context. Results are the same bits either way. fk_context_create_cl takes
     * the caller's queue as it is: leave this 0 there. */
    int device_timing;
} fk_context_config;

typedef enum fk_device_timing {
    FK_DEVICE_TIMING_DEFAULT = 0, /* on */
    FK_DEVICE_TIMING_ON,
    FK_DEVICE_TIMING_OFF
} fk_device_timing;

/* On failure *context is still created when possible, so that fk_context_last_error() can explain;
 * destroy it either way. A NULL *context means no memory for even that. A failed context is not a
 * context to work on (issue #32, since 0.2): fk_context_last_error (which keeps the detail of the
 * failure), fk_context_warnings and fk_context_destroy work on it; every other call that takes it
 * answers as for a NULL context: FK_ERR_INVALID_ARGUMENT (fk_eval_create, fk_sources_create,
 * fk_tune_run, fk_context_cl_objects, which also set their out-handle to NULL), NULL (the
 * fk_context_* queries), and records nothing. In general every call taking a NULL handle (or a
 * NULL out-pointer) returns FK_ERR_INVALID_ARGUMENT, a query NULL, 0 or -1 as it documents, and a
 * destroy does nothing; an evaluation whose particles were refused answers FK_ERR_STATE until
 * fk_eval_set_particles succeeds. tests/test_faults.c calls each one so. */
FK_API fk_status fk_context_create(const fk_context_config *config, fk_context **context);
FK_API void fk_context_destroy(fk_context *context);

/* The detail of the last failure on this context: the OpenCL call and its error, the build log, the
 * paths searched. Empty when the last call succeeded. Valid until the next call on the context. */
FK_API const char *fk_context_last_error(const fk_context *context);
FK_API const fk_device_info *fk_context_device(const fk_context *context);
/* Problems that were not errors, one per line: a corrupt tuning database that was ignored. Empty
 * when there were none. Valid for the life of the context. */
FK_API const char *fk_context_warnings(const fk_context *context);
/* The kernel directory in use ("built-in" when the context runs on the copy compiled into the
 * library), and the cache directory (NULL when the cache is off). */
FK_API const char *fk_context_kernel_dir(const fk_context *context);
/* The version of the kernel sources in use (their directory's VERSION file; "unknown" without
 * one). A version other than fk_version() is also reported by fk_context_warnings. */
FK_API const char *fk_context_kernel_version(const fk_context *context);
FK_API const char *fk_context_cache_dir(const fk_context *context);

/* ---------------------------------------------------------------------------------------------- */
/* Kernels (force laws) and accumulators */

typedef struct fk_kernel_info {
    const char *name; /* "ga" */
    const char *description;
    unsigned force_components; /* values per particle in the force output (ga 3, gaj 6) */
    unsigned input_columns;    /* columns per particle in the text format */
    const char *input_format;  /* "x y z m" */
    double flops_per_interaction;
    /* Typed kernels (ljc_*, lj, buck): parameters per type pair in fk_pair_table.values and their
     * names as in the --params file ("epsilon sigma"); 0 and NULL for the gravity kernels. */
    unsigned pair_parameters;
    const char *pair_format;
    /* The law's named scalar parameters (yukawa: kappa; ljc_*: the dielectric), in
     * fk_eval_config.parameters / fk_physics.parameters at the places each one names; none for
     * ga, gaj, lj and buck. Added in 0.3 (the struct is the library's, so it may grow). */
    unsigned parameter_count;
    const struct fk_kernel_parameter *parameters;
    const char *output_format; /* the force output's columns: "ax ay az", "fx fy fz" (0.3) */
} fk_kernel_info;

/* A force law's named parameter: values[first .. first + count - 1] of the parameters array, each
 * finite; 0 means default_value (so an explicit value equal to 0 cannot be given unless the
 * default is 0); any other value must lie above minimum (at or above it when minimum_inclusive).
 * The command line takes it as --NAME V (count 1) or --NAME V1,V2,... */
#define FK_LAW_PARAMETERS 4
typedef struct fk_kernel_parameter {
    const char *name;        /* "kappa" */
    const char *description; /* "inverse screening length (1/distance)" */
    unsigned first, count;
    double default_value;
    double minimum; /* -HUGE_VAL: any finite value */
    int minimum_inclusive;
} fk_kernel_parameter;

/* An accumulator's error model (docs/precision.md, "Error models"): for one particle's sum of n
 * pair terms t_j, as the device computed them (each term's own rounding is the force law's, not
 * the accumulator's, and comes on top),
 *   |computed - sum_j t_j| <= (relative + (n - 1) growth) sum_j |t_j| + n global R,
 * R the range the representation was scaled to for the evaluation: for narumi and nitadori_large
 * LARGE, about max_sum (the largest sum_j |t_ij| of any particle); for fixed64 the scale comes from
 * the largest term and n, R = n max_term <= n max_sum (range_grows_with_n). */
typedef struct fk_accum_error_model {
    double relative;        /* the final rounding, relative to the particle's own sum_j |t_j| */
    double growth;          /* added per term (float: 2^-24); 0: does not grow with n */
    double global;          /* per term, relative to R (fixed-point quantization); else 0 */
    int range_grows_with_n; /* R = n max_sum rather than max_sum */
    /* 1: the bound holds for every input; 0: only typically (Nitadori's trick without LARGE
     * needs the sum to exceed each term, which cancelling sums break; float's bound then) */
    int bounded;
    /* 1: the same bits in any summation order (integer sums): the symmetric loop's merge, the
     * cell loop and j-splits then give all-pairs' bits exactly */
    int order_independent;
} fk_accum_error_model;

typedef struct fk_accum_info {
    const char *name; /* "float" */
    char letter;      /* Narumi et al., Table 1 */
    const char *description;
    int needs_fp64;
    fk_accum_error_model error; /* added in 0.2 (the struct is the library's, so it may grow) */
} fk_accum_info;

/* The error model's bound on |computed - exact| of a sum of n terms, in units of that particle's
 * sum_j |t_j|, for the particle with the largest sum (max_sum = its sum_j |t_j|). */
FK_API double fk_accum_error_bound(const fk_accum_info *accum, size_t n);

/* NULL when the name is unknown. */
FK_API const fk_kernel_info *fk_kernel_find(const char *name);
FK_API const fk_accum_info *fk_accum_find(const char *name);
/* Iterate: index 0.. until NULL. */
FK_API const fk_kernel_info *fk_kernel_at(size_t index);
FK_API const fk_accum_info *fk_accum_at(size_t index);

/* ---------------------------------------------------------------------------------------------- */
/* Force evaluation                                                                               */

typedef struct fk_eval fk_eval;

/* Where the variant that runs came from. */
typedef enum fk_variant_source {
    FK_VARIANT_EXPLICIT = 0,
    FK_VARIANT_DEFAULT,    /* the built-in default for the device type */
    FK_VARIANT_USER_DB,    /* the user's tuning database (FORCEKIT_TUNING_DB or the XDG data dir) */
    FK_VARIANT_SHIPPED_DB, /* the tuning database installed with forcekit */
    /* an automatic shape narrowed to what the device allows for the built kernel (work-items per
     * group, local memory); fk_eval_variant_note says from what and why (added in 0.2) */
    FK_VARIANT_FITTED
} fk_variant_source;

/* The pair loop. All-pairs visits every (i, j) once per i (N^2 pair evaluations). Symmetric
 * evaluates each unordered pair once and applies Newton's third law (Boyarchenkov sec. 6.4).
 * Cells bins the particles into a grid of cells on the device and visits only the neighbouring
 * cells (van Meel et al., sec. 3): short-range kernels with a cutoff only. Neighbors builds
 * Verlet lists of radius cutoff + skin on the device from that grid and reuses them until some
 * particle has moved more than skin / 2; half lists with Newton's third law (for the accumulators
 * the symmetric loop takes) or full lists (fk_eval_config.neighbor_lists); short-range kernels
 * only. The values are part of the ABI: new loops are appended.
 * FK_ALGORITHM_AUTO (added in 0.2) is no loop: fk_eval_create chooses all-pairs, cells or
 * neighbors for the kernel, cutoff, N (config.expected_count), density (N over a periodic box)
 * and device, from the tuning database's measured entries of those loops where it has them and
 * by a rule otherwise (docs/algorithms.md, "Choosing a loop"); fk_variant.algorithm and
 * algorithm_source say what it chose and why. */
typedef enum fk_algorithm {
    FK_ALGORITHM_AUTO = -1,
    FK_ALGORITHM_ALL_PAIRS = 0,
    FK_ALGORITHM_SYMMETRIC,
    FK_ALGORITHM_CELLS,
    FK_ALGORITHM_NEIGHBORS
} fk_algorithm;

/* "all-pairs", "symmetric", "cells", "neighbors", "auto"; NULL for an unknown value. */
FK_API const char *fk_algorithm_name(fk_algorithm algorithm);
/* By name; FK_ERR_INVALID_ARGUMENT for an unknown one. */
FK_API fk_status fk_algorithm_find(const char *name, fk_algorithm *algorithm);

/* The Verlet skin that fk_eval_config.skin 0 means, as a fraction of the cutoff (0.3 at lj's
 * default 2.5, sigma = 1). Also the MPI layer's margin beyond its halos (forcekit_mpi.h). */
#define FK_DEFAULT_SKIN_FRACTION 0.12

typedef struct fk_eval_config {
    size_t struct_size;     /* sizeof(fk_eval_config), or 0 (0.2.0); see the top of this file */
    const char *kernel;     /* "ga"; required */
    const char *accum;      /* NULL: "float" */
    int unroll_i, unroll_j; /* each 1, 2, 4 or 8; 0: automatic */
    int work_group_size;    /* 0: automatic */
    int local_tiling;       /* 0: automatic, 1: on, -1: off */
    /* All-pairs: work-groups sharing one i-block's j-range; 0: automatic by N. Neighbour lists
     * (full lists, the scalar walk): work-items sharing one particle's list, 1, 2, 4 or 8; 0: a
     * tuning entry's, else 4 on GPUs and 1 on CPUs (docs/algorithms.md). */
    int j_splits;
    int potential;     /* nonzero: also compute the potential of each particle */
    double eps;        /* gravitational softening */
    int refresh_cache; /* nonzero: compile from source even on a cache hit (and refresh it) */
    /* The N that set_particles will get, so that automatic unrolling can take the tuning database's
     * entry for that N bucket: the program (unroll, work-group size, tiling) is compiled here,
     * before the particles are known. 0: unknown; the entry tuned for the largest N is taken. */
    size_t expected_count;
    /* nonzero: results bit-identical across devices, pair loops and variants: a fixed-point
     * accumulator (fixed64, or narumi; NULL accum means fixed64, another one is an error), and
     * pair arithmetic that is the same bits on every conformant device (correctly rounded divide
     * and sqrt instead of rsqrt, no contraction, denormals kept). fk_eval_reproducible() says
     * whether the device can. Without it, each pair term is whatever the device's compiler makes
     * of the source, which may differ between two programs (docs/precision.md, "Bit-identity
     * promises"). */
    int reproducible;
    /* Molecular kernels (those with a pair table: fk_kernel_info.pair_parameters > 0;
     * docs/force-laws.md); zero means the default named. Gravity kernels reject nonzero values. */
    double cutoff;  /* rc, an absolute distance: pairs at r >= rc contribute nothing and the
                     * pair function is force-shifted (f(r) - f(rc)); 0 means the law's
                     * default (lj: 2.5; the others: none, plain all-pairs) */
    double coulomb; /* Coulomb constant k; 0 means 1 (zero charges switch Coulomb off) */
    /* The force law's named parameters (fk_kernel_info.parameters; 0: each one's default):
     * ljc_constant: D0 (default 1); ljc_linear: s in D = s r (default 1); ljc_sigmoidal: alpha,
     * beta, gamma, delta (default 0: zeta = 1); yukawa: kappa (default 1). `dielectric` is the
     * same storage under its 0.2 name. */
    union {
        double parameters[FK_LAW_PARAMETERS];
        double dielectric[FK_LAW_PARAMETERS];
    };
    double box[3];      /* periodic box Lx, Ly, Lz, minimum image; all 0: open boundaries.
                         * Needs a cutoff of at most half the shortest side */
    int exclusion_mode; /* fk_exclusion_mode: how fk_eval_set_exclusions pairs are left out;
                         * 0: on the fly */
    int max_exclusions; /* on the fly: excluded partners per particle the kernel checks (its
                         * cost per pair, at most 64). 0: automatic, the most any particle has
                         * in the exclusions set (fk_eval_set_exclusions rebuilds the programs
                         * when that changes; none set, none checked). An explicit value is
                         * the build, and more partners for one particle are an error */
    int algorithm;      /* fk_algorithm; 0: all-pairs; FK_ALGORITHM_AUTO: chosen at create */
    /* Cells and neighbors: the Verlet skin, an absolute distance. Cells have a side of at least
     * cutoff + skin (neighbors: and the lists hold the pairs closer than that), and the cells (and
     * lists) are kept, not rebuilt, while no particle has moved more than skin / 2 since the last
     * build. 0: FK_DEFAULT_SKIN_FRACTION (0.12) cutoff (0.3 at lj's default 2.5); negative: no
     * skin, rebuilt whenever a particle moved at all (fk_eval_set_particles /
     * fk_eval_update_positions). fk_eval_get_reach gives the skin an evaluation resolved. */
    double skin;
    /* CPU lanes, the vector units' form of two pair loops, for force laws and accumulators whose
     * kernel headers have a lane form:
     *   all-pairs (cl/pairwise_lanes.cl): each work-item carries 8 or 16 i-particles as the lanes
     *     of a float vector (ga with float, double, narumi, fixed64);
     *   neighbors (cl/neighbors.cl with FK_LANES): one particle per work-item, its list's partners
     *     8 or 16 at a time in the lanes (lj and ljc_constant with the same accumulators); full
     *     lists unless half lists are asked for (neighbor_lists).
     * 0: automatic: on for CPU devices when the unrolling (and for all-pairs the tiling) is
     * automatic, not in reproducible mode, and for all-pairs when no user tuning-database entry
     * applies; never on GPUs. -1: off (the scalar template or walk). 8 or 16: on with that width,
     * on any device (a CPU: at most its native float vector width); all-pairs: explicit
     * unrolling must then be 1xJ (J unrolls the j-loop) and local_tiling not 1 (lanes read j
     * through the caches); FK_ERR_UNSUPPORTED for a kernel, accumulator or algorithm without
     * lanes, and in reproducible mode for neighbors. */
    int lanes;
    /* The physics as one description, the same struct fk_reference_forces takes (added in 0.2):
     * when set, it is the evaluation's physics (eps, cutoff, coulomb, the law's parameters, box,
     * and the pair table and exclusions, applied by fk_eval_create as fk_eval_set_pair_table and
     * fk_eval_set_exclusions would), and the flat physics fields above must be zero
     * (FK_ERR_INVALID_ARGUMENT otherwise). NULL: the flat fields, the 0.2 form. Read only during
     * fk_eval_create. */
    const struct fk_physics *physics;
    /* fk_result_type: the precision the results are decoded to on the device and brought to the
     * host in (added in 0.2). FK_RESULT_FLOAT halves the bytes read per compute; every read
     * function still works (a float read of double results rounds, a double read of float results
     * widens). 0: double. */
    int result_type;
    /* fk_scale_policy (added in 0.2): when the data-scaled accumulators choose their scale (the
     * bound pre-pass, one extra pass over the pairs) on fk_eval_update_positions;
     * fk_eval_set_particles always chooses it. 0 (FK_SCALE_AUTO; until issue #33, 0 was
     * FK_SCALE_EACH_UPLOAD): fixed64 keeps it, the others choose it at every update. */
    int scale_policy;
    /* fk_neighbor_lists (added in 0.2): the neighbour lists' form; the other loops ignore it. 0:
     * automatic. */
    int neighbor_lists;
    /* Nonzero (added in 0.2, issue #20; forcekit_mpi.h's spatial scheme): this evaluation is
     * one part of a larger system whose parts choose the data-scaled accumulators' parameters
     * together (fk_eval_get_bound, fk_eval_set_bound); fk_eval_wait then does not rescale by
     * itself under FK_SCALE_KEEP: a compute that left the scale's range is reported by the reads
     * (FK_ERR_OVERFLOW), and the caller rescales every part together. */
    int coordinated_scale;
    /* fk_positions (added in 0.2, issue #18): how the device stores the particles' coordinates
     * (and masses, charges, gaj's velocities) for the pair differences. 0 or FK_POSITIONS_FLOAT:
     * one float each, as before 0.5 (a difference carries relative 6e-8 of the coordinates, so
     * even a double-class accumulator agrees with double only to about 1e-7).
     * FK_POSITIONS_DOUBLE_SINGLE: a float pair each (48-bit mantissa; twice the particle memory
     * and bandwidth, three more adds per pair, for every force law): with ref, whose pair
     * arithmetic is double, the forces agree with double arithmetic to about 1e-13; with float
     * pair arithmetic (every other accumulator) a close pair far from the origin keeps its
     * separation. The all-pairs and
     * symmetric loops, open boundaries only (a periodic box is stored in float, and the cell and
     * list builds read float records): FK_ERR_UNSUPPORTED for the cells and neighbors loops, for
     * explicit lanes (automatic lanes are then off) and with a box. docs/precision.md. */
    int positions;
} fk_eval_config;

/* The neighbors loop's lists. HALF: each pair once, computed for both particles with Newton's
 * third law (half the pair work and list memory, plus a pass that gathers each particle's share of
 * the pairs its lower partners computed); only for the accumulators the symmetric loop takes
 * (float, double, fixed64), FK_ERR_UNSUPPORTED for the others. FULL: every partner in each
 * particle's list, each particle adding its own terms (twice the pair work, no gather): every
 * accumulator. AUTO: half lists on CPUs where the accumulator allows them, full lists on GPUs and
 * for the other accumulators. Measured, lj-type fluid at density 0.8 (docs/algorithms.md): on an
 * NVIDIA H200 full lists take 0.52 ms per evaluation at N = 1,048,576 against 3.2 ms for half
 * lists, whose scattered partner terms and gather cost more than the pairs they save; on POCL half
 * lists are the faster. fixed64 gives the same integers either way (its sums are exact). */
typedef enum fk_neighbor_lists {
    FK_NEIGHBOR_LISTS_AUTO = 0,
    FK_NEIGHBOR_LISTS_HALF = 1,
    FK_NEIGHBOR_LISTS_FULL = 2
} fk_neighbor_lists;

typedef enum fk_result_type { FK_RESULT_DOUBLE = 0, FK_RESULT_FLOAT = 1 } fk_result_type;

/* FK_SCALE_EACH_UPLOAD: the scale is a function of the current positions alone (the pre-pass
 * doubles the pair work of every update: 1.3-1.7x float per step on an H100, 1.3-1.5x fixed64's
 * kept-scale step on POCL). FK_SCALE_KEEP, for time-stepping with fixed64: update_positions keeps
 * the scale of the last set_particles (or rescale), and a compute whose sums left fixed64's range
 * is redone, inside fk_eval_wait, after a new pre-pass on the current positions, so no overflow
 * reaches the caller unless the new scale cannot hold the forces either. The results then depend
 * on the scale in use, that is on the positions at the last rescale: the bit-identity across
 * devices, loops and variants holds for the same sequence of calls (a restart that calls
 * set_particles mid-run may rescale where the original run did not: save fk_eval_get_bound with
 * the checkpoint and give it to fk_eval_set_bound after the restart's set_particles, or use
 * FK_SCALE_EACH_UPLOAD). A kept scale loses no accuracy that shows: it gives up resolution only
 * when the largest pair term shrinks (a factor s: log2 s bits of fixed64's 62), and fixed64's
 * quantum is 2^(ceil(log2 N) - 61) of the largest term, far below the float pair terms' own
 * rounding (2^-24); measured over MD trajectories (docs/precision.md, "Scale policy"), the forces
 * of the two policies agree to 1e-14 of the rms force (LJ, Coulomb) and 4e-11 (a Plummer sphere
 * whose close encounters left the scale 700x coarse), against 1e-6..1e-5 for both against double.
 * KEEP is for fixed64 only, which detects every overflow: FK_ERR_INVALID_ARGUMENT for the other
 * accumulators. FK_SCALE_AUTO (0, the default): KEEP for fixed64 in an evaluation with
 * neither config.coordinated_scale nor a share (fk_eval_set_share: each part sees only its own
 * overflows), EACH_UPLOAD otherwise (narumi and nitadori_large cannot detect an overflow; parts
 * must rescale together). fk_eval_rescale_count tells how often a kept scale was redone. Until
 * issue #33 (within the unreleased 0.2.0), 0 was FK_SCALE_EACH_UPLOAD: callers that need the
 * scale to be a function of the current positions alone (results independent of the call
 * history) name FK_SCALE_EACH_UPLOAD, whose value is now 2. */
typedef enum fk_scale_policy {
    FK_SCALE_AUTO = 0,
    FK_SCALE_KEEP = 1,
    FK_SCALE_EACH_UPLOAD = 2
} fk_scale_policy;

/* Narumi et al., sec. 4.1. On the fly (the default): the pair loop masks excluded pairs (a
 * compare per slot per pair, config.max_exclusions): correct on every device by construction.
 * Afterwards (Narumi's experiment): the device sums every pair, then a second kernel subtracts
 * each excluded pair's terms, recomputed, in the accumulator's arithmetic (no limit per particle).
 * The subtraction cancels only if both kernels compute each excluded term with the same bits,
 * which OpenCL does not promise (Intel's CPU compiler does not): with excluded terms of 1e8 and
 * net forces of 1, a one-ulp difference is a wrong force. Use it with config.reproducible, where
 * the pair arithmetic is the same bits in every kernel, or to study the rounding it leaves behind.
 * Values changed in 0.2: afterwards was 0 (the default) before. */
typedef enum fk_exclusion_mode {
    FK_EXCLUDE_ON_THE_FLY = 0,
    FK_EXCLUDE_AFTERWARDS = 1
} fk_exclusion_mode;

/* Typed pair parameters (--params, docs/file-formats.md): types T (particle types are 0..T-1),
 * values[(a * T + b) * P + p] the P = fk_kernel_info.pair_parameters parameters of pair (a, b) (lj,
 * ljc_*: epsilon, sigma; buck: A, rho, C), symmetric. present (NULL: all) flags the pairs that have
 * parameters; a pair the particles use without them is an error naming it. */
#define FK_MAX_PAIR_TYPES 1024
typedef struct fk_pair_table {
    size_t types;
    const double *values;
    const unsigned char *present;
} fk_pair_table;

/* What actually runs, after automatic choices. */
typedef struct fk_variant {
    int unroll_i, unroll_j;
    int work_group_size;
    int local_tiling;
    int j_splits; /* for the current particle count */
    fk_variant_source source;
    int program_from_cache; /* 1 when the binary came from the disk cache */
    double build_seconds;   /* time to obtain the program (compile or cache load), in seconds */
    size_t tuned_count;     /* N bucket of the tuning database entry used; 0 when none was */
    /* The cells algorithm (all 0 for the others): the grid, the placeholders per cell, and what
     * the last build cost. unroll_i/j are 1 and j_splits 1 there (the cell loop has neither). */
    int cell_grid[3];          /* cells per side */
    double cell_size[3];       /* side of a cell, >= cutoff + skin */
    double cell_skin;          /* the skin in use (config.skin resolved) */
    int cell_capacity;         /* placeholders per cell (grown when a cell overflows) */
    size_t cell_rebuilds;      /* cell-list builds since fk_eval_create */
    size_t cell_resizes;       /* builds redone because a cell overflowed its placeholders */
    double cell_build_seconds; /* device seconds of the last build (binning, sorting, checks) */
    uint64_t pairs_examined;   /* pair evaluations per compute where an algorithm examines fewer
                                * than N^2 (cells: every pair of neighbouring cells, those beyond
                                * the cutoff included); 0 means N^2 (all-pairs) */
    int lanes; /* vector lanes (8, 16): i-particles per work-item (all-pairs) or partners per
                * step (neighbors); 0: the scalar template */
    /* The neighbors loop: 1 half lists, 0 full lists (fk_eval_config.neighbor_lists resolved);
     * 0 for the other loops. */
    int neighbor_half_lists;
    /* The pair loop that runs (fk_algorithm, never FK_ALGORITHM_AUTO), and where it came from:
     * FK_VARIANT_EXPLICIT when config.algorithm named it; for FK_ALGORITHM_AUTO,
     * FK_VARIANT_USER_DB or FK_VARIANT_SHIPPED_DB when the tuning database's measured entries
     * decided, FK_VARIANT_DEFAULT when the built-in rule did (added in 0.2). */
    int algorithm;
    fk_variant_source algorithm_source;
} fk_variant;

/* Particle data, in double on the host; the device stores single precision. */
typedef struct fk_particles {
    size_t count;
    const double *position; /* 3 * count: x, y, z */
    const double *mass;     /* count: mass (gravity) or charge (molecular); NULL means all 1 */
    const double *velocity; /* 3 * count, for gaj; else NULL */
    const int *type;        /* count, for typed kernels; else NULL */
} fk_particles;

FK_API fk_status fk_eval_create(fk_context *context, const fk_eval_config *config, fk_eval **eval);
FK_API void fk_eval_destroy(fk_eval *eval);

/* Uploads particles. Rejects NaN/Inf, count 0, and (gravity with eps = 0) coincident bodies. */
FK_API fk_status fk_eval_set_particles(fk_eval *eval, const fk_particles *particles);

/* The fast path of a time-stepping loop: new positions (3 * count) of the particles of the last
 * successful fk_eval_set_particles, and for gaj their new velocities (3 * count; ignored by the
 * other kernels, may be NULL there). Masses, charges, types, the pair table and exclusions stay;
 * the coordinates are written into the existing device buffers, and the accumulators that take
 * their scale from the data (fixed64, narumi, nitadori_large) rerun their bound pre-pass unless
 * the scale is kept (config.scale_policy: by default fixed64 keeps it). Rejects
 * NaN and Inf, and with gravity and eps = 0 coincident bodies, as set_particles does; it does not
 * repeat the molecular kernels' O(N log N) search for coincident particles: such a pair gives NaN
 * forces (FK_ERR_OVERFLOW from the data-scaled accumulators: from this update where it runs their
 * pre-pass, else from the compute), which the caller must check. After
 * FK_ERR_INVALID_INPUT for a coordinate the evaluation keeps its previous particles (the cells and
 * neighbors loops' check for a particle more than a box length outside the periodic box is the
 * exception: it runs after the upload, and fk_eval_set_particles is needed); after any other
 * failure fk_eval_set_particles is needed again. FK_ERR_STATE before the first set_particles. */
FK_API fk_status fk_eval_update_positions(fk_eval *eval, const double *position,
                                          const double *velocity);

/* The cheapest update (added in 0.2): a pinned array of 3 * count doubles that the evaluation owns
 * (it holds the current positions when first asked for). Write new positions into it and call
 * fk_eval_update_positions(eval, that pointer, ...): on a device with fp64 the doubles of more than
 * 16,384 particles go to the device by DMA and are converted and checked there, without a pass
 * over them on the host; fewer are converted on the host, whose pass then costs less than the round
 * trip the device's check needs (as do gravity without softening and gaj, as for any other array;
 * the same bits either way). When the update
 * returns, the array may be written again. Valid until the next fk_eval_set_particles or
 * fk_eval_destroy. FK_ERR_STATE before set_particles. */
FK_API fk_status fk_eval_positions_buffer(fk_eval *eval, double **positions);

/* Runs one evaluation and waits for it: fk_eval_compute_async then fk_eval_wait. seconds (may be
 * NULL) receives the device time of the pair loop from OpenCL event profiling, the j-split
 * reduction and the exclusion subtraction included (not the decode and the transfer); -1 on a
 * queue without profiling (fk_context_config.device_timing). */
FK_API fk_status fk_eval_compute(fk_eval *eval, double *seconds);

/* The asynchronous form (added in 0.2): compute_async enqueues the pair loop, the decode of the
 * results on the device (double, or float: config.result_type) and their transfer into the
 * evaluation's pinned host memory, and returns at once; the caller does host work (integrating
 * other particles, I/O) and then calls fk_eval_wait, which waits and reports any failure of the
 * enqueued work (seconds as fk_eval_compute). Until the wait, the evaluation takes no other call
 * than fk_eval_wait and fk_eval_destroy (FK_ERR_STATE: "a compute is in flight"); destroy waits. */
FK_API fk_status fk_eval_compute_async(fk_eval *eval);
FK_API fk_status fk_eval_wait(fk_eval *eval, double *seconds);

/* Reads the results of the last compute: force_components(kernel) values per particle, and one
 * potential per particle (only when config.potential was set). A copy out of the evaluation's
 * pinned host memory, where the compute left them decoded; no allocation, no device transfer.
 * FK_ERR_OVERFLOW names the first particle whose sum left the accumulator's range. */
FK_API fk_status fk_eval_read_forces(fk_eval *eval, double *forces);
FK_API fk_status fk_eval_read_potentials(fk_eval *eval, double *potentials);
/* The same in float (added in 0.2): rounded to nearest from the decoded double, or copied when
 * config.result_type is FK_RESULT_FLOAT. */
FK_API fk_status fk_eval_read_forces_float(fk_eval *eval, float *forces);
FK_API fk_status fk_eval_read_potentials_float(fk_eval *eval, float *potentials);
/* Without the copy (added in 0.2): *forces (and *potentials, NULL to skip; potentials need
 * config.potential) point into the evaluation's pinned host memory, in the layout of the reads
 * above and the type config.result_type says (const double *, or const float * with
 * FK_RESULT_FLOAT). Valid until the next compute, set_particles, update_positions or destroy.
 * FK_ERR_UNSUPPORTED on a device without fp64, where the host decodes at each read. */
FK_API fk_status fk_eval_results_view(fk_eval *eval, const void **forces, const void **potentials);

FK_API fk_status fk_eval_get_variant(const fk_eval *eval, fk_variant *variant);
/* Why the variant is not the one chosen first: for variant.source FK_VARIANT_FITTED, the shape
 * the device refused and the limit it gave; "" otherwise. Owned by the evaluation, valid until it
 * is destroyed (added in 0.2). */
FK_API const char *fk_eval_variant_note(const fk_eval *eval);
FK_API size_t fk_eval_force_components(const fk_eval *eval);
/* The reach of an evaluation's pair interactions as fk_eval_create resolved its configuration
 * (config.physics or the flat fields, defaults applied), for callers that place particles by it
 * (the MPI layer's halos, forcekit_mpi.h) and must not derive the defaults again (added in 0.2):
 * *cutoff, the cutoff in use (the law's default for 0; 0: none, every pair counts); *skin, the
 * Verlet skin the cells and lists keep (config.skin resolved: FK_DEFAULT_SKIN_FRACTION of the
 * cutoff for 0; 0 for none, and without a cutoff), whatever the pair loop; box, the periodic box
 * (all 0: open boundaries). The pairs a loop examines lie within cutoff + skin. Each pointer may
 * be NULL. FK_ERR_INVALID_ARGUMENT for a NULL evaluation. */
FK_API fk_status fk_eval_get_reach(const fk_eval *eval, double *cutoff, double *skin,
                                   double box[3]);
/* What the evaluation's pair loop does with the work, from the loop's own description in the
 * library's loop table, for callers that divide an evaluation among processes (the MPI layer) and
 * must not know loops by name (added in 0.2): *writes_pairs 1 when a forces pass writes both
 * particles of a pair (Newton's third law: the symmetric loop, half neighbour lists), so that
 * fk_eval_set_share is refused; *cell_grid 1 when the loop examines only the pairs within cutoff +
 * skin on a cell grid (cells, neighbour lists: a spatial split of a periodic box works); and
 * *shares_cells 1 when fk_eval_set_share divides cells rather than particles
 * (fk_eval_set_share_range is then refused). Each pointer may be NULL. FK_ERR_INVALID_ARGUMENT for
 * a NULL evaluation. */
FK_API fk_status fk_eval_get_loop_traits(const fk_eval *eval, int *writes_pairs, int *cell_grid,
                                         int *shares_cells);

/* Molecular kernels. The pair table is validated (NaN, negative epsilon or sigma, rho <= 0,
 * asymmetry: FK_ERR_INVALID_INPUT naming the pair) and uploaded once; without one, one type with
 * epsilon = sigma = 1 (buck: A = rho = C = 1). Exclusions are pairs[2 k], pairs[2 k + 1] (0-based
 * particle indices, either order, duplicates ignored), left out as config.exclusion_mode says;
 * count 0 clears them. Both take effect with the next fk_eval_set_particles, which checks types
 * and indices against the particles: call them first. */
FK_API fk_status fk_eval_set_pair_table(fk_eval *eval, const fk_pair_table *table);
FK_API fk_status fk_eval_set_exclusions(fk_eval *eval, const size_t *pairs, size_t count);

/* For config.reproducible: 1 when the device has what cross-device bit-identity needs (correctly
 * rounded single-precision divide and sqrt, denormals), 0 when it lacks something (why goes to
 * *reason when not NULL: a static string), -1 when reproducibility was not asked for. */
FK_API int fk_eval_reproducible(const fk_eval *eval, const char **reason);

/* Shares (added in 0.2, issue #20: the distributed evaluation of forcekit_mpi.h is built on them).
 * fk_eval_set_share(eval, part, parts): the following computes evaluate only part `part` (0 ..
 * parts - 1) of the pair work; the results of the particles outside it read as +0.0 (all bits
 * zero). Every particle's results are computed by exactly one part, with the same arithmetic in
 * the same order as without a share, so the parts' results combined by a bitwise OR (or a sum) are
 * the unshared results bit for bit, for every accumulator. The parts: all-pairs, lanes and full
 * neighbour lists, a range of particles in the caller's order (the same split whatever the
 * device's kernel shape; all-pairs launches the i-blocks that cover it); cells,
 * a range of cells (a slab of the box): which particles that is depends on the positions. Every
 * part holds all the particles (the j-side). The data-scaled accumulators' pre-pass covers every
 * particle, so that every part chooses by itself the scale the unshared evaluation would (fixed64:
 * from the largest term, exact), unless the parts choose it together (config.coordinated_scale):
 * then each part's pre-pass measures only its share, divided among the parts like the forces, and
 * the bounds the parts combine (fk_eval_get_bound, the maximum of each, fk_eval_set_bound) are
 * those of the whole system.
 * FK_ERR_UNSUPPORTED for the symmetric loop and half neighbour lists (Newton's third law writes
 * both particles of a pair) and for exclusions afterwards; FK_ERR_INVALID_ARGUMENT unless
 * 0 <= part < parts. parts 1 (part 0) clears the share. Takes effect at the next compute. */
FK_API fk_status fk_eval_set_share(fk_eval *eval, int part, int parts);
/* The share as an explicit range of particles [first, end) in the caller's order (added in 0.2):
 * for parts whose callers hold uneven slices of the system, each part computing exactly the
 * particles it holds, so that no results need moving between the parts. All-pairs, lanes and
 * full neighbour lists; FK_ERR_UNSUPPORTED where fk_eval_set_share refuses and for cells (whose
 * shares are ranges of cells); FK_ERR_INVALID_ARGUMENT when first > end. A range reaching beyond
 * the particles is cut at their count; an empty range computes nothing. The ranges of the parts
 * must tile the particles for their results to combine to the unshared ones. Replaces a share
 * set by fk_eval_set_share (and fk_eval_set_share(eval, 0, 1) clears it). Takes effect at the
 * next compute. */
FK_API fk_status fk_eval_set_share_range(fk_eval *eval, size_t first, size_t end);
/* The pair evaluations the last forces pass of this evaluation's share did (its examined pairs:
 * all-pairs, the share's particles times N; cells and lists, the pairs its loop examined, those
 * beyond the cutoff included); 0 before the first compute. */
FK_API uint64_t fk_eval_share_pairs(const fk_eval *eval);
/* A kept scale (FK_SCALE_KEEP, FK_SCALE_AUTO's fixed64): chooses the data-scaled accumulator's
 * scale again from the current positions (one pre-pass), as a compute that overflowed does by
 * itself. For callers that keep several
 * evaluations on one scale: when one of them rescaled (fk_eval_rescale_count grew), the others
 * call this and compute again. FK_OK and nothing done for accumulators without a data-scaled
 * scale. */
FK_API fk_status fk_eval_rescale(fk_eval *eval);
/* Computes redone with a new scale after an overflow (a kept scale), since fk_eval_create;
 * fk_eval_rescale calls are not counted. */
FK_API size_t fk_eval_rescale_count(const fk_eval *eval);
/* The bound the last pre-pass measured on this evaluation's particles: the largest |pair term|
 * and the largest per-particle sum of magnitudes (0 and 0 for accumulators without a pre-pass).
 * fk_eval_set_bound chooses the data-scaled accumulator's parameters from a given bound instead,
 * with no pass, for count particles (the range fixed64 sizes: each of N terms below
 * 2^(62 - ceil(log2 N)); 0: this evaluation's count): the parts of a system
 * (config.coordinated_scale) combine their measured bounds (the maximum of each) and set the
 * result with the system's N on every part, which then holds the parameters one evaluation of
 * the whole system would choose; fixed64's largest term is exact, so its scale is exactly the
 * same. FK_ERR_OVERFLOW when the accumulator cannot hold the bound; FK_OK and nothing done for
 * accumulators without a pre-pass. Takes effect at the next compute. */
FK_API fk_status fk_eval_get_bound(const fk_eval *eval, double *max_term, double *max_sum);
FK_API fk_status fk_eval_set_bound(fk_eval *eval, double max_term, double max_sum, size_t count);

/* ---------------------------------------------------------------------------------------------- */
/* Targets against sources: the GRAPE-6 / Sapporo engine (added in 0.2, issue #18)                */
/*
 * A Hermite N-body code keeps all N particles resident on the accelerator as sources (j-particles,
 * each with its time tj and Taylor coefficients) and, at every block step, evaluates a few targets
 * (i-particles, predicted by the host to the block time) against them. fk_sources is that: a
 * resident set of source slots updated one slot at a time, a predictor on the device, and an
 * asynchronous evaluation (fk_sources_start, fk_sources_finish) of up to max_targets targets that
 * yields the gaj law's acceleration and jerk, the potential, the ID of each target's nearest source
 * and, on request, the IDs of the sources within each target's radius. A source whose ID equals the
 * target's ID is left out. It is an object of its own rather than an fk_eval because an evaluation
 * is one particle set evaluated against itself (docs/architecture.md, "Targets against sources").
 * The device needs fp64 (the predictor runs in double); FK_ERR_UNSUPPORTED otherwise.
 */

typedef struct fk_sources fk_sources;

/* How positions (and velocities) are stored on the device for the pair differences. */
typedef enum fk_positions {
    FK_POSITIONS_DEFAULT = 0, /* the object's default: double-single for fk_sources, float for
                               * fk_eval (fk_eval_config.positions) */
    FK_POSITIONS_FLOAT,       /* one float per coordinate: relative 6e-8 of the coordinate */
    /* a float pair (hi, lo) per coordinate, 48-bit mantissa: differences of close pairs keep their
     * precision far from the origin; with the ref accumulator the potential matches double to
     * about 1e-12 */
    FK_POSITIONS_DOUBLE_SINGLE
} fk_positions;

/* "float", "ds"; NULL for an unknown value. By name: FK_ERR_INVALID_ARGUMENT for an unknown one. */
FK_API const char *fk_positions_name(fk_positions positions);
FK_API fk_status fk_positions_find(const char *name, fk_positions *positions);

typedef struct fk_sources_config {
    size_t struct_size; /* sizeof(fk_sources_config); see the top of this file */
    size_t capacity;    /* source slots; required (> 0) */
    size_t max_targets; /* targets per evaluation (GRAPE's npipes); 0: 256 */
    /* Accumulators without data-scaled parameters: float, double, ref, eft, composite, ti,
     * nitadori; and fixed64, scaled per target and component from the caller's hints
     * (fk_targets.acc_hint ...), as GRAPE-6 scaled its fixed-point sums. narumi and
     * nitadori_large need a bound pre-pass the engine does not run: FK_ERR_UNSUPPORTED. NULL:
     * "ref" (double pair arithmetic and sums). */
    const char *accum;
    fk_positions positions;   /* 0: double-single */
    size_t neighbor_capacity; /* IDs kept per target's neighbour list; 0: 256 */
    int work_group_size;      /* targets per work-group, also the source tile; 0: automatic */
    int j_splits;             /* work-groups sharing one target block's sources; 0: automatic */
    /* Targets per work-item, 1, 2 or 4 (added in 0.2): each source read from local memory serves
     * that many; 0: 1 (on the H200, 2 and 4 were slower) */
    int unroll;
} fk_sources_config;

/* One source slot as a Hermite code holds it: the derivatives themselves (GRAPE's a2, j6 and k18
 * are a/2, jerk/6 and snap/18: multiply them back). */
typedef struct fk_source {
    int id;      /* the particle's ID: excluded when a target carries the same ID */
    double t;    /* time of the coefficients (tj) */
    double mass; /* > 0 or 0 */
    double x[3]; /* position at t */
    double v[3]; /* velocity at t */
    double a[3]; /* acceleration at t */
    double jerk[3];
    double snap[3]; /* 0 for a fourth-order code */
} fk_source;

typedef struct fk_targets {
    size_t count;           /* 1 .. max_targets */
    size_t sources;         /* nj: slots 0 .. nj - 1 take part; each must have been set */
    double time;            /* ti: the sources are predicted to it */
    double eps2;            /* softening squared, >= 0 */
    const int *id;          /* count */
    const double *position; /* 3 * count, predicted by the caller to ti */
    const double *velocity; /* 3 * count */
    /* count radii squared, or NULL: no neighbour lists; a radius <= 0 gives an empty list */
    const double *h2;
    /* Scale hints for the fixed64 accumulator (GRAPE-6's aold, j6old, phiold, multiplied back):
     * the expected acceleration and jerk (3 * count) and potential (count) of each target, or
     * NULL. Only their order of magnitude matters: each sum is scaled so that terms up to 1024
     * times the hint's magnitude fit; a larger term overflows (fk_sources_finish then returns
     * FK_ERR_OVERFLOW, and the caller retries with better hints, as GRAPE-6 clients do). A zero
     * or missing hint counts as 1. Ignored by the other accumulators. */
    const double *acc_hint, *jerk_hint, *pot_hint;
} fk_targets;

typedef struct fk_target_results {
    double *acc;  /* 3 * count, or NULL */
    double *jerk; /* 3 * count, or NULL */
    double *pot;  /* count, or NULL: -sum m / sqrt(r^2 + eps2) over the other sources */
    int *nearest; /* count, or NULL: the ID of the nearest other source (unsoftened), -1: none */
} fk_target_results;

FK_API fk_status fk_sources_create(fk_context *context, const fk_sources_config *config,
                                   fk_sources **sources);
FK_API void fk_sources_destroy(fk_sources *sources);
/* The configuration in use, defaults resolved (accum names the accumulator). */
FK_API fk_status fk_sources_get_config(const fk_sources *sources, fk_sources_config *config);

/* Writes slot (< capacity) on the host; the slots changed since the last start go to the device
 * with the next fk_sources_start. FK_ERR_INVALID_INPUT for NaN or Inf, a negative mass, an ID < 0;
 * FK_ERR_STATE while an evaluation is in flight. */
FK_API fk_status fk_sources_set(fk_sources *sources, size_t slot, const fk_source *source);

/* Checks the targets, uploads them and the changed slots, and enqueues the predictor and the
 * evaluation; returns without waiting. FK_ERR_INVALID_ARGUMENT for count 0 or above max_targets,
 * sources 0 or above capacity or naming a slot never set; FK_ERR_INVALID_INPUT for NaN or Inf in
 * the targets, eps2 < 0 or NaN; FK_ERR_STATE when one is already in flight. */
FK_API fk_status fk_sources_start(fk_sources *sources, const fk_targets *targets);
/* Waits for the evaluation and writes the results (any pointer may be NULL). FK_ERR_OVERFLOW when
 * a sum is not finite or left fixed64's range (the results are written anyway, NaN where a
 * fixed64 sum overflowed), FK_ERR_STATE without a start. */
FK_API fk_status fk_sources_finish(fk_sources *sources, const fk_target_results *results);
/* For evaluations split over several engines (added in 0.2, issue #20; forcekit_mpi.h's block
 * steps: each engine holds a part of the sources and evaluates every target against it). The
 * last finished evaluation's raw results: FK_SOURCES_RAW_WORDS words per target, the seven sums
 * (ax ay az jx jy jz phi) as the accumulator packs them (fixed64: 64-bit two's complement
 * integers at the target's scale, which the hints fix, so that the parts' integers add, with
 * wrap-around, to the whole's exactly), then the nearest source's ID (low 32 bits, -1 none) and
 * the bits of its r^2 (a double). fk_sources_decode_raw decodes such words, the parts' combined,
 * into results as fk_sources_finish would, at the scales of the last start, which must have had
 * the same targets. FK_ERR_STATE without a finished evaluation. */
#define FK_SOURCES_RAW_WORDS 9
/* fixed64's range sized for count sources instead of each start's targets.sources (0, the
 * default): a part of a split evaluation gives the sources of all the parts, so that every part
 * uses the scale of one engine holding them all. */
FK_API fk_status fk_sources_set_scale_count(fk_sources *sources, size_t count);
FK_API fk_status fk_sources_read_raw(fk_sources *sources, uint64_t *words);
FK_API fk_status fk_sources_decode_raw(fk_sources *sources, const uint64_t *words,
                                       const fk_target_results *results);
/* The neighbour list of target (< count) of the last finished evaluation with h2: *count IDs in
 * increasing order at *ids (valid until the next start), and *overflow 1 when more sources were
 * within the radius than neighbor_capacity (then *count is the number found, the list holds
 * neighbor_capacity of them, not necessarily the smallest IDs). FK_ERR_STATE when none. */
FK_API fk_status fk_sources_neighbors(fk_sources *sources, size_t target, const int **ids,
                                      size_t *count, int *overflow);
/* Device time of the last finished evaluation (added in 0.2, issue #18), from the profiling of its
 * commands: *total from its first upload's start to its download's end (uploads, predictor, pair
 * loop, merge, download; what a block step costs the device), *pair_loop the pair loop and the
 * merge of its splits. Either pointer may be NULL. The wall time a caller sees adds the enqueue
 * and wake-up latencies of the driver. FK_ERR_STATE without a finished evaluation. */
FK_API fk_status fk_sources_device_seconds(fk_sources *sources, double *total, double *pair_loop);

/* ---------------------------------------------------------------------------------------------- */
/* Autotuning and the tuning database                                                             */
/*
 * fk_tune_run searches unroll factors, work-group size, local tiling and the j-split for one kernel
 * and accumulator on the context's device, per N bucket (powers of 4 from 1,024 to 1,048,576),
 * checks every candidate against the double-precision host reference before timing it, and writes
 * the best of each bucket to the user's tuning database. fk_eval_create takes entries from there
 * (and from the shipped database) when the unrolling is automatic.
 */

#define FK_TUNE_BUCKET_COUNT 6

/* The N buckets: 1024 * 4^k, k < FK_TUNE_BUCKET_COUNT. */
FK_API size_t fk_tune_bucket_at(size_t index);
/* The bucket holding n: the nearest one on a logarithmic scale (n = 0 gives the largest). */
FK_API size_t fk_tune_bucket_for(size_t n);

typedef enum fk_tune_outcome {
    FK_TUNE_MEASURED = 0,
    FK_TUNE_UNSUPPORTED,  /* breaks a device limit (local memory, work-group size): skipped */
    FK_TUNE_BUILD_FAILED, /* the compiler rejected it: skipped with a note */
    FK_TUNE_WRONG_RESULT, /* disagreed with the host reference: never timed */
    FK_TUNE_FAILED        /* any other failure at run time */
} fk_tune_outcome;

typedef enum fk_tune_search {
    FK_TUNE_EXHAUSTIVE = 0, /* every candidate fitted in the budget */
    FK_TUNE_SAMPLED,        /* a random sample, then local refinement around the best */
    FK_TUNE_SKIPPED         /* not even a few candidates fit in the budget */
} fk_tune_search;

typedef struct fk_tune_point {
    int unroll_i, unroll_j;
    int work_group_size;
    int local_tiling; /* 1 on, 0 off */
    int j_splits;     /* requested: 0 automatic */
    int effective_j_splits;
    int lanes; /* CPU lanes (fk_eval_config.lanes): 8 or 16; 0 the scalar template */
    fk_tune_outcome outcome;
    double seconds;           /* median device seconds per evaluation (measured points) */
    double confirmed_seconds; /* the confirmation round's median, NaN unless re-timed there */
    double error;             /* worst scaled error against the host reference */
    double tolerance;         /* the bound it was held to */
    int resumed;              /* measured by an earlier, interrupted run */
    char note[384];           /* why it was skipped or rejected */
} fk_tune_point;

typedef struct fk_tune_bucket_result {
    size_t bucket; /* the bucket's N */
    size_t n;      /* the N measured (the bucket's, or the one asked for) */
    fk_tune_search search;
    size_t space_size; /* candidates in the search space */
    size_t tried_count;
    fk_tune_point *tried; /* in the order they were tried */
    int has_best;
    fk_tune_point best;
    double untuned_seconds; /* the built-in default variant here; NaN when it did not run */
    double seconds;         /* wall time spent on this bucket */
    char note[256];
} fk_tune_bucket_result;

typedef struct fk_tune_progress {
    size_t bucket_index, bucket_count;
    size_t n;
    size_t done, planned; /* candidates of this bucket; planned grows when sampling refines */
    fk_tune_search search;
    double elapsed, budget;     /* seconds, whole run */
    double best_seconds;        /* NaN before the first measured candidate */
    const fk_tune_point *point; /* the candidate just finished; NULL at a bucket's start and end */
    const fk_tune_bucket_result *finished; /* at a bucket's end, else NULL */
} fk_tune_progress;

/* Return nonzero to stop after the current candidate (the points measured so far stay in the
 * resume file, and the next run with the same arguments continues from them). */
typedef int (*fk_tune_progress_fn)(const fk_tune_progress *progress, void *user);

typedef struct fk_tune_config {
    size_t struct_size;    /* sizeof(fk_tune_config), or 0 (0.2.0); see the top of this file */
    const char *kernel;    /* required */
    const char *accum;     /* NULL: "float" */
    size_t n;              /* 0: every bucket; else only the bucket holding n, measured at n */
    double budget_seconds; /* whole run; 0: 600 */
    const char *database;  /* NULL: $FORCEKIT_TUNING_DB, else $XDG_DATA_HOME/forcekit/tuning.json */
    uint64_t seed;         /* order of the sampled search; 0: a fixed default */
    /* Narrow the search space (0: search the dimension). local_tiling 1 on, -1 off; j_splits -1
     * automatic only. */
    int unroll_i, unroll_j, work_group_size, local_tiling, j_splits;
    /* CPU lanes: 0 search the scalar template and, on a CPU, the lane loop at the widths the
     * device holds (8, 16) with its j-unrolling and work-group size; -1 the scalar template only;
     * 8 or 16 that width only. */
    int lanes;
    fk_tune_progress_fn progress;
    void *user;
} fk_tune_config;

typedef struct fk_tune_result {
    char kernel[64], accum[64];
    /* The database keys of this device (see docs/tuning.md). */
    char device_type[16], vendor[128], architecture[128], device[256];
    char database[1024]; /* where the entries were written; empty when nothing was written */
    char resume[1024];   /* the resume file */
    int interrupted;     /* the progress callback stopped the run */
    double seconds;
    size_t bucket_count;
    fk_tune_bucket_result *buckets;
} fk_tune_result;

/* Runs the search. On FK_OK *result holds what was tried (free it with fk_tune_result_free) even
 * when no candidate could run. Warnings (an ignored corrupt database) go to fk_context_warnings. */
FK_API fk_status fk_tune_run(fk_context *context, const fk_tune_config *config,
                             fk_tune_result **result);
FK_API void fk_tune_result_free(fk_tune_result *result);

/* ---------------------------------------------------------------------------------------------- */
/* Time integration on the device (added in 0.2, issue #33)                                       */

/* An integrator advances the particles of an evaluation (fk_eval) in time without bringing them
 * to the host: positions and velocities live on the device, each step's forces come from the
 * evaluation's own pair loop (every force law, accumulator and loop), and the kick, drift,
 * periodic wrap and the cell and neighbour lists' rebuild check run as kernels (cl/integrate.cl).
 * The host sees the state only when it asks (fk_integrator_get_state, fk_integrator_energies).
 * docs/simulate.md ("The library integrator") describes the schemes, the random numbers, the
 * precision and when data crosses to the host. Needs a device with fp64 (cl_khr_fp64): the state
 * is kept in double and the forces decoded on the device; FK_ERR_UNSUPPORTED elsewhere. */
typedef struct fk_integrator fk_integrator;

typedef enum fk_integrator_kind {
    /* Velocity Verlet (kick-drift-kick), NVE. gaj: its jerk output is not used. */
    FK_INTEGRATOR_VERLET = 0,
    /* Langevin dynamics, BAOAB splitting (Leimkuhler & Matthews 2013): a half kick, a half
     * drift, the exact Ornstein-Uhlenbeck update of the velocities at config.temperature with
     * config.friction, a half drift, the forces, a half kick. The noise is a counter-based
     * function of (seed, step, particle), the same bits on every device with fp64. */
    FK_INTEGRATOR_LANGEVIN = 1,
    /* 4th-order Hermite with a shared step (Makino & Aarseth 1992), gaj only: predict x and v
     * from a and the jerk, evaluate a and the jerk at the prediction, correct in the
     * time-symmetric form; src/support/simulate.c's operations. */
    FK_INTEGRATOR_HERMITE = 2
} fk_integrator_kind;

typedef struct fk_integrator_config {
    size_t struct_size; /* sizeof(fk_integrator_config), or 0 (0.2.0) */
    int kind;           /* fk_integrator_kind; 0: velocity Verlet */
    double dt;          /* the time step, > 0 and finite; required */
    /* Langevin: k_B T in the force law's energy units (> 0), the friction gamma in 1/time
     * (> 0), and the seed of the random numbers (any value; 0 is a seed like another). Verlet
     * and Hermite require temperature and friction zero (the seed is not used). */
    double temperature, friction;
    uint64_t seed;
    /* The masses of the dynamics (count values, each > 0 and finite), copied at create; NULL:
     * all 1. Molecular kernels only: their fk_particles.mass holds charges. The gravity kernels
     * (ga, gaj) give accelerations and take their masses from the evaluation's particles, so
     * masses must be NULL there. */
    const double *masses;
    size_t mass_count; /* the number of masses given: the evaluation's particle count */
} fk_integrator_config;

/* Creates an integrator on an evaluation whose particles are set (fk_eval_set_particles: the
 * count, masses or charges, types, pair table and exclusions stay those). The evaluation must
 * outlive the integrator and is used by it: while the integrator steps, the evaluation's device
 * positions are the integrator's and its own update and compute calls still work (on whatever
 * positions were last written). A new fk_eval_set_particles with another count makes the
 * integrator's calls FK_ERR_STATE. Gravity without softening (eps = 0) is FK_ERR_UNSUPPORTED (the
 * coincidence check needs the host), as are devices without fp64 and evaluations with a share
 * (fk_eval_set_share). The state must then be set (fk_integrator_set_state) before stepping. */
FK_API fk_status fk_integrator_create(fk_eval *eval, const fk_integrator_config *config,
                                      fk_integrator **integrator);
FK_API void fk_integrator_destroy(fk_integrator *integrator);

/* The state: positions (3 * count, required; every coordinate a finite float) and velocities
 * (3 * count; NULL: zero). Positions in a periodic box are wrapped into [0, L). Computes the
 * forces at these positions (the one blocking step: it rebuilds the lists and, for fixed64,
 * chooses the scale from these positions) and sets the step counter to step (Langevin's noise is
 * keyed by it: a run continued from a saved state with its step draws the same numbers). */
FK_API fk_status fk_integrator_set_state(fk_integrator *integrator, const double *positions,
                                         const double *velocities, uint64_t step);
/* Advances n_steps steps on the device. The host waits only for the lists' rebuild decisions
 * (one small read per group of steps, sized from the interval between rebuilds) and, when a
 * rebuild or a fixed64 rescale is needed, for that; otherwise the steps are enqueued back to
 * back. On return the steps are enqueued, not necessarily finished; get_state and energies wait.
 * FK_ERR_INVALID_INPUT when a force became NaN or infinite (too large a time step): the state is
 * then lost and must be set again; FK_ERR_OVERFLOW when fixed64 cannot hold the forces even after
 * a new scale. */
FK_API fk_status fk_integrator_step(fk_integrator *integrator, uint64_t n_steps);
/* The current state, copied to the host (either may be NULL), and its step number (may be NULL):
 * the only transfer of positions and velocities. Positions are wrapped into a periodic box. */
FK_API fk_status fk_integrator_get_state(fk_integrator *integrator, double *positions,
                                         double *velocities, uint64_t *step);
/* Kinetic and potential energy of the current state (either may be NULL), summed on the device
 * in 64-bit fixed point from per-particle doubles, so the same state gives the same bits on every
 * device, work-group size and loop. potential needs the evaluation's potentials
 * (fk_eval_config.potential), else FK_ERR_STATE. Molecular kernels: the sum of the per-particle
 * potentials (each half of its pairs); gravity: half the sum of m_i phi_i. Hermite's last
 * evaluation was at the predicted positions: its potential takes one more evaluation at the
 * current ones (which never changes the trajectory; an overflow there is FK_ERR_OVERFLOW). */
FK_API fk_status fk_integrator_energies(fk_integrator *integrator, double *kinetic,
                                        double *potential);
/* Counters since create (any pointer may be NULL): the lists' builds the integrator asked for
 * (set_state's included), fixed64's scale choices (set_state's included) and the host's waits for
 * the flags (one per group of steps, one more per stop). */
FK_API fk_status fk_integrator_counters(const fk_integrator *integrator, uint64_t *rebuilds,
                                        uint64_t *rescales, uint64_t *syncs);

/* A part of a system divided among processes (added in 0.2, issue #33 item 5: forcekit_mpi.h's
 * fk_mpi_integrator is built on it; any other decomposition may use it too). The integrator then
 * holds one part's particles: those it integrates (its own) and halo copies of particles other
 * parts integrate, which it needs for its own particles' forces. After every step's drift the
 * integrator hands the caller the positions of `send` (its own particles that other parts hold as
 * halo copies) and takes the positions of `receive` (its halo copies) back, through the caller's
 * exchange; the decisions of the step (rebuild the lists, rescale fixed64, stop) are taken by all
 * parts together through the caller's reduce, so that every part does the same thing at the same
 * step as one integrator of the whole system would. With particles in the order of the whole
 * system (global_index ascending) and the same lists, the forces, the trajectory and the energies
 * are the bits of one integrator of the whole system for fixed64 (exact sums, any order), and
 * for the other accumulators as far as each particle's pair order is the same.
 * Halo copies are not moved by the integrator (their velocities are held at zero), and are left
 * out of the energies. Verlet and Langevin; Hermite (gaj) is FK_ERR_UNSUPPORTED. */
typedef enum fk_part_reduce {
    FK_PART_REDUCE_OR = 0,  /* uint32_t values: bitwise OR over the parts (the step's votes) */
    FK_PART_REDUCE_MAX = 1, /* double values: the maximum (fixed64's bound, the energies' scale) */
    FK_PART_REDUCE_SUM = 2  /* int64_t values: the sum, exact (the energies' fixed-point sums) */
} fk_part_reduce;

typedef struct fk_integrator_part {
    size_t struct_size;  /* sizeof(fk_integrator_part) */
    size_t system_count; /* the particles of the whole system (fixed64's range, the energies) */
    /* Each of the part's particles' index in the whole system (the evaluation's count values,
     * each < 2^32): the key of Langevin's noise, so that a particle draws the same numbers in
     * every part and decomposition. NULL: the part's own indices. */
    const uint32_t *global_index;
    /* The evaluation's count flags: nonzero marks a halo copy. */
    const unsigned char *halo;
    /* Indices into the part's particles: the positions that leave after each drift (its own
     * particles, in the order the caller wants them; one may appear more than once) and the halo
     * copies whose positions arrive (each at most once). */
    const uint32_t *send;
    size_t send_count;
    const uint32_t *receive;
    size_t receive_count;
    /* > 0: when one of the part's own particles has moved farther than leave along z since
     * fk_integrator_set_state (the shortest periodic distance), the step on which that happened is
     * completed and fk_integrator_step returns early (the caller redistributes the particles and
     * sets the state again); until that set_state, further step calls take no step. Farther than
     * 2 leave since set_state (more than leave in the one step after the vote), the step fails
     * with FK_ERR_INVALID_INPUT (the halo may no longer hold every neighbour). 0: never. */
    double leave;
    /* Nonzero: fk_integrator_set_state keeps the evaluation's data-scaled accumulator parameters
     * (the caller restored the system's with fk_eval_set_bound) instead of choosing them again. */
    int keep_scale;
    /* Called once per step, on every part, after the drift: sent holds 3 send_count coordinates
     * (x, y, z of each send particle, in double), received must be filled with 3 receive_count.
     * A status other than FK_OK fails the step with it. */
    fk_status (*exchange)(void *user, const double *sent, double *received);
    /* Combines count values over all parts, in place (op: fk_part_reduce). Collective: every part
     * calls it the same number of times, in the same order. */
    fk_status (*reduce)(void *user, int op, void *values, size_t count);
    void *user;
} fk_integrator_part;

/* Makes the integrator one part of a divided system (the arrays are copied). Before
 * fk_integrator_set_state; set_state then zeroes the halo copies' velocities. The evaluation
 * must be molecular (gravity: FK_ERR_UNSUPPORTED) and its loop may not share (fk_eval_set_share).
 * Steps are then taken one at a time (two waits per step: the exchange and the votes). */
FK_API fk_status fk_integrator_set_part(fk_integrator *integrator, const fk_integrator_part *part);
/* The step counter (the number of steps since step 0 of set_state's counter), without waiting:
 * how far fk_integrator_step got when a part's leave returned early. */
FK_API uint64_t fk_integrator_step_index(const fk_integrator *integrator);

/* ---------------------------------------------------------------------------------------------- */
/* Host reference: double precision, O(N^2), for tests and accuracy checks */

/* A system's physics, one description for the reference and for an evaluation
 * (fk_eval_config.physics); zero means default throughout. */
typedef struct fk_physics {
    double eps; /* softening (gravity) */
    /* Molecular kernels: as in fk_eval_config (zero means default). */
    double cutoff, coulomb;
    union { /* the law's named parameters; dielectric: their 0.2 name */
        double parameters[FK_LAW_PARAMETERS];
        double dielectric[FK_LAW_PARAMETERS];
    };
    double box[3];
    const fk_pair_table *pair_table; /* NULL: the default single type */
    const size_t *exclusions;        /* pairs left out, 2 indices each */
    size_t exclusion_count;
} fk_physics;

/* forces: force_components values per particle; potentials may be NULL. A NaN or Inf position,
 * mass/charge or velocity is FK_ERR_INVALID_INPUT (0.2; 0.1 returned NaN forces). */
FK_API fk_status fk_reference_forces(const char *kernel, const fk_particles *particles,
                                     const fk_physics *physics, double *forces, double *potentials);
/* The same for the particles first .. end - 1 only (added in 0.2): forces holds their
 * (end - first) * force_components values, potentials (may be NULL) their end - first, each
 * summed over all particles. A caller computes a large reference in slices of rows, so that it
 * can stop in between (the Python binding checks for Ctrl-C) or spread them over threads.
 * first >= end or end > particles->count is FK_ERR_INVALID_ARGUMENT. */
FK_API fk_status fk_reference_forces_rows(const char *kernel, const fk_particles *particles,
                                          const fk_physics *physics, size_t first, size_t end,
                                          double *forces, double *potentials);

#ifdef __cplusplus
}
#endif
#endif
