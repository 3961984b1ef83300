/* Context: the chosen device, its OpenCL context and queue, the kernel directory and the cache. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/programs/cache.h"
#include "core/programs/install_paths.h"
#include "core/internal.h"
#include "core/devices/known_answer.h"
#include "forcekit/forcekit_cl.h"
#include "common/text.h"
#include "core/tune/tune.h"

static int has_template(const char *dir)
{
    size_t size = strlen(dir) + 32;
    char *path = malloc(size);
    if (!path)
        return 0;
    snprintf(path, size, "%s/pairwise.cl", dir);
    struct stat st;
    int found = stat(path, &st) == 0 && S_ISREG(st.st_mode);
    free(path);
    return found;
}

char *fk__kernel_source_read(const fk_context *context, const char *relative, size_t *size)
{
    const char *dir = context->kernels_built_in ? "cl" : context->kernel_dir;
    if (!dir || !relative)
        return NULL;
    const size_t path_size = strlen(dir) + strlen(relative) + 2;
    char *path = malloc(path_size);
    if (!path)
        return NULL;
    snprintf(path, path_size, "%s/%s", dir, relative);
    char *text =
        context->kernels_built_in ? fk__embedded_read(path, size) : fk__read_file(path, size);
    free(path);
    return text;
}

/* An explicitly named directory (config or FORCEKIT_KERNEL_DIR) is authoritative: if it lacks the
 * sources that is an error, not a silent fall-back to some other copy of the kernels. Otherwise
 * the installed and build-tree directories are searched, and the copy built into the library
 * (install_paths.h) is the last resort: a program linked with the static library runs wherever
 * it is, and a directory found on disk still wins, so installed kernels stay editable. */
static fk_status resolve_kernel_dir(fk_context *context, const char *configured)
{
    const char *from_env = getenv("FORCEKIT_KERNEL_DIR");
    const char *explicit_dir = (configured && *configured) ? configured
                               : (from_env && *from_env)   ? from_env
                                                           : NULL;
    if (explicit_dir) {
        if (!has_template(explicit_dir))
            return fk__fail(context, FK_ERR_KERNEL_SOURCE,
                            "kernel sources not found: %s/pairwise.cl does not exist (set by %s)",
                            explicit_dir,
                            (configured && *configured) ? "the caller" : "FORCEKIT_KERNEL_DIR");
        context->kernel_dir = fk_copy_string(explicit_dir);
        return context->kernel_dir ? FK_OK : FK_ERR_HOST_MEMORY;
    }
    char *candidates[4];
    const size_t count = fk__data_candidates("cl", FK_SOURCE_KERNEL_DIR, candidates, 4);
    char searched[2048] = "";
    size_t used = 0;
    fk_status status = FK_ERR_KERNEL_SOURCE;
    for (size_t i = 0; i < count && status == FK_ERR_KERNEL_SOURCE; ++i) {
        if (has_template(candidates[i])) {
            context->kernel_dir = candidates[i];
            candidates[i] = NULL;
            status = context->kernel_dir ? FK_OK : FK_ERR_HOST_MEMORY;
        } else if (used < sizeof searched) {
            used +=
                (size_t)snprintf(searched + used, sizeof searched - used, ", %s", candidates[i]);
        }
    }
    fk__data_candidates_free(candidates, count);
    if (status == FK_OK)
        return status;
    if (fk__embedded_has("cl/pairwise.cl")) {
        context->kernel_dir = fk_copy_string(FK__BUILT_IN);
        context->kernels_built_in = 1;
        return context->kernel_dir ? FK_OK : FK_ERR_HOST_MEMORY;
    }
    return fk__fail(context, FK_ERR_KERNEL_SOURCE,
                    "kernel sources (pairwise.cl) not found; searched: $FORCEKIT_KERNEL_DIR "
                    "(unset)%s",
                    searched);
}

/* The kernel sources carry their own version (cl/VERSION): users may edit or replace an installed
 * kernel directory, and a library built for other kernels would fail in ways hard to trace. A
 * mismatch is a warning, not an error: edited kernels are a supported use. */
static void read_kernel_version(fk_context *context)
{
    char *text = fk__kernel_source_read(context, "VERSION", NULL);
    if (text) {
        text[strcspn(text, "\r\n")] = '\0';
        snprintf(context->kernel_version, sizeof context->kernel_version, "%s", text);
        free(text);
    } else {
        snprintf(context->kernel_version, sizeof context->kernel_version, "unknown");
    }
    if (strcmp(context->kernel_version, fk_version()) != 0)
        fk__warn(&context->warnings,
                 "the kernel sources in %s are version %s, this library is %s: results may be "
                 "wrong or builds may fail; point FORCEKIT_KERNEL_DIR at the kernels of this "
                 "version",
                 context->kernel_dir, context->kernel_version, fk_version());
}

