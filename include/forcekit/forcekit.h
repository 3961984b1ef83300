/*
 * forcekit: pairwise force kernels for N-body and molecular dynamics on OpenCL devices.
 *
 * The API is opaque handles with create/destroy pairs. Every call returns an fk_status; the detail
 * of a failure (the OpenCL call that failed, a build log, a path searched) is kept in the context
 * and read with fk_context_last_error(). The library never prints and never exits.
 *
 * Configuration structs follow the rule "zero means default": memset them to 0 (or use {0}) and set
 * only what you need, so fields added later break nobody.
 */
#ifndef FORCEKIT_FORCEKIT_H
#define FORCEKIT_FORCEKIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FK_VERSION_MAJOR 0
#define FK_VERSION_MINOR 1
#define FK_VERSION_PATCH 0

typedef enum fk_status {
    FK_OK = 0,
    FK_ERR_INVALID_ARGUMENT, /* a NULL handle, an unknown name, an option out of range */
    FK_ERR_INVALID_INPUT,    /* particle data the kernel cannot evaluate (NaN, coincident bodies) */
    FK_ERR_HOST_MEMORY,      /* malloc failed */
    FK_ERR_NO_DEVICE,        /* no OpenCL platform or device at all */
    FK_ERR_DEVICE_NOT_FOUND, /* no device matches the selector */
    FK_ERR_UNSUPPORTED,   /* the device lacks a feature the request needs (fp64, work-group size) */
    FK_ERR_KERNEL_SOURCE, /* kernel directory or .cl file missing or unreadable */
    FK_ERR_BUILD,         /* the OpenCL compiler rejected the kernel; the build log is kept */
    FK_ERR_DEVICE_MEMORY, /* the device could not allocate the buffers */
    FK_ERR_OPENCL,        /* any other OpenCL failure; the failing call is kept */
    FK_ERR_IO,            /* a file could not be read or written */
    FK_ERR_PARSE,         /* a file is malformed */
    FK_ERR_STATE          /* calls in the wrong order (compute before set_particles) */
} fk_status;

/* A short, static, human-readable name of a status ("device memory exhausted"). */
const char *fk_status_string(fk_status status);

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
fk_status fk_devices_list(fk_device_info **devices, size_t *count);
void fk_devices_free(fk_device_info *devices);

/* "cpu", "gpu", "accelerator" or "other". */
const char *fk_device_type_name(fk_device_type type);

/* Resolves a selector against a device list: "P:D", a case-insensitive substring of the device
 * name, "cpu" or "gpu"; NULL or "" means the first GPU, else the first CPU, else the first device.
 * Returns FK_ERR_DEVICE_NOT_FOUND when nothing matches. */
fk_status fk_device_select(const fk_device_info *devices, size_t count, const char *selector,
                           size_t *chosen);

/* ---------------------------------------------------------------------------------------------- */
/* Context: one device, its queue, kernel sources and the compiled-program cache */

typedef struct fk_context fk_context;

typedef struct fk_context_config {
    const char *device; /* selector; NULL: $FORCEKIT_DEVICE, else first GPU, else first CPU */
    const char
        *kernel_dir; /* NULL: $FORCEKIT_KERNEL_DIR, then the build tree, then the install prefix */
    const char
        *cache_dir; /* NULL: $FORCEKIT_CACHE_DIR, else $XDG_CACHE_HOME/forcekit; "off" disables */
} fk_context_config;

/* On failure *context is still created when possible, so that fk_context_last_error() can explain;
 * destroy it either way. A NULL *context means no memory for even that. */
fk_status fk_context_create(const fk_context_config *config, fk_context **context);
void fk_context_destroy(fk_context *context);

/* The detail of the last failure on this context: the OpenCL call and its error, the build log, the
 * paths searched. Empty when the last call succeeded. Valid until the next call on the context. */
const char *fk_context_last_error(const fk_context *context);
const fk_device_info *fk_context_device(const fk_context *context);
/* The kernel directory in use, and the cache directory (NULL when the cache is off). */
const char *fk_context_kernel_dir(const fk_context *context);
const char *fk_context_cache_dir(const fk_context *context);

