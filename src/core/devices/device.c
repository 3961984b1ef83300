/* Device discovery and selection (docs/cli.md: the device selector). */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/internal.h"

const char *fk_device_type_name(fk_device_type type)
{
    switch (type) {
    case FK_DEVICE_CPU:
        return "cpu";
    case FK_DEVICE_GPU:
        return "gpu";
    case FK_DEVICE_ACCELERATOR:
        return "accelerator";
    case FK_DEVICE_OTHER:
        break;
    }
    return "other";
}

static void query_string(cl_device_id device, cl_device_info what, char *out, size_t size)
{
    out[0] = '\0';
    if (clGetDeviceInfo(device, what, size, out, NULL) != CL_SUCCESS)
        out[0] = '\0';
    out[size - 1] = '\0';
}

static void trim(char *text)
{
    size_t length = strlen(text);
    while (length > 0 && isspace((unsigned char)text[length - 1]))
        text[--length] = '\0';
    size_t start = 0;
    while (text[start] && isspace((unsigned char)text[start]))
        ++start;
    if (start)
        memmove(text, text + start, length - start + 1);
}

/*
 * A real device is one kind of hardware: exactly one of the CPU, GPU and accelerator bits. A device
 * that claims several is an emulator or checker (oclgrind 21.10 sets every bit so that programs
 * asking for any type find it); calling it a GPU made it the default device, so it is "other" and
 * is only chosen by its selector or when nothing else exists.
 */
static fk_device_type classify(cl_device_type type)
{
    const cl_device_type hardware =
        CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR;
    switch (type & hardware) {
    case CL_DEVICE_TYPE_GPU:
        return FK_DEVICE_GPU;
    case CL_DEVICE_TYPE_CPU:
        return FK_DEVICE_CPU;
    case CL_DEVICE_TYPE_ACCELERATOR:
        return FK_DEVICE_ACCELERATOR;
    default:
        return FK_DEVICE_OTHER;
    }
}

fk_status fk__device_fill_info(cl_platform_id platform, cl_device_id device,
                               unsigned platform_index, unsigned device_index, fk_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->platform_index = platform_index;
    info->device_index = device_index;
    snprintf(info->selector, sizeof info->selector, "%u:%u", platform_index, device_index);
    if (clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof info->platform_name,
                          info->platform_name, NULL) != CL_SUCCESS)
        info->platform_name[0] = '\0';
    if (clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof info->platform_version,
                          info->platform_version, NULL) != CL_SUCCESS)
        info->platform_version[0] = '\0';
    info->platform_name[sizeof info->platform_name - 1] = '\0';
    info->platform_version[sizeof info->platform_version - 1] = '\0';
    query_string(device, CL_DEVICE_NAME, info->name, sizeof info->name);
    query_string(device, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    query_string(device, CL_DEVICE_VERSION, info->device_version, sizeof info->device_version);
    query_string(device, CL_DRIVER_VERSION, info->driver_version, sizeof info->driver_version);
    query_string(device, CL_DEVICE_OPENCL_C_VERSION, info->opencl_c_version,
                 sizeof info->opencl_c_version);
    trim(info->name);
    trim(info->vendor);

    cl_device_type type = 0;
    clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    info->type = classify(type);

    cl_uint units = 0;
    clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, NULL);
    info->compute_units = units;
    cl_ulong bytes = 0;
    clGetDeviceInfo(device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    info->global_memory_bytes = bytes;
    bytes = 0;
    clGetDeviceInfo(device, CL_DEVICE_LOCAL_MEM_SIZE, sizeof bytes, &bytes, NULL);
    info->local_memory_bytes = bytes;
    bytes = 0;
    clGetDeviceInfo(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof bytes, &bytes, NULL);
    info->max_allocation_bytes = bytes;
    size_t group = 0;
    clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof group, &group, NULL);
    info->max_work_group_size = group;
    /* fp64: the double-precision config is non-zero exactly when cl_khr_fp64 (or core fp64) exists.
     */
    cl_device_fp_config fp64 = 0;
    if (clGetDeviceInfo(device, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL) != CL_SUCCESS)
        fp64 = 0;
    info->fp64 = fp64 != 0;
    return FK_OK;
}