static fk_status finish_context(fk_context *context, const fk_context_config *config);

/* What both constructors do first: the (empty) context handed to the caller at once, so that a
 * failure below still has its message there, and the caller's configuration in this library's
 * layout. */
static fk_status begin_context(const fk_context_config *config, fk_context **out,
                               fk_context_config *copy)
{
    if (!out)
        return FK_ERR_INVALID_ARGUMENT;
    *out = NULL;
    const fk_context_config defaults = {0};
    fk_context *context = calloc(1, sizeof *context);
    if (!context)
        return FK_ERR_HOST_MEMORY;
    *out = context;
    return fk__config_copy(context, "fk_context_config", copy, sizeof *copy,
                           config ? config : &defaults, FK__SIZE_0_2(fk_context_config, cache_dir));
}

fk_status fk_context_create(const fk_context_config *config, fk_context **out)
{
    fk_context_config copy;
    fk_status begun = begin_context(config, out, &copy);
    if (begun != FK_OK)
        return begun;
    fk_context *context = *out;
    config = &copy;

    if (config->device_timing < FK_DEVICE_TIMING_DEFAULT ||
        config->device_timing > FK_DEVICE_TIMING_OFF)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_context_config.device_timing: %d is not an fk_device_timing",
                        config->device_timing);
    const char *selector = config->device;
    if (!selector || !*selector)
        selector = getenv("FORCEKIT_DEVICE");
    char message[4096];
    fk_status status = fk__device_open(selector, &context->platform, &context->device,
                                       &context->info, message, sizeof message);
    if (status != FK_OK)
        return fk__fail(context, status, "%s", message);

    cl_bool little_endian = CL_TRUE;
    clGetDeviceInfo(context->device, CL_DEVICE_ENDIAN_LITTLE, sizeof little_endian, &little_endian,
                    NULL);
    if (!little_endian)
        return fk__fail(context, FK_ERR_UNSUPPORTED, "device %s is big-endian; not supported",
                        context->info.name);

    cl_int err = CL_SUCCESS;
    cl_context_properties properties[] = {CL_CONTEXT_PLATFORM,
                                          (cl_context_properties)context->platform, 0};
    context->cl = clCreateContext(properties, 1, &context->device, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, "clCreateContext", err);
    /* clCreateCommandQueue is deprecated in 2.0 but is the call every 1.2 platform has. */
    context->profiling = config->device_timing != FK_DEVICE_TIMING_OFF;
    context->queue = clCreateCommandQueue(context->cl, context->device,
                                          context->profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
    if (err != CL_SUCCESS)
        return fk__cl_fail(context, "clCreateCommandQueue", err);

    return finish_context(context, config);
}

/* What both constructors do once the OpenCL objects are in place. */
static fk_status finish_context(fk_context *context, const fk_context_config *config)
{
    fk_status status = resolve_kernel_dir(context, config->kernel_dir);
    if (status != FK_OK)
        return status;

    read_kernel_version(context);

    /* A cache directory that cannot be created only costs speed: run without it. */
    if (fk_cache_dir_resolve(config->cache_dir, &context->cache_dir) != 0)
        context->cache_dir = NULL;
    /* The tuning databases are small; reading them once here lets every fk_eval_create use them,
     * and a corrupt one is reported (fk_context_warnings) before anything runs. */
    fk__tuning_context_load(context);
    fk__clear_error(context);
    context->ready = 1;
    return FK_OK;
}

fk_status fk__context_usable(const fk_context *context)
{
    return context && context->ready ? FK_OK : FK_ERR_INVALID_ARGUMENT;
}