/* ---------------------------------------------------------------------------------------------- */
/* Kernels (force laws) and accumulators */

typedef struct fk_kernel_info {
    const char *name; /* "ga" */
    const char *description;
    unsigned force_components; /* values per particle in the force output (ga 3, gaj 6) */
    unsigned input_columns;    /* columns per particle in the text format */
    const char *input_format;  /* "x y z m" */
    double flops_per_interaction;
} fk_kernel_info;

typedef struct fk_accum_info {
    const char *name; /* "float" */
    char letter;      /* Narumi et al., Table 1 */
    const char *description;
    int needs_fp64;
} fk_accum_info;

/* NULL when the name is unknown. */
const fk_kernel_info *fk_kernel_find(const char *name);
const fk_accum_info *fk_accum_find(const char *name);
/* Iterate: index 0.. until NULL. */
const fk_kernel_info *fk_kernel_at(size_t index);
const fk_accum_info *fk_accum_at(size_t index);

/* ---------------------------------------------------------------------------------------------- */
/* Force evaluation                                                                               */

typedef struct fk_eval fk_eval;

/* Where the variant that runs came from. */
typedef enum fk_variant_source { FK_VARIANT_EXPLICIT = 0, FK_VARIANT_DEFAULT } fk_variant_source;

typedef struct fk_eval_config {
    const char *kernel;     /* "ga"; required */
    const char *accum;      /* NULL: "float" */
    int unroll_i, unroll_j; /* each 1, 2, 4 or 8; 0: automatic */
    int work_group_size;    /* 0: automatic */
    int local_tiling;       /* 0: automatic, 1: on, -1: off */
    int j_splits;           /* work-groups sharing one i-block's j-range; 0: automatic by N */
    int potential;          /* nonzero: also compute the potential of each particle */
    double eps;             /* gravitational softening */
    int refresh_cache;      /* nonzero: compile from source even on a cache hit (and refresh it) */
} fk_eval_config;

/* What actually runs, after automatic choices. */
typedef struct fk_variant {
    int unroll_i, unroll_j;
    int work_group_size;
    int local_tiling;
    int j_splits; /* for the current particle count */
    fk_variant_source source;
    int program_from_cache; /* 1 when the binary came from the disk cache */
    double build_seconds;   /* time to obtain the program (compile or cache load), in seconds */
} fk_variant;

/* Particle data, in double on the host; the device stores single precision. */
typedef struct fk_particles {
    size_t count;
    const double *position; /* 3 * count: x, y, z */
    const double *mass;     /* count: mass (gravity) or charge (molecular); NULL means all 1 */
    const double *velocity; /* 3 * count, for gaj; else NULL */
    const int *type;        /* count, for typed kernels; else NULL */
} fk_particles;

fk_status fk_eval_create(fk_context *context, const fk_eval_config *config, fk_eval **eval);
void fk_eval_destroy(fk_eval *eval);

/* Uploads particles. Rejects NaN/Inf, count 0, and (gravity with eps = 0) coincident bodies. */
fk_status fk_eval_set_particles(fk_eval *eval, const fk_particles *particles);

/* Runs one evaluation and waits for it. seconds (may be NULL) receives the device time from OpenCL
 * event profiling, the j-split reduction included. */
fk_status fk_eval_compute(fk_eval *eval, double *seconds);

/* Reads the results of the last compute: force_components(kernel) values per particle, and one
 * potential per particle (only when config.potential was set). */
fk_status fk_eval_read_forces(fk_eval *eval, double *forces);
fk_status fk_eval_read_potentials(fk_eval *eval, double *potentials);

fk_status fk_eval_get_variant(const fk_eval *eval, fk_variant *variant);
size_t fk_eval_force_components(const fk_eval *eval);

/* ---------------------------------------------------------------------------------------------- */
/* Host reference: double precision, O(N^2), for tests and accuracy checks */

typedef struct fk_physics {
    double eps; /* softening (gravity) */
} fk_physics;

/* forces: force_components values per particle; potentials may be NULL. */
fk_status fk_reference_forces(const char *kernel, const fk_particles *particles,
                              const fk_physics *physics, double *forces, double *potentials);

#ifdef __cplusplus
}
#endif
#endif