/* Enumerates (platform, device) pairs; calls visit for each until it returns non-zero. */
typedef int (*device_visitor)(cl_platform_id, cl_device_id, const fk_device_info *, void *);

static fk_status enumerate_unlocked(device_visitor visit, void *user, char *message,
                                    size_t message_size);

/* Device discovery is serialized process-wide: OpenCL calls are thread-safe by the specification,
 * but implementations set themselves up on the first clGetPlatformIDs / clGetDeviceIDs, and with
 * POCL 3.1 behind ocl-icd two threads creating contexts at once made one of them see "platforms
 * found, but no devices" (tests/test_threads.c). The lock costs nothing beside context creation. */
static pthread_mutex_t discovery = PTHREAD_MUTEX_INITIALIZER;

static fk_status enumerate(device_visitor visit, void *user, char *message, size_t message_size)
{
    pthread_mutex_lock(&discovery);
    const fk_status status = enumerate_unlocked(visit, user, message, message_size);
    pthread_mutex_unlock(&discovery);
    return status;
}

static fk_status enumerate_unlocked(device_visitor visit, void *user, char *message,
                                    size_t message_size)
{
    cl_uint platform_count = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &platform_count);
    if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ ||
        (err == CL_SUCCESS && platform_count == 0)) {
        snprintf(message, message_size,
                 "no OpenCL platform found (is an ICD such as pocl-opencl-icd installed?)");
        return FK_ERR_NO_DEVICE;
    }
    if (err != CL_SUCCESS) {
        snprintf(message, message_size, "clGetPlatformIDs failed: %s (%d)", fk__cl_error_name(err),
                 (int)err);
        return FK_ERR_OPENCL;
    }
    cl_platform_id *platforms = calloc(platform_count, sizeof *platforms);
    if (!platforms)
        return FK_ERR_HOST_MEMORY;
    clGetPlatformIDs(platform_count, platforms, NULL);
    int any = 0, stop = 0;
    for (cl_uint p = 0; p < platform_count && !stop; ++p) {
        cl_uint device_count = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &device_count) !=
                CL_SUCCESS ||
            device_count == 0)
            continue;
        cl_device_id *devices = calloc(device_count, sizeof *devices);
        if (!devices) {
            free(platforms);
            return FK_ERR_HOST_MEMORY;
        }
        clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, device_count, devices, NULL);
        for (cl_uint d = 0; d < device_count && !stop; ++d) {
            fk_device_info info;
            fk__device_fill_info(platforms[p], devices[d], p, d, &info);
            any = 1;
            stop = visit(platforms[p], devices[d], &info, user);
        }
        free(devices);
    }
    free(platforms);
    if (!any) {
        snprintf(message, message_size, "OpenCL platforms found, but no devices");
        return FK_ERR_NO_DEVICE;
    }
    return FK_OK;
}

typedef struct list_state {
    fk_device_info *items;
    size_t count, capacity;
    int failed;
} list_state;

static int collect(cl_platform_id platform, cl_device_id device, const fk_device_info *info,
                   void *user)
{
    (void)platform;
    (void)device;
    list_state *state = user;
    if (state->count == state->capacity) {
        size_t capacity = state->capacity ? state->capacity * 2 : 8;
        fk_device_info *grown = realloc(state->items, capacity * sizeof *grown);
        if (!grown) {
            state->failed = 1;
            return 1;
        }
        state->items = grown;
        state->capacity = capacity;
    }
    state->items[state->count++] = *info;
    return 0;
}

fk_status fk_devices_list(fk_device_info **devices, size_t *count)
{
    if (!devices || !count)
        return FK_ERR_INVALID_ARGUMENT;
    *devices = NULL;
    *count = 0;
    list_state state = {0};
    char message[256];
    fk_status status = enumerate(collect, &state, message, sizeof message);
    if (status == FK_OK && state.failed)
        status = FK_ERR_HOST_MEMORY;
    if (status != FK_OK) {
        free(state.items);
        return status;
    }
    *devices = state.items;
    *count = state.count;
    return FK_OK;
}

void fk_devices_free(fk_device_info *devices)
{
    free(devices);
}