fk_status fk_context_create_cl(cl_context cl, cl_device_id device, cl_command_queue queue,
                               const fk_context_config *config, fk_context **out)
{
    fk_context_config copy;
    fk_status begun = begin_context(config, out, &copy);
    if (begun != FK_OK)
        return begun;
    fk_context *context = *out;
    config = &copy;
    if (!cl || !device || !queue)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_context_create_cl needs an OpenCL context, device and queue");
    if (config->device && *config->device)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_context_create_cl: the device is the caller's; leave "
                        "fk_context_config.device unset");
    if (config->device_timing != FK_DEVICE_TIMING_DEFAULT)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_context_create_cl: the caller's queue decides device timing "
                        "(CL_QUEUE_PROFILING_ENABLE); leave fk_context_config.device_timing 0");
    cl_context queue_context = NULL;
    cl_device_id queue_device = NULL;
    cl_command_queue_properties properties = 0;
    cl_uint devices = 0;
    if (clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof queue_context, &queue_context,
                              NULL) != CL_SUCCESS ||
        clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof queue_device, &queue_device, NULL) !=
            CL_SUCCESS ||
        clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof properties, &properties, NULL) !=
            CL_SUCCESS ||
        clGetContextInfo(cl, CL_CONTEXT_NUM_DEVICES, sizeof devices, &devices, NULL) != CL_SUCCESS)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_context_create_cl: not a valid OpenCL context and queue");
    if (queue_context != cl || queue_device != device)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_context_create_cl: the queue belongs to another context or device");
    if (properties & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT,
                        "fk_context_create_cl: the queue executes out of order; forcekit needs an "
                        "in-order queue");
    cl_platform_id platform = NULL;
    if (clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL) != CL_SUCCESS)
        return fk__fail(context, FK_ERR_INVALID_ARGUMENT, "fk_context_create_cl: not a device");
    fk_status status = fk__device_fill_info(platform, device, 0, 0, &context->info);
    if (status != FK_OK)
        return fk__fail(context, status, "fk_context_create_cl: the device cannot be queried");
    cl_bool little_endian = CL_TRUE;
    clGetDeviceInfo(device, CL_DEVICE_ENDIAN_LITTLE, sizeof little_endian, &little_endian, NULL);
    if (!little_endian)
        return fk__fail(context, FK_ERR_UNSUPPORTED, "device %s is big-endian; not supported",
                        context->info.name);
    clRetainContext(cl);
    clRetainCommandQueue(queue);
    context->platform = platform;
    context->device = device;
    context->cl = cl;
    context->queue = queue;
    context->profiling = (properties & CL_QUEUE_PROFILING_ENABLE) != 0;
    return finish_context(context, config);
}

fk_status fk_context_cl_objects(const fk_context *context, cl_context *cl, cl_device_id *device,
                                cl_command_queue *queue)
{
    if (fk__context_usable(context) != FK_OK)
        return FK_ERR_INVALID_ARGUMENT;
    if (cl)
        *cl = context->cl;
    if (device)
        *device = context->device;
    if (queue)
        *queue = context->queue;
    return FK_OK;
}

void fk_context_destroy(fk_context *context)
{
    if (!context)
        return;
    fk__program_memo_free(context); /* before the OpenCL context its programs belong to */
    fk__known_answer_free(context);
    if (context->queue)
        clReleaseCommandQueue(context->queue);
    if (context->cl)
        clReleaseContext(context->cl);
    free(context->kernel_dir);
    free(context->cache_dir);
    free(context->last_error);
    fk__tuning_db_free(context->tuning);
    free(context->warnings);
    free(context);
}

fk_status fk__pinned_create(fk_context *context, size_t bytes, cl_mem *buffer, void **host,
                            const char *what)
{
    *host = NULL;
    cl_int err = CL_SUCCESS;
    *buffer =
        clCreateBuffer(context->cl, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
    if (err != CL_SUCCESS) {
        *buffer = NULL;
        return fk__fail(context, fk__cl_status(err),
                        "clCreateBuffer (%s, %zu bytes) failed: %s (%d)", what, bytes,
                        fk__cl_error_name(err), (int)err);
    }
    *host = clEnqueueMapBuffer(context->queue, *buffer, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                               bytes, 0, NULL, NULL, &err);
    if (err != CL_SUCCESS || !*host) {
        clReleaseMemObject(*buffer);
        *buffer = NULL;
        *host = NULL;
        return fk__cl_fail(context, "clEnqueueMapBuffer (pinned staging)", err);
    }
    return FK_OK;
}

void fk__pinned_release(fk_context *context, cl_mem *buffer, void **host)
{
    if (*buffer && *host) {
        clEnqueueUnmapMemObject(context->queue, *buffer, *host, 0, NULL, NULL);
        clFinish(context->queue);
    }
    if (*buffer)
        clReleaseMemObject(*buffer);
    *buffer = NULL;
    *host = NULL;
}

/* The queries answer NULL for a failed context, as for NULL: what it holds may be half set. */
const fk_device_info *fk_context_device(const fk_context *context)
{
    return fk__context_usable(context) == FK_OK ? &context->info : NULL;
}

const char *fk_context_kernel_dir(const fk_context *context)
{
    return fk__context_usable(context) == FK_OK ? context->kernel_dir : NULL;
}

const char *fk_context_kernel_version(const fk_context *context)
{
    return fk__context_usable(context) == FK_OK ? context->kernel_version : NULL;
}

const char *fk_context_cache_dir(const fk_context *context)
{
    return fk__context_usable(context) == FK_OK ? context->cache_dir : NULL;
}
