/* The device side of a context: its OpenCL context and in-order queue (opened here or adopted
 * from the caller), pinned staging buffers, and the queries. The context as a whole (kernel
 * directory, program cache, tuning database, checks) is put together in src/core/context/, the top
 * of the core, which calls down into this file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "forcekit/forcekit_cl.h"

fk_status fk__context_open_device(fk_context *context, const fk_context_config *config)
{
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

    return FK_OK;
}

fk_status fk__context_adopt_cl(fk_context *context, cl_context cl, cl_device_id device,
                               cl_command_queue queue, const fk_context_config *config)
{
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
    return FK_OK;
}

void fk__context_release_device(fk_context *context)
{
    if (context->queue)
        clReleaseCommandQueue(context->queue);
    if (context->cl)
        clReleaseContext(context->cl);
    context->queue = NULL;
    context->cl = NULL;
}

fk_status fk__context_usable(const fk_context *context)
{
    return context && context->ready ? FK_OK : FK_ERR_INVALID_ARGUMENT;
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