static int contains_case_insensitive(const char *haystack, const char *needle)
{
    size_t needle_length = strlen(needle);
    for (const char *start = haystack; *start; ++start) {
        size_t k = 0;
        while (k < needle_length && start[k] &&
               tolower((unsigned char)start[k]) == tolower((unsigned char)needle[k]))
            ++k;
        if (k == needle_length)
            return 1;
    }
    return needle_length == 0;
}

static int first_of_type(const fk_device_info *devices, size_t count, fk_device_type type,
                         size_t *chosen)
{
    for (size_t i = 0; i < count; ++i)
        if (devices[i].type == type) {
            *chosen = i;
            return 1;
        }
    return 0;
}

fk_status fk_device_select(const fk_device_info *devices, size_t count, const char *selector,
                           size_t *chosen)
{
    if (!devices || !chosen)
        return FK_ERR_INVALID_ARGUMENT;
    if (count == 0)
        return FK_ERR_NO_DEVICE;
    if (!selector || !*selector) {
        if (first_of_type(devices, count, FK_DEVICE_GPU, chosen) ||
            first_of_type(devices, count, FK_DEVICE_CPU, chosen))
            return FK_OK;
        *chosen = 0;
        return FK_OK;
    }
    /* "P:D": two non-negative integers. */
    unsigned platform_index, device_index;
    char tail;
    if (sscanf(selector, "%u:%u%c", &platform_index, &device_index, &tail) == 2) {
        for (size_t i = 0; i < count; ++i)
            if (devices[i].platform_index == platform_index &&
                devices[i].device_index == device_index) {
                *chosen = i;
                return FK_OK;
            }
        return FK_ERR_DEVICE_NOT_FOUND;
    }
    if (strcasecmp(selector, "gpu") == 0)
        return first_of_type(devices, count, FK_DEVICE_GPU, chosen) ? FK_OK
                                                                    : FK_ERR_DEVICE_NOT_FOUND;
    if (strcasecmp(selector, "cpu") == 0)
        return first_of_type(devices, count, FK_DEVICE_CPU, chosen) ? FK_OK
                                                                    : FK_ERR_DEVICE_NOT_FOUND;
    for (size_t i = 0; i < count; ++i)
        if (contains_case_insensitive(devices[i].name, selector)) {
            *chosen = i;
            return FK_OK;
        }
    return FK_ERR_DEVICE_NOT_FOUND;
}

typedef struct open_state {
    size_t target, index;
    cl_platform_id platform;
    cl_device_id device;
    fk_device_info info;
} open_state;

static int pick(cl_platform_id platform, cl_device_id device, const fk_device_info *info,
                void *user)
{
    open_state *state = user;
    if (state->index++ == state->target) {
        state->platform = platform;
        state->device = device;
        state->info = *info;
        return 1;
    }
    return 0;
}

fk_status fk__device_open(const char *selector, cl_platform_id *platform, cl_device_id *device,
                          fk_device_info *info, char *message, size_t message_size)
{
    fk_device_info *devices;
    size_t count;
    message[0] = '\0';
    list_state state = {0};
    fk_status status = enumerate(collect, &state, message, message_size);
    if (status == FK_OK && state.failed)
        status = FK_ERR_HOST_MEMORY;
    if (status != FK_OK) {
        free(state.items);
        return status;
    }
    devices = state.items;
    count = state.count;
    size_t chosen = 0;
    status = fk_device_select(devices, count, selector, &chosen);
    if (status != FK_OK) {
        int used = snprintf(message, message_size,
                            "no device matches '%s'; devices:", selector ? selector : "");
        for (size_t i = 0; i < count && used > 0 && (size_t)used < message_size; ++i)
            used += snprintf(message + used, message_size - (size_t)used, " %s (%s, %s)%s",
                             devices[i].selector, devices[i].name,
                             fk_device_type_name(devices[i].type), i + 1 < count ? "," : "");
        free(devices);
        return status;
    }
    free(devices);
    /* Enumerate again to get the handles of the chosen one (device ids are stable per process). */
    open_state picked = {.target = chosen};
    status = enumerate(pick, &picked, message, message_size);
    if (status != FK_OK)
        return status;
    if (picked.index <= chosen) {
        snprintf(message, message_size, "device list changed during selection");
        return FK_ERR_DEVICE_NOT_FOUND;
    }
    *platform = picked.platform;
    *device = picked.device;
    *info = picked.info;
    return FK_OK;
}
