/* Status names, the per-context last error, OpenCL error names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"

const char *fk_version(void)
{
    return FK_VERSION_STRING;
}

unsigned fk_version_number(void)
{
    return FK_VERSION_NUMBER;
}

const char *fk_status_string(fk_status status)
{
    switch (status) {
    case FK_OK:
        return "success";
    case FK_ERR_INVALID_ARGUMENT:
        return "invalid argument";
    case FK_ERR_INVALID_INPUT:
        return "invalid input data";
    case FK_ERR_HOST_MEMORY:
        return "out of host memory";
    case FK_ERR_NO_DEVICE:
        return "no OpenCL device";
    case FK_ERR_DEVICE_NOT_FOUND:
        return "no device matches the selector";
    case FK_ERR_UNSUPPORTED:
        return "not supported by the device";
    case FK_ERR_KERNEL_SOURCE:
        return "kernel source not found";
    case FK_ERR_BUILD:
        return "kernel build failed";
    case FK_ERR_DEVICE_MEMORY:
        return "out of device memory";
    case FK_ERR_OPENCL:
        return "OpenCL error";
    case FK_ERR_IO:
        return "input/output error";
    case FK_ERR_PARSE:
        return "malformed file";
    case FK_ERR_STATE:
        return "call out of order";
    case FK_ERR_OVERFLOW:
        return "fixed-point range exceeded";
    }
    return "unknown status";
}

static void ensure_capacity(fk_context *context, size_t needed)
{
    if (needed <= context->last_error_capacity)
        return;
    size_t capacity = context->last_error_capacity ? context->last_error_capacity : 256;
    while (capacity < needed)
        capacity *= 2;
    char *grown = realloc(context->last_error, capacity);
    if (!grown)
        return; /* keep the shorter message: losing detail beats failing the caller */
    context->last_error = grown;
    context->last_error_capacity = capacity;
}

fk_status fk__fail(fk_context *context, fk_status status, const char *format, ...)
{
    if (!context)
        return status;
    va_list args;
    va_start(args, format);
    int length = vsnprintf(NULL, 0, format, args);
    va_end(args);
    if (length < 0)
        return status;
    ensure_capacity(context, (size_t)length + 1);
    if (context->last_error_capacity > 0) {
        va_start(args, format);
        vsnprintf(context->last_error, context->last_error_capacity, format, args);
        va_end(args);
    }
    return status;
}

void fk__append_error(fk_context *context, const char *text)
{
    if (!context || !text)
        return;
    size_t used = context->last_error ? strlen(context->last_error) : 0;
    ensure_capacity(context, used + strlen(text) + 1);
    if (context->last_error_capacity > used) {
        strncpy(context->last_error + used, text, context->last_error_capacity - used - 1);
        context->last_error[context->last_error_capacity - 1] = '\0';
    }
}

void fk__clear_error(fk_context *context)
{
    if (context && context->last_error)
        context->last_error[0] = '\0';
}

const char *fk_context_last_error(const fk_context *context)
{
    if (!context || !context->last_error)
        return "";
    return context->last_error;
}

const char *fk__cl_error_name(cl_int code)
{
    switch (code) {
#define FK_CL_NAME(name)                                                                           \
    case name:                                                                                     \
        return #name;
        FK_CL_NAME(CL_SUCCESS)
        FK_CL_NAME(CL_DEVICE_NOT_FOUND)
        FK_CL_NAME(CL_DEVICE_NOT_AVAILABLE)
        FK_CL_NAME(CL_COMPILER_NOT_AVAILABLE)
        FK_CL_NAME(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        FK_CL_NAME(CL_OUT_OF_RESOURCES)
        FK_CL_NAME(CL_OUT_OF_HOST_MEMORY)
        FK_CL_NAME(CL_PROFILING_INFO_NOT_AVAILABLE)
        FK_CL_NAME(CL_BUILD_PROGRAM_FAILURE)
        FK_CL_NAME(CL_INVALID_VALUE)
        FK_CL_NAME(CL_INVALID_DEVICE)
        FK_CL_NAME(CL_INVALID_BINARY)
        FK_CL_NAME(CL_INVALID_BUILD_OPTIONS)
        FK_CL_NAME(CL_INVALID_PROGRAM)
        FK_CL_NAME(CL_INVALID_PROGRAM_EXECUTABLE)
        FK_CL_NAME(CL_INVALID_KERNEL_NAME)
        FK_CL_NAME(CL_INVALID_KERNEL_ARGS)
        FK_CL_NAME(CL_INVALID_ARG_INDEX)
        FK_CL_NAME(CL_INVALID_ARG_VALUE)
        FK_CL_NAME(CL_INVALID_ARG_SIZE)
        FK_CL_NAME(CL_INVALID_WORK_DIMENSION)
        FK_CL_NAME(CL_INVALID_WORK_GROUP_SIZE)
        FK_CL_NAME(CL_INVALID_WORK_ITEM_SIZE)
        FK_CL_NAME(CL_INVALID_GLOBAL_WORK_SIZE)
        FK_CL_NAME(CL_INVALID_BUFFER_SIZE)
        FK_CL_NAME(CL_INVALID_MEM_OBJECT)
        FK_CL_NAME(CL_INVALID_COMMAND_QUEUE)
        FK_CL_NAME(CL_INVALID_CONTEXT)
        FK_CL_NAME(CL_INVALID_PLATFORM)
        FK_CL_NAME(CL_INVALID_EVENT)
        FK_CL_NAME(CL_INVALID_OPERATION)
#undef FK_CL_NAME
    case -1001:
        return "CL_PLATFORM_NOT_FOUND_KHR";
    }
    return "unknown OpenCL error";
}

fk_status fk__cl_status(cl_int code)
{
    switch (code) {
    case CL_SUCCESS:
        return FK_OK;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
    case CL_INVALID_BUFFER_SIZE:
        return FK_ERR_DEVICE_MEMORY;
    case CL_OUT_OF_HOST_MEMORY:
        return FK_ERR_HOST_MEMORY;
    default:
        return FK_ERR_OPENCL;
    }
}

fk_status fk__cl_fail(fk_context *context, const char *call, cl_int code)
{
    return fk__fail(context, fk__cl_status(code), "%s failed: %s (%d)", call,
                    fk__cl_error_name(code), (int)code);
}

char *fk__read_file(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return NULL;
    char *data = NULL;
    size_t used = 0, capacity = 0;
    for (;;) {
        if (capacity - used < 4096) {
            capacity = capacity ? capacity * 2 : 16384;
            char *grown = realloc(data, capacity + 1);
            if (!grown) {
                free(data);
                fclose(file);
                return NULL;
            }
            data = grown;
        }
        size_t got = fread(data + used, 1, capacity - used, file);
        used += got;
        if (got == 0)
            break;
    }
    int failed = ferror(file);
    fclose(file);
    if (failed) {
        free(data);
        return NULL;
    }
    data[used] = '\0';
    if (size)
        *size = used;
    return data;
}

double fk__now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
