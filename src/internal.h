/* Library internals shared by the modules in src/. Not installed. */
#ifndef FK_INTERNAL_H
#define FK_INTERNAL_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>
#include <stdarg.h>
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
    cl_command_queue queue; /* in-order, profiling enabled */
    char *kernel_dir;
    char *cache_dir; /* NULL: cache off */
    char *last_error;
    size_t last_error_capacity;
};

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

/* Device queries used by context creation (device.c). */
fk_status fk__device_fill_info(cl_platform_id platform, cl_device_id device,
                               unsigned platform_index, unsigned device_index,
                               fk_device_info *info);
/* Finds a device by selector; on success platform and device are set and *info filled. Errors are
 * written to message[message_size]. */
fk_status fk__device_open(const char *selector, cl_platform_id *platform, cl_device_id *device,
                          fk_device_info *info, char *message, size_t message_size);

/* Kernel and accumulator registry (registry.c). */
typedef struct fk_kernel_desc {
    fk_kernel_info info;
    int uses_aux;   /* body_aux carries a second float4 per particle (velocity, type) */
    int uses_table; /* typed pair table */
    unsigned physics_floats;
    /* Host reference: forces (components per particle) and optional potentials. */
    fk_status (*reference)(const fk_particles *particles, const fk_physics *physics, double *forces,
                           double *potentials);
} fk_kernel_desc;

typedef struct fk_accum_desc {
    fk_accum_info info;
    /* Decodes one packed 8-byte result (lo, hi words) to double. */
    double (*decode)(uint32_t lo, uint32_t hi, double scale);
} fk_accum_desc;

const fk_kernel_desc *fk__kernel_desc(const char *name);
const fk_accum_desc *fk__accum_desc(const char *name);

/* Programs (program.c). */
typedef struct fk_program_request {
    const char *force; /* "ga" */
    const char *accum; /* "float" */
    int unroll_i, unroll_j, work_group_size, local_tiling, potential;
    const char *extra_options; /* appended to the build options, may be NULL */
    int refresh_cache;
} fk_program_request;

typedef struct fk_program_result {
    cl_program program;
    int from_cache;
    double seconds;
} fk_program_result;

fk_status fk__program_build(fk_context *context, const fk_program_request *request,
                            fk_program_result *result);

/* Reads a whole file; NULL on failure (errno set). */
char *fk__read_file(const char *path, size_t *size);
/* Monotonic wall-clock seconds. */
double fk__now(void);

/* Reference implementations (reference.c). */
fk_status fk__reference_ga(const fk_particles *particles, const fk_physics *physics, double *forces,
                           double *potentials);

#endif
